//! The Kubernetes version a plan is for: what `GET /version` reports, a snapshot records, a
//! sim file names or `--kube-version` says. Rendering (`helm template --kube-version`) and
//! validation (which fields and values that version's API server keeps) read the same one.

use serde::Deserialize;
use std::fmt;

/// A Kubernetes version, `1.35.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeVersion {
    /// Major (1).
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl KubeVersion {
    /// `1.MINOR.0`.
    pub const fn v1(minor: u32) -> KubeVersion {
        KubeVersion {
            major: 1,
            minor,
            patch: 0,
        }
    }

    /// The oldest version validation knows: 1.31.
    pub const OLDEST: KubeVersion = KubeVersion::v1(31);
    /// The newest version validation knows, and the default when nothing names one: 1.35.
    pub const NEWEST: KubeVersion = KubeVersion::v1(35);

    /// True for the versions validation knows ([`KubeVersion::OLDEST`] to
    /// [`KubeVersion::NEWEST`], any patch).
    pub fn is_supported(&self) -> bool {
        self.major == 1 && (Self::OLDEST.minor..=Self::NEWEST.minor).contains(&self.minor)
    }

    /// True from `1.minor` on.
    pub fn at_least(&self, minor: u32) -> bool {
        self.major > 1 || (self.major == 1 && self.minor >= minor)
    }

    /// `1.35`: the minor version, which is what validation and `--kube-version` care about.
    pub fn minor_string(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }

    /// Reads a version as servers and kubelets report it: `v1.35.2`, `v1.33.4-gke.1200`,
    /// `1.34+` (a provider's minor), `1.35`. The patch defaults to 0; anything after the
    /// numbers (a pre-release or a provider's build) is ignored.
    pub fn parse_reported(s: &str) -> Option<KubeVersion> {
        let text = s.trim().trim_start_matches('v');
        let mut parts = text.splitn(3, '.');
        let number = |p: Option<&str>| -> Option<u32> {
            let digits: String = p?.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        let major = number(parts.next())?;
        let minor = number(parts.next())?;
        let patch = number(parts.next()).unwrap_or(0);
        Some(KubeVersion {
            major,
            minor,
            patch,
        })
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        KubeVersion::NEWEST
    }
}

impl std::str::FromStr for KubeVersion {
    type Err = String;

    /// `1.35.0` or `1.35` (a leading `v` is accepted).
    fn from_str(s: &str) -> Result<Self, String> {
        let text = s.trim().trim_start_matches('v');
        let parts: Vec<&str> = text.split('.').collect();
        let number = |p: &str| p.parse::<u32>().ok();
        let bad = || format!("version {s:?}: expected MAJOR.MINOR.PATCH, e.g. 1.35.0");
        let [major, minor, patch] = match parts.as_slice() {
            [major, minor, patch] => [number(major), number(minor), number(patch)],
            [major, minor] => [number(major), number(minor), Some(0)],
            _ => return Err(bad()),
        };
        match (major, minor, patch) {
            (Some(major), Some(minor), Some(patch)) => Ok(KubeVersion {
                major,
                minor,
                patch,
            }),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl<'de> Deserialize<'de> for KubeVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A YAML `1.35` is a number; `1.35.0` a string.
        let v = serde_json::Value::deserialize(d)?;
        let text = match &v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "version: expected MAJOR.MINOR.PATCH, got {other}"
                )));
            }
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::KubeVersion;

    #[test]
    fn versions_as_flags_files_and_servers_write_them() {
        assert_eq!("1.34".parse::<KubeVersion>(), Ok(KubeVersion::v1(34)));
        assert_eq!(
            "v1.33.2".parse::<KubeVersion>().map(|v| v.to_string()),
            Ok("1.33.2".into())
        );
        assert!("1".parse::<KubeVersion>().is_err());
        assert!("1.x".parse::<KubeVersion>().is_err());
        let gke = KubeVersion::parse_reported("v1.33.4-gke.1200").unwrap();
        assert_eq!((gke.minor, gke.patch), (33, 4));
        assert_eq!(
            KubeVersion::parse_reported("1.34+"),
            Some(KubeVersion::v1(34))
        );
        assert_eq!(KubeVersion::parse_reported("latest"), None);
    }

    #[test]
    fn supported_range_is_one_thirty_one_to_one_thirty_five() {
        assert!(KubeVersion::v1(31).is_supported());
        assert!(KubeVersion::v1(35).is_supported());
        assert!(!KubeVersion::v1(30).is_supported());
        assert!(!KubeVersion::v1(36).is_supported());
        assert!(KubeVersion::v1(35).at_least(35));
        assert!(!KubeVersion::v1(34).at_least(35));
        assert_eq!(KubeVersion::default(), KubeVersion::v1(35));
    }
}

//! The one Kubernetes version a plan is for: rendering (`helm template --kube-version`) and
//! validation read the same one.

use crate::model::KubeVersion;
use std::fmt;

/// Where the target version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--kube-version`.
    Flag,
    /// The cluster: a live cluster's `/version`, a snapshot's record, a sim file's `version:`.
    Cluster,
    /// Nothing said: [`KubeVersion::NEWEST`].
    Default,
}

/// The Kubernetes version a plan renders and validates for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetVersion {
    /// The version (1.31 to 1.35).
    pub version: KubeVersion,
    /// Where it came from.
    pub origin: Origin,
}

impl TargetVersion {
    /// The version of `--kube-version` when given, else the cluster's (`reported`), else
    /// v1.35. A cluster older than 1.31 is an error; a newer one than 1.35 is planned as 1.35,
    /// with a note (the second value) saying so.
    pub fn resolve(
        explicit: Option<KubeVersion>,
        reported: Option<KubeVersion>,
    ) -> Result<(TargetVersion, Option<String>), String> {
        if let Some(version) = explicit {
            let target = TargetVersion {
                version,
                origin: Origin::Flag,
            };
            return Ok((target, None));
        }
        let Some(reported) = reported else {
            let target = TargetVersion {
                version: KubeVersion::NEWEST,
                origin: Origin::Default,
            };
            return Ok((target, None));
        };
        if reported < KubeVersion::OLDEST {
            return Err(format!(
                "the cluster runs Kubernetes v{reported}; daemonsync renders and validates for \
                 1.{} to 1.{}: upgrade the cluster, or pass --kube-version {} to plan for that \
                 version anyway",
                KubeVersion::OLDEST.minor,
                KubeVersion::NEWEST.minor,
                KubeVersion::OLDEST.minor_string()
            ));
        }
        if reported.is_supported() {
            let target = TargetVersion {
                version: reported,
                origin: Origin::Cluster,
            };
            return Ok((target, None));
        }
        let note = format!(
            "the cluster runs Kubernetes v{reported}, newer than v{}, the newest daemonsync \
             knows: rendering and validating for v{} (--kube-version chooses)",
            KubeVersion::NEWEST.minor_string(),
            KubeVersion::NEWEST.minor_string()
        );
        let target = TargetVersion {
            version: KubeVersion::NEWEST,
            origin: Origin::Cluster,
        };
        Ok((target, Some(note)))
    }
}

impl fmt::Display for TargetVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kubernetes v{}", self.version.minor_string())?;
        f.write_str(match self.origin {
            Origin::Flag => " (--kube-version)",
            Origin::Cluster => " (the cluster's)",
            Origin::Default => " (no cluster version known: the newest supported)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_then_the_cluster_then_the_newest() {
        let v = KubeVersion::v1;
        let (t, note) = TargetVersion::resolve(Some(v(32)), Some(v(34))).unwrap();
        assert_eq!((t.version, t.origin, note), (v(32), Origin::Flag, None));
        let (t, _) = TargetVersion::resolve(None, Some(v(33))).unwrap();
        assert_eq!(t.to_string(), "Kubernetes v1.33 (the cluster's)");
        let (t, _) = TargetVersion::resolve(None, None).unwrap();
        assert_eq!(t.version, v(35));
        let (t, note) = TargetVersion::resolve(None, Some(v(36))).unwrap();
        assert_eq!(t.version, v(35));
        assert!(note.unwrap().contains("v1.36.0, newer than v1.35"));
        let old = TargetVersion::resolve(None, Some(v(29))).unwrap_err();
        assert!(
            old.contains("v1.29.0") && old.contains("--kube-version 1.31"),
            "{old}"
        );
    }
}

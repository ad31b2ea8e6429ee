//! The config a rollout changes: the keys of the ConfigMaps and Secrets whose digests differ
//! between the desired template's `daemonsync.io/config` annotation and the one the pods it
//! replaces carry (`manifest::versioning` versions the config; the rollout itself is any
//! template change's). Keys are named, values never: the annotation holds digests only.

use super::context::{Context, Prepared};
use super::view::Slot;
use crate::manifest::versioning::{ConfigDigests, parse_digests, template_digests};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// How one ConfigMap or Secret of the revision changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigChange {
    /// `configmap/NAME` or `secret/NAME` (the name in git, not the copy's).
    pub object: String,
    /// Whether the revision references it anew, no more, or with other content.
    pub change: ConfigChangeKind,
    /// Keys whose value changes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_keys: Vec<String>,
    /// Keys it gains.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added_keys: Vec<String>,
    /// Keys it loses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed_keys: Vec<String>,
}

/// What happens to one ConfigMap or Secret of the revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigChangeKind {
    /// Its keys change.
    Changed,
    /// The new revision references (and versions) it; the pods it replaces do not.
    Added,
    /// The pods it replaces reference it; the new revision does not.
    Removed,
}

impl fmt::Display for ConfigChange {
    /// `configmap/fluent-bit-config: changed keys fluent-bit.conf; added keys parsers.conf`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.object)?;
        match self.change {
            ConfigChangeKind::Added => {
                write!(f, "now part of the revision")?;
                if !self.added_keys.is_empty() {
                    write!(f, " (keys {})", self.added_keys.join(", "))?;
                }
                Ok(())
            }
            ConfigChangeKind::Removed => write!(f, "no longer part of the revision"),
            ConfigChangeKind::Changed => {
                let parts: Vec<String> = [
                    ("changed", &self.changed_keys),
                    ("added", &self.added_keys),
                    ("removed", &self.removed_keys),
                ]
                .into_iter()
                .filter(|(_, keys)| !keys.is_empty())
                .map(|(what, keys)| format!("{what} keys {}", keys.join(", ")))
                .collect();
                f.write_str(&parts.join("; "))
            }
        }
    }
}

/// The changes from the config digests `old` to `new` (each a `daemonsync.io/config`
/// annotation; absent or unreadable: no versioned config), sorted by object.
pub fn config_changes(old: Option<&str>, new: Option<&str>) -> Vec<ConfigChange> {
    let read = |a: Option<&str>| a.and_then(parse_digests).unwrap_or_default();
    let (old, new): (ConfigDigests, ConfigDigests) = (read(old), read(new));
    let empty = BTreeMap::new();
    let mut objects: Vec<&String> = old.keys().chain(new.keys()).collect();
    objects.sort();
    objects.dedup();
    objects
        .into_iter()
        .filter_map(|object| {
            let (before, after) = (old.get(object), new.get(object));
            let change = match (before, after) {
                (None, Some(_)) => ConfigChangeKind::Added,
                (Some(_), None) => ConfigChangeKind::Removed,
                (Some(a), Some(b)) if a != b => ConfigChangeKind::Changed,
                _ => return None,
            };
            let (before, after) = (before.unwrap_or(&empty), after.unwrap_or(&empty));
            let keys = |f: &dyn Fn(&String) -> bool, from: &BTreeMap<String, String>| {
                from.keys().filter(|k| f(k)).cloned().collect::<Vec<_>>()
            };
            Some(ConfigChange {
                object: object.clone(),
                change,
                changed_keys: keys(
                    &|k| before.get(k).is_some_and(|v| after.get(k) != Some(v)),
                    after,
                ),
                added_keys: keys(&|k| !before.contains_key(k), after),
                removed_keys: if change == ConfigChangeKind::Removed {
                    Vec::new()
                } else {
                    keys(&|k| !after.contains_key(k), before)
                },
            })
        })
        .collect()
}

impl Context<'_> {
    /// What the rollout changes of the DaemonSet's config: the desired template's digests
    /// against those of the out-of-date pods it replaces (the most common, if they differ).
    /// Nothing when no pod is out of date.
    pub(super) fn config_changes(&self, d: &Prepared<'_>, slots: &[Slot]) -> Vec<ConfigChange> {
        let mut seen: BTreeMap<Option<&str>, usize> = BTreeMap::new();
        for info in slots.iter().flat_map(|s| s.pods.iter()) {
            if info.updated || info.terminating {
                continue;
            }
            let Some(pod) = self.pod(info.id) else {
                continue;
            };
            *seen.entry(pod.config.as_deref()).or_default() += 1;
        }
        let Some((old, _)) = seen
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        else {
            return Vec::new();
        };
        config_changes(old, template_digests(d.ds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_added_and_removed_keys_are_named_and_values_never() {
        let old = r#"{"configmap/fluent-bit-config":{"fluent-bit.conf":"aaaaaaaaaaaa","parsers.conf":"bbbbbbbbbbbb"},"secret/old":{"k":"cccccccccccc"}}"#;
        let new = r#"{"configmap/fluent-bit-config":{"fluent-bit.conf":"dddddddddddd","extra.conf":"eeeeeeeeeeee"},"secret/creds":{"password":"ffffffffffff"}}"#;
        let changes: Vec<String> = config_changes(Some(old), Some(new))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            changes,
            [
                "configmap/fluent-bit-config: changed keys fluent-bit.conf; added keys \
                 extra.conf; removed keys parsers.conf",
                "secret/creds: now part of the revision (keys password)",
                "secret/old: no longer part of the revision",
            ]
        );
        assert!(config_changes(Some(old), Some(old)).is_empty());
        assert!(config_changes(None, None).is_empty());
        assert_eq!(config_changes(None, Some(new)).len(), 2);
        assert_eq!(config_changes(Some("not json"), Some(new)).len(), 2);
    }
}

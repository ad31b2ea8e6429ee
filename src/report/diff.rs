//! Normalised unified diffs of DaemonSet manifests, for pull requests.
//!
//! Both sides are normalised before diffing, so that key order, formatting and explicitly
//! written defaults produce no noise: the API server's defaults are applied, keys are sorted,
//! and `status` and server-side metadata (`resourceVersion`, `uid`, `creationTimestamp`,
//! `managedFields`, `generation`, `selfLink`) are dropped. The data of a Secret is never shown.

use crate::manifest::apply_defaults;
use crate::plan::{DaemonSetPlan, NodeState, Plan};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Server-side metadata fields that never belong in a diff.
const SERVER_METADATA: &[&str] = &[
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
];

/// The DaemonSet as canonical YAML: defaulted, sorted keys, no status or server metadata.
pub fn normalized_yaml(ds: &DaemonSet) -> String {
    let mut ds = ds.clone();
    apply_defaults(&mut ds);
    let mut value = serde_json::to_value(&ds).unwrap_or(Value::Null);
    normalize_value(&mut value);
    let value = sorted(value);
    serde_saphyr::to_string(&value).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
}

/// Drops status and server-side metadata, and masks Secret data, in place.
pub fn normalize_value(value: &mut Value) {
    let Some(obj) = value.as_object_mut() else {
        return;
    };
    obj.remove("status");
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in SERVER_METADATA {
            meta.remove(*k);
        }
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            ann.remove("kubectl.kubernetes.io/last-applied-configuration");
            ann.remove("deprecated.daemonset.template.generation");
            if ann.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    if obj.get("kind").and_then(Value::as_str) == Some("Secret") {
        for k in ["data", "stringData"] {
            if let Some(Value::Object(m)) = obj.get_mut(k) {
                for v in m.values_mut() {
                    *v = Value::String("***".into());
                }
            }
        }
    }
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k, sorted(v));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        v => v,
    }
}

/// A unified diff (3 lines of context, headers `a/<name>` and `b/<name>`) of the normalised
/// manifests, or `None` when they are equal. `name` is `namespace/name`; a missing side is
/// an added or removed DaemonSet (diffed against nothing, header `/dev/null`).
pub fn manifest_diff(
    name: &str,
    base: Option<&DaemonSet>,
    head: Option<&DaemonSet>,
) -> Option<String> {
    let old = base.map(normalized_yaml).unwrap_or_default();
    let new = head.map(normalized_yaml).unwrap_or_default();
    if old == new {
        return None;
    }
    let a = if base.is_some() {
        format!("a/{name}")
    } else {
        "/dev/null".to_string()
    };
    let b = if head.is_some() {
        format!("b/{name}")
    } else {
        "/dev/null".to_string()
    };
    let diff = similar::TextDiff::from_lines(&old, &new);
    Some(
        diff.unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string(),
    )
}

/// What a diff from [`manifest_diff`] does to its DaemonSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestChange {
    /// New on head (the base side is `/dev/null`).
    Added,
    /// Gone on head (the head side is `/dev/null`).
    Removed,
    /// Present on both sides, different.
    Changed,
}

/// Reads the kind of change from the headers [`manifest_diff`] writes.
pub fn change_of(diff: &str) -> ManifestChange {
    let mut lines = diff.lines();
    match (lines.next(), lines.next()) {
        (Some("--- /dev/null"), _) => ManifestChange::Added,
        (_, Some("+++ /dev/null")) => ManifestChange::Removed,
        _ => ManifestChange::Changed,
    }
}

/// Nodes that should run a pod of this DaemonSet (selected and tolerated).
fn wanted_nodes(d: &DaemonSetPlan) -> BTreeSet<&str> {
    d.nodes
        .iter()
        .filter(|n| {
            !matches!(
                n.state,
                NodeState::Blocked | NodeState::Ineligible | NodeState::Misscheduled
            )
        })
        .map(|n| &*n.node)
        .collect()
}

/// The per-node consequences of going from `base` to `head` (both planned against the same
/// observed state), one line per DaemonSet that differs: nodes that gain a pod (`+node`),
/// lose it (`-node`), and where a changed template replaces the pod. Empty when nothing
/// differs.
pub fn node_changes(base: &Plan, head: &Plan) -> String {
    let key = |d: &DaemonSetPlan| format!("{}/{}", d.namespace, d.name);
    let mut pairs: BTreeMap<String, (Option<&DaemonSetPlan>, Option<&DaemonSetPlan>)> =
        BTreeMap::new();
    for d in &base.daemonsets {
        pairs.entry(key(d)).or_default().0 = Some(d);
    }
    for d in &head.daemonsets {
        pairs.entry(key(d)).or_default().1 = Some(d);
    }
    let list = |nodes: &BTreeSet<&str>, sign: char| {
        nodes
            .iter()
            .map(|n| format!("{sign}{n}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = String::new();
    for (name, pair) in pairs {
        let line = match pair {
            (None, Some(h)) => {
                let w = wanted_nodes(h);
                format!("new; runs on {} node(s): {}", w.len(), list(&w, '+'))
            }
            (Some(b), None) => {
                let w = wanted_nodes(b);
                format!(
                    "removed; its pods on {} node(s) are left running (no pruning): {}",
                    w.len(),
                    list(&w, ' ').trim_start()
                )
            }
            (Some(b), Some(h)) => {
                let (wb, wh) = (wanted_nodes(b), wanted_nodes(h));
                let gained: BTreeSet<&str> = wh.difference(&wb).copied().collect();
                let lost: BTreeSet<&str> = wb.difference(&wh).copied().collect();
                let kept: BTreeSet<&str> = wb.intersection(&wh).copied().collect();
                let mut parts = Vec::new();
                if !gained.is_empty() {
                    parts.push(format!("gains {}", list(&gained, '+')));
                }
                if !lost.is_empty() {
                    parts.push(format!("loses {}", list(&lost, '-')));
                }
                if b.revision != h.revision && !kept.is_empty() {
                    parts.push(format!(
                        "pod template changed; its pod is replaced on {} node(s): {}",
                        kept.len(),
                        list(&kept, '~')
                    ));
                }
                if parts.is_empty() {
                    continue;
                }
                parts.join("; ")
            }
            (None, None) => continue,
        };
        out.push_str(&format!("  {name}: {line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{LoadOptions, load_str};

    const DS: &str = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - {name: agent, image: "agent:1.0"}
"#;

    const DS_REORDERED_WITH_DEFAULTS: &str = r#"
kind: DaemonSet
apiVersion: apps/v1
metadata:
  namespace: kube-system
  name: agent
spec:
  revisionHistoryLimit: 10
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1, maxSurge: 0}
  template:
    spec:
      restartPolicy: Always
      dnsPolicy: ClusterFirst
      containers:
      - image: "agent:1.0"
        name: agent
        imagePullPolicy: IfNotPresent
    metadata:
      labels: {app: agent}
  selector:
    matchLabels: {app: agent}
"#;

    fn ds(text: &str) -> DaemonSet {
        let m = load_str("t.yaml", text, &LoadOptions::default()).unwrap();
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        m.daemonsets.into_iter().next().unwrap().daemonset
    }

    #[test]
    fn order_and_explicit_defaults_make_no_diff() {
        let a = ds(DS);
        let b = ds(DS_REORDERED_WITH_DEFAULTS);
        assert_eq!(normalized_yaml(&a), normalized_yaml(&b));
        assert_eq!(manifest_diff("kube-system/agent", Some(&a), Some(&b)), None);
    }

    #[test]
    fn image_change_is_a_small_readable_diff() {
        let a = ds(DS);
        let b = ds(&DS.replace("agent:1.0", "agent:1.1"));
        let d = manifest_diff("kube-system/agent", Some(&a), Some(&b)).unwrap();
        assert!(
            d.starts_with("--- a/kube-system/agent\n+++ b/kube-system/agent\n"),
            "{d}"
        );
        assert!(
            d.contains("-") && d.contains("agent:1.0") && d.contains("agent:1.1"),
            "{d}"
        );
        assert_eq!(
            d.lines()
                .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
                .count(),
            1,
            "{d}"
        );
    }

    #[test]
    fn added_and_removed() {
        let a = ds(DS);
        let added = manifest_diff("kube-system/agent", None, Some(&a)).unwrap();
        assert!(
            added.starts_with("--- /dev/null\n+++ b/kube-system/agent\n"),
            "{added}"
        );
        let removed = manifest_diff("kube-system/agent", Some(&a), None).unwrap();
        assert!(removed.contains("+++ /dev/null"), "{removed}");
        assert_eq!(change_of(&added), ManifestChange::Added);
        assert_eq!(change_of(&removed), ManifestChange::Removed);
        let mut b = a.clone();
        b.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
        let changed = manifest_diff("kube-system/agent", Some(&a), Some(&b)).unwrap();
        assert_eq!(change_of(&changed), ManifestChange::Changed);
    }

    #[test]
    fn secret_data_is_masked() {
        let mut v: Value = serde_json::json!({
            "kind": "Secret", "metadata": {"name": "s", "uid": "x"},
            "data": {"token": "czNjcmV0"}, "stringData": {"p": "s3cret"}
        });
        normalize_value(&mut v);
        let s = v.to_string();
        assert!(
            !s.contains("czNjcmV0") && !s.contains("s3cret") && !s.contains("uid"),
            "{s}"
        );
    }
}

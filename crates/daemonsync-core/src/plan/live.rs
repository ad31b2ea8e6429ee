//! How git's pod template compares with a live DaemonSet's, field by field.
//!
//! Both sides are defaulted and put in the form the API server stores (see
//! [`crate::manifest::apply_defaults`]: canonical quantities, `divisor: "0"`, `service: ""`,
//! `volumeMode: Filesystem`, zero values dropped, …) and then compared in the canonical JSON
//! form the revision hash uses, so that only what would make the cluster change is reported.
//! Env values, args and commands are never shown, on either side (a live object's may be
//! secret); they are compared through per-container digests instead.

use k8s_openapi::api::apps::v1::DaemonSet;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

use super::revision::canonical_template;

/// How many differing fields a plan lists; the rest are counted.
pub const MAX_LISTED: usize = 20;

/// The longest value shown for one side of a difference, in characters.
const MAX_VALUE_CHARS: usize = 80;

/// Object keys whose members are map entries (printed `name[key]`, as the API server's field
/// paths print map keys), not struct fields.
const MAP_FIELDS: [&str; 9] = [
    "labels",
    "annotations",
    "nodeSelector",
    "limits",
    "requests",
    "overhead",
    "matchLabels",
    "volumeAttributes",
    "options",
];

/// One field where git's template and the live one differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldDifference {
    /// The field, as an API server field path (`spec.template.spec.containers[0].image`).
    pub path: String,
    /// Git's value as compact JSON (shortened when long); `None` when git does not set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// The live value as compact JSON (shortened when long); `None` when unset live.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
}

/// The fields where git's template differs from a live DaemonSet's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveDiff {
    /// The first [`MAX_LISTED`] differing fields, in field order.
    pub fields: Vec<FieldDifference>,
    /// How many more fields differ.
    pub more: usize,
}

/// The differences between the pod templates of `desired` and `live` once both are defaulted
/// as the API server stores them; empty when applying git would not change the template.
///
/// Env values, args and commands may be secret, on either side: they are never shown, and are
/// compared through their digests ([`secret_digests`]), so a live object whose values a
/// snapshot blanked ([`redact_template_values`]) compares exactly as the object itself would.
pub fn template_differences(desired: &DaemonSet, live: &DaemonSet) -> Vec<FieldDifference> {
    let (mut git, mut live_tree) = (canonical(desired), canonical(live));
    let git_digests = secret_digests(&git);
    let live_digests = recorded_digests(live).unwrap_or_else(|| secret_digests(&live_tree));
    blank_secret_values(&mut git);
    blank_secret_values(&mut live_tree);
    let mut paths = Vec::new();
    diff(
        &git,
        &live_tree,
        &mut Vec::new(),
        "spec.template".to_string(),
        &mut paths,
    );
    let mut differences: Vec<FieldDifference> = paths
        .into_iter()
        .map(|path| FieldDifference {
            git: shown_at(&git, &path),
            live: shown_at(&live_tree, &path),
            path: path.text,
        })
        .collect();
    let fields: BTreeSet<&String> = git_digests.keys().chain(live_digests.keys()).collect();
    for field in fields {
        if git_digests.get(field) == live_digests.get(field) {
            continue;
        }
        let path = format!("spec.template.spec.{field}");
        let nested = |inner: &str, outer: &str| {
            inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        if differences
            .iter()
            .any(|d| nested(&d.path, &path) || nested(&path, &d.path))
        {
            continue; // already listed, with its shape or as part of a larger difference
        }
        let hidden = |digests: &BTreeMap<String, String>| {
            digests
                .contains_key(field)
                .then(|| format!("\"{REDACTED}\""))
        };
        let at = differences.partition_point(|d| d.path < path);
        differences.insert(
            at,
            FieldDifference {
                git: hidden(&git_digests),
                live: hidden(&live_digests),
                path,
            },
        );
    }
    differences
}

/// A DaemonSet's pod template, defaulted as the API server stores it, in canonical JSON.
fn canonical(ds: &DaemonSet) -> Value {
    let mut ds = ds.clone();
    crate::manifest::apply_defaults(&mut ds);
    let template = ds.spec.map(|s| s.template).unwrap_or_default();
    canonical_template(&template)
}

/// [`template_differences`] cut to the first [`MAX_LISTED`], or `None` when there are none.
pub fn live_diff(differences: Vec<FieldDifference>) -> Option<LiveDiff> {
    if differences.is_empty() {
        return None;
    }
    let more = differences.len().saturating_sub(MAX_LISTED);
    let mut fields = differences;
    fields.truncate(MAX_LISTED);
    Some(LiveDiff { fields, more })
}

/// A path both as text and as steps into the JSON trees.
struct Located {
    text: String,
    steps: Vec<Step>,
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Appends every leaf where `a` and `b` differ (a member or item present on one side only is
/// one difference).
fn diff(a: &Value, b: &Value, steps: &mut Vec<Step>, text: String, out: &mut Vec<Located>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let is_map = steps
                .last()
                .is_some_and(|s| matches!(s, Step::Key(k) if MAP_FIELDS.contains(&k.as_str())));
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let child = if is_map {
                    format!("{text}[{k}]")
                } else {
                    format!("{text}.{k}")
                };
                steps.push(Step::Key(k.clone()));
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => diff(va, vb, steps, child, out),
                    _ => out.push(Located {
                        text: child,
                        steps: steps.clone(),
                    }),
                }
                steps.pop();
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let child = format!("{text}[{i}]");
                steps.push(Step::Index(i));
                match (x.get(i), y.get(i)) {
                    (Some(va), Some(vb)) => diff(va, vb, steps, child, out),
                    _ => out.push(Located {
                        text: child,
                        steps: steps.clone(),
                    }),
                }
                steps.pop();
            }
        }
        _ if a == b => {}
        _ => out.push(Located {
            text,
            steps: steps.clone(),
        }),
    }
}

/// The value at `path` in `tree`, as shown to people.
fn shown_at(tree: &Value, path: &Located) -> Option<String> {
    let mut v = tree;
    for s in &path.steps {
        v = match s {
            Step::Key(k) => v.get(k)?,
            Step::Index(i) => v.get(i)?,
        };
    }
    let text = v.to_string();
    if text.chars().count() > MAX_VALUE_CHARS {
        let cut: String = text.chars().take(MAX_VALUE_CHARS - 1).collect();
        Some(format!("{cut}…"))
    } else {
        Some(text)
    }
}

/// Annotation a snapshot puts on a live DaemonSet whose env values, args and commands it
/// replaced with [`REDACTED`]: a JSON object of their digests ([`secret_digests`]), so that
/// git's values can still be compared with them.
pub const REDACTED_ANNOTATION: &str = "daemonsync.io/redacted";

/// What replaces a value that may be secret.
pub const REDACTED: &str = "(redacted)";

/// The container lists of a pod spec, and the fields of a container whose values may be secret.
const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];
const SECRET_FIELDS: [&str; 3] = ["env", "args", "command"];

/// Every secret-bearing field of a canonical template (`containers[0].env`, …), with the
/// value at it.
fn secret_fields(template: &Value) -> impl Iterator<Item = (String, &Value)> {
    CONTAINER_LISTS.into_iter().flat_map(move |list| {
        let containers = template
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        containers.iter().enumerate().flat_map(move |(i, c)| {
            SECRET_FIELDS.into_iter().filter_map(move |field| {
                c.get(field)
                    .map(|value| (format!("{list}[{i}].{field}"), value))
            })
        })
    })
}

/// The SHA-256 digest of each secret-bearing field of a canonical template, by field: one
/// per container and field (all of a container's env together), never one per value, so a
/// short value is not guessable from its own digest.
fn secret_digests(template: &Value) -> BTreeMap<String, String> {
    secret_fields(template)
        .map(|(field, value)| {
            let digest = Sha256::digest(value.to_string().as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            (field, format!("sha256:{hex}"))
        })
        .collect()
}

/// The digests a snapshot recorded for a DaemonSet it redacted; `None` when it is not
/// redacted. A redaction whose record cannot be read compares as "every field differs".
fn recorded_digests(ds: &DaemonSet) -> Option<BTreeMap<String, String>> {
    let recorded = ds.metadata.annotations.as_ref()?.get(REDACTED_ANNOTATION)?;
    Some(serde_json::from_str(recorded).unwrap_or_default())
}

/// Replaces every env value, argument and command word of a canonical template with
/// [`REDACTED`], keeping their number and the env names and references (which name objects,
/// not values).
fn blank_secret_values(template: &mut Value) {
    let Some(spec) = template.get_mut("spec") else {
        return;
    };
    for list in CONTAINER_LISTS {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for e in c
                .get_mut("env")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(v) = e.get_mut("value") {
                    *v = Value::String(REDACTED.into());
                }
            }
            for field in ["args", "command"] {
                for w in c
                    .get_mut(field)
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    *w = Value::String(REDACTED.into());
                }
            }
        }
    }
}

/// What a snapshot keeps of a live DaemonSet: every env value, argument and command word of
/// its pod template (init and ephemeral containers included) replaced with [`REDACTED`], and
/// [`REDACTED_ANNOTATION`] recording their digests, so a plan against the snapshot still sees
/// when git's values differ without the values ever leaving the cluster.
pub fn redact_template_values(ds: &mut DaemonSet) {
    let digests = secret_digests(&canonical(ds));
    let blank = |words: &mut Option<Vec<String>>| {
        for w in words.iter_mut().flatten() {
            *w = REDACTED.to_string();
        }
    };
    if let Some(pod) = ds.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
        let ephemeral = pod
            .ephemeral_containers
            .iter_mut()
            .flatten()
            .map(|c| (&mut c.env, &mut c.args, &mut c.command));
        let regular = pod
            .containers
            .iter_mut()
            .chain(pod.init_containers.iter_mut().flatten())
            .map(|c| (&mut c.env, &mut c.args, &mut c.command));
        for (env, args, command) in regular.chain(ephemeral) {
            for e in env.iter_mut().flatten() {
                if e.value.is_some() {
                    e.value = Some(REDACTED.to_string());
                }
            }
            blank(args);
            blank(command);
        }
    }
    ds.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            REDACTED_ANNOTATION.to_string(),
            serde_json::to_string(&digests).unwrap_or_default(),
        );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ds(template_spec: Value) -> DaemonSet {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": template_spec}
            }
        }))
        .expect("daemonset")
    }

    #[test]
    fn differences_name_the_field_and_both_values() {
        let git = ds(json!({"containers": [{"name": "a", "image": "agent:2",
            "resources": {"limits": {"cpu": "1"}}}]}));
        let live = ds(json!({"containers": [{"name": "a", "image": "agent:1",
            "resources": {"limits": {"cpu": "500m"}}}]}));
        let d = template_differences(&git, &live);
        assert_eq!(
            d,
            vec![
                FieldDifference {
                    path: "spec.template.spec.containers[0].image".into(),
                    git: Some("\"agent:2\"".into()),
                    live: Some("\"agent:1\"".into()),
                },
                FieldDifference {
                    path: "spec.template.spec.containers[0].resources.limits[cpu]".into(),
                    git: Some("\"1\"".into()),
                    live: Some("\"500m\"".into()),
                },
            ]
        );
    }

    #[test]
    fn env_values_are_never_shown() {
        let git = ds(json!({"containers": [{"name": "a", "image": "x",
            "env": [{"name": "TOKEN", "value": "s3cret-git"}]}]}));
        let live = ds(json!({"containers": [{"name": "a", "image": "x",
            "env": [{"name": "TOKEN", "value": "s3cret-live"}, {"name": "B", "value": "hidden"}]}]}));
        let d = template_differences(&git, &live);
        let text = format!("{d:?}");
        assert!(
            !text.contains("s3cret") && !text.contains("hidden"),
            "{text}"
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].path, "spec.template.spec.containers[0].env[1]");
        assert_eq!(d[0].git, None);
        assert_eq!(
            d[0].live.as_deref(),
            Some(r#"{"name":"B","value":"(redacted)"}"#)
        );
    }

    #[test]
    fn a_changed_secret_value_is_a_difference_without_its_value() {
        let with = |token: &str, args: &[&str]| {
            ds(
                json!({"containers": [{"name": "a", "image": "x", "args": args,
                "env": [{"name": "TOKEN", "value": token}]}]}),
            )
        };
        let d = template_differences(
            &with("old-s3cret", &["--v=1"]),
            &with("new-s3cret", &["--v=1"]),
        );
        assert_eq!(
            d,
            vec![FieldDifference {
                path: "spec.template.spec.containers[0].env".into(),
                git: Some(r#""(redacted)""#.into()),
                live: Some(r#""(redacted)""#.into()),
            }]
        );
        let d = template_differences(&with("t", &["--v=1"]), &with("t", &["--v=2"]));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path, "spec.template.spec.containers[0].args");
        assert!(template_differences(&with("t", &["--v=1"]), &with("t", &["--v=1"])).is_empty());
    }

    #[test]
    fn a_secret_field_inside_a_larger_difference_is_listed_once() {
        let git = ds(json!({"containers": [{"name": "a", "image": "x"}],
            "initContainers": [{"name": "i", "image": "y", "args": ["--copy"]}]}));
        let live = ds(json!({"containers": [{"name": "a", "image": "x"}]}));
        let d = template_differences(&git, &live);
        let paths: Vec<&str> = d.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["spec.template.spec.initContainers"]);
        assert!(!d[0].git.as_deref().unwrap_or_default().contains("--copy"));
    }

    #[test]
    fn a_redacted_live_object_compares_as_the_object_itself() {
        let git = ds(
            json!({"containers": [{"name": "a", "image": "x", "args": ["--v=2"],
            "command": ["/agent"],
            "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "TOKEN", "value": "s3cret"}]}]}),
        );
        for live in [
            git.clone(),
            ds(
                json!({"containers": [{"name": "a", "image": "x", "args": ["--v=1"],
                "command": ["/agent"], "env": [{"name": "TOKEN", "value": "other"}]}]}),
            ),
        ] {
            let mut redacted = live.clone();
            redact_template_values(&mut redacted);
            let shown = serde_json::to_string(&redacted).unwrap();
            assert!(
                !shown.contains("s3cret") && !shown.contains("--v="),
                "{shown}"
            );
            assert_eq!(
                template_differences(&git, &redacted),
                template_differences(&git, &live),
                "{shown}"
            );
        }
        let mut same = git.clone();
        redact_template_values(&mut same);
        assert!(template_differences(&git, &same).is_empty());
    }

    #[test]
    fn long_lists_are_cut_and_counted() {
        let many: Vec<FieldDifference> = (0..25)
            .map(|i| FieldDifference {
                path: format!("p{i}"),
                git: None,
                live: None,
            })
            .collect();
        let d = live_diff(many).expect("some");
        assert_eq!((d.fields.len(), d.more), (MAX_LISTED, 5));
        assert!(live_diff(Vec::new()).is_none());
    }
}

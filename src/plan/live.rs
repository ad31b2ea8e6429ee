//! How git's pod template compares with a live DaemonSet's, field by field.
//!
//! Both sides are defaulted and put in the form the API server stores (see
//! [`crate::manifest::apply_defaults`]: canonical quantities, `divisor: "0"`, `service: ""`,
//! `volumeMode: Filesystem`, zero values dropped, …) and then compared in the canonical JSON
//! form the revision hash uses, so that only what would make the cluster change is reported.
//! Environment variable values are never shown: the values of a live object may be secret.

use k8s_openapi::api::apps::v1::DaemonSet;
use serde::Serialize;
use serde_json::Value;

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
pub fn template_differences(desired: &DaemonSet, live: &DaemonSet) -> Vec<FieldDifference> {
    // A snapshot carries no env values, args or commands (they may be secret): compare git's
    // template with the same values blanked, so only what the snapshot shows can differ.
    let redacted = is_redacted(live);
    let canonical = |ds: &DaemonSet| {
        let mut ds = ds.clone();
        if redacted {
            redact_template_values(&mut ds);
        }
        crate::manifest::apply_defaults(&mut ds);
        let template = ds.spec.map(|s| s.template).unwrap_or_default();
        canonical_template(&template)
    };
    let (git, live) = (canonical(desired), canonical(live));
    let (git_shown, live_shown) = (masked(&git), masked(&live));
    let mut paths = Vec::new();
    diff(
        &git,
        &live,
        &mut Vec::new(),
        "spec.template".to_string(),
        &mut paths,
    );
    paths
        .into_iter()
        .map(|path| FieldDifference {
            git: shown_at(&git_shown, &path),
            live: shown_at(&live_shown, &path),
            path: path.text,
        })
        .collect()
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

/// A copy of a template with every environment variable value replaced, for display.
fn masked(v: &Value) -> Value {
    let mut v = v.clone();
    mask(&mut v, false);
    v
}

fn mask(v: &mut Value, in_env: bool) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if in_env && k == "value" {
                    *child = Value::String("(redacted)".into());
                } else {
                    mask(child, k == "env");
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                mask(item, in_env);
            }
        }
        _ => {}
    }
}

/// Annotation a snapshot puts on a live DaemonSet whose env values, args and commands it
/// replaced with [`REDACTED`].
pub const REDACTED_ANNOTATION: &str = "daemonsync.io/redacted";

/// What replaces a value that may be secret.
pub const REDACTED: &str = "(redacted)";

fn is_redacted(ds: &DaemonSet) -> bool {
    ds.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(REDACTED_ANNOTATION))
}

/// Replaces every env value, argument and command word of the pod template's containers (init
/// and ephemeral ones included) with [`REDACTED`], keeping their number and the env names and
/// references (which name objects, not values), and marks the DaemonSet with
/// [`REDACTED_ANNOTATION`]. What a snapshot keeps of a live DaemonSet.
pub fn redact_template_values(ds: &mut DaemonSet) {
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
            "env,args,command".to_string(),
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
        assert_eq!(d[0].path, "spec.template.spec.containers[0].env[0].value");
        assert_eq!(d[0].live.as_deref(), Some("\"(redacted)\""));
        assert_eq!(d[1].path, "spec.template.spec.containers[0].env[1]");
        assert_eq!(d[1].git, None);
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

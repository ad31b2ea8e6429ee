//! Which template changes a pod can take in place, and the planner's in-place phase.
//!
//! The API server lets a running pod's container and init-container images change and
//! nothing else of its spec (upstream `ValidatePodUpdate`); the kubelet then restarts only the
//! containers whose image changed. So a pod of revision A can become a pod of revision B in
//! place exactly when A's and B's templates differ in images alone (the revision label is
//! patched with them). Anything else (env, args, resources, volumes, labels, ...) needs a new
//! pod, and [`in_place_change`] names the first field that forces it, for the plan.
//!
//! Under `daemonsync.io/update-strategy: InPlaceIfPossible` the plan marks the nodes whose
//! pod is patched rather than replaced, says for the others why not, and opens the readiness
//! gate of a patched pod once its containers run the new images and are ready.

use super::context::{Annotated, Context, Prepared};
use super::pods;
use super::view::Slot;
use super::{Budgets, InPlacePlan, NodeUpdate, PodRef};
use crate::model::Pod;
use k8s_openapi::api::apps::v1::DaemonSet;
use serde::Serialize;
use serde_json::Value;

/// One container image that changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageChange {
    /// An init container.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub init: bool,
    /// The container's name.
    pub container: String,
    /// Its image in the old template.
    pub from: String,
    /// Its image in the new template.
    pub to: String,
}

/// How pods of one template become pods of another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "how")]
pub enum Change {
    /// Only images differ: patch them (and the revision label) in place.
    InPlace {
        /// The images that change, containers before init containers, in template order.
        images: Vec<ImageChange>,
    },
    /// A new pod is needed; `field` is the first field (in template order) that differs
    /// other than an image, e.g. `spec.template.spec.containers[0].env`.
    Recreate {
        /// The field path.
        field: String,
    },
}

const LISTS: [(&str, bool); 2] = [("containers", false), ("initContainers", true)];

/// How a pod of `old`'s template becomes one of `new`'s.
pub fn in_place_change(old: &DaemonSet, new: &DaemonSet) -> Change {
    let template = |d: &DaemonSet| {
        d.spec
            .as_ref()
            .and_then(|s| serde_json::to_value(&s.template).ok())
            .unwrap_or(Value::Null)
    };
    let (mut a, mut b) = (template(old), template(new));
    let mut images = Vec::new();
    for (list, init) in LISTS {
        let (Some(xs), Some(ys)) = (containers(&mut a, list), containers(&mut b, list)) else {
            continue;
        };
        if xs.len() != ys.len() {
            continue;
        }
        for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
            if x.get("name") != y.get("name") {
                continue;
            }
            let (from, to) = (take_image(x), take_image(y));
            if from != to {
                images.push(ImageChange {
                    init,
                    container: y["name"].as_str().unwrap_or_default().to_string(),
                    from,
                    to,
                });
            }
        }
    }
    match first_difference(&a, &b, "spec.template") {
        None => Change::InPlace { images },
        Some(field) => Change::Recreate { field },
    }
}

fn containers<'v>(template: &'v mut Value, list: &str) -> Option<&'v mut Vec<Value>> {
    template.get_mut("spec")?.get_mut(list)?.as_array_mut()
}

/// Removes a container's image, returning it (empty when none).
fn take_image(container: &mut Value) -> String {
    container
        .as_object_mut()
        .and_then(|o| o.remove("image"))
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The first path at which `a` and `b` differ: object keys in order, list items by index.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let (u, v) = (x.get(k), y.get(k));
                let child = format!("{path}.{k}");
                match (u, v) {
                    (Some(u), Some(v)) => first_difference(u, v, &child),
                    (None, Some(Value::Null)) | (Some(Value::Null), None) => None,
                    _ => Some(child),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_difference(u, v, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(path.to_string()),
    }
}

impl Context<'_> {
    /// `daemonsync.io/update-strategy: InPlaceIfPossible`: marks the slots whose old pod can
    /// take the new revision in place, and says per slot how it will be updated (with a
    /// warning when maxSurge cannot apply to them).
    pub(super) fn in_place(
        &self,
        d: &Prepared<'_>,
        slots: &mut [Slot],
        warnings: &mut Vec<String>,
    ) -> (Option<InPlacePlan>, Vec<Option<NodeUpdate>>) {
        let budgets = d.budgets;
        let updates = self.in_place_updates(d.ds, &d.annotated, slots, budgets, d.rolling);
        let in_place_nodes = slots.iter().filter(|s| s.in_place).count();
        if budgets.max_surge > 0 && in_place_nodes > 0 {
            warnings.push(format!(
                "maxSurge does not apply to the {in_place_nodes} node(s) updated in place: a pod \
                 restarted in place is unavailable until ready, so maxUnavailable ({}) paces them",
                budgets.max_unavailable
            ));
        }
        updates
    }

    fn in_place_updates(
        &self,
        ds: &DaemonSet,
        annotated: &Annotated<'_>,
        slots: &mut [Slot],
        budgets: Budgets,
        rolling: bool,
    ) -> (Option<InPlacePlan>, Vec<Option<NodeUpdate>>) {
        let wanted = annotated.policy.as_ref().is_some_and(|p| p.in_place);
        if !wanted || !rolling || self.manifest_only {
            return (None, Vec::new());
        }
        let from = annotated.stable.as_ref().map(|(_, rev)| rev.clone());
        let change = annotated
            .stable
            .as_ref()
            .map(|(s, _)| in_place_change(s, ds));
        let recreate_because = match (&from, &change) {
            (None, _) => Some(
                "no stable revision is known (the record keeps the last complete rollout's)"
                    .to_string(),
            ),
            (_, Some(Change::InPlace { .. })) if budgets.max_unavailable == 0 => Some(
                "maxUnavailable is 0 (a pod restarting in place would be unavailable)".to_string(),
            ),
            _ => None,
        };
        let images_only = matches!(change, Some(Change::InPlace { .. }));
        let updates = slots
            .iter_mut()
            .map(|slot| {
                if slot.node.is_none() || !slot.should_run {
                    return None;
                }
                let old = match slot.updated_pods() {
                    Some((None, Some(old))) => old,
                    _ => return None,
                };
                if !old.available {
                    // An unavailable old pod is replaced at once, as upstream replaces it.
                    slot.in_place = false;
                    return Some(NodeUpdate::Recreate {
                        because: "its pod is not available".into(),
                    });
                }
                let revision = self.pod(old.id).and_then(Pod::revision_hash);
                let because = if let Some(why) = &recreate_because {
                    Some(why.clone())
                } else if let Some(Change::Recreate { field }) = &change {
                    Some(format!("{field} changes"))
                } else if revision != from.as_deref() {
                    Some(format!(
                        "its pod runs revision {}, not the stable revision {}",
                        revision.unwrap_or("(none)"),
                        from.as_deref().unwrap_or_default()
                    ))
                } else {
                    None
                };
                slot.in_place = images_only && because.is_none();
                Some(match because {
                    None => NodeUpdate::InPlace,
                    Some(because) => NodeUpdate::Recreate { because },
                })
            })
            .collect();
        let plan = InPlacePlan {
            from_revision: from,
            change,
            recreate_because,
        };
        (Some(plan), updates)
    }

    /// Pods whose readiness gate can open: every container runs its image and is ready.
    pub(super) fn gates_to_open(&self, slots: &[Slot]) -> Vec<PodRef> {
        slots
            .iter()
            .flat_map(|s| s.pods.iter().map(move |p| (s, p)))
            .filter(|(_, p)| p.gate_closed && !p.terminating && p.id < pods::SYNTHETIC)
            .filter_map(|(s, p)| {
                let pod = self.pod(p.id)?;
                let d = pod.detail.as_ref()?;
                (d.containers_ready && !d.image_mismatch).then(|| PodRef {
                    namespace: pod.namespace.to_string(),
                    name: pod.name.clone(),
                    node: self.slot_name(s),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ds(pod: Value) -> DaemonSet {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "demo"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod}
            }
        }))
        .unwrap()
    }

    fn base() -> Value {
        json!({
            "initContainers": [{"name": "init", "image": "init:1"}],
            "containers": [
                {"name": "agent", "image": "agent:1", "env": [{"name": "A", "value": "1"}],
                 "resources": {"requests": {"cpu": "100m"}}},
                {"name": "sidecar", "image": "sidecar:1"}
            ],
            "volumes": [{"name": "v", "emptyDir": {}}]
        })
    }

    fn change(f: impl FnOnce(&mut Value)) -> Change {
        let mut new = base();
        f(&mut new);
        in_place_change(&ds(base()), &ds(new))
    }

    fn recreate(field: &str) -> Change {
        Change::Recreate {
            field: field.into(),
        }
    }

    #[test]
    fn image_changes_of_containers_and_init_containers_qualify() {
        let c = change(|p| {
            p["containers"][1]["image"] = json!("sidecar:2");
            p["initContainers"][0]["image"] = json!("init:2");
        });
        assert_eq!(
            c,
            Change::InPlace {
                images: vec![
                    ImageChange {
                        init: false,
                        container: "sidecar".into(),
                        from: "sidecar:1".into(),
                        to: "sidecar:2".into()
                    },
                    ImageChange {
                        init: true,
                        container: "init".into(),
                        from: "init:1".into(),
                        to: "init:2".into()
                    },
                ]
            }
        );
        assert_eq!(change(|_| {}), Change::InPlace { images: vec![] });
    }

    #[test]
    fn every_other_field_forces_a_recreate_and_is_named() {
        type Edit = Box<dyn FnOnce(&mut Value)>;
        let cases: Vec<(Edit, &str)> = vec![
            (
                Box::new(|p| p["containers"][0]["env"][0]["value"] = json!("2")),
                "spec.template.spec.containers[0].env[0].value",
            ),
            (
                Box::new(|p| p["containers"][0]["args"] = json!(["-v"])),
                "spec.template.spec.containers[0].args",
            ),
            (
                Box::new(|p| p["containers"][0]["command"] = json!(["/agent"])),
                "spec.template.spec.containers[0].command",
            ),
            (
                Box::new(|p| p["containers"][0]["resources"]["requests"]["cpu"] = json!("200m")),
                "spec.template.spec.containers[0].resources.requests.cpu",
            ),
            (
                Box::new(|p| p["volumes"][0] = json!({"name": "v", "hostPath": {"path": "/x"}})),
                "spec.template.spec.volumes[0].emptyDir",
            ),
            (
                Box::new(|p| {
                    p["containers"][1]["volumeMounts"] = json!([{"name": "v", "mountPath": "/v"}])
                }),
                "spec.template.spec.containers[1].volumeMounts",
            ),
            (
                Box::new(|p| p["hostNetwork"] = json!(true)),
                "spec.template.spec.hostNetwork",
            ),
            (
                Box::new(|p| {
                    p["containers"][0]["image"] = json!("agent:2");
                    p["containers"][0]["securityContext"] = json!({"privileged": true});
                }),
                "spec.template.spec.containers[0].securityContext",
            ),
            (
                Box::new(|p| {
                    p["containers"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "x", "image": "x:1"}))
                }),
                "spec.template.spec.containers",
            ),
            (
                Box::new(|p| {
                    p["containers"][1]["name"] = json!("renamed");
                    p["containers"][1]["image"] = json!("sidecar:2");
                }),
                "spec.template.spec.containers[1].image",
            ),
        ];
        for (f, field) in cases {
            assert_eq!(change(f), recreate(field));
        }
        let relabelled = {
            let mut d = ds(base());
            let t = &mut d.spec.as_mut().unwrap().template;
            t.metadata
                .as_mut()
                .unwrap()
                .labels
                .as_mut()
                .unwrap()
                .insert("tier".into(), "node".into());
            in_place_change(&ds(base()), &d)
        };
        assert_eq!(relabelled, recreate("spec.template.metadata.labels.tier"));
    }
}

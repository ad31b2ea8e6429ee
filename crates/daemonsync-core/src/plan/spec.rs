//! A desired DaemonSet compiled into the form the planner evaluates quickly
//! ([`DaemonSetSpec::compile`]), compared with a live `apps/v1` DaemonSet of the same name, and
//! its update strategy as the plan shows it.

use crate::model::{LabelSelector, Labels, TEMPLATE_GENERATION_ANNOTATION, Toleration};
use crate::plan::StrategySummary;
use crate::plan::affinity::{NodeSelectorTerm, compile_required_affinity};
use crate::plan::revision::revision_hash;
use crate::plan::tolerations::daemon_tolerations;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The update strategy, resolved from a defaulted, valid DaemonSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// `RollingUpdate` with its two budgets (unscaled).
    RollingUpdate {
        /// `maxUnavailable`.
        max_unavailable: IntOrPercent,
        /// `maxSurge`.
        max_surge: IntOrPercent,
    },
    /// `OnDelete`: pods are replaced only when something else deletes them.
    OnDelete,
}

/// An int-or-percent budget value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOrPercent {
    /// An absolute number of nodes.
    Int(i32),
    /// A percentage of `desiredNumberScheduled`, rounded up.
    Percent(i32),
}

impl std::fmt::Display for IntOrPercent {
    /// As written in a manifest: `1`, `10%`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntOrPercent::Int(v) => write!(f, "{v}"),
            IntOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl IntOrPercent {
    /// Upstream `GetScaledValueFromIntOrPercent(v, total, roundUp=true)`.
    pub fn scaled(self, total: i32) -> i32 {
        match self {
            IntOrPercent::Int(v) => v,
            IntOrPercent::Percent(p) => {
                let num = i64::from(p) * i64::from(total);
                i32::try_from((num + 99).div_euclid(100)).unwrap_or(i32::MAX)
            }
        }
    }
}

/// Everything the planner needs from one desired DaemonSet.
#[derive(Debug, Clone)]
pub struct DaemonSetSpec {
    /// `metadata.namespace`.
    pub namespace: String,
    /// What each of its pods requests of its node (upstream `PodRequests`).
    pub requests: crate::model::resources::Resources,
    /// `metadata.name`.
    pub name: String,
    /// `spec.selector`, compiled; `None` selects nothing.
    pub selector: Option<LabelSelector>,
    /// `spec.template.spec.nodeName`, when set.
    pub node_name: Option<String>,
    /// `spec.template.spec.nodeSelector`.
    pub node_selector: Labels,
    /// Required node-affinity terms (ORed); `None` when there is no required affinity.
    pub required_affinity: Option<Vec<NodeSelectorTerm>>,
    /// The template's tolerations plus the automatic DaemonSet tolerations (docs/semantics.md
    /// §4.1).
    pub tolerations: Vec<Toleration>,
    /// The update strategy.
    pub strategy: UpdateStrategy,
    /// `spec.minReadySeconds`.
    pub min_ready_seconds: i32,
    /// daemonsync's revision hash of the defaulted template.
    pub revision: String,
    /// Template generation used for the legacy `pod-template-generation` comparison.
    pub template_generation: Option<i64>,
    /// `spec.template.spec.hostNetwork`.
    pub host_network: bool,
    /// Host ports the template's containers bind (`hostPort`, or `containerPort` with
    /// hostNetwork).
    pub host_ports: Vec<i32>,
    /// `daemonsync.io/update-strategy: InPlaceIfPossible`: its pods carry the in-place
    /// readiness gate.
    pub in_place: bool,
}

impl DaemonSetSpec {
    /// Compiles a defaulted, validated DaemonSet.
    ///
    /// Total on any input: a missing namespace is `default`, a missing strategy (or
    /// `rollingUpdate`, or budget) takes the apps/v1 defaults (`maxUnavailable: 1`,
    /// `maxSurge: 0`), an unparsable budget counts as `Int(0)` (validation reports it), a
    /// missing template compiles as an empty one.
    pub fn compile(ds: &DaemonSet) -> Self {
        let meta = &ds.metadata;
        let ds_spec = ds.spec.as_ref();
        let template = ds_spec.map(|s| s.template.clone()).unwrap_or_default();
        let empty_pod_spec = PodSpec::default();
        let pod_spec = template.spec.as_ref().unwrap_or(&empty_pod_spec);
        let host_network = pod_spec.host_network.unwrap_or(false);

        let tolerations = daemon_tolerations(
            pod_spec.tolerations.as_deref().unwrap_or_default(),
            host_network,
        )
        .iter()
        .map(Toleration::from_k8s)
        .collect();

        let collision_count = ds.status.as_ref().and_then(|s| s.collision_count);

        DaemonSetSpec {
            namespace: meta
                .namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".to_string()),
            name: meta.name.clone().unwrap_or_default(),
            selector: ds_spec.and_then(|s| LabelSelector::from_k8s(&s.selector)),
            node_name: pod_spec.node_name.clone().filter(|n| !n.is_empty()),
            node_selector: pod_spec.node_selector.clone().unwrap_or_default(),
            required_affinity: compile_required_affinity(pod_spec),
            tolerations,
            strategy: ds_spec
                .and_then(|s| s.update_strategy.as_ref())
                .map(UpdateStrategy::from_k8s)
                .unwrap_or(UpdateStrategy::DEFAULT),
            min_ready_seconds: ds_spec.and_then(|s| s.min_ready_seconds).unwrap_or(0),
            revision: revision_hash(&template, collision_count),
            template_generation: template_generation(ds),
            host_network,
            host_ports: host_ports(pod_spec, host_network),
            requests: crate::model::resources::pod_requests(pod_spec),
            in_place: meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::manifest::policy::UPDATE_STRATEGY))
                .is_some_and(|v| v == "InPlaceIfPossible"),
        }
    }
}

impl UpdateStrategy {
    /// The apps/v1 default: `RollingUpdate` with `maxUnavailable: 1`, `maxSurge: 0`.
    pub const DEFAULT: UpdateStrategy = UpdateStrategy::RollingUpdate {
        max_unavailable: IntOrPercent::Int(1),
        max_surge: IntOrPercent::Int(0),
    };

    /// Resolves an API strategy. `OnDelete` ignores any `rollingUpdate` block; every other
    /// type (normally `RollingUpdate`) gets the budgets, each defaulted independently.
    pub fn from_k8s(s: &k8s_openapi::api::apps::v1::DaemonSetUpdateStrategy) -> Self {
        if s.type_.as_deref() == Some("OnDelete") {
            return UpdateStrategy::OnDelete;
        }
        let ru = s.rolling_update.as_ref();
        UpdateStrategy::RollingUpdate {
            max_unavailable: ru
                .and_then(|r| r.max_unavailable.as_ref())
                .map_or(IntOrPercent::Int(1), IntOrPercent::from_k8s),
            max_surge: ru
                .and_then(|r| r.max_surge.as_ref())
                .map_or(IntOrPercent::Int(0), IntOrPercent::from_k8s),
        }
    }
}

impl IntOrPercent {
    /// Parses an API int-or-string: ints as they are, `"<digits>%"` as a percent; any other
    /// string is `Int(0)` (validation rejects it before planning).
    pub fn from_k8s(v: &IntOrString) -> Self {
        match v {
            IntOrString::Int(i) => IntOrPercent::Int(*i),
            IntOrString::String(s) => s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<i32>().ok())
                .map_or(IntOrPercent::Int(0), IntOrPercent::Percent),
        }
    }
}

/// The update strategy as the plan shows it, budgets as written.
pub(super) fn strategy_summary(spec: &DaemonSetSpec) -> StrategySummary {
    let show = |v: IntOrPercent| match v {
        IntOrPercent::Int(i) => i.to_string(),
        IntOrPercent::Percent(p) => format!("{p}%"),
    };
    match spec.strategy {
        UpdateStrategy::RollingUpdate {
            max_unavailable,
            max_surge,
        } => StrategySummary {
            type_: "RollingUpdate",
            max_unavailable: Some(show(max_unavailable)),
            max_surge: Some(show(max_surge)),
            min_ready_seconds: spec.min_ready_seconds,
        },
        UpdateStrategy::OnDelete => StrategySummary {
            type_: "OnDelete",
            max_unavailable: None,
            max_surge: None,
            min_ready_seconds: spec.min_ready_seconds,
        },
    }
}

/// The `deprecated.daemonset.template.generation` annotation, when it is a number.
pub(super) fn template_generation(ds: &DaemonSet) -> Option<i64> {
    ds.metadata
        .annotations
        .as_ref()?
        .get(TEMPLATE_GENERATION_ANNOTATION)?
        .parse()
        .ok()
}

/// Host ports the pod binds: every positive `hostPort` of its init and regular containers,
/// plus every `containerPort` when it uses the host network. Sorted, deduplicated.
fn host_ports(spec: &PodSpec, host_network: bool) -> Vec<i32> {
    let containers: Vec<&Container> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .collect();
    let mut ports: Vec<i32> = containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .flat_map(|p| {
            let host = p.host_port.filter(|h| *h > 0);
            let container = (host_network && p.container_port > 0).then_some(p.container_port);
            host.into_iter().chain(container)
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{TaintEffect, TolerationOp};
    use serde_json::{Value, json};

    fn compile(v: Value) -> DaemonSetSpec {
        DaemonSetSpec::compile(&serde_json::from_value(v).expect("DaemonSet"))
    }

    fn with_spec(extra: Value) -> Value {
        let mut spec = json!({
            "selector": {"matchLabels": {"app": "a"}},
            "template": {
                "metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "img"}]},
            },
        });
        for (k, v) in extra.as_object().expect("object") {
            spec[k] = v.clone();
        }
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "agent"}, "spec": spec})
    }

    fn strategy(v: Value) -> UpdateStrategy {
        compile(with_spec(json!({"updateStrategy": v}))).strategy
    }

    #[test]
    fn missing_namespace_and_strategy_take_defaults() {
        let d = compile(with_spec(json!({})));
        assert_eq!(d.namespace, "default");
        assert_eq!(d.name, "agent");
        assert_eq!(d.strategy, UpdateStrategy::DEFAULT);
        assert_eq!(d.min_ready_seconds, 0);
        assert_eq!(d.template_generation, None);
        assert!(d.selector.is_some());
        assert!(d.required_affinity.is_none());
    }

    #[test]
    fn strategies_resolve_like_apps_v1_defaulting() {
        assert_eq!(
            strategy(json!({"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 3}})),
            UpdateStrategy::OnDelete
        );
        assert_eq!(
            strategy(
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}})
            ),
            UpdateStrategy::RollingUpdate {
                max_unavailable: IntOrPercent::Int(0),
                max_surge: IntOrPercent::Percent(25),
            }
        );
        assert_eq!(
            strategy(json!({"type": "RollingUpdate"})),
            UpdateStrategy::DEFAULT
        );
        assert_eq!(
            strategy(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}})),
            UpdateStrategy::RollingUpdate {
                max_unavailable: IntOrPercent::Int(1),
                max_surge: IntOrPercent::Int(1),
            },
            "each budget is defaulted on its own"
        );
    }

    #[test]
    fn unparsable_budgets_count_as_zero() {
        for bad in ["5", "-5%", "20Percent", "5.5%", "%", "99999999999%"] {
            assert_eq!(
                strategy(json!({"rollingUpdate": {"maxUnavailable": bad}})),
                UpdateStrategy::RollingUpdate {
                    max_unavailable: IntOrPercent::Int(0),
                    max_surge: IntOrPercent::Int(0),
                },
                "{bad}"
            );
        }
    }

    #[test]
    fn template_generation_comes_from_the_annotation() {
        let mut v = with_spec(json!({}));
        v["metadata"]["annotations"] = json!({"deprecated.daemonset.template.generation": "7"});
        assert_eq!(compile(v.clone()).template_generation, Some(7));
        v["metadata"]["annotations"] = json!({"deprecated.daemonset.template.generation": "x"});
        assert_eq!(compile(v).template_generation, None);
    }

    #[test]
    fn tolerations_include_the_automatic_ones() {
        let mut v = with_spec(json!({}));
        v["spec"]["template"]["spec"]["tolerations"] =
            json!([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]);
        let d = compile(v.clone());
        assert_eq!(d.tolerations.len(), 7);
        assert_eq!(d.tolerations[0].key.as_deref(), Some("gpu"));
        assert_eq!(d.tolerations[0].effect, Some(Ok(TaintEffect::NoSchedule)));
        assert!(
            d.tolerations
                .iter()
                .all(|t| t.operator == TolerationOp::Exists)
        );
        v["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
        let d = compile(v);
        assert!(d.host_network);
        assert_eq!(d.tolerations.len(), 8);
    }

    #[test]
    fn host_ports_are_sorted_and_deduplicated() {
        let mut v = with_spec(json!({}));
        v["spec"]["template"]["spec"]["initContainers"] = json!([{"name": "i", "image": "img", "ports": [{"containerPort": 80, "hostPort": 9100}]}]);
        v["spec"]["template"]["spec"]["containers"] = json!([
            {"name": "a", "image": "img", "ports": [
                {"containerPort": 9100, "hostPort": 9100}, {"containerPort": 8080}]},
            {"name": "b", "image": "img", "ports": [{"containerPort": 53, "hostPort": 53}]},
        ]);
        assert_eq!(compile(v.clone()).host_ports, vec![53, 9100]);
        v["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
        assert_eq!(compile(v).host_ports, vec![53, 80, 8080, 9100]);
    }

    #[test]
    fn revision_is_salted_with_the_collision_count() {
        let plain = compile(with_spec(json!({})));
        let mut v = with_spec(json!({}));
        v["status"] = json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
            "numberMisscheduled": 0, "numberReady": 0, "collisionCount": 1});
        let salted = compile(v);
        assert_ne!(plain.revision, salted.revision);
        let template = serde_json::from_value(with_spec(json!({}))["spec"]["template"].clone())
            .expect("template");
        assert_eq!(
            plain.revision,
            crate::plan::revision::revision_hash(&template, None)
        );
        assert_eq!(
            salted.revision,
            crate::plan::revision::revision_hash(&template, Some(1))
        );
    }

    #[test]
    fn node_name_and_selector_are_copied() {
        let mut v = with_spec(json!({}));
        v["metadata"]["namespace"] = json!("kube-system");
        v["spec"]["template"]["spec"]["nodeName"] = json!("node-0");
        v["spec"]["template"]["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
        v["spec"]["minReadySeconds"] = json!(10);
        let d = compile(v);
        assert_eq!(d.namespace, "kube-system");
        assert_eq!(d.node_name.as_deref(), Some("node-0"));
        assert_eq!(
            d.node_selector.get("kubernetes.io/os").map(String::as_str),
            Some("linux")
        );
        assert_eq!(d.min_ready_seconds, 10);
    }

    #[test]
    fn an_empty_object_still_compiles() {
        let d = DaemonSetSpec::compile(&DaemonSet::default());
        assert_eq!(d.namespace, "default");
        assert!(d.selector.is_none());
        assert_eq!(d.tolerations.len(), 6);
        assert!(d.host_ports.is_empty());
    }
}

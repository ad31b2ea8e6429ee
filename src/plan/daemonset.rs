//! A desired DaemonSet compiled into the form the planner evaluates quickly.

use crate::model::{LabelSelector, Labels, TEMPLATE_GENERATION_ANNOTATION, Toleration};
use crate::plan::eligibility::{NodeSelectorTerm, compile_required_affinity};
use crate::plan::render::daemon_tolerations;
use crate::plan::revision::revision_hash;
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
    /// The template's tolerations plus the automatic DaemonSet tolerations (section 4.1).
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

        let template_generation = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(TEMPLATE_GENERATION_ANNOTATION))
            .and_then(|v| v.parse::<i64>().ok());

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
            template_generation,
            host_network,
            host_ports: host_ports(pod_spec, host_network),
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

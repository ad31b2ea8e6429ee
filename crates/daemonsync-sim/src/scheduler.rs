//! kube-scheduler's filters, as far as daemon pods meet them: a pod is bound to a node only
//! when the node passes, in upstream's order, NodeUnschedulable, NodeName, TaintToleration,
//! NodeAffinity, NodePorts and NodeResourcesFit (`pkg/scheduler/framework/plugins/`). A pod
//! that fits nowhere stays Pending with `PodScheduled=False`, reason `Unschedulable`, and a
//! `FailedScheduling` event worded as upstream's `FitError` (with the DefaultPreemption
//! sentence); it is tried again when something on its node changes (a pod leaves, the node
//! changes or joins), as the scheduling queue moves unschedulable pods back on such events.
//!
//! Resources: a node has `status.capacity` and `status.allocatable` (the sim file's, default
//! cpu 4, memory 16Gi, pods 110, ephemeral-storage 100Gi) and may carry `load`, the requests
//! of the other pods it runs (not modelled one by one). A pod's requests are upstream's
//! `PodRequests`: the sum of its containers' (a limit stands for a missing request, as the
//! API server defaults it), at least the largest init container's plus the sidecars started
//! before it, plus the pod overhead.

use super::config::NodeSpec;
use super::nodes::{NodeEvent, NodeSim, SimPod};
use crate::model::{Node, Quantity, TaintEffect, Toleration};
use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::PodSpec;
use std::collections::BTreeMap;

pub use crate::model::resources::{Resources, pod_requests};
use crate::model::resources::{add, amount};

/// A node's resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeResources {
    /// `status.capacity`.
    pub capacity: Resources,
    /// `status.allocatable`.
    pub allocatable: Resources,
    /// Requests of the node's other (unmodelled) pods, `pods` their number.
    pub load: Resources,
}

/// The reason the NodeAffinity filter gives.
const AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
/// The reason the NodeUnschedulable filter gives.
const UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// The reason the NodeName filter gives.
const NODE_NAME: &str = "node(s) didn't match the requested node name";
/// The reason the NodePorts filter gives.
const PORTS: &str = "node(s) didn't have free ports for the requested pod ports";
/// DefaultPreemption's reason for a node where evicting pods cannot help.
const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// DefaultPreemption's reason for a node with no lower-priority pod to evict (the simulated
/// pods all have the same priority).
const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// The taint the node lifecycle controller keeps on cordoned nodes.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Reads a resource list as written in a sim file or a pod spec (`{cpu: 500m, memory: 1Gi}`).
fn parse_list<'a>(
    list: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<Resources, String> {
    let mut out = Resources::new();
    for (name, text) in list {
        let q = Quantity::parse(text).map_err(|e| format!("{name}: {text:?}: {e}"))?;
        out.insert(name.clone(), amount(name, &q));
    }
    Ok(out)
}

impl NodeResources {
    /// What a node without `capacity`, `allocatable` or `load` in the sim file has.
    pub fn default_node() -> Self {
        let capacity: Resources = [
            ("cpu", 4_000),
            ("memory", 16 << 30),
            ("pods", 110),
            ("ephemeral-storage", 100 << 30),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        NodeResources {
            allocatable: capacity.clone(),
            capacity,
            load: Resources::new(),
        }
    }

    /// The resources of a node entry of the sim file: its capacity (defaults for what it
    /// leaves out), its allocatable (the capacity for what it leaves out) and its load.
    pub fn of(spec: &NodeSpec) -> Result<Self> {
        let what = |key: &str, e: String| format!("node {:?}: {key}: {e}", spec.name);
        let mut r = NodeResources::default_node();
        if let Some(c) = &spec.capacity {
            r.capacity
                .extend(parse_list(c).map_err(|e| anyhow::anyhow!(what("capacity", e)))?);
            r.allocatable = r.capacity.clone();
        }
        if let Some(a) = &spec.allocatable {
            r.allocatable
                .extend(parse_list(a).map_err(|e| anyhow::anyhow!(what("allocatable", e)))?);
        }
        if let Some(l) = &spec.load {
            r.load = parse_list(l).map_err(|e| anyhow::anyhow!(what("load", e)))?;
        }
        for (name, value) in r.capacity.iter().chain(&r.allocatable).chain(&r.load) {
            if *value < 0 {
                bail!("node {:?}: {name} is negative", spec.name);
            }
        }
        for (name, value) in &r.allocatable {
            if r.capacity.get(name).is_some_and(|c| value > c) {
                bail!(
                    "node {:?}: allocatable {name} is more than its capacity; allocatable is \
                     what is left of the capacity for pods",
                    spec.name
                );
            }
        }
        Ok(r)
    }

    /// A resource list as the node reports it (`{"cpu": "4", "memory": "17179869184"}`).
    pub fn to_json(list: &Resources) -> serde_json::Value {
        let shown: BTreeMap<&str, String> = list
            .iter()
            .map(|(k, v)| {
                let text = if k == "cpu" {
                    if v % 1000 == 0 {
                        (v / 1000).to_string()
                    } else {
                        format!("{v}m")
                    }
                } else {
                    v.to_string()
                };
                (k.as_str(), text)
            })
            .collect();
        serde_json::json!(shown)
    }
}

/// The host ports a pod binds: `(hostIP, protocol, port)`.
pub fn host_ports(spec: &PodSpec) -> Vec<(String, String, i32)> {
    let host_network = spec.host_network.unwrap_or(false);
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p
                .host_port
                .filter(|h| *h > 0)
                .or((host_network && p.container_port > 0).then_some(p.container_port))?;
            let ip = p
                .host_ip
                .clone()
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| "0.0.0.0".into());
            Some((ip, p.protocol.clone().unwrap_or_else(|| "TCP".into()), port))
        })
        .collect()
}

fn ports_conflict(a: &(String, String, i32), b: &(String, String, i32)) -> bool {
    let any = |ip: &str| ip == "0.0.0.0" || ip == "::";
    a.1 == b.1 && a.2 == b.2 && (a.0 == b.0 || any(&a.0) || any(&b.0))
}

/// Where a pod may run: its `nodeSelector` and required node affinity (the NodeAffinity
/// filter; daemon pods name their node with a `metadata.name` field term).
#[derive(Debug, Clone, Default)]
pub struct Placement {
    node_selector: crate::model::Labels,
    required: Option<Vec<crate::plan::affinity::NodeSelectorTerm>>,
}

impl Placement {
    /// A pod spec's placement.
    pub fn of(spec: &PodSpec) -> Self {
        Placement {
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            required: crate::plan::affinity::compile_required_affinity(spec),
        }
    }

    /// The NodeAffinity filter: every `nodeSelector` label, and one required term.
    pub fn matches(&self, node: &Node) -> bool {
        self.node_selector
            .iter()
            .all(|(k, v)| node.labels.get(k) == Some(v))
            && self
                .required
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches(node)))
    }
}

/// What one node says to one pod that does not fit it: the reasons, and whether preemption
/// could help.
pub(crate) struct Verdict {
    reasons: Vec<String>,
    resolvable: bool,
}

fn untolerated<'a>(
    tolerations: &[Toleration],
    node: &'a Node,
    effects: &[TaintEffect],
) -> Option<&'a crate::model::Taint> {
    let policy = crate::plan::Policy::default();
    node.taints.iter().find(|t| {
        effects.contains(&t.effect)
            && !tolerations
                .iter()
                .any(|tol| crate::plan::eligibility::tolerates(tol, t, &policy))
    })
}

impl NodeSim {
    /// Runs the filters for `pod` on `node`, in upstream's order; `None` when it fits.
    fn filter(&self, pod: &SimPod, node: &Node) -> Option<Verdict> {
        let unresolvable = |reason: &str| {
            Some(Verdict {
                reasons: vec![reason.to_string()],
                resolvable: false,
            })
        };
        if node.unschedulable {
            let cordon = crate::model::Taint {
                key: UNSCHEDULABLE_TAINT.into(),
                value: String::new(),
                effect: TaintEffect::NoSchedule,
            };
            let policy = crate::plan::Policy::default();
            if !pod
                .tolerations
                .iter()
                .any(|t| crate::plan::eligibility::tolerates(t, &cordon, &policy))
            {
                return unresolvable(UNSCHEDULABLE);
            }
        }
        if pod
            .node_name_wanted
            .as_ref()
            .is_some_and(|n| *n != node.name)
        {
            return unresolvable(NODE_NAME);
        }
        if let Some(t) = untolerated(
            &pod.tolerations,
            node,
            &[TaintEffect::NoSchedule, TaintEffect::NoExecute],
        ) {
            return unresolvable(&format!(
                "node(s) had untolerated taint {{{}: {}}}",
                t.key, t.value
            ));
        }
        if !pod.placement.matches(node) {
            return unresolvable(AFFINITY);
        }
        let bound: Vec<&SimPod> = self.pods_holding(&node.name).collect();
        if !pod.host_ports.is_empty()
            && bound.iter().any(|other| {
                other.host_ports.iter().any(|theirs| {
                    pod.host_ports
                        .iter()
                        .any(|mine| ports_conflict(mine, theirs))
                })
            })
        {
            return Some(Verdict {
                reasons: vec![PORTS.to_string()],
                resolvable: true,
            });
        }
        let reasons = self.insufficient(pod, &node.name, &bound);
        (!reasons.is_empty()).then_some(Verdict {
            reasons,
            resolvable: true,
        })
    }

    /// A node's allocatable resources and what the pods holding them request (its `load`
    /// included), as `kubectl describe node` adds them up.
    pub(crate) fn node_usage(&self, node: &str) -> (Resources, Resources) {
        let default = NodeResources::default_node();
        let r = self.resources.get(node).unwrap_or(&default);
        let mut used = r.load.clone();
        for pod in self.pods_holding(node) {
            add(&mut used, &pod.requests);
        }
        (r.allocatable.clone(), used)
    }

    /// NodeResourcesFit: the resources `pod` needs beyond what is left on `node`.
    fn insufficient(&self, pod: &SimPod, node: &str, bound: &[&SimPod]) -> Vec<String> {
        let default = NodeResources::default_node();
        let r = self.resources.get(node).unwrap_or(&default);
        let mut used = r.load.clone();
        for other in bound {
            add(&mut used, &other.requests);
        }
        let mut reasons = Vec::new();
        // Upstream lists the pod count first, then cpu, memory, ephemeral storage, then
        // the rest; the message sorts them anyway.
        let mut names: Vec<&String> = pod.requests.keys().collect();
        names.sort_by_key(|n| match n.as_str() {
            "pods" => 0,
            "cpu" => 1,
            "memory" => 2,
            "ephemeral-storage" => 3,
            _ => 4,
        });
        for name in names {
            let want = pod.requests[name];
            let free = r.allocatable.get(name).copied().unwrap_or(0)
                - used.get(name).copied().unwrap_or(0);
            if want > free {
                reasons.push(if name == "pods" {
                    "Too many pods".to_string()
                } else {
                    format!("Insufficient {name}")
                });
            }
        }
        reasons
    }

    /// The pods that hold resources and ports on `node`: bound and not finished.
    pub(crate) fn pods_holding<'a>(&'a self, node: &str) -> impl Iterator<Item = &'a SimPod> + 'a {
        self.bound
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|k| self.pods.get(k))
            .filter(|p| !p.pod.phase.is_terminal())
    }

    /// Tries to bind a Pending pod: to its node when the filters pass; else it stays
    /// Pending with the scheduler's reasons (a `FailedScheduling` event when they change).
    /// True when it was bound.
    pub(crate) fn schedule_pod(&mut self, key: &(String, String)) -> bool {
        let Some(pod) = self.pods.get(key) else {
            return false;
        };
        if pod.pod.node_name.is_some() || pod.pod.is_terminating() {
            return false;
        }
        // A daemon pod names its node: when that node takes it, no other is looked at.
        if let Some(target) = pod.pod.target_node.clone()
            && let Some(node) = self.nodes.get(&*target)
            && self.filter(pod, node).is_none()
        {
            self.bind(key, &target);
            return true;
        }
        let mut verdicts: Vec<Verdict> = Vec::new();
        let mut chosen = None;
        for node in self.nodes.values() {
            match self.filter(pod, node) {
                None => {
                    chosen = Some(node.name.clone());
                    break;
                }
                Some(v) => verdicts.push(v),
            }
        }
        if let Some(node) = chosen {
            self.bind(key, &node);
            return true;
        }
        let message = fit_error(self.nodes.len(), &verdicts);
        let changed = self
            .pods
            .get(key)
            .is_some_and(|p| p.unschedulable.as_deref() != Some(message.as_str()));
        if changed {
            if let Some(p) = self.pod_mut(key) {
                p.unschedulable = Some(message.clone());
            }
            self.outbox.push(NodeEvent::pod(
                key,
                "Warning",
                "FailedScheduling",
                "default-scheduler",
                message,
            ));
        }
        false
    }

    /// Tries again the Pending pods that could now fit: those whose target is `node` (or
    /// that target none), in creation order.
    pub(crate) fn retry_pending(&mut self, node: Option<&str>) {
        let mut pending: Vec<((String, String), Option<crate::model::Timestamp>)> = self
            .unbound
            .iter()
            .filter_map(|k| Some((k, self.pods.get(k)?)))
            .filter(|(_, p)| !p.pod.is_terminating())
            .filter(|(_, p)| match (node, p.pod.target_node.as_deref()) {
                (Some(n), Some(t)) => n == t,
                _ => true,
            })
            .map(|(k, p)| (k.clone(), p.pod.creation_timestamp))
            .collect();
        pending.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        for (key, _) in pending {
            self.schedule_pod(&key);
        }
    }
}

/// Upstream `FitError.Error()` with DefaultPreemption's PostFilter message: each reason
/// counted over the nodes, `"COUNT REASON"` sorted as strings, then why preemption does not
/// help.
pub(crate) fn fit_error(all: usize, verdicts: &[Verdict]) -> String {
    let histogram = |reasons: Vec<&str>| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in reasons {
            *counts.entry(r).or_default() += 1;
        }
        let mut lines: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
        lines.sort();
        lines.join(", ")
    };
    let reasons = histogram(
        verdicts
            .iter()
            .flat_map(|v| v.reasons.iter().map(String::as_str))
            .collect(),
    );
    let preemption = histogram(
        verdicts
            .iter()
            .map(|v| {
                if v.resolvable {
                    NO_VICTIMS
                } else {
                    NOT_HELPFUL
                }
            })
            .collect(),
    );
    if all == 0 {
        return "no nodes available to schedule pods".into();
    }
    format!(
        "0/{all} nodes are available: {reasons}. preemption: 0/{all} nodes are available: \
         {preemption}."
    )
}

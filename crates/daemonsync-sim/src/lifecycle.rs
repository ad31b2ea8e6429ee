//! kube-controller-manager's node lifecycle and taint eviction controllers
//! (`pkg/controller/nodelifecycle/`, `pkg/controller/tainteviction/`): a node whose Ready
//! condition is False carries `node.kubernetes.io/not-ready` with effects NoSchedule and
//! NoExecute, one whose condition is Unknown (its kubelet stopped reporting) carries
//! `node.kubernetes.io/unreachable` with both, and a Ready node neither; pods bound to a node
//! with a NoExecute taint they do not tolerate are evicted (deleted) at once, those that
//! tolerate it for `tolerationSeconds` after that long.
//!
//! Upstream adds the NoSchedule taint as soon as the condition changes and the NoExecute one
//! on the controller's next pass (`--node-monitor-period`, 5 s); a node's condition turns
//! Unknown after `--node-monitor-grace-period` without a heartbeat. The simulator changes the
//! condition itself (the sim file's `ready:` and churn), so both taints follow at once.

use super::config::Readiness;
use super::nodes::{NodeEvent, NodeSim, SimEvent};
use crate::model::{Node, Taint, TaintEffect, Timestamp};

/// The taint of a node whose kubelet reports NotReady.
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint of a node whose kubelet stopped reporting.
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// The key of the taints a Ready condition calls for, if any.
fn condition_taint(readiness: Readiness) -> Option<&'static str> {
    match readiness {
        Readiness::True => None,
        Readiness::False => Some(NOT_READY),
        Readiness::Unknown => Some(UNREACHABLE),
    }
}

/// True for the taints the node lifecycle controller keeps for a node's Ready condition.
pub fn is_condition_taint(key: &str) -> bool {
    key == NOT_READY || key == UNREACHABLE
}

impl NodeSim {
    /// `node` with the taints its Ready condition calls for, and its `ready` set. Taints the
    /// node lacked are added at `since`: upstream stamps each taint it adds with `timeAdded`
    /// (`SwapNodeControllerTaint`, for the NoSchedule and the NoExecute one alike); those the
    /// node already carried keep theirs.
    pub(crate) fn with_condition_taints(
        &mut self,
        mut node: Node,
        readiness: Readiness,
        since: Timestamp,
    ) -> Node {
        let key = condition_taint(readiness);
        let carried = key.is_some_and(|k| node.taints.iter().any(|t| t.key == k));
        match key {
            None => {
                self.condition_taints_added.remove(&node.name);
            }
            Some(_) if carried && self.condition_taints_added.contains_key(&node.name) => {}
            Some(_) => {
                self.condition_taints_added.insert(node.name.clone(), since);
            }
        }
        node.taints.retain(|t| !is_condition_taint(&t.key));
        if let Some(key) = key {
            for effect in [TaintEffect::NoSchedule, TaintEffect::NoExecute] {
                node.taints.push(Taint {
                    key: key.to_string(),
                    value: String::new(),
                    effect,
                });
            }
        }
        node.ready = Some(readiness.is_ready());
        node
    }

    /// The Ready condition of a node the simulator knows.
    pub(crate) fn readiness(&self, node: &str) -> Readiness {
        match self.nodes.get(node).map(|n| n.ready != Some(false)) {
            Some(true) | None => Readiness::True,
            Some(false) if self.unreachable.contains(node) => Readiness::Unknown,
            Some(false) => Readiness::False,
        }
    }

    /// A node joins or changes (churn, or a write through the API), with its Ready condition
    /// when that is known (`None`: as it was, or Ready for a new node). The node lifecycle
    /// controller keeps its condition taints; a change of readiness goes through the kubelet
    /// model's effects on its pods; NoExecute taints evict; pods waiting for it are scheduled.
    pub(crate) fn upsert_node(&mut self, node: Node, readiness: Option<Readiness>) {
        let name = node.name.clone();
        let before = self
            .nodes
            .contains_key(&name)
            .then(|| self.readiness(&name));
        let readiness = readiness
            .or(before)
            .unwrap_or(if node.ready == Some(false) {
                Readiness::False
            } else {
                Readiness::True
            });
        if readiness == Readiness::Unknown {
            self.unreachable.insert(name.clone());
        } else {
            self.unreachable.remove(&name);
        }
        let now = self.now();
        let node = self.with_condition_taints(node, readiness, now);
        if self.nodes.get(&name) != Some(&node) {
            self.touch_node(&name);
        }
        self.nodes.insert(name.clone(), node);
        self.resources
            .entry(name.clone())
            .or_insert_with(super::scheduler::NodeResources::default_node);
        if before.is_some_and(|b| b.is_ready() != readiness.is_ready()) {
            self.set_node_ready(&name, readiness.is_ready());
        }
        self.evict_untolerated(&name);
        self.retry_pending(Some(&name));
    }

    /// A node's Ready condition changes (churn).
    pub(crate) fn set_node_readiness(&mut self, name: &str, readiness: Readiness) {
        if let Some(node) = self.nodes.get(name).cloned() {
            self.upsert_node(node, Some(readiness));
        }
    }

    /// The taint eviction controller's pass over one node: pods that do not tolerate one of
    /// its NoExecute taints are deleted now; those that tolerate them for a while are
    /// deleted when the shortest `tolerationSeconds` has passed.
    pub(crate) fn evict_untolerated(&mut self, node: &str) {
        let Some(n) = self.nodes.get(node) else {
            return;
        };
        let no_execute: Vec<Taint> = n
            .taints
            .iter()
            .filter(|t| t.effect == TaintEffect::NoExecute)
            .cloned()
            .collect();
        if no_execute.is_empty() {
            return;
        }
        let keys: Vec<(String, String)> = self
            .bound
            .get(node)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        for key in keys {
            match self.toleration_window(&key, &no_execute) {
                Window::Forever => {}
                Window::Now => self.evict(&key),
                Window::After(seconds) => {
                    let at = self
                        .clock()
                        .saturating_add(u64::try_from(seconds).unwrap_or(0).saturating_mul(1000));
                    self.schedule(
                        at,
                        SimEvent::Evict {
                            namespace: key.0.clone(),
                            name: key.1.clone(),
                        },
                    );
                }
            }
        }
    }

    /// How long a pod may stay beside `taints` (NoExecute taints of its node).
    fn toleration_window(&self, key: &(String, String), taints: &[Taint]) -> Window {
        let Some(p) = self.pods.get(key) else {
            return Window::Forever;
        };
        if p.pod.is_terminating() {
            return Window::Forever;
        }
        let policy = crate::plan::Policy::default();
        let mut window = Window::Forever;
        for taint in taints {
            let tolerating: Vec<&crate::model::Toleration> = p
                .tolerations
                .iter()
                .filter(|t| crate::plan::eligibility::tolerates(t, taint, &policy))
                .collect();
            if tolerating.is_empty() {
                return Window::Now;
            }
            // Upstream takes the smallest tolerationSeconds of the matching tolerations; one
            // without a limit tolerates forever only when none has a limit.
            if let Some(min) = tolerating.iter().filter_map(|t| t.toleration_seconds).min() {
                let seconds = min.max(0);
                window = match window {
                    Window::After(s) => Window::After(s.min(seconds)),
                    _ => Window::After(seconds),
                };
            }
        }
        match window {
            Window::After(0) => Window::Now,
            w => w,
        }
    }

    /// A scheduled eviction is due: the pod goes if its node still has a NoExecute taint it
    /// does not tolerate forever.
    pub(crate) fn eviction_due(&mut self, key: &(String, String)) {
        let Some(node) = self.pods.get(key).and_then(|p| p.pod.node_name.clone()) else {
            return;
        };
        let taints: Vec<Taint> = self
            .nodes
            .get(&*node)
            .map(|n| {
                n.taints
                    .iter()
                    .filter(|t| t.effect == TaintEffect::NoExecute)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if !taints.is_empty() && self.toleration_window(key, &taints) != Window::Forever {
            self.evict(key);
        }
    }

    fn evict(&mut self, key: &(String, String)) {
        if self.delete(&key.0, &key.1).is_ok() {
            self.outbox.push(NodeEvent::pod(
                key,
                "Normal",
                "TaintManagerEviction",
                "taint-eviction-controller",
                format!("Marking for deletion Pod {}/{}", key.0, key.1),
            ));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Window {
    Forever,
    Now,
    After(i64),
}

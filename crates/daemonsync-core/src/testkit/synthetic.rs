//! Deterministic synthetic fleets for tests and benchmarks.
//!
//! [`fleet`] builds `daemonsets` desired DaemonSets and a cluster of `nodes` nodes running them
//! in mixed states: mostly up to date, some out of date, not ready, still within
//! `minReadySeconds`, failed, terminating, missing, duplicated, adopted (no controller),
//! misscheduled, and on nodes blocked by taints. DaemonSets vary their `nodeSelector`,
//! tolerations and update strategy (`maxUnavailable` as a number or a percentage, `maxSurge`
//! as a number or a percentage, `OnDelete`). Every other DaemonSet also exists live in the
//! cluster with an older template, as when a team adopts daemonsync.
//!
//! The observed pod count is `nodes × daemonsets`: daemon pods, topped up with pods of other
//! controllers (ReplicaSets) in the same namespaces, some carrying a daemon's labels, which the
//! planner must leave alone.
//!
//! The same `(nodes, daemonsets, seed)` always gives the same fleet. Timestamps are relative
//! to [`fleet_now`]; plan the fleet at that instant.

use crate::model::{Node, OwnerRef, Pod, PodPhase, REVISION_HASH_LABEL, ReadyCondition, Taint};
use crate::model::{TaintEffect, Timestamp};
use crate::plan::{DaemonSetSpec, Desired, Observed};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::json;

/// The instant a synthetic fleet is observed at: 2025-01-01T12:00:00Z.
pub fn fleet_now() -> Timestamp {
    Timestamp::from_second(1_735_732_800).expect("a valid instant")
}

/// Builds a deterministic fleet of `nodes` nodes and `daemonsets` DaemonSets. See the module
/// documentation for its make-up.
pub fn fleet(nodes: usize, daemonsets: usize, seed: u64) -> (Vec<Desired>, Observed) {
    let mut rng = XorShift::new(seed);
    let node_list: Vec<SynthNode> = (0..nodes).map(|i| SynthNode::new(i, &mut rng)).collect();
    let kinds: Vec<DsKind> = (0..daemonsets).map(DsKind::new).collect();
    let desired: Vec<Desired> = kinds.iter().map(DsKind::desired).collect();
    let revisions: Vec<String> = desired
        .iter()
        .map(|d| DaemonSetSpec::compile(&d.daemonset).revision)
        .collect();

    let now = fleet_now();
    let mut pods = Vec::with_capacity(nodes * daemonsets);
    for (k, ds) in kinds.iter().enumerate() {
        for n in &node_list {
            ds.pods_on(n, &revisions[k], now, &mut rng, &mut pods);
        }
    }
    let target = nodes * daemonsets;
    let mut filler = 0;
    while pods.len() < target {
        let ds = &kinds[filler % kinds.len().max(1)];
        let n = &node_list[rng.below(nodes as u64) as usize];
        pods.push(other_controller_pod(ds, n, filler, now, &mut rng));
        filler += 1;
    }
    let live = kinds
        .iter()
        .filter(|k| k.index.is_multiple_of(2))
        .map(DsKind::live)
        .collect();
    let observed = Observed {
        nodes: node_list.into_iter().map(|n| n.node).collect(),
        pods: pods.into(),
        daemonsets: live,
        rollouts: Vec::new(),
        revisions: Vec::new(),
        namespaces: Vec::new(),
        version: None,
    };
    (desired, observed)
}

/// A tiny xorshift64* generator: deterministic, no dependency, good enough for test data.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator for `seed` (any value, zero included).
    pub fn new(seed: u64) -> Self {
        XorShift(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

const CONTROL_PLANE_TAINT: &str = "node-role.kubernetes.io/control-plane";
const GPU_TAINT: &str = "nvidia.com/gpu";
const MAINTENANCE_TAINT: &str = "example.com/maintenance";

/// A node and the facts the generator uses to place pods.
struct SynthNode {
    node: Node,
    windows: bool,
    arm64: bool,
    gpu: bool,
    /// Tainted NoExecute: only DaemonSets tolerating everything run here.
    draining: bool,
}

impl SynthNode {
    fn new(i: usize, rng: &mut XorShift) -> Self {
        let control_plane = i < 3;
        let windows = !control_plane && rng.chance(40);
        let arm64 = !windows && rng.chance(200);
        let gpu = !control_plane && !windows && rng.chance(50);
        let draining = !control_plane && rng.chance(10);
        let mut node = Node::named(format!("node-{i:05}"));
        let os = if windows { "windows" } else { "linux" };
        let arch = if arm64 { "arm64" } else { "amd64" };
        node.labels.insert("kubernetes.io/os".into(), os.into());
        node.labels.insert("kubernetes.io/arch".into(), arch.into());
        node.labels
            .insert("kubernetes.io/hostname".into(), node.name.clone());
        node.labels.insert(
            "topology.kubernetes.io/zone".into(),
            format!("zone-{}", ["a", "b", "c"][i % 3]),
        );
        let pool = if gpu { "gpu" } else { "general" };
        node.labels.insert("pool".into(), pool.into());
        let mut taint = |key: &str, value: &str, effect| {
            node.taints.push(Taint {
                key: key.into(),
                value: value.into(),
                effect,
            })
        };
        if control_plane {
            taint(CONTROL_PLANE_TAINT, "", TaintEffect::NoSchedule);
        }
        if gpu {
            taint(GPU_TAINT, "present", TaintEffect::NoSchedule);
        }
        if draining {
            taint(MAINTENANCE_TAINT, "true", TaintEffect::NoExecute);
        }
        if rng.chance(10) {
            node.ready = Some(false);
        }
        SynthNode {
            node,
            windows,
            arm64,
            gpu,
            draining,
        }
    }
}

/// Which nodes a synthetic DaemonSet targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Everywhere,
    Linux,
    Arm64,
    Gpu,
}

/// The shape of the `index`-th synthetic DaemonSet.
struct DsKind {
    index: usize,
    name: String,
    namespace: String,
    target: Target,
    tolerates_all: bool,
    strategy: serde_json::Value,
    min_ready_seconds: i32,
}

impl DsKind {
    fn new(index: usize) -> Self {
        let target = match index % 10 {
            3 => Target::Gpu,
            5 => Target::Linux,
            7 => Target::Arm64,
            _ => Target::Everywhere,
        };
        let strategy = match index % 6 {
            0 => json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
            1 => json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}),
            2 => json!({"type": "RollingUpdate",
                        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 2}}),
            3 => json!({"type": "RollingUpdate",
                        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "5%"}}),
            4 => json!({"type": "OnDelete"}),
            _ => json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}}),
        };
        DsKind {
            index,
            name: format!("agent-{index:02}"),
            namespace: format!("system-{}", index % 4),
            target,
            tolerates_all: index.is_multiple_of(3),
            strategy,
            min_ready_seconds: if index % 4 == 1 { 30 } else { 0 },
        }
    }

    fn template(&self, image_tag: &str) -> serde_json::Value {
        let mut tolerations = vec![json!({"key": CONTROL_PLANE_TAINT, "operator": "Exists",
                                          "effect": "NoSchedule"})];
        if self.tolerates_all {
            tolerations = vec![json!({"operator": "Exists"})];
        } else if self.target == Target::Gpu {
            tolerations.push(json!({"key": GPU_TAINT, "operator": "Exists",
                                    "effect": "NoSchedule"}));
        }
        let node_selector = match self.target {
            Target::Everywhere => json!(null),
            Target::Linux => json!({"kubernetes.io/os": "linux"}),
            Target::Arm64 => json!({"kubernetes.io/arch": "arm64"}),
            Target::Gpu => json!({"pool": "gpu"}),
        };
        json!({
            "metadata": {"labels": {"app": self.name, "tier": "node"}},
            "spec": {
                "nodeSelector": node_selector,
                "tolerations": tolerations,
                "containers": [{
                    "name": "agent",
                    "image": format!("registry.example/{}:{image_tag}", self.name),
                }],
            },
        })
    }

    fn daemonset(&self, image_tag: &str) -> DaemonSet {
        let ds = json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": self.name, "namespace": self.namespace, "generation": 3},
            "spec": {
                "selector": {"matchLabels": {"app": self.name}},
                "updateStrategy": self.strategy,
                "minReadySeconds": self.min_ready_seconds,
                "template": self.template(image_tag),
            },
        });
        serde_json::from_value(ds).expect("synthetic DaemonSets are well-formed")
    }

    fn desired(&self) -> Desired {
        let mut daemonset = self.daemonset("v2");
        crate::manifest::apply_defaults(&mut daemonset);
        Desired::new(format!("synthetic/{}.yaml", self.name), daemonset)
    }

    fn live(&self) -> DaemonSet {
        let mut ds = self.daemonset("v1");
        ds.metadata.annotations = Some(
            [(
                crate::model::TEMPLATE_GENERATION_ANNOTATION.to_string(),
                "2".to_string(),
            )]
            .into(),
        );
        ds
    }

    /// Whether the generator means this DaemonSet to run on `n` (its own simple model of
    /// eligibility, independent of the planner's).
    fn fits(&self, n: &SynthNode) -> bool {
        let selected = match self.target {
            Target::Everywhere => true,
            Target::Linux => !n.windows,
            Target::Arm64 => n.arm64,
            Target::Gpu => n.gpu,
        };
        // Every DaemonSet tolerates the control-plane taint.
        let tolerated =
            self.tolerates_all || (!n.draining && (!n.gpu || self.target == Target::Gpu));
        selected && tolerated
    }

    /// Appends the pods of this DaemonSet on node `n`.
    fn pods_on(
        &self,
        n: &SynthNode,
        revision: &str,
        now: Timestamp,
        rng: &mut XorShift,
        out: &mut Vec<Pod>,
    ) {
        let roll = rng.below(1000);
        if !self.fits(n) {
            // A few pods linger where the DaemonSet no longer belongs.
            if roll < 20 {
                out.push(self.pod(n, 0, "old", PodState::Ready, now));
            }
            return;
        }
        let (hash, state) = match roll {
            0..20 => return, // missing
            20..40 => {
                out.push(self.pod(n, 1, "old", PodState::Ready, now));
                (revision, PodState::NotReady)
            } // duplicate: a new pod beside the old one
            40..140 => ("old", PodState::Ready),
            140..150 => ("old", PodState::NotReady),
            150..180 => (revision, PodState::NotReady),
            180..190 => (revision, PodState::JustReady),
            190..195 => (revision, PodState::Failed),
            195..200 => ("old", PodState::Terminating),
            200..205 => (revision, PodState::Orphan),
            _ => (revision, PodState::Ready),
        };
        out.push(self.pod(n, 0, hash, state, now));
    }

    fn pod(&self, n: &SynthNode, k: usize, hash: &str, state: PodState, now: Timestamp) -> Pod {
        let ago = |secs: i64| Timestamp::from_second(now.as_second() - secs).ok();
        let mut labels = crate::model::Labels::new();
        labels.insert("app".into(), self.name.clone());
        labels.insert("tier".into(), "node".into());
        labels.insert(REVISION_HASH_LABEL.into(), hash.to_string());
        let controller = (state != PodState::Orphan).then(|| {
            crate::model::shared_owner(OwnerRef {
                api_version: crate::plan::RECORD_API_VERSION.into(),
                kind: crate::plan::RECORD_KIND.into(),
                name: self.name.clone(),
                uid: format!("uid-{}", self.index),
            })
        });
        let ready_since = match state {
            PodState::JustReady => ago(5),
            _ => ago(3600),
        };
        let ready = !matches!(
            state,
            PodState::NotReady | PodState::Failed | PodState::Terminating
        );
        Pod {
            namespace: crate::model::shared_name(&self.namespace),
            name: format!("{}-{}-{k}", self.name, n.node.name),
            // Shared between the pods labelled alike, as the live cache's pods are.
            labels: crate::model::shared_labels(Some(&labels)),
            controller,
            node_name: Some(crate::model::shared_name(&n.node.name)),
            target_node: Some(crate::model::shared_name(&n.node.name)),
            phase: if state == PodState::Failed {
                PodPhase::Failed
            } else {
                PodPhase::Running
            },
            creation_timestamp: ago(7200 - k as i64),
            deletion_timestamp: (state == PodState::Terminating).then_some(now),
            ready: Some(ReadyCondition {
                status: ready,
                last_transition: ready_since,
            }),
            waiting_reason: (state == PodState::NotReady).then(|| "CrashLoopBackOff".into()),
            signals: None,
            requests: None,
            detail: None,
            config: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PodState {
    Ready,
    /// Ready 5 seconds ago: unavailable while `minReadySeconds` runs.
    JustReady,
    NotReady,
    Failed,
    Terminating,
    /// Ready, without a controller reference: adopted by the DaemonSet.
    Orphan,
}

/// A pod of a ReplicaSet; every tenth one carries a daemon's labels, which must not make it
/// the daemon's.
fn other_controller_pod(
    ds: &DsKind,
    n: &SynthNode,
    i: usize,
    now: Timestamp,
    rng: &mut XorShift,
) -> Pod {
    let mut labels = crate::model::Labels::new();
    let app = if i.is_multiple_of(10) {
        ds.name.clone()
    } else {
        format!("web-{}", i % 50)
    };
    labels.insert("app".into(), app);
    Pod {
        namespace: crate::model::shared_name(&ds.namespace),
        name: format!("web-{i}-{:08x}", rng.next_u64() as u32),
        labels: labels.into(),
        controller: Some(crate::model::shared_owner(OwnerRef {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: format!("web-{}", i % 50),
            uid: format!("rs-{}", i % 50),
        })),
        node_name: Some(crate::model::shared_name(&n.node.name)),
        target_node: Some(crate::model::shared_name(&n.node.name)),
        phase: PodPhase::Running,
        creation_timestamp: Timestamp::from_second(now.as_second() - 600).ok(),
        deletion_timestamp: None,
        ready: Some(ReadyCondition {
            status: true,
            last_transition: Timestamp::from_second(now.as_second() - 500).ok(),
        }),
        waiting_reason: None,
        signals: None,
        requests: None,
        detail: None,
        config: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{NodeState, Policy, plan};

    #[test]
    fn same_seed_same_fleet_other_seed_other_fleet() {
        let (d1, o1) = fleet(200, 5, 7);
        let (d2, o2) = fleet(200, 5, 7);
        let (_, o3) = fleet(200, 5, 8);
        assert_eq!(d1.len(), d2.len());
        assert_eq!(o1.nodes, o2.nodes);
        assert_eq!(o1.pods, o2.pods);
        assert_ne!(o1.pods, o3.pods);
    }

    #[test]
    fn pod_count_is_nodes_times_daemonsets() {
        let (desired, observed) = fleet(500, 20, 1);
        assert_eq!(desired.len(), 20);
        assert_eq!(observed.nodes.len(), 500);
        assert_eq!(observed.pods.len(), 500 * 20);
        assert_eq!(observed.daemonsets.len(), 10);
        let names: std::collections::HashSet<_> = observed
            .pods
            .iter()
            .map(|p| (&p.namespace, &p.name))
            .collect();
        assert_eq!(names.len(), observed.pods.len(), "pod names are unique");
    }

    #[test]
    fn fleet_plans_show_the_mix_of_states() {
        let (desired, observed) = fleet(1000, 12, 42);
        let p = plan(&desired, &observed, &Policy::default(), fleet_now());
        let mut seen = std::collections::BTreeSet::new();
        for ds in &p.daemonsets {
            seen.extend(ds.nodes.iter().map(|n| n.state));
        }
        for state in [
            NodeState::UpToDate,
            NodeState::OutOfDate,
            NodeState::Missing,
            NodeState::Misscheduled,
            NodeState::Duplicate,
            NodeState::Failed,
            NodeState::Unavailable,
            NodeState::Terminating,
            NodeState::Blocked,
            NodeState::Ineligible,
        ] {
            assert!(seen.contains(&state), "no node is {state}");
        }
        let strategies: std::collections::BTreeSet<_> = p
            .daemonsets
            .iter()
            .map(|d| {
                (
                    d.strategy.type_,
                    d.strategy.max_unavailable.clone(),
                    d.strategy.max_surge.clone(),
                )
            })
            .collect();
        assert_eq!(strategies.len(), 6, "{strategies:?}");
    }
}

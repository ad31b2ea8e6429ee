//! What a plan prepares from [`Observed`] once and shares between DaemonSets (the
//! [`Context`]: nodes in name order, pods indexed by node), what it prepares per DaemonSet
//! before the phases run ([`Prepared`], and the per-node view, its slots), and the stable
//! DaemonSet a rollout policy falls back to.

use super::eligibility::{self, Eligibility};
use super::pods::{self, PodIndex, PodInfo};
use super::rollout::{Budgets, allows_surge, budgets};
use super::spec::template_generation;
use super::status::{self, Status};
use super::view::{Held, Pods, Slot};
use super::{
    DaemonSetSpec, Desired, LiveComparison, LiveDiff, Name, Observed, Policy, RolloutPolicy,
    RolloutRecord, UpdateStrategy, live,
};
use crate::model::{Pod, Timestamp};
use k8s_openapi::api::apps::v1::DaemonSet;
use rustc_hash::FxHashMap as HashMap;

/// What a DaemonSet's annotations say, and the stable DaemonSet with its revision.
pub(super) struct Annotated<'a> {
    /// The rollout policy, when the annotations make one.
    pub(super) policy: Option<RolloutPolicy>,
    /// The annotations' errors, with their paths.
    pub(super) errors: Vec<String>,
    /// The stable DaemonSet and its revision, when a policy (or an abort) needs it.
    pub(super) stable: Option<(&'a DaemonSet, String)>,
}

/// What one DaemonSet's plan prepares before its phases run, and every phase reads.
pub(super) struct Prepared<'p> {
    /// The desired DaemonSet.
    pub(super) ds: &'p DaemonSet,
    /// It, compiled.
    pub(super) spec: DaemonSetSpec,
    /// The live `apps/v1` DaemonSet of the same namespace and name.
    pub(super) live: Option<&'p DaemonSet>,
    /// What its `daemonsync.io/` annotations say.
    pub(super) annotated: Annotated<'p>,
    /// Its update strategy lets a node run a new pod beside the old one.
    pub(super) surge: bool,
    /// Its update strategy is `RollingUpdate`.
    pub(super) rolling: bool,
    /// The rolling update's budgets, resolved against the nodes that should run it.
    pub(super) budgets: Budgets,
    /// Its status counters, before this step.
    pub(super) status: Status,
}

/// The nodes of an observation in name order: what a plan indexes them by. It depends on the
/// node names alone, so an incremental planner keeps it while they stay the same.
#[derive(Debug, Default)]
pub(crate) struct NodeOrder {
    /// Node indices sorted by name.
    pub(super) order: Vec<u32>,
    /// Node names, by node index.
    pub(super) names: Vec<Name>,
    /// Position in `order` of each node name.
    pub(super) position: HashMap<Name, u32>,
    /// Position in `order` of each node, by the address of its name as shared with the pods
    /// decoded in this process ([`crate::model::shared_name`]): a pod's node is found without
    /// reading its name. Every pod of a plan is looked up here, so the table is kept small
    /// (16 bytes an entry): the names it is keyed by are held in `shared`, so an address here
    /// is never another string's.
    by_address: HashMap<usize, u32>,
    /// The shared names `by_address` is keyed by, by position: held, not read.
    #[allow(dead_code)]
    shared: Vec<Name>,
    /// The names again, by position, one copy per rayon worker, made by it when it first
    /// names a node: the rows and stages of every plan take a reference to each node's name,
    /// and DaemonSets planned at once on two cores taking them from one shared copy moved
    /// each name's reference count between the cores, once per DaemonSet.
    by_thread: Box<[std::sync::OnceLock<Box<[Name]>>]>,
}

impl NodeOrder {
    /// Indexes `nodes` by name.
    pub(crate) fn of(nodes: &[crate::model::Node]) -> Self {
        let mut order: Vec<u32> = (0..nodes.len() as u32).collect();
        order.sort_by(|&a, &b| nodes[a as usize].name.cmp(&nodes[b as usize].name));
        // The names the rows copy, made in name order: a plan's rows read them one after
        // another from adjacent memory.
        let mut names: Vec<Name> = vec![Name::from(""); nodes.len()];
        for &i in &order {
            names[i as usize] = Name::from(nodes[i as usize].name.as_str());
        }
        let position = order
            .iter()
            .enumerate()
            .map(|(pos, &i)| (names[i as usize].clone(), pos as u32))
            .collect();
        let shared: Vec<Name> = order
            .iter()
            .map(|&i| crate::model::shared_name(&nodes[i as usize].name))
            .collect();
        let by_address = shared
            .iter()
            .enumerate()
            .map(|(pos, name)| (crate::model::shared_name_address(name), pos as u32))
            .collect();
        NodeOrder {
            order,
            names,
            position,
            by_address,
            shared,
            by_thread: (0..rayon::current_num_threads())
                .map(|_| std::sync::OnceLock::new())
                .collect(),
        }
    }

    /// The name of the node at `pos`: the calling rayon worker's copy, else the shared one.
    fn name_at(&self, pos: u32) -> Name {
        let Some(copy) = rayon::current_thread_index().and_then(|i| self.by_thread.get(i)) else {
            return self.names[self.order[pos as usize] as usize].clone();
        };
        let names = copy.get_or_init(|| {
            self.order
                .iter()
                .map(|&i| Name::from(&*self.names[i as usize]))
                .collect()
        });
        names[pos as usize].clone()
    }

    /// The position of the node named `name`: by its address when it is the name this order
    /// holds (a pod's, decoded in this process), else by its text.
    pub(crate) fn position_of(&self, name: &Name) -> Option<u32> {
        let address = crate::model::shared_name_address(name);
        match self.by_address.get(&address) {
            Some(&pos) => Some(pos),
            None => self.position.get(&**name).copied(),
        }
    }

    /// Where each node of this order, by position, was in `last`: both walked once in name
    /// order, so that a node joining or leaving a fleet of thousands costs no lookup per node.
    pub(crate) fn positions_in(&self, last: &NodeOrder) -> Vec<Option<u32>> {
        let mut theirs = (0u32..)
            .zip(last.order.iter().map(|&i| &*last.names[i as usize]))
            .peekable();
        self.order
            .iter()
            .map(|&i| {
                let name = &*self.names[i as usize];
                while theirs.next_if(|(_, n)| *n < name).is_some() {}
                theirs.next_if(|(_, n)| *n == name).map(|(pos, _)| pos)
            })
            .collect()
    }

    /// Whether this indexes `nodes`: the same names in the same order.
    pub(crate) fn indexes(&self, nodes: &[crate::model::Node]) -> bool {
        self.names.len() == nodes.len()
            && self
                .names
                .iter()
                .zip(nodes)
                .all(|(name, node)| **name == *node.name)
    }
}

/// What `node` has free of `resource` ([`Context::free`]).
pub(super) fn free_on(node: &crate::model::Node, resource: &str) -> Option<i64> {
    let (Some(allocatable), Some(requested)) = (&node.allocatable, &node.requested) else {
        return None;
    };
    let total = *allocatable.get(resource)?;
    Some(total - requested.get(resource).copied().unwrap_or(0))
}

/// Indexes built once per plan and shared by every DaemonSet.
pub(super) struct Context<'a> {
    /// What the plan reads.
    pub(super) observed: &'a Observed,
    /// The nodes in name order.
    pub(super) nodes: std::sync::Arc<NodeOrder>,
    /// Pods by the controller they name, and each one's node (built once the specs are).
    pub(super) pods: PodIndex<'a>,
    /// No cluster was read: risks that depend on nodes are not reported.
    pub(super) manifest_only: bool,
    /// Pass manual pauses.
    pub(super) auto_promote: bool,
    /// Write through the record's pause (`apply --force`).
    pub(super) ignore_pause: bool,
    /// Planning as the built-in controller (its own pods, no handover).
    pub(super) builtin: bool,
    /// Leave the projected waves out ([`super::Policy::leave_out_waves`]).
    pub(super) leave_out_waves: bool,
    /// What each node has free of one resource, by position ([`Context::free`]), made once
    /// per plan for the DaemonSets that weigh many nodes.
    free: std::sync::Mutex<HashMap<String, std::sync::Arc<[Option<i64>]>>>,
}

impl<'a> Context<'a> {
    /// Indexes the observed nodes by name.
    pub(super) fn new(observed: &'a Observed) -> Self {
        Self::with_nodes(
            observed,
            std::sync::Arc::new(NodeOrder::of(&observed.nodes)),
        )
    }

    /// A context whose nodes are indexed by `nodes` (which must index `observed`'s).
    pub(super) fn with_nodes(observed: &'a Observed, nodes: std::sync::Arc<NodeOrder>) -> Self {
        Context {
            observed,
            nodes,
            pods: PodIndex::default(),
            manifest_only: false,
            auto_promote: false,
            ignore_pause: false,
            builtin: false,
            leave_out_waves: false,
            free: std::sync::Mutex::default(),
        }
    }

    /// What each node, by position, has free of `resource` as the scheduler counts it: its
    /// allocatable amount less what the pods bound there request. `None` where the node's
    /// resources are not known, or it does not offer `resource`. Made once per plan and
    /// shared by the DaemonSets that ask (the first one makes it).
    pub(super) fn free(&self, resource: &str) -> std::sync::Arc<[Option<i64>]> {
        let mut tables = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = tables.get(resource) {
            return std::sync::Arc::clone(t);
        }
        let table: std::sync::Arc<[Option<i64>]> = (0..self.nodes.order.len() as u32)
            .map(|pos| free_on(self.node_at(pos), resource))
            .collect();
        tables.insert(resource.to_string(), std::sync::Arc::clone(&table));
        table
    }

    /// The live `apps/v1` DaemonSet of that namespace and name.
    pub(super) fn live(&self, ns: &str, name: &str) -> Option<&'a DaemonSet> {
        self.observed.daemonsets.iter().find(|d| {
            d.metadata.namespace.as_deref().unwrap_or("default") == ns
                && d.metadata.name.as_deref() == Some(name)
        })
    }

    /// The record of a managed DaemonSet: where its rollout stands.
    pub(super) fn record(&self, ns: &str, name: &str) -> Option<&'a RolloutRecord> {
        self.observed
            .rollouts
            .iter()
            .find(|r| r.namespace == ns && r.name == name)
    }

    /// An observed pod by its index.
    pub(super) fn pod(&self, id: u32) -> Option<&'a Pod> {
        self.observed.pods.get(id as usize)
    }

    /// The observed node at `pos` in name order.
    pub(super) fn node_at(&self, pos: u32) -> &'a crate::model::Node {
        &self.observed.nodes[self.nodes.order[pos as usize] as usize]
    }

    /// The name of the node at `pos` in name order.
    pub(super) fn name_at(&self, pos: u32) -> Name {
        self.nodes.name_at(pos)
    }

    /// The name of a slot's node (a vanished node's too).
    pub(super) fn slot_name(&self, slot: &Slot) -> Name {
        match slot.node {
            Some(pos) => self.name_at(pos),
            None => Name::from(self.gone_node(slot)),
        }
    }

    /// The name of a vanished node: the target of the pods that keep its slot.
    fn gone_node(&self, slot: &Slot) -> &'a str {
        slot.pods
            .first()
            .and_then(|p| self.pod(p.id)?.target_node.as_deref())
            .unwrap_or_default()
    }

    /// Eligibility of every node for every DaemonSet, indexed `[daemonset][node position]`.
    /// Nodes are the outer loop: a node's labels and taints stay in cache while every
    /// DaemonSet is evaluated against them.
    pub(super) fn eligibility(
        &self,
        specs: &[DaemonSetSpec],
        policy: &Policy,
    ) -> Vec<Vec<Eligibility>> {
        let mut out: Vec<Vec<Eligibility>> = specs
            .iter()
            .map(|_| Vec::with_capacity(self.nodes.order.len()))
            .collect();
        // Each row's last reason, shared by the nodes ineligible for the same one.
        let mut last = vec![None; specs.len()];
        for &i in &self.nodes.order {
            let node = &self.observed.nodes[i as usize];
            for ((row, spec), last) in out.iter_mut().zip(specs).zip(&mut last) {
                row.push(eligibility::evaluate_shared(spec, node, policy, last));
            }
        }
        out
    }

    /// Builds the per-node view: one slot per node in name order, then one per vanished node
    /// that still has pods of this DaemonSet.
    pub(super) fn slots(
        &self,
        spec: &DaemonSetSpec,
        eligibility: &[Eligibility],
        now: Timestamp,
    ) -> Vec<Slot> {
        let mut slots: Vec<Slot> = eligibility
            .iter()
            .enumerate()
            .map(|(pos, e)| Slot {
                node: Some(pos as u32),
                should_run: e.should_run,
                should_continue: e.should_continue_running,
                pods: Pods::new(),
                held: Held::No,
                in_place: false,
                pulling: false,
            })
            .collect();
        let mut gone: HashMap<&str, u32> = HashMap::default();
        let pods = &self.observed.pods;
        let mut memo = pods::RevisionMemo::default();
        for id in self.pods.claimed(pods, spec) {
            let pod = &pods[id as usize];
            // Terminal pods that are already being deleted are gone for every purpose.
            if pod.phase.is_terminal() && pod.is_terminating() {
                continue;
            }
            let Some(target) = pod.target_node.as_deref() else {
                continue;
            };
            let slot = match self.pods.node_position(id) {
                Some(pos) => pos as usize,
                None => *gone.entry(target).or_insert_with(|| {
                    slots.push(Slot {
                        node: None,
                        should_run: false,
                        should_continue: false,
                        pods: Pods::new(),
                        held: Held::No,
                        in_place: false,
                        pulling: false,
                    });
                    (slots.len() - 1) as u32
                }) as usize,
            };
            slots[slot]
                .pods
                .push(PodInfo::with_memo(pod, id, spec, now, &mut memo));
        }
        let first_gone = self.nodes.order.len();
        slots[first_gone..].sort_by(|a, b| self.gone_node(a).cmp(self.gone_node(b)));
        for slot in slots.iter_mut().filter(|s| s.pods.len() > 1) {
            slot.pods
                .sort_by(|a, b| pods::upstream_order(&pods[a.id as usize], &pods[b.id as usize]));
        }
        slots
    }

    /// Everything one DaemonSet's phases read: its live counterpart, its per-node view (the
    /// slots, which the phases go on to mark), its status and budgets, its annotations.
    pub(super) fn prepare<'p>(
        &self,
        desired: &'p Desired,
        spec: DaemonSetSpec,
        eligibility: &[Eligibility],
        now: Timestamp,
    ) -> (Prepared<'p>, Vec<Slot>)
    where
        'a: 'p,
    {
        let ds = &desired.daemonset;
        let live = self.live(&spec.namespace, &spec.name);
        let slots = self.slots(&spec, eligibility, now);
        let status = status::status(&slots, ds.metadata.generation);
        let prepared = Prepared {
            ds,
            live,
            annotated: self.annotated(ds, &spec),
            surge: allows_surge(&spec),
            rolling: matches!(spec.strategy, UpdateStrategy::RollingUpdate { .. }),
            budgets: budgets(&spec, status.desired_number_scheduled),
            status,
            spec,
        };
        (prepared, slots)
    }

    /// A DaemonSet's `daemonsync.io/` annotations and its stable revision, read once per plan.
    pub(super) fn annotated(&self, ds: &DaemonSet, spec: &DaemonSetSpec) -> Annotated<'a> {
        let (policy, errors) = match RolloutPolicy::of(ds) {
            Ok(p) => (p, Vec::new()),
            Err(errs) => (None, errs.iter().map(ToString::to_string).collect()),
        };
        let record = self.record(&spec.namespace, &spec.name);
        let aborted = record.is_some_and(|r| r.aborted.is_some());
        let paused = record.is_some_and(|r| r.paused) && !self.ignore_pause;
        // The stable revision's hash is only needed by a policy (or an abort, or a pause).
        let stable = (policy.is_some() || aborted || paused)
            .then(|| stable_daemonset(self.observed, &spec.namespace, &spec.name))
            .flatten()
            .map(|d| (d, DaemonSetSpec::compile(d).revision));
        Annotated {
            policy,
            errors,
            stable,
        }
    }
}

/// The DaemonSet whose revision nodes held back by a rollout policy run: the one the record
/// says the last complete rollout reached, else the live `apps/v1` DaemonSet of that name.
pub fn stable_daemonset<'o>(observed: &'o Observed, ns: &str, name: &str) -> Option<&'o DaemonSet> {
    observed
        .rollouts
        .iter()
        .find(|r| r.namespace == ns && r.name == name)
        .and_then(|r| r.stable.as_deref())
        .or_else(|| {
            observed.daemonsets.iter().find(|d| {
                d.metadata.namespace.as_deref().unwrap_or("default") == ns
                    && d.metadata.name.as_deref() == Some(name)
            })
        })
}

impl Context<'_> {
    /// Compiles a desired DaemonSet; when the built-in controller runs one of the same name,
    /// its template generation decides which of its pods count as updated.
    pub(super) fn spec(
        &self,
        desired: &Desired,
    ) -> (DaemonSetSpec, (LiveComparison, Option<LiveDiff>)) {
        let ds = &desired.daemonset;
        let mut spec = DaemonSetSpec::compile(ds);
        let comparison = match self.live(&spec.namespace, &spec.name) {
            None => (LiveComparison::None, None),
            Some(live) => match live::live_diff(live::template_differences(ds, live)) {
                None => {
                    spec.template_generation = template_generation(live);
                    (LiveComparison::Equivalent, None)
                }
                Some(diff) => {
                    spec.template_generation = None;
                    (LiveComparison::Differs, Some(diff))
                }
            },
        };
        (spec, comparison)
    }
}

#[cfg(test)]
mod tests {
    use super::NodeOrder;
    use crate::model::{Node, shared_name};
    use std::sync::Arc;

    #[test]
    fn a_pods_node_is_found_by_its_shared_name_from_any_thread_and_by_text_otherwise() {
        let nodes: Vec<Node> = ["node-c", "node-a", "node-b"]
            .into_iter()
            .map(Node::named)
            .collect();
        let order = NodeOrder::of(&nodes);
        // A pod decoded on another thread shares the node order's name.
        let decoded = std::thread::spawn(|| shared_name("node-b"))
            .join()
            .expect("decoding thread");
        let address = crate::model::shared_name_address(&decoded);
        let held = &order.shared[order.by_address[&address] as usize];
        assert!(Arc::ptr_eq(&decoded, held), "one allocation per name");
        assert_eq!(order.position_of(&decoded), Some(1));
        // A name of its own (a snapshot's, a test's) is found by its text.
        let own: Arc<str> = Arc::from("node-c");
        assert!(
            !order
                .by_address
                .contains_key(&crate::model::shared_name_address(&own))
        );
        assert_eq!(order.position_of(&own), Some(2));
        assert_eq!(order.position_of(&shared_name("node-a")), Some(0));
        assert_eq!(order.position_of(&Arc::from("node-z")), None);
        assert_eq!(order.position_of(&shared_name("node-z")), None);
    }

    #[test]
    fn a_node_joining_and_one_leaving_keep_every_other_nodes_place_from_the_last_order() {
        let order = |names: &[&str]| {
            let nodes: Vec<Node> = names.iter().copied().map(Node::named).collect();
            NodeOrder::of(&nodes)
        };
        let last = order(&["node-b", "node-d", "node-a", "node-e"]);
        // node-d left, node-c and node-f joined; the list comes in another order.
        let now = order(&["node-f", "node-a", "node-c", "node-e", "node-b"]);
        // In name order: node-a, node-b, node-c, node-e, node-f; last: a, b, d, e.
        assert_eq!(
            now.positions_in(&last),
            vec![Some(0), Some(1), None, Some(3), None]
        );
        assert_eq!(
            last.positions_in(&last),
            vec![Some(0), Some(1), Some(2), Some(3)]
        );
        assert_eq!(order(&[]).positions_in(&last), Vec::<Option<u32>>::new());
        assert_eq!(last.positions_in(&order(&[])), vec![None; 4]);
    }
}

//! Fluent fixtures for planner tests: `ds("foo").max_surge(1)`, `node("n1").label(..)`, and a
//! tiny in-memory cluster that applies steps the way upstream's unit tests observe them.

use crate::model::{Node, OwnerRef, Pod, PodPhase, ReadyCondition, Taint, TaintEffect, Timestamp};
use crate::model::{REVISION_HASH_LABEL, TEMPLATE_GENERATION_LABEL};
use crate::plan::RolloutRecord;
use crate::plan::{DaemonSetPlan, DaemonSetSpec, Desired, Observed, Policy, StepPhase};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Value, json};

/// Labels L1 of the upstream tests: selector and template labels.
pub fn l1() -> Value {
    json!({"name": "simple-daemon", "type": "production"})
}

/// Labels L2: do not match the selector.
pub fn l2() -> Value {
    json!({"name": "simple-daemon", "type": "test"})
}

/// A DaemonSet builder over its JSON form.
#[derive(Clone)]
pub struct DsBuilder(Value);

/// The upstream test DaemonSet `foo`: selector and template labels L1, one container,
/// RollingUpdate with maxUnavailable 1.
pub fn ds(name: &str) -> DsBuilder {
    DsBuilder(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": l1()},
            "revisionHistoryLimit": 2,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {
                "metadata": {"labels": l1()},
                "spec": {"containers": [{"name": "foo", "image": "foo/bar:1"}]}
            }
        }
    }))
}

impl DsBuilder {
    fn spec(&mut self) -> &mut Value {
        &mut self.0["spec"]
    }
    fn pod_spec(&mut self) -> &mut Value {
        &mut self.0["spec"]["template"]["spec"]
    }
    /// `updateStrategy: OnDelete`.
    pub fn on_delete(mut self) -> Self {
        self.spec()["updateStrategy"] = json!({"type": "OnDelete"});
        self
    }
    /// `rollingUpdate.maxUnavailable`: an integer or a percentage string.
    pub fn max_unavailable(mut self, v: Value) -> Self {
        self.spec()["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = v;
        self
    }
    /// `rollingUpdate.maxSurge`: an integer or a percentage string.
    pub fn max_surge(mut self, v: Value) -> Self {
        self.spec()["updateStrategy"]["rollingUpdate"]["maxSurge"] = v;
        self
    }
    /// Surge mode: `maxUnavailable: 0` and `maxSurge: v`.
    pub fn surge(self, v: Value) -> Self {
        self.max_unavailable(json!(0)).max_surge(v)
    }
    /// The image of the one container.
    pub fn image(mut self, image: &str) -> Self {
        self.pod_spec()["containers"][0]["image"] = json!(image);
        self
    }
    /// The template's `nodeSelector`.
    pub fn node_selector(mut self, sel: Value) -> Self {
        self.pod_spec()["nodeSelector"] = sel;
        self
    }
    /// The template's `nodeName`.
    pub fn node_name(mut self, n: &str) -> Self {
        self.pod_spec()["nodeName"] = json!(n);
        self
    }
    /// Required node affinity with these `nodeSelectorTerms`.
    pub fn affinity(mut self, terms: Value) -> Self {
        self.pod_spec()["affinity"] = json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
        self
    }
    /// The template's tolerations.
    pub fn tolerations(mut self, t: Value) -> Self {
        self.pod_spec()["tolerations"] = t;
        self
    }
    /// `spec.selector`.
    pub fn selector(mut self, s: Value) -> Self {
        self.spec()["selector"] = s;
        self
    }
    /// `spec.minReadySeconds`.
    pub fn min_ready(mut self, s: i32) -> Self {
        self.spec()["minReadySeconds"] = json!(s);
        self
    }
    /// One DaemonSet annotation.
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["annotations"][k] = json!(v);
        self
    }
    /// A `metadata.deletionTimestamp`: the DaemonSet is being deleted.
    pub fn deleting(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        self
    }
    /// The DaemonSet (neither defaulted nor validated).
    pub fn build(&self) -> DaemonSet {
        serde_json::from_value(self.0.clone()).expect("test DaemonSet")
    }
}

/// A node builder.
pub struct NodeBuilder(Node);

/// A ready, untainted, unlabelled node.
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder(Node::named(name))
}

impl NodeBuilder {
    /// One node label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0.labels.insert(k.into(), v.into());
        self
    }
    /// Labels `color: blue` and `speed: fast`.
    pub fn blue(self) -> Self {
        self.label("color", "blue").label("speed", "fast")
    }
    /// One taint.
    pub fn taint(mut self, key: &str, value: &str, effect: TaintEffect) -> Self {
        self.0.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect,
        });
        self
    }
    /// The node.
    pub fn build(self) -> Node {
        self.0
    }
}

/// `count` nodes named `node-0` .. `node-{count-1}`.
pub fn nodes(count: usize) -> Vec<Node> {
    (0..count)
        .map(|i| Node::named(format!("node-{i}")))
        .collect()
}

/// A fixed instant for tests.
pub fn t0() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

/// An in-memory cluster: pod creations and deletions take effect instantly, as upstream's
/// fake pod control makes them in its unit tests.
pub struct Cluster {
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Pods.
    pub pods: Vec<Pod>,
    /// Live DaemonSets of the built-in controller.
    pub live: Vec<DaemonSet>,
    /// The instant plans are made for.
    pub now: Timestamp,
    /// The planner policy.
    pub policy: Policy,
    /// What the records say about rollouts.
    pub rollouts: Vec<RolloutRecord>,
    counter: usize,
}

/// Totals of a sync: (creates, deletes).
pub type Counts = (usize, usize);

impl Cluster {
    /// A cluster of `nodes` without pods, at [`t0`].
    pub fn new(nodes: Vec<Node>) -> Self {
        Cluster {
            nodes,
            pods: Vec::new(),
            live: Vec::new(),
            now: t0(),
            policy: Policy::default(),
            rollouts: Vec::new(),
            counter: 0,
        }
    }

    /// Adds a pod of `ds` bound to `node`: labels L1 plus the current revision hash,
    /// controller ownerReference to its record (a managed DaemonSet's pod), not ready. Returns
    /// it for adjustment.
    pub fn pod(&mut self, ds: &DaemonSet, node: &str) -> &mut Pod {
        let spec = DaemonSetSpec::compile(ds);
        let mut labels: crate::model::Labels = serde_json::from_value(l1()).unwrap();
        labels.insert(REVISION_HASH_LABEL.into(), spec.revision.clone());
        self.counter += 1;
        self.pods.push(Pod {
            namespace: crate::model::shared_name(&spec.namespace),
            name: format!("{}-{:05}", spec.name, self.counter),
            labels: labels.into(),
            controller: Some(crate::model::shared_owner(OwnerRef {
                api_version: crate::plan::RECORD_API_VERSION.into(),
                kind: crate::plan::RECORD_KIND.into(),
                name: spec.name.clone(),
                uid: "uid-1".into(),
            })),
            node_name: Some(node.into()),
            target_node: Some(node.into()),
            phase: PodPhase::Running,
            creation_timestamp: Some(self.now),
            ..Pod::default()
        });
        self.pods.last_mut().unwrap()
    }

    /// `n` pods of `ds` on `node`.
    pub fn pods(&mut self, ds: &DaemonSet, node: &str, n: usize) {
        for _ in 0..n {
            self.pod(ds, node);
        }
    }

    /// `n` pods on `node` with labels L2 (owned, but not matching the selector).
    pub fn pods_l2(&mut self, ds: &DaemonSet, node: &str, n: usize) {
        for _ in 0..n {
            let p = self.pod(ds, node);
            p.labels = serde_json::from_value(l2()).unwrap();
        }
    }

    /// The observed state the planner sees.
    pub fn observed(&self) -> Observed {
        Observed {
            nodes: self.nodes.clone().into(),
            pods: self.pods.clone().into(),
            daemonsets: self.live.clone(),
            rollouts: self.rollouts.clone(),
            revisions: Vec::new(),
            namespaces: Vec::new(),
            version: None,
        }
    }

    /// The plan of one DaemonSet now.
    pub fn plan(&self, ds: &DaemonSet) -> DaemonSetPlan {
        self.plan_inner(ds, false)
    }

    fn plan_inner(&self, ds: &DaemonSet, rolling_only: bool) -> DaemonSetPlan {
        let desired = [Desired::new("test", ds.clone())];
        crate::plan::plan_with(
            &desired,
            &self.observed(),
            &self.policy,
            self.now,
            rolling_only,
        )
        .daemonsets
        .remove(0)
    }

    /// Executes one step of the plan; returns its phase and counts.
    pub fn step(&mut self, ds: &DaemonSet) -> (StepPhase, Counts) {
        self.step_inner(ds, false)
    }

    fn step_inner(&mut self, ds: &DaemonSet, rolling_only: bool) -> (StepPhase, Counts) {
        let p = self.plan_inner(ds, rolling_only);
        let counts = (p.step.create.len(), p.step.delete.len());
        let spec = DaemonSetSpec::compile(ds);
        // In place: the pod takes the new revision's label and restarts (not ready).
        for u in &p.step.in_place {
            if let Some(pod) = self
                .pods
                .iter_mut()
                .find(|x| *x.namespace == *u.namespace && x.name == u.name)
            {
                pod.labels_mut()
                    .insert(REVISION_HASH_LABEL.into(), spec.revision.clone());
                pod.ready = None;
            }
        }
        for d in &p.step.delete {
            self.pods
                .retain(|x| !(*x.namespace == *d.namespace && x.name == d.name));
        }
        let stable =
            crate::plan::stable_daemonset(&self.observed(), &spec.namespace, &spec.name).cloned();
        let creates = p.step.create.iter().map(|n| (n, ds));
        let stable_creates = stable
            .iter()
            .flat_map(|s| p.step.create_stable.iter().map(move |n| (n, s)));
        for (n, ds) in creates.chain(stable_creates).collect::<Vec<_>>() {
            let generation = spec.template_generation;
            let pod = self.pod(ds, n);
            pod.node_name = None;
            pod.phase = PodPhase::Pending;
            if let Some(g) = generation {
                pod.labels_mut()
                    .insert(TEMPLATE_GENERATION_LABEL.into(), g.to_string());
            }
        }
        (p.step.phase, counts)
    }

    /// One upstream sync as its unit tests observe it: the per-node decisions, then (their
    /// effects being visible at once) the rolling update.
    pub fn sync(&mut self, ds: &DaemonSet) -> Counts {
        let (phase, (c, d)) = self.step(ds);
        if phase != StepPhase::Manage {
            return (c, d);
        }
        let (_, (c2, d2)) = self.step_inner(ds, true);
        (c + c2, d + d2)
    }

    /// Marks every pod Ready since now and bound (upstream `markPodsReady`).
    pub fn mark_ready(&mut self) {
        let now = self.now;
        for p in &mut self.pods {
            p.ready = Some(ReadyCondition {
                status: true,
                last_transition: Some(now),
            });
            p.phase = PodPhase::Running;
            if p.node_name.is_none() {
                p.node_name = p.target_node.clone();
            }
        }
    }
}

/// Desired nodes counted unavailable the way upstream's rolling update counts them, and nodes
/// surging (an available old pod beside an unavailable new one), availability measured with
/// the plan's `minReadySeconds`. Pods of revision `old` are the old ones.
///
/// In surge mode a node counts as available while any of its pods is; without surge, a node
/// with both an old and a new pod counts as unavailable, as upstream counts it.
pub fn unavailable_and_surging(plan: &DaemonSetPlan, c: &Cluster) -> (usize, usize) {
    let mut unavailable = 0;
    let mut surging = 0;
    let surge = plan.budgets.max_surge > 0;
    let min_ready = plan.strategy.min_ready_seconds;
    for entry in plan.nodes.iter() {
        let pods: Vec<_> = c
            .pods
            .iter()
            .filter(|p| p.target_node.as_deref() == Some(&*entry.node) && !p.is_terminating())
            .collect();
        let desired = !matches!(
            entry.state,
            crate::plan::NodeState::Ineligible | crate::plan::NodeState::Blocked
        );
        let new: Vec<_> = pods
            .iter()
            .filter(|p| p.revision_hash() != Some("old"))
            .collect();
        let old: Vec<_> = pods
            .iter()
            .filter(|p| p.revision_hash() == Some("old"))
            .collect();
        let avail = |p: &&&Pod| p.is_available(min_ready, c.now);
        if desired {
            let ok = if surge {
                pods.iter().any(|p| p.is_available(min_ready, c.now))
            } else {
                match (new.as_slice(), old.as_slice()) {
                    ([], []) => false,
                    ([n], []) => avail(n),
                    ([], [o]) => avail(o),
                    _ => false,
                }
            };
            if !ok {
                unavailable += 1;
            }
        }
        if let ([n], [o]) = (new.as_slice(), old.as_slice())
            && avail(o)
            && !avail(n)
        {
            surging += 1;
        }
    }
    (unavailable, surging)
}

/// The invariants of one planned step against the cluster it was planned for; the first one
/// broken, described.
///
/// * no node gets two new pods, and only nodes of the plan get one;
/// * without surge, a node gets a new pod only when none of its pods survives the step;
/// * no pod is deleted twice, and only pods that exist are deleted;
/// * the status counters are consistent with each other.
pub fn check_step(plan: &DaemonSetPlan, c: &Cluster) -> Result<(), String> {
    use std::collections::BTreeSet;
    let mut created = BTreeSet::new();
    for n in &plan.step.create {
        if !created.insert(&**n) {
            return Err(format!("two pods planned for node {n}"));
        }
        if !plan.nodes.iter().any(|e| e.node == *n) {
            return Err(format!("pod planned for {n}, which is not in the plan"));
        }
    }
    let mut deleted = BTreeSet::new();
    for d in &plan.step.delete {
        if !deleted.insert((d.namespace.as_str(), d.name.as_str())) {
            return Err(format!("pod {}/{} deleted twice", d.namespace, d.name));
        }
        if !c
            .pods
            .iter()
            .any(|p| *p.namespace == *d.namespace && p.name == d.name)
        {
            return Err(format!(
                "deleting {}/{}, which does not exist",
                d.namespace, d.name
            ));
        }
    }
    if plan.budgets.max_surge == 0 {
        for n in &plan.step.create {
            let survivor = c.pods.iter().find(|p| {
                p.target_node.as_deref() == Some(&**n)
                    && !p.is_terminating()
                    && !deleted.contains(&(&*p.namespace, p.name.as_str()))
                    && plan_owns(plan, p)
            });
            if let Some(p) = survivor {
                return Err(format!(
                    "pod planned for {n} beside {}, without surge",
                    p.name
                ));
            }
        }
    }
    let s = plan.status;
    let consistent = 0 <= s.number_available
        && s.number_available <= s.number_ready
        && s.number_ready <= s.current_number_scheduled
        && s.updated_number_scheduled <= s.current_number_scheduled
        && s.current_number_scheduled <= s.desired_number_scheduled
        && s.number_unavailable == s.desired_number_scheduled - s.number_available
        && s.number_misscheduled >= 0
        && s.desired_number_scheduled as usize <= plan.nodes.len();
    if !consistent {
        return Err(format!("inconsistent status counters {s:?}"));
    }
    Ok(())
}

/// Whether `pod` belongs to the DaemonSet of `plan` (controller reference by name, in its
/// namespace).
fn plan_owns(plan: &DaemonSetPlan, pod: &Pod) -> bool {
    *pod.namespace == *plan.namespace
        && pod
            .controller
            .as_ref()
            .is_some_and(|o| o.kind == crate::plan::RECORD_KIND && o.name == plan.name)
}

//! Fluent fixtures for planner tests: `ds("foo").max_surge(1)`, `node("n1").label(..)`, and a
//! tiny in-memory cluster that applies steps the way upstream's unit tests observe them.

use crate::model::{Node, OwnerRef, Pod, PodPhase, ReadyCondition, Taint, TaintEffect, Timestamp};
use crate::model::{REVISION_HASH_LABEL, TEMPLATE_GENERATION_LABEL};
use crate::plan::{DaemonSetPlan, DaemonSetSpec, Desired, Observed, Policy, StepPhase};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Value, json};

/// Labels L1 of the upstream tests: selector and template labels.
pub(crate) fn l1() -> Value {
    json!({"name": "simple-daemon", "type": "production"})
}

/// Labels L2: do not match the selector.
pub(crate) fn l2() -> Value {
    json!({"name": "simple-daemon", "type": "test"})
}

/// A DaemonSet builder over its JSON form.
#[derive(Clone)]
pub(crate) struct DsBuilder(Value);

/// The upstream test DaemonSet `foo`: selector and template labels L1, one container,
/// RollingUpdate with maxUnavailable 1.
pub(crate) fn ds(name: &str) -> DsBuilder {
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
    pub(crate) fn on_delete(mut self) -> Self {
        self.spec()["updateStrategy"] = json!({"type": "OnDelete"});
        self
    }
    pub(crate) fn max_unavailable(mut self, v: Value) -> Self {
        self.spec()["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = v;
        self
    }
    pub(crate) fn max_surge(mut self, v: Value) -> Self {
        self.spec()["updateStrategy"]["rollingUpdate"]["maxSurge"] = v;
        self
    }
    pub(crate) fn surge(self, v: Value) -> Self {
        self.max_unavailable(json!(0)).max_surge(v)
    }
    pub(crate) fn image(mut self, image: &str) -> Self {
        self.pod_spec()["containers"][0]["image"] = json!(image);
        self
    }
    pub(crate) fn node_selector(mut self, sel: Value) -> Self {
        self.pod_spec()["nodeSelector"] = sel;
        self
    }
    pub(crate) fn node_name(mut self, n: &str) -> Self {
        self.pod_spec()["nodeName"] = json!(n);
        self
    }
    pub(crate) fn affinity(mut self, terms: Value) -> Self {
        self.pod_spec()["affinity"] = json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
        self
    }
    pub(crate) fn tolerations(mut self, t: Value) -> Self {
        self.pod_spec()["tolerations"] = t;
        self
    }
    pub(crate) fn selector(mut self, s: Value) -> Self {
        self.spec()["selector"] = s;
        self
    }
    pub(crate) fn min_ready(mut self, s: i32) -> Self {
        self.spec()["minReadySeconds"] = json!(s);
        self
    }
    pub(crate) fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["annotations"][k] = json!(v);
        self
    }
    pub(crate) fn deleting(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        self
    }
    pub(crate) fn build(&self) -> DaemonSet {
        serde_json::from_value(self.0.clone()).expect("test DaemonSet")
    }
}

/// A node builder.
pub(crate) struct NodeBuilder(Node);

/// A ready, untainted, unlabelled node.
pub(crate) fn node(name: &str) -> NodeBuilder {
    NodeBuilder(Node::named(name))
}

impl NodeBuilder {
    pub(crate) fn label(mut self, k: &str, v: &str) -> Self {
        self.0.labels.insert(k.into(), v.into());
        self
    }
    pub(crate) fn blue(self) -> Self {
        self.label("color", "blue").label("speed", "fast")
    }
    pub(crate) fn taint(mut self, key: &str, value: &str, effect: TaintEffect) -> Self {
        self.0.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect,
        });
        self
    }
    pub(crate) fn build(self) -> Node {
        self.0
    }
}

/// `count` nodes named `node-0` .. `node-{count-1}`.
pub(crate) fn nodes(count: usize) -> Vec<Node> {
    (0..count)
        .map(|i| Node::named(format!("node-{i}")))
        .collect()
}

/// A fixed instant for tests.
pub(crate) fn t0() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

/// An in-memory cluster: pod creations and deletions take effect instantly, as upstream's
/// fake pod control makes them in its unit tests.
pub(crate) struct Cluster {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub live: Vec<DaemonSet>,
    pub now: Timestamp,
    pub policy: Policy,
    counter: usize,
}

/// Totals of a sync: (creates, deletes).
pub(crate) type Counts = (usize, usize);

impl Cluster {
    pub(crate) fn new(nodes: Vec<Node>) -> Self {
        Cluster {
            nodes,
            pods: Vec::new(),
            live: Vec::new(),
            now: t0(),
            policy: Policy::default(),
            counter: 0,
        }
    }

    /// Adds a pod of `ds` bound to `node`: labels L1 plus the current revision hash,
    /// controller ownerReference to the DaemonSet, not ready. Returns it for adjustment.
    pub(crate) fn pod(&mut self, ds: &DaemonSet, node: &str) -> &mut Pod {
        let spec = DaemonSetSpec::compile(ds);
        let mut labels: crate::model::Labels = serde_json::from_value(l1()).unwrap();
        labels.insert(REVISION_HASH_LABEL.into(), spec.revision.clone());
        self.counter += 1;
        self.pods.push(Pod {
            namespace: spec.namespace.clone(),
            name: format!("{}-{:05}", spec.name, self.counter),
            labels,
            controller: Some(OwnerRef {
                api_version: "apps/v1".into(),
                kind: "DaemonSet".into(),
                name: spec.name.clone(),
                uid: "uid-1".into(),
            }),
            node_name: Some(node.into()),
            target_node: Some(node.into()),
            phase: PodPhase::Running,
            creation_timestamp: Some(self.now),
            ..Pod::default()
        });
        self.pods.last_mut().unwrap()
    }

    /// `n` pods of `ds` on `node`.
    pub(crate) fn pods(&mut self, ds: &DaemonSet, node: &str, n: usize) {
        for _ in 0..n {
            self.pod(ds, node);
        }
    }

    /// `n` pods on `node` with labels L2 (owned, but not matching the selector).
    pub(crate) fn pods_l2(&mut self, ds: &DaemonSet, node: &str, n: usize) {
        for _ in 0..n {
            let p = self.pod(ds, node);
            p.labels = serde_json::from_value(l2()).unwrap();
        }
    }

    pub(crate) fn observed(&self) -> Observed {
        Observed {
            nodes: self.nodes.clone(),
            pods: self.pods.clone(),
            daemonsets: self.live.clone(),
        }
    }

    /// The plan of one DaemonSet now.
    pub(crate) fn plan(&self, ds: &DaemonSet) -> DaemonSetPlan {
        self.plan_inner(ds, false)
    }

    fn plan_inner(&self, ds: &DaemonSet, rolling_only: bool) -> DaemonSetPlan {
        let desired = [Desired {
            source: "test".into(),
            daemonset: ds.clone(),
        }];
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
    pub(crate) fn step(&mut self, ds: &DaemonSet) -> (StepPhase, Counts) {
        self.step_inner(ds, false)
    }

    fn step_inner(&mut self, ds: &DaemonSet, rolling_only: bool) -> (StepPhase, Counts) {
        let p = self.plan_inner(ds, rolling_only);
        let counts = (p.step.create.len(), p.step.delete.len());
        let spec = DaemonSetSpec::compile(ds);
        for d in &p.step.delete {
            self.pods
                .retain(|x| !(x.namespace == d.namespace && x.name == d.name));
        }
        for n in &p.step.create {
            let generation = spec.template_generation;
            let pod = self.pod(ds, n);
            pod.node_name = None;
            pod.phase = PodPhase::Pending;
            if let Some(g) = generation {
                pod.labels
                    .insert(TEMPLATE_GENERATION_LABEL.into(), g.to_string());
            }
        }
        (p.step.phase, counts)
    }

    /// One upstream sync as its unit tests observe it: the per-node decisions, then (their
    /// effects being visible at once) the rolling update.
    pub(crate) fn sync(&mut self, ds: &DaemonSet) -> Counts {
        let (phase, (c, d)) = self.step(ds);
        if phase != StepPhase::Manage {
            return (c, d);
        }
        let (_, (c2, d2)) = self.step_inner(ds, true);
        (c + c2, d + d2)
    }

    /// Marks every pod Ready since now and bound (upstream `markPodsReady`).
    pub(crate) fn mark_ready(&mut self) {
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

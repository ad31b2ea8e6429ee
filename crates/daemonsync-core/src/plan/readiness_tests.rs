//! Readiness taints in the planner: a node that joins with a DaemonSet's readiness taint keeps
//! it until the DaemonSet's pod on it is available; DaemonSets naming the same key all gate it,
//! those of other sources through their records.

use super::readiness::{NodeTaint, TaintedNode};
use super::{DaemonSetPlan, Desired, NodeState, Plan, RolloutRecord};
use crate::manifest::policy::{READINESS_TAINT, tolerate_readiness_taint};
use crate::model::{Node, TaintEffect};
use crate::testkit::plan::*;
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::json;

const KEY: &str = "example.com/agent-not-ready";

/// A DaemonSet naming the readiness taint, tolerating it as loading makes it.
fn gated(name: &str, image: &str) -> DaemonSet {
    let mut ds = ds(name)
        .image(image)
        .annotation(READINESS_TAINT, KEY)
        .build();
    tolerate_readiness_taint(&mut ds);
    ds
}

/// `n-1` (untainted), and `new-1` that joined with the readiness taint and another one.
fn fleet() -> Vec<Node> {
    vec![
        node("n-1").build(),
        node("new-1")
            .taint("dedicated", "gpu", TaintEffect::NoExecute)
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]
}

fn plan_all(c: &Cluster, daemonsets: &[&DaemonSet]) -> Plan {
    let desired: Vec<Desired> = daemonsets
        .iter()
        .map(|d| Desired::new("test", (*d).clone()))
        .collect();
    crate::plan::plan(&desired, &c.observed(), &c.policy, c.now)
}

fn of<'p>(plan: &'p Plan, name: &str) -> &'p DaemonSetPlan {
    plan.daemonsets.iter().find(|d| d.name == name).unwrap()
}

fn waiting(node: &str, on: &[&str]) -> TaintedNode {
    TaintedNode {
        node: node.into(),
        waiting_for: on.iter().map(|s| s.to_string()).collect(),
    }
}

fn removal(node: &str) -> NodeTaint {
    NodeTaint {
        node: node.into(),
        key: KEY.into(),
    }
}

/// Tolerations with the readiness one left out: what the DaemonSet would be without it.
fn untolerated(ds: &DaemonSet) -> DaemonSet {
    let mut ds = ds.clone();
    ds.spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .tolerations = None;
    ds
}

#[test]
fn a_joining_node_keeps_the_readiness_taint_until_the_daemon_pod_is_available() {
    // It also tolerates the NoExecute taint `new-1` carries besides.
    let mut agent = gated("agent", "agent:1");
    let pod_spec = agent.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    pod_spec
        .tolerations
        .get_or_insert_with(Vec::new)
        .push(serde_json::from_value(json!({"key": "dedicated", "operator": "Exists"})).unwrap());
    let mut c = Cluster::new(fleet());
    c.pod(&agent, "n-1");
    c.mark_ready();

    // The new node has no pod yet: one is created there (the DaemonSet tolerates its taint),
    // and the taint stays.
    let plan = c.plan(&agent);
    assert_eq!(plan.step.create, vec!["new-1".into()]);
    let readiness = plan.readiness.clone().expect("a readiness taint");
    assert_eq!(readiness.key, KEY);
    assert_eq!(readiness.nodes, [waiting("new-1", &["default/agent"])]);
    assert!(plan.step.remove_taints.is_empty());

    // Its pod exists but is not ready: the taint stays.
    c.pod(&agent, "new-1");
    let plan = c.plan(&agent);
    assert_eq!(
        plan.readiness.unwrap().nodes,
        [waiting("new-1", &["default/agent"])]
    );
    assert!(plan.step.remove_taints.is_empty());
    assert!(plan.step.is_empty());

    // Available: the taint goes, that one alone.
    c.mark_ready();
    let plan = c.plan(&agent);
    assert_eq!(plan.readiness.unwrap().nodes, [waiting("new-1", &[])]);
    assert_eq!(plan.step.remove_taints, [removal("new-1")]);
    assert!(!plan.step.is_empty(), "removing a taint is a change");

    // Once gone, nothing is left to do.
    c.nodes[1].taints.retain(|t| t.key != KEY);
    let plan = c.plan(&agent);
    assert_eq!(plan.readiness.unwrap().nodes, []);
    assert!(plan.step.is_empty());
}

#[test]
fn without_its_toleration_the_daemonset_could_not_run_on_the_tainted_node() {
    let agent = gated("agent", "agent:1");
    let c = Cluster::new(vec![
        node("new-1")
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]);
    let plan = c.plan(&agent);
    assert_eq!(plan.nodes[0].state, NodeState::Missing);
    let plan = c.plan(&untolerated(&agent));
    assert_eq!(plan.nodes[0].state, NodeState::Blocked);
}

#[test]
fn two_daemonsets_naming_the_key_both_gate_it() {
    let agent = gated("agent", "agent:1");
    let cni = gated("cni", "cni:1");
    let mut c = Cluster::new(vec![
        node("n-1").build(),
        node("new-1")
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]);
    for d in [&agent, &cni] {
        c.pod(d, "n-1");
        c.pod(d, "new-1");
    }
    c.mark_ready();
    // The CNI pod on the new node is not ready yet.
    let cni_pod = c
        .pods
        .iter_mut()
        .find(|p| p.name.starts_with("cni") && p.node_name.as_deref() == Some("new-1"))
        .unwrap();
    cni_pod.ready = None;
    let plan = plan_all(&c, &[&agent, &cni]);
    for name in ["agent", "cni"] {
        let ds = of(&plan, name);
        assert_eq!(
            ds.readiness.as_ref().unwrap().nodes,
            [waiting("new-1", &["default/cni"])],
            "{name}"
        );
        assert!(ds.step.remove_taints.is_empty(), "{name}");
    }
    c.mark_ready();
    let plan = plan_all(&c, &[&agent, &cni]);
    for name in ["agent", "cni"] {
        assert_eq!(
            of(&plan, name).step.remove_taints,
            [removal("new-1")],
            "{name}"
        );
    }
}

#[test]
fn a_daemonset_that_does_not_run_on_the_node_does_not_gate_it() {
    let agent = gated("agent", "agent:1");
    let gpu = {
        let mut d = ds("gpu")
            .image("gpu:1")
            .annotation(READINESS_TAINT, KEY)
            .node_selector(json!({"gpu": "true"}))
            .build();
        tolerate_readiness_taint(&mut d);
        d
    };
    let mut c = Cluster::new(vec![
        node("new-1")
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]);
    c.pod(&agent, "new-1");
    c.mark_ready();
    let plan = plan_all(&c, &[&agent, &gpu]);
    assert_eq!(of(&plan, "agent").step.remove_taints, [removal("new-1")]);
    assert_eq!(of(&plan, "gpu").readiness.as_ref().unwrap().nodes, []);
}

#[test]
fn a_pod_of_any_revision_serves_the_node() {
    // A node whose pod runs the previous revision (the rollout has not reached it) serves.
    let old = gated("agent", "agent:1");
    let new = gated("agent", "agent:2");
    let mut c = Cluster::new(vec![
        node("new-1")
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]);
    c.pod(&old, "new-1");
    c.mark_ready();
    let plan = c.plan(&new);
    assert_eq!(plan.step.remove_taints, [removal("new-1")]);
}

#[test]
fn a_daemonset_of_another_source_gates_the_key_through_its_record() {
    let agent = gated("agent", "agent:1");
    let cni = gated("cni", "cni:1");
    let mut c = Cluster::new(vec![
        node("n-1").build(),
        node("new-1")
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]);
    c.pod(&agent, "n-1");
    c.pod(&agent, "new-1");
    c.pod(&cni, "n-1");
    c.mark_ready();
    c.rollouts.push(RolloutRecord {
        namespace: "default".into(),
        name: "cni".into(),
        gating: Some(cni.clone().into()),
        ..RolloutRecord::default()
    });
    // `cni` is applied from another source: its record holds it, and it has no pod on the
    // new node yet.
    let plan = c.plan(&agent);
    assert_eq!(
        plan.readiness.as_ref().unwrap().nodes,
        [waiting("new-1", &["default/cni"])]
    );
    assert!(plan.step.remove_taints.is_empty());
    c.pod(&cni, "new-1");
    c.mark_ready();
    assert_eq!(c.plan(&agent).step.remove_taints, [removal("new-1")]);

    // A record whose DaemonSet runs no pod anywhere (removed from its source, pruned) does not
    // hold the node back.
    c.pods.retain(|p| !p.name.starts_with("cni"));
    let plan = c.plan(&agent);
    assert_eq!(plan.step.remove_taints, [removal("new-1")]);
}

#[test]
fn a_frozen_daemonset_says_the_taint_may_go_but_removes_nothing() {
    let agent = gated("agent", "agent:1");
    let mut c = Cluster::new(vec![
        node("new-1")
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]);
    c.pod(&agent, "new-1");
    c.mark_ready();
    let deleting = {
        let mut d = agent.clone();
        d.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-01-01T00:00:00Z".parse().unwrap(),
        ));
        d
    };
    let plan = c.plan(&deleting);
    assert_eq!(plan.readiness.unwrap().nodes, [waiting("new-1", &[])]);
    assert!(plan.step.remove_taints.is_empty());
}

#[test]
fn without_a_readiness_taint_the_plan_says_nothing_of_taints() {
    let plain = ds("agent").image("agent:1").build();
    let mut c = Cluster::new(vec![
        node("new-1")
            .taint(KEY, "", TaintEffect::NoSchedule)
            .build(),
    ]);
    c.pod(&plain, "new-1");
    c.mark_ready();
    let plan = c.plan(&plain);
    assert!(plan.readiness.is_none());
    let json = serde_json::to_value(&plan).unwrap();
    assert!(json.get("readiness").is_none());
    assert!(json["step"].get("removeTaints").is_none());
}

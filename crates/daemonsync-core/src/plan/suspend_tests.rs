//! Pause and freeze in the planner: a paused DaemonSet replaces no pod but serves the nodes
//! that have none with the stable revision; a frozen one plans nothing; `apply --force`
//! writes through a pause, never through a freeze.

use super::progressive::Paused;
use super::suspend::Suspension;
use super::{DaemonSetPlan, DaemonSetSpec, Phase, RolloutRecord};
use crate::model::{Node, PodPhase};
use crate::testkit::plan::*;
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::json;

fn names(v: &[super::Name]) -> Vec<String> {
    v.iter().map(|n| n.to_string()).collect()
}

fn revision(ds: &DaemonSet) -> String {
    DaemonSetSpec::compile(ds).revision
}

/// `agent:1` ready on `n-1`..`n-4`, its record naming it stable, `agent:2` desired (with
/// `annotations`), and the record's hold set by `hold`.
fn mid_rollout(annotations: &[(&str, &str)]) -> (Cluster, DaemonSet, DaemonSet) {
    let old = ds("agent").image("agent:1").build();
    let mut new = ds("agent").image("agent:2");
    for (k, v) in annotations {
        new = new.annotation(k, v);
    }
    let new = new.build();
    let mut c = Cluster::new((1..=4).map(|i| node(&format!("n-{i}")).build()).collect());
    for i in 1..=4 {
        c.pod(&old, &format!("n-{i}"));
    }
    c.mark_ready();
    c.rollouts.push(RolloutRecord {
        namespace: "default".into(),
        name: "agent".into(),
        stable: Some(old.clone().into()),
        ..RolloutRecord::default()
    });
    (c, old, new)
}

fn join(c: &mut Cluster, name: &str) {
    c.nodes.push(Node::named(name));
}

fn step_of(plan: &DaemonSetPlan) -> (Vec<String>, Vec<String>, usize) {
    (
        names(&plan.step.create),
        names(&plan.step.create_stable),
        plan.step.delete.len(),
    )
}

#[test]
fn pausing_mid_rollout_serves_a_joining_node_with_the_stable_revision_and_replaces_nothing() {
    let (mut c, old, new) = mid_rollout(&[]);
    // The rolling update has reached n-1.
    c.pods.retain(|p| p.node_name.as_deref() != Some("n-1"));
    c.pod(&new, "n-1");
    c.mark_ready();
    let before = c.plan(&new);
    assert_eq!(before.step.delete.len(), 1, "rolling on before the pause");

    c.rollouts[0].paused = true;
    join(&mut c, "new-1");
    let plan = c.plan(&new);
    assert_eq!(
        step_of(&plan),
        (vec![], vec!["new-1".to_string()], 0),
        "{:?}",
        plan.step
    );
    assert_eq!(
        plan.suspended,
        Some(Suspension::Paused {
            revision: Some(revision(&old))
        })
    );
    assert!(plan.in_place.is_none() && plan.step.in_place.is_empty());
}

#[test]
fn a_pod_deleted_while_paused_comes_back_at_the_stable_revision() {
    let (mut c, _, new) = mid_rollout(&[]);
    c.rollouts[0].paused = true;
    c.pods.retain(|p| p.node_name.as_deref() != Some("n-3"));
    let plan = c.plan(&new);
    assert_eq!(step_of(&plan), (vec![], vec!["n-3".to_string()], 0));
    // Applied, the node runs the stable revision again, and nothing more is to do.
    c.step(&new);
    c.mark_ready();
    let plan = c.plan(&new);
    assert!(plan.step.is_empty(), "{:?}", plan.step);
}

#[test]
fn a_failed_pod_is_left_alone_while_paused() {
    let (mut c, _, new) = mid_rollout(&[]);
    c.rollouts[0].paused = true;
    c.pods[1].phase = PodPhase::Failed;
    let plan = c.plan(&new);
    assert!(plan.step.is_empty(), "{:?}", plan.step);
}

#[test]
fn without_a_rollout_under_way_a_paused_daemonset_serves_new_nodes_with_the_current_revision() {
    let (mut c, old, _) = mid_rollout(&[]);
    c.rollouts[0].paused = true;
    join(&mut c, "new-1");
    let plan = c.plan(&old);
    assert_eq!(step_of(&plan), (vec!["new-1".to_string()], vec![], 0));
    assert_eq!(
        plan.suspended,
        Some(Suspension::Paused {
            revision: Some(revision(&old))
        })
    );
}

#[test]
fn with_no_stable_revision_known_a_paused_rollout_creates_nothing() {
    let (mut c, _, new) = mid_rollout(&[]);
    c.rollouts[0].paused = true;
    c.rollouts[0].stable = None;
    join(&mut c, "new-1");
    let plan = c.plan(&new);
    assert!(plan.step.is_empty(), "{:?}", plan.step);
    assert_eq!(plan.suspended, Some(Suspension::Paused { revision: None }));
}

#[test]
fn a_paused_canary_says_so_in_its_rollout() {
    let (mut c, _, new) = mid_rollout(&[("daemonsync.io/canary", "1")]);
    c.rollouts[0].paused = true;
    join(&mut c, "new-1");
    let plan = c.plan(&new);
    let r = plan.rollout.as_ref().unwrap();
    assert_eq!(
        (&r.phase, &r.pause),
        (&Phase::Paused, &Some(Paused::Record))
    );
    assert_eq!(step_of(&plan), (vec![], vec!["new-1".to_string()], 0));
}

#[test]
fn a_frozen_daemonset_plans_no_write_at_all() {
    let (mut c, _, new) = mid_rollout(&[("daemonsync.io/canary", "1")]);
    c.rollouts[0].frozen = true;
    c.rollouts[0].paused = true;
    join(&mut c, "new-1");
    c.pods[0].phase = PodPhase::Failed;
    let plan = c.plan(&new);
    assert!(plan.step.is_empty(), "{:?}", plan.step);
    assert_eq!(plan.suspended, Some(Suspension::Frozen));
    let r = plan.rollout.as_ref().unwrap();
    assert_eq!(
        (&r.phase, &r.pause),
        (&Phase::Paused, &Some(Paused::Frozen))
    );
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    assert_eq!(
        serde_json::to_value(&plan.suspended).unwrap(),
        json!({"state": "frozen"})
    );
}

#[test]
fn apply_force_writes_through_a_pause_but_not_through_a_freeze() {
    let (mut c, _, new) = mid_rollout(&[]);
    c.rollouts[0].paused = true;
    c.policy.ignore_pause = true;
    let plan = c.plan(&new);
    assert_eq!(plan.suspended, None);
    assert_eq!(plan.step.delete.len(), 1, "the rolling update goes on");
    c.rollouts[0].frozen = true;
    let plan = c.plan(&new);
    assert!(plan.step.is_empty());
    assert_eq!(plan.suspended, Some(Suspension::Frozen));
}

#[test]
fn resumed_or_unfrozen_the_rollout_goes_on() {
    let (mut c, _, new) = mid_rollout(&[]);
    c.rollouts[0].paused = true;
    assert!(c.plan(&new).step.is_empty());
    c.rollouts[0].paused = false;
    c.rollouts[0].frozen = true;
    assert!(c.plan(&new).step.is_empty());
    c.rollouts[0].frozen = false;
    let plan = c.plan(&new);
    assert_eq!(plan.suspended, None);
    assert_eq!(plan.step.delete.len(), 1);
}

//! In-place updates in the planner: which nodes qualify, budgets, surge, mixed fleets.

use super::{DaemonSetSpec, NodeState, NodeUpdate, RolloutRecord};
use crate::model::REVISION_HASH_LABEL;
use crate::testkit::plan::*;
use k8s_openapi::api::apps::v1::DaemonSet;
use proptest::prelude::*;
use serde_json::json;

const IN_PLACE: (&str, &str) = ("daemonsync.io/update-strategy", "InPlaceIfPossible");

/// `n` nodes running `old` (ready), its record naming it stable.
fn running(n: usize, old: &DaemonSet) -> Cluster {
    let mut c = Cluster::new(nodes(n));
    for i in 0..n {
        c.pod(old, &format!("node-{i}"));
    }
    c.mark_ready();
    let spec = DaemonSetSpec::compile(old);
    c.rollouts.push(RolloutRecord {
        namespace: spec.namespace,
        name: spec.name,
        stable: Some(old.clone().into()),
        ..RolloutRecord::default()
    });
    c
}

fn old() -> DaemonSet {
    ds("foo").image("foo:1").max_unavailable(json!(2)).build()
}

#[test]
fn an_image_bump_is_patched_in_place_within_max_unavailable() {
    let mut c = running(5, &old());
    let new = ds("foo")
        .image("foo:2")
        .max_unavailable(json!(2))
        .annotation(IN_PLACE.0, IN_PLACE.1)
        .build();
    let plan = c.plan(&new);
    assert!(
        plan.step.delete.is_empty() && plan.step.create.is_empty(),
        "{:?}",
        plan.step
    );
    let nodes: Vec<&str> = plan.step.in_place.iter().map(|u| &*u.node).collect();
    assert_eq!(nodes, ["node-0", "node-1"]);
    assert_eq!(plan.step.in_place[0].images[0].to, "foo:2");
    assert!(
        plan.nodes
            .iter()
            .all(|e| e.update == Some(NodeUpdate::InPlace))
    );
    // Every pod keeps its name through the whole rollout.
    let names: Vec<String> = c.pods.iter().map(|p| p.name.clone()).collect();
    for _ in 0..10 {
        c.mark_ready();
        if c.plan(&new).step.is_empty() {
            break;
        }
        c.step(&new);
        let (unavailable, _) = unavailable_and_surging(&c.plan(&new), &c);
        assert!(unavailable <= 2);
    }
    assert_eq!(
        c.pods.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
        names
    );
    let rev = DaemonSetSpec::compile(&new).revision;
    assert!(
        c.pods
            .iter()
            .all(|p| p.labels.get(REVISION_HASH_LABEL) == Some(&rev))
    );
}

#[test]
fn any_other_change_recreates_and_names_the_field() {
    let c = running(3, &old());
    let new = ds("foo")
        .image("foo:2")
        .max_unavailable(json!(2))
        .annotation(IN_PLACE.0, IN_PLACE.1)
        .node_selector(json!({"kubernetes.io/os": "linux"}))
        .build();
    let mut c = c;
    for n in &mut c.nodes {
        n.labels.insert("kubernetes.io/os".into(), "linux".into());
    }
    let plan = c.plan(&new);
    assert!(plan.step.in_place.is_empty());
    assert_eq!(plan.step.delete.len(), 2);
    match &plan.nodes[0].update {
        Some(NodeUpdate::Recreate { because }) => {
            assert_eq!(because, "spec.template.spec.nodeSelector changes")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn pods_of_an_older_revision_than_the_stable_one_are_recreated() {
    let older = ds("foo").image("foo:0").max_unavailable(json!(3)).build();
    let mut c = running(3, &old());
    // node-2 still runs a pod two revisions back.
    c.pods
        .retain(|p| p.target_node.as_deref() != Some("node-2"));
    c.pod(&older, "node-2");
    c.mark_ready();
    let new = ds("foo")
        .image("foo:2")
        .max_unavailable(json!(3))
        .annotation(IN_PLACE.0, IN_PLACE.1)
        .build();
    let plan = c.plan(&new);
    let in_place: Vec<&str> = plan.step.in_place.iter().map(|u| &*u.node).collect();
    assert_eq!(in_place, ["node-0", "node-1"]);
    let deleted: Vec<&str> = plan.step.delete.iter().map(|d| &*d.node).collect();
    assert_eq!(deleted, ["node-2"]);
    let entry = plan
        .nodes
        .iter()
        .find(|e| &*e.node == "node-2")
        .expect("node");
    assert_eq!(entry.state, NodeState::OutOfDate);
    match &entry.update {
        Some(NodeUpdate::Recreate { because }) => {
            assert!(because.contains("not the stable revision"), "{because}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn surge_does_not_apply_to_in_place_nodes() {
    let old = ds("foo")
        .image("foo:1")
        .surge(json!(2))
        .max_unavailable(json!(1))
        .build();
    let c = running(4, &old);
    let new = ds("foo")
        .image("foo:2")
        .surge(json!(2))
        .max_unavailable(json!(1))
        .annotation(IN_PLACE.0, IN_PLACE.1)
        .build();
    let plan = c.plan(&new);
    assert!(plan.step.create.is_empty(), "no surge pod: {:?}", plan.step);
    assert_eq!(
        plan.step.in_place.len(),
        1,
        "maxUnavailable paces in-place nodes"
    );
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("maxSurge does not apply")),
        "{:?}",
        plan.warnings
    );
    // With maxUnavailable 0 nothing may restart in place: surge recreates instead.
    let zero = ds("foo")
        .image("foo:2")
        .surge(json!(2))
        .max_unavailable(json!(0))
        .annotation(IN_PLACE.0, IN_PLACE.1)
        .build();
    let plan = c.plan(&zero);
    assert!(plan.step.in_place.is_empty());
    assert_eq!(plan.step.create.len(), 2);
}

#[test]
fn without_a_stable_revision_pods_are_recreated() {
    let mut c = running(2, &old());
    c.rollouts.clear();
    let new = ds("foo")
        .image("foo:2")
        .annotation(IN_PLACE.0, IN_PLACE.1)
        .build();
    let plan = c.plan(&new);
    assert!(plan.step.in_place.is_empty());
    let why = plan
        .in_place
        .expect("in-place plan")
        .recreate_because
        .expect("why");
    assert!(why.contains("no stable revision"), "{why}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the budgets and however many pods are not ready, a rollout with in-place
    /// steps keeps unavailability within maxUnavailable (or where it already was) and ends
    /// with every pod on the new revision, each keeping its name.
    #[test]
    fn availability_budgets_hold_with_in_place_steps(
        n in 1..12usize,
        max_unavailable in 1..4i32,
        surge in 0..3i32,
        not_ready in prop::collection::vec(any::<bool>(), 12),
    ) {
        let build = |image: &str, annotate: bool| {
            let mut b = ds("foo").image(image).max_unavailable(json!(max_unavailable));
            if surge > 0 {
                b = b.surge(json!(surge)).max_unavailable(json!(max_unavailable));
            }
            if annotate {
                b = b.annotation(IN_PLACE.0, IN_PLACE.1);
            }
            b.build()
        };
        let mut c = running(n, &build("foo:1", false));
        for (p, down) in c.pods.iter_mut().zip(&not_ready) {
            if *down {
                p.ready = None;
            }
        }
        let new = build("foo:2", true);
        let names: std::collections::BTreeSet<String> = c.pods.iter().map(|p| p.name.clone()).collect();
        for _ in 0..(4 * n + 8) {
            let plan = c.plan(&new);
            let (before, _) = unavailable_and_surging(&plan, &c);
            if plan.step.is_empty() {
                break;
            }
            c.step(&new);
            let (after, _) = unavailable_and_surging(&c.plan(&new), &c);
            prop_assert!(after <= before.max(plan.budgets.max_unavailable as usize),
                "{before} -> {after} unavailable, maxUnavailable {}", plan.budgets.max_unavailable);
            c.mark_ready();
        }
        let rev = DaemonSetSpec::compile(&new).revision;
        prop_assert!(c.pods.iter().all(|p| p.labels.get(REVISION_HASH_LABEL) == Some(&rev)));
        let now: std::collections::BTreeSet<String> = c.pods.iter().map(|p| p.name.clone()).collect();
        // Ready old pods are patched in place and keep their names.
        let kept = names.intersection(&now).count();
        prop_assert!(kept >= not_ready.iter().take(n).filter(|d| !**d).count().min(n));
    }
}

#[test]
fn a_closed_in_place_gate_opens_once_every_container_is_ready() {
    let d = old();
    let mut c = running(5, &d);
    let detail = |has_gate: bool, gate: Option<bool>, containers_ready: bool| {
        Some(Box::new(crate::model::PodDetail {
            has_gate,
            gate,
            containers_ready,
            ..crate::model::PodDetail::default()
        }))
    };
    for (i, d) in [
        // Named by a readiness gate, not set yet.
        detail(true, None, true),
        // Set False on a pod updated in place without a gate.
        detail(false, Some(false), true),
        // Closed, but a container is not ready yet.
        detail(true, Some(false), false),
        // Open already.
        detail(true, Some(true), true),
        // Neither gated nor updated in place.
        detail(false, None, true),
    ]
    .into_iter()
    .enumerate()
    {
        let node = format!("node-{i}");
        let pod = c
            .pods
            .iter_mut()
            .find(|p| p.target_node.as_deref() == Some(node.as_str()))
            .expect("a pod on every node");
        pod.detail = d;
    }
    let opened: Vec<String> = c
        .plan(&d)
        .step
        .open_gates
        .iter()
        .map(|g| g.node.to_string())
        .collect();
    assert_eq!(opened, ["node-0", "node-1"]);
}

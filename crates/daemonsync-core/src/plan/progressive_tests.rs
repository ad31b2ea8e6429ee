//! Progressive delivery in the planner: each policy, combinations, nodes joining and leaving
//! mid-rollout, partition changes, pauses, and the invariants as property tests.

use super::progressive::{Gets, Hold, Paused, Progress};
use super::{DaemonSetPlan, DaemonSetSpec, Phase, RolloutRecord};
use crate::model::{Node, REVISION_HASH_LABEL};
use crate::testkit::plan::*;
use k8s_openapi::api::apps::v1::DaemonSet;
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeSet;

const ZONE: &str = "topology.kubernetes.io/zone";

/// `per_zone` nodes in each zone, named `<zone>-<i>`.
fn zoned(zones: &[&str], per_zone: usize) -> Vec<Node> {
    zones
        .iter()
        .flat_map(|z| (1..=per_zone).map(move |i| node(&format!("{z}-{i}")).label(ZONE, z).build()))
        .collect()
}

/// The old DaemonSet (image v1) running and ready everywhere, its record naming it stable,
/// and the new one (image v2) with `annotations` and `maxUnavailable`.
fn fleet(
    nodes: Vec<Node>,
    max_unavailable: i32,
    annotations: &[(&str, &str)],
) -> (Cluster, DaemonSet) {
    let old = ds("foo")
        .image("foo:1")
        .max_unavailable(json!(max_unavailable))
        .build();
    let mut new = ds("foo")
        .image("foo:2")
        .max_unavailable(json!(max_unavailable));
    for (k, v) in annotations {
        new = new.annotation(k, v);
    }
    let new = new.build();
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let mut c = Cluster::new(nodes);
    for n in &names {
        c.pod(&old, n);
    }
    c.mark_ready();
    let spec = DaemonSetSpec::compile(&new);
    c.rollouts.push(RolloutRecord {
        namespace: spec.namespace,
        name: spec.name,
        stable: Some(old.into()),
        ..RolloutRecord::default()
    });
    (c, new)
}

fn record(c: &mut Cluster) -> &mut RolloutRecord {
    &mut c.rollouts[0]
}

/// One pass as the executor makes it: terminating pods finish and every pod becomes ready
/// (instant readiness), the plan's progress is written to the record, and its step applied.
/// Returns the plan and the nodes that received a pod of the new revision.
fn pass(c: &mut Cluster, d: &DaemonSet) -> (DaemonSetPlan, Vec<String>) {
    c.pods.retain(|p| !p.is_terminating());
    c.mark_ready();
    let plan = c.plan(d);
    if let Some(r) = &plan.rollout {
        record(c).progress = Some(r.progress.clone());
    }
    let created = plan.step.create.iter().map(|n| n.to_string()).collect();
    c.step(d);
    (plan, created)
}

/// Passes until nothing is left to do (or `max` passes); the nodes that got the new revision,
/// per pass, and the last plan.
fn drive(c: &mut Cluster, d: &DaemonSet, max: usize) -> (Vec<Vec<String>>, DaemonSetPlan) {
    let mut waves = Vec::new();
    for _ in 0..max {
        let (plan, created) = pass(c, d);
        if plan.step.is_empty() {
            return (waves, plan);
        }
        if !created.is_empty() {
            waves.push(created);
        }
    }
    panic!("no end within {max} passes");
}

fn current_nodes(c: &Cluster, d: &DaemonSet) -> BTreeSet<String> {
    let rev = DaemonSetSpec::compile(d).revision;
    c.pods
        .iter()
        .filter(|p| p.labels.get(REVISION_HASH_LABEL) == Some(&rev))
        .filter_map(|p| p.target_node.as_deref().map(str::to_string))
        .collect()
}

fn flat(waves: &[Vec<String>]) -> Vec<String> {
    waves.iter().flatten().cloned().collect()
}

#[test]
fn canary_takes_the_first_n_nodes_then_waits_for_a_promote() {
    let (mut c, d) = fleet(nodes(6), 3, &[("daemonsync.io/canary", "2")]);
    let first = c.plan(&d);
    let r = first.rollout.as_ref().expect("rollout");
    assert_eq!(r.phase, Phase::Canary);
    assert_eq!(r.stages[0].nodes.len(), 2);
    // maxUnavailable is 3, but only the two canary nodes may move.
    assert_eq!(first.step.delete.len(), 2);
    let (waves, plan) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves), ["node-0", "node-1"]);
    let r = plan.rollout.expect("rollout");
    assert_eq!(r.phase, Phase::Paused);
    assert!(matches!(r.pause, Some(Paused::Manual { ref after }) if after == "canary"));
    // A promote of this revision's canary stage lets the rest through.
    let rev = DaemonSetSpec::compile(&d).revision;
    record(&mut c).promoted = Some((rev, 0));
    let (waves, plan) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves).len(), 4);
    assert!(waves.iter().all(|w| w.len() <= 3), "{waves:?}");
    assert_eq!(plan.rollout.expect("rollout").phase, Phase::Complete);
    assert_eq!(current_nodes(&c, &d).len(), 6);
}

#[test]
fn a_promote_of_another_revision_does_not_pass_the_pause() {
    let (mut c, d) = fleet(nodes(4), 1, &[("daemonsync.io/canary", "1")]);
    record(&mut c).promoted = Some(("someotherrev".into(), 5));
    let (waves, plan) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves), ["node-0"]);
    assert_eq!(plan.rollout.expect("rollout").phase, Phase::Paused);
}

#[test]
fn canary_percent_rounds_up_and_the_selector_chooses_the_nodes() {
    let mut ns = nodes(10);
    ns[7].labels.insert("canary".into(), "true".into());
    ns[3].labels.insert("canary".into(), "true".into());
    let (c, d) = fleet(ns.clone(), 1, &[("daemonsync.io/canary", "5%")]);
    let r = c.plan(&d).rollout.expect("rollout");
    assert_eq!(r.stages[0].nodes.len(), 1, "5% of 10 rounds up to one node");
    let (c, d) = fleet(ns, 5, &[("daemonsync.io/canary-selector", "canary=true")]);
    let plan = c.plan(&d);
    let r = plan.rollout.as_ref().expect("rollout");
    let canary: Vec<&str> = r.stages[0].nodes.iter().map(|n| &**n).collect();
    assert_eq!(canary, ["node-3", "node-7"]);
    let deleted: BTreeSet<&str> = plan.step.delete.iter().map(|d| &*d.node).collect();
    assert_eq!(deleted, BTreeSet::from(["node-3", "node-7"]));
}

#[test]
fn waves_follow_wave_order_then_sorted_values_then_unlabelled_nodes() {
    let mut ns = zoned(&["a", "b", "c", "d"], 2);
    ns.push(node("x-1").build());
    let (mut c, d) = fleet(
        ns,
        2,
        &[
            ("daemonsync.io/waves-by", ZONE),
            ("daemonsync.io/wave-order", "c,a"),
        ],
    );
    let r = c.plan(&d).rollout.expect("rollout");
    let names: Vec<&str> = r.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "topology.kubernetes.io/zone=c",
            "topology.kubernetes.io/zone=a",
            "topology.kubernetes.io/zone=b",
            "topology.kubernetes.io/zone=d",
            "topology.kubernetes.io/zone unset"
        ]
    );
    assert_eq!(r.phase, Phase::Wave(1, 5));
    let (waves, plan) = drive(&mut c, &d, 40);
    assert_eq!(
        waves,
        [
            vec!["c-1", "c-2"],
            vec!["a-1", "a-2"],
            vec!["b-1", "b-2"],
            vec!["d-1", "d-2"],
            vec!["x-1"]
        ]
    );
    assert_eq!(plan.rollout.expect("rollout").phase, Phase::Complete);
}

#[test]
fn a_wave_never_reaches_into_the_next_even_with_budget_to_spare() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 3),
        10,
        &[("daemonsync.io/waves-by", ZONE)],
    );
    let (plan, created) = pass(&mut c, &d);
    assert!(created.is_empty());
    let deleted: Vec<&str> = plan.step.delete.iter().map(|d| &*d.node).collect();
    assert_eq!(deleted, ["a-1", "a-2", "a-3"]);
}

#[test]
fn canary_then_zones_with_a_manual_wave_pause() {
    let (mut c, d) = fleet(
        zoned(&["a", "b", "c"], 2),
        2,
        &[
            ("daemonsync.io/canary", "1"),
            ("daemonsync.io/waves-by", ZONE),
            ("daemonsync.io/wave-pause", "manual"),
        ],
    );
    let rev = DaemonSetSpec::compile(&d).revision;
    let mut order = Vec::new();
    for stage in 0..4 {
        let (waves, plan) = drive(&mut c, &d, 20);
        order.push(flat(&waves));
        let r = plan.rollout.expect("rollout");
        if stage < 3 {
            assert_eq!(r.phase, Phase::Paused, "after stage {stage}");
            record(&mut c).promoted = Some((rev.clone(), stage));
        } else {
            assert_eq!(r.phase, Phase::Complete);
        }
    }
    assert_eq!(
        order,
        [
            vec!["a-1"],
            vec!["a-2"],
            vec!["b-1", "b-2"],
            vec!["c-1", "c-2"]
        ]
    );
}

#[test]
fn a_timed_pause_waits_from_the_stage_s_completion() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 2),
        2,
        &[
            ("daemonsync.io/waves-by", ZONE),
            ("daemonsync.io/wave-pause", "10m"),
        ],
    );
    let (waves, plan) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves), ["a-1", "a-2"]);
    let r = plan.rollout.expect("rollout");
    let until = crate::model::later(c.now, jiff::SignedDuration::from_mins(10));
    assert_eq!(r.wake_at, Some(until));
    assert!(matches!(r.pause, Some(Paused::Until { until: u, .. }) if u == until));
    // Nine minutes later it still waits; at ten the next wave starts.
    c.now = crate::model::later(c.now, jiff::SignedDuration::from_mins(9));
    assert!(pass(&mut c, &d).0.step.is_empty());
    c.now = until;
    let (waves, plan) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves), ["b-1", "b-2"]);
    assert_eq!(plan.rollout.expect("rollout").phase, Phase::Complete);
}

#[test]
fn partition_keeps_the_last_nodes_and_lowering_it_continues() {
    let (mut c, d) = fleet(nodes(6), 2, &[("daemonsync.io/partition", "2")]);
    let (waves, plan) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves), ["node-0", "node-1", "node-2", "node-3"]);
    let r = plan.rollout.expect("rollout");
    assert_eq!(r.phase, Phase::Paused);
    assert_eq!(r.pause, Some(Paused::Partition { held: 2 }));
    let held: Vec<&str> = r
        .partition
        .as_ref()
        .expect("partition")
        .nodes
        .iter()
        .map(|n| &**n)
        .collect();
    assert_eq!(held, ["node-4", "node-5"]);
    // Lower the partition in git: the rollout goes on.
    let lower = ds("foo")
        .image("foo:2")
        .max_unavailable(json!(2))
        .annotation("daemonsync.io/partition", "1")
        .build();
    assert_eq!(
        DaemonSetSpec::compile(&lower).revision,
        DaemonSetSpec::compile(&d).revision
    );
    let (waves, _) = drive(&mut c, &lower, 20);
    assert_eq!(flat(&waves), ["node-4"]);
    assert_eq!(current_nodes(&c, &lower).len(), 5);
}

#[test]
fn partition_percent_rounds_down() {
    let (mut c, d) = fleet(nodes(5), 5, &[("daemonsync.io/partition", "50%")]);
    let (waves, _) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves).len(), 3, "50% of 5 nodes keeps 2");
}

#[test]
fn partition_caps_canary_and_waves() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 2),
        4,
        &[
            ("daemonsync.io/canary", "1"),
            ("daemonsync.io/canary-pause", "0"),
            ("daemonsync.io/waves-by", ZONE),
            ("daemonsync.io/partition", "3"),
        ],
    );
    let (waves, _) = drive(&mut c, &d, 20);
    assert_eq!(flat(&waves), ["a-1"]);
}

#[test]
fn a_node_joining_during_a_pause_gets_the_stable_revision_of_its_wave() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 2),
        1,
        &[
            ("daemonsync.io/canary", "1"),
            ("daemonsync.io/waves-by", ZONE),
        ],
    );
    drive(&mut c, &d, 20);
    c.nodes.push(node("b-3").label(ZONE, "b").build());
    c.nodes.push(node("a-0").label(ZONE, "a").build());
    let plan = c.plan(&d);
    let entry = |n: &str| plan.nodes.iter().find(|e| &*e.node == n).expect("node");
    let joined = entry("b-3").rollout.expect("in the rollout");
    assert_eq!(joined.hold, Some(Hold::Stage));
    assert_eq!(joined.gets, Gets::Stable);
    let stable: Vec<&str> = plan.step.create_stable.iter().map(|n| &**n).collect();
    assert_eq!(
        stable,
        ["a-0", "b-3"],
        "no new-revision pod outside the canary"
    );
    assert!(plan.step.create.is_empty());
    c.step(&d);
    let old = DaemonSetSpec::compile(c.rollouts[0].stable.as_ref().expect("stable")).revision;
    let on_b3 = c
        .pods
        .iter()
        .find(|p| p.target_node.as_deref() == Some("b-3"))
        .expect("pod");
    assert_eq!(on_b3.labels.get(REVISION_HASH_LABEL), Some(&old));
}

#[test]
fn a_node_joining_a_reached_wave_gets_the_new_revision() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 1),
        1,
        &[("daemonsync.io/waves-by", ZONE)],
    );
    pass(&mut c, &d);
    c.nodes.push(node("a-2").label(ZONE, "a").build());
    let plan = c.plan(&d);
    assert!(
        plan.step.create.contains(&super::Name::from("a-2")),
        "{:?}",
        plan.step
    );
    assert!(plan.step.create_stable.is_empty());
}

#[test]
fn without_a_stable_revision_a_held_node_waits_for_its_wave() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 1),
        1,
        &[("daemonsync.io/waves-by", ZONE)],
    );
    c.rollouts[0].stable = None;
    c.nodes.push(node("b-2").label(ZONE, "b").build());
    let plan = c.plan(&d);
    let joined = plan.nodes.iter().find(|e| &*e.node == "b-2").expect("node");
    assert_eq!(joined.rollout.expect("rollout").gets, Gets::Nothing);
    assert!(!plan.step.create.iter().any(|n| &**n == "b-2"));
    assert!(plan.step.create_stable.is_empty());
}

#[test]
fn a_node_leaving_mid_canary_does_not_block_the_rollout() {
    let (mut c, d) = fleet(
        nodes(4),
        1,
        &[
            ("daemonsync.io/canary", "2"),
            ("daemonsync.io/canary-pause", "0"),
        ],
    );
    pass(&mut c, &d);
    // node-2, the second canary node, goes away with its pod.
    c.nodes.retain(|n| n.name != "node-2");
    c.pods
        .retain(|p| p.target_node.as_deref() != Some("node-2"));
    let (_, plan) = drive(&mut c, &d, 20);
    assert_eq!(plan.rollout.expect("rollout").phase, Phase::Complete);
    assert_eq!(current_nodes(&c, &d).len(), 3);
}

#[test]
fn a_first_install_is_not_paced() {
    let d = ds("foo")
        .image("foo:2")
        .annotation("daemonsync.io/canary", "1")
        .build();
    let c = Cluster::new(nodes(4));
    let plan = c.plan(&d);
    assert_eq!(plan.step.create.len(), 4);
}

#[test]
fn abort_holds_every_node_where_it_is() {
    let (mut c, d) = fleet(
        nodes(4),
        1,
        &[
            ("daemonsync.io/canary", "1"),
            ("daemonsync.io/canary-pause", "0"),
        ],
    );
    pass(&mut c, &d);
    pass(&mut c, &d);
    record(&mut c).aborted = Some(DaemonSetSpec::compile(&d).revision);
    let plan = c.plan(&d);
    let r = plan.rollout.as_ref().expect("rollout");
    assert_eq!(r.pause, Some(Paused::Aborted));
    assert!(
        plan.step.delete.is_empty() && plan.step.create.is_empty(),
        "{:?}",
        plan.step
    );
    // A new commit continues.
    let next = ds("foo")
        .image("foo:3")
        .max_unavailable(json!(1))
        .annotation("daemonsync.io/canary", "1")
        .build();
    assert_eq!(c.plan(&next).step.delete.len(), 1);
}

#[test]
fn plan_without_a_record_previews_the_whole_staged_rollout() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 2),
        1,
        &[
            ("daemonsync.io/canary", "1"),
            ("daemonsync.io/waves-by", ZONE),
        ],
    );
    c.rollouts.clear();
    let plan = c.plan(&d);
    let waves: Vec<(Option<u32>, Vec<&str>)> = plan
        .waves
        .iter()
        .map(|w| (w.stage, w.nodes.iter().map(|n| &**n).collect()))
        .collect();
    assert_eq!(
        waves,
        [
            (Some(0), vec!["a-1"]),
            (Some(1), vec!["a-2"]),
            (Some(2), vec!["b-1"]),
            (Some(2), vec!["b-2"]),
        ]
    );
    assert!(plan.converges);
}

#[test]
fn a_waves_by_label_no_node_has_is_an_error_with_the_annotation_path() {
    let (c, d) = fleet(
        nodes(3),
        1,
        &[("daemonsync.io/waves-by", "topology.kubernetes.io/zone")],
    );
    let plan = c.plan(&d);
    assert_eq!(plan.errors.len(), 1);
    assert!(
        plan.errors[0].starts_with("metadata.annotations[daemonsync.io/waves-by]: Invalid value: \"topology.kubernetes.io/zone\""),
        "{}",
        plan.errors[0]
    );
    assert!(plan.step.is_empty());
}

#[test]
fn the_record_progress_round_trips_through_the_plan() {
    let (mut c, d) = fleet(
        zoned(&["a", "b"], 1),
        1,
        &[("daemonsync.io/waves-by", ZONE)],
    );
    let rev = DaemonSetSpec::compile(&d).revision;
    record(&mut c).progress = Some(Progress {
        revision: rev.clone(),
        stage: 1,
        paused_since: None,
    });
    // Stage 1 was unlocked earlier: both zones may move now.
    let plan = c.plan(&d);
    assert_eq!(plan.rollout.expect("rollout").stage, 1);
    // A stale progress (another revision) starts over.
    record(&mut c).progress = Some(Progress {
        revision: "other".into(),
        stage: 1,
        paused_since: None,
    });
    assert_eq!(c.plan(&d).rollout.expect("rollout").stage, 0);
}

/// A generated fleet and policy: nodes in up to 4 zones (some unlabelled), a canary, a
/// partition, waves by zone or not, maxUnavailable.
#[derive(Debug, Clone)]
struct Case {
    zones: Vec<Option<u8>>,
    canary: u32,
    partition: u32,
    waves: bool,
    max_unavailable: i32,
    joins: Vec<Option<u8>>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(prop::option::weighted(0.9, 0..4u8), 1..16),
        0..4u32,
        0..5u32,
        any::<bool>(),
        1..4i32,
        prop::collection::vec(prop::option::weighted(0.9, 0..4u8), 0..3),
    )
        .prop_map(
            |(zones, canary, partition, waves, max_unavailable, joins)| Case {
                zones,
                canary,
                partition,
                waves,
                max_unavailable,
                joins,
            },
        )
}

fn zone_node(name: String, zone: Option<u8>) -> Node {
    let mut n = node(&name);
    if let Some(z) = zone {
        n = n.label(ZONE, &format!("z{z}"));
    }
    n.build()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Whatever the policy and however the fleet changes: no node outside the unlocked stages
    /// (or inside the partition) gets the new revision, the partition is never exceeded, a
    /// wave's maxUnavailable holds, and with promotes the rollout completes.
    #[test]
    fn stages_partition_and_budgets_hold(case in case()) {
        let nodes: Vec<Node> = case.zones.iter().enumerate()
            .map(|(i, z)| zone_node(format!("n-{i:02}"), *z)).collect();
        let canary = case.canary.to_string();
        let partition = case.partition.to_string();
        let mut annotations = vec![
            ("daemonsync.io/canary", canary.as_str()),
            ("daemonsync.io/partition", partition.as_str()),
            ("daemonsync.io/wave-pause", "manual"),
        ];
        if case.waves {
            annotations.push(("daemonsync.io/waves-by", ZONE));
        }
        let (mut c, d) = fleet(nodes, case.max_unavailable, &annotations);
        let rev = DaemonSetSpec::compile(&d).revision;
        let mut joins = case.joins.clone();
        for round in 0..200 {
            c.pods.retain(|p| !p.is_terminating());
            c.mark_ready();
            let plan = c.plan(&d);
            prop_assert_eq!(check_step(&plan, &c), Ok(()));
            if !plan.errors.is_empty() {
                // A waves-by label no node has.
                prop_assert!(case.waves);
                return Ok(());
            }
            let r = plan.rollout.clone().expect("rollout");
            record(&mut c).progress = Some(r.progress.clone());
            // Every node receiving the new revision is in an unlocked stage.
            for n in &plan.step.create {
                let e = plan.nodes.iter().find(|e| e.node == *n).expect("node");
                let nr = e.rollout.expect("eligible nodes are in the rollout");
                prop_assert!(nr.hold.is_none(), "{} gets the new revision while held", n);
                prop_assert!(nr.stage.is_some_and(|s| s <= r.stage));
            }
            // Only held nodes get the stable revision.
            for n in &plan.step.create_stable {
                let e = plan.nodes.iter().find(|e| e.node == *n).expect("node");
                prop_assert!(e.rollout.is_some_and(|r| r.hold.is_some()));
            }
            // Rolling-update deletions only in unlocked stages.
            for del in plan.step.delete.iter().filter(|d| d.reason == crate::plan::DeleteReason::RollingUpdate) {
                let e = plan.nodes.iter().find(|e| e.node == del.node).expect("node");
                prop_assert!(e.rollout.is_some_and(|r| r.hold.is_none()), "{} replaced while held", del.node);
            }
            let eligible = plan.status.desired_number_scheduled as usize;
            let cap = eligible - (case.partition as usize).min(eligible);
            let (unavailable, _) = unavailable_and_surging(&plan, &c);
            prop_assert!(unavailable <= plan.budgets.max_unavailable as usize,
                "{unavailable} unavailable > maxUnavailable {}", plan.budgets.max_unavailable);
            c.step(&d);
            let updated = current_nodes(&c, &d).len();
            prop_assert!(updated <= cap, "{updated} nodes on the new revision, partition allows {cap}");
            if plan.step.is_empty() {
                match r.pause {
                    Some(Paused::Manual { .. }) => record(&mut c).promoted = Some((rev.clone(), r.stage)),
                    _ if !joins.is_empty() => {
                        let z = joins.remove(0);
                        let name = format!("j-{round:03}");
                        c.nodes.push(zone_node(name, z));
                    }
                    _ => {
                        prop_assert_eq!(updated, cap, "ends with {} of {} allowed nodes updated", updated, cap);
                        return Ok(());
                    }
                }
            }
        }
        prop_assert!(false, "no end within 200 passes");
    }
}

#[test]
fn a_record_reads_as_moving_only_the_phases_a_rollout_goes_through_unheld() {
    let status = |phase: &Phase| crate::cluster::RolloutStatus {
        phase: phase.to_string(),
        message: None,
        progress: Progress {
            revision: "r1".into(),
            stage: 0,
            paused_since: None,
        },
    };
    for (phase, moving) in [
        (Phase::Canary, true),
        (Phase::Wave(2, 3), true),
        (Phase::Complete, true),
        (Phase::Paused, false),
        (Phase::Halted, false),
    ] {
        assert_eq!(status(&phase).is_moving(), moving, "{phase}");
    }
}

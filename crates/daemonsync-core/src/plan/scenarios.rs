//! The scenarios of docs/semantics.md §9, named after their ids. Counts are
//! `(creates, deletes)` of one upstream sync (see `testkit::Cluster::sync`).

use crate::model::{PodPhase, ReadyCondition, TaintEffect};
use crate::plan::{NodeState, Status, StepPhase, budgets, is_pod_updated};
use crate::testkit::plan::*;
use serde_json::json;

fn both_strategies(f: impl Fn(DsBuilder)) {
    f(ds("foo"));
    f(ds("foo").on_delete());
}

fn ready_at(c: &mut Cluster, ds: &k8s_openapi::api::apps::v1::DaemonSet, node: &str, secs: i64) {
    let t = c
        .now
        .checked_add(jiff::SignedDuration::from_secs(secs))
        .unwrap();
    let p = c.pod(ds, node);
    p.creation_timestamp = Some(t);
    p.ready = Some(ReadyCondition {
        status: true,
        last_transition: Some(t),
    });
}

#[test]
fn m1_simple_daemonset_launches_pods_on_every_node() {
    both_strategies(|b| {
        let ds = b.build();
        let mut c = Cluster::new(nodes(5));
        let plan = c.plan(&ds);
        let mut created: Vec<_> = plan.step.create.iter().map(|n| n.to_string()).collect();
        created.sort();
        assert_eq!(created, ["node-0", "node-1", "node-2", "node-3", "node-4"]);
        assert_eq!(c.sync(&ds), (5, 0));
    });
}

#[test]
fn m2_no_nodes_does_nothing() {
    both_strategies(|b| {
        let mut c = Cluster::new(vec![]);
        assert_eq!(c.sync(&b.build()), (0, 0));
    });
}

#[test]
fn m3_not_ready_node_still_gets_a_pod() {
    let mut n = node("node-0").build();
    n.ready = Some(false);
    let mut c = Cluster::new(vec![n]);
    assert_eq!(c.sync(&ds("foo").build()), (1, 0));
}

#[test]
fn m4_network_unavailable_condition_without_taint_gets_a_pod() {
    // Conditions are not eligibility inputs; only taints are.
    let mut c = Cluster::new(vec![node("node-0").build()]);
    assert_eq!(c.sync(&ds("foo").build()), (1, 0));
}

#[test]
fn m5_deals_with_existing_pods() {
    both_strategies(|b| {
        let ds = b.build();
        let mut c = Cluster::new(nodes(5));
        c.pods(&ds, "node-1", 1);
        c.pods(&ds, "node-2", 2);
        c.pods(&ds, "node-3", 5);
        c.pods_l2(&ds, "node-4", 2);
        let plan = c.plan(&ds);
        let mut created: Vec<_> = plan.step.create.iter().map(|n| n.to_string()).collect();
        created.sort();
        assert_eq!(created, ["node-0", "node-4"]);
        assert_eq!(c.sync(&ds), (2, 5));
    });
}

#[test]
fn m6_selector_launches_pods_on_matching_nodes_only() {
    let ds = ds("foo")
        .node_selector(json!({"color": "blue", "speed": "fast"}))
        .build();
    let mut all = nodes(4);
    all.extend((4..7).map(|i| node(&format!("node-{i}")).blue().build()));
    let mut c = Cluster::new(all);
    assert_eq!(c.sync(&ds), (3, 0));
}

fn ten_nodes_half_blue() -> Vec<crate::model::Node> {
    let mut all = nodes(5);
    all.extend((5..10).map(|i| node(&format!("node-{i}")).blue().build()));
    all
}

#[test]
fn m7_selector_deletes_unselected_pods() {
    both_strategies(|b| {
        let ds = b
            .node_selector(json!({"color": "blue", "speed": "fast"}))
            .build();
        let mut c = Cluster::new(ten_nodes_half_blue());
        c.pods_l2(&ds, "node-0", 2);
        c.pods(&ds, "node-1", 3);
        c.pods_l2(&ds, "node-1", 1);
        c.pods(&ds, "node-4", 1);
        assert_eq!(c.sync(&ds), (5, 4));
    });
}

#[test]
fn m8_selector_deals_with_existing_pods() {
    both_strategies(|b| {
        let ds = b
            .node_selector(json!({"color": "blue", "speed": "fast"}))
            .build();
        let mut c = Cluster::new(ten_nodes_half_blue());
        c.pods(&ds, "node-0", 1);
        c.pods(&ds, "node-1", 3);
        c.pods_l2(&ds, "node-1", 2);
        c.pods(&ds, "node-2", 4);
        c.pods(&ds, "node-6", 13);
        c.pods_l2(&ds, "node-7", 4);
        c.pods(&ds, "node-9", 1);
        c.pods_l2(&ds, "node-9", 1);
        let plan = c.plan(&ds);
        let mut created: Vec<_> = plan.step.create.iter().map(|n| n.to_string()).collect();
        created.sort();
        assert_eq!(created, ["node-5", "node-7", "node-8"]);
        assert_eq!(c.sync(&ds), (3, 20));
    });
}

#[test]
fn m9_selector_matching_no_node_does_nothing() {
    let ds = ds("foo")
        .node_selector(json!({"color": "red", "speed": "fast"}))
        .build();
    let mut c = Cluster::new(ten_nodes_half_blue());
    assert_eq!(c.sync(&ds), (0, 0));
}

#[test]
fn m10_node_name_launches_on_that_node_only() {
    let mut c = Cluster::new(nodes(5));
    assert_eq!(c.sync(&ds("foo").node_name("node-0").build()), (1, 0));
    let mut c = Cluster::new(nodes(5));
    assert_eq!(c.sync(&ds("foo").node_name("node-10").build()), (0, 0));
}

#[test]
fn m11_node_name_and_selector_must_agree() {
    let sel = json!({"color": "blue", "speed": "fast"});
    let mut c = Cluster::new(ten_nodes_half_blue());
    let ds1 = ds("foo")
        .node_selector(sel.clone())
        .node_name("node-6")
        .build();
    assert_eq!(c.sync(&ds1), (1, 0));
    let mut c = Cluster::new(ten_nodes_half_blue());
    let ds2 = ds("foo").node_selector(sel).node_name("node-0").build();
    assert_eq!(c.sync(&ds2), (0, 0));
}

#[test]
fn m12_node_affinity_launches_on_matching_nodes() {
    let ds = ds("foo")
        .affinity(
            json!([{"matchExpressions": [{"key": "color", "operator": "In", "values": ["blue"]}]}]),
        )
        .build();
    let mut all = nodes(4);
    all.extend((4..7).map(|i| node(&format!("node-{i}")).blue().build()));
    let mut c = Cluster::new(all);
    assert_eq!(c.sync(&ds), (3, 0));
}

#[test]
fn m13_empty_selector_selects_all_and_does_nothing() {
    let ds = ds("foo")
        .selector(json!({}))
        .node_selector(json!({"foo": "bar"}))
        .build();
    let mut c = Cluster::new(vec![node("node1").build()]);
    let unrelated = c.pod(&ds, "node1");
    unrelated.controller = None;
    unrelated.labels_mut().clear();
    let plan = c.plan(&ds);
    assert!(plan.step.is_empty());
    assert!(plan.warnings.iter().any(|w| w.contains("selects all pods")));
    assert_eq!(c.sync(&ds), (0, 0));
    assert_eq!(c.pods.len(), 1, "the unrelated pod is untouched");
}

#[test]
fn m14_daemonset_being_deleted_does_nothing() {
    let mut c = Cluster::new(nodes(5));
    let plan = c.plan(&ds("foo").deleting().build());
    assert!(plan.warnings.iter().any(|w| w.contains("being deleted")));
    assert_eq!(c.sync(&ds("foo").deleting().build()), (0, 0));
}

#[test]
fn m15_live_daemonset_being_deleted_does_not_adopt() {
    let ds = ds("foo").build();
    let mut c = Cluster::new(nodes(5));
    let orphan = c.pod(&ds, "node-0");
    orphan.controller = None;
    c.live
        .push(crate::testkit::plan::ds("foo").deleting().build());
    assert_eq!(c.sync(&ds), (0, 0));
}

#[test]
fn m16_node_with_its_pod_needs_nothing() {
    let ds = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    c.pod(&ds, "node-0");
    assert_eq!(c.sync(&ds), (0, 0));
}

#[test]
fn m17_foreign_pod_on_the_node_is_irrelevant() {
    let ds = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    let foreign = c.pod(&ds, "node-0");
    foreign.controller = None;
    foreign.labels_mut().clear();
    assert_eq!(c.sync(&ds), (1, 0));
}

#[test]
fn m23_noschedule_taint_blocks_unless_tolerated() {
    let tainted = || {
        vec![
            node("node-0")
                .taint("dedicated", "user1", TaintEffect::NoSchedule)
                .build(),
        ]
    };
    let mut c = Cluster::new(tainted());
    assert_eq!(c.sync(&ds("foo").build()), (0, 0));
    let plan = c.plan(&ds("foo").build());
    assert_eq!(plan.nodes[0].state, NodeState::Blocked);
    assert!(
        plan.nodes[0]
            .reason
            .to_string()
            .contains("dedicated=user1:NoSchedule")
    );

    let tolerant = ds("foo")
        .tolerations(json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]))
        .build();
    let mut c = Cluster::new(tainted());
    assert_eq!(c.sync(&tolerant), (1, 0));
    let mut c = Cluster::new(nodes(1));
    assert_eq!(c.sync(&tolerant), (1, 0));
}

#[test]
fn m24_not_ready_unreachable_and_pressure_taints_are_tolerated() {
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", TaintEffect::NoExecute),
        ("node.kubernetes.io/unreachable", TaintEffect::NoExecute),
    ] {
        let mut c = Cluster::new(vec![node("node-0").taint(key, "", effect).build()]);
        assert_eq!(c.sync(&ds("foo").build()), (1, 0), "{key}");
    }
    let pressured = node("node-0")
        .taint(
            "node.kubernetes.io/disk-pressure",
            "",
            TaintEffect::NoSchedule,
        )
        .taint(
            "node.kubernetes.io/memory-pressure",
            "",
            TaintEffect::NoSchedule,
        )
        .taint(
            "node.kubernetes.io/pid-pressure",
            "",
            TaintEffect::NoSchedule,
        )
        .build();
    let mut c = Cluster::new(vec![pressured]);
    assert_eq!(c.sync(&ds("foo").build()), (1, 0));
}

#[test]
fn m25_terminating_pod_blocks_replacement_without_surge() {
    let ds = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    c.pod(&ds, "node-0").deletion_timestamp = Some(t0());
    assert_eq!(c.sync(&ds), (0, 0));
    let plan = c.plan(&ds);
    assert_eq!(plan.nodes[0].state, NodeState::Terminating);
}

#[test]
fn m28_creates_are_capped_by_burst_replicas() {
    // Upstream caps each sync at BurstReplicas creates; slow-start batching is the executor's.
    let mut c = Cluster::new(nodes(300));
    let plan = c.plan(&ds("foo").build());
    assert_eq!(plan.step.create.len(), crate::plan::BURST_REPLICAS);
    assert_eq!(plan.status.desired_number_scheduled, 300);
    assert_eq!(c.sync(&ds("foo").build()).0, 250);
    assert_eq!(c.sync(&ds("foo").build()).0, 50);
}

#[test]
fn m29_status_after_partial_creation_counts_what_exists() {
    let ds = ds("foo").build();
    let mut c = Cluster::new(nodes(100));
    for i in 0..10 {
        c.pod(&ds, &format!("node-{i}"));
    }
    let s = c.plan(&ds).status;
    assert_eq!(
        (
            s.desired_number_scheduled,
            s.current_number_scheduled,
            s.updated_number_scheduled
        ),
        (100, 10, 10)
    );
}

#[test]
fn m32_observed_generation_follows_the_daemonset() {
    let mut b = ds("foo");
    b = b.annotation("x", "y");
    let mut d = b.build();
    d.metadata.generation = Some(1);
    let mut c = Cluster::new(nodes(1));
    c.pod(&d, "node-0");
    assert_eq!(c.plan(&d).status.observed_generation, Some(1));
}

#[test]
fn m34_recreated_daemonset_starts_fresh() {
    let ds = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    assert_eq!(c.sync(&ds), (1, 0));
    // The DaemonSet is deleted and its pods with it; recreated under the same name it creates
    // its pod again, with no memory of the first one.
    c.pods.clear();
    assert_eq!(c.sync(&ds), (1, 0));
}

#[test]
fn g1_surge_deals_with_existing_pods() {
    let ds = ds("foo").surge(json!(1)).build();
    let mut c = Cluster::new(nodes(5));
    c.pods(&ds, "node-1", 1);
    c.pods(&ds, "node-2", 2);
    c.pods(&ds, "node-3", 5);
    c.pods_l2(&ds, "node-4", 2);
    assert_eq!(c.sync(&ds), (2, 5));
}

#[test]
fn g2_surge_preserves_ready_old_pods() {
    let ds = ds("foo").surge(json!(1)).build();
    let mut c = Cluster::new(nodes(5));
    // node-1: a new pod (t=100, not ready), an old pod without hash label (t=50, ready) and
    // an old pod (t=60, ready); node-2: one new pod.
    c.pod(&ds, "node-1").creation_timestamp = Some(t0() + jiff::SignedDuration::from_secs(100));
    ready_at(&mut c, &ds, "node-1", 50);
    let unlabelled = c.pods.last_mut().unwrap();
    unlabelled
        .labels_mut()
        .remove(crate::model::REVISION_HASH_LABEL);
    ready_at(&mut c, &ds, "node-1", 60);
    let old60 = c.pods.last_mut().unwrap();
    old60
        .labels_mut()
        .insert(crate::model::REVISION_HASH_LABEL.into(), "old".into());
    let old60 = old60.name.clone();
    c.pod(&ds, "node-2");
    let plan = c.plan(&ds);
    let deleted: Vec<_> = plan.step.delete.iter().map(|d| d.name.clone()).collect();
    assert_eq!(deleted, [old60]);
    assert_eq!(c.sync(&ds), (3, 1));
}

#[test]
fn g3_surge_creates_new_pod_when_at_max_surge_and_old_pod_deleted() {
    let ds = ds("foo").surge(json!(1)).build();
    let mut c = Cluster::new(nodes(5));
    c.pod(&ds, "node-0").creation_timestamp = Some(t0() + jiff::SignedDuration::from_secs(100));
    ready_at(&mut c, &ds, "node-0", 50);
    c.pods
        .last_mut()
        .unwrap()
        .labels_mut()
        .insert(crate::model::REVISION_HASH_LABEL.into(), "old".into());
    for n in ["node-1", "node-2", "node-3", "node-4"] {
        ready_at(&mut c, &ds, n, 50);
        c.pods
            .last_mut()
            .unwrap()
            .labels_mut()
            .insert(crate::model::REVISION_HASH_LABEL.into(), "old".into());
    }
    c.pods.last_mut().unwrap().deletion_timestamp = Some(t0());
    let plan = c.plan(&ds);
    assert_eq!(
        plan.step
            .create
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>(),
        ["node-4"]
    );
    assert_eq!(c.sync(&ds), (1, 0));
}

/// Replays a sequence of syncs; `None` stands for markReady.
fn replay(
    c: &mut Cluster,
    ds: &k8s_openapi::api::apps::v1::DaemonSet,
    seq: &[Option<(usize, usize)>],
) {
    for (i, expected) in seq.iter().enumerate() {
        match expected {
            None => c.mark_ready(),
            Some(e) => assert_eq!(c.sync(ds), *e, "sync #{i} of {seq:?}"),
        }
    }
}

const R: Option<(usize, usize)> = None;
fn s(c: usize, d: usize) -> Option<(usize, usize)> {
    Some((c, d))
}

#[test]
fn r1_rolling_update_with_max_unavailable_two() {
    let v1 = ds("foo").max_unavailable(json!(2));
    let mut c = Cluster::new(nodes(5));
    replay(&mut c, &v1.build(), &[s(5, 0), R]);
    let v2 = v1.image("foo/bar:2").build();
    replay(
        &mut c,
        &v2,
        &[
            s(0, 2),
            s(2, 0),
            R,
            s(0, 2),
            s(2, 0),
            R,
            s(0, 1),
            s(1, 0),
            R,
            s(0, 0),
        ],
    );
    let st = c.plan(&v2).status;
    assert_eq!(st.updated_number_scheduled, 5);
    assert_eq!(st.number_available, 5);
}

#[test]
fn r2_rolling_update_with_max_surge_two() {
    let v1 = ds("foo").surge(json!(2));
    let mut c = Cluster::new(nodes(5));
    replay(&mut c, &v1.build(), &[s(5, 0), R]);
    let v2 = v1.image("foo/bar:2").build();
    replay(
        &mut c,
        &v2,
        &[
            s(2, 0),
            s(0, 0),
            R,
            s(2, 2),
            s(0, 0),
            R,
            s(1, 2),
            s(0, 0),
            R,
            s(0, 1),
            s(0, 0),
        ],
    );
    assert_eq!(c.pods.len(), 5);
}

#[test]
fn r3_surge_rollout_sunsets_pod_on_node_no_longer_tolerated() {
    let taint = "node-role.kubernetes.io/control-plane";
    let mut all = nodes(5);
    all[0] = node("node-0")
        .taint(taint, "", TaintEffect::NoSchedule)
        .build();
    let v1 = ds("foo")
        .surge(json!(1))
        .tolerations(json!([{"key": taint, "operator": "Exists", "effect": "NoSchedule"}]));
    let mut c = Cluster::new(all);
    replay(&mut c, &v1.build(), &[s(5, 0), R]);
    let v2 = v1.tolerations(json!([])).build();
    replay(
        &mut c,
        &v2,
        &[
            s(1, 1),
            s(0, 0),
            R,
            s(1, 1),
            s(0, 0),
            R,
            s(1, 1),
            s(0, 0),
            R,
            s(1, 1),
            s(0, 0),
            R,
            s(0, 1),
            s(0, 0),
        ],
    );
    assert!(
        c.pods
            .iter()
            .all(|p| p.target_node.as_deref() != Some("node-0"))
    );
}

#[test]
fn r4_new_pods_never_ready_stop_the_rollout() {
    let v1 = ds("foo").max_unavailable(json!(3));
    let mut c = Cluster::new(nodes(5));
    replay(&mut c, &v1.build(), &[s(5, 0), R]);
    let v2 = v1.image("foo/bar:2").build();
    replay(&mut c, &v2, &[s(0, 3), s(3, 0), s(0, 0)]);
    let plan = c.plan(&v2);
    assert_eq!(plan.status.updated_number_scheduled, 3);
    assert_eq!(
        plan.nodes
            .iter()
            .filter(|n| n.state == NodeState::OutOfDate)
            .count(),
        2,
        "the remaining old pods stay"
    );
}

#[test]
fn r10_strategy_change_without_template_change_does_nothing() {
    let mut c = Cluster::new(nodes(5));
    replay(&mut c, &ds("foo").on_delete().build(), &[s(5, 0), R]);
    let rolling = ds("foo").max_unavailable(json!(3)).build();
    assert_eq!(c.sync(&rolling), (0, 0));
}

#[test]
fn r12_budgets_resolve_against_desired_nodes() {
    // (maxSurge, maxUnavailable, desired, empty nodes)
    let check = |b: DsBuilder,
                 n: usize,
                 pods: &[&str],
                 terminating: &[&str],
                 want: (i32, i32, i32, usize)| {
        let d = b.build();
        let mut c = Cluster::new(nodes(n));
        for p in pods {
            let pod = c.pod(&d, p);
            pod.ready = Some(ReadyCondition {
                status: true,
                last_transition: Some(t0()),
            });
            if terminating.contains(p) {
                pod.deletion_timestamp = Some(t0());
            }
        }
        let plan = c.plan(&d);
        let empty = plan
            .nodes
            .iter()
            .filter(|e| e.state == NodeState::Missing)
            .count();
        let got = (
            plan.budgets.max_surge,
            plan.budgets.max_unavailable,
            plan.status.desired_number_scheduled,
            empty,
        );
        assert_eq!(got, want);
        let spec = crate::plan::DaemonSetSpec::compile(&d);
        let direct = budgets(&spec, plan.status.desired_number_scheduled);
        assert_eq!((direct.max_surge, direct.max_unavailable), (want.0, want.1));
    };
    check(
        ds("foo").max_unavailable(json!(0)),
        0,
        &[],
        &[],
        (0, 0, 0, 0),
    );
    check(ds("foo"), 2, &["node-0", "node-1"], &[], (0, 1, 2, 0));
    check(
        ds("foo").max_unavailable(json!(0)),
        2,
        &["node-0"],
        &[],
        (0, 1, 2, 1),
    );
    check(
        ds("foo").max_unavailable(json!("50%")),
        2,
        &["node-0", "node-1"],
        &[],
        (0, 1, 2, 0),
    );
    check(
        ds("foo").surge(json!("50%")),
        2,
        &["node-0", "node-1"],
        &[],
        (1, 0, 2, 0),
    );
    check(
        ds("foo").surge(json!("100%")),
        2,
        &["node-0", "node-1"],
        &[],
        (2, 0, 2, 0),
    );
    check(
        ds("foo").max_unavailable(json!("50%")),
        3,
        &["node-0", "node-1"],
        &["node-1"],
        (0, 2, 3, 1),
    );
}

#[test]
fn u1_is_pod_updated_matrix() {
    let mut pod = crate::model::Pod::default();
    let set = |pod: &mut crate::model::Pod, g: Option<&str>, h: Option<&str>| {
        pod.labels_mut().clear();
        if let Some(g) = g {
            pod.labels_mut()
                .insert(crate::model::TEMPLATE_GENERATION_LABEL.into(), g.into());
        }
        if let Some(h) = h {
            pod.labels_mut()
                .insert(crate::model::REVISION_HASH_LABEL.into(), h.into());
        }
    };
    let generation = Some(12345);
    let cases = [
        (Some("12345"), Some("55555"), "55555", true),
        (Some("12345"), Some("55555"), "54321", true),
        (Some("12345"), None, "55555", true),
        (Some("12345"), None, "", true),
        (Some("12345"), Some("55555"), "", true),
        (Some("12350"), Some("55555"), "55555", true),
        (Some("12350"), Some("55555"), "54321", false),
        (None, None, "", false),
        (None, None, "55555", false),
    ];
    for (g, h, hash, want) in cases {
        set(&mut pod, g, h);
        assert_eq!(
            is_pod_updated(&pod, hash, generation),
            want,
            "{g:?} {h:?} {hash}"
        );
    }
}

#[test]
fn failed_pod_is_deleted_and_replaced() {
    let ds = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    c.pod(&ds, "node-0").phase = PodPhase::Failed;
    let plan = c.plan(&ds);
    assert_eq!(plan.nodes[0].state, NodeState::Failed);
    assert_eq!(c.sync(&ds), (0, 1));
    assert_eq!(c.sync(&ds), (1, 0));
}

#[test]
fn status_counts_first_pod_per_node_and_misscheduled() {
    let d = ds("foo")
        .node_selector(json!({"color": "blue", "speed": "fast"}))
        .build();
    let mut c = Cluster::new(ten_nodes_half_blue());
    c.pod(&d, "node-0"); // misscheduled
    for n in ["node-5", "node-6"] {
        c.pod(&d, n).ready = Some(ReadyCondition {
            status: true,
            last_transition: Some(t0()),
        });
    }
    c.pod(&d, "node-7");
    let st = c.plan(&d).status;
    assert_eq!(
        st,
        Status {
            desired_number_scheduled: 5,
            current_number_scheduled: 3,
            number_ready: 2,
            updated_number_scheduled: 3,
            number_available: 2,
            number_unavailable: 3,
            number_misscheduled: 1,
            observed_generation: None,
        }
    );
}

#[test]
fn min_ready_seconds_boundary_is_inclusive() {
    let d = ds("foo").min_ready(10).build();
    let mut c = Cluster::new(nodes(1));
    c.pod(&d, "node-0").ready = Some(ReadyCondition {
        status: true,
        last_transition: Some(t0()),
    });
    c.now = t0() + jiff::SignedDuration::from_secs(9);
    assert_eq!(c.plan(&d).status.number_available, 0);
    assert_eq!(c.plan(&d).nodes[0].state, NodeState::Unavailable);
    c.now = t0() + jiff::SignedDuration::from_secs(10);
    assert_eq!(c.plan(&d).status.number_available, 1);
}

#[test]
fn step_is_manage_before_rolling_update() {
    let v1 = ds("foo");
    let mut c = Cluster::new(nodes(3));
    replay(&mut c, &v1.build(), &[s(3, 0), R]);
    c.nodes.push(node("node-3").build());
    let v2 = v1.image("foo/bar:2").build();
    let plan = c.plan(&v2);
    assert_eq!(plan.step.phase, StepPhase::Manage);
    assert_eq!(
        plan.step
            .create
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>(),
        ["node-3"]
    );
    assert!(plan.step.delete.is_empty());
}

#[test]
fn waves_follow_node_order_in_budget_sized_chunks() {
    let v1 = ds("foo").max_unavailable(json!(2));
    let mut c = Cluster::new(nodes(5));
    replay(&mut c, &v1.build(), &[s(5, 0), R]);
    let plan = c.plan(&v1.image("foo/bar:2").build());
    let waves: Vec<Vec<String>> = plan
        .waves
        .iter()
        .map(|w| w.nodes.iter().map(|n| n.to_string()).collect())
        .collect();
    assert_eq!(
        waves,
        [
            vec!["node-0", "node-1"],
            vec!["node-2", "node-3"],
            vec!["node-4"]
        ]
    );
    assert!(plan.converges);
}

#[test]
fn on_delete_projects_no_waves_and_warns() {
    let v1 = ds("foo").on_delete();
    let mut c = Cluster::new(nodes(3));
    replay(&mut c, &v1.build(), &[s(3, 0), R]);
    let plan = c.plan(&v1.image("foo/bar:2").build());
    assert!(plan.step.is_empty());
    assert!(plan.waves.is_empty());
    assert!(
        plan.risks
            .iter()
            .any(|r| r.kind == crate::plan::RiskKind::OnDelete)
    );
    assert!(plan.nodes.iter().all(|n| n.state == NodeState::OutOfDate));
}

#[test]
fn live_daemonset_with_equivalent_template_keeps_its_updated_pods_current() {
    // A DaemonSet the built-in controller runs today: its pods carry the upstream hash and the
    // template generation, never daemonsync's hash.
    let git = ds("foo").build();
    let live = ds("foo")
        .annotation(crate::model::TEMPLATE_GENERATION_ANNOTATION, "3")
        .build();
    let mut c = Cluster::new(nodes(2));
    c.live.push(live);
    for (n, generation) in [("node-0", "3"), ("node-1", "2")] {
        let p = c.pod(&git, n);
        p.labels_mut()
            .insert(crate::model::REVISION_HASH_LABEL.into(), "7d4b9c".into());
        p.labels_mut().insert(
            crate::model::TEMPLATE_GENERATION_LABEL.into(),
            generation.into(),
        );
        p.ready = Some(ReadyCondition {
            status: true,
            last_transition: Some(t0()),
        });
    }
    let plan = c.plan(&git);
    assert_eq!(plan.live, crate::plan::LiveComparison::Equivalent);
    let states: Vec<_> = plan.nodes.iter().map(|n| n.state).collect();
    assert_eq!(states, [NodeState::UpToDate, NodeState::OutOfDate]);
    assert_eq!(plan.status.updated_number_scheduled, 1);
}

#[test]
fn live_daemonset_with_different_template_makes_every_pod_out_of_date() {
    // Taken over (as a DaemonSet the built-in controller runs must be): the step is the
    // rollout that follows the take-over.
    let git = ds("foo")
        .image("foo/bar:2")
        .annotation(crate::plan::ownership::ADOPT, "true")
        .build();
    let live = ds("foo")
        .annotation(crate::model::TEMPLATE_GENERATION_ANNOTATION, "3")
        .build();
    let mut c = Cluster::new(nodes(2));
    c.live.push(live);
    for n in ["node-0", "node-1"] {
        let p = c.pod(&git, n);
        p.labels_mut()
            .insert(crate::model::REVISION_HASH_LABEL.into(), "7d4b9c".into());
        p.labels_mut()
            .insert(crate::model::TEMPLATE_GENERATION_LABEL.into(), "3".into());
        p.ready = Some(ReadyCondition {
            status: true,
            last_transition: Some(t0()),
        });
    }
    let plan = c.plan(&git);
    assert_eq!(plan.live, crate::plan::LiveComparison::Differs);
    assert!(plan.nodes.iter().all(|n| n.state == NodeState::OutOfDate));
    assert_eq!(
        plan.step.delete.len(),
        1,
        "maxUnavailable 1 replaces one node at a time"
    );
}

#[test]
fn pods_of_other_controllers_are_never_touched() {
    let d = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    let foreign = c.pod(&d, "node-0");
    foreign.controller_mut().unwrap().kind = "ReplicaSet".into();
    let other_ds = c.pod(&d, "node-0");
    other_ds.controller_mut().unwrap().name = "bar".into();
    let plan = c.plan(&d);
    assert_eq!(plan.step.create.len(), 1, "neither pod counts as foo's");
    assert!(plan.step.delete.is_empty());
}

#[test]
fn pods_of_daemonsyncs_record_are_claimed() {
    let d = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    let owner = c.pod(&d, "node-0").controller_mut().unwrap();
    owner.kind = crate::plan::RECORD_KIND.into();
    owner.api_version = "daemonsync.io/v1alpha1".into();
    assert_eq!(c.sync(&d), (0, 0));
}

#[test]
fn a_daemonset_kind_of_another_api_group_is_another_controller() {
    let d = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    c.pod(&d, "node-0").controller_mut().unwrap().api_version = "apps.kruise.io/v1alpha1".into();
    let plan = c.plan(&d);
    assert_eq!(plan.step.create.len(), 1, "OpenKruise's pod is not ours");
    assert!(plan.step.delete.is_empty(), "and is never touched");
}

#[test]
fn orphans_matching_the_selector_are_adopted_unless_terminating() {
    let d = ds("foo").build();
    let mut c = Cluster::new(nodes(2));
    c.pod(&d, "node-0").controller = None;
    let t = c.pod(&d, "node-1");
    t.controller = None;
    t.deletion_timestamp = Some(t0());
    let plan = c.plan(&d);
    let states: Vec<_> = plan.nodes.iter().map(|n| n.state).collect();
    assert_eq!(states, [NodeState::Unavailable, NodeState::Missing]);
}

#[test]
fn classification_explains_every_node() {
    let d = ds("foo")
        .node_selector(json!({"color": "blue", "speed": "fast"}))
        .image("foo/bar:2")
        .build();
    let mut all = vec![
        node("a-plain").build(),
        node("b-noexec")
            .blue()
            .taint("k", "v", TaintEffect::NoExecute)
            .build(),
        node("c-nosched")
            .blue()
            .taint("k", "v", TaintEffect::NoSchedule)
            .build(),
    ];
    all.extend(
        [
            "d-current",
            "e-old",
            "f-missing",
            "g-dup",
            "h-failed",
            "i-notready",
        ]
        .iter()
        .map(|n| node(n).blue().build()),
    );
    let mut c = Cluster::new(all);
    let ready = Some(ReadyCondition {
        status: true,
        last_transition: Some(t0()),
    });
    c.pod(&d, "a-plain").ready = ready;
    c.pod(&d, "c-nosched").ready = ready;
    c.pod(&d, "d-current").ready = ready;
    let old = c.pod(&d, "e-old");
    old.ready = ready;
    old.labels_mut()
        .insert(crate::model::REVISION_HASH_LABEL.into(), "old123".into());
    c.pods(&d, "g-dup", 2);
    c.pod(&d, "h-failed").phase = PodPhase::Failed;
    c.pod(&d, "i-notready").waiting_reason = Some("CrashLoopBackOff".into());
    c.pod(&d, "gone-node").node_name = Some("gone-node".into());
    let plan = c.plan(&d);
    let got: Vec<(String, NodeState, String)> = plan
        .nodes
        .iter()
        .map(|n| (n.node.to_string(), n.state, n.reason.to_string()))
        .collect();
    let find = |name: &str| got.iter().find(|g| g.0 == name).unwrap().clone();
    assert_eq!(find("a-plain").1, NodeState::Misscheduled);
    assert!(find("a-plain").2.contains("color"), "{:?}", find("a-plain"));
    assert_eq!(find("b-noexec").1, NodeState::Blocked);
    assert_eq!(find("c-nosched").1, NodeState::Blocked);
    assert!(
        find("c-nosched").2.contains("kept"),
        "{:?}",
        find("c-nosched")
    );
    assert_eq!(find("d-current").1, NodeState::UpToDate);
    assert_eq!(find("e-old").1, NodeState::OutOfDate);
    assert!(find("e-old").2.contains("old123"));
    assert_eq!(find("f-missing").1, NodeState::Missing);
    assert_eq!(find("g-dup").1, NodeState::Duplicate);
    assert_eq!(find("h-failed").1, NodeState::Failed);
    assert_eq!(find("i-notready").1, NodeState::Unavailable);
    assert!(find("i-notready").2.contains("CrashLoopBackOff"));
    assert_eq!(find("gone-node").1, NodeState::Misscheduled);
    assert!(find("gone-node").2.contains("no longer exists"));
    // Sorted by name, vanished nodes last.
    assert_eq!(got.last().unwrap().0, "gone-node");
    assert_eq!(plan.status.number_misscheduled, 2, "a-plain and c-nosched");
}

#[test]
fn surge_waves_take_max_surge_nodes_at_a_time() {
    let v1 = ds("foo").surge(json!(2));
    let mut c = Cluster::new(nodes(5));
    replay(&mut c, &v1.build(), &[s(5, 0), R]);
    let plan = c.plan(&v1.image("foo/bar:2").build());
    let sizes: Vec<usize> = plan.waves.iter().map(|w| w.nodes.len()).collect();
    assert_eq!(sizes, [2, 2, 1]);
    assert!(plan.converges);
}

#[test]
fn unbound_pod_on_a_vanished_node_is_deleted() {
    let d = ds("foo").build();
    let mut c = Cluster::new(nodes(1));
    c.pod(&d, "node-0");
    let p = c.pod(&d, "old-node");
    p.node_name = None;
    let plan = c.plan(&d);
    assert_eq!(plan.step.delete.len(), 1);
    assert_eq!(
        plan.step.delete[0].reason,
        crate::plan::DeleteReason::NodeGone
    );
}

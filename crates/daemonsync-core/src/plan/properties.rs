//! Property tests of the planner's invariants: budgets are never exceeded, rollouts converge
//! within a stated bound, and plans are deterministic.

use crate::model::{PodPhase, REVISION_HASH_LABEL, ReadyCondition, TaintEffect};
use crate::plan::StepPhase;
use crate::testkit::plan::*;
use k8s_openapi::api::apps::v1::DaemonSet;
use proptest::prelude::*;
use serde_json::json;

/// One pod as generated: (current revision, ready, terminating, failed, bound).
type PodGen = (bool, bool, bool, bool, bool);

#[derive(Debug, Clone)]
struct Case {
    /// Per node: (blue label, tainted NoSchedule, pods).
    nodes: Vec<(bool, bool, Vec<PodGen>)>,
    /// Budget: (surge?, value, percent?).
    budget: (bool, i32, bool),
    blue_only: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let pod = (
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.8),
    );
    let node = (
        any::<bool>(),
        prop::bool::weighted(0.15),
        prop::collection::vec(pod, 0..3),
    );
    (
        prop::collection::vec(node, 1..25),
        (any::<bool>(), 1..5i32, any::<bool>()),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(nodes, (surge, v, pct), blue_only)| Case {
            nodes,
            budget: (surge, if pct { v * 20 } else { v }, pct),
            blue_only,
        })
}

fn build(case: &Case) -> (Cluster, DaemonSet) {
    let v = if case.budget.2 {
        json!(format!("{}%", case.budget.1))
    } else {
        json!(case.budget.1)
    };
    let mut b = ds("foo").image("foo/bar:2");
    b = if case.budget.0 {
        b.surge(v)
    } else {
        b.max_unavailable(v)
    };
    if case.blue_only {
        b = b.node_selector(json!({"color": "blue", "speed": "fast"}));
    }
    let d = b.build();
    let nodes = case
        .nodes
        .iter()
        .enumerate()
        .map(|(i, (blue, tainted, _))| {
            let mut n = node(&format!("node-{i:02}"));
            if *blue {
                n = n.blue();
            }
            if *tainted {
                n = n.taint("dedicated", "x", TaintEffect::NoSchedule);
            }
            n.build()
        })
        .collect();
    let mut c = Cluster::new(nodes);
    for (i, (_, _, pods)) in case.nodes.iter().enumerate() {
        for &(current, ready, terminating, failed, bound) in pods {
            let p = c.pod(&d, &format!("node-{i:02}"));
            if !current {
                p.labels_mut()
                    .insert(REVISION_HASH_LABEL.into(), "old".into());
            }
            if ready {
                p.ready = Some(ReadyCondition {
                    status: true,
                    last_transition: Some(t0()),
                });
            }
            if terminating {
                p.deletion_timestamp = Some(t0());
            }
            if failed {
                p.phase = PodPhase::Failed;
            }
            if !bound {
                p.node_name = None;
            }
        }
    }
    (c, d)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn rolling_step_never_exceeds_budgets(case in case()) {
        let (mut c, d) = build(&case);
        let plan = c.plan(&d);
        if plan.step.phase != StepPhase::RollingUpdate {
            return Ok(());
        }
        prop_assert_eq!(check_step(&plan, &c), Ok(()));
        let (unavail_before, surge_before) = unavailable_and_surging(&plan, &c);
        c.step(&d);
        let (unavail_after, surge_after) = unavailable_and_surging(&plan, &c);
        let b = plan.budgets;
        if b.max_surge == 0 {
            prop_assert!(
                unavail_after <= unavail_before.max(b.max_unavailable as usize),
                "unavailable {unavail_before} -> {unavail_after} with maxUnavailable {}", b.max_unavailable
            );
        } else {
            prop_assert!(
                surge_after <= surge_before.max(b.max_surge as usize),
                "surging {surge_before} -> {surge_after} with maxSurge {}", b.max_surge
            );
            prop_assert!(unavail_after <= unavail_before, "surge never takes a node down");
        }
    }

    #[test]
    fn rollouts_converge_with_instant_readiness(case in case()) {
        let (mut c, d) = build(&case);
        let first = c.plan(&d);
        let n = first.nodes.len();
        let per_wave = first.budgets.max_unavailable.max(first.budgets.max_surge).max(1) as usize;
        // Two steps per wave (delete then create, or create then retire the old pod), plus a
        // few for the initial clean-up of failed, duplicate and misscheduled pods.
        let bound = 2 * n.div_ceil(per_wave) + 6;
        let mut steps = 0;
        loop {
            // Instant readiness: terminating pods finish, every pod becomes ready.
            c.pods.retain(|p| !p.is_terminating());
            c.mark_ready();
            prop_assert_eq!(check_step(&c.plan(&d), &c), Ok(()));
            let (phase, _) = c.step(&d);
            if phase == StepPhase::None {
                break;
            }
            steps += 1;
            prop_assert!(steps <= bound, "no convergence within {bound} steps");
        }
        let plan = c.plan(&d);
        let st = plan.status;
        prop_assert_eq!(st.updated_number_scheduled, st.desired_number_scheduled);
        prop_assert_eq!(st.number_available, st.desired_number_scheduled);
        prop_assert_eq!(st.current_number_scheduled, st.desired_number_scheduled);
        for e in plan.nodes.iter() {
            prop_assert!(
                matches!(e.state, crate::plan::NodeState::UpToDate | crate::plan::NodeState::Ineligible | crate::plan::NodeState::Blocked),
                "{} is {} ({})", e.node, e.state, e.reason
            );
        }
        prop_assert!(plan.converges);
    }

    #[test]
    fn plans_are_deterministic_and_ignore_input_order(case in case(), seed in any::<u64>()) {
        let (mut c, d) = build(&case);
        let once = serde_json::to_string(&c.plan(&d)).unwrap();
        let twice = serde_json::to_string(&c.plan(&d)).unwrap();
        prop_assert_eq!(&once, &twice);
        // Reverse and rotate the observed lists: the plan must not depend on their order.
        c.nodes.reverse();
        c.pods.reverse();
        let k = (seed as usize) % c.pods.len().max(1);
        c.pods.rotate_left(k);
        let shuffled = serde_json::to_string(&c.plan(&d)).unwrap();
        prop_assert_eq!(once, shuffled);
    }
}

//! Arbitrary valid fleets, built with the planner's test builders (`testkit::plan`): nodes
//! with labels, taints and readiness; pods old and new, ready or not, terminating, failed or
//! unbound; a valid DaemonSet (defaulted, and skipped unless it validates) with an arbitrary
//! rolling budget. Each planned step, for a few steps, must hold the invariants the property
//! tests state (`testkit::check_step`, `testkit::unavailable_and_surging`) and be
//! deterministic: the same JSON twice, and with the observed lists in another order.
#![no_main]

use arbitrary::Arbitrary;
use daemonsync::manifest::{apply_defaults, validate};
use daemonsync::model::{PodPhase, REVISION_HASH_LABEL, ReadyCondition, TaintEffect};
use daemonsync::plan::StepPhase;
use daemonsync_core::testkit::plan::{Cluster, check_step, ds, node, t0, unavailable_and_surging};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

#[derive(Arbitrary, Debug)]
struct PodGen {
    current: bool,
    ready: bool,
    terminating: bool,
    failed: bool,
    unbound: bool,
}

#[derive(Arbitrary, Debug)]
struct NodeGen {
    blue: bool,
    taint: u8,
    not_ready: bool,
    pods: Vec<PodGen>,
}

#[derive(Arbitrary, Debug)]
struct Case {
    nodes: Vec<NodeGen>,
    surge: bool,
    value: u8,
    percent: bool,
    blue_only: bool,
    tolerate: bool,
    min_ready: u8,
    /// Per step: which pods become ready and which terminating pods finish.
    evolve: Vec<(bool, bool)>,
    rotate: u16,
}

const MAX_NODES: usize = 64;

fuzz_target!(|case: Case| {
    let value = i32::from(case.value % 100) + 1;
    let v = if case.percent {
        json!(format!("{value}%"))
    } else {
        json!(value)
    };
    let mut b = ds("foo")
        .image("foo/bar:2")
        .min_ready(i32::from(case.min_ready % 4));
    b = if case.surge {
        b.surge(v)
    } else {
        b.max_unavailable(v)
    };
    if case.blue_only {
        b = b.node_selector(json!({"color": "blue"}));
    }
    if case.tolerate {
        b = b.tolerations(
            json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]),
        );
    }
    let mut d = b.build();
    apply_defaults(&mut d);
    if !validate(&d).is_empty() {
        return;
    }
    let nodes = case
        .nodes
        .iter()
        .take(MAX_NODES)
        .enumerate()
        .map(|(i, g)| {
            let mut n = node(&format!("node-{i:02}"));
            if g.blue {
                n = n.label("color", "blue");
            }
            match g.taint % 4 {
                1 => n = n.taint("dedicated", "x", TaintEffect::NoSchedule),
                2 => n = n.taint("dedicated", "x", TaintEffect::NoExecute),
                3 => n = n.taint("other", "y", TaintEffect::NoSchedule),
                _ => {}
            }
            let mut n = n.build();
            if g.not_ready {
                n.ready = Some(false);
            }
            n
        })
        .collect::<Vec<_>>();
    let count = nodes.len();
    let mut c = Cluster::new(nodes);
    for (i, g) in case.nodes.iter().take(count).enumerate() {
        for pod_gen in g.pods.iter().take(3) {
            let p = c.pod(&d, &format!("node-{i:02}"));
            if !pod_gen.current {
                p.labels.insert(REVISION_HASH_LABEL.into(), "old".into());
            }
            if pod_gen.ready {
                p.ready = Some(ReadyCondition {
                    status: true,
                    last_transition: Some(t0()),
                });
            }
            if pod_gen.terminating {
                p.deletion_timestamp = Some(t0());
            }
            if pod_gen.failed {
                p.phase = PodPhase::Failed;
            }
            if pod_gen.unbound {
                p.node_name = None;
            }
        }
    }
    for &(ready, finish) in case.evolve.iter().take(8) {
        let plan = c.plan(&d);
        if let Err(broken) = check_step(&plan, &c) {
            panic!("{broken}\nstep: {:?}", plan.step);
        }
        // Deterministic, whatever the order of the observed lists.
        let once = serde_json::to_string(&plan).unwrap();
        assert_eq!(once, serde_json::to_string(&c.plan(&d)).unwrap());
        let mut shuffled = Cluster::new(c.nodes.iter().rev().cloned().collect());
        shuffled.pods = c.pods.clone();
        shuffled.pods.reverse();
        let k = usize::from(case.rotate) % shuffled.pods.len().max(1);
        shuffled.pods.rotate_left(k);
        assert_eq!(once, serde_json::to_string(&shuffled.plan(&d)).unwrap());
        let (unavail_before, surge_before) = unavailable_and_surging(&plan, &c);
        let (phase, _) = c.step(&d);
        if phase == StepPhase::None {
            break;
        }
        if phase == StepPhase::RollingUpdate {
            let (unavail_after, surge_after) = unavailable_and_surging(&plan, &c);
            let b = plan.budgets;
            if b.max_surge == 0 {
                assert!(
                    unavail_after <= unavail_before.max(b.max_unavailable as usize),
                    "unavailable {unavail_before} -> {unavail_after} with maxUnavailable {}",
                    b.max_unavailable
                );
            } else {
                assert!(
                    surge_after <= surge_before.max(b.max_surge as usize),
                    "surging {surge_before} -> {surge_after} with maxSurge {}",
                    b.max_surge
                );
                assert!(unavail_after <= unavail_before, "surge took a node down");
            }
        }
        if finish {
            c.pods.retain(|p| !p.is_terminating());
        }
        if ready {
            c.mark_ready();
        }
    }
});

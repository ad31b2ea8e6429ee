//! Which node changes require re-planning a DaemonSet (upstream's node event handling,
//! docs/semantics.md §8). The sync loop uses these to stay level-triggered without
//! re-planning on every heartbeat.

use crate::model::Node;
use crate::plan::Policy;
use crate::plan::eligibility::evaluate;
use crate::plan::spec::DaemonSetSpec;

/// Upstream `shouldIgnoreNodeUpdate`, inverted: only label and taint changes can change where
/// a DaemonSet runs; conditions, capacity and heartbeats cannot.
pub fn node_update_matters(old: &Node, new: &Node) -> bool {
    old.labels != new.labels || old.taints != new.taints
}

/// Whether a node that was added, or updated in a way that matters, requires re-planning
/// `ds`: it should run a pod and has none, it must not keep the pod it has, or it has a pod
/// while the DaemonSet counts misscheduled pods (the node may have become eligible again).
pub fn node_event_requeues(
    ds: &DaemonSetSpec,
    node: &Node,
    has_pod: bool,
    number_misscheduled: i32,
    policy: &Policy,
) -> bool {
    let e = evaluate(ds, node, policy);
    if has_pod {
        !e.should_continue_running || number_misscheduled > 0
    } else {
        e.should_run
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TaintEffect;
    use crate::testkit::plan::{ds, node};
    use serde_json::json;

    #[test]
    fn n1_only_label_and_taint_changes_matter() {
        let a = node("n1").label("k", "v").build();
        assert!(!node_update_matters(&a, &a.clone()));
        let relabelled = node("n1").label("k", "w").build();
        assert!(node_update_matters(&a, &relabelled));
        let tainted = node("n1")
            .label("k", "v")
            .taint("t", "", TaintEffect::NoSchedule)
            .build();
        assert!(node_update_matters(&a, &tainted));
        let mut not_ready = a.clone();
        not_ready.ready = Some(false);
        assert!(
            !node_update_matters(&a, &not_ready),
            "conditions are ignored"
        );
    }

    #[test]
    fn n2_updates_that_make_a_node_eligible_requeue() {
        let policy = Policy::default();
        let blue = DaemonSetSpec::compile(
            &ds("foo")
                .node_selector(json!({"color": "blue", "speed": "fast"}))
                .build(),
        );
        let before = node("node1").build();
        let after = node("node1").blue().build();
        assert!(node_update_matters(&before, &after));
        assert!(node_event_requeues(&blue, &after, false, 0, &policy));

        let plain = DaemonSetSpec::compile(&ds("foo").build());
        let tainted = node("node1")
            .taint("k", "v", TaintEffect::NoSchedule)
            .build();
        let untainted = node("node1").build();
        assert!(node_update_matters(&tainted, &untainted));
        assert!(node_event_requeues(&plain, &untainted, false, 0, &policy));

        assert!(!node_update_matters(&untainted, &untainted.clone()));
    }

    #[test]
    fn n3_an_added_node_requeues_daemonsets_that_should_run_there() {
        let policy = Policy::default();
        let plain = DaemonSetSpec::compile(&ds("foo").build());
        let selective =
            DaemonSetSpec::compile(&ds("bar").node_selector(json!({"color": "blue"})).build());
        let added = node("node-new").build();
        assert!(node_event_requeues(&plain, &added, false, 0, &policy));
        assert!(!node_event_requeues(&selective, &added, false, 0, &policy));
    }
}

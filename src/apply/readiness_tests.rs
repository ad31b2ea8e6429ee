//! New nodes wait for their daemons, on the simulated cluster: a node that joins with a
//! DaemonSet's readiness taint keeps it until the DaemonSet's pod on it is available, then
//! loses that taint alone; DaemonSets naming the same key all gate it; a dry run removes
//! nothing; in native mode the built-in controller places the pod with the toleration; a
//! paused DaemonSet still serves the node and lifts the taint, a frozen one does neither.

use super::tests::{desired, run};
use super::*;
use crate::cluster::Event;
use crate::cluster::sim::Sim;
use crate::cluster::sim::config::SimConfig;
use crate::model::Timestamp;
use crate::plan::Observed;
use jiff::SignedDuration;
use std::sync::{Arc, Mutex};

const KEY: &str = "example.com/agent-not-ready";

/// DaemonSet `name` in `ns` with `image`, gating new nodes on `KEY`, and more annotations.
fn gated(name: &str, image: &str, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  namespace: ns
  annotations: {{daemonsync.io/readiness-taint: {KEY}{annotations}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 1}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: '{image}'}}]
"
    )
}

/// Three workers; `new-1` joins at 10s with the readiness taint and a taint of someone else's.
fn sim(extra: &str) -> Sim {
    let cfg = format!(
        "seed: 5
kubelet: {{startLatency: {{uniform: [2s, 6s]}}, terminationGrace: 1s}}
nodes:
  - {{name: 'n-{{i}}', count: 3}}
churn:
  - at: 10s
    add:
      name: new-1
      taints:
        - {{key: {KEY}, effect: NoSchedule}}
        - {{key: example.com/spot, value: 'true', effect: PreferNoSchedule}}
namespaces: [{{name: ns}}]
{extra}"
    );
    Sim::new(SimConfig::parse(&cfg).expect("sim config")).expect("sim")
}

/// The taints of `node`, as `key:Effect`.
fn taints(observed: &Observed, node: &str) -> Vec<String> {
    observed
        .nodes
        .iter()
        .find(|n| n.name == node)
        .map(|n| n.taints.iter().map(ToString::to_string).collect())
        .unwrap_or_default()
}

/// Whether a pod of `ds` on `node` exists, and whether it is available.
fn pod_on(observed: &Observed, ds: &str, node: &str, now: Timestamp) -> (bool, bool) {
    let pods: Vec<_> = observed
        .pods
        .iter()
        .filter(|p| {
            !p.is_terminating()
                && p.target_node.as_deref() == Some(node)
                && p.controller.as_ref().is_some_and(|c| c.name == ds)
        })
        .collect();
    (
        !pods.is_empty(),
        pods.iter().any(|p| p.is_available(0, now)),
    )
}

/// After every change: whether `new-1` has the readiness taint, and the agent pod there
/// exists and is available.
type Moment = (bool, bool, bool);

fn watch(sim: &mut Sim) -> Arc<Mutex<Vec<Moment>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    sim.set_probe(Box::new(move |observed: &Observed, now| {
        let tainted = taints(observed, "new-1").iter().any(|t| t.starts_with(KEY));
        let (exists, available) = pod_on(observed, "agent", "new-1", now);
        s.lock().unwrap().push((tainted, exists, available));
    }));
    seen
}

fn join(sim: &mut Sim) {
    let at = sim.start() + SignedDuration::from_secs(10);
    while sim.now() < at {
        sim.advance(at);
    }
    assert_eq!(taints(&sim.observed(), "new-1").len(), 2, "new-1 joined");
}

fn untaints(r: &ApplyReport) -> Vec<(String, String, String)> {
    r.writes
        .iter()
        .filter(|w| w.verb == "untaint")
        .map(|w| (w.daemonset.clone(), w.node.clone(), w.taint.clone()))
        .collect()
}

#[test]
fn a_node_joining_with_the_readiness_taint_keeps_it_until_the_daemon_pod_is_available() {
    let agent = desired(&gated("agent", "agent:1", ""));
    let mut sim = sim("");
    sim.install(&agent).unwrap();
    join(&mut sim);
    let seen = watch(&mut sim);
    let r = run(&mut sim, &agent, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);

    let seen = seen.lock().unwrap();
    // The pod was there, not yet available, and the node still had its taint.
    assert!(
        seen.iter()
            .any(|&(tainted, exists, available)| tainted && exists && !available),
        "{seen:?}"
    );
    // The taint never went before the pod was available.
    assert!(
        !seen
            .iter()
            .any(|&(tainted, _, available)| !tainted && !available),
        "{seen:?}"
    );
    let observed = sim.observed();
    assert_eq!(
        taints(&observed, "new-1"),
        ["example.com/spot=true:PreferNoSchedule"],
        "the readiness taint alone went"
    );
    assert_eq!(pod_on(&observed, "agent", "new-1", sim.now()), (true, true));
    assert_eq!(
        untaints(&r),
        [("ns/agent".to_string(), "new-1".to_string(), KEY.to_string())]
    );
    let events: Vec<Event> = sim.events().into_iter().map(|(_, e)| e).collect();
    assert!(
        events.iter().any(|e| e.reason == "ReadinessTaintRemoved"
            && e.message.contains("new-1 (example.com/agent-not-ready)")),
        "{events:?}"
    );
}

#[test]
fn two_daemonsets_naming_the_key_both_gate_the_node() {
    // The CNI's pods of `cni:broken` never start: its pod on the new node stays unavailable.
    let mut sim = sim("failures:\n  images: [{image: 'cni:broken', reason: ErrImagePull}]");
    let installed = desired(&format!(
        "{}---\n{}",
        gated("agent", "agent:1", ""),
        gated("cni", "cni:1", "")
    ));
    sim.install(&installed).unwrap();
    join(&mut sim);
    let opts = ApplyOptions {
        progress_deadline: SignedDuration::from_mins(2),
        ..ApplyOptions::default()
    };
    let broken = desired(&format!(
        "{}---\n{}",
        gated("agent", "agent:1", ""),
        gated("cni", "cni:broken", "")
    ));
    let r = run(&mut sim, &broken, &opts);
    assert_eq!(r.halted, ["ns/cni"], "{:?}", r.outcome);
    let observed = sim.observed();
    assert_eq!(pod_on(&observed, "agent", "new-1", sim.now()), (true, true));
    assert!(
        taints(&observed, "new-1")
            .iter()
            .any(|t| t.starts_with(KEY)),
        "the agent alone is available: the taint stays"
    );
    assert!(untaints(&r).is_empty());

    let fixed = desired(&format!(
        "{}---\n{}",
        gated("agent", "agent:1", ""),
        gated("cni", "cni:2", "")
    ));
    let r = run(&mut sim, &fixed, &opts);
    assert_eq!(r.outcome, Outcome::Converged);
    let observed = sim.observed();
    assert_eq!(pod_on(&observed, "cni", "new-1", sim.now()), (true, true));
    assert_eq!(
        taints(&observed, "new-1"),
        ["example.com/spot=true:PreferNoSchedule"]
    );
    // Removed once, though both DaemonSets planned it.
    assert_eq!(untaints(&r).len(), 1, "{:?}", untaints(&r));
}

#[test]
fn a_dry_run_removes_no_taint() {
    let agent = desired(&gated("agent", "agent:1", ""));
    let mut sim = sim("");
    join(&mut sim);
    // The agent runs on every node, the new one too (it tolerates the taint): only the taint
    // is left to go.
    sim.install(&agent).unwrap();
    let dry = ApplyOptions {
        dry_run: true,
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &agent, &dry);
    assert_eq!(r.outcome, Outcome::DryRun);
    let ds = &r.plan.daemonsets[0];
    assert_eq!(ds.step.remove_taints.len(), 1, "{:?}", ds.step);
    assert!(
        taints(&sim.observed(), "new-1")
            .iter()
            .any(|t| t.starts_with(KEY))
    );
    let r = run(&mut sim, &agent, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(untaints(&r).len(), 1);
}

#[test]
fn in_native_mode_the_builtin_controller_places_the_pod_and_daemonsync_lifts_the_taint() {
    let agent = desired(&gated("agent", "agent:1", ", daemonsync.io/mode: native"));
    let mut sim = sim("");
    join(&mut sim);
    let r = run(&mut sim, &agent, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    let observed = sim.observed();
    // The apps/v1 DaemonSet carries the toleration, so its controller placed a pod there.
    let live = &observed.daemonsets[0];
    let tolerations = serde_json::to_value(
        &live
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .tolerations,
    )
    .unwrap();
    assert!(
        tolerations
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["key"] == KEY && t["operator"] == "Exists" && t["effect"] == "NoSchedule"),
        "{tolerations}"
    );
    assert_eq!(pod_on(&observed, "agent", "new-1", sim.now()), (true, true));
    assert_eq!(
        taints(&observed, "new-1"),
        ["example.com/spot=true:PreferNoSchedule"]
    );
}

#[test]
fn a_paused_daemonset_still_serves_a_joining_node_and_lifts_its_taint_a_frozen_one_does_neither() {
    let agent = desired(&gated("agent", "agent:1", ""));
    let mut sim = sim("");
    assert_eq!(
        run(&mut sim, &agent, &ApplyOptions::default()).outcome,
        Outcome::Converged
    );
    sim.set_frozen("ns", "agent", true);
    join(&mut sim);
    let r = run(&mut sim, &agent, &ApplyOptions::default());
    assert_eq!(r.frozen, ["ns/agent"]);
    assert!(r.writes.is_empty());
    assert_eq!(
        pod_on(&sim.observed(), "agent", "new-1", sim.now()),
        (false, false)
    );

    sim.set_frozen("ns", "agent", false);
    sim.set_paused("ns", "agent", true);
    let r = run(&mut sim, &agent, &ApplyOptions::default());
    assert_eq!(r.paused, ["ns/agent"]);
    assert_eq!(
        r.writes
            .iter()
            .map(|w| (w.verb, w.node.as_str()))
            .collect::<Vec<_>>(),
        [("create", "new-1")]
    );
    // Once its pod is available, the next pass lifts the taint, paused or not.
    let later = sim.now() + SignedDuration::from_secs(30);
    while sim.now() < later {
        sim.advance(later);
    }
    let r = run(&mut sim, &agent, &ApplyOptions::default());
    assert_eq!(untaints(&r).len(), 1, "{:?}", r.writes);
    assert!(
        !taints(&sim.observed(), "new-1")
            .iter()
            .any(|t| t.starts_with(KEY))
    );
}

//! Pause and freeze on the simulated cluster: pausing mid-rollout, a node that joins gets the
//! stable revision's pod and no old pod is replaced; a pod deleted meanwhile comes back at the
//! stable revision; frozen, nothing is written and a joining node gets nothing; resume and
//! unfreeze continue.

use super::tests::{desired, run};
use super::*;
use crate::cluster::Cluster;
use crate::cluster::sim::Sim;
use crate::cluster::sim::config::SimConfig;
use crate::plan::DaemonSetSpec;
use jiff::SignedDuration;

/// `agent` in `ns` with `image`, maxUnavailable 1, and a one-node canary with a manual pause.
fn agent(image: &str) -> Vec<Desired> {
    desired(&format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: ns
  annotations: {{daemonsync.io/canary: '1'}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 1}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers: [{{name: c, image: '{image}'}}]
"
    ))
}

/// Four workers; `new-1` joins at 10m.
fn sim() -> Sim {
    Sim::new(
        SimConfig::parse(
            "seed: 11
kubelet: {startLatency: {uniform: [2s, 5s]}, terminationGrace: 1s}
nodes:
  - {name: 'n-{i}', count: 4}
churn:
  - {at: 10m, add: {name: new-1}}
namespaces: [{name: ns}]
",
        )
        .expect("sim config"),
    )
    .expect("sim")
}

fn revision(d: &[Desired]) -> String {
    DaemonSetSpec::compile(&d[0].daemonset).revision
}

/// The agent pods that are not terminating: (node, name, revision), by node.
fn pods(sim: &Sim) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = sim
        .observed()
        .pods
        .iter()
        .filter(|p| !p.is_terminating() && p.controller.as_ref().is_some_and(|c| c.name == "agent"))
        .map(|p| {
            (
                p.target_node.as_deref().unwrap_or_default().to_string(),
                p.name.clone(),
                p.revision_hash().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

/// `agent:1` rolled out (so the record names it stable), then `agent:2` stopped at its manual
/// pause after the one-node canary.
fn mid_rollout() -> (Sim, Vec<Desired>, Vec<Desired>) {
    let old = agent("agent:1");
    let new = agent("agent:2");
    let mut sim = sim();
    assert_eq!(
        run(&mut sim, &old, &ApplyOptions::default()).outcome,
        Outcome::Converged
    );
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::AwaitingPromotion);
    let on_new = pods(&sim)
        .iter()
        .filter(|(_, _, rev)| *rev == revision(&new))
        .count();
    assert_eq!(on_new, 1, "the canary took the new revision");
    (sim, old, new)
}

fn join(sim: &mut Sim) {
    let at = sim.start() + SignedDuration::from_mins(10);
    while sim.now() < at {
        sim.advance(at);
    }
    assert!(sim.observed().nodes.iter().any(|n| n.name == "new-1"));
}

fn writes(r: &ApplyReport) -> Vec<(&str, &str, &str)> {
    r.writes
        .iter()
        .map(|w| (w.verb, w.node.as_str(), w.revision.as_str()))
        .collect()
}

#[test]
fn pausing_mid_rollout_a_joining_node_gets_the_stable_revision_and_no_old_pod_is_replaced() {
    let (mut sim, old, new) = mid_rollout();
    sim.set_paused("ns", "agent", true);
    let before = pods(&sim);
    join(&mut sim);
    let opts = ApplyOptions {
        policy: crate::plan::Policy {
            auto_promote: true,
            ..Default::default()
        },
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &new, &opts);
    assert_eq!(r.outcome, Outcome::Paused);
    assert_eq!(r.paused, ["ns/agent"]);
    assert_eq!(writes(&r), [("create", "new-1", revision(&old).as_str())]);
    let after = pods(&sim);
    let kept: Vec<_> = after.iter().filter(|p| p.0 != "new-1").cloned().collect();
    assert_eq!(kept, before, "no pod replaced, even with --auto-promote");
    let plan = &r.plan.daemonsets[0];
    assert_eq!(
        plan.suspended,
        Some(crate::plan::suspend::Suspension::Paused {
            revision: Some(revision(&old))
        })
    );
    let state = block_on(sim.observe()).unwrap();
    assert!(state.records[0].status.as_ref().unwrap().paused);

    // Resumed, the rollout goes on to every node, the new one too.
    sim.set_paused("ns", "agent", false);
    let r = run(&mut sim, &new, &opts);
    assert_eq!(r.outcome, Outcome::Converged);
    assert!(pods(&sim).iter().all(|p| p.2 == revision(&new)));
    assert_eq!(pods(&sim).len(), 5);
}

#[test]
fn a_pod_deleted_while_paused_comes_back_at_the_stable_revision() {
    let (mut sim, old, new) = mid_rollout();
    sim.set_paused("ns", "agent", true);
    let (node, name, rev) = pods(&sim)
        .into_iter()
        .find(|p| p.2 == revision(&old))
        .unwrap();
    block_on(sim.delete_pod("ns", &name)).unwrap();
    // Until the deleted pod is gone the node is not empty: a paused DaemonSet's node is
    // served once its pod has terminated.
    let gone = sim.now() + SignedDuration::from_secs(5);
    while sim.now() < gone {
        sim.advance(gone);
    }
    assert!(!pods(&sim).iter().any(|p| p.1 == name));
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Paused);
    assert_eq!(writes(&r), [("create", node.as_str(), rev.as_str())]);
}

#[test]
fn frozen_nothing_is_written_and_a_joining_node_gets_nothing_until_unfrozen() {
    let (mut sim, old, new) = mid_rollout();
    sim.set_frozen("ns", "agent", true);
    let before = pods(&sim);
    join(&mut sim);
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Paused, "apply exits 4 for a freeze too");
    assert_eq!(r.frozen, ["ns/agent"]);
    assert!(r.paused.is_empty());
    assert!(r.writes.is_empty(), "{:?}", writes(&r));
    assert_eq!(pods(&sim), before, "the new node gets nothing");
    assert_eq!(
        r.plan.daemonsets[0].suspended,
        Some(crate::plan::suspend::Suspension::Frozen)
    );
    let state = block_on(sim.observe()).unwrap();
    assert!(state.records[0].status.as_ref().unwrap().frozen);
    // `--force` does not write through a freeze.
    let forced = ApplyOptions {
        force: true,
        ..ApplyOptions::default()
    };
    assert!(run(&mut sim, &new, &forced).writes.is_empty());

    // Frozen and paused: unfreezing leaves the pause, which serves the new node.
    sim.set_paused("ns", "agent", true);
    sim.set_frozen("ns", "agent", false);
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(writes(&r), [("create", "new-1", revision(&old).as_str())]);
    let state = block_on(sim.observe()).unwrap();
    let status = state.records[0].status.as_ref().unwrap();
    assert!(!status.frozen && status.paused);
}

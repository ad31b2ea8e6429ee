//! A daemon's status writes under churn: a change of a record's counters only is written once
//! it has lasted `status_interval` (at most one such write per DaemonSet per interval), a pod
//! replaced within the interval costs no write, and any other change is written at once.

use super::stall_tests::{agent, cluster, record};
use super::tests::sim;
use super::*;
use crate::cluster::Cluster;
use crate::cluster::sim::Sim;
use jiff::SignedDuration;

fn coalescing() -> ApplyOptions {
    ApplyOptions {
        status_interval: Some(SignedDuration::from_secs(1)),
        ..ApplyOptions::default()
    }
}

/// One pass as a daemon makes it: observe, assess, act.
fn pass(sim: &mut Sim, ex: &mut Executor, desired: &[Desired], opts: &ApplyOptions) -> Acted {
    let state = block_on(sim.observe()).expect("observe");
    let a = ex.assess(desired, &state, opts);
    block_on(ex.act(sim, &a, &state, opts))
}

/// An executor after one pass of `desired` made as `apply` makes it: every status written.
fn after_a_first_pass(sim: &mut Sim, desired: &[Desired]) -> Executor {
    let mut ex = Executor::default();
    pass(sim, &mut ex, desired, &ApplyOptions::default());
    ex
}

/// Moves the simulated clock by `d`, running everything due meanwhile.
fn wait(sim: &mut Sim, d: SignedDuration) {
    let until = crate::model::later(sim.now(), d);
    while sim.advance(until) {}
}

fn delete_one_pod(sim: &mut Sim) {
    let victim = sim
        .observed()
        .pods
        .iter()
        .find(|p| !p.is_terminating())
        .expect("a running pod")
        .clone();
    block_on(sim.delete_pod(&victim.namespace, &victim.name)).expect("delete");
}

fn key() -> Key {
    ("ns".to_string(), "agent".to_string())
}

#[test]
fn a_change_of_counters_only_is_written_once_it_has_lasted_the_interval() {
    let mut sim = cluster(3, "");
    let d = agent("agent:1", "");
    let opts = coalescing();
    let mut ex = after_a_first_pass(&mut sim, &d);
    let before = record(&sim)["status"].clone();
    assert!(!before["conditions"].is_null(), "{before:#}");

    delete_one_pod(&mut sim);
    // Gone after its grace period (1 s): a node without its pod.
    wait(&mut sim, SignedDuration::from_millis(1100));
    let started = sim.now();
    let acted = pass(&mut sim, &mut ex, &d, &opts);
    assert_eq!(
        acted.status_held.get(&key()),
        Some(&crate::model::later(started, SignedDuration::from_secs(1))),
        "held until a second after the difference was first seen"
    );
    assert_eq!(record(&sim)["status"], before, "nothing written yet");

    wait(&mut sim, SignedDuration::from_millis(500));
    let acted = pass(&mut sim, &mut ex, &d, &opts);
    assert!(acted.status_held.contains_key(&key()));
    assert_eq!(record(&sim)["status"], before, "still within the interval");

    // The replacement takes 5 s to start: the difference outlasts the interval.
    wait(&mut sim, SignedDuration::from_millis(500));
    let acted = pass(&mut sim, &mut ex, &d, &opts);
    assert!(acted.status_held.is_empty(), "{:?}", acted.status_held);
    let after = record(&sim)["status"].clone();
    assert_ne!(after, before, "written once due");
    assert!(
        after["conditions"]
            .to_string()
            .contains("2 of 3 nodes have an available pod"),
        "what is written is the state then: {after:#}"
    );
}

#[test]
fn counters_that_come_due_are_written_after_the_step_that_creates_a_pod() {
    let mut sim = cluster(3, "");
    let d = agent("agent:1", "");
    let opts = coalescing();
    let mut ex = after_a_first_pass(&mut sim, &d);
    delete_one_pod(&mut sim);
    wait(&mut sim, SignedDuration::from_millis(1100));
    // The replacement is created; the counters are held for a second.
    let acted = pass(&mut sim, &mut ex, &d, &opts);
    assert!(acted.status_held.contains_key(&key()));
    // Another pod goes while the first replacement starts (5 s): the counters, still
    // different from the record, come due in the pass that replaces it.
    delete_one_pod(&mut sim);
    wait(&mut sim, SignedDuration::from_millis(1100));
    let mut cluster = super::tests::Faulty::new(sim);
    let state = block_on(cluster.observe()).expect("observe");
    let a = ex.assess(&d, &state, &opts);
    let acted = block_on(ex.act(&mut cluster, &a, &state, &opts));
    assert!(acted.executed && acted.status_error.is_none());
    assert!(acted.status_held.is_empty(), "{:?}", acted.status_held);
    // As upstream's controller, which updates a DaemonSet's status after managing its
    // pods: counting them never holds up a create.
    assert_eq!(cluster.writes, ["create", "status agent"]);
    assert!(
        record(&cluster.sim)["status"]["conditions"]
            .to_string()
            .contains("1 of 3 nodes have an available pod"),
        "the counters as this pass observed them: {:#}",
        record(&cluster.sim)["status"]
    );
}

#[test]
fn a_pod_replaced_within_the_interval_costs_no_status_write() {
    replaced_within_the_interval("");
}

#[test]
fn a_pod_replaced_within_the_interval_of_a_complete_progressive_rollout_costs_no_status_write() {
    // Its phase goes from Complete to its last stage and back: churn, as the counters are.
    let record = replaced_within_the_interval("daemonsync.io/canary: '1'");
    assert_eq!(
        record["status"]["rollout"]["phase"], "Complete",
        "{record:#}"
    );
}

/// Replaces one pod of a DaemonSet (with `annotations`) whose pods start in 100 ms, passing
/// every 100 ms with a 1 s status interval; asserts the record was not written and answers it.
fn replaced_within_the_interval(annotations: &str) -> serde_json::Value {
    let mut sim = sim("seed: 3
kubelet: {startLatency: {fixed: 100ms}, terminationGrace: 0s}
nodes:
  - {name: 'n-{i}', count: 3}
");
    let d = agent("agent:1", annotations);
    sim.install(&d).expect("install");
    wait(&mut sim, SignedDuration::from_secs(1));
    let opts = coalescing();
    // The record as the rollout left it, conditions and all.
    let mut ex = after_a_first_pass(&mut sim, &d);
    let before = record(&sim);
    assert_eq!(before["status"]["numberAvailable"], 3, "{before:#}");
    delete_one_pod(&mut sim);
    for _ in 0..10 {
        pass(&mut sim, &mut ex, &d, &opts);
        wait(&mut sim, SignedDuration::from_millis(100));
    }
    let acted = pass(&mut sim, &mut ex, &d, &opts);
    assert!(acted.status_held.is_empty(), "{:?}", acted.status_held);
    let running = sim
        .observed()
        .pods
        .iter()
        .filter(|p| !p.is_terminating() && p.is_ready())
        .count();
    assert_eq!(running, 3, "the pod was replaced");
    let after = record(&sim);
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "the record was not written: {:#}",
        after["status"]
    );
    after
}

#[test]
fn a_change_beyond_the_counters_is_written_at_once() {
    let mut sim = cluster(3, "");
    let d = agent("agent:1", "");
    let mut opts = coalescing();
    let mut ex = after_a_first_pass(&mut sim, &d);
    delete_one_pod(&mut sim);
    opts.source_errors
        .insert(key(), "ds/agent.yaml: the new version is invalid".into());
    let acted = pass(&mut sim, &mut ex, &d, &opts);
    assert!(acted.status_held.is_empty(), "{:?}", acted.status_held);
    let conditions = record(&sim)["status"]["conditions"].to_string();
    assert!(
        conditions.contains("the new version is invalid"),
        "{conditions}"
    );
}

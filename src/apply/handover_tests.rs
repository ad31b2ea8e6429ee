//! Beside the built-in DaemonSet controller, on the simulated cluster (which runs it): a
//! DaemonSet it runs is blocked without a choice, taken over without a restart, given back
//! with `release`, or kept native; pods refused by admission halt only their DaemonSet.

use super::tests::{desired, run};
use super::*;
use crate::cluster::Cluster;
use crate::cluster::sim::Sim;
use crate::cluster::sim::config::SimConfig;
use crate::plan::RECORD_KIND;
use crate::plan::ownership::AUTOSCALER_DAEMONSET_POD;
use crate::plan::{Observed, Policy};
use jiff::SignedDuration;
use serde_json::Value;
use std::sync::{Arc, Mutex};

const NODES: usize = 4;

/// DaemonSet `name` in `ns` with `image`, `strategy` (YAML flow mapping) and annotations
/// (YAML flow mapping entries).
fn ds(name: &str, image: &str, strategy: &str, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: ns, annotations: {{{annotations}}}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  updateStrategy: {strategy}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: {image}}}]
"
    )
}

const ONE: &str = "{type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}";
const ADOPT: &str = "daemonsync.io/adopt: 'true'";
const NATIVE: &str = "daemonsync.io/mode: native";

/// Four workers and the namespace `ns` (labelled as given).
fn sim(ns_labels: &str) -> Sim {
    let cfg = format!(
        "seed: 3
kubelet: {{startLatency: {{uniform: [2s, 5s]}}, terminationGrace: 1s}}
nodes:
  - {{name: 'n-{{i}}', count: {NODES}}}
namespaces: [{{name: ns, labels: {{{ns_labels}}}}}]
"
    );
    Sim::new(SimConfig::parse(&cfg).expect("sim config")).expect("sim")
}

/// A cluster where the built-in controller runs `agent:1` (maxUnavailable 1) on every node.
fn builtin_agent() -> Sim {
    let mut sim = sim("");
    sim.install_builtin(&desired(&ds("agent", "agent:1", ONE, "")))
        .unwrap();
    assert_eq!(pods(&sim, "agent").len(), NODES);
    sim
}

/// The pods of `app` that are not terminating, as the API server stores them.
fn pods(sim: &Sim, app: &str) -> Vec<Value> {
    sim.world()
        .store
        .list("/pods", Some("ns"))
        .map(|e| (*e.object()).clone())
        .filter(|p| {
            p["metadata"]["labels"]["app"] == app && !p["metadata"]["deletionTimestamp"].is_string()
        })
        .collect()
}

/// node → uid of the `app` pod on it.
fn uids(sim: &Sim, app: &str) -> BTreeMap<String, String> {
    pods(sim, app)
        .iter()
        .map(|p| {
            (
                p["spec"]["nodeName"].as_str().unwrap_or_default().into(),
                p["metadata"]["uid"].as_str().unwrap_or_default().into(),
            )
        })
        .collect()
}

/// The kind of each `app` pod's controller.
fn controllers(sim: &Sim, app: &str) -> BTreeSet<String> {
    pods(sim, app)
        .iter()
        .map(|p| {
            p["metadata"]["ownerReferences"]
                .as_array()
                .and_then(|o| o.iter().find(|o| o["controller"] == true))
                .map_or("none".into(), |o| o["kind"].as_str().unwrap().into())
        })
        .collect()
}

fn images(sim: &Sim, app: &str) -> BTreeSet<String> {
    pods(sim, app)
        .iter()
        .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap().into())
        .collect()
}

fn builtin_daemonset(sim: &Sim, name: &str) -> Option<Value> {
    sim.world()
        .store
        .get("apps/daemonsets", "ns", name)
        .map(|e| (*e.object()).clone())
}

/// The most nodes ever without an available `app` pod (whoever owns it), over every change.
fn worst_unavailable(sim: &mut Sim, app: &'static str) -> Arc<Mutex<usize>> {
    let worst = Arc::new(Mutex::new(0));
    let w = worst.clone();
    sim.set_probe(Box::new(move |observed: &Observed, now| {
        let served: BTreeSet<&str> = observed
            .pods
            .iter()
            .filter(|p| p.labels.get("app").map(String::as_str) == Some(app))
            .filter(|p| !p.is_terminating() && p.is_available(0, now))
            .filter_map(|p| p.node_name.as_deref())
            .collect();
        let down = observed
            .nodes
            .iter()
            .filter(|n| !served.contains(n.name.as_str()))
            .count();
        let mut w = w.lock().unwrap();
        *w = (*w).max(down);
    }));
    worst
}

fn count(r: &ApplyReport, verb: &str) -> usize {
    r.writes.iter().filter(|w| w.verb == verb).count()
}

#[test]
fn a_builtin_daemonset_without_a_choice_is_blocked_and_the_others_converge() {
    let mut sim = builtin_agent();
    let before = uids(&sim, "agent");
    let source = format!(
        "{}---\n{}",
        ds("agent", "agent:2", ONE, ""),
        ds("logs", "logs:1", ONE, "")
    );
    let desired = desired(&source);
    let plan = crate::plan::plan(&desired, &sim.observed(), &Policy::default(), sim.now());
    let agent = plan.daemonsets.iter().find(|d| d.name == "agent").unwrap();
    let risk = agent
        .risks
        .iter()
        .find(|r| r.kind == crate::plan::RiskKind::BuiltinController)
        .expect("a builtin-controller risk");
    assert!(
        risk.message.contains("daemonsync.io/adopt") && risk.message.contains("daemonsync.io/mode"),
        "both choices are spelled out: {}",
        risk.message
    );

    let r = run(&mut sim, &desired, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Blocked);
    assert_eq!(
        r.blocked
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["ns/agent"]
    );
    assert!(
        r.writes.iter().all(|w| w.daemonset == "ns/logs"),
        "{:?}",
        r.writes
    );
    assert_eq!(uids(&sim, "agent"), before, "no agent pod was touched");
    assert_eq!(images(&sim, "agent"), BTreeSet::from(["agent:1".into()]));
    assert!(builtin_daemonset(&sim, "agent").is_some());
    assert_eq!(pods(&sim, "logs").len(), NODES, "logs converged");
    let state = block_on(sim.observe()).unwrap();
    assert!(
        state.records.iter().all(|r| r.name != "agent"),
        "no record for a blocked DaemonSet"
    );
}

#[test]
fn a_take_over_of_git_s_template_keeps_every_pod() {
    let mut sim = builtin_agent();
    let before = uids(&sim, "agent");
    let desired = desired(&ds("agent", "agent:1", ONE, ADOPT));
    let plan = crate::plan::plan(&desired, &sim.observed(), &Policy::default(), sim.now());
    let own = &plan.daemonsets[0].ownership;
    assert_eq!((own.kept, own.replaced), (NODES, 0), "{own:?}");

    let r = run(&mut sim, &desired, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.writes);
    assert_eq!(
        (r.creates, r.deletes),
        (0, 0),
        "zero restarts: {:#?}",
        r.writes
    );
    assert_eq!(count(&r, "take-over"), 1);
    assert_eq!(count(&r, "claim"), NODES);
    assert_eq!(uids(&sim, "agent"), before, "the same pods");
    assert!(
        builtin_daemonset(&sim, "agent").is_none(),
        "the apps/v1 DaemonSet is gone"
    );
    assert_eq!(
        controllers(&sim, "agent"),
        BTreeSet::from([RECORD_KIND.into()])
    );
    for p in pods(&sim, "agent") {
        assert_eq!(
            p["metadata"]["annotations"][AUTOSCALER_DAEMONSET_POD],
            "true"
        );
    }
    // Nothing left to do: a second apply writes nothing.
    let again = run(&mut sim, &desired, &ApplyOptions::default());
    assert!(again.writes.is_empty(), "{:?}", again.writes);
}

#[test]
fn a_take_over_with_a_new_image_deletes_each_pod_once_within_the_budget() {
    let mut sim = builtin_agent();
    let desired = desired(&ds("agent", "agent:2", ONE, ADOPT));
    let plan = crate::plan::plan(&desired, &sim.observed(), &Policy::default(), sim.now());
    let own = &plan.daemonsets[0].ownership;
    assert_eq!((own.kept, own.replaced), (0, NODES), "{own:?}");
    let worst = worst_unavailable(&mut sim, "agent");

    let r = run(&mut sim, &desired, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.writes);
    assert_eq!(
        (r.creates, r.deletes),
        (NODES, NODES),
        "one delete per node"
    );
    let deleted: BTreeSet<&str> = r
        .writes
        .iter()
        .filter(|w| w.verb == "delete")
        .map(|w| w.node.as_str())
        .collect();
    assert_eq!(deleted.len(), NODES, "each node once");
    assert_eq!(images(&sim, "agent"), BTreeSet::from(["agent:2".into()]));
    assert_eq!(*worst.lock().unwrap(), 1, "maxUnavailable 1, and used");
    assert!(builtin_daemonset(&sim, "agent").is_none());
}

#[test]
fn a_take_over_killed_at_every_write_completes_on_the_next_run() {
    let desired = desired(&ds("agent", "agent:1", ONE, ADOPT));
    // Handover writes: the take-over and one claim per pod.
    for kill_after in 1..=NODES {
        let mut sim = builtin_agent();
        let before = uids(&sim, "agent");
        let opts = ApplyOptions {
            stop_after_writes: Some(kill_after),
            ..ApplyOptions::default()
        };
        let first = run(&mut sim, &desired, &opts);
        assert_eq!(
            first.outcome,
            Outcome::Interrupted,
            "killed after {kill_after}"
        );
        assert_eq!(first.writes.len(), kill_after);
        sim.advance(sim.now() + SignedDuration::from_secs(3));
        let r = run(&mut sim, &desired, &ApplyOptions::default());
        assert_eq!(r.outcome, Outcome::Converged, "killed after {kill_after}");
        assert_eq!((r.creates, r.deletes), (0, 0), "killed after {kill_after}");
        assert_eq!(uids(&sim, "agent"), before, "killed after {kill_after}");
        assert_eq!(
            controllers(&sim, "agent"),
            BTreeSet::from([RECORD_KIND.into()])
        );
        assert!(builtin_daemonset(&sim, "agent").is_none());
    }
}

/// Waits (in virtual time) for the built-in controller's status of `name`.
fn settle(sim: &mut Sim) {
    let end = sim.now() + SignedDuration::from_mins(2);
    while sim.advance(end) {}
}

#[test]
fn release_gives_the_pods_back_to_the_builtin_controller_unrestarted() {
    let mut sim = builtin_agent();
    let desired = desired(&ds("agent", "agent:1", ONE, ADOPT));
    assert_eq!(
        run(&mut sim, &desired, &ApplyOptions::default()).outcome,
        Outcome::Converged
    );
    let before = uids(&sim, "agent");
    assert!(builtin_daemonset(&sim, "agent").is_none());

    let released =
        block_on(release(&mut sim, "ns", "agent", &ReleaseOptions::default())).expect("released");
    assert_eq!(released.pods.len(), NODES);
    assert_eq!(released.strategy, "RollingUpdate");
    settle(&mut sim);
    assert_eq!(uids(&sim, "agent"), before, "no pod restarted");
    assert_eq!(
        controllers(&sim, "agent"),
        BTreeSet::from(["DaemonSet".into()])
    );
    let live = builtin_daemonset(&sim, "agent").expect("the apps/v1 DaemonSet is back");
    assert_eq!(live["spec"]["updateStrategy"]["type"], "RollingUpdate");
    assert_eq!(
        live["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"],
        1
    );
    let annotations = live["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(
        annotations.keys().all(|k| !k.starts_with("daemonsync.io/")),
        "{annotations:?}"
    );
    // `kubectl rollout status`: observed generation current, every pod updated and available.
    let status = &live["status"];
    assert_eq!(status["observedGeneration"], live["metadata"]["generation"]);
    assert_eq!(status["desiredNumberScheduled"], NODES);
    assert_eq!(status["updatedNumberScheduled"], NODES);
    assert_eq!(status["numberAvailable"], NODES);
    let state = block_on(sim.observe()).unwrap();
    assert!(state.records.is_empty(), "the record is deleted");
    // Still in the source without adopt: blocked, never taken back silently.
    let plain = self::desired(&ds("agent", "agent:1", ONE, ""));
    let r = run(&mut sim, &plain, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Blocked);
    assert!(r.writes.is_empty());
}

#[test]
fn native_mode_rolls_node_by_node_and_the_builtin_controller_creates_the_pods() {
    let mut sim = builtin_agent();
    let desired = desired(&ds("agent", "agent:2", ONE, NATIVE));
    let plan = crate::plan::plan(&desired, &sim.observed(), &Policy::default(), sim.now());
    assert_eq!(plan.daemonsets[0].ownership.mode, crate::plan::Mode::Native);
    let worst = worst_unavailable(&mut sim, "agent");

    let r = run(&mut sim, &desired, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.writes);
    assert_eq!(r.creates, 0, "the built-in controller creates the pods");
    assert_eq!(r.deletes, NODES);
    assert_eq!(images(&sim, "agent"), BTreeSet::from(["agent:2".into()]));
    assert_eq!(
        controllers(&sim, "agent"),
        BTreeSet::from(["DaemonSet".into()])
    );
    assert_eq!(*worst.lock().unwrap(), 1, "never two nodes unavailable");
    let live = builtin_daemonset(&sim, "agent").unwrap();
    assert_eq!(live["spec"]["updateStrategy"]["type"], "OnDelete");
    let state = block_on(sim.observe()).unwrap();
    let record = state.records.iter().find(|r| r.name == "agent").unwrap();
    let counters = &record.status.as_ref().unwrap().counters;
    assert_eq!(counters.updated_number_scheduled, NODES as i32);
}

#[test]
fn a_canary_pause_holds_in_native_mode() {
    let mut sim = builtin_agent();
    let canary = format!("{NATIVE}, daemonsync.io/canary: '1', daemonsync.io/canary-pause: manual");
    let desired = desired(&ds("agent", "agent:2", ONE, &canary));
    let r = run(&mut sim, &desired, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::AwaitingPromotion, "{:?}", r.writes);
    assert_eq!(r.deletes, 1);
    // The built-in controller replaces no other pod while the rollout waits.
    sim.advance(sim.now() + SignedDuration::from_mins(10));
    let on_new = pods(&sim, "agent")
        .iter()
        .filter(|p| p["spec"]["containers"][0]["image"] == "agent:2")
        .count();
    assert_eq!(on_new, 1);
    let revision = r.plan.daemonsets[0].revision.clone();
    sim.promote("ns", "agent", &revision, 1);
    let r = run(&mut sim, &desired, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.writes);
    assert_eq!(images(&sim, "agent"), BTreeSet::from(["agent:2".into()]));
}

#[test]
fn a_privileged_daemonset_in_a_baseline_namespace_halts_alone() {
    let mut sim = sim("pod-security.kubernetes.io/enforce: baseline");
    let privileged = ds("probe", "probe:1", ONE, "").replace(
        "containers: [{name: c, image: probe:1}]",
        "containers: [{name: c, image: probe:1, securityContext: {privileged: true}}]",
    );
    let source = format!("{privileged}---\n{}", ds("logs", "logs:1", ONE, ""));
    let desired = desired(&source);
    let plan = crate::plan::plan(&desired, &sim.observed(), &Policy::default(), sim.now());
    let probe = plan.daemonsets.iter().find(|d| d.name == "probe").unwrap();
    let risk = probe
        .risks
        .iter()
        .find(|r| r.kind == crate::plan::RiskKind::PodSecurity)
        .expect("a pod-security risk");
    assert!(risk.message.contains("privileged"), "{}", risk.message);

    let r = run(&mut sim, &desired, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Halted);
    let (key, why) = &r.refused[0];
    assert_eq!(key, "ns/probe");
    assert!(
        why.contains("violates PodSecurity \"baseline:latest\""),
        "{why}"
    );
    assert!(why.contains("privileged"), "{why}");
    assert!(pods(&sim, "probe").is_empty());
    assert_eq!(
        pods(&sim, "logs").len(),
        NODES,
        "the other DaemonSet converged"
    );
}

#[test]
fn owned_pods_carry_the_autoscaler_annotation_and_managed_daemonsets_keep_a_pod_template() {
    let mut sim = sim("");
    let desired = desired(&ds("logs", "logs:1", ONE, ""));
    assert_eq!(
        run(&mut sim, &desired, &ApplyOptions::default()).outcome,
        Outcome::Converged
    );
    let logs = pods(&sim, "logs");
    assert_eq!(logs.len(), NODES);
    for p in &logs {
        assert_eq!(
            p["metadata"]["annotations"][AUTOSCALER_DAEMONSET_POD],
            "true"
        );
    }
    let template = sim
        .world()
        .store
        .get("/podtemplates", "ns", "logs")
        .expect("a PodTemplate for logs");
    assert_eq!(
        template.object()["metadata"]["labels"][AUTOSCALER_DAEMONSET_POD],
        "true"
    );
    assert_eq!(
        template.object()["template"]["spec"]["containers"][0]["image"],
        "logs:1"
    );
}

#[test]
fn a_release_killed_at_every_write_completes_on_the_next_run() {
    // The writes: pause, a release per pod, the DaemonSet, a relabel per pod, its own
    // strategy, the record's deletion.
    for kill_after in 1..=(2 * NODES + 3) {
        let mut sim = builtin_agent();
        let desired = desired(&ds("agent", "agent:1", ONE, ADOPT));
        run(&mut sim, &desired, &ApplyOptions::default());
        let before = uids(&sim, "agent");
        let killed = ReleaseOptions {
            stop_after_writes: Some(kill_after),
            ..ReleaseOptions::default()
        };
        match block_on(release(&mut sim, "ns", "agent", &killed)) {
            Err(ReleaseError::Interrupted(n)) => assert_eq!(n, kill_after),
            other => panic!("killed after {kill_after}: {other:?}"),
        }
        sim.advance(sim.now() + SignedDuration::from_secs(3));
        let released = block_on(release(&mut sim, "ns", "agent", &ReleaseOptions::default()))
            .unwrap_or_else(|e| panic!("killed after {kill_after}: {e}"));
        settle(&mut sim);
        assert_eq!(released.pods.len(), NODES, "killed after {kill_after}");
        assert_eq!(uids(&sim, "agent"), before, "killed after {kill_after}");
        let live = builtin_daemonset(&sim, "agent").unwrap();
        assert_eq!(live["spec"]["updateStrategy"]["type"], "RollingUpdate");
        assert_eq!(live["status"]["updatedNumberScheduled"], NODES);
        assert!(block_on(sim.observe()).unwrap().records.is_empty());
    }
}

//! The executor on the simulated cluster: rollouts, churn, failures, restarts, efficiency.

use super::*;
use crate::cluster::sim::Sim;
use crate::cluster::sim::config::SimConfig;
use crate::cluster::{Cluster, Event, SnapshotCluster};
use crate::manifest::{LoadOptions, load_str};
use crate::model::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::plan::{DaemonSetSpec, Observed, Policy};
use jiff::SignedDuration;
use std::sync::{Arc, Mutex};

/// A DaemonSet `name` in namespace `ns` with `image`, the given `updateStrategy` (YAML flow
/// mapping) and extra pod spec lines.
pub(super) fn ds_yaml(name: &str, image: &str, strategy: &str, pod_extra: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: ns}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  updateStrategy: {strategy}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: {image}}}]
{pod_extra}"
    )
}

pub(super) fn desired(yaml: &str) -> Vec<Desired> {
    let mut m = load_str("test.yaml", yaml, &LoadOptions::default()).expect("manifest loads");
    crate::manifest::versioning::version(&mut m);
    assert!(m.invalid.is_empty(), "{:?}", m.invalid);
    m.daemonsets
        .into_iter()
        .map(|d| Desired {
            source: d.source.to_string(),
            daemonset: d.daemonset,
            config: d.config,
        })
        .collect()
}

/// A simulated cluster with the namespace `ns` the test DaemonSets live in (as on a real
/// cluster, a DaemonSet cannot be applied to a namespace that does not exist).
pub(super) fn sim(cfg: &str) -> Sim {
    let cfg = format!("{cfg}\nnamespaces: [{{name: ns}}]\n");
    Sim::new(SimConfig::parse(&cfg).expect("sim config")).expect("sim")
}

const UNAVAILABLE_1: &str = "{type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}";

pub(super) fn rolling(n: i32) -> String {
    format!("{{type: RollingUpdate, rollingUpdate: {{maxUnavailable: {n}}}}}")
}

fn surge(n: i32) -> String {
    format!("{{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 0, maxSurge: {n}}}}}")
}

pub(super) fn fleet(nodes: usize, extra: &str) -> String {
    format!(
        "seed: 1
kubelet: {{startLatency: {{uniform: [2s, 6s]}}, terminationGrace: 1s}}
nodes:
  - {{name: 'n-{{i}}', count: {nodes}, labels: {{role: worker}}}}
{extra}"
    )
}

pub(super) fn run(sim: &mut Sim, desired: &[Desired], opts: &ApplyOptions) -> ApplyReport {
    block_on(apply(sim, desired, opts, &mut NoProgress)).expect("apply")
}

/// Revision hashes of the pods of DaemonSet `name` that are not terminating, per node.
pub(super) fn revisions(sim: &Sim, name: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in sim.observed().pods {
        if !p.is_terminating() && p.controller.as_ref().is_some_and(|c| c.name == name) {
            out.entry(p.node_name.as_deref().unwrap_or_default().to_string())
                .or_default()
                .push(p.revision_hash().unwrap_or_default().to_string());
        }
    }
    out
}

pub(super) fn revision_of(d: &[Desired]) -> String {
    DaemonSetSpec::compile(&d[0].daemonset).revision
}

/// Worst values seen by the invariant probe.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Worst {
    pub(super) unavailable: i32,
    pub(super) surge: usize,
}

/// Installs a probe that tracks, after every change of the sim, the DaemonSet's unavailable
/// desired nodes (the planner's count) and nodes running more than one live pod.
pub(super) fn probe(sim: &mut Sim, desired: &[Desired]) -> Arc<Mutex<Worst>> {
    let worst = Arc::new(Mutex::new(Worst::default()));
    let w = worst.clone();
    let desired = desired.to_vec();
    sim.set_probe(Box::new(move |observed: &Observed, now| {
        let p = plan::plan(&desired, observed, &Policy::default(), now);
        let mut w = w.lock().unwrap();
        for ds in &p.daemonsets {
            w.unavailable = w.unavailable.max(ds.status.number_unavailable);
            let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
            for pod in &observed.pods {
                if !pod.is_terminating()
                    && pod.controller.as_ref().is_some_and(|c| c.name == ds.name)
                {
                    *per_node
                        .entry(pod.target_node.as_deref().unwrap_or(""))
                        .or_default() += 1;
                }
            }
            w.surge = w.surge.max(per_node.values().filter(|&&n| n > 1).count());
        }
    }));
    worst
}

#[test]
fn max_unavailable_rollout_converges_within_budget() {
    let old = desired(&ds_yaml("agent", "agent:1", &rolling(2), ""));
    let new = desired(&ds_yaml("agent", "agent:2", &rolling(2), ""));
    let mut sim = sim(&fleet(10, ""));
    sim.install(&old).unwrap();
    let worst = probe(&mut sim, &new);
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!((r.creates, r.deletes), (10, 10));
    let rev = revision_of(&new);
    let revs = revisions(&sim, "agent");
    assert_eq!(revs.len(), 10);
    assert!(
        revs.values().all(|v| v == std::slice::from_ref(&rev)),
        "{revs:?}"
    );
    let w = *worst.lock().unwrap();
    assert!(w.unavailable <= 2, "{w:?}");
    assert!(w.unavailable > 0, "the budget was used");
    assert!(r.elapsed() > SignedDuration::ZERO);
}

/// The reasons of the events emitted so far, in order, without repeats in a row.
fn event_reasons(sim: &Sim) -> Vec<String> {
    let mut reasons: Vec<String> = sim.events().iter().map(|(_, e)| e.reason.clone()).collect();
    reasons.dedup();
    reasons
}

#[test]
fn a_rollout_reports_its_writes_and_its_completion_as_events() {
    let old = desired(&ds_yaml("agent", "agent:1", &rolling(2), ""));
    let new = desired(&ds_yaml("agent", "agent:2", &rolling(2), ""));
    let mut sim = sim(&fleet(4, ""));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    let reasons = event_reasons(&sim);
    assert_eq!(
        reasons.first().map(String::as_str),
        Some("SuccessfulDelete")
    );
    assert_eq!(reasons.last().map(String::as_str), Some("RolloutComplete"));
    assert!(
        reasons.contains(&"SuccessfulCreate".to_string()),
        "{reasons:?}"
    );
    let created = sim
        .events()
        .iter()
        .find(|(_, e)| e.reason == "SuccessfulCreate")
        .map(|(_, e)| e.message.clone())
        .unwrap();
    assert!(created.starts_with("created pod(s): agent-"), "{created}");
}

#[test]
fn an_on_delete_daemonset_left_on_its_old_revision_is_not_reported_complete() {
    let strategy = "{type: OnDelete}";
    let new = desired(&ds_yaml("drv", "drv:2", strategy, ""));
    let mut sim = sim(&fleet(2, ""));
    sim.install(&desired(&ds_yaml("drv", "drv:1", strategy, "")))
        .unwrap();
    let victim = sim.observed().pods.into_iter().next().unwrap();
    block_on(sim.delete_pod(&victim.namespace, &victim.name)).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(r.creates, 1);
    let reasons = event_reasons(&sim);
    assert_eq!(
        reasons,
        ["SuccessfulCreate"],
        "one node keeps the old revision"
    );
}

#[test]
fn max_surge_keeps_the_old_pod_until_its_replacement_is_available() {
    let old = desired(&ds_yaml("cni", "cni:1", &surge(2), ""));
    let new = desired(&ds_yaml("cni", "cni:2", &surge(2), ""));
    let mut sim = sim(&fleet(8, ""));
    sim.install(&old).unwrap();
    let worst = probe(&mut sim, &new);
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    let w = *worst.lock().unwrap();
    assert_eq!(w.unavailable, 0, "no node is ever without an available pod");
    assert!(w.surge <= 2 && w.surge > 0, "{w:?}");
    let rev = revision_of(&new);
    assert!(
        revisions(&sim, "cni")
            .values()
            .all(|v| v == std::slice::from_ref(&rev))
    );
}

#[test]
fn on_delete_replaces_only_deleted_pods() {
    let strategy = "{type: OnDelete}";
    let old = desired(&ds_yaml("drv", "drv:1", strategy, ""));
    let new = desired(&ds_yaml("drv", "drv:2", strategy, ""));
    let mut sim = sim(&fleet(4, ""));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!((r.creates, r.deletes), (0, 0));
    // Someone deletes the pod on n-2 (draining it): that node, and only it, gets the new one.
    let victim = sim
        .observed()
        .pods
        .into_iter()
        .find(|p| p.node_name.as_deref() == Some("n-2"))
        .unwrap();
    block_on(sim.delete_pod(&victim.namespace, &victim.name)).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(r.creates, 1);
    let revs = revisions(&sim, "drv");
    let (new_rev, old_rev) = (revision_of(&new), revision_of(&old));
    assert_eq!(revs["n-2"], vec![new_rev]);
    for n in ["n-1", "n-3", "n-4"] {
        assert_eq!(revs[n], vec![old_rev.clone()], "{n}");
    }
}

#[test]
fn nodes_joining_mid_rollout_get_the_new_revision() {
    let old = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, ""));
    let new = desired(&ds_yaml("agent", "agent:2", UNAVAILABLE_1, ""));
    let churn = "churn:
  - {at: 7s, add: {name: 'late-{i}', count: 3, labels: {role: worker}}}";
    let mut sim = sim(&fleet(6, churn));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    let revs = revisions(&sim, "agent");
    assert_eq!(revs.len(), 9);
    let rev = revision_of(&new);
    for n in ["late-1", "late-2", "late-3"] {
        assert_eq!(revs[n], vec![rev.clone()], "{n}");
    }
}

#[test]
fn a_node_removed_mid_rollout_loses_its_pods_and_the_rollout_finishes() {
    let old = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, ""));
    let new = desired(&ds_yaml("agent", "agent:2", UNAVAILABLE_1, ""));
    let churn = "churn:
  - {at: 5s, remove: n-5}";
    let mut sim = sim(&fleet(6, churn));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    let revs = revisions(&sim, "agent");
    assert!(!revs.contains_key("n-5"));
    assert_eq!(revs.len(), 5);
    assert_eq!(r.plan.daemonsets[0].status.desired_number_scheduled, 5);
}

#[test]
fn a_relabelled_node_loses_its_pod() {
    let extra = "      nodeSelector: {role: worker}";
    let d = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, extra));
    let churn = "churn:
  - {at: 1m, label: {node: n-3, labels: {role: null}}}";
    let mut sim = sim(&fleet(4, churn));
    let r = run(&mut sim, &d, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(revisions(&sim, "agent").len(), 4);
    // The relabelling happens after the install converged: apply again once it has.
    sim.advance(sim.start() + SignedDuration::from_mins(2));
    let r = run(&mut sim, &d, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(r.deletes, 1);
    let revs = revisions(&sim, "agent");
    assert!(!revs.contains_key("n-3"), "{revs:?}");
    assert_eq!(revs.len(), 3);
}

#[test]
fn a_pod_that_never_becomes_ready_halts_at_the_deadline_naming_the_nodes() {
    let old = desired(&ds_yaml("agent", "agent:1", &rolling(2), ""));
    let new = desired(&ds_yaml("agent", "agent:2-huge", &rolling(2), ""));
    // No failure to see: the new image takes ten minutes to pull, so its pods wait in
    // ContainerCreating until the deadline says enough.
    let mut sim = sim("seed: 1
kubelet: {startLatency: {uniform: [2s, 6s]}, pullLatency: {fixed: 10m}, terminationGrace: 1s}
nodes:
  - {name: 'n-{i}', count: 10, labels: {role: worker}}");
    sim.install(&old).unwrap();
    let opts = ApplyOptions {
        progress_deadline: SignedDuration::from_mins(2),
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &new, &opts);
    assert_eq!(r.outcome, Outcome::Halted);
    assert_eq!(r.failed.len(), 2, "{:?}", r.failed);
    assert_eq!(
        r.failed.iter().map(|f| f.node.as_str()).collect::<Vec<_>>(),
        ["n-01", "n-02"]
    );
    assert!(
        r.failed.iter().all(|f| f.reason == "not ready after 2m"),
        "{:?}",
        r.failed
    );
    assert_eq!(r.creates, 2, "it did not march on");
    let waited = r.elapsed();
    assert!(
        waited >= SignedDuration::from_mins(2) && waited < SignedDuration::from_mins(3),
        "{waited:?}"
    );
    // The other eight nodes still run the old, available version.
    let old_rev = revision_of(&old);
    let on_old = revisions(&sim, "agent")
        .values()
        .filter(|v| *v == std::slice::from_ref(&old_rev))
        .count();
    assert_eq!(on_old, 8);
}

/// Pod spec lines of a DaemonSet that tolerates every taint, as CNI and node agents do: it
/// runs on NotReady nodes too (others do not: the node lifecycle controller's
/// `node.kubernetes.io/not-ready:NoSchedule` taint makes such a node ineligible, as upstream).
const TOLERATES_ALL: &str = "      tolerations: [{operator: Exists}]";

#[test]
fn a_not_ready_node_is_a_node_problem_and_does_not_block_the_rest() {
    let old = desired(&ds_yaml("agent", "agent:1", &rolling(2), TOLERATES_ALL));
    let new = desired(&ds_yaml("agent", "agent:2", &rolling(2), TOLERATES_ALL));
    let cfg = "seed: 3
kubelet: {startLatency: {fixed: 3s}, terminationGrace: 1s}
nodes:
  - {name: 'n-{i}', count: 8}
  - {name: sick, ready: false}
";
    let mut sim = sim(cfg);
    sim.install(&old).unwrap();
    let opts = ApplyOptions {
        progress_deadline: SignedDuration::from_secs(30),
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &new, &opts);
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.failed);
    assert!(r.failed.is_empty());
    assert_eq!(r.node_problems.len(), 1);
    assert_eq!(r.node_problems[0].node, "sick");
    let rev = revision_of(&new);
    let revs = revisions(&sim, "agent");
    for i in 1..=8 {
        assert_eq!(revs[&format!("n-{i}")], vec![rev.clone()]);
    }
}

/// Restarting a killed executor: random stop points over 50 seeds, each run to convergence
/// by fresh executors on the same sim; the probe checks the budgets after every change.
#[test]
fn killed_and_restarted_executors_never_exceed_the_budgets() {
    for seed in 0..50u64 {
        let surge_mode = seed % 2 == 1;
        let strategy = if surge_mode { surge(2) } else { rolling(3) };
        let old = desired(&ds_yaml("agent", "agent:1", &strategy, ""));
        let new = desired(&ds_yaml("agent", "agent:2", &strategy, ""));
        let cfg = format!(
            "seed: {seed}
kubelet: {{startLatency: {{uniform: [1s, 9s]}}, terminationGrace: 2s}}
nodes:
  - {{name: 'n-{{i}}', count: 12}}
"
        );
        let mut sim = sim(&cfg);
        sim.install(&old).unwrap();
        let worst = probe(&mut sim, &new);
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut runs = 0;
        loop {
            runs += 1;
            assert!(runs < 500, "seed {seed}: no convergence");
            let opts = ApplyOptions {
                stop_after_writes: Some(1 + (next() % 5) as usize),
                ..ApplyOptions::default()
            };
            let r = run(&mut sim, &new, &opts);
            match r.outcome {
                Outcome::Converged => break,
                Outcome::Interrupted => {
                    // Time passes while the executor restarts.
                    let pause = SignedDuration::from_millis((next() % 4000) as i64);
                    sim.advance(sim.now() + pause);
                }
                other => panic!("seed {seed}: {other:?}"),
            }
        }
        assert!(
            runs > 3,
            "seed {seed}: the executor was really stopped ({runs} runs)"
        );
        let w = *worst.lock().unwrap();
        if surge_mode {
            assert_eq!(w.unavailable, 0, "seed {seed}: {w:?}");
            assert!(w.surge <= 2, "seed {seed}: {w:?}");
        } else {
            assert!(w.unavailable <= 3, "seed {seed}: {w:?}");
            assert_eq!(w.surge, 0, "seed {seed}: {w:?}");
        }
        let rev = revision_of(&new);
        assert!(
            revisions(&sim, "agent")
                .values()
                .all(|v| v == std::slice::from_ref(&rev)),
            "seed {seed}"
        );
    }
}

/// Lower bound of a maxUnavailable rollout with a fixed start latency: every wave deletes
/// `budget` old pods, waits the termination grace, creates their replacements and waits the
/// start latency, so no schedule can beat ceil(nodes / budget) × (grace + latency).
fn lower_bound(nodes: u64, budget: u64, latency: u64, grace: u64) -> SignedDuration {
    SignedDuration::from_secs((nodes.div_ceil(budget) * (latency + grace)) as i64)
}

/// Rolls `nodes` nodes with `strategy` and a fixed 5 s start latency, 2 s grace; returns the
/// simulated time and the number of steps.
fn rollout_time(nodes: usize, strategy: &str) -> (SignedDuration, usize) {
    let old = desired(&ds_yaml("agent", "agent:1", strategy, ""));
    let new = desired(&ds_yaml("agent", "agent:2", strategy, ""));
    let cfg = format!(
        "seed: 9
kubelet: {{startLatency: {{fixed: 5s}}, terminationGrace: 2s}}
nodes:
  - {{name: 'n-{{i}}', count: {nodes}}}
"
    );
    let mut sim = sim(&cfg);
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    (r.elapsed(), r.steps)
}

#[test]
fn a_thousand_node_rollout_is_within_five_percent_of_the_lower_bound() {
    for budget in [100, 250] {
        let (took, steps) = rollout_time(1000, &rolling(budget));
        let bound = lower_bound(1000, budget as u64, 5, 2);
        let ratio = took.as_secs_f64() / bound.as_secs_f64();
        eprintln!(
            "1000 nodes, maxUnavailable {budget}: {took:#} simulated in {steps} steps, \
             bound {bound:#}, ratio {ratio:.3}"
        );
        assert!(ratio <= 1.05, "{took:#} vs bound {bound:#}");
    }
    // maxSurge: each wave starts `surge` new pods beside the old ones and deletes the old
    // ones once the new are available, so the bound is ceil(nodes / surge) × latency.
    let (took, steps) = rollout_time(1000, &surge(100));
    let bound = SignedDuration::from_secs(10 * 5);
    let ratio = took.as_secs_f64() / bound.as_secs_f64();
    eprintln!(
        "1000 nodes, maxSurge 100: {took:#} simulated in {steps} steps, bound {bound:#}, \
         ratio {ratio:.3}"
    );
    assert!(ratio <= 1.05, "{took:#} vs bound {bound:#}");
}

#[test]
fn dry_run_writes_nothing() {
    let old = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, ""));
    let new = desired(&ds_yaml("agent", "agent:2", UNAVAILABLE_1, ""));
    let mut sim = sim(&fleet(3, ""));
    sim.install(&old).unwrap();
    let opts = ApplyOptions {
        dry_run: true,
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &new, &opts);
    assert_eq!(r.outcome, Outcome::DryRun);
    assert_eq!(sim.writes(), 0);
    assert!(r.plan.has_changes());
}

#[test]
fn a_snapshot_refuses_writes_but_allows_a_dry_run() {
    let new = desired(&ds_yaml("agent", "agent:2", UNAVAILABLE_1, ""));
    let observed = sim(&fleet(2, "")).observed();
    let mut snap = SnapshotCluster::new(observed, crate::cluster::sim::default_start());
    let err = block_on(apply(
        &mut snap,
        &new,
        &ApplyOptions::default(),
        &mut NoProgress,
    ))
    .unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    let opts = ApplyOptions {
        dry_run: true,
        ..ApplyOptions::default()
    };
    let r = block_on(apply(&mut snap, &new, &opts, &mut NoProgress)).unwrap();
    assert_eq!(r.outcome, Outcome::DryRun);
    assert_eq!(r.plan.daemonsets[0].step.create.len(), 2);
}

fn two_orphans() -> (Sim, Vec<Desired>) {
    let keep = desired(&ds_yaml("keep", "keep:1", UNAVAILABLE_1, ""));
    let gone_a = desired(&ds_yaml("gone-a", "a:1", UNAVAILABLE_1, ""));
    let gone_b = desired(&ds_yaml("gone-b", "b:1", UNAVAILABLE_1, ""));
    let mut sim = sim(&fleet(3, ""));
    for d in [&keep, &gone_a, &gone_b] {
        sim.install(d).unwrap();
    }
    (sim, keep)
}

#[test]
fn removed_daemonsets_are_pruned_only_when_asked() {
    let (mut sim, keep) = two_orphans();
    let r = run(&mut sim, &keep, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(r.deletes, 0);
    assert_eq!(
        r.orphans
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["gone-a", "gone-b"]
    );
    assert_eq!(revisions(&sim, "gone-a").len(), 3);

    let prune = ApplyOptions {
        prune: true,
        ..ApplyOptions::default()
    };
    let err = block_on(apply(&mut sim, &keep, &prune, &mut NoProgress)).unwrap_err();
    assert!(
        matches!(err, ApplyError::MassPrune(ref v) if v.len() == 2),
        "{err}"
    );
    assert_eq!(sim.writes(), 0);

    let mass = ApplyOptions {
        allow_mass_prune: true,
        ..prune.clone()
    };
    let r = run(&mut sim, &keep, &mass);
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(r.deletes, 6);
    assert!(revisions(&sim, "gone-a").is_empty());
    assert!(revisions(&sim, "gone-b").is_empty());
    assert_eq!(revisions(&sim, "keep").len(), 3);
}

#[test]
fn one_removed_daemonset_is_pruned_with_prune_alone() {
    let keep = desired(&ds_yaml("keep", "keep:1", UNAVAILABLE_1, ""));
    let gone = desired(&ds_yaml("gone", "g:1", UNAVAILABLE_1, ""));
    let mut sim = sim(&fleet(2, ""));
    sim.install(&keep).unwrap();
    sim.install(&gone).unwrap();
    let opts = ApplyOptions {
        prune: true,
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &keep, &opts);
    assert_eq!(r.outcome, Outcome::Converged);
    assert!(revisions(&sim, "gone").is_empty());
}

#[test]
fn prune_with_an_empty_source_is_refused() {
    let (mut sim, _) = two_orphans();
    let opts = ApplyOptions {
        prune: true,
        allow_mass_prune: true,
        ..ApplyOptions::default()
    };
    let err = block_on(apply(&mut sim, &[], &opts, &mut NoProgress)).unwrap_err();
    assert!(matches!(err, ApplyError::PruneWithoutSource));
    assert_eq!(sim.writes(), 0);
}

#[test]
fn created_pods_carry_the_ownership_labels() {
    let d = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, ""));
    let mut sim = sim(&fleet(2, ""));
    run(&mut sim, &d, &ApplyOptions::default());
    let rev = revision_of(&d);
    for p in sim.observed().pods {
        let c = p.controller.as_ref().unwrap();
        assert_eq!(
            (c.kind.as_str(), c.name.as_str(), c.api_version.as_str()),
            (plan::RECORD_KIND, "agent", plan::RECORD_API_VERSION)
        );
        assert_eq!(p.labels.get(MANAGED_BY_LABEL).unwrap(), MANAGED_BY_VALUE);
        assert_eq!(p.revision_hash(), Some(rev.as_str()));
        assert_eq!(p.labels.get("app").unwrap(), "agent");
    }
    assert!(!sim.events().is_empty());
}

#[test]
fn the_same_seed_gives_the_same_rollout() {
    let go = || {
        let old = desired(&ds_yaml("agent", "agent:1", &rolling(2), ""));
        let new = desired(&ds_yaml("agent", "agent:2", &rolling(2), ""));
        let mut sim = sim(&fleet(10, ""));
        sim.install(&old).unwrap();
        let r = run(&mut sim, &new, &ApplyOptions::default());
        let pods: Vec<_> = sim.observed().pods.into_iter().map(|p| p.name).collect();
        (r.elapsed(), r.steps, pods)
    };
    assert_eq!(go(), go());
}

#[test]
fn a_not_ready_node_that_uses_the_whole_budget_stops_the_rollout_with_a_node_problem() {
    let old = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, TOLERATES_ALL));
    let new = desired(&ds_yaml("agent", "agent:2", UNAVAILABLE_1, TOLERATES_ALL));
    let cfg = "nodes:
  - {name: 'n-{i}', count: 3}
  - {name: sick, ready: false}
";
    let mut sim = sim(cfg);
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    // As upstream: the NotReady node's pod is unavailable, which uses the only unit of
    // budget. The executor does not wait forever, and does not blame the new version.
    assert_eq!(r.outcome, Outcome::Stalled);
    assert!(r.failed.is_empty());
    assert_eq!(r.node_problems.len(), 1);
    assert_eq!(r.node_problems[0].node, "sick");
}

/// A simulated cluster whose pod creations and/or status writes fail (upstream's fake pod
/// control and status client with injected errors).
pub(super) struct Faulty {
    pub(super) sim: Sim,
    fail_creates: bool,
    fail_status: bool,
    /// Creates are refused with 403, as a cluster whose RBAC does not grant them.
    forbid_creates: bool,
    create_attempts: usize,
    /// Each batch of creates sent, as the DaemonSets (`app` labels) of its pods.
    batches: Vec<Vec<String>>,
    /// The writes that reached the cluster, in order: `create` for a pod, `status NAME`.
    pub(super) writes: Vec<String>,
}

impl Faulty {
    /// `sim` with no fault injected.
    pub(super) fn new(sim: Sim) -> Self {
        Faulty {
            sim,
            fail_creates: false,
            fail_status: false,
            forbid_creates: false,
            create_attempts: 0,
            batches: Vec::new(),
            writes: Vec::new(),
        }
    }
}

impl Cluster for Faulty {
    async fn observe(&mut self) -> Result<crate::cluster::ClusterState, ClusterError> {
        self.sim.observe().await
    }
    async fn create_pod(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
    ) -> Result<String, ClusterError> {
        self.create_attempts += 1;
        if self.fail_creates {
            return Err(ClusterError::Rejected("create refused".into()));
        }
        if self.forbid_creates {
            return Err(ClusterError::Forbidden("create forbidden".into()));
        }
        self.writes.push("create".to_string());
        self.sim.create_pod(pod).await
    }
    async fn create_pods(
        &mut self,
        pods: Vec<k8s_openapi::api::core::v1::Pod>,
    ) -> Vec<Result<String, ClusterError>> {
        let app = |p: &k8s_openapi::api::core::v1::Pod| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app").cloned())
                .unwrap_or_default()
        };
        self.batches.push(pods.iter().map(app).collect());
        let mut results = Vec::new();
        for pod in pods {
            results.push(self.create_pod(pod).await);
        }
        results
    }
    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        self.sim.delete_pod(namespace, name).await
    }
    async fn ensure_record(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
        source: &crate::cluster::RecordSource,
    ) -> Result<(), ClusterError> {
        self.sim.ensure_record(daemonset, source).await
    }
    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &crate::cluster::RecordStatus,
    ) -> Result<(), ClusterError> {
        if self.fail_status {
            return Err(ClusterError::Backend("status refused".into()));
        }
        self.writes.push(format!("status {name}"));
        self.sim.write_status(namespace, name, status).await
    }
    async fn emit_event(&mut self, event: crate::cluster::Event) -> Result<(), ClusterError> {
        self.sim.emit_event(event).await
    }
    async fn wait_for_change(&mut self, deadline: Timestamp) -> Result<bool, ClusterError> {
        self.sim.wait_for_change(deadline).await
    }
    async fn remove_node_taint(
        &mut self,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
    ) -> Result<bool, ClusterError> {
        self.sim.remove_node_taint(node, key, effect).await
    }
    async fn patch_pod_metadata(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &crate::cluster::MetadataPatch,
    ) -> Result<(), ClusterError> {
        self.sim.patch_pod_metadata(namespace, name, patch).await
    }
    async fn delete_daemonset(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), ClusterError> {
        self.sim.delete_daemonset(namespace, name, uid).await
    }
    async fn apply_daemonset(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
    ) -> Result<(), ClusterError> {
        self.sim.apply_daemonset(daemonset).await
    }
    async fn delete_record(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        self.sim.delete_record(namespace, name).await
    }
    async fn create_config_copy(
        &mut self,
        copy: &crate::manifest::config::ConfigCopy,
        owner: &crate::plan::render::PodOwner,
    ) -> Result<(), ClusterError> {
        self.sim.create_config_copy(copy, owner).await
    }
    async fn delete_config_copy(
        &mut self,
        copy: &crate::cluster::ObservedCopy,
    ) -> Result<(), ClusterError> {
        self.sim.delete_config_copy(copy).await
    }
    async fn annotate_record(
        &mut self,
        namespace: &str,
        name: &str,
        annotations: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<(), ClusterError> {
        self.sim.annotate_record(namespace, name, annotations).await
    }
    async fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &crate::cluster::ImagePatch,
    ) -> Result<(), ClusterError> {
        self.sim.patch_pod_images(namespace, name, patch).await
    }
    async fn set_pod_condition(
        &mut self,
        namespace: &str,
        name: &str,
        condition: &str,
        status: bool,
        resource_version: Option<&str>,
    ) -> Result<String, ClusterError> {
        Cluster::set_pod_condition(
            &mut self.sim,
            namespace,
            name,
            condition,
            status,
            resource_version,
        )
        .await
    }
}

#[test]
fn m30_sync_errors_take_precedence_over_status_errors() {
    let new = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, ""));
    let run = |fail_creates, fail_status| {
        let mut c = Faulty {
            fail_creates,
            fail_status,
            ..Faulty::new(sim(&fleet(1, "")))
        };
        let r = block_on(apply(
            &mut c,
            &new,
            &ApplyOptions::default(),
            &mut NoProgress,
        ));
        (r, c.sim.observed().pods.len())
    };
    // Create errors only: the sync error is returned.
    let (r, pods) = run(true, false);
    assert!(matches!(r, Err(ApplyError::WritesFailing(_))), "{r:?}");
    assert_eq!(pods, 0);
    // Status errors only: the rollout still happens, then the status error is returned.
    let (r, pods) = run(false, true);
    assert!(matches!(r, Err(ApplyError::StatusFailing(_))), "{r:?}");
    assert_eq!(pods, 1, "the pod was created although status writes failed");
    // Both: the sync error wins.
    let (r, _) = run(true, true);
    assert!(matches!(r, Err(ApplyError::WritesFailing(_))), "{r:?}");
}

#[test]
fn a_forbidden_write_stops_the_rollout_at_once_without_retrying() {
    let new = desired(&ds_yaml("agent", "agent:1", UNAVAILABLE_1, ""));
    let mut c = Faulty {
        forbid_creates: true,
        ..Faulty::new(sim(&fleet(4, "")))
    };
    let r = block_on(apply(
        &mut c,
        &new,
        &ApplyOptions::default(),
        &mut NoProgress,
    ));
    assert!(
        matches!(&r, Err(ApplyError::Cluster(ClusterError::Forbidden(m))) if m == "create forbidden"),
        "{r:?}"
    );
    assert_eq!(c.create_attempts, 1, "no second create after the refusal");
    assert!(c.sim.observed().pods.is_empty());
}

#[test]
fn the_creates_of_every_daemonset_go_out_together_in_slow_start_batches() {
    let mut c = Faulty::new(sim(&fleet(7, "")));
    let new = desired(&agent_and_logs("agent:1", "logs:1"));
    let r = block_on(apply(
        &mut c,
        &new,
        &ApplyOptions::default(),
        &mut NoProgress,
    ))
    .expect("apply");
    assert_eq!(r.outcome, Outcome::Converged);
    // Seven nodes without pods: batches of 1, 2 and 4 pods of each DaemonSet, the two
    // DaemonSets' batches sent together.
    let both = |n: usize| {
        let mut b = vec!["agent".to_string(); n];
        b.extend(vec!["logs".to_string(); n]);
        b
    };
    assert_eq!(c.batches, [both(1), both(2), both(4)]);
    assert_eq!(c.sim.observed().pods.len(), 14);
}

/// DaemonSets `agent` and `logs` at the given images, each replacing up to two nodes at once.
fn agent_and_logs(agent: &str, logs: &str) -> String {
    [
        ds_yaml("agent", agent, &rolling(2), ""),
        ds_yaml("logs", logs, &rolling(2), ""),
    ]
    .join("---\n")
}

/// Counts the pods of DaemonSet `name` on `revision`.
fn on_revision(sim: &Sim, name: &str, revision: &str) -> usize {
    revisions(sim, name)
        .values()
        .flatten()
        .filter(|r| *r == revision)
        .count()
}

#[test]
fn a_halted_daemonset_does_not_stop_the_others() {
    let old = agent_and_logs("agent:1", "logs:1");
    let new = agent_and_logs("agent:2-broken", "logs:2");
    let failures = "failures:
  images: [{image: 'agent:2-broken', reason: ErrImagePull}]";
    let mut sim = sim(&fleet(10, failures));
    sim.install(&desired(&old)).unwrap();
    let new = desired(&new);
    let opts = ApplyOptions {
        progress_deadline: SignedDuration::from_mins(2),
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &new, &opts);
    assert_eq!(r.outcome, Outcome::Halted);
    assert_eq!(r.halted, ["ns/agent"]);
    assert!(
        r.failed.iter().all(|f| f.daemonset == "agent"),
        "{:?}",
        r.failed
    );
    // logs rolled out everywhere; agent stopped at its first two nodes.
    let logs = r.plan.daemonsets.iter().find(|d| d.name == "logs").unwrap();
    assert_eq!(on_revision(&sim, "logs", &logs.revision), 10);
    let agent = r
        .plan
        .daemonsets
        .iter()
        .find(|d| d.name == "agent")
        .unwrap();
    assert_eq!(on_revision(&sim, "agent", &agent.revision), 2);
    // One RolloutHalted event, for agent, naming its failing nodes.
    let events = sim.events();
    let halts: Vec<&Event> = events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e.reason == "RolloutHalted")
        .collect();
    assert_eq!(halts.len(), 1, "{halts:?}");
    assert_eq!(halts[0].name, "agent");
    assert!(halts[0].message.contains("n-01"), "{}", halts[0].message);
    let state = block_on(sim.observe()).unwrap();
    let status = |name: &str| {
        state
            .records
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.status.clone())
            .unwrap()
    };
    assert!(status("agent").halted.is_some());
    assert_eq!(status("logs").halted, None);
}

#[test]
fn a_new_template_clears_the_halt() {
    let failures = "failures:
  images: [{image: 'agent:2-broken', reason: ErrImagePull}]";
    let mut sim = sim(&fleet(6, failures));
    sim.install(&desired(&ds_yaml("agent", "agent:1", &rolling(2), "")))
        .unwrap();
    let opts = ApplyOptions {
        progress_deadline: SignedDuration::from_mins(2),
        ..ApplyOptions::default()
    };
    let bad = desired(&ds_yaml("agent", "agent:2-broken", &rolling(2), ""));
    assert_eq!(run(&mut sim, &bad, &opts).outcome, Outcome::Halted);
    let fixed = desired(&ds_yaml("agent", "agent:3", &rolling(2), ""));
    let r = run(&mut sim, &fixed, &opts);
    assert_eq!(r.outcome, Outcome::Converged);
    assert!(r.halted.is_empty());
    let state = block_on(sim.observe()).unwrap();
    assert_eq!(state.records[0].status.as_ref().unwrap().halted, None);
}

#[test]
fn a_paused_record_gets_no_pod_writes_until_resumed() {
    let old = agent_and_logs("agent:1", "logs:1");
    let new = agent_and_logs("agent:2", "logs:2");
    let mut sim = sim(&fleet(5, ""));
    sim.install(&desired(&old)).unwrap();
    sim.set_paused("ns", "agent", true);
    let new = desired(&new);
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Paused);
    assert_eq!(r.paused, ["ns/agent"]);
    let revision = |name: &str| {
        r.plan
            .daemonsets
            .iter()
            .find(|d| d.name == name)
            .unwrap()
            .revision
            .clone()
    };
    assert_eq!(on_revision(&sim, "agent", &revision("agent")), 0);
    assert_eq!(on_revision(&sim, "logs", &revision("logs")), 5);
    let state = block_on(sim.observe()).unwrap();
    let agent = state.records.iter().find(|r| r.name == "agent").unwrap();
    assert!(
        agent.status.as_ref().unwrap().paused,
        "the Paused condition"
    );
    sim.set_paused("ns", "agent", false);
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(on_revision(&sim, "agent", &revision("agent")), 5);
    let state = block_on(sim.observe()).unwrap();
    let agent = state.records.iter().find(|r| r.name == "agent").unwrap();
    assert!(!agent.status.as_ref().unwrap().paused);
}

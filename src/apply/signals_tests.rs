//! Failure signals on the simulated cluster: a new pod that cannot start, that crashes, that
//! keeps restarting after it was ready, or that no node can take halts its rollout when it
//! shows it, not at the progress deadline (docs/apply.md, "When a rollout halts").

use super::tests::{desired, ds_yaml, revision_of, revisions, rolling, run, sim};
use super::*;
use crate::model::{Pod, PodSignals, ReadyCondition};
use crate::plan::DaemonSetSpec;
use jiff::SignedDuration;

/// A DaemonSet `agent` in namespace `ns` with `image`, a canary of one node paused for
/// `pause` after it, and the given extra annotations.
fn canary(image: &str, pause: &str, annotations: &str) -> Vec<Desired> {
    desired(&format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: ns
  annotations:
    daemonsync.io/canary: \"1\"
    daemonsync.io/canary-pause: \"{pause}\"
{annotations}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 2}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers: [{{name: c, image: {image}}}]
"
    ))
}

/// Three nodes whose kubelets start containers 2 s after their images are there, with the
/// given `failures:` entries.
fn three_nodes(failures: &str) -> String {
    format!(
        "seed: 1
kubelet: {{startLatency: {{fixed: 2s}}, terminationGrace: 1s}}
nodes:
  - {{name: 'n-{{i}}', count: 3}}
failures:
  images: [{failures}]"
    )
}

fn minutes(n: i64) -> SignedDuration {
    SignedDuration::from_mins(n)
}

#[test]
fn a_crash_looping_image_halts_at_once_naming_the_nodes_and_the_container() {
    let old = desired(&ds_yaml("agent", "agent:1", &rolling(2), ""));
    let new = desired(&ds_yaml("agent", "agent:2-broken", &rolling(2), ""));
    let mut sim = sim(&three_nodes("{image: 'agent:2-broken'}"));
    sim.install(&old).unwrap();
    let opts = ApplyOptions {
        progress_deadline: minutes(10),
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &new, &opts);
    assert_eq!(r.outcome, Outcome::Halted);
    assert!(!r.failed.is_empty());
    assert!(
        r.failed
            .iter()
            .all(|f| f.reason == "CrashLoopBackOff in container c"),
        "{:?}",
        r.failed
    );
    assert!(
        r.elapsed() < minutes(1),
        "not at the deadline: {:?}",
        r.elapsed()
    );
    assert_eq!(r.creates, 2, "it did not march on");
    let old_rev = revision_of(&old);
    assert!(
        revisions(&sim, "agent")
            .values()
            .any(|v| v == std::slice::from_ref(&old_rev)),
        "the third node keeps the old version"
    );
}

#[test]
fn a_halted_rollout_still_gives_a_node_that_lost_its_pod_the_stable_revision() {
    let old = desired(&ds_yaml("agent", "agent:1", &rolling(2), ""));
    let new = desired(&ds_yaml("agent", "agent:2-broken", &rolling(2), ""));
    let mut sim = sim(&three_nodes("{image: 'agent:2-broken'}"));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Halted);
    let old_rev = revision_of(&old);
    let (good, _) = revisions(&sim, "agent")
        .into_iter()
        .find(|(_, v)| v == std::slice::from_ref(&old_rev))
        .expect("one node keeps the old version");
    // Someone deletes the pod on the node the halt kept on the old version (a drain, an
    // eviction); once it is gone the halted rollout does not leave the node without its
    // daemon, nor give it the failing revision.
    let victim = sim
        .observed()
        .pods
        .into_iter()
        .find(|p| p.node_name.as_deref() == Some(good.as_str()))
        .unwrap();
    block_on(sim.delete_pod(&victim.namespace, &victim.name)).unwrap();
    let gone = sim.now() + SignedDuration::from_secs(5);
    sim.advance(gone);
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Halted);
    assert_eq!((r.creates, r.deletes), (1, 0), "one pod, nothing replaced");
    assert_eq!(revisions(&sim, "agent")[&good], vec![old_rev]);
}

#[test]
fn a_create_container_config_error_canary_halts_within_one_kubelet_step() {
    let old = canary("agent:1", "manual", "");
    let new = canary("agent:2", "manual", "");
    let mut sim = sim(&three_nodes(
        "{image: 'agent:2', reason: CreateContainerConfigError}",
    ));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Halted);
    assert_eq!(r.creates, 1, "only the canary");
    assert_eq!(r.failed.len(), 1);
    assert_eq!(
        r.failed[0].reason,
        "CreateContainerConfigError in container c"
    );
    // Deleting the old pod, then the new pod's start (2 s): the first status the kubelet
    // writes of it halts the rollout.
    assert!(
        r.elapsed() <= SignedDuration::from_secs(5),
        "halted {:?} after the start",
        r.elapsed()
    );
}

#[test]
fn a_pod_crashing_three_times_after_readiness_halts_the_canary() {
    let old = canary("agent:1", "3m", "");
    let new = canary("agent:2", "3m", "");
    let mut sim = sim(&three_nodes(
        "{image: 'agent:2', crashAfter: 30s, crashes: 3}",
    ));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Halted, "{:?}", r.failed);
    assert_eq!(r.creates, 1, "only the canary");
    assert_eq!(r.failed.len(), 1);
    assert_eq!(
        r.failed[0].reason,
        "restarted 3 times within 10m (container c)"
    );
    // Ready, then exits at 30 s, 60 s and 100 s after its start, started again at once after
    // the first exit (no back-off yet), then after 10 s and 20 s: the third restart comes at
    // 120 s, during the canary's pause.
    assert!(
        r.elapsed() >= SignedDuration::from_secs(115)
            && r.elapsed() < SignedDuration::from_secs(130),
        "{:?}",
        r.elapsed()
    );
}

#[test]
fn a_pod_restarting_only_twice_after_readiness_does_not_halt() {
    let old = canary("agent:1", "3m", "");
    let new = canary("agent:2", "3m", "");
    let mut sim = sim(&three_nodes(
        "{image: 'agent:2', crashAfter: 30s, crashes: 2}",
    ));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.failed);
    assert!(r.failed.is_empty());
    let restarts: Vec<u32> = sim
        .observed()
        .pods
        .iter()
        .filter_map(|p| p.signals.as_ref()?.restarts.as_ref().map(|r| r.1))
        .collect();
    assert!(
        restarts.contains(&2),
        "the canary restarted twice: {restarts:?}"
    );
}

#[test]
fn max_restarts_and_restart_window_are_the_daemonsets_own() {
    // Three restarts are allowed here: the canary that halted above goes on.
    let annotations = "    daemonsync.io/max-restarts: \"3\"\n    daemonsync.io/restart-window: 5m";
    let old = canary("agent:1", "3m", annotations);
    let new = canary("agent:2", "3m", annotations);
    let mut sim = sim(&three_nodes(
        "{image: 'agent:2', crashAfter: 30s, crashes: 3}",
    ));
    sim.install(&old).unwrap();
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.failed);
}

#[test]
fn a_new_pod_that_no_longer_fits_its_node_halts_the_rollout_instead_of_hanging() {
    let requesting = |image: &str, cpu: &str| {
        desired(&format!(
            "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: ns}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 1}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers:
        - name: c
          image: {image}
          resources: {{requests: {{cpu: {cpu}}}}}
"
        ))
    };
    let old = requesting("agent:1", "100m");
    let new = requesting("agent:2", "500m");
    // 1 cpu, of which other pods hold 800m: the old agent's 100m fit, the new 500m do not.
    let mut sim = sim("seed: 1
kubelet: {startLatency: {fixed: 2s}, terminationGrace: 1s}
nodes:
  - {name: 'n-{i}', count: 3, capacity: {cpu: '1'}, load: {cpu: 800m}}");
    sim.install(&old).unwrap();
    // The plan says so before anything is rolled.
    let before = plan::plan(
        &new,
        &sim.observed(),
        &crate::plan::Policy::default(),
        sim.now(),
    );
    let risk = before.daemonsets[0]
        .risks
        .iter()
        .find(|r| r.kind == crate::plan::RiskKind::RequestsDoNotFit)
        .expect("requests-do-not-fit");
    assert!(
        risk.message
            .starts_with("cpu 500m needed, 200m free on 3 nodes: n-1, n-2, n-3"),
        "{}",
        risk.message
    );
    let r = run(&mut sim, &new, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Halted, "{:?}", r.failed);
    assert_eq!(r.failed.len(), 1);
    assert!(
        r.failed[0]
            .reason
            .starts_with("Unschedulable: 0/3 nodes are available: 1 Insufficient cpu"),
        "{}",
        r.failed[0].reason
    );
    assert!(r.elapsed() < minutes(1), "{:?}", r.elapsed());
}

// Judging pods directly: what `Health::assess` makes of what a pod's status says.

/// A one-node plan of `agent` at `image` with the node's pod `pod` (its status filled in
/// by the caller), judged at `now`.
fn judge(pod: impl FnOnce(&mut Pod), node_ready: bool, now_secs: i64) -> Health {
    judge_beside(pod, node_ready, now_secs, Vec::new())
}

/// [`judge`] with `others` pods observed beside it.
fn judge_beside(
    pod: impl FnOnce(&mut Pod),
    node_ready: bool,
    now_secs: i64,
    others: Vec<Pod>,
) -> Health {
    let d = desired(&ds_yaml("agent", "agent:2", &rolling(1), ""));
    let spec = DaemonSetSpec::compile(&d[0].daemonset);
    let t0 = crate::model::Timestamp::UNIX_EPOCH;
    let at = |s: i64| crate::model::later(t0, SignedDuration::from_secs(s));
    let mut p = Pod {
        namespace: "ns".into(),
        name: "agent-x".into(),
        labels: [
            ("app".to_string(), "agent".to_string()),
            (
                crate::model::REVISION_HASH_LABEL.to_string(),
                spec.revision.clone(),
            ),
        ]
        .into_iter()
        .collect::<crate::model::Labels>()
        .into(),
        controller: Some(crate::model::shared_owner(crate::model::OwnerRef {
            api_version: "daemonsync.io/v1alpha1".into(),
            kind: crate::plan::RECORD_KIND.into(),
            name: "agent".into(),
            uid: "u".into(),
        })),
        node_name: Some("n-1".into()),
        target_node: Some("n-1".into()),
        phase: crate::model::PodPhase::Running,
        creation_timestamp: Some(t0),
        ready: Some(ReadyCondition {
            status: false,
            last_transition: Some(t0),
        }),
        ..Pod::default()
    };
    pod(&mut p);
    let observed = crate::plan::Observed {
        nodes: vec![crate::model::Node {
            name: "n-1".into(),
            ready: Some(node_ready),
            ..crate::model::Node::default()
        }]
        .into(),
        pods: std::iter::once(p).chain(others).collect(),
        ..crate::plan::Observed::default()
    };
    let plan = plan::plan(&d, &observed, &crate::plan::Policy::default(), at(now_secs));
    let specs = BTreeMap::from([(("ns".to_string(), "agent".to_string()), (&d[0], spec))]);
    Health::assess(&plan, &specs, &observed, at(now_secs), minutes(10))
}

fn restarts(count: u32, last_exit_secs: i64) -> impl FnOnce(&mut Pod) {
    move |p: &mut Pod| {
        let t0 = crate::model::Timestamp::UNIX_EPOCH;
        let at = crate::model::later(t0, SignedDuration::from_secs(last_exit_secs));
        p.ready = Some(ReadyCondition {
            status: true,
            last_transition: Some(at),
        });
        p.signals = PodSignals {
            restarts: Some(("c".into(), count)),
            last_exit: Some(at),
            ..PodSignals::default()
        }
        .boxed();
    }
}

#[test]
fn restarts_beyond_the_limit_within_the_window_fail_the_pod() {
    assert!(judge(restarts(2, 120), true, 130).failed.is_empty());
    let h = judge(restarts(3, 120), true, 130);
    assert_eq!(h.failed.len(), 1);
    assert_eq!(
        h.failed[0].reason,
        "restarted 3 times within 10m (container c)"
    );
    // Restarts long after the pod started are not the rollout's doing.
    assert!(judge(restarts(5, 3600), true, 3700).failed.is_empty());
}

#[test]
fn a_not_ready_nodes_failure_is_not_counted() {
    let config_error = |p: &mut Pod| {
        p.phase = crate::model::PodPhase::Pending;
        p.waiting_reason = Some("CreateContainerConfigError".into());
    };
    let h = judge(config_error, true, 5);
    assert_eq!(h.failed.len(), 1);
    let h = judge(config_error, false, 5);
    assert!(h.failed.is_empty());
    assert_eq!(h.node_problems.len(), 1);
    assert!(judge(restarts(9, 60), false, 70).failed.is_empty());
}

#[test]
fn a_crash_after_readiness_is_left_to_the_restart_count() {
    // Ready until it exited at 30 s: one crash, within the budget.
    let crashed_once = |p: &mut Pod| {
        let t0 = crate::model::Timestamp::UNIX_EPOCH;
        let at = crate::model::later(t0, SignedDuration::from_secs(30));
        p.waiting_reason = Some("CrashLoopBackOff".into());
        p.ready = Some(ReadyCondition {
            status: false,
            last_transition: Some(at),
        });
        p.signals = PodSignals {
            waiting_container: Some("c".into()),
            restarts: None,
            last_exit: Some(at),
            unschedulable: None,
        }
        .boxed();
    };
    assert!(judge(crashed_once, true, 35).failed.is_empty());
    // Never ready: not ready since it started, exited since.
    let never_ready = |p: &mut Pod| {
        crashed_once(p);
        p.ready = Some(ReadyCondition {
            status: false,
            last_transition: Some(crate::model::Timestamp::UNIX_EPOCH),
        });
    };
    assert_eq!(
        judge(never_ready, true, 35).failed[0].reason,
        "CrashLoopBackOff in container c"
    );
}

#[test]
fn an_unschedulable_new_pod_fails_its_node_unless_a_pod_is_leaving_it() {
    let leaving = Pod {
        namespace: "other".into(),
        name: "big".into(),
        node_name: Some("n-1".into()),
        target_node: Some("n-1".into()),
        deletion_timestamp: Some(crate::model::Timestamp::UNIX_EPOCH),
        ..Pod::default()
    };
    let unschedulable = |p: &mut Pod| {
        p.phase = crate::model::PodPhase::Pending;
        p.node_name = None;
        p.signals = PodSignals {
            unschedulable: Some("0/1 nodes are available: 1 Insufficient cpu.".into()),
            ..PodSignals::default()
        }
        .boxed();
    };
    let h = judge(unschedulable, true, 5);
    assert_eq!(
        h.failed[0].reason,
        "Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."
    );
    let h = judge_beside(unschedulable, true, 5, vec![leaving]);
    assert!(
        h.failed.is_empty(),
        "its resources come free: {:?}",
        h.failed
    );
}

//! The kubelet's costs and container model: pod set-up, image pulls (once per node and
//! image), in-place image changes, readiness gates, run-to-completion pods, failed pulls and
//! the container statuses the kubelet reports.

use super::config::SimConfig;
use super::nodes::*;
use crate::cluster::ClusterError;
use crate::model::Pod;
use crate::model::PodPhase;
use jiff::SignedDuration;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn sim(cfg: &str) -> NodeSim {
    NodeSim::new(SimConfig::parse(cfg).expect("config")).expect("sim")
}

/// A pod pinned to `node` with `spec` merged into its spec (containers, restartPolicy, ...).
fn pod(namespace: &str, node: &str, spec: Value) -> k8s_openapi::api::core::v1::Pod {
    let mut pod = json!({
        "metadata": {"generateName": "agent-", "namespace": namespace},
        "spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        }
    });
    for (k, v) in spec.as_object().expect("spec object") {
        pod["spec"][k] = v.clone();
    }
    serde_json::from_value(pod).expect("pod")
}

fn one(image: &str) -> Value {
    json!({"containers": [{"name": "agent", "image": image}]})
}

fn create(s: &mut NodeSim, node: &str, spec: Value) -> String {
    s.create(pod("ns", node, spec)).expect("created")
}

fn model<'a>(s: &'a NodeSim, name: &str) -> &'a Pod {
    &s.pods[&("ns".to_string(), name.to_string())].pod
}

fn status(s: &NodeSim, name: &str) -> Value {
    serde_json::to_value(s.pod_status("ns", name).expect("pod")).expect("json")
}

fn container<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["containerStatuses"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no status of {name} in {status:#}"))
}

fn condition(status: &Value, type_: &str) -> Value {
    status["conditions"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or(Value::Null)
}

fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

/// Runs the clock event by event until `done`, at most ten more virtual minutes; the time
/// since the start then.
fn until(s: &mut NodeSim, done: impl Fn(&NodeSim) -> bool) -> SignedDuration {
    let limit = s.now() + SignedDuration::from_mins(10);
    while !done(s) {
        assert!(
            s.advance(limit),
            "nothing left to happen at {:?}",
            s.elapsed()
        );
        assert!(s.now() < limit, "not within ten minutes");
    }
    s.elapsed()
}

const COSTS: &str = "kubelet:
  startLatency: {fixed: 2s}
  pullLatency: {fixed: 30s}
  podSetupLatency: {fixed: 5s}
";

#[test]
fn a_new_pod_is_set_up_then_pulls_its_image_then_starts() {
    let mut s = sim(&format!("{COSTS}nodes: [{{name: n1}}]"));
    let name = create(&mut s, "n1", one("agent:1"));
    assert!(s.node_images("n1").is_empty());
    let st = status(&s, &name);
    assert_eq!(
        condition(&st, "PodReadyToStartContainers")["status"],
        "False"
    );
    assert_eq!(
        container(&st, "agent")["state"]["waiting"]["reason"],
        "ContainerCreating"
    );

    assert_eq!(
        until(&mut s, |s| s.pods.values().any(|p| p.set_up.is_some())),
        secs(5)
    );
    assert_eq!(
        condition(&status(&s, &name), "PodReadyToStartContainers")["status"],
        "True"
    );
    assert_eq!(until(&mut s, |s| !s.node_images("n1").is_empty()), secs(35));
    assert_eq!(s.node_images("n1"), ["agent:1"]);
    assert!(!model(&s, &name).is_ready());
    let ready_at = until(&mut s, |s| s.pods.values().all(|p| p.pod.is_ready()));
    assert_eq!(ready_at, secs(37), "setup 5s + pull 30s + start 2s");
    let st = status(&s, &name);
    let c = container(&st, "agent");
    assert_eq!(c["image"], "agent:1");
    assert_eq!(c["imageID"], "sim://agent:1");
    assert_eq!(c["ready"], true);
    assert_eq!(c["started"], true);
    assert_eq!(c["restartCount"], 0);
    assert_eq!(c["state"]["running"]["startedAt"], "2026-01-01T00:00:37Z");
    assert_eq!(st["phase"], "Running");
    assert_eq!(
        condition(&st, "Ready")["lastTransitionTime"],
        "2026-01-01T00:00:37Z"
    );
}

#[test]
fn a_node_that_has_the_image_skips_the_pull() {
    let mut s = sim(&format!(
        "{COSTS}nodes: [{{name: n1, images: ['agent:1']}}, {{name: n2}}]"
    ));
    let name = create(&mut s, "n1", one("agent:1"));
    assert_eq!(until(&mut s, |s| model(s, &name).is_ready()), secs(7));

    // The image of a pod already running (`running:`, `install`) is on its node too.
    let running = pod("ns", "n2", one("logger:1"));
    s.insert_running(running, s.running_since())
        .expect("running");
    assert_eq!(s.node_images("n2"), ["logger:1"]);
    let second = create(&mut s, "n2", one("logger:1"));
    let t = s.elapsed();
    assert_eq!(until(&mut s, |s| model(s, &second).is_ready()) - t, secs(7));
}

#[test]
fn two_pods_needing_one_missing_image_on_a_node_pull_it_once() {
    let mut s = sim(&format!("{COSTS}nodes: [{{name: n1}}]"));
    let first = create(&mut s, "n1", one("agent:1"));
    s.advance(s.start() + secs(10));
    assert_eq!(s.elapsed(), secs(5));
    s.advance(s.start() + secs(10));
    assert_eq!(s.elapsed(), secs(10));
    // Set up at 15s, when the first pod's pull (5s → 35s) is under way: it waits for it.
    let second = s.create(pod("other", "n1", one("agent:1"))).unwrap();
    assert_eq!(s.pulls.len(), 1);
    let both = until(&mut s, |s| {
        model(s, &first).is_ready()
            && s.pods[&("other".to_string(), second.clone())]
                .pod
                .is_ready()
    });
    assert_eq!(both, secs(37), "one pull, ended at 35s, then both start");
    assert!(s.pulls.is_empty());
}

#[test]
fn an_image_patch_restarts_only_that_container_without_setting_up_the_pod_again() {
    let mut s = sim(&format!("{COSTS}nodes: [{{name: n1}}]"));
    let spec = json!({"containers": [
        {"name": "agent", "image": "agent:1"},
        {"name": "sidecar", "image": "sidecar:1"}]});
    let name = create(&mut s, "n1", spec);
    assert_eq!(until(&mut s, |s| model(s, &name).is_ready()), secs(37));
    let created = model(&s, &name).creation_timestamp;
    s.advance(s.start() + secs(60));
    assert_eq!(s.elapsed(), secs(60));

    let labels = BTreeMap::from([("controller-revision-hash".to_string(), "v2".to_string())]);
    let rv = s.pod_resource_version("ns", &name);
    s.patch_pod(
        "ns",
        &name,
        rv.as_deref(),
        &[("agent".into(), "agent:2".into())],
        &labels,
    )
    .expect("patched");
    let p = model(&s, &name);
    assert!(!p.is_ready(), "the restarting container is not ready");
    assert_eq!(p.phase, PodPhase::Running);
    assert_eq!(p.labels["controller-revision-hash"], "v2");
    let st = status(&s, &name);
    assert_eq!(condition(&st, "Ready")["status"], "False");
    assert_eq!(
        condition(&st, "Ready")["message"],
        "containers with unready status: [agent]"
    );
    let agent = container(&st, "agent");
    assert_eq!(agent["image"], "agent:2");
    assert_eq!(agent["state"]["waiting"]["reason"], "ContainerCreating");
    assert_eq!(agent["restartCount"], 1);
    assert_eq!(agent["lastState"]["terminated"]["reason"], "Completed");
    assert_eq!(
        agent["lastState"]["terminated"]["finishedAt"],
        "2026-01-01T00:01:00Z"
    );
    assert!(container(&st, "sidecar")["state"]["running"].is_object());

    // Pull (30s) and start (2s), no set-up.
    assert_eq!(until(&mut s, |s| model(s, &name).is_ready()), secs(92));
    let p = model(&s, &name);
    assert_eq!(p.name, name, "the same pod");
    assert_eq!(p.creation_timestamp, created);
    let st = status(&s, &name);
    let agent = container(&st, "agent");
    assert_eq!(agent["image"], "agent:2");
    assert_eq!(agent["imageID"], "sim://agent:2");
    assert_eq!(agent["restartCount"], 1);
    assert_eq!(agent["ready"], true);
    assert_eq!(
        agent["state"]["running"]["startedAt"],
        "2026-01-01T00:01:32Z"
    );
    let sidecar = container(&st, "sidecar");
    assert_eq!(sidecar["restartCount"], 0);
    assert_eq!(
        sidecar["state"]["running"]["startedAt"], "2026-01-01T00:00:37Z",
        "the other container kept running"
    );
    assert_eq!(s.node_images("n1"), ["agent:1", "agent:2", "sidecar:1"]);

    // An image the node has: start latency only.
    s.patch_pod(
        "ns",
        &name,
        None,
        &[("agent".into(), "agent:1".into())],
        &BTreeMap::new(),
    )
    .unwrap();
    let t = s.elapsed();
    assert_eq!(until(&mut s, |s| model(s, &name).is_ready()) - t, secs(2));
    assert_eq!(container(&status(&s, &name), "agent")["restartCount"], 2);
}

#[test]
fn a_stale_resource_version_precondition_is_refused() {
    let mut s = sim(&format!("{COSTS}nodes: [{{name: n1}}]"));
    let name = create(&mut s, "n1", one("agent:1"));
    let before = s.pod_resource_version("ns", &name).expect("rv");
    until(&mut s, |s| model(s, &name).is_ready());
    let now = s.pod_resource_version("ns", &name).expect("rv");
    assert_ne!(before, now, "the kubelet's reports change the pod");
    let err = s
        .patch_pod(
            "ns",
            &name,
            Some(&before),
            &[("agent".into(), "agent:2".into())],
            &BTreeMap::new(),
        )
        .unwrap_err();
    assert!(matches!(err, ClusterError::Conflict(_)), "{err:?}");
    assert!(err.to_string().contains("has been modified"), "{err}");
    assert_eq!(container(&status(&s, &name), "agent")["image"], "agent:1");
    assert!(model(&s, &name).is_ready(), "nothing changed");
    assert_eq!(s.pod_resource_version("ns", &name), Some(now.clone()));

    let err = s
        .patch_pod(
            "ns",
            &name,
            Some(&now),
            &[("nope".into(), "agent:2".into())],
            &BTreeMap::new(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("no container \"nope\""), "{err}");
    let err = s
        .patch_pod("ns", "gone", None, &[], &BTreeMap::new())
        .unwrap_err();
    assert!(matches!(err, ClusterError::NotFound { .. }));
    s.patch_pod(
        "ns",
        &name,
        Some(&now),
        &[("agent".into(), "agent:2".into())],
        &BTreeMap::new(),
    )
    .expect("a current resourceVersion passes");
}

#[test]
fn a_readiness_gate_keeps_the_pod_unready_until_its_condition_is_true() {
    let mut s = sim("kubelet: {startLatency: {fixed: 2s}}\nnodes: [{name: n1}]");
    let spec = json!({"containers": [{"name": "agent", "image": "agent:1"}],
                      "readinessGates": [{"conditionType": "example.com/lb-ready"}]});
    let name = create(&mut s, "n1", spec);
    s.advance(s.start() + secs(60));
    assert_eq!(s.elapsed(), secs(2));
    assert!(!model(&s, &name).is_ready());
    let st = status(&s, &name);
    assert_eq!(container(&st, "agent")["ready"], true);
    assert_eq!(condition(&st, "ContainersReady")["status"], "True");
    let ready = condition(&st, "Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "ReadinessGatesNotReady");
    assert_eq!(
        ready["message"],
        "corresponding condition of pod readiness gate \"example.com/lb-ready\" does not exist."
    );

    s.advance(s.start() + secs(10));
    s.set_condition("ns", &name, "example.com/lb-ready", false)
        .unwrap();
    assert!(!model(&s, &name).is_ready());
    s.set_condition("ns", &name, "example.com/lb-ready", true)
        .unwrap();
    let p = model(&s, &name);
    assert!(p.is_ready());
    assert_eq!(p.ready.unwrap().last_transition, Some(s.now()));
    let st = status(&s, &name);
    assert_eq!(condition(&st, "Ready")["status"], "True");
    assert_eq!(condition(&st, "example.com/lb-ready")["status"], "True");
    s.set_condition("ns", &name, "example.com/lb-ready", false)
        .unwrap();
    assert!(!model(&s, &name).is_ready());

    assert!(s.set_condition("ns", &name, "Ready", true).is_err());
    assert!(matches!(
        s.set_condition("ns", "gone", "x", true),
        Err(ClusterError::NotFound { .. })
    ));
}

#[test]
fn a_restart_policy_never_pod_runs_to_completion() {
    let mut s = sim(&format!("{COSTS}nodes: [{{name: n1}}]"));
    let spec = json!({"restartPolicy": "Never",
                      "initContainers": [{"name": "init", "image": "init:1"}],
                      "containers": [{"name": "pull", "image": "agent:2"}]});
    let name = create(&mut s, "n1", spec);
    let st = status(&s, &name);
    assert_eq!(
        container(&st, "pull")["state"]["waiting"]["reason"],
        "PodInitializing"
    );
    let done = until(&mut s, |s| model(s, &name).phase == PodPhase::Succeeded);
    assert_eq!(done, secs(37));
    let p = model(&s, &name);
    assert!(!p.is_ready());
    assert_eq!(p.waiting_reason, None);
    let st = status(&s, &name);
    let c = container(&st, "pull");
    assert_eq!(c["state"]["terminated"]["exitCode"], 0);
    assert_eq!(c["state"]["terminated"]["reason"], "Completed");
    assert_eq!(c["ready"], false);
    assert_eq!(c["imageID"], "sim://agent:2");
    assert_eq!(
        st["initContainerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );
    assert_eq!(condition(&st, "Initialized")["status"], "True");
    assert_eq!(condition(&st, "Ready")["reason"], "PodCompleted");
    assert_eq!(
        s.node_images("n1"),
        ["agent:2", "init:1"],
        "pulled images stay"
    );
    assert_eq!(s.scheduled(), 0, "nothing left to do");
}

#[test]
fn a_failed_pull_shows_err_image_pull_then_image_pull_back_off_and_leaves_no_image() {
    let mut s = sim("kubelet: {startLatency: {fixed: 2s}, pullLatency: {fixed: 3s}}
nodes: [{name: n1}]
failures:
  images: [{image: 'agent:typo', reason: ImagePullBackOff}, {image: 'job:typo', reason: ErrImagePull}]");
    let name = create(&mut s, "n1", one("agent:typo"));
    let job = create(
        &mut s,
        "n1",
        json!({"restartPolicy": "Never", "containers": [{"name": "agent", "image": "job:typo"}]}),
    );
    assert_eq!(
        until(&mut s, |s| model(s, &name).waiting_reason.is_some()),
        secs(3)
    );
    let p = model(&s, &name);
    assert_eq!(p.waiting_reason.as_deref(), Some("ErrImagePull"));
    assert_eq!(p.phase, PodPhase::Pending);
    assert!(!p.is_ready());
    let st = status(&s, &name);
    let c = container(&st, "agent");
    assert_eq!(c["state"]["waiting"]["reason"], "ErrImagePull");
    assert_eq!(c["imageID"], "");
    assert_eq!(
        until(&mut s, |s| model(s, &name).waiting_reason.as_deref()
            == Some("ImagePullBackOff")),
        secs(5)
    );
    assert_eq!(
        container(&status(&s, &name), "agent")["state"]["waiting"]["message"],
        "Back-off pulling image \"agent:typo\""
    );
    while s.advance(s.start() + SignedDuration::from_mins(10)) {}
    assert_eq!(
        model(&s, &name).waiting_reason.as_deref(),
        Some("ImagePullBackOff")
    );
    assert!(
        s.node_images("n1").is_empty(),
        "a failed image is not on the node"
    );
    // A run-to-completion pod whose image fails stays Pending, at the configured reason.
    let p = model(&s, &job);
    assert_eq!(p.phase, PodPhase::Pending);
    assert_eq!(p.waiting_reason.as_deref(), Some("ErrImagePull"));

    // Fixing the image: pulled, started; the container never ran, so no restart counted.
    s.patch_pod(
        "ns",
        &name,
        None,
        &[("agent".into(), "agent:1".into())],
        &BTreeMap::new(),
    )
    .unwrap();
    let t = s.elapsed();
    assert_eq!(until(&mut s, |s| model(s, &name).is_ready()) - t, secs(5));
    assert_eq!(container(&status(&s, &name), "agent")["restartCount"], 0);
}

#[test]
fn a_crash_looping_container_is_running_and_never_ready() {
    let mut s = sim("nodes: [{name: n1}]
failures:
  images: [{image: 'agent:bad'}]");
    let name = create(&mut s, "n1", one("agent:bad"));
    let job = create(
        &mut s,
        "n1",
        json!({"restartPolicy": "Never", "containers": [{"name": "agent", "image": "agent:bad"}]}),
    );
    s.advance(s.start() + secs(60));
    let p = model(&s, &name);
    assert_eq!(p.phase, PodPhase::Running);
    assert_eq!(p.waiting_reason.as_deref(), Some("CrashLoopBackOff"));
    let st = status(&s, &name);
    let c = container(&st, "agent");
    assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(c["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(s.node_images("n1"), ["agent:bad"], "it was pulled");
    assert_eq!(model(&s, &job).phase, PodPhase::Failed);
}

#[test]
fn a_crash_looping_container_is_restarted_at_once_then_after_a_doubling_back_off() {
    let mut s = sim("kubelet: {startLatency: {fixed: 0s}}
nodes: [{name: n1}]
failures:
  images: [{image: 'agent:bad'}]");
    let name = create(&mut s, "n1", one("agent:bad"));
    let restarts = |s: &NodeSim| s.pods[&("ns".to_string(), name.clone())].containers[0].restarts;
    // Started at once (no latencies) and exited; its first exit has no back-off yet, so it is
    // started again at once (upstream `doBackOff`); then after 10 s, 20 s, 40 s.
    assert_eq!(until(&mut s, |s| restarts(s) == 1), secs(0));
    assert_eq!(until(&mut s, |s| restarts(s) == 2), secs(10));
    assert_eq!(until(&mut s, |s| restarts(s) == 3), secs(30));
    assert_eq!(until(&mut s, |s| restarts(s) == 4), secs(70));
    let st = status(&s, &name);
    let c = container(&st, "agent");
    assert_eq!(c["restartCount"], 4);
    assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(c["lastState"]["terminated"]["reason"], "Error");
    let signals = s.observed().pods[0].signals.clone().expect("signals");
    assert_eq!(signals.restarts, Some(("agent".to_string(), 4)));
    assert_eq!(signals.waiting_container.as_deref(), Some("agent"));
    assert!(!model(&s, &name).is_ready());
}

#[test]
fn a_container_whose_configuration_cannot_be_built_never_runs() {
    let mut s = sim("kubelet: {startLatency: {fixed: 0s}}
nodes: [{name: n1}]
failures:
  images: [{image: 'agent:cfg', reason: CreateContainerConfigError},
           {image: 'agent:create', reason: CreateContainerError},
           {image: 'agent:start', reason: RunContainerError}]");
    let cfg = create(&mut s, "n1", one("agent:cfg"));
    let create_error = create(&mut s, "n1", one("agent:create"));
    let start = create(&mut s, "n1", one("agent:start"));
    while s.advance(s.start() + secs(120)) {}
    for name in [&cfg, &create_error] {
        let p = model(&s, name);
        assert_eq!(p.phase, PodPhase::Pending, "{name} never ran");
        let st = status(&s, name);
        let c = container(&st, "agent");
        assert_eq!(c["restartCount"], 0);
        assert_eq!(c["lastState"], json!({}));
    }
    assert_eq!(
        model(&s, &cfg).waiting_reason.as_deref(),
        Some("CreateContainerConfigError")
    );
    // A start error: the container was created, its start failed (128, StartError), and the
    // kubelet keeps trying.
    let p = model(&s, &start);
    assert_eq!(p.phase, PodPhase::Running);
    assert_eq!(p.waiting_reason.as_deref(), Some("RunContainerError"));
    let st = status(&s, &start);
    let c = container(&st, "agent");
    assert_eq!(c["lastState"]["terminated"]["exitCode"], 128);
    assert_eq!(c["lastState"]["terminated"]["reason"], "StartError");
    assert!(c["restartCount"].as_u64().unwrap_or_default() >= 2, "{c:#}");
}

#[test]
fn a_container_that_crashes_after_start_is_ready_then_restarted_with_its_count_growing() {
    let mut s = sim("kubelet: {startLatency: {fixed: 0s}}
nodes: [{name: n1}]
failures:
  images: [{image: 'agent:leaky', crashAfter: 30s}]");
    let name = create(&mut s, "n1", one("agent:leaky"));
    s.advance(s.start() + secs(1));
    assert!(model(&s, &name).is_ready(), "it starts and becomes ready");
    // Exits after 30 s and, without a back-off yet, is started again at once; exits 30 s
    // later and is started again 10 s after that; then 20 s after its next exit; ...
    assert_eq!(until(&mut s, |s| !model(s, &name).is_ready()), secs(60));
    let st = status(&s, &name);
    assert_eq!(
        container(&st, "agent")["state"]["waiting"]["reason"],
        "CrashLoopBackOff"
    );
    assert_eq!(
        container(&st, "agent")["lastState"]["terminated"]["exitCode"],
        1
    );
    assert_eq!(container(&st, "agent")["restartCount"], 1);
    assert_eq!(until(&mut s, |s| model(s, &name).is_ready()), secs(70));
    assert_eq!(container(&status(&s, &name), "agent")["restartCount"], 2);
    assert_eq!(until(&mut s, |s| !model(s, &name).is_ready()), secs(100));
    assert_eq!(until(&mut s, |s| model(s, &name).is_ready()), secs(120));
    assert_eq!(container(&status(&s, &name), "agent")["restartCount"], 3);
    let signals = s.observed().pods[0].signals.clone().expect("signals");
    assert_eq!(signals.restarts, Some(("agent".to_string(), 3)));
    assert_eq!(
        signals.last_exit,
        Some(s.start() + secs(100)),
        "the last run ended at 100 s"
    );
}

#[test]
fn the_back_off_starts_over_once_a_container_ran_ten_minutes() {
    // Upstream `flowcontrol.Backoff.hasExpired`: an exit more than twice the maximum back-off
    // (2 × 5 min) after the back-off last moved on starts it over.
    let run = |crash_after: &str, at_mins: i64| {
        let mut s = sim(&format!(
            "kubelet: {{startLatency: {{fixed: 0s}}}}
nodes: [{{name: n1}}]
failures:
  images: [{{image: 'agent:slow', crashAfter: {crash_after}}}]"
        ));
        let name = create(&mut s, "n1", one("agent:slow"));
        while s.advance(s.start() + SignedDuration::from_mins(at_mins) + secs(1)) {}
        let st = status(&s, &name);
        let c = container(&st, "agent").clone();
        (model(&s, &name).is_ready(), c)
    };
    // Eleven minutes a run: each exit is started again at once, never backed off.
    let (ready, c) = run("11m", 22);
    assert!(ready, "{c:#}");
    assert_eq!(c["restartCount"], 2);
    // Nine minutes a run: the second exit waits out the 10 s back-off.
    let (ready, c) = run("9m", 18);
    assert!(!ready, "{c:#}");
    assert_eq!(c["restartCount"], 1);
    assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
}

#[test]
fn node_images_and_the_new_latencies_are_checked() {
    let bad = |cfg: &str| {
        SimConfig::parse(cfg)
            .and_then(NodeSim::new)
            .expect_err(cfg)
            .to_string()
    };
    assert!(bad("nodes: [{name: a, images: ['']}]").contains("empty"));
    assert!(bad("nodes: [{name: a, images: ['a b']}]").contains("whitespace"));
    assert!(bad("nodes: [{name: a, imagez: []}]").contains("unknown field"));
    assert!(
        bad("nodes: [{name: a}]\nkubelet: {pullLatency: {uniform: [8s, 3s]}}")
            .contains("kubelet.pullLatency.uniform: the first bound (8s)")
    );
    assert!(
        bad("nodes: [{name: a}]\nkubelet: {podSetupLatency: {fixed: soon}}").contains("duration")
    );
    assert!(
        bad("nodes: [{name: a}]\nchurn: [{at: 1s, add: {name: b, images: [' ']}}]")
            .contains("whitespace")
    );
    let mut s = sim("nodes: [{name: 'w-{i}', count: 2, images: ['a:1', 'b:1']}]
churn: [{at: 1s, add: {name: late, images: ['c:1']}}]");
    assert_eq!(s.node_images("w-2"), ["a:1", "b:1"]);
    while s.advance(s.start() + secs(5)) {}
    assert_eq!(s.node_images("late"), ["c:1"]);
    s.remove_node("late");
    assert!(s.node_images("late").is_empty());
}

#[test]
fn default_costs_leave_start_timing_and_the_random_sequence_as_they_were() {
    // Seed, uniform start latency and names as before pulls and set-up were modelled.
    let mut s = sim("seed: 3
kubelet: {startLatency: {uniform: [1s, 9s]}}
nodes: [{name: n1}]
failures:
  images: [{image: 'bad:1', reason: ErrImagePull}]");
    let a = create(&mut s, "n1", one("bad:1"));
    let b = create(&mut s, "n1", one("agent:1"));
    assert_eq!(s.scheduled(), 2, "one event per pod, as a start was");
    let ready = until(&mut s, |s| model(s, &b).is_ready());
    assert!(ready >= secs(1) && ready <= secs(9));
    assert_eq!(
        model(&s, &a).waiting_reason.as_deref(),
        Some("ErrImagePull")
    );
    let mut again = sim("seed: 3
kubelet: {startLatency: {uniform: [1s, 9s]}}
nodes: [{name: n1}]");
    let a2 = create(&mut again, "n1", one("x:1"));
    let b2 = create(&mut again, "n1", one("y:1"));
    assert_eq!(
        (a2, b2),
        (a, b),
        "failures draw no more and no fewer numbers"
    );
}

//! What every cluster runs, in the simulated one: the built-in DaemonSet controller, the
//! scheduler's fit, node lifecycle and admission. Each test drives the in-process cluster as
//! clients drive a real one (writes through the API model) and checks what upstream does.

use super::Sim;
use super::api::patch::PatchType;
use super::api::store::ChangeType;
use super::api::world::{DeleteParams, World, WriteParams};
use super::config::SimConfig;
use crate::block_on;
use crate::cluster::{Cluster, ClusterError};
use crate::model::Timestamp;
use crate::plan::Observed;
use jiff::SignedDuration;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

fn cluster(cfg: &str) -> Sim {
    let cfg = format!("{cfg}\nnamespaces: [{{name: demo}}]\n");
    Sim::new(SimConfig::parse(&cfg).expect("sim file")).expect("cluster")
}

fn client() -> WriteParams {
    WriteParams {
        manager: "kubectl".into(),
        ..WriteParams::default()
    }
}

/// An apps/v1 DaemonSet `logger` in `demo` with `image`, strategy and extra pod spec.
fn logger(image: &str, strategy: Value, pod_extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "logger", "image": image}]});
    for (k, v) in pod_extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "logger", "namespace": "demo"},
        "spec": {
            "selector": {"matchLabels": {"app": "logger"}},
            "updateStrategy": strategy,
            "template": {"metadata": {"labels": {"app": "logger"}}, "spec": spec},
        },
    })
}

fn rolling(max_unavailable: i32, max_surge: i32) -> Value {
    json!({"type": "RollingUpdate",
           "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge}})
}

/// `kubectl apply`: creates the DaemonSet, or replaces its spec.
fn apply(w: &mut World, ds: Value) -> Arc<Value> {
    let kind = w.kind("apps", "v1", "daemonsets");
    let name = ds["metadata"]["name"].as_str().unwrap().to_string();
    let stored = match w.store.get(&kind.storage, "demo", &name) {
        None => w.create(&kind, "demo", ds, &client(), None),
        Some(e) => {
            let mut next = (*e.object()).clone();
            next["spec"] = ds["spec"].clone();
            w.update(&kind, "demo", &name, false, next, &client(), None)
        }
    }
    .expect("the DaemonSet is accepted");
    w.reconcile();
    stored
}

fn daemonset(w: &World) -> Value {
    (*w.store
        .get("apps/daemonsets", "demo", "logger")
        .unwrap()
        .object())
    .clone()
}

/// The logger pods that are not terminating.
fn pods(w: &World) -> Vec<Value> {
    w.store
        .list("/pods", Some("demo"))
        .map(|e| (*e.object()).clone())
        .filter(|p| {
            p["metadata"]["labels"]["app"] == "logger"
                && !p["metadata"]["deletionTimestamp"].is_string()
        })
        .collect()
}

fn label(p: &Value, key: &str) -> String {
    p["metadata"]["labels"][key]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn node_of(p: &Value) -> String {
    p["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Runs the clock until `done` or `bound` of virtual time passed.
fn run_until(sim: &mut Sim, bound: SignedDuration, done: impl Fn(&World) -> bool) {
    let end = sim.now() + bound;
    while !done(sim.world()) {
        assert!(sim.now() < end, "not within {bound:?}");
        sim.advance(end);
    }
}

fn settle(sim: &mut Sim) {
    let end = sim.now() + SignedDuration::from_mins(10);
    while sim.advance(end) {}
}

/// Nodes of the logger that have no available (ready) pod, among those that should run one.
fn unavailable(observed: &Observed) -> usize {
    let nodes: Vec<&str> = observed.nodes.iter().map(|n| n.name.as_str()).collect();
    nodes
        .iter()
        .filter(|n| {
            !observed.pods.iter().any(|p| {
                p.node_name.as_deref() == Some(**n)
                    && p.labels.get("app").map(String::as_str) == Some("logger")
                    && p.is_ready()
                    && !p.is_terminating()
            })
        })
        .count()
}

const FOUR_NODES: &str = "kubelet: {startLatency: {fixed: 2s}, terminationGrace: 1s}
nodes:
  - {name: 'n-{i}', count: 4}";

#[test]
fn the_builtin_controller_runs_one_pod_per_eligible_node_with_its_own_revision() {
    let mut sim = cluster(&format!(
        "{FOUR_NODES}
  - {{name: cp-1, taints: [{{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}}]}}"
    ));
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    settle(&mut sim);
    let w = sim.world();
    let pods = pods(w);
    let mut nodes: Vec<String> = pods.iter().map(node_of).collect();
    nodes.sort();
    assert_eq!(
        nodes,
        ["n-1", "n-2", "n-3", "n-4"],
        "the tainted node is left out"
    );
    let ds = daemonset(w);
    let uid = ds["metadata"]["uid"].as_str().unwrap();
    let revisions: Vec<Value> = w
        .store
        .list("apps/controllerrevisions", Some("demo"))
        .map(|e| (*e.object()).clone())
        .collect();
    assert_eq!(revisions.len(), 1);
    let hash = label(&revisions[0], "controller-revision-hash");
    assert_eq!(revisions[0]["metadata"]["name"], format!("logger-{hash}"));
    assert_eq!(revisions[0]["metadata"]["ownerReferences"][0]["uid"], uid);
    assert_eq!(revisions[0]["revision"], 1);
    // The controller's hash is its own, not daemonsync's revision of the same template.
    let typed: k8s_openapi::api::apps::v1::DaemonSet = serde_json::from_value(ds.clone()).unwrap();
    assert_ne!(hash, crate::plan::DaemonSetSpec::compile(&typed).revision);
    for p in &pods {
        assert_eq!(label(p, "controller-revision-hash"), hash);
        assert_eq!(label(p, "pod-template-generation"), "1");
        assert_eq!(
            label(p, "app.kubernetes.io/managed-by"),
            "",
            "not daemonsync's"
        );
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert_eq!(p["metadata"]["ownerReferences"][0]["uid"], uid);
    }
    assert_eq!(
        ds["status"],
        json!({"currentNumberScheduled": 4, "desiredNumberScheduled": 4,
               "numberMisscheduled": 0, "numberReady": 4, "numberAvailable": 4,
               "updatedNumberScheduled": 4, "observedGeneration": 1})
    );
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );
}

/// A cluster booted with `manifest` as its `builtin:` DaemonSets (the directory holds it).
fn with_builtin(cfg: &str, manifest: &str) -> (tempfile::TempDir, Sim) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("builtin.yaml");
    std::fs::write(&path, manifest).unwrap();
    let sim = cluster(&format!(
        "{cfg}\nbuiltin: [{{manifest: '{}'}}]",
        path.display()
    ));
    (dir, sim)
}

const BUILTIN_LOGGER: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logger, namespace: demo}
spec:
  selector: {matchLabels: {app: logger}}
  template:
    metadata: {labels: {app: logger}}
    spec: {containers: [{name: logger, image: 'logger:1'}]}
";

fn created(obj: &Value) -> Timestamp {
    obj["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_builtin_daemonset_and_its_revision_are_no_younger_than_its_pods() {
    let (_dir, sim) = with_builtin(FOUR_NODES, BUILTIN_LOGGER);
    let w = sim.world();
    let pods = pods(w);
    assert_eq!(pods.len(), 4);
    let oldest = pods.iter().map(created).min().unwrap();
    assert!(
        oldest < sim.now(),
        "the pods have run since before the start"
    );
    let ds = created(&daemonset(w));
    assert!(
        ds <= oldest,
        "the DaemonSet, created {ds}, is younger than its pods ({oldest})"
    );
    let revisions: Vec<Timestamp> = w
        .store
        .list("apps/controllerrevisions", Some("demo"))
        .map(|e| created(&e.object()))
        .collect();
    assert_eq!(revisions.len(), 1);
    assert!(ds <= revisions[0] && revisions[0] <= oldest);
}

#[test]
fn a_rolling_update_replaces_pods_within_max_unavailable() {
    let mut sim = cluster(&FOUR_NODES.replace("count: 4", "count: 6"));
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(2, 0), json!({})),
    );
    settle(&mut sim);
    let worst = Arc::new(Mutex::new(0));
    let seen = worst.clone();
    sim.set_probe(Box::new(move |o: &Observed, _: Timestamp| {
        let mut w = seen.lock().unwrap();
        *w = (*w).max(unavailable(o));
    }));
    apply(
        sim.world_mut(),
        logger("logger:2", rolling(2, 0), json!({})),
    );
    settle(&mut sim);
    let w = sim.world();
    let ds = daemonset(w);
    assert_eq!(ds["metadata"]["generation"], 2);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "2"
    );
    assert_eq!(ds["status"]["updatedNumberScheduled"], 6);
    assert_eq!(ds["status"]["observedGeneration"], 2);
    let pods = pods(w);
    assert_eq!(pods.len(), 6);
    assert!(
        pods.iter()
            .all(|p| p["spec"]["containers"][0]["image"] == "logger:2"
                && label(p, "pod-template-generation") == "2")
    );
    assert_eq!(
        *worst.lock().unwrap(),
        2,
        "never more than maxUnavailable nodes down"
    );
    let revisions: Vec<i64> = w
        .store
        .list("apps/controllerrevisions", Some("demo"))
        .map(|e| e.object()["revision"].as_i64().unwrap())
        .collect();
    assert_eq!(revisions.len(), 2);
    assert!(revisions.contains(&1) && revisions.contains(&2));
}

#[test]
fn max_surge_starts_the_new_pod_before_the_old_one_goes() {
    let mut sim = cluster(FOUR_NODES);
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(0, 1), json!({})),
    );
    settle(&mut sim);
    let stats = Arc::new(Mutex::new((0usize, 0usize)));
    let seen = stats.clone();
    sim.set_probe(Box::new(move |o: &Observed, _: Timestamp| {
        let live = o
            .pods
            .iter()
            .filter(|p| p.labels.get("app").map(String::as_str) == Some("logger"))
            .filter(|p| !p.is_terminating())
            .count();
        let mut s = seen.lock().unwrap();
        s.0 = s.0.max(live);
        s.1 = s.1.max(unavailable(o));
    }));
    apply(
        sim.world_mut(),
        logger("logger:2", rolling(0, 1), json!({})),
    );
    settle(&mut sim);
    let (most, down) = *stats.lock().unwrap();
    assert_eq!(most, 5, "one surge pod at a time beside the four");
    assert_eq!(down, 0, "no node is ever without an available pod");
    assert_eq!(
        daemonset(sim.world())["status"]["updatedNumberScheduled"],
        4
    );
}

/// Every string of `v` that reads as a timestamp, with where it is.
fn timestamps(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) if s.parse::<Timestamp>().is_ok() => out.push((path.into(), s.clone())),
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| timestamps(v, &format!("{path}.{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| timestamps(v, &format!("{path}[{i}]"), out)),
        _ => {}
    }
}

#[test]
fn times_show_in_whole_seconds_and_availability_counts_from_them() {
    // A start and a start latency off the second: the pod is ready at 00:00:01.750.
    let mut sim = cluster(
        "start: '2026-01-01T00:00:00.250Z'
kubelet: {startLatency: {fixed: 1500ms}, terminationGrace: 1s}
nodes: [{name: n-1}]",
    );
    let mut ds = logger("logger:1", rolling(1, 0), json!({}));
    ds["spec"]["minReadySeconds"] = json!(5);
    apply(sim.world_mut(), ds);
    let at = |sim: &mut Sim, t: &str| {
        let t: Timestamp = t.parse().unwrap();
        while sim.advance(t) {}
    };
    at(&mut sim, "2026-01-01T00:00:02Z");
    let pod = pods(sim.world()).remove(0);
    let ready = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["lastTransitionTime"], "2026-01-01T00:00:01Z");
    // Upstream's controller reads that time from the API: available 5 s after it.
    let available = |sim: &Sim| daemonset(sim.world())["status"]["numberAvailable"].clone();
    at(&mut sim, "2026-01-01T00:00:05.999Z");
    assert_eq!(available(&sim), Value::Null);
    at(&mut sim, "2026-01-01T00:00:06Z");
    assert_eq!(available(&sim), 1);

    let pods_kind = sim.world().kind("", "v1", "pods");
    let name = pod["metadata"]["name"].as_str().unwrap().to_string();
    sim.world_mut()
        .delete(&pods_kind, "demo", &name, &DeleteParams::default())
        .unwrap();
    let w = sim.world();
    let mut seen = Vec::new();
    for storage in [
        "/pods",
        "/nodes",
        "/events",
        "/namespaces",
        "apps/daemonsets",
    ] {
        for e in w.store.list(storage, None) {
            timestamps(
                &e.object(),
                &format!("{storage}/{}", e.object()["metadata"]["name"]),
                &mut seen,
            );
        }
    }
    for field in [
        ".metadata.creationTimestamp",
        ".metadata.deletionTimestamp",
        ".status.startTime",
        ".lastTransitionTime",
        ".startedAt",
        ".lastTimestamp",
        ".lastHeartbeatTime",
    ] {
        assert!(
            seen.iter().any(|(path, _)| path.ends_with(field)),
            "{field} in {seen:?}"
        );
    }
    let fractional: Vec<&(String, String)> = seen.iter().filter(|(_, t)| t.contains('.')).collect();
    assert!(fractional.is_empty(), "{fractional:?}");
}

#[test]
fn on_delete_waits_for_pods_to_be_deleted() {
    let mut sim = cluster(FOUR_NODES);
    let on_delete = json!({"type": "OnDelete"});
    apply(
        sim.world_mut(),
        logger("logger:1", on_delete.clone(), json!({})),
    );
    settle(&mut sim);
    let before: Vec<String> = pods(sim.world())
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    apply(sim.world_mut(), logger("logger:2", on_delete, json!({})));
    settle(&mut sim);
    let after: Vec<String> = pods(sim.world())
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(before, after, "OnDelete replaces nothing by itself");
    assert_eq!(
        daemonset(sim.world())["status"].get("updatedNumberScheduled"),
        None,
        "zero, and omitted as upstream omits it"
    );
    block_on(sim.delete_pod("demo", &before[0])).unwrap();
    settle(&mut sim);
    let w = sim.world();
    let new: Vec<Value> = pods(w)
        .into_iter()
        .filter(|p| p["spec"]["containers"][0]["image"] == "logger:2")
        .collect();
    assert_eq!(
        new.len(),
        1,
        "the deleted pod's replacement runs the new template"
    );
    assert_eq!(daemonset(w)["status"]["updatedNumberScheduled"], 1);
}

#[test]
fn a_deleted_pod_is_recreated_as_soon_as_it_is_gone() {
    let mut sim = cluster(FOUR_NODES);
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    settle(&mut sim);
    let victim = pods(sim.world())[0].clone();
    let name = victim["metadata"]["name"].as_str().unwrap().to_string();
    block_on(sim.delete_pod("demo", &name)).unwrap();
    let deleted_at = sim.now();
    // The termination grace is 1 s: the replacement exists the moment the pod is gone.
    run_until(&mut sim, SignedDuration::from_secs(5), |w| {
        w.store.get("/pods", "demo", &name).is_none()
    });
    assert_eq!(
        sim.now().duration_since(deleted_at),
        SignedDuration::from_secs(1)
    );
    let on_node: Vec<Value> = pods(sim.world())
        .into_iter()
        .filter(|p| node_of(p) == node_of(&victim))
        .collect();
    assert_eq!(on_node.len(), 1);
    assert_ne!(on_node[0]["metadata"]["name"], name.as_str());
    let events: Vec<String> = sim
        .world()
        .store
        .list("/events", Some("demo"))
        .filter(|e| e.object()["reason"] == "SuccessfulCreate")
        .map(|e| e.object()["message"].as_str().unwrap().to_string())
        .collect();
    assert!(events.contains(&format!(
        "Created pod: {}",
        on_node[0]["metadata"]["name"].as_str().unwrap()
    )));
}

#[test]
fn a_deleted_pod_is_marked_for_the_end_of_its_grace_period() {
    let mut sim = cluster(
        "kubelet: {startLatency: {fixed: 1s}, terminationGrace: 2s}
nodes: [{name: n-1}]",
    );
    let kind = sim.world().kind("", "v1", "pods");
    for (name, grace) in [
        ("web", json!(45)),
        ("db", Value::Null),
        ("cache", Value::Null),
    ] {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "demo"},
            "spec": {"nodeName": "n-1", "containers": [{"name": "c", "image": "web:1"}]}});
        if !grace.is_null() {
            pod["spec"]["terminationGracePeriodSeconds"] = grace;
        }
        sim.world_mut()
            .create(&kind, "demo", pod, &client(), None)
            .unwrap();
    }
    let at = |sim: &mut Sim, t: Timestamp| while sim.advance(t) {};
    let started = sim.start() + SignedDuration::from_secs(5);
    at(&mut sim, started);
    let requested = sim.now();
    let delete = |sim: &mut Sim, name: &str, grace: Option<i64>| {
        let params = DeleteParams {
            grace_period: grace,
            ..DeleteParams::default()
        };
        let last = sim
            .world_mut()
            .delete(&kind, "demo", name, &params)
            .unwrap();
        let meta = &last["metadata"];
        let at: Timestamp = meta["deletionTimestamp"].as_str().unwrap().parse().unwrap();
        (at, meta["deletionGracePeriodSeconds"].as_i64().unwrap())
    };
    // The pod's own terminationGracePeriodSeconds, the default 30, or the request's.
    let secs = |n: i64| requested + SignedDuration::from_secs(n);
    assert_eq!(delete(&mut sim, "web", None), (secs(45), 45));
    assert_eq!(delete(&mut sim, "db", None), (secs(30), 30));
    assert_eq!(delete(&mut sim, "cache", Some(1)), (secs(1), 1));
    // The kubelet is done before the grace periods end, and within a shorter one.
    let gone = |sim: &Sim, name: &str| sim.world().store.get("/pods", "demo", name).is_none();
    at(&mut sim, secs(1));
    assert!(gone(&sim, "cache") && !gone(&sim, "web"));
    at(&mut sim, secs(2) - SignedDuration::from_millis(1));
    assert!(!gone(&sim, "web") && !gone(&sim, "db"));
    at(&mut sim, secs(2));
    assert!(
        gone(&sim, "web") && gone(&sim, "db"),
        "after the sim file's terminationGrace"
    );
}

fn create_pod(w: &mut World, name: &str, node: &str, labels: Value, owner: Option<Value>) {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "demo", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "other:1"}]}});
    if let Some(o) = owner {
        pod["metadata"]["ownerReferences"] = json!([o]);
    }
    let kind = w.kind("", "v1", "pods");
    w.create(&kind, "demo", pod, &client(), None).expect("pod");
    w.reconcile();
}

#[test]
fn orphans_that_match_are_adopted_and_pods_that_stop_matching_are_released() {
    let mut sim = cluster(FOUR_NODES);
    create_pod(
        sim.world_mut(),
        "stray",
        "n-1",
        json!({"app": "logger"}),
        None,
    );
    settle(&mut sim);
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    let w = sim.world();
    let uid = daemonset(w)["metadata"]["uid"].clone();
    let stray = w
        .store
        .get("/pods", "demo", "stray")
        .unwrap()
        .object()
        .clone();
    assert_eq!(
        stray["metadata"]["ownerReferences"][0]["uid"], uid,
        "adopted"
    );
    assert_eq!(
        pods(w).iter().filter(|p| node_of(p) == "n-1").count(),
        1,
        "its node gets no second pod"
    );
    // It is an old pod (its template is not the DaemonSet's): rolled within the budget.
    settle(&mut sim);
    let w = sim.world();
    assert!(w.store.get("/pods", "demo", "stray").is_none());
    let on_n1: Vec<Value> = pods(w)
        .into_iter()
        .filter(|p| node_of(p) == "n-1")
        .collect();
    assert_eq!(on_n1.len(), 1);
    assert_eq!(on_n1[0]["spec"]["containers"][0]["image"], "logger:1");
    // A pod relabelled out of the selector is released, and its node gets a new pod.
    let mine = pods(w).into_iter().find(|p| node_of(p) == "n-2").unwrap();
    let name = mine["metadata"]["name"].as_str().unwrap().to_string();
    let kind = sim.world().kind("", "v1", "pods");
    sim.world_mut()
        .patch(
            &kind,
            "demo",
            &name,
            false,
            PatchType::Merge,
            br#"{"metadata":{"labels":{"app":"debugging"}}}"#,
            &client(),
        )
        .unwrap();
    sim.world_mut().reconcile();
    settle(&mut sim);
    let w = sim.world();
    let released = w.store.get("/pods", "demo", &name).unwrap().object();
    assert!(released["metadata"].get("ownerReferences").is_none());
    assert_eq!(pods(w).iter().filter(|p| node_of(p) == "n-2").count(), 1);
}

#[test]
fn pods_of_another_controller_are_never_touched() {
    let mut sim = cluster(FOUR_NODES);
    // Some other controller's object (the garbage collector would delete a pod whose owner
    // does not exist).
    let kind = sim.world().kind("", "v1", "configmaps");
    let owner = sim
        .world_mut()
        .create(
            &kind,
            "demo",
            json!({"metadata": {"name": "web-controller"}}),
            &client(),
            None,
        )
        .unwrap();
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "web-controller",
                       "uid": owner["metadata"]["uid"], "controller": true});
    create_pod(
        sim.world_mut(),
        "web",
        "n-1",
        json!({"app": "logger"}),
        Some(other.clone()),
    );
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    settle(&mut sim);
    let w = sim.world();
    let web = w.store.get("/pods", "demo", "web").unwrap().object();
    assert_eq!(web["metadata"]["ownerReferences"], json!([other]));
    assert!(!web["metadata"]["deletionTimestamp"].is_string());
    let ours = pods(w)
        .into_iter()
        .filter(|p| node_of(p) == "n-1" && p["metadata"]["name"] != "web")
        .count();
    assert_eq!(ours, 1, "the DaemonSet still runs its own pod there");
}

#[test]
fn status_counts_pods_kept_on_a_node_that_no_longer_qualifies_as_misscheduled() {
    let mut sim = cluster(&format!(
        "{FOUR_NODES}
churn:
  - {{at: 30s, taint: {{node: n-4, taints: [{{key: dedicated, value: db, effect: NoSchedule}}]}}}}"
    ));
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    run_until(&mut sim, SignedDuration::from_mins(2), |w| {
        w.nodes.nodes["n-4"]
            .taints
            .iter()
            .any(|t| t.key == "dedicated")
    });
    settle(&mut sim);
    let status = daemonset(sim.world())["status"].clone();
    assert_eq!(status["desiredNumberScheduled"], 3);
    assert_eq!(status["currentNumberScheduled"], 3);
    assert_eq!(
        status["numberMisscheduled"], 1,
        "a NoSchedule taint keeps the running pod"
    );
    assert_eq!(pods(sim.world()).len(), 4);
}

#[test]
fn a_rollback_reuses_its_revision_and_history_is_trimmed() {
    let mut sim = cluster(FOUR_NODES);
    let with_limit = |image: &str| {
        let mut ds = logger(image, rolling(4, 0), json!({}));
        ds["spec"]["revisionHistoryLimit"] = json!(1);
        ds
    };
    for image in ["logger:1", "logger:2", "logger:3", "logger:2"] {
        apply(sim.world_mut(), with_limit(image));
        settle(&mut sim);
    }
    let w = sim.world();
    let mut revisions: Vec<(i64, String)> = w
        .store
        .list("apps/controllerrevisions", Some("demo"))
        .map(|e| {
            (
                e.object()["revision"].as_i64().unwrap(),
                e.object()["data"]["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    revisions.sort();
    // logger:2 came back: its revision is renumbered 4; one old revision is kept.
    assert_eq!(
        revisions,
        [(3, "logger:3".to_string()), (4, "logger:2".to_string())]
    );
}

#[test]
fn the_registry_keeps_generations_and_the_selector_immutable() {
    let mut sim = cluster(FOUR_NODES);
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    // A strategy change is a spec change: generation moves, the template generation not.
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(2, 0), json!({})),
    );
    let ds = daemonset(sim.world());
    assert_eq!(ds["metadata"]["generation"], 2);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );
    let mut changed = ds.clone();
    changed["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
    changed["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    let kind = sim.world().kind("apps", "v1", "daemonsets");
    let err = sim
        .world_mut()
        .update(&kind, "demo", "logger", false, changed, &client(), None)
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert!(err.message.contains("spec.selector"), "{}", err.message);
    assert!(
        err.message.contains("field is immutable"),
        "{}",
        err.message
    );
}

#[test]
fn a_pod_that_does_not_fit_stays_pending_with_the_schedulers_words() {
    let mut sim = cluster(
        "kubelet: {startLatency: {fixed: 2s}, terminationGrace: 1s}
nodes:
  - {name: full, load: {cpu: 3500m, memory: 12Gi, pods: 40}}
  - {name: 'n-{i}', count: 2}",
    );
    let requests = json!({"containers": [{"name": "logger", "image": "logger:1",
        "resources": {"requests": {"cpu": "600m", "memory": "1Gi"}}}]});
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), requests.clone()),
    );
    settle(&mut sim);
    let w = sim.world();
    let pending: Vec<Value> = w
        .store
        .list("/pods", Some("demo"))
        .map(|e| (*e.object()).clone())
        .filter(|p| p["status"]["phase"] == "Pending")
        .collect();
    assert_eq!(pending.len(), 1);
    let scheduled = pending[0]["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap()
        .clone();
    let words = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node \
                 affinity/selector. preemption: 0/3 nodes are available: 1 No preemption \
                 victims found for incoming pod, 2 Preemption is not helpful for scheduling.";
    assert_eq!(scheduled["status"], "False");
    assert_eq!(scheduled["reason"], "Unschedulable");
    assert_eq!(scheduled["message"], words);
    assert!(pending[0]["spec"].get("nodeName").is_none());
    let event = w
        .store
        .list("/events", Some("demo"))
        .find(|e| e.object()["reason"] == "FailedScheduling")
        .map(|e| e.object())
        .expect("a FailedScheduling event");
    assert_eq!(event["message"], words);
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["source"]["component"], "default-scheduler");
    let ds = daemonset(w);
    assert_eq!(ds["status"]["desiredNumberScheduled"], 3);
    assert_eq!(ds["status"]["numberReady"], 2);
    // Nodes report what the scheduler counts against.
    let full = w.store.get("/nodes", "", "full").unwrap().object();
    assert_eq!(full["status"]["allocatable"]["cpu"], "4");
    assert_eq!(full["status"]["capacity"]["pods"], "110");
}

#[test]
fn a_pending_pod_is_bound_once_room_is_made_on_its_node() {
    let mut sim = cluster(
        "kubelet: {startLatency: {fixed: 2s}, terminationGrace: 1s}
nodes:
  - {name: n-1, allocatable: {cpu: '1'}}",
    );
    let hog = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "hog", "namespace": "demo"},
        "spec": {"nodeName": "n-1", "containers": [{"name": "c", "image": "hog:1",
                 "resources": {"requests": {"cpu": "800m"}}}]}});
    let kind = sim.world().kind("", "v1", "pods");
    sim.world_mut()
        .create(&kind, "demo", hog, &client(), None)
        .unwrap();
    let requests = json!({"containers": [{"name": "logger", "image": "logger:1",
        "resources": {"requests": {"cpu": "300m"}}}]});
    apply(sim.world_mut(), logger("logger:1", rolling(1, 0), requests));
    settle(&mut sim);
    assert!(pods(sim.world())[0]["spec"].get("nodeName").is_none());
    block_on(sim.delete_pod("demo", "hog")).unwrap();
    settle(&mut sim);
    let p = &pods(sim.world())[0];
    assert_eq!(node_of(p), "n-1");
    assert_eq!(p["status"]["phase"], "Running");
}

#[test]
fn a_surge_pod_cannot_bind_a_host_port_its_old_pod_holds() {
    let mut sim = cluster("nodes: [{name: n-1}]");
    let ports = json!({"containers": [{"name": "logger", "image": "logger:1",
                               "ports": [{"containerPort": 9100, "hostPort": 9100}]}]});
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(0, 1), ports.clone()),
    );
    settle(&mut sim);
    let mut next = ports;
    next["containers"][0]["image"] = json!("logger:2");
    apply(sim.world_mut(), logger("logger:2", rolling(0, 1), next));
    settle(&mut sim);
    let w = sim.world();
    let stuck = pods(w)
        .into_iter()
        .find(|p| p["spec"]["containers"][0]["image"] == "logger:2")
        .expect("the surge pod");
    let message = stuck["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with(
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod \
             ports."
        ),
        "{message}"
    );
}

fn taints(w: &World, node: &str) -> Vec<(String, String)> {
    let mut t = key_effects(&w.store.get("/nodes", "", node).unwrap().object());
    t.sort();
    t
}

/// `(key, effect)` of the taints a Node object shows, in its order.
fn key_effects(node: &Value) -> Vec<(String, String)> {
    stamped_taints(node)
        .into_iter()
        .map(|(key, effect, _)| (key, effect))
        .collect()
}

/// `(key, effect, timeAdded)` of the taints a Node object shows, in its order.
fn stamped_taints(node: &Value) -> Vec<(String, String, Option<Timestamp>)> {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                t["key"].as_str().unwrap().to_string(),
                t["effect"].as_str().unwrap().to_string(),
                t["timeAdded"].as_str().map(|a| a.parse().unwrap()),
            )
        })
        .collect()
}

fn ready_status(w: &World, node: &str) -> String {
    w.store.get("/nodes", "", node).unwrap().object()["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_not_ready_node_is_tainted_and_untainted() {
    let mut sim = cluster(
        "nodes: [{name: n-1}]
churn:
  - {at: 10s, ready: {node: n-1, ready: false}}
  - {at: 20s, ready: {node: n-1, ready: true}}
  - {at: 30s, ready: {node: n-1, ready: Unknown}}
  - {at: 40s, ready: {node: n-1, ready: true}}",
    );
    let at = |sim: &mut Sim, secs: i64| {
        let t = sim.start() + SignedDuration::from_secs(secs);
        while sim.advance(t) {}
    };
    assert!(taints(sim.world(), "n-1").is_empty());
    at(&mut sim, 15);
    assert_eq!(ready_status(sim.world(), "n-1"), "False");
    let not_ready = |effect: &str| {
        (
            "node.kubernetes.io/not-ready".to_string(),
            effect.to_string(),
        )
    };
    assert_eq!(
        taints(sim.world(), "n-1"),
        [not_ready("NoExecute"), not_ready("NoSchedule")]
    );
    at(&mut sim, 25);
    assert_eq!(ready_status(sim.world(), "n-1"), "True");
    assert!(taints(sim.world(), "n-1").is_empty());
    at(&mut sim, 35);
    assert_eq!(ready_status(sim.world(), "n-1"), "Unknown");
    let unreachable = |effect: &str| {
        (
            "node.kubernetes.io/unreachable".to_string(),
            effect.to_string(),
        )
    };
    assert_eq!(
        taints(sim.world(), "n-1"),
        [unreachable("NoExecute"), unreachable("NoSchedule")]
    );
    at(&mut sim, 45);
    assert!(taints(sim.world(), "n-1").is_empty());
}

#[test]
fn a_node_created_is_tainted_not_ready_until_the_lifecycle_controller_sees_it_ready() {
    let mut sim = cluster("nodes: [{name: n-1}]");
    let kind = sim.world().kind("", "v1", "nodes");
    let node = |name: &str| json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}});
    let not_ready = |effect: &str| ("node.kubernetes.io/not-ready".to_string(), effect.into());
    // TaintNodesAtCreation: the create answers with the taint; the simulated kubelet
    // registers the node Ready, and the lifecycle controller takes the taint off.
    let created = sim
        .world_mut()
        .create(&kind, "", node("n-2"), &client(), None)
        .expect("node");
    assert_eq!(key_effects(&created), [not_ready("NoSchedule")]);
    assert_eq!(ready_status(sim.world(), "n-2"), "True");
    assert!(taints(sim.world(), "n-2").is_empty());
    let rv = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let now = sim.world().store.get("/nodes", "", "n-2").unwrap().object();
    assert_ne!(
        rv(&now),
        rv(&created),
        "the taint's removal is a write of its own"
    );
    // A node registering NotReady keeps it, with the NoExecute one, until it is Ready.
    let mut joining = node("n-3");
    joining["status"] = json!({"conditions": [{"type": "Ready", "status": "False"}]});
    let created = sim
        .world_mut()
        .create(&kind, "", joining, &client(), None)
        .expect("node");
    assert_eq!(key_effects(&created), [not_ready("NoSchedule")]);
    assert_eq!(
        taints(sim.world(), "n-3"),
        [not_ready("NoExecute"), not_ready("NoSchedule")]
    );
    // Nodes that were there at the start registered long ago.
    assert!(taints(sim.world(), "n-1").is_empty());
}

#[test]
fn a_node_joining_by_churn_registers_tainted_not_ready_as_one_created_does() {
    let mut sim = cluster(
        "nodes: [{name: n-1}]
churn:
  - {at: 10s, add: {name: ready-1, taints: [{key: example.com/agent, effect: NoSchedule}]}}
  - {at: 20s, add: {name: late-1, ready: false}}",
    );
    // What a watch of nodes sees of each node from now on: each write's taints.
    let mut watch = sim.world().store.subscribe();
    let mut seen = Vec::new();
    let mut at = |sim: &mut Sim, secs: i64, node: &str| {
        let t = sim.start() + SignedDuration::from_secs(secs);
        while sim.advance(t) {}
        while let Ok(c) = watch.try_recv() {
            seen.push(c);
        }
        seen.iter()
            .filter(|c| c.storage == "/nodes" && c.object.name() == node)
            .map(|c| (c.type_, key_effects(&c.object.value())))
            .collect::<Vec<_>>()
    };
    let taint = |key: &str, effect: &str| (key.to_string(), effect.to_string());
    let not_ready = |effect: &str| taint("node.kubernetes.io/not-ready", effect);
    let own = taint("example.com/agent", "NoSchedule");
    // Admission's taint beside the kubelet's own, then the lifecycle controller's write.
    assert_eq!(
        at(&mut sim, 15, "ready-1"),
        [
            (
                ChangeType::Added,
                vec![own.clone(), not_ready("NoSchedule")]
            ),
            (ChangeType::Modified, vec![own.clone()]),
        ]
    );
    // Registering NotReady: the NoSchedule taint stays, and the NoExecute one joins it.
    let late = at(&mut sim, 25, "late-1");
    assert_eq!(late[0], (ChangeType::Added, vec![not_ready("NoSchedule")]));
    let mut last = late.last().expect("written").1.clone();
    last.sort();
    assert_eq!(last, [not_ready("NoExecute"), not_ready("NoSchedule")]);
    // Nodes that were there at the start registered long ago: never written since.
    assert!(at(&mut sim, 30, "n-1").is_empty());
}

/// `(key, effect, timeAdded)` of a node's taints, sorted.
fn taints_added(w: &World, node: &str) -> Vec<(String, String, Option<Timestamp>)> {
    let mut t = stamped_taints(&w.store.get("/nodes", "", node).unwrap().object());
    t.sort();
    t
}

#[test]
fn the_node_lifecycle_controller_stamps_the_taints_it_adds() {
    let mut sim = cluster(
        "nodes: [{name: n-1}, {name: n-2, ready: false}]
churn:
  - {at: 10s, ready: {node: n-1, ready: false}}
  - {at: 20s, ready: {node: n-1, ready: Unknown}}
  - {at: 30s, ready: {node: n-1, ready: true}}",
    );
    let secs = |sim: &Sim, n: i64| sim.start() + SignedDuration::from_secs(n);
    let at = |sim: &mut Sim, n: i64| {
        let t = secs(sim, n);
        while sim.advance(t) {}
    };
    let both = |key: &str, added: Timestamp| {
        let key = format!("node.kubernetes.io/{key}");
        vec![
            (key.clone(), "NoExecute".to_string(), Some(added)),
            (key, "NoSchedule".to_string(), Some(added)),
        ]
    };
    // NotReady from the start: tainted as long as its Ready condition has said so.
    let n2 = sim
        .world()
        .store
        .get("/nodes", "", "n-2")
        .unwrap()
        .object()
        .clone();
    let ready = n2["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()["lastTransitionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(taints_added(sim.world(), "n-2"), both("not-ready", ready));
    at(&mut sim, 15);
    assert_eq!(
        taints_added(sim.world(), "n-1"),
        both("not-ready", secs(&sim, 10))
    );
    at(&mut sim, 25);
    assert_eq!(
        taints_added(sim.world(), "n-1"),
        both("unreachable", secs(&sim, 20))
    );
    at(&mut sim, 35);
    assert!(taints_added(sim.world(), "n-1").is_empty());

    // Cordoned: the unschedulable taint is stamped when added, and keeps its stamp, as a
    // taint a client wrote with one does.
    let kind = sim.world().kind("", "v1", "nodes");
    let write = |sim: &mut Sim, change: &dyn Fn(&mut Value)| {
        let w = sim.world_mut();
        let mut node = (*w.store.get("/nodes", "", "n-1").unwrap().object()).clone();
        change(&mut node);
        w.update(&kind, "", "n-1", false, node, &client(), None)
            .unwrap();
    };
    write(&mut sim, &|n| n["spec"]["unschedulable"] = json!(true));
    let unschedulable = |added: Timestamp| {
        (
            "node.kubernetes.io/unschedulable".to_string(),
            "NoSchedule".to_string(),
            Some(added),
        )
    };
    assert_eq!(
        taints_added(sim.world(), "n-1"),
        [unschedulable(secs(&sim, 35))]
    );
    at(&mut sim, 40);
    let stamped = secs(&sim, 1).to_string();
    write(&mut sim, &|n| {
        n["spec"]["taints"]
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "example.com/drain", "effect": "NoExecute", "timeAdded": stamped}))
    });
    assert_eq!(
        taints_added(sim.world(), "n-1"),
        [
            (
                "example.com/drain".to_string(),
                "NoExecute".to_string(),
                Some(secs(&sim, 1))
            ),
            unschedulable(secs(&sim, 35))
        ]
    );
}

#[test]
fn no_execute_evicts_pods_after_their_toleration_seconds_but_never_daemon_pods() {
    let mut sim = cluster(
        "kubelet: {startLatency: {fixed: 1s}, terminationGrace: 1s}
nodes: [{name: n-1}]
churn:
  - {at: 10s, ready: {node: n-1, ready: Unknown}}",
    );
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    // A plain pod: DefaultTolerationSeconds gives it 300 s on an unreachable node.
    let web = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"nodeName": "n-1", "containers": [{"name": "c", "image": "web:1"}]}});
    let kind = sim.world().kind("", "v1", "pods");
    let stored = sim
        .world_mut()
        .create(&kind, "demo", web, &client(), None)
        .unwrap();
    let seconds: Vec<i64> = stored["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["tolerationSeconds"].as_i64())
        .collect();
    assert_eq!(seconds, [300, 300]);
    let gone_by = |sim: &mut Sim, secs: i64| {
        let t = sim.start() + SignedDuration::from_secs(secs);
        while sim.advance(t) {}
        let w = sim.world();
        w.store
            .get("/pods", "demo", "web")
            .is_none_or(|e| e.object()["metadata"]["deletionTimestamp"].is_string())
    };
    assert!(!gone_by(&mut sim, 309), "still within its 300 s");
    assert!(gone_by(&mut sim, 311), "evicted once they ran out");
    let evicted = sim
        .world()
        .store
        .list("/events", Some("demo"))
        .any(|e| e.object()["reason"] == "TaintManagerEviction");
    assert!(evicted);
    // The daemon pod tolerates the taint for ever, as the DaemonSet controller makes it.
    assert_eq!(pods(sim.world()).len(), 1);
}

/// The DaemonSet controller's events of `reason` about the logger: (message, count).
fn controller_events(w: &World, reason: &str) -> Vec<(String, i64)> {
    w.store
        .list("/events", Some("demo"))
        .filter(|e| {
            e.object()["reason"] == reason && e.object()["involvedObject"]["name"] == "logger"
        })
        .map(|e| {
            (
                e.object()["message"].as_str().unwrap().to_string(),
                e.object()["count"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_refused_pod_create_is_retried_with_the_work_queues_backoff() {
    let mut sim = cluster(
        "nodes: [{name: n-1}]
admission:
  deny: ['create:pods:no pods today']",
    );
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({})),
    );
    // Every attempt is the same event, counted: when the count moves is when the controller
    // tried again.
    let attempts = |sim: &mut Sim, until: SignedDuration| {
        let mut at = Vec::new();
        let mut seen = 0;
        let end = sim.start() + until;
        loop {
            let events = controller_events(sim.world(), "FailedCreate");
            assert!(events.len() <= 1, "{events:?}");
            let count = events.first().map_or(0, |e| e.1);
            if count != seen {
                assert_eq!(count, seen + 1, "one attempt at a time");
                at.push(sim.elapsed());
                seen = count;
            }
            if !sim.advance(end) {
                return at;
            }
        }
    };
    let at = attempts(&mut sim, SignedDuration::from_mins(30));
    let gaps: Vec<i64> = at
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis() as i64)
        .collect();
    // 5 ms, doubling with every failure, at most 1000 s: 18 gaps within half an hour.
    let mut backoff = vec![5];
    while backoff.len() < 18 {
        backoff.push((backoff.last().unwrap() * 2).min(1_000_000));
    }
    assert_eq!(at[0], SignedDuration::ZERO);
    assert_eq!(gaps, backoff);
    assert_eq!(
        controller_events(sim.world(), "FailedCreate")[0],
        (
            "Error creating: admission webhook \"deny.sim\" denied the request: no pods today"
                .to_string(),
            19
        )
    );
    assert!(pods(sim.world()).is_empty());
    // Once admitted, the next retry creates the pod, with nothing else changing meanwhile.
    sim.world_mut().admission.deny.clear();
    let retry = sim.start() + at[18] + SignedDuration::from_secs(1000);
    while sim.advance(retry - SignedDuration::from_millis(1)) {}
    assert!(pods(sim.world()).is_empty(), "not before the retry");
    while sim.advance(retry) {}
    assert_eq!(pods(sim.world()).len(), 1);
    assert_eq!(controller_events(sim.world(), "SuccessfulCreate").len(), 1);
    assert_eq!(controller_events(sim.world(), "FailedCreate")[0].1, 19);
}

#[test]
fn similar_failures_are_combined_and_a_source_is_held_to_its_allowance() {
    let mut sim = Sim::new(
        SimConfig::parse(
            "nodes: [{name: n-1}]
namespaces: [{name: demo, labels: {pod-security.kubernetes.io/enforce: baseline}}]",
        )
        .unwrap(),
    )
    .unwrap();
    apply(
        sim.world_mut(),
        logger("logger:1", rolling(1, 0), json!({"hostNetwork": true})),
    );
    // Fourteen attempts within a minute, each refused naming its own generated pod.
    let end = sim.start() + SignedDuration::from_mins(1);
    while sim.advance(end) {}
    let events = controller_events(sim.world(), "FailedCreate");
    let (combined, single): (Vec<_>, Vec<_>) = events
        .iter()
        .partition(|(m, _)| m.starts_with("(combined from similar events): "));
    assert_eq!(single.len(), 9, "{events:?}");
    assert!(single.iter().all(|(m, count)| *count == 1
        && m.starts_with("Error creating: pods \"logger-")
        && m.ends_with(
            "violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"
        )));
    assert_eq!(combined.len(), 1, "{events:?}");
    assert_eq!(combined[0].1, 5);

    // A source writes 25 events about an object at once, then one every five minutes; those
    // it drops still count.
    let involved = super::api::events::Involved::of(&daemonset(sim.world()));
    let say = |sim: &mut Sim| {
        super::api::events::emit(
            sim.world_mut(),
            &involved,
            "Normal",
            "Tested",
            "test-controller",
            "again",
        )
    };
    for _ in 0..30 {
        say(&mut sim);
    }
    assert_eq!(
        controller_events(sim.world(), "Tested"),
        [("again".to_string(), 25)]
    );
    let later = sim.now() + SignedDuration::from_mins(5);
    while sim.advance(later) {}
    say(&mut sim);
    assert_eq!(
        controller_events(sim.world(), "Tested"),
        [("again".to_string(), 31)]
    );
}

#[test]
fn a_privileged_pod_in_a_baseline_namespace_is_refused_with_upstreams_wording() {
    let mut sim = Sim::new(
        SimConfig::parse(
            "nodes: [{name: n-1}]
namespaces:
  - {name: secure, labels: {pod-security.kubernetes.io/enforce: baseline}}",
        )
        .unwrap(),
    )
    .unwrap();
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "agent-x", "namespace": "secure"},
        "spec": {"hostNetwork": true, "nodeName": "n-1",
                 "containers": [{"name": "c", "image": "agent:1",
                                 "securityContext": {"privileged": true}}]}}))
    .unwrap();
    let err = block_on(sim.create_pod(pod)).unwrap_err();
    let ClusterError::Refused(message) = err else {
        panic!("admission, not permissions: {err:?}");
    };
    assert_eq!(
        message,
        "pods \"agent-x\" is forbidden: violates PodSecurity \"baseline:latest\": host \
         namespaces (hostNetwork=true), privileged (container \"c\" must not set \
         securityContext.privileged=true)"
    );
}

#[test]
fn a_webhook_denial_names_the_webhook_and_its_message() {
    let mut sim = cluster(
        "nodes: [{name: n-1}]
admission:
  deny: ['create:pods:images must come from registry.example']",
    );
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "x", "namespace": "demo"},
        "spec": {"nodeName": "n-1", "containers": [{"name": "c", "image": "agent:1"}]}}))
    .unwrap();
    let err = block_on(sim.create_pod(pod)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "admission webhook \"deny.sim\" denied the request: images must come from \
         registry.example"
    );
    let w = sim.world_mut();
    let kind = w.kind("", "v1", "pods");
    assert!(
        w.delete(&kind, "demo", "x", &DeleteParams::default())
            .is_err_and(|e| e.code == 404),
        "nothing was created"
    );
}

/// The node's taints as `key:Effect`, in order.
fn taints_of(w: &World, node: &str) -> Vec<String> {
    key_effects(&w.store.get("/nodes", "", node).unwrap().object())
        .into_iter()
        .map(|(key, effect)| format!("{key}:{effect}"))
        .collect()
}

#[test]
fn a_joining_node_carries_its_churn_taints_and_keeps_other_pods_off() {
    let mut sim = cluster(
        "nodes: [{name: n-1}]
churn:
  - {at: 10s, add: {name: new-1, taints: [{key: example.com/agent-not-ready, effect: NoSchedule}]}}",
    );
    sim.advance(sim.start() + SignedDuration::from_secs(10));
    assert_eq!(
        taints_of(sim.world(), "new-1"),
        ["example.com/agent-not-ready:NoSchedule"]
    );
    let observed = sim.observed();
    let node = observed.nodes.iter().find(|n| n.name == "new-1").unwrap();
    assert_eq!(node.taints.len(), 1);
    // The scheduler keeps a pod that does not tolerate it off the node, and places one that
    // does.
    let w = sim.world_mut();
    let kind = w.kind("", "v1", "pods");
    for (name, tolerations) in [
        ("web", json!([])),
        (
            "agent",
            json!([{"key": "example.com/agent-not-ready", "operator": "Exists",
                    "effect": "NoSchedule"}]),
        ),
    ] {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "demo"},
            "spec": {"containers": [{"name": name, "image": "img:1"}],
                     "tolerations": tolerations,
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                         {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name",
                             "operator": "In", "values": ["new-1"]}]}]}}}},
        });
        w.create(&kind, "demo", pod, &client(), None).unwrap();
    }
    w.reconcile();
    sim.advance(sim.now() + SignedDuration::from_secs(30));
    let node_of = |name: &str| {
        sim.world()
            .store
            .get("/pods", "demo", name)
            .unwrap()
            .object()["spec"]["nodeName"]
            .clone()
    };
    assert!(node_of("web").is_null(), "{}", node_of("web"));
    assert_eq!(node_of("agent"), "new-1");
}

#[test]
fn removing_a_taint_patches_that_taint_alone_and_only_at_the_version_read() {
    let mut sim = cluster(
        "nodes:
  - name: new-1
    taints:
      - {key: dedicated, value: gpu, effect: NoSchedule}
      - {key: example.com/agent-not-ready, effect: NoSchedule}
      - {key: example.com/agent-not-ready, effect: NoExecute}",
    );
    // A write with a resourceVersion the node no longer has is refused whole: nothing is
    // removed, the taint another writer added stays.
    let stale = sim
        .world()
        .store
        .get("/nodes", "", "new-1")
        .unwrap()
        .object()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let w = sim.world_mut();
    let kind = w.kind("", "v1", "nodes");
    let mut node = (*w.store.get("/nodes", "", "new-1").unwrap().object()).clone();
    node["spec"]["taints"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "later", "effect": "NoSchedule"}));
    w.update(&kind, "", "new-1", false, node, &client(), None)
        .unwrap();
    let body = serde_json::to_vec(&daemonsync_core::record::bodies::taint_removal_patch(
        &stale, 1,
    ))
    .unwrap();
    let refused = w
        .patch(&kind, "", "new-1", false, PatchType::Json, &body, &client())
        .unwrap_err();
    assert_eq!(refused.code, 422, "{}", refused.message);
    assert_eq!(taints_of(sim.world(), "new-1").len(), 4);

    // The cluster's own removal reads the node first: only the NoSchedule readiness taint goes.
    let removed = block_on(sim.remove_node_taint(
        "new-1",
        "example.com/agent-not-ready",
        crate::model::TaintEffect::NoSchedule,
    ))
    .unwrap();
    assert!(removed);
    assert_eq!(
        taints_of(sim.world(), "new-1"),
        [
            "dedicated:NoSchedule",
            "example.com/agent-not-ready:NoExecute",
            "later:NoSchedule"
        ]
    );
    let observed = sim.observed();
    assert_eq!(observed.nodes[0].taints.len(), 3, "the nodes show it");
    // Gone already: nothing to do, no error.
    let again = block_on(sim.remove_node_taint(
        "new-1",
        "example.com/agent-not-ready",
        crate::model::TaintEffect::NoSchedule,
    ))
    .unwrap();
    assert!(!again);
    let missing = block_on(sim.remove_node_taint(
        "gone",
        "example.com/agent-not-ready",
        crate::model::TaintEffect::NoSchedule,
    ));
    assert!(
        matches!(missing, Err(ClusterError::NotFound { .. })),
        "{missing:?}"
    );
}

#[test]
fn a_stale_write_is_a_conflict_and_a_taken_field_or_a_taken_name_is_rejected() {
    use super::api::error::ApiError;
    // kube-apiserver's optimistic lock and preconditions (409 Conflict): planned again.
    let stale = ApiError::conflict(
        "pods",
        "",
        "p",
        "the object has been modified; please apply your changes to the latest version and try again",
    );
    assert!(matches!(
        super::cluster_error(stale, "pod", "ns", "p"),
        ClusterError::Conflict(_)
    ));
    // A server-side apply taking another manager's field (409 Conflict with its causes) and
    // a create of a name taken (409 AlreadyExists): the same write cannot succeed.
    let taken = ApiError::apply_conflict(
        "manageddaemonsets",
        "daemonsync.io",
        "agent",
        &[("kubectl".into(), ".spec.daemonSet".into())],
    );
    assert!(matches!(
        super::cluster_error(taken, "record", "ns", "agent"),
        ClusterError::Rejected(_)
    ));
    let exists = ApiError::already_exists("pods", "", "p");
    assert!(matches!(
        super::cluster_error(exists, "pod", "ns", "p"),
        ClusterError::Rejected(_)
    ));
}

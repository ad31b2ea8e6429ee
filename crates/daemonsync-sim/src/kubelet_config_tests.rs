//! The simulated kubelet with a pod's ConfigMaps and Secrets, as the real one: a missing
//! volume source keeps the pod `ContainerCreating` with a `FailedMount` warning, a missing
//! environment source makes its container wait with `CreateContainerConfigError`, and both go
//! on once the object appears. So a rollout that forgot to write its config never becomes
//! ready.

use super::Sim;
use super::api::world::{World, WriteParams};
use super::config::SimConfig;
use jiff::SignedDuration;
use serde_json::{Value, json};

fn cluster() -> Sim {
    let cfg = "nodes: [{name: n1}]\nnamespaces: [{name: demo}]\n";
    Sim::new(SimConfig::parse(cfg).expect("sim file")).expect("cluster")
}

fn client() -> WriteParams {
    WriteParams {
        manager: "kubectl".into(),
        ..WriteParams::default()
    }
}

/// Creates pod `p` on n1 with `spec` (containers and volumes) through the API.
fn create_pod(w: &mut World, spec: Value) {
    let kind = w.registry.by_storage("/pods").unwrap();
    let mut spec = spec;
    spec["nodeName"] = json!("n1");
    w.create(
        &kind,
        "demo",
        json!({"metadata": {"name": "p"}, "spec": spec}),
        &client(),
        None,
    )
    .expect("the pod is accepted");
    w.reconcile();
}

/// `kubectl create` of a ConfigMap or Secret (`storage` `/configmaps` or `/secrets`), or
/// `kubectl replace` of one that exists.
fn put(w: &mut World, storage: &str, name: &str, data: Value) {
    let kind = w.registry.by_storage(storage).unwrap();
    let body = json!({"metadata": {"name": name}, "data": data});
    match w.store.get(storage, "demo", name) {
        None => w.create(&kind, "demo", body, &client(), None).map(|_| ()),
        Some(_) => w
            .update(&kind, "demo", name, false, body, &client(), None)
            .map(|_| ()),
    }
    .expect("written");
    w.reconcile();
}

fn pod(w: &World) -> Value {
    (*w.store.get("/pods", "demo", "p").expect("the pod").object()).clone()
}

fn waiting(w: &World, container: usize) -> (String, String) {
    let p = pod(w);
    let st = &p["status"]["containerStatuses"][container]["state"]["waiting"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (s(&st["reason"]), s(&st["message"]))
}

fn ready(w: &World) -> bool {
    pod(w)["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn settle(sim: &mut Sim) {
    let end = sim.now() + SignedDuration::from_mins(5);
    while sim.advance(end) {}
}

/// The messages of the pod's `FailedMount` events.
fn failed_mounts(w: &World) -> Vec<String> {
    w.store
        .list("/events", Some("demo"))
        .filter(|e| e.object()["reason"] == "FailedMount")
        .map(|e| {
            e.object()["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn a_missing_configmap_volume_keeps_the_pod_container_creating_until_it_appears() {
    let mut sim = cluster();
    create_pod(
        sim.world_mut(),
        json!({"containers": [{"name": "c", "image": "agent:1"}],
               "volumes": [{"name": "config", "configMap": {"name": "cfg"}}]}),
    );
    settle(&mut sim);
    let w = sim.world();
    assert_eq!(pod(w)["status"]["phase"], "Pending");
    assert!(!ready(w));
    assert_eq!(waiting(w, 0).0, "ContainerCreating");
    assert_eq!(
        failed_mounts(w),
        ["MountVolume.SetUp failed for volume \"config\" : configmap \"cfg\" not found"]
    );
    put(sim.world_mut(), "/configmaps", "cfg", json!({"a": "1"}));
    settle(&mut sim);
    assert!(ready(sim.world()), "{}", pod(sim.world())["status"]);
}

#[test]
fn a_missing_key_of_a_volume_item_is_a_failed_mount_too() {
    let mut sim = cluster();
    put(
        sim.world_mut(),
        "/secrets",
        "tls",
        json!({"tls.crt": "Yw=="}),
    );
    create_pod(
        sim.world_mut(),
        json!({"containers": [{"name": "c", "image": "agent:1"}],
               "volumes": [{"name": "certs", "secret": {"secretName": "tls",
                            "items": [{"key": "tls.key", "path": "k"}]}}]}),
    );
    settle(&mut sim);
    assert!(!ready(sim.world()));
    assert_eq!(
        failed_mounts(sim.world()),
        [
            "MountVolume.SetUp failed for volume \"certs\" : references non-existent secret key: tls.key"
        ]
    );
}

#[test]
fn a_missing_env_source_waits_with_create_container_config_error() {
    let mut sim = cluster();
    create_pod(
        sim.world_mut(),
        json!({"containers": [{"name": "c", "image": "agent:1", "env": [{"name": "TOKEN",
               "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}]}]}),
    );
    settle(&mut sim);
    let w = sim.world();
    assert_eq!(
        waiting(w, 0),
        (
            "CreateContainerConfigError".into(),
            "secret \"creds\" not found".into()
        )
    );
    assert_eq!(
        pod(w)["status"]["phase"],
        "Pending",
        "the container never ran"
    );
    let observed = sim.observed();
    assert_eq!(
        observed.pods[0].waiting_reason.as_deref(),
        Some("CreateContainerConfigError")
    );
    // There, but without the key: still waiting, for the key now.
    put(
        sim.world_mut(),
        "/secrets",
        "creds",
        json!({"other": "eA=="}),
    );
    settle(&mut sim);
    assert_eq!(
        waiting(sim.world(), 0).1,
        "couldn't find key token in Secret demo/creds"
    );
    put(
        sim.world_mut(),
        "/secrets",
        "creds",
        json!({"token": "eA=="}),
    );
    settle(&mut sim);
    assert!(ready(sim.world()), "{}", pod(sim.world())["status"]);
}

#[test]
fn an_init_container_without_its_config_holds_the_pod_and_optional_sources_never_do() {
    let mut sim = cluster();
    create_pod(
        sim.world_mut(),
        json!({"initContainers": [{"name": "init", "image": "busybox",
                   "envFrom": [{"configMapRef": {"name": "boot"}}]}],
               "containers": [{"name": "c", "image": "agent:1",
                   "envFrom": [{"configMapRef": {"name": "extra", "optional": true}}]}],
               "volumes": [{"name": "v", "secret": {"secretName": "maybe", "optional": true}}]}),
    );
    settle(&mut sim);
    let p = pod(sim.world());
    assert_eq!(
        p["status"]["initContainerStatuses"][0]["state"]["waiting"]["reason"],
        "CreateContainerConfigError"
    );
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "PodInitializing"
    );
    put(sim.world_mut(), "/configmaps", "boot", json!({"MODE": "x"}));
    settle(&mut sim);
    assert!(ready(sim.world()), "{}", pod(sim.world())["status"]);
}

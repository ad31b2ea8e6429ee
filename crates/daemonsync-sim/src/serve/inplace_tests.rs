//! Over HTTP: a pod's image patched in place (JSON patch with a resourceVersion `test`,
//! merge and strategic merge patches), the pod update validation, `pods/status` writes for
//! readiness gates, and the container statuses the simulated kubelet reports.

use super::{ServeOptions, Server};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const JSON_PATCH: &str = "application/json-patch+json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

/// A server on a free 127.0.0.1 port for the sim file `yaml` (kept in `dir`).
async fn serve(dir: &tempfile::TempDir, yaml: &str) -> Server {
    let path = dir.path().join("sim.yaml");
    std::fs::write(&path, yaml).expect("sim file written");
    Server::start(ServeOptions::new(path))
        .await
        .expect("server starts")
}

async fn send(r: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let r = tokio::time::timeout(Duration::from_secs(10), r.send())
        .await
        .expect("an answer within 10 s")
        .expect("sent");
    let code = r.status();
    (code, r.json().await.expect("a JSON body"))
}

async fn patch(c: &Client, url: &str, type_: &str, body: Value) -> (StatusCode, Value) {
    send(
        c.patch(url)
            .header("content-type", type_)
            .body(body.to_string()),
    )
    .await
}

/// GETs `url` until `done` holds (at most 10 s); the last answer.
async fn poll(c: &Client, url: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (code, v) = send(c.get(url)).await;
        assert_eq!(code, StatusCode::OK, "{v}");
        if done(&v) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "not within 10 s: {v:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n-1"]}]}]}}});
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn condition<'a>(pod: &'a Value, type_: &str) -> &'a Value {
    pod["status"]["conditions"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

fn is_ready(pod: &Value) -> bool {
    condition(pod, "Ready")["status"] == "True"
}

fn container<'a>(pod: &'a Value, name: &str) -> &'a Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or(&Value::Null)
}

fn node_images(node: &Value) -> Vec<String> {
    node["status"]["images"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| i["names"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n.as_str().map(String::from))
        .collect()
}

const COSTS: &str = "seed: 1
kubelet: {startLatency: {fixed: 100ms}, pullLatency: {fixed: 300ms}, podSetupLatency: {fixed: 100ms}, terminationGrace: 100ms}
nodes:
  - {name: n-1, images: ['agent:1']}
";

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_image_patch_restarts_that_container_and_a_failed_precondition_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&dir, COSTS).await;
    let c = Client::new();
    let pods = format!("{}/api/v1/namespaces/default/pods", s.url());
    let url = format!("{pods}/web");
    let spec = json!({"containers": [{"name": "agent", "image": "agent:1"},
                                     {"name": "sidecar", "image": "agent:1"}]});
    let (code, created) = send(c.post(&pods).json(&pod("web", spec))).await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    let uid = created["metadata"]["uid"].clone();
    let ready = poll(&c, &url, is_ready).await;
    assert_eq!(container(&ready, "agent")["restartCount"], 0);
    assert_eq!(container(&ready, "agent")["imageID"], "sim://agent:1");
    let rv = ready["metadata"]["resourceVersion"].clone();

    // A JSON patch whose resourceVersion test fails: the API server's generic 422.
    let stale = json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "agent:2"}]);
    let (code, status) = patch(&c, &url, JSON_PATCH, stale).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "the server rejected our request due to an error in our request"
    );
    let (_, unchanged) = send(c.get(&url)).await;
    assert_eq!(unchanged["spec"]["containers"][0]["image"], "agent:1");
    assert_eq!(unchanged["metadata"]["resourceVersion"], rv);
    // A merge patch carrying a stale resourceVersion: 409.
    let (code, status) = patch(
        &c,
        &url,
        MERGE,
        json!({"metadata": {"resourceVersion": "1"}, "spec": {"containers": [
            {"name": "agent", "image": "agent:2"}, {"name": "sidecar", "image": "agent:1"}]}}),
    )
    .await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    assert_eq!(status["reason"], "Conflict");

    let current = json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "agent:2"}]);
    let (code, patched) = patch(&c, &url, JSON_PATCH, current).await;
    assert_eq!(code, StatusCode::OK, "{patched}");
    assert_eq!(patched["spec"]["containers"][0]["image"], "agent:2");
    assert!(!is_ready(&patched), "restarting: {patched:#}");
    let agent = container(&patched, "agent");
    assert_eq!(agent["image"], "agent:2");
    assert_eq!(agent["restartCount"], 1);
    assert_eq!(agent["state"]["waiting"]["reason"], "ContainerCreating");
    assert_eq!(agent["lastState"]["terminated"]["reason"], "Completed");
    assert!(container(&patched, "sidecar")["state"]["running"].is_object());
    assert_eq!(patched["status"]["phase"], "Running");

    let again = poll(&c, &url, is_ready).await;
    assert_eq!(again["metadata"]["uid"], uid, "the same pod");
    let agent = container(&again, "agent");
    assert_eq!(agent["image"], "agent:2");
    assert_eq!(agent["imageID"], "sim://agent:2");
    assert_eq!(agent["restartCount"], 1);
    assert_eq!(container(&again, "sidecar")["restartCount"], 0);
    let (_, node) = send(c.get(format!("{}/api/v1/nodes/n-1", s.url()))).await;
    assert_eq!(node_images(&node), ["agent:1", "agent:2"]);

    // A strategic merge patch changes one container by name.
    let (code, patched) = patch(
        &c,
        &url,
        STRATEGIC,
        json!({"spec": {"containers": [{"name": "sidecar", "image": "agent:2"}]}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{patched}");
    assert_eq!(container(&patched, "sidecar")["restartCount"], 1);
    let again = poll(&c, &url, is_ready).await;
    assert_eq!(container(&again, "agent")["restartCount"], 1);
    // The table's RESTARTS counts both, with the last restart's age.
    let (_, table) = send(c.get(&pods).header("accept", TABLE)).await;
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[1], "2/2");
    assert!(
        cells[3].as_str().is_some_and(|r| r.starts_with("2 (")),
        "{cells}"
    );

    // Other fields of a pod's spec are immutable.
    let (code, status) = patch(
        &c,
        &url,
        STRATEGIC,
        json!({"spec": {"containers": [{"name": "agent", "command": ["sleep", "1"]}]}}),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "spec");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`")
            && message.contains("spec.containers[0].command"),
        "{message}"
    );
    // A JSON patch that is no list of operations is a bad request.
    let (code, status) = patch(&c, &url, JSON_PATCH, json!({"op": "add"})).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pods_status_writes_set_the_conditions_of_readiness_gates() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(&dir, COSTS).await;
    let c = Client::new();
    let pods = format!("{}/api/v1/namespaces/default/pods", s.url());
    let url = format!("{pods}/gated");
    let status_url = format!("{url}/status");
    let spec = json!({"containers": [{"name": "agent", "image": "agent:1"}],
                      "readinessGates": [{"conditionType": "example.com/lb"}]});
    let (code, _) = send(c.post(&pods).json(&pod("gated", spec))).await;
    assert_eq!(code, StatusCode::CREATED);
    let started = poll(&c, &url, |p| {
        condition(p, "ContainersReady")["status"] == "True"
    })
    .await;
    let ready = condition(&started, "Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "ReadinessGatesNotReady");

    // A merge patch replaces the conditions list: the kubelet's own stay.
    let (code, patched) = patch(
        &c,
        &status_url,
        MERGE,
        json!({"status": {"conditions": [{"type": "example.com/lb", "status": "True", "reason": "Registered"}]}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{patched}");
    assert!(is_ready(&patched), "{patched:#}");
    assert_eq!(
        condition(&patched, "example.com/lb")["reason"],
        "Registered"
    );
    assert_eq!(condition(&patched, "PodScheduled")["status"], "True");
    assert_eq!(container(&patched, "agent")["ready"], true);
    let (_, table) = send(c.get(&url).header("accept", TABLE)).await;
    assert_eq!(table["rows"][0]["cells"][8], "1/1", "READINESS GATES");

    // PUT of the status subresource.
    let mut put = patched.clone();
    for cond in put["status"]["conditions"].as_array_mut().unwrap() {
        if cond["type"] == "example.com/lb" {
            cond["status"] = json!("False");
        }
    }
    let (code, replaced) = send(c.put(&status_url).json(&put)).await;
    assert_eq!(code, StatusCode::OK, "{replaced}");
    assert!(!is_ready(&replaced));
    assert_eq!(
        condition(&replaced, "Ready")["message"],
        "the status of pod readiness gate \"example.com/lb\" is not \"True\", but False"
    );

    // A strategic merge patch merges conditions by type; a phase a client writes is the
    // kubelet's and does not stick.
    let (code, patched) = patch(
        &c,
        &status_url,
        STRATEGIC,
        json!({"status": {"phase": "Failed", "conditions": [{"type": "example.com/lb", "status": "True"}]}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{patched}");
    assert!(is_ready(&patched));
    assert_eq!(patched["status"]["phase"], "Running");
    // A JSON patch of the status.
    let (code, patched) = patch(
        &c,
        &status_url,
        JSON_PATCH,
        json!([{"op": "add", "path": "/status/conditions/-", "value": {"type": "example.com/other", "status": "True"}}]),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{patched}");
    assert!(is_ready(&patched));
    assert_eq!(condition(&patched, "example.com/other")["status"], "True");
    let (_, stored) = send(c.get(&url)).await;
    assert_eq!(
        stored["spec"]["readinessGates"][0]["conditionType"],
        "example.com/lb"
    );
    assert!(is_ready(&stored));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn container_statuses_show_pulls_failures_and_pods_that_run_to_completion() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        &dir,
        "seed: 1
kubelet: {startLatency: {fixed: 600ms}, pullLatency: {fixed: 200ms}}
nodes: [{name: n-1}]
failures:
  images: [{image: 'agent:typo', reason: ImagePullBackOff}]
",
    )
    .await;
    let c = Client::new();
    let pods = format!("{}/api/v1/namespaces/default/pods", s.url());
    let node_url = format!("{}/api/v1/nodes/n-1", s.url());
    let job = json!({"restartPolicy": "Never",
                     "initContainers": [{"name": "init", "image": "init:1"}],
                     "containers": [{"name": "pull", "image": "agent:2"}]});
    let (code, created) = send(c.post(&pods).json(&pod("prepull", job))).await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    let (code, _) = send(c.post(&pods).json(&pod(
        "typo",
        json!({"containers": [{"name": "agent", "image": "agent:typo"}]}),
    )))
    .await;
    assert_eq!(code, StatusCode::CREATED);

    let pulling = poll(&c, &format!("{pods}/prepull"), |p| {
        p["status"]["initContainerStatuses"].is_array()
    })
    .await;
    assert_eq!(pulling["status"]["phase"], "Pending");
    assert_eq!(
        pulling["status"]["initContainerStatuses"][0]["state"]["waiting"]["reason"],
        "PodInitializing"
    );
    assert_eq!(condition(&pulling, "Initialized")["status"], "False");

    let failed = poll(&c, &format!("{pods}/typo"), |p| {
        container(p, "agent")["state"]["waiting"]["reason"] == "ErrImagePull"
    })
    .await;
    assert_eq!(failed["status"]["phase"], "Pending");
    assert_eq!(container(&failed, "agent")["imageID"], "");
    let backing_off = poll(&c, &format!("{pods}/typo"), |p| {
        container(p, "agent")["state"]["waiting"]["reason"] == "ImagePullBackOff"
    })
    .await;
    assert!(!is_ready(&backing_off));

    let done = poll(&c, &format!("{pods}/prepull"), |p| {
        p["status"]["phase"] == "Succeeded"
    })
    .await;
    let init = &done["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["reason"], "Completed");
    assert_eq!(init["ready"], true);
    let pull = container(&done, "pull");
    assert_eq!(pull["state"]["terminated"]["exitCode"], 0);
    assert_eq!(pull["state"]["terminated"]["reason"], "Completed");
    assert_eq!(pull["imageID"], "sim://agent:2");
    assert_eq!(pull["started"], false);
    assert_eq!(condition(&done, "Ready")["reason"], "PodCompleted");
    let node = poll(&c, &node_url, |n| node_images(n).len() == 2).await;
    assert_eq!(
        node_images(&node),
        ["agent:2", "init:1"],
        "pulled images stay, a failed one is not there"
    );
    let (_, table) = send(c.get(&pods).header("accept", TABLE)).await;
    let row = |name: &str| {
        table["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["cells"][0] == name)
            .map(|r| r["cells"].clone())
            .unwrap()
    };
    assert_eq!(
        row("prepull").as_array().unwrap()[1..4],
        [json!("0/1"), json!("Completed"), json!("0")]
    );
    assert_eq!(row("typo")[2], "ImagePullBackOff");
    s.shutdown().await;
}

#[test]
fn pod_update_validation_lets_images_change_and_tolerations_be_added_only() {
    use crate::api::engine::check_pod_update;
    let pod = json!({"spec": {"nodeName": "n-1",
        "initContainers": [{"name": "init", "image": "init:1"}],
        "containers": [{"name": "a", "image": "a:1"}],
        "tolerations": [{"key": "k", "operator": "Exists"}]}});
    let mut next = pod.clone();
    next["spec"]["containers"][0]["image"] = json!("a:2");
    next["spec"]["initContainers"][0]["image"] = json!("init:2");
    next["spec"]["tolerations"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "j", "operator": "Exists"}));
    next["spec"]["activeDeadlineSeconds"] = json!(60);
    assert_eq!(
        check_pod_update(&pod, &next).unwrap(),
        [
            ("init".to_string(), "init:2".to_string()),
            ("a".to_string(), "a:2".to_string())
        ]
    );
    let refused = |change: &dyn Fn(&mut Value)| {
        let mut next = pod.clone();
        change(&mut next);
        check_pod_update(&pod, &next).unwrap_err()
    };
    let (field, why) = refused(&|p| p["spec"]["tolerations"] = json!([]));
    assert_eq!(field, "spec");
    assert!(why.ends_with("changed: spec.tolerations"), "{why}");
    let (_, why) = refused(&|p| p["spec"]["containers"][0]["name"] = json!("b"));
    assert!(why.ends_with("changed: spec.containers[0].name"), "{why}");
    let (_, why) = refused(&|p| p["spec"]["hostNetwork"] = json!(true));
    assert!(why.contains("spec.hostNetwork"), "{why}");
}

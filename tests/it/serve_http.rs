//! `sim serve` at the HTTP level: watch resume and the in-stream 410, the simulator's pod
//! lifecycle, garbage collection, preconditions, server-side apply conflicts, Tables, CRDs,
//! events in two API groups, paged lists, and injected faults.

use crate::serve_support::{sim_dir, sim_file};
use daemonsync::cluster::sim::serve::{Faults, ServeOptions, Server};
use futures::StreamExt;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const WAIT: Duration = Duration::from_secs(15);

async fn server(dir: &std::path::Path, tweak: impl FnOnce(&mut ServeOptions)) -> Server {
    let mut opts = ServeOptions::new(sim_file(dir));
    tweak(&mut opts);
    Server::start(opts).await.expect("server starts")
}

async fn get(c: &Client, url: String) -> Value {
    c.get(url).send().await.unwrap().json().await.unwrap()
}

/// The lines of a watch, read one at a time with a bound.
struct Watch {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: Vec<u8>,
}

impl Watch {
    async fn open(c: &Client, url: String) -> Watch {
        let r = c.get(url).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        Watch {
            stream: Box::pin(r.bytes_stream()),
            buf: Vec::new(),
        }
    }

    /// The next event, or `None` when the server closed the stream.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Some(serde_json::from_slice(&line).expect("one JSON object per line"));
            }
            let chunk = tokio::time::timeout(WAIT, self.stream.next())
                .await
                .expect("a watch event within the bound");
            match chunk {
                Some(Ok(b)) => self.buf.extend_from_slice(&b),
                _ => return None,
            }
        }
    }

    /// Events until one satisfies `pred` (bounded).
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let e = self.next().await.expect("the watch stays open");
            if pred(&e) {
                return e;
            }
        }
    }
}

fn pod_for(node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"generateName": "probe-", "labels": {"app": "probe"}},
           "spec": {"containers": [{"name": "c", "image": "probe:1"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}})
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_is_bound_started_and_terminated_by_the_simulator_as_a_watch_shows() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let list = get(&c, format!("{}/api/v1/namespaces/default/pods", s.url())).await;
    let mut w = Watch::open(
        &c,
        format!(
            "{}/api/v1/namespaces/default/pods?watch=true&resourceVersion={}",
            s.url(),
            rv(&list)
        ),
    )
    .await;
    let r = c
        .post(format!("{}/api/v1/namespaces/default/pods?", s.url()))
        .json(&pod_for("n-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.unwrap();
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    assert!(
        name.starts_with("probe-") && name.len() == "probe-".len() + 5,
        "{name}"
    );
    assert!(created["metadata"]["uid"].is_string());
    let added = w.next().await.unwrap();
    assert_eq!(added["type"], "ADDED");
    let bound = w.until(|e| e["object"]["spec"]["nodeName"] == "n-1").await;
    assert_eq!(bound["type"], "MODIFIED");
    assert_eq!(bound["object"]["status"]["phase"], "Pending");
    let ready = w
        .until(|e| e["object"]["status"]["phase"] == "Running")
        .await;
    let conds = ready["object"]["status"]["conditions"].as_array().unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    );
    assert!(ready["object"]["status"]["podIP"].is_string());

    let r = c
        .delete(format!("{}/api/v1/namespaces/default/pods/{name}", s.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let terminating: Value = r.json().await.unwrap();
    assert!(
        terminating["metadata"]["deletionTimestamp"].is_string(),
        "graceful: {terminating}"
    );
    let deleted = w.until(|e| e["type"] == "DELETED").await;
    assert!(
        rv(&deleted["object"]) > rv(&terminating),
        "a DELETED event carries a new resourceVersion"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_resumes_after_its_resource_version_and_gets_410_in_the_stream_when_too_old() {
    let dir = sim_dir();
    let s = server(dir.path(), |o| o.history = 4).await;
    let c = Client::new();
    let nodes = get(&c, format!("{}/api/v1/nodes", s.url())).await;
    let start = rv(&nodes);
    let label = |i: usize| json!({"metadata": {"labels": {"step": i.to_string()}}});
    for i in 0..2 {
        let r = c
            .patch(format!("{}/api/v1/nodes/n-1", s.url()))
            .header("content-type", "application/merge-patch+json")
            .body(label(i).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    let mut w = Watch::open(
        &c,
        format!(
            "{}/api/v1/nodes?watch=1&resourceVersion={start}&allowWatchBookmarks=true",
            s.url()
        ),
    )
    .await;
    let first = w.next().await.unwrap();
    assert_eq!(
        (
            first["type"].as_str(),
            first["object"]["metadata"]["labels"]["step"].as_str()
        ),
        (Some("MODIFIED"), Some("0"))
    );
    let second = w.next().await.unwrap();
    assert_eq!(second["object"]["metadata"]["labels"]["step"], "1");
    for i in 2..8 {
        c.patch(format!("{}/api/v1/nodes/n-1", s.url()))
            .header("content-type", "application/merge-patch+json")
            .body(label(i).to_string())
            .send()
            .await
            .unwrap();
    }
    let mut old = Watch::open(
        &c,
        format!(
            "{}/api/v1/nodes?watch=true&resourceVersion={start}",
            s.url()
        ),
    )
    .await;
    let e = old.next().await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(
        (e["object"]["code"].as_i64(), e["object"]["reason"].as_str()),
        (Some(410), Some("Expired"))
    );
    assert!(
        old.next().await.is_none(),
        "the stream ends after the 410 event"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_record_collects_its_pods_and_orphan_leaves_them_unowned() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let pods = |sel: &'static str| {
        let c = c.clone();
        let url = format!(
            "{}/api/v1/namespaces/demo/pods?labelSelector={sel}",
            s.url()
        );
        async move { get(&c, url).await["items"].as_array().unwrap().clone() }
    };
    assert_eq!(pods("app%3Dagent").await.len(), 4, "one agent pod per node");
    let mds = format!(
        "{}/apis/daemonsync.io/v1alpha1/namespaces/demo/manageddaemonsets",
        s.url()
    );
    let r = c
        .delete(format!("{mds}/agent"))
        .json(&json!({"propagationPolicy": "Background"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    for p in pods("app%3Dagent").await {
        assert!(
            p["metadata"]["deletionTimestamp"].is_string(),
            "collected: {}",
            p["metadata"]["name"]
        );
    }
    let r = c
        .delete(format!("{mds}/logger"))
        .json(&json!({"propagationPolicy": "Orphan"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let loggers = pods("app%3Dlogger").await;
    assert_eq!(loggers.len(), 4);
    for p in &loggers {
        assert!(
            p["metadata"]["deletionTimestamp"].is_null()
                && p["metadata"]["ownerReferences"].is_null(),
            "{p}"
        );
    }
    let gone = c.get(format!("{mds}/logger")).send().await.unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    let status: Value = gone.json().await.unwrap();
    assert_eq!(
        (
            status["reason"].as_str(),
            status["details"]["group"].as_str()
        ),
        (Some("NotFound"), Some("daemonsync.io"))
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let url = format!(
        "{}/apis/daemonsync.io/v1alpha1/namespaces/demo/manageddaemonsets/agent",
        s.url()
    );
    let mut w = Watch::open(&c, format!("{}/apis/daemonsync.io/v1alpha1/namespaces/demo/manageddaemonsets?watch=true&fieldSelector=metadata.name%3Dagent", s.url())).await;
    w.until(|e| e["type"] == "ADDED").await;
    let r: Value = c
        .delete(&url)
        .json(&json!({"propagationPolicy": "Foreground"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    // The pods terminate over the grace period (300 ms), then the owner goes.
    w.until(|e| e["type"] == "DELETED").await;
    let left = get(
        &c,
        format!(
            "{}/api/v1/namespaces/demo/pods?labelSelector=app%3Dagent",
            s.url()
        ),
    )
    .await;
    assert_eq!(left["items"].as_array().unwrap().len(), 0);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_writes_and_failed_delete_preconditions_are_conflicts() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let url = format!("{}/api/v1/nodes/n-2", s.url());
    let node = get(&c, url.clone()).await;
    let mut stale = node.clone();
    c.patch(&url)
        .header("content-type", "application/strategic-merge-patch+json")
        .body(r#"{"metadata":{"labels":{"x":"1"}}}"#)
        .send()
        .await
        .unwrap();
    stale["metadata"]["labels"]["y"] = json!("2");
    let r = c.put(&url).json(&stale).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let status: Value = r.json().await.unwrap();
    assert_eq!(status["reason"], "Conflict");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified")
    );

    let pods = get(
        &c,
        format!("{}/api/v1/pods?fieldSelector=spec.nodeName%3Dn-2", s.url()),
    )
    .await;
    let pod = &pods["items"][0];
    let purl = format!(
        "{}/api/v1/namespaces/demo/pods/{}",
        s.url(),
        pod["metadata"]["name"].as_str().unwrap()
    );
    for pre in [json!({"uid": "nope"}), json!({"resourceVersion": "1"})] {
        let r = c
            .delete(&purl)
            .json(&json!({"preconditions": pre}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT, "{pre}");
        let status: Value = r.json().await.unwrap();
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .contains("Precondition failed"),
            "{status}"
        );
    }
    assert!(
        get(&c, purl.clone()).await["metadata"]["deletionTimestamp"].is_null(),
        "nothing deleted"
    );
    let r = c
        .delete(&purl)
        .json(&json!({"preconditions": {"uid": pod["metadata"]["uid"]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_conflicts_between_field_managers_unless_forced() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let url = |m: &str, force: bool| {
        format!(
            "{}/apis/coordination.k8s.io/v1/namespaces/default/leases/lock?&fieldManager={m}&force={force}",
            s.url()
        )
    };
    let lease = |h: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": h, "leaseDurationSeconds": 4}});
    let apply = |m: &'static str, h: &'static str, force: bool| {
        c.patch(url(m, force))
            .header("content-type", "application/apply-patch+yaml")
            .body(lease(h).to_string())
            .send()
    };
    assert_eq!(
        apply("alice", "alice", false).await.unwrap().status(),
        StatusCode::CREATED
    );
    let r = apply("bob", "bob", false).await.unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let status: Value = r.json().await.unwrap();
    assert_eq!(
        (status["reason"].as_str(), status["code"].as_i64()),
        (Some("Conflict"), Some(409))
    );
    assert_eq!(
        status["details"]["causes"][0]["type"],
        "FieldManagerConflict"
    );
    assert_eq!(
        status["details"]["causes"][0]["field"],
        ".spec.holderIdentity"
    );
    // Releasing with a strategic merge patch of nulls drops the fields and their ownership.
    let r = c
        .patch(format!(
            "{}/apis/coordination.k8s.io/v1/namespaces/default/leases/lock",
            s.url()
        ))
        .header("content-type", "application/strategic-merge-patch+json")
        .body(r#"{"spec":{"holderIdentity":null,"leaseDurationSeconds":null}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        apply("bob", "bob", false).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        apply("alice", "alice", true).await.unwrap().status(),
        StatusCode::OK
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_carry_the_columns_kubectl_prints() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let table = |path: &str| {
        c.get(format!("{}{path}", s.url()))
            .header("accept", TABLE)
            .send()
    };
    let names = |t: &Value| -> Vec<String> {
        t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["priority"] == 0)
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    let nodes: Value = table("/api/v1/nodes?limit=500")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(names(&nodes), ["Name", "Status", "Roles", "Age", "Version"]);
    let cp = nodes["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cells"][0] == "cp-1")
        .unwrap();
    assert_eq!(
        cp["cells"].as_array().unwrap()[1..3],
        [json!("Ready"), json!("control-plane")]
    );
    assert_eq!(cp["cells"][3], "60m");
    assert_eq!(cp["object"]["kind"], "PartialObjectMetadata");
    let pods: Value = table("/api/v1/pods").await.unwrap().json().await.unwrap();
    assert_eq!(names(&pods), ["Name", "Ready", "Status", "Restarts", "Age"]);
    assert_eq!(
        pods["rows"][0]["cells"].as_array().unwrap()[1..4],
        [json!("1/1"), json!("Running"), json!("0")]
    );
    assert!(pods["metadata"]["resourceVersion"].is_string());
    let mds: Value = table("/apis/daemonsync.io/v1alpha1/manageddaemonsets")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        names(&mds),
        [
            "Name",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "MISSCHEDULED",
            "REVISION",
            "MODE",
            "AGE"
        ]
    );
    assert_eq!(
        mds["rows"][0]["cells"].as_array().unwrap()[1..7],
        [json!(4), json!(4), json!(4), json!(4), json!(4), json!(0)]
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_created_crd_serves_its_objects_and_events_share_one_store_across_groups() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.sim.example.com"},
        "spec": {"group": "sim.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"]},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let r = c
        .post(format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            s.url()
        ))
        .json(&crd)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let disc = get(&c, format!("{}/apis/sim.example.com/v1", s.url())).await;
    assert_eq!(disc["resources"][0]["shortNames"], json!(["wg"]));
    assert_eq!(disc["resources"][1]["name"], "widgets/status");
    let widgets = format!(
        "{}/apis/sim.example.com/v1/namespaces/default/widgets",
        s.url()
    );
    let r = c.post(&widgets).json(&json!({"apiVersion": "sim.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1}})).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let again = c
        .post(&widgets)
        .json(&json!({"metadata": {"name": "w1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::CONFLICT);
    assert_eq!(
        again.json::<Value>().await.unwrap()["reason"],
        "AlreadyExists"
    );
    let smp = c
        .patch(format!("{widgets}/w1"))
        .header("content-type", "application/strategic-merge-patch+json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(smp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let st = c
        .patch(format!("{widgets}/w1/status"))
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"status":{"ok":true},"spec":{"size":9}}"#)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(
        (
            st["status"]["ok"].as_bool(),
            st["spec"]["size"].as_i64(),
            st["metadata"]["generation"].as_i64()
        ),
        (Some(true), Some(1), Some(1))
    );

    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "w1.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reason": "Reconciled", "note": "widget reconciled", "type": "Normal",
        "action": "Reconcile", "reportingController": "widget-controller", "reportingInstance": "wc-0",
        "regarding": {"apiVersion": "sim.example.com/v1", "kind": "Widget", "name": "w1", "namespace": "default"}});
    let r = c
        .post(format!(
            "{}/apis/events.k8s.io/v1/namespaces/default/events?",
            s.url()
        ))
        .json(&event)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let core = get(&c, format!("{}/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dw1%2CinvolvedObject.kind%3DWidget%2CinvolvedObject.fieldPath%3D", s.url())).await;
    assert_eq!(core["items"][0]["message"], "widget reconciled");
    assert_eq!(core["items"][0]["reportingComponent"], "widget-controller");
    let r = c
        .delete(format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.sim.example.com",
            s.url()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        c.get(&widgets).send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_faults_fail_about_the_given_share_and_close_watches() {
    let dir = sim_dir();
    let faults: Faults = "error-rate=0.3,watch-drop=1s".parse().unwrap();
    let s = server(dir.path(), |o| o.faults = faults).await;
    let c = Client::new();
    let (mut failed, mut retry_after) = (0, 0);
    for _ in 0..200 {
        let r = c
            .get(format!("{}/api/v1/nodes/n-1", s.url()))
            .send()
            .await
            .unwrap();
        match r.status() {
            StatusCode::OK => {}
            StatusCode::TOO_MANY_REQUESTS => {
                failed += 1;
                retry_after += r.headers().contains_key("retry-after") as usize;
            }
            StatusCode::INTERNAL_SERVER_ERROR => failed += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert!((30..=90).contains(&failed), "{failed} of 200 failed at 30%");
    assert!(retry_after > 0);
    let mut w = loop {
        let r = c
            .get(format!("{}/api/v1/nodes?watch=true", s.url()))
            .send()
            .await
            .unwrap();
        if r.status() == StatusCode::OK {
            break Watch {
                stream: Box::pin(r.bytes_stream()),
                buf: Vec::new(),
            };
        }
    };
    let mut events = 0;
    while w.next().await.is_some() {
        events += 1;
    }
    assert_eq!(
        events, 4,
        "the initial ADDED events, then the server closed the watch"
    );
    s.shutdown().await;
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paged_list_reads_every_page_at_the_first_pages_resource_version() {
    let dir = sim_dir();
    let s = server(dir.path(), |_| {}).await;
    let c = Client::new();
    let url = format!("{}/api/v1/nodes", s.url());
    let first = get(&c, format!("{url}?limit=2")).await;
    assert_eq!(names(&first), ["cp-1", "n-1"]);
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_string();
    // Between the pages a node is deleted and one created that sorts into the second page.
    let r = c.delete(format!("{url}/n-2")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = c
        .post(&url)
        .json(&json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-15"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let second = get(
        &c,
        format!("{url}?limit=2&continue={token}&resourceVersion=0"),
    )
    .await;
    assert_eq!(names(&second), ["n-2", "n-3"], "the nodes as they were");
    assert_eq!(
        second["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    assert!(
        second["metadata"].get("continue").is_none(),
        "the last page"
    );
    let now = get(&c, url.clone()).await;
    assert_eq!(names(&now), ["cp-1", "n-1", "n-15", "n-3"]);
    // kubectl's Tables page the same way.
    let table: Value = c
        .get(format!("{url}?limit=3"))
        .header("accept", TABLE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(table["rows"].as_array().unwrap().len(), 3);
    assert!(table["metadata"]["continue"].is_string());
    // Tokens the server did not write, or with a resourceVersion beside them, are refused.
    for query in [
        "continue=bm90LWEtdG9rZW4=",
        &format!("continue={token}&resourceVersion=1"),
    ] {
        let r = c
            .get(format!("{url}?limit=2&{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{query}");
    }
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_continue_token_expires_with_the_history_and_offers_the_rest_at_the_current_version() {
    let dir = sim_dir();
    let s = server(dir.path(), |o| o.history = 4).await;
    let c = Client::new();
    let url = format!("{}/api/v1/nodes", s.url());
    let first = get(&c, format!("{url}?limit=2")).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    for i in 0..6 {
        let r = c
            .patch(format!("{url}/n-3"))
            .header("content-type", "application/merge-patch+json")
            .body(json!({"metadata": {"labels": {"step": i.to_string()}}}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    let r = c
        .get(format!("{url}?limit=2&continue={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::GONE);
    let status: Value = r.json().await.unwrap();
    assert_eq!(status["reason"], "Expired");
    let rest = status["metadata"]["continue"]
        .as_str()
        .expect("a token to go on with");
    let second = get(&c, format!("{url}?limit=2&continue={rest}")).await;
    assert_eq!(names(&second), ["n-2", "n-3"]);
    assert_eq!(
        second["items"][1]["metadata"]["labels"]["step"], "5",
        "read as it is now"
    );
    s.shutdown().await;
}

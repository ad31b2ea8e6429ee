//! kube-rs 5 against `sim serve`: typed `Api<Pod>` and `Api<Node>`, and a runtime watcher
//! that sees pods come and go and lists again after the in-stream 410.

use crate::serve_support::{sim_dir, sim_file};
use daemonsync::cluster::sim::serve::{Faults, ServeOptions, Server};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use std::time::Duration;

async fn client(url: &str) -> kube::Client {
    let config = kube::Config::new(url.parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

fn probe_pod(node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"generateName": "probe-", "labels": {"app": "probe"}},
        "spec": {"containers": [{"name": "c", "image": "probe:1"}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}}))
    .unwrap()
}

type Events = futures::stream::BoxStream<'static, Result<watcher::Event<Pod>, watcher::Error>>;

async fn next(events: &mut Events) -> Result<watcher::Event<Pod>, watcher::Error> {
    tokio::time::timeout(Duration::from_secs(15), events.next())
        .await
        .expect("a watcher event within 15 s")
        .expect("the stream goes on")
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_lists_writes_and_watches_through_sim_serve() {
    let dir = sim_dir();
    let server = Server::start(ServeOptions::new(sim_file(dir.path())))
        .await
        .unwrap();
    let c = client(server.url()).await;
    let nodes: Api<Node> = Api::all(c.clone());
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        4
    );
    nodes
        .patch(
            "n-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"zone": "a"}}})),
        )
        .await
        .unwrap();
    let zoned = nodes
        .list(&ListParams::default().labels("zone=a"))
        .await
        .unwrap();
    assert_eq!(zoned.items.len(), 1);

    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    let mut events: Events =
        watcher(pods.clone(), watcher::Config::default().labels("app=probe")).boxed();
    assert!(matches!(
        next(&mut events).await.unwrap(),
        watcher::Event::Init
    ));
    assert!(matches!(
        next(&mut events).await.unwrap(),
        watcher::Event::InitDone
    ));
    let created = pods
        .create(&PostParams::default(), &probe_pod("n-2"))
        .await
        .unwrap();
    let name = created.metadata.name.clone().unwrap();
    let mut saw_running = false;
    while !saw_running {
        if let watcher::Event::Apply(p) = next(&mut events).await.unwrap() {
            saw_running = p.status.and_then(|s| s.phase).as_deref() == Some("Running");
        }
    }
    let conflict = pods
        .create(&PostParams::default(), &{
            let mut p = probe_pod("n-2");
            p.metadata.name = Some(name.clone());
            p
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&conflict, kube::Error::Api(s) if s.is_already_exists()),
        "{conflict}"
    );
    let stale = pods
        .delete(
            &name,
            &DeleteParams::default().preconditions(kube::api::Preconditions {
                uid: Some("nope".into()),
                resource_version: None,
            }),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&stale, kube::Error::Api(s) if s.is_conflict()),
        "{stale}"
    );
    pods.delete(&name, &DeleteParams::default()).await.unwrap();
    loop {
        if let watcher::Event::Delete(p) = next(&mut events).await.unwrap() {
            assert_eq!(p.metadata.name.as_deref(), Some(name.as_str()));
            break;
        }
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kube_rs_watcher_lists_again_after_a_410_event() {
    let dir = sim_dir();
    // A tiny history and watches dropped every second: while node writes go on, a watcher of
    // pods resumes from a resourceVersion the server no longer has.
    let server = Server::start(ServeOptions {
        history: 2,
        faults: Faults {
            watch_drop: Some(Duration::from_secs(1)),
            ..Faults::default()
        },
        bookmark_interval: Duration::from_secs(3600),
        ..ServeOptions::new(sim_file(dir.path()))
    })
    .await
    .unwrap();
    let c = client(server.url()).await;
    let nodes: Api<Node> = Api::all(c.clone());
    let writer = tokio::spawn(async move {
        for i in 0..300 {
            let _ = nodes
                .patch(
                    "n-1",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {"i": i.to_string()}}})),
                )
                .await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let pods: Api<Pod> = Api::all(c);
    let mut events = watcher(pods, watcher::Config::default()).boxed();
    let (mut inits, mut errors) = (0, 0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while inits < 2 && tokio::time::Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("watcher events")
            .expect("stream")
        {
            Ok(watcher::Event::Init) => inits += 1,
            Err(_) => errors += 1,
            Ok(_) => {}
        }
    }
    writer.abort();
    assert!(errors >= 1, "the 410 reached the watcher as an error");
    assert_eq!(inits, 2, "the watcher listed again after the 410");
    server.shutdown().await;
}

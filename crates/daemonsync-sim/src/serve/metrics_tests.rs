//! Over HTTP: `GET /metrics` counts the requests a client made, as kube-apiserver's
//! `apiserver_request_total` does.

use super::{ServeOptions, Server};
use reqwest::{Client, StatusCode};
use std::time::Duration;

const SIM: &str = "seed: 1\nnodes: [{name: n-1}]\n";

async fn metrics(c: &Client, url: &str) -> String {
    let r = c.get(format!("{url}/metrics")).send().await.expect("sent");
    assert_eq!(r.status(), StatusCode::OK);
    let content_type = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    r.text().await.expect("text")
}

/// The count of the series whose labels are `labels` (in the order printed), 0 when absent.
fn count(text: &str, labels: &str) -> u64 {
    let prefix = format!("apiserver_request_total{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|n| n.parse().expect("a count"))
        .unwrap_or(0)
}

fn series(code: u16, resource: &str, scope: &str, sub: &str, verb: &str) -> String {
    format!(
        "code=\"{code}\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"{resource}\",\
         scope=\"{scope}\",subresource=\"{sub}\",verb=\"{verb}\",version=\"v1\""
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_each_request_by_verb_resource_and_code() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim.yaml");
    std::fs::write(&path, SIM).unwrap();
    let s = Server::start(ServeOptions::new(path))
        .await
        .expect("starts");
    let (c, url) = (Client::new(), s.url().to_string());
    let send = |r: reqwest::RequestBuilder| async move {
        tokio::time::timeout(Duration::from_secs(10), r.send())
            .await
            .expect("answered within 10 s")
            .expect("sent")
            .status()
    };
    let before = metrics(&c, &url).await;
    assert_eq!(
        count(&before, &series(200, "pods", "cluster", "", "LIST")),
        0
    );

    assert_eq!(
        send(c.get(format!("{url}/api/v1/pods"))).await,
        StatusCode::OK
    );
    assert_eq!(
        send(c.get(format!("{url}/api/v1/pods"))).await,
        StatusCode::OK
    );
    let cm = format!("{url}/api/v1/namespaces/default/configmaps");
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}"#;
    let post = || {
        c.post(&cm)
            .header("content-type", "application/json")
            .body(body)
    };
    assert_eq!(send(post()).await, StatusCode::CREATED);
    assert_eq!(send(post()).await, StatusCode::CONFLICT);
    let apply = c
        .patch(format!("{cm}/c?fieldManager=t&force=true"))
        .header("content-type", "application/apply-patch+yaml")
        .body(body);
    assert_eq!(send(apply).await, StatusCode::OK);
    assert_eq!(
        send(c.get(format!("{cm}/missing"))).await,
        StatusCode::NOT_FOUND
    );
    // `watch` on one named object is a GET (upstream routes it to the get handler).
    assert_eq!(
        send(c.get(format!("{cm}/missing?watch=true"))).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(send(c.delete(format!("{cm}/c"))).await, StatusCode::OK);
    let watch = c.get(format!("{url}/api/v1/nodes?watch=true&timeoutSeconds=1"));
    assert_eq!(send(watch).await, StatusCode::OK);
    assert_eq!(send(c.get(format!("{url}/version"))).await, StatusCode::OK);

    let after = metrics(&c, &url).await;
    let want = [
        (series(200, "pods", "cluster", "", "LIST"), 2),
        (series(201, "configmaps", "resource", "", "POST"), 1),
        (series(409, "configmaps", "resource", "", "POST"), 1),
        (series(200, "configmaps", "resource", "", "APPLY"), 1),
        (series(404, "configmaps", "resource", "", "GET"), 2),
        (series(200, "configmaps", "resource", "", "DELETE"), 1),
        (series(200, "nodes", "cluster", "", "WATCH"), 1),
    ];
    for (labels, n) in want {
        assert_eq!(count(&after, &labels), n, "{labels} in\n{after}");
    }
    let version = "code=\"200\",component=\"\",dry_run=\"\",group=\"\",resource=\"\",scope=\"\",\
                   subresource=\"/version\",verb=\"GET\",version=\"\"";
    assert_eq!(count(&after, version), 1, "{after}");
    // The first scrape is counted, the one answering is not yet.
    let scrape = "code=\"200\",component=\"\",dry_run=\"\",group=\"\",resource=\"\",scope=\"\",\
                  subresource=\"/metrics\",verb=\"GET\",version=\"\"";
    assert_eq!(count(&after, scrape), 1, "{after}");
    s.shutdown().await;
}

//! `sim serve` benchmarks, over HTTP on 127.0.0.1:
//!
//! * `serve/list_pods_1000`: `GET /api/v1/pods` (JSON) of 1,000 pods, one request at a time.
//! * `serve/watch_fanout_10`: one node label patch, until each of 10 open watches has its
//!   MODIFIED event.
//!
//! Run with `cargo bench --bench serve`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use daemonsync::cluster::sim::serve::{ServeOptions, Server};
use futures::StreamExt;
use std::time::Duration;

fn sim_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("running")).unwrap();
    std::fs::write(
        dir.path().join("running/ds.yaml"),
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: bench}\nspec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      containers: [{name: agent, image: 'agent:1'}]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("sim.yaml"),
        "nodes: [{name: 'n-{i}', count: 1000}]\nrunning: [{manifest: running/}]\n",
    )
    .unwrap();
    dir
}

fn serve(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = sim_dir();
    let server = rt
        .block_on(Server::start(ServeOptions::new(
            dir.path().join("sim.yaml"),
        )))
        .unwrap();
    let url = server.url().to_string();
    let client = reqwest::Client::new();
    let mut group = c.benchmark_group("serve");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(10));

    group.throughput(Throughput::Elements(1));
    group.bench_function("list_pods_1000", |b| {
        b.iter(|| {
            rt.block_on(async {
                let body = client
                    .get(format!("{url}/api/v1/pods"))
                    .send()
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                assert!(body.len() > 1_000_000);
            })
        })
    });

    let mut watches: Vec<_> = rt.block_on(async {
        let mut out = Vec::new();
        for _ in 0..10 {
            let r = client
                .get(format!(
                    "{url}/api/v1/nodes?watch=true&resourceVersion=1000000000"
                ))
                .send()
                .await
                .unwrap();
            out.push(r.bytes_stream());
        }
        out
    });
    let mut i = 0u64;
    group.throughput(Throughput::Elements(10));
    group.bench_function("watch_fanout_10", |b| {
        b.iter(|| {
            i += 1;
            rt.block_on(async {
                let patch = format!(r#"{{"metadata":{{"labels":{{"i":"{i}"}}}}}}"#);
                client
                    .patch(format!("{url}/api/v1/nodes/n-0001"))
                    .header("content-type", "application/merge-patch+json")
                    .body(patch)
                    .send()
                    .await
                    .unwrap();
                for w in watches.iter_mut() {
                    let chunk = w.next().await.unwrap().unwrap();
                    assert!(chunk.ends_with(b"\n"));
                }
            })
        })
    });
    group.finish();
    drop(watches);
    rt.block_on(server.shutdown());
}

criterion_group!(benches, serve);
criterion_main!(benches);

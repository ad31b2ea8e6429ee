//! The soak test of issue 13, bounded to about a minute and a half: `daemonsync sync` keeps a
//! fleet converged while nodes join, leave, are relabelled and go NotReady and back, pods are
//! deleted behind its back, the manifests change three times, and the API server answers 5 %
//! of requests with errors and drops every watch after 5 s. The daemon must not panic or
//! stop, its resident memory must stay flat after warm-up, and every DaemonSet must converge
//! at the end. It runs with `DAEMONSYNC_LONG_TESTS=1` (a step of its own in `.ci/run`).

use crate::rbac::request_log;
use crate::serve_support::ServeProcess;
use crate::sync_support::{Api, NS, Sync, daemonset, daemonset_with, fleet, wait_for, wait_until};
use std::time::{Duration, Instant};

/// Growth of the resident set allowed between warm-up and the end of the churn.
const RSS_GROWTH_KIB: u64 = 30 * 1024;

/// Node churn, from the server's start. It ends by 60 s; the fleet then has n-01…n-10 less
/// n-05, late-2 and extra-1; pool=edge on n-02, n-03 and extra-1; every node Ready.
const CHURN: &str = "churn:
  - {at: 20s, add: {name: 'late-{i}', count: 2, labels: {kubernetes.io/os: linux}}}
  - {at: 24s, label: {node: n-01, labels: {pool: edge}}}
  - {at: 28s, ready: {node: n-04, ready: false}}
  - {at: 33s, remove: n-05}
  - {at: 38s, label: {node: n-02, labels: {pool: edge}}}
  - {at: 44s, ready: {node: n-04, ready: true}}
  - {at: 48s, label: {node: n-01, labels: {pool: null}}}
  - {at: 52s, add: {name: 'extra-{i}', count: 1, labels: {kubernetes.io/os: linux, pool: edge}}}
  - {at: 56s, remove: late-1}
  - {at: 60s, label: {node: n-03, labels: {pool: edge}}}
";
const LAST_CHURN: Duration = Duration::from_secs(61);

fn edge(image: &str) -> String {
    daemonset_with("edge", image, "      nodeSelector: {pool: edge}\n")
}

fn manifests(agent: &str, logger: &str, edge_image: &str) -> String {
    format!(
        "{}---\n{}---\n{}",
        daemonset("agent", agent),
        daemonset("logger", logger),
        edge(edge_image)
    )
}

#[test]
fn under_churn_pod_deletions_and_api_faults_memory_stays_flat_and_every_daemonset_converges() {
    if !crate::support::long_tests("the soak") {
        return;
    }
    let sim = fleet(10, &manifests("agent:1", "logger:1", "edge:1"), CHURN);
    let log = sim.path().join("requests.jsonl");
    let server = ServeProcess::start(
        sim.path(),
        &[
            "--faults",
            "error-rate=0.05,watch-drop=5s",
            "--request-log",
            log.to_str().unwrap(),
        ],
    );
    let started = Instant::now();
    let api = Api {
        url: server.url.clone(),
    };
    let dir = sim.path().join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |text: String| std::fs::write(dir.join("ds.yaml"), text).unwrap();
    write(manifests("agent:2", "logger:1", "edge:1"));
    let sync = Sync::start(
        &server.kubeconfig,
        sim.path(),
        "sync",
        &[
            "--manifests",
            dir.to_str().unwrap(),
            "--progress-deadline",
            "30s",
        ],
    );
    sync.wait_ready();

    // Warm-up: the first rollout, then the resident set just before the churn starts.
    wait_for("the warm-up rollout", 30, &[&sync], || {
        api.converged("agent", "agent:2")
    });
    let mut rss = Vec::new();
    while started.elapsed() < Duration::from_secs(18) {
        rss.push((started.elapsed().as_secs(), sync.rss_kib()));
        std::thread::sleep(Duration::from_millis(500));
    }
    let warm = rss.iter().map(|(_, kib)| *kib).max().unwrap();

    // The churn runs in the server; the test deletes a pod every 1.5 s and edits the
    // manifests three times.
    let edits: [(u64, fn() -> String); 3] = [
        (30, || manifests("agent:3", "logger:1", "edge:1")),
        (45, || manifests("agent:3", "logger:2", "edge:1")),
        (55, || manifests("agent:3", "logger:2", "edge:2")),
    ];
    let mut next_edit = 0;
    let mut next_delete = started.elapsed();
    let mut deleted = 0;
    let mut next_sample = started.elapsed();
    while started.elapsed() < LAST_CHURN {
        let now = started.elapsed();
        if let Some(status) = sync.exited() {
            panic!("sync exited during the soak ({status})\n{}", sync.tail());
        }
        if next_edit < edits.len() && now >= Duration::from_secs(edits[next_edit].0) {
            write(edits[next_edit].1());
            next_edit += 1;
        }
        if now >= next_delete {
            let apps = ["agent", "logger", "edge"];
            let pods = api.pods(apps[deleted % apps.len()]);
            let live: Vec<&serde_json::Value> = pods
                .iter()
                .filter(|p| !crate::sync_support::terminating(p))
                .collect();
            if !live.is_empty() {
                let pod = crate::sync_support::name(live[deleted % live.len()]);
                api.delete_pod(pod);
            }
            deleted += 1;
            next_delete = now + Duration::from_millis(1500);
        }
        if now >= next_sample {
            rss.push((now.as_secs(), sync.rss_kib()));
            next_sample = now + Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    // Every DaemonSet converges on its last version, on the nodes it selects.
    let edge_nodes = api.nodes_labelled("pool", "edge");
    assert_eq!(
        edge_nodes,
        ["extra-1", "n-02", "n-03"],
        "the churn as planned"
    );
    let all = api.nodes();
    assert_eq!(all.len(), 11, "{all:?}");
    let targets = [
        ("agent", "agent:3", all.clone()),
        ("logger", "logger:2", all.clone()),
        ("edge", "edge:2", edge_nodes),
    ];
    wait_for("every DaemonSet converged", 60, &[&sync], || {
        let wrong: Vec<String> = targets
            .iter()
            .filter_map(|(app, image, nodes)| api.converged_on(app, image, nodes).err())
            .collect();
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("; "))
        }
    });
    let end = sync.rss_kib();
    rss.push((started.elapsed().as_secs(), end));
    eprintln!(
        "soak: {deleted} pods deleted; RSS (s, KiB) {rss:?}; warm-up {warm} KiB, end {end} KiB; {:?}",
        started.elapsed()
    );
    assert!(
        end <= warm + RSS_GROWTH_KIB,
        "resident memory grew from {warm} KiB after warm-up to {end} KiB: {rss:?}"
    );

    // The daemon's own view agrees: nothing halted, every DaemonSet fully updated.
    for (app, _, nodes) in &targets {
        let labels = format!("{{namespace=\"{NS}\",daemonset=\"{app}\"}}");
        let updated = format!("daemonsync_daemonset_status_updated_number_scheduled{labels}");
        wait_until(&format!("{app}'s metrics"), 10, &[&sync], || {
            (sync.metric(&updated) == Some(nodes.len() as f64)).then_some(())
        });
        let halted = format!("daemonsync_rollout_halted{labels}");
        assert_eq!(sync.metric(&halted), Some(0.0), "{}", sync.metrics());
    }
    // The faults were real: the daemon got errors, and went on.
    let faulted = request_log(&log)
        .iter()
        .filter(|l| {
            l["userAgent"]
                .as_str()
                .is_some_and(|a| a.starts_with("daemonsync/"))
                && matches!(l["code"].as_u64(), Some(429 | 500))
        })
        .count();
    assert!(faulted > 0, "no injected error reached the daemon");
    let log_text = sync.log();
    assert!(!log_text.contains("panicked"), "{}", sync.tail());
    assert_eq!(sync.terminate().code(), Some(0), "{}", sync.tail());
}

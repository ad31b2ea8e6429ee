//! Failure signals over the API: `sim serve` models the kubelet's start failures and crashes
//! after start, and `daemonsync apply --cluster kube` halts on them at once, naming the
//! signal, the container and the node.

use crate::live::{daemonsync, text};
use crate::serve_support::ServeProcess;
use serde_json::Value;
use std::path::Path;

/// A sim directory: three nodes running `agent:1` (one container, `agent`), the given
/// `failures:` entries, and `git/` holding `agent` at `image`.
fn fleet(image: &str, failures: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ds = |image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: demo}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  updateStrategy: {{rollingUpdate: {{maxUnavailable: 1}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec:\n      containers: [{{name: agent, image: '{image}'}}]\n"
        )
    };
    std::fs::create_dir_all(dir.path().join("running")).unwrap();
    std::fs::write(dir.path().join("running/ds.yaml"), ds("agent:1")).unwrap();
    std::fs::create_dir_all(dir.path().join("git")).unwrap();
    std::fs::write(dir.path().join("git/ds.yaml"), ds(image)).unwrap();
    std::fs::write(
        dir.path().join("sim.yaml"),
        format!(
            "seed: 5\nkubelet: {{startLatency: {{fixed: 100ms}}, terminationGrace: 100ms}}\nnodes:\n  - name: 'n-{{i}}'\n    count: 3\nrunning:\n  - manifest: running/\nfailures:\n  images: [{failures}]\n"
        ),
    )
    .unwrap();
    dir
}

fn git(dir: &Path) -> String {
    dir.join("git").display().to_string()
}

#[test]
fn a_create_container_config_error_over_the_api_halts_before_the_deadline() {
    let dir = fleet(
        "agent:2",
        "{image: 'agent:2', reason: CreateContainerConfigError}",
    );
    let server = ServeProcess::start(dir.path(), &[]);
    let out = daemonsync(
        &server.kubeconfig,
        &[
            "apply",
            "--manifests",
            &git(dir.path()),
            "--progress-deadline",
            "10m",
        ],
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(
        all.contains("CreateContainerConfigError in container agent"),
        "the signal and the container: {all}"
    );
    assert!(
        all.contains("failed (CreateContainerConfigError in container agent) on 1 node(s)"),
        "{all}"
    );
}

#[tokio::test]
async fn sim_serve_shows_a_crash_after_start_with_its_restart_count_growing() {
    let dir = fleet("agent:1", "{image: 'agent:leaky', crashAfter: 1s}");
    let server = ServeProcess::start(dir.path(), &[]);
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "leaky", "namespace": "demo"},
        "spec": {"nodeName": "n-1", "containers": [{"name": "leaky", "image": "agent:leaky"}]}
    });
    let url = format!("{}/api/v1/namespaces/demo/pods", server.url);
    let client = reqwest::Client::new();
    let created = client.post(&url).json(&pod).send().await.unwrap();
    assert!(created.status().is_success(), "{:?}", created.text().await);
    // Runs 1 s, exits, is started again 10 s later: within 15 s it has restarted once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        let p: Value = client
            .get(format!("{url}/leaky"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let c = p["status"]["containerStatuses"][0].clone();
        if c["restartCount"].as_u64().unwrap_or_default() >= 1 {
            break c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no restart within 30 s: {c:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(status["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 1);
}

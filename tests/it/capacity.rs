//! Capacity in the plan: from a snapshot of nearly full nodes, `daemonsync plan` reports
//! `requests-do-not-fit` naming the nodes where a new pod will not fit, before anything rolls;
//! a snapshot `daemonsync snapshot` writes keeps what this needs.

use crate::live::text;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The DaemonSet `agent` in `infra` requesting `cpu`.
fn agent(cpu: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: infra}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec:\n      containers:\n        - name: agent\n          image: agent:2\n          resources: {{requests: {{cpu: {cpu}, memory: 64Mi}}}}\n"
    )
}

fn plan_json(manifests: &Path, cluster: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_daemonsync"))
        .args([
            "plan",
            "-o",
            "json",
            "--now",
            "2026-01-01T00:10:00Z",
            "--cluster",
            cluster,
        ])
        .arg("--manifests")
        .arg(manifests)
        .output()
        .expect("daemonsync runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

fn risk<'a>(plan: &'a Value, kind: &str) -> Option<&'a Value> {
    plan["daemonsets"][0]["risks"]
        .as_array()?
        .iter()
        .find(|r| r["kind"] == kind)
}

/// A `kubectl get nodes,pods -A -o yaml` dump: three 2-cpu nodes, each running an `agent` at
/// 100m and another workload; the workloads leave 150m, 1100m and 1900m free.
const DUMP: &str = r#"apiVersion: v1
kind: List
items:
"#;

fn dump() -> String {
    let mut out = DUMP.to_string();
    for (node, busy) in [("busy-1", "1750m"), ("half-1", "800m"), ("idle-1", "0")] {
        out.push_str(&format!(
            "- apiVersion: v1\n  kind: Node\n  metadata: {{name: {node}}}\n  status:\n    allocatable: {{cpu: '2', memory: 8Gi, pods: '110'}}\n    conditions: [{{type: Ready, status: 'True'}}]\n"
        ));
        out.push_str(&format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: web-{node}, namespace: apps}}\n  spec:\n    nodeName: {node}\n    containers: [{{name: web, image: web:1, resources: {{requests: {{cpu: '{busy}'}}}}}}]\n  status: {{phase: Running}}\n"
        ));
        out.push_str(&format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: agent-{node}\n    namespace: infra\n    labels: {{app: agent, controller-revision-hash: old}}\n    ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u1, controller: true}}]\n  spec:\n    nodeName: {node}\n    containers: [{{name: agent, image: agent:1, resources: {{requests: {{cpu: 100m}}}}}}]\n  status:\n    phase: Running\n    conditions: [{{type: Ready, status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z'}}]\n"
        ));
    }
    out
}

#[test]
fn plan_on_a_snapshot_of_nearly_full_nodes_reports_requests_that_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cluster.yaml"), dump()).unwrap();
    std::fs::create_dir(dir.path().join("git")).unwrap();
    std::fs::write(dir.path().join("git/ds.yaml"), agent("1200m")).unwrap();
    let snapshot = format!("snapshot:{}", dir.path().join("cluster.yaml").display());
    let plan = plan_json(&dir.path().join("git"), &snapshot);
    let r = risk(&plan, "requests-do-not-fit").expect("the risk");
    // busy-1: 2000 - 1850 + 100 = 250m; half-1: 2000 - 900 + 100 = 1200m (fits exactly).
    assert_eq!(r["nodes"], serde_json::json!(["busy-1"]), "{r:#}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .starts_with("cpu 1200m needed, 250m free on 1 node: busy-1"),
        "{r:#}"
    );
    std::fs::write(dir.path().join("git/ds.yaml"), agent("200m")).unwrap();
    let plan = plan_json(&dir.path().join("git"), &snapshot);
    assert!(risk(&plan, "requests-do-not-fit").is_none(), "{plan:#}");
}

/// A simulated cluster running `agent` at 100m on a 1-CPU node `full-1` (with `load`, e.g.
/// `, load: {cpu: 850m}`) and a 4-CPU node `roomy-1`.
fn sim_dir(load: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("running")).unwrap();
    std::fs::write(
        dir.path().join("running/ds.yaml"),
        agent("100m").replace("agent:2", "agent:1"),
    )
    .unwrap();
    std::fs::write(
        crate::serve_support::sim_file(dir.path()),
        format!(
            "seed: 1\nnodes:\n  - {{name: full-1, capacity: {{cpu: '1'}}{load}}}\n  - {{name: roomy-1, capacity: {{cpu: '4'}}}}\nnamespaces: [{{name: infra}}]\nrunning:\n  - manifest: running/\n"
        ),
    )
    .unwrap();
    dir
}

/// The plan of `agent` at 300m names full-1, where 850m of other work and the old agent's
/// 100m (freed by its replacement) leave 1000 - (850 + 100) + 100 = 150m.
fn full_1_has_150m_free(plan: &Value) {
    let r = risk(plan, "requests-do-not-fit").expect("the risk");
    assert_eq!(r["nodes"], serde_json::json!(["full-1"]), "{r:#}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .starts_with("cpu 300m needed, 150m free on 1 node: full-1"),
        "{r:#}"
    );
}

#[test]
fn a_snapshot_daemonsync_writes_keeps_allocatable_and_requests() {
    let dir = sim_dir(", load: {cpu: 850m}");
    let file = dir.path().join("cluster.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_daemonsync"))
        .args(["snapshot", "--cluster"])
        .arg(format!("sim:{}", dir.path().join("sim.yaml").display()))
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains("daemonsync.io/requested") && written.contains("allocatable"),
        "{written}"
    );
    std::fs::create_dir(dir.path().join("git")).unwrap();
    std::fs::write(dir.path().join("git/ds.yaml"), agent("300m")).unwrap();
    let plan = plan_json(
        &dir.path().join("git"),
        &format!("snapshot:{}", file.display()),
    );
    full_1_has_150m_free(&plan);
}

#[test]
fn plan_over_the_api_counts_what_every_pod_of_a_node_requests() {
    // The watch of every pod's requests reads a pod of another workload (850m, the load)
    // and the running agent.
    let dir = sim_dir("");
    let server = crate::serve_support::ServeProcess::start(dir.path(), &[]);
    let web = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "infra",
                     "managedFields": [{"manager": "test", "operation": "Update"}]},
        "spec": {"nodeName": "full-1", "containers": [{"name": "web", "image": "web:1",
            "env": [{"name": "MODE", "value": "busy"}],
            "resources": {"requests": {"cpu": "850m"}}}]}
    });
    let (code, body) = crate::sync_support::request(
        "POST",
        &format!("{}/api/v1/namespaces/infra/pods", server.url),
        &[("content-type", "application/json")],
        &web.to_string(),
    )
    .expect("the API answers");
    assert_eq!(code, 201, "{body}");
    std::fs::create_dir(dir.path().join("git")).unwrap();
    std::fs::write(dir.path().join("git/ds.yaml"), agent("300m")).unwrap();
    let out = crate::live::daemonsync(
        &server.kubeconfig,
        &[
            "plan",
            "-o",
            "json",
            "--cluster",
            "kube",
            "-m",
            dir.path().join("git").to_str().unwrap(),
        ],
    );
    let plan: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    full_1_has_150m_free(&plan);
}

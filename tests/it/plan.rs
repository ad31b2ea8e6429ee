//! `daemonsync plan` end to end: corpus manifests against a hand-written snapshot.

use crate::support::{corpus, daemonsync, repo_path};
use serde_json::Value;

const NOW: &str = "2026-11-22T00:00:00Z";

fn snapshot_arg() -> String {
    format!(
        "snapshot:{}",
        repo_path("fixtures/snapshots/seven-nodes.yaml").display()
    )
}

#[test]
fn plan_table_shows_counters_and_the_nodes_that_need_attention() {
    let out = daemonsync()
        .args([
            "plan",
            "--now",
            NOW,
            "--cluster",
            &snapshot_arg(),
            "--manifests",
        ])
        .arg(repo_path("fixtures/manifests/kube-flannel.yaml"))
        .assert()
        .code(2);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    // Flannel needs kubernetes.io/os=linux and tolerates every NoSchedule taint: six of the
    // seven nodes qualify; the Windows node runs a pod it should not.
    let header = stdout.lines().next().unwrap();
    for col in [
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "MISSCHEDULED",
    ] {
        assert!(header.contains(col), "missing column {col}: {header}");
    }
    let row = stdout.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cells[..8],
        [
            "kube-flannel",
            "kube-flannel-ds",
            "6",
            "5",
            "4",
            "0",
            "4",
            "1"
        ],
        "{row}"
    );
    assert!(stdout.contains("win-1"), "{stdout}");
    assert!(
        stdout.contains("kubernetes.io/os In [linux]"),
        "the reason names the failing term: {stdout}"
    );
    assert!(stdout.contains("uninit-1"), "{stdout}");
    assert!(out.get_output().stderr.is_empty());
}

#[test]
fn a_daemonset_the_builtin_controller_runs_is_blocked_with_both_choices() {
    let out = daemonsync()
        .args([
            "plan",
            "-o",
            "json",
            "--now",
            NOW,
            "--cluster",
            &snapshot_arg(),
            "--manifests",
        ])
        .arg(repo_path("fixtures/manifests/kube-flannel.yaml"))
        .assert()
        .code(2);
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let ds = &v["daemonsets"][0];
    assert_eq!(ds["step"]["phase"], "none", "nothing is written for it");
    assert_eq!(ds["ownership"]["handover"]["state"], "blocked");
    let risk = ds["risks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "builtin-controller")
        .expect("a builtin-controller risk");
    let text = risk["message"].as_str().unwrap();
    assert!(
        text.contains("daemonsync.io/adopt") && text.contains("daemonsync.io/mode: native"),
        "{text}"
    );
}

#[test]
fn plan_json_is_the_versioned_plan_object() {
    let managed = format!(
        "snapshot:{}",
        repo_path("fixtures/snapshots/seven-nodes-managed.yaml").display()
    );
    let out = daemonsync()
        .args([
            "plan",
            "-o",
            "json",
            "--now",
            NOW,
            "--cluster",
            &managed,
            "--manifests",
        ])
        .arg(repo_path("fixtures/manifests/kube-flannel.yaml"))
        .assert()
        .code(2);
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["apiVersion"], "daemonsync.io/v1alpha1");
    assert_eq!(v["kind"], "Plan");
    let ds = &v["daemonsets"][0];
    assert_eq!(ds["namespace"], "kube-flannel");
    assert_eq!(ds["status"]["desiredNumberScheduled"], 6);
    assert_eq!(ds["status"]["numberMisscheduled"], 1);
    // The step is the per-node fixes: create on the node without a pod, delete the pod on
    // the Windows node. The rolling update comes after.
    assert_eq!(ds["step"]["phase"], "manage");
    assert_eq!(ds["step"]["create"], serde_json::json!(["uninit-1"]));
    assert_eq!(ds["step"]["delete"][0]["node"], "win-1");
    assert_eq!(ds["step"]["delete"][0]["reason"], "misscheduled");
    let states: Vec<(String, String)> = ds["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["node"].as_str().unwrap().into(),
                n["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(states.contains(&("win-1".into(), "misscheduled".into())));
    assert!(states.contains(&("uninit-1".into(), "missing".into())));
    assert!(
        ds["waves"].as_array().unwrap().len() >= 5,
        "five old pods, maxUnavailable 1"
    );
}

#[test]
fn plan_is_byte_identical_across_runs() {
    let run = || {
        daemonsync()
            .args([
                "plan",
                "-o",
                "json",
                "--now",
                NOW,
                "--cluster",
                &snapshot_arg(),
                "--manifests",
            ])
            .arg(repo_path("fixtures/manifests/kube-flannel.yaml"))
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(run(), run());
}

#[test]
fn invalid_manifest_is_an_error_naming_file_and_field_path() {
    let Some(manifest) = corpus("nvidia-gpu-operator__state-driver-0500_daemonset.yaml") else {
        return;
    };
    let out = daemonsync()
        .args(["plan", "--cluster", &snapshot_arg(), "--manifests"])
        .arg(manifest)
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("nvidia-gpu-operator__state-driver-0500_daemonset.yaml"),
        "{stderr}"
    );
    assert!(stderr.contains("metadata.namespace"), "{stderr}");
    assert!(out.get_output().stdout.is_empty(), "nothing is planned");
}

#[test]
fn legacy_api_version_is_rejected_with_the_fix() {
    let Some(manifest) = corpus("kured__kured-ds-1.0.0-legacy.yaml") else {
        return;
    };
    let out = daemonsync()
        .args(["plan", "--cluster", &snapshot_arg(), "--manifests"])
        .arg(manifest)
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("apps/v1"), "{stderr}");
    assert!(stderr.contains("selector"), "{stderr}");
}

#[test]
fn bad_flags_fail_before_reading_anything() {
    let out = daemonsync()
        .args([
            "plan",
            "--cluster",
            "live:prod",
            "--manifests",
            "does-not-exist.yaml",
        ])
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("snapshot:FILE"), "{stderr}");
    let out = daemonsync()
        .args([
            "plan",
            "--now",
            "yesterday",
            "--cluster",
            &snapshot_arg(),
            "--manifests",
            "x.yaml",
        ])
        .assert()
        .code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("RFC 3339"));
}

#[test]
fn missing_snapshot_is_an_error_naming_it() {
    let out = daemonsync()
        .args([
            "plan",
            "--cluster",
            "snapshot:/nonexistent/cluster.yaml",
            "--manifests",
        ])
        .arg(repo_path("fixtures/manifests/kube-flannel.yaml"))
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("/nonexistent/cluster.yaml"), "{stderr}");
}

#[test]
fn a_plan_with_nothing_to_do_exits_zero() {
    // One node, one pod of the current revision, ready: nothing to change.
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("ds.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: ops}\n\
         spec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n\
         \x20   spec: {containers: [{name: a, image: 'agent:1.0'}]}\n",
    )
    .unwrap();
    let cluster = dir.path().join("cluster.yaml");
    let write_cluster = |hash: &str| {
        std::fs::write(
            &cluster,
            format!(
                "apiVersion: v1\nkind: List\nitems:\n\
                 - {{apiVersion: v1, kind: Node, metadata: {{name: n1}}, status: {{conditions: [{{type: Ready, status: 'True'}}]}}}}\n\
                 - apiVersion: v1\n  kind: Pod\n  metadata:\n    name: agent-x\n    namespace: ops\n    labels: {{app: agent, controller-revision-hash: '{hash}'}}\n    ownerReferences: [{{apiVersion: daemonsync.io/v1alpha1, kind: ManagedDaemonSet, name: agent, uid: u1, controller: true}}]\n  spec: {{nodeName: n1, containers: [{{name: a, image: 'agent:1.0'}}]}}\n  status: {{phase: Running, conditions: [{{type: Ready, status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z'}}]}}\n"
            ),
        )
        .unwrap()
    };
    write_cluster("unknown");
    let args = |c: &std::path::Path| {
        vec![
            "plan".to_string(),
            "-o".into(),
            "json".into(),
            "--now".into(),
            NOW.into(),
            "--cluster".into(),
            format!("snapshot:{}", c.display()),
            "--manifests".into(),
            manifest.display().to_string(),
        ]
    };
    let out = daemonsync().args(args(&cluster)).assert().code(2);
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let revision = v["daemonsets"][0]["revision"].as_str().unwrap().to_string();
    write_cluster(&revision);
    daemonsync().args(args(&cluster)).assert().code(0);
}

//! The `daemonsync` binary: every command, its exit codes and its error messages.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

const NOW: &str = "2025-06-01T12:00:00Z";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

fn flannel() -> PathBuf {
    fixture("manifests/kube-flannel.yaml")
}

fn seven_nodes() -> String {
    format!(
        "snapshot:{}",
        fixture("snapshots/seven-nodes.yaml").display()
    )
}

fn bin() -> Command {
    let mut c = assert_cmd::cargo_bin_cmd!("daemonsync");
    c.env_remove("NO_COLOR")
        .env_remove("GITHUB_REPOSITORY")
        .env_remove("DAEMONSYNC_NAMESPACE");
    c
}

fn plan(extra: &[&str]) -> Command {
    let mut c = bin();
    c.arg("plan")
        .arg("--manifests")
        .arg(flannel())
        .arg("--cluster")
        .arg(seven_nodes())
        .args(["--now", NOW])
        .args(extra);
    c
}

fn stdout(c: &mut Command) -> String {
    String::from_utf8(c.output().unwrap().stdout).unwrap()
}

/// The revision flannel's manifest has in the plan.
fn flannel_revision() -> String {
    let out = stdout(&mut plan(&["-o", "json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["daemonsets"][0]["revision"].as_str().unwrap().to_string()
}

/// A snapshot of `n` Linux nodes, each running a ready flannel pod of revision `rev` that
/// daemonsync's record owns.
fn converged_snapshot(dir: &Path, n: usize, rev: &str) -> PathBuf {
    let mut items = Vec::new();
    for i in 0..n {
        let node = format!("node-{i:04}");
        items.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {"kubernetes.io/os": "linux"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }));
        items.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "namespace": "kube-flannel", "name": format!("flannel-{node}"),
                "labels": {"app": "flannel", "tier": "node", "controller-revision-hash": rev},
                "ownerReferences": [{"apiVersion": "daemonsync.io/v1alpha1", "kind": "ManagedDaemonSet",
                    "name": "kube-flannel-ds", "uid": "u", "controller": true}],
                "creationTimestamp": "2025-06-01T10:00:00Z",
            },
            "spec": {"containers": [], "nodeName": node},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2025-06-01T10:01:00Z"}]},
        }));
    }
    let path = dir.join("converged.json");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&path, serde_json::to_string(&list).unwrap()).unwrap();
    path
}

#[test]
fn every_command_has_help_with_an_example() {
    for cmd in ["plan", "render", "status", "snapshot"] {
        bin()
            .args([cmd, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"))
            .stdout(predicate::str::contains(format!("daemonsync {cmd} ")))
            .stdout(predicate::str::contains("Exit status:"));
    }
    bin()
        .args(["plan", "--help"])
        .assert()
        .stdout(predicate::str::contains("2  the plan has changes"));
}

#[test]
fn plan_table_with_changes_exits_2() {
    plan(&[])
        .assert()
        .code(2)
        .stdout(predicate::str::starts_with("NAMESPACE "))
        .stdout(predicate::str::contains("NODE SELECTOR   AGE"))
        .stdout(predicate::str::contains("RISK: [pods-removed]"))
        .stdout(predicate::str::contains("win-1"))
        .stdout(predicate::str::contains('\u{1b}').not());
}

#[test]
fn plan_wide_lists_every_node() {
    let out = stdout(&mut plan(&["-o", "wide"]));
    for node in [
        "cp-1",
        "fargate-1",
        "gpu-1",
        "uninit-1",
        "win-1",
        "worker-amd64-1",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(node)),
            "{node}: {out}"
        );
    }
    plan(&["-o", "wide"]).assert().code(2);
}

#[test]
fn plan_json_with_changes_exits_2_and_parses() {
    let out = plan(&["-o", "json"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["apiVersion"], "daemonsync.io/v1alpha1");
    assert_eq!(v["daemonsets"][0]["risks"][0]["kind"], "pods-removed");
    assert_eq!(v["daemonsets"][0]["risks"][0]["nodes"][0], "win-1");
}

#[test]
fn plan_markdown_with_changes_exits_2() {
    plan(&["-o", "markdown", "--repository", "acme/fleet"])
        .assert()
        .code(2)
        .stdout(predicate::str::starts_with(
            "<!-- daemonsync-plan:default -->\n",
        ))
        .stdout(predicate::str::contains(
            "`acme/fleet` · cluster `snapshot:",
        ))
        .stdout(predicate::str::contains("> [!WARNING]"))
        .stdout(predicate::str::contains(
            "<details><summary><b>kube-flannel/kube-flannel-ds</b>",
        ));
}

#[test]
fn plan_without_changes_exits_0() {
    let rev = flannel_revision();
    let dir = tempfile::tempdir().unwrap();
    let snap = converged_snapshot(dir.path(), 3, &rev);
    let cluster = format!("snapshot:{}", snap.display());
    let run = |out: &str| {
        let mut c = bin();
        c.arg("plan")
            .arg("-m")
            .arg(flannel())
            .args(["-c", &cluster, "--now", NOW, "-o", out]);
        c
    };
    run("table")
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "kube-flannel/kube-flannel-ds: no changes",
        ));
    let md = run("markdown").assert().code(0).get_output().stdout.clone();
    let md = String::from_utf8(md).unwrap();
    assert_eq!(md.lines().count(), 1, "{md}");
    assert!(md.contains("no changes"), "{md}");
}

#[test]
fn bad_cluster_source_exits_1_with_a_hint() {
    let mut c = bin();
    c.arg("plan")
        .arg("-m")
        .arg(flannel())
        .args(["-c", "live:prod"]);
    c.assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "unsupported cluster \"live:prod\"",
        ))
        .stderr(predicate::str::contains("snapshot:FILE"))
        .stderr(predicate::str::contains("kube:CONTEXT"));
}

#[test]
fn missing_files_exit_1_naming_them() {
    let mut c = bin();
    c.args(["plan", "-m", "/no/such/manifests.yaml", "-c"])
        .arg(seven_nodes());
    c.assert()
        .code(1)
        .stderr(predicate::str::contains("/no/such/manifests.yaml"));
    let mut c = bin();
    c.arg("plan")
        .arg("-m")
        .arg(flannel())
        .args(["-c", "snapshot:/no/such/snapshot.yaml"]);
    c.assert()
        .code(1)
        .stderr(predicate::str::contains("/no/such/snapshot.yaml"))
        .stderr(predicate::str::contains(
            "kubectl get nodes,pods,daemonsets",
        ));
}

#[test]
fn invalid_manifest_exits_1_listing_field_paths() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: bad, namespace: x}\nspec:\n  \
         selector: {matchLabels: {app: bad}}\n  template:\n    metadata: {labels: {app: other}}\n    \
         spec:\n      containers:\n      - name: c\n",
    )
    .unwrap();
    let mut c = bin();
    c.arg("plan")
        .arg("-m")
        .arg(&bad)
        .arg("-c")
        .arg(seven_nodes());
    c.assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "1 invalid DaemonSet(s); nothing was planned",
        ))
        .stderr(predicate::str::contains("spec.template.metadata.labels"))
        .stderr(predicate::str::contains(
            "spec.template.spec.containers[0].image",
        ));
}

#[test]
fn bad_now_exits_1() {
    let mut c = bin();
    c.arg("plan")
        .arg("-m")
        .arg(flannel())
        .arg("-c")
        .arg(seven_nodes())
        .args(["--now", "yesterday"]);
    c.assert()
        .code(1)
        .stderr(predicate::str::contains("invalid --now \"yesterday\""));
}

/// Usage errors exit 1 like every other error: 2 means "the plan has changes".
#[test]
fn usage_errors_exit_1() {
    bin()
        .args(["plan", "--output", "yaml"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("invalid value 'yaml'"));
    bin().arg("nonsense").assert().code(1);
    bin()
        .assert()
        .code(1)
        .stderr(predicate::str::contains("Usage:"));
}

#[test]
fn errors_do_not_repeat_their_cause() {
    let mut c = bin();
    c.arg("plan")
        .arg("-m")
        .arg(flannel())
        .args(["-c", "snapshot:/no/such/snapshot.yaml"]);
    let err = String::from_utf8(c.output().unwrap().stderr).unwrap();
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn render_prints_defaulted_daemonsets() {
    let mut c = bin();
    c.arg("render").arg("-m").arg(flannel());
    c.assert()
        .success()
        .stdout(predicate::str::starts_with(
            "apiVersion: apps/v1\nkind: DaemonSet\n",
        ))
        .stdout(predicate::str::contains("name: kube-flannel-ds"))
        // Defaulted: the strategy is spelled out.
        .stdout(predicate::str::contains("maxSurge: 0"));
}

#[test]
fn render_node_prints_the_pod_for_that_node() {
    let mut c = bin();
    c.arg("render")
        .arg("-m")
        .arg(flannel())
        .args(["--node", "gpu-1", "-c"])
        .arg(seven_nodes());
    c.assert()
        .success()
        .stdout(predicate::str::starts_with("apiVersion: v1\nkind: Pod\n"))
        .stdout(predicate::str::contains("generateName: kube-flannel-ds-"))
        .stdout(predicate::str::contains("kind: ManagedDaemonSet"))
        .stdout(predicate::str::contains(
            "apiVersion: daemonsync.io/v1alpha1",
        ))
        .stdout(predicate::str::contains("- gpu-1"));

    // A node that does not qualify: rendered, with a note.
    let mut c = bin();
    c.arg("render")
        .arg("-m")
        .arg(flannel())
        .args(["--node", "win-1", "-c"])
        .arg(seven_nodes());
    c.assert()
        .success()
        .stderr(predicate::str::contains("would not run a pod on win-1"));
}

#[test]
fn render_errors() {
    let mut c = bin();
    c.arg("render")
        .arg("-m")
        .arg(flannel())
        .args(["--node", "nope", "-c"])
        .arg(seven_nodes());
    c.assert()
        .code(1)
        .stderr(predicate::str::contains(
            "node \"nope\" is not in the snapshot",
        ))
        .stderr(predicate::str::contains("gpu-1"));
    let mut c = bin();
    c.arg("render")
        .arg("-m")
        .arg(flannel())
        .args(["-d", "calico"]);
    c.assert()
        .code(1)
        .stderr(predicate::str::contains("no DaemonSet named \"calico\""));
    // --cluster only makes sense with --node.
    let mut c = bin();
    c.arg("render")
        .arg("-m")
        .arg(flannel())
        .arg("-c")
        .arg(seven_nodes());
    c.assert()
        .code(1)
        .stderr(predicate::str::contains("--node"));
}

#[test]
fn status_shows_live_and_managed_daemonsets() {
    let mut c = bin();
    c.arg("status")
        .arg("-c")
        .arg(seven_nodes())
        .args(["--now", NOW]);
    c.assert()
        .success()
        .stdout(predicate::str::starts_with("NAMESPACE "))
        .stdout(predicate::str::contains("kube-flannel-ds"));

    let mut c = bin();
    c.arg("status")
        .arg("-c")
        .arg(seven_nodes())
        .arg("-m")
        .arg(flannel())
        .args(["--nodes", "--now", NOW]);
    c.assert()
        .success()
        .stdout(predicate::str::contains("win-1 "))
        .stdout(predicate::str::contains("misscheduled"));

    let mut c = bin();
    c.arg("status")
        .arg("-c")
        .arg(seven_nodes())
        .args(["-o", "json", "--now", NOW]);
    let out = c.assert().success().get_output().stdout.clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["daemonsets"][0]["source"], "live");
}

#[test]
fn status_errors() {
    bin()
        .args(["status", "-c", "s3://bucket"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("snapshot:FILE"));
    // The default is the current kubeconfig context; without one, say where it was looked for.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-kubeconfig");
    bin()
        .args(["status"])
        .env("KUBECONFIG", &missing)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "KUBECONFIG={}",
            missing.display()
        )))
        .stderr(predicate::str::contains("--cluster snapshot:FILE"));
}

/// `daemonsync snapshot -c <seven nodes> -o OUT`.
fn snapshot_of_seven_nodes(out: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = bin();
    c.arg("snapshot")
        .arg("-c")
        .arg(seven_nodes())
        .arg("-o")
        .arg(out);
    c
}

/// The JSON plan of the flannel fixture against `cluster`, at [`NOW`].
fn flannel_plan_json(cluster: &str) -> String {
    let mut c = bin();
    c.arg("plan")
        .arg("-m")
        .arg(flannel())
        .args(["-c", cluster, "--now", NOW, "-o", "json"]);
    stdout(&mut c)
}

#[test]
fn snapshot_writes_a_pruned_snapshot_that_plans_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pruned.yaml");
    let mut c = snapshot_of_seven_nodes(&out);
    c.assert()
        .success()
        .stderr(predicate::str::contains("7 nodes, 7 pods, 1 DaemonSets"));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("managedFields"));
    let pruned = format!("snapshot:{}", out.display());
    let json = flannel_plan_json;
    // The same plan: the snapshot withholds env values, args and commands but records their
    // digests, and plans never show them on either side.
    assert_eq!(json(&pruned), json(&seven_nodes()));

    let mut c = snapshot_of_seven_nodes("-");
    c.assert()
        .success()
        .stdout(predicate::str::starts_with("apiVersion: v1\nitems:\n"));
}

#[test]
fn snapshot_to_a_json_file_is_json_and_plans_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cluster.json");
    let mut c = snapshot_of_seven_nodes(&out);
    c.assert().success();
    let text = std::fs::read_to_string(&out).unwrap();
    let list: serde_json::Value = serde_json::from_str(&text).expect("a JSON file");
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap().len(), 7 + 7 + 1);
    assert_eq!(
        flannel_plan_json(&format!("snapshot:{}", out.display())),
        flannel_plan_json(&seven_nodes())
    );
}

#[test]
fn a_snapshot_that_cannot_be_written_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the file should go: the rename into place fails.
    let out = dir.path().join("cluster.yaml");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), "x").unwrap();
    let mut c = snapshot_of_seven_nodes(&out);
    c.assert()
        .code(1)
        .stderr(predicate::str::contains("cannot write snapshot"));
    assert!(out.join("keep").exists(), "what was there is untouched");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("cluster.yaml")]);
}

#[test]
fn snapshot_of_the_simulated_fleet_plans_like_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.yaml");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let sim = format!("sim:{}", examples.join("sim/demo.yaml").display());
    let mut c = bin();
    c.arg("snapshot").args(["-c", &sim]).arg("-o").arg(&out);
    c.assert()
        .success()
        .stderr(predicate::str::contains("31 nodes"));
    let manifests = examples.join("manifests");
    let json = |cluster: &str| {
        let mut c = bin();
        c.arg("plan")
            .arg("-m")
            .arg(&manifests)
            .args(["-c", cluster, "--now", NOW, "-o", "json"]);
        stdout(&mut c)
    };
    let from_file = json(&format!("snapshot:{}", out.display()));
    assert_eq!(from_file, json(&sim));
    assert!(from_file.contains("\"node-agent\""), "{from_file}");
}

#[test]
fn snapshot_errors() {
    bin()
        .args(["snapshot", "-c", "snapshot:/no/such.yaml", "-o", "-"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/no/such.yaml"));
    let mut c = snapshot_of_seven_nodes("/no/such/dir/out.yaml");
    c.assert().code(1).stderr(predicate::str::contains(
        "cannot write snapshot /no/such/dir/out.yaml",
    ));
}

#[test]
fn broken_pipe_is_not_an_error() {
    // Large enough output that the writer is still writing when `head` exits.
    let dir = tempfile::tempdir().unwrap();
    let snap = converged_snapshot(dir.path(), 3_000, "old");
    let bin = assert_cmd::cargo::cargo_bin!("daemonsync");
    let script = format!(
        "({bin} plan -m {m} -c snapshot:{s} --now {NOW} -o json 2>{d}/err; echo $? >{d}/rc) \
         | head -c 10 >/dev/null",
        bin = bin.display(),
        m = flannel().display(),
        s = snap.display(),
        d = dir.path().display(),
    );
    let status = std::process::Command::new("sh")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(status.success());
    let rc = std::fs::read_to_string(dir.path().join("rc")).unwrap();
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap();
    assert_eq!(rc.trim(), "0", "stderr: {err}");
    assert!(!err.to_lowercase().contains("broken pipe"), "{err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn secrets_in_manifests_are_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(flannel(), dir.path().join("flannel.yaml")).unwrap();
    std::fs::write(
        dir.path().join("secret.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: kube-flannel}\n\
         stringData: {token: hunter2-very-secret}\ndata: {key: aHVudGVyMg==}\n",
    )
    .unwrap();
    for args in [
        vec!["render"],
        vec!["render", "--node", "gpu-1"],
        vec!["plan", "-o", "json"],
        vec!["plan", "-o", "markdown"],
        vec!["plan", "-o", "wide"],
    ] {
        let mut c = bin();
        c.args(&args).arg("-m").arg(dir.path());
        if args[0] == "plan" {
            c.arg("-c").arg(seven_nodes());
        }
        let out = c.output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "{args:?}: {all}");
        for secret in ["hunter2", "aHVudGVyMg"] {
            assert!(!all.contains(secret), "{args:?} printed a secret: {all}");
        }
    }
}

#[test]
fn lt_tolerations_are_valid_only_where_the_cluster_has_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.yaml");
    let manifest = crate::support::ds_with(
        "agent",
        "agent:1",
        "",
        "{key: example.com/generation, operator: Lt, value: \"5\", effect: NoSchedule}",
    );
    std::fs::write(&file, manifest).unwrap();
    let run = |extra: &[&str]| {
        let mut c = bin();
        c.arg("plan")
            .arg("-m")
            .arg(&file)
            .arg("-c")
            .arg(seven_nodes())
            .args(["--now", NOW])
            .args(extra);
        c.assert()
    };
    // `TaintTolerationComparisonOperators` is off by default in v1.35: the API server refuses.
    run(&["--kube-version", "1.35"])
        .code(1)
        .stderr(predicate::str::contains(
            "spec.template.spec.tolerations[0].operator: Unsupported value: \"Lt\"",
        ));
    // A cluster with the gate on accepts the DaemonSet, and daemonsync plans it.
    run(&["--taint-comparison-operators", "--kube-version", "1.35"]).code(2);
    // The snapshot's cluster runs v1.33, which has no such operator, gate or not.
    run(&["--taint-comparison-operators"])
        .code(1)
        .stderr(predicate::str::contains(
            "Unsupported value: \"Lt\": supported values: \"Equal\", \"Exists\" \
             (Kubernetes v1.33; accepted from v1.35, where TaintTolerationComparisonOperators is \
             on)",
        ));
}

/// A DaemonSet whose projected volume source has a misspelt `items` (`itmes`), beside a CRD
/// whose quoted description continues at the key's indentation, as released install files do.
fn typo_manifest(dir: &Path) -> PathBuf {
    let path = dir.join("agent.yaml");
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        description: 'Foo is the Schema for the foos API. It is
        continued here'
        type: object
---
";
    let daemonset = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/invalid/projected-typo.yaml"),
    )
    .unwrap();
    std::fs::write(&path, format!("{crd}{daemonset}")).unwrap();
    path
}

const TYPO_PATH: &str = "spec.template.spec.volumes[0].projected.sources[0].itmes";

#[test]
fn validate_strict_is_the_default_and_names_file_document_and_field_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = typo_manifest(dir.path());
    for extra in [&[][..], &["--validate"][..], &["--validate=true"][..]] {
        let mut c = bin();
        c.arg("plan")
            .arg("-m")
            .arg(&file)
            .args(["-c", "none"])
            .args(extra);
        c.assert().code(1).stderr(
            predicate::str::contains(format!(
                "kube-system/agent ({}, document 2 (line 14)):\n    - strict decoding error: unknown field \"{TYPO_PATH}\": ",
                file.display()
            ))
            .and(predicate::str::contains("correct its spelling or indentation")),
        );
    }
}

#[test]
fn validate_warn_plans_without_the_field_and_says_so_on_stderr_and_in_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let file = typo_manifest(dir.path());
    let mut c = bin();
    c.arg("plan")
        .arg("-m")
        .arg(&file)
        .args(["-c", "none", "-o", "json", "--validate", "warn"]);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "planned");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "warning: kube-system/agent ({}, document 2 (line 14)): unknown field \"{TYPO_PATH}\" (dropped; --validate=warn)",
            file.display()
        )),
        "{stderr}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = plan["daemonsets"][0]["warnings"].to_string();
    assert!(warnings.contains(TYPO_PATH), "{warnings}");
}

#[test]
fn validate_ignore_and_false_drop_unknown_fields_silently_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = typo_manifest(dir.path());
    for mode in ["--validate=ignore", "--validate=false"] {
        let mut c = bin();
        c.arg("render").arg("-m").arg(&file).arg(mode);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8(out.stdout).unwrap().contains("itmes"));
    }
    let mut c = bin();
    c.arg("status")
        .arg("-m")
        .arg(&file)
        .arg("-c")
        .arg(seven_nodes())
        .args(["--now", NOW]);
    c.assert()
        .code(1)
        .stderr(predicate::str::contains(TYPO_PATH));
    let mut c = bin();
    c.arg("status")
        .arg("-m")
        .arg(&file)
        .arg("-c")
        .arg(seven_nodes())
        .args(["--now", NOW, "--validate=ignore"]);
    c.assert().success();
    let mut c = bin();
    c.arg("apply")
        .arg("-m")
        .arg(&file)
        .arg("-c")
        .arg(seven_nodes())
        .args(["--dry-run", "--now", NOW]);
    c.assert()
        .code(1)
        .stderr(predicate::str::contains(TYPO_PATH));
}

#[test]
fn validate_refuses_a_mode_kubectl_does_not_have() {
    let mut c = bin();
    c.args(["render", "-m", "x.yaml", "--validate=lenient"]);
    c.assert().code(1).stderr(predicate::str::contains(
        "possible values: strict, warn, ignore",
    ));
}

#[test]
fn every_command_that_reads_manifests_documents_validate_with_an_example() {
    for cmd in ["plan", "apply", "render", "status"] {
        bin()
            .args([cmd, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("--validate [<MODE>]"))
            .stdout(predicate::str::contains("strict:").and(predicate::str::contains("warn:")))
            .stdout(
                predicate::str::contains(format!("daemonsync {cmd} "))
                    .and(predicate::str::is_match(r"--validate=(warn|ignore)\n").unwrap()),
            );
    }
}

#[test]
fn apply_finishes_the_other_daemonsets_and_exits_1_naming_the_halted_one() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut c = bin();
    c.current_dir(root).args([
        "apply",
        "--manifests",
        "examples/manifests",
        "--cluster",
        "sim:examples/sim/demo-failing.yaml",
        "--progress-deadline",
        "2m",
    ]);
    c.assert()
        .code(1)
        .stdout(predicate::str::contains(
            "(simulated): new pods of monitoring/node-agent failed (CrashLoopBackOff in \
             container agent)",
        ))
        .stdout(predicate::str::contains("every other DaemonSet converged"));
}

#[test]
fn apply_exits_3_when_its_only_daemonset_halts() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut c = bin();
    c.current_dir(root).args([
        "apply",
        "--manifests",
        "examples/manifests/node-agent.yaml",
        "--cluster",
        "sim:examples/sim/demo-failing.yaml",
        "--progress-deadline",
        "2m",
    ]);
    c.assert().code(3).stdout(predicate::str::contains(
        "new pods of monitoring/node-agent",
    ));
}

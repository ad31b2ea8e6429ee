//! Configuration changes roll out, through the command line: a ConfigMap change in git rolls
//! the DaemonSet it configures on the simulated fleet of `examples/config/`, and `plan` names
//! the key that changes, locally and in a pull request. A Secret's key is named the same way,
//! and its value is never printed anywhere: plans in every format, the pull request's diff,
//! the apply report, the logs.

use crate::support::{Repo, daemonsync, repo_path};
use serde_json::Value;
use std::path::Path;

const CHANGED: &str = "configmap/fluent-bit-config: changed keys fluent-bit.conf";

/// `daemonsync ARGS` from the repository root: exit code, stdout, stderr.
fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = daemonsync()
        .current_dir(repo_path(""))
        .env_remove("GITHUB_REPOSITORY")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn copy_dir(from: &Path, repo: &Repo, to: &str) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        repo.write(
            &format!("{to}/{name}"),
            &std::fs::read_to_string(entry.path()).unwrap(),
        );
    }
}

#[test]
fn a_configmap_change_in_git_rolls_the_daemonset_and_the_plan_names_the_changed_key() {
    let sim = "sim:examples/config/sim.yaml";
    let (code, out, err) = run(
        &[
            "plan",
            "--manifests",
            "examples/config/manifests",
            "--cluster",
            sim,
        ],
        &[],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains(&format!("Config: {CHANGED}")), "{out}");
    let (code, out, err) = run(
        &[
            "plan",
            "--manifests",
            "examples/config/manifests",
            "--cluster",
            sim,
            "-o",
            "json",
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        plan["daemonsets"][0]["configChanges"],
        serde_json::json!([{"object": "configmap/fluent-bit-config", "change": "changed",
                            "changedKeys": ["fluent-bit.conf"]}])
    );
    let (code, out, err) = run(
        &[
            "apply",
            "--manifests",
            "examples/config/manifests",
            "--cluster",
            sim,
            "-o",
            "json",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["outcome"], "Converged");
    assert_eq!(
        (&report["creates"], &report["deletes"]),
        (&6.into(), &6.into())
    );
    let verbs: Vec<&str> = report["writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["verb"].as_str().unwrap())
        .collect();
    assert_eq!(verbs.iter().filter(|v| **v == "create-config").count(), 1);
    assert!(
        verbs.iter().position(|v| *v == "create-config")
            < verbs.iter().position(|v| *v == "create"),
        "the copy is written before the first pod: {verbs:?}"
    );
    // The plan in the report: nothing left to change.
    assert!(report["plan"]["daemonsets"][0]["configChanges"].is_null());
}

#[test]
fn a_pull_request_names_the_configmap_key_it_changes() {
    let repo = Repo::new();
    copy_dir(&repo_path("examples/config/running"), &repo, "deploy");
    let base = repo.commit("fluent-bit flushes every 5 s");
    copy_dir(&repo_path("examples/config/manifests"), &repo, "deploy");
    let head = repo.commit("fluent-bit flushes every second");
    for cluster in ["sim:examples/config/sim.yaml", "none"] {
        let (code, out, err) = run(
            &[
                "plan",
                "--repo",
                &repo.url(),
                "--base",
                &base,
                "--head",
                &head,
                "--path",
                "deploy",
                "--cluster",
                cluster,
                "-o",
                "markdown",
            ],
            &[],
        );
        assert_eq!(code, 2, "{err}");
        assert!(out.contains(&format!("- {CHANGED}")), "{cluster}: {out}");
        assert!(
            out.contains("daemonsync.io/config"),
            "the diff shows it: {out}"
        );
    }
}

/// A DaemonSet reading `password` of the Secret `es-creds`, whose value is `password`.
fn with_secret(password: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: shipper, namespace: logging}}
spec:
  selector: {{matchLabels: {{app: shipper}}}}
  updateStrategy: {{rollingUpdate: {{maxUnavailable: 1}}}}
  template:
    metadata: {{labels: {{app: shipper}}}}
    spec:
      containers:
      - name: shipper
        image: shipper:1
        env:
        - name: PASSWORD
          valueFrom: {{secretKeyRef: {{name: es-creds, key: password}}}}
        volumeMounts: [{{name: creds, mountPath: /creds}}]
      volumes: [{{name: creds, secret: {{secretName: es-creds}}}}]
---
apiVersion: v1
kind: Secret
metadata: {{name: es-creds, namespace: logging}}
stringData: {{password: {password}}}
"
    )
}

#[test]
fn a_secret_change_names_its_key_and_never_its_value() {
    let (old, new) = ("hunter2-old-value", "hunter2-new-value");
    // What must never show: the values, and their base64 ("hunter2-" encodes to this).
    let leaks = ["hunter2", "aHVudGVyMi"];
    let dir = tempfile::tempdir().unwrap();
    for (sub, value) in [("running", old), ("head", new)] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        std::fs::write(
            dir.path().join(sub).join("shipper.yaml"),
            with_secret(value),
        )
        .unwrap();
    }
    let sim_file = dir.path().join("sim.yaml");
    std::fs::write(
        &sim_file,
        "seed: 1\nnodes: [{name: 'n-{i}', count: 3}]\nrunning: [{manifest: running/}]\n",
    )
    .unwrap();
    let sim = format!("sim:{}", sim_file.display());
    let head = dir.path().join("head").display().to_string();
    let debug = [("RUST_LOG", "daemonsync=debug")];
    let mut outputs = Vec::new();
    for format in ["table", "wide", "json", "markdown"] {
        let (code, out, err) = run(
            &[
                "plan",
                "--manifests",
                &head,
                "--cluster",
                &sim,
                "-o",
                format,
            ],
            &debug,
        );
        assert_eq!(code, 2, "{format}: {err}");
        assert!(
            out.contains("secret/es-creds: changed keys password")
                || out.contains("\"changedKeys\": [\n            \"password\""),
            "{format}: {out}"
        );
        outputs.push((format!("plan -o {format}"), out + &err));
    }
    // A pull request: the diff of the DaemonSet shows digests, never values.
    let repo = Repo::new();
    repo.write("deploy/shipper.yaml", &with_secret(old));
    let base = repo.commit("old password");
    repo.write("deploy/shipper.yaml", &with_secret(new));
    let pr_head = repo.commit("new password");
    for format in ["table", "markdown"] {
        let (code, out, err) = run(
            &[
                "plan",
                "--repo",
                &repo.url(),
                "--base",
                &base,
                "--head",
                &pr_head,
                "--path",
                "deploy",
                "--cluster",
                &sim,
                "-o",
                format,
            ],
            &debug,
        );
        assert_eq!(code, 2, "{err}");
        assert!(
            out.contains("secret/es-creds: changed keys password"),
            "{out}"
        );
        outputs.push((format!("pull request -o {format}"), out + &err));
    }
    for format in ["table", "json"] {
        let (code, out, err) = run(
            &[
                "apply",
                "--manifests",
                &head,
                "--cluster",
                &sim,
                "-o",
                format,
            ],
            &debug,
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("DEBUG") || err.contains("INFO"),
            "logs were on: {err}"
        );
        outputs.push((format!("apply -o {format}"), out + &err));
    }
    for (what, text) in &outputs {
        for leak in leaks {
            assert!(
                !text.contains(leak),
                "{what} shows the Secret's value:\n{text}"
            );
        }
    }
}

//! Regression tests for input that used to crash daemonsync or leak from it (HARDENING.md):
//! the ends of time, huge and empty sims, large fleets, and what a snapshot may carry.

use crate::support::daemonsync;
use std::path::Path;
use std::time::Duration;

const AGENT: &str = "\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy: {rollingUpdate: {maxUnavailable: 100%}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: agent
        image: agent:2
        command: [/bin/agent, --password=cmd-sekrit]
        args: [--token=arg-sekrit]
        env:
        - {name: PASSWORD, value: env-sekrit}
        - name: FROM_SECRET
          valueFrom: {secretKeyRef: {name: agent-creds, key: token}}
";

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `daemonsync ARGS` with a bound; returns (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = daemonsync()
        .current_dir(dir)
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn sim_node_count_of_ten_to_the_eighteen_is_refused_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: 'n-{i}', count: 1000000000000000000}]\n",
    );
    let (code, _, err) = run(
        dir.path(),
        &["apply", "-m", "ds.yaml", "--cluster", "sim:sim.yaml"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("more than the limit of 200000"), "{err}");
    // Churn additions count too.
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: a}]\nchurn: [{at: 1s, add: {name: 'x-{i}', count: 300000}}]\n",
    );
    let (code, _, err) = run(
        dir.path(),
        &["apply", "-m", "ds.yaml", "--cluster", "sim:sim.yaml"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("with churn additions"), "{err}");
}

#[test]
fn sim_with_zero_nodes_is_refused_not_converged() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    for sim in [
        "nodes: []\n",
        "nodes: [{name: 'n-{i}', count: 0}]\n",
        "seed: 1\n",
    ] {
        write(dir.path(), "sim.yaml", sim);
        let (code, out, err) = run(
            dir.path(),
            &["apply", "-m", "ds.yaml", "--cluster", "sim:sim.yaml"],
        );
        assert_eq!(code, Some(1), "{sim}: {out}{err}");
        assert!(!out.contains("Converged"), "{sim}: {out}");
        assert!(err.contains("starts with no nodes"), "{sim}: {err}");
    }
}

#[test]
fn timeouts_of_ten_thousand_years_do_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: 'n-{i}', count: 3}]\n",
    );
    for flag in ["--timeout", "--progress-deadline"] {
        let (code, out, err) = run(
            dir.path(),
            &[
                "apply",
                "-m",
                "ds.yaml",
                "--cluster",
                "sim:sim.yaml",
                flag,
                "87600000h",
            ],
        );
        assert_eq!(code, Some(0), "{flag}: {out}{err}");
        assert!(out.contains("Converged"), "{flag}: {out}");
    }
}

#[test]
fn sim_starting_at_the_end_of_time_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    write(
        dir.path(),
        "sim.yaml",
        "start: 9999-12-30T00:00:00Z\nkubelet: {startLatency: {fixed: 5s}}\nnodes: [{name: 'n-{i}', count: 3}]\nchurn: [{at: 1000000h, remove: n-1}]\n",
    );
    let (code, out, err) = run(
        dir.path(),
        &[
            "apply",
            "-m",
            "ds.yaml",
            "--cluster",
            "sim:sim.yaml",
            "--timeout",
            "87600000h",
        ],
    );
    assert_ne!(code, Some(101), "panicked: {err}");
    assert!(matches!(code, Some(0) | Some(3)), "{out}{err}");
}

#[test]
fn snapshot_timestamps_at_the_end_of_time_plan_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    let snapshot = "\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, creationTimestamp: '9999-12-30T00:00:00Z'}
  status: {conditions: [{type: Ready, status: 'True', lastTransitionTime: '9999-12-30T00:00:00Z'}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: agent-x
    namespace: kube-system
    creationTimestamp: '9999-12-30T00:00:00Z'
    labels: {app: agent, controller-revision-hash: old}
    ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u1, controller: true}]
  spec: {nodeName: n1, containers: [{name: agent, image: agent:1}]}
  status:
    phase: Running
    conditions: [{type: Ready, status: 'True', lastTransitionTime: '9999-12-30T00:00:00Z'}]
";
    write(dir.path(), "snap.yaml", snapshot);
    for now in ["9999-12-30T12:00:00Z", "1970-01-01T00:00:00Z"] {
        let (code, out, err) = run(
            dir.path(),
            &[
                "plan",
                "-m",
                "ds.yaml",
                "--cluster",
                "snapshot:snap.yaml",
                "--now",
                now,
            ],
        );
        assert!(matches!(code, Some(0) | Some(2)), "{now}: {out}{err}");
    }
}

#[test]
fn more_than_sixteen_thousand_nodes_converge_without_a_false_no_progress() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    write(
        dir.path(),
        "sim.yaml",
        "kubelet: {startLatency: {fixed: 1s}}\nnodes: [{name: 'n-{i}', count: 17000}]\n",
    );
    let (code, out, err) = run(
        dir.path(),
        &["apply", "-m", "ds.yaml", "--cluster", "sim:sim.yaml"],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("17000 pod(s) created"), "{out}");
}

#[test]
fn snapshot_never_writes_env_values_args_or_commands() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    // A live cluster running the same DaemonSet, as `kubectl get -o yaml` prints it.
    let indented: String = AGENT.lines().map(|l| format!("  {l}\n")).collect();
    let dump = format!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {{name: n1}}\n  status: {{conditions: [{{type: Ready, status: 'True'}}]}}\n-{}",
        &indented[1..]
    );
    write(dir.path(), "full.yaml", &dump);
    let (code, _, err) = run(
        dir.path(),
        &[
            "snapshot",
            "--cluster",
            "snapshot:full.yaml",
            "-o",
            "snap.yaml",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let snap = std::fs::read_to_string(dir.path().join("snap.yaml")).unwrap();
    for secret in ["env-sekrit", "arg-sekrit", "cmd-sekrit"] {
        assert!(
            !snap.contains(secret),
            "{secret} written to the snapshot:\n{snap}"
        );
    }
    assert!(snap.contains("(redacted)"), "{snap}");
    // References name objects, not values: they stay.
    assert!(snap.contains("agent-creds"), "{snap}");
    // Planning git's identical DaemonSet against it shows no template difference.
    let (code, out, err) = run(
        dir.path(),
        &[
            "plan",
            "-m",
            "ds.yaml",
            "--cluster",
            "snapshot:snap.yaml",
            "-o",
            "json",
        ],
    );
    assert!(matches!(code, Some(0) | Some(2)), "{out}{err}");
    assert!(!out.contains("liveDiff"), "{out}");
    assert!(!out.contains("sekrit"), "{out}");
}

#[test]
fn rust_log_turns_on_logging_which_is_off_by_default() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: 'n-{i}', count: 2}]\n",
    );
    let args = ["apply", "-m", "ds.yaml", "--cluster", "sim:sim.yaml"];
    let (code, _, quiet) = run(dir.path(), &args);
    assert_eq!(code, Some(0), "{quiet}");
    assert!(!quiet.contains("source read"), "{quiet}");
    let out = daemonsync()
        .current_dir(dir.path())
        .args(args)
        .env("RUST_LOG", "daemonsync=info")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(logs.contains("source read"), "{logs}");
    assert!(logs.contains("executing step"), "{logs}");
    // Secrets in manifests never reach the logs.
    assert!(!logs.contains("sekrit"), "{logs}");
}

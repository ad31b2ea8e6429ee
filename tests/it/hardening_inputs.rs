//! Regression tests for input that used to crash daemonsync or leak from it (HARDENING.md):
//! the ends of time, huge and empty sims, large fleets, and what a snapshot may carry.

use crate::support::daemonsync;
use std::path::Path;
use std::time::Duration;

/// A DaemonSet with secrets in its command, args and env. The Secret it reads is optional:
/// the simulated kubelet, as a real one, holds a container whose Secret is missing.
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
          valueFrom: {secretKeyRef: {name: agent-creds, key: token, optional: true}}
";

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `daemonsync apply -m ds.yaml --cluster sim:sim.yaml EXTRA` in `dir`, as [`run`].
fn apply_sim(dir: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["apply", "-m", "ds.yaml", "--cluster", "sim:sim.yaml"];
    args.extend(extra);
    run(dir, &args)
}

/// Runs `daemonsync ARGS` with a bound; returns (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    run_within(dir, args, 120)
}

/// [`run`] with a bound of `secs` seconds.
fn run_within(dir: &Path, args: &[&str], secs: u64) -> (Option<i32>, String, String) {
    let out = daemonsync()
        .current_dir(dir)
        .args(args)
        .timeout(Duration::from_secs(secs))
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
    let (code, _, err) = apply_sim(dir.path(), &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("more than the limit of 200000"), "{err}");
    // Churn additions count too.
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: a}]\nchurn: [{at: 1s, add: {name: 'x-{i}', count: 300000}}]\n",
    );
    let (code, _, err) = apply_sim(dir.path(), &[]);
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
        let (code, out, err) = apply_sim(dir.path(), &[]);
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
        let (code, out, err) = apply_sim(dir.path(), &[flag, "87600000h"]);
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
    let (code, out, err) = apply_sim(dir.path(), &["--timeout", "87600000h"]);
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
    // 68 steps over 17,000 nodes take a debug build about 110 s on a 2-core machine with
    // nothing else running; beside the other tests, more than the 120 s of `run`.
    let args = ["apply", "-m", "ds.yaml", "--cluster", "sim:sim.yaml"];
    let (code, out, err) = run_within(dir.path(), &args, 360);
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

// ---------------------------------------------------------------------------------------------
// Hostile files: every reader (manifests, snapshots, sim files) refuses them with exit 1 and
// an error naming the file, instead of hanging, exhausting memory or panicking.

/// Nine levels of nine aliases: 387 million strings once expanded.
fn alias_bomb() -> String {
    let mut text = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for w in names.windows(2) {
        let refs = vec![format!("*{}", w[0]); 9].join(",");
        text.push_str(&format!("{}: &{} [{}]\n", w[1], w[1], refs));
    }
    text
}

/// Hostile contents, as (file name, bytes, what the error must say besides the file name);
/// `base` is a valid file holding `agent:2` and `{name: agent,`, spoilt in several ways.
fn hostile_files(base: &str) -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let flow_deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let block_deep: String = (0..3_000)
        .map(|i| format!("{}a:\n", " ".repeat(i)))
        .collect();
    let agent = base.as_bytes();
    let replace = |from: &[u8], to: &[u8]| -> Vec<u8> {
        let i = agent
            .windows(from.len())
            .position(|w| w == from)
            .expect("in the base file");
        [&agent[..i], to, &agent[i + from.len()..]].concat()
    };
    vec![
        ("bomb.yaml", alias_bomb().into_bytes(), ""),
        ("deep.yaml", flow_deep.clone().into_bytes(), ""),
        ("deep.json", flow_deep.into_bytes(), ""),
        ("deepmap.yaml", block_deep.into_bytes(), ""),
        (
            "latin1.yaml",
            replace(b"agent:2", b"agent:\xe9\xff"),
            "UTF-8",
        ),
        ("nul.yaml", replace(b"agent:2", b"agent\x002"), "\\u{0}"),
        (
            "dup.yaml",
            replace(b"{name: agent,", b"{name: agent, name: other,"),
            "duplicate",
        ),
    ]
}

/// `plan --cluster none -m NAME`: the manifest alone.
fn plan_manifest_alone(name: &str) -> Vec<String> {
    ["plan", "--cluster", "none", "-m", name]
        .map(String::from)
        .to_vec()
}

/// Writes each case's file into `dir`, runs daemonsync with the arguments `args(name)` gives,
/// and checks it refuses with exit 1, naming the file and saying what was wrong, never with a
/// panic or a parser option the user cannot reach. The file is removed after its run.
fn assert_each_refused_naming_the_file<'a>(
    dir: &Path,
    cases: Vec<(&'a str, Vec<u8>, &'a str)>,
    args: impl Fn(&'a str) -> Vec<String>,
) {
    for (name, bytes, says) in cases {
        std::fs::write(dir.join(name), &bytes).unwrap();
        let args = args(name);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = run(dir, &args);
        assert_eq!(code, Some(1), "{name}: {out}{err}");
        assert!(
            err.contains(name),
            "{name}: the error does not name the file: {err}"
        );
        assert!(err.contains(says), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(!err.contains("DuplicateKeyPolicy"), "{name}: {err}");
        std::fs::remove_file(dir.join(name)).unwrap();
    }
}

#[test]
fn hostile_manifest_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = hostile_files(AGENT);
    let many: String = (0..1_025).map(|i| format!("---\na: {i}\n")).collect();
    cases.push(("many.yaml", many.into_bytes(), "more than 1024 documents"));
    let huge = format!("# {}\n{AGENT}", "x".repeat(8 * 1024 * 1024));
    cases.push((
        "huge.yaml",
        huge.into_bytes(),
        "more than the limit of 8388608 bytes",
    ));
    assert_each_refused_naming_the_file(dir.path(), cases, plan_manifest_alone);
}

#[test]
fn deeply_nested_manifests_say_how_deep_not_where_a_hundred_times() {
    let dir = tempfile::tempdir().unwrap();
    let flow = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let block: String = (0..100).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
    let cases = vec![
        (
            "flow.yaml",
            flow.clone().into_bytes(),
            "nested too deeply to be a Kubernetes object",
        ),
        (
            "flow.json",
            flow.into_bytes(),
            "nested more than 128 levels deep",
        ),
        (
            "block.yaml",
            block.into_bytes(),
            "nested more than 64 levels deep",
        ),
    ];
    assert_each_refused_naming_the_file(dir.path(), cases, plan_manifest_alone);
}

#[test]
fn hostile_snapshot_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    assert_each_refused_naming_the_file(dir.path(), hostile_files(AGENT), |name| {
        let cluster = format!("snapshot:{name}");
        ["plan", "-m", "ds.yaml", "--cluster", &cluster]
            .map(String::from)
            .to_vec()
    });
}

#[test]
fn hostile_sim_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    let mut cases = hostile_files("nodes: [{name: agent, labels: {image: 'agent:2'}}]\n");
    // An alias bomb where a sim file takes maps: 5,000 nodes sharing 200 labels.
    let labels: Vec<String> = (0..200).map(|i| format!("k{i}: v{i}")).collect();
    let mut shared = format!(
        "nodes:\n- {{name: a, labels: &l {{{}}}}}\n",
        labels.join(", ")
    );
    for i in 0..5_000 {
        shared.push_str(&format!("- {{name: n{i}, labels: *l}}\n"));
    }
    cases.push(("shared.yaml", shared.into_bytes(), "budget"));
    cases.push((
        "dupkey.yaml",
        b"nodes: [{name: a}]\nnodes: [{name: b}]\n".to_vec(),
        "duplicate mapping key: nodes",
    ));
    let huge = format!("nodes: [{{name: a}}]\n# {}\n", "x".repeat(8 * 1024 * 1024));
    cases.push((
        "huge.yaml",
        huge.into_bytes(),
        "larger than the limit of 8388608 bytes",
    ));
    assert_each_refused_naming_the_file(dir.path(), cases, |name| {
        let cluster = format!("sim:{name}");
        ["apply", "-m", "ds.yaml", "--cluster", &cluster]
            .map(String::from)
            .to_vec()
    });
}

#[cfg(unix)]
#[test]
fn sim_file_that_is_a_fifo_is_refused_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("sim.yaml"))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let (code, out, err) = apply_sim(dir.path(), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("sim.yaml") && err.contains("not a regular file"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Numbers out of range, field by field: refused naming the field, never wrapped or clamped.

/// A DaemonSet with a placeholder in every numeric field.
const NUMBERS: &str = "\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  minReadySeconds: MIN_READY
  revisionHistoryLimit: HISTORY
  updateStrategy: {rollingUpdate: {maxUnavailable: MAX_UNAVAILABLE, maxSurge: MAX_SURGE}}
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: GRACE
      tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: TOLERATION}]
      containers:
      - name: agent
        image: agent:2
        ports: [{containerPort: CONTAINER_PORT, hostPort: HOST_PORT}]
";

/// (placeholder, field path in errors, value that fits, whether the field is 64-bit).
const NUMERIC_FIELDS: [(&str, &str, &str, bool); 8] = [
    ("MIN_READY", "spec.minReadySeconds", "0", false),
    ("HISTORY", "spec.revisionHistoryLimit", "10", false),
    (
        "MAX_UNAVAILABLE",
        "spec.updateStrategy.rollingUpdate.maxUnavailable",
        "1",
        false,
    ),
    (
        "MAX_SURGE",
        "spec.updateStrategy.rollingUpdate.maxSurge",
        "0",
        false,
    ),
    (
        "GRACE",
        "spec.template.spec.terminationGracePeriodSeconds",
        "30",
        true,
    ),
    (
        "TOLERATION",
        "spec.template.spec.tolerations[0].tolerationSeconds",
        "60",
        true,
    ),
    (
        "CONTAINER_PORT",
        "spec.template.spec.containers[0].ports[0].containerPort",
        "80",
        false,
    ),
    (
        "HOST_PORT",
        "spec.template.spec.containers[0].ports[0].hostPort",
        "80",
        false,
    ),
];

/// [`NUMBERS`] with `field` set to `value` and every other field to its fitting value.
fn numbers_with(field: &str, value: &str) -> String {
    NUMERIC_FIELDS
        .iter()
        .fold(NUMBERS.to_string(), |text, (f, _, ok, _)| {
            text.replace(f, if *f == field { value } else { ok })
        })
}

#[test]
fn out_of_range_numbers_in_every_daemonset_field_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (field, path, _, wide) in NUMERIC_FIELDS {
        let mut values = vec!["9223372036854775808", "-9223372036854775809", "1e20", "2.5"];
        if !wide {
            values.extend(["2147483648", "-1"]);
        }
        for value in values {
            write(dir.path(), "ds.yaml", &numbers_with(field, value));
            let (code, out, err) = run(dir.path(), &["plan", "--cluster", "none", "-m", "ds.yaml"]);
            assert_eq!(code, Some(1), "{field}={value}: {out}{err}");
            assert!(err.contains("ds.yaml"), "{field}={value}: {err}");
            assert!(
                err.contains(&format!("{path}: Invalid value")),
                "{field}={value}: the error does not name {path}: {err}"
            );
        }
        // Too large even for a float: a syntax error at its line.
        write(dir.path(), "ds.yaml", &numbers_with(field, "1e400"));
        let (code, _, err) = run(dir.path(), &["plan", "--cluster", "none", "-m", "ds.yaml"]);
        assert_eq!(code, Some(1), "{field}=1e400: {err}");
        assert!(
            err.contains("ds.yaml, document 1, line"),
            "{field}=1e400: {err}"
        );
    }
    // Ports beyond 65535 and percentages beyond 100% are refused by validation.
    for (field, value) in [
        ("CONTAINER_PORT", "65536"),
        ("HOST_PORT", "65536"),
        ("MAX_UNAVAILABLE", "'101%'"),
        ("MAX_SURGE", "'4294967297%'"),
    ] {
        write(dir.path(), "ds.yaml", &numbers_with(field, value));
        let (code, _, err) = run(dir.path(), &["plan", "--cluster", "none", "-m", "ds.yaml"]);
        assert_eq!(code, Some(1), "{field}={value}: {err}");
        let path = NUMERIC_FIELDS.iter().find(|f| f.0 == field).unwrap().1;
        assert!(err.contains(path), "{field}={value}: {err}");
    }
}

#[test]
fn largest_valid_numbers_plan_and_roll_out_without_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = NUMBERS.to_string();
    for (field, value) in [
        ("MIN_READY", "2147483647"),
        ("HISTORY", "2147483647"),
        ("MAX_UNAVAILABLE", "2147483647"),
        ("MAX_SURGE", "0"),
        ("GRACE", "9223372036854775807"),
        ("TOLERATION", "-9223372036854775808"),
        ("CONTAINER_PORT", "65535"),
        ("HOST_PORT", "65535"),
    ] {
        text = text.replace(field, value);
    }
    write(dir.path(), "ds.yaml", &text);
    let (code, out, err) = run(dir.path(), &["plan", "--cluster", "none", "-m", "ds.yaml"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("maxUnavailable=2147483647"), "{out}");
    // A rollout: minReadySeconds of 68 years is never reached within the timeout.
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: 'n-{i}', count: 3}]\n",
    );
    let (code, out, err) = apply_sim(dir.path(), &["--timeout", "1h"]);
    assert!(!err.contains("panicked"), "{err}");
    assert!(matches!(code, Some(3)), "{out}{err}");
}

/// A sim file line per case: (text, what the error says). Each must exit 1.
#[test]
fn out_of_range_numbers_in_sim_files_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    for (sim, says) in [
        ("nodes: [{name: a, count: -1}]\n", "line 1 column 26"),
        (
            "nodes: [{name: a, count: 18446744073709551616}]\n",
            "line 1 column 26",
        ),
        ("nodes: [{name: a}]\nseed: -1\n", "line 2 column 7"),
        ("nodes: [{name: a}]\nseed: 1e400\n", "line 2"),
        (
            "nodes: [{name: a}]\nchurn: [{at: -1s, remove: a}]\n",
            "duration \"-1s\" is negative",
        ),
        (
            "nodes: [{name: a}]\nkubelet: {startLatency: {fixed: 99999999999999999999h}}\n",
            "invalid duration \"99999999999999999999h\"",
        ),
        (
            "nodes: [{name: a}]\nkubelet: {terminationGrace: 1e400s}\n",
            "invalid duration",
        ),
        (
            "nodes: [{name: a}]\nkubelet: {startLatency: {uniform: [8s, 3s]}}\n",
            "kubelet.startLatency.uniform: the first bound (8s) is longer than the second (3s)",
        ),
        (
            "nodes: [{name: a}]\nstart: 10000-01-01T00:00:00Z\n",
            "line 2 column 8",
        ),
        (
            "nodes: [{name: a}]\nstart: -009999-01-02T00:00:00Z\n",
            "line 2 column 8",
        ),
    ] {
        write(dir.path(), "sim.yaml", sim);
        let (code, out, err) = apply_sim(dir.path(), &[]);
        assert_eq!(code, Some(1), "{sim}: {out}{err}");
        assert!(err.contains("invalid sim file sim.yaml"), "{sim}: {err}");
        assert!(err.contains(says), "{sim}: {err}");
    }
}

#[test]
fn sim_latencies_at_the_end_of_time_neither_panic_nor_wrap_to_zero() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ds.yaml", AGENT);
    // u64::MAX milliseconds as the upper bound: the draw's range is the whole of u64, which
    // used to overflow computing its size.
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: a}]\nkubelet: {startLatency: {uniform: [0s, 18446744073709551s 615ms]}}\n",
    );
    let (code, out, err) = apply_sim(dir.path(), &[]);
    assert_ne!(code, Some(101), "panicked: {err}");
    assert!(matches!(code, Some(0) | Some(3)), "{out}{err}");
    // One millisecond more than u64 holds used to wrap to a latency of zero: the pod was ready
    // at once. It is 584 million years: the rollout halts at the progress deadline.
    write(
        dir.path(),
        "sim.yaml",
        "nodes: [{name: a}]\nkubelet: {startLatency: {fixed: 18446744073709551s 616ms}, terminationGrace: 9223372036854775807s}\n",
    );
    let (code, out, err) = apply_sim(dir.path(), &[]);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(out.contains("Halted"), "{out}");
    assert!(!out.contains("Converged"), "{out}");
}

//! Progressive delivery end to end on the simulated cluster: each policy applied with
//! `daemonsync apply -o json`, the order in which nodes received the new revision read from
//! the report's write log.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

const OLD: &str = "agent:1";
const NEW: &str = "agent:2";

fn daemonset(image: &str, max_unavailable: i32, annotations: &[(&str, &str)]) -> String {
    let annotations: String = annotations
        .iter()
        .map(|(k, v)| format!("    {k}: {v:?}\n"))
        .collect();
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: demo
  annotations:
    example.com/owner: platform
{annotations}spec:
  selector: {{matchLabels: {{app: agent}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: {max_unavailable}}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers: [{{name: agent, image: \"{image}\"}}]
"
    )
}

/// A fleet of three zones (a, b, c) of `per_zone` nodes running agent:1, plus `extra` YAML.
fn fleet(dir: &Path, per_zone: usize, extra: &str) -> String {
    std::fs::create_dir_all(dir.join("m")).unwrap();
    std::fs::write(dir.join("old.yaml"), daemonset(OLD, 1, &[])).unwrap();
    let nodes: String = ["a", "b", "c"]
        .iter()
        .map(|z| {
            format!(
                "  - {{name: '{z}-{{i}}', count: {per_zone}, labels: {{kubernetes.io/os: linux, \
                 topology.kubernetes.io/zone: {z}}}}}\n"
            )
        })
        .collect();
    let sim = format!(
        "seed: 7
kubelet: {{startLatency: {{uniform: [2s, 4s]}}, terminationGrace: 1s}}
nodes:
{nodes}{extra}running:
  - manifest: old.yaml
"
    );
    std::fs::write(dir.join("sim.yaml"), sim).unwrap();
    format!("sim:{}", dir.join("sim.yaml").display())
}

struct Applied {
    code: i32,
    report: Value,
    stderr: String,
}

fn apply(dir: &Path, cluster: &str, manifest: &str, extra: &[&str]) -> Applied {
    std::fs::write(dir.join("m/agent.yaml"), manifest).unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin!("daemonsync"))
        .args(["apply", "--manifests"])
        .arg(dir.join("m"))
        .args(["--cluster", cluster, "-o", "json"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is the JSON report ({e}); stderr: {stderr}"));
    Applied {
        code: out.status.code().unwrap_or(-1),
        report,
        stderr,
    }
}

/// The nodes that received a pod of `revision`, in write order, with the phase of each write.
fn created(r: &Applied, revision: &str) -> Vec<(String, String)> {
    r.report["writes"]
        .as_array()
        .expect("writes")
        .iter()
        .filter(|w| w["verb"] == "create" && w["revision"] == revision)
        .map(|w| {
            (
                w["node"].as_str().unwrap().to_string(),
                w["phase"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn revision(r: &Applied) -> String {
    r.report["plan"]["daemonsets"][0]["revision"]
        .as_str()
        .unwrap()
        .to_string()
}

fn zone(node: &str) -> &str {
    &node[..1]
}

#[test]
fn canary_then_zones_in_wave_order() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = fleet(dir.path(), 3, "");
    let manifest = daemonset(
        NEW,
        2,
        &[
            ("daemonsync.io/canary", "2"),
            ("daemonsync.io/waves-by", "topology.kubernetes.io/zone"),
            ("daemonsync.io/wave-order", "b,a,c"),
        ],
    );
    let r = apply(dir.path(), &cluster, &manifest, &["--auto-promote"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.report["kind"], "ApplyReport");
    assert_eq!(r.report["outcome"], "Converged");
    let rev = revision(&r);
    let order = created(&r, &rev);
    let nodes: Vec<&str> = order.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(nodes.len(), 9, "{nodes:?}");
    assert_eq!(&nodes[..2], ["a-1", "a-2"], "the canary comes first");
    assert!(order[..2].iter().all(|(_, p)| p == "Canary"), "{order:?}");
    let zones: Vec<&str> = nodes[2..].iter().map(|n| zone(n)).collect();
    assert_eq!(zones, ["b", "b", "b", "a", "c", "c", "c"], "{nodes:?}");
    let phases: Vec<&str> = order[2..].iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(
        phases,
        [
            "Wave 1/3", "Wave 1/3", "Wave 1/3", "Wave 2/3", "Wave 3/3", "Wave 3/3", "Wave 3/3"
        ]
    );
    // Every write is in cluster time order, and the report says how long it took.
    let times: Vec<&str> = r.report["writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["time"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert!(r.report["elapsedSeconds"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_manual_pause_stops_apply_with_its_own_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = fleet(dir.path(), 2, "");
    let manifest = daemonset(NEW, 3, &[("daemonsync.io/canary", "1")]);
    let r = apply(dir.path(), &cluster, &manifest, &[]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert_eq!(r.report["outcome"], "AwaitingPromotion");
    assert_eq!(created(&r, &revision(&r)).len(), 1, "only the canary moved");
    assert!(r.stderr.contains("waits after the canary"), "{}", r.stderr);
    assert!(r.stderr.contains("--auto-promote"), "{}", r.stderr);
    let phase = &r.report["plan"]["daemonsets"][0]["rollout"]["phase"];
    assert_eq!(phase, "Paused");
}

#[test]
fn the_partition_keeps_the_last_nodes_on_the_previous_revision() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = fleet(dir.path(), 3, "");
    let manifest = daemonset(NEW, 2, &[("daemonsync.io/partition", "3")]);
    let r = apply(dir.path(), &cluster, &manifest, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let nodes: Vec<String> = created(&r, &revision(&r))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(nodes, ["a-1", "a-2", "a-3", "b-1", "b-2", "b-3"]);
    assert!(
        r.report["writes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| !w["node"].as_str().unwrap().starts_with('c')),
        "nothing is written on the partition's nodes"
    );
    let rollout = &r.report["plan"]["daemonsets"][0]["rollout"];
    assert_eq!(rollout["pause"]["reason"], "partition");
}

#[test]
fn a_timed_wave_pause_is_waited_out_in_cluster_time() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = fleet(dir.path(), 1, "");
    let manifest = daemonset(
        NEW,
        1,
        &[
            ("daemonsync.io/waves-by", "topology.kubernetes.io/zone"),
            ("daemonsync.io/wave-pause", "5m"),
        ],
    );
    let r = apply(dir.path(), &cluster, &manifest, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let writes = r.report["writes"].as_array().unwrap();
    let at = |node: &str, verb: &str| -> jiff::Timestamp {
        writes
            .iter()
            .find(|w| w["node"] == node && w["verb"] == verb)
            .and_then(|w| w["time"].as_str())
            .unwrap()
            .parse()
            .unwrap()
    };
    let gap = at("b-1", "delete").duration_since(at("a-1", "create"));
    assert!(
        gap >= jiff::SignedDuration::from_mins(5),
        "wave b started {gap:#} after wave a"
    );
    assert!(r.report["elapsedSeconds"].as_f64().unwrap() >= 600.0);
}

#[test]
fn the_halt_threshold_counts_only_ready_nodes() {
    // The new pod never starts on a-1 (a broken runtime on a Ready node) nor on b-1, which is
    // NotReady: only a-1 counts against the version.
    let extra = "  - {name: x-1, labels: {kubernetes.io/os: linux}, ready: false}
failures:
  nodes:
    - {node: a-1, reason: CreateContainerError}
    - {node: x-1}
";
    let dir = tempfile::tempdir().unwrap();
    let cluster = fleet(dir.path(), 2, extra);
    let deadline = ["--progress-deadline", "1m", "--timeout", "30m"];
    // The failing and the NotReady node each hold one unit of maxUnavailable; the third moves.
    let tolerant = daemonset(NEW, 3, &[("daemonsync.io/halt-threshold", "1")]);
    let r = apply(dir.path(), &cluster, &tolerant, &deadline);
    assert_ne!(r.report["outcome"], "Halted", "{}", r.stderr);
    let updated: Vec<String> = created(&r, &revision(&r))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for n in ["a-2", "b-1", "b-2", "c-1", "c-2"] {
        assert!(
            updated.contains(&n.to_string()),
            "{n} not updated: {updated:?}"
        );
    }
    let strict = daemonset(NEW, 2, &[("daemonsync.io/halt-threshold", "0")]);
    let r = apply(dir.path(), &cluster, &strict, &deadline);
    assert_eq!(r.report["outcome"], "Halted", "{}", r.stderr);
    assert_eq!(r.code, 3);
    assert!(r.stderr.contains("a-1"), "{}", r.stderr);
}

#[test]
fn bad_rollout_annotations_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = fleet(dir.path(), 1, "");
    std::fs::write(
        dir.path().join("m/agent.yaml"),
        daemonset(
            NEW,
            1,
            &[
                ("daemonsync.io/canery", "1"),
                ("daemonsync.io/wave-pause", "soon"),
            ],
        ),
    )
    .unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin!("daemonsync"))
        .args(["apply", "--manifests"])
        .arg(dir.path().join("m"))
        .args(["--cluster", &cluster])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("metadata.annotations[daemonsync.io/canery]: Unsupported value")
            && stderr.contains("did you mean daemonsync.io/canary?"),
        "{stderr}"
    );
    assert!(
        stderr.contains("metadata.annotations[daemonsync.io/wave-pause]: Invalid value: \"soon\""),
        "{stderr}"
    );
    // A waves-by label no node carries: the plan refuses it with the annotation's path.
    std::fs::write(
        dir.path().join("m/agent.yaml"),
        daemonset(NEW, 1, &[("daemonsync.io/waves-by", "example.com/rack")]),
    )
    .unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin!("daemonsync"))
        .args(["plan", "--manifests"])
        .arg(dir.path().join("m"))
        .args(["--cluster", &cluster])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains(
            "metadata.annotations[daemonsync.io/waves-by]: Invalid value: \"example.com/rack\""
        ),
        "{all}"
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
}

//! kubectl patches a pod's image in place on a `daemonsync sim serve` child process: a JSON
//! patch with a resourceVersion `test` restarts the container (same pod, RESTARTS 1, the new
//! image), and a stale precondition is refused as the API server refuses it. And `daemonsync
//! apply --cluster kube` rolls an image-only change out in place under `InPlaceIfPossible`, as
//! kubectl then shows it. Skipped, with a reason, without kubectl.

use crate::live::{daemonsync, text};
use crate::serve_support::{ServeProcess, kubectl_available, output_within_a_minute, sim_dir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Runs kubectl against the server (at most 60 s).
fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("kubectl");
    cmd.args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", cache)
        .env("HOME", cache);
    output_within_a_minute(cmd, &format!("kubectl {args:?}"))
}

#[test]
fn kubectl_patches_a_pod_image_in_place_and_a_stale_precondition_is_refused() {
    if !kubectl_available() {
        return;
    }
    let dir = sim_dir();
    let server = ServeProcess::start(dir.path(), &[]);
    let cache = dir.path().join("kube-cache");
    let ok = |args: &[&str]| {
        let out = kubectl(&server.kubeconfig, &cache, args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let name = ok(&[
        "get",
        "pods",
        "-n",
        "demo",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    assert!(name.starts_with("agent-"), "{name}");
    let get = |path: &str| {
        ok(&[
            "get",
            "pod",
            &name,
            "-n",
            "demo",
            "-o",
            &format!("jsonpath={path}"),
        ])
    };
    let uid = get("{.metadata.uid}");
    let rv = get("{.metadata.resourceVersion}");
    let patch = |rv: &str| {
        format!(
            r#"[{{"op":"test","path":"/metadata/resourceVersion","value":"{rv}"}},{{"op":"replace","path":"/spec/containers/0/image","value":"agent:2"}}]"#
        )
    };

    // A stale resourceVersion: refused, nothing changes.
    let stale = kubectl(
        &server.kubeconfig,
        &cache,
        &[
            "patch",
            "pod",
            &name,
            "-n",
            "demo",
            "--type=json",
            "-p",
            &patch("1"),
        ],
    );
    assert!(!stale.status.success());
    let stderr = String::from_utf8_lossy(&stale.stderr);
    assert!(
        stderr.contains("the server rejected our request due to an error in our request"),
        "{stderr}"
    );
    assert_eq!(get("{.spec.containers[0].image}"), "agent:1");

    let out = ok(&[
        "patch",
        "pod",
        &name,
        "-n",
        "demo",
        "--type=json",
        "-p",
        &patch(&rv),
    ]);
    assert!(out.contains("patched"), "{out}");
    // The container restarts; the pod is the same one, ready again with RESTARTS 1.
    let start = Instant::now();
    let row = loop {
        let table = ok(&["get", "pod", &name, "-n", "demo", "--no-headers"]);
        let words: Vec<String> = table.split_whitespace().map(String::from).collect();
        if words.get(1).map(String::as_str) == Some("1/1")
            && words.get(3).map(String::as_str) == Some("1")
        {
            break words;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not restarted within 30 s: {table}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(row[0], name);
    assert_eq!(row[2], "Running");
    assert!(
        row[4].starts_with('(') && row[5] == "ago)",
        "RESTARTS 1 (…s ago): {row:?}"
    );
    assert_eq!(get("{.metadata.uid}"), uid);
    assert_eq!(get("{.status.containerStatuses[0].image}"), "agent:2");
    assert_eq!(get("{.status.containerStatuses[0].restartCount}"), "1");
    assert_eq!(
        get("{.status.containerStatuses[0].imageID}"),
        "sim://agent:2"
    );
    // Other fields of a running pod's spec are immutable.
    let refused = kubectl(
        &server.kubeconfig,
        &cache,
        &[
            "patch",
            "pod",
            &name,
            "-n",
            "demo",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/hostNetwork","value":true}]"#,
        ],
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("pod updates may not change fields other than"),
        "{stderr}"
    );
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}

/// `agent` in `demo` at `image`, one pod at a time, with `annotations` (flow-map entries).
fn agent(image: &str, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: demo, annotations: {{{annotations}}}}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  updateStrategy: {{rollingUpdate: {{maxUnavailable: 1}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec:\n      containers: [{{name: agent, image: '{image}'}}]\n"
    )
}

/// The agent pods of `kubectl get pods -n demo -o json`, by name.
fn agent_pods(list: &str) -> BTreeMap<String, Value> {
    let list: Value = serde_json::from_str(list).expect("a PodList");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|p| p["metadata"]["labels"]["app"] == "agent")
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p.clone(),
            )
        })
        .collect()
}

/// The status of condition `kind` of a pod, if it has one.
fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a str> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)?["status"]
        .as_str()
}

#[test]
fn apply_updates_the_pods_in_place_and_kubectl_shows_the_same_pods_restarted_on_the_new_image() {
    if !kubectl_available() {
        return;
    }
    // Three nodes running agent:1; pulling agent:2 takes 3 s, starting a container 1 s.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    std::fs::create_dir_all(path.join("running")).unwrap();
    std::fs::write(path.join("running/ds.yaml"), agent("agent:1", "")).unwrap();
    std::fs::write(
        path.join("sim.yaml"),
        "seed: 5\nkubelet: {startLatency: {fixed: 1s}, pullLatency: {fixed: 3s}, podSetupLatency: {fixed: 1s}, terminationGrace: 300ms}\nnodes:\n  - name: 'n-{i}'\n    count: 3\n    labels: {kubernetes.io/os: linux}\nrunning:\n  - manifest: running/\n",
    )
    .unwrap();
    let git = path.join("git");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::write(
        git.join("ds.yaml"),
        agent(
            "agent:2",
            "daemonsync.io/update-strategy: InPlaceIfPossible",
        ),
    )
    .unwrap();
    let server = ServeProcess::start(path, &["--listen", "127.0.0.1:0"]);
    let cache = path.join("kube-cache");
    let ok = |args: &[&str]| {
        let out = kubectl(&server.kubeconfig, &cache, args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let crd = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/deploy/crd.yaml");
    ok(&["apply", "-f", crd]);

    let before = agent_pods(&ok(&["get", "pods", "-n", "demo", "-o", "json"]));
    assert_eq!(before.len(), 3, "{before:#?}");
    let uids: BTreeMap<&str, &str> = before
        .iter()
        .map(|(name, p)| (name.as_str(), p["metadata"]["uid"].as_str().unwrap()))
        .collect();

    let out = daemonsync(
        &server.kubeconfig,
        &[
            "apply",
            "--manifests",
            git.to_str().unwrap(),
            "--cluster",
            "kube",
            "--timeout",
            "90s",
            "-o",
            "json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "apply\nstdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("an ApplyReport");
    assert_eq!(report["outcome"], "Converged", "{report:#}");
    // The write log: one in-place update per pod, nothing created or deleted.
    let writes = report["writes"].as_array().expect("writes");
    let verbs: Vec<&str> = writes.iter().map(|w| w["verb"].as_str().unwrap()).collect();
    assert_eq!(verbs, ["in-place"; 3], "{report:#}");
    let mut patched: Vec<&str> = writes.iter().map(|w| w["pod"].as_str().unwrap()).collect();
    patched.sort_unstable();
    assert_eq!(patched, uids.keys().copied().collect::<Vec<_>>());
    assert_eq!(
        (&report["inPlace"], &report["creates"], &report["deletes"]),
        (&Value::from(3), &Value::from(0), &Value::from(0)),
        "{report:#}"
    );
    let revision = writes[0]["revision"].as_str().unwrap();

    // The same pods (names and uids), on the new image, restarted once, ready, the gate open.
    let after = agent_pods(&ok(&["get", "pods", "-n", "demo", "-o", "json"]));
    let names: Vec<&str> = after.keys().map(String::as_str).collect();
    assert_eq!(names, uids.keys().copied().collect::<Vec<_>>());
    for (name, pod) in &after {
        assert_eq!(pod["metadata"]["uid"], uids[name.as_str()], "{name}");
        assert_eq!(
            pod["metadata"]["labels"]["controller-revision-hash"], revision,
            "{name}"
        );
        assert_eq!(pod["spec"]["containers"][0]["image"], "agent:2", "{name}");
        let status = &pod["status"]["containerStatuses"][0];
        assert_eq!(
            (&status["image"], &status["restartCount"], &status["ready"]),
            (&Value::from("agent:2"), &Value::from(1), &Value::from(true)),
            "{name}: {status:#}"
        );
        assert_eq!(pod["status"]["phase"], "Running", "{name}");
        assert_eq!(condition(pod, "Ready"), Some("True"), "{name}: {pod:#}");
        assert_eq!(
            condition(pod, "daemonsync.io/in-place-update-ready"),
            Some("True"),
            "{name}: {pod:#}"
        );

        // What a kubectl user reads: NAME READY STATUS RESTARTS (1 (Ns ago)) AGE.
        let table = ok(&["get", "pod", name, "-n", "demo"]);
        let row: Vec<&str> = table
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(row[..4], [name.as_str(), "1/1", "Running", "1"], "{table}");
        assert!(
            row[4].starts_with('(') && row[5] == "ago)",
            "RESTARTS 1 (…s ago): {table}"
        );
    }
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}

//! kubectl patches a pod's image in place on a `daemonsync sim serve` child process: a JSON
//! patch with a resourceVersion `test` restarts the container (same pod, RESTARTS 1, the new
//! image), and a stale precondition is refused as the API server refuses it. Skipped, with a
//! reason, without kubectl.

use crate::serve_support::{ServeProcess, sim_dir};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn kubectl_available() -> bool {
    let ok = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: kubectl is not installed");
    }
    ok
}

/// Runs kubectl against the server (at most 60 s).
fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Output {
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", cache)
        .env("HOME", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "kubectl {args:?} took over 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
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

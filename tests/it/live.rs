//! The live backend (`--cluster kube`) end to end against `sim serve`: apply rolls a changed
//! DaemonSet out over HTTP and converges; plan, status and snapshot read the live state; bad
//! clusters fail with one line saying what to do.

use crate::serve_support::{ServeProcess, sim_dir};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// `daemonsync ARGS` with KUBECONFIG pointing at `kubeconfig`, bounded to 120 s.
pub(crate) fn daemonsync(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_daemonsync"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("daemonsync runs");
    for _ in 0..1200 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "daemonsync {args:?} did not finish within 120 s\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The DaemonSets the sim runs, `agent` at `image`.
fn manifests(dir: &Path, image: &str) -> String {
    let path = dir.join("git");
    std::fs::create_dir_all(&path).unwrap();
    let ds = |name: &str, image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}, namespace: demo}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  updateStrategy: {{rollingUpdate: {{maxUnavailable: 1}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: {name}, image: '{image}'}}]\n"
        )
    };
    std::fs::write(
        path.join("ds.yaml"),
        format!("{}---\n{}", ds("agent", image), ds("logger", "logger:1")),
    )
    .unwrap();
    path.display().to_string()
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn apply_over_the_api_converges_and_plan_then_shows_no_change() {
    let dir = sim_dir();
    let server = ServeProcess::start(dir.path(), &[]);
    let kc = server.kubeconfig.clone();
    let m = manifests(dir.path(), "agent:2");

    let plan = daemonsync(&kc, &["plan", "-m", &m, "-o", "json"]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan.stderr));
    let json: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let agent = &json["daemonsets"][0];
    assert_eq!(agent["name"], "agent");
    assert_eq!(agent["status"]["desiredNumberScheduled"], 4);
    assert_eq!(agent["status"]["updatedNumberScheduled"], 0);

    let applied = daemonsync(
        &kc,
        &["apply", "-m", &m, "--cluster", "kube", "--timeout", "90s"],
    );
    assert_eq!(
        applied.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&applied.stdout),
        text(&applied.stderr)
    );

    let again = daemonsync(&kc, &["plan", "-m", &m, "--cluster", "kube"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "no change after convergence: {}{}",
        text(&again.stdout),
        text(&again.stderr)
    );

    let status = daemonsync(&kc, &["status", "-o", "json"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let names: Vec<&str> = json["daemonsets"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["agent", "logger"]);
}

#[test]
fn plan_from_the_api_and_from_its_snapshot_are_the_same() {
    let dir = sim_dir();
    let server = ServeProcess::start(dir.path(), &[]);
    let kc = server.kubeconfig.clone();
    let m = manifests(dir.path(), "agent:2");
    let file = dir.path().join("snap.yaml");
    let snap = daemonsync(&kc, &["snapshot", "-o", file.to_str().unwrap()]);
    assert_eq!(snap.status.code(), Some(0), "{}", text(&snap.stderr));
    let now = "2030-01-01T00:00:00Z";
    let from_api = daemonsync(&kc, &["plan", "-m", &m, "--now", now, "-o", "json"]);
    let cluster = format!("snapshot:{}", file.display());
    let from_file = daemonsync(
        &kc,
        &["plan", "-m", &m, "-c", &cluster, "--now", now, "-o", "json"],
    );
    assert_eq!(
        from_api.status.code(),
        Some(2),
        "{}",
        text(&from_api.stderr)
    );
    assert_eq!(text(&from_api.stdout), text(&from_file.stdout));
}

#[test]
fn an_unreachable_server_or_a_missing_context_is_one_line_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    daemonsync::cluster::sim::serve::write_kubeconfig(&kc, &format!("http://127.0.0.1:{port}"))
        .unwrap();
    let m = manifests(dir.path(), "agent:2");

    let out = daemonsync(&kc, &["plan", "-m", &m]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot reach the API server of context \"daemonsync-sim\"")
            && err.contains(&format!("127.0.0.1:{port}"))
            && err.contains("kubectl --context daemonsync-sim get nodes"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let out = daemonsync(&kc, &["apply", "-m", &m, "--cluster", "kube:production"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("no context \"production\"") && err.contains("daemonsync-sim"),
        "{err}"
    );
}

/// Sends one bodiless HTTP request to the sim server and returns the whole response.
fn raw(url: &str, method: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

#[test]
fn a_cluster_without_the_crd_says_how_to_install_it_and_writes_nothing() {
    let dir = sim_dir();
    let server = ServeProcess::start(dir.path(), &[]);
    let status = raw(
        &server.url,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/manageddaemonsets.daemonsync.io",
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let m = manifests(dir.path(), "agent:2");
    let out = daemonsync(&server.kubeconfig, &["apply", "-m", &m]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("the ManagedDaemonSet CRD is not installed in context \"daemonsync-sim\"")
            && err.contains("kubectl apply -f examples/deploy/crd.yaml"),
        "{err}"
    );
    let pods = raw(&server.url, "GET", "/api/v1/namespaces/demo/pods");
    assert!(pods.starts_with("HTTP/1.1 200"), "{pods}");
    assert!(
        !pods.contains("agent:2"),
        "no pod of the new revision was created"
    );
}

/// The pods of `agent` as (name, uid, image), sorted, listed by kubectl's path over HTTP.
fn agent_pods(url: &str) -> Vec<(String, String, String)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let list: serde_json::Value = rt.block_on(async {
        reqwest::get(format!(
            "{url}/api/v1/namespaces/demo/pods?labelSelector=app%3Dagent"
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
    });
    let mut pods: Vec<(String, String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p["metadata"]["uid"].as_str().unwrap().to_string(),
                p["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    pods.sort();
    pods
}

#[test]
fn a_refused_first_write_fails_at_once_in_one_line_naming_the_context_and_the_rbac_and_changes_no_pod()
 {
    // With a surge the first pod write is a create; without, a delete. The cluster refuses it.
    for (strategy, forbid, verb) in [
        (
            "{maxSurge: 1, maxUnavailable: 0}",
            "forbid=create:pods",
            "create",
        ),
        ("{maxUnavailable: 1}", "forbid=delete:pods", "delete"),
    ] {
        let dir = sim_dir();
        let server = ServeProcess::start(dir.path(), &["--faults", forbid]);
        let kc = server.kubeconfig.clone();
        let git = dir.path().join("git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(
            git.join("ds.yaml"),
            format!("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: demo}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  updateStrategy: {{rollingUpdate: {strategy}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec:\n      containers: [{{name: agent, image: 'agent:2'}}]\n"),
        )
        .unwrap();
        let m = git.display().to_string();
        let before = agent_pods(&server.url);
        assert_eq!(before.len(), 4, "{before:?}");

        let out = daemonsync(
            &kc,
            &["apply", "-m", &m, "--cluster", "kube", "--timeout", "60s"],
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "stdout: {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        );
        // stderr has the progress lines, then the error: one line.
        let err = text(&out.stderr);
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| !l.starts_with('[') && !l.starts_with("Applying"))
            .collect();
        assert_eq!(errors.len(), 1, "{err}");
        let line = errors[0];
        assert!(
            line.starts_with("error: ")
                && line.contains("context \"daemonsync-sim\"")
                && line.contains("403")
                && line.contains(&format!("cannot {verb} resource \"pods\""))
                && line.ends_with("grant the ClusterRole in examples/deploy/rbac.yaml"),
            "{line}"
        );
        assert!(
            !line.contains("keep failing"),
            "refused once, not retried: {line}"
        );
        assert_eq!(
            agent_pods(&server.url),
            before,
            "{forbid}: no pod created or deleted"
        );
    }
}

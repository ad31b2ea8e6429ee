//! Rolling updates over the API stay within their budgets: `daemonsync apply --cluster kube`
//! (a child process) rolls a changed DaemonSet out over a fleet served by `sim serve`, while an
//! independent observer lists the pods every 20 ms and checks that never more nodes lack an
//! available pod than `maxUnavailable`, and never more nodes run two pods than `maxSurge`;
//! with injected API failures, and across an apply killed mid-rollout and restarted.

use crate::live::{daemonsync, text};
use crate::rbac::request_log;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::serve_support::ServeProcess;
use crate::sync_support::{is_ready, node_of};

/// Nodes in the fleet.
const NODES: usize = 10;

/// The DaemonSet `agent` in `demo` at `image` with the `rollingUpdate` given.
fn agent(image: &str, rolling_update: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: demo}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  updateStrategy: {{rollingUpdate: {rolling_update}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec:\n      containers: [{{name: agent, image: '{image}'}}]\n"
    )
}

/// A sim directory: [`NODES`] nodes, short latencies, `agent:1` running everywhere; and a
/// git directory with `agent:2`. Returns the directory and the manifests path.
fn fleet(rolling_update: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("running")).unwrap();
    std::fs::write(
        dir.path().join("running/ds.yaml"),
        agent("agent:1", rolling_update),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("sim.yaml"),
        format!(
            "seed: 11\nkubelet: {{startLatency: {{fixed: 150ms}}, terminationGrace: 200ms}}\nnodes:\n  - name: 'n-{{i}}'\n    count: {NODES}\n    labels: {{kubernetes.io/os: linux}}\nrunning:\n  - manifest: running/\n"
        ),
    )
    .unwrap();
    let git = dir.path().join("git");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::write(git.join("ds.yaml"), agent("agent:2", rolling_update)).unwrap();
    let m = git.display().to_string();
    (dir, m)
}

/// What one list of the pods shows.
#[derive(Debug, Default, Clone)]
struct Sample {
    /// Nodes without a ready pod that is not terminating.
    unavailable: BTreeSet<String>,
    /// Nodes with more than one pod that is not terminating.
    surging: BTreeSet<String>,
    /// Ready, not terminating pods at `agent:2`.
    updated: usize,
}

fn sample(pods: &[Value], nodes: &[String]) -> Sample {
    let mut live: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for p in pods {
        if p["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        if let Some(n) = node_of(p) {
            live.entry(n).or_default().push(p);
        }
    }
    let mut s = Sample::default();
    for n in nodes {
        let on = live.get(n).map(Vec::as_slice).unwrap_or_default();
        if !on.iter().any(|p| is_ready(p)) {
            s.unavailable.insert(n.clone());
        }
        if on.len() > 1 {
            s.surging.insert(n.clone());
        }
        s.updated += on
            .iter()
            .filter(|p| is_ready(p) && p["spec"]["containers"][0]["image"] == "agent:2")
            .count();
    }
    s
}

/// The worst the observer saw.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub(crate) samples: usize,
    max_unavailable: usize,
    worst_unavailable: Sample,
    max_surge: usize,
    worst_surge: Sample,
    start: Option<Sample>,
}

/// Lists the pods of `agent` every 20 ms until told to stop; lists that fail (injected
/// faults) are skipped.
pub(crate) struct Observer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Observed>>,
}

impl Observer {
    pub(crate) fn start(url: &str) -> Observer {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, url) = (stop.clone(), url.to_string());
        let (first, started) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let client = reqwest::Client::builder()
                    .user_agent("budget-observer")
                    .timeout(Duration::from_secs(5))
                    .build()
                    .unwrap();
                let get = |path: String| {
                    let client = client.clone();
                    let url = format!("{url}{path}");
                    async move {
                        let r = client.get(url).send().await.ok()?;
                        if !r.status().is_success() {
                            return None;
                        }
                        r.json::<Value>().await.ok()
                    }
                };
                let mut nodes: Vec<String> = Vec::new();
                while nodes.is_empty() && !flag.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    if let Some(list) = get("/api/v1/nodes".into()).await {
                        nodes = list["items"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
                            .collect();
                    }
                }
                let mut seen = Observed::default();
                while !flag.load(Ordering::SeqCst) {
                    if let Some(list) =
                        get("/api/v1/namespaces/demo/pods?labelSelector=app%3Dagent".into()).await
                    {
                        let s = sample(list["items"].as_array().unwrap(), &nodes);
                        seen.samples += 1;
                        let _ = first.try_send(());
                        let start = seen.start.get_or_insert_with(|| s.clone()).clone();
                        let unavailable = s.unavailable.difference(&start.unavailable).count();
                        if unavailable > seen.max_unavailable {
                            seen.max_unavailable = unavailable;
                            seen.worst_unavailable = s.clone();
                        }
                        if s.surging.len() > seen.max_surge {
                            seen.max_surge = s.surging.len();
                            seen.worst_surge = s.clone();
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                seen
            })
        });
        // The rollout starts after the first sample, so that it shows the start.
        started
            .recv_timeout(Duration::from_secs(30))
            .expect("the observer listed the pods within 30 s");
        Observer {
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn finish(mut self) -> Observed {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .unwrap()
            .join()
            .expect("the observer ran")
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Starts the server with a request log, and the observer once the server answers.
fn serve(dir: &Path, faults: Option<&str>) -> (ServeProcess, PathBuf) {
    let log = dir.join("requests.jsonl");
    let mut args = vec!["--request-log", log.to_str().unwrap()];
    if let Some(f) = faults {
        args.extend(["--faults", f]);
    }
    (ServeProcess::start(dir, &args), log)
}

/// Asserts the observer's worst against the budgets, and that it watched the rollout from
/// an all-available start to an all-updated end.
pub(crate) fn assert_within(seen: &Observed, max_unavailable: usize, max_surge: usize) {
    assert!(seen.samples >= 10, "the observer listed the pods: {seen:?}");
    let start = seen.start.as_ref().unwrap();
    assert!(
        start.unavailable.is_empty(),
        "all available at the start: {start:?}"
    );
    assert!(
        seen.max_unavailable <= max_unavailable,
        "{} nodes lacked an available pod at once (maxUnavailable {max_unavailable}): {:?}",
        seen.max_unavailable,
        seen.worst_unavailable
    );
    assert!(
        seen.max_surge <= max_surge,
        "{} nodes ran two pods at once (maxSurge {max_surge}): {:?}",
        seen.max_surge,
        seen.worst_surge
    );
}

/// `apply` then `plan`: both succeed, the second with no change.
fn apply_converges(kc: &Path, m: &str) {
    let out = daemonsync(
        kc,
        &["apply", "-m", m, "--cluster", "kube", "--timeout", "90s"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    plan_shows_no_change(kc, m);
}

fn plan_shows_no_change(kc: &Path, m: &str) {
    let out = daemonsync(kc, &["plan", "-m", m, "--cluster", "kube"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "no change after convergence: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Every node runs one ready `agent:2` pod at the end (lists retried a bounded number of
/// times: injected faults answer some of them with errors).
fn all_updated(url: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let get = |path: &str| {
        for _ in 0..50 {
            let got = rt.block_on(async {
                let r = reqwest::get(format!("{url}{path}")).await.ok()?;
                if !r.status().is_success() {
                    return None;
                }
                r.json::<Value>().await.ok()
            });
            if let Some(v) = got {
                return v["items"].as_array().unwrap().clone();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("GET {path} kept failing");
    };
    let nodes: Vec<String> = get("/api/v1/nodes")
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(nodes.len(), NODES);
    let last = sample(
        &get("/api/v1/namespaces/demo/pods?labelSelector=app%3Dagent"),
        &nodes,
    );
    assert_eq!(last.updated, NODES, "{last:?}");
    assert!(
        last.unavailable.is_empty() && last.surging.is_empty(),
        "{last:?}"
    );
}

/// daemonsync's successful writes in the log: (verb, resource with `/subresource`).
fn writes(log: &Path) -> Vec<(String, String)> {
    request_log(log)
        .iter()
        .filter(|l| {
            l["userAgent"]
                .as_str()
                .is_some_and(|a| a.starts_with("daemonsync/"))
                && !matches!(l["verb"].as_str(), Some("get" | "list" | "watch"))
                && l["code"].as_u64().is_some_and(|c| (200..300).contains(&c))
        })
        .map(|l| {
            let mut r = l["resource"].as_str().unwrap_or_default().to_string();
            if let Some(s) = l["subresource"].as_str() {
                r = format!("{r}/{s}");
            }
            (l["verb"].as_str().unwrap().to_string(), r)
        })
        .collect()
}

#[test]
fn a_max_unavailable_rollout_never_has_more_nodes_down_than_the_budget() {
    let (dir, m) = fleet("{maxUnavailable: 2}");
    let (server, log) = serve(dir.path(), None);
    let observer = Observer::start(&server.url);
    apply_converges(&server.kubeconfig, &m);
    let seen = observer.finish();
    assert_within(&seen, 2, 0);
    all_updated(&server.url);

    // The record's status is written when what it says changes, which pod writes and pods
    // becoming ready cause; never on every observation (each write wakes the record watch).
    let w = writes(&log);
    let pods = w.iter().filter(|(_, r)| r == "pods").count();
    let status = w
        .iter()
        .filter(|(_, r)| r == "manageddaemonsets/status")
        .count();
    assert_eq!(pods, 2 * NODES, "{w:?}");
    assert!(
        status <= 3 * pods,
        "{status} status writes for {pods} pod writes"
    );
    let records = w.iter().filter(|(_, r)| r == "manageddaemonsets").count();
    assert_eq!(records, 1, "the record's new spec is written once: {w:?}");
    // Nothing to do: an apply writes nothing at all.
    let before = w.len();
    apply_converges(&server.kubeconfig, &m);
    let again = writes(&log);
    assert_eq!(again[before..], [], "a converged apply wrote");
}

#[test]
fn a_max_surge_rollout_never_runs_more_extra_pods_than_the_budget_nor_lacks_one() {
    let (dir, m) = fleet("{maxSurge: 2, maxUnavailable: 0}");
    let (server, _log) = serve(dir.path(), None);
    let observer = Observer::start(&server.url);
    apply_converges(&server.kubeconfig, &m);
    let seen = observer.finish();
    assert_within(&seen, 0, 2);
    all_updated(&server.url);
}

/// Pod names DELETEd with a 2xx answer more than once, from the request log.
fn deleted_twice(log: &Path) -> Vec<String> {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for l in request_log(log) {
        let ok = l["code"].as_u64().is_some_and(|c| (200..300).contains(&c));
        if l["resource"] == "pods" && l["verb"] == "delete" && ok {
            *count
                .entry(l["name"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    count
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(p, _)| p)
        .collect()
}

#[test]
fn under_api_errors_and_dropped_watches_budgets_hold_and_no_pod_is_deleted_twice() {
    for (strategy, unavailable, surge) in [
        ("{maxUnavailable: 2}", 2, 0),
        ("{maxSurge: 2, maxUnavailable: 0}", 0, 2),
    ] {
        let (dir, m) = fleet(strategy);
        let (server, log) = serve(dir.path(), Some("error-rate=0.05,watch-drop=3s"));
        let observer = Observer::start(&server.url);
        apply_converges(&server.kubeconfig, &m);
        let seen = observer.finish();
        assert_within(&seen, unavailable, surge);
        let twice = deleted_twice(&log);
        assert!(
            twice.is_empty(),
            "{strategy}: pods deleted twice: {twice:?}"
        );
        // Faults were live during the rollout (daemonsync's own share of them varies with
        // timing: at 5% a run of few requests may meet none, so all clients are counted).
        let injected = request_log(&log)
            .iter()
            .filter(|l| matches!(l["code"].as_u64(), Some(500 | 429)))
            .count();
        assert!(injected > 0, "{strategy}: errors were injected");
    }
}

#[test]
fn an_apply_killed_mid_rollout_then_restarted_converges_within_budgets() {
    let (dir, m) = fleet("{maxUnavailable: 2}");
    let (server, log) = serve(dir.path(), None);
    let observer = Observer::start(&server.url);
    let mut child = Command::new(env!("CARGO_BIN_EXE_daemonsync"))
        .args(["apply", "-m", &m, "--cluster", "kube", "--timeout", "90s"])
        .env("KUBECONFIG", &server.kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once it has written a few pods (creates and deletes answered 2xx).
    let deadline = Instant::now() + Duration::from_secs(60);
    let writes = || {
        request_log(&log)
            .iter()
            .filter(|l| {
                l["resource"] == "pods"
                    && matches!(l["verb"].as_str(), Some("create" | "delete"))
                    && l["code"].as_u64().is_some_and(|c| (200..300).contains(&c))
            })
            .count()
    };
    while writes() < 3 {
        assert!(Instant::now() < deadline, "apply wrote no pods within 60 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "apply ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let written = writes();
    assert!(
        written < 2 * NODES,
        "killed mid-rollout: {written} pod writes"
    );
    apply_converges(&server.kubeconfig, &m);
    let seen = observer.finish();
    assert_within(&seen, 2, 0);
    all_updated(&server.url);
}

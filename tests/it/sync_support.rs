//! Helpers for the `daemonsync sync` tests: a small simulated fleet, the daemon as a child
//! process with its log in a file, bounded waits that print that log when they fail, signed
//! webhooks, metrics, and reads of the simulated cluster through its API (independently of
//! the daemon).

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::free_port;

/// The namespace of every DaemonSet in these tests.
pub const NS: &str = "demo";

/// The DaemonSet `name` in [`NS`] at `image`, replacing up to two nodes at a time.
pub fn daemonset(name: &str, image: &str) -> String {
    daemonset_with(name, image, "")
}

/// [`daemonset`] with extra pod-spec YAML (indented by 6: `nodeSelector`, `tolerations`).
pub fn daemonset_with(name: &str, image: &str, pod_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}, namespace: {NS}}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  updateStrategy: {{rollingUpdate: {{maxUnavailable: 2}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n{pod_spec}      containers: [{{name: {name}, image: '{image}'}}]\n"
    )
}

/// A sim directory: `nodes` Ready nodes `n-01`…, short kubelet latencies, the DaemonSets of
/// `running` (YAML) running everywhere, and `extra` sim-file keys (`failures:`, `churn:`).
pub fn fleet(nodes: usize, running: &str, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("running")).unwrap();
    std::fs::write(dir.path().join("running/ds.yaml"), running).unwrap();
    std::fs::write(
        dir.path().join("sim.yaml"),
        format!(
            "seed: 13\nkubelet: {{startLatency: {{uniform: [200ms, 600ms]}}, terminationGrace: 300ms}}\nnodes:\n  - name: 'n-{{i}}'\n    count: {nodes}\n    labels: {{kubernetes.io/os: linux}}\n{extra}running:\n  - manifest: running/\n"
        ),
    )
    .unwrap();
    dir
}

/// Whether `git` (for `git daemon`) is installed; prints why the test skips when not.
pub fn git_available() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: git is not installed (the test serves its repository with git daemon)");
    }
    ok
}

/// A `daemonsync sync` child process, its stderr in a file; killed on drop.
pub struct Sync {
    child: RefCell<Child>,
    log: PathBuf,
    /// What the test calls it in failure messages.
    pub name: String,
    /// `http://127.0.0.1:PORT` of its listener.
    pub url: String,
}

impl Sync {
    /// Starts `daemonsync sync ARGS --listen 127.0.0.1:PORT` (a free port) against the
    /// cluster of `kubeconfig`; its log goes to `DIR/NAME.log`.
    pub fn start(kubeconfig: &Path, dir: &Path, name: &str, args: &[&str]) -> Sync {
        let port = free_port();
        let log = dir.join(format!("{name}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_daemonsync"))
            .arg("sync")
            .args(args)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("KUBECONFIG", kubeconfig)
            .env_remove("RUST_LOG")
            .env_remove("DAEMONSYNC_WEBHOOK_SECRET")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("daemonsync runs");
        Sync {
            child: RefCell::new(child),
            log,
            name: name.to_string(),
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last 60 lines of its log, for failure messages.
    pub fn tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        let from = lines.len().saturating_sub(60);
        format!(
            "--- the last lines of {}'s log ---\n{}",
            self.name,
            lines[from..].join("\n")
        )
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.borrow().id()
    }

    /// Its exit status, if it has exited.
    pub fn exited(&self) -> Option<ExitStatus> {
        self.child.borrow_mut().try_wait().unwrap()
    }

    /// Sends SIGTERM; returns the exit status (waits at most 15 s).
    pub fn terminate(&self) -> ExitStatus {
        signal(self.pid(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit within 15 s of SIGTERM\n{}",
                self.name,
                self.tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL, as a crash.
    pub fn kill9(&self) {
        let mut child = self.child.borrow_mut();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Its resident memory (`VmRSS`), in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmRSS in /proc/{}/status", self.pid()))
    }

    /// `GET PATH` on its listener: (status, body), or `None` when it does not answer.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        request("GET", &format!("{}{path}", self.url), &[], "").ok()
    }

    /// Its `/metrics` text (empty when it does not answer).
    pub fn metrics(&self) -> String {
        self.get("/metrics")
            .map(|(_, body)| body)
            .unwrap_or_default()
    }

    /// The value of one series (`name{labels}` exactly as exposed).
    pub fn metric(&self, series: &str) -> Option<f64> {
        metric(&self.metrics(), series)
    }

    /// POSTs a GitHub `push` delivery for `git_ref` to `/webhook`, with the signature header
    /// given (none when `None`); returns the status.
    pub fn push_webhook(&self, git_ref: &str, signature: Option<&str>) -> u16 {
        let body = push_body(git_ref);
        let mut headers = vec![
            ("X-GitHub-Event", "push"),
            ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
            ("Content-Type", "application/json"),
        ];
        let signature = signature.map(str::to_string);
        if let Some(s) = &signature {
            headers.push(("X-Hub-Signature-256", s));
        }
        match request("POST", &format!("{}/webhook", self.url), &headers, &body) {
            Ok((code, _)) => code,
            Err(e) => panic!("POST /webhook failed: {e}\n{}", self.tail()),
        }
    }

    /// Waits (at most 30 s) until `/readyz` answers 200.
    pub fn wait_ready(&self) {
        wait_until(&format!("{} ready", self.name), 30, &[self], || {
            self.get("/readyz").filter(|(c, _)| *c == 200)
        });
    }
}

impl Drop for Sync {
    fn drop(&mut self) {
        let child = self.child.get_mut();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Sends `kill -SIG PID`.
pub fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{sig} {pid}");
}

/// Polls `check` every 50 ms until it gives a value; panics after `secs` seconds (or when a
/// daemon of `daemons` exits) with `what` and the daemons' log tails.
pub fn wait_until<T>(
    what: &str,
    secs: u64,
    daemons: &[&Sync],
    mut check: impl FnMut() -> Option<T>,
) -> T {
    wait_for(what, secs, daemons, || check().ok_or_else(String::new))
}

/// [`wait_until`] for a check that says what is still missing; the last answer is in the
/// failure message.
pub fn wait_for<T>(
    what: &str,
    secs: u64,
    daemons: &[&Sync],
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let logs = || {
        daemons
            .iter()
            .map(|d| d.tail())
            .collect::<Vec<_>>()
            .join("\n")
    };
    loop {
        let missing = match check() {
            Ok(v) => return v,
            Err(missing) => missing,
        };
        for d in daemons {
            if let Some(status) = d.exited() {
                panic!(
                    "waiting for {what}: {} exited ({status}); {missing}\n{}",
                    d.name,
                    logs()
                );
            }
        }
        if Instant::now() > deadline {
            panic!("{what}: not within {secs} s; {missing}\n{}", logs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `X-Hub-Signature-256` value of `body` under `secret`.
pub fn sign(secret: &[u8], body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
    mac.update(body.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

/// A GitHub push event's body (the fields daemonsync reads, and a few it does not).
pub fn push_body(git_ref: &str) -> String {
    serde_json::json!({
        "ref": git_ref,
        "before": "0000000000000000000000000000000000000000",
        "repository": {"full_name": "acme/fleet"},
        "pusher": {"name": "t"},
    })
    .to_string()
}

/// The value of `series` in OpenMetrics `text`.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    static CLIENT: reqwest::Client = reqwest::Client::builder()
        .user_agent("sync-test-observer")
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
}

/// One HTTP request: (status, body), or why it got no answer.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String), String> {
    let client = CLIENT.with(Clone::clone);
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client.request(method, url).body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    RUNTIME.with(|rt| {
        rt.block_on(async {
            let r = req.send().await.map_err(|e| e.to_string())?;
            let code = r.status().as_u16();
            Ok((code, r.text().await.map_err(|e| e.to_string())?))
        })
    })
}

/// `GET url` as JSON when it answers 2xx.
pub fn get_json(url: &str) -> Option<Value> {
    let (code, body) = request("GET", url, &[], "").ok()?;
    (200..300)
        .contains(&code)
        .then(|| serde_json::from_str(&body).ok())
        .flatten()
}

/// The simulated cluster's API, read as an independent observer would.
#[derive(Clone)]
pub struct Api {
    pub url: String,
}

impl Api {
    /// `GET path`'s items, retried (injected faults answer some requests with errors).
    pub fn items(&self, path: &str) -> Vec<Value> {
        for _ in 0..50 {
            if let Some(v) = get_json(&format!("{}{path}", self.url)) {
                return v["items"].as_array().cloned().unwrap_or_default();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("GET {path} kept failing");
    }

    /// `GET path`'s status code (`None` when the API does not answer).
    pub fn status_of(&self, path: &str) -> Option<u16> {
        request("GET", &format!("{}{path}", self.url), &[], "")
            .ok()
            .map(|(code, _)| code)
    }

    /// The names of the nodes.
    pub fn nodes(&self) -> Vec<String> {
        self.items("/api/v1/nodes")
            .iter()
            .map(|n| name(n).to_string())
            .collect()
    }

    /// The names of the nodes labelled `key=value`.
    pub fn nodes_labelled(&self, key: &str, value: &str) -> Vec<String> {
        self.items("/api/v1/nodes")
            .iter()
            .filter(|n| n["metadata"]["labels"][key] == value)
            .map(|n| name(n).to_string())
            .collect()
    }

    /// The pods of the DaemonSet `app`.
    pub fn pods(&self, app: &str) -> Vec<Value> {
        self.items(&format!(
            "/api/v1/namespaces/{NS}/pods?labelSelector=app%3D{app}"
        ))
    }

    /// The `ManagedDaemonSet` record `name`.
    pub fn record(&self, name: &str) -> Value {
        self.items(&format!(
            "/apis/daemonsync.io/v1alpha1/namespaces/{NS}/manageddaemonsets"
        ))
        .into_iter()
        .find(|r| self::name(r) == name)
        .unwrap_or_else(|| panic!("no ManagedDaemonSet {NS}/{name}"))
    }

    /// The events of [`NS`].
    pub fn events(&self) -> Vec<Value> {
        self.items(&format!("/api/v1/namespaces/{NS}/events"))
    }

    /// Deletes a pod (retried through injected faults); false when it is already gone.
    pub fn delete_pod(&self, pod: &str) -> bool {
        let url = format!("{}/api/v1/namespaces/{NS}/pods/{pod}", self.url);
        for _ in 0..50 {
            match request("DELETE", &url, &[], "") {
                Ok((code, _)) if (200..300).contains(&code) => return true,
                Ok((404, _)) => return false,
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        panic!("DELETE pod {pod} kept failing");
    }

    /// Whether every node runs exactly one live pod of `app`, ready, at `image`, and no other
    /// live pod of `app` exists; `Err` says what is not so.
    pub fn converged(&self, app: &str, image: &str) -> Result<(), String> {
        self.converged_on(app, image, &self.nodes())
    }

    /// [`Api::converged`] for a DaemonSet that selects only `nodes`: a live pod elsewhere is
    /// not converged either.
    pub fn converged_on(&self, app: &str, image: &str, nodes: &[String]) -> Result<(), String> {
        let pods = self.pods(app);
        let mut on: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
        for p in pods.iter().filter(|p| !terminating(p)) {
            on.entry(node_of(p).unwrap_or_default())
                .or_default()
                .push(p);
        }
        let mut wrong = Vec::new();
        for n in nodes {
            let here = on.remove(n).unwrap_or_default();
            let good = here.len() == 1 && is_ready(here[0]) && image_of(here[0]) == image;
            if !good {
                let seen: Vec<String> = here
                    .iter()
                    .map(|p| format!("{} ready={}", image_of(p), is_ready(p)))
                    .collect();
                wrong.push(format!("{n}: {seen:?}"));
            }
        }
        for (n, here) in on {
            wrong.push(format!(
                "{} pods on {n:?}, not a node it selects",
                here.len()
            ));
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(format!("{app} is not converged on {image}: {wrong:?}"))
        }
    }

    /// Live pods of `app` by node: (image, ready).
    pub fn images_by_node(&self, app: &str) -> BTreeMap<String, Vec<(String, bool)>> {
        let mut by: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
        for p in self.pods(app).iter().filter(|p| !terminating(p)) {
            by.entry(node_of(p).unwrap_or_default())
                .or_default()
                .push((image_of(p).to_string(), is_ready(p)));
        }
        by
    }
}

/// `metadata.name`.
pub fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or_default()
}

/// The condition `kind` of a record: (status, message).
pub fn condition(record: &Value, kind: &str) -> Option<(String, String)> {
    record["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// Waits (bounded) for the record of `ds` to carry the condition `kind` with status True and
/// returns the record and the condition's message. The daemon's gauges and logs change in the
/// pass that decides; the record follows with the next coalesced status write.
pub fn wait_condition(api: &Api, sync: &Sync, ds: &str, kind: &str) -> (Value, String) {
    wait_for(
        &format!("{ds}'s {kind} condition True"),
        30,
        &[sync],
        || {
            let record = api.record(ds);
            match condition(&record, kind) {
                Some((status, message)) if status == "True" => Ok((record, message)),
                other => Err(format!("{other:?}")),
            }
        },
    )
}

pub fn terminating(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_string()
}

pub fn image_of(pod: &Value) -> &str {
    pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
}

/// The node a pod is for: `spec.nodeName`, or the node its daemon-pod affinity names.
pub fn node_of(pod: &Value) -> Option<String> {
    if let Some(n) = pod["spec"]["nodeName"].as_str() {
        return Some(n.to_string());
    }
    let terms = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    terms[0]["matchFields"][0]["values"][0]
        .as_str()
        .map(str::to_string)
}

pub fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

//! Beside the built-in DaemonSet controller, over HTTP: `daemonsync sim serve` runs the
//! built-in controller, and `apply`/`plan`/`release --cluster kube` talk to it through a real
//! kube-rs client. A DaemonSet the built-in controller runs is blocked without a choice, taken
//! over without a restart (also when killed mid-way), given back with `release`, or kept
//! native; pods refused by Pod Security halt only their DaemonSet; owned pods and templates
//! carry what the Cluster Autoscaler reads. The same scenarios run in process in
//! `src/apply/handover_tests.rs`.

use crate::live::{daemonsync, text};
use crate::serve_support::{Kubectl, ServeProcess, kubectl_available, sim_file};
use crate::sync_support::{Api, NS, image_of, is_ready, name, node_of, terminating, wait_for};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const NODES: usize = 4;
const ONE: &str = "{type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}";
const ADOPT: &str = "daemonsync.io/adopt: 'true'";
const NATIVE: &str = "daemonsync.io/mode: native";
const RECORD_KIND: &str = "ManagedDaemonSet";
const AUTOSCALER: &str = "cluster-autoscaler.kubernetes.io/daemonset-pod";

/// DaemonSet `name` in `ns` at `image`, with `strategy` (a YAML flow mapping), annotations
/// (YAML flow mapping entries) and extra container fields (flow mapping entries).
fn ds_in(
    ns: &str,
    name: &str,
    image: &str,
    strategy: &str,
    annotations: &str,
    extra: &str,
) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: {ns}, annotations: {{{annotations}}}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  updateStrategy: {strategy}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: '{image}'{extra}}}]
"
    )
}

/// [`ds_in`] in `demo`, with no extra container field.
fn ds(name: &str, image: &str, strategy: &str, annotations: &str) -> String {
    ds_in(NS, name, image, strategy, annotations, "")
}

/// A served sim: four Linux workers, short kubelet latencies, the namespaces `demo` and
/// `secure` (Pod Security `baseline` enforced), and the DaemonSets the built-in controller
/// runs at the start.
struct Fleet {
    server: ServeProcess,
    api: Api,
    dir: tempfile::TempDir,
}

impl Fleet {
    /// Serves the fleet with `builtin` DaemonSets and `extra` server flags, logging every
    /// request to `requests.jsonl` beside the sim file; waits (at most 30 s) until each
    /// built-in DaemonSet runs a ready pod at `NAME:1` on every node.
    fn start(builtin: &[(&str, String)], extra: &[&str]) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let mut sim = format!(
            "seed: 3
kubelet: {{startLatency: {{fixed: 200ms}}, terminationGrace: 300ms}}
nodes:
  - {{name: 'n-{{i}}', count: {NODES}, labels: {{kubernetes.io/os: linux}}}}
namespaces:
  - {{name: {NS}}}
  - {{name: secure, labels: {{pod-security.kubernetes.io/enforce: baseline}}}}
"
        );
        if !builtin.is_empty() {
            std::fs::create_dir_all(dir.path().join("builtin")).unwrap();
            let yaml: Vec<&str> = builtin.iter().map(|(_, y)| y.as_str()).collect();
            std::fs::write(dir.path().join("builtin/ds.yaml"), yaml.join("---\n")).unwrap();
            sim.push_str("builtin:\n  - manifest: builtin/\n");
        }
        std::fs::write(sim_file(dir.path()), sim).unwrap();
        let log = dir.path().join("requests.jsonl").display().to_string();
        let mut flags = vec!["--request-log", log.as_str()];
        flags.extend_from_slice(extra);
        let server = ServeProcess::start(dir.path(), &flags);
        let api = Api {
            url: server.url.clone(),
        };
        for (app, _) in builtin {
            let image = format!("{app}:1");
            wait_for(&format!("{app} running"), 30, &[], || {
                api.converged(app, &image)
            });
        }
        Fleet { server, api, dir }
    }

    /// Writes `yaml` as the source's only file and returns the source directory.
    fn manifests(&self, yaml: &str) -> String {
        let path = self.dir.path().join("git");
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("ds.yaml"), yaml).unwrap();
        path.display().to_string()
    }

    fn kubeconfig(&self) -> &Path {
        &self.server.kubeconfig
    }

    /// `daemonsync apply -m DIR --cluster kube --timeout 60s EXTRA`.
    fn apply(&self, m: &str, extra: &[&str]) -> Output {
        let mut args = vec!["apply", "-m", m, "--cluster", "kube", "--timeout", "60s"];
        args.extend_from_slice(extra);
        daemonsync(self.kubeconfig(), &args)
    }

    /// `daemonsync plan -m DIR --cluster kube EXTRA`.
    fn plan(&self, m: &str, extra: &[&str]) -> Output {
        let mut args = vec!["plan", "-m", m, "--cluster", "kube"];
        args.extend_from_slice(extra);
        daemonsync(self.kubeconfig(), &args)
    }

    /// The live (not terminating) pods of `app` in `demo`.
    fn live_pods(&self, app: &str) -> Vec<Value> {
        self.api
            .pods(app)
            .into_iter()
            .filter(|p| !terminating(p))
            .collect()
    }

    /// node → uid of the live `app` pod on it.
    fn uids(&self, app: &str) -> BTreeMap<String, String> {
        self.live_pods(app)
            .iter()
            .map(|p| {
                (
                    node_of(p).unwrap_or_default(),
                    p["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    }

    /// The kinds of the controllers of the live `app` pods (`none` for a pod without one).
    fn controllers(&self, app: &str) -> BTreeSet<String> {
        self.live_pods(app).iter().map(controller_kind).collect()
    }

    /// The images of the live `app` pods.
    fn images(&self, app: &str) -> BTreeSet<String> {
        self.live_pods(app)
            .iter()
            .map(|p| image_of(p).to_string())
            .collect()
    }

    /// The path of the apps/v1 DaemonSet `name` in `demo`.
    fn daemonset_path(name: &str) -> String {
        format!("/apis/apps/v1/namespaces/{NS}/daemonsets/{name}")
    }

    /// `GET path` as JSON (404 and other failures: `None`).
    fn get(&self, path: &str) -> Option<Value> {
        crate::sync_support::get_json(&format!("{}{path}", self.api.url))
    }
}

/// The kind of a pod's controller ownerReference, `none` without one.
fn controller_kind(p: &Value) -> String {
    p["metadata"]["ownerReferences"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["controller"] == true))
        .map_or("none".into(), |o| {
            o["kind"].as_str().unwrap_or_default().into()
        })
}

/// Asserts the exit code, showing both streams when it differs.
fn assert_exit(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}\nstdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Both streams of `out`.
fn both(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The kinds of the risks `plan -o json` reports for DaemonSet `name`.
fn risks(plan: &Output, name: &str) -> Vec<String> {
    let json: Value = serde_json::from_slice(&plan.stdout)
        .unwrap_or_else(|e| panic!("plan -o json: {e}\n{}", both(plan)));
    let ds = json["daemonsets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in the plan: {json}"));
    ds["risks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Samples, every ~50 ms from a background thread, how many nodes have no ready, live pod
/// of `app`; [`Sampler::stop`] returns the most seen at once.
struct Sampler {
    stop: Arc<AtomicBool>,
    worst: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<usize>,
}

impl Sampler {
    fn start(api: &Api, app: &'static str) -> Sampler {
        let api = api.clone();
        let nodes = api.nodes();
        let stop = Arc::new(AtomicBool::new(false));
        let worst = Arc::new(AtomicUsize::new(0));
        let (s, w) = (stop.clone(), worst.clone());
        let thread = std::thread::spawn(move || {
            let mut samples = 0;
            while !s.load(Ordering::SeqCst) {
                let served: BTreeSet<String> = api
                    .pods(app)
                    .iter()
                    .filter(|p| !terminating(p) && is_ready(p))
                    .filter_map(node_of)
                    .collect();
                let down = nodes.iter().filter(|n| !served.contains(*n)).count();
                w.fetch_max(down, Ordering::SeqCst);
                samples += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            samples
        });
        Sampler {
            stop,
            worst,
            thread,
        }
    }

    /// Stops sampling; returns the most nodes seen without a ready pod at once.
    fn stop(self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        let samples = self.thread.join().expect("the sampler runs");
        let worst = self.worst.load(Ordering::SeqCst);
        eprintln!("{samples} samples, at most {worst} node(s) without a ready pod");
        worst
    }
}

/// The built-in controller's `agent` at `agent:1`, maxUnavailable 1.
fn builtin_agent() -> (&'static str, String) {
    ("agent", ds("agent", "agent:1", ONE, ""))
}

#[test]
fn a_builtin_daemonset_without_a_choice_is_blocked_named_and_untouched_while_the_others_converge() {
    let f = Fleet::start(&[builtin_agent()], &[]);
    let before = f.uids("agent");
    assert_eq!(before.len(), NODES, "{before:?}");
    let m = f.manifests(&format!(
        "{}---\n{}",
        ds("agent", "agent:2", ONE, ""),
        ds("logs", "logs:1", ONE, "")
    ));

    let plan = f.plan(&m, &["-o", "json"]);
    assert_exit(&plan, 2, "plan shows changes");
    assert!(
        risks(&plan, "agent").contains(&"builtin-controller".to_string()),
        "{}",
        both(&plan)
    );

    let out = f.apply(&m, &[]);
    assert_exit(&out, 1, "apply names the blocked DaemonSet");
    let all = both(&out);
    assert!(
        all.contains("demo/agent")
            && (all.contains("builtin-controller") || all.contains("built-in"))
            && all.contains("daemonsync.io/adopt")
            && all.contains("daemonsync.io/mode: native"),
        "{all}"
    );
    assert_eq!(f.uids("agent"), before, "no agent pod was touched");
    assert_eq!(f.images("agent"), BTreeSet::from(["agent:1".to_string()]));
    assert_eq!(
        f.controllers("agent"),
        BTreeSet::from(["DaemonSet".to_string()])
    );
    assert_eq!(
        f.api.status_of(&Fleet::daemonset_path("agent")),
        Some(200),
        "the apps/v1 DaemonSet is still there"
    );
    f.api.converged("logs", "logs:1").unwrap();
    assert_eq!(
        f.api.status_of(&format!(
            "/apis/daemonsync.io/v1alpha1/namespaces/{NS}/manageddaemonsets/agent"
        )),
        Some(404),
        "no record for a blocked DaemonSet"
    );
}

#[test]
fn a_take_over_of_the_same_template_keeps_every_pod_and_removes_the_builtin_daemonset() {
    let f = Fleet::start(&[builtin_agent()], &[]);
    let before = f.uids("agent");
    let m = f.manifests(&ds("agent", "agent:1", ONE, ADOPT));

    let out = f.apply(&m, &["-o", "json"]);
    assert_exit(&out, 0, "the take-over converges");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["creates"].as_u64(), report["deletes"].as_u64()),
        (Some(0), Some(0)),
        "zero restarts: {}",
        report["writes"]
    );
    let verbs: Vec<&str> = report["writes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["verb"].as_str())
        .collect();
    assert_eq!(
        (
            verbs.iter().filter(|v| **v == "take-over").count(),
            verbs.iter().filter(|v| **v == "claim").count()
        ),
        (1, NODES),
        "one take-over, a claim per pod: {verbs:?}"
    );
    assert_eq!(f.uids("agent"), before, "the same pods");
    assert_eq!(
        f.api.status_of(&Fleet::daemonset_path("agent")),
        Some(404),
        "the apps/v1 DaemonSet is gone"
    );
    for p in f.live_pods("agent") {
        assert_eq!(controller_kind(&p), RECORD_KIND, "{}", name(&p));
    }
    assert_eq!(f.live_pods("agent").len(), NODES);

    let plan = f.plan(&m, &[]);
    assert_exit(&plan, 0, "nothing left to do");
}

#[test]
fn a_take_over_with_a_new_image_replaces_each_pod_once_within_max_unavailable() {
    let f = Fleet::start(&[builtin_agent()], &[]);
    let m = f.manifests(&ds("agent", "agent:2", ONE, ADOPT));

    let sampler = Sampler::start(&f.api, "agent");
    let out = f.apply(&m, &["-o", "json"]);
    let worst = sampler.stop();
    assert_exit(&out, 0, "the take-over converges");
    f.api.converged("agent", "agent:2").unwrap();
    assert!(worst <= 1, "at most one node down at once, saw {worst}");

    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut deletes: BTreeMap<String, usize> = BTreeMap::new();
    for w in report["writes"].as_array().unwrap() {
        if w["verb"] == "delete" {
            *deletes
                .entry(w["node"].as_str().unwrap_or_default().to_string())
                .or_default() += 1;
        }
    }
    let nodes: BTreeMap<String, usize> = f.api.nodes().into_iter().map(|n| (n, 1)).collect();
    assert_eq!(deletes, nodes, "exactly one delete per node");
    assert_eq!(f.api.status_of(&Fleet::daemonset_path("agent")), Some(404));
    assert_eq!(
        f.controllers("agent"),
        BTreeSet::from([RECORD_KIND.to_string()])
    );
}

/// The request log's lines so far.
fn logged(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Starts `apply -m m` against `f` and SIGKILLs it once the request log shows the apps/v1
/// DaemonSet `agent` deleted and then `claims` pods patched (the claims); panics if it
/// exits first.
fn apply_killed_after(f: &Fleet, m: &str, claims: usize) {
    let requests = f.dir.path().join("requests.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_daemonsync"))
        .args(["apply", "-m", m, "--cluster", "kube", "--timeout", "60s"])
        .env("KUBECONFIG", f.kubeconfig())
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("daemonsync runs");
    let ok = |l: &Value| l["code"].as_u64().is_some_and(|c| c < 300);
    let reached = || {
        let lines = logged(&requests);
        let Some(at) = lines.iter().position(|l| {
            l["verb"] == "delete" && l["resource"] == "daemonsets" && l["name"] == "agent" && ok(l)
        }) else {
            return false;
        };
        let patched = lines[at..]
            .iter()
            .filter(|l| l["verb"] == "patch" && l["resource"] == "pods" && ok(l))
            .count();
        patched >= claims
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !reached() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("apply exited ({status}) before the take-over's delete and {claims} claim(s)");
        }
        assert!(
            Instant::now() < deadline,
            "apply did not reach the take-over's delete and {claims} claim(s) within 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let finished = child.try_wait().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        finished.is_none(),
        "apply had finished before it could be killed: {finished:?}"
    );
}

#[test]
fn a_take_over_killed_mid_way_completes_on_the_next_run_with_the_same_pods() {
    // Every request takes 100 ms, so the apply is killed between two of its writes: right
    // after the take-over's delete, and after two of the four claims. The request log
    // (written as each answer goes out) says where it is.
    for claims in [0, 2] {
        let f = Fleet::start(&[builtin_agent()], &["--faults", "latency=100ms"]);
        let before = f.uids("agent");
        let m = f.manifests(&ds("agent", "agent:1", ONE, ADOPT));
        apply_killed_after(&f, &m, claims);
        let claimed = f
            .live_pods("agent")
            .iter()
            .filter(|p| controller_kind(p) == RECORD_KIND)
            .count();
        eprintln!("killed after {claims} claim(s): {claimed} of {NODES} pod(s) claimed");
        assert!(
            (claims..NODES).contains(&claimed),
            "killed mid-way: {claimed} claimed"
        );
        assert_eq!(f.api.status_of(&Fleet::daemonset_path("agent")), Some(404));

        let out = f.apply(&m, &["-o", "json"]);
        assert_exit(&out, 0, "the re-run completes the take-over");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (report["creates"].as_u64(), report["deletes"].as_u64()),
            (Some(0), Some(0)),
            "zero restarts: {}",
            report["writes"]
        );
        assert_eq!(f.uids("agent"), before, "the same pods");
        assert_eq!(
            f.controllers("agent"),
            BTreeSet::from([RECORD_KIND.to_string()])
        );
        assert_eq!(f.api.status_of(&Fleet::daemonset_path("agent")), Some(404));
    }
}

#[test]
fn release_gives_the_pods_back_to_the_builtin_controller_unrestarted_and_rollout_status_completes()
{
    let f = Fleet::start(&[builtin_agent()], &[]);
    let m = f.manifests(&ds("agent", "agent:1", ONE, ADOPT));
    assert_exit(&f.apply(&m, &[]), 0, "the take-over converges");
    let before = f.uids("agent");
    assert_eq!(f.api.status_of(&Fleet::daemonset_path("agent")), Some(404));

    let out = daemonsync(
        f.kubeconfig(),
        &[
            "release",
            "demo/agent",
            "--cluster",
            "kube",
            "--timeout",
            "60s",
        ],
    );
    assert_exit(&out, 0, "release");
    assert_eq!(
        f.api.status_of(&Fleet::daemonset_path("agent")),
        Some(200),
        "the apps/v1 DaemonSet is back"
    );
    assert_eq!(f.uids("agent"), before, "no pod restarted");
    wait_for("the built-in controller owns every pod", 30, &[], || {
        let kinds = f.controllers("agent");
        if kinds == BTreeSet::from(["DaemonSet".to_string()]) {
            Ok(())
        } else {
            Err(format!("controllers: {kinds:?}"))
        }
    });

    if kubectl_available() {
        let cache = f.dir.path().join("kube-cache");
        let k = Kubectl {
            kubeconfig: f.kubeconfig(),
            cache: &cache,
        };
        let status = k.ok(&["rollout", "status", "ds/agent", "-n", NS, "--timeout=30s"]);
        assert!(status.contains("successfully rolled out"), "{status}");
    }
    let live = wait_for(
        "the DaemonSet's status counts every pod updated",
        30,
        &[],
        || {
            let live = f
                .get(&Fleet::daemonset_path("agent"))
                .ok_or("no DaemonSet")?;
            let status = &live["status"];
            let desired = status["desiredNumberScheduled"].as_u64();
            if desired == Some(NODES as u64) && status["updatedNumberScheduled"].as_u64() == desired
            {
                Ok(live)
            } else {
                Err(format!("status: {status}"))
            }
        },
    );
    assert_eq!(live["spec"]["updateStrategy"]["type"], "RollingUpdate");
    assert_eq!(f.uids("agent"), before, "still no pod restarted");
    assert_eq!(
        f.api.status_of(&format!(
            "/apis/daemonsync.io/v1alpha1/namespaces/{NS}/manageddaemonsets/agent"
        )),
        Some(404),
        "the ManagedDaemonSet record is gone"
    );
}

#[test]
fn native_mode_rolls_node_by_node_and_the_builtin_controller_runs_the_new_pods() {
    let f = Fleet::start(&[builtin_agent()], &[]);
    let m = f.manifests(&ds("agent", "agent:2", ONE, NATIVE));

    let sampler = Sampler::start(&f.api, "agent");
    let out = f.apply(&m, &[]);
    let worst = sampler.stop();
    assert_exit(&out, 0, "native mode converges");
    assert!(worst <= 1, "never two nodes unavailable, saw {worst}");
    f.api.converged("agent", "agent:2").unwrap();
    assert_eq!(
        f.controllers("agent"),
        BTreeSet::from(["DaemonSet".to_string()]),
        "the built-in controller owns the new pods"
    );
    assert_eq!(f.api.status_of(&Fleet::daemonset_path("agent")), Some(200));
}

#[test]
fn a_canary_pause_holds_in_native_mode() {
    let f = Fleet::start(&[builtin_agent()], &[]);
    let canary = format!("{NATIVE}, daemonsync.io/canary: '1', daemonsync.io/canary-pause: manual");
    let m = f.manifests(&ds("agent", "agent:2", ONE, &canary));

    let out = f.apply(&m, &[]);
    assert_exit(&out, 5, "apply waits at the canary's manual pause");
    // The built-in controller replaces no other pod while the rollout waits.
    std::thread::sleep(Duration::from_secs(2));
    let pods = f.live_pods("agent");
    let on_new: Vec<&str> = pods
        .iter()
        .filter(|p| image_of(p) == "agent:2")
        .map(name)
        .collect();
    assert_eq!(on_new.len(), 1, "only the canary runs agent:2: {on_new:?}");
    assert_eq!(pods.len(), NODES);
    assert_eq!(
        f.controllers("agent"),
        BTreeSet::from(["DaemonSet".to_string()])
    );
}

#[test]
fn a_privileged_daemonset_in_a_baseline_namespace_halts_alone() {
    let f = Fleet::start(&[], &[]);
    let privileged = ds_in(
        "secure",
        "probe",
        "probe:1",
        ONE,
        "",
        ", securityContext: {privileged: true}",
    );
    let m = f.manifests(&format!(
        "{privileged}---\n{}",
        ds("logs", "logs:1", ONE, "")
    ));

    let plan = f.plan(&m, &["-o", "json"]);
    assert_exit(&plan, 2, "plan shows changes");
    assert!(
        risks(&plan, "probe").contains(&"pod-security".to_string()),
        "{}",
        both(&plan)
    );

    let out = f.apply(&m, &[]);
    assert_exit(&out, 3, "apply halts on the refused pods");
    let all = both(&out);
    assert!(
        all.contains("secure/probe") && all.contains("violates PodSecurity \"baseline:latest\""),
        "{all}"
    );
    f.api.converged("logs", "logs:1").unwrap();
    let probes = f
        .api
        .items("/api/v1/namespaces/secure/pods?labelSelector=app%3Dprobe");
    assert!(probes.is_empty(), "no probe pod was admitted: {probes:?}");
}

#[test]
fn owned_pods_carry_the_autoscaler_annotation_and_a_pod_template_stands_beside_the_record() {
    let f = Fleet::start(&[], &[]);
    let m = f.manifests(&ds("logs", "logs:1", ONE, ""));
    assert_exit(&f.apply(&m, &[]), 0, "apply converges");
    let pods = f.live_pods("logs");
    assert_eq!(pods.len(), NODES);
    for p in &pods {
        assert_eq!(
            p["metadata"]["annotations"][AUTOSCALER],
            "true",
            "{}",
            name(p)
        );
        assert_eq!(controller_kind(p), RECORD_KIND);
    }
    let template = f
        .get(&format!("/api/v1/namespaces/{NS}/podtemplates/logs"))
        .expect("a PodTemplate named after the DaemonSet");
    assert_eq!(template["metadata"]["labels"][AUTOSCALER], "true");
    assert_eq!(
        template["template"]["spec"]["containers"][0]["image"],
        "logs:1"
    );
}

//! kubectl against a `daemonsync sim serve` child process, as a kubectl user meets a real
//! cluster: typed creates, the built-in DaemonSet controller (revisions, rolling updates within
//! `maxUnavailable`, OnDelete, replacing a deleted pod), drains against a
//! PodDisruptionBudget, Pod Security admission, the scheduler's FailedScheduling, the node
//! lifecycle controller's taints, the reported version and a denying admission webhook. Each
//! test asserts what kubectl prints; every wait is bounded. Skipped, with a reason, without
//! kubectl.

use crate::serve_support::{Kubectl, ServeProcess, header, kubectl_available, row, sim_file};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Four Linux workers and a tainted control-plane node, short kubelet latencies, and a `demo`
/// namespace.
const FLEET: &str = "seed: 7
kubelet: {startLatency: {fixed: 200ms}, terminationGrace: 300ms}
nodes:
  - name: 'n-{i}'
    count: 4
    labels: {kubernetes.io/os: linux}
  - name: cp-1
    labels: {node-role.kubernetes.io/control-plane: ''}
    taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
";

const WORKERS: [&str; 4] = ["n-1", "n-2", "n-3", "n-4"];

/// A server on its own sim file, with a kubectl cache of its own.
struct Cluster {
    server: ServeProcess,
    cache: PathBuf,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Serves `sim` (plus `builtin` DaemonSets, written under `builtin/`) with `extra` flags,
    /// logging every request to `requests.log` beside the sim file.
    fn start(sim: &str, builtin: &[String], extra: &[&str]) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut text = sim.to_string();
        if !builtin.is_empty() {
            std::fs::create_dir_all(dir.path().join("builtin")).unwrap();
            std::fs::write(dir.path().join("builtin/ds.yaml"), builtin.join("---\n")).unwrap();
            // Relative to the sim file, not to where the server runs.
            text.push_str("builtin:\n  - manifest: builtin/\n");
        }
        std::fs::write(sim_file(dir.path()), text).unwrap();
        let log = dir.path().join("requests.log").display().to_string();
        let mut flags = vec!["--request-log", log.as_str()];
        flags.extend_from_slice(extra);
        let server = ServeProcess::start(dir.path(), &flags);
        let cache = dir.path().join("kube-cache");
        Cluster { server, cache, dir }
    }

    fn kubectl(&self) -> Kubectl<'_> {
        Kubectl {
            kubeconfig: &self.server.kubeconfig,
            cache: &self.cache,
        }
    }

    /// Writes a manifest next to the sim file and returns its path.
    fn manifest(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// An `apps/v1` DaemonSet in `demo` whose pods run `NAME:1`, with `strategy` as its
/// `updateStrategy`.
fn daemonset(name: &str, strategy: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}, namespace: demo}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  updateStrategy: {strategy}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: {name}, image: '{name}:1'}}]\n"
    )
}

/// Polls `probe` every 100 ms until it gives a value, for at most `limit`; the failure shows
/// what it saw last.
fn within<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match probe() {
            Ok(v) => return v,
            Err(seen) if Instant::now() >= deadline => {
                panic!("{what} within {limit:?}; last seen:\n{seen}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// `kubectl get pods` of `selector` in `namespace` as (name, node, ready, hash, generation).
fn pods(k: &Kubectl, namespace: &str, selector: &str) -> Vec<[String; 5]> {
    let out = k.ok(&[
        "get",
        "pods",
        "-n",
        namespace,
        "-l",
        selector,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.conditions[?(@.type==\"Ready\")].status} {.metadata.labels.controller-revision-hash} {.metadata.labels.pod-template-generation}{\"\\n\"}{end}",
    ]);
    out.lines()
        .map(|l| {
            let w: Vec<String> = l.split(' ').map(String::from).collect();
            assert_eq!(w.len(), 5, "{l:?}");
            [
                w[0].clone(),
                w[1].clone(),
                w[2].clone(),
                w[3].clone(),
                w[4].clone(),
            ]
        })
        .collect()
}

/// `kubectl get -w -o json --output-watch-events` running, its events parsed as they come.
struct Watch {
    child: Child,
    events: Receiver<Value>,
}

impl Watch {
    fn start(k: &Kubectl, args: &[&str]) -> Watch {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-w", "-o", "json", "--output-watch-events"]);
        let mut child = k
            .cmd(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, events) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for v in serde_json::Deserializer::from_reader(stdout).into_iter::<Value>() {
                let Ok(v) = v else { break };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Watch { child, events }
    }

    /// The next event, waiting at most until `deadline`.
    fn next(&self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.events.recv_timeout(left).ok()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pods a watch has shown, by name: what is left after its events so far.
#[derive(Default)]
struct PodsSeen(BTreeMap<String, Value>);

impl PodsSeen {
    fn apply(&mut self, event: &Value) {
        let name = event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if event["type"] == "DELETED" {
            self.0.remove(&name);
        } else {
            self.0.insert(name, event["object"].clone());
        }
    }

    /// Available: Ready (no `minReadySeconds`) and not being deleted.
    fn available(pod: &Value) -> bool {
        pod["metadata"]["deletionTimestamp"].is_null()
            && pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
    }

    /// The workers without an available pod.
    fn unavailable_nodes(&self) -> Vec<&'static str> {
        let covered: BTreeSet<&str> = self
            .0
            .values()
            .filter(|p| Self::available(p))
            .filter_map(|p| p["spec"]["nodeName"].as_str())
            .collect();
        WORKERS
            .iter()
            .copied()
            .filter(|n| !covered.contains(n))
            .collect()
    }

    /// Every worker runs exactly one pod, available, of template generation `generation`.
    fn all_at(&self, generation: &str) -> bool {
        self.0.len() == WORKERS.len()
            && self.unavailable_nodes().is_empty()
            && self.0.values().all(|p| {
                p["metadata"]["labels"]["pod-template-generation"] == generation
                    && Self::available(p)
            })
    }
}

#[test]
fn typed_creates_of_namespaces_configmaps_secrets_and_serviceaccounts_show_in_kubectl_get() {
    if !kubectl_available() {
        return;
    }
    let c = Cluster::start(FLEET, &[], &[]);
    let k = c.kubectl();

    // kubectl sends these typed creates as protobuf (its -v=8 log shows the request headers).
    let create = |args: &[&str], printed: &str| {
        let mut all = args.to_vec();
        all.push("-v=8");
        let out = k.run(&all);
        let (stdout, log) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "kubectl {args:?}: {stdout}{log}");
        assert_eq!(stdout, printed);
        // The request's headers follow its POST line; the server answers in JSON.
        let post = log
            .split_once("] POST http://127.0.0.1:")
            .unwrap_or_else(|| panic!("kubectl {args:?} logs its POST:\n{log}"))
            .1;
        let request = post.split("Response Status").next().unwrap_or_default();
        assert!(
            request.contains("Content-Type: application/vnd.kubernetes.protobuf"),
            "kubectl {args:?} sends protobuf:\n{log}"
        );
    };
    create(
        &["create", "namespace", "other"],
        "namespace/other created\n",
    );
    create(
        &[
            "create",
            "configmap",
            "cfg",
            "-n",
            "other",
            "--from-literal=a=1",
            "--from-literal=b=two",
        ],
        "configmap/cfg created\n",
    );
    create(
        &[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "other",
            "--from-literal=password=hunter2",
        ],
        "secret/creds created\n",
    );
    create(
        &["create", "serviceaccount", "robot", "-n", "other"],
        "serviceaccount/robot created\n",
    );

    let namespaces = k.ok(&["get", "namespaces"]);
    assert_eq!(header(&namespaces), ["NAME", "STATUS", "AGE"]);
    assert_eq!(row(&namespaces, "other")[..2], ["other", "Active"]);
    assert_eq!(
        k.ok(&[
            "get",
            "namespace",
            "other",
            "-o",
            "jsonpath={.metadata.labels.kubernetes\\.io/metadata\\.name}"
        ]),
        "other"
    );

    let configmaps = k.ok(&["get", "configmaps", "-n", "other"]);
    assert_eq!(header(&configmaps), ["NAME", "DATA", "AGE"]);
    assert_eq!(row(&configmaps, "cfg")[..2], ["cfg", "2"]);
    assert_eq!(
        k.ok(&[
            "get",
            "configmap",
            "cfg",
            "-n",
            "other",
            "-o",
            "jsonpath={.data.a} {.data.b}"
        ]),
        "1 two"
    );

    let secrets = k.ok(&["get", "secrets", "-n", "other"]);
    assert_eq!(header(&secrets), ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(row(&secrets, "creds")[..3], ["creds", "Opaque", "1"]);
    assert_eq!(
        k.ok(&[
            "get",
            "secret",
            "creds",
            "-n",
            "other",
            "-o",
            "jsonpath={.data.password}"
        ]),
        "aHVudGVyMg==",
        "base64 of hunter2"
    );

    let accounts = k.ok(&["get", "serviceaccounts", "-n", "other"]);
    assert_eq!(header(&accounts), ["NAME", "SECRETS", "AGE"]);
    assert_eq!(row(&accounts, "robot")[..2], ["robot", "0"]);

    // A second create of the same name is refused as the API server refuses it.
    let again = k.fails(&["create", "configmap", "cfg", "-n", "other"]);
    assert_eq!(
        again,
        "error: failed to create configmap: configmaps \"cfg\" already exists\n"
    );
}

#[test]
fn a_builtin_daemonset_runs_on_every_node_it_tolerates_and_rolls_out_within_max_unavailable() {
    if !kubectl_available() {
        return;
    }
    let logger = daemonset(
        "logger",
        "{type: RollingUpdate, rollingUpdate: {maxUnavailable: 2}}",
    );
    let c = Cluster::start(
        &format!("{FLEET}namespaces: [{{name: demo}}]\n"),
        &[logger],
        &[],
    );
    let k = c.kubectl();

    // kubectl get ds: one pod on each worker; cp-1's NoSchedule taint is not tolerated.
    let ds = k.ok(&["get", "ds", "-n", "demo"]);
    assert_eq!(
        header(&ds),
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE SELECTOR",
            "AGE"
        ]
    );
    assert_eq!(
        row(&ds, "logger")[..7],
        ["logger", "4", "4", "4", "4", "4", "<none>"]
    );
    let before = pods(&k, "demo", "app=logger");
    let nodes: Vec<&str> = before.iter().map(|p| p[1].as_str()).collect();
    let mut sorted = nodes.clone();
    sorted.sort();
    assert_eq!(sorted, WORKERS, "one pod per worker, none on cp-1");

    // Its ControllerRevision, NAME-HASH, owned by the DaemonSet; the pods carry the hash.
    let revisions = k.ok(&["get", "controllerrevisions", "-n", "demo"]);
    assert_eq!(
        header(&revisions),
        ["NAME", "CONTROLLER", "REVISION", "AGE"]
    );
    assert_eq!(revisions.lines().count(), 2, "{revisions}");
    let first = revisions.lines().nth(1).unwrap();
    let words: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(words[1..3], ["daemonset.apps/logger", "1"], "{first}");
    let old_hash = words[0]
        .strip_prefix("logger-")
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    let ds_uid = k.ok(&[
        "get",
        "ds",
        "logger",
        "-n",
        "demo",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert_eq!(
        k.ok(&[
            "get",
            "controllerrevision",
            words[0],
            "-n",
            "demo",
            "-o",
            "jsonpath={.metadata.ownerReferences[0].uid} {.metadata.ownerReferences[0].controller}"
        ]),
        format!("{ds_uid} true")
    );
    for p in &before {
        assert_eq!(p[2..], ["True", old_hash.as_str(), "1"], "{p:?}");
    }
    let labelled = k.ok(&[
        "get",
        "pods",
        "-n",
        "demo",
        "-L",
        "controller-revision-hash,pod-template-generation",
    ]);
    assert_eq!(
        header(&labelled)[4..],
        ["AGE", "CONTROLLER-REVISION-HASH", "POD-TEMPLATE-GENERATION"]
    );
    assert_eq!(row(&labelled, &before[0][0])[5..], [old_hash.as_str(), "1"]);

    // set image, watched from before it: every change of every pod, in order.
    let watch = Watch::start(&k, &["pods", "-n", "demo", "-l", "app=logger"]);
    let mut seen = PodsSeen::default();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.0.len() < WORKERS.len() {
        let event = watch
            .next(deadline)
            .expect("the watch lists the four pods within 30 s");
        seen.apply(&event);
    }
    assert!(seen.all_at("1"));
    assert_eq!(
        k.ok(&["set", "image", "ds/logger", "-n", "demo", "logger=logger:2"]),
        "daemonset.apps/logger image updated\n"
    );
    let status = k.ok(&[
        "rollout",
        "status",
        "ds/logger",
        "-n",
        "demo",
        "--timeout=30s",
    ]);
    let mut lines: Vec<&str> = status.lines().collect();
    assert_eq!(
        lines.pop(),
        Some("daemon set \"logger\" successfully rolled out"),
        "{status}"
    );
    for l in lines {
        assert!(
            l.starts_with("Waiting for daemon set \"logger\" rollout to finish: "),
            "{status}"
        );
    }
    let mut worst: Vec<&str> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.all_at("2") {
        let Some(event) = watch.next(deadline) else {
            panic!(
                "the watch shows every worker on the new template within 10 s: {:?}",
                seen.0.keys()
            );
        };
        seen.apply(&event);
        let down = seen.unavailable_nodes();
        if down.len() > worst.len() {
            worst = down;
        }
    }
    drop(watch);
    // Never more than maxUnavailable (2) workers without an available pod, and the
    // controller did use its budget: two at once.
    assert_eq!(worst.len(), 2, "workers down at once at worst: {worst:?}");

    let after = pods(&k, "demo", "app=logger");
    let new_hash = after[0][3].clone();
    assert_ne!(new_hash, old_hash);
    for p in &after {
        assert_eq!(p[2..], ["True", new_hash.as_str(), "2"], "{p:?}");
    }
    let ds = k.ok(&["get", "ds", "-n", "demo"]);
    assert_eq!(row(&ds, "logger")[..6], ["logger", "4", "4", "4", "4", "4"]);
    let revisions = k.ok(&["get", "controllerrevisions", "-n", "demo"]);
    assert_eq!(
        row(&revisions, &format!("logger-{new_hash}"))[1..3],
        ["daemonset.apps/logger", "2"]
    );
    assert_eq!(
        row(&revisions, &format!("logger-{old_hash}"))[1..3],
        ["daemonset.apps/logger", "1"]
    );
    let history = k.ok(&["rollout", "history", "ds/logger", "-n", "demo"]);
    let lines: Vec<Vec<&str>> = history
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        [
            vec!["daemonset.apps/logger"],
            vec!["REVISION", "CHANGE-CAUSE"],
            vec!["1", "<none>"],
            vec!["2", "<none>"],
            vec![],
        ],
        "{history}"
    );
    let events = k.ok(&[
        "get",
        "events",
        "-n",
        "demo",
        "--field-selector",
        "reason=SuccessfulDelete",
    ]);
    assert_eq!(
        events.lines().count(),
        5,
        "four old pods deleted:\n{events}"
    );
}

#[test]
fn on_delete_changes_no_pod_until_one_is_deleted_and_its_replacement_is_new() {
    if !kubectl_available() {
        return;
    }
    let c = Cluster::start(
        &format!("{FLEET}namespaces: [{{name: demo}}]\n"),
        &[daemonset("storage", "{type: OnDelete}")],
        &[],
    );
    let k = c.kubectl();
    let before = pods(&k, "demo", "app=storage");
    assert_eq!(before.len(), 4);
    k.ok(&[
        "set",
        "image",
        "ds/storage",
        "-n",
        "demo",
        "storage=storage:2",
    ]);
    within(
        "the controller to observe the new template",
        Duration::from_secs(10),
        || {
            let ds = k.ok(&[
                "get",
                "ds",
                "storage",
                "-n",
                "demo",
                "-o",
                "jsonpath={.status.observedGeneration} {.status.updatedNumberScheduled}",
            ]);
            (ds == "2 ").then_some(()).ok_or(ds)
        },
    );
    // Three kubelet steps (start 200 ms, termination 300 ms) pass: no pod changes.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(pods(&k, "demo", "app=storage"), before);
    assert_eq!(
        row(&k.ok(&["get", "ds", "-n", "demo"]), "storage")[..6],
        ["storage", "4", "4", "4", "0", "4"]
    );
    // kubectl's own answer for OnDelete.
    let status = k.fails(&["rollout", "status", "ds/storage", "-n", "demo"]);
    assert_eq!(
        status,
        "error: rollout status is only available for RollingUpdate strategy type\n"
    );

    let [victim, node, _, old_hash, _] = before
        .iter()
        .find(|p| p[1] == "n-2")
        .cloned()
        .expect("a storage pod on n-2");
    assert_eq!(
        k.ok(&["delete", "pod", "-n", "demo", &victim]),
        format!("pod \"{victim}\" deleted\n")
    );
    let replacement = within("a replacement on n-2", Duration::from_secs(10), || {
        let now = pods(&k, "demo", "app=storage");
        now.iter()
            .find(|p| p[1] == node && p[0] != victim && p[2] == "True")
            .cloned()
            .ok_or_else(|| format!("{now:?}"))
    });
    assert_ne!(
        replacement[3], old_hash,
        "the replacement runs the new template"
    );
    assert_eq!(replacement[4], "2");
    let new_hash = replacement[3].clone();
    let revisions = k.ok(&["get", "controllerrevisions", "-n", "demo"]);
    assert_eq!(
        row(&revisions, &format!("storage-{new_hash}"))[1..3],
        ["daemonset.apps/storage", "2"]
    );
    let others: Vec<[String; 5]> = pods(&k, "demo", "app=storage")
        .into_iter()
        .filter(|p| p[1] != node)
        .collect();
    let unchanged: Vec<[String; 5]> = before.iter().filter(|p| p[1] != node).cloned().collect();
    assert_eq!(others, unchanged, "the other pods stay on the old template");
    within("UP-TO-DATE 1", Duration::from_secs(10), || {
        let ds = k.ok(&["get", "ds", "-n", "demo"]);
        let r: Vec<String> = row(&ds, "storage").iter().map(|s| s.to_string()).collect();
        (r[..6] == ["storage", "4", "4", "4", "1", "4"])
            .then_some(())
            .ok_or(ds)
    });
}

#[test]
fn a_deleted_daemon_pod_is_replaced_on_its_node_within_a_kubelet_step() {
    if !kubectl_available() {
        return;
    }
    let c = Cluster::start(
        &format!("{FLEET}namespaces: [{{name: demo}}]\n"),
        &[daemonset("logger", "{type: RollingUpdate}")],
        &[],
    );
    let k = c.kubectl();
    let before = pods(&k, "demo", "app=logger");
    let victim = before
        .iter()
        .find(|p| p[1] == "n-3")
        .expect("a logger pod on n-3")[0]
        .clone();
    // Watched from before the deletion: the server's own times of each step.
    let watch = Watch::start(&k, &["pods", "-n", "demo", "-l", "app=logger"]);
    let mut seen = PodsSeen::default();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.0.len() < WORKERS.len() {
        seen.apply(&watch.next(deadline).expect("the watch lists the pods"));
    }
    let requested = Instant::now();
    k.ok(&["delete", "pod", "-n", "demo", &victim, "--wait=false"]);
    let time = |v: &Value| -> jiff::Timestamp {
        v.as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("a timestamp: {v}"))
    };
    let (mut deleted_at, mut ready, mut seen_ready) = (None, None, None);
    let deadline = Instant::now() + Duration::from_secs(10);
    while ready.is_none() {
        let event = watch
            .next(deadline)
            .expect("a ready replacement on n-3 within 10 s");
        seen.apply(&event);
        let pod = &event["object"];
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        if name == victim
            && deleted_at.is_none()
            && pod["metadata"]["deletionTimestamp"].is_string()
        {
            // Upstream sets deletionTimestamp to the request's time plus the grace period.
            let grace = pod["metadata"]["deletionGracePeriodSeconds"]
                .as_i64()
                .unwrap_or(0);
            deleted_at = Some(
                time(&pod["metadata"]["deletionTimestamp"])
                    - jiff::SignedDuration::from_secs(grace),
            );
        }
        if name != victim && pod["spec"]["nodeName"] == "n-3" && PodsSeen::available(pod) {
            let at = pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Ready")
                .map(|c| time(&c["lastTransitionTime"]))
                .unwrap();
            ready = Some((
                name.to_string(),
                time(&pod["metadata"]["creationTimestamp"]),
                at,
            ));
            seen_ready = Some(requested.elapsed());
        }
    }
    drop(watch);
    let deleted_at = deleted_at.expect("the watch showed the pod terminating");
    let (name, created_at, ready_at) = ready.unwrap();
    // Termination (300 ms), then the replacement starts (200 ms): one kubelet step. The
    // server's times are whole seconds, as upstream's: the replacement is created and ready
    // within the second after the deletion's, and not before the step took its time.
    let created_after = created_at.duration_since(deleted_at);
    let ready_after = ready_at.duration_since(deleted_at);
    assert!(
        jiff::SignedDuration::ZERO <= created_after
            && created_after <= ready_after
            && ready_after <= jiff::SignedDuration::from_secs(1),
        "created {created_after:#} and ready {ready_after:#} after the deletion"
    );
    let seen_ready = seen_ready.unwrap();
    assert!(
        seen_ready >= Duration::from_millis(500),
        "ready {seen_ready:?} after the delete request"
    );
    let replacement = pods(&k, "demo", "app=logger")
        .into_iter()
        .find(|p| p[0] == name)
        .expect("the replacement is listed");
    assert!(replacement[0].starts_with("logger-"), "{replacement:?}");
    assert_eq!(replacement[3..], before[0][3..], "same template");
    let wide = k.ok(&["get", "pods", "-n", "demo", "-o", "wide"]);
    let r = row(&wide, &replacement[0]);
    assert_eq!((r[1], r[2], r[6]), ("1/1", "Running", "n-3"), "{wide}");
    assert!(!wide.contains(&victim), "{wide}");
    let events = k.ok(&["get", "events", "-n", "demo"]);
    let created = format!("Created pod: {}", replacement[0]);
    let line = events
        .lines()
        .find(|l| l.ends_with(&created))
        .unwrap_or_else(|| panic!("{events}"));
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>()[1..4],
        ["Normal", "SuccessfulCreate", "daemonset/logger"]
    );
}

#[test]
fn drain_is_refused_by_a_disruption_budget_and_succeeds_without_one() {
    if !kubectl_available() {
        return;
    }
    let c = Cluster::start(
        &format!("{FLEET}namespaces: [{{name: demo}}]\n"),
        &[daemonset("logger", "{type: RollingUpdate}")],
        &[],
    );
    let k = c.kubectl();
    k.ok(&[
        "run",
        "web",
        "-n",
        "demo",
        "--image=nginx",
        "--overrides={\"spec\":{\"nodeName\":\"n-2\"}}",
    ]);
    within("web running on n-2", Duration::from_secs(10), || {
        let p = pods(&k, "demo", "run=web");
        (p.len() == 1 && p[0][1] == "n-2" && p[0][2] == "True")
            .then_some(())
            .ok_or_else(|| format!("{p:?}"))
    });
    assert_eq!(
        k.ok(&[
            "create",
            "pdb",
            "webpdb",
            "-n",
            "demo",
            "--selector=run=web",
            "--min-available=1"
        ]),
        "poddisruptionbudget.policy/webpdb created\n"
    );
    within("the budget observed", Duration::from_secs(10), || {
        let s = k.ok(&[
            "get",
            "pdb",
            "webpdb",
            "-n",
            "demo",
            "-o",
            "jsonpath={.status.currentHealthy}/{.status.desiredHealthy}",
        ]);
        (s == "1/1").then_some(()).ok_or(s)
    });
    let budgets = k.ok(&["get", "pdb", "-n", "demo"]);
    assert_eq!(
        header(&budgets),
        [
            "NAME",
            "MIN AVAILABLE",
            "MAX UNAVAILABLE",
            "ALLOWED DISRUPTIONS",
            "AGE"
        ]
    );
    assert_eq!(row(&budgets, "webpdb")[..4], ["webpdb", "1", "N/A", "0"]);
    let logger_on_n2 = pods(&k, "demo", "app=logger")
        .into_iter()
        .find(|p| p[1] == "n-2")
        .expect("a logger pod on n-2")[0]
        .clone();

    // Refused: the budget allows no disruption; kubectl retries until its timeout.
    let refused = k.run(&[
        "drain",
        "n-2",
        "--ignore-daemonsets",
        "--force",
        "--timeout=2s",
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr),
    );
    assert!(!refused.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("node/n-2 cordoned\nevicting pod demo/web\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "ignoring DaemonSet-managed Pods: demo/{logger_on_n2}"
        )) && stderr.contains("deleting Pods that declare no controller: demo/web"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error when evicting pods/\"web\" -n \"demo\" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: unable to drain node \"n-2\" due to error: error when evicting pods/\"web\" -n \"demo\": global timeout reached: 2s"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(c.path("requests.log")).unwrap();
    let eviction = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["subresource"] == "eviction")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(
        (&eviction["verb"], &eviction["name"], &eviction["code"]),
        (&"create".into(), &"web".into(), &429.into()),
        "the API server answers a forbidden eviction 429"
    );
    let nodes = k.ok(&["get", "nodes"]);
    assert_eq!(row(&nodes, "n-2")[1], "Ready,SchedulingDisabled");
    assert_eq!(row(&nodes, "n-1")[1], "Ready");
    assert_eq!(pods(&k, "demo", "run=web")[0][2], "True", "web still runs");

    // Without the budget the same drain succeeds; the DaemonSet pod stays.
    k.ok(&["delete", "pdb", "webpdb", "-n", "demo"]);
    let drained = k.run(&[
        "drain",
        "n-2",
        "--ignore-daemonsets",
        "--force",
        "--timeout=20s",
    ]);
    let stdout = String::from_utf8_lossy(&drained.stdout);
    assert!(
        drained.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&drained.stderr)
    );
    assert_eq!(
        stdout,
        "node/n-2 already cordoned\nevicting pod demo/web\npod/web evicted\nnode/n-2 drained\n"
    );
    assert!(pods(&k, "demo", "run=web").is_empty());
    let loggers = pods(&k, "demo", "app=logger");
    assert!(
        loggers
            .iter()
            .any(|p| p[0] == logger_on_n2 && p[2] == "True"),
        "{loggers:?}"
    );

    // Without --ignore-daemonsets kubectl refuses before evicting anything.
    let logger_on_n3 = loggers
        .iter()
        .find(|p| p[1] == "n-3")
        .expect("a logger pod on n-3")[0]
        .clone();
    let refused = k.fails(&["drain", "n-3", "--timeout=5s"]);
    assert!(
        refused.starts_with(&format!("error: unable to drain node \"n-3\" due to error: cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): demo/{logger_on_n3}, continuing command...\n")),
        "{refused}"
    );

    assert_eq!(k.ok(&["uncordon", "n-2"]), "node/n-2 uncordoned\n");
    let nodes = k.ok(&["get", "nodes"]);
    assert_eq!(row(&nodes, "n-2")[1], "Ready");
    assert_eq!(row(&nodes, "n-3")[1], "Ready,SchedulingDisabled");
    assert_eq!(
        k.ok(&[
            "get",
            "node",
            "n-2",
            "-o",
            "jsonpath={.spec.taints}{.spec.unschedulable}"
        ]),
        ""
    );
    assert_eq!(
        k.ok(&[
            "get",
            "node",
            "n-3",
            "-o",
            "jsonpath={range .spec.taints[*]}{.key}:{.effect}{end} {.spec.unschedulable}"
        ]),
        "node.kubernetes.io/unschedulable:NoSchedule true"
    );
}

#[test]
fn pod_security_forbids_privileged_pods_and_the_daemonset_controller_reports_failed_create() {
    if !kubectl_available() {
        return;
    }
    let c = Cluster::start(
        &format!(
            "{FLEET}namespaces:\n  - {{name: secure, labels: {{pod-security.kubernetes.io/enforce: baseline}}}}\n"
        ),
        &[],
        &[],
    );
    let k = c.kubectl();
    let privileged = c.manifest(
        "priv.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: priv, namespace: secure}\nspec:\n  hostNetwork: true\n  containers:\n  - name: c\n    image: busybox\n    securityContext: {privileged: true}\n",
    );
    let refused = k.fails(&["apply", "-f", &privileged]);
    assert_eq!(
        refused,
        format!(
            "Error from server (Forbidden): error when creating \"{privileged}\": pods \"priv\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true), privileged (container \"c\" must not set securityContext.privileged=true)\n"
        )
    );
    // Baseline admits an ordinary pod.
    assert_eq!(
        k.ok(&["run", "plain", "-n", "secure", "--image=busybox"]),
        "pod/plain created\n"
    );

    let ds = c.manifest(
        "ds.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: node-exporter, namespace: secure}\nspec:\n  selector: {matchLabels: {app: node-exporter}}\n  template:\n    metadata: {labels: {app: node-exporter}}\n    spec:\n      hostNetwork: true\n      containers:\n      - name: exporter\n        image: 'exporter:1'\n        securityContext: {privileged: true}\n",
    );
    assert_eq!(
        k.ok(&["apply", "-f", &ds]),
        "daemonset.apps/node-exporter created\n"
    );
    within("DESIRED 4 CURRENT 0", Duration::from_secs(10), || {
        let out = k.ok(&["get", "ds", "-n", "secure"]);
        let r: Vec<String> = row(&out, "node-exporter")
            .iter()
            .map(|s| s.to_string())
            .collect();
        (r[..6] == ["node-exporter", "4", "0", "0", "0", "0"])
            .then_some(())
            .ok_or(out)
    });
    let events = within("a FailedCreate event", Duration::from_secs(10), || {
        let out = k.ok(&["get", "events", "-n", "secure"]);
        out.contains("FailedCreate").then(|| out.clone()).ok_or(out)
    });
    assert_eq!(
        header(&events),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    let failed: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("FailedCreate"))
        .collect();
    for line in &failed {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            words[1..4],
            ["Warning", "FailedCreate", "daemonset/node-exporter"],
            "{line}"
        );
        let message = line.split_once("daemonset/node-exporter").unwrap().1.trim();
        // The controller keeps retrying; after ten refusals naming ten pods within ten
        // minutes, client-go's correlator combines them into one event.
        let message = message
            .strip_prefix("(combined from similar events): ")
            .unwrap_or(message);
        let name = message
            .strip_prefix("Error creating: pods \"node-exporter-")
            .and_then(|m| m.strip_suffix("\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true), privileged (container \"exporter\" must not set securityContext.privileged=true)"))
            .unwrap_or_else(|| panic!("{message}"));
        assert_eq!(name.len(), 5, "a generated name suffix: {message}");
    }
    let pods = k.ok(&["get", "pods", "-n", "secure", "-o", "name"]);
    assert_eq!(pods, "pod/plain\n", "no exporter pod was created");
    let described = k.ok(&["describe", "ds", "node-exporter", "-n", "secure"]);
    assert!(
        described.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() > 5 && w[..2] == ["Warning", "FailedCreate"] && w[3] == "daemonset-controller"
        }),
        "{described}"
    );
    assert!(
        described.contains(
            "Desired Number of Nodes Scheduled: 4\nCurrent Number of Nodes Scheduled: 0\n"
        ),
        "{described}"
    );
}

#[test]
fn a_pod_that_fits_no_node_stays_pending_with_the_schedulers_reason() {
    if !kubectl_available() {
        return;
    }
    let c = Cluster::start(
        "seed: 7\nkubelet: {startLatency: {fixed: 200ms}, terminationGrace: 300ms}\nnodes:\n  - name: 'n-{i}'\n    count: 2\n    load: {cpu: 3500m}\nnamespaces: [{name: demo}]\n",
        &[],
        &[],
    );
    let k = c.kubectl();
    let pod = |name: &str, cpu: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: demo}}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    resources: {{requests: {{cpu: '{cpu}'}}}}\n"
        )
    };
    let big = c.manifest("big.yaml", &pod("big", "1"));
    let small = c.manifest("small.yaml", &pod("small", "400m"));
    assert_eq!(k.ok(&["apply", "-f", &big]), "pod/big created\n");
    assert_eq!(k.ok(&["apply", "-f", &small]), "pod/small created\n");
    let reason = "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
    within(
        "small running, big pending",
        Duration::from_secs(10),
        || {
            let out = k.ok(&["get", "pods", "-n", "demo"]);
            let (b, s) = (row(&out, "big"), row(&out, "small"));
            (b[1..3] == ["0/1", "Pending"] && s[1..3] == ["1/1", "Running"])
                .then_some(())
                .ok_or_else(|| out.clone())
        },
    );
    // The load leaves 500m on each node: small fits, big fits nowhere.
    assert_eq!(
        k.ok(&["get", "pod", "big", "-n", "demo", "-o", "jsonpath={.spec.nodeName}|{.status.conditions[0].type} {.status.conditions[0].status} {.status.conditions[0].reason}|{.status.conditions[0].message}"]),
        format!("|PodScheduled False Unschedulable|{reason}")
    );
    let events = k.ok(&[
        "get",
        "events",
        "-n",
        "demo",
        "--field-selector",
        "involvedObject.name=big",
    ]);
    let line = events
        .lines()
        .find(|l| l.contains("FailedScheduling"))
        .unwrap_or_else(|| panic!("{events}"));
    let (front, message) = line.split_once("pod/big").unwrap();
    assert_eq!(
        front.split_whitespace().collect::<Vec<_>>()[1..],
        ["Warning", "FailedScheduling"]
    );
    assert_eq!(message.trim(), reason);

    let described = k.ok(&["describe", "pod", "big", "-n", "demo"]);
    let lines: Vec<Vec<&str>> = described
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(lines.contains(&vec!["Status:", "Pending"]), "{described}");
    assert!(lines.contains(&vec!["Node:", "<none>"]), "{described}");
    assert!(
        lines.contains(&vec!["PodScheduled", "False"]),
        "{described}"
    );
    assert!(
        lines.contains(&vec!["QoS", "Class:", "Burstable"]),
        "{described}"
    );
    let event = described
        .lines()
        .find(|l| l.contains("FailedScheduling"))
        .unwrap_or_else(|| panic!("{described}"));
    let w: Vec<&str> = event.split_whitespace().collect();
    assert_eq!(
        (w[0], w[1], w[3]),
        ("Warning", "FailedScheduling", "default-scheduler")
    );
    assert!(
        event.ends_with(&format!("default-scheduler  {reason}")),
        "{event}"
    );
}

#[test]
fn a_not_ready_node_carries_the_lifecycle_taints_until_it_is_ready_again() {
    if !kubectl_available() {
        return;
    }
    let c = Cluster::start(
        "seed: 7\nkubelet: {startLatency: {fixed: 200ms}, terminationGrace: 300ms}\nnodes:\n  - name: 'n-{i}'\n    count: 2\n  - name: down-1\n    ready: false\n  - name: lost-1\n    ready: Unknown\nchurn:\n  - {at: 4s, ready: {node: down-1, ready: true}}\n  - {at: 4s, ready: {node: n-2, ready: false}}\n",
        &[],
        &[],
    );
    let k = c.kubectl();
    let taints = || -> BTreeMap<String, String> {
        k.ok(&[
            "get",
            "nodes",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={range .spec.taints[*]}{.key}:{.effect},{end}{\"\\n\"}{end}",
        ])
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
    };
    let not_ready =
        "node.kubernetes.io/not-ready:NoSchedule,node.kubernetes.io/not-ready:NoExecute,";
    let unreachable =
        "node.kubernetes.io/unreachable:NoSchedule,node.kubernetes.io/unreachable:NoExecute,";
    let at_start = taints();
    assert_eq!(
        at_start,
        BTreeMap::from([
            ("down-1".to_string(), not_ready.to_string()),
            ("lost-1".to_string(), unreachable.to_string()),
            ("n-1".to_string(), String::new()),
            ("n-2".to_string(), String::new()),
        ]),
        "taken before the churn at 4 s"
    );
    let nodes = k.ok(&["get", "nodes"]);
    assert_eq!(row(&nodes, "down-1")[1], "NotReady");
    assert_eq!(row(&nodes, "lost-1")[1], "NotReady");
    assert_eq!(
        k.ok(&[
            "get",
            "node",
            "lost-1",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"
        ]),
        "Unknown"
    );

    // At 4 s down-1 turns Ready (its taints go) and n-2 NotReady (it gets them).
    let after = within("the churn at 4 s", Duration::from_secs(15), || {
        let now = taints();
        (now["down-1"].is_empty() && now["n-2"] == not_ready)
            .then(|| now.clone())
            .ok_or_else(|| format!("{now:?}"))
    });
    assert_eq!(after["lost-1"], unreachable);
    assert_eq!(after["n-1"], "");
    let nodes = k.ok(&["get", "nodes"]);
    assert_eq!(row(&nodes, "down-1")[1], "Ready");
    assert_eq!(row(&nodes, "n-2")[1], "NotReady");
    assert_eq!(
        k.ok(&["get", "node", "down-1", "-o", "jsonpath={.spec.taints}"]),
        ""
    );
}

/// The `serverVersion` and `clientVersion` of `kubectl version -o json`, and its stderr.
fn versions(k: &Kubectl) -> (Value, Value, String) {
    let out = k.run(&["version", "-o", "json"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["serverVersion"].clone(),
        v["clientVersion"].clone(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn kubectl_version_shows_the_sim_files_version_and_1_35_0_by_default() {
    if !kubectl_available() {
        return;
    }
    // kubectl's version dispatcher (Google Cloud SDK) runs the kubectl of the server's minor.
    let pinned = Cluster::start(&format!("version: 1.31.4\n{FLEET}"), &[], &[]);
    let no_cluster = pinned.path("none.kubeconfig");
    let client_only = Kubectl {
        kubeconfig: &no_cluster,
        cache: &pinned.cache,
    }
    .ok(&["version", "--client", "-o", "json"]);
    let dispatcher = client_only.contains("-dispatcher");
    let (server, client, _) = versions(&pinned.kubectl());
    assert_eq!(
        (&server["major"], &server["minor"], &server["gitVersion"]),
        (&"1".into(), &"31".into(), &"v1.31.4".into())
    );
    if dispatcher {
        assert_eq!(client["minor"], "31", "the dispatcher runs kubectl 1.31");
    }
    let nodes = pinned.kubectl().ok(&["get", "nodes"]);
    assert_eq!(
        row(&nodes, "n-1")[1..5],
        ["Ready", "<none>", "60m", "v1.31.4"]
    );

    let default = Cluster::start(FLEET, &[], &[]);
    let (server, client, stderr) = versions(&default.kubectl());
    assert_eq!(
        (&server["major"], &server["minor"], &server["gitVersion"]),
        (&"1".into(), &"35".into(), &"v1.35.0".into())
    );
    let client_minor: i64 = client["minor"]
        .as_str()
        .unwrap_or_default()
        .trim_end_matches('+')
        .parse()
        .unwrap_or(35);
    if (35 - client_minor).abs() > 1 {
        assert!(
            stderr.contains(&format!("WARNING: version difference between client (1.{client_minor}) and server (1.35) exceeds the supported minor version skew of +/-1")),
            "{stderr}"
        );
    }
    let nodes = default.kubectl().ok(&["get", "nodes"]);
    assert_eq!(row(&nodes, "cp-1")[4], "v1.35.0");
}

#[test]
fn a_denying_admission_webhook_refuses_kubectl_run() {
    if !kubectl_available() {
        return;
    }
    let refusal = "Error from server (Forbidden): admission webhook \"deny.sim\" denied the request: no pods today\n";
    let sim = format!("{FLEET}namespaces: [{{name: demo}}]\n");
    let from_flag = Cluster::start(&sim, &[], &["--faults", "deny=create:pods:no pods today"]);
    let from_file = Cluster::start(
        &format!("{sim}admission:\n  deny: ['create:pods:no pods today']\n"),
        &[],
        &[],
    );
    for c in [&from_flag, &from_file] {
        let k = c.kubectl();
        assert_eq!(
            k.fails(&["run", "web", "-n", "demo", "--image=nginx"]),
            refusal
        );
        assert_eq!(
            k.run(&["get", "pods", "-n", "demo"]).stderr,
            b"No resources found in demo namespace.\n"
        );
        // The webhook denies pod creates only.
        assert_eq!(
            k.ok(&["create", "configmap", "cfg", "-n", "demo"]),
            "configmap/cfg created\n"
        );
    }
}

//! The fleet benchmark of the daemon (BENCHMARKS.md, "The daemon at fleet scale"): `sim serve`
//! with `--nodes` nodes and `--daemonsets` running DaemonSets, `daemonsync sync` following a
//! git repository of the same DaemonSets, and three kinds of events, one after another:
//!
//! * `pod-deleted`: a random daemon pod deleted with a grace period of 0 → the replacement
//!   pod is created (its ADDED event on a watch of pods);
//! * `node-added`: a Node created → its first pod, and all of its pods, created;
//! * `image-changed`: one DaemonSet's image changed in a commit, announced by a signed
//!   webhook → the first write of its rollout (its canary's old pod deleted).
//!
//! For each reconcile mode of `sync` (`--reconcile incremental`, then `full`, each a fresh
//! daemon on the same simulated cluster) it prints p50 / p99 event-to-write latency, the
//! daemon's CPU seconds per event (utime + stime of /proc/PID/stat), its peak RSS (VmHWM),
//! and the API requests per event (`apiserver_request_total` of `sim serve`'s `/metrics`,
//! the harness's own requests subtracted), by verb and resource.
//!
//! ```sh
//! cargo build --release && cargo run --release --example fleet_bench -- \
//!     --nodes 5000 --daemonsets 20 --events 500 --full-events 50
//! ```

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use hmac::{Hmac, Mac};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use sha2::Sha256;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The fleet benchmark of `daemonsync sync` against `daemonsync sim serve`.
#[derive(Parser, Debug)]
#[command(about)]
struct Args {
    /// Nodes of the simulated fleet.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// DaemonSets running on every node.
    #[arg(long, default_value_t = 20)]
    daemonsets: usize,
    /// Events of each kind in the incremental mode.
    #[arg(long, default_value_t = 500)]
    events: usize,
    /// Events of each kind in the full re-plan mode (slower by design; 0 skips the mode).
    #[arg(long, default_value_t = 50)]
    full_events: usize,
    /// The reconcile modes to run, in order.
    #[arg(long, value_delimiter = ',', default_value = "incremental,full")]
    modes: Vec<String>,
    /// How long one event may take before the benchmark gives up.
    #[arg(long, default_value = "60", value_name = "SECONDS")]
    timeout: u64,
    /// Seed of the random choices (which pod, which DaemonSet).
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// The daemonsync binary (default: target/release/daemonsync beside this example).
    #[arg(long)]
    daemonsync: Option<PathBuf>,
    /// Keep the working directory (sim file, repository, logs) and print where it is.
    #[arg(long)]
    keep: bool,
    /// `RUST_LOG` filter of the `sync` daemon's log (kept with `--keep`), e.g.
    /// `daemonsync::sync=debug` to see what each pass planned.
    #[arg(long, value_name = "FILTER")]
    sync_log: Option<String>,
}

const NS: &str = "fleet";
const SECRET: &str = "fleet-bench-secret";

fn main() -> Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run(args))
}

async fn run(args: Args) -> Result<()> {
    let bin = match &args.daemonsync {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .and_then(Path::parent)
            .map(|d| d.join("daemonsync"))
            .context("cannot find target/release")?,
    };
    if !bin.exists() {
        bail!(
            "{} is missing: build it first with `cargo build --release`",
            bin.display()
        );
    }
    let work = tempfile::Builder::new().prefix("fleet-bench").tempdir()?;
    let dir = work.path().to_path_buf();
    println!(
        "fleet: {} nodes × {} DaemonSets ({} pods); machine: {} cores, {}",
        args.nodes,
        args.daemonsets,
        args.nodes * args.daemonsets,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model()
    );
    write_world(&dir, &args)?;

    let started = Instant::now();
    let mut sim = Process::spawn(
        &bin,
        &[
            "sim",
            "serve",
            "--config",
            path(&dir.join("sim.yaml")),
            "--kubeconfig",
            path(&dir.join("kubeconfig")),
        ],
        &dir.join("sim.log"),
        true,
    )?;
    let line = sim.first_line(Duration::from_secs(1800))?;
    let url = line
        .strip_prefix("serving the simulated cluster at ")
        .and_then(|l| l.split(';').next())
        .with_context(|| format!("sim serve printed {line:?}"))?
        .to_string();
    println!(
        "sim serve: ready in {:.1} s, RSS {} MiB",
        started.elapsed().as_secs_f64(),
        sim.rss_kib().0 / 1024
    );
    let kubeconfig = kube::config::Kubeconfig::read_from(dir.join("kubeconfig"))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let client = kube::Client::try_from(config)?;
    let http = reqwest::Client::new();
    let fleet = Fleet::watch(client.clone()).await?;
    println!(
        "watching {} pods ({:.1} s since start)",
        fleet.pods.lock().unwrap().len(),
        started.elapsed().as_secs_f64()
    );

    let mut rng = Rng(args.seed.max(1));
    let mut image_version = 1;
    let mut joined = 0;
    let mut results = Vec::new();
    for mode in &args.modes {
        let events = if mode == "full" {
            args.full_events
        } else {
            args.events
        };
        if events == 0 {
            continue;
        }
        let mut daemon = Daemon::start(&bin, &dir, mode, args.sync_log.as_deref())?;
        daemon.wait_quiet(&http, Duration::from_secs(1800)).await?;
        println!(
            "sync --reconcile {mode}: ready and quiet after {:.1} s",
            daemon.since.elapsed().as_secs_f64()
        );
        let mut bench = Bench {
            client: &client,
            http: &http,
            sim_url: &url,
            fleet: &fleet,
            daemon: &daemon,
            timeout: Duration::from_secs(args.timeout),
            dir: &dir,
            daemonsets: args.daemonsets,
        };
        let pods = bench
            .measure("pod deleted → replacement created", events, |b| {
                let victim = b.fleet.pick(&mut rng, b.daemonsets);
                Box::pin(b.delete_pod(victim))
            })
            .await?;
        let nodes = bench
            .measure("node added → all its pods created", events, |b| {
                joined += 1;
                Box::pin(b.add_node(format!("joined-{joined}")))
            })
            .await?;
        let git = bench
            .measure("image changed in git → first write", events, |b| {
                image_version += 1;
                let ds = rng.below(b.daemonsets);
                Box::pin(b.change_image(ds, image_version))
            })
            .await?;
        let rss = daemon.process.rss_kib();
        results.push((mode.clone(), [pods, nodes, git], rss));
        drop(daemon);
    }
    let (sim_rss, sim_hwm) = sim.rss_kib();
    println!();
    println!(
        "| mode | event | events | p50 | p99 | first write p50 | CPU per event | passes per event | time per pass | requests per event |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for (mode, kinds, _) in &results {
        for k in kinds {
            println!(
                "| {mode} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.2} ms | {:.2} | {:.2} ms | {} |",
                k.what,
                k.latencies.len(),
                percentile(&k.latencies, 50),
                percentile(&k.latencies, 99),
                percentile(&k.first, 50),
                k.cpu.as_secs_f64() * 1000.0 / k.latencies.len() as f64,
                k.passes / k.latencies.len() as f64,
                k.pass_time.as_secs_f64() * 1000.0 / k.passes.max(1.0),
                k.requests_per_event()
            );
        }
    }
    println!();
    let pods = args.nodes * args.daemonsets;
    for (mode, _, (rss, hwm)) in &results {
        println!(
            "sync --reconcile {mode}: peak RSS {} MiB (RSS at the end {} MiB; {:.2} KiB per pod at the start's {} pods)",
            hwm / 1024,
            rss / 1024,
            *hwm as f64 / pods as f64,
            pods
        );
    }
    println!(
        "sim serve: peak RSS {} MiB (RSS at the end {} MiB)",
        sim_hwm / 1024,
        sim_rss / 1024
    );
    if args.keep {
        println!("kept: {}", work.keep().display());
    }
    Ok(())
}

/// One kind of event, measured.
struct Kind {
    what: &'static str,
    /// Event to the write that answers it (for a node: its last pod).
    latencies: Vec<f64>,
    /// Event to the first write (for a node: its first pod).
    first: Vec<f64>,
    cpu: Duration,
    /// The daemon's reconcile passes over the whole run of the kind.
    passes: f64,
    /// The time those passes took, from wake to the end of their writes.
    pass_time: Duration,
    /// Requests by `VERB resource`, over the whole run of the kind.
    requests: BTreeMap<String, f64>,
    /// The harness's own requests, subtracted from `requests`.
    own: BTreeMap<String, f64>,
}

impl Kind {
    fn requests_per_event(&self) -> String {
        let n = self.latencies.len().max(1) as f64;
        let mut parts = Vec::new();
        let mut total = 0.0;
        for (k, v) in &self.requests {
            let v = v - self.own.get(k).copied().unwrap_or(0.0);
            if v > 0.0 {
                total += v;
                parts.push(format!("{k} {:.2}", v / n));
            }
        }
        if self.requests.is_empty() {
            return "n/a (no /metrics)".into();
        }
        format!("{:.2}: {}", total / n, parts.join(", "))
    }
}

type Measured<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Sample>> + 'a>>;

/// One event's latencies and the harness's requests for it.
struct Sample {
    first: Duration,
    last: Duration,
    own: Vec<&'static str>,
}

struct Bench<'a> {
    client: &'a kube::Client,
    http: &'a reqwest::Client,
    sim_url: &'a str,
    fleet: &'a Fleet,
    daemon: &'a Daemon,
    timeout: Duration,
    dir: &'a Path,
    daemonsets: usize,
}

impl<'a> Bench<'a> {
    async fn measure(
        &mut self,
        what: &'static str,
        events: usize,
        mut next: impl for<'b> FnMut(&'b Bench<'a>) -> Measured<'b>,
    ) -> Result<Kind> {
        let before = requests(self.http, self.sim_url).await;
        let passes = reconciles(self.http, &self.daemon.url).await;
        let cpu = self.daemon.process.cpu();
        let mut kind = Kind {
            what,
            latencies: Vec::with_capacity(events),
            first: Vec::with_capacity(events),
            cpu: Duration::ZERO,
            passes: 0.0,
            pass_time: Duration::ZERO,
            requests: BTreeMap::new(),
            own: BTreeMap::new(),
        };
        let progress = (events / 10).max(1);
        // Each event's start (UTC, as the daemon's log stamps its lines) and latencies, kept
        // with `--keep` to find what a slow one met in the daemon's log.
        let mut log = String::from("start,first_ms,last_ms\n");
        for i in 0..events {
            let started = jiff::Timestamp::now();
            let s = next(self)
                .await
                .with_context(|| format!("{what}: event {i}"))?;
            log.push_str(&format!(
                "{started},{:.1},{:.1}\n",
                s.first.as_secs_f64() * 1000.0,
                s.last.as_secs_f64() * 1000.0
            ));
            kind.first.push(s.first.as_secs_f64() * 1000.0);
            kind.latencies.push(s.last.as_secs_f64() * 1000.0);
            for r in s.own {
                *kind.own.entry(r.to_string()).or_default() += 1.0;
            }
            if (i + 1) % progress == 0 {
                eprintln!(
                    "  {what}: {}/{events}, p50 so far {:.1} ms",
                    i + 1,
                    percentile(&kind.latencies, 50)
                );
            }
        }
        let file = what
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join("-");
        std::fs::write(self.dir.join(format!("events-{file}.csv")), log)?;
        // What the daemon does after the last write (its status writes) counts too.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        kind.cpu = self.daemon.process.cpu().saturating_sub(cpu);
        let after = reconciles(self.http, &self.daemon.url).await;
        kind.passes = after.0 - passes.0;
        kind.pass_time = Duration::from_secs_f64((after.1 - passes.1).max(0.0));
        let after = requests(self.http, self.sim_url).await;
        for (k, v) in &after {
            let d = v - before.get(k).copied().unwrap_or(0.0);
            if d > 0.0 {
                kind.requests.insert(k.clone(), d);
            }
        }
        Ok(kind)
    }

    async fn delete_pod(&self, victim: (String, String)) -> Result<Sample> {
        let (app, node) = victim;
        let name = self
            .fleet
            .pods
            .lock()
            .unwrap()
            .get(&(app.clone(), node.clone()))
            .cloned();
        let name = name.context("the pod went away")?;
        let mut rx = self.fleet.subscribe();
        let start = Instant::now();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), NS);
        pods.delete(&name, &DeleteParams::default().grace_period(0))
            .await
            .with_context(|| format!("delete pod {name}"))?;
        let at = wait_for(&mut rx, self.timeout, |e| {
            e.added && e.app == app && e.node == node && e.name != name
        })
        .await
        .with_context(|| format!("no replacement of {name} on {node}"))?
        .at;
        let took = at.duration_since(start);
        Ok(Sample {
            first: took,
            last: took,
            own: vec!["DELETE pods"],
        })
    }

    async fn add_node(&self, name: String) -> Result<Sample> {
        let mut rx = self.fleet.subscribe();
        let node: Node = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": name}},
        }))?;
        let start = Instant::now();
        Api::<Node>::all(self.client.clone())
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("create node {name}"))?;
        // The DaemonSets whose pod for it was seen, from the events alone: scanning the
        // fleet's map of 100,000 pods per event, under the lock the watch task takes for
        // every event, delayed the stamps of the events that followed.
        let mut seen = std::collections::BTreeSet::new();
        let mut first = None;
        loop {
            let e = wait_for(&mut rx, self.timeout, |e| e.added && e.node == name)
                .await
                .with_context(|| format!("node {name} got {} of its pods", seen.len()))?;
            first.get_or_insert(e.at);
            seen.insert(e.app);
            if seen.len() >= self.daemonsets {
                return Ok(Sample {
                    first: first.unwrap_or(e.at).duration_since(start),
                    last: e.at.duration_since(start),
                    own: vec!["POST nodes"],
                });
            }
        }
    }

    async fn change_image(&self, ds: usize, version: usize) -> Result<Sample> {
        let app = ds_name(ds);
        let repo = self.dir.join("repo");
        std::fs::write(
            repo.join(format!("ds/{app}.yaml")),
            daemonset(&app, &format!("{app}:{version}")),
        )?;
        git(&repo, &["commit", "-qam", &format!("{app} {version}")])?;
        let mut rx = self.fleet.subscribe();
        let body = serde_json::json!({
            "ref": "refs/heads/main",
            "before": "0000000000000000000000000000000000000000",
            "repository": {"full_name": "acme/fleet"},
        })
        .to_string();
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes())?;
        mac.update(body.as_bytes());
        let signature: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let start = Instant::now();
        let code = self
            .http
            .post(format!("{}/webhook", self.daemon.url))
            .header("X-GitHub-Event", "push")
            .header("X-GitHub-Delivery", format!("bench-{version}"))
            .header("Content-Type", "application/json")
            .header("X-Hub-Signature-256", format!("sha256={signature}"))
            .body(body)
            .send()
            .await?
            .status();
        if code.as_u16() != 202 {
            bail!("the webhook answered {code}");
        }
        let at = wait_for(&mut rx, self.timeout, |e| {
            e.app == app && (e.deleting || (e.added && e.image.ends_with(&format!(":{version}"))))
        })
        .await
        .with_context(|| format!("no write for {app} {version}"))?
        .at;
        let took = at.duration_since(start);
        Ok(Sample {
            first: took,
            last: took,
            own: vec![],
        })
    }
}

/// What the harness's watch saw of one pod.
#[derive(Clone, Debug)]
struct Seen {
    at: Instant,
    added: bool,
    deleting: bool,
    app: String,
    node: String,
    name: String,
    image: String,
}

/// Every daemon pod of the fleet by (DaemonSet, node), kept by a watch; its events are
/// broadcast.
struct Fleet {
    pods: Arc<Mutex<HashMap<(String, String), String>>>,
    /// The nodes that ran daemon pods when the benchmark started.
    nodes: Vec<String>,
    /// The watch, stopped with the benchmark (before `sim serve`).
    task: tokio::task::JoinHandle<()>,
    events: tokio::sync::broadcast::Sender<Seen>,
}

impl Fleet {
    async fn watch(client: kube::Client) -> Result<Fleet> {
        let api: Api<Pod> = Api::namespaced(client, NS);
        let list = api.list(&ListParams::default()).await?;
        let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
        let pods = Arc::new(Mutex::new(HashMap::new()));
        {
            let mut map = pods.lock().unwrap();
            for p in &list.items {
                let s = seen(p, true);
                if !s.deleting && !s.node.is_empty() {
                    map.insert((s.app, s.node), s.name);
                }
            }
        }
        drop(list);
        let mut nodes: Vec<String> = pods
            .lock()
            .unwrap()
            .keys()
            .map(|(_, n)| n.clone())
            .collect();
        nodes.sort();
        nodes.dedup();
        if nodes.is_empty() {
            bail!("no daemon pods in namespace {NS}");
        }
        let (tx, _) = tokio::sync::broadcast::channel(1 << 16);
        let (map, events) = (Arc::clone(&pods), tx.clone());
        let task = tokio::spawn(async move {
            loop {
                let stream = match api.watch(&WatchParams::default().timeout(290), &rv).await {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("watch failed: {e}; again");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let mut stream = stream.boxed();
                while let Ok(Some(event)) = stream.try_next().await {
                    let (pod, added, gone) = match event {
                        WatchEvent::Added(p) => (p, true, false),
                        WatchEvent::Modified(p) => (p, false, false),
                        WatchEvent::Deleted(p) => (p, false, true),
                        WatchEvent::Bookmark(b) => {
                            rv = b.metadata.resource_version;
                            continue;
                        }
                        WatchEvent::Error(e) => {
                            eprintln!("watch error: {e:?}; relisting is not done, stopping");
                            return;
                        }
                    };
                    if let Some(v) = &pod.metadata.resource_version {
                        rv = v.clone();
                    }
                    let s = seen(&pod, added);
                    {
                        let mut map = map.lock().unwrap();
                        let key = (s.app.clone(), s.node.clone());
                        if gone || s.deleting {
                            if map.get(&key) == Some(&s.name) {
                                map.remove(&key);
                            }
                        } else if !s.node.is_empty() {
                            map.insert(key, s.name.clone());
                        }
                    }
                    let _ = events.send(s);
                }
            }
        });
        Ok(Fleet {
            pods,
            nodes,
            events: tx,
            task,
        })
    }

    /// A random (DaemonSet, node) that has a pod, of the first nodes' (not one that joined).
    fn pick(&self, rng: &mut Rng, daemonsets: usize) -> (String, String) {
        let pods = self.pods.lock().unwrap();
        loop {
            let app = ds_name(rng.below(daemonsets));
            let node = &self.nodes[rng.below(self.nodes.len())];
            let key = (app, node.clone());
            if pods.contains_key(&key) {
                return key;
            }
        }
    }

    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Seen> {
        self.events.subscribe()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn seen(p: &Pod, added: bool) -> Seen {
    let spec = p.spec.as_ref();
    let node = spec
        .and_then(|s| s.node_name.clone())
        .or_else(|| spec.and_then(daemonsync::model::target_node_from_affinity))
        .unwrap_or_default();
    Seen {
        at: Instant::now(),
        added,
        deleting: p.metadata.deletion_timestamp.is_some(),
        app: p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .unwrap_or_default(),
        node,
        name: p.metadata.name.clone().unwrap_or_default(),
        image: spec
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default(),
    }
}

/// The instant of the first event `matches` accepts, within `timeout`.
async fn wait_for(
    rx: &mut tokio::sync::broadcast::Receiver<Seen>,
    timeout: Duration,
    matches: impl Fn(&Seen) -> bool,
) -> Result<Seen> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => bail!("timed out after {timeout:?}"),
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(n))) => {
                eprintln!("the harness fell {n} events behind");
            }
            Ok(Err(e)) => bail!("the watch stopped: {e}"),
            Ok(Ok(e)) if matches(&e) => return Ok(e),
            Ok(Ok(_)) => {}
        }
    }
}

/// `apiserver_request_total` of `sim serve`, summed by `VERB resource` (empty without
/// `/metrics`).
/// The reconcile passes the daemon counted (`daemonsync_reconcile_total`, every result)
/// and the seconds they took (`daemonsync_reconcile_duration_seconds_sum`).
async fn reconciles(http: &reqwest::Client, url: &str) -> (f64, f64) {
    let Ok(r) = http.get(format!("{url}/metrics")).send().await else {
        return (0.0, 0.0);
    };
    let text = r.text().await.unwrap_or_default();
    let sum = |prefix: &str| -> f64 {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    (
        sum("daemonsync_reconcile_total{"),
        sum("daemonsync_reconcile_duration_seconds_sum"),
    )
}

async fn requests(http: &reqwest::Client, url: &str) -> BTreeMap<String, f64> {
    let Ok(r) = http.get(format!("{url}/metrics")).send().await else {
        return BTreeMap::new();
    };
    if !r.status().is_success() {
        return BTreeMap::new();
    }
    let text = r.text().await.unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let label = |name: &str| {
            let at = line.find(&format!("{name}=\""))? + name.len() + 2;
            line[at..].split('"').next().map(str::to_string)
        };
        // Non-resource paths (`/metrics`, `/version`) have no resource.
        let (Some(verb), Some(resource)) =
            (label("verb"), label("resource").filter(|r| !r.is_empty()))
        else {
            continue;
        };
        let sub = label("subresource").filter(|s| !s.is_empty());
        let key = match sub {
            Some(s) => format!("{verb} {resource}/{s}"),
            None => format!("{verb} {resource}"),
        };
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        *out.entry(key).or_default() += value;
    }
    out
}

/// A `daemonsync sync` child process.
struct Daemon {
    process: Process,
    url: String,
    since: Instant,
}

impl Daemon {
    fn start(bin: &Path, dir: &Path, mode: &str, log_filter: Option<&str>) -> Result<Daemon> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let repo = dir.join("repo");
        let secret = dir.join("webhook-secret");
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec![
            "sync",
            "--repo",
            path(&repo),
            "--path",
            "ds",
            "--ref",
            "main",
            "--interval",
            "10m",
            "--webhook-secret-file",
            path(&secret),
            "--listen",
            &listen,
        ];
        if mode != "default" {
            args.extend(["--reconcile", mode]);
        }
        let log = dir.join(format!("sync-{mode}.log"));
        let mut process = Process::spawn_with(bin, &args, &log, false, |c| {
            c.env("KUBECONFIG", dir.join("kubeconfig"));
            if let Some(filter) = log_filter {
                c.env("RUST_LOG", filter);
            }
        })?;
        process.name = format!("sync --reconcile {mode}");
        Ok(Daemon {
            process,
            url: format!("http://{listen}"),
            since: Instant::now(),
        })
    }

    /// Waits until `/readyz` answers 200 and no pod was written for 3 s.
    async fn wait_quiet(&mut self, http: &reqwest::Client, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut last = None;
        let mut since = Instant::now();
        loop {
            if Instant::now() > deadline {
                bail!(
                    "sync did not settle within {timeout:?}; see {}",
                    self.process.log.display()
                );
            }
            if let Some(status) = self.process.child.try_wait()? {
                bail!("sync exited ({status}); see {}", self.process.log.display());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            let ready = http
                .get(format!("{}/readyz", self.url))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if !ready {
                continue;
            }
            let text = match http.get(format!("{}/metrics", self.url)).send().await {
                Ok(r) => r.text().await.unwrap_or_default(),
                Err(_) => continue,
            };
            let writes: f64 = text
                .lines()
                .filter(|l| l.starts_with("daemonsync_pod_writes_total"))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum();
            if last != Some(writes) {
                last = Some(writes);
                since = Instant::now();
            } else if since.elapsed() > Duration::from_secs(3) {
                return Ok(());
            }
        }
    }
}

/// A child process, killed on drop.
struct Process {
    child: Child,
    log: PathBuf,
    name: String,
}

impl Process {
    fn spawn(bin: &Path, args: &[&str], log: &Path, stdout: bool) -> Result<Process> {
        Process::spawn_with(bin, args, log, stdout, |_| {})
    }

    fn spawn_with(
        bin: &Path,
        args: &[&str],
        log: &Path,
        stdout: bool,
        configure: impl FnOnce(&mut Command),
    ) -> Result<Process> {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .env_remove("RUST_LOG")
            .stderr(std::fs::File::create(log)?)
            .stdout(if stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        configure(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot run {}", bin.display()))?;
        Ok(Process {
            child,
            log: log.to_path_buf(),
            name: args.first().copied().unwrap_or_default().to_string(),
        })
    }

    /// The first line the process prints on stdout.
    fn first_line(&mut self, timeout: Duration) -> Result<String> {
        let out = self.child.stdout.take().context("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(timeout)
            .with_context(|| format!("{} printed nothing within {timeout:?}", self.name))?;
        if line.is_empty() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            bail!("{} exited: {log}", self.name);
        }
        Ok(line.trim().to_string())
    }

    /// utime + stime.
    fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command's closing parenthesis; utime and stime are the 14th
        // and 15th of the line.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
            .sum();
        // USER_HZ is 100 on Linux.
        Duration::from_millis(ticks * 10)
    }

    /// (VmRSS, VmHWM) in KiB.
    fn rss_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ds_name(i: usize) -> String {
    format!("agent-{i:02}")
}

/// A DaemonSet whose rollouts stop after a one-node canary, so that each image change is
/// one write and leaves the rest of the fleet alone.
fn daemonset(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  namespace: {NS}
  annotations:
    daemonsync.io/canary: \"1\"
    daemonsync.io/canary-pause: manual
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 1}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: {name}
          image: '{image}'
          resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}
"
    )
}

/// The sim file, the running DaemonSets and a repository of the same DaemonSets.
fn write_world(dir: &Path, args: &Args) -> Result<()> {
    let running = dir.join("running");
    let repo = dir.join("repo");
    std::fs::create_dir_all(&running)?;
    std::fs::create_dir_all(repo.join("ds"))?;
    for i in 0..args.daemonsets {
        let name = ds_name(i);
        let text = daemonset(&name, &format!("{name}:1"));
        std::fs::write(running.join(format!("{name}.yaml")), &text)?;
        std::fs::write(repo.join(format!("ds/{name}.yaml")), &text)?;
    }
    std::fs::write(
        dir.join("sim.yaml"),
        format!(
            "seed: {seed}
kubelet: {{startLatency: {{uniform: [100ms, 300ms]}}, terminationGrace: 300ms}}
nodes:
  - name: 'node-{{i}}'
    count: {nodes}
    labels: {{kubernetes.io/os: linux}}
running:
  - manifest: running/
",
            seed = args.seed,
            nodes = args.nodes
        ),
    )?;
    std::fs::write(dir.join("webhook-secret"), format!("{SECRET}\n"))?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    git(&repo, &["add", "."])?;
    git(&repo, &["commit", "-qm", "the fleet as it runs"])?;
    Ok(())
}

fn git(repo: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .status()
        .context("git is needed")?;
    if !status.success() {
        bail!("git {args:?} failed");
    }
    Ok(())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

fn percentile(values: &[f64], p: usize) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() * p).div_ceil(100)).clamp(1, v.len()) - 1;
    v[i]
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// xorshift64: reproducible choices without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

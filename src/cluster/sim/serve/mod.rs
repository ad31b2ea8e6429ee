//! `daemonsync sim serve`: the simulated cluster as a Kubernetes API server on 127.0.0.1, for
//! kube-rs clients (daemonsync's live backend) and kubectl.
//!
//! The simulator ([`Sim`]) stays the behaviour engine, driven by the wall clock: it decides
//! where pods are bound, when they start or fail, when terminations end, what churn does to
//! nodes and which pods node removals collect. The API store holds the full objects clients
//! wrote, with the simulator's decisions projected onto them. Modules:
//!
//! * [`kinds`]: the table of served kinds (built-ins and CRD-defined), which handlers follow.
//! * [`store`]: objects, the global resourceVersion, change history and watch broadcast.
//! * [`world`]: create, update, patch and delete with per-kind side effects.
//! * [`engine`]: the simulator ↔ store bridge (pods, nodes, kubelet status).
//! * [`gc`]: owner-reference garbage collection (background, foreground, orphan).
//! * [`patch`]: merge, strategic-merge (approximated), JSON patch, server-side apply.
//! * [`select`]: label and field selectors. [`tables`]: server-side Tables for kubectl.
//! * [`discovery`]: `/version`, `/api`, `/apis`, minimal `/openapi/v3`.
//! * [`http`]: routes and watches. [`faults`]: `--faults`. [`convert`]: events.k8s.io views.

pub mod convert;
pub mod discovery;
pub mod engine;
pub mod faults;
pub mod gc;
pub mod http;
pub mod kinds;
pub mod patch;
pub mod protobuf;
pub mod select;
pub mod status;
pub mod store;
pub mod tables;
pub mod world;

#[cfg(test)]
mod inplace_tests;

pub use faults::{Faults, FaultsError};

use super::Sim;
use super::config::SimConfig;
use crate::model::Timestamp;
use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use world::{World, WriteParams};

/// The ManagedDaemonSet CRD, installed at start-up.
pub const CRD_YAML: &str = include_str!("../../../../examples/deploy/crd.yaml");
/// The kubeconfig context (and cluster and user) names written.
pub const CONTEXT: &str = "daemonsync-sim";
/// Namespaces every cluster has.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The sim file (docs/sim.md).
    pub config: PathBuf,
    /// Where to listen (`127.0.0.1:0`: a free port).
    pub listen: SocketAddr,
    /// Where to write the kubeconfig (`None`: do not write one).
    pub kubeconfig: Option<PathBuf>,
    /// Injected failures.
    pub faults: Faults,
    /// Changes kept for watches to resume from; older resourceVersions get a 410 event.
    pub history: usize,
    /// Interval of watch bookmarks.
    pub bookmark_interval: Duration,
    /// Where to log every request, one JSON line each (`None`: no log).
    pub request_log: Option<PathBuf>,
}

impl ServeOptions {
    /// Defaults for `config`: a free port on 127.0.0.1, no kubeconfig, no faults.
    pub fn new(config: impl Into<PathBuf>) -> Self {
        ServeOptions {
            config: config.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            kubeconfig: None,
            faults: Faults::default(),
            history: 10_000,
            bookmark_interval: Duration::from_secs(15),
            request_log: None,
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    url: String,
    shared: Arc<http::Shared>,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Loads the sim file, builds the cluster, binds and starts serving (on the current
    /// tokio runtime). Writes the kubeconfig when asked.
    pub async fn start(opts: ServeOptions) -> Result<Server> {
        let world = build_world(&opts.config, opts.history)?;
        let request_log = match &opts.request_log {
            Some(path) => Some(Arc::new(http::RequestLog::create(path).with_context(
                || format!("cannot create the request log {}", path.display()),
            )?)),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .with_context(|| format!("cannot listen on {}", opts.listen))?;
        let addr = listener.local_addr()?;
        let url = format!("http://{addr}");
        if let Some(path) = &opts.kubeconfig {
            write_kubeconfig(path, &url)?;
        }
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let seed = world.sim.cfg.seed;
        let shared = Arc::new(http::Shared {
            world: Mutex::new(world),
            wake: tokio::sync::Notify::new(),
            faults: opts.faults,
            fault_rng: Mutex::new(seed ^ 0xFA17_FA17),
            bookmark_interval: opts.bookmark_interval,
            shutdown: stopped.clone(),
            address: addr.to_string(),
            request_log,
        });
        tokio::spawn(drive_clock(shared.clone(), stopped.clone()));
        let app = http::router(shared.clone());
        let mut until = stopped;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = until.wait_for(|s| *s).await;
                })
                .await;
        });
        Ok(Server {
            url,
            shared,
            stop,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The served state (tests inspect it).
    pub fn world(&self) -> std::sync::MutexGuard<'_, World> {
        self.shared.lock()
    }

    /// Ends every watch and stops serving (waits at most 5 s for open requests).
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// Runs the simulator on the wall clock: sleeps until its next event (or a write), then
/// applies what is due and projects it.
async fn drive_clock(shared: Arc<http::Shared>, mut stopped: tokio::sync::watch::Receiver<bool>) {
    loop {
        let due = shared.lock().sim.next_due();
        let wait = due
            .map(|t| t.duration_since(Timestamp::now()).as_millis().max(0) as u64)
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(3600));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.wake.notified() => {}
            _ = stopped.changed() => return,
        }
        shared.lock().tick(Timestamp::now());
    }
}

/// The cluster at start-up: system namespaces, the CRD, the sim file's nodes, and for each
/// `running:` DaemonSet its namespace, its ManagedDaemonSet record and its ready pods.
pub fn build_world(config: &Path, history: usize) -> Result<World> {
    let mut cfg = SimConfig::load(config)?;
    let running = std::mem::take(&mut cfg.running);
    let now = Timestamp::now();
    cfg.start = Some(now);
    let seed = cfg.seed;
    let sim = Sim::new(cfg).with_context(|| format!("in sim file {}", config.display()))?;
    let since = sim.running_since();
    let mut w = World::new(sim, history, seed);
    w.engine.boot_time = Some(since);
    w.project();
    w.engine.boot_time = None;
    let params = WriteParams {
        manager: "daemonsync-sim".into(),
        ..WriteParams::default()
    };
    let kind = |w: &World, group: &str, plural: &str, version: &str| {
        w.registry
            .find(group, version, plural)
            .expect("built-in kind")
    };
    let crd: Value =
        serde_saphyr::from_str(CRD_YAML).context("examples/deploy/crd.yaml is not valid YAML")?;
    let crds = kind(
        &w,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "v1",
    );
    w.create(&crds, "", crd, &params, None)
        .map_err(|e| anyhow::anyhow!("installing the CRD: {e}"))?;

    let mut desired = Vec::new();
    for r in &running {
        desired.extend(
            super::load_running(&r.manifest)
                .with_context(|| format!("in sim file {}", config.display()))?,
        );
    }
    let mut namespaces: Vec<String> = SYSTEM_NAMESPACES.iter().map(|s| s.to_string()).collect();
    for d in &desired {
        let ns = d
            .daemonset
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        if !namespaces.contains(&ns) {
            namespaces.push(ns);
        }
    }
    let ns_kind = kind(&w, "", "namespaces", "v1");
    for ns in namespaces {
        w.create(
            &ns_kind,
            "",
            json!({"metadata": {"name": ns}}),
            &params,
            None,
        )
        .map_err(|e| anyhow::anyhow!("creating namespace {ns}: {e}"))?;
    }
    let mds = kind(
        &w,
        crate::plan::RECORD_GROUP,
        "manageddaemonsets",
        "v1alpha1",
    );
    let mut uids = std::collections::BTreeMap::new();
    for d in &desired {
        let ds = &d.daemonset;
        let ns = ds
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = ds.metadata.name.clone().unwrap_or_default();
        let record = json!({
            "apiVersion": crate::plan::RECORD_API_VERSION, "kind": crate::plan::RECORD_KIND,
            "metadata": {"name": name, "namespace": ns},
            "spec": {"daemonSet": ds, "source": {"repository": "", "path": d.source.split(", document").next().unwrap_or_default(), "commit": ""}},
        });
        let stored = w
            .create(&mds, &ns, record, &params, None)
            .map_err(|e| anyhow::anyhow!("creating the record of {ns}/{name}: {e}"))?;
        uids.insert(
            (ns, name),
            stored["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
    }
    for mut pod in w.sim.running_pods(&desired) {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        for r in pod.metadata.owner_references.iter_mut().flatten() {
            if let Some(uid) = uids.get(&(ns.clone(), r.name.clone())) {
                r.uid = uid.clone();
            }
        }
        engine::insert_running(&mut w, pod, since)?;
    }
    w.project();
    write_record_statuses(&mut w, &desired, &mds, &params);
    Ok(w)
}

/// Fills the records' status with the planner's counters and the stable DaemonSet, as
/// daemonsync would have left it after rolling them out.
fn write_record_statuses(
    w: &mut World,
    desired: &[crate::plan::Desired],
    mds: &kinds::Kind,
    params: &WriteParams,
) {
    if desired.is_empty() {
        return;
    }
    let plan = crate::plan::plan(
        desired,
        &w.sim.observed(),
        &crate::plan::Policy::default(),
        w.now(),
    );
    for ds in &plan.daemonsets {
        let mut status = serde_json::to_value(ds.status).unwrap_or_default();
        status["currentRevision"] = json!(ds.revision);
        // Rolled out to completion: the stable revision nodes held back by a rollout policy
        // keep running.
        if let Some(d) = desired.iter().find(|d| {
            d.daemonset.metadata.name.as_deref() == Some(ds.name.as_str())
                && d.daemonset
                    .metadata
                    .namespace
                    .as_deref()
                    .unwrap_or("default")
                    == ds.namespace
        }) {
            status["stable"] = serde_json::to_value(&d.daemonset).unwrap_or_default();
        }
        let _ = w.update(
            mds,
            &ds.namespace,
            &ds.name,
            true,
            json!({"status": status}),
            params,
            None,
        );
    }
}

/// Writes a kubeconfig whose only context, `daemonsync-sim`, points at `url` with no
/// credentials. Refuses to overwrite a file that is not such a kubeconfig.
pub fn write_kubeconfig(path: &Path, url: &str) -> Result<()> {
    if let Ok(existing) = std::fs::read_to_string(path) {
        let ours = serde_saphyr::from_str::<Value>(&existing)
            .ok()
            .is_some_and(|v| {
                let contexts = v["contexts"].as_array();
                contexts.is_some_and(|c| c.len() == 1 && c[0]["name"] == CONTEXT)
            });
        if !ours {
            bail!(
                "refusing to overwrite {}: it is not a kubeconfig written by `daemonsync sim serve`; remove it or choose another --kubeconfig",
                path.display()
            );
        }
    }
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {CONTEXT}\n  cluster:\n    server: {url}\ncontexts:\n- name: {CONTEXT}\n  context:\n    cluster: {CONTEXT}\n    user: {CONTEXT}\ncurrent-context: {CONTEXT}\nusers:\n- name: {CONTEXT}\n  user: {{}}\npreferences: {{}}\n"
    );
    let tmp = path.with_extension("tmp-daemonsync");
    std::fs::write(&tmp, text)
        .with_context(|| format!("cannot write kubeconfig {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot write kubeconfig {}", path.display()))?;
    Ok(())
}

/// `daemonsync sim serve`: serves until SIGINT or SIGTERM, after printing the one ready line.
pub async fn serve_until_signal(opts: ServeOptions) -> Result<()> {
    let kubeconfig = opts.kubeconfig.clone();
    let server = Server::start(opts).await?;
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let file = kubeconfig
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        writeln!(
            out,
            "serving the simulated cluster at {}; kubeconfig: {file}",
            server.url()
        )?;
        out.flush()?;
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.shutdown().await;
    Ok(())
}

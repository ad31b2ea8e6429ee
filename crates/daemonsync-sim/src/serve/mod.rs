//! `daemonsync sim serve`: the simulated cluster as a Kubernetes API server on 127.0.0.1, for
//! kube-rs clients (daemonsync's live backend) and kubectl.
//!
//! The cluster is the one the in-process simulator runs ([`super::api`]), driven by the wall
//! clock. This module is its HTTP face:
//!
//! * [`http`]: routes and watches. [`tables`]: server-side Tables for kubectl.
//! * [`discovery`]: `/version`, `/api`, `/apis`, minimal `/openapi/v3`.
//! * [`faults`]: `--faults`. [`protobuf`]: kubectl's protobuf request bodies.
//! * [`metrics`]: `/metrics`, the requests served as kube-apiserver counts them.

pub mod discovery;
pub mod faults;
pub mod http;
pub mod metrics;
pub mod paging;
pub mod protobuf;
pub mod tables;

#[cfg(test)]
mod inplace_tests;
#[cfg(test)]
mod metrics_tests;

pub use faults::{Faults, FaultsError};

use super::api::admission::Deny;
use super::api::world::World;
use super::config::SimConfig;
use crate::model::Timestamp;
use anyhow::{Context as _, Result, bail};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use super::api::boot::CRD_YAML;
/// The kubeconfig context (and cluster and user) names written.
pub const CONTEXT: &str = "daemonsync-sim";

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

/// Accepts connections as kube-apiserver does: with `TCP_NODELAY` set, as Go's `net`
/// package sets it on every TCP connection. Without it, the second of two watch events
/// written back to back waits for the client's delayed acknowledgement of the first (Nagle's
/// algorithm), up to 40 ms on Linux, which no real API server makes a client wait.
fn without_delay(
    listener: tokio::net::TcpListener,
) -> impl axum::serve::Listener<Io = tokio::net::TcpStream, Addr = SocketAddr> {
    use axum::serve::ListenerExt as _;
    listener.tap_io(|stream| {
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY on a connection");
        }
    })
}

impl Server {
    /// Loads the sim file, builds the cluster, binds and starts serving (on the current
    /// tokio runtime). Writes the kubeconfig when asked.
    pub async fn start(opts: ServeOptions) -> Result<Server> {
        let world = build_world(&opts.config, opts.history, &opts.faults.deny)?;
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
        let listener = without_delay(listener);
        let url = format!("http://{addr}");
        if let Some(path) = &opts.kubeconfig {
            write_kubeconfig(path, &url)?;
        }
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let seed = world.nodes.cfg.seed;
        let shared = Arc::new(http::Shared {
            world: Mutex::new(world),
            wake: tokio::sync::Notify::new(),
            faults: opts.faults,
            fault_rng: Mutex::new(seed ^ 0xFA17_FA17),
            bookmark_interval: opts.bookmark_interval,
            shutdown: stopped.clone(),
            address: addr.to_string(),
            request_log,
            requests: Default::default(),
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
        let due = shared.lock().nodes.next_due();
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

/// The cluster of the sim file at `config`, started now on the wall clock (its `start` key is
/// ignored), with `deny` webhooks besides the file's.
pub fn build_world(config: &Path, history: usize, deny: &[Deny]) -> Result<World> {
    let mut cfg = SimConfig::load(config)?;
    cfg.start = Some(Timestamp::now());
    let mut w =
        World::boot(cfg, history).with_context(|| format!("in sim file {}", config.display()))?;
    w.admission.deny.extend(deny.iter().cloned());
    Ok(w)
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

#[cfg(test)]
mod tests {
    use axum::serve::Listener as _;

    #[tokio::test]
    async fn connections_are_accepted_without_delay_as_kube_apiserver_accepts_them() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = super::without_delay(listener);
        let client = tokio::net::TcpStream::connect(addr);
        let ((stream, _), client) = tokio::join!(listener.accept(), client);
        client.unwrap();
        assert!(
            stream.nodelay().unwrap(),
            "a connection the simulated API server accepts has TCP_NODELAY set"
        );
    }
}

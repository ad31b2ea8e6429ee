//! The daemon's event loop: triggers in, one level-triggered reconcile pass per wake-up.
//!
//! Triggers: the source (a poll every `--interval`, a webhook, a file change) and the
//! cluster (watch events on nodes, managed pods and records, through the caches of
//! [`KubeCluster`]), plus the next instant at which a deadline expires. Every wake-up observes
//! afresh, assesses with the same code as `apply` and, when this replica may write, executes
//! the next step of every DaemonSet that is neither halted nor frozen (a paused one's only
//! serves the nodes that have no pod). Bursts coalesce by
//! themselves: events that arrive during a pass are all answered by the next one.
//!
//! Incremental reconcile (the default, `--reconcile incremental`): a wake-up plans, assesses
//! and executes only the DaemonSets its changes concern (`plan::incremental`: the caches say
//! which objects changed, the source which DaemonSets, the deadlines whose they are); the
//! others keep their last plan. Every `--resync` every DaemonSet is planned afresh and
//! compared with the incremental plans: a difference is logged as an error, counted in
//! `daemonsync_incremental_mismatch_total`, and the fresh plan is used. `--reconcile full`
//! re-plans everything on every wake-up, as before (kept for comparison in benchmarks).

use super::http::{self, HttpState, Readiness, Webhook};
use super::leader::{LeaderOptions, Leadership};
use super::metrics::{Metrics, PodVerb, ReconcileResult};
use super::source::{Change, Follower, InEffect};
use crate::apply::{ApplyOptions, Executor, Key};
use crate::cluster::kube::{KubeCluster, KubeOptions, adoption_selectors};
use crate::cluster::{
    Cluster, ClusterError, ClusterState, Event, RecordSource, RecordStatus, TargetVersion,
};
use crate::manifest::LoadOptions;
use crate::model::Timestamp;
use crate::plan::{
    self,
    incremental::{Changes, Scope},
};
use crate::source::ManifestSource;
use crate::source::short_revision;
use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};

/// Re-plan at least this often, whatever happens (a safety net: every change that matters
/// arrives as an event).
const RESYNC: Duration = Duration::from_secs(60);
/// Longest pause after passes whose writes failed (500 ms, doubling).
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How soon DaemonSets whose writes met an object changed since it was observed are looked at
/// again, at the latest (doubled for each such pass in a row, up to 32 times): the change
/// itself wakes them as soon as it is observed.
const CONFLICT_RETRY: Duration = Duration::from_millis(50);

/// How soon DaemonSets are looked at again after `conflicts` passes in a row met only
/// objects changed since they were observed ([`CONFLICT_RETRY`]).
fn conflict_retry(conflicts: u32) -> Duration {
    CONFLICT_RETRY.saturating_mul(1 << conflicts.saturating_sub(1).min(5))
}
/// How long shutdown may take, at most, once the signal arrives.
pub const SHUTDOWN_BUDGET: Duration = Duration::from_secs(8);

/// How to run the daemon: library options, made from the command line once.
#[derive(Debug)]
pub struct SyncOptions {
    /// Where the manifests come from.
    pub source: ManifestSource,
    /// How they are read.
    pub load: LoadOptions,
    /// `--kube-version`: render and validate for it instead of the cluster's version.
    pub kube_version: Option<crate::model::KubeVersion>,
    /// Directories to watch for changes (`--manifests`); empty for git.
    pub watch: Vec<PathBuf>,
    /// Follow a force-pushed branch instead of holding the last good commit.
    pub allow_history_rewrites: bool,
    /// The kubeconfig context (`None`: the current one, or the in-cluster config).
    pub context: Option<String>,
    /// How often the source is polled.
    pub interval: Duration,
    /// The HTTP listener's address.
    pub listen: String,
    /// The webhook (and its secret), when configured.
    pub webhook: Option<Webhook>,
    /// Executor options (`dry_run`, `prune`, `allow_mass_prune`, `progress_deadline`).
    pub apply: ApplyOptions,
    /// Leader election, when enabled.
    pub leader: Option<LeaderOptions>,
    /// This replica's identity (User-Agent, field manager, lease holder).
    pub identity: String,
    /// How a change is reconciled (`--reconcile`).
    pub reconcile: Reconcile,
    /// How often an incremental daemon re-plans everything and compares (`--resync`).
    pub resync: Duration,
}

/// How a change is reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconcile {
    /// Plan the DaemonSets the change concerns; the others keep their plan.
    Incremental,
    /// Plan every DaemonSet on every change.
    Full,
}

/// Runs the daemon until `shutdown` turns true; returns once it has stopped cleanly.
pub async fn run(opts: SyncOptions, mut shutdown: watch::Receiver<bool>) -> Result<()> {
    let listener = http::bind(&opts.listen).await?;
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| opts.listen.clone());
    let metrics = Arc::new(Metrics::new());
    let (ready_tx, ready_rx) = watch::channel(Readiness::NotReady(
        "the source has not been read yet".into(),
    ));
    // A webhook fetches here at once and, on a replica that does not lead, is relayed to the
    // leader through the Lease (the Service may pick any replica).
    let fetch = Arc::new(Notify::new());
    let webhook = Arc::new(Notify::new());
    let relay = Arc::new(Notify::new());
    {
        let (webhook, fetch, relay) =
            (Arc::clone(&webhook), Arc::clone(&fetch), Arc::clone(&relay));
        tokio::spawn(async move {
            loop {
                webhook.notified().await;
                fetch.notify_one();
                relay.notify_one();
            }
        });
    }
    let server = tokio::spawn(http::serve(
        listener,
        HttpState {
            metrics: Arc::clone(&metrics),
            ready: ready_rx,
            webhook: opts.webhook,
            fetch: webhook,
        },
        until_true(shutdown.clone()),
    ));
    tracing::info!(
        listen = %address,
        identity = %opts.identity,
        dry_run = opts.apply.dry_run,
        "daemonsync sync started"
    );

    // Writes stop the moment the signal arrives, even in the middle of a step.
    let stopping = Arc::new(AtomicBool::new(false));
    {
        let (stopping, mut shutdown) = (Arc::clone(&stopping), shutdown.clone());
        tokio::spawn(async move {
            let _ = shutdown.wait_for(|s| *s).await;
            stopping.store(true, Ordering::SeqCst);
        });
    }

    // Every commit is rendered and validated for the cluster's version, read once here.
    let mut load = opts.load;
    let reported = match opts.kube_version {
        Some(_) => None,
        None => crate::cluster::kube::server_version(opts.context.as_deref())
            .await
            .context("cannot start: the cluster's version could not be read")?,
    };
    let (target, note) =
        TargetVersion::resolve(opts.kube_version, reported).map_err(anyhow::Error::msg)?;
    if let Some(note) = note {
        tracing::warn!("{note}");
    }
    load.gates.version = target.version;
    tracing::info!(kubernetes = %target, "rendering and validating for");
    let follower = Follower::new(opts.source, load, opts.allow_history_rewrites);
    let (effect_tx, mut effect_rx) = watch::channel(Arc::new(InEffect::default()));
    let source_task = tokio::spawn(follow_source(
        follower,
        opts.interval,
        opts.watch,
        Arc::clone(&fetch),
        effect_tx,
        Arc::clone(&metrics),
        ready_tx.clone(),
        shutdown.clone(),
    ));

    // The cluster is connected once the source was read, so the DaemonSets to adopt are known.
    let first = tokio::select! {
        r = effect_rx.wait_for(|e| e.revision.is_some()) => r.map(|e| Arc::clone(&e)).ok(),
        _ = shutdown.wait_for(|s| *s) => None,
    };
    let Some(first) = first else {
        return finish(server, source_task, None).await;
    };
    let _ = ready_tx.send(Readiness::NotReady(
        "connecting to the cluster and filling its caches".into(),
    ));
    let mut cluster = KubeCluster::connect(KubeOptions {
        context: opts.context.clone(),
        adopt: adoption_selectors(&first.desired),
        all_daemonset_pods: false,
        identity: Some(opts.identity.clone()),
    })
    .await
    .context("cannot start: the cluster is not usable")?;
    tracing::info!(cluster = %cluster.target(), "caches synced");

    let leadership = match opts.leader {
        Some(l) => Some(Leadership::start(cluster.client(), l).await?),
        None => None,
    };
    let leader_changed = Arc::new(Notify::new());
    let lease_fetch = match &leadership {
        Some(l) => l.fetch_requests(),
        None => Arc::new(Notify::new()),
    };
    match &leadership {
        Some(l) => {
            let mut rx = l.subscribe();
            let (metrics, notify) = (Arc::clone(&metrics), Arc::clone(&leader_changed));
            metrics.leader(*rx.borrow_and_update());
            tokio::spawn(async move {
                while rx.changed().await.is_ok() {
                    let leading = *rx.borrow_and_update();
                    metrics.leader(leading);
                    tracing::info!(leader = leading, "leadership changed");
                    notify.notify_one();
                }
            });
        }
        None => metrics.leader(true),
    }
    let _ = ready_tx.send(Readiness::Ready);

    let gate = Gate {
        metrics: Arc::clone(&metrics),
        leadership: leadership.as_ref(),
        stopping: Arc::clone(&stopping),
        dry_run: opts.apply.dry_run,
    };
    let planning = crate::apply::policy(&opts.apply);
    let defer_for = opts.apply.status_interval.filter(|d| d.is_positive());
    let mut reconciler = Reconciler {
        executor: Executor::default(),
        apply: opts.apply,
        metrics: Arc::clone(&metrics),
        known: BTreeSet::new(),
        failures: 0,
        conflicts: 0,
        mass_prune_warned: false,
        rolling: BTreeSet::new(),
        unwritten: BTreeMap::new(),
        leases: BTreeMap::new(),
        incremental: (opts.reconcile == Reconcile::Incremental).then(|| Incremental {
            planner: plan::incremental::Incremental::new(planning),
            resync: opts.resync,
            last_full: Instant::now(),
            deadlines: BTreeMap::new(),
            deferred: BTreeMap::new(),
            defer_for,
            planned: None,
            wrote: false,
            expired: BTreeSet::new(),
            retry: false,
        }),
    };
    // The source whose DaemonSets the watches were last checked against.
    let mut watched_for: Option<Arc<InEffect>> = None;
    loop {
        let effect = Arc::clone(&effect_rx.borrow_and_update());
        // A DaemonSet new to the source may already run under the built-in controller: its
        // pods must be in the caches before anything is planned for it, or every node would
        // get a second pod. Its selector is watched too, and the pass waits for its first list.
        if !watched_for
            .as_ref()
            .is_some_and(|w| Arc::ptr_eq(w, &effect))
        {
            match cluster
                .watch_pods(&adoption_selectors(&effect.desired))
                .await
            {
                Ok(true) => tracing::info!(
                    "the source has DaemonSets whose existing pods were not watched; they are now"
                ),
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, "cannot watch the pods of the source's new DaemonSets; nothing is written until it can");
                    tokio::select! {
                        _ = tokio::time::sleep(MAX_BACKOFF / 6) => continue,
                        _ = shutdown.wait_for(|s| *s) => break,
                    }
                }
            }
        }
        if effect.desired.iter().any(|d| !d.config.is_empty())
            && let Err(e) = cluster.watch_config_copies().await
        {
            tracing::error!(error = %e, "cannot watch the copies of the source's ConfigMaps and Secrets; nothing is written until it can");
            tokio::select! {
                _ = tokio::time::sleep(MAX_BACKOFF / 6) => continue,
                _ = shutdown.wait_for(|s| *s) => break,
            }
        }
        watched_for = Some(Arc::clone(&effect));
        let outcome = reconciler.pass(&mut cluster, &effect, &gate).await;
        if let Some(backoff) = outcome.backoff {
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.wait_for(|s| *s) => break,
            }
        }
        let wake = outcome
            .next_deadline
            .and_then(|t| Duration::try_from(t.duration_since(Timestamp::now())).ok())
            .unwrap_or(RESYNC)
            .min(RESYNC)
            .min(reconciler.until_resync());
        tokio::select! {
            _ = cluster.changed() => {}
            _ = effect_rx.changed() => {}
            _ = leader_changed.notified() => {}
            _ = lease_fetch.notified() => {
                tracing::info!("another replica received a webhook: fetching");
                fetch.notify_one();
            }
            _ = relay.notified() => {
                if let Some(l) = leadership.as_ref().filter(|l| !l.is_leader()) {
                    let asked = tokio::time::timeout(Duration::from_secs(5), l.request_fetch("webhook")).await;
                    match asked {
                        Ok(Ok(())) => tracing::info!("webhook relayed to the leader through the lease"),
                        Ok(Err(e)) => tracing::warn!(error = %e, "cannot relay the webhook to the leader; it fetches within --interval"),
                        Err(_) => tracing::warn!("relaying the webhook to the leader timed out; it fetches within --interval"),
                    }
                }
            }
            _ = tokio::time::sleep(wake) => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    tracing::info!("shutting down: no new writes; releasing the lease");
    drop(gate);
    cluster.flush_events().await;
    finish(server, source_task, leadership).await
}

/// Resolves when the flag turns true (or its sender is gone).
async fn until_true(mut flag: watch::Receiver<bool>) {
    let _ = flag.wait_for(|s| *s).await;
}

/// Releases the lease, lets the HTTP server finish its requests, and stops the source.
async fn finish(
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    source: tokio::task::JoinHandle<()>,
    leadership: Option<Leadership>,
) -> Result<()> {
    if let Some(l) = leadership {
        l.release().await;
    }
    source.abort();
    match tokio::time::timeout(Duration::from_secs(3), server).await {
        Ok(Ok(Err(e))) => tracing::warn!(error = %e, "the HTTP listener failed while stopping"),
        Err(_) => tracing::warn!("the HTTP listener did not stop within 3s"),
        _ => {}
    }
    tracing::info!("stopped");
    Ok(())
}

/// Reads the source on every trigger and publishes what is in effect.
#[allow(clippy::too_many_arguments)]
async fn follow_source(
    mut follower: Follower,
    interval: Duration,
    watch_paths: Vec<PathBuf>,
    fetch: Arc<Notify>,
    effect: watch::Sender<Arc<InEffect>>,
    metrics: Arc<Metrics>,
    ready: watch::Sender<Readiness>,
    shutdown: watch::Receiver<bool>,
) {
    if !watch_paths.is_empty() {
        let (fetch, shutdown) = (Arc::clone(&fetch), shutdown.clone());
        std::thread::spawn(move || {
            let watched = crate::source::watch::watch_paths(
                &watch_paths,
                crate::source::watch::DEBOUNCE,
                || {
                    fetch.notify_one();
                    !*shutdown.borrow()
                },
            );
            if let Err(e) = watched {
                tracing::warn!(error = %e, "cannot watch the manifests; polling only");
            }
        });
    }
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let why = tokio::select! {
            _ = ticker.tick() => "poll",
            _ = fetch.notified() => "trigger",
        };
        let started = Instant::now();
        let refreshed = tokio::task::spawn_blocking(move || {
            let change = follower.refresh();
            (follower, change)
        })
        .await;
        let Ok((back, change)) = refreshed else {
            tracing::error!("the source reader stopped unexpectedly");
            return;
        };
        follower = back;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let now = follower.in_effect();
        match &change {
            Change::Updated { revision } => {
                tracing::info!(
                    source = %follower.describe(),
                    revision = %short_revision(revision),
                    daemonsets = now.desired.len(),
                    invalid = now.invalid.len(),
                    rendered = now.rendered.as_deref().unwrap_or("no"),
                    trigger = why,
                    elapsed_ms,
                    "source updated"
                );
                for why in now.invalid.values() {
                    tracing::warn!(error = %why, "a DaemonSet in the source is invalid");
                }
                // The repository label is the repository: `URL @ REF` is no URL.
                metrics.source(
                    now.record
                        .repository
                        .as_deref()
                        .unwrap_or(follower.describe()),
                    now.revision.as_deref().map(short_revision).unwrap_or(""),
                );
            }
            Change::Unchanged if why == "poll" => {
                tracing::debug!(trigger = why, elapsed_ms, "source unchanged");
            }
            Change::Unchanged => {
                tracing::info!(
                    revision = %now.revision.as_deref().map(short_revision).unwrap_or(""),
                    trigger = why,
                    elapsed_ms,
                    "source read on request: unchanged"
                );
            }
            Change::Failed(error) => {
                metrics.source_error();
                match now.revision.as_deref() {
                    Some(revision) => tracing::error!(
                        source = %follower.describe(),
                        error = %error,
                        in_effect = %short_revision(revision),
                        "cannot use the source; the last good state stays in effect and nothing is pruned"
                    ),
                    None => tracing::error!(
                        source = %follower.describe(),
                        error = %error,
                        retry_in = ?interval,
                        "cannot read the source yet; nothing is written until it can be read"
                    ),
                }
                if !follower.has_read() {
                    let _ = ready.send(Readiness::NotReady(format!(
                        "the source has not been read yet: {error}"
                    )));
                }
            }
        }
        if change != Change::Unchanged {
            effect.send_replace(Arc::new(now.clone()));
        }
    }
}

/// Who may write, and the pod-write metric: every write of the executor goes through it.
struct Gate<'l> {
    metrics: Arc<Metrics>,
    leadership: Option<&'l Leadership>,
    stopping: Arc<AtomicBool>,
    dry_run: bool,
}

impl Gate<'_> {
    /// Whether this replica may write now; the error says why not.
    fn check(&self) -> Result<(), ClusterError> {
        if self.stopping.load(Ordering::SeqCst) {
            return Err(ClusterError::Stopped("shutting down: no new writes".into()));
        }
        if self.dry_run {
            return Err(ClusterError::Stopped(
                "--dry-run: nothing is written".into(),
            ));
        }
        match self.leadership {
            Some(l) if !l.is_leader() => Err(ClusterError::Stopped(
                "not the leader (or the lease could not be renewed in time): no writes".into(),
            )),
            _ => Ok(()),
        }
    }

    fn may_write(&self) -> bool {
        self.check().is_ok()
    }

    /// Each of `n` writes of a batch stopped, for the one reason this replica may not write
    /// now; `None` when it may (the batch is sent).
    fn stops_batch<T>(&self, n: usize) -> Option<Vec<Result<T, ClusterError>>> {
        let why = self.check().err()?.to_string();
        Some(
            (0..n)
                .map(|_| Err(ClusterError::Stopped(why.clone())))
                .collect(),
        )
    }
}

/// The cluster as the executor sees it from `sync`: every write checked against the gate
/// just before it is sent, and counted.
struct Gated<'a, 'l> {
    inner: &'a mut KubeCluster,
    gate: &'a Gate<'l>,
}

impl Cluster for Gated<'_, '_> {
    async fn observe(&mut self) -> Result<ClusterState, ClusterError> {
        self.inner.observe().await
    }

    async fn create_pod(&mut self, pod: Pod) -> Result<String, ClusterError> {
        self.gate.check()?;
        let result = self.inner.create_pod(pod).await;
        self.gate.metrics.pod_write(PodVerb::Create, result.is_ok());
        result
    }

    async fn create_pods(&mut self, pods: Vec<Pod>) -> Vec<Result<String, ClusterError>> {
        if let Some(stopped) = self.gate.stops_batch(pods.len()) {
            return stopped;
        }
        let results = self.inner.create_pods(pods).await;
        for r in &results {
            self.gate.metrics.pod_write(PodVerb::Create, r.is_ok());
        }
        results
    }

    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        self.gate.check()?;
        let result = self.inner.delete_pod(namespace, name).await;
        let ok = matches!(result, Ok(()) | Err(ClusterError::NotFound { .. }));
        self.gate.metrics.pod_write(PodVerb::Delete, ok);
        result
    }

    async fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &crate::cluster::ImagePatch,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.patch_pod_images(namespace, name, patch).await
    }

    async fn set_pod_condition(
        &mut self,
        namespace: &str,
        name: &str,
        condition: &str,
        status: bool,
        resource_version: Option<&str>,
    ) -> Result<String, ClusterError> {
        self.gate.check()?;
        self.inner
            .set_pod_condition(namespace, name, condition, status, resource_version)
            .await
    }

    async fn ensure_record(
        &mut self,
        daemonset: &DaemonSet,
        source: &RecordSource,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.ensure_record(daemonset, source).await
    }

    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &RecordStatus,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.write_status(namespace, name, status).await
    }

    async fn write_statuses(
        &mut self,
        statuses: Vec<(String, String, RecordStatus)>,
    ) -> Vec<Result<(), ClusterError>> {
        if let Some(stopped) = self.gate.stops_batch(statuses.len()) {
            return stopped;
        }
        self.inner.write_statuses(statuses).await
    }

    async fn emit_event(&mut self, event: Event) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.emit_event(event).await
    }

    async fn patch_pod_metadata(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &crate::cluster::MetadataPatch,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.patch_pod_metadata(namespace, name, patch).await
    }

    async fn delete_daemonset(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.delete_daemonset(namespace, name, uid).await
    }

    async fn apply_daemonset(&mut self, daemonset: &DaemonSet) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.apply_daemonset(daemonset).await
    }

    async fn delete_record(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.delete_record(namespace, name).await
    }

    async fn create_config_copy(
        &mut self,
        copy: &crate::manifest::config::ConfigCopy,
        owner: &crate::plan::render::PodOwner,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.create_config_copy(copy, owner).await
    }

    async fn delete_config_copy(
        &mut self,
        copy: &crate::cluster::ObservedCopy,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner.delete_config_copy(copy).await
    }

    async fn annotate_record(
        &mut self,
        namespace: &str,
        name: &str,
        annotations: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<(), ClusterError> {
        self.gate.check()?;
        self.inner
            .annotate_record(namespace, name, annotations)
            .await
    }

    async fn remove_node_taint(
        &mut self,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
    ) -> Result<bool, ClusterError> {
        self.gate.check()?;
        self.inner.remove_node_taint(node, key, effect).await
    }

    async fn wait_for_change(&mut self, deadline: Timestamp) -> Result<bool, ClusterError> {
        self.inner.wait_for_change(deadline).await
    }
}

/// What a pass leaves for the loop.
struct PassOutcome {
    /// When a deadline (progress deadline, minReadySeconds) next expires.
    next_deadline: Option<Timestamp>,
    /// Wait this long before the next pass: writes failed.
    backoff: Option<Duration>,
}

/// One reconcile pass after another, with what must outlive a pass.
struct Reconciler {
    executor: Executor,
    apply: ApplyOptions,
    metrics: Arc<Metrics>,
    /// DaemonSets with series in the metrics.
    known: BTreeSet<Key>,
    /// Passes in a row whose writes failed.
    failures: u32,
    /// Passes in a row whose writes met only objects changed since they were observed.
    conflicts: u32,
    mass_prune_warned: bool,
    /// DaemonSets this replica has written pods for since their last `RolloutComplete`.
    rolling: BTreeSet<Key>,
    /// The steps last logged as not written (dry run, standby), so each is logged once:
    /// creates and deletes by DaemonSet.
    unwritten: BTreeMap<Key, (usize, usize)>,
    /// Other daemons' Leases named by records, as last read: (when, lapsed).
    leases: BTreeMap<String, (Instant, bool)>,
    /// The incremental planner and what it remembers (`--reconcile incremental`).
    incremental: Option<Incremental>,
}

/// What an incremental daemon remembers between passes.
struct Incremental {
    planner: plan::incremental::Incremental,
    /// How often everything is re-planned and compared.
    resync: Duration,
    /// When everything was last re-planned.
    last_full: Instant,
    /// When each DaemonSet's next deadline expires (a progress deadline, minReadySeconds, a
    /// timed pause): it is woken then.
    deadlines: BTreeMap<Key, Timestamp>,
    /// DaemonSets changes were left for until then ([`plan::incremental::Incremental::defer`]:
    /// pods' readiness and the like, where it moves only their counters and reports), and
    /// those whose status write of counters was held until then: woken a few per pass.
    deferred: BTreeMap<Key, Timestamp>,
    /// How long such changes may wait: the status interval, as their status write would
    /// (`None`: they are planned at once).
    defer_for: Option<jiff::SignedDuration>,
    /// The source last planned, to tell which DaemonSets a new one changed.
    planned: Option<Arc<InEffect>>,
    /// This replica could write in the last pass (becoming able to wakes everything).
    wrote: bool,
    /// The other daemons' Leases found lapsed in the last pass.
    expired: BTreeSet<String>,
    /// The last pass failed: the next one re-plans everything.
    retry: bool,
}

impl Incremental {
    /// What changed since the last pass, besides the caches' changes and lapsed Leases: the
    /// source's DaemonSets, the deadlines that expired, this replica's right to write, the
    /// last pass's failure.
    fn changes(&mut self, effect: &Arc<InEffect>, now: Timestamp, may_write: bool) -> Changes {
        let mut changes = Changes::default();
        match &self.planned {
            Some(old) if Arc::ptr_eq(old, effect) => {}
            Some(old) => {
                let before: BTreeMap<Key, &plan::Desired> =
                    old.desired.iter().map(|d| (d.key(), d)).collect();
                let (errors_before, errors_now) = (old.source_errors(), effect.source_errors());
                for d in &effect.desired {
                    let key = d.key();
                    let same = before.get(&key).is_some_and(|b| {
                        b.daemonset == d.daemonset && b.source == d.source && b.config == d.config
                    });
                    if !same {
                        changes.daemonsets.insert(key.clone());
                    }
                    if errors_before.get(&key) != errors_now.get(&key) {
                        changes.wake.insert(key);
                    }
                }
            }
            None => changes.everything = true,
        }
        self.planned = Some(Arc::clone(effect));
        changes.wake.extend(
            self.deadlines
                .iter()
                .filter(|(_, t)| **t <= now)
                .map(|(k, _)| k.clone()),
        );
        // The deferred DaemonSets due, the longest waiting first, a few per pass: under churn
        // they come due together, and a pass planning them all would hold up the event that
        // arrives meanwhile; the rest follow in the passes right after.
        let mut due: Vec<(Timestamp, Key)> = self
            .deferred
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(k, t)| (*t, k.clone()))
            .collect();
        due.sort();
        for (_, k) in due.into_iter().take(DEFERRED_PER_PASS) {
            self.deferred.remove(&k);
            changes.wake.insert(k);
        }
        if may_write && !self.wrote || self.retry {
            changes.everything = true;
        }
        self.wrote = may_write;
        self.retry = false;
        changes
    }
}

/// How many deferred DaemonSets one pass wakes at most (`Incremental::deferred`).
const DEFERRED_PER_PASS: usize = 4;

/// The earlier of two instants, either maybe absent.
fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How long a read of another daemon's Lease is trusted.
const LEASE_READ_TTL: Duration = Duration::from_secs(5);

impl Reconciler {
    /// How long until the next full re-plan of an incremental daemon (`--resync`).
    fn until_resync(&self) -> Duration {
        self.incremental.as_ref().map_or(RESYNC, |inc| {
            inc.resync.saturating_sub(inc.last_full.elapsed())
        })
    }

    /// The Leases of other `sync` daemons named by the records that lapsed: what they drove,
    /// this daemon may take (read at most every [`LEASE_READ_TTL`]).
    async fn expired_leases(
        &mut self,
        cluster: &KubeCluster,
        state: &ClusterState,
    ) -> BTreeSet<String> {
        let ours = self
            .apply
            .source
            .writer
            .as_ref()
            .and_then(|w| w.lease.clone());
        let Some(ours) = ours else {
            return BTreeSet::new();
        };
        let theirs: BTreeSet<String> = state
            .records
            .iter()
            .filter_map(|r| r.source.as_ref()?.writer.as_ref())
            .filter(|w| w.is_sync())
            .filter_map(|w| w.lease.clone())
            .filter(|l| *l != ours)
            .collect();
        self.leases.retain(|l, _| theirs.contains(l));
        let mut expired = BTreeSet::new();
        for lease in theirs {
            let fresh = self
                .leases
                .get(&lease)
                .filter(|(at, _)| at.elapsed() < LEASE_READ_TTL)
                .map(|(_, lapsed)| *lapsed);
            let lapsed = match fresh {
                Some(l) => l,
                None => {
                    let l = super::leader::lapsed(&cluster.client(), &lease).await;
                    self.leases.insert(lease.clone(), (Instant::now(), l));
                    l
                }
            };
            if lapsed {
                expired.insert(lease);
            }
        }
        expired
    }
}

impl Reconciler {
    async fn pass(
        &mut self,
        cluster: &mut KubeCluster,
        effect: &Arc<InEffect>,
        gate: &Gate<'_>,
    ) -> PassOutcome {
        let started = Instant::now();
        let mut opts = self.apply.clone();
        opts.source = RecordSource {
            writer: self.apply.source.writer.clone(),
            ..effect.record.clone()
        };
        opts.source_errors = effect.source_errors();
        let (state, plan) = if self.incremental.is_some() {
            match self
                .plan_incrementally(cluster, effect, gate, &mut opts)
                .await
            {
                Some((state, plan)) => (state, Some(plan)),
                // Nothing to plan: no write either (orphans are pruned when the source
                // drops their DaemonSet, or when anything else wakes a pass).
                None => {
                    self.metrics
                        .reconcile(ReconcileResult::Success, started.elapsed());
                    return PassOutcome {
                        next_deadline: self.next_deadline(None),
                        backoff: None,
                    };
                }
            }
        } else {
            let state = match cluster.observe().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "cannot observe the cluster");
                    self.metrics
                        .reconcile(ReconcileResult::Error, started.elapsed());
                    return self.failed();
                }
            };
            opts.expired_leases = self.expired_leases(cluster, &state).await;
            (state, None)
        };
        let planned = started.elapsed();
        let a = match plan {
            None => self.executor.assess(&effect.desired, &state, &opts),
            Some(plan) => {
                let a = self
                    .executor
                    .assess_plan(&effect.desired, &state, &opts, plan);
                if let Some(inc) = self.incremental.as_mut() {
                    let woken: BTreeSet<Key> = a
                        .plan
                        .daemonsets
                        .iter()
                        .map(|d| (d.namespace.clone(), d.name.clone()))
                        .collect();
                    match a.next_wake() {
                        Some(t) => inc.deadlines.extend(woken.iter().map(|k| (k.clone(), t))),
                        None => inc.deadlines.retain(|k, _| !woken.contains(k)),
                    }
                }
                a
            }
        };
        let mut seen = BTreeSet::new();
        for ds in &a.plan.daemonsets {
            let key = (ds.namespace.clone(), ds.name.clone());
            self.metrics.observe_daemonset(
                &ds.namespace,
                &ds.name,
                &ds.status,
                a.halted.contains(&key),
            );
            self.metrics.observe_hold(
                &ds.namespace,
                &ds.name,
                a.paused.contains(&key),
                a.frozen.contains(&key),
            );
            self.metrics.rollout_stalled(
                &ds.namespace,
                &ds.name,
                a.is_stalled(&ds.namespace, &ds.name),
            );
            seen.insert(key);
        }
        if let Some(inc) = &self.incremental {
            seen.extend(
                inc.planner
                    .plans()
                    .map(|d| (d.namespace.clone(), d.name.clone())),
            );
        }
        for (ns, name) in self.known.difference(&seen) {
            self.metrics.forget_daemonset(ns, name);
        }
        self.known = seen;
        if let Some(names) = &a.mass_prune {
            if !self.mass_prune_warned {
                tracing::error!(
                    daemonsets = %names.join(", "),
                    "--prune would delete the pods of several DaemonSets at once; refused \
                     without --allow-mass-prune (nothing is pruned)"
                );
            }
            self.mass_prune_warned = true;
        } else {
            self.mass_prune_warned = false;
        }
        if !gate.may_write() {
            let mut steps = self.unwritten.clone();
            for d in &a.plan.daemonsets {
                let key = (d.namespace.clone(), d.name.clone());
                steps.remove(&key);
                if !d.step.is_empty() {
                    steps.insert(key, (d.step.create.len(), d.step.delete.len()));
                }
            }
            steps.retain(|k, _| self.known.contains(k));
            if steps != self.unwritten {
                let why = gate
                    .check()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                for ((ns, name), (create, delete)) in &steps {
                    if gate.dry_run {
                        tracing::info!(daemonset = %format!("{ns}/{name}"), would_create = create, would_delete = delete, "dry run: next step not written");
                    } else {
                        tracing::debug!(daemonset = %format!("{ns}/{name}"), would_create = create, would_delete = delete, reason = %why, "next step not written");
                    }
                }
                self.unwritten = steps;
            }
            self.metrics
                .reconcile(ReconcileResult::Success, started.elapsed());
            return PassOutcome {
                next_deadline: self.next_deadline(Some(&a)),
                backoff: None,
            };
        }
        let mut gated = Gated {
            inner: cluster,
            gate,
        };
        let assessed = started.elapsed();
        let acted = self.executor.act(&mut gated, &a, &state, &opts).await;
        tracing::debug!(
            daemonsets = a.plan.daemonsets.len(),
            plan_ms = planned.as_secs_f64() * 1e3,
            assess_ms = (assessed - planned).as_secs_f64() * 1e3,
            act_ms = (started.elapsed() - assessed).as_secs_f64() * 1e3,
            "pass timed"
        );
        // A status held back is written when due: its DaemonSet is looked at again then, a
        // few per pass as the deferred ones are. Under churn every DaemonSet's counters come
        // due together; one pass planning them all held up the event arriving meanwhile by
        // as long, and a pass planning them anyway (a node's) writes them on its way.
        let held_due = acted.status_held.values().min().copied();
        if let Some(inc) = self.incremental.as_mut() {
            for (key, due) in &acted.status_held {
                let at = inc.deferred.entry(key.clone()).or_insert(*due);
                *at = (*at).min(*due);
            }
        }
        if acted.executed {
            self.rolling
                .extend(a.stepping().map(|d| (d.namespace.clone(), d.name.clone())));
        } else if !self.rolling.is_empty() {
            let rolling = &self.rolling;
            let done = crate::apply::announce_complete(&mut gated, &a, |d| {
                rolling.contains(&(d.namespace.clone(), d.name.clone()))
            })
            .await;
            for key in done {
                tracing::info!(daemonset = %format!("{}/{}", key.0, key.1), "rollout complete");
                self.rolling.remove(&key);
            }
        }
        let errors: Vec<&ClusterError> = [&acted.step_error, &acted.status_error]
            .into_iter()
            .flatten()
            .filter(|e| !matches!(e, ClusterError::Stopped(_)))
            .collect();
        if !errors.is_empty()
            && errors
                .iter()
                .all(|e| matches!(e, ClusterError::Conflict(_)))
        {
            // An object changed between the observation and the write: nothing failed. Its
            // newer version wakes its DaemonSet as it arrives; the DaemonSets written are
            // looked at again shortly in any case, later after each conflict in a row.
            for e in &errors {
                tracing::info!(error = %e, "an object changed since it was observed: planned again with its newer version");
            }
            self.conflicts = self.conflicts.saturating_add(1);
            let again = crate::model::later(
                Timestamp::now(),
                jiff::SignedDuration::try_from(conflict_retry(self.conflicts)).unwrap_or_default(),
            );
            if let Some(inc) = self.incremental.as_mut() {
                for d in a.stepping() {
                    let at = inc
                        .deadlines
                        .entry((d.namespace.clone(), d.name.clone()))
                        .or_insert(again);
                    *at = (*at).min(again);
                }
            }
            self.metrics
                .reconcile(ReconcileResult::Success, started.elapsed());
            return PassOutcome {
                next_deadline: earliest(
                    earliest(self.next_deadline(Some(&a)), held_due),
                    Some(again),
                ),
                backoff: None,
            };
        }
        self.conflicts = 0;
        let error = errors
            .into_iter()
            .find(|e| !matches!(e, ClusterError::Conflict(_)));
        match error {
            Some(e) => {
                tracing::warn!(error = %e, "writes failed; the next pass retries");
                if let Some(inc) = self.incremental.as_mut() {
                    inc.retry = true;
                }
                self.metrics
                    .reconcile(ReconcileResult::Error, started.elapsed());
                let mut out = self.failed();
                out.next_deadline = earliest(self.next_deadline(Some(&a)), held_due);
                out
            }
            None => {
                self.failures = 0;
                self.metrics
                    .reconcile(ReconcileResult::Success, started.elapsed());
                PassOutcome {
                    next_deadline: earliest(self.next_deadline(Some(&a)), held_due),
                    backoff: None,
                }
            }
        }
    }

    /// The incremental part of a pass: what changed (the caches', the source's, deadlines,
    /// this replica's right to write, lapsed Leases), an observation of only the pods the
    /// DaemonSets it wakes concern, and their plans; `None` when nothing needs planning.
    /// Every `--resync`, everything is observed, planned afresh and compared.
    async fn plan_incrementally(
        &mut self,
        cluster: &mut KubeCluster,
        effect: &Arc<InEffect>,
        gate: &Gate<'_>,
        opts: &mut crate::apply::ApplyOptions,
    ) -> Option<(ClusterState, plan::Plan)> {
        let now = Timestamp::now();
        let pending = cluster.take_changes().await;
        let inc = self.incremental.as_mut()?;
        let mut changes = inc.changes(effect, now, gate.may_write());
        changes.merge(pending);
        let resync_due = inc.last_full.elapsed() >= inc.resync;
        if resync_due {
            // The comparison is of everything brought up to date: nothing waits.
            changes
                .wake
                .extend(std::mem::take(&mut inc.deferred).into_keys());
        } else if let Some(wait) = inc.defer_for {
            let due = crate::model::later(now, wait);
            let later = inc.planner.defer(&effect.desired, &mut changes);
            if !later.is_empty() {
                tracing::debug!(
                    daemonsets = later.len(),
                    "pods' status changed where it moves only counters: planned with the status write"
                );
            }
            for key in later {
                inc.deferred.entry(key).or_insert(due);
            }
        }
        // The pods the woken DaemonSets' plans read, decided on the nodes observed with them:
        // a DaemonSet that only needs the rows of the nodes that changed reads none.
        let planner = &inc.planner;
        let (mut state, scope) = cluster.observe_with(now, |nodes| {
            if resync_due || changes.everything {
                return Scope::everything();
            }
            let woken = planner.woken(&effect.desired, &changes);
            let woken = planner.needing_pods(&effect.desired, &changes, &woken, nodes);
            planner.scope(&effect.desired, &woken)
        });
        if scope.everything {
            // What reached the caches since the changes were taken is in this observation:
            // planned with it (a resync then compares plans of the same changes).
            changes.merge(cluster.observed_changes());
        }
        let expired = self.expired_leases(cluster, &state).await;
        let inc = self.incremental.as_mut()?;
        if expired != inc.expired {
            // What a lapsed daemon drove, this one may take: everything is looked at again.
            inc.expired.clone_from(&expired);
            changes.everything = true;
            if !scope.everything {
                state = cluster.observe_scoped(&Scope::everything(), now);
                changes.merge(cluster.observed_changes());
            }
        }
        opts.expired_leases = expired;
        let (woken, removed) = if resync_due {
            inc.last_full = Instant::now();
            let woken = resync(inc, &effect.desired, &state, &changes, &self.metrics);
            (woken, false)
        } else {
            let w = inc
                .planner
                .update(&effect.desired, &state.observed, &changes, state.now);
            for k in &w.removed {
                inc.deadlines.remove(k);
                inc.deferred.remove(k);
            }
            // Planned now: what waited for them is in this plan.
            inc.deferred.retain(|k, _| !w.daemonsets.contains(k));
            (w.daemonsets, !w.removed.is_empty())
        };
        if woken.is_empty() && !removed && !changes.everything {
            return None;
        }
        tracing::debug!(
            daemonsets = woken.len(),
            pods = state.observed.pods.len(),
            changed_pods = changes.pods.len(),
            statuses = changes.statuses.len(),
            nodes = changes.nodes.len(),
            usage = changes.usage.len(),
            images = changes.images.len(),
            records = changes.records.len(),
            woken_by_name = changes.wake.len(),
            everything = changes.everything,
            "planning the DaemonSets the changes concern"
        );
        let plan = inc.planner.plan_of(&woken, state.now);
        Some((state, plan))
    }

    /// When the next pass is due without an event: the first deadline of this pass's
    /// DaemonSets or, incrementally, of any DaemonSet (the others' were noted when they were
    /// last assessed).
    fn next_deadline(&self, a: Option<&crate::apply::Assessment<'_>>) -> Option<Timestamp> {
        match &self.incremental {
            Some(inc) => inc
                .deadlines
                .values()
                .chain(inc.deferred.values())
                .min()
                .copied(),
            None => a.and_then(|a| a.next_wake()),
        }
    }

    fn failed(&mut self) -> PassOutcome {
        if let Some(inc) = self.incremental.as_mut() {
            inc.retry = true;
        }
        self.failures = self.failures.saturating_add(1);
        let backoff = Duration::from_millis(500)
            .saturating_mul(1 << self.failures.min(10))
            .min(MAX_BACKOFF);
        PassOutcome {
            next_deadline: None,
            backoff: Some(backoff),
        }
    }
}

/// The full re-plan of `--resync`: the incremental plans, brought up to date with `changes`,
/// are compared with every DaemonSet planned afresh; each difference is logged as an error
/// and counted, and the fresh plans are kept. Returns every DaemonSet (all are assessed).
fn resync(
    inc: &mut Incremental,
    desired: &[plan::Desired],
    state: &ClusterState,
    changes: &Changes,
    metrics: &Metrics,
) -> BTreeSet<Key> {
    let started = Instant::now();
    inc.planner
        .update(desired, &state.observed, changes, state.now);
    let full = plan::plan(desired, &state.observed, inc.planner.policy(), state.now);
    let mismatches = inc.planner.compare(&full);
    for m in &mismatches {
        tracing::error!(
            daemonset = %format!("{}/{}", m.daemonset.0, m.daemonset.1),
            differs = %m.fields.join(", "),
            "the incremental plan differs from the full re-plan (a change was missed); the full plan is used"
        );
    }
    metrics.incremental_mismatch(mismatches.len() as u64);
    let woken = inc
        .planner
        .update(desired, &state.observed, &Changes::everything(), state.now);
    inc.deadlines.clear();
    inc.deferred.clear();
    tracing::info!(
        daemonsets = woken.daemonsets.len(),
        mismatches = mismatches.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "resync: every DaemonSet planned afresh and compared"
    );
    woken.daemonsets
}

#[cfg(test)]
mod tests {
    use super::{DEFERRED_PER_PASS, InEffect, Incremental, Key, conflict_retry};
    use crate::model::Timestamp;
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn conflicts_are_retried_within_milliseconds_and_less_often_while_they_repeat() {
        let ms = |n| conflict_retry(n).as_millis();
        assert_eq!(
            (1..=8).map(ms).collect::<Vec<_>>(),
            [50, 100, 200, 400, 800, 1600, 1600, 1600]
        );
        // Well before the backoff of a failed write (one second at first).
        assert!(conflict_retry(1) < Duration::from_secs(1));
    }

    #[test]
    fn deferred_daemonsets_come_due_a_few_per_pass_the_longest_waiting_first() {
        let effect = Arc::new(InEffect {
            desired: Vec::new(),
            invalid: BTreeMap::new(),
            error: None,
            record: Default::default(),
            revision: None,
            rendered: None,
        });
        let now: Timestamp = "2026-11-27T12:00:00Z".parse().expect("a time");
        let at = |ms: i64| now - jiff::SignedDuration::from_millis(ms);
        let key = |i: usize| ("fleet".to_string(), format!("agent-{i:02}"));
        let mut inc = Incremental {
            planner: crate::plan::incremental::Incremental::new(Default::default()),
            resync: Duration::from_secs(600),
            last_full: Instant::now(),
            deadlines: BTreeMap::new(),
            // Six due, the higher the number the longer waiting; one not yet.
            deferred: (0..6)
                .map(|i| (key(i), at(10 * i as i64)))
                .chain([(key(9), now + jiff::SignedDuration::from_secs(1))])
                .collect(),
            defer_for: Some(jiff::SignedDuration::from_secs(1)),
            planned: Some(Arc::clone(&effect)),
            wrote: false,
            expired: BTreeSet::new(),
            retry: false,
        };
        let first = inc.changes(&effect, now, false);
        let longest: BTreeSet<Key> = (2..6).map(key).collect();
        assert_eq!(DEFERRED_PER_PASS, 4);
        assert_eq!(first.wake, longest);
        assert!(!first.everything);
        // The rest, in the pass right after; the one not due stays.
        assert_eq!(
            inc.deferred.keys().cloned().collect::<BTreeSet<_>>(),
            BTreeSet::from([key(0), key(1), key(9)])
        );
        let second = inc.changes(&effect, now, false);
        assert_eq!(second.wake, BTreeSet::from([key(0), key(1)]));
        assert_eq!(inc.deferred.keys().collect::<Vec<_>>(), vec![&key(9)]);
    }
}

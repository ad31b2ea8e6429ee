//! `daemonsync sync`: the long-running daemon. The flags become [`SyncOptions`] here, once.

use super::EXIT_OK;
use super::source::SourceArgs;
use crate::apply::ApplyOptions;
use crate::cluster::{ClusterSpec, RecordSource, RecordWriter};
use crate::manifest::duration;
use crate::plan::Policy;
use crate::source::ManifestSource;
use crate::sync::http::{Webhook, read_secret};
use crate::sync::leader::{DEFAULT_LEASE_DURATION, LeaderOptions, default_identity};
use crate::sync::{Reconcile, SyncOptions};
use anyhow::{Result, bail};
use jiff::SignedDuration;
use std::time::Duration;

pub(crate) const SYNC_HELP: &str = "\
Examples:
  # Keep the current kubeconfig context converged on the main branch, polling every minute
  daemonsync sync --repo https://github.com/acme/fleet --path daemonsets --ref main

  # Against `daemonsync sim serve` (see docs/sim-serve.md), from a local directory watched for edits
  daemonsync sync --manifests examples/manifests --listen 127.0.0.1:8080

  # Two replicas in a cluster (examples/deploy/): only the lease holder writes; pushes
  # trigger a fetch at once through the signed GitHub webhook
  daemonsync sync --repo https://github.com/acme/fleet --path daemonsets --ref main \\
    --leader-election --lease-namespace daemonsync-system \\
    --webhook-secret-file /etc/daemonsync/webhook-secret --log-format json

  # Plan and report continuously, never write
  daemonsync sync --repo . --path examples/manifests --dry-run

HTTP (one listener, --listen):
  GET  /healthz   200 while the process runs
  GET  /readyz    200 once the caches synced and the source was read; 503 and the reason before
  GET  /metrics   Prometheus metrics (daemonsync_daemonset_status_*, daemonsync_rollout_halted,
                  daemonsync_rollout_paused, daemonsync_rollout_frozen,
                  daemonsync_reconcile_total, daemonsync_pod_writes_total, daemonsync_leader, ...)
  POST /webhook   GitHub push events, signed with the secret (X-Hub-Signature-256); 404 when
                  no secret is configured

A DaemonSet that halts, is invalid in a new commit, or keeps getting API errors does not stop
the others. A source that fails keeps the last good commit running and never prunes.
`daemonsync pause NAME -n NAMESPACE` pauses one DaemonSet (no pod replaced, new nodes still
served); `daemonsync freeze NAME -n NAMESPACE` stops every write for it.

Exit status:
  0  stopped by SIGTERM or SIGINT (after releasing the lease)
  1  could not start (bad flags, a port in use, an unreadable webhook secret, no usable
     cluster)";

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (for log pipelines).
    Json,
}

/// Flags of `daemonsync sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Where the manifests come from (a git repository is fetched every --interval and on a
    /// webhook; a directory is watched).
    #[command(flatten)]
    pub source: SourceArgs,
    /// The cluster: `kube` (the current kubeconfig context, or the in-cluster config) or
    /// `kube:CONTEXT`.
    #[arg(long, short = 'c', value_name = "CLUSTER", default_value = "kube")]
    pub cluster: ClusterSpec,
    /// How often the source is read again (a webhook or a file change triggers a read at
    /// once).
    #[arg(long, default_value = "1m", value_name = "DURATION", value_parser = positive_duration)]
    pub interval: Duration,
    /// The address of the one HTTP listener (health, readiness, metrics, webhook).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: String,
    /// A file holding the GitHub webhook secret (else env DAEMONSYNC_WEBHOOK_SECRET); without
    /// one, POST /webhook answers 404.
    #[arg(long, value_name = "FILE")]
    pub webhook_secret_file: Option<std::path::PathBuf>,
    /// Delete the pods of managed DaemonSets that are no longer in the source (never when
    /// the source failed or rendered nothing).
    #[arg(long)]
    pub prune: bool,
    /// Allow --prune to remove more than one DaemonSet at once.
    #[arg(long, requires = "prune")]
    pub allow_mass_prune: bool,
    /// Plan and report (logs, metrics), never write.
    #[arg(long)]
    pub dry_run: bool,
    /// Run as one of several replicas: only the holder of a coordination.k8s.io Lease writes.
    #[arg(long)]
    pub leader_election: bool,
    /// The Lease's namespace (default: env POD_NAMESPACE, else `default`).
    #[arg(
        long,
        value_name = "NAMESPACE",
        env = "POD_NAMESPACE",
        default_value = "default"
    )]
    pub lease_namespace: String,
    /// The Lease's name.
    #[arg(long, value_name = "NAME", default_value = "daemonsync")]
    pub lease_name: String,
    /// How long a lease holds without renewal (the takeover time after a crash).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub lease_duration: Option<Duration>,
    /// This replica's identity: the lease holder, the User-Agent and the field manager
    /// (default: env POD_NAME, else the hostname).
    #[arg(long, value_name = "NAME")]
    pub identity: Option<String>,
    /// Follow a branch that was force-pushed to a history not descending from the commit in
    /// effect (by default the last good commit stays in effect and the error is reported).
    #[arg(long)]
    pub allow_history_rewrites: bool,
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Halt a DaemonSet whose new pods stay unavailable this long on Ready nodes.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = duration::parse)]
    pub progress_deadline: SignedDuration,
    /// How a change is reconciled: `incremental` re-plans the DaemonSets it concerns;
    /// `full` re-plans every DaemonSet on every change (kept for comparison in benchmarks).
    #[arg(long, value_enum, default_value_t = ReconcileArg::Incremental)]
    pub reconcile: ReconcileArg,
    /// How often every DaemonSet is re-planned afresh and compared with the incremental
    /// plans (a difference is logged as an error and counted in
    /// daemonsync_incremental_mismatch_total).
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = positive_duration)]
    pub resync: Duration,
}

/// `--reconcile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReconcileArg {
    /// Re-plan the DaemonSets a change concerns.
    Incremental,
    /// Re-plan every DaemonSet on every change.
    Full,
}

fn positive_duration(s: &str) -> Result<Duration, String> {
    duration::parse_positive(s, "30s, 1m")
}

impl SyncArgs {
    /// The daemon's options; every flag is checked here, before anything starts.
    pub fn options(&self) -> Result<SyncOptions> {
        let context = match &self.cluster {
            ClusterSpec::Kube(context) => context.clone(),
            other => bail!(
                "sync runs against a live cluster (--cluster kube or kube:CONTEXT), not {other}; \
                 for a local try, serve a simulated cluster with `daemonsync sim serve` and \
                 point KUBECONFIG at it"
            ),
        };
        let mut source = self.source.source();
        if let ManifestSource::Git(g) = &mut source {
            g.progress = false;
        }
        let watch = match &source {
            ManifestSource::Local(_) => self.source.manifests.clone(),
            ManifestSource::Git(_) => Vec::new(),
        };
        let branch = self.source.reference.as_deref().and_then(|r| {
            let r = r.strip_prefix("refs/heads/").unwrap_or(r);
            (r != "HEAD").then(|| r.to_string())
        });
        let webhook = read_secret(self.webhook_secret_file.as_deref())?
            .map(|secret| Webhook { secret, branch });
        let identity = self.identity.clone().unwrap_or_else(default_identity);
        let leader = self.leader_election.then(|| {
            let mut l = LeaderOptions::new(self.lease_namespace.clone());
            l.name = self.lease_name.clone();
            l.identity = identity.clone();
            l.lease_duration = self.lease_duration.unwrap_or(DEFAULT_LEASE_DURATION);
            l
        });
        Ok(SyncOptions {
            source,
            load: self.source.load_options(),
            kube_version: self.source.load.kube_version,
            watch,
            allow_history_rewrites: self.allow_history_rewrites,
            context,
            interval: self.interval,
            listen: self.listen.clone(),
            webhook,
            reconcile: match self.reconcile {
                ReconcileArg::Incremental => Reconcile::Incremental,
                ReconcileArg::Full => Reconcile::Full,
            },
            resync: self.resync,
            apply: ApplyOptions {
                dry_run: self.dry_run,
                progress_deadline: self.progress_deadline,
                prune: self.prune,
                allow_mass_prune: self.allow_mass_prune,
                // A daemon reports no projected waves: it does not make them.
                policy: Policy {
                    leave_out_waves: true,
                    ..Policy::default()
                },
                timeout: None,
                stop_after_writes: None,
                // The daemon keeps watching a blocked DaemonSet: its record says so.
                record_blocked: true,
                // Counters churn with every pod: written at most once a second.
                status_interval: Some(SignedDuration::from_secs(1)),
                // The records name this daemon, by its Lease: another replica holding it is
                // the same writer.
                source: RecordSource {
                    writer: Some(RecordWriter::sync(
                        &identity,
                        leader
                            .as_ref()
                            .map(|l| format!("{}/{}", l.namespace, l.name)),
                    )),
                    ..RecordSource::default()
                },
                ..ApplyOptions::default()
            },
            leader,
            identity,
        })
    }
}

/// Runs `daemonsync sync` until SIGTERM or SIGINT; returns the exit code.
pub async fn run(args: &SyncArgs) -> Result<i32> {
    let opts = args.options()?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let signal = wait_for_signal().await;
        tracing::info!(signal, "stopping");
        let _ = tx.send(true);
        // A second signal, or the budget running out, ends it at once.
        tokio::select! {
            _ = wait_for_signal() => {}
            _ = tokio::time::sleep(crate::sync::daemon::SHUTDOWN_BUDGET) => {
                tracing::warn!("shutdown took too long; exiting");
            }
        }
        std::process::exit(EXIT_OK);
    });
    crate::sync::run(opts, rx).await?;
    Ok(EXIT_OK)
}

/// Waits for SIGTERM or SIGINT; returns its name.
async fn wait_for_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = tokio::signal::ctrl_c() => "SIGINT",
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    }
}

//! The command line: clap structures describe the flags; [`run`] validates them into a
//! configuration, calls the library and returns the exit code. `main` only maps that code.

mod apply;
mod github;
mod plan;
mod release;
mod render;
mod rollout;
mod sim;
mod snapshot;
pub(crate) mod source;
mod status;
mod sync;

pub use apply::{ApplyArgs, EXIT_HALTED, load_desired};
pub use plan::{
    Output, PART_BREAK, PlanArgs, PlanOptions, PlanRun, ReportOptions, compute, execute, print,
};
pub use release::ReleaseArgs;
pub use render::RenderArgs;
pub use rollout::RolloutArgs;
pub use sim::{ServeArgs, SimArgs, SimCommand};
pub use snapshot::{SnapshotArgs, to_yaml as snapshot_yaml};
pub use status::{StatusArgs, StatusOutput};
pub use sync::{LogFormat, SyncArgs};

use crate::model::Timestamp;
use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};

/// Exit code: success, and (for `plan`) nothing would change.
pub const EXIT_OK: i32 = 0;
/// Exit code: an error; nothing was planned.
pub const EXIT_ERROR: i32 = 1;
/// Exit code of `plan`: the plan has changes (terraform's `-detailed-exitcode` convention).
pub const EXIT_CHANGES: i32 = 2;

/// GitOps for Kubernetes DaemonSets, node by node.
#[derive(Debug, Parser)]
#[command(name = "daemonsync", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show, node by node, what reconciling the manifests would do.
    #[command(after_help = plan::PLAN_HELP)]
    Plan(Box<PlanArgs>),
    /// Print the DaemonSets as daemonsync reads them (validated, defaulted), or the pod one
    /// would create on a node.
    #[command(after_help = render::RENDER_HELP)]
    Render(RenderArgs),
    /// Show the observed state of DaemonSets, per node on request.
    #[command(after_help = status::STATUS_HELP)]
    Status(StatusArgs),
    /// Write the observed state of a cluster as a snapshot, pruned to what planning needs.
    #[command(after_help = snapshot::SNAPSHOT_HELP)]
    Snapshot(SnapshotArgs),
    /// Roll the manifests out to a cluster, node by node within each DaemonSet's budgets;
    /// converge once, then exit with a summary.
    #[command(after_help = apply::APPLY_HELP)]
    Apply(ApplyArgs),
    /// Keep a cluster converged on a git branch (or a watched directory): the long-running
    /// daemon, with health, metrics, a webhook and leader election.
    #[command(after_help = sync::SYNC_HELP)]
    Sync(Box<SyncArgs>),
    /// Work with the simulated cluster: `sim serve` serves it as a Kubernetes API server.
    Sim(SimArgs),
    /// Let a progressive rollout pass the pause after its current stage (the canary, a
    /// wave): writes daemonsync.io/promote on the DaemonSet's ManagedDaemonSet record.
    #[command(after_help = rollout::PROMOTE_HELP)]
    Promote(RolloutArgs),
    /// Stop replacing a DaemonSet's pods until `daemonsync resume` (daemonsync.io/paused on
    /// its record); nodes without a pod still get the stable revision's.
    #[command(after_help = rollout::PAUSE_HELP)]
    Pause(RolloutArgs),
    /// Undo `daemonsync pause` and `daemonsync abort`: the rollout continues where it stands.
    #[command(after_help = rollout::RESUME_HELP)]
    Resume(RolloutArgs),
    /// Stop every write for a DaemonSet, for an incident, until `daemonsync unfreeze`
    /// (daemonsync.io/frozen on its record).
    #[command(after_help = rollout::FREEZE_HELP)]
    Freeze(RolloutArgs),
    /// Undo `daemonsync freeze`: daemonsync writes for the DaemonSet again.
    #[command(after_help = rollout::UNFREEZE_HELP)]
    Unfreeze(RolloutArgs),
    /// Hold every node of a DaemonSet where it is (daemonsync.io/abort on its record) and
    /// show which nodes run which revision.
    #[command(after_help = rollout::ABORT_HELP)]
    Abort(RolloutArgs),
    /// Give a managed DaemonSet back to the built-in DaemonSet controller (an apps/v1
    /// DaemonSet again), with no pod restarted.
    #[command(after_help = release::RELEASE_HELP)]
    Release(ReleaseArgs),
}

impl Cli {
    /// Parses the command line like [`Parser::parse`], except that a usage error exits with
    /// [`EXIT_ERROR`] (clap's default, 2, would read as "the plan has changes").
    pub fn parse_or_exit() -> Cli {
        match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => {
                let code = if e.use_stderr() { EXIT_ERROR } else { EXIT_OK };
                let _ = e.print();
                std::process::exit(code);
            }
        }
    }
}

/// Parses an RFC 3339 instant for `--now`.
pub fn parse_now(s: &str) -> Result<Timestamp> {
    s.parse::<Timestamp>().with_context(|| {
        format!("invalid --now {s:?}: expected an RFC 3339 instant such as 2026-01-01T00:00:00Z")
    })
}

/// Logs to stderr as `RUST_LOG` says (e.g. `RUST_LOG=daemonsync=debug`). Off by default, so
/// a command prints only its report and its errors, except for `sync`, a daemon whose log is
/// its report (`daemonsync=info` by default, as text or, with `--log-format json`, one JSON
/// object per line). Log lines never carry credentials: URLs are redacted before they are
/// logged.
pub fn init_logging(cli: &Cli) {
    use tracing_subscriber::EnvFilter;
    let (default, json) = match &cli.command {
        Command::Sync(args) => ("daemonsync=info", args.log_format == LogFormat::Json),
        _ => ("off", false),
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init()
    };
}

/// The one tokio runtime of the process, built by `main`: every command runs on it (the live
/// backend, `sync`, `sim serve`, the Action's HTTP client); the simulated cluster is called
/// from it synchronously.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("daemonsync")
        .enable_all()
        .build()
}

/// Runs the command line and returns the exit code. Errors are printed to stderr.
pub async fn run(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args).await,
        Command::Render(args) => render::run(&args).await,
        Command::Status(args) => status::run(&args).await,
        Command::Snapshot(args) => snapshot::run(&args).await,
        Command::Apply(args) => apply::run(&args).await,
        Command::Sync(args) => sync::run(&args).await,
        Command::Sim(args) => sim::run(&args).await,
        Command::Promote(args) => rollout::run(rollout::Verb::Promote, &args).await,
        Command::Pause(args) => rollout::run(rollout::Verb::Pause, &args).await,
        Command::Resume(args) => rollout::run(rollout::Verb::Resume, &args).await,
        Command::Freeze(args) => rollout::run(rollout::Verb::Freeze, &args).await,
        Command::Unfreeze(args) => rollout::run(rollout::Verb::Unfreeze, &args).await,
        Command::Abort(args) => rollout::run(rollout::Verb::Abort, &args).await,
        Command::Release(args) => release::run(&args).await,
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => EXIT_OK,
        Err(e) => {
            eprintln!("error: {}", message(&e));
            EXIT_ERROR
        }
    }
}

/// The error and its causes, skipping a cause whose text the message already contains (many
/// errors here quote their source in their own text).
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

//! `daemonsync status`: the observed state of DaemonSets, per node on request.
//!
//! The DaemonSets are those of `--manifests` (as daemonsync would manage them) and every live
//! `apps/v1` DaemonSet in the observed state. Their status counters and node states are computed
//! by the planner from the observed nodes and pods, so they read the same for both.

use super::plan::color_enabled;
use super::source::{LoadArgs, load_desired_paths};
use crate::cluster::ClusterSpec;
use crate::manifest;
use crate::model::Timestamp;
use crate::plan::{self, Desired, Policy};
use crate::report;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

pub(crate) const STATUS_HELP: &str = "\
Examples:
  # Every DaemonSet in a cluster snapshot, like `kubectl get ds -A`
  daemonsync status --cluster snapshot:cluster.yaml

  # Also the DaemonSets in ./deploy, with every node's state and reason
  daemonsync status -c snapshot:cluster.yaml --manifests ./deploy --nodes

  # As JSON (the Plan schema of docs/plan-json.md)
  daemonsync status -c snapshot:cluster.yaml -o json

  # Manifests with fields their schema lacks: read them without those fields, silently
  daemonsync status -c snapshot:cluster.yaml -m ./deploy --validate=ignore

Exit status:
  0  status shown
  1  error (unreadable snapshot, bad manifests)";

/// Output formats of `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusOutput {
    /// One line per DaemonSet (and, with --nodes, one per node).
    Table,
    /// The versioned Plan object, whose `status` and `nodes` fields are the observed state.
    Json,
}

/// Flags of `daemonsync status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Where the observed state comes from: `snapshot:FILE`.
    #[arg(long, short = 'c', value_name = "SOURCE")]
    pub cluster: ClusterSpec,
    /// Manifest files or directories of managed DaemonSets (optional; the live DaemonSets of
    /// the cluster are always shown).
    #[arg(long, short = 'm', num_args = 1.., value_name = "PATH")]
    pub manifests: Vec<PathBuf>,
    /// List every node of every DaemonSet with its state and reason.
    #[arg(long)]
    pub nodes: bool,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = StatusOutput::Table)]
    pub output: StatusOutput,
    /// The instant to judge availability at (RFC 3339); defaults to the current time.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// How the manifests are read.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Runs `daemonsync status`; returns the exit code.
pub fn run(args: &StatusArgs) -> Result<i32> {
    let now = match &args.now {
        Some(s) => super::parse_now(s)?,
        None => Timestamp::now(),
    };
    let mut desired = if args.manifests.is_empty() {
        Vec::new()
    } else {
        load_desired_paths(&args.manifests, &args.load.load_options())?
    };
    let observed = args.cluster.observe()?;
    desired.extend(live_only(&desired, &observed));
    let plan = plan::plan(&desired, &observed, &Policy::default(), now);
    let text = match args.output {
        StatusOutput::Json => report::to_json(&plan),
        StatusOutput::Table => report::table::to_status_table(
            &plan,
            &report::TableOptions {
                color: color_enabled(),
                wide: args.nodes,
                ..report::TableOptions::default()
            },
        ),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(super::EXIT_OK)
}

/// Live DaemonSets not also given as manifests, defaulted, as desired DaemonSets: planning
/// them against the cluster reproduces their status.
fn live_only(desired: &[Desired], observed: &plan::Observed) -> Vec<Desired> {
    let key = |ds: &k8s_openapi::api::apps::v1::DaemonSet| {
        (
            ds.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            ds.metadata.name.clone().unwrap_or_default(),
        )
    };
    let given: std::collections::HashSet<_> = desired.iter().map(|d| key(&d.daemonset)).collect();
    observed
        .daemonsets
        .iter()
        .filter(|ds| !given.contains(&key(ds)))
        .map(|ds| {
            let mut ds = ds.clone();
            manifest::apply_defaults(&mut ds);
            Desired {
                source: "live".into(),
                daemonset: ds,
            }
        })
        .collect()
}

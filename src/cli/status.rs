//! `daemonsync status`: the observed state of DaemonSets, per node on request.
//!
//! The DaemonSets are those of `--manifests` (as daemonsync would manage them), those a live
//! cluster's ManagedDaemonSet records hold, and every live `apps/v1` DaemonSet in the observed
//! state. Their status counters and node states are computed
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
  # Every DaemonSet daemonsync manages in the current kubeconfig context, and the built-in ones
  daemonsync status

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
    /// Where the observed state comes from: `kube` (the default), `kube:CONTEXT`,
    /// `snapshot:FILE` or `sim:FILE`.
    #[arg(long, short = 'c', value_name = "SOURCE", default_value = "kube")]
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
    let (observed, managed) = args.cluster.observe_with_managed()?;
    let managed = as_desired(managed, "record");
    desired.extend(not_given(&desired, managed));
    desired.extend(not_given(
        &desired,
        as_desired(observed.daemonsets.clone(), "live"),
    ));
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

/// Cluster DaemonSets (live `apps/v1` ones, or the spec of daemonsync's records), defaulted,
/// as desired DaemonSets: planning them against the cluster reproduces their status.
fn as_desired(
    daemonsets: Vec<k8s_openapi::api::apps::v1::DaemonSet>,
    source: &str,
) -> Vec<Desired> {
    daemonsets
        .into_iter()
        .map(|mut ds| {
            manifest::apply_defaults(&mut ds);
            Desired {
                source: source.into(),
                daemonset: ds,
            }
        })
        .collect()
}

/// Those of `more` whose namespace and name none of `desired` has.
fn not_given(desired: &[Desired], more: Vec<Desired>) -> Vec<Desired> {
    let key = |d: &Desired| {
        let m = &d.daemonset.metadata;
        (
            m.namespace.clone().unwrap_or_else(|| "default".into()),
            m.name.clone().unwrap_or_default(),
        )
    };
    let given: std::collections::HashSet<_> = desired.iter().map(key).collect();
    more.into_iter()
        .filter(|d| !given.contains(&key(d)))
        .collect()
}

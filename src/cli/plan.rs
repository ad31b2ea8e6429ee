//! `daemonsync plan`: what reconciling the manifests would do, node by node.

use super::{EXIT_CHANGES, EXIT_OK, parse_now};
use crate::cluster::snapshot::load_snapshot;
use crate::manifest::{self, LoadOptions, Manifests};
use crate::model::Timestamp;
use crate::plan::{self, Desired, Plan, Policy};
use crate::report;
use anyhow::{Result, bail};
use clap::ValueEnum;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

pub(crate) const PLAN_HELP: &str = "\
Examples:
  # Plan the DaemonSets in ./deploy against a saved cluster snapshot
  kubectl get nodes,pods,daemonsets -A -o yaml > cluster.yaml
  daemonsync plan --manifests ./deploy --cluster snapshot:cluster.yaml

  # Machine-readable output, at a fixed instant (for reproducible CI runs)
  daemonsync plan --manifests ds.yaml --cluster snapshot:cluster.yaml -o json --now 2026-01-01T00:00:00Z

  # A pull-request comment; long plans are split into parts separated by a line
  # `<!-- daemonsync-plan-part-break -->`, each under GitHub's 65,536-character limit
  daemonsync plan -m ./deploy -c snapshot:cluster.yaml -o markdown --base $BASE --head $HEAD

  # Every node with its state and reason
  daemonsync plan -m ./deploy -c snapshot:cluster.yaml -o wide

Exit status:
  0  nothing would change
  2  the plan has changes
  1  error (bad manifests, unreadable snapshot, bad flags); nothing was planned";

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For people: one line per DaemonSet, then the nodes that need attention.
    Table,
    /// The table, then every node of every DaemonSet with its state and reason.
    Wide,
    /// A pull-request comment (GitHub-flavoured Markdown).
    Markdown,
    /// The versioned `daemonsync.io/v1alpha1` Plan object (see docs/plan-json.md).
    Json,
}

/// Flags of `daemonsync plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Manifest files or directories (*.yaml, *.yml, *.json, searched recursively).
    #[arg(long, short = 'm', required = true, num_args = 1.., value_name = "PATH")]
    pub manifests: Vec<PathBuf>,
    /// Where the observed state comes from: `snapshot:FILE` (output of
    /// `kubectl get nodes,pods,daemonsets -A -o yaml`).
    #[arg(long, short = 'c', value_name = "SOURCE")]
    pub cluster: String,
    /// The instant to plan for (RFC 3339); minReadySeconds is measured against it.
    /// Defaults to the current time.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Namespace for manifests that name none (as kubectl does).
    #[arg(
        long,
        short = 'n',
        default_value = "default",
        env = "DAEMONSYNC_NAMESPACE"
    )]
    pub namespace: String,
    /// Honour Lt/Gt toleration operators (the cluster has the TaintTolerationComparisonOperators
    /// feature gate on).
    #[arg(long)]
    pub taint_comparison_operators: bool,
    /// Nodes listed per state in the table before "... and N more".
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max_nodes: usize,
    /// Markdown: the repository (`owner/name`) named in the comment.
    #[arg(long, value_name = "OWNER/NAME", env = "GITHUB_REPOSITORY")]
    pub repository: Option<String>,
    /// Markdown: the base commit of the pull request.
    #[arg(long, value_name = "COMMIT")]
    pub base: Option<String>,
    /// Markdown: the head commit of the pull request.
    #[arg(long, value_name = "COMMIT")]
    pub head: Option<String>,
}

/// Separates the parts of a Markdown plan too long for one comment.
pub const PART_BREAK: &str = "<!-- daemonsync-plan-part-break -->";

/// Where observed state comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterSource {
    /// A snapshot file.
    Snapshot(PathBuf),
}

impl ClusterSource {
    /// Reads the observed state.
    pub fn observe(&self) -> Result<plan::Observed> {
        match self {
            ClusterSource::Snapshot(path) => Ok(load_snapshot(path)?),
        }
    }
}

impl std::str::FromStr for ClusterSource {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.split_once(':') {
            Some(("snapshot", path)) if !path.is_empty() => {
                Ok(ClusterSource::Snapshot(path.into()))
            }
            _ => bail!(
                "unsupported --cluster {s:?}: use snapshot:FILE, where FILE is the output of \
                 `kubectl get nodes,pods,daemonsets -A -o yaml`"
            ),
        }
    }
}

/// Runs `daemonsync plan`; returns the exit code.
pub fn run(args: &PlanArgs) -> Result<i32> {
    // Validate every flag before reading anything.
    let source: ClusterSource = args.cluster.parse()?;
    let now = match &args.now {
        Some(s) => parse_now(s)?,
        None => Timestamp::now(),
    };
    let policy = Policy {
        taint_comparison_operators: args.taint_comparison_operators,
    };
    let opts = LoadOptions {
        default_namespace: args.namespace.clone(),
        ..LoadOptions::default()
    };

    let manifests = manifest::load_paths(&args.manifests, &opts)?;
    let desired = desired_or_error(manifests)?;
    let observed = source.observe()?;
    let plan = plan::plan(&desired, &observed, &policy, now);
    print_plan(&plan, args)?;
    Ok(if plan.has_changes() {
        EXIT_CHANGES
    } else {
        EXIT_OK
    })
}

/// The valid DaemonSets, or an error listing every invalid one: nothing is planned from a
/// partly broken source.
pub fn desired_or_error(m: Manifests) -> Result<Vec<Desired>> {
    if !m.invalid.is_empty() {
        let mut msg = format!(
            "{} invalid DaemonSet(s); nothing was planned:",
            m.invalid.len()
        );
        for bad in &m.invalid {
            msg.push_str(&format!("\n  {} ({}):", bad.name, bad.source));
            for e in &bad.errors {
                msg.push_str(&format!("\n    - {e}"));
            }
        }
        bail!(msg);
    }
    if m.daemonsets.is_empty() {
        bail!(
            "no apps/v1 DaemonSet found in the manifests ({} other object(s) are not managed \
             here); check --manifests",
            m.others.len()
        );
    }
    Ok(m.daemonsets
        .into_iter()
        .map(|d| Desired {
            source: d.source.to_string(),
            daemonset: d.daemonset,
        })
        .collect())
}

fn print_plan(plan: &Plan, args: &PlanArgs) -> Result<()> {
    let table = |wide| {
        report::table::to_table(
            plan,
            &report::table::TableOptions {
                color: color_enabled(),
                max_nodes_per_group: args.max_nodes,
                wide,
            },
        )
    };
    let text = match args.output {
        Output::Json => report::json::to_json(plan),
        Output::Table => table(false),
        Output::Wide => table(true),
        Output::Markdown => {
            let ctx = report::MarkdownContext {
                repository: args.repository.clone(),
                base: args.base.clone(),
                head: args.head.clone(),
                cluster: args.cluster.clone(),
            };
            let parts = report::to_markdown(plan, &ctx, &Default::default());
            parts.join(&format!("\n{PART_BREAK}\n"))
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
pub(crate) fn color_enabled() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

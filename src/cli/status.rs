//! `daemonsync status`: the observed state of DaemonSets, per node on request.
//!
//! The DaemonSets are those of `--manifests` (as daemonsync would manage them), those a live
//! cluster's ManagedDaemonSet records hold, and every live `apps/v1` DaemonSet in the observed
//! state. Their status counters and node states are computed
//! by the planner from the observed nodes and pods, so they read the same for both. A
//! DaemonSet with a rollout policy also shows its rollout phase (`Canary`, `Paused`,
//! `Wave k/n`, `Halted`, `Complete`), the stage it is at and what it waits for: a live
//! cluster's records say where each rollout stands.

use super::plan::color_enabled;
use super::source::{LoadArgs, for_cluster, load_desired_paths};
use crate::cluster::ClusterSpec;
use crate::manifest::{self, LoadOptions};
use crate::model::{KubeVersion, Timestamp};
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

  # Where the progressive rollouts stand (docs/progressive.md): a ROLLOUT row per DaemonSet
  # with a rollout policy shows its phase (Canary, Paused, Wave k/n, Halted, Complete), its
  # stage and what it waits for
  daemonsync status --cluster kube:prod-eu

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

/// `daemonsync status` as its flags say, converted once.
#[derive(Debug, Clone)]
pub struct StatusOptions {
    /// Where the observed state comes from.
    pub cluster: ClusterSpec,
    /// Manifests of managed DaemonSets (may be empty).
    pub manifests: Vec<PathBuf>,
    /// How they are read (for `--kube-version`, or v1.35 until the cluster says).
    pub load: LoadOptions,
    /// `--kube-version`: read them for it instead of the cluster's version.
    pub kube_version: Option<KubeVersion>,
    /// How overlays and charts among them are rendered.
    pub render: crate::source::RenderOptions,
    /// The instant availability is judged at.
    pub now: Timestamp,
    /// The format.
    pub output: StatusOutput,
    /// Every node of every DaemonSet in the table.
    pub nodes: bool,
    /// ANSI colours in the table.
    pub color: bool,
}

impl StatusArgs {
    /// Validates the flags into [`StatusOptions`], before anything is read.
    pub fn options(&self) -> Result<StatusOptions> {
        Ok(StatusOptions {
            cluster: self.cluster.clone(),
            manifests: self.manifests.clone(),
            load: self.load.load_options(),
            kube_version: self.load.kube_version,
            render: self.load.render_options(),
            now: match &self.now {
                Some(s) => super::parse_now(s)?,
                None => Timestamp::now(),
            },
            output: self.output,
            nodes: self.nodes,
            color: color_enabled(),
        })
    }
}

/// Runs `daemonsync status`; returns the exit code.
pub async fn run(args: &StatusArgs) -> Result<i32> {
    execute(&args.options()?).await
}

/// Prints the status `opts` ask for; returns the exit code.
pub async fn execute(opts: &StatusOptions) -> Result<i32> {
    let (observed, managed) = opts.cluster.observe_with_managed().await?;
    let mut desired = if opts.manifests.is_empty() {
        Vec::new()
    } else {
        // Rendered and validated for the cluster's version.
        let mut load = opts.load.clone();
        for_cluster(&mut load, opts.kube_version, observed.version)?;
        load_desired_paths(&opts.manifests, &load, &opts.render)?
    };
    let managed = as_desired(managed, "record");
    desired.extend(not_given(&desired, managed));
    desired.extend(not_given(
        &desired,
        as_desired(observed.daemonsets.clone(), "live"),
    ));
    let plan = plan::plan(&desired, &observed, &Policy::default(), opts.now);
    let text = match opts.output {
        StatusOutput::Json => report::to_json(&plan),
        StatusOutput::Table => status_table(&plan, opts.color, opts.nodes),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(super::EXIT_OK)
}

/// The `kubectl get ds`-style rows, then where each progressive rollout stands, then (with
/// `--nodes`) every node.
fn status_table(plan: &plan::Plan, color: bool, wide: bool) -> String {
    let options = |wide| report::TableOptions {
        color,
        wide,
        ..report::TableOptions::default()
    };
    let head = report::table::to_status_table(plan, &options(false));
    let mut out = head.clone();
    out.push_str(&rollout_rows(plan, color));
    out.push_str(&hold_rows(plan, color));
    if wide {
        let full = report::table::to_status_table(plan, &options(true));
        match full.strip_prefix(&head) {
            Some(nodes) => out.push_str(nodes),
            None => return full + &rollout_rows(plan, color) + &hold_rows(plan, color),
        }
    }
    out
}

/// One row per DaemonSet its record pauses or freezes: `paused` (new nodes still get the
/// stable revision) or `frozen` (nothing is written); empty when none is.
fn hold_rows(plan: &plan::Plan, color: bool) -> String {
    let rows: Vec<[String; 4]> = plan
        .daemonsets
        .iter()
        .filter_map(|ds| {
            let s = ds.suspended.as_ref()?;
            Some([
                format!("{}/{}", ds.namespace, ds.name),
                report::phrases::suspension_label(s).to_lowercase(),
                report::phrases::suspension_text(s, report::phrases::PLAIN),
                String::new(),
            ])
        })
        .collect();
    rows_table(["HELD", "STATE", "WHAT IS WRITTEN", ""], rows, color)
}

/// One row per DaemonSet with a rollout policy: its phase, the stage it is at, and why it
/// waits (empty when none has a policy).
fn rollout_rows(plan: &plan::Plan, color: bool) -> String {
    let rows: Vec<[String; 4]> = plan
        .daemonsets
        .iter()
        .filter_map(|ds| {
            let r = ds.rollout.as_ref()?;
            let stage = if r.stages.is_empty() {
                "-".to_string()
            } else {
                format!(
                    "{}/{} {}",
                    (r.stage as usize + 1).min(r.stages.len()),
                    r.stages.len(),
                    r.stage_label(r.stage)
                )
            };
            let why = r
                .pause
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            Some([
                format!("{}/{}", ds.namespace, ds.name),
                r.phase.to_string(),
                stage,
                why,
            ])
        })
        .collect();
    rows_table(["ROLLOUT", "PHASE", "STAGE", "WAITING FOR"], rows, color)
}

/// A table of four columns under `header` (nothing when there are no rows), after a blank
/// line; the last column is not padded.
fn rows_table(header: [&str; 4], rows: Vec<[String; 4]>, color: bool) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let header = header.map(String::from);
    let width = |c: usize| {
        rows.iter()
            .chain(std::iter::once(&header))
            .map(|r| r[c].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let line = |r: &[String; 4]| {
        let mut l = String::new();
        for (c, w) in widths.iter().enumerate() {
            l.push_str(&format!("{:<w$}   ", r[c], w = w));
        }
        l.push_str(&r[3]);
        l.trim_end().to_string()
    };
    let mut out = String::from("\n");
    let head = line(&header);
    if color {
        let bold = anstyle::Style::new().bold();
        out.push_str(&format!("{bold}{head}{bold:#}"));
    } else {
        out.push_str(&head);
    }
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
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
            Desired::new(source, ds)
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

//! `daemonsync plan`: what reconciling the manifests would do, node by node.

use super::source::{SourceArgs, load_local, print_notes};
use super::{EXIT_CHANGES, EXIT_OK, parse_now};
use crate::cluster::snapshot::load_snapshot;
use crate::manifest::{LoadOptions, Manifests};
use crate::model::Timestamp;
use crate::plan::{self, Desired, Plan, Policy};
use crate::report;
use crate::source::{GitSource, Rendered};
use anyhow::{Result, bail};
use clap::ValueEnum;
use k8s_openapi::api::apps::v1::DaemonSet;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

pub(crate) const PLAN_HELP: &str = "\
Examples:
  # Plan the DaemonSets in ./deploy against a saved cluster snapshot
  kubectl get nodes,pods,daemonsets -A -o yaml > cluster.yaml
  daemonsync plan --manifests ./deploy --cluster snapshot:cluster.yaml

  # Machine-readable output, at a fixed instant (for reproducible CI runs)
  daemonsync plan --manifests ds.yaml --cluster snapshot:cluster.yaml -o json --now 2026-01-01T00:00:00Z

  # From git, at a branch, tag or commit (HTTPS token from DAEMONSYNC_GIT_TOKEN)
  daemonsync plan --repo https://github.com/org/fleet.git --ref main --path daemonsets \\
    --cluster snapshot:cluster.yaml

  # Pull request: diff base and head, then the per-node impact of head
  daemonsync plan --repo . --base origin/main --head HEAD --path deploy --cluster snapshot:cluster.yaml

  # The same as a pull-request comment; long plans are split into parts separated by a line
  # `<!-- daemonsync-plan-part-break -->`, each under GitHub's 65,536-character limit
  daemonsync plan --repo . --base origin/main --head HEAD --path deploy \
    --cluster snapshot:cluster.yaml -o markdown

  # Every node with its state and reason
  daemonsync plan -m ./deploy -c snapshot:cluster.yaml -o wide

Exit status:
  0  nothing would change
  2  the plan has changes
  1  error (bad manifests, unreadable snapshot, unreachable repository, bad flags); nothing
     was planned and nothing would be deleted";

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

impl Output {
    /// Formats meant for a terminal, where the source line and diffs precede the plan.
    fn is_text(self) -> bool {
        matches!(self, Output::Table | Output::Wide)
    }
}

/// Flags of `daemonsync plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Where the manifests come from.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Re-plan whenever a file under --manifests changes (a burst of edits gives one re-plan).
    #[arg(long, requires = "manifests")]
    pub watch: bool,
    /// Pull-request mode: the base ref (e.g. the target branch). Needs --head.
    #[arg(long, value_name = "REF", requires_all = ["repo", "head"], conflicts_with = "reference")]
    pub base: Option<String>,
    /// Pull-request mode: the head ref (the proposed change). Needs --base.
    #[arg(long, value_name = "REF", requires_all = ["repo", "base"])]
    pub head: Option<String>,
    /// Where the observed state comes from: `snapshot:FILE` (output of
    /// `kubectl get nodes,pods,daemonsets -A -o yaml`) or `sim:FILE` (a simulated cluster at
    /// its start, see docs/sim.md).
    #[arg(long, short = 'c', value_name = "SOURCE")]
    pub cluster: String,
    /// The instant to plan for (RFC 3339); minReadySeconds is measured against it.
    /// Defaults to the current time.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Accept and honour Lt/Gt toleration operators (the cluster has the
    /// TaintTolerationComparisonOperators feature gate on).
    #[arg(long)]
    pub taint_comparison_operators: bool,
    /// Nodes listed per state in the table before "... and N more".
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max_nodes: usize,
    /// Markdown: the repository (`owner/name`) named in the comment.
    #[arg(long, value_name = "OWNER/NAME", env = "GITHUB_REPOSITORY")]
    pub repository: Option<String>,
}

/// Separates the parts of a Markdown plan too long for one comment.
pub const PART_BREAK: &str = "<!-- daemonsync-plan-part-break -->";

/// Where observed state comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterSource {
    /// A snapshot file.
    Snapshot(PathBuf),
    /// A simulated cluster at its start (see docs/sim.md).
    Sim(PathBuf),
}

impl ClusterSource {
    /// Reads the observed state.
    pub fn observe(&self) -> Result<plan::Observed> {
        match self {
            ClusterSource::Snapshot(path) => Ok(load_snapshot(path)?),
            ClusterSource::Sim(path) => Ok(crate::cluster::sim::Sim::load(path)?.observed()),
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
            Some(("sim", path)) if !path.is_empty() => Ok(ClusterSource::Sim(path.into())),
            _ => bail!(
                "unsupported --cluster {s:?}: use snapshot:FILE, where FILE is the output of \
                 `kubectl get nodes,pods,daemonsets -A -o yaml`, or sim:FILE for a simulated \
                 cluster (docs/sim.md)"
            ),
        }
    }
}

/// Everything `plan` needs besides the manifests, validated from the flags.
struct Context {
    observed: plan::Observed,
    policy: Policy,
    now: Timestamp,
    opts: LoadOptions,
}

/// Runs `daemonsync plan`; returns the exit code.
pub fn run(args: &PlanArgs) -> Result<i32> {
    // Validate every flag before reading anything.
    let cluster: ClusterSource = args.cluster.parse()?;
    let now = match &args.now {
        Some(s) => parse_now(s)?,
        None => Timestamp::now(),
    };
    let policy = Policy {
        taint_comparison_operators: args.taint_comparison_operators,
    };
    let mut opts = args.source.load_options();
    // A cluster that honours Lt/Gt tolerations also accepts them.
    opts.gates.taint_toleration_comparison_operators = args.taint_comparison_operators;
    let observed = || cluster.observe();
    if let Some(src) = args.source.git() {
        if let (Some(base), Some(head)) = (&args.base, &args.head) {
            let rendered = src.load_refs(&[base, head], &opts)?;
            let [base_r, head_r]: [Rendered; 2] = rendered
                .try_into()
                .map_err(|_| anyhow::anyhow!("internal error: expected two renders"))?;
            let ctx = Context {
                observed: observed()?,
                policy,
                now,
                opts,
            };
            return run_pull_request(args, &src, (base, base_r), (head, head_r), &ctx);
        }
        let loaded = args.source.load(&opts)?;
        let ctx = Context {
            observed: observed()?,
            policy,
            now,
            opts,
        };
        let extras = Extras {
            header: loaded.line,
            head: loaded.commit,
            ..Extras::default()
        };
        return plan_and_print(&loaded.desired, &ctx, args, &extras);
    }
    let ctx = Context {
        observed: observed()?,
        policy,
        now,
        opts,
    };
    if args.watch {
        return run_watch(args, &ctx);
    }
    let desired = desired_or_error(load_local(&args.source.manifests, &ctx.opts)?)?;
    plan_and_print(&desired, &ctx, args, &Extras::default())
}

/// What a git source adds to the printed plan.
#[derive(Debug, Default)]
struct Extras {
    /// The source line: repository, refs and commits.
    header: Option<String>,
    /// Text printed between the source line and a terminal plan (pull-request diffs).
    before: String,
    /// Base and head commits for the Markdown identity line.
    base: Option<String>,
    head: Option<String>,
    /// Manifest diffs by (namespace, name), shown in each DaemonSet's Markdown section.
    diffs: BTreeMap<(String, String), String>,
}

/// Plans `desired` and prints it with `extras`; returns the exit code.
fn plan_and_print(
    desired: &[Desired],
    ctx: &Context,
    args: &PlanArgs,
    extras: &Extras,
) -> Result<i32> {
    let plan = plan::plan(desired, &ctx.observed, &ctx.policy, ctx.now);
    let mut prefix = String::new();
    if args.output.is_text() {
        if let Some(h) = &extras.header {
            prefix.push_str(h);
            prefix.push_str("\n\n");
        }
        prefix.push_str(&extras.before);
    } else if args.output == Output::Json {
        // The JSON schema is stable: the source line and diffs go to stderr.
        if let Some(h) = &extras.header {
            eprintln!("{h}");
        }
        eprint!("{}", extras.before);
    }
    print_plan(&plan, args, extras, &prefix)?;
    Ok(if plan.has_changes() {
        EXIT_CHANGES
    } else {
        EXIT_OK
    })
}

/// The base and head versions of one DaemonSet (either may be absent).
type BaseHead<'a> = (Option<&'a DaemonSet>, Option<&'a DaemonSet>);

/// `--base` / `--head`: a normalised diff of every DaemonSet added, removed or changed, then
/// the plan of the head side against the observed state.
fn run_pull_request(
    args: &PlanArgs,
    src: &GitSource,
    (base_ref, base): (&str, Rendered),
    (head_ref, head): (&str, Rendered),
    ctx: &Context,
) -> Result<i32> {
    let header = format!(
        "source: {} base {base_ref} ({}) -> head {head_ref} ({})",
        src.display_url(),
        base.short_revision(),
        head.short_revision()
    );
    print_notes(&head);
    let (base_commit, head_commit) = (
        base.short_revision().to_string(),
        head.short_revision().to_string(),
    );
    let key = |d: &DaemonSet| {
        (
            d.metadata.namespace.clone().unwrap_or_default(),
            d.metadata.name.clone().unwrap_or_default(),
        )
    };
    let mut pairs: BTreeMap<(String, String), BaseHead<'_>> = BTreeMap::new();
    for m in &base.manifests.daemonsets {
        pairs.entry(key(&m.daemonset)).or_default().0 = Some(&m.daemonset);
    }
    for m in &head.manifests.daemonsets {
        pairs.entry(key(&m.daemonset)).or_default().1 = Some(&m.daemonset);
    }
    let (mut added, mut removed, mut changed, mut unchanged) = (0, 0, 0, 0);
    let mut diffs = String::new();
    let mut by_name = BTreeMap::new();
    let mut removed_names = Vec::new();
    for ((ns, name), (b, h)) in &pairs {
        let full = format!("{ns}/{name}");
        match report::diff::manifest_diff(&full, *b, *h) {
            None => unchanged += 1,
            Some(d) => {
                by_name.insert((ns.clone(), name.clone()), d.clone());
                match (b, h) {
                    (None, _) => added += 1,
                    (_, None) => {
                        removed += 1;
                        removed_names.push(full.clone());
                    }
                    _ => changed += 1,
                }
                diffs.push_str(&d);
                if !d.ends_with('\n') {
                    diffs.push('\n');
                }
                diffs.push('\n');
            }
        }
    }
    let mut before = format!(
        "DaemonSets between base and head: {added} added, {removed} removed, {changed} \
         changed, {unchanged} unchanged\n\n{diffs}"
    );
    for name in &removed_names {
        before.push_str(&format!(
            "note: {name} is removed on head; its pods are NOT deleted (pruning is not \
             implemented); delete them explicitly if that is intended\n"
        ));
    }
    if !removed_names.is_empty() {
        before.push('\n');
    }
    let desired = desired_or_error(head.manifests)?;
    let base_desired: Vec<Desired> = base
        .manifests
        .daemonsets
        .into_iter()
        .map(|d| Desired {
            source: d.source.to_string(),
            daemonset: d.daemonset,
        })
        .collect();
    let base_plan = plan::plan(&base_desired, &ctx.observed, &ctx.policy, ctx.now);
    let head_plan = plan::plan(&desired, &ctx.observed, &ctx.policy, ctx.now);
    let changes = report::diff::node_changes(&base_plan, &head_plan);
    if !changes.is_empty() {
        before.push_str("Node changes from base to head:\n");
        before.push_str(&changes);
        before.push('\n');
    }
    before.push_str("Per-node impact of head against the observed state:\n\n");
    let extras = Extras {
        header: Some(header),
        before,
        base: Some(base_commit),
        head: Some(head_commit),
        diffs: by_name,
    };
    let code = plan_and_print(&desired, ctx, args, &extras)?;
    Ok(if added + removed + changed > 0 {
        EXIT_CHANGES
    } else {
        code
    })
}

/// `--watch`: plan now, then once per burst of changes. Errors are printed and watching goes on.
fn run_watch(args: &PlanArgs, ctx: &Context) -> Result<i32> {
    let once = || {
        let result = load_local(&args.source.manifests, &ctx.opts)
            .and_then(desired_or_error)
            .and_then(|d| plan_and_print(&d, ctx, args, &Extras::default()));
        if let Err(e) = result {
            eprintln!("error: {e:#}");
        }
    };
    once();
    crate::source::watch::watch_paths(
        &args.source.manifests,
        crate::source::watch::DEBOUNCE,
        || {
            println!("\n--- change detected; re-planning ---\n");
            once();
            true
        },
    )?;
    Ok(EXIT_OK)
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

fn print_plan(plan: &Plan, args: &PlanArgs, extras: &Extras, prefix: &str) -> Result<()> {
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
                base: extras.base.clone(),
                head: extras.head.clone(),
                cluster: args.cluster.clone(),
            };
            let parts = report::to_markdown(plan, &ctx, &extras.diffs);
            parts.join(&format!("\n{PART_BREAK}\n"))
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(prefix.as_bytes())?;
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
pub(crate) fn color_enabled() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

//! `daemonsync plan`: what reconciling the manifests would do, node by node.

use super::source::{
    Loaded, SourceArgs, add_warnings, field_warnings, for_cluster, load, print_notes,
    print_warnings, rendered_line,
};
use super::{EXIT_CHANGES, EXIT_OK, parse_now};
use crate::cluster::{ClusterSpec, TargetVersion};
use crate::manifest::{FieldValidation, LoadOptions};
use crate::model::{KubeVersion, Timestamp};
use crate::plan::{self, Desired, Observed, Plan, Policy};
use crate::report::markdown::DEFAULT_COMMENT_KEY;
use crate::report::{self, Diffs, MarkdownContext};
use crate::source::{GitSource, ManifestSource, Rendered};
use anyhow::Result;
use clap::ValueEnum;
use k8s_openapi::api::apps::v1::DaemonSet;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

pub(crate) const PLAN_HELP: &str = "\
Examples:
  # Plan the DaemonSets in ./deploy against the cluster of the current kubeconfig context
  daemonsync plan --manifests ./deploy

  # ... or of a named context
  daemonsync plan --manifests ./deploy --cluster kube:prod-eu

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

  # Without a cluster: the manifest diff, validation and risks, no per-node part
  daemonsync plan --repo . --base origin/main --head HEAD --path deploy --cluster none

  # In GitHub Actions (action.yml runs this): also the job summary, step outputs and one
  # sticky comment on the pull request, keyed per cluster
  daemonsync plan --github --repo . --base \"$BASE_SHA\" --head \"$HEAD_SHA\" --path deploy \\
    --cluster snapshot:cluster.yaml --comment-key prod

  # Every node with its state and reason
  daemonsync plan -m ./deploy -c snapshot:cluster.yaml -o wide

  # A Kustomize overlay (kustomize build, or kubectl kustomize) or a Helm chart (helm
  # template) is rendered, in a sandbox, for the cluster's Kubernetes version; in a pull
  # request both sides are, and the diff is between the two renderings
  daemonsync plan --repo . --base origin/main --head HEAD --path overlays/prod \
    --cluster snapshot:cluster.yaml
  daemonsync plan --repo . --path charts/node-agent --values values/prod.yaml \
    --release node-agent -n kube-system --cluster snapshot:cluster.yaml

  # A field the DaemonSet schema lacks (a typo such as `itmes`, a key at the wrong
  # indentation) is refused with its path, as `kubectl apply` refuses it. Plan anyway, the
  # field dropped and listed in the plan's warnings, or drop such fields silently:
  daemonsync plan -m ./deploy -c snapshot:cluster.yaml --validate=warn
  daemonsync plan -m ./deploy -c snapshot:cluster.yaml --validate=ignore

Exit status:
  0  nothing would change
  2  the plan has changes
  1  error (bad manifests, an unknown field with --validate=strict, unreadable snapshot,
     unreachable repository, bad flags); nothing was planned and nothing would be deleted";

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
    #[arg(
        long,
        value_name = "REF",
        requires_all = ["repo", "head"],
        conflicts_with_all = ["reference", "manifests"]
    )]
    pub base: Option<String>,
    /// Pull-request mode: the head ref (the proposed change). Needs --base.
    #[arg(
        long,
        value_name = "REF",
        requires_all = ["repo", "base"],
        conflicts_with = "manifests"
    )]
    pub head: Option<String>,
    /// Where the observed state comes from: `kube` (the current kubeconfig context, or the
    /// in-cluster config; the default), `kube:CONTEXT`, `snapshot:FILE` (output of
    /// `kubectl get nodes,pods,daemonsets -A -o yaml`), `sim:FILE` (a simulated cluster at
    /// its start, see docs/sim.md), or `none` (the manifests alone: diff, validation and
    /// risks, no per-node plan).
    #[arg(long, short = 'c', value_name = "SOURCE", default_value = "kube")]
    pub cluster: ClusterSpec,
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
    /// In GitHub Actions: besides printing the plan, write the job summary and the step
    /// outputs, and create or update one sticky comment on the pull request
    /// (docs/github-action.md). Reads GITHUB_TOKEN, GITHUB_EVENT_PATH, GITHUB_API_URL, GITHUB_OUTPUT and
    /// GITHUB_STEP_SUMMARY.
    #[arg(long, conflicts_with = "watch")]
    pub github: bool,
    /// The key of the sticky comment, in its hidden marker `<!-- daemonsync-plan:KEY -->`:
    /// one comment per key, so plans against several clusters keep their own comments.
    #[arg(long, value_name = "KEY", default_value = DEFAULT_COMMENT_KEY)]
    pub comment_key: String,
}

/// Separates the parts of a Markdown plan too long for one comment.
pub const PART_BREAK: &str = "<!-- daemonsync-plan-part-break -->";

/// `plan`'s flags, validated once: what the planning code needs, and nothing of clap.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Where the manifests come from.
    pub source: ManifestSource,
    /// How manifests are loaded (for `--kube-version`, or v1.35 until the cluster says).
    pub load: LoadOptions,
    /// `--kube-version`: the version to render and validate for instead of the cluster's.
    pub kube_version: Option<KubeVersion>,
    /// Where the observed state comes from.
    pub cluster: ClusterSpec,
    /// The instant to plan for.
    pub now: Timestamp,
    /// Planner switches.
    pub policy: Policy,
    /// Pull-request mode: the base and head refs of a git source.
    pub pull_request: Option<(String, String)>,
    /// Re-plan whenever a local manifest changes.
    pub watch: bool,
    /// Publish to GitHub Actions too (`--github`).
    pub github: bool,
    /// How the plan is printed.
    pub report: ReportOptions,
}

/// How a plan is printed.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The format.
    pub format: Output,
    /// ANSI colours.
    pub color: bool,
    /// Nodes listed per state in the table before "... and N more".
    pub max_nodes: usize,
    /// Markdown: the repository (`owner/name`) named in the comment.
    pub repository: Option<String>,
    /// Markdown: the cluster named in the comment.
    pub cluster: String,
    /// Markdown: the key in the comment's marker.
    pub comment_key: String,
}

impl PlanArgs {
    /// Validates the flags into [`PlanOptions`], before anything is read.
    pub fn options(&self) -> Result<PlanOptions> {
        report::markdown::check_comment_key(&self.comment_key)
            .map_err(|e| anyhow::anyhow!("--comment-key: {e}"))?;
        let now = match &self.now {
            Some(s) => parse_now(s)?,
            None => Timestamp::now(),
        };
        let mut load = self.source.load_options();
        // A cluster that honours Lt/Gt tolerations also accepts them.
        load.gates.taint_toleration_comparison_operators = self.taint_comparison_operators;
        Ok(PlanOptions {
            source: self.source.source(),
            load,
            kube_version: self.source.load.kube_version,
            cluster: self.cluster.clone(),
            now,
            policy: Policy {
                taint_comparison_operators: self.taint_comparison_operators,
                ..Policy::default()
            },
            pull_request: self.base.clone().zip(self.head.clone()),
            watch: self.watch,
            github: self.github,
            report: ReportOptions {
                format: self.output,
                color: color_enabled(),
                max_nodes: self.max_nodes,
                repository: self.repository.clone(),
                cluster: self.cluster.to_string(),
                comment_key: self.comment_key.clone(),
            },
        })
    }
}

/// Runs `daemonsync plan`; returns the exit code.
pub async fn run(args: &PlanArgs) -> Result<i32> {
    execute(&args.options()?).await
}

/// Plans as `opts` say and prints the result (and, with `--github`, publishes it); returns
/// the exit code.
pub async fn execute(opts: &PlanOptions) -> Result<i32> {
    if opts.watch {
        return run_watch(opts).await;
    }
    let run = compute(opts).await;
    if opts.github {
        return super::github::step(run, opts).await;
    }
    let run = run?;
    print(&run, &opts.report)?;
    Ok(run.exit_code)
}

/// One planning pass, computed once and then printed, published, or both.
#[derive(Debug)]
pub struct PlanRun {
    /// The plan of the desired DaemonSets (head's, in pull-request mode).
    pub plan: Plan,
    /// The source line: repository, refs and commits (git sources).
    pub source_line: Option<String>,
    /// What rendered the manifests (each side in pull-request mode) and for which Kubernetes
    /// version, when they were rendered.
    pub rendered: Option<String>,
    /// Text printed between the source line and a terminal plan (pull-request diffs).
    pub before: String,
    /// Base commit, for the Markdown identity line.
    pub base: Option<String>,
    /// Head commit, for the Markdown identity line.
    pub head: Option<String>,
    /// Manifest diffs by (namespace, name) in pull-request mode.
    pub diffs: Diffs,
    /// 0 nothing would change, 2 changes.
    pub exit_code: i32,
}

impl PlanRun {
    /// The identity line and comment key of the Markdown report.
    pub fn markdown_context(&self, opts: &ReportOptions) -> MarkdownContext {
        MarkdownContext {
            repository: opts.repository.clone(),
            base: self.base.clone(),
            head: self.head.clone(),
            cluster: opts.cluster.clone(),
            comment_key: opts.comment_key.clone(),
            rendered: self.rendered.clone(),
        }
    }

    /// The Markdown report, one comment body per part.
    pub fn markdown(&self, opts: &ReportOptions) -> Vec<String> {
        report::to_markdown(&self.plan, &self.markdown_context(opts), &self.diffs)
    }
}

/// Reads the cluster (its version decides how the manifests are rendered and validated),
/// then the manifests, and plans, once (no `--watch`).
pub async fn compute(opts: &PlanOptions) -> Result<PlanRun> {
    let observed = opts.cluster.observe_if_any().await?;
    let mut load_opts = opts.load.clone();
    let target = for_cluster(
        &mut load_opts,
        opts.kube_version,
        observed.as_ref().and_then(|o| o.version),
    )?;
    if let (ManifestSource::Git(src), Some((base, head))) = (&opts.source, &opts.pull_request) {
        // The base side is only compared with: a DaemonSet there with a field its schema
        // lacks is read without it (as the API server stored it), not dropped as invalid,
        // so fixing the field reads as a change, not as an addition.
        let mut base_load = load_opts.clone();
        if base_load.field_validation == FieldValidation::Strict {
            base_load.field_validation = FieldValidation::Warn;
        }
        let rendered = src.load_refs_with(&[(base, &base_load), (head, &load_opts)])?;
        let [base_r, head_r]: [Rendered; 2] = rendered
            .try_into()
            .map_err(|_| anyhow::anyhow!("internal error: expected two renders"))?;
        let sides = Sides {
            base: (base, base_r),
            head: (head, head_r),
            target,
        };
        return pull_request(src, sides, observed.as_ref(), opts);
    }
    let loaded = load(&opts.source, &load_opts)?;
    Ok(plan_loaded(loaded, &target, observed.as_ref(), opts))
}

/// Prints, on stderr, the errors in DaemonSets that only the cluster reveals (a rollout
/// policy's `waves-by` label no node carries); true when there are any (the plan exits 1).
pub(crate) fn report_cluster_errors(plan: &Plan) -> bool {
    let mut any = false;
    for ds in plan.daemonsets.iter().filter(|d| !d.errors.is_empty()) {
        any = true;
        eprintln!(
            "error: {}/{} ({}) is invalid for this cluster; nothing is done for it:",
            ds.namespace, ds.name, ds.source
        );
        for e in &ds.errors {
            eprintln!("    - {e}");
        }
    }
    any
}

/// Plans `desired` against `observed`, or from the manifests alone (`--cluster none`).
fn plan_desired(desired: &[Desired], observed: Option<&Observed>, opts: &PlanOptions) -> Plan {
    match observed {
        Some(o) => plan::plan(desired, o, &opts.policy, opts.now),
        None => plan::plan_manifests(desired, &opts.policy, opts.now),
    }
}

/// The run of a plain (not pull-request) source.
fn plan_loaded(
    loaded: Loaded,
    target: &TargetVersion,
    observed: Option<&Observed>,
    opts: &PlanOptions,
) -> PlanRun {
    let mut plan = plan_desired(&loaded.desired, observed, opts);
    add_warnings(&mut plan, &loaded.warnings);
    let exit_code = if report_cluster_errors(&plan) {
        super::EXIT_ERROR
    } else if plan.needs_action() {
        EXIT_CHANGES
    } else {
        EXIT_OK
    };
    PlanRun {
        plan,
        source_line: loaded.line,
        rendered: rendered_line(loaded.rendered.as_deref(), target),
        before: String::new(),
        base: None,
        head: loaded.commit,
        diffs: Diffs::new(),
        exit_code,
    }
}

/// Prints a run in the chosen format: for a terminal, the source line and pull-request diffs
/// first; for JSON, those go to stderr so that stdout stays the documented schema.
pub fn print(run: &PlanRun, opts: &ReportOptions) -> Result<()> {
    let mut prefix = String::new();
    if opts.format.is_text() {
        for line in [&run.source_line, &run.rendered].into_iter().flatten() {
            prefix.push_str(line);
            prefix.push('\n');
        }
        if run.source_line.is_some() || run.rendered.is_some() {
            prefix.push('\n');
        }
        prefix.push_str(&run.before);
    } else if opts.format == Output::Json {
        for line in [&run.source_line, &run.rendered].into_iter().flatten() {
            eprintln!("{line}");
        }
        eprint!("{}", run.before);
    }
    let table = |wide| {
        report::table::to_table(
            &run.plan,
            &report::table::TableOptions {
                color: opts.color,
                max_nodes_per_group: opts.max_nodes,
                wide,
            },
        )
    };
    let text = match opts.format {
        Output::Json => report::json::to_json(&run.plan),
        Output::Table => table(false),
        Output::Wide => table(true),
        Output::Markdown => run.markdown(opts).join(&format!("\n{PART_BREAK}\n")),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(prefix.as_bytes())?;
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The base and head versions of one DaemonSet (either may be absent).
type BaseHead<'a> = (Option<&'a DaemonSet>, Option<&'a DaemonSet>);

/// Both sides of a pull request, read, and the version they were read for.
struct Sides<'a> {
    base: (&'a str, Rendered),
    head: (&'a str, Rendered),
    target: TargetVersion,
}

impl Sides<'_> {
    /// `rendered: base overlays/prod with kustomize v5.5.0 via kubectl; head …, for
    /// Kubernetes v1.34 (the cluster's)`, when either side was rendered.
    fn rendered_line(&self) -> Option<String> {
        let (base, head) = (self.base.1.rendered_line(), self.head.1.rendered_line());
        if base.is_none() && head.is_none() {
            return None;
        }
        if base == head {
            let both = head.unwrap_or_default();
            return Some(format!(
                "rendered: base and head {both}, for {}",
                self.target
            ));
        }
        let side = |r: Option<String>| r.unwrap_or_else(|| "the files as they are".into());
        Some(format!(
            "rendered: base {}; head {}; for {}",
            side(base),
            side(head),
            self.target
        ))
    }
}

/// `--base` / `--head`: a normalised diff of every DaemonSet added, removed or changed, then
/// the plan of the head side against the observed state.
fn pull_request(
    src: &GitSource,
    sides: Sides<'_>,
    observed: Option<&Observed>,
    opts: &PlanOptions,
) -> Result<PlanRun> {
    let rendered = sides.rendered_line();
    let Sides {
        base: (base_ref, base),
        head: (head_ref, head),
        ..
    } = sides;
    let header = format!(
        "source: {} base {base_ref} ({}) -> head {head_ref} ({})",
        src.display_url(),
        base.short_revision(),
        head.short_revision()
    );
    print_notes(&head);
    let head_warnings = field_warnings(&head.manifests);
    print_warnings(&head_warnings);
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
    let mut by_name = Diffs::new();
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
    let desired = head.desired()?;
    let mut head_plan = plan_desired(&desired, observed, opts);
    add_warnings(&mut head_plan, &head_warnings);
    let base_desired = base.valid_desired();
    config_changes_from_base(&mut head_plan, &base_desired, &desired);
    if let Some(observed) = observed {
        let base_plan = plan::plan(&base_desired, observed, &opts.policy, opts.now);
        let changes = report::diff::node_changes(&base_plan, &head_plan);
        if !changes.is_empty() {
            before.push_str("Node changes from base to head:\n");
            before.push_str(&changes);
            before.push('\n');
        }
        before.push_str("Per-node impact of head against the observed state:\n\n");
    } else {
        before
            .push_str("Head, from its manifests alone (no cluster state: no per-node impact):\n\n");
    }
    let manifests_differ = added + removed + changed > 0;
    let exit_code = if report_cluster_errors(&head_plan) {
        super::EXIT_ERROR
    } else if manifests_differ || head_plan.needs_action() {
        EXIT_CHANGES
    } else {
        EXIT_OK
    };
    Ok(PlanRun {
        plan: head_plan,
        source_line: Some(header),
        rendered,
        before,
        base: Some(base.short_revision().to_string()),
        head: Some(head.short_revision().to_string()),
        diffs: by_name,
        exit_code,
    })
}

/// In a pull request, the config keys a DaemonSet's change touches are the base's against
/// the head's (`daemonsync.io/config` of both renderings), whatever the cluster runs.
fn config_changes_from_base(plan: &mut Plan, base: &[Desired], head: &[Desired]) {
    use crate::manifest::versioning::template_digests;
    let find = |all: &'_ [Desired], ns: &str, name: &str| {
        all.iter()
            .find(|d| {
                d.daemonset.metadata.namespace.as_deref() == Some(ns)
                    && d.daemonset.metadata.name.as_deref() == Some(name)
            })
            .map(|d| template_digests(&d.daemonset).map(str::to_string))
    };
    for ds in &mut plan.daemonsets {
        let (Some(old), Some(new)) = (
            find(base, &ds.namespace, &ds.name),
            find(head, &ds.namespace, &ds.name),
        ) else {
            continue;
        };
        ds.config_changes = plan::config::config_changes(old.as_deref(), new.as_deref());
    }
}

/// `--watch`: plan now, then once per burst of changes. Errors are printed and watching goes on.
async fn run_watch(opts: &PlanOptions) -> Result<i32> {
    let ManifestSource::Local(local) = &opts.source else {
        anyhow::bail!("--watch needs --manifests: a git source is not watched");
    };
    let observed = opts.cluster.observe_if_any().await?;
    let mut load_opts = opts.load.clone();
    let target = for_cluster(
        &mut load_opts,
        opts.kube_version,
        observed.as_ref().and_then(|o| o.version),
    )?;
    let once = || {
        let result = load(&opts.source, &load_opts).and_then(|l| {
            let mut run = plan_loaded(l, &target, observed.as_ref(), opts);
            // The source line is printed once per pass by the loader's caller, not here.
            run.source_line = None;
            print(&run, &opts.report)
        });
        if let Err(e) = result {
            eprintln!("error: {e:#}");
        }
    };
    once();
    // Watching blocks this thread until interrupted: the runtime's other threads go on.
    tokio::task::block_in_place(|| {
        crate::source::watch::watch_paths(&local.paths, crate::source::watch::DEBOUNCE, || {
            println!("\n--- change detected; re-planning ---\n");
            once();
            true
        })
    })?;
    Ok(EXIT_OK)
}

/// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
pub(crate) fn color_enabled() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

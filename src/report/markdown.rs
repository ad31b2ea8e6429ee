//! The plan as a pull-request comment (GitHub-flavoured Markdown).
//!
//! Layout, modelled on the plan-in-PR tools reviewers know (tfcmt, Atlantis,
//! argocd-diff-preview):
//!
//! 1. a hidden marker (`<!-- daemonsync-plan -->`) so a workflow can find and update its
//!    sticky comment, and an identity line: repository, base and head commits, cluster;
//! 2. the verdict and counts: DaemonSets changed, nodes that gain, lose or restart a pod,
//!    waves under the budgets;
//! 3. a prominent warning block when pods are deleted without replacement or a change is risky;
//! 4. one summary row per DaemonSet;
//! 5. one collapsible `<details>` section per DaemonSet: the manifest diff when known, errors,
//!    warnings, how pods take the new revision under `InPlaceIfPossible` (in place or
//!    recreated, and why), the progressive rollout (its stages, where it stands, the partition and the
//!    stable revision) for a DaemonSet with a rollout policy, and the nodes grouped by state
//!    (long groups collapsed with counts).
//!
//! GitHub rejects comments over 65,536 characters. Longer output is split at DaemonSet
//! boundaries into numbered parts; a single DaemonSet too large for one part is truncated with
//! a visible notice. Nothing is ever cut silently.

use super::counts::{Counts, Diffs, Impact, diff_of, removed, rolls};
use super::diff::{ManifestChange, change_of};
use super::phrases::{
    Markup, StageProgress, agree, count, differs_from_git, field_value, halt_text, node_reason,
    ownership_text, partition_holds, pause_after, pre_pull_text, readiness_lines, rollout_now,
    rollout_phase, rollout_shape, stable_gets, stage_name, stage_progress, stalled_text,
    step_only_gates, step_phase, strategy, suspension_label, suspension_text, update_text,
    warnings_beside_errors,
};
use crate::plan::{DaemonSetPlan, NodeState, NodeUpdate, Phase, Plan, RiskKind, Rollout};
use std::collections::BTreeMap;
use std::fmt::Write;

/// GitHub's limit on the body of an issue or pull-request comment, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// The start of the marker on the first line of every part: `<!-- daemonsync-plan:KEY -->`.
pub const MARKER_PREFIX: &str = "<!-- daemonsync-plan:";

/// The start of the marker on the second line of a part of a split plan:
/// `<!-- daemonsync-plan-part:N -->`. A comment without it is part 1.
pub const PART_MARKER_PREFIX: &str = "<!-- daemonsync-plan-part:";

/// The comment key when none is given.
pub const DEFAULT_COMMENT_KEY: &str = "default";

/// The hidden marker of the comments of `key`: `<!-- daemonsync-plan:KEY -->`.
pub fn marker(key: &str) -> String {
    format!("{MARKER_PREFIX}{key} -->")
}

/// The hidden marker of part `n` (from 1) of a split plan.
pub fn part_marker(n: usize) -> String {
    format!("{PART_MARKER_PREFIX}{n} -->")
}

/// Checks a comment key: it goes into an HTML comment, so only letters, digits, `.`, `_`
/// and single `-`, at most 64 characters.
pub fn check_comment_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !key.contains("--");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid comment key {key:?}: use 1 to 64 letters, digits, '.', '_' or '-' (no \
             '--'), e.g. `prod-eu`"
        ))
    }
}

/// Largest part produced, in characters: the limit less room for the part heading.
const PART_BUDGET: usize = GITHUB_COMMENT_LIMIT - 1_024;

/// Node rows listed per state in a DaemonSet's section before "… and N more".
const ROWS_PER_STATE: usize = 25;

/// DaemonSet rows in the summary table before "… and N more".
const SUMMARY_ROWS: usize = 200;

/// Stage rows in a DaemonSet's rollout table before "… and N more".
const STAGE_ROWS: usize = 50;

/// Node names in a stage's row before "… and N more".
const STAGE_NAMES: usize = 10;

/// Where the plan comes from, for the identity line, and which sticky comment it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkdownContext {
    /// `owner/name` of the repository, when known.
    pub repository: Option<String>,
    /// Base commit (or ref) of the pull request.
    pub base: Option<String>,
    /// Head commit (or ref) of the pull request.
    pub head: Option<String>,
    /// The cluster or snapshot the plan was computed against, e.g. `snapshot:cluster.yaml`.
    pub cluster: String,
    /// The key in the marker (`<!-- daemonsync-plan:KEY -->`), so that plans of different
    /// clusters keep separate comments in one pull request. See [`check_comment_key`].
    pub comment_key: String,
    /// What rendered the manifests and for which Kubernetes version
    /// (`rendered: base overlays/prod with kustomize v5.5.0 via kubectl; head …`), when
    /// they were rendered.
    pub rendered: Option<String>,
}

impl Default for MarkdownContext {
    fn default() -> Self {
        MarkdownContext {
            repository: None,
            base: None,
            head: None,
            cluster: String::new(),
            comment_key: DEFAULT_COMMENT_KEY.into(),
            rendered: None,
        }
    }
}

impl MarkdownContext {
    fn marker(&self) -> String {
        marker(&self.comment_key)
    }
}

/// True when the plan is reported in one line: nothing changes (no step, no manifest diff),
/// nothing is risky, in error or stalled, and no progressive rollout stands half-way (paused, halted).
/// A sticky-comment workflow then creates no comment if it has none.
pub fn is_quiet(plan: &Plan, diffs: &Diffs) -> bool {
    !plan.has_changes()
        && diffs.values().all(|d| d.trim().is_empty())
        && plan.daemonsets.iter().all(|d| {
            d.risks.is_empty()
                && d.errors.is_empty()
                && d.stalled.is_none()
                && d.rollout
                    .as_ref()
                    .is_none_or(|r| r.phase == Phase::Complete)
        })
}

/// The report before it is cut into comments: a single line, or a header then one section
/// per DaemonSet.
enum Document {
    Line(String),
    Full {
        header: String,
        sections: Vec<String>,
    },
}

fn document(plan: &Plan, ctx: &MarkdownContext, diffs: &Diffs) -> Document {
    if is_quiet(plan, diffs) {
        return Document::Line(quiet_line(plan, ctx));
    }
    let mut sections: Vec<String> = plan
        .daemonsets
        .iter()
        .map(|ds| section(ds, diff_of(ds, diffs), plan.manifest_only))
        .collect();
    sections.extend(
        removed(diffs)
            .into_iter()
            .map(|((ns, name), d)| removed_section(ns, name, d)),
    );
    Document::Full {
        header: header(plan, ctx, diffs),
        sections,
    }
}

fn quiet_line(plan: &Plan, ctx: &MarkdownContext) -> String {
    let n = plan.daemonsets.len();
    let marker = ctx.marker();
    let dss = count(n, "DaemonSet");
    let rendered = rendered(ctx).map_or_else(String::new, |r| format!(" {r}."));
    if !plan.manifest_only {
        return format!(
            "{marker} **daemonsync plan: no changes.** {dss} on {} already {} the \
             manifests.{rendered}\n",
            code(&ctx.cluster),
            agree(n, "matches", "match")
        );
    }
    if ctx.base.is_some() {
        format!(
            "{marker} **daemonsync plan: no changes.** The manifests of {dss} are the same on \
             base and head and show no risks (manifest only: no cluster state was \
             read).{rendered}\n"
        )
    } else {
        format!(
            "{marker} **daemonsync plan:** {dss} valid; their manifests show no risks \
             (manifest only: no cluster state was read, so nothing is said about \
             nodes).{rendered}\n"
        )
    }
}

/// Renders the plan as one or more comment bodies, each under [`GITHUB_COMMENT_LIMIT`]
/// characters, each starting with the marker of `ctx.comment_key`. `diffs` holds the unified
/// manifest diff of each DaemonSet, keyed by (namespace, name); DaemonSets without an entry
/// get no diff block, and a diff of a DaemonSet removed on head gets its own section.
///
/// A plan with no changes, risks or diffs ([`is_quiet`]) gives a single one-line comment.
pub fn to_markdown(plan: &Plan, ctx: &MarkdownContext, diffs: &Diffs) -> Vec<String> {
    let (header, sections) = match document(plan, ctx, diffs) {
        Document::Line(line) => return vec![line],
        Document::Full { header, sections } => (header, sections),
    };
    let total = header.len() + sections.iter().map(String::len).sum::<usize>();
    if total <= PART_BUDGET {
        let mut out = header;
        sections.iter().for_each(|s| out.push_str(s));
        return vec![out];
    }
    split(header, sections, ctx)
}

/// The whole report as one document of at most `max_bytes` bytes, for a page without the
/// comment limit (a job summary): the header first, then as many whole DaemonSet sections as
/// fit, then, when some did not, a notice naming how many are left out followed by
/// `pointer` (where the full plan is).
pub fn to_summary(
    plan: &Plan,
    ctx: &MarkdownContext,
    diffs: &Diffs,
    max_bytes: usize,
    pointer: &str,
) -> String {
    let (header, sections) = match document(plan, ctx, diffs) {
        Document::Line(line) => (line, Vec::new()),
        Document::Full { header, sections } => (header, sections),
    };
    let marker_line = format!("{}\n", ctx.marker());
    let mut out = header
        .strip_prefix(&marker_line)
        .or_else(|| header.strip_prefix(&format!("{} ", ctx.marker())))
        .unwrap_or(&header)
        .to_string();
    let notice = |left: usize, what: &str| {
        format!(
            "\n> [!NOTE]\n> **Truncated:** {left} {what} not shown here (a job summary holds at \
             most 1 MiB). {pointer}\n"
        )
    };
    const CUT_HEADER: &str = "more characters of the header and every section are";
    // Room for the notice, whatever the numbers and words in it.
    let reserve = notice(usize::MAX, CUT_HEADER).len();
    if out.len() + reserve > max_bytes {
        let cut = floor_line(&out, max_bytes.saturating_sub(reserve));
        let left = out[cut..].len();
        out.truncate(cut);
        out.push_str(&notice(left, CUT_HEADER));
        return out;
    }
    let mut shown = 0;
    for s in &sections {
        if out.len() + s.len() + reserve > max_bytes {
            break;
        }
        out.push_str(s);
        shown += 1;
    }
    let left = sections.len() - shown;
    if left > 0 {
        out.push_str(&notice(
            left,
            agree(left, "DaemonSet section is", "DaemonSet sections are"),
        ));
    }
    out
}

/// A comment saying that the plan could not be computed, with the error, so that a stale
/// plan does not stay on the pull request as if it were current.
pub fn failure(ctx: &MarkdownContext, error: &str) -> String {
    let fence = if error.contains("```") { "````" } else { "```" };
    let max = PART_BUDGET - 2_048;
    let cut;
    let error = if error.len() > max {
        let end = floor_line(error, max);
        cut = format!(
            "{}\n… {} more characters; run the command locally for the whole error",
            &error[..end],
            error.len() - end
        );
        cut.as_str()
    } else {
        error
    };
    format!(
        "{}\n### daemonsync plan\n\n{}\n\n> [!CAUTION]\n> **The plan failed.** Nothing was \
         planned; the error is below. Fix it and push again.\n\n{fence}text\n{}\n{fence}\n",
        ctx.marker(),
        identity(ctx),
        error.trim_end()
    )
}

/// Packs sections into parts at DaemonSet boundaries, then numbers the parts.
fn split(header: String, sections: Vec<String>, ctx: &MarkdownContext) -> Vec<String> {
    let mut bodies = vec![header];
    for s in sections {
        let last = bodies.last_mut().expect("at least the header");
        if last.len() + s.len() <= PART_BUDGET {
            last.push_str(&s);
        } else {
            bodies.push(s);
        }
    }
    let n = bodies.len();
    let marker = ctx.marker();
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            // The key marker stays the first line of every part, the part marker the second.
            let mut part = format!("{marker}\n{}\n", part_marker(i + 1));
            if i == 0 {
                let rest = body
                    .strip_prefix(&marker)
                    .map_or(body.as_str(), |r| r.trim_start_matches('\n'));
                let _ = write!(
                    part,
                    "**Part 1 of {n}** (continued in the next comments)\n{rest}"
                );
            } else {
                let _ = writeln!(
                    part,
                    "**daemonsync plan — part {} of {n}** · {}\n",
                    i + 1,
                    identity(ctx)
                );
                part.push_str(&body);
            }
            part
        })
        .collect()
}

fn identity(ctx: &MarkdownContext) -> String {
    let mut parts = Vec::new();
    if let Some(r) = &ctx.repository {
        parts.push(code(r));
    }
    match (&ctx.base, &ctx.head) {
        (Some(b), Some(h)) => parts.push(format!("{} → {}", code(short(b)), code(short(h)))),
        (None, Some(h)) => parts.push(format!("head {}", code(short(h)))),
        (Some(b), None) => parts.push(format!("base {}", code(short(b)))),
        (None, None) => {}
    }
    parts.push(format!("cluster {}", code(&ctx.cluster)));
    let mut line = parts.join(" · ");
    if let Some(r) = rendered(ctx) {
        line.push_str("\n\n");
        line.push_str(&r);
    }
    line
}

/// `Rendered: base overlays/prod with kustomize v5.5.0 via kubectl; …`, when the manifests
/// were rendered.
fn rendered(ctx: &MarkdownContext) -> Option<String> {
    let text = ctx.rendered.as_deref()?;
    let text = text.strip_prefix("rendered: ").unwrap_or(text);
    Some(format!("Rendered: {}", escape(text)))
}

/// The first 12 characters of a commit hash; other refs as they are.
fn short(r: &str) -> &str {
    if r.len() > 12 && r.chars().all(|c| c.is_ascii_hexdigit()) {
        &r[..12]
    } else {
        r
    }
}

fn header(plan: &Plan, ctx: &MarkdownContext, diffs: &Diffs) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", ctx.marker());
    let _ = writeln!(out, "### daemonsync plan\n");
    let _ = writeln!(out, "{}\n", identity(ctx));
    let counts = Counts::of(plan, diffs);
    if plan.manifest_only {
        let _ = writeln!(
            out,
            "**Manifest only:** no cluster state was read (`--cluster none`), so this plan says \
             nothing about nodes: it shows the manifest changes, that every DaemonSet is valid, \
             and the risks visible in the manifests · {} of {} changed · {}\n",
            counts.changed,
            count(counts.daemonsets, "DaemonSet"),
            count(counts.risks, "risk"),
        );
    } else {
        verdict(&mut out, plan, &counts);
    }
    error_block(&mut out, plan);
    stalled_block(&mut out, plan);
    risk_block(&mut out, plan);
    removed_note(&mut out, diffs);
    if plan.manifest_only {
        manifest_table(&mut out, plan, ctx, diffs);
    } else {
        counters_table(&mut out, plan);
    }
    out
}

fn verdict(out: &mut String, plan: &Plan, counts: &Counts) {
    let waves = plan.daemonsets.iter().map(|d| d.waves.len()).max();
    let stuck = plan.daemonsets.iter().filter(|d| !d.converges).count();
    let failing = plan.daemonsets.iter().any(|d| !d.errors.is_empty());
    let waiting = plan.daemonsets.iter().any(|d| {
        d.phase()
            .is_some_and(|p| matches!(p, Phase::Paused | Phase::Halted))
    });
    let verdict = if plan.has_changes() {
        "Changes"
    } else if failing {
        "No pod changes in the next step: errors stop a DaemonSet"
    } else if waiting {
        "No pod changes in the next step: a rollout waits"
    } else if counts.changed > 0 {
        "Manifests changed; no pod changes in the next step"
    } else {
        "No changes in the next step"
    };
    let Impact {
        gain,
        lose,
        restart,
    } = counts.impact;
    let _ = writeln!(
        out,
        "**{verdict}:** {} of {} changed · nodes that **gain** a pod: {gain} · **lose** a pod: \
         {lose} · **restart** a pod: {restart} · {} under the budgets{}\n",
        counts.changed,
        count(counts.daemonsets, "DaemonSet"),
        count(waves.unwrap_or(0), "wave"),
        if stuck > 0 {
            format!(
                " · **{} {} not converge**",
                count(stuck, "DaemonSet"),
                agree(stuck, "does", "do")
            )
        } else {
            String::new()
        },
    );
}

/// Rollouts whose record says they cannot make progress: a reviewer sees them before the
/// changes, since a new commit may be what unsticks them (or meets the same wall).
fn stalled_block(out: &mut String, plan: &Plan) {
    let stalled: Vec<(&DaemonSetPlan, &crate::plan::Stalled)> = plan
        .daemonsets
        .iter()
        .filter_map(|d| Some((d, d.stalled.as_ref()?)))
        .collect();
    if stalled.is_empty() {
        return;
    }
    let _ = writeln!(out, "> [!CAUTION]");
    let _ = writeln!(
        out,
        "> **Stalled rollouts.** Their records say they cannot make progress."
    );
    for (ds, s) in stalled {
        let _ = writeln!(
            out,
            "> - **{}/{}** stalled {}",
            escape(&ds.namespace),
            escape(&ds.name),
            stalled_text(s, PROSE)
        );
    }
    out.push('\n');
}

fn risk_block(out: &mut String, plan: &Plan) {
    let risky: Vec<(&DaemonSetPlan, &crate::plan::Risk)> = plan
        .daemonsets
        .iter()
        .flat_map(|d| d.risks.iter().map(move |r| (d, r)))
        .collect();
    if risky.is_empty() {
        return;
    }
    let removed = risky.iter().any(|(_, r)| r.kind == RiskKind::PodsRemoved);
    let _ = writeln!(out, "> [!WARNING]");
    if removed {
        let _ = writeln!(
            out,
            "> **Pods will be deleted without replacement.** Review the nodes named below."
        );
    } else {
        let _ = writeln!(out, "> **Risky changes.** Review before merging.");
    }
    for (ds, r) in &risky {
        let _ = writeln!(
            out,
            "> - **{}/{}** `{}`: {}",
            escape(&ds.namespace),
            escape(&ds.name),
            r.kind,
            escape(&r.message)
        );
    }
    out.push('\n');
}

/// Errors only the cluster reveals (a `waves-by` label no node has): nothing is done for
/// those DaemonSets, which must stop a reviewer first.
fn error_block(out: &mut String, plan: &Plan) {
    let failing: Vec<(&DaemonSetPlan, &String)> = plan
        .daemonsets
        .iter()
        .flat_map(|d| d.errors.iter().map(move |e| (d, e)))
        .collect();
    if failing.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "> [!CAUTION]\n> **Errors: nothing is done for these DaemonSets until they are fixed.**"
    );
    for (ds, e) in &failing {
        let _ = writeln!(
            out,
            "> - **{}/{}**: {}",
            escape(&ds.namespace),
            escape(&ds.name),
            escape(e)
        );
    }
    out.push('\n');
}

/// DaemonSets removed on head: their pods stay, which a reviewer must know.
fn removed_note(out: &mut String, diffs: &Diffs) {
    let gone = removed(diffs);
    if gone.is_empty() {
        return;
    }
    let names: Vec<String> = gone
        .iter()
        .map(|((ns, name), _)| format!("**{}/{}**", escape(ns), escape(name)))
        .collect();
    let _ = writeln!(
        out,
        "> [!NOTE]\n> **Removed on head:** {}. Their pods are **not** deleted (daemonsync does \
         not prune); delete them explicitly if that is intended.\n",
        names.join(", ")
    );
}

fn counters_table(out: &mut String, plan: &Plan) {
    let _ = writeln!(
        out,
        "| DaemonSet | Desired | Up-to-date | Available | Gain | Lose | Restart | Waves | Next step |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|---|");
    for ds in plan.daemonsets.iter().take(SUMMARY_ROWS) {
        let s = &ds.status;
        let i = Impact::of(ds);
        let waves = if ds.converges {
            ds.waves.len().to_string()
        } else {
            "stalled".into()
        };
        let _ = writeln!(
            out,
            "| {}/{} | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape(&ds.namespace),
            escape(&ds.name),
            s.desired_number_scheduled,
            s.updated_number_scheduled,
            s.number_available,
            i.gain,
            i.lose,
            i.restart,
            waves,
            match &ds.rollout {
                Some(r) => format!("{} · rollout: {}", next_step(ds), r.phase),
                None => next_step(ds),
            }
        );
    }
    more_rows(out, plan);
}

/// The summary of a manifest-only plan: no counters, which would all read 0.
fn manifest_table(out: &mut String, plan: &Plan, ctx: &MarkdownContext, diffs: &Diffs) {
    let pr = ctx.base.is_some();
    let _ = writeln!(
        out,
        "| DaemonSet |{} Strategy | Risks |",
        if pr { " Manifest |" } else { "" }
    );
    let _ = writeln!(out, "|---|{}---|---|", if pr { "---|" } else { "" });
    for ds in plan.daemonsets.iter().take(SUMMARY_ROWS) {
        let manifest = if !pr {
            String::new()
        } else {
            let change = match diff_of(ds, diffs).map(change_of) {
                None => "unchanged",
                Some(ManifestChange::Added) => "added",
                Some(_) => "changed",
            };
            format!(" {change} |")
        };
        let risks: Vec<String> = ds.risks.iter().map(|r| format!("`{}`", r.kind)).collect();
        let _ = writeln!(
            out,
            "| {}/{} |{manifest} {} | {} |",
            escape(&ds.namespace),
            escape(&ds.name),
            escape(&strategy(ds)),
            if risks.is_empty() {
                "none".into()
            } else {
                risks.join(", ")
            }
        );
    }
    more_rows(out, plan);
}

fn more_rows(out: &mut String, plan: &Plan) {
    if plan.daemonsets.len() > SUMMARY_ROWS {
        let _ = writeln!(
            out,
            "\n… and {} more DaemonSets, each in its own section below.",
            plan.daemonsets.len() - SUMMARY_ROWS
        );
    }
    out.push('\n');
}

fn next_step(ds: &DaemonSetPlan) -> String {
    let step = &ds.step;
    if ds.is_blocked() {
        return "none (blocked: `builtin-controller`)".into();
    }
    if step.is_empty() {
        return if ds.suspended == Some(crate::plan::suspend::Suspension::Frozen) {
            "none (frozen)".into()
        } else if ds.errors.is_empty() {
            "none".into()
        } else {
            "none (errors)".into()
        };
    }
    let mut actions = Vec::new();
    if !step.create.is_empty() {
        actions.push(format!("create {}", step.create.len()));
    }
    if !step.create_stable.is_empty() {
        actions.push(format!(
            "create {} of the stable revision",
            step.create_stable.len()
        ));
    }
    if !step.delete.is_empty() {
        actions.push(format!("delete {}", step.delete.len()));
    }
    if !step.in_place.is_empty() {
        actions.push(format!("update {} in place", step.in_place.len()));
    }
    if !step.open_gates.is_empty() {
        actions.push(format!("mark {} ready", step.open_gates.len()));
    }
    if !step.pre_pull.is_empty() {
        actions.push(format!("pre-pull on {}", step.pre_pull.len()));
    }
    if !step.pre_pull_cleanup.is_empty() {
        actions.push(format!("remove {} pre-pull", step.pre_pull_cleanup.len()));
    }
    if !step.remove_taints.is_empty() {
        actions.push(format!(
            "remove readiness taint from {}",
            step.remove_taints.len()
        ));
    }
    let phase = match step_phase(step.phase) {
        Some(phase) => phase,
        // Only readiness conditions to set: they come from no phase of the reconcile.
        None if step_only_gates(step) => return actions.join(", "),
        None => "",
    };
    format!("{} ({phase})", actions.join(", "))
}

/// One DaemonSet's collapsible section; truncated with a notice if it alone would not fit in
/// a part. A manifest-only plan has no node table (no node was looked at).
fn section(ds: &DaemonSetPlan, diff: Option<&str>, manifest_only: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<details><summary><b>{}/{}</b>: {}</summary>\n",
        escape(&ds.namespace),
        escape(&ds.name),
        summary_line(ds, diff, manifest_only)
    );
    let _ = write!(
        out,
        "Source {} · revision {} · {}",
        code(&ds.source),
        code(&ds.revision),
        code(&strategy(ds)),
    );
    if ds.strategy.type_ == "RollingUpdate" && !manifest_only {
        let _ = write!(
            out,
            " · budgets: maxUnavailable {}, maxSurge {}",
            ds.budgets.max_unavailable, ds.budgets.max_surge
        );
    }
    out.push_str("\n\n");
    for e in &ds.errors {
        let _ = writeln!(out, "- :x: **error:** {}", escape(e));
    }
    if let Some(s) = &ds.stalled {
        let _ = writeln!(out, "- :x: **stalled** {}", stalled_text(s, PROSE));
    }
    for r in &ds.risks {
        let _ = writeln!(out, "- :warning: `{}`: {}", r.kind, escape(&r.message));
    }
    for w in warnings_beside_errors(ds) {
        let _ = writeln!(out, "- :warning: {}", escape(w));
    }
    if !ds.errors.is_empty()
        || ds.stalled.is_some()
        || !ds.risks.is_empty()
        || !ds.warnings.is_empty()
    {
        out.push('\n');
    }
    if let Some(ip) = &ds.in_place {
        let _ = writeln!(out, "**Update:** {}\n", update_text(ip, PROSE));
    }
    if !ds.config_changes.is_empty() {
        out.push_str("**Config:**\n\n");
        for c in &ds.config_changes {
            let _ = writeln!(out, "- {}", escape(&c.to_string()));
        }
        out.push('\n');
    }
    if let Some(text) = ownership_text(&ds.ownership) {
        let _ = writeln!(out, "**Ownership:** {}\n", escape(&text));
    }
    if let Some(s) = &ds.suspended {
        let _ = writeln!(
            out,
            "**{}:** {}\n",
            suspension_label(s),
            suspension_text(s, PROSE)
        );
    }
    if let Some(pp) = &ds.pre_pull {
        let _ = writeln!(out, "**Pre-pull:** {}\n", pre_pull_text(pp));
    }
    if let Some(r) = &ds.rollout {
        rollout_section(&mut out, ds, r);
    }
    if ds.readiness.as_ref().is_some_and(|r| !r.nodes.is_empty()) {
        let _ = writeln!(out, "**Readiness taint:**\n");
        for line in readiness_lines(ds, READINESS_NODES, PROSE) {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
    if let Some(diff) = &ds.live_diff {
        let _ = writeln!(
            out,
            "The live DaemonSet {} (live → git):\n",
            differs_from_git(diff)
        );
        for f in &diff.fields {
            let _ = writeln!(
                out,
                "- {}: {} → {}",
                code(&f.path),
                field_value(&f.live, PROSE),
                field_value(&f.git, PROSE)
            );
        }
        if diff.more > 0 {
            let _ = writeln!(out, "- … and {} more", diff.more);
        }
        out.push('\n');
    }
    let budget = PART_BUDGET - 4_096;
    if let Some(diff) = diff {
        out.push_str(&diff_block(diff, budget / 2));
    }
    if !manifest_only {
        node_table(&mut out, ds);
    }
    if out.len() > budget {
        let cut = floor_line(&out, budget);
        let omitted = out.len() - cut;
        out.truncate(cut);
        let _ = writeln!(
            out,
            "\n> [!NOTE]\n> **Truncated:** {omitted} more characters of this section are not \
             shown (GitHub's comment limit). Run `daemonsync plan -o table` for the full plan.\n"
        );
    }
    out.push_str("</details>\n\n");
    out
}

/// The section of a DaemonSet removed on head: its diff, and that its pods stay.
fn removed_section(ns: &str, name: &str, diff: &str) -> String {
    format!(
        "<details><summary><b>{}/{}</b>: removed on head; its pods are left running (no \
         pruning)</summary>\n\n{}</details>\n\n",
        escape(ns),
        escape(name),
        diff_block(diff, (PART_BUDGET - 4_096) / 2)
    )
}

fn summary_line(ds: &DaemonSetPlan, diff: Option<&str>, manifest_only: bool) -> String {
    let manifest = diff.map(|d| match change_of(d) {
        ManifestChange::Added => "new DaemonSet",
        _ => "manifest changed",
    });
    if manifest_only {
        let risks = match ds.risks.len() {
            0 => String::new(),
            n => format!("; {}", count(n, "risk")),
        };
        return format!("{}{risks}", manifest.unwrap_or("manifest unchanged"));
    }
    if !rolls(ds) {
        let what = match manifest {
            Some(m) => format!("{m}; no pod changes"),
            None => "no changes".into(),
        };
        return if ds.converges {
            what
        } else {
            format!("{what} in the next step; does not converge")
        };
    }
    let i = Impact::of(ds);
    let mut parts = Vec::new();
    if i.gain > 0 {
        parts.push(format!("new pod on {}", count(i.gain, "node")));
    }
    if i.lose > 0 {
        parts.push(format!("pod removed from {}", count(i.lose, "node")));
    }
    if i.restart > 0 {
        let in_place = ds
            .nodes
            .iter()
            .filter(|n| n.update == Some(NodeUpdate::InPlace))
            .count();
        let restarted = format!("pod restarted on {}", count(i.restart, "node"));
        parts.push(if in_place > 0 {
            format!("{restarted} ({in_place} in place)")
        } else {
            restarted
        });
    }
    if parts.is_empty() {
        parts.push(format!("next step: {}", next_step(ds)));
    }
    if let Some(r) = &ds.rollout {
        let shape = rollout_shape(r);
        if !shape.is_empty() {
            parts.push(shape);
        }
        let now = rollout_now(r);
        return escape(&format!("{}; {now}", parts.join("; ")));
    }
    let waves = if ds.converges {
        count(ds.waves.len(), "wave")
    } else {
        "does not converge".into()
    };
    format!("{}; {waves}", parts.join(", "))
}

/// A fenced diff block, cut at a line boundary with a notice when longer than `max`.
fn diff_block(diff: &str, max: usize) -> String {
    let fence = if diff.contains("```") { "````" } else { "```" };
    let mut out = format!("{fence}diff\n");
    if diff.len() > max {
        let cut = floor_line(diff, max);
        out.push_str(&diff[..cut]);
        let _ = writeln!(
            out,
            "{fence}\n\n**Diff truncated:** {} more lines not shown.\n",
            diff[cut..].lines().count()
        );
    } else {
        out.push_str(diff);
        if !diff.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{fence}\n");
    }
    out
}

/// The largest index ≤ `max` that ends a line (or 0).
fn floor_line(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].rfind('\n').map_or(0, |i| i + 1)
}

/// The rollout of a DaemonSet with a rollout policy: where it stands, its stages in order
/// (nodes, projected waves, the pause after each), the partition, the stable revision and the
/// halt threshold.
fn rollout_section(out: &mut String, ds: &DaemonSetPlan, r: &Rollout) {
    let at = match r.stages.get(r.stage as usize) {
        Some(_) if r.phase != Phase::Complete => {
            format!(" · stage {} of {}", r.stage + 1, r.stages.len())
        }
        _ => String::new(),
    };
    let _ = writeln!(out, "**Rollout:** {}{at}\n", escape(&rollout_phase(r)));
    if !r.stages.is_empty() {
        let states: BTreeMap<&str, NodeState> =
            ds.nodes.iter().map(|n| (&*n.node, n.state)).collect();
        let _ = writeln!(
            out,
            "| Order | Stage | Nodes | Projected waves | Pause after |\n|--:|---|---|--:|---|"
        );
        for (k, s) in r.stages.iter().enumerate().take(STAGE_ROWS) {
            let k = k as u32;
            let mut stage = stage_name(s, CELL);
            if k == r.stage && r.phase != Phase::Complete {
                stage = format!("**{stage}** ← current");
            }
            let mut names: Vec<String> = s
                .nodes
                .iter()
                .take(STAGE_NAMES)
                .map(|n| escape(n))
                .collect();
            if s.nodes.len() > STAGE_NAMES {
                names.push(format!("… and {} more", s.nodes.len() - STAGE_NAMES));
            }
            let waves = match stage_progress(ds, &states, s, k) {
                StageProgress::Done => "done".to_string(),
                StageProgress::Waves(n) => n.to_string(),
            };
            let pause = match (pause_after(s), s.pause) {
                (Some(p), _) => escape(&p.to_string()),
                (None, Some(_)) => "none".into(),
                (None, None) => "—".into(),
            };
            let _ = writeln!(
                out,
                "| {} | {stage} | {}: {} | {waves} | {pause} |",
                k + 1,
                s.nodes.len(),
                names.join(", ")
            );
        }
        if r.stages.len() > STAGE_ROWS {
            let _ = writeln!(
                out,
                "| … | and {} more stages | | | |",
                r.stages.len() - STAGE_ROWS
            );
        }
        out.push('\n');
    }
    let mut notes = Vec::new();
    if let Some(p) = &r.partition {
        notes.push(if p.nodes.is_empty() {
            format!("Partition {}: {}.", code(&p.count), partition_holds(0))
        } else {
            let mut names: Vec<String> = p
                .nodes
                .iter()
                .take(STAGE_NAMES)
                .map(|n| escape(n))
                .collect();
            if p.nodes.len() > STAGE_NAMES {
                names.push(format!("… and {} more", p.nodes.len() - STAGE_NAMES));
            }
            format!(
                "Partition {}: {}: {}.",
                code(&p.count),
                partition_holds(p.nodes.len()),
                names.join(", ")
            )
        });
    }
    notes.push(match &r.stable_revision {
        Some(rev) => format!("Stable revision {}: {}.", code(rev), stable_gets(r)),
        None => format!("Stable revision: none known; {}.", stable_gets(r)),
    });
    if r.halt_threshold > 0 {
        notes.push(format!("{}.", halt_text(r)));
    }
    for n in notes {
        let _ = writeln!(out, "{n}  ");
    }
    // The last line ends the paragraph, not a hard break.
    if out.ends_with("  \n") {
        out.truncate(out.len() - 3);
        out.push('\n');
    }
    out.push('\n');
}

/// Nodes grouped by state: states needing attention as rows (collapsed after
/// [`ROWS_PER_STATE`]), the others as counts.
fn node_table(out: &mut String, ds: &DaemonSetPlan) {
    let nodes = &ds.nodes;
    let mut groups: BTreeMap<NodeState, Vec<&crate::plan::NodeEntry>> = BTreeMap::new();
    for n in nodes.iter() {
        groups.entry(n.state).or_default().push(n);
    }
    let quiet: Vec<String> = groups
        .iter()
        .filter(|(s, _)| !s.needs_attention())
        .map(|(s, n)| format!("{} {s}", n.len()))
        .collect();
    let attention: Vec<_> = groups.iter().filter(|(s, _)| s.needs_attention()).collect();
    if attention.is_empty() {
        let _ = writeln!(out, "All {} nodes: {}.\n", nodes.len(), quiet.join(", "));
        return;
    }
    let _ = writeln!(out, "| Node | State | Reason |\n|---|---|---|");
    for (state, entries) in attention {
        for n in entries.iter().take(ROWS_PER_STATE) {
            let _ = writeln!(
                out,
                "| {} | {state} | {} |",
                escape(&n.node),
                escape(&node_reason(ds, n))
            );
        }
        if entries.len() > ROWS_PER_STATE {
            let _ = writeln!(
                out,
                "| … and {} more | {state} | |",
                entries.len() - ROWS_PER_STATE
            );
        }
    }
    out.push('\n');
    if !quiet.is_empty() {
        let _ = writeln!(out, "Not listed: {}.\n", quiet.join(", "));
    }
}

/// Nodes carrying a readiness taint a section lists before `… and N more`.
const READINESS_NODES: usize = 20;

/// Markdown outside tables: names and values as inline code, free text escaped.
const PROSE: Markup = Markup { code, text: escape };

/// Markdown in a table cell: names and values as inline code, escaped (a pipe would end the
/// cell), free text escaped.
const CELL: Markup = Markup {
    code: |s| format!("`{}`", escape(s)),
    text: escape,
};

/// Escapes text for a Markdown table cell or inline HTML: pipes, HTML, line breaks.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Inline code (outside tables) that survives backticks in the text.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testing::known_plan;

    fn ctx() -> MarkdownContext {
        MarkdownContext {
            repository: Some("acme/fleet".into()),
            base: Some("0123456789abcdef0123".into()),
            head: Some("fedcba9876543210fedc".into()),
            cluster: "snapshot:cluster.yaml".into(),
            ..MarkdownContext::default()
        }
    }

    #[test]
    fn identity_verdict_and_sections() {
        let parts = to_markdown(&known_plan(), &ctx(), &BTreeMap::new());
        assert_eq!(parts.len(), 1);
        let md = &parts[0];
        assert!(md.starts_with("<!-- daemonsync-plan:default -->\n"), "{md}");
        assert!(
            md.contains(
                "`acme/fleet` · `0123456789ab` → `fedcba987654` · cluster `snapshot:cluster.yaml`"
            ),
            "{md}"
        );
        assert!(md.contains("**Changes:** 1 of 1 DaemonSet changed"), "{md}");
        assert!(
            md.contains("> **Pods will be deleted without replacement.**"),
            "{md}"
        );
        assert!(md.contains("<details><summary><b>infra/agent</b>"), "{md}");
        assert!(md.contains("| m1 | misscheduled |"), "{md}");
        assert!(md.trim_end().ends_with("</details>"), "{md}");
    }

    #[test]
    fn diff_goes_in_the_section() {
        let mut diffs = BTreeMap::new();
        diffs.insert(
            ("infra".to_string(), "agent".to_string()),
            "-image: a:1\n+image: a:2\n".to_string(),
        );
        let md = to_markdown(&known_plan(), &ctx(), &diffs).remove(0);
        assert!(
            md.contains("```diff\n-image: a:1\n+image: a:2\n```\n"),
            "{md}"
        );
    }

    #[test]
    fn the_marker_carries_the_comment_key() {
        let ctx = MarkdownContext {
            comment_key: "prod-eu".into(),
            ..ctx()
        };
        let md = to_markdown(&known_plan(), &ctx, &BTreeMap::new()).remove(0);
        assert!(md.starts_with("<!-- daemonsync-plan:prod-eu -->\n"), "{md}");
        assert!(
            !md.contains(PART_MARKER_PREFIX),
            "one part has no part marker"
        );
        for good in ["default", "prod-eu", "a.b_c", "X1"] {
            assert_eq!(check_comment_key(good), Ok(()), "{good}");
        }
        for bad in ["", "a b", "a-->b", "a--b", "<x>", "ä", &"k".repeat(65)] {
            let err = check_comment_key(bad).unwrap_err();
            assert!(err.contains("letters, digits"), "{err}");
        }
    }

    #[test]
    fn a_quiet_plan_is_one_line_even_without_a_cluster() {
        let d = crate::report::testing::daemonset("infra", "logs", serde_json::json!({}));
        let p =
            crate::plan::plan_manifests(&[d], &Default::default(), crate::report::testing::now());
        assert!(is_quiet(&p, &BTreeMap::new()));
        let none = MarkdownContext {
            cluster: "none".into(),
            ..ctx()
        };
        let md = to_markdown(&p, &none, &BTreeMap::new());
        assert_eq!(md.len(), 1);
        assert_eq!(md[0].lines().count(), 1, "{}", md[0]);
        assert!(
            md[0].contains("manifest only: no cluster state was read"),
            "{}",
            md[0]
        );
        assert!(!md[0].contains("already match"), "{}", md[0]);
    }

    #[test]
    fn summary_keeps_the_header_and_whole_sections_within_its_budget() {
        use crate::cluster::synthetic::{fleet, fleet_now};
        let (desired, observed) = fleet(2_000, 20, 7);
        let plan = crate::plan::plan(&desired, &observed, &Default::default(), fleet_now());
        let full = to_summary(
            &plan,
            &ctx(),
            &BTreeMap::new(),
            usize::MAX,
            "see the comment",
        );
        assert!(!full.contains("**Truncated:**"));
        assert!(
            !full.contains(MARKER_PREFIX),
            "no hidden marker in a summary"
        );
        assert!(full.starts_with("### daemonsync plan\n"), "summary first");
        let budget = full.len() / 3;
        let cut = to_summary(&plan, &ctx(), &BTreeMap::new(), budget, "POINTER");
        assert!(cut.len() <= budget, "{} > {budget}", cut.len());
        assert!(cut.starts_with("### daemonsync plan\n"));
        assert!(
            cut.contains("DaemonSet sections are not shown here"),
            "{cut}"
        );
        assert!(cut.trim_end().ends_with("POINTER"));
        assert_eq!(
            cut.matches("<details>").count(),
            cut.matches("</details>").count(),
            "sections are whole"
        );
        // A budget below the header itself still gives a bounded, marked summary.
        let tiny = to_summary(&plan, &ctx(), &BTreeMap::new(), 1_000, "POINTER");
        assert!(tiny.len() <= 1_000 && tiny.contains("POINTER"), "{tiny}");
    }

    #[test]
    fn failure_comment_carries_the_marker_and_the_error() {
        let ctx = MarkdownContext {
            comment_key: "k".into(),
            ..ctx()
        };
        let md = failure(
            &ctx,
            "manifest deploy/a.yaml: spec.template: Required value\n",
        );
        assert!(md.starts_with("<!-- daemonsync-plan:k -->\n"), "{md}");
        assert!(md.contains("**The plan failed.**"), "{md}");
        assert!(md.contains("```text\nmanifest deploy/a.yaml: spec.template: Required value\n```"));
        let long = "bad manifest\n".repeat(10_000);
        let md = failure(&ctx, &long);
        assert!(md.chars().count() < GITHUB_COMMENT_LIMIT, "{}", md.len());
        assert!(md.contains("more characters; run the command locally"));
    }

    #[test]
    fn escapes_pipes_and_html() {
        assert_eq!(escape("a|b<c>&\nd"), "a\\|b&lt;c&gt;&amp; d");
    }

    #[test]
    fn oversized_section_is_truncated_visibly() {
        let huge: String = (0..20_000).map(|i| format!("+line {i}\n")).collect();
        let mut diffs = BTreeMap::new();
        diffs.insert(("infra".to_string(), "agent".to_string()), huge);
        let parts = to_markdown(&known_plan(), &ctx(), &diffs);
        for p in &parts {
            assert!(p.chars().count() < GITHUB_COMMENT_LIMIT, "{}", p.len());
        }
        let all = parts.concat();
        assert!(all.contains("**Diff truncated:**"), "notice shown");
        assert!(all.contains("</details>"));
    }

    #[test]
    fn very_large_plan_splits_into_parts_under_the_limit() {
        use crate::cluster::synthetic::{fleet, fleet_now};
        let (desired, observed) = fleet(5_000, 20, 7);
        let plan = crate::plan::plan(&desired, &observed, &Default::default(), fleet_now());
        let parts = to_markdown(&plan, &ctx(), &BTreeMap::new());
        assert!(
            parts.len() > 1,
            "a 5,000-node plan does not fit one comment"
        );
        let n = parts.len();
        let marker = marker(DEFAULT_COMMENT_KEY);
        let sizes: Vec<usize> = parts.iter().map(|p| p.chars().count()).collect();
        eprintln!("{n} parts of {sizes:?} characters");
        for (i, p) in parts.iter().enumerate() {
            assert!(
                p.starts_with(&format!("{marker}\n{}\n", part_marker(i + 1))),
                "part {} starts with the key marker, then its part marker",
                i + 1
            );
            assert!(
                p.chars().count() < GITHUB_COMMENT_LIMIT,
                "part {} has {} chars",
                i + 1,
                p.chars().count()
            );
            assert_eq!(p.matches(&marker).count(), 1);
            let heading = if i == 0 {
                format!("**Part 1 of {n}**")
            } else {
                format!("part {} of {n}**", i + 1)
            };
            assert!(p.contains(&heading), "part {} lacks {heading}", i + 1);
            // Sections are never split across parts.
            assert_eq!(
                p.matches("<details>").count(),
                p.matches("</details>").count()
            );
        }
        for ds in &plan.daemonsets {
            let title = format!("<b>{}/{}</b>", ds.namespace, ds.name);
            let found = parts.iter().filter(|p| p.contains(&title)).count();
            assert_eq!(found, 1, "{title} appears in exactly one part");
        }
    }

    fn section_of<'a>(md: &'a str, title: &str) -> &'a str {
        let start = md
            .find(&format!("<details><summary><b>{title}</b>"))
            .unwrap_or_else(|| panic!("no section {title} in\n{md}"));
        let end = md[start..].find("</details>").unwrap() + start;
        &md[start..end]
    }

    /// What a reviewer sees of a canary-then-zones rollout as it starts: the shape and the
    /// phase in the summary line, then a table of the stages in order with their nodes,
    /// projected waves and pauses, the current one marked, and the stable revision.
    #[test]
    fn canary_then_zones_has_a_rollout_section() {
        use crate::report::testing::canary_plan;
        let p = canary_plan();
        let stable = p.daemonsets[0]
            .rollout
            .as_ref()
            .unwrap()
            .stable_revision
            .clone();
        let md = to_markdown(&p, &ctx(), &BTreeMap::new()).remove(0);
        assert!(
            md.contains("| demo/agent | 12 | 0 | 12 | 0 | 0 | 12 | 6 | delete 2 (rolling update) · rollout: Canary |"),
            "{md}"
        );
        let section = section_of(&md, "demo/agent");
        assert!(
            section.contains(
                "<summary><b>demo/agent</b>: pod restarted on 12 nodes; canary on 2 nodes, then \
                 3 waves by topology.kubernetes.io/zone; now in the canary</summary>"
            ),
            "{section}"
        );
        let rollout = "\
**Rollout:** Canary · stage 1 of 4

| Order | Stage | Nodes | Projected waves | Pause after |
|--:|---|---|--:|---|
| 1 | **canary** ← current | 2: a-1, a-2 | 1 | manual |
| 2 | wave `topology.kubernetes.io/zone=b` | 4: b-1, b-2, b-3, b-4 | 2 | none |
| 3 | wave `topology.kubernetes.io/zone=a` | 2: a-3, a-4 | 1 | none |
| 4 | wave `topology.kubernetes.io/zone=c` | 4: c-1, c-2, c-3, c-4 | 2 | — |
";
        assert!(section.contains(rollout), "{section}");
        assert!(
            section.contains(&format!(
                "\nStable revision `{}`: held-back nodes that need a pod get it.\n",
                stable.unwrap()
            )),
            "{section}"
        );
        assert!(
            section.contains(
                "| a-3 | out-of-date | running old revision bd94b698b; held until wave \
                 topology.kubernetes.io/zone=a |"
            ),
            "{section}"
        );
        // The stages come before the nodes.
        assert!(section.find("| Order |") < section.find("| Node |"));
    }

    #[test]
    fn a_paused_rollout_is_not_quiet_and_says_where_it_stands() {
        use crate::report::testing::{no_stable_plan, paused_plan};
        let md = to_markdown(&paused_plan(), &ctx(), &BTreeMap::new()).remove(0);
        let section = section_of(&md, "demo/agent");
        assert!(
            section.contains(
                "new pod on 1 node; pod restarted on 10 nodes; canary on 2 nodes, then 3 waves \
                 by topology.kubernetes.io/zone; paused after the canary until promoted</summary>"
            ),
            "{section}"
        );
        assert!(
            section.contains(
                "**Rollout:** Paused (manual pause after the canary: `daemonsync promote` \
                 continues) · stage 1 of 4\n"
            ),
            "{section}"
        );
        assert!(
            section.contains("| 1 | **canary** ← current | 2: a-1, a-2 | done | manual |"),
            "{section}"
        );
        assert!(
            md.contains("| create 1 of the stable revision (per-node fixes) · rollout: Paused |"),
            "{md}"
        );
        assert!(
            section.contains(
                "| b-5 | missing | no pod yet; gets the stable revision bd94b698b until its wave \
                 (topology.kubernetes.io/zone=b) |"
            ),
            "{section}"
        );

        // Nothing to do in the next step, but the rollout stands half-way: not one quiet line.
        let p = no_stable_plan();
        assert!(!p.has_changes());
        assert!(!is_quiet(&p, &BTreeMap::new()));
        let md = to_markdown(&p, &ctx(), &BTreeMap::new()).remove(0);
        assert!(
            md.contains("**No pod changes in the next step: a rollout waits:**"),
            "{md}"
        );
        assert!(!md.contains("already match"), "{md}");
        assert!(
            md.contains("Stable revision: none known; held-back nodes that need a pod get none"),
            "{md}"
        );
        // A complete rollout with nothing to do is quiet again.
        let done = crate::report::testing::complete_plan();
        assert!(is_quiet(&done, &BTreeMap::new()));
    }

    #[test]
    fn partition_and_halt_threshold_are_listed() {
        let md = to_markdown(
            &crate::report::testing::partition_plan(),
            &ctx(),
            &BTreeMap::new(),
        )
        .remove(0);
        assert!(
            md.contains(
                "\nPartition `2`: holds 2 nodes on the previous revision: c-3, c-4.  \nStable \
                 revision `bd94b698b`: held-back nodes that need a pod get it.  \nHalt \
                 threshold: 1 (the rollout halts when new pods fail on more than 1 node).\n\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("| 4 | wave `topology.kubernetes.io/zone=c` | 2: c-1, c-2 | 1 | — |"),
            "{md}"
        );
        assert!(
            md.contains("; the partition holds 2 nodes on the previous revision; now in the canary</summary>"),
            "{md}"
        );
    }

    #[test]
    fn later_phases_in_the_summary() {
        let md = to_markdown(
            &crate::report::testing::wave_plan(),
            &ctx(),
            &BTreeMap::new(),
        )
        .remove(0);
        assert!(md.contains("; now in wave 1/3</summary>"), "{md}");
        assert!(
            md.contains("**Rollout:** Wave 1/3 · stage 2 of 4\n"),
            "{md}"
        );
        assert!(
            md.contains("| 2 | **wave `topology.kubernetes.io/zone=b`** ← current |"),
            "{md}"
        );
    }

    #[test]
    fn errors_are_a_caution_block_and_never_quiet() {
        let p = crate::report::testing::error_plan();
        assert!(!is_quiet(&p, &BTreeMap::new()));
        let md = to_markdown(&p, &ctx(), &BTreeMap::new()).remove(0);
        assert!(
            md.contains(
                "> [!CAUTION]\n> **Errors: nothing is done for these DaemonSets until they are \
                 fixed.**\n> - **demo/agent**: metadata.annotations[daemonsync.io/waves-by]: \
                 Invalid value: \"example.com/rack\": no node has this label"
            ),
            "{md}"
        );
        assert!(
            md.contains("**No pod changes in the next step: errors stop a DaemonSet:**"),
            "{md}"
        );
        let section = section_of(&md, "demo/agent");
        assert!(
            section.contains("\n- :x: **error:** metadata.annotations[daemonsync.io/waves-by]"),
            "{section}"
        );
        assert!(!section.contains(":warning:"), "not repeated: {section}");
        assert!(md.contains("| none (errors) |"), "{md}");
    }

    /// What a reviewer sees of an in-place image update in the comment: the next step counts
    /// pods patched in place and readiness conditions opened, the summary line says how many
    /// restarts happen in place, the section says how pods take the new revision, and each
    /// out-of-date node whether it is patched or recreated.
    #[test]
    fn in_place_updates_are_shown_in_the_comment() {
        use crate::report::testing::{in_place_plan, in_place_recreate_plan};
        let md = to_markdown(&in_place_plan(), &ctx(), &BTreeMap::new()).remove(0);
        assert!(
            md.contains("| delete 1, update 1 in place, mark 1 ready (rolling update) |"),
            "{md}"
        );
        let section = section_of(&md, "demo/agent");
        assert!(
            section.contains(
                "<summary><b>demo/agent</b>: pod restarted on 4 nodes (3 in place); 2 \
                 waves</summary>"
            ),
            "{section}"
        );
        assert!(
            section.contains(
                "\n**Update:** in place (images `agent:1` → `agent:2`, from revision \
                 `bd94b698b`)\n\n| Node |"
            ),
            "{section}"
        );
        assert!(
            section.contains(
                "| w3 | out-of-date | running old revision bd94b698b; updated in place (c: \
                 agent:1 → agent:2) |"
            ),
            "{section}"
        );
        assert!(
            section.contains(
                "| w2 | out-of-date | running old revision 6c9f4559f9; recreated: its pod runs \
                 revision 6c9f4559f9, not the stable revision bd94b698b |"
            ),
            "{section}"
        );

        let md = to_markdown(&in_place_recreate_plan(), &ctx(), &BTreeMap::new()).remove(0);
        let section = section_of(&md, "demo/agent");
        assert!(
            section.contains(
                "\n**Update:** recreate (`spec.template.spec.containers[0].env` changes)\n"
            ),
            "{section}"
        );
        assert!(
            section.contains(
                "| w5 | out-of-date | running old revision bd94b698b; recreated: \
                 spec.template.spec.containers[0].env changes |"
            ),
            "{section}"
        );
        assert!(!section.contains("in place"), "{section}");
    }

    #[test]
    fn a_step_that_only_opens_readiness_conditions_has_no_phase() {
        use crate::report::testing::{in_place_rollout, plan_one, update};
        let (d, mut o) = in_place_rollout(|_| {});
        update(&mut o, &d, &["w2", "w3", "w4", "w5"]);
        let p = plan_one(&d, &o);
        let md = to_markdown(&p, &ctx(), &BTreeMap::new()).remove(0);
        assert!(md.contains("| 0 | mark 1 ready |"), "{md}");
        assert!(
            md.contains("<summary><b>demo/agent</b>: next step: mark 1 ready; 0 waves</summary>"),
            "{md}"
        );
    }

    /// DaemonSets without `InPlaceIfPossible` have no update line.
    #[test]
    fn no_update_line_without_in_place() {
        let md = to_markdown(&known_plan(), &ctx(), &BTreeMap::new()).remove(0);
        assert!(
            !md.contains("**Update:**") && !md.contains("in place"),
            "{md}"
        );
    }

    /// Rollouts with a stage per node (waves by hostname) on a large fleet still split into
    /// comments under the limit, each stage table capped.
    #[test]
    fn large_rollouts_still_split_under_the_limit() {
        use crate::cluster::synthetic::{fleet, fleet_now};
        let (mut desired, observed) = fleet(1_500, 6, 7);
        for d in &mut desired {
            let a = d.daemonset.metadata.annotations.get_or_insert_default();
            a.insert("daemonsync.io/canary".into(), "1%".into());
            a.insert(
                "daemonsync.io/waves-by".into(),
                "kubernetes.io/hostname".into(),
            );
            a.insert("daemonsync.io/partition".into(), "10%".into());
        }
        let plan = crate::plan::plan(&desired, &observed, &Default::default(), fleet_now());
        let staged = plan
            .daemonsets
            .iter()
            .filter(|d| {
                d.rollout
                    .as_ref()
                    .is_some_and(|r| r.stages.len() > STAGE_ROWS)
            })
            .count();
        assert!(
            staged > 0,
            "some DaemonSet has more stages than a table lists"
        );
        let parts = to_markdown(&plan, &ctx(), &BTreeMap::new());
        for p in &parts {
            assert!(p.chars().count() < GITHUB_COMMENT_LIMIT, "{}", p.len());
            assert_eq!(
                p.matches("<details>").count(),
                p.matches("</details>").count()
            );
        }
        let all = parts.concat();
        assert!(
            all.contains("more stages | | | |"),
            "stage tables are capped"
        );
        assert!(all.contains("… and "), "long node lists are cut");
    }
}

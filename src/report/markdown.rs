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
//! 5. one collapsible `<details>` section per DaemonSet: the manifest diff when known, warnings,
//!    and the nodes grouped by state (long groups collapsed with counts).
//!
//! GitHub rejects comments over 65,536 characters. Longer output is split at DaemonSet
//! boundaries into numbered parts; a single DaemonSet too large for one part is truncated with
//! a visible notice. Nothing is ever cut silently.

use crate::plan::{DaemonSetPlan, NodeEntry, NodeState, Plan, RiskKind, StepPhase};
use std::collections::BTreeMap;
use std::fmt::Write;

/// GitHub's limit on the body of an issue or pull-request comment, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// The marker at the top of every part, for sticky-comment workflows.
pub const MARKER: &str = "<!-- daemonsync-plan -->";

/// Largest part produced, in characters: the limit less room for the part heading.
const PART_BUDGET: usize = GITHUB_COMMENT_LIMIT - 1_024;

/// Node rows listed per state in a DaemonSet's section before "… and N more".
const ROWS_PER_STATE: usize = 25;

/// DaemonSet rows in the summary table before "… and N more".
const SUMMARY_ROWS: usize = 200;

/// Where the plan comes from, for the identity line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkdownContext {
    /// `owner/name` of the repository, when known.
    pub repository: Option<String>,
    /// Base commit (or ref) of the pull request.
    pub base: Option<String>,
    /// Head commit (or ref) of the pull request.
    pub head: Option<String>,
    /// The cluster or snapshot the plan was computed against, e.g. `snapshot:cluster.yaml`.
    pub cluster: String,
}

/// Renders the plan as one or more comment bodies, each under [`GITHUB_COMMENT_LIMIT`]
/// characters. `diffs` holds the unified manifest diff of each DaemonSet, keyed by
/// (namespace, name); DaemonSets without an entry get no diff block.
///
/// A plan without changes, risks or diffs gives a single one-line comment.
pub fn to_markdown(
    plan: &Plan,
    ctx: &MarkdownContext,
    diffs: &BTreeMap<(String, String), String>,
) -> Vec<String> {
    let quiet = !plan.has_changes()
        && diffs.values().all(|d| d.trim().is_empty())
        && plan.daemonsets.iter().all(|d| d.risks.is_empty());
    if quiet {
        let n = plan.daemonsets.len();
        return vec![format!(
            "{MARKER} **daemonsync plan: no changes.** {} on {} already {} the manifests.\n",
            count(n, "DaemonSet"),
            code(&ctx.cluster),
            if n == 1 { "matches" } else { "match" }
        )];
    }
    let header = header(plan, ctx);
    let sections: Vec<String> = plan
        .daemonsets
        .iter()
        .map(|ds| {
            let diff = diffs
                .get(&(ds.namespace.clone(), ds.name.clone()))
                .map(String::as_str);
            section(ds, diff)
        })
        .collect();
    let total = header.len() + sections.iter().map(String::len).sum::<usize>();
    if total <= PART_BUDGET {
        let mut out = header;
        sections.iter().for_each(|s| out.push_str(s));
        return vec![out];
    }
    split(header, sections, ctx)
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
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            let mut part = String::new();
            if i == 0 {
                // The marker stays the first line of every part.
                let rest = body.strip_prefix(MARKER).unwrap_or(&body);
                let _ = write!(
                    part,
                    "{MARKER}\n**Part 1 of {n}** (continued in the next comments)\n{rest}"
                );
            } else {
                let _ = writeln!(
                    part,
                    "{MARKER}\n**daemonsync plan — part {} of {n}** · {}\n",
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
    parts.join(" · ")
}

/// The first 12 characters of a commit hash; other refs as they are.
fn short(r: &str) -> &str {
    if r.len() > 12 && r.chars().all(|c| c.is_ascii_hexdigit()) {
        &r[..12]
    } else {
        r
    }
}

/// How many nodes gain, lose or restart a pod over the whole rollout.
#[derive(Default)]
struct Impact {
    gain: usize,
    lose: usize,
    restart: usize,
}

fn impact(ds: &DaemonSetPlan) -> Impact {
    let rolling = ds.strategy.type_ == "RollingUpdate";
    let mut i = Impact::default();
    for n in &ds.nodes {
        match n.state {
            NodeState::Missing => i.gain += 1,
            NodeState::Misscheduled => i.lose += 1,
            NodeState::OutOfDate if rolling => i.restart += 1,
            NodeState::Failed => i.restart += 1,
            _ => {}
        }
    }
    i
}

fn changed(ds: &DaemonSetPlan) -> bool {
    !ds.step.is_empty() || !ds.waves.is_empty()
}

fn header(plan: &Plan, ctx: &MarkdownContext) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{MARKER}");
    let _ = writeln!(out, "### daemonsync plan\n");
    let _ = writeln!(out, "{}\n", identity(ctx));

    let changed_n = plan.daemonsets.iter().filter(|d| changed(d)).count();
    let (mut gain, mut lose, mut restart) = (0, 0, 0);
    for ds in &plan.daemonsets {
        let i = impact(ds);
        gain += i.gain;
        lose += i.lose;
        restart += i.restart;
    }
    let waves = plan.daemonsets.iter().map(|d| d.waves.len()).max();
    let stuck = plan.daemonsets.iter().filter(|d| !d.converges).count();
    let verdict = if plan.has_changes() {
        "Changes"
    } else {
        "No changes in the next step"
    };
    let _ = writeln!(
        out,
        "**{verdict}:** {} of {} changed · nodes that **gain** a pod: {gain} · **lose** a pod: \
         {lose} · **restart** a pod: {restart} · {} under the budgets{}\n",
        count_num(changed_n),
        count(plan.daemonsets.len(), "DaemonSet"),
        count(waves.unwrap_or(0), "wave"),
        if stuck > 0 {
            format!(
                " · **{} {} not converge**",
                count(stuck, "DaemonSet"),
                if stuck == 1 { "does" } else { "do" }
            )
        } else {
            String::new()
        },
    );

    let risky: Vec<(&DaemonSetPlan, &crate::plan::Risk)> = plan
        .daemonsets
        .iter()
        .flat_map(|d| d.risks.iter().map(move |r| (d, r)))
        .collect();
    if !risky.is_empty() {
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

    let _ = writeln!(
        out,
        "| DaemonSet | Desired | Up-to-date | Available | Gain | Lose | Restart | Waves | Next step |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|---|");
    for ds in plan.daemonsets.iter().take(SUMMARY_ROWS) {
        let s = &ds.status;
        let i = impact(ds);
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
            next_step(ds)
        );
    }
    if plan.daemonsets.len() > SUMMARY_ROWS {
        let _ = writeln!(
            out,
            "\n… and {} more DaemonSets, each in its own section below.",
            plan.daemonsets.len() - SUMMARY_ROWS
        );
    }
    out.push('\n');
    out
}

fn next_step(ds: &DaemonSetPlan) -> String {
    let step = &ds.step;
    if step.is_empty() {
        return "none".into();
    }
    let mut actions = Vec::new();
    if !step.create.is_empty() {
        actions.push(format!("create {}", step.create.len()));
    }
    if !step.delete.is_empty() {
        actions.push(format!("delete {}", step.delete.len()));
    }
    let phase = match step.phase {
        StepPhase::Manage => "per-node fixes",
        StepPhase::RollingUpdate => "rolling update",
        StepPhase::None => "",
    };
    format!("{} ({phase})", actions.join(", "))
}

/// One DaemonSet's collapsible section; truncated with a notice if it alone would not fit in
/// a part.
fn section(ds: &DaemonSetPlan, diff: Option<&str>) -> String {
    let mut out = String::new();
    let i = impact(ds);
    let _ = writeln!(
        out,
        "<details><summary><b>{}/{}</b>: {}</summary>\n",
        escape(&ds.namespace),
        escape(&ds.name),
        summary_line(ds, &i)
    );
    let s = &ds.strategy;
    let mut strategy = s.type_.to_string();
    if let (Some(u), Some(m)) = (&s.max_unavailable, &s.max_surge) {
        let _ = write!(strategy, " maxUnavailable={u} maxSurge={m}");
    }
    let _ = write!(
        out,
        "Source {} · revision {} · {}",
        code(&ds.source),
        code(&ds.revision),
        code(&strategy),
    );
    if s.type_ == "RollingUpdate" {
        let _ = write!(
            out,
            " · budgets: maxUnavailable {}, maxSurge {}",
            ds.budgets.max_unavailable, ds.budgets.max_surge
        );
    }
    out.push_str("\n\n");
    for r in &ds.risks {
        let _ = writeln!(out, "- :warning: `{}`: {}", r.kind, escape(&r.message));
    }
    for w in &ds.warnings {
        let _ = writeln!(out, "- :warning: {}", escape(w));
    }
    if !ds.risks.is_empty() || !ds.warnings.is_empty() {
        out.push('\n');
    }
    if let Some(diff) = &ds.live_diff {
        let total = diff.fields.len() + diff.more;
        let _ = writeln!(
            out,
            "The live DaemonSet differs from git in {} (live → git):\n",
            count(total, "field")
        );
        for f in &diff.fields {
            let side = |v: &Option<String>| v.as_deref().map_or("(unset)".to_string(), code);
            let _ = writeln!(
                out,
                "- {}: {} → {}",
                code(&f.path),
                side(&f.live),
                side(&f.git)
            );
        }
        if diff.more > 0 {
            let _ = writeln!(out, "- … and {} more", diff.more);
        }
        out.push('\n');
    }
    let budget = PART_BUDGET - 4_096;
    if let Some(diff) = diff.filter(|d| !d.trim().is_empty()) {
        out.push_str(&diff_block(diff, budget / 2));
    }
    node_table(&mut out, &ds.nodes);
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

fn summary_line(ds: &DaemonSetPlan, i: &Impact) -> String {
    if !changed(ds) {
        return if ds.converges {
            "no changes".into()
        } else {
            "no changes in the next step; does not converge".into()
        };
    }
    let mut parts = Vec::new();
    if i.gain > 0 {
        parts.push(format!("new pod on {}", count(i.gain, "node")));
    }
    if i.lose > 0 {
        parts.push(format!("pod removed from {}", count(i.lose, "node")));
    }
    if i.restart > 0 {
        parts.push(format!("pod restarted on {}", count(i.restart, "node")));
    }
    if parts.is_empty() {
        parts.push(format!("next step: {}", next_step(ds)));
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

/// Nodes grouped by state: states needing attention as rows (collapsed after
/// [`ROWS_PER_STATE`]), the others as counts.
fn node_table(out: &mut String, nodes: &[NodeEntry]) {
    let mut groups: BTreeMap<NodeState, Vec<&NodeEntry>> = BTreeMap::new();
    for n in nodes {
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
                escape(&n.reason.to_string())
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

fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn count_num(n: usize) -> String {
    n.to_string()
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
        }
    }

    #[test]
    fn identity_verdict_and_sections() {
        let parts = to_markdown(&known_plan(), &ctx(), &BTreeMap::new());
        assert_eq!(parts.len(), 1);
        let md = &parts[0];
        assert!(md.starts_with("<!-- daemonsync-plan -->\n"), "{md}");
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
        let sizes: Vec<usize> = parts.iter().map(|p| p.chars().count()).collect();
        eprintln!("{n} parts of {sizes:?} characters");
        for (i, p) in parts.iter().enumerate() {
            assert!(
                p.starts_with(MARKER),
                "part {} starts with the marker",
                i + 1
            );
            assert!(
                p.chars().count() < GITHUB_COMMENT_LIMIT,
                "part {} has {} chars",
                i + 1,
                p.chars().count()
            );
            assert!(p.contains(MARKER));
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
}

//! The plan as a terminal table for people, in the style of `kubectl get ds`.
//!
//! Layout: one row per DaemonSet with the status counters, node selector and age; then, per
//! DaemonSet, its next step and the number of projected waves, its risks and warnings, and the
//! nodes that need attention grouped by state, each with its reason. Wide mode lists every node
//! instead.

use crate::plan::{DaemonSetPlan, NodeEntry, NodeState, Plan, StepPhase};
use anstyle::{AnsiColor, Style};
use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How to render the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// Emit ANSI colours. The caller decides (`NO_COLOR`, whether stdout is a terminal); the
    /// renderer never looks at the environment.
    pub color: bool,
    /// Nodes listed per state group before "... and N more". `0` lists none, only counts.
    pub max_nodes_per_group: usize,
    /// `-o wide`: list every node (up-to-date and ineligible ones too) with state and reason,
    /// without a limit.
    pub wide: bool,
}

impl Default for TableOptions {
    /// No colour, 20 nodes per group.
    fn default() -> Self {
        TableOptions {
            color: false,
            max_nodes_per_group: 20,
            wide: false,
        }
    }
}

/// Column headers, as `kubectl get ds -A` prints them, plus MISSCHEDULED and STRATEGY.
const HEADERS: [&str; 11] = [
    "NAMESPACE",
    "NAME",
    "DESIRED",
    "CURRENT",
    "READY",
    "UP-TO-DATE",
    "AVAILABLE",
    "MISSCHEDULED",
    "NODE SELECTOR",
    "AGE",
    "STRATEGY",
];

/// Columns of [`HEADERS`] a manifest-only plan has values for.
const MANIFEST_ONLY_COLUMNS: [usize; 4] = [0, 1, 8, 10];

/// The first line of a manifest-only plan, so that nobody reads it as an empty cluster.
pub const MANIFEST_ONLY_NOTE: &str = "Manifest only (--cluster none): no cluster state was read, \
so nothing is said about nodes. Shown: the DaemonSets as validated, and the risks their manifests \
show.";

/// The `kubectl get ds`-style rows, header in bold, trailing spaces trimmed.
fn summary_rows(plan: &Plan, paint: Painter) -> String {
    let mut out = String::new();
    if plan.manifest_only {
        out.push_str(MANIFEST_ONLY_NOTE);
        out.push_str("\n\n");
    }
    for (i, line) in summary_table(plan).lines().enumerate() {
        let line = line.trim_end();
        if i == 0 {
            out.push_str(&paint.style(line, Style::new().bold()));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Renders the plan for a terminal. Ends with a newline.
pub fn to_table(plan: &Plan, opts: &TableOptions) -> String {
    let paint = Painter(opts.color);
    if plan.daemonsets.is_empty() {
        return "No DaemonSets to plan.\n".into();
    }
    let mut out = summary_rows(plan, paint);
    for ds in &plan.daemonsets {
        out.push('\n');
        details(&mut out, ds, opts, paint, plan.manifest_only);
    }
    out
}

/// The observed status only: the `kubectl get ds`-style rows, then (when `opts.wide`) every
/// node of every DaemonSet with its state and reason. Ends with a newline.
pub fn to_status_table(plan: &Plan, opts: &TableOptions) -> String {
    let paint = Painter(opts.color);
    if plan.daemonsets.is_empty() {
        return "No DaemonSets found.\n".into();
    }
    let mut out = summary_rows(plan, paint);
    if opts.wide {
        for ds in &plan.daemonsets {
            let title = format!("{}/{}", ds.namespace, ds.name);
            let _ = writeln!(out, "\n{}:", paint.style(&title, Style::new().bold()));
            wide_nodes(&mut out, ds, paint);
        }
    }
    out
}

fn summary_table(plan: &Plan) -> String {
    let columns: Vec<usize> = if plan.manifest_only {
        MANIFEST_ONLY_COLUMNS.to_vec()
    } else {
        (0..HEADERS.len()).collect()
    };
    let pick = |row: Vec<String>| -> Vec<String> {
        columns.iter().map(|&c| row[c].clone()).collect::<Vec<_>>()
    };
    let mut table = Table::new();
    table
        .load_style(comfy_table::presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(pick(HEADERS.map(String::from).to_vec()));
    for ds in &plan.daemonsets {
        let s = &ds.status;
        table.add_row(pick(vec![
            ds.namespace.clone(),
            ds.name.clone(),
            s.desired_number_scheduled.to_string(),
            s.current_number_scheduled.to_string(),
            s.number_ready.to_string(),
            s.updated_number_scheduled.to_string(),
            s.number_available.to_string(),
            s.number_misscheduled.to_string(),
            node_selector(ds),
            ds.created
                .map_or_else(|| "<none>".to_string(), |c| age(plan.now, c)),
            strategy(ds),
        ]));
    }
    // kubectl separates columns by three spaces and pads nothing at the edges.
    for (&i, column) in columns.iter().zip(table.column_iter_mut()) {
        column.set_padding((0, 3));
        if (2..8).contains(&i) {
            column.set_cell_alignment(CellAlignment::Left);
        }
        column.set_constraint(ColumnConstraint::ContentWidth);
    }
    table.to_string()
}

/// `key=value,...` as kubectl prints a node selector; `<none>` when empty.
fn node_selector(ds: &DaemonSetPlan) -> String {
    if ds.node_selector.is_empty() {
        return "<none>".into();
    }
    let pairs: Vec<String> = ds
        .node_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    pairs.join(",")
}

/// A duration in kubectl's short style (`45s`, `12m`, `5h`, `3d`, `2y`).
pub(crate) fn age(now: crate::model::Timestamp, then: crate::model::Timestamp) -> String {
    let secs = now.as_second().saturating_sub(then.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s if s < 2 * 365 * 86400 => format!("{}d", s / 86400),
        s => format!("{}y", s / (365 * 86400)),
    }
}

fn strategy(ds: &DaemonSetPlan) -> String {
    let s = &ds.strategy;
    let mut out = s.type_.to_string();
    fn nonzero(v: &Option<String>) -> Option<&str> {
        v.as_deref().filter(|v| *v != "0" && *v != "0%")
    }
    let surge = nonzero(&s.max_surge);
    match (nonzero(&s.max_unavailable), surge) {
        (Some(u), Some(m)) => write!(out, " maxUnavailable={u} maxSurge={m}"),
        (Some(u), None) => write!(out, " maxUnavailable={u}"),
        (None, Some(m)) => write!(out, " maxSurge={m}"),
        (None, None) if s.max_unavailable.is_some() => write!(out, " maxUnavailable=0"),
        (None, None) => Ok(()),
    }
    .expect("writing to a String cannot fail");
    out
}

fn details(
    out: &mut String,
    ds: &DaemonSetPlan,
    opts: &TableOptions,
    paint: Painter,
    manifest_only: bool,
) {
    let title = format!("{}/{}", ds.namespace, ds.name);
    let step = if manifest_only {
        match ds.risks.len() {
            0 => "no risks in the manifest".to_string(),
            n => format!("{} in the manifest", count(n, "risk")),
        }
    } else {
        next_step(ds)
    };
    let _ = writeln!(out, "{}: {step}", paint.style(&title, Style::new().bold()));
    for r in &ds.risks {
        let label = paint.style(
            "RISK:",
            Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        );
        let _ = writeln!(out, "  {label} [{}] {}", r.kind, r.message);
    }
    for w in &ds.warnings {
        let label = paint.style(
            "WARNING:",
            Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
        );
        let _ = writeln!(out, "  {label} {w}");
    }
    if let Some(diff) = &ds.live_diff {
        live_differences(out, diff);
    }
    if opts.wide {
        wide_nodes(out, ds, paint);
        return;
    }
    let mut groups: BTreeMap<NodeState, Vec<&NodeEntry>> = BTreeMap::new();
    for n in ds.nodes.iter().filter(|n| n.state.needs_attention()) {
        groups.entry(n.state).or_default().push(n);
    }
    if groups.is_empty() {
        return;
    }
    let total: usize = groups.values().map(Vec::len).sum();
    let verb = if total == 1 { "needs" } else { "need" };
    let _ = writeln!(out, "  {} {verb} attention:", count(total, "node"));
    for (state, nodes) in &groups {
        let heading = format!("{state} ({})", nodes.len());
        let _ = writeln!(out, "    {}", paint.style(&heading, state_style(*state)));
        let shown = &nodes[..nodes.len().min(opts.max_nodes_per_group)];
        let width = shown.iter().map(|n| n.node.len()).max().unwrap_or(0);
        for n in shown {
            let _ = writeln!(out, "      {:<width$}   {}", n.node, n.reason);
        }
        if nodes.len() > shown.len() {
            let _ = writeln!(out, "      ... and {} more", nodes.len() - shown.len());
        }
    }
}

/// Why a live DaemonSet's pods are out of date: the fields git changes, live value first.
fn live_differences(out: &mut String, diff: &crate::plan::LiveDiff) {
    let total = diff.fields.len() + diff.more;
    let _ = writeln!(
        out,
        "  live DaemonSet differs from git in {}:",
        count(total, "field")
    );
    for f in &diff.fields {
        let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "(unset)".into());
        let _ = writeln!(out, "    {}: {} -> {}", f.path, side(&f.live), side(&f.git));
    }
    if diff.more > 0 {
        let _ = writeln!(out, "    ... and {} more", diff.more);
    }
}

/// `-o wide`: every node, with its state and reason, in name order.
fn wide_nodes(out: &mut String, ds: &DaemonSetPlan, paint: Painter) {
    if ds.nodes.is_empty() {
        return;
    }
    let width = ds
        .nodes
        .iter()
        .map(|n| n.node.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let state_width = ds
        .nodes
        .iter()
        .map(|n| n.state.as_str().len())
        .max()
        .unwrap_or(0)
        .max(5);
    let heading = format!("{:<width$}   {:<state_width$}   REASON", "NODE", "STATE");
    let _ = writeln!(out, "  {}", paint.style(&heading, Style::new().bold()));
    for n in &ds.nodes {
        let state = format!("{:<state_width$}", n.state.as_str());
        let state = if n.state.needs_attention() {
            paint.style(&state, state_style(n.state))
        } else {
            state
        };
        let _ = writeln!(out, "  {:<width$}   {state}   {}", n.node, n.reason);
    }
}

/// The next-step line: what the step does and how many waves the rollout takes.
fn next_step(ds: &DaemonSetPlan) -> String {
    let step = &ds.step;
    let waves = match (ds.waves.len(), ds.converges) {
        (_, false) => "the rollout does not converge".to_string(),
        (0, true) => "converged".to_string(),
        (n, true) => format!("{} projected", count(n, "wave")),
    };
    if step.is_empty() {
        return if ds.waves.is_empty() && ds.converges {
            "no changes".into()
        } else {
            format!("no changes in the next step; {waves}")
        };
    }
    let mut actions = Vec::new();
    if !step.create.is_empty() {
        actions.push(format!("create on {}", count(step.create.len(), "node")));
    }
    if !step.delete.is_empty() {
        actions.push(format!("delete {}", count(step.delete.len(), "pod")));
    }
    let phase = match step.phase {
        StepPhase::Manage => "per-node fixes",
        StepPhase::RollingUpdate => "rolling update",
        StepPhase::None => "no phase",
    };
    format!("{} ({phase}); {waves}", actions.join(", "))
}

fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn state_style(state: NodeState) -> Style {
    let color = match state {
        NodeState::Missing | NodeState::Failed | NodeState::Duplicate | NodeState::Misscheduled => {
            AnsiColor::Red
        }
        NodeState::UpToDate => AnsiColor::Green,
        _ => AnsiColor::Yellow,
    };
    Style::new().bold().fg_color(Some(color.into()))
}

/// Applies styles only when colour is on.
#[derive(Debug, Clone, Copy)]
struct Painter(bool);

impl Painter {
    fn style(self, text: &str, style: Style) -> String {
        if self.0 {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testing::{all_missing_plan, known_plan, manifest_only_plan};

    #[test]
    fn manifest_only_says_so_and_shows_no_counters() {
        let out = to_table(&manifest_only_plan(), &plain());
        assert!(out.starts_with(MANIFEST_ONLY_NOTE), "{out}");
        let header = out.lines().nth(2).unwrap();
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>(),
            ["NAMESPACE", "NAME", "NODE", "SELECTOR", "STRATEGY"],
            "{out}"
        );
        assert!(
            !out.contains("DESIRED") && !out.contains("no-eligible-nodes"),
            "{out}"
        );
        assert!(out.contains("infra/agent: 1 risk in the manifest"), "{out}");
        assert!(
            out.contains("RISK: [all-at-once] maxUnavailable 100%"),
            "{out}"
        );
        assert!(
            out.contains("infra/logs: no risks in the manifest"),
            "{out}"
        );
    }

    fn plain() -> TableOptions {
        TableOptions::default()
    }

    fn columns(line: &str) -> Vec<&str> {
        line.split_whitespace().collect()
    }

    #[test]
    fn header_and_row_carry_the_status_counters() {
        let out = to_table(&known_plan(), &plain());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            columns(lines[0]),
            HEADERS
                .iter()
                .flat_map(|h| h.split(' '))
                .collect::<Vec<_>>(),
            "{out}"
        );
        assert_eq!(
            columns(lines[1]),
            [
                "infra",
                "agent",
                "5",
                "4",
                "3",
                "2",
                "3",
                "1",
                "role=worker",
                "<none>",
                "RollingUpdate",
                "maxUnavailable=1"
            ],
            "{out}"
        );
    }

    #[test]
    fn columns_line_up_like_kubectl() {
        let out = to_table(&known_plan(), &plain());
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("NAMESPACE   NAME    DESIRED   "),
            "{out}"
        );
        assert_eq!(lines[0].find("DESIRED"), lines[1].find('5'), "{out}");
        assert!(
            lines.iter().all(|l| l.trim_end() == *l),
            "no trailing spaces: {out:?}"
        );
    }

    #[test]
    fn next_step_line_names_actions_phase_and_waves() {
        let p = known_plan();
        let out = to_table(&p, &plain());
        let line = out
            .lines()
            .find(|l| l.starts_with("infra/agent: "))
            .unwrap_or_else(|| panic!("no next-step line: {out}"));
        assert!(
            line.starts_with("infra/agent: create on 1 node, delete 1 pod (per-node fixes); "),
            "{line}"
        );
        let waves = p.daemonsets[0].waves.len();
        assert!(
            line.ends_with(&format!("{waves} waves projected")),
            "{line}"
        );
    }

    #[test]
    fn attention_nodes_are_grouped_by_state_with_reasons() {
        let out = to_table(&known_plan(), &plain());
        assert!(out.contains("  5 nodes need attention:\n"), "{out}");
        let expect = [
            "    out-of-date (2)\n      w2   running old revision old\n      w3   running old revision old\n",
            "    missing (1)\n      w4   no pod yet\n",
            "    misscheduled (1)\n      m1   ",
            "    unavailable (1)\n      w5   pod not ready: CrashLoopBackOff\n",
        ];
        for e in expect {
            assert!(out.contains(e), "missing {e:?} in\n{out}");
        }
        // Up-to-date and ineligible nodes are not listed.
        assert!(!out.contains("      w1 "), "{out}");
        let order: Vec<usize> = [
            "out-of-date (",
            "missing (",
            "misscheduled (",
            "unavailable (",
        ]
        .iter()
        .map(|h| out.find(h).unwrap())
        .collect();
        assert!(order.is_sorted(), "groups in state order: {out}");
    }

    #[test]
    fn long_groups_are_truncated_with_a_count() {
        let out = to_table(&all_missing_plan(25), &plain());
        assert!(out.contains("    missing (25)\n"), "{out}");
        assert!(out.contains("      n019   no pod yet\n"), "{out}");
        assert!(!out.contains("n020"), "{out}");
        assert!(out.contains("      ... and 5 more\n"), "{out}");

        let opts = TableOptions {
            max_nodes_per_group: 3,
            ..plain()
        };
        let out = to_table(&all_missing_plan(25), &opts);
        assert!(
            out.contains("      n002   no pod yet\n      ... and 22 more\n"),
            "{out}"
        );

        let out = to_table(&all_missing_plan(5), &plain());
        assert!(!out.contains("more"), "{out}");
    }

    #[test]
    fn on_delete_strategy_and_no_budgets() {
        let out = to_table(&all_missing_plan(2), &plain());
        assert_eq!(
            columns(out.lines().nth(1).unwrap()).last(),
            Some(&"OnDelete")
        );
        assert!(
            out.contains("ops/wide: create on 2 nodes (per-node fixes); "),
            "{out}"
        );
    }

    #[test]
    fn warnings_are_prominent() {
        let mut p = known_plan();
        p.daemonsets[0]
            .warnings
            .push("the rollout needs a look".into());
        let out = to_table(&p, &plain());
        assert!(
            out.contains("\n  WARNING: the rollout needs a look\n"),
            "{out}"
        );
        let colored = to_table(
            &p,
            &TableOptions {
                color: true,
                ..plain()
            },
        );
        assert!(
            colored.contains("\u{1b}[1m\u{1b}[33mWARNING:\u{1b}[0m"),
            "{colored:?}"
        );
    }

    #[test]
    fn color_only_when_asked() {
        let p = known_plan();
        assert!(!to_table(&p, &plain()).contains('\u{1b}'));
        let colored = to_table(
            &p,
            &TableOptions {
                color: true,
                ..plain()
            },
        );
        assert!(colored.contains("\u{1b}["), "{colored:?}");
        // Colour never changes the text or the alignment.
        let stripped = strip_ansi(&colored);
        assert_eq!(stripped, to_table(&p, &plain()));
    }

    #[test]
    fn converged_daemonset_says_no_changes() {
        let d = crate::report::testing::daemonset(
            "infra",
            "agent",
            serde_json::json!({"type": "RollingUpdate"}),
        );
        let rev = crate::report::testing::revision(&d);
        let observed = crate::plan::Observed {
            nodes: vec![crate::report::testing::worker("w1")],
            pods: vec![crate::report::testing::pod(
                "infra", "agent", "w1", &rev, true,
            )],
            daemonsets: Vec::new(),
            rollouts: Vec::new(),
        };
        let p = crate::plan::plan(
            &[d],
            &observed,
            &crate::plan::Policy::default(),
            crate::report::testing::now(),
        );
        let out = to_table(&p, &plain());
        assert!(out.contains("\ninfra/agent: no changes\n"), "{out}");
        assert!(!out.contains("need attention"), "{out}");
    }

    #[test]
    fn age_reads_like_kubectl() {
        let now: crate::model::Timestamp = "2025-06-01T12:00:00Z".parse().unwrap();
        let ago = |secs: i64| age(now, now - jiff::SignedDuration::from_secs(secs));
        assert_eq!(ago(45), "45s");
        assert_eq!(ago(600), "10m");
        assert_eq!(ago(5 * 3600), "5h");
        assert_eq!(ago(3 * 86400), "3d");
        assert_eq!(ago(3 * 365 * 86400), "3y");
        // A creation time in the future (clock skew) is not negative.
        assert_eq!(ago(-30), "0s");
    }

    #[test]
    fn wide_lists_every_node_with_state_and_reason() {
        let opts = TableOptions {
            wide: true,
            ..plain()
        };
        let out = to_table(&known_plan(), &opts);
        assert!(out.contains("\n  NODE   STATE          REASON\n"), "{out}");
        for line in [
            "  m1     misscheduled   ",
            "  w1     up-to-date     running the current revision",
            "  w4     missing        no pod yet",
        ] {
            assert!(out.contains(line), "{line:?} in\n{out}");
        }
        assert!(!out.contains("need attention"), "{out}");
    }

    #[test]
    fn risks_come_before_warnings() {
        let out = to_table(&known_plan(), &plain());
        assert!(
            out.contains("\n  RISK: [pods-removed] pods will be deleted without replacement on 1 node(s): m1\n"),
            "{out}"
        );
    }

    #[test]
    fn status_table_has_no_plan_details() {
        let out = to_status_table(&known_plan(), &plain());
        assert_eq!(out.lines().count(), 2, "{out}");
        let wide = to_status_table(
            &known_plan(),
            &TableOptions {
                wide: true,
                ..plain()
            },
        );
        assert!(wide.contains("\ninfra/agent:\n  NODE "), "{wide}");
    }

    #[test]
    fn empty_plan() {
        let mut p = known_plan();
        p.daemonsets.clear();
        assert_eq!(to_table(&p, &plain()), "No DaemonSets to plan.\n");
    }

    fn strip_ansi(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    /// The demo: flannel from git against the seven-node snapshot, where every pod runs an
    /// older revision and one node has none.
    #[test]
    fn seven_node_demo_shows_flannel_rollout() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let observed =
            crate::cluster::load_snapshot(&root.join("snapshots/seven-nodes.yaml")).unwrap();
        let text = std::fs::read_to_string(root.join("manifests/kube-flannel.yaml")).unwrap();
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
        let ds = docs.into_iter().find(|d| d["kind"] == "DaemonSet").unwrap();
        let desired = crate::plan::Desired {
            source: "kube-flannel.yaml".into(),
            daemonset: serde_json::from_value(ds).unwrap(),
        };
        let p = crate::plan::plan(
            &[desired],
            &observed,
            &crate::plan::Policy::default(),
            "2025-06-01T12:00:00Z".parse().unwrap(),
        );
        let out = to_table(&p, &plain());
        let row = columns(out.lines().nth(1).unwrap());
        assert_eq!(row[..2], ["kube-flannel", "kube-flannel-ds"], "{out}");
        assert_eq!(row[5], "0", "nothing is up to date: {out}");
        assert!(
            out.contains("\n    missing (1)\n      uninit-1   no pod yet\n"),
            "{out}"
        );
        assert!(out.contains("   running old revision abc123\n"), "{out}");
        let gpu = out
            .lines()
            .find(|l| l.trim_start().starts_with("gpu-1 "))
            .unwrap_or_else(|| panic!("gpu-1 not listed: {out}"));
        assert!(
            gpu.ends_with("running old revision abc123 (not available)"),
            "{gpu}"
        );
        assert!(
            out.contains("kube-flannel/kube-flannel-ds: create on 1 node"),
            "{out}"
        );
    }
}

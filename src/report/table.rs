//! The plan as a terminal table for people, in the style of `kubectl get ds`.
//!
//! Layout: one row per DaemonSet with the status counters, node selector and age; then, per
//! DaemonSet, its next step and the number of projected waves, its errors, risks and warnings,
//! how its pods take the new revision under `InPlaceIfPossible` (in place or recreated), its
//! progressive rollout (phase, stages, partition, stable revision) when it has a rollout
//! policy, and the nodes that need attention grouped by state, each with its reason (how an
//! out-of-date node is updated; for a node held back by the rollout, what it waits for). Wide
//! mode lists every node instead.

use super::phrases::{
    PLAIN, StageProgress, agree, count, differs_from_git, field_value, halt_text, node_reason,
    ownership_text, partition_holds, pause_after, pre_pull_text, readiness_lines, rollout_phase,
    stable_gets, stage_name, stage_progress, stalled_text, step_only_gates, step_phase,
    strategy_brief, suspension_label, suspension_text, update_text, warnings_beside_errors,
};
use crate::plan::progressive::Stage;
use crate::plan::{DaemonSetPlan, NodeEntry, NodeState, Phase, Plan, Rollout};
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

/// `STALLED since T (Reason): message`, the label in bold red.
fn stalled_line(s: &crate::plan::Stalled, paint: Painter) -> String {
    let label = paint.style(
        "STALLED",
        Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
    );
    format!("{label} {}", stalled_text(s, PLAIN))
}

/// The observed status only: the `kubectl get ds`-style rows, then (when `opts.wide`) every
/// node of every DaemonSet with its state and reason. Ends with a newline.
pub fn to_status_table(plan: &Plan, opts: &TableOptions) -> String {
    let paint = Painter(opts.color);
    if plan.daemonsets.is_empty() {
        return "No DaemonSets found.\n".into();
    }
    let mut out = summary_rows(plan, paint);
    let stalled: Vec<&DaemonSetPlan> = plan
        .daemonsets
        .iter()
        .filter(|d| d.stalled.is_some())
        .collect();
    if !stalled.is_empty() {
        out.push('\n');
    }
    for ds in stalled {
        if let Some(s) = &ds.stalled {
            let _ = writeln!(
                out,
                "{}/{}: {}",
                ds.namespace,
                ds.name,
                stalled_line(s, paint)
            );
        }
    }
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
            strategy_brief(ds),
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
fn age(now: crate::model::Timestamp, then: crate::model::Timestamp) -> String {
    let secs = now.as_second().saturating_sub(then.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s if s < 2 * 365 * 86400 => format!("{}d", s / 86400),
        s => format!("{}y", s / (365 * 86400)),
    }
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
    for e in &ds.errors {
        let label = paint.style(
            "ERROR:",
            Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        );
        let _ = writeln!(out, "  {label} {e}");
    }
    if let Some(s) = &ds.stalled {
        let _ = writeln!(out, "  {}", stalled_line(s, paint));
    }
    for r in &ds.risks {
        let label = paint.style(
            "RISK:",
            Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        );
        let _ = writeln!(out, "  {label} [{}] {}", r.kind, r.message);
    }
    for w in warnings_beside_errors(ds) {
        let label = paint.style(
            "WARNING:",
            Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
        );
        let _ = writeln!(out, "  {label} {w}");
    }
    if let Some(ip) = &ds.in_place {
        let _ = writeln!(
            out,
            "  {} {}",
            paint.style("Update:", Style::new().bold()),
            update_text(ip, PLAIN)
        );
    }
    for c in &ds.config_changes {
        let _ = writeln!(out, "  {} {c}", paint.style("Config:", Style::new().bold()));
    }
    if let Some(text) = ownership_text(&ds.ownership) {
        let _ = writeln!(
            out,
            "  {} {text}",
            paint.style("Ownership:", Style::new().bold())
        );
    }
    // A freeze is the next-step line itself.
    if let Some(s) = ds
        .suspended
        .as_ref()
        .filter(|s| **s != crate::plan::suspend::Suspension::Frozen)
    {
        let label = format!("{}:", suspension_label(s));
        let _ = writeln!(
            out,
            "  {} {}",
            paint.style(
                &label,
                Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()))
            ),
            suspension_text(s, PLAIN)
        );
    }
    if let Some(pp) = &ds.pre_pull {
        let _ = writeln!(
            out,
            "  {} {}",
            paint.style("Pre-pull:", Style::new().bold()),
            pre_pull_text(pp)
        );
    }
    if let Some(r) = &ds.rollout {
        rollout_block(out, ds, r, paint);
    }
    if let Some(r) = &ds.readiness
        && !r.nodes.is_empty()
    {
        let _ = writeln!(
            out,
            "  {}",
            paint.style("Readiness taint:", Style::new().bold())
        );
        for line in readiness_lines(ds, opts.max_nodes_per_group.max(1), PLAIN) {
            let _ = writeln!(out, "    {line}");
        }
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
    let verb = agree(total, "needs", "need");
    let _ = writeln!(out, "  {} {verb} attention:", count(total, "node"));
    for (state, nodes) in &groups {
        let heading = format!("{state} ({})", nodes.len());
        let _ = writeln!(out, "    {}", paint.style(&heading, state_style(*state)));
        let shown = &nodes[..nodes.len().min(opts.max_nodes_per_group)];
        let width = shown.iter().map(|n| n.node.len()).max().unwrap_or(0);
        for n in shown {
            let _ = writeln!(out, "      {:<width$}   {}", n.node, node_reason(ds, n));
        }
        if nodes.len() > shown.len() {
            let _ = writeln!(out, "      ... and {} more", nodes.len() - shown.len());
        }
    }
}

/// Why a live DaemonSet's pods are out of date: the fields git changes, live value first.
fn live_differences(out: &mut String, diff: &crate::plan::LiveDiff) {
    let _ = writeln!(out, "  live DaemonSet {}:", differs_from_git(diff));
    for f in &diff.fields {
        let _ = writeln!(
            out,
            "    {}: {} -> {}",
            f.path,
            field_value(&f.live, PLAIN),
            field_value(&f.git, PLAIN)
        );
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
    for n in ds.nodes.iter() {
        let state = format!("{:<state_width$}", n.state.as_str());
        let state = if n.state.needs_attention() {
            paint.style(&state, state_style(n.state))
        } else {
            state
        };
        let _ = writeln!(
            out,
            "  {:<width$}   {state}   {}",
            n.node,
            node_reason(ds, n)
        );
    }
}

/// The next-step line: what the step does and how many waves the rollout takes.
fn next_step(ds: &DaemonSetPlan) -> String {
    let step = &ds.step;
    if ds.is_blocked() {
        return "blocked: nothing is written until the manifest says how to share it with the \
                built-in controller (RISK builtin-controller)"
            .into();
    }
    if ds.suspended == Some(crate::plan::suspend::Suspension::Frozen) {
        return "frozen: nothing is written until `daemonsync unfreeze`".into();
    }
    if !ds.errors.is_empty() && step.is_empty() {
        return format!(
            "nothing is done until {} fixed",
            agree(ds.errors.len(), "its error is", "its errors are")
        );
    }
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
    if !step.create_stable.is_empty() {
        actions.push(format!(
            "create {} of the stable revision",
            count(step.create_stable.len(), "pod")
        ));
    }
    if !step.delete.is_empty() {
        actions.push(format!("delete {}", count(step.delete.len(), "pod")));
    }
    if !step.in_place.is_empty() {
        actions.push(format!(
            "update {} in place",
            count(step.in_place.len(), "pod")
        ));
    }
    if !step.open_gates.is_empty() {
        actions.push(format!(
            "mark {} ready",
            count(step.open_gates.len(), "pod")
        ));
    }
    if !step.pre_pull.is_empty() {
        actions.push(format!(
            "pre-pull on {}",
            count(step.pre_pull.len(), "node")
        ));
    }
    if !step.pre_pull_cleanup.is_empty() {
        actions.push(format!(
            "remove {}",
            count(step.pre_pull_cleanup.len(), "pre-pull pod")
        ));
    }
    if !step.remove_taints.is_empty() {
        actions.push(format!(
            "remove the readiness taint from {}",
            count(step.remove_taints.len(), "node")
        ));
    }
    let phase = match step_phase(step.phase) {
        Some(phase) => phase,
        // Only readiness conditions to set: they come from no phase of the reconcile.
        None if step_only_gates(step) => return format!("{}; {waves}", actions.join(", ")),
        None => "no phase",
    };
    format!("{} ({phase}); {waves}", actions.join(", "))
}

/// Node names a stage lists before `...`.
const STAGE_NAMES: usize = 4;

/// The rollout block under a DaemonSet's next-step line: the phase, every stage in order
/// (nodes, projected waves, the pause after it, the current one marked), the partition, the
/// stable revision and the halt threshold.
fn rollout_block(out: &mut String, ds: &DaemonSetPlan, r: &Rollout, paint: Painter) {
    let style = match r.phase {
        Phase::Halted => Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        Phase::Paused => Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
        _ => Style::new().bold(),
    };
    let _ = writeln!(
        out,
        "  {} {}",
        paint.style("Rollout:", Style::new().bold()),
        paint.style(&rollout_phase(r), style)
    );
    let states: BTreeMap<&str, NodeState> = ds.nodes.iter().map(|n| (&*n.node, n.state)).collect();
    let shown = r.stages.len().min(STAGE_ROWS);
    for (k, s) in r.stages.iter().enumerate().take(shown) {
        let k = k as u32;
        let mut line = format!(
            "    {}. {} ({})",
            k + 1,
            stage_name(s, PLAIN),
            stage_nodes(s, STAGE_NAMES)
        );
        match stage_progress(ds, &states, s, k) {
            StageProgress::Done => line.push_str(" done"),
            StageProgress::Waves(n) if n > 1 => {
                let _ = write!(line, " in {n} waves");
            }
            StageProgress::Waves(_) => {}
        }
        if let Some(p) = pause_after(s) {
            let _ = write!(line, ", then pause: {p}");
        }
        if k == r.stage && r.phase != Phase::Complete {
            line.push_str("   <- current");
        }
        let _ = writeln!(out, "{line}");
    }
    if r.stages.len() > shown {
        let _ = writeln!(
            out,
            "    ... and {} more",
            count(r.stages.len() - shown, "stage")
        );
    }
    if let Some(p) = &r.partition {
        let _ = writeln!(out, "    {}", partition_text(p));
    }
    let _ = writeln!(out, "    {}", stable_text(r));
    if r.halt_threshold > 0 {
        let _ = writeln!(out, "    {}", halt_text(r));
    }
}

/// Stages the table lists before `... and N more`.
const STAGE_ROWS: usize = 50;

/// `2 nodes: a-1, a-2`; after `max` names, `, ...`.
fn stage_nodes(s: &Stage, max: usize) -> String {
    let names: Vec<&str> = s.nodes.iter().take(max).map(|n| &**n).collect();
    let more = if s.nodes.len() > max { ", ..." } else { "" };
    if names.is_empty() {
        return "no nodes".into();
    }
    format!(
        "{}: {}{more}",
        count(s.nodes.len(), "node"),
        names.join(", ")
    )
}

/// `Partition: 2 (holds 2 nodes on the previous revision: c-3, c-4)`.
fn partition_text(p: &crate::plan::progressive::Partition) -> String {
    if p.nodes.is_empty() {
        return format!("Partition: {} ({})", p.count, partition_holds(0));
    }
    let names: Vec<&str> = p.nodes.iter().take(STAGE_NAMES).map(|n| &**n).collect();
    format!(
        "Partition: {} ({}: {}{})",
        p.count,
        partition_holds(p.nodes.len()),
        names.join(", "),
        if p.nodes.len() > STAGE_NAMES {
            ", ..."
        } else {
            ""
        }
    )
}

/// The revision held-back nodes that need a pod get.
fn stable_text(r: &Rollout) -> String {
    match &r.stable_revision {
        Some(rev) => format!("Stable revision: {rev} ({})", stable_gets(r)),
        None => format!("Stable revision: none known ({})", stable_gets(r)),
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
    use crate::report::testing::{
        all_missing_plan, canary_plan, complete_plan, error_plan, in_place_plan,
        in_place_recreate_plan, in_place_rollout, known_plan, manifest_only_plan, no_stable_plan,
        partition_plan, paused_plan, plan_one, wave_plan, zoned_rollout,
    };
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

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
            nodes: vec![crate::report::testing::worker("w1")].into(),
            pods: vec![crate::report::testing::pod(
                "infra", "agent", "w1", &rev, true,
            )]
            .into(),
            daemonsets: Vec::new(),
            rollouts: Vec::new(),
            revisions: Vec::new(),
            namespaces: Vec::new(),
            version: None,
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
        let desired =
            crate::plan::Desired::new("kube-flannel.yaml", serde_json::from_value(ds).unwrap());
        let plan_of = |desired: &crate::plan::Desired| {
            let p = crate::plan::plan(
                std::slice::from_ref(desired),
                &observed,
                &crate::plan::Policy::default(),
                "2025-06-01T12:00:00Z".parse().unwrap(),
            );
            to_table(&p, &plain())
        };
        // The built-in controller runs it and git does not say what to do: nothing is written,
        // and the plan says which choices there are.
        let out = plan_of(&desired);
        assert!(
            out.contains("kube-flannel/kube-flannel-ds: blocked: nothing is written until"),
            "{out}"
        );
        assert!(
            out.contains(
                "  RISK: [builtin-controller] the built-in DaemonSet controller runs \
                 kube-flannel/kube-flannel-ds: two controllers never converge"
            ),
            "{out}"
        );
        assert!(out.contains("daemonsync.io/adopt: \"true\""), "{out}");
        assert!(out.contains("daemonsync.io/mode: native"), "{out}");
        // Taken over: the pods are claimed, none of them runs git's template.
        let mut adopted = desired.clone();
        adopted
            .daemonset
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(crate::plan::ownership::ADOPT.into(), "true".into());
        let out = plan_of(&adopted);
        assert!(
            out.contains(
                "  Ownership: take over from the built-in controller: the apps/v1 DaemonSet \
                 kube-flannel/kube-flannel-ds is deleted with orphan propagation and its pods \
                 are claimed: 0 kept (their template is git's: no restart), 6 replaced within \
                 the budgets"
            ),
            "{out}"
        );
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

    fn line_of<'a>(out: &'a str, start: &str) -> &'a str {
        out.lines()
            .map(str::trim_start)
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting with {start:?} in\n{out}"))
    }

    /// What a reviewer sees of a canary-then-zones rollout as it starts: the phase, each
    /// stage in order with its nodes, projected waves and pause, the current one marked, the
    /// stable revision, and why each held node waits.
    #[test]
    fn canary_then_zones_shows_every_stage_and_the_current_one() {
        let out = to_table(&canary_plan(), &plain());
        let block = "\
demo/agent: delete 2 pods (rolling update); 6 waves projected
  Rollout: Canary
    1. canary (2 nodes: a-1, a-2), then pause: manual   <- current
    2. wave topology.kubernetes.io/zone=b (4 nodes: b-1, b-2, b-3, b-4) in 2 waves
    3. wave topology.kubernetes.io/zone=a (2 nodes: a-3, a-4)
    4. wave topology.kubernetes.io/zone=c (4 nodes: c-1, c-2, c-3, c-4) in 2 waves
    Stable revision: ";
        assert!(out.contains(block), "{out}");
        assert!(
            !out.contains("Partition") && !out.contains("Halt threshold"),
            "{out}"
        );
        let held = line_of(&out, "a-3 ");
        assert!(
            held.ends_with("; held until wave topology.kubernetes.io/zone=a"),
            "{held}"
        );
        assert!(held.contains("running old revision "), "{held}");
        // The canary nodes are not held.
        assert!(!line_of(&out, "a-1 ").contains("held"), "{out}");
        let wide = to_table(
            &canary_plan(),
            &TableOptions {
                wide: true,
                ..plain()
            },
        );
        assert!(wide.contains("\n  Rollout: Canary\n"), "{wide}");
        assert!(
            line_of(&wide, "c-4 ").ends_with("; held until wave topology.kubernetes.io/zone=c"),
            "{wide}"
        );
    }

    #[test]
    fn a_manual_pause_says_what_continues_and_a_joining_node_gets_the_stable_revision() {
        let p = paused_plan();
        let stable = p.daemonsets[0]
            .rollout
            .as_ref()
            .and_then(|r| r.stable_revision.clone())
            .expect("stable revision");
        let out = to_table(&p, &plain());
        assert!(
            out.contains(
                "\ndemo/agent: create 1 pod of the stable revision (per-node fixes); 7 waves \
                 projected\n  Rollout: Paused (manual pause after the canary: `daemonsync \
                 promote` continues)\n    1. canary (2 nodes: a-1, a-2) done, then pause: \
                 manual   <- current\n    2. wave topology.kubernetes.io/zone=b (5 nodes: b-1, \
                 b-2, b-3, b-4, ...) in 3 waves\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "    Stable revision: {stable} (held-back nodes that need a pod get it)\n"
            )),
            "{out}"
        );
        assert_eq!(
            line_of(&out, "b-5 "),
            format!(
                "b-5   no pod yet; gets the stable revision {stable} until its wave \
                 (topology.kubernetes.io/zone=b)"
            ),
            "{out}"
        );
    }

    #[test]
    fn without_a_stable_revision_a_held_node_gets_no_pod() {
        let out = to_table(&no_stable_plan(), &plain());
        assert!(
            out.contains("demo/agent: no changes in the next step; "),
            "{out}"
        );
        assert!(
            out.contains(
                "    Stable revision: none known (held-back nodes that need a pod get none \
                 until their stage)\n"
            ),
            "{out}"
        );
        assert_eq!(
            line_of(&out, "b-5 "),
            "b-5   no pod yet; gets no pod until its wave (topology.kubernetes.io/zone=b): no \
             stable revision known",
            "{out}"
        );
    }

    #[test]
    fn partition_and_halt_threshold_are_shown() {
        let out = to_table(&partition_plan(), &plain());
        assert!(
            out.contains(
                "    4. wave topology.kubernetes.io/zone=c (2 nodes: c-1, c-2)\n    Partition: 2 \
                 (holds 2 nodes on the previous revision: c-3, c-4)\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "    Halt threshold: 1 (the rollout halts when new pods fail on more than 1 \
                 node)\n"
            ),
            "{out}"
        );
        assert!(
            line_of(&out, "c-3 ").ends_with("; held by the partition"),
            "{out}"
        );
    }

    #[test]
    fn later_phases_move_the_current_marker() {
        let out = to_table(&wave_plan(), &plain());
        assert!(out.contains("\n  Rollout: Wave 1/3\n"), "{out}");
        assert!(
            line_of(&out, "1. canary").ends_with("done, then pause: manual"),
            "{out}"
        );
        assert!(
            line_of(&out, "2. wave").ends_with("in 2 waves   <- current"),
            "{out}"
        );
        // Nodes of the running wave are no longer held.
        assert_eq!(line_of(&out, "b-1 ").matches("held").count(), 0, "{out}");

        let out = to_table(&complete_plan(), &plain());
        assert!(
            out.contains("\ndemo/agent: no changes\n  Rollout: Complete\n"),
            "{out}"
        );
        assert!(
            line_of(&out, "4. wave").ends_with("(4 nodes: c-1, c-2, c-3, c-4) done"),
            "{out}"
        );
        assert!(!out.contains("<- current"), "{out}");
    }

    #[test]
    fn errors_are_prominent_and_not_repeated_as_warnings() {
        let p = error_plan();
        let out = to_table(&p, &plain());
        assert!(
            out.contains(
                "\ndemo/agent: nothing is done until its error is fixed\n  ERROR: \
                 metadata.annotations[daemonsync.io/waves-by]: Invalid value: \
                 \"example.com/rack\": no node has this label"
            ),
            "{out}"
        );
        assert!(!out.contains("WARNING:"), "{out}");
        assert!(!out.contains("Rollout:"), "{out}");
        let colored = to_table(
            &p,
            &TableOptions {
                color: true,
                ..plain()
            },
        );
        assert!(
            colored.contains("\u{1b}[1m\u{1b}[31mERROR:\u{1b}[0m"),
            "{colored:?}"
        );
    }

    /// What a reviewer sees of an in-place image update: the step counts the pods patched in
    /// place and the readiness conditions opened, the DaemonSet says how its pods take the new
    /// revision, and each out-of-date node says whether it is patched or recreated and why.
    #[test]
    fn in_place_updates_show_in_the_step_and_per_node() {
        let out = to_table(&in_place_plan(), &plain());
        assert!(
            out.contains(
                "\ndemo/agent: delete 1 pod, update 1 pod in place, mark 1 pod ready (rolling \
                 update); 2 waves projected\n  Update: in place (images agent:1 → agent:2, from \
                 revision bd94b698b)\n"
            ),
            "{out}"
        );
        for n in ["w3 ", "w4 ", "w5 "] {
            assert_eq!(
                line_of(&out, n),
                format!(
                    "{n}  running old revision bd94b698b; updated in place (c: agent:1 → agent:2)"
                ),
                "{out}"
            );
        }
        assert!(
            line_of(&out, "w2 ").ends_with(
                "; recreated: its pod runs revision 6c9f4559f9, not the stable revision \
                 bd94b698b"
            ),
            "{out}"
        );
        // Wide mode says the same per node.
        let wide = to_table(
            &in_place_plan(),
            &TableOptions {
                wide: true,
                ..plain()
            },
        );
        assert!(
            line_of(&wide, "w3 ").ends_with("; updated in place (c: agent:1 → agent:2)"),
            "{wide}"
        );
    }

    #[test]
    fn a_change_beyond_images_recreates_and_names_the_field() {
        let out = to_table(&in_place_recreate_plan(), &plain());
        assert!(
            out.contains(
                "\ndemo/agent: delete 3 pods (rolling update); 2 waves projected\n  Update: \
                 recreate (spec.template.spec.containers[0].env changes)\n"
            ),
            "{out}"
        );
        assert_eq!(
            line_of(&out, "w3 "),
            "w3   running old revision bd94b698b; recreated: \
             spec.template.spec.containers[0].env changes",
            "{out}"
        );
        assert!(!out.contains("in place"), "{out}");
    }

    #[test]
    fn a_step_that_only_opens_readiness_conditions_says_so() {
        let (d, mut o) = in_place_rollout(|_| {});
        crate::report::testing::update(&mut o, &d, &["w2", "w3", "w4", "w5"]);
        let p = plan_one(&d, &o);
        assert_eq!(p.daemonsets[0].step.open_gates.len(), 1);
        let out = to_table(&p, &plain());
        let step = line_of(&out, "demo/agent: ");
        assert!(step.starts_with("demo/agent: mark 1 pod ready; "), "{out}");
        assert!(
            !step.contains("(rolling update)") && !step.contains("no phase"),
            "{out}"
        );
        assert!(
            out.contains("\n  Update: in place (images agent:1 → agent:2, from revision "),
            "{out}"
        );
    }

    #[test]
    fn why_pods_are_recreated_after_all() {
        // No stable revision known: nothing to patch from.
        let (d, mut o) = in_place_rollout(|_| {});
        o.rollouts.clear();
        let out = to_table(&plan_one(&d, &o), &plain());
        assert!(
            out.contains("\n  Update: recreate (no stable revision is known"),
            "{out}"
        );
        assert!(
            line_of(&out, "w3 ").contains("; recreated: no stable revision is known"),
            "{out}"
        );
        // maxSurge beside maxUnavailable: in-place nodes are paced by maxUnavailable alone.
        let (d, o) = in_place_rollout(|d| {
            let s = d.daemonset.spec.as_mut().unwrap();
            let ru = s
                .update_strategy
                .as_mut()
                .and_then(|u| u.rolling_update.as_mut())
                .unwrap();
            ru.max_surge = Some(IntOrString::Int(1));
        });
        let out = to_table(&plan_one(&d, &o), &plain());
        assert!(
            out.contains("\n  WARNING: maxSurge does not apply to the 3 node(s) updated in place"),
            "{out}"
        );
    }

    #[test]
    fn many_or_init_images_per_node() {
        use crate::plan::inplace::{Change, ImageChange};
        let mut p = in_place_plan();
        let image = |init, container: &str, from: &str, to: &str| ImageChange {
            init,
            container: container.into(),
            from: from.into(),
            to: to.into(),
        };
        let ds = &mut p.daemonsets[0];
        let change = &mut ds.in_place.as_mut().unwrap().change;
        *change = Some(Change::InPlace {
            images: vec![
                image(false, "c", "agent:1", "agent:2"),
                image(true, "setup", "setup:1", "setup:2"),
            ],
        });
        let out = to_table(&p, &plain());
        assert!(
            out.contains(
                "  Update: in place (images agent:1 → agent:2, setup:1 → setup:2 (init), from \
                 revision bd94b698b)\n"
            ),
            "{out}"
        );
        assert!(
            line_of(&out, "w3 ").ends_with(
                "; updated in place (c: agent:1 → agent:2, setup (init): setup:1 → setup:2)"
            ),
            "{out}"
        );
        if let Some(Change::InPlace { images }) =
            &mut p.daemonsets[0].in_place.as_mut().unwrap().change
        {
            images.push(image(false, "sidecar", "s:1", "s:2"));
        }
        let out = to_table(&p, &plain());
        assert!(
            line_of(&out, "w3 ").ends_with("; updated in place (3 images)"),
            "{out}"
        );
    }

    #[test]
    fn halted_and_aborted_rollouts_say_so() {
        use crate::report::testing::{CANARY_THEN_ZONES, revision, update};
        let (d, mut o) = zoned_rollout(&CANARY_THEN_ZONES, true);
        update(&mut o, &d, &["a-1"]);
        o.rollouts[0].halted = Some("new pods failed on 2 nodes".into());
        let out = to_table(&plan_one(&d, &o), &plain());
        assert!(
            out.contains(
                "\n  Rollout: Halted (new pods failed on more nodes than the halt threshold; \
                 nothing more is replaced until the template changes)\n"
            ),
            "{out}"
        );

        o.rollouts[0].halted = None;
        o.rollouts[0].aborted = Some(revision(&d));
        let out = to_table(&plan_one(&d, &o), &plain());
        assert!(
            out.contains(
                "\n  Rollout: Paused (aborted: every node holds where it is; a new commit or \
                 `daemonsync resume` continues)\n"
            ),
            "{out}"
        );
        assert!(
            line_of(&out, "a-2 ").ends_with("; held where it is: the rollout is aborted"),
            "{out}"
        );
    }

    #[test]
    fn pre_pull_says_what_is_pulled_how_many_at_once_and_the_step_counts_it() {
        let (d, o) = in_place_rollout(|d| {
            d.daemonset
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .extend([
                    ("daemonsync.io/pre-pull".to_string(), "true".to_string()),
                    (
                        "daemonsync.io/pre-pull-parallelism".to_string(),
                        "2".to_string(),
                    ),
                ]);
        });
        let out = to_table(&plan_one(&d, &o), &plain());
        assert!(
            out.contains("\n  Pre-pull: agent:2, 2 nodes at a time: 0 pulling, "),
            "{out}"
        );
        assert!(out.contains("pre-pull on 2 nodes"), "{out}");
    }
}

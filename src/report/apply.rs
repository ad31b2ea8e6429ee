//! The report `daemonsync apply` ends with: the final state as a table (or the ApplyReport
//! JSON), the failing nodes and node problems, what happened to DaemonSets no longer in the
//! manifests, and one summary line saying how it ended and what to do next.

use super::{json, table};
use crate::apply::{ApplyReport, Outcome};
use crate::plan::progressive::Paused;
use jiff::SignedDuration;

/// How the final state is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyFormat {
    /// One line per DaemonSet, then the nodes that need attention.
    Table,
    /// The table, then every node of every DaemonSet.
    Wide,
    /// The versioned ApplyReport on stdout; notes and summary on stderr.
    Json,
}

/// What the report needs to know beyond the [`ApplyReport`].
#[derive(Debug, Clone)]
pub struct ApplyReportOptions {
    /// The form of the final state.
    pub format: ApplyFormat,
    /// ANSI colours in the table.
    pub color: bool,
    /// Nodes listed per state in the table before "... and N more".
    pub max_nodes: usize,
    /// The cluster is simulated: its times are simulated time.
    pub simulated: bool,
    /// The deadline a halt is measured against, named in the summary.
    pub progress_deadline: SignedDuration,
    /// DaemonSets no longer in the manifests were pruned (`--prune` without `--dry-run`).
    pub pruned: bool,
    /// The `--cluster` a `daemonsync promote` hint names; `None` where nothing keeps a record
    /// to promote (a `sim:` cluster starts afresh each run).
    pub promote_cluster: Option<String>,
}

/// The final report: (stdout, stderr). With `-o table` everything goes to stdout; with
/// `-o json` stdout is only the plan JSON and the notes and summary go to stderr.
pub fn render(r: &ApplyReport, o: &ApplyReportOptions) -> (String, String) {
    let mut out = String::new();
    match o.format {
        ApplyFormat::Json => out.push_str(&json::apply_to_json(r)),
        ApplyFormat::Table | ApplyFormat::Wide => {
            out.push_str(&table::to_table(
                &r.plan,
                &table::TableOptions {
                    color: o.color,
                    max_nodes_per_group: o.max_nodes,
                    wide: o.format == ApplyFormat::Wide,
                },
            ));
        }
    }
    let mut notes = String::new();
    let time = format!(
        "{}{}",
        clock(r.elapsed()),
        if o.simulated { " (simulated)" } else { "" }
    );
    let mut totals = format!(
        "{} step(s), {} pod(s) created, {} deleted",
        r.steps, r.creates, r.deletes
    );
    if r.in_place > 0 {
        totals.push_str(&format!(", {} updated in place", r.in_place));
    }
    if r.handover_writes > 0 {
        totals.push_str(&format!(
            ", {} handover write(s) with the built-in controller (see -o json)",
            r.handover_writes
        ));
    }
    let summary = match r.outcome {
        Outcome::Converged => format!("Converged in {time}: {totals}."),
        Outcome::DryRun => "Dry run: nothing was written; the table shows the current state and \
             the next step."
            .to_string(),
        Outcome::Halted
            if !r.failed.is_empty()
                && r.failed
                    .iter()
                    .all(|f| f.reason.starts_with("pre-pull failed")) =>
        {
            format!(
                "Halted after {time}: the new images of {} cannot be pulled ({}) on {} node(s); \
                 no daemon pod was touched. Fix the image and apply again. {totals}.",
                r.halted.join(", "),
                r.failed[0].reason.trim_start_matches("pre-pull failed: "),
                r.failed.len(),
            )
        }
        Outcome::Halted if !r.refused.is_empty() => {
            let refused: Vec<String> = r
                .refused
                .iter()
                .map(|(ds, why)| format!("{ds}: {why}"))
                .collect();
            format!(
                "Halted after {time}: the cluster refuses the pods of {}{}. {totals}.",
                refused.join("; "),
                if r.halted.len() < r.plan.daemonsets.len() {
                    "; every other DaemonSet converged"
                } else {
                    ""
                },
            )
        }
        Outcome::Halted => {
            // The failure signals seen (a crash loop, a configuration error, restarts, the
            // deadline), each once, in the order of the failing nodes.
            let mut signals: Vec<&str> = Vec::new();
            for f in &r.failed {
                let signal = signal_of(&f.reason);
                if !signals.contains(&signal) {
                    signals.push(signal);
                }
            }
            let why = if signals.iter().all(|s| *s == DEADLINE) {
                format!(
                    "stayed unavailable past the progress deadline ({:#})",
                    o.progress_deadline
                )
            } else {
                format!("failed ({})", signals.join("; "))
            };
            format!(
                "Halted after {time}: new pods of {} {why} on {} node(s); nothing more of {} was \
                 replaced{}. {totals}.",
                r.halted.join(", "),
                r.failed.len(),
                if r.halted.len() == 1 { "it" } else { "them" },
                if r.halted.len() < r.plan.daemonsets.len() {
                    "; every other DaemonSet converged"
                } else {
                    ""
                },
            )
        }
        Outcome::Blocked => {
            let blocked: Vec<String> = r
                .blocked
                .iter()
                .map(|(ds, why)| format!("  {ds}: {why}"))
                .collect();
            format!(
                "Converged in {time}, except {} blocked DaemonSet(s), for which nothing was \
                 written ({totals}):\n{}",
                blocked.len(),
                blocked.join("\n")
            )
        }
        Outcome::Paused => {
            let mut held = Vec::new();
            if !r.paused.is_empty() {
                held.push(format!(
                    "{}: paused, no pod replaced, nodes without one got the stable revision's \
                     (`daemonsync resume NAME -n NAMESPACE` continues)",
                    r.paused.join(", ")
                ));
            }
            if !r.frozen.is_empty() {
                held.push(format!(
                    "{}: frozen, nothing written (`daemonsync unfreeze NAME -n NAMESPACE` \
                     continues)",
                    r.frozen.join(", ")
                ));
            }
            format!("Converged in {time}, except {}. {totals}.", held.join("; "))
        }
        Outcome::AwaitingPromotion => {
            let waiting: Vec<String> = r
                .plan
                .daemonsets
                .iter()
                .filter(|ds| {
                    r.awaiting
                        .contains(&format!("{}/{}", ds.namespace, ds.name))
                })
                .map(|ds| {
                    let after = match ds.rollout.as_ref().and_then(|ro| ro.pause.as_ref()) {
                        Some(Paused::Manual { after }) => {
                            format!(" after the {after}")
                        }
                        _ => String::new(),
                    };
                    match &o.promote_cluster {
                        None => format!("{}/{} waits{after}", ds.namespace, ds.name),
                        Some(cluster) => format!(
                            "{}/{} waits{after}; `daemonsync promote {} -n {} --cluster {cluster}` \
                             continues",
                            ds.namespace, ds.name, ds.name, ds.namespace
                        ),
                    }
                })
                .collect();
            format!(
                "Paused after {time} at a manual pause: {}. {totals}.{}",
                waiting.join("; "),
                if o.promote_cluster.is_none() {
                    " A sim: cluster starts afresh each run, so there is nothing to promote: add \
                     --auto-promote to pass manual pauses."
                } else {
                    ""
                }
            )
        }
        Outcome::TimedOut => format!("Timed out after {time} before converging: {totals}."),
        Outcome::Stalled if !r.node_problems.is_empty() => format!(
            "Stopped after {time}: the rollout cannot finish while the NotReady node(s) above \
             use its unavailability budget; repair or remove them and apply again. {totals}."
        ),
        Outcome::Stalled => format!(
            "Stopped after {time}: the rollout cannot finish and nothing is left that would \
             change it. {totals}."
        ),
        Outcome::Interrupted => format!("Interrupted after {time}: {totals}."),
    };
    if !r.failed.is_empty() {
        notes.push_str("\nFailing nodes (the new version does not become ready):\n");
        for f in &r.failed {
            notes.push_str(&format!(
                "  {}/{}  node {}  pod {}: {}\n",
                f.namespace, f.daemonset, f.node, f.pod, f.reason
            ));
        }
    }
    if !r.node_problems.is_empty() {
        notes.push_str("\nNode problems (not counted against the new version):\n");
        for f in &r.node_problems {
            notes.push_str(&format!(
                "  {}/{}  node {} is NotReady; pod {} waits for it\n",
                f.namespace, f.daemonset, f.node, f.pod
            ));
        }
    }
    for orphan in &r.orphans {
        if o.pruned {
            notes.push_str(&format!(
                "\nPruned {}/{}: no longer in the manifests.\n",
                orphan.namespace, orphan.name
            ));
        } else {
            notes.push_str(&format!(
                "\n{}/{} is no longer in the manifests; its {} pod(s) were left running \
                 (--prune deletes them).\n",
                orphan.namespace,
                orphan.name,
                orphan.pods.len()
            ));
        }
    }
    let mut err = String::new();
    if o.format != ApplyFormat::Json {
        out.push_str(&notes);
        out.push_str(&format!("\n{summary}\n"));
    } else {
        err.push_str(&notes);
        err.push_str(&format!("{summary}\n"));
    }
    (out, err)
}

/// What [`signal_of`] calls a failure found only at the progress deadline.
const DEADLINE: &str = "the progress deadline";

/// The signal a failing node's reason names: `CrashLoopBackOff in container agent`,
/// `restarted 3 times within 10m (container agent)`, `Unschedulable`, or the deadline.
fn signal_of(reason: &str) -> &str {
    if reason.contains("(not ready after ") || reason.starts_with("not ready after ") {
        DEADLINE
    } else if let Some((head, _)) = reason.split_once(": ") {
        head
    } else {
        reason
    }
}

/// `m:ss` (or `h:mm:ss`) of a duration.
pub fn clock(d: SignedDuration) -> String {
    let s = d.as_secs().max(0);
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

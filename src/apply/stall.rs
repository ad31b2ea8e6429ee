//! Where each rollout stands for GitOps tools, judged from one observation: current, in
//! progress, waiting for a person, or stalled (the record's `Ready`, `Reconciling` and
//! `Stalled` conditions, read by kstatus and Flux, and `daemonsync_rollout_stalled`).
//!
//! A rollout with work left that no one holds is expected to progress: a node becoming up to
//! date, ready or available, an old pod going, or a new revision beginning. The progress
//! deadline runs from the last progress, which the record keeps (`status.lastProgressTime`),
//! so an `apply` or `sync` that restarts picks the clock up where the record left it. Past the
//! deadline without progress the rollout is stalled, whatever holds it (new pods that never
//! become ready, NotReady nodes that use the unavailability budget, a handover that never
//! completes); a halt, a block or an unusable source stall it at once. A pause (`daemonsync
//! pause`, an abort, a manual or timed pause of a progressive rollout) stops the clock.

use super::assess::Assessment;
use super::options::{ApplyOptions, Key};
use crate::cluster::{ClusterState, Reconcile, ReconcileState, RecordStatus};
use crate::model::{PAUSED_ANNOTATION, Timestamp};
use crate::plan::progressive::Paused;
use crate::plan::{self, NodeState, Status};
use std::collections::{BTreeMap, BTreeSet};

/// Where one DaemonSet's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Ready, Reconciling or Stalled, with the reason and message.
    pub reconcile: Reconcile,
    /// When the rollout last made progress, while it is expected to.
    pub last_progress: Option<Timestamp>,
    /// When the progress deadline expires, while it runs and has not.
    pub deadline: Option<Timestamp>,
}

impl Judged {
    /// Whether the rollout cannot make progress (the `Stalled` condition).
    pub fn is_stalled(&self) -> bool {
        self.reconcile.state == ReconcileState::Stalled
    }

    fn new(state: ReconcileState, reason: &str, message: impl Into<String>) -> Self {
        Judged {
            reconcile: Reconcile::new(state, reason, message),
            last_progress: None,
            deadline: None,
        }
    }
}

/// Judges every planned DaemonSet of `a` against what its record last said.
pub(super) fn judge(
    a: &Assessment<'_>,
    state: &ClusterState,
    opts: &ApplyOptions,
) -> BTreeMap<Key, Judged> {
    let not_ready: BTreeSet<&str> = state
        .observed
        .nodes
        .iter()
        .filter(|n| n.ready == Some(false))
        .map(|n| n.name.as_str())
        .collect();
    a.plan
        .daemonsets
        .iter()
        .map(|ds| {
            let key = (ds.namespace.clone(), ds.name.clone());
            let record = state
                .records
                .iter()
                .find(|r| r.namespace == ds.namespace && r.name == ds.name);
            let previous = record.and_then(|r| r.status.as_ref());
            let mut judged = judge_one(a, ds, &key, previous, &not_ready, state.now, opts);
            // The `Stalled` condition keeps its transition time while it holds: so does what
            // this writer says of it, so that an unchanged status reads back equal.
            if judged.is_stalled() {
                judged.reconcile.since = previous
                    .and_then(|p| p.reconcile.as_ref())
                    .filter(|r| r.state == ReconcileState::Stalled)
                    .and_then(|r| r.since);
            }
            (key, judged)
        })
        .collect()
}

fn judge_one(
    a: &Assessment<'_>,
    ds: &plan::DaemonSetPlan,
    key: &Key,
    previous: Option<&RecordStatus>,
    not_ready: &BTreeSet<&str>,
    now: Timestamp,
    opts: &ApplyOptions,
) -> Judged {
    use ReconcileState::{Current, InProgress, Stalled, Waiting};
    let s = &ds.status;
    let up_to_date = ds
        .nodes
        .iter()
        .filter(|n| n.state == NodeState::UpToDate)
        .count();
    let standing = format!(
        "{up_to_date} of {} nodes run revision {} and are available",
        s.desired_number_scheduled, ds.revision
    );
    if let Some(why) = a.blocked.get(key) {
        return Judged::new(Stalled, "Blocked", why.clone());
    }
    if a.halted.contains(key) {
        let why = a.refused.get(key).cloned().unwrap_or_else(|| {
            "new pods failed on more nodes than the halt threshold; nothing more is replaced \
             until the template changes"
                .to_string()
        });
        return Judged::new(Stalled, "RolloutHalted", why);
    }
    if let Some(why) = opts.source_errors.get(key) {
        return Judged::new(
            Stalled,
            "SourceError",
            format!("the newest source cannot be used (the last good version stays): {why}"),
        );
    }
    let pause = ds.rollout.as_ref().and_then(|r| r.pause.as_ref());
    let complete = s.updated_number_scheduled == s.desired_number_scheduled
        && s.number_available == s.desired_number_scheduled
        && s.number_misscheduled == 0;
    if complete && ds.step.is_empty() {
        return Judged::new(
            Current,
            "RolloutComplete",
            format!(
                "revision {} runs on all {} nodes and is available",
                ds.revision, s.desired_number_scheduled
            ),
        );
    }
    if a.paused.contains(key) {
        return match pause {
            Some(p @ Paused::Aborted) => Judged::new(Waiting, "RolloutAborted", p.to_string()),
            Some(p @ Paused::Record) => Judged::new(Waiting, "Paused", p.to_string()),
            _ => Judged::new(
                Waiting,
                "Paused",
                format!(
                    "paused ({PAUSED_ANNOTATION}): no pods are written; `daemonsync resume` \
                     continues; {standing}"
                ),
            ),
        };
    }
    if a.awaiting.contains(key) {
        let why = pause.map_or_else(|| "a manual pause".to_string(), ToString::to_string);
        return Judged::new(Waiting, "AwaitingPromotion", why);
    }
    if !a.is_active(&ds.namespace, &ds.name) {
        // Whatever else keeps every write from it (a freeze) stops the clock too.
        return Judged::new(
            Waiting,
            "Held",
            format!("no pods are written for it; {standing}"),
        );
    }
    if let Some(p @ Paused::Until { .. }) = pause {
        // It goes on by itself: in progress, but the deadline waits for the pause's end.
        return Judged::new(InProgress, "PausedBetweenStages", p.to_string());
    }
    if a.health.converged(&a.plan, |d| {
        d.namespace == ds.namespace && d.name == ds.name
    }) && ds.step.is_empty()
    {
        return settled(ds, up_to_date, pause, not_ready);
    }
    // Work left, nobody holding it: the progress deadline runs from the last progress.
    let since = previous
        .and_then(|p| {
            let at = p.last_progress?;
            (p.revision == ds.revision && !progressed(&p.counters, s)).then_some(at)
        })
        .unwrap_or(now);
    let expires = crate::model::later(since, opts.progress_deadline);
    let mut judged = if now >= expires {
        let held: Vec<&str> = ds
            .nodes
            .iter()
            .filter(|n| n.state != NodeState::UpToDate && not_ready.contains(&*n.node))
            .map(|n| &*n.node)
            .collect();
        let mut why = format!(
            "no progress for {:#} (the progress deadline): {standing}",
            opts.progress_deadline
        );
        if !held.is_empty() {
            why.push_str(&format!(
                "; NotReady nodes keep their pods unavailable: {}",
                names(&held)
            ));
        }
        Judged::new(Stalled, "ProgressDeadlineExceeded", why)
    } else {
        let mut j = Judged::new(InProgress, "Progressing", standing);
        j.deadline = Some(expires);
        j
    };
    judged.last_progress = Some(since);
    judged
}

/// A rollout with nothing left to do that is not complete: held by its partition, OnDelete
/// pods waiting to be deleted, or nodes that are NotReady themselves.
fn settled(
    ds: &plan::DaemonSetPlan,
    up_to_date: usize,
    pause: Option<&Paused>,
    not_ready: &BTreeSet<&str>,
) -> Judged {
    let desired = ds.status.desired_number_scheduled;
    if let Some(p @ Paused::Partition { .. }) = pause {
        return Judged::new(ReconcileState::Current, "PartitionHeld", p.to_string());
    }
    let old = ds
        .nodes
        .iter()
        .filter(|n| n.state == NodeState::OutOfDate)
        .count();
    if ds.strategy.type_ == "OnDelete" && old > 0 {
        return Judged::new(
            ReconcileState::Current,
            "OnDelete",
            format!(
                "{up_to_date} of {desired} nodes run revision {}; with the OnDelete strategy the \
                 others take it when their pods are deleted",
                ds.revision
            ),
        );
    }
    let sick: Vec<&str> = ds
        .nodes
        .iter()
        .filter(|n| n.state != NodeState::UpToDate && not_ready.contains(&*n.node))
        .map(|n| &*n.node)
        .collect();
    let mut message = format!(
        "revision {} runs on {up_to_date} of {desired} nodes",
        ds.revision
    );
    if !sick.is_empty() {
        message.push_str(&format!("; the others are NotReady: {}", names(&sick)));
    }
    Judged::new(ReconcileState::Current, "RolloutComplete", message)
}

/// Whether the counters moved forward since the record's: a node became up to date, ready or
/// available, or an old pod went.
fn progressed(before: &Status, now: &Status) -> bool {
    let old = |s: &Status| s.current_number_scheduled - s.updated_number_scheduled;
    now.updated_number_scheduled > before.updated_number_scheduled
        || now.number_ready > before.number_ready
        || now.number_available > before.number_available
        || old(now) < old(before)
}

/// `a, b, c` and, past five, `and N more`.
fn names(list: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut text = list[..list.len().min(SHOWN)].join(", ");
    if list.len() > SHOWN {
        text.push_str(&format!(" and {} more", list.len() - SHOWN));
    }
    text
}

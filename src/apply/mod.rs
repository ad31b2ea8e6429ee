//! The executor: applies the planner's steps to a [`Cluster`] until the rollout converges,
//! halts, or runs out of time.
//!
//! It is level-triggered: every iteration observes the cluster afresh, plans (pure), and
//! executes that plan's next step. Nothing it remembers decides an action, so an executor
//! killed mid-step and restarted (a fresh one, on the same cluster) picks up from what the
//! cluster shows, and the budgets hold because every step comes from the planner on fresh
//! observed state. The progress deadline is measured from the pods' own creation timestamps.
//!
//! Per step and DaemonSet: deletes first, then creates in slow-start batches 1, 2, 4, 8, …
//! (the batch sequence stops at the first failed create, as upstream's `syncNodes` does).

mod assess;
mod config;
#[cfg(test)]
mod config_tests;
mod execute;
#[cfg(test)]
mod gitops_tests;
mod handover;
#[cfg(test)]
mod handover_tests;
mod health;
mod options;
#[cfg(test)]
mod readiness_tests;
#[cfg(test)]
mod signals_tests;
mod stall;
#[cfg(test)]
mod stall_tests;
mod status;
#[cfg(test)]
mod status_tests;
#[cfg(test)]
mod suspend_tests;
#[cfg(test)]
mod tests;
mod writer;

pub use assess::{Assessment, assess, assess_plan, policy};
pub use handover::{ReleaseError, ReleaseOptions, Released, Work, native_form, release};
pub use health::Health;
pub use options::{
    ApplyError, ApplyOptions, ApplyReport, DaemonSetProgress, FailedNode, Key, NoProgress, Orphan,
    Outcome, Progress, ProgressUpdate, Write,
};
pub use stall::Judged;
pub use status::announce_complete;
pub use writer::Standing;

#[cfg(test)]
use crate::block_on;

use crate::cluster::{Cluster, ClusterError, ClusterState};
use crate::model::Timestamp;
use crate::plan::{self, Desired, Plan};
use assess::active_steps;
use execute::{Counts, Executed, execute};
use options::{Log, keep_forbidden};
use status::{announce_blocked, announce_halt, pause_daemons, write_after_step, write_statuses};
use std::collections::{BTreeMap, BTreeSet};

/// Steps allowed at one instant before the executor gives up (a step that changes nothing),
/// beyond the steps the burst limit itself needs (see [`max_steps_at_instant`]).
const MAX_STEPS_PER_INSTANT: usize = 64;

/// Steps one instant may legitimately take: a step writes at most
/// [`plan::BURST_REPLICAS`] pods per DaemonSet, so a fleet of `nodes` needs up to
/// `nodes / BURST_REPLICAS` steps to create (and as many to delete) before anything becomes
/// ready; the margin on top catches a loop that makes no progress.
fn max_steps_at_instant(nodes: usize) -> usize {
    MAX_STEPS_PER_INSTANT.saturating_add(nodes.div_ceil(plan::BURST_REPLICAS).saturating_mul(2))
}
/// Consecutive steps with failed writes before the executor gives up.
const MAX_FAILING_STEPS: usize = 5;

/// What one [`Executor::act`] did.
#[derive(Debug, Default)]
pub struct Acted {
    /// A step was executed (some writes were attempted).
    pub executed: bool,
    /// Stopped after the requested number of writes (fault injection).
    pub interrupted: bool,
    /// The step's first error (a refusal takes precedence); the other DaemonSets' writes
    /// went on.
    pub step_error: Option<ClusterError>,
    /// Writing a record status failed.
    pub status_error: Option<ClusterError>,
    /// Status writes held back (`ApplyOptions::status_interval`), with when each is due:
    /// the DaemonSet is to be looked at again then.
    pub status_held: BTreeMap<Key, Timestamp>,
}

/// Executes assessments: writes statuses and halt events, then the next step of every
/// active DaemonSet. One executor serves a whole `apply`, or a `sync` for its lifetime; what
/// it remembers (which halts were announced, what it wrote) never decides a pod write.
#[derive(Debug, Default)]
pub struct Executor {
    counts: Counts,
    announced: BTreeSet<Key>,
    /// Blocked DaemonSets whose `Blocked` event was recorded.
    announced_blocked: BTreeSet<Key>,
    /// Pods the cluster's admission refused, by DaemonSet: the revision and the refusal.
    refused: BTreeMap<Key, (String, String)>,
    /// The write log, when kept (`apply`; a long-running `sync` keeps none).
    log: Option<Vec<Write>>,
    /// DaemonSets whose record differs from their status only in what churns with every pod,
    /// with when that was first seen (`ApplyOptions::status_interval`).
    churning_since: BTreeMap<Key, Timestamp>,
}

impl Executor {
    /// An executor that keeps a log of its writes ([`Executor::writes`]).
    pub fn with_log() -> Self {
        Executor {
            log: Some(Vec::new()),
            ..Executor::default()
        }
    }

    /// The writes so far, in order, if a log is kept.
    pub fn writes(&self) -> &[Write] {
        self.log.as_deref().unwrap_or_default()
    }

    /// [`assess()`], with what this executor learned writing: DaemonSets whose pods the
    /// cluster's admission refused halt (for the revision refused).
    pub fn assess<'d>(
        &self,
        desired: &'d [Desired],
        state: &ClusterState,
        opts: &ApplyOptions,
    ) -> Assessment<'d> {
        self.learned(assess(desired, state, opts), state, opts)
    }

    /// [`Executor::assess`] with the plan made already (see [`assess::assess_plan`]).
    pub fn assess_plan<'d>(
        &self,
        desired: &'d [Desired],
        state: &ClusterState,
        opts: &ApplyOptions,
        plan: Plan,
    ) -> Assessment<'d> {
        self.learned(assess::assess_plan(desired, state, opts, plan), state, opts)
    }

    /// An assessment with what this executor learned writing (admission's refusals) and
    /// where each rollout stands.
    fn learned<'d>(
        &self,
        mut a: Assessment<'d>,
        state: &ClusterState,
        opts: &ApplyOptions,
    ) -> Assessment<'d> {
        a.refused_by_admission(&self.refused, &state.observed);
        a.progress = stall::judge(&a, state, opts);
        a
    }

    /// Writes the record statuses, announces new halts, and executes the next step of the
    /// active DaemonSets (and the prune), then writes the statuses that only count pods.
    /// Errors of one DaemonSet do not stop the others', except a refusal (401/403), which
    /// stops the step.
    pub async fn act<C: Cluster>(
        &mut self,
        cluster: &mut C,
        a: &Assessment<'_>,
        state: &ClusterState,
        opts: &ApplyOptions,
    ) -> Acted {
        if !opts.dry_run {
            pause_daemons(cluster, a, state).await;
        }
        let statuses = write_statuses(cluster, a, state, opts, &mut self.churning_since).await;
        let acted = Acted {
            status_error: statuses.written.err(),
            status_held: statuses.held,
            ..Acted::default()
        };
        let mut acted = self.announce_and_step(cluster, a, state, opts, acted).await;
        // What only counts pods is written after the step ([`write_statuses`]), unless a
        // refusal stopped it.
        if acted.status_error.as_ref().is_none_or(|e| !e.stops_step())
            && let Some(e) = write_after_step(cluster, a, opts, statuses.after_step).await
        {
            keep_forbidden(&mut acted.status_error, e);
        }
        acted
    }

    /// The part of [`Executor::act`] between the statuses written before the step and those
    /// written after it: new halts and blocks announced, then the step.
    async fn announce_and_step<C: Cluster>(
        &mut self,
        cluster: &mut C,
        a: &Assessment<'_>,
        state: &ClusterState,
        opts: &ApplyOptions,
        mut acted: Acted,
    ) -> Acted {
        self.announced.retain(|k| a.halted.contains(k));
        for key in &a.halted {
            if self.announced.insert(key.clone()) {
                announce_halt(cluster, a, key).await;
            }
        }
        self.announced_blocked.retain(|k| a.blocked.contains_key(k));
        for (key, why) in &a.blocked {
            if opts.record_blocked && self.announced_blocked.insert(key.clone()) {
                announce_blocked(cluster, key, why).await;
            }
        }
        if acted
            .status_error
            .as_ref()
            .is_some_and(ClusterError::stops_step)
            || !a.has_work(opts)
        {
            return acted;
        }
        self.counts.steps += 1;
        let prune = a.prune_pods(opts);
        tracing::info!(
            step = self.counts.steps,
            at = %state.now,
            creates = active_steps(a).map(|d| d.step.create.len()).sum::<usize>(),
            deletes = active_steps(a).map(|d| d.step.delete.len()).sum::<usize>() + prune.len(),
            "executing step"
        );
        acted.executed = true;
        let mut log = Log {
            time: state.now,
            entries: self.log.as_mut(),
        };
        let refusals = &mut self.refused;
        match execute(
            cluster,
            a,
            state,
            &prune,
            opts,
            &mut self.counts,
            &mut log,
            refusals,
        )
        .await
        {
            Ok(Executed::Done) => {}
            Ok(Executed::Interrupted) => acted.interrupted = true,
            Err(e) => {
                tracing::warn!(step = self.counts.steps, error = %e, "step had failed writes");
                acted.step_error = Some(e);
            }
        }
        acted
    }
}

/// Applies `desired` to `cluster` until every DaemonSet is converged, halted or paused, or
/// the apply timed out or was interrupted. A halted or paused DaemonSet does not stop the
/// others: the apply finishes what it can.
pub async fn apply<C: Cluster>(
    cluster: &mut C,
    desired: &[Desired],
    opts: &ApplyOptions,
    progress: &mut dyn Progress,
) -> Result<ApplyReport, ApplyError> {
    if desired.is_empty() && opts.prune {
        return Err(ApplyError::PruneWithoutSource);
    }
    let mut state = cluster.observe().await?;
    let started = state.now;
    let deadline = opts.timeout.map(|t| crate::model::later(started, t));
    let mut executor = Executor::with_log();
    let mut last_instant = started;
    let mut steps_at_instant = 0;
    let mut failing_steps = 0;
    // A failed status write does not stop the rollout (upstream writes status after its sync
    // whatever happened); a failing step's error takes precedence over a status error.
    let mut failing_status = 0;
    loop {
        let now = state.now;
        let a = executor.assess(desired, &state, opts);
        progress.update(&ProgressUpdate {
            step: executor.counts.steps,
            elapsed: now.duration_since(started),
            daemonsets: a.health.progress(&a.plan),
            plan: &a.plan,
        });
        let report = |outcome, a: Assessment<'_>, counts: &Counts| ApplyReport {
            outcome,
            started,
            finished: now,
            steps: counts.steps,
            creates: counts.creates,
            deletes: counts.deletes,
            in_place: counts.in_place,
            handover_writes: counts.handover,
            failed: a.health.failed.clone(),
            node_problems: a.health.node_problems.clone(),
            halted: a.halted_names(),
            refused: a.refused_names(),
            blocked: a.blocked_names(),
            paused: a.paused_names(),
            frozen: a.frozen_names(),
            awaiting: a.awaiting_names(),
            writes: Vec::new(),
            orphans: a.orphans,
            plan: a.plan,
        };
        let report = |outcome, a: Assessment<'_>, e: &Executor| ApplyReport {
            writes: e.writes().to_vec(),
            ..report(outcome, a, &e.counts)
        };
        if let Some(names) = &a.mass_prune {
            return Err(ApplyError::MassPrune(names.clone()));
        }
        if opts.dry_run {
            return Ok(report(Outcome::DryRun, a, &executor));
        }
        let work = a.has_work(opts);
        if work {
            if now == last_instant {
                steps_at_instant += 1;
                if steps_at_instant > max_steps_at_instant(state.observed.nodes.len()) {
                    return Err(ApplyError::NoProgress(steps_at_instant));
                }
            } else {
                last_instant = now;
                steps_at_instant = 1;
            }
        }
        let acted = executor.act(cluster, &a, &state, opts).await;
        // Retrying a refusal cannot help, and would only write more of the step.
        for e in [&acted.status_error, &acted.step_error]
            .into_iter()
            .flatten()
        {
            if let ClusterError::Forbidden(line) = e {
                return Err(ApplyError::Cluster(ClusterError::Forbidden(line.clone())));
            }
        }
        let status_error = acted.status_error;
        failing_status = if status_error.is_some() {
            failing_status + 1
        } else {
            0
        };
        if acted.interrupted {
            let now = cluster.observe().await?.now;
            let mut r = report(Outcome::Interrupted, a, &executor);
            r.finished = now;
            return Ok(r);
        }
        if acted.executed {
            match acted.step_error {
                None => failing_steps = 0,
                Some(e) => {
                    failing_steps += 1;
                    if failing_steps >= MAX_FAILING_STEPS {
                        return Err(ApplyError::WritesFailing(e));
                    }
                }
            }
            if failing_status >= MAX_FAILING_STEPS
                && let Some(e) = status_error
            {
                return Err(ApplyError::StatusFailing(e));
            }
            state = cluster.observe().await?;
            continue;
        }
        if let Some(e) = status_error {
            return Err(ApplyError::StatusFailing(e));
        }
        if a.settled() && (!opts.prune || a.orphans.is_empty()) {
            if executor.counts.steps > 0 {
                announce_complete(cluster, &a, |_| true).await;
            }
            let outcome = if !a.halted.is_empty() {
                Outcome::Halted
            } else if !a.blocked.is_empty() {
                Outcome::Blocked
            } else if !a.paused.is_empty() || !a.frozen.is_empty() {
                Outcome::Paused
            } else if !a.awaiting.is_empty() {
                Outcome::AwaitingPromotion
            } else {
                Outcome::Converged
            };
            return Ok(report(outcome, a, &executor));
        }
        if deadline.is_some_and(|d| now >= d) {
            return Ok(report(Outcome::TimedOut, a, &executor));
        }
        let wake = match (a.next_wake(), deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let changed = cluster
            .wait_for_change(wake.unwrap_or(Timestamp::MAX))
            .await?;
        state = cluster.observe().await?;
        if !changed && wake.is_none() {
            return Ok(report(Outcome::Stalled, a, &executor));
        }
    }
}

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

mod health;
#[cfg(test)]
mod tests;

pub use health::{FailedNode, Health};

use crate::cluster::{
    Cluster, ClusterError, ClusterState, Event, EventType, RecordSource, RecordStatus,
};
use crate::model::{MANAGED_BY_LABEL, MANAGED_BY_VALUE, Timestamp};
use crate::plan::{self, DaemonSetSpec, Desired, NodeState, Plan, Policy};
use jiff::SignedDuration;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake};

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Plan once and write nothing.
    pub dry_run: bool,
    /// New-revision pods that stay unavailable this long (on Ready nodes) halt the rollout.
    pub progress_deadline: SignedDuration,
    /// Delete the pods of managed DaemonSets that are no longer in the source.
    pub prune: bool,
    /// Allow pruning more than one DaemonSet at once.
    pub allow_mass_prune: bool,
    /// Planner policy.
    pub policy: Policy,
    /// Give up after this long (cluster time); `None`: no limit.
    pub timeout: Option<SignedDuration>,
    /// Fault injection: stop (as if killed) after this many writes.
    pub stop_after_writes: Option<usize>,
    /// Where the manifests were read from, for the records.
    pub source: RecordSource,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            dry_run: false,
            progress_deadline: SignedDuration::from_mins(10),
            prune: false,
            allow_mass_prune: false,
            policy: Policy::default(),
            timeout: None,
            stop_after_writes: None,
            source: RecordSource::default(),
        }
    }
}

/// How an apply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every DaemonSet is up to date on every node it should run on (nodes that are
    /// themselves NotReady excepted: see [`ApplyReport::node_problems`]).
    Converged,
    /// New pods stayed unavailable past the progress deadline; nothing more was replaced.
    Halted,
    /// The timeout passed first.
    TimedOut,
    /// Nothing is left to do and nothing will change, yet the rollout is not complete.
    Stalled,
    /// Stopped after the requested number of writes (fault injection).
    Interrupted,
    /// Dry run: planned, wrote nothing.
    DryRun,
}

/// A managed DaemonSet found in the cluster but not in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Its pods that are not yet terminating.
    pub pods: Vec<String>,
}

/// The result of an apply.
#[derive(Debug, Clone)]
pub struct ApplyReport {
    /// How it ended.
    pub outcome: Outcome,
    /// The last plan.
    pub plan: Plan,
    /// Cluster time at the start.
    pub started: Timestamp,
    /// Cluster time at the end.
    pub finished: Timestamp,
    /// Steps executed.
    pub steps: usize,
    /// Pods created.
    pub creates: usize,
    /// Pods deleted.
    pub deletes: usize,
    /// Nodes whose new pod failed (the reason the rollout halted).
    pub failed: Vec<FailedNode>,
    /// Nodes that are NotReady themselves: not evidence against the new version.
    pub node_problems: Vec<FailedNode>,
    /// Managed DaemonSets no longer in the source (pruned with `--prune`, else left alone).
    pub orphans: Vec<Orphan>,
}

impl ApplyReport {
    /// Cluster time taken.
    pub fn elapsed(&self) -> SignedDuration {
        self.finished.duration_since(self.started)
    }
}

/// Why an apply could not run.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The cluster failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// Pruning several DaemonSets needs `--allow-mass-prune`.
    #[error(
        "--prune would delete the pods of {} DaemonSets ({}); pruning more than one at once needs --allow-mass-prune",
        .0.len(), .0.join(", ")
    )]
    MassPrune(Vec<String>),
    /// Prune with an empty source.
    #[error("refusing to prune: the source rendered no DaemonSet")]
    PruneWithoutSource,
    /// The same instant kept producing steps.
    #[error("no progress: {0} steps at the same instant without the cluster settling")]
    NoProgress(usize),
    /// Writes kept failing.
    #[error("writes keep failing; last error: {0}")]
    WritesFailing(ClusterError),
    /// Pod writes went through but status writes kept failing.
    #[error("the rollout went on, but writing DaemonSet status keeps failing; last error: {0}")]
    StatusFailing(ClusterError),
}

/// Progress of one DaemonSet, as shown while applying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonSetProgress {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Nodes that should run it.
    pub desired: usize,
    /// Up to date and available.
    pub done: usize,
    /// Being replaced or starting.
    pub in_progress: usize,
    /// New pod failing (past the deadline, or showing a waiting reason).
    pub failed: usize,
    /// New pod waiting for a NotReady node.
    pub node_problems: usize,
}

/// One progress report: after each observation.
#[derive(Debug, Clone)]
pub struct ProgressUpdate<'a> {
    /// Steps executed so far.
    pub step: usize,
    /// Cluster time since the start.
    pub elapsed: SignedDuration,
    /// Per DaemonSet.
    pub daemonsets: Vec<DaemonSetProgress>,
    /// The plan just made.
    pub plan: &'a Plan,
}

/// Receives progress while applying.
pub trait Progress {
    /// Called after every observation, before acting on it.
    fn update(&mut self, update: &ProgressUpdate<'_>);
}

/// Ignores progress.
#[derive(Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn update(&mut self, _: &ProgressUpdate<'_>) {}
}

/// Runs a future to completion on the current thread (the sim and snapshot backends never
/// wait; a live backend brings its own runtime).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(ThreadWaker(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

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

/// Applies `desired` to `cluster` until converged, halted, timed out or interrupted.
pub async fn apply<C: Cluster>(
    cluster: &mut C,
    desired: &[Desired],
    opts: &ApplyOptions,
    progress: &mut dyn Progress,
) -> Result<ApplyReport, ApplyError> {
    if desired.is_empty() && opts.prune {
        return Err(ApplyError::PruneWithoutSource);
    }
    let specs: BTreeMap<(String, String), (&Desired, DaemonSetSpec)> = desired
        .iter()
        .map(|d| {
            let spec = DaemonSetSpec::compile(&d.daemonset);
            ((spec.namespace.clone(), spec.name.clone()), (d, spec))
        })
        .collect();
    let mut state = cluster.observe().await?;
    let started = state.now;
    let deadline = opts.timeout.map(|t| crate::model::later(started, t));
    let mut counts = Counts::default();
    let mut last_instant = started;
    let mut steps_at_instant = 0;
    let mut failing_steps = 0;
    // A failed status write does not stop the rollout (upstream writes status after its sync
    // whatever happened); a failing step's error takes precedence over a status error.
    let mut status_error: Option<ClusterError>;
    let mut failing_status = 0;
    loop {
        let now = state.now;
        let plan = plan::plan(desired, &state.observed, &opts.policy, now);
        let health = Health::assess(&plan, &specs, &state.observed, now, opts.progress_deadline);
        let orphans = orphans(&state, &specs);
        progress.update(&ProgressUpdate {
            step: counts.steps,
            elapsed: now.duration_since(started),
            daemonsets: health.progress(&plan),
            plan: &plan,
        });
        let report = |outcome, plan: Plan, counts: &Counts, health: &Health, orphans| ApplyReport {
            outcome,
            plan,
            started,
            finished: now,
            steps: counts.steps,
            creates: counts.creates,
            deletes: counts.deletes,
            failed: health.failed.clone(),
            node_problems: health.node_problems.clone(),
            orphans,
        };
        if opts.prune && orphans.len() > 1 && !opts.allow_mass_prune {
            return Err(ApplyError::MassPrune(
                orphans
                    .iter()
                    .map(|o| format!("{}/{}", o.namespace, o.name))
                    .collect(),
            ));
        }
        if opts.dry_run {
            return Ok(report(Outcome::DryRun, plan, &counts, &health, orphans));
        }
        match write_statuses(cluster, &plan, &state, &specs, &health, &opts.source).await {
            Ok(()) => {
                failing_status = 0;
                status_error = None;
            }
            Err(e @ ClusterError::Forbidden(_)) => return Err(ApplyError::Cluster(e)),
            Err(e) => {
                failing_status += 1;
                status_error = Some(e);
            }
        }
        if !health.failed.is_empty() {
            for f in &health.failed {
                cluster
                    .emit_event(Event {
                        namespace: f.namespace.clone(),
                        name: f.daemonset.clone(),
                        type_: EventType::Warning,
                        reason: "RolloutHalted".into(),
                        message: format!("pod {} on node {}: {}", f.pod, f.node, f.reason),
                    })
                    .await?;
            }
            return Ok(report(Outcome::Halted, plan, &counts, &health, orphans));
        }
        let prune: Vec<(String, String)> = if opts.prune {
            orphans
                .iter()
                .flat_map(|o| o.pods.iter().map(|p| (o.namespace.clone(), p.clone())))
                .collect()
        } else {
            Vec::new()
        };
        if plan.has_changes() || !prune.is_empty() {
            if now == last_instant {
                steps_at_instant += 1;
                if steps_at_instant > max_steps_at_instant(state.observed.nodes.len()) {
                    return Err(ApplyError::NoProgress(steps_at_instant));
                }
            } else {
                last_instant = now;
                steps_at_instant = 1;
            }
            counts.steps += 1;
            tracing::info!(
                step = counts.steps,
                at = %now,
                creates = plan.daemonsets.iter().map(|d| d.step.create.len()).sum::<usize>(),
                deletes = plan.daemonsets.iter().map(|d| d.step.delete.len()).sum::<usize>() + prune.len(),
                "executing step"
            );
            let result = execute(cluster, &plan, &specs, &prune, opts, &mut counts).await;
            if let Err(e) = &result {
                tracing::warn!(step = counts.steps, error = %e, "step had failed writes");
            }
            match result {
                Ok(Executed::Done) => failing_steps = 0,
                Ok(Executed::Interrupted) => {
                    let now = cluster.observe().await?.now;
                    let mut r = report(Outcome::Interrupted, plan, &counts, &health, orphans);
                    r.finished = now;
                    return Ok(r);
                }
                // Retrying a refusal cannot help, and would only write more of the step.
                Err(e @ ClusterError::Forbidden(_)) => return Err(ApplyError::Cluster(e)),
                Err(e) => {
                    failing_steps += 1;
                    if failing_steps >= MAX_FAILING_STEPS {
                        return Err(ApplyError::WritesFailing(e));
                    }
                }
            }
            if failing_status >= MAX_FAILING_STEPS
                && let Some(e) = status_error.take()
            {
                return Err(ApplyError::StatusFailing(e));
            }
            state = cluster.observe().await?;
            continue;
        }
        if let Some(e) = status_error.take() {
            return Err(ApplyError::StatusFailing(e));
        }
        if health.converged(&plan) && (!opts.prune || orphans.is_empty()) {
            if counts.steps > 0 {
                // OnDelete DaemonSets converge without their pods being replaced: not complete.
                let complete = plan.daemonsets.iter().filter(|ds| {
                    ds.status.updated_number_scheduled == ds.status.desired_number_scheduled
                });
                for ds in complete {
                    cluster
                        .emit_event(Event {
                            namespace: ds.namespace.clone(),
                            name: ds.name.clone(),
                            type_: EventType::Normal,
                            reason: "RolloutComplete".into(),
                            message: format!(
                                "revision {} runs on all {} nodes",
                                ds.revision, ds.status.desired_number_scheduled
                            ),
                        })
                        .await?;
                }
            }
            return Ok(report(Outcome::Converged, plan, &counts, &health, orphans));
        }
        if deadline.is_some_and(|d| now >= d) {
            return Ok(report(Outcome::TimedOut, plan, &counts, &health, orphans));
        }
        let wake = match (health.next_deadline, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let changed = cluster
            .wait_for_change(wake.unwrap_or(Timestamp::MAX))
            .await?;
        state = cluster.observe().await?;
        if !changed && wake.is_none() {
            return Ok(report(Outcome::Stalled, plan, &counts, &health, orphans));
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    steps: usize,
    creates: usize,
    deletes: usize,
}

enum Executed {
    Done,
    Interrupted,
}

/// Executes one step: for every DaemonSet, its deletes, then its creates in slow-start
/// batches; then the prune deletes.
async fn execute<C: Cluster>(
    cluster: &mut C,
    plan: &Plan,
    specs: &BTreeMap<(String, String), (&Desired, DaemonSetSpec)>,
    prune: &[(String, String)],
    opts: &ApplyOptions,
    counts: &mut Counts,
) -> Result<Executed, ClusterError> {
    let interrupted = |counts: &Counts| {
        opts.stop_after_writes
            .is_some_and(|n| counts.creates + counts.deletes >= n)
    };
    let mut first_error = None;
    for ds in &plan.daemonsets {
        if ds.step.is_empty() {
            continue;
        }
        if matches!(first_error, Some(ClusterError::Forbidden(_))) {
            break;
        }
        let Some((desired, spec)) = specs.get(&(ds.namespace.clone(), ds.name.clone())) else {
            continue;
        };
        cluster
            .ensure_record(&desired.daemonset, &opts.source)
            .await?;
        let (mut created, mut deleted, mut failed_pods) = (Vec::new(), Vec::new(), Vec::new());
        let mut create_error = None;
        for d in &ds.step.delete {
            match cluster.delete_pod(&d.namespace, &d.name).await {
                Ok(()) | Err(ClusterError::NotFound { .. }) => {
                    counts.deletes += 1;
                    deleted.push(d.name.clone());
                    if d.reason == plan::DeleteReason::Failed {
                        failed_pods.push(format!("{} on node {}", d.name, d.node));
                    }
                }
                Err(e) => {
                    let forbidden = matches!(e, ClusterError::Forbidden(_));
                    keep_forbidden(&mut first_error, e);
                    if forbidden {
                        break;
                    }
                }
            }
            if interrupted(counts) {
                return Ok(Executed::Interrupted);
            }
        }
        let owner = plan::render::PodOwner::record(&spec.name);
        let mut batch = 1;
        let mut next = 0;
        let refused = matches!(first_error, Some(ClusterError::Forbidden(_)));
        'batches: while !refused && next < ds.step.create.len() {
            let end = (next + batch).min(ds.step.create.len());
            let mut failed = false;
            for node in &ds.step.create[next..end] {
                let pod = plan::render::pod_for_node(&desired.daemonset, spec, node, &owner);
                match cluster.create_pod(pod).await {
                    Ok(name) => {
                        counts.creates += 1;
                        created.push(name);
                    }
                    Err(e) => {
                        failed = true;
                        create_error.get_or_insert_with(|| e.to_string());
                        let forbidden = matches!(e, ClusterError::Forbidden(_));
                        keep_forbidden(&mut first_error, e);
                        if forbidden {
                            break 'batches;
                        }
                    }
                }
                if interrupted(counts) {
                    return Ok(Executed::Interrupted);
                }
            }
            if failed {
                break 'batches;
            }
            next = end;
            batch *= 2;
        }
        let events = [
            (
                EventType::Warning,
                "FailedDaemonPod",
                "found failed daemon pod(s), deleted",
                failed_pods,
            ),
            (
                EventType::Normal,
                "SuccessfulDelete",
                "deleted pod(s)",
                deleted,
            ),
            (
                EventType::Normal,
                "SuccessfulCreate",
                "created pod(s)",
                created,
            ),
            (
                EventType::Warning,
                "FailedCreate",
                "error creating pods",
                create_error.into_iter().collect(),
            ),
        ];
        for (type_, reason, what, items) in events {
            if items.is_empty() {
                continue;
            }
            cluster
                .emit_event(Event {
                    namespace: ds.namespace.clone(),
                    name: ds.name.clone(),
                    type_,
                    reason: reason.into(),
                    message: event_message(what, &items),
                })
                .await?;
        }
    }
    for (namespace, name) in prune {
        if matches!(first_error, Some(ClusterError::Forbidden(_))) {
            break;
        }
        match cluster.delete_pod(namespace, name).await {
            Ok(()) | Err(ClusterError::NotFound { .. }) => counts.deletes += 1,
            Err(e) => keep_forbidden(&mut first_error, e),
        }
        if interrupted(counts) {
            return Ok(Executed::Interrupted);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(Executed::Done),
    }
}

/// Keeps the first error of a step, unless a refusal comes later: that one decides.
fn keep_forbidden(first: &mut Option<ClusterError>, e: ClusterError) {
    if first.is_none()
        || matches!(e, ClusterError::Forbidden(_))
            && !matches!(first, Some(ClusterError::Forbidden(_)))
    {
        *first = Some(e);
    }
}

/// An event message naming the first few items: `created pod(s): a, b, c and 7 more`.
fn event_message(what: &str, items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = format!("{what}: {}", items[..items.len().min(SHOWN)].join(", "));
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

/// Writes each DaemonSet's status (counters, revision, halt) to its record when it differs
/// from what the record shows, making sure the record exists first.
async fn write_statuses<C: Cluster>(
    cluster: &mut C,
    plan: &Plan,
    state: &ClusterState,
    specs: &BTreeMap<(String, String), (&Desired, DaemonSetSpec)>,
    health: &Health,
    source: &RecordSource,
) -> Result<(), ClusterError> {
    for ds in &plan.daemonsets {
        let halted = health
            .failed
            .iter()
            .find(|f| f.namespace == ds.namespace && f.daemonset == ds.name)
            .map(|f| format!("pod {} on node {}: {}", f.pod, f.node, f.reason));
        let status = RecordStatus {
            counters: ds.status,
            revision: ds.revision.clone(),
            halted,
        };
        let current = state
            .records
            .iter()
            .find(|r| r.namespace == ds.namespace && r.name == ds.name)
            .and_then(|r| r.status.as_ref());
        if current != Some(&status) {
            if let Some((desired, _)) = specs.get(&(ds.namespace.clone(), ds.name.clone())) {
                cluster.ensure_record(&desired.daemonset, source).await?;
            }
            cluster
                .write_status(&ds.namespace, &ds.name, &status)
                .await?;
        }
    }
    Ok(())
}

/// Managed DaemonSets whose pods exist in the cluster but which the source no longer has:
/// pods labelled managed-by daemonsync whose controller is a record (kind and API group) not
/// in `specs`.
pub fn orphans(
    state: &ClusterState,
    specs: &BTreeMap<(String, String), (&Desired, DaemonSetSpec)>,
) -> Vec<Orphan> {
    let mut found: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for pod in &state.observed.pods {
        let Some(owner) = &pod.controller else {
            continue;
        };
        let group = owner.api_version.split_once('/').map_or("", |(g, _)| g);
        if owner.kind != plan::RECORD_KIND
            || group != plan::RECORD_GROUP
            || pod.labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY_VALUE)
        {
            continue;
        }
        let key = (pod.namespace.clone(), owner.name.clone());
        if specs.contains_key(&key) {
            continue;
        }
        let pods = found.entry(key).or_default();
        if !pod.is_terminating() {
            pods.push(pod.name.clone());
        }
    }
    found
        .into_iter()
        .map(|((namespace, name), pods)| Orphan {
            namespace,
            name,
            pods,
        })
        .collect()
}

/// True for node states that need nothing more.
pub(crate) fn is_settled(state: NodeState) -> bool {
    matches!(
        state,
        NodeState::UpToDate | NodeState::Ineligible | NodeState::Blocked
    )
}

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
mod handover;
#[cfg(test)]
mod handover_tests;
mod health;
mod options;
mod status;
#[cfg(test)]
mod tests;
mod writer;

pub use assess::{Assessment, assess};
pub use handover::{ReleaseError, ReleaseOptions, Released, Work, native_form, release};
pub use health::{FailedNode, Health};
pub use options::{
    ApplyError, ApplyOptions, ApplyReport, DaemonSetProgress, Key, NoProgress, Orphan, Outcome,
    Progress, ProgressUpdate, Write,
};
pub use status::announce_complete;
pub use writer::Standing;

#[cfg(test)]
use crate::block_on;

use crate::cluster::{Cluster, ClusterError, ClusterState, Event, EventType};
use crate::model::{IN_PLACE_READY_CONDITION, REVISION_HASH_LABEL, Timestamp};
use crate::plan::{self, DaemonSetSpec, Desired};
use assess::active_steps;
use options::Log;
use status::{announce_blocked, announce_halt, event_message, pause_daemons, write_statuses};
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

    /// [`assess`], with what this executor learned writing: DaemonSets whose pods the
    /// cluster's admission refused halt (for the revision refused).
    pub fn assess<'d>(
        &self,
        desired: &'d [Desired],
        state: &ClusterState,
        opts: &ApplyOptions,
    ) -> Assessment<'d> {
        let mut a = assess(desired, state, opts);
        a.refused_by_admission(&self.refused);
        a
    }

    /// Writes the record statuses, announces new halts, and executes the next step of the
    /// active DaemonSets (and the prune). Errors of one DaemonSet do not stop the others',
    /// except a refusal (401/403), which stops the step.
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
        let mut acted = Acted {
            status_error: write_statuses(cluster, a, state, opts).await.err(),
            ..Acted::default()
        };
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
            } else if !a.paused.is_empty() {
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

#[derive(Debug, Default)]
struct Counts {
    steps: usize,
    creates: usize,
    deletes: usize,
    in_place: usize,
    /// Writes of handovers (take-over, claims, releases, native applies, relabels).
    handover: usize,
}

impl Counts {
    /// Every write so far.
    fn writes(&self) -> usize {
        self.creates + self.deletes + self.in_place + self.handover
    }
}

/// Updates one pod in place: its readiness gate goes False (so Services stop routing to it)
/// before its images and revision label are patched, on the condition that it is still the
/// pod the plan saw.
async fn update_in_place<C: Cluster>(
    cluster: &mut C,
    labels: &BTreeMap<String, String>,
    u: &plan::InPlaceUpdate,
) -> Result<(), ClusterError> {
    let Some(detail) = u.detail.as_deref() else {
        return Err(ClusterError::Rejected(format!(
            "pod {}/{} cannot be updated in place: its spec was not observed",
            u.namespace, u.name
        )));
    };
    let mut images = Vec::new();
    for change in &u.images {
        let list = if change.init {
            &detail.init_containers
        } else {
            &detail.containers
        };
        let Some(index) = list.iter().position(|c| *c == change.container) else {
            return Err(ClusterError::Rejected(format!(
                "pod {}/{} has no container {}: it is recreated instead",
                u.namespace, u.name, change.container
            )));
        };
        images.push((
            change.init,
            index,
            change.container.clone(),
            change.to.clone(),
        ));
    }
    // Each write is conditional on the pod being the one planned: the gate on the observed
    // resourceVersion, the patch on the one the gate's write left.
    // Set on every pod, gated or not: its transition time is when the update began, which the
    // progress deadline is measured from, and the gate opens again once the pod is ready.
    let mut resource_version = detail.resource_version.clone();
    {
        let after = cluster
            .set_pod_condition(
                &u.namespace,
                &u.name,
                IN_PLACE_READY_CONDITION,
                false,
                Some(&resource_version),
            )
            .await?;
        if !after.is_empty() {
            resource_version = after;
        }
    }
    let patch = crate::cluster::ImagePatch {
        resource_version,
        images,
        labels: labels.clone(),
    };
    let patched = cluster
        .patch_pod_images(&u.namespace, &u.name, &patch)
        .await;
    if let Err(e) = &patched
        && !matches!(e, ClusterError::NotFound { .. })
    {
        // The pod was not updated: it may serve again (best effort; a later pass opens the
        // gate of a ready pod anyway).
        let _ = cluster
            .set_pod_condition(&u.namespace, &u.name, IN_PLACE_READY_CONDITION, true, None)
            .await;
    }
    patched
}

enum Executed {
    Done,
    Interrupted,
}

/// Executes one step: for every active DaemonSet, its deletes, then its creates in
/// slow-start batches; then the prune deletes.
#[allow(clippy::too_many_arguments)]
async fn execute<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    state: &ClusterState,
    prune: &[Key],
    opts: &ApplyOptions,
    counts: &mut Counts,
    log: &mut Log<'_>,
    refusals: &mut BTreeMap<Key, (String, String)>,
) -> Result<Executed, ClusterError> {
    let interrupted =
        |counts: &Counts| opts.stop_after_writes.is_some_and(|n| counts.writes() >= n);
    let mut first_error = None;
    // Handovers first; a DaemonSet's step waits for the next round after its handover.
    for (key, work) in a.active_handovers() {
        if first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let (Some(ds), Some((desired, _))) = (
            a.plan
                .daemonsets
                .iter()
                .find(|d| d.namespace == key.0 && d.name == key.1),
            a.specs.get(key),
        ) else {
            continue;
        };
        let written = async {
            cluster
                .ensure_record(&desired.daemonset, a.record_source(key, opts))
                .await?;
            let limit = opts
                .stop_after_writes
                .map(|n| n.saturating_sub(counts.writes() - counts.handover));
            handover::execute(cluster, ds, work, log, &mut counts.handover, limit).await
        };
        if let Err(e) = written.await {
            keep_forbidden(&mut first_error, e);
        }
        if interrupted(counts) {
            return Ok(Executed::Interrupted);
        }
    }
    for ds in active_steps(a) {
        if ds.step.is_empty()
            || a.handovers
                .contains_key(&(ds.namespace.clone(), ds.name.clone()))
        {
            continue;
        }
        if first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let key = (ds.namespace.clone(), ds.name.clone());
        let Some((desired, spec)) = a.specs.get(&key) else {
            continue;
        };
        if let Err(e) = cluster
            .ensure_record(&desired.daemonset, a.record_source(&key, opts))
            .await
        {
            // This DaemonSet cannot be written without its record; the others can.
            let forbidden = e.stops_step();
            keep_forbidden(&mut first_error, e);
            if forbidden {
                break;
            }
            continue;
        }
        tracing::info!(
            daemonset = %format!("{}/{}", ds.namespace, ds.name),
            revision = %ds.revision,
            phase = ?ds.step.phase,
            create_on = %ds.step.create.iter().map(|n| &**n).collect::<Vec<&str>>().join(","),
            delete = %ds
                .step
                .delete
                .iter()
                .map(|d| format!("{} on {} ({:?})", d.name, d.node, d.reason))
                .collect::<Vec<_>>()
                .join(", "),
            "decision"
        );
        let daemonset = format!("{}/{}", ds.namespace, ds.name);
        let phase = ds
            .rollout
            .as_ref()
            .map_or_else(|| "Rollout".to_string(), |r| r.phase.to_string());
        // Native: the built-in controller creates the new pods (and with its own
        // RollingUpdate, deletes the old ones too).
        let native = ds.ownership.mode == plan::Mode::Native;
        let controller_rolls = native && ds.ownership.builtin_rollout;
        let (mut created, mut deleted, mut failed_pods) = (Vec::new(), Vec::new(), Vec::new());
        let mut create_error = None;
        // Readiness gates of pods whose containers all run their images and are ready.
        for g in &ds.step.open_gates {
            match cluster
                .set_pod_condition(&g.namespace, &g.name, IN_PLACE_READY_CONDITION, true, None)
                .await
            {
                Ok(_) | Err(ClusterError::NotFound { .. }) => {}
                Err(e) => {
                    let stop = e.stops_step();
                    keep_forbidden(&mut first_error, e);
                    if stop {
                        break;
                    }
                }
            }
        }
        // Images pulled ahead of the nodes' turns, and pulls that are done.
        for c in &ds.step.pre_pull_cleanup {
            match cluster.delete_pod(&c.namespace, &c.name).await {
                Ok(()) | Err(ClusterError::NotFound { .. }) => {
                    log.push(
                        "pre-pull-cleanup",
                        &daemonset,
                        &c.name,
                        &c.node,
                        ds.revision.clone(),
                        &phase,
                    );
                }
                Err(e) => keep_forbidden(&mut first_error, e),
            }
        }
        let pre_pull_owner = plan::render::PodOwner::record(&spec.name);
        for p in &ds.step.pre_pull {
            if first_error.as_ref().is_some_and(ClusterError::stops_step) {
                break;
            }
            let pod = plan::render::pre_pull_pod(
                &desired.daemonset,
                spec,
                &p.node,
                &p.images,
                &pre_pull_owner,
            );
            match cluster.create_pod(pod).await {
                Ok(name) => {
                    log.push(
                        "pre-pull",
                        &daemonset,
                        &name,
                        &p.node,
                        ds.revision.clone(),
                        &phase,
                    );
                }
                Err(e) => keep_forbidden(&mut first_error, e),
            }
        }
        let mut updated = Vec::new();
        // The revision labels an updated pod takes: daemonsync's, or in native mode those of
        // the built-in controller's current revision (which it then counts as updated).
        let in_place_labels = if native {
            native_revision_labels(&state.observed, ds)
        } else {
            Some([(REVISION_HASH_LABEL.to_string(), ds.revision.clone())].into())
        };
        for u in &ds.step.in_place {
            if first_error.as_ref().is_some_and(ClusterError::stops_step) {
                break;
            }
            let Some(labels) = &in_place_labels else {
                break;
            };
            match update_in_place(cluster, labels, u).await {
                Ok(()) => {
                    counts.in_place += 1;
                    let from = &u.from_revision;
                    log.push(
                        "in-place",
                        &daemonset,
                        &u.name,
                        &u.node,
                        ds.revision.clone(),
                        &phase,
                    );
                    updated.push(format!("{} ({from} to {})", u.name, ds.revision));
                }
                Err(ClusterError::NotFound { .. }) => {}
                Err(e) => keep_forbidden(&mut first_error, e),
            }
            if interrupted(counts) {
                return Ok(Executed::Interrupted);
            }
        }
        for d in ds.step.delete.iter().filter(|_| !controller_rolls) {
            match cluster.delete_pod(&d.namespace, &d.name).await {
                Ok(()) | Err(ClusterError::NotFound { .. }) => {
                    counts.deletes += 1;
                    log.push(
                        "delete",
                        &daemonset,
                        &d.name,
                        &d.node,
                        d.revision.clone(),
                        &phase,
                    );
                    deleted.push(d.name.clone());
                    if d.reason == plan::DeleteReason::Failed {
                        failed_pods.push(format!("{} on node {}", d.name, d.node));
                    }
                }
                Err(e) => {
                    let forbidden = e.stops_step();
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
        // Nodes a rollout policy holds back get the stable revision's pod.
        let stable = plan::stable_daemonset(&state.observed, &ds.namespace, &ds.name)
            .map(|d| (d, DaemonSetSpec::compile(d)));
        let creates: Vec<(
            &plan::Name,
            &k8s_openapi::api::apps::v1::DaemonSet,
            &DaemonSetSpec,
        )> = ds
            .step
            .create
            .iter()
            .map(|n| (n, &desired.daemonset, spec))
            .chain(
                stable
                    .iter()
                    .flat_map(|(d, s)| ds.step.create_stable.iter().map(move |n| (n, *d, s))),
            )
            .filter(|_| !native)
            .collect();
        let mut batch = 1;
        let mut next = 0;
        let refused = first_error.as_ref().is_some_and(ClusterError::stops_step);
        'batches: while !refused && next < creates.len() {
            let end = (next + batch).min(creates.len());
            let mut failed = false;
            for &(node, template, template_spec) in &creates[next..end] {
                let pod = plan::render::pod_for_node(template, template_spec, node, &owner);
                match cluster.create_pod(pod).await {
                    Ok(name) => {
                        counts.creates += 1;
                        log.push(
                            "create",
                            &daemonset,
                            &name,
                            node,
                            template_spec.revision.clone(),
                            &phase,
                        );
                        created.push(name);
                    }
                    Err(e) => {
                        failed = true;
                        create_error.get_or_insert_with(|| e.to_string());
                        if let ClusterError::Refused(why) = &e {
                            // The DaemonSet's pods are at fault, not the client: it halts,
                            // the others go on.
                            refusals.insert(
                                (ds.namespace.clone(), ds.name.clone()),
                                (ds.revision.clone(), admission_hint(why, &ds.namespace)),
                            );
                            break 'batches;
                        }
                        let forbidden = e.stops_step();
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
                EventType::Normal,
                "SuccessfulUpdate",
                "updated pod(s) in place",
                updated,
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
    // The pruned pods, looked up once for the write log.
    let pruned: BTreeMap<(&str, &str), &crate::model::Pod> = if prune.is_empty() {
        BTreeMap::new()
    } else {
        state
            .observed
            .pods
            .iter()
            .map(|p| ((p.namespace.as_str(), p.name.as_str()), p))
            .collect()
    };
    for (namespace, name) in prune {
        if first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        match cluster.delete_pod(namespace, name).await {
            Ok(()) | Err(ClusterError::NotFound { .. }) => {
                counts.deletes += 1;
                let pod = pruned.get(&(namespace.as_str(), name.as_str()));
                let owner = pod
                    .and_then(|p| p.controller.as_ref())
                    .map_or("", |c| c.name.as_str());
                log.push(
                    "delete",
                    &format!("{namespace}/{owner}"),
                    name,
                    pod.and_then(|p| p.target_node.as_deref())
                        .unwrap_or_default(),
                    pod.and_then(|p| p.revision_hash())
                        .unwrap_or_default()
                        .to_string(),
                    "Prune",
                );
            }
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

/// The refusal of a pod by the cluster's admission, with what to do about it: the
/// namespace's Pod Security level, the webhook that denied it, or the quota.
fn admission_hint(message: &str, namespace: &str) -> String {
    let hint = if message.contains("violates PodSecurity") {
        format!(
            "namespace {namespace} enforces this Pod Security level \
             (pod-security.kubernetes.io/enforce): change the template, or label the namespace \
             with a level the DaemonSet meets"
        )
    } else if let Some(rest) = message.split("admission webhook \"").nth(1) {
        let webhook = rest.split('"').next().unwrap_or_default();
        format!(
            "the validating webhook {webhook} denied it: its policy decides (kubectl get \
             validatingwebhookconfigurations)"
        )
    } else if message.contains("exceeded quota") {
        format!(
            "a ResourceQuota of namespace {namespace} is used up (kubectl describe \
             resourcequota -n {namespace})"
        )
    } else {
        "the cluster's admission refused it".to_string()
    };
    format!("{message}; {hint}")
}

/// The revision labels a native DaemonSet's pod takes when updated in place: the hash of the
/// built-in controller's current ControllerRevision and the template generation; `None`
/// until the controller has made that revision.
fn native_revision_labels(
    observed: &plan::Observed,
    ds: &plan::DaemonSetPlan,
) -> Option<BTreeMap<String, String>> {
    let live = observed.daemonsets.iter().find(|d| {
        d.metadata.namespace.as_deref().unwrap_or("default") == ds.namespace
            && d.metadata.name.as_deref() == Some(ds.name.as_str())
    })?;
    let uid = live.metadata.uid.as_deref()?;
    let generation = live
        .metadata
        .annotations
        .as_ref()?
        .get(crate::model::TEMPLATE_GENERATION_ANNOTATION)?
        .clone();
    let current = observed
        .revisions
        .iter()
        .filter(|r| r.controller.as_ref().is_some_and(|o| o.uid == uid))
        .max_by_key(|r| r.revision)?;
    Some(
        [
            (REVISION_HASH_LABEL.to_string(), current.hash.clone()),
            (
                crate::model::TEMPLATE_GENERATION_LABEL.to_string(),
                generation,
            ),
        ]
        .into(),
    )
}

/// Keeps the first error of a step, unless a refusal (or a stop) comes later: that one
/// decides.
fn keep_forbidden(first: &mut Option<ClusterError>, e: ClusterError) {
    if first.is_none() || e.stops_step() && !first.as_ref().is_some_and(ClusterError::stops_step) {
        *first = Some(e);
    }
}

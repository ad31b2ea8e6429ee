//! What the executor tells besides pod writes: the status of each DaemonSet on its record,
//! and the events (a halt, a block, a forced take-over, a completed rollout).

use super::assess::{Assessment, active_steps};
use super::options::{ApplyOptions, Key, keep_forbidden};
use super::writer::Standing;
use crate::cluster::{Cluster, ClusterError, ClusterState, Event, EventType, RecordStatus};
use crate::model::Timestamp;
use crate::plan;
use std::collections::BTreeMap;

/// Writes each DaemonSet's status (counters, revision, halt, pause, source error) to its
/// record when it differs from what the record shows, making sure the record exists first.
/// One failing record does not keep the others from being written; the first error (a
/// refusal first) is returned, with the writes held back and when each is due.
///
/// With `opts.status_interval`, a status differing from the record only in what churns with
/// every pod (counters, the conditions worded from them, the time of the last progress) is
/// written once the difference has lasted the interval (`churning_since` keeps when each was
/// first seen): a pod replaced within it costs no status write, and a DaemonSet under churn
/// gets at most one per interval. Any other difference is written at once.
///
/// Such a status is not written here but returned ([`Statuses::after_step`]): it is written
/// after the step, as upstream's controller updates a DaemonSet's status after managing its
/// pods, so that counting pods never delays creating one (twenty DaemonSets' counters come
/// due together under churn, and a node that joins then waits for none of them).
pub(super) async fn write_statuses<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    state: &ClusterState,
    opts: &ApplyOptions,
    churning_since: &mut BTreeMap<Key, Timestamp>,
) -> Statuses {
    let mut held = BTreeMap::new();
    let mut after_step = Vec::new();
    let mut first_error = None;
    for ds in &a.plan.daemonsets {
        let key = (ds.namespace.clone(), ds.name.clone());
        let blocked = a.blocked.get(&key).cloned();
        if blocked.is_some() && !opts.record_blocked || a.leaves_record(&key) {
            // `apply` writes nothing for a DaemonSet another controller runs, and no one
            // writes the record another daemonsync writer drives.
            continue;
        }
        let halted = a.refused.get(&key).cloned().or_else(|| {
            a.health
                .failed
                .iter()
                .find(|f| f.namespace == ds.namespace && f.daemonset == ds.name)
                .map(|f| format!("pod {} on node {}: {}", f.pod, f.node, f.reason))
        });
        let current = state
            .records
            .iter()
            .find(|r| r.namespace == ds.namespace && r.name == ds.name)
            .and_then(|r| r.status.as_ref());
        // A complete rollout makes its DaemonSet the stable one that nodes held back by the
        // next rollout run.
        let complete = ds.step.is_empty()
            && blocked.is_none()
            && ds.status.updated_number_scheduled == ds.status.desired_number_scheduled
            && ds.status.number_available == ds.status.desired_number_scheduled
            && ds.status.number_misscheduled == 0;
        let stable = match a.specs.get(&key) {
            Some((desired, _)) if complete => serde_json::to_value(&desired.daemonset).ok(),
            _ => current.and_then(|c| c.stable.clone()),
        };
        let judged = a.progress.get(&key);
        let reconcile = judged.map(|j| {
            let mut r = j.reconcile.clone();
            // The halt as the `Halted` condition words it.
            if let (Some(why), "RolloutHalted") = (&halted, r.reason.as_str()) {
                r.message.clone_from(why);
            }
            r
        });
        let status = RecordStatus {
            counters: ds.status,
            revision: ds.revision.clone(),
            halted,
            paused: a.paused.contains(&key),
            frozen: ds.suspended == Some(plan::suspend::Suspension::Frozen),
            source_error: opts.source_errors.get(&key).cloned(),
            rollout: ds.rollout.as_ref().map(|r| crate::cluster::RolloutStatus {
                phase: r.phase.to_string(),
                message: r.pause.as_ref().map(ToString::to_string),
                progress: r.progress.clone(),
            }),
            stable,
            blocked,
            reconcile,
            last_progress: judged.and_then(|j| j.last_progress),
        };
        // A writer that replaces another (a daemon taking a DaemonSet back after `apply`)
        // names itself on the record even when the status is unchanged.
        let claim = opts.source.writer.is_some()
            && state
                .records
                .iter()
                .find(|r| r.namespace == ds.namespace && r.name == ds.name)
                .is_some_and(|r| {
                    !r.source
                        .as_ref()
                        .is_some_and(|s| s.same_writer(a.record_source(&key, opts)))
                });
        if current == Some(&status) && !claim {
            churning_since.remove(&key);
            continue;
        }
        // The record's `observedGeneration` is its own generation, which the plan (of a
        // manifest without one) cannot know: the backend writes nothing when that is all.
        let same = current.is_some_and(|c| {
            let mut s = status.clone();
            s.counters.observed_generation = c.counters.observed_generation;
            s == *c
        });
        // What churns with every pod: the counters, the conditions worded from them (a
        // rollout going between current and in progress), the phase of a rollout going
        // between complete and its last stage at the same progress (a node of it lost its
        // pod), when progress was last made. A stall, a wait, a revision, a stage unlocked,
        // halt, pause, freeze, block or source error is written at once.
        let churning = |r: &Option<crate::cluster::Reconcile>| {
            r.as_ref().is_none_or(|r| {
                matches!(
                    r.state,
                    crate::cluster::ReconcileState::Current
                        | crate::cluster::ReconcileState::InProgress
                )
            })
        };
        let rollout_churns =
            |a: &Option<crate::cluster::RolloutStatus>,
             b: &Option<crate::cluster::RolloutStatus>| {
                match (a, b) {
                    (Some(a), Some(b)) => {
                        a.progress == b.progress && a.is_moving() && b.is_moving()
                    }
                    _ => a == b,
                }
            };
        let churn_only = !same
            && current.is_some_and(|c| {
                (c.reconcile == status.reconcile
                    || churning(&c.reconcile) && churning(&status.reconcile))
                    && rollout_churns(&c.rollout, &status.rollout)
                    && RecordStatus {
                        counters: c.counters,
                        reconcile: c.reconcile.clone(),
                        last_progress: c.last_progress,
                        rollout: c.rollout.clone(),
                        ..status.clone()
                    } == *c
            });
        if let Some(interval) = opts.status_interval
            && churn_only
            && !claim
        {
            let since = *churning_since.entry(key.clone()).or_insert(state.now);
            let due = crate::model::later(since, interval);
            if state.now < due {
                held.insert(key, due);
                continue;
            }
        }
        churning_since.remove(&key);
        if churn_only && !claim {
            after_step.push((key, status));
            continue;
        }
        if let Err(e) = write_status(cluster, a, opts, &key, &status).await {
            let forbidden = e.stops_step();
            keep_forbidden(&mut first_error, e);
            if forbidden {
                break;
            }
        }
    }
    Statuses {
        written: first_error.map_or(Ok(()), Err),
        held,
        after_step,
    }
}

/// What [`write_statuses`] did and left.
pub(super) struct Statuses {
    /// The first error (a refusal first).
    pub(super) written: Result<(), ClusterError>,
    /// The statuses held back, and when each is due.
    pub(super) held: BTreeMap<Key, Timestamp>,
    /// The statuses due that only count pods: to write after the step
    /// ([`write_after_step`]).
    pub(super) after_step: Vec<(Key, RecordStatus)>,
}

/// Writes the statuses [`write_statuses`] left for after the step, as one batch
/// ([`Cluster::write_statuses`]: in flight together where the backend can), each record made
/// sure of first; the first error (a refusal first), if any.
pub(super) async fn write_after_step<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    opts: &ApplyOptions,
    statuses: Vec<(Key, RecordStatus)>,
) -> Option<ClusterError> {
    let mut first_error = None;
    let mut batch = Vec::with_capacity(statuses.len());
    for (key, status) in statuses {
        if let Err(e) = ensure_record(cluster, a, opts, &key).await {
            keep_forbidden(&mut first_error, e);
            continue;
        }
        batch.push((key.0, key.1, status));
    }
    for e in cluster
        .write_statuses(batch)
        .await
        .into_iter()
        .filter_map(Result::err)
    {
        keep_forbidden(&mut first_error, e);
    }
    first_error
}

/// Writes one DaemonSet's status to its record, making sure the record exists first.
async fn write_status<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    opts: &ApplyOptions,
    key: &Key,
    status: &RecordStatus,
) -> Result<(), ClusterError> {
    ensure_record(cluster, a, opts, key).await?;
    cluster.write_status(&key.0, &key.1, status).await
}

/// Makes sure the record of a DaemonSet of the source exists before its status is written.
async fn ensure_record<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    opts: &ApplyOptions,
    key: &Key,
) -> Result<(), ClusterError> {
    match a.specs.get(key) {
        Some((desired, _)) => {
            cluster
                .ensure_record(&desired.daemonset, a.record_source(key, opts))
                .await
        }
        None => Ok(()),
    }
}

/// One `RolloutHalted` warning per halted DaemonSet, naming its failing nodes (events are
/// best effort: a failure is logged, never stops the rollout of the others).
pub(super) async fn announce_halt<C: Cluster>(cluster: &mut C, a: &Assessment<'_>, key: &Key) {
    let failed: Vec<String> = match a.refused.get(key) {
        Some(why) => vec![why.clone()],
        None => a
            .health
            .failed
            .iter()
            .filter(|f| f.namespace == key.0 && f.daemonset == key.1)
            .map(|f| format!("pod {} on node {}: {}", f.pod, f.node, f.reason))
            .collect(),
    };
    tracing::warn!(
        daemonset = %format!("{}/{}", key.0, key.1),
        nodes = failed.len(),
        first = failed.first().map(String::as_str).unwrap_or(""),
        "rollout halted: new pods failed; the other DaemonSets go on"
    );
    let event = Event {
        namespace: key.0.clone(),
        name: key.1.clone(),
        type_: EventType::Warning,
        reason: "RolloutHalted".into(),
        message: event_message("new pods failed", &failed),
    };
    if let Err(e) = cluster.emit_event(event).await {
        tracing::warn!(error = %e, "could not record the RolloutHalted event");
    }
}

/// One `Blocked` warning per blocked DaemonSet on its record (events are best effort).
pub(super) async fn announce_blocked<C: Cluster>(cluster: &mut C, key: &Key, why: &str) {
    tracing::warn!(
        daemonset = %format!("{}/{}", key.0, key.1),
        why,
        "blocked: nothing is written for this DaemonSet"
    );
    let event = Event {
        namespace: key.0.clone(),
        name: key.1.clone(),
        type_: EventType::Warning,
        reason: "Blocked".into(),
        message: why.chars().take(1000).collect(),
    };
    if let Err(e) = cluster.emit_event(event).await {
        tracing::warn!(error = %e, "could not record the Blocked event");
    }
}

/// `apply --force` over a `sync` daemon: pauses the record for the daemon (as `daemonsync
/// pause` does) and says so in a `Forced` event, before anything else is written for it.
pub(super) async fn pause_daemons<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    state: &ClusterState,
) {
    for (key, standing) in &a.standings {
        let record = state
            .records
            .iter()
            .find(|r| r.namespace == key.0 && r.name == key.1);
        let (Standing::Forced, Some(record)) = (standing, record) else {
            continue;
        };
        if record.paused {
            continue;
        }
        let daemon = record
            .source
            .as_ref()
            .and_then(|s| s.writer.as_ref())
            .map_or_else(|| "the daemon".to_string(), |w| w.describe());
        let paused = [(
            crate::model::PAUSED_ANNOTATION.to_string(),
            Some("true".to_string()),
        )];
        if let Err(e) = cluster
            .annotate_record(&key.0, &key.1, &paused.into())
            .await
        {
            tracing::warn!(error = %e, "could not pause the record for the daemon");
            continue;
        }
        let message = format!(
            "daemonsync apply --force took {}/{} by hand and paused {daemon} for it;              `daemonsync resume {} -n {}` gives it back",
            key.0, key.1, key.1, key.0
        );
        tracing::warn!(daemonset = %format!("{}/{}", key.0, key.1), "{message}");
        let event = Event {
            namespace: key.0.clone(),
            name: key.1.clone(),
            type_: EventType::Warning,
            reason: "Forced".into(),
            message,
        };
        if let Err(e) = cluster.emit_event(event).await {
            tracing::warn!(error = %e, "could not record the Forced event");
        }
    }
}

/// `RolloutComplete` for every active DaemonSet `only` selects whose pods all run its
/// revision and are available, with nothing left to do (OnDelete DaemonSets converge without
/// their pods being replaced: not complete). Returns the DaemonSets announced.
pub async fn announce_complete<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    only: impl Fn(&plan::DaemonSetPlan) -> bool,
) -> Vec<Key> {
    let complete: Vec<&plan::DaemonSetPlan> = active_steps(a)
        .filter(|ds| {
            ds.step.is_empty()
                && ds.status.updated_number_scheduled == ds.status.desired_number_scheduled
                && ds.status.number_available == ds.status.desired_number_scheduled
                && only(ds)
        })
        .collect();
    let mut announced = Vec::new();
    for ds in complete {
        announced.push((ds.namespace.clone(), ds.name.clone()));
        let event = Event {
            namespace: ds.namespace.clone(),
            name: ds.name.clone(),
            type_: EventType::Normal,
            reason: "RolloutComplete".into(),
            message: format!(
                "revision {} runs on all {} nodes",
                ds.revision, ds.status.desired_number_scheduled
            ),
        };
        if let Err(e) = cluster.emit_event(event).await {
            tracing::warn!(error = %e, "could not record the RolloutComplete event");
        }
    }
    announced
}

/// An event message naming the first few items: `created pod(s): a, b, c and 7 more`.
pub(super) fn event_message(what: &str, items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = format!("{what}: {}", items[..items.len().min(SHOWN)].join(", "));
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

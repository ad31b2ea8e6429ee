//! Judging the rollout from observed state: which new pods are failing, which nodes are the
//! problem themselves, when to look again.

use super::DaemonSetProgress;
use super::options::FailedNode;
use crate::manifest::policy::FailurePolicy;
use crate::model::{Pod, Timestamp};
use crate::plan::{DaemonSetSpec, NodeState, Observed, Plan, RECORD_KIND};
use jiff::SignedDuration;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Pods per run of [`Health::assess_with`]'s parallel pass: an observation of one
/// DaemonSet's pods is one run.
const RUN: usize = 16 * 1024;

/// What the observed pods say about the rollout.
#[derive(Debug, Clone, Default)]
pub struct Health {
    /// New pods unavailable past the progress deadline on Ready nodes: the version is bad.
    pub failed: Vec<FailedNode>,
    /// New pods on NotReady nodes: a node problem, not evidence against the version.
    pub node_problems: Vec<FailedNode>,
    /// New pods failing but still within the deadline, by DaemonSet.
    failing_now: BTreeMap<(String, String), usize>,
    /// Nodes that are NotReady.
    not_ready: BTreeSet<String>,
    /// The next instant at which something may change without a cluster event: a progress
    /// deadline expiring, or minReadySeconds elapsing.
    pub next_deadline: Option<Timestamp>,
}

/// A planned DaemonSet whose pods are being judged.
struct Judging<'p> {
    ds: &'p crate::plan::DaemonSetPlan,
    spec: &'p DaemonSetSpec,
    policy: FailurePolicy,
    /// Whether the label map last read is of its new revision.
    current: crate::model::LastLabels<bool>,
}

impl Health {
    /// Judges the new-revision pods of every planned DaemonSet.
    #[cfg(test)]
    pub(crate) fn assess(
        plan: &Plan,
        specs: &super::assess::Specs<'_>,
        observed: &Observed,
        now: Timestamp,
        deadline: SignedDuration,
    ) -> Health {
        Self::assess_with(plan, specs, observed, (now, deadline), || (), |_, _| {}).0
    }

    /// [`Health::assess`], showing every observed pod to `see` on the way: one pass over the
    /// pods serves the health and whatever else an assessment reads of each (its orphans).
    /// The pass runs over runs of pods in parallel: each run shows its pods to a collector of
    /// its own (`start`), and the collectors come back in the pods' order.
    pub(crate) fn assess_with<'o, T: Send>(
        plan: &Plan,
        specs: &super::assess::Specs<'_>,
        observed: &'o Observed,
        (now, deadline): (Timestamp, SignedDuration),
        start: impl Fn() -> T + Sync,
        see: impl Fn(&mut T, &'o Pod) + Sync,
    ) -> (Health, Vec<T>) {
        let not_ready: BTreeSet<String> = observed
            .nodes
            .iter()
            .filter(|n| n.ready == Some(false))
            .map(|n| n.name.clone())
            .collect();
        // Nodes where a pod is on its way out: its resources come free, so a new pod the
        // scheduler cannot place there yet may still fit. Read only when such a pod is seen.
        let freeing: std::sync::OnceLock<BTreeSet<&str>> = std::sync::OnceLock::new();
        let freeing = || {
            freeing.get_or_init(|| {
                observed
                    .pods
                    .iter()
                    .filter(|p| p.is_terminating())
                    .filter_map(|p| p.node_name.as_deref())
                    .collect()
            })
        };
        let planned: rustc_hash::FxHashMap<(&str, &str), usize> = plan
            .daemonsets
            .iter()
            .enumerate()
            .map(|(i, ds)| ((ds.namespace.as_str(), ds.name.as_str()), i))
            .collect();
        let judge_run = |pods: &'o [std::sync::Arc<Pod>]| {
            let mut h = Health::default();
            let mut seen = start();
            // Each planned DaemonSet, as its pods are judged.
            let mut judged: Vec<Option<Judging>> = plan
                .daemonsets
                .iter()
                .map(|ds| {
                    let (desired, spec) = specs.get(&(ds.namespace.clone(), ds.name.clone()))?;
                    Some(Judging {
                        ds,
                        spec,
                        policy: FailurePolicy::of(&desired.daemonset),
                        current: crate::model::LastLabels::default(),
                    })
                })
                .collect();
            // Pods come in key order, so a DaemonSet's pods mostly follow one another: the
            // last owner looked up is compared first.
            let mut last: Option<((&str, &str), Option<usize>)> = None;
            for pod in pods {
                let pod: &'o Pod = pod;
                see(&mut seen, pod);
                let Some(c) = &pod.controller else {
                    continue;
                };
                if !(c.kind == RECORD_KIND || c.kind == "DaemonSet") || pod.is_terminating() {
                    continue;
                }
                let key = (&*pod.namespace, c.name.as_str());
                let at = match last {
                    Some((k, at)) if crate::model::same_key(k, key) => at,
                    _ => {
                        let at = planned.get(&key).copied();
                        last = Some((key, at));
                        at
                    }
                };
                if let Some(j) = at.and_then(|i| judged[i].as_mut()) {
                    h.judge(j, pod, (now, deadline), &not_ready, &freeing);
                }
            }
            (h, seen)
        };
        let runs: Vec<(Health, T)> = observed
            .pods
            .shared()
            .par_chunks(RUN)
            .map(judge_run)
            .collect();
        let mut h = Health {
            not_ready,
            ..Health::default()
        };
        let mut collected = Vec::with_capacity(runs.len());
        for (run, seen) in runs {
            h.failed.extend(run.failed);
            h.node_problems.extend(run.node_problems);
            for (key, n) in run.failing_now {
                *h.failing_now.entry(key).or_default() += n;
            }
            if let Some(t) = run.next_deadline {
                h.wake(t, now);
            }
            collected.push(seen);
        }
        let order = |f: &FailedNode| (f.namespace.clone(), f.daemonset.clone(), f.node.clone());
        h.failed.sort_by_key(order);
        h.node_problems.sort_by_key(order);
        (h, collected)
    }

    /// Judges one pod of a planned DaemonSet: of its new revision, failing (on a Ready node)
    /// or a node problem (on a NotReady one), or to be looked at again when a deadline falls.
    fn judge<'a>(
        &mut self,
        j: &mut Judging<'_>,
        pod: &Pod,
        (now, deadline): (Timestamp, SignedDuration),
        not_ready: &BTreeSet<String>,
        freeing: &impl Fn() -> &'a BTreeSet<&'a str>,
    ) {
        let (ds, spec, policy) = (j.ds, j.spec, &j.policy);
        // Pods of one revision share their label map: it is judged once per run.
        if !j.current.of(&pod.labels, |_| {
            pod.revision_hash() == Some(ds.revision.as_str())
        }) {
            return;
        }
        // A ready pod that has not restarted too often, with no minReadySeconds to wait out,
        // needs nothing more: the common case, judged without its node.
        let created = || {
            // An in-place update is judged from when it began, not from the pod's birth.
            pod.creation_timestamp
                .into_iter()
                .chain(pod.detail.as_ref().and_then(|d| d.updating_since()))
                .max()
                .unwrap_or(now)
        };
        if pod.is_ready()
            && spec.min_ready_seconds == 0
            && restarted_too_often(pod, created, policy).is_none()
        {
            return;
        }
        // On a node of the cluster: a plan has a row for every observed node.
        let Some(node) = pod.target_node.as_deref().filter(|n| ds.row(n).is_some()) else {
            return;
        };
        let entry = |reason: String| FailedNode {
            namespace: ds.namespace.clone(),
            daemonset: ds.name.clone(),
            node: node.to_string(),
            pod: pod.name.clone(),
            reason,
        };
        // A pod that crashes after passing readiness fails as soon as it restarted too often,
        // ready or not at this instant.
        if !not_ready.contains(node)
            && let Some(why) = restarted_too_often(pod, created, policy)
        {
            self.failed.push(entry(why));
            return;
        }
        if pod.is_ready() {
            if let Some(t) = pod.ready.and_then(|r| r.last_transition)
                && spec.min_ready_seconds > 0
            {
                self.wake(
                    crate::model::later(
                        t,
                        SignedDuration::from_secs(i64::from(spec.min_ready_seconds)),
                    ),
                    now,
                );
            }
            return;
        }
        if not_ready.contains(node) {
            self.node_problems
                .push(entry("node problem: the node is NotReady".into()));
            return;
        }
        // A definitive start failure, or a pod the scheduler cannot place where nothing is
        // leaving: failed now, not at the deadline.
        if let Some(why) =
            start_failure(pod).or_else(|| unschedulable(pod).filter(|_| !freeing().contains(node)))
        {
            self.failed.push(entry(why));
            return;
        }
        let expires = crate::model::later(created(), deadline);
        if expires <= now {
            let reason = match &pod.waiting_reason {
                Some(r) => format!("{r} (not ready after {deadline:#})"),
                None => format!("not ready after {deadline:#}"),
            };
            self.failed.push(entry(reason));
        } else {
            self.wake(expires, now);
            if pod.waiting_reason.is_some() {
                *self
                    .failing_now
                    .entry((ds.namespace.clone(), ds.name.clone()))
                    .or_default() += 1;
            }
        }
    }

    /// Notes `t` as the next instant to look again, if it is the first still to come.
    fn wake(&mut self, t: Timestamp, now: Timestamp) {
        if t > now {
            self.next_deadline = Some(self.next_deadline.map_or(t, |d| d.min(t)));
        }
    }

    /// Per-DaemonSet progress counts for display.
    pub(crate) fn progress(&self, plan: &Plan) -> Vec<DaemonSetProgress> {
        plan.daemonsets
            .iter()
            .map(|ds| {
                let key = (ds.namespace.clone(), ds.name.clone());
                let bad = |list: &[FailedNode]| {
                    list.iter()
                        .filter(|f| f.namespace == ds.namespace && f.daemonset == ds.name)
                        .count()
                };
                let node_problems = bad(&self.node_problems);
                let failed = bad(&self.failed) + self.failing_now.get(&key).copied().unwrap_or(0);
                let done = ds
                    .nodes
                    .iter()
                    .filter(|n| n.state == NodeState::UpToDate)
                    .count();
                // Everything that is neither done, nor waiting for its turn (out of date, or
                // missing a pod that is not created yet), nor out of scope.
                let moving = ds
                    .nodes
                    .iter()
                    .filter(|n| {
                        !is_settled(n.state)
                            && !matches!(n.state, NodeState::OutOfDate | NodeState::Missing)
                    })
                    .count();
                DaemonSetProgress {
                    namespace: ds.namespace.clone(),
                    name: ds.name.clone(),
                    desired: ds.status.desired_number_scheduled.max(0) as usize,
                    done,
                    in_progress: moving.saturating_sub(failed + node_problems),
                    failed,
                    node_problems,
                }
            })
            .collect()
    }

    /// True when every node of the DaemonSets `include` selects is settled, except nodes
    /// that are NotReady themselves. With OnDelete, an old pod is settled too: it is replaced
    /// only when someone deletes it; so is a node a rollout policy holds back.
    pub(crate) fn converged(
        &self,
        plan: &Plan,
        include: impl Fn(&crate::plan::DaemonSetPlan) -> bool,
    ) -> bool {
        plan.daemonsets.iter().filter(|ds| include(ds)).all(|ds| {
            let on_delete = ds.strategy.type_ == "OnDelete";
            ds.nodes.iter().all(|n| {
                is_settled(n.state)
                    || (on_delete && n.state == NodeState::OutOfDate)
                    // Held back by the rollout policy: it waits for its stage.
                    || (n.rollout.is_some_and(|r| r.hold.is_some())
                        && matches!(n.state, NodeState::OutOfDate | NodeState::Missing))
                    || self.not_ready.contains(&*n.node)
            })
        })
    }
}

/// True for node states that need nothing more.
pub(crate) fn is_settled(state: NodeState) -> bool {
    matches!(
        state,
        NodeState::UpToDate | NodeState::Ineligible | NodeState::Blocked
    )
}

/// The waiting reasons that say a new pod will not start however long it is given: its
/// configuration, its image or its container cannot be made to run, or it crashes.
pub const START_FAILURES: &[&str] = &[
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "ErrImagePull",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "RunContainerError",
];

/// `REASON in container C` when a pod shows one of the [`START_FAILURES`]. A crash of a pod
/// that was ready before it (its Ready condition turned False when or after its container
/// last exited) is left to the restart count: it passed readiness once.
fn start_failure(pod: &Pod) -> Option<String> {
    let reason = pod
        .waiting_reason
        .as_deref()
        .filter(|r| START_FAILURES.contains(r))?;
    let crashed_after_ready = matches!(reason, "CrashLoopBackOff" | "RunContainerError")
        && pod
            .ready
            .and_then(|r| r.last_transition)
            .zip(pod.signals.as_ref().and_then(|s| s.last_exit))
            .is_some_and(|(unready_since, exited)| {
                unready_since >= exited && pod.creation_timestamp.is_some_and(|c| unready_since > c)
            });
    if crashed_after_ready {
        return None;
    }
    Some(
        match pod
            .signals
            .as_ref()
            .and_then(|s| s.waiting_container.as_deref())
        {
            Some(c) => format!("{reason} in container {c}"),
            None => reason.to_string(),
        },
    )
}

/// `Unschedulable: MESSAGE` when the scheduler cannot place the pod.
fn unschedulable(pod: &Pod) -> Option<String> {
    let message = pod.signals.as_ref()?.unschedulable.as_deref()?;
    Some(if message.is_empty() {
        "Unschedulable".to_string()
    } else {
        format!("Unschedulable: {message}")
    })
}

/// `restarted N times within W (container C)` when the pod's containers restarted more than
/// the policy allows since `started` (its creation, or the start of its in-place update),
/// the last restart within the window. An in-place update's own restart is not counted.
/// The pod's restarts, when more than the policy allows within its window from `started`
/// (asked only of a pod that restarted: reading when it started reads the pod's detail).
fn restarted_too_often(
    pod: &Pod,
    started: impl FnOnce() -> Timestamp,
    policy: &FailurePolicy,
) -> Option<String> {
    let signals = pod.signals.as_ref()?;
    let (container, count) = signals.restarts.as_ref()?;
    let started = started();
    let own = u32::from(pod.detail.as_ref().is_some_and(|d| d.gate.is_some()));
    let count = count.saturating_sub(own);
    let last = signals.last_exit?;
    let within = last >= started && last <= crate::model::later(started, policy.restart_window);
    (count > policy.max_restarts && within).then(|| {
        format!(
            "restarted {count} times within {:#} (container {container})",
            policy.restart_window
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Desired;
    use daemonsync_core::testkit::fixtures::{daemonset, now, pod, revision, worker};

    /// The plan of `d` alone against `observed`, and its compiled spec as an assessment has it.
    fn planned<'d>(d: &'d Desired, observed: &Observed) -> (Plan, super::super::assess::Specs<'d>) {
        let plan = crate::plan::plan(
            std::slice::from_ref(d),
            observed,
            &Default::default(),
            now(),
        );
        let specs = BTreeMap::from([(
            ("infra".to_string(), "agent".to_string()),
            (d, DaemonSetSpec::compile(&d.daemonset)),
        )]);
        (plan, specs)
    }

    /// A pod of the current revision that never became ready, created long before `now`,
    /// on `node`, beside the workers w1 and w2.
    fn judged(node: &str) -> Health {
        let d = daemonset("infra", "agent", serde_json::json!({"type": "OnDelete"}));
        let mut observed = Observed {
            nodes: vec![worker("w1"), worker("w2")].into(),
            ..Observed::default()
        };
        let mut p = pod("infra", "agent", node, &revision(&d), false);
        p.waiting_reason = None;
        observed.pods = vec![p].into();
        let (plan, specs) = planned(&d, &observed);
        Health::assess(
            &plan,
            &specs,
            &observed,
            now(),
            SignedDuration::from_mins(5),
        )
    }

    #[test]
    fn pods_judged_in_parallel_runs_are_reported_as_one_pass_would() {
        // More pods than two runs hold: a failing pod in each run, on nodes named against
        // the runs' order, and every pod shown to the collectors once, in the pods' order.
        let d = daemonset("infra", "agent", serde_json::json!({"type": "OnDelete"}));
        let nodes = ["w2", "w1", "w0"];
        let failing = [7, RUN + 7, 2 * RUN + 7];
        let pods: Vec<Pod> = (0..2 * RUN + 20)
            .map(|i| {
                let at = failing.iter().position(|&f| f == i);
                let node = at.map_or("w0", |k| nodes[k]);
                let mut p = pod("infra", "agent", node, &revision(&d), at.is_none());
                p.name = format!("agent-{i:06}");
                p
            })
            .collect();
        let observed = Observed {
            nodes: nodes.iter().map(|n| worker(n)).collect::<Vec<_>>().into(),
            pods: pods.into(),
            ..Observed::default()
        };
        // The plan's rows name the nodes: planned without the pods, which cost a debug build
        // seconds to plan and change no row the judging reads.
        let nodes_only = Observed {
            nodes: observed.nodes.clone(),
            ..Observed::default()
        };
        let (plan, specs) = planned(&d, &nodes_only);
        let (health, runs) = Health::assess_with(
            &plan,
            &specs,
            &observed,
            (now(), SignedDuration::from_mins(5)),
            Vec::new,
            |seen: &mut Vec<String>, p| seen.push(p.name.clone()),
        );
        assert!(runs.len() > 2, "{} runs", runs.len());
        let seen: Vec<String> = runs.concat();
        let all: Vec<String> = observed.pods.iter().map(|p| p.name.clone()).collect();
        assert_eq!(seen, all);
        let failed: Vec<(&str, &str)> = health
            .failed
            .iter()
            .map(|f| (f.node.as_str(), f.pod.as_str()))
            .collect();
        assert_eq!(
            failed,
            [
                ("w0", "agent-032775"),
                ("w1", "agent-016391"),
                ("w2", "agent-000007")
            ]
        );
    }

    #[test]
    fn a_pod_not_ready_past_the_deadline_fails_on_a_node_of_the_cluster_only() {
        let there = judged("w2");
        assert_eq!(
            there
                .failed
                .iter()
                .map(|f| f.node.as_str())
                .collect::<Vec<_>>(),
            ["w2"],
            "{there:?}"
        );
        // The same pod bound to a node that has left is the planner's to delete, not a failure.
        let gone = judged("w9");
        assert!(gone.failed.is_empty(), "{gone:?}");
        assert!(gone.node_problems.is_empty(), "{gone:?}");
    }
}

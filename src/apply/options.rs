//! What an apply is asked and what it reports: its options, its outcome and report, the
//! log of its writes, and the progress it shows on the way.

use crate::cluster::{ClusterError, RecordSource};
use crate::model::Timestamp;
use crate::plan::{Plan, Policy};
use jiff::SignedDuration;
use std::collections::{BTreeMap, BTreeSet};

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Plan once and write nothing.
    pub dry_run: bool,
    /// New-revision pods that stay unavailable this long (on Ready nodes) halt the rollout;
    /// a rollout that makes no progress this long is stalled.
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
    /// DaemonSets whose newest source could not be used (their last good version is the
    /// desired one meanwhile), with why: the records' `SourceError` condition.
    pub source_errors: BTreeMap<Key, String>,
    /// Write the record of a blocked DaemonSet, with its `Blocked` condition and an event
    /// (`sync`, which keeps watching it); `apply` writes nothing for it.
    pub record_blocked: bool,
    /// `apply --force`: write DaemonSets a `sync` daemon drives (pausing the daemon for
    /// them) and DaemonSets whose record is paused.
    pub force: bool,
    /// The leader-election Leases (`NAMESPACE/NAME`) of other `sync` daemons that lapsed:
    /// what they drove, this daemon may take.
    pub expired_leases: BTreeSet<String>,
    /// Coalesce status writes that change only what churns with every pod (a record's
    /// counters, the conditions worded from them, the time of the last progress): one is
    /// written once the difference has lasted this long, so a DaemonSet under churn gets at
    /// most one such write per interval, and none for a pod replaced within it (`sync`: one
    /// second). Revisions, halts, pauses, blocks and source errors are written at once.
    /// `None`: every change at once (`apply`).
    pub status_interval: Option<SignedDuration>,
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
            source_errors: BTreeMap::new(),
            record_blocked: false,
            force: false,
            expired_leases: BTreeSet::new(),
            status_interval: None,
        }
    }
}

/// How an apply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every DaemonSet is up to date on every node it should run on (nodes that are
    /// themselves NotReady excepted: see [`ApplyReport::node_problems`]).
    Converged,
    /// Some DaemonSets halted (new pods stayed unavailable past the progress deadline;
    /// nothing more of them was replaced); every other DaemonSet converged.
    Halted,
    /// Some DaemonSets are paused by their record's `daemonsync.io/paused` annotation (no pod
    /// replaced; the nodes without one got the stable revision's), or their rollout was
    /// aborted, or they are frozen (`daemonsync.io/frozen`: nothing written); every other
    /// DaemonSet converged.
    Paused,
    /// Some DaemonSets' rollouts wait at a manual pause for `daemonsync promote`; every
    /// other DaemonSet converged.
    AwaitingPromotion,
    /// Some DaemonSets are blocked: another controller runs them (the built-in DaemonSet
    /// controller) and their manifest chose neither to take them over nor to keep them
    /// native; nothing was written for them, every other DaemonSet converged.
    Blocked,
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
    /// Pods updated in place.
    pub in_place: usize,
    /// Writes of handovers with the built-in controller: DaemonSets deleted (orphaning) or
    /// applied natively, pods claimed or relabelled.
    pub handover_writes: usize,
    /// Nodes whose new pod failed (the reason the rollout halted).
    pub failed: Vec<FailedNode>,
    /// Nodes that are NotReady themselves: not evidence against the new version.
    pub node_problems: Vec<FailedNode>,
    /// Managed DaemonSets no longer in the source (pruned with `--prune`, else left alone).
    pub orphans: Vec<Orphan>,
    /// `namespace/name` of the DaemonSets that halted.
    pub halted: Vec<String>,
    /// `namespace/name` of the DaemonSets halted because the cluster's admission refused
    /// their pods (Pod Security, a webhook, a quota), with the refusal.
    pub refused: Vec<(String, String)>,
    /// `namespace/name` of the blocked DaemonSets, with why.
    pub blocked: Vec<(String, String)>,
    /// `namespace/name` of the DaemonSets whose record is paused (or whose rollout was
    /// aborted): no pod replaced.
    pub paused: Vec<String>,
    /// `namespace/name` of the DaemonSets whose record is frozen: nothing written.
    pub frozen: Vec<String>,
    /// `namespace/name` of the DaemonSets whose rollout waits at a manual pause.
    pub awaiting: Vec<String>,
    /// Every write, in order.
    pub writes: Vec<Write>,
}

/// One write of an apply: the audit trail of a rollout.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Write {
    /// Cluster time of the step that made it.
    pub time: Timestamp,
    /// `create`, `delete`, `in-place` (images patched into a running pod), `pre-pull` (a pod
    /// pulling a node's new images before its turn), `pre-pull-cleanup` (its removal),
    /// `untaint` (a readiness taint removed from the node), `create-config` (a revision's
    /// config copy written before its pods) or `delete-config` (a copy no revision needs).
    pub verb: &'static str,
    /// `namespace/name` of the DaemonSet.
    pub daemonset: String,
    /// The pod's name (for `create-config` and `delete-config`, the copy's:
    /// `configmap/NAME` or `secret/NAME`).
    pub pod: String,
    /// The node.
    pub node: String,
    /// The revision of the created pod, or of the deleted one (empty when it had none).
    pub revision: String,
    /// The rollout phase the write belonged to (`Canary`, `Wave 2/3`, ...), or `Rollout`
    /// for a DaemonSet without a rollout policy; `Prune` for the pods of a DaemonSet no
    /// longer in the source.
    pub phase: String,
    /// The readiness taint removed (`untaint`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub taint: String,
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

/// `(namespace, name)` of a DaemonSet.
pub type Key = (String, String);

/// Where one step's writes are logged.
pub(super) struct Log<'a> {
    pub(super) time: Timestamp,
    pub(super) entries: Option<&'a mut Vec<Write>>,
}

impl Log<'_> {
    pub(super) fn push(
        &mut self,
        verb: &'static str,
        daemonset: &str,
        pod: &str,
        node: &str,
        revision: String,
        phase: &str,
    ) {
        if let Some(entries) = self.entries.as_deref_mut() {
            entries.push(Write {
                time: self.time,
                verb,
                daemonset: daemonset.to_string(),
                pod: pod.to_string(),
                node: node.to_string(),
                revision,
                phase: phase.to_string(),
                taint: String::new(),
            });
        }
    }

    /// A readiness taint `key` removed from `node`, as `daemonset`'s write.
    pub(super) fn push_untaint(&mut self, daemonset: &str, node: &str, key: &str, phase: &str) {
        self.push("untaint", daemonset, "", node, String::new(), phase);
        if let Some(last) = self.entries.as_deref_mut().and_then(|e| e.last_mut()) {
            last.taint = key.to_string();
        }
    }
}

/// A node whose new pod is not available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedNode {
    /// DaemonSet namespace.
    pub namespace: String,
    /// DaemonSet name.
    pub daemonset: String,
    /// Node.
    pub node: String,
    /// The pod.
    pub pod: String,
    /// Why: the container's waiting reason, "node NotReady", or "not ready after …".
    pub reason: String,
}

/// Keeps the first error of a step, unless a refusal (or a stop) comes later: that one
/// decides.
pub(super) fn keep_forbidden(first: &mut Option<ClusterError>, e: ClusterError) {
    if first.is_none() || e.stops_step() && !first.as_ref().is_some_and(ClusterError::stops_step) {
        *first = Some(e);
    }
}

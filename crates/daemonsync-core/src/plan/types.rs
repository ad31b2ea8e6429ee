//! The planner's types: what it reads ([`Desired`], [`Observed`], [`Policy`]) and what it
//! returns, a [`Plan`] of one [`DaemonSetPlan`] per DaemonSet (its status, every node's state,
//! the next [`Step`], the projected [`Wave`]s, the rollout, risks and warnings).

use super::inplace;
use super::ownership::{self, Handover, Ownership};
use super::progressive::{self, Phase, Rollout, RolloutRecord};
use super::readiness::{NodeTaint, ReadinessTaint};
use super::suspend::Suspension;
use super::{Budgets, DeleteReason, LiveDiff, NodeState, Reason, Risk, Status};
use crate::model::{Pods, Timestamp};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde::Serialize;
use std::sync::Arc;

/// Planner policy: switches that change semantics deliberately.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Honour the `Lt` / `Gt` toleration operators (Kubernetes feature gate
    /// `TaintTolerationComparisonOperators`, alpha in v1.35 and off by default). When off,
    /// such a toleration tolerates nothing, as on a default v1.35 cluster.
    pub taint_comparison_operators: bool,
    /// Pass every manual pause of a progressive rollout (`apply --auto-promote`, for demos
    /// and tests).
    pub auto_promote: bool,
    /// Write through the record's `daemonsync.io/paused` (`apply --force`, which pauses the
    /// record for a `sync` daemon and rolls its own template out). A freeze holds whatever
    /// this says.
    pub ignore_pause: bool,
    /// Leave the projected waves out (`sync`, which reports none, and re-plans as pods
    /// change): each plan's `waves` is empty and its `converges` true, and no warning says
    /// the projection does not converge. Every other part of the plan, its step first, is
    /// the same.
    pub leave_out_waves: bool,
}

/// Version of the plan's JSON form.
pub const PLAN_API_VERSION: &str = "daemonsync.io/v1alpha1";

/// A desired DaemonSet and where it came from.
#[derive(Debug, Clone)]
pub struct Desired {
    /// Where the manifest came from (file and document), for reports.
    pub source: String,
    /// The defaulted, validated DaemonSet.
    pub daemonset: DaemonSet,
    /// The immutable copies of the ConfigMaps and Secrets its template references
    /// (`manifest::versioning`): written before the first pod of its revision.
    pub config: Vec<crate::manifest::config::ConfigCopy>,
}

impl Desired {
    /// A DaemonSet whose template references no versioned config.
    pub fn new(source: impl Into<String>, daemonset: DaemonSet) -> Self {
        Desired {
            source: source.into(),
            daemonset,
            config: Vec::new(),
        }
    }

    /// Its namespace (`default` when it names none) and name, as its plan has them.
    pub fn key(&self) -> (String, String) {
        let meta = &self.daemonset.metadata;
        (
            meta.namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".to_string()),
            meta.name.clone().unwrap_or_default(),
        )
    }
}

/// The observed state of a cluster.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// All nodes, shared with the cache they were observed from.
    pub nodes: crate::model::Nodes,
    /// Pods (all, or at least every pod that may belong to a managed DaemonSet), shared with
    /// the cache they were observed from.
    pub pods: Pods,
    /// `apps/v1` DaemonSets the built-in controller runs today.
    pub daemonsets: Vec<DaemonSet>,
    /// What the records of managed DaemonSets say about their rollouts.
    pub rollouts: Vec<RolloutRecord>,
    /// ControllerRevisions in the namespaces of the planned DaemonSets: the built-in
    /// controller's revisions, which outlive a DaemonSet deleted with orphan propagation.
    pub revisions: Vec<ownership::ControllerRevision>,
    /// Namespaces, with the labels that set their Pod Security level.
    pub namespaces: Vec<ownership::Namespace>,
    /// The Kubernetes version the cluster reports, when known (the planner does not read it:
    /// rendering and validation do).
    pub version: Option<crate::model::KubeVersion>,
}

/// Node names are shared between the many places of a plan that mention them.
pub type Name = Arc<str>;

/// The plan for every desired DaemonSet.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Always [`PLAN_API_VERSION`].
    pub api_version: &'static str,
    /// Always `Plan`.
    pub kind: &'static str,
    /// The instant the plan was computed for (`minReadySeconds` is measured against it).
    pub now: Timestamp,
    /// True for a plan of the manifests alone (`--cluster none`): no node, pod or live
    /// DaemonSet was read, so `nodes`, `step` and `waves` are empty, the counters and budgets
    /// are zero and mean nothing, and only the risks visible in the manifests are reported.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub manifest_only: bool,
    /// One entry per desired DaemonSet, sorted by namespace and name.
    pub daemonsets: Vec<DaemonSetPlan>,
}

impl Plan {
    /// True when any DaemonSet's next step has actions: pod creates or deletes, or the writes
    /// of a handover (a take-over, claims, a release's relabelling).
    pub fn has_changes(&self) -> bool {
        self.daemonsets.iter().any(|d| {
            !d.step.is_empty() || d.ownership.handover.holds_the_rollout() && !d.is_blocked()
        })
    }

    /// True when the cluster is not what git says and something is to be done about it: a
    /// change ([`Plan::has_changes`]), or a DaemonSet blocked until its owner chooses how
    /// daemonsync and the built-in controller share it. `plan` exits 2 for these.
    pub fn needs_action(&self) -> bool {
        self.has_changes() || self.daemonsets.iter().any(DaemonSetPlan::is_blocked)
    }
}

/// The plan of one DaemonSet.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetPlan {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Where the manifest came from.
    pub source: String,
    /// daemonsync's revision hash of the desired template.
    pub revision: String,
    /// How the desired template compares with a live `apps/v1` DaemonSet of the same name.
    pub live: LiveComparison,
    /// When `live` is `Differs`: the fields that differ, as the API server would store them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_diff: Option<LiveDiff>,
    /// The update strategy as written (after defaulting).
    pub strategy: StrategySummary,
    /// Budgets resolved against `desiredNumberScheduled`.
    pub budgets: Budgets,
    /// Status counters (Kubernetes `DaemonSetStatus` field names).
    pub status: Status,
    /// Every node, sorted by name, then vanished nodes that still have pods.
    pub nodes: std::sync::Arc<[NodeEntry]>,
    /// The next reconcile step.
    pub step: Step,
    /// Projected waves until converged, assuming each new pod becomes available.
    pub waves: Vec<Wave>,
    /// False when the projection cannot complete (see `warnings`).
    pub converges: bool,
    /// Operational notes a reviewer must know.
    pub warnings: Vec<String>,
    /// Risky changes (see [`RiskKind`](super::RiskKind)), in kind order.
    pub risks: Vec<Risk>,
    /// The template's `nodeSelector` (empty when none).
    pub node_selector: std::collections::BTreeMap<String, String>,
    /// `metadata.creationTimestamp` of the live DaemonSet of the same name, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    /// The progressive rollout, for a DaemonSet with a rollout policy (docs/progressive.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
    /// Errors in the DaemonSet that only the cluster reveals (a `waves-by` label no node
    /// has): nothing is done for it until they are fixed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// How pods take the new revision under `daemonsync.io/update-strategy:
    /// InPlaceIfPossible`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_place: Option<InPlacePlan>,
    /// Where pulling the new images ahead of the rollout stands (`daemonsync.io/pre-pull`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_pull: Option<PrePullPlan>,
    /// Who runs its pods beside the built-in controller, and what must happen before the
    /// rollout (absent for a managed DaemonSet with nothing to hand over).
    #[serde(skip_serializing_if = "Ownership::is_plain")]
    pub ownership: Ownership,
    /// The nodes that carry its readiness taint (`daemonsync.io/readiness-taint`) and what
    /// each waits for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readiness: Option<ReadinessTaint>,
    /// The record's hold: `daemonsync pause` (no pod replaced, nodes without one served) or
    /// `daemonsync freeze` (nothing written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspended: Option<Suspension>,
    /// The record says the rollout is stalled: it cannot make progress (its `Stalled`
    /// condition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled: Option<Stalled>,
    /// The ConfigMaps and Secrets whose keys the rollout changes (docs/sources.md,
    /// "Configuration changes roll out"): keys are named, values never.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_changes: Vec<super::ConfigChange>,
}

/// A rollout that cannot make progress, as its record's `Stalled` condition says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stalled {
    /// Since when (the condition's transition time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    /// Why, in CamelCase: `ProgressDeadlineExceeded`, `RolloutHalted`, `Blocked`,
    /// `SourceError`.
    pub reason: String,
    /// What a person reads.
    pub message: String,
}

/// Pulling a DaemonSet's new images onto nodes before their turn.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrePullPlan {
    /// The images of the new template.
    pub images: Vec<String>,
    /// Nodes pulling at once, at most.
    pub parallelism: usize,
    /// Out-of-date nodes that have the images: their turn may come.
    pub pulled: usize,
    /// Nodes pulling now.
    pub pulling: Vec<Name>,
    /// Nodes waiting to pull.
    pub waiting: usize,
    /// Pulls that failed on Ready nodes: the DaemonSet halts before touching a daemon pod.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<PullFailure>,
}

/// A pre-pull that failed.
#[derive(Debug, Clone, Serialize)]
pub struct PullFailure {
    /// The node.
    pub node: Name,
    /// The pre-pull pod.
    pub pod: String,
    /// Why (`ErrImagePull`, `ImagePullBackOff`, ...).
    pub reason: String,
}

/// A pre-pull pod the step creates.
#[derive(Debug, Clone, Serialize)]
pub struct PrePull {
    /// The node.
    pub node: Name,
    /// The images it pulls (those the node lacks).
    pub images: Vec<String>,
}

/// How pods take the new revision under `daemonsync.io/update-strategy: InPlaceIfPossible`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InPlacePlan {
    /// The revision whose pods can be updated in place (the stable one), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_revision: Option<String>,
    /// What changes from it: images only (in place), or the field that forces new pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<inplace::Change>,
    /// Why pods are recreated after all, when they are (no stable revision known,
    /// maxUnavailable 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recreate_because: Option<String>,
}

impl DaemonSetPlan {
    /// The rows of the nodes in the cluster, in name order: they come before the rows of
    /// vanished nodes that still hold its pods.
    pub fn observed_rows(&self) -> &[NodeEntry] {
        let observed = self
            .nodes
            .partition_point(|r| !matches!(r.reason, super::Reason::NodeGone));
        &self.nodes[..observed]
    }

    /// The row of `node`, a node in the cluster.
    pub fn row(&self, node: &str) -> Option<&NodeEntry> {
        let rows = self.observed_rows();
        rows.binary_search_by(|r| (*r.node).cmp(node))
            .ok()
            .map(|i| &rows[i])
    }

    /// The rollout phase, for a DaemonSet with a rollout policy.
    pub fn phase(&self) -> Option<&Phase> {
        self.rollout.as_ref().map(|r| &r.phase)
    }

    /// True when another controller runs it and the manifest chose neither take-over nor
    /// native mode: nothing is written for it.
    pub fn is_blocked(&self) -> bool {
        matches!(self.ownership.handover, Handover::Blocked { .. })
    }
}

/// How git's template compares with a live DaemonSet run by the built-in controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LiveComparison {
    /// No live `apps/v1` DaemonSet of this name.
    None,
    /// Equivalent once both are defaulted and canonical as the API server stores them: pods
    /// the live controller counts as updated are current.
    Equivalent,
    /// Different: every existing pod is out of date.
    Differs,
}

/// The update strategy in plan output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategySummary {
    /// `RollingUpdate` or `OnDelete`.
    #[serde(rename = "type")]
    pub type_: &'static str,
    /// As written, e.g. `10%` or `1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<String>,
    /// As written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<String>,
    /// `spec.minReadySeconds`.
    pub min_ready_seconds: i32,
}

/// One node's state for one DaemonSet.
#[derive(Debug, Clone, Serialize)]
pub struct NodeEntry {
    /// Node name.
    pub node: Name,
    /// State.
    pub state: NodeState,
    /// Why.
    pub reason: Reason,
    /// Its place in a progressive rollout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<progressive::NodeRollout>,
    /// For an out-of-date node under `InPlaceIfPossible`: `in-place`, or why it is recreated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<NodeUpdate>,
}

/// How an out-of-date node takes the new revision under `InPlaceIfPossible`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "how")]
pub enum NodeUpdate {
    /// Its pod's images are patched; the pod keeps its name and UID.
    InPlace,
    /// A new pod replaces it.
    Recreate {
        /// Why: the field that differs, or the pod's revision, or the budget.
        because: String,
    },
}

/// Which part of the reconcile produced the step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepPhase {
    /// Nothing to do.
    None,
    /// Per-node decisions: missing, failed, duplicate, misscheduled pods.
    Manage,
    /// The rolling update.
    RollingUpdate,
}

/// The actions of the next reconcile step.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Where the actions come from.
    pub phase: StepPhase,
    /// Nodes that get a new pod.
    pub create: Vec<Name>,
    /// Nodes held back by the rollout policy that get a pod of the stable revision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub create_stable: Vec<Name>,
    /// Pods deleted.
    pub delete: Vec<PodDeletion>,
    /// Pods whose images are patched in place.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_place: Vec<InPlaceUpdate>,
    /// Pods whose containers all run their images and are ready while daemonsync's readiness
    /// gate is not True yet: the gate opens.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub open_gates: Vec<PodRef>,
    /// Pre-pull pods created: a node's new images, pulled before its turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pre_pull: Vec<PrePull>,
    /// Pre-pull pods deleted: done, or for another revision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pre_pull_cleanup: Vec<PodRef>,
    /// Readiness taints removed: every DaemonSet naming the key has an available pod on the
    /// node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove_taints: Vec<NodeTaint>,
}

/// A pod, by namespace, name and node.
#[derive(Debug, Clone, Serialize)]
pub struct PodRef {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// The node it is on.
    pub node: Name,
}

impl Step {
    /// True when the step does nothing.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty()
            && self.create_stable.is_empty()
            && self.delete.is_empty()
            && self.in_place.is_empty()
            && self.open_gates.is_empty()
            && self.pre_pull.is_empty()
            && self.pre_pull_cleanup.is_empty()
            && self.remove_taints.is_empty()
    }
}

/// A pod the step updates in place.
#[derive(Debug, Clone, Serialize)]
pub struct InPlaceUpdate {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// The node it is on.
    pub node: Name,
    /// The images it gets.
    pub images: Vec<inplace::ImageChange>,
    /// The revision it runs now, for the write log.
    #[serde(skip)]
    pub from_revision: String,
    /// What writing it needs (its resourceVersion, its containers' order).
    #[serde(skip)]
    pub detail: Option<Box<crate::model::PodDetail>>,
}

/// A pod the step deletes.
#[derive(Debug, Clone, Serialize)]
pub struct PodDeletion {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// The node it is on.
    pub node: Name,
    /// Why.
    pub reason: DeleteReason,
    /// Its `controller-revision-hash` (empty when none), for the write log.
    #[serde(skip)]
    pub revision: String,
}

/// One projected wave.
#[derive(Debug, Clone, Serialize)]
pub struct Wave {
    /// Nodes that receive a new pod or lose theirs in this wave, by name.
    pub nodes: Vec<Name>,
    /// The rollout stage it belongs to (index into `rollout.stages`), for a progressive
    /// rollout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<u32>,
}

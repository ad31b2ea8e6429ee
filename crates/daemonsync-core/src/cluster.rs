//! Observed cluster state, and the writes that change it.
//!
//! [`Cluster`] is the one interface the executor talks to. It is async and fallible because
//! the live backend (kube-rs, later) is: reads come from watch-driven caches, writes are API
//! calls that can fail, and [`Cluster::wait_for_change`] is where a watch event wakes the
//! executor. [`ClusterSpec`] is a cluster as `--cluster` names it; [`AnyCluster`] the connected
//! backend. Implementations:
//!
//! * [`snapshot`]: a file in the shape `kubectl get nodes,pods,daemonsets -A -o yaml` prints,
//!   read-only, so `plan` can run in CI without cluster credentials ([`SnapshotCluster`]
//!   refuses every write with a clear error).
//! * [`sim`]: an in-memory cluster with a virtual clock, a scheduler and a kubelet model.
//! * [`kube`]: a live cluster through kube-rs (watch-driven caches, API writes, the
//!   `ManagedDaemonSet` record).
//! * [`synthetic`]: deterministic generated fleets of any size, shared by tests and benchmarks.

use crate::manifest::config::{
    COPY_OF_ANNOTATION, ConfigCopy, ConfigKind, DAEMONSET_LABEL, DIGEST_ANNOTATION,
};
use crate::model::Timestamp;
use crate::plan::progressive::Progress;
use crate::plan::render::PodOwner;
use crate::plan::{Observed, RolloutRecord, Status};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// An error from a cluster backend.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The backend cannot write (a snapshot file).
    #[error(
        "the {backend} cluster is read-only: {what} was refused (use --dry-run, or a sim: or live cluster)"
    )]
    ReadOnly {
        /// Which backend.
        backend: &'static str,
        /// The refused write.
        what: String,
    },
    /// The object does not exist.
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        /// Object kind.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The write was rejected (validation, a name taken, a terminating namespace...).
    #[error("{0}")]
    Rejected(String),
    /// The object changed since it was observed (409 Conflict: a resourceVersion or uid
    /// precondition failed): nothing is wrong with the client or the cluster, and the newer
    /// version, once observed, is planned again.
    #[error("{0}")]
    Conflict(String),
    /// The backend could not be reached or failed.
    #[error("{0}")]
    Backend(String),
    /// The cluster refuses this client the request (401, 403): retrying cannot help until
    /// someone grants it, so a rollout stops at once.
    #[error("{0}")]
    Forbidden(String),
    /// This client may no longer write (it lost the leader lease, or is shutting down): the
    /// step stops at once, and nothing was sent.
    #[error("{0}")]
    Stopped(String),
    /// The cluster's admission refused the object (Pod Security, a validating webhook, a
    /// quota): the object is at fault, not this client's permissions.
    #[error("{0}")]
    Refused(String),
}

impl ClusterError {
    /// Whether the rest of a step must not be attempted: a refusal, or writes stopped.
    pub fn stops_step(&self) -> bool {
        matches!(self, ClusterError::Forbidden(_) | ClusterError::Stopped(_))
    }
}

/// The in-cluster record of one managed DaemonSet (a small CRD in a live cluster).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Namespace.
    pub namespace: String,
    /// Name (the DaemonSet's).
    pub name: String,
    /// The last status written.
    pub status: Option<RecordStatus>,
    /// The record carries `daemonsync.io/paused: "true"`: no pod is replaced; nodes without
    /// one still get the stable revision's.
    pub paused: bool,
    /// The record carries `daemonsync.io/frozen: "true"`: nothing is written for it.
    pub frozen: bool,
    /// `daemonsync promote`: the record's `daemonsync.io/promote` (revision, stage).
    pub promoted: Option<(String, u32)>,
    /// `daemonsync abort`: the record's `daemonsync.io/abort` (a revision).
    pub aborted: Option<String>,
    /// The DaemonSet the record holds (its spec), when it reads as one.
    pub daemonset: Option<k8s_openapi::api::apps::v1::DaemonSet>,
    /// The record's uid: the controller reference of its pods names it.
    pub uid: String,
    /// The record is being deleted (it has a deletionTimestamp; orphan propagation first
    /// clears its pods' owner references).
    pub deleting: bool,
    /// Where its DaemonSet was read from, and who writes it.
    pub source: Option<RecordSource>,
}

impl Record {
    /// What the record tells the planner about the rollout.
    pub fn rollout_record(&self) -> RolloutRecord {
        let status = self.status.as_ref();
        RolloutRecord {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            stable: status
                .and_then(|s| s.stable.as_ref())
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .map(std::sync::Arc::new),
            progress: status
                .and_then(|s| s.rollout.as_ref())
                .map(|r| r.progress.clone()),
            promoted: self.promoted.clone(),
            aborted: self.aborted.clone(),
            paused: self.paused,
            frozen: self.frozen,
            halted: status.and_then(|s| s.halted.clone()),
            gating: self
                .daemonset
                .as_ref()
                .filter(|d| crate::manifest::policy::readiness_taint(d).is_some())
                .map(|d| std::sync::Arc::new(d.clone())),
            stalled: status
                .and_then(|s| s.reconcile.as_ref())
                .filter(|r| r.state == ReconcileState::Stalled)
                .map(|r| crate::plan::Stalled {
                    since: r.since,
                    reason: r.reason.clone(),
                    message: r.message.clone(),
                }),
        }
    }
}

/// Where a progressive rollout stands, as a record's status keeps it (`status.rollout`).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// `Canary`, `Paused`, `Wave k/n`, `Halted` or `Complete`.
    pub phase: String,
    /// Why it is paused, while it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The revision, the last unlocked stage, when the current pause began.
    #[serde(flatten)]
    pub progress: Progress,
}

impl RolloutStatus {
    /// Whether the rollout is moving on its own (`Canary`, `Wave k/n`) or done (`Complete`),
    /// not held (`Paused`, `Halted`): between these phases at the same progress it goes and
    /// comes back as a node loses its pod and gets a new one.
    pub fn is_moving(&self) -> bool {
        self.message.is_none()
            && (matches!(self.phase.as_str(), "Complete" | "Canary")
                || self.phase.starts_with("Wave "))
    }
}

/// What the executor writes to a managed DaemonSet's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordStatus {
    /// The upstream status counters.
    pub counters: Status,
    /// The revision hash of the DaemonSet's current template.
    pub revision: String,
    /// Why the rollout halted, while it is halted.
    pub halted: Option<String>,
    /// Paused by the record's `daemonsync.io/paused` annotation (the `Paused` condition).
    pub paused: bool,
    /// Frozen by the record's `daemonsync.io/frozen` annotation (the `Frozen` condition).
    pub frozen: bool,
    /// Why the source's newest version of this DaemonSet could not be used (the
    /// `SourceError` condition); the last good version keeps running meanwhile.
    pub source_error: Option<String>,
    /// The progressive rollout, for a DaemonSet with a rollout policy.
    pub rollout: Option<RolloutStatus>,
    /// The DaemonSet the last complete rollout reached (`status.stable`): the revision nodes
    /// held back by a rollout policy run.
    pub stable: Option<serde_json::Value>,
    /// Why nothing is written for the DaemonSet (another controller runs it): the `Blocked`
    /// condition.
    pub blocked: Option<String>,
    /// Where the rollout stands as GitOps tools read it: the `Ready`, `Reconciling` and
    /// `Stalled` conditions (`None`: judged from the counters alone).
    pub reconcile: Option<Reconcile>,
    /// When the rollout last made progress, while it is expected to (`status.lastProgressTime`;
    /// `None` while it is complete, paused or waiting at a pause).
    pub last_progress: Option<Timestamp>,
}

/// Where a rollout stands, in the terms of kstatus (sigs.k8s.io/cli-utils), which Flux's health
/// checks use: one of [`ReconcileState`], with a CamelCase reason and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconcile {
    /// Current, in progress, waiting for a person, or stalled.
    pub state: ReconcileState,
    /// CamelCase reason (`RolloutComplete`, `Progressing`, `Paused`, `AwaitingPromotion`,
    /// `ProgressDeadlineExceeded`, `RolloutHalted`, ...).
    pub reason: String,
    /// What a person reads.
    pub message: String,
    /// Since when the rollout is stalled (the `Stalled` condition's transition time), as read
    /// back from a record; a writer leaves it to the record.
    pub since: Option<Timestamp>,
}

/// The four states a rollout's record shows to GitOps tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileState {
    /// The desired state is reached: `Ready=True`.
    Current,
    /// Work is left and daemonsync is on it: `Reconciling=True`, `Ready=False`.
    InProgress,
    /// Work is left but waits for a person by design (`daemonsync pause`, a manual pause of a
    /// progressive rollout, an abort): `Ready=False`, neither reconciling nor stalled.
    Waiting,
    /// The rollout cannot make progress (halted, blocked, a source error, no progress past
    /// the progress deadline): `Stalled=True`, `Ready=False`.
    Stalled,
}

impl Reconcile {
    /// A state with its reason and message.
    pub fn new(state: ReconcileState, reason: &str, message: impl Into<String>) -> Self {
        Reconcile {
            state,
            reason: reason.to_string(),
            message: message.into(),
            since: None,
        }
    }
}

/// What a cluster shows at one instant: the planner's input, plus the records.
#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    /// Nodes, the pods that may belong to managed DaemonSets, live `apps/v1` DaemonSets.
    pub observed: Observed,
    /// Records of managed DaemonSets, sorted by namespace and name, shared with the cache they
    /// were observed from (a record holds whole DaemonSets: an observation copies none).
    pub records: Vec<std::sync::Arc<Record>>,
    /// The immutable copies of ConfigMaps and Secrets daemonsync wrote for DaemonSets'
    /// revisions (a live backend shows them once it has written one).
    pub config_copies: Vec<ObservedCopy>,
    /// The cluster's idea of now (the sim's virtual clock; the wall clock for a live one).
    pub now: Timestamp,
}

/// An immutable copy of a ConfigMap or Secret in the cluster, as its metadata shows it
/// (`manifest::config`): never its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedCopy {
    /// ConfigMap or Secret.
    pub kind: ConfigKind,
    /// Namespace.
    pub namespace: String,
    /// The copy's name.
    pub name: String,
    /// Its uid: the precondition of its deletion.
    pub uid: String,
    /// Its `daemonsync.io/daemonset` label: the DaemonSet it belongs to.
    pub daemonset: String,
    /// Its `daemonsync.io/copy-of` annotation: the name of the object it copies.
    pub copy_of: String,
    /// Its `daemonsync.io/config-digest` annotation: the digest of its content.
    pub digest: String,
    /// When it was created.
    pub created: Option<Timestamp>,
    /// It is being deleted.
    pub deleting: bool,
}

impl ObservedCopy {
    /// The copy an object's metadata describes, if it is one of daemonsync's (labelled
    /// managed by daemonsync, for a DaemonSet).
    pub fn from_meta(
        kind: ConfigKind,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> Option<ObservedCopy> {
        let labels = meta.labels.as_ref()?;
        if labels
            .get(crate::model::MANAGED_BY_LABEL)
            .map(String::as_str)
            != Some(crate::model::MANAGED_BY_VALUE)
        {
            return None;
        }
        let daemonset = labels.get(DAEMONSET_LABEL)?.clone();
        let annotation = |k: &str| {
            meta.annotations
                .as_ref()
                .and_then(|a| a.get(k))
                .cloned()
                .unwrap_or_default()
        };
        Some(ObservedCopy {
            kind,
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            daemonset,
            copy_of: annotation(COPY_OF_ANNOTATION),
            digest: annotation(DIGEST_ANNOTATION),
            created: meta.creation_timestamp.as_ref().map(|t| t.0),
            deleting: meta.deletion_timestamp.is_some(),
        })
    }
}

/// Severity of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Normal progress.
    Normal,
    /// Something needs attention.
    Warning,
}

/// A Kubernetes Event about a managed DaemonSet's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Namespace of the record.
    pub namespace: String,
    /// Name of the record (the DaemonSet).
    pub name: String,
    /// Normal or Warning.
    pub type_: EventType,
    /// CamelCase reason, e.g. `SuccessfulCreate`.
    pub reason: String,
    /// Human message.
    pub message: String,
}

/// A pod to create, with its namespace (`default` when it names none) and the uid of the
/// record that owns it filled in from `record_uid` (namespace, name): a managed pod's owner
/// reference names its record, whose uid only the cluster knows. Refused while the record
/// does not exist yet.
pub fn pod_to_create(
    mut pod: k8s_openapi::api::core::v1::Pod,
    record_uid: impl Fn(&str, &str) -> Option<String>,
) -> Result<(String, k8s_openapi::api::core::v1::Pod), ClusterError> {
    let namespace = pod
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    for owner in pod.metadata.owner_references.iter_mut().flatten() {
        if owner.kind == crate::plan::RECORD_KIND && owner.uid.is_empty() {
            owner.uid = record_uid(&namespace, &owner.name).ok_or_else(|| {
                ClusterError::Rejected(format!(
                    "no record {namespace}/{} to own the pod yet",
                    owner.name
                ))
            })?;
        }
    }
    Ok((namespace, pod))
}

/// A cluster the executor can observe and change. Every method may fail; writes are
/// individually idempotent from the executor's point of view (it re-observes after each step
/// and never trusts its memory of what it did).
///
/// Contract: [`Cluster::observe`] reflects every write this client has completed (a live
/// backend waits until its watch cache has seen its own creates and deletes, as upstream's
/// controller expectations do); otherwise a re-plan on a stale cache could act twice.
pub trait Cluster: Send {
    /// The current state. A live backend serves it from its watch caches.
    fn observe(&mut self) -> impl Future<Output = Result<ClusterState, ClusterError>> + Send;

    /// Creates a pod (with `metadata.generateName`); returns the name given to it.
    fn create_pod(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
    ) -> impl Future<Output = Result<String, ClusterError>> + Send;

    /// Creates several pods as one batch, as the built-in controller sends a slow-start
    /// batch: every create is sent, and the results come back in the order of `pods`. A
    /// backend that can have requests in flight together sends them so; the default sends
    /// them one after another.
    fn create_pods(
        &mut self,
        pods: Vec<k8s_openapi::api::core::v1::Pod>,
    ) -> impl Future<Output = Vec<Result<String, ClusterError>>> + Send {
        async move {
            let mut results = Vec::with_capacity(pods.len());
            for pod in pods {
                results.push(self.create_pod(pod).await);
            }
            results
        }
    }

    /// Deletes a pod (graceful: it terminates first). [`ClusterError::NotFound`] when absent.
    fn delete_pod(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Makes sure the record of a managed DaemonSet exists and holds `daemonset` (the
    /// DaemonSet from the source) and where it came from. The executor calls it before it
    /// writes the DaemonSet's pods or status. Backends whose records need no spec keep the
    /// default, which does nothing.
    fn ensure_record(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
        source: &RecordSource,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send {
        let _ = (daemonset, source);
        async { Ok(()) }
    }

    /// Writes the status of a managed DaemonSet's record (the sim creates the record if
    /// needed; a live backend needs [`Cluster::ensure_record`] first).
    fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &RecordStatus,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Writes the statuses of several records (`(namespace, name, status)`) as one batch:
    /// every write is sent, and the results come back in order. A backend that can have
    /// requests in flight together sends them so; the default sends them one after another.
    fn write_statuses(
        &mut self,
        statuses: Vec<(String, String, RecordStatus)>,
    ) -> impl Future<Output = Vec<Result<(), ClusterError>>> + Send {
        async move {
            let mut results = Vec::with_capacity(statuses.len());
            for (namespace, name, status) in &statuses {
                results.push(self.write_status(namespace, name, status).await);
            }
            results
        }
    }

    /// Emits an Event on a managed DaemonSet's record.
    fn emit_event(&mut self, event: Event)
    -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Updates a pod in place: its container images and labels, on the condition that it is
    /// still at `patch.resource_version` (a JSON patch with a `test` of the resourceVersion
    /// on a live cluster). [`ClusterError::Conflict`] when the pod changed meanwhile.
    fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &ImagePatch,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Sets a condition in a pod's status (the `pods/status` subresource): daemonsync's
    /// readiness gate. With `resource_version`, only while the pod is still at it. Returns
    /// the pod's resourceVersion after the write (empty when the backend does not say).
    fn set_pod_condition(
        &mut self,
        namespace: &str,
        name: &str,
        condition: &str,
        status: bool,
        resource_version: Option<&str>,
    ) -> impl Future<Output = Result<String, ClusterError>> + Send;

    /// Changes a pod's controller, labels and annotations (a strategic merge patch, as the
    /// built-in controllers' ControllerRefManager sends), on the condition that the pod is
    /// still the one and at the resourceVersion this client last observed.
    /// [`ClusterError::Conflict`] when it changed meanwhile.
    fn patch_pod_metadata(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &MetadataPatch,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Deletes an `apps/v1` DaemonSet with orphan propagation (its pods and
    /// ControllerRevisions keep running, their owner reference cleared by the garbage
    /// collector), on the condition that it is still the one with `uid`.
    fn delete_daemonset(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Server-side applies an `apps/v1` DaemonSet (field manager daemonsync, forced: it owns
    /// what it writes of a DaemonSet it keeps native).
    fn apply_daemonset(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Sets (`Some`) or removes (`None`) annotations of a managed DaemonSet's record, as
    /// `daemonsync pause` does.
    fn annotate_record(
        &mut self,
        namespace: &str,
        name: &str,
        annotations: &std::collections::BTreeMap<String, Option<String>>,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Deletes a managed DaemonSet's record with orphan propagation (what it still owns keeps
    /// running).
    fn delete_record(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Removes one taint, by key and effect, from a node (a readiness taint whose daemons are
    /// available), as upstream's `RemoveTaintOffNode` does: the node is read, then patched
    /// without that taint on the condition that it is still at the resourceVersion read (a
    /// JSON patch whose first operation tests it: a node's taints have no merge key, so only
    /// the precondition keeps a taint another writer added meanwhile), and read again after a
    /// conflict, at most [`TAINT_ATTEMPTS`] times. Every other taint stays as it is.
    /// `Ok(false)` when the node no longer has the taint; [`ClusterError::NotFound`] when the
    /// node is gone.
    fn remove_node_taint(
        &mut self,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
    ) -> impl Future<Output = Result<bool, ClusterError>> + Send;
    /// Creates an immutable copy of a ConfigMap or Secret for a DaemonSet's revision, owned
    /// by `owner` (the DaemonSet's record, whose uid the backend fills in, or its `apps/v1`
    /// DaemonSet in native mode), so that deleting the owner takes it along. A copy of the
    /// same name and content that exists already is success (copies are named after their
    /// content); one of the same name and other content is [`ClusterError::Rejected`].
    fn create_config_copy(
        &mut self,
        copy: &ConfigCopy,
        owner: &PodOwner,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Deletes a copy no revision needs any more, on the condition that it is still the one
    /// with `uid`. [`ClusterError::NotFound`] when it is gone.
    fn delete_config_copy(
        &mut self,
        copy: &ObservedCopy,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Waits until something changes (a watch event; the sim's next scheduled event) or until
    /// `deadline`. Returns `true` when something changed, `false` when the deadline passed.
    fn wait_for_change(
        &mut self,
        deadline: Timestamp,
    ) -> impl Future<Output = Result<bool, ClusterError>> + Send;
}

/// Attempts at removing a taint from a node whose resourceVersion keeps changing between the
/// read and the patch (upstream's `UpdateTaintBackoff` takes five steps).
pub const TAINT_ATTEMPTS: usize = 5;

/// A change of a pod's metadata: who controls it, and labels and annotations set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataPatch {
    /// The new controller (daemonsync's record; its uid is filled in by the backend), or the
    /// uid of a controller reference to remove.
    pub owner: OwnerChange,
    /// Labels set (others are kept).
    pub labels: std::collections::BTreeMap<String, String>,
    /// Annotations set (others are kept).
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// What a [`MetadataPatch`] does to a pod's controller reference.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OwnerChange {
    /// Leaves it.
    #[default]
    Keep,
    /// Makes the record of this managed DaemonSet (by name) the controller.
    Claim(String),
    /// Removes the reference to the owner with this uid.
    Release(String),
}

/// An in-place update of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePatch {
    /// The resourceVersion the pod must still have.
    pub resource_version: String,
    /// The images, by container: (init container, index in its list, name, new image).
    pub images: Vec<(bool, usize, String, String)>,
    /// Labels set with them (the new `controller-revision-hash`).
    pub labels: std::collections::BTreeMap<String, String>,
}

/// Where a managed DaemonSet was read from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordSource {
    /// The repository (redacted URL) or local directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The path inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The commit, for a git source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Who writes the DaemonSet: one writer at a time (a `sync` daemon, or `apply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<RecordWriter>,
}

impl RecordSource {
    /// Whether a record written from `self` and one written from `other` name the same
    /// writer (see [`RecordWriter::same`]).
    pub fn same_writer(&self, other: &RecordSource) -> bool {
        match (&self.writer, &other.writer) {
            (Some(a), Some(b)) => a.same(b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }

    /// `REPOSITORY/PATH at COMMIT`, or the directory, for messages.
    pub fn describe(&self) -> String {
        let place = match (&self.repository, &self.path) {
            (Some(r), Some(p)) => format!("{r} ({p})"),
            (Some(r), None) => r.clone(),
            (None, Some(p)) => p.clone(),
            (None, None) => "an unnamed source".into(),
        };
        match &self.commit {
            Some(c) => format!("{place} at commit {}", short_revision(c)),
            None => place,
        }
    }
}

/// The first 12 characters of a revision (a commit id, or the digest of `local:<digest>`).
pub fn short_revision(revision: &str) -> &str {
    let r = revision.strip_prefix("local:").unwrap_or(revision);
    r.get(..12).unwrap_or(r)
}

/// The writer of a managed DaemonSet, as its record names it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordWriter {
    /// `sync` (the daemon) or `apply`.
    pub command: String,
    /// The daemon's identity (its lease holder name, User-Agent and field manager).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The daemon's leader-election Lease, `NAMESPACE/NAME`: the same lease is the same
    /// daemon, whichever replica holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
}

impl RecordWriter {
    /// The `sync` daemon `identity`, electing its leader with `lease` (`NAMESPACE/NAME`).
    pub fn sync(identity: &str, lease: Option<String>) -> Self {
        RecordWriter {
            command: "sync".into(),
            identity: Some(identity.to_string()),
            lease,
        }
    }

    /// `daemonsync apply`.
    pub fn apply() -> Self {
        RecordWriter {
            command: "apply".into(),
            ..RecordWriter::default()
        }
    }

    /// A `sync` daemon.
    pub fn is_sync(&self) -> bool {
        self.command == "sync"
    }

    /// Whether `self` and `other` are the same writer: the same command and lease.
    pub fn same(&self, other: &RecordWriter) -> bool {
        self.command == other.command && self.lease == other.lease
    }

    /// `the daemon IDENTITY (lease NS/NAME)` or `daemonsync apply`, for messages.
    pub fn describe(&self) -> String {
        if !self.is_sync() {
            return format!("`daemonsync {}`", self.command);
        }
        let mut out = format!(
            "the daemonsync sync daemon {}",
            self.identity.as_deref().unwrap_or("(unnamed)")
        );
        if let Some(lease) = &self.lease {
            out.push_str(&format!(" (lease {lease})"));
        }
        out
    }
}

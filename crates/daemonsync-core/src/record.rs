//! The in-cluster record of one managed DaemonSet: the `ManagedDaemonSet` custom resource
//! (`daemonsync.io/v1alpha1`, short name `mds`). Its spec is the DaemonSet from git and where it
//! was read; its status is the upstream DaemonSet status counters with the current revision and
//! standard conditions. Every pod daemonsync creates names its record as controller, so
//! deleting a record deletes its pods. `examples/deploy/crd.yaml` is generated from these types
//! ([`crd_yaml`]); a test fails when the checked-in file differs.

use crate::cluster::{Reconcile, ReconcileState, RecordStatus};
pub use crate::cluster::{RecordSource, RecordWriter, short_revision};
use crate::model::{FROZEN_ANNOTATION, PAUSED_ANNOTATION, Timestamp};
use crate::plan::Status;
use kube_core::CustomResourceExt;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The field manager and event reporter name daemonsync writes as.
pub const FIELD_MANAGER: &str = "daemonsync";

/// The spec of a ManagedDaemonSet: the DaemonSet from git and where it was read.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "daemonsync.io",
    version = "v1alpha1",
    kind = "ManagedDaemonSet",
    plural = "manageddaemonsets",
    singular = "manageddaemonset",
    shortname = "mds",
    namespaced,
    status = "ManagedDaemonSetStatus",
    doc = "The record of one DaemonSet managed by daemonsync.",
    printcolumn = r#"{"name": "DESIRED", "type": "integer", "jsonPath": ".status.desiredNumberScheduled"}"#,
    printcolumn = r#"{"name": "CURRENT", "type": "integer", "jsonPath": ".status.currentNumberScheduled"}"#,
    printcolumn = r#"{"name": "READY", "type": "integer", "jsonPath": ".status.numberReady"}"#,
    printcolumn = r#"{"name": "UP-TO-DATE", "type": "integer", "jsonPath": ".status.updatedNumberScheduled"}"#,
    printcolumn = r#"{"name": "AVAILABLE", "type": "integer", "jsonPath": ".status.numberAvailable"}"#,
    printcolumn = r#"{"name": "MISSCHEDULED", "type": "integer", "jsonPath": ".status.numberMisscheduled"}"#,
    printcolumn = r#"{"name": "REVISION", "type": "string", "jsonPath": ".status.currentRevision"}"#,
    printcolumn = r#"{"name": "MODE", "type": "string", "jsonPath": ".spec.mode"}"#,
    printcolumn = r#"{"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedDaemonSetSpec {
    /// The DaemonSet from git.
    #[schemars(schema_with = "any_object")]
    pub daemon_set: serde_json::Value,
    /// Where the DaemonSet was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RecordSource>,
    /// Who runs its pods: `managed` (this record owns them) or `native` (the built-in
    /// controller's apps/v1 DaemonSet does, paced by daemonsync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

impl ManagedDaemonSetSpec {
    /// The spec of the record of `daemonset` from `source`.
    pub fn of(daemonset: &k8s_openapi::api::apps::v1::DaemonSet, source: &RecordSource) -> Self {
        ManagedDaemonSetSpec {
            daemon_set: serde_json::to_value(daemonset).unwrap_or_default(),
            source: Some(source.clone()),
            mode: Some(
                crate::plan::ownership::Choice::of(daemonset)
                    .mode
                    .as_str()
                    .to_string(),
            ),
        }
    }
}

impl RecordStatus {
    /// What a live record's status says.
    pub fn from_record(status: &ManagedDaemonSetStatus) -> Self {
        RecordStatus {
            counters: status.counters(),
            revision: status.current_revision.clone().unwrap_or_default(),
            halted: status
                .conditions
                .iter()
                .find(|c| c.type_ == "Halted" && c.status == "True")
                .map(|c| c.message.clone()),
            paused: status
                .conditions
                .iter()
                .any(|c| c.type_ == "Paused" && c.status == "True"),
            frozen: status
                .conditions
                .iter()
                .any(|c| c.type_ == "Frozen" && c.status == "True"),
            source_error: status
                .conditions
                .iter()
                .find(|c| c.type_ == "SourceError" && c.status == "True")
                .map(|c| c.message.clone()),
            rollout: status.rollout.clone(),
            stable: status.stable.clone(),
            blocked: status
                .conditions
                .iter()
                .find(|c| c.type_ == "Blocked" && c.status == "True")
                .map(|c| c.message.clone()),
            reconcile: reconcile_of(&status.conditions),
            last_progress: status
                .last_progress_time
                .as_deref()
                .and_then(|t| t.parse().ok()),
        }
    }
}

/// What the `Ready`, `Reconciling` and `Stalled` conditions say (`None` without `Ready`: a
/// status written before they existed).
fn reconcile_of(conditions: &[RecordCondition]) -> Option<Reconcile> {
    let find = |type_: &str| conditions.iter().find(|c| c.type_ == type_);
    let on = |type_: &str| find(type_).filter(|c| c.status == "True");
    let ready = find("Ready")?;
    let (state, c) = if let Some(c) = on("Stalled") {
        (ReconcileState::Stalled, c)
    } else if let Some(c) = on("Reconciling") {
        (ReconcileState::InProgress, c)
    } else if ready.status == "True" {
        (ReconcileState::Current, ready)
    } else {
        (ReconcileState::Waiting, ready)
    };
    Some(Reconcile {
        state,
        reason: c.reason.clone(),
        message: c.message.clone(),
        since: (state == ReconcileState::Stalled)
            .then(|| c.last_transition_time.parse().ok())
            .flatten(),
    })
}

/// The status of a ManagedDaemonSet: upstream's DaemonSetStatus counters, the current
/// revision and conditions.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedDaemonSetStatus {
    /// Nodes that should run the daemon pod.
    pub desired_number_scheduled: i32,
    /// Nodes that should run the daemon pod and run at least one.
    pub current_number_scheduled: i32,
    /// Nodes that should run the daemon pod and whose pod is Ready.
    pub number_ready: i32,
    /// Nodes that run the current revision.
    pub updated_number_scheduled: i32,
    /// Nodes whose pod is available (Ready for minReadySeconds).
    pub number_available: i32,
    /// Nodes that should run the daemon pod and have none available.
    pub number_unavailable: i32,
    /// Nodes that run the daemon pod but should not.
    pub number_misscheduled: i32,
    /// The revision hash of the DaemonSet's current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,
    /// The record generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Progressing, Available, Halted, Paused, SourceError, Blocked, and the kstatus
    /// conditions Ready, Reconciling and Stalled, in the standard condition shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RecordCondition>,
    /// Where a progressive rollout stands (docs/progressive.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<crate::cluster::RolloutStatus>,
    /// The DaemonSet the last complete rollout reached: nodes a rollout policy holds back run
    /// its revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_optional_object")]
    pub stable: Option<serde_json::Value>,
    /// When the rollout last made progress (a node became up to date or available, or a new
    /// revision began), while it is expected to: the progress deadline runs from it, and
    /// past it the rollout is `Stalled`. Absent while the rollout is complete, paused or
    /// waiting at a pause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_progress_time: Option<String>,
}

/// A condition in the standard Kubernetes shape (metav1.Condition).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordCondition {
    /// Progressing, Available, Halted, Paused, SourceError, Blocked, Ready, Reconciling or
    /// Stalled.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    /// When the status last changed (RFC 3339).
    pub last_transition_time: String,
    /// CamelCase reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The record generation the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

fn any_optional_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "The DaemonSet the last complete rollout reached.",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "The DaemonSet from git.",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

impl ManagedDaemonSetStatus {
    /// The record status for the planner's counters, keeping the transition times of
    /// conditions whose status did not change.
    pub fn from_plan(
        status: &Status,
        revision: Option<&str>,
        previous: Option<&ManagedDaemonSetStatus>,
        now: Timestamp,
    ) -> Self {
        let complete = status.updated_number_scheduled == status.desired_number_scheduled
            && status.number_available == status.desired_number_scheduled
            && status.number_misscheduled == 0;
        // As a Deployment's: True while rolling out and once complete; False only on a halt.
        let conditions = [
            (
                "Progressing",
                true,
                if complete {
                    "RolloutComplete"
                } else {
                    "RollingUpdate"
                },
                format!(
                    "{} of {} nodes run the current revision",
                    status.updated_number_scheduled, status.desired_number_scheduled
                ),
            ),
            (
                "Available",
                status.number_unavailable == 0,
                if status.number_unavailable == 0 {
                    "AllPodsAvailable"
                } else {
                    "PodsUnavailable"
                },
                format!(
                    "{} of {} nodes have an available pod",
                    status.number_available, status.desired_number_scheduled
                ),
            ),
        ]
        .into_iter()
        .map(|(type_, on, reason, message)| {
            condition(
                previous,
                type_,
                on,
                reason,
                message,
                now,
                status.observed_generation,
            )
        })
        .collect();
        ManagedDaemonSetStatus {
            desired_number_scheduled: status.desired_number_scheduled,
            current_number_scheduled: status.current_number_scheduled,
            number_ready: status.number_ready,
            updated_number_scheduled: status.updated_number_scheduled,
            number_available: status.number_available,
            number_unavailable: status.number_unavailable,
            number_misscheduled: status.number_misscheduled,
            current_revision: revision.map(str::to_string),
            observed_generation: status.observed_generation,
            conditions,
            rollout: None,
            stable: None,
            last_progress_time: None,
        }
    }

    /// Sets the `Halted` condition (and `Progressing` to False, as a Deployment past its
    /// progress deadline shows) while `halted` says why; clears it otherwise.
    pub fn set_halted(
        &mut self,
        halted: Option<&str>,
        previous: Option<&ManagedDaemonSetStatus>,
        now: Timestamp,
    ) {
        if let Some(why) = halted {
            let generation = self.observed_generation;
            if let Some(p) = self
                .conditions
                .iter_mut()
                .find(|c| c.type_ == "Progressing")
            {
                *p = condition(
                    previous,
                    "Progressing",
                    false,
                    "RolloutHalted",
                    why.to_string(),
                    now,
                    generation,
                );
            }
        }
        self.set_flag(
            previous,
            now,
            "Halted",
            halted.map(|why| ("RolloutHalted", why.to_string())),
            ("RolloutResumed", "the rollout is not halted"),
        );
    }

    /// Sets the `Paused` condition while the record carries `daemonsync.io/paused: "true"`;
    /// clears it once the annotation is gone.
    pub fn set_paused(
        &mut self,
        paused: bool,
        previous: Option<&ManagedDaemonSetStatus>,
        now: Timestamp,
    ) {
        self.set_flag(
            previous,
            now,
            "Paused",
            paused.then(|| {
                (
                    "PausedByAnnotation",
                    format!(
                        "{PAUSED_ANNOTATION} is \"true\": no pod is replaced, and nodes \
                         without one get the stable revision's; remove the annotation to resume"
                    ),
                )
            }),
            ("Resumed", "the rollout is not paused"),
        );
    }

    /// Sets the `Frozen` condition while the record carries `daemonsync.io/frozen: "true"`;
    /// clears it once the annotation is gone.
    pub fn set_frozen(
        &mut self,
        frozen: bool,
        previous: Option<&ManagedDaemonSetStatus>,
        now: Timestamp,
    ) {
        self.set_flag(
            previous,
            now,
            "Frozen",
            frozen.then(|| {
                (
                    "FrozenByAnnotation",
                    format!(
                        "{FROZEN_ANNOTATION} is \"true\": nothing is written for this \
                         DaemonSet; remove the annotation to unfreeze"
                    ),
                )
            }),
            ("Unfrozen", "daemonsync writes for this DaemonSet again"),
        );
    }

    /// Sets the `SourceError` condition while the newest source cannot be used for this
    /// DaemonSet (the last good version keeps running); clears it once it can.
    pub fn set_source_error(
        &mut self,
        error: Option<&str>,
        previous: Option<&ManagedDaemonSetStatus>,
        now: Timestamp,
    ) {
        self.set_flag(
            previous,
            now,
            "SourceError",
            error.map(|why| ("SourceError", why.to_string())),
            ("SourceRead", "the newest source is in use"),
        );
    }

    /// A condition that is True with `(reason, message)` while `on` is set, and False with
    /// `cleared` afterwards (absent when it was never True).
    fn set_flag(
        &mut self,
        previous: Option<&ManagedDaemonSetStatus>,
        now: Timestamp,
        type_: &str,
        on: Option<(&str, String)>,
        cleared: (&str, &str),
    ) {
        let generation = self.observed_generation;
        let set = match on {
            Some((reason, message)) => {
                condition(previous, type_, true, reason, message, now, generation)
            }
            None if previous.is_some_and(|p| p.conditions.iter().any(|c| c.type_ == type_)) => {
                condition(
                    previous,
                    type_,
                    false,
                    cleared.0,
                    cleared.1.to_string(),
                    now,
                    generation,
                )
            }
            None => return,
        };
        self.conditions.push(set);
    }

    /// What a record's status becomes when the executor writes `status` over `previous`
    /// (transition times kept while a condition holds), for the record's `generation`. The
    /// live backend and the simulated cluster write the same thing.
    pub fn written(
        status: &crate::cluster::RecordStatus,
        previous: Option<&ManagedDaemonSetStatus>,
        generation: Option<i64>,
        now: Timestamp,
    ) -> Self {
        // The status describes the record's generation (its conditions too), not the
        // DaemonSet manifest's.
        let counters = Status {
            observed_generation: generation,
            ..status.counters
        };
        let mut written = Self::from_plan(&counters, Some(&status.revision), previous, now);
        written.set_halted(status.halted.as_deref(), previous, now);
        written.set_paused(status.paused, previous, now);
        written.set_frozen(status.frozen, previous, now);
        written.set_source_error(status.source_error.as_deref(), previous, now);
        written.set_flag(
            previous,
            now,
            "Blocked",
            status
                .blocked
                .as_deref()
                .map(|why| ("BuiltinController", why.to_string())),
            ("Unblocked", "daemonsync drives this DaemonSet"),
        );
        let fallback;
        let reconcile = match &status.reconcile {
            Some(r) => r,
            None => {
                fallback = Self::reconcile_of_counters(&counters);
                &fallback
            }
        };
        written.set_reconcile(reconcile, previous, now);
        written.rollout = status.rollout.clone();
        written.stable = status.stable.clone();
        written.last_progress_time = status.last_progress.map(|t| t.to_string());
        written
    }

    /// Where a rollout stands when only its counters are known: current once every node runs
    /// the revision, available; in progress before.
    fn reconcile_of_counters(status: &Status) -> Reconcile {
        let complete = status.updated_number_scheduled == status.desired_number_scheduled
            && status.number_available == status.desired_number_scheduled
            && status.number_misscheduled == 0;
        let message = format!(
            "{} of {} nodes run the current revision, {} available",
            status.updated_number_scheduled,
            status.desired_number_scheduled,
            status.number_available
        );
        if complete {
            Reconcile::new(ReconcileState::Current, "RolloutComplete", message)
        } else {
            Reconcile::new(ReconcileState::InProgress, "Progressing", message)
        }
    }

    /// Sets the conditions kstatus reads (sigs.k8s.io/cli-utils, which Flux's health checks
    /// use) from where the rollout stands: `Ready` (True once the desired state is reached)
    /// and `Reconciling` (True while in progress) always, `Stalled` (True while the rollout
    /// cannot make progress) once it has been True. Each carries the reason and message of
    /// the state, and the record's generation.
    pub fn set_reconcile(
        &mut self,
        reconcile: &Reconcile,
        previous: Option<&ManagedDaemonSetStatus>,
        now: Timestamp,
    ) {
        let generation = self.observed_generation;
        let (reason, message) = (reconcile.reason.as_str(), &reconcile.message);
        for (type_, on) in [
            ("Ready", reconcile.state == ReconcileState::Current),
            ("Reconciling", reconcile.state == ReconcileState::InProgress),
        ] {
            let c = condition(
                previous,
                type_,
                on,
                reason,
                message.clone(),
                now,
                generation,
            );
            self.conditions.push(c);
        }
        let stalled = reconcile.state == ReconcileState::Stalled;
        let was_set = previous.is_some_and(|p| p.conditions.iter().any(|c| c.type_ == "Stalled"));
        if stalled || was_set {
            let c = condition(
                previous,
                "Stalled",
                stalled,
                reason,
                message.clone(),
                now,
                generation,
            );
            self.conditions.push(c);
        }
    }

    /// The planner's counters this status records.
    pub fn counters(&self) -> Status {
        Status {
            desired_number_scheduled: self.desired_number_scheduled,
            current_number_scheduled: self.current_number_scheduled,
            number_ready: self.number_ready,
            updated_number_scheduled: self.updated_number_scheduled,
            number_available: self.number_available,
            number_unavailable: self.number_unavailable,
            number_misscheduled: self.number_misscheduled,
            observed_generation: self.observed_generation,
        }
    }
}

/// What a record tells the executor: its status and the commands its annotations carry
/// (`daemonsync pause`, `freeze`, `promote`, `abort`).
pub fn record_of(r: &ManagedDaemonSet) -> crate::cluster::Record {
    let annotation = |key: &str| r.metadata.annotations.as_ref().and_then(|a| a.get(key));
    use crate::plan::progressive::{ABORT_ANNOTATION, PROMOTE_ANNOTATION};
    crate::cluster::Record {
        namespace: r.metadata.namespace.clone().unwrap_or_default(),
        name: r.metadata.name.clone().unwrap_or_default(),
        status: r
            .status
            .as_ref()
            .map(crate::cluster::RecordStatus::from_record),
        paused: annotation(PAUSED_ANNOTATION).is_some_and(|v| v == "true"),
        frozen: annotation(FROZEN_ANNOTATION).is_some_and(|v| v == "true"),
        promoted: annotation(PROMOTE_ANNOTATION)
            .and_then(|v| crate::plan::RolloutRecord::parse_promote(v)),
        aborted: annotation(ABORT_ANNOTATION).cloned(),
        daemonset: serde_json::from_value(r.spec.daemon_set.clone()).ok(),
        uid: r.metadata.uid.clone().unwrap_or_default(),
        deleting: r.metadata.deletion_timestamp.is_some(),
        source: r.spec.source.clone(),
    }
}

/// A condition of `type_`, keeping the previous transition time when its status is unchanged.
fn condition(
    previous: Option<&ManagedDaemonSetStatus>,
    type_: &str,
    on: bool,
    reason: &str,
    message: String,
    now: Timestamp,
    generation: Option<i64>,
) -> RecordCondition {
    let status = if on { "True" } else { "False" };
    let last_transition_time = previous
        .and_then(|p| p.conditions.iter().find(|c| c.type_ == type_))
        .filter(|c| c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| now.to_string());
    RecordCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        last_transition_time,
        reason: reason.to_string(),
        message,
        observed_generation: generation,
    }
}

/// The CustomResourceDefinition of [`ManagedDaemonSet`] as YAML: what
/// `examples/deploy/crd.yaml` holds.
pub fn crd_yaml() -> String {
    let crd = serde_json::to_value(ManagedDaemonSet::crd()).unwrap_or_default();
    serde_saphyr::to_string(&crd).unwrap_or_default()
}

/// The bodies of the requests that write pods, PodTemplates and DaemonSets, as the live backend
/// sends them and the simulated API server receives them.
pub mod bodies {
    use crate::model::Timestamp;
    use crate::plan::{RECORD_API_VERSION, RECORD_KIND};
    use k8s_openapi::api::apps::v1::DaemonSet;

    /// The JSON patch of an in-place update: a `test` of the resourceVersion, then the images
    /// replaced and the labels set.
    pub fn image_patch(patch: &crate::cluster::ImagePatch) -> serde_json::Value {
        let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
        let mut ops = vec![serde_json::json!({
            "op": "test", "path": "/metadata/resourceVersion", "value": patch.resource_version
        })];
        for (init, index, _, image) in &patch.images {
            let list = if *init {
                "initContainers"
            } else {
                "containers"
            };
            ops.push(serde_json::json!({
                "op": "replace", "path": format!("/spec/{list}/{index}/image"), "value": image
            }));
        }
        for (k, v) in &patch.labels {
            ops.push(serde_json::json!({
                "op": "add", "path": format!("/metadata/labels/{}", escape(k)), "value": v
            }));
        }
        serde_json::Value::Array(ops)
    }

    /// The JSON patch that removes the taint at `index` of a node's `spec.taints`, on the
    /// condition that the node is still at `resource_version`: its first operation tests it.
    pub fn taint_removal_patch(resource_version: &str, index: usize) -> serde_json::Value {
        serde_json::json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
            {"op": "remove", "path": format!("/spec/taints/{index}")},
        ])
    }

    /// Where the taint of `key` and `effect` is in a node object's `spec.taints`, if it has
    /// it.
    pub fn taint_index(node: &serde_json::Value, key: &str, effect: &str) -> Option<usize> {
        node["spec"]["taints"]
            .as_array()?
            .iter()
            .position(|t| t["key"] == key && t["effect"] == effect)
    }

    /// The strategic merge patch of `pods/status` that sets one condition (conditions merge
    /// by type); a resourceVersion in it is a precondition (409 when the pod moved on).
    pub fn condition_patch(
        condition: &str,
        status: bool,
        resource_version: Option<&str>,
        now: Timestamp,
    ) -> serde_json::Value {
        let mut patch = serde_json::json!({"status": {"conditions": [{
            "type": condition,
            "status": if status { "True" } else { "False" },
            "lastTransitionTime": now.to_string(),
        }]}});
        if let Some(rv) = resource_version {
            patch["metadata"] = serde_json::json!({"resourceVersion": rv});
        }
        patch
    }

    /// The strategic merge patch of a pod's controller, labels and annotations, with the
    /// pod's uid and resourceVersion as preconditions (as upstream's ControllerRefManager
    /// sends it; owner references merge by uid). `record_uid` is the uid of the record a
    /// [`OwnerChange::Claim`](crate::cluster::OwnerChange::Claim) names.
    pub fn metadata_patch(
        patch: &crate::cluster::MetadataPatch,
        pod_uid: &str,
        resource_version: &str,
        record_uid: &str,
    ) -> serde_json::Value {
        use crate::cluster::OwnerChange;
        let mut metadata = serde_json::json!({"uid": pod_uid, "resourceVersion": resource_version});
        match &patch.owner {
            OwnerChange::Keep => {}
            OwnerChange::Claim(name) => {
                metadata["ownerReferences"] = serde_json::json!([{
                    "apiVersion": RECORD_API_VERSION, "kind": RECORD_KIND, "name": name,
                    "uid": record_uid, "controller": true, "blockOwnerDeletion": true}]);
            }
            OwnerChange::Release(uid) => {
                metadata["ownerReferences"] = serde_json::json!([{"$patch": "delete", "uid": uid}]);
            }
        }
        if !patch.labels.is_empty() {
            metadata["labels"] = serde_json::json!(patch.labels);
        }
        if !patch.annotations.is_empty() {
            metadata["annotations"] = serde_json::json!(patch.annotations);
        }
        serde_json::json!({"metadata": metadata})
    }

    /// The PodTemplate daemonsync keeps beside a managed DaemonSet's record (named after it,
    /// owned by the record so it goes with it): its pod template, labelled as a DaemonSet
    /// pod's for Cluster Autoscaler.
    pub fn pod_template_body(ds: &DaemonSet, record_uid: &str) -> serde_json::Value {
        let name = ds.metadata.name.clone().unwrap_or_default();
        let template = ds
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        serde_json::json!({
            "apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {
                "name": name,
                "labels": {
                    crate::plan::ownership::AUTOSCALER_DAEMONSET_POD: "true",
                    crate::model::MANAGED_BY_LABEL: crate::model::MANAGED_BY_VALUE,
                },
                "ownerReferences": [{"apiVersion": RECORD_API_VERSION, "kind": RECORD_KIND,
                                     "name": name, "uid": record_uid}],
            },
            "template": template,
        })
    }

    /// A DaemonSet as server-side applied: `apiVersion` and `kind` set, no status, no
    /// server-owned metadata.
    pub fn daemonset_apply_body(ds: &DaemonSet) -> serde_json::Value {
        let mut ds = ds.clone();
        ds.status = None;
        let meta = &mut ds.metadata;
        meta.resource_version = None;
        meta.uid = None;
        meta.creation_timestamp = None;
        meta.generation = None;
        meta.managed_fields = None;
        let mut body = serde_json::to_value(&ds).unwrap_or_default();
        body["apiVersion"] = serde_json::json!("apps/v1");
        body["kind"] = serde_json::json!("DaemonSet");
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_crd_is_generated_from_the_types() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/deploy/crd.yaml"
        );
        let generated = crd_yaml();
        if std::env::var_os("DAEMONSYNC_REGENERATE").is_some() {
            std::fs::write(path, &generated).expect("write crd.yaml");
        }
        let checked_in = std::fs::read_to_string(path).expect("examples/deploy/crd.yaml");
        assert_eq!(
            checked_in, generated,
            "examples/deploy/crd.yaml is stale: run `DAEMONSYNC_REGENERATE=1 cargo test -p daemonsync-core --lib crd` and commit it"
        );
    }

    #[test]
    fn the_crd_prints_the_columns_kubectl_users_expect() {
        let crd = ManagedDaemonSet::crd();
        let columns: Vec<String> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(
            columns,
            [
                "DESIRED",
                "CURRENT",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "MISSCHEDULED",
                "REVISION",
                "MODE",
                "AGE"
            ]
        );
        assert_eq!(crd.spec.names.short_names, Some(vec!["mds".to_string()]));
        assert!(
            crd.spec.versions[0]
                .subresources
                .as_ref()
                .unwrap()
                .status
                .is_some()
        );
    }

    #[test]
    fn conditions_keep_their_transition_time_until_their_status_changes() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let t1: Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let rolling = Status {
            desired_number_scheduled: 3,
            current_number_scheduled: 3,
            number_ready: 3,
            updated_number_scheduled: 1,
            number_available: 3,
            ..Status::default()
        };
        let first = ManagedDaemonSetStatus::from_plan(&rolling, Some("abc"), None, t0);
        let progressing = &first.conditions[0];
        assert_eq!(
            (
                progressing.type_.as_str(),
                progressing.status.as_str(),
                progressing.reason.as_str()
            ),
            ("Progressing", "True", "RollingUpdate")
        );
        let done = Status {
            updated_number_scheduled: 3,
            ..rolling
        };
        let second = ManagedDaemonSetStatus::from_plan(&done, Some("abc"), Some(&first), t1);
        assert_eq!(second.conditions[0].reason, "RolloutComplete");
        assert_eq!(second.conditions[0].last_transition_time, t0.to_string());
        assert_eq!(second.conditions[1].type_, "Available");
        assert_eq!(second.conditions[1].last_transition_time, t0.to_string());
        assert_eq!(second.counters(), done);

        let mut halted =
            ManagedDaemonSetStatus::from_plan(&rolling, Some("def"), Some(&second), t1);
        halted.set_halted(
            Some("pod a on node n1: ImagePullBackOff"),
            Some(&second),
            t1,
        );
        let find = |s: &ManagedDaemonSetStatus, t: &str| {
            s.conditions.iter().find(|c| c.type_ == t).cloned().unwrap()
        };
        assert_eq!(find(&halted, "Halted").status, "True");
        assert_eq!(find(&halted, "Progressing").status, "False");
        assert_eq!(
            find(&halted, "Progressing").last_transition_time,
            t1.to_string()
        );
        let mut resumed = ManagedDaemonSetStatus::from_plan(&done, Some("def"), Some(&halted), t1);
        resumed.set_halted(None, Some(&halted), t1);
        assert_eq!(find(&resumed, "Halted").status, "False");
        assert_eq!(find(&resumed, "Progressing").status, "True");
    }

    /// A record status at `counters` where the rollout stands as `state` says.
    fn standing(state: ReconcileState, reason: &str, message: &str) -> RecordStatus {
        RecordStatus {
            counters: Status {
                desired_number_scheduled: 3,
                current_number_scheduled: 3,
                number_ready: 3,
                updated_number_scheduled: 1,
                number_available: 3,
                ..Status::default()
            },
            revision: "abc".into(),
            halted: None,
            paused: false,
            frozen: false,
            source_error: None,
            rollout: None,
            stable: None,
            blocked: None,
            reconcile: Some(Reconcile::new(state, reason, message)),
            last_progress: None,
        }
    }

    #[test]
    fn the_kstatus_conditions_follow_the_rollout_and_keep_their_transition_times() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let t1: Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let t2: Timestamp = "2026-01-01T00:09:00Z".parse().unwrap();
        let find = |s: &ManagedDaemonSetStatus, t: &str| {
            s.conditions.iter().find(|c| c.type_ == t).map(|c| {
                (
                    c.status.clone(),
                    c.reason.clone(),
                    c.last_transition_time.clone(),
                )
            })
        };
        let mut rolling = standing(ReconcileState::InProgress, "Progressing", "1 of 3 nodes");
        rolling.last_progress = Some(t0);
        let first = ManagedDaemonSetStatus::written(&rolling, None, Some(4), t0);
        assert_eq!(
            find(&first, "Reconciling"),
            Some(("True".into(), "Progressing".into(), t0.to_string()))
        );
        assert_eq!(find(&first, "Ready").unwrap().0, "False");
        assert_eq!(
            find(&first, "Stalled"),
            None,
            "abnormal-true: absent until True"
        );
        assert_eq!(
            first.last_progress_time.as_deref(),
            Some(t0.to_string().as_str())
        );
        assert!(
            first
                .conditions
                .iter()
                .all(|c| c.observed_generation == Some(4))
        );
        // Read back, the status is what was written: an unchanged status is not written again.
        let read = RecordStatus::from_record(&first);
        assert_eq!(read.reconcile, rolling.reconcile);
        assert_eq!(read.last_progress, Some(t0));

        let stalled = standing(
            ReconcileState::Stalled,
            "ProgressDeadlineExceeded",
            "no progress",
        );
        let second = ManagedDaemonSetStatus::written(&stalled, Some(&first), Some(4), t1);
        assert_eq!(
            find(&second, "Stalled"),
            Some((
                "True".into(),
                "ProgressDeadlineExceeded".into(),
                t1.to_string()
            ))
        );
        assert_eq!(
            find(&second, "Reconciling"),
            Some((
                "False".into(),
                "ProgressDeadlineExceeded".into(),
                t1.to_string()
            ))
        );
        // Ready was False and stays False: its transition time stays too.
        assert_eq!(find(&second, "Ready").unwrap().2, t0.to_string());
        let read = RecordStatus::from_record(&second);
        assert_eq!(read.reconcile.as_ref().unwrap().since, Some(t1));
        let plan_view = crate::cluster::Record {
            namespace: "ns".into(),
            name: "agent".into(),
            status: Some(read),
            paused: false,
            frozen: false,
            promoted: None,
            aborted: None,
            daemonset: None,
            uid: String::new(),
            deleting: false,
            source: None,
        }
        .rollout_record();
        assert_eq!(
            plan_view.stalled,
            Some(crate::plan::Stalled {
                since: Some(t1),
                reason: "ProgressDeadlineExceeded".into(),
                message: "no progress".into(),
            })
        );

        let done = standing(ReconcileState::Current, "RolloutComplete", "all 3 nodes");
        let third = ManagedDaemonSetStatus::written(&done, Some(&second), Some(4), t2);
        assert_eq!(
            find(&third, "Stalled"),
            Some(("False".into(), "RolloutComplete".into(), t2.to_string()))
        );
        assert_eq!(find(&third, "Ready").unwrap().0, "True");
        assert_eq!(third.last_progress_time, None);
        let read = RecordStatus::from_record(&third);
        assert_eq!(read.reconcile, done.reconcile);
    }

    #[test]
    fn without_a_judgement_the_counters_decide_ready_and_reconciling() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut status = standing(ReconcileState::Current, "", "");
        status.reconcile = None;
        let written = ManagedDaemonSetStatus::written(&status, None, Some(1), t0);
        let reconciling = written
            .conditions
            .iter()
            .find(|c| c.type_ == "Reconciling")
            .unwrap();
        assert_eq!(
            (reconciling.status.as_str(), reconciling.reason.as_str()),
            ("True", "Progressing")
        );
        status.counters.updated_number_scheduled = 3;
        let written = ManagedDaemonSetStatus::written(&status, None, Some(1), t0);
        let ready = written
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("True", "RolloutComplete")
        );
    }

    #[test]
    fn paused_and_source_error_conditions_come_and_go_and_read_back() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let status = Status::default();
        let mut paused = ManagedDaemonSetStatus::from_plan(&status, Some("abc"), None, t0);
        paused.set_paused(true, None, t0);
        paused.set_source_error(Some("deploy/agent.yaml: spec.template: bad"), None, t0);
        let read = crate::cluster::RecordStatus::from_record(&paused);
        assert!(read.paused);
        assert_eq!(
            read.source_error.as_deref(),
            Some("deploy/agent.yaml: spec.template: bad")
        );
        let paused_condition = paused
            .conditions
            .iter()
            .find(|c| c.type_ == "Paused")
            .unwrap();
        assert!(
            paused_condition
                .message
                .contains("remove the annotation to resume")
        );

        let mut resumed =
            ManagedDaemonSetStatus::from_plan(&status, Some("abc"), Some(&paused), t0);
        resumed.set_paused(false, Some(&paused), t0);
        resumed.set_source_error(None, Some(&paused), t0);
        let read = crate::cluster::RecordStatus::from_record(&resumed);
        assert!(!read.paused);
        assert_eq!(read.source_error, None);
        let types: Vec<(&str, &str)> = resumed
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert!(types.contains(&("Paused", "False")), "{types:?}");
        assert!(types.contains(&("SourceError", "False")), "{types:?}");
        // Never set: never shown.
        let plain = ManagedDaemonSetStatus::from_plan(&status, Some("abc"), None, t0);
        let mut plain2 = plain.clone();
        plain2.set_paused(false, Some(&plain), t0);
        assert_eq!(plain, plain2);
    }
}

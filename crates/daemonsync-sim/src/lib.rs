//! The simulated cluster: one model of a Kubernetes cluster, used by the in-process
//! simulator (`--cluster sim:FILE`, this module's [`Sim`]) and by `daemonsync sim serve` alike.
//!
//! * [`api`]: the API server (the object store, every write with its per-kind side effects,
//!   admission, owner-reference garbage collection) and kube-controller-manager's DaemonSet
//!   controller.
//! * [`nodes`]: the nodes: their kubelets, the scheduler's binding and fit, the node
//!   lifecycle and taint eviction controllers, churn, pod garbage collection.
//! * [`serve`]: the API over HTTP on the wall clock, for kubectl and kube-rs.
//! * [`config`]: the sim file (`docs/sim.md`).
//!
//! Everything is deterministic given the seed: the clock is virtual in-process, every
//! collection is ordered, random choices come from seeded generators. Time only moves in
//! [`Cluster::wait_for_change`]: it jumps to the next scheduled event (a pod becomes ready, a
//! termination ends, a churn entry) and applies every event due then.

#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod api;
pub mod config;
mod kubelet;
mod kubelet_config;
#[cfg(test)]
mod kubelet_config_tests;
pub(crate) mod lifecycle;
pub mod nodes;
pub mod scheduler;
pub mod serve;
mod status;

pub use nodes::{NodeSim, Probe, default_start};

// The layers below, at the paths the simulator's modules name them by.
pub(crate) use daemonsync_core::{cluster, manifest, model, plan};

/// Runs a future on a current-thread runtime of its own: for tests.
#[cfg(test)]
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a test runtime")
        .block_on(fut)
}

use crate::model::{PAUSED_ANNOTATION, Timestamp};
use crate::plan::Observed;
use anyhow::{Context as _, Result};
use api::error::ApiError;
use api::events::{Involved, emit_counted};
use api::patch::PatchType;
use api::world::{DeleteParams, World, WriteParams};
use config::SimConfig;
use daemonsync_core::cluster::{
    Cluster, ClusterError, ClusterState, Event, EventType, ImagePatch, MetadataPatch, Record,
    RecordStatus,
};
use daemonsync_core::record::{ManagedDaemonSet, ManagedDaemonSetStatus, RecordSource};
use jiff::SignedDuration;
use serde_json::{Value, json};
use std::path::Path;

/// Storage of daemonsync's records.
const RECORDS: &str = "daemonsync.io/manageddaemonsets";

/// The in-process simulated cluster: the API model on a virtual clock. It is a [`Cluster`]:
/// daemonsync's executor writes to it as the live backend writes to a real API server (the
/// same requests: pod creates and deletes, the JSON patch of an in-place update, the
/// record's spec and status), and the cluster's own controllers answer.
pub struct Sim {
    world: World,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("nodes", &self.world.nodes)
            .finish()
    }
}

fn write_params() -> WriteParams {
    WriteParams {
        manager: daemonsync_core::record::FIELD_MANAGER.into(),
        ..WriteParams::default()
    }
}

/// A refusal of the simulated API as the live backend reports it. A 404 is the object's
/// absence only when the API names it (a create into a missing namespace is another 404).
fn cluster_error(e: ApiError, kind: &'static str, namespace: &str, name: &str) -> ClusterError {
    let about_it = e.details.as_ref().is_some_and(|d| d["name"] == name) && !name.is_empty();
    match e.code {
        404 if about_it => ClusterError::NotFound {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        },
        403 => ClusterError::Refused(e.message),
        // A stale write or a failed precondition; a server-side apply taking another
        // manager's fields is also a 409 Conflict, but names them as its causes, and
        // retrying the same apply cannot help (the live backend reports it as rejected).
        409 if e.reason == "Conflict" && !takes_fields(&e) => ClusterError::Conflict(format!(
            "the simulated cluster answered {} {}: {}",
            e.code, e.reason, e.message
        )),
        _ => ClusterError::Rejected(format!(
            "the simulated cluster answered {} {}: {}",
            e.code, e.reason, e.message
        )),
    }
}

/// Whether a 409 is a server-side apply's conflict with another field manager.
fn takes_fields(e: &ApiError) -> bool {
    e.details
        .as_ref()
        .and_then(|d| d["causes"].as_array())
        .is_some_and(|c| c.iter().any(|c| c["type"] == "FieldManagerConflict"))
}

impl Sim {
    /// Reads a sim file (see `docs/sim.md`) and builds the cluster at its start.
    pub fn load(path: &Path) -> Result<Sim> {
        let cfg = SimConfig::load(path)?;
        Sim::new(cfg).with_context(|| format!("in sim file {}", path.display()))
    }

    /// Builds the cluster described by `cfg` at its start (the virtual clock's start).
    pub fn new(mut cfg: SimConfig) -> Result<Sim> {
        cfg.start.get_or_insert_with(default_start);
        // No watch resumes in-process: one change of history is enough.
        Ok(Sim {
            world: World::boot(cfg, 1)?,
        })
    }

    /// The cluster's API model.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The cluster's API model, to change.
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Starts the pods of `desired` on every node they select, as daemonsync would have left
    /// them after rolling them out (the initial state of a rollout, like `running:`).
    pub fn install(&mut self, desired: &[crate::plan::Desired]) -> Result<()> {
        self.world.install_managed(desired)?;
        self.world.reconcile();
        Ok(())
    }

    /// Starts `desired` as the built-in DaemonSet controller runs it (the `apps/v1`
    /// DaemonSets and their pods on every node they select, like `builtin:`).
    pub fn install_builtin(&mut self, desired: &[crate::plan::Desired]) -> Result<()> {
        let since = self.now();
        for d in desired {
            self.world.install_builtin(d, since)?;
        }
        self.world.reconcile();
        Ok(())
    }

    /// Sets the probe called after every change of the nodes and pods.
    pub fn set_probe(&mut self, probe: Probe) {
        self.world.nodes.set_probe(probe);
    }

    /// Sets or removes the `daemonsync.io/paused: "true"` annotation of a record (creating
    /// the record when it does not exist yet), as `kubectl annotate` does.
    pub fn set_paused(&mut self, namespace: &str, name: &str, paused: bool) {
        self.annotate(
            namespace,
            name,
            PAUSED_ANNOTATION,
            paused.then(|| "true".to_string()),
        );
    }

    /// Sets or removes the `daemonsync.io/frozen: "true"` annotation of a record (creating the
    /// record when it does not exist yet), as `daemonsync freeze` and `unfreeze` do.
    pub fn set_frozen(&mut self, namespace: &str, name: &str, frozen: bool) {
        self.annotate(
            namespace,
            name,
            crate::model::FROZEN_ANNOTATION,
            frozen.then(|| "true".to_string()),
        );
    }

    /// `daemonsync promote`: the pauses after stages up to `stage` of `revision` pass.
    pub fn promote(&mut self, namespace: &str, name: &str, revision: &str, stage: u32) {
        self.annotate(
            namespace,
            name,
            crate::plan::progressive::PROMOTE_ANNOTATION,
            Some(format!("{revision}:{stage}")),
        );
    }

    /// `daemonsync abort` of `revision` (`None`: the abort is lifted, as `resume` does).
    pub fn set_aborted(&mut self, namespace: &str, name: &str, revision: Option<&str>) {
        self.annotate(
            namespace,
            name,
            crate::plan::progressive::ABORT_ANNOTATION,
            revision.map(str::to_string),
        );
    }

    /// Sets (or with `None` removes) an annotation of a record, creating the record when it
    /// does not exist yet.
    fn annotate(&mut self, namespace: &str, name: &str, key: &str, value: Option<String>) {
        let Some(kind) = self.world.registry.by_storage(RECORDS) else {
            return;
        };
        let current = match self.world.store.get(RECORDS, namespace, name) {
            Some(e) => (*e.object()).clone(),
            None => {
                let record = json!({
                    "apiVersion": crate::plan::RECORD_API_VERSION,
                    "kind": crate::plan::RECORD_KIND,
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {"daemonSet": {}},
                });
                match self
                    .world
                    .create(&kind, namespace, record, &write_params(), None)
                {
                    Ok(r) => (*r).clone(),
                    Err(_) => return,
                }
            }
        };
        let mut next = current;
        match value {
            Some(v) => next["metadata"]["annotations"][key] = json!(v),
            None => {
                if let Some(a) = next["metadata"]["annotations"].as_object_mut() {
                    a.remove(key);
                }
            }
        }
        let _ = self
            .world
            .update(&kind, namespace, name, false, next, &write_params(), None);
        self.world.reconcile();
    }

    /// Now (virtual).
    pub fn now(&self) -> Timestamp {
        self.world.now()
    }

    /// Virtual time since the start.
    pub fn elapsed(&self) -> SignedDuration {
        self.world.nodes.elapsed()
    }

    /// The start of the virtual clock.
    pub fn start(&self) -> Timestamp {
        self.world.nodes.start()
    }

    /// Pod writes daemonsync made (creates, deletes, in-place patches).
    pub fn writes(&self) -> usize {
        self.world.nodes.writes
    }

    /// Number of events still scheduled on the clock.
    pub fn scheduled(&self) -> usize {
        self.world.nodes.scheduled()
    }

    /// Advances to the next scheduled event if it is due by `deadline`, applying every event
    /// due at that instant and letting the controllers act; otherwise moves the clock to
    /// `deadline`. True when events ran.
    pub fn advance(&mut self, deadline: Timestamp) -> bool {
        self.world.advance(deadline)
    }

    /// The observed state now: the nodes, the pods (with the resourceVersion the API shows),
    /// the live `apps/v1` DaemonSets and what the records say of their rollouts.
    pub fn observed(&self) -> Observed {
        let mut observed = self.world.nodes.observed();
        for pod in observed.pods.iter_mut() {
            let stored = self.world.store.get("/pods", &pod.namespace, &pod.name);
            if let (Some(detail), Some(e)) = (pod.detail.as_mut(), stored) {
                detail.resource_version = e.stored.rv().to_string();
            }
        }
        observed.daemonsets = self
            .world
            .store
            .list(api::daemonset::DAEMONSETS, None)
            .filter_map(|e| {
                let mut ds: k8s_openapi::api::apps::v1::DaemonSet =
                    serde_json::from_value((*e.object()).clone()).ok()?;
                ds.status = None;
                Some(ds)
            })
            .collect();
        observed.revisions = self
            .world
            .store
            .list(api::daemonset::REVISIONS, None)
            .filter_map(|e| {
                let cr: k8s_openapi::api::apps::v1::ControllerRevision =
                    serde_json::from_value((*e.object()).clone()).ok()?;
                crate::plan::ownership::ControllerRevision::from_k8s(&cr)
            })
            .collect();
        observed.namespaces = self
            .world
            .store
            .list("/namespaces", None)
            .filter_map(|e| {
                let ns: k8s_openapi::api::core::v1::Namespace =
                    serde_json::from_value((*e.object()).clone()).ok()?;
                Some(crate::plan::ownership::Namespace::from_k8s(&ns))
            })
            .collect();
        observed.rollouts = self.records().iter().map(Record::rollout_record).collect();
        observed
    }

    /// The records of managed DaemonSets, sorted by namespace and name.
    fn records(&self) -> Vec<Record> {
        self.world
            .store
            .list(RECORDS, None)
            .filter_map(|e| serde_json::from_value::<ManagedDaemonSet>((*e.object()).clone()).ok())
            .map(|r| daemonsync_core::record::record_of(&r))
            .collect()
    }

    /// Events recorded on the records of managed DaemonSets, in the order they were first
    /// written, with the virtual time they were.
    pub fn events(&self) -> Vec<(Timestamp, Event)> {
        let mut events: Vec<(u64, Timestamp, Event)> = self
            .world
            .store
            .list("/events", None)
            .map(|e| e.object())
            .filter(|o| o["involvedObject"]["kind"] == crate::plan::RECORD_KIND)
            .filter_map(|o| {
                let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
                let first = o["metadata"]["uid"].as_str()?;
                let _ = first;
                let order = o["metadata"]["creationOrder"].as_u64().unwrap_or_else(|| {
                    o["metadata"]["resourceVersion"]
                        .as_str()
                        .and_then(|r| r.parse().ok())
                        .unwrap_or(0)
                });
                let at = o["firstTimestamp"].as_str()?.parse().ok()?;
                Some((
                    order,
                    at,
                    Event {
                        namespace: s(&o["involvedObject"]["namespace"]),
                        name: s(&o["involvedObject"]["name"]),
                        type_: if o["type"] == "Warning" {
                            EventType::Warning
                        } else {
                            EventType::Normal
                        },
                        reason: s(&o["reason"]),
                        message: s(&o["message"]),
                    },
                ))
            })
            .collect();
        events.sort_by_key(|(order, ..)| *order);
        events.into_iter().map(|(_, at, e)| (at, e)).collect()
    }

    fn record_uid(&self, namespace: &str, name: &str) -> Option<String> {
        self.world
            .store
            .get(RECORDS, namespace, name)
            .and_then(|e| e.object()["metadata"]["uid"].as_str().map(str::to_string))
    }

    fn pods_kind(&self) -> std::sync::Arc<api::kinds::Kind> {
        self.world.kind("", "v1", "pods")
    }

    fn records_kind(&self) -> Result<std::sync::Arc<api::kinds::Kind>, ClusterError> {
        self.world.registry.by_storage(RECORDS).ok_or_else(|| {
            ClusterError::Backend(
                "the ManagedDaemonSet CRD is not installed in the simulated cluster".into(),
            )
        })
    }

    /// Counts a pod write and lets the cluster answer it.
    fn written(&mut self) {
        self.world.nodes.writes += 1;
        self.world.reconcile();
        self.world.nodes.probed();
    }
}

impl Cluster for Sim {
    async fn observe(&mut self) -> Result<ClusterState, ClusterError> {
        Ok(ClusterState {
            observed: self.observed(),
            records: self
                .records()
                .into_iter()
                .map(std::sync::Arc::new)
                .collect(),
            config_copies: self.world.config_copies(),
            now: self.now(),
        })
    }

    async fn create_config_copy(
        &mut self,
        copy: &daemonsync_core::manifest::config::ConfigCopy,
        owner: &crate::plan::render::PodOwner,
    ) -> Result<(), ClusterError> {
        let mut owner = owner.controller_reference();
        if owner.kind == crate::plan::RECORD_KIND && owner.uid.is_empty() {
            owner.uid = self
                .record_uid(&copy.namespace, &owner.name)
                .ok_or_else(|| {
                    ClusterError::Rejected(format!(
                        "no record {}/{} to own the copy yet",
                        copy.namespace, owner.name
                    ))
                })?;
        }
        self.world
            .create_config_copy(copy, owner, &write_params())
            .map_err(|e| cluster_error(e, copy.kind.as_str(), &copy.namespace, &copy.name))?;
        self.world.reconcile();
        Ok(())
    }

    async fn delete_config_copy(
        &mut self,
        copy: &daemonsync_core::cluster::ObservedCopy,
    ) -> Result<(), ClusterError> {
        let kind = self.world.kind("", "v1", copy.kind.plural());
        let params = DeleteParams {
            uid: Some(copy.uid.clone()),
            ..DeleteParams::default()
        };
        self.world
            .delete(&kind, &copy.namespace, &copy.name, &params)
            .map_err(|e| cluster_error(e, copy.kind.as_str(), &copy.namespace, &copy.name))?;
        self.world.reconcile();
        Ok(())
    }

    async fn create_pod(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
    ) -> Result<String, ClusterError> {
        let (namespace, pod) =
            daemonsync_core::cluster::pod_to_create(pod, |ns, name| self.record_uid(ns, name))?;
        let body = serde_json::to_value(&pod)
            .map_err(|e| ClusterError::Rejected(format!("the pod is not valid JSON: {e}")))?;
        let kind = self.pods_kind();
        let created = self
            .world
            .create(&kind, &namespace, body, &write_params(), None)
            .map_err(|e| cluster_error(e, "pod", &namespace, ""))?;
        let name = created["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.written();
        Ok(name)
    }

    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        let kind = self.pods_kind();
        self.world
            .delete(&kind, namespace, name, &DeleteParams::default())
            .map_err(|e| cluster_error(e, "pod", namespace, name))?;
        self.written();
        Ok(())
    }

    async fn ensure_record(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
        source: &RecordSource,
    ) -> Result<(), ClusterError> {
        let namespace = daemonset
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = daemonset.metadata.name.clone().unwrap_or_default();
        let spec = serde_json::to_value(daemonset).unwrap_or_default();
        let unchanged = self
            .world
            .store
            .get(RECORDS, &namespace, &name)
            .is_some_and(|e| {
                let written: Option<RecordSource> =
                    serde_json::from_value(e.object()["spec"]["source"].clone()).ok();
                e.object()["spec"]["daemonSet"] == spec
                    && written.map_or(source.writer.is_none(), |s| s.same_writer(source))
            });
        if unchanged {
            return Ok(());
        }
        let record_spec = daemonsync_core::record::ManagedDaemonSetSpec::of(daemonset, source);
        let managed = record_spec.mode.as_deref() == Some("managed");
        let record = ManagedDaemonSet::new(&name, record_spec);
        let body = serde_json::to_vec(&record).unwrap_or_default();
        let kind = self.records_kind()?;
        let params = WriteParams {
            force: true,
            ..write_params()
        };
        let (written, _) = self
            .world
            .patch(
                &kind,
                &namespace,
                &name,
                false,
                PatchType::Apply,
                &body,
                &params,
            )
            .map_err(|e| cluster_error(e, "manageddaemonset", &namespace, &name))?;
        if managed {
            // Cluster Autoscaler's scale-up simulation reads the DaemonSet's overhead here.
            let uid = written["metadata"]["uid"].as_str().unwrap_or_default();
            let body = serde_json::to_vec(&daemonsync_core::record::bodies::pod_template_body(
                daemonset, uid,
            ))
            .unwrap_or_default();
            let templates = self.world.kind("", "v1", "podtemplates");
            self.world
                .patch(
                    &templates,
                    &namespace,
                    &name,
                    false,
                    PatchType::Apply,
                    &body,
                    &params,
                )
                .map_err(|e| cluster_error(e, "podtemplate", &namespace, &name))?;
        }
        self.world.reconcile();
        Ok(())
    }

    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &RecordStatus,
    ) -> Result<(), ClusterError> {
        let kind = self.records_kind()?;
        if self.world.store.get(RECORDS, namespace, name).is_none() {
            // As upstream writes status, the record is made first (the live backend needs
            // `ensure_record`; the simulator is lenient for tests that skip it).
            let record = json!({
                "apiVersion": crate::plan::RECORD_API_VERSION,
                "kind": crate::plan::RECORD_KIND,
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"daemonSet": {}},
            });
            self.world
                .create(&kind, namespace, record, &write_params(), None)
                .map_err(|e| cluster_error(e, "manageddaemonset", namespace, name))?;
        }
        let Some(entry) = self.world.store.get(RECORDS, namespace, name) else {
            return Err(ClusterError::NotFound {
                kind: "manageddaemonset",
                namespace: namespace.into(),
                name: name.into(),
            });
        };
        let current = (*entry.object()).clone();
        let previous: Option<ManagedDaemonSetStatus> =
            serde_json::from_value(current["status"].clone()).ok();
        let generation = current["metadata"]["generation"].as_i64();
        let written =
            ManagedDaemonSetStatus::written(status, previous.as_ref(), generation, self.now());
        if previous.as_ref() == Some(&written) {
            return Ok(());
        }
        let mut next = current;
        next["status"] = serde_json::to_value(&written).unwrap_or_default();
        self.world
            .update(&kind, namespace, name, true, next, &write_params(), None)
            .map_err(|e| cluster_error(e, "manageddaemonset", namespace, name))?;
        Ok(())
    }

    async fn emit_event(&mut self, event: Event) -> Result<(), ClusterError> {
        let involved = Involved {
            api_version: crate::plan::RECORD_API_VERSION.into(),
            kind: crate::plan::RECORD_KIND.into(),
            namespace: event.namespace.clone(),
            name: event.name.clone(),
            uid: self
                .record_uid(&event.namespace, &event.name)
                .unwrap_or_default(),
        };
        let type_ = match event.type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        emit_counted(
            &mut self.world,
            &involved,
            type_,
            &event.reason,
            daemonsync_core::record::FIELD_MANAGER,
            &event.message,
        );
        Ok(())
    }

    async fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &ImagePatch,
    ) -> Result<(), ClusterError> {
        let body = serde_json::to_vec(&daemonsync_core::record::bodies::image_patch(patch))
            .unwrap_or_default();
        let kind = self.pods_kind();
        self.world
            .patch(
                &kind,
                namespace,
                name,
                false,
                PatchType::Json,
                &body,
                &write_params(),
            )
            .map_err(|e| cluster_error(e, "pod", namespace, name))?;
        self.written();
        Ok(())
    }

    async fn set_pod_condition(
        &mut self,
        namespace: &str,
        name: &str,
        condition: &str,
        status: bool,
        resource_version: Option<&str>,
    ) -> Result<String, ClusterError> {
        let now = self.now();
        let patch = daemonsync_core::record::bodies::condition_patch(
            condition,
            status,
            resource_version,
            now,
        );
        let body = serde_json::to_vec(&patch).unwrap_or_default();
        let kind = self.pods_kind();
        let (stored, _) = self
            .world
            .patch(
                &kind,
                namespace,
                name,
                true,
                PatchType::Strategic,
                &body,
                &write_params(),
            )
            .map_err(|e| cluster_error(e, "pod", namespace, name))?;
        self.world.reconcile();
        self.world.nodes.probed();
        Ok(stored["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    async fn patch_pod_metadata(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &MetadataPatch,
    ) -> Result<(), ClusterError> {
        let Some(pod) = self.world.store.get("/pods", namespace, name) else {
            return Err(ClusterError::NotFound {
                kind: "pod",
                namespace: namespace.into(),
                name: name.into(),
            });
        };
        let meta = &pod.object()["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let (uid, rv) = (text(&meta["uid"]), text(&meta["resourceVersion"]));
        let record_uid = match &patch.owner {
            daemonsync_core::cluster::OwnerChange::Claim(record) => {
                self.record_uid(namespace, record.as_str()).ok_or_else(|| {
                    ClusterError::Rejected(format!(
                        "no record {namespace}/{record} to claim the pod yet"
                    ))
                })?
            }
            _ => String::new(),
        };
        let body = daemonsync_core::record::bodies::metadata_patch(patch, &uid, &rv, &record_uid);
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let kind = self.pods_kind();
        self.world
            .patch(
                &kind,
                namespace,
                name,
                false,
                PatchType::Strategic,
                &bytes,
                &write_params(),
            )
            .map_err(|e| cluster_error(e, "pod", namespace, name))?;
        self.world.reconcile();
        self.world.nodes.probed();
        Ok(())
    }

    async fn delete_daemonset(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), ClusterError> {
        let kind = self.world.kind("apps", "v1", "daemonsets");
        let params = DeleteParams {
            uid: Some(uid.to_string()),
            propagation: api::world::Propagation::Orphan,
            ..DeleteParams::default()
        };
        self.world
            .delete(&kind, namespace, name, &params)
            .map_err(|e| cluster_error(e, "daemonset", namespace, name))?;
        self.world.reconcile();
        Ok(())
    }

    async fn apply_daemonset(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
    ) -> Result<(), ClusterError> {
        let namespace = daemonset
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = daemonset.metadata.name.clone().unwrap_or_default();
        let body = serde_json::to_vec(&daemonsync_core::record::bodies::daemonset_apply_body(
            daemonset,
        ))
        .unwrap_or_default();
        let kind = self.world.kind("apps", "v1", "daemonsets");
        let params = WriteParams {
            force: true,
            ..write_params()
        };
        self.world
            .patch(
                &kind,
                &namespace,
                &name,
                false,
                PatchType::Apply,
                &body,
                &params,
            )
            .map_err(|e| cluster_error(e, "daemonset", &namespace, &name))?;
        self.world.reconcile();
        self.world.nodes.probed();
        Ok(())
    }

    async fn annotate_record(
        &mut self,
        namespace: &str,
        name: &str,
        annotations: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<(), ClusterError> {
        if self.world.store.get(RECORDS, namespace, name).is_none() {
            return Err(ClusterError::NotFound {
                kind: "manageddaemonset",
                namespace: namespace.into(),
                name: name.into(),
            });
        }
        for (key, value) in annotations {
            self.annotate(namespace, name, key, value.clone());
        }
        Ok(())
    }

    async fn delete_record(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        let kind = self.records_kind()?;
        let params = DeleteParams {
            propagation: api::world::Propagation::Orphan,
            ..DeleteParams::default()
        };
        self.world
            .delete(&kind, namespace, name, &params)
            .map_err(|e| cluster_error(e, "manageddaemonset", namespace, name))?;
        self.world.reconcile();
        Ok(())
    }

    async fn remove_node_taint(
        &mut self,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
    ) -> Result<bool, ClusterError> {
        use daemonsync_core::record::bodies::{taint_index, taint_removal_patch};
        let kind = self.world.kind("", "v1", "nodes");
        for _ in 0..daemonsync_core::cluster::TAINT_ATTEMPTS {
            let Some(current) = self.world.store.get("/nodes", "", node) else {
                return Err(ClusterError::NotFound {
                    kind: "node",
                    namespace: String::new(),
                    name: node.into(),
                });
            };
            let Some(index) = taint_index(&current.object(), key, effect.as_str()) else {
                return Ok(false);
            };
            let resource_version = current.object()["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let body = serde_json::to_vec(&taint_removal_patch(&resource_version, index))
                .unwrap_or_default();
            match self.world.patch(
                &kind,
                "",
                node,
                false,
                PatchType::Json,
                &body,
                &write_params(),
            ) {
                Ok(_) => {
                    self.world.reconcile();
                    self.world.nodes.probed();
                    return Ok(true);
                }
                // The node changed since it was read: read it again.
                Err(e) if e.code == 409 || e.code == 422 => continue,
                Err(e) => return Err(cluster_error(e, "node", "", node)),
            }
        }
        Err(ClusterError::Rejected(format!(
            "node {node} changed between each read and patch; taint {key} is removed at the \
             next step"
        )))
    }

    async fn wait_for_change(&mut self, deadline: Timestamp) -> Result<bool, ClusterError> {
        Ok(self.advance(deadline))
    }
}

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod kubelet_tests;
#[cfg(test)]
mod tests;

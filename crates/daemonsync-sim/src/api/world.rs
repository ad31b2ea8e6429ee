//! The served cluster's state and every write to it: generic create, update, patch and
//! delete over the kinds table, with per-kind side effects (pods and nodes go through the
//! simulator, CRDs register kinds, namespaces take their contents with them).

use super::convert::{from_view, to_view};
use super::error::ApiError;
use super::kinds::{Behaviour, Kind, Registry};
use super::patch::{self, PatchType};
use super::store::{Owners, Store};
use crate::NodeSim;
use crate::config::{DEFAULT_KUBE_VERSION, KubeVersion};
use crate::manifest::names::{self, Dots};
use crate::model::Timestamp;
use serde_json::{Value, json};
use std::sync::Arc;

/// Characters of generated name suffixes and uids.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Finalizer of an owner waiting for its blocking dependents (foreground deletion).
pub const FOREGROUND: &str = "foregroundDeletion";
/// Finalizer of an owner whose dependents lose their reference to it before it goes.
pub const ORPHAN: &str = "orphan";

/// Options of a write (`?fieldManager=&dryRun=All&force=true`).
#[derive(Debug, Clone, Default)]
pub struct WriteParams {
    /// The field manager (from the query, else the client's User-Agent).
    pub manager: String,
    /// `dryRun=All`: evaluate, do not persist.
    pub dry_run: bool,
    /// `force=true` (server-side apply takes conflicting fields).
    pub force: bool,
}

/// How a deletion treats dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    /// Delete the owner now, its dependents afterwards.
    #[default]
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
    /// Leave dependents, without the owner reference.
    Orphan,
}

/// `DeleteOptions`, as far as they matter here.
#[derive(Debug, Clone, Default)]
pub struct DeleteParams {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `propagationPolicy` (or `orphanDependents`).
    pub propagation: Propagation,
    /// `gracePeriodSeconds`: 0 removes a pod at once (`kubectl delete --force`).
    pub grace_period: Option<i64>,
    /// `dryRun`.
    pub dry_run: bool,
}

impl DeleteParams {
    /// Reads a `DeleteOptions` body (`{}` when absent).
    pub fn from_body(body: &Value) -> Result<Self, ApiError> {
        let policy = match body["propagationPolicy"].as_str() {
            None if body["orphanDependents"] == Value::Bool(true) => Propagation::Orphan,
            None | Some("Background") => Propagation::Background,
            Some("Foreground") => Propagation::Foreground,
            Some("Orphan") => Propagation::Orphan,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "unsupported propagationPolicy {other:?}: use Background, Foreground or Orphan"
                )));
            }
        };
        let s = |v: &Value| v.as_str().map(String::from);
        Ok(DeleteParams {
            uid: s(&body["preconditions"]["uid"]),
            resource_version: s(&body["preconditions"]["resourceVersion"]),
            propagation: policy,
            grace_period: body["gracePeriodSeconds"].as_i64(),
            dry_run: body["dryRun"].as_array().is_some_and(|a| !a.is_empty()),
        })
    }
}

/// The whole served state, behind one lock.
pub struct World {
    /// Served kinds.
    pub registry: Registry,
    /// Objects.
    pub store: Store,
    /// The simulated nodes, their pods and kubelets.
    pub nodes: NodeSim,
    /// What the store last showed of the simulator's pods and nodes.
    pub engine: super::engine::Engine,
    rng: u64,
    /// The Kubernetes version the cluster reports.
    pub version: KubeVersion,
    /// Admission plugins and webhooks.
    pub admission: super::admission::Admission,
    /// The store's resourceVersion when the controllers last looked.
    reconciled: u64,
    /// What the event recorders of the cluster's components remember.
    pub(crate) recorder: super::events::Recorder,
    /// The DaemonSet controller's work queue: the retries of failed syncs.
    pub(crate) daemonset_queue: super::daemonset::Queue,
    /// The creation time a create gives instead of now ([`World::create_dated`]).
    created_at: Option<Timestamp>,
    /// The store's last change of ConfigMaps and Secrets the kubelets were shown.
    pub(crate) config_seen: u64,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("rv", &self.store.rv())
            .field("sim", &self.nodes)
            .finish()
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_str()
        .unwrap_or_default()
}

/// The object without the fields a write does not decide (metadata, status).
fn content(v: &Value) -> Value {
    let mut c = v.clone();
    if let Value::Object(m) = &mut c {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    c
}

fn without_rv(v: &Value) -> Value {
    let mut c = v.clone();
    if let Some(m) = c["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    c
}

impl World {
    /// A world over `sim`, keeping `history` changes for watches.
    pub fn new(nodes: NodeSim, history: usize, seed: u64) -> Self {
        let version = nodes.cfg.version.unwrap_or(DEFAULT_KUBE_VERSION);
        let admission = super::admission::Admission::new(&nodes.cfg.admission);
        World {
            registry: Registry::new(),
            store: Store::new(history),
            nodes,
            engine: super::engine::Engine::new(format!("v{version}")),
            rng: seed ^ 0x5EED_5EED_5EED_5EED,
            version,
            admission,
            reconciled: 0,
            recorder: Default::default(),
            daemonset_queue: Default::default(),
            created_at: None,
            config_seen: 0,
        }
    }

    /// The cluster's now (the simulator's clock, which follows the wall clock).
    pub fn now(&self) -> Timestamp {
        self.nodes.now()
    }

    /// The next pseudo-random number.
    pub fn next_random(&mut self) -> u64 {
        crate::nodes::splitmix64(&mut self.rng)
    }

    /// A fresh uid (UUID-shaped).
    pub fn new_uid(&mut self) -> String {
        let (a, b) = (self.next_random(), self.next_random());
        let hex = format!("{a:016x}{b:016x}");
        format!(
            "{}-{}-4{}-a{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[13..16],
            &hex[17..20],
            &hex[20..32]
        )
    }

    fn suffix(&mut self) -> String {
        let mut r = self.next_random();
        (0..5)
            .map(|_| {
                let c = ALPHABET[(r % ALPHABET.len() as u64) as usize] as char;
                r /= ALPHABET.len() as u64;
                c
            })
            .collect()
    }

    /// Runs the simulated nodes up to the wall clock, shows what changed, and lets the
    /// controllers act on it (`sim serve`).
    pub fn tick(&mut self, now: Timestamp) {
        if self.nodes.catch_up(now) {
            self.project();
        }
        self.reconcile();
    }

    /// Moves the virtual clock to the next scheduled event if it is due by `deadline`
    /// (else to `deadline`), shows what changed and lets the controllers act on it (the
    /// in-process simulator). True when events ran.
    pub fn advance(&mut self, deadline: Timestamp) -> bool {
        let ran = self.nodes.advance(deadline);
        if ran {
            self.project();
        }
        self.reconcile();
        ran
    }

    /// Projects the simulator's pods and nodes onto the store, records the events of the
    /// scheduler and node controllers, then collects garbage.
    pub fn project(&mut self) {
        super::engine::project(self);
        super::events::record_node_events(self);
        super::gc::collect(self);
    }

    /// The control plane's loop: kube-controller-manager's controllers look at what changed
    /// since they last did and act, until nothing more changes (bounded: a controller that
    /// keeps writing is stopped after a few passes and tried again on the next change).
    pub fn reconcile(&mut self) {
        self.sync_config_view();
        for _ in 0..16 {
            let changed = self.relevant_change();
            if changed <= self.reconciled && !self.nodes.take_wake() {
                return;
            }
            self.reconciled = changed;
            super::daemonset::sync_all(self);
            super::disruption::sync_budgets(self);
            self.project();
        }
    }

    /// The resourceVersion of the last change the controllers watch (events are not one).
    fn relevant_change(&self) -> u64 {
        [
            "/pods",
            "/nodes",
            "/namespaces",
            super::daemonset::DAEMONSETS,
            super::daemonset::REVISIONS,
            super::disruption::BUDGETS,
        ]
        .iter()
        .map(|s| self.store.last_change(s))
        .max()
        .unwrap_or(0)
    }

    /// The stored object or 404.
    pub fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        self.store
            .get(&kind.storage, namespace, name)
            .map(|e| e.object())
            .ok_or_else(|| ApiError::not_found(&kind.plural, &kind.group, name))
    }

    fn check_namespace_exists(&self, kind: &Kind, namespace: &str) -> Result<(), ApiError> {
        if kind.namespaced && self.store.get("/namespaces", "", namespace).is_none() {
            return Err(ApiError::not_found("namespaces", "", namespace));
        }
        Ok(())
    }

    fn validate(&self, kind: &Kind, obj: &Value) -> Result<(), ApiError> {
        let name = str_at(obj, &["metadata", "name"]);
        let mut causes = Vec::new();
        // Dots anywhere inside: looser than upstream's `IsDNS1123Subdomain`, which holds each
        // part between dots to a label.
        if !names::is_rfc1123_name(name, 253, Dots::Ends) {
            causes.push(("metadata.name".to_string(), format!("Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")));
        }
        for (i, r) in obj["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for field in ["apiVersion", "kind", "name", "uid"] {
                if str_at(r, &[field]).is_empty() {
                    causes.push((
                        format!("metadata.ownerReferences[{i}].{field}"),
                        "Required value".to_string(),
                    ));
                }
            }
        }
        if kind.behaviour == Behaviour::Namespaces {
            // Pod Security admission refuses a namespace whose policy labels it cannot read.
            let labels: std::collections::BTreeMap<String, String> =
                serde_json::from_value(obj["metadata"]["labels"].clone()).unwrap_or_default();
            if let Err(why) = crate::plan::podsecurity::Policy::from_namespace_labels(&labels) {
                let (field, message) = why
                    .trim_start_matches('[')
                    .split_once(": ")
                    .map(|(f, m)| (f.to_string(), m.trim_end_matches(']').to_string()))
                    .unwrap_or_else(|| ("metadata.labels".into(), why.clone()));
                causes.push((field, message));
            }
        }
        if kind.behaviour == Behaviour::Pods {
            let containers = obj["spec"]["containers"].as_array();
            if containers.is_none_or(|c| c.is_empty()) {
                causes.push(("spec.containers".into(), "Required value".into()));
            }
            for (i, c) in containers.into_iter().flatten().enumerate() {
                for field in ["name", "image"] {
                    if str_at(c, &[field]).is_empty() {
                        causes.push((
                            format!("spec.containers[{i}].{field}"),
                            "Required value".into(),
                        ));
                    }
                }
            }
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(&kind.kind, &kind.group, name, &causes))
        }
    }

    /// Checks `apiVersion`/`kind` of a written body against the URL's kind.
    fn check_type(kind: &Kind, body: &Value) -> Result<(), ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        let (av, k) = (str_at(body, &["apiVersion"]), str_at(body, &["kind"]));
        if (!av.is_empty() && av != kind.api_version()) || (!k.is_empty() && k != kind.kind) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({}) or the kind ({k}) the expected kind ({})",
                kind.api_version(),
                kind.kind
            )));
        }
        Ok(())
    }

    /// POST: creates an object in `namespace` (from the URL).
    pub fn create(
        &mut self,
        kind: &Kind,
        namespace: &str,
        body: Value,
        params: &WriteParams,
        owners: Option<Owners>,
    ) -> Result<Arc<Value>, ApiError> {
        Self::check_type(kind, &body)?;
        let mut obj = from_view(kind, body);
        let body_ns = str_at(&obj, &["metadata", "namespace"]).to_string();
        if kind.namespaced {
            if !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            obj["metadata"]["namespace"] = json!(namespace);
            self.check_namespace_exists(kind, namespace)?;
        } else if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        let name = str_at(&obj, &["metadata", "name"]).to_string();
        let generate = str_at(&obj, &["metadata", "generateName"]).to_string();
        if name.is_empty() {
            if generate.is_empty() {
                return Err(ApiError::invalid(
                    &kind.kind,
                    &kind.group,
                    "",
                    &[(
                        "metadata.name".into(),
                        "Required value: name or generateName is required".into(),
                    )],
                ));
            }
            // Pods are named by the simulator's seeded generator, as in the in-process sim.
            let generated = if kind.behaviour == Behaviour::Pods {
                self.nodes.unique_name(namespace, &generate)
            } else {
                format!("{generate}{}", self.suffix())
            };
            obj["metadata"]["name"] = json!(generated);
        }
        if kind.behaviour == Behaviour::Pods {
            super::admission::default_pod(&mut obj);
            super::admission::default_toleration_seconds(&mut obj);
        }
        if kind.behaviour == Behaviour::Nodes {
            super::admission::taint_new_node_not_ready(&mut obj);
        }
        if kind.behaviour == Behaviour::Namespaces {
            // The API server's defaulting labels every namespace with its name.
            let name = str_at(&obj, &["metadata", "name"]).to_string();
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
        }
        self.validate(kind, &obj)?;
        if kind.behaviour == Behaviour::DaemonSets {
            obj = super::daemonset::prepare_create(kind, obj)?;
        }
        let name = str_at(&obj, &["metadata", "name"]).to_string();
        if self
            .store
            .get(&kind.storage, namespace_of(kind, namespace), &name)
            .is_some()
        {
            return Err(ApiError::already_exists(&kind.plural, &kind.group, &name));
        }
        self.admit("create", kind, namespace, &obj, None)?;
        let now = self.created_at.unwrap_or_else(|| self.now());
        let uid = self.new_uid();
        let meta = obj["metadata"].as_object_mut().expect("validated");
        meta.insert("uid".into(), json!(uid));
        meta.insert("creationTimestamp".into(), json!(super::api_time(now)));
        meta.insert("generation".into(), json!(1));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("resourceVersion");
        meta.remove("managedFields");
        if params.dry_run {
            return Ok(Arc::new(obj));
        }
        match kind.behaviour {
            Behaviour::Pods => super::engine::create_pod(self, kind, obj, owners),
            Behaviour::Nodes => {
                let obj = super::engine::kubelet_registers(self, obj);
                let stored = self.store.put(&kind.storage, obj, owners);
                super::engine::node_written(self, &stored);
                Ok(stored)
            }
            Behaviour::Crds => {
                let obj = self.register_crd(kind, obj)?;
                Ok(self.store.put(&kind.storage, obj, owners))
            }
            Behaviour::Namespaces => {
                obj["spec"]["finalizers"] = json!(["kubernetes"]);
                obj["status"] = json!({"phase": "Active"});
                Ok(self.store.put(&kind.storage, obj, owners))
            }
            Behaviour::Plain | Behaviour::DaemonSets => {
                Ok(self.store.put(&kind.storage, obj, owners))
            }
        }
    }

    /// A create dated `at` instead of now: what start-up creates as having existed before the
    /// server started (a `builtin:` DaemonSet and its ControllerRevision, as old as their pods).
    pub(crate) fn create_dated(
        &mut self,
        at: Timestamp,
        kind: &Kind,
        namespace: &str,
        body: Value,
        params: &WriteParams,
    ) -> Result<Arc<Value>, ApiError> {
        self.created_at = Some(at);
        let created = self.create(kind, namespace, body, params, None);
        self.created_at = None;
        created
    }

    /// The validating admission plugins and webhooks for a write of `obj` (`subresource`:
    /// `status`, or none). Pod Security judges pod creates by their namespace's labels.
    fn admit(
        &self,
        verb: &str,
        kind: &Kind,
        namespace: &str,
        obj: &Value,
        subresource: Option<&str>,
    ) -> Result<(), ApiError> {
        if verb == "create" && kind.behaviour == Behaviour::Pods {
            let labels = self
                .store
                .get("/namespaces", "", namespace)
                .map(|e| e.object()["metadata"]["labels"].clone())
                .unwrap_or_default();
            super::admission::pod_security(&labels, obj)?;
        }
        self.admission.webhooks(verb, kind, subresource)
    }

    fn register_crd(&mut self, kind: &Kind, mut obj: Value) -> Result<Value, ApiError> {
        let kinds = super::kinds::from_crd(&obj).map_err(|why| {
            ApiError::invalid(
                &kind.kind,
                &kind.group,
                str_at(&obj, &["metadata", "name"]),
                &[("spec".into(), why)],
            )
        })?;
        let expected = format!("{}.{}", kinds[0].plural, kinds[0].group);
        let name = str_at(&obj, &["metadata", "name"]).to_string();
        if name != expected {
            return Err(ApiError::invalid(
                &kind.kind,
                &kind.group,
                &name,
                &[(
                    "metadata.name".into(),
                    format!(
                        "Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group ({expected})"
                    ),
                )],
            ));
        }
        let storage = kinds[0].storage.clone();
        let now = super::api_time(self.now());
        let condition = |t: &str, reason: &str, message: &str| json!({"type": t, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now});
        let stored_version = obj["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["storage"] == Value::Bool(true))
            .map(|v| v["name"].clone())
            .unwrap_or_else(|| json!(kinds[0].version));
        obj["status"] = json!({
            "conditions": [
                condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "acceptedNames": obj["spec"]["names"].clone(),
            "storedVersions": [stored_version],
        });
        self.registry.set_custom(&storage, kinds);
        Ok(obj)
    }

    /// PUT (or the result of a patch): replaces an object, or only its status.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        status_only: bool,
        body: Value,
        params: &WriteParams,
        owners: Option<Owners>,
    ) -> Result<Arc<Value>, ApiError> {
        Self::check_type(kind, &body)?;
        let ns = namespace_of(kind, namespace);
        let entry = self
            .store
            .get(&kind.storage, ns, name)
            .ok_or_else(|| ApiError::not_found(&kind.plural, &kind.group, name))?;
        let current = entry.object();
        let mut owners_now = owners.clone().unwrap_or_else(|| entry.owners.clone());
        let written = from_view(kind, body);
        let body_name = str_at(&written, &["metadata", "name"]);
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let body_uid = str_at(&written, &["metadata", "uid"]);
        let uid = str_at(&current, &["metadata", "uid"]);
        if !body_uid.is_empty() && body_uid != uid {
            return Err(ApiError::conflict(
                &kind.plural,
                &kind.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {uid}"
                ),
            ));
        }
        let body_rv = str_at(&written, &["metadata", "resourceVersion"]);
        if !body_rv.is_empty() && body_rv != str_at(&current, &["metadata", "resourceVersion"]) {
            return Err(ApiError::conflict(
                &kind.plural,
                &kind.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        let mut next = if status_only {
            let mut n = (*current).clone();
            n["status"] = written["status"].clone();
            n
        } else {
            let mut n = written;
            if kind.status {
                match current.get("status") {
                    Some(s) => n["status"] = s.clone(),
                    None => {
                        if let Some(m) = n.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            n
        };
        // Fields the server decides.
        let meta = next["metadata"]
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        for key in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
            "name",
        ] {
            match current["metadata"].get(key) {
                Some(v) => meta.insert(key.into(), v.clone()),
                None => meta.remove(key),
            };
        }
        meta.remove("managedFields");
        meta.insert(
            "resourceVersion".into(),
            current["metadata"]["resourceVersion"].clone(),
        );
        if !status_only && content(&next) != content(&current) {
            let generation = current["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
            next["metadata"]["generation"] = json!(generation);
        }
        if kind.behaviour == Behaviour::Pods {
            let (old, new) = (
                str_at(&current, &["spec", "nodeName"]),
                str_at(&next, &["spec", "nodeName"]),
            );
            if !old.is_empty() && old != new {
                return Err(ApiError::invalid(
                    &kind.kind,
                    &kind.group,
                    name,
                    &[(
                        "spec.nodeName".into(),
                        "Forbidden: pod updates may not change the node".into(),
                    )],
                ));
            }
        }
        let images = if kind.behaviour == Behaviour::Pods && !status_only {
            super::engine::check_pod_update(&current, &next)
                .map_err(|cause| ApiError::invalid(&kind.kind, &kind.group, name, &[cause]))?
        } else {
            Vec::new()
        };
        if kind.behaviour == Behaviour::Nodes {
            next = super::engine::cordon_taint(next, self.now());
        }
        if kind.behaviour == Behaviour::Namespaces {
            next["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
        }
        if let Some(config) = super::config::kind_of(&kind.storage) {
            let causes = super::config::check_update(config, &current, &next);
            if !causes.is_empty() {
                return Err(ApiError::invalid(&kind.kind, &kind.group, name, &causes));
            }
        }
        self.validate(kind, &next)?;
        if kind.behaviour == Behaviour::DaemonSets && !status_only {
            next = super::daemonset::prepare_update(kind, &current, next)?;
        }
        self.admit("update", kind, ns, &next, status_only.then_some("status"))?;
        if without_rv(&next) == without_rv(&current) && owners.is_none() {
            return Ok(current);
        }
        if params.dry_run {
            return Ok(Arc::new(next));
        }
        if owners.is_none() {
            patch::record_update(&mut owners_now, &current, &next, &params.manager);
        }
        if kind.behaviour == Behaviour::Crds {
            next = self.register_crd(kind, next)?;
        }
        if kind.behaviour == Behaviour::Pods {
            let key = (ns.to_string(), name.to_string());
            next = super::engine::pod_updated(self, &key, next, status_only, &images);
        }
        let finalized = next["metadata"]["deletionTimestamp"].is_string()
            && next["metadata"]["finalizers"]
                .as_array()
                .is_none_or(|f| f.is_empty());
        let stored = self.store.put(&kind.storage, next, Some(owners_now));
        match kind.behaviour {
            Behaviour::Pods => super::engine::pod_written(self, &stored),
            Behaviour::Nodes => super::engine::node_written(self, &stored),
            _ => {}
        }
        if finalized {
            self.remove(kind, ns, name);
        }
        Ok(stored)
    }

    /// PATCH of any type.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        status_only: bool,
        type_: PatchType,
        body: &[u8],
        params: &WriteParams,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        if type_ == PatchType::Strategic && !kind.builtin {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
            ));
        }
        if type_ == PatchType::Apply {
            return self.server_side_apply(kind, namespace, name, status_only, body, params);
        }
        let patch: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?;
        let current = self.get(kind, namespace_of(kind, namespace), name)?;
        let mut view = to_view(kind, &current);
        match type_ {
            PatchType::Merge => patch::merge(&mut view, &patch),
            PatchType::Strategic => patch::strategic(&mut view, &patch),
            PatchType::Json => patch::json_patch(&mut view, &patch).map_err(|e| match e {
                patch::JsonPatchError::Invalid(why) => ApiError::bad_request(why),
                patch::JsonPatchError::Failed(_) => ApiError::unprocessable(),
            })?,
            PatchType::Apply => unreachable!("handled above"),
        }
        Ok((
            self.update(kind, namespace, name, status_only, view, params, None)?,
            false,
        ))
    }

    fn server_side_apply(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        status_only: bool,
        body: &[u8],
        params: &WriteParams,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        if params.manager.is_empty() {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml: fieldManager is required for apply requests",
            ));
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("the apply body is not UTF-8"))?;
        let applied: Value = serde_json::from_str(text)
            .or_else(|_| serde_saphyr::from_str(text))
            .map_err(|e| {
                ApiError::bad_request(format!("the apply body is neither JSON nor YAML: {e}"))
            })?;
        Self::check_type(kind, &applied)?;
        let applied_name = str_at(&applied, &["metadata", "name"]);
        if !applied_name.is_empty() && applied_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({applied_name}) does not match the name on the URL ({name})"
            )));
        }
        let ns = namespace_of(kind, namespace);
        match self.store.get(&kind.storage, ns, name) {
            None => {
                let mut owners = Owners::new();
                let mut obj = patch::apply(
                    None,
                    &mut owners,
                    &applied,
                    &params.manager,
                    true,
                    patch::Scope::Whole,
                )
                .expect("forced apply never conflicts");
                obj["metadata"]["name"] = json!(name);
                obj["apiVersion"] = json!(kind.api_version());
                obj["kind"] = json!(kind.kind);
                Ok((
                    self.create(kind, namespace, obj, params, Some(owners))?,
                    true,
                ))
            }
            Some(entry) => {
                let mut owners = entry.owners.clone();
                let view = to_view(kind, &entry.object());
                let scope = match (kind.status, status_only) {
                    (_, true) => patch::Scope::Status,
                    (true, false) => patch::Scope::Main,
                    (false, false) => patch::Scope::Whole,
                };
                let merged = patch::apply(
                    Some(&view),
                    &mut owners,
                    &applied,
                    &params.manager,
                    params.force,
                    scope,
                )
                .map_err(|conflicts| {
                    ApiError::apply_conflict(&kind.plural, &kind.group, name, &conflicts)
                })?;
                Ok((
                    self.update(
                        kind,
                        namespace,
                        name,
                        status_only,
                        merged,
                        params,
                        Some(owners),
                    )?,
                    false,
                ))
            }
        }
    }

    /// DELETE with preconditions and a propagation policy. Returns the object's last state.
    pub fn delete(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        params: &DeleteParams,
    ) -> Result<Arc<Value>, ApiError> {
        let ns = namespace_of(kind, namespace).to_string();
        let current = self.get(kind, &ns, name)?;
        let meta = &current["metadata"];
        if let Some(uid) = &params.uid
            && uid != str_at(meta, &["uid"])
        {
            return Err(ApiError::conflict(
                &kind.plural,
                &kind.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    str_at(meta, &["uid"])
                ),
            ));
        }
        if let Some(rv) = &params.resource_version
            && rv != str_at(meta, &["resourceVersion"])
        {
            return Err(ApiError::conflict(
                &kind.plural,
                &kind.group,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    str_at(meta, &["resourceVersion"])
                ),
            ));
        }
        self.admit("delete", kind, &ns, &current, None)?;
        if params.dry_run {
            return Ok(current);
        }
        let force_pod = kind.behaviour == Behaviour::Pods && params.grace_period == Some(0);
        if meta["deletionTimestamp"].is_string() && !force_pod {
            return Ok(current);
        }
        let mut finalizers: Vec<Value> = meta["finalizers"].as_array().cloned().unwrap_or_default();
        // As the API server does, the propagation policy becomes a finalizer the garbage
        // collector works off: `orphan` (it clears the dependents' references first) or
        // `foregroundDeletion` (it deletes them first).
        let finalizer = match params.propagation {
            Propagation::Foreground => Some(FOREGROUND),
            Propagation::Orphan => Some(ORPHAN),
            Propagation::Background => None,
        };
        if let Some(f) = finalizer
            && !finalizers.contains(&json!(f))
            && !force_pod
        {
            finalizers.push(json!(f));
        }
        let last = if !finalizers.is_empty() && !force_pod {
            let mut next = (*current).clone();
            next["metadata"]["finalizers"] = Value::Array(finalizers);
            next["metadata"]["deletionTimestamp"] = json!(super::api_time(self.now()));
            next["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            self.store.put(&kind.storage, next, None)
        } else {
            match kind.behaviour {
                Behaviour::Pods => {
                    super::engine::delete_pod(self, &ns, name, force_pod, params.grace_period)
                }
                _ => self.remove(kind, &ns, name).unwrap_or(current),
            }
        };
        super::gc::collect(self);
        Ok(self
            .store
            .get(&kind.storage, &ns, name)
            .map(|e| e.object())
            .unwrap_or(last))
    }

    /// Removes an object now (its finalizers are done), with the kind's side effects.
    pub fn remove(&mut self, kind: &Kind, namespace: &str, name: &str) -> Option<Arc<Value>> {
        match kind.behaviour {
            Behaviour::Crds => {
                let crd = self.store.get(&kind.storage, "", name)?.object();
                if let Ok(kinds) = super::kinds::from_crd(&crd) {
                    let storage = kinds[0].storage.clone();
                    let keys: Vec<(String, String)> = self
                        .store
                        .list(&storage, None)
                        .map(|e| {
                            (
                                e.stored.namespace().to_string(),
                                e.stored.name().to_string(),
                            )
                        })
                        .collect();
                    for (ns, n) in keys {
                        self.store.remove(&storage, &ns, &n);
                    }
                    self.registry.set_custom(&storage, Vec::new());
                }
            }
            Behaviour::Namespaces => {
                let kinds: Vec<Arc<Kind>> = self
                    .registry
                    .all()
                    .iter()
                    .filter(|k| k.namespaced)
                    .cloned()
                    .collect();
                let mut seen = Vec::new();
                for k in kinds {
                    if seen.contains(&k.storage) {
                        continue;
                    }
                    seen.push(k.storage.clone());
                    let names: Vec<String> = self
                        .store
                        .list(&k.storage, Some(name))
                        .map(|e| e.stored.name().to_string())
                        .collect();
                    for n in names {
                        let _ = self.delete(&k, name, &n, &DeleteParams::default());
                    }
                }
            }
            Behaviour::Nodes => {
                let removed = self.store.remove(&kind.storage, namespace, name);
                super::engine::node_removed(self, name);
                return removed;
            }
            Behaviour::Pods => {
                super::engine::forget_pod(self, namespace, name);
            }
            Behaviour::Plain | Behaviour::DaemonSets => {}
        }
        self.store.remove(&kind.storage, namespace, name)
    }
}

/// The namespace key of an object of `kind` (empty for cluster-scoped kinds).
pub fn namespace_of<'a>(kind: &Kind, namespace: &'a str) -> &'a str {
    if kind.namespaced { namespace } else { "" }
}

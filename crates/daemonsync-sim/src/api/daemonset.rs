//! `apps/v1` DaemonSets in the simulated cluster: the API server's registry strategy
//! (`pkg/registry/apps/daemonset/strategy.go`: defaulting, validation, the immutable
//! selector, `generation` and the template generation annotation) and kube-controller-
//! manager's DaemonSet controller (`pkg/controller/daemon/`).
//!
//! The controller's decisions are daemonsync's planner (the same upstream semantics, one
//! copy): [`crate::plan::plan_builtin`] gives the step of one sync — creates and deletes from
//! `manage`, else the rolling update — and the status counters. Around it the controller
//! does what upstream does: claims its pods and ControllerRevisions (adopting orphans that
//! match its selector, releasing owned ones that no longer do, never touching another
//! controller's), keeps one ControllerRevision per template (`NAME-HASH`, its own hash of the
//! template, not daemonsync's), labels its pods `controller-revision-hash` and
//! `pod-template-generation`, records `SuccessfulCreate` / `SuccessfulDelete` /
//! `FailedCreate` events, writes `status` with `observedGeneration`, and trims the history to
//! `revisionHistoryLimit`.
//!
//! It runs synchronously after every change (upstream's informers deliver within
//! milliseconds): a deleted pod's replacement is created as soon as the deletion ends. A
//! sync that fails (a pod create the API server refuses) is retried as upstream's work queue
//! retries it ([`Queue`]): after a backoff that doubles with every failure, or sooner when
//! the DaemonSet, its pods or the nodes change.

use super::error::ApiError;
use super::events::{Involved, emit};
use super::kinds::Kind;
use super::world::{DeleteParams, World, WriteParams};
use crate::model::{
    LabelSelector, Pod, REVISION_HASH_LABEL, TEMPLATE_GENERATION_ANNOTATION, Timestamp,
};
use crate::plan::render::PodOwner;
use crate::plan::{DaemonSetSpec, Observed};
use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Storage of `apps/v1` DaemonSets.
pub const DAEMONSETS: &str = "apps/daemonsets";
/// Storage of `apps/v1` ControllerRevisions.
pub const REVISIONS: &str = "apps/controllerrevisions";
/// The field manager (and event source) of the controller's writes.
pub const CONTROLLER: &str = "daemonset-controller";

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_str()
        .unwrap_or_default()
}

/// A 422 from validation errors.
fn invalid(kind: &Kind, name: &str, errors: &[crate::manifest::FieldError]) -> ApiError {
    let causes: Vec<(String, String)> = errors
        .iter()
        .map(|e| {
            let text = e.to_string();
            let message = text
                .strip_prefix(&format!("{}: ", e.path))
                .unwrap_or(&text)
                .to_string();
            (e.path.clone(), message)
        })
        .collect();
    ApiError::invalid(&kind.kind, &kind.group, name, &causes)
}

fn typed(obj: &Value) -> Option<DaemonSet> {
    serde_json::from_value(obj.clone()).ok()
}

/// The DaemonSet with the API server's defaults, as JSON, keeping metadata and status as
/// they were (defaulting touches the spec only).
fn defaulted(kind: &Kind, obj: &Value) -> Result<(DaemonSet, Value), ApiError> {
    let name = str_at(obj, &["metadata", "name"]);
    let mut ds = typed(obj).ok_or_else(|| {
        ApiError::invalid(
            &kind.kind,
            &kind.group,
            name,
            &[("spec".into(), "not a valid DaemonSet".into())],
        )
    })?;
    crate::manifest::apply_defaults(&mut ds);
    let mut out = obj.clone();
    out["spec"] = serde_json::to_value(&ds.spec).unwrap_or_default();
    Ok((ds, out))
}

fn set_template_generation(obj: &mut Value, generation: i64) {
    obj["metadata"]["annotations"][TEMPLATE_GENERATION_ANNOTATION] = json!(generation.to_string());
}

fn template_generation(obj: &Value) -> i64 {
    str_at(
        obj,
        &["metadata", "annotations", TEMPLATE_GENERATION_ANNOTATION],
    )
    .parse()
    .unwrap_or(1)
}

/// The registry strategy of a create: defaults, validation, template generation 1.
pub fn prepare_create(kind: &Kind, obj: Value) -> Result<Value, ApiError> {
    let (ds, mut out) = defaulted(kind, &obj)?;
    let errors = crate::manifest::validate(&ds);
    if !errors.is_empty() {
        return Err(invalid(kind, str_at(&obj, &["metadata", "name"]), &errors));
    }
    if let Some(status) = out.as_object_mut() {
        status.remove("status");
    }
    set_template_generation(&mut out, 1);
    Ok(out)
}

/// The registry strategy of an update of the spec: defaults, validation (the selector is
/// immutable), and the generations a template change or another spec change bumps.
pub fn prepare_update(kind: &Kind, current: &Value, next: Value) -> Result<Value, ApiError> {
    let name = str_at(current, &["metadata", "name"]).to_string();
    let old = typed(current).unwrap_or_default();
    let (new, mut out) = defaulted(kind, &next)?;
    let errors = crate::manifest::validate_update(&old, &new);
    if !errors.is_empty() {
        return Err(invalid(kind, &name, &errors));
    }
    let generations = (
        current["metadata"]["generation"].as_i64().unwrap_or(1),
        template_generation(current),
    );
    let (generation, template) = crate::manifest::next_generations(&old, &new, generations);
    out["metadata"]["generation"] = json!(generation);
    set_template_generation(&mut out, template);
    Ok(out)
}

/// The simulated controller's hash of a template: upstream's scheme (FNV-1a 32, the
/// collision count, the `SafeEncodeString` alphabet) over the template as stored. It is not
/// daemonsync's hash, as a real cluster's is not.
pub fn controller_hash(template: &Value, collision_count: Option<i32>) -> String {
    let mut bytes = b"apps/v1 ControllerRevision\n".to_vec();
    bytes.extend(serde_json::to_vec(template).unwrap_or_default());
    crate::plan::revision::hash_bytes(&bytes, collision_count)
}

/// A ControllerRevision's `data` for a template (upstream `getPatch`).
fn revision_data(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(m) = t.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": t}})
}

/// What one sync works with.
struct Context {
    ns: String,
    name: String,
    uid: String,
    ds: DaemonSet,
    obj: Arc<Value>,
    selector: LabelSelector,
}

fn params() -> WriteParams {
    WriteParams {
        manager: CONTROLLER.into(),
        ..WriteParams::default()
    }
}

fn controller_ref(c: &Context) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": c.name, "uid": c.uid,
           "controller": true, "blockOwnerDeletion": true})
}

fn controller_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == Value::Bool(true))?["uid"]
        .as_str()
}

fn labels_of(obj: &Value) -> crate::model::Labels {
    serde_json::from_value(obj["metadata"]["labels"].clone()).unwrap_or_default()
}

/// The per-DaemonSet backoff of upstream's controller work queue: its first retry.
const BASE_DELAY: SignedDuration = SignedDuration::from_millis(5);
/// Its longest.
const MAX_DELAY: SignedDuration = SignedDuration::from_secs(1000);
/// The work queue's overall bucket: retries a second.
const BUCKET_QPS: f64 = 10.0;
/// Its burst.
const BUCKET_BURST: f64 = 100.0;

/// The controller's work queue, for the syncs that failed: upstream requeues a DaemonSet whose
/// sync returned an error with the default controller rate limiter, the larger of a per-item
/// exponential backoff (5 ms, doubling with every failure, at most 1000 s) and an overall
/// token bucket (10 a second, burst 100), and forgets its failures when a sync succeeds. A
/// DaemonSet waiting for its retry is synced sooner only when something its informers report
/// changes: the DaemonSet, a pod it owns or could adopt, a node.
#[derive(Debug)]
pub struct Queue {
    /// Failed syncs in a row, by DaemonSet.
    failures: HashMap<Key, u32>,
    /// DaemonSets waiting for their retry: when, and what they saw last.
    retries: HashMap<Key, (Timestamp, Inputs)>,
    /// The overall bucket's tokens, and when it was last refilled.
    bucket: (f64, Option<Timestamp>),
}

type Key = (String, String);

/// What a DaemonSet's sync reads that its informers report changes of: its resourceVersion,
/// the number of its pods (owned, or orphans it selects) and the newest resourceVersion among
/// them, and the nodes' last change.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inputs(String, usize, u64, u64);

impl Default for Queue {
    fn default() -> Self {
        Queue {
            failures: HashMap::new(),
            retries: HashMap::new(),
            bucket: (BUCKET_BURST, None),
        }
    }
}

impl Queue {
    /// How long a DaemonSet whose sync just failed waits (upstream `When`): its backoff, or the
    /// bucket's wait when longer.
    fn when(&mut self, key: &Key, now: Timestamp) -> SignedDuration {
        let failures = self.failures.entry(key.clone()).or_insert(0);
        let backoff = 2u32
            .checked_pow(*failures)
            .and_then(|factor| BASE_DELAY.checked_mul(i32::try_from(factor).ok()?))
            .map_or(MAX_DELAY, |d| d.min(MAX_DELAY));
        *failures = failures.saturating_add(1);
        let (tokens, refilled) = &mut self.bucket;
        let elapsed = refilled.map_or(0.0, |r| now.duration_since(r).as_secs_f64().max(0.0));
        *tokens = (*tokens + elapsed * BUCKET_QPS).min(BUCKET_BURST) - 1.0;
        *refilled = Some(now);
        let wait = if *tokens < 0.0 {
            SignedDuration::from_secs_f64(-*tokens / BUCKET_QPS)
        } else {
            SignedDuration::ZERO
        };
        backoff.max(wait)
    }

    /// A sync succeeded (upstream `Forget`), or the DaemonSet is gone.
    fn forget(&mut self, key: &Key) {
        self.failures.remove(key);
        self.retries.remove(key);
    }
}

/// What the sync of `c` reads that its informers would report a change of.
fn inputs(w: &World, c: &Context) -> Inputs {
    let rv = |obj: &Value| {
        str_at(obj, &["metadata", "resourceVersion"])
            .parse::<u64>()
            .unwrap_or(0)
    };
    let (pods, newest) = w
        .store
        .list("/pods", Some(&c.ns))
        .filter(|e| match controller_uid(&e.object()) {
            Some(uid) => uid == c.uid,
            None => c.selector.matches(&labels_of(&e.object())),
        })
        .fold((0, 0), |(n, newest), e| {
            (n + 1, newest.max(rv(&e.object())))
        });
    Inputs(
        str_at(&c.obj, &["metadata", "resourceVersion"]).to_string(),
        pods,
        newest,
        w.store.last_change("/nodes"),
    )
}

/// Syncs every DaemonSet, but those waiting for the retry of a failed sync that nothing they
/// read has changed for.
pub fn sync_all(w: &mut World) {
    let keys: Vec<(String, String)> = w
        .store
        .list(DAEMONSETS, None)
        .map(|e| {
            (
                e.stored.namespace().to_string(),
                e.stored.name().to_string(),
            )
        })
        .collect();
    let now = w.now();
    let gone: Vec<Key> = w
        .daemonset_queue
        .failures
        .keys()
        .filter(|k| !keys.contains(k))
        .cloned()
        .collect();
    for key in gone {
        w.daemonset_queue.forget(&key);
    }
    for (ns, name) in keys {
        let key = (ns.clone(), name.clone());
        let waiting = w
            .daemonset_queue
            .retries
            .get(&key)
            .is_some_and(|(due, seen)| {
                now < *due && context(w, &ns, &name).is_some_and(|c| inputs(w, &c) == *seen)
            });
        if !waiting {
            sync(w, &ns, &name, None);
        }
    }
}

/// Starts a DaemonSet found at start-up (`builtin:`): its revision, and its pods on every node
/// it selects, running and ready since `since`.
pub fn start_running(w: &mut World, ns: &str, name: &str, since: Timestamp) -> anyhow::Result<()> {
    sync(w, ns, name, Some(since));
    Ok(())
}

fn context(w: &World, ns: &str, name: &str) -> Option<Context> {
    let obj = w.store.get(DAEMONSETS, ns, name)?.object();
    if obj["metadata"]["deletionTimestamp"].is_string() {
        // A DaemonSet being deleted is not reconciled; the garbage collector takes its pods.
        return None;
    }
    let ds = typed(&obj)?;
    let selector = ds
        .spec
        .as_ref()
        .and_then(|s| LabelSelector::from_k8s(&s.selector))?;
    if selector.is_empty() {
        // Upstream only warns (SelectingAll) and does nothing for such a DaemonSet.
        return None;
    }
    Some(Context {
        ns: ns.to_string(),
        name: name.to_string(),
        uid: str_at(&obj, &["metadata", "uid"]).to_string(),
        ds,
        obj,
        selector,
    })
}

/// One sync of one DaemonSet (upstream `syncDaemonSet`). With `boot`, the pods it creates
/// have been running since then (the cluster's initial state).
fn sync(w: &mut World, ns: &str, name: &str, boot: Option<Timestamp>) {
    let Some(c) = context(w, ns, name) else {
        return;
    };
    let Some(hash) = construct_history(w, &c, boot) else {
        return;
    };
    let pods = claim_pods(w, &c);
    let observed = Observed {
        nodes: w.nodes.observed_nodes().into(),
        pods: pods.into(),
        daemonsets: Vec::new(),
        rollouts: Vec::new(),
        revisions: Vec::new(),
        namespaces: Vec::new(),
        version: Some(w.version),
    };
    let now = w.now();
    let plan = crate::plan::plan_builtin(&c.ds, &hash, &observed, now);
    let deleted = delete_pods(w, &c, &plan.step.delete);
    let created = create_pods(w, &c, &hash, &plan.step.create, boot);
    if boot.is_some() {
        w.project();
    }
    wake_for_availability(w, &c, &observed, now);
    cleanup_history(w, &c, &hash);
    write_status(w, &c, &plan.status);
    let key = (c.ns.clone(), c.name.clone());
    if deleted && created {
        w.daemonset_queue.forget(&key);
    } else {
        // Upstream `AddRateLimited`: retried after the backoff, or when something changes.
        let due = crate::model::later(now, w.daemonset_queue.when(&key, now));
        let seen = match context(w, ns, name) {
            Some(c) => inputs(w, &c),
            None => return,
        };
        w.daemonset_queue.retries.insert(key, (due, seen));
        w.nodes.wake_at(due);
    }
}

/// Upstream `constructHistory`: claims the namespace's ControllerRevisions, finds (or
/// creates) the one of the current template, renumbers it when it comes back (a rollback),
/// and returns its hash. With `boot`, a revision it creates dates from then.
fn construct_history(w: &mut World, c: &Context, boot: Option<Timestamp>) -> Option<String> {
    let kind = w.kind("apps", "v1", "controllerrevisions");
    let revisions = claim(w, c, &kind);
    let template = c.obj["spec"]["template"].clone();
    let data = revision_data(&template);
    let (current, old): (Vec<&Arc<Value>>, Vec<&Arc<Value>>) =
        revisions.iter().partition(|r| r["data"] == data);
    let next = old
        .iter()
        .filter_map(|r| r["revision"].as_i64())
        .max()
        .unwrap_or(0)
        + 1;
    if let Some(keep) = current
        .iter()
        .max_by_key(|r| r["revision"].as_i64().unwrap_or(0))
    {
        let hash = str_at(keep, &["metadata", "labels", REVISION_HASH_LABEL]).to_string();
        if keep["revision"].as_i64().unwrap_or(0) < next {
            let mut renumbered = (***keep).clone();
            renumbered["revision"] = json!(next);
            let name = str_at(keep, &["metadata", "name"]).to_string();
            let _ = w.update(&kind, &c.ns, &name, false, renumbered, &params(), None);
        }
        return Some(if hash.is_empty() {
            str_at(keep, &["metadata", "name"]).to_string()
        } else {
            hash
        });
    }
    let collisions = c.ds.status.as_ref().and_then(|s| s.collision_count);
    let hash = controller_hash(&template, collisions);
    let mut labels = c.obj["spec"]["template"]["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels[REVISION_HASH_LABEL] = json!(hash);
    let revision = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("{}-{hash}", c.name), "namespace": c.ns,
                     "labels": labels, "annotations": c.obj["metadata"]["annotations"].clone(),
                     "ownerReferences": [controller_ref(c)]},
        "data": data, "revision": next,
    });
    let created = match boot {
        Some(at) => w.create_dated(at, &kind, &c.ns, revision, &params()),
        None => w.create(&kind, &c.ns, revision, &params(), None),
    };
    match created {
        Ok(_) => Some(hash),
        Err(e) if e.reason == "AlreadyExists" => {
            // Another template hashed the same: the collision count salts the next hash.
            let mut status = (*c.obj).clone();
            status["status"]["collisionCount"] = json!(collisions.unwrap_or(0) + 1);
            let kind = w.kind("apps", "v1", "daemonsets");
            let _ = w.update(&kind, &c.ns, &c.name, true, status, &params(), None);
            None
        }
        Err(_) => None,
    }
}

/// Upstream `ClaimObject` over one kind in the DaemonSet's namespace: owned objects that
/// match stay, owned ones that no longer match are released, orphans that match are adopted
/// (not while terminating), others' are never touched. Returns the claimed objects.
fn claim(w: &mut World, c: &Context, kind: &Kind) -> Vec<Arc<Value>> {
    let candidates: Vec<Arc<Value>> = w
        .store
        .list(&kind.storage, Some(&c.ns))
        .map(|e| e.object())
        .collect();
    let mut claimed = Vec::new();
    for obj in candidates {
        let matches = c.selector.matches(&labels_of(&obj));
        let name = str_at(&obj, &["metadata", "name"]).to_string();
        match controller_uid(&obj) {
            Some(uid) if uid == c.uid => {
                if matches {
                    claimed.push(obj);
                } else {
                    let mut released = (*obj).clone();
                    if let Some(refs) = released["metadata"]["ownerReferences"].as_array_mut() {
                        refs.retain(|r| r["uid"] != c.uid.as_str());
                        if refs.is_empty()
                            && let Some(m) = released["metadata"].as_object_mut()
                        {
                            m.remove("ownerReferences");
                        }
                    }
                    let _ = w.update(kind, &c.ns, &name, false, released, &params(), None);
                }
            }
            Some(_) => {}
            None => {
                if !matches || obj["metadata"]["deletionTimestamp"].is_string() {
                    continue;
                }
                let mut adopted = (*obj).clone();
                let mut refs = adopted["metadata"]["ownerReferences"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                refs.push(controller_ref(c));
                adopted["metadata"]["ownerReferences"] = Value::Array(refs);
                if let Ok(stored) = w.update(kind, &c.ns, &name, false, adopted, &params(), None) {
                    claimed.push(stored);
                }
            }
        }
    }
    claimed
}

/// The DaemonSet's pods after claiming, as the planner models them, with their times as the
/// controller reads them from the API: in whole seconds. So a pod is available once the
/// Ready condition's `lastTransitionTime` the API shows is `minReadySeconds` old, as upstream's
/// `IsPodAvailable` judges the pods of its informer.
fn claim_pods(w: &mut World, c: &Context) -> Vec<Pod> {
    let kind = w.kind("", "v1", "pods");
    claim(w, c, &kind)
        .iter()
        .filter_map(|obj| {
            let key = super::store::key_of(obj);
            let mut pod = w.nodes.pods.get(&key)?.pod.clone();
            pod.creation_timestamp = pod.creation_timestamp.map(super::whole_seconds);
            pod.deletion_timestamp = pod.deletion_timestamp.map(super::whole_seconds);
            if let Some(ready) = &mut pod.ready {
                ready.last_transition = ready.last_transition.map(super::whole_seconds);
            }
            Some(pod)
        })
        .collect()
}

/// Deletes the pods of one step. False when a deletion failed.
fn delete_pods(w: &mut World, c: &Context, deletions: &[crate::plan::PodDeletion]) -> bool {
    let kind = w.kind("", "v1", "pods");
    let mut ok = true;
    for d in deletions {
        let Some(pod) = w.store.get(&kind.storage, &d.namespace, &d.name) else {
            continue;
        };
        let involved = Involved::of(&c.obj);
        let uid = str_at(&pod.object(), &["metadata", "uid"]).to_string();
        if d.reason == crate::plan::DeleteReason::Failed {
            emit(
                w,
                &involved,
                "Warning",
                "FailedDaemonPod",
                CONTROLLER,
                &format!(
                    "Found failed daemon pod {}/{} on node {}, will try to kill it",
                    d.namespace, d.name, d.node
                ),
            );
        }
        let opts = DeleteParams {
            uid: Some(uid),
            ..DeleteParams::default()
        };
        match w.delete(&kind, &d.namespace, &d.name, &opts) {
            Ok(_) => emit(
                w,
                &involved,
                "Normal",
                "SuccessfulDelete",
                CONTROLLER,
                &format!("Deleted pod: {}", d.name),
            ),
            Err(e) if e.code == 404 => {}
            Err(e) => {
                ok = false;
                emit(
                    w,
                    &involved,
                    "Warning",
                    "FailedDelete",
                    CONTROLLER,
                    &format!("Error deleting: {}", e.message),
                )
            }
        }
    }
    ok
}

/// Creates the pods of one step in slow-start batches (1, 2, 4, …; a failed batch stops the
/// rest, as upstream's `syncNodes`). False when a create failed.
fn create_pods(
    w: &mut World,
    c: &Context,
    hash: &str,
    nodes: &[crate::plan::Name],
    boot: Option<Timestamp>,
) -> bool {
    let kind = w.kind("", "v1", "pods");
    let mut spec = DaemonSetSpec::compile(&c.ds);
    spec.revision = hash.to_string();
    spec.in_place = false;
    let owner = PodOwner::daemonset(&c.name, &c.uid);
    let involved = Involved::of(&c.obj);
    let (mut next, mut batch) = (0, 1);
    while next < nodes.len() {
        let end = (next + batch).min(nodes.len());
        let mut failed = false;
        for node in &nodes[next..end] {
            let pod = crate::plan::render::pod_for_node(&c.ds, &spec, node, &owner);
            if let Some(since) = boot {
                if let Err(e) = super::engine::insert_running(w, pod, since) {
                    tracing::warn!(error = %e, "builtin: a pod could not start");
                }
                continue;
            }
            let body = serde_json::to_value(&pod).unwrap_or_default();
            match w.create(&kind, &c.ns, body, &params(), None) {
                Ok(created) => emit(
                    w,
                    &involved,
                    "Normal",
                    "SuccessfulCreate",
                    CONTROLLER,
                    &format!("Created pod: {}", str_at(&created, &["metadata", "name"])),
                ),
                Err(e) => {
                    failed = true;
                    emit(
                        w,
                        &involved,
                        "Warning",
                        "FailedCreate",
                        CONTROLLER,
                        &format!("Error creating: {}", e.message),
                    );
                }
            }
        }
        if failed {
            return false;
        }
        next = end;
        batch *= 2;
    }
    true
}

/// Pods that are ready but not yet available (`minReadySeconds`): the controller looks again
/// when they become available, as upstream requeues the DaemonSet.
fn wake_for_availability(w: &mut World, c: &Context, observed: &Observed, now: Timestamp) {
    let min_ready =
        c.ds.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0);
    if min_ready <= 0 {
        return;
    }
    for pod in &observed.pods {
        let Some(ready) = pod.ready.filter(|r| r.status) else {
            continue;
        };
        let Some(since) = ready.last_transition else {
            continue;
        };
        let at = crate::model::later(since, jiff::SignedDuration::from_secs(i64::from(min_ready)));
        if at > now {
            w.nodes.wake_at(at);
        }
    }
}

/// Upstream `cleanupHistory`: old revisions beyond `revisionHistoryLimit`, oldest first,
/// unless a pod still runs them.
fn cleanup_history(w: &mut World, c: &Context, hash: &str) {
    let limit =
        c.ds.spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10)
            .max(0) as usize;
    let kind = w.kind("apps", "v1", "controllerrevisions");
    let mut old: Vec<(i64, String, String)> = w
        .store
        .list(&kind.storage, Some(&c.ns))
        .filter(|e| controller_uid(&e.object()) == Some(c.uid.as_str()))
        .map(|e| {
            (
                e.object()["revision"].as_i64().unwrap_or(0),
                str_at(&e.object(), &["metadata", "name"]).to_string(),
                str_at(&e.object(), &["metadata", "labels", REVISION_HASH_LABEL]).to_string(),
            )
        })
        .filter(|(_, _, h)| h != hash)
        .collect();
    if old.len() <= limit {
        return;
    }
    let in_use: std::collections::BTreeSet<String> = w
        .nodes
        .pods
        .iter()
        .filter(|((ns, _), p)| {
            *ns == c.ns && p.pod.controller.as_ref().is_some_and(|o| o.uid == c.uid)
        })
        .filter_map(|(_, p)| p.pod.revision_hash().map(str::to_string))
        .collect();
    old.sort();
    let mut excess = old.len() - limit;
    for (_, name, h) in old {
        if excess == 0 {
            break;
        }
        if in_use.contains(&h) {
            continue;
        }
        if w.delete(&kind, &c.ns, &name, &DeleteParams::default())
            .is_ok()
        {
            excess -= 1;
        }
    }
}

/// Writes the status counters when they changed (upstream `storeDaemonSetStatus`), with
/// `observedGeneration`. Fields that are zero and `omitempty` upstream are left out.
fn write_status(w: &mut World, c: &Context, s: &crate::plan::Status) {
    let mut status = json!({
        "currentNumberScheduled": s.current_number_scheduled,
        "desiredNumberScheduled": s.desired_number_scheduled,
        "numberMisscheduled": s.number_misscheduled,
        "numberReady": s.number_ready,
        "observedGeneration": c.obj["metadata"]["generation"].as_i64().unwrap_or(1),
    });
    for (key, value) in [
        ("updatedNumberScheduled", s.updated_number_scheduled),
        ("numberAvailable", s.number_available),
        ("numberUnavailable", s.number_unavailable),
    ] {
        if value != 0 {
            status[key] = json!(value);
        }
    }
    if let Some(collisions) = c.obj["status"].get("collisionCount") {
        status["collisionCount"] = collisions.clone();
    }
    let Some(current) = w.store.get(DAEMONSETS, &c.ns, &c.name) else {
        return;
    };
    if current.object()["status"] == status {
        return;
    }
    let mut next = (*current.object()).clone();
    next["status"] = status;
    let kind = w.kind("apps", "v1", "daemonsets");
    let _ = w.update(&kind, &c.ns, &c.name, true, next, &params(), None);
}

//! Watch-driven caches of the live backend: nodes, the pods of managed (and adopted)
//! DaemonSets, live `apps/v1` DaemonSets, their ControllerRevisions, namespaces (their Pod
//! Security labels) and the ManagedDaemonSet records.
//!
//! Each kind is followed by one kube-runtime watcher (pods by one per label selector); objects
//! are converted to the planner's small model values as they arrive, so a full `Pod` is never
//! kept. One more watcher follows every pod of the cluster for what it requests of its node
//! ([`Usage`]: a node name and a few numbers per pod), without waking anyone. A watcher lists once at its start and again only when the watch says so (410 Gone or
//! a broken connection); there is no periodic list.

use super::record::{ManagedDaemonSet, ManagedDaemonSetStatus};
use super::views::{Stale, Views};
use crate::model::resources::Resources;
use crate::model::{MANAGED_BY_LABEL, MANAGED_BY_VALUE, Node, Nodes, Pod, Pods};
use crate::plan::incremental::{Changes, Scope};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// `namespace/name` of an object.
pub type Key = (String, String);

/// A cached pod: the planner's view, plus what a precondition on delete needs.
#[derive(Debug, Clone)]
pub struct CachedPod {
    /// The planner's view, shared with every observation that shows it.
    pub pod: Arc<Pod>,
    /// `metadata.uid`.
    pub uid: String,
}

impl CachedPod {
    /// `metadata.resourceVersion` (kept once, in the pod's detail).
    pub fn resource_version(&self) -> &str {
        self.pod
            .detail
            .as_ref()
            .map_or("", |d| d.resource_version.as_str())
    }

    /// Sets `metadata.resourceVersion` (tests).
    #[cfg(test)]
    fn set_resource_version(&mut self, rv: &str) {
        Arc::make_mut(&mut self.pod)
            .detail
            .get_or_insert_default()
            .resource_version = rv.to_string();
    }
}

/// The same object at the same resourceVersion is the same pod (every change of a pod gives
/// it a new resourceVersion), without comparing the pods field by field.
impl PartialEq for CachedPod {
    fn eq(&self, other: &Self) -> bool {
        let rv = self.resource_version();
        // Without a resourceVersion (a pod without a spec), the pods themselves are compared.
        self.uid == other.uid
            && rv == other.resource_version()
            && (!rv.is_empty() || self.pod == other.pod)
    }
}

/// A cached record.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedRecord {
    /// What the executor reads of it, shared with the observations that hold it.
    pub record: Arc<crate::cluster::Record>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// The spec's DaemonSet, as last written.
    pub daemon_set: serde_json::Value,
    /// The status, as last written.
    pub status: Option<ManagedDaemonSetStatus>,
    /// What the record tells the planner, read once when it arrives (its stable DaemonSet
    /// is parsed from the status's JSON).
    pub rollout: crate::plan::RolloutRecord,
}

/// What one watcher has seen: its objects, and whether its first list is complete.
#[derive(Debug)]
pub struct Feed<T> {
    /// Objects by key.
    pub items: BTreeMap<Key, T>,
    /// The first list is complete.
    pub synced: bool,
    /// Objects of a list in progress (replaces `items` when it completes).
    pending: Option<BTreeMap<Key, T>>,
    /// The last error the watch met (cleared by the next success).
    pub error: Option<kube::runtime::watcher::Error>,
}

impl<T> Default for Feed<T> {
    fn default() -> Self {
        Feed {
            items: BTreeMap::new(),
            synced: false,
            pending: None,
            error: None,
        }
    }
}

/// What one watch event changed in a feed.
#[derive(Debug)]
enum Touch<T> {
    /// A list completed: anything may have changed.
    Relisted,
    /// One object changed: its key and what it was before (`None`: it is new).
    Changed(Key, Option<T>),
}

impl<T: PartialEq> Feed<T> {
    /// Applies one watch event; false when it changed nothing the planner sees (a node's
    /// heartbeat, a status field the model does not keep), so it wakes no one.
    #[cfg(test)]
    fn apply(&mut self, event: Event<(Key, Option<T>)>) -> bool {
        self.apply_touching(event).0
    }

    /// [`Feed::apply`], also saying what changed.
    fn apply_touching(&mut self, event: Event<(Key, Option<T>)>) -> (bool, Option<Touch<T>>) {
        let had_error = self.error.take().is_some();
        let touch = match event {
            Event::Init => {
                self.pending = Some(BTreeMap::new());
                None
            }
            Event::InitApply((key, value)) => {
                if let (Some(pending), Some(v)) = (self.pending.as_mut(), value) {
                    pending.insert(key, v);
                }
                None
            }
            Event::InitDone => {
                if let Some(items) = self.pending.take() {
                    self.items = items;
                }
                self.synced = true;
                Some(Touch::Relisted)
            }
            Event::Apply((key, Some(v))) => {
                if self.items.get(&key) == Some(&v) {
                    None
                } else {
                    let before = self.items.insert(key.clone(), v);
                    Some(Touch::Changed(key, before))
                }
            }
            Event::Apply((key, None)) | Event::Delete((key, _)) => self
                .items
                .remove(&key)
                .map(|before| Touch::Changed(key, Some(before))),
        };
        (had_error || touch.is_some(), touch)
    }
}

/// Notes in `dirty` what a change of one object of a feed means to the planner: `before` and
/// `after` are the object's versions (`None`: absent).
type Note<T> = fn(&mut Dirty, &Key, Option<&T>, Option<&T>);

/// What changed since it was last taken: for the planner ([`State::take_changes`]), and for
/// the views an observation is made of.
#[derive(Debug, Default)]
pub(super) struct Dirty {
    changes: Changes,
    stale: Stale,
}

impl Dirty {
    /// A feed relisted: anything may have changed.
    fn everything(&mut self) {
        self.changes.everything = true;
        self.stale.everything = true;
    }
}

/// Notes a change of a node: of what wakes every DaemonSet, or only of its images or
/// resources ([`Changes::note_node`]).
fn note_node(dirty: &mut Dirty, key: &Key, before: Option<&Node>, after: Option<&Node>) {
    dirty.changes.note_node(&key.1, before, after);
    dirty.stale.nodes.insert(key.1.clone());
}

/// Notes a change of a pod: who may care for it before and after.
fn note_pod(dirty: &mut Dirty, key: &Key, before: Option<&CachedPod>, after: Option<&CachedPod>) {
    dirty
        .changes
        .note_pod(before.map(|p| &*p.pod), after.map(|p| &*p.pod));
    dirty.stale.pods.insert(key.clone());
}

/// Notes the first appearance of a pod this client created: the plan that created it counted
/// on it ([`Changes::note_echo`]).
fn note_echo(dirty: &mut Dirty, key: &Key, _: Option<&CachedPod>, after: Option<&CachedPod>) {
    if let Some(p) = after {
        dirty.changes.note_echo(&p.pod);
    }
    dirty.stale.pods.insert(key.clone());
}

/// Notes a change of an object named after a DaemonSet (a record, a live DaemonSet).
fn note_named<T>(dirty: &mut Dirty, key: &Key, _: Option<&T>, _: Option<&T>) {
    dirty.changes.records.insert(key.clone());
}

/// Notes a change in a namespace (a ControllerRevision).
fn note_in_namespace<T>(dirty: &mut Dirty, key: &Key, _: Option<&T>, _: Option<&T>) {
    dirty.changes.namespaces.insert(key.0.clone());
}

/// Notes a change of a namespace itself (its Pod Security labels).
fn note_namespace<T>(dirty: &mut Dirty, key: &Key, _: Option<&T>, _: Option<&T>) {
    dirty.changes.namespaces.insert(key.1.clone());
}

/// Notes a change of a config copy: the DaemonSet it is for.
fn note_copy(
    dirty: &mut Dirty,
    key: &Key,
    before: Option<&crate::cluster::ObservedCopy>,
    after: Option<&crate::cluster::ObservedCopy>,
) {
    for c in before.into_iter().chain(after) {
        dirty
            .changes
            .wake
            .insert((key.0.clone(), c.daemonset.clone()));
    }
}

impl<T: PartialEq> Feed<T> {
    /// Applies one watch event and notes what it changed in `dirty`.
    fn apply_noting(
        &mut self,
        event: Event<(Key, Option<T>)>,
        dirty: &mut Dirty,
        note: Note<T>,
    ) -> bool {
        let (changed, touch) = self.apply_touching(event);
        match touch {
            Some(Touch::Relisted) => dirty.everything(),
            Some(Touch::Changed(key, before)) => {
                note(dirty, &key, before.as_ref(), self.items.get(&key));
            }
            None => {}
        }
        changed
    }
}

/// A pod's node and what it requests there (shared between the pods requesting the same).
type Held = (String, Arc<Resources>);

/// What every pod bound to a node requests of it, kept up to date by one watch of all pods:
/// per pod only its node and requests, and the sums per node (as the scheduler counts them,
/// terminating pods included, finished ones not).
#[derive(Debug, Default)]
pub struct Usage {
    pods: std::collections::HashMap<Key, Held>,
    pending: Option<std::collections::HashMap<Key, Held>>,
    by_node: std::collections::HashMap<String, Resources>,
    /// The first list is complete.
    pub synced: bool,
    /// The last error the watch met (cleared by the next success).
    pub error: Option<kube::runtime::watcher::Error>,
}

impl Usage {
    /// Whether the watch of every pod holds `key`: a pod bound to a node and not finished.
    pub fn holds(&self, key: &Key) -> bool {
        self.pods.contains_key(key)
    }

    /// What the pods bound to `node` request, when the first list is complete.
    pub fn requested(&self, node: &str) -> Option<Resources> {
        self.synced
            .then(|| self.by_node.get(node).cloned().unwrap_or_default())
    }

    fn put(&mut self, key: Key, value: Option<Held>) {
        self.put_noting(key, value, &mut Dirty::default());
    }

    /// [`Usage::put`], noting in `dirty` the nodes whose sums change.
    fn put_noting(&mut self, key: Key, value: Option<Held>, dirty: &mut Dirty) {
        if self.pods.get(&key) == value.as_ref() {
            return;
        }
        for (node, _) in self.pods.get(&key).into_iter().chain(value.as_ref()) {
            if !dirty.changes.usage.contains(node) {
                dirty.changes.usage.insert(node.clone());
            }
            if !dirty.stale.nodes.contains(node) {
                dirty.stale.nodes.insert(node.clone());
            }
        }
        if let Some((node, r)) = self.pods.remove(&key)
            && let Some(sum) = self.by_node.get_mut(&node)
        {
            for (k, v) in r.iter() {
                *sum.entry(k.clone()).or_default() -= v;
            }
        }
        if let Some((node, r)) = value {
            crate::model::resources::add(self.by_node.entry(node.clone()).or_default(), &r);
            self.pods.insert(key, (node, r));
        }
    }

    /// Applies one watch event, noting in `dirty` the nodes whose sums change; true when the
    /// first list just completed.
    fn apply(&mut self, event: Event<(Key, Option<Held>)>, dirty: &mut Dirty) -> bool {
        self.error = None;
        match event {
            Event::Init => self.pending = Some(Default::default()),
            Event::InitApply((key, Some(v))) => {
                if let Some(p) = self.pending.as_mut() {
                    p.insert(key, v);
                }
            }
            Event::InitApply((_, None)) => {}
            Event::InitDone => {
                if let Some(pods) = self.pending.take() {
                    dirty.everything();
                    self.pods.clear();
                    self.by_node.clear();
                    for (key, v) in pods {
                        self.put(key, Some(v));
                    }
                }
                let first = !self.synced;
                self.synced = true;
                return first;
            }
            Event::Apply((key, v)) => self.put_noting(key, v, dirty),
            Event::Delete((key, _)) => self.put_noting(key, None, dirty),
        }
        false
    }
}

/// A pod's node and requests, while it holds them (bound, not finished).
fn usage_of(p: &super::requesting::RequestingPod) -> (Key, Option<Held>) {
    let node = p
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let finished = matches!(p.phase.as_deref(), Some("Succeeded" | "Failed"));
    let value = match (node, p.spec.as_ref()) {
        (Some(node), Some(spec)) if !finished => {
            let requests = crate::model::resources::pod_requests(spec);
            Some((node, crate::model::resources::shared(requests)))
        }
        _ => None,
    };
    (key_of(&p.metadata), value)
}

/// Follows every pod of the cluster into [`State::usage`]. Its changes wake no one: what pods
/// request matters to the next plan, not as a reason to plan.
fn follow_usage(watchers: &Watchers, cache: &Arc<Cache>, client: &kube::Client) {
    let cache = Arc::clone(cache);
    let api = Api::<super::requesting::RequestingPod>::all(client.clone());
    watchers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .spawn(async move {
            let mut stream = watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => {
                        let event = convert(event, &usage_of);
                        cache.update(|s| s.usage.apply(event, &mut s.dirty));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "watch of pod requests failed; retrying with backoff");
                        cache.update(|s| {
                            s.usage.error = Some(e);
                            false
                        });
                    }
                }
            }
        });
}

/// Everything the watchers have seen.
#[derive(Debug, Default)]
pub struct State {
    /// Nodes.
    pub nodes: Feed<Node>,
    /// Pods, one feed per label selector watched.
    pub pods: Vec<Feed<CachedPod>>,
    /// The feed of the managed pods (label `app.kubernetes.io/managed-by=daemonsync`), the
    /// only one whose view of them counts.
    pub managed: Option<usize>,
    /// Live `apps/v1` DaemonSets.
    pub daemonsets: Feed<DaemonSet>,
    /// ControllerRevisions of DaemonSets (the built-in controller's history).
    pub revisions: Feed<crate::plan::ownership::ControllerRevision>,
    /// Namespaces, with their labels.
    pub namespaces: Feed<crate::plan::ownership::Namespace>,
    /// ManagedDaemonSet records.
    pub records: Feed<CachedRecord>,
    /// What every pod of the cluster requests of its node.
    pub usage: Usage,
    /// daemonsync's copies of ConfigMaps and Secrets (their metadata), one feed per kind,
    /// once watched ([`watch_copies`]).
    pub copies: Vec<Feed<crate::cluster::ObservedCopy>>,
    /// Bumped on every change, so a reader can tell whether anything happened since it looked.
    pub version: u64,
    /// What changed since an observation last took it ([`State::take_changes`]), and since
    /// the views last took it in.
    dirty: Dirty,
    /// The nodes and pods as observations show them, kept up to date.
    views: Views,
    /// Pods this client created that no feed shows yet: their first appearance is an echo
    /// ([`Change::Echo`]).
    echoes: rustc_hash::FxHashSet<Key>,
}

impl State {
    /// True when every watcher has completed its first list.
    pub fn synced(&self) -> bool {
        self.nodes.synced
            && self.daemonsets.synced
            && self.revisions.synced
            && self.namespaces.synced
            && self.records.synced
            && self.usage.synced
            && self.pods.iter().all(|p| p.synced)
            && self.copies.iter().all(|c| c.synced)
    }

    /// What changed since the last call (since the start, for the first): each object once
    /// or more, a relist as everything.
    pub fn take_changes(&mut self) -> Changes {
        // The echoes that arrived are in these changes; the ones still awaited stay.
        let echoes = std::mem::take(&mut self.echoes);
        self.echoes = echoes
            .into_iter()
            .filter(|k| !self.in_any_feed(k))
            .collect();
        std::mem::take(&mut self.dirty.changes)
    }

    /// Notes that this client created the pod `key`: its first appearance in a feed, as
    /// created, is an echo, which the next plan reads without being woken for it. A pod a
    /// feed already shows is no echo to await: its appearance came before the create's
    /// answer, and, while no plan has taken it, is noted as the echo it was.
    pub fn expect_echo(&mut self, key: Key) {
        if self.in_any_feed(&key) {
            // It appeared before the answer: its appearance, noted as any change, is the
            // echo all the same.
            self.dirty.changes.echoed(&key.0, &key.1);
            return;
        }
        if self.echoes.len() >= MAX_ECHOES {
            self.echoes.clear();
        }
        self.echoes.insert(key);
    }

    /// Applies one event of the feed `feed` picks, noting what it changed; with `echoes`,
    /// the first appearance of a pod this client created is an echo, noted so.
    fn apply<T: PartialEq>(
        &mut self,
        feed: &impl Fn(&mut State) -> &mut Feed<T>,
        event: Event<(Key, Option<T>)>,
        note: Note<T>,
        echoes: Option<Note<T>>,
    ) -> Change {
        let echo = echoes.is_some()
            && match &event {
                Event::Apply((key, Some(_))) => {
                    self.echoes.contains(key) && !feed(self).items.contains_key(key)
                }
                _ => false,
            };
        let mut dirty = std::mem::take(&mut self.dirty);
        let note = match echoes {
            Some(echo_note) if echo => echo_note,
            _ => note,
        };
        let changed = feed(self).apply_noting(event, &mut dirty, note);
        self.dirty = dirty;
        match (changed, echo) {
            (false, _) => Change::None,
            (true, true) => Change::Echo,
            (true, false) => Change::Wake,
        }
    }

    /// Brings the views up to date with the feeds.
    fn refresh_views(&mut self) {
        let stale = std::mem::take(&mut self.dirty.stale);
        let mut views = std::mem::take(&mut self.views);
        views.refresh(
            stale,
            &self.nodes.items,
            |node| self.usage.requested(node),
            |key| self.pod(key).map(|c| Arc::clone(&c.pod)),
            || self.every_pod(),
        );
        self.views = views;
    }

    /// Every node, as observations show them (with what their pods request), shared with the
    /// cache.
    pub fn observed_nodes(&mut self) -> Nodes {
        self.refresh_views();
        self.views.nodes()
    }

    /// The cached pods `scope` concerns, in key order, each from the feed that speaks for
    /// it: one pointer copied per pod, no pod copied.
    pub fn pods_in(&mut self, scope: &Scope) -> Pods {
        self.refresh_views();
        self.views.pods(scope)
    }

    /// Every copy of a ConfigMap or Secret cached, in kind and key order.
    pub fn config_copies(&self) -> Vec<crate::cluster::ObservedCopy> {
        self.copies
            .iter()
            .flat_map(|f| f.items.values().cloned())
            .collect()
    }

    /// The first error a watcher is stuck on, with the kind it watches.
    pub fn error(&self) -> Option<(&'static str, &kube::runtime::watcher::Error)> {
        let pods = self.pods.iter().find_map(|p| p.error.as_ref());
        let copies = self.copies.iter().find_map(|p| p.error.as_ref());
        [
            ("nodes", self.nodes.error.as_ref()),
            ("pods", pods),
            ("configmaps and secrets", copies),
            ("daemonsets", self.daemonsets.error.as_ref()),
            ("controllerrevisions", self.revisions.error.as_ref()),
            ("namespaces", self.namespaces.error.as_ref()),
            ("manageddaemonsets", self.records.error.as_ref()),
            ("pods (requests)", self.usage.error.as_ref()),
        ]
        .into_iter()
        .find_map(|(kind, e)| e.map(|e| (kind, e)))
    }

    /// True when feed `i` speaks for `pod`. Feeds are separate watches, each at its own point
    /// in time (one may be relisting after a dropped watch while another is current), and
    /// their selectors overlap: a managed pod also matches the selector of the DaemonSet it
    /// replaces. Only the managed feed speaks for managed pods, so a lagging adoption feed
    /// never shows a pod this client deleted as still running.
    fn speaks_for(&self, i: usize, pod: &CachedPod) -> bool {
        let managed =
            pod.pod.labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE);
        !managed || self.speaks_for_managed(i)
    }

    /// Whether pod feed `i` speaks for managed pods: the managed feed, or any while none is.
    fn speaks_for_managed(&self, i: usize) -> bool {
        self.managed.is_none_or(|m| m == i)
    }

    /// A pod by key, from the feed that speaks for it.
    pub fn pod(&self, key: &Key) -> Option<&CachedPod> {
        self.pods
            .iter()
            .enumerate()
            .find_map(|(i, f)| f.items.get(key).filter(|p| self.speaks_for(i, p)))
    }

    /// Whether any pod feed holds `key`, whether or not it speaks for it (a pod relabelled
    /// into the managed feed shows in the feed it leaves before the one it joins).
    pub fn in_any_feed(&self, key: &Key) -> bool {
        self.pods.iter().any(|f| f.items.contains_key(key))
    }

    /// Every cached pod once, in key order, each from the feed that speaks for it.
    fn every_pod(&self) -> Vec<(&Key, Arc<Pod>)> {
        let mut merged: BTreeMap<&Key, &CachedPod> = BTreeMap::new();
        for (i, feed) in self.pods.iter().enumerate() {
            for (key, pod) in &feed.items {
                if self.speaks_for(i, pod) {
                    merged.entry(key).or_insert(pod);
                }
            }
        }
        merged
            .into_iter()
            .map(|(k, c)| (k, Arc::clone(&c.pod)))
            .collect()
    }
}

/// What applying one event did to the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Nothing.
    None,
    /// A pod this client created appeared, as created: noted for the next plan, which it
    /// does not call for by itself (that plan already counted on it; the scheduler's binding
    /// follows at once).
    Echo,
    /// Anything else: the next plan is due.
    Wake,
}

/// At most this many created pods are awaited as echoes; past it the set is cleared (their
/// echoes then wake a pass, as any change does).
const MAX_ECHOES: usize = 4096;

/// The shared cache: the state, and a notification on every change.
#[derive(Debug, Default)]
pub struct Cache {
    state: Mutex<State>,
    changed: Notify,
}

impl Cache {
    /// The state, locked. A poisoned lock (a panic elsewhere) still yields the data.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves at the next change after the call.
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Applies `f`, which says whether it changed anything; only a change bumps the version
    /// and wakes the waiters.
    fn update(&self, f: impl FnOnce(&mut State) -> bool) {
        self.update_as(|s| if f(s) { Change::Wake } else { Change::None });
    }

    /// Applies `f`, which says what it changed: a change wakes the waiters ([`wait_until`]
    /// sees it), and bumps the version ([`changed_since`]) unless it is the echo of this
    /// client's own write.
    ///
    /// [`wait_until`]: Cache::wait_until
    /// [`changed_since`]: Cache::changed_since
    fn update_as(&self, f: impl FnOnce(&mut State) -> Change) {
        {
            let mut state = self.lock();
            match f(&mut state) {
                Change::None => return,
                Change::Echo => {}
                Change::Wake => state.version += 1,
            }
        }
        self.changed.notify_waiters();
    }

    /// Waits until `holds` is true of the state (at once if it already is). Level-triggered:
    /// the condition is checked after every change, and a change between two checks is
    /// never missed.
    pub async fn wait_until(&self, holds: impl Fn(&State) -> bool) {
        loop {
            let changed = self.changed();
            if holds(&self.lock()) {
                return;
            }
            changed.await;
        }
    }

    /// Waits until the state's version passes `seen` (at once if it already has).
    pub async fn changed_since(&self, seen: u64) {
        self.wait_until(|s| s.version > seen).await;
    }
}

fn key_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Key {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Converts every event's object as it arrives, so only the small value is kept.
fn convert<K, T>(event: Event<K>, f: &impl Fn(&K) -> (Key, Option<T>)) -> Event<(Key, Option<T>)> {
    match event {
        Event::Init => Event::Init,
        Event::InitApply(o) => Event::InitApply(f(&o)),
        Event::InitDone => Event::InitDone,
        Event::Apply(o) => Event::Apply(f(&o)),
        Event::Delete(o) => Event::Delete(f(&o)),
    }
}

/// The watcher tasks of one connection: aborted together when it closes.
pub type Watchers = Arc<std::sync::Mutex<tokio::task::JoinSet<()>>>;

/// Follows `api` until its task is aborted, feeding what arrives into `feed(state)`.
fn follow<K, T>(
    watchers: &Watchers,
    cache: &Arc<Cache>,
    api: Api<K>,
    config: watcher::Config,
    to_value: impl Fn(&K) -> (Key, Option<T>) + Send + Sync + 'static,
    feed: impl Fn(&mut State) -> &mut Feed<T> + Send + 'static,
    // What a change means to the planner, and (for pods) what the first appearance of a pod
    // this client created means.
    (note, echoes): (Note<T>, Option<Note<T>>),
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    T: PartialEq + Send + 'static,
{
    let cache = Arc::clone(cache);
    watchers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .spawn(async move {
            let mut stream = watcher(api, config).default_backoff().boxed();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => {
                        let event = convert(event, &to_value);
                        cache.update_as(|s| s.apply(&feed, event, note, echoes));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "watch failed; retrying with backoff");
                        cache.update(|s| {
                            feed(s).error = Some(e);
                            true
                        });
                    }
                }
            }
        });
}

use kube::runtime::watcher::watcher;

/// Follows the pods `(namespace, label selector)` selects into feed `i` of the state. Unless
/// `managed_too`, a managed pod is kept out of the feed: the managed feed alone speaks for
/// those ([`State::speaks_for`]), and an adoption feed's copy of each (every pod of an adopted
/// DaemonSet, once claimed) would only double the cache. The API server leaves them out
/// (the selector excludes the managed-by label), so that each change of a managed pod is not
/// sent and decoded once more for the adoption feed its labels match; one that gains the label
/// leaves the feed as a deletion.
fn follow_pods(
    watchers: &Watchers,
    cache: &Arc<Cache>,
    client: &kube::Client,
    (i, managed_too): (usize, bool),
    (namespace, selector): &(Option<String>, String),
) {
    let api = match namespace {
        Some(ns) => Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let selector = if managed_too {
        selector.clone()
    } else {
        format!("{selector},{MANAGED_BY_LABEL}!={MANAGED_BY_VALUE}")
    };
    follow(
        watchers,
        cache,
        api,
        watcher::Config::default().labels(&selector),
        move |p| cached_pod(p, managed_too),
        move |s| &mut s.pods[i],
        (note_pod, Some(note_echo)),
    );
}

/// A watched pod as a pod feed keeps it: `None` for a managed pod unless `managed_too`.
fn cached_pod(p: &k8s_openapi::api::core::v1::Pod, managed_too: bool) -> (Key, Option<CachedPod>) {
    let managed = p
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .is_some_and(|v| v == MANAGED_BY_VALUE);
    if managed && !managed_too {
        return (key_of(&p.metadata), None);
    }
    let cached = CachedPod {
        pod: Arc::new(Pod::from_k8s(p)),
        uid: p.metadata.uid.clone().unwrap_or_default(),
    };
    (key_of(&p.metadata), Some(cached))
}

/// Starts watching the pods of more selectors (a DaemonSet to adopt that the source gained),
/// beside the feeds already running; [`State::synced`] is false until their first lists
/// complete.
pub fn watch_more_pods(
    watchers: &Watchers,
    cache: &Arc<Cache>,
    client: &kube::Client,
    pod_selectors: &[(Option<String>, String)],
) {
    for selector in pod_selectors {
        let i = {
            let mut s = cache.lock();
            s.pods.push(Feed::default());
            s.pods.len() - 1
        };
        let managed_too = cache.lock().speaks_for_managed(i);
        follow_pods(watchers, cache, client, (i, managed_too), selector);
    }
}

/// Starts watching daemonsync's copies of ConfigMaps and Secrets (labelled managed by
/// daemonsync, for a DaemonSet) beside the feeds already running; [`State::synced`] is false
/// until their first lists complete. Only their metadata is kept: a Secret's data is dropped
/// as it arrives.
pub fn watch_copies(watchers: &Watchers, cache: &Arc<Cache>, client: &kube::Client) {
    use crate::manifest::config::{ConfigKind, DAEMONSET_LABEL};
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    {
        let mut s = cache.lock();
        if !s.copies.is_empty() {
            return;
        }
        s.copies = vec![Feed::default(), Feed::default()];
    }
    let selector = format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE},{DAEMONSET_LABEL}");
    let config = || watcher::Config::default().labels(&selector);
    follow(
        watchers,
        cache,
        Api::<ConfigMap>::all(client.clone()),
        config(),
        |c| {
            let copy = crate::cluster::ObservedCopy::from_meta(ConfigKind::ConfigMap, &c.metadata);
            (key_of(&c.metadata), copy)
        },
        |s| &mut s.copies[0],
        (note_copy, None),
    );
    follow(
        watchers,
        cache,
        Api::<Secret>::all(client.clone()),
        config(),
        |c| {
            let copy = crate::cluster::ObservedCopy::from_meta(ConfigKind::Secret, &c.metadata);
            (key_of(&c.metadata), copy)
        },
        |s| &mut s.copies[1],
        (note_copy, None),
    );
}

/// Starts the watchers: nodes, the pods matching each of `pod_selectors` (namespace, label
/// selector; `None` namespace for all), live DaemonSets and records.
pub fn start(
    watchers: &Watchers,
    client: &kube::Client,
    pod_selectors: &[(Option<String>, String)],
) -> Arc<Cache> {
    let cache = Arc::new(Cache::default());
    {
        let mut s = cache.lock();
        s.pods = pod_selectors.iter().map(|_| Feed::default()).collect();
        let managed = format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}");
        s.managed = pod_selectors
            .iter()
            .position(|(ns, sel)| ns.is_none() && *sel == managed);
    }
    follow(
        watchers,
        &cache,
        Api::<k8s_openapi::api::core::v1::Node>::all(client.clone()),
        watcher::Config::default(),
        |n| (key_of(&n.metadata), Some(Node::from_k8s(n))),
        |s| &mut s.nodes,
        (note_node, None),
    );
    for (i, selector) in pod_selectors.iter().enumerate() {
        let managed_too = cache.lock().speaks_for_managed(i);
        follow_pods(watchers, &cache, client, (i, managed_too), selector);
    }
    follow_usage(watchers, &cache, client);
    follow(
        watchers,
        &cache,
        Api::<DaemonSet>::all(client.clone()),
        watcher::Config::default(),
        |d| (key_of(&d.metadata), Some(slim_daemonset(d))),
        |s| &mut s.daemonsets,
        (note_named, None),
    );
    follow(
        watchers,
        &cache,
        Api::<k8s_openapi::api::apps::v1::ControllerRevision>::all(client.clone()),
        watcher::Config::default(),
        |r| {
            (
                key_of(&r.metadata),
                crate::plan::ownership::ControllerRevision::from_k8s(r),
            )
        },
        |s| &mut s.revisions,
        (note_in_namespace, None),
    );
    follow(
        watchers,
        &cache,
        Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone()),
        watcher::Config::default(),
        |n| {
            (
                key_of(&n.metadata),
                Some(crate::plan::ownership::Namespace::from_k8s(n)),
            )
        },
        |s| &mut s.namespaces,
        (note_namespace, None),
    );
    follow(
        watchers,
        &cache,
        Api::<ManagedDaemonSet>::all(client.clone()),
        watcher::Config::default(),
        |r| {
            let record = super::record::record_of(r);
            let record = CachedRecord {
                rollout: record.rollout_record(),
                record: Arc::new(record),
                generation: r.metadata.generation,
                resource_version: r.metadata.resource_version.clone(),
                daemon_set: r.spec.daemon_set.clone(),
                status: r.status.clone(),
            };
            (key_of(&r.metadata), Some(record))
        },
        |s| &mut s.records,
        (note_named, None),
    );
    cache
}

/// A live DaemonSet as the planner compares it: metadata without managed fields, the spec, no
/// status.
fn slim_daemonset(d: &DaemonSet) -> DaemonSet {
    let mut d = d.clone();
    d.metadata.managed_fields = None;
    d.status = None;
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn key(name: &str) -> Key {
        ("ns".into(), name.into())
    }

    fn cached(name: &str, managed: bool, terminating: bool) -> CachedPod {
        let mut pod = Pod {
            namespace: "ns".into(),
            name: name.into(),
            ..Pod::default()
        };
        if managed {
            pod.labels_mut()
                .insert(MANAGED_BY_LABEL.into(), MANAGED_BY_VALUE.into());
        }
        if terminating {
            pod.deletion_timestamp = Some(crate::model::Timestamp::UNIX_EPOCH);
        }
        let mut cached = CachedPod {
            pod: Arc::new(pod),
            uid: format!("uid-{name}"),
        };
        cached.set_resource_version(if terminating { "2" } else { "1" });
        cached
    }

    #[test]
    fn an_adoption_feed_keeps_no_copy_of_a_managed_pod() {
        let mut pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "ns", "name": "agent-x", "labels": {"app": "agent"}},
        }))
        .expect("a pod");
        // The built-in controller's pod, before it is claimed: every feed keeps it.
        assert!(cached_pod(&pod, false).1.is_some());
        assert!(cached_pod(&pod, true).1.is_some());
        // Claimed: the managed feed keeps it; an adoption feed drops it, as if it had left.
        pod.metadata
            .labels
            .get_or_insert_default()
            .insert(MANAGED_BY_LABEL.into(), MANAGED_BY_VALUE.into());
        let (key, kept) = cached_pod(&pod, false);
        assert_eq!(key, ("ns".to_string(), "agent-x".to_string()));
        assert!(kept.is_none());
        assert!(cached_pod(&pod, true).1.is_some());
        // Dropping it from an adoption feed changes what no observation read: the managed
        // feed alone speaks for a managed pod.
        let mut s = State {
            pods: vec![Feed::default(), Feed::default()],
            managed: Some(0),
            ..State::default()
        };
        let mut dirty = Dirty::default();
        let (_, managed) = cached_pod(&pod, true);
        s.pods[0].apply_noting(Event::Apply((key.clone(), managed)), &mut dirty, note_pod);
        assert!(s.pod(&key).is_some());
        s.pods[1].apply_noting(Event::Apply((key.clone(), kept)), &mut dirty, note_pod);
        assert!(s.pod(&key).is_some());
        assert!(s.pods[1].items.is_empty());
    }

    #[test]
    fn a_created_pods_echo_is_noted_for_the_next_plan_without_waking_one() {
        let cache = Cache::default();
        cache.lock().pods.push(Feed::default());
        fn feed(s: &mut State) -> &mut Feed<CachedPod> {
            &mut s.pods[0]
        }
        let event = |p: CachedPod| Event::Apply((key(&p.pod.name), Some(p)));
        cache.update_as(|s| s.apply(&feed, Event::InitDone, note_pod, Some(note_echo)));
        cache.lock().take_changes();
        let synced = cache.lock().version;
        // Created by this client for node n1: its appearance is noted, and wakes no pass.
        let made = |version: &str, node: Option<&str>| {
            let mut p = cached("made", true, false);
            p.set_resource_version(version);
            let pod = Arc::make_mut(&mut p.pod);
            pod.target_node = Some("n1".into());
            pod.node_name = node.map(Into::into);
            p
        };
        cache.lock().expect_echo(key("made"));
        cache.update_as(|s| s.apply(&feed, event(made("1", None)), note_pod, Some(note_echo)));
        assert_eq!(cache.lock().version, synced, "the echo wakes no pass");
        // Its next change (the scheduler's binding it to n1) does, and the plan then reads
        // both: each a change of status alone, the echo's and the binding's.
        cache.update_as(|s| {
            s.apply(
                &feed,
                event(made("2", Some("n1"))),
                note_pod,
                Some(note_echo),
            )
        });
        assert_eq!(
            cache.lock().version,
            synced + 1,
            "a change after the echo wakes"
        );
        let changes = cache.lock().take_changes();
        assert_eq!(
            (changes.statuses.len(), changes.pods.len()),
            (2, 0),
            "the echo, then the binding"
        );
        assert!(
            cache.lock().echoes.is_empty(),
            "an echo arrived is awaited no more"
        );
        // A pod nobody here created wakes a pass when it appears; so has one whose echo came
        // before the create's answer (nothing is awaited for it), but the appearance is then
        // noted as the echo it was.
        cache.update_as(|s| {
            s.apply(
                &feed,
                event(cached("theirs", true, false)),
                note_pod,
                Some(note_echo),
            )
        });
        assert_eq!(cache.lock().version, synced + 2);
        cache.lock().expect_echo(key("theirs"));
        assert!(cache.lock().echoes.is_empty());
        let changes = cache.lock().take_changes();
        assert_eq!(
            (changes.statuses.len(), changes.pods.len()),
            (1, 0),
            "an appearance before the create's answer is its echo all the same"
        );
        // Only a pod feed's appearances can be echoes.
        cache.lock().expect_echo(key("other"));
        cache.update_as(|s| s.apply(&feed, event(cached("other", true, false)), note_pod, None));
        assert_eq!(cache.lock().version, synced + 3);
    }

    #[test]
    fn an_update_the_planner_cannot_see_wakes_no_one() {
        let cache = Cache::default();
        let node = |ready| Node {
            name: "n1".into(),
            ready: Some(ready),
            ..Node::default()
        };
        let apply = |event: Event<(Key, Option<Node>)>| cache.update(|s| s.nodes.apply(event));
        apply(Event::Init);
        apply(Event::InitApply((key("n1"), Some(node(true)))));
        apply(Event::InitDone);
        let synced = cache.lock().version;
        // A heartbeat: the same model node again.
        apply(Event::Apply((key("n1"), Some(node(true)))));
        assert_eq!(cache.lock().version, synced);
        apply(Event::Apply((key("n1"), Some(node(false)))));
        assert_eq!(cache.lock().version, synced + 1);
        apply(Event::Delete((key("n1"), None)));
        apply(Event::Delete((key("n1"), None)));
        assert_eq!(
            cache.lock().version,
            synced + 2,
            "a second delete changes nothing"
        );
        // A pod at the same resourceVersion is the same pod.
        assert_eq!(cached("p", true, false), cached("p", true, false));
        assert_ne!(cached("p", true, false), cached("p", true, true));
    }

    #[test]
    fn an_observation_takes_what_changed_since_the_last_one() {
        let mut s = State {
            pods: vec![Feed::default()],
            ..State::default()
        };
        let mut dirty = Dirty::default();
        let node = |name: &str| Node {
            name: name.into(),
            ..Node::default()
        };
        s.nodes.apply_noting(Event::Init, &mut dirty, note_node);
        s.nodes.apply_noting(
            Event::InitApply((key("n1"), Some(node("n1")))),
            &mut dirty,
            note_node,
        );
        s.nodes.apply_noting(Event::InitDone, &mut dirty, note_node);
        assert!(dirty.changes.everything, "a list is everything");
        let mut dirty = Dirty::default();
        s.nodes.apply_noting(
            Event::Apply((key("n1"), Some(node("n1")))),
            &mut dirty,
            note_node,
        );
        assert!(dirty.changes.is_empty(), "a heartbeat changes nothing");
        // The images its kubelet pulled: read by pre-pulls alone.
        let pulled = Node {
            images: vec!["agent:2".into()],
            ..node("n1")
        };
        s.nodes.apply_noting(
            Event::Apply((key("n1"), Some(pulled))),
            &mut dirty,
            note_node,
        );
        assert!(dirty.changes.nodes.is_empty(), "{:?}", dirty.changes);
        assert_eq!(dirty.changes.images, BTreeSet::from(["n1".to_string()]));
        assert!(
            dirty.stale.nodes.contains("n1"),
            "the view takes its images"
        );
        let mut dirty = Dirty::default();
        s.nodes
            .apply_noting(Event::Delete((key("n1"), None)), &mut dirty, note_node);
        assert_eq!(dirty.changes.nodes, BTreeSet::from(["n1".to_string()]));
        // A pod relabelled: who cared for it before, and who does now.
        let mut dirty = Dirty::default();
        let before = cached("p", true, false);
        let mut after = cached("p", true, false);
        Arc::make_mut(&mut after.pod)
            .labels_mut()
            .insert("app".into(), "agent".into());
        after.set_resource_version("2");
        s.pods[0].apply_noting(Event::Apply((key("p"), Some(before))), &mut dirty, note_pod);
        s.pods[0].apply_noting(Event::Apply((key("p"), Some(after))), &mut dirty, note_pod);
        assert_eq!(dirty.changes.pods.len(), 3, "created, then both versions");
        assert_eq!(
            dirty.changes.pods[2].labels.get("app").map(String::as_str),
            Some("agent")
        );
        assert!(!dirty.changes.pods[1].labels.contains_key("app"));
        // What pods request: the nodes whose sums change, without waking anyone.
        let mut usage = Usage::default();
        let mut dirty = Dirty::default();
        let cpu = |m: i64| Resources::from([("cpu".to_string(), m)]);
        usage.apply(
            Event::Apply((key("p"), Some(("n2".into(), cpu(100).into())))),
            &mut dirty,
        );
        usage.apply(
            Event::Apply((key("p"), Some(("n2".into(), cpu(100).into())))),
            &mut dirty,
        );
        assert_eq!(dirty.changes.usage, BTreeSet::from(["n2".to_string()]));
        s.dirty = dirty;
        assert!(!s.take_changes().is_empty());
        assert!(s.take_changes().is_empty(), "taken once");
    }

    #[test]
    fn a_lagging_adoption_feed_never_speaks_for_managed_pods() {
        let mut s = State {
            pods: vec![Feed::default(), Feed::default()],
            managed: Some(0),
            ..State::default()
        };
        // The managed feed shows the deletion; the adoption feed (app=agent) still shows the
        // pod running, and also has a pod of the built-in controller.
        s.pods[0]
            .items
            .insert(key("agent-a"), cached("agent-a", true, true));
        s.pods[1]
            .items
            .insert(key("agent-a"), cached("agent-a", true, false));
        s.pods[1]
            .items
            .insert(key("legacy-b"), cached("legacy-b", false, false));
        let all = s.pods_in(&Scope::everything());
        assert_eq!(all.len(), 2);
        assert!(
            all.iter()
                .find(|p| p.name == "agent-a")
                .unwrap()
                .is_terminating()
        );
        assert_eq!(s.pod(&key("agent-a")).unwrap().resource_version(), "2");
        assert!(s.pod(&key("legacy-b")).is_some());
        // Gone from the managed feed: gone, whatever the adoption feed still holds.
        s.pods[0].items.clear();
        s.dirty.stale.pods.insert(key("agent-a"));
        assert!(s.pod(&key("agent-a")).is_none());
        assert_eq!(s.pods_in(&Scope::everything()).len(), 1);
    }

    #[test]
    fn a_relist_replaces_what_the_feed_held() {
        let mut feed: Feed<u32> = Feed::default();
        feed.apply(Event::Init);
        feed.apply(Event::InitApply((key("a"), Some(1))));
        assert!(
            !feed.synced && feed.items.is_empty(),
            "nothing shown before the list ends"
        );
        feed.apply(Event::InitDone);
        assert!(feed.synced);
        feed.apply(Event::Apply((key("b"), Some(2))));
        assert_eq!(feed.items.len(), 2);
        // After a 410 the watcher lists again: objects deleted meanwhile disappear.
        feed.apply(Event::Init);
        feed.apply(Event::InitApply((key("b"), Some(3))));
        assert_eq!(
            feed.items.len(),
            2,
            "the old view stays until the new list is complete"
        );
        feed.apply(Event::InitDone);
        assert_eq!(feed.items, BTreeMap::from([(key("b"), 3)]));
        feed.apply(Event::Delete((key("b"), None)));
        assert!(feed.items.is_empty() && feed.synced);
    }
}

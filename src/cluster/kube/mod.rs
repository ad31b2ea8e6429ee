//! The live backend: a real cluster through kube-rs (`--cluster kube`, `--cluster kube:CONTEXT`).
//!
//! * Reads come from watch-driven caches ([`cache`]) of nodes, of the pods of managed
//!   DaemonSets (label `app.kubernetes.io/managed-by=daemonsync`) and of DaemonSets being
//!   adopted (their selectors), of live `apps/v1` DaemonSets and of the records.
//! * Writes are API calls: pod create (with the controller ownerReference to the record, uid
//!   filled in), pod delete with uid and resourceVersion preconditions (a stale view never
//!   deletes the wrong pod), the record's spec and status, Events on the record.
//! * [`Cluster::observe`] reflects this client's completed writes: every create and delete is
//!   an expectation the cache must show before the next observation is handed out (as
//!   upstream's controller expectations), bounded by [`EXPECTATION_TIMEOUT`].
//! * kube-rs retries 429, 503 and 504 honouring `Retry-After`; daemonsync retries 500 and 502
//!   a few times more with backoff. Errors name the context and the server, never a
//!   credential.
//!
//! The backend runs on the caller's tokio runtime (the one `main` builds): its watchers are
//! tasks of the connection, aborted when it is dropped.

pub mod cache;
mod events;
mod requesting;
#[cfg(test)]
mod tests;
mod views;

pub use daemonsync_core::record;
pub use record::{
    FIELD_MANAGER, ManagedDaemonSet, ManagedDaemonSetSpec, ManagedDaemonSetStatus, RecordSource,
    RecordWriter,
};

use super::{Cluster, ClusterError, ClusterState, Event, EventType, Record, RecordStatus};
use crate::manifest::config::ConfigKind;
use crate::model::{KubeVersion, MANAGED_BY_LABEL, MANAGED_BY_VALUE, Timestamp};
use crate::plan::incremental::Scope;
use crate::plan::{Observed, RECORD_API_VERSION, RECORD_KIND};
use cache::{Cache, Key};
use events::Recorder;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::events::Reporter;
use std::sync::Arc;
use std::time::Duration;

/// How long a connection may take to show a complete first list of every watched kind.
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the cache may take to show this client's own writes.
pub const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Retries of a request answered 500 or 502 (kube-rs itself retries 429, 503 and 504).
const SERVER_ERROR_RETRIES: u32 = 4;

/// At most this many writes of one batch are in flight together: creates (a slow-start
/// batch holds up to [`crate::plan::BURST_REPLICAS`]), status writes (one per DaemonSet).
const WRITES_IN_FLIGHT: usize = 32;

/// Which cluster, as people name it: the kubeconfig context and the server URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The kubeconfig context (`in-cluster` for a service account).
    pub context: String,
    /// The API server URL.
    pub server: String,
    /// The field manager of this client's writes: `daemonsync`, or `daemonsync-IDENTITY`
    /// for a replica of `sync` (so an observer can tell who wrote).
    pub field_manager: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "context {:?} (server {})", self.context, self.server)
    }
}

/// How to connect.
#[derive(Debug, Clone, Default)]
pub struct KubeOptions {
    /// The kubeconfig context; `None`: the current one (or in-cluster config).
    pub context: Option<String>,
    /// DaemonSets whose pods to watch besides the managed ones (being adopted): namespace
    /// and label selector.
    pub adopt: Vec<(String, String)>,
    /// Also watch the pods of every live `apps/v1` DaemonSet (for `snapshot`).
    pub all_daemonset_pods: bool,
    /// Who writes: the User-Agent suffix and the Event reporter instance (a pod name).
    pub identity: Option<String>,
}

/// Pods and deletes this client has written that the cache has not shown yet.
#[derive(Debug, Default)]
struct Expectations {
    creates: Vec<Key>,
    deletes: Vec<(Key, String)>,
    /// Pods written in place (images, a status condition), with every resourceVersion they
    /// had before: the cache must show another one.
    updates: Vec<(Key, Vec<String>)>,
    /// DaemonSets deleted (`None`: gone or terminating) or applied (`Some(resourceVersion
    /// before)`: present at another one).
    daemonsets: Vec<(Key, Option<Option<String>>)>,
    /// Records deleted (`None`: gone or terminating) or annotated (`Some(resourceVersion
    /// before)`: present at another one, or gone).
    records: Vec<(Key, Option<Option<String>>)>,
    /// Taints removed from nodes, by node, key and effect: the node must show it without.
    taints: Vec<(Key, String, crate::model::TaintEffect)>,
    /// Copies of ConfigMaps and Secrets created (`None`: present) or deleted (`Some(uid)`:
    /// gone, terminating, or another object).
    copies: Vec<(ConfigKind, Key, Option<String>)>,
}

/// A live cluster.
pub struct KubeCluster {
    watchers: cache::Watchers,
    client: kube::Client,
    target: Target,
    cache: Arc<Cache>,
    expected: Expectations,
    recorder: Recorder,
    /// The cache version the last observation showed.
    seen: u64,
    /// What changed in the caches up to the last observation, since [`KubeCluster::take_changes`]
    /// was last called (an observation of everything takes the caches' changes too).
    changes: Pending,
    /// The (namespace, label selector) of every pod watch.
    watched: Vec<(Option<String>, String)>,
    /// The version `GET /version` reported when connecting.
    version: Option<KubeVersion>,
}

impl std::fmt::Debug for KubeCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeCluster")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Drop for KubeCluster {
    fn drop(&mut self) {
        self.watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .abort_all();
    }
}

/// An error connecting, as one line a user can act on.
/// The field manager of a replica: `daemonsync-IDENTITY`, cut to the API server's 128
/// characters.
pub fn field_manager(identity: &str) -> String {
    let mut name = format!("{FIELD_MANAGER}-{identity}");
    if name.len() > 128 {
        let mut end = 128;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}

fn connect_error(target: &Target, e: &kube::Error) -> ClusterError {
    ClusterError::Backend(describe(target, e))
}

/// One line for a kube error: what happened, where, and what to do. Never a credential: the
/// server URL is printed without user info, and bodies are reduced to the API's message.
pub fn describe(target: &Target, e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if status.code == 401 => format!(
            "the API server of {target} refused the credentials (401 Unauthorized); refresh \
             them (`kubectl --context {} get nodes` should work)",
            target.context
        ),
        kube::Error::Api(status) if status.code == 403 => format!(
            "the API server of {target} forbids it (403): {}; grant the ClusterRole in \
             examples/deploy/rbac.yaml",
            status.message
        ),
        kube::Error::Api(status) => format!(
            "the API server of {target} answered {} {}: {}",
            status.code, status.reason, status.message
        ),
        kube::Error::HyperError(_) | kube::Error::Service(_) => format!(
            "cannot reach the API server of {target}: {}; check that the cluster is running \
             and that `kubectl --context {} get nodes` works",
            root_cause(e),
            target.context
        ),
        other => format!("{target}: {}", root_cause(other)),
    }
}

/// The innermost cause of an error, which says what happened ("connection refused").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The user-visible server URL without user info or query.
fn display_server(url: &http::Uri) -> String {
    let scheme = url.scheme_str().unwrap_or("https");
    let host = url.host().unwrap_or("?");
    match url.port_u16() {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    }
}

/// Reads the kubeconfig (or the in-cluster config) as kubectl does.
async fn load_config(context: Option<&str>) -> Result<(kube::Config, Target), ClusterError> {
    let kubeconfig = Kubeconfig::read();
    let current = kubeconfig
        .as_ref()
        .ok()
        .and_then(|k| k.current_context.clone());
    if let (Some(wanted), Ok(k)) = (context, &kubeconfig)
        && !k.contexts.iter().any(|c| c.name == wanted)
    {
        let names: Vec<&str> = k.contexts.iter().map(|c| c.name.as_str()).collect();
        return Err(ClusterError::Backend(format!(
            "the kubeconfig has no context {wanted:?} (it has: {}); list them with `kubectl \
             config get-contexts`",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    }
    let config = match context {
        Some(name) => {
            let options = KubeConfigOptions {
                context: Some(name.to_string()),
                ..KubeConfigOptions::default()
            };
            kube::Config::from_kubeconfig(&options).await.map_err(|e| {
                ClusterError::Backend(format!(
                    "cannot use kubeconfig context {name:?}: {}",
                    root_cause(&e)
                ))
            })?
        }
        None => kube::Config::infer().await.map_err(|e| {
            let looked = match std::env::var_os("KUBECONFIG") {
                Some(path) => format!("KUBECONFIG={}", path.to_string_lossy()),
                None => "~/.kube/config, then the in-cluster service account".to_string(),
            };
            ClusterError::Backend(format!(
                "no Kubernetes cluster configured (looked at {looked}): {}; point KUBECONFIG \
                 at a kubeconfig, or use --cluster snapshot:FILE, sim:FILE or none",
                root_cause(&e)
            ))
        })?,
    };
    let context = context
        .map(str::to_string)
        .or(current)
        .unwrap_or_else(|| "in-cluster".to_string());
    let target = Target {
        context,
        server: display_server(&config.cluster_url),
        field_manager: FIELD_MANAGER.to_string(),
    };
    Ok((config, target))
}

/// The version in a `GET /version` answer: its `gitVersion` (`v1.35.2-gke.100`), else its
/// `major` and `minor` (`1`, `35+`).
fn reported_version(info: &k8s_openapi::apimachinery::pkg::version::Info) -> Option<KubeVersion> {
    KubeVersion::parse_reported(&info.git_version)
        .or_else(|| KubeVersion::parse_reported(&format!("{}.{}", info.major, info.minor)))
}

/// The Kubernetes version of the cluster `context` names (the current one when `None`), from
/// its `GET /version`: one request, no watch, for commands that need it before they connect
/// (rendering for `apply` and `sync`).
pub async fn server_version(context: Option<&str>) -> Result<Option<KubeVersion>, ClusterError> {
    let (mut config, target) = load_config(context).await?;
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(60));
    let client = kube::Client::try_from(config).map_err(|e| connect_error(&target, &e))?;
    let info = with_retries(|| client.apiserver_version())
        .await
        .map_err(|e| connect_error(&target, &e))?;
    Ok(reported_version(&info))
}

impl KubeCluster {
    /// Connects, checks that the server answers and the ManagedDaemonSet CRD is installed,
    /// starts the watchers and waits until each has listed once.
    pub async fn connect(options: KubeOptions) -> Result<KubeCluster, ClusterError> {
        let watchers = cache::Watchers::default();
        let started = Self::start(&watchers, options).await;
        let started = match started {
            Ok(s) => s,
            Err(e) => {
                watchers
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .abort_all();
                return Err(e);
            }
        };
        let (client, target, cache, recorder, watched, version) = started;
        Ok(KubeCluster {
            watchers,
            client,
            target,
            cache,
            expected: Expectations::default(),
            recorder,
            seen: 0,
            changes: Pending::default(),
            watched,
            version,
        })
    }

    async fn start(
        watchers: &cache::Watchers,
        options: KubeOptions,
    ) -> Result<
        (
            kube::Client,
            Target,
            Arc<Cache>,
            Recorder,
            Vec<(Option<String>, String)>,
            Option<KubeVersion>,
        ),
        ClusterError,
    > {
        let (mut config, mut target) = load_config(options.context.as_deref()).await?;
        if let Some(id) = &options.identity {
            target.field_manager = field_manager(id);
        }
        config.connect_timeout = Some(Duration::from_secs(10));
        config.read_timeout = Some(Duration::from_secs(60));
        let identity = options.identity.clone();
        let agent = match &identity {
            Some(id) => format!("daemonsync/{} ({id})", env!("CARGO_PKG_VERSION")),
            None => format!("daemonsync/{}", env!("CARGO_PKG_VERSION")),
        };
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_str(&agent)
                .unwrap_or_else(|_| http::HeaderValue::from_static("daemonsync")),
        ));
        let client = kube::Client::try_from(config).map_err(|e| connect_error(&target, &e))?;
        let info = with_retries(|| client.apiserver_version())
            .await
            .map_err(|e| connect_error(&target, &e))?;
        let version = reported_version(&info);
        let records: Api<ManagedDaemonSet> = Api::all(client.clone());
        let one = kube::api::ListParams::default().limit(1);
        if let Err(e) = with_retries(|| records.list(&one)).await {
            return Err(match &e {
                kube::Error::Api(s) if s.code == 404 => ClusterError::Backend(format!(
                    "the ManagedDaemonSet CRD is not installed in {target}: run `kubectl apply \
                     -f examples/deploy/crd.yaml` (and the RBAC beside it) first"
                )),
                _ => connect_error(&target, &e),
            });
        }
        let mut selectors: Vec<(Option<String>, String)> =
            vec![(None, format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"))];
        selectors.extend(
            options
                .adopt
                .iter()
                .map(|(ns, sel)| (Some(ns.clone()), sel.clone())),
        );
        if options.all_daemonset_pods {
            let live: Api<DaemonSet> = Api::all(client.clone());
            let all = kube::api::ListParams::default();
            let list = with_retries(|| live.list(&all))
                .await
                .map_err(|e| connect_error(&target, &e))?;
            for ds in list.items {
                let selector = ds
                    .spec
                    .as_ref()
                    .and_then(|s| crate::model::LabelSelector::from_k8s(&s.selector))
                    .filter(|s| !s.is_empty());
                if let Some(selector) = selector {
                    selectors.push((ds.metadata.namespace.clone(), selector.to_string()));
                }
            }
        }
        selectors.sort();
        selectors.dedup();
        let cache = cache::start(watchers, &client, &selectors);
        wait_until_synced(&cache, &target).await?;
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.into(),
                instance: identity,
            },
        );
        let flusher = recorder.clone();
        watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .spawn(async move {
                loop {
                    tokio::time::sleep(events::REFRESH).await;
                    flusher.flush().await;
                }
            });
        Ok((client, target, cache, recorder, selectors, version))
    }

    /// Writes the counts of event series counted since their last write (every six minutes
    /// otherwise): a command calls it before it exits.
    pub async fn flush_events(&self) {
        let bound = Duration::from_secs(10);
        if tokio::time::timeout(bound, self.recorder.flush())
            .await
            .is_err()
        {
            tracing::warn!("event counts not written within {bound:?}; they are dropped");
        }
    }

    /// The Kubernetes version the API server reported when connecting.
    pub fn version(&self) -> Option<KubeVersion> {
        self.version
    }

    /// The cluster this is connected to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Watches the pods of `adopt` (namespace, label selector) too, where not watched yet, and
    /// waits until their first lists are in: a DaemonSet the source gained may already run
    /// under the built-in controller, and its pods must be seen before it is planned.
    /// Returns whether anything new is watched.
    pub async fn watch_pods(&mut self, adopt: &[(String, String)]) -> Result<bool, ClusterError> {
        let new: Vec<(Option<String>, String)> = adopt
            .iter()
            .map(|(ns, sel)| (Some(ns.clone()), sel.clone()))
            .filter(|s| !self.watched.contains(s))
            .collect();
        // A watch started by an earlier call that timed out still counts until its first
        // list is in.
        if new.is_empty() && self.cache.lock().synced() {
            return Ok(false);
        }
        let watchers = Arc::clone(&self.watchers);
        let (cache, client, target) = (
            Arc::clone(&self.cache),
            self.client.clone(),
            self.target.clone(),
        );
        self.watched.extend(new.iter().cloned());
        self.run(async move {
            cache::watch_more_pods(&watchers, &cache, &client, &new);
            wait_until_synced(&cache, &target).await
        })
        .await?;
        Ok(true)
    }

    /// Resolves once the watch caches changed since the last [`Cluster::observe`] (at once
    /// if they already have). Cancel-safe: dropping it leaves nothing behind.
    pub fn changed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let (cache, seen) = (Arc::clone(&self.cache), self.seen);
        async move { cache.changed_since(seen).await }
    }

    /// What changed in the caches since the last call (everything, at the first), once this
    /// client's own writes show in them: what an incremental plan re-plans. What changes
    /// after it wakes [`KubeCluster::changed`].
    pub async fn take_changes(&mut self) -> crate::plan::incremental::Changes {
        self.await_expectations().await;
        let mut s = self.cache.lock();
        self.seen = s.version;
        self.changes.keep(s.take_changes());
        self.changes.take()
    }

    /// The changes the observations of everything took since [`KubeCluster::take_changes`]:
    /// changes that reached the caches after it, which those observations show.
    pub fn observed_changes(&mut self) -> crate::plan::incremental::Changes {
        self.changes.take()
    }

    /// An observation holding only the pods `scope` concerns (every node, record and live
    /// DaemonSet), at `now`: what planning the DaemonSets of the scope reads. An observation
    /// of everything takes the changes it shows with it, under the same lock
    /// ([`KubeCluster::observed_changes`]); a scoped one takes none, they wake the next pass.
    pub fn observe_scoped(&mut self, scope: &Scope, now: Timestamp) -> ClusterState {
        self.observe_with(now, |_| scope.clone()).0
    }

    /// [`observe_scoped`](Self::observe_scoped) with the scope `scope_of` gives for the nodes
    /// as the caches have them now: the pods picked are those the planning of those nodes
    /// needs. Returns the scope with the observation.
    pub fn observe_with(
        &mut self,
        now: Timestamp,
        scope_of: impl FnOnce(&[crate::model::Node]) -> Scope,
    ) -> (ClusterState, Scope) {
        let mut s = self.cache.lock();
        let nodes = s.observed_nodes();
        let scope = scope_of(&nodes);
        if scope.everything {
            self.seen = s.version;
            self.changes.keep(s.take_changes());
        }
        let records: Vec<Arc<Record>> = s
            .records
            .items
            .values()
            .map(|r| Arc::clone(&r.record))
            .collect();
        let observed = Observed {
            nodes,
            pods: s.pods_in(&scope),
            daemonsets: s.daemonsets.items.values().cloned().collect(),
            rollouts: s
                .records
                .items
                .values()
                .map(|r| r.rollout.clone())
                .collect(),
            revisions: s.revisions.items.values().cloned().collect(),
            namespaces: s.namespaces.items.values().cloned().collect(),
            version: self.version,
        };
        let state = ClusterState {
            observed,
            records,
            config_copies: s.config_copies(),
            now,
        };
        (state, scope)
    }

    /// A client for the same API server, with the same credentials and User-Agent (for the
    /// requests that are not the executor's, such as the leader-election Lease).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The DaemonSets the cluster's records say daemonsync manages (their spec), by namespace
    /// and name. A record whose spec is not a DaemonSet is skipped with a warning.
    pub fn managed_daemonsets(&self) -> Vec<DaemonSet> {
        let s = self.cache.lock();
        s.records
            .items
            .iter()
            .filter_map(|((ns, name), r)| {
                match serde_json::from_value::<DaemonSet>(r.daemon_set.clone()) {
                    Ok(ds) => Some(ds),
                    Err(e) => {
                        tracing::warn!(record = %format!("{ns}/{name}"), error = %e, "record spec is not a DaemonSet");
                        None
                    }
                }
            })
            .collect()
    }

    /// The uid and resourceVersion of a cached pod, the preconditions of a write to it.
    fn cached_pod(&self, key: &Key) -> Result<(String, String), ClusterError> {
        self.cache
            .lock()
            .pod(key)
            .map(|p| (p.uid.clone(), p.resource_version().to_string()))
            .ok_or_else(|| ClusterError::NotFound {
                kind: "pod",
                namespace: key.0.clone(),
                name: key.1.clone(),
            })
    }

    /// Runs a request as a task of its own: once sent, a write completes (and its expectation
    /// is recorded) even when the caller stops waiting for it.
    async fn run<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ClusterError>> + Send + 'static,
    ) -> Result<T, ClusterError> {
        tokio::spawn(fut)
            .await
            .map_err(|e| ClusterError::Backend(format!("request task failed: {e}")))?
    }

    /// Waits until the cache shows every write this client completed, or the bound passes.
    async fn await_expectations(&mut self) {
        let cache = Arc::clone(&self.cache);
        let creates = std::mem::take(&mut self.expected.creates);
        let deletes = std::mem::take(&mut self.expected.deletes);
        let updates = std::mem::take(&mut self.expected.updates);
        let daemonsets = std::mem::take(&mut self.expected.daemonsets);
        let records = std::mem::take(&mut self.expected.records);
        let taints = std::mem::take(&mut self.expected.taints);
        let copies = std::mem::take(&mut self.expected.copies);
        // What is awaited, for the log; nothing written, nothing to wait for.
        let awaited = [
            ("creates", creates.len()),
            ("deletes", deletes.len()),
            ("pod updates", updates.len()),
            ("DaemonSets", daemonsets.len()),
            ("records", records.len()),
            ("taints", taints.len()),
            ("config copies", copies.len()),
        ];
        if awaited.iter().all(|&(_, n)| n == 0) {
            return;
        }
        let met = move |s: &cache::State| {
            creates.iter().all(|k| s.pod(k).is_some())
                // An updated pod shows its new version in the feed that speaks for it; one
                // that feed does not show yet is awaited while it still exists, not counted
                // gone: a claim adds the managed-by label, and the adoption feed it leaves
                // drops it at once (it keeps no managed pods), so the watch of every pod
                // says whether it is still there.
                && updates.iter().all(|(k, before)| match s.pod(k) {
                    Some(p) => !before.iter().any(|rv| rv == p.resource_version()),
                    None => !s.in_any_feed(k) && !s.usage.holds(k),
                })
                && deletes.iter().all(|(k, uid)| {
                    s.pod(k)
                        .is_none_or(|p| &p.uid != uid || p.pod.deletion_timestamp.is_some())
                })
                && daemonsets.iter().all(|(k, expected)| {
                    let live = s.daemonsets.items.get(k);
                    match expected {
                        None => live.is_none_or(|d| d.metadata.deletion_timestamp.is_some()),
                        Some(before) => {
                            live.is_some_and(|d| d.metadata.resource_version != *before)
                        }
                    }
                })
                && records.iter().all(|(k, expected)| {
                    let r = s.records.items.get(k);
                    match expected {
                        None => r.is_none_or(|r| r.record.deleting),
                        Some(before) => r.is_none_or(|r| r.resource_version != *before),
                    }
                })
                && taints.iter().all(|(k, key, effect)| {
                    s.nodes.items.get(k).is_none_or(|n| {
                        !n.taints.iter().any(|t| t.key == *key && t.effect == *effect)
                    })
                })
                && copies.iter().all(|(kind, k, deleted)| {
                    let c = s.copies.get(copy_feed(*kind)).and_then(|f| f.items.get(k));
                    match deleted {
                        None => c.is_some(),
                        Some(uid) => c.is_none_or(|c| c.deleting || c.uid != *uid),
                    }
                })
        };
        let started = std::time::Instant::now();
        let waited = self
            .run(async move {
                let wait = cache.wait_until(met);
                Ok(tokio::time::timeout(EXPECTATION_TIMEOUT, wait)
                    .await
                    .is_ok())
            })
            .await;
        tracing::debug!(
            waited_ms = started.elapsed().as_secs_f64() * 1e3,
            // Formatted only when the line is logged: this runs on every pass that wrote.
            awaited = %awaited
                .iter()
                .filter(|&&(_, n)| n > 0)
                .map(|(what, n)| format!("{n} {what}"))
                .collect::<Vec<_>>()
                .join(", "),
            "the watch shows this client's own writes"
        );
        if !matches!(waited, Ok(true)) {
            tracing::warn!(
                cluster = %self.target,
                "the watch did not show this client's own writes within {:?}; planning on \
                 what it shows",
                EXPECTATION_TIMEOUT
            );
        }
    }

    /// The resourceVersion the pod cache holds for a pod.
    fn cached_resource_version(&self, key: &Key) -> Option<String> {
        self.cache
            .lock()
            .pod(key)
            .map(|p| p.resource_version().to_string())
    }

    /// Watches daemonsync's copies of ConfigMaps and Secrets, when not yet, and waits until
    /// their first lists are in. Started by `apply` and `sync` once the source versions some
    /// config, and by the first copy written at the latest: a cluster whose DaemonSets
    /// version none is never asked to list ConfigMaps or Secrets.
    pub async fn watch_config_copies(&mut self) -> Result<(), ClusterError> {
        if !self.cache.lock().copies.is_empty() {
            return Ok(());
        }
        let watchers = Arc::clone(&self.watchers);
        let (cache, client, target) = (
            Arc::clone(&self.cache),
            self.client.clone(),
            self.target.clone(),
        );
        self.run(async move {
            cache::watch_copies(&watchers, &cache, &client);
            wait_until_synced(&cache, &target).await
        })
        .await
    }

    /// A copy as the cache shows it.
    fn cached_copy(&self, kind: ConfigKind, key: &Key) -> Option<crate::cluster::ObservedCopy> {
        let s = self.cache.lock();
        s.copies.get(copy_feed(kind))?.items.get(key).cloned()
    }

    fn record_uid(&self, namespace: &str, name: &str) -> Option<String> {
        let s = self.cache.lock();
        s.records
            .items
            .get(&(namespace.to_string(), name.to_string()))
            .map(|r| r.record.uid.clone())
    }

    /// A pod to create, in its namespace, with its record's uid filled in.
    fn pod_to_create(&self, pod: Pod) -> Result<(String, Pod), ClusterError> {
        daemonsync_core::cluster::pod_to_create(pod, |ns, name| self.record_uid(ns, name))
    }

    /// Sends one create; returns the name the server gave the pod, whose appearance in the
    /// cache is then awaited as this write's echo (the plan counted on it), as soon as the
    /// answer comes.
    async fn send_create(&self, namespace: &str, pod: Pod) -> Result<String, ClusterError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let name = self
            .run(async move { requests::create_pod(&api, &pod, &target).await })
            .await?;
        self.cache
            .lock()
            .expect_echo((namespace.to_string(), name.clone()));
        Ok(name)
    }

    /// Writes a record's status, unless the record already shows it.
    async fn send_status(
        &self,
        namespace: &str,
        name: &str,
        status: &RecordStatus,
    ) -> Result<(), ClusterError> {
        let previous = {
            let s = self.cache.lock();
            s.records
                .items
                .get(&(namespace.to_string(), name.to_string()))
                .map(|r| (r.status.clone(), r.generation))
        };
        let Some((previous, generation)) = previous else {
            return Err(ClusterError::NotFound {
                kind: "manageddaemonset",
                namespace: namespace.into(),
                name: name.into(),
            });
        };
        let written = ManagedDaemonSetStatus::written(
            status,
            previous.as_ref(),
            generation,
            Timestamp::now(),
        );
        // Unchanged (transition times are kept while a condition holds): writing it anyway
        // would only wake this client's own record watch, and the next observation would
        // write again.
        if previous.as_ref() == Some(&written) {
            return Ok(());
        }
        let api: Api<ManagedDaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let name = name.to_string();
        self.run(async move { requests::write_status(&api, &name, &written, &target).await })
            .await
    }
}

/// The changes an observation took from the caches, kept for [`KubeCluster::take_changes`].
/// Until the first take they are everything, which holds whatever is kept meanwhile: a client
/// that never takes them (`apply`, `sync --reconcile full`, which observe everything every
/// time) keeps nothing, rather than every pod change since it connected.
#[derive(Debug)]
struct Pending {
    taken: bool,
    changes: crate::plan::incremental::Changes,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            taken: false,
            changes: crate::plan::incremental::Changes::everything(),
        }
    }
}

impl Pending {
    /// Keeps `changes` for the next take.
    fn keep(&mut self, changes: crate::plan::incremental::Changes) {
        if self.taken {
            self.changes.merge(changes);
        }
    }

    /// Everything kept since the last take (everything, at the first).
    fn take(&mut self) -> crate::plan::incremental::Changes {
        self.taken = true;
        std::mem::take(&mut self.changes)
    }
}

/// The feed of [`cache::State::copies`] that holds copies of `kind`.
fn copy_feed(kind: ConfigKind) -> usize {
    match kind {
        ConfigKind::ConfigMap => 0,
        ConfigKind::Secret => 1,
    }
}

/// Waits until every watcher has listed once; a watcher stuck on an error (403, 404) fails
/// the connection with that error.
async fn wait_until_synced(cache: &Arc<Cache>, target: &Target) -> Result<(), ClusterError> {
    let deadline = tokio::time::Instant::now() + SYNC_TIMEOUT;
    loop {
        let changed = cache.changed();
        {
            let s = cache.lock();
            if s.synced() {
                return Ok(());
            }
            if let Some((kind, e)) = s.error() {
                let forbidden = matches!(
                    e,
                    kube::runtime::watcher::Error::InitialListFailed(kube::Error::Api(st))
                        | kube::runtime::watcher::Error::WatchStartFailed(kube::Error::Api(st))
                        if st.code == 403 || st.code == 401
                );
                if forbidden {
                    return Err(ClusterError::Backend(format!(
                        "cannot watch {kind} in {target}: {}; grant the ClusterRole in \
                         examples/deploy/rbac.yaml",
                        root_cause(e)
                    )));
                }
            }
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            let why = cache
                .lock()
                .error()
                .map(|(kind, e)| format!(": watching {kind}: {}", root_cause(e)))
                .unwrap_or_default();
            return Err(ClusterError::Backend(format!(
                "the watches of {target} did not complete their first list within {}s{why}",
                SYNC_TIMEOUT.as_secs()
            )));
        }
    }
}

/// Runs a request, retrying 500 and 502 answers with backoff.
async fn with_retries<T, F, Fut>(mut request: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(100);
    let mut attempt = 0;
    loop {
        match request().await {
            Err(kube::Error::Api(s))
                if matches!(s.code, 500 | 502) && attempt < SERVER_ERROR_RETRIES =>
            {
                attempt += 1;
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            other => return other,
        }
    }
}

fn is_code(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// A refused write: [`ClusterError::Refused`] with the API's message when admission refused
/// the object (Pod Security, a validating webhook, a quota: the API server answers 403 for
/// those too, but the object is at fault, not the grants), [`ClusterError::Forbidden`] for
/// other 401 and 403 (permanent until granted), [`ClusterError::Rejected`] for the rest;
/// `what` prefixes the description.
fn refused(target: &Target, what: &str, e: &kube::Error) -> ClusterError {
    if let kube::Error::Api(status) = e
        && is_admission_refusal(status.code, &status.message)
    {
        return ClusterError::Refused(format!("{what}{}", status.message));
    }
    let line = format!("{what}{}", describe(target, e));
    if is_code(e, 401) || is_code(e, 403) {
        ClusterError::Forbidden(line)
    } else {
        ClusterError::Rejected(line)
    }
}

/// Whether an API error is an admission plugin's refusal of the object rather than the
/// authorizer's: the ones `apply` names with a hint (Pod Security, a webhook's denial, whatever
/// code the webhook chose, a quota), and any other 403 not worded as the authorizer words its
/// refusals (`User "…" cannot VERB resource …`), such as a LimitRange's.
fn is_admission_refusal(code: u16, message: &str) -> bool {
    message.contains("violates PodSecurity")
        || (message.contains("admission webhook \"") && message.contains("denied the request"))
        || message.contains("exceeded quota")
        || code == 403 && !message.contains(" cannot ")
}

#[cfg(test)]
#[test]
fn admission_refusals_are_told_from_the_authorizers() {
    let rbac = r#"pods is forbidden: User "system:serviceaccount:daemonsync:daemonsync" cannot create resource "pods" in API group "" in the namespace "demo""#;
    assert!(!is_admission_refusal(403, rbac));
    assert!(!is_admission_refusal(401, "Unauthorized"));
    let pss = r#"pods "agent-x" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#;
    assert!(is_admission_refusal(403, pss));
    let webhook = r#"admission webhook "deny.example.com" denied the request: no"#;
    assert!(is_admission_refusal(400, webhook));
    assert!(is_admission_refusal(
        403,
        r#"pods "a" is forbidden: exceeded quota: q, requested: cpu=1, used: cpu=4, limited: cpu=4"#
    ));
    assert!(is_admission_refusal(
        403,
        r#"pods "a" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#
    ));
    assert!(!is_admission_refusal(400, "the object is invalid"));
}

fn record_reference(namespace: &str, name: &str, uid: Option<String>) -> ObjectReference {
    ObjectReference {
        api_version: Some(RECORD_API_VERSION.into()),
        kind: Some(RECORD_KIND.into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        uid,
        ..ObjectReference::default()
    }
}

impl Cluster for KubeCluster {
    async fn observe(&mut self) -> Result<ClusterState, ClusterError> {
        self.await_expectations().await;
        Ok(self.observe_scoped(&Scope::everything(), Timestamp::now()))
    }

    async fn create_config_copy(
        &mut self,
        copy: &crate::manifest::config::ConfigCopy,
        owner: &crate::plan::render::PodOwner,
    ) -> Result<(), ClusterError> {
        self.watch_config_copies().await?;
        let key = (copy.namespace.clone(), copy.name.clone());
        if let Some(cached) = self.cached_copy(copy.kind, &key) {
            return if cached.digest == copy.digest {
                Ok(())
            } else {
                Err(requests::other_content(copy))
            };
        }
        let mut owner = owner.controller_reference();
        if owner.kind == RECORD_KIND && owner.uid.is_empty() {
            owner.uid = self
                .record_uid(&copy.namespace, &owner.name)
                .ok_or_else(|| {
                    ClusterError::Rejected(format!(
                        "no record {}/{} to own the copy yet",
                        copy.namespace, owner.name
                    ))
                })?;
        }
        let (client, target, copy) = (self.client.clone(), self.target.clone(), copy.clone());
        let kind = copy.kind;
        self.run(async move { requests::create_config_copy(&client, &copy, owner, &target).await })
            .await?;
        self.expected.copies.push((kind, key, None));
        Ok(())
    }

    async fn delete_config_copy(
        &mut self,
        copy: &crate::cluster::ObservedCopy,
    ) -> Result<(), ClusterError> {
        let (client, target, c) = (self.client.clone(), self.target.clone(), copy.clone());
        self.run(async move { requests::delete_config_copy(&client, &c, &target).await })
            .await?;
        self.expected.copies.push((
            copy.kind,
            (copy.namespace.clone(), copy.name.clone()),
            Some(copy.uid.clone()),
        ));
        Ok(())
    }

    async fn ensure_record(
        &mut self,
        daemonset: &DaemonSet,
        source: &RecordSource,
    ) -> Result<(), ClusterError> {
        let namespace = daemonset
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = daemonset.metadata.name.clone().unwrap_or_default();
        let spec = ManagedDaemonSetSpec::of(daemonset, source);
        let managed = spec.mode.as_deref() == Some("managed");
        let unchanged = {
            let s = self.cache.lock();
            s.records
                .items
                .get(&(namespace.clone(), name.clone()))
                .is_some_and(|r| {
                    r.daemon_set == spec.daemon_set
                        && r.record
                            .source
                            .as_ref()
                            .map_or(source.writer.is_none(), |s| s.same_writer(source))
                })
        };
        if unchanged {
            return Ok(());
        }
        let api: Api<ManagedDaemonSet> = Api::namespaced(self.client.clone(), &namespace);
        let templates: Api<k8s_openapi::api::core::v1::PodTemplate> =
            Api::namespaced(self.client.clone(), &namespace);
        let target = self.target.clone();
        let record = ManagedDaemonSet::new(&name, spec);
        let cache = Arc::clone(&self.cache);
        let key = (namespace.clone(), name.clone());
        let daemonset = daemonset.clone();
        self.run(async move {
            let params = PatchParams::apply(&target.field_manager).force();
            let patch = Patch::Apply(&record);
            let written = with_retries(|| api.patch(&name, &params, &patch))
                .await
                .map_err(|e| {
                    refused(
                        &target,
                        &format!("cannot write the record of {namespace}/{name}: "),
                        &e,
                    )
                })?;
            // The uid is what pods will name, and the spec what the next call compares
            // with: wait until the watch shows this write (an existing record keeps its uid).
            let uid = written.metadata.uid.unwrap_or_default();
            if managed {
                // Cluster Autoscaler's scale-up simulation counts this DaemonSet's overhead on
                // new nodes from a PodTemplate labelled as a DaemonSet pod's.
                let body = requests::pod_template_body(&daemonset, &uid);
                let patch = Patch::Apply(&body);
                with_retries(|| templates.patch(&name, &params, &patch))
                    .await
                    .map_err(|e| {
                        refused(
                            &target,
                            &format!("cannot write the PodTemplate of {namespace}/{name}: "),
                            &e,
                        )
                    })?;
            }
            let spec = written.spec.daemon_set;
            let wait = cache.wait_until(|s| {
                s.records
                    .items
                    .get(&key)
                    .is_some_and(|r| r.record.uid == uid && r.daemon_set == spec)
            });
            let _ = tokio::time::timeout(EXPECTATION_TIMEOUT, wait).await;
            Ok(())
        })
        .await
    }

    async fn create_pod(&mut self, pod: Pod) -> Result<String, ClusterError> {
        let (namespace, pod) = self.pod_to_create(pod)?;
        let name = self.send_create(&namespace, pod).await?;
        self.expected.creates.push((namespace, name.clone()));
        Ok(name)
    }

    async fn create_pods(&mut self, pods: Vec<Pod>) -> Vec<Result<String, ClusterError>> {
        let this = &*self;
        let sent = pods.into_iter().map(|pod| {
            let pod = this.pod_to_create(pod);
            async move {
                let (namespace, pod) = pod?;
                let name = this.send_create(&namespace, pod).await?;
                Ok((namespace, name))
            }
        });
        let results: Vec<Result<(String, String), ClusterError>> = futures::stream::iter(sent)
            .buffered(WRITES_IN_FLIGHT)
            .collect()
            .await;
        results
            .into_iter()
            .map(|r| {
                r.map(|(namespace, name)| {
                    self.expected.creates.push((namespace, name.clone()));
                    name
                })
            })
            .collect()
    }

    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        let key = (namespace.to_string(), name.to_string());
        let (uid, resource_version) = self.cached_pod(&key)?;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let (ns, n, u) = (key.0.clone(), key.1.clone(), uid.clone());
        self.run(async move {
            requests::delete_pod(&api, (&ns, &n), (&u, &resource_version), &target).await
        })
        .await?;
        self.expected.deletes.push((key, uid));
        Ok(())
    }

    async fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &crate::cluster::ImagePatch,
    ) -> Result<(), ClusterError> {
        let key = (namespace.to_string(), name.to_string());
        let mut before = vec![patch.resource_version.clone()];
        before.extend(self.cached_resource_version(&key));
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let (n, p) = (name.to_string(), patch.clone());
        self.run(async move { requests::patch_pod_images(&api, &n, &p, &target).await })
            .await?;
        // The next observation waits until the watch shows the patched pod (a re-plan on the
        // stale one would patch it again).
        self.expected.updates.push((key, before));
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
        let key = (namespace.to_string(), name.to_string());
        let before: Vec<String> = self
            .cached_resource_version(&key)
            .into_iter()
            .chain(resource_version.map(str::to_string))
            .collect();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let (n, c) = (name.to_string(), condition.to_string());
        let rv = resource_version.map(str::to_string);
        let after = self
            .run(async move {
                requests::set_pod_condition(&api, &n, &c, status, rv.as_deref(), &target).await
            })
            .await?;
        self.expected.updates.push((key, before));
        Ok(after)
    }

    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &RecordStatus,
    ) -> Result<(), ClusterError> {
        self.send_status(namespace, name, status).await
    }

    async fn write_statuses(
        &mut self,
        statuses: Vec<(String, String, RecordStatus)>,
    ) -> Vec<Result<(), ClusterError>> {
        let this = &*self;
        let sent = statuses
            .into_iter()
            .map(|(namespace, name, status)| async move {
                this.send_status(&namespace, &name, &status).await
            });
        futures::stream::iter(sent)
            .buffered(WRITES_IN_FLIGHT)
            .collect()
            .await
    }

    async fn emit_event(&mut self, event: Event) -> Result<(), ClusterError> {
        let uid = self.record_uid(&event.namespace, &event.name);
        let reference = record_reference(&event.namespace, &event.name, uid);
        let recorder = self.recorder.clone();
        let target = self.target.clone();
        self.run(async move {
            let ev = kube::runtime::events::Event {
                type_: match event.type_ {
                    EventType::Normal => kube::runtime::events::EventType::Normal,
                    EventType::Warning => kube::runtime::events::EventType::Warning,
                },
                reason: event.reason.clone(),
                note: Some(event.message.chars().take(1000).collect()),
                action: event.reason,
                secondary: None,
            };
            recorder
                .publish(&ev, &reference)
                .await
                .map_err(|e| refused(&target, "", &e))
        })
        .await
    }

    async fn patch_pod_metadata(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &crate::cluster::MetadataPatch,
    ) -> Result<(), ClusterError> {
        let key = (namespace.to_string(), name.to_string());
        let (uid, resource_version) = self.cached_pod(&key)?;
        let record_uid = match &patch.owner {
            crate::cluster::OwnerChange::Claim(record) => {
                self.record_uid(namespace, record).ok_or_else(|| {
                    ClusterError::Rejected(format!(
                        "no record {namespace}/{record} to claim the pod yet"
                    ))
                })?
            }
            _ => String::new(),
        };
        let body = requests::metadata_patch(patch, &uid, &resource_version, &record_uid);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let n = name.to_string();
        self.run(async move {
            let params = PatchParams {
                field_manager: Some(target.field_manager.clone()),
                ..PatchParams::default()
            };
            let patch = Patch::Strategic(&body);
            match with_retries(|| api.patch(&n, &params, &patch)).await {
                Ok(_) => Ok(()),
                Err(e) if is_code(&e, 404) => Err(ClusterError::NotFound {
                    kind: "pod",
                    namespace: api.namespace().unwrap_or_default().to_string(),
                    name: n.clone(),
                }),
                Err(e) if is_code(&e, 409) => Err(ClusterError::Conflict(format!(
                    "pod {n} changed since it was observed; the next step re-plans: {}",
                    describe(&target, &e)
                ))),
                Err(e) => Err(refused(&target, "", &e)),
            }
        })
        .await?;
        self.expected.updates.push((key, vec![resource_version]));
        Ok(())
    }

    async fn delete_daemonset(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), ClusterError> {
        let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let params = DeleteParams {
            propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
            preconditions: Some(Preconditions {
                uid: Some(uid.into()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let (ns, n) = (namespace.to_string(), name.to_string());
        self.run(async move {
            match with_retries(|| api.delete(&n, &params)).await {
                Ok(_) => Ok(()),
                Err(e) if is_code(&e, 404) => Err(ClusterError::NotFound {
                    kind: "daemonset",
                    namespace: ns,
                    name: n,
                }),
                Err(e) if is_code(&e, 409) => Err(ClusterError::Conflict(format!(
                    "DaemonSet {ns}/{n} is not the one observed (uid precondition failed); the \
                     next step re-plans"
                ))),
                Err(e) => Err(refused(&target, "", &e)),
            }
        })
        .await?;
        self.expected
            .daemonsets
            .push(((namespace.to_string(), name.to_string()), None));
        Ok(())
    }

    async fn apply_daemonset(&mut self, daemonset: &DaemonSet) -> Result<(), ClusterError> {
        let namespace = daemonset
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = daemonset.metadata.name.clone().unwrap_or_default();
        let key = (namespace.clone(), name.clone());
        let before = self
            .cache
            .lock()
            .daemonsets
            .items
            .get(&key)
            .and_then(|d| d.metadata.resource_version.clone());
        let body = requests::daemonset_apply_body(daemonset);
        let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), &namespace);
        let target = self.target.clone();
        self.run(async move {
            let params = PatchParams::apply(&target.field_manager).force();
            let patch = Patch::Apply(&body);
            with_retries(|| api.patch(&name, &params, &patch))
                .await
                .map(|_| ())
                .map_err(|e| {
                    refused(
                        &target,
                        &format!("cannot apply the DaemonSet {namespace}/{name}: "),
                        &e,
                    )
                })
        })
        .await?;
        self.expected.daemonsets.push((key, Some(before)));
        Ok(())
    }

    async fn annotate_record(
        &mut self,
        namespace: &str,
        name: &str,
        annotations: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<(), ClusterError> {
        let api: Api<ManagedDaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let patch = serde_json::json!({"metadata": {"annotations": annotations}});
        let n = name.to_string();
        let key = (namespace.to_string(), name.to_string());
        let before = self
            .cache
            .lock()
            .records
            .items
            .get(&key)
            .map(|r| r.resource_version.clone());
        if let Some(before) = before {
            self.expected.records.push((key, Some(before)));
        }
        self.run(async move {
            let params = PatchParams {
                field_manager: Some(target.field_manager.clone()),
                ..PatchParams::default()
            };
            let patch = Patch::Merge(&patch);
            with_retries(|| api.patch(&n, &params, &patch))
                .await
                .map(|_| ())
                .map_err(|e| refused(&target, &format!("cannot annotate the record {n}: "), &e))
        })
        .await
    }

    async fn delete_record(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        let api: Api<ManagedDaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let target = self.target.clone();
        let params = DeleteParams {
            propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
            ..DeleteParams::default()
        };
        let (ns, n) = (namespace.to_string(), name.to_string());
        self.expected.records.push(((ns.clone(), n.clone()), None));
        self.run(async move {
            match with_retries(|| api.delete(&n, &params)).await {
                Ok(_) => Ok(()),
                Err(e) if is_code(&e, 404) => Err(ClusterError::NotFound {
                    kind: "manageddaemonset",
                    namespace: ns,
                    name: n,
                }),
                Err(e) => Err(refused(&target, "", &e)),
            }
        })
        .await
    }

    async fn remove_node_taint(
        &mut self,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
    ) -> Result<bool, ClusterError> {
        let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(self.client.clone());
        let target = self.target.clone();
        let (n, k) = (node.to_string(), key.to_string());
        let removed = self
            .run(async move { requests::remove_node_taint(&api, &n, &k, effect, &target).await })
            .await?;
        // The next observation waits until the watch shows the node without it (a re-plan on
        // the stale node would read it again for nothing).
        self.expected
            .taints
            .push(((String::new(), node.to_string()), key.to_string(), effect));
        Ok(removed)
    }

    async fn wait_for_change(&mut self, deadline: Timestamp) -> Result<bool, ClusterError> {
        let wait = deadline
            .duration_since(Timestamp::now())
            .try_into()
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs(3600));
        if wait.is_zero() {
            return Ok(self.cache.lock().version > self.seen);
        }
        // Anything since the last observation counts, so a change during planning is never
        // slept through.
        let (cache, seen) = (Arc::clone(&self.cache), self.seen);
        self.run(async move {
            Ok(tokio::time::timeout(wait, cache.changed_since(seen))
                .await
                .is_ok())
        })
        .await
    }
}

/// The API requests of the writes, apart from the backend's state, so their shape is tested
/// against a mock API server.
pub mod requests {
    use super::*;

    /// Creates a pod; returns the name the server gave it.
    pub async fn create_pod(
        api: &Api<Pod>,
        pod: &Pod,
        target: &Target,
    ) -> Result<String, ClusterError> {
        let params = PostParams {
            field_manager: Some(target.field_manager.clone()),
            ..PostParams::default()
        };
        with_retries(|| api.create(&params, pod))
            .await
            .map(|created| created.metadata.name.unwrap_or_default())
            .map_err(|e| refused(target, "", &e))
    }

    /// Deletes a pod only if it is still the one observed: `(uid, resourceVersion)`
    /// preconditions, so a stale view never deletes a pod that replaced it.
    pub async fn delete_pod(
        api: &Api<Pod>,
        (namespace, name): (&str, &str),
        (uid, resource_version): (&str, &str),
        target: &Target,
    ) -> Result<(), ClusterError> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.into()),
                resource_version: Some(resource_version.into()),
            }),
            ..DeleteParams::default()
        };
        match with_retries(|| api.delete(name, &params)).await {
            Ok(_) => Ok(()),
            Err(e) if is_code(&e, 404) => Err(ClusterError::NotFound {
                kind: "pod",
                namespace: namespace.into(),
                name: name.into(),
            }),
            Err(e) if is_code(&e, 409) => Err(ClusterError::Conflict(format!(
                "pod {namespace}/{name} changed since it was observed (delete precondition \
                 failed); the next step re-plans"
            ))),
            Err(e) => Err(refused(target, "", &e)),
        }
    }

    /// Updates a pod in place: a JSON patch that tests the resourceVersion, then replaces the
    /// images and sets the labels, so that a pod changed since it was planned is refused.
    pub async fn patch_pod_images(
        api: &Api<Pod>,
        name: &str,
        patch: &crate::cluster::ImagePatch,
        target: &Target,
    ) -> Result<(), ClusterError> {
        let ops: json_patch::Patch = serde_json::from_value(image_patch(patch))
            .map_err(|e| ClusterError::Backend(format!("building the in-place patch: {e}")))?;
        let params = PatchParams {
            field_manager: Some(target.field_manager.clone()),
            ..PatchParams::default()
        };
        match api.patch(name, &params, &Patch::Json::<()>(ops)).await {
            Ok(_) => Ok(()),
            Err(e) if is_code(&e, 404) => Err(ClusterError::NotFound {
                kind: "pod",
                namespace: api.namespace().unwrap_or_default().to_string(),
                name: name.into(),
            }),
            Err(e) if is_code(&e, 409) || is_code(&e, 422) => Err(ClusterError::Conflict(format!(
                "pod {name} changed since it was planned; the next step re-plans: {}",
                describe(target, &e)
            ))),
            Err(e) => Err(refused(target, "", &e)),
        }
    }

    /// Sets a condition of a pod through the `pods/status` subresource (a strategic merge
    /// patch: conditions merge by type).
    pub async fn set_pod_condition(
        api: &Api<Pod>,
        name: &str,
        condition: &str,
        status: bool,
        resource_version: Option<&str>,
        target: &Target,
    ) -> Result<String, ClusterError> {
        let patch = condition_patch(condition, status, resource_version, Timestamp::now());
        let params = PatchParams {
            field_manager: Some(target.field_manager.clone()),
            ..PatchParams::default()
        };
        let patch = Patch::Strategic(patch);
        match with_retries(|| api.patch_status(name, &params, &patch)).await {
            Ok(pod) => Ok(pod.metadata.resource_version.unwrap_or_default()),
            Err(e) if is_code(&e, 404) => Err(ClusterError::NotFound {
                kind: "pod",
                namespace: api.namespace().unwrap_or_default().to_string(),
                name: name.into(),
            }),
            Err(e) if is_code(&e, 409) => Err(ClusterError::Conflict(format!(
                "pod {name} changed since it was planned; the next step re-plans: {}",
                describe(target, &e)
            ))),
            Err(e) => Err(refused(target, "", &e)),
        }
    }

    pub use daemonsync_core::record::bodies::*;

    /// Where the permission to remove readiness taints is granted.
    pub const READINESS_TAINT_RBAC: &str = "examples/deploy/rbac-readiness-taint.yaml";

    /// Removes one taint from a node as upstream's `RemoveTaintOffNode` does: reads the node,
    /// then sends a JSON patch that tests the resourceVersion read and removes that taint
    /// alone; a conflict (the node changed in between: 409, or the test failing, 422) reads it
    /// again, at most [`TAINT_ATTEMPTS`](crate::cluster::TAINT_ATTEMPTS) times. `Ok(false)`:
    /// the node no longer has it.
    pub async fn remove_node_taint(
        api: &Api<k8s_openapi::api::core::v1::Node>,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
        target: &Target,
    ) -> Result<bool, ClusterError> {
        let gone = || ClusterError::NotFound {
            kind: "node",
            namespace: String::new(),
            name: node.into(),
        };
        // A 403 names what this write needs and where it is granted: it is not in rbac.yaml.
        let refused_taint = |e: &kube::Error| match e {
            kube::Error::Api(status) if status.code == 401 || status.code == 403 => {
                ClusterError::Forbidden(format!(
                    "removing readiness taint {key} from node {node}: the API server of {target} \
                     forbids it ({}): {}; daemonsync.io/readiness-taint needs get and patch on \
                     nodes: kubectl apply -f {READINESS_TAINT_RBAC}",
                    status.code, status.message
                ))
            }
            _ => refused(
                target,
                &format!("removing taint {key} from node {node}: "),
                e,
            ),
        };
        let params = PatchParams {
            field_manager: Some(target.field_manager.clone()),
            ..PatchParams::default()
        };
        for _ in 0..crate::cluster::TAINT_ATTEMPTS {
            let current = match with_retries(|| api.get_opt(node)).await {
                Ok(Some(n)) => n,
                Ok(None) => return Err(gone()),
                Err(e) => return Err(refused_taint(&e)),
            };
            let object = serde_json::to_value(&current).unwrap_or_default();
            let Some(index) = taint_index(&object, key, effect.as_str()) else {
                return Ok(false);
            };
            let resource_version = current.metadata.resource_version.unwrap_or_default();
            let ops: json_patch::Patch =
                serde_json::from_value(taint_removal_patch(&resource_version, index))
                    .map_err(|e| ClusterError::Backend(format!("building the taint patch: {e}")))?;
            match api.patch(node, &params, &Patch::Json::<()>(ops)).await {
                Ok(_) => return Ok(true),
                Err(e) if is_code(&e, 404) => return Err(gone()),
                Err(e) if is_code(&e, 409) || is_code(&e, 422) => {
                    tracing::debug!(
                        node,
                        key,
                        "the node changed since it was read; reading it again"
                    );
                }
                Err(e) => return Err(refused_taint(&e)),
            }
        }
        Err(ClusterError::Rejected(format!(
            "node {node} changed between each read and patch; taint {key} is removed at the \
             next step"
        )))
    }

    /// A copy's name is taken by an object of other content.
    pub fn other_content(copy: &crate::manifest::config::ConfigCopy) -> ClusterError {
        ClusterError::Rejected(format!(
            "{} {}/{} exists with other content: it is not daemonsync's copy of this \
             revision's {} {}; delete or rename it",
            copy.kind.kind(),
            copy.namespace,
            copy.name,
            copy.kind.kind(),
            copy.original
        ))
    }

    /// Creates an immutable copy of a ConfigMap or Secret owned by `owner`. When its name is
    /// taken, the object of that name (listed by name: daemonsync may list, not get) with
    /// the same content is success: copies are named after their content.
    pub async fn create_config_copy(
        client: &kube::Client,
        copy: &crate::manifest::config::ConfigCopy,
        owner: k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
        target: &Target,
    ) -> Result<(), ClusterError> {
        use k8s_openapi::api::core::v1::{ConfigMap, Secret};
        let params = PostParams {
            field_manager: Some(target.field_manager.clone()),
            ..PostParams::default()
        };
        let body = copy.body(owner);
        let ns = copy.namespace.as_str();
        let created = match copy.kind {
            ConfigKind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
                let object: ConfigMap = serde_json::from_value(body)
                    .map_err(|e| ClusterError::Backend(format!("building the copy: {e}")))?;
                with_retries(|| api.create(&params, &object))
                    .await
                    .map(|_| ())
            }
            ConfigKind::Secret => {
                let api: Api<Secret> = Api::namespaced(client.clone(), ns);
                let object: Secret = serde_json::from_value(body)
                    .map_err(|_| ClusterError::Backend("building the copy failed".into()))?;
                with_retries(|| api.create(&params, &object))
                    .await
                    .map(|_| ())
            }
        };
        let what = format!("cannot create {} {ns}/{}: ", copy.kind.kind(), copy.name);
        match created {
            Ok(()) => Ok(()),
            Err(e) if is_code(&e, 409) => {
                let by_name = kube::api::ListParams::default()
                    .fields(&format!("metadata.name={}", copy.name));
                let existing = match copy.kind {
                    ConfigKind::ConfigMap => {
                        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
                        with_retries(|| api.list(&by_name))
                            .await
                            .map(|l| l.items.first().and_then(|o| serde_json::to_value(o).ok()))
                    }
                    ConfigKind::Secret => {
                        let api: Api<Secret> = Api::namespaced(client.clone(), ns);
                        with_retries(|| api.list(&by_name))
                            .await
                            .map(|l| l.items.first().and_then(|o| serde_json::to_value(o).ok()))
                    }
                }
                .map_err(|e| refused(target, &what, &e))?;
                match existing {
                    Some(o) if copy.same_content(&o) => Ok(()),
                    _ => Err(other_content(copy)),
                }
            }
            Err(e) => Err(refused(target, &what, &e)),
        }
    }

    /// Deletes a copy only if it is still the one observed (a uid precondition).
    pub async fn delete_config_copy(
        client: &kube::Client,
        copy: &crate::cluster::ObservedCopy,
        target: &Target,
    ) -> Result<(), ClusterError> {
        use k8s_openapi::api::core::v1::{ConfigMap, Secret};
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(copy.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let (ns, name) = (copy.namespace.as_str(), copy.name.as_str());
        let deleted = match copy.kind {
            ConfigKind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
                with_retries(|| api.delete(name, &params)).await.map(|_| ())
            }
            ConfigKind::Secret => {
                let api: Api<Secret> = Api::namespaced(client.clone(), ns);
                with_retries(|| api.delete(name, &params)).await.map(|_| ())
            }
        };
        match deleted {
            Ok(()) => Ok(()),
            Err(e) if is_code(&e, 404) => Err(ClusterError::NotFound {
                kind: copy.kind.as_str(),
                namespace: ns.into(),
                name: name.into(),
            }),
            Err(e) if is_code(&e, 409) => Err(ClusterError::Conflict(format!(
                "{} {ns}/{name} is not the copy observed (uid precondition failed); the next \
                 step re-plans",
                copy.kind.kind()
            ))),
            Err(e) => Err(refused(target, "", &e)),
        }
    }

    /// Writes a record's status through the `status` subresource (server-side apply).
    pub async fn write_status(
        api: &Api<ManagedDaemonSet>,
        name: &str,
        status: &ManagedDaemonSetStatus,
        target: &Target,
    ) -> Result<(), ClusterError> {
        let patch = serde_json::json!({
            "apiVersion": RECORD_API_VERSION,
            "kind": RECORD_KIND,
            "status": status,
        });
        let params = PatchParams::apply(&target.field_manager).force();
        let patch = Patch::Apply(&patch);
        with_retries(|| api.patch_status(name, &params, &patch))
            .await
            .map(|_| ())
            .map_err(|e| refused(target, "", &e))
    }
}

/// The (namespace, selector) of each DaemonSet whose pods a plan of `desired` must see
/// besides the managed ones: those the built-in controller may run today.
pub fn adoption_selectors(desired: &[crate::plan::Desired]) -> Vec<(String, String)> {
    desired
        .iter()
        .filter_map(|d| {
            let spec = crate::plan::DaemonSetSpec::compile(&d.daemonset);
            let selector = spec.selector.filter(|s| !s.is_empty())?;
            Some((spec.namespace, selector.to_string()))
        })
        .collect()
}

//! Leader election (`--leader-election`): replicas campaign for a `coordination.k8s.io/v1`
//! Lease through kube-lease-manager, and only the holder writes.
//!
//! kube-lease-manager acquires the Lease with a server-side apply (so two replicas racing for a
//! free Lease get a field-manager conflict and one wins), renews it with strategic-merge
//! patches and releases it by patching the holder fields to `null`. Two things it does not do
//! are done here:
//!
//! * **Stop writing before the Lease can expire.** When renewals fail, the crate keeps
//!   retrying and never reports the loss until it reads the Lease again. So leadership is
//!   judged from the Lease as last read from the server: this replica leads while the Lease
//!   names it and its last renewal is recent enough that no other replica can take over yet
//!   (`renewTime + leaseDuration - margin > now`, margin a third of the duration). A replica
//!   cut off from the API server therefore stops writing a third of the duration before
//!   another may start.
//! * **Take over at once after a release.** The crate's follower sleeps until the holder's
//!   Lease would expire. Here the Lease is read every few seconds; a Lease released by its
//!   holder (on SIGTERM) wakes the followers, which campaign again immediately.
//!
//! Each replica names itself: the Lease's `holderIdentity` is its identity, its field manager
//! is `daemonsync-<identity>`, and the client it is given should carry the identity in its
//! User-Agent (`cluster::kube::KubeOptions::identity`), so an observer can tell who wrote.
//! Identities must be unique among replicas (a pod name is).

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube_lease_manager::{
    LeaseCreateMode, LeaseManager, LeaseManagerBuilder, LeaseManagerError, LeaseParams,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// The Lease name unless `--leader-election-lease` says otherwise.
pub const DEFAULT_LEASE_NAME: &str = "daemonsync";

/// How long a Lease is valid after its last renewal unless configured otherwise (as
/// client-go's leader election).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);

/// The shortest lease duration: kube-lease-manager counts whole seconds and renews at least a
/// second before expiry.
pub const MIN_LEASE_DURATION: Duration = Duration::from_secs(2);

/// The longest lease duration (a replica that dies holds the Lease this long).
pub const MAX_LEASE_DURATION: Duration = Duration::from_secs(3600);

/// The Lease annotation through which a replica that received a webhook asks the leader to
/// fetch: its value changes with every request.
pub const FETCH_REQUESTED_ANNOTATION: &str = "daemonsync.io/fetch-requested";

/// How long [`Leadership::release`] waits for the release to reach the API server.
pub const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// What to campaign for, and as whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderOptions {
    /// The namespace of the Lease (daemonsync's own).
    pub namespace: String,
    /// The Lease name ([`DEFAULT_LEASE_NAME`]).
    pub name: String,
    /// This replica's identity ([`default_identity`]); unique among replicas.
    pub identity: String,
    /// How long the Lease stays valid after a renewal ([`DEFAULT_LEASE_DURATION`]); whole
    /// seconds, from [`MIN_LEASE_DURATION`] to [`MAX_LEASE_DURATION`].
    pub lease_duration: Duration,
}

impl LeaderOptions {
    /// The defaults for a replica in `namespace`: Lease `daemonsync`, identity
    /// [`default_identity`], 15 s.
    pub fn new(namespace: impl Into<String>) -> LeaderOptions {
        LeaderOptions {
            namespace: namespace.into(),
            name: DEFAULT_LEASE_NAME.into(),
            identity: default_identity(),
            lease_duration: DEFAULT_LEASE_DURATION,
        }
    }
}

/// This replica's identity: the environment variable `POD_NAME` (the deploy manifest sets it
/// from the downward API), else the host name, else `daemonsync-<pid>`.
pub fn default_identity() -> String {
    let hostname = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .or_else(|| std::env::var("HOSTNAME").ok());
    identity_from(std::env::var("POD_NAME").ok(), hostname, std::process::id())
}

/// [`default_identity`] from its inputs.
fn identity_from(pod_name: Option<String>, hostname: Option<String>, pid: u32) -> String {
    [pod_name, hostname]
        .into_iter()
        .flatten()
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| format!("daemonsync-{pid}"))
}

pub use crate::cluster::kube::field_manager;

/// The timing derived from the lease duration `d` (whole seconds):
/// renew when `grace` is left (every `d - grace`), stop writing when `margin` is left, read
/// the Lease every `poll`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Timing {
    duration: Duration,
    grace_secs: u64,
    margin: Duration,
    poll: Duration,
}

impl Timing {
    fn of(d: Duration) -> Result<Timing, String> {
        if d < MIN_LEASE_DURATION {
            return Err(format!(
                "the lease duration {d:?} is too short: use at least {}s",
                MIN_LEASE_DURATION.as_secs()
            ));
        }
        if d > MAX_LEASE_DURATION {
            return Err(format!(
                "the lease duration {d:?} is too long: use at most {}s",
                MAX_LEASE_DURATION.as_secs()
            ));
        }
        // Whole seconds, rounded up: the Lease stores seconds.
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        // Renew when two thirds are left: a failed renewal has a third of the duration to be
        // retried before writes stop.
        let grace_secs = (secs * 2 / 3).clamp(1, secs - 1);
        let duration = Duration::from_secs(secs);
        let margin = duration / 3;
        let poll = (Duration::from_secs(grace_secs).saturating_sub(margin) / 2)
            .max(Duration::from_millis(100));
        Ok(Timing {
            duration,
            grace_secs,
            margin,
            poll,
        })
    }
}

/// The Lease as last read: its holder, last renewal and duration.
#[derive(Debug, Default, Clone)]
struct Seen {
    holder: Option<String>,
    renewed: Option<SystemTime>,
    duration: Option<Duration>,
    /// The Lease's [`FETCH_REQUESTED_ANNOTATION`].
    fetch_requested: Option<String>,
}

impl Seen {
    fn of(lease: Option<&Lease>) -> Seen {
        let Some(spec) = lease.and_then(|l| l.spec.as_ref()) else {
            return Seen::default();
        };
        let fetch_requested = lease
            .and_then(|l| l.metadata.annotations.as_ref())
            .and_then(|a| a.get(FETCH_REQUESTED_ANNOTATION))
            .cloned();
        Seen {
            fetch_requested,
            holder: spec.holder_identity.clone(),
            renewed: spec.renew_time.as_ref().map(|t| SystemTime::from(t.0)),
            duration: spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map(Duration::from_secs),
        }
    }
}

impl Seen {
    /// Whether no one holds the Lease at `now`: no holder, or not renewed within its duration.
    fn lapsed(&self, now: SystemTime) -> bool {
        let held = self.holder.as_deref().is_some_and(|h| !h.is_empty());
        match (held, self.renewed, self.duration) {
            (true, Some(renewed), Some(duration)) => renewed + duration < now,
            (held, _, _) => !held,
        }
    }
}

/// Whether the Lease `NAMESPACE/NAME` of another daemon lapsed: missing, held by no one, or
/// not renewed within its duration. What that daemon drove, this one may take. An error
/// reading it (no RBAC to, the API down) counts as held: nothing is taken on a guess.
pub async fn lapsed(client: &kube::Client, lease: &str) -> bool {
    let Some((namespace, name)) = lease.split_once('/') else {
        return false;
    };
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(name).await {
        Ok(found) => Seen::of(found.as_ref()).lapsed(SystemTime::now()),
        Err(e) => {
            tracing::debug!(lease, error = %e, "cannot read another daemon's Lease: counted as held");
            false
        }
    }
}

/// State shared by the handle and its tasks.
#[derive(Debug)]
struct Shared {
    identity: String,
    timing: Timing,
    seen: Mutex<Seen>,
    /// False once released: no more leading, whatever the Lease says.
    active: AtomicBool,
    changes: watch::Sender<bool>,
    /// Notified when another replica asks the leader to fetch (a webhook it received).
    fetch_requests: Arc<Notify>,
}

impl Shared {
    fn valid_until(&self) -> Option<SystemTime> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.holder.as_deref() != Some(self.identity.as_str()) {
            return None;
        }
        let duration = seen
            .duration
            .map_or(self.timing.duration, |d| d.min(self.timing.duration));
        seen.renewed?
            .checked_add(duration)?
            .checked_sub(self.timing.margin)
    }

    fn is_leader(&self) -> bool {
        self.valid_until()
            .is_some_and(|until| SystemTime::now() < until)
    }

    /// Tells subscribers when leadership changed since the last call.
    fn publish(&self) {
        let now = self.is_leader();
        let changed = self.changes.send_if_modified(|was| {
            let changed = *was != now;
            *was = now;
            changed
        });
        if changed {
            if now {
                tracing::info!(identity = %self.identity, "this replica leads: it holds the lease and writes");
            } else {
                tracing::warn!(identity = %self.identity, "this replica no longer leads: it stops writing");
            }
        }
    }
}

/// This replica's part in the election, campaigning in the background until released (or
/// dropped: then it stops renewing and the Lease expires).
#[derive(Debug)]
pub struct Leadership {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    tasks: Tasks,
    api: Api<Lease>,
    name: String,
}

/// The background tasks, aborted when the handle goes away.
#[derive(Debug)]
struct Tasks {
    campaign: JoinHandle<()>,
    observer: JoinHandle<()>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.campaign.abort();
        self.observer.abort();
    }
}

/// What the campaign needs to (re)build its lease manager.
#[derive(Clone)]
struct Campaign {
    client: kube::Client,
    namespace: String,
    name: String,
    params: LeaseParams,
}

impl Campaign {
    async fn manager(&self) -> Result<LeaseManager, LeaseManagerError> {
        LeaseManagerBuilder::new(self.client.clone(), self.name.clone())
            .with_namespace(self.namespace.clone())
            .with_parameters(self.params.clone())
            .with_create_mode(LeaseCreateMode::AutoCreate)
            .build()
            .await
    }
}

impl Leadership {
    /// Reads (or creates) the Lease, then campaigns in the background on the current tokio
    /// runtime. Errors are one line naming the Lease and the fix.
    pub async fn start(client: kube::Client, opts: LeaderOptions) -> anyhow::Result<Leadership> {
        let LeaderOptions {
            namespace,
            name,
            identity,
            lease_duration,
        } = opts;
        let timing = Timing::of(lease_duration)
            .map_err(|why| anyhow::anyhow!("cannot campaign for leadership: {why}"))?;
        if identity.trim().is_empty() {
            anyhow::bail!(
                "cannot campaign for leadership without an identity: set POD_NAME (or give one explicitly)"
            );
        }
        if name.is_empty() || namespace.is_empty() {
            anyhow::bail!(
                "cannot campaign for leadership: the Lease needs a namespace and a name (got {namespace:?}/{name:?})"
            );
        }
        let params = LeaseParams::new(
            identity.clone(),
            timing.duration.as_secs(),
            timing.grace_secs,
        )
        .with_field_manager(field_manager(&identity));
        let campaign = Campaign {
            client: client.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
            params,
        };
        let manager = campaign.manager().await.map_err(|e| {
            anyhow::anyhow!(
                "cannot read or create the Lease {namespace}/{name} for leader election: {}; check that daemonsync's service account may get, create and patch leases.coordination.k8s.io in {namespace}",
                one_line(&e.to_string())
            )
        })?;
        let (changes, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            identity,
            timing,
            seen: Mutex::new(Seen::default()),
            active: AtomicBool::new(true),
            changes,
            fetch_requests: Arc::new(Notify::new()),
        });
        let (stop, stopped) = watch::channel(false);
        let poke = Arc::new(Notify::new());
        let free = Arc::new(Notify::new());
        let api: Api<Lease> = Api::namespaced(client, &namespace);
        let observer = tokio::spawn(observe(
            api.clone(),
            name.clone(),
            shared.clone(),
            poke.clone(),
            free.clone(),
            stopped.clone(),
        ));
        let campaign = tokio::spawn(run_campaign(
            manager,
            campaign,
            shared.clone(),
            poke,
            free,
            stopped,
        ));
        Ok(Leadership {
            api,
            name,
            shared,
            stop,
            tasks: Tasks { campaign, observer },
        })
    }

    /// True only while this replica holds the Lease and its last successful renewal is
    /// recent enough that the Lease cannot have expired (`renewTime + duration - margin` is
    /// still ahead). Check it before every write batch.
    pub fn is_leader(&self) -> bool {
        self.shared.is_leader()
    }

    /// This replica's identity (the Lease's `holderIdentity` while it leads).
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }

    /// Changes of leadership, for the `daemonsync_leader` metric and to wake the loop. They
    /// arrive within a read of the Lease (about a sixth of the lease duration) of the change;
    /// [`Leadership::is_leader`] is exact.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.shared.changes.subscribe()
    }

    /// Notified when another replica asked the leader to fetch the source (it received the
    /// webhook: the Service picks any replica). Seen within a read of the Lease.
    pub fn fetch_requests(&self) -> Arc<Notify> {
        Arc::clone(&self.shared.fetch_requests)
    }

    /// Asks the leader to fetch the source now, through the Lease's
    /// [`FETCH_REQUESTED_ANNOTATION`] (a merge patch: the lease fields stay the campaign's).
    pub async fn request_fetch(&self, why: &str) -> Result<(), kube::Error> {
        let stamp = format!(
            "{} {} {}",
            crate::model::Timestamp::now(),
            self.shared.identity,
            why.chars().take(100).collect::<String>()
        );
        let patch = serde_json::json!({
            "metadata": {"annotations": {FETCH_REQUESTED_ANNOTATION: stamp}}
        });
        let params = kube::api::PatchParams {
            field_manager: Some(field_manager(&self.shared.identity)),
            ..kube::api::PatchParams::default()
        };
        self.api
            .patch(&self.name, &params, &kube::api::Patch::Merge(&patch))
            .await
            .map(|_| ())
    }

    /// Stops writing at once, then releases the Lease if held so another replica takes over
    /// without waiting for it to expire. Bounded by [`RELEASE_TIMEOUT`]: past it the Lease
    /// is left to expire.
    pub async fn release(mut self) {
        self.shared.active.store(false, Ordering::Release);
        self.shared.publish();
        let _ = self.stop.send(true);
        let released = tokio::time::timeout(RELEASE_TIMEOUT, &mut self.tasks.campaign).await;
        if released.is_err() {
            tracing::warn!(identity = %self.shared.identity, "the lease was not released within {RELEASE_TIMEOUT:?}; it will expire instead");
        }
    }
}

/// The first line of an error, for one-line messages.
fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

/// Drives the lease manager: acquire, renew, and campaign again when the Lease is seen free.
async fn run_campaign(
    mut manager: LeaseManager,
    campaign: Campaign,
    shared: Arc<Shared>,
    poke: Arc<Notify>,
    free: Arc<Notify>,
    mut stopped: watch::Receiver<bool>,
) {
    enum Step {
        Stop,
        Changed(Result<bool, LeaseManagerError>),
        Free,
    }
    let retry_min = Duration::from_millis(200);
    let retry_max = (shared.timing.duration - Duration::from_secs(shared.timing.grace_secs))
        .max(Duration::from_secs(1));
    let mut retry = retry_min;
    let mut holding = false;
    loop {
        let step = tokio::select! {
            biased;
            _ = stopped.wait_for(|s| *s) => Step::Stop,
            r = manager.changed() => Step::Changed(r),
            _ = free.notified(), if !holding => Step::Free,
        };
        match step {
            Step::Stop => break,
            Step::Changed(Ok(held)) => {
                holding = held;
                retry = retry_min;
                tracing::debug!(identity = %shared.identity, held, "lease manager reports a change");
                poke.notify_one();
            }
            Step::Changed(Err(e)) => {
                tracing::warn!(identity = %shared.identity, error = %one_line(&e.to_string()), "leader election: cannot read or renew the lease; retrying in {retry:?}");
                let rebuild = matches!(e, LeaseManagerError::NonexistentLease(_));
                tokio::select! {
                    _ = stopped.wait_for(|s| *s) => break,
                    _ = tokio::time::sleep(retry) => {}
                }
                retry = (retry * 2).min(retry_max);
                if rebuild && let Ok(m) = campaign.manager().await {
                    manager = m;
                    holding = false;
                }
            }
            // The crate's follower would sleep until the old holder's lease expires; a fresh
            // manager reads the Lease and campaigns now.
            Step::Free => match campaign.manager().await {
                Ok(m) => manager = m,
                Err(e) => {
                    tracing::debug!(identity = %shared.identity, error = %one_line(&e.to_string()), "cannot campaign again yet")
                }
            },
        }
    }
    if let Err(e) = manager.release().await {
        tracing::warn!(identity = %shared.identity, error = %one_line(&e.to_string()), "cannot release the lease; it will expire instead");
    } else {
        tracing::info!(identity = %shared.identity, "released the lease (if held)");
    }
}

/// Reads the Lease every poll interval (and when poked), records what it says and tells the
/// campaign when it is free.
async fn observe(
    api: Api<Lease>,
    name: String,
    shared: Arc<Shared>,
    poke: Arc<Notify>,
    free: Arc<Notify>,
    mut stopped: watch::Receiver<bool>,
) {
    let poll = shared.timing.poll;
    let timeout = poll.max(Duration::from_secs(1));
    // Consecutive reads that found the Lease free.
    let mut free_reads = 0u32;
    loop {
        tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(poll) => {}
            _ = poke.notified() => {}
        }
        // A failed read keeps the last renewal seen, so leadership runs out on time.
        if let Ok(Ok(lease)) = tokio::time::timeout(timeout, api.get_opt(&name)).await {
            let seen = Seen::of(lease.as_ref());
            let before = std::mem::replace(
                &mut *shared.seen.lock().unwrap_or_else(PoisonError::into_inner),
                seen.clone(),
            );
            free_reads = if lease.is_some() && seen.holder.is_none() {
                free_reads + 1
            } else {
                0
            };
            // Just released by another replica, or free for a whole poll interval (the
            // manager would have taken a Lease free from the start by then: it is sleeping
            // until the old holder's expiry).
            if seen.fetch_requested.is_some()
                && seen.fetch_requested != before.fetch_requested
                && before.renewed.is_some()
            {
                shared.fetch_requests.notify_one();
            }
            let released = before.holder.is_some_and(|h| h != shared.identity);
            if (free_reads == 1 && released) || free_reads >= 2 {
                free.notify_one();
            }
        }
        shared.publish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::serve::{ServeOptions, Server};
    use std::future::Future;

    const LEASE: &str = "daemonsync";

    #[test]
    fn another_daemons_lease_lapses_when_released_or_not_renewed_within_its_duration() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let held = |renewed_ago: u64| Seen {
            holder: Some("pod-a".into()),
            renewed: Some(now - Duration::from_secs(renewed_ago)),
            duration: Some(Duration::from_secs(15)),
            fetch_requested: None,
        };
        assert!(!held(5).lapsed(now), "renewed 5 s ago, valid 15 s");
        assert!(
            held(16).lapsed(now),
            "not renewed for longer than its duration"
        );
        assert!(Seen::default().lapsed(now), "missing");
        let released = Seen {
            holder: Some(String::new()),
            ..held(1)
        };
        assert!(released.lapsed(now), "released: no holder");
        let no_renewal = Seen {
            renewed: None,
            ..held(0)
        };
        assert!(
            !no_renewal.lapsed(now),
            "a holder without a renewal time is taken at its word"
        );
    }

    fn sim_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("sim.yaml"),
            "seed: 3\nnodes:\n  - name: n-1\n",
        )
        .unwrap();
        dir
    }

    async fn sim(dir: &tempfile::TempDir) -> Server {
        Server::start(ServeOptions::new(dir.path().join("sim.yaml")))
            .await
            .expect("sim serve starts")
    }

    fn client(url: &str) -> kube::Client {
        let mut config = kube::Config::new(url.parse().unwrap());
        config.connect_timeout = Some(Duration::from_secs(2));
        config.read_timeout = Some(Duration::from_secs(5));
        kube::Client::try_from(config).unwrap()
    }

    fn opts(identity: &str, secs: u64) -> LeaderOptions {
        LeaderOptions {
            identity: identity.into(),
            lease_duration: Duration::from_secs(secs),
            ..LeaderOptions::new("default")
        }
    }

    /// Waits until `cond` holds, checking every 20 ms; fails the test after `limit`.
    async fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + limit;
        while !cond() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "not within {limit:?}: {what}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for `fut` at most `limit`.
    async fn within<T>(what: &str, limit: Duration, fut: impl Future<Output = T>) -> T {
        tokio::time::timeout(limit, fut)
            .await
            .unwrap_or_else(|_| panic!("not within {limit:?}: {what}"))
    }

    /// The Lease's holder and last renewal, read through `api`.
    async fn lease(api: &Api<Lease>) -> (Option<String>, Option<SystemTime>) {
        let l = api.get(LEASE).await.unwrap();
        let seen = Seen::of(Some(&l));
        (seen.holder, seen.renewed)
    }

    /// A TCP proxy to `upstream` that can be cut: open connections are closed and new ones
    /// refused, as when a replica loses its network.
    struct Proxy {
        url: String,
        task: JoinHandle<()>,
    }

    impl Proxy {
        async fn to(upstream_url: &str) -> Proxy {
            let upstream = upstream_url.trim_start_matches("http://").to_string();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let task = tokio::spawn(async move {
                let mut connections = tokio::task::JoinSet::new();
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let upstream = upstream.clone();
                    connections.spawn(async move {
                        if let Ok(mut out) = tokio::net::TcpStream::connect(upstream).await {
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                        }
                    });
                }
            });
            Proxy { url, task }
        }

        fn cut(&self) {
            self.task.abort();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn exactly_one_of_two_replicas_leads_and_the_lease_names_it() {
        let dir = sim_dir();
        let server = sim(&dir).await;
        let api: Api<Lease> = Api::namespaced(client(server.url()), "default");
        let a = Leadership::start(client(server.url()), opts("replica-a", 3))
            .await
            .unwrap();
        let b = Leadership::start(client(server.url()), opts("replica-b", 3))
            .await
            .unwrap();
        until("a replica leads", Duration::from_secs(10), || {
            a.is_leader() || b.is_leader()
        })
        .await;
        let (leader, follower) = if a.is_leader() { (a, b) } else { (b, a) };
        let mut changes = leader.subscribe();
        within(
            "the leader's subscribers hear of it",
            Duration::from_secs(5),
            changes.wait_for(|l| *l),
        )
        .await
        .unwrap();
        // Across several renewals: one leader, named by the Lease.
        let (_, mut renewed) = lease(&api).await;
        for _ in 0..3 {
            let previous = renewed;
            let mut holder = None;
            within("the lease is renewed", Duration::from_secs(10), async {
                while renewed == previous {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    (holder, renewed) = lease(&api).await;
                }
            })
            .await;
            assert_eq!(holder.as_deref(), Some(leader.identity()));
            assert!(leader.is_leader());
            assert!(!follower.is_leader());
            assert!(!*follower.subscribe().borrow());
        }
        // A follower leaving changes nothing.
        follower.release().await;
        let (holder, _) = lease(&api).await;
        assert_eq!(holder.as_deref(), Some(leader.identity()));
        assert!(leader.is_leader());
        let identity = leader.identity().to_string();
        leader.release().await;
        let (holder, _) = lease(&api).await;
        assert_eq!(holder, None, "{identity} released the lease");
        server.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_follower_relays_a_fetch_request_to_the_leader_through_the_lease() {
        let dir = sim_dir();
        let server = sim(&dir).await;
        let a = Leadership::start(client(server.url()), opts("replica-a", 3))
            .await
            .unwrap();
        until("replica-a leads", Duration::from_secs(10), || a.is_leader()).await;
        let b = Leadership::start(client(server.url()), opts("replica-b", 3))
            .await
            .unwrap();
        let requests = a.fetch_requests();
        let heard = requests.notified();
        tokio::pin!(heard);
        heard.as_mut().enable();
        b.request_fetch("webhook")
            .await
            .expect("the follower may patch the lease");
        within(
            "the leader hears the request within a read of the lease",
            Duration::from_secs(5),
            heard,
        )
        .await;
        // The lease stays the campaign's: the leader still leads, renewing.
        assert!(a.is_leader());
        assert!(!b.is_leader());
        b.release().await;
        a.release().await;
        server.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_released_lease_is_taken_over_well_before_it_would_expire() {
        let dir = sim_dir();
        let server = sim(&dir).await;
        let api: Api<Lease> = Api::namespaced(client(server.url()), "default");
        // Ten seconds: without the hand-over the follower would wait up to that long.
        let a = Leadership::start(client(server.url()), opts("replica-a", 10))
            .await
            .unwrap();
        until("replica-a leads", Duration::from_secs(10), || a.is_leader()).await;
        let b = Leadership::start(client(server.url()), opts("replica-b", 10))
            .await
            .unwrap();
        let mut b_changes = b.subscribe();
        a.release().await;
        let (holder, _) = lease(&api).await;
        assert_ne!(holder.as_deref(), Some("replica-a"));
        within(
            "replica-b leads within half the lease duration",
            Duration::from_secs(5),
            b_changes.wait_for(|l| *l),
        )
        .await
        .unwrap();
        assert!(b.is_leader());
        let (holder, _) = lease(&api).await;
        assert_eq!(holder.as_deref(), Some("replica-b"));
        b.release().await;
        server.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_leader_cut_off_from_the_api_server_stops_before_another_can_start() {
        let dir = sim_dir();
        let server = sim(&dir).await;
        let api: Api<Lease> = Api::namespaced(client(server.url()), "default");
        let proxy = Proxy::to(server.url()).await;
        let a = Leadership::start(client(&proxy.url), opts("replica-a", 6))
            .await
            .unwrap();
        until("replica-a leads", Duration::from_secs(10), || a.is_leader()).await;
        let b = Leadership::start(client(server.url()), opts("replica-b", 6))
            .await
            .unwrap();
        let mut a_changes = a.subscribe();
        proxy.cut();
        until("replica-a stops leading", Duration::from_secs(10), || {
            !a.is_leader()
        })
        .await;
        let stopped_at = SystemTime::now();
        let (holder, renewed) = lease(&api).await;
        assert_eq!(
            holder.as_deref(),
            Some("replica-a"),
            "nobody could take over yet"
        );
        let expires = renewed.unwrap() + Duration::from_secs(6);
        assert!(
            stopped_at < expires,
            "replica-a led until {stopped_at:?}, its lease expires at {expires:?}"
        );
        within(
            "replica-a's subscribers hear it stopped",
            Duration::from_secs(5),
            a_changes.wait_for(|l| !*l),
        )
        .await
        .unwrap();
        // The other replica takes over once the lease expired, never while a still leads.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !b.is_leader() {
            assert!(!a.is_leader(), "two leaders");
            assert!(
                tokio::time::Instant::now() < deadline,
                "replica-b never took over"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!a.is_leader());
        let (holder, _) = lease(&api).await;
        assert_eq!(holder.as_deref(), Some("replica-b"));
        drop(a);
        b.release().await;
        server.shutdown().await;
    }

    #[tokio::test]
    async fn start_refuses_what_cannot_work_in_one_line() {
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let err = Leadership::start(client(&closed), opts("replica-a", 1))
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "cannot campaign for leadership: the lease duration 1s is too short: use at least 2s"
        );
        let err = Leadership::start(client(&closed), opts("replica-a", 15))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "cannot read or create the Lease default/daemonsync for leader election: "
            ),
            "{err}"
        );
        assert!(
            err.ends_with("check that daemonsync's service account may get, create and patch leases.coordination.k8s.io in default"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn identity_is_the_pod_name_else_the_host_name_else_the_pid() {
        assert_eq!(
            identity_from(Some("daemonsync-7d9f-x2".into()), Some("host".into()), 7),
            "daemonsync-7d9f-x2"
        );
        assert_eq!(
            identity_from(Some("".into()), Some("worker-3\n".into()), 7),
            "worker-3"
        );
        assert_eq!(identity_from(None, None, 4242), "daemonsync-4242");
        assert!(!default_identity().is_empty());
    }

    #[test]
    fn each_replica_writes_as_its_own_field_manager() {
        assert_eq!(field_manager("replica-a"), "daemonsync-replica-a");
        assert!(
            field_manager(&"é".repeat(300)).len() <= 128,
            "the API server counts bytes"
        );
    }

    #[test]
    fn writes_stop_before_expiry_and_renewals_come_first() {
        for secs in [2, 3, 6, 10, 15, 60] {
            let t = Timing::of(Duration::from_secs(secs)).unwrap();
            let renew_at = t.duration - Duration::from_secs(t.grace_secs);
            let stop_at = t.duration - t.margin;
            assert!(renew_at + t.poll < stop_at, "{secs}s: {t:?}");
            assert!(stop_at < t.duration, "{secs}s: {t:?}");
        }
        assert_eq!(
            Timing::of(Duration::from_millis(2500)).unwrap().duration,
            Duration::from_secs(3)
        );
        assert_eq!(
            Timing::of(Duration::MAX).unwrap_err(),
            format!(
                "the lease duration {:?} is too long: use at most 3600s",
                Duration::MAX
            )
        );
    }
}

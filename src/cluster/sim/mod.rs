//! A simulated cluster: nodes with labels, taints and readiness; a scheduler that binds a
//! daemon pod to the node its `metadata.name` node affinity names; a kubelet with a virtual
//! clock (start latency, termination grace, images and nodes that never become ready); node
//! churn at given times; pod garbage collection for removed nodes.
//!
//! Everything is deterministic given the seed: the clock is virtual, every collection is
//! ordered, random choices come from one seeded generator. The file format is in
//! `docs/sim.md`; [`config`] holds its types.
//!
//! Time only moves in [`Cluster::wait_for_change`]: it jumps to the next scheduled event (a
//! pod becomes ready, a termination ends, a churn entry) and applies every event due then.

pub mod api;
pub mod config;
mod kubelet;
pub mod serve;
mod status;

use super::{Cluster, ClusterError, ClusterState, Event, Record, RecordStatus};
use crate::model::{Node, Pod, Timestamp};
use crate::plan::Observed;
use anyhow::{Context as _, Result};
use config::{ChurnAction, SimConfig};
use jiff::SignedDuration;
use std::collections::BTreeMap;
use std::path::Path;

pub use config::parse_duration;

/// Called after every change of the simulated state (tests check invariants with it).
pub type Probe = Box<dyn FnMut(&Observed, Timestamp) + Send>;

/// A pod in the simulator.
#[derive(Debug, Clone)]
pub(crate) struct SimPod {
    pub(crate) pod: Pod,
    /// Its containers, init containers first, as the kubelet runs them.
    pub(crate) containers: Vec<SimContainer>,
    /// `spec.restartPolicy: Never`: its containers run to completion.
    pub(crate) run_to_completion: bool,
    /// The condition types of `spec.readinessGates`.
    pub(crate) gates: Vec<String>,
    /// Conditions written by others than the kubelet (readiness gates): type → (True, since).
    pub(crate) conditions: BTreeMap<String, (bool, Timestamp)>,
    /// Bound to a NotReady node: starts when the node becomes Ready.
    pub(crate) waiting_for_node: bool,
    /// Every container running and ready (ready unless its node is NotReady).
    pub(crate) started: bool,
    /// When its sandbox was set up (`podSetupLatency` after binding), if it was.
    pub(crate) set_up: Option<Timestamp>,
    /// When its init containers had all completed, if they have.
    pub(crate) initialized: Option<Timestamp>,
    /// When its containers last became (un)ready: the ContainersReady condition.
    pub(crate) containers_ready: Option<(bool, Timestamp)>,
    /// Containers to (re)start once their images are on the node.
    pub(crate) starting: std::collections::BTreeSet<String>,
    /// Images being pulled on its node that `starting` containers wait for.
    pub(crate) awaiting: std::collections::BTreeSet<String>,
    /// Bumped whenever its start is planned again: events of an older plan are ignored.
    pub(crate) epoch: u64,
    /// Changes with every change of the pod (its resourceVersion in the simulator).
    pub(crate) rv: u64,
}

/// A container of a simulated pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimContainer {
    /// `name`.
    pub(crate) name: String,
    /// `image`, as the spec says now.
    pub(crate) image: String,
    /// An init container.
    pub(crate) init: bool,
    /// Times the kubelet restarted it (an image change restarts it).
    pub(crate) restarts: u32,
    /// What it is doing.
    pub(crate) state: ContainerState,
    /// How its previous run ended (after a restart).
    pub(crate) last: Option<Ran>,
}

impl SimPod {
    /// The pod as a live backend observes it, with what an in-place update needs.
    fn observed(&self) -> Pod {
        let names = |init: bool| {
            self.containers
                .iter()
                .filter(|c| c.init == init)
                .map(|c| c.name.clone())
                .collect()
        };
        let gate = crate::model::IN_PLACE_READY_CONDITION;
        Pod {
            detail: Some(Box::new(crate::model::PodDetail {
                resource_version: self.rv.to_string(),
                containers: names(false),
                init_containers: names(true),
                has_gate: self.gates.iter().any(|g| g == gate),
                gate: self.conditions.get(gate).map(|(status, _)| *status),
                gate_since: self.conditions.get(gate).map(|(_, since)| *since),
                // The simulated kubelet restarts a container the moment its image changes.
                image_mismatch: false,
                containers_ready: self.containers_ready.is_some_and(|(ready, _)| ready),
            })),
            ..self.pod.clone()
        }
    }
}

/// The state of a simulated container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ContainerState {
    /// Not running yet: the sandbox is set up, its image pulled, then it starts
    /// (`ContainerCreating`, or `PodInitializing` behind init containers).
    Creating,
    /// Its image cannot be pulled: `ErrImagePull`, then the configured back-off reason.
    PullFailed(String),
    /// Running since.
    Running(Timestamp),
    /// Started, then failing (`CrashLoopBackOff` or the configured reason) since.
    Failing(String, Timestamp),
    /// Ran to its end.
    Terminated(Ran),
}

/// A container run that ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ran {
    pub(crate) started: Timestamp,
    pub(crate) finished: Timestamp,
    pub(crate) exit_code: i32,
    /// `Completed`, `Error`.
    pub(crate) reason: String,
    /// The image it ran.
    pub(crate) image: String,
}

/// Something scheduled on the virtual clock.
#[derive(Debug, Clone)]
pub(crate) enum SimEvent {
    /// A new pod's sandbox is set up: its images are pulled next.
    PodSetUp { namespace: String, name: String },
    /// A pull on a node ended (successfully unless the image is a failing one).
    ImagePulled { node: String, image: String },
    /// The kubelet finished starting a pod's containers (of start plan `epoch`).
    PodStarted {
        namespace: String,
        name: String,
        epoch: u64,
    },
    /// The kubelet backs off failed pulls: `ErrImagePull` becomes the configured reason.
    PullBackOff {
        namespace: String,
        name: String,
        epoch: u64,
    },
    /// A terminating pod is gone.
    PodGone { namespace: String, name: String },
    /// A churn entry.
    Churn(ChurnAction),
}

/// A record's `daemonsync.io/promote` (revision, stage) and `daemonsync.io/abort` (revision).
type RecordCommands = (Option<(String, u32)>, Option<String>);

/// The simulated cluster.
pub struct Sim {
    pub(crate) cfg: SimConfig,
    rng: u64,
    start: Timestamp,
    /// Milliseconds since `start`.
    clock: u64,
    pub(crate) nodes: BTreeMap<String, Node>,
    pub(crate) pods: BTreeMap<(String, String), SimPod>,
    /// Images present on each node.
    pub(crate) node_images: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Pulls under way: (node, image).
    pub(crate) pulls: std::collections::BTreeSet<(String, String)>,
    queue: BTreeMap<(u64, u64), SimEvent>,
    seq: u64,
    /// The last resourceVersion given to a pod.
    rv: u64,
    records: BTreeMap<(String, String), Option<RecordStatus>>,
    /// Records carrying `daemonsync.io/paused: "true"`.
    paused: std::collections::BTreeSet<(String, String)>,
    /// Records' `daemonsync.io/promote` (revision, stage) and `daemonsync.io/abort`.
    commands: BTreeMap<(String, String), RecordCommands>,
    events: Vec<(Timestamp, Event)>,
    probe: Option<Probe>,
    /// Writes accepted (creates, deletes and pod patches), for reports and tests.
    pub writes: usize,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now())
            .field("nodes", &self.nodes.len())
            .field("pods", &self.pods.len())
            .field("scheduled", &self.queue.len())
            .finish()
    }
}

/// The next number of a splitmix64 sequence whose state is `state`.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The default start of the virtual clock.
pub fn default_start() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().expect("valid instant")
}

impl Sim {
    /// Reads a sim file (see `docs/sim.md`) and builds the cluster at its start.
    pub fn load(path: &Path) -> Result<Sim> {
        let cfg = SimConfig::load(path)?;
        Sim::new(cfg).with_context(|| format!("in sim file {}", path.display()))
    }

    /// Builds the cluster described by `cfg` at its start.
    pub fn new(cfg: SimConfig) -> Result<Sim> {
        let start = cfg.start.unwrap_or_else(default_start);
        let mut sim = Sim {
            rng: cfg.seed ^ 0x9E37_79B9_7F4A_7C15,
            start,
            clock: 0,
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
            node_images: BTreeMap::new(),
            pulls: Default::default(),
            queue: BTreeMap::new(),
            seq: 0,
            rv: 0,
            records: BTreeMap::new(),
            paused: Default::default(),
            commands: BTreeMap::new(),
            events: Vec::new(),
            probe: None,
            writes: 0,
            cfg,
        };
        for spec in sim.cfg.nodes.clone() {
            let images = spec.initial_images()?;
            for node in spec.expand()? {
                anyhow::ensure!(
                    !sim.nodes.contains_key(&node.name),
                    "node {} is listed twice",
                    node.name
                );
                if !images.is_empty() {
                    sim.node_images
                        .insert(node.name.clone(), images.iter().cloned().collect());
                }
                sim.nodes.insert(node.name.clone(), node);
            }
        }
        for churn in sim.cfg.churn.clone() {
            let action = churn.action()?;
            sim.schedule(churn.at.millis(), SimEvent::Churn(action));
        }
        for running in sim.cfg.running.clone() {
            sim.start_running(&running.manifest)?;
        }
        Ok(sim)
    }

    /// Sets the probe called after every change of state.
    pub fn set_probe(&mut self, probe: Probe) {
        self.probe = Some(probe);
        self.probed();
    }

    /// Sets or removes the `daemonsync.io/paused: "true"` annotation of a record (creating
    /// the record when it does not exist yet), as `kubectl annotate` does on a live cluster.
    pub fn set_paused(&mut self, namespace: &str, name: &str, paused: bool) {
        let key = (namespace.to_string(), name.to_string());
        if paused {
            self.records.entry(key.clone()).or_default();
            self.paused.insert(key);
        } else {
            self.paused.remove(&key);
        }
    }

    /// Now (virtual).
    pub fn now(&self) -> Timestamp {
        crate::model::later(
            self.start,
            SignedDuration::from_millis(i64::try_from(self.clock).unwrap_or(i64::MAX)),
        )
    }

    /// Virtual time since the start.
    pub fn elapsed(&self) -> SignedDuration {
        SignedDuration::from_millis(i64::try_from(self.clock).unwrap_or(i64::MAX))
    }

    /// The start of the virtual clock.
    pub fn start(&self) -> Timestamp {
        self.start
    }

    /// `daemonsync promote`: the pauses after stages up to `stage` of `revision` pass.
    pub fn promote(&mut self, namespace: &str, name: &str, revision: &str, stage: u32) {
        let key = (namespace.to_string(), name.to_string());
        self.records.entry(key.clone()).or_default();
        self.commands.entry(key).or_default().0 = Some((revision.to_string(), stage));
    }

    /// `daemonsync abort` of `revision` (`None`: the abort is lifted, as `resume` does).
    pub fn set_aborted(&mut self, namespace: &str, name: &str, revision: Option<&str>) {
        let key = (namespace.to_string(), name.to_string());
        self.records.entry(key.clone()).or_default();
        self.commands.entry(key).or_default().1 = revision.map(str::to_string);
    }

    /// The observed state now.
    pub fn observed(&self) -> Observed {
        Observed {
            nodes: self
                .nodes
                .values()
                .map(|n| Node {
                    images: self.node_images(&n.name),
                    ..n.clone()
                })
                .collect(),
            pods: self.pods.values().map(SimPod::observed).collect(),
            daemonsets: Vec::new(),
            rollouts: self.records().iter().map(Record::rollout_record).collect(),
        }
    }

    fn records(&self) -> Vec<Record> {
        self.records
            .iter()
            .map(|(key, status)| {
                let (promoted, aborted) = self.commands.get(key).cloned().unwrap_or_default();
                Record {
                    namespace: key.0.clone(),
                    name: key.1.clone(),
                    status: status.clone(),
                    paused: self.paused.contains(key),
                    promoted,
                    aborted,
                }
            })
            .collect()
    }

    /// Events emitted so far, with the virtual time they were emitted at.
    pub fn events(&self) -> &[(Timestamp, Event)] {
        &self.events
    }

    /// Number of events still scheduled on the clock.
    pub fn scheduled(&self) -> usize {
        self.queue.len()
    }

    /// The next pseudo-random number (splitmix64).
    pub(crate) fn next_random(&mut self) -> u64 {
        splitmix64(&mut self.rng)
    }

    pub(crate) fn clock(&self) -> u64 {
        self.clock
    }

    pub(crate) fn schedule(&mut self, at: u64, event: SimEvent) {
        self.seq += 1;
        self.queue.insert((at, self.seq), event);
    }

    pub(crate) fn probed(&mut self) {
        if let Some(mut probe) = self.probe.take() {
            probe(&self.observed(), self.now());
            self.probe = Some(probe);
        }
    }

    fn millis_until(&self, t: Timestamp) -> u64 {
        let d = t.duration_since(self.start).as_millis();
        d.max(0) as u64
    }

    /// Advances to the next scheduled event if it is due by `deadline`, applying every event
    /// due at that instant; otherwise moves the clock to `deadline` (not when `deadline` is
    /// [`Timestamp::MAX`] and nothing is scheduled). True when events ran.
    pub fn advance(&mut self, deadline: Timestamp) -> bool {
        let limit = self.millis_until(deadline).max(self.clock);
        let Some((&(at, _), _)) = self.queue.first_key_value() else {
            // Nothing is scheduled, so nothing will ever change: a wait without a deadline
            // returns at once instead of moving the clock to the end of time.
            if deadline != Timestamp::MAX {
                self.clock = limit;
            }
            return false;
        };
        if at > limit {
            self.clock = limit;
            return false;
        }
        self.clock = self.clock.max(at);
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 != at {
                break;
            }
            let event = entry.remove();
            self.apply(event);
            self.probed();
        }
        true
    }

    fn apply(&mut self, event: SimEvent) {
        match event {
            SimEvent::PodSetUp { namespace, name } => self.pod_set_up(&(namespace, name)),
            SimEvent::ImagePulled { node, image } => self.image_pulled(&node, &image),
            SimEvent::PodStarted {
                namespace,
                name,
                epoch,
            } => self.pod_started(&(namespace, name), epoch),
            SimEvent::PullBackOff {
                namespace,
                name,
                epoch,
            } => self.pull_back_off(&(namespace, name), epoch),
            SimEvent::PodGone { namespace, name } => {
                self.pods.remove(&(namespace, name));
            }
            SimEvent::Churn(action) => self.churn(action),
        }
    }

    fn churn(&mut self, action: ChurnAction) {
        match action {
            ChurnAction::Add(nodes, images) => {
                for node in nodes {
                    if !images.is_empty() {
                        self.node_images
                            .entry(node.name.clone())
                            .or_default()
                            .extend(images.iter().cloned());
                    }
                    self.upsert_node(node);
                }
            }
            ChurnAction::Remove(name) => self.remove_node(&name),
            ChurnAction::Label(name, labels) => {
                if let Some(mut node) = self.nodes.get(&name).cloned() {
                    for (k, v) in labels {
                        match v {
                            Some(v) => node.labels.insert(k, v),
                            None => node.labels.remove(&k),
                        };
                    }
                    self.upsert_node(node);
                }
            }
            ChurnAction::Taint(name, taints) => {
                if let Some(mut node) = self.nodes.get(&name).cloned() {
                    node.taints = taints;
                    self.upsert_node(node);
                }
            }
            ChurnAction::Ready(name, ready) => self.set_node_ready(&name, ready),
        }
    }

    /// A node joins or changes (churn, or a write through the served API). A change of its
    /// Ready condition goes through the node lifecycle model ([`Sim::set_node_ready`]'s
    /// effects on its pods); a node reporting no Ready condition counts as Ready.
    pub(crate) fn upsert_node(&mut self, node: Node) {
        let was_ready = self.nodes.get(&node.name).map(|n| n.ready != Some(false));
        let ready = node.ready != Some(false);
        let name = node.name.clone();
        self.nodes.insert(name.clone(), node);
        if was_ready.is_some_and(|was| was != ready) {
            self.set_node_ready(&name, ready);
        }
    }

    /// A node leaves; the pods bound to it are garbage-collected.
    pub(crate) fn remove_node(&mut self, name: &str) {
        if self.nodes.remove(name).is_some() {
            self.node_images.remove(name);
            self.pulls.retain(|(node, _)| node != name);
            self.collect_garbage();
        }
    }

    /// The instant of the next scheduled event, if any.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.queue.first_key_value().map(|(&(at, _), _)| {
            crate::model::later(
                self.start,
                SignedDuration::from_millis(i64::try_from(at).unwrap_or(i64::MAX)),
            )
        })
    }

    /// Applies every event due by `now`, in order, and moves the clock to `now`: how a wall
    /// clock drives the simulator (`sim serve`). True when events ran.
    pub fn catch_up(&mut self, now: Timestamp) -> bool {
        let mut ran = false;
        while self.advance(now) {
            ran = true;
        }
        ran
    }

    /// Pod garbage collection: pods whose node no longer exists are removed.
    fn collect_garbage(&mut self) {
        let nodes = &self.nodes;
        self.pods.retain(|_, p| match &p.pod.node_name {
            Some(n) => nodes.contains_key(n),
            None => true,
        });
    }

    /// Creates the pods of the DaemonSets in `manifest`, ready since an hour before the start,
    /// on every node they select.
    fn start_running(&mut self, manifest: &Path) -> Result<()> {
        let desired = load_running(manifest)?;
        self.install(&desired)
    }

    /// Starts the pods of `desired` on every node they select, as if they had been running
    /// and ready for an hour (the initial state of a rollout).
    pub fn install(&mut self, desired: &[crate::plan::Desired]) -> Result<()> {
        let since = self.running_since();
        for pod in self.running_pods(desired) {
            self.insert_running(pod, since)?;
        }
        // As if daemonsync had rolled them out: their records name them the stable
        // revision, which nodes held back by a rollout policy keep running.
        for d in desired {
            let spec = crate::plan::DaemonSetSpec::compile(&d.daemonset);
            self.records.insert(
                (spec.namespace.clone(), spec.name.clone()),
                Some(RecordStatus {
                    counters: crate::plan::Status::default(),
                    revision: spec.revision.clone(),
                    halted: None,
                    paused: false,
                    source_error: None,
                    rollout: None,
                    stable: serde_json::to_value(&d.daemonset).ok(),
                }),
            );
        }
        Ok(())
    }

    /// When the pods of `running:` DaemonSets started: an hour before the start.
    pub(crate) fn running_since(&self) -> Timestamp {
        self.start - SignedDuration::from_hours(1)
    }

    /// The pods `desired` lacks on the nodes it selects, rendered as daemonsync renders them
    /// (owned by the record of the same name, whose uid is left empty).
    pub(crate) fn running_pods(
        &self,
        desired: &[crate::plan::Desired],
    ) -> Vec<k8s_openapi::api::core::v1::Pod> {
        let plan = crate::plan::plan(
            desired,
            &self.observed(),
            &crate::plan::Policy::default(),
            self.now(),
        );
        let mut pods = Vec::new();
        for d in desired {
            let spec = crate::plan::DaemonSetSpec::compile(&d.daemonset);
            let Some(p) = plan
                .daemonsets
                .iter()
                .find(|p| p.namespace == spec.namespace && p.name == spec.name)
            else {
                continue;
            };
            for entry in &p.nodes {
                if entry.state != crate::plan::NodeState::Missing {
                    continue;
                }
                pods.push(crate::plan::render::pod_for_node(
                    &d.daemonset,
                    &spec,
                    &entry.node,
                    &crate::plan::render::PodOwner::record(&spec.name),
                ));
            }
        }
        pods
    }
}

/// Reads the DaemonSets of a `running:` entry (a manifest file or directory).
pub(crate) fn load_running(manifest: &Path) -> Result<Vec<crate::plan::Desired>> {
    use crate::source::{LocalSource, Source};
    let rendered = LocalSource::new([manifest])
        .load(&crate::manifest::LoadOptions::default())
        .with_context(|| format!("running: {}", manifest.display()))?;
    Ok(rendered.desired()?)
}

impl Cluster for Sim {
    async fn observe(&mut self) -> Result<ClusterState, ClusterError> {
        Ok(ClusterState {
            observed: self.observed(),
            records: self.records(),
            now: self.now(),
        })
    }

    async fn create_pod(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
    ) -> Result<String, ClusterError> {
        let name = self.create(pod)?;
        self.writes += 1;
        self.probed();
        Ok(name)
    }

    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        self.delete(namespace, name)?;
        self.writes += 1;
        self.probed();
        Ok(())
    }

    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &RecordStatus,
    ) -> Result<(), ClusterError> {
        self.records
            .insert((namespace.into(), name.into()), Some(status.clone()));
        Ok(())
    }

    async fn emit_event(&mut self, event: Event) -> Result<(), ClusterError> {
        self.events.push((self.now(), event));
        Ok(())
    }

    async fn wait_for_change(&mut self, deadline: Timestamp) -> Result<bool, ClusterError> {
        Ok(self.advance(deadline))
    }

    async fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &crate::cluster::ImagePatch,
    ) -> Result<(), ClusterError> {
        let images: Vec<(String, String)> = patch
            .images
            .iter()
            .map(|(_, _, container, image)| (container.clone(), image.clone()))
            .collect();
        self.patch_pod(
            namespace,
            name,
            Some(&patch.resource_version),
            &images,
            &patch.labels,
        )?;
        self.writes += 1;
        self.probed();
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
        if let Some(rv) = resource_version
            && self.pod_resource_version(namespace, name).as_deref() != Some(rv)
        {
            return Err(ClusterError::Rejected(format!(
                "pod {namespace}/{name} changed since resourceVersion {rv}"
            )));
        }
        self.set_condition(namespace, name, condition, status)?;
        self.probed();
        Ok(self
            .pod_resource_version(namespace, name)
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod kubelet_tests;
#[cfg(test)]
mod tests;

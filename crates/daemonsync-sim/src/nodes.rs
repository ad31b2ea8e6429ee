//! The simulated nodes: their kubelets (pod set-up, image pulls, container starts, failures,
//! in-place image changes, readiness gates, termination), the scheduler's binding, node churn
//! and readiness, and pod garbage collection, on a virtual clock. The API server model
//! ([`super::api`]) drives it: it admits the pods clients write and shows what the nodes do.
//!
//! Everything is deterministic given the seed: the clock is virtual, every collection is
//! ordered, random choices come from one seeded generator.
//!
//! Time only moves in [`NodeSim::advance`]: it jumps to the next scheduled event (a pod
//! becomes ready, a termination ends, a churn entry) and applies every event due then.

use super::config::{ChurnAction, SimConfig};
use crate::model::{Node, Pod, Timestamp};
use crate::plan::Observed;
use anyhow::{Context as _, Result};
use jiff::SignedDuration;
use std::collections::BTreeMap;
use std::path::Path;

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
    /// `spec.tolerations`.
    pub(crate) tolerations: Vec<crate::model::Toleration>,
    /// `spec.nodeSelector` and required node affinity.
    pub(crate) placement: super::scheduler::Placement,
    /// `spec.nodeName`, when the pod names its node (the scheduler is skipped).
    pub(crate) node_name_wanted: Option<String>,
    /// What the scheduler reserves for it on its node.
    pub(crate) requests: super::scheduler::Resources,
    /// Host ports it binds.
    pub(crate) host_ports: Vec<(String, String, i32)>,
    /// Why the scheduler could not bind it, while it cannot.
    pub(crate) unschedulable: Option<String>,
    /// `spec.terminationGracePeriodSeconds` (the API server's default, 30, when unset).
    pub(crate) termination_grace: i64,
    /// The grace period of its deletion (`metadata.deletionGracePeriodSeconds`), once deleted.
    pub(crate) deletion_grace: Option<i64>,
    /// Its references to ConfigMaps and Secrets (volumes, `envFrom`, `env[].valueFrom`).
    pub(crate) config_refs: Vec<crate::manifest::versioning::ConfigRef>,
    /// Why a volume of it cannot be mounted, while one cannot (it is not set up).
    pub(crate) mount_failure: Option<String>,
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
    /// The kubelet's crash-loop back-off for it, once it was started again after an exit.
    pub(crate) back_off: Option<crate::kubelet::BackOff>,
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
            signals: self.signals(),
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
    /// Not created: a ConfigMap or Secret (or key) its environment needs is missing
    /// (`CreateContainerConfigError`, with this message).
    ConfigMissing(String),
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
    /// A crashed container's back-off is over: the kubelet starts it again (of start plan
    /// `epoch`).
    ContainerRestart {
        namespace: String,
        name: String,
        container: String,
        epoch: u64,
    },
    /// A running container of a `crashAfter` image exits with an error.
    ContainerCrash {
        namespace: String,
        name: String,
        container: String,
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
    /// A pod's `tolerationSeconds` of a NoExecute taint of its node ran out.
    Evict { namespace: String, name: String },
    /// Nothing changes, but controllers look again (minReadySeconds passed, say).
    Wake,
}

/// The simulated nodes and their pods.
pub struct NodeSim {
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
    pub(crate) rv: u64,
    probe: Option<Probe>,
    /// Writes accepted (creates, deletes and pod patches), for reports and tests.
    pub writes: usize,
    /// Pods bound to each node (for the scheduler's accounting).
    pub(crate) bound: BTreeMap<String, std::collections::BTreeSet<(String, String)>>,
    /// Pods created unbound and not bound or removed since: where the scheduler
    /// looks for the pods to try again when a node changes (upstream's queue of unschedulable
    /// pods), rather than through every pod. A bound pod never loses its node, so every
    /// Pending pod is here.
    pub(crate) unbound: std::collections::BTreeSet<(String, String)>,
    /// Each node's capacity, allocatable and load.
    pub(crate) resources: BTreeMap<String, super::scheduler::NodeResources>,
    /// Nodes whose kubelet stopped reporting (Ready `Unknown`).
    pub(crate) unreachable: std::collections::BTreeSet<String>,
    /// When the node lifecycle controller added each node's current not-ready or unreachable
    /// taints (their `timeAdded`).
    pub(crate) condition_taints_added: BTreeMap<String, Timestamp>,
    /// Events the scheduler and the node controllers emitted, for the API to record.
    pub(crate) outbox: Vec<NodeEvent>,
    /// Pods changed (or gone) since the API last showed them.
    pub(crate) changed_pods: std::collections::HashSet<(String, String)>,
    /// Nodes changed (or gone) since the API last showed them, with their images.
    pub(crate) changed_nodes: std::collections::BTreeSet<String>,
    /// Instants the controllers asked to look again at.
    wakes: std::collections::BTreeSet<u64>,
    /// A wake-up came due.
    woke: bool,
    /// The cluster's ConfigMaps and Secrets, as the kubelets know them.
    pub(crate) config: crate::kubelet_config::ConfigView,
}

/// An Event a component of the simulated nodes emitted about a pod or node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEvent {
    /// `Pod` or `Node`.
    pub kind: &'static str,
    /// The object's namespace (empty for a node).
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    /// CamelCase reason.
    pub reason: &'static str,
    /// The component (`default-scheduler`, `taint-eviction-controller`, ...).
    pub reporter: &'static str,
    /// The message.
    pub message: String,
}

impl NodeEvent {
    /// An event about a pod.
    pub fn pod(
        key: &(String, String),
        type_: &'static str,
        reason: &'static str,
        reporter: &'static str,
        message: String,
    ) -> Self {
        NodeEvent {
            kind: "Pod",
            namespace: key.0.clone(),
            name: key.1.clone(),
            type_,
            reason,
            reporter,
            message,
        }
    }
}

impl std::fmt::Debug for NodeSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeSim")
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

impl NodeSim {
    /// The nodes described by `cfg`, at its start.
    pub fn new(cfg: SimConfig) -> Result<NodeSim> {
        let start = cfg.start.unwrap_or_else(default_start);
        let mut sim = NodeSim {
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
            probe: None,
            writes: 0,
            bound: BTreeMap::new(),
            unbound: std::collections::BTreeSet::new(),
            resources: BTreeMap::new(),
            unreachable: Default::default(),
            condition_taints_added: BTreeMap::new(),
            outbox: Vec::new(),
            changed_pods: Default::default(),
            changed_nodes: Default::default(),
            wakes: Default::default(),
            woke: false,
            config: Default::default(),
            cfg,
        };
        for spec in sim.cfg.nodes.clone() {
            let images = spec.initial_images()?;
            let resources = super::scheduler::NodeResources::of(&spec)?;
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
                sim.resources.insert(node.name.clone(), resources.clone());
                let readiness = spec.ready.unwrap_or_default();
                if readiness == super::config::Readiness::Unknown {
                    sim.unreachable.insert(node.name.clone());
                }
                // As old as the node and its Ready condition: from the start of the history.
                let since = sim.running_since();
                let node = sim.with_condition_taints(node, readiness, since);
                sim.touch_node(&node.name);
                sim.nodes.insert(node.name.clone(), node);
            }
        }
        for churn in sim.cfg.churn.clone() {
            let action = churn.action()?;
            sim.schedule(churn.at.millis(), SimEvent::Churn(action));
        }
        Ok(sim)
    }

    /// Sets the probe called after every change of state.
    pub fn set_probe(&mut self, probe: Probe) {
        self.probe = Some(probe);
        self.probed();
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

    /// A node (or the images it holds) changed: the API shows it again.
    pub(crate) fn touch_node(&mut self, name: &str) {
        self.changed_nodes.insert(name.to_string());
    }

    /// The nodes as the API shows them (with the images they hold).
    pub fn observed_nodes(&self) -> Vec<Node> {
        self.nodes
            .values()
            .map(|n| Node {
                images: self.node_images(&n.name),
                ..n.clone()
            })
            .collect()
    }

    /// Asks for the controllers to look again at `at` (virtual time), when nothing else may
    /// change then (a pod becoming available after `minReadySeconds`).
    pub(crate) fn wake_at(&mut self, at: Timestamp) {
        let at = self.millis_until(at);
        if at > self.clock && self.wakes.insert(at) {
            self.schedule(at, SimEvent::Wake);
        }
    }

    /// Whether a wake-up came due since the last call.
    pub(crate) fn take_wake(&mut self) -> bool {
        std::mem::take(&mut self.woke)
    }

    /// The observed state now.
    pub fn observed(&self) -> Observed {
        Observed {
            nodes: self
                .nodes
                .values()
                .map(|n| {
                    let (allocatable, requested) = self.node_usage(&n.name);
                    Node {
                        images: self.node_images(&n.name),
                        allocatable: Some(Box::new(allocatable)),
                        requested: Some(Box::new(requested)),
                        ..n.clone()
                    }
                })
                .collect(),
            pods: self.pods.values().map(SimPod::observed).collect(),
            daemonsets: Vec::new(),
            rollouts: Vec::new(),
            revisions: Vec::new(),
            namespaces: Vec::new(),
            version: Some(
                self.cfg
                    .version
                    .unwrap_or(crate::config::DEFAULT_KUBE_VERSION),
            ),
        }
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
            SimEvent::ContainerRestart {
                namespace,
                name,
                container,
                epoch,
            } => self.container_restart(&(namespace, name), &container, epoch),
            SimEvent::ContainerCrash {
                namespace,
                name,
                container,
                epoch,
            } => self.container_crash(&(namespace, name), &container, epoch),
            SimEvent::PodGone { namespace, name } => {
                self.remove_pod(&(namespace, name));
            }
            SimEvent::Evict { namespace, name } => self.eviction_due(&(namespace, name)),
            SimEvent::Wake => {
                self.wakes.remove(&self.clock);
                self.woke = true;
            }
            SimEvent::Churn(action) => self.churn(action),
        }
    }

    fn churn(&mut self, action: ChurnAction) {
        match action {
            ChurnAction::Add(nodes, images, resources, readiness) => {
                for node in nodes {
                    if !images.is_empty() {
                        self.node_images
                            .entry(node.name.clone())
                            .or_default()
                            .extend(images.iter().cloned());
                    }
                    self.resources.insert(node.name.clone(), resources.clone());
                    self.upsert_node(node, Some(readiness));
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
                    self.upsert_node(node, None);
                }
            }
            ChurnAction::Taint(name, taints) => {
                if let Some(mut node) = self.nodes.get(&name).cloned() {
                    node.taints = taints;
                    self.upsert_node(node, None);
                }
            }
            ChurnAction::Ready(name, ready) => self.set_node_readiness(&name, ready),
        }
    }

    /// A node leaves; the pods bound to it are garbage-collected.
    pub(crate) fn remove_node(&mut self, name: &str) {
        if self.nodes.remove(name).is_some() {
            self.touch_node(name);
            self.node_images.remove(name);
            self.resources.remove(name);
            self.unreachable.remove(name);
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
        let gone: Vec<String> = self
            .bound
            .keys()
            .filter(|n| !self.nodes.contains_key(*n))
            .cloned()
            .collect();
        for node in gone {
            for key in self.bound.remove(&node).unwrap_or_default() {
                self.pods.remove(&key);
                self.changed_pods.insert(key);
            }
        }
        let nodes = &self.nodes;
        let changed = &mut self.changed_pods;
        self.pods.retain(|k, p| match &p.pod.node_name {
            Some(n) if !nodes.contains_key(&**n) => {
                changed.insert(k.clone());
                false
            }
            _ => true,
        });
    }

    /// When the pods of `running:` DaemonSets started: an hour before the start.
    pub(crate) fn running_since(&self) -> Timestamp {
        self.start - SignedDuration::from_hours(1)
    }

    /// The pods `desired` lacks on the nodes it selects: the index in `desired` and the node
    /// of each, for [`NodeSim::running_pod`] to render one at a time.
    pub(crate) fn running_pods(
        &self,
        desired: &[crate::plan::Desired],
    ) -> Vec<(usize, std::sync::Arc<str>)> {
        let plan = crate::plan::plan(
            desired,
            &self.observed(),
            &crate::plan::Policy::default(),
            self.now(),
        );
        let mut pods = Vec::new();
        for (i, d) in desired.iter().enumerate() {
            let spec = crate::plan::DaemonSetSpec::compile(&d.daemonset);
            let Some(p) = plan
                .daemonsets
                .iter()
                .find(|p| p.namespace == spec.namespace && p.name == spec.name)
            else {
                continue;
            };
            pods.extend(
                p.nodes
                    .iter()
                    .filter(|entry| entry.state == crate::plan::NodeState::Missing)
                    .map(|entry| (i, entry.node.clone())),
            );
        }
        pods
    }

    /// The pod of `desired` (compiled as `spec`) for node `node`, rendered as daemonsync
    /// renders it (owned by the record of the same name, whose uid is left empty).
    pub(crate) fn running_pod(
        desired: &crate::plan::Desired,
        spec: &crate::plan::DaemonSetSpec,
        node: &str,
    ) -> k8s_openapi::api::core::v1::Pod {
        crate::plan::render::pod_for_node(
            &desired.daemonset,
            spec,
            node,
            &crate::plan::render::PodOwner::record(&spec.name),
        )
    }
}

/// Reads the DaemonSets of a `running:` or `builtin:` entry (a manifest file, or a directory
/// walked in name order for `*.yaml`, `*.yml` and `*.json`), loaded and validated as the
/// manifests of a source are; an invalid one is an error. With `versioned` (`running:`), the
/// config they reference is versioned as daemonsync versions it; without (`builtin:`), the
/// ConfigMaps and Secrets beside them are returned, to be created as they are.
pub(crate) fn load_running(
    manifest: &Path,
    versioned: bool,
) -> Result<(
    Vec<crate::plan::Desired>,
    Vec<crate::manifest::config::ConfigObject>,
)> {
    let context = || format!("running: {}", manifest.display());
    let mut files = Vec::new();
    manifest_files(manifest, &mut files).with_context(context)?;
    let opts = crate::manifest::LoadOptions::default();
    let mut loaded = crate::manifest::Manifests::default();
    for path in &files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))
            .with_context(context)?;
        loaded.extend(
            crate::manifest::load_str(&path.display().to_string(), &text, &opts)
                .with_context(context)?,
        );
    }
    if versioned {
        crate::manifest::versioning::version(&mut loaded);
    }
    if !loaded.invalid.is_empty() {
        let msg = crate::manifest::invalid_message(&loaded.invalid, "");
        return Err(anyhow::anyhow!(msg)).with_context(context);
    }
    if loaded.daemonsets.is_empty() {
        return Err(anyhow::anyhow!(
            "no apps/v1 DaemonSet in {} file(s)",
            files.len()
        ))
        .with_context(context);
    }
    let desired = loaded
        .daemonsets
        .into_iter()
        .map(|d| crate::plan::Desired {
            source: d.source.to_string(),
            daemonset: d.daemonset,
            config: d.config,
        })
        .collect();
    let configs = if versioned {
        Vec::new()
    } else {
        loaded.configs
    };
    Ok((desired, configs))
}

/// The manifest files of `path`: itself, or those under it in name order.
fn manifest_files(path: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if !meta.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .with_context(|| format!("reading {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            manifest_files(&entry, out)?;
        } else if entry
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "yaml" | "yml" | "json"))
        {
            out.push(entry);
        }
    }
    Ok(())
}

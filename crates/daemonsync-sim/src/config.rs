//! The simulated cluster's file format (documented in `docs/sim.md`).

use crate::model::{Labels, Node, Taint, TaintEffect, Timestamp};
use anyhow::{Context as _, Result, bail};
use jiff::SignedDuration;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A duration as written in the file: `5s`, `1m30s`, `250ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub SignedDuration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        crate::manifest::duration::parse(&s)
            .map(Dur)
            .map_err(serde::de::Error::custom)
    }
}

impl Dur {
    /// Milliseconds (the simulator's clock unit), saturating: a duration longer than
    /// `u64::MAX` milliseconds (jiff allows up to `i64::MAX` seconds) is `u64::MAX`, never a
    /// wrapped, short one.
    pub fn millis(self) -> u64 {
        u64::try_from(self.0.as_millis().max(0)).unwrap_or(u64::MAX)
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SimConfig {
    /// Seed of every random choice (start latencies, pod name suffixes).
    #[serde(default)]
    pub seed: u64,
    /// The virtual clock's start (default 2026-01-01T00:00:00Z).
    #[serde(default)]
    pub start: Option<Timestamp>,
    /// Nodes at the start.
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    /// The kubelet model.
    #[serde(default)]
    pub kubelet: KubeletConfig,
    /// Images and nodes whose pods never become ready.
    #[serde(default)]
    pub failures: Failures,
    /// Node changes at given virtual times.
    #[serde(default)]
    pub churn: Vec<Churn>,
    /// DaemonSets whose pods already run, ready, on every node they select at the start.
    #[serde(default)]
    pub running: Vec<Running>,
    /// DaemonSets the built-in DaemonSet controller runs at the start (`apps/v1` objects),
    /// their pods ready on every node they select.
    #[serde(default)]
    pub builtin: Vec<Running>,
    /// Namespaces that exist at the start besides the system ones, with their labels (Pod
    /// Security admission reads `pod-security.kubernetes.io/enforce`).
    #[serde(default)]
    pub namespaces: Vec<NamespaceSpec>,
    /// The Kubernetes version the cluster reports (`GET /version`), `MAJOR.MINOR.PATCH`.
    #[serde(default)]
    pub version: Option<KubeVersion>,
    /// Validating admission webhooks that deny requests (`deny=VERB:RESOURCE:MESSAGE`).
    #[serde(default)]
    pub admission: AdmissionConfig,
}

/// The version a simulated cluster reports when the sim file names none.
pub const DEFAULT_KUBE_VERSION: KubeVersion = KubeVersion::NEWEST;

pub use crate::model::KubeVersion;

/// A namespace that exists at the start.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NamespaceSpec {
    /// Name.
    pub name: String,
    /// Labels, e.g. `pod-security.kubernetes.io/enforce: baseline`.
    #[serde(default)]
    pub labels: Labels,
}

/// Admission at the API server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdmissionConfig {
    /// Requests a validating webhook denies: `VERB:RESOURCE:MESSAGE` (as `--faults deny=`).
    #[serde(default)]
    pub deny: Vec<String>,
}

/// One node, or `count` nodes when the name contains `{i}` (replaced by 1..=count, or
/// zero-padded to the width of `count`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeSpec {
    /// Name, or pattern with `{i}`.
    pub name: String,
    /// How many nodes the pattern expands to (default 1).
    #[serde(default)]
    pub count: Option<usize>,
    /// Labels.
    #[serde(default)]
    pub labels: Labels,
    /// Taints.
    #[serde(default)]
    pub taints: Vec<TaintSpec>,
    /// The Ready condition: `true` (the default), `false` (the kubelet reports NotReady) or
    /// `Unknown` (the kubelet stopped reporting: the node is unreachable).
    #[serde(default)]
    pub ready: Option<Readiness>,
    /// Images already present on the node (pre-pulled, or baked into its machine image).
    #[serde(default)]
    pub images: Vec<String>,
    /// `status.capacity` (default cpu 4, memory 16Gi, pods 110, ephemeral-storage 100Gi).
    #[serde(default)]
    pub capacity: Option<Labels>,
    /// `status.allocatable` (default: the capacity).
    #[serde(default)]
    pub allocatable: Option<Labels>,
    /// Requests of the node's other pods (not modelled one by one), e.g. `{cpu: 3500m,
    /// memory: 12Gi, pods: 40}`: the scheduler counts them against the allocatable.
    #[serde(default)]
    pub load: Option<Labels>,
}

/// A taint as in a Node's spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintSpec {
    /// Key.
    pub key: String,
    /// Value.
    #[serde(default)]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

impl TaintSpec {
    fn to_taint(&self) -> Result<Taint> {
        let Some(effect) = TaintEffect::parse(&self.effect) else {
            bail!(
                "taint {}: unknown effect {:?} (NoSchedule, PreferNoSchedule or NoExecute)",
                self.key,
                self.effect
            );
        };
        Ok(Taint {
            key: self.key.clone(),
            value: self.value.clone(),
            effect,
        })
    }
}

/// Refuses an image reference a container runtime could not pull: empty, or with whitespace or
/// control characters.
pub(crate) fn check_image(image: &str) -> Result<()> {
    if image.is_empty() {
        bail!("an image is empty; give a reference such as registry.example/agent:1.2");
    }
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        bail!("image {image:?} contains whitespace or control characters");
    }
    Ok(())
}

impl NodeSpec {
    /// The images this entry's nodes start with, checked.
    pub fn initial_images(&self) -> Result<Vec<String>> {
        for image in &self.images {
            if let Err(e) = check_image(image) {
                bail!("node {:?}: images: {e}", self.name);
            }
        }
        Ok(self.images.clone())
    }

    /// The nodes this entry stands for.
    pub fn expand(&self) -> Result<Vec<Node>> {
        let taints = self
            .taints
            .iter()
            .map(TaintSpec::to_taint)
            .collect::<Result<Vec<_>>>()?;
        let names: Vec<String> = match (self.count, self.name.contains("{i}")) {
            (None, false) | (Some(1), false) => vec![self.name.clone()],
            (Some(n), true) => {
                let width = n.to_string().len();
                (1..=n)
                    .map(|i| self.name.replace("{i}", &format!("{i:0width$}")))
                    .collect()
            }
            (None, true) => bail!("node {:?}: a name with {{i}} needs a count", self.name),
            (Some(_), false) => bail!(
                "node {:?}: count needs a name pattern containing {{i}}",
                self.name
            ),
        };
        Ok(names
            .into_iter()
            .map(|name| {
                let mut labels = self.labels.clone();
                labels
                    .entry("kubernetes.io/hostname".into())
                    .or_insert_with(|| name.clone());
                Node {
                    name,
                    labels,
                    taints: taints.clone(),
                    ready: Some(self.ready.unwrap_or_default().is_ready()),
                    unschedulable: false,
                    // The simulator keeps the images a node has itself (`Sim::node_images`),
                    // and its resources (`NodeSim::resources`).
                    images: Vec::new(),
                    allocatable: None,
                    requested: None,
                }
            })
            .collect())
    }
}

/// The kubelet model.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletConfig {
    /// Time from the images being on the node to the containers running (Ready).
    #[serde(default)]
    pub start_latency: Latency,
    /// Time to pull an image the node does not have (default 0s).
    #[serde(default = "Latency::zero")]
    pub pull_latency: Latency,
    /// Time to set up a new pod's sandbox, network and volumes, before its images are pulled
    /// (default 0s).
    #[serde(default = "Latency::zero")]
    pub pod_setup_latency: Latency,
    /// Time from deletion to the pod being gone (a kubelet done before the pod's grace
    /// period ends; at most that grace period).
    #[serde(default = "default_grace")]
    pub termination_grace: Dur,
}

fn default_grace() -> Dur {
    Dur(SignedDuration::from_secs(2))
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            start_latency: Latency::default(),
            pull_latency: Latency::zero(),
            pod_setup_latency: Latency::zero(),
            termination_grace: default_grace(),
        }
    }
}

/// A latency of the kubelet model: fixed, or drawn uniformly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Latency {
    /// Every pod takes the same time.
    Fixed(Dur),
    /// Uniformly distributed between the two bounds (inclusive, millisecond steps).
    Uniform([Dur; 2]),
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed(Dur(SignedDuration::from_secs(5)))
    }
}

impl Latency {
    /// No time at all (the default of `pullLatency` and `podSetupLatency`).
    pub fn zero() -> Self {
        Latency::Fixed(Dur(SignedDuration::ZERO))
    }
}

/// Failures of the kubelet model.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Failures {
    /// Images that never start.
    #[serde(default)]
    pub images: Vec<ImageFailure>,
    /// Nodes on which no pod starts (a broken container runtime).
    #[serde(default)]
    pub nodes: Vec<NodeFailure>,
}

/// An image that never starts, or that crashes some time after it started.
///
/// `reason` is the kubelet's waiting reason: the pull reasons (`ErrImagePull`,
/// `ImagePullBackOff`, `InvalidImageName`, …) and `CreateContainerConfigError` /
/// `CreateContainerError` leave the container never run (the pod stays Pending);
/// `CrashLoopBackOff` (the default), `RunContainerError` and any other reason make it exit at
/// once, each time the kubelet starts it again after its back-off, its `restartCount` growing.
/// With `crashAfter` the container runs, becomes ready, exits after that long and is started
/// again after the back-off, again and again (or `crashes` times, then it keeps running).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageFailure {
    /// The image, exactly as in the pod spec.
    pub image: String,
    /// The container's waiting reason (default `CrashLoopBackOff`).
    #[serde(default = "crash_loop")]
    pub reason: String,
    /// The container runs this long, ready, then exits with an error.
    #[serde(default)]
    pub crash_after: Option<Dur>,
    /// With `crashAfter`: it crashes this many times, then keeps running (default: always).
    #[serde(default)]
    pub crashes: Option<u32>,
}

/// A node on which pods never start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeFailure {
    /// Node name.
    pub node: String,
    /// The container's waiting reason (default `CrashLoopBackOff`).
    #[serde(default = "crash_loop")]
    pub reason: String,
}

fn crash_loop() -> String {
    "CrashLoopBackOff".into()
}

/// A node change at a virtual time. Exactly one of the actions is given.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Churn {
    /// Offset from the start.
    pub at: Dur,
    /// Nodes join.
    #[serde(default)]
    pub add: Option<NodeSpec>,
    /// A node leaves (its pods are garbage-collected).
    #[serde(default)]
    pub remove: Option<String>,
    /// Labels set (a `null` value removes the label).
    #[serde(default)]
    pub label: Option<LabelChange>,
    /// Taints replaced.
    #[serde(default)]
    pub taint: Option<TaintChange>,
    /// Readiness changes.
    #[serde(default)]
    pub ready: Option<ReadyChange>,
}

/// Labels set on a node.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelChange {
    /// Node name.
    pub node: String,
    /// Labels to set; `null` removes.
    pub labels: BTreeMap<String, Option<String>>,
}

/// A node's taints replaced.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintChange {
    /// Node name.
    pub node: String,
    /// The new taints (empty: untaint).
    pub taints: Vec<TaintSpec>,
}

/// A node's Ready condition changes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadyChange {
    /// Node name.
    pub node: String,
    /// The new condition.
    pub ready: Readiness,
}

/// A node's Ready condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Readiness {
    /// The kubelet reports the node Ready.
    #[default]
    True,
    /// The kubelet reports the node NotReady (its runtime or network is down).
    False,
    /// The kubelet stopped reporting: the node lifecycle controller marks it Unknown
    /// (unreachable).
    Unknown,
}

impl Readiness {
    /// Ready.
    pub fn is_ready(self) -> bool {
        self == Readiness::True
    }
}

impl<'de> Deserialize<'de> for Readiness {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(true) => Ok(Readiness::True),
            serde_json::Value::Bool(false) => Ok(Readiness::False),
            serde_json::Value::String(s) => match s.as_str() {
                "True" | "true" => Ok(Readiness::True),
                "False" | "false" => Ok(Readiness::False),
                "Unknown" | "unknown" => Ok(Readiness::Unknown),
                other => Err(serde::de::Error::custom(format!(
                    "ready: {other:?} is not a condition status; use true, false or Unknown"
                ))),
            },
            other => Err(serde::de::Error::custom(format!(
                "ready: {other} is not a condition status; use true, false or Unknown"
            ))),
        }
    }
}

/// DaemonSets already running at the start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Running {
    /// A manifest file or directory, relative to the sim file.
    pub manifest: PathBuf,
}

/// A churn action, resolved.
#[derive(Debug, Clone)]
pub(crate) enum ChurnAction {
    /// Nodes join, with the images they start with, their resources and readiness.
    Add(
        Vec<Node>,
        Vec<String>,
        super::scheduler::NodeResources,
        Readiness,
    ),
    Remove(String),
    Label(String, BTreeMap<String, Option<String>>),
    Taint(String, Vec<Taint>),
    Ready(String, Readiness),
}

impl Churn {
    pub(crate) fn action(&self) -> Result<ChurnAction> {
        let mut actions = Vec::new();
        if let Some(a) = &self.add {
            actions.push(ChurnAction::Add(
                a.expand()?,
                a.initial_images()?,
                super::scheduler::NodeResources::of(a)?,
                a.ready.unwrap_or_default(),
            ));
        }
        if let Some(r) = &self.remove {
            actions.push(ChurnAction::Remove(r.clone()));
        }
        if let Some(l) = &self.label {
            actions.push(ChurnAction::Label(l.node.clone(), l.labels.clone()));
        }
        if let Some(t) = &self.taint {
            let taints = t
                .taints
                .iter()
                .map(TaintSpec::to_taint)
                .collect::<Result<_>>()?;
            actions.push(ChurnAction::Taint(t.node.clone(), taints));
        }
        if let Some(r) = &self.ready {
            actions.push(ChurnAction::Ready(r.node.clone(), r.ready));
        }
        match actions.len() {
            1 => Ok(actions.remove(0)),
            n => bail!(
                "churn at {}: give exactly one of add, remove, label, taint, ready ({n} given)",
                self.at.0
            ),
        }
    }
}

/// What serde-saphyr appends to a duplicate key error.
pub(crate) const DUPLICATE_KEY_HINT: &str = ", set DuplicateKeyPolicy in Options if acceptable";

/// Largest sim file read, in bytes (8 MiB, the manifest file limit): a sim file describes
/// nodes by pattern, so even the largest fleet takes a few kilobytes.
pub const MAX_SIM_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Reads at most [`MAX_SIM_FILE_BYTES`] of a regular file as UTF-8 text: a FIFO, a device or
/// a huge file is refused instead of blocking or exhausting memory.
fn read_limited(path: &Path) -> Result<String> {
    use std::io::Read;
    // Checked before opening: opening a FIFO for reading blocks until a writer appears.
    if !std::fs::metadata(path)?.is_file() {
        bail!("not a regular file");
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_SIM_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SIM_FILE_BYTES {
        bail!("larger than the limit of {MAX_SIM_FILE_BYTES} bytes");
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("not UTF-8 text"))
}

/// Most nodes a sim file may define, its `nodes:` and churn additions together: twice the
/// largest fleet benchmarked, far below what would exhaust memory.
pub const MAX_SIM_NODES: usize = 200_000;

impl SimConfig {
    /// Parses the YAML text of a sim file.
    pub fn parse(text: &str) -> Result<SimConfig> {
        let cfg: SimConfig = serde_saphyr::from_str(text).map_err(|e| {
            // A hint about parser options is of no use to the author of a sim file.
            let m = e.to_string();
            anyhow::anyhow!("{}", m.replace(DUPLICATE_KEY_HINT, ""))
        })?;
        cfg.check_size()?;
        cfg.check_values()?;
        Ok(cfg)
    }

    /// Refuses a fleet larger than [`MAX_SIM_NODES`] before anything is allocated for it, and a
    /// cluster that starts without nodes (nothing to roll out to: it would "converge" at once).
    fn check_size(&self) -> Result<()> {
        let count = |n: &NodeSpec| n.count.unwrap_or(1);
        let initial = self
            .nodes
            .iter()
            .fold(0usize, |t, n| t.saturating_add(count(n)));
        let total = self
            .churn
            .iter()
            .filter_map(|c| c.add.as_ref())
            .fold(initial, |t, n| t.saturating_add(count(n)));
        if total > MAX_SIM_NODES {
            bail!(
                "nodes: the sim file defines {total} nodes (with churn additions), more than the \
                 limit of {MAX_SIM_NODES}; lower the counts"
            );
        }
        if initial == 0 {
            bail!(
                "nodes: the simulated cluster starts with no nodes, so there is nothing to roll \
                 out to; add at least one node (churn can add more later)"
            );
        }
        Ok(())
    }

    /// Refuses a uniform latency whose bounds are the wrong way round, which would otherwise
    /// silently mean the first bound, every time; and a node image no runtime could pull.
    fn check_values(&self) -> Result<()> {
        let k = &self.kubelet;
        for (key, latency) in [
            ("startLatency", k.start_latency),
            ("pullLatency", k.pull_latency),
            ("podSetupLatency", k.pod_setup_latency),
        ] {
            if let Latency::Uniform([lo, hi]) = latency
                && lo > hi
            {
                bail!(
                    "kubelet.{key}.uniform: the first bound ({:#}) is longer than the second \
                     ({:#}); give [shortest, longest]",
                    lo.0,
                    hi.0
                );
            }
        }
        for spec in self
            .nodes
            .iter()
            .chain(self.churn.iter().filter_map(|c| c.add.as_ref()))
        {
            spec.initial_images()?;
            super::scheduler::NodeResources::of(spec)?;
        }
        for (i, deny) in self.admission.deny.iter().enumerate() {
            deny.parse::<super::api::admission::Deny>()
                .map_err(|e| anyhow::anyhow!("admission.deny[{i}]: {e}"))?;
        }
        Ok(())
    }

    /// Reads a sim file; relative `running.manifest` and `builtin.manifest` paths are resolved
    /// against its directory.
    pub fn load(path: &Path) -> Result<SimConfig> {
        let text = read_limited(path)
            .with_context(|| format!("cannot read sim file {}", path.display()))?;
        let mut cfg = SimConfig::parse(&text)
            .with_context(|| format!("invalid sim file {}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for r in cfg.running.iter_mut().chain(cfg.builtin.iter_mut()) {
            if r.manifest.is_relative() {
                r.manifest = dir.join(&r.manifest);
            }
        }
        Ok(cfg)
    }
}

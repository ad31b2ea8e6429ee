//! The scheduler and kubelet models: binding; a new pod's sandbox set-up, image pulls (once
//! per node and image) and start; failures; in-place image changes that restart one
//! container; readiness gates; run-to-completion pods; termination.

use super::config::{Latency, check_image};
use super::nodes::{ContainerState, NodeSim, Ran, SimContainer, SimEvent, SimPod};
use crate::cluster::ClusterError;
use crate::model::{Pod, PodPhase, ReadyCondition, Timestamp};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};

/// Characters of generated name suffixes (as the API server's generateName uses).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The pod conditions the kubelet and the scheduler write; others (readiness gates) are
/// written by controllers through the status subresource.
pub(crate) const KUBELET_CONDITIONS: &[&str] = &[
    "PodScheduled",
    "PodReadyToStartContainers",
    "Initialized",
    "ContainersReady",
    "Ready",
];

/// A pod's namespace and name.
pub(crate) type PodKey = (String, String);

/// The API server's default `terminationGracePeriodSeconds`.
const DEFAULT_TERMINATION_GRACE: i64 = 30;

/// True for the waiting reasons of an image that cannot be pulled (`ErrImagePull`,
/// `ImagePullBackOff`, `InvalidImageName`, ...): the container never ran.
pub(crate) fn is_pull_reason(reason: &str) -> bool {
    reason.contains("Image")
}

/// What happens next to a container of a pod the kubelet runs.
#[derive(Debug, Clone, Copy)]
enum Lifecycle {
    /// Its back-off is over: it starts again.
    Restart,
    /// It exits with an error (`crashAfter`).
    Crash,
}

/// True for the waiting reasons of a container the kubelet could not create: a pull
/// failure, `CreateContainerConfigError` (a missing ConfigMap, Secret or key) or
/// `CreateContainerError`. It never ran, so it is not restarted and its pod stays Pending.
pub(crate) fn never_ran(reason: &str) -> bool {
    is_pull_reason(reason)
        || matches!(
            reason,
            "CreateContainerConfigError" | "CreateContainerError"
        )
}

/// The kubelet's crash-loop back-off of one container (upstream `flowcontrol.Backoff` as the
/// kubelet's `doBackOff` keeps it per container, with `initialBackOff` 10 s and
/// `MaxContainerBackOff` 5 minutes): a container that exited is started again at once when it
/// has no back-off yet, or when its last run began more than twice the maximum (10 minutes)
/// before it exited (`hasExpired`: the back-off starts over); otherwise once the back-off has
/// passed since the exit. Each start after an exit doubles the back-off (`Next`), up to the
/// maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BackOff {
    /// The current back-off, in milliseconds.
    delay: u64,
    /// When it was last moved on (`lastUpdate`): the container's last start after an exit.
    updated: Timestamp,
}

impl BackOff {
    const INITIAL_MS: u64 = 10_000;
    const MAX_MS: u64 = 300_000;

    /// How long after exiting at `finished` a container with back-off `b` is started again.
    pub(crate) fn wait(b: Option<BackOff>, finished: Timestamp) -> u64 {
        match b {
            Some(b) if !b.expired(finished) => b.delay,
            _ => 0,
        }
    }

    /// The back-off after a container that exited at `finished` is started again at `now`.
    pub(crate) fn next(b: Option<BackOff>, finished: Timestamp, now: Timestamp) -> BackOff {
        let delay = match b {
            Some(b) if !b.expired(finished) => b.delay.saturating_mul(2).min(Self::MAX_MS),
            _ => Self::INITIAL_MS,
        };
        BackOff {
            delay,
            updated: now,
        }
    }

    /// The container ran long enough (an exit more than twice the maximum after the last
    /// update) that the back-off starts over.
    fn expired(&self, finished: Timestamp) -> bool {
        finished.duration_since(self.updated)
            > jiff::SignedDuration::from_millis(2 * Self::MAX_MS as i64)
    }
}

fn conflict(name: &str) -> ClusterError {
    ClusterError::Conflict(format!(
        "Operation cannot be fulfilled on pods \"{name}\": the object has been modified; please \
         apply your changes to the latest version and try again"
    ))
}

fn not_found(namespace: &str, name: &str) -> ClusterError {
    ClusterError::NotFound {
        kind: "pod",
        namespace: namespace.into(),
        name: name.into(),
    }
}

impl SimPod {
    /// Every readiness gate's condition is True.
    pub(crate) fn gates_pass(&self) -> bool {
        self.gates
            .iter()
            .all(|g| self.conditions.get(g).is_some_and(|c| c.0))
    }

    /// Every init container completed successfully.
    pub(crate) fn init_done(&self) -> bool {
        self.containers
            .iter()
            .filter(|c| c.init)
            .all(|c| matches!(&c.state, ContainerState::Terminated(r) if r.exit_code == 0))
    }

    /// Init done and every container running.
    pub(crate) fn containers_running(&self) -> bool {
        let mut regular = self.containers.iter().filter(|c| !c.init).peekable();
        regular.peek().is_some()
            && self.init_done()
            && regular.all(|c| matches!(c.state, ContainerState::Running(_)))
    }

    /// The phase its containers make: Succeeded or Failed once a run-to-completion pod's
    /// containers have all ended; Running once a container has run; Pending before.
    fn phase(&self) -> PodPhase {
        let regular: Vec<&SimContainer> = self.containers.iter().filter(|c| !c.init).collect();
        let ended = |c: &&SimContainer| match &c.state {
            ContainerState::Terminated(r) => Some(r.exit_code),
            _ => None,
        };
        if self.run_to_completion
            && !regular.is_empty()
            && regular.iter().all(|c| ended(c).is_some())
        {
            return if regular.iter().all(|c| ended(c) == Some(0)) {
                PodPhase::Succeeded
            } else {
                PodPhase::Failed
            };
        }
        let ran = |c: &&SimContainer| {
            c.restarts > 0
                || c.last.is_some()
                || match &c.state {
                    ContainerState::Running(_) | ContainerState::Terminated(_) => true,
                    ContainerState::Failing(reason, _) => !never_ran(reason),
                    ContainerState::Creating
                    | ContainerState::PullFailed(_)
                    | ContainerState::ConfigMissing(_) => false,
                }
        };
        if regular.iter().any(ran) {
            PodPhase::Running
        } else {
            PodPhase::Pending
        }
    }

    /// The first failing container (init containers first) and why it is failing.
    fn failing(&self) -> Option<(&SimContainer, String)> {
        self.containers.iter().find_map(|c| match &c.state {
            ContainerState::PullFailed(r) | ContainerState::Failing(r, _) => Some((c, r.clone())),
            ContainerState::ConfigMissing(_) => {
                Some((c, crate::kubelet_config::CONFIG_ERROR.to_string()))
            }
            ContainerState::Terminated(r) if r.exit_code != 0 => Some((c, r.reason.clone())),
            _ => None,
        })
    }

    /// Why the first failing container (init containers first) is failing.
    fn failure_reason(&self) -> Option<String> {
        self.failing().map(|(_, reason)| reason)
    }

    /// What its status says beyond readiness, as [`crate::model::PodSignals::from_status`]
    /// reads it from the API's.
    pub(crate) fn signals(&self) -> Option<Box<crate::model::PodSignals>> {
        let most = self.containers.iter().filter(|c| c.restarts > 0).fold(
            None::<&SimContainer>,
            |best, c| match best {
                Some(b) if b.restarts >= c.restarts => Some(b),
                _ => Some(c),
            },
        );
        crate::model::PodSignals {
            waiting_container: self.failing().map(|(c, _)| c.name.clone()),
            restarts: most.map(|c| (c.name.clone(), c.restarts)),
            last_exit: self
                .containers
                .iter()
                .filter_map(|c| c.last.as_ref().map(|r| r.finished))
                .max(),
            unschedulable: self.unschedulable.clone(),
        }
        .boxed()
    }
}

impl NodeSim {
    /// A latency drawn from `latency`, in milliseconds. A fixed latency draws nothing, so that
    /// unused latencies leave the random sequence (and every name drawn from it) unchanged.
    fn draw(&mut self, latency: Latency) -> u64 {
        match latency {
            Latency::Fixed(d) => d.millis(),
            Latency::Uniform([lo, hi]) => {
                let (lo, hi) = (lo.millis(), hi.millis().max(lo.millis()));
                let r = self.next_random();
                // The whole u64 range has no `span + 1`: any draw is in it.
                let offset = match (hi - lo).checked_add(1) {
                    Some(span) => r % span,
                    None => r,
                };
                lo.saturating_add(offset)
            }
        }
    }

    fn start_latency(&mut self) -> u64 {
        self.draw(self.cfg.kubelet.start_latency)
    }

    fn pull_latency(&mut self) -> u64 {
        self.draw(self.cfg.kubelet.pull_latency)
    }

    fn setup_latency(&mut self) -> u64 {
        self.draw(self.cfg.kubelet.pod_setup_latency)
    }

    /// A pod, to change: its resourceVersion moves on.
    pub(crate) fn pod_mut(&mut self, key: &PodKey) -> Option<&mut SimPod> {
        self.rv += 1;
        let rv = self.rv;
        let p = self.pods.get_mut(key)?;
        p.rv = rv;
        self.changed_pods.insert(key.clone());
        Some(p)
    }

    fn node_ready(&self, node: &str) -> bool {
        self.nodes.get(node).is_some_and(|n| n.ready != Some(false))
    }

    fn has_image(&self, node: &str, image: &str) -> bool {
        self.node_images
            .get(node)
            .is_some_and(|images| images.contains(image))
    }

    /// The configured reason why `image` cannot be pulled, if it cannot.
    fn pull_failure(&self, image: &str) -> Option<String> {
        self.cfg
            .failures
            .images
            .iter()
            .find(|i| i.image == image && is_pull_reason(&i.reason))
            .map(|i| i.reason.clone())
    }

    /// Why containers of `image` on `node` fail once started, if they do (a broken node's
    /// runtime first, then the image).
    fn start_failure(&self, image: &str, node: &str) -> Option<String> {
        let f = &self.cfg.failures;
        f.nodes
            .iter()
            .find(|n| n.node == node)
            .map(|n| n.reason.clone())
            .or_else(|| {
                f.images
                    .iter()
                    .find(|i| {
                        i.image == image && i.crash_after.is_none() && !is_pull_reason(&i.reason)
                    })
                    .map(|i| i.reason.clone())
            })
    }

    /// How long a container of `image` that restarted `restarts` times runs before it exits
    /// with an error, if it does.
    fn crash_after(&self, image: &str, restarts: u32) -> Option<u64> {
        self.cfg
            .failures
            .images
            .iter()
            .find(|i| i.image == image)
            .filter(|i| i.crashes.is_none_or(|n| restarts < n))
            .and_then(|i| i.crash_after)
            .map(|d| d.millis())
    }

    /// `prefix` plus five random characters, unused in `namespace` (generateName).
    pub(crate) fn unique_name(&mut self, namespace: &str, prefix: &str) -> String {
        loop {
            let mut r = self.next_random();
            let mut name = prefix.to_string();
            for _ in 0..5 {
                name.push(ALPHABET[(r % ALPHABET.len() as u64) as usize] as char);
                r /= ALPHABET.len() as u64;
            }
            if !self
                .pods
                .contains_key(&(namespace.to_string(), name.clone()))
            {
                return name;
            }
        }
    }

    /// Admits a pod: names it, timestamps it and (scheduler model) binds it to the node its
    /// `metadata.name` affinity names, if that node exists; the kubelet then starts it.
    pub(crate) fn create(
        &mut self,
        mut pod: k8s_openapi::api::core::v1::Pod,
    ) -> Result<String, ClusterError> {
        let meta = &mut pod.metadata;
        let namespace = meta
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ClusterError::Rejected("pod has no namespace".into()))?;
        let name = match (&meta.name, &meta.generate_name) {
            (Some(n), _) if !n.is_empty() => {
                if self.pods.contains_key(&(namespace.clone(), n.clone())) {
                    return Err(ClusterError::Rejected(format!(
                        "pod {namespace}/{n} already exists"
                    )));
                }
                n.clone()
            }
            (_, Some(prefix)) => {
                let prefix = prefix.clone();
                self.unique_name(&namespace, &prefix)
            }
            _ => {
                return Err(ClusterError::Rejected(
                    "pod has neither name nor generateName".into(),
                ));
            }
        };
        let meta = &mut pod.metadata;
        meta.name = Some(name.clone());
        meta.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            self.now(),
        ));
        let spec = pod.spec.as_ref();
        let containers: Vec<SimContainer> = spec
            .iter()
            .flat_map(|s| {
                let init = s.init_containers.iter().flatten().map(|c| (c, true));
                init.chain(s.containers.iter().map(|c| (c, false)))
            })
            .map(|(c, init)| SimContainer {
                name: c.name.clone(),
                image: c.image.clone().unwrap_or_default(),
                init,
                restarts: 0,
                state: ContainerState::Creating,
                last: None,
                back_off: None,
            })
            .collect();
        let run_to_completion = spec.and_then(|s| s.restart_policy.as_deref()) == Some("Never");
        let gates = spec
            .and_then(|s| s.readiness_gates.as_ref())
            .map(|g| g.iter().map(|g| g.condition_type.clone()).collect())
            .unwrap_or_default();
        let mut model = Pod::from_k8s(&pod);
        model.phase = PodPhase::Pending;
        model.ready = None;
        // Bound below: by `spec.nodeName`, or by the scheduler.
        model.node_name = None;
        let wanted = spec
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty());
        let empty = k8s_openapi::api::core::v1::PodSpec::default();
        let pod_spec = spec.unwrap_or(&empty);
        self.rv += 1;
        let sim_pod = SimPod {
            tolerations: pod_spec
                .tolerations
                .iter()
                .flatten()
                .map(crate::model::Toleration::from_k8s)
                .collect(),
            placement: super::scheduler::Placement::of(pod_spec),
            node_name_wanted: wanted.clone(),
            requests: super::scheduler::pod_requests(pod_spec),
            host_ports: super::scheduler::host_ports(pod_spec),
            unschedulable: None,
            termination_grace: pod_spec
                .termination_grace_period_seconds
                .unwrap_or(DEFAULT_TERMINATION_GRACE),
            deletion_grace: None,
            config_refs: crate::manifest::versioning::references(pod_spec),
            mount_failure: None,
            pod: model,
            starting: containers.iter().map(|c| c.name.clone()).collect(),
            containers,
            run_to_completion,
            gates,
            conditions: BTreeMap::new(),
            waiting_for_node: false,
            started: false,
            set_up: None,
            initialized: None,
            containers_ready: None,
            awaiting: BTreeSet::new(),
            epoch: 0,
            rv: self.rv,
        };
        let key = (namespace, name.clone());
        self.pods.insert(key.clone(), sim_pod);
        self.changed_pods.insert(key.clone());
        if wanted.is_none() {
            self.unbound.insert(key.clone());
        }
        match wanted {
            // A pod that names its node skips the scheduler.
            Some(node) => {
                if self.nodes.contains_key(&node) {
                    self.bind(&key, &node);
                } else if let Some(p) = self.pods.get_mut(&key) {
                    p.pod.node_name = Some(crate::model::shared_name(&node));
                }
            }
            None => {
                self.schedule_pod(&key);
            }
        }
        Ok(name)
    }

    /// Binds a pod to `node` (the scheduler's decision, or its `spec.nodeName`); the kubelet
    /// then sets it up.
    pub(crate) fn bind(&mut self, key: &PodKey, node: &str) {
        let Some(p) = self.pod_mut(key) else { return };
        p.pod.node_name = Some(crate::model::shared_name(node));
        p.unschedulable = None;
        self.unbound.remove(key);
        self.bound
            .entry(node.to_string())
            .or_default()
            .insert(key.clone());
        let setup = self.setup_latency();
        if setup == 0 {
            self.pod_set_up(key);
        } else {
            let at = self.clock().saturating_add(setup);
            self.schedule(
                at,
                SimEvent::PodSetUp {
                    namespace: key.0.clone(),
                    name: key.1.clone(),
                },
            );
        }
    }

    /// A pod is gone from the API: its node's resources and ports are free again, so the
    /// pods waiting for them are tried again.
    pub(crate) fn remove_pod(&mut self, key: &PodKey) -> Option<SimPod> {
        let p = self.pods.remove(key)?;
        self.changed_pods.insert(key.clone());
        self.unbound.remove(key);
        if let Some(node) = &p.pod.node_name {
            if let Some(set) = self.bound.get_mut(&**node) {
                set.remove(key);
            }
            self.retry_pending(Some(&node.clone()));
        }
        Some(p)
    }

    /// A new pod's sandbox, network and volumes are ready: its images are pulled next.
    pub(crate) fn pod_set_up(&mut self, key: &PodKey) {
        let now = self.now();
        match self.pods.get(key) {
            Some(p) if p.set_up.is_none() && !p.pod.is_terminating() => {}
            _ => return,
        }
        if let Some(why) = self.unmountable(key) {
            self.mount_failed(key, why);
            return;
        }
        if let Some(p) = self.pod_mut(key) {
            p.set_up = Some(now);
            p.mount_failure = None;
        }
        // The kubelet's first status of the pod: not ready yet.
        self.report(key);
        self.begin_pulls(key);
    }

    /// Pulls the images the pod's starting containers need that its node lacks (joining a
    /// pull already under way for the same image); when none is left to wait for, the
    /// containers start.
    fn begin_pulls(&mut self, key: &PodKey) {
        let Some(p) = self.pods.get(key) else { return };
        let Some(node) = p.pod.node_name.as_deref().map(str::to_string) else {
            return;
        };
        let mut images: Vec<String> = Vec::new();
        for c in p.containers.iter().filter(|c| p.starting.contains(&c.name)) {
            if !images.contains(&c.image) {
                images.push(c.image.clone());
            }
        }
        let mut awaiting = BTreeSet::new();
        for image in images {
            if self.has_image(&node, &image) {
                continue;
            }
            let pull = (node.clone(), image.clone());
            if self.pulls.contains(&pull) {
                awaiting.insert(image);
                continue;
            }
            let latency = self.pull_latency();
            if latency == 0 {
                self.finish_pull(&node, &image);
            } else {
                self.pulls.insert(pull);
                let at = self.clock().saturating_add(latency);
                self.schedule(
                    at,
                    SimEvent::ImagePulled {
                        node: node.clone(),
                        image: image.clone(),
                    },
                );
                awaiting.insert(image);
            }
        }
        let done = awaiting.is_empty();
        if let Some(p) = self.pod_mut(key) {
            p.awaiting = awaiting;
        }
        if done {
            self.pulls_done(key);
        }
    }

    /// A pull ends: the image is on the node, unless it is one that cannot be pulled.
    fn finish_pull(&mut self, node: &str, image: &str) {
        if self.nodes.contains_key(node) && self.pull_failure(image).is_none() {
            self.node_images
                .entry(node.to_string())
                .or_default()
                .insert(image.to_string());
            self.touch_node(node);
        }
    }

    /// A pull under way ended: the pods waiting for it go on.
    pub(crate) fn image_pulled(&mut self, node: &str, image: &str) {
        if !self.pulls.remove(&(node.to_string(), image.to_string())) {
            return;
        }
        self.finish_pull(node, image);
        let waiting: Vec<PodKey> = self
            .pods
            .iter()
            .filter(|(_, p)| p.pod.node_name.as_deref() == Some(node) && p.awaiting.contains(image))
            .map(|(k, _)| k.clone())
            .collect();
        for key in waiting {
            let done = self.pod_mut(&key).is_some_and(|p| {
                p.awaiting.remove(image);
                p.awaiting.is_empty()
            });
            if done {
                self.pulls_done(&key);
            }
        }
    }

    /// The pod's pulls are over: containers whose image did not come show the pull failure;
    /// the others start after the start latency (behind a failed init container, none does).
    fn pulls_done(&mut self, key: &PodKey) {
        let Some(p) = self.pods.get(key) else { return };
        if p.pod.is_terminating() {
            return;
        }
        let Some(node) = p.pod.node_name.clone() else {
            return;
        };
        let epoch = p.epoch;
        // A NotReady node's kubelet reports nothing: failures show once it is back.
        let report = self.node_ready(&node);
        let failed: Vec<(String, bool, String)> = p
            .containers
            .iter()
            .filter(|c| p.starting.contains(&c.name) && !self.has_image(&node, &c.image))
            .map(|c| {
                let reason = self
                    .pull_failure(&c.image)
                    .unwrap_or_else(|| "ErrImagePull".into());
                (c.name.clone(), c.init, reason)
            })
            .filter(|_| report)
            .collect();
        // Drawn even when nothing starts, so that failures leave the random sequence as it is.
        let latency = self.start_latency();
        let clock = self.clock();
        let Some(p) = self.pod_mut(key) else { return };
        for (name, init, reason) in &failed {
            let first = match reason.as_str() {
                "ErrImagePull" | "ImagePullBackOff" => "ErrImagePull".to_string(),
                other => other.to_string(),
            };
            if let Some(c) = p.containers.iter_mut().find(|c| c.name == *name) {
                c.state = ContainerState::PullFailed(first);
            }
            p.starting.remove(name);
            if *init {
                // Containers wait for their init containers: none starts.
                p.starting.clear();
            }
        }
        if !p.starting.is_empty() {
            self.schedule(
                clock.saturating_add(latency),
                SimEvent::PodStarted {
                    namespace: key.0.clone(),
                    name: key.1.clone(),
                    epoch,
                },
            );
        }
        if !failed.is_empty() {
            // The kubelet's next attempt, as long after as a start would have taken: it backs
            // off.
            self.schedule(
                clock.saturating_add(latency),
                SimEvent::PullBackOff {
                    namespace: key.0.clone(),
                    name: key.1.clone(),
                    epoch,
                },
            );
            self.report(key);
        }
    }

    /// A failed pull's back-off: `ErrImagePull` becomes the configured reason
    /// (`ImagePullBackOff`).
    pub(crate) fn pull_back_off(&mut self, key: &PodKey, epoch: u64) {
        let Some(p) = self.pods.get(key) else { return };
        if p.epoch != epoch {
            return;
        }
        let backing_off: Vec<(usize, String)> = p
            .containers
            .iter()
            .enumerate()
            .filter(|(_, c)| c.state == ContainerState::PullFailed("ErrImagePull".into()))
            .filter_map(|(i, c)| Some((i, self.pull_failure(&c.image)?)))
            .filter(|(_, reason)| reason != "ErrImagePull")
            .collect();
        if backing_off.is_empty() {
            return;
        }
        if let Some(p) = self.pod_mut(key) {
            for (i, reason) in backing_off {
                p.containers[i].state = ContainerState::PullFailed(reason);
            }
        }
        self.report(key);
    }

    /// The kubelet started the pod's starting containers: running, completed (init
    /// containers, run-to-completion pods) or failing.
    pub(crate) fn pod_started(&mut self, key: &PodKey, epoch: u64) {
        let now = self.now();
        let Some(p) = self.pods.get(key) else { return };
        if p.epoch != epoch || p.pod.is_terminating() || p.starting.is_empty() {
            return;
        }
        let Some(node) = p.pod.node_name.clone() else {
            return;
        };
        if !self.node_ready(&node) {
            // The kubelet of a NotReady node reports nothing: the pod stays Pending.
            if let Some(p) = self.pod_mut(key) {
                p.waiting_for_node = true;
            }
            return;
        }
        let missing = p
            .containers
            .iter()
            .any(|c| p.starting.contains(&c.name) && !self.has_image(&node, &c.image));
        if missing {
            // Its pulls failed while the node was NotReady: they are tried again.
            self.begin_pulls(key);
            return;
        }
        let failures: Vec<Option<String>> = p
            .containers
            .iter()
            .map(|c| self.start_failure(&c.image, &node))
            .collect();
        let crash_after: Vec<Option<u64>> = p
            .containers
            .iter()
            .map(|c| self.crash_after(&c.image, c.restarts))
            .collect();
        // The environment is made before a container is: a missing ConfigMap or Secret
        // keeps it from being created at all.
        let config_errors: Vec<Option<String>> = p
            .containers
            .iter()
            .map(|c| {
                p.starting
                    .contains(&c.name)
                    .then(|| self.container_config_error(key, c.init, &c.name))
                    .flatten()
            })
            .collect();
        let init_blocked = p
            .containers
            .iter()
            .zip(&config_errors)
            .any(|(c, e)| c.init && e.is_some());
        let Some(p) = self.pod_mut(key) else { return };
        p.waiting_for_node = false;
        let to_completion = p.run_to_completion;
        let epoch = p.epoch;
        let mut starting = std::mem::take(&mut p.starting);
        for (c, error) in p.containers.iter_mut().zip(&config_errors) {
            if let Some(why) = error {
                c.state = ContainerState::ConfigMissing(why.clone());
                starting.remove(&c.name);
            } else if init_blocked && !c.init && starting.remove(&c.name) {
                // Behind an init container that cannot be created: started with it.
                p.starting.insert(c.name.clone());
            }
        }
        // (container, after how long) of the kubelet's next restarts and of the crashes to come.
        let mut restarts = Vec::new();
        let mut crashes = Vec::new();
        for ((c, failure), crash_after) in p.containers.iter_mut().zip(failures).zip(crash_after) {
            if !starting.contains(&c.name) {
                continue;
            }
            let ran = |exit_code: i32, reason: &str| Ran {
                started: now,
                finished: now,
                exit_code,
                reason: reason.into(),
                image: c.image.clone(),
            };
            c.state = match failure {
                Some(reason) if to_completion && !is_pull_reason(&reason) => {
                    ContainerState::Terminated(ran(1, "Error"))
                }
                Some(reason) if never_ran(&reason) => ContainerState::Failing(reason, now),
                Some(reason) => {
                    // It ran and exited at once (a start error ends with 128, `StartError`):
                    // the kubelet starts it again after its back-off.
                    c.last = Some(if reason == "RunContainerError" {
                        ran(128, "StartError")
                    } else {
                        ran(1, "Error")
                    });
                    restarts.push((c.name.clone(), BackOff::wait(c.back_off, now)));
                    ContainerState::Failing(reason, now)
                }
                None if c.init || to_completion => ContainerState::Terminated(ran(0, "Completed")),
                None => {
                    if let Some(after) = crash_after.filter(|_| !c.init) {
                        crashes.push((c.name.clone(), after));
                    }
                    ContainerState::Running(now)
                }
            };
        }
        for (container, after) in restarts {
            self.schedule_container(after, key, container, epoch, Lifecycle::Restart);
        }
        for (container, after) in crashes {
            self.schedule_container(after, key, container, epoch, Lifecycle::Crash);
        }
        self.report(key);
    }

    /// Schedules a container's restart or crash `after` milliseconds from now.
    fn schedule_container(
        &mut self,
        after: u64,
        key: &PodKey,
        container: String,
        epoch: u64,
        what: Lifecycle,
    ) {
        let (namespace, name) = key.clone();
        let event = match what {
            Lifecycle::Restart => SimEvent::ContainerRestart {
                namespace,
                name,
                container,
                epoch,
            },
            Lifecycle::Crash => SimEvent::ContainerCrash {
                namespace,
                name,
                container,
                epoch,
            },
        };
        let at = self.clock().saturating_add(after);
        self.schedule(at, event);
    }

    /// A running container of a `crashAfter` image exits with an error: the pod is no longer
    /// ready, and the kubelet starts the container again after its back-off.
    pub(crate) fn container_crash(&mut self, key: &PodKey, container: &str, epoch: u64) {
        let now = self.now();
        let Some(p) = self.pods.get(key) else { return };
        if p.epoch != epoch || p.pod.is_terminating() {
            return;
        }
        let Some(p) = self.pod_mut(key) else { return };
        let Some(c) = p.containers.iter_mut().find(|c| c.name == container) else {
            return;
        };
        let ContainerState::Running(since) = c.state else {
            return;
        };
        c.last = Some(Ran {
            started: since,
            finished: now,
            exit_code: 1,
            reason: "Error".into(),
            image: c.image.clone(),
        });
        c.state = ContainerState::Failing("CrashLoopBackOff".into(), now);
        let after = BackOff::wait(c.back_off, now);
        self.schedule_container(after, key, container.to_string(), epoch, Lifecycle::Restart);
        self.report(key);
    }

    /// A crashed container's back-off is over: the kubelet starts it again, counting the
    /// restart (on a NotReady node, once the node is back).
    pub(crate) fn container_restart(&mut self, key: &PodKey, container: &str, epoch: u64) {
        let now = self.now();
        let Some(p) = self.pods.get(key) else { return };
        if p.epoch != epoch || p.pod.is_terminating() {
            return;
        }
        let Some(p) = self.pod_mut(key) else { return };
        let Some(c) = p.containers.iter_mut().find(|c| c.name == container) else {
            return;
        };
        let finished = match &c.state {
            ContainerState::Failing(reason, at) if !never_ran(reason) => *at,
            _ => return,
        };
        c.back_off = Some(BackOff::next(c.back_off, finished, now));
        c.restarts += 1;
        p.starting.insert(container.to_string());
        self.pod_started(key, epoch);
    }

    /// What the kubelet reports after a change of the pod's containers or conditions: phase,
    /// waiting reason, ContainersReady and Ready (containers running, readiness gates True,
    /// node Ready).
    pub(crate) fn report(&mut self, key: &PodKey) {
        let now = self.now();
        let node_ready = self
            .pods
            .get(key)
            .and_then(|p| p.pod.node_name.as_deref())
            .is_some_and(|n| self.node_ready(n));
        let Some(p) = self.pod_mut(key) else { return };
        let has_init = p.containers.iter().any(|c| c.init);
        if has_init && p.initialized.is_none() && p.init_done() {
            p.initialized = Some(now);
        }
        let running = p.containers_running();
        if p.containers_ready.map(|c| c.0) != Some(running) {
            p.containers_ready = Some((running, now));
        }
        p.started = running;
        p.pod.phase = p.phase();
        p.pod.waiting_reason = p.failure_reason();
        let ready = running && node_ready && p.gates_pass();
        if p.pod.ready.map(|r| r.status) != Some(ready) {
            p.pod.ready = Some(ReadyCondition {
                status: ready,
                last_transition: Some(now),
            });
        }
    }

    /// Graceful deletion with the pod's own grace period.
    pub(crate) fn delete(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        self.delete_with_grace(namespace, name, None)
    }

    /// Graceful deletion (`gracePeriodSeconds` of the request, else the pod's
    /// `terminationGracePeriodSeconds`): the pod is marked terminating with the API server's
    /// `deletionTimestamp`, the request's time plus the grace period, and disappears when its
    /// kubelet is done, after the sim file's `terminationGrace` if that is shorter. As the API
    /// server's pod strategy has it, a pod never bound or already terminal, or a grace period
    /// of 0, goes at once, and a negative grace period counts as 1 s.
    pub(crate) fn delete_with_grace(
        &mut self,
        namespace: &str,
        name: &str,
        grace: Option<i64>,
    ) -> Result<(), ClusterError> {
        let key = (namespace.to_string(), name.to_string());
        let now = self.now();
        let kubelet = self.cfg.kubelet.termination_grace.millis();
        let Some(p) = self.pods.get(&key) else {
            return Err(not_found(namespace, name));
        };
        if p.pod.deletion_timestamp.is_some() {
            return Ok(());
        }
        let mut period = grace.unwrap_or(p.termination_grace);
        if p.pod.node_name.is_none() || p.pod.phase.is_terminal() {
            period = 0;
        }
        if period < 0 {
            period = 1;
        }
        if period == 0 || kubelet == 0 {
            self.remove_pod(&key);
            return Ok(());
        }
        if let Some(p) = self.pod_mut(&key) {
            p.pod.deletion_timestamp = Some(crate::model::later(
                now,
                jiff::SignedDuration::from_secs(period),
            ));
            p.deletion_grace = Some(period);
        }
        let grace_ms = u64::try_from(period).unwrap_or(0).saturating_mul(1000);
        let at = self.clock().saturating_add(kubelet.min(grace_ms));
        self.schedule(
            at,
            SimEvent::PodGone {
                namespace: key.0,
                name: key.1,
            },
        );
        Ok(())
    }

    /// A node's Ready condition changes. Going NotReady, its pods are marked not ready (the
    /// node lifecycle controller's work); coming back, the kubelet reports them again and
    /// starts the pods that were waiting for it.
    pub(crate) fn set_node_ready(&mut self, node: &str, ready: bool) {
        let now = self.now();
        let Some(n) = self.nodes.get_mut(node) else {
            return;
        };
        n.ready = Some(ready);
        self.touch_node(node);
        let mut rv = self.rv;
        let mut waiting = Vec::new();
        let changed = &mut self.changed_pods;
        for (key, p) in self.pods.iter_mut() {
            if p.pod.node_name.as_deref() != Some(node) {
                continue;
            }
            changed.insert(key.clone());
            if !ready {
                if p.pod.is_ready() {
                    p.pod.ready = Some(ReadyCondition {
                        status: false,
                        last_transition: Some(now),
                    });
                    rv += 1;
                    p.rv = rv;
                }
            } else if p.started {
                let gates = p.gates_pass();
                if gates || p.pod.is_ready() {
                    p.pod.ready = Some(ReadyCondition {
                        status: gates,
                        last_transition: Some(now),
                    });
                    rv += 1;
                    p.rv = rv;
                }
            } else if p.waiting_for_node {
                waiting.push((key.clone(), p.epoch));
            }
        }
        self.rv = rv;
        for ((namespace, name), epoch) in waiting {
            let at = self.clock().saturating_add(self.start_latency());
            self.schedule(
                at,
                SimEvent::PodStarted {
                    namespace,
                    name,
                    epoch,
                },
            );
        }
    }

    /// Inserts a pod that has been running and ready since `since` (initial state), its
    /// images on its node; returns its name.
    pub(crate) fn insert_running(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
        since: Timestamp,
    ) -> Result<String> {
        let pod_namespace = pod.metadata.namespace.clone();
        if let Some(node) = Pod::from_k8s(&pod)
            .target_node
            .as_deref()
            .map(str::to_string)
            && self.nodes.contains_key(&node)
        {
            let images = pod
                .spec
                .iter()
                .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
                .filter_map(|c| c.image.clone());
            self.node_images
                .entry(node.clone())
                .or_default()
                .extend(images);
            self.touch_node(&node);
        }
        let name = self.create(pod).map_err(|e| anyhow::anyhow!("{e}"))?;
        let key = (pod_namespace.unwrap_or_default(), name.clone());
        let node = self.pods[&key].pod.node_name.clone().unwrap_or_default();
        let node_ready = self.node_ready(&node);
        let p = self.pod_mut(&key).expect("just created");
        p.pod.creation_timestamp = Some(since);
        // The start the scheduler queued is moot: it already runs.
        p.epoch += 1;
        p.starting.clear();
        p.awaiting.clear();
        p.set_up = Some(since);
        p.initialized = Some(since);
        p.containers_ready = Some((true, since));
        for c in &mut p.containers {
            c.state = if c.init {
                ContainerState::Terminated(Ran {
                    started: since,
                    finished: since,
                    exit_code: 0,
                    reason: "Completed".into(),
                    image: c.image.clone(),
                })
            } else {
                ContainerState::Running(since)
            };
        }
        for gate in p.gates.clone() {
            p.conditions.insert(gate, (true, since));
        }
        p.started = true;
        p.pod.phase = PodPhase::Running;
        p.pod.ready = Some(ReadyCondition {
            status: node_ready,
            last_transition: Some(since),
        });
        Ok(name)
    }

    /// Changes the images of a pod's containers (`(container, image)`, init containers
    /// included) and sets `labels` on it (others are kept), as a PATCH of the pod does. A
    /// `resource_version` is a precondition: the pod must still be at it
    /// ([`NodeSim::pod_resource_version`]), or the patch is refused as a conflict.
    ///
    /// The kubelet restarts each changed container of a running pod: the pod stops being
    /// ready, the new image is pulled when the node lacks it (`pullLatency`; no
    /// `podSetupLatency`, the sandbox stays), the container starts (`startLatency`) with its
    /// `restartCount` one higher. The pod keeps its name and uid.
    pub fn patch_pod(
        &mut self,
        namespace: &str,
        name: &str,
        resource_version: Option<&str>,
        images: &[(String, String)],
        labels: &BTreeMap<String, String>,
    ) -> Result<(), ClusterError> {
        let key = (namespace.to_string(), name.to_string());
        let p = self
            .pods
            .get(&key)
            .ok_or_else(|| not_found(namespace, name))?;
        if let Some(rv) = resource_version
            && rv != p.rv.to_string()
        {
            return Err(conflict(name));
        }
        for (container, image) in images {
            if !p.containers.iter().any(|c| c.name == *container) {
                return Err(ClusterError::Rejected(format!(
                    "pod {namespace}/{name} has no container {container:?}"
                )));
            }
            check_image(image)
                .map_err(|e| ClusterError::Rejected(format!("container {container:?}: {e}")))?;
        }
        self.change_images(&key, images);
        if let Some(p) = self.pod_mut(&key) {
            p.pod
                .labels_mut()
                .extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        self.probed();
        Ok(())
    }

    /// The images of a pod's containers change (checked by the caller): the kubelet of a
    /// running pod restarts those containers.
    pub(crate) fn change_images(&mut self, key: &PodKey, images: &[(String, String)]) {
        let now = self.now();
        let Some(p) = self.pods.get(key) else { return };
        let restarts =
            p.pod.node_name.is_some() && !p.pod.is_terminating() && !p.pod.phase.is_terminal();
        let changed = images.iter().any(|(name, image)| {
            p.containers
                .iter()
                .any(|c| c.name == *name && c.image != *image)
        });
        if !changed {
            return;
        }
        let Some(p) = self.pod_mut(key) else { return };
        for (name, image) in images {
            let Some(c) = p.containers.iter_mut().find(|c| c.name == *name) else {
                continue;
            };
            if c.image == *image {
                continue;
            }
            let old = std::mem::replace(&mut c.image, image.clone());
            // The kubelet keys a container's back-off by its spec's hash: a new image starts
            // with none.
            c.back_off = None;
            if !restarts {
                continue;
            }
            let ended = |started: Timestamp, exit_code: i32, reason: &str| Ran {
                started,
                finished: now,
                exit_code,
                reason: reason.into(),
                image: old.clone(),
            };
            let last = match std::mem::replace(&mut c.state, ContainerState::Creating) {
                ContainerState::Running(t) => Some(ended(t, 0, "Completed")),
                ContainerState::Failing(_, t) => Some(ended(t, 1, "Error")),
                ContainerState::Terminated(r) => Some(r),
                ContainerState::Creating
                | ContainerState::PullFailed(_)
                | ContainerState::ConfigMissing(_) => None,
            };
            if last.is_some() {
                c.restarts += 1;
                c.last = last;
            }
            p.starting.insert(name.clone());
        }
        if !restarts {
            return;
        }
        // Containers that never started (behind a failed init container, or a failed pull)
        // start with them.
        let creating: Vec<String> = p
            .containers
            .iter()
            .filter(|c| c.state == ContainerState::Creating)
            .map(|c| c.name.clone())
            .collect();
        p.starting.extend(creating);
        p.epoch += 1;
        p.awaiting.clear();
        let set_up = p.set_up.is_some();
        self.report(key);
        if set_up {
            self.begin_pulls(key);
        }
    }

    /// Sets a pod condition that is not the kubelet's own (a readiness gate's, as a
    /// controller writes it to the status subresource): True when `status`. A pod whose
    /// `spec.readinessGates` name condition types is Ready only when its containers are and
    /// each of those conditions is True.
    pub fn set_condition(
        &mut self,
        namespace: &str,
        name: &str,
        condition_type: &str,
        status: bool,
    ) -> Result<(), ClusterError> {
        if condition_type.is_empty() || KUBELET_CONDITIONS.contains(&condition_type) {
            return Err(ClusterError::Rejected(format!(
                "condition type {condition_type:?}: the kubelet owns it; set a readiness gate's \
                 condition"
            )));
        }
        let key = (namespace.to_string(), name.to_string());
        if !self.pods.contains_key(&key) {
            return Err(not_found(namespace, name));
        }
        let mut conditions: Vec<(String, bool, Option<Timestamp>)> = self.pods[&key]
            .conditions
            .iter()
            .map(|(t, (s, at))| (t.clone(), *s, Some(*at)))
            .filter(|(t, ..)| t != condition_type)
            .collect();
        conditions.push((condition_type.to_string(), status, None));
        self.replace_conditions(&key, conditions);
        self.probed();
        Ok(())
    }

    /// The pod's conditions that are not the kubelet's become `conditions` (type, True,
    /// transition time: kept when the status stays, else the one given or now).
    pub(crate) fn replace_conditions(
        &mut self,
        key: &PodKey,
        conditions: Vec<(String, bool, Option<Timestamp>)>,
    ) {
        let now = self.now();
        let Some(p) = self.pods.get(key) else { return };
        let next: BTreeMap<String, (bool, Timestamp)> = conditions
            .into_iter()
            .filter(|(t, ..)| !KUBELET_CONDITIONS.contains(&t.as_str()))
            .map(|(t, status, at)| {
                let since = match p.conditions.get(&t) {
                    Some((was, since)) if *was == status => *since,
                    _ => at.unwrap_or(now),
                };
                (t, (status, since))
            })
            .collect();
        if next == p.conditions {
            return;
        }
        let reported = p.pod.ready.is_some();
        if let Some(p) = self.pod_mut(key) {
            p.conditions = next;
        }
        if reported {
            self.report(key);
        }
    }

    /// The pod's resourceVersion in the simulator: it changes with every change of the pod,
    /// and [`NodeSim::patch_pod`] takes it as a precondition.
    pub fn pod_resource_version(&self, namespace: &str, name: &str) -> Option<String> {
        self.pods
            .get(&(namespace.to_string(), name.to_string()))
            .map(|p| p.rv.to_string())
    }

    /// The images present on a node, sorted (empty for an unknown node).
    pub fn node_images(&self, node: &str) -> Vec<String> {
        self.node_images
            .get(node)
            .map(|i| i.iter().cloned().collect())
            .unwrap_or_default()
    }
}

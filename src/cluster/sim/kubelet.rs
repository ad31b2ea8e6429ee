//! The scheduler and kubelet models: binding, start latency, failures, termination.

use super::config::Latency;
use super::{Sim, SimEvent, SimPod};
use crate::cluster::ClusterError;
use crate::model::{Pod, PodPhase, ReadyCondition, Timestamp};
use anyhow::Result;

/// Characters of generated name suffixes (as the API server's generateName uses).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

impl Sim {
    /// A start latency drawn from the configured distribution, in milliseconds.
    fn start_latency(&mut self) -> u64 {
        match self.cfg.kubelet.start_latency {
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
        let images = pod
            .spec
            .iter()
            .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
            .filter_map(|c| c.image.clone())
            .collect();
        let mut model = Pod::from_k8s(&pod);
        model.phase = PodPhase::Pending;
        model.ready = None;
        let mut sim_pod = SimPod {
            pod: model,
            images,
            waiting_for_node: false,
            started: false,
        };
        // The scheduler: bind to the target node when it exists (an unknown node leaves the
        // pod Pending and unbound, as a real scheduler would).
        if let Some(target) = sim_pod.pod.target_node.clone()
            && self.nodes.contains_key(&target)
        {
            sim_pod.pod.node_name = Some(target);
            let at = self.clock().saturating_add(self.start_latency());
            self.schedule(
                at,
                SimEvent::PodStarted {
                    namespace: namespace.clone(),
                    name: name.clone(),
                },
            );
        }
        self.pods.insert((namespace, name.clone()), sim_pod);
        Ok(name)
    }

    /// Graceful deletion: the pod is marked terminating and disappears after the grace period
    /// (at once when it never got bound).
    pub(crate) fn delete(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        let key = (namespace.to_string(), name.to_string());
        let now = self.now();
        let grace = self.cfg.kubelet.termination_grace.millis();
        let Some(p) = self.pods.get_mut(&key) else {
            return Err(ClusterError::NotFound {
                kind: "pod",
                namespace: namespace.into(),
                name: name.into(),
            });
        };
        if p.pod.deletion_timestamp.is_some() {
            return Ok(());
        }
        if p.pod.node_name.is_none() || grace == 0 {
            self.pods.remove(&key);
            return Ok(());
        }
        p.pod.deletion_timestamp = Some(now);
        let at = self.clock().saturating_add(grace);
        self.schedule(
            at,
            SimEvent::PodGone {
                namespace: key.0,
                name: key.1,
            },
        );
        Ok(())
    }

    /// Why pods of `images` on `node` never start, if they do not.
    fn failure(&self, images: &[String], node: &str) -> Option<String> {
        let f = &self.cfg.failures;
        f.nodes
            .iter()
            .find(|n| n.node == node)
            .map(|n| n.reason.clone())
            .or_else(|| {
                f.images
                    .iter()
                    .find(|i| images.contains(&i.image))
                    .map(|i| i.reason.clone())
            })
    }

    /// The kubelet finished starting a pod: Running and Ready, or stuck with a waiting reason.
    pub(crate) fn pod_started(&mut self, namespace: &str, name: &str) {
        let now = self.now();
        let key = (namespace.to_string(), name.to_string());
        let Some(p) = self.pods.get(&key) else { return };
        if p.pod.is_terminating() || p.started {
            return;
        }
        let Some(node_name) = p.pod.node_name.clone() else {
            return;
        };
        let node_ready = self
            .nodes
            .get(&node_name)
            .is_some_and(|n| n.ready != Some(false));
        let failure = self.failure(&p.images, &node_name);
        let p = self.pods.get_mut(&key).expect("present");
        if !node_ready {
            // The kubelet of a NotReady node reports nothing: the pod stays Pending.
            p.waiting_for_node = true;
            return;
        }
        p.waiting_for_node = false;
        match failure {
            Some(reason) => {
                p.pod.phase = if reason.contains("Image") {
                    PodPhase::Pending
                } else {
                    PodPhase::Running
                };
                p.pod.waiting_reason = Some(reason);
                p.pod.ready = Some(ReadyCondition {
                    status: false,
                    last_transition: Some(now),
                });
            }
            None => {
                p.started = true;
                p.pod.phase = PodPhase::Running;
                p.pod.waiting_reason = None;
                p.pod.ready = Some(ReadyCondition {
                    status: true,
                    last_transition: Some(now),
                });
            }
        }
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
        let mut waiting = Vec::new();
        for (key, p) in self.pods.iter_mut() {
            if p.pod.node_name.as_deref() != Some(node) {
                continue;
            }
            if !ready {
                if p.pod.is_ready() {
                    p.pod.ready = Some(ReadyCondition {
                        status: false,
                        last_transition: Some(now),
                    });
                }
            } else if p.started {
                p.pod.ready = Some(ReadyCondition {
                    status: true,
                    last_transition: Some(now),
                });
            } else if p.waiting_for_node {
                waiting.push(key.clone());
            }
        }
        for (namespace, name) in waiting {
            let at = self.clock().saturating_add(self.start_latency());
            self.schedule(at, SimEvent::PodStarted { namespace, name });
        }
    }

    /// Inserts a pod that has been running and ready since `since` (initial state); returns
    /// its name.
    pub(crate) fn insert_running(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
        since: Timestamp,
    ) -> Result<String> {
        let pod_namespace = pod.metadata.namespace.clone();
        let name = self.create(pod).map_err(|e| anyhow::anyhow!("{e}"))?;
        let key = (pod_namespace.unwrap_or_default(), name.clone());
        let p = self.pods.get_mut(&key).expect("just created");
        p.pod.creation_timestamp = Some(since);
        let node = p.pod.node_name.clone().unwrap_or_default();
        let node_ready = self
            .nodes
            .get(&node)
            .is_some_and(|n| n.ready != Some(false));
        let p = self.pods.get_mut(&key).expect("just created");
        p.started = true;
        p.pod.phase = PodPhase::Running;
        p.pod.ready = Some(ReadyCondition {
            status: node_ready,
            last_transition: Some(since),
        });
        // The start the scheduler queued is moot: it already runs.
        Ok(name)
    }
}

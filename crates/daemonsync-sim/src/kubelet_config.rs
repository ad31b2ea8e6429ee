//! What the kubelet does with a pod's references to ConfigMaps and Secrets (upstream
//! `pkg/kubelet/volumemanager` and `kuberuntime`'s `generateContainerConfig`):
//!
//! * a `configMap`, `secret` or projected volume whose object (or one of whose `items`' keys)
//!   is missing, and that is not `optional`, cannot be mounted: the pod stays
//!   `ContainerCreating`, with a `FailedMount` warning
//!   (`MountVolume.SetUp failed for volume "config" : configmap "cfg" not found`);
//! * an `envFrom` or `env[].valueFrom` source that is missing (or a missing key), not
//!   `optional`, keeps its container waiting with reason `CreateContainerConfigError`
//!   (`configmap "cfg" not found`, `couldn't find key level in ConfigMap ns/cfg`).
//!
//! Both go on once the object appears: the kubelet retries mounts and container starts, which
//! the simulator does at the change of ConfigMaps or Secrets (a real kubelet within its
//! back-off). What the kubelet knows of ConfigMaps and Secrets is [`ConfigView`], fed from the
//! API's store ([`crate::api::world::World`]).

use crate::kubelet::PodKey;
use crate::manifest::config::ConfigKind;
use crate::manifest::versioning::ConfigRef;
use crate::nodes::{ContainerState, NodeEvent, NodeSim, SimEvent};
use std::collections::{BTreeMap, BTreeSet};

/// The ConfigMaps and Secrets of the cluster, by kind, namespace and name, with their keys.
pub(crate) type ConfigView = BTreeMap<(ConfigKind, String, String), BTreeSet<String>>;

/// The reason of a container whose config cannot be made.
pub(crate) const CONFIG_ERROR: &str = "CreateContainerConfigError";

impl NodeSim {
    /// Why `r` cannot be resolved in `namespace`, as the kubelet words it; `None` when it can
    /// (or is optional). `volume`: worded for a mount.
    fn unresolved(&self, namespace: &str, r: &ConfigRef) -> Option<String> {
        if r.optional {
            return None;
        }
        let kind = r.kind.as_str();
        let key = (r.kind, namespace.to_string(), r.name.clone());
        let Some(keys) = self.config.get(&key) else {
            return Some(format!("{kind} {:?} not found", r.name));
        };
        let missing = r.keys.iter().find(|k| !keys.contains(*k))?;
        Some(match (&r.volume, r.kind) {
            (Some(_), ConfigKind::ConfigMap) => {
                format!("configmap references non-existent config key: {missing}")
            }
            (Some(_), ConfigKind::Secret) => {
                format!("references non-existent secret key: {missing}")
            }
            (None, _) => format!(
                "couldn't find key {missing} in {} {namespace}/{}",
                r.kind.kind(),
                r.name
            ),
        })
    }

    /// The first volume of the pod that cannot be mounted, with why (a `FailedMount`'s
    /// message).
    pub(crate) fn unmountable(&self, key: &PodKey) -> Option<String> {
        let p = self.pods.get(key)?;
        p.config_refs.iter().find_map(|r| {
            let volume = r.volume.as_ref()?;
            let why = self.unresolved(&key.0, r)?;
            Some(format!(
                "MountVolume.SetUp failed for volume {volume:?} : {why}"
            ))
        })
    }

    /// Why the container `name` (init or not) cannot be given its environment, if it cannot.
    pub(crate) fn container_config_error(
        &self,
        key: &PodKey,
        init: bool,
        name: &str,
    ) -> Option<String> {
        let p = self.pods.get(key)?;
        p.config_refs
            .iter()
            .filter(|r| {
                r.container
                    .as_ref()
                    .is_some_and(|(i, n)| *i == init && n == name)
            })
            .find_map(|r| self.unresolved(&key.0, r))
    }

    /// A volume of the pod cannot be mounted: it is not set up (it stays
    /// `ContainerCreating`), and the kubelet says why, once per reason.
    pub(crate) fn mount_failed(&mut self, key: &PodKey, why: String) {
        let Some(p) = self.pod_mut(key) else { return };
        if p.mount_failure.as_deref() == Some(why.as_str()) {
            return;
        }
        p.mount_failure = Some(why.clone());
        self.outbox.push(NodeEvent::pod(
            key,
            "Warning",
            "FailedMount",
            "kubelet",
            why,
        ));
    }

    /// The ConfigMaps and Secrets changed: pods waiting for them are tried again (mounts,
    /// then the containers that waited with `CreateContainerConfigError`).
    pub(crate) fn set_config(&mut self, view: ConfigView) {
        if view == self.config {
            return;
        }
        self.config = view;
        let waiting: Vec<PodKey> = self
            .pods
            .iter()
            .filter(|(_, p)| !p.pod.is_terminating())
            .filter(|(_, p)| {
                p.mount_failure.is_some()
                    || p.containers
                        .iter()
                        .any(|c| matches!(c.state, ContainerState::ConfigMissing(_)))
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in waiting {
            if self.pods[&key].mount_failure.is_some() {
                self.pod_set_up(&key);
                continue;
            }
            let clock = self.clock();
            let Some(p) = self.pod_mut(&key) else {
                continue;
            };
            let retry: Vec<String> = p
                .containers
                .iter()
                .filter(|c| matches!(c.state, ContainerState::ConfigMissing(_)))
                .map(|c| c.name.clone())
                .collect();
            p.starting.extend(retry);
            let epoch = p.epoch;
            self.schedule(
                clock,
                SimEvent::PodStarted {
                    namespace: key.0.clone(),
                    name: key.1.clone(),
                    epoch,
                },
            );
        }
    }
}

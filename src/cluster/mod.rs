//! Observed cluster state, and the writes that change it.
//!
//! [`Cluster`] is the one interface the executor talks to. It is async and fallible because
//! the live backend (kube-rs, later) is: reads come from watch-driven caches, writes are API
//! calls that can fail, and [`Cluster::wait_for_change`] is where a watch event wakes the
//! executor. [`ClusterSpec`] is a cluster as `--cluster` names it; [`AnyCluster`] the connected
//! backend. Implementations:
//!
//! * [`snapshot`]: a file in the shape `kubectl get nodes,pods,daemonsets -A -o yaml` prints,
//!   read-only, so `plan` can run in CI without cluster credentials ([`SnapshotCluster`]
//!   refuses every write with a clear error).
//! * [`sim`]: an in-memory cluster with a virtual clock, a scheduler and a kubelet model.
//! * [`kube`]: a live cluster through kube-rs (watch-driven caches, API writes, the
//!   `ManagedDaemonSet` record).
//! * [`synthetic`]: deterministic generated fleets of any size, shared by tests and benchmarks.
//!
//! [`version`] picks the one Kubernetes version a plan renders and validates for.

pub mod kube;
pub mod snapshot;
pub mod spec;
pub mod version;

pub use daemonsync_core::cluster::*;
#[cfg(test)]
pub use daemonsync_core::testkit::synthetic;
pub use daemonsync_sim as sim;
pub use snapshot::{
    ItemId, MAX_SNAPSHOT_BYTES, Snapshot, SnapshotError, load_snapshot, observed_from_documents,
};
pub use spec::{AnyCluster, ClusterSpec};
pub use version::TargetVersion;

use crate::model::Timestamp;
use crate::plan::Observed;

/// A snapshot as a cluster: reads only; every write is refused.
#[derive(Debug, Clone)]
pub struct SnapshotCluster {
    observed: Observed,
    now: Timestamp,
}

impl SnapshotCluster {
    /// A read-only cluster showing `observed` at instant `now`.
    pub fn new(observed: Observed, now: Timestamp) -> Self {
        SnapshotCluster { observed, now }
    }

    fn refuse<T>(what: String) -> Result<T, ClusterError> {
        Err(ClusterError::ReadOnly {
            backend: "snapshot",
            what,
        })
    }
}

impl Cluster for SnapshotCluster {
    async fn observe(&mut self) -> Result<ClusterState, ClusterError> {
        Ok(ClusterState {
            observed: self.observed.clone(),
            records: Vec::new(),
            config_copies: Vec::new(),
            now: self.now,
        })
    }

    async fn create_config_copy(
        &mut self,
        copy: &crate::manifest::config::ConfigCopy,
        _owner: &crate::plan::render::PodOwner,
    ) -> Result<(), ClusterError> {
        Self::refuse(format!(
            "create {} {}/{}",
            copy.kind, copy.namespace, copy.name
        ))
    }

    async fn delete_config_copy(&mut self, copy: &ObservedCopy) -> Result<(), ClusterError> {
        Self::refuse(format!(
            "delete {} {}/{}",
            copy.kind, copy.namespace, copy.name
        ))
    }

    async fn create_pod(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
    ) -> Result<String, ClusterError> {
        let name = pod.metadata.generate_name.or(pod.metadata.name);
        Self::refuse(format!("create pod {}", name.unwrap_or_default()))
    }

    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        Self::refuse(format!("delete pod {namespace}/{name}"))
    }

    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        _status: &RecordStatus,
    ) -> Result<(), ClusterError> {
        Self::refuse(format!("write status of {namespace}/{name}"))
    }

    async fn emit_event(&mut self, event: Event) -> Result<(), ClusterError> {
        Self::refuse(format!("event {} on {}", event.reason, event.name))
    }

    async fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        _patch: &ImagePatch,
    ) -> Result<(), ClusterError> {
        Self::refuse(format!("update pod {namespace}/{name} in place"))
    }

    async fn set_pod_condition(
        &mut self,
        namespace: &str,
        name: &str,
        condition: &str,
        _status: bool,
        _resource_version: Option<&str>,
    ) -> Result<String, ClusterError> {
        Self::refuse(format!("set {condition} on pod {namespace}/{name}"))
    }

    async fn patch_pod_metadata(
        &mut self,
        namespace: &str,
        name: &str,
        _patch: &MetadataPatch,
    ) -> Result<(), ClusterError> {
        Self::refuse(format!("patch pod {namespace}/{name}"))
    }

    async fn delete_daemonset(
        &mut self,
        namespace: &str,
        name: &str,
        _uid: &str,
    ) -> Result<(), ClusterError> {
        Self::refuse(format!("delete DaemonSet {namespace}/{name}"))
    }

    async fn apply_daemonset(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
    ) -> Result<(), ClusterError> {
        Self::refuse(format!(
            "apply DaemonSet {}",
            daemonset.metadata.name.as_deref().unwrap_or_default()
        ))
    }

    async fn delete_record(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        Self::refuse(format!("delete the record of {namespace}/{name}"))
    }

    async fn annotate_record(
        &mut self,
        namespace: &str,
        name: &str,
        _annotations: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<(), ClusterError> {
        Self::refuse(format!("annotate the record of {namespace}/{name}"))
    }

    async fn remove_node_taint(
        &mut self,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
    ) -> Result<bool, ClusterError> {
        Self::refuse(format!(
            "remove taint {key}:{} from node {node}",
            effect.as_str()
        ))
    }

    async fn wait_for_change(&mut self, _deadline: Timestamp) -> Result<bool, ClusterError> {
        // A snapshot never changes.
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_refuses_to_remove_a_taint_and_says_what_instead() {
        let mut snapshot = SnapshotCluster::new(Observed::default(), Timestamp::now());
        let err = crate::block_on(snapshot.remove_node_taint(
            "new-1",
            "example.com/agent-not-ready",
            crate::model::TaintEffect::NoSchedule,
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("remove taint example.com/agent-not-ready:NoSchedule from node new-1")
                && err.contains("--dry-run"),
            "{err}"
        );
    }
}

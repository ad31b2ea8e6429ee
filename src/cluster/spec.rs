//! Which cluster a command talks to, as `--cluster` names it, and the connected backend.

use super::kube::{KubeCluster, KubeOptions};
use super::sim::Sim;
use super::snapshot::load_snapshot;
use super::{
    Cluster, ClusterError, ClusterState, Event, ImagePatch, MetadataPatch, RecordSource,
    RecordStatus, SnapshotCluster,
};
use crate::model::{KubeVersion, Timestamp};
use crate::plan::Observed;
use anyhow::{Result, bail};
use k8s_openapi::api::apps::v1::DaemonSet;
use std::fmt;
use std::path::PathBuf;

/// Why a command that reads or writes a cluster refuses `--cluster none`.
const NO_CLUSTER: &str = "--cluster none has no cluster state: only `plan` accepts it (a \
                          manifest-only plan); name a cluster with --cluster snapshot:FILE or \
                          --cluster sim:FILE";

/// A cluster named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterSpec {
    /// `snapshot:FILE`: the output of `kubectl get nodes,pods,daemonsets -A -o yaml`, read-only.
    Snapshot(PathBuf),
    /// `sim:FILE`: a simulated cluster at its start (docs/sim.md), with a virtual clock.
    Sim(PathBuf),
    /// `kube` (the current kubeconfig context, or the in-cluster config) or `kube:CONTEXT`:
    /// a live cluster through kube-rs. The default.
    Kube(Option<String>),
    /// `none`: no cluster. `plan` shows the manifests alone (diff, validation and the risks
    /// visible in them) without per-node state; commands that need a cluster refuse it.
    None,
}

impl std::str::FromStr for ClusterSpec {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => return Ok(ClusterSpec::None),
            "kube" => return Ok(ClusterSpec::Kube(None)),
            _ => {}
        }
        match s.split_once(':') {
            Some(("kube", context)) if !context.is_empty() => {
                Ok(ClusterSpec::Kube(Some(context.into())))
            }
            Some(("snapshot", path)) if !path.is_empty() => Ok(ClusterSpec::Snapshot(path.into())),
            Some(("sim", path)) if !path.is_empty() => Ok(ClusterSpec::Sim(path.into())),
            _ => bail!(
                "unsupported cluster {s:?}: use kube (the current kubeconfig context) or \
                 kube:CONTEXT for a live cluster, snapshot:FILE, where FILE is the output of \
                 `kubectl get nodes,pods,daemonsets -A -o yaml`, sim:FILE for a simulated \
                 cluster (docs/sim.md), or none to plan the manifests alone"
            ),
        }
    }
}

impl fmt::Display for ClusterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterSpec::Snapshot(p) => write!(f, "snapshot:{}", p.display()),
            ClusterSpec::Sim(p) => write!(f, "sim:{}", p.display()),
            ClusterSpec::Kube(None) => f.write_str("kube"),
            ClusterSpec::Kube(Some(context)) => write!(f, "kube:{context}"),
            ClusterSpec::None => f.write_str("none"),
        }
    }
}

impl ClusterSpec {
    /// The observed state and the DaemonSets the cluster's records say daemonsync manages
    /// (a live cluster's; none for a snapshot or sim), for `status`.
    pub async fn observe_with_managed(&self) -> Result<(Observed, Vec<DaemonSet>)> {
        let ClusterSpec::Kube(context) = self else {
            return Ok((self.observe().await?, Vec::new()));
        };
        let mut live = KubeCluster::connect(Self::look_options(context)).await?;
        let observed = live.observe().await?.observed;
        Ok((observed, live.managed_daemonsets()))
    }

    /// A one-off look at a live cluster: the pods of every live DaemonSet are watched too, so
    /// a DaemonSet being adopted shows its nodes.
    fn look_options(context: &Option<String>) -> KubeOptions {
        KubeOptions {
            context: context.clone(),
            all_daemonset_pods: true,
            ..KubeOptions::default()
        }
    }

    /// Reads the observed state once, for commands that only look (`plan`, `status`, `render`,
    /// `snapshot`). A sim shows its state at the start.
    pub async fn observe(&self) -> Result<Observed> {
        match self {
            ClusterSpec::Snapshot(path) => Ok(load_snapshot(path)?),
            ClusterSpec::Sim(path) => Ok(Sim::load(path)?.observed()),
            ClusterSpec::Kube(context) => {
                let mut live = KubeCluster::connect(Self::look_options(context)).await?;
                Ok(live.observe().await.map(|s| s.observed)?)
            }
            ClusterSpec::None => bail!("{NO_CLUSTER}"),
        }
    }

    /// The Kubernetes version of the cluster, without observing it whole, for commands that
    /// render before they connect (`apply`, `sync`): a live cluster's `GET /version`, a sim
    /// file's `version:` (1.35.0 when it names none), what a snapshot records; `None` for
    /// `none` or a snapshot that says nothing.
    pub async fn version(&self) -> Result<Option<KubeVersion>> {
        match self {
            ClusterSpec::Snapshot(path) => Ok(load_snapshot(path)?.version),
            // The sim file alone, not the fleet it describes.
            ClusterSpec::Sim(path) => Ok(Some(
                crate::cluster::sim::config::SimConfig::load(path)?
                    .version
                    .unwrap_or(crate::cluster::sim::config::DEFAULT_KUBE_VERSION),
            )),
            ClusterSpec::Kube(context) => {
                Ok(super::kube::server_version(context.as_deref()).await?)
            }
            ClusterSpec::None => Ok(None),
        }
    }

    /// The observed state, or `None` for `--cluster none` (a manifest-only plan).
    pub async fn observe_if_any(&self) -> Result<Option<Observed>> {
        match self {
            ClusterSpec::None => Ok(None),
            other => other.observe().await.map(Some),
        }
    }

    /// Connects to the cluster for commands that write (`apply`). `now` is the instant a
    /// snapshot is judged at; a sim keeps its own clock. `adopt` names the DaemonSets
    /// (namespace, label selector) whose pods a live backend watches besides the managed ones.
    pub async fn connect(
        &self,
        now: Timestamp,
        adopt: Vec<(String, String)>,
    ) -> Result<AnyCluster> {
        match self {
            ClusterSpec::Snapshot(path) => Ok(AnyCluster::Snapshot(SnapshotCluster::new(
                load_snapshot(path)?,
                now,
            ))),
            ClusterSpec::Sim(path) => Ok(AnyCluster::Sim(Box::new(Sim::load(path)?))),
            ClusterSpec::Kube(context) => {
                let options = KubeOptions {
                    context: context.clone(),
                    adopt,
                    ..KubeOptions::default()
                };
                Ok(AnyCluster::Kube(Box::new(
                    KubeCluster::connect(options).await?,
                )))
            }
            ClusterSpec::None => bail!("{NO_CLUSTER}"),
        }
    }
}

/// A connected cluster of any backend.
#[derive(Debug)]
pub enum AnyCluster {
    /// A read-only snapshot: every write is refused.
    Snapshot(SnapshotCluster),
    /// The simulated cluster.
    Sim(Box<Sim>),
    /// A live cluster.
    Kube(Box<KubeCluster>),
}

impl AnyCluster {
    /// True when the cluster refuses writes.
    pub fn is_read_only(&self) -> bool {
        matches!(self, AnyCluster::Snapshot(_))
    }

    /// True when time is simulated (durations are virtual).
    pub fn is_simulated(&self) -> bool {
        matches!(self, AnyCluster::Sim(_))
    }
}

/// Forwards a [`Cluster`] method to the backend.
macro_rules! forward {
    ($self:ident, $c:ident => $call:expr) => {
        match $self {
            AnyCluster::Snapshot($c) => $call.await,
            AnyCluster::Sim($c) => $call.await,
            AnyCluster::Kube($c) => $call.await,
        }
    };
}

impl Cluster for AnyCluster {
    async fn observe(&mut self) -> Result<ClusterState, ClusterError> {
        forward!(self, c => c.observe())
    }

    async fn create_pod(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
    ) -> Result<String, ClusterError> {
        forward!(self, c => c.create_pod(pod))
    }

    async fn create_pods(
        &mut self,
        pods: Vec<k8s_openapi::api::core::v1::Pod>,
    ) -> Vec<Result<String, ClusterError>> {
        forward!(self, c => c.create_pods(pods))
    }

    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        forward!(self, c => c.delete_pod(namespace, name))
    }

    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &RecordStatus,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.write_status(namespace, name, status))
    }

    async fn write_statuses(
        &mut self,
        statuses: Vec<(String, String, RecordStatus)>,
    ) -> Vec<Result<(), ClusterError>> {
        forward!(self, c => c.write_statuses(statuses))
    }

    async fn ensure_record(
        &mut self,
        daemonset: &k8s_openapi::api::apps::v1::DaemonSet,
        source: &RecordSource,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.ensure_record(daemonset, source))
    }

    async fn emit_event(&mut self, event: Event) -> Result<(), ClusterError> {
        forward!(self, c => c.emit_event(event))
    }

    async fn patch_pod_images(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &ImagePatch,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.patch_pod_images(namespace, name, patch))
    }

    async fn set_pod_condition(
        &mut self,
        namespace: &str,
        name: &str,
        condition: &str,
        status: bool,
        resource_version: Option<&str>,
    ) -> Result<String, ClusterError> {
        forward!(self, c => c.set_pod_condition(namespace, name, condition, status, resource_version))
    }

    async fn patch_pod_metadata(
        &mut self,
        namespace: &str,
        name: &str,
        patch: &MetadataPatch,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.patch_pod_metadata(namespace, name, patch))
    }

    async fn delete_daemonset(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.delete_daemonset(namespace, name, uid))
    }

    async fn apply_daemonset(&mut self, daemonset: &DaemonSet) -> Result<(), ClusterError> {
        forward!(self, c => c.apply_daemonset(daemonset))
    }

    async fn delete_record(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        forward!(self, c => c.delete_record(namespace, name))
    }

    async fn create_config_copy(
        &mut self,
        copy: &crate::manifest::config::ConfigCopy,
        owner: &crate::plan::render::PodOwner,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.create_config_copy(copy, owner))
    }

    async fn delete_config_copy(
        &mut self,
        copy: &crate::cluster::ObservedCopy,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.delete_config_copy(copy))
    }

    async fn annotate_record(
        &mut self,
        namespace: &str,
        name: &str,
        annotations: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.annotate_record(namespace, name, annotations))
    }

    async fn remove_node_taint(
        &mut self,
        node: &str,
        key: &str,
        effect: crate::model::TaintEffect,
    ) -> Result<bool, ClusterError> {
        forward!(self, c => c.remove_node_taint(node, key, effect))
    }

    async fn wait_for_change(&mut self, deadline: Timestamp) -> Result<bool, ClusterError> {
        forward!(self, c => c.wait_for_change(deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_specs_parse_and_print_back() {
        for s in [
            "snapshot:a/b.yaml",
            "sim:examples/sim/demo.yaml",
            "none",
            "kube",
            "kube:prod-eu",
        ] {
            let spec: ClusterSpec = s.parse().expect(s);
            assert_eq!(spec.to_string(), s);
        }
        for bad in [
            "",
            "snapshot:",
            "sim:",
            "kind:x",
            "kube:",
            "cluster.yaml",
            "None",
            "none:x",
        ] {
            let err = bad.parse::<ClusterSpec>().unwrap_err().to_string();
            assert!(
                err.contains("snapshot:FILE")
                    && err.contains("sim:FILE")
                    && err.contains("kube:CONTEXT")
                    && err.contains("none"),
                "{err}"
            );
        }
    }

    #[test]
    fn none_plans_but_never_reads_or_writes_a_cluster() {
        let none = ClusterSpec::None;
        assert!(crate::block_on(none.observe_if_any()).unwrap().is_none());
        let err = crate::block_on(none.observe()).unwrap_err().to_string();
        assert!(err.contains("only `plan` accepts it"), "{err}");
        let err = crate::block_on(none.connect(Timestamp::now(), Vec::new()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--cluster snapshot:FILE"), "{err}");
    }
}

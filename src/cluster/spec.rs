//! Which cluster a command talks to, as `--cluster` names it, and the connected backend.

use super::sim::Sim;
use super::snapshot::load_snapshot;
use super::{Cluster, ClusterError, ClusterState, Event, SnapshotCluster};
use crate::model::Timestamp;
use crate::plan::{Observed, Status};
use anyhow::{Result, bail};
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
    /// `none`: no cluster. `plan` shows the manifests alone (diff, validation and the risks
    /// visible in them) without per-node state; commands that need a cluster refuse it.
    None,
}

impl std::str::FromStr for ClusterSpec {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        if s == "none" {
            return Ok(ClusterSpec::None);
        }
        match s.split_once(':') {
            Some(("snapshot", path)) if !path.is_empty() => Ok(ClusterSpec::Snapshot(path.into())),
            Some(("sim", path)) if !path.is_empty() => Ok(ClusterSpec::Sim(path.into())),
            _ => bail!(
                "unsupported cluster {s:?}: use snapshot:FILE, where FILE is the output of \
                 `kubectl get nodes,pods,daemonsets -A -o yaml`, or sim:FILE for a simulated \
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
            ClusterSpec::None => f.write_str("none"),
        }
    }
}

impl ClusterSpec {
    /// Reads the observed state once, for commands that only look (`plan`, `status`, `render`,
    /// `snapshot`). A sim shows its state at the start.
    pub fn observe(&self) -> Result<Observed> {
        match self {
            ClusterSpec::Snapshot(path) => Ok(load_snapshot(path)?),
            ClusterSpec::Sim(path) => Ok(Sim::load(path)?.observed()),
            ClusterSpec::None => bail!("{NO_CLUSTER}"),
        }
    }

    /// The observed state, or `None` for `--cluster none` (a manifest-only plan).
    pub fn observe_if_any(&self) -> Result<Option<Observed>> {
        match self {
            ClusterSpec::None => Ok(None),
            other => other.observe().map(Some),
        }
    }

    /// Connects to the cluster for commands that write (`apply`). `now` is the instant a
    /// snapshot is judged at; a sim keeps its own clock.
    pub async fn connect(&self, now: Timestamp) -> Result<AnyCluster> {
        match self {
            ClusterSpec::Snapshot(path) => Ok(AnyCluster::Snapshot(SnapshotCluster::new(
                load_snapshot(path)?,
                now,
            ))),
            ClusterSpec::Sim(path) => Ok(AnyCluster::Sim(Box::new(Sim::load(path)?))),
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

    async fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<(), ClusterError> {
        forward!(self, c => c.delete_pod(namespace, name))
    }

    async fn write_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: &Status,
    ) -> Result<(), ClusterError> {
        forward!(self, c => c.write_status(namespace, name, status))
    }

    async fn emit_event(&mut self, event: Event) -> Result<(), ClusterError> {
        forward!(self, c => c.emit_event(event))
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
        for s in ["snapshot:a/b.yaml", "sim:examples/sim/demo.yaml", "none"] {
            let spec: ClusterSpec = s.parse().expect(s);
            assert_eq!(spec.to_string(), s);
        }
        for bad in [
            "",
            "snapshot:",
            "sim:",
            "kind:x",
            "cluster.yaml",
            "None",
            "none:x",
        ] {
            let err = bad.parse::<ClusterSpec>().unwrap_err().to_string();
            assert!(
                err.contains("snapshot:FILE") && err.contains("sim:FILE") && err.contains("none"),
                "{err}"
            );
        }
    }

    #[test]
    fn none_plans_but_never_reads_or_writes_a_cluster() {
        let none = ClusterSpec::None;
        assert!(none.observe_if_any().unwrap().is_none());
        let err = none.observe().unwrap_err().to_string();
        assert!(err.contains("only `plan` accepts it"), "{err}");
        let err = crate::apply::block_on(none.connect(Timestamp::now()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--cluster snapshot:FILE"), "{err}");
    }
}

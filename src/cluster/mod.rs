//! Observed cluster state: where the planner's [`Observed`](crate::plan::Observed) comes from.
//!
//! * [`snapshot`]: a file in the shape `kubectl get nodes,pods,daemonsets -A -o yaml` prints,
//!   read-only, so `plan` can run in CI without cluster credentials.
//! * [`synthetic`]: deterministic generated fleets of any size, shared by tests and benchmarks.

pub mod snapshot;
pub mod synthetic;

pub use snapshot::{
    ItemId, MAX_SNAPSHOT_BYTES, Snapshot, SnapshotError, load_snapshot, observed_from_documents,
};

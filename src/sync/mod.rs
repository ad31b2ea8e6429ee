//! `daemonsync sync`: the long-running GitOps daemon.
//!
//! It keeps a cluster converged on a git branch (or a watched directory): every trigger (a
//! poll, a webhook, a file change, a watch event on nodes or managed pods) re-plans from
//! observed state and executes the next step through the same executor as `apply`.
//!
//! * [`http`]: the one HTTP listener (`/healthz`, `/readyz`, `/metrics`, `/webhook`).
//! * [`metrics`]: the Prometheus series.
//! * [`leader`]: leader election through a `coordination.k8s.io` Lease.
//! * [`source`]: the source followed DaemonSet by DaemonSet.
//! * [`daemon`]: the event loop.

pub mod daemon;
pub mod http;
pub mod leader;
pub mod metrics;
pub mod source;

pub use daemon::{Reconcile, SyncOptions, run};

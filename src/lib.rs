//! daemonsync: GitOps for Kubernetes DaemonSets, node by node.
//!
//! Module map (data flows top to bottom; ARCHITECTURE.md draws it):
//!
//! * [`model`]: the small internal types the planner works on (nodes, pods, label selectors,
//!   taints, tolerations, node affinity, quantities), converted from Kubernetes objects.
//! * [`manifest`]: read multi-document YAML / JSON / `kind: List` files into `apps/v1`
//!   DaemonSets, apply the API server's defaulting and validation, keep other kinds aside.
//! * [`plan`]: the pure planner. Eligibility, pod rendering, pod ownership beside the built-in
//!   controller, the per-node decisions, the rolling update (maxUnavailable and maxSurge),
//!   progressive and in-place decisions, status counters, the next reconcile step, the
//!   projected waves and risks. No I/O, no clock.
//! * [`source`]: where manifests come from: a local directory or a git repository at a ref
//!   (mirrored, fetched, read from the commit's tree), with confinement and limits.
//! * [`cluster`]: where observed state comes from and writes go: the `Cluster` trait and its
//!   backends: the live cluster (`cluster::kube`, kube-rs), a read-only snapshot file, and the
//!   simulated cluster (`cluster::sim`, in-process or served over HTTP by `sim serve`).
//! * [`apply`]: the executor: applies the planner's steps to a cluster until converged, hands
//!   DaemonSets over with the built-in controller, keeps one writer per DaemonSet.
//! * [`sync`]: the long-running daemon: follows the source, reconciles on every change, serves
//!   health, metrics and the webhook, elects a leader.
//! * [`report`]: renderings of a [`plan::Plan`] (table, JSON, Markdown).
//! * [`github`]: GitHub Actions: the job summary, step outputs and the sticky pull-request
//!   comment of `plan --github`.
//! * [`cli`]: the command line, reachable from tests through the library; `main` builds the
//!   one tokio runtime every command runs on.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod apply;
pub mod cli;
pub mod cluster;
pub mod github;
pub use daemonsync_core::{manifest, model, plan};
#[cfg(test)]
mod manifest_tests;
pub mod report;
pub mod source;
pub mod sync;

/// Runs a future on a current-thread runtime of its own: for tests (the product runs on the
/// one runtime `main` builds).
#[cfg(test)]
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a test runtime")
        .block_on(fut)
}

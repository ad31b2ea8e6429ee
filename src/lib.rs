//! daemonsync: GitOps for Kubernetes DaemonSets, node by node.
//!
//! Module map (data flows top to bottom):
//!
//! * [`manifest`]: read multi-document YAML / JSON / `kind: List` files into `apps/v1`
//!   DaemonSets, apply the API server's defaulting and validation, keep other kinds aside.
//! * [`model`]: the small internal types the planner works on (nodes, pods, label selectors,
//!   taints, tolerations, node affinity), converted from Kubernetes objects.
//! * [`plan`]: the pure planner. Eligibility, pod rendering, pod ownership, the per-node
//!   decisions, the rolling update (maxUnavailable and maxSurge), status counters, the next
//!   reconcile step and the projected waves. No I/O, no clock.
//! * [`source`]: where manifests come from: a local directory or a git repository at a ref
//!   (mirrored, fetched, read from the commit's tree), with confinement and limits.
//! * [`cluster`]: where observed state comes from and writes go: one trait, a read-only
//!   snapshot file and a simulated cluster with a virtual clock.
//! * [`report`]: renderings of a [`plan::Plan`] (table, JSON).
//! * [`apply`]: the executor: applies the planner's steps to a cluster until converged.
//! * [`github`]: GitHub Actions: the job summary, step outputs and the sticky pull-request
//!   comment of `plan --github`.
//! * [`cli`]: the command line, reachable from tests through the library.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod apply;
pub mod cli;
pub mod cluster;
pub mod github;
pub mod manifest;
pub mod model;
pub mod plan;
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

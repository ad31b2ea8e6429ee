//! daemonsync's core: what a DaemonSet is, what the cluster shows, and what to do about it —
//! without I/O.
//!
//! * [`model`]: the small types the planner works on (nodes, pods, label selectors, taints,
//!   tolerations, node affinity, quantities), converted from Kubernetes objects.
//! * [`manifest`]: read multi-document YAML / JSON / `kind: List` text into `apps/v1`
//!   DaemonSets, apply the API server's defaulting and validation, keep other kinds aside.
//! * [`plan`]: the planner. Eligibility, pod rendering, ownership beside the built-in
//!   controller, the per-node decisions, the rolling update, progressive and in-place
//!   decisions, status counters, the next step, the projected waves and risks. No I/O, no
//!   clock.
//! * [`cluster`]: the `Cluster` trait every backend implements and the values it reads and
//!   writes (records, statuses, events, patches).
//! * [`record`]: the `ManagedDaemonSet` custom resource, daemonsync's record of a DaemonSet.
//! * `testkit` (feature `testkit`): builders of DaemonSets, nodes, pods, plans and synthetic
//!   fleets for tests, benchmarks and fuzzing.
//!
//! Its dependency tree holds no async runtime, HTTP stack, Kubernetes client or git library
//! (a test runs `cargo tree` to hold it).
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod cluster;
pub mod manifest;
pub mod model;
pub mod plan;
pub mod record;
#[cfg(any(test, feature = "testkit"))]
#[allow(missing_docs)]
pub mod testkit;

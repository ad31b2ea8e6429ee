//! Renderings of a [`Plan`](crate::plan::Plan).
//!
//! * [`json`]: the machine-readable form, a documented and versioned schema
//!   (`docs/plan-json.md`, `docs/plan.schema.json`).
//! * [`diff`]: normalised unified diffs of DaemonSet manifests (pull-request mode).
//! * [`table`]: the terminal form for people, in the style of `kubectl get`.

pub mod diff;
pub mod json;
pub mod table;
#[cfg(test)]
mod testing;

pub use json::to_json;
pub use table::{TableOptions, to_table};

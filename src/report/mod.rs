//! Renderings of a [`Plan`](crate::plan::Plan).
//!
//! * [`json`]: the machine-readable form, a documented and versioned schema
//!   (`docs/plan-json.md`, `docs/plan.schema.json`).
//! * [`diff`]: normalised unified diffs of DaemonSet manifests (pull-request mode).
//! * [`markdown`]: the pull-request comment, split below GitHub's comment limit.
//! * [`table`]: the terminal form for people, in the style of `kubectl get`.

pub mod diff;
pub mod json;
pub mod markdown;
#[cfg(test)]
mod snapshots;
pub mod table;
#[cfg(test)]
pub(crate) mod testing;

pub use json::to_json;
pub use markdown::{MarkdownContext, to_markdown};
pub use table::{TableOptions, to_table};

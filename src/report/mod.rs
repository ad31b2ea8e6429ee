//! Renderings of a [`Plan`](crate::plan::Plan).
//!
//! * [`counts`]: the headline numbers (DaemonSets changed, nodes affected, risks) that the
//!   Markdown report and the GitHub outputs share.
//! * [`json`]: the machine-readable form, a documented and versioned schema
//!   (`docs/plan-json.md`, `docs/plan.schema.json`).
//! * [`diff`]: normalised unified diffs of DaemonSet manifests (pull-request mode).
//! * [`markdown`]: the pull-request comment, split below GitHub's comment limit.
//! * [`table`]: the terminal form for people, in the style of `kubectl get`.
//! * `phrases`: the wording the table and the Markdown report share.

pub mod apply;
pub mod counts;
pub mod diff;
pub mod json;
pub mod markdown;
pub(crate) mod phrases;
#[cfg(test)]
mod snapshots;
pub mod table;
#[cfg(test)]
pub(crate) use daemonsync_core::testkit::fixtures as testing;

pub use counts::{Counts, Diffs};
pub use json::to_json;
pub use markdown::{MarkdownContext, to_markdown, to_summary};
pub use table::{TableOptions, to_table};

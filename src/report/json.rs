//! The plan as JSON: `apiVersion: daemonsync.io/v1alpha1`, `kind: Plan`.
//!
//! The schema is documented in `docs/plan-json.md` and described by `docs/plan.schema.json`;
//! a test checks that real plans conform to it.

use crate::plan::Plan;

/// The plan as pretty-printed JSON with a trailing newline. The same plan always gives the
/// same bytes: fields appear in a fixed order and every list is sorted by the planner.
pub fn to_json(plan: &Plan) -> String {
    let mut out = serde_json::to_string_pretty(plan)
        .expect("a plan has only string keys and finite numbers, so it always serializes");
    out.push('\n');
    out
}

//! The wording the renderers share: the table (`table`) and the pull-request comment
//! (`markdown`) say the same things about a plan in their own layout, so the sentences they
//! have in common are written here once. A renderer keeps only what is its own format (its
//! layout, quoting and escaping, and the phrases it words differently on purpose).

use crate::plan::DaemonSetPlan;

/// `1 node`, `3 nodes`: a number and a noun with a regular plural.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A DaemonSet's warnings less those that only repeat one of its errors (the planner also
/// warns that nothing is done until they are fixed): the errors are shown on their own.
pub(crate) fn warnings_beside_errors(ds: &DaemonSetPlan) -> impl Iterator<Item = &String> {
    ds.warnings
        .iter()
        .filter(|w| !ds.errors.iter().any(|e| w.contains(e.as_str())))
}

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

/// Who runs a DaemonSet's pods beside the built-in controller, and the handover that comes
/// before its rollout, when there is something to say.
pub(crate) fn ownership_text(o: &crate::plan::Ownership) -> Option<String> {
    use crate::plan::{Handover, Mode};
    let kept = |o: &crate::plan::Ownership| {
        format!(
            "{} kept (their template is git's: no restart), {} replaced within the budgets",
            o.kept, o.replaced
        )
    };
    match (&o.handover, o.mode) {
        (Handover::TakeOver { .. }, _) => Some(format!(
            "take over from the built-in controller: the apps/v1 DaemonSet {} is deleted with \
             orphan propagation and its pods are claimed: {}",
            o.builtin.as_deref().unwrap_or_default(),
            kept(o)
        )),
        (Handover::Claim { pods }, _) => Some(format!(
            "{} pod(s) without a controller are claimed by the record: {}",
            pods.len(),
            kept(o)
        )),
        (Handover::Release, _) => Some(
            "going native: daemonsync's pods are handed to the built-in controller first (no \
             restart)"
                .to_string(),
        ),
        (_, Mode::Native) if o.builtin_rollout => Some(
            "native: the built-in controller rolls it out with its own RollingUpdate (the \
             only way to surge); daemonsync reports it"
                .to_string(),
        ),
        (_, Mode::Native) => Some(
            "native: an apps/v1 DaemonSet under OnDelete; daemonsync deletes old pods in its \
             order and the built-in controller creates the new ones"
                .to_string(),
        ),
        _ => None,
    }
}

/// Where pulling a DaemonSet's new images ahead of the rollout stands: `agent:2, 10 nodes
/// at a time: 10 pulling, 30 waiting, 0 with the images`, and the failures.
pub(crate) fn pre_pull_text(pp: &crate::plan::PrePullPlan) -> String {
    let mut text = format!(
        "{}, {} at a time: {} pulling, {} waiting, {} with the images",
        pp.images.join(", "),
        count(pp.parallelism, "node"),
        pp.pulling.len(),
        pp.waiting,
        pp.pulled
    );
    if let Some(f) = pp.failed.first() {
        text.push_str(&format!(
            "; FAILED on {} ({} on node {}): the rollout halts before any daemon pod is touched",
            count(pp.failed.len(), "node"),
            f.reason,
            f.node
        ));
    }
    text
}

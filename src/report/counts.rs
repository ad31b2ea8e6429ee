//! The headline numbers of a plan, shared by the Markdown report and the GitHub outputs so
//! that the comment and `steps.<id>.outputs` never disagree.

use super::diff::{ManifestChange, change_of};
use crate::plan::{DaemonSetPlan, NodeState, Plan};
use std::collections::{BTreeMap, BTreeSet};

/// Manifest diffs by (namespace, name), as pull-request mode computes them.
pub type Diffs = BTreeMap<(String, String), String>;

/// How many nodes gain, lose or restart a pod of one DaemonSet over the whole rollout.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Impact {
    /// Nodes that get a pod they lack.
    pub gain: usize,
    /// Nodes whose pod is deleted without replacement.
    pub lose: usize,
    /// Nodes whose pod is replaced (a rolling update, or a failed pod).
    pub restart: usize,
}

impl Impact {
    /// The impact of one DaemonSet's plan.
    pub fn of(ds: &DaemonSetPlan) -> Impact {
        let mut i = Impact::default();
        for n in ds.nodes.iter() {
            match affects(ds, n.state) {
                Some(Effect::Gain) => i.gain += 1,
                Some(Effect::Lose) => i.lose += 1,
                Some(Effect::Restart) => i.restart += 1,
                None => {}
            }
        }
        i
    }
}

enum Effect {
    Gain,
    Lose,
    Restart,
}

/// What the rollout does to a node in `state`; `None` when it leaves the node alone.
fn affects(ds: &DaemonSetPlan, state: NodeState) -> Option<Effect> {
    let rolling = ds.strategy.type_ == "RollingUpdate";
    match state {
        NodeState::Missing => Some(Effect::Gain),
        NodeState::Misscheduled => Some(Effect::Lose),
        NodeState::OutOfDate if rolling => Some(Effect::Restart),
        NodeState::Failed => Some(Effect::Restart),
        _ => None,
    }
}

/// True when the DaemonSet's pods change: a next step, or waves still to go.
pub fn rolls(ds: &DaemonSetPlan) -> bool {
    !ds.step.is_empty() || !ds.waves.is_empty()
}

/// True when the DaemonSet changes: its manifest differs between base and head, or its pods
/// change.
pub fn changed(ds: &DaemonSetPlan, diffs: &Diffs) -> bool {
    rolls(ds) || diff_of(ds, diffs).is_some()
}

/// The manifest diff of a DaemonSet of the plan, when it has a non-empty one.
pub fn diff_of<'a>(ds: &DaemonSetPlan, diffs: &'a Diffs) -> Option<&'a str> {
    diffs
        .get(&(ds.namespace.clone(), ds.name.clone()))
        .map(String::as_str)
        .filter(|d| !d.trim().is_empty())
}

/// DaemonSets removed on head: a diff that deletes the whole manifest. They are not in the
/// head plan; their pods are left running (daemonsync does not prune).
pub fn removed(diffs: &Diffs) -> Vec<(&(String, String), &str)> {
    diffs
        .iter()
        .filter(|(_, d)| change_of(d) == ManifestChange::Removed)
        .map(|(k, d)| (k, d.as_str()))
        .collect()
}

/// The headline numbers of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// DaemonSets on either side: planned ones and ones removed on head.
    pub daemonsets: usize,
    /// DaemonSets added, removed or changed in the manifests, or whose pods change.
    pub changed: usize,
    /// Of those, removed on head.
    pub removed: usize,
    /// Nodes that gain, lose or restart a pod, summed over DaemonSets.
    pub impact: Impact,
    /// Distinct nodes where any DaemonSet's pod is created, deleted or replaced; `None` for a
    /// manifest-only plan, which knows no nodes.
    pub nodes_affected: Option<usize>,
    /// Risks of all DaemonSets.
    pub risks: usize,
}

impl Counts {
    /// Counts `plan` with the manifest `diffs` of pull-request mode (empty otherwise).
    pub fn of(plan: &Plan, diffs: &Diffs) -> Counts {
        let removed = removed(diffs).len();
        let mut impact = Impact::default();
        let mut nodes = BTreeSet::new();
        for ds in &plan.daemonsets {
            let i = Impact::of(ds);
            impact.gain += i.gain;
            impact.lose += i.lose;
            impact.restart += i.restart;
            nodes.extend(
                ds.nodes
                    .iter()
                    .filter(|n| affects(ds, n.state).is_some())
                    .map(|n| &*n.node),
            );
        }
        Counts {
            daemonsets: plan.daemonsets.len() + removed,
            changed: plan.daemonsets.iter().filter(|d| changed(d, diffs)).count() + removed,
            removed,
            impact,
            nodes_affected: (!plan.manifest_only).then_some(nodes.len()),
            risks: plan.daemonsets.iter().map(|d| d.risks.len()).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testing::{known_plan, manifest_only_plan};

    #[test]
    fn known_plan_counts_distinct_nodes_and_risks() {
        let c = Counts::of(&known_plan(), &Diffs::new());
        // w2, w3 restart; w4 gains; m1 loses; w5 (crash-looping, current) is not replaced.
        assert_eq!(
            c.impact,
            Impact {
                gain: 1,
                lose: 1,
                restart: 2
            }
        );
        assert_eq!(c.nodes_affected, Some(4));
        assert_eq!((c.daemonsets, c.changed, c.removed, c.risks), (1, 1, 0, 1));
    }

    #[test]
    fn diffs_count_as_changes_and_removed_daemonsets_are_counted() {
        let mut diffs = Diffs::new();
        diffs.insert(
            ("infra".into(), "logs".into()),
            "--- a/infra/logs\n+++ b/infra/logs\n-image: a\n+image: b\n".into(),
        );
        diffs.insert(
            ("infra".into(), "gone".into()),
            "--- a/infra/gone\n+++ /dev/null\n-kind: DaemonSet\n".into(),
        );
        let c = Counts::of(&manifest_only_plan(), &diffs);
        assert_eq!((c.daemonsets, c.changed, c.removed), (3, 2, 1));
        assert_eq!(
            c.nodes_affected, None,
            "a manifest-only plan knows no nodes"
        );
        assert_eq!(c.risks, 1);
    }
}

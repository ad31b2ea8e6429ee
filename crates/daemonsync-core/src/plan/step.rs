//! The next reconcile step, one upstream sync (docs/semantics.md §8): nothing while the
//! DaemonSet is frozen; only pods for the nodes that have none while it is paused
//! (`plan::suspend`); else the per-node decisions of `manage` (§5.3) when they have actions,
//! and the rolling update's (§6) otherwise, at most [`BURST_REPLICAS`] creates and deletes
//! (§5.4); then the pods patched in place, the readiness gates to open and the pre-pull pods.

use super::context::{Context, Prepared};
use super::inplace::Change;
use super::suspend::{Serve, serve_missing};
use super::view::{Actions, Slot};
use super::{
    DaemonSetSpec, Handover, InPlacePlan, InPlaceUpdate, Ownership, PodDeletion, PodRef, PrePull,
    Step, StepPhase, manage, rollout,
};
use k8s_openapi::api::apps::v1::DaemonSet;

/// Upper bound on creates and on deletes in one step (upstream `BurstReplicas`).
pub const BURST_REPLICAS: usize = 250;

/// Why nothing rolls for a DaemonSet this step, if so: a reason of its own (see
/// `frozen_reason`), errors in its rollout policy, a handover that blocks it or comes first,
/// or `daemonsync freeze` (`by_record`). The reason is also a warning, unless errors, a risk
/// or the plan's `suspended` already say it.
pub(super) fn frozen(
    d: &Prepared<'_>,
    errors: &[String],
    ownership: &Ownership,
    by_record: bool,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let frozen = frozen_reason(d.ds, d.live, &d.spec).or_else(|| {
        (!errors.is_empty()).then(|| {
            format!(
                "nothing is done until the rollout policy is fixed: {}",
                errors.join("; ")
            )
        })
    });
    // Blocked or waiting, nothing rolls; a take-over, a claim or a release happens first
    // and the step is what follows it.
    let frozen = frozen.or_else(|| match &ownership.handover {
        // A risk says why, and what to do.
        Handover::Blocked { .. } => Some(String::new()),
        Handover::Waiting { why } => Some(why.clone()),
        _ => None,
    });
    // `suspended` says it.
    let frozen = frozen.or_else(|| by_record.then(String::new));
    if let Some(why) = &frozen {
        // Errors are reported as errors, not repeated as a warning.
        if errors.is_empty() && !why.is_empty() {
            warnings.push(why.clone());
        }
    }
    frozen
}

/// Why a DaemonSet must not be reconciled at all this step, if so.
fn frozen_reason(ds: &DaemonSet, live: Option<&DaemonSet>, spec: &DaemonSetSpec) -> Option<String> {
    if spec.selector.as_ref().is_some_and(|s| s.is_empty()) {
        return Some(
            "this DaemonSet selects all pods; a non-empty selector is required, nothing is done"
                .into(),
        );
    }
    if ds.metadata.deletion_timestamp.is_some() {
        return Some("the DaemonSet is being deleted; nothing is done".into());
    }
    if live.is_some_and(|l| l.metadata.deletion_timestamp.is_some()) {
        return Some(
            "the live DaemonSet of this name is being deleted; its pods are not adopted".into(),
        );
    }
    None
}

impl Context<'_> {
    /// The step's actions, by slot, and which part of the reconcile made them; `paused`:
    /// what a paused DaemonSet creates on the nodes that have no pod, and nothing else.
    pub(super) fn actions(
        &self,
        d: &Prepared<'_>,
        slots: &[Slot],
        frozen: bool,
        paused: Option<Serve>,
        rolling_only: bool,
        warnings: &mut Vec<String>,
    ) -> (StepPhase, Actions) {
        let (phase, mut actions) = if frozen {
            (StepPhase::None, Actions::default())
        } else if let Some(serve) = paused {
            let served = serve_missing(slots, serve);
            if served.is_empty() {
                (StepPhase::None, served)
            } else {
                (StepPhase::Manage, served)
            }
        } else {
            let managed = if rolling_only {
                Actions::default()
            } else {
                manage::manage(slots, d.surge)
            };
            if !managed.is_empty() {
                (StepPhase::Manage, managed)
            } else if d.rolling {
                match rollout::rolling_update(slots, d.budgets, d.status.desired_number_scheduled) {
                    Ok(a) if a.is_empty() => (StepPhase::None, a),
                    Ok(a) => (StepPhase::RollingUpdate, a),
                    Err(rollout::Stalled::NodeGone { slot }) => {
                        warnings.push(format!(
                            "rolling update waits: an old pod is bound to node {} which no \
                             longer exists; the pod garbage collector must remove it first",
                            self.slot_name(&slots[slot as usize])
                        ));
                        (StepPhase::None, Actions::default())
                    }
                }
            } else {
                (StepPhase::None, Actions::default())
            }
        };
        actions.create.truncate(BURST_REPLICAS);
        actions.delete.truncate(BURST_REPLICAS);
        (phase, actions)
    }

    /// The step as the plan shows it: the actions by node and pod, then what a frozen or
    /// paused DaemonSet does not get (readiness gates opened, pre-pull pods created or
    /// removed).
    pub(super) fn step(
        &self,
        slots: &[Slot],
        (phase, actions): (StepPhase, Actions),
        in_place: Option<&InPlacePlan>,
        frozen: bool,
        pre_pull: Vec<PrePull>,
        pre_pull_cleanup: Vec<PodRef>,
    ) -> Step {
        Step {
            phase,
            create: actions
                .create
                .iter()
                .map(|&s| self.slot_name(&slots[s as usize]))
                .collect(),
            create_stable: actions
                .create_stable
                .iter()
                .map(|&s| self.slot_name(&slots[s as usize]))
                .collect(),
            in_place: actions
                .in_place
                .iter()
                .map(|&(s, id)| {
                    let pod = &self.observed.pods[id as usize];
                    InPlaceUpdate {
                        namespace: pod.namespace.to_string(),
                        name: pod.name.clone(),
                        node: self.slot_name(&slots[s as usize]),
                        images: match in_place.and_then(|p| p.change.as_ref()) {
                            Some(Change::InPlace { images }) => images.clone(),
                            _ => Vec::new(),
                        },
                        from_revision: pod.revision_hash().unwrap_or_default().to_string(),
                        detail: pod.detail.clone(),
                    }
                })
                .collect(),
            open_gates: if frozen {
                Vec::new()
            } else {
                self.gates_to_open(slots)
            },
            pre_pull: if frozen { Vec::new() } else { pre_pull },
            pre_pull_cleanup: if frozen { Vec::new() } else { pre_pull_cleanup },
            // Once every DaemonSet is planned (`readiness::settle`).
            remove_taints: Vec::new(),
            delete: actions
                .delete
                .iter()
                .map(|d| {
                    let pod = &self.observed.pods[d.pod as usize];
                    PodDeletion {
                        namespace: pod.namespace.to_string(),
                        name: pod.name.clone(),
                        node: self.slot_name(&slots[d.slot as usize]),
                        reason: d.why,
                        revision: pod.revision_hash().unwrap_or_default().to_string(),
                    }
                })
                .collect(),
        }
    }
}

//! The rolling update (docs/semantics.md §6.1, §6.3 and §6.4): budgets, delete-then-create
//! within maxUnavailable, create-then-delete within maxSurge.
//!
//! Where upstream iterates a Go map (so which candidates it picks is arbitrary), daemonsync
//! visits nodes in ascending name order, then vanished nodes by name: the plan is
//! deterministic and reviewers can predict the waves.

use crate::plan::spec::{DaemonSetSpec, UpdateStrategy};
use crate::plan::view::{Actions, Delete, DeleteReason, Held, Slot};
use serde::Serialize;

/// The resolved rolling-update budgets of one DaemonSet for this step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Budgets {
    /// maxSurge resolved against desiredNumberScheduled.
    pub max_surge: i32,
    /// maxUnavailable resolved against desiredNumberScheduled (at least 1 when both would be 0).
    pub max_unavailable: i32,
}

/// Upstream `updatedDesiredNodeCounts` for a DaemonSet with `desired` nodes that should run it.
pub fn budgets(spec: &DaemonSetSpec, desired: i32) -> Budgets {
    let (mut max_unavailable, max_surge) = match spec.strategy {
        UpdateStrategy::RollingUpdate {
            max_unavailable,
            max_surge,
        } => (max_unavailable.scaled(desired), max_surge.scaled(desired)),
        UpdateStrategy::OnDelete => (0, 0),
    };
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }
    Budgets {
        max_surge,
        max_unavailable,
    }
}

/// Upstream `AllowsSurge`: RollingUpdate with a positive maxSurge (int, or any positive percent).
pub fn allows_surge(spec: &DaemonSetSpec) -> bool {
    match spec.strategy {
        UpdateStrategy::RollingUpdate { max_surge, .. } => max_surge.scaled(1) > 0,
        UpdateStrategy::OnDelete => false,
    }
}

/// Why the rolling update could not run this step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stalled {
    /// Surge mode met an old pod bound to a node that no longer exists (upstream returns an
    /// error and does nothing until the pod garbage collector removes the pod).
    NodeGone { slot: u32 },
}

/// The rolling-update actions, or why none can be taken.
pub(crate) fn rolling_update(
    slots: &[Slot],
    budgets: Budgets,
    desired: i32,
) -> Result<Actions, Stalled> {
    if budgets.max_surge > 0 {
        let mut actions = surge_update(slots, budgets.max_surge, desired)?;
        // maxSurge does not apply to a pod updated in place: maxUnavailable paces those.
        actions.in_place = in_place_update(slots, budgets.max_unavailable);
        Ok(actions)
    } else {
        Ok(unavailable_update(slots, budgets.max_unavailable))
    }
}

/// In surge mode, the in-place updates `max_unavailable` allows: nodes without an available
/// pod count against it, each in-place update adds one.
fn in_place_update(slots: &[Slot], max_unavailable: i32) -> Vec<(u32, u32)> {
    let mut unavailable = 0;
    let mut candidates = Vec::new();
    for (i, slot) in slots.iter().enumerate().filter(|(_, s)| s.in_update_map()) {
        let available = slot.pods.iter().any(|p| p.is_running() && p.available);
        if !available {
            unavailable += 1;
            continue;
        }
        if let Some((None, Some(old))) = slot.updated_pods()
            && slot.in_place
            && slot.held == Held::No
            && !slot.pulling
        {
            candidates.push((i as u32, old.id));
        }
    }
    let remaining = (max_unavailable - unavailable).max(0) as usize;
    candidates.truncate(remaining);
    candidates
}

fn unavailable_update(slots: &[Slot], max_unavailable: i32) -> Actions {
    let mut num_unavailable = 0;
    let mut allowed = Vec::new();
    let mut candidates: Vec<Delete> = Vec::new();
    for (i, slot) in slots.iter().enumerate().filter(|(_, s)| s.in_update_map()) {
        let i = i as u32;
        let Some((new, old)) = slot.updated_pods() else {
            num_unavailable += 1;
            continue;
        };
        match (new, old) {
            (None, None) | (Some(_), Some(_)) => num_unavailable += 1,
            (Some(new), None) => {
                if !new.available {
                    num_unavailable += 1;
                }
            }
            (None, Some(old)) => {
                if !old.available {
                    if slot.held == Held::No && !slot.pulling {
                        allowed.push(delete(i, old.id, DeleteReason::ReplaceUnavailable));
                    }
                    num_unavailable += 1;
                } else if slot.held != Held::No || slot.pulling {
                    // Held back by the rollout policy, or its new images are still being
                    // pulled: counted, not replaced yet.
                } else if num_unavailable < max_unavailable {
                    candidates.push(delete(i, old.id, DeleteReason::RollingUpdate));
                }
            }
        }
    }
    let remaining = (max_unavailable - num_unavailable).clamp(0, candidates.len() as i32);
    // A candidate that can take the new revision in place is patched, not deleted: it is
    // unavailable from the patch until its containers are ready again, as a new pod would be.
    let (in_place, delete): (Vec<Delete>, Vec<Delete>) = candidates
        .into_iter()
        .take(remaining as usize)
        .partition(|d| slots[d.slot as usize].in_place);
    allowed.extend(delete);
    Actions {
        create: Vec::new(),
        create_stable: Vec::new(),
        delete: allowed,
        in_place: in_place.into_iter().map(|d| (d.slot, d.pod)).collect(),
    }
}

fn surge_update(slots: &[Slot], max_surge: i32, desired: i32) -> Result<Actions, Stalled> {
    let mut num_surge = 0;
    let mut num_available = 0;
    let mut actions = Actions::default();
    let mut allowed_new = Vec::new();
    let mut candidate_new = Vec::new();
    let mut should_not_run = Vec::new();
    for (i, slot) in slots.iter().enumerate().filter(|(_, s)| s.in_update_map()) {
        let i = i as u32;
        let Some((new, old)) = slot.updated_pods() else {
            num_surge += 1;
            continue;
        };
        match (old, new) {
            (Some(old), _) if old.available => num_available += 1,
            (None, Some(new)) if new.available => num_available += 1,
            _ => {}
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) => {
                if slot.node.is_none() {
                    return Err(Stalled::NodeGone { slot: i });
                }
                if (slot.held != Held::No || slot.pulling) && slot.should_run {
                    // Held back by the rollout policy, or pulling its images: its old pod stays.
                } else if slot.in_place && old.available && slot.should_run {
                    // Updated in place (see `in_place_update`), not by a surge pod.
                } else if !old.available {
                    if !slot.should_run {
                        actions
                            .delete
                            .push(delete(i, old.id, DeleteReason::Misscheduled));
                    } else {
                        allowed_new.push(i);
                    }
                } else if !slot.should_run {
                    should_not_run.push(delete(i, old.id, DeleteReason::NoLongerEligible));
                } else if num_surge < max_surge {
                    candidate_new.push(i);
                }
            }
            (Some(new), Some(old)) => {
                if !new.available {
                    num_surge += 1;
                } else {
                    actions
                        .delete
                        .push(delete(i, old.id, DeleteReason::Replaced));
                }
            }
        }
    }
    let deletable = num_available - desired;
    if deletable > 0 {
        actions
            .delete
            .extend(should_not_run.into_iter().take(deletable as usize));
    }
    let remaining = (max_surge - num_surge).clamp(0, candidate_new.len() as i32);
    allowed_new.extend(candidate_new.into_iter().take(remaining as usize));
    actions.create = allowed_new;
    Ok(actions)
}

fn delete(slot: u32, pod: u32, why: DeleteReason) -> Delete {
    Delete { slot, pod, why }
}

//! The per-node decisions (upstream `podsShouldBeOnNode` and the unscheduled-pod cleanup of
//! `manage`, docs/semantics.md §5.3): create where a pod is missing, delete failed, duplicate
//! and misscheduled pods.

use crate::model::PodPhase;
use crate::plan::pods::PodInfo;
use crate::plan::view::{Actions, Delete, DeleteReason, Held, Slot};

/// Manage actions for every slot, in slot order.
pub(crate) fn manage(slots: &[Slot], allows_surge: bool) -> Actions {
    let mut actions = Actions::default();
    for (i, slot) in slots.iter().enumerate() {
        let i = i as u32;
        if slot.node.is_none() {
            // A vanished node: only pods that were never bound are ours to clean up; bound pods
            // are left to the pod garbage collector.
            for p in slot.pods.iter().filter(|p| !p.bound) {
                actions.delete.push(del(i, p, DeleteReason::NodeGone));
            }
            continue;
        }
        on_node(i, slot, allows_surge, &mut actions);
    }
    actions
}

fn del(slot: u32, p: &PodInfo, why: DeleteReason) -> Delete {
    Delete {
        slot,
        pod: p.id,
        why,
    }
}

/// A pod for the node: the new revision, or the stable one on a held-back node (none when
/// no stable revision is known).
fn create(i: u32, slot: &Slot, actions: &mut Actions) {
    match slot.held {
        Held::No => actions.create.push(i),
        Held::Stable => actions.create_stable.push(i),
        Held::Wait => {}
    }
}

fn on_node(i: u32, slot: &Slot, allows_surge: bool, actions: &mut Actions) {
    if slot.should_run && !slot.has_pods() {
        create(i, slot, actions);
        return;
    }
    if !slot.should_continue {
        for p in slot.pods.iter().filter(|p| !p.terminating) {
            actions.delete.push(del(i, p, DeleteReason::Misscheduled));
        }
        return;
    }
    for p in slot.pods.iter().filter(|p| !p.terminating) {
        match p.phase {
            // Failed pods are always deleted: the planner keeps no memory, so upstream's
            // per-node backoff is not modelled (apply's progress deadline halts a rollout
            // whose new pods keep failing).
            PodPhase::Failed => actions.delete.push(del(i, p, DeleteReason::Failed)),
            PodPhase::Succeeded => actions.delete.push(del(i, p, DeleteReason::Succeeded)),
            _ => {}
        }
    }
    // Slot pods are in upstream order, so "the first running pod" is the one upstream keeps.
    let running = || slot.pods.iter().filter(|p| p.is_running());
    if !allows_surge {
        // Keep the first, delete the rest. No creation here even with nothing running: the
        // next step sees an empty node.
        for p in running().skip(1) {
            actions.delete.push(del(i, p, DeleteReason::Duplicate));
        }
        return;
    }
    match running().count() {
        0 if slot.should_run => {
            create(i, slot, actions);
            return;
        }
        0 | 1 => return,
        _ => {}
    }
    let oldest_new = running().find(|p| p.hash_current);
    let oldest_old = running().find(|p| !p.hash_current);
    let kept = |p: &PodInfo| {
        Some(p.id) == oldest_new.map(|k| k.id) || Some(p.id) == oldest_old.map(|k| k.id)
    };
    for p in running().filter(|p| !kept(p)) {
        actions.delete.push(del(i, p, DeleteReason::Duplicate));
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
        if !old.ready {
            actions.delete.push(del(i, old, DeleteReason::OldNotReady));
        } else if new.available {
            actions.delete.push(del(i, old, DeleteReason::Replaced));
        }
    }
}

//! Rollout projection: from the current state, assuming every pod of the current revision
//! becomes available, the waves of nodes that receive a new pod (or lose theirs) until the
//! DaemonSet converges.
//!
//! The projection replays the planner's own steps on a copy of the per-node view, so it can
//! never disagree with what `apply` will do. Once the view is regular (every node either done,
//! or running one available old pod on a node that should run it) the remaining waves are
//! exactly the remaining old nodes in visiting order, `budget` at a time; the projection then
//! chunks them instead of replaying, which keeps it linear in the number of nodes.

use crate::plan::Wave;
use crate::plan::context::{Context, Prepared};
use crate::plan::manage::manage;
use crate::plan::pods::{PodInfo, SYNTHETIC};
use crate::plan::progressive::{NodeRollout, Paused, Rollout};
use crate::plan::rollout::{Budgets, Stalled, rolling_update};
use crate::plan::view::{Actions, DeleteReason, Held, Slot};

/// Bound on replayed steps per projection before it gives up and reports non-convergence.
const MAX_REPLAYED_STEPS: usize = 20_000;
/// Bound on replayed steps inside one wave (manage and rolling update alternate a few times).
const MAX_STEPS_PER_WAVE: usize = 8;

/// Result of a projection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Projection {
    /// Slots touched in each wave, in visiting order.
    pub waves: Vec<Vec<u32>>,
    /// False when the rollout cannot complete under the assumption (OnDelete with old pods, a
    /// stalled rolling update, or the replay bound was reached).
    pub converges: bool,
}

/// Projects the rollout. `rolling` is false for OnDelete.
pub(crate) fn project(
    slots: &[Slot],
    budgets: Budgets,
    desired: i32,
    allows_surge: bool,
    rolling: bool,
) -> Projection {
    let mut slots = slots.to_vec();
    let mut next_id = SYNTHETIC;
    project_on(
        &mut slots,
        &mut next_id,
        budgets,
        desired,
        allows_surge,
        rolling,
    )
}

/// Projects a staged rollout: the stages from `from` on, each unlocked in turn (pauses are
/// assumed to pass). `hold(slot, stage)` says how the slot is held while `stage` is the last
/// unlocked one. Returns the projection and the stage of each wave.
pub(crate) fn project_stages(
    slots: &[Slot],
    stages: std::ops::RangeInclusive<u32>,
    hold: impl Fn(usize, u32) -> Held,
    budgets: Budgets,
    desired: i32,
    allows_surge: bool,
) -> (Projection, Vec<u32>) {
    let mut slots = slots.to_vec();
    let mut next_id = SYNTHETIC;
    let mut waves = Vec::new();
    let mut stage_of = Vec::new();
    for stage in stages {
        for (i, s) in slots.iter_mut().enumerate() {
            s.held = hold(i, stage);
        }
        let p = project_on(
            &mut slots,
            &mut next_id,
            budgets,
            desired,
            allows_surge,
            true,
        );
        // The stage is done: its nodes run the new revision when the next one starts (the
        // projection may have chunked them without replaying).
        for s in slots
            .iter_mut()
            .filter(|s| s.node.is_some() && s.should_run && s.held == Held::No)
        {
            s.pods.clear();
            s.pods.push(PodInfo {
                id: next_id,
                terminating: false,
                phase: crate::model::PodPhase::Running,
                bound: true,
                hash_current: true,
                updated: true,
                ready: true,
                available: true,
                gate_closed: false,
            });
            next_id += 1;
        }
        stage_of.extend(std::iter::repeat_n(stage, p.waves.len()));
        waves.extend(p.waves);
        if !p.converges {
            return (
                Projection {
                    waves,
                    converges: false,
                },
                stage_of,
            );
        }
    }
    (
        Projection {
            waves,
            converges: true,
        },
        stage_of,
    )
}

fn project_on(
    slots: &mut [Slot],
    next_id: &mut u32,
    budgets: Budgets,
    desired: i32,
    allows_surge: bool,
    rolling: bool,
) -> Projection {
    let mut waves = Vec::new();
    let mut replayed = 0;
    loop {
        // In-place updates beside surge are paced by maxUnavailable: replay those.
        let mixed = budgets.max_surge > 0 && slots.iter().any(|s| s.in_place);
        if rolling
            && !mixed
            && let Some(rest) = regular_remaining(slots, allows_surge)
        {
            let per_wave = if budgets.max_surge > 0 {
                budgets.max_surge
            } else {
                budgets.max_unavailable
            }
            .max(1) as usize;
            waves.extend(rest.chunks(per_wave).map(<[u32]>::to_vec));
            return Projection {
                waves,
                converges: true,
            };
        }
        let mut touched = Vec::new();
        let mut stalled = false;
        for _ in 0..MAX_STEPS_PER_WAVE {
            replayed += 1;
            let mut actions = manage(slots, allows_surge);
            if actions.is_empty() && rolling {
                match rolling_update(slots, budgets, desired) {
                    Ok(a) => actions = a,
                    Err(Stalled::NodeGone { .. }) => stalled = true,
                }
            }
            if actions.is_empty() {
                break;
            }
            apply(slots, &actions, next_id, &mut touched);
        }
        let woke = make_current_available(slots);
        if !touched.is_empty() {
            touched.sort_unstable();
            touched.dedup();
            waves.push(touched);
        } else if !woke {
            return Projection {
                converges: !stalled && converged(slots),
                waves,
            };
        }
        if replayed >= MAX_REPLAYED_STEPS {
            return Projection {
                waves,
                converges: false,
            };
        }
    }
}

/// Applies a step to the projected view: deleted pods disappear at once, created pods start
/// not ready.
fn apply(slots: &mut [Slot], actions: &Actions, next_id: &mut u32, touched: &mut Vec<u32>) {
    for d in &actions.delete {
        let slot = &mut slots[d.slot as usize];
        slot.pods.retain(|p| p.id != d.pod);
        // Removing the old pod after its replacement is available completes the node's
        // earlier wave; it does not start a new one.
        if !matches!(d.why, DeleteReason::Replaced | DeleteReason::OldNotReady) {
            touched.push(d.slot);
        }
    }
    for &(s, pod) in &actions.in_place {
        if let Some(p) = slots[s as usize].pods.iter_mut().find(|p| p.id == pod) {
            p.hash_current = true;
            p.updated = true;
            p.ready = false;
            p.available = false;
        }
        touched.push(s);
    }
    let creates = actions.create.iter().map(|&s| (s, true));
    let stable = actions.create_stable.iter().map(|&s| (s, false));
    for (s, current) in creates.chain(stable) {
        let id = *next_id;
        *next_id += 1;
        slots[s as usize].pods.push(PodInfo {
            id,
            terminating: false,
            phase: crate::model::PodPhase::Pending,
            bound: false,
            hash_current: current,
            updated: current,
            ready: false,
            available: false,
            gate_closed: false,
        });
        touched.push(s);
    }
}

/// The assumptions of the projection between waves: terminating pods finish, and every
/// current-revision pod (and every pod the projection created) becomes available. Returns
/// whether anything changed.
fn make_current_available(slots: &mut [Slot]) -> bool {
    let mut changed = false;
    for slot in slots.iter_mut() {
        let before = slot.pods.len();
        slot.pods.retain(|p| !p.terminating);
        changed |= slot.pods.len() != before;
        for p in &mut slot.pods {
            if (p.updated || p.id >= SYNTHETIC) && p.is_running() && !p.available {
                p.ready = true;
                p.available = true;
                changed = true;
            }
        }
    }
    changed
}

/// Converged as `kubectl rollout status` judges it: every node that should run the DaemonSet
/// runs exactly one current pod. Pods the controller leaves elsewhere (kept on nodes blocked
/// only by a NoSchedule taint, bound to vanished nodes) are reported as misscheduled, not as an
/// unfinished rollout.
fn converged(slots: &[Slot]) -> bool {
    slots
        .iter()
        .filter(|s| s.node.is_some() && s.should_run && s.held == Held::No)
        .all(|s| matches!(s.pods.as_slice(), [p] if p.updated && p.is_running()))
}

/// When the view is regular, the old nodes still to roll, in visiting order: every further
/// wave then takes the next `budget` of them, exactly as the replay would. `None` when some
/// node still needs the replay (missing pods, duplicates, unavailable old pods, pods on nodes
/// that no longer qualify or no longer exist).
fn regular_remaining(slots: &[Slot], allows_surge: bool) -> Option<Vec<u32>> {
    let mut rest = Vec::new();
    for (i, s) in slots.iter().enumerate() {
        let settled = |p: &PodInfo| p.is_running() && p.available;
        let qualifies = s.node.is_some() && s.should_run;
        if qualifies && s.held != Held::No {
            // Held back: nothing more happens to it in this projection, once it has its pod.
            match s.pods.as_slice() {
                [p] if settled(p) => continue,
                [] if s.held == Held::Wait => continue,
                _ => return None,
            }
        }
        match s.pods.as_slice() {
            [] if !qualifies => {}
            [p] if settled(p) && p.updated => {
                let kept = s.should_continue || (s.node.is_none() && p.bound);
                if !qualifies && !kept {
                    return None;
                }
            }
            [p] if settled(p) && qualifies => rest.push(i as u32),
            // Surge: a replaced node whose old pod goes in the next step's manage pass.
            [a, b]
                if allows_surge
                    && qualifies
                    && settled(a)
                    && settled(b)
                    && a.updated != b.updated => {}
            _ => return None,
        }
    }
    Some(rest)
}

impl Context<'_> {
    /// The waves projected until the DaemonSet converges (none while it is frozen), stage by
    /// stage under a rollout policy, and whether they get there (a warning when they do not).
    pub(super) fn waves(
        &self,
        d: &Prepared<'_>,
        slots: &[Slot],
        frozen: bool,
        rollout: Option<&Rollout>,
        node_rollouts: &[Option<NodeRollout>],
        warnings: &mut Vec<String>,
    ) -> (Vec<Wave>, bool) {
        if self.leave_out_waves {
            return (Vec::new(), true);
        }
        let mut wave_stages = Vec::new();
        let projection = if frozen {
            Projection {
                waves: Vec::new(),
                converges: false,
            }
        } else if let Some(r) = rollout {
            let last = r.stages.len().saturating_sub(1) as u32;
            let aborted = r.pause == Some(Paused::Aborted);
            let stable = r.stable_revision.is_some();
            let (projection, stages) = project_stages(
                slots,
                if aborted {
                    r.stage..=r.stage
                } else {
                    r.stage..=last
                },
                |i, k| match node_rollouts.get(i).copied().flatten() {
                    Some(t) if t.hold.is_some() => {
                        if !aborted && t.stage.is_some_and(|s| s <= k) {
                            Held::No
                        } else if stable {
                            Held::Stable
                        } else {
                            Held::Wait
                        }
                    }
                    _ => Held::No,
                },
                d.budgets,
                d.status.desired_number_scheduled,
                d.surge,
            );
            wave_stages = stages;
            projection
        } else {
            project(
                slots,
                d.budgets,
                d.status.desired_number_scheduled,
                d.surge,
                d.rolling,
            )
        };
        // OnDelete with old pods is a risk (see `risks`), not also a warning.
        let on_delete_waits =
            !d.rolling && d.status.updated_number_scheduled < d.status.current_number_scheduled;
        if !on_delete_waits && !frozen && !projection.converges {
            warnings.push("the rollout does not converge under the current budgets".into());
        }
        let waves = projection
            .waves
            .iter()
            .enumerate()
            .map(|(k, w)| Wave {
                nodes: w
                    .iter()
                    .map(|&s| self.slot_name(&slots[s as usize]))
                    .collect(),
                stage: wave_stages.get(k).copied(),
            })
            .collect();
        (waves, projection.converges)
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{Policy, plan};
    use crate::testkit::synthetic::{fleet, fleet_now};

    #[test]
    fn a_plan_without_its_waves_is_the_same_plan_otherwise() {
        let (desired, observed) = fleet(300, 12, 11);
        let with = plan(&desired, &observed, &Policy::default(), fleet_now());
        let policy = Policy {
            leave_out_waves: true,
            ..Policy::default()
        };
        let without = plan(&desired, &observed, &policy, fleet_now());
        assert!(
            with.daemonsets.iter().any(|d| d.waves.len() > 1),
            "the fleet has rollouts to project"
        );
        for (w, mut wo) in with.daemonsets.into_iter().zip(without.daemonsets) {
            assert!(wo.waves.is_empty() && wo.converges, "{}", wo.name);
            // What the projection adds: its waves, whether it converges, and the warning
            // when it does not.
            wo.waves.clone_from(&w.waves);
            wo.converges = w.converges;
            let projected = "the rollout does not converge under the current budgets";
            let mut expected = w.clone();
            expected.warnings.retain(|x| x != projected);
            assert_eq!(
                serde_json::to_value(&wo).expect("plan as JSON"),
                serde_json::to_value(&expected).expect("plan as JSON"),
                "{}",
                w.name
            );
        }
    }
}

//! The pure planner: a function of (desired, observed, policy, now). No I/O, no clock.
//!
//! [`plan`] takes the desired DaemonSets (defaulted and valid, see [`crate::manifest`]) and the
//! observed nodes, pods and live DaemonSets, and returns a [`Plan`]: for every DaemonSet its
//! status counters, every node's state with a reason, the next reconcile step and the projected
//! waves of the rollout.
//!
//! One step corresponds to one upstream sync: if the per-node decisions (create where a pod is
//! missing; delete failed, duplicate and misscheduled pods) produce actions, the step is those;
//! otherwise it is the rolling update's actions.
//!
//! Determinism: where the upstream controller iterates a Go map, daemonsync visits nodes in
//! ascending name order (then vanished nodes by name), and pods of one node in upstream order
//! (bound first, oldest first, then by name). Plans of the same input are byte-identical.

#[cfg(test)]
mod adoption;
mod classify;
mod context;
pub mod eligibility;
pub mod events;
pub mod inplace;
#[cfg(test)]
mod inplace_tests;
pub mod live;
mod manage;
pub mod ownership;
mod pods;
pub mod podsecurity;
mod prepull;
pub mod progressive;
#[cfg(test)]
mod progressive_tests;
#[cfg(test)]
mod properties;
pub mod render;
pub mod revision;
pub mod risks;
mod rollout;
#[cfg(test)]
mod scenarios;
pub mod spec;
mod status;
mod step;
#[cfg(any(test, feature = "fuzzing"))]
pub mod testkit;
mod types;
mod view;
mod waves;

pub use classify::{NodeState, Reason};
pub use context::stable_daemonset;
pub use live::{FieldDifference, LiveDiff};
pub use ownership::{Handover, Mode, Ownership};
pub use pods::{RECORD_API_VERSION, RECORD_GROUP, RECORD_KIND, is_pod_updated};
pub use progressive::{Phase, Rollout, RolloutPolicy, RolloutRecord};
pub use risks::{Risk, RiskKind};
pub use rollout::{Budgets, allows_surge, budgets};
pub use spec::{DaemonSetSpec, IntOrPercent, UpdateStrategy};
pub use status::Status;
pub use step::BURST_REPLICAS;
pub use types::{
    DaemonSetPlan, Desired, InPlacePlan, InPlaceUpdate, LiveComparison, Name, NodeEntry,
    NodeUpdate, Observed, PLAN_API_VERSION, Plan, PodDeletion, PodRef, Policy, PrePull,
    PrePullPlan, PullFailure, Step, StepPhase, StrategySummary, Wave,
};
pub use view::DeleteReason;

use crate::model::Timestamp;
use context::{Context, Prepared};
use eligibility::Eligibility;
use k8s_openapi::api::apps::v1::DaemonSet;
use pods::PodIndex;
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use view::Held;

/// Plans every desired DaemonSet against the observed state at instant `now`.
pub fn plan(desired: &[Desired], observed: &Observed, policy: &Policy, now: Timestamp) -> Plan {
    plan_with(desired, observed, policy, now, false)
}

/// Plans one `apps/v1` DaemonSet as the built-in DaemonSet controller runs it (the simulated
/// cluster's kube-controller-manager): `observed` holds the nodes and the pods the controller
/// claimed for it, `revision` is the controller's own hash of the template (its
/// ControllerRevision's), and the template generation is the DaemonSet's annotation.
/// daemonsync's own annotations mean nothing to the built-in controller and are ignored.
pub fn plan_builtin(
    ds: &DaemonSet,
    revision: &str,
    observed: &Observed,
    now: Timestamp,
) -> DaemonSetPlan {
    let mut ds = ds.clone();
    if let Some(a) = ds.metadata.annotations.as_mut() {
        a.retain(|k, _| !k.starts_with(progressive::ANNOTATION_PREFIX));
    }
    let mut ctx = Context::new(observed);
    ctx.builtin = true;
    let mut spec = DaemonSetSpec::compile(&ds);
    spec.revision = revision.to_string();
    let policy = Policy::default();
    ctx.pods = PodIndex::new(&observed.pods, &ctx.position);
    let eligibility = ctx
        .eligibility(std::slice::from_ref(&spec), &policy)
        .pop()
        .unwrap_or_default();
    let desired = Desired {
        source: String::new(),
        daemonset: ds,
    };
    ctx.plan_one(
        &desired,
        spec,
        (LiveComparison::None, None),
        eligibility,
        now,
        false,
    )
}

/// Plans the manifests alone, without a cluster (`--cluster none`): validation has happened
/// on loading; what is left is each DaemonSet's revision, strategy and the risks that do not
/// depend on nodes (host ports with surge, a `maxUnavailable` of 100% or more). The plan is
/// marked [`Plan::manifest_only`] so that no report mistakes it for an empty cluster.
pub fn plan_manifests(desired: &[Desired], policy: &Policy, now: Timestamp) -> Plan {
    plan_in(desired, &Observed::default(), policy, now, false, true)
}

/// [`plan`], optionally skipping the per-node decisions so that the step is the rolling
/// update's (tests replay upstream syncs, which run both in one pass).
pub(crate) fn plan_with(
    desired: &[Desired],
    observed: &Observed,
    policy: &Policy,
    now: Timestamp,
    rolling_only: bool,
) -> Plan {
    plan_in(desired, observed, policy, now, rolling_only, false)
}

fn plan_in(
    desired: &[Desired],
    observed: &Observed,
    policy: &Policy,
    now: Timestamp,
    rolling_only: bool,
    manifest_only: bool,
) -> Plan {
    let mut ctx = Context::new(observed);
    ctx.manifest_only = manifest_only;
    ctx.auto_promote = policy.auto_promote;
    let (specs, comparisons): (Vec<_>, Vec<_>) = desired.iter().map(|d| ctx.spec(d)).unzip();
    // The two costliest indexes do not depend on each other.
    let (pods, eligibility) = rayon::join(
        || PodIndex::new(&observed.pods, &ctx.position),
        || ctx.eligibility(&specs, policy),
    );
    ctx.pods = pods;
    // DaemonSets are planned independently, so they are planned in parallel; the order of the
    // result does not depend on the schedule.
    let work: Vec<_> = desired
        .iter()
        .zip(specs)
        .zip(comparisons)
        .zip(eligibility)
        .collect();
    let mut daemonsets: Vec<DaemonSetPlan> = work
        .into_par_iter()
        .map(|(((d, spec), live), elig)| ctx.plan_one(d, spec, live, elig, now, rolling_only))
        .collect();
    daemonsets.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Plan {
        api_version: PLAN_API_VERSION,
        kind: "Plan",
        now,
        manifest_only,
        daemonsets,
    }
}

impl<'a> Context<'a> {
    fn plan_one(
        &self,
        desired: &Desired,
        spec: DaemonSetSpec,
        (comparison, live_diff): (LiveComparison, Option<LiveDiff>),
        eligibility: Vec<Eligibility>,
        now: Timestamp,
        rolling_only: bool,
    ) -> DaemonSetPlan {
        let (d, mut slots) = self.prepare(desired, spec, &eligibility, now);
        let Prepared {
            ds,
            ref spec,
            live,
            surge,
            rolling,
            budgets,
            status,
            ..
        } = d;
        let mut warnings = Vec::new();
        let (rollout, node_rollouts, errors) = self.progressive(&d, &mut slots, now, &mut warnings);
        let (in_place, node_updates) = self.in_place(&d, &mut slots, &mut warnings);
        let (pre_pull, pre_pull_step, pre_pull_cleanup) =
            self.pre_pull(&d, &mut slots, &node_rollouts);
        let ownership = self.ownership(&d, &mut warnings);
        let frozen = step::frozen(&d, &errors, &ownership, &mut warnings);
        let actions = self.actions(&d, &slots, frozen.is_some(), rolling_only, &mut warnings);

        let mut wave_stages = Vec::new();
        let projection = if frozen.is_some() {
            waves::Projection {
                waves: Vec::new(),
                converges: false,
            }
        } else if let Some(r) = &rollout {
            let last = r.stages.len().saturating_sub(1) as u32;
            let aborted = r.pause == Some(progressive::Paused::Aborted);
            let stable = r.stable_revision.is_some();
            let (projection, stages) = waves::project_stages(
                &slots,
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
                budgets,
                status.desired_number_scheduled,
                surge,
            );
            wave_stages = stages;
            projection
        } else {
            waves::project(
                &slots,
                budgets,
                status.desired_number_scheduled,
                surge,
                rolling,
            )
        };
        // OnDelete with old pods is a risk (see `risks`), not also a warning.
        let on_delete_waits =
            !rolling && status.updated_number_scheduled < status.current_number_scheduled;
        if !on_delete_waits && frozen.is_none() && !projection.converges {
            warnings.push("the rollout does not converge under the current budgets".into());
        }

        let step = self.step(
            &slots,
            actions,
            in_place.as_ref(),
            frozen.is_some(),
            pre_pull_step,
            pre_pull_cleanup,
        );
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
        // Last, so that each node's reason can take its eligibility explanation without a copy.
        // Old pods mostly share a few revisions: name each once.
        let mut revisions: HashMap<&str, Name> = HashMap::default();
        let mut eligibility = eligibility;
        let nodes = slots
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let why = s
                    .node
                    .and_then(|pos| eligibility[pos as usize].reason.take());
                let (state, reason) = classify::classify(
                    s,
                    why,
                    surge,
                    spec.min_ready_seconds,
                    |id| {
                        let hash = self.pod(id)?.revision_hash()?;
                        Some(
                            revisions
                                .entry(hash)
                                .or_insert_with(|| Name::from(hash))
                                .clone(),
                        )
                    },
                    |id| self.pod(id).and_then(|p| p.waiting_reason.clone()),
                );
                NodeEntry {
                    node: self.slot_name(s),
                    state,
                    reason,
                    rollout: node_rollouts.get(i).copied().flatten(),
                    update: (state == NodeState::OutOfDate)
                        .then(|| node_updates.get(i).cloned().flatten())
                        .flatten(),
                }
            })
            .collect::<Vec<_>>();
        let risks = risks::risks(&risks::Inputs {
            desired: ds,
            live,
            spec,
            budgets,
            status: &status,
            nodes: &nodes,
            step: &step,
            manifest_only: self.manifest_only,
            ownership: &ownership,
            namespace: self
                .observed
                .namespaces
                .iter()
                .find(|n| n.name == spec.namespace),
        });
        DaemonSetPlan {
            namespace: spec.namespace.clone(),
            name: spec.name.clone(),
            source: desired.source.clone(),
            revision: spec.revision.clone(),
            live: comparison,
            live_diff,
            strategy: spec::strategy_summary(spec),
            budgets,
            status,
            nodes,
            step,
            waves,
            converges: projection.converges,
            warnings,
            risks,
            node_selector: spec.node_selector.clone(),
            created: live.and_then(|l| l.metadata.creation_timestamp.as_ref().map(|t| t.0)),
            rollout,
            errors,
            in_place,
            pre_pull,
            ownership,
        }
    }
}

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
pub mod affinity;
mod classify;
pub mod config;
mod context;
pub mod eligibility;
pub mod events;
pub mod incremental;
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
pub mod readiness;
#[cfg(test)]
mod readiness_tests;
pub mod render;
pub mod revision;
pub mod risks;
mod rollout;
#[cfg(test)]
mod scenarios;
pub mod spec;
mod status;
mod step;
pub mod suspend;
#[cfg(test)]
mod suspend_tests;
pub mod tolerations;
mod types;
mod view;
mod waves;

pub use classify::{NodeState, Reason};
pub use config::{ConfigChange, ConfigChangeKind};
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
    PrePullPlan, PullFailure, Stalled, Step, StepPhase, StrategySummary, Wave,
};
pub use view::DeleteReason;

use crate::model::Timestamp;
use context::{Context, Prepared};
use eligibility::Eligibility;
use k8s_openapi::api::apps::v1::DaemonSet;
use pods::PodIndex;
use rayon::prelude::*;
use spec::strategy_summary;

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
    ctx.pods = PodIndex::new(&observed.pods, &ctx.nodes);
    let eligibility = ctx
        .eligibility(std::slice::from_ref(&spec), &policy)
        .pop()
        .unwrap_or_default();
    let desired = Desired::new("", ds);
    ctx.plan_one(
        &desired,
        spec,
        (LiveComparison::None, None),
        &eligibility,
        now,
        false,
    )
    .0
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
    ctx.ignore_pause = policy.ignore_pause;
    ctx.leave_out_waves = policy.leave_out_waves;
    let (specs, comparisons): (Vec<_>, Vec<_>) = desired.iter().map(|d| ctx.spec(d)).unzip();
    // The two costliest indexes do not depend on each other.
    let (pods, eligibility) = rayon::join(
        || PodIndex::new(&observed.pods, &ctx.nodes),
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
    let mut planned: Vec<(DaemonSetPlan, Option<readiness::Gate>)> = work
        .into_par_iter()
        .map(|(((d, spec), live), elig)| ctx.plan_one(d, spec, live, &elig, now, rolling_only))
        .collect();
    planned.sort_by(|(a, _), (b, _)| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let (mut daemonsets, gates): (Vec<_>, Vec<_>) = planned.into_iter().unzip();
    // Readiness taints are shared between the DaemonSets naming one key.
    readiness::settle(&ctx, policy, now, &mut daemonsets, gates);
    Plan {
        api_version: PLAN_API_VERSION,
        kind: "Plan",
        now,
        manifest_only,
        daemonsets,
    }
}

impl Context<'_> {
    /// One DaemonSet's plan, phase by phase, each in the file of its phase: what its
    /// annotations ask for (`progressive`, `inplace`, `prepull`), who runs its pods
    /// (`ownership`), the next step and the waves that follow (`step`, `waves`), then every
    /// node's state (`classify`) and the risks (`risks`). The phases mark the slots as they
    /// decide, and note their warnings in order. Also returns what its readiness taint waits
    /// for on each node, which [`readiness::settle`] joins with the other DaemonSets'.
    fn plan_one(
        &self,
        desired: &Desired,
        spec: DaemonSetSpec,
        (comparison, live_diff): (LiveComparison, Option<LiveDiff>),
        eligibility: &[Eligibility],
        now: Timestamp,
        rolling_only: bool,
    ) -> (DaemonSetPlan, Option<readiness::Gate>) {
        let (d, mut slots) = self.prepare(desired, spec, eligibility, now);
        let config_changes = self.config_changes(&d, &slots);
        let mut warnings = Vec::new();
        // What the annotations ask for: nodes held back, pods patched in place, images pulled
        // ahead.
        let (rollout, node_rollouts, errors) = self.progressive(&d, &mut slots, now, &mut warnings);
        let (in_place, node_updates) = self.in_place(&d, &mut slots, &mut warnings);
        let (pre_pull, pre_pull_step, pre_pull_cleanup) =
            self.pre_pull(&d, &mut slots, &node_rollouts);
        let ownership = self.ownership(&d, &mut warnings);
        // The record's pause or freeze.
        let (suspended, serve) = self.suspension(&d, &slots).unzip();
        // The next step, unless the DaemonSet is frozen, and the waves until it converges.
        let frozen = step::frozen(
            &d,
            &errors,
            &ownership,
            suspended == Some(suspend::Suspension::Frozen),
            &mut warnings,
        );
        let actions = self.actions(
            &d,
            &slots,
            frozen.is_some(),
            serve,
            rolling_only,
            &mut warnings,
        );
        let (waves, converges) = self.waves(
            &d,
            &slots,
            frozen.is_some(),
            rollout.as_ref(),
            &node_rollouts,
            &mut warnings,
        );
        let step = self.step(
            &slots,
            actions,
            in_place.as_ref(),
            frozen.is_some() || serve.is_some(),
            pre_pull_step,
            pre_pull_cleanup,
        );
        let gate = self.gate(&d, &slots, frozen.is_none());
        let nodes = self.nodes(&d, &slots, eligibility, &node_rollouts, &node_updates);
        let risks = self.risks(&d, &nodes, &step, &ownership);
        let stalled = self
            .record(&d.spec.namespace, &d.spec.name)
            .and_then(|r| r.stalled.clone());
        let Prepared {
            spec,
            live,
            budgets,
            status,
            ..
        } = d;
        let plan = DaemonSetPlan {
            strategy: strategy_summary(&spec),
            node_selector: spec.node_selector,
            namespace: spec.namespace,
            name: spec.name,
            source: desired.source.clone(),
            revision: spec.revision,
            live: comparison,
            live_diff,
            budgets,
            status,
            nodes,
            step,
            waves,
            converges,
            warnings,
            risks,
            created: live.and_then(|l| l.metadata.creation_timestamp.as_ref().map(|t| t.0)),
            rollout,
            errors,
            in_place,
            pre_pull,
            ownership,
            readiness: None,
            suspended,
            stalled,
            config_changes,
        };
        (plan, gate)
    }
}

//! The wording the renderers share: the table (`table`) and the pull-request comment
//! (`markdown`) say the same things about a plan in their own layout, so the sentences they
//! have in common are written here once, with the few facts about a plan they rest on (where
//! a stage stands, which pause counts, whether a step only opens gates). A renderer keeps only
//! what is its own format: its layout, its [`Markup`] (quoting and escaping), and the phrases
//! it words differently on purpose (the next step, the partition and stage lists).

use crate::plan::inplace::{Change, ImageChange};
use crate::plan::progressive::{Gets, Hold, Pause, Stage, StageKind};
use crate::plan::{
    DaemonSetPlan, InPlacePlan, LiveDiff, NodeEntry, NodeState, NodeUpdate, Phase, Rollout, Step,
    StepPhase,
};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How a format marks up what a phrase quotes: names and values (images, fields, revisions)
/// and free text (a reason the planner wrote).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Markup {
    /// A name or value: an image, a field path, a revision, a wave's label.
    pub code: fn(&str) -> String,
    /// Free text, such as why a pod is recreated.
    pub text: fn(&str) -> String,
}

/// No markup: the terminal table.
pub(crate) const PLAIN: Markup = Markup {
    code: str::to_string,
    text: str::to_string,
};

/// `1 node`, `3 nodes`: a number and a noun with a regular plural.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The words that agree with `n`: `one` for 1, `many` otherwise (`needs` or `need`).
pub(crate) fn agree<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// The update strategy with both budgets as the manifest sets them: `RollingUpdate
/// maxUnavailable=1 maxSurge=0` (the Markdown report, where a reviewer checks the budgets).
pub(crate) fn strategy(ds: &DaemonSetPlan) -> String {
    let s = &ds.strategy;
    let mut strategy = s.type_.to_string();
    if let (Some(u), Some(m)) = (&s.max_unavailable, &s.max_surge) {
        let _ = write!(strategy, " maxUnavailable={u} maxSurge={m}");
    }
    strategy
}

/// The update strategy with only the budgets that are not zero, as `kubectl get ds` leaves
/// room for: `RollingUpdate maxUnavailable=1` (the table's STRATEGY column). When neither is
/// left and maxUnavailable is set, `maxUnavailable=0` says so.
pub(crate) fn strategy_brief(ds: &DaemonSetPlan) -> String {
    let s = &ds.strategy;
    let mut out = s.type_.to_string();
    fn nonzero(v: &Option<String>) -> Option<&str> {
        v.as_deref().filter(|v| *v != "0" && *v != "0%")
    }
    let surge = nonzero(&s.max_surge);
    match (nonzero(&s.max_unavailable), surge) {
        (Some(u), Some(m)) => write!(out, " maxUnavailable={u} maxSurge={m}"),
        (Some(u), None) => write!(out, " maxUnavailable={u}"),
        (None, Some(m)) => write!(out, " maxSurge={m}"),
        (None, None) if s.max_unavailable.is_some() => write!(out, " maxUnavailable=0"),
        (None, None) => Ok(()),
    }
    .expect("writing to a String cannot fail");
    out
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

/// The record's hold on a DaemonSet, without its label: `no pod is replaced; new nodes still
/// get revision X`, or `nothing is written`.
pub(crate) fn suspension_text(s: &crate::plan::suspend::Suspension, m: Markup) -> String {
    use crate::plan::suspend::Suspension;
    match s {
        Suspension::Paused {
            revision: Some(rev),
        } => format!(
            "new nodes still get revision {}; no pod is replaced ({} continues)",
            (m.code)(rev),
            (m.code)("daemonsync resume")
        ),
        Suspension::Paused { revision: None } => format!(
            "no pod is replaced, and new nodes get none: no stable revision is known ({} \
             continues)",
            (m.code)("daemonsync resume")
        ),
        Suspension::Frozen => format!(
            "nothing is written ({} continues)",
            (m.code)("daemonsync unfreeze")
        ),
    }
}

/// `Paused` or `Frozen`: the label of a hold.
pub(crate) fn suspension_label(s: &crate::plan::suspend::Suspension) -> &'static str {
    match s {
        crate::plan::suspend::Suspension::Paused { .. } => "Paused",
        crate::plan::suspend::Suspension::Frozen => "Frozen",
    }
}

/// `and`-joined names: `a`, `a and b`, `a, b and c`.
fn and_list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// One line per node carrying the DaemonSet's readiness taint, at most `max` of them, then
/// `… and N more`: `new-1: removes readiness taint KEY`, or `new-2: readiness taint KEY goes
/// once demo/agent and kube-system/cni are available`.
pub(crate) fn readiness_lines(ds: &DaemonSetPlan, max: usize, m: Markup) -> Vec<String> {
    let Some(r) = &ds.readiness else {
        return Vec::new();
    };
    let key = (m.code)(&r.key);
    let mut lines: Vec<String> = r
        .nodes
        .iter()
        .take(max)
        .map(|n| {
            let node = (m.code)(&n.node);
            if ds.step.remove_taints.iter().any(|t| t.node == n.node) {
                format!("{node}: removes readiness taint {key}")
            } else if n.waiting_for.is_empty() {
                format!("{node}: readiness taint {key} may go, but nothing is written for this DaemonSet")
            } else {
                let on: Vec<String> = n.waiting_for.iter().map(|d| (m.code)(d)).collect();
                format!(
                    "{node}: readiness taint {key} goes once {} {}",
                    and_list(&on),
                    agree(on.len(), "is available", "are available")
                )
            }
        })
        .collect();
    if r.nodes.len() > max {
        lines.push(format!("… and {}", count(r.nodes.len() - max, "more node")));
    }
    lines
}

/// How the pods of a DaemonSet under `InPlaceIfPossible` take the new revision:
/// `in place (images agent:1 → agent:2, from revision X)`, or `recreate (why)`; an init
/// container's image is marked `(init)`.
pub(crate) fn update_text(ip: &InPlacePlan, m: Markup) -> String {
    match (&ip.recreate_because, &ip.change) {
        (Some(why), _) => format!("recreate ({})", (m.text)(why)),
        (None, Some(Change::Recreate { field })) => {
            format!("recreate ({} changes)", (m.code)(field))
        }
        (None, Some(Change::InPlace { images })) => {
            let mut what = Vec::new();
            if !images.is_empty() {
                let list: Vec<String> = images
                    .iter()
                    .map(|i| {
                        let (from, to) = ((m.code)(&i.from), (m.code)(&i.to));
                        format!("{from} → {to}{}", init_mark(i))
                    })
                    .collect();
                what.push(format!("images {}", list.join(", ")));
            }
            if let Some(rev) = &ip.from_revision {
                what.push(format!("from revision {}", (m.code)(rev)));
            }
            if what.is_empty() {
                "in place".into()
            } else {
                format!("in place ({})", what.join(", "))
            }
        }
        (None, None) => "recreate".into(),
    }
}

/// How far a live DaemonSet is from git: `differs from git in 3 fields` (those listed and
/// those left out).
pub(crate) fn differs_from_git(diff: &LiveDiff) -> String {
    format!(
        "differs from git in {}",
        count(diff.fields.len() + diff.more, "field")
    )
}

/// One side of a field that differs between the live DaemonSet and git: its value, or
/// `(unset)`.
pub(crate) fn field_value(v: &Option<String>, m: Markup) -> String {
    v.as_deref().map_or_else(|| "(unset)".to_string(), m.code)
}

/// True when the step only sets readiness conditions of pods updated in place, pulls images
/// ahead or removes readiness taints: no phase of the reconcile produced it.
pub(crate) fn step_only_gates(step: &Step) -> bool {
    (!step.open_gates.is_empty()
        || !step.pre_pull.is_empty()
        || !step.pre_pull_cleanup.is_empty()
        || !step.remove_taints.is_empty())
        && step.create.is_empty()
        && step.create_stable.is_empty()
        && step.delete.is_empty()
        && step.in_place.is_empty()
}

/// The phase of the reconcile a step comes from: `per-node fixes` or `rolling update`; `None`
/// when it comes from no phase, which each renderer words its own way.
pub(crate) fn step_phase(phase: StepPhase) -> Option<&'static str> {
    match phase {
        StepPhase::Manage => Some("per-node fixes"),
        StepPhase::RollingUpdate => Some("rolling update"),
        StepPhase::None => None,
    }
}

/// A node's reason; for an out-of-date node under `InPlaceIfPossible`, how it is updated; for
/// a node held back by the rollout policy, also what it waits for and, when it needs a pod,
/// which revision it gets meanwhile.
pub(crate) fn node_reason(ds: &DaemonSetPlan, n: &NodeEntry) -> String {
    let mut reason = n.reason.to_string();
    if let Some(u) = &n.update {
        let _ = write!(reason, "; {}", node_update_text(ds, u));
    }
    let (Some(r), Some(place)) = (&ds.rollout, &n.rollout) else {
        return reason;
    };
    let Some(hold) = place.hold else {
        return reason;
    };
    let stage = place.stage.and_then(|k| r.stages.get(k as usize));
    let needs_pod = matches!(n.state, NodeState::Missing | NodeState::Failed);
    if !needs_pod {
        let until = match (hold, stage) {
            (Hold::Stage, Some(s)) => format!("until {}", stage_name(s, PLAIN)),
            (Hold::Stage, None) => "until its stage".into(),
            (Hold::Partition, _) => "by the partition".into(),
            (Hold::Aborted, _) => "where it is: the rollout is aborted".into(),
        };
        return format!("{reason}; held {until}");
    }
    let until = match (hold, stage) {
        (Hold::Stage, Some(s)) if s.kind == StageKind::Wave => {
            format!("until its wave ({})", s.name)
        }
        (Hold::Stage, _) => "until its stage".into(),
        (Hold::Partition, _) => "while the partition holds it".into(),
        (Hold::Aborted, _) => "while the rollout is aborted".into(),
    };
    match (place.gets, &r.stable_revision) {
        (Gets::Stable, Some(rev)) => format!("{reason}; gets the stable revision {rev} {until}"),
        (Gets::Stable, None) => format!("{reason}; gets the stable revision {until}"),
        (Gets::Nothing, _) => {
            format!("{reason}; gets no pod {until}: no stable revision known")
        }
        (Gets::New, _) => format!("{reason}; held {until}"),
    }
}

/// ` (init)` after the image or name of an init container.
fn init_mark(i: &ImageChange) -> &'static str {
    if i.init { " (init)" } else { "" }
}

/// Images a node's line names before it only counts them.
const NODE_IMAGES: usize = 2;

/// How an out-of-date node takes the new revision: `updated in place (agent: agent:1 →
/// agent:2)`, or `recreated: why`.
fn node_update_text(ds: &DaemonSetPlan, u: &NodeUpdate) -> String {
    match u {
        NodeUpdate::Recreate { because } => format!("recreated: {because}"),
        NodeUpdate::InPlace => {
            let images = match ds.in_place.as_ref().and_then(|ip| ip.change.as_ref()) {
                Some(Change::InPlace { images }) => images.as_slice(),
                _ => &[],
            };
            match images.len() {
                0 => "updated in place".into(),
                n if n > NODE_IMAGES => format!("updated in place ({n} images)"),
                _ => {
                    let list: Vec<String> = images
                        .iter()
                        .map(|i| format!("{}{}: {} → {}", i.container, init_mark(i), i.from, i.to))
                        .collect();
                    format!("updated in place ({})", list.join(", "))
                }
            }
        }
    }
}

/// A stage for people: `canary`, `wave topology.kubernetes.io/zone=a` (the wave's name
/// marked up as code).
pub(crate) fn stage_name(s: &Stage, m: Markup) -> String {
    match s.kind {
        StageKind::Canary => "canary".into(),
        StageKind::Wave => format!("wave {}", (m.code)(&s.name)),
    }
}

/// Where the rollout stands: `Canary`, `Wave 2/3`, `Paused (why)`, `Halted (why)`, `Complete`.
pub(crate) fn rollout_phase(r: &Rollout) -> String {
    match (&r.phase, &r.pause) {
        (phase, Some(why)) => format!("{phase} ({why})"),
        (Phase::Halted, None) => "Halted (new pods failed on more nodes than the halt threshold; \
                                  nothing more is replaced until the template changes)"
            .into(),
        (phase, None) => phase.to_string(),
    }
}

/// `since 2026-01-01T00:10:00Z (ProgressDeadlineExceeded): no progress for 10m ...`, after
/// the word *stalled*: what the record's `Stalled` condition says, marked up by `m`.
pub(crate) fn stalled_text(s: &crate::plan::Stalled, m: Markup) -> String {
    let since = s.since.map_or_else(String::new, |t| {
        format!("since {} ", (m.code)(&t.to_string()))
    });
    format!("{since}({}): {}", (m.code)(&s.reason), (m.text)(&s.message))
}

/// `Halt threshold: 1 (the rollout halts when new pods fail on more than 1 node)`.
pub(crate) fn halt_text(r: &Rollout) -> String {
    format!(
        "Halt threshold: {} (the rollout halts when new pods fail on more than {})",
        r.halt_threshold,
        count(r.halt_threshold, "node")
    )
}

/// The rollout's shape in a few words: `canary on 2 nodes, then 3 waves by
/// topology.kubernetes.io/zone`, and what the partition holds.
pub(crate) fn rollout_shape(r: &Rollout) -> String {
    let canary = r.stages.iter().find(|s| s.kind == StageKind::Canary);
    let waves: Vec<&Stage> = r
        .stages
        .iter()
        .filter(|s| s.kind == StageKind::Wave)
        .collect();
    let mut parts = Vec::new();
    if let Some(c) = canary {
        parts.push(format!("canary on {}", count(c.nodes.len(), "node")));
    }
    match waves.as_slice() {
        [] => {}
        [w] if w.name == "all" => parts.push(match canary {
            Some(_) => format!("the other {}", count(w.nodes.len(), "node")),
            None => count(w.nodes.len(), "node"),
        }),
        ws => {
            let key = |s: &Stage| {
                s.name
                    .split_once('=')
                    .map(|(k, _)| k.to_string())
                    .or_else(|| s.name.strip_suffix(" unset").map(str::to_string))
            };
            let first = key(ws[0]);
            let by = match first {
                Some(k) if ws.iter().all(|w| key(w).as_deref() == Some(k.as_str())) => {
                    format!(" by {k}")
                }
                _ => String::new(),
            };
            parts.push(format!("{}{by}", count(ws.len(), "wave")));
        }
    }
    let mut shape = parts.join(", then ");
    if let Some(p) = r.partition.as_ref().filter(|p| !p.nodes.is_empty()) {
        if !shape.is_empty() {
            shape.push_str("; ");
        }
        let _ = write!(shape, "the partition {}", partition_holds(p.nodes.len()));
    }
    shape
}

/// What a partition holding `n` nodes does: `holds 2 nodes on the previous revision`, or
/// `holds no node back`.
pub(crate) fn partition_holds(n: usize) -> String {
    if n == 0 {
        "holds no node back".into()
    } else {
        format!("holds {} on the previous revision", count(n, "node"))
    }
}

/// What held-back nodes that need a pod get meanwhile: the stable revision when one is
/// known, else nothing until their stage.
pub(crate) fn stable_gets(r: &Rollout) -> &'static str {
    if r.stable_revision.is_some() {
        "held-back nodes that need a pod get it"
    } else {
        "held-back nodes that need a pod get none until their stage"
    }
}

/// Where the rollout stands, in a few words for a summary line: `now in the canary`, `paused
/// after the canary until promoted`.
pub(crate) fn rollout_now(r: &Rollout) -> String {
    use crate::plan::progressive::Paused;
    match (&r.phase, &r.pause) {
        (_, Some(Paused::Manual { after })) => {
            format!("paused after the {after} until promoted")
        }
        (_, Some(Paused::Until { after, until })) => {
            format!("paused after the {after} until {until}")
        }
        (_, Some(Paused::Partition { held })) => format!(
            "every stage done; the partition holds {}",
            count(*held, "node")
        ),
        (_, Some(Paused::Record)) => "paused by daemonsync pause".into(),
        (_, Some(Paused::Frozen)) => "frozen by daemonsync freeze".into(),
        (_, Some(Paused::Aborted)) => "aborted".into(),
        (Phase::Canary, None) => "now in the canary".into(),
        (Phase::Wave(k, n), None) => format!("now in wave {k}/{n}"),
        (Phase::Halted, None) => "halted".into(),
        (Phase::Complete, None) => "complete".into(),
        (Phase::Paused, None) => "paused".into(),
    }
}

/// Where a stage stands, from its nodes' states and the projected waves.
pub(crate) enum StageProgress {
    /// Every node of it runs an available pod of the new revision.
    Done,
    /// Still to go: the projected waves of it (0 when it cannot proceed now).
    Waves(usize),
}

pub(crate) fn stage_progress(
    ds: &DaemonSetPlan,
    states: &BTreeMap<&str, NodeState>,
    s: &Stage,
    k: u32,
) -> StageProgress {
    let done = !s.nodes.is_empty()
        && s.nodes
            .iter()
            .all(|n| states.get(&**n) == Some(&NodeState::UpToDate));
    if done {
        StageProgress::Done
    } else {
        StageProgress::Waves(ds.waves.iter().filter(|w| w.stage == Some(k)).count())
    }
}

/// The pause after a stage, when there is one (not after the last, not `0`).
pub(crate) fn pause_after(s: &Stage) -> Option<Pause> {
    s.pause
        .filter(|p| !matches!(p, Pause::For(d) if d.is_zero()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::report::testing::{canary_plan, partition_plan, plan_one, zoned_rollout};

    #[test]
    fn the_shape_names_canary_waves_and_partition() {
        let shape = |p: Plan| rollout_shape(p.daemonsets[0].rollout.as_ref().unwrap());
        assert_eq!(
            shape(canary_plan()),
            "canary on 2 nodes, then 3 waves by topology.kubernetes.io/zone"
        );
        assert_eq!(
            shape(partition_plan()),
            "canary on 2 nodes, then 3 waves by topology.kubernetes.io/zone; the partition \
             holds 2 nodes on the previous revision"
        );
        let (d, o) = zoned_rollout(&[("daemonsync.io/canary", "1")], true);
        assert_eq!(
            shape(plan_one(&d, &o)),
            "canary on 1 node, then the other 11 nodes"
        );
    }
}

//! Progressive delivery: canary nodes, partition, waves by a node label, pauses and the halt
//! threshold, written as `daemonsync.io/` annotations on the DaemonSet in git
//! (docs/progressive.md). The annotations' grammar, the [`RolloutPolicy`] they make, is
//! [`crate::manifest::policy`]'s; this module decides what a policy does.
//!
//! The policy splits the eligible nodes into ordered *stages*: the canary nodes first (if any),
//! then one wave per value of the `waves-by` label (one wave of every other node without it).
//! A stage is unlocked once every earlier stage is complete (each of its nodes runs an
//! available pod of the new revision, or is NotReady itself) and the pause after it has passed:
//! `manual` waits for `daemonsync promote`, a duration waits that long, `0` not at all. The
//! partition keeps the last N nodes of that order on the previous revision whatever the stage.
//!
//! Within the unlocked stages the DaemonSet's own rolling update runs unchanged; every other
//! node is *held*: its pod is left alone, and a node that needs a pod (a node joining, a failed
//! pod replaced) gets the *stable* revision, the one the last complete rollout reached, so no
//! node outside the unlocked stages ever receives the new revision.
//!
//! Pure: where the rollout stands ([`Progress`]) comes in from the record and goes back out
//! as [`Rollout::progress`] for the executor to write; the clock is the plan's `now`.

use crate::model::{Node, Timestamp};
use crate::plan::Name;
use crate::plan::context::{Context, Prepared};
use crate::plan::view::{Held, Slot};
use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::DaemonSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

// The annotations' grammar is the manifest's; these paths stay for the planner's readers.
pub use crate::manifest::policy::{
    ANNOTATION_PREFIX, CANARY, CANARY_PAUSE, CANARY_SELECTOR, Count, HALT_THRESHOLD,
    KNOWN_ANNOTATIONS, PARTITION, PRE_PULL, PRE_PULL_PARALLELISM, Pause, RolloutPolicy,
    UPDATE_STRATEGY, WAVE_ORDER, WAVE_PAUSE, WAVES_BY,
};

/// Record annotation written by `daemonsync promote`: `REVISION:STAGE`, the pauses after
/// stages up to STAGE of that revision may pass.
pub const PROMOTE_ANNOTATION: &str = "daemonsync.io/promote";
/// Record annotation written by `daemonsync abort`: the revision whose rollout stops where
/// it is (a new revision, or `daemonsync resume`, continues).
pub const ABORT_ANNOTATION: &str = "daemonsync.io/abort";

/// Where a rollout stands, as the record keeps it between passes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// The revision rolling out.
    pub revision: String,
    /// The last unlocked stage (0: the first).
    pub stage: u32,
    /// When the pause after `stage` began (a timed pause is measured from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub paused_since: Option<Timestamp>,
}

/// What a managed DaemonSet's record says about its rollout: the planner's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RolloutRecord {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The DaemonSet the last complete rollout reached: nodes held back run its revision.
    /// Shared: every observation holds the records' rollouts.
    pub stable: Option<std::sync::Arc<DaemonSet>>,
    /// Where the rollout stands.
    pub progress: Option<Progress>,
    /// `daemonsync promote`: the revision and the stage up to which pauses may pass.
    pub promoted: Option<(String, u32)>,
    /// `daemonsync abort`: the revision whose rollout holds where it is.
    pub aborted: Option<String>,
    /// `daemonsync pause` (`daemonsync.io/paused: "true"`): no pod is replaced; nodes without
    /// one get the stable revision's.
    pub paused: bool,
    /// `daemonsync freeze` (`daemonsync.io/frozen: "true"`): nothing is written.
    pub frozen: bool,
    /// The record's `Halted` condition.
    pub halted: Option<String>,
    /// The record's DaemonSet, when it names a readiness taint: the plans of other
    /// DaemonSets naming the same key wait for its pods too (`plan::readiness`).
    pub gating: Option<std::sync::Arc<DaemonSet>>,
    /// The record's `Stalled` condition, while it is True.
    pub stalled: Option<super::Stalled>,
}

impl RolloutRecord {
    /// Parses `REVISION:STAGE` from the promote annotation.
    pub fn parse_promote(value: &str) -> Option<(String, u32)> {
        let (rev, stage) = value.rsplit_once(':')?;
        Some((rev.to_string(), stage.parse().ok()?))
    }
}

/// One stage of the rollout.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stage {
    /// `canary`, `wave`.
    pub kind: StageKind,
    /// `canary`; for a wave, `LABEL=VALUE`, `LABEL unset` for the nodes without the label, or
    /// `all` for the single wave of a policy without `waves-by`.
    pub name: String,
    /// Its nodes, in rollout order; the partition's nodes are not among them.
    pub nodes: Vec<Name>,
    /// The pause after it (none after the last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
}

/// What a stage is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StageKind {
    /// The canary nodes.
    Canary,
    /// A wave.
    Wave,
}

/// Where the rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// The canary nodes are being updated.
    Canary,
    /// Waiting: see [`Rollout::pause`].
    Paused,
    /// Wave `k` of `n` (1-based) is being updated.
    Wave(u32, u32),
    /// New pods failed on more nodes than the halt threshold.
    Halted,
    /// Every eligible node runs the new revision.
    Complete,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Phase::Canary => f.write_str("Canary"),
            Phase::Paused => f.write_str("Paused"),
            Phase::Wave(k, n) => write!(f, "Wave {k}/{n}"),
            Phase::Halted => f.write_str("Halted"),
            Phase::Complete => f.write_str("Complete"),
        }
    }
}

impl Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a rollout is paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "reason")]
pub enum Paused {
    /// A manual pause after stage `after`: `daemonsync promote` continues.
    Manual {
        /// The stage that completed (its name).
        after: String,
    },
    /// A timed pause after stage `after`, until `until`.
    Until {
        /// The stage that completed.
        after: String,
        /// When the next stage starts.
        until: Timestamp,
    },
    /// Every stage is done; the partition holds `held` nodes on the previous revision.
    Partition {
        /// How many.
        held: usize,
    },
    /// `daemonsync pause`: no pod is replaced; nodes without one get the stable revision's.
    Record,
    /// `daemonsync freeze`: nothing is written.
    Frozen,
    /// `daemonsync abort`: every node holds where it is.
    Aborted,
}

impl fmt::Display for Paused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Paused::Manual { after } => write!(
                f,
                "manual pause after the {after}: `daemonsync promote` continues"
            ),
            Paused::Until { after, until } => {
                write!(f, "pause after the {after}, until {until}")
            }
            Paused::Partition { held } => write!(
                f,
                "the partition holds {held} node{} on the previous revision; lower {PARTITION} \
                 to continue",
                if *held == 1 { "" } else { "s" }
            ),
            Paused::Record => f.write_str(
                "paused by `daemonsync pause`: no pod is replaced, nodes without one get the \
                 stable revision; `daemonsync resume` continues",
            ),
            Paused::Frozen => f.write_str(
                "frozen by `daemonsync freeze`: nothing is written; `daemonsync unfreeze` continues",
            ),
            Paused::Aborted => f.write_str(
                "aborted: every node holds where it is; a new commit or `daemonsync resume` continues",
            ),
        }
    }
}

/// Why a node is held back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hold {
    /// Its stage is not unlocked yet.
    Stage,
    /// The partition keeps it on the previous revision.
    Partition,
    /// The rollout is aborted.
    Aborted,
}

/// One node's place in the rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRollout {
    /// Its stage (index into [`Rollout::stages`]); `None` for the partition's nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<u32>,
    /// Why it is held back, while it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
    /// What a pod created on it now runs: the new revision, the stable one, or nothing yet
    /// (held, and no stable revision is known).
    pub gets: Gets,
}

/// Which revision a pod created on a node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gets {
    /// The new revision.
    New,
    /// The stable revision (the last complete rollout's).
    Stable,
    /// No pod until its stage: no stable revision is known.
    Nothing,
}

/// The rollout of one DaemonSet under its policy.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// Where it stands.
    pub phase: Phase,
    /// Why it is paused, while it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<Paused>,
    /// The stages in order.
    pub stages: Vec<Stage>,
    /// The last unlocked stage.
    pub stage: u32,
    /// The partition as written, and the nodes it holds (the last of the rollout order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
    /// The revision held-back nodes run (the last complete rollout's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stable_revision: Option<String>,
    /// Nodes whose new pods may fail before the rollout halts.
    pub halt_threshold: usize,
    /// What the record keeps for the next pass.
    pub progress: Progress,
    /// When a timed pause ends (the executor wakes then).
    #[serde(skip)]
    pub wake_at: Option<Timestamp>,
}

/// The partition in plan output.
#[derive(Debug, Clone, Serialize)]
pub struct Partition {
    /// As written.
    pub count: String,
    /// The nodes it keeps on the previous revision.
    pub nodes: Vec<Name>,
}

impl Rollout {
    /// The name of a stage for people: `canary`, `wave zone=a`.
    pub fn stage_label(&self, stage: u32) -> String {
        self.stages
            .get(stage as usize)
            .map_or_else(|| format!("stage {stage}"), |s| label(s.kind, &s.name))
    }
}

/// A stage for people: `canary`, `wave zone=a`.
fn label(kind: StageKind, name: &str) -> String {
    match kind {
        StageKind::Canary => "canary".to_string(),
        StageKind::Wave => format!("wave {name}"),
    }
}

/// The inputs of [`decide`] besides the slots.
pub(crate) struct Inputs<'a> {
    pub policy: &'a RolloutPolicy,
    /// The record, if any.
    pub record: Option<&'a RolloutRecord>,
    /// The stable revision's hash, when its template is known.
    pub stable_revision: Option<&'a str>,
    /// The new revision.
    pub revision: &'a str,
    /// Pass manual pauses (`--auto-promote`).
    pub auto_promote: bool,
    /// The record pauses the rollout (`daemonsync pause`, unless `apply --force`).
    pub paused: bool,
    /// The record freezes the DaemonSet (`daemonsync freeze`).
    pub frozen: bool,
    /// Some node runs a pod of another revision. When none does there is nothing to pace:
    /// every stage is unlocked.
    pub under_way: bool,
    pub now: Timestamp,
}

/// Decides the rollout: the stages, the unlocked ones, the phase, and for every slot what it
/// may receive (`targets`, by slot index). `node_of(slot)` is the slot's node, `name_of` its
/// name.
pub(crate) fn decide<'n>(
    inputs: &Inputs<'_>,
    slots: &[Slot],
    node_of: impl Fn(&Slot) -> Option<&'n Node>,
    name_of: impl Fn(&Slot) -> Name,
) -> (Rollout, Vec<Option<NodeRollout>>) {
    let policy = inputs.policy;
    let eligible: Vec<u32> = (0..slots.len() as u32)
        .filter(|&i| {
            let s = &slots[i as usize];
            s.node.is_some() && s.should_run
        })
        .collect();
    let labels = |i: u32| node_of(&slots[i as usize]).map(|n| &n.labels);
    // Within a stage, nodes already on the new revision come first: the canary stays the
    // nodes that took it, and the partition holds nodes that have not, however nodes join.
    let updated = |i: u32| {
        slots[i as usize]
            .pods
            .iter()
            .any(|p| p.updated && p.is_running())
    };
    // A stable partition (the updated ones, then the others, each in name order): what a
    // stable sort by that one bit gives, in one pass instead of n log n reads of the slots.
    let settled_first = |v: &mut Vec<u32>| {
        let (mut first, rest): (Vec<u32>, Vec<u32>) = v.iter().partition(|&&i| updated(i));
        first.extend(rest);
        *v = first;
    };

    // Stages: canary, then waves, each in name order (slots are in name order).
    let mut defs: Vec<(StageKind, String, Vec<u32>)> = Vec::new();
    let mut in_canary = vec![false; slots.len()];
    if policy.has_canary() {
        let mut pool: Vec<u32> = match &policy.canary_selector {
            Some(sel) => eligible
                .iter()
                .copied()
                .filter(|&i| labels(i).is_some_and(|l| sel.matches(l)))
                .collect(),
            None => eligible.clone(),
        };
        settled_first(&mut pool);
        if let Some(c) = policy.canary {
            pool.truncate(c.ceil(eligible.len()).max(1));
        }
        for &i in &pool {
            in_canary[i as usize] = true;
        }
        if !pool.is_empty() {
            defs.push((StageKind::Canary, "canary".into(), pool));
        }
    }
    let rest: Vec<u32> = eligible
        .iter()
        .copied()
        .filter(|&i| !in_canary[i as usize])
        .collect();
    match &policy.waves_by {
        Some(key) => {
            let mut by_value: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
            let mut unlabelled = Vec::new();
            for &i in &rest {
                match labels(i).and_then(|l| l.get(key)) {
                    Some(v) => by_value.entry(v.as_str()).or_default().push(i),
                    None => unlabelled.push(i),
                }
            }
            for v in &policy.wave_order {
                if let Some(nodes) = by_value.remove(v.as_str()) {
                    defs.push((StageKind::Wave, format!("{key}={v}"), nodes));
                }
            }
            for (v, nodes) in by_value {
                defs.push((StageKind::Wave, format!("{key}={v}"), nodes));
            }
            if !unlabelled.is_empty() {
                defs.push((StageKind::Wave, format!("{key} unset"), unlabelled));
            }
        }
        None if !rest.is_empty() => defs.push((StageKind::Wave, "all".into(), rest)),
        None => {}
    }

    for def in &mut defs {
        settled_first(&mut def.2);
    }
    // The partition keeps the tail of the rollout order on the previous revision: of the
    // nodes not yet on the new revision, only as many move as keep the new revision on at
    // most `eligible - partition` nodes (never more, whatever joins or leaves).
    let held_count = policy.partition.map_or(0, |p| p.floor(eligible.len()));
    let cap = eligible.len() - held_count.min(eligible.len());
    let already = eligible.iter().filter(|&&i| updated(i)).count();
    let mut budget = cap.saturating_sub(already);
    let mut stage_of: Vec<Option<u32>> = vec![None; slots.len()];
    let mut partition_nodes = Vec::new();
    for def in defs.iter_mut() {
        def.2.retain(|&i| {
            if updated(i) {
                true
            } else if budget > 0 {
                budget -= 1;
                true
            } else {
                partition_nodes.push(i);
                false
            }
        });
    }
    defs.retain(|d| !d.2.is_empty());
    for (k, def) in defs.iter().enumerate() {
        for &i in &def.2 {
            stage_of[i as usize] = Some(k as u32);
        }
    }
    let last = defs.len().saturating_sub(1) as u32;
    let pause_after = |k: u32| -> Option<Pause> {
        (k < last).then(|| match defs[k as usize].0 {
            StageKind::Canary => policy.canary_pause,
            StageKind::Wave => policy.wave_pause,
        })
    };

    let done = |i: u32| {
        let s = &slots[i as usize];
        let ready = node_of(s).is_none_or(|n| n.ready != Some(false));
        let current =
            matches!(s.pods.as_slice(), [p] if p.updated && p.is_running() && p.available);
        current || !ready
    };
    let complete = |k: u32| defs[k as usize].2.iter().all(|&i| done(i));

    let record = inputs.record;
    let aborted = record
        .and_then(|r| r.aborted.as_deref())
        .is_some_and(|r| r == inputs.revision);
    let mut progress = record
        .and_then(|r| r.progress.clone())
        .filter(|p| p.revision == inputs.revision)
        .unwrap_or_else(|| Progress {
            revision: inputs.revision.to_string(),
            stage: 0,
            paused_since: None,
        });
    progress.stage = if inputs.under_way {
        progress.stage.min(last)
    } else {
        last
    };
    let promoted_to = record
        .and_then(|r| r.promoted.as_ref())
        .filter(|(rev, _)| rev == inputs.revision)
        .map(|(_, s)| *s);
    let mut gate: Option<Paused> = None;
    let mut wake_at = None;
    while !aborted && progress.stage < last && complete(progress.stage) {
        let k = progress.stage;
        let after = label(defs[k as usize].0, &defs[k as usize].1);
        let pass = match pause_after(k).unwrap_or(Pause::For(SignedDuration::ZERO)) {
            p if p.is_none() => true,
            _ if promoted_to.is_some_and(|s| s >= k) => true,
            Pause::Manual if inputs.auto_promote => true,
            Pause::Manual => {
                gate = Some(Paused::Manual { after });
                false
            }
            Pause::For(d) => {
                let since = *progress.paused_since.get_or_insert(inputs.now);
                let until = crate::model::later(since, d);
                if inputs.now >= until {
                    true
                } else {
                    wake_at = Some(until);
                    gate = Some(Paused::Until { after, until });
                    false
                }
            }
        };
        if !pass {
            break;
        }
        progress.stage += 1;
        progress.paused_since = None;
    }
    if gate.is_none() {
        progress.paused_since = None;
    }

    let stable = inputs.stable_revision.is_some();
    let targets: Vec<Option<NodeRollout>> = (0..slots.len())
        .map(|i| {
            let s = &slots[i];
            if s.node.is_none() || !s.should_run {
                return None;
            }
            let stage = stage_of[i];
            let hold = if aborted {
                Some(Hold::Aborted)
            } else {
                match stage {
                    None => Some(Hold::Partition),
                    Some(k) if k > progress.stage => Some(Hold::Stage),
                    Some(_) => None,
                }
            };
            let gets = match hold {
                None => Gets::New,
                Some(_) if stable => Gets::Stable,
                Some(_) => Gets::Nothing,
            };
            Some(NodeRollout { stage, hold, gets })
        })
        .collect();

    let all_done = eligible.iter().all(|&i| done(i));
    let unlocked_done = (0..=progress.stage).all(|k| defs.is_empty() || complete(k));
    let (phase, pause) = if inputs.frozen {
        (Phase::Paused, Some(Paused::Frozen))
    } else if inputs.paused {
        (Phase::Paused, Some(Paused::Record))
    } else if aborted {
        (Phase::Paused, Some(Paused::Aborted))
    } else if record.is_some_and(|r| r.halted.is_some()) {
        (Phase::Halted, None)
    } else if all_done && partition_nodes.iter().all(|&i| done(i)) {
        (Phase::Complete, None)
    } else if let Some(g) = gate {
        (Phase::Paused, Some(g))
    } else if progress.stage == last && unlocked_done && !partition_nodes.is_empty() {
        (
            Phase::Paused,
            Some(Paused::Partition {
                held: partition_nodes.iter().filter(|&&i| !done(i)).count(),
            }),
        )
    } else {
        match defs.get(progress.stage as usize).map(|d| d.0) {
            Some(StageKind::Canary) => (Phase::Canary, None),
            _ => {
                let waves = defs.iter().filter(|d| d.0 == StageKind::Wave).count() as u32;
                let before = defs
                    .iter()
                    .take(progress.stage as usize + 1)
                    .filter(|d| d.0 == StageKind::Wave)
                    .count() as u32;
                (Phase::Wave(before.max(1), waves.max(1)), None)
            }
        }
    };

    let stages = defs
        .iter()
        .enumerate()
        .map(|(k, (kind, name, nodes))| Stage {
            kind: *kind,
            name: name.clone(),
            nodes: nodes.iter().map(|&i| name_of(&slots[i as usize])).collect(),
            pause: pause_after(k as u32),
        })
        .collect();
    let rollout = Rollout {
        phase,
        pause,
        stages,
        stage: progress.stage,
        partition: policy.partition.map(|p| Partition {
            count: p.to_string(),
            nodes: partition_nodes
                .iter()
                .map(|&i| name_of(&slots[i as usize]))
                .collect(),
        }),
        stable_revision: inputs.stable_revision.map(str::to_string),
        halt_threshold: policy.halt_threshold.map_or(0, |t| t.floor(eligible.len())),
        progress,
        wake_at,
    };
    (rollout, targets)
}

impl Context<'_> {
    /// The rollout policy of a DaemonSet, decided against the slots: marks the held-back
    /// slots and returns the rollout, each slot's place in it, and errors only the cluster
    /// reveals.
    pub(super) fn progressive(
        &self,
        d: &Prepared<'_>,
        slots: &mut [Slot],
        now: Timestamp,
        warnings: &mut Vec<String>,
    ) -> (Option<Rollout>, Vec<Option<NodeRollout>>, Vec<String>) {
        let (spec, annotated) = (&d.spec, &d.annotated);
        let (policy, mut errors) = (annotated.policy.clone(), annotated.errors.clone());
        let record = self.record(&spec.namespace, &spec.name);
        let aborted = record.and_then(|r| r.aborted.as_deref()) == Some(spec.revision.as_str());
        let paces = policy.as_ref().is_some_and(RolloutPolicy::paces);
        if self.manifest_only || (!paces && !aborted) {
            return (None, Vec::new(), errors);
        }
        if !d.rolling {
            warnings.push(
                "the rollout policy annotations are ignored: the update strategy is OnDelete"
                    .into(),
            );
            return (None, Vec::new(), errors);
        }
        let policy = policy.unwrap_or_default();
        if let Some(key) = &policy.waves_by
            && !self
                .observed
                .nodes
                .iter()
                .any(|n| n.labels.contains_key(key))
        {
            errors.push(
                crate::manifest::FieldError::invalid(
                    format!("metadata.annotations[{}]", WAVES_BY),
                    format!("{key:?}"),
                    "no node has this label; name a label the nodes carry, e.g. \
                     \"topology.kubernetes.io/zone\"",
                )
                .to_string(),
            );
        }
        if !errors.is_empty() {
            return (None, Vec::new(), errors);
        }
        // A rollout is under way while some node runs a pod of another revision; otherwise
        // (a first install, a finished rollout) nodes get the new revision at once.
        let under_way = slots.iter().any(|s| {
            s.node.is_some() && s.should_run && s.pods.iter().any(|p| p.is_running() && !p.updated)
        });
        let inputs = Inputs {
            policy: &policy,
            record,
            stable_revision: annotated.stable.as_ref().map(|(_, rev)| rev.as_str()),
            revision: &spec.revision,
            auto_promote: self.auto_promote,
            paused: record.is_some_and(|r| r.paused) && !self.ignore_pause,
            frozen: record.is_some_and(|r| r.frozen),
            under_way,
            now,
        };
        let (rollout, targets) = decide(
            &inputs,
            slots,
            |s| s.node.map(|pos| self.node_at(pos)),
            |s| self.slot_name(s),
        );
        for (slot, t) in slots.iter_mut().zip(&targets) {
            slot.held = match t.map(|t| (t.hold, t.gets)) {
                Some((Some(_), Gets::Stable)) => Held::Stable,
                Some((Some(_), _)) => Held::Wait,
                _ => Held::No,
            };
        }
        (Some(rollout), targets, errors)
    }
}

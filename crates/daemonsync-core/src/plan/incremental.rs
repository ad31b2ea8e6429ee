//! Incremental planning: a change wakes only the DaemonSets it concerns, and planning one
//! re-uses the eligibility of the nodes that did not change. Pure, as the rest of the planner.
//!
//! [`Incremental`] keeps, per desired DaemonSet, its compiled spec, its eligibility on every
//! node (in node-name order) and its last plan. [`Incremental::update`] takes the observation
//! and what changed since the last one ([`Changes`]) and re-plans the DaemonSets it wakes:
//!
//! - a pod: the DaemonSet its controller reference names, every DaemonSet of its namespace
//!   whose selector matches its labels (adoption, and the pods a handover looks at), and the
//!   DaemonSet its pre-pull label names; each version of a changed pod is given (a relabelled
//!   or re-owned pod wakes whom it left as well as whom it joined);
//! - a node: every DaemonSet (every plan lists every node), re-evaluating only that node's
//!   eligibility; a DaemonSet that should not run on the node, before or after, and has no
//!   pod there only has the node's row redone, and is not planned again (a node that
//!   registers not ready, a pool its selector leaves out), unless its plan reads every node
//!   (a readiness taint, waves by a node label);
//! - a DaemonSet of the source: that DaemonSet; one added or removed: itself;
//! - a record or a live `apps/v1` DaemonSet: the DaemonSet of that name;
//! - a namespace's labels or a ControllerRevision: the DaemonSets of that namespace;
//! - what pods request of a node: the DaemonSets whose plan would create a pod there (their
//!   risks weigh what the scheduler has left);
//! - a DaemonSet named for another reason (a deadline): itself.
//!
//! Readiness taints are shared between the DaemonSets naming one key, and with records of
//! other sources (`plan::readiness`): when any DaemonSet naming a readiness taint is woken,
//! or a record or a pod no desired DaemonSet claims changes, every DaemonSet naming a
//! readiness taint is woken and their gates are joined again.
//!
//! The result equals [`plan`](super::plan) of the same input for every DaemonSet (a property
//! test holds it, `plan::incremental::tests`), provided the changes are reported: a change
//! missed leaves a plan stale. A daemon therefore compares the two now and then.
//!
//! Some changes can wait: a pod's change of status alone ([`status_only`]: readiness, restarts,
//! its binding) and a created pod's echo, on DaemonSets that are settled (their last step
//! only created the pods they lacked, their record holds their revision as stable, and
//! nothing in play reads readiness to decide a write). [`Incremental::defer`] takes them out
//! of the changes and names the DaemonSets to wake later; until then those plans keep their
//! counters and reports, and never ask for a write the change would not (a property test
//! holds it).

use super::classify::{is_unoccupied, unoccupied};
use super::context::{Context, NodeOrder};
use super::eligibility::{self, Eligibility};
use super::pods::{PodIndex, RECORD_KIND, is_daemonset_controller};
use super::readiness;
use super::render::PRE_PULL_LABEL;
use super::{DaemonSetPlan, DaemonSetSpec, Desired, Name, Observed, PLAN_API_VERSION, Plan};
use super::{NodeEntry, NodeState, Policy, Timestamp};
use crate::manifest::policy::readiness_taint;
use crate::model::{LabelSelector, Labels, Pod};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// `namespace` and `name` of a DaemonSet.
pub type Key = (String, String);

/// What a pod says about who may care for it: its namespace, the name of its controller, its
/// labels. One per version of a changed pod (before and after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTouch {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The name its controller reference gives, if any.
    pub controller: Option<String>,
    /// `metadata.labels`.
    pub labels: std::sync::Arc<Labels>,
}

impl PodTouch {
    /// What `pod` says.
    pub fn of(pod: &Pod) -> Self {
        PodTouch {
            namespace: pod.namespace.to_string(),
            name: pod.name.clone(),
            controller: pod.controller.as_ref().map(|c| c.name.clone()),
            labels: pod.labels.clone(),
        }
    }
}

/// Whether a pod's change from `before` to `after` is of its status alone: readiness, restarts,
/// waiting reasons, a phase short of finishing (`Pending`, `Running`, `Unknown`), and its
/// binding to the node it was for. Its name, labels, controller, target node, requests, config
/// digests and in-place state are the same, and neither version is terminating or finished:
/// such a change adds no pod to a node and takes none away, changes no pod's revision, and
/// makes none a pod to delete. What it moves is counters, reports and rollout budgets.
pub fn status_only(before: &Pod, after: &Pod) -> bool {
    let alive = |p: &Pod| !p.is_terminating() && !p.phase.is_terminal();
    let bound_as_before = match (&before.node_name, &after.node_name) {
        (a, b) if a == b => true,
        (None, Some(node)) => after.target_node.as_ref() == Some(node),
        _ => false,
    };
    let in_place_alike = match (&before.detail, &after.detail) {
        (None, None) => true,
        (Some(b), Some(a)) => {
            b.containers == a.containers
                && b.init_containers == a.init_containers
                && b.has_gate == a.has_gate
                && b.gate == a.gate
                && b.gate_since == a.gate_since
                && b.image_mismatch == a.image_mismatch
        }
        _ => false,
    };
    // Every field is named, so that a field added to the model is placed on one side: what
    // must stay the same, or status (`_`, some checked above).
    let Pod {
        namespace,
        name,
        labels,
        controller,
        node_name: _,
        target_node,
        phase: _,
        creation_timestamp,
        deletion_timestamp: _,
        ready: _,
        waiting_reason: _,
        signals: _,
        requests,
        detail: _,
        config,
    } = before;
    alive(before)
        && alive(after)
        && bound_as_before
        && in_place_alike
        && *name == after.name
        && *namespace == after.namespace
        && (Arc::ptr_eq(labels, &after.labels) || *labels == after.labels)
        && *controller == after.controller
        && *target_node == after.target_node
        && *creation_timestamp == after.creation_timestamp
        && *requests == after.requests
        && *config == after.config
}

/// What changed since the last [`Incremental::update`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Re-plan everything (the first observation, a relist, a timer).
    pub everything: bool,
    /// Pods created, changed or deleted: each version of each.
    pub pods: Vec<PodTouch>,
    /// Pods whose status alone changed ([`status_only`]: readiness, restarts, a phase short of
    /// finishing, the binding to the node they were for), and pods this client created
    /// appearing ([`Changes::note_echo`]): they wake whom [`Changes::pods`] would, unless
    /// [`Incremental::defer`] leaves them for later.
    pub statuses: Vec<PodTouch>,
    /// Nodes added, changed or removed, by name.
    pub nodes: BTreeSet<String>,
    /// DaemonSets of the source that changed (added and removed ones are found without).
    pub daemonsets: BTreeSet<Key>,
    /// Records and live `apps/v1` DaemonSets that changed, by namespace and name.
    pub records: BTreeSet<Key>,
    /// Namespaces whose labels, or whose ControllerRevisions, changed.
    pub namespaces: BTreeSet<String>,
    /// Nodes whose pods' requests, or whose allocatable resources, changed (what the
    /// scheduler has left there): the DaemonSets that would create a pod there, whose risks
    /// weigh it.
    pub usage: BTreeSet<String>,
    /// Nodes whose images alone changed (`status.images`, which a kubelet reports as it
    /// pulls): only a pre-pull reads them, so they wake the DaemonSets that name one.
    pub images: BTreeSet<String>,
    /// DaemonSets to re-plan for another reason (a deadline passed, their config copies
    /// changed, a write to retry).
    pub wake: BTreeSet<Key>,
}

impl Changes {
    /// Everything changed.
    pub fn everything() -> Self {
        Changes {
            everything: true,
            ..Changes::default()
        }
    }

    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == Changes::default()
    }

    /// Notes a change of a pod: `before` and `after` are its versions (`None`: absent). A
    /// change of its status alone is noted once, in [`Changes::statuses`]; any other, each
    /// version in [`Changes::pods`].
    pub fn note_pod(&mut self, before: Option<&Pod>, after: Option<&Pod>) {
        match (before, after) {
            (Some(b), Some(a)) if status_only(b, a) => self.statuses.push(PodTouch::of(a)),
            _ => self
                .pods
                .extend(before.into_iter().chain(after).map(PodTouch::of)),
        }
    }

    /// Notes a change of the node `name`: `before` and `after` are its versions (`None`:
    /// absent). A change of what the planner reads of every node (labels, taints, readiness,
    /// a node added or removed) is noted in [`Changes::nodes`], which wakes every DaemonSet;
    /// a change of its allocatable resources or of what its pods request alone in
    /// [`Changes::usage`] (risks weigh it where a pod would be created); of its images alone
    /// in [`Changes::images`] (pre-pulls read them). Nothing is noted when nothing changed.
    pub fn note_node(
        &mut self,
        name: &str,
        before: Option<&crate::model::Node>,
        after: Option<&crate::model::Node>,
    ) {
        let (b, a) = match (before, after) {
            (Some(b), Some(a)) => (b, a),
            (None, None) => return,
            _ => {
                self.nodes.insert(name.to_string());
                return;
            }
        };
        // Every field is named, so that a field added to the model is placed: what every
        // plan reads of the node, or one of the fields noted apart below.
        let crate::model::Node {
            name: node_name,
            labels,
            taints,
            ready,
            unschedulable,
            images,
            allocatable,
            requested,
        } = b;
        let same_otherwise = *node_name == a.name
            && *labels == a.labels
            && *taints == a.taints
            && *ready == a.ready
            && *unschedulable == a.unschedulable;
        if !same_otherwise {
            self.nodes.insert(name.to_string());
            return;
        }
        if *allocatable != a.allocatable || *requested != a.requested {
            self.usage.insert(name.to_string());
        }
        if *images != a.images {
            self.images.insert(name.to_string());
        }
    }

    /// Notes the first appearance of a pod this client created (its echo): the plan whose
    /// step created it counted on it, so, as a change of status, it moves what the next plan
    /// counts and takes a create out of its step, but asks for no write (noted in
    /// [`Changes::statuses`]).
    pub fn note_echo(&mut self, pod: &Pod) {
        self.statuses.push(PodTouch::of(pod));
    }

    /// The pod `namespace`/`name` this client created had appeared before its create was
    /// answered: its first appearance, noted as a change, is its echo after all
    /// ([`Changes::note_echo`]). False when it is not among these changes.
    pub fn echoed(&mut self, namespace: &str, name: &str) -> bool {
        let Some(i) = self
            .pods
            .iter()
            .position(|t| t.namespace == namespace && t.name == name)
        else {
            return false;
        };
        let touch = self.pods.remove(i);
        self.statuses.push(touch);
        true
    }

    /// Adds `other`'s changes to these.
    pub fn merge(&mut self, other: Changes) {
        self.everything |= other.everything;
        self.pods.extend(other.pods);
        self.statuses.extend(other.statuses);
        self.nodes.extend(other.nodes);
        self.daemonsets.extend(other.daemonsets);
        self.records.extend(other.records);
        self.namespaces.extend(other.namespaces);
        self.usage.extend(other.usage);
        self.images.extend(other.images);
        self.wake.extend(other.wake);
    }
}

/// What is kept of one desired DaemonSet between updates.
struct Entry {
    /// Its spec, compiled from the desired DaemonSet alone (what eligibility reads).
    spec: DaemonSetSpec,
    /// Its eligibility on every node, in the kept node order.
    eligibility: Arc<[Eligibility]>,
    /// It names a readiness taint.
    gated: bool,
    /// Its plan reads nodes it does not run on ([`reads_every_node`]).
    every_node: bool,
    /// The nodes where its plan would create a pod (missing or out of date): what the
    /// scheduler has left there weighs in its risks.
    creates_on: BTreeSet<Name>,
    /// Its last plan.
    plan: DaemonSetPlan,
    /// Its record holds it as the stable DaemonSet ([`completed`]).
    completed: bool,
    /// A change of a pod's status alone cannot change what its plan writes ([`settles`]).
    settled: bool,
}

/// Whether the record of `desired` holds it as the stable DaemonSet: a rollout of it completed
/// before. Until then a pod turning ready may complete it, which the record notes as it
/// happens (the next rollout holds nodes back on it), so it is not [settled](settles).
fn completed(ctx: &Context<'_>, desired: &Desired, plan: &DaemonSetPlan) -> bool {
    ctx.record(&plan.namespace, &plan.name)
        .and_then(|r| r.stable.as_ref())
        .is_some_and(|stable| **stable == desired.daemonset)
}

/// Whether a change of a pod's status alone ([`status_only`]) cannot change what the plan of a
/// DaemonSet that last planned as `plan` writes: it names no readiness taint (whose gates wait
/// for pods to be ready), follows no in-place update, pre-pull or handover, is neither
/// suspended nor stalled, its rollout policy (if any) has unlocked its last stage and holds no
/// node (no pause, no partition), and every node runs its current revision or nothing (up to
/// date, unavailable, missing, or not for it), so the step creates pods of the current
/// revision on every node missing one (none left for a later step by
/// [`BURST_REPLICAS`](super::BURST_REPLICAS)) and does nothing else. Readiness then moves its
/// counters and reports only: there is no old pod a budget would let go, no surge to clean up,
/// no failed or duplicate pod to delete, no stage to unlock, and the nodes it creates on stay
/// the same — or lose the node whose created pod appeared.
fn settles(plan: &DaemonSetPlan, gated: bool) -> bool {
    let step = &plan.step;
    let mut missing = 0;
    let finished = |r: &super::Rollout| {
        r.pause.is_none()
            && r.partition.is_none()
            && match r.phase {
                super::Phase::Complete => true,
                super::Phase::Canary | super::Phase::Wave(..) => {
                    r.stage as usize + 1 >= r.stages.len()
                }
                super::Phase::Paused | super::Phase::Halted => false,
            }
    };
    !gated
        && plan.rollout.as_ref().is_none_or(finished)
        && plan.in_place.is_none()
        && plan.pre_pull.is_none()
        && plan.readiness.is_none()
        && plan.suspended.is_none()
        && plan.stalled.is_none()
        && plan.errors.is_empty()
        && plan.ownership.is_plain()
        && step.create_stable.is_empty()
        && step.delete.is_empty()
        && step.in_place.is_empty()
        && step.open_gates.is_empty()
        && step.pre_pull.is_empty()
        && step.pre_pull_cleanup.is_empty()
        && step.remove_taints.is_empty()
        && plan.nodes.iter().all(|row| {
            missing += usize::from(row.state == NodeState::Missing);
            matches!(
                row.state,
                NodeState::UpToDate
                    | NodeState::Unavailable
                    | NodeState::Missing
                    | NodeState::Blocked
                    | NodeState::Ineligible
            ) && row
                .rollout
                .as_ref()
                .is_none_or(|r| r.hold.is_none() && r.gets == super::progressive::Gets::New)
        })
        && missing == step.create.len()
}

/// Whether the plan of `d` reads nodes it should not run on and has no pod on: it names a
/// readiness taint (its gates are joined over every node), or its rollout waves by a node
/// label (which is an error while no node carries it, whichever nodes the DaemonSet runs on).
/// A change of such a node alone changes nothing else of any other plan: a rollout's stages,
/// partition, thresholds and budgets count the nodes a DaemonSet should run on.
fn reads_every_node(d: &Desired) -> bool {
    readiness_taint(&d.daemonset).is_some()
        || d.daemonset
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(crate::manifest::policy::WAVES_BY))
}

/// What an update does for one woken DaemonSet.
enum Work<'e> {
    /// Plan it (re-using its kept entry, if any).
    Plan(Option<&'e Entry>),
    /// Only nodes it does not run on changed, and none holds a pod of it: its last plan with
    /// these rows of the changed nodes still in the cluster.
    Rows(&'e Entry, Vec<NodeEntry>),
}

impl Entry {
    /// The new rows of the `changed` nodes (`None`: gone from the cluster), when they are all
    /// this DaemonSet's plan needs: each is, and was, a node it should not run on, and none
    /// holds a pod of it — such a node counts in no status, step, wave, risk or stage of a
    /// rollout. `None` when it must be planned again (also when its plan reads every node,
    /// [`reads_every_node`]).
    fn rows_only(
        &self,
        changed: &[(&str, Option<&crate::model::Node>)],
        policy: &Policy,
    ) -> Option<Vec<NodeEntry>> {
        if self.every_node {
            return None;
        }
        let gone = &self.plan.nodes[self.plan.observed_rows().len()..];
        let mut new = Vec::new();
        for &(name, node) in changed {
            match self.plan.row(name) {
                Some(row) if !is_unoccupied(row) => return None,
                Some(_) => {}
                // A pod of it on a node the cluster did not have, which it now may.
                None if gone.iter().any(|r| &*r.node == name) => return None,
                None => {}
            }
            if let Some(node) = node {
                let why = eligibility::evaluate(&self.spec, node, policy).reason?;
                let (state, reason) = unoccupied(why);
                new.push(NodeEntry {
                    node: Name::from(name),
                    state,
                    reason,
                    rollout: None,
                    update: None,
                });
            }
        }
        Some(new)
    }
}

/// `plan` with the rows of the `changed` nodes replaced by `new`, in name order: the kept
/// rows and the new ones merged in one pass, however many nodes changed.
fn with_rows(
    plan: &DaemonSetPlan,
    changed: &BTreeSet<String>,
    mut new: Vec<NodeEntry>,
) -> DaemonSetPlan {
    let observed = plan.observed_rows();
    new.sort_by(|a, b| a.node.cmp(&b.node));
    let mut new = new.into_iter().peekable();
    let mut rows: Vec<NodeEntry> = Vec::with_capacity(plan.nodes.len() + new.len());
    for kept in observed.iter().filter(|r| !changed.contains(&*r.node)) {
        while let Some(row) = new.next_if(|r| r.node < kept.node) {
            rows.push(row);
        }
        rows.push(kept.clone());
    }
    rows.extend(new);
    rows.extend(plan.nodes[observed.len()..].iter().cloned());
    DaemonSetPlan {
        nodes: rows.into(),
        ..plan.clone()
    }
}

/// One DaemonSet re-planned, before the readiness gates are joined.
struct Planned {
    kept: Kept,
    plan: DaemonSetPlan,
    gate: Option<readiness::Gate>,
}

/// What a re-planned DaemonSet's [`Entry`] keeps besides its plan.
struct Kept {
    spec: DaemonSetSpec,
    eligibility: Arc<[Eligibility]>,
    gated: bool,
    every_node: bool,
    completed: bool,
}

/// One DaemonSet whose changed nodes' rows alone were brought up to date ([`Work::Rows`]).
struct Rows {
    eligibility: Arc<[Eligibility]>,
    plan: DaemonSetPlan,
}

/// What an update did for one woken DaemonSet.
enum Done {
    Planned(Box<Planned>),
    Rows(Box<Rows>),
}

/// The planner's state between changes: per desired DaemonSet what can be re-used, and its
/// last plan.
pub struct Incremental {
    policy: Policy,
    /// The last update's nodes in name order (where each node's eligibility is kept), re-used
    /// while their names stay the same.
    order: Option<Arc<NodeOrder>>,
    /// The names `order` was last found to index ([`crate::model::Nodes::names_seen`]): an
    /// observation whose list still has them (its nodes changed in place, if at all) is
    /// indexed by it without comparing 5,000 names.
    indexed: crate::model::NodesSeen,
    entries: BTreeMap<Key, Entry>,
    /// No update yet: the first one plans everything.
    fresh: bool,
}

/// What one update did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Woken {
    /// The DaemonSets re-planned.
    pub daemonsets: BTreeSet<Key>,
    /// The DaemonSets dropped: no longer desired.
    pub removed: BTreeSet<Key>,
}

/// A DaemonSet whose incremental plan is not its full plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Namespace and name.
    pub daemonset: Key,
    /// The top-level fields of its plan (in its JSON form) that differ; `plan` when only one
    /// side has it.
    pub fields: Vec<String>,
}

/// The pods the plans of some DaemonSets can read: what an observation for planning only
/// those needs to hold ([`Incremental::scope`]). Planning a DaemonSet of the scope from an
/// observation holding only the pods it [`concerns`](Scope::concerns) gives the plan the whole
/// observation gives (a property test holds it), so a daemon woken for one DaemonSet reads
/// that DaemonSet's pods, not the fleet's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    /// Every pod: a first plan, a re-plan of everything, a readiness gate (gates join the
    /// DaemonSets naming a key, and the records of other sources).
    pub everything: bool,
    /// The DaemonSets planned, by namespace: name and compiled selector.
    planned: BTreeMap<String, BTreeMap<String, Option<LabelSelector>>>,
    /// Every desired DaemonSet, names by namespace: a managed pod whose record is none of
    /// them is an orphan, which an assessment prunes.
    desired: BTreeMap<String, BTreeSet<String>>,
}

impl Scope {
    /// Every pod.
    pub fn everything() -> Self {
        Scope {
            everything: true,
            ..Scope::default()
        }
    }

    /// The namespaces and names of the DaemonSets planned.
    pub fn planned(&self) -> impl Iterator<Item = (&str, &str)> {
        self.planned
            .iter()
            .flat_map(|(ns, v)| v.keys().map(move |n| (ns.as_str(), n.as_str())))
    }

    /// Whether a desired DaemonSet has this namespace and name.
    pub fn is_desired(&self, namespace: &str, name: &str) -> bool {
        self.desired
            .get(namespace)
            .is_some_and(|names| names.contains(name))
    }

    /// Whether planning (and assessing) the DaemonSets of the scope may read `pod`: one its
    /// controller reference names by name (theirs, or the built-in controller's of the same
    /// name), one naming one as its pre-pull DaemonSet, one without a controller or of the
    /// built-in controller that a selector matches (adoption, overlap), every terminating pod
    /// (the resources it frees), and a managed pod whose record no desired DaemonSet has (an
    /// orphan to prune).
    pub fn concerns(&self, pod: &Pod) -> bool {
        if self.everything || pod.is_terminating() {
            return true;
        }
        if let Some(c) = &pod.controller
            && c.kind == RECORD_KIND
            && !self.is_desired(&pod.namespace, &c.name)
        {
            return true;
        }
        let Some(planned) = self.planned.get(&*pod.namespace) else {
            return false;
        };
        if pod
            .controller
            .as_ref()
            .is_some_and(|c| planned.contains_key(&c.name))
            || pod
                .labels
                .get(PRE_PULL_LABEL)
                .is_some_and(|ds| planned.contains_key(ds))
        {
            return true;
        }
        selectable(pod) && self.selects(&pod.namespace, &pod.labels)
    }

    /// Whether the selector of a DaemonSet of the scope planned in `namespace` matches
    /// `labels`: a [`selectable`] pod so labelled is one the scope concerns.
    pub fn selects(&self, namespace: &str, labels: &Labels) -> bool {
        self.planned.get(namespace).is_some_and(|planned| {
            planned
                .values()
                .any(|selector| selector.as_ref().is_some_and(|s| s.matches(labels)))
        })
    }
}

/// Whether a DaemonSet's selector may claim `pod` (adopt it, or overlap the built-in
/// controller's): it has no controller, or the built-in controller is its controller.
pub fn selectable(pod: &Pod) -> bool {
    pod.controller
        .as_ref()
        .is_none_or(|c| c.kind == "DaemonSet" && is_daemonset_controller(c))
}

/// Whether a desired DaemonSet has a `daemonsync.io/pre-pull` annotation (whatever its
/// value): its plan may read nodes' images.
fn names_pre_pull(d: &Desired) -> bool {
    d.daemonset
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(crate::manifest::policy::PRE_PULL))
}

/// The key of a desired DaemonSet, as its compiled spec has it.
fn key_of(d: &Desired) -> Key {
    d.key()
}

impl Incremental {
    /// An empty state planning with `policy`; the first [`update`](Self::update) plans
    /// everything.
    pub fn new(policy: Policy) -> Self {
        Incremental {
            policy,
            order: None,
            indexed: crate::model::NodesSeen::default(),
            entries: BTreeMap::new(),
            fresh: true,
        }
    }

    /// The policy plans are made with.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The DaemonSets `changes` wake, among `desired` (new ones included).
    pub fn woken(&self, desired: &[Desired], changes: &Changes) -> BTreeSet<Key> {
        let keys: Vec<Key> = desired.iter().map(key_of).collect();
        if self.fresh || changes.everything || !changes.nodes.is_empty() {
            return keys.into_iter().collect();
        }
        let mut woken: BTreeSet<Key> = BTreeSet::new();
        for key in &keys {
            if !self.entries.contains_key(key) || changes.daemonsets.contains(key) {
                woken.insert(key.clone());
            }
        }
        let desired_keys: BTreeSet<&Key> = keys.iter().collect();
        // A record or a live DaemonSet: the DaemonSet of its name; a namespace: its own.
        woken.extend(
            changes
                .records
                .iter()
                .chain(&changes.wake)
                .filter(|k| desired_keys.contains(k))
                .cloned(),
        );
        // What pods request of a node: the DaemonSets that would create a pod there.
        if !changes.usage.is_empty() {
            woken.extend(
                self.entries
                    .iter()
                    .filter(|(_, e)| {
                        changes
                            .usage
                            .iter()
                            .any(|n| e.creates_on.contains(n.as_str()))
                    })
                    .map(|(k, _)| k.clone())
                    .filter(|k| desired_keys.contains(k)),
            );
        }
        woken.extend(
            keys.iter()
                .filter(|(ns, _)| changes.namespaces.contains(ns))
                .cloned(),
        );
        // A node's images: the DaemonSets that pull theirs ahead.
        if !changes.images.is_empty() {
            woken.extend(
                desired
                    .iter()
                    .zip(&keys)
                    .filter(|(d, _)| names_pre_pull(d))
                    .map(|(_, k)| k.clone()),
            );
        }
        // A pod: its controller, the selectors it matches, its pre-pull label.
        let mut unclaimed = false;
        for touch in changes.pods.iter().chain(&changes.statuses) {
            let before = woken.len();
            let named = self.claimants(touch, &desired_keys, &mut woken);
            unclaimed |= !named && woken.len() == before;
        }
        // Readiness taints join every DaemonSet naming one, and the records of other
        // sources that do.
        let gated: Vec<&Key> = desired
            .iter()
            .zip(&keys)
            .filter(|(d, _)| readiness_taint(&d.daemonset).is_some())
            .map(|(_, k)| k)
            .collect();
        let was_gated = self
            .entries
            .iter()
            .any(|(k, e)| e.gated && woken.contains(k));
        if !gated.is_empty()
            && (was_gated
                || unclaimed
                || !changes.records.is_empty()
                || gated.iter().any(|k| woken.contains(*k)))
        {
            woken.extend(gated.into_iter().cloned());
        }
        woken
    }

    /// Adds to `out` the desired DaemonSets (of `desired_keys`) a pod so touched concerns: the
    /// one its controller reference names, the one its pre-pull label names, those whose
    /// selector matches its labels. False when there is none.
    fn claimants(
        &self,
        touch: &PodTouch,
        desired_keys: &BTreeSet<&Key>,
        out: &mut BTreeSet<Key>,
    ) -> bool {
        let mut named = false;
        for name in touch
            .controller
            .iter()
            .chain(touch.labels.get(PRE_PULL_LABEL))
        {
            let key = (touch.namespace.clone(), name.clone());
            if desired_keys.contains(&key) {
                named = true;
                out.insert(key);
            }
        }
        for (key, entry) in self
            .entries
            .range((touch.namespace.clone(), String::new())..)
        {
            if key.0 != touch.namespace {
                break;
            }
            if desired_keys.contains(key)
                && entry
                    .spec
                    .selector
                    .as_ref()
                    .is_some_and(|s| s.matches(&touch.labels))
            {
                named = true;
                out.insert(key.clone());
            }
        }
        named
    }

    /// Takes out of `changes` what cannot change what any DaemonSet writes now, and returns
    /// the DaemonSets it concerns, to be woken later: the pods whose status alone changed
    /// ([`Changes::statuses`]) that only settled DaemonSets claim (see the module's summary),
    /// and what pods request of nodes where only settled DaemonSets would create a pod (it
    /// weighs in their risks alone). Their plans keep their counters and reports until they
    /// are woken: a daemon wakes them soon after, as it writes their status. Nothing is
    /// deferred on the first update or a re-plan of everything, and a DaemonSet the remaining
    /// changes wake is planned now and not returned.
    pub fn defer(&self, desired: &[Desired], changes: &mut Changes) -> BTreeSet<Key> {
        let mut later = BTreeSet::new();
        if self.fresh || changes.everything {
            return later;
        }
        let keys: Vec<Key> = desired.iter().map(key_of).collect();
        let desired_keys: BTreeSet<&Key> = keys.iter().collect();
        let settled = |k: &Key| {
            !changes.daemonsets.contains(k) && self.entries.get(k).is_some_and(|e| e.settled)
        };
        let mut kept = Vec::new();
        for touch in std::mem::take(&mut changes.statuses) {
            let mut claimants = BTreeSet::new();
            if self.claimants(&touch, &desired_keys, &mut claimants)
                && claimants.iter().all(settled)
            {
                later.extend(claimants);
            } else {
                kept.push(touch);
            }
        }
        changes.statuses = kept;
        let mut usage = BTreeSet::new();
        for node in std::mem::take(&mut changes.usage) {
            let creating: Vec<&Key> = self
                .entries
                .iter()
                .filter(|(k, e)| desired_keys.contains(k) && e.creates_on.contains(node.as_str()))
                .map(|(k, _)| k)
                .collect();
            if creating.iter().all(|k| settled(k)) {
                later.extend(creating.into_iter().cloned());
            } else {
                usage.insert(node);
            }
        }
        changes.usage = usage;
        if !later.is_empty() {
            let woken = self.woken(desired, changes);
            later.retain(|k| !woken.contains(k));
        }
        later
    }

    /// The pods planning the DaemonSets `woken` (of `desired`) reads: everything for the first
    /// update, when one of them names a readiness taint, or when every DaemonSet is woken (a
    /// node changed): then the pods the scope would pick are nearly all there are, and
    /// taking every pod costs less than picking them.
    pub fn scope(&self, desired: &[Desired], woken: &BTreeSet<Key>) -> Scope {
        let gated = desired
            .iter()
            .any(|d| woken.contains(&key_of(d)) && readiness_taint(&d.daemonset).is_some());
        let all = desired.iter().all(|d| woken.contains(&key_of(d)));
        if self.fresh || gated || (all && !desired.is_empty()) {
            return Scope::everything();
        }
        let mut scope = Scope::default();
        for (ns, name) in desired.iter().map(key_of) {
            scope.desired.entry(ns).or_default().insert(name);
        }
        for d in desired {
            let key = key_of(d);
            if !woken.contains(&key) {
                continue;
            }
            let selector = d
                .daemonset
                .spec
                .as_ref()
                .and_then(|s| LabelSelector::from_k8s(&s.selector));
            scope
                .planned
                .entry(key.0)
                .or_default()
                .insert(key.1, selector);
        }
        scope
    }

    /// Of the DaemonSets `woken` (among `desired`), those only changed nodes woke and whose
    /// plans only need those nodes' rows ([`Entry::rows_only`]), with the new rows: `changed`
    /// gives each changed node as the cluster has it now (`None`: gone).
    fn rows_alone(
        &self,
        desired: &[Desired],
        changes: &Changes,
        woken: &BTreeSet<Key>,
        changed: &[(&str, Option<&crate::model::Node>)],
    ) -> BTreeMap<Key, Vec<NodeEntry>> {
        if self.fresh || changes.everything || changes.nodes.is_empty() {
            return BTreeMap::new();
        }
        let others = Changes {
            nodes: BTreeSet::new(),
            ..changes.clone()
        };
        let otherwise = self.woken(desired, &others);
        woken
            .difference(&otherwise)
            .filter(|k| !changes.daemonsets.contains(*k))
            .filter_map(|k| {
                let rows = self.entries.get(k)?.rows_only(changed, &self.policy)?;
                Some((k.clone(), rows))
            })
            .collect()
    }

    /// The DaemonSets of `woken` (among `desired`) whose pods planning them reads, when the
    /// nodes are `nodes`: all but those whose changed nodes' rows are all their plans need
    /// (a node registering not ready, a pool their selector leaves out). What an observation
    /// for [`update`](Self::update) must hold is the [`scope`](Self::scope) of these: the
    /// others are brought up to date without reading a pod.
    pub fn needing_pods(
        &self,
        desired: &[Desired],
        changes: &Changes,
        woken: &BTreeSet<Key>,
        nodes: &[crate::model::Node],
    ) -> BTreeSet<Key> {
        // One walk of the nodes, however many changed (a pool relabelled at once).
        let found: BTreeMap<&str, &crate::model::Node> = nodes
            .iter()
            .filter(|n| changes.nodes.contains(&n.name))
            .map(|n| (n.name.as_str(), n))
            .collect();
        let changed: Vec<(&str, Option<&crate::model::Node>)> = changes
            .nodes
            .iter()
            .map(|n| (n.as_str(), found.get(n.as_str()).copied()))
            .collect();
        let rows = self.rows_alone(desired, changes, woken, &changed);
        woken
            .iter()
            .filter(|k| !rows.contains_key(*k))
            .cloned()
            .collect()
    }

    /// Plans the DaemonSets `changes` wake against `observed` at `now`, re-using what the
    /// others and the unchanged nodes allow; forgets the DaemonSets no longer desired.
    pub fn update(
        &mut self,
        desired: &[Desired],
        observed: &Observed,
        changes: &Changes,
        now: Timestamp,
    ) -> Woken {
        let woken = self.woken(desired, changes);
        let wanted: BTreeSet<Key> = desired.iter().map(key_of).collect();
        let removed: BTreeSet<Key> = self
            .entries
            .keys()
            .filter(|k| !wanted.contains(*k))
            .cloned()
            .collect();
        for k in &removed {
            self.entries.remove(k);
        }
        // The nodes' order is kept while their names stay the same.
        let last = self.order.take();
        let order = match &last {
            Some(o) if self.indexed.is(&observed.nodes) || o.indexes(&observed.nodes) => {
                Arc::clone(o)
            }
            _ => Arc::new(NodeOrder::of(&observed.nodes)),
        };
        self.indexed = observed.nodes.names_seen();
        let same_nodes = last.as_ref().is_some_and(|o| Arc::ptr_eq(o, &order));
        self.order = Some(Arc::clone(&order));
        let mut ctx = Context::with_nodes(observed, order);
        ctx.auto_promote = self.policy.auto_promote;
        ctx.ignore_pause = self.policy.ignore_pause;
        ctx.leave_out_waves = self.policy.leave_out_waves;
        if woken.is_empty() {
            self.fresh = false;
            return Woken {
                daemonsets: woken,
                removed,
            };
        }
        // Where each node was in the last update's order (`None`: new, or changed).
        let full = self.fresh || changes.everything;
        let sorted = || {
            ctx.nodes
                .order
                .iter()
                .map(|&i| &ctx.nodes.names[i as usize])
        };
        let previous: Vec<Option<usize>> = match &last {
            _ if full => vec![None; ctx.nodes.order.len()],
            _ if same_nodes => sorted()
                .enumerate()
                .map(|(i, n)| (!changes.nodes.contains(&**n)).then_some(i))
                .collect(),
            Some(last) => ctx
                .nodes
                .positions_in(last)
                .into_iter()
                .zip(sorted())
                .map(|(p, n)| {
                    p.map(|p| p as usize)
                        .filter(|_| !changes.nodes.contains(&**n))
                })
                .collect(),
            None => vec![None; ctx.nodes.order.len()],
        };
        // The same nodes, none changed: each kept eligibility row is re-used as it is (its
        // length is checked too: a row kept from before the nodes last changed is rebuilt).
        let unchanged = same_nodes && previous.iter().all(Option::is_some);
        let changed: Vec<(&str, Option<&crate::model::Node>)> = changes
            .nodes
            .iter()
            .map(|n| {
                let node = ctx.nodes.position.get(n.as_str()).map(|&p| ctx.node_at(p));
                (n.as_str(), node)
            })
            .collect();
        let mut rows = if full {
            BTreeMap::new()
        } else {
            self.rows_alone(desired, changes, &woken, &changed)
        };
        let policy = &self.policy;
        let work: Vec<(&Desired, Work)> = desired
            .iter()
            .filter(|d| woken.contains(&key_of(d)))
            .map(|d| {
                let key = key_of(d);
                if let Some(new) = rows.remove(&key) {
                    return (d, Work::Rows(&self.entries[&key], new));
                }
                let reuse = !full && !changes.daemonsets.contains(&key);
                (d, Work::Plan(self.entries.get(&key).filter(|_| reuse)))
            })
            .collect();
        if work.iter().any(|(_, w)| matches!(w, Work::Plan(_))) {
            ctx.pods = PodIndex::new(&observed.pods, &ctx.nodes);
        }
        let ctx = &ctx;
        // A kept eligibility row, brought up to the nodes as they are now.
        let kept_row = |e: &Entry| -> Arc<[Eligibility]> {
            if unchanged && e.eligibility.len() == previous.len() {
                return Arc::clone(&e.eligibility);
            }
            let mut last = None;
            ctx.nodes
                .order
                .iter()
                .zip(&previous)
                .map(|(&i, prev)| match prev.and_then(|p| e.eligibility.get(p)) {
                    Some(el) => el.clone(),
                    None => eligibility::evaluate_shared(
                        &e.spec,
                        &ctx.observed.nodes[i as usize],
                        policy,
                        &mut last,
                    ),
                })
                .collect()
        };
        let planned: Vec<Done> = work
            .into_par_iter()
            .map(|(d, work)| {
                let kept = match work {
                    Work::Rows(e, rows) => {
                        return Done::Rows(Box::new(Rows {
                            eligibility: kept_row(e),
                            plan: with_rows(&e.plan, &changes.nodes, rows),
                        }));
                    }
                    Work::Plan(kept) => kept,
                };
                let (spec, live) = ctx.spec(d);
                let eligibility: Arc<[Eligibility]> = match kept {
                    Some(e) => kept_row(e),
                    None => ctx
                        .eligibility(std::slice::from_ref(&spec), policy)
                        .pop()
                        .unwrap_or_default()
                        .into(),
                };
                let compiled = match kept {
                    Some(e) => e.spec.clone(),
                    None => DaemonSetSpec::compile(&d.daemonset),
                };
                let (plan, gate) = ctx.plan_one(d, spec, live, &eligibility, now, false);
                Done::Planned(Box::new(Planned {
                    kept: Kept {
                        spec: compiled,
                        eligibility,
                        gated: readiness_taint(&d.daemonset).is_some(),
                        every_node: reads_every_node(d),
                        completed: completed(ctx, d, &plan),
                    },
                    plan,
                    gate,
                }))
            })
            .collect();
        let mut plans = Vec::with_capacity(planned.len());
        let mut gates = Vec::with_capacity(planned.len());
        let mut kept = Vec::with_capacity(planned.len());
        let mut rows_only = Vec::new();
        for p in planned {
            let p = match p {
                Done::Planned(p) => *p,
                Done::Rows(rows) => {
                    rows_only.push(rows);
                    continue;
                }
            };
            plans.push(p.plan);
            gates.push(p.gate);
            kept.push(p.kept);
        }
        let all: BTreeSet<(&str, &str)> = wanted
            .iter()
            .map(|(ns, n)| (ns.as_str(), n.as_str()))
            .collect();
        readiness::settle_among(ctx, policy, now, &all, &mut plans, gates);
        for (plan, kept) in plans.into_iter().zip(kept) {
            let Kept {
                spec,
                eligibility,
                gated,
                every_node,
                completed,
            } = kept;
            let key = (plan.namespace.clone(), plan.name.clone());
            let creates_on = plan
                .nodes
                .iter()
                .filter(|n| matches!(n.state, NodeState::Missing | NodeState::OutOfDate))
                .map(|n| n.node.clone())
                .collect();
            let entry = Entry {
                spec,
                eligibility,
                gated,
                every_node,
                creates_on,
                settled: completed && settles(&plan, gated),
                completed,
                plan,
            };
            self.entries.insert(key, entry);
        }
        // Those only their rows changed for are not planned: nothing else of theirs changed.
        let mut woken = woken;
        for p in rows_only {
            let key = (p.plan.namespace.clone(), p.plan.name.clone());
            if let Some(e) = self.entries.get_mut(&key) {
                e.eligibility = p.eligibility;
                e.settled = e.completed && settles(&p.plan, e.gated);
                e.plan = p.plan;
            }
            woken.remove(&key);
        }
        self.fresh = false;
        Woken {
            daemonsets: woken,
            removed,
        }
    }

    /// The last plan of every desired DaemonSet, by namespace and name.
    pub fn plans(&self) -> impl Iterator<Item = &DaemonSetPlan> {
        self.entries.values().map(|e| &e.plan)
    }

    /// The last plan of one DaemonSet.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&DaemonSetPlan> {
        self.entries
            .get(&(namespace.to_string(), name.to_string()))
            .map(|e| &e.plan)
    }

    /// The plans of the DaemonSets in `keys` (those known), as one [`Plan`] at `now`.
    pub fn plan_of(&self, keys: &BTreeSet<Key>, now: Timestamp) -> Plan {
        Plan {
            api_version: PLAN_API_VERSION,
            kind: "Plan",
            now,
            manifest_only: false,
            daemonsets: keys
                .iter()
                .filter_map(|k| self.entries.get(k))
                .map(|e| e.plan.clone())
                .collect(),
        }
    }

    /// Every plan, as one [`Plan`] at `now`.
    pub fn plan(&self, now: Timestamp) -> Plan {
        Plan {
            api_version: PLAN_API_VERSION,
            kind: "Plan",
            now,
            manifest_only: false,
            daemonsets: self.plans().cloned().collect(),
        }
    }

    /// How these plans differ from `full`, the plan of every DaemonSet made afresh.
    pub fn compare(&self, full: &Plan) -> Vec<Mismatch> {
        let theirs: BTreeMap<Key, &DaemonSetPlan> = full
            .daemonsets
            .iter()
            .map(|d| ((d.namespace.clone(), d.name.clone()), d))
            .collect();
        let keys: BTreeSet<&Key> = theirs.keys().chain(self.entries.keys()).collect();
        keys.into_iter()
            .filter_map(|k| {
                let fields = match (self.entries.get(k), theirs.get(k)) {
                    (Some(e), Some(f)) => differing_fields(&e.plan, f),
                    _ => vec!["plan".to_string()],
                };
                (!fields.is_empty()).then(|| Mismatch {
                    daemonset: k.clone(),
                    fields,
                })
            })
            .collect()
    }
}

/// The top-level fields of two plans' JSON forms that differ.
fn differing_fields(a: &DaemonSetPlan, b: &DaemonSetPlan) -> Vec<String> {
    let (a, b) = match (serde_json::to_value(a), serde_json::to_value(b)) {
        (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) => (a, b),
        _ => return vec!["plan".to_string()],
    };
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

#[cfg(test)]
#[path = "incremental_tests.rs"]
mod tests;

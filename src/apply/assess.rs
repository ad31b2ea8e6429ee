//! What one observation says, before anything is written: the plan, the health of the new
//! pods, which DaemonSets may be written to, their handovers, and the orphans `--prune`
//! would remove. Pure.

use super::config::ConfigWork;
use super::handover::{self, Work};
use super::health::Health;
use super::options::{ApplyOptions, FailedNode, Key, Orphan};
use super::writer::{self, Standing};
use crate::cluster::{ClusterState, RecordSource};
use crate::model::{MANAGED_BY_LABEL, MANAGED_BY_VALUE, Timestamp};
use crate::plan::{self, DaemonSetSpec, Desired, Plan};
use std::collections::{BTreeMap, BTreeSet};

/// The compiled specs of the desired DaemonSets, by key.
pub(super) type Specs<'d> = BTreeMap<Key, (&'d Desired, DaemonSetSpec)>;

/// What observed state says, before anything is written: the plan, the health of the new
/// pods, and which DaemonSets may be written to. Pure: [`assess`] makes it from the desired
/// DaemonSets and one observation.
#[derive(Debug)]
pub struct Assessment<'d> {
    /// The plan.
    pub plan: Plan,
    /// What the new-revision pods say.
    pub health: Health,
    /// Managed DaemonSets no longer in the source.
    pub orphans: Vec<Orphan>,
    /// DaemonSets whose new pods failed (a start failure, restarts, or no progress past the
    /// deadline) on more nodes than the halt threshold: nothing more is replaced until their
    /// template changes (the halt then clears by itself, since only the current revision's
    /// pods are judged); only a node without a pod gets one, of the stable revision. The
    /// others go on.
    pub halted: BTreeSet<Key>,
    /// DaemonSets whose record carries `daemonsync.io/paused: "true"` (and this is no
    /// `--force`), or whose rollout of this revision was aborted: no pod is replaced. A paused
    /// one still gets pods on the nodes that have none, of the stable revision (the planner
    /// made its step so); an aborted one gets nothing.
    pub paused: BTreeSet<Key>,
    /// DaemonSets whose record carries `daemonsync.io/frozen: "true"`, or that a `sync`
    /// daemon yields to a forced `apply`: nothing is written for them.
    pub frozen: BTreeSet<Key>,
    /// DaemonSets whose rollout waits at a manual pause (they still get pods on nodes that
    /// need one).
    pub awaiting: BTreeSet<Key>,
    /// `--prune` would remove several DaemonSets without `--allow-mass-prune`: their names.
    pub mass_prune: Option<Vec<String>>,
    /// DaemonSets another controller runs, with why: nothing is written for them.
    pub blocked: BTreeMap<Key, String>,
    /// DaemonSets halted because the cluster's admission refused their pods, with the
    /// refusal and what to do.
    pub refused: BTreeMap<Key, String>,
    /// The handover writes of this round, by DaemonSet (their step waits for the next).
    pub handovers: BTreeMap<Key, Work>,
    /// DaemonSets whose record names another writer, and how this run stands to it.
    pub standings: BTreeMap<Key, Standing>,
    /// Where each rollout stands for GitOps tools (current, in progress, waiting, stalled)
    /// and since when it made no progress: filled by [`Executor::assess`](super::Executor::assess).
    pub progress: BTreeMap<Key, super::stall::Judged>,
    /// The config copies each DaemonSet's revisions need written, or no more
    /// (`manifest::versioning`).
    pub config: BTreeMap<Key, ConfigWork>,
    pub(super) specs: Specs<'d>,
}

/// Plans `desired` against one observation and judges its health.
pub fn assess<'d>(
    desired: &'d [Desired],
    state: &ClusterState,
    opts: &ApplyOptions,
) -> Assessment<'d> {
    let plan = plan::plan(desired, &state.observed, &policy(opts), state.now);
    assess_plan(desired, state, opts, plan)
}

/// The planner policy of these options: `--force` writes through the record's pause (it
/// pauses it for a daemon itself).
pub fn policy(opts: &ApplyOptions) -> plan::Policy {
    plan::Policy {
        ignore_pause: opts.policy.ignore_pause || opts.force,
        ..opts.policy.clone()
    }
}

/// [`assess`] with the plan made already, of all of `desired` or of some (an incremental
/// plan of the DaemonSets a change woke): the assessment speaks of the DaemonSets planned,
/// and of the orphans of all of `desired`.
pub fn assess_plan<'d>(
    desired: &'d [Desired],
    state: &ClusterState,
    opts: &ApplyOptions,
    mut plan: Plan,
) -> Assessment<'d> {
    // Compiled for the DaemonSets planned only: an incremental plan is of a few.
    let planned: BTreeSet<(&str, &str)> = plan
        .daemonsets
        .iter()
        .map(|d| (d.namespace.as_str(), d.name.as_str()))
        .collect();
    let mut specs: Specs<'d> = BTreeMap::new();
    let mut wanted: BTreeSet<Key> = BTreeSet::new();
    for d in desired {
        let key = d.key();
        if planned.contains(&(key.0.as_str(), key.1.as_str())) {
            specs.insert(key.clone(), (d, DaemonSetSpec::compile(&d.daemonset)));
        }
        wanted.insert(key);
    }
    let (health, runs) = Health::assess_with(
        &plan,
        &specs,
        &state.observed,
        (state.now, opts.progress_deadline),
        || Orphans::of(&wanted),
        Orphans::see,
    );
    let orphans = Orphans::found(runs);
    // A DaemonSet halts when its new pods failed on more Ready nodes than its halt
    // threshold allows (none, without a policy).
    let mut failures: BTreeMap<Key, usize> = BTreeMap::new();
    for f in &health.failed {
        *failures
            .entry((f.namespace.clone(), f.daemonset.clone()))
            .or_default() += 1;
    }
    // A pre-pull that fails on a Ready node halts its DaemonSet before any daemon pod is
    // touched: the image cannot be pulled.
    let mut health = health;
    for ds in &plan.daemonsets {
        for f in ds.pre_pull.iter().flat_map(|p| &p.failed) {
            health.failed.push(FailedNode {
                namespace: ds.namespace.clone(),
                daemonset: ds.name.clone(),
                node: f.node.to_string(),
                pod: f.pod.clone(),
                reason: format!("pre-pull failed: {}", f.reason),
            });
        }
    }
    let halted: BTreeSet<Key> = plan
        .daemonsets
        .iter_mut()
        .filter_map(|ds| {
            let key = (ds.namespace.clone(), ds.name.clone());
            let threshold = ds.rollout.as_ref().map_or(0, |r| r.halt_threshold);
            let failed = failures.get(&key).copied().unwrap_or(0);
            let pull_failed = ds.pre_pull.as_ref().is_some_and(|p| !p.failed.is_empty());
            (failed > threshold || pull_failed).then(|| {
                halt(ds, &state.observed);
                key
            })
        })
        .collect();
    let standings = writer::standings(&plan, &state.records, opts);
    // A freeze holds whatever the flags say; a daemon writes nothing of what a forced apply
    // took.
    let frozen: BTreeSet<Key> = plan
        .daemonsets
        .iter()
        .filter(|ds| {
            let key = (ds.namespace.clone(), ds.name.clone());
            ds.suspended == Some(plan::suspend::Suspension::Frozen)
                || standings.get(&key) == Some(&Standing::Yielded)
        })
        .map(|ds| (ds.namespace.clone(), ds.name.clone()))
        .collect();
    let paused = plan
        .daemonsets
        .iter()
        .filter(|ds| {
            // The planner read the record's pause (written through with `--force`).
            let record = matches!(ds.suspended, Some(plan::suspend::Suspension::Paused { .. }));
            let aborted = ds
                .rollout
                .as_ref()
                .is_some_and(|r| r.pause == Some(plan::progressive::Paused::Aborted));
            record || aborted
        })
        .map(|ds| (ds.namespace.clone(), ds.name.clone()))
        .filter(|key| !frozen.contains(key))
        .collect();
    let awaiting = plan
        .daemonsets
        .iter()
        .filter(|ds| {
            ds.rollout
                .as_ref()
                .is_some_and(|r| matches!(r.pause, Some(plan::progressive::Paused::Manual { .. })))
        })
        .map(|ds| (ds.namespace.clone(), ds.name.clone()))
        .collect();
    let mass_prune = (opts.prune && orphans.len() > 1 && !opts.allow_mass_prune).then(|| {
        orphans
            .iter()
            .map(|o| format!("{}/{}", o.namespace, o.name))
            .collect()
    });
    let blocked = plan
        .daemonsets
        .iter()
        .filter_map(|ds| match &ds.ownership.handover {
            plan::Handover::Blocked { why } => {
                Some(((ds.namespace.clone(), ds.name.clone()), why.clone()))
            }
            _ => None,
        })
        .chain(standings.iter().filter_map(|(key, s)| match s {
            Standing::Refused(why) => Some((key.clone(), why.clone())),
            _ => None,
        }))
        .collect();
    let handovers = plan
        .daemonsets
        .iter()
        .filter_map(|ds| {
            let key = (ds.namespace.clone(), ds.name.clone());
            let (desired, _) = specs.get(&key)?;
            handover::work(ds, desired, &state.observed).map(|w| (key, w))
        })
        .collect();
    let config = plan
        .daemonsets
        .iter()
        .filter_map(|ds| {
            let key = (ds.namespace.clone(), ds.name.clone());
            let (desired, _) = specs.get(&key)?;
            let work = super::config::work(ds, desired, state);
            (!work.is_empty()).then_some((key, work))
        })
        .collect();
    Assessment {
        config,
        plan,
        health,
        orphans,
        halted,
        paused,
        frozen,
        awaiting,
        mass_prune,
        blocked,
        refused: BTreeMap::new(),
        handovers,
        standings,
        progress: BTreeMap::new(),
        specs,
    }
}

impl Assessment<'_> {
    /// Whether the executor may write pods for this DaemonSet (neither halted, paused,
    /// frozen nor blocked).
    pub fn is_active(&self, namespace: &str, name: &str) -> bool {
        let key = (namespace.to_string(), name.to_string());
        !self.halted.contains(&key)
            && !self.paused.contains(&key)
            && !self.frozen.contains(&key)
            && !self.blocked.contains_key(&key)
    }

    /// Whether the executor writes this DaemonSet's step: an active one's, a paused one's,
    /// which the planner made of the pods the nodes without one get (and the readiness taints
    /// they then lose), or a halted one's, which [`halt`] cut down to the same. An aborted
    /// rollout's step is not written.
    pub fn writes_step(&self, ds: &plan::DaemonSetPlan) -> bool {
        let key = (ds.namespace.clone(), ds.name.clone());
        let serving = self.halted.contains(&key)
            || matches!(ds.suspended, Some(plan::suspend::Suspension::Paused { .. }))
                && self.paused.contains(&key);
        self.is_active(&ds.namespace, &ds.name)
            || serving
                && !self.frozen.contains(&key)
                && !self.blocked.contains_key(&key)
                && !self.leaves_record(&key)
    }

    /// The source the record of `key` is written with: this run's, or the daemon's when
    /// `apply` writes alongside it.
    pub(super) fn record_source<'o>(
        &'o self,
        key: &Key,
        opts: &'o ApplyOptions,
    ) -> &'o RecordSource {
        match self.standings.get(key) {
            Some(Standing::Alongside(theirs)) => theirs,
            _ => &opts.source,
        }
    }

    /// Whether this run leaves the record of `key` alone: another writer drives it.
    pub(super) fn leaves_record(&self, key: &Key) -> bool {
        matches!(
            self.standings.get(key),
            Some(Standing::Refused(_) | Standing::Yielded)
        )
    }

    /// The handovers of the active DaemonSets.
    pub(super) fn active_handovers(&self) -> impl Iterator<Item = (&Key, &Work)> {
        self.handovers
            .iter()
            .filter(|(k, _)| self.is_active(&k.0, &k.1))
    }

    /// Halts the DaemonSets whose pods the cluster's admission refused for their current
    /// revision (the executor remembers the refusals: no pod was created to show them).
    pub fn refused_by_admission(
        &mut self,
        refusals: &BTreeMap<Key, (String, String)>,
        observed: &plan::Observed,
    ) {
        for ds in &mut self.plan.daemonsets {
            let key = (ds.namespace.clone(), ds.name.clone());
            let Some((revision, why)) = refusals.get(&key) else {
                continue;
            };
            if *revision != ds.revision {
                continue;
            }
            halt(ds, observed);
            self.halted.insert(key.clone());
            self.refused.insert(key, why.clone());
        }
    }

    /// `namespace/name` and why of the blocked DaemonSets.
    pub fn blocked_names(&self) -> Vec<(String, String)> {
        self.blocked
            .iter()
            .map(|((ns, n), why)| (format!("{ns}/{n}"), why.clone()))
            .collect()
    }

    /// `namespace/name` and the refusal of the DaemonSets admission refused.
    pub fn refused_names(&self) -> Vec<(String, String)> {
        self.refused
            .iter()
            .map(|((ns, n), why)| (format!("{ns}/{n}"), why.clone()))
            .collect()
    }

    /// The orphans' pods `--prune` deletes (none while a mass prune is refused).
    pub fn prune_pods(&self, opts: &ApplyOptions) -> Vec<Key> {
        if !opts.prune || self.mass_prune.is_some() {
            return Vec::new();
        }
        self.orphans
            .iter()
            .flat_map(|o| o.pods.iter().map(|p| (o.namespace.clone(), p.clone())))
            .collect()
    }

    /// The DaemonSets whose step does something and is written ([`Self::writes_step`]).
    pub fn stepping(&self) -> impl Iterator<Item = &plan::DaemonSetPlan> {
        self.plan
            .daemonsets
            .iter()
            .filter(|ds| !ds.step.is_empty() && self.writes_step(ds))
    }

    /// Whether the next step writes anything: a pod of an active (or paused) DaemonSet, or a
    /// prune.
    pub fn has_work(&self, opts: &ApplyOptions) -> bool {
        self.stepping().next().is_some()
            || self.active_handovers().next().is_some()
            || !self.prune_pods(opts).is_empty()
            || self.obsolete_copies().next().is_some()
    }

    /// The copies of config no revision needs any more, of the active DaemonSets.
    pub(super) fn obsolete_copies(&self) -> impl Iterator<Item = (&Key, &ConfigWork)> {
        self.config
            .iter()
            .filter(|(k, w)| !w.delete.is_empty() && self.is_active(&k.0, &k.1))
    }

    /// Every active DaemonSet is converged (halted and paused ones are left where they are,
    /// nodes a rollout policy holds back count as settled), no rollout waits out a timed
    /// pause, and no handover waits for the garbage collector (a taken-over DaemonSet's pods
    /// are claimed once it has cleared their owner references: a live cluster's collector
    /// does so after the delete is answered).
    pub fn settled(&self) -> bool {
        self.health
            .converged(&self.plan, |ds| self.is_active(&ds.namespace, &ds.name))
            && self.timed_pause_ends().is_none()
            && !self.plan.daemonsets.iter().any(|ds| {
                matches!(ds.ownership.handover, plan::Handover::Waiting { .. })
                    && self.is_active(&ds.namespace, &ds.name)
            })
    }

    /// When the first timed pause of an active DaemonSet's rollout ends.
    pub fn timed_pause_ends(&self) -> Option<Timestamp> {
        active_steps(self)
            .filter_map(|ds| ds.rollout.as_ref()?.wake_at)
            .min()
    }

    /// When something may change without a cluster event: a progress deadline (of a pod, or
    /// of a rollout making no progress), a minReadySeconds, a timed pause ending.
    pub fn next_wake(&self) -> Option<Timestamp> {
        let stall = self.progress.values().filter_map(|j| j.deadline).min();
        [self.health.next_deadline, self.timed_pause_ends(), stall]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether the rollout of `namespace/name` is stalled (the record's `Stalled` condition).
    pub fn is_stalled(&self, namespace: &str, name: &str) -> bool {
        self.progress
            .get(&(namespace.to_string(), name.to_string()))
            .is_some_and(super::stall::Judged::is_stalled)
    }

    /// `namespace/name` of the DaemonSets waiting at a manual pause.
    pub fn awaiting_names(&self) -> Vec<String> {
        names(&self.awaiting)
    }

    /// `namespace/name` of the halted DaemonSets.
    pub fn halted_names(&self) -> Vec<String> {
        names(&self.halted)
    }

    /// `namespace/name` of the paused DaemonSets.
    pub fn paused_names(&self) -> Vec<String> {
        names(&self.paused)
    }

    /// `namespace/name` of the frozen DaemonSets.
    pub fn frozen_names(&self) -> Vec<String> {
        names(&self.frozen)
    }
}

/// Halts a DaemonSet's rollout: its step keeps only what serves a node without a pod, as a
/// pause does (`plan::suspend`), so a node whose old pod went before the halt landed (or that
/// joins during it) is not left without its daemon: a pod of the stable revision, on the
/// nodes the plan found missing one. None when no stable revision is known or it is the
/// halted one (a first rollout, a template admission refuses). Nothing is replaced, deleted,
/// patched or pre-pulled. Readiness gates of pods that are ready still open and readiness
/// taints of available daemons still go.
fn halt(ds: &mut plan::DaemonSetPlan, observed: &plan::Observed) {
    if let Some(r) = &mut ds.rollout {
        r.phase = plan::Phase::Halted;
        r.pause = None;
    }
    let stable = plan::stable_daemonset(observed, &ds.namespace, &ds.name)
        .map(|d| DaemonSetSpec::compile(d).revision);
    let serves = stable.is_some_and(|r| r != ds.revision);
    let missing: BTreeSet<&str> = ds
        .nodes
        .iter()
        .filter(|n| serves && n.state == plan::NodeState::Missing)
        .map(|n| &*n.node)
        .collect();
    let step = &mut ds.step;
    let mut create_stable = std::mem::take(&mut step.create_stable);
    create_stable.extend(
        std::mem::take(&mut step.create)
            .into_iter()
            .filter(|n| missing.contains(&**n)),
    );
    create_stable.retain(|n| missing.contains(&**n));
    create_stable.sort();
    create_stable.dedup();
    step.create_stable = create_stable;
    step.delete.clear();
    step.in_place.clear();
    step.pre_pull.clear();
    step.pre_pull_cleanup.clear();
    step.phase = if step.create_stable.is_empty() {
        plan::StepPhase::None
    } else {
        plan::StepPhase::Manage
    };
}

/// `namespace/name` of each DaemonSet.
fn names(keys: &BTreeSet<Key>) -> Vec<String> {
    keys.iter().map(|(ns, n)| format!("{ns}/{n}")).collect()
}

/// The plans of the DaemonSets whose step the executor writes (see
/// [`Assessment::writes_step`]).
pub(super) fn written_steps<'a>(
    a: &'a Assessment<'_>,
) -> impl Iterator<Item = &'a plan::DaemonSetPlan> {
    a.plan.daemonsets.iter().filter(|ds| a.writes_step(ds))
}

/// The plans of the DaemonSets the executor may write for.
pub(super) fn active_steps<'a>(
    a: &'a Assessment<'_>,
) -> impl Iterator<Item = &'a plan::DaemonSetPlan> {
    a.plan
        .daemonsets
        .iter()
        .filter(|ds| a.is_active(&ds.namespace, &ds.name))
}

/// Managed DaemonSets whose pods exist in the cluster but which the source no longer has:
/// pods labelled managed-by daemonsync whose controller is a record (kind and API group) not
/// in `desired`. Shown the observed pods one by one ([`Orphans::see`]), on the health's pass
/// over them.
struct Orphans<'a> {
    desired: rustc_hash::FxHashSet<(&'a str, &'a str)>,
    /// The last owner found desired: pods come in key order, a DaemonSet's mostly one after
    /// another, so it is compared before the set is asked.
    last: Option<(&'a str, &'a str)>,
    found: BTreeMap<Key, Vec<String>>,
}

impl<'a> Orphans<'a> {
    /// None found yet, of the DaemonSets `desired`.
    fn of(desired: &'a BTreeSet<Key>) -> Self {
        Orphans {
            desired: desired
                .iter()
                .map(|(ns, n)| (ns.as_str(), n.as_str()))
                .collect(),
            last: None,
            found: BTreeMap::new(),
        }
    }

    /// Notes `pod` if it is a managed DaemonSet's that is not desired.
    fn see(&mut self, pod: &'a crate::model::Pod) {
        let Some(owner) = &pod.controller else {
            return;
        };
        // The pods of desired DaemonSets, most of them, are passed over first.
        let key = (&*pod.namespace, owner.name.as_str());
        if self.last.is_some_and(|l| crate::model::same_key(l, key)) || self.desired.contains(&key)
        {
            self.last = Some(key);
            return;
        }
        let group = owner.api_version.split_once('/').map_or("", |(g, _)| g);
        if owner.kind != plan::RECORD_KIND
            || group != plan::RECORD_GROUP
            || pod.labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY_VALUE)
        {
            return;
        }
        let pods = self
            .found
            .entry((pod.namespace.to_string(), owner.name.clone()))
            .or_default();
        if !pod.is_terminating() {
            pods.push(pod.name.clone());
        }
    }

    /// The orphans `runs` found (over runs of pods, in order), by namespace and name.
    fn found(runs: Vec<Orphans>) -> Vec<Orphan> {
        let mut found: BTreeMap<Key, Vec<String>> = BTreeMap::new();
        for run in runs {
            for (key, pods) in run.found {
                found.entry(key).or_default().extend(pods);
            }
        }
        found
            .into_iter()
            .map(|((namespace, name), pods)| Orphan {
                namespace,
                name,
                pods,
            })
            .collect()
    }
}

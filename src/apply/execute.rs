//! The execution of one step: for every active DaemonSet, its handover or its pod writes,
//! then the prune.

use super::assess::{Assessment, written_steps};
use super::handover;
use super::options::{ApplyOptions, Key, Log, keep_forbidden};
use super::status::event_message;
use crate::cluster::{Cluster, ClusterError, ClusterState, Event, EventType};
use crate::manifest::policy::{readiness_taint, tolerate_taint};
use crate::model::{IN_PLACE_READY_CONDITION, REVISION_HASH_LABEL};
use crate::plan::{self, DaemonSetSpec, Desired};
use std::collections::BTreeMap;

/// The writes an executor made, by kind, and the steps it took.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) steps: usize,
    pub(super) creates: usize,
    pub(super) deletes: usize,
    pub(super) in_place: usize,
    /// Writes of handovers (take-over, claims, releases, native applies, relabels).
    pub(super) handover: usize,
    /// Readiness taints removed from nodes.
    pub(super) untainted: usize,
    /// Config copies written and deleted.
    pub(super) config: usize,
}

impl Counts {
    /// Every write so far.
    fn writes(&self) -> usize {
        self.creates + self.deletes + self.in_place + self.handover + self.untainted + self.config
    }
}

/// How the writes of a step ended.
pub(super) enum Executed {
    /// Every write was attempted.
    Done,
    /// Stopped after the requested number of writes (fault injection).
    Interrupted,
}

/// A step stopped after the requested number of writes (fault injection).
struct Interrupted;

/// The writes of one step under way: where they go, what they count, where they are logged,
/// and the step's first error (a refusal takes precedence, see [`keep_forbidden`]).
struct Writes<'s, 'l, C> {
    cluster: &'s mut C,
    opts: &'s ApplyOptions,
    counts: &'s mut Counts,
    log: &'s mut Log<'l>,
    first_error: Option<ClusterError>,
    /// Readiness taints (node, key) this step removed already: several DaemonSets naming one
    /// key each plan its removal.
    untainted: std::collections::BTreeSet<(String, String)>,
}

impl<C> Writes<'_, '_, C> {
    /// Whether the writes so far reached the requested number (fault injection).
    fn interrupted(&self) -> bool {
        self.opts
            .stop_after_writes
            .is_some_and(|n| self.counts.writes() >= n)
    }
}

/// A DaemonSet whose pods a step writes, and how its writes are logged.
struct Target<'a> {
    ds: &'a plan::DaemonSetPlan,
    desired: &'a Desired,
    spec: &'a DaemonSetSpec,
    /// `namespace/name`.
    daemonset: String,
    /// The rollout phase the writes belong to.
    phase: String,
    /// Its revision's config copies the cluster lacks.
    copies: &'a [crate::manifest::config::ConfigCopy],
}

/// Executes one step: the handovers of the active DaemonSets, then the pod writes of every
/// other active DaemonSet — each one's writes up to its creates ([`write_before_creates`]),
/// the creates of all of them together ([`create_pods`]), then each one's taints and events
/// ([`write_after_creates`]) — then the prune deletes.
#[allow(clippy::too_many_arguments)]
pub(super) async fn execute<C: Cluster>(
    cluster: &mut C,
    a: &Assessment<'_>,
    state: &ClusterState,
    prune: &[Key],
    opts: &ApplyOptions,
    counts: &mut Counts,
    log: &mut Log<'_>,
    refusals: &mut BTreeMap<Key, (String, String)>,
) -> Result<Executed, ClusterError> {
    let mut w = Writes {
        cluster,
        opts,
        counts,
        log,
        first_error: None,
        untainted: Default::default(),
    };
    if write_handovers(&mut w, a, state).await.is_err() {
        return Ok(Executed::Interrupted);
    }
    let mut prepared = Vec::new();
    for ds in written_steps(a) {
        if ds.step.is_empty()
            || a.handovers
                .contains_key(&(ds.namespace.clone(), ds.name.clone()))
        {
            continue;
        }
        if w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let key = (ds.namespace.clone(), ds.name.clone());
        let Some((desired, spec)) = a.specs.get(&key) else {
            continue;
        };
        if let Err(e) = w
            .cluster
            .ensure_record(&desired.daemonset, a.record_source(&key, opts))
            .await
        {
            // This DaemonSet cannot be written without its record; the others can.
            let forbidden = e.stops_step();
            keep_forbidden(&mut w.first_error, e);
            if forbidden {
                break;
            }
            continue;
        }
        let copies = a.config.get(&key).map_or(&[][..], |c| c.create.as_slice());
        let Ok(before) = write_before_creates(&mut w, state, ds, (desired, spec, copies)).await
        else {
            return Ok(Executed::Interrupted);
        };
        prepared.push(before);
    }
    // The creates of every DaemonSet go out together, batch by batch: a node that joins
    // gets all its daemon pods at once, not one DaemonSet after another.
    let Ok(created) = create_pods(&mut w, state, &prepared, refusals).await else {
        return Ok(Executed::Interrupted);
    };
    for (before, created) in prepared.into_iter().zip(created) {
        if let Executed::Interrupted = write_after_creates(&mut w, before, created).await? {
            return Ok(Executed::Interrupted);
        }
    }
    if delete_obsolete_copies(&mut w, a).await.is_err() {
        return Ok(Executed::Interrupted);
    }
    if prune_pods(&mut w, state, prune).await.is_err() {
        return Ok(Executed::Interrupted);
    }
    match w.first_error {
        Some(e) => Err(e),
        None => Ok(Executed::Done),
    }
}

/// The handover writes of the active DaemonSets, each after making sure its record exists.
async fn write_handovers<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    a: &Assessment<'_>,
    state: &ClusterState,
) -> Result<(), Interrupted> {
    // Handovers first; a DaemonSet's step waits for the next round after its handover.
    for (key, work) in a.active_handovers() {
        if w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let (Some(ds), Some((desired, _))) = (
            a.plan
                .daemonsets
                .iter()
                .find(|d| d.namespace == key.0 && d.name == key.1),
            a.specs.get(key),
        ) else {
            continue;
        };
        let written = async {
            w.cluster
                .ensure_record(&desired.daemonset, a.record_source(key, w.opts))
                .await?;
            // The native DaemonSet's template references its revision's config copies:
            // they exist before it does.
            let applies = matches!(
                work,
                handover::Work::Apply(_) | handover::Work::Release { apply: Some(_), .. }
            );
            let copies = a.config.get(key).map_or(&[][..], |c| c.create.as_slice());
            if applies && !copies.is_empty() {
                let owner = native_owner(state, ds);
                let at = (&*format!("{}/{}", key.0, key.1), &*ds.revision, "Native");
                w.counts.config +=
                    super::config::write_copies(w.cluster, copies, &owner, w.log, at).await?;
            }
            let limit = w
                .opts
                .stop_after_writes
                .map(|n| n.saturating_sub(w.counts.writes() - w.counts.handover));
            handover::execute(w.cluster, ds, work, w.log, &mut w.counts.handover, limit).await
        };
        if let Err(e) = written.await {
            keep_forbidden(&mut w.first_error, e);
        }
        if w.interrupted() {
            return Err(Interrupted);
        }
    }
    Ok(())
}

/// One DaemonSet's step, written up to its creates: what it did so far, for its events.
struct Before<'a> {
    t: Target<'a>,
    /// The built-in controller creates its pods.
    native: bool,
    /// Its revision's config copies are all written: its pods may be created.
    copied: bool,
    updated: Vec<String>,
    deleted: Vec<String>,
    failed_pods: Vec<String>,
}

/// Writes one DaemonSet's step up to its creates, in order: readiness gates opened,
/// pre-pulls cleaned up and started, pods updated in place, pods deleted, its revision's
/// config copies written. Its creates ([`create_pods`]), taints and events
/// ([`write_after_creates`]) follow.
async fn write_before_creates<'a, C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    state: &ClusterState,
    ds: &'a plan::DaemonSetPlan,
    (desired, spec, copies): (
        &'a Desired,
        &'a DaemonSetSpec,
        &'a [crate::manifest::config::ConfigCopy],
    ),
) -> Result<Before<'a>, Interrupted> {
    tracing::info!(
        daemonset = %format!("{}/{}", ds.namespace, ds.name),
        revision = %ds.revision,
        phase = ?ds.step.phase,
        create_on = %ds.step.create.iter().map(|n| &**n).collect::<Vec<&str>>().join(","),
        delete = %ds
            .step
            .delete
            .iter()
            .map(|d| format!("{} on {} ({:?})", d.name, d.node, d.reason))
            .collect::<Vec<_>>()
            .join(", "),
        "decision"
    );
    let daemonset = format!("{}/{}", ds.namespace, ds.name);
    let phase = ds
        .rollout
        .as_ref()
        .map_or_else(|| "Rollout".to_string(), |r| r.phase.to_string());
    let t = Target {
        ds,
        desired,
        spec,
        daemonset,
        phase,
        copies,
    };
    // Native: the built-in controller creates the new pods (and with its own
    // RollingUpdate, deletes the old ones too).
    let native = ds.ownership.mode == plan::Mode::Native;
    let controller_rolls = native && ds.ownership.builtin_rollout;
    open_gates(w, ds).await;
    clean_up_pre_pulls(w, &t).await;
    pre_pull(w, &t).await;
    let updated = update_pods_in_place(w, &t, state, native).await?;
    let (deleted, failed_pods) = delete_pods(w, &t, controller_rolls).await?;
    let copied = write_revision_copies(w, &t, native).await?;
    Ok(Before {
        t,
        native,
        copied,
        updated,
        deleted,
        failed_pods,
    })
}

/// Ends one DaemonSet's step after its creates: readiness taints removed, then the events
/// saying what the step wrote.
async fn write_after_creates<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    before: Before<'_>,
    (created, create_error): (Vec<String>, Option<String>),
) -> Result<Executed, ClusterError> {
    let Ok(untainted) = remove_taints(w, &before.t).await else {
        return Ok(Executed::Interrupted);
    };
    let events = [
        (
            EventType::Warning,
            "FailedDaemonPod",
            "found failed daemon pod(s), deleted",
            before.failed_pods,
        ),
        (
            EventType::Normal,
            "SuccessfulDelete",
            "deleted pod(s)",
            before.deleted,
        ),
        (
            EventType::Normal,
            "SuccessfulCreate",
            "created pod(s)",
            created,
        ),
        (
            EventType::Normal,
            "SuccessfulUpdate",
            "updated pod(s) in place",
            before.updated,
        ),
        (
            EventType::Warning,
            "FailedCreate",
            "error creating pods",
            create_error.into_iter().collect(),
        ),
        (
            EventType::Normal,
            "ReadinessTaintRemoved",
            "removed the readiness taint from node(s)",
            untainted,
        ),
    ];
    announce_writes(w.cluster, before.t.ds, events).await?;
    Ok(Executed::Done)
}

/// Opens the readiness gates of pods whose containers all run their images and are ready.
async fn open_gates<C: Cluster>(w: &mut Writes<'_, '_, C>, ds: &plan::DaemonSetPlan) {
    for g in &ds.step.open_gates {
        match w
            .cluster
            .set_pod_condition(&g.namespace, &g.name, IN_PLACE_READY_CONDITION, true, None)
            .await
        {
            Ok(_) | Err(ClusterError::NotFound { .. }) => {}
            Err(e) => {
                let stop = e.stops_step();
                keep_forbidden(&mut w.first_error, e);
                if stop {
                    break;
                }
            }
        }
    }
}

/// Deletes the pre-pull pods whose pulls are done.
async fn clean_up_pre_pulls<C: Cluster>(w: &mut Writes<'_, '_, C>, t: &Target<'_>) {
    let ds = t.ds;
    for c in &ds.step.pre_pull_cleanup {
        match w.cluster.delete_pod(&c.namespace, &c.name).await {
            Ok(()) | Err(ClusterError::NotFound { .. }) => {
                w.log.push(
                    "pre-pull-cleanup",
                    &t.daemonset,
                    &c.name,
                    &c.node,
                    ds.revision.clone(),
                    &t.phase,
                );
            }
            Err(e) => keep_forbidden(&mut w.first_error, e),
        }
    }
}

/// Creates the pods that pull the new images on nodes ahead of their turns.
async fn pre_pull<C: Cluster>(w: &mut Writes<'_, '_, C>, t: &Target<'_>) {
    let ds = t.ds;
    let pre_pull_owner = plan::render::PodOwner::record(&t.spec.name);
    for p in &ds.step.pre_pull {
        if w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let pod = plan::render::pre_pull_pod(
            &t.desired.daemonset,
            t.spec,
            &p.node,
            &p.images,
            &pre_pull_owner,
        );
        match w.cluster.create_pod(pod).await {
            Ok(name) => {
                w.log.push(
                    "pre-pull",
                    &t.daemonset,
                    &name,
                    &p.node,
                    ds.revision.clone(),
                    &t.phase,
                );
            }
            Err(e) => keep_forbidden(&mut w.first_error, e),
        }
    }
}

/// Updates the DaemonSet's pods in place ([`update_in_place`]). Returns them as their event
/// names them.
async fn update_pods_in_place<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    t: &Target<'_>,
    state: &ClusterState,
    native: bool,
) -> Result<Vec<String>, Interrupted> {
    let ds = t.ds;
    let mut updated = Vec::new();
    // The revision labels an updated pod takes: daemonsync's, or in native mode those of
    // the built-in controller's current revision (which it then counts as updated).
    let in_place_labels = if native {
        native_revision_labels(&state.observed, ds)
    } else {
        Some([(REVISION_HASH_LABEL.to_string(), ds.revision.clone())].into())
    };
    for u in &ds.step.in_place {
        if w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let Some(labels) = &in_place_labels else {
            break;
        };
        match update_in_place(w.cluster, labels, u).await {
            Ok(()) => {
                w.counts.in_place += 1;
                let from = &u.from_revision;
                w.log.push(
                    "in-place",
                    &t.daemonset,
                    &u.name,
                    &u.node,
                    ds.revision.clone(),
                    &t.phase,
                );
                updated.push(format!("{} ({from} to {})", u.name, ds.revision));
            }
            Err(ClusterError::NotFound { .. }) => {}
            Err(e) => keep_forbidden(&mut w.first_error, e),
        }
        if w.interrupted() {
            return Err(Interrupted);
        }
    }
    Ok(updated)
}

/// Deletes the pods the step replaces (none when the built-in controller rolls them out
/// itself). Returns the pods deleted, and those of them deleted because they failed.
async fn delete_pods<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    t: &Target<'_>,
    controller_rolls: bool,
) -> Result<(Vec<String>, Vec<String>), Interrupted> {
    let ds = t.ds;
    let (mut deleted, mut failed_pods) = (Vec::new(), Vec::new());
    for d in ds.step.delete.iter().filter(|_| !controller_rolls) {
        match w.cluster.delete_pod(&d.namespace, &d.name).await {
            Ok(()) | Err(ClusterError::NotFound { .. }) => {
                w.counts.deletes += 1;
                w.log.push(
                    "delete",
                    &t.daemonset,
                    &d.name,
                    &d.node,
                    d.revision.clone(),
                    &t.phase,
                );
                deleted.push(d.name.clone());
                if d.reason == plan::DeleteReason::Failed {
                    failed_pods.push(format!("{} on node {}", d.name, d.node));
                }
            }
            Err(e) => {
                let forbidden = e.stops_step();
                keep_forbidden(&mut w.first_error, e);
                if forbidden {
                    break;
                }
            }
        }
        if w.interrupted() {
            return Err(Interrupted);
        }
    }
    Ok((deleted, failed_pods))
}

/// One DaemonSet's creates under way, in slow-start batches.
struct Creating<'a> {
    /// The nodes to create a pod on, each with whether it is of the stable revision.
    nodes: Vec<(&'a plan::Name, bool)>,
    /// The stable revision's DaemonSet, tolerating the readiness taint, and its spec.
    stable: Option<(k8s_openapi::api::apps::v1::DaemonSet, DaemonSetSpec)>,
    owner: plan::render::PodOwner,
    /// The first node not yet sent, and the size of the next batch.
    next: usize,
    batch: usize,
    /// A create failed: its batches stop.
    stopped: bool,
    created: Vec<String>,
    error: Option<String>,
}

impl<'a> Creating<'a> {
    /// The creates of a DaemonSet's step: its revision's pods, then on the nodes a rollout
    /// policy holds back the stable revision's; none in native mode (the built-in
    /// controller creates them) or while its config copies are not all written.
    fn of(before: &Before<'a>, state: &ClusterState) -> Self {
        let (ds, t) = (before.t.ds, &before.t);
        let creates = !before.native && before.copied;
        // The stable revision's pods tolerate the readiness taint their node may have
        // joined with, even when that revision predates the annotation (its revision stays
        // the stable one's). Compiled only when some are to be created.
        let stable = plan::stable_daemonset(&state.observed, &ds.namespace, &ds.name)
            .filter(|_| creates && !ds.step.create_stable.is_empty())
            .map(|d| {
                let spec = DaemonSetSpec::compile(d);
                let mut d = d.clone();
                if let Some(key) = readiness_taint(&t.desired.daemonset) {
                    tolerate_taint(&mut d, key);
                }
                (d, spec)
            });
        let nodes = if !creates {
            Vec::new()
        } else {
            let stable_nodes = ds.step.create_stable.iter().filter(|_| stable.is_some());
            ds.step
                .create
                .iter()
                .map(|n| (n, false))
                .chain(stable_nodes.map(|n| (n, true)))
                .collect()
        };
        Creating {
            nodes,
            stable,
            owner: plan::render::PodOwner::record(&t.spec.name),
            next: 0,
            batch: 1,
            stopped: false,
            created: Vec::new(),
            error: None,
        }
    }

    /// The template and spec of the pod on the `k`-th node.
    fn template(
        &self,
        t: &'a Target<'_>,
        k: usize,
    ) -> (&k8s_openapi::api::apps::v1::DaemonSet, &DaemonSetSpec) {
        match (&self.stable, self.nodes[k].1) {
            (Some((d, spec)), true) => (d, spec),
            _ => (&t.desired.daemonset, t.spec),
        }
    }
}

/// Creates the steps' new pods, and on the nodes a rollout policy holds back the stable
/// revision's, in slow-start batches 1, 2, 4, 8, … per DaemonSet. The batches of every
/// DaemonSet go out together, round by round, as one [`Cluster::create_pods`]. A
/// DaemonSet's batches stop at its first failed create; a refusal by the cluster's
/// admission halts it for its revision (`refusals`), the others go on; a forbidden or
/// stopped write stops them all. Returns, per DaemonSet of `prepared`, the pods created and
/// the first failed create.
async fn create_pods<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    state: &ClusterState,
    prepared: &[Before<'_>],
    refusals: &mut BTreeMap<Key, (String, String)>,
) -> Result<Vec<(Vec<String>, Option<String>)>, Interrupted> {
    let mut creating: Vec<Creating> = prepared.iter().map(|b| Creating::of(b, state)).collect();
    while !w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
        // This round: the next batch of every DaemonSet still creating, within what fault
        // injection allows.
        let mut allowed = w
            .opts
            .stop_after_writes
            .map(|n| n.saturating_sub(w.counts.writes()));
        let mut round = Vec::new();
        for (i, c) in creating.iter().enumerate() {
            if c.stopped {
                continue;
            }
            let mut end = (c.next + c.batch).min(c.nodes.len());
            if let Some(left) = allowed.as_mut() {
                end = end.min(c.next + *left);
                *left -= end - c.next;
            }
            if end > c.next {
                round.push((i, c.next..end));
            }
        }
        if round.is_empty() {
            break;
        }
        let pods = round
            .iter()
            .flat_map(|(i, sent)| {
                let (c, t) = (&creating[*i], &prepared[*i].t);
                sent.clone().map(move |k| {
                    let (template, spec) = c.template(t, k);
                    plan::render::pod_for_node(template, spec, c.nodes[k].0, &c.owner)
                })
            })
            .collect();
        let mut results = w.cluster.create_pods(pods).await.into_iter();
        for (i, sent) in round {
            let t = &prepared[i].t;
            let ds = t.ds;
            for k in sent.clone() {
                let Some(result) = results.next() else {
                    break;
                };
                let c = &mut creating[i];
                match result {
                    Ok(name) => {
                        w.counts.creates += 1;
                        let revision = c.template(t, k).1.revision.clone();
                        w.log.push(
                            "create",
                            &t.daemonset,
                            &name,
                            c.nodes[k].0,
                            revision,
                            &t.phase,
                        );
                        c.created.push(name);
                    }
                    Err(e) => {
                        c.stopped = true;
                        c.error.get_or_insert_with(|| e.to_string());
                        match &e {
                            // The DaemonSet's pods are at fault, not the client: it halts,
                            // the others go on.
                            ClusterError::Refused(why) => {
                                refusals.insert(
                                    (ds.namespace.clone(), ds.name.clone()),
                                    (ds.revision.clone(), admission_hint(why, &ds.namespace)),
                                );
                            }
                            _ => keep_forbidden(&mut w.first_error, e),
                        }
                    }
                }
            }
            let c = &mut creating[i];
            c.next = sent.end;
            c.batch *= 2;
        }
        if w.interrupted() {
            return Err(Interrupted);
        }
    }
    Ok(creating.into_iter().map(|c| (c.created, c.error)).collect())
}

/// Removes the readiness taints the step lets go (each once, whichever DaemonSet naming its
/// key planned it first). Returns the nodes they went from, as the event names them.
async fn remove_taints<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    t: &Target<'_>,
) -> Result<Vec<String>, Interrupted> {
    let mut removed = Vec::new();
    for r in &t.ds.step.remove_taints {
        if w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        if !w.untainted.insert((r.node.to_string(), r.key.clone())) {
            continue;
        }
        match w
            .cluster
            .remove_node_taint(&r.node, &r.key, plan::readiness::READINESS_EFFECT)
            .await
        {
            Ok(true) => {
                w.counts.untainted += 1;
                w.log.push_untaint(&t.daemonset, &r.node, &r.key, &t.phase);
                removed.push(format!("{} ({})", r.node, r.key));
            }
            // Gone already (another writer, or the node left).
            Ok(false) | Err(ClusterError::NotFound { .. }) => {}
            Err(e) => keep_forbidden(&mut w.first_error, e),
        }
        if w.interrupted() {
            return Err(Interrupted);
        }
    }
    Ok(removed)
}

/// Writes the config copies of the revision the step creates pods of, owned by the record,
/// before any of its pods (a pod referencing a missing copy would never start). False when
/// they could not all be written: the step's creates wait.
async fn write_revision_copies<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    t: &Target<'_>,
    native: bool,
) -> Result<bool, Interrupted> {
    if native || t.ds.step.create.is_empty() || t.copies.is_empty() {
        return Ok(true);
    }
    let owner = plan::render::PodOwner::record(&t.spec.name);
    let at = (
        t.daemonset.as_str(),
        t.ds.revision.as_str(),
        t.phase.as_str(),
    );
    let written = super::config::write_copies(w.cluster, t.copies, &owner, w.log, at).await;
    let ok = match written {
        Ok(n) => {
            w.counts.config += n;
            true
        }
        Err(e) => {
            keep_forbidden(&mut w.first_error, e);
            false
        }
    };
    if w.interrupted() {
        return Err(Interrupted);
    }
    Ok(ok)
}

/// The owner of a native DaemonSet's config copies: its `apps/v1` DaemonSet, or the record
/// until that exists (the copies of its first revision are written before it).
fn native_owner(state: &ClusterState, ds: &plan::DaemonSetPlan) -> plan::render::PodOwner {
    state
        .observed
        .daemonsets
        .iter()
        .find(|d| {
            d.metadata.namespace.as_deref().unwrap_or("default") == ds.namespace
                && d.metadata.name.as_deref() == Some(ds.name.as_str())
        })
        .and_then(|d| d.metadata.uid.as_deref())
        .map_or_else(
            || plan::render::PodOwner::record(&ds.name),
            |uid| plan::render::PodOwner::daemonset(&ds.name, uid),
        )
}

/// Deletes the config copies no revision of an active DaemonSet needs any more (its rollout
/// complete).
async fn delete_obsolete_copies<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    a: &Assessment<'_>,
) -> Result<(), Interrupted> {
    for (key, work) in a.obsolete_copies() {
        if w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let daemonset = format!("{}/{}", key.0, key.1);
        match super::config::delete_copies(w.cluster, &work.delete, w.log, &daemonset).await {
            Ok(n) => w.counts.config += n,
            Err(e) => keep_forbidden(&mut w.first_error, e),
        }
        if w.interrupted() {
            return Err(Interrupted);
        }
    }
    Ok(())
}

/// Records a step's writes for one DaemonSet as events on it: one per kind of write that
/// happened, `(type, reason, what, items)`.
async fn announce_writes<C: Cluster>(
    cluster: &mut C,
    ds: &plan::DaemonSetPlan,
    events: [(EventType, &str, &str, Vec<String>); 6],
) -> Result<(), ClusterError> {
    for (type_, reason, what, items) in events {
        if items.is_empty() {
            continue;
        }
        cluster
            .emit_event(Event {
                namespace: ds.namespace.clone(),
                name: ds.name.clone(),
                type_,
                reason: reason.into(),
                message: event_message(what, &items),
            })
            .await?;
    }
    Ok(())
}

/// Deletes the pods of the managed DaemonSets no longer in the source (`--prune`).
async fn prune_pods<C: Cluster>(
    w: &mut Writes<'_, '_, C>,
    state: &ClusterState,
    prune: &[Key],
) -> Result<(), Interrupted> {
    // The pruned pods, looked up once for the write log.
    let pruned: BTreeMap<(&str, &str), &crate::model::Pod> = if prune.is_empty() {
        BTreeMap::new()
    } else {
        state
            .observed
            .pods
            .iter()
            .map(|p| ((&*p.namespace, p.name.as_str()), p))
            .collect()
    };
    for (namespace, name) in prune {
        if w.first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        match w.cluster.delete_pod(namespace, name).await {
            Ok(()) | Err(ClusterError::NotFound { .. }) => {
                w.counts.deletes += 1;
                let pod = pruned.get(&(namespace.as_str(), name.as_str()));
                let owner = pod
                    .and_then(|p| p.controller.as_ref())
                    .map_or("", |c| c.name.as_str());
                w.log.push(
                    "delete",
                    &format!("{namespace}/{owner}"),
                    name,
                    pod.and_then(|p| p.target_node.as_deref())
                        .unwrap_or_default(),
                    pod.and_then(|p| p.revision_hash())
                        .unwrap_or_default()
                        .to_string(),
                    "Prune",
                );
            }
            Err(e) => keep_forbidden(&mut w.first_error, e),
        }
        if w.interrupted() {
            return Err(Interrupted);
        }
    }
    Ok(())
}

/// Updates one pod in place: its readiness gate goes False (so Services stop routing to it)
/// before its images and revision label are patched, on the condition that it is still the
/// pod the plan saw.
async fn update_in_place<C: Cluster>(
    cluster: &mut C,
    labels: &BTreeMap<String, String>,
    u: &plan::InPlaceUpdate,
) -> Result<(), ClusterError> {
    let Some(detail) = u.detail.as_deref() else {
        return Err(ClusterError::Rejected(format!(
            "pod {}/{} cannot be updated in place: its spec was not observed",
            u.namespace, u.name
        )));
    };
    let mut images = Vec::new();
    for change in &u.images {
        let list = if change.init {
            &detail.init_containers
        } else {
            &detail.containers
        };
        let Some(index) = list.iter().position(|c| *c == change.container) else {
            return Err(ClusterError::Rejected(format!(
                "pod {}/{} has no container {}: it is recreated instead",
                u.namespace, u.name, change.container
            )));
        };
        images.push((
            change.init,
            index,
            change.container.clone(),
            change.to.clone(),
        ));
    }
    // Each write is conditional on the pod being the one planned: the gate on the observed
    // resourceVersion, the patch on the one the gate's write left.
    // Set on every pod, gated or not: its transition time is when the update began, which the
    // progress deadline is measured from, and the gate opens again once the pod is ready.
    let mut resource_version = detail.resource_version.clone();
    {
        let after = cluster
            .set_pod_condition(
                &u.namespace,
                &u.name,
                IN_PLACE_READY_CONDITION,
                false,
                Some(&resource_version),
            )
            .await?;
        if !after.is_empty() {
            resource_version = after;
        }
    }
    let patch = crate::cluster::ImagePatch {
        resource_version,
        images,
        labels: labels.clone(),
    };
    let patched = cluster
        .patch_pod_images(&u.namespace, &u.name, &patch)
        .await;
    if let Err(e) = &patched
        && !matches!(e, ClusterError::NotFound { .. })
    {
        // The pod was not updated: it may serve again (best effort; a later pass opens the
        // gate of a ready pod anyway).
        let _ = cluster
            .set_pod_condition(&u.namespace, &u.name, IN_PLACE_READY_CONDITION, true, None)
            .await;
    }
    patched
}

/// The revision labels a native DaemonSet's pod takes when updated in place: the hash of the
/// built-in controller's current ControllerRevision and the template generation; `None`
/// until the controller has made that revision.
fn native_revision_labels(
    observed: &plan::Observed,
    ds: &plan::DaemonSetPlan,
) -> Option<BTreeMap<String, String>> {
    let live = observed.daemonsets.iter().find(|d| {
        d.metadata.namespace.as_deref().unwrap_or("default") == ds.namespace
            && d.metadata.name.as_deref() == Some(ds.name.as_str())
    })?;
    let uid = live.metadata.uid.as_deref()?;
    let generation = live
        .metadata
        .annotations
        .as_ref()?
        .get(crate::model::TEMPLATE_GENERATION_ANNOTATION)?
        .clone();
    let current = observed
        .revisions
        .iter()
        .filter(|r| r.controller.as_ref().is_some_and(|o| o.uid == uid))
        .max_by_key(|r| r.revision)?;
    Some(
        [
            (REVISION_HASH_LABEL.to_string(), current.hash.clone()),
            (
                crate::model::TEMPLATE_GENERATION_LABEL.to_string(),
                generation,
            ),
        ]
        .into(),
    )
}

/// The refusal of a pod by the cluster's admission, with what to do about it: the
/// namespace's Pod Security level, the webhook that denied it, or the quota.
fn admission_hint(message: &str, namespace: &str) -> String {
    let hint = if message.contains("violates PodSecurity") {
        format!(
            "namespace {namespace} enforces this Pod Security level \
             (pod-security.kubernetes.io/enforce): change the template, or label the namespace \
             with a level the DaemonSet meets"
        )
    } else if let Some(rest) = message.split("admission webhook \"").nth(1) {
        let webhook = rest.split('"').next().unwrap_or_default();
        format!(
            "the validating webhook {webhook} denied it: its policy decides (kubectl get \
             validatingwebhookconfigurations)"
        )
    } else if message.contains("exceeded quota") {
        format!(
            "a ResourceQuota of namespace {namespace} is used up (kubectl describe \
             resourcequota -n {namespace})"
        )
    } else {
        "the cluster's admission refused it".to_string()
    };
    format!("{message}; {hint}")
}

//! The execution of one step: for every active DaemonSet, its handover or its pod writes,
//! then the prune.

use super::assess::{Assessment, active_steps};
use super::handover;
use super::options::{ApplyOptions, Key, Log};
use super::status::event_message;
use crate::cluster::{Cluster, ClusterError, ClusterState, Event, EventType};
use crate::model::{IN_PLACE_READY_CONDITION, REVISION_HASH_LABEL};
use crate::plan::{self, DaemonSetSpec};
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) steps: usize,
    pub(super) creates: usize,
    pub(super) deletes: usize,
    pub(super) in_place: usize,
    /// Writes of handovers (take-over, claims, releases, native applies, relabels).
    pub(super) handover: usize,
}

impl Counts {
    /// Every write so far.
    fn writes(&self) -> usize {
        self.creates + self.deletes + self.in_place + self.handover
    }
}

pub(super) enum Executed {
    Done,
    Interrupted,
}

/// Executes one step: for every active DaemonSet, its deletes, then its creates in
/// slow-start batches; then the prune deletes.
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
    let interrupted =
        |counts: &Counts| opts.stop_after_writes.is_some_and(|n| counts.writes() >= n);
    let mut first_error = None;
    // Handovers first; a DaemonSet's step waits for the next round after its handover.
    for (key, work) in a.active_handovers() {
        if first_error.as_ref().is_some_and(ClusterError::stops_step) {
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
            cluster
                .ensure_record(&desired.daemonset, a.record_source(key, opts))
                .await?;
            let limit = opts
                .stop_after_writes
                .map(|n| n.saturating_sub(counts.writes() - counts.handover));
            handover::execute(cluster, ds, work, log, &mut counts.handover, limit).await
        };
        if let Err(e) = written.await {
            keep_forbidden(&mut first_error, e);
        }
        if interrupted(counts) {
            return Ok(Executed::Interrupted);
        }
    }
    for ds in active_steps(a) {
        if ds.step.is_empty()
            || a.handovers
                .contains_key(&(ds.namespace.clone(), ds.name.clone()))
        {
            continue;
        }
        if first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        let key = (ds.namespace.clone(), ds.name.clone());
        let Some((desired, spec)) = a.specs.get(&key) else {
            continue;
        };
        if let Err(e) = cluster
            .ensure_record(&desired.daemonset, a.record_source(&key, opts))
            .await
        {
            // This DaemonSet cannot be written without its record; the others can.
            let forbidden = e.stops_step();
            keep_forbidden(&mut first_error, e);
            if forbidden {
                break;
            }
            continue;
        }
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
        // Native: the built-in controller creates the new pods (and with its own
        // RollingUpdate, deletes the old ones too).
        let native = ds.ownership.mode == plan::Mode::Native;
        let controller_rolls = native && ds.ownership.builtin_rollout;
        let (mut created, mut deleted, mut failed_pods) = (Vec::new(), Vec::new(), Vec::new());
        let mut create_error = None;
        // Readiness gates of pods whose containers all run their images and are ready.
        for g in &ds.step.open_gates {
            match cluster
                .set_pod_condition(&g.namespace, &g.name, IN_PLACE_READY_CONDITION, true, None)
                .await
            {
                Ok(_) | Err(ClusterError::NotFound { .. }) => {}
                Err(e) => {
                    let stop = e.stops_step();
                    keep_forbidden(&mut first_error, e);
                    if stop {
                        break;
                    }
                }
            }
        }
        // Images pulled ahead of the nodes' turns, and pulls that are done.
        for c in &ds.step.pre_pull_cleanup {
            match cluster.delete_pod(&c.namespace, &c.name).await {
                Ok(()) | Err(ClusterError::NotFound { .. }) => {
                    log.push(
                        "pre-pull-cleanup",
                        &daemonset,
                        &c.name,
                        &c.node,
                        ds.revision.clone(),
                        &phase,
                    );
                }
                Err(e) => keep_forbidden(&mut first_error, e),
            }
        }
        let pre_pull_owner = plan::render::PodOwner::record(&spec.name);
        for p in &ds.step.pre_pull {
            if first_error.as_ref().is_some_and(ClusterError::stops_step) {
                break;
            }
            let pod = plan::render::pre_pull_pod(
                &desired.daemonset,
                spec,
                &p.node,
                &p.images,
                &pre_pull_owner,
            );
            match cluster.create_pod(pod).await {
                Ok(name) => {
                    log.push(
                        "pre-pull",
                        &daemonset,
                        &name,
                        &p.node,
                        ds.revision.clone(),
                        &phase,
                    );
                }
                Err(e) => keep_forbidden(&mut first_error, e),
            }
        }
        let mut updated = Vec::new();
        // The revision labels an updated pod takes: daemonsync's, or in native mode those of
        // the built-in controller's current revision (which it then counts as updated).
        let in_place_labels = if native {
            native_revision_labels(&state.observed, ds)
        } else {
            Some([(REVISION_HASH_LABEL.to_string(), ds.revision.clone())].into())
        };
        for u in &ds.step.in_place {
            if first_error.as_ref().is_some_and(ClusterError::stops_step) {
                break;
            }
            let Some(labels) = &in_place_labels else {
                break;
            };
            match update_in_place(cluster, labels, u).await {
                Ok(()) => {
                    counts.in_place += 1;
                    let from = &u.from_revision;
                    log.push(
                        "in-place",
                        &daemonset,
                        &u.name,
                        &u.node,
                        ds.revision.clone(),
                        &phase,
                    );
                    updated.push(format!("{} ({from} to {})", u.name, ds.revision));
                }
                Err(ClusterError::NotFound { .. }) => {}
                Err(e) => keep_forbidden(&mut first_error, e),
            }
            if interrupted(counts) {
                return Ok(Executed::Interrupted);
            }
        }
        for d in ds.step.delete.iter().filter(|_| !controller_rolls) {
            match cluster.delete_pod(&d.namespace, &d.name).await {
                Ok(()) | Err(ClusterError::NotFound { .. }) => {
                    counts.deletes += 1;
                    log.push(
                        "delete",
                        &daemonset,
                        &d.name,
                        &d.node,
                        d.revision.clone(),
                        &phase,
                    );
                    deleted.push(d.name.clone());
                    if d.reason == plan::DeleteReason::Failed {
                        failed_pods.push(format!("{} on node {}", d.name, d.node));
                    }
                }
                Err(e) => {
                    let forbidden = e.stops_step();
                    keep_forbidden(&mut first_error, e);
                    if forbidden {
                        break;
                    }
                }
            }
            if interrupted(counts) {
                return Ok(Executed::Interrupted);
            }
        }
        let owner = plan::render::PodOwner::record(&spec.name);
        // Nodes a rollout policy holds back get the stable revision's pod.
        let stable = plan::stable_daemonset(&state.observed, &ds.namespace, &ds.name)
            .map(|d| (d, DaemonSetSpec::compile(d)));
        let creates: Vec<(
            &plan::Name,
            &k8s_openapi::api::apps::v1::DaemonSet,
            &DaemonSetSpec,
        )> = ds
            .step
            .create
            .iter()
            .map(|n| (n, &desired.daemonset, spec))
            .chain(
                stable
                    .iter()
                    .flat_map(|(d, s)| ds.step.create_stable.iter().map(move |n| (n, *d, s))),
            )
            .filter(|_| !native)
            .collect();
        let mut batch = 1;
        let mut next = 0;
        let refused = first_error.as_ref().is_some_and(ClusterError::stops_step);
        'batches: while !refused && next < creates.len() {
            let end = (next + batch).min(creates.len());
            let mut failed = false;
            for &(node, template, template_spec) in &creates[next..end] {
                let pod = plan::render::pod_for_node(template, template_spec, node, &owner);
                match cluster.create_pod(pod).await {
                    Ok(name) => {
                        counts.creates += 1;
                        log.push(
                            "create",
                            &daemonset,
                            &name,
                            node,
                            template_spec.revision.clone(),
                            &phase,
                        );
                        created.push(name);
                    }
                    Err(e) => {
                        failed = true;
                        create_error.get_or_insert_with(|| e.to_string());
                        if let ClusterError::Refused(why) = &e {
                            // The DaemonSet's pods are at fault, not the client: it halts,
                            // the others go on.
                            refusals.insert(
                                (ds.namespace.clone(), ds.name.clone()),
                                (ds.revision.clone(), admission_hint(why, &ds.namespace)),
                            );
                            break 'batches;
                        }
                        let forbidden = e.stops_step();
                        keep_forbidden(&mut first_error, e);
                        if forbidden {
                            break 'batches;
                        }
                    }
                }
                if interrupted(counts) {
                    return Ok(Executed::Interrupted);
                }
            }
            if failed {
                break 'batches;
            }
            next = end;
            batch *= 2;
        }
        let events = [
            (
                EventType::Warning,
                "FailedDaemonPod",
                "found failed daemon pod(s), deleted",
                failed_pods,
            ),
            (
                EventType::Normal,
                "SuccessfulDelete",
                "deleted pod(s)",
                deleted,
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
                updated,
            ),
            (
                EventType::Warning,
                "FailedCreate",
                "error creating pods",
                create_error.into_iter().collect(),
            ),
        ];
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
    }
    // The pruned pods, looked up once for the write log.
    let pruned: BTreeMap<(&str, &str), &crate::model::Pod> = if prune.is_empty() {
        BTreeMap::new()
    } else {
        state
            .observed
            .pods
            .iter()
            .map(|p| ((p.namespace.as_str(), p.name.as_str()), p))
            .collect()
    };
    for (namespace, name) in prune {
        if first_error.as_ref().is_some_and(ClusterError::stops_step) {
            break;
        }
        match cluster.delete_pod(namespace, name).await {
            Ok(()) | Err(ClusterError::NotFound { .. }) => {
                counts.deletes += 1;
                let pod = pruned.get(&(namespace.as_str(), name.as_str()));
                let owner = pod
                    .and_then(|p| p.controller.as_ref())
                    .map_or("", |c| c.name.as_str());
                log.push(
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
            Err(e) => keep_forbidden(&mut first_error, e),
        }
        if interrupted(counts) {
            return Ok(Executed::Interrupted);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(Executed::Done),
    }
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

/// Keeps the first error of a step, unless a refusal (or a stop) comes later: that one
/// decides.
pub(super) fn keep_forbidden(first: &mut Option<ClusterError>, e: ClusterError) {
    if first.is_none() || e.stops_step() && !first.as_ref().is_some_and(ClusterError::stops_step) {
        *first = Some(e);
    }
}

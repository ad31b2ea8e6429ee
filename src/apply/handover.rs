//! The writes of a handover between daemonsync and the built-in DaemonSet controller
//! ([`crate::plan::ownership`] decides them): a take-over deletes the live DaemonSet with
//! orphan propagation, a claim makes the record the controller of orphaned pods (keeping
//! those whose template is git's: no restart), native mode writes the `apps/v1` DaemonSet
//! under `OnDelete`, and going native (or `daemonsync release`) hands the record's pods to
//! the built-in controller and relabels them with its revision.
//!
//! Each write is conditional on what was observed (a uid, a resourceVersion), and each round
//! does only what the observed state still needs, so a handover killed at any point is
//! finished by the next run.

use super::options::Log;
use crate::cluster::{Cluster, ClusterError, MetadataPatch, OwnerChange};
use crate::model::{
    MANAGED_BY_LABEL, MANAGED_BY_VALUE, REVISION_HASH_LABEL, TEMPLATE_GENERATION_LABEL,
};
use crate::plan::ownership::{AUTOSCALER_DAEMONSET_POD, Handover, MANIFEST_STRATEGY, Mode};
use crate::plan::{DaemonSetPlan, Desired, Observed};
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetUpdateStrategy};
use std::collections::BTreeMap;

/// What one DaemonSet's handover writes this round.
#[derive(Debug, Clone)]
pub enum Work {
    /// Delete the live DaemonSet (orphan propagation, uid precondition).
    TakeOver {
        /// Its uid.
        uid: String,
    },
    /// Make the record the controller of these orphaned pods; `true`: git's template, the
    /// pod takes daemonsync's revision label.
    Claim(Vec<(String, bool)>),
    /// Release the record's pods (orphan them), then write the native DaemonSet when it does
    /// not exist yet.
    Release {
        /// The record-owned pods, with the record's uid.
        pods: Vec<(String, String)>,
        /// The native DaemonSet to write, when there is none.
        apply: Option<Box<DaemonSet>>,
    },
    /// Write the native DaemonSet.
    Apply(Box<DaemonSet>),
    /// Relabel pods the built-in controller adopted with its revision.
    Relabel {
        /// The pods.
        pods: Vec<String>,
        /// Labels set on each.
        labels: BTreeMap<String, String>,
    },
}

/// The `apps/v1` DaemonSet daemonsync writes for a native DaemonSet: git's, under
/// `OnDelete` (daemonsync applies git's strategy itself, kept in an annotation), or under
/// git's own strategy when the built-in controller rolls it out (`builtin_rollout`).
pub fn native_form(desired: &DaemonSet, builtin_rollout: bool) -> DaemonSet {
    let mut ds = desired.clone();
    let own = ds
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.clone())
        .unwrap_or_default();
    ds.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(
            MANIFEST_STRATEGY.to_string(),
            serde_json::to_string(&own).unwrap_or_default(),
        );
    if !builtin_rollout && let Some(spec) = ds.spec.as_mut() {
        spec.update_strategy = Some(DaemonSetUpdateStrategy {
            type_: Some("OnDelete".into()),
            rolling_update: None,
        });
    }
    ds
}

/// Whether the live DaemonSet differs from what daemonsync writes: another template, strategy,
/// `minReadySeconds` or recorded manifest strategy.
fn needs_apply(live: Option<&DaemonSet>, native: &DaemonSet) -> bool {
    let Some(live) = live else {
        return true;
    };
    let spec = |d: &DaemonSet| {
        (
            strategy_of(d),
            d.spec
                .as_ref()
                .and_then(|s| s.min_ready_seconds)
                .unwrap_or(0),
        )
    };
    let recorded = |d: &DaemonSet| {
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(MANIFEST_STRATEGY))
            .cloned()
    };
    !crate::plan::live::template_differences(native, live).is_empty()
        || spec(live) != spec(native)
        || recorded(live) != recorded(native)
}

/// A DaemonSet's update strategy as the controller reads it: defaulted, and `rollingUpdate`
/// ignored under `OnDelete` (the API server keeps one another manager wrote there).
fn strategy_of(d: &DaemonSet) -> crate::plan::UpdateStrategy {
    d.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .map_or(
            crate::plan::UpdateStrategy::DEFAULT,
            crate::plan::UpdateStrategy::from_k8s,
        )
}

fn live<'o>(observed: &'o Observed, ds: &DaemonSetPlan) -> Option<&'o DaemonSet> {
    observed.daemonsets.iter().find(|d| {
        d.metadata.namespace.as_deref().unwrap_or("default") == ds.namespace
            && d.metadata.name.as_deref() == Some(ds.name.as_str())
    })
}

/// What the handover of `ds` writes this round, if anything.
pub fn work(ds: &DaemonSetPlan, desired: &Desired, observed: &Observed) -> Option<Work> {
    let native = || native_form(&desired.daemonset, ds.ownership.builtin_rollout);
    match &ds.ownership.handover {
        Handover::None | Handover::Blocked { .. } | Handover::Waiting { .. } => None,
        Handover::TakeOver { uid } => Some(Work::TakeOver { uid: uid.clone() }),
        Handover::Claim { pods } => Some(Work::Claim(
            pods.iter().map(|c| (c.name.clone(), c.keep)).collect(),
        )),
        Handover::Release => {
            let pods = observed
                .pods
                .iter()
                .filter(|p| *p.namespace == *ds.namespace)
                .filter_map(|p| {
                    let o = p.controller.as_ref()?;
                    (o.kind == crate::plan::RECORD_KIND && o.name == ds.name)
                        .then(|| (p.name.clone(), o.uid.clone()))
                })
                .collect();
            let apply = live(observed, ds).is_none().then(|| Box::new(native()));
            Some(Work::Release { pods, apply })
        }
        Handover::ApplyNative => {
            let native = native();
            needs_apply(live(observed, ds), &native).then(|| Work::Apply(Box::new(native)))
        }
        Handover::Relabel {
            pods,
            hash,
            generation,
        } => Some(Work::Relabel {
            pods: pods.clone(),
            labels: [
                (REVISION_HASH_LABEL.to_string(), hash.clone()),
                (
                    TEMPLATE_GENERATION_LABEL.to_string(),
                    generation.to_string(),
                ),
            ]
            .into(),
        }),
    }
}

/// The labels and annotations a pod the record claims takes.
fn claimed(revision: &str, keep: bool) -> MetadataPatch {
    let mut labels: BTreeMap<String, String> =
        [(MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string())].into();
    if keep {
        labels.insert(REVISION_HASH_LABEL.to_string(), revision.to_string());
    }
    MetadataPatch {
        owner: OwnerChange::Keep,
        labels,
        annotations: [(AUTOSCALER_DAEMONSET_POD.to_string(), "true".to_string())].into(),
    }
}

/// Executes one DaemonSet's handover work; every write goes to the log and counts in
/// `written`. Pods that went away meanwhile are skipped; the first other error stops the work
/// (the next round re-plans), and so does `written` reaching `limit` (a kill, in tests).
pub(super) async fn execute<C: Cluster>(
    cluster: &mut C,
    ds: &DaemonSetPlan,
    work: &Work,
    log: &mut Log<'_>,
    written: &mut usize,
    limit: Option<usize>,
) -> Result<(), ClusterError> {
    let daemonset = format!("{}/{}", ds.namespace, ds.name);
    let phase = match ds.ownership.mode {
        Mode::Managed => "Take over",
        Mode::Native => "Native",
    };
    let skip_gone = |r: Result<(), ClusterError>| match r {
        Err(ClusterError::NotFound { .. }) => Ok(()),
        other => other,
    };
    let mut done = |log: &mut Log<'_>, verb, pod: &str, revision: String| {
        log.push(verb, &daemonset, pod, "", revision, phase);
        *written += 1;
        limit.is_some_and(|n| *written >= n)
    };
    match work {
        Work::TakeOver { uid } => {
            cluster
                .delete_daemonset(&ds.namespace, &ds.name, uid)
                .await?;
            done(log, "take-over", "", String::new());
        }
        Work::Claim(pods) => {
            for (name, keep) in pods {
                let mut patch = claimed(&ds.revision, *keep);
                patch.owner = OwnerChange::Claim(ds.name.clone());
                skip_gone(
                    cluster
                        .patch_pod_metadata(&ds.namespace, name, &patch)
                        .await,
                )?;
                let verb = if *keep { "claim" } else { "claim-old" };
                if done(log, verb, name, ds.revision.clone()) {
                    return Ok(());
                }
            }
        }
        Work::Release { pods, apply } => {
            for (name, record_uid) in pods {
                let patch = MetadataPatch {
                    owner: OwnerChange::Release(record_uid.clone()),
                    ..MetadataPatch::default()
                };
                skip_gone(
                    cluster
                        .patch_pod_metadata(&ds.namespace, name, &patch)
                        .await,
                )?;
                if done(log, "release", name, String::new()) {
                    return Ok(());
                }
            }
            if let Some(native) = apply {
                cluster.apply_daemonset(native).await?;
                done(log, "apply", "", ds.revision.clone());
            }
        }
        Work::Apply(native) => {
            cluster.apply_daemonset(native).await?;
            done(log, "apply", "", ds.revision.clone());
        }
        Work::Relabel { pods, labels } => {
            for name in pods {
                let patch = MetadataPatch {
                    labels: labels.clone(),
                    ..MetadataPatch::default()
                };
                skip_gone(
                    cluster
                        .patch_pod_metadata(&ds.namespace, name, &patch)
                        .await,
                )?;
                let hash = labels.get(REVISION_HASH_LABEL).cloned().unwrap_or_default();
                if done(log, "relabel", name, hash) {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// What `daemonsync release` did.
#[derive(Debug, Clone)]
pub struct Released {
    /// The pods the built-in controller runs now (the same pods: none was restarted).
    pub pods: Vec<String>,
    /// The strategy the `apps/v1` DaemonSet runs under now.
    pub strategy: String,
    /// Every write, in order.
    pub writes: Vec<super::Write>,
}

/// How `release` runs.
#[derive(Debug, Clone)]
pub struct ReleaseOptions {
    /// Give up after this long (cluster time).
    pub timeout: jiff::SignedDuration,
    /// Fault injection: stop (as if killed) after this many writes.
    pub stop_after_writes: Option<usize>,
}

impl Default for ReleaseOptions {
    fn default() -> Self {
        ReleaseOptions {
            timeout: jiff::SignedDuration::from_mins(5),
            stop_after_writes: None,
        }
    }
}

/// Why `release` could not finish.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The cluster failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// Nothing to release.
    #[error(
        "no ManagedDaemonSet {0} and no DaemonSet of that name: nothing to release (`kubectl get \
         mds -A` lists the DaemonSets daemonsync manages)"
    )]
    NoRecord(String),
    /// The record's spec is not a DaemonSet.
    #[error("the record {0} holds no readable DaemonSet: nothing to hand over")]
    NoDaemonSet(String),
    /// Stopped after the requested number of writes (fault injection).
    #[error("stopped after {0} writes, as asked")]
    Interrupted(usize),
    /// It took too long.
    #[error(
        "{what} was not done within {timeout:#} ({state}); run the same command again to finish \
         it"
    )]
    TimedOut {
        /// `namespace/name`.
        what: String,
        /// The limit.
        timeout: jiff::SignedDuration,
        /// Where it stood.
        state: String,
    },
}

/// The DaemonSet a record holds, as the built-in controller will run it after a release:
/// daemonsync's annotations gone, its own update strategy.
fn released_form(ds: &DaemonSet) -> DaemonSet {
    let mut ds = ds.clone();
    if let Some(a) = ds.metadata.annotations.as_mut() {
        a.retain(|k, _| !k.starts_with(crate::plan::progressive::ANNOTATION_PREFIX));
    }
    ds
}

/// Hands a managed DaemonSet to the built-in controller with no pod restarted: the record is
/// frozen (a running `sync` writes nothing for it), its pods are released (orphaned), the `apps/v1`
/// DaemonSet is created from the record under `OnDelete`, the built-in controller adopts the
/// pods and daemonsync relabels them with the hash of its ControllerRevision, then the
/// DaemonSet takes its own update strategy and the record is deleted with orphan propagation.
/// Level-triggered: each round does what the cluster still needs, so a release killed at any
/// point is finished by running it again.
pub async fn release<C: Cluster>(
    cluster: &mut C,
    namespace: &str,
    name: &str,
    opts: &ReleaseOptions,
) -> Result<Released, ReleaseError> {
    let key = format!("{namespace}/{name}");
    let timeout = opts.timeout;
    let mut writes = Vec::new();
    let mut state = cluster.observe().await?;
    let deadline = crate::model::later(state.now, timeout);
    loop {
        let record = state
            .records
            .iter()
            .find(|r| r.namespace == namespace && r.name == name)
            .cloned();
        let live = state
            .observed
            .daemonsets
            .iter()
            .find(|d| {
                d.metadata.namespace.as_deref().unwrap_or("default") == namespace
                    && d.metadata.name.as_deref() == Some(name)
            })
            .cloned();
        let Some(record) = record else {
            let Some(live) = live else {
                return Err(ReleaseError::NoRecord(key));
            };
            return Ok(done(&state.observed, &live, writes));
        };
        let ds = record
            .daemonset
            .clone()
            .filter(|d| d.spec.is_some())
            .ok_or_else(|| ReleaseError::NoDaemonSet(key.clone()))?;
        let mut log = Log {
            time: state.now,
            entries: Some(&mut writes),
        };
        let waiting = if record.deleting {
            Some("the record's deletion".to_string())
        } else if record.frozen {
            release_round(cluster, &state, &ds, live.as_ref(), &mut log, opts).await?
        } else {
            // Frozen, not paused: a paused DaemonSet still gets pods on new nodes, which
            // would race the built-in controller taking them over.
            let frozen = [(
                crate::model::FROZEN_ANNOTATION.to_string(),
                Some("true".into()),
            )];
            cluster
                .annotate_record(namespace, name, &frozen.into())
                .await?;
            log.push("freeze", &key, "", "", String::new(), "Release");
            None
        };
        if opts.stop_after_writes.is_some_and(|n| writes.len() >= n) {
            return Err(ReleaseError::Interrupted(writes.len()));
        }
        if state.now >= deadline {
            return Err(ReleaseError::TimedOut {
                what: format!("releasing {key}"),
                timeout,
                state: waiting.unwrap_or_else(|| "its last writes to take effect".into()),
            });
        }
        // Until the cluster shows what was written (or, waiting, until it changes).
        let wake = crate::model::later(state.now, jiff::SignedDuration::from_secs(2));
        cluster.wait_for_change(wake.min(deadline)).await?;
        state = cluster.observe().await?;
    }
}

/// One round of a release (the record is frozen): the handover's work, or once the built-in
/// controller runs every pod under its revision, the DaemonSet's own strategy and the
/// record's deletion. `Some(what)`: nothing was written, waiting for that.
async fn release_round<C: Cluster>(
    cluster: &mut C,
    state: &crate::cluster::ClusterState,
    ds: &DaemonSet,
    live: Option<&DaemonSet>,
    log: &mut Log<'_>,
    opts: &ReleaseOptions,
) -> Result<Option<String>, ClusterError> {
    let (namespace, name) = (
        ds.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        ds.metadata.name.clone().unwrap_or_default(),
    );
    let mut native = ds.clone();
    let annotations = native
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    annotations.remove(crate::plan::ownership::ADOPT);
    annotations.insert(crate::plan::ownership::MODE.into(), "native".into());
    let desired = Desired::new("", native);
    let plan = crate::plan::plan(
        std::slice::from_ref(&desired),
        &state.observed,
        &crate::plan::Policy::default(),
        state.now,
    );
    let Some(ds_plan) = plan.daemonsets.first() else {
        return Ok(Some("nothing planned".into()));
    };
    // Once the DaemonSet exists, its own strategy replaces the native form's `OnDelete`.
    if let Some(work) = work(ds_plan, &desired, &state.observed)
        && !(matches!(work, Work::Apply(_)) && live.is_some())
    {
        let written = log.entries.as_ref().map_or(0, |w| w.len());
        let limit = opts.stop_after_writes.map(|n| n.saturating_sub(written));
        execute(cluster, ds_plan, &work, log, &mut 0, limit).await?;
        return Ok(None);
    }
    let Some(live) = live else {
        return Ok(Some("the DaemonSet to appear".into()));
    };
    let uid = live.metadata.uid.clone().unwrap_or_default();
    let selector = crate::plan::DaemonSetSpec::compile(ds).selector;
    let waiting = state
        .observed
        .pods
        .iter()
        .filter(|p| *p.namespace == *namespace && !p.is_terminating())
        .filter(|p| selector.as_ref().is_some_and(|s| s.matches(&p.labels)))
        .filter(|p| p.controller.as_ref().is_none_or(|o| o.uid != uid))
        .count();
    if waiting > 0 {
        return Ok(Some(format!(
            "{waiting} pod(s) to be adopted by the built-in controller"
        )));
    }
    let own = released_form(ds);
    let annotated = live
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MANIFEST_STRATEGY));
    let key = format!("{namespace}/{name}");
    if annotated || strategy_of(live) != strategy_of(&own) {
        cluster.apply_daemonset(&own).await?;
        log.push("apply", &key, "", "", String::new(), "Release");
        return Ok(None);
    }
    match cluster.delete_record(&namespace, &name).await {
        // Deleted meanwhile: the last round's deletion, now done.
        Ok(()) | Err(ClusterError::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    log.push("delete-record", &key, "", "", String::new(), "Release");
    Ok(None)
}

/// The release is over: the pods the DaemonSet runs.
fn done(observed: &Observed, live: &DaemonSet, writes: Vec<super::Write>) -> Released {
    let uid = live.metadata.uid.clone().unwrap_or_default();
    let mut pods: Vec<String> = observed
        .pods
        .iter()
        .filter(|p| p.controller.as_ref().is_some_and(|o| o.uid == uid))
        .filter(|p| !p.is_terminating())
        .map(|p| p.name.clone())
        .collect();
    pods.sort();
    let strategy = live
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.clone())
        .unwrap_or_else(|| "RollingUpdate".into());
    Released {
        pods,
        strategy,
        writes,
    }
}

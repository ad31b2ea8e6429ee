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

use super::Log;
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
        let s = d.spec.as_ref();
        (
            s.and_then(|s| s.update_strategy.as_ref())
                .and_then(|u| u.type_.clone()),
            s.and_then(|s| s.update_strategy.as_ref())
                .and_then(|u| u.rolling_update.clone()),
            s.and_then(|s| s.min_ready_seconds).unwrap_or(0),
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
                .filter(|p| p.namespace == ds.namespace)
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

/// Executes one DaemonSet's handover work; every write goes to the log. Pods that went away
/// meanwhile are skipped; the first other error stops the work (the next round re-plans).
pub(super) async fn execute<C: Cluster>(
    cluster: &mut C,
    ds: &DaemonSetPlan,
    work: &Work,
    log: &mut Log<'_>,
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
    match work {
        Work::TakeOver { uid } => {
            cluster
                .delete_daemonset(&ds.namespace, &ds.name, uid)
                .await?;
            log.push("take-over", &daemonset, "", "", String::new(), phase);
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
                log.push(verb, &daemonset, name, "", ds.revision.clone(), phase);
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
                log.push("release", &daemonset, name, "", String::new(), phase);
            }
            if let Some(native) = apply {
                cluster.apply_daemonset(native).await?;
                log.push("apply", &daemonset, "", "", ds.revision.clone(), phase);
            }
        }
        Work::Apply(native) => {
            cluster.apply_daemonset(native).await?;
            log.push("apply", &daemonset, "", "", ds.revision.clone(), phase);
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
                log.push("relabel", &daemonset, name, "", hash, phase);
            }
        }
    }
    Ok(())
}

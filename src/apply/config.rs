//! The config copies a DaemonSet's revisions need (`manifest::versioning`): which to write
//! before the first pod (or native DaemonSet) of a revision that references them, and which
//! to delete once a rollout is complete. Pure: [`work`] decides from one observation.
//!
//! A copy is kept while the current revision references it, while the stable revision (the
//! one nodes held back by a rollout policy run) or the live `apps/v1` DaemonSet does, and,
//! for each object it copies, the newest copy that is not current: the previous revision's,
//! for a revert. The others are deleted once the DaemonSet's pods all run the current
//! revision and none is still terminating.

use super::options::Log;
use crate::cluster::{Cluster, ClusterError, ClusterState, ObservedCopy};
use crate::manifest::config::{ConfigCopy, ConfigKind, daemonset_label};
use crate::manifest::versioning::references;
use crate::plan::{self, DaemonSetPlan, Desired};
use k8s_openapi::api::apps::v1::DaemonSet;
use std::collections::{BTreeMap, BTreeSet};

/// One DaemonSet's config writes.
#[derive(Debug, Clone, Default)]
pub struct ConfigWork {
    /// Copies its revision references that the cluster lacks.
    pub create: Vec<ConfigCopy>,
    /// Copies no revision needs any more (empty until its rollout is complete).
    pub delete: Vec<ObservedCopy>,
}

impl ConfigWork {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.delete.is_empty()
    }
}

/// Whether a DaemonSet's rollout is complete: nothing to do, every pod it should run updated
/// and available, none misscheduled.
pub fn rollout_complete(ds: &DaemonSetPlan) -> bool {
    let s = &ds.status;
    ds.step.is_empty()
        && s.updated_number_scheduled == s.desired_number_scheduled
        && s.number_available == s.desired_number_scheduled
        && s.number_misscheduled == 0
}

/// The names of the ConfigMaps and Secrets a DaemonSet's template references.
fn referenced(ds: &DaemonSet) -> BTreeSet<(ConfigKind, String)> {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|spec| {
            references(spec)
                .into_iter()
                .map(|r| (r.kind, r.name))
                .collect()
        })
        .unwrap_or_default()
}

/// What `ds` (planned from `desired` against `state`) writes of its config copies.
pub fn work(ds: &DaemonSetPlan, desired: &Desired, state: &ClusterState) -> ConfigWork {
    let label = daemonset_label(&ds.name);
    let existing: Vec<&ObservedCopy> = state
        .config_copies
        .iter()
        .filter(|c| c.namespace == ds.namespace && c.daemonset == label && !c.deleting)
        .collect();
    let present: BTreeSet<(ConfigKind, &str)> =
        existing.iter().map(|c| (c.kind, c.name.as_str())).collect();
    let create = desired
        .config
        .iter()
        .filter(|c| !present.contains(&(c.kind, c.name.as_str())))
        .cloned()
        .collect();
    // Looked at only for a DaemonSet with copies whose rollout is complete.
    let terminating = || {
        state.observed.pods.iter().any(|p| {
            *p.namespace == *ds.namespace
                && p.is_terminating()
                && p.controller.as_ref().is_some_and(|o| {
                    o.name == ds.name && (o.kind == plan::RECORD_KIND || o.kind == "DaemonSet")
                })
        })
    };
    let delete = if !existing.is_empty() && rollout_complete(ds) && !terminating() {
        obsolete(ds, desired, state, &existing)
    } else {
        Vec::new()
    };
    ConfigWork { create, delete }
}

/// The copies of `existing` no revision needs (see the module).
fn obsolete(
    ds: &DaemonSetPlan,
    desired: &Desired,
    state: &ClusterState,
    existing: &[&ObservedCopy],
) -> Vec<ObservedCopy> {
    let current: BTreeSet<(ConfigKind, String)> = desired
        .config
        .iter()
        .map(|c| (c.kind, c.name.clone()))
        .collect();
    let mut keep = current.clone();
    if let Some(stable) = plan::stable_daemonset(&state.observed, &ds.namespace, &ds.name) {
        keep.extend(referenced(stable));
    }
    if let Some(live) = state.observed.daemonsets.iter().find(|d| {
        d.metadata.namespace.as_deref().unwrap_or("default") == ds.namespace
            && d.metadata.name.as_deref() == Some(ds.name.as_str())
    }) {
        keep.extend(referenced(live));
    }
    // The previous revision's: for each object copied, the newest copy that is not current
    // (all of those created at that same instant).
    let mut by_object: BTreeMap<(ConfigKind, &str), Vec<&ObservedCopy>> = BTreeMap::new();
    for c in existing {
        if !current.contains(&(c.kind, c.name.clone())) {
            by_object
                .entry((c.kind, c.copy_of.as_str()))
                .or_default()
                .push(c);
        }
    }
    let mut delete = Vec::new();
    for copies in by_object.into_values() {
        let latest = copies.iter().filter_map(|c| c.created).max();
        for c in copies {
            let previous = latest.is_none() || c.created == latest;
            if !previous && !keep.contains(&(c.kind, c.name.clone())) {
                delete.push((*c).clone());
            }
        }
    }
    delete.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    delete
}

/// Writes the copies a revision needs that the cluster lacks, owned by `owner`; each write
/// goes to the log (verb `create-config`, the copy as `configmap/NAME`). Returns how many
/// were written; the first failure stops: the revision's pods would not start without them.
pub(super) async fn write_copies<C: Cluster>(
    cluster: &mut C,
    copies: &[ConfigCopy],
    owner: &plan::render::PodOwner,
    log: &mut Log<'_>,
    (daemonset, revision, phase): (&str, &str, &str),
) -> Result<usize, ClusterError> {
    let mut written = 0;
    for copy in copies {
        cluster.create_config_copy(copy, owner).await?;
        log.push(
            "create-config",
            daemonset,
            &copy.id(),
            "",
            revision.to_string(),
            phase,
        );
        written += 1;
    }
    Ok(written)
}

/// Deletes copies no revision needs (verb `delete-config`). Returns how many went; one that
/// is gone already counts as gone.
pub(super) async fn delete_copies<C: Cluster>(
    cluster: &mut C,
    copies: &[ObservedCopy],
    log: &mut Log<'_>,
    daemonset: &str,
) -> Result<usize, ClusterError> {
    let mut deleted = 0;
    for copy in copies {
        match cluster.delete_config_copy(copy).await {
            Ok(()) | Err(ClusterError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
        let id = format!("{}/{}", copy.kind, copy.name);
        log.push(
            "delete-config",
            daemonset,
            &id,
            "",
            String::new(),
            "Rollout",
        );
        deleted += 1;
    }
    Ok(deleted)
}

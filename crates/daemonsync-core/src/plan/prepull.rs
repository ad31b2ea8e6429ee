//! `daemonsync.io/pre-pull`: a node's new images are pulled, by a short-lived pod, before its
//! turn in the rollout comes, so that a daemon pod is down only as long as it takes to start.
//! A node whose images are not there yet waits; pulls run at most the parallelism at once, in
//! rollout order, and a pull that fails on a Ready node halts the DaemonSet before any daemon
//! pod is touched.

use super::context::{Context, Prepared};
use super::view::Slot;
use super::{Name, PodRef, PrePull, PrePullPlan, PullFailure, progressive, render};
use crate::model::Pod;
use rustc_hash::FxHashMap as HashMap;

impl Context<'_> {
    /// `daemonsync.io/pre-pull`: marks the out-of-date nodes whose new images are not there
    /// yet (their turn waits), and returns where pulling stands, the pre-pull pods to create
    /// (at most the parallelism in flight, in rollout order) and those to remove.
    pub(super) fn pre_pull(
        &self,
        d: &Prepared<'_>,
        slots: &mut [Slot],
        node_rollouts: &[Option<progressive::NodeRollout>],
    ) -> (Option<PrePullPlan>, Vec<PrePull>, Vec<PodRef>) {
        let (ds, spec) = (d.ds, &d.spec);
        let Some(policy) = d.annotated.policy.as_ref().filter(|p| p.pre_pull) else {
            return (None, Vec::new(), Vec::new());
        };
        if !d.rolling || self.manifest_only {
            return (None, Vec::new(), Vec::new());
        }
        let pod_spec = ds.spec.as_ref().and_then(|s| s.template.spec.as_ref());
        let mut images: Vec<String> = pod_spec
            .into_iter()
            .flat_map(|p| p.init_containers.iter().flatten().chain(&p.containers))
            .filter_map(|c| c.image.clone())
            .collect();
        images.sort();
        images.dedup();
        let ours = |p: &&Pod| {
            *p.namespace == *spec.namespace
                && p.labels.get(render::PRE_PULL_LABEL) == Some(&spec.name)
                && !p.is_terminating()
        };
        let current =
            |p: &Pod| p.labels.get(render::PRE_PULL_REVISION_LABEL) == Some(&spec.revision);
        let pods: Vec<&Pod> = self.observed.pods.iter().filter(ours).collect();
        let by_node: HashMap<&str, &Pod> = pods
            .iter()
            .filter(|p| current(p))
            .filter_map(|p| Some((p.target_node.as_deref()?, *p)))
            .collect();
        let failed_pull = |p: &Pod| {
            p.waiting_reason.as_deref().is_some_and(|r| {
                matches!(
                    r,
                    "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "ErrImageNeverPull"
                )
            })
        };
        let mut pulled = 0;
        let mut in_flight = Vec::new();
        let mut candidates = Vec::new();
        let mut failed = Vec::new();
        let mut has_images: HashMap<&str, bool> = HashMap::default();
        for (i, slot) in slots.iter_mut().enumerate() {
            let Some(pos) = slot.node else { continue };
            if !slot.should_run
                || !slot.pods.iter().any(|p| p.is_running())
                || slot.pods.iter().any(|p| p.is_running() && p.updated)
            {
                // Nothing to pull ahead: a node without a pod pulls as its pod starts, and
                // an updated node has its images.
                continue;
            }
            let node = self.node_at(pos);
            let present = images
                .iter()
                .all(|img| node.images.binary_search(img).is_ok());
            has_images.insert(node.name.as_str(), present);
            let pod = by_node.get(node.name.as_str());
            let done = pod.is_some_and(|p| p.phase.is_terminal() && !failed_pull(p));
            if present || done {
                pulled += 1;
                continue;
            }
            let partition = node_rollouts
                .get(i)
                .copied()
                .flatten()
                .is_some_and(|r| r.hold == Some(progressive::Hold::Partition));
            if partition {
                continue;
            }
            slot.pulling = true;
            match pod {
                Some(p) if failed_pull(p) => {
                    if node.ready != Some(false) {
                        failed.push(PullFailure {
                            node: self.slot_name(slot),
                            pod: p.name.clone(),
                            reason: format!(
                                "{} ({})",
                                p.waiting_reason.clone().unwrap_or_default(),
                                images.join(", ")
                            ),
                        });
                    }
                }
                Some(_) => in_flight.push(i),
                None => candidates.push((
                    node_rollouts
                        .get(i)
                        .copied()
                        .flatten()
                        .and_then(|r| r.stage)
                        .unwrap_or(u32::MAX),
                    i,
                    images
                        .iter()
                        .filter(|img| node.images.binary_search(img).is_err())
                        .cloned()
                        .collect::<Vec<_>>(),
                )),
            }
        }
        let eligible = slots
            .iter()
            .filter(|s| s.node.is_some() && s.should_run)
            .count();
        let parallelism = policy.pre_pull_parallelism.ceil(eligible).max(1);
        candidates.sort_by_key(|c| (c.0, c.1));
        let start: Vec<PrePull> = if failed.is_empty() {
            candidates
                .iter()
                .take(parallelism.saturating_sub(in_flight.len()))
                .map(|(_, i, missing)| PrePull {
                    node: self.slot_name(&slots[*i]),
                    images: missing.clone(),
                })
                .collect()
        } else {
            Vec::new()
        };
        // Done pulls go once the node reports the images (or has its new pod); pulls of
        // another revision go at once. A failed pull stays: it is why the DaemonSet halted.
        let cleanup = pods
            .iter()
            .filter(|p| {
                let node = p.target_node.as_deref().unwrap_or_default();
                !current(p)
                    || (p.phase.is_terminal()
                        && !failed_pull(p)
                        && has_images.get(node).is_none_or(|present| *present))
            })
            .map(|p| PodRef {
                namespace: p.namespace.to_string(),
                name: p.name.clone(),
                node: Name::from(p.target_node.as_deref().unwrap_or_default()),
            })
            .collect();
        let plan = PrePullPlan {
            images,
            parallelism,
            pulled,
            pulling: in_flight
                .iter()
                .map(|&i| self.slot_name(&slots[i]))
                .collect(),
            waiting: candidates.len().saturating_sub(start.len()),
            failed,
        };
        (Some(plan), start, cleanup)
    }
}

//! What the record's holds leave of a DaemonSet's step (docs/progressive.md, "Pause and
//! freeze"): `daemonsync pause` (`daemonsync.io/paused: "true"`) stops replacing pods, but a
//! node that has no pod (it joined, or its pod was deleted) still gets one of the stable
//! revision, so a paused rollout never leaves a node without its CNI or log agent;
//! `daemonsync freeze` (`daemonsync.io/frozen: "true"`) stops every write, for an incident.
//!
//! The stable revision is the one the rollout started from (the record's `status.stable`,
//! else the live `apps/v1` DaemonSet's template, as [`super::stable_daemonset`] finds it); when
//! no rollout is under way (no node runs another revision) it is the current one.

use super::context::{Context, Prepared};
use super::view::{Actions, Slot};
use serde::Serialize;

/// The record's hold on a DaemonSet, in its plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum Suspension {
    /// `daemonsync pause`: no pod is replaced; a node that has none gets a pod of `revision`
    /// (none when no stable revision is known while a rollout is under way).
    Paused {
        /// The revision such a node gets.
        #[serde(skip_serializing_if = "Option::is_none")]
        revision: Option<String>,
    },
    /// `daemonsync freeze`: nothing is written.
    Frozen,
}

/// What a paused DaemonSet creates on a node that has no pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Serve {
    /// A pod of the current revision: no rollout is under way.
    Current,
    /// A pod of the stable revision.
    Stable,
    /// Nothing: a rollout is under way and no stable revision is known.
    Nothing,
}

impl Context<'_> {
    /// The record's hold on this DaemonSet, and for a pause what a node without a pod gets.
    /// `apply --force` writes through a pause (it paused the record for a daemon itself), not
    /// through a freeze.
    pub(super) fn suspension(
        &self,
        d: &Prepared<'_>,
        slots: &[Slot],
    ) -> Option<(Suspension, Serve)> {
        if self.builtin || self.manifest_only {
            return None;
        }
        let record = self.record(&d.spec.namespace, &d.spec.name)?;
        if record.frozen {
            return Some((Suspension::Frozen, Serve::Nothing));
        }
        if !record.paused || self.ignore_pause {
            return None;
        }
        let under_way = slots.iter().any(|s| {
            s.node.is_some() && s.should_run && s.pods.iter().any(|p| p.is_running() && !p.updated)
        });
        let (revision, serve) = if !under_way {
            (Some(d.spec.revision.clone()), Serve::Current)
        } else {
            match &d.annotated.stable {
                Some((_, rev)) => (Some(rev.clone()), Serve::Stable),
                None => (None, Serve::Nothing),
            }
        };
        Some((Suspension::Paused { revision }, serve))
    }
}

/// A paused DaemonSet's actions: a pod for each node that should run one and has none, of
/// the revision `serve` says; nothing is deleted, replaced or updated in place.
pub(super) fn serve_missing(slots: &[Slot], serve: Serve) -> Actions {
    let mut actions = Actions::default();
    let missing = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.node.is_some() && s.should_run && !s.has_pods())
        .map(|(i, _)| i as u32);
    match serve {
        Serve::Current => actions.create.extend(missing),
        Serve::Stable => actions.create_stable.extend(missing),
        Serve::Nothing => {}
    }
    actions
}

//! New nodes wait for their daemons (`daemonsync.io/readiness-taint: KEY`, docs/live.md): a
//! node that joins with the `NoSchedule` taint `KEY` keeps it until the pods of the DaemonSets
//! naming `KEY` are available on it, then the taint goes.
//!
//! Each DaemonSet's plan notes, for the nodes that carry its key and that it should run on
//! (it tolerates its own readiness taint, so the taint never makes a node ineligible), whether
//! a pod of it is available there ([`Gate`]). Any pod counts, of any revision: the daemon
//! serves, which is what the taint waits for, and a rollout paused or held back on the node
//! must not keep the node out of service. Once every DaemonSet is planned, [`settle`] joins
//! the gates of one key: the taint goes from a node when every DaemonSet naming the key that
//! should run there has an available pod on it — those planned together, and those of other
//! sources that the cluster's records hold and that run pods. A DaemonSet whose step is
//! frozen (blocked, being deleted, policy errors, `daemonsync freeze`) still counts as a gate
//! but removes nothing itself.

use super::context::{Context, Prepared};
use super::eligibility;
use super::view::Slot;
use super::{DaemonSetPlan, DaemonSetSpec, Name, Policy};
use crate::manifest::policy::readiness_taint;
use crate::model::{Node, TaintEffect, Timestamp};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The readiness taint of a DaemonSet, in its plan: the nodes that carry it and what each
/// waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessTaint {
    /// The taint key (`daemonsync.io/readiness-taint`).
    pub key: String,
    /// The nodes that carry it (with effect `NoSchedule`) and that the DaemonSet should run
    /// on, in name order.
    pub nodes: Vec<TaintedNode>,
}

/// A node that carries a readiness taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintedNode {
    /// The node.
    pub node: Name,
    /// The DaemonSets naming the key (`namespace/name`) whose pod on the node is not
    /// available yet, in order; empty: the taint goes.
    pub waiting_for: Vec<String>,
}

/// A readiness taint the step removes from a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeTaint {
    /// The node.
    pub node: Name,
    /// The taint key (its effect is `NoSchedule`).
    pub key: String,
}

/// The effect of the taints readiness gates: new pods are not scheduled onto the node.
pub const READINESS_EFFECT: TaintEffect = TaintEffect::NoSchedule;

/// What one planned DaemonSet says about the nodes carrying its readiness taint.
#[derive(Debug)]
pub(super) struct Gate {
    key: String,
    /// `namespace/name`.
    daemonset: String,
    /// Tainted nodes it should run on (positions in the node order), and whether a pod of it
    /// is available there.
    nodes: Vec<(u32, bool)>,
    /// Its step writes (not frozen): it removes the taints that may go.
    writes: bool,
}

/// Whether a node carries the readiness taint `key`.
fn carries(node: &Node, key: &str) -> bool {
    node.taints
        .iter()
        .any(|t| t.key == key && t.effect == READINESS_EFFECT)
}

impl Context<'_> {
    /// The gate of one DaemonSet: the nodes that carry its readiness taint and that it should
    /// run on, with whether its pod there is available (`None` without a readiness taint).
    pub(super) fn gate(&self, d: &Prepared<'_>, slots: &[Slot], writes: bool) -> Option<Gate> {
        if self.manifest_only {
            return None;
        }
        let key = readiness_taint(d.ds)?;
        let nodes = self
            .nodes
            .order
            .iter()
            .enumerate()
            .filter(|&(_, &i)| carries(&self.observed.nodes[i as usize], key))
            .filter_map(|(pos, _)| {
                let slot = slots.get(pos)?;
                slot.should_run.then(|| {
                    let available = slot.pods.iter().any(|p| p.is_running() && p.available);
                    (pos as u32, available)
                })
            })
            .collect();
        Some(Gate {
            key: key.to_string(),
            daemonset: format!("{}/{}", d.spec.namespace, d.spec.name),
            nodes,
            writes,
        })
    }

    /// Whether a DaemonSet the plan does not hold has an available pod on the node at `pos`,
    /// when it should run there (`None`: it should not).
    fn other_gate(
        &self,
        spec: &DaemonSetSpec,
        pods: &[u32],
        pos: u32,
        policy: &Policy,
        now: Timestamp,
    ) -> Option<bool> {
        let node = self.node_at(pos);
        if !eligibility::evaluate(spec, node, policy).should_run {
            return None;
        }
        Some(pods.iter().any(|&id| {
            let pod = &self.observed.pods[id as usize];
            self.pods.node_position(id) == Some(pos)
                && !pod.is_terminating()
                && !pod.phase.is_terminal()
                && pod.is_available(spec.min_ready_seconds, now)
        }))
    }
}

/// Joins the gates of every key: each DaemonSet's plan gets its [`ReadinessTaint`], and the
/// step of one that writes removes the taint from the nodes where nothing is waited for any
/// more. `plans` and `gates` are in the same order.
pub(super) fn settle(
    ctx: &Context<'_>,
    policy: &Policy,
    now: Timestamp,
    plans: &mut [DaemonSetPlan],
    gates: Vec<Option<Gate>>,
) {
    let names: Vec<(String, String)> = plans
        .iter()
        .map(|p| (p.namespace.clone(), p.name.clone()))
        .collect();
    let planned: BTreeSet<(&str, &str)> = names
        .iter()
        .map(|(ns, n)| (ns.as_str(), n.as_str()))
        .collect();
    settle_among(ctx, policy, now, &planned, plans, gates);
}

/// [`settle`] for some of the DaemonSets planned together (`plans`, with their `gates`):
/// `planned` names them all, so that a record of one of the others never counts as a
/// DaemonSet of another source. Every DaemonSet naming a key of `gates` must be in `plans`.
pub(super) fn settle_among(
    ctx: &Context<'_>,
    policy: &Policy,
    now: Timestamp,
    planned: &BTreeSet<(&str, &str)>,
    plans: &mut [DaemonSetPlan],
    gates: Vec<Option<Gate>>,
) {
    if gates.iter().all(Option::is_none) {
        return;
    }
    // Per key and tainted node: every gate's name and whether its pod there is available.
    let mut waits: BTreeMap<(String, u32), BTreeMap<String, bool>> = BTreeMap::new();
    for g in gates.iter().flatten() {
        for &(pos, available) in &g.nodes {
            waits
                .entry((g.key.clone(), pos))
                .or_default()
                .insert(g.daemonset.clone(), available);
        }
    }
    // DaemonSets of other sources that name a key of this plan and run pods: their records
    // hold them.
    let keys: BTreeSet<String> = gates.iter().flatten().map(|g| g.key.clone()).collect();
    for record in &ctx.observed.rollouts {
        let Some(ds) = &record.gating else {
            continue;
        };
        let Some(key) = readiness_taint(ds).filter(|k| keys.contains(*k)) else {
            continue;
        };
        if planned.contains(&(&*record.namespace, record.name.as_str())) {
            continue;
        }
        let spec = DaemonSetSpec::compile(ds);
        let pods = ctx.pods.claimed(&ctx.observed.pods, &spec);
        if pods.is_empty() {
            // Removed from its source, or not rolled out yet: it serves no node.
            continue;
        }
        let name = format!("{}/{}", record.namespace, record.name);
        for ((k, pos), by) in waits.iter_mut() {
            if *k != key {
                continue;
            }
            if let Some(available) = ctx.other_gate(&spec, &pods, *pos, policy, now) {
                by.insert(name.clone(), available);
            }
        }
    }
    for (plan, gate) in plans.iter_mut().zip(gates) {
        let Some(g) = gate else {
            continue;
        };
        let nodes: Vec<TaintedNode> = g
            .nodes
            .iter()
            .map(|&(pos, _)| TaintedNode {
                node: ctx.name_at(pos),
                waiting_for: waits
                    .get(&(g.key.clone(), pos))
                    .into_iter()
                    .flatten()
                    .filter(|(_, available)| !**available)
                    .map(|(name, _)| name.clone())
                    .collect(),
            })
            .collect();
        if g.writes {
            plan.step.remove_taints = nodes
                .iter()
                .filter(|n| n.waiting_for.is_empty())
                .map(|n| NodeTaint {
                    node: n.node.clone(),
                    key: g.key.clone(),
                })
                .collect();
        }
        plan.readiness = Some(ReadinessTaint { key: g.key, nodes });
    }
}

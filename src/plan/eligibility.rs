//! TEMPORARY minimal eligibility until the full module lands.
use crate::model::{Node, Taint};
use crate::plan::Policy;
use crate::plan::daemonset::DaemonSetSpec;
use std::fmt;

/// One compiled required node-affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSelectorTerm {}

/// Result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eligibility {
    /// shouldRun
    pub should_run: bool,
    /// shouldContinueRunning
    pub should_continue_running: bool,
    /// why not
    pub reason: Option<Ineligible>,
}

/// Why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ineligible {
    /// nodeName
    NodeName { wanted: String },
    /// nodeSelector
    NodeSelector {
        key: String,
        wanted: String,
        actual: Option<String>,
    },
    /// affinity
    NodeAffinity { detail: String },
    /// taint
    Taint { taint: Taint },
}

impl fmt::Display for Ineligible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// Evaluate.
pub fn evaluate(ds: &DaemonSetSpec, node: &Node, _policy: &Policy) -> Eligibility {
    for (k, v) in &ds.node_selector {
        if node.labels.get(k) != Some(v) {
            return Eligibility {
                should_run: false,
                should_continue_running: false,
                reason: Some(Ineligible::NodeSelector {
                    key: k.clone(),
                    wanted: v.clone(),
                    actual: node.labels.get(k).cloned(),
                }),
            };
        }
    }
    for t in &node.taints {
        if t.effect == crate::model::TaintEffect::PreferNoSchedule {
            continue;
        }
        let ok = ds.tolerations.iter().any(|tol| {
            tol.key.as_deref().is_none_or(|k| k == t.key)
                && (tol.operator == crate::model::TolerationOp::Exists || tol.value == t.value)
                && tol
                    .effect
                    .as_ref()
                    .is_none_or(|e| e.as_ref() == Ok(&t.effect))
        });
        if !ok {
            let cont = t.effect == crate::model::TaintEffect::NoSchedule;
            return Eligibility {
                should_run: false,
                should_continue_running: cont,
                reason: Some(Ineligible::Taint { taint: t.clone() }),
            };
        }
    }
    Eligibility {
        should_run: true,
        should_continue_running: true,
        reason: None,
    }
}

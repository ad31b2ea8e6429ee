//! A desired DaemonSet compiled into the form the planner evaluates quickly.
//!
//! OWNER: eligibility helper. Fill in `DaemonSetSpec::compile`.

use crate::model::{LabelSelector, Labels, Toleration};
use crate::plan::eligibility::NodeSelectorTerm;
use k8s_openapi::api::apps::v1::DaemonSet;

/// The update strategy, resolved from a defaulted, valid DaemonSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// `RollingUpdate` with its two budgets (unscaled).
    RollingUpdate {
        /// `maxUnavailable`.
        max_unavailable: IntOrPercent,
        /// `maxSurge`.
        max_surge: IntOrPercent,
    },
    /// `OnDelete`: pods are replaced only when something else deletes them.
    OnDelete,
}

/// An int-or-percent budget value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOrPercent {
    /// An absolute number of nodes.
    Int(i32),
    /// A percentage of `desiredNumberScheduled`, rounded up.
    Percent(i32),
}

impl IntOrPercent {
    /// Upstream `GetScaledValueFromIntOrPercent(v, total, roundUp=true)`.
    pub fn scaled(self, total: i32) -> i32 {
        match self {
            IntOrPercent::Int(v) => v,
            IntOrPercent::Percent(p) => {
                let num = i64::from(p) * i64::from(total);
                i32::try_from((num + 99).div_euclid(100)).unwrap_or(i32::MAX)
            }
        }
    }
}

/// Everything the planner needs from one desired DaemonSet.
#[derive(Debug, Clone)]
pub struct DaemonSetSpec {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.selector`, compiled; `None` selects nothing.
    pub selector: Option<LabelSelector>,
    /// `spec.template.spec.nodeName`, when set.
    pub node_name: Option<String>,
    /// `spec.template.spec.nodeSelector`.
    pub node_selector: Labels,
    /// Required node-affinity terms (ORed); `None` when there is no required affinity.
    pub required_affinity: Option<Vec<NodeSelectorTerm>>,
    /// The template's tolerations plus the automatic DaemonSet tolerations (section 4.1).
    pub tolerations: Vec<Toleration>,
    /// The update strategy.
    pub strategy: UpdateStrategy,
    /// `spec.minReadySeconds`.
    pub min_ready_seconds: i32,
    /// daemonsync's revision hash of the defaulted template.
    pub revision: String,
    /// Template generation used for the legacy `pod-template-generation` comparison.
    pub template_generation: Option<i64>,
    /// `spec.template.spec.hostNetwork`.
    pub host_network: bool,
    /// Host ports the template's containers bind (`hostPort`, or `containerPort` with
    /// hostNetwork).
    pub host_ports: Vec<i32>,
}

impl DaemonSetSpec {
    /// Compiles a defaulted, validated DaemonSet.
    pub fn compile(ds: &DaemonSet) -> Self {
        let _ = ds;
        unimplemented!("eligibility helper")
    }
}

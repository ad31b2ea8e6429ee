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
        // TEMPORARY until the full module lands.
        let spec = ds.spec.clone().unwrap_or_default();
        let t = spec.template.spec.clone().unwrap_or_default();
        let ru = spec
            .update_strategy
            .as_ref()
            .and_then(|u| u.rolling_update.clone())
            .unwrap_or_default();
        let conv = |v: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
                    d: i32| match v {
            None => IntOrPercent::Int(d),
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i)) => {
                IntOrPercent::Int(i)
            }
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s)) => {
                IntOrPercent::Percent(s.trim_end_matches('%').parse().unwrap_or(0))
            }
        };
        let strategy = if spec
            .update_strategy
            .as_ref()
            .and_then(|u| u.type_.as_deref())
            == Some("OnDelete")
        {
            UpdateStrategy::OnDelete
        } else {
            UpdateStrategy::RollingUpdate {
                max_unavailable: conv(ru.max_unavailable, 1),
                max_surge: conv(ru.max_surge, 0),
            }
        };
        let tolerations = t
            .tolerations
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|x| Toleration {
                key: x.key.clone().filter(|k| !k.is_empty()),
                operator: if x.operator.as_deref() == Some("Exists") {
                    crate::model::TolerationOp::Exists
                } else {
                    crate::model::TolerationOp::Equal
                },
                value: x.value.clone().unwrap_or_default(),
                effect: x
                    .effect
                    .as_deref()
                    .filter(|e| !e.is_empty())
                    .map(|e| crate::model::TaintEffect::parse(e).ok_or(e.to_string())),
                toleration_seconds: x.toleration_seconds,
            })
            .collect();
        DaemonSetSpec {
            namespace: ds
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            name: ds.metadata.name.clone().unwrap_or_default(),
            selector: LabelSelector::from_k8s(&spec.selector),
            node_name: t.node_name.clone(),
            node_selector: t.node_selector.clone().unwrap_or_default(),
            required_affinity: None,
            tolerations,
            strategy,
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            revision: crate::plan::revision::revision_hash(&spec.template, None),
            template_generation: None,
            host_network: t.host_network.unwrap_or(false),
            host_ports: Vec::new(),
        }
    }
}

use super::Labels;
use serde::Serialize;
use std::fmt;

/// A node as the planner sees it: name, labels, taints and readiness.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `spec.taints`, in their original order.
    pub taints: Vec<Taint>,
    /// The `Ready` condition: `Some(true)` when `True`, `Some(false)` when `False` or `Unknown`,
    /// `None` when the node reports no such condition.
    pub ready: Option<bool>,
    /// `spec.unschedulable` (informational: the controller only sees the matching taint).
    pub unschedulable: bool,
    /// `status.images[*].names`, sorted: the images the kubelet reports present (a live
    /// node's; snapshots leave them out). Pre-pull skips nodes that have their new images.
    pub images: Vec<String>,
    /// `status.allocatable`: what the node gives pods (`None`: not known).
    pub allocatable: Option<Box<super::resources::Resources>>,
    /// What every pod bound to it requests, daemon pods or not, as the scheduler counts it
    /// (`None`: not known; a live cluster's and a snapshot's are).
    pub requested: Option<Box<super::resources::Resources>>,
}

/// Effect of a taint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum TaintEffect {
    /// New pods are not scheduled unless they tolerate the taint.
    NoSchedule,
    /// The scheduler tries to avoid the node; ignored by the DaemonSet controller.
    PreferNoSchedule,
    /// Running pods that do not tolerate the taint are evicted.
    NoExecute,
}

impl TaintEffect {
    /// Parses the API spelling; unknown effects are `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (empty when absent).
    pub value: String,
    /// Taint effect.
    pub effect: TaintEffect,
}

impl fmt::Display for Taint {
    /// Formats as kubectl does: `key=value:Effect`, or `key:Effect` without a value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect.as_str())
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect.as_str())
        }
    }
}

impl Node {
    /// A node with only a name (tests and builders start here).
    pub fn named(name: impl Into<String>) -> Self {
        Node {
            name: name.into(),
            ready: Some(true),
            ..Node::default()
        }
    }

    /// Converts an API node. Taints with an unknown effect are dropped (the API server rejects
    /// them, so they never occur in a real cluster).
    pub fn from_k8s(node: &k8s_openapi::api::core::v1::Node) -> Self {
        let spec = node.spec.as_ref();
        let taints = spec
            .and_then(|s| s.taints.as_ref())
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| {
                        Some(Taint {
                            key: t.key.clone(),
                            value: t.value.clone().unwrap_or_default(),
                            effect: TaintEffect::parse(&t.effect)?,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| c.status == "True");
        Node {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints,
            ready,
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            images: {
                let mut images: Vec<String> = node
                    .status
                    .as_ref()
                    .and_then(|s| s.images.as_ref())
                    .into_iter()
                    .flatten()
                    .flat_map(|i| i.names.iter().flatten().cloned())
                    .collect();
                images.sort();
                images.dedup();
                images
            },
            allocatable: node
                .status
                .as_ref()
                .and_then(|s| s.allocatable.as_ref())
                .map(|a| Box::new(super::resources::from_list(a))),
            // The pods bound to it are the cluster's to count.
            requested: None,
        }
    }
}

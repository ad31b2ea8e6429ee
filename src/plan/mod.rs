//! The pure planner: a function of (desired, observed, policy, now). No I/O, no clock.

pub mod daemonset;
pub mod eligibility;
pub mod render;
pub mod revision;

/// Planner policy: switches that change semantics deliberately.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Honour the `Lt` / `Gt` toleration operators (Kubernetes feature gate
    /// `TaintTolerationComparisonOperators`, alpha in v1.35 and off by default). When off,
    /// such a toleration tolerates nothing, as on a default v1.35 cluster.
    pub taint_comparison_operators: bool,
}

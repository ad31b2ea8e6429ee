use super::TaintEffect;

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    /// Key; `None` (empty) matches every key (only meaningful with `Exists`).
    pub key: Option<String>,
    /// Operator.
    pub operator: TolerationOp,
    /// Value (empty when absent).
    pub value: String,
    /// Effect; `None` (empty) matches every effect. `Some(Err(s))` keeps an effect the API
    /// does not know, which matches no taint.
    pub effect: Option<Result<TaintEffect, String>>,
    /// `tolerationSeconds` (irrelevant to eligibility, kept for rendering comparisons).
    pub toleration_seconds: Option<i64>,
}

/// Toleration operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TolerationOp {
    /// `""` or `Equal`: values must be equal.
    Equal,
    /// `Exists`: any value.
    Exists,
    /// `Lt`: taint value < toleration value (integers; feature-gated).
    Lt,
    /// `Gt`: taint value > toleration value (integers; feature-gated).
    Gt,
    /// Anything else: tolerates nothing.
    Other(String),
}

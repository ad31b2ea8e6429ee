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

impl TolerationOp {
    /// Parses the API spelling: absent or `""` is `Equal`, as upstream treats it.
    pub fn parse(s: Option<&str>) -> Self {
        match s.unwrap_or_default() {
            "" | "Equal" => Self::Equal,
            "Exists" => Self::Exists,
            "Lt" => Self::Lt,
            "Gt" => Self::Gt,
            other => Self::Other(other.to_string()),
        }
    }
}

impl Toleration {
    /// Converts an API toleration. An empty key or effect means "any", exactly like an
    /// absent one; an unknown effect is kept as `Some(Err(_))` so it tolerates nothing.
    pub fn from_k8s(t: &k8s_openapi::api::core::v1::Toleration) -> Self {
        let key = t
            .key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        let effect = t
            .effect
            .as_deref()
            .filter(|e| !e.is_empty())
            .map(|e| TaintEffect::parse(e).ok_or_else(|| e.to_string()));
        Toleration {
            key,
            operator: TolerationOp::parse(t.operator.as_deref()),
            value: t.value.clone().unwrap_or_default(),
            effect,
            toleration_seconds: t.toleration_seconds,
        }
    }
}

use super::Labels;

/// A compiled label selector (`matchLabels` and `matchExpressions`, ANDed).
///
/// An empty selector matches everything, as upstream's `LabelSelectorAsSelector` does; a
/// missing (`nil`) selector is represented by the caller as "matches nothing".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    /// All requirements; `matchLabels` entries become `In [value]`.
    pub requirements: Vec<SelectorRequirement>,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorRequirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub op: SelectorOp,
    /// Values (sorted, for `In` / `NotIn`).
    pub values: Vec<String>,
}

/// Label selector operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorOp {
    /// Label present with a value in the set.
    In,
    /// Label absent, or its value not in the set.
    NotIn,
    /// Label present.
    Exists,
    /// Label absent.
    DoesNotExist,
}

/// The selector in the API's query syntax (`app=agent,tier in (a,b),!legacy`), for list and
/// watch requests.
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let key = &r.key;
            match (r.op, r.values.as_slice()) {
                (SelectorOp::In, [one]) => write!(f, "{key}={one}")?,
                (SelectorOp::In, values) => write!(f, "{key} in ({})", values.join(","))?,
                (SelectorOp::NotIn, values) => write!(f, "{key} notin ({})", values.join(","))?,
                (SelectorOp::Exists, _) => write!(f, "{key}")?,
                (SelectorOp::DoesNotExist, _) => write!(f, "!{key}")?,
            }
        }
        Ok(())
    }
}

impl LabelSelector {
    /// Compiles an API label selector. Returns `None` when an expression uses an unknown
    /// operator or a wrong number of values (validation reports those with field paths).
    pub fn from_k8s(
        sel: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    ) -> Option<Self> {
        let mut requirements = Vec::new();
        for (k, v) in sel.match_labels.iter().flatten() {
            requirements.push(SelectorRequirement {
                key: k.clone(),
                op: SelectorOp::In,
                values: vec![v.clone()],
            });
        }
        for e in sel.match_expressions.iter().flatten() {
            let mut values = e.values.clone().unwrap_or_default();
            values.sort();
            values.dedup();
            let op = match e.operator.as_str() {
                "In" => SelectorOp::In,
                "NotIn" => SelectorOp::NotIn,
                "Exists" => SelectorOp::Exists,
                "DoesNotExist" => SelectorOp::DoesNotExist,
                _ => return None,
            };
            let needs_values = matches!(op, SelectorOp::In | SelectorOp::NotIn);
            if needs_values == values.is_empty() {
                return None;
            }
            requirements.push(SelectorRequirement {
                key: e.key.clone(),
                op,
                values,
            });
        }
        Some(LabelSelector { requirements })
    }

    /// A selector from `matchLabels` only.
    pub fn from_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        LabelSelector {
            requirements: labels
                .into_iter()
                .map(|(k, v)| SelectorRequirement {
                    key: k.to_string(),
                    op: SelectorOp::In,
                    values: vec![v.to_string()],
                })
                .collect(),
        }
    }

    /// True when there are no requirements (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// True when every requirement holds for `labels`.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.requirements.iter().all(|r| {
            let v = labels.get(&r.key);
            match r.op {
                SelectorOp::In => v.is_some_and(|v| r.values.binary_search(v).is_ok()),
                SelectorOp::NotIn => v.is_none_or(|v| r.values.binary_search(v).is_err()),
                SelectorOp::Exists => v.is_some(),
                SelectorOp::DoesNotExist => v.is_none(),
            }
        })
    }
}

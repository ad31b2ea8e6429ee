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
    /// Parses the query syntax, `a=b,c!=d,e in (x,y),f notin (z),g,!h` (comma means AND),
    /// as `kubectl -l` takes it.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let bad = |why: &str| format!("unable to parse requirement: {why} in label selector {s:?}");
        let mut requirements = Vec::new();
        for term in split_terms(s) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let req = if let Some(key) = term.strip_prefix('!') {
                SelectorRequirement {
                    key: key.trim().into(),
                    op: SelectorOp::DoesNotExist,
                    values: vec![],
                }
            } else if let Some((k, v)) = term.split_once("!=") {
                SelectorRequirement {
                    key: k.trim().into(),
                    op: SelectorOp::NotIn,
                    values: vec![v.trim().into()],
                }
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                SelectorRequirement {
                    key: k.trim().into(),
                    op: SelectorOp::In,
                    values: vec![v.trim().into()],
                }
            } else if let Some((k, rest)) = set_term(term, " notin ") {
                SelectorRequirement {
                    key: k,
                    op: SelectorOp::NotIn,
                    values: set_values(&rest).ok_or_else(|| bad(term))?,
                }
            } else if let Some((k, rest)) = set_term(term, " in ") {
                SelectorRequirement {
                    key: k,
                    op: SelectorOp::In,
                    values: set_values(&rest).ok_or_else(|| bad(term))?,
                }
            } else if term.contains(['(', ')', ' ', '<', '>']) {
                return Err(bad(term));
            } else {
                SelectorRequirement {
                    key: term.into(),
                    op: SelectorOp::Exists,
                    values: vec![],
                }
            };
            if req.key.is_empty() {
                return Err(bad(term));
            }
            requirements.push(req);
        }
        Ok(LabelSelector { requirements })
    }

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

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn set_term(term: &str, op: &str) -> Option<(String, String)> {
    let (k, rest) = term.split_once(op)?;
    Some((k.trim().to_string(), rest.trim().to_string()))
}

fn set_values(rest: &str) -> Option<Vec<String>> {
    let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
    let mut v: Vec<String> = inner.split(',').map(|x| x.trim().to_string()).collect();
    v.sort();
    v.dedup();
    Some(v)
}

//! Required node affinity, compiled once per DaemonSet: upstream's lazy-error node selector
//! terms, matched against a node's labels and name.

use crate::manifest::names::{self, Dots};
use crate::model::{NODE_NAME_FIELD, Node};
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm as K8sTerm, PodSpec};
use std::fmt;

/// One compiled required node-affinity term.
///
/// Expressions (against node labels) and fields (against the node name) are ANDed. A term
/// that had a parse error, or that has neither expressions nor fields, matches no node,
/// exactly as upstream's lazy-error node selector treats it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    expressions: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
    error: Option<String>,
}

/// A compiled `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelOp {
    /// Sorted, deduplicated values.
    In(Vec<String>),
    /// Sorted, deduplicated values.
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

/// A compiled `matchFields` entry: `key In [value]` (`equal`) or `key NotIn [value]`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    key: String,
    value: String,
    equal: bool,
}

impl LabelRequirement {
    fn matches(&self, node: &Node) -> bool {
        let actual = node.labels.get(&self.key);
        match &self.op {
            LabelOp::In(values) => actual.is_some_and(|v| values.binary_search(v).is_ok()),
            LabelOp::NotIn(values) => actual.is_none_or(|v| values.binary_search(v).is_err()),
            LabelOp::Exists => actual.is_some(),
            LabelOp::DoesNotExist => actual.is_none(),
            LabelOp::Gt(bound) => actual
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *bound),
            LabelOp::Lt(bound) => actual
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *bound),
        }
    }
}

impl fmt::Display for LabelRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.op {
            LabelOp::In(v) => write!(f, "{} In [{}]", self.key, v.join(", ")),
            LabelOp::NotIn(v) => write!(f, "{} NotIn [{}]", self.key, v.join(", ")),
            LabelOp::Exists => write!(f, "{} Exists", self.key),
            LabelOp::DoesNotExist => write!(f, "{} DoesNotExist", self.key),
            LabelOp::Gt(b) => write!(f, "{} Gt {b}", self.key),
            LabelOp::Lt(b) => write!(f, "{} Lt {b}", self.key),
        }
    }
}

impl FieldRequirement {
    /// The node's field set holds only `metadata.name`; any other key reads as empty.
    fn matches(&self, node: &Node) -> bool {
        let actual = if self.key == NODE_NAME_FIELD {
            node.name.as_str()
        } else {
            ""
        };
        (actual == self.value) == self.equal
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.equal { "In" } else { "NotIn" };
        write!(f, "{} {op} [{}]", self.key, self.value)
    }
}

impl NodeSelectorTerm {
    /// Compiles one API term: parses `Gt`/`Lt` bounds, sorts `In`/`NotIn` values and records
    /// any parse error (unknown operator, wrong number of values, non-integer bound, invalid
    /// label key or value), which makes the whole term match nothing. As upstream, every
    /// value must also be a valid label value, so a negative `Gt`/`Lt` bound such as `-5`
    /// (which does not start with an alphanumeric) is a parse error too.
    pub fn from_k8s(term: &K8sTerm) -> Self {
        let mut errors = Vec::new();
        let mut expressions = Vec::new();
        for (i, req) in term.match_expressions.iter().flatten().enumerate() {
            match compile_label_requirement(req) {
                Ok(r) => expressions.push(r),
                Err(e) => errors.push(format!("matchExpressions[{i}]: {e}")),
            }
        }
        let mut fields = Vec::new();
        for (i, req) in term.match_fields.iter().flatten().enumerate() {
            match compile_field_requirement(req) {
                Ok(r) => fields.push(r),
                Err(e) => errors.push(format!("matchFields[{i}]: {e}")),
            }
        }
        NodeSelectorTerm {
            expressions,
            fields,
            error: (!errors.is_empty()).then(|| errors.join("; ")),
        }
    }

    /// True when the term had neither expressions nor fields (it matches nothing).
    pub fn is_empty(&self) -> bool {
        self.expressions.is_empty() && self.fields.is_empty() && self.error.is_none()
    }

    /// The parse error that disables this term, if any.
    pub fn parse_error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// True when the node satisfies every expression and every field requirement. Field
    /// requirements are ignored for a node with an empty name (upstream quirk).
    pub fn matches(&self, node: &Node) -> bool {
        if self.error.is_some() || (self.expressions.is_empty() && self.fields.is_empty()) {
            return false;
        }
        self.expressions.iter().all(|r| r.matches(node))
            && (node.name.is_empty() || self.fields.iter().all(|r| r.matches(node)))
    }

    /// Why the term does not match the node (only called when it does not).
    pub(crate) fn describe_mismatch(&self, node: &Node) -> String {
        if let Some(e) = &self.error {
            return format!("invalid term ({e})");
        }
        if self.expressions.is_empty() && self.fields.is_empty() {
            return "empty term (matches nothing)".to_string();
        }
        if let Some(r) = self.expressions.iter().find(|r| !r.matches(node)) {
            return match node.labels.get(&r.key) {
                Some(v) => format!("{r} (node has {}={v})", r.key),
                None => format!("{r} (node has no {} label)", r.key),
            };
        }
        if let Some(r) = self.fields.iter().find(|r| !r.matches(node)) {
            return format!("{r} (node is {})", node.name);
        }
        "term does not match".to_string()
    }
}

fn compile_label_requirement(req: &NodeSelectorRequirement) -> Result<LabelRequirement, String> {
    let values = req.values.as_deref().unwrap_or_default();
    let mut errors = Vec::new();
    if !names::is_label_key(&req.key, Dots::Labels) {
        errors.push(format!("invalid label key {:?}", req.key));
    }
    for v in values {
        if !names::is_label_value(v) {
            errors.push(format!("invalid label value {v:?}"));
        }
    }
    let sorted = || {
        let mut v = values.to_vec();
        v.sort();
        v.dedup();
        v
    };
    let bound = |errors: &mut Vec<String>| -> i64 {
        if values.len() != 1 {
            errors.push(format!(
                "operator {} needs exactly one value, got {}",
                req.operator,
                values.len()
            ));
            return 0;
        }
        values[0].parse::<i64>().unwrap_or_else(|_| {
            errors.push(format!(
                "operator {} needs an integer value, got {:?}",
                req.operator, values[0]
            ));
            0
        })
    };
    let op = match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                errors.push(format!(
                    "operator {} needs at least one value",
                    req.operator
                ));
            }
            if req.operator == "In" {
                LabelOp::In(sorted())
            } else {
                LabelOp::NotIn(sorted())
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errors.push(format!("operator {} takes no values", req.operator));
            }
            if req.operator == "Exists" {
                LabelOp::Exists
            } else {
                LabelOp::DoesNotExist
            }
        }
        "Gt" => LabelOp::Gt(bound(&mut errors)),
        "Lt" => LabelOp::Lt(bound(&mut errors)),
        other => {
            errors.push(format!("unsupported operator {other:?}"));
            LabelOp::Exists
        }
    };
    if errors.is_empty() {
        Ok(LabelRequirement {
            key: req.key.clone(),
            op,
        })
    } else {
        Err(errors.join(", "))
    }
}

fn compile_field_requirement(req: &NodeSelectorRequirement) -> Result<FieldRequirement, String> {
    let equal = match req.operator.as_str() {
        "In" => true,
        "NotIn" => false,
        other => return Err(format!("unsupported field operator {other:?}")),
    };
    match req.values.as_deref().unwrap_or_default() {
        [value] => Ok(FieldRequirement {
            key: req.key.clone(),
            value: value.clone(),
            equal,
        }),
        values => Err(format!(
            "operator {} on a field needs exactly one value, got {}",
            req.operator,
            values.len()
        )),
    }
}

/// Compiles `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution` of a pod
/// spec. `None` when there is no required node affinity (every node matches); `Some(terms)`
/// otherwise, where an empty list (or a list of only empty or invalid terms) matches no node.
pub fn compile_required_affinity(spec: &PodSpec) -> Option<Vec<NodeSelectorTerm>> {
    let required = spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?;
    Some(
        required
            .node_selector_terms
            .iter()
            .map(NodeSelectorTerm::from_k8s)
            .collect(),
    )
}

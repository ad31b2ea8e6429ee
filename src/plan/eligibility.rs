//! Node eligibility (`NodeShouldRunDaemonPod`): nodeName, nodeSelector, required node
//! affinity, taints and tolerations.
//!
//! Everything a DaemonSet contributes is compiled once ([`compile_required_affinity`],
//! [`crate::plan::daemonset::DaemonSetSpec::compile`]); [`evaluate`] then runs per node
//! without allocating unless the node turns out to be ineligible and a reason is built.

use crate::model::{NODE_NAME_FIELD, Node, Taint, TaintEffect, Toleration, TolerationOp};
use crate::plan::Policy;
use crate::plan::daemonset::DaemonSetSpec;
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm as K8sTerm, PodSpec};
use std::fmt::{self, Write as _};

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
    /// label key or value), which makes the whole term match nothing.
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
    fn describe_mismatch(&self, node: &Node) -> String {
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
    if !is_qualified_name(&req.key) {
        errors.push(format!("invalid label key {:?}", req.key));
    }
    for v in values {
        if !is_label_value(v) {
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

/// Outcome of [`evaluate`] for one (DaemonSet, node) pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eligibility {
    /// A daemon pod should run on the node (create one if missing).
    pub should_run: bool,
    /// An existing daemon pod may stay (implied by `should_run`; also true when only
    /// `NoSchedule` taints are untolerated).
    pub should_continue_running: bool,
    /// Why the node is ineligible; `None` exactly when `should_run`.
    pub reason: Option<Ineligible>,
}

impl Eligibility {
    const ELIGIBLE: Eligibility = Eligibility {
        should_run: true,
        should_continue_running: true,
        reason: None,
    };

    fn not(reason: Ineligible, should_continue_running: bool) -> Self {
        Eligibility {
            should_run: false,
            should_continue_running,
            reason: Some(reason),
        }
    }
}

/// Why a DaemonSet does not (or no longer) run on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ineligible {
    /// The template's `nodeName` pins the pod to another node.
    NodeName {
        /// The node the template names.
        wanted: String,
    },
    /// A `nodeSelector` entry is missing or different on the node (the first one in key
    /// order).
    NodeSelector {
        /// Label key.
        key: String,
        /// Value the template wants.
        wanted: String,
        /// Value on the node, `None` when the label is absent.
        actual: Option<String>,
    },
    /// No required node-affinity term matches.
    NodeAffinity {
        /// Which requirement of which term failed, for humans.
        detail: String,
    },
    /// An untolerated `NoSchedule` or `NoExecute` taint. When some `NoExecute` taint is
    /// untolerated this is the first such one (it is what evicts running pods); otherwise the
    /// first untolerated `NoSchedule` taint, in node order.
    Taint {
        /// The taint.
        taint: Taint,
    },
}

impl fmt::Display for Ineligible {
    /// A short phrase for plans and PR comments, e.g.
    /// `nodeSelector kubernetes.io/os=linux (node has windows)` or
    /// `taint nvidia.com/gpu=present:NoSchedule not tolerated`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ineligible::NodeName { wanted } => write!(f, "nodeName pins the pod to {wanted}"),
            Ineligible::NodeSelector {
                key,
                wanted,
                actual: Some(actual),
            } => write!(f, "nodeSelector {key}={wanted} (node has {actual})"),
            Ineligible::NodeSelector {
                key,
                wanted,
                actual: None,
            } => write!(f, "nodeSelector {key}={wanted} (node has no {key} label)"),
            Ineligible::NodeAffinity { detail } => f.write_str(detail),
            Ineligible::Taint { taint } => write!(f, "taint {taint} not tolerated"),
        }
    }
}

/// Upstream `NodeShouldRunDaemonPod`: decides whether the DaemonSet should run on `node`
/// (section 3 of the semantics). Checks, in order: template `nodeName`, `nodeSelector`,
/// required node affinity, then `NoSchedule`/`NoExecute` taints against the template's
/// tolerations plus the automatic DaemonSet tolerations. Allocation-free when the node is
/// eligible.
pub fn evaluate(ds: &DaemonSetSpec, node: &Node, policy: &Policy) -> Eligibility {
    if let Some(wanted) = &ds.node_name
        && *wanted != node.name
    {
        return Eligibility::not(
            Ineligible::NodeName {
                wanted: wanted.clone(),
            },
            false,
        );
    }
    for (key, wanted) in &ds.node_selector {
        let actual = node.labels.get(key);
        if actual != Some(wanted) {
            return Eligibility::not(
                Ineligible::NodeSelector {
                    key: key.clone(),
                    wanted: wanted.clone(),
                    actual: actual.cloned(),
                },
                false,
            );
        }
    }
    if let Some(terms) = &ds.required_affinity
        && !terms.iter().any(|t| t.matches(node))
    {
        return Eligibility::not(
            Ineligible::NodeAffinity {
                detail: describe_affinity_mismatch(terms, node),
            },
            false,
        );
    }
    let mut first_no_schedule: Option<&Taint> = None;
    for taint in &node.taints {
        if taint.effect == TaintEffect::PreferNoSchedule
            || ds.tolerations.iter().any(|t| tolerates(t, taint, policy))
        {
            continue;
        }
        if taint.effect == TaintEffect::NoExecute {
            return Eligibility::not(
                Ineligible::Taint {
                    taint: taint.clone(),
                },
                false,
            );
        }
        first_no_schedule.get_or_insert(taint);
    }
    match first_no_schedule {
        Some(taint) => Eligibility::not(
            Ineligible::Taint {
                taint: taint.clone(),
            },
            true,
        ),
        None => Eligibility::ELIGIBLE,
    }
}

fn describe_affinity_mismatch(terms: &[NodeSelectorTerm], node: &Node) -> String {
    let mut out = String::from("no required node-affinity term matches");
    match terms {
        [] => out.push_str(": the term list is empty"),
        [term] => {
            let _ = write!(out, ": {}", term.describe_mismatch(node));
        }
        _ => {
            for (i, term) in terms.iter().enumerate() {
                let sep = if i == 0 { ": " } else { "; " };
                let _ = write!(out, "{sep}term {}: {}", i + 1, term.describe_mismatch(node));
            }
        }
    }
    out
}

/// Upstream `Toleration.ToleratesTaint`: effect empty or equal, key empty or equal, then the
/// operator (`Equal`: values equal; `Exists`: always; `Lt`/`Gt`: integer comparison of taint
/// value against toleration value, only with [`Policy::taint_comparison_operators`], else
/// nothing; unknown operators tolerate nothing).
pub fn tolerates(tol: &Toleration, taint: &Taint, policy: &Policy) -> bool {
    match &tol.effect {
        None => {}
        Some(Ok(effect)) if *effect == taint.effect => {}
        Some(_) => return false,
    }
    if tol.key.as_ref().is_some_and(|k| *k != taint.key) {
        return false;
    }
    match &tol.operator {
        TolerationOp::Equal => tol.value == taint.value,
        TolerationOp::Exists => true,
        TolerationOp::Lt | TolerationOp::Gt if policy.taint_comparison_operators => {
            let (Ok(taint_value), Ok(tol_value)) =
                (taint.value.parse::<i64>(), tol.value.parse::<i64>())
            else {
                return false;
            };
            if tol.operator == TolerationOp::Lt {
                taint_value < tol_value
            } else {
                taint_value > tol_value
            }
        }
        TolerationOp::Lt | TolerationOp::Gt | TolerationOp::Other(_) => false,
    }
}

/// A label value: at most 63 characters, alphanumeric at both ends, `-`, `_`, `.` inside;
/// empty is valid.
pub(crate) fn is_label_value(v: &str) -> bool {
    v.is_empty() || is_name_part(v)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters.
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label key: `[prefix/]name` where the prefix is a DNS-1123 subdomain.
pub(crate) fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        None => is_name_part(key),
        Some((prefix, name)) => {
            !prefix.is_empty() && is_dns1123_subdomain(prefix) && is_name_part(name)
        }
    }
}

/// Lowercase DNS-1123 subdomain, at most 253 characters.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
                && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

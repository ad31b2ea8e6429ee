//! Label and field selectors as the API's query strings write them.

use super::error::ApiError;
use super::kinds::Kind;
use crate::model::{LabelSelector, Labels};
use serde_json::Value;

/// Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h` (comma means AND).
pub fn parse_labels(s: &str) -> Result<LabelSelector, ApiError> {
    LabelSelector::parse(s).map_err(ApiError::bad_request)
}

/// One field requirement: `field=value` or `field!=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted field path.
    pub field: String,
    /// True for `!=`.
    pub negated: bool,
    /// Value (empty matches a missing field).
    pub value: String,
}

/// Parses a field selector, refusing fields the kind does not support (as the API server does).
pub fn parse_fields(s: &str, kind: &Kind) -> Result<Vec<FieldRequirement>, ApiError> {
    let mut out = Vec::new();
    for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (field, negated, value) = if let Some((f, v)) = term.split_once("!=") {
            (f, true, v)
        } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            (f, false, v)
        } else {
            return Err(ApiError::bad_request(format!(
                "invalid field selector: {term:?}"
            )));
        };
        let field = field.trim();
        if !kind.supports_field(field) {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {field}"
            )));
        }
        out.push(FieldRequirement {
            field: field.to_string(),
            negated,
            value: value.trim().to_string(),
        });
    }
    Ok(out)
}

/// The value at a dotted path, as a field selector compares it: strings as they are,
/// booleans and numbers printed, a missing boolean field (`spec.unschedulable`,
/// `spec.hostNetwork`) as `false`, anything else missing as empty.
fn field_value(obj: &Value, field: &str) -> String {
    let v = field.split('.').fold(obj, |v, k| &v[k]);
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null if matches!(field, "spec.unschedulable" | "spec.hostNetwork") => "false".into(),
        _ => String::new(),
    }
}

/// Label and field selectors of a list or watch.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    /// Label selector (empty matches everything).
    pub labels: LabelSelector,
    /// Field requirements.
    pub fields: Vec<FieldRequirement>,
}

impl Selectors {
    /// Whether a stored object matches, when its labels, name and namespace are what the
    /// selectors read (`None`: they read other fields, the object must be parsed).
    pub fn matches_stored(&self, stored: &super::store::Stored) -> Option<bool> {
        let mut fields_ok = true;
        for r in &self.fields {
            let value = match r.field.as_str() {
                "metadata.name" => stored.name(),
                "metadata.namespace" => stored.namespace(),
                _ => return None,
            };
            fields_ok &= (value == r.value) != r.negated;
        }
        Some(fields_ok && (self.labels.is_empty() || self.labels.matches(stored.labels())))
    }

    /// True when `obj` (in the requested kind's shape) matches.
    pub fn matches(&self, obj: &Value) -> bool {
        let fields_ok = self
            .fields
            .iter()
            .all(|r| (field_value(obj, &r.field) == r.value) != r.negated);
        if !fields_ok {
            return false;
        }
        if self.labels.is_empty() {
            return true;
        }
        let labels: Labels = obj["metadata"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        self.labels.matches(&labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> Kind {
        super::super::kinds::builtins()
            .into_iter()
            .find(|k| k.plural == "pods")
            .expect("pods")
    }

    #[test]
    fn label_selectors_of_every_form_match_as_kubectl_means_them() {
        let obj = json!({"metadata": {"labels": {"app": "agent", "tier": "node"}}});
        let m = |s: &str| {
            Selectors {
                labels: parse_labels(s).expect(s),
                fields: vec![],
            }
            .matches(&obj)
        };
        assert!(m("app=agent"));
        assert!(m("app==agent,tier"));
        assert!(m("app in (agent, web),!missing"));
        assert!(m("tier notin (db)"));
        assert!(m("missing!=x"));
        assert!(!m("app!=agent"));
        assert!(!m("app in (web)"));
        assert!(!m("!app"));
        assert!(parse_labels("app in agent").is_err());
    }

    #[test]
    fn field_selectors_match_empty_values_to_missing_fields_and_refuse_unknown_fields() {
        let obj = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {}});
        let m = |s: &str| {
            Selectors {
                labels: Default::default(),
                fields: parse_fields(s, &pods()).expect(s),
            }
            .matches(&obj)
        };
        assert!(m("metadata.name=p,spec.nodeName="));
        assert!(m("spec.nodeName!=n1"));
        assert!(!m("metadata.namespace=other"));
        assert!(m("spec.hostNetwork=false"));
        let err = parse_fields("spec.containers=x", &pods()).unwrap_err();
        assert_eq!((err.code, err.reason), (400, "BadRequest"));
        assert!(
            err.message
                .contains("field label not supported: spec.containers")
        );
    }
}

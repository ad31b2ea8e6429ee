//! Tolerations: `ValidateTolerations` and `validateTaintEffect`.

use k8s_openapi::api::core::v1::Toleration;

use super::meta::validate_label_name;
use super::names::label_value;
use super::{Errs, FieldPath, str_or_empty};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `ValidateTolerations`. `Lt` and `Gt` need the `TaintTolerationComparisonOperators` gate,
/// off by default in v1.35.
pub(super) fn validate_tolerations(tolerations: &[Toleration], path: &FieldPath, errs: &mut Errs) {
    for (i, t) in tolerations.iter().enumerate() {
        let p = path.index(i);
        let key = str_or_empty(&t.key);
        let operator = str_or_empty(&t.operator);
        let value = str_or_empty(&t.value);
        let effect = str_or_empty(&t.effect);
        if !key.is_empty() {
            validate_label_name(key, &p.child("key"), errs);
        }
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                p.child("operator"),
                quote(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                p.child("effect"),
                quote(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let msgs = label_value(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        p.child("operator"),
                        quote(value),
                        msgs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        p.child("operator"),
                        quote(value),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            "Lt" | "Gt" if !super::ALLOW_TAINT_COMPARISON_OPERATORS => {
                errs.push(FieldError::not_supported(
                    p.child("operator"),
                    quote(operator),
                    &["Equal", "Exists", "Lt", "Gt"],
                ));
            }
            other => errs.push(FieldError::not_supported(
                p.child("operator"),
                quote(other),
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            errs.push(FieldError::not_supported(
                p.child("effect"),
                quote(effect),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
}

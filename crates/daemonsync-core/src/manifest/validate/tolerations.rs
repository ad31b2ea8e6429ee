//! Tolerations: `ValidateTolerations` and `validateTaintEffect`.

use k8s_openapi::api::core::v1::Toleration;

use super::meta::validate_label_name;
use super::names::label_value;
use super::{Errs, FieldPath, Gates, str_or_empty};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `ValidateTolerations`. `Lt` and `Gt` need the `TaintTolerationComparisonOperators` gate,
/// off by default in v1.35.
pub(super) fn validate_tolerations(
    tolerations: &[Toleration],
    path: &FieldPath,
    gates: &Gates,
    errs: &mut Errs,
) {
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
            "Lt" | "Gt" if !gates.version.at_least(35) => {
                // Before v1.35 there are no comparison operators at all.
                errs.push(
                    FieldError::not_supported(
                        p.child("operator"),
                        quote(operator),
                        &["Equal", "Exists"],
                    )
                    .with_version_note(
                        gates.refused_before("TaintTolerationComparisonOperators", 35),
                    ),
                );
            }
            "Lt" | "Gt" if !gates.toleration_comparison_operators() => {
                // Upstream lists the comparison operators here, and only here.
                errs.push(FieldError::not_supported(
                    p.child("operator"),
                    quote(operator),
                    &["Equal", "Exists", "Lt", "Gt"],
                ));
            }
            "Lt" | "Gt" => {
                if let Some(msg) = decimal_integer_error(value) {
                    errs.push(FieldError::invalid(p.child("value"), quote(value), msg));
                }
                if let Some(msg) = parse_int_error(value) {
                    errs.push(FieldError::invalid(p.child("value"), quote(value), msg));
                }
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

/// `content.IsDecimalInteger`: `0`, or an optional `-` and digits without a leading zero.
fn decimal_integer_error(value: &str) -> Option<&'static str> {
    const MSG: &str = "must be a valid decimal integer in canonical form";
    let digits = value.strip_prefix('-').unwrap_or(value);
    if value.is_empty() {
        return Some("must be non-empty");
    }
    let canonical = value == "0"
        || (digits.starts_with(|c: char| ('1'..='9').contains(&c))
            && digits.bytes().all(|b| b.is_ascii_digit()));
    (!canonical).then_some(MSG)
}

/// The error of Go's `strconv.ParseInt(value, 10, 64)`, if it fails.
fn parse_int_error(value: &str) -> Option<String> {
    use std::num::IntErrorKind;
    let err = value.parse::<i64>().err()?;
    let why = match err.kind() {
        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => "value out of range",
        _ => "invalid syntax",
    };
    Some(format!("strconv.ParseInt: parsing {}: {why}", quote(value)))
}

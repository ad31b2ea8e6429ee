//! Topology spread: `validateTopologySpreadConstraints` with `ValidatePositiveField`
//! (`maxSkew`), `ValidateTopologyKey`, `ValidateWhenUnsatisfiable`,
//! `ValidateSpreadConstraintNotRepeat`, `validateMinDomains`, `validateNodeInclusionPolicy`
//! and the match label keys (`MatchLabelKeysInPodTopologySpreadSelectorMerge` is on in v1.35).

use k8s_openapi::api::core::v1::TopologySpreadConstraint;

use super::affinity::validate_match_label_keys_and_mismatch_label_keys;
use super::meta::validate_label_selector;
use super::{Errs, FieldPath, positive};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `validateTopologySpreadConstraints`.
pub(super) fn validate_topology_spread_constraints(
    constraints: &[TopologySpreadConstraint],
    path: &FieldPath,
    errs: &mut Errs,
) {
    for (i, c) in constraints.iter().enumerate() {
        let p = path.index(i);
        positive(i64::from(c.max_skew), &p.child("maxSkew"), errs);
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                p.child("topologyKey"),
                "can not be empty",
            ));
        }
        let action = c.when_unsatisfiable.as_str();
        if !matches!(action, "DoNotSchedule" | "ScheduleAnyway") {
            errs.push(FieldError::not_supported(
                p.child("whenUnsatisfiable"),
                quote(action),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                p.child("{topologyKey, whenUnsatisfiable}"),
                quote(&format!("{{{}, {}}}", c.topology_key, action)),
            ));
        }
        if let Some(min) = c.min_domains {
            let mp = p.child("minDomains");
            positive(i64::from(min), &mp, errs);
            if action != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    &mp,
                    min.to_string(),
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for (field, policy) in [
            ("nodeAffinityPolicy", c.node_affinity_policy.as_deref()),
            ("nodeTaintsPolicy", c.node_taints_policy.as_deref()),
        ] {
            if let Some(pol) = policy
                && !matches!(pol, "Honor" | "Ignore")
            {
                errs.push(FieldError::not_supported(
                    p.child(field),
                    quote(pol),
                    &["Honor", "Ignore"],
                ));
            }
        }
        validate_match_label_keys_and_mismatch_label_keys(
            &p,
            c.match_label_keys.as_deref().unwrap_or(&[]),
            &[],
            c.label_selector.as_ref(),
            errs,
        );
        if let Some(sel) = c.label_selector.as_ref() {
            validate_label_selector(sel, &p.child("labelSelector"), errs);
        }
    }
}

//! Affinity: `validateAffinity`, `validateNodeAffinity`, `ValidateNodeSelector`,
//! `ValidateNodeSelectorTerm`, `ValidateNodeSelectorRequirement`,
//! `ValidateNodeFieldSelectorRequirement`, `ValidatePreferredSchedulingTerms`,
//! `validatePodAffinity`, `validatePodAntiAffinity`, `validatePodAffinityTerm` and
//! `ValidateMatchLabelKeysAndMismatchLabelKeys`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::meta::{
    invalid_operator, set_operator_values, validate_label_name, validate_label_selector,
};
use super::names::{dns1123_label, dns1123_subdomain, label_value};
use super::{Errs, FieldPath, invalid_each};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `validateAffinity`.
pub(super) fn validate_affinity(a: &Affinity, path: &FieldPath, errs: &mut Errs) {
    if let Some(na) = a.node_affinity.as_ref() {
        let np = path.child("nodeAffinity");
        if let Some(required) = na
            .required_during_scheduling_ignored_during_execution
            .as_ref()
        {
            let tp = np
                .child("requiredDuringSchedulingIgnoredDuringExecution")
                .child("nodeSelectorTerms");
            if required.node_selector_terms.is_empty() {
                errs.push(FieldError::required(
                    &tp,
                    "must have at least one node selector term",
                ));
            }
            for (i, term) in required.node_selector_terms.iter().enumerate() {
                validate_node_selector_term(term, false, &tp.index(i), errs);
            }
        }
        let preferred = na
            .preferred_during_scheduling_ignored_during_execution
            .as_deref()
            .unwrap_or(&[]);
        let pp = np.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in preferred.iter().enumerate() {
            weight(term.weight, &pp.index(i).child("weight"), errs);
            // Preferred terms may name label values that do not exist: always allowed.
            validate_node_selector_term(
                &term.preference,
                true,
                &pp.index(i).child("preference"),
                errs,
            );
        }
    }
    if let Some(pa) = a.pod_affinity.as_ref() {
        pod_affinity_terms(
            pa.required_during_scheduling_ignored_during_execution
                .as_deref(),
            pa.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            &path.child("podAffinity"),
            errs,
        );
    }
    if let Some(pa) = a.pod_anti_affinity.as_ref() {
        pod_affinity_terms(
            pa.required_during_scheduling_ignored_during_execution
                .as_deref(),
            pa.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            &path.child("podAntiAffinity"),
            errs,
        );
    }
}

fn weight(w: i32, path: &FieldPath, errs: &mut Errs) {
    if !(1..=100).contains(&w) {
        errs.push(FieldError::invalid(
            path,
            w.to_string(),
            "must be in the range 1-100",
        ));
    }
}

/// `ValidateNodeSelectorTerm`.
fn validate_node_selector_term(
    term: &NodeSelectorTerm,
    allow_invalid_values: bool,
    path: &FieldPath,
    errs: &mut Errs,
) {
    for (j, req) in term.match_expressions.iter().flatten().enumerate() {
        validate_node_selector_requirement(
            req,
            allow_invalid_values,
            &path.child("matchExpressions").index(j),
            errs,
        );
    }
    for (j, req) in term.match_fields.iter().flatten().enumerate() {
        validate_node_field_selector_requirement(req, &path.child("matchFields").index(j), errs);
    }
}

/// `ValidateNodeSelectorRequirement`: operators are case-sensitive (`in` is not `In`).
fn validate_node_selector_requirement(
    req: &NodeSelectorRequirement,
    allow_invalid_values: bool,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let values = req.values.as_deref().unwrap_or(&[]);
    match req.operator.as_str() {
        "Gt" | "Lt" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        other => {
            if !set_operator_values(other, values, path, errs) {
                errs.push(invalid_operator(other, path));
            }
        }
    }
    validate_label_name(&req.key, &path.child("key"), errs);
    if !allow_invalid_values {
        for (i, v) in values.iter().enumerate() {
            invalid_each(errs, &path.child("values").index(i), v, label_value(v));
        }
    }
}

/// `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, with one value.
fn validate_node_field_selector_requirement(
    req: &NodeSelectorRequirement,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let values = req.values.as_deref().unwrap_or(&[]);
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => errs.push(invalid_operator(other, path)),
    }
    if req.key != crate::model::NODE_NAME_FIELD {
        errs.push(FieldError::invalid(
            path.child("key"),
            quote(&req.key),
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in values.iter().enumerate() {
            invalid_each(
                errs,
                &path.child("values").index(i),
                v,
                dns1123_subdomain(v),
            );
        }
    }
}

fn pod_affinity_terms(
    required: Option<&[PodAffinityTerm]>,
    preferred: Option<&[WeightedPodAffinityTerm]>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let rp = path.child("requiredDuringSchedulingIgnoredDuringExecution");
    for (i, term) in required.unwrap_or(&[]).iter().enumerate() {
        validate_pod_affinity_term(term, &rp.index(i), errs);
    }
    let pp = path.child("preferredDuringSchedulingIgnoredDuringExecution");
    for (j, term) in preferred.unwrap_or(&[]).iter().enumerate() {
        weight(term.weight, &pp.index(j).child("weight"), errs);
        validate_pod_affinity_term(
            &term.pod_affinity_term,
            &pp.index(j).child("podAffinityTerm"),
            errs,
        );
    }
}

/// `validatePodAffinityTerm`.
fn validate_pod_affinity_term(term: &PodAffinityTerm, path: &FieldPath, errs: &mut Errs) {
    if let Some(sel) = term.label_selector.as_ref() {
        validate_label_selector(sel, &path.child("labelSelector"), errs);
    }
    if let Some(sel) = term.namespace_selector.as_ref() {
        validate_label_selector(sel, &path.child("namespaceSelector"), errs);
    }
    for ns in term.namespaces.iter().flatten() {
        invalid_each(errs, &path.child("namespace"), ns, dns1123_label(ns));
    }
    validate_match_label_keys_and_mismatch_label_keys(
        path,
        term.match_label_keys.as_deref().unwrap_or(&[]),
        term.mismatch_label_keys.as_deref().unwrap_or(&[]),
        term.label_selector.as_ref(),
        errs,
    );
    if term.topology_key.is_empty() {
        errs.push(FieldError::required(
            path.child("topologyKey"),
            "can not be empty",
        ));
    }
    validate_label_name(&term.topology_key, &path.child("topologyKey"), errs);
}

/// `ValidateMatchLabelKeysAndMismatchLabelKeys`.
pub(super) fn validate_match_label_keys_and_mismatch_label_keys(
    path: &FieldPath,
    match_keys: &[String],
    mismatch_keys: &[String],
    selector: Option<&LabelSelector>,
    errs: &mut Errs,
) {
    validate_label_keys(&path.child("matchLabelKeys"), match_keys, selector, errs);
    validate_label_keys(
        &path.child("mismatchLabelKeys"),
        mismatch_keys,
        selector,
        errs,
    );
    if let Some(sel) = selector {
        let positions: BTreeMap<&str, usize> = match_keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i))
            .collect();
        let mut selector_keys: BTreeSet<&str> = sel
            .match_labels
            .iter()
            .flatten()
            .map(|(k, _)| k.as_str())
            .collect();
        for expr in sel.match_expressions.iter().flatten() {
            let key = expr.key.as_str();
            if let Some(i) = positions.get(key)
                && selector_keys.contains(key)
            {
                errs.push(FieldError::invalid(
                    path.index(*i),
                    quote(key),
                    "exists in both matchLabelKeys and labelSelector",
                ));
            }
            selector_keys.insert(key);
        }
    }
    let mismatch: BTreeSet<&str> = mismatch_keys.iter().map(String::as_str).collect();
    for (i, k) in match_keys.iter().enumerate() {
        if mismatch.contains(k.as_str()) {
            errs.push(FieldError::invalid(
                path.child("matchLabelKeys").index(i),
                quote(k),
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
}

/// `validateLabelKeys`.
fn validate_label_keys(
    path: &FieldPath,
    keys: &[String],
    selector: Option<&LabelSelector>,
    errs: &mut Errs,
) {
    if keys.is_empty() {
        return;
    }
    if selector.is_none() {
        errs.push(FieldError::forbidden(
            path,
            "must not be specified when labelSelector is not set",
        ));
        return;
    }
    for (i, k) in keys.iter().enumerate() {
        validate_label_name(k, &path.index(i), errs);
    }
}

//! Object metadata, labels, annotations and label selectors (apimachinery's
//! `ValidateObjectMeta`, `ValidateLabels`, `ValidateAnnotations`, `ValidateLabelSelector`), and
//! core's `ValidatePodSpecificAnnotations`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSpec, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::names::{dns1123_label, dns1123_subdomain, label_value, qualified_name};
use super::{Errs, FieldPath, invalid_each, json, nonnegative};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `TotalAnnotationSizeLimitB`.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Finalizers Kubernetes itself defines (`IsStandardFinalizerName`).
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// `maskTrailingDash`: a generateName may end with `-` (upstream replaces the last two bytes).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        match name.get(..cut) {
            Some(head) => format!("{head}a"),
            None => name.to_string(),
        }
    } else {
        name.to_string()
    }
}

/// core `ValidateObjectMeta` with `ValidateDaemonSetName` (a DNS subdomain) and a required
/// namespace.
pub(super) fn validate_object_meta(meta: &ObjectMeta, errs: &mut Errs) {
    let path = FieldPath::root("metadata");
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    if !generate_name.is_empty() {
        invalid_each(
            errs,
            &path.child("generateName"),
            generate_name,
            dns1123_subdomain(&mask_trailing_dash(generate_name)),
        );
    }
    let name = meta.name.as_deref().unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(
            path.child("name"),
            "name or generateName is required",
        ));
    } else {
        invalid_each(errs, &path.child("name"), name, dns1123_subdomain(name));
    }
    let ns = meta.namespace.as_deref().unwrap_or("");
    if ns.is_empty() {
        errs.push(FieldError::required(path.child("namespace"), ""));
    } else {
        invalid_each(errs, &path.child("namespace"), ns, dns1123_label(ns));
    }
    nonnegative(
        meta.generation.unwrap_or(0),
        &path.child("generation"),
        errs,
    );
    validate_labels(meta.labels.as_ref(), &path.child("labels"), errs);
    validate_annotations(meta.annotations.as_ref(), &path.child("annotations"), errs);
    validate_owner_references(meta, &path.child("ownerReferences"), errs);
    validate_finalizers(meta.finalizers.as_deref().unwrap_or(&[]), &path, errs);
}

/// `validateOwnerReference` for every reference, and the single-controller rule.
fn validate_owner_references(meta: &ObjectMeta, path: &FieldPath, errs: &mut Errs) {
    let mut first_controller: Option<String> = None;
    for r in meta.owner_references.iter().flatten() {
        // `schema.ParseGroupVersion`: `v`, `group/v`; anything with more slashes has no version.
        let version = match r.api_version.split('/').collect::<Vec<_>>()[..] {
            [v] | [_, v] => v,
            _ => "",
        };
        if version.is_empty() {
            errs.push(FieldError::invalid(
                path.child("apiVersion"),
                quote(&r.api_version),
                "version must not be empty",
            ));
        }
        for (field, value) in [("kind", &r.kind), ("name", &r.name), ("uid", &r.uid)] {
            if value.is_empty() {
                errs.push(FieldError::invalid(
                    path.child(field),
                    "\"\"",
                    "must not be empty",
                ));
            }
        }
        if r.api_version == "v1" && r.kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                json(r),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    json(&meta.owner_references),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
}

/// `ValidateFinalizers` and core's `validateKubeFinalizerName`.
fn validate_finalizers(finalizers: &[String], meta_path: &FieldPath, errs: &mut Errs) {
    let path = meta_path.child("finalizers");
    for f in finalizers {
        invalid_each(errs, &path, f, qualified_name(f));
    }
    if finalizers.iter().any(|f| f == "orphan")
        && finalizers.iter().any(|f| f == "foregroundDeletion")
    {
        errs.push(FieldError::invalid(
            &path,
            json(&finalizers),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    for (i, f) in finalizers.iter().enumerate() {
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            errs.push(FieldError::invalid(
                path.index(i),
                quote(f),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
}

/// `ValidateLabelName`.
pub(super) fn validate_label_name(key: &str, path: &FieldPath, errs: &mut Errs) {
    invalid_each(errs, path, key, qualified_name(key));
}

/// `ValidateLabels`: every key a qualified name, every value a label value.
pub(super) fn validate_labels(
    labels: Option<&BTreeMap<String, String>>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    for (k, v) in labels.into_iter().flatten() {
        validate_label_name(k, path, errs);
        invalid_each(errs, path, v, label_value(v));
    }
}

/// `ValidateAnnotations`: keys are qualified names (compared in lower case) and the total size
/// is at most 256 KiB.
pub(super) fn validate_annotations(
    annotations: Option<&BTreeMap<String, String>>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let mut total = 0;
    for (k, v) in annotations.into_iter().flatten() {
        invalid_each(errs, path, k, qualified_name(&k.to_lowercase()));
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
}

/// `ValidateLabelSelector` (invalid label values are not allowed).
pub(super) fn validate_label_selector(sel: &LabelSelector, path: &FieldPath, errs: &mut Errs) {
    validate_labels(sel.match_labels.as_ref(), &path.child("matchLabels"), errs);
    for (i, req) in sel.match_expressions.iter().flatten().enumerate() {
        let p = path.child("matchExpressions").index(i);
        validate_selector_requirement(&req.operator, &req.key, req.values.as_deref(), &p, errs);
    }
}

/// `ValidateLabelSelectorRequirement`.
fn validate_selector_requirement(
    operator: &str,
    key: &str,
    values: Option<&[String]>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let values = values.unwrap_or(&[]);
    if !set_operator_values(operator, values, path, errs) {
        errs.push(invalid_operator(operator, path));
    }
    validate_label_name(key, &path.child("key"), errs);
    for (i, v) in values.iter().enumerate() {
        invalid_each(errs, &path.child("values").index(i), v, label_value(v));
    }
}

/// The value rules label and node selector requirements share: `In` and `NotIn` need values,
/// `Exists` and `DoesNotExist` take none. `false` for any other operator.
pub(super) fn set_operator_values(
    operator: &str,
    values: &[String],
    path: &FieldPath,
    errs: &mut Errs,
) -> bool {
    match operator {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
            true
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
            true
        }
        _ => false,
    }
}

/// An operator no selector knows.
pub(super) fn invalid_operator(operator: &str, path: &FieldPath) -> FieldError {
    FieldError::invalid(
        path.child("operator"),
        quote(operator),
        "not a valid selector operator",
    )
}

// ---------------------------------------------------------------------------------------------
// ValidatePodSpecificAnnotations

const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
const TOLERATIONS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/tolerations";
const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
pub(super) const SECCOMP_CONTAINER_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";
pub(super) const APPARMOR_CONTAINER_PREFIX: &str =
    "container.apparmor.security.beta.kubernetes.io/";

/// `ValidatePodSpecificAnnotations` for a pod template (`spec.template.annotations`).
pub(super) fn validate_pod_specific_annotations(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    path: &FieldPath,
    gates: &super::Gates,
    errs: &mut Errs,
) {
    if let Some(value) = annotations.get(MIRROR_POD_ANNOTATION)
        && spec.node_name.as_deref().unwrap_or("").is_empty()
    {
        errs.push(FieldError::invalid(
            path.key(MIRROR_POD_ANNOTATION),
            quote(value),
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    if let Some(value) = annotations
        .get(TOLERATIONS_ANNOTATION)
        .filter(|v| !v.is_empty())
    {
        match serde_json::from_str::<Vec<Toleration>>(value) {
            Err(e) => errs.push(FieldError::invalid(
                path,
                quote(TOLERATIONS_ANNOTATION),
                e.to_string(),
            )),
            Ok(tolerations) => super::tolerations::validate_tolerations(
                &tolerations,
                &path.child(TOLERATIONS_ANNOTATION),
                gates,
                errs,
            ),
        }
    }
    if let Some(value) = annotations.get(POD_DELETION_COST)
        && !is_deletion_cost(value)
    {
        errs.push(FieldError::invalid(
            path.key(POD_DELETION_COST),
            quote(value),
            "must be a 32bit integer",
        ));
    }
    validate_seccomp_pod_annotations(annotations, path, errs);
    validate_apparmor_pod_annotations(annotations, spec, path, errs);
}

/// `GetDeletionCostFromPodAnnotations` accepts a 32-bit decimal without `+` or leading zeros.
fn is_deletion_cost(value: &str) -> bool {
    let first_ok = match value.as_bytes() {
        [] => false,
        [b'-', ..] => true,
        [b'0'] => true,
        [b'1'..=b'9', ..] => true,
        _ => false,
    };
    first_ok && value.parse::<i32>().is_ok()
}

/// `ValidateSeccompProfile` (annotation form).
fn validate_seccomp_profile(profile: &str, path: &FieldPath, errs: &mut Errs) {
    if matches!(profile, "runtime/default" | "docker/default" | "unconfined") {
        return;
    }
    if let Some(local) = profile.strip_prefix("localhost/") {
        super::paths::validate_local_descending_path(local, path, errs);
        return;
    }
    errs.push(FieldError::invalid(
        path,
        quote(profile),
        "must be a valid seccomp profile",
    ));
}

/// `ValidateSeccompPodAnnotations`.
fn validate_seccomp_pod_annotations(
    annotations: &BTreeMap<String, String>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if let Some(p) = annotations.get(SECCOMP_POD_ANNOTATION) {
        validate_seccomp_profile(p, &path.child(SECCOMP_POD_ANNOTATION), errs);
    }
    for (k, p) in annotations {
        if k.starts_with(SECCOMP_CONTAINER_PREFIX) {
            validate_seccomp_profile(p, &path.child(k), errs);
        }
    }
}

/// Every container name of a pod spec: init, regular, ephemeral.
fn has_container(spec: &PodSpec, name: &str) -> bool {
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .any(|c| c.name == name)
        || spec
            .ephemeral_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
}

/// `ValidateAppArmorPodAnnotations` and `ValidateAppArmorProfileFormat`.
fn validate_apparmor_pod_annotations(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    path: &FieldPath,
    errs: &mut Errs,
) {
    for (k, p) in annotations {
        let Some(container) = k.strip_prefix(APPARMOR_CONTAINER_PREFIX) else {
            continue;
        };
        if !has_container(spec, container) {
            errs.push(FieldError::invalid(
                path.key(k),
                quote(container),
                "container not found",
            ));
        }
        let ok = matches!(p.as_str(), "" | "runtime/default" | "unconfined")
            || p.starts_with("localhost/");
        if !ok {
            errs.push(FieldError::invalid(
                path.key(k),
                quote(p),
                format!("invalid AppArmor profile name: {}", quote(p)),
            ));
        }
    }
}

//! Resources: `ValidateContainerResourceRequirements`, `validateResourceRequirements`, resource
//! names (`validateResourceName`, `validateContainerResourceName`, `validatePodResourceName`),
//! `ValidateResourceQuantityValue`, hugepages, `validateResourceClaimNames`, pod-level
//! resources (`validatePodResources`, `validatePodResourceConsistency`) and `validateOverhead`.
//! Quantities are read by [`crate::model::Quantity`], exactly as upstream reads them; one that
//! does not parse is reported with upstream's syntax message at its path.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, ResourceClaim, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as RawQuantity;

use super::names::{dns1123_label, qualified_name};
use super::pod::PodContext;
use super::{Errs, FieldPath, invalid_each};
use crate::manifest::FieldError;
use crate::manifest::error::quote;
use crate::model::Quantity;

/// Resource names a container may request without a domain (`standardContainerResources`).
const STANDARD_CONTAINER_RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// `standardResources`: every resource name known without a domain.
const STANDARD_RESOURCES: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// `integerResources`.
const INTEGER_RESOURCES: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resources that may be set at pod level (`SupportedPodLevelResources`); hugepages are
/// matched by prefix.
const POD_LEVEL_RESOURCES: [&str; 2] = ["cpu", "memory"];

const HUGEPAGES_PREFIX: &str = "hugepages-";

fn is_hugepages(name: &str) -> bool {
    name.starts_with(HUGEPAGES_PREFIX)
}

/// `IsNativeResource`: no domain, or the `kubernetes.io/` domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`: a domain other than kubernetes.io, and a valid quota name.
pub(super) fn is_extended(name: &str) -> bool {
    if is_native(name) || name.starts_with("requests.") {
        return false;
    }
    qualified_name(&format!("requests.{name}")).is_empty()
}

/// `IsOvercommitAllowed`: requests may be below limits.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

fn is_standard_resource(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name)
        || name.starts_with(HUGEPAGES_PREFIX)
        || name.starts_with("requests.hugepages-")
}

/// `validateResourceName`; returns whether it is well-formed.
fn validate_resource_name(name: &str, path: &FieldPath, errs: &mut Errs) -> bool {
    let msgs = qualified_name(name);
    if !msgs.is_empty() {
        invalid_each(errs, path, name, msgs);
        return false;
    }
    if !name.contains('/') && !is_standard_resource(name) {
        errs.push(FieldError::invalid(
            path,
            quote(name),
            "must be a standard resource type or fully qualified",
        ));
        return false;
    }
    true
}

/// `validateContainerResourceName`.
fn validate_container_resource_name(name: &str, path: &FieldPath, errs: &mut Errs) {
    validate_resource_name(name, path, errs);
    if !name.contains('/') {
        if !STANDARD_CONTAINER_RESOURCES.contains(&name) && !is_hugepages(name) {
            errs.push(FieldError::invalid(
                path,
                quote(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            path,
            quote(name),
            "doesn't follow extended resource name standard",
        ));
    }
}

/// `validatePodResourceName`.
fn validate_pod_resource_name(name: &str, path: &FieldPath, errs: &mut Errs) {
    if !validate_resource_name(name, path, errs) {
        return;
    }
    if !POD_LEVEL_RESOURCES.contains(&name) && !is_hugepages(name) {
        errs.push(FieldError::not_supported(
            path,
            quote(name),
            &POD_LEVEL_RESOURCES,
        ));
    }
}

/// Reads a quantity, reporting a syntax error at `path`.
pub(super) fn parse_quantity(
    raw: &RawQuantity,
    path: &FieldPath,
    errs: &mut Errs,
) -> Option<Quantity> {
    match Quantity::parse(&raw.0) {
        Ok(q) => Some(q),
        Err(e) => {
            errs.push(FieldError::invalid(path, quote(&raw.0), e.to_string()));
            None
        }
    }
}

/// `ValidateResourceQuantityValue`: not negative, and whole for integer resources.
pub(super) fn validate_resource_quantity_value(
    name: &str,
    q: &Quantity,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if q.is_negative() {
        errs.push(FieldError::invalid(
            path,
            quote(&q.to_string()),
            "must be greater than or equal to 0",
        ));
    }
    let integer = INTEGER_RESOURCES.contains(&name) || is_extended(name);
    if integer && !q.is_whole_in_milli() {
        errs.push(FieldError::invalid(
            path,
            quote(&q.to_string()),
            "must be an integer",
        ));
    }
}

/// `validateResourceQuantityHugePageValue` / `IsHugePageResourceValueDivisible`.
fn validate_hugepage_value(name: &str, q: &Quantity, path: &FieldPath, errs: &mut Errs) {
    let divisible = Quantity::parse(&name[HUGEPAGES_PREFIX.len()..]).is_ok_and(|page| {
        !page.is_negative()
            && !page.is_zero()
            && page.milli_value() % 1000 == 0
            && page.value() != 0
            && q.value() % page.value() == 0
    });
    if !divisible {
        errs.push(FieldError::invalid(
            path,
            quote(&q.to_string()),
            format!("{q} is not positive integer multiple of {name}"),
        ));
    }
}

type NameCheck = fn(&str, &FieldPath, &mut Errs);

/// `ValidateContainerResourceRequirements`.
pub(super) fn validate_container_resource_requirements(
    req: Option<&ResourceRequirements>,
    claim_names: &BTreeSet<&str>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let Some(req) = req else {
        return;
    };
    validate_resource_requirements(
        req,
        validate_container_resource_name,
        claim_names,
        path,
        errs,
    );
}

/// `validateResourceRequirements`: names, quantities, requests against limits, hugepages and
/// claims.
fn validate_resource_requirements(
    req: &ResourceRequirements,
    name_check: NameCheck,
    claim_names: &BTreeSet<&str>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let empty = BTreeMap::new();
    let limits = req.limits.as_ref().unwrap_or(&empty);
    let requests = req.requests.as_ref().unwrap_or(&empty);
    let (mut lim_cpu_mem, mut req_cpu_mem, mut lim_huge, mut req_huge) =
        (false, false, false, false);
    let mut parsed_limits: BTreeMap<&str, Quantity> = BTreeMap::new();
    for (name, raw) in limits {
        let p = lim_path.key(name);
        name_check(name, &p, errs);
        let Some(q) = parse_quantity(raw, &p, errs) else {
            continue;
        };
        validate_resource_quantity_value(name, &q, &p, errs);
        if is_hugepages(name) {
            lim_huge = true;
            validate_hugepage_value(name, &q, &p, errs);
        }
        if name == "cpu" || name == "memory" {
            lim_cpu_mem = true;
        }
        parsed_limits.insert(name.as_str(), q);
    }
    for (name, raw) in requests {
        let p = req_path.key(name);
        name_check(name, &p, errs);
        let Some(q) = parse_quantity(raw, &p, errs) else {
            continue;
        };
        validate_resource_quantity_value(name, &q, &p, errs);
        if let Some(limit) = parsed_limits.get(name.as_str()) {
            let order = q.cmp_value(limit);
            if order.is_ne() && !overcommit_allowed(name) {
                errs.push(FieldError::invalid(
                    &req_path,
                    quote(&q.to_string()),
                    format!("must be equal to {name} limit of {limit}"),
                ));
            } else if order.is_gt() {
                errs.push(FieldError::invalid(
                    &req_path,
                    quote(&q.to_string()),
                    format!("must be less than or equal to {name} limit of {limit}"),
                ));
            }
        } else if !limits.contains_key(name) && !overcommit_allowed(name) {
            errs.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            ));
        }
        if is_hugepages(name) {
            req_huge = true;
            validate_hugepage_value(name, &q, &p, errs);
        }
        if name == "cpu" || name == "memory" {
            req_cpu_mem = true;
        }
    }
    if !lim_cpu_mem && !req_cpu_mem && (req_huge || lim_huge) {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    validate_resource_claim_names(
        req.claims.as_deref().unwrap_or(&[]),
        claim_names,
        &path.child("claims"),
        errs,
    );
}

/// `validateResourceClaimNames`: each claim names an entry of `spec.resourceClaims`, once.
fn validate_resource_claim_names(
    claims: &[ResourceClaim],
    pod_claims: &BTreeSet<&str>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (i, claim) in claims.iter().enumerate() {
        let p = path.index(i);
        let name = claim.name.as_str();
        if name.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if names.contains(name) {
            errs.push(FieldError::duplicate(&p, quote(name)));
        } else {
            let request = claim.request.as_deref().unwrap_or("");
            let mut key = name.to_string();
            if !request.is_empty() {
                invalid_each(errs, &p.child("request"), request, dns1123_label(request));
                key = format!("{name}/{request}");
            }
            if names.contains(&key) {
                errs.push(FieldError::duplicate(&p, quote(&key)));
            } else if request.is_empty() {
                for existing in &names {
                    if existing
                        .split_once('/')
                        .is_some_and(|(claim, _)| claim == name)
                    {
                        errs.push(FieldError::duplicate(&p, quote(name)));
                    }
                }
            }
            names.insert(key);
        }
        if !pod_claims.contains(name) {
            let listed = if pod_claims.is_empty() {
                " which is empty".to_string()
            } else {
                let all: Vec<&str> = pod_claims.iter().copied().collect();
                format!(": {}", all.join(", "))
            };
            errs.push(FieldError::not_found(&p, quote(name)).with_detail(format!(
                "must be one of the names in pod.spec.resourceClaims{listed}"
            )));
        }
    }
}

/// `validateOverhead`: checked as container limits.
pub(super) fn validate_overhead(
    overhead: &BTreeMap<String, RawQuantity>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let req = ResourceRequirements {
        limits: Some(overhead.clone()),
        ..Default::default()
    };
    validate_resource_requirements(
        &req,
        validate_container_resource_name,
        &BTreeSet::new(),
        path,
        errs,
    );
}

/// `validatePodResources` (the `PodLevelResources` gate is on in v1.35).
pub(super) fn validate_pod_resources(ctx: &PodContext<'_>, path: &FieldPath, errs: &mut Errs) {
    let Some(res) = ctx.spec.resources.as_ref() else {
        return;
    };
    let rp = path.child("resources");
    if ctx.spec.os.as_ref().is_some_and(|os| os.name == "windows") {
        errs.push(FieldError::forbidden(
            rp,
            "may not be set for a windows pod",
        ));
        return;
    }
    if res.claims.is_some() {
        errs.push(FieldError::forbidden(
            rp.child("claims"),
            "claims may not be set for Resources at pod-level",
        ));
    }
    validate_resource_requirements(res, validate_pod_resource_name, &ctx.claim_names, &rp, errs);
    validate_pod_resource_consistency(ctx, &rp, errs);
}

/// Parsed requests or limits of one container (unparsable entries are skipped: they are
/// reported by the container's own validation).
fn parsed(list: Option<&BTreeMap<String, RawQuantity>>) -> BTreeMap<String, Quantity> {
    list.into_iter()
        .flatten()
        .filter_map(|(k, v)| Quantity::parse(&v.0).ok().map(|q| (k.clone(), q)))
        .collect()
}

fn add_into(total: &mut BTreeMap<String, Quantity>, more: &BTreeMap<String, Quantity>) {
    for (k, v) in more {
        let sum = total.get(k).map_or_else(|| v.clone(), |t| t.add(v));
        total.insert(k.clone(), sum);
    }
}

fn max_into(total: &mut BTreeMap<String, Quantity>, other: &BTreeMap<String, Quantity>) {
    for (k, v) in other {
        if total.get(k).is_none_or(|t| t.cmp_value(v).is_lt()) {
            total.insert(k.clone(), v.clone());
        }
    }
}

/// `resourcehelper.AggregateContainerRequests` / `AggregateContainerLimits` for a template:
/// regular and sidecar containers run together, each init container runs beside the sidecars
/// started before it, and the pod needs the larger of the two.
fn aggregate(
    containers: &[Container],
    init: &[Container],
    pick: fn(&Container) -> Option<&BTreeMap<String, RawQuantity>>,
) -> BTreeMap<String, Quantity> {
    let mut total = BTreeMap::new();
    for c in containers {
        add_into(&mut total, &parsed(pick(c)));
    }
    let mut sidecars = BTreeMap::new();
    let mut init_max = BTreeMap::new();
    for c in init {
        let own = parsed(pick(c));
        let during = if c.restart_policy.as_deref() == Some("Always") {
            add_into(&mut total, &own);
            add_into(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut t = own;
            add_into(&mut t, &sidecars);
            t
        };
        max_into(&mut init_max, &during);
    }
    max_into(&mut total, &init_max);
    total
}

fn requests(c: &Container) -> Option<&BTreeMap<String, RawQuantity>> {
    c.resources.as_ref().and_then(|r| r.requests.as_ref())
}

fn limits(c: &Container) -> Option<&BTreeMap<String, RawQuantity>> {
    c.resources.as_ref().and_then(|r| r.limits.as_ref())
}

/// `validatePodResourceConsistency`: pod-level requests cover the containers' aggregate,
/// pod-level hugepage limits cover theirs, and no container limit exceeds the pod's.
fn validate_pod_resource_consistency(ctx: &PodContext<'_>, path: &FieldPath, errs: &mut Errs) {
    let spec = ctx.spec;
    let Some(res) = spec.resources.as_ref() else {
        return;
    };
    let init = spec.init_containers.as_deref().unwrap_or(&[]);
    let pod_requests = parsed(res.requests.as_ref());
    let pod_limits = parsed(res.limits.as_ref());
    for (name, total) in aggregate(&spec.containers, init, requests) {
        if let Some(pod) = pod_requests.get(&name)
            && total.cmp_value(pod).is_gt()
        {
            errs.push(FieldError::invalid(
                path.child("requests").key(&name),
                quote(&pod.to_string()),
                format!("must be greater than or equal to aggregate container requests of {total}"),
            ));
        }
    }
    for (name, total) in aggregate(&spec.containers, init, limits) {
        if !is_hugepages(&name) {
            continue;
        }
        if let Some(pod) = pod_limits.get(&name)
            && total.cmp_value(pod).is_gt()
        {
            errs.push(FieldError::invalid(
                path.child("limits").key(&name),
                quote(&pod.to_string()),
                format!("must be greater than or equal to aggregate container limits of {total}"),
            ));
        }
    }
    for (i, c) in spec.containers.iter().enumerate() {
        for (name, limit) in parsed(limits(c)) {
            if let Some(pod) = pod_limits.get(&name)
                && limit.cmp_value(pod).is_gt()
            {
                errs.push(FieldError::invalid(
                    path.child("containers").index(i).key(&name).child("limits"),
                    quote(&limit.to_string()),
                    format!("must be less than or equal to pod limits of {pod}"),
                ));
            }
        }
    }
}

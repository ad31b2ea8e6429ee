//! `ValidatePodTemplateSpec` and `ValidatePodSpec`: the order of the checks, and the pod-level
//! rules that have no family of their own (restart policy, host network ports, image pull
//! secrets, readiness and scheduling gates, user namespaces, hostname override, service
//! account, node name, deadlines, hostname, subdomain, host aliases, priority, runtime class,
//! preemption, resource claims).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodResourceClaim, PodSpec, PodTemplateSpec};

use super::names::{dns1123_label, dns1123_subdomain, ip_legacy, qualified_name};
use super::volumes::VolumeSet;
use super::{Errs, FieldPath, Gates, invalid_each, json, str_or_empty};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `ValidatePodTemplateSpec`.
pub(super) fn validate_pod_template_spec(
    t: &PodTemplateSpec,
    path: &FieldPath,
    gates: &Gates,
    errs: &mut Errs,
) {
    let empty = BTreeMap::new();
    let meta = t.metadata.as_ref();
    let labels = meta.and_then(|m| m.labels.as_ref());
    let annotations = meta.and_then(|m| m.annotations.as_ref());
    super::meta::validate_labels(labels, &path.child("labels"), errs);
    super::meta::validate_annotations(annotations, &path.child("annotations"), errs);
    let default_pod = PodSpec::default();
    let spec = t.spec.as_ref().unwrap_or(&default_pod);
    super::meta::validate_pod_specific_annotations(
        annotations.unwrap_or(&empty),
        spec,
        &path.child("annotations"),
        gates,
        errs,
    );
    let spec_path = path.child("spec");
    validate_pod_spec(spec, &spec_path, gates, errs);
    super::security::validate_seccomp_annotations_and_fields(
        annotations.unwrap_or(&empty),
        spec,
        &spec_path,
        errs,
    );
    super::security::validate_apparmor_annotations_and_fields_match(
        annotations.unwrap_or(&empty),
        spec,
        &spec_path,
        errs,
    );
    if spec
        .ephemeral_containers
        .as_ref()
        .is_some_and(|e| !e.is_empty())
    {
        errs.push(FieldError::forbidden(
            spec_path.child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// What the container validators need to know about the pod around them.
pub(super) struct PodContext<'a> {
    pub(super) spec: &'a PodSpec,
    pub(super) volumes: VolumeSet<'a>,
    pub(super) claim_names: BTreeSet<&'a str>,
    pub(super) grace_period: Option<i64>,
    pub(super) host_users: bool,
    pub(super) gates: &'a Gates,
}

/// `ValidatePodSpec` for a pod template (no pod metadata, not a Pod).
pub(super) fn validate_pod_spec(spec: &PodSpec, path: &FieldPath, gates: &Gates, errs: &mut Errs) {
    if spec.termination_grace_period_seconds.is_none() {
        errs.push(FieldError::required(
            path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    let host_users = spec.host_users.unwrap_or(true);
    let volumes = super::volumes::validate_volumes(
        spec.volumes.as_deref().unwrap_or(&[]),
        &path.child("volumes"),
        errs,
    );
    let claims = spec.resource_claims.as_deref().unwrap_or(&[]);
    let claim_names = claims
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    validate_pod_resource_claims(claims, &path.child("resourceClaims"), errs);
    let ctx = PodContext {
        spec,
        volumes,
        claim_names,
        grace_period: spec.termination_grace_period_seconds,
        host_users,
        gates,
    };
    super::containers::validate_containers(&ctx, &path.child("containers"), errs);
    super::containers::validate_init_containers(&ctx, &path.child("initContainers"), errs);
    super::containers::validate_ephemeral_containers(
        &ctx,
        &path.child("ephemeralContainers"),
        errs,
    );
    if super::POD_LEVEL_RESOURCES {
        super::resources::validate_pod_resources(&ctx, path, errs);
    }
    validate_pod_host_network_deps(spec, path, errs);
    validate_restart_policy(str_or_empty(&spec.restart_policy), path, errs);
    super::dns::validate_dns_policy(
        str_or_empty(&spec.dns_policy),
        &path.child("dnsPolicy"),
        errs,
    );
    super::meta::validate_labels(
        spec.node_selector.as_ref(),
        &path.child("nodeSelector"),
        errs,
    );
    super::security::validate_pod_spec_security_context(spec, path, errs);
    // `validateImagePullSecrets` refuses fields beside `name`; a v1 `LocalObjectReference` has
    // no other field, so it cannot fail here.
    if let Some(a) = spec.affinity.as_ref() {
        super::affinity::validate_affinity(a, &path.child("affinity"), errs);
    }
    super::dns::validate_pod_dns_config(
        spec.dns_config.as_ref(),
        str_or_empty(&spec.dns_policy),
        &path.child("dnsConfig"),
        gates,
        errs,
    );
    validate_readiness_gates(spec, &path.child("readinessGates"), errs);
    validate_scheduling_gates(spec, &path.child("schedulingGates"), errs);
    super::topology::validate_topology_spread_constraints(
        spec.topology_spread_constraints.as_deref().unwrap_or(&[]),
        &path.child("topologySpreadConstraints"),
        errs,
    );
    super::security::validate_windows_host_process_pod(spec, path, errs);
    validate_host_users(spec, path, errs);
    validate_pod_host_name(spec, path, errs);
    if let Some(sa) = spec
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        invalid_each(
            errs,
            &path.child("serviceAccountName"),
            sa,
            dns1123_subdomain(sa),
        );
    }
    if let Some(node) = spec.node_name.as_deref().filter(|s| !s.is_empty()) {
        invalid_each(errs, &path.child("nodeName"), node, dns1123_subdomain(node));
    }
    if let Some(ads) = spec.active_deadline_seconds
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(FieldError::invalid(
            path.child("activeDeadlineSeconds"),
            ads.to_string(),
            super::names::inclusive_range_error(1, i64::from(i32::MAX)),
        ));
    }
    if let Some(h) = spec.hostname.as_deref().filter(|s| !s.is_empty()) {
        invalid_each(errs, &path.child("hostname"), h, dns1123_label(h));
    }
    if let Some(s) = spec.subdomain.as_deref().filter(|s| !s.is_empty()) {
        invalid_each(errs, &path.child("subdomain"), s, dns1123_label(s));
    }
    if let Some(t) = spec.tolerations.as_deref().filter(|t| !t.is_empty()) {
        super::tolerations::validate_tolerations(t, &path.child("tolerations"), gates, errs);
    }
    validate_host_aliases(spec, &path.child("hostAliases"), errs);
    if let Some(pc) = spec
        .priority_class_name
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        invalid_each(
            errs,
            &path.child("priorityClassName"),
            pc,
            dns1123_subdomain(pc),
        );
    }
    if let Some(rc) = spec.runtime_class_name.as_deref() {
        invalid_each(
            errs,
            &path.child("runtimeClassName"),
            rc,
            dns1123_subdomain(rc),
        );
    }
    if let Some(pp) = spec.preemption_policy.as_deref() {
        validate_preemption_policy(pp, &path.child("preemptionPolicy"), errs);
    }
    if let Some(overhead) = spec.overhead.as_ref() {
        super::resources::validate_overhead(overhead, &path.child("overhead"), errs);
    }
    if spec.os.is_some() {
        super::security::validate_os(spec, path, errs);
    }
    super::env::validate_file_key_ref_volumes(spec, path, errs);
}

/// `validateRestartPolicy`.
fn validate_restart_policy(policy: &str, path: &FieldPath, errs: &mut Errs) {
    let p = path.child("restartPolicy");
    match policy {
        "Always" | "OnFailure" | "Never" => {}
        "" => errs.push(FieldError::required(p, "")),
        other => errs.push(FieldError::not_supported(
            p,
            quote(other),
            &["Always", "OnFailure", "Never"],
        )),
    }
}

/// `ValidatePreemptionPolicy`.
fn validate_preemption_policy(policy: &str, path: &FieldPath, errs: &mut Errs) {
    match policy {
        "PreemptLowerPriority" | "Never" => {}
        "" => errs.push(FieldError::required(path, "")),
        other => errs.push(FieldError::not_supported(
            path,
            quote(other),
            &["PreemptLowerPriority", "Never"],
        )),
    }
}

/// `validatePodHostNetworkDeps` for a template: a non-zero `hostPort` must equal
/// `containerPort` when `hostNetwork` is true (zero is defaulted on the pod).
fn validate_pod_host_network_deps(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    if spec.host_network != Some(true) {
        return;
    }
    let containers = path.child("containers");
    for (i, c) in spec.containers.iter().enumerate() {
        for (j, port) in c.ports.iter().flatten().enumerate() {
            let hp = port.host_port.unwrap_or(0);
            if hp != 0 && hp != port.container_port {
                errs.push(FieldError::invalid(
                    containers
                        .index(i)
                        .child("ports")
                        .index(j)
                        .child("hostPort"),
                    hp.to_string(),
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
}

/// `validateReadinessGates`.
fn validate_readiness_gates(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    for (i, g) in spec.readiness_gates.iter().flatten().enumerate() {
        invalid_each(
            errs,
            &path.index(i).child("conditionType"),
            &g.condition_type,
            qualified_name(&g.condition_type),
        );
    }
}

/// `validateSchedulingGates`.
fn validate_scheduling_gates(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    let mut seen = BTreeSet::new();
    for (i, g) in spec.scheduling_gates.iter().flatten().enumerate() {
        invalid_each(errs, &path.index(i), &g.name, qualified_name(&g.name));
        if !seen.insert(g.name.as_str()) {
            errs.push(FieldError::duplicate(path.index(i), quote(&g.name)));
        }
    }
}

/// `validateHostUsers`: a pod in its own user namespace may not share the host's network
/// (the `UserNamespacesHostNetworkSupport` gate is off), PID or IPC namespace, nor use block
/// devices.
fn validate_host_users(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    if spec.host_users != Some(false) {
        return;
    }
    const WHY: &str = "when `hostUsers` is false";
    if !super::ALLOW_USER_NAMESPACES_HOST_NETWORK && spec.host_network == Some(true) {
        errs.push(FieldError::forbidden(path.child("hostNetwork"), WHY));
    }
    if spec.host_pid == Some(true) {
        errs.push(FieldError::forbidden(path.child("HostPID"), WHY));
    }
    if spec.host_ipc == Some(true) {
        errs.push(FieldError::forbidden(path.child("HostIPC"), WHY));
    }
    super::containers::visit_containers(spec, path, |c, cpath| {
        if c.volume_devices.as_ref().is_some_and(|d| !d.is_empty()) {
            errs.push(FieldError::forbidden(cpath.child("volumeDevices"), WHY));
        }
    });
}

/// `validatePodHostName`: `hostnameOverride` (the `HostnameOverride` gate is on in v1.35).
fn validate_pod_host_name(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    let Some(name) = spec.hostname_override.as_deref() else {
        return;
    };
    let p = path.child("hostnameOverride");
    if spec.set_hostname_as_fqdn == Some(true) {
        errs.push(FieldError::forbidden(
            &p,
            "may not be specified when setHostnameAsFQDN is true",
        ));
    }
    if spec.host_network == Some(true) {
        errs.push(FieldError::forbidden(
            &p,
            "may not be specified when hostNetwork is true",
        ));
    }
    if name.len() > 64 {
        errs.push(FieldError::too_long(&p, 64));
    }
    invalid_each(errs, &p, name, dns1123_subdomain(name));
}

/// `ValidateHostAliases`.
fn validate_host_aliases(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    for (i, alias) in spec.host_aliases.iter().flatten().enumerate() {
        let ip = alias.ip.as_str();
        invalid_each(errs, &path.index(i).child("ip"), ip, ip_legacy(ip));
        for (j, h) in alias.hostnames.iter().flatten().enumerate() {
            invalid_each(
                errs,
                &path.index(i).child("hostnames").index(j),
                h,
                dns1123_subdomain(h),
            );
        }
    }
}

/// `validatePodResourceClaims` and `validatePodResourceClaim` (template: no pod metadata).
fn validate_pod_resource_claims(claims: &[PodResourceClaim], path: &FieldPath, errs: &mut Errs) {
    let mut names = BTreeSet::new();
    for (i, claim) in claims.iter().enumerate() {
        let p = path.index(i);
        if claim.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else if names.contains(claim.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), quote(&claim.name)));
        } else {
            invalid_each(
                errs,
                &p.child("name"),
                &claim.name,
                dns1123_label(&claim.name),
            );
            names.insert(claim.name.as_str());
        }
        match (&claim.resource_claim_name, &claim.resource_claim_template_name) {
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                &p,
                json(claim),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            )),
            (None, None) => errs.push(FieldError::invalid(
                &p,
                json(claim),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
            _ => {}
        }
        if let Some(n) = claim.resource_claim_name.as_deref() {
            invalid_each(errs, &p.child("resourceClaimName"), n, dns1123_subdomain(n));
        }
        if let Some(n) = claim.resource_claim_template_name.as_deref() {
            invalid_each(
                errs,
                &p.child("resourceClaimTemplateName"),
                n,
                dns1123_subdomain(n),
            );
        }
    }
}

//! Fields of a DaemonSet's pod template that an older Kubernetes version does not keep.
//!
//! Each field here came with a feature gate that is on by default only from some version on
//! (`pkg/features/kube_features.go`'s versioned specs). Before that version the API server
//! either does not know the field or drops it on create (`dropDisabledFields`): the DaemonSet
//! it stores is not the one the manifest describes. daemonsync treats such a field as the
//! strict decoder treats an unknown one, by `--validate`: refused (strict), dropped with a
//! warning (warn) or dropped silently (ignore). Values that a version's validation refuses
//! (`restartPolicy` on a regular container before v1.35, …) are validation's part
//! ([`super::Gates`]).

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Container, PodSpec};

use super::FieldError;
use crate::model::KubeVersion;

/// A field the target version does not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unserved {
    /// The field's path, as the API server prints paths.
    pub path: String,
    /// The feature gate that brings it.
    pub gate: &'static str,
    /// The minor version from which the gate is on by default.
    pub since: u32,
    /// The version the plan is for.
    pub version: KubeVersion,
}

impl Unserved {
    /// Why the field cannot be kept, in one clause.
    fn why(&self) -> String {
        format!(
            "Kubernetes v{} does not keep this field ({} is on from v1.{})",
            self.version.minor_string(),
            self.gate,
            self.since
        )
    }

    /// The error of `--validate=strict`.
    pub fn error(&self) -> FieldError {
        FieldError::forbidden(
            &self.path,
            format!(
                "{}: its API server would drop it, so the DaemonSet would not do what the \
                 manifest says; remove it, or plan for v1.{} or later (--kube-version); \
                 --validate=warn plans without it",
                self.why(),
                self.since
            ),
        )
    }

    /// The warning of `--validate=warn`.
    pub fn warning(&self) -> String {
        format!("field {:?}: {}", self.path, self.why())
    }
}

/// Removes from `ds` every field `version` does not keep and returns them, in the order of the
/// pod spec (pod fields, then each container's, then volumes).
pub(crate) fn take_unserved(ds: &mut DaemonSet, version: KubeVersion) -> Vec<Unserved> {
    let mut out = Vec::new();
    if version.at_least(KubeVersion::NEWEST.minor) {
        return out;
    }
    let Some(pod) = ds.spec.as_mut().and_then(|s| s.template.spec.as_mut()) else {
        return out;
    };
    let mut found = |path: String, gate: &'static str, since: u32| {
        out.push(Unserved {
            path,
            gate,
            since,
            version,
        })
    };
    take_from_pod(pod, version, "spec.template.spec", &mut found);
    out
}

fn take_from_pod(
    pod: &mut PodSpec,
    version: KubeVersion,
    path: &str,
    found: &mut impl FnMut(String, &'static str, u32),
) {
    let mut gate = |present: bool, field: &str, gate: &'static str, since: u32| -> bool {
        let drop = present && !version.at_least(since);
        if drop {
            found(format!("{path}.{field}"), gate, since);
        }
        drop
    };
    if gate(
        pod.host_users == Some(false),
        "hostUsers",
        "UserNamespacesSupport",
        33,
    ) {
        pod.host_users = None;
    }
    if gate(
        pod.hostname_override.is_some(),
        "hostnameOverride",
        "HostnameOverride",
        35,
    ) {
        pod.hostname_override = None;
    }
    if gate(
        pod.resources.is_some(),
        "resources",
        "PodLevelResources",
        34,
    ) {
        pod.resources = None;
    }
    if gate(
        pod.resource_claims.as_ref().is_some_and(|c| !c.is_empty()),
        "resourceClaims",
        "DynamicResourceAllocation",
        34,
    ) {
        pod.resource_claims = None;
    }
    if let Some(sc) = pod.security_context.as_mut() {
        if gate(
            sc.supplemental_groups_policy.is_some(),
            "securityContext.supplementalGroupsPolicy",
            "SupplementalGroupsPolicy",
            33,
        ) {
            sc.supplemental_groups_policy = None;
        }
        if gate(
            sc.se_linux_change_policy.is_some(),
            "securityContext.seLinuxChangePolicy",
            "SELinuxChangePolicy",
            33,
        ) {
            sc.se_linux_change_policy = None;
        }
    }
    for (kind, containers) in [
        ("initContainers", pod.init_containers.as_mut()),
        ("containers", Some(&mut pod.containers)),
    ] {
        for (i, c) in containers.into_iter().flatten().enumerate() {
            take_from_container(c, version, &format!("{path}.{kind}[{i}]"), found);
        }
    }
    for (i, v) in pod.volumes.iter_mut().flatten().enumerate() {
        if v.image.is_some() && !version.at_least(35) {
            found(format!("{path}.volumes[{i}].image"), "ImageVolume", 35);
            v.image = None;
        }
    }
}

fn take_from_container(
    c: &mut Container,
    version: KubeVersion,
    path: &str,
    found: &mut impl FnMut(String, &'static str, u32),
) {
    let mut gate = |present: bool, field: &str, gate: &'static str, since: u32| -> bool {
        let drop = present && !version.at_least(since);
        if drop {
            found(format!("{path}.{field}"), gate, since);
        }
        drop
    };
    for (j, ev) in c.env.iter_mut().flatten().enumerate() {
        if let Some(from) = ev.value_from.as_mut()
            && gate(
                from.file_key_ref.is_some(),
                &format!("env[{j}].valueFrom.fileKeyRef"),
                "EnvFiles",
                35,
            )
        {
            from.file_key_ref = None;
        }
    }
    if let Some(r) = c.resources.as_mut()
        && gate(
            r.claims.as_ref().is_some_and(|c| !c.is_empty()),
            "resources.claims",
            "DynamicResourceAllocation",
            34,
        )
    {
        r.claims = None;
    }
    if gate(
        c.resize_policy.as_ref().is_some_and(|r| !r.is_empty()),
        "resizePolicy",
        "InPlacePodVerticalScaling",
        33,
    ) {
        c.resize_policy = None;
    }
    if gate(
        c.restart_policy_rules.is_some(),
        "restartPolicyRules",
        "ContainerRestartRules",
        35,
    ) {
        c.restart_policy_rules = None;
    }
    if let Some(sc) = c.security_context.as_mut()
        && gate(
            sc.proc_mount.as_deref().is_some_and(|m| m != "Default"),
            "securityContext.procMount",
            "ProcMountType",
            33,
        )
    {
        // Upstream forces the field back to `Default` when the gate is off.
        sc.proc_mount = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(pod: serde_json::Value) -> DaemonSet {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}}, "spec": pod}}
        }))
        .unwrap()
    }

    fn paths(pod: serde_json::Value, minor: u32) -> Vec<String> {
        let mut d = ds(pod);
        take_unserved(&mut d, KubeVersion::v1(minor))
            .into_iter()
            .map(|u| format!("{} {} {}", u.path, u.gate, u.since))
            .collect()
    }

    #[test]
    fn each_field_is_kept_from_the_version_its_gate_is_on() {
        let pod = serde_json::json!({
            "hostnameOverride": "n", "hostUsers": false,
            "resources": {"limits": {"cpu": "1"}},
            "securityContext": {"supplementalGroupsPolicy": "Strict", "seLinuxChangePolicy": "Recursive"},
            "containers": [{"name": "c", "image": "i",
                "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                "restartPolicy": "Never",
                "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}],
                "env": [{"name": "E", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k"}}}],
                "securityContext": {"procMount": "Unmasked"}}],
            "volumes": [{"name": "v", "image": {"reference": "r"}}]
        });
        assert!(paths(pod.clone(), 35).is_empty());
        let at_34 = paths(pod.clone(), 34);
        assert_eq!(
            at_34,
            [
                "spec.template.spec.hostnameOverride HostnameOverride 35",
                "spec.template.spec.containers[0].env[0].valueFrom.fileKeyRef EnvFiles 35",
                "spec.template.spec.containers[0].restartPolicyRules ContainerRestartRules 35",
                "spec.template.spec.volumes[0].image ImageVolume 35",
            ]
        );
        let at_31 = paths(pod, 31);
        assert_eq!(at_31.len(), 10, "{at_31:#?}");
        assert!(
            at_31
                .iter()
                .any(|p| p.contains("resizePolicy InPlacePodVerticalScaling 33"))
        );
        assert!(
            at_31
                .iter()
                .any(|p| p.contains("procMount ProcMountType 33"))
        );
    }

    #[test]
    fn default_values_are_kept_everywhere() {
        let pod = serde_json::json!({
            "hostUsers": true,
            "containers": [{"name": "c", "image": "i", "securityContext": {"procMount": "Default"}}]
        });
        assert!(paths(pod, 31).is_empty());
    }

    #[test]
    fn the_error_names_the_version_the_gate_and_the_fix() {
        let mut d = ds(serde_json::json!({"hostnameOverride": "n", "containers": []}));
        let u = take_unserved(&mut d, KubeVersion::v1(34));
        let text = u[0].error().to_string();
        assert!(text.starts_with("spec.template.spec.hostnameOverride: Forbidden: Kubernetes v1.34 does not keep this field (HostnameOverride is on from v1.35)"), "{text}");
        assert!(text.contains("--kube-version"), "{text}");
        assert!(
            d.spec
                .unwrap()
                .template
                .spec
                .unwrap()
                .hostname_override
                .is_none()
        );
    }
}

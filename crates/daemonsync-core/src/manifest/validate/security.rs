//! Security: `validatePodSpecSecurityContext`, `ValidateSecurityContext`, sysctls
//! (`validateSysctls`, `ValidateHostSysctl`), seccomp (`validateSeccompProfileField`,
//! `validateSeccompAnnotationsAndFields`), AppArmor (`ValidateAppArmorProfileField`,
//! `validateAppArmorAnnotationsAndFieldsMatchOnCreate`), Windows
//! (`validateWindowsSecurityContextOptions`, `validateWindowsHostProcessPod`) and the OS rules
//! (`validateOS`, `validateLinux`, `validateWindows`).
//!
//! Privileged containers are allowed: `--allow-privileged` is set on every cluster a DaemonSet
//! of this kind runs on (kubeadm, managed clusters); without it the API server would refuse
//! `privileged: true` with "disallowed by cluster policy".

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    AppArmorProfile, PodSpec, SeccompProfile, SecurityContext, WindowsSecurityContextOptions,
};

use super::containers::visit_containers;
use super::meta::{APPARMOR_CONTAINER_PREFIX, SECCOMP_CONTAINER_PREFIX};
use super::names::{
    SYSCTL_RE, dns1123_subdomain, is_valid_sysctl_name, normalize_sysctl_name, unix_id,
};
use super::paths::validate_local_descending_path;
use super::{Errs, FieldPath, json};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

fn ids(value: Option<i64>, path: &FieldPath, errs: &mut Errs) {
    if let Some(v) = value {
        for m in unix_id(v) {
            errs.push(FieldError::invalid(path, v.to_string(), m));
        }
    }
}

/// `validatePodSpecSecurityContext`.
pub(super) fn validate_pod_spec_security_context(
    spec: &PodSpec,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let p = path.child("securityContext");
    let default_sc = Default::default();
    let sc = spec.security_context.as_ref().unwrap_or(&default_sc);
    ids(sc.fs_group, &p.child("fsGroup"), errs);
    ids(sc.run_as_user, &p.child("runAsUser"), errs);
    ids(sc.run_as_group, &p.child("runAsGroup"), errs);
    for (g, gid) in sc.supplemental_groups.iter().flatten().enumerate() {
        ids(Some(*gid), &p.child("supplementalGroups").index(g), errs);
    }
    if spec.share_process_namespace == Some(true) && spec.host_pid == Some(true) {
        errs.push(FieldError::invalid(
            p.child("shareProcessNamespace"),
            "true",
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    if sc.sysctls.as_ref().is_some_and(|s| !s.is_empty()) {
        validate_sysctls(spec, &p.child("sysctls"), errs);
    }
    if let Some(policy) = sc.fs_group_change_policy.as_deref()
        && !matches!(policy, "OnRootMismatch" | "Always")
    {
        errs.push(FieldError::not_supported(
            p.child("fsGroupChangePolicy"),
            quote(policy),
            &["Always", "OnRootMismatch"],
        ));
    }
    validate_seccomp_profile_field(
        sc.seccomp_profile.as_ref(),
        &p.child("seccompProfile"),
        errs,
    );
    validate_windows_options(
        sc.windows_options.as_ref(),
        &p.child("windowsOptions"),
        errs,
    );
    validate_apparmor_profile_field(
        sc.app_armor_profile.as_ref(),
        &p.child("appArmorProfile"),
        errs,
    );
    if let Some(policy) = sc.supplemental_groups_policy.as_deref()
        && !matches!(policy, "Merge" | "Strict")
    {
        errs.push(FieldError::not_supported(
            p.child("supplementalGroupsPolicy"),
            quote(policy),
            &["Merge", "Strict"],
        ));
    }
    if let Some(policy) = sc.se_linux_change_policy.as_deref()
        && !matches!(policy, "Recursive" | "MountOption")
    {
        errs.push(FieldError::not_supported(
            p.child("seLinuxChangePolicy"),
            quote(policy),
            &["MountOption", "Recursive"],
        ));
    }
}

/// `validateSysctls` and `ValidateHostSysctl`.
fn validate_sysctls(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    let sysctls = spec
        .security_context
        .as_ref()
        .and_then(|s| s.sysctls.as_deref())
        .unwrap_or(&[]);
    let mut names = BTreeSet::new();
    for (i, s) in sysctls.iter().enumerate() {
        let np = path.index(i).child("name");
        if s.name.is_empty() {
            errs.push(FieldError::required(&np, ""));
        } else if !is_valid_sysctl_name(&s.name) {
            errs.push(FieldError::invalid(
                &np,
                quote(&s.name),
                format!("must have at most 253 characters and match regex {SYSCTL_RE}"),
            ));
        } else if names.contains(s.name.as_str()) {
            errs.push(FieldError::duplicate(&np, quote(&s.name)));
        }
        let ns = sysctl_namespace(&s.name);
        if spec.host_network == Some(true) && ns == Some("Net") {
            errs.push(FieldError::invalid(
                &np,
                quote(&s.name),
                "may not be specified when 'hostNetwork' is true",
            ));
        } else if spec.host_ipc == Some(true) && ns == Some("IPC") {
            errs.push(FieldError::invalid(
                &np,
                quote(&s.name),
                "may not be specified when 'hostIPC' is true",
            ));
        }
        names.insert(s.name.as_str());
    }
}

/// `utilsysctl.GetNamespace`: the kernel namespace of a sysctl (`Net`, `IPC`), if known.
fn sysctl_namespace(name: &str) -> Option<&'static str> {
    let mut n = normalize_sysctl_name(name);
    if let Some(star) = n.find('*') {
        n.truncate(star);
    }
    const IPC: [&str; 10] = [
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
    ];
    if IPC.contains(&n.as_str()) || n.starts_with("fs.mqueue.") {
        Some("IPC")
    } else if n.starts_with("net.") {
        Some("Net")
    } else {
        None
    }
}

/// `ValidateSecurityContext` of a container (`hostUsers`: the pod shares the host's user
/// namespace).
pub(super) fn validate_security_context(
    sc: &SecurityContext,
    path: &FieldPath,
    host_users: bool,
    errs: &mut Errs,
) {
    ids(sc.run_as_user, &path.child("runAsUser"), errs);
    ids(sc.run_as_group, &path.child("runAsGroup"), errs);
    if let Some(pm) = sc.proc_mount.as_deref() {
        if !matches!(pm, "Default" | "Unmasked") {
            errs.push(FieldError::not_supported(
                path.child("procMount"),
                quote(pm),
                &["Default", "Unmasked"],
            ));
        }
        if host_users && pm == "Unmasked" {
            errs.push(FieldError::invalid(
                path.child("procMount"),
                quote(pm),
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    validate_seccomp_profile_field(
        sc.seccomp_profile.as_ref(),
        &path.child("seccompProfile"),
        errs,
    );
    if sc.allow_privilege_escalation == Some(false) {
        if sc.privileged == Some(true) {
            errs.push(FieldError::invalid(
                path,
                json(sc),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let adds = sc
            .capabilities
            .as_ref()
            .and_then(|c| c.add.as_deref())
            .unwrap_or(&[]);
        for cap in adds {
            if cap == "CAP_SYS_ADMIN" {
                errs.push(FieldError::invalid(
                    path,
                    json(sc),
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                ));
            }
        }
    }
    validate_windows_options(
        sc.windows_options.as_ref(),
        &path.child("windowsOptions"),
        errs,
    );
    validate_apparmor_profile_field(
        sc.app_armor_profile.as_ref(),
        &path.child("appArmorProfile"),
        errs,
    );
}

/// `validateSeccompProfileField`.
fn validate_seccomp_profile_field(sp: Option<&SeccompProfile>, path: &FieldPath, errs: &mut Errs) {
    let Some(sp) = sp else {
        return;
    };
    match sp.type_.as_str() {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            path.child("type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            path.child("type"),
            quote(other),
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let lp = path.child("localhostProfile");
    if sp.type_ == "Localhost" {
        match sp.localhost_profile.as_deref() {
            None => errs.push(FieldError::required(
                lp,
                "must be set when seccomp type is Localhost",
            )),
            Some(profile) => validate_local_descending_path(profile, &lp, errs),
        }
    } else if sp.localhost_profile.is_some() {
        errs.push(FieldError::invalid(
            lp,
            json(sp),
            "can only be set when seccomp type is Localhost",
        ));
    }
}

/// `ValidateAppArmorProfileField`.
fn validate_apparmor_profile_field(p: Option<&AppArmorProfile>, path: &FieldPath, errs: &mut Errs) {
    let Some(p) = p else {
        return;
    };
    let lp = path.child("localhostProfile");
    match p.type_.as_str() {
        "Localhost" => match p.localhost_profile.as_deref() {
            None => errs.push(FieldError::required(
                &lp,
                "must be set when AppArmor type is Localhost",
            )),
            Some(profile) => {
                if profile.trim() != profile {
                    errs.push(FieldError::invalid(
                        &lp,
                        quote(profile),
                        "must not be padded with whitespace",
                    ));
                } else if profile.is_empty() {
                    errs.push(FieldError::required(
                        &lp,
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if profile.len() > 4095 {
                    errs.push(FieldError::too_long(&lp, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(profile) = p.localhost_profile.as_deref() {
                errs.push(FieldError::invalid(
                    &lp,
                    quote(profile),
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            path.child("type"),
            quote(other),
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
}

/// `validateWindowsSecurityContextOptions`.
fn validate_windows_options(
    o: Option<&WindowsSecurityContextOptions>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let Some(o) = o else {
        return;
    };
    if let Some(name) = o.gmsa_credential_spec_name.as_deref() {
        for m in dns1123_subdomain(name) {
            errs.push(FieldError::invalid(
                path.child("gmsaCredentialSpecName"),
                quote(name),
                m,
            ));
        }
    }
    if let Some(spec) = o.gmsa_credential_spec.as_deref() {
        let p = path.child("gmsaCredentialSpec");
        if spec.is_empty() {
            errs.push(FieldError::invalid(
                p,
                quote(spec),
                "gmsaCredentialSpec cannot be an empty string",
            ));
        } else if spec.len() > 64 * 1024 {
            errs.push(FieldError::invalid(
                p,
                quote(spec),
                "gmsaCredentialSpec size must be under 64 KiB",
            ));
        }
    }
    if let Some(name) = o.run_as_user_name.as_deref() {
        let p = path.child("runAsUserName");
        for m in run_as_user_name_errors(name) {
            errs.push(FieldError::invalid(&p, quote(name), m));
        }
    }
}

fn run_as_user_name_errors(name: &str) -> Vec<&'static str> {
    if name.is_empty() {
        return vec!["runAsUserName cannot be an empty string"];
    }
    if name.chars().any(|c| c.is_ascii_control()) {
        return vec!["runAsUserName cannot contain control characters"];
    }
    let parts: Vec<&str> = name.split('\\').collect();
    let (domain, user) = match parts.as_slice() {
        [user] => (None, *user),
        [domain, user] => (Some(*domain), *user),
        _ => return vec!["runAsUserName cannot contain more than one backslash"],
    };
    let mut out = Vec::new();
    let domain_len = domain.map_or(0, str::len);
    if domain_len >= 256 {
        out.push("runAsUserName's Domain length must be under 256 characters");
    }
    if let Some(d) = domain
        && !is_netbios_domain(d)
        && !is_dns_domain(d)
    {
        out.push("runAsUserName's Domain doesn't match the NetBios nor the DNS format");
    }
    if user.is_empty() {
        out.push("runAsUserName's User cannot be empty");
    } else if user.len() > 104 {
        out.push("runAsUserName's User length must not be longer than 104 characters");
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        out.push("runAsUserName's User cannot contain only periods or spaces");
    }
    if user.contains([
        '"', '/', '\\', ':', ';', '|', '=', ',', '+', '*', '?', '<', '>', '@', '[', ']',
    ]) {
        out.push(
            "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]",
        );
    }
    out
}

/// `^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`
fn is_netbios_domain(d: &str) -> bool {
    let bad = |c: char| matches!(c, '\\' | '/' | ':' | '*' | '?' | '"' | '<' | '>' | '|');
    let mut chars = d.chars();
    match chars.next() {
        Some(first) if !bad(first) && first != '.' && first != '\n' => {
            let rest: Vec<char> = chars.collect();
            rest.len() <= 14 && rest.iter().all(|c| !bad(*c) && *c != '\n')
        }
        _ => false,
    }
}

/// `^label(\.label)*$` with `label = [a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?`.
fn is_dns_domain(d: &str) -> bool {
    d.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    })
}

/// `validateWindowsHostProcessPod`: all containers or none run as host processes, and those
/// pods use the host network.
pub(super) fn validate_windows_host_process_pod(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    let pod_hp = spec
        .security_context
        .as_ref()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.host_process);
    let (mut containers, mut host_process) = (0, 0);
    visit_containers(spec, path, |c, cpath| {
        containers += 1;
        let c_hp = c
            .security_context
            .as_ref()
            .and_then(|s| s.windows_options.as_ref())
            .and_then(|w| w.host_process);
        if let (Some(pod), Some(own)) = (pod_hp, c_hp)
            && pod != own
        {
            errs.push(FieldError::invalid(
                cpath
                    .child("securityContext")
                    .child("windowsOptions")
                    .child("hostProcess"),
                own.to_string(),
                format!("pod hostProcess value must be identical if both are specified, was {pod}"),
            ));
        }
        if c_hp == Some(true) || (c_hp.is_none() && pod_hp == Some(true)) {
            host_process += 1;
        }
    });
    if host_process > 0 {
        if host_process != containers {
            errs.push(FieldError::invalid(
                path,
                "\"\"",
                "If pod contains any hostProcess containers then all containers must be HostProcess containers",
            ));
        }
        if spec.host_network != Some(true) {
            errs.push(FieldError::invalid(
                path.child("hostNetwork"),
                "false",
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
    }
}

/// `validateOS`, then `validateLinux` or `validateWindows`.
pub(super) fn validate_os(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    let Some(os) = spec.os.as_ref() else {
        return;
    };
    let op = path.child("os");
    if os.name.is_empty() {
        errs.push(FieldError::required(op.child("name"), "cannot be empty"));
        return;
    }
    match os.name.as_str() {
        "linux" => validate_linux(spec, path, errs),
        "windows" => validate_windows(spec, path, errs),
        other => errs.push(FieldError::not_supported(
            op,
            quote(other),
            &["linux", "windows"],
        )),
    }
}

fn validate_linux(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    const WHY: &str = "windows options cannot be set for a linux pod";
    if spec
        .security_context
        .as_ref()
        .is_some_and(|s| s.windows_options.is_some())
    {
        errs.push(FieldError::forbidden(
            path.child("securityContext").child("windowsOptions"),
            WHY,
        ));
    }
    visit_containers(spec, path, |c, cpath| {
        if c.security_context
            .as_ref()
            .is_some_and(|s| s.windows_options.is_some())
        {
            errs.push(FieldError::forbidden(
                cpath.child("securityContext").child("windowsOptions"),
                WHY,
            ));
        }
    });
}

fn validate_windows(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    const WHY: &str = "cannot be set for a windows pod";
    let sp = path.child("securityContext");
    let sc = spec.security_context.clone().unwrap_or_default();
    for (p, set) in [
        (sp.child("appArmorProfile"), sc.app_armor_profile.is_some()),
        (sp.child("seLinuxOptions"), sc.se_linux_options.is_some()),
        (path.child("hostUsers"), spec.host_users.is_some()),
        (path.child("hostPID"), spec.host_pid == Some(true)),
        (path.child("hostIPC"), spec.host_ipc == Some(true)),
        (sp.child("seccompProfile"), sc.seccomp_profile.is_some()),
        (sp.child("fsGroup"), sc.fs_group.is_some()),
        (
            sp.child("fsGroupChangePolicy"),
            sc.fs_group_change_policy.is_some(),
        ),
        (
            sp.child("sysctls"),
            sc.sysctls.as_ref().is_some_and(|s| !s.is_empty()),
        ),
        (
            path.child("shareProcessNamespace"),
            spec.share_process_namespace.is_some(),
        ),
        (sp.child("runAsUser"), sc.run_as_user.is_some()),
        (sp.child("runAsGroup"), sc.run_as_group.is_some()),
        (
            sp.child("supplementalGroups"),
            sc.supplemental_groups.is_some(),
        ),
        (
            sp.child("supplementalGroupsPolicy"),
            sc.supplemental_groups_policy.is_some(),
        ),
        (
            sp.child("seLinuxChangePolicy"),
            sc.se_linux_change_policy.is_some(),
        ),
    ] {
        if set {
            errs.push(FieldError::forbidden(p, WHY));
        }
    }
    visit_containers(spec, path, |c, cpath| {
        let Some(s) = c.security_context.as_ref() else {
            return;
        };
        let p = cpath.child("securityContext");
        for (field, set) in [
            ("appArmorProfile", s.app_armor_profile.is_some()),
            ("seLinuxOptions", s.se_linux_options.is_some()),
            ("seccompProfile", s.seccomp_profile.is_some()),
            ("capabilities", s.capabilities.is_some()),
            (
                "readOnlyRootFilesystem",
                s.read_only_root_filesystem.is_some(),
            ),
            ("privileged", s.privileged.is_some()),
            (
                "allowPrivilegeEscalation",
                s.allow_privilege_escalation.is_some(),
            ),
            ("procMount", s.proc_mount.is_some()),
            ("runAsUser", s.run_as_user.is_some()),
            ("runAsGroup", s.run_as_group.is_some()),
        ] {
            if set {
                errs.push(FieldError::forbidden(p.child(field), WHY));
            }
        }
    });
}

/// `validateSeccompAnnotationsAndFields`: where both a seccomp annotation and the field are
/// set, they must agree.
pub(super) fn validate_seccomp_annotations_and_fields(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if let Some(field) = spec
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref())
        && let Some(annotation) = annotations.get("seccomp.security.alpha.kubernetes.io/pod")
    {
        seccomp_match(
            annotation,
            field,
            &path.child("securityContext").child("seccompProfile"),
            errs,
        );
    }
    visit_containers(spec, path, |c, cpath| {
        let Some(field) = c
            .security_context
            .as_ref()
            .and_then(|s| s.seccomp_profile.as_ref())
        else {
            return;
        };
        if let Some(annotation) = annotations.get(&format!("{SECCOMP_CONTAINER_PREFIX}{}", c.name))
        {
            seccomp_match(
                annotation,
                field,
                &cpath.child("securityContext").child("seccompProfile"),
                errs,
            );
        }
    });
}

/// `validateSeccompAnnotationsAndFieldsMatch`.
fn seccomp_match(annotation: &str, field: &SeccompProfile, path: &FieldPath, errs: &mut Errs) {
    const TYPE: &str = "seccomp type in annotation and field must match";
    match field.type_.as_str() {
        "Unconfined" if annotation != "unconfined" => {
            errs.push(FieldError::forbidden(path.child("type"), TYPE));
        }
        "RuntimeDefault" if !matches!(annotation, "runtime/default" | "docker/default") => {
            errs.push(FieldError::forbidden(path.child("type"), TYPE));
        }
        "Localhost" => match annotation.strip_prefix("localhost/") {
            None => errs.push(FieldError::forbidden(path.child("type"), TYPE)),
            Some(profile) if field.localhost_profile.as_deref() != Some(profile) => {
                errs.push(FieldError::forbidden(
                    path.child("localhostProfile"),
                    "seccomp profile in annotation and field must match",
                ));
            }
            Some(_) => {}
        },
        _ => {}
    }
}

/// `validateAppArmorAnnotationsAndFieldsMatchOnCreate` (not for Windows pods).
pub(super) fn validate_apparmor_annotations_and_fields_match(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if spec.os.as_ref().is_some_and(|o| o.name == "windows") {
        return;
    }
    let pod_profile = spec
        .security_context
        .as_ref()
        .and_then(|s| s.app_armor_profile.as_ref());
    visit_containers(spec, path, |c, cpath| {
        let profile = c
            .security_context
            .as_ref()
            .and_then(|s| s.app_armor_profile.as_ref())
            .or(pod_profile);
        let Some(profile) = profile else {
            return;
        };
        let Some(annotation) = annotations.get(&format!("{APPARMOR_CONTAINER_PREFIX}{}", c.name))
        else {
            return;
        };
        let ap = cpath.child("securityContext").child("appArmorProfile");
        const TYPE: &str = "apparmor type in annotation and field must match";
        match profile.type_.as_str() {
            "Unconfined" if annotation != "unconfined" => {
                errs.push(FieldError::forbidden(ap.child("type"), TYPE));
            }
            "RuntimeDefault" if annotation != "runtime/default" => {
                errs.push(FieldError::forbidden(ap.child("type"), TYPE));
            }
            "Localhost" => match annotation.strip_prefix("localhost/") {
                None => errs.push(FieldError::forbidden(ap.child("type"), TYPE)),
                Some(p) if profile.localhost_profile.as_deref() != Some(p) => {
                    errs.push(FieldError::forbidden(
                        ap.child("localhostProfile"),
                        "apparmor profile in annotation and field must match",
                    ));
                }
                Some(_) => {}
            },
            _ => {}
        }
    });
}

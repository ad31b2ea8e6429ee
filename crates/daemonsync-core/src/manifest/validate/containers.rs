//! Containers: `validateContainers`, `validateInitContainers`, `validateEphemeralContainers`,
//! `validateContainerCommon`, ports and host port conflicts, probes, lifecycle handlers, pull
//! policy, resize policy and restart policy rules.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, ContainerRestartRule, EphemeralContainer, LifecycleHandler, PodSpec,
    Probe,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::names::{dns1123_label, http_header_name, port_name, port_num};
use super::pod::PodContext;
use super::{Errs, FieldPath, invalid_each, json, nonnegative, str_or_empty};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `podshelper.VisitContainersWithPath`: init, regular, then ephemeral containers.
pub(super) fn visit_containers(
    spec: &PodSpec,
    spec_path: &FieldPath,
    mut visit: impl FnMut(&Container, &FieldPath),
) {
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        visit(c, &spec_path.child("initContainers").index(i));
    }
    for (i, c) in spec.containers.iter().enumerate() {
        visit(c, &spec_path.child("containers").index(i));
    }
    for (i, c) in spec.ephemeral_containers.iter().flatten().enumerate() {
        visit(
            &ephemeral_as_container(c),
            &spec_path.child("ephemeralContainers").index(i),
        );
    }
}

/// An ephemeral container's common fields, as upstream reads them through a `Container`.
pub(super) fn ephemeral_as_container(ec: &EphemeralContainer) -> Container {
    Container {
        args: ec.args.clone(),
        command: ec.command.clone(),
        env: ec.env.clone(),
        env_from: ec.env_from.clone(),
        image: ec.image.clone(),
        image_pull_policy: ec.image_pull_policy.clone(),
        lifecycle: ec.lifecycle.clone(),
        liveness_probe: ec.liveness_probe.clone(),
        name: ec.name.clone(),
        ports: ec.ports.clone(),
        readiness_probe: ec.readiness_probe.clone(),
        resize_policy: ec.resize_policy.clone(),
        resources: ec.resources.clone(),
        restart_policy: ec.restart_policy.clone(),
        restart_policy_rules: ec.restart_policy_rules.clone(),
        security_context: ec.security_context.clone(),
        startup_probe: ec.startup_probe.clone(),
        stdin: ec.stdin,
        stdin_once: ec.stdin_once,
        termination_message_path: ec.termination_message_path.clone(),
        termination_message_policy: ec.termination_message_policy.clone(),
        tty: ec.tty,
        volume_devices: ec.volume_devices.clone(),
        volume_mounts: ec.volume_mounts.clone(),
        working_dir: ec.working_dir.clone(),
    }
}

/// `validateContainers`: the regular containers.
pub(super) fn validate_containers(ctx: &PodContext<'_>, path: &FieldPath, errs: &mut Errs) {
    let containers = &ctx.spec.containers;
    if containers.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        validate_container_common(c, ctx, &p, errs);
        if !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), quote(&c.name)));
        }
        if let Some(l) = c.lifecycle.as_ref() {
            validate_lifecycle(l, ctx, &p.child("lifecycle"), errs);
        }
        validate_probes(c, ctx.grace_period, &p, errs);
        if ctx.gates.container_restart_rules() {
            validate_container_restart_policy(
                c.restart_policy.as_deref(),
                c.restart_policy_rules.as_deref().unwrap_or(&[]),
                &p,
                errs,
            );
        } else if c.restart_policy.is_some() {
            errs.push(
                FieldError::forbidden(
                    p.child("restartPolicy"),
                    "may not be set for non-init containers",
                )
                .with_version_note(ctx.gates.refused_before("ContainerRestartRules", 35)),
            );
        }
    }
    check_host_port_conflicts(containers, path, errs);
}

/// `validateInitContainers`.
pub(super) fn validate_init_containers(ctx: &PodContext<'_>, path: &FieldPath, errs: &mut Errs) {
    let mut names: BTreeSet<&str> = ctx
        .spec
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    for (i, c) in ctx.spec.init_containers.iter().flatten().enumerate() {
        let p = path.index(i);
        validate_container_common(c, ctx, &p, errs);
        validate_init_container_restart_policy(c, ctx.gates, &p, errs);
        let restart_always = c.restart_policy.as_deref() == Some("Always");
        if names.contains(c.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), quote(&c.name)));
        } else if !c.name.is_empty() {
            names.insert(c.name.as_str());
        }
        // Init containers run one by one: only ports within one container can conflict, and
        // upstream reports them at index 0 of the list.
        check_host_port_conflicts(std::slice::from_ref(c), path, errs);
        if restart_always {
            if let Some(l) = c.lifecycle.as_ref() {
                validate_lifecycle(l, ctx, &p.child("lifecycle"), errs);
            }
            validate_probes(c, ctx.grace_period, &p, errs);
        } else {
            const WHY: &str = "may not be set for init containers without restartPolicy=Always";
            for (name, set) in [
                ("lifecycle", c.lifecycle.is_some()),
                ("livenessProbe", c.liveness_probe.is_some()),
                ("readinessProbe", c.readiness_probe.is_some()),
                ("startupProbe", c.startup_probe.is_some()),
            ] {
                if set {
                    errs.push(FieldError::forbidden(p.child(name), WHY));
                }
            }
        }
        if !super::ALLOW_SIDECAR_RESIZE_POLICY
            && c.resize_policy.as_ref().is_some_and(|r| !r.is_empty())
        {
            errs.push(FieldError::invalid(
                p.child("resizePolicy"),
                json(&c.resize_policy),
                "must not be set for init containers",
            ));
        }
    }
}

/// `validateEphemeralContainers` (a template may not have any; they are still validated).
pub(super) fn validate_ephemeral_containers(
    ctx: &PodContext<'_>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let ephemeral = ctx.spec.ephemeral_containers.as_deref().unwrap_or(&[]);
    if ephemeral.is_empty() {
        return;
    }
    let spec = ctx.spec;
    let others: BTreeSet<&str> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .map(|c| c.name.as_str())
        .collect();
    let mut all = others.clone();
    for (i, ec) in ephemeral.iter().enumerate() {
        let p = path.index(i);
        let c = ephemeral_as_container(ec);
        validate_container_common(&c, ctx, &p, errs);
        let image = c.image.as_deref().unwrap_or("");
        if image.len() != image.trim().len() {
            errs.push(FieldError::invalid(
                p.child("image"),
                quote(image),
                "must not have leading or trailing whitespace",
            ));
        }
        if !all.insert(ec.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), quote(&ec.name)));
        }
        if let Some(target) = ec
            .target_container_name
            .as_deref()
            .filter(|t| !t.is_empty())
            && !others.contains(target)
        {
            errs.push(FieldError::not_found(
                p.child("targetContainerName"),
                quote(target),
            ));
        }
        const WHY: &str = "cannot be set for an Ephemeral Container";
        let resources_set = c
            .resources
            .as_ref()
            .is_some_and(|r| r.limits.is_some() || r.requests.is_some() || r.claims.is_some());
        for (name, set) in [
            ("ports", c.ports.is_some()),
            ("resources", resources_set),
            ("resizePolicy", c.resize_policy.is_some()),
            ("restartPolicy", c.restart_policy.is_some()),
            ("restartPolicyRules", c.restart_policy_rules.is_some()),
            ("livenessProbe", c.liveness_probe.is_some()),
            ("readinessProbe", c.readiness_probe.is_some()),
            ("startupProbe", c.startup_probe.is_some()),
            ("lifecycle", c.lifecycle.is_some()),
        ] {
            if set {
                errs.push(FieldError::forbidden(p.child(name), WHY));
            }
        }
        for (j, m) in ec.volume_mounts.iter().flatten().enumerate() {
            let mp = p.child("volumeMounts").index(j);
            if m.sub_path.as_deref().is_some_and(|s| !s.is_empty()) {
                errs.push(FieldError::forbidden(mp.child("subPath"), WHY));
            }
            if m.sub_path_expr.as_deref().is_some_and(|s| !s.is_empty()) {
                errs.push(FieldError::forbidden(mp.child("subPathExpr"), WHY));
            }
        }
    }
}

/// `validateContainerCommon`: what every kind of container must satisfy.
fn validate_container_common(
    c: &Container,
    ctx: &PodContext<'_>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if c.name.is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    } else {
        invalid_each(errs, &path.child("name"), &c.name, dns1123_label(&c.name));
    }
    if c.image.as_deref().unwrap_or("").is_empty() {
        errs.push(FieldError::required(path.child("image"), ""));
    }
    match str_or_empty(&c.termination_message_policy) {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(FieldError::required(
            path.child("terminationMessagePolicy"),
            "",
        )),
        other => errs.push(FieldError::not_supported(
            path.child("terminationMessagePolicy"),
            quote(other),
            &["File", "FallbackToLogsOnError"],
        )),
    }
    validate_container_ports(
        c.ports.as_deref().unwrap_or(&[]),
        &path.child("ports"),
        errs,
    );
    super::env::validate_env(
        c.env.as_deref().unwrap_or(&[]),
        &path.child("env"),
        ctx.gates,
        errs,
    );
    super::env::validate_env_from(
        c.env_from.as_deref().unwrap_or(&[]),
        &path.child("envFrom"),
        ctx.gates,
        errs,
    );
    super::volumes::validate_volume_mounts(c, &ctx.volumes, &path.child("volumeMounts"), errs);
    super::volumes::validate_volume_devices(c, &ctx.volumes, &path.child("volumeDevices"), errs);
    validate_pull_policy(
        str_or_empty(&c.image_pull_policy),
        &path.child("imagePullPolicy"),
        errs,
    );
    super::resources::validate_container_resource_requirements(
        c.resources.as_ref(),
        &ctx.claim_names,
        &path.child("resources"),
        errs,
    );
    validate_resize_policy(
        c,
        str_or_empty(&ctx.spec.restart_policy),
        &path.child("resizePolicy"),
        errs,
    );
    if let Some(sc) = c.security_context.as_ref() {
        super::security::validate_security_context(
            sc,
            &path.child("securityContext"),
            ctx.host_users,
            errs,
        );
    }
}

/// `validateContainerPorts`.
fn validate_container_ports(ports: &[ContainerPort], path: &FieldPath, errs: &mut Errs) {
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
            let msgs = port_name(name);
            if !msgs.is_empty() {
                invalid_each(errs, &p.child("name"), name, msgs);
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(p.child("name"), quote(name)));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(p.child("containerPort"), ""));
        } else {
            for m in port_num(i64::from(port.container_port)) {
                errs.push(FieldError::invalid(
                    p.child("containerPort"),
                    port.container_port.to_string(),
                    m,
                ));
            }
        }
        let host_port = port.host_port.unwrap_or(0);
        if host_port != 0 {
            for m in port_num(i64::from(host_port)) {
                errs.push(FieldError::invalid(
                    p.child("hostPort"),
                    host_port.to_string(),
                    m,
                ));
            }
        }
        match port.protocol.as_deref().unwrap_or("") {
            "TCP" | "UDP" | "SCTP" => {}
            "" => errs.push(FieldError::required(p.child("protocol"), "")),
            other => errs.push(FieldError::not_supported(
                p.child("protocol"),
                quote(other),
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
}

/// `checkHostPortConflicts` / `AccumulateUniqueHostPorts`: `protocol/hostIP/hostPort` must be
/// unique across the given containers.
fn check_host_port_conflicts(containers: &[Container], path: &FieldPath, errs: &mut Errs) {
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, p) in c.ports.iter().flatten().enumerate() {
            let host_port = p.host_port.unwrap_or(0);
            if host_port == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{}",
                p.protocol.as_deref().unwrap_or(""),
                p.host_ip.as_deref().unwrap_or(""),
                host_port
            );
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(
                    path.index(ci).child("ports").index(pi).child("hostPort"),
                    quote(&key),
                ));
            } else {
                seen.insert(key);
            }
        }
    }
}

/// `validatePullPolicy`.
pub(super) fn validate_pull_policy(policy: &str, path: &FieldPath, errs: &mut Errs) {
    match policy {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(FieldError::required(path, "")),
        other => errs.push(FieldError::not_supported(
            path,
            quote(other),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
}

/// `validateResizePolicy`.
fn validate_resize_policy(c: &Container, pod_restart: &str, path: &FieldPath, errs: &mut Errs) {
    let mut seen = BTreeSet::new();
    for (i, p) in c.resize_policy.iter().flatten().enumerate() {
        if !seen.insert(p.resource_name.as_str()) {
            errs.push(FieldError::duplicate(
                path.index(i),
                quote(&p.resource_name),
            ));
        }
        match p.resource_name.as_str() {
            "cpu" | "memory" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(
                path,
                quote(other),
                &["cpu", "memory"],
            )),
        }
        match p.restart_policy.as_str() {
            "NotRequired" | "RestartContainer" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(
                path,
                quote(other),
                &["NotRequired", "RestartContainer"],
            )),
        }
        if pod_restart == "Never" && p.restart_policy != "NotRequired" {
            errs.push(FieldError::invalid(
                path,
                quote(&p.restart_policy),
                "must be 'NotRequired' when pod `restartPolicy` is 'Never'",
            ));
        }
    }
}

/// `validateInitContainerRestartPolicy` with `ContainerRestartRules` on and
/// `RestartAllContainersOnContainerExits` off: a sidecar (`Always`) may not have rules, other
/// policies are validated as for regular containers.
///
/// Without `ContainerRestartRules` (before v1.35), `Always` is the only policy.
fn validate_init_container_restart_policy(
    c: &Container,
    gates: &super::Gates,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let rules = c.restart_policy_rules.as_deref().unwrap_or(&[]);
    if !gates.container_restart_rules() {
        if let Some(policy) = c.restart_policy.as_deref().filter(|p| *p != "Always") {
            errs.push(
                FieldError::not_supported(path.child("restartPolicy"), quote(policy), &["Always"])
                    .with_version_note(gates.refused_before("ContainerRestartRules", 35)),
            );
        }
        return;
    }
    match c.restart_policy.as_deref() {
        None => {
            if !rules.is_empty() {
                errs.push(FieldError::required(
                    path.child("restartPolicy"),
                    "must specify restartPolicy when restart rules are used",
                ));
            }
        }
        Some("Always") => {
            if !rules.is_empty() {
                errs.push(FieldError::forbidden(
                    path.child("restartPolicyRules"),
                    "restartPolicyRules are not allowed for init containers with restart policy Always",
                ));
            }
        }
        Some(policy) => validate_container_restart_policy(Some(policy), rules, path, errs),
    }
}

/// `validateContainerRestartPolicy`: `restartPolicy` and `restartPolicyRules` of a container.
fn validate_container_restart_policy(
    policy: Option<&str>,
    rules: &[ContainerRestartRule],
    path: &FieldPath,
    errs: &mut Errs,
) {
    let policy_path = path.child("restartPolicy");
    match policy {
        None if rules.is_empty() => return,
        None => errs.push(FieldError::required(
            &policy_path,
            "must specify restartPolicy when restart rules are used",
        )),
        Some("Always" | "Never" | "OnFailure") => {}
        Some(other) => errs.push(FieldError::not_supported(
            &policy_path,
            quote(other),
            &["Always", "Never", "OnFailure"],
        )),
    }
    let rules_path = path.child("restartPolicyRules");
    if rules.len() > 20 {
        errs.push(FieldError::too_many(&rules_path, rules.len(), 20));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = rules_path.index(i);
        if rule.action != "Restart" {
            errs.push(FieldError::not_supported(
                rp.child("action"),
                quote(&rule.action),
                &["Restart"],
            ));
        }
        match rule.exit_codes.as_ref() {
            None => errs.push(FieldError::required(
                rp.child("exitCodes"),
                "must be specified",
            )),
            Some(codes) => {
                let cp = rp.child("exitCodes");
                if !matches!(codes.operator.as_str(), "In" | "NotIn") {
                    errs.push(FieldError::not_supported(
                        cp.child("operator"),
                        quote(&codes.operator),
                        &["In", "NotIn"],
                    ));
                }
                let n = codes.values.as_ref().map_or(0, Vec::len);
                if n > 255 {
                    errs.push(FieldError::too_many(cp.child("values"), n, 255));
                }
            }
        }
    }
}

/// The three probes of a container: `validateLivenessProbe`, `validateReadinessProbe`,
/// `validateStartupProbe`.
fn validate_probes(c: &Container, grace: Option<i64>, path: &FieldPath, errs: &mut Errs) {
    if let Some(probe) = c.liveness_probe.as_ref() {
        let p = path.child("livenessProbe");
        validate_probe(probe, grace, &p, errs);
        success_threshold_is_one(probe, &p, errs);
    }
    if let Some(probe) = c.readiness_probe.as_ref() {
        let p = path.child("readinessProbe");
        validate_probe(probe, grace, &p, errs);
        if let Some(t) = probe.termination_grace_period_seconds {
            errs.push(FieldError::invalid(
                p.child("terminationGracePeriodSeconds"),
                t.to_string(),
                "must not be set for readinessProbes",
            ));
        }
    }
    if let Some(probe) = c.startup_probe.as_ref() {
        let p = path.child("startupProbe");
        validate_probe(probe, grace, &p, errs);
        success_threshold_is_one(probe, &p, errs);
    }
}

fn success_threshold_is_one(probe: &Probe, path: &FieldPath, errs: &mut Errs) {
    let t = probe.success_threshold.unwrap_or(0);
    if t != 1 {
        errs.push(FieldError::invalid(
            path.child("successThreshold"),
            t.to_string(),
            "must be 1",
        ));
    }
}

/// `validateProbe`.
fn validate_probe(probe: &Probe, grace: Option<i64>, path: &FieldPath, errs: &mut Errs) {
    let handler = Handler {
        exec: probe
            .exec
            .as_ref()
            .map(|e| e.command.as_deref().unwrap_or(&[])),
        http_get: probe.http_get.as_ref(),
        tcp_socket: probe.tcp_socket.as_ref().map(|t| &t.port),
        grpc: probe.grpc.as_ref().map(|g| g.port),
        sleep: None,
        sleep_zero: None,
    };
    validate_handler(&handler, grace, path, errs);
    for (name, v) in [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ] {
        nonnegative(i64::from(v.unwrap_or(0)), &path.child(name), errs);
    }
    if let Some(t) = probe.termination_grace_period_seconds
        && t <= 0
    {
        errs.push(FieldError::invalid(
            path.child("terminationGracePeriodSeconds"),
            t.to_string(),
            "must be greater than 0",
        ));
    }
}

/// Upstream's `commonHandler`: the actions a probe or a lifecycle hook may name.
struct Handler<'a> {
    exec: Option<&'a [String]>,
    http_get: Option<&'a k8s_openapi::api::core::v1::HTTPGetAction>,
    tcp_socket: Option<&'a IntOrString>,
    grpc: Option<i32>,
    sleep: Option<i64>,
    /// Lifecycle hooks: the gates that say whether `sleep.seconds: 0` is allowed.
    sleep_zero: Option<&'a super::Gates>,
}

/// `validateLifecycle`. `stopSignal` needs the `ContainerStopSignals` gate, off in v1.35: the
/// API server drops it (see the defaulting), so it is not validated here.
fn validate_lifecycle(
    l: &k8s_openapi::api::core::v1::Lifecycle,
    ctx: &PodContext<'_>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let from_hook = |h: &'static str, hook: &Option<LifecycleHandler>| {
        hook.as_ref().map(|hook| (h, hook.clone()))
    };
    for (name, hook) in [
        from_hook("postStart", &l.post_start),
        from_hook("preStop", &l.pre_stop),
    ]
    .into_iter()
    .flatten()
    {
        let handler = Handler {
            exec: hook
                .exec
                .as_ref()
                .map(|e| e.command.as_deref().unwrap_or(&[])),
            http_get: hook.http_get.as_ref(),
            tcp_socket: hook.tcp_socket.as_ref().map(|t| &t.port),
            grpc: None,
            sleep: hook.sleep.as_ref().map(|s| s.seconds),
            sleep_zero: Some(ctx.gates),
        };
        validate_handler(&handler, ctx.grace_period, &path.child(name), errs);
    }
}

/// `validateHandler`: exactly one action, each valid.
fn validate_handler(h: &Handler<'_>, grace: Option<i64>, path: &FieldPath, errs: &mut Errs) {
    let mut count = 0;
    let mut one = |name: &str, errs: &mut Errs| -> bool {
        if count > 0 {
            errs.push(FieldError::forbidden(
                path.child(name),
                "may not specify more than 1 handler type",
            ));
            false
        } else {
            count += 1;
            true
        }
    };
    if let Some(command) = h.exec
        && one("exec", errs)
        && command.is_empty()
    {
        errs.push(FieldError::required(
            path.child("exec").child("command"),
            "",
        ));
    }
    if let Some(g) = h.http_get
        && one("httpGet", errs)
    {
        let gp = path.child("httpGet");
        if g.path.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(gp.child("path"), ""));
        }
        validate_port_num_or_name(&g.port, &gp.child("port"), errs);
        let scheme = g.scheme.as_deref().unwrap_or("");
        if !matches!(scheme, "HTTP" | "HTTPS") {
            errs.push(FieldError::not_supported(
                gp.child("scheme"),
                quote(scheme),
                &["HTTP", "HTTPS"],
            ));
        }
        for header in g.http_headers.iter().flatten() {
            invalid_each(
                errs,
                &gp.child("httpHeaders"),
                &header.name,
                http_header_name(&header.name),
            );
        }
    }
    if let Some(port) = h.tcp_socket
        && one("tcpSocket", errs)
    {
        validate_port_num_or_name(port, &path.child("tcpSocket").child("port"), errs);
    }
    if let Some(port) = h.grpc
        && one("grpc", errs)
    {
        validate_port_num_or_name(
            &IntOrString::Int(port),
            &path.child("grpc").child("port"),
            errs,
        );
    }
    let zero_allowed = h.sleep_zero.is_none_or(|g| g.sleep_action_allow_zero());
    if let Some(seconds) = h.sleep
        && one("sleep", errs)
        && let Some(grace) = grace
    {
        if zero_allowed && (seconds < 0 || seconds > grace) {
            errs.push(FieldError::invalid(
                path.child("sleep"),
                seconds.to_string(),
                format!(
                    "must be non-negative and less than terminationGracePeriodSeconds ({grace})"
                ),
            ));
        } else if !zero_allowed
            && (seconds <= 0 || seconds > grace)
            && let Some(gates) = h.sleep_zero
        {
            // Before `PodLifecycleSleepActionAllowZero` (v1.33), zero is refused too.
            errs.push(
                FieldError::invalid(
                    path.child("sleep"),
                    seconds.to_string(),
                    format!(
                        "must be greater than 0 and less than terminationGracePeriodSeconds ({grace})"
                    ),
                )
                .with_version_note(gates.refused_before("PodLifecycleSleepActionAllowZero", 33)),
            );
        }
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
}

/// `ValidatePortNumOrName`.
fn validate_port_num_or_name(port: &IntOrString, path: &FieldPath, errs: &mut Errs) {
    match port {
        IntOrString::Int(n) => {
            for m in port_num(i64::from(*n)) {
                errs.push(FieldError::invalid(path, n.to_string(), m));
            }
        }
        IntOrString::String(s) => invalid_each(errs, path, s, port_name(s)),
    }
}

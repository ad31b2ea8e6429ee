//! Tests of the Pod Security Admission checks: each check's exact wording at each level, the
//! order of several violations, version gating, namespace labels, and the shared corpus.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::*;

const BASELINE: Policy = Policy {
    level: Level::Baseline,
    version: Version::LATEST,
};
const RESTRICTED: Policy = Policy {
    level: Level::Restricted,
    version: Version::LATEST,
};

fn at(level: Level, minor: u64) -> Policy {
    Policy {
        level,
        version: Version::v1(minor),
    }
}

fn spec(value: Value) -> PodSpec {
    serde_json::from_value(value).expect("test pod spec")
}

fn annotated(pairs: &[(&str, &str)]) -> ObjectMeta {
    let annotations = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ObjectMeta {
        annotations: Some(annotations),
        ..ObjectMeta::default()
    }
}

/// The 403 for pod "p", or `None` when the pod is admitted.
fn refusal(policy: Policy, meta: &ObjectMeta, spec: &PodSpec) -> Option<String> {
    let found = check(&policy, meta, spec);
    (!found.is_empty()).then(|| forbidden_message("p", &policy, &found))
}

/// The violations as they read in the message: `reason (detail)`.
fn items(policy: Policy, spec: &PodSpec) -> Vec<String> {
    items_with(policy, &ObjectMeta::default(), spec)
}

fn items_with(policy: Policy, meta: &ObjectMeta, spec: &PodSpec) -> Vec<String> {
    check(&policy, meta, spec)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// A container that passes restricted at every version.
fn hardened(name: &str) -> Value {
    json!({
        "name": name,
        "image": "i",
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": true,
            "seccompProfile": {"type": "RuntimeDefault"}
        }
    })
}

/// `hardened(name)` with `extra` merged into its securityContext.
fn hardened_with(name: &str, extra: Value) -> Value {
    let mut c = hardened(name);
    if let (Some(sc), Some(extra)) = (c["securityContext"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            sc.insert(k.clone(), v.clone());
        }
    }
    c
}

/// A pod of hardened containers `names`, with `extra` merged into the pod spec.
fn hardened_pod(names: &[&str], extra: Value) -> PodSpec {
    let containers: Vec<Value> = names.iter().map(|n| hardened(n)).collect();
    let mut pod = json!({ "containers": containers });
    if let (Some(p), Some(extra)) = (pod.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            p.insert(k.clone(), v.clone());
        }
    }
    spec(pod)
}

// --- The message and its order -----------------------------------------------------------------

#[test]
fn a_privileged_host_network_pod_reads_host_namespaces_first() {
    let pod = spec(json!({
        "hostNetwork": true,
        "containers": [{"name": "c", "securityContext": {"privileged": true}}]
    }));
    assert_eq!(
        refusal(BASELINE, &ObjectMeta::default(), &pod).as_deref(),
        Some(
            r#"pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), privileged (container "c" must not set securityContext.privileged=true)"#
        )
    );
}

#[test]
fn restricted_lists_baseline_checks_first_each_group_sorted_by_check_id() {
    let pod = spec(json!({
        "hostPID": true,
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
        "containers": [{
            "name": "agent",
            "ports": [{"containerPort": 9100, "hostPort": 9100}],
            "securityContext": {"privileged": true, "runAsUser": 0}
        }]
    }));
    assert_eq!(
        refusal(RESTRICTED, &ObjectMeta::default(), &pod).as_deref(),
        Some(concat!(
            r#"pods "p" is forbidden: violates PodSecurity "restricted:latest": "#,
            r#"host namespaces (hostPID=true), "#,
            r#"hostPort (container "agent" uses hostPort 9100), "#,
            r#"privileged (container "agent" must not set securityContext.privileged=true), "#,
            r#"allowPrivilegeEscalation != false (container "agent" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "agent" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"restricted volume types (volume "root" uses restricted volume type "hostPath"), "#,
            r#"runAsNonRoot != true (pod or container "agent" must set securityContext.runAsNonRoot=true), "#,
            r#"runAsUser=0 (container "agent" must not set runAsUser=0), "#,
            r#"seccompProfile (pod or container "agent" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        ))
    );
}

#[test]
fn the_check_table_is_in_upstream_order() {
    let rank = |l: Level| if l == Level::Baseline { 0 } else { 1 };
    let order: Vec<(u8, &str)> = CHECKS.iter().map(|c| (rank(c.level), c.id)).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert_eq!(CHECKS.len(), 19);
}

#[test]
fn privileged_level_allows_everything() {
    let pod = spec(json!({
        "hostNetwork": true, "hostPID": true, "hostIPC": true,
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
        "containers": [{"name": "c", "securityContext": {
            "privileged": true, "runAsUser": 0, "procMount": "Unmasked",
            "capabilities": {"add": ["SYS_ADMIN"]}
        }}]
    }));
    for version in [Version::LATEST, Version::v1(0), Version::v1(99)] {
        let policy = Policy {
            level: Level::Privileged,
            version,
        };
        assert!(check(&policy, &ObjectMeta::default(), &pod).is_empty());
    }
    assert_eq!(items(BASELINE, &pod).len(), 6);
}

#[test]
fn a_generate_name_pod_is_named_by_its_generated_name() {
    // The registry names the pod before validating admission runs, so the message carries
    // `<generateName><5 characters>`; the checks themselves do not look at the name.
    let meta = ObjectMeta {
        generate_name: Some("node-agent-".into()),
        ..ObjectMeta::default()
    };
    let pod = spec(json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]}));
    let found = check(&BASELINE, &meta, &pod);
    assert_eq!(
        forbidden_message("node-agent-x7k2q", &BASELINE, &found),
        r#"pods "node-agent-x7k2q" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#
    );
    // Without any name, upstream's nameless form.
    assert_eq!(
        forbidden_message("", &BASELINE, &found),
        r#"pods is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#
    );
}

#[test]
fn the_policy_in_the_message_is_the_labels_version_not_the_newest_known() {
    let pod = spec(json!({"hostIPC": true, "containers": [{"name": "c"}]}));
    let policy = at(Level::Baseline, 99);
    assert_eq!(
        refusal(policy, &ObjectMeta::default(), &pod).as_deref(),
        Some(
            r#"pods "p" is forbidden: violates PodSecurity "baseline:v1.99": host namespaces (hostIPC=true)"#
        )
    );
}

// --- Baseline checks -------------------------------------------------------------------------

#[test]
fn privileged_names_init_regular_and_ephemeral_containers_in_that_order() {
    let on = json!({"privileged": true});
    let pod = spec(json!({
        "initContainers": [{"name": "init", "securityContext": on}],
        "containers": [{"name": "app", "securityContext": on}, {"name": "ok"}],
        "ephemeralContainers": [{"name": "debug", "securityContext": on}]
    }));
    assert_eq!(
        items(BASELINE, &pod),
        [
            r#"privileged (containers "init", "app", "debug" must not set securityContext.privileged=true)"#
        ]
    );
    assert_eq!(
        items(RESTRICTED, &pod).first(),
        items(BASELINE, &pod).first()
    );
}

#[test]
fn host_namespaces_lists_each_shared_namespace() {
    let pod = spec(json!({
        "hostNetwork": true, "hostPID": true, "hostIPC": true,
        "containers": [{"name": "c"}]
    }));
    assert_eq!(
        items(BASELINE, &pod),
        ["host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"]
    );
    let off = spec(json!({"hostNetwork": false, "containers": [{"name": "c"}]}));
    assert!(items(BASELINE, &off).is_empty());
}

#[test]
fn host_path_volumes_at_baseline_become_restricted_volume_types_at_restricted() {
    let pod = hardened_pod(
        &["c"],
        json!({"volumes": [
            {"name": "proc", "hostPath": {"path": "/proc"}},
            {"name": "cfg", "configMap": {"name": "x"}},
            {"name": "sys", "hostPath": {"path": "/sys"}},
            {"name": "share", "nfs": {"server": "s", "path": "/"}}
        ]}),
    );
    assert_eq!(
        items(BASELINE, &pod),
        [r#"hostPath volumes (volumes "proc", "sys")"#]
    );
    assert_eq!(
        items(RESTRICTED, &pod),
        [
            r#"restricted volume types (volumes "proc", "sys", "share" use restricted volume types "hostPath", "nfs")"#
        ]
    );
}

#[test]
fn host_ports_are_listed_sorted_as_text() {
    let pod = spec(json!({"containers": [
        {"name": "a", "ports": [{"containerPort": 9100, "hostPort": 9100}]},
        {"name": "b", "ports": [{"containerPort": 80}, {"containerPort": 10250, "hostPort": 10250}]}
    ]}));
    assert_eq!(
        items(BASELINE, &pod),
        [r#"hostPort (containers "a", "b" use hostPorts 10250, 9100)"#]
    );
}

#[test]
fn a_template_under_host_network_gets_its_container_ports_as_host_ports() {
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "spec": {
            "hostNetwork": true,
            "containers": [{"name": "exporter", "ports": [{"containerPort": 9100}]}]
        }
    }))
    .expect("template");
    let found: Vec<String> = check_template(&BASELINE, &template)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        found,
        [
            "host namespaces (hostNetwork=true)",
            r#"hostPort (container "exporter" uses hostPort 9100)"#
        ]
    );
    // The template as stored has no host port: `check` judges what it is given.
    let stored = template.spec.clone().unwrap_or_default();
    assert_eq!(items(BASELINE, &stored).len(), 1);
}

#[test]
fn a_template_volume_without_a_source_is_an_empty_dir_by_admission() {
    let mut pod = hardened_pod(&["c"], json!({}));
    pod.volumes = serde_json::from_value(json!([{"name": "scratch"}])).expect("volumes");
    assert_eq!(
        items(RESTRICTED, &pod),
        [r#"restricted volume types (volume "scratch" uses restricted volume type "unknown")"#]
    );
    let template = PodTemplateSpec {
        metadata: None,
        spec: Some(pod),
    };
    assert!(check_template(&RESTRICTED, &template).is_empty());
}

#[test]
fn baseline_capabilities_allow_the_runtime_default_set_only() {
    let pod = spec(json!({"containers": [
        {"name": "a", "securityContext": {"capabilities": {"add": ["CHOWN", "SYS_ADMIN", "NET_ADMIN"]}}},
        {"name": "b", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "KILL"]}}},
        {"name": "c", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}
    ]}));
    assert_eq!(
        items(BASELINE, &pod),
        [
            r#"non-default capabilities (containers "a", "c" must not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add)"#
        ]
    );
}

#[test]
fn app_armor_fields_and_beta_annotations() {
    let pod = spec(json!({
        "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
        "containers": [
            {"name": "a", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "x"}}},
            {"name": "b", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}
        ]
    }));
    let meta = annotated(&[
        (
            "container.apparmor.security.beta.kubernetes.io/b",
            "unconfined",
        ),
        (
            "container.apparmor.security.beta.kubernetes.io/a",
            "localhost/mine",
        ),
    ]);
    assert_eq!(
        items_with(BASELINE, &meta, &pod),
        [
            r#"forbidden AppArmor profiles (pod and container "b" and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/b="unconfined"")"#
        ]
    );
    let only_pod = spec(json!({
        "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
        "containers": [{"name": "a"}]
    }));
    assert_eq!(
        items(BASELINE, &only_pod),
        [r#"forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined")"#]
    );
}

#[test]
fn se_linux_options_types_user_and_role() {
    let pod = spec(json!({
        "securityContext": {"seLinuxOptions": {"type": "spc_t"}},
        "containers": [
            {"name": "a", "securityContext": {"seLinuxOptions": {"user": "system_u", "role": "r"}}},
            {"name": "b", "securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0"}}}
        ]
    }));
    assert_eq!(
        items(BASELINE, &pod),
        [
            r#"seLinuxOptions (pod and container "a" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; role may not be set)"#
        ]
    );
}

#[test]
fn se_linux_container_engine_t_is_allowed_from_v1_31() {
    let pod = spec(json!({"containers": [
        {"name": "a", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}
    ]}));
    assert!(items(BASELINE, &pod).is_empty());
    assert!(items(at(Level::Baseline, 31), &pod).is_empty());
    assert_eq!(
        items(at(Level::Baseline, 30), &pod),
        [
            r#"seLinuxOptions (container "a" set forbidden securityContext.seLinuxOptions: type "container_engine_t")"#
        ]
    );
}

#[test]
fn proc_mount_and_user_namespaces() {
    let unmasked = json!({"procMount": "Unmasked"});
    let pod = spec(json!({"containers": [
        {"name": "a", "securityContext": unmasked},
        {"name": "b", "securityContext": {"procMount": "Default"}}
    ]}));
    let expected =
        [r#"procMount (container "a" must not set securityContext.procMount to "Unmasked")"#];
    assert_eq!(items(BASELINE, &pod), expected);
    // In a user namespace, baseline allows it from v1.35 on; restricted never does.
    let userns = hardened_pod(&[], json!({"hostUsers": false}));
    let mut userns = userns;
    userns.containers = vec![serde_json::from_value(hardened_with("a", unmasked)).unwrap()];
    assert!(items(BASELINE, &userns).is_empty());
    assert_eq!(items(at(Level::Baseline, 34), &userns), expected);
    assert_eq!(items(RESTRICTED, &userns), expected);
    assert_eq!(items(at(Level::Restricted, 34), &userns), expected);
}

#[test]
fn baseline_seccomp_forbids_unconfined_but_not_unset() {
    let pod = spec(json!({
        "securityContext": {"seccompProfile": {"type": "Unconfined"}},
        "containers": [
            {"name": "a", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            {"name": "b"}
        ]
    }));
    assert_eq!(
        items(BASELINE, &pod),
        [
            r#"seccompProfile (pod and container "a" must not set securityContext.seccompProfile.type to "Unconfined")"#
        ]
    );
    assert!(items(BASELINE, &spec(json!({"containers": [{"name": "b"}]}))).is_empty());
}

#[test]
fn seccomp_annotations_count_before_v1_19_only() {
    let meta = annotated(&[
        ("seccomp.security.alpha.kubernetes.io/pod", "unconfined"),
        (
            "container.seccomp.security.alpha.kubernetes.io/a",
            "docker/default",
        ),
        ("container.seccomp.security.alpha.kubernetes.io/b", ""),
    ]);
    let pod = spec(json!({"containers": [{"name": "a"}, {"name": "b"}]}));
    assert_eq!(
        items_with(at(Level::Baseline, 18), &meta, &pod),
        [
            r#"seccompProfile (forbidden annotations container.seccomp.security.alpha.kubernetes.io/b="", seccomp.security.alpha.kubernetes.io/pod="unconfined")"#
        ]
    );
    assert!(items_with(at(Level::Baseline, 19), &meta, &pod).is_empty());
}

#[test]
fn sysctls_follow_the_safe_list_of_the_policy_version() {
    let pod = spec(json!({
        "securityContext": {"sysctls": [
            {"name": "net.ipv4.tcp_rmem", "value": "1"},
            {"name": "kernel.msgmax", "value": "1"},
            {"name": "net.ipv4.tcp_notsent_lowat", "value": "1"},
            {"name": "net.ipv4.ip_local_port_range", "value": "1 2"}
        ]},
        "containers": [{"name": "a"}]
    }));
    assert_eq!(items(BASELINE, &pod), ["forbidden sysctls (kernel.msgmax)"]);
    assert_eq!(
        items(at(Level::Baseline, 36), &pod),
        ["forbidden sysctls (kernel.msgmax, net.ipv4.tcp_notsent_lowat)"]
    );
    assert_eq!(
        items(at(Level::Baseline, 31), &pod),
        ["forbidden sysctls (net.ipv4.tcp_rmem, kernel.msgmax, net.ipv4.tcp_notsent_lowat)"]
    );
}

#[test]
fn windows_host_process_on_pod_and_containers() {
    let on = json!({"windowsOptions": {"hostProcess": true}});
    let pod = spec(json!({
        "securityContext": on,
        "containers": [{"name": "a", "securityContext": on}, {"name": "b", "securityContext": on}]
    }));
    assert_eq!(
        items(BASELINE, &pod),
        [
            r#"hostProcess (pod and containers "a", "b" must not set securityContext.windowsOptions.hostProcess=true)"#
        ]
    );
}

#[test]
fn probe_and_lifecycle_hosts_from_v1_34() {
    let pod = spec(json!({"containers": [
        {"name": "z", "livenessProbe": {"httpGet": {"port": 80, "host": "example.com"}}},
        {"name": "a",
         "readinessProbe": {"tcpSocket": {"port": 80, "host": "10.0.0.1"}},
         "lifecycle": {"preStop": {"httpGet": {"port": 80, "host": "example.com"}}}},
        {"name": "ok", "startupProbe": {"httpGet": {"port": 80, "host": ""}}}
    ]}));
    assert_eq!(
        items(BASELINE, &pod),
        [
            r#"probe or lifecycle host (containers "a", "z" use probe or lifecycle hosts "10.0.0.1", "example.com")"#
        ]
    );
    assert!(items(at(Level::Baseline, 33), &pod).is_empty());
}

// --- Restricted checks -----------------------------------------------------------------------

#[test]
fn a_hardened_pod_passes_restricted() {
    let pod = hardened_pod(&["a", "b"], json!({}));
    assert!(items(RESTRICTED, &pod).is_empty());
    assert!(items(at(Level::Restricted, 0), &pod).is_empty());
}

#[test]
fn allow_privilege_escalation_must_be_false_except_on_windows_from_v1_25() {
    let mut pod = hardened_pod(&["a"], json!({}));
    pod.containers
        .push(serde_json::from_value(json!({"name": "b"})).unwrap());
    pod.containers.push(
        serde_json::from_value(hardened_with(
            "c",
            json!({"allowPrivilegeEscalation": true}),
        ))
        .unwrap(),
    );
    let found = items(RESTRICTED, &pod);
    assert_eq!(
        found.first().map(String::as_str),
        Some(
            r#"allowPrivilegeEscalation != false (containers "b", "c" must set securityContext.allowPrivilegeEscalation=false)"#
        )
    );
    let windows = hardened_pod(
        &[],
        json!({"os": {"name": "windows"}, "containers": [{"name": "w", "securityContext": {"runAsNonRoot": true}}]}),
    );
    assert!(items(RESTRICTED, &windows).is_empty());
    assert_eq!(
        items(at(Level::Restricted, 24), &windows),
        [
            r#"allowPrivilegeEscalation != false (container "w" must set securityContext.allowPrivilegeEscalation=false)"#,
            r#"unrestricted capabilities (container "w" must set securityContext.capabilities.drop=["ALL"])"#,
            r#"seccompProfile (pod or container "w" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        ]
    );
}

#[test]
fn restricted_capabilities_drop_all_and_add_only_net_bind_service() {
    let mut pod = hardened_pod(&[], json!({}));
    let containers = [
        hardened_with("a", json!({"capabilities": {"drop": ["NET_RAW"]}})),
        hardened_with(
            "b",
            json!({"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "NET_ADMIN"]}}),
        ),
        hardened_with("c", json!({"capabilities": {"add": ["CHOWN"]}})),
    ];
    pod.containers = containers
        .into_iter()
        .map(|c| serde_json::from_value(c).unwrap())
        .collect();
    assert_eq!(
        items(RESTRICTED, &pod),
        [
            r#"unrestricted capabilities (containers "a", "c" must set securityContext.capabilities.drop=["ALL"]; containers "b", "c" must not include "CHOWN", "NET_ADMIN" in securityContext.capabilities.add)"#
        ]
    );
    // Before v1.22 restricted ran baseline's capabilities check instead.
    assert_eq!(
        items(at(Level::Restricted, 21), &pod),
        [
            r#"non-default capabilities (container "b" must not include "NET_ADMIN" in securityContext.capabilities.add)"#
        ]
    );
}

#[test]
fn run_as_non_root_explicit_false_and_unset() {
    let explicit = spec(json!({
        "securityContext": {"runAsNonRoot": false},
        "containers": [hardened_with("a", json!({"runAsNonRoot": false})), hardened("b")]
    }));
    assert_eq!(
        items(RESTRICTED, &explicit),
        [
            r#"runAsNonRoot != true (pod and container "a" must not set securityContext.runAsNonRoot=false)"#
        ]
    );
    let mut unset = hardened_pod(&["a"], json!({}));
    for name in ["b", "c"] {
        let mut c = hardened(name);
        c["securityContext"]
            .as_object_mut()
            .map(|sc| sc.remove("runAsNonRoot"));
        unset.containers.push(serde_json::from_value(c).unwrap());
    }
    assert_eq!(
        items(RESTRICTED, &unset),
        [
            r#"runAsNonRoot != true (pod or containers "b", "c" must set securityContext.runAsNonRoot=true)"#
        ]
    );
    unset.security_context = serde_json::from_value(json!({"runAsNonRoot": true})).unwrap();
    assert!(items(RESTRICTED, &unset).is_empty());
}

#[test]
fn run_as_user_zero_from_v1_23_and_not_in_a_user_namespace_from_v1_35() {
    let pod = spec(json!({
        "securityContext": {"runAsUser": 0},
        "containers": [hardened_with("a", json!({"runAsUser": 0})), hardened_with("b", json!({"runAsUser": 1000}))]
    }));
    assert_eq!(
        items(RESTRICTED, &pod),
        [r#"runAsUser=0 (pod and container "a" must not set runAsUser=0)"#]
    );
    assert!(items(at(Level::Restricted, 22), &pod).is_empty());
    let mut userns = pod.clone();
    userns.host_users = Some(false);
    assert!(items(RESTRICTED, &userns).is_empty());
    assert_eq!(items(at(Level::Restricted, 34), &userns).len(), 1);
}

#[test]
fn restricted_seccomp_requires_a_profile_on_the_pod_or_every_container() {
    let mut pod = hardened_pod(&["a"], json!({}));
    for (name, profile) in [("b", None), ("c", Some("Unconfined"))] {
        let mut c = hardened(name);
        let sc = &mut c["securityContext"];
        match profile {
            Some(t) => sc["seccompProfile"] = json!({"type": t}),
            None => {
                sc.as_object_mut().map(|o| o.remove("seccompProfile"));
            }
        }
        pod.containers.push(serde_json::from_value(c).unwrap());
    }
    // An explicit forbidden type is reported instead of the missing ones.
    assert_eq!(
        items(RESTRICTED, &pod),
        [
            r#"seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")"#
        ]
    );
    pod.containers.pop();
    assert_eq!(
        items(RESTRICTED, &pod),
        [
            r#"seccompProfile (pod or container "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
        ]
    );
    pod.security_context = serde_json::from_value(
        json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}),
    )
    .unwrap();
    assert!(items(RESTRICTED, &pod).is_empty());
}

#[test]
fn restricted_volume_types_and_what_restricted_allows() {
    let pod = hardened_pod(
        &["a"],
        json!({"volumes": [
            {"name": "s", "secret": {"secretName": "x"}},
            {"name": "e", "emptyDir": {}},
            {"name": "p", "persistentVolumeClaim": {"claimName": "x"}},
            {"name": "i", "image": {"reference": "r"}},
            {"name": "g", "gitRepo": {"repository": "r"}},
            {"name": "none"}
        ]}),
    );
    assert_eq!(
        items(RESTRICTED, &pod),
        [
            r#"restricted volume types (volumes "g", "none" use restricted volume types "gitRepo", "unknown")"#
        ]
    );
    assert!(items(BASELINE, &pod).is_empty());
}

// --- Levels, versions and labels -------------------------------------------------------------

#[test]
fn levels_and_versions_parse_as_upstream_does() {
    assert_eq!(Level::parse("baseline"), Some(Level::Baseline));
    assert_eq!(Level::parse("Baseline"), None);
    assert_eq!(Level::Restricted.as_str(), "restricted");
    assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
    assert_eq!(Version::parse("latest"), Some(Version::LATEST));
    assert_eq!(Version::parse("v1.0"), Some(Version::v1(0)));
    assert_eq!(
        Version::parse("v1.35").map(|v| v.to_string()).as_deref(),
        Some("v1.35")
    );
    for bad in [
        "v1.035",
        "v1.",
        "v2.0",
        "1.35",
        "v1.3x",
        "Latest",
        "v1.-1",
        "v1.99999999999999999999",
    ] {
        assert_eq!(Version::parse(bad), None, "{bad}");
    }
    assert!(Version::v1(99) < Version::LATEST);
    assert_eq!(Version::default(), Version::LATEST);
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn namespace_labels() {
    assert_eq!(Policy::from_namespace_labels(&labels(&[])), Ok(None));
    assert_eq!(
        Policy::from_namespace_labels(&labels(&[(ENFORCE_VERSION_LABEL, "v1.30")])),
        Ok(None)
    );
    let enforced = Policy::from_namespace_labels(&labels(&[
        (ENFORCE_LABEL, "baseline"),
        (ENFORCE_VERSION_LABEL, "v1.30"),
        ("pod-security.kubernetes.io/warn", "restricted"),
    ]));
    assert_eq!(enforced, Ok(Some(at(Level::Baseline, 30))));
    assert_eq!(
        enforced.ok().flatten().map(|p| p.to_string()).as_deref(),
        Some("baseline:v1.30")
    );
}

#[test]
fn invalid_namespace_labels_are_reported_and_enforced_fail_closed() {
    let bad_level = labels(&[(ENFORCE_LABEL, "strict")]);
    assert_eq!(
        Policy::from_namespace_labels(&bad_level),
        Err(
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
                .to_string()
        )
    );
    assert_eq!(
        Policy::enforced_by_namespace_labels(&bad_level),
        Some(RESTRICTED)
    );
    let both = labels(&[(ENFORCE_LABEL, ""), (ENFORCE_VERSION_LABEL, "v1.030")]);
    assert_eq!(
        Policy::from_namespace_labels(&both),
        Err(concat!(
            r#"[metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "": must be one of privileged, baseline, restricted, "#,
            r#"metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "v1.030": must be "latest" or "v1.x"]"#
        )
        .to_string())
    );
    let bad_version = labels(&[(ENFORCE_LABEL, "baseline"), (ENFORCE_VERSION_LABEL, "1.30")]);
    assert_eq!(
        Policy::enforced_by_namespace_labels(&bad_version),
        Some(BASELINE)
    );
}

#[test]
fn go_quoting_of_names_and_values() {
    assert_eq!(go_quote("plain"), r#""plain""#);
    assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
    assert_eq!(go_quote("t\tn\n\u{1}\u{7f}"), r#""t\tn\n\x01\x7f""#);
    assert_eq!(go_quote("é\u{a0}\u{2028}"), r#""é\u00a0\u2028""#);
}

// --- The shared corpus -----------------------------------------------------------------------

/// The shared manifest corpus, or `None` (the reason printed) in a clone without it.
fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus"
    ));
    if dir.is_dir() {
        return Some(dir);
    }
    eprintln!(
        "skipped: manifest corpus not found at {} (shared/ must sit beside the repository)",
        dir.display()
    );
    None
}

/// Every DaemonSet of the corpus, any API version (the pod template has the same shape in
/// `extensions/v1beta1` and `apps/v1beta2`): `(file, name, template)`.
fn corpus_templates(dir: &std::path::Path) -> Vec<(String, String, PodTemplateSpec)> {
    let limits = crate::manifest::Limits::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("corpus file");
        let docs = crate::manifest::read_documents(&file, &text, &limits).expect("corpus YAML");
        for doc in docs.into_iter().filter(|d| d.value["kind"] == "DaemonSet") {
            let name = doc.value["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let template = serde_json::from_value(doc.value["spec"]["template"].clone())
                .unwrap_or_else(|e| panic!("{file} {name}: template: {e}"));
            out.push((file.clone(), name, template));
        }
    }
    out
}

/// Reasons of the violations of `template` at `policy`.
fn reasons(policy: &Policy, template: &PodTemplateSpec) -> Vec<String> {
    check_template(policy, template)
        .into_iter()
        .map(|v| v.reason)
        .collect()
}

#[test]
fn corpus_daemonsets_against_baseline_and_restricted() {
    let Some(dir) = corpus_dir() else { return };
    let templates = corpus_templates(&dir);
    assert_eq!(templates.len(), 51);
    let find = |file: &str| {
        let found = templates.iter().find(|(f, _, _)| f == file);
        found.map(|(_, _, t)| t).expect(file)
    };

    // Network plugins: refused at baseline for sharing the host network and being privileged,
    // host namespaces first.
    let calico = find("calico__calico-node-daemonset.yaml");
    assert_eq!(
        forbidden_message(
            "calico-node-x7k2q",
            &BASELINE,
            &check_template(&BASELINE, calico)
        ),
        concat!(
            r#"pods "calico-node-x7k2q" is forbidden: violates PodSecurity "baseline:latest": "#,
            r#"host namespaces (hostNetwork=true), "#,
            r#"hostPath volumes (volumes "lib-modules", "etc-calico", "cni-bin-dir", "cni-net-dir", "var-run-calico", "var-lib-calico", "xtables-lock"), "#,
            r#"probe or lifecycle host (container "calico-node" uses probe or lifecycle host "localhost"), "#,
            r#"privileged (container "calico-node" must not set securityContext.privileged=true)"#,
        )
    );
    assert_eq!(
        reasons(&BASELINE, find("cilium__quick-install.yaml")),
        [
            "non-default capabilities",
            "host namespaces",
            "hostPath volumes",
            "privileged"
        ]
    );

    // node-local-dns sets no hostPort: its pods get them from hostNetwork defaulting.
    let nodelocaldns = check_template(
        &BASELINE,
        find("kubernetes-cluster-addons__nodelocaldns.yaml"),
    );
    assert!(
        nodelocaldns.iter().any(
            |v| v.to_string() == r#"hostPort (container "node-cache" uses hostPorts 53, 9253)"#
        ),
        "{nodelocaldns:?}"
    );

    // Windows HostProcess daemons are refused for that, not for Linux-only settings.
    assert_eq!(
        reasons(
            &BASELINE,
            find("sig-windows-tools__kube-proxy-windows-hostprocess.yaml")
        ),
        ["host namespaces", "hostProcess"]
    );

    // Only three DaemonSets would run in a baseline namespace, none in a restricted one.
    let passing_baseline: Vec<&str> = templates
        .iter()
        .filter(|(_, _, t)| check_template(&BASELINE, t).is_empty())
        .map(|(f, _, _)| f.as_str())
        .collect();
    assert_eq!(
        passing_baseline,
        [
            "node-feature-discovery__worker-daemonset.yaml",
            "openshift-cluster-dns-operator__dns-daemonset-asset.yaml",
            "opentelemetry-collector__otel-config.yaml",
        ]
    );
    for (file, name, template) in &templates {
        let restricted = check_template(&RESTRICTED, template);
        assert!(!restricted.is_empty(), "{file} {name} passes restricted");
        // Restricted includes every baseline check but the ones it replaces.
        let baseline = reasons(&BASELINE, template);
        let replaced = ["non-default capabilities", "hostPath volumes"];
        for reason in baseline.iter().filter(|r| !replaced.contains(&r.as_str())) {
            assert!(
                restricted.iter().any(|v| &v.reason == reason),
                "{file} {name}: {reason} missing at restricted"
            );
        }
    }
}

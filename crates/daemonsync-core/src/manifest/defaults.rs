//! API-server defaulting for `apps/v1` DaemonSets and the core/v1 pod template.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetUpdateStrategy, RollingUpdateDaemonSet};
use k8s_openapi::api::core::v1::{
    Container, DownwardAPIVolumeFile, HTTPGetAction, Lifecycle, LifecycleHandler,
    ObjectFieldSelector, PodSecurityContext, PodSpec, Probe, ResourceFieldSelector,
    ResourceRequirements, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as RawQuantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::model::Quantity;

/// Apply the API server's defaulting to an `apps/v1` DaemonSet, in place.
///
/// DaemonSet defaults (docs/semantics.md §1): `updateStrategy.type` RollingUpdate; for
/// RollingUpdate `rollingUpdate` `{}`, `maxUnavailable` 1 and `maxSurge` 0, each independently;
/// OnDelete leaves `rollingUpdate` as given; `revisionHistoryLimit` 10.
///
/// Pod template defaults are those the API server stores for a pod *template*
/// (`SetDefaults_PodSpec`, container/port/probe/volume defaults and the
/// `serviceAccount`/`serviceAccountName` conversion). Defaults that upstream applies only to
/// Pods (enableServiceLinks, requests from limits, hostNetwork hostPorts) are not applied here,
/// so the stored template - and its revision hash - stays as the cluster has it; see
/// [`apply_pod_defaults`]. Idempotent: writing a default explicitly changes nothing.
///
/// The result is the template as the API server stores it, so that two manifests the cluster
/// would hold identically compare (and hash) equal: quantities in their canonical form
/// (resource lists rounded up to milliunits, `1000m` is `1`), a `resourceFieldRef` without a
/// divisor gets `divisor: "0"`, a gRPC probe without a service gets `service: ""`, an
/// ephemeral volume claim gets `volumeMode: Filesystem`, every container `resources: {}`;
/// fields the API server does not store when they hold their zero value (`hostNetwork:
/// false`, `readOnly: false`, `minReadySeconds: 0`, …) are dropped; fields whose feature gate
/// is off in v1.35 (`lifecycle.stopSignal`, `workloadRef`) are dropped as the API server drops
/// them. Quantities that do not parse are left as written, for validation to report.
pub fn apply_defaults(ds: &mut DaemonSet) {
    let spec = ds.spec.get_or_insert_with(Default::default);
    let strategy = spec
        .update_strategy
        .get_or_insert_with(DaemonSetUpdateStrategy::default);
    if strategy.type_.as_deref().unwrap_or("").is_empty() {
        strategy.type_ = Some("RollingUpdate".to_string());
    }
    if strategy.type_.as_deref() == Some("RollingUpdate") {
        let ru = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDaemonSet::default);
        if ru.max_unavailable.is_none() {
            ru.max_unavailable = Some(IntOrString::Int(1));
        }
        if ru.max_surge.is_none() {
            ru.max_surge = Some(IntOrString::Int(0));
        }
    }
    if spec.revision_history_limit.is_none() {
        spec.revision_history_limit = Some(10);
    }
    drop_zero(&mut spec.min_ready_seconds);
    let pod = spec.template.spec.get_or_insert_with(PodSpec::default);
    default_pod_spec(pod);
}

/// Drops a value equal to its type's zero: the API server does not store such fields
/// (`omitempty` on a non-pointer Go field).
fn drop_zero<T: Default + PartialEq>(field: &mut Option<T>) {
    if field.as_ref().is_some_and(|v| *v == T::default()) {
        *field = None;
    }
}

/// A quantity as the API server stores it; one that does not parse stays as written.
fn canonical_quantity(q: &mut RawQuantity) {
    if let Ok(parsed) = Quantity::parse(&q.0) {
        q.0 = parsed.to_string();
    }
}

/// `SetDefaults_ResourceList`: every quantity rounded up to milliunits, then stored canonical.
fn canonical_resource_list(list: &mut Option<BTreeMap<String, RawQuantity>>) {
    for q in list.iter_mut().flat_map(|m| m.values_mut()) {
        if let Ok(mut parsed) = Quantity::parse(&q.0) {
            parsed.round_up_to_milli();
            q.0 = parsed.to_string();
        }
    }
}

fn canonical_requirements(r: &mut ResourceRequirements) {
    canonical_resource_list(&mut r.limits);
    canonical_resource_list(&mut r.requests);
}

/// A `resourceFieldRef` stores its divisor, `"0"` when none was given.
fn default_resource_field_ref(r: &mut ResourceFieldSelector) {
    match r.divisor.as_mut() {
        Some(d) => canonical_quantity(d),
        None => r.divisor = Some(RawQuantity("0".to_string())),
    }
    drop_zero(&mut r.container_name);
}

fn default_downward_api_file(f: &mut DownwardAPIVolumeFile) {
    if let Some(r) = f.field_ref.as_mut() {
        default_field_ref(r);
    }
    if let Some(r) = f.resource_field_ref.as_mut() {
        default_resource_field_ref(r);
    }
}

fn set_if_empty(field: &mut Option<String>, value: &str) {
    if field.as_deref().unwrap_or("").is_empty() {
        *field = Some(value.to_string());
    }
}

/// core/v1 `SetDefaults_PodSpec` plus the nested defaults reachable from a pod template.
fn default_pod_spec(pod: &mut PodSpec) {
    set_if_empty(&mut pod.dns_policy, "ClusterFirst");
    set_if_empty(&mut pod.restart_policy, "Always");
    if pod.security_context.is_none() {
        pod.security_context = Some(PodSecurityContext::default());
    }
    if pod.termination_grace_period_seconds.is_none() {
        pod.termination_grace_period_seconds = Some(30);
    }
    set_if_empty(&mut pod.scheduler_name, "default-scheduler");

    // v1 <-> internal conversion: serviceAccountName falls back to the deprecated
    // serviceAccount, and serviceAccount always mirrors serviceAccountName on the way out.
    if pod.service_account_name.as_deref().unwrap_or("").is_empty()
        && let Some(sa) = pod.service_account.as_ref().filter(|s| !s.is_empty())
    {
        pod.service_account_name = Some(sa.clone());
    }
    if let Some(san) = pod.service_account_name.as_ref().filter(|s| !s.is_empty()) {
        pod.service_account = Some(san.clone());
    }

    for c in &mut pod.containers {
        default_container(c);
    }
    for c in pod.init_containers.iter_mut().flatten() {
        default_container(c);
    }
    for v in pod.volumes.iter_mut().flatten() {
        default_volume(v);
    }
    if let Some(o) = pod.overhead.as_mut() {
        let mut list = Some(std::mem::take(o));
        canonical_resource_list(&mut list);
        *o = list.unwrap_or_default();
    }
    if let Some(r) = pod.resources.as_mut() {
        canonical_requirements(r);
    }
    for t in pod.tolerations.iter_mut().flatten() {
        for f in [&mut t.key, &mut t.operator, &mut t.value, &mut t.effect] {
            drop_zero(f);
        }
    }
    for f in [&mut pod.host_network, &mut pod.host_pid, &mut pod.host_ipc] {
        drop_zero(f);
    }
    for f in [
        &mut pod.node_name,
        &mut pod.service_account_name,
        &mut pod.service_account,
        &mut pod.hostname,
        &mut pod.subdomain,
        &mut pod.priority_class_name,
    ] {
        drop_zero(f);
    }
    // `GenericWorkload` is alpha in v1.35: the API server drops the field.
    pod.workload_ref = None;
}

/// Apply the defaults upstream gives a *Pod* but not a pod template: `enableServiceLinks: true`,
/// `resources.requests` copied from `limits` where missing, and (with `hostNetwork`) each
/// container port's `hostPort` set to its `containerPort`.
///
/// Use this when rendering the pod the DaemonSet controller would create; [`apply_defaults`]
/// must have been applied to the template first.
pub fn apply_pod_defaults(pod: &mut PodSpec) {
    pod_only_defaults(pod);
}

/// The API server's defaulting of a pod written to it: every default a pod template gets,
/// then those only pods get ([`apply_pod_defaults`]).
pub fn default_pod(pod: &mut PodSpec) {
    default_pod_spec(pod);
    pod_only_defaults(pod);
}

fn pod_only_defaults(pod: &mut PodSpec) {
    if pod.enable_service_links.is_none() {
        pod.enable_service_links = Some(true);
    }
    let host_network = pod.host_network == Some(true);
    let all = pod
        .containers
        .iter_mut()
        .chain(pod.init_containers.iter_mut().flatten());
    for c in all {
        if let Some(res) = c.resources.as_mut()
            && let Some(limits) = res.limits.as_ref()
        {
            let requests = res.requests.get_or_insert_with(Default::default);
            for (k, v) in limits {
                requests.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        if host_network {
            for p in c.ports.iter_mut().flatten() {
                if p.host_port.unwrap_or(0) == 0 {
                    p.host_port = Some(p.container_port);
                }
            }
        }
    }
}

/// The pull policy the API server picks when none is given: `Always` for `:latest` or an
/// untagged, undigested reference, `IfNotPresent` otherwise (and for unparsable references).
fn default_pull_policy(image: &str) -> &'static str {
    if image.is_empty() || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    // Repository path components must be lowercase; otherwise the reference does not parse.
    let path = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => rest,
        _ => name,
    };
    let path = path.split(':').next().unwrap_or(path);
    if path.chars().any(|c| c.is_ascii_uppercase()) {
        return "IfNotPresent";
    }
    match (tag, digest) {
        (Some("latest"), _) => "Always",
        (None, None) => "Always",
        _ => "IfNotPresent",
    }
}

fn default_container(c: &mut Container) {
    if c.image_pull_policy.as_deref().unwrap_or("").is_empty() {
        let policy = default_pull_policy(c.image.as_deref().unwrap_or(""));
        c.image_pull_policy = Some(policy.to_string());
    }
    set_if_empty(&mut c.termination_message_path, "/dev/termination-log");
    set_if_empty(&mut c.termination_message_policy, "File");
    drop_zero(&mut c.image);
    drop_zero(&mut c.working_dir);
    for f in [&mut c.stdin, &mut c.stdin_once, &mut c.tty] {
        drop_zero(f);
    }
    canonical_requirements(c.resources.get_or_insert_with(Default::default));
    for p in c.ports.iter_mut().flatten() {
        set_if_empty(&mut p.protocol, "TCP");
        drop_zero(&mut p.name);
        drop_zero(&mut p.host_port);
        drop_zero(&mut p.host_ip);
    }
    for e in c.env.iter_mut().flatten() {
        drop_zero(&mut e.value);
        if let Some(vf) = e.value_from.as_mut() {
            if let Some(f) = vf.field_ref.as_mut() {
                default_field_ref(f);
            }
            if let Some(r) = vf.resource_field_ref.as_mut() {
                default_resource_field_ref(r);
            }
        }
    }
    for e in c.env_from.iter_mut().flatten() {
        drop_zero(&mut e.prefix);
    }
    for m in c.volume_mounts.iter_mut().flatten() {
        drop_zero(&mut m.read_only);
        drop_zero(&mut m.sub_path);
        drop_zero(&mut m.sub_path_expr);
    }
    for p in [
        &mut c.liveness_probe,
        &mut c.readiness_probe,
        &mut c.startup_probe,
    ]
    .into_iter()
    .flatten()
    {
        default_probe(p);
    }
    if let Some(Lifecycle {
        post_start,
        pre_stop,
        stop_signal,
    }) = c.lifecycle.as_mut()
    {
        for h in [post_start.as_mut(), pre_stop.as_mut()]
            .into_iter()
            .flatten()
        {
            default_handler(h);
        }
        // `ContainerStopSignals` is alpha in v1.35: the API server drops the field, and a
        // lifecycle left empty by that.
        if stop_signal.take().is_some() && post_start.is_none() && pre_stop.is_none() {
            c.lifecycle = None;
        }
    }
}

fn default_field_ref(f: &mut ObjectFieldSelector) {
    set_if_empty(&mut f.api_version, "v1");
}

fn default_http_get(h: &mut HTTPGetAction) {
    set_if_empty(&mut h.path, "/");
    set_if_empty(&mut h.scheme, "HTTP");
    drop_zero(&mut h.host);
}

fn default_handler(h: &mut LifecycleHandler) {
    if let Some(g) = h.http_get.as_mut() {
        default_http_get(g);
    }
    if let Some(t) = h.tcp_socket.as_mut() {
        drop_zero(&mut t.host);
    }
}

fn default_probe(p: &mut Probe) {
    for (field, value) in [
        (&mut p.timeout_seconds, 1),
        (&mut p.period_seconds, 10),
        (&mut p.success_threshold, 1),
        (&mut p.failure_threshold, 3),
    ] {
        if field.unwrap_or(0) == 0 {
            *field = Some(value);
        }
    }
    drop_zero(&mut p.initial_delay_seconds);
    if let Some(g) = p.http_get.as_mut() {
        default_http_get(g);
    }
    if let Some(t) = p.tcp_socket.as_mut() {
        drop_zero(&mut t.host);
    }
    // The service of a gRPC probe defaults to the empty string (declarative `+default=""`).
    if let Some(g) = p.grpc.as_mut()
        && g.service.is_none()
    {
        g.service = Some(String::new());
    }
}

const DEFAULT_MODE: i32 = 0o644;

fn volume_has_source(v: &Volume) -> bool {
    // Every field of Volume except `name` is a volume source.
    let json = serde_json::to_value(v).unwrap_or_default();
    json.as_object()
        .is_some_and(|m| m.keys().any(|k| k != "name"))
}

fn default_volume(v: &mut Volume) {
    if !volume_has_source(v) {
        v.empty_dir = Some(Default::default());
    }
    if let Some(s) = v.config_map.as_mut()
        && s.default_mode.is_none()
    {
        s.default_mode = Some(DEFAULT_MODE);
    }
    if let Some(s) = v.secret.as_mut() {
        if s.default_mode.is_none() {
            s.default_mode = Some(DEFAULT_MODE);
        }
        drop_zero(&mut s.secret_name);
    }
    if let Some(s) = v.empty_dir.as_mut() {
        drop_zero(&mut s.medium);
        if let Some(q) = s.size_limit.as_mut() {
            canonical_quantity(q);
        }
    }
    if let Some(s) = v.nfs.as_mut() {
        drop_zero(&mut s.read_only);
    }
    if let Some(s) = v.persistent_volume_claim.as_mut() {
        drop_zero(&mut s.read_only);
    }
    if let Some(s) = v.azure_disk.as_mut() {
        set_if_empty(&mut s.caching_mode, "ReadWrite");
        set_if_empty(&mut s.kind, "Shared");
        set_if_empty(&mut s.fs_type, "ext4");
        s.read_only.get_or_insert(false);
    }
    if let Some(s) = v.scale_io.as_mut() {
        set_if_empty(&mut s.storage_mode, "ThinProvisioned");
        set_if_empty(&mut s.fs_type, "xfs");
    }
    if let Some(s) = v.image.as_mut() {
        let reference = s.reference.clone().unwrap_or_default();
        set_if_empty(&mut s.pull_policy, default_pull_policy(&reference));
    }
    if let Some(t) = v
        .ephemeral
        .as_mut()
        .and_then(|e| e.volume_claim_template.as_mut())
    {
        set_if_empty(&mut t.spec.volume_mode, "Filesystem");
        if let Some(r) = t.spec.resources.as_mut() {
            canonical_resource_list(&mut r.limits);
            canonical_resource_list(&mut r.requests);
        }
    }
    if let Some(s) = v.downward_api.as_mut() {
        if s.default_mode.is_none() {
            s.default_mode = Some(DEFAULT_MODE);
        }
        for item in s.items.iter_mut().flatten() {
            default_downward_api_file(item);
        }
    }
    if let Some(s) = v.projected.as_mut() {
        if s.default_mode.is_none() {
            s.default_mode = Some(DEFAULT_MODE);
        }
        for src in s.sources.iter_mut().flatten() {
            if let Some(t) = src.service_account_token.as_mut() {
                if t.expiration_seconds.is_none() {
                    t.expiration_seconds = Some(3600);
                }
                drop_zero(&mut t.audience);
            }
            if let Some(d) = src.downward_api.as_mut() {
                for item in d.items.iter_mut().flatten() {
                    default_downward_api_file(item);
                }
            }
        }
    }
    if let Some(s) = v.host_path.as_mut()
        && s.type_.is_none()
    {
        s.type_ = Some(String::new());
    }
    if let Some(s) = v.iscsi.as_mut() {
        set_if_empty(&mut s.iscsi_interface, "default");
    }
    if let Some(s) = v.rbd.as_mut() {
        set_if_empty(&mut s.pool, "rbd");
        set_if_empty(&mut s.user, "admin");
        set_if_empty(&mut s.keyring, "/etc/ceph/keyring");
    }
}

#[cfg(test)]
mod tests {
    use super::default_pull_policy;

    #[test]
    fn pull_policy_follows_tag() {
        assert_eq!(default_pull_policy("nginx"), "Always");
        assert_eq!(default_pull_policy("nginx:latest"), "Always");
        assert_eq!(default_pull_policy("nginx:1.25"), "IfNotPresent");
        assert_eq!(default_pull_policy("registry:5000/nginx"), "Always");
        assert_eq!(
            default_pull_policy("registry:5000/nginx:1.2"),
            "IfNotPresent"
        );
        assert_eq!(default_pull_policy("nginx@sha256:abcd"), "IfNotPresent");
        assert_eq!(
            default_pull_policy("FILLED BY THE OPERATOR"),
            "IfNotPresent"
        );
        assert_eq!(default_pull_policy(""), "IfNotPresent");
    }
}

//! Adopting a DaemonSet the built-in controller runs: a live object as the API server stores
//! it against the manifest in git that produced it. One test per canonicalisation; each must
//! plan as "no change".

use serde_json::{Value, json};

use super::{DaemonSetPlan, LiveComparison, NodeState};
use crate::model::TEMPLATE_GENERATION_LABEL;
use crate::model::{REVISION_HASH_LABEL, ReadyCondition, TEMPLATE_GENERATION_ANNOTATION};
use crate::testkit::plan::{Cluster, nodes};
use k8s_openapi::api::apps::v1::DaemonSet;

fn daemonset(template: Value, live: bool) -> DaemonSet {
    let mut v = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": template
        }
    });
    if live {
        v["metadata"]["annotations"] = json!({TEMPLATE_GENERATION_ANNOTATION: "3"});
        v["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
        v["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}});
        v["spec"]["revisionHistoryLimit"] = json!(10);
    }
    serde_json::from_value(v).expect("daemonset")
}

/// A template from git: labels and a pod spec as written.
fn git(spec: Value) -> Value {
    json!({"metadata": {"labels": {"app": "agent"}}, "spec": spec})
}

/// The same template as `kubectl get -o yaml` shows it: every server default written out,
/// `creationTimestamp: null`, `resources: {}`.
fn stored(mut spec: Value) -> Value {
    let pod = spec.as_object_mut().expect("pod spec");
    for (k, v) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("securityContext", json!({})),
        ("terminationGracePeriodSeconds", json!(30)),
    ] {
        pod.entry(k).or_insert(v);
    }
    for c in pod["containers"].as_array_mut().expect("containers") {
        let c = c.as_object_mut().expect("container");
        for (k, v) in [
            ("imagePullPolicy", json!("IfNotPresent")),
            ("terminationMessagePath", json!("/dev/termination-log")),
            ("terminationMessagePolicy", json!("File")),
            ("resources", json!({})),
        ] {
            c.entry(k).or_insert(v);
        }
    }
    json!({"metadata": {"creationTimestamp": null, "labels": {"app": "agent"}}, "spec": spec})
}

/// Plans git's DaemonSet against the live one on two nodes whose pods the built-in controller
/// made from the live template (generation 3), all ready.
fn adopt(git_template: Value, live_template: Value) -> DaemonSetPlan {
    let mut git_ds = daemonset(git_template, false);
    crate::manifest::apply_defaults(&mut git_ds);
    let live = daemonset(live_template, true);
    let mut c = Cluster::new(nodes(2));
    c.live.push(live);
    for n in ["node-0", "node-1"] {
        let p = c.pod(&git_ds, n);
        p.labels_mut().clear();
        p.labels_mut().insert("app".into(), "agent".into());
        p.labels_mut()
            .insert(REVISION_HASH_LABEL.into(), "6b9f7d8c5".into());
        p.labels_mut()
            .insert(TEMPLATE_GENERATION_LABEL.into(), "3".into());
        p.ready = Some(ReadyCondition {
            status: true,
            last_transition: Some(crate::testkit::plan::t0()),
        });
    }
    c.plan(&git_ds)
}

#[track_caller]
fn no_change(git_spec: Value, live_spec: Value) {
    let plan = adopt(git(git_spec), stored(live_spec));
    assert_eq!(
        plan.live,
        LiveComparison::Equivalent,
        "{:#?}",
        plan.live_diff
    );
    assert!(plan.live_diff.is_none());
    assert!(plan.step.is_empty(), "{:?}", plan.step);
    assert!(plan.nodes.iter().all(|n| n.state == NodeState::UpToDate));
}

#[test]
fn adoption_quantities_are_compared_in_canonical_form() {
    no_change(
        json!({"containers": [{"name": "a", "image": "agent:1", "resources": {
            "limits": {"cpu": "1000m", "memory": "1024Mi"},
            "requests": {"cpu": "0.1", "memory": "128974848", "ephemeral-storage": "2000M"}}}]}),
        json!({"containers": [{"name": "a", "image": "agent:1", "resources": {
            "limits": {"cpu": "1", "memory": "1Gi"},
            "requests": {"cpu": "100m", "memory": "128974848", "ephemeral-storage": "2G"}}}]}),
    );
}

#[test]
fn adoption_resource_lists_are_rounded_up_to_milliunits() {
    no_change(
        json!({"containers": [{"name": "a", "image": "agent:1",
            "resources": {"requests": {"cpu": "100u"}}}]}),
        json!({"containers": [{"name": "a", "image": "agent:1",
            "resources": {"requests": {"cpu": "1m"}}}]}),
    );
}

#[test]
fn adoption_resource_field_ref_divisor_defaults_to_zero() {
    no_change(
        json!({"containers": [{"name": "a", "image": "agent:1", "env": [
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1000m"}}}]}],
            "volumes": [{"name": "info", "downwardAPI": {"items": [
                {"path": "mem", "resourceFieldRef": {"containerName": "a", "resource": "limits.memory"}}]}}]}),
        json!({"containers": [{"name": "a", "image": "agent:1", "env": [
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "0"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1"}}}]}],
            "volumes": [{"name": "info", "downwardAPI": {"defaultMode": 420, "items": [
                {"path": "mem", "resourceFieldRef": {"containerName": "a", "resource": "limits.memory", "divisor": "0"}}]}}]}),
    );
}

#[test]
fn adoption_grpc_probe_service_defaults_to_empty() {
    no_change(
        json!({"containers": [{"name": "a", "image": "agent:1",
            "readinessProbe": {"grpc": {"port": 9090}}}]}),
        json!({"containers": [{"name": "a", "image": "agent:1",
            "readinessProbe": {"grpc": {"port": 9090, "service": ""}, "failureThreshold": 3,
                "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1}}]}),
    );
}

#[test]
fn adoption_ephemeral_claim_volume_mode_defaults_to_filesystem() {
    no_change(
        json!({"containers": [{"name": "a", "image": "agent:1"}],
            "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}}}}}]}),
        json!({"containers": [{"name": "a", "image": "agent:1"}],
            "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "metadata": {"creationTimestamp": null},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                    "resources": {"requests": {"storage": "1Gi"}}}}}}]}),
    );
}

#[test]
fn adoption_container_resources_stored_as_empty_object() {
    // `stored` writes `resources: {}` for every container that has none.
    no_change(
        json!({"containers": [{"name": "a", "image": "agent:1"}, {"name": "b", "image": "agent:1"}]}),
        json!({"containers": [{"name": "a", "image": "agent:1"}, {"name": "b", "image": "agent:1"}]}),
    );
}

#[test]
fn adoption_template_creation_timestamp_null_is_no_difference() {
    // `stored` gives the live template `metadata.creationTimestamp: null`.
    let plan = adopt(
        git(json!({"containers": [{"name": "a", "image": "agent:1"}]})),
        stored(json!({"containers": [{"name": "a", "image": "agent:1"}]})),
    );
    assert_eq!(plan.live, LiveComparison::Equivalent);
}

#[test]
fn adoption_zero_values_are_not_stored() {
    no_change(
        json!({"hostNetwork": false, "hostPID": false, "containers": [{"name": "a", "image": "agent:1",
            "ports": [{"containerPort": 80, "hostPort": 0, "hostIP": ""}],
            "env": [{"name": "EMPTY", "value": ""}],
            "livenessProbe": {"httpGet": {"port": 80}, "initialDelaySeconds": 0},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": false, "subPath": ""}]}],
            "volumes": [{"name": "data", "emptyDir": {"medium": ""}}]}),
        json!({"containers": [{"name": "a", "image": "agent:1",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "env": [{"name": "EMPTY"}],
            "livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "failureThreshold": 3,
                "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}]}),
    );
}

#[test]
fn adoption_server_defaults_written_out_are_no_difference() {
    no_change(
        json!({"serviceAccount": "agent", "containers": [{"name": "a", "image": "agent:1"}],
            "volumes": [{"name": "cfg", "configMap": {"name": "agent"}},
                {"name": "host", "hostPath": {"path": "/var/log"}},
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}),
        json!({"serviceAccount": "agent", "serviceAccountName": "agent",
            "containers": [{"name": "a", "image": "agent:1"}],
            "volumes": [{"name": "cfg", "configMap": {"name": "agent", "defaultMode": 420}},
                {"name": "host", "hostPath": {"path": "/var/log", "type": ""}},
                {"name": "token", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}}]}),
    );
}

#[test]
fn adoption_fields_of_disabled_feature_gates_are_dropped() {
    // `ContainerStopSignals` is alpha in v1.35: the API server dropped the field.
    no_change(
        json!({"containers": [{"name": "a", "image": "agent:1", "lifecycle": {"stopSignal": "SIGUSR1"}}]}),
        json!({"containers": [{"name": "a", "image": "agent:1"}]}),
    );
}

#[test]
fn adoption_real_difference_is_listed_with_both_values() {
    let plan = adopt(
        git(json!({"containers": [{"name": "a", "image": "agent:2",
            "resources": {"limits": {"memory": "512Mi"}}}]})),
        stored(json!({"containers": [{"name": "a", "image": "agent:1",
            "resources": {"limits": {"memory": "0.5Gi"}}}]})),
    );
    assert_eq!(plan.live, LiveComparison::Differs);
    let diff = plan.live_diff.expect("differences");
    let fields: Vec<(&str, Option<&str>, Option<&str>)> = diff
        .fields
        .iter()
        .map(|f| (f.path.as_str(), f.git.as_deref(), f.live.as_deref()))
        .collect();
    // 0.5Gi is 512Mi: only the image differs.
    assert_eq!(
        fields,
        [(
            "spec.template.spec.containers[0].image",
            Some("\"agent:2\""),
            Some("\"agent:1\"")
        )]
    );
    assert!(plan.nodes.iter().all(|n| n.state == NodeState::OutOfDate));
}

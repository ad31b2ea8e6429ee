//! Validation tests, one family at a time, each named after the upstream rule: a manifest the
//! API server rejects (with its path and message) and one it accepts.

use k8s_openapi::api::apps::v1::DaemonSet;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::validate;
use crate::manifest::{LoadOptions, apply_defaults, load_str};

/// A valid DaemonSet whose pod spec is `spec` merged over one container `c`.
fn with_spec(spec: Value) -> Value {
    let mut v = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "c", "image": "agent:1"}]}
            }
        }
    });
    if let (Some(target), Value::Object(extra)) =
        (v["spec"]["template"]["spec"].as_object_mut(), spec)
    {
        target.extend(extra);
    }
    v
}

/// The same with the one container's fields merged in.
fn with_container(fields: Value) -> Value {
    let mut c = json!({"name": "c", "image": "agent:1"});
    if let (Some(target), Value::Object(extra)) = (c.as_object_mut(), fields) {
        target.extend(extra);
    }
    with_spec(json!({"containers": [c]}))
}

fn errors(v: Value) -> Vec<String> {
    let mut ds: DaemonSet = serde_json::from_value(v).expect("test DaemonSet");
    apply_defaults(&mut ds);
    validate(&ds).iter().map(ToString::to_string).collect()
}

/// Asserts that an error starts with `expected` (path, kind, value and message).
#[track_caller]
fn rejects(v: Value, expected: &str) {
    let errs = errors(v);
    assert!(
        errs.iter().any(|e| e.starts_with(expected)),
        "expected an error starting with\n  {expected}\ngot\n  {}",
        errs.join("\n  ")
    );
}

#[track_caller]
fn accepts(v: Value) {
    let errs = errors(v);
    assert!(
        errs.is_empty(),
        "expected no errors, got\n  {}",
        errs.join("\n  ")
    );
}

const T: &str = "spec.template.spec";

// ---------------------------------------------------------------------------------------------
// affinity

#[test]
fn validate_node_selector_requirement_rejects_lower_case_in() {
    // The destructive case: `in` is not `In`. Accepting it would make every node fail the
    // term, and plan would propose deleting the pod on every node.
    let affinity = |op: &str| {
        with_spec(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": op, "values": ["linux"]}]}]}}}}),
        )
    };
    rejects(
        affinity("in"),
        &format!(
            "{T}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: \"in\": not a valid selector operator"
        ),
    );
    accepts(affinity("In"));
}

#[test]
fn validate_node_selector_requires_terms_and_values() {
    let na = |req: Value| {
        with_spec(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": req}}}),
        )
    };
    let terms = format!(
        "{T}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    );
    rejects(
        na(json!({"nodeSelectorTerms": []})),
        &format!("{terms}: Required value: must have at least one node selector term"),
    );
    rejects(
        na(json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]})),
        &format!(
            "{terms}[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        ),
    );
    rejects(
        na(
            json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1", "2"]}]}]}),
        ),
        &format!(
            "{terms}[0].matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
        ),
    );
    rejects(
        na(
            json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["n1"]}]}]}),
        ),
        &format!(
            "{terms}[0].matchFields[0].key: Invalid value: \"metadata.labels\": not a valid field selector key"
        ),
    );
    // An empty term is valid (it matches nothing), as upstream has it.
    accepts(na(json!({"nodeSelectorTerms": [{}]})));
    accepts(na(
        json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}),
    ));
}

#[test]
fn validate_preferred_scheduling_terms_weight_range() {
    let pref = |w: i32| {
        with_spec(
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": w, "preference": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["not a valid value!"]}]}}]}}}),
        )
    };
    rejects(
        pref(0),
        &format!(
            "{T}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"
        ),
    );
    // Preferred terms may carry values that are not label values.
    accepts(pref(100));
}

#[test]
fn validate_pod_affinity_term_requires_topology_key() {
    let term = |key: &str| {
        with_spec(
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "agent"}}, "topologyKey": key}]}}}),
        )
    };
    rejects(
        term(""),
        &format!(
            "{T}.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty"
        ),
    );
    accepts(term("kubernetes.io/hostname"));
}

#[test]
fn validate_match_label_keys_and_mismatch_label_keys() {
    let term = |keys: Value, mismatch: Value| {
        with_spec(
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "agent"}}, "topologyKey": "zone",
             "matchLabelKeys": keys, "mismatchLabelKeys": mismatch}]}}}),
        )
    };
    rejects(
        term(json!(["tier"]), json!(["tier"])),
        &format!(
            "{T}.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]: Invalid value: \"tier\": exists in both matchLabelKeys and mismatchLabelKeys"
        ),
    );
    accepts(term(json!(["tier"]), json!(["zone"])));
}

// ---------------------------------------------------------------------------------------------
// tolerations

#[test]
fn validate_tolerations_operators_effects_and_seconds() {
    let tol = |t: Value| with_spec(json!({"tolerations": [t]}));
    rejects(
        tol(json!({"key": "a", "operator": "exists"})),
        &format!(
            "{T}.tolerations[0].operator: Unsupported value: \"exists\": supported values: \"Equal\", \"Exists\""
        ),
    );
    rejects(
        tol(json!({"operator": "Equal", "value": "x"})),
        &format!(
            "{T}.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty"
        ),
    );
    rejects(
        tol(
            json!({"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}),
        ),
        &format!(
            "{T}.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"
        ),
    );
    rejects(
        tol(json!({"key": "a", "operator": "Exists", "effect": "NoScheduleNow"})),
        &format!("{T}.tolerations[0].effect: Unsupported value: \"NoScheduleNow\""),
    );
    // `TaintTolerationComparisonOperators` is off by default in v1.35.
    rejects(
        tol(json!({"key": "a", "operator": "Lt", "value": "5"})),
        &format!(
            "{T}.tolerations[0].operator: Unsupported value: \"Lt\": supported values: \"Equal\", \"Exists\", \"Lt\", \"Gt\""
        ),
    );
    accepts(tol(json!({"operator": "Exists"})));
    accepts(tol(
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
    ));
}

#[test]
fn validate_tolerations_comparison_operators_with_the_gate_on() {
    let gates = super::Gates {
        taint_toleration_comparison_operators: true,
        ..super::Gates::default()
    };
    let errors_with = |value: &str| -> Vec<String> {
        let v = with_spec(json!({"tolerations": [{"key": "a", "operator": "Gt", "value": value}]}));
        let mut ds: DaemonSet = serde_json::from_value(v).expect("test DaemonSet");
        apply_defaults(&mut ds);
        super::validate_with(&ds, &gates)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        errors_with("07"),
        [format!(
            "{T}.tolerations[0].value: Invalid value: \"07\": must be a valid decimal integer in canonical form"
        )]
    );
    assert_eq!(
        errors_with("5x"),
        [
            format!(
                "{T}.tolerations[0].value: Invalid value: \"5x\": must be a valid decimal integer in canonical form"
            ),
            format!(
                "{T}.tolerations[0].value: Invalid value: \"5x\": strconv.ParseInt: parsing \"5x\": invalid syntax"
            ),
        ]
    );
    assert_eq!(
        errors_with("99999999999999999999"),
        [format!(
            "{T}.tolerations[0].value: Invalid value: \"99999999999999999999\": strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        )]
    );
    assert!(errors_with("-5").is_empty());
    assert!(errors_with("0").is_empty());
}

// ---------------------------------------------------------------------------------------------
// topology spread

#[test]
fn validate_topology_spread_constraints() {
    let tsc = |c: Value| with_spec(json!({"topologySpreadConstraints": [c]}));
    rejects(
        tsc(json!({"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"})),
        &format!(
            "{T}.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"
        ),
    );
    rejects(
        tsc(json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Never"})),
        &format!(
            "{T}.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Never\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
        ),
    );
    rejects(
        tsc(
            json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}),
        ),
        &format!(
            "{T}.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"
        ),
    );
    rejects(
        with_spec(json!({"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})),
        &format!(
            "{T}.topologySpreadConstraints[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: \"{{zone, DoNotSchedule}}\""
        ),
    );
    accepts(tsc(
        json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "agent"}}, "matchLabelKeys": ["pod-template-hash"]}),
    ));
}

// ---------------------------------------------------------------------------------------------
// dns and host aliases

#[test]
fn validate_node_inclusion_policies() {
    let spread = |policy: &str| {
        with_spec(json!({"topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "agent"}},
            "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": policy}]}))
    };
    rejects(
        spread("honor"),
        &format!(
            "{T}.topologySpreadConstraints[0].nodeTaintsPolicy: Unsupported value: \"honor\": supported values: \"Honor\", \"Ignore\""
        ),
    );
    accepts(spread("Ignore"));
}

#[test]
fn validate_dns_policy_and_config() {
    rejects(
        with_spec(json!({"dnsPolicy": "clusterFirst"})),
        &format!("{T}.dnsPolicy: Unsupported value: \"clusterFirst\""),
    );
    rejects(
        with_spec(json!({"dnsPolicy": "None"})),
        &format!(
            "{T}.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"
        ),
    );
    rejects(
        with_spec(
            json!({"dnsConfig": {"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9", "8.8.4.4"]}}),
        ),
        &format!(
            "{T}.dnsConfig.nameservers: Invalid value: [\"1.1.1.1\",\"8.8.8.8\",\"9.9.9.9\",\"8.8.4.4\"]: must not have more than 3 nameservers"
        ),
    );
    rejects(
        with_spec(json!({"dnsConfig": {"nameservers": ["dns.local"]}})),
        &format!(
            "{T}.dnsConfig.nameservers[0]: Invalid value: \"dns.local\": must be a valid IP address"
        ),
    );
    rejects(
        with_spec(json!({"dnsConfig": {"searches": ["Bad.Example"]}})),
        &format!("{T}.dnsConfig.searches[0]: Invalid value: \"Bad.Example\""),
    );
    // Underscores and a trailing dot are allowed (RelaxedDNSSearchValidation is GA).
    accepts(with_spec(
        json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.96.0.10"],
        "searches": ["_srv.example.com.", "."], "options": [{"name": "ndots", "value": "2"}]}}),
    ));
}

#[test]
fn validate_host_aliases() {
    rejects(
        with_spec(json!({"hostAliases": [{"ip": "not-an-ip", "hostnames": ["a"]}]})),
        &format!(
            "{T}.hostAliases[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        ),
    );
    rejects(
        with_spec(json!({"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["Bad_Host"]}]})),
        &format!(
            "{T}.hostAliases[0].hostnames[0]: Invalid value: \"Bad_Host\": a lowercase RFC 1123 subdomain"
        ),
    );
    accepts(with_spec(
        json!({"hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]}]}),
    ));
}

// ---------------------------------------------------------------------------------------------
// containers, init containers, probes, lifecycle

#[test]
fn validate_container_common_names_image_and_policies() {
    rejects(
        with_container(json!({"name": "Agent"})),
        &format!("{T}.containers[0].name: Invalid value: \"Agent\": a lowercase RFC 1123 label"),
    );
    rejects(
        with_container(json!({"name": "a.b"})),
        &format!("{T}.containers[0].name: Invalid value: \"a.b\": must not contain dots"),
    );
    rejects(
        with_container(json!({"image": ""})),
        &format!("{T}.containers[0].image: Required value"),
    );
    rejects(
        with_container(json!({"terminationMessagePolicy": "file"})),
        &format!(
            "{T}.containers[0].terminationMessagePolicy: Unsupported value: \"file\": supported values: \"File\", \"FallbackToLogsOnError\""
        ),
    );
    rejects(
        with_container(json!({"imagePullPolicy": "always"})),
        &format!(
            "{T}.containers[0].imagePullPolicy: Unsupported value: \"always\": supported values: \"Always\", \"IfNotPresent\", \"Never\""
        ),
    );
    accepts(with_container(
        json!({"imagePullPolicy": "Always", "terminationMessagePolicy": "FallbackToLogsOnError"}),
    ));
}

#[test]
fn validate_container_restart_policy_rules() {
    // `ContainerRestartRules` is beta and on in v1.35.
    rejects(
        with_container(json!({"restartPolicy": "Sometimes"})),
        &format!(
            "{T}.containers[0].restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\", \"OnFailure\""
        ),
    );
    rejects(
        with_container(
            json!({"restartPolicy": "Never", "restartPolicyRules": [{"action": "Restart"}]}),
        ),
        &format!(
            "{T}.containers[0].restartPolicyRules[0].exitCodes: Required value: must be specified"
        ),
    );
    rejects(
        with_container(
            json!({"restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}),
        ),
        &format!(
            "{T}.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"
        ),
    );
    accepts(with_container(
        json!({"restartPolicy": "Never", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}),
    ));
}

#[test]
fn validate_init_containers_sidecars_and_names() {
    let probe = json!({"exec": {"command": ["true"]}});
    rejects(
        with_spec(
            json!({"initContainers": [{"name": "init", "image": "x", "livenessProbe": probe}]}),
        ),
        &format!(
            "{T}.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"
        ),
    );
    rejects(
        with_spec(json!({"initContainers": [{"name": "c", "image": "x"}]})),
        &format!("{T}.initContainers[0].name: Duplicate value: \"c\""),
    );
    rejects(
        with_spec(
            json!({"initContainers": [{"name": "sidecar", "image": "x", "restartPolicy": "Always",
            "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}]}]}),
        ),
        &format!(
            "{T}.initContainers[0].restartPolicyRules: Forbidden: restartPolicyRules are not allowed for init containers with restart policy Always"
        ),
    );
    accepts(with_spec(
        json!({"initContainers": [{"name": "sidecar", "image": "x", "restartPolicy": "Always",
        "livenessProbe": probe, "readinessProbe": probe}]}),
    ));
}

#[test]
fn validate_ephemeral_containers_not_allowed_in_pod_template() {
    rejects(
        with_spec(json!({"ephemeralContainers": [{"name": "debug", "image": "busybox"}]})),
        &format!(
            "{T}.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"
        ),
    );
}

#[test]
fn validate_probe_handlers_and_thresholds() {
    rejects(
        with_container(json!({"livenessProbe": {"periodSeconds": 5}})),
        &format!("{T}.containers[0].livenessProbe: Required value: must specify a handler type"),
    );
    rejects(
        with_container(
            json!({"readinessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}}),
        ),
        &format!(
            "{T}.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"
        ),
    );
    rejects(
        with_container(
            json!({"livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}}),
        ),
        &format!("{T}.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"),
    );
    rejects(
        with_container(json!({"startupProbe": {"httpGet": {"port": "Http"}}})),
        &format!(
            "{T}.containers[0].startupProbe.httpGet.port: Invalid value: \"Http\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
        ),
    );
    rejects(
        with_container(json!({"readinessProbe": {"grpc": {"port": 70000}}})),
        &format!(
            "{T}.containers[0].readinessProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        ),
    );
    rejects(
        with_container(
            json!({"readinessProbe": {"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 5}}),
        ),
        &format!(
            "{T}.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"
        ),
    );
    rejects(
        with_container(
            json!({"livenessProbe": {"httpGet": {"port": 80, "httpHeaders": [{"name": "X Bad", "value": "1"}]}}}),
        ),
        &format!(
            "{T}.containers[0].livenessProbe.httpGet.httpHeaders: Invalid value: \"X Bad\": a valid HTTP header must consist of alphanumeric characters or '-'"
        ),
    );
    accepts(with_container(json!({
        "livenessProbe": {"httpGet": {"port": "http", "path": "/healthz"}, "initialDelaySeconds": 10},
        "readinessProbe": {"grpc": {"port": 9090}},
        "startupProbe": {"tcpSocket": {"port": 9090}, "failureThreshold": 30},
        "ports": [{"name": "http", "containerPort": 8080}]})));
}

#[test]
fn validate_lifecycle_sleep_action() {
    rejects(
        with_container(json!({"lifecycle": {"preStop": {"sleep": {"seconds": 60}}}})),
        &format!(
            "{T}.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)"
        ),
    );
    rejects(
        with_container(json!({"lifecycle": {"postStart": {}}})),
        &format!(
            "{T}.containers[0].lifecycle.postStart: Required value: must specify a handler type"
        ),
    );
    accepts(with_container(
        json!({"lifecycle": {"preStop": {"sleep": {"seconds": 0}}}}),
    ));
}

#[test]
fn validate_container_ports_and_host_port_conflicts() {
    rejects(
        with_container(
            json!({"ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}]}),
        ),
        &format!("{T}.containers[0].ports[1].name: Duplicate value: \"http\""),
    );
    rejects(
        with_container(json!({"ports": [{"containerPort": 80, "name": "this-name-is-too-long"}]})),
        &format!(
            "{T}.containers[0].ports[0].name: Invalid value: \"this-name-is-too-long\": must be no more than 15 characters"
        ),
    );
    rejects(
        with_spec(json!({"containers": [
            {"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]},
            {"name": "b", "image": "x", "ports": [{"containerPort": 81, "hostPort": 80}]}]})),
        &format!("{T}.containers[1].ports[0].hostPort: Duplicate value: \"TCP//80\""),
    );
    rejects(
        with_spec(json!({"hostNetwork": true, "containers": [
            {"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}]})),
        &format!(
            "{T}.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"
        ),
    );
    accepts(with_spec(json!({"hostNetwork": true, "containers": [
        {"name": "a", "image": "x", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP", "hostPort": 80}]}]})));
}

// ---------------------------------------------------------------------------------------------
// env and envFrom

#[test]
fn validate_env_names_and_value_from() {
    rejects(
        with_container(json!({"env": [{"name": "A=B"}]})),
        &format!(
            "{T}.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"
        ),
    );
    rejects(
        with_container(json!({"env": [{"name": "A", "valueFrom": {}}]})),
        &format!(
            "{T}.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"
        ),
    );
    rejects(
        with_container(
            json!({"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}),
        ),
        &format!(
            "{T}.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"
        ),
    );
    rejects(
        with_container(
            json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}}]}),
        ),
        &format!(
            "{T}.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"metadata.labels\": supported values: \"metadata.name\", \"metadata.namespace\""
        ),
    );
    rejects(
        with_container(
            json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodename"}}}]}),
        ),
        &format!(
            "{T}.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nodename\": error converting fieldPath: field label not supported: spec.nodename"
        ),
    );
    rejects(
        with_container(
            json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "a/b"}}}]}),
        ),
        &format!(
            "{T}.containers[0].env[0].valueFrom.secretKeyRef.key: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
        ),
    );
    accepts(with_container(json!({"env": [
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "ZONE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['topology.kubernetes.io/zone']"}}},
        {"name": "my.weird-NAME", "value": "1"},
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
        {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "key.name"}}}]})));
}

#[test]
fn validate_container_resource_divisor() {
    rejects(
        with_container(
            json!({"env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "10m"}}}]}),
        ),
        &format!(
            "{T}.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource"
        ),
    );
    rejects(
        with_container(
            json!({"env": [{"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "2Mi"}}}]}),
        ),
        &format!(
            "{T}.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.memory\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"
        ),
    );
    rejects(
        with_container(
            json!({"env": [{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}]}),
        ),
        &format!(
            "{T}.containers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.gpu\""
        ),
    );
    // 1000m is 1: the divisor is compared in its canonical form.
    accepts(with_container(
        json!({"env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1000m"}}},
        {"name": "HP", "valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages-2Mi", "divisor": "1Mi"}}}]}),
    ));
}

#[test]
fn validate_file_key_selector_and_volumes() {
    let file_ref = |volume: &str| {
        with_spec(json!({
            "volumes": [{"name": "envs", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}],
            "containers": [{"name": "c", "image": "x", "env": [{"name": "A",
                "valueFrom": {"fileKeyRef": {"volumeName": volume, "path": "app.env", "key": "A"}}}]}]
        }))
    };
    rejects(
        file_ref("cfg"),
        &format!(
            "{T}.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: \"cfg\": referenced volume must be of type emptyDir"
        ),
    );
    rejects(
        file_ref("nope"),
        &format!("{T}.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: \"nope\""),
    );
    accepts(file_ref("envs"));
}

#[test]
fn validate_env_from() {
    rejects(
        with_container(json!({"envFrom": [{"prefix": "P_"}]})),
        &format!(
            "{T}.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"
        ),
    );
    rejects(
        with_container(json!({"envFrom": [{"configMapRef": {"name": "Bad"}}]})),
        &format!("{T}.containers[0].envFrom[0].configMapRef.name: Invalid value: \"Bad\""),
    );
    accepts(with_container(
        json!({"envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}, {"secretRef": {"name": "sec"}}]}),
    ));
}

// ---------------------------------------------------------------------------------------------
// resources

#[test]
fn validate_resource_requirements_requests_not_above_limits() {
    let res = |r: Value| with_container(json!({"resources": r}));
    rejects(
        res(json!({"limits": {"cpu": "500m"}, "requests": {"cpu": "1"}})),
        &format!(
            "{T}.containers[0].resources.requests: Invalid value: \"1\": must be less than or equal to cpu limit of 500m"
        ),
    );
    // Quantities compare by value, whatever their suffix.
    accepts(res(
        json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1024Mi"}}),
    ));
}

#[test]
fn validate_resource_quantity_syntax() {
    let res = |r: Value| with_container(json!({"resources": r}));
    rejects(
        res(json!({"limits": {"memory": "1GB"}})),
        &format!(
            "{T}.containers[0].resources.limits[memory]: Invalid value: \"1GB\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ),
    );
    rejects(
        res(json!({"limits": {"memory": "1K"}})),
        &format!(
            "{T}.containers[0].resources.limits[memory]: Invalid value: \"1K\": unable to parse quantity's suffix"
        ),
    );
    rejects(
        res(json!({"requests": {"cpu": "-1"}})),
        &format!(
            "{T}.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
        ),
    );
    accepts(res(json!({"limits": {"memory": "1e9", "cpu": "0.5"}})));
}

#[test]
fn validate_container_resource_name_and_extended_resources() {
    let res = |r: Value| with_container(json!({"resources": r}));
    rejects(
        res(json!({"limits": {"gpu": "1"}})),
        &format!(
            "{T}.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified"
        ),
    );
    rejects(
        res(json!({"limits": {"example.com/gpu": "1"}, "requests": {"example.com/gpu": "2"}})),
        &format!(
            "{T}.containers[0].resources.requests: Invalid value: \"2\": must be equal to example.com/gpu limit of 1"
        ),
    );
    rejects(
        res(json!({"requests": {"example.com/gpu": "1"}})),
        &format!(
            "{T}.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
        ),
    );
    rejects(
        res(json!({"limits": {"example.com/gpu": "1500m"}})),
        &format!(
            "{T}.containers[0].resources.limits[example.com/gpu]: Invalid value: \"1500m\": must be an integer"
        ),
    );
    accepts(res(
        json!({"limits": {"example.com/gpu": "2", "nvidia.com/gpu": 1}, "requests": {"example.com/gpu": "2"}}),
    ));
}

#[test]
fn validate_resource_quantity_huge_page_value() {
    let res = |r: Value| with_container(json!({"resources": r}));
    rejects(
        res(json!({"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}})),
        &format!(
            "{T}.containers[0].resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi"
        ),
    );
    rejects(
        res(json!({"limits": {"hugepages-2Mi": "4Mi"}})),
        &format!("{T}.containers[0].resources: Forbidden: HugePages require cpu or memory"),
    );
    accepts(res(
        json!({"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}),
    ));
}

#[test]
fn validate_resource_claim_names() {
    rejects(
        with_container(json!({"resources": {"claims": [{"name": "gpu"}]}})),
        &format!(
            "{T}.containers[0].resources.claims[0]: Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims which is empty"
        ),
    );
    accepts(with_spec(json!({
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]})));
}

#[test]
fn validate_pod_resources_and_overhead() {
    rejects(
        with_spec(json!({"resources": {"requests": {"cpu": "100m"}},
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "200m"}}}]})),
        &format!(
            "{T}.resources.requests[cpu]: Invalid value: \"100m\": must be greater than or equal to aggregate container requests of 200m"
        ),
    );
    rejects(
        with_spec(json!({"resources": {"limits": {"ephemeral-storage": "1Gi"}}})),
        &format!(
            "{T}.resources.limits[ephemeral-storage]: Unsupported value: \"ephemeral-storage\": supported values: \"cpu\", \"memory\""
        ),
    );
    rejects(
        with_spec(json!({"overhead": {"cpu": "x"}})),
        &format!("{T}.overhead.limits[cpu]: Invalid value: \"x\""),
    );
    accepts(with_spec(
        json!({"resources": {"requests": {"cpu": "1"}, "limits": {"memory": "2Gi"}},
        "overhead": {"cpu": "250m"},
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}}]}),
    ));
}

// ---------------------------------------------------------------------------------------------
// volumes and mounts

#[test]
fn validate_volumes_names_sources_and_duplicates() {
    rejects(
        with_spec(
            json!({"volumes": [{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}]}),
        ),
        &format!("{T}.volumes[1].name: Duplicate value: \"a\""),
    );
    rejects(
        with_spec(
            json!({"volumes": [{"name": "a", "hostPath": {"path": "/a"}, "configMap": {"name": "c"}}]}),
        ),
        &format!("{T}.volumes[0].configMap: Forbidden: may not specify more than 1 volume type"),
    );
    rejects(
        with_spec(json!({"volumes": [{"name": "a", "hostPath": {"path": "/var/../etc"}}]})),
        &format!(
            "{T}.volumes[0].hostPath.path: Invalid value: \"/var/../etc\": must not contain '..'"
        ),
    );
    rejects(
        with_spec(
            json!({"volumes": [{"name": "a", "hostPath": {"path": "/run", "type": "directory"}}]}),
        ),
        &format!("{T}.volumes[0].hostPath.type: Unsupported value: \"directory\""),
    );
    rejects(
        with_spec(json!({"volumes": [{"name": "a", "nfs": {"server": "nfs", "path": "share"}}]})),
        &format!("{T}.volumes[0].nfs.path: Invalid value: \"share\": must be an absolute path"),
    );
    rejects(
        with_spec(
            json!({"volumes": [{"name": "a", "secret": {"secretName": "s", "defaultMode": 1000}}]}),
        ),
        &format!(
            "{T}.volumes[0].secret.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive"
        ),
    );
    rejects(
        with_spec(
            json!({"volumes": [{"name": "a", "configMap": {"name": "c", "items": [{"key": "k", "path": "/abs"}]}}]}),
        ),
        &format!(
            "{T}.volumes[0].configMap.items[0].path: Invalid value: \"/abs\": must be a relative path"
        ),
    );
    rejects(
        with_spec(json!({"volumes": [{"name": "a", "csi": {"driver": "Bad_Driver"}}]})),
        &format!("{T}.volumes[0].csi.driver: Invalid value: \"Bad_Driver\""),
    );
    rejects(
        with_spec(
            json!({"volumes": [{"name": "a", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "bogus", "lun": 0}}]}),
        ),
        &format!(
            "{T}.volumes[0].iscsi.iqn: Invalid value: \"bogus\": must be valid format starting with iqn, eui, or naa"
        ),
    );
    accepts(with_spec(json!({"volumes": [
        {"name": "a", "hostPath": {"path": "/var/log", "type": "DirectoryOrCreate"}},
        {"name": "b", "configMap": {"name": "c", "items": [{"key": "k", "path": "k.conf", "mode": 420}]}},
        {"name": "c", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "d", "csi": {"driver": "secrets-store.csi.k8s.io", "readOnly": true}},
        {"name": "e", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage.disk1", "lun": 0}},
        {"name": "f", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"name": "g"}]})));
}

/// `validateVolumeSource` and each volume type's own validator: one source upstream refuses
/// (path and message) and one it accepts, for every type not covered above.
#[test]
fn validate_volume_source_every_type() {
    let v = |source: Value| with_spec(json!({"volumes": [source]}));
    let cases = [
        (
            json!({"name": "a", "emptyDir": {"sizeLimit": "-1Gi"}}),
            "volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
            json!({"name": "a", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}),
        ),
        (
            json!({"name": "a", "gitRepo": {"repository": "", "directory": "../x"}}),
            "volumes[0].gitRepo.repository: Required value",
            json!({"name": "a", "gitRepo": {"repository": "https://example.com/r.git", "directory": "."}}),
        ),
        (
            json!({"name": "a", "gitRepo": {"repository": "r", "directory": "../x"}}),
            "volumes[0].gitRepo.directory: Invalid value: \"../x\": must not contain '..'",
            json!({"name": "a", "gitRepo": {"repository": "r", "directory": "x"}}),
        ),
        (
            json!({"name": "a", "gcePersistentDisk": {"pdName": ""}}),
            "volumes[0].persistentDisk.pdName: Required value",
            json!({"name": "a", "gcePersistentDisk": {"pdName": "disk", "partition": 1}}),
        ),
        (
            json!({"name": "a", "awsElasticBlockStore": {"volumeID": "vol", "partition": 256}}),
            "volumes[0].awsElasticBlockStore.partition: Invalid value: 256: must be between 1 and 255, inclusive",
            json!({"name": "a", "awsElasticBlockStore": {"volumeID": "vol", "partition": 255}}),
        ),
        (
            json!({"name": "a", "glusterfs": {"endpoints": "", "path": "p"}}),
            "volumes[0].glusterfs.endpoints: Required value",
            json!({"name": "a", "glusterfs": {"endpoints": "ep", "path": "p"}}),
        ),
        (
            json!({"name": "a", "flocker": {}}),
            "volumes[0].flocker: Required value: one of datasetName and datasetUUID is required",
            json!({"name": "a", "flocker": {"datasetName": "data"}}),
        ),
        (
            json!({"name": "a", "persistentVolumeClaim": {"claimName": ""}}),
            "volumes[0].persistentVolumeClaim.claimName: Required value",
            json!({"name": "a", "persistentVolumeClaim": {"claimName": "claim"}}),
        ),
        (
            json!({"name": "a", "rbd": {"monitors": [], "image": "img"}}),
            "volumes[0].rbd.monitors: Required value",
            json!({"name": "a", "rbd": {"monitors": ["10.0.0.1:6789"], "image": "img"}}),
        ),
        (
            json!({"name": "a", "cinder": {"volumeID": ""}}),
            "volumes[0].cinder.volumeID: Required value",
            json!({"name": "a", "cinder": {"volumeID": "vol"}}),
        ),
        (
            json!({"name": "a", "cephfs": {"monitors": []}}),
            "volumes[0].cephfs.monitors: Required value",
            json!({"name": "a", "cephfs": {"monitors": ["10.0.0.1:6789"]}}),
        ),
        (
            json!({"name": "a", "quobyte": {"registry": "no-port", "volume": "v"}}),
            "volumes[0].quobyte.registry: Invalid value: \"no-port\": must be a host:port pair or multiple pairs separated by commas",
            json!({"name": "a", "quobyte": {"registry": "q1:7861,q2:7861", "volume": "v"}}),
        ),
        (
            json!({"name": "a", "fc": {}}),
            "volumes[0].fc.targetWWNs: Required value: must specify either targetWWNs or wwids, but not both",
            json!({"name": "a", "fc": {"targetWWNs": ["500a0982991b8dc5"], "lun": 2}}),
        ),
        (
            json!({"name": "a", "flexVolume": {"driver": "acme/flex", "options": {"kubernetes.io/x": "y"}}}),
            "volumes[0].flexVolume.options[kubernetes.io/x]: Invalid value: \"kubernetes.io/x\": kubernetes.io and k8s.io namespaces are reserved",
            json!({"name": "a", "flexVolume": {"driver": "acme/flex", "options": {"acme.com/x": "y"}}}),
        ),
        (
            json!({"name": "a", "azureFile": {"secretName": "", "shareName": "share"}}),
            "volumes[0].azureFile.secretName: Required value",
            json!({"name": "a", "azureFile": {"secretName": "s", "shareName": "share"}}),
        ),
        (
            json!({"name": "a", "vsphereVolume": {"volumePath": ""}}),
            "volumes[0].vsphereVolume.volumePath: Required value",
            json!({"name": "a", "vsphereVolume": {"volumePath": "[ds] volumes/v.vmdk"}}),
        ),
        (
            json!({"name": "a", "photonPersistentDisk": {"pdID": ""}}),
            "volumes[0].photonPersistentDisk.pdID: Required value",
            json!({"name": "a", "photonPersistentDisk": {"pdID": "pd"}}),
        ),
        (
            json!({"name": "a", "portworxVolume": {"volumeID": ""}}),
            "volumes[0].portworxVolume.volumeID: Required value",
            json!({"name": "a", "portworxVolume": {"volumeID": "vol"}}),
        ),
        (
            json!({"name": "a", "azureDisk": {"diskName": "d", "diskURI": "https://a.blob.core.windows.net/c/d.vhd", "kind": "Managed"}}),
            "volumes[0].azureDisk.diskURI: Unsupported value: \"https://a.blob.core.windows.net/c/d.vhd\": supported values: \"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}\"",
            json!({"name": "a", "azureDisk": {"diskName": "d", "diskURI": "https://a.blob.core.windows.net/c/d.vhd", "kind": "Shared"}}),
        ),
        (
            json!({"name": "a", "storageos": {"volumeName": "Bad_Name"}}),
            "volumes[0].storageos.volumeName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label",
            json!({"name": "a", "storageos": {"volumeName": "vol", "volumeNamespace": "ns"}}),
        ),
        (
            json!({"name": "a", "scaleIO": {"gateway": "", "system": "sys", "volumeName": "v", "secretRef": {"name": "s"}}}),
            "volumes[0].scaleIO.gateway: Required value",
            json!({"name": "a", "scaleIO": {"gateway": "https://gw/api", "system": "sys", "volumeName": "v", "secretRef": {"name": "s"}}}),
        ),
        (
            json!({"name": "a", "image": {"reference": "registry/artifact:1", "pullPolicy": "Sometimes"}}),
            "volumes[0].image.pullPolicy: Unsupported value: \"Sometimes\"",
            json!({"name": "a", "image": {"reference": "registry/artifact:1", "pullPolicy": "Always"}}),
        ),
        (
            // A second source is refused where it is met; upstream spells this one `downwarAPI`.
            json!({"name": "a", "emptyDir": {}, "downwardAPI": {}}),
            "volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type",
            json!({"name": "a", "downwardAPI": {"defaultMode": 420}}),
        ),
    ];
    for (bad, expected, good) in cases {
        rejects(v(bad), &format!("{T}.{expected}"));
        accepts(v(good));
    }
}

#[test]
fn validate_projected_volume_source_token_limits() {
    let token = |t: Value| {
        with_spec(
            json!({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": t}]}}]}),
        )
    };
    rejects(
        token(json!({"path": "token", "expirationSeconds": 60})),
        &format!(
            "{T}.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        ),
    );
    rejects(
        token(json!({"path": "token", "expirationSeconds": 5_000_000_000i64})),
        &format!(
            "{T}.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 5000000000: may not specify a duration larger than 2^32 seconds"
        ),
    );
    rejects(
        token(json!({"path": "../token"})),
        &format!(
            "{T}.volumes[0].projected.path: Invalid value: \"../token\": must not contain '..'"
        ),
    );
    rejects(
        with_spec(json!({"volumes": [{"name": "t", "projected": {"sources": [
            {"configMap": {"name": "a", "items": [{"key": "k", "path": "same"}]}},
            {"secret": {"name": "b", "items": [{"key": "k", "path": "same"}]}}]}}]})),
        &format!("{T}.volumes[0].projected: Invalid value: \"b\": conflicting duplicate paths"),
    );
    accepts(token(
        json!({"path": "token", "audience": "vault", "expirationSeconds": 7200}),
    ));
}

#[test]
fn validate_ephemeral_volume_source_claim_template() {
    let eph = |spec: Value| {
        with_spec(
            json!({"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}]}),
        )
    };
    rejects(
        eph(json!({"resources": {"requests": {"storage": "1Gi"}}})),
        &format!(
            "{T}.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Required value: at least 1 access mode is required"
        ),
    );
    rejects(
        eph(json!({"accessModes": ["ReadWriteOnce"]})),
        &format!(
            "{T}.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]: Required value"
        ),
    );
    rejects(
        eph(
            json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}),
        ),
        &format!(
            "{T}.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"
        ),
    );
    accepts(eph(
        json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}),
    ));
}

#[test]
fn validate_volume_mounts_unique_sub_path_and_propagation() {
    let mounts = |m: Value, privileged: bool| {
        with_spec(
            json!({"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}],
            "containers": [{"name": "c", "image": "x", "volumeMounts": m,
                "securityContext": {"privileged": privileged}}]}),
        )
    };
    rejects(
        mounts(
            json!([{"name": "a", "mountPath": "/m"}, {"name": "b", "mountPath": "/m"}]),
            false,
        ),
        &format!(
            "{T}.containers[0].volumeMounts[1].mountPath: Invalid value: \"/m\": must be unique"
        ),
    );
    rejects(
        mounts(
            json!([{"name": "a", "mountPath": "/m", "subPath": "../x"}]),
            false,
        ),
        &format!(
            "{T}.containers[0].volumeMounts.subPath: Invalid value: \"../x\": must not contain '..'"
        ),
    );
    rejects(
        mounts(
            json!([{"name": "a", "mountPath": "/m", "mountPropagation": "Bidirectional"}]),
            false,
        ),
        &format!(
            "{T}.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"
        ),
    );
    rejects(
        mounts(
            json!([{"name": "a", "mountPath": "/m", "mountPropagation": "bidirectional"}]),
            true,
        ),
        &format!(
            "{T}.containers[0].volumeMounts.mountPropagation: Unsupported value: \"bidirectional\""
        ),
    );
    rejects(
        mounts(
            json!([{"name": "a", "mountPath": "/m", "recursiveReadOnly": "Enabled"}]),
            false,
        ),
        &format!(
            "{T}.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"
        ),
    );
    rejects(
        mounts(json!([{"name": "z", "mountPath": "/m"}]), false),
        &format!("{T}.containers[0].volumeMounts[0].name: Not found: \"z\""),
    );
    accepts(mounts(
        json!([{"name": "a", "mountPath": "/m", "mountPropagation": "Bidirectional"},
        {"name": "b", "mountPath": "/n", "subPathExpr": "$(POD_NAME)", "readOnly": true, "recursiveReadOnly": "IfPossible"}]),
        true,
    ));
}

#[test]
fn validate_volume_devices_need_claims() {
    rejects(
        with_spec(json!({"volumes": [{"name": "a", "emptyDir": {}}],
            "containers": [{"name": "c", "image": "x", "volumeDevices": [{"name": "a", "devicePath": "/dev/xvda"}]}]})),
        &format!(
            "{T}.containers[0].volumeDevices[0].name: Invalid value: \"a\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"
        ),
    );
    accepts(with_spec(
        json!({"volumes": [{"name": "a", "persistentVolumeClaim": {"claimName": "disk"}}],
        "containers": [{"name": "c", "image": "x", "volumeDevices": [{"name": "a", "devicePath": "/dev/xvda"}]}]}),
    ));
}

// ---------------------------------------------------------------------------------------------
// security contexts, sysctls, seccomp, AppArmor, Windows, OS

#[test]
fn validate_security_context_ids_proc_mount_and_escalation() {
    let sc = |s: Value| with_container(json!({"securityContext": s}));
    rejects(
        sc(json!({"runAsUser": -1})),
        &format!(
            "{T}.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive"
        ),
    );
    rejects(
        sc(json!({"procMount": "Unmasked"})),
        &format!(
            "{T}.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"
        ),
    );
    rejects(
        sc(json!({"allowPrivilegeEscalation": false, "privileged": true})),
        &format!("{T}.containers[0].securityContext: Invalid value: "),
    );
    accepts(sc(
        json!({"runAsUser": 0, "privileged": true, "capabilities": {"add": ["NET_ADMIN", "SYS_ADMIN"]}}),
    ));
}

#[test]
fn validate_pod_spec_security_context() {
    rejects(
        with_spec(json!({"securityContext": {"fsGroup": 4294967296i64}})),
        &format!(
            "{T}.securityContext.fsGroup: Invalid value: 4294967296: must be between 0 and 2147483647, inclusive"
        ),
    );
    rejects(
        with_spec(json!({"hostPID": true, "shareProcessNamespace": true})),
        &format!(
            "{T}.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"
        ),
    );
    rejects(
        with_spec(json!({"securityContext": {"fsGroupChangePolicy": "always"}})),
        &format!(
            "{T}.securityContext.fsGroupChangePolicy: Unsupported value: \"always\": supported values: \"Always\", \"OnRootMismatch\""
        ),
    );
    accepts(with_spec(
        json!({"securityContext": {"fsGroup": 2000, "runAsNonRoot": true,
        "supplementalGroups": [1, 2], "supplementalGroupsPolicy": "Strict", "seLinuxChangePolicy": "MountOption"}}),
    ));
}

#[test]
fn validate_sysctls() {
    let sysctls = |s: Value, host_network: bool| {
        with_spec(json!({"hostNetwork": host_network, "securityContext": {"sysctls": s}}))
    };
    rejects(
        sysctls(
            json!([{"name": "net.core.somaxconn", "value": "1024"}]),
            true,
        ),
        &format!(
            "{T}.securityContext.sysctls[0].name: Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true"
        ),
    );
    rejects(
        sysctls(json!([{"name": "Kernel.x", "value": "1"}]), false),
        &format!(
            "{T}.securityContext.sysctls[0].name: Invalid value: \"Kernel.x\": must have at most 253 characters and match regex"
        ),
    );
    rejects(
        sysctls(
            json!([{"name": "kernel.shm_rmid_forced", "value": "1"}, {"name": "kernel.shm_rmid_forced", "value": "0"}]),
            false,
        ),
        &format!(
            "{T}.securityContext.sysctls[1].name: Duplicate value: \"kernel.shm_rmid_forced\""
        ),
    );
    accepts(sysctls(
        json!([{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}, {"name": "kernel.shm_rmid_forced", "value": "1"}]),
        false,
    ));
}

#[test]
fn validate_seccomp_profile_field_and_annotations() {
    rejects(
        with_spec(json!({"securityContext": {"seccompProfile": {"type": "Localhost"}}})),
        &format!(
            "{T}.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"
        ),
    );
    rejects(
        with_container(json!({"securityContext": {"seccompProfile": {"type": "runtimeDefault"}}})),
        &format!(
            "{T}.containers[0].securityContext.seccompProfile.type: Unsupported value: \"runtimeDefault\""
        ),
    );
    let mut v =
        with_spec(json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}));
    v["spec"]["template"]["metadata"]["annotations"] =
        json!({"seccomp.security.alpha.kubernetes.io/pod": "unconfined"});
    rejects(
        v,
        &format!(
            "{T}.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match"
        ),
    );
    let mut v =
        with_spec(json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}));
    v["spec"]["template"]["metadata"]["annotations"] =
        json!({"seccomp.security.alpha.kubernetes.io/pod": "runtime/default"});
    accepts(v);
}

#[test]
fn validate_app_armor_profile_field_and_annotations() {
    rejects(
        with_container(
            json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "x"}}}),
        ),
        &format!(
            "{T}.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: \"x\": can only be set when AppArmor type is Localhost"
        ),
    );
    let mut v = with_container(json!({}));
    v["spec"]["template"]["metadata"]["annotations"] =
        json!({"container.apparmor.security.beta.kubernetes.io/other": "runtime/default"});
    rejects(
        v,
        "spec.template.annotations[container.apparmor.security.beta.kubernetes.io/other]: Invalid value: \"other\": container not found",
    );
    let mut v = with_container(
        json!({"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-agent"}}}),
    );
    v["spec"]["template"]["metadata"]["annotations"] =
        json!({"container.apparmor.security.beta.kubernetes.io/c": "localhost/k8s-agent"});
    accepts(v);
}

#[test]
fn validate_os_linux_and_windows_rules() {
    rejects(
        with_spec(json!({"os": {"name": "Linux"}})),
        &format!("{T}.os: Unsupported value: \"Linux\": supported values: \"linux\", \"windows\""),
    );
    rejects(
        with_spec(json!({"os": {"name": "windows"}, "hostPID": true})),
        &format!("{T}.hostPID: Forbidden: cannot be set for a windows pod"),
    );
    rejects(
        with_spec(
            json!({"os": {"name": "linux"}, "securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}),
        ),
        &format!(
            "{T}.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod"
        ),
    );
    accepts(with_spec(
        json!({"os": {"name": "windows"}, "securityContext": {"windowsOptions": {"runAsUserName": "NT AUTHORITY\\SYSTEM"}}}),
    ));
}

#[test]
fn validate_windows_host_process_pod() {
    let hp = |host_network: bool| {
        with_spec(
            json!({"hostNetwork": host_network, "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}}}),
        )
    };
    rejects(
        hp(false),
        &format!(
            "{T}.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers"
        ),
    );
    rejects(
        with_container(
            json!({"securityContext": {"windowsOptions": {"runAsUserName": "a\\b\\c"}}}),
        ),
        &format!(
            "{T}.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: \"a\\\\b\\\\c\": runAsUserName cannot contain more than one backslash"
        ),
    );
    accepts(hp(true));
}

// ---------------------------------------------------------------------------------------------
// pod-level rules

#[test]
fn validate_readiness_and_scheduling_gates() {
    rejects(
        with_spec(json!({"readinessGates": [{"conditionType": "bad type"}]})),
        &format!(
            "{T}.readinessGates[0].conditionType: Invalid value: \"bad type\": name part must consist of"
        ),
    );
    rejects(
        with_spec(json!({"schedulingGates": [{"name": "a"}, {"name": "a"}]})),
        &format!("{T}.schedulingGates[1]: Duplicate value: \"a\""),
    );
    accepts(with_spec(
        json!({"readinessGates": [{"conditionType": "example.com/ready"}], "schedulingGates": [{"name": "example.com/gate"}]}),
    ));
}

#[test]
fn validate_runtime_class_priority_class_and_names() {
    rejects(
        with_spec(json!({"runtimeClassName": "Kata"})),
        &format!("{T}.runtimeClassName: Invalid value: \"Kata\": a lowercase RFC 1123 subdomain"),
    );
    rejects(
        with_spec(json!({"priorityClassName": "system_node"})),
        &format!("{T}.priorityClassName: Invalid value: \"system_node\""),
    );
    rejects(
        with_spec(json!({"serviceAccountName": "Agent"})),
        &format!("{T}.serviceAccountName: Invalid value: \"Agent\""),
    );
    rejects(
        with_spec(json!({"preemptionPolicy": "never"})),
        &format!(
            "{T}.preemptionPolicy: Unsupported value: \"never\": supported values: \"PreemptLowerPriority\", \"Never\""
        ),
    );
    accepts(with_spec(
        json!({"runtimeClassName": "kata", "priorityClassName": "system-node-critical",
        "serviceAccountName": "agent", "preemptionPolicy": "Never", "hostname": "agent", "subdomain": "nodes"}),
    ));
}

#[test]
fn validate_host_users_and_hostname_override() {
    rejects(
        with_spec(json!({"hostUsers": false, "hostNetwork": true})),
        &format!("{T}.hostNetwork: Forbidden: when `hostUsers` is false"),
    );
    rejects(
        with_spec(json!({"hostnameOverride": "Bad_Name"})),
        &format!("{T}.hostnameOverride: Invalid value: \"Bad_Name\""),
    );
    rejects(
        with_spec(json!({"hostnameOverride": "agent", "hostNetwork": true})),
        &format!("{T}.hostnameOverride: Forbidden: may not be specified when hostNetwork is true"),
    );
    accepts(with_spec(
        json!({"hostUsers": false, "hostnameOverride": "agent.example"}),
    ));
}

#[test]
fn validate_pod_specific_annotations() {
    let ann = |a: Value| {
        let mut v = with_spec(json!({}));
        v["spec"]["template"]["metadata"]["annotations"] = a;
        v
    };
    rejects(
        ann(json!({"controller.kubernetes.io/pod-deletion-cost": "+10"})),
        "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"+10\": must be a 32bit integer",
    );
    rejects(
        ann(json!({"seccomp.security.alpha.kubernetes.io/pod": "default"})),
        "spec.template.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: \"default\": must be a valid seccomp profile",
    );
    rejects(
        ann(
            json!({"scheduler.alpha.kubernetes.io/tolerations": "[{\"key\": \"a\", \"operator\": \"Is\"}]"}),
        ),
        "spec.template.annotations.scheduler.alpha.kubernetes.io/tolerations[0].operator: Unsupported value: \"Is\"",
    );
    accepts(ann(
        json!({"controller.kubernetes.io/pod-deletion-cost": "-5",
        "seccomp.security.alpha.kubernetes.io/pod": "localhost/profiles/agent.json"}),
    ));
}

#[test]
fn validate_pod_template_labels_and_annotations() {
    let mut v = with_spec(json!({}));
    v["spec"]["template"]["metadata"]["labels"]["bad key"] = json!("x");
    rejects(
        v,
        "spec.template.labels: Invalid value: \"bad key\": name part must consist of",
    );
    let mut v = with_spec(json!({}));
    v["spec"]["template"]["metadata"]["annotations"] = json!({"big": "x".repeat(300 * 1024)});
    rejects(
        v,
        "spec.template.annotations: Too long: may not be more than 262144 bytes",
    );
}

#[test]
fn validate_windows_security_context_options() {
    let windows =
        |options: Value| with_container(json!({"securityContext": {"windowsOptions": options}}));
    const W: &str = "containers[0].securityContext.windowsOptions";
    rejects(
        windows(json!({"gmsaCredentialSpecName": "Bad_Name"})),
        &format!(
            "{T}.{W}.gmsaCredentialSpecName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ),
    );
    rejects(
        windows(json!({"gmsaCredentialSpec": ""})),
        &format!(
            "{T}.{W}.gmsaCredentialSpec: Invalid value: \"\": gmsaCredentialSpec cannot be an empty string"
        ),
    );
    rejects(
        windows(json!({"runAsUserName": "a\\b\\c"})),
        &format!(
            "{T}.{W}.runAsUserName: Invalid value: \"a\\\\b\\\\c\": runAsUserName cannot contain more than one backslash"
        ),
    );
    accepts(windows(json!({
        "gmsaCredentialSpecName": "webapp-gmsa",
        "gmsaCredentialSpec": "{\"CmsPlugins\":[\"ActiveDirectory\"]}",
        "runAsUserName": "NT AUTHORITY\\NETWORK SERVICE"
    })));
}

#[test]
fn validate_owner_references_and_finalizers() {
    let meta = |extra: Value| {
        let mut v = with_spec(json!({}));
        if let (Some(m), Value::Object(extra)) = (v["metadata"].as_object_mut(), extra) {
            m.extend(extra);
        }
        v
    };
    let owner = |api_version: &str, kind: &str| json!({"ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": "o", "uid": "1"}]});
    rejects(
        meta(owner("apps/v1", "")),
        "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
    );
    rejects(
        meta(owner("a/b/v1", "Thing")),
        "metadata.ownerReferences.apiVersion: Invalid value: \"a/b/v1\": version must not be empty",
    );
    rejects(
        meta(owner("v1", "Event")),
        "metadata.ownerReferences: Invalid value: ",
    );
    rejects(
        meta(json!({"finalizers": ["cleanup"]})),
        "metadata.finalizers[0]: Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it fully qualified",
    );
    rejects(
        meta(json!({"finalizers": ["orphan", "foregroundDeletion"]})),
        "metadata.finalizers: Invalid value: ",
    );
    accepts(meta(owner("example.com/v1", "Agent")));
    accepts(meta(
        json!({"finalizers": ["example.com/cleanup", "orphan"]}),
    ));
}

#[test]
fn validate_resize_policy() {
    let resize = |policy: Value| with_container(json!({"resizePolicy": policy}));
    rejects(
        resize(json!([{"resourceName": "cpu", "restartPolicy": "Sometimes"}])),
        &format!(
            "{T}.containers[0].resizePolicy: Unsupported value: \"Sometimes\": supported values: \"NotRequired\", \"RestartContainer\""
        ),
    );
    rejects(
        resize(json!([{"resourceName": "gpu", "restartPolicy": "NotRequired"}])),
        &format!(
            "{T}.containers[0].resizePolicy: Unsupported value: \"gpu\": supported values: \"cpu\", \"memory\""
        ),
    );
    rejects(
        resize(json!([
            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
            {"resourceName": "cpu", "restartPolicy": "RestartContainer"}
        ])),
        &format!("{T}.containers[0].resizePolicy[1]: Duplicate value: \"cpu\""),
    );
    accepts(resize(json!([
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "memory", "restartPolicy": "RestartContainer"}
    ])));
}

#[test]
fn identical_errors_are_reported_once() {
    // Two label values with the same problem give the same message at the same path: the API
    // server prints it once.
    let mut v = with_spec(json!({}));
    v["metadata"]["labels"] = json!({"a": "bad value", "b": "bad value"});
    let errs = errors(v);
    assert_eq!(errs.len(), 1, "{errs:#?}");
}

// ---------------------------------------------------------------------------------------------
// render round trip

/// Quantities as manifests write them, canonical or not.
fn arb_quantity() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..4096).prop_map(|n| format!("{n}m")),
        (1u32..64).prop_map(|n| format!("{n}")),
        (1u32..2048).prop_map(|n| format!("{n}Mi")),
        (1u32..8).prop_map(|n| format!("{n}Gi")),
        (1u32..9).prop_map(|n| format!("0.{n}")),
        (1u32..999).prop_map(|n| format!("{n}e6")),
        (1u32..2000).prop_map(|n| format!("{n}k")),
    ]
}

fn arb_daemonset() -> impl Strategy<Value = Value> {
    (
        arb_quantity(),
        arb_quantity(),
        any::<bool>(),
        prop::option::of(prop::sample::select(vec!["1", "1m", "1000m"])),
        any::<bool>(),
        prop::option::of(1u32..512),
    )
        .prop_map(|(cpu, memory, host_network, divisor, grpc, size_mi)| {
            let mut env = json!({"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}});
            if let Some(d) = divisor {
                env["valueFrom"]["resourceFieldRef"]["divisor"] = json!(d);
            }
            let probe = if grpc {
                json!({"grpc": {"port": 9090}})
            } else {
                json!({"httpGet": {"port": 8080}})
            };
            let mut empty_dir = json!({});
            if let Some(mi) = size_mi {
                empty_dir["sizeLimit"] = json!(format!("{mi}Mi"));
            }
            with_spec(json!({
                "hostNetwork": host_network,
                "tolerations": [{"operator": "Exists"}],
                "volumes": [{"name": "scratch", "emptyDir": empty_dir},
                    {"name": "claim", "ephemeral": {"volumeClaimTemplate": {"spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}}}}}],
                "containers": [{"name": "c", "image": "agent:1", "env": [env],
                    "ports": [{"containerPort": 8080}],
                    "readinessProbe": probe,
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch", "readOnly": false}],
                    "resources": {"limits": {"cpu": cpu, "memory": memory}}}]
            }))
        })
}

fn load_one(text: &str) -> DaemonSet {
    let m = load_str("ds.yaml", text, &LoadOptions::default()).expect("loads");
    assert!(m.invalid.is_empty(), "{:?}", m.invalid);
    m.daemonsets[0].daemonset.clone()
}

/// What `daemonsync render` prints for a DaemonSet.
fn rendered(ds: &DaemonSet) -> String {
    let value = serde_json::to_value(ds).expect("serializes");
    serde_saphyr::to_string(&value).expect("renders")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `render` output, read back, validates and renders to itself: defaulting and canonical
    /// forms are a fixed point.
    #[test]
    fn render_output_reads_back_valid_and_renders_to_itself(v in arb_daemonset()) {
        let text = serde_json::to_string(&v).unwrap();
        let first = rendered(&load_one(&text));
        let second = rendered(&load_one(&first));
        prop_assert_eq!(&first, &second);
        prop_assert!(!first.contains("1000m") && !first.contains("1024Mi"), "{}", first);
    }
}

// ---------------------------------------------------------------------------------------------
// One target version: what 1.31 to 1.34 refuse that 1.35 accepts (docs/validation.md,
// "Kubernetes versions").

/// The errors of `v` for Kubernetes `1.minor`.
fn errors_at(v: Value, minor: u32) -> Vec<String> {
    let mut ds: DaemonSet = serde_json::from_value(v).expect("test DaemonSet");
    apply_defaults(&mut ds);
    let gates = super::Gates::for_version(crate::model::KubeVersion::v1(minor));
    super::validate_with(&ds, &gates)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn versions_container_restart_policy_is_accepted_from_1_35_when_container_restart_rules_went_beta()
{
    let regular = with_container(json!({"restartPolicy": "Never"}));
    assert!(errors_at(regular.clone(), 35).is_empty());
    assert_eq!(
        errors_at(regular, 34),
        [format!(
            "{T}.containers[0].restartPolicy: Forbidden: may not be set for non-init containers \
             (Kubernetes v1.34; accepted from v1.35, where ContainerRestartRules is on)"
        )]
    );
    let init = with_spec(json!({"initContainers": [
        {"name": "i", "image": "init:1", "restartPolicy": "OnFailure"},
        {"name": "s", "image": "sidecar:1", "restartPolicy": "Always"}
    ]}));
    assert!(errors_at(init.clone(), 35).is_empty());
    assert_eq!(
        errors_at(init, 33),
        [format!(
            "{T}.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported \
             values: \"Always\" (Kubernetes v1.33; accepted from v1.35, where \
             ContainerRestartRules is on)"
        )]
    );
}

#[test]
fn versions_sleep_zero_is_accepted_from_1_33() {
    let v = with_container(json!({"lifecycle": {"preStop": {"sleep": {"seconds": 0}}}}));
    assert!(errors_at(v.clone(), 33).is_empty());
    assert_eq!(
        errors_at(v, 32),
        [format!(
            "{T}.containers[0].lifecycle.preStop.sleep: Invalid value: 0: must be greater than 0 \
             and less than terminationGracePeriodSeconds (30) (Kubernetes v1.32; accepted from \
             v1.33, where PodLifecycleSleepActionAllowZero is on)"
        )]
    );
    let five = with_container(json!({"lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}));
    assert!(errors_at(five, 31).is_empty());
}

#[test]
fn versions_relaxed_environment_variable_names_are_accepted_from_1_32() {
    let v = with_container(json!({
        "env": [{"name": "1-starts:with-a-digit", "value": "x"}],
        "envFrom": [{"prefix": "my prefix ", "configMapRef": {"name": "cm"}}]
    }));
    assert!(errors_at(v.clone(), 32).is_empty());
    let errs = errors_at(v, 31);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs[0].starts_with(&format!(
        "{T}.containers[0].env[0].name: Invalid value: \"1-starts:with-a-digit\": a valid \
         environment variable name must consist of alphabetic characters, digits, '_', '-', or \
         '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or \
         'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*') (Kubernetes \
         v1.31; accepted from v1.32"
    )));
    assert!(errs[1].starts_with(&format!(
        "{T}.containers[0].envFrom[0].prefix: Invalid value"
    )));
}

#[test]
fn versions_relaxed_dns_search_domains_are_accepted_from_1_33() {
    let v = with_spec(json!({"dnsConfig": {"searches": ["_tcp.example.com", "."]}}));
    assert!(errors_at(v.clone(), 33).is_empty());
    let errs = errors_at(v, 32);
    assert!(
        errs.iter().any(|e| e.starts_with(&format!(
            "{T}.dnsConfig.searches[0]: Invalid value: \"_tcp.example.com\""
        )) && e.ends_with(
            "(Kubernetes v1.32; accepted from v1.33, where RelaxedDNSSearchValidation is on)"
        )),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with(&format!("{T}.dnsConfig.searches[1]"))),
        "{errs:#?}"
    );
    let dotted = with_spec(json!({"dnsConfig": {"searches": ["example.com."]}}));
    assert!(errors_at(dotted, 31).is_empty());
}

#[test]
fn versions_comparison_operators_exist_only_from_1_35() {
    let v = with_spec(json!({"tolerations": [{"key": "a", "operator": "Gt", "value": "5"}]}));
    let mut ds: DaemonSet = serde_json::from_value(v).expect("test DaemonSet");
    apply_defaults(&mut ds);
    let gates = |minor| super::Gates {
        version: crate::model::KubeVersion::v1(minor),
        taint_toleration_comparison_operators: true,
    };
    assert!(super::validate_with(&ds, &gates(35)).is_empty());
    assert!(!super::validate_with(&ds, &gates(34)).is_empty());
}

#[test]
fn versions_fields_an_older_version_does_not_keep_are_read_as_validate_says() {
    use crate::manifest::FieldValidation;
    let text = serde_json::to_string(&with_spec(json!({"hostnameOverride": "node-a"}))).unwrap();
    let at = |minor, field_validation| LoadOptions {
        gates: super::Gates::for_version(crate::model::KubeVersion::v1(minor)),
        field_validation,
        ..LoadOptions::default()
    };
    let strict = load_str("a.json", &text, &at(34, FieldValidation::Strict)).unwrap();
    assert!(strict.daemonsets.is_empty());
    let why = strict.invalid[0].errors[0].to_string();
    assert!(
        why.starts_with(&format!(
            "{T}.hostnameOverride: Forbidden: Kubernetes v1.34 does not keep this field \
             (HostnameOverride is on from v1.35)"
        )),
        "{why}"
    );
    let warn = load_str("a.json", &text, &at(34, FieldValidation::Warn)).unwrap();
    let kept = &warn.daemonsets[0];
    assert_eq!(
        kept.warnings,
        [format!(
            "field \"{T}.hostnameOverride\": Kubernetes v1.34 does not keep this field \
             (HostnameOverride is on from v1.35)"
        )]
    );
    let pod = kept
        .daemonset
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    assert!(
        pod.hostname_override.is_none(),
        "dropped, as the API server drops it"
    );
    let new = load_str("a.json", &text, &at(35, FieldValidation::Strict)).unwrap();
    assert_eq!(new.daemonsets.len(), 1);
}

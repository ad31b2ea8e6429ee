//! Scenario (docs/semantics.md §9.G), defaulting, parser and corpus tests of the manifest
//! module, read through the local source as `--manifests` reads them.

use std::path::PathBuf;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use crate::manifest::*;
use crate::source::SourceError;

// ---------------------------------------------------------------------------------------------
// helpers

/// The valid base of docs/semantics.md §9.G: name `abc`, ns default, selector `{a: b}`,
/// template labels `{a: b}`, restartPolicy Always, terminationGracePeriodSeconds 30, strategy
/// OnDelete.
fn base() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "abc", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "restartPolicy": "Always",
                    "dnsPolicy": "ClusterFirst",
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{"name": "abc", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]
                }
            }
        }
    })
}

fn ds(v: serde_json::Value) -> DaemonSet {
    serde_json::from_value(v).expect("test object deserializes")
}

fn defaulted(v: serde_json::Value) -> DaemonSet {
    let mut d = ds(v);
    apply_defaults(&mut d);
    d
}

fn rendered(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn paths(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(|e| e.path.clone()).collect()
}

fn with_rolling(max_unavailable: serde_json::Value, max_surge: serde_json::Value) -> DaemonSet {
    let mut v = base();
    v["spec"]["updateStrategy"] = json!({
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge}
    });
    defaulted(v)
}

// ---------------------------------------------------------------------------------------------
// Validation scenarios (docs/semantics.md §9.G)

/// Loads files and directories through the one local reader (what `--manifests` uses).
fn load_paths(paths: &[std::path::PathBuf], opts: &LoadOptions) -> Result<Manifests, SourceError> {
    let files = crate::source::LocalSource::new(paths.to_vec()).read_files(&opts.limits)?;
    let mut out = Manifests::default();
    for (label, text) in &files {
        out.extend(load_str(label, text, opts)?);
    }
    Ok(out)
}

#[test]
fn v1_base_is_valid_also_with_host_network_and_port() {
    assert_eq!(
        rendered(&validate(&defaulted(base()))),
        Vec::<String>::new()
    );
    let mut v = base();
    v["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
    v["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": 12345}]);
    assert_eq!(rendered(&validate(&defaulted(v))), Vec::<String>::new());
}

#[test]
fn v2_empty_name_and_missing_namespace() {
    let mut v = base();
    v["metadata"] = json!({"name": ""});
    let errs = validate(&defaulted(v));
    assert_eq!(
        rendered(&errs),
        vec![
            "metadata.name: Required value: name or generateName is required",
            "metadata.namespace: Required value",
        ]
    );
}

#[test]
fn v3_nil_selector_does_not_match_template_labels() {
    let mut v = base();
    v["spec"].as_object_mut().unwrap().remove("selector");
    let errs = validate(&defaulted(v));
    assert_eq!(
        rendered(&errs),
        vec![
            "spec.template.metadata.labels: Invalid value: {\"a\":\"b\"}: `selector` does not match template `labels`"
        ]
    );
}

#[test]
fn v4_empty_selector_is_invalid_for_daemonset() {
    let m = load_str(
        "v4.yaml",
        &serde_json::to_string(&{
            let mut v = base();
            v["spec"]["selector"] = json!({});
            v
        })
        .unwrap(),
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(m.invalid.len(), 1);
    let errs = &m.invalid[0].errors;
    assert_eq!(paths(errs), vec!["spec.selector"]);
    assert!(
        errs[0]
            .to_string()
            .ends_with(": empty selector is invalid for daemonset")
    );
}

#[test]
fn v5_selector_not_matching_labels() {
    let mut v = base();
    v["spec"]["selector"] = json!({"matchLabels": {"foo": "bar"}});
    let errs = validate(&defaulted(v));
    assert_eq!(paths(&errs), vec!["spec.template.metadata.labels"]);
    assert!(
        errs[0]
            .detail
            .contains("`selector` does not match template `labels`")
    );
}

#[test]
fn v6_restart_policy_must_be_always() {
    for policy in ["OnFailure", "Never"] {
        let mut v = base();
        v["spec"]["template"]["spec"]["restartPolicy"] = json!(policy);
        let errs = validate(&defaulted(v));
        assert_eq!(
            rendered(&errs),
            vec![format!(
                "spec.template.spec.restartPolicy: Unsupported value: \"{policy}\": supported values: \"Always\""
            )]
        );
    }
}

#[test]
fn v7_active_deadline_seconds_is_forbidden() {
    let mut v = base();
    v["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(10);
    let errs = validate(&defaulted(v));
    assert_eq!(
        rendered(&errs),
        vec![
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"
        ]
    );
}

#[test]
fn v8_negative_min_ready_and_history_limit() {
    let mut v = base();
    v["spec"]["minReadySeconds"] = json!(-1);
    assert_eq!(
        rendered(&validate(&defaulted(v))),
        vec!["spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"]
    );
    let mut v = base();
    v["spec"]["revisionHistoryLimit"] = json!(-1);
    assert_eq!(
        rendered(&validate(&defaulted(v))),
        vec!["spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"]
    );
    let mut v = base();
    v["spec"]["revisionHistoryLimit"] = json!(0);
    assert!(validate(&defaulted(v)).is_empty());
}

#[test]
fn v9_unknown_strategy_type_is_unsupported() {
    let mut v = base();
    v["spec"]["updateStrategy"] = json!({"type": "Random"});
    assert_eq!(
        rendered(&validate(&defaulted(v))),
        vec![
            "spec.updateStrategy: Unsupported value: \"Random\": supported values: \"RollingUpdate\", \"OnDelete\""
        ]
    );
}

#[test]
fn v10_rolling_update_without_parameters_is_required() {
    let mut v = base();
    v["spec"]["updateStrategy"] = json!({"type": "RollingUpdate"});
    // Not defaulted: the internal object the API server validates can carry a nil rollingUpdate.
    let errs = validate(&ds(v));
    assert_eq!(
        rendered(&errs),
        vec!["spec.updateStrategy.rollingUpdate: Required value"]
    );
}

#[test]
fn v11_both_zero_requires_max_unavailable() {
    let errs = validate(&with_rolling(json!(0), json!(0)));
    assert_eq!(
        rendered(&errs),
        vec![
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
        ]
    );
}

#[test]
fn v12_both_non_zero_rejects_max_surge() {
    let errs = validate(&with_rolling(json!(1), json!(1)));
    assert_eq!(
        rendered(&errs),
        vec![
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"
        ]
    );
}

#[test]
fn v18_no_strategy_defaults_to_rolling_update_and_is_valid() {
    let mut v = base();
    v["spec"].as_object_mut().unwrap().remove("updateStrategy");
    let d = defaulted(v);
    let spec = d.spec.as_ref().unwrap();
    let s = spec.update_strategy.as_ref().unwrap();
    assert_eq!(s.type_.as_deref(), Some("RollingUpdate"));
    let ru = s.rolling_update.as_ref().unwrap();
    assert_eq!(ru.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(ru.max_surge, Some(IntOrString::Int(0)));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert!(validate(&d).is_empty());
}

#[test]
fn v20_update_selector_is_immutable_and_template_changes_bump_generations() {
    let old = ds(base());
    let mut v = base();
    v["spec"]["selector"] = json!({"matchLabels": {"a": "b", "c": "d"}});
    v["spec"]["template"]["metadata"]["labels"] = json!({"a": "b", "c": "d"});
    let changed_selector = ds(v);
    let errs = validate_update(&old, &changed_selector);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].path, "spec.selector");
    assert_eq!(errs[0].detail, "field is immutable");

    let mut v = base();
    v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("image:2");
    let new_template = ds(v);
    assert!(validate_update(&old, &new_template).is_empty());
    assert_eq!(next_generations(&old, &new_template, (3, 2)), (4, 3));

    let mut v = base();
    v["spec"]["minReadySeconds"] = json!(5);
    v["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}});
    let other_spec = ds(v);
    assert!(validate_update(&old, &other_spec).is_empty());
    assert_eq!(next_generations(&old, &other_spec, (3, 2)), (4, 2));

    let mut v = base();
    v["metadata"]["labels"] = json!({"team": "net"});
    assert_eq!(next_generations(&old, &ds(v), (3, 2)), (3, 2));
}

#[test]
fn rolling_update_errors_accumulate() {
    let errs = validate(&with_rolling(json!("20Percent"), json!(0)));
    assert_eq!(
        rendered(&errs),
        vec![
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"20Percent\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
        ]
    );
}

#[test]
fn rolling_update_value_rules() {
    let ok = [
        (json!(0), json!("100%")),
        (json!("0%"), json!(3)),
        (json!(150), json!(0)),
        (json!("10%"), json!(0)),
    ];
    for (u, s) in ok {
        assert!(
            validate(&with_rolling(u.clone(), s.clone())).is_empty(),
            "{u} / {s}"
        );
    }
    for bad in ["5", "-5%", "5.5%"] {
        let errs = validate(&with_rolling(json!(bad), json!(0)));
        assert_eq!(
            errs[0].path, "spec.updateStrategy.rollingUpdate.maxUnavailable",
            "{bad}"
        );
        assert!(
            errs[0].detail.starts_with("a valid percent string"),
            "{bad}"
        );
    }
    // An invalid string counts by its integer parse: "5" is non-zero, so with maxSurge 1
    // the both-non-zero error follows the format error.
    let errs = validate(&with_rolling(json!("5"), json!(1)));
    assert_eq!(
        paths(&errs),
        vec![
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
            "spec.updateStrategy.rollingUpdate.maxSurge"
        ]
    );
    let errs = validate(&with_rolling(json!("101%"), json!(0)));
    assert_eq!(
        rendered(&errs),
        vec![
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"101%\": must not be greater than 100%"
        ]
    );
    let errs = validate(&with_rolling(json!(-1), json!(0)));
    assert_eq!(
        rendered(&errs),
        vec![
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"
        ]
    );
}

#[test]
fn only_max_surge_given_gets_max_unavailable_one_and_fails() {
    let mut v = base();
    v["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}});
    let errs = validate(&defaulted(v));
    assert_eq!(
        paths(&errs),
        vec!["spec.updateStrategy.rollingUpdate.maxSurge"]
    );
}

#[test]
fn on_delete_ignores_rolling_update_block() {
    let mut v = base();
    v["spec"]["updateStrategy"] =
        json!({"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}});
    let d = defaulted(v);
    assert!(validate(&d).is_empty());
    let ru = d
        .spec
        .unwrap()
        .update_strategy
        .unwrap()
        .rolling_update
        .unwrap();
    assert_eq!(ru.max_unavailable, Some(IntOrString::Int(0)));
}

#[test]
fn pod_template_rules() {
    let mut v = base();
    let pod = &mut v["spec"]["template"]["spec"];
    pod["containers"] = json!([
        {"name": "a", "image": "x", "ports": [{"containerPort": 0}, {"containerPort": 70000, "hostPort": -1, "protocol": "ICMP"}],
         "volumeMounts": [{"name": "missing", "mountPath": "/m"}, {"name": "cfg", "mountPath": ""}]},
        {"name": "a", "image": "", "imagePullPolicy": "Sometimes"},
    ]);
    pod["initContainers"] = json!([{"name": "a", "image": "x"}]);
    pod["volumes"] = json!([
        {"name": "cfg", "configMap": {}},
        {"name": "cfg2", "configMap": {"name": "c"}, "secret": {"secretName": "s"}},
        {"name": "Bad_Name", "emptyDir": {}},
    ]);
    pod["dnsPolicy"] = json!("Sometimes");
    let errs = validate(&defaulted(v));
    let mut got = paths(&errs);
    got.sort();
    let mut want = vec![
        "spec.template.spec.volumes[0].configMap.name",
        // Upstream looks at secret before configMap: the second source is the one refused.
        "spec.template.spec.volumes[1].configMap",
        "spec.template.spec.volumes[2].name",
        "spec.template.spec.containers[0].ports[0].containerPort",
        "spec.template.spec.containers[0].ports[1].containerPort",
        "spec.template.spec.containers[0].ports[1].hostPort",
        "spec.template.spec.containers[0].ports[1].protocol",
        "spec.template.spec.containers[0].volumeMounts[0].name",
        "spec.template.spec.containers[0].volumeMounts[1].name",
        "spec.template.spec.containers[0].volumeMounts[1].mountPath",
        "spec.template.spec.containers[1].image",
        "spec.template.spec.containers[1].imagePullPolicy",
        "spec.template.spec.containers[1].name",
        "spec.template.spec.initContainers[0].name",
        "spec.template.spec.dnsPolicy",
    ];
    want.sort();
    assert_eq!(got, want, "{:#?}", rendered(&errs));
    let text = rendered(&errs).join("\n");
    assert!(text.contains("spec.template.spec.volumes[0].configMap.name: Required value"));
    assert!(text.contains("spec.template.spec.containers[1].name: Duplicate value: \"a\""));
    assert!(
        text.contains(
            "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"missing\""
        )
    );
    assert!(text.contains(
        "spec.template.spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
    ));
}

#[test]
fn no_containers_is_required() {
    let mut v = base();
    v["spec"]["template"]["spec"]["containers"] = json!([]);
    assert_eq!(
        rendered(&validate(&defaulted(v))),
        vec!["spec.template.spec.containers: Required value"]
    );
}

#[test]
fn metadata_and_selector_syntax() {
    let mut v = base();
    v["metadata"]["name"] = json!("Bad_Name");
    v["metadata"]["namespace"] = json!("FILLED BY THE OPERATOR");
    v["metadata"]["labels"] = json!({"bad key!": "v", "k": "bad value!"});
    v["spec"]["selector"] = json!({"matchLabels": {"a": "b"}, "matchExpressions": [
        {"key": "x", "operator": "In"},
        {"key": "y", "operator": "Exists", "values": ["1"]},
        {"key": "z", "operator": "Near"},
    ]});
    let errs = validate(&defaulted(v));
    assert_eq!(
        paths(&errs),
        vec![
            "metadata.name",
            "metadata.namespace",
            "metadata.labels",
            "metadata.labels",
            "spec.selector.matchExpressions[0].values",
            "spec.selector.matchExpressions[1].values",
            "spec.selector.matchExpressions[2].operator",
        ],
        "{:#?}",
        rendered(&errs)
    );
}

// ---------------------------------------------------------------------------------------------
// Defaulting

#[test]
fn explicit_defaults_equal_omitted_defaults() {
    let omitted = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "x", "namespace": "ns"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "serviceAccount": "sa",
                    "containers": [{
                        "name": "c", "image": "repo/img",
                        "ports": [{"containerPort": 80}],
                        "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                        "livenessProbe": {"httpGet": {"port": 80}},
                    }],
                    "initContainers": [{"name": "i", "image": "repo/img:1.0"}],
                    "volumes": [
                        {"name": "cm", "configMap": {"name": "cm"}},
                        {"name": "s", "secret": {"secretName": "s"}},
                        {"name": "h", "hostPath": {"path": "/h"}},
                        {"name": "e", "emptyDir": {}},
                        {"name": "nothing"},
                    ]
                }
            }
        }
    });
    let explicit = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "x", "namespace": "ns"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "revisionHistoryLimit": 10,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "serviceAccount": "sa", "serviceAccountName": "sa",
                    "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                    "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler",
                    "securityContext": {},
                    "containers": [{
                        "name": "c", "image": "repo/img", "imagePullPolicy": "Always",
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
                        "livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                            "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                    }],
                    "initContainers": [{"name": "i", "image": "repo/img:1.0", "imagePullPolicy": "IfNotPresent",
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                    "volumes": [
                        {"name": "cm", "configMap": {"name": "cm", "defaultMode": 420}},
                        {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}},
                        {"name": "h", "hostPath": {"path": "/h", "type": ""}},
                        {"name": "e", "emptyDir": {}},
                        {"name": "nothing", "emptyDir": {}},
                    ]
                }
            }
        }
    });
    let a = serde_json::to_value(defaulted(omitted)).unwrap();
    let b = serde_json::to_value(defaulted(explicit.clone())).unwrap();
    assert_eq!(a, b);
    // Defaulting is idempotent and leaves an already-defaulted object unchanged.
    let mut twice: DaemonSet = serde_json::from_value(b.clone()).unwrap();
    apply_defaults(&mut twice);
    assert_eq!(serde_json::to_value(twice).unwrap(), b);
    assert!(validate(&defaulted(explicit)).is_empty());
}

#[test]
fn strategy_fields_default_independently() {
    let mut v = base();
    v["spec"]["updateStrategy"] = json!({"rollingUpdate": {"maxUnavailable": "10%"}});
    let d = defaulted(v);
    let s = d.spec.unwrap().update_strategy.unwrap();
    assert_eq!(s.type_.as_deref(), Some("RollingUpdate"));
    let ru = s.rolling_update.unwrap();
    assert_eq!(ru.max_unavailable, Some(IntOrString::String("10%".into())));
    assert_eq!(ru.max_surge, Some(IntOrString::Int(0)));
}

#[test]
fn pod_only_defaults_are_separate() {
    let mut v = base();
    v["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
    v["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": 53}]);
    v["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "1"}});
    let d = defaulted(v);
    let mut pod = d.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.enable_service_links, None);
    assert_eq!(pod.containers[0].ports.as_ref().unwrap()[0].host_port, None);
    apply_pod_defaults(&mut pod);
    assert_eq!(pod.enable_service_links, Some(true));
    assert_eq!(
        pod.containers[0].ports.as_ref().unwrap()[0].host_port,
        Some(53)
    );
    let requests = pod.containers[0]
        .resources
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap();
    assert_eq!(requests["cpu"].0, "1");
}

// ---------------------------------------------------------------------------------------------
// Loading and parsing

#[test]
fn kind_list_items_are_flattened() {
    let text = "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ServiceAccount\n    metadata: {name: sa}\n  - apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n    data: {token: c2VjcmV0}\n";
    let docs = read_documents("list.yaml", text, &Limits::default()).unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1].source.item, Some(1));
    assert_eq!(
        docs[1].source.to_string(),
        "list.yaml, document 1 (line 1), items[1]"
    );
    let m = load_str("list.yaml", text, &LoadOptions::default()).unwrap();
    assert_eq!(m.others.len(), 2);
    assert_eq!(m.others[1].kind, "Secret");
    assert!(
        !format!("{:?}", m).contains("c2VjcmV0"),
        "secret data must not be kept"
    );
}

#[test]
fn comment_only_documents_are_skipped_and_documents_numbered() {
    let text = "# header\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# only a comment\n---\n\n---\nkind: ServiceAccount\napiVersion: v1\nmetadata: {name: b}\n";
    let docs = read_documents("multi.yaml", text, &Limits::default()).unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0].source.document, 1);
    assert_eq!(docs[0].source.line, Some(3));
    assert_eq!(docs[1].source.document, 4);
    assert_eq!(docs[1].source.line, Some(11));
    assert_eq!(
        docs[1].source.to_string(),
        "multi.yaml, document 4 (line 11)"
    );
}

#[test]
fn kind_before_api_version_is_a_daemonset() {
    let text = "kind: DaemonSet\napiVersion: apps/v1\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: i}]\n";
    let m = load_str("d.yaml", text, &LoadOptions::default()).unwrap();
    assert_eq!(m.daemonsets.len(), 1, "{:?}", m.invalid);
    // The default namespace is set before validation.
    assert_eq!(
        m.daemonsets[0].daemonset.metadata.namespace.as_deref(),
        Some("default")
    );
}

#[test]
fn type_error_becomes_field_error() {
    let text = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec:\n  minReadySeconds: abc\n";
    let m = load_str("d.yaml", text, &LoadOptions::default()).unwrap();
    assert_eq!(m.invalid.len(), 1);
    assert_eq!(m.invalid[0].name, "default/d");
    let e = &m.invalid[0].errors[0];
    assert_eq!(e.path, "spec.minReadySeconds");
    assert!(
        e.to_string()
            .starts_with("spec.minReadySeconds: Invalid value: \"abc\": "),
        "{e}"
    );
}

#[test]
fn syntax_error_reports_line_and_column() {
    let text = "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: [unclosed\nmetadata: {name: x}\n";
    let err = read_documents("broken.yaml", text, &Limits::default()).unwrap_err();
    match &err {
        LoadError::Syntax {
            file,
            document,
            line,
            column,
            ..
        } => {
            assert_eq!(file, "broken.yaml");
            assert_eq!(*document, Some(2));
            assert!(*line >= 5, "line {line}");
            assert!(*column >= 1);
        }
        other => panic!("expected a syntax error, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.starts_with("broken.yaml, document 2, line "), "{msg}");
    assert!(!msg.contains(" at line "), "location printed twice: {msg}");
    assert!(msg.contains("fix the manifest at that position"), "{msg}");
    let err = read_documents("dup.yaml", "a: 1\na: 2\n", &Limits::default()).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "dup.yaml, document 1, line 2, column 1: syntax error: duplicate mapping key: a;"
        ),
        "{err}"
    );
}

#[test]
fn alias_bomb_is_rejected_by_the_alias_budget() {
    let mut text = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for w in names.windows(2) {
        let refs = vec![format!("*{}", w[0]); 9].join(",");
        text.push_str(&format!("{}: &{} [{}]\n", w[1], w[1], refs));
    }
    // Refused by the alias budget before the expansion happens (no clock in tests: the budget
    // error itself says that the replay stopped at its limit).
    let err = read_documents("bomb.yaml", &text, &Limits::default()).unwrap_err();
    assert!(matches!(err, LoadError::Budget { .. }), "{err}");
    assert!(
        err.to_string().starts_with("bomb.yaml: refused to parse"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("alias replay limit exceeded: total_replayed_events=10001 > 10000"),
        "{err}"
    );
}

#[test]
fn deep_nesting_is_rejected() {
    let text = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    let err = read_documents("deep.yaml", &text, &Limits::default()).unwrap_err();
    assert!(
        matches!(err, LoadError::Budget { .. } | LoadError::Syntax { .. }),
        "{err}"
    );
}

#[test]
fn oversized_input_is_rejected_before_parsing() {
    let limits = Limits {
        max_file_bytes: 100,
        ..Limits::default()
    };
    let text = "a: b\n".repeat(100);
    let err = read_documents("big.yaml", &text, &limits).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::TooLarge {
                size: 500,
                limit: 100,
                ..
            }
        ),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.yaml");
    std::fs::write(&path, &text).unwrap();
    let opts = LoadOptions {
        limits,
        ..LoadOptions::default()
    };
    let err = load_paths(&[path], &opts).unwrap_err();
    assert!(
        err.to_string().contains("more than the limit of 100 bytes"),
        "{err}"
    );
}

#[test]
fn json_files_are_read() {
    let text = serde_json::to_string_pretty(&base()).unwrap();
    let m = load_str("ds.json", &text, &LoadOptions::default()).unwrap();
    assert_eq!(m.daemonsets.len(), 1);
    assert_eq!(m.daemonsets[0].source.line, Some(1));
    let err = load_str("bad.json", "{\n  \"kind\": }", &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, LoadError::Syntax { line: 2, .. }), "{err}");
}

#[test]
fn non_objects_and_missing_kind_are_load_errors() {
    let err = load_str("s.yaml", "just a string\n", &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, LoadError::NotAnObject { .. }), "{err}");
    let err = load_str(
        "k.yaml",
        "apiVersion: v1\nmetadata: {name: x}\n",
        &LoadOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no `kind`"), "{err}");
}

#[test]
fn other_kinds_are_counted_not_errors() {
    let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\napiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\nmetadata: {name: k}\n";
    let m = load_str("o.yaml", text, &LoadOptions::default()).unwrap();
    assert!(m.daemonsets.is_empty() && m.invalid.is_empty());
    let kinds: Vec<_> = m
        .others
        .iter()
        .map(|o| (o.api_version.as_str(), o.kind.as_str(), o.name.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("v1", "Namespace", Some("ns")),
            ("apps.kruise.io/v1alpha1", "DaemonSet", Some("k"))
        ]
    );
}

#[test]
fn directory_walk_is_sorted_and_skips_hidden_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let obj = |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n");
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("b/z.yml"), obj("bz")).unwrap();
    std::fs::write(
        root.join("c.json"),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#,
    )
    .unwrap();
    std::fs::write(root.join("a.yaml"), obj("a")).unwrap();
    std::fs::write(root.join(".hidden.yaml"), obj("hidden")).unwrap();
    std::fs::write(root.join(".git/x.yaml"), obj("git")).unwrap();
    std::fs::write(root.join("README.md"), "# not yaml: [").unwrap();
    let m = load_paths(&[root.to_path_buf()], &LoadOptions::default()).unwrap();
    let names: Vec<_> = m.others.iter().map(|o| o.name.clone().unwrap()).collect();
    assert_eq!(names, vec!["a", "bz", "c"]);

    let limits = Limits {
        max_files: 2,
        ..Limits::default()
    };
    let err = load_paths(
        &[root.to_path_buf()],
        &LoadOptions {
            limits,
            ..LoadOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, SourceError::TooManyFiles { limit: 2, .. }),
        "{err}"
    );

    let err = load_paths(&[root.join("missing.yaml")], &LoadOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("missing.yaml: cannot read"),
        "{err}"
    );
}

#[test]
fn garbage_never_panics() {
    let inputs = [
        "",
        "---",
        "--- !!binary AAAA",
        "? [a]\n: b",
        "{a: 1, a: 2}",
        "a: *undefined",
        "\t- x",
        "[",
        "kind: List\napiVersion: v1\nitems: [1]",
        "apiVersion: apps/v1\nkind: DaemonSet\nspec: 5",
        "apiVersion: apps/v1\nkind: DaemonSet\nspec: {updateStrategy: {rollingUpdate: {maxSurge: [1]}}}",
        "\u{feff}apiVersion: v1\nkind: X",
        "apiVersion: 1\nkind: 2",
    ];
    for text in inputs {
        let _ = load_str("g.yaml", text, &LoadOptions::default());
        let _ = load_str("g.json", text, &LoadOptions::default());
    }
}

#[test]
fn legacy_daemonset_hint_names_the_labels() {
    let text = "apiVersion: extensions/v1beta1\nkind: DaemonSet\nmetadata: {name: d, namespace: kube-system}\nspec:\n  template:\n    metadata: {labels: {tier: node, app: x}}\n    spec: {containers: [{name: c, image: i}]}\n";
    let m = load_str("l.yaml", text, &LoadOptions::default()).unwrap();
    let e = &m.invalid[0].errors[0];
    assert_eq!(e.path, "apiVersion");
    assert!(
        e.detail.contains("convert it to apiVersion: apps/v1"),
        "{e}"
    );
    assert!(
        e.detail
            .contains("add spec.selector.matchLabels: {app: x, tier: node}"),
        "{e}"
    );
    assert!(e.detail.contains("OnDelete"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Corpus

struct Expect {
    file: &'static str,
    valid: usize,
    others: usize,
    /// One entry per invalid DaemonSet, in file order: its sorted error paths.
    invalid: &'static [&'static [&'static str]],
}

const API: &[&str] = &["apiVersion"];

const fn ok(file: &'static str, others: usize) -> Expect {
    Expect {
        file,
        valid: 1,
        others,
        invalid: &[],
    }
}

const fn legacy(file: &'static str, others: usize, n: usize) -> Expect {
    const ONE: &[&[&str]] = &[API];
    const FIVE: &[&[&str]] = &[API, API, API, API, API];
    Expect {
        file,
        valid: 0,
        others,
        invalid: if n == 5 { FIVE } else { ONE },
    }
}

const CORPUS: &[Expect] = &[
    ok("amazon-vpc-cni-k8s__aws-k8s-cni.yaml", 5),
    ok("aws-ebs-csi-driver__node.yaml", 0),
    ok("calico__calico-node-daemonset.yaml", 0),
    ok("cilium__quick-install.yaml", 8),
    ok(
        "cloud-provider-openstack__openstack-cloud-controller-manager-ds.yaml",
        1,
    ),
    ok("csi-driver-nfs__csi-nfs-node.yaml", 0),
    ok("datadog-agent__agent-only-daemonset.yaml", 0),
    ok("falco__daemonset.yaml", 0),
    legacy("flannel__kube-flannel-v0.11.0-legacy.yaml", 4, 5),
    ok("flannel__kube-flannel.yaml", 5),
    ok("fluent-bit-kubernetes-logging__fluent-bit-ds.yaml", 0),
    ok(
        "fluentd-kubernetes-daemonset__fluentd-daemonset-elasticsearch-rbac.yaml",
        3,
    ),
    legacy("istio-cni__istio-cni-1.2.10-legacy.yaml", 4, 1),
    ok("kube-ovn__ovn-v1.11.24.yaml", 7),
    ok("kube-ovn__ovn-v1.12.35.yaml", 4),
    legacy(
        "kube-prometheus__node-exporter-daemonset-v0.1.0-legacy.yaml",
        0,
        1,
    ),
    ok("kube-prometheus__nodeExporter-daemonset.yaml", 0),
    ok("kube-router__kubeadm-kuberouter-all-features.yaml", 4),
    ok("kube-vip__kube-vip-ds-0.3.5.yaml", 0),
    ok("kubernetes-cluster-addons__ip-masq-agent.yaml", 1),
    ok("kubernetes-cluster-addons__node-exporter-ds.yaml", 0),
    ok("kubernetes-cluster-addons__nodelocaldns.yaml", 4),
    ok("kubernetes-cluster-addons__nvidia-gpu-daemonset.yaml", 0),
    ok("kubernetes-website__daemonset.yaml", 0),
    legacy("kured__kured-ds-1.0.0-legacy.yaml", 0, 1),
    ok("kured__kured-ds.yaml", 1),
    ok(
        "local-static-provisioner__default_example_provisioner_generated.yaml",
        5,
    ),
    ok("local-static-provisioner__gke-daemonset-raid-disks.yaml", 0),
    ok("longhorn__longhorn.yaml", 50),
    ok("metallb__metallb-native.yaml", 25),
    legacy("metallb__metallb-v0.7.3-legacy.yaml", 10, 1),
    ok("multus-cni__multus-daemonset-thick.yaml", 5),
    ok("node-feature-discovery__worker-daemonset.yaml", 0),
    ok("node-problem-detector__node-problem-detector.yaml", 0),
    Expect {
        file: "nvidia-gpu-operator__state-driver-0500_daemonset.yaml",
        valid: 0,
        others: 0,
        // The placeholder namespace, and the DriverToolkit side-car mounts a volume the
        // operator adds at runtime (no `shared-nvidia-driver-toolkit` volume in the asset).
        invalid: &[&[
            "metadata.namespace",
            "spec.template.spec.containers[4].volumeMounts[0].name",
        ]],
    },
    ok(
        "nvidia-k8s-device-plugin__gpu-feature-discovery-daemonset.yaml",
        0,
    ),
    legacy(
        "nvidia-k8s-device-plugin__nvidia-device-plugin-1.0.0-beta2-legacy.yaml",
        0,
        1,
    ),
    ok("nvidia-k8s-device-plugin__nvidia-device-plugin.yaml", 0),
    ok("openkruise__daemon-windows.yaml", 0),
    Expect {
        file: "openshift-cluster-dns-operator__dns-daemonset-asset.yaml",
        valid: 0,
        others: 0,
        // No name; nil selector vs. no labels; images unset; configMap volume without a name,
        // which also makes the mount of that volume dangle. The source-less `metrics-tls`
        // volume is defaulted to emptyDir, so it is not an error.
        invalid: &[&[
            "metadata.name",
            "spec.template.metadata.labels",
            "spec.template.spec.containers[0].image",
            "spec.template.spec.containers[0].volumeMounts[0].name",
            "spec.template.spec.containers[1].image",
            "spec.template.spec.volumes[0].configMap.name",
        ]],
    },
    ok("opentelemetry-collector__otel-config.yaml", 4),
    ok(
        "secrets-store-csi-driver__secrets-store-csi-driver-windows.yaml",
        0,
    ),
    ok("secrets-store-csi-driver__secrets-store-csi-driver.yaml", 0),
    ok("sig-windows-tools__kube-proxy-windows-hostprocess.yaml", 0),
    ok("vector__daemonset.yaml", 0),
    ok("weave-net__weave-daemonset-k8s-1.11.yaml", 5),
    legacy("weave-net__weave-daemonset-k8s-1.8-legacy.yaml", 5, 1),
];

/// The shared manifest corpus, or `None` (with the reason printed) when `../shared/corpus`
/// is not beside the repository, as in a lone checkout: the corpus tests then skip.
fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
    if dir.is_dir() {
        return Some(dir);
    }
    println!(
        "skipped: manifest corpus not found at {} - the shared/ directory must sit beside the repository",
        dir.display()
    );
    None
}

#[test]
fn corpus_table_covers_every_file() {
    let Some(dir) = corpus_dir() else { return };
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    on_disk.sort();
    let table: Vec<String> = CORPUS.iter().map(|e| e.file.to_string()).collect();
    assert_eq!(on_disk.len(), 47);
    assert_eq!(table, on_disk);
}

#[test]
fn corpus_files_load_as_expected() {
    let Some(dir) = corpus_dir() else { return };
    let mut failures = Vec::new();
    for exp in CORPUS {
        let path = dir.join(exp.file);
        let m = match load_paths(&[path], &LoadOptions::default()) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{}: load error: {e}", exp.file));
                continue;
            }
        };
        let got_invalid: Vec<Vec<String>> = m
            .invalid
            .iter()
            .map(|i| {
                let mut p = paths(&i.errors);
                p.sort();
                p
            })
            .collect();
        let want_invalid: Vec<Vec<String>> = exp
            .invalid
            .iter()
            .map(|ps| ps.iter().map(|s| s.to_string()).collect())
            .collect();
        if m.daemonsets.len() != exp.valid
            || m.others.len() != exp.others
            || got_invalid != want_invalid
        {
            let detail: Vec<String> = m.invalid.iter().flat_map(|i| rendered(&i.errors)).collect();
            failures.push(format!(
                "{}: got valid={} others={} invalid={:?}, want valid={} others={} invalid={:?}\n  {}",
                exp.file,
                m.daemonsets.len(),
                m.others.len(),
                got_invalid,
                exp.valid,
                exp.others,
                want_invalid,
                detail.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_details_users_see() {
    let Some(dir) = corpus_dir() else { return };
    let opts = LoadOptions::default();
    // Placeholder namespace is reported with its path and value.
    let m = load_paths(
        &[dir.join("nvidia-gpu-operator__state-driver-0500_daemonset.yaml")],
        &opts,
    )
    .unwrap();
    assert!(m.invalid[0].errors[0].to_string().starts_with(
        "metadata.namespace: Invalid value: \"FILLED BY THE OPERATOR\": a lowercase RFC 1123 label"
    ));
    // `defaultMode: 0755` is read as YAML 1.1 octal, as kubectl does.
    let text =
        std::fs::read_to_string(dir.join("nvidia-gpu-operator__state-driver-0500_daemonset.yaml"))
            .unwrap();
    let docs = read_documents("gpu.yaml", &text, &opts.limits).unwrap();
    assert_eq!(
        docs[0]
            .value
            .pointer("/spec/template/spec/volumes/14/configMap/defaultMode"),
        Some(&json!(493))
    );
    // Legacy flannel: five DaemonSets, each with the selector hint and the OnDelete note.
    let m = load_paths(
        &[dir.join("flannel__kube-flannel-v0.11.0-legacy.yaml")],
        &opts,
    )
    .unwrap();
    assert_eq!(m.invalid.len(), 5);
    for i in &m.invalid {
        assert!(
            i.errors[0]
                .detail
                .contains("add spec.selector.matchLabels: {app: flannel, tier: node}")
        );
        assert!(i.errors[0].detail.contains("OnDelete"));
    }
    assert_eq!(m.invalid[0].name, "kube-system/kube-flannel-ds-amd64");
    // istio-cni has a selector and a strategy: no selector hint, no OnDelete note.
    let m = load_paths(
        &[dir.join("istio-cni__istio-cni-1.2.10-legacy.yaml")],
        &opts,
    )
    .unwrap();
    assert!(
        !m.invalid[0].errors[0]
            .detail
            .contains("selector is missing")
    );
    assert!(!m.invalid[0].errors[0].detail.contains("OnDelete"));
    // Missing namespaces get the default one.
    let m = load_paths(&[dir.join("aws-ebs-csi-driver__node.yaml")], &opts).unwrap();
    assert_eq!(
        m.daemonsets[0].daemonset.metadata.namespace.as_deref(),
        Some("default")
    );
    // nodelocaldns: rollingUpdate without type defaults to RollingUpdate with maxSurge 0.
    let m = load_paths(
        &[dir.join("kubernetes-cluster-addons__nodelocaldns.yaml")],
        &opts,
    )
    .unwrap();
    let s = m.daemonsets[0]
        .daemonset
        .spec
        .as_ref()
        .unwrap()
        .update_strategy
        .clone()
        .unwrap();
    assert_eq!(s.type_.as_deref(), Some("RollingUpdate"));
    assert_eq!(
        s.rolling_update.unwrap().max_surge,
        Some(IntOrString::Int(0))
    );
    assert_eq!(m.daemonsets[0].source.document, 4);
    assert_eq!(m.daemonsets[0].source.line, Some(104));
    // The whole corpus as one directory: deterministic order, 51 DaemonSets in total.
    let all = load_paths(std::slice::from_ref(&dir), &opts).unwrap();
    assert_eq!(all.daemonsets.len() + all.invalid.len(), 51);
    let again = load_paths(&[dir], &opts).unwrap();
    assert_eq!(all, again);
}

#[test]
fn read_budget_refuses_a_large_file_and_a_large_total() {
    let limits = Limits {
        max_file_bytes: 10,
        max_total_bytes: 25,
        ..Limits::default()
    };
    let mut budget = ReadBudget::new(&limits);
    assert_eq!(budget.read_cap(), 11);
    assert_eq!(
        budget.admit(11),
        Err(Overrun::File {
            size: 11,
            limit: 10
        })
    );
    assert_eq!(budget.admit(10), Ok(()));
    assert_eq!(budget.admit(10), Ok(()));
    assert_eq!(
        budget.admit(6),
        Err(Overrun::Total {
            total: 26,
            limit: 25
        })
    );
}

// ---------------------------------------------------------------------------------------------
// hardening: JSON and document budgets

fn cm_json(name: &str) -> String {
    format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}"#)
}

#[test]
fn json_duplicate_keys_are_refused_with_their_path() {
    let text = r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"a","name":"b"}}"#;
    let err = read_documents("dup.json", text, &Limits::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LoadError::Syntax { .. }), "{msg}");
    assert!(msg.contains("metadata: duplicate key \"name\""), "{msg}");
    // The same in a later document of a stream names that document.
    let text = format!("{}\n{}\n", cm_json("x"), r#"{"kind":"A","kind":"B"}"#);
    let err = read_documents("dup.json", &text, &Limits::default()).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::Syntax {
                document: Some(2),
                line: 2,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn json_document_budget_applies_and_says_documents_not_aliases() {
    let limits = Limits {
        max_documents: 3,
        ..Limits::default()
    };
    let text: String = (0..4).map(|i| cm_json(&format!("c{i}")) + "\n").collect();
    let err = read_documents("many.json", &text, &limits).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, LoadError::TooManyDocuments { limit: 3, .. }),
        "{msg}"
    );
    assert!(!msg.contains("alias"), "{msg}");
    assert!(msg.contains("more than 3 documents"), "{msg}");
    let text: String = (0..3).map(|i| cm_json(&format!("c{i}")) + "\n").collect();
    assert_eq!(read_documents("ok.json", &text, &limits).unwrap().len(), 3);
}

#[test]
fn yaml_document_budget_says_documents_not_aliases() {
    let limits = Limits {
        max_documents: 2,
        ..Limits::default()
    };
    let text = "a: 1\n---\nb: 2\n---\nc: 3\n";
    let err = read_documents("many.yaml", text, &limits).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, LoadError::TooManyDocuments { limit: 2, .. }),
        "{msg}"
    );
    assert!(!msg.contains("alias"), "{msg}");
}

#[test]
fn json_stream_lines_are_found_for_every_document() {
    // Each document on its own line, some pretty-printed over several lines: the line of each
    // document is where it starts (counted once, not by rescanning the file per document).
    let mut text = String::new();
    let mut want = Vec::new();
    let mut line = 1;
    for i in 0..500 {
        want.push(line);
        if i % 2 == 0 {
            text.push_str(&cm_json(&format!("c{i}")));
            text.push('\n');
            line += 1;
        } else {
            text.push_str(&format!(
                "{{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {{\"name\": \"c{i}\"}}\n}}\n\n"
            ));
            line += 6;
        }
    }
    let docs = read_documents("stream.json", &text, &Limits::default()).unwrap();
    let got: Vec<usize> = docs.iter().map(|d| d.source.line.unwrap()).collect();
    assert_eq!(got, want);
    let numbers: Vec<usize> = docs.iter().map(|d| d.source.document).collect();
    assert_eq!(numbers, (1..=500).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------------
// Unknown fields (strict field validation)

/// A DaemonSet with a misspelt field deep in a projected volume (`itmes`).
const PROJECTED_TYPO: &str = include_str!("../fixtures/invalid/projected-typo.yaml");

fn with_validation(field_validation: FieldValidation) -> LoadOptions {
    LoadOptions {
        field_validation,
        ..LoadOptions::default()
    }
}

#[test]
fn unknown_field_is_refused_with_its_path_in_the_api_servers_words() {
    let m = load_str("agent.yaml", PROJECTED_TYPO, &LoadOptions::default()).unwrap();
    assert!(m.daemonsets.is_empty());
    assert_eq!(m.invalid.len(), 1);
    let bad = &m.invalid[0];
    assert_eq!(bad.name, "kube-system/agent");
    assert_eq!(bad.source.to_string(), "agent.yaml, document 1 (line 1)");
    assert_eq!(
        paths(&bad.errors),
        ["spec.template.spec.volumes[0].projected.sources[0].itmes"]
    );
    assert_eq!(bad.errors[0].kind, FieldErrorKind::UnknownField);
    assert_eq!(
        bad.errors[0].to_string(),
        "strict decoding error: unknown field \"spec.template.spec.volumes[0].projected.sources[0].itmes\": the DaemonSet schema (apps/v1, Kubernetes v1.35) has no such field here, so the API server would refuse the object; correct its spelling or indentation, or remove it (--validate=warn plans without it)"
    );
    // Through a source, the error names the file and document too.
    let err = crate::source::SourceError::Invalid(m.invalid).to_string();
    assert!(
        err.contains("kube-system/agent (agent.yaml, document 1 (line 1)):\n    - strict decoding error: unknown field \"spec.template.spec.volumes[0].projected.sources[0].itmes\""),
        "{err}"
    );
}

#[test]
fn unknown_fields_at_the_wrong_level_each_named_once_and_validation_waits() {
    // `hostNetwork` one level too high, a misspelt metadata field, a typo inside a container
    // (twice, reported once), and an invalid restartPolicy the API server never reaches.
    let text = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, labelz: {a: b}}
spec:
  hostNetwork: true
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      restartPolicy: Never
      containers:
      - {name: a, image: i, imagePullPolicyy: Always}
      - {name: b, image: i, imagePullPolicyy: Always}
";
    let m = load_str("agent.yaml", text, &LoadOptions::default()).unwrap();
    assert_eq!(
        paths(&m.invalid[0].errors),
        [
            "metadata.labelz",
            "spec.hostNetwork",
            "spec.template.spec.containers[0].imagePullPolicyy",
            "spec.template.spec.containers[1].imagePullPolicyy",
        ]
    );
}

#[test]
fn unknown_fields_with_validate_warn_are_warnings_and_dropped() {
    let m = load_str(
        "agent.yaml",
        PROJECTED_TYPO,
        &with_validation(FieldValidation::Warn),
    )
    .unwrap();
    assert!(m.invalid.is_empty(), "{:?}", m.invalid);
    assert_eq!(
        m.daemonsets[0].warnings,
        ["unknown field \"spec.template.spec.volumes[0].projected.sources[0].itmes\""]
    );
    let rendered = serde_json::to_string(&m.daemonsets[0].daemonset).unwrap();
    assert!(!rendered.contains("itmes"), "{rendered}");
}

#[test]
fn unknown_fields_with_validate_ignore_are_dropped_silently() {
    let m = load_str(
        "agent.yaml",
        PROJECTED_TYPO,
        &with_validation(FieldValidation::Ignore),
    )
    .unwrap();
    assert!(m.invalid.is_empty());
    assert!(m.daemonsets[0].warnings.is_empty());
}

#[test]
fn unknown_fields_of_other_kinds_are_not_checked() {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, labelz: {{}}}}\nwhatever: 1\n---\napiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\nmetadata: {{name: k}}\nspec: {{anything: goes}}\n---\n{PROJECTED_TYPO}"
    );
    let m = load_str("mixed.yaml", &text, &LoadOptions::default()).unwrap();
    assert_eq!(m.others.len(), 2);
    assert_eq!(m.invalid.len(), 1);
    assert_eq!(m.invalid[0].source.document, 3);
}

#[test]
fn a_type_error_is_reported_before_unknown_fields() {
    let text = PROJECTED_TYPO.replace("selector:", "minReadySeconds: soon\n  selector:");
    let m = load_str("agent.yaml", &text, &LoadOptions::default()).unwrap();
    assert_eq!(paths(&m.invalid[0].errors), ["spec.minReadySeconds"]);
}

#[test]
fn unknown_fields_in_json_manifests_are_refused_too() {
    let mut v = base();
    v["spec"]["template"]["spec"]["containers"][0]["imagee"] = json!("x");
    let m = load_str("ds.json", &v.to_string(), &LoadOptions::default()).unwrap();
    assert_eq!(
        paths(&m.invalid[0].errors),
        ["spec.template.spec.containers[0].imagee"]
    );
}

#[test]
fn unknown_fields_of_a_daemonset_in_a_list_name_the_item() {
    let item = PROJECTED_TYPO
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect::<String>()
        .replacen("    apiVersion", "  - apiVersion", 1);
    let text = format!("apiVersion: v1\nkind: List\nitems:\n{item}");
    let m = load_str("list.yaml", &text, &LoadOptions::default()).unwrap();
    assert_eq!(
        m.invalid[0].source.to_string(),
        "list.yaml, document 1 (line 1), items[0]"
    );
    assert_eq!(
        paths(&m.invalid[0].errors),
        ["spec.template.spec.volumes[0].projected.sources[0].itmes"]
    );
}

//! API-server validation of `apps/v1` DaemonSets (create), with a solid subset of pod
//! template validation. Paths, kinds and messages follow the API server's.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, RollingUpdateDaemonSet};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, PodSpec, PodTemplateSpec, Probe, Toleration, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::FieldError;
use super::error::quote;

/// Validate a DaemonSet as the API server does on create (spec section 2.1).
///
/// Call it on a defaulted object (see [`super::apply_defaults`]); errors accumulate and come in
/// the API server's order. A selector with neither `matchLabels` nor `matchExpressions` set
/// (`None`, which is what k8s-openapi produces for a missing `selector`) is treated as absent;
/// one with an empty-but-present list or map is the explicit `selector: {}`.
pub fn validate(ds: &DaemonSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_object_meta(&ds.metadata, &mut errs);
    let default_spec = DaemonSetSpec::default();
    let spec = ds.spec.as_ref().unwrap_or(&default_spec);
    validate_spec(spec, &mut errs);
    errs
}

// ---------------------------------------------------------------------------------------------
// Name and label syntax (apimachinery/pkg/util/validation)

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";
const PORT_RANGE_MSG: &str = "must be between 1 and 65535, inclusive";
const NONNEGATIVE_MSG: &str = "must be greater than or equal to 0";

fn is_dns1123_label_chars(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// `IsDNS1123Label` messages.
fn dns1123_label(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > 63 {
        msgs.push("must be no more than 63 characters".to_string());
    }
    if !is_dns1123_label_chars(s) {
        msgs.push(DNS1123_LABEL_MSG.to_string());
    }
    msgs
}

/// `IsDNS1123Subdomain` messages.
fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > 253 {
        msgs.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(is_dns1123_label_chars) {
        msgs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    msgs
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// `IsQualifiedName` messages (label and annotation keys).
fn qualified_name(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                msgs.push("prefix part must be non-empty".to_string());
            } else {
                for m in dns1123_subdomain(prefix) {
                    msgs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            msgs.push(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string(),
            );
            return msgs;
        }
    };
    if name.is_empty() {
        msgs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        msgs.push("name part must be no more than 63 characters".to_string());
    }
    if !name.is_empty() && !is_qualified_name_part(name) {
        msgs.push(QUALIFIED_NAME_MSG.to_string());
    }
    msgs
}

/// `IsValidLabelValue` messages.
fn label_value(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > 63 {
        msgs.push("must be no more than 63 characters".to_string());
    }
    if !s.is_empty() && !is_qualified_name_part(s) {
        msgs.push(LABEL_VALUE_MSG.to_string());
    }
    msgs
}

/// `IsValidPortName` messages (IANA_SVC_NAME).
fn port_name(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > 15 {
        msgs.push("must be no more than 15 characters".to_string());
    }
    if !s
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        msgs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        msgs.push("must contain at least one letter (a-z)".to_string());
    }
    if s.contains("--") {
        msgs.push("must not contain consecutive hyphens".to_string());
    }
    if s.starts_with('-') || s.ends_with('-') {
        msgs.push("must not begin or end with a hyphen".to_string());
    }
    msgs
}

fn go_map(m: Option<&BTreeMap<String, String>>) -> String {
    match m {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
                .collect();
            format!("map[string]string{{{}}}", items.join(", "))
        }
    }
}

fn validate_labels(
    labels: Option<&BTreeMap<String, String>>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    for (k, v) in labels.into_iter().flatten() {
        for m in qualified_name(k) {
            errs.push(FieldError::invalid(path, quote(k), m));
        }
        for m in label_value(v) {
            errs.push(FieldError::invalid(path, quote(v), m));
        }
    }
}

const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn validate_annotations(
    ann: Option<&BTreeMap<String, String>>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let mut total = 0;
    for (k, v) in ann.into_iter().flatten() {
        for m in qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, quote(k), m));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError {
            path: path.to_string(),
            kind: super::FieldErrorKind::Invalid,
            value: Some(String::new()),
            detail: format!("must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"),
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Object metadata

fn validate_object_meta(meta: &ObjectMeta, errs: &mut Vec<FieldError>) {
    let name = meta.name.as_deref().unwrap_or("");
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    if name.is_empty() {
        if generate_name.is_empty() {
            errs.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        for m in dns1123_subdomain(name) {
            errs.push(FieldError::invalid("metadata.name", quote(name), m));
        }
    }
    let ns = meta.namespace.as_deref().unwrap_or("");
    if ns.is_empty() {
        errs.push(FieldError::required("metadata.namespace", ""));
    } else {
        for m in dns1123_label(ns) {
            errs.push(FieldError::invalid("metadata.namespace", quote(ns), m));
        }
    }
    validate_labels(meta.labels.as_ref(), "metadata.labels", errs);
    validate_annotations(meta.annotations.as_ref(), "metadata.annotations", errs);
}

// ---------------------------------------------------------------------------------------------
// Label selector

/// Validate a label selector; returns whether it converts to a selector (no errors).
fn validate_label_selector(sel: &LabelSelector, path: &str, errs: &mut Vec<FieldError>) -> bool {
    let before = errs.len();
    validate_labels(
        sel.match_labels.as_ref(),
        &format!("{path}.matchLabels"),
        errs,
    );
    for (i, req) in sel.match_expressions.iter().flatten().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let values = req.values.as_deref().unwrap_or(&[]);
        match req.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        format!("{p}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        format!("{p}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                format!("{p}.operator"),
                quote(other),
                "not a valid selector operator",
            )),
        }
        for m in qualified_name(&req.key) {
            errs.push(FieldError::invalid(format!("{p}.key"), quote(&req.key), m));
        }
        for (vi, v) in values.iter().enumerate() {
            for m in label_value(v) {
                errs.push(FieldError::invalid(
                    format!("{p}.values[{vi}]"),
                    quote(v),
                    m,
                ));
            }
        }
    }
    errs.len() == before
}

fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|r| {
        let values = r.values.as_deref().unwrap_or(&[]);
        match r.operator.as_str() {
            "In" => labels.get(&r.key).is_some_and(|v| values.contains(v)),
            "NotIn" => labels.get(&r.key).is_none_or(|v| !values.contains(v)),
            "Exists" => labels.contains_key(&r.key),
            "DoesNotExist" => !labels.contains_key(&r.key),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

// ---------------------------------------------------------------------------------------------
// DaemonSet spec

fn validate_spec(spec: &DaemonSetSpec, errs: &mut Vec<FieldError>) {
    let sel = &spec.selector;
    let template_labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref());
    let empty = BTreeMap::new();
    let labels = template_labels.unwrap_or(&empty);
    let is_nil = sel.match_labels.is_none() && sel.match_expressions.is_none();
    let converts = validate_label_selector(sel, "spec.selector", errs);
    // A nil selector matches nothing; an empty one matches everything.
    let matches = if is_nil {
        false
    } else {
        selector_matches(sel, labels)
    };
    if converts && !matches {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            go_map(template_labels),
            "`selector` does not match template `labels`",
        ));
    }
    let n = sel.match_labels.as_ref().map_or(0, BTreeMap::len)
        + sel.match_expressions.as_ref().map_or(0, Vec::len);
    if !is_nil && n == 0 {
        errs.push(FieldError::invalid(
            "spec.selector",
            "v1.LabelSelector{MatchLabels:map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}",
            "empty selector is invalid for daemonset",
        ));
    }

    validate_pod_template(&spec.template, errs);

    let default_pod = PodSpec::default();
    let pod = spec.template.spec.as_ref().unwrap_or(&default_pod);
    let restart = pod.restart_policy.as_deref().unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            quote(restart),
            &["Always"],
        ));
    }
    if pod.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    if min_ready < 0 {
        errs.push(FieldError::invalid(
            "spec.minReadySeconds",
            min_ready.to_string(),
            NONNEGATIVE_MSG,
        ));
    }
    validate_update_strategy(spec, errs);
    if let Some(limit) = spec.revision_history_limit
        && limit < 0
    {
        errs.push(FieldError::invalid(
            "spec.revisionHistoryLimit",
            limit.to_string(),
            NONNEGATIVE_MSG,
        ));
    }
}

fn validate_update_strategy(spec: &DaemonSetSpec, errs: &mut Vec<FieldError>) {
    let strategy = spec.update_strategy.as_ref();
    let type_ = strategy.and_then(|s| s.type_.as_deref()).unwrap_or("");
    match type_ {
        "OnDelete" => {}
        "RollingUpdate" => match strategy.and_then(|s| s.rolling_update.as_ref()) {
            None => errs.push(FieldError::required(
                "spec.updateStrategy.rollingUpdate",
                "",
            )),
            Some(ru) => validate_rolling_update(ru, errs),
        },
        other => errs.push(FieldError::not_supported(
            "spec.updateStrategy",
            quote(other),
            &["RollingUpdate", "OnDelete"],
        )),
    }
}

fn render_int_or_string(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => quote(s),
    }
}

/// The number of a valid percent string (`^[0-9]+%$`).
fn percent_value(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<i64>().unwrap_or(i64::MAX))
}

/// `getIntOrPercentValue`: a valid percent's number, else the integer (invalid strings are 0).
fn int_or_percent_value(v: &IntOrString) -> i64 {
    match v {
        IntOrString::Int(i) => i64::from(*i),
        IntOrString::String(s) => percent_value(s).unwrap_or_else(|| s.parse::<i64>().unwrap_or(0)),
    }
}

fn validate_int_or_percent(v: &IntOrString, path: &str, errs: &mut Vec<FieldError>) {
    match v {
        IntOrString::Int(i) => {
            if *i < 0 {
                errs.push(FieldError::invalid(path, i.to_string(), NONNEGATIVE_MSG));
            }
        }
        IntOrString::String(s) => {
            if percent_value(s).is_none() {
                errs.push(FieldError::invalid(path, quote(s), PERCENT_MSG));
            }
        }
    }
}

fn validate_rolling_update(ru: &RollingUpdateDaemonSet, errs: &mut Vec<FieldError>) {
    const BASE: &str = "spec.updateStrategy.rollingUpdate";
    let zero = IntOrString::Int(0);
    let unavailable = ru.max_unavailable.as_ref().unwrap_or(&zero);
    let surge = ru.max_surge.as_ref().unwrap_or(&zero);
    let unavailable_path = format!("{BASE}.maxUnavailable");
    let surge_path = format!("{BASE}.maxSurge");
    validate_int_or_percent(unavailable, &unavailable_path, errs);
    validate_int_or_percent(surge, &surge_path, errs);
    for (v, p) in [(unavailable, &unavailable_path), (surge, &surge_path)] {
        if let IntOrString::String(s) = v
            && percent_value(s).is_some_and(|n| n > 100)
        {
            errs.push(FieldError::invalid(
                p.as_str(),
                quote(s),
                "must not be greater than 100%",
            ));
        }
    }
    let has_unavailable = int_or_percent_value(unavailable) != 0;
    let has_surge = int_or_percent_value(surge) != 0;
    if has_unavailable && has_surge {
        errs.push(FieldError::invalid(
            surge_path,
            render_int_or_string(surge),
            "may not be set when maxUnavailable is non-zero",
        ));
    } else if !has_unavailable && !has_surge {
        errs.push(FieldError::required(
            unavailable_path,
            "cannot be 0 when maxSurge is 0",
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Pod template

fn validate_pod_template(t: &PodTemplateSpec, errs: &mut Vec<FieldError>) {
    if let Some(meta) = t.metadata.as_ref() {
        validate_labels(meta.labels.as_ref(), "spec.template.metadata.labels", errs);
        validate_annotations(
            meta.annotations.as_ref(),
            "spec.template.metadata.annotations",
            errs,
        );
    }
    let default_pod = PodSpec::default();
    let pod = t.spec.as_ref().unwrap_or(&default_pod);
    validate_pod_spec(pod, "spec.template.spec", errs);
    if pod
        .ephemeral_containers
        .as_ref()
        .is_some_and(|e| !e.is_empty())
    {
        errs.push(FieldError::forbidden(
            "spec.template.spec.ephemeralContainers",
            "ephemeral containers not allowed in pod template",
        ));
    }
}

fn validate_pod_spec(pod: &PodSpec, path: &str, errs: &mut Vec<FieldError>) {
    let volumes = validate_volumes(
        pod.volumes.as_deref().unwrap_or(&[]),
        &format!("{path}.volumes"),
        errs,
    );
    let containers_path = format!("{path}.containers");
    if pod.containers.is_empty() {
        errs.push(FieldError::required(containers_path.as_str(), ""));
    }
    let mut names = HashSet::new();
    for (i, c) in pod.containers.iter().enumerate() {
        let p = format!("{containers_path}[{i}]");
        validate_container(c, &volumes, &p, errs);
        if !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(format!("{p}.name"), quote(&c.name)));
        }
        if let Some(probe) = c.liveness_probe.as_ref()
            && probe.success_threshold.unwrap_or(0) != 1
        {
            errs.push(FieldError::invalid(
                format!("{p}.livenessProbe.successThreshold"),
                probe.success_threshold.unwrap_or(0).to_string(),
                "must be 1",
            ));
        }
        if let Some(probe) = c.startup_probe.as_ref()
            && probe.success_threshold.unwrap_or(0) != 1
        {
            errs.push(FieldError::invalid(
                format!("{p}.startupProbe.successThreshold"),
                probe.success_threshold.unwrap_or(0).to_string(),
                "must be 1",
            ));
        }
    }
    host_port_conflicts(&pod.containers, &containers_path, errs);

    let init_path = format!("{path}.initContainers");
    let inits = pod.init_containers.as_deref().unwrap_or(&[]);
    let mut init_names = HashSet::new();
    for (i, c) in inits.iter().enumerate() {
        let p = format!("{init_path}[{i}]");
        validate_container(c, &volumes, &p, errs);
        if names.contains(c.name.as_str()) || !init_names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(format!("{p}.name"), quote(&c.name)));
        }
        let sidecar = c.restart_policy.as_deref() == Some("Always");
        if let Some(rp) = c.restart_policy.as_deref()
            && rp != "Always"
        {
            errs.push(FieldError::not_supported(
                format!("{p}.restartPolicy"),
                quote(rp),
                &["Always"],
            ));
        }
        if !sidecar {
            let forbidden = "may not be set for init containers without restartPolicy=Always";
            if c.lifecycle.is_some() {
                errs.push(FieldError::forbidden(format!("{p}.lifecycle"), forbidden));
            }
            if c.liveness_probe.is_some() {
                errs.push(FieldError::forbidden(
                    format!("{p}.livenessProbe"),
                    forbidden,
                ));
            }
            if c.readiness_probe.is_some() {
                errs.push(FieldError::forbidden(
                    format!("{p}.readinessProbe"),
                    forbidden,
                ));
            }
            if c.startup_probe.is_some() {
                errs.push(FieldError::forbidden(
                    format!("{p}.startupProbe"),
                    forbidden,
                ));
            }
        }
    }
    host_port_conflicts(inits, &init_path, errs);

    if pod.host_network == Some(true) {
        for (i, c) in pod.containers.iter().enumerate() {
            for (j, port) in c.ports.iter().flatten().enumerate() {
                let hp = port.host_port.unwrap_or(0);
                if hp != 0 && hp != port.container_port {
                    errs.push(FieldError::invalid(
                        format!("{containers_path}[{i}].ports[{j}].containerPort"),
                        port.container_port.to_string(),
                        "must match `hostPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }

    let restart = pod.restart_policy.as_deref().unwrap_or("");
    match restart {
        "Always" | "OnFailure" | "Never" => {}
        "" => errs.push(FieldError::required(format!("{path}.restartPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            format!("{path}.restartPolicy"),
            quote(other),
            &["Always", "OnFailure", "Never"],
        )),
    }
    let dns = pod.dns_policy.as_deref().unwrap_or("");
    match dns {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => errs.push(FieldError::required(format!("{path}.dnsPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            format!("{path}.dnsPolicy"),
            quote(other),
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    validate_labels(
        pod.node_selector.as_ref(),
        &format!("{path}.nodeSelector"),
        errs,
    );

    if let Some(san) = pod
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        for m in dns1123_subdomain(san) {
            errs.push(FieldError::invalid(
                format!("{path}.serviceAccountName"),
                quote(san),
                m,
            ));
        }
    }
    if let Some(node) = pod.node_name.as_deref().filter(|s| !s.is_empty()) {
        for m in dns1123_subdomain(node) {
            errs.push(FieldError::invalid(
                format!("{path}.nodeName"),
                quote(node),
                m,
            ));
        }
    }
    if let Some(ads) = pod.active_deadline_seconds
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(FieldError::invalid(
            format!("{path}.activeDeadlineSeconds"),
            ads.to_string(),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    if let Some(h) = pod.hostname.as_deref().filter(|s| !s.is_empty()) {
        for m in dns1123_label(h) {
            errs.push(FieldError::invalid(format!("{path}.hostname"), quote(h), m));
        }
    }
    validate_tolerations(
        pod.tolerations.as_deref().unwrap_or(&[]),
        &format!("{path}.tolerations"),
        errs,
    );
    if let Some(pc) = pod.priority_class_name.as_deref().filter(|s| !s.is_empty()) {
        for m in dns1123_subdomain(pc) {
            errs.push(FieldError::invalid(
                format!("{path}.priorityClassName"),
                quote(pc),
                m,
            ));
        }
    }
    if let Some(g) = pod.termination_grace_period_seconds
        && g < 0
    {
        errs.push(FieldError::invalid(
            format!("{path}.terminationGracePeriodSeconds"),
            g.to_string(),
            NONNEGATIVE_MSG,
        ));
    }
}

fn validate_tolerations(tols: &[Toleration], path: &str, errs: &mut Vec<FieldError>) {
    for (i, t) in tols.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let key = t.key.as_deref().unwrap_or("");
        let op = t.operator.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        if !key.is_empty() {
            for m in qualified_name(key) {
                errs.push(FieldError::invalid(format!("{p}.key"), quote(key), m));
            }
        }
        if key.is_empty() && op != "Exists" {
            errs.push(FieldError::invalid(
                format!("{p}.operator"),
                quote(op),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.toleration_seconds.is_some() && t.effect.as_deref() != Some("NoExecute") {
            errs.push(FieldError::invalid(
                format!("{p}.effect"),
                quote(t.effect.as_deref().unwrap_or("")),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "" | "Equal" | "Lt" | "Gt" => {
                for m in label_value(value) {
                    errs.push(FieldError::invalid(
                        format!("{p}.operator"),
                        quote(value),
                        m,
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{p}.operator"),
                        quote(value),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                format!("{p}.operator"),
                quote(other),
                &["Equal", "Exists"],
            )),
        }
        if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty())
            && !matches!(e, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            errs.push(FieldError::not_supported(
                format!("{p}.effect"),
                quote(e),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
}

fn host_port_conflicts(containers: &[Container], path: &str, errs: &mut Vec<FieldError>) {
    let mut seen = HashSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, p) in c.ports.iter().flatten().enumerate() {
            let hp = p.host_port.unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{}",
                p.host_ip.as_deref().unwrap_or(""),
                p.protocol.as_deref().unwrap_or(""),
                hp
            );
            if !seen.insert(key.clone()) {
                errs.push(FieldError::duplicate(
                    format!("{path}[{ci}].ports[{pi}]"),
                    quote(&key),
                ));
            }
        }
    }
}

/// Validate volumes; returns the names of the valid ones (invalid volumes cannot be mounted).
fn validate_volumes(
    volumes: &[Volume],
    path: &str,
    errs: &mut Vec<FieldError>,
) -> BTreeSet<String> {
    let mut valid = BTreeSet::new();
    let mut all = HashSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let mut el = Vec::new();
        validate_volume_source(v, &p, &mut el);
        if v.name.is_empty() {
            el.push(FieldError::required(format!("{p}.name"), ""));
        } else {
            for m in dns1123_label(&v.name) {
                el.push(FieldError::invalid(format!("{p}.name"), quote(&v.name), m));
            }
        }
        if all.contains(v.name.as_str()) {
            el.push(FieldError::duplicate(format!("{p}.name"), quote(&v.name)));
        }
        if el.is_empty() {
            all.insert(v.name.as_str());
            valid.insert(v.name.clone());
        } else {
            errs.extend(el);
        }
    }
    valid
}

fn validate_mode(mode: Option<i32>, path: String, errs: &mut Vec<FieldError>) {
    if let Some(m) = mode
        && !(0..=0o777).contains(&m)
    {
        errs.push(FieldError::invalid(
            path,
            m.to_string(),
            "must be a number between 0 and 0777 (octal), both inclusive",
        ));
    }
}

fn validate_local_path(s: &str, path: String, errs: &mut Vec<FieldError>) {
    if s.starts_with('/') {
        errs.push(FieldError::invalid(
            path.as_str(),
            quote(s),
            "must be a relative path",
        ));
    }
    if s.split('/').any(|part| part == "..") {
        errs.push(FieldError::invalid(path, quote(s), "must not contain '..'"));
    }
}

fn validate_key_to_paths(
    items: Option<&Vec<k8s_openapi::api::core::v1::KeyToPath>>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    for (i, item) in items.into_iter().flatten().enumerate() {
        let p = format!("{path}.items[{i}]");
        if item.key.is_empty() {
            errs.push(FieldError::required(format!("{p}.key"), ""));
        }
        if item.path.is_empty() {
            errs.push(FieldError::required(format!("{p}.path"), ""));
        } else {
            validate_local_path(&item.path, format!("{p}.path"), errs);
        }
        validate_mode(item.mode, format!("{p}.mode"), errs);
    }
}

fn validate_volume_source(v: &Volume, p: &str, errs: &mut Vec<FieldError>) {
    let json = serde_json::to_value(v).unwrap_or_default();
    let sources: Vec<String> = json
        .as_object()
        .map(|m| m.keys().filter(|k| *k != "name").cloned().collect())
        .unwrap_or_default();
    if sources.is_empty() {
        errs.push(FieldError::required(p, "must specify a volume type"));
        return;
    }
    for extra in sources.iter().skip(1) {
        errs.push(FieldError::forbidden(
            format!("{p}.{extra}"),
            "may not specify more than 1 volume type",
        ));
    }
    if let Some(s) = v.host_path.as_ref() {
        if s.path.is_empty() {
            errs.push(FieldError::required(format!("{p}.hostPath.path"), ""));
        } else if s.path.split('/').any(|part| part == "..") {
            errs.push(FieldError::invalid(
                format!("{p}.hostPath.path"),
                quote(&s.path),
                "must not contain '..'",
            ));
        }
        let t = s.type_.as_deref().unwrap_or("");
        const TYPES: [&str; 8] = [
            "",
            "BlockDevice",
            "CharDevice",
            "Directory",
            "DirectoryOrCreate",
            "File",
            "FileOrCreate",
            "Socket",
        ];
        if !TYPES.contains(&t) {
            errs.push(FieldError::not_supported(
                format!("{p}.hostPath.type"),
                quote(t),
                &TYPES,
            ));
        }
    }
    if let Some(s) = v.config_map.as_ref() {
        let np = format!("{p}.configMap.name");
        if s.name.is_empty() {
            errs.push(FieldError::required(np, ""));
        } else {
            for m in dns1123_subdomain(&s.name) {
                errs.push(FieldError::invalid(np.as_str(), quote(&s.name), m));
            }
        }
        validate_mode(s.default_mode, format!("{p}.configMap.defaultMode"), errs);
        validate_key_to_paths(s.items.as_ref(), &format!("{p}.configMap"), errs);
    }
    if let Some(s) = v.secret.as_ref() {
        let name = s.secret_name.as_deref().unwrap_or("");
        let np = format!("{p}.secret.secretName");
        if name.is_empty() {
            errs.push(FieldError::required(np, ""));
        } else {
            for m in dns1123_subdomain(name) {
                errs.push(FieldError::invalid(np.as_str(), quote(name), m));
            }
        }
        validate_mode(s.default_mode, format!("{p}.secret.defaultMode"), errs);
        validate_key_to_paths(s.items.as_ref(), &format!("{p}.secret"), errs);
    }
    if let Some(s) = v.persistent_volume_claim.as_ref()
        && s.claim_name.is_empty()
    {
        errs.push(FieldError::required(
            format!("{p}.persistentVolumeClaim.claimName"),
            "",
        ));
    }
    if let Some(s) = v.csi.as_ref()
        && s.driver.is_empty()
    {
        errs.push(FieldError::required(format!("{p}.csi.driver"), ""));
    }
    if let Some(s) = v.nfs.as_ref() {
        if s.server.is_empty() {
            errs.push(FieldError::required(format!("{p}.nfs.server"), ""));
        }
        if s.path.is_empty() {
            errs.push(FieldError::required(format!("{p}.nfs.path"), ""));
        } else if !s.path.starts_with('/') {
            errs.push(FieldError::invalid(
                format!("{p}.nfs.path"),
                quote(&s.path),
                "must be an absolute path",
            ));
        }
    }
    if let Some(s) = v.downward_api.as_ref() {
        validate_mode(s.default_mode, format!("{p}.downwardAPI.defaultMode"), errs);
        for (i, item) in s.items.iter().flatten().enumerate() {
            let ip = format!("{p}.downwardAPI.items[{i}]");
            if item.path.is_empty() {
                errs.push(FieldError::required(format!("{ip}.path"), ""));
            } else {
                validate_local_path(&item.path, format!("{ip}.path"), errs);
            }
        }
    }
    if let Some(s) = v.projected.as_ref() {
        validate_mode(s.default_mode, format!("{p}.projected.defaultMode"), errs);
    }
}

fn validate_container(
    c: &Container,
    volumes: &BTreeSet<String>,
    p: &str,
    errs: &mut Vec<FieldError>,
) {
    if c.name.is_empty() {
        errs.push(FieldError::required(format!("{p}.name"), ""));
    } else {
        for m in dns1123_label(&c.name) {
            errs.push(FieldError::invalid(format!("{p}.name"), quote(&c.name), m));
        }
    }
    if c.image.as_deref().unwrap_or("").is_empty() {
        errs.push(FieldError::required(format!("{p}.image"), ""));
    }
    validate_ports(
        c.ports.as_deref().unwrap_or(&[]),
        &format!("{p}.ports"),
        errs,
    );
    for (i, e) in c.env.iter().flatten().enumerate() {
        let ep = format!("{p}.env[{i}]");
        if e.name.is_empty() {
            errs.push(FieldError::required(format!("{ep}.name"), ""));
        } else if e.name.contains('=') || !e.name.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            errs.push(FieldError::invalid(
                format!("{ep}.name"),
                quote(&e.name),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        if let Some(vf) = e.value_from.as_ref() {
            let n = [
                vf.field_ref.is_some(),
                vf.resource_field_ref.is_some(),
                vf.config_map_key_ref.is_some(),
                vf.secret_key_ref.is_some(),
                vf.file_key_ref.is_some(),
            ]
            .iter()
            .filter(|b| **b)
            .count();
            if n == 0 {
                errs.push(FieldError::invalid(
                    format!("{ep}.valueFrom"),
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ));
            } else if n > 1 {
                errs.push(FieldError::invalid(
                    format!("{ep}.valueFrom"),
                    "",
                    "may not have more than one field specified at a time",
                ));
            }
            if e.value.as_deref().is_some_and(|v| !v.is_empty()) {
                errs.push(FieldError::invalid(
                    format!("{ep}.valueFrom"),
                    "",
                    "may not be specified when `value` is not empty",
                ));
            }
        }
    }
    let mut mount_paths = HashSet::new();
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let mp = format!("{p}.volumeMounts[{i}]");
        if m.name.is_empty() {
            errs.push(FieldError::required(format!("{mp}.name"), ""));
        }
        if !volumes.contains(&m.name) {
            errs.push(FieldError::not_found(format!("{mp}.name"), quote(&m.name)));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(format!("{mp}.mountPath"), ""));
        } else if !mount_paths.insert(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(
                format!("{mp}.mountPath"),
                quote(&m.mount_path),
                "must be unique",
            ));
        }
        if let Some(sp) = m.sub_path.as_deref().filter(|s| !s.is_empty()) {
            validate_local_path(sp, format!("{mp}.subPath"), errs);
        }
        if let Some(prop) = m.mount_propagation.as_deref() {
            match prop {
                "None" | "HostToContainer" => {}
                "Bidirectional" => {
                    let privileged = c
                        .security_context
                        .as_ref()
                        .and_then(|s| s.privileged)
                        .unwrap_or(false);
                    if !privileged {
                        errs.push(FieldError::forbidden(
                            format!("{mp}.mountPropagation"),
                            "Bidirectional mount propagation is available only to privileged containers",
                        ));
                    }
                }
                other => errs.push(FieldError::not_supported(
                    format!("{mp}.mountPropagation"),
                    quote(other),
                    &["Bidirectional", "HostToContainer", "None"],
                )),
            }
        }
    }
    let pull = c.image_pull_policy.as_deref().unwrap_or("");
    match pull {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(FieldError::required(format!("{p}.imagePullPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            format!("{p}.imagePullPolicy"),
            quote(other),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
    let tmp = c.termination_message_policy.as_deref().unwrap_or("");
    match tmp {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(FieldError::required(
            format!("{p}.terminationMessagePolicy"),
            "",
        )),
        other => errs.push(FieldError::not_supported(
            format!("{p}.terminationMessagePolicy"),
            quote(other),
            &["File", "FallbackToLogsOnError"],
        )),
    }
    for (name, probe) in [
        ("livenessProbe", &c.liveness_probe),
        ("readinessProbe", &c.readiness_probe),
        ("startupProbe", &c.startup_probe),
    ] {
        if let Some(probe) = probe {
            validate_probe(probe, &format!("{p}.{name}"), errs);
        }
    }
}

fn validate_ports(ports: &[ContainerPort], path: &str, errs: &mut Vec<FieldError>) {
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = format!("{path}[{i}]");
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
            let msgs = port_name(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(FieldError::invalid(format!("{p}.name"), quote(name), m));
                }
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(format!("{p}.name"), quote(name)));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(format!("{p}.containerPort"), ""));
        } else if !(1..=65535).contains(&port.container_port) {
            errs.push(FieldError::invalid(
                format!("{p}.containerPort"),
                port.container_port.to_string(),
                PORT_RANGE_MSG,
            ));
        }
        let hp = port.host_port.unwrap_or(0);
        if hp != 0 && !(1..=65535).contains(&hp) {
            errs.push(FieldError::invalid(
                format!("{p}.hostPort"),
                hp.to_string(),
                PORT_RANGE_MSG,
            ));
        }
        match port.protocol.as_deref().unwrap_or("") {
            "TCP" | "UDP" | "SCTP" => {}
            "" => errs.push(FieldError::required(format!("{p}.protocol"), "")),
            other => errs.push(FieldError::not_supported(
                format!("{p}.protocol"),
                quote(other),
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
}

fn validate_port_num_or_name(port: &IntOrString, path: String, errs: &mut Vec<FieldError>) {
    match port {
        IntOrString::Int(n) => {
            if !(1..=65535).contains(n) {
                errs.push(FieldError::invalid(path, n.to_string(), PORT_RANGE_MSG));
            }
        }
        IntOrString::String(s) => {
            for m in port_name(s) {
                errs.push(FieldError::invalid(path.as_str(), quote(s), m));
            }
        }
    }
}

fn validate_probe(probe: &Probe, p: &str, errs: &mut Vec<FieldError>) {
    let handlers = [
        ("exec", probe.exec.is_some()),
        ("httpGet", probe.http_get.is_some()),
        ("tcpSocket", probe.tcp_socket.is_some()),
        ("grpc", probe.grpc.is_some()),
    ];
    let set: Vec<&str> = handlers
        .iter()
        .filter(|(_, s)| *s)
        .map(|(n, _)| *n)
        .collect();
    if set.is_empty() {
        errs.push(FieldError::required(p, "must specify a handler type"));
    }
    for extra in set.iter().skip(1) {
        errs.push(FieldError::forbidden(
            format!("{p}.{extra}"),
            "may not specify more than 1 handler type",
        ));
    }
    for (name, v) in [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ] {
        if let Some(v) = v
            && v < 0
        {
            errs.push(FieldError::invalid(
                format!("{p}.{name}"),
                v.to_string(),
                NONNEGATIVE_MSG,
            ));
        }
    }
    if let Some(g) = probe.http_get.as_ref() {
        if g.path.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(format!("{p}.httpGet.path"), ""));
        }
        validate_port_num_or_name(&g.port, format!("{p}.httpGet.port"), errs);
        match g.scheme.as_deref().unwrap_or("") {
            "HTTP" | "HTTPS" => {}
            other => errs.push(FieldError::not_supported(
                format!("{p}.httpGet.scheme"),
                quote(other),
                &["HTTP", "HTTPS"],
            )),
        }
    }
    if let Some(t) = probe.tcp_socket.as_ref() {
        validate_port_num_or_name(&t.port, format!("{p}.tcpSocket.port"), errs);
    }
    if let Some(g) = probe.grpc.as_ref()
        && !(1..=65535).contains(&g.port)
    {
        errs.push(FieldError::invalid(
            format!("{p}.grpc.port"),
            g.port.to_string(),
            PORT_RANGE_MSG,
        ));
    }
}

/// Validate an update of `old` to `new` as the API server's `apps/v1` endpoint does (spec
/// section 2.2): everything [`validate`] checks, plus the immutable selector. The template,
/// update strategy, minReadySeconds and revisionHistoryLimit may change.
pub fn validate_update(old: &DaemonSet, new: &DaemonSet) -> Vec<FieldError> {
    let mut errs = validate(new);
    let selector = |ds: &DaemonSet| ds.spec.as_ref().map(|s| s.selector.clone());
    if selector(old) != selector(new) {
        let shown = selector(new)
            .map(|s| serde_json::to_string(&s).unwrap_or_default())
            .unwrap_or_default();
        errs.push(FieldError::invalid(
            "spec.selector",
            shown,
            "field is immutable",
        ));
    }
    errs
}

/// The `(generation, templateGeneration)` the API server stores after an update from `old` to
/// `new` (spec section 1, registry strategy): a template change bumps both, any other spec
/// change bumps only `generation`, a metadata-only change bumps neither. Absent values count
/// as 1, as on create.
pub fn next_generations(
    old: &DaemonSet,
    new: &DaemonSet,
    old_generations: (i64, i64),
) -> (i64, i64) {
    let (generation, template_generation) = (old_generations.0.max(1), old_generations.1.max(1));
    let spec_json = |ds: &DaemonSet| serde_json::to_value(&ds.spec).unwrap_or_default();
    let template_json = |ds: &DaemonSet| {
        serde_json::to_value(ds.spec.as_ref().map(|s| &s.template)).unwrap_or_default()
    };
    if template_json(old) != template_json(new) {
        (generation + 1, template_generation + 1)
    } else if spec_json(old) != spec_json(new) {
        (generation + 1, template_generation)
    } else {
        (generation, template_generation)
    }
}

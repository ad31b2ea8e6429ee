//! API-server validation of `apps/v1` DaemonSets on create, pod template included, with the
//! feature gates at their defaults for the Kubernetes version of [`Gates`] (1.31 to 1.35;
//! v1.35 by default).
//!
//! The files mirror upstream's families, so a reader holding `pkg/apis/core/validation` finds
//! each rule by its name: [`meta`] (object metadata, labels, annotations, label selectors,
//! pod-specific annotations), [`pod`] (`ValidatePodTemplateSpec`, `ValidatePodSpec` and its
//! pod-level rules), [`containers`] (regular, init and ephemeral containers, ports, probes,
//! lifecycle, restart rules), [`env`] (env and envFrom), [`resources`] (resource requirements,
//! quantities, hugepages, claims), [`volumes`] (every volume source, mounts, devices),
//! [`affinity`], [`tolerations`], [`topology`] (spread constraints), [`dns`], [`security`]
//! (security contexts, sysctls, seccomp, AppArmor, Windows options, `spec.os`) and [`names`]
//! (apimachinery's syntax checks). The DaemonSet's own fields (`ValidateDaemonSetSpec`) are
//! here. `docs/validation.md` lists every upstream function and where it is implemented.
//!
//! Paths, kinds and messages are the API server's. Errors come in upstream's order (map keys
//! in sorted order where upstream iterates a Go map); identical errors are reported once, as
//! the API server's aggregated message does.

mod affinity;
mod containers;
mod dns;
mod env;
mod meta;
pub mod names;
mod paths;
mod pod;
mod resources;
mod security;
mod tolerations;
mod topology;
mod volumes;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, RollingUpdateDaemonSet};
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::FieldError;
use super::error::quote;
use crate::model::KubeVersion;

/// Validate a DaemonSet as the API server does on create (docs/semantics.md §2.1).
///
/// Call it on a defaulted object (see [`super::apply_defaults`]); errors accumulate and come in
/// the API server's order. A selector with neither `matchLabels` nor `matchExpressions` set
/// (`None`, which is what k8s-openapi produces for a missing `selector`) is treated as absent;
/// one with an empty-but-present list or map is the explicit `selector: {}`.
pub fn validate(ds: &DaemonSet) -> Vec<FieldError> {
    validate_with(ds, &Gates::default())
}

/// [`validate`] for a cluster whose feature gates are `gates`.
pub fn validate_with(ds: &DaemonSet, gates: &Gates) -> Vec<FieldError> {
    let mut errs = Vec::new();
    meta::validate_object_meta(&ds.metadata, &mut errs);
    let default_spec = DaemonSetSpec::default();
    let spec = ds.spec.as_ref().unwrap_or(&default_spec);
    validate_daemon_set_spec(spec, &FieldPath::root("spec"), gates, &mut errs);
    dedup(errs)
}

/// What validation depends on besides the object: the Kubernetes version the plan is for (its
/// feature gates at their defaults) and the one gate a cluster may turn on that daemonsync
/// models. The default is Kubernetes v1.35 with its defaults.
///
/// Versions 1.31 to 1.35 differ in what they accept (docs/validation.md lists it): the
/// methods below say which rules apply, each named after its gate. Fields a version does not
/// keep at all (a gate off, or not there yet) are checked before validation, when a manifest
/// is read (`manifest::served`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gates {
    /// The Kubernetes version (only the minor matters).
    pub version: KubeVersion,
    /// `TaintTolerationComparisonOperators` (alpha in v1.35, off by default): `Lt` and `Gt`
    /// tolerations with a decimal integer value. Turning it on has no effect before v1.35.
    pub taint_toleration_comparison_operators: bool,
}

impl Gates {
    /// The defaults of `version`.
    pub fn for_version(version: KubeVersion) -> Gates {
        Gates {
            version,
            ..Gates::default()
        }
    }

    /// `ContainerRestartRules` (beta and on from v1.35): containers may set `restartPolicy`
    /// and `restartPolicyRules`; before, only an init container's `restartPolicy: Always`.
    pub(crate) fn container_restart_rules(&self) -> bool {
        self.version.at_least(35)
    }

    /// `PodLifecycleSleepActionAllowZero` (beta and on from v1.33): `sleep.seconds: 0`.
    pub(crate) fn sleep_action_allow_zero(&self) -> bool {
        self.version.at_least(33)
    }

    /// `RelaxedEnvironmentVariableValidation` (beta and on from v1.32): any printable ASCII
    /// but `=` in environment variable names; before, `IsEnvVarName`.
    pub(crate) fn relaxed_env_var_names(&self) -> bool {
        self.version.at_least(32)
    }

    /// `RelaxedDNSSearchValidation` (beta and on from v1.33): `_` and a lone `.` in DNS
    /// search domains.
    pub(crate) fn relaxed_dns_search(&self) -> bool {
        self.version.at_least(33)
    }

    /// `TaintTolerationComparisonOperators`: on, and in a version that has it.
    pub(crate) fn toleration_comparison_operators(&self) -> bool {
        self.taint_toleration_comparison_operators && self.version.at_least(35)
    }

    /// What an error a version-dependent rule raised adds to upstream's message: the version,
    /// and from which one the gate accepts it.
    pub(crate) fn refused_before(&self, gate: &str, since: u32) -> String {
        format!(
            "(Kubernetes v{}; accepted from v1.{since}, where {gate} is on)",
            self.version.minor_string()
        )
    }
}

/// The API server prints each distinct error once (`ErrorList.ToAggregate`).
fn dedup(errs: Vec<FieldError>) -> Vec<FieldError> {
    let mut out: Vec<FieldError> = Vec::with_capacity(errs.len());
    for e in errs {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Field paths and shared helpers

/// A field path as upstream's `field.Path` prints it: `spec.containers[0].resources.limits[cpu]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldPath(String);

impl FieldPath {
    /// A path starting at `name`.
    pub(crate) fn root(name: &str) -> FieldPath {
        FieldPath(name.to_string())
    }

    /// `path.name`.
    pub(crate) fn child(&self, name: &str) -> FieldPath {
        FieldPath(format!("{}.{name}", self.0))
    }

    /// `path[i]`.
    pub(crate) fn index(&self, i: usize) -> FieldPath {
        FieldPath(format!("{}[{i}]", self.0))
    }

    /// `path[key]` (map keys are printed bare, as upstream does).
    pub(crate) fn key(&self, key: &str) -> FieldPath {
        FieldPath(format!("{}[{key}]", self.0))
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&FieldPath> for String {
    fn from(p: &FieldPath) -> String {
        p.0.clone()
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> String {
        p.0
    }
}

/// Errors collected by the validators.
type Errs = Vec<FieldError>;

/// One "Invalid value" per message, with a string value (the usual `for _, msg := range`).
fn invalid_each(errs: &mut Errs, path: &FieldPath, value: &str, msgs: Vec<String>) {
    for m in msgs {
        errs.push(FieldError::invalid(path, quote(value), m));
    }
}

/// A value printed as upstream prints a struct, map or list (`field.Error.ErrorBody` since
/// Kubernetes v1.34): Go's `json.Marshal`, which escapes `<`, `>`, `&`, U+2028 and U+2029.
fn json<T: serde::Serialize>(value: &T) -> String {
    let plain = serde_json::to_string(value).unwrap_or_default();
    if !plain.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return plain;
    }
    let mut out = String::with_capacity(plain.len() + 16);
    for ch in plain.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `ValidateNonnegativeField`.
fn nonnegative(value: i64, path: &FieldPath, errs: &mut Errs) {
    if value < 0 {
        errs.push(FieldError::invalid(
            path,
            value.to_string(),
            NONNEGATIVE_MSG,
        ));
    }
}

/// `ValidatePositiveField` (`isNotPositiveErrorMsg`).
fn positive(value: i64, path: &FieldPath, errs: &mut Errs) {
    if value <= 0 {
        errs.push(FieldError::invalid(
            path,
            value.to_string(),
            NOT_POSITIVE_MSG,
        ));
    }
}

const NONNEGATIVE_MSG: &str = "must be greater than or equal to 0";
const NOT_POSITIVE_MSG: &str = "must be greater than zero";
const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

fn str_or_empty(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

// ---------------------------------------------------------------------------------------------
// Feature gates at their v1.35 defaults, as `GetValidationOptionsFromPodTemplate` turns them
// into `PodValidationOptions` for a create (no old object). The fields these gates guard are
// not kept by the versions before (see `manifest::served`), so by the time validation sees
// them the version is one where the gate is on.

/// `EnvFiles` (beta, on): `valueFrom.fileKeyRef`.
const ALLOW_ENV_FILES: bool = true;
/// `UserNamespacesHostNetworkSupport` (alpha, off).
const ALLOW_USER_NAMESPACES_HOST_NETWORK: bool = false;
/// `PodLevelResources` (beta, on): `spec.resources`.
const POD_LEVEL_RESOURCES: bool = true;
/// `InPlacePodVerticalScaling` (GA): `resizePolicy` on sidecar containers.
const ALLOW_SIDECAR_RESIZE_POLICY: bool = true;

// ---------------------------------------------------------------------------------------------
// Label selectors

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
// DaemonSet spec (apps `ValidateDaemonSetSpec`)

fn validate_daemon_set_spec(
    spec: &DaemonSetSpec,
    path: &FieldPath,
    gates: &Gates,
    errs: &mut Errs,
) {
    let sel = &spec.selector;
    let template_labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref());
    let empty = BTreeMap::new();
    let labels = template_labels.unwrap_or(&empty);
    let is_nil = sel.match_labels.is_none() && sel.match_expressions.is_none();
    let before = errs.len();
    meta::validate_label_selector(sel, &path.child("selector"), errs);
    let converts = errs.len() == before;
    // A nil selector matches nothing; an empty one matches everything.
    let matches = !is_nil && selector_matches(sel, labels);
    if converts && !matches {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            json(&template_labels),
            "`selector` does not match template `labels`",
        ));
    }
    let n = sel.match_labels.as_ref().map_or(0, BTreeMap::len)
        + sel.match_expressions.as_ref().map_or(0, Vec::len);
    if !is_nil && n == 0 {
        errs.push(FieldError::invalid(
            path.child("selector"),
            // Go's JSON of a selector with no labels and no expressions (both `omitempty`).
            "{}",
            "empty selector is invalid for daemonset",
        ));
    }

    pod::validate_pod_template_spec(&spec.template, &path.child("template"), gates, errs);

    let default_pod = PodSpec::default();
    let pod = spec.template.spec.as_ref().unwrap_or(&default_pod);
    let restart = str_or_empty(&pod.restart_policy);
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
    nonnegative(
        i64::from(spec.min_ready_seconds.unwrap_or(0)),
        &path.child("minReadySeconds"),
        errs,
    );
    validate_update_strategy(spec, errs);
    if let Some(limit) = spec.revision_history_limit {
        nonnegative(i64::from(limit), &path.child("revisionHistoryLimit"), errs);
    }
}

fn validate_update_strategy(spec: &DaemonSetSpec, errs: &mut Errs) {
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

fn validate_int_or_percent(v: &IntOrString, path: &str, errs: &mut Errs) {
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

fn validate_rolling_update(ru: &RollingUpdateDaemonSet, errs: &mut Errs) {
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
// Updates and generations

/// Validate an update of `old` to `new` as the API server's `apps/v1` endpoint does
/// (docs/semantics.md §2.2): everything [`validate`] checks, plus the immutable selector. The
/// template, update strategy, minReadySeconds and revisionHistoryLimit may change.
pub fn validate_update(old: &DaemonSet, new: &DaemonSet) -> Vec<FieldError> {
    let mut errs = validate(new);
    let selector = |ds: &DaemonSet| ds.spec.as_ref().map(|s| s.selector.clone());
    if selector(old) != selector(new) {
        let shown = selector(new).map(|s| json(&s)).unwrap_or_default();
        errs.push(FieldError::invalid(
            "spec.selector",
            shown,
            "field is immutable",
        ));
    }
    errs
}

/// The `(generation, templateGeneration)` the API server stores after an update from `old` to
/// `new` (docs/semantics.md §1, registry strategy): a template change bumps both, any other
/// spec change bumps only `generation`, a metadata-only change bumps neither. Absent values
/// count as 1, as on create.
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

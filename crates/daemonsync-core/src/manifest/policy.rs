//! daemonsync's own annotations on a DaemonSet in git: the `daemonsync.io/` grammar.
//!
//! The names of the annotations, the values each takes, and the checks of those values: a
//! rollout policy (canary, partition, waves, pauses, halt threshold, update strategy,
//! pre-pull; docs/progressive.md) read into a [`RolloutPolicy`], and who runs the pods beside
//! the built-in controller (`adopt`, `mode`; docs/live.md) read into a [`Choice`], and the
//! taint that keeps new nodes from taking workloads until the daemon runs (`readiness-taint`,
//! [`readiness_taint`]; docs/live.md). Manifest
//! validation reports every mistake with the annotation's path, so that a typo cannot silently
//! disable a canary; the planner decides what a valid policy does (`plan::progressive`,
//! `plan::ownership`).

use crate::manifest::names::{self, Dots};
use crate::manifest::{FieldError, FieldErrorKind};
use crate::model::LabelSelector;
use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::DaemonSet;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Annotation: how many nodes get the new revision first (`"N"` or `"N%"`).
pub const CANARY: &str = "daemonsync.io/canary";
/// Annotation: the label selector the canary nodes are taken from.
pub const CANARY_SELECTOR: &str = "daemonsync.io/canary-selector";
/// Annotation: the pause after the canary (`"manual"`, the default, or a duration).
pub const CANARY_PAUSE: &str = "daemonsync.io/canary-pause";
/// Annotation: how many nodes stay on the previous revision (`"N"` or `"N%"`, rounded down).
pub const PARTITION: &str = "daemonsync.io/partition";
/// Annotation: the node label whose values make the waves.
pub const WAVES_BY: &str = "daemonsync.io/waves-by";
/// Annotation: the order of the label values (`"a,b,c"`); others follow, sorted.
pub const WAVE_ORDER: &str = "daemonsync.io/wave-order";
/// Annotation: the pause between waves (`"manual"`, a duration, or `"0"`, the default).
pub const WAVE_PAUSE: &str = "daemonsync.io/wave-pause";
/// Annotation: how many Ready nodes may fail before the rollout halts (`"N"` or `"N%"`).
pub const HALT_THRESHOLD: &str = "daemonsync.io/halt-threshold";
/// Annotation: `InPlaceIfPossible` patches images into running pods when only images change;
/// `Recreate` (the default) always replaces pods.
pub const UPDATE_STRATEGY: &str = "daemonsync.io/update-strategy";
/// Annotation: `"true"` pulls a node's new images before its turn comes.
pub const PRE_PULL: &str = "daemonsync.io/pre-pull";
/// Annotation: how many nodes pull at once (`"N"` or `"N%"`, default `"25%"`).
pub const PRE_PULL_PARALLELISM: &str = "daemonsync.io/pre-pull-parallelism";

/// Annotation: `"true"` takes a DaemonSet the built-in controller runs over.
pub const ADOPT: &str = "daemonsync.io/adopt";
/// Annotation: `native` keeps the DaemonSet an `apps/v1` object the built-in controller runs
/// (daemonsync decides which old pods go, and when); `managed` (the default) makes it
/// daemonsync's.
pub const MODE: &str = "daemonsync.io/mode";
/// Annotation: a taint key (`example.com/agent-not-ready`). A node that joins with this
/// `NoSchedule` taint keeps it until the DaemonSet's pod on it is available; daemonsync then
/// removes it. The DaemonSet tolerates it ([`tolerate_readiness_taint`]).
pub const READINESS_TAINT: &str = "daemonsync.io/readiness-taint";

/// Annotation: how many times a new pod's containers may restart within the restart window
/// before the pod counts as failed (default `"2"`).
pub const MAX_RESTARTS: &str = "daemonsync.io/max-restarts";
/// Annotation: how long after a new pod started its restarts count (default `"10m"`).
pub const RESTART_WINDOW: &str = "daemonsync.io/restart-window";
/// Annotation: ConfigMaps and Secrets (`NAME`, `configmap/NAME` or `secret/NAME`, separated
/// by commas) that are not versioned with the revision: their changes roll nothing out.
pub const IGNORE_CONFIG: &str = "daemonsync.io/ignore-config";

/// Every `daemonsync.io/` annotation a DaemonSet in git may carry; any other key under that
/// prefix is an error, so that a typo cannot silently disable a canary.
pub const KNOWN_ANNOTATIONS: &[&str] = &[
    CANARY,
    CANARY_SELECTOR,
    CANARY_PAUSE,
    PARTITION,
    WAVES_BY,
    WAVE_ORDER,
    WAVE_PAUSE,
    HALT_THRESHOLD,
    UPDATE_STRATEGY,
    PRE_PULL,
    PRE_PULL_PARALLELISM,
    ADOPT,
    MODE,
    MAX_RESTARTS,
    RESTART_WINDOW,
    READINESS_TAINT,
    IGNORE_CONFIG,
];

/// The prefix every daemonsync annotation shares.
pub const ANNOTATION_PREFIX: &str = "daemonsync.io/";
const PREFIX: &str = ANNOTATION_PREFIX;

/// A number of nodes, absolute or a percentage of the eligible nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// `"N"`.
    Nodes(u32),
    /// `"N%"`.
    Percent(u32),
}

impl Count {
    fn parse(s: &str) -> Option<Count> {
        let digits = |d: &str| {
            (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .then(|| d.parse::<u32>().ok())
                .flatten()
        };
        match s.strip_suffix('%') {
            Some(p) => digits(p).filter(|&p| p <= 100).map(Count::Percent),
            None => digits(s).map(Count::Nodes),
        }
    }

    /// Resolved against `total` nodes, a percentage rounded down.
    pub fn floor(self, total: usize) -> usize {
        match self {
            Count::Nodes(n) => (n as usize).min(total),
            Count::Percent(p) => total * p as usize / 100,
        }
    }

    /// Resolved against `total` nodes, a percentage rounded up.
    pub fn ceil(self, total: usize) -> usize {
        match self {
            Count::Nodes(n) => (n as usize).min(total),
            Count::Percent(p) => (total * p as usize).div_ceil(100),
        }
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Count::Nodes(n) => write!(f, "{n}"),
            Count::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// A pause between stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// Until `daemonsync promote` (or `--auto-promote`).
    Manual,
    /// This long after the stage completed (zero: no pause).
    For(SignedDuration),
}

impl Pause {
    fn parse(s: &str) -> Option<Pause> {
        match s {
            "manual" => Some(Pause::Manual),
            "0" => Some(Pause::For(SignedDuration::ZERO)),
            // Go-style durations as kubectl takes them: 30s, 5m, 1h30m.
            _ => super::duration::parse_annotation(s).map(Pause::For),
        }
    }

    /// No pause at all (`"0"`).
    pub(crate) fn is_none(self) -> bool {
        self == Pause::For(SignedDuration::ZERO)
    }
}

impl fmt::Display for Pause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pause::Manual => f.write_str("manual"),
            Pause::For(d) if d.is_zero() => f.write_str("0"),
            Pause::For(d) => write!(f, "{d:#}"),
        }
    }
}

impl Serialize for Pause {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A DaemonSet's rollout policy, from its annotations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutPolicy {
    /// `daemonsync.io/canary`.
    pub canary: Option<Count>,
    /// `daemonsync.io/canary-selector`.
    pub canary_selector: Option<LabelSelector>,
    /// `daemonsync.io/canary-pause`.
    pub canary_pause: Pause,
    /// `daemonsync.io/partition`.
    pub partition: Option<Count>,
    /// `daemonsync.io/waves-by`.
    pub waves_by: Option<String>,
    /// `daemonsync.io/wave-order`.
    pub wave_order: Vec<String>,
    /// `daemonsync.io/wave-pause`.
    pub wave_pause: Pause,
    /// `daemonsync.io/halt-threshold`.
    pub halt_threshold: Option<Count>,
    /// `daemonsync.io/update-strategy: InPlaceIfPossible`.
    pub in_place: bool,
    /// `daemonsync.io/pre-pull: "true"`.
    pub pre_pull: bool,
    /// `daemonsync.io/pre-pull-parallelism`.
    pub pre_pull_parallelism: Count,
}

impl Default for RolloutPolicy {
    fn default() -> Self {
        RolloutPolicy {
            canary: None,
            canary_selector: None,
            canary_pause: Pause::Manual,
            partition: None,
            waves_by: None,
            wave_order: Vec::new(),
            wave_pause: Pause::For(SignedDuration::ZERO),
            halt_threshold: None,
            in_place: false,
            pre_pull: false,
            pre_pull_parallelism: Count::Percent(25),
        }
    }
}

fn annotation_path(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

fn quoted(v: &str) -> String {
    format!("{v:?}")
}

impl RolloutPolicy {
    /// The policy a DaemonSet's annotations describe: `Ok(None)` when it has none.
    pub fn of(ds: &DaemonSet) -> Result<Option<RolloutPolicy>, Vec<FieldError>> {
        Self::from_annotations(ds.metadata.annotations.as_ref().unwrap_or(&BTreeMap::new()))
    }

    /// Parses and checks the `daemonsync.io/` annotations; every mistake is reported with
    /// the annotation's path and the values it takes.
    pub fn from_annotations(
        annotations: &BTreeMap<String, String>,
    ) -> Result<Option<RolloutPolicy>, Vec<FieldError>> {
        let mut errs = Vec::new();
        let mut policy = RolloutPolicy::default();
        let mut any = false;
        for (key, value) in annotations.range(PREFIX.to_string()..) {
            if !key.starts_with(PREFIX) {
                break;
            }
            if key == ADOPT
                || key == MODE
                || key == MAX_RESTARTS
                || key == RESTART_WINDOW
                || key == READINESS_TAINT
                || key == IGNORE_CONFIG
            {
                // Not a rollout policy: who runs the pods, when a new pod failed, which taint
                // new nodes keep until the daemon runs, which config is versioned (checked
                // below).
                continue;
            }
            let path = annotation_path(key);
            let bad = |detail: &str| FieldError::invalid(&path, quoted(value), detail);
            let count = |what: &str| {
                Count::parse(value).ok_or_else(|| {
                    bad(&format!(
                        "{what} must be a whole number of nodes (\"3\") or a percentage of the \
                         eligible nodes from 0% to 100% (\"10%\")"
                    ))
                })
            };
            let pause = || {
                Pause::parse(value).ok_or_else(|| {
                    bad(
                        "must be \"manual\", \"0\" or a duration such as \"30s\", \"5m\" or \
                         \"1h30m\"",
                    )
                })
            };
            let parsed: Result<(), FieldError> = match key.as_str() {
                CANARY => count("the canary").map(|c| policy.canary = Some(c)),
                CANARY_SELECTOR => LabelSelector::parse(value)
                    .map_err(|why| bad(&format!("{why}; write it as `kubectl -l` takes it")))
                    .and_then(|s| {
                        if s.requirements.is_empty() {
                            Err(bad("must select some nodes, e.g. \"canary=true\""))
                        } else {
                            policy.canary_selector = Some(s);
                            Ok(())
                        }
                    }),
                CANARY_PAUSE => pause().map(|p| policy.canary_pause = p),
                PARTITION => count("the partition").map(|c| policy.partition = Some(c)),
                WAVES_BY => {
                    if names::is_label_key(value, Dots::NonEmpty) {
                        policy.waves_by = Some(value.clone());
                        Ok(())
                    } else {
                        Err(bad(
                            "must be a node label key, e.g. \"topology.kubernetes.io/zone\"",
                        ))
                    }
                }
                WAVE_ORDER => {
                    let order: Vec<String> =
                        value.split(',').map(|v| v.trim().to_string()).collect();
                    if order.iter().any(String::is_empty) {
                        Err(bad(
                            "must list label values separated by commas, e.g. \"a,b,c\"",
                        ))
                    } else {
                        policy.wave_order = order;
                        Ok(())
                    }
                }
                WAVE_PAUSE => pause().map(|p| policy.wave_pause = p),
                HALT_THRESHOLD => {
                    count("the halt threshold").map(|c| policy.halt_threshold = Some(c))
                }
                UPDATE_STRATEGY => match value.as_str() {
                    "InPlaceIfPossible" => {
                        policy.in_place = true;
                        Ok(())
                    }
                    "Recreate" => Ok(()),
                    _ => Err(FieldError::not_supported(
                        &path,
                        quoted(value),
                        &["InPlaceIfPossible", "Recreate"],
                    )),
                },
                PRE_PULL => match value.as_str() {
                    "true" => {
                        policy.pre_pull = true;
                        Ok(())
                    }
                    "false" => Ok(()),
                    _ => Err(bad("must be \"true\" or \"false\"")),
                },
                PRE_PULL_PARALLELISM => count("the pre-pull parallelism").and_then(|c| {
                    if c.ceil(1) == 0 {
                        Err(bad("must pull on at least one node at a time"))
                    } else {
                        policy.pre_pull_parallelism = c;
                        Ok(())
                    }
                }),
                _ => Err(FieldError {
                    path: path.clone(),
                    kind: FieldErrorKind::NotSupported,
                    value: Some(quoted(key)),
                    detail: format!(
                        "unknown daemonsync annotation{}; the known ones are {} \
                         (docs/progressive.md)",
                        closest(key).map_or(String::new(), |k| format!(" (did you mean {k}?)")),
                        KNOWN_ANNOTATIONS.join(", ")
                    ),
                }),
            };
            match parsed {
                Ok(()) => any = true,
                Err(e) => errs.push(e),
            }
        }
        errs.extend(check_ownership(annotations));
        if let Err(e) = FailurePolicy::from_annotations(annotations) {
            errs.extend(e);
        }
        errs.extend(check_readiness_taint(annotations));
        if let Err(e) = IgnoredConfig::from_annotations(annotations) {
            errs.push(e);
        }
        if policy.canary_selector.is_some() && policy.canary == Some(Count::Nodes(0)) {
            errs.push(FieldError::invalid(
                annotation_path(CANARY),
                quoted("0"),
                "a canary-selector needs a canary of at least one node (or no canary \
                 annotation: every matching node)",
            ));
        }
        if !policy.wave_order.is_empty() && policy.waves_by.is_none() {
            errs.push(FieldError::required(
                annotation_path(WAVES_BY),
                "wave-order orders the values of the waves-by label; name that label",
            ));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(any.then_some(policy))
    }

    /// Whether the policy makes stages (a canary or waves); a partition or halt threshold
    /// alone does not.
    pub fn is_staged(&self) -> bool {
        self.has_canary() || self.waves_by.is_some()
    }

    /// Whether the policy paces the rollout (stages, a partition or a halt threshold), as
    /// opposed to only choosing how pods are updated (in place, pre-pulled).
    pub fn paces(&self) -> bool {
        self.is_staged() || self.partition.is_some() || self.halt_threshold.is_some()
    }

    /// Whether the policy names canary nodes (a canary of at least one node, or a selector).
    pub(crate) fn has_canary(&self) -> bool {
        self.canary_selector.is_some() || self.canary.is_some_and(|c| c.ceil(1) > 0)
    }
}

/// The known annotation a misspelt one most likely meant.
fn closest(key: &str) -> Option<&'static str> {
    KNOWN_ANNOTATIONS
        .iter()
        .map(|k| (strsim::levenshtein(k, key), *k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| k)
}

/// Who runs a DaemonSet's pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// daemonsync's record owns them (the default).
    #[default]
    Managed,
    /// The built-in controller's `apps/v1` DaemonSet owns them; daemonsync paces it.
    Native,
}

impl Mode {
    /// `managed` or `native`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Managed => "managed",
            Mode::Native => "native",
        }
    }
}

/// What a manifest says about the built-in controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Choice {
    /// `daemonsync.io/mode`.
    pub mode: Mode,
    /// `daemonsync.io/adopt: "true"`.
    pub adopt: bool,
}

impl Choice {
    /// The choice of a DaemonSet's annotations (checked by [`check_ownership`] when it was
    /// loaded).
    pub fn of(ds: &DaemonSet) -> Choice {
        let a = ds.metadata.annotations.as_ref();
        let get = |k: &str| a.and_then(|a| a.get(k)).map(String::as_str);
        Choice {
            mode: if get(MODE) == Some("native") {
                Mode::Native
            } else {
                Mode::Managed
            },
            adopt: get(ADOPT) == Some("true"),
        }
    }
}

/// When a new pod that keeps restarting counts as failed: `daemonsync.io/max-restarts` and
/// `daemonsync.io/restart-window` (the definitive start failures fail a pod whatever these
/// say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// More restarts than this within the window fail the pod.
    pub max_restarts: u32,
    /// How long after the pod started (or its in-place update began) its restarts count.
    #[serde(serialize_with = "serialize_duration")]
    pub restart_window: SignedDuration,
}

fn serialize_duration<S: serde::Serializer>(d: &SignedDuration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{d:#}"))
}

impl Default for FailurePolicy {
    fn default() -> Self {
        FailurePolicy {
            max_restarts: 2,
            restart_window: SignedDuration::from_mins(10),
        }
    }
}

impl FailurePolicy {
    /// The policy of a DaemonSet whose annotations validation accepted (defaults for what it
    /// does not say, or says wrongly).
    pub fn of(ds: &DaemonSet) -> FailurePolicy {
        ds.metadata
            .annotations
            .as_ref()
            .and_then(|a| Self::from_annotations(a).ok())
            .unwrap_or_default()
    }

    /// Parses and checks `daemonsync.io/max-restarts` and `daemonsync.io/restart-window`.
    pub fn from_annotations(
        annotations: &BTreeMap<String, String>,
    ) -> Result<FailurePolicy, Vec<FieldError>> {
        let mut policy = FailurePolicy::default();
        let mut errs = Vec::new();
        if let Some(v) = annotations.get(MAX_RESTARTS) {
            match v.parse::<u32>() {
                Ok(n) if !v.starts_with('+') => policy.max_restarts = n,
                _ => errs.push(FieldError::invalid(
                    annotation_path(MAX_RESTARTS),
                    quoted(v),
                    "must be a whole number of restarts, e.g. \"2\" (\"0\": any restart fails                      the pod)",
                )),
            }
        }
        if let Some(v) = annotations.get(RESTART_WINDOW) {
            match super::duration::parse_annotation(v) {
                Some(d) if d > SignedDuration::ZERO => policy.restart_window = d,
                _ => errs.push(FieldError::invalid(
                    annotation_path(RESTART_WINDOW),
                    quoted(v),
                    "must be a duration above zero such as \"10m\", \"30s\" or \"1h\"",
                )),
            }
        }
        if errs.is_empty() {
            Ok(policy)
        } else {
            Err(errs)
        }
    }
}

/// The ConfigMaps and Secrets `daemonsync.io/ignore-config` leaves out of the revision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IgnoredConfig {
    /// `NAME`: a ConfigMap or Secret of that name.
    any: std::collections::BTreeSet<String>,
    /// `configmap/NAME` or `secret/NAME`: (kind, name).
    kinded: std::collections::BTreeSet<(String, String)>,
}

impl IgnoredConfig {
    /// What a DaemonSet's annotation leaves out (nothing when it has none, or when it is
    /// invalid: validation reports that on loading).
    pub fn of(ds: &DaemonSet) -> IgnoredConfig {
        ds.metadata
            .annotations
            .as_ref()
            .and_then(|a| Self::from_annotations(a).ok())
            .unwrap_or_default()
    }

    /// Parses `daemonsync.io/ignore-config`: names separated by commas, each a ConfigMap or
    /// Secret name, optionally `configmap/` or `secret/` first.
    pub fn from_annotations(
        annotations: &BTreeMap<String, String>,
    ) -> Result<IgnoredConfig, FieldError> {
        let mut out = IgnoredConfig::default();
        let Some(value) = annotations.get(IGNORE_CONFIG) else {
            return Ok(out);
        };
        let bad = |detail: String| {
            FieldError::invalid(annotation_path(IGNORE_CONFIG), quoted(value), detail)
        };
        for item in value.split(',').map(str::trim) {
            let (kind, name) = match item.split_once('/') {
                Some((kind @ ("configmap" | "secret"), name)) => (Some(kind), name),
                Some(_) => {
                    return Err(bad(format!(
                        "{item:?}: name a ConfigMap or Secret as NAME, configmap/NAME or                          secret/NAME"
                    )));
                }
                None => (None, item),
            };
            if !names::is_dns1123_subdomain(name) {
                return Err(bad(format!(
                    "{item:?} is not a ConfigMap or Secret name (a lowercase RFC 1123                      subdomain); list names separated by commas, e.g.                      \"fluent-bit-config,secret/creds\""
                )));
            }
            match kind {
                Some(kind) => out.kinded.insert((kind.to_string(), name.to_string())),
                None => out.any.insert(name.to_string()),
            };
        }
        Ok(out)
    }

    /// Whether the object `kind` (`configmap` or `secret`) `name` is left out.
    pub fn ignores(&self, kind: &str, name: &str) -> bool {
        self.any.contains(name) || self.kinded.contains(&(kind.to_string(), name.to_string()))
    }
}

/// Checks `daemonsync.io/adopt` and `daemonsync.io/mode`: the values they take, and that a
/// DaemonSet is not both taken over and kept native.
pub fn check_ownership(annotations: &BTreeMap<String, String>) -> Vec<FieldError> {
    let path = |k: &str| format!("metadata.annotations[{k}]");
    let mut errs = Vec::new();
    let adopt = annotations.get(ADOPT);
    let mode = annotations.get(MODE);
    if let Some(v) = adopt
        && v != "true"
        && v != "false"
    {
        errs.push(FieldError::invalid(
            path(ADOPT),
            format!("{v:?}"),
            "must be \"true\" (take the DaemonSet over from the built-in controller) or \"false\"",
        ));
    }
    if let Some(v) = mode
        && v != "managed"
        && v != "native"
    {
        errs.push(FieldError::invalid(
            path(MODE),
            format!("{v:?}"),
            "must be \"managed\" (daemonsync owns the pods, the default) or \"native\" (the \
             built-in controller does; daemonsync paces it)",
        ));
    }
    if adopt.is_some_and(|v| v == "true") && mode.is_some_and(|v| v == "native") {
        errs.push(FieldError::invalid(
            path(ADOPT),
            "\"true\"",
            "a native DaemonSet stays the built-in controller's: remove daemonsync.io/adopt, \
             or daemonsync.io/mode: native to take it over",
        ));
    }
    errs
}

/// Checks `daemonsync.io/readiness-taint`: a taint key, as the API server validates the keys
/// of a node's taints (`IsQualifiedName`).
pub fn check_readiness_taint(annotations: &BTreeMap<String, String>) -> Vec<FieldError> {
    let Some(key) = annotations.get(READINESS_TAINT) else {
        return Vec::new();
    };
    let why = names::qualified_name(key);
    if why.is_empty() {
        return Vec::new();
    }
    vec![FieldError::invalid(
        annotation_path(READINESS_TAINT),
        quoted(key),
        format!(
            "must be the key of the taint new nodes join with, a qualified name such as \
             \"example.com/agent-not-ready\": {}",
            why.join("; ")
        ),
    )]
}

/// The readiness taint a DaemonSet names (`daemonsync.io/readiness-taint`), when it names a
/// valid one.
pub fn readiness_taint(ds: &DaemonSet) -> Option<&str> {
    let key = ds.metadata.annotations.as_ref()?.get(READINESS_TAINT)?;
    names::qualified_name(key)
        .is_empty()
        .then_some(key.as_str())
}

/// The toleration of a readiness taint: `{key: KEY, operator: Exists, effect: NoSchedule}`.
pub fn readiness_toleration(key: &str) -> k8s_openapi::api::core::v1::Toleration {
    k8s_openapi::api::core::v1::Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }
}

/// Makes a DaemonSet that names a readiness taint tolerate it: its template gains
/// [`readiness_toleration`] unless a toleration already lets its pods onto a node with that
/// `NoSchedule` taint (whatever the taint's value). The toleration is part of the template, so
/// of its revision: the pods run with it, and in native mode the built-in controller places
/// them with it.
pub fn tolerate_readiness_taint(ds: &mut DaemonSet) {
    if let Some(key) = readiness_taint(ds).map(str::to_string) {
        tolerate_taint(ds, &key);
    }
}

/// Makes a DaemonSet's template tolerate the `NoSchedule` readiness taint `key` (see
/// [`tolerate_readiness_taint`]); the stable revision's pods created on a node that joined
/// with it take it too, even when that revision predates the annotation.
pub fn tolerate_taint(ds: &mut DaemonSet, key: &str) {
    let Some(spec) = ds.spec.as_mut().and_then(|s| s.template.spec.as_mut()) else {
        return;
    };
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    let tolerated = tolerations.iter().any(|t| {
        let key_matches = match t.key.as_deref() {
            None | Some("") => true,
            Some(k) => k == key,
        };
        t.operator.as_deref() == Some("Exists")
            && key_matches
            && matches!(t.effect.as_deref(), None | Some("") | Some("NoSchedule"))
    });
    if !tolerated {
        tolerations.push(readiness_toleration(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_restarts_and_restart_window_are_read_and_checked() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            FailurePolicy::from_annotations(&map(&[])),
            Ok(FailurePolicy::default())
        );
        let p =
            FailurePolicy::from_annotations(&map(&[(MAX_RESTARTS, "0"), (RESTART_WINDOW, "90s")]))
                .expect("valid");
        assert_eq!(p.max_restarts, 0);
        assert_eq!(p.restart_window, SignedDuration::from_secs(90));
        let errs =
            FailurePolicy::from_annotations(&map(&[(MAX_RESTARTS, "-1"), (RESTART_WINDOW, "0s")]))
                .expect_err("refused");
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(
            text[0].contains("metadata.annotations[daemonsync.io/max-restarts]"),
            "{text:?}"
        );
        assert!(text[1].contains("a duration above zero"), "{text:?}");
        // Neither makes a rollout policy of its own, and both are known annotations.
        assert_eq!(
            RolloutPolicy::from_annotations(&map(&[(MAX_RESTARTS, "3")])),
            Ok(None)
        );
        assert!(
            RolloutPolicy::from_annotations(&map(&[(RESTART_WINDOW, "soon")])).is_err(),
            "validation reports a bad window"
        );
    }

    fn policy_errors(annotations: &[(&str, &str)]) -> Vec<String> {
        let map: BTreeMap<String, String> = annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        match RolloutPolicy::from_annotations(&map) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn bad_annotations_are_validation_errors_with_their_path() {
        let typo = policy_errors(&[("daemonsync.io/canery", "1")]);
        assert_eq!(typo.len(), 1);
        assert!(
            typo[0].starts_with("metadata.annotations[daemonsync.io/canery]: Unsupported value"),
            "{}",
            typo[0]
        );
        assert!(
            typo[0].contains("did you mean daemonsync.io/canary?"),
            "{}",
            typo[0]
        );
        for (key, value) in [
            ("daemonsync.io/canary", "two"),
            ("daemonsync.io/canary", "150%"),
            ("daemonsync.io/canary", "-1"),
            ("daemonsync.io/partition", "1.5"),
            ("daemonsync.io/halt-threshold", ""),
            ("daemonsync.io/canary-pause", "soon"),
            ("daemonsync.io/wave-pause", "-5m"),
            ("daemonsync.io/waves-by", "not a label"),
            ("daemonsync.io/wave-order", "a,,b"),
            ("daemonsync.io/canary-selector", "zone in (a"),
        ] {
            let mut given = vec![(key, value)];
            if key != "daemonsync.io/waves-by" {
                given.push(("daemonsync.io/waves-by", "zone"));
            }
            let errs = policy_errors(&given);
            let mine: Vec<&String> = errs
                .iter()
                .filter(|e| e.contains(&format!("[{key}]")))
                .collect();
            assert_eq!(mine.len(), 1, "{key}={value:?}: {errs:?}");
            assert!(mine[0].contains("Invalid value"), "{}", mine[0]);
        }
        assert!(
            policy_errors(&[("daemonsync.io/wave-order", "a,b")])[0]
                .starts_with("metadata.annotations[daemonsync.io/waves-by]: Required value")
        );
        assert!(
            policy_errors(&[
                ("daemonsync.io/canary", "10%"),
                ("daemonsync.io/canary-pause", "1h30m"),
                ("daemonsync.io/wave-pause", "0"),
                ("daemonsync.io/partition", "3"),
                ("daemonsync.io/halt-threshold", "2"),
                ("daemonsync.io/waves-by", "topology.kubernetes.io/zone"),
                ("daemonsync.io/wave-order", "b, a"),
                ("daemonsync.io/canary-selector", "canary=true,zone in (a,b)"),
                ("other.io/whatever", "x"),
            ])
            .is_empty()
        );
    }

    fn agent(annotations: &[(&str, &str)], tolerations: serde_json::Value) -> DaemonSet {
        let annotations: BTreeMap<&str, &str> = annotations.iter().copied().collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "agent", "annotations": annotations},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "a", "image": "a:1"}],
                                           "tolerations": tolerations}}}
        }))
        .unwrap()
    }

    fn tolerations(ds: &DaemonSet) -> serde_json::Value {
        serde_json::to_value(
            &ds.spec
                .as_ref()
                .unwrap()
                .template
                .spec
                .as_ref()
                .unwrap()
                .tolerations,
        )
        .unwrap()
    }

    #[test]
    fn a_readiness_taint_must_be_a_taint_key() {
        for bad in [
            "",
            "not a key",
            "example.com/",
            "-x",
            "a/b/c",
            "Example.com/x",
        ] {
            let errs = policy_errors(&[(READINESS_TAINT, bad)]);
            assert_eq!(errs.len(), 1, "{bad:?}: {errs:?}");
            assert!(
                errs[0].starts_with(
                    "metadata.annotations[daemonsync.io/readiness-taint]: Invalid value"
                ) && errs[0].contains("example.com/agent-not-ready"),
                "{}",
                errs[0]
            );
        }
        for good in ["example.com/agent-not-ready", "cni-not-ready", "a.b/C_d.e"] {
            assert!(
                policy_errors(&[(READINESS_TAINT, good)]).is_empty(),
                "{good}"
            );
        }
        // A readiness taint alone is no rollout policy.
        let map: BTreeMap<String, String> =
            [(READINESS_TAINT.to_string(), "example.com/x".to_string())].into();
        assert_eq!(RolloutPolicy::from_annotations(&map), Ok(None));
        assert!(closest("daemonsync.io/readiness-tain").is_some_and(|k| k == READINESS_TAINT));
    }

    #[test]
    fn a_daemonset_tolerates_its_readiness_taint_once() {
        let mut ds = agent(
            &[(READINESS_TAINT, "example.com/agent-not-ready")],
            serde_json::json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                "effect": "NoSchedule"}]),
        );
        tolerate_readiness_taint(&mut ds);
        let expected = serde_json::json!([
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "example.com/agent-not-ready", "operator": "Exists", "effect": "NoSchedule"},
        ]);
        assert_eq!(tolerations(&ds), expected);
        tolerate_readiness_taint(&mut ds);
        assert_eq!(tolerations(&ds), expected, "added once");

        // Already tolerated, by this key or by every key: nothing added.
        for already in [
            serde_json::json!([{"key": "example.com/agent-not-ready", "operator": "Exists"}]),
            serde_json::json!([{"operator": "Exists"}]),
        ] {
            let mut ds = agent(
                &[(READINESS_TAINT, "example.com/agent-not-ready")],
                already.clone(),
            );
            tolerate_readiness_taint(&mut ds);
            assert_eq!(tolerations(&ds), already);
        }
        // A toleration of one value, or of NoExecute only, does not let the pod onto the node.
        let mut ds = agent(
            &[(READINESS_TAINT, "example.com/agent-not-ready")],
            serde_json::json!([{"key": "example.com/agent-not-ready", "operator": "Equal",
                                "value": "x", "effect": "NoSchedule"}]),
        );
        tolerate_readiness_taint(&mut ds);
        assert_eq!(tolerations(&ds).as_array().unwrap().len(), 2);
        // No annotation, or an invalid one: untouched.
        let mut plain = agent(&[], serde_json::json!(null));
        tolerate_readiness_taint(&mut plain);
        assert_eq!(tolerations(&plain), serde_json::Value::Null);
        let mut bad = agent(&[(READINESS_TAINT, "not a key")], serde_json::json!(null));
        tolerate_readiness_taint(&mut bad);
        assert_eq!(tolerations(&bad), serde_json::Value::Null);
    }

    #[test]
    fn a_loaded_daemonset_carries_the_toleration_in_its_revision() {
        let yaml = |annotation: &str| {
            format!(
                "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: demo{annotation}}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec: {{containers: [{{name: a, image: 'a:1'}}]}}\n"
            )
        };
        let load = |text: &str| {
            let m = crate::manifest::load_str("agent.yaml", text, &Default::default()).unwrap();
            assert!(m.invalid.is_empty(), "{:?}", m.invalid);
            m.daemonsets.into_iter().next().unwrap().daemonset
        };
        let plain = load(&yaml(""));
        let gated = load(&yaml(
            ", annotations: {daemonsync.io/readiness-taint: example.com/agent-not-ready}",
        ));
        assert_eq!(
            tolerations(&gated),
            serde_json::json!([{"key": "example.com/agent-not-ready", "operator": "Exists",
                                "effect": "NoSchedule"}])
        );
        // The pods run with it: it is part of the template, so of the revision.
        assert_ne!(
            crate::plan::DaemonSetSpec::compile(&plain).revision,
            crate::plan::DaemonSetSpec::compile(&gated).revision
        );
        let bad = crate::manifest::load_str(
            "agent.yaml",
            &yaml(", annotations: {daemonsync.io/readiness-taint: 'no such key'}"),
            &Default::default(),
        )
        .unwrap();
        assert_eq!(bad.invalid.len(), 1);
    }
}

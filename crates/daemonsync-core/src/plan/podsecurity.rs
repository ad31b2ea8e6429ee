//! Pod Security Admission: a pod judged against a Pod Security Standards level, as upstream's
//! admission controller (`k8s.io/pod-security-admission`) judges it, with its wording.
//!
//! [`check`] runs the checks of a [`Policy`] (level and policy version) on a pod's metadata and
//! spec and returns the [`Violation`]s in upstream's order; [`forbidden_message`] words them as
//! the API server's 403 does; [`Policy::from_namespace_labels`] reads a namespace's
//! `pod-security.kubernetes.io/enforce` and `enforce-version` labels.
//!
//! The reference is upstream's master (policy versions up to v1.37): `policy/check_*.go` for
//! each check, `policy/registry.go` for which checks a level and version run and in what order,
//! `policy/checks.go` and `admission/admission.go` for the message, `api/helpers.go` for labels.
//!
//! Order of the violations: every check has an ID (`hostNamespaces`, `privileged`, ...).
//! Upstream sorts the baseline IDs and the restricted IDs separately, byte-wise, and runs the
//! baseline ones first (`registry.go`, `populate`: `slices.Sort` then
//! `append(baselineIDs, restrictedIDs...)`). So "host namespaces" comes before "privileged", and
//! at restricted every baseline violation comes before every restricted-only one. A restricted
//! check may replace a baseline one from some version on (capabilities from v1.22, seccomp from
//! v1.19, volume types from v1.0, procMount from v1.35); the replaced one is then not run.
//!
//! What is evaluated is the object admission sees, i.e. after the API server's defaulting:
//! for a pod with `hostNetwork`, every container port has a `hostPort` by then. [`check`] takes
//! the spec as given; [`check_template`] defaults a template into the pod a controller creates
//! from it first.
//!
//! `latest` is master's newest policy, v1.37. An API server of an older release caps `latest`
//! (and any newer `v1.N`) at its own version. The only policy change since release-1.35 is that
//! v1.37 allows two more sysctls (`net.ipv4.tcp_slow_start_after_idle`,
//! `net.ipv4.tcp_notsent_lowat`), so a v1.35 or v1.36 server still refuses them at `latest`.
//!
//! Not modelled: the admission configuration (exempt users, namespaces and runtime classes, and
//! cluster-wide defaults other than `privileged:latest`) and the audit and warn modes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EphemeralContainer, Lifecycle, LifecycleHandler, PodSecurityContext,
    PodSpec, PodTemplateSpec, Probe, SELinuxOptions, SecurityContext, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Namespace label naming the level pods must meet to be admitted.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// Namespace label naming the policy version of the enforced level (`latest` when absent).
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";

/// A Pod Security Standards level, least strict first (so `Ord` compares strictness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Anything goes.
    Privileged,
    /// Known privilege escalations are refused.
    Baseline,
    /// Baseline, plus current pod hardening practice.
    Restricted,
}

impl Level {
    /// The level a label value names; `None` for anything else (upstream is case-sensitive).
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    /// The spelling of labels and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy version: `latest`, or `v1.N` (the checks as Kubernetes 1.N defined them).
///
/// Ordered by age; `latest` is newer than every `v1.N`, including ones not released yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Version(Release);

/// Variant order is the age order `Version` derives from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
enum Release {
    Minor(u64),
    #[default]
    Latest,
}

impl Version {
    /// The newest checks, whatever the release.
    pub const LATEST: Version = Version(Release::Latest);

    /// `v1.<minor>`.
    pub const fn v1(minor: u64) -> Version {
        Version(Release::Minor(minor))
    }

    /// A label value: `latest`, or `v1.N` with N written without leading zeros (upstream's
    /// `^v1\.([0-9]|[1-9][0-9]*)$`, and N must fit a Go `int`). `None` for anything else.
    pub fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version::LATEST);
        }
        let digits = s.strip_prefix("v1.")?;
        let plain = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if !plain {
            return None;
        }
        let minor: u64 = digits.parse().ok()?;
        (minor <= i64::MAX as u64).then_some(Version::v1(minor))
    }

    /// Whether this is `latest`.
    pub fn is_latest(self) -> bool {
        self.0 == Release::Latest
    }

    /// N of `v1.N`; `None` for `latest`.
    pub fn minor(self) -> Option<u64> {
        match self.0 {
            Release::Minor(m) => Some(m),
            Release::Latest => None,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Release::Minor(m) => write!(f, "v1.{m}"),
            Release::Latest => f.write_str("latest"),
        }
    }
}

/// A level at a policy version: what a namespace enforces. Displays as `baseline:latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Policy {
    /// The level.
    pub level: Level,
    /// The policy version of the level's checks.
    pub version: Version,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level, self.version)
    }
}

impl Policy {
    /// The policy a namespace's labels enforce: `None` without an enforce label; an error, in
    /// the API server's words, when the enforce or enforce-version label is not valid.
    ///
    /// Upstream refuses to create a namespace, or to change its labels, to invalid values, so
    /// the error is what a namespace write would be refused with (422). A namespace can still
    /// carry such labels (set before the admission plugin ran); for that case upstream does not
    /// fail open, it enforces `restricted` in place of an unknown level and `latest` in place of
    /// an unknown version: that is [`Policy::enforced_by_namespace_labels`].
    ///
    /// Only the enforce labels are read: the audit and warn modes change no admission decision.
    pub fn from_namespace_labels(
        labels: &BTreeMap<String, String>,
    ) -> Result<Option<Policy>, String> {
        let (policy, errors) = enforce_labels(labels);
        match errors.as_slice() {
            [] => Ok(policy),
            [one] => Err(one.clone()),
            many => Err(format!("[{}]", many.join(", "))),
        }
    }

    /// The policy upstream enforces for pods of a namespace with these labels, valid or not
    /// (`PolicyToEvaluate`): an unknown level counts as `restricted`, an unknown version as
    /// `latest`. `None` without an enforce label (the cluster default, `privileged`).
    pub fn enforced_by_namespace_labels(labels: &BTreeMap<String, String>) -> Option<Policy> {
        enforce_labels(labels).0
    }
}

/// The enforce policy upstream derives from namespace labels, and the label errors it reports
/// (level first, then version, as `PolicyToEvaluate` appends them).
fn enforce_labels(labels: &BTreeMap<String, String>) -> (Option<Policy>, Vec<String>) {
    let mut errors = Vec::new();
    let level = labels.get(ENFORCE_LABEL).map(|value| {
        Level::parse(value).unwrap_or_else(|| {
            let hint = "must be one of privileged, baseline, restricted";
            errors.push(invalid_label(ENFORCE_LABEL, value, hint));
            Level::Restricted
        })
    });
    let version = match labels.get(ENFORCE_VERSION_LABEL) {
        None => Version::LATEST,
        Some(value) => Version::parse(value).unwrap_or_else(|| {
            let hint = r#"must be "latest" or "v1.x""#;
            errors.push(invalid_label(ENFORCE_VERSION_LABEL, value, hint));
            Version::LATEST
        }),
    };
    (level.map(|level| Policy { level, version }), errors)
}

/// A `field.Invalid` error on a namespace label, as the API server prints it.
fn invalid_label(label: &str, value: &str, hint: &str) -> String {
    format!(
        "metadata.labels[{label}]: Invalid value: {}: {hint}",
        go_quote(value)
    )
}

/// One failed check: a short reason and, usually, what exactly is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Violation {
    /// E.g. `privileged`, `host namespaces`, `runAsNonRoot != true`.
    pub reason: String,
    /// E.g. `container "c" must not set securityContext.privileged=true`.
    pub detail: String,
}

/// `reason (detail)`, or the bare reason when there is no detail: one item of the message.
impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

/// The violations of `policy` by a pod, in upstream's order; empty when the pod is admitted.
///
/// `meta` and `spec` are the object as admission sees it, i.e. after the API server's
/// defaulting (see [`check_template`] for a pod template).
pub fn check(policy: &Policy, meta: &ObjectMeta, spec: &PodSpec) -> Vec<Violation> {
    if policy.level == Level::Privileged {
        return Vec::new();
    }
    let pod = Pod::new(meta, spec);
    checks_for(policy)
        .into_iter()
        .filter_map(|run| run(&pod))
        .collect()
}

/// The violations of the pods a controller creates from `template`.
///
/// The template gets the API server's defaults first, those of a stored template and then
/// those only pods get, because admission judges the pod as defaulted and two of them change
/// the verdict or its wording: a volume without a source becomes an emptyDir, and under
/// `hostNetwork` every container port becomes a host port. Defaulting is idempotent, so an
/// already defaulted template is judged the same.
pub fn check_template(policy: &Policy, template: &PodTemplateSpec) -> Vec<Violation> {
    let no_meta = ObjectMeta::default();
    let meta = template.metadata.as_ref().unwrap_or(&no_meta);
    let spec = pod_from_template(template);
    check(policy, meta, &spec)
}

/// The spec of a pod created from `template`, defaulted as the API server defaults it.
fn pod_from_template(template: &PodTemplateSpec) -> PodSpec {
    let mut holder = DaemonSet {
        spec: Some(DaemonSetSpec {
            template: template.clone(),
            ..DaemonSetSpec::default()
        }),
        ..DaemonSet::default()
    };
    crate::manifest::apply_defaults(&mut holder);
    let mut spec = holder
        .spec
        .and_then(|s| s.template.spec)
        .unwrap_or_default();
    crate::manifest::apply_pod_defaults(&mut spec);
    spec
}

/// The message of the API server's 403 for a pod `policy` refuses:
/// `pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged (...), ...`.
///
/// `pod_name` is the pod's name at admission. A pod created with only `generateName` already has
/// its generated name then (`<generateName><5 random characters>`): the registry generates it
/// before it runs validating admission, and admission takes the name from the object. An empty
/// `pod_name` gives upstream's nameless form, `pods is forbidden: ...`.
pub fn forbidden_message(pod_name: &str, policy: &Policy, violations: &[Violation]) -> String {
    let items: Vec<String> = violations.iter().map(ToString::to_string).collect();
    let cause = format!(
        "violates PodSecurity {}: {}",
        go_quote(&policy.to_string()),
        items.join(", ")
    );
    if pod_name.is_empty() {
        format!("pods is forbidden: {cause}")
    } else {
        format!("pods {} is forbidden: {cause}", go_quote(pod_name))
    }
}

// ---------------------------------------------------------------------------------------------
// The registry.

/// A check's behaviour as of one policy version.
type CheckFn = fn(&Pod<'_>) -> Option<Violation>;

/// One upstream check.
struct Check {
    /// Upstream's ID: the sort key of the message order.
    id: &'static str,
    /// Baseline (run by baseline and restricted) or restricted (run by restricted only).
    level: Level,
    /// `(N, behaviour)`: the behaviour from policy v1.N on, ascending; none before the first.
    versions: &'static [(u64, CheckFn)],
    /// The baseline check this one replaces wherever it applies (every overriding check
    /// upstream overrides from its first version on).
    overrides: Option<&'static str>,
}

impl Check {
    /// The behaviour at `version`, if the check exists then.
    fn at(&self, version: Version) -> Option<CheckFn> {
        self.versions
            .iter()
            .rev()
            .find(|(minor, _)| Version::v1(*minor) <= version)
            .map(|(_, run)| *run)
    }

    fn runs_at(&self, level: Level) -> bool {
        self.level == Level::Baseline || level == Level::Restricted
    }
}

/// Every check, in message order: baseline IDs sorted, then restricted IDs sorted.
static CHECKS: &[Check] = &[
    Check {
        id: "appArmorProfile",
        level: Level::Baseline,
        versions: &[(0, app_armor_profile)],
        overrides: None,
    },
    Check {
        id: "capabilities_baseline",
        level: Level::Baseline,
        versions: &[(0, capabilities_baseline)],
        overrides: None,
    },
    Check {
        id: "hostNamespaces",
        level: Level::Baseline,
        versions: &[(0, host_namespaces)],
        overrides: None,
    },
    Check {
        id: "hostPathVolumes",
        level: Level::Baseline,
        versions: &[(0, host_path_volumes)],
        overrides: None,
    },
    Check {
        id: "hostPorts",
        level: Level::Baseline,
        versions: &[(0, host_ports)],
        overrides: None,
    },
    Check {
        id: "hostProbesAndHostLifecycle",
        level: Level::Baseline,
        versions: &[(34, host_probes_and_lifecycle)],
        overrides: None,
    },
    Check {
        id: "privileged",
        level: Level::Baseline,
        versions: &[(0, privileged)],
        overrides: None,
    },
    Check {
        id: "procMount",
        level: Level::Baseline,
        versions: &[(0, proc_mount), (35, proc_mount_unless_user_namespace)],
        overrides: None,
    },
    Check {
        id: "seLinuxOptions",
        level: Level::Baseline,
        versions: &[(0, se_linux_options_1_0), (31, se_linux_options_1_31)],
        overrides: None,
    },
    Check {
        id: "seccompProfile_baseline",
        level: Level::Baseline,
        versions: &[
            (0, seccomp_annotations_baseline),
            (19, seccomp_profile_baseline),
        ],
        overrides: None,
    },
    Check {
        id: "sysctls",
        level: Level::Baseline,
        versions: &[
            (0, sysctls_1_0),
            (27, sysctls_1_27),
            (29, sysctls_1_29),
            (32, sysctls_1_32),
            (37, sysctls_1_37),
        ],
        overrides: None,
    },
    Check {
        id: "windowsHostProcess",
        level: Level::Baseline,
        versions: &[(0, windows_host_process)],
        overrides: None,
    },
    Check {
        id: "allowPrivilegeEscalation",
        level: Level::Restricted,
        versions: &[
            (8, allow_privilege_escalation),
            (25, allow_privilege_escalation_1_25),
        ],
        overrides: None,
    },
    Check {
        id: "capabilities_restricted",
        level: Level::Restricted,
        versions: &[
            (22, capabilities_restricted),
            (25, capabilities_restricted_1_25),
        ],
        overrides: Some("capabilities_baseline"),
    },
    Check {
        id: "procMount_restricted",
        level: Level::Restricted,
        versions: &[(35, proc_mount)],
        overrides: Some("procMount"),
    },
    Check {
        id: "restrictedVolumes",
        level: Level::Restricted,
        versions: &[(0, restricted_volumes)],
        overrides: Some("hostPathVolumes"),
    },
    Check {
        id: "runAsNonRoot",
        level: Level::Restricted,
        versions: &[(0, run_as_non_root), (35, run_as_non_root_1_35)],
        overrides: None,
    },
    Check {
        id: "runAsUser",
        level: Level::Restricted,
        versions: &[(23, run_as_user), (35, run_as_user_1_35)],
        overrides: None,
    },
    Check {
        id: "seccompProfile_restricted",
        level: Level::Restricted,
        versions: &[
            (19, seccomp_profile_restricted),
            (25, seccomp_profile_restricted_1_25),
        ],
        overrides: Some("seccompProfile_baseline"),
    },
];

/// The behaviours `policy` runs, in message order.
fn checks_for(policy: &Policy) -> Vec<CheckFn> {
    let version = policy.version;
    let overridden: Vec<&str> = CHECKS
        .iter()
        .filter(|c| c.runs_at(policy.level) && c.at(version).is_some())
        .filter_map(|c| c.overrides)
        .collect();
    CHECKS
        .iter()
        .filter(|c| c.runs_at(policy.level) && !overridden.contains(&c.id))
        .filter_map(|c| c.at(version))
        .collect()
}

/// `run`, except that a pod declaring `spec.os.name: windows` passes: the API server refuses
/// such a pod if it sets the Linux-only fields these checks require (v1.25+).
fn unless_windows(pod: &Pod<'_>, run: CheckFn) -> Option<Violation> {
    if pod.is_windows() { None } else { run(pod) }
}

/// `run`, except that a pod in a user namespace passes: its root is not the node's (v1.35+).
fn unless_user_namespace(pod: &Pod<'_>, run: CheckFn) -> Option<Violation> {
    if pod.in_user_namespace() {
        None
    } else {
        run(pod)
    }
}

// ---------------------------------------------------------------------------------------------
// The pod as the checks see it.

/// One container of any kind: upstream visits init, then regular, then ephemeral containers,
/// and names them all alike in its messages.
struct Ctr<'a> {
    name: &'a str,
    security: Option<&'a SecurityContext>,
    ports: &'a [ContainerPort],
    probes: [Option<&'a Probe>; 3],
    lifecycle: Option<&'a Lifecycle>,
}

impl<'a> From<&'a Container> for Ctr<'a> {
    fn from(c: &'a Container) -> Self {
        Ctr {
            name: &c.name,
            security: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
            probes: [
                c.liveness_probe.as_ref(),
                c.readiness_probe.as_ref(),
                c.startup_probe.as_ref(),
            ],
            lifecycle: c.lifecycle.as_ref(),
        }
    }
}

impl<'a> From<&'a EphemeralContainer> for Ctr<'a> {
    fn from(c: &'a EphemeralContainer) -> Self {
        Ctr {
            name: &c.name,
            security: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
            probes: [
                c.liveness_probe.as_ref(),
                c.readiness_probe.as_ref(),
                c.startup_probe.as_ref(),
            ],
            lifecycle: c.lifecycle.as_ref(),
        }
    }
}

/// A pod under evaluation.
struct Pod<'a> {
    meta: &'a ObjectMeta,
    spec: &'a PodSpec,
    containers: Vec<Ctr<'a>>,
}

impl<'a> Pod<'a> {
    fn new(meta: &'a ObjectMeta, spec: &'a PodSpec) -> Self {
        let init = spec.init_containers.iter().flatten().map(Ctr::from);
        let regular = spec.containers.iter().map(Ctr::from);
        let ephemeral = spec.ephemeral_containers.iter().flatten().map(Ctr::from);
        let containers = init.chain(regular).chain(ephemeral).collect();
        Pod {
            meta,
            spec,
            containers,
        }
    }

    fn security(&self) -> Option<&'a PodSecurityContext> {
        self.spec.security_context.as_ref()
    }

    /// Names of the containers `bad` picks, in visiting order.
    fn containers_where(&self, bad: impl Fn(&SecurityContext) -> bool) -> Vec<&'a str> {
        self.containers
            .iter()
            .filter(|c| c.security.is_some_and(&bad))
            .map(|c| c.name)
            .collect()
    }

    fn annotations(&self) -> impl Iterator<Item = (&'a String, &'a String)> {
        self.meta.annotations.iter().flatten()
    }

    fn annotation(&self, key: &str) -> Option<&'a str> {
        self.meta.annotations.as_ref()?.get(key).map(String::as_str)
    }

    fn is_windows(&self) -> bool {
        self.spec.os.as_ref().is_some_and(|os| os.name == "windows")
    }

    /// `hostUsers: false`: root in the pod is not root on the node.
    fn in_user_namespace(&self) -> bool {
        self.spec.host_users == Some(false)
    }
}

// ---------------------------------------------------------------------------------------------
// Wording helpers (upstream's `joinQuote` and `pluralize`).

fn violation(reason: &str, detail: String) -> Option<Violation> {
    Some(Violation {
        reason: reason.to_string(),
        detail,
    })
}

/// `"a", "b"`: names quoted as they are, without escaping.
fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let inner: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("\"{}\"", inner.join("\", \""))
}

fn plural<'s>(singular: &'s str, plural: &'s str, count: usize) -> &'s str {
    if count == 1 { singular } else { plural }
}

/// `container "a"` or `containers "a", "b"`.
fn containers_named(names: &[&str]) -> String {
    let noun = plural("container", "containers", names.len());
    format!("{noun} {}", join_quote(names))
}

/// `pod`, `containers "a", "b"` or `pod and container "a"`: who set a forbidden value.
fn setters(pod: bool, containers: &[&str]) -> Vec<String> {
    let mut who = Vec::new();
    if pod {
        who.push("pod".to_string());
    }
    if !containers.is_empty() {
        who.push(containers_named(containers));
    }
    who
}

/// Go's `%q`: a double-quoted string with Go's escapes. Printability is approximated with
/// Unicode control and non-space whitespace characters; ASCII is exact.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if u32::from(c) < 0x20 || u32::from(c) == 0x7f => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if !c.is_control() && (c == ' ' || !c.is_whitespace()) => out.push(c),
            c if u32::from(c) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Baseline checks.

/// AppArmor: profile types other than RuntimeDefault and Localhost, and the beta annotations
/// with values other than empty, `runtime/default` and `localhost/*`.
fn app_armor_profile(pod: &Pod<'_>) -> Option<Violation> {
    let allowed = |t: &str| matches!(t, "RuntimeDefault" | "Localhost");
    fn profile(s: &SecurityContext) -> Option<&str> {
        s.app_armor_profile.as_ref().map(|p| p.type_.as_str())
    }
    let mut values = BTreeSet::new();
    let pod_type = pod
        .security()
        .and_then(|s| s.app_armor_profile.as_ref())
        .map(|p| p.type_.as_str())
        .filter(|t| !allowed(t));
    values.extend(pod_type);
    let containers = pod.containers_where(|s| profile(s).is_some_and(|t| !allowed(t)));
    let container_types = pod
        .containers
        .iter()
        .filter_map(|c| c.security.and_then(profile));
    values.extend(container_types.filter(|t| !allowed(t)));
    let annotations = forbidden_app_armor_annotations(pod);
    let mut who = setters(pod_type.is_some(), &containers);
    if !annotations.is_empty() {
        who.push(plural("annotation", "annotations", annotations.len()).to_string());
    }
    if who.is_empty() {
        return None;
    }
    let mut bad: Vec<String> = values.into_iter().map(str::to_string).collect();
    bad.extend(annotations);
    let reason = plural(
        "forbidden AppArmor profile",
        "forbidden AppArmor profiles",
        bad.len(),
    );
    let detail = format!(
        "{} must not set AppArmor profile type to {}",
        who.join(" and "),
        join_quote(&bad)
    );
    violation(reason, detail)
}

/// `key="value"` of each forbidden AppArmor beta annotation, sorted as upstream sorts them (as
/// those strings, not by key).
fn forbidden_app_armor_annotations(pod: &Pod<'_>) -> Vec<String> {
    const PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
    let allowed = |v: &str| v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
    let mut found: Vec<String> = pod
        .annotations()
        .filter(|(k, v)| k.starts_with(PREFIX) && !allowed(v))
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect();
    found.sort();
    found
}

/// Capabilities added beyond the container runtime's default set.
fn capabilities_baseline(pod: &Pod<'_>) -> Option<Violation> {
    const DEFAULT_SET: &[&str] = &[
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    ];
    let mut containers = Vec::new();
    let mut added = BTreeSet::new();
    for c in &pod.containers {
        let adds = c.security.and_then(|s| s.capabilities.as_ref());
        let extra: Vec<&str> = adds
            .and_then(|caps| caps.add.as_ref())
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|cap| !DEFAULT_SET.contains(cap))
            .collect();
        if !extra.is_empty() {
            containers.push(c.name);
            added.extend(extra);
        }
    }
    if containers.is_empty() {
        return None;
    }
    let added: Vec<&str> = added.into_iter().collect();
    let detail = format!(
        "{} must not include {} in securityContext.capabilities.add",
        containers_named(&containers),
        join_quote(&added)
    );
    violation("non-default capabilities", detail)
}

/// The node's network, PID and IPC namespaces.
fn host_namespaces(pod: &Pod<'_>) -> Option<Violation> {
    let spec = pod.spec;
    let shared: Vec<&str> = [
        (spec.host_network, "hostNetwork=true"),
        (spec.host_pid, "hostPID=true"),
        (spec.host_ipc, "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(set, _)| *set == Some(true))
    .map(|(_, text)| text)
    .collect();
    if shared.is_empty() {
        return None;
    }
    violation("host namespaces", shared.join(", "))
}

/// hostPath volumes.
fn host_path_volumes(pod: &Pod<'_>) -> Option<Violation> {
    let names: Vec<&str> = volumes(pod)
        .filter(|v| v.host_path.is_some())
        .map(|v| v.name.as_str())
        .collect();
    if names.is_empty() {
        return None;
    }
    let noun = plural("volume", "volumes", names.len());
    violation("hostPath volumes", format!("{noun} {}", join_quote(&names)))
}

fn volumes<'a>(pod: &Pod<'a>) -> impl Iterator<Item = &'a Volume> {
    pod.spec.volumes.iter().flatten()
}

/// Host ports. Upstream lists them sorted as text, so 10250 comes before 9100.
fn host_ports(pod: &Pod<'_>) -> Option<Violation> {
    let mut containers = Vec::new();
    let mut ports = BTreeSet::new();
    for c in &pod.containers {
        let bound: Vec<String> = c
            .ports
            .iter()
            .filter_map(|p| p.host_port.filter(|h| *h != 0))
            .map(|h| h.to_string())
            .collect();
        if !bound.is_empty() {
            containers.push(c.name);
            ports.extend(bound);
        }
    }
    if containers.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    let detail = format!(
        "{} {} {} {}",
        containers_named(&containers),
        plural("uses", "use", containers.len()),
        plural("hostPort", "hostPorts", ports.len()),
        ports.join(", ")
    );
    violation("hostPort", detail)
}

/// A `host` in an HTTP or TCP probe or lifecycle handler (v1.34+). Upstream collects both the
/// containers and the hosts as sets, so both come out sorted.
fn host_probes_and_lifecycle(pod: &Pod<'_>) -> Option<Violation> {
    let mut containers = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for c in &pod.containers {
        let found = handler_hosts(c);
        if !found.is_empty() {
            containers.insert(c.name);
            hosts.extend(found);
        }
    }
    if containers.is_empty() {
        return None;
    }
    let containers: Vec<&str> = containers.into_iter().collect();
    let hosts: Vec<&str> = hosts.into_iter().collect();
    let detail = format!(
        "{} {} {} {}",
        containers_named(&containers),
        plural("uses", "use", containers.len()),
        plural(
            "probe or lifecycle host",
            "probe or lifecycle hosts",
            hosts.len()
        ),
        join_quote(&hosts)
    );
    violation("probe or lifecycle host", detail)
}

/// The non-empty hosts of a container's probes and postStart/preStop handlers.
fn handler_hosts<'a>(c: &Ctr<'a>) -> Vec<&'a str> {
    let probes = c.probes.iter().flatten().flat_map(|p| {
        let http = p.http_get.as_ref().and_then(|h| h.host.as_deref());
        let tcp = p.tcp_socket.as_ref().and_then(|t| t.host.as_deref());
        [http, tcp]
    });
    let handlers = c
        .lifecycle
        .into_iter()
        .flat_map(|l| [l.post_start.as_ref(), l.pre_stop.as_ref()])
        .flatten()
        .flat_map(|h: &LifecycleHandler| {
            let http = h.http_get.as_ref().and_then(|g| g.host.as_deref());
            let tcp = h.tcp_socket.as_ref().and_then(|t| t.host.as_deref());
            [http, tcp]
        });
    probes
        .chain(handlers)
        .flatten()
        .filter(|h| !h.is_empty())
        .collect()
}

/// Privileged containers.
fn privileged(pod: &Pod<'_>) -> Option<Violation> {
    let bad = pod.containers_where(|s| s.privileged == Some(true));
    if bad.is_empty() {
        return None;
    }
    let detail = format!(
        "{} must not set securityContext.privileged=true",
        containers_named(&bad)
    );
    violation("privileged", detail)
}

/// A procMount other than `Default` (an unmasked /proc).
fn proc_mount(pod: &Pod<'_>) -> Option<Violation> {
    fn mount(s: &SecurityContext) -> Option<&str> {
        s.proc_mount.as_deref().filter(|m| *m != "Default")
    }
    let containers = pod.containers_where(|s| mount(s).is_some());
    if containers.is_empty() {
        return None;
    }
    let types: BTreeSet<&str> = pod
        .containers
        .iter()
        .filter_map(|c| c.security.and_then(mount))
        .collect();
    let types: Vec<&str> = types.into_iter().collect();
    let detail = format!(
        "{} must not set securityContext.procMount to {}",
        containers_named(&containers),
        join_quote(&types)
    );
    violation("procMount", detail)
}

/// Baseline's procMount from v1.35: any value in a user namespace.
fn proc_mount_unless_user_namespace(pod: &Pod<'_>) -> Option<Violation> {
    unless_user_namespace(pod, proc_mount)
}

/// SELinux: only the container types, and never a user or role.
fn se_linux_options_1_0(pod: &Pod<'_>) -> Option<Violation> {
    se_linux_options(
        pod,
        &["", "container_t", "container_init_t", "container_kvm_t"],
    )
}

/// v1.31 adds `container_engine_t`.
fn se_linux_options_1_31(pod: &Pod<'_>) -> Option<Violation> {
    let allowed = [
        "",
        "container_t",
        "container_init_t",
        "container_kvm_t",
        "container_engine_t",
    ];
    se_linux_options(pod, &allowed)
}

/// What was wrong in the seLinuxOptions seen so far.
#[derive(Default)]
struct SeLinuxFindings<'a> {
    types: BTreeSet<&'a str>,
    user: bool,
    role: bool,
}

impl<'a> SeLinuxFindings<'a> {
    /// Records what `opts` gets wrong; whether it got nothing wrong.
    fn note(&mut self, opts: &'a SELinuxOptions, allowed: &[&str]) -> bool {
        let kind = opts.type_.as_deref().unwrap_or("");
        let type_ok = allowed.contains(&kind);
        if !type_ok {
            self.types.insert(kind);
        }
        let user = opts.user.as_deref().is_some_and(|u| !u.is_empty());
        let role = opts.role.as_deref().is_some_and(|r| !r.is_empty());
        self.user |= user;
        self.role |= role;
        type_ok && !user && !role
    }

    /// `type "x"; user may not be set; role may not be set`, the parts that apply.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.types.is_empty() {
            let types: Vec<&str> = self.types.iter().copied().collect();
            let noun = plural("type", "types", types.len());
            parts.push(format!("{noun} {}", join_quote(&types)));
        }
        if self.user {
            parts.push("user may not be set".to_string());
        }
        if self.role {
            parts.push("role may not be set".to_string());
        }
        parts.join("; ")
    }
}

fn se_linux_options(pod: &Pod<'_>, allowed: &[&str]) -> Option<Violation> {
    let mut found = SeLinuxFindings::default();
    let pod_opts = pod.security().and_then(|s| s.se_linux_options.as_ref());
    let pod_bad = pod_opts.is_some_and(|o| !found.note(o, allowed));
    let mut containers = Vec::new();
    for c in &pod.containers {
        let opts = c.security.and_then(|s| s.se_linux_options.as_ref());
        if opts.is_some_and(|o| !found.note(o, allowed)) {
            containers.push(c.name);
        }
    }
    let who = setters(pod_bad, &containers);
    if who.is_empty() {
        return None;
    }
    let detail = format!(
        "{} set forbidden securityContext.seLinuxOptions: {}",
        who.join(" and "),
        found.describe()
    );
    violation("seLinuxOptions", detail)
}

fn valid_seccomp_type(t: &str) -> bool {
    matches!(t, "Localhost" | "RuntimeDefault")
}

/// Before v1.19 seccomp was set by the alpha annotations: only `runtime/default`,
/// `docker/default` and `localhost/*` are allowed there.
fn seccomp_annotations_baseline(pod: &Pod<'_>) -> Option<Violation> {
    const POD_KEY: &str = "seccomp.security.alpha.kubernetes.io/pod";
    const CONTAINER_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";
    let valid =
        |v: &str| v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/");
    let mut forbidden = BTreeSet::new();
    let mut note = |key: &str| {
        if let Some(value) = pod.annotation(key).filter(|v| !valid(v)) {
            forbidden.insert(format!("{key}={}", go_quote(value)));
        }
    };
    note(POD_KEY);
    for c in &pod.containers {
        note(&format!("{CONTAINER_PREFIX}{}", c.name));
    }
    if forbidden.is_empty() {
        return None;
    }
    let forbidden: Vec<String> = forbidden.into_iter().collect();
    let noun = plural("annotation", "annotations", forbidden.len());
    violation(
        "seccompProfile",
        format!("forbidden {noun} {}", forbidden.join(", ")),
    )
}

/// Explicit seccomp profiles that are neither RuntimeDefault nor Localhost (v1.19+).
fn seccomp_profile_baseline(pod: &Pod<'_>) -> Option<Violation> {
    let seccomp = seccomp_findings(pod);
    seccomp.explicit_violation()
}

/// Who set which seccomp profile type, for both seccomp checks.
struct SeccompFindings<'a> {
    /// The pod set a forbidden type.
    pod_bad: bool,
    /// The pod set an allowed type, which containers inherit.
    pod_ok: bool,
    /// Containers that set a forbidden type.
    explicit: Vec<&'a str>,
    /// Containers that set none.
    unset: Vec<&'a str>,
    /// The forbidden types.
    values: BTreeSet<&'a str>,
}

fn seccomp_findings<'a>(pod: &Pod<'a>) -> SeccompFindings<'a> {
    let pod_type = pod
        .security()
        .and_then(|s| s.seccomp_profile.as_ref())
        .map(|p| p.type_.as_str());
    let mut found = SeccompFindings {
        pod_bad: pod_type.is_some_and(|t| !valid_seccomp_type(t)),
        pod_ok: pod_type.is_some_and(valid_seccomp_type),
        explicit: Vec::new(),
        unset: Vec::new(),
        values: pod_type
            .filter(|t| !valid_seccomp_type(t))
            .into_iter()
            .collect(),
    };
    for c in &pod.containers {
        match c.security.and_then(|s| s.seccomp_profile.as_ref()) {
            Some(p) if !valid_seccomp_type(&p.type_) => {
                found.explicit.push(c.name);
                found.values.insert(p.type_.as_str());
            }
            Some(_) => {}
            None => found.unset.push(c.name),
        }
    }
    found
}

impl SeccompFindings<'_> {
    /// The violation for explicitly forbidden types, if any.
    fn explicit_violation(&self) -> Option<Violation> {
        let who = setters(self.pod_bad, &self.explicit);
        if who.is_empty() {
            return None;
        }
        let values: Vec<&str> = self.values.iter().copied().collect();
        let detail = format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            who.join(" and "),
            join_quote(&values)
        );
        violation("seccompProfile", detail)
    }
}

/// Sysctls beyond the namespaced, isolated ones, as each policy version lists them.
fn sysctls(pod: &Pod<'_>, minor: u64) -> Option<Violation> {
    /// A safe sysctl and the policy version that first allows it.
    const SAFE: &[(&str, u64)] = &[
        ("kernel.shm_rmid_forced", 0),
        ("net.ipv4.ip_local_port_range", 0),
        ("net.ipv4.tcp_syncookies", 0),
        ("net.ipv4.ping_group_range", 0),
        ("net.ipv4.ip_unprivileged_port_start", 0),
        ("net.ipv4.ip_local_reserved_ports", 27),
        ("net.ipv4.tcp_keepalive_time", 29),
        ("net.ipv4.tcp_fin_timeout", 29),
        ("net.ipv4.tcp_keepalive_intvl", 29),
        ("net.ipv4.tcp_keepalive_probes", 29),
        ("net.ipv4.tcp_rmem", 32),
        ("net.ipv4.tcp_wmem", 32),
        ("net.ipv4.tcp_slow_start_after_idle", 37),
        ("net.ipv4.tcp_notsent_lowat", 37),
    ];
    let safe = |name: &str| SAFE.iter().any(|(s, since)| *s == name && *since <= minor);
    let forbidden: Vec<&str> = pod
        .security()
        .and_then(|s| s.sysctls.as_ref())
        .into_iter()
        .flatten()
        .map(|s| s.name.as_str())
        .filter(|name| !safe(name))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    violation("forbidden sysctls", forbidden.join(", "))
}

fn sysctls_1_0(pod: &Pod<'_>) -> Option<Violation> {
    sysctls(pod, 0)
}

fn sysctls_1_27(pod: &Pod<'_>) -> Option<Violation> {
    sysctls(pod, 27)
}

fn sysctls_1_29(pod: &Pod<'_>) -> Option<Violation> {
    sysctls(pod, 29)
}

fn sysctls_1_32(pod: &Pod<'_>) -> Option<Violation> {
    sysctls(pod, 32)
}

fn sysctls_1_37(pod: &Pod<'_>) -> Option<Violation> {
    sysctls(pod, 37)
}

/// Windows HostProcess containers, set on the pod or on containers.
fn windows_host_process(pod: &Pod<'_>) -> Option<Violation> {
    let pod_set = pod
        .security()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.host_process)
        == Some(true);
    let containers = pod.containers_where(|s| {
        s.windows_options.as_ref().and_then(|w| w.host_process) == Some(true)
    });
    let who = setters(pod_set, &containers);
    if who.is_empty() {
        return None;
    }
    let detail = format!(
        "{} must not set securityContext.windowsOptions.hostProcess=true",
        who.join(" and ")
    );
    violation("hostProcess", detail)
}

// ---------------------------------------------------------------------------------------------
// Restricted checks.

/// Containers that do not set allowPrivilegeEscalation=false (unset counts as allowed).
fn allow_privilege_escalation(pod: &Pod<'_>) -> Option<Violation> {
    let bad: Vec<&str> = pod
        .containers
        .iter()
        .filter(|c| c.security.and_then(|s| s.allow_privilege_escalation) != Some(false))
        .map(|c| c.name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    let detail = format!(
        "{} must set securityContext.allowPrivilegeEscalation=false",
        containers_named(&bad)
    );
    violation("allowPrivilegeEscalation != false", detail)
}

fn allow_privilege_escalation_1_25(pod: &Pod<'_>) -> Option<Violation> {
    unless_windows(pod, allow_privilege_escalation)
}

/// Containers must drop ALL and may add only NET_BIND_SERVICE.
fn capabilities_restricted(pod: &Pod<'_>) -> Option<Violation> {
    let mut missing_drop = Vec::new();
    let mut adding = Vec::new();
    let mut added = BTreeSet::new();
    for c in &pod.containers {
        let Some(caps) = c.security.and_then(|s| s.capabilities.as_ref()) else {
            missing_drop.push(c.name);
            continue;
        };
        if !caps.drop.iter().flatten().any(|d| d == "ALL") {
            missing_drop.push(c.name);
        }
        let extra: Vec<&str> = caps
            .add
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|a| *a != "NET_BIND_SERVICE")
            .collect();
        if !extra.is_empty() {
            adding.push(c.name);
            added.extend(extra);
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_named(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        let added: Vec<&str> = added.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&adding),
            join_quote(&added)
        ));
    }
    if details.is_empty() {
        return None;
    }
    violation("unrestricted capabilities", details.join("; "))
}

fn capabilities_restricted_1_25(pod: &Pod<'_>) -> Option<Violation> {
    unless_windows(pod, capabilities_restricted)
}

/// Volume types beyond the ephemeral and projected kinds.
fn restricted_volumes(pod: &Pod<'_>) -> Option<Violation> {
    let mut names = Vec::new();
    let mut types = BTreeSet::new();
    for v in volumes(pod) {
        if let Some(kind) = restricted_volume_type(v) {
            names.push(v.name.as_str());
            types.insert(kind);
        }
    }
    if names.is_empty() {
        return None;
    }
    let types: Vec<&str> = types.into_iter().collect();
    let detail = format!(
        "{} {} {} {} {}",
        plural("volume", "volumes", names.len()),
        join_quote(&names),
        plural("uses", "use", names.len()),
        plural(
            "restricted volume type",
            "restricted volume types",
            types.len()
        ),
        join_quote(&types)
    );
    violation("restricted volume types", detail)
}

/// The restricted type a volume uses, `None` for an allowed one. A volume with no source at all
/// (which defaulting makes an emptyDir) is `unknown`.
fn restricted_volume_type(v: &Volume) -> Option<&'static str> {
    let allowed = v.config_map.is_some()
        || v.csi.is_some()
        || v.downward_api.is_some()
        || v.empty_dir.is_some()
        || v.ephemeral.is_some()
        || v.image.is_some()
        || v.persistent_volume_claim.is_some()
        || v.projected.is_some()
        || v.secret.is_some();
    if allowed {
        return None;
    }
    // Upstream's order, which decides the name of a volume that sets several sources.
    let sources = [
        (v.host_path.is_some(), "hostPath"),
        (v.gce_persistent_disk.is_some(), "gcePersistentDisk"),
        (v.aws_elastic_block_store.is_some(), "awsElasticBlockStore"),
        (v.git_repo.is_some(), "gitRepo"),
        (v.nfs.is_some(), "nfs"),
        (v.iscsi.is_some(), "iscsi"),
        (v.glusterfs.is_some(), "glusterfs"),
        (v.rbd.is_some(), "rbd"),
        (v.flex_volume.is_some(), "flexVolume"),
        (v.cinder.is_some(), "cinder"),
        (v.cephfs.is_some(), "cephfs"),
        (v.flocker.is_some(), "flocker"),
        (v.fc.is_some(), "fc"),
        (v.azure_file.is_some(), "azureFile"),
        (v.vsphere_volume.is_some(), "vsphereVolume"),
        (v.quobyte.is_some(), "quobyte"),
        (v.azure_disk.is_some(), "azureDisk"),
        (v.photon_persistent_disk.is_some(), "photonPersistentDisk"),
        (v.portworx_volume.is_some(), "portworxVolume"),
        (v.scale_io.is_some(), "scaleIO"),
        (v.storageos.is_some(), "storageos"),
    ];
    let kind = sources.iter().find(|(set, _)| *set).map(|(_, name)| *name);
    Some(kind.unwrap_or("unknown"))
}

/// runAsNonRoot must be true, on the pod (inherited) or on every container.
fn run_as_non_root(pod: &Pod<'_>) -> Option<Violation> {
    let pod_value = pod.security().and_then(|s| s.run_as_non_root);
    let pod_true = pod_value == Some(true);
    let explicit = pod.containers_where(|s| s.run_as_non_root == Some(false));
    let who = setters(pod_value == Some(false), &explicit);
    if !who.is_empty() {
        let detail = format!(
            "{} must not set securityContext.runAsNonRoot=false",
            who.join(" and ")
        );
        return violation("runAsNonRoot != true", detail);
    }
    let unset: Vec<&str> = pod
        .containers
        .iter()
        .filter(|c| c.security.and_then(|s| s.run_as_non_root).is_none() && !pod_true)
        .map(|c| c.name)
        .collect();
    if unset.is_empty() {
        return None;
    }
    let detail = format!(
        "pod or {} must set securityContext.runAsNonRoot=true",
        containers_named(&unset)
    );
    violation("runAsNonRoot != true", detail)
}

fn run_as_non_root_1_35(pod: &Pod<'_>) -> Option<Violation> {
    unless_user_namespace(pod, run_as_non_root)
}

/// runAsUser must not be 0 (v1.23+).
fn run_as_user(pod: &Pod<'_>) -> Option<Violation> {
    let pod_root = pod.security().and_then(|s| s.run_as_user) == Some(0);
    let containers = pod.containers_where(|s| s.run_as_user == Some(0));
    let who = setters(pod_root, &containers);
    if who.is_empty() {
        return None;
    }
    violation(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", who.join(" and ")),
    )
}

fn run_as_user_1_35(pod: &Pod<'_>) -> Option<Violation> {
    unless_user_namespace(pod, run_as_user)
}

/// A seccomp profile must be RuntimeDefault or Localhost, set on the pod or every container.
fn seccomp_profile_restricted(pod: &Pod<'_>) -> Option<Violation> {
    let seccomp = seccomp_findings(pod);
    if let Some(explicit) = seccomp.explicit_violation() {
        return Some(explicit);
    }
    if seccomp.pod_ok || seccomp.unset.is_empty() {
        return None;
    }
    let detail = format!(
        r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
        containers_named(&seccomp.unset)
    );
    violation("seccompProfile", detail)
}

fn seccomp_profile_restricted_1_25(pod: &Pod<'_>) -> Option<Violation> {
    unless_windows(pod, seccomp_profile_restricted)
}

#[cfg(test)]
#[path = "podsecurity_tests.rs"]
mod tests;

//! The Prometheus series of `daemonsync sync`, served as OpenMetrics text at `GET /metrics`.
//!
//! The DaemonSet series are named after kube-state-metrics' `kube_daemonset_status_*` ones,
//! in the `daemonsync_` namespace, with the labels `namespace` and `daemonset`, so dashboards
//! and alerts written for the built-in controller carry over.
//!
//! prometheus-client appends `_total` to counters itself: they are registered without it, and
//! a test checks every exposed name.

use crate::plan::Status;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The `Content-Type` of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds of the reconcile duration buckets, in seconds (Prometheus' defaults, then the
/// minute a slow API server can take).
const DURATION_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Labels of the per-DaemonSet series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DaemonSetLabels {
    namespace: String,
    daemonset: String,
}

/// How a reconcile ended (label `result`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ReconcileResult {
    /// `result="success"`.
    Success,
    /// `result="error"`.
    Error,
}

/// A pod write (label `verb`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum PodVerb {
    /// `verb="create"`.
    Create,
    /// `verb="delete"`.
    Delete,
}

/// How a write ended (label `result`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum WriteResult {
    Success,
    Error,
}

/// Label values in lower case (the derive would write the variant names as they are).
macro_rules! label_values {
    ($($ty:ty { $($variant:ident => $text:literal),+ })+) => {$(
        impl EncodeLabelValue for $ty {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
                use std::fmt::Write as _;
                encoder.write_str(match self { $(Self::$variant => $text),+ })
            }
        }
    )+};
}

label_values! {
    ReconcileResult { Success => "success", Error => "error" }
    PodVerb { Create => "create", Delete => "delete" }
    WriteResult { Success => "success", Error => "error" }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    result: ReconcileResult,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PodWriteLabels {
    verb: PodVerb,
    result: WriteResult,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    repository: String,
    commit: String,
}

/// The seven status gauges, in [`Status`] order.
struct StatusGauges {
    desired_number_scheduled: Family<DaemonSetLabels, Gauge>,
    current_number_scheduled: Family<DaemonSetLabels, Gauge>,
    number_ready: Family<DaemonSetLabels, Gauge>,
    updated_number_scheduled: Family<DaemonSetLabels, Gauge>,
    number_available: Family<DaemonSetLabels, Gauge>,
    number_unavailable: Family<DaemonSetLabels, Gauge>,
    number_misscheduled: Family<DaemonSetLabels, Gauge>,
}

impl StatusGauges {
    fn each(&self) -> [&Family<DaemonSetLabels, Gauge>; 7] {
        [
            &self.desired_number_scheduled,
            &self.current_number_scheduled,
            &self.number_ready,
            &self.updated_number_scheduled,
            &self.number_available,
            &self.number_unavailable,
            &self.number_misscheduled,
        ]
    }
}

/// Every series of the daemon and the registry that encodes them. Shared (`Arc`) between the
/// sync loop, which records, and the HTTP listener, which encodes.
pub struct Metrics {
    registry: Registry,
    status: StatusGauges,
    rollout_halted: Family<DaemonSetLabels, Gauge>,
    rollout_paused: Family<DaemonSetLabels, Gauge>,
    rollout_frozen: Family<DaemonSetLabels, Gauge>,
    rollout_stalled: Family<DaemonSetLabels, Gauge>,
    reconcile: Family<ReconcileLabels, Counter>,
    reconcile_duration: Histogram,
    pod_writes: Family<PodWriteLabels, Counter>,
    source_info: Family<SourceLabels, Gauge>,
    /// Held while the one source series is replaced, so two callers never leave two.
    source_swap: Mutex<()>,
    source_errors: Counter,
    incremental_mismatches: Counter,
    leader: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Registers every series. The DaemonSet and source series appear once observed; the
    /// counters, the histogram and `daemonsync_leader` are exposed from the start.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let status = StatusGauges {
            desired_number_scheduled: Family::default(),
            current_number_scheduled: Family::default(),
            number_ready: Family::default(),
            updated_number_scheduled: Family::default(),
            number_available: Family::default(),
            number_unavailable: Family::default(),
            number_misscheduled: Family::default(),
        };
        let prefix = "daemonsync_daemonset_status_";
        for (name, help, family) in [
            (
                "desired_number_scheduled",
                "The number of nodes that should be running the daemon pod",
                &status.desired_number_scheduled,
            ),
            (
                "current_number_scheduled",
                "The number of nodes running at least one daemon pod and are supposed to",
                &status.current_number_scheduled,
            ),
            (
                "number_ready",
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready",
                &status.number_ready,
            ),
            (
                "updated_number_scheduled",
                "The number of nodes that are running the updated daemon pod",
                &status.updated_number_scheduled,
            ),
            (
                "number_available",
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available",
                &status.number_available,
            ),
            (
                "number_unavailable",
                "The number of nodes that should be running the daemon pod and have none of the daemon pod running and available",
                &status.number_unavailable,
            ),
            (
                "number_misscheduled",
                "The number of nodes running a daemon pod but are not supposed to",
                &status.number_misscheduled,
            ),
        ] {
            registry.register(format!("{prefix}{name}"), help, family.clone());
        }
        let rollout_halted = Family::<DaemonSetLabels, Gauge>::default();
        registry.register(
            "daemonsync_rollout_halted",
            "1 when the DaemonSet's rollout is halted (it waits for a person), else 0",
            rollout_halted.clone(),
        );
        let rollout_paused = Family::<DaemonSetLabels, Gauge>::default();
        registry.register(
            "daemonsync_rollout_paused",
            "1 while the DaemonSet is paused (daemonsync pause: no pod replaced, nodes without one \
             served), else 0",
            rollout_paused.clone(),
        );
        let rollout_frozen = Family::<DaemonSetLabels, Gauge>::default();
        registry.register(
            "daemonsync_rollout_frozen",
            "1 while the DaemonSet is frozen (daemonsync freeze: nothing written), else 0",
            rollout_frozen.clone(),
        );
        let rollout_stalled = Family::<DaemonSetLabels, Gauge>::default();
        registry.register(
            "daemonsync_rollout_stalled",
            "1 while the DaemonSet's rollout cannot make progress (its record's Stalled \
             condition: halted, blocked, a source error, or no progress past the progress \
             deadline), else 0",
            rollout_stalled.clone(),
        );
        let reconcile = Family::<ReconcileLabels, Counter>::default();
        // Exposed as daemonsync_reconcile_total: prometheus-client appends the suffix.
        registry.register(
            "daemonsync_reconcile",
            "Reconciles, by result",
            reconcile.clone(),
        );
        let reconcile_duration = Histogram::new(DURATION_BUCKETS);
        registry.register(
            "daemonsync_reconcile_duration_seconds",
            "How long a reconcile took, from trigger to its writes done",
            reconcile_duration.clone(),
        );
        let pod_writes = Family::<PodWriteLabels, Counter>::default();
        registry.register(
            "daemonsync_pod_writes",
            "Pod creates and deletes sent to the API server, by verb and result",
            pod_writes.clone(),
        );
        let source_info = Family::<SourceLabels, Gauge>::default();
        registry.register(
            "daemonsync_source_info",
            "The source read last: its repository (without credentials) and commit. Always 1",
            source_info.clone(),
        );
        let source_errors = Counter::default();
        registry.register(
            "daemonsync_source_errors",
            "Failed reads of the source (fetch, checkout or manifests)",
            source_errors.clone(),
        );
        let incremental_mismatches = Counter::default();
        registry.register(
            "daemonsync_incremental_mismatch",
            "DaemonSets whose incremental plan differed from the full re-plan of --resync \
             (each one logged as an error); 0 unless a change was missed",
            incremental_mismatches.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "daemonsync_leader",
            "1 while this replica holds the leader lease (and may write), else 0",
            leader.clone(),
        );
        // Both results exist from the start, so `rate()` of errors is 0 rather than absent.
        for result in [ReconcileResult::Success, ReconcileResult::Error] {
            let _ = reconcile.get_or_create(&ReconcileLabels { result });
        }
        Metrics {
            registry,
            status,
            rollout_halted,
            rollout_paused,
            rollout_frozen,
            rollout_stalled,
            reconcile,
            reconcile_duration,
            pod_writes,
            source_info,
            source_swap: Mutex::new(()),
            source_errors,
            incremental_mismatches,
            leader,
        }
    }

    /// Sets the seven status gauges and `daemonsync_rollout_halted` of one DaemonSet.
    pub fn observe_daemonset(
        &self,
        namespace: &str,
        daemonset: &str,
        status: &Status,
        halted: bool,
    ) {
        let labels = DaemonSetLabels {
            namespace: namespace.to_string(),
            daemonset: daemonset.to_string(),
        };
        let values = [
            status.desired_number_scheduled,
            status.current_number_scheduled,
            status.number_ready,
            status.updated_number_scheduled,
            status.number_available,
            status.number_unavailable,
            status.number_misscheduled,
        ];
        for (family, value) in self.status.each().into_iter().zip(values) {
            family.get_or_create(&labels).set(i64::from(value));
        }
        self.rollout_halted
            .get_or_create(&labels)
            .set(i64::from(halted));
    }

    /// Sets `daemonsync_rollout_paused` and `daemonsync_rollout_frozen` of one DaemonSet.
    pub fn observe_hold(&self, namespace: &str, daemonset: &str, paused: bool, frozen: bool) {
        let labels = DaemonSetLabels {
            namespace: namespace.to_string(),
            daemonset: daemonset.to_string(),
        };
        self.rollout_paused
            .get_or_create(&labels)
            .set(i64::from(paused));
        self.rollout_frozen
            .get_or_create(&labels)
            .set(i64::from(frozen));
    }

    /// Sets `daemonsync_rollout_stalled` of one DaemonSet.
    pub fn rollout_stalled(&self, namespace: &str, daemonset: &str, stalled: bool) {
        let labels = DaemonSetLabels {
            namespace: namespace.to_string(),
            daemonset: daemonset.to_string(),
        };
        self.rollout_stalled
            .get_or_create(&labels)
            .set(i64::from(stalled));
    }

    /// Removes every series of a DaemonSet no longer managed.
    pub fn forget_daemonset(&self, namespace: &str, daemonset: &str) {
        let labels = DaemonSetLabels {
            namespace: namespace.to_string(),
            daemonset: daemonset.to_string(),
        };
        for family in self.status.each() {
            family.remove(&labels);
        }
        self.rollout_halted.remove(&labels);
        self.rollout_paused.remove(&labels);
        self.rollout_frozen.remove(&labels);
        self.rollout_stalled.remove(&labels);
    }

    /// Counts one reconcile and observes how long it took.
    pub fn reconcile(&self, result: ReconcileResult, duration: Duration) {
        self.reconcile
            .get_or_create(&ReconcileLabels { result })
            .inc();
        self.reconcile_duration.observe(duration.as_secs_f64());
    }

    /// Counts one pod write (`result="success"` when `ok`, else `"error"`).
    pub fn pod_write(&self, verb: PodVerb, ok: bool) {
        let result = if ok {
            WriteResult::Success
        } else {
            WriteResult::Error
        };
        self.pod_writes
            .get_or_create(&PodWriteLabels { verb, result })
            .inc();
    }

    /// Sets the one `daemonsync_source_info` series (value 1), removing the previous one. The
    /// repository is redacted again here: a label must never carry a credential.
    pub fn source(&self, repository: &str, commit: &str) {
        let labels = SourceLabels {
            repository: crate::source::redact(repository),
            commit: commit.to_string(),
        };
        let _swap = self
            .source_swap
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.source_info.get(&labels).is_some() {
            return;
        }
        self.source_info.clear();
        self.source_info.get_or_create(&labels).set(1);
    }

    /// Counts one failed read of the source.
    pub fn source_error(&self) {
        self.source_errors.inc();
    }

    /// Counts DaemonSets whose incremental plan was not their full plan.
    pub fn incremental_mismatch(&self, daemonsets: u64) {
        self.incremental_mismatches.inc_by(daemonsets);
    }

    /// Sets `daemonsync_leader`.
    pub fn leader(&self, is_leader: bool) {
        self.leader.set(i64::from(is_leader));
    }

    /// Every series as OpenMetrics text (ending with `# EOF`), to serve with [`CONTENT_TYPE`].
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; the encoder only forwards fmt errors.
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
            out.push_str("# EOF\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> Status {
        Status {
            desired_number_scheduled: 5,
            current_number_scheduled: 4,
            number_ready: 3,
            updated_number_scheduled: 2,
            number_available: 3,
            number_unavailable: 2,
            number_misscheduled: 1,
            observed_generation: None,
        }
    }

    /// The value of the series written exactly as `series` (name and labels), if exposed.
    fn value(text: &str, series: &str) -> Option<String> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map(str::to_string)
    }

    /// Names of every exposed sample (without labels), sorted and deduplicated.
    fn sample_names(text: &str) -> Vec<String> {
        let mut names: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split(['{', ' ']).next().unwrap_or_default().to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    #[test]
    fn every_series_is_exposed_under_the_documented_name() {
        let m = Metrics::new();
        m.observe_daemonset("kube-system", "node-agent", &status(), true);
        m.observe_hold("kube-system", "node-agent", true, false);
        m.rollout_stalled("kube-system", "node-agent", true);
        m.reconcile(ReconcileResult::Success, Duration::from_millis(20));
        m.pod_write(PodVerb::Create, true);
        m.source("https://github.com/acme/fleet.git", "0123abc");
        m.source_error();
        m.leader(true);
        let text = m.encode();
        let expected = [
            "daemonsync_daemonset_status_current_number_scheduled",
            "daemonsync_daemonset_status_desired_number_scheduled",
            "daemonsync_daemonset_status_number_available",
            "daemonsync_daemonset_status_number_misscheduled",
            "daemonsync_daemonset_status_number_ready",
            "daemonsync_daemonset_status_number_unavailable",
            "daemonsync_daemonset_status_updated_number_scheduled",
            "daemonsync_incremental_mismatch_total",
            "daemonsync_leader",
            "daemonsync_pod_writes_total",
            "daemonsync_reconcile_duration_seconds_bucket",
            "daemonsync_reconcile_duration_seconds_count",
            "daemonsync_reconcile_duration_seconds_sum",
            "daemonsync_reconcile_total",
            "daemonsync_rollout_frozen",
            "daemonsync_rollout_halted",
            "daemonsync_rollout_paused",
            "daemonsync_rollout_stalled",
            "daemonsync_source_errors_total",
            "daemonsync_source_info",
        ];
        assert_eq!(sample_names(&text), expected, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn pause_and_freeze_gauges_follow_the_record_and_go_with_the_daemonset() {
        let m = Metrics::new();
        let labels = r#"{namespace="kube-system",daemonset="node-agent"}"#;
        let paused = format!("daemonsync_rollout_paused{labels}");
        let frozen = format!("daemonsync_rollout_frozen{labels}");
        m.observe_hold("kube-system", "node-agent", true, false);
        let text = m.encode();
        assert_eq!(value(&text, &paused).as_deref(), Some("1"), "{text}");
        assert_eq!(value(&text, &frozen).as_deref(), Some("0"), "{text}");
        m.observe_hold("kube-system", "node-agent", false, true);
        let text = m.encode();
        assert_eq!(value(&text, &paused).as_deref(), Some("0"), "{text}");
        assert_eq!(value(&text, &frozen).as_deref(), Some("1"), "{text}");
        m.forget_daemonset("kube-system", "node-agent");
        let text = m.encode();
        assert_eq!(value(&text, &paused), None, "{text}");
        assert_eq!(value(&text, &frozen), None, "{text}");
    }

    #[test]
    fn daemonset_gauges_carry_the_status_counters_and_the_halt() {
        let m = Metrics::new();
        m.observe_daemonset("kube-system", "node-agent", &status(), true);
        let text = m.encode();
        let labels = r#"{namespace="kube-system",daemonset="node-agent"}"#;
        for (name, v) in [
            ("desired_number_scheduled", "5"),
            ("current_number_scheduled", "4"),
            ("number_ready", "3"),
            ("updated_number_scheduled", "2"),
            ("number_available", "3"),
            ("number_unavailable", "2"),
            ("number_misscheduled", "1"),
        ] {
            let series = format!("daemonsync_daemonset_status_{name}{labels}");
            assert_eq!(
                value(&text, &series).as_deref(),
                Some(v),
                "{series}\n{text}"
            );
        }
        let halted = format!("daemonsync_rollout_halted{labels}");
        assert_eq!(value(&text, &halted).as_deref(), Some("1"));
        m.observe_daemonset("kube-system", "node-agent", &status(), false);
        assert_eq!(value(&m.encode(), &halted).as_deref(), Some("0"));
    }

    #[test]
    fn the_stalled_gauge_follows_the_rollout_and_goes_with_its_daemonset() {
        let m = Metrics::new();
        let series =
            r#"daemonsync_rollout_stalled{namespace="kube-system",daemonset="node-agent"}"#;
        m.rollout_stalled("kube-system", "node-agent", true);
        assert_eq!(value(&m.encode(), series).as_deref(), Some("1"));
        m.rollout_stalled("kube-system", "node-agent", false);
        assert_eq!(value(&m.encode(), series).as_deref(), Some("0"));
        m.forget_daemonset("kube-system", "node-agent");
        assert_eq!(value(&m.encode(), series), None);
    }

    #[test]
    fn a_forgotten_daemonset_leaves_no_series_and_others_stay() {
        let m = Metrics::new();
        m.observe_daemonset("kube-system", "node-agent", &status(), false);
        m.observe_daemonset("monitoring", "exporter", &status(), false);
        m.forget_daemonset("kube-system", "node-agent");
        let text = m.encode();
        assert!(!text.contains("node-agent"), "{text}");
        assert!(
            text.contains(
                r#"daemonsync_daemonset_status_number_ready{namespace="monitoring",daemonset="exporter"} 3"#
            ),
            "{text}"
        );
    }

    #[test]
    fn counters_count_by_label() {
        let m = Metrics::new();
        m.reconcile(ReconcileResult::Success, Duration::from_millis(30));
        m.reconcile(ReconcileResult::Success, Duration::from_secs(2));
        m.reconcile(ReconcileResult::Error, Duration::from_millis(5));
        m.pod_write(PodVerb::Create, true);
        m.pod_write(PodVerb::Create, true);
        m.pod_write(PodVerb::Delete, false);
        m.source_error();
        let text = m.encode();
        for (series, v) in [
            (r#"daemonsync_reconcile_total{result="success"}"#, "2"),
            (r#"daemonsync_reconcile_total{result="error"}"#, "1"),
            (
                r#"daemonsync_pod_writes_total{verb="create",result="success"}"#,
                "2",
            ),
            (
                r#"daemonsync_pod_writes_total{verb="delete",result="error"}"#,
                "1",
            ),
            ("daemonsync_source_errors_total", "1"),
            ("daemonsync_reconcile_duration_seconds_count", "3"),
            (
                r#"daemonsync_reconcile_duration_seconds_bucket{le="0.05"}"#,
                "2",
            ),
        ] {
            assert_eq!(value(&text, series).as_deref(), Some(v), "{series}\n{text}");
        }
    }

    #[test]
    fn one_source_series_at_a_time_and_never_a_credential() {
        let m = Metrics::new();
        m.source("https://github.com/acme/fleet.git", "aaaa111");
        m.source(
            "https://x-token:ghp_s3cr3tvalue@github.com/acme/fleet.git",
            "bbbb222",
        );
        let text = m.encode();
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("daemonsync_source_info"))
            .collect();
        assert_eq!(series.len(), 1, "{text}");
        assert!(series[0].contains(r#"commit="bbbb222""#), "{text}");
        assert!(series[0].ends_with(" 1"), "{text}");
        assert!(!text.contains("ghp_s3cr3tvalue"), "{text}");
        assert!(!text.contains("x-token"), "{text}");
    }

    #[test]
    fn leader_gauge_follows_leadership() {
        let m = Metrics::new();
        assert_eq!(
            value(&m.encode(), "daemonsync_leader").as_deref(),
            Some("0")
        );
        m.leader(true);
        assert_eq!(
            value(&m.encode(), "daemonsync_leader").as_deref(),
            Some("1")
        );
        m.leader(false);
        assert_eq!(
            value(&m.encode(), "daemonsync_leader").as_deref(),
            Some("0")
        );
    }
}

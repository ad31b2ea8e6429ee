//! One writer per DaemonSet: the record names who drives it (a `sync` daemon, by its lease,
//! or the last `apply`), and a writer that is not that one holds back instead of fighting it.
//!
//! - `apply` of a template other than the one a `sync` daemon drives is refused (nothing is
//!   written for that DaemonSet), unless `--force`: the record is then paused for the daemon
//!   (an event says so) and `apply` rolls its template out; `daemonsync resume` hands the
//!   DaemonSet back. `apply` of the daemon's own template writes pods as usual and leaves the
//!   record the daemon's.
//! - A `sync` daemon refuses a DaemonSet another daemon (another Lease, still held) drives.
//!   A daemon without leader election, or whose Lease lapsed, is replaced.
//! - A `sync` daemon leaves alone a DaemonSet that a forced `apply` took and paused.

use super::{ApplyOptions, Key};
use crate::cluster::{Record, RecordSource};
use crate::plan::DaemonSetSpec;

/// How this run stands to the writer a DaemonSet's record names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// This run drives it (no record yet, no writer named, the same writer, or one it
    /// replaces).
    Ours,
    /// `apply` of the template a `sync` daemon drives: pods are written as usual, the record
    /// keeps naming the daemon (this source).
    Alongside(RecordSource),
    /// Another writer drives it: nothing is written for it, with why.
    Refused(String),
    /// `apply --force` over a `sync` daemon: the record is paused for the daemon first.
    Forced,
    /// A `sync` daemon, and a forced `apply` took the DaemonSet (its record is paused):
    /// nothing is written for it, not even its record.
    Yielded,
}

/// Where `daemonset`'s record stands for this run, `revision` being the template it applies.
pub fn standing(record: Option<&Record>, revision: &str, opts: &ApplyOptions) -> Standing {
    let (Some(ours), Some(record)) = (opts.source.writer.as_ref(), record) else {
        return Standing::Ours;
    };
    let Some(theirs_source) = record.source.as_ref() else {
        return Standing::Ours;
    };
    let Some(theirs) = theirs_source.writer.as_ref() else {
        return Standing::Ours;
    };
    if theirs.same(ours) {
        return Standing::Ours;
    }
    let display = format!("{}/{}", record.namespace, record.name);
    if !theirs.is_sync() {
        // The last `apply`: a daemon takes the DaemonSet back once its record is resumed.
        return if ours.is_sync() && record.paused {
            Standing::Yielded
        } else {
            Standing::Ours
        };
    }
    if ours.is_sync() {
        return match (&theirs.lease, &ours.lease) {
            (Some(t), Some(o)) if t != o && !opts.expired_leases.contains(t) => {
                Standing::Refused(format!(
                    "{} drives {display} from {}; two daemons never converge on one \
                     DaemonSet: remove it from one of their sources (this daemon's lease is {o})",
                    theirs.describe(),
                    theirs_source.describe(),
                ))
            }
            // A daemon without leader election, or one whose Lease lapsed: replaced.
            _ => Standing::Ours,
        };
    }
    if opts.force {
        return Standing::Forced;
    }
    let same_template = record
        .daemonset
        .as_ref()
        .is_some_and(|d| DaemonSetSpec::compile(d).revision == revision);
    if same_template {
        return Standing::Alongside(theirs_source.clone());
    }
    Standing::Refused(format!(
        "{} drives {display} from {} and would revert this template; `daemonsync apply \
         --force` takes it by hand: it pauses the daemon for it (as `daemonsync pause {} -n {}` \
         does) and applies, and `daemonsync resume {} -n {}` gives it back",
        theirs.describe(),
        theirs_source.describe(),
        record.name,
        record.namespace,
        record.name,
        record.namespace,
    ))
}

/// The standing of every planned DaemonSet that is not simply [`Standing::Ours`].
pub fn standings(
    plan: &crate::plan::Plan,
    records: &[std::sync::Arc<Record>],
    opts: &ApplyOptions,
) -> std::collections::BTreeMap<Key, Standing> {
    plan.daemonsets
        .iter()
        .filter_map(|ds| {
            let record = records
                .iter()
                .find(|r| r.namespace == ds.namespace && r.name == ds.name);
            match standing(record.map(|r| &**r), &ds.revision, opts) {
                Standing::Ours => None,
                s => Some(((ds.namespace.clone(), ds.name.clone()), s)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::RecordWriter;

    fn daemonset(image: &str) -> k8s_openapi::api::apps::v1::DaemonSet {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "demo"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "a", "image": image}]}}}
        }))
        .unwrap()
    }

    fn revision(image: &str) -> String {
        DaemonSetSpec::compile(&daemonset(image)).revision
    }

    fn record(writer: RecordWriter, image: &str, paused: bool) -> Record {
        Record {
            namespace: "demo".into(),
            name: "agent".into(),
            status: None,
            paused,
            frozen: false,
            promoted: None,
            aborted: None,
            daemonset: Some(daemonset(image)),
            uid: "u".into(),
            deleting: false,
            source: Some(RecordSource {
                repository: Some("https://git.example/fleet".into()),
                path: Some("ds".into()),
                commit: Some("0123456789abcdef".into()),
                writer: Some(writer),
            }),
        }
    }

    fn opts(writer: RecordWriter) -> ApplyOptions {
        let mut o = ApplyOptions::default();
        o.source.writer = Some(writer);
        o
    }

    fn daemon(lease: &str) -> RecordWriter {
        RecordWriter::sync("pod-a", Some(lease.into()))
    }

    #[test]
    fn apply_of_another_template_is_refused_naming_the_daemon_its_source_and_the_way_out() {
        let r = record(daemon("daemonsync/daemonsync"), "agent:1", false);
        let Standing::Refused(why) =
            standing(Some(&r), &revision("agent:9"), &opts(RecordWriter::apply()))
        else {
            panic!("refused")
        };
        for part in [
            "the daemonsync sync daemon pod-a (lease daemonsync/daemonsync)",
            "https://git.example/fleet (ds) at commit 0123456",
            "daemonsync apply --force",
            "daemonsync pause agent -n demo",
            "daemonsync resume agent -n demo",
        ] {
            assert!(why.contains(part), "{part}: {why}");
        }
    }

    #[test]
    fn apply_of_the_daemons_own_template_writes_and_leaves_the_record_the_daemons() {
        let r = record(daemon("daemonsync/daemonsync"), "agent:1", false);
        assert_eq!(
            standing(Some(&r), &revision("agent:1"), &opts(RecordWriter::apply())),
            Standing::Alongside(r.source.clone().unwrap())
        );
    }

    #[test]
    fn force_takes_it_from_the_daemon() {
        let r = record(daemon("daemonsync/daemonsync"), "agent:1", false);
        let mut o = opts(RecordWriter::apply());
        o.force = true;
        assert_eq!(
            standing(Some(&r), &revision("agent:9"), &o),
            Standing::Forced
        );
    }

    #[test]
    fn a_second_daemon_refuses_what_a_live_lease_drives_and_replaces_a_lapsed_one() {
        let r = record(daemon("ops/first"), "agent:1", false);
        let second = opts(RecordWriter::sync("pod-b", Some("ops/second".into())));
        let Standing::Refused(why) = standing(Some(&r), &revision("agent:1"), &second) else {
            panic!("refused")
        };
        assert!(
            why.contains("(lease ops/first)") && why.contains("ops/second"),
            "{why}"
        );
        let mut lapsed = second.clone();
        lapsed.expired_leases.insert("ops/first".into());
        assert_eq!(
            standing(Some(&r), &revision("agent:1"), &lapsed),
            Standing::Ours
        );
        // Another replica of the same daemon (same lease) is the same writer.
        let replica = opts(RecordWriter::sync("pod-c", Some("ops/first".into())));
        assert_eq!(
            standing(Some(&r), &revision("agent:9"), &replica),
            Standing::Ours
        );
    }

    #[test]
    fn a_daemon_yields_to_a_forced_apply_until_resumed() {
        let d = opts(daemon("daemonsync/daemonsync"));
        let paused = record(RecordWriter::apply(), "agent:9", true);
        assert_eq!(
            standing(Some(&paused), &revision("agent:1"), &d),
            Standing::Yielded
        );
        let resumed = record(RecordWriter::apply(), "agent:9", false);
        assert_eq!(
            standing(Some(&resumed), &revision("agent:1"), &d),
            Standing::Ours
        );
    }

    #[test]
    fn without_a_writer_named_nothing_is_refused() {
        let mut r = record(daemon("ops/first"), "agent:1", false);
        assert_eq!(
            standing(Some(&r), &revision("agent:9"), &ApplyOptions::default()),
            Standing::Ours
        );
        r.source.as_mut().unwrap().writer = None;
        assert_eq!(
            standing(Some(&r), &revision("agent:9"), &opts(RecordWriter::apply())),
            Standing::Ours
        );
    }
}

//! A stalled rollout is visible: past the progress deadline without progress the record says
//! `Stalled=True` with the reason, the clock lives in the record (a restarted apply keeps it),
//! progress resets it, and a pause stops it.

use super::tests::{desired, run};
use super::*;
use crate::cluster::sim::Sim;
use crate::cluster::sim::config::SimConfig;
use jiff::SignedDuration;
use serde_json::Value;

/// A DaemonSet `agent` at `image` that tolerates every taint (it runs on NotReady nodes too,
/// as node agents do), `maxUnavailable: 1`, with `annotations` (YAML flow mapping entries).
pub(super) fn agent(image: &str, annotations: &str) -> Vec<Desired> {
    desired(&format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: ns, annotations: {{{annotations}}}}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 1}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      tolerations: [{{operator: Exists}}]
      containers: [{{name: c, image: '{image}'}}]
"
    ))
}

/// A simulated cluster of `nodes` Ready nodes `n-1`… (and the sim file's `extra` keys) with
/// the namespace `ns`, running `agent:1`.
pub(super) fn cluster(nodes: usize, extra: &str) -> Sim {
    let cfg = format!(
        "seed: 7
kubelet: {{startLatency: {{fixed: 5s}}, terminationGrace: 1s}}
nodes:
  - {{name: 'n-{{i}}', count: {nodes}}}
{extra}
namespaces: [{{name: ns}}]
"
    );
    let mut sim = Sim::new(SimConfig::parse(&cfg).expect("sim config")).expect("sim");
    sim.install(&agent("agent:1", "")).unwrap();
    sim
}

/// The record of `agent` as the API server stores and returns it.
pub(super) fn record(sim: &Sim) -> Value {
    let entry = sim
        .world()
        .store
        .get("daemonsync.io/manageddaemonsets", "ns", "agent")
        .expect("the record of ns/agent");
    (*entry.object()).clone()
}

/// The condition `type_` of a record, if present.
pub(super) fn condition<'r>(record: &'r Value, type_: &str) -> Option<&'r Value> {
    record["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// `(status, reason)` of the condition `type_`, `("", "")` when absent.
fn state(record: &Value, type_: &str) -> (String, String) {
    condition(record, type_).map_or_else(Default::default, |c| {
        (
            c["status"].as_str().unwrap_or_default().to_string(),
            c["reason"].as_str().unwrap_or_default().to_string(),
        )
    })
}

fn deadline(d: SignedDuration) -> ApplyOptions {
    ApplyOptions {
        progress_deadline: d,
        ..ApplyOptions::default()
    }
}

/// Three Ready nodes and `sick`, NotReady: its pod is unavailable, which uses the only unit
/// of the budget, so nothing else can move.
const SICK: &str = "  - {name: sick, ready: false}";

#[test]
fn not_ready_nodes_that_hold_the_budget_stall_the_rollout_past_the_deadline() {
    let mut sim = cluster(3, SICK);
    let start = sim.now();
    let r = run(
        &mut sim,
        &agent("agent:2", ""),
        &deadline(SignedDuration::from_mins(5)),
    );
    assert_eq!(r.outcome, Outcome::Stalled);
    assert!(r.failed.is_empty(), "the new version is not blamed");
    let record = record(&sim);
    let stalled = condition(&record, "Stalled").expect("a Stalled condition");
    assert_eq!(stalled["status"], "True", "{record:#}");
    assert_eq!(stalled["reason"], "ProgressDeadlineExceeded");
    let message = stalled["message"].as_str().unwrap();
    assert!(
        message.contains("no progress for 5m")
            && message.contains("NotReady nodes")
            && message.contains("sick"),
        "{message}"
    );
    // Stalled once the deadline passed after the last progress, not before.
    let last: Timestamp = record["status"]["lastProgressTime"]
        .as_str()
        .expect("lastProgressTime")
        .parse()
        .unwrap();
    let since: Timestamp = stalled["lastTransitionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(last >= start && last < since, "{last} {since}");
    assert_eq!(
        since,
        crate::model::later(last, SignedDuration::from_mins(5))
    );
    assert_eq!(
        state(&record, "Ready"),
        ("False".into(), "ProgressDeadlineExceeded".into())
    );
    assert_eq!(state(&record, "Reconciling").0, "False");
    assert_eq!(
        stalled["observedGeneration"], record["metadata"]["generation"],
        "{record:#}"
    );

    // `plan` and `status` say so: the planner reads it from the record.
    let p = plan::plan(
        &agent("agent:2", ""),
        &sim.observed(),
        &plan::Policy::default(),
        sim.now(),
    );
    let s = p.daemonsets[0]
        .stalled
        .as_ref()
        .expect("the plan says stalled");
    assert_eq!(
        (s.reason.as_str(), s.since),
        ("ProgressDeadlineExceeded", Some(since))
    );
    let table = crate::report::to_table(&p, &crate::report::TableOptions::default());
    assert!(
        table.contains(&format!(
            "  STALLED since {since} (ProgressDeadlineExceeded): no progress for 5m"
        )),
        "{table}"
    );
    let status = crate::report::table::to_status_table(&p, &crate::report::TableOptions::default());
    assert!(
        status.contains(&format!(
            "\nns/agent: STALLED since {since} (ProgressDeadlineExceeded): no progress for 5m"
        )),
        "{status}"
    );
    let markdown = crate::report::to_markdown(
        &p,
        &crate::report::MarkdownContext::default(),
        &Default::default(),
    )
    .concat();
    assert!(
        markdown.contains(&format!(
            "> [!CAUTION]\n> **Stalled rollouts.** Their records say they cannot make progress.\n\
             > - **ns/agent** stalled since `{since}` (`ProgressDeadlineExceeded`): no progress \
             for 5m"
        )),
        "{markdown}"
    );
    let json: Value = serde_json::from_str(&crate::report::to_json(&p)).unwrap();
    assert_eq!(
        json["daemonsets"][0]["stalled"]["reason"],
        "ProgressDeadlineExceeded"
    );
}

#[test]
fn a_rollout_slower_than_the_deadline_that_keeps_progressing_never_stalls() {
    // Each new pod takes 3 minutes to start and one node moves at a time: the rollout takes
    // four times as long as the 5-minute deadline, and progresses all along.
    let cfg = "seed: 7
kubelet: {startLatency: {fixed: 3m}, terminationGrace: 1s}
nodes:
  - {name: 'n-{i}', count: 4}
namespaces: [{name: ns}]
";
    let mut sim = Sim::new(SimConfig::parse(cfg).unwrap()).unwrap();
    sim.install(&agent("agent:1", "")).unwrap();
    let r = run(
        &mut sim,
        &agent("agent:2", ""),
        &deadline(SignedDuration::from_mins(5)),
    );
    assert_eq!(r.outcome, Outcome::Converged);
    assert!(
        r.elapsed() > SignedDuration::from_mins(10),
        "{:?}",
        r.elapsed()
    );
    let record = record(&sim);
    assert!(
        condition(&record, "Stalled").is_none(),
        "never stalled: {record:#}"
    );
    assert_eq!(
        state(&record, "Ready"),
        ("True".into(), "RolloutComplete".into())
    );
    assert!(
        record["status"].get("lastProgressTime").is_none(),
        "no clock runs once complete: {record:#}"
    );
}

#[test]
fn the_progress_clock_lives_in_the_record_so_a_restarted_apply_keeps_it() {
    let mut sim = cluster(3, SICK);
    let opts = ApplyOptions {
        timeout: Some(SignedDuration::from_mins(3)),
        ..deadline(SignedDuration::from_mins(5))
    };
    let new = agent("agent:2", "");
    assert_eq!(run(&mut sim, &new, &opts).outcome, Outcome::TimedOut);
    let first = record(&sim);
    assert_eq!(
        state(&first, "Reconciling"),
        ("True".into(), "Progressing".into())
    );
    let last = first["status"]["lastProgressTime"].clone();
    assert!(last.is_string(), "{first:#}");

    // A fresh apply (a restart) stalls 5 minutes after the recorded last progress, not 5
    // minutes after it started.
    let restarted = sim.now();
    let r = run(&mut sim, &new, &deadline(SignedDuration::from_mins(5)));
    assert_eq!(r.outcome, Outcome::Stalled);
    let second = record(&sim);
    assert_eq!(second["status"]["lastProgressTime"], last);
    let since: Timestamp = condition(&second, "Stalled").unwrap()["lastTransitionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        since < crate::model::later(restarted, SignedDuration::from_mins(5)),
        "{since} vs restart at {restarted}"
    );
}

#[test]
fn progress_after_a_stall_clears_it() {
    // `sick` is removed after 20 minutes: the rollout stalls at 5, then finishes.
    let churn = format!("{SICK}\nchurn:\n  - {{at: 20m, remove: sick}}");
    let mut sim = cluster(3, &churn);
    let new = agent("agent:2", "");
    let opts = ApplyOptions {
        timeout: Some(SignedDuration::from_mins(10)),
        ..deadline(SignedDuration::from_mins(5))
    };
    assert_eq!(run(&mut sim, &new, &opts).outcome, Outcome::TimedOut);
    assert_eq!(state(&record(&sim), "Stalled").0, "True");
    let r = run(&mut sim, &new, &deadline(SignedDuration::from_mins(5)));
    assert_eq!(r.outcome, Outcome::Converged);
    let record = record(&sim);
    assert_eq!(
        state(&record, "Stalled"),
        ("False".into(), "RolloutComplete".into())
    );
    assert_eq!(
        state(&record, "Ready"),
        ("True".into(), "RolloutComplete".into())
    );
}

#[test]
fn a_paused_rollout_waits_without_stalling() {
    let mut sim = cluster(3, "");
    sim.set_paused("ns", "agent", true);
    let new = agent("agent:2", "");
    let opts = deadline(SignedDuration::from_mins(1));
    assert_eq!(run(&mut sim, &new, &opts).outcome, Outcome::Paused);
    sim.advance(sim.now() + SignedDuration::from_mins(30));
    assert_eq!(run(&mut sim, &new, &opts).outcome, Outcome::Paused);
    let record = record(&sim);
    assert!(condition(&record, "Stalled").is_none(), "{record:#}");
    assert_eq!(state(&record, "Ready"), ("False".into(), "Paused".into()));
    assert_eq!(
        state(&record, "Reconciling"),
        ("False".into(), "Paused".into())
    );
    assert!(record["status"].get("lastProgressTime").is_none());
}

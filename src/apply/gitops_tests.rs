//! The record's status as GitOps tools read it. Rollouts run on the simulated cluster to each
//! state a record can show (complete, under way, paused, at a manual canary pause, halted,
//! stalled, its newest spec not yet observed); the record, as the API server returns it, is
//! then judged by a re-statement of kstatus' rules (what Flux's health checks use) and by
//! `examples/argocd/health.lua` in a Lua interpreter, as Argo CD runs it.

use super::stall_tests::{agent, cluster, condition, record};
use super::tests::run;
use super::*;
use crate::cluster::sim::Sim;
use crate::cluster::{Cluster, RecordSource};
use jiff::SignedDuration;
use serde_json::{Value, json};

/// kstatus' `Compute` for a resource of a kind it has no rules for, restated from
/// sigs.k8s.io/cli-utils `pkg/kstatus/status` (`checkGenericProperties`, `checkGeneration`,
/// `checkReadyCondition`): terminating, then a generation not yet observed, then the first
/// of `Reconciling=True` (InProgress) or `Stalled=True` (Failed) in list order, then `Ready`
/// (True: Current; False or Unknown: InProgress), else Current.
fn kstatus(obj: &Value) -> (&'static str, String) {
    if obj["metadata"]["deletionTimestamp"].is_string() {
        return ("Terminating", "Resource scheduled for deletion".into());
    }
    if let (Some(generation), Some(observed)) = (
        obj["metadata"]["generation"].as_i64(),
        obj["status"]["observedGeneration"].as_i64(),
    ) && generation != observed
    {
        return (
            "InProgress",
            format!("generation is {generation}, but latest observed generation is {observed}"),
        );
    }
    let conditions = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let text = |c: &Value| c["message"].as_str().unwrap_or_default().to_string();
    for c in &conditions {
        if c["type"] == "Reconciling" && c["status"] == "True" {
            return ("InProgress", text(c));
        }
        if c["type"] == "Stalled" && c["status"] == "True" {
            return ("Failed", text(c));
        }
    }
    for c in conditions.iter().filter(|c| c["type"] == "Ready") {
        match c["status"].as_str() {
            Some("True") => return ("Current", "Resource is Ready".into()),
            Some("False" | "Unknown") => return ("InProgress", text(c)),
            _ => {}
        }
    }
    ("Current", "Resource is current".into())
}

/// What `examples/argocd/health.lua` returns for `obj`, run as Argo CD runs a health check:
/// `obj` a global, only the base, table, string and math libraries.
fn argo_health(obj: &Value) -> (String, String) {
    use mlua::serde::SerializeOptions;
    use mlua::{Lua, LuaOptions, LuaSerdeExt, StdLib, Table};
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/argocd/health.lua");
    let script = std::fs::read_to_string(path).expect("examples/argocd/health.lua");
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )
    .expect("a Lua interpreter");
    // JSON null is an absent field, as Argo CD converts objects.
    let options = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let value = lua.to_value_with(obj, options).expect("the record as Lua");
    lua.globals().set("obj", value).unwrap();
    let hs: Table = lua
        .load(&script)
        .set_name("health.lua")
        .eval()
        .unwrap_or_else(|e| panic!("health.lua failed: {e}"));
    (hs.get("status").unwrap(), hs.get("message").unwrap())
}

/// Each condition follows the conventions kstatus and `kubectl wait` rely on: True or False,
/// a CamelCase reason, a message, the record's generation; `Ready` is always there.
fn assert_conventions(name: &str, obj: &Value) {
    let status = &obj["status"];
    let generation = &status["observedGeneration"];
    assert!(generation.is_i64(), "{name}: observedGeneration\n{obj:#}");
    let conditions = status["conditions"].as_array().expect("conditions");
    for c in conditions {
        let reason = c["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(|ch: char| ch.is_ascii_uppercase())
                && reason.chars().all(|ch| ch.is_ascii_alphanumeric()),
            "{name}: reason {reason:?} is CamelCase"
        );
        assert!(
            ["True", "False"].contains(&c["status"].as_str().unwrap_or_default()),
            "{name}: {c}"
        );
        assert!(
            !c["message"].as_str().unwrap_or_default().is_empty(),
            "{name}: {c}"
        );
        assert_eq!(&c["observedGeneration"], generation, "{name}: {c}");
        assert!(c["lastTransitionTime"].is_string(), "{name}: {c}");
    }
    assert!(
        condition(obj, "Ready").is_some(),
        "{name}: no Ready\n{obj:#}"
    );
}

/// A record in each state, produced by rollouts on the simulated cluster.
fn recorded() -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let mut sim = cluster(3, "");
    let r = run(&mut sim, &agent("agent:2", ""), &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    out.push(("converged", record(&sim)));

    // The source moved on and daemonsync wrote the record's new spec, not yet its status
    // (what a record shows between the two writes, or edited while daemonsync is stopped).
    block_on(sim.ensure_record(&agent("agent:3", "")[0].daemonset, &RecordSource::default()))
        .unwrap();
    out.push(("not yet observed", record(&sim)));

    let mut sim = cluster(3, "");
    let opts = ApplyOptions {
        stop_after_writes: Some(1),
        ..ApplyOptions::default()
    };
    assert_eq!(
        run(&mut sim, &agent("agent:2", ""), &opts).outcome,
        Outcome::Interrupted
    );
    out.push(("in progress", record(&sim)));

    let mut sim = cluster(3, "");
    sim.set_paused("ns", "agent", true);
    let r = run(&mut sim, &agent("agent:2", ""), &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Paused);
    out.push(("paused", record(&sim)));

    let mut sim = cluster(3, "");
    let canary = "daemonsync.io/canary: '1', daemonsync.io/canary-pause: manual";
    let r = run(
        &mut sim,
        &agent("agent:2", canary),
        &ApplyOptions::default(),
    );
    assert_eq!(r.outcome, Outcome::AwaitingPromotion);
    out.push(("manual canary pause", record(&sim)));

    let failing = "failures:\n  images: [{image: 'agent:bad', reason: ErrImagePull}]";
    let mut sim = cluster(3, failing);
    let opts = ApplyOptions {
        progress_deadline: SignedDuration::from_mins(2),
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &agent("agent:bad", ""), &opts);
    assert_eq!(r.outcome, Outcome::Halted);
    out.push(("halted", record(&sim)));

    let mut sim: Sim = cluster(3, "  - {name: sick, ready: false}");
    let opts = ApplyOptions {
        progress_deadline: SignedDuration::from_mins(5),
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &agent("agent:2", ""), &opts);
    assert_eq!(r.outcome, Outcome::Stalled);
    out.push(("stalled", record(&sim)));
    out
}

#[test]
fn flux_and_argo_cd_read_each_recorded_status_as_expected() {
    // (state, kstatus, Argo CD health, words the Argo CD message has)
    let expected: [(&str, &str, &str, &str); 7] = [
        ("converged", "Current", "Healthy", "runs on all 3 nodes"),
        (
            "not yet observed",
            "InProgress",
            "Progressing",
            "observe generation 3",
        ),
        (
            "in progress",
            "InProgress",
            "Progressing",
            "of 3 nodes run revision",
        ),
        ("paused", "InProgress", "Suspended", "daemonsync.io/paused"),
        (
            "manual canary pause",
            "InProgress",
            "Suspended",
            "daemonsync promote",
        ),
        ("halted", "Failed", "Degraded", "ErrImagePull"),
        ("stalled", "Failed", "Degraded", "no progress for 5m"),
    ];
    let recorded = recorded();
    assert_eq!(recorded.len(), expected.len());
    for ((name, obj), (want, ks, health, words)) in recorded.iter().zip(expected) {
        assert_eq!(*name, want);
        if *name != "not yet observed" {
            assert_conventions(name, obj);
        }
        assert_eq!(kstatus(obj).0, ks, "{name}: kstatus\n{obj:#}");
        let (status, message) = argo_health(obj);
        assert_eq!(status, health, "{name}: {message}\n{obj:#}");
        assert!(
            message.contains(words),
            "{name}: {message:?} says {words:?}"
        );
    }
}

#[test]
fn argo_cd_shows_a_frozen_record_as_suspended_and_an_old_status_by_its_counters() {
    let mut sim = cluster(3, "");
    run(&mut sim, &agent("agent:2", ""), &ApplyOptions::default());
    let mut frozen = record(&sim);
    // `daemonsync freeze` sets the Frozen condition.
    let generation = frozen["metadata"]["generation"].clone();
    frozen["status"]["conditions"].as_array_mut().unwrap().push(
        json!({"type": "Frozen", "status": "True", "reason": "FrozenByAnnotation",
            "message": "daemonsync.io/frozen is \"true\": nothing is written",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation}),
    );
    assert_eq!(
        argo_health(&frozen),
        (
            "Suspended".to_string(),
            "daemonsync.io/frozen is \"true\": nothing is written".to_string()
        )
    );

    // A status written before the kstatus conditions existed: judged by its counters.
    let mut old = record(&sim);
    old["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .retain(|c| !["Ready", "Reconciling", "Stalled"].contains(&c["type"].as_str().unwrap()));
    assert_eq!(argo_health(&old).0, "Healthy");
    old["status"]["updatedNumberScheduled"] = json!(1);
    assert_eq!(
        argo_health(&old),
        (
            "Progressing".into(),
            "1 of 3 nodes updated, 3 available".into()
        )
    );
    // No status yet.
    old.as_object_mut().unwrap().remove("status");
    assert_eq!(argo_health(&old).0, "Progressing");
    assert_eq!(
        kstatus(&old).0,
        "Current",
        "kstatus, as upstream, cannot tell"
    );
}

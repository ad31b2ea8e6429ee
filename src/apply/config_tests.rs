//! Configuration changes roll out: the ConfigMaps and Secrets of the source that a
//! DaemonSet references are versioned with its revision, written as immutable copies before
//! its pods, rolled out within its budgets, and collected once no revision needs them.

use super::tests::{desired, fleet, probe, revision_of, revisions, run, sim};
use super::*;
use crate::cluster::Cluster;
use crate::cluster::sim::Sim;
use crate::manifest::config::ConfigKind;
use crate::plan::Policy;
use serde_json::Value;
use std::collections::BTreeSet;

/// A fluent-bit-like DaemonSet (`maxUnavailable: 1`) mounting the ConfigMap
/// `fluent-bit-config` and reading `password` of the Secret `es-creds` into its environment,
/// with both objects: `conf` is the ConfigMap's `fluent-bit.conf`, `password` the Secret's.
fn fluent_bit(annotations: &str, conf: &str, password: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: fluent-bit, namespace: ns, annotations: {{{annotations}}}}}
spec:
  selector: {{matchLabels: {{app: fluent-bit}}}}
  updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 1}}}}
  template:
    metadata: {{labels: {{app: fluent-bit}}}}
    spec:
      containers:
      - name: fluent-bit
        image: fluent/fluent-bit:3.0
        env:
        - name: ES_PASSWORD
          valueFrom: {{secretKeyRef: {{name: es-creds, key: password}}}}
        volumeMounts: [{{name: config, mountPath: /fluent-bit/etc}}]
      volumes:
      - name: config
        configMap: {{name: fluent-bit-config}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: fluent-bit-config, namespace: ns}}
data:
  fluent-bit.conf: '{conf}'
  parsers.conf: '[PARSER]'
---
apiVersion: v1
kind: Secret
metadata: {{name: es-creds, namespace: ns}}
stringData: {{password: '{password}'}}
"
    )
}

/// The pods of `fluent-bit` that are not terminating, as the API shows them.
fn pods(sim: &Sim) -> Vec<Value> {
    sim.world()
        .store
        .list("/pods", Some("ns"))
        .map(|e| (*e.object()).clone())
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| p["metadata"]["labels"]["app"] == "fluent-bit")
        .collect()
}

/// The ConfigMap a pod mounts.
fn mounted(pod: &Value) -> String {
    pod["spec"]["volumes"][0]["configMap"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// daemonsync's copies in the cluster, by kind and name.
fn copies(sim: &Sim) -> BTreeSet<(ConfigKind, String)> {
    sim.world()
        .config_copies()
        .into_iter()
        .map(|c| (c.kind, c.name))
        .collect()
}

/// The copy of `kind` a desired revision references.
fn copy_of(d: &[Desired], kind: ConfigKind) -> String {
    d[0].config
        .iter()
        .find(|c| c.kind == kind)
        .map(|c| c.name.clone())
        .expect("a copy of that kind")
}

fn changes(sim: &mut Sim, d: &[Desired]) -> Vec<String> {
    let state = block_on(sim.observe()).unwrap();
    let p = plan::plan(d, &state.observed, &Policy::default(), state.now);
    p.daemonsets[0]
        .config_changes
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_configmap_change_in_git_rolls_the_daemonset_within_its_budget() {
    let v1 = desired(&fluent_bit("", "[SERVICE] flush 1", "s3cret"));
    let v2 = desired(&fluent_bit("", "[SERVICE] flush 5", "s3cret"));
    assert_ne!(
        revision_of(&v1),
        revision_of(&v2),
        "the config is in the revision"
    );
    let (old, new) = (
        copy_of(&v1, ConfigKind::ConfigMap),
        copy_of(&v2, ConfigKind::ConfigMap),
    );
    assert_ne!(old, new);
    assert_eq!(
        copy_of(&v1, ConfigKind::Secret),
        copy_of(&v2, ConfigKind::Secret),
        "an unchanged Secret keeps its copy"
    );
    let mut sim = sim(&fleet(4, ""));
    sim.install(&v1).unwrap();
    assert_eq!(
        changes(&mut sim, &v2),
        ["configmap/fluent-bit-config: changed keys fluent-bit.conf"]
    );
    let worst = probe(&mut sim, &v2);
    // Part way: the new pods mount the new copy, the old ones keep the old copy.
    let opts = ApplyOptions {
        stop_after_writes: Some(6),
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &v2, &opts);
    assert_eq!(r.outcome, Outcome::Interrupted);
    let config_writes: Vec<&str> = r
        .writes
        .iter()
        .filter(|w| w.verb == "create-config")
        .map(|w| w.pod.as_str())
        .collect();
    assert_eq!(config_writes, [format!("configmap/{new}")]);
    let first_create = r.writes.iter().position(|w| w.verb == "create");
    let copy_written = r.writes.iter().position(|w| w.verb == "create-config");
    assert!(
        copy_written < first_create,
        "the copy before the pods: {:?}",
        r.writes
    );
    let by_revision: BTreeSet<(String, String)> = pods(&sim)
        .iter()
        .map(|p| {
            let rev = p["metadata"]["labels"]["controller-revision-hash"]
                .as_str()
                .unwrap();
            (rev.to_string(), mounted(p))
        })
        .collect();
    assert!(
        by_revision.contains(&(revision_of(&v1), old.clone())),
        "{by_revision:?}"
    );
    assert!(
        by_revision.contains(&(revision_of(&v2), new.clone())),
        "{by_revision:?}"
    );
    assert_eq!(by_revision.len(), 2, "{by_revision:?}");
    // To the end.
    let r = run(&mut sim, &v2, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert!(
        revisions(&sim, "fluent-bit")
            .values()
            .all(|v| *v == [revision_of(&v2)])
    );
    assert!(pods(&sim).iter().all(|p| mounted(p) == new));
    let w = *worst.lock().unwrap();
    assert_eq!(w.unavailable, 1, "never two nodes down: {w:?}");
    assert!(changes(&mut sim, &v2).is_empty(), "nothing left to change");
}

#[test]
fn an_unchanged_config_rolls_nothing_and_its_revision_is_stable() {
    let text = fluent_bit("", "[SERVICE]", "s3cret");
    let v1 = desired(&text);
    assert_eq!(
        revision_of(&v1),
        revision_of(&desired(&text)),
        "deterministic"
    );
    assert_eq!(v1[0].config, desired(&text)[0].config);
    let mut sim = sim(&fleet(3, ""));
    sim.install(&v1).unwrap();
    let before = copies(&sim);
    let r = run(&mut sim, &v1, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!((r.creates, r.deletes), (0, 0));
    assert!(r.writes.is_empty(), "{:?}", r.writes);
    assert_eq!(copies(&sim), before);
}

#[test]
fn ignore_config_opts_an_object_out_of_the_revision() {
    let ignore = "daemonsync.io/ignore-config: 'fluent-bit-config,es-creds'";
    let v1 = desired(&fluent_bit(ignore, "[SERVICE] flush 1", "s3cret"));
    let v2 = desired(&fluent_bit(ignore, "[SERVICE] flush 5", "other"));
    assert!(v1[0].config.is_empty());
    assert_eq!(
        revision_of(&v1),
        revision_of(&v2),
        "its changes roll nothing"
    );
    let mut sim = sim(&fleet(2, ""));
    sim.install(&v1).unwrap();
    assert!(changes(&mut sim, &v2).is_empty());
    let r = run(&mut sim, &v2, &ApplyOptions::default());
    assert_eq!(
        (r.outcome, r.creates, r.deletes),
        (Outcome::Converged, 0, 0)
    );
    assert!(pods(&sim).iter().all(|p| mounted(p) == "fluent-bit-config"));
    assert!(copies(&sim).is_empty());
}

#[test]
fn copies_are_collected_after_the_rollout_except_the_previous_revisions() {
    let v = |conf: &str| desired(&fluent_bit("", conf, "s3cret"));
    let (v1, v2, v3) = (v("one"), v("two"), v("three"));
    let cm = |d: &[Desired]| (ConfigKind::ConfigMap, copy_of(d, ConfigKind::ConfigMap));
    let secret = (ConfigKind::Secret, copy_of(&v1, ConfigKind::Secret));
    let mut sim = sim(&fleet(3, ""));
    sim.install(&v1).unwrap();
    assert_eq!(copies(&sim), BTreeSet::from([cm(&v1), secret.clone()]));
    let r = run(&mut sim, &v2, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    // The previous revision's copy stays, for a revert.
    assert_eq!(
        copies(&sim),
        BTreeSet::from([cm(&v1), cm(&v2), secret.clone()])
    );
    let r = run(&mut sim, &v3, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(
        copies(&sim),
        BTreeSet::from([cm(&v2), cm(&v3), secret.clone()])
    );
    let deleted: Vec<&str> = r
        .writes
        .iter()
        .filter(|w| w.verb == "delete-config")
        .map(|w| w.pod.as_str())
        .collect();
    assert_eq!(deleted, [format!("configmap/{}", cm(&v1).1)]);
    // A revert to the previous revision finds its copy there: nothing to write but pods.
    let r = run(&mut sim, &v2, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert!(
        !r.writes.iter().any(|w| w.verb == "create-config"),
        "{:?}",
        r.writes
    );
    assert!(pods(&sim).iter().all(|p| mounted(p) == cm(&v2).1));
}

#[test]
fn copies_are_immutable_owned_by_the_record_and_go_with_it() {
    let v1 = desired(&fluent_bit("", "one", "s3cret"));
    let mut sim = sim(&fleet(2, ""));
    let r = run(&mut sim, &v1, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    let name = copy_of(&v1, ConfigKind::ConfigMap);
    let stored = sim
        .world()
        .store
        .get("/configmaps", "ns", &name)
        .expect("the copy")
        .object();
    assert_eq!(stored["immutable"], true);
    assert_eq!(
        stored["metadata"]["labels"]["daemonsync.io/daemonset"],
        "fluent-bit"
    );
    let owner = &stored["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "ManagedDaemonSet");
    // The API server refuses a change of an immutable copy.
    let kind = sim.world().registry.by_storage("/configmaps").unwrap();
    let mut changed = stored.as_ref().clone();
    changed["data"]["fluent-bit.conf"] = "tampered".into();
    let refused = sim.world_mut().update(
        &kind,
        "ns",
        &name,
        false,
        changed,
        &Default::default(),
        None,
    );
    assert!(
        refused.is_err_and(|e| e.message.contains("field is immutable")),
        "an immutable ConfigMap keeps its data"
    );
    // `kubectl delete mds fluent-bit` takes its copies along (the garbage collector).
    let mds = sim
        .world()
        .registry
        .by_storage("daemonsync.io/manageddaemonsets")
        .expect("the CRD");
    let params = crate::cluster::sim::api::world::DeleteParams::default();
    sim.world_mut()
        .delete(&mds, "ns", "fluent-bit", &params)
        .unwrap();
    sim.world_mut().reconcile();
    assert!(sim.world().config_copies().is_empty());
}

#[test]
fn a_configmap_referenced_but_not_in_the_source_is_left_alone() {
    let ds = |image: &str| {
        format!(
            "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: ns}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers:
      - name: agent
        image: {image}
        envFrom: [{{configMapRef: {{name: node-config}}}}]
"
        )
    };
    let v1 = desired(&ds("agent:1"));
    let v2 = desired(&ds("agent:2"));
    assert!(v1[0].config.is_empty());
    let mut sim = sim(&fleet(2, ""));
    // Someone else keeps it in the cluster.
    let kind = sim.world().registry.by_storage("/configmaps").unwrap();
    sim.world_mut()
        .create(
            &kind,
            "ns",
            serde_json::json!({"metadata": {"name": "node-config"}, "data": {"a": "b"}}),
            &Default::default(),
            None,
        )
        .unwrap();
    sim.install(&v1).unwrap();
    let r = run(&mut sim, &v2, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged);
    assert_eq!(r.creates, 2);
    assert!(pods_of(&sim, "agent").iter().all(|p| {
        p["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"] == "node-config"
    }));
    assert!(copies(&sim).is_empty());
}

fn pods_of(sim: &Sim, app: &str) -> Vec<Value> {
    sim.world()
        .store
        .list("/pods", Some("ns"))
        .map(|e| (*e.object()).clone())
        .filter(|p| p["metadata"]["labels"]["app"] == app)
        .collect()
}

#[test]
fn a_dry_run_writes_no_copy() {
    let v1 = desired(&fluent_bit("", "one", "s3cret"));
    let mut sim = sim(&fleet(2, ""));
    let opts = ApplyOptions {
        dry_run: true,
        ..ApplyOptions::default()
    };
    let r = run(&mut sim, &v1, &opts);
    assert_eq!(r.outcome, Outcome::DryRun);
    assert!(copies(&sim).is_empty());
}

#[test]
fn a_native_daemonset_gets_its_copies_before_its_template() {
    let native = "daemonsync.io/mode: native";
    let v1 = desired(&fluent_bit(native, "one", "s3cret"));
    let v2 = desired(&fluent_bit(native, "two", "s3cret"));
    let mut sim = sim(&fleet(3, ""));
    let r = run(&mut sim, &v1, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.writes);
    let worst = probe(&mut sim, &v2);
    let r = run(&mut sim, &v2, &ApplyOptions::default());
    assert_eq!(r.outcome, Outcome::Converged, "{:?}", r.writes);
    let new = copy_of(&v2, ConfigKind::ConfigMap);
    assert!(pods(&sim).iter().all(|p| mounted(p) == new));
    assert!(worst.lock().unwrap().unavailable <= 1);
    let copy = sim
        .world()
        .store
        .get("/configmaps", "ns", &new)
        .expect("the copy")
        .object();
    assert_eq!(
        copy["metadata"]["ownerReferences"][0]["kind"], "DaemonSet",
        "owned by the apps/v1 DaemonSet in native mode"
    );
}

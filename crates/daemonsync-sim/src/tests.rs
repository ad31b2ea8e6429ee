//! The simulator's own models: file format, scheduler, kubelet, churn, garbage collection.

use super::config::SimConfig;
use super::nodes::*;
use crate::cluster::ClusterError;
use crate::model::Pod;
use crate::model::PodPhase;
use jiff::SignedDuration;

fn sim(cfg: &str) -> NodeSim {
    NodeSim::new(SimConfig::parse(cfg).expect("config")).expect("sim")
}

fn pod_for(node: &str, image: &str) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"generateName": "agent-", "namespace": "ns"},
        "spec": {
            "containers": [{"name": "c", "image": image}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        }
    }))
    .expect("pod")
}

fn pod<'a>(sim: &'a NodeSim, name: &str) -> &'a Pod {
    &sim.pods[&("ns".to_string(), name.to_string())].pod
}

#[test]
fn name_patterns_expand_with_padding_and_keep_labels_and_taints() {
    let s = sim("nodes:
  - name: 'w-{i}'
    count: 12
    labels: {role: worker}
    taints: [{key: k, value: v, effect: NoSchedule}]
  - {name: sick, ready: false}
");
    let names: Vec<_> = s.nodes.keys().cloned().collect();
    assert_eq!(names.len(), 13);
    assert_eq!(names[0], "sick");
    assert_eq!(names[1], "w-01");
    assert_eq!(names[12], "w-12");
    let w = &s.nodes["w-07"];
    assert_eq!(w.labels["role"], "worker");
    assert_eq!(w.labels["kubernetes.io/hostname"], "w-07");
    assert_eq!(w.taints.len(), 1);
    assert_eq!(s.nodes["sick"].ready, Some(false));
}

#[test]
fn bad_files_are_refused_with_a_reason() {
    let bad = |cfg: &str| {
        SimConfig::parse(cfg)
            .and_then(NodeSim::new)
            .expect_err(cfg)
            .to_string()
    };
    assert!(bad("nodes: [{name: 'w-{i}'}]").contains("needs a count"));
    assert!(bad("nodes: [{name: a}, {name: a}]").contains("twice"));
    assert!(bad("kubelet: {startLatency: {fixed: soon}}").contains("duration"));
    assert!(bad("nodes: [{name: a}]\nchurn: [{at: 1s}]").contains("exactly one"));
    assert!(bad("nodes: []").contains("starts with no nodes"));
    assert!(bad("nodez: []").contains("unknown field"));
    assert!(bad("nodes: [{name: a, taints: [{key: k, effect: Sometimes}]}]").contains("effect"));
}

#[test]
fn a_pod_is_bound_then_ready_after_the_start_latency() {
    let mut s = sim("kubelet: {startLatency: {fixed: 5s}}
nodes: [{name: n1}]");
    let name = s.create(pod_for("n1", "agent:1")).unwrap();
    assert!(name.starts_with("agent-") && name.len() == "agent-".len() + 5);
    let p = pod(&s, &name);
    assert_eq!(p.node_name.as_deref(), Some("n1"));
    assert!(!p.is_ready());
    assert!(s.advance(s.now() + SignedDuration::from_secs(60)));
    assert_eq!(s.elapsed(), SignedDuration::from_secs(5));
    let p = pod(&s, &name);
    assert!(p.is_ready());
    assert_eq!(p.phase, PodPhase::Running);
}

#[test]
fn a_pod_for_an_unknown_node_stays_pending_and_unbound() {
    let mut s = sim("nodes: [{name: n1}]");
    let name = s.create(pod_for("nope", "agent:1")).unwrap();
    assert_eq!(pod(&s, &name).node_name, None);
    assert!(!s.advance(s.now() + SignedDuration::from_secs(60)));
    assert_eq!(pod(&s, &name).phase, PodPhase::Pending);
}

#[test]
fn failing_images_and_nodes_never_become_ready() {
    let mut s = sim("nodes: [{name: n1}, {name: n2}]
failures:
  images: [{image: 'agent:bad', reason: ImagePullBackOff}]
  nodes: [{node: n2}]");
    let a = s.create(pod_for("n1", "agent:bad")).unwrap();
    let b = s.create(pod_for("n2", "agent:1")).unwrap();
    let c = s.create(pod_for("n1", "agent:1")).unwrap();
    s.advance(s.now() + SignedDuration::from_mins(10));
    assert_eq!(
        pod(&s, &a).waiting_reason.as_deref(),
        Some("ImagePullBackOff")
    );
    assert_eq!(pod(&s, &a).phase, PodPhase::Pending);
    assert_eq!(
        pod(&s, &b).waiting_reason.as_deref(),
        Some("CrashLoopBackOff")
    );
    assert!(!pod(&s, &a).is_ready() && !pod(&s, &b).is_ready());
    assert!(pod(&s, &c).is_ready());
}

#[test]
fn deletion_takes_the_grace_period() {
    let mut s = sim("kubelet: {startLatency: {fixed: 1s}, terminationGrace: 3s}
nodes: [{name: n1}]");
    let name = s.create(pod_for("n1", "agent:1")).unwrap();
    s.advance(s.now() + SignedDuration::from_secs(1));
    s.delete("ns", &name).unwrap();
    assert!(pod(&s, &name).is_terminating());
    s.advance(s.now() + SignedDuration::from_secs(10));
    assert_eq!(s.elapsed(), SignedDuration::from_secs(4));
    assert!(s.observed().pods.is_empty());
    let err = s.delete("ns", &name).unwrap_err();
    assert!(matches!(err, ClusterError::NotFound { .. }));
}

#[test]
fn a_not_ready_node_holds_its_pods_until_it_recovers() {
    let mut s = sim("kubelet: {startLatency: {fixed: 2s}}
nodes: [{name: n1, ready: false}]
churn: [{at: 1m, ready: {node: n1, ready: true}}]");
    let name = s.create(pod_for("n1", "agent:1")).unwrap();
    s.advance(s.now() + SignedDuration::from_secs(30));
    assert!(!pod(&s, &name).is_ready());
    while s.advance(s.start() + SignedDuration::from_mins(5)) {}
    assert!(pod(&s, &name).is_ready());
    assert_eq!(s.elapsed(), SignedDuration::from_mins(5));
}

#[test]
fn removed_nodes_have_their_pods_collected_and_churn_edits_nodes() {
    let mut s = sim("nodes: [{name: n1}, {name: n2, labels: {a: '1'}}]
churn:
  - {at: 10s, remove: n1}
  - {at: 20s, label: {node: n2, labels: {a: null, b: '2'}}}
  - {at: 30s, taint: {node: n2, taints: [{key: t, effect: NoExecute}]}}
  - {at: 40s, add: {name: 'm-{i}', count: 2}}");
    s.create(pod_for("n1", "agent:1")).unwrap();
    while s.advance(s.start() + SignedDuration::from_mins(1)) {}
    assert!(s.observed().pods.is_empty());
    let names: Vec<_> = s.nodes.keys().cloned().collect();
    assert_eq!(names, ["m-1", "m-2", "n2"]);
    let n2 = &s.nodes["n2"];
    assert_eq!(n2.labels.get("a"), None);
    assert_eq!(n2.labels["b"], "2");
    assert_eq!(n2.taints[0].key, "t");
}

#[test]
fn uniform_latency_is_deterministic_for_a_seed() {
    let run = |seed: u64| {
        let mut s = sim(&format!(
            "seed: {seed}
kubelet: {{startLatency: {{uniform: [1s, 9s]}}}}
nodes: [{{name: 'n-{{i}}', count: 20}}]"
        ));
        for i in 1..=20 {
            s.create(pod_for(&format!("n-{i:02}"), "a:1")).unwrap();
        }
        let mut times = Vec::new();
        while s.advance(s.start() + SignedDuration::from_mins(1)) {
            times.push(s.elapsed());
        }
        times
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
    assert!(
        run(1)
            .iter()
            .all(|t| *t >= SignedDuration::from_secs(1) && *t <= SignedDuration::from_secs(9))
    );
}

#[test]
fn the_example_files_load() {
    for f in ["demo.yaml", "demo-failing.yaml", "seven-nodes.yaml"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/sim")
            .join(f);
        let s = super::Sim::load(&path).unwrap_or_else(|e| panic!("{f}: {e:#}"));
        assert!(!s.world().nodes.nodes.is_empty());
    }
}

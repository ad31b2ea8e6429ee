//! Snapshot tests: every rendering of a set of representative plans. Review a changed
//! `.snap` file as you would review the output itself.

use super::markdown::{MarkdownContext, to_markdown};
use super::table::{TableOptions, to_table};
use super::testing::{daemonset, now, pod, revision, worker};
use crate::model::Node;
use crate::plan::{Desired, Observed, Plan, Policy, plan};
use serde_json::json;
use std::collections::BTreeMap;

fn ctx() -> MarkdownContext {
    MarkdownContext {
        repository: Some("acme/fleet".into()),
        base: Some("1111111111111111111111111111111111111111".into()),
        head: Some("2222222222222222222222222222222222222222".into()),
        cluster: "snapshot:cluster.yaml".into(),
        ..MarkdownContext::default()
    }
}

fn workers(n: usize) -> Vec<Node> {
    (1..=n).map(|i| worker(&format!("w{i:03}"))).collect()
}

/// `n` workers, each running a ready pod of `infra/agent` with revision `hash`.
fn running(n: usize, hash: &str) -> Observed {
    let nodes = workers(n);
    let pods = nodes
        .iter()
        .map(|node| pod("infra", "agent", &node.name, hash, true))
        .collect();
    Observed {
        nodes: nodes.into(),
        pods,
        daemonsets: Vec::new(),
        rollouts: Vec::new(),
        revisions: Vec::new(),
        namespaces: Vec::new(),
        version: None,
    }
}

fn plan_of(d: Desired, observed: &Observed) -> Plan {
    plan(&[d], observed, &Policy::default(), now())
}

fn rolling(max_unavailable: serde_json::Value, max_surge: serde_json::Value) -> serde_json::Value {
    json!({"type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge}})
}

fn assert_renderings(name: &str, p: &Plan) {
    let table = to_table(p, &TableOptions::default());
    insta::assert_snapshot!(format!("{name}.table"), table);
    let wide = to_table(
        p,
        &TableOptions {
            wide: true,
            ..TableOptions::default()
        },
    );
    insta::assert_snapshot!(format!("{name}.wide"), wide);
    let md = to_markdown(p, &ctx(), &BTreeMap::new());
    assert_eq!(md.len(), 1, "{name}: one comment");
    insta::assert_snapshot!(format!("{name}.markdown"), md[0]);
    insta::assert_snapshot!(format!("{name}.json"), super::to_json(p));
}

#[test]
fn no_op() {
    let d = daemonset("infra", "agent", json!({"type": "RollingUpdate"}));
    let rev = revision(&d);
    let p = plan_of(d, &running(3, &rev));
    assert!(!p.has_changes());
    assert_renderings("no_op", &p);
}

#[test]
fn image_change_on_200_nodes_with_max_unavailable_10_percent() {
    let d = daemonset("infra", "agent", rolling(json!("10%"), json!(0)));
    let p = plan_of(d, &running(200, "old"));
    let ds = &p.daemonsets[0];
    assert_eq!(ds.budgets.max_unavailable, 20);
    assert_eq!(ds.step.delete.len(), 20);
    assert_eq!(ds.waves.len(), 10, "20 nodes per wave");
    assert_renderings("image_change_200", &p);
}

#[test]
fn surge_rollout() {
    let d = daemonset("infra", "agent", rolling(json!(0), json!(2)));
    let p = plan_of(d, &running(5, "old"));
    assert_eq!(p.daemonsets[0].step.create.len(), 2);
    assert!(p.daemonsets[0].risks.is_empty());
    assert_renderings("surge_rollout", &p);
}

#[test]
fn node_selector_change_removes_pods() {
    // The manifest now selects role=worker; two edge nodes run the current pod today.
    let d = daemonset("infra", "agent", json!({"type": "RollingUpdate"}));
    let rev = revision(&d);
    let mut o = running(3, &rev);
    for name in ["edge-1", "edge-2"] {
        let mut n = Node::named(name);
        n.labels.insert("role".into(), "edge".into());
        o.nodes.push(n);
        o.pods.push(pod("infra", "agent", name, &rev, true));
    }
    let p = plan_of(d, &o);
    let risk = &p.daemonsets[0].risks[0];
    assert_eq!(risk.kind, crate::plan::RiskKind::PodsRemoved);
    assert_eq!(risk.nodes.len(), 2);
    assert_renderings("node_selector_removes_pods", &p);
}

#[test]
fn on_delete() {
    let d = daemonset("infra", "agent", json!({"type": "OnDelete"}));
    let p = plan_of(d, &running(4, "old"));
    assert!(!p.has_changes());
    assert_renderings("on_delete", &p);
}

#[test]
fn host_port_with_max_surge() {
    let mut d = daemonset("infra", "agent", rolling(json!(0), json!(1)));
    let pod_spec = d
        .daemonset
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .unwrap();
    pod_spec.containers[0].ports = Some(vec![
        serde_json::from_value(json!({"containerPort": 9100, "hostPort": 9100})).unwrap(),
    ]);
    let p = plan_of(d, &running(3, "old"));
    assert_eq!(
        p.daemonsets[0].risks[0].kind,
        crate::plan::RiskKind::HostPortSurge
    );
    assert_renderings("host_port_surge", &p);
}

/// `--cluster none` in a pull request: `infra/agent` changed (maxUnavailable 100%),
/// `infra/logs` unchanged, `infra/old` removed on head.
#[test]
fn manifest_only_pull_request() {
    let p = super::testing::manifest_only_plan();
    let mut diffs = BTreeMap::new();
    diffs.insert(
        ("infra".to_string(), "agent".to_string()),
        "--- a/infra/agent\n+++ b/infra/agent\n@@ -1 +1 @@\n-      maxUnavailable: 1\n+      maxUnavailable: 100%\n"
            .to_string(),
    );
    diffs.insert(
        ("infra".to_string(), "old".to_string()),
        "--- a/infra/old\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-apiVersion: apps/v1\n-kind: DaemonSet\n"
            .to_string(),
    );
    let ctx = MarkdownContext {
        cluster: "none".into(),
        ..ctx()
    };
    let md = to_markdown(&p, &ctx, &diffs);
    assert_eq!(md.len(), 1);
    insta::assert_snapshot!("manifest_only.markdown", md[0]);
    insta::assert_snapshot!(
        "manifest_only.table",
        to_table(&p, &TableOptions::default())
    );
    insta::assert_snapshot!("manifest_only.json", super::to_json(&p));
}

#[test]
fn live_daemonset_differs() {
    // The built-in controller runs agent:1 with a limit written as 0.5Gi; git has agent:2 and
    // 512Mi. Only the image is a difference: 0.5Gi is stored as 512Mi.
    let mut d = daemonset("infra", "agent", rolling(json!(1), json!(0)));
    let container = |image: &str, memory: &str| {
        serde_json::from_value(json!({"name": "c", "image": image,
            "resources": {"limits": {"memory": memory}}}))
        .unwrap()
    };
    let mut live = d.daemonset.clone();
    for (ds, image, memory) in [
        (&mut d.daemonset, "agent:2", "512Mi"),
        (&mut live, "agent:1", "0.5Gi"),
    ] {
        let spec = ds
            .spec
            .as_mut()
            .and_then(|s| s.template.spec.as_mut())
            .unwrap();
        spec.containers = vec![container(image, memory)];
    }
    live.metadata.annotations = Some(
        [(
            crate::model::TEMPLATE_GENERATION_ANNOTATION.to_string(),
            "1".to_string(),
        )]
        .into(),
    );
    let mut o = running(2, "old");
    // The built-in controller runs them.
    for p in &mut o.pods {
        p.controller = Some(crate::model::shared_owner(crate::model::OwnerRef {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            name: "agent".into(),
            uid: "uid-live".into(),
        }));
    }
    o.daemonsets.push(live);
    // Taken over: the step is the rollout that follows the take-over.
    d.daemonset
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(crate::plan::ownership::ADOPT.into(), "true".into());
    let p = plan_of(d, &o);
    let diff = p.daemonsets[0].live_diff.as_ref().expect("differences");
    assert_eq!(diff.fields.len(), 1, "{diff:?}");
    assert_renderings("live_differs", &p);
}

/// A canary of two nodes, then zones b, a and c, as it starts.
#[test]
fn canary_then_zones() {
    let p = super::testing::canary_plan();
    assert_eq!(
        p.daemonsets[0].rollout.as_ref().map(|r| r.stages.len()),
        Some(4)
    );
    assert_renderings("canary_then_zones", &p);
}

/// The same rollout at its manual pause after the canary, with a node that joined zone b
/// meanwhile and gets the stable revision.
#[test]
fn canary_then_zones_paused() {
    let p = super::testing::paused_plan();
    assert_eq!(p.daemonsets[0].step.create_stable.len(), 1);
    assert_renderings("canary_then_zones_paused", &p);
}

/// A paused DaemonSet serving a node that joined with its stable revision, and a frozen one
/// that writes nothing.
#[test]
fn paused_and_frozen() {
    let p = super::testing::suspended_plan();
    assert_eq!(p.daemonsets[0].step.create_stable.len(), 1);
    assert!(p.daemonsets[1].step.is_empty());
    assert_renderings("paused_and_frozen", &p);
}

/// Two nodes that joined with the readiness taint: the pod on one is not ready yet (the taint
/// stays), the other's is available (the step removes the taint).
#[test]
fn readiness_taint() {
    let p = super::testing::readiness_plan();
    let ds = &p.daemonsets[0];
    assert_eq!(ds.step.remove_taints.len(), 1);
    assert_eq!(ds.readiness.as_ref().unwrap().nodes.len(), 2);
    assert_renderings("readiness_taint", &p);
}

/// `InPlaceIfPossible`, only the image changing: two nodes patched in place within
/// maxUnavailable, a node on an older revision than the stable one recreated, and a pod
/// patched earlier whose readiness condition opens.
#[test]
fn in_place_image_update() {
    let p = super::testing::in_place_plan();
    let step = &p.daemonsets[0].step;
    assert_eq!((step.in_place.len(), step.open_gates.len()), (1, 1));
    assert_eq!(step.delete.len(), 1);
    assert_renderings("in_place", &p);
}

/// `InPlaceIfPossible` with an env var changing beside the image: every pod is recreated,
/// and the plan names the field.
#[test]
fn in_place_recreate() {
    let p = super::testing::in_place_recreate_plan();
    assert!(p.daemonsets[0].step.in_place.is_empty());
    assert_renderings("in_place_recreate", &p);
}

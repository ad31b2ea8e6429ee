//! Small builders for report tests: a known cluster and its plan.

use crate::model::{Labels, Node, OwnerRef, Pod, PodPhase, REVISION_HASH_LABEL, ReadyCondition};
use crate::plan::{DaemonSetSpec, Desired, Observed, Plan, Policy, plan};
use serde_json::json;

pub(crate) fn now() -> jiff::Timestamp {
    "2025-06-01T12:00:00Z".parse().unwrap()
}

/// A desired DaemonSet `ns/name` selecting `app=name`, restricted to `role=worker` nodes.
pub(crate) fn daemonset(ns: &str, name: &str, strategy: serde_json::Value) -> Desired {
    let ds = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {"role": "worker"},
                    "containers": [{"name": "c", "image": format!("{name}:2")}],
                },
            },
        },
    });
    Desired {
        source: format!("manifests/{name}.yaml"),
        daemonset: serde_json::from_value(ds).unwrap(),
    }
}

pub(crate) fn revision(d: &Desired) -> String {
    DaemonSetSpec::compile(&d.daemonset).revision
}

pub(crate) fn worker(name: &str) -> Node {
    let mut n = Node::named(name);
    n.labels.insert("role".into(), "worker".into());
    n
}

/// A running pod of `ns/ds` on `node` with revision `hash`.
pub(crate) fn pod(ns: &str, ds: &str, node: &str, hash: &str, ready: bool) -> Pod {
    let mut labels = Labels::new();
    labels.insert("app".into(), ds.into());
    labels.insert(REVISION_HASH_LABEL.into(), hash.into());
    Pod {
        namespace: ns.into(),
        name: format!("{ds}-{node}"),
        labels,
        controller: Some(OwnerRef {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            name: ds.into(),
            uid: "u".into(),
        }),
        node_name: Some(node.into()),
        target_node: Some(node.into()),
        phase: PodPhase::Running,
        creation_timestamp: Some("2025-06-01T10:00:00Z".parse().unwrap()),
        deletion_timestamp: None,
        ready: Some(ReadyCondition {
            status: ready,
            last_transition: Some("2025-06-01T10:01:00Z".parse().unwrap()),
        }),
        waiting_reason: (!ready).then(|| "CrashLoopBackOff".into()),
    }
}

/// `infra/agent` (maxUnavailable 1) on workers w1..w5 and a control-plane node m1:
/// w1 current, w2 and w3 old, w4 without a pod, w5 current but crash-looping, m1 running an
/// old pod it should not run.
///
/// Status: desired 5, current 4, ready 3, up-to-date 2, available 3, misscheduled 1.
pub(crate) fn known_plan() -> Plan {
    let d = daemonset(
        "infra",
        "agent",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    );
    let rev = revision(&d);
    let mut nodes: Vec<Node> = (1..=5).map(|i| worker(&format!("w{i}"))).collect();
    nodes.push(Node::named("m1"));
    let pods = vec![
        pod("infra", "agent", "w1", &rev, true),
        pod("infra", "agent", "w2", "old", true),
        pod("infra", "agent", "w3", "old", true),
        pod("infra", "agent", "w5", &rev, false),
        pod("infra", "agent", "m1", "old", true),
    ];
    let observed = Observed {
        nodes,
        pods,
        daemonsets: Vec::new(),
        rollouts: Vec::new(),
    };
    plan(&[d], &observed, &Policy::default(), now())
}

/// `ops/wide` (OnDelete) on `n` workers, none of which has a pod.
pub(crate) fn all_missing_plan(n: usize) -> Plan {
    let d = daemonset("ops", "wide", json!({"type": "OnDelete"}));
    let observed = Observed {
        nodes: (0..n).map(|i| worker(&format!("n{i:03}"))).collect(),
        ..Observed::default()
    };
    plan(&[d], &observed, &Policy::default(), now())
}

/// `--cluster none`: `infra/agent` (maxUnavailable 100%, no node looked at) and `infra/logs`
/// (the default strategy), planned from their manifests alone.
pub(crate) fn manifest_only_plan() -> Plan {
    let all = daemonset(
        "infra",
        "agent",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}}),
    );
    let logs = daemonset("infra", "logs", json!({"type": "RollingUpdate"}));
    crate::plan::plan_manifests(&[all, logs], &Policy::default(), now())
}

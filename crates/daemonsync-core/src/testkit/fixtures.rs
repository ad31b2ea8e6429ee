//! Small builders for report tests: a known cluster and its plan.

use crate::model::{
    Labels, Node, OwnerRef, Pod, PodDetail, PodPhase, REVISION_HASH_LABEL, ReadyCondition,
};
use crate::plan::{DaemonSetSpec, Desired, Observed, Plan, Policy, RolloutRecord, plan};
use serde_json::json;

pub fn now() -> jiff::Timestamp {
    "2025-06-01T12:00:00Z".parse().unwrap()
}

/// A desired DaemonSet `ns/name` selecting `app=name`, restricted to `role=worker` nodes.
pub fn daemonset(ns: &str, name: &str, strategy: serde_json::Value) -> Desired {
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
    Desired::new(
        format!("manifests/{name}.yaml"),
        serde_json::from_value(ds).unwrap(),
    )
}

pub fn revision(d: &Desired) -> String {
    DaemonSetSpec::compile(&d.daemonset).revision
}

pub fn worker(name: &str) -> Node {
    let mut n = Node::named(name);
    n.labels.insert("role".into(), "worker".into());
    n
}

/// A running pod of `ns/ds` on `node` with revision `hash`.
pub fn pod(ns: &str, ds: &str, node: &str, hash: &str, ready: bool) -> Pod {
    let mut labels = Labels::new();
    labels.insert("app".into(), ds.into());
    labels.insert(REVISION_HASH_LABEL.into(), hash.into());
    Pod {
        namespace: ns.into(),
        name: format!("{ds}-{node}"),
        labels: labels.into(),
        controller: Some(crate::model::shared_owner(OwnerRef {
            api_version: crate::plan::RECORD_API_VERSION.into(),
            kind: crate::plan::RECORD_KIND.into(),
            name: ds.into(),
            uid: "u".into(),
        })),
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
        signals: None,
        requests: None,
        detail: None,
        config: None,
    }
}

/// `infra/agent` (maxUnavailable 1) on workers w1..w5 and a control-plane node m1:
/// w1 current, w2 and w3 old, w4 without a pod, w5 current but crash-looping, m1 running an
/// old pod it should not run.
///
/// Status: desired 5, current 4, ready 3, up-to-date 2, available 3, misscheduled 1.
pub fn known_plan() -> Plan {
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
        nodes: nodes.into(),
        pods: pods.into(),
        daemonsets: Vec::new(),
        rollouts: Vec::new(),
        revisions: Vec::new(),
        namespaces: Vec::new(),
        version: None,
    };
    plan(&[d], &observed, &Policy::default(), now())
}

/// `ops/wide` (OnDelete) on `n` workers, none of which has a pod.
pub fn all_missing_plan(n: usize) -> Plan {
    let d = daemonset("ops", "wide", json!({"type": "OnDelete"}));
    let observed = Observed {
        nodes: (0..n).map(|i| worker(&format!("n{i:03}"))).collect(),
        ..Observed::default()
    };
    plan(&[d], &observed, &Policy::default(), now())
}

/// `--cluster none`: `infra/agent` (maxUnavailable 100%, no node looked at) and `infra/logs`
/// (the default strategy), planned from their manifests alone.
pub fn manifest_only_plan() -> Plan {
    let all = daemonset(
        "infra",
        "agent",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}}),
    );
    let logs = daemonset("infra", "logs", json!({"type": "RollingUpdate"}));
    crate::plan::plan_manifests(&[all, logs], &Policy::default(), now())
}

/// The node label the zoned rollouts wave by.
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// A canary of two nodes, then one wave per zone in the order b, a, c.
pub const CANARY_THEN_ZONES: [(&str, &str); 3] = [
    ("daemonsync.io/canary", "2"),
    ("daemonsync.io/waves-by", ZONE),
    ("daemonsync.io/wave-order", "b,a,c"),
];

/// `demo/agent` rolling from `agent:1` to `agent:2` (maxUnavailable 2) under the rollout
/// policy `annotations`, on workers a-1..a-4, b-1..b-4 and c-1..c-4 in zones a, b and c, each
/// running an available pod of `agent:1`; the record names `agent:1` the stable revision
/// when `stable`. Returns the desired DaemonSet and the observed cluster.
pub fn zoned_rollout(annotations: &[(&str, &str)], stable: bool) -> (Desired, Observed) {
    let mut d = daemonset(
        "demo",
        "agent",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}),
    );
    let mut old = d.daemonset.clone();
    if let Some(c) = old
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .and_then(|s| s.containers.first_mut())
    {
        c.image = Some("agent:1".into());
    }
    let old_rev = DaemonSetSpec::compile(&old).revision;
    d.daemonset.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let mut nodes = Vec::new();
    let mut pods = Vec::new();
    for zone in ["a", "b", "c"] {
        for i in 1..=4 {
            let mut n = worker(&format!("{zone}-{i}"));
            n.labels.insert(ZONE.into(), zone.into());
            pods.push(pod("demo", "agent", &n.name, &old_rev, true));
            nodes.push(n);
        }
    }
    let rollouts = vec![RolloutRecord {
        namespace: "demo".into(),
        name: "agent".into(),
        stable: stable.then(|| std::sync::Arc::new(old)),
        ..RolloutRecord::default()
    }];
    let observed = Observed {
        nodes: nodes.into(),
        pods: pods.into(),
        daemonsets: Vec::new(),
        rollouts,
        revisions: Vec::new(),
        namespaces: Vec::new(),
        version: None,
    };
    (d, observed)
}

/// The pods on `nodes` run the desired revision, ready and available.
pub fn update(o: &mut Observed, d: &Desired, nodes: &[&str]) {
    let rev = revision(d);
    o.pods
        .retain(|p| !nodes.contains(&p.target_node.as_deref().unwrap_or("")));
    for n in nodes {
        o.pods.push(pod("demo", "agent", n, &rev, true));
    }
}

/// A node of zone `zone` that joined without a pod.
pub fn join(o: &mut Observed, name: &str, zone: &str) {
    let mut n = worker(name);
    n.labels.insert(ZONE.into(), zone.into());
    o.nodes.push(n);
}

/// The plan of one desired DaemonSet against `o`.
pub fn plan_one(d: &Desired, o: &Observed) -> Plan {
    plan(std::slice::from_ref(d), o, &Policy::default(), now())
}

/// The canary-then-zones rollout as it starts: the canary (a-1, a-2) is being replaced.
pub fn canary_plan() -> Plan {
    let (d, o) = zoned_rollout(&CANARY_THEN_ZONES, true);
    plan_one(&d, &o)
}

/// The canary-then-zones rollout at its manual pause after the canary, with a node b-5 that
/// joined zone b meanwhile (it gets the stable revision).
pub fn paused_plan() -> Plan {
    let (d, mut o) = zoned_rollout(&CANARY_THEN_ZONES, true);
    update(&mut o, &d, &["a-1", "a-2"]);
    join(&mut o, "b-5", "b");
    plan_one(&d, &o)
}

/// The canary-then-zones rollout with a partition of 2 and a halt threshold of 1, as it
/// starts: the partition holds the last two nodes of the rollout order (c-3, c-4).
pub fn partition_plan() -> Plan {
    let mut annotations = CANARY_THEN_ZONES.to_vec();
    annotations.push(("daemonsync.io/partition", "2"));
    annotations.push(("daemonsync.io/halt-threshold", "1"));
    let (d, o) = zoned_rollout(&annotations, true);
    plan_one(&d, &o)
}

/// The canary-then-zones rollout after the canary, when no stable revision is known, with a
/// node b-5 that joined zone b: it gets no pod until its wave.
pub fn no_stable_plan() -> Plan {
    let (d, mut o) = zoned_rollout(&CANARY_THEN_ZONES, false);
    update(&mut o, &d, &["a-1", "a-2"]);
    join(&mut o, "b-5", "b");
    plan_one(&d, &o)
}

/// The canary-then-zones rollout promoted past the canary: the first wave (zone b) runs.
pub fn wave_plan() -> Plan {
    let (d, mut o) = zoned_rollout(&CANARY_THEN_ZONES, true);
    update(&mut o, &d, &["a-1", "a-2"]);
    o.rollouts[0].promoted = Some((revision(&d), 0));
    plan_one(&d, &o)
}

/// The canary-then-zones rollout once every node runs the new revision.
pub fn complete_plan() -> Plan {
    let (d, mut o) = zoned_rollout(&CANARY_THEN_ZONES, true);
    let names: Vec<String> = o.nodes.iter().map(|n| n.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    update(&mut o, &d, &names);
    plan_one(&d, &o)
}

/// Waves by a label no node carries: an error, and nothing is done.
pub fn error_plan() -> Plan {
    let (d, o) = zoned_rollout(
        &[
            ("daemonsync.io/canary", "2"),
            ("daemonsync.io/waves-by", "example.com/rack"),
        ],
        true,
    );
    plan_one(&d, &o)
}

/// The annotation that asks for in-place image updates.
pub const IN_PLACE: (&str, &str) = ("daemonsync.io/update-strategy", "InPlaceIfPossible");

/// `demo/agent` with its one container's image set to `image`.
fn with_image(d: &Desired, image: &str) -> Desired {
    let mut d = d.clone();
    if let Some(c) = d
        .daemonset
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .and_then(|s| s.containers.first_mut())
    {
        c.image = Some(image.into());
    }
    d
}

/// `demo/agent` under `daemonsync.io/update-strategy: InPlaceIfPossible` (maxUnavailable 3),
/// rolling from `agent:1` to `agent:2` on workers w1..w5, the record naming `agent:1` the
/// stable revision. `edit` changes the desired DaemonSet further (an env var forces new pods).
///
/// - w1 was patched in place: it runs `agent:2`, its containers are ready, and its
///   `daemonsync.io/in-place-update-ready` condition is still False (the step opens it);
/// - w2 runs `agent:0`, older than the stable revision (it cannot be patched in place);
/// - w3, w4 and w5 run `agent:1`, ready.
pub fn in_place_rollout(edit: impl FnOnce(&mut Desired)) -> (Desired, Observed) {
    let mut d = daemonset(
        "demo",
        "agent",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 3}}),
    );
    let stable = with_image(&d, "agent:1").daemonset;
    let older = with_image(&d, "agent:0").daemonset;
    d.daemonset.metadata.annotations = Some(
        [(IN_PLACE.0.to_string(), IN_PLACE.1.to_string())]
            .into_iter()
            .collect(),
    );
    edit(&mut d);
    let rev = |ds| DaemonSetSpec::compile(ds).revision;
    let nodes: Vec<Node> = (1..=5).map(|i| worker(&format!("w{i}"))).collect();
    let mut patched = pod("demo", "agent", "w1", &revision(&d), true);
    patched.ready = Some(ReadyCondition {
        status: false,
        last_transition: Some("2025-06-01T11:59:00Z".parse().unwrap()),
    });
    patched.detail = Some(Box::new(PodDetail {
        resource_version: "7".into(),
        containers: vec!["c".into()],
        has_gate: true,
        gate: Some(false),
        gate_since: Some("2025-06-01T11:59:00Z".parse().unwrap()),
        containers_ready: true,
        ..PodDetail::default()
    }));
    let mut pods = vec![patched, pod("demo", "agent", "w2", &rev(&older), true)];
    for n in ["w3", "w4", "w5"] {
        pods.push(pod("demo", "agent", n, &rev(&stable), true));
    }
    let rollouts = vec![RolloutRecord {
        namespace: "demo".into(),
        name: "agent".into(),
        stable: Some(std::sync::Arc::new(stable)),
        ..RolloutRecord::default()
    }];
    let observed = Observed {
        nodes: nodes.into(),
        pods: pods.into(),
        daemonsets: Vec::new(),
        rollouts,
        revisions: Vec::new(),
        namespaces: Vec::new(),
        version: None,
    };
    (d, observed)
}

/// [`in_place_rollout`] with only the image changed: w3 and w4 are patched in place, w2 is
/// recreated, w1's readiness condition opens.
pub fn in_place_plan() -> Plan {
    let (d, o) = in_place_rollout(|_| {});
    plan_one(&d, &o)
}

/// [`in_place_rollout`] with an env var added beside the image: every pod is recreated (w1
/// runs a current pod, ready).
pub fn in_place_recreate_plan() -> Plan {
    let (d, mut o) = in_place_rollout(|d| {
        if let Some(c) = d
            .daemonset
            .spec
            .as_mut()
            .and_then(|s| s.template.spec.as_mut())
            .and_then(|s| s.containers.first_mut())
        {
            c.env = Some(vec![
                serde_json::from_value(json!({"name": "LOG_LEVEL", "value": "debug"})).unwrap(),
            ]);
        }
    });
    o.pods[0] = pod("demo", "agent", "w1", &revision(&d), true);
    plan_one(&d, &o)
}

/// `demo/agent` naming the readiness taint `example.com/agent-not-ready`, on three workers and
/// two nodes that joined with the taint: its pod on `new-1` is not ready yet, the one on
/// `new-2` is available (the step removes the taint there).
pub fn readiness_plan() -> Plan {
    let mut d = daemonset(
        "demo",
        "agent",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    );
    let key = "example.com/agent-not-ready";
    d.daemonset
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(crate::manifest::policy::READINESS_TAINT.into(), key.into());
    crate::manifest::policy::tolerate_readiness_taint(&mut d.daemonset);
    let hash = revision(&d);
    let mut nodes: Vec<Node> = (1..=3).map(|i| worker(&format!("w{i}"))).collect();
    for name in ["new-1", "new-2"] {
        let mut n = worker(name);
        n.taints.push(crate::model::Taint {
            key: key.into(),
            value: String::new(),
            effect: crate::model::TaintEffect::NoSchedule,
        });
        nodes.push(n);
    }
    let pods: Vec<Pod> = nodes
        .iter()
        .map(|n| pod("demo", "agent", &n.name, &hash, n.name != "new-1"))
        .collect();
    let observed = Observed {
        nodes: nodes.into(),
        pods: pods.into(),
        ..Observed::default()
    };
    plan_one(&d, &observed)
}

/// Two DaemonSets held by their records: `demo/agent` paused half-way from `agent:1` to
/// `agent:2` (its record names `agent:1` stable) with a node `w4` that joined meanwhile (it gets
/// the stable revision's pod), and `demo/logs` frozen with the same new node (it gets nothing).
pub fn suspended_plan() -> Plan {
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}});
    let agent = daemonset("demo", "agent", strategy.clone());
    let mut old_agent = agent.clone();
    old_agent
        .daemonset
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
        .image = Some("agent:1".into());
    let logs = daemonset("demo", "logs", strategy);
    let (new_rev, old_rev, logs_rev) = (revision(&agent), revision(&old_agent), revision(&logs));
    let nodes: Vec<Node> = (1..=4).map(|i| worker(&format!("w{i}"))).collect();
    let mut pods = vec![pod("demo", "agent", "w1", &new_rev, true)];
    for n in ["w2", "w3"] {
        pods.push(pod("demo", "agent", n, &old_rev, true));
    }
    for n in ["w1", "w2", "w3"] {
        pods.push(pod("demo", "logs", n, &logs_rev, true));
    }
    let rollouts = vec![
        RolloutRecord {
            namespace: "demo".into(),
            name: "agent".into(),
            stable: Some(std::sync::Arc::new(old_agent.daemonset)),
            paused: true,
            ..RolloutRecord::default()
        },
        RolloutRecord {
            namespace: "demo".into(),
            name: "logs".into(),
            frozen: true,
            ..RolloutRecord::default()
        },
    ];
    let observed = Observed {
        nodes: nodes.into(),
        pods: pods.into(),
        rollouts,
        ..Observed::default()
    };
    plan(&[agent, logs], &observed, &Policy::default(), now())
}

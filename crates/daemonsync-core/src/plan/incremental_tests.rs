//! Incremental planning against the full plan: across random event sequences on synthetic
//! fleets, every DaemonSet's incremental plan is its full plan, and a DaemonSet the change did
//! not wake has the plan it had (but for the rows of nodes it does not run on).

use super::{Changes, Incremental, Key, PodTouch, names_pre_pull};
use crate::manifest::policy::{
    CANARY, CANARY_PAUSE, READINESS_TAINT, WAVES_BY, tolerate_readiness_taint,
};
use crate::model::{Node, Pod, PodPhase, ReadyCondition, Taint, TaintEffect};
use crate::plan::{Desired, NodeState, Observed, Policy, plan};
use crate::testkit::synthetic::{fleet, fleet_now};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const READINESS_KEY: &str = "example.com/agent-not-ready";
/// The label some DaemonSets' rollouts wave by: no node carries it at first.
const ZONE: &str = "example.com/zone";

/// One change to the cluster or the source; indices are taken modulo the list they index.
#[derive(Debug, Clone)]
enum Event {
    /// A copy of pod `.0` on node `.1` (a new pod, maybe a duplicate).
    PodCreated(usize, usize),
    PodDeleted(usize),
    PodPhase(usize, PodPhase),
    PodReady(usize, bool),
    PodTerminating(usize),
    /// The pod loses its `app` label: released by its DaemonSet.
    PodRelabelled(usize),
    /// A ready Linux node, a Windows one, or (`Joining`) one registering: not ready yet, with
    /// the `node.kubernetes.io/not-ready:NoSchedule` taint a kubelet registers it with.
    NodeAdded(Joining),
    /// The node turns Ready: its not-ready taints go.
    NodeReady(usize),
    NodeRemoved(usize),
    /// The pod the full plan of DaemonSet `.0` creates first appears (the echo of a
    /// daemon's create), pending.
    Echo(usize),
    /// `kubernetes.io/os` and `pool` change.
    NodeRelabelled(usize, bool),
    /// A `NoSchedule` taint: a plain one, or the readiness taint.
    NodeTainted(usize, bool),
    NodeNotReady(usize),
    /// What the pods bound to the node request: `.1` tenths of its CPU.
    NodeUsage(usize, u8),
    /// What the node gives pods: `.1` tenths of a CPU.
    NodeAllocatable(usize, u8),
    /// The node's images: those of DaemonSet `.1`'s template (a kubelet's report after its
    /// pulls), or none.
    NodeImages(usize, usize, bool),
    /// A new image.
    Template(usize, u8),
    /// The template's `nodeSelector` (Linux only, or none).
    NodeSelector(usize, bool),
    /// The selector narrows to a label no pod has, or widens back.
    Selector(usize, bool),
}

/// How an added node comes.
#[derive(Debug, Clone, Copy)]
enum Joining {
    Linux,
    Windows,
    NotReady,
}

/// The taint of a node that is not ready.
const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// A taint of `key` with no value.
fn taint(key: &str, effect: TaintEffect) -> Taint {
    Taint {
        key: key.into(),
        value: String::new(),
        effect,
    }
}

fn phase() -> impl Strategy<Value = PodPhase> {
    prop_oneof![
        Just(PodPhase::Pending),
        Just(PodPhase::Running),
        Just(PodPhase::Failed),
        Just(PodPhase::Succeeded),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    let i = || 0usize..10_000;
    prop_oneof![
        3 => (i(), i()).prop_map(|(p, n)| Event::PodCreated(p, n)),
        3 => i().prop_map(Event::PodDeleted),
        2 => (i(), phase()).prop_map(|(p, ph)| Event::PodPhase(p, ph)),
        3 => (i(), any::<bool>()).prop_map(|(p, r)| Event::PodReady(p, r)),
        1 => i().prop_map(Event::PodTerminating),
        1 => i().prop_map(Event::PodRelabelled),
        1 => prop_oneof![
            Just(Joining::Linux),
            Just(Joining::Windows),
            Just(Joining::NotReady)
        ]
        .prop_map(Event::NodeAdded),
        1 => i().prop_map(Event::NodeReady),
        1 => i().prop_map(Event::NodeRemoved),
        1 => (i(), any::<bool>()).prop_map(|(n, b)| Event::NodeRelabelled(n, b)),
        1 => (i(), any::<bool>()).prop_map(|(n, b)| Event::NodeTainted(n, b)),
        1 => i().prop_map(Event::NodeNotReady),
        2 => (i(), 0u8..12).prop_map(|(n, u)| Event::NodeUsage(n, u)),
        1 => (i(), 1u8..20).prop_map(|(n, u)| Event::NodeAllocatable(n, u)),
        2 => (i(), i(), any::<bool>()).prop_map(|(n, d, b)| Event::NodeImages(n, d, b)),
        1 => (i(), any::<u8>()).prop_map(|(d, v)| Event::Template(d, v)),
        1 => (i(), any::<bool>()).prop_map(|(d, b)| Event::NodeSelector(d, b)),
        1 => (i(), any::<bool>()).prop_map(|(d, b)| Event::Selector(d, b)),
    ]
}

/// Mostly changes of pods' status (what a daemon may leave for later), among the others.
fn status_heavy_event() -> impl Strategy<Value = Event> {
    let i = || 0usize..10_000;
    prop_oneof![
        3 => (i(), any::<bool>()).prop_map(|(p, r)| Event::PodReady(p, r)),
        1 => (i(), prop_oneof![Just(PodPhase::Pending), Just(PodPhase::Running)])
            .prop_map(|(p, ph)| Event::PodPhase(p, ph)),
        2 => i().prop_map(Event::Echo),
        2 => event(),
    ]
}

/// The synthetic fleet, every other DaemonSet naming a readiness taint (and tolerating it, as
/// loading makes it) when `gated`.
fn start(nodes: usize, daemonsets: usize, seed: u64, gated: bool) -> (Vec<Desired>, Observed) {
    let (mut desired, mut observed) = fleet(nodes, daemonsets, seed);
    // Every node has a CPU, which daemons request a share of.
    for n in &mut observed.nodes {
        n.allocatable = Some(Box::new(BTreeMap::from([("cpu".to_string(), 1000)])));
        n.requested = Some(Box::new(BTreeMap::from([("cpu".to_string(), 300)])));
    }
    for d in &mut desired {
        let requests = BTreeMap::from([(
            "cpu".to_string(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("300m".into()),
        )]);
        pod_spec(d).containers[0].resources =
            Some(k8s_openapi::api::core::v1::ResourceRequirements {
                requests: Some(requests),
                ..Default::default()
            });
    }
    // Every third DaemonSet pulls its images ahead: its plans read the nodes' images.
    for d in desired.iter_mut().skip(2).step_by(3) {
        d.daemonset
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(crate::plan::progressive::PRE_PULL.into(), "true".into());
    }
    // Rollout policies: the second DaemonSet of every four stops after a one-node canary; the
    // fourth waves by a label no node carries until one is relabelled for Windows (an error
    // until then, whichever nodes it runs on).
    let annotate = |d: &mut Desired, pairs: &[(&str, &str)]| {
        let a = d.daemonset.metadata.annotations.get_or_insert_default();
        for (k, v) in pairs {
            a.insert((*k).into(), (*v).into());
        }
    };
    for (i, d) in desired.iter_mut().enumerate() {
        match i % 4 {
            1 => annotate(d, &[(CANARY, "1"), (CANARY_PAUSE, "manual")]),
            3 => annotate(
                d,
                &[(WAVES_BY, ZONE), (CANARY, "25%"), (CANARY_PAUSE, "0s")],
            ),
            _ => {}
        }
    }
    if gated {
        for d in desired.iter_mut().step_by(2) {
            d.daemonset
                .metadata
                .annotations
                .get_or_insert_default()
                .insert(READINESS_TAINT.into(), READINESS_KEY.into());
            tolerate_readiness_taint(&mut d.daemonset);
        }
    }
    (desired, observed)
}

fn key(d: &Desired) -> Key {
    let m = &d.daemonset.metadata;
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

fn pod_spec(d: &mut Desired) -> &mut k8s_openapi::api::core::v1::PodSpec {
    d.daemonset
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .expect("a template")
}

/// Applies `event`, returning what changed, as a cache would report it.
fn apply(event: &Event, desired: &mut [Desired], o: &mut Observed, counter: &mut usize) -> Changes {
    let mut changes = Changes::default();
    let touch_pod = |o: &mut Observed, i: usize, f: &dyn Fn(&mut Pod)| {
        if o.pods.is_empty() {
            return Changes::default();
        }
        let i = i % o.pods.len();
        let mut c = Changes::default();
        let before = o.pods[i].clone();
        f(&mut o.pods[i]);
        c.note_pod(Some(&before), Some(&o.pods[i]));
        c
    };
    let node_name = |o: &Observed, n: usize| -> Option<String> {
        (!o.nodes.is_empty()).then(|| o.nodes[n % o.nodes.len()].name.clone())
    };
    // A node changed as a cache notes it.
    let touch_node = |o: &mut Observed, n: usize, f: &dyn Fn(&mut Node)| {
        let mut c = Changes::default();
        if !o.nodes.is_empty() {
            let i = n % o.nodes.len();
            let before = o.nodes[i].clone();
            f(&mut o.nodes[i]);
            c.note_node(&before.name, Some(&before), Some(&o.nodes[i]));
        }
        c
    };
    match event {
        Event::PodCreated(p, n) => {
            if let (false, Some(node)) = (o.pods.is_empty(), node_name(o, *n)) {
                let mut pod = o.pods[p % o.pods.len()].clone();
                *counter += 1;
                pod.name = format!("new-{counter}");
                pod.node_name = Some(node.as_str().into());
                pod.target_node = Some(node.as_str().into());
                pod.deletion_timestamp = None;
                changes.note_pod(None, Some(&pod));
                o.pods.push(pod);
            }
        }
        Event::PodDeleted(p) => {
            if !o.pods.is_empty() {
                let pod = o.pods.remove(p % o.pods.len());
                changes.note_pod(Some(&pod), None);
            }
        }
        Event::PodPhase(p, phase) => {
            let phase = *phase;
            changes = touch_pod(o, *p, &|pod| pod.phase = phase);
        }
        Event::PodReady(p, ready) => {
            let ready = *ready;
            changes = touch_pod(o, *p, &|pod| {
                pod.ready = Some(ReadyCondition {
                    status: ready,
                    last_transition: Some(fleet_now()),
                });
            });
        }
        Event::PodTerminating(p) => {
            changes = touch_pod(o, *p, &|pod| pod.deletion_timestamp = Some(fleet_now()));
        }
        Event::PodRelabelled(p) => {
            changes = touch_pod(o, *p, &|pod| {
                pod.labels_mut().remove("app");
            });
        }
        Event::Echo(d) => {
            let d = &desired[d % desired.len()];
            let (namespace, name) = key(d);
            let full = plan(desired, o, &Policy::default(), fleet_now());
            let node = full
                .daemonsets
                .iter()
                .find(|p| p.namespace == namespace && p.name == name)
                .and_then(|p| p.step.create.first().cloned());
            let like = o.pods.iter().find(|p| {
                *p.namespace == *namespace && p.controller.as_ref().is_some_and(|c| c.name == name)
            });
            if let (Some(node), Some(like)) = (node, like) {
                let mut pod = like.clone();
                *counter += 1;
                pod.name = format!("created-{counter}");
                pod.labels_mut().insert(
                    crate::model::REVISION_HASH_LABEL.into(),
                    crate::plan::DaemonSetSpec::compile(&d.daemonset).revision,
                );
                pod.node_name = None;
                pod.target_node = Some(node);
                pod.phase = PodPhase::Pending;
                pod.ready = None;
                pod.deletion_timestamp = None;
                pod.creation_timestamp = Some(fleet_now());
                changes.note_echo(&pod);
                o.pods.push(pod);
            }
        }
        Event::NodeAdded(joining) => {
            *counter += 1;
            let mut node = Node::named(format!("added-{counter:03}"));
            let os = match joining {
                Joining::Windows => "windows",
                _ => "linux",
            };
            node.labels.insert("kubernetes.io/os".into(), os.into());
            node.ready = Some(!matches!(joining, Joining::NotReady));
            if let Joining::NotReady = joining {
                node.taints.push(taint(NOT_READY, TaintEffect::NoSchedule));
            }
            changes.note_node(&node.name, None, Some(&node));
            o.nodes.push(node);
        }
        Event::NodeReady(n) => {
            changes = touch_node(o, *n, &|node| {
                node.ready = Some(true);
                node.taints.retain(|t| t.key != NOT_READY);
            });
        }
        Event::NodeRemoved(n) => {
            if !o.nodes.is_empty() {
                let at = n % o.nodes.len();
                let node = o.nodes.remove(at);
                changes.note_node(&node.name, Some(&node), None);
            }
        }
        Event::NodeRelabelled(n, windows) => {
            let (os, pool) = if *windows {
                ("windows", "win")
            } else {
                ("linux", "gpu")
            };
            changes = touch_node(o, *n, &|node| {
                node.labels.insert("kubernetes.io/os".into(), os.into());
                node.labels.insert("pool".into(), pool.into());
                if *windows {
                    node.labels.insert(ZONE.into(), "west".into());
                }
            });
        }
        Event::NodeTainted(n, readiness) => {
            let key = if *readiness {
                READINESS_KEY
            } else {
                "example.com/dedicated"
            };
            changes = touch_node(o, *n, &|node| {
                node.taints.push(taint(key, TaintEffect::NoSchedule));
            });
        }
        Event::NodeNotReady(n) => {
            changes = touch_node(o, *n, &|node| {
                node.ready = Some(false);
                node.taints.push(taint(NOT_READY, TaintEffect::NoExecute));
            });
        }
        Event::NodeUsage(n, tenths) => {
            let cpu = i64::from(*tenths) * 100;
            changes = touch_node(o, *n, &|node| {
                node.requested = Some(Box::new(BTreeMap::from([("cpu".to_string(), cpu)])));
            });
        }
        Event::NodeAllocatable(n, tenths) => {
            let cpu = i64::from(*tenths) * 100;
            changes = touch_node(o, *n, &|node| {
                node.allocatable = Some(Box::new(BTreeMap::from([("cpu".to_string(), cpu)])));
            });
        }
        Event::NodeImages(n, d, present) => {
            let mut images: Vec<String> = if *present {
                pod_spec(&mut desired[d % desired.len()])
                    .containers
                    .iter()
                    .filter_map(|c| c.image.clone())
                    .collect()
            } else {
                Vec::new()
            };
            images.sort();
            images.dedup();
            changes = touch_node(o, *n, &|node| node.images.clone_from(&images));
        }
        Event::Template(d, v) => {
            let d = &mut desired[d % desired.len()];
            pod_spec(d).containers[0].image = Some(format!("registry.example/x:{v}"));
            changes.daemonsets.insert(key(d));
        }
        Event::NodeSelector(d, linux) => {
            let d = &mut desired[d % desired.len()];
            pod_spec(d).node_selector = linux
                .then(|| BTreeMap::from([("kubernetes.io/os".to_string(), "linux".to_string())]));
            changes.daemonsets.insert(key(d));
        }
        Event::Selector(d, narrow) => {
            let d = &mut desired[d % desired.len()];
            let app = key(d).1;
            let spec = d.daemonset.spec.as_mut().unwrap();
            let mut labels = BTreeMap::from([("app".to_string(), app)]);
            if *narrow {
                labels.insert("track".into(), "canary".into());
            }
            spec.selector.match_labels = Some(labels);
            changes.daemonsets.insert(key(d));
        }
    }
    changes
}

/// Each DaemonSet's plan, in its JSON form, by key.
fn by_key<'a>(
    plans: impl Iterator<Item = &'a crate::plan::DaemonSetPlan>,
) -> BTreeMap<Key, String> {
    plans
        .map(|p| {
            (
                (p.namespace.clone(), p.name.clone()),
                serde_json::to_string(p).expect("plans serialize"),
            )
        })
        .collect()
}

/// The observation an update of the DaemonSets `changes` wake needs: every pod, or (when
/// `scoped`) only the pods in the scope of those of them that read pods (not those the rows
/// of the changed nodes bring up to date), as a daemon observes.
fn observation(
    inc: &Incremental,
    desired: &[Desired],
    observed: &Observed,
    changes: &Changes,
    scoped: bool,
) -> Observed {
    if !scoped {
        return observed.clone();
    }
    let woken = inc.woken(desired, changes);
    let scope = inc.scope(
        desired,
        &inc.needing_pods(desired, changes, &woken, &observed.nodes),
    );
    let mut o = observed.clone();
    o.pods.retain(|p| scope.concerns(p));
    o
}

/// How a run of [`incremental_equals_full`] updates its planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Updating {
    /// From every pod.
    Everything,
    /// From only the pods in scope, as a daemon observes.
    Scoped,
    /// From only the pods in scope, leaving for later what [`Incremental::defer`] leaves,
    /// as a daemon does; the deferred DaemonSets are woken every third event and at the end.
    Deferring,
}

/// The fleet of [`start`], without the pods of its DaemonSets on the nodes where they are not
/// settled (old, failed, duplicate, surging, terminating or misscheduled pods): most of them
/// settle, and status changes of their pods can be deferred.
fn converged(shape: (usize, usize, u64, bool)) -> (Vec<Desired>, Observed) {
    let (mut desired, mut observed) = start(shape.0, shape.1, shape.2, shape.3);
    // Every third DaemonSet follows a canary policy; every last rollout went all the way, as
    // the records say (but the last DaemonSet's, never recorded complete).
    let count = desired.len();
    let mut revisions: BTreeMap<Key, String> = BTreeMap::new();
    for (i, d) in desired.iter_mut().enumerate() {
        if i % 3 == 1 {
            let annotations = d.daemonset.metadata.annotations.get_or_insert_default();
            annotations.insert(crate::plan::progressive::CANARY.into(), "1".into());
            annotations.insert(
                crate::plan::progressive::CANARY_PAUSE.into(),
                "manual".into(),
            );
        }
        let (namespace, name) = key(d);
        let revision = crate::plan::DaemonSetSpec::compile(&d.daemonset).revision;
        observed.rollouts.push(crate::plan::RolloutRecord {
            namespace: namespace.clone(),
            name: name.clone(),
            stable: (i + 1 < count).then(|| d.daemonset.clone().into()),
            progress: (i % 3 == 1).then(|| crate::plan::progressive::Progress {
                revision: revision.clone(),
                stage: 1,
                paused_since: None,
            }),
            ..Default::default()
        });
        revisions.insert((namespace, name), revision);
    }
    // Every pod of a desired DaemonSet runs its current revision.
    for p in &mut observed.pods {
        let Some(c) = &p.controller else { continue };
        let Some(revision) = revisions.get(&(p.namespace.to_string(), c.name.clone())) else {
            continue;
        };
        let revision = revision.clone();
        p.labels_mut()
            .insert(crate::model::REVISION_HASH_LABEL.into(), revision);
        p.phase = PodPhase::Running;
        p.deletion_timestamp = None;
    }
    let full = plan(&desired, &observed, &Policy::default(), fleet_now());
    let unsettled: BTreeSet<(String, String, String)> = full
        .daemonsets
        .iter()
        .flat_map(|d| {
            d.nodes
                .iter()
                .filter(|r| {
                    !matches!(
                        r.state,
                        NodeState::UpToDate | NodeState::Unavailable | NodeState::Missing
                    )
                })
                .map(|r| (d.namespace.clone(), d.name.clone(), r.node.to_string()))
        })
        .collect();
    observed.pods.retain(|p| {
        let (Some(c), Some(node)) = (&p.controller, &p.target_node) else {
            return true;
        };
        !unsettled.contains(&(p.namespace.to_string(), c.name.clone(), node.to_string()))
    });
    (desired, observed)
}

/// Applies `events` to a fleet, updating an incremental planner after each as `updating`
/// says, and checks every plan against the full plan of everything (a deferred DaemonSet's
/// once it is woken; until then, that the change left for later changes nothing it writes).
fn incremental_equals_full(
    shape: (usize, usize, u64, bool),
    events: &[Event],
    updating: Updating,
) -> Result<(), TestCaseError> {
    let (mut desired, mut observed) = match updating {
        Updating::Deferring => converged(shape),
        _ => start(shape.0, shape.1, shape.2, shape.3),
    };
    let scoped = updating != Updating::Everything;
    let now = fleet_now();
    let policy = Policy::default();
    let mut inc = Incremental::new(policy.clone());
    let first = observation(&inc, &desired, &observed, &Changes::default(), scoped);
    let woken = inc.update(&desired, &first, &Changes::default(), now);
    prop_assert_eq!(
        woken.daemonsets.len(),
        desired.len(),
        "the first update plans all"
    );
    let first_plan = plan(&desired, &observed, &policy, now);
    prop_assert_eq!(&by_key(inc.plans()), &by_key(first_plan.daemonsets.iter()));
    let mut previous = occupied(first_plan.daemonsets.iter());
    let mut last_steps = steps(&first_plan);
    let mut deferred: BTreeSet<Key> = BTreeSet::new();
    let mut counter = 0;
    for (step, e) in events.iter().enumerate() {
        let mut changes = apply(e, &mut desired, &mut observed, &mut counter);
        let full_plan = plan(&desired, &observed, &policy, now);
        let full_steps = steps(&full_plan);
        if updating == Updating::Deferring {
            for k in inc.defer(&desired, &mut changes) {
                // It asks for no write its plan before the change did not make.
                let (before, after) = (&last_steps[&k], &full_steps[&k]);
                prop_assert!(
                    writes_nothing_new(before, after),
                    "step {} ({:?}): {}/{} was left for later, but its step went from {} to {}",
                    step,
                    e,
                    k.0,
                    k.1,
                    serde_json::to_string(before).unwrap_or_default(),
                    serde_json::to_string(after).unwrap_or_default()
                );
                deferred.insert(k);
            }
            if step % 3 == 2 {
                changes.wake.extend(std::mem::take(&mut deferred));
            }
        }
        last_steps = full_steps;
        let seen = observation(&inc, &desired, &observed, &changes, scoped);
        let woken = inc.update(&desired, &seen, &changes, now);
        deferred.retain(|k| !woken.daemonsets.contains(k));
        let full = by_key(full_plan.daemonsets.iter());
        let full_occupied = occupied(full_plan.daemonsets.iter());
        let ours = by_key(inc.plans());
        for (k, f) in &full {
            if deferred.contains(k) {
                continue;
            }
            prop_assert_eq!(
                ours.get(k),
                Some(f),
                "step {} ({:?}): {}/{} differs from its full plan",
                step,
                e,
                k.0,
                k.1
            );
            // Not re-planned: nothing changed but the rows of nodes it does not run on.
            if !woken.daemonsets.contains(k) {
                prop_assert_eq!(
                    previous.get(k),
                    full_occupied.get(k),
                    "step {} ({:?}): {}/{} was not woken but its plan changed",
                    step,
                    e,
                    k.0,
                    k.1
                );
            }
        }
        prop_assert_eq!(ours.len(), full.len());
        prop_assert!(
            inc.compare(&full_plan)
                .iter()
                .all(|m| deferred.contains(&m.daemonset))
        );
        previous = full_occupied;
    }
    // The deferred DaemonSets come due: every plan is its full plan.
    let changes = Changes {
        wake: deferred,
        ..Changes::default()
    };
    let seen = observation(&inc, &desired, &observed, &changes, scoped);
    inc.update(&desired, &seen, &changes, now);
    prop_assert!(
        inc.compare(&plan(&desired, &observed, &policy, now))
            .is_empty()
    );
    Ok(())
}

/// Each DaemonSet's step, by key.
fn steps(plan: &crate::plan::Plan) -> BTreeMap<Key, crate::plan::Step> {
    plan.daemonsets
        .iter()
        .map(|d| ((d.namespace.clone(), d.name.clone()), d.step.clone()))
        .collect()
}

/// Whether step `after` writes nothing `before` did not: it creates on some of the same nodes,
/// and the rest of it is the same (whichever phase of the controller's it is now named after).
fn writes_nothing_new(before: &crate::plan::Step, after: &crate::plan::Step) -> bool {
    let without_creates = |s: &crate::plan::Step| {
        let mut s = s.clone();
        s.create.clear();
        s.phase = crate::plan::StepPhase::None;
        serde_json::to_string(&s).expect("steps serialize")
    };
    after.create.iter().all(|n| before.create.contains(n))
        && without_creates(before) == without_creates(after)
}

/// Each DaemonSet's plan in its JSON form, by key, without the rows of the nodes it should
/// not run on and where none of its pods is.
fn occupied<'a>(
    plans: impl Iterator<Item = &'a crate::plan::DaemonSetPlan>,
) -> BTreeMap<Key, String> {
    let plans: Vec<crate::plan::DaemonSetPlan> = plans
        .map(|p| crate::plan::DaemonSetPlan {
            nodes: p
                .nodes
                .iter()
                .filter(|r| !crate::plan::classify::is_unoccupied(r))
                .cloned()
                .collect(),
            ..p.clone()
        })
        .collect();
    by_key(plans.iter())
}

fn fleet_shape() -> impl Strategy<Value = (usize, usize, u64, bool)> {
    (4usize..14, 2usize..7, any::<u64>(), any::<bool>())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn incremental_plans_equal_full_plans(
        shape in fleet_shape(),
        events in prop::collection::vec(event(), 1..24),
    ) {
        incremental_equals_full(shape, &events, Updating::Everything)?;
    }

    /// A daemon observes only the pods in the scope of the DaemonSets a change wakes.
    #[test]
    fn plans_from_only_the_pods_in_scope_equal_full_plans(
        shape in fleet_shape(),
        events in prop::collection::vec(event(), 1..24),
    ) {
        incremental_equals_full(shape, &events, Updating::Scoped)?;
    }

    /// A daemon leaves pods' status changes for later where they cannot change what is
    /// written: what each DaemonSet writes stays what its full plan writes, and once woken
    /// its plan is its full plan.
    #[test]
    fn status_changes_left_for_later_change_nothing_written_and_plans_catch_up(
        shape in fleet_shape(),
        events in prop::collection::vec(status_heavy_event(), 1..24),
    ) {
        incremental_equals_full(shape, &events, Updating::Deferring)?;
    }
}

/// A synthetic fleet, and an incremental planner that planned it at `now`.
fn planned(
    nodes: usize,
    daemonsets: usize,
    seed: u64,
) -> (Vec<Desired>, Observed, Incremental, crate::model::Timestamp) {
    let (desired, observed) = fleet(nodes, daemonsets, seed);
    let now = fleet_now();
    let mut inc = Incremental::new(Policy::default());
    inc.update(&desired, &observed, &Changes::default(), now);
    (desired, observed, inc, now)
}

#[test]
fn a_pod_event_wakes_only_its_daemonset() {
    let (desired, mut observed, mut inc, now) = planned(8, 4, 7);
    let i = observed
        .pods
        .iter()
        .position(|p| p.controller.as_ref().is_some_and(|c| c.name == "agent-01"))
        .expect("a pod of agent-01");
    let pod = observed.pods.remove(i);
    let changes = Changes {
        pods: vec![PodTouch::of(&pod)],
        ..Changes::default()
    };
    let woken = inc.update(&desired, &observed, &changes, now);
    assert_eq!(
        woken.daemonsets.into_iter().collect::<Vec<_>>(),
        vec![(pod.namespace.to_string(), "agent-01".to_string())]
    );
    let full = plan(&desired, &observed, &Policy::default(), now);
    assert!(inc.compare(&full).is_empty());
    let replanned = inc.get(&pod.namespace, "agent-01").unwrap();
    assert!(
        replanned
            .step
            .create
            .iter()
            .any(|n| Some(&**n) == pod.target_node.as_deref())
            || replanned
                .nodes
                .iter()
                .all(|n| Some(&*n.node) != pod.target_node.as_deref()),
        "the node that lost its pod gets one"
    );
}

#[test]
fn a_node_registering_not_ready_only_adds_its_row_until_it_is_ready() {
    let (desired, mut observed, mut inc, now) = planned(8, 4, 7);
    // Kubelets register their nodes not ready, tainted so that nothing is scheduled there:
    // three at once, named to sort before, among and after the fleet's.
    let joining = ["a-joining", "joining", "zz-joining"];
    for name in joining {
        let mut node = Node::named(name);
        node.labels
            .insert("kubernetes.io/os".into(), "linux".into());
        node.ready = Some(false);
        node.taints.push(taint(NOT_READY, TaintEffect::NoSchedule));
        observed.nodes.push(node);
    }
    let changes = Changes {
        nodes: joining.iter().map(|n| n.to_string()).collect(),
        ..Changes::default()
    };
    // A DaemonSet tolerating every taint (as a CNI does) is to run there now, and is planned
    // again; the others have the node's row, and nothing else of theirs changed: their pods
    // are not even read (a daemon observes none of them).
    let needing = inc.needing_pods(
        &desired,
        &changes,
        &inc.woken(&desired, &changes),
        &observed.nodes,
    );
    let woken = inc.update(&desired, &observed, &changes, now);
    assert_eq!(needing, woken.daemonsets);
    let runs_there = |inc: &Incremental| -> BTreeSet<Key> {
        inc.plans()
            .filter(|d| {
                let row = d.nodes.iter().find(|r| &*r.node == "joining");
                !crate::plan::classify::is_unoccupied(row.expect("its row"))
            })
            .map(|d| (d.namespace.clone(), d.name.clone()))
            .collect()
    };
    assert_eq!(woken.daemonsets, runs_there(&inc));
    assert!(woken.daemonsets.len() < desired.len(), "{woken:?}");
    assert!(
        inc.compare(&plan(&desired, &observed, &Policy::default(), now))
            .is_empty()
    );
    // Ready: the DaemonSets it suits are planned again, to run there; the rest are not.
    let before = woken.daemonsets.len();
    let node = observed
        .nodes
        .iter_mut()
        .find(|n| n.name == "joining")
        .unwrap();
    node.ready = Some(true);
    node.taints.clear();
    let needing = inc.needing_pods(
        &desired,
        &changes,
        &inc.woken(&desired, &changes),
        &observed.nodes,
    );
    let woken = inc.update(&desired, &observed, &changes, now);
    assert_eq!(needing, woken.daemonsets);
    assert_eq!(woken.daemonsets, runs_there(&inc));
    assert!(woken.daemonsets.len() > before, "{woken:?}");
    for d in inc.plans() {
        let row = d.nodes.iter().find(|r| &*r.node == "joining").unwrap();
        assert_ne!(row.state, NodeState::Blocked, "{}", d.name);
    }
    assert!(
        inc.compare(&plan(&desired, &observed, &Policy::default(), now))
            .is_empty()
    );
}

#[test]
fn a_missed_change_shows_as_a_mismatch_naming_what_differs() {
    let (desired, mut observed, mut inc, now) = planned(6, 2, 3);
    let pod = observed
        .pods
        .iter()
        .position(|p| p.controller.as_ref().is_some_and(|c| c.name == "agent-00"))
        .unwrap();
    observed.pods.remove(pod);
    // Nothing reported: the incremental state is stale, and the comparison says where.
    inc.update(&desired, &observed, &Changes::default(), now);
    let full = plan(&desired, &observed, &Policy::default(), now);
    let mismatches = inc.compare(&full);
    assert_eq!(mismatches.len(), 1);
    assert_eq!(mismatches[0].daemonset.1, "agent-00");
    assert!(mismatches[0].fields.contains(&"status".to_string()));
    // Everything re-planned: in agreement again.
    inc.update(&desired, &observed, &Changes::everything(), now);
    assert!(inc.compare(&full).is_empty());
}

#[test]
fn a_removed_daemonset_is_forgotten_and_a_new_one_planned() {
    let (mut desired, observed, mut inc, now) = planned(5, 3, 1);
    let gone = desired.remove(1);
    let woken = inc.update(&desired, &observed, &Changes::default(), now);
    assert!(woken.daemonsets.is_empty());
    assert_eq!(
        woken.removed.into_iter().collect::<Vec<_>>(),
        vec![key(&gone)]
    );
    desired.push(gone.clone());
    let woken = inc.update(&desired, &observed, &Changes::default(), now);
    assert_eq!(
        woken.daemonsets.into_iter().collect::<Vec<_>>(),
        vec![key(&gone)]
    );
    assert!(
        inc.compare(&plan(&desired, &observed, &Policy::default(), now))
            .is_empty()
    );
}

#[test]
fn a_pods_status_alone_is_readiness_restarts_a_live_phase_and_binding_to_its_node() {
    let (_, observed) = fleet(4, 2, 9);
    let pod = observed
        .pods
        .iter()
        .find(|p| p.phase == PodPhase::Running && !p.is_terminating())
        .expect("a running pod")
        .clone();
    let changed = |f: &dyn Fn(&mut Pod)| {
        let mut after = pod.clone();
        f(&mut after);
        super::status_only(&pod, &after)
    };
    assert!(changed(&|p| p.ready = Some(ReadyCondition {
        status: !pod.is_ready(),
        last_transition: Some(fleet_now()),
    })));
    assert!(changed(
        &|p| p.waiting_reason = Some("CrashLoopBackOff".into())
    ));
    assert!(changed(&|p| p.phase = PodPhase::Pending));
    // Bound by the scheduler to the node it was created for.
    let mut unbound = pod.clone();
    unbound.node_name = None;
    assert!(super::status_only(&unbound, &pod));
    // Anything else adds, removes or re-classes a pod of a node.
    let mut elsewhere = pod.clone();
    elsewhere.node_name = Some("another-node".into());
    assert!(!super::status_only(&unbound, &elsewhere));
    assert!(!changed(&|p| p.phase = PodPhase::Failed));
    assert!(!changed(&|p| p.phase = PodPhase::Succeeded));
    assert!(!changed(&|p| p.deletion_timestamp = Some(fleet_now())));
    assert!(!changed(&|p| {
        p.labels_mut()
            .insert(crate::model::REVISION_HASH_LABEL.into(), "other".into());
    }));
    assert!(!changed(&|p| p.controller = None));
    assert!(!changed(&|p| p.config = Some("digest".into())));
    // Noted once, as a status change; any other change, each version.
    let mut c = Changes::default();
    c.note_pod(Some(&unbound), Some(&pod));
    assert_eq!((c.statuses.len(), c.pods.len()), (1, 0));
    let mut c = Changes::default();
    c.note_pod(Some(&unbound), Some(&elsewhere));
    assert_eq!((c.statuses.len(), c.pods.len()), (0, 2));
}

#[test]
fn readiness_on_a_settled_daemonset_waits_and_what_could_change_a_step_does_not() {
    let (desired, mut observed) = converged((10, 6, 5, false));
    let now = fleet_now();
    let mut inc = Incremental::new(Policy::default());
    // Nothing waits on the first update.
    let mut first = Changes::default();
    first.note_pod(Some(&observed.pods[0]), Some(&observed.pods[0]));
    assert!(inc.defer(&desired, &mut first).is_empty());
    inc.update(&desired, &observed, &Changes::default(), now);
    let pod_of = |o: &Observed, name: &str| {
        o.pods
            .iter()
            .position(|p| p.controller.as_ref().is_some_and(|c| c.name == name))
            .expect("a pod of it")
    };
    let flip = |o: &mut Observed, i: usize, f: &dyn Fn(&mut Pod)| {
        let before = o.pods[i].clone();
        f(&mut o.pods[i]);
        let mut c = Changes::default();
        c.note_pod(Some(&before), Some(&o.pods[i]));
        c
    };
    let unready = |p: &mut Pod| {
        p.ready = Some(ReadyCondition {
            status: false,
            last_transition: Some(fleet_now()),
        })
    };
    // agent-01 runs its revision everywhere, alone: its pod's readiness waits.
    let settled = ("system-1".to_string(), "agent-01".to_string());
    let i = pod_of(&observed, "agent-01");
    let mut changes = flip(&mut observed, i, &unready);
    assert_eq!(
        inc.defer(&desired, &mut changes),
        BTreeSet::from([settled.clone()])
    );
    assert!(changes.is_empty(), "{changes:?}");
    let woken = inc.update(&desired, &observed, &changes, now);
    assert!(woken.daemonsets.is_empty());
    let full = plan(&desired, &observed, &Policy::default(), now);
    let stale: Vec<Key> = inc
        .compare(&full)
        .into_iter()
        .map(|m| m.daemonset)
        .collect();
    assert_eq!(stale, vec![settled.clone()], "only its counters wait");
    // Woken later, it catches up.
    let due = Changes {
        wake: BTreeSet::from([settled.clone()]),
        ..Changes::default()
    };
    inc.update(&desired, &observed, &due, now);
    assert!(inc.compare(&full).is_empty());
    // Its pod failing is not a status change: it is replaced now.
    let mut changes = flip(&mut observed, i, &|p| p.phase = PodPhase::Failed);
    assert!(inc.defer(&desired, &mut changes).is_empty());
    let woken = inc.update(&desired, &observed, &changes, now);
    assert_eq!(woken.daemonsets, BTreeSet::from([settled]));
    // agent-05's rollout was never recorded complete: a pod of it turning ready may complete
    // it, which its record says as it happens. Nothing of its waits.
    let i = pod_of(&observed, "agent-05");
    let mut changes = flip(&mut observed, i, &unready);
    assert!(inc.defer(&desired, &mut changes).is_empty());
    assert_eq!(changes.statuses.len(), 1);
    // agent-00 runs beside the built-in controller's DaemonSet of its name: nothing of its
    // waits.
    let i = pod_of(&observed, "agent-00");
    let mut changes = flip(&mut observed, i, &unready);
    assert!(inc.defer(&desired, &mut changes).is_empty());
    assert_eq!(changes.statuses.len(), 1);
}

#[test]
fn a_nodes_images_wake_only_the_daemonsets_that_pull_ahead_and_its_resources_those_creating_there()
{
    let (mut desired, mut observed) = start(8, 4, 11, false);
    // The synthetic fleet's third DaemonSet pulls ahead; no other does.
    let pulling: Vec<Key> = desired
        .iter()
        .filter(|d| names_pre_pull(d))
        .map(key)
        .collect();
    assert_eq!(pulling.len(), 1);
    let now = fleet_now();
    let mut inc = Incremental::new(Policy::default());
    inc.update(&desired, &observed, &Changes::default(), now);
    let before = observed.nodes[0].clone();
    let name = before.name.clone();

    // The same node again (a heartbeat the model keeps nothing of): nothing.
    let mut changes = Changes::default();
    changes.note_node(&name, Some(&before), Some(&before));
    assert!(changes.is_empty());

    // The kubelet reports the images it pulled: only the DaemonSet that pulls ahead.
    let mut after = before.clone();
    after.images = vec!["registry.example/agent:2".into()];
    let mut changes = Changes::default();
    changes.note_node(&name, Some(&before), Some(&after));
    assert_eq!(changes.images, BTreeSet::from([name.clone()]));
    assert!(changes.nodes.is_empty() && changes.usage.is_empty());
    assert_eq!(
        inc.woken(&desired, &changes),
        pulling.iter().cloned().collect::<BTreeSet<_>>()
    );
    observed.nodes[0] = after.clone();
    inc.update(&desired, &observed, &changes, now);
    assert!(
        inc.compare(&plan(&desired, &observed, &Policy::default(), now))
            .is_empty()
    );

    // What it gives pods: what the scheduler has left there, as pods' requests are.
    let mut resized = after.clone();
    resized.allocatable = Some(Box::new(BTreeMap::from([("cpu".to_string(), 250)])));
    let mut changes = Changes::default();
    changes.note_node(&name, Some(&after), Some(&resized));
    assert_eq!(changes.usage, BTreeSet::from([name.clone()]));
    assert!(changes.nodes.is_empty() && changes.images.is_empty());

    // Labels (or taints, or readiness) with the images: every DaemonSet, for that node.
    let mut relabelled = after.clone();
    relabelled.labels.insert("pool".into(), "gpu".into());
    relabelled.images.clear();
    let mut changes = Changes::default();
    changes.note_node(&name, Some(&after), Some(&relabelled));
    assert_eq!(changes.nodes, BTreeSet::from([name.clone()]));
    assert!(changes.images.is_empty());
    assert_eq!(inc.woken(&desired, &changes).len(), desired.len());

    // Added and removed.
    let mut changes = Changes::default();
    changes.note_node("joined", None, Some(&Node::named("joined")));
    changes.note_node(&name, Some(&after), None);
    assert_eq!(
        changes.nodes,
        BTreeSet::from(["joined".to_string(), name.clone()])
    );
    // Without the annotation, nothing reads the images.
    for d in &mut desired {
        if let Some(a) = d.daemonset.metadata.annotations.as_mut() {
            a.remove(crate::plan::progressive::PRE_PULL);
        }
    }
    let mut changes = Changes::default();
    changes.note_node(&name, Some(&before), Some(&after));
    assert!(inc.woken(&desired, &changes).is_empty());
}

#[test]
fn a_node_it_does_not_run_on_gaining_the_label_its_rollout_waves_by_plans_it_again() {
    let (mut desired, mut observed) = fleet(8, 4, 7);
    // `agent-01` waves by a label no node carries: an error, until one does.
    desired[1]
        .daemonset
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(WAVES_BY.into(), ZONE.into());
    // `agent-02` stops after a one-node canary: its stages count only the nodes it runs on.
    desired[2]
        .daemonset
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(CANARY.into(), "1".into());
    let now = fleet_now();
    let mut inc = Incremental::new(Policy::default());
    inc.update(&desired, &observed, &Changes::default(), now);
    let (ns, name) = key(&desired[1]);
    assert_eq!(inc.get(&ns, &name).unwrap().errors.len(), 1);
    // A node registering not ready (no DaemonSet of these runs there) carries it.
    let mut node = Node::named("joining");
    node.labels
        .insert("kubernetes.io/os".into(), "linux".into());
    node.labels.insert(ZONE.into(), "west".into());
    node.ready = Some(false);
    node.taints.push(taint(NOT_READY, TaintEffect::NoSchedule));
    observed.nodes.push(node);
    let changes = Changes {
        nodes: BTreeSet::from(["joining".to_string()]),
        ..Changes::default()
    };
    let woken = inc.update(&desired, &observed, &changes, now);
    assert!(
        woken.daemonsets.contains(&(ns.clone(), name.clone())),
        "{woken:?}"
    );
    let planned = inc.get(&ns, &name).unwrap();
    assert!(planned.errors.is_empty(), "{:?}", planned.errors);
    assert!(planned.rollout.is_some());
    // The others it does not run on, with a rollout policy or without, only have its row.
    let canaried = key(&desired[2]);
    assert!(inc.get(&canaried.0, &canaried.1).unwrap().rollout.is_some());
    assert!(!woken.daemonsets.contains(&canaried), "{woken:?}");
    assert!(
        inc.compare(&plan(&desired, &observed, &Policy::default(), now))
            .is_empty()
    );
}

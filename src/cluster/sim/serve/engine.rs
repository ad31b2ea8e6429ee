//! The bridge between the API store and the simulator, which decides what pods and nodes do:
//! pods written through the API are admitted by the simulator's scheduler and run by its
//! kubelet on the wall clock; node edits made through the API (labels, taints, cordon,
//! readiness, removal) are fed back to it; whatever the simulator changes (binding, start,
//! failures, termination, churn, pod garbage collection) is projected onto the stored objects
//! as the kubelet and controllers of a real cluster would write it.

use super::kinds::Kind;
use super::status::ApiError;
use super::store::Owners;
use super::world::World;
use crate::cluster::sim::SimPod;
use crate::model::{Node, Pod, PodPhase, ReadyCondition, Timestamp};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const PODS: &str = "/pods";
const NODES: &str = "/nodes";
/// The taint the node lifecycle controller keeps on cordoned nodes.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
/// The kubelet version nodes report (the server's own version).
pub const KUBELET_VERSION: &str = "v1.32.4-sim";

/// What the simulator's state looked like when last projected.
#[derive(Debug, Clone, PartialEq)]
struct PodView {
    node: Option<String>,
    phase: PodPhase,
    ready: Option<ReadyCondition>,
    waiting: Option<String>,
    deleting: Option<Timestamp>,
    started: bool,
    waiting_for_node: bool,
}

impl PodView {
    fn of(p: &SimPod) -> Self {
        PodView {
            node: p.pod.node_name.clone(),
            phase: p.pod.phase,
            ready: p.pod.ready,
            waiting: p.pod.waiting_reason.clone(),
            deleting: p.pod.deletion_timestamp,
            started: p.started,
            waiting_for_node: p.waiting_for_node,
        }
    }
}

/// The projection's memory: last projected pods and nodes, and address allocation.
#[derive(Debug, Default)]
pub struct Engine {
    pods: HashMap<(String, String), PodView>,
    nodes: BTreeMap<String, Node>,
    node_index: BTreeMap<String, u32>,
    next_pod_ip: HashMap<String, u32>,
    /// Creation time of the nodes found at start-up (they predate the server).
    pub boot_time: Option<Timestamp>,
}

impl Engine {
    fn index(&mut self, node: &str) -> u32 {
        let next = self.node_index.len() as u32 + 1;
        *self.node_index.entry(node.to_string()).or_insert(next)
    }

    fn node_ip(&mut self, node: &str) -> String {
        let i = self.index(node);
        format!("10.0.{}.{}", i / 256, i % 256)
    }

    fn pod_ip(&mut self, node: &str) -> String {
        let i = self.index(node);
        let n = self.next_pod_ip.entry(node.to_string()).or_insert(1);
        *n = *n % 253 + 1;
        format!("10.{}.{}.{}", 128 + i / 256, i % 256, *n + 1)
    }
}

fn typed<T: serde::de::DeserializeOwned>(obj: &Value) -> Option<T> {
    serde_json::from_value(obj.clone()).ok()
}

fn key(obj: &Value) -> (String, String) {
    super::store::key_of(obj)
}

/// Shows the simulator's changes in the store. True when pods disappeared (garbage may be
/// collectable).
pub fn project(w: &mut World) -> bool {
    let now = w.now();
    let changed: Vec<Node> = w
        .sim
        .nodes
        .values()
        .filter(|n| w.engine.nodes.get(&n.name) != Some(*n))
        .cloned()
        .collect();
    let gone: Vec<String> = w
        .engine
        .nodes
        .keys()
        .filter(|n| !w.sim.nodes.contains_key(*n))
        .cloned()
        .collect();
    for node in changed {
        let obj = match w.store.get(NODES, "", &node.name) {
            Some(e) => apply_model(&e.object, &node, now),
            None => {
                let created = w.engine.boot_time.unwrap_or(now);
                let mut obj = node_object(&mut w.engine, &node, created);
                obj["metadata"]["uid"] = json!(w.new_uid());
                obj
            }
        };
        w.store.put(NODES, obj, None);
        w.engine.nodes.insert(node.name.clone(), node);
    }
    for name in gone {
        w.store.remove(NODES, "", &name);
        w.engine.nodes.remove(&name);
    }

    let grace = w.sim.cfg.kubelet.termination_grace.millis() / 1000;
    let updates: Vec<(SimPod, PodView)> = w
        .sim
        .pods
        .iter()
        .filter_map(|(k, p)| {
            let view = PodView::of(p);
            (w.engine.pods.get(k) != Some(&view)).then(|| (p.clone(), view))
        })
        .collect();
    let removed: Vec<(String, String)> = w
        .engine
        .pods
        .keys()
        .filter(|k| !w.sim.pods.contains_key(*k))
        .cloned()
        .collect();
    for (p, view) in updates {
        let k = (p.pod.namespace.clone(), p.pod.name.clone());
        if let Some(e) = w.store.get(PODS, &k.0, &k.1) {
            let obj = project_pod(w, &e.object.clone(), &p, grace);
            w.store.put(PODS, obj, None);
        }
        w.engine.pods.insert(k, view);
    }
    for (ns, name) in &removed {
        w.engine.pods.remove(&(ns.clone(), name.clone()));
        let held = w.store.get(PODS, ns, name).is_some_and(|e| {
            e.object["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        });
        if !held {
            w.store.remove(PODS, ns, name);
        }
    }
    !removed.is_empty()
}

/// A pod written through the API: the simulator admits it (scheduler, then kubelet).
pub fn create_pod(
    w: &mut World,
    kind: &Kind,
    obj: Value,
    owners: Option<Owners>,
) -> Result<Arc<Value>, ApiError> {
    let (_, name) = key(&obj);
    let pod = typed::<k8s_openapi::api::core::v1::Pod>(&obj).ok_or_else(|| {
        ApiError::invalid(
            &kind.kind,
            &kind.group,
            &name,
            &[("spec".into(), "not a valid Pod".into())],
        )
    })?;
    w.sim.create(pod).map_err(|e| match e {
        crate::cluster::ClusterError::Rejected(why) if why.contains("already exists") => {
            ApiError::already_exists(&kind.plural, &kind.group, &name)
        }
        other => ApiError::invalid(
            &kind.kind,
            &kind.group,
            &name,
            &[("metadata".into(), other.to_string())],
        ),
    })?;
    let stored = w.store.put(PODS, obj, owners);
    w.project();
    Ok(stored)
}

/// A pod that has been running and ready since `since`, at start-up (`running:`).
pub fn insert_running(
    w: &mut World,
    pod: k8s_openapi::api::core::v1::Pod,
    since: Timestamp,
) -> anyhow::Result<()> {
    let mut obj = serde_json::to_value(&pod)?;
    let name = w.sim.insert_running(pod, since)?;
    obj["metadata"]["name"] = json!(name);
    obj["metadata"]["uid"] = json!(w.new_uid());
    obj["metadata"]["creationTimestamp"] = json!(since.to_string());
    obj["metadata"]["generation"] = json!(1);
    obj["apiVersion"] = json!("v1");
    obj["kind"] = json!("Pod");
    if let Some(m) = obj["metadata"].as_object_mut() {
        m.remove("generateName");
    }
    w.store.put(PODS, obj, None);
    Ok(())
}

/// A client changed a pod: the simulator's model follows its labels and owner.
pub fn pod_written(w: &mut World, stored: &Value) {
    let Some(typed) = typed::<k8s_openapi::api::core::v1::Pod>(stored) else {
        return;
    };
    let model = Pod::from_k8s(&typed);
    if let Some(p) = w.sim.pods.get_mut(&key(stored)) {
        p.pod.labels = model.labels;
        p.pod.controller = model.controller;
    }
}

/// Deletes a pod through the simulator (graceful termination; at once when unbound, or when
/// `force`). Returns its last state.
pub fn delete_pod(w: &mut World, namespace: &str, name: &str, force: bool) -> Arc<Value> {
    let k = (namespace.to_string(), name.to_string());
    let before = w
        .store
        .get(PODS, namespace, name)
        .map(|e| e.object.clone())
        .unwrap_or_default();
    if force {
        w.sim.pods.remove(&k);
        if w.engine.pods.contains_key(&k) {
            w.project();
        } else {
            w.store.remove(PODS, namespace, name);
        }
    } else {
        let _ = w.sim.delete(namespace, name);
        w.project();
    }
    w.store
        .get(PODS, namespace, name)
        .map(|e| e.object.clone())
        .unwrap_or(before)
}

/// A pod whose finalizers are done leaves the simulator too.
pub fn forget_pod(w: &mut World, namespace: &str, name: &str) {
    let k = (namespace.to_string(), name.to_string());
    w.sim.pods.remove(&k);
    w.engine.pods.remove(&k);
}

/// A node written through the API: the simulator sees its labels, taints and readiness.
pub fn node_written(w: &mut World, stored: &Value) {
    let Some(typed) = typed::<k8s_openapi::api::core::v1::Node>(stored) else {
        return;
    };
    let model = Node::from_k8s(&typed);
    w.engine.nodes.insert(model.name.clone(), model.clone());
    w.sim.upsert_node(model);
    w.project();
}

/// A node deleted through the API: the simulator removes it (and garbage-collects its pods).
pub fn node_removed(w: &mut World, name: &str) {
    w.engine.nodes.remove(name);
    w.sim.remove_node(name);
    w.project();
}

/// A node created through the API without a Ready condition is registered by a simulated
/// kubelet: Ready, with node info and addresses, as a joining node would be.
pub fn kubelet_registers(w: &mut World, mut obj: Value) -> Value {
    let has_ready = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready");
    if !has_ready {
        let (_, name) = key(&obj);
        let model = Node {
            name,
            ready: Some(true),
            ..Node::default()
        };
        let now = w.now();
        let template = node_object(&mut w.engine, &model, now);
        obj["status"] = template["status"].clone();
        if obj["spec"]["podCIDR"].is_null() {
            obj["spec"]["podCIDR"] = template["spec"]["podCIDR"].clone();
        }
    }
    cordon_taint(obj)
}

/// The node lifecycle controller's taint for `spec.unschedulable` (cordon), added or removed.
pub fn cordon_taint(mut obj: Value) -> Value {
    let cordoned = obj["spec"]["unschedulable"] == Value::Bool(true);
    let mut taints = obj["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let has = taints.iter().any(|t| t["key"] == UNSCHEDULABLE_TAINT);
    if cordoned && !has {
        taints.push(json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}));
    } else if !cordoned && has {
        taints.retain(|t| t["key"] != UNSCHEDULABLE_TAINT);
    } else {
        return obj;
    }
    if taints.is_empty() {
        if let Some(spec) = obj["spec"].as_object_mut() {
            spec.remove("taints");
        }
    } else {
        obj["spec"]["taints"] = Value::Array(taints);
    }
    obj
}

fn taints_json(node: &Node) -> Value {
    Value::Array(
        node.taints
            .iter()
            .map(|t| {
                let mut v = json!({"key": t.key, "effect": t.effect.as_str()});
                if !t.value.is_empty() {
                    v["value"] = json!(t.value);
                }
                v
            })
            .collect(),
    )
}

fn ready_condition(ready: bool, since: Timestamp) -> Value {
    let t = since.to_string();
    if ready {
        json!({"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
               "lastHeartbeatTime": t, "lastTransitionTime": t})
    } else {
        json!({"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
               "lastHeartbeatTime": t, "lastTransitionTime": t})
    }
}

/// A full Node object for a simulated node.
fn node_object(engine: &mut Engine, node: &Node, created: Timestamp) -> Value {
    let label = |k: &str, default: &str| {
        node.labels
            .get(k)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let i = engine.index(&node.name);
    let t = created.to_string();
    let pressure = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "False", "reason": reason, "message": message, "lastHeartbeatTime": t, "lastTransitionTime": t});
    let capacity =
        json!({"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"});
    let mut spec = json!({"podCIDR": format!("10.{}.{}.0/24", 128 + i / 256, i % 256),
                          "providerID": format!("daemonsync-sim://{}", node.name)});
    if !node.taints.is_empty() {
        spec["taints"] = taints_json(node);
    }
    if node.unschedulable {
        spec["unschedulable"] = json!(true);
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node.labels, "creationTimestamp": t, "generation": 1,
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": spec,
        "status": {
            "conditions": [
                pressure("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                pressure("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                pressure("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ready_condition(node.ready != Some(false), created),
            ],
            "addresses": [{"type": "InternalIP", "address": engine.node_ip(&node.name)},
                          {"type": "Hostname", "address": node.name}],
            "capacity": capacity, "allocatable": capacity,
            "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                         "osImage": "daemonsync simulated node", "kernelVersion": "6.1.0-sim",
                         "containerRuntimeVersion": "containerd://1.7.0-sim",
                         "operatingSystem": label("kubernetes.io/os", "linux"),
                         "architecture": label("kubernetes.io/arch", "amd64"),
                         "machineID": "", "systemUUID": "", "bootID": ""},
        },
    })
}

/// A stored node updated to a simulator change (churn: labels, taints, readiness).
fn apply_model(obj: &Value, node: &Node, now: Timestamp) -> Value {
    let mut o = obj.clone();
    o["metadata"]["labels"] = json!(node.labels);
    if node.taints.is_empty() {
        if let Some(spec) = o["spec"].as_object_mut() {
            spec.remove("taints");
        }
    } else {
        o["spec"]["taints"] = taints_json(node);
    }
    let ready = node.ready != Some(false);
    let conditions = o["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let was = conditions
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"] == "True");
    if was != Some(ready) {
        let mut conditions: Vec<Value> = conditions
            .into_iter()
            .filter(|c| c["type"] != "Ready")
            .collect();
        conditions.push(ready_condition(ready, now));
        o["status"]["conditions"] = Value::Array(conditions);
    }
    o
}

/// A stored pod updated to what the simulator decided about it.
fn project_pod(w: &mut World, obj: &Value, p: &SimPod, grace_secs: u64) -> Value {
    let mut o = obj.clone();
    let model = &p.pod;
    if let Some(node) = &model.node_name {
        o["spec"]["nodeName"] = json!(node);
    }
    if let Some(t) = model.deletion_timestamp
        && !o["metadata"]["deletionTimestamp"].is_string()
    {
        o["metadata"]["deletionTimestamp"] = json!(t.to_string());
        o["metadata"]["deletionGracePeriodSeconds"] = json!(grace_secs);
    }
    let created = o["metadata"]["creationTimestamp"].clone();
    let containers: Vec<(String, String)> = o["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_string(),
                c["image"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let cond = |t: &str, status: bool, at: &Value| json!({"type": t, "status": if status { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": at});
    let Some(node) = model.node_name.clone() else {
        let n = w.sim.nodes.len();
        o["status"] = json!({"phase": "Pending", "qosClass": "BestEffort", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": null, "lastTransitionTime": created,
            "message": format!("0/{n} nodes are available: {n} node(s) didn't match Pod's node affinity/selector.")}]});
        return o;
    };
    let host_ip = w.engine.node_ip(&node);
    let mut status = json!({"phase": model.phase.as_str(), "qosClass": "BestEffort", "hostIP": host_ip,
                            "hostIPs": [{"ip": host_ip}], "startTime": created});
    let scheduled = cond("PodScheduled", true, &created);
    if p.waiting_for_node || (!p.started && model.ready.is_none()) {
        // Bound; the kubelet has not reported the pod yet (starting, or its node is NotReady).
        status["conditions"] = json!([scheduled]);
        if !p.waiting_for_node {
            status["conditions"] = json!([
                cond("Initialized", true, &created),
                cond("Ready", false, &created),
                cond("ContainersReady", false, &created),
                scheduled
            ]);
            status["containerStatuses"] = container_statuses(
                &containers,
                |_| json!({"waiting": {"reason": "ContainerCreating"}}),
                false,
            );
        }
        o["status"] = status;
        return o;
    }
    let ready = model.ready.is_some_and(|r| r.status);
    let since = model
        .ready
        .and_then(|r| r.last_transition)
        .map(|t| json!(t.to_string()))
        .unwrap_or(created.clone());
    let has_ip = model.phase == PodPhase::Running;
    if has_ip {
        let existing = o["status"]["podIP"].as_str().map(String::from);
        let host_network = o["spec"]["hostNetwork"] == Value::Bool(true);
        let ip = existing.unwrap_or_else(|| {
            if host_network {
                host_ip.clone()
            } else {
                w.engine.pod_ip(&node)
            }
        });
        status["podIP"] = json!(ip);
        status["podIPs"] = json!([{"ip": ip}]);
    }
    status["conditions"] = json!([
        cond("Initialized", true, &created),
        cond("Ready", ready, &since),
        cond("ContainersReady", ready, &since),
        scheduled
    ]);
    status["containerStatuses"] = match &model.waiting_reason {
        Some(reason) => container_statuses(
            &containers,
            |image| {
                let message = if reason.contains("Image") {
                    format!("Back-off pulling image {image:?}")
                } else {
                    "back-off restarting failed container".to_string()
                };
                json!({"waiting": {"reason": reason, "message": message}})
            },
            false,
        ),
        None => container_statuses(
            &containers,
            |_| json!({"running": {"startedAt": since}}),
            ready,
        ),
    };
    o["status"] = status;
    o
}

fn container_statuses(
    containers: &[(String, String)],
    state: impl Fn(&str) -> Value,
    ready: bool,
) -> Value {
    Value::Array(
        containers
            .iter()
            .map(|(name, image)| {
                let st = state(image);
                json!({"name": name, "image": image, "imageID": "", "ready": ready, "restartCount": 0,
                       "started": st.get("running").is_some(), "state": st})
            })
            .collect(),
    )
}

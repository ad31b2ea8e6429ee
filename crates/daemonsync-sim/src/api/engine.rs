//! The bridge between the API store and the simulator, which decides what pods and nodes do:
//! pods written through the API are admitted by the simulator's scheduler and run by its
//! kubelet on the wall clock; node edits made through the API (labels, taints, cordon,
//! readiness, removal) are fed back to it; whatever the simulator changes (binding, start,
//! failures, termination, churn, pod garbage collection) is projected onto the stored objects
//! as the kubelet and controllers of a real cluster would write it.

use super::api_time;
use super::error::ApiError;
use super::kinds::Kind;
use super::store::Owners;
use super::world::World;
use crate::config::Readiness;
use crate::kubelet::KUBELET_CONDITIONS;
use crate::lifecycle::is_condition_taint;
use crate::model::{Node, Pod, Taint, Timestamp};
use crate::scheduler::NodeResources;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

const PODS: &str = "/pods";
const NODES: &str = "/nodes";
/// The taint the node lifecycle controller keeps on cordoned nodes.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// The projection's memory: last projected pods and nodes, and address allocation.
#[derive(Debug, Default)]
pub struct Engine {
    /// The simulator's resourceVersion of each pod when last projected.
    pods: HashMap<(String, String), u64>,
    node_index: BTreeMap<String, u32>,
    next_pod_ip: HashMap<String, u32>,
    /// Creation time of the nodes found at start-up (they predate the server).
    pub boot_time: Option<Timestamp>,
    /// The kubelet version nodes report (the cluster's own version).
    pub kubelet_version: String,
}

impl Engine {
    /// A projection that has shown nothing yet, of nodes whose kubelets report `version`.
    pub fn new(kubelet_version: String) -> Self {
        Engine {
            kubelet_version,
            ..Engine::default()
        }
    }

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
    let touched: Vec<String> = std::mem::take(&mut w.nodes.changed_nodes)
        .into_iter()
        .collect();
    let (changed, gone): (Vec<String>, Vec<String>) = touched
        .into_iter()
        .partition(|n| w.nodes.nodes.contains_key(n));
    let changed: Vec<Node> = changed
        .iter()
        .filter_map(|n| w.nodes.nodes.get(n).cloned())
        .collect();
    for node in changed {
        let images = w
            .nodes
            .node_images
            .get(&node.name)
            .cloned()
            .unwrap_or_default();
        let condition_since = w.nodes.condition_taints_added.get(&node.name).copied();
        let mut obj = match w.store.get(NODES, "", &node.name) {
            Some(e) => {
                let readiness = w.nodes.readiness(&node.name);
                apply_model(&e.object(), &node, readiness, now, condition_since)
            }
            None => {
                let created = w.engine.boot_time.unwrap_or(now);
                let readiness = w.nodes.readiness(&node.name);
                let resources = w
                    .nodes
                    .resources
                    .get(&node.name)
                    .cloned()
                    .unwrap_or_else(NodeResources::default_node);
                let mut obj = node_object(&mut w.engine, &node, readiness, &resources, created);
                if !node.taints.is_empty() {
                    obj["spec"]["taints"] = taints_json(&node, &Value::Null, condition_since);
                }
                obj["metadata"]["uid"] = json!(w.new_uid());
                if w.engine.boot_time.is_none() {
                    registered(w, &obj, &images);
                }
                obj
            }
        };
        set_images(&mut obj, &images);
        let unchanged = w
            .store
            .get(NODES, "", &node.name)
            .is_some_and(|e| *e.object() == obj);
        if !unchanged {
            w.store.put(NODES, obj, None);
        }
    }
    for name in gone {
        w.store.remove(NODES, "", &name);
    }

    let mut dirty: Vec<(String, String)> = w.nodes.changed_pods.drain().collect();
    dirty.sort();
    let updates: Vec<((String, String), u64)> = dirty
        .iter()
        .filter_map(|k| w.nodes.pods.get(k).map(|p| (k, p.rv)))
        .filter(|(k, rv)| w.engine.pods.get(*k) != Some(rv))
        .map(|(k, rv)| (k.clone(), rv))
        .collect();
    let removed: Vec<(String, String)> = dirty
        .into_iter()
        .filter(|k| !w.nodes.pods.contains_key(k) && w.engine.pods.contains_key(k))
        .collect();
    for (k, rv) in updates {
        if let Some(e) = w.store.get(PODS, &k.0, &k.1) {
            let stored = e.object();
            let obj = project_pod(w, &stored, &k);
            if obj != *stored {
                w.store.put(PODS, obj, None);
            }
        }
        w.engine.pods.insert(k, rv);
    }
    for (ns, name) in &removed {
        w.engine.pods.remove(&(ns.clone(), name.clone()));
        let held = w.store.get(PODS, ns, name).is_some_and(|e| {
            e.object()["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        });
        if !held {
            w.store.remove(PODS, ns, name);
        }
    }
    !removed.is_empty()
}

/// A node's `status.images`, as its kubelet reports the images it holds.
fn set_images(obj: &mut Value, images: &BTreeSet<String>) {
    if images.is_empty() {
        if let Some(status) = obj["status"].as_object_mut() {
            status.remove("images");
        }
        return;
    }
    obj["status"]["images"] = images
        .iter()
        .map(|i| json!({"names": [i], "sizeBytes": 0}))
        .collect();
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
    w.nodes.create(pod).map_err(|e| match e {
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
    let name = w.nodes.insert_running(pod, since)?;
    obj["metadata"]["name"] = json!(name);
    obj["metadata"]["uid"] = json!(w.new_uid());
    obj["metadata"]["creationTimestamp"] = json!(api_time(since));
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
    if let Some(p) = w.nodes.pods.get_mut(&key(stored)) {
        p.pod.labels = model.labels;
        p.pod.controller = model.controller;
    }
}

/// Deletes a pod through the simulator (graceful termination with the request's `grace`, else
/// the pod's own; at once when unbound, or when `force`). Returns its last state.
pub fn delete_pod(
    w: &mut World,
    namespace: &str,
    name: &str,
    force: bool,
    grace: Option<i64>,
) -> Arc<Value> {
    let k = (namespace.to_string(), name.to_string());
    let before = w
        .store
        .get(PODS, namespace, name)
        .map(|e| e.object())
        .unwrap_or_default();
    if force {
        w.nodes.remove_pod(&k);
        if w.engine.pods.contains_key(&k) {
            w.project();
        } else {
            w.store.remove(PODS, namespace, name);
        }
    } else {
        let _ = w.nodes.delete_with_grace(namespace, name, grace);
        w.project();
    }
    w.store
        .get(PODS, namespace, name)
        .map(|e| e.object())
        .unwrap_or(before)
}

/// A pod whose finalizers are done leaves the simulator too.
pub fn forget_pod(w: &mut World, namespace: &str, name: &str) {
    let k = (namespace.to_string(), name.to_string());
    w.nodes.remove_pod(&k);
    w.engine.pods.remove(&k);
}

/// A node joining after start-up (a churn entry) registers as its kubelet would, through the
/// API: the create, admitted by TaintNodesAtCreation
/// ([`taint_new_node_not_ready`](super::admission::taint_new_node_not_ready)), is stored with
/// `node.kubernetes.io/not-ready:NoSchedule` and without the node lifecycle controller's
/// condition taints, which `node` (the object as the controller leaves it) is then written
/// with: a watch sees the node join tainted and the controller's write after it, as for a
/// Node created through the API. Nodes that were there at the start registered long ago.
fn registered(w: &mut World, node: &Value, images: &BTreeSet<String>) {
    let mut created = node.clone();
    let own: Vec<Value> = created["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| !is_condition_taint(t["key"].as_str().unwrap_or_default()))
        .cloned()
        .collect();
    created["spec"]["taints"] = Value::Array(own);
    super::admission::taint_new_node_not_ready(&mut created);
    set_images(&mut created, images);
    w.store.put(NODES, created, None);
}

/// A node written through the API: the simulator sees its labels, taints and readiness.
pub fn node_written(w: &mut World, stored: &Value) {
    let Some(typed) = typed::<k8s_openapi::api::core::v1::Node>(stored) else {
        return;
    };
    let model = Node::from_k8s(&typed);
    w.nodes.upsert_node(model, readiness_of(stored));
    w.project();
}

/// A node deleted through the API: the simulator removes it (and garbage-collects its pods).
pub fn node_removed(w: &mut World, name: &str) {
    w.nodes.remove_node(name);
    w.project();
}

/// A node created through the API without a Ready condition is registered by a simulated
/// kubelet: Ready, with node info and addresses, as a joining node would be.
pub fn kubelet_registers(w: &mut World, mut obj: Value) -> Value {
    let now = w.now();
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
        let template = node_object(
            &mut w.engine,
            &model,
            Readiness::True,
            &NodeResources::default_node(),
            now,
        );
        obj["status"] = template["status"].clone();
        if obj["spec"]["podCIDR"].is_null() {
            obj["spec"]["podCIDR"] = template["spec"]["podCIDR"].clone();
        }
    }
    cordon_taint(obj, now)
}

/// The node lifecycle controller's taint for `spec.unschedulable` (cordon), added (with
/// `timeAdded`, as it stamps every taint it adds) or removed.
pub fn cordon_taint(mut obj: Value, now: Timestamp) -> Value {
    let cordoned = obj["spec"]["unschedulable"] == Value::Bool(true);
    let mut taints = obj["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let has = taints.iter().any(|t| t["key"] == UNSCHEDULABLE_TAINT);
    if cordoned && !has {
        taints.push(json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule",
                           "timeAdded": api_time(now)}));
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

/// A node's taints as its object shows them: the node lifecycle controller's not-ready and
/// unreachable taints with the time it added them (`condition_since`), the others with the
/// `timeAdded` their writer gave them in `shown` (the taints the object showed), if any.
fn taints_json(node: &Node, shown: &Value, condition_since: Option<Timestamp>) -> Value {
    let written = |t: &Taint| {
        shown
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| {
                s["key"] == t.key.as_str()
                    && s["effect"] == t.effect.as_str()
                    && s["value"].as_str().unwrap_or_default() == t.value
            })
            .and_then(|s| s.get("timeAdded"))
            .filter(|a| !a.is_null())
            .cloned()
    };
    Value::Array(
        node.taints
            .iter()
            .map(|t| {
                let mut v = json!({"key": t.key, "effect": t.effect.as_str()});
                if !t.value.is_empty() {
                    v["value"] = json!(t.value);
                }
                let added = if is_condition_taint(&t.key) {
                    condition_since.map(|since| json!(api_time(since)))
                } else {
                    written(t)
                };
                if let Some(added) = added {
                    v["timeAdded"] = added;
                }
                v
            })
            .collect(),
    )
}

/// The Ready condition as the kubelet (True, False) or the node lifecycle controller
/// (Unknown) writes it.
fn ready_condition(readiness: Readiness, since: Timestamp) -> Value {
    let t = api_time(since);
    let (status, reason, message) = match readiness {
        Readiness::True => ("True", "KubeletReady", "kubelet is posting ready status"),
        Readiness::False => (
            "False",
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false \
             reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not \
             initialized",
        ),
        Readiness::Unknown => (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        ),
    };
    json!({"type": "Ready", "status": status, "reason": reason, "message": message,
           "lastHeartbeatTime": t, "lastTransitionTime": t})
}

/// The Ready condition a stored node shows.
pub fn readiness_of(obj: &Value) -> Option<Readiness> {
    let status = obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")?["status"]
        .as_str()?
        .to_string();
    Some(match status.as_str() {
        "True" => Readiness::True,
        "False" => Readiness::False,
        _ => Readiness::Unknown,
    })
}

/// A full Node object for a simulated node.
fn node_object(
    engine: &mut Engine,
    node: &Node,
    readiness: Readiness,
    resources: &NodeResources,
    created: Timestamp,
) -> Value {
    let label = |k: &str, default: &str| {
        node.labels
            .get(k)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let i = engine.index(&node.name);
    let t = api_time(created);
    let pressure = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "False", "reason": reason, "message": message, "lastHeartbeatTime": t, "lastTransitionTime": t});
    let capacity = NodeResources::to_json(&resources.capacity);
    let allocatable = NodeResources::to_json(&resources.allocatable);
    let kubelet = engine.kubelet_version.clone();
    let mut spec = json!({"podCIDR": format!("10.{}.{}.0/24", 128 + i / 256, i % 256),
                          "providerID": format!("daemonsync-sim://{}", node.name)});
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
                ready_condition(readiness, created),
            ],
            "addresses": [{"type": "InternalIP", "address": engine.node_ip(&node.name)},
                          {"type": "Hostname", "address": node.name}],
            "capacity": capacity, "allocatable": allocatable,
            "nodeInfo": {"kubeletVersion": kubelet, "kubeProxyVersion": kubelet,
                         "osImage": "daemonsync simulated node", "kernelVersion": "6.1.0-sim",
                         "containerRuntimeVersion": "containerd://1.7.0-sim",
                         "operatingSystem": label("kubernetes.io/os", "linux"),
                         "architecture": label("kubernetes.io/arch", "amd64"),
                         "machineID": "", "systemUUID": "", "bootID": ""},
        },
    })
}

/// A stored node updated to a simulator change (churn: labels, taints, readiness).
fn apply_model(
    obj: &Value,
    node: &Node,
    readiness: Readiness,
    now: Timestamp,
    condition_since: Option<Timestamp>,
) -> Value {
    let mut o = obj.clone();
    o["metadata"]["labels"] = json!(node.labels);
    if node.taints.is_empty() {
        if let Some(spec) = o["spec"].as_object_mut() {
            spec.remove("taints");
        }
    } else {
        o["spec"]["taints"] = taints_json(node, &obj["spec"]["taints"], condition_since);
    }
    let conditions = o["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if readiness_of(&o) != Some(readiness) {
        let mut conditions: Vec<Value> = conditions
            .into_iter()
            .filter(|c| c["type"] != "Ready")
            .collect();
        conditions.push(ready_condition(readiness, now));
        o["status"]["conditions"] = Value::Array(conditions);
    }
    o
}

/// A stored pod updated to what the simulator decided about it: binding, deletion, and the
/// status its kubelet reports (with addresses). Conditions others wrote (readiness gates) stay
/// as they wrote them.
fn project_pod(w: &mut World, obj: &Value, key: &(String, String)) -> Value {
    let mut o = obj.clone();
    let Some(p) = w.nodes.pods.get(key) else {
        return o;
    };
    let model = &p.pod;
    if let Some(node) = &model.node_name {
        o["spec"]["nodeName"] = json!(node);
    }
    if let Some(t) = model.deletion_timestamp
        && !o["metadata"]["deletionTimestamp"].is_string()
    {
        o["metadata"]["deletionTimestamp"] = json!(api_time(t));
        o["metadata"]["deletionGracePeriodSeconds"] = json!(p.deletion_grace.unwrap_or(0));
    }
    let mut status = w.nodes.status_json(p);
    let node = model.node_name.clone();
    let addressed = !p.waiting_for_node && crate::status::has_ip(model.phase);
    if let Some(node) = node {
        let host_ip = w.engine.node_ip(&node);
        status["hostIP"] = json!(host_ip);
        status["hostIPs"] = json!([{"ip": host_ip}]);
        if addressed {
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
    }
    let written: Vec<Value> = o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| {
            c["type"]
                .as_str()
                .is_some_and(|t| !KUBELET_CONDITIONS.contains(&t))
        })
        .cloned()
        .collect();
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for c in conditions.iter_mut() {
            if let Some(kept) = written.iter().find(|x| x["type"] == c["type"]) {
                *c = kept.clone();
            }
        }
    }
    status["qosClass"] = json!(qos_class(&o["spec"]));
    o["status"] = status;
    o
}

/// The QoS class the API server gives a pod at creation (upstream `ComputePodQOS`, over cpu and
/// memory of its containers and init containers): BestEffort without requests or limits,
/// Guaranteed when every container limits both and the requests equal the limits, else
/// Burstable.
fn qos_class(spec: &Value) -> &'static str {
    let amounts = |list: &Value| -> BTreeMap<String, i64> {
        list.as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| *name == "cpu" || *name == "memory")
            .filter_map(|(name, q)| {
                let text = match q {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let q = crate::model::Quantity::parse(&text).ok()?;
                let v = if name == "cpu" {
                    q.milli_value()
                } else {
                    q.value()
                };
                (v > 0).then(|| (name.clone(), v))
            })
            .collect()
    };
    let (mut requests, mut limits) = (BTreeMap::<String, i64>::new(), BTreeMap::new());
    let mut guaranteed = true;
    let containers = spec["containers"].as_array().into_iter().flatten();
    let init = spec["initContainers"].as_array().into_iter().flatten();
    for c in containers.chain(init) {
        let limited = amounts(&c["resources"]["limits"]);
        guaranteed &= limited.contains_key("cpu") && limited.contains_key("memory");
        for (k, v) in amounts(&c["resources"]["requests"]) {
            *requests.entry(k).or_default() += v;
        }
        for (k, v) in limited {
            *limits.entry(k).or_default() += v;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        "BestEffort"
    } else if guaranteed && requests == limits {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// What upstream's pod update validation says of a change to other fields of a pod's spec.
const FORBIDDEN_POD_UPDATE: &str = "Forbidden: pod updates may not change fields other than \
    `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,\
    `spec.tolerations` (only additions to existing tolerations),\
    `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Sets `key` of `obj` to `value`, or removes it when `value` is null.
fn set_or_remove(obj: &mut Value, key: &str, value: &Value) {
    if value.is_null() {
        if let Some(m) = obj.as_object_mut() {
            m.remove(key);
        }
    } else {
        obj[key] = value.clone();
    }
}

/// The paths (`spec.containers[0].command`) where two values differ, at most `limit`.
fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let null = Value::Null;
                differences(
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    &format!("{path}.{k}"),
                    out,
                    limit,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                differences(x, y, &format!("{path}[{i}]"), out, limit);
            }
        }
        _ => out.push(path.to_string()),
    }
}

/// Upstream's pod update validation: a pod's spec may only change its containers' images
/// (and a few scheduling fields). Returns the images changed, `(container, image)`, or the
/// field and message of the 422.
pub fn check_pod_update(
    current: &Value,
    next: &Value,
) -> Result<Vec<(String, String)>, (String, String)> {
    let old = &current["spec"];
    let mut munged = next["spec"].clone();
    let mut images = Vec::new();
    for list in ["initContainers", "containers"] {
        let (Some(o), Some(n)) = (
            old[list].as_array(),
            munged.get_mut(list).and_then(Value::as_array_mut),
        ) else {
            continue;
        };
        if o.len() != n.len() {
            continue;
        }
        for (oc, nc) in o.iter().zip(n.iter_mut()) {
            if oc["name"] == nc["name"] && oc["image"] != nc["image"] {
                if let (Some(name), Some(image)) = (nc["name"].as_str(), nc["image"].as_str()) {
                    images.push((name.to_string(), image.to_string()));
                }
                set_or_remove(nc, "image", &oc["image"]);
            }
        }
    }
    // activeDeadlineSeconds may be set, or lowered.
    let (old_deadline, new_deadline) = (
        old["activeDeadlineSeconds"].as_i64(),
        munged["activeDeadlineSeconds"].as_i64(),
    );
    if new_deadline.is_some_and(|n| n > 0 && old_deadline.is_none_or(|o| n <= o)) {
        set_or_remove(
            &mut munged,
            "activeDeadlineSeconds",
            &old["activeDeadlineSeconds"],
        );
    }
    // Tolerations may be added.
    let (old_tolerations, new_tolerations) = (
        old["tolerations"].as_array().cloned().unwrap_or_default(),
        munged["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    if old_tolerations.iter().all(|t| new_tolerations.contains(t)) {
        set_or_remove(&mut munged, "tolerations", &old["tolerations"]);
    }
    // Scheduling gates may be removed.
    let (old_gates, new_gates) = (
        old["schedulingGates"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        munged["schedulingGates"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    if new_gates.iter().all(|g| old_gates.contains(g)) {
        set_or_remove(&mut munged, "schedulingGates", &old["schedulingGates"]);
    }
    // A negative grace period may become 1.
    if old["terminationGracePeriodSeconds"]
        .as_i64()
        .is_some_and(|g| g < 0)
        && munged["terminationGracePeriodSeconds"].as_i64() == Some(1)
    {
        munged["terminationGracePeriodSeconds"] = old["terminationGracePeriodSeconds"].clone();
    }
    // A pod the scheduler has not bound yet may be given its node.
    if old["nodeName"].as_str().is_none_or(str::is_empty) {
        set_or_remove(&mut munged, "nodeName", &old["nodeName"]);
    }
    if munged != *old {
        let mut changed = Vec::new();
        differences(old, &munged, "spec", &mut changed, 5);
        return Err((
            "spec".into(),
            format!("{FORBIDDEN_POD_UPDATE}\n  changed: {}", changed.join(", ")),
        ));
    }
    Ok(images)
}

/// A pod's spec or status is written (after validation, before it is stored): its changed
/// images restart their containers, the conditions written to its status are the
/// simulator's, and the status the kubelet reports is shown at once.
pub fn pod_updated(
    w: &mut World,
    key: &(String, String),
    next: Value,
    status_only: bool,
    images: &[(String, String)],
) -> Value {
    if status_only {
        let conditions = next["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let t = c["type"].as_str()?.to_string();
                let since = c["lastTransitionTime"]
                    .as_str()
                    .and_then(|s| s.parse::<Timestamp>().ok());
                Some((t, c["status"] == "True", since))
            })
            .collect();
        w.nodes.replace_conditions(key, conditions);
    } else if !images.is_empty() {
        w.nodes.change_images(key, images);
    }
    let projected = project_pod(w, &next, key);
    if let Some(p) = w.nodes.pods.get(key) {
        w.engine.pods.insert(key.clone(), p.rv);
    }
    projected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_class_follows_the_requests_and_limits_of_every_container() {
        let pod = |resources: Value| json!({"containers": [{"name": "c", "resources": resources}]});
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&pod(json!({"requests": {"cpu": "5"}}))),
            "Burstable"
        );
        let both = json!({"cpu": "500m", "memory": "1Gi"});
        assert_eq!(
            qos_class(&pod(json!({"requests": both, "limits": both}))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&pod(
                json!({"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": both})
            )),
            "Burstable"
        );
        let mut with_init = pod(json!({"requests": both, "limits": both}));
        with_init["initContainers"] = json!([{"name": "i", "resources": {}}]);
        assert_eq!(qos_class(&with_init), "Burstable");
    }
}

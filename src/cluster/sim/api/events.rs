//! Events the cluster's own components record (`core/v1` Events, as client-go's recorder
//! writes them): the scheduler's `FailedScheduling`, the taint eviction controller's
//! `TaintManagerEviction`, the DaemonSet controller's `SuccessfulCreate` and the like. An
//! event that repeats (same object, component, reason and message) counts up instead of
//! being written again, as client-go's event correlator does.

use super::world::{World, WriteParams};
use serde_json::{Value, json};

/// What makes two events the same: namespace, involved kind and name, reason, message,
/// component.
pub type EventKey = (String, String, String, String, String, String);

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Involved {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// Namespace (empty for cluster-scoped objects: their events go to `default`).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID, when known.
    pub uid: String,
}

impl Involved {
    /// The object `obj` (as stored).
    pub fn of(obj: &Value) -> Self {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Involved {
            api_version: s(&obj["apiVersion"]),
            kind: s(&obj["kind"]),
            namespace: s(&obj["metadata"]["namespace"]),
            name: s(&obj["metadata"]["name"]),
            uid: s(&obj["metadata"]["uid"]),
        }
    }
}

/// Records an event: `type_` `Normal` or `Warning`, by `component`.
pub fn emit(
    w: &mut World,
    involved: &Involved,
    type_: &str,
    reason: &str,
    component: &str,
    message: &str,
) {
    let namespace = if involved.namespace.is_empty() {
        "default".to_string()
    } else {
        involved.namespace.clone()
    };
    let kind = w.kind("", "v1", "events");
    let now = super::api_time(w.now());
    let key = (
        namespace.clone(),
        involved.kind.clone(),
        involved.name.clone(),
        reason.to_string(),
        message.to_string(),
        component.to_string(),
    );
    if let Some(name) = w.event_names.get(&key).cloned()
        && let Some(e) = w.store.get(&kind.storage, &namespace, &name)
    {
        let mut next = (*e.object).clone();
        next["count"] = json!(next["count"].as_i64().unwrap_or(1) + 1);
        next["lastTimestamp"] = json!(now);
        w.store.put(&kind.storage, next, None);
        return;
    }
    let name = format!("{}.{:016x}", involved.name, w.next_random());
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"apiVersion": involved.api_version, "kind": involved.kind,
                           "namespace": involved.namespace, "name": involved.name,
                           "uid": involved.uid},
        "reason": reason, "message": message, "type": type_,
        "source": {"component": component},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "reportingComponent": component, "reportingInstance": "",
    });
    let params = WriteParams {
        manager: component.to_string(),
        ..WriteParams::default()
    };
    if w.create(&kind, &namespace, event, &params, None).is_ok() {
        w.event_names.insert(key, name);
    }
}

/// Records the events the simulated nodes' components emitted since the last time.
pub fn record_node_events(w: &mut World) {
    let outbox = std::mem::take(&mut w.nodes.outbox);
    for e in outbox {
        let involved = match e.kind {
            "Pod" => match w.store.get("/pods", &e.namespace, &e.name) {
                Some(p) => Involved::of(&p.object.clone()),
                None => continue,
            },
            _ => Involved {
                api_version: "v1".into(),
                kind: e.kind.into(),
                namespace: e.namespace.clone(),
                name: e.name.clone(),
                uid: String::new(),
            },
        };
        emit(w, &involved, e.type_, e.reason, e.reporter, &e.message);
    }
}

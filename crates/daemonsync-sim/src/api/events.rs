//! Events the cluster's own components record (`core/v1` Events): the scheduler's
//! `FailedScheduling`, the taint eviction controller's `TaintManagerEviction`, the DaemonSet
//! controller's `SuccessfulCreate` and the like.
//!
//! kube-controller-manager's controllers record through client-go's `EventCorrelator`
//! ([`emit`]), in three steps: similar events (same source, object, type and reason) with more
//! than ten different messages within ten minutes are combined into one whose message reads
//! `(combined from similar events): ` and the latest message; an event seen before (same
//! source, object, type, reason and message) counts up (`count`, `lastTimestamp`) instead of
//! being written again; and a source may write 25 events about one object at once, then one
//! every five minutes (the others are dropped, though they still count). Clients that record
//! through the `events.k8s.io` API, the scheduler among them, have no such correlator: an
//! event they repeat counts up ([`emit_counted`]).

use super::world::{World, WriteParams};
use crate::model::Timestamp;
use jiff::SignedDuration;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};

/// Different messages of similar events seen within [`AGGREGATE_WINDOW`] from which on they
/// are combined.
const AGGREGATE_AFTER: usize = 10;
/// How long similar events are remembered since the last one.
const AGGREGATE_WINDOW: SignedDuration = SignedDuration::from_secs(600);
/// The message prefix of a combined event.
const COMBINED: &str = "(combined from similar events): ";
/// Events a source may write about one object at once.
const SPAM_BURST: f64 = 25.0;
/// Then, one event every this many seconds.
const SPAM_REFILL_SECS: f64 = 300.0;

/// What the cluster's event recorders remember.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Events recorded, by what makes them the same: their name and count.
    logged: HashMap<String, (String, i64)>,
    /// Similar events, by what makes them similar: their messages, and when last seen.
    similar: HashMap<String, (BTreeSet<String>, Timestamp)>,
    /// Each source and object's allowance: tokens, and when last refilled.
    allowance: HashMap<String, (f64, Timestamp)>,
}

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

/// Records an event as kube-controller-manager's controllers do, through client-go's
/// `EventCorrelator`: `type_` `Normal` or `Warning`, by `component`.
pub fn emit(
    w: &mut World,
    involved: &Involved,
    type_: &str,
    reason: &str,
    component: &str,
    message: &str,
) {
    let now = w.now();
    let object = [
        component,
        &involved.kind,
        &involved.namespace,
        &involved.name,
        &involved.uid,
        &involved.api_version,
    ]
    .join("\u{0}");
    // Similar events: with too many different messages, one combined event stands for them.
    let similar_key = [object.as_str(), type_, reason].join("\u{0}");
    let (messages, last) = w
        .recorder
        .similar
        .entry(similar_key.clone())
        .or_insert_with(|| (BTreeSet::new(), now));
    if now.duration_since(*last) > AGGREGATE_WINDOW {
        messages.clear();
    }
    messages.insert(message.to_string());
    *last = now;
    let (key, message) = if messages.len() < AGGREGATE_AFTER {
        (
            event_key(involved, type_, reason, component, message),
            message.to_string(),
        )
    } else {
        // Upstream lets go of one message (any) to stay under the limit.
        let first = messages.iter().next().cloned();
        if let Some(first) = first {
            messages.remove(&first);
        }
        (similar_key, format!("{COMBINED}{message}"))
    };
    let observed = observe(w, &key, involved);
    // The source's allowance for the object: an event over it is dropped, though counted.
    let (tokens, refilled) = w
        .recorder
        .allowance
        .entry(object)
        .or_insert((SPAM_BURST, now));
    let elapsed = now.duration_since(*refilled).as_secs_f64().max(0.0);
    *tokens = (*tokens + elapsed / SPAM_REFILL_SECS).min(SPAM_BURST);
    *refilled = now;
    if *tokens < 1.0 {
        return;
    }
    *tokens -= 1.0;
    write(w, involved, type_, reason, component, &message, observed);
}

/// Records an event as a client of the `events.k8s.io` API does (the scheduler; daemonsync
/// in-process): an event seen before counts up, nothing is combined or dropped.
pub fn emit_counted(
    w: &mut World,
    involved: &Involved,
    type_: &str,
    reason: &str,
    component: &str,
    message: &str,
) {
    let key = event_key(involved, type_, reason, component, message);
    let observed = observe(w, &key, involved);
    write(w, involved, type_, reason, component, message, observed);
}

/// What makes two events the same (client-go's `getEventKey`).
fn event_key(
    involved: &Involved,
    type_: &str,
    reason: &str,
    component: &str,
    message: &str,
) -> String {
    [
        component,
        &involved.kind,
        &involved.namespace,
        &involved.name,
        &involved.uid,
        &involved.api_version,
        type_,
        reason,
        message,
    ]
    .join("\u{0}")
}

/// An occurrence of the event `key`: its name and count so far (the first has a new name).
fn observe(w: &mut World, key: &str, involved: &Involved) -> (String, i64) {
    let observed = match w.recorder.logged.get(key) {
        Some((name, count)) => (name.clone(), count + 1),
        None => (format!("{}.{:016x}", involved.name, w.next_random()), 1),
    };
    w.recorder.logged.insert(key.to_string(), observed.clone());
    observed
}

/// Writes an occurrence of an event, `(name, count)`: the event of that name counts up, or is
/// created (again, if it was deleted since).
fn write(
    w: &mut World,
    involved: &Involved,
    type_: &str,
    reason: &str,
    component: &str,
    message: &str,
    (name, count): (String, i64),
) {
    let namespace = if involved.namespace.is_empty() {
        "default".to_string()
    } else {
        involved.namespace.clone()
    };
    let kind = w.kind("", "v1", "events");
    let now = super::api_time(w.now());
    if let Some(e) = w.store.get(&kind.storage, &namespace, &name) {
        let mut next = (*e.object()).clone();
        next["count"] = json!(count);
        next["lastTimestamp"] = json!(now);
        next["message"] = json!(message);
        w.store.put(&kind.storage, next, None);
        return;
    }
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"apiVersion": involved.api_version, "kind": involved.kind,
                           "namespace": involved.namespace, "name": involved.name,
                           "uid": involved.uid},
        "reason": reason, "message": message, "type": type_,
        "source": {"component": component},
        "firstTimestamp": now, "lastTimestamp": now, "count": count,
        "reportingComponent": component, "reportingInstance": "",
    });
    let params = WriteParams {
        manager: component.to_string(),
        ..WriteParams::default()
    };
    let _ = w.create(&kind, &namespace, event, &params, None);
}

/// The scheduler's event source: it records through the `events.k8s.io` API.
const SCHEDULER: &str = "default-scheduler";

/// Records the events the simulated nodes' components emitted since the last time.
pub fn record_node_events(w: &mut World) {
    let outbox = std::mem::take(&mut w.nodes.outbox);
    for e in outbox {
        let involved = match e.kind {
            "Pod" => match w.store.get("/pods", &e.namespace, &e.name) {
                Some(p) => Involved::of(&p.object()),
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
        if e.reporter == SCHEDULER {
            emit_counted(w, &involved, e.type_, e.reason, e.reporter, &e.message);
        } else {
            emit(w, &involved, e.type_, e.reason, e.reporter, &e.message);
        }
    }
}

//! Between stored objects and what a kind shows: `apiVersion`/`kind` follow the request, and
//! `events.k8s.io/v1` events are core/v1 events renamed (one store, as in the API server).

use super::kinds::{Kind, View};
use serde_json::{Map, Value};

/// `events.k8s.io/v1` field ↔ core/v1 field (upstream `pkg/apis/events/v1/conversion.go`).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedCount", "count"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("reportingController", "reportingComponent"),
];

fn rename(obj: Value, to_core: bool) -> Value {
    let Value::Object(m) = obj else { return obj };
    let mut out = Map::new();
    for (k, v) in m {
        let renamed = EVENT_FIELDS.iter().find_map(|(v1, core)| {
            if to_core {
                (k == *v1).then_some(*core)
            } else {
                (k == *core).then_some(*v1)
            }
        });
        out.insert(renamed.map(String::from).unwrap_or(k), v);
    }
    Value::Object(out)
}

/// The stored object as `kind` shows it.
pub fn to_view(kind: &Kind, stored: &Value) -> Value {
    let mut v = match kind.view {
        View::Native => stored.clone(),
        View::EventsV1 => rename(stored.clone(), false),
    };
    v["apiVersion"] = Value::String(kind.api_version());
    v["kind"] = Value::String(kind.kind.clone());
    v
}

/// An object written through `kind`, as stored.
pub fn from_view(kind: &Kind, written: Value) -> Value {
    match kind.view {
        View::Native => written,
        View::EventsV1 => {
            let mut v = rename(written, true);
            v["apiVersion"] = Value::String("v1".into());
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_v1_and_core_events_are_one_object_renamed() {
        let kinds = super::super::kinds::builtins();
        let v1 = kinds.iter().find(|k| k.group == "events.k8s.io").unwrap();
        let core = kinds
            .iter()
            .find(|k| k.group.is_empty() && k.plural == "events")
            .unwrap();
        let written = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "hi",
            "regarding": {"kind": "Node", "name": "n1"}, "reportingController": "c", "reason": "R"});
        let stored = from_view(v1, written.clone());
        assert_eq!(stored["message"], "hi");
        assert_eq!(stored["involvedObject"]["name"], "n1");
        assert_eq!(stored["reportingComponent"], "c");
        assert_eq!(to_view(core, &stored)["apiVersion"], "v1");
        assert_eq!(to_view(v1, &stored), written);
    }
}

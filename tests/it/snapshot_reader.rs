//! The snapshot reader against the conversion it replaces: every Node and Pod read straight
//! into the planner's model must equal what deserializing the full API object and converting
//! it (`Node::from_k8s`, `Pod::from_k8s`) gives, from JSON and from YAML alike; and its errors
//! still name the file, the object and the field.

#[allow(dead_code)]
#[path = "../../examples/gen_dump/dump.rs"]
mod dump;

use daemonsync::cluster::{MAX_SNAPSHOT_BYTES, SnapshotError, load_snapshot};
use daemonsync::model::{Node, Pod};
use serde_json::{Value, json};
use std::path::Path;

/// A pod as a snapshot keeps it: what only an in-place write needs (`detail`) is left out.
fn planned(pod: &k8s_openapi::api::core::v1::Pod) -> Pod {
    // A snapshot only plans: what an in-place write needs, and the failure signals a rollout
    // halts on, are not read.
    Pod {
        detail: None,
        signals: None,
        ..Pod::from_k8s(pod)
    }
}

/// The observed nodes and pods as the full API objects convert to them.
fn through_api_objects(list: &Value) -> (Vec<Node>, Vec<Pod>) {
    let mut nodes = Vec::new();
    let mut pods = Vec::new();
    for item in list["items"].as_array().unwrap() {
        match item["kind"].as_str().unwrap() {
            "Node" => nodes.push(Node {
                images: Vec::new(),
                ..Node::from_k8s(&serde_json::from_value(item.clone()).unwrap())
            }),
            "Pod" => pods.push(planned(&serde_json::from_value(item.clone()).unwrap())),
            _ => {}
        }
    }
    // What the pods bound to each node request, as the snapshot reader adds them up.
    daemonsync::model::resources::count_requested(&mut nodes, &pods);
    (nodes, pods)
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_kubectl_dump_reads_as_the_full_objects_convert_from_json_and_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let mut json_text = Vec::new();
    dump::write_json(12, &mut json_text).unwrap();
    let mut yaml_text = Vec::new();
    dump::write_yaml(12, &mut yaml_text).unwrap();
    let list: Value = serde_json::from_slice(&json_text).unwrap();
    let (nodes, pods) = through_api_objects(&list);
    assert_eq!(nodes.len(), 12);
    assert!(pods.len() > 200, "{}", pods.len());
    for (name, text) in [("dump.json", &json_text), ("dump.yaml", &yaml_text)] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let observed = load_snapshot(&path).unwrap();
        assert_eq!(*observed.nodes, nodes, "{name}");
        assert!(observed.pods.iter().eq(&pods), "{name}");
        assert_eq!(observed.daemonsets.len(), dump::DAEMONSETS, "{name}");
    }
}

/// Objects that exercise every field the planner reads, and the shapes around them.
fn odd_objects() -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": null},
         "spec": {"taints": [{"key": "k", "effect": "NoExecute"}, {"key": "a", "value": "b", "effect": "PreferNoSchedule"}],
                  "unschedulable": true},
         "status": {"conditions": [{"type": "MemoryPressure", "status": "True"},
                                   {"type": "Ready", "status": "Unknown"}, {"type": "Ready", "status": "True"}]}},
        {"metadata": {"name": "late-type", "labels": {"a": "b"}}, "spec": {"taints": null},
         "status": {"conditions": [{"type": "Ready", "status": "True"}]}, "kind": "Node", "apiVersion": "v1"},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unbound", "namespace": "ns",
            "creationTimestamp": "2025-01-01T00:00:00Z", "deletionTimestamp": "2025-01-02T00:00:00.5Z",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "1", "controller": false},
                                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "2", "controller": true}]},
         "spec": {"nodeName": "", "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                                  {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]},
                                                   {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}},
         "status": {"phase": "Pending", "initContainerStatuses": [{"name": "i", "state": {"waiting": {}, "terminated": {"reason": "Error"}}}],
                    "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "PodInitializing"}}}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "two-values", "namespace": "ns"},
         "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}]}}}},
         "status": {"phase": "Evicted", "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2025-03-01T10:00:00+02:00"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nulls", "namespace": "ns", "labels": {"on": "yes"}},
         "spec": null, "status": null},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done", "namespace": "ns"},
         "spec": {"nodeName": "n1"},
         "status": {"phase": "Failed", "containerStatuses": [{"name": "c", "state": {"running": {}}},
                                                            {"name": "d", "state": {"terminated": {"reason": "OOMKilled"}}}]}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"items": "x"}},
        {"apiVersion": "v1", "kind": "PodList", "items": [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nested", "namespace": "ns2"}}]}
    ]})
}

#[test]
fn every_field_the_planner_reads_matches_the_full_objects_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let list = odd_objects();
    let (nodes, mut pods) = through_api_objects(&list);
    pods.push(planned(
        &serde_json::from_value(list["items"][8]["items"][0].clone()).unwrap(),
    ));
    let json_path = write(
        dir.path(),
        "odd.json",
        &serde_json::to_string_pretty(&list).unwrap(),
    );
    let yaml_path = write(
        dir.path(),
        "odd.yaml",
        &serde_saphyr::to_string(&list).unwrap(),
    );
    for path in [json_path, yaml_path] {
        let observed = load_snapshot(&path).unwrap();
        assert_eq!(*observed.nodes, nodes, "{}", path.display());
        assert!(observed.pods.iter().eq(&pods), "{}", path.display());
    }
}

/// Reads `text` as snapshot `name` and returns the error.
fn refused(name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), name, text);
    let err = load_snapshot(&path).unwrap_err().to_string();
    assert!(
        err.contains(name),
        "the error does not name the file: {err}"
    );
    err
}

#[test]
fn a_field_of_the_wrong_type_is_named_with_its_object_in_json_and_yaml() {
    let mut list = odd_objects();
    list["items"][6]["status"]["phase"] = json!(["Failed"]);
    let text = serde_json::to_string_pretty(&list).unwrap();
    for (name, text) in [
        ("bad.json", text.clone()),
        ("bad.yaml", serde_saphyr::to_string(&list).unwrap()),
    ] {
        let err = refused(name, &text);
        assert!(err.contains("Pod ns/done (document 1, items[6])"), "{err}");
        assert!(err.contains("field `status.phase`"), "{err}");
    }
    let mut list = odd_objects();
    list["items"][8]["items"][0]["metadata"]["labels"] = json!({"a": 1});
    // Keys in sorted order: the name comes after the labels, so the position names the pod.
    let err = refused("nested.json", &serde_json::to_string(&list).unwrap());
    assert!(
        err.contains("Pod (unnamed) (document 1, items[8].items[0])"),
        "{err}"
    );
    assert!(err.contains("field `metadata.labels.a`"), "{err}");
}

#[test]
fn a_key_named_twice_is_refused_in_json_too_even_where_nothing_is_read() {
    let list = serde_json::to_string(&odd_objects()).unwrap();
    let twice = list.replacen(
        "\"data\":{\"items\":\"x\"}",
        "\"data\":{\"items\":\"x\",\"items\":\"y\"}",
        1,
    );
    assert_ne!(twice, list);
    let err = refused("twice.json", &twice);
    assert!(err.contains("duplicate key \"items\""), "{err}");
    let twice = list.replacen(
        "\"labels\":{\"on\":\"yes\"}",
        "\"labels\":{\"on\":\"yes\",\"on\":\"no\"}",
        1,
    );
    assert_ne!(twice, list);
    let err = refused("labels.json", &twice);
    assert!(err.contains("duplicate key \"on\""), "{err}");
}

#[test]
fn an_invalid_taint_effect_and_a_duplicate_object_are_still_refused() {
    let mut list = odd_objects();
    list["items"][1]["spec"]["taints"][1]["effect"] = json!("Sometimes");
    let err = refused("taint.json", &serde_json::to_string(&list).unwrap());
    assert!(err.contains("Node n1 (document 1, items[1])"), "{err}");
    assert!(err.contains("spec.taints[1].effect"), "{err}");
    let mut list = odd_objects();
    list["items"][6]["metadata"]["name"] = json!("two-values");
    let err = refused("dup.json", &serde_json::to_string(&list).unwrap());
    assert!(
        err.contains("Pod ns/two-values (document 1, items[6]) duplicates Pod ns/two-values (document 1, items[4])"),
        "{err}"
    );
}

#[test]
fn the_size_cap_is_memory_sized_not_two_hundred_and_fifty_six_mebibytes() {
    assert_eq!(MAX_SNAPSHOT_BYTES, 4 * 1024 * 1024 * 1024);
    let f = tempfile::NamedTempFile::new().unwrap();
    f.as_file().set_len(MAX_SNAPSHOT_BYTES + 1).unwrap();
    let err = load_snapshot(f.path()).unwrap_err();
    assert!(matches!(err, SnapshotError::TooLarge { .. }), "{err}");
}

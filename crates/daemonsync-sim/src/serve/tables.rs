//! Server-side Tables, so `kubectl get` prints the real columns: kubectl has no client-side
//! printers for these kinds and shows only NAME and AGE without them.

use crate::api::kinds::{Kind, PrinterColumn, TableKind};
use crate::model::Timestamp;
use serde_json::{Value, json};

/// True when the `Accept` header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept.contains("as=Table")
}

/// Upstream `duration.HumanDuration`: `5s`, `3m20s`, `5h`, `3d`, `2y`.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let minutes = s / 60;
    if minutes < 10 {
        return match s % 60 {
            0 => format!("{minutes}m"),
            r => format!("{minutes}m{r}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = s / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return match days {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The age of a timestamp string, or `<unknown>`.
fn age(ts: &Value, now: Timestamp) -> String {
    ts.as_str()
        .and_then(|s| s.parse::<Timestamp>().ok())
        .map(|t| human_duration(now.as_second() - t.as_second()))
        .unwrap_or_else(|| "<unknown>".into())
}

fn col(name: &str, type_: &str, format: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

fn name_col() -> Value {
    col(
        "Name",
        "string",
        "name",
        0,
        "Name must be unique within a namespace.",
    )
}

fn age_col() -> Value {
    col(
        "Age",
        "string",
        "",
        0,
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    )
}

fn str_or(v: &Value, default: &str) -> String {
    match v.as_str() {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => default.to_string(),
    }
}

/// The column definitions of a kind.
pub fn columns(kind: &Kind) -> Vec<Value> {
    match &kind.table {
        TableKind::Pods => vec![
            name_col(),
            col(
                "Ready",
                "string",
                "",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            col(
                "Status",
                "string",
                "",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            col(
                "Restarts",
                "string",
                "",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            age_col(),
            col(
                "IP",
                "string",
                "",
                1,
                "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            ),
            col(
                "Node",
                "string",
                "",
                1,
                "NodeName is a request to schedule this pod onto a specific node.",
            ),
            col(
                "Nominated Node",
                "string",
                "",
                1,
                "nominatedNodeName is set only when this pod preempts other pods on the node.",
            ),
            col(
                "Readiness Gates",
                "string",
                "",
                1,
                "If specified, all readiness gates will be evaluated for pod readiness.",
            ),
        ],
        TableKind::Nodes => vec![
            name_col(),
            col("Status", "string", "", 0, "The status of the node"),
            col("Roles", "string", "", 0, "The roles of the node"),
            age_col(),
            col(
                "Version",
                "string",
                "",
                0,
                "Kubelet Version reported by the node.",
            ),
            col(
                "Internal-IP",
                "string",
                "",
                1,
                "List of internal IPs for the node.",
            ),
            col(
                "External-IP",
                "string",
                "",
                1,
                "List of external IPs for the node.",
            ),
            col(
                "OS-Image",
                "string",
                "",
                1,
                "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
            ),
            col(
                "Kernel-Version",
                "string",
                "",
                1,
                "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
            ),
            col(
                "Container-Runtime",
                "string",
                "",
                1,
                "Container runtime version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
            ),
        ],
        TableKind::Events => vec![
            col(
                "Last Seen",
                "string",
                "",
                0,
                "Time when this Event was last seen",
            ),
            col(
                "Type",
                "string",
                "",
                0,
                "Type of this event (Normal, Warning), new types could be added in the future.",
            ),
            col(
                "Reason",
                "string",
                "",
                0,
                "A machine-readable description of why this event was generated.",
            ),
            col("Object", "string", "", 0, "The object this Event is about."),
            col(
                "Subobject",
                "string",
                "",
                1,
                "The subobject this Event is about",
            ),
            col(
                "Source",
                "string",
                "",
                1,
                "The component reporting this event.",
            ),
            col(
                "Message",
                "string",
                "",
                0,
                "A human-readable description of the status of this operation.",
            ),
            col(
                "First Seen",
                "string",
                "",
                1,
                "The first time this Event was seen",
            ),
            col(
                "Count",
                "string",
                "",
                1,
                "The number of times this event has occurred.",
            ),
            col("Name", "string", "name", 1, "Name of the event"),
        ],
        TableKind::Namespaces => vec![
            name_col(),
            col("Status", "string", "", 0, "The status of the namespace"),
            age_col(),
        ],
        TableKind::Leases => vec![
            name_col(),
            col("Holder", "string", "", 0, "The holder of the lease"),
            age_col(),
        ],
        TableKind::Printer(cols) => std::iter::once(name_col())
            .chain(
                cols.iter()
                    .map(|c| col(&c.name, &c.type_, &c.format, c.priority, &c.description)),
            )
            .collect(),
        TableKind::DaemonSets => vec![
            name_col(),
            col(
                "Desired",
                "integer",
                "",
                0,
                "The number of nodes that should be running the daemon pod.",
            ),
            col(
                "Current",
                "integer",
                "",
                0,
                "The number of nodes running at least one daemon pod and are supposed to.",
            ),
            col(
                "Ready",
                "integer",
                "",
                0,
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
            ),
            col(
                "Up-to-date",
                "integer",
                "",
                0,
                "The total number of nodes that are running updated daemon pod",
            ),
            col(
                "Available",
                "integer",
                "",
                0,
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
            ),
            col(
                "Node Selector",
                "string",
                "",
                0,
                "NodeSelector is a selector which must be true for the pod to fit on a node.",
            ),
            age_col(),
            col(
                "Containers",
                "string",
                "",
                1,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                "",
                1,
                "Images referenced by each container in the template.",
            ),
            col(
                "Selector",
                "string",
                "",
                1,
                "A label query over pods that are managed by the daemon set.",
            ),
        ],
        TableKind::ControllerRevisions => vec![
            name_col(),
            col("Controller", "string", "", 0, "Controller of the object."),
            col(
                "Revision",
                "integer",
                "",
                0,
                "Revision indicates the revision of the state represented by Data.",
            ),
            age_col(),
        ],
        TableKind::PodDisruptionBudgets => vec![
            name_col(),
            col(
                "Min Available",
                "string",
                "",
                0,
                "The minimum number of pods that must be available.",
            ),
            col(
                "Max Unavailable",
                "string",
                "",
                0,
                "The maximum number of pods that may be unavailable.",
            ),
            col(
                "Allowed Disruptions",
                "integer",
                "",
                0,
                "Calculated number of pods that may be disrupted at this time.",
            ),
            age_col(),
        ],
        TableKind::ConfigMaps => vec![
            name_col(),
            col(
                "Data",
                "string",
                "",
                0,
                "Data contains the configuration data.",
            ),
            age_col(),
        ],
        TableKind::Secrets => vec![
            name_col(),
            col("Type", "string", "", 0, "The type of the secret."),
            col("Data", "string", "", 0, "Data contains the secret data."),
            age_col(),
        ],
        TableKind::ServiceAccounts => vec![
            name_col(),
            col(
                "Secrets",
                "string",
                "",
                0,
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            ),
            age_col(),
        ],
        TableKind::Generic => vec![
            name_col(),
            col(
                "Created At",
                "date",
                "",
                0,
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
            ),
        ],
    }
}

/// The cells of one object's row.
pub fn cells(kind: &Kind, obj: &Value, now: Timestamp) -> Vec<Value> {
    let meta = &obj["metadata"];
    let name = json!(meta["name"].as_str().unwrap_or_default());
    let created = age(&meta["creationTimestamp"], now);
    match &kind.table {
        TableKind::Pods => pod_cells(obj, name, created, now),
        TableKind::Nodes => node_cells(obj, name, created),
        TableKind::Events => event_cells(obj, now),
        TableKind::Namespaces => vec![
            name,
            json!(str_or(&obj["status"]["phase"], "Active")),
            json!(created),
        ],
        TableKind::Leases => vec![
            name,
            json!(str_or(&obj["spec"]["holderIdentity"], "")),
            json!(created),
        ],
        TableKind::Printer(cols) => std::iter::once(name)
            .chain(cols.iter().map(|c| printer_cell(c, obj, now)))
            .collect(),
        TableKind::DaemonSets => daemonset_cells(obj, name, created),
        TableKind::ControllerRevisions => {
            let controller = obj["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["controller"] == Value::Bool(true))
                .map(|r| {
                    let group = r["apiVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .split('/')
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    let kind = r["kind"].as_str().unwrap_or_default().to_lowercase();
                    let kind = if group.contains('.') || group == "apps" {
                        format!("{kind}.{group}")
                    } else {
                        kind
                    };
                    format!("{kind}/{}", r["name"].as_str().unwrap_or_default())
                })
                .unwrap_or_else(|| "<none>".into());
            vec![
                name,
                json!(controller),
                obj["revision"].clone(),
                json!(created),
            ]
        }
        TableKind::PodDisruptionBudgets => {
            let shown = |v: &Value| match v {
                Value::Null => "N/A".to_string(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            vec![
                name,
                json!(shown(&obj["spec"]["minAvailable"])),
                json!(shown(&obj["spec"]["maxUnavailable"])),
                json!(obj["status"]["disruptionsAllowed"].as_i64().unwrap_or(0)),
                json!(created),
            ]
        }
        TableKind::ConfigMaps => {
            let count = |k: &str| obj[k].as_object().map_or(0, |m| m.len());
            vec![
                name,
                json!((count("data") + count("binaryData")).to_string()),
                json!(created),
            ]
        }
        TableKind::Secrets => {
            let data = obj["data"].as_object().map_or(0, |m| m.len());
            vec![
                name,
                json!(str_or(&obj["type"], "Opaque")),
                json!(data.to_string()),
                json!(created),
            ]
        }
        TableKind::ServiceAccounts => vec![
            name,
            json!(obj["secrets"].as_array().map_or(0, Vec::len)),
            json!(created),
        ],
        // Upstream's default table convertor: the creation time in RFC 3339, whole seconds.
        TableKind::Generic => vec![
            name,
            json!(
                meta["creationTimestamp"]
                    .as_str()
                    .and_then(|s| s.parse::<Timestamp>().ok())
                    .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                    .unwrap_or_default()
            ),
        ],
    }
}

/// Upstream `printDaemonSet`: the status counters, the template's node selector, and with
/// `-o wide` its containers, images and the selector.
fn daemonset_cells(obj: &Value, name: Value, created: String) -> Vec<Value> {
    let status = &obj["status"];
    let n = |k: &str| json!(status[k].as_i64().unwrap_or(0));
    let node_selector = obj["spec"]["template"]["spec"]["nodeSelector"]
        .as_object()
        .map(|m| {
            let mut pairs: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            pairs.sort();
            pairs.join(",")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".into());
    let containers: Vec<&Value> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| c[field].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    let selector = crate::model::LabelSelector::from_k8s(
        &serde_json::from_value(obj["spec"]["selector"].clone()).unwrap_or_default(),
    )
    .map(|s| s.to_string())
    .unwrap_or_default();
    vec![
        name,
        n("desiredNumberScheduled"),
        n("currentNumberScheduled"),
        n("numberReady"),
        n("updatedNumberScheduled"),
        n("numberAvailable"),
        json!(node_selector),
        json!(created),
        json!(join("name")),
        json!(join("image")),
        json!(selector),
    ]
}

/// Upstream `printPod`: READY counts ready running containers; STATUS is the phase, or what
/// a failing init container or container waits for or ended with; RESTARTS adds how long ago
/// the last restart was; READINESS GATES counts the gates whose condition is True.
fn pod_cells(obj: &Value, name: Value, created: String, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let status = &obj["status"];
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let statuses = list(&status["containerStatuses"]);
    let init_statuses = list(&status["initContainerStatuses"]);
    let total = spec["containers"].as_array().map_or(0, Vec::len);
    let init_total = spec["initContainers"].as_array().map_or(0, Vec::len);
    let mut reason = str_or(&status["reason"], &str_or(&status["phase"], "Pending"));
    let mut restarts: i64 = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut note_restart = |c: &Value| {
        let finished = c["lastState"]["terminated"]["finishedAt"]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok());
        if let Some(t) = finished
            && last_restart.is_none_or(|l| l < t)
        {
            last_restart = Some(t);
        }
    };
    let mut initializing = false;
    for (i, c) in init_statuses.iter().enumerate() {
        restarts += c["restartCount"].as_i64().unwrap_or(0);
        note_restart(c);
        let state = &c["state"];
        let terminated = &state["terminated"];
        let waiting = state["waiting"]["reason"].as_str().unwrap_or_default();
        if terminated.is_object() && terminated["exitCode"].as_i64() == Some(0) {
            continue;
        }
        reason = if terminated.is_object() {
            match terminated["reason"].as_str() {
                Some(r) if !r.is_empty() => format!("Init:{r}"),
                _ => format!("Init:ExitCode:{}", terminated["exitCode"]),
            }
        } else if !waiting.is_empty() && waiting != "PodInitializing" {
            format!("Init:{waiting}")
        } else {
            format!("Init:{i}/{init_total}")
        };
        initializing = true;
        break;
    }
    let initialized = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Initialized" && c["status"] == "True");
    let mut ready = 0;
    if !initializing || initialized {
        restarts = 0;
        let mut running = false;
        for c in statuses.iter().rev() {
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            note_restart(c);
            let state = &c["state"];
            if let Some(r) = state["waiting"]["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
            {
                reason = r.to_string();
            } else if let Some(r) = state["terminated"]["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
            {
                reason = r.to_string();
            } else if c["ready"] == Value::Bool(true) && state["running"].is_object() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            reason = "Running".into();
        }
    }
    if obj["metadata"]["deletionTimestamp"].is_string() {
        reason = "Terminating".into();
    }
    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!(
            "{restarts} ({} ago)",
            human_duration(now.as_second() - t.as_second())
        ),
        _ => restarts.to_string(),
    };
    let gates: Vec<&str> = spec["readinessGates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["conditionType"].as_str())
        .collect();
    let gates_true = gates
        .iter()
        .filter(|g| {
            status["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == **g)
                .is_some_and(|c| c["status"] == "True")
        })
        .count();
    vec![
        name,
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        json!(created),
        json!(str_or(&status["podIP"], "<none>")),
        json!(str_or(&spec["nodeName"], "<none>")),
        json!(str_or(&status["nominatedNodeName"], "<none>")),
        json!(if gates.is_empty() {
            "<none>".to_string()
        } else {
            format!("{gates_true}/{}", gates.len())
        }),
    ]
}

fn node_cells(obj: &Value, name: Value, created: String) -> Vec<Value> {
    let status = &obj["status"];
    let ready = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"].as_str().unwrap_or_default().to_string());
    let mut state = match ready.as_deref() {
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if obj["spec"]["unschedulable"] == Value::Bool(true) {
        state.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = obj["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            k.strip_prefix("node-role.kubernetes.io/")
                .map(String::from)
                .or_else(|| {
                    (k == "kubernetes.io/role").then(|| v.as_str().unwrap_or_default().to_string())
                })
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort();
    let address = |t: &str| {
        status["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["type"] == t)
            .filter_map(|a| a["address"].as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    let none = |s: String| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s
        }
    };
    let info = &status["nodeInfo"];
    vec![
        name,
        json!(state),
        json!(if roles.is_empty() {
            "<none>".to_string()
        } else {
            roles.join(",")
        }),
        json!(created),
        json!(str_or(&info["kubeletVersion"], "")),
        json!(none(address("InternalIP"))),
        json!(none(address("ExternalIP"))),
        json!(str_or(&info["osImage"], "<unknown>")),
        json!(str_or(&info["kernelVersion"], "<unknown>")),
        json!(str_or(&info["containerRuntimeVersion"], "<unknown>")),
    ]
}

fn event_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let first_non_empty = |vals: &[&Value]| {
        vals.iter()
            .find(|v| v.is_string())
            .map(|v| (*v).clone())
            .unwrap_or(Value::Null)
    };
    let last = first_non_empty(&[
        &obj["series"]["lastObservedTime"],
        &obj["lastTimestamp"],
        &obj["eventTime"],
        &obj["metadata"]["creationTimestamp"],
    ]);
    let first = first_non_empty(&[
        &obj["firstTimestamp"],
        &obj["eventTime"],
        &obj["metadata"]["creationTimestamp"],
    ]);
    let inv = &obj["involvedObject"];
    let object = format!(
        "{}/{}",
        inv["kind"].as_str().unwrap_or_default().to_lowercase(),
        inv["name"].as_str().unwrap_or_default()
    );
    let source = obj["source"]["component"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or_else(|| obj["reportingComponent"].as_str())
        .unwrap_or_default();
    let count = obj["series"]["count"]
        .as_i64()
        .or_else(|| obj["count"].as_i64())
        .unwrap_or(1);
    vec![
        json!(age(&last, now)),
        json!(obj["type"].as_str().unwrap_or_default()),
        json!(obj["reason"].as_str().unwrap_or_default()),
        json!(object),
        json!(inv["fieldPath"].as_str().unwrap_or_default()),
        json!(source),
        json!(obj["message"].as_str().unwrap_or_default()),
        json!(age(&first, now)),
        json!(count.to_string()),
        json!(obj["metadata"]["name"].as_str().unwrap_or_default()),
    ]
}

/// The value at a simple JSONPath (`.status.numberReady`, `.spec.items[0].name`,
/// `{.metadata.name}`).
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur = obj;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (field, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        for idx in indexes.split('[').filter(|s| !s.is_empty()) {
            let n: usize = idx.trim_end_matches(']').parse().ok()?;
            cur = cur.get(n)?;
        }
    }
    Some(cur).filter(|v| !v.is_null())
}

/// A custom resource's cell: numbers and booleans as JSON values, dates humanised, missing as
/// `null` (printed blank), as the CRD table convertor does.
fn printer_cell(c: &PrinterColumn, obj: &Value, now: Timestamp) -> Value {
    let Some(v) = json_path(obj, &c.json_path) else {
        return Value::Null;
    };
    match c.type_.as_str() {
        "date" => json!(age(v, now)),
        "string" => match v {
            Value::String(s) => json!(s),
            other => json!(other.to_string()),
        },
        _ => v.clone(),
    }
}

/// A row: cells plus the object's metadata (kubectl needs it for `-A` and `--show-labels`).
pub fn row(kind: &Kind, obj: &Value, now: Timestamp) -> Value {
    json!({
        "cells": cells(kind, obj, now),
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": obj["metadata"]},
    })
}

/// A Table of `objs` at resourceVersion `rv`; `headers: false` for watch events after the
/// first (the API server sends column definitions once).
pub fn table(kind: &Kind, objs: &[&Value], rv: u64, now: Timestamp, headers: bool) -> Value {
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv.to_string()},
        "columnDefinitions": if headers { Value::Array(columns(kind)) } else { Value::Null },
        "rows": objs.iter().map(|o| row(kind, o, now)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        let cases = [
            (5, "5s"),
            (119, "119s"),
            (200, "3m20s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (9 * 3600, "9h"),
            (3 * 86400, "3d"),
            (3 * 86400 + 3600 * 5, "3d5h"),
            (30 * 86400, "30d"),
            (800 * 86400, "2y70d"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
    }

    #[test]
    fn service_accounts_and_other_kinds_read_as_upstream_prints_them() {
        let kinds = crate::api::kinds::builtins();
        let kind = |plural: &str| kinds.iter().find(|k| k.plural == plural).unwrap();
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let created = "2026-01-01T00:00:00.123456789Z";
        let sa = json!({"metadata": {"name": "robot", "creationTimestamp": created},
                        "secrets": [{"name": "robot-token"}]});
        let sa_kind = kind("serviceaccounts");
        let headers: Vec<Value> = columns(sa_kind).iter().map(|c| c["name"].clone()).collect();
        assert_eq!(headers, [json!("Name"), json!("Secrets"), json!("Age")]);
        assert_eq!(
            cells(sa_kind, &sa, now),
            [json!("robot"), json!(1), json!("60s")]
        );
        let crd = json!({"metadata": {"name": "x.example.com", "creationTimestamp": created}});
        assert_eq!(
            cells(kind("customresourcedefinitions"), &crd, now),
            [json!("x.example.com"), json!("2026-01-01T00:00:00Z")]
        );
    }

    #[test]
    fn json_paths_find_nested_fields_and_indexes() {
        let v = json!({"status": {"n": 3, "conds": [{"type": "Ready"}]}});
        assert_eq!(json_path(&v, ".status.n"), Some(&json!(3)));
        assert_eq!(
            json_path(&v, "{.status.conds[0].type}"),
            Some(&json!("Ready"))
        );
        assert_eq!(json_path(&v, ".status.missing"), None);
    }
}

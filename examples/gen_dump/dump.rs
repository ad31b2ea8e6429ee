//! A deterministic cluster dump in the shape `kubectl get nodes,pods,daemonsets,configmaps,services
//! -A -o json|yaml` prints: full Node objects (addresses, capacity, conditions, images,
//! nodeInfo), pods of 20 DaemonSets (affinity, tolerations, probes, volumes,
//! containerStatuses) and of other workloads, the 20 DaemonSets, ConfigMaps and Services.
//! Shared by the `gen_dump` example and the reader's tests.

use serde_json::{Value, json};
use std::io::{self, Write};

/// The number of DaemonSets in every dump.
pub const DAEMONSETS: usize = 20;

/// Namespace of DaemonSet `d`.
fn ds_namespace(d: usize) -> &'static str {
    ["kube-system", "monitoring", "logging", "security"][d % 4]
}

fn ds_name(d: usize) -> String {
    format!("agent-{d:02}")
}

/// DaemonSets 18 and 19 run on GPU nodes only (one node in ten).
fn runs_on(d: usize, node: usize) -> bool {
    d < 18 || node.is_multiple_of(10)
}

fn node_name(i: usize) -> String {
    format!(
        "ip-10-{}-{}-{}.eu-west-1.compute.internal",
        i / 65536 % 256,
        i / 256 % 256,
        i % 256
    )
}

const T0: &str = "2025-05-01T08:00:00Z";
const T1: &str = "2025-05-20T10:30:00Z";

/// A small deterministic pseudo-random stream (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn hex(&mut self, n: usize) -> String {
        let mut s = String::new();
        while s.len() < n {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(n);
        s
    }
    fn uid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }
}

/// Five to seven hex digits that look random and never repeat (an odd multiplier is a
/// bijection modulo 2^28).
fn unique_suffix(i: usize) -> String {
    format!("{:05x}", (i as u64).wrapping_mul(0x9E3_779B) & 0xFFF_FFFF)
}

fn node(i: usize, rng: &mut Rng) -> Value {
    let name = node_name(i);
    let gpu = i.is_multiple_of(10);
    let images: Vec<Value> = (0..30)
        .map(|k| {
            json!({
                "names": [
                    format!("registry.example.com/team-{}/image-{k}@sha256:{}", k % 7, rng.hex(64)),
                    format!("registry.example.com/team-{}/image-{k}:v1.{}.{}", k % 7, k % 5, i % 3),
                ],
                "sizeBytes": 10_000_000 + (rng.next() % 500_000_000),
            })
        })
        .collect();
    let conditions: Vec<Value> = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        (
            "Ready",
            if i % 97 == 5 { "False" } else { "True" },
            "KubeletReady",
        ),
    ]
    .iter()
    .map(|(t, s, r)| {
        json!({"type": t, "status": s, "reason": r, "lastHeartbeatTime": T1,
               "lastTransitionTime": T0, "message": format!("kubelet reports {r}")})
    })
    .collect();
    let mut spec = json!({
        "podCIDR": format!("100.{}.{}.0/24", i / 256 % 256, i % 256),
        "podCIDRs": [format!("100.{}.{}.0/24", i / 256 % 256, i % 256)],
        "providerID": format!("aws:///eu-west-1{}/i-{}", ["a", "b", "c"][i % 3], rng.hex(17)),
    });
    if gpu {
        spec["taints"] =
            json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": format!("10.0.{}.{}", i / 256 % 256, i % 256),
                "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-{}\"}}", rng.hex(17)),
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": T0,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": if gpu { "g5.xlarge" } else { "m6i.2xlarge" },
                "beta.kubernetes.io/os": "linux",
                "failure-domain.beta.kubernetes.io/region": "eu-west-1",
                "failure-domain.beta.kubernetes.io/zone": format!("eu-west-1{}", ["a", "b", "c"][i % 3]),
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": if gpu { "g5.xlarge" } else { "m6i.2xlarge" },
                "pool": if gpu { "gpu" } else { "general" },
                "topology.kubernetes.io/region": "eu-west-1",
                "topology.kubernetes.io/zone": format!("eu-west-1{}", ["a", "b", "c"][i % 3]),
            },
            "name": name,
            "resourceVersion": format!("{}", 1_000_000 + i),
            "uid": rng.uid(),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": format!("10.0.{}.{}", i / 256 % 256, i % 256), "type": "InternalIP"},
                {"address": name, "type": "InternalDNS"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": {"cpu": "7910m", "ephemeral-storage": "95491281146", "hugepages-1Gi": "0",
                            "hugepages-2Mi": "0", "memory": "31482748Ki", "pods": "110"},
            "capacity": {"cpu": "8", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                         "hugepages-2Mi": "0", "memory": "32527228Ki", "pods": "110"},
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": rng.uid(),
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.132-147.221.amzn2023.x86_64",
                "kubeProxyVersion": "v1.33.0-eks-802817d",
                "kubeletVersion": "v1.33.0-eks-802817d",
                "machineID": rng.hex(32),
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250512",
                "systemUUID": rng.uid(),
            },
        },
    })
}

/// The pod template of DaemonSet `d` (the manifest's and the live object's).
fn template(d: usize) -> Value {
    let name = ds_name(d);
    let mut spec = json!({
        "containers": [{
            "name": name,
            "image": format!("registry.example.com/agents/{name}:v2.{d}.0"),
            "args": [format!("--metrics-port={}", 9100 + d)],
            "env": [
                {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
            ],
            "ports": [{"containerPort": 9100 + d, "name": "metrics", "protocol": "TCP"}],
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 9100 + d, "scheme": "HTTP"},
                               "failureThreshold": 3, "periodSeconds": 5, "successThreshold": 1,
                               "timeoutSeconds": 1},
            "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "50m", "memory": "128Mi"}},
            "securityContext": {"readOnlyRootFilesystem": true},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
            "volumeMounts": [
                {"mountPath": "/etc/agent", "name": "config", "readOnly": true},
                {"mountPath": "/var/log", "name": "varlog"},
            ],
        }],
        "dnsPolicy": "ClusterFirst",
        "priorityClassName": "system-node-critical",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccountName": name,
        "terminationGracePeriodSeconds": 30,
        "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
        "volumes": [
            {"name": "config", "configMap": {"name": format!("{name}-config"), "defaultMode": 420}},
            {"name": "varlog", "hostPath": {"path": "/var/log", "type": ""}},
        ],
    });
    if d >= 18 {
        spec["nodeSelector"] = json!({"pool": "gpu"});
        spec["tolerations"] = json!([
            {"operator": "Exists", "effect": "NoExecute"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ]);
    }
    json!({"metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": spec})
}

/// The DaemonSet manifest `d`, as git holds it.
pub fn manifest(d: usize) -> Value {
    let name = ds_name(d);
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ds_namespace(d)},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": template(d),
        },
    })
}

fn live_daemonset(d: usize, nodes: usize, rng: &mut Rng) -> Value {
    let mut ds = manifest(d);
    let scheduled = (0..nodes).filter(|&n| runs_on(d, n)).count();
    let meta = &mut ds["metadata"];
    meta["uid"] = json!(ds_uid(d));
    meta["generation"] = json!(3);
    meta["creationTimestamp"] = json!(T0);
    meta["resourceVersion"] = json!(format!("{}", rng.next() % 10_000_000));
    meta["annotations"] = json!({"deprecated.daemonset.template.generation": "3"});
    ds["status"] = json!({
        "currentNumberScheduled": scheduled, "desiredNumberScheduled": scheduled,
        "numberAvailable": scheduled, "numberMisscheduled": 0, "numberReady": scheduled,
        "observedGeneration": 3, "updatedNumberScheduled": scheduled,
    });
    ds
}

fn ds_uid(d: usize) -> String {
    format!("0000d5e7-0000-4000-8000-{d:012}")
}

fn container_status(name: &str, image: &str, rng: &mut Rng, waiting: Option<&str>) -> Value {
    let state = match waiting {
        Some(reason) => {
            json!({"waiting": {"reason": reason, "message": "back-off 5m0s restarting failed container"}})
        }
        None => json!({"running": {"startedAt": T1}}),
    };
    json!({
        "containerID": format!("containerd://{}", rng.hex(64)),
        "image": image,
        "imageID": format!("{image}@sha256:{}", rng.hex(64)),
        "lastState": {},
        "name": name,
        "ready": waiting.is_none(),
        "restartCount": if waiting.is_some() { 12 } else { 0 },
        "started": waiting.is_none(),
        "state": state,
    })
}

fn pod_status(i: usize, ip: &str, statuses: Vec<Value>, ready: bool) -> Value {
    let ready_s = if ready { "True" } else { "False" };
    json!({
        "conditions": [
            {"lastProbeTime": null, "lastTransitionTime": T1, "status": "True", "type": "Initialized"},
            {"lastProbeTime": null, "lastTransitionTime": T1, "status": ready_s, "type": "Ready"},
            {"lastProbeTime": null, "lastTransitionTime": T1, "status": ready_s, "type": "ContainersReady"},
            {"lastProbeTime": null, "lastTransitionTime": T0, "status": "True", "type": "PodScheduled"},
        ],
        "containerStatuses": statuses,
        "hostIP": format!("10.0.{}.{}", i / 256 % 256, i % 256),
        "hostIPs": [{"ip": format!("10.0.{}.{}", i / 256 % 256, i % 256)}],
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "qosClass": "Burstable",
        "startTime": T0,
    })
}

fn daemon_pod(d: usize, n: usize, rng: &mut Rng) -> Value {
    let name = ds_name(d);
    let node = node_name(n);
    let tpl = template(d);
    let mut spec = tpl["spec"].clone();
    let image = spec["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // One pod in 50 runs the previous revision; one in 200 crash-loops.
    let old = (n + d) % 50 == 7;
    let waiting = ((n * 7 + d) % 200 == 3).then_some("CrashLoopBackOff");
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
    spec["nodeName"] = json!(node);
    spec["enableServiceLinks"] = json!(true);
    spec["preemptionPolicy"] = json!("PreemptLowerPriority");
    spec["priority"] = json!(2_000_001_000);
    spec["serviceAccount"] = json!(name);
    let mut tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
    for key in [
        "not-ready",
        "unreachable",
        "disk-pressure",
        "memory-pressure",
        "pid-pressure",
        "unschedulable",
    ] {
        tolerations.push(json!({"effect": if key == "not-ready" || key == "unreachable" { "NoExecute" } else { "NoSchedule" },
                                "key": format!("node.kubernetes.io/{key}"), "operator": "Exists"}));
    }
    spec["tolerations"] = Value::Array(tolerations);
    if let Some(volumes) = spec["volumes"].as_array_mut() {
        volumes.push(json!({"name": format!("kube-api-access-{}", &rng.hex(5)), "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        ]}}));
    }
    let suffix = unique_suffix(n * DAEMONSETS + d);
    let ip = format!("100.{}.{}.{}", n / 256 % 256, n % 256, d + 2);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": T0,
            "generateName": format!("{name}-"),
            "labels": {
                "app.kubernetes.io/name": name,
                "controller-revision-hash": if old { "5d8c7b9f4" } else { "7f6b8d9c5" },
                "pod-template-generation": if old { "2" } else { "3" },
            },
            "name": format!("{name}-{suffix}"),
            "namespace": ds_namespace(d),
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true,
                                 "kind": "DaemonSet", "name": name, "uid": ds_uid(d)}],
            "resourceVersion": format!("{}", rng.next() % 100_000_000),
            "uid": rng.uid(),
        },
        "spec": spec,
        "status": pod_status(n, &ip, vec![container_status(&name, &image, rng, waiting)], waiting.is_none()),
    })
}

/// A pod of another workload (a ReplicaSet's), on node `n`.
fn workload_pod(k: usize, n: usize, rng: &mut Rng) -> Value {
    let app = format!("service-{:03}", k % 250);
    let image = format!("registry.example.com/apps/{app}:2025.{}", k % 12);
    let ip = format!("100.{}.{}.{}", n / 256 % 256, n % 256, 100 + k % 100);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": T0,
            "generateName": format!("{app}-6c9f8b7d4-"),
            "labels": {"app": app, "pod-template-hash": "6c9f8b7d4"},
            "name": format!("{app}-6c9f8b7d4-{}", unique_suffix(k)),
            "namespace": format!("team-{}", k % 40),
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true,
                                 "kind": "ReplicaSet", "name": format!("{app}-6c9f8b7d4"), "uid": rng.uid()}],
            "resourceVersion": format!("{}", rng.next() % 100_000_000),
            "uid": rng.uid(),
        },
        "spec": {
            "containers": [{
                "name": "app", "image": image,
                "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                "env": [{"name": "PORT", "value": "8080"}, {"name": "LOG_FORMAT", "value": "json"}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                                   "failureThreshold": 3, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
                "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "512Mi"}},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}},
                                                     "topologyKey": "kubernetes.io/hostname"}}]}},
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "nodeName": node_name(n),
            "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {},
            "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
            ],
        },
        "status": pod_status(n, &ip, vec![container_status("app", &image, rng, None)], true),
    })
}

fn config_map(k: usize, rng: &mut Rng) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"config.yaml": format!("listen: :8080\nlevel: info\nid: {}\n", rng.hex(16))},
           "metadata": {"creationTimestamp": T0, "name": format!("config-{k}"), "namespace": format!("team-{}", k % 40),
                        "resourceVersion": format!("{}", rng.next() % 100_000_000), "uid": rng.uid()}})
}

fn service(k: usize, rng: &mut Rng) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"creationTimestamp": T0, "name": format!("service-{k:03}"), "namespace": format!("team-{}", k % 40),
                        "resourceVersion": format!("{}", rng.next() % 100_000_000), "uid": rng.uid()},
           "spec": {"clusterIP": format!("172.20.{}.{}", k / 256 % 256, k % 256), "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}],
                    "selector": {"app": format!("service-{:03}", k % 250)}, "type": "ClusterIP"}})
}

/// Every object of a dump of `nodes` nodes, in the order kubectl prints them (nodes, pods,
/// DaemonSets, then other kinds), each passed to `emit`.
pub fn objects(nodes: usize, mut emit: impl FnMut(Value) -> io::Result<()>) -> io::Result<()> {
    let mut rng = Rng(2025);
    for n in 0..nodes {
        emit(node(n, &mut rng))?;
    }
    let mut k = 0;
    for n in 0..nodes {
        for d in 0..DAEMONSETS {
            if runs_on(d, n) {
                emit(daemon_pod(d, n, &mut rng))?;
            }
        }
        for _ in 0..2 {
            emit(workload_pod(k, n, &mut rng))?;
            k += 1;
        }
    }
    for d in 0..DAEMONSETS {
        emit(live_daemonset(d, nodes, &mut rng))?;
    }
    for k in 0..nodes / 5 {
        emit(config_map(k, &mut rng))?;
        emit(service(k, &mut rng))?;
    }
    Ok(())
}

/// Writes the dump as `kubectl get -o json` does: one `List`, indented by four spaces.
pub fn write_json(nodes: usize, out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n")?;
    let mut first = true;
    objects(nodes, |v| {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        let mut buf = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(
            &mut buf,
            serde_json::ser::PrettyFormatter::with_indent(b"    "),
        );
        serde::Serialize::serialize(&v, &mut ser)?;
        // Indent the object two levels, as inside `items`.
        let text = String::from_utf8_lossy(&buf);
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                out.write_all(b"\n")?;
            }
            out.write_all(b"        ")?;
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    })?;
    out.write_all(b"\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n")
}

/// Writes the dump as `kubectl get -o yaml` does: one `List`, keys sorted, sequences not
/// indented under their key, strings quoted only where YAML would read another type.
pub fn write_yaml(nodes: usize, out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"apiVersion: v1\nitems:\n")?;
    objects(nodes, |v| {
        let mut s = String::new();
        yaml_item(&v, 0, &mut s);
        out.write_all(s.as_bytes())
    })?;
    out.write_all(b"kind: List\nmetadata:\n  resourceVersion: \"\"\n")
}

fn yaml_item(v: &Value, indent: usize, out: &mut String) {
    out.push_str(&" ".repeat(indent));
    out.push_str("- ");
    match v {
        Value::Object(m) if !m.is_empty() => yaml_map_body(v, indent + 2, true, out),
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            for x in a {
                yaml_item(x, indent + 2, out);
            }
        }
        _ => {
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

/// A mapping's entries at `indent`; the first one on the current line when `inline`.
fn yaml_map_body(v: &Value, indent: usize, inline: bool, out: &mut String) {
    let Value::Object(m) = v else { return };
    for (i, (k, x)) in m.iter().enumerate() {
        if i > 0 || !inline {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&scalar(&Value::String(k.clone())));
        out.push(':');
        match x {
            Value::Object(mm) if !mm.is_empty() => {
                out.push('\n');
                yaml_map_body(x, indent + 2, false, out);
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                for y in a {
                    yaml_item(y, indent, out);
                }
            }
            _ => {
                out.push(' ');
                out.push_str(&scalar(x));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        Value::String(s) => {
            let plain = !s.is_empty()
                && s.chars().all(|c| {
                    c.is_ascii_alphanumeric() || "-_./=@".contains(c) || c == ':' || c == ' '
                })
                && !s.starts_with(['-', ' ', ':', '@', '.'])
                && !s.ends_with([' ', ':'])
                && !s.contains(": ")
                && !matches!(
                    s.to_ascii_lowercase().as_str(),
                    "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
                )
                && s.parse::<f64>().is_err()
                && !s.starts_with(|c: char| c.is_ascii_digit());
            if plain {
                s.clone()
            } else if !s.contains(['\n', '\'', '"', '\\']) && !s.chars().any(char::is_control) {
                format!("'{s}'")
            } else {
                serde_json::to_string(s).unwrap_or_default()
            }
        }
    }
}

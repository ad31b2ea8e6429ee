//! `daemonsync snapshot`: write the observed state of a cluster as a snapshot file, pruned to
//! what the planner reads, so CI can plan without cluster credentials.
//!
//! The snapshot is built from the planner's [`Observed`] state, not copied from the source, so
//! any [`ClusterSpec`] (a snapshot, the simulator; a live cluster once that backend
//! exists) writes the same format, and nothing the planner does not read (Secret data, env
//! values, managed fields, annotations) ever leaves the cluster.

use crate::cluster::ClusterSpec;
use crate::model::{NODE_NAME_FIELD, Node, Pod, resources};

/// The node annotation that keeps what every pod bound to it requests (the snapshot keeps only
/// the daemon pods themselves).
const REQUESTED: &str = "daemonsync.io/requested";
/// The pod annotation that keeps what the pod requests of its node (its containers are not
/// kept).
const REQUESTS: &str = "daemonsync.io/requests";
use crate::plan::Observed;
use anyhow::{Context as _, Result};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::PathBuf;

pub(crate) const SNAPSHOT_HELP: &str = "\
Examples:
  # The live cluster of the current kubeconfig context, pruned, for CI without credentials
  daemonsync snapshot -o fixtures/cluster.yaml

  # Another context
  daemonsync snapshot --cluster kube:prod-eu -o prod-eu.yaml

  # Prune a full `kubectl get` dump to what planning needs, for CI
  kubectl get nodes,pods,daemonsets -A -o yaml > full.yaml
  daemonsync snapshot --cluster snapshot:full.yaml -o fixtures/cluster.yaml

  # As JSON, which plans read fastest: recommended for large clusters
  daemonsync snapshot -o cluster.json

  # Write to stdout (YAML)
  daemonsync snapshot --cluster snapshot:full.yaml -o -

  # The simulated demo fleet as a snapshot, to plan against without the simulator
  daemonsync snapshot --cluster sim:examples/sim/demo.yaml -o demo-snapshot.yaml

  # Then plan without credentials
  daemonsync plan --manifests ./deploy --cluster snapshot:fixtures/cluster.yaml

Kept: names, namespaces, labels, node taints and Ready condition, pod ownerReferences
(controller), nodeName, node-affinity matchFields on metadata.name, phase, Ready condition,
container waiting reasons, timestamps, node allocatable and what every pod bound to a node
requests (the daemonsync.io/requested annotation), each pod's requests (daemonsync.io/requests), and the live DaemonSets' metadata and spec with every
env value, argument and command replaced by \"(redacted)\" (they may be secret) and their
SHA-256 digests, one per container and field, recorded in the daemonsync.io/redacted
annotation, so a plan still sees where git's values differ without ever showing them. The
cluster's Kubernetes version (the API server's, or the newest kubelet's of a `kubectl get`
dump) is recorded in the List's daemonsync.io/kubernetes-version annotation: plans against the
snapshot render and validate for it.

Exit status:
  0  written
  1  error (unreadable source, unwritable output)";

/// Flags of `daemonsync snapshot`.
#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    /// Where the observed state comes from: `kube` (the default), `kube:CONTEXT`,
    /// `snapshot:FILE` or `sim:FILE`.
    #[arg(long, short = 'c', value_name = "SOURCE", default_value = "kube")]
    pub cluster: ClusterSpec,
    /// Output file (`-` for stdout). A name ending in `.json` is written as JSON, which plans
    /// read fastest (recommended for large clusters); anything else as YAML.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
}

/// Where a snapshot is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotOutput {
    /// To stdout, as YAML.
    Stdout,
    /// To a file, replaced whole; as JSON when `json`.
    File {
        /// The file.
        path: PathBuf,
        /// JSON rather than YAML.
        json: bool,
    },
}

/// `daemonsync snapshot` as its flags say, converted once.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// Where the observed state comes from.
    pub cluster: ClusterSpec,
    /// Where it goes.
    pub output: SnapshotOutput,
}

impl SnapshotArgs {
    /// The flags as [`SnapshotOptions`].
    pub fn options(&self) -> SnapshotOptions {
        let output = if self.output.as_os_str() == "-" {
            SnapshotOutput::Stdout
        } else {
            SnapshotOutput::File {
                path: self.output.clone(),
                json: self.output.extension().is_some_and(|e| e == "json"),
            }
        };
        SnapshotOptions {
            cluster: self.cluster.clone(),
            output,
        }
    }
}

/// Runs `daemonsync snapshot`; returns the exit code.
pub async fn run(args: &SnapshotArgs) -> Result<i32> {
    execute(&args.options()).await
}

/// Observes the cluster and writes the snapshot as `opts` say; returns the exit code.
pub async fn execute(opts: &SnapshotOptions) -> Result<i32> {
    let observed = opts.cluster.observe().await?;
    match &opts.output {
        SnapshotOutput::Stdout => {
            let text = to_yaml(&observed)?;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        SnapshotOutput::File { path, json } => {
            let text = if *json {
                to_json(&observed)?
            } else {
                to_yaml(&observed)?
            };
            write_replacing(path, &text)
                .with_context(|| format!("cannot write snapshot {}", path.display()))?;
            eprintln!(
                "wrote {}: {} nodes, {} pods, {} DaemonSets",
                path.display(),
                observed.nodes.len(),
                observed.pods.len(),
                observed.daemonsets.len()
            );
        }
    }
    Ok(super::EXIT_OK)
}

/// Writes `text` to `path` through a temporary file beside it, renamed into place: a failed
/// write never leaves a truncated snapshot where a good one was.
fn write_replacing(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let written = std::fs::write(&partial, text).and_then(|()| std::fs::rename(&partial, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// The observed state as one `kind: List` object.
fn to_list(observed: &Observed) -> Value {
    let items: Vec<Value> = observed
        .nodes
        .iter()
        .map(node)
        .chain(observed.pods.iter().map(pod))
        .chain(observed.daemonsets.iter().map(daemonset))
        .collect();
    let mut list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    // The API server's version, which the nodes' kubelets do not tell (they may be older):
    // plans against the snapshot render and validate for it.
    if let Some(v) = observed.version {
        list["metadata"] = json!({"annotations": {
            crate::cluster::snapshot::KUBERNETES_VERSION_ANNOTATION: format!("v{v}")
        }});
    }
    list
}

/// The observed state as one YAML `kind: List` document.
pub fn to_yaml(observed: &Observed) -> Result<String> {
    serde_saphyr::to_string(&to_list(observed)).context("cannot write YAML")
}

/// The observed state as one JSON `kind: List` object, as `kubectl get -o json` prints it.
pub fn to_json(observed: &Observed) -> Result<String> {
    let mut text = serde_json::to_string_pretty(&to_list(observed)).context("cannot write JSON")?;
    text.push('\n');
    Ok(text)
}

fn insert(m: &mut Map<String, Value>, k: &str, v: Value) {
    m.insert(k.into(), v);
}

fn node(n: &Node) -> Value {
    let mut meta = Map::new();
    insert(&mut meta, "name", json!(n.name));
    if !n.labels.is_empty() {
        insert(&mut meta, "labels", json!(n.labels));
    }
    let mut spec = Map::new();
    if !n.taints.is_empty() {
        let taints: Vec<Value> = n
            .taints
            .iter()
            .map(|t| {
                let mut m = Map::new();
                insert(&mut m, "key", json!(t.key));
                if !t.value.is_empty() {
                    insert(&mut m, "value", json!(t.value));
                }
                insert(&mut m, "effect", json!(t.effect.as_str()));
                Value::Object(m)
            })
            .collect();
        insert(&mut spec, "taints", Value::Array(taints));
    }
    if n.unschedulable {
        insert(&mut spec, "unschedulable", json!(true));
    }
    if let Some(r) = &n.requested {
        insert(
            &mut meta,
            "annotations",
            json!({ REQUESTED: resources::format_requested(r) }),
        );
    }
    let mut out = json!({"apiVersion": "v1", "kind": "Node", "metadata": meta});
    if !spec.is_empty() {
        out["spec"] = Value::Object(spec);
    }
    let mut status = Map::new();
    if let Some(ready) = n.ready {
        insert(
            &mut status,
            "conditions",
            json!([{"type": "Ready", "status": if ready { "True" } else { "False" }}]),
        );
    }
    if let Some(a) = &n.allocatable {
        let list: Map<String, Value> = a
            .iter()
            .map(|(k, v)| (k.clone(), json!(resources::describe(k, *v))))
            .collect();
        insert(&mut status, "allocatable", Value::Object(list));
    }
    if !status.is_empty() {
        out["status"] = Value::Object(status);
    }
    out
}

fn pod(p: &Pod) -> Value {
    let mut meta = Map::new();
    insert(&mut meta, "namespace", json!(p.namespace));
    insert(&mut meta, "name", json!(p.name));
    let mut annotations = Map::new();
    if let Some(r) = &p.requests {
        insert(
            &mut annotations,
            REQUESTS,
            json!(resources::format_requested(r)),
        );
    }
    // The digests of its versioned config (never a value): what `plan` names changed keys by.
    if let Some(config) = &p.config {
        insert(
            &mut annotations,
            crate::model::CONFIG_ANNOTATION,
            json!(config),
        );
    }
    if !annotations.is_empty() {
        insert(&mut meta, "annotations", Value::Object(annotations));
    }
    if !p.labels.is_empty() {
        insert(&mut meta, "labels", json!(p.labels));
    }
    if let Some(c) = &p.controller {
        insert(
            &mut meta,
            "ownerReferences",
            json!([{
                "apiVersion": c.api_version, "kind": c.kind, "name": c.name, "uid": c.uid,
                "controller": true,
            }]),
        );
    }
    if let Some(t) = p.creation_timestamp {
        insert(&mut meta, "creationTimestamp", json!(t.to_string()));
    }
    if let Some(t) = p.deletion_timestamp {
        insert(&mut meta, "deletionTimestamp", json!(t.to_string()));
    }
    let mut spec = Map::new();
    insert(&mut spec, "containers", json!([]));
    if let Some(n) = &p.node_name {
        insert(&mut spec, "nodeName", json!(n));
    } else if let Some(target) = &p.target_node {
        insert(
            &mut spec,
            "affinity",
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": NODE_NAME_FIELD, "operator": "In", "values": [target]}
                ]}]
            }}}),
        );
    }
    let mut status = Map::new();
    insert(&mut status, "phase", json!(p.phase.as_str()));
    if let Some(r) = p.ready {
        let mut c = Map::new();
        insert(&mut c, "type", json!("Ready"));
        insert(
            &mut c,
            "status",
            json!(if r.status { "True" } else { "False" }),
        );
        if let Some(t) = r.last_transition {
            insert(&mut c, "lastTransitionTime", json!(t.to_string()));
        }
        insert(&mut status, "conditions", json!([c]));
    }
    if let Some(w) = &p.waiting_reason {
        insert(
            &mut status,
            "containerStatuses",
            json!([{
                "name": "c", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": w}},
            }]),
        );
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
}

/// A live DaemonSet keeps its spec (the planner compares templates) and the metadata that
/// decides adoption and AGE; status and managed fields go.
fn daemonset(ds: &DaemonSet) -> Value {
    let m = &ds.metadata;
    let mut meta = Map::new();
    insert(&mut meta, "namespace", json!(m.namespace));
    insert(&mut meta, "name", json!(m.name));
    for (k, v) in [
        ("uid", json!(m.uid)),
        ("generation", json!(m.generation)),
        ("labels", json!(m.labels)),
        ("creationTimestamp", json!(m.creation_timestamp)),
        ("deletionTimestamp", json!(m.deletion_timestamp)),
    ] {
        if !v.is_null() {
            insert(&mut meta, k, v);
        }
    }
    let generation = m
        .annotations
        .as_ref()
        .and_then(|a| a.get(crate::model::TEMPLATE_GENERATION_ANNOTATION));
    let mut annotations = Map::new();
    if let Some(g) = generation {
        insert(
            &mut annotations,
            crate::model::TEMPLATE_GENERATION_ANNOTATION,
            json!(g),
        );
    }
    // Env values, args and commands may hold secrets: they never leave in a snapshot.
    let mut redacted = ds.clone();
    crate::plan::live::redact_template_values(&mut redacted);
    let digests = redacted
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(crate::plan::live::REDACTED_ANNOTATION));
    insert(
        &mut annotations,
        crate::plan::live::REDACTED_ANNOTATION,
        json!(digests),
    );
    insert(&mut meta, "annotations", Value::Object(annotations));
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": redacted.spec})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::snapshot::observed_from_documents;

    #[test]
    fn pruned_snapshot_reads_back_to_the_same_observed_state() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let observed =
            crate::cluster::load_snapshot(&root.join("snapshots/seven-nodes.yaml")).unwrap();
        let yaml = to_yaml(&observed).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&yaml).unwrap();
        let back = observed_from_documents(docs).unwrap();
        assert_eq!(back.nodes, observed.nodes);
        assert_eq!(back.pods, observed.pods);
        assert_eq!(back.daemonsets.len(), observed.daemonsets.len());
    }

    #[test]
    fn synthetic_fleet_round_trips() {
        let (_, mut observed) = crate::cluster::synthetic::fleet(50, 3, 1);
        // A pod's versioned config digests go along (the plan names changed keys by them).
        observed.pods[0].config = Some(r#"{"configmap/c":{"k":"0123456789ab"}}"#.into());
        let yaml = to_yaml(&observed).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&yaml).unwrap();
        let back = observed_from_documents(docs).unwrap();
        assert_eq!(back.nodes, observed.nodes);
        assert_eq!(back.pods, observed.pods);
    }

    #[test]
    fn the_version_is_the_recorded_one_else_the_newest_kubelets() {
        use crate::model::KubeVersion;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        // A kubectl dump: its kubelets say v1.33.2.
        let mut observed =
            crate::cluster::load_snapshot(&root.join("snapshots/seven-nodes.yaml")).unwrap();
        assert_eq!(
            observed.version.map(|v| v.to_string()),
            Some("1.33.2".into())
        );
        // `daemonsync snapshot` records the API server's, which wins over the kubelets'.
        observed.version = Some(KubeVersion::v1(34));
        for text in [to_yaml(&observed).unwrap(), to_json(&observed).unwrap()] {
            assert!(text.contains("daemonsync.io/kubernetes-version"), "{text}");
            let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
            let back = observed_from_documents(docs).unwrap();
            assert_eq!(back.version, Some(KubeVersion::v1(34)));
        }
        // A List whose metadata comes before its kind, and a version that is not one.
        let list = |version: &str| {
            json!({"metadata": {"annotations": {"daemonsync.io/kubernetes-version": version}},
                   "apiVersion": "v1", "kind": "List",
                   "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}]})
        };
        let back = observed_from_documents([list("v1.32.1")]).unwrap();
        assert_eq!(back.version.map(|v| v.minor), Some(32));
        let bad = observed_from_documents([json!({"apiVersion": "v1", "kind": "List",
            "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}],
            "metadata": {"annotations": {"daemonsync.io/kubernetes-version": "soon"}}})])
        .unwrap_err()
        .to_string();
        assert!(bad.contains("daemonsync.io/kubernetes-version"), "{bad}");
        assert!(
            bad.contains("\"soon\" is not a Kubernetes version"),
            "{bad}"
        );
    }
}

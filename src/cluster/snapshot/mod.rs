//! A cluster snapshot file: plain Kubernetes objects, exactly what
//! `kubectl get nodes,pods,daemonsets -A -o yaml` (or `-o json`) prints.
//!
//! The file is a stream of YAML or JSON documents. Each document is an object or a list
//! (`kind: List`, or a typed list such as `NodeList` / `PodList`, nested to any depth). `v1`
//! Nodes, `v1` Pods and `apps/v1` DaemonSets are read; every other object is counted and
//! otherwise ignored, so a snapshot may include whatever else `kubectl get` printed.
//!
//! Errors name the object (kind, namespace/name, document and list position) and the field
//! path, and say how to make a valid snapshot.

mod wire;

use crate::manifest::strict::Skip;
use crate::manifest::{Dialect, Limits, LoadError, read_stream};
use crate::model::KubeVersion;
use crate::plan::Observed;
use k8s_openapi::api::apps::v1::DaemonSet;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
pub use wire::KUBERNETES_VERSION_ANNOTATION;
use wire::{Document, Entry, Failure, Position, Tracked};

/// Largest snapshot file read, in bytes (4 GiB). `kubectl get -o json` of a 5,000-node
/// cluster with 100,000 pods is about 830 MB; what bounds a read is memory, and reading
/// takes little more than the file (nodes and pods are read straight into the planner's
/// model, skipping every field planning does not use).
pub const MAX_SNAPSHOT_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// The command that makes a valid snapshot, quoted in every error.
const HOW_TO_CREATE: &str =
    "create one with `kubectl get nodes,pods,daemonsets -A -o yaml > snapshot.yaml`";

/// A snapshot read into the planner's observed state, with a tally of what was skipped.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Nodes, pods and live DaemonSets, in file order.
    pub observed: Observed,
    /// Objects of other kinds, counted by `apiVersion` and `kind` (e.g. `v1/Service`).
    pub ignored: BTreeMap<String, usize>,
}

impl Snapshot {
    /// Reads parsed documents (see [`observed_from_documents`]), keeping the tally of ignored
    /// kinds.
    pub fn from_documents(
        docs: impl IntoIterator<Item = Value>,
    ) -> Result<Snapshot, SnapshotError> {
        let mut read = Vec::new();
        for (i, doc) in docs.into_iter().enumerate() {
            wire::take_failure();
            match Tracked::deserialize(doc) {
                Ok(Tracked(doc)) => read.push((i + 1, doc)),
                Err(e) => {
                    let message = e.to_string();
                    return Err(match wire::take_failure() {
                        Some(failure) => convert_error(failure, i + 1, message),
                        None => SnapshotError::Convert {
                            item: Box::new(ItemId::unknown(i + 1)),
                            field: "(the object)".into(),
                            message,
                        },
                    });
                }
            }
        }
        collect(read)
    }

    /// Reads a snapshot file (see [`load_snapshot`]), keeping the tally of ignored kinds.
    pub fn load(path: &Path) -> Result<Snapshot, SnapshotError> {
        let text = read_limited(path)?;
        let label = path.display().to_string();
        let limits = snapshot_limits(text.len());
        wire::take_failure();
        let in_file = |e| SnapshotError::InFile {
            path: path.to_path_buf(),
            source: Box::new(e),
        };
        match read_stream::<Document>(&label, &text, &limits, Dialect::Snapshot) {
            Ok(docs) => {
                collect(docs.into_iter().map(|(at, doc)| (at.document, doc))).map_err(in_file)
            }
            Err(e) => Err(match wire::take_failure() {
                // A streaming read meets a field of the wrong type before a syntax error
                // further on: the syntax error, if any, is the one to fix first.
                Some(failure) => {
                    match read_stream::<Skip>(&label, &text, &limits, Dialect::Snapshot) {
                        Err(syntax) => load_error(path, syntax),
                        Ok(_) => in_file(locate_failure(&label, &text, &limits, failure, e)),
                    }
                }
                None => load_error(path, e),
            }),
        }
    }

    /// Total number of ignored objects.
    pub fn ignored_count(&self) -> usize {
        self.ignored.values().sum()
    }
}

/// Builds the observed state from parsed snapshot documents: objects or (nested) lists of
/// `v1` Nodes, `v1` Pods and `apps/v1` DaemonSets. `null` documents are skipped; objects of
/// other kinds are ignored. A snapshot without any node is an error.
pub fn observed_from_documents(
    docs: impl IntoIterator<Item = Value>,
) -> Result<Observed, SnapshotError> {
    Snapshot::from_documents(docs).map(|s| s.observed)
}

/// Reads a YAML or JSON snapshot file into the observed state, through the reader manifests
/// use too ([`read_stream`]): JSON (a name ending in `.json`, or text starting with `{`) with a
/// JSON parser, anything else as YAML. Files over [`MAX_SNAPSHOT_BYTES`] are refused; syntax
/// errors carry `file:line:column`.
pub fn load_snapshot(path: &Path) -> Result<Observed, SnapshotError> {
    Snapshot::load(path).map(|s| s.observed)
}

/// Where an object sits in a snapshot, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemId {
    /// Document number in the stream, from 1.
    pub document: usize,
    /// Position inside list objects, e.g. `items[3]` or `items[0].items[2]`; empty for a
    /// top-level object.
    pub position: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace`, if any.
    pub namespace: Option<String>,
    /// `metadata.name`, if any.
    pub name: Option<String>,
}

impl ItemId {
    fn unknown(document: usize) -> Self {
        ItemId {
            document,
            position: String::new(),
            kind: "object".into(),
            namespace: None,
            name: None,
        }
    }
}

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        match (&self.namespace, &self.name) {
            (Some(ns), Some(n)) => write!(f, " {ns}/{n}")?,
            (None, Some(n)) => write!(f, " {n}")?,
            (_, None) => f.write_str(" (unnamed)")?,
        }
        write!(f, " (document {}", self.document)?;
        if !self.position.is_empty() {
            write!(f, ", {}", self.position)?;
        }
        f.write_str(")")
    }
}

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read.
    #[error("cannot read snapshot {}: {source}; check the path, or {HOW_TO_CREATE}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_SNAPSHOT_BYTES`].
    #[error(
        "snapshot {} is larger than the {} MiB limit; snapshot only what the plan needs \
         (nodes, and pods of the namespaces of the managed DaemonSets), e.g. \
         `kubectl get nodes -o yaml` and `kubectl get pods,daemonsets -n NAMESPACE -o yaml`",
        path.display(), MAX_SNAPSHOT_BYTES / (1024 * 1024)
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The file is not UTF-8 text.
    #[error("snapshot {} is not UTF-8 text; {HOW_TO_CREATE}", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// YAML or JSON syntax error.
    #[error(
        "{}:{line}:{column}: not valid YAML or JSON: {message}; fix it there, or export a fresh \
         snapshot with `kubectl get nodes,pods,daemonsets -A -o yaml > snapshot.yaml`",
        path.display()
    )]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Line, from 1.
        line: u64,
        /// Column, from 1.
        column: u64,
        /// What the parser says.
        message: String,
    },
    /// YAML or JSON error without a known position (resource limits, encoding).
    #[error("{}: cannot parse: {message}; {HOW_TO_CREATE}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser says.
        message: String,
    },
    /// A document or list item is not a mapping with a `kind`.
    #[error(
        "document {document}{}: expected a Kubernetes object with `apiVersion` and `kind`, \
         found {found}; a snapshot holds objects as `kubectl get -o yaml` prints them ({HOW_TO_CREATE})",
        at(position)
    )]
    NotAnObject {
        /// Document number, from 1.
        document: usize,
        /// Position inside list objects.
        position: String,
        /// What was found instead.
        found: String,
    },
    /// A Node, Pod or DaemonSet does not have the shape of the Kubernetes API type.
    #[error(
        "{item}: field `{field}`: {message}; fix the object, or re-export it with \
         `kubectl get nodes,pods,daemonsets -A -o yaml`"
    )]
    Convert {
        /// The object.
        item: Box<ItemId>,
        /// Path of the offending field inside the object, e.g. `spec.taints[0].effect`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A Node or Pod has no name.
    #[error("{item}: `metadata.name` is missing; every object in a snapshot needs one")]
    MissingName {
        /// The object.
        item: Box<ItemId>,
    },
    /// The same object appears twice.
    #[error(
        "{second} duplicates {first}; a snapshot describes one cluster at one moment, so \
         export it once instead of concatenating exports"
    )]
    Duplicate {
        /// The first occurrence.
        first: Box<ItemId>,
        /// The second occurrence.
        second: Box<ItemId>,
    },
    /// No Node at all: planning against it would show nothing to do.
    #[error(
        "the snapshot has no nodes, so every DaemonSet would look empty; include them: \
         {HOW_TO_CREATE}"
    )]
    NoNodes,
    /// An error about the contents of a file.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: Box<SnapshotError>,
    },
}

fn at(position: &str) -> String {
    if position.is_empty() {
        String::new()
    } else {
        format!(", {position}")
    }
}

fn read_limited(path: &Path) -> Result<String, SnapshotError> {
    let read_err = |source| SnapshotError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let too_large = || SnapshotError::TooLarge {
        path: path.to_path_buf(),
    };
    let size = file.metadata().map_err(read_err)?.len();
    if size > MAX_SNAPSHOT_BYTES {
        return Err(too_large());
    }
    // The size check above does not cover pipes and files that grow while read.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    file.take(MAX_SNAPSHOT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| SnapshotError::NotText {
        path: path.to_path_buf(),
    })
}

/// The reader's budgets for a snapshot of `size` bytes. Events, nodes, documents and scalar
/// bytes are bounded by the file size (at most one per byte); a snapshot of a large cluster has
/// millions of them. Depth and alias limits stay at the YAML parser's defaults ("billion
/// laughs").
fn snapshot_limits(size: usize) -> Limits {
    let bound = size.max(1024);
    Limits {
        max_file_bytes: MAX_SNAPSHOT_BYTES,
        max_events: bound,
        max_nodes: bound,
        max_documents: bound,
        max_aliases: 50_000,
        max_alias_replayed_events: 1_000_000,
        ..Limits::default()
    }
}

/// A reader error as a snapshot error.
fn load_error(path: &Path, e: LoadError) -> SnapshotError {
    let path = path.to_path_buf();
    match e {
        LoadError::Syntax {
            line,
            column,
            message,
            ..
        } if line > 0 => SnapshotError::Syntax {
            path,
            line: line as u64,
            column: column as u64,
            message,
        },
        LoadError::Syntax { message, .. } | LoadError::Budget { message, .. } => {
            SnapshotError::Parse { path, message }
        }
        LoadError::TooLarge { .. } => SnapshotError::TooLarge { path },
        LoadError::NotUtf8 { .. } => SnapshotError::NotText { path },
        LoadError::TooManyDocuments { limit, .. } => SnapshotError::Parse {
            path,
            message: format!("more than {limit} documents"),
        },
        other @ (LoadError::NotAnObject { .. } | LoadError::MissingTypeField { .. }) => {
            SnapshotError::Parse {
                path,
                message: other.to_string(),
            }
        }
    }
}

/// The error for an object whose fields could not be read: the first pass knows the object,
/// a second one, tracking paths, finds the field (errors are the rare case; tracking costs an
/// allocation per key).
fn locate_failure(
    label: &str,
    text: &str,
    limits: &Limits,
    first: Failure,
    e: LoadError,
) -> SnapshotError {
    let (document, message) = match e {
        LoadError::Syntax {
            document, message, ..
        } => (document.unwrap_or(1), message),
        other => (1, other.to_string()),
    };
    let again = read_stream::<Tracked>(label, text, limits, Dialect::Snapshot);
    let failure = match (again, wire::take_failure()) {
        (Err(_), Some(f)) if f.path.is_some() => f,
        _ => first,
    };
    convert_error(failure, document, message)
}

fn convert_error(failure: Failure, document: usize, message: String) -> SnapshotError {
    let path = failure.path.unwrap_or_default();
    let field = if failure.at.is_empty() {
        path.as_str()
    } else {
        path.strip_prefix(failure.at.as_str())
            .map_or(path.as_str(), |p| p.trim_start_matches('.'))
    };
    let field = if field.is_empty() || field == "." {
        "(the object)".to_string()
    } else {
        field.to_string()
    };
    SnapshotError::Convert {
        item: Box::new(ItemId {
            document,
            position: failure.at,
            kind: failure.kind,
            namespace: failure.namespace,
            name: failure.name,
        }),
        field,
        message,
    }
}

/// Where each object read sits, for errors naming it.
struct Placed {
    /// Order in the file, over all objects.
    seq: usize,
    document: usize,
    at: Position,
    namespace: String,
}

/// The observed state from the objects read, in file order: the first object that is not
/// valid, or the first object seen twice, whichever comes first, is the error.
fn collect(docs: impl IntoIterator<Item = (usize, Document)>) -> Result<Snapshot, SnapshotError> {
    let mut snapshot = Snapshot::default();
    let mut placed: [Vec<Placed>; 3] = Default::default();
    let mut seq = 0;
    let mut failed = None;
    let (mut kubelets, mut recorded) = (None, None);
    let mut docs = docs.into_iter().peekable();
    'read: while let Some((document, doc)) = docs.next() {
        let Document {
            nodes,
            pods,
            entries,
            newest_kubelet,
        } = doc;
        kubelets = kubelets.max(newest_kubelet);
        let (first_node, first_pod) = (snapshot.observed.nodes.len(), snapshot.observed.pods.len());
        // One document (a `List`) is the common case: its nodes and pods are moved, not copied.
        if first_node == 0 && first_pod == 0 && docs.peek().is_none() {
            snapshot.observed.nodes = nodes.into();
            snapshot.observed.pods = pods.into();
        } else {
            snapshot.observed.nodes.extend(nodes);
            snapshot.observed.pods.extend(pods);
        }
        let (mut node_i, mut pod_i) = (first_node, first_pod);
        for entry in entries {
            seq += 1;
            let id = |kind: &str, namespace: &str, name: &str, at: &Position| ItemId {
                document,
                position: wire::render(at),
                kind: kind.to_string(),
                namespace: Some(namespace.to_string()).filter(|s| !s.is_empty()),
                name: Some(name.to_string()).filter(|s| !s.is_empty()),
            };
            let read = match entry {
                Entry::Node {
                    namespace,
                    bad_taint,
                    at,
                } => {
                    let node = &snapshot.observed.nodes[node_i];
                    node_i += 1;
                    if let Some(bad) = bad_taint {
                        let (i, effect) = *bad;
                        Err(SnapshotError::Convert {
                            item: Box::new(id("Node", &namespace, &node.name, &at)),
                            field: format!("spec.taints[{i}].effect"),
                            message: format!(
                                "unsupported value {effect:?}: supported values: \"NoSchedule\", \
                                 \"PreferNoSchedule\", \"NoExecute\""
                            ),
                        })
                    } else if node.name.is_empty() {
                        Err(SnapshotError::MissingName {
                            item: Box::new(id("Node", &namespace, "", &at)),
                        })
                    } else {
                        placed[0].push(Placed {
                            seq,
                            document,
                            at,
                            namespace,
                        });
                        Ok(())
                    }
                }
                Entry::Pod { at } => {
                    let pod = &snapshot.observed.pods[pod_i];
                    pod_i += 1;
                    if pod.name.is_empty() {
                        Err(SnapshotError::MissingName {
                            item: Box::new(id("Pod", &pod.namespace, "", &at)),
                        })
                    } else {
                        placed[1].push(Placed {
                            seq,
                            document,
                            at,
                            namespace: String::new(),
                        });
                        Ok(())
                    }
                }
                Entry::DaemonSet { value, at } => {
                    let namespace = metadata_str(&value, "namespace").unwrap_or_default();
                    let name = metadata_str(&value, "name").unwrap_or_default();
                    let item = id("DaemonSet", &namespace, &name, &at);
                    convert::<DaemonSet>(value, &item).and_then(|ds| {
                        if name.is_empty() {
                            return Err(SnapshotError::MissingName {
                                item: Box::new(item),
                            });
                        }
                        placed[2].push(Placed {
                            seq,
                            document,
                            at,
                            namespace,
                        });
                        snapshot.observed.daemonsets.push(ds);
                        Ok(())
                    })
                }
                Entry::Other { key } => {
                    *snapshot.ignored.entry(key).or_default() += 1;
                    Ok(())
                }
                Entry::Invalid(invalid) => {
                    let wire::Invalid {
                        kind,
                        namespace,
                        name,
                        field,
                        message,
                        at,
                    } = *invalid;
                    Err(SnapshotError::Convert {
                        item: Box::new(ItemId {
                            document,
                            position: wire::render(&at),
                            kind,
                            namespace,
                            name,
                        }),
                        field: if field == "." {
                            "(the object)".into()
                        } else {
                            field
                        },
                        message,
                    })
                }
                Entry::NotAnObject { found, at } => Err(SnapshotError::NotAnObject {
                    document,
                    position: at,
                    found: found.into(),
                }),
                Entry::Version(text) => match KubeVersion::parse_reported(&text) {
                    Some(v) => {
                        recorded = Some(v);
                        Ok(())
                    }
                    None => Err(SnapshotError::Convert {
                        item: Box::new(ItemId {
                            document,
                            position: String::new(),
                            kind: "List".into(),
                            namespace: None,
                            name: None,
                        }),
                        field: format!("metadata.annotations[{KUBERNETES_VERSION_ANNOTATION}]"),
                        message: format!(
                            "{text:?} is not a Kubernetes version (expected e.g. v1.35.2)"
                        ),
                    }),
                },
            };
            if let Err(e) = read {
                failed = Some(e);
                break 'read;
            }
        }
    }
    // Only objects before a failure count as seen.
    snapshot.observed.nodes.truncate(placed[0].len());
    snapshot.observed.pods.truncate(placed[1].len());
    if let Some(duplicate) = first_duplicate(&snapshot.observed, &placed) {
        return Err(duplicate);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if snapshot.observed.nodes.is_empty() {
        return Err(SnapshotError::NoNodes);
    }
    let observed = &mut snapshot.observed;
    crate::model::resources::count_requested(&mut observed.nodes, &observed.pods);
    // The API server's version when `daemonsync snapshot` recorded it; for a `kubectl get`
    // dump, the newest kubelet's (kubelets are never newer than their API server).
    observed.version = recorded.or(kubelets);
    Ok(snapshot)
}

/// The object seen twice earliest in the file, if any (a snapshot describes one cluster at
/// one moment).
fn first_duplicate(observed: &Observed, placed: &[Vec<Placed>; 3]) -> Option<SnapshotError> {
    fn earliest<'a>(names: impl Iterator<Item = (&'a str, &'a str)>) -> Option<(usize, usize)> {
        let mut first: FxHashMap<(&str, &str), usize> = FxHashMap::default();
        for (i, key) in names.enumerate() {
            if let Some(&j) = first.get(&key) {
                return Some((j, i));
            }
            first.insert(key, i);
        }
        None
    }
    let nodes = observed
        .nodes
        .iter()
        .zip(&placed[0])
        .map(|(n, p)| (&*p.namespace, n.name.as_str()));
    let pods = observed
        .pods
        .iter()
        .map(|p| (&*p.namespace, p.name.as_str()));
    let daemonsets = observed.daemonsets.iter().map(|d| {
        (
            d.metadata.namespace.as_deref().unwrap_or_default(),
            d.metadata.name.as_deref().unwrap_or_default(),
        )
    });
    let found = [earliest(nodes), earliest(pods), earliest(daemonsets)];
    let (kind, (first, second)) = found
        .iter()
        .enumerate()
        .filter_map(|(k, f)| f.map(|f| (k, f)))
        .min_by_key(|(k, (_, second))| placed[*k][*second].seq)?;
    let id = |i: usize| {
        let p = &placed[kind][i];
        let (namespace, name) = match kind {
            0 => (p.namespace.clone(), observed.nodes[i].name.clone()),
            1 => (
                observed.pods[i].namespace.to_string(),
                observed.pods[i].name.clone(),
            ),
            _ => (
                p.namespace.clone(),
                observed.daemonsets[i]
                    .metadata
                    .name
                    .clone()
                    .unwrap_or_default(),
            ),
        };
        Box::new(ItemId {
            document: p.document,
            position: wire::render(&p.at),
            kind: ["Node", "Pod", "DaemonSet"][kind].to_string(),
            namespace: Some(namespace).filter(|s| !s.is_empty()),
            name: Some(name),
        })
    };
    Some(SnapshotError::Duplicate {
        first: id(first),
        second: id(second),
    })
}

/// Deserializes one object, naming the field path on failure.
fn convert<T: DeserializeOwned>(value: Value, id: &ItemId) -> Result<T, SnapshotError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        SnapshotError::Convert {
            item: Box::new(id.clone()),
            field: if field == "." {
                "(the object)".into()
            } else {
                field
            },
            message: e.into_inner().to_string(),
        }
    })
}

fn metadata_str(value: &Value, key: &str) -> Option<String> {
    value
        .get("metadata")?
        .get(key)?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Pod;
    use serde_json::json;

    fn node(name: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    fn pod(ns: &str, name: &str, node: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": ns, "name": name, "labels": {"app": "a"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"}
        })
    }

    fn write(text: &str) -> tempfile::NamedTempFile {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn reads_objects_and_nested_typed_lists_and_counts_other_kinds() {
        let docs = vec![
            json!({"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "NodeList", "items": [node("a"), node("b")]},
                pod("ns", "p1", "a"),
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
            ]}),
            Value::Null,
            pod("ns", "p2", "b"),
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
                   "metadata": {"namespace": "ns", "name": "d"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}),
        ];
        let s = Snapshot::from_documents(docs).unwrap();
        assert_eq!(s.observed.nodes.len(), 2);
        assert_eq!(s.observed.pods.len(), 2);
        assert_eq!(s.observed.daemonsets.len(), 1);
        assert_eq!(s.observed.pods[0].node_name.as_deref(), Some("a"));
        assert_eq!(s.ignored.get("v1/Service"), Some(&1));
        assert_eq!(s.ignored.get("apps/v1/Deployment"), Some(&1));
        assert_eq!(s.ignored_count(), 2);
    }

    #[test]
    fn conversion_error_names_the_item_and_the_field_path() {
        let mut bad = node("b");
        bad["spec"] = json!({"taints": [{"key": "k", "effect": 7}]});
        let docs = vec![json!({"apiVersion": "v1", "kind": "List", "items": [node("a"), bad]})];
        let err = observed_from_documents(docs).unwrap_err().to_string();
        assert!(err.contains("Node b (document 1, items[1])"), "{err}");
        assert!(err.contains("spec.taints[0].effect"), "{err}");
        assert!(
            err.contains("kubectl get nodes,pods,daemonsets -A -o yaml"),
            "{err}"
        );
    }

    #[test]
    fn pod_error_names_namespace_and_name() {
        let mut bad = pod("kube-system", "p", "a");
        bad["status"]["phase"] = json!(["Running"]);
        let err = observed_from_documents(vec![node("a"), bad])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("Pod kube-system/p (document 2)"), "{err}");
        assert!(err.contains("status.phase"), "{err}");
    }

    #[test]
    fn rejects_duplicates_missing_names_scalars_and_empty_snapshots() {
        let err = observed_from_documents(vec![node("a"), node("a")]).unwrap_err();
        assert!(matches!(err, SnapshotError::Duplicate { .. }), "{err}");
        let nameless = json!({"apiVersion": "v1", "kind": "Node", "metadata": {}});
        let err = observed_from_documents(vec![nameless]).unwrap_err();
        assert!(err.to_string().contains("metadata.name"), "{err}");
        let err = observed_from_documents(vec![json!("text")]).unwrap_err();
        assert!(err.to_string().contains("found a string"), "{err}");
        let err = observed_from_documents(vec![pod("n", "p", "a")]).unwrap_err();
        assert!(matches!(err, SnapshotError::NoNodes), "{err}");
        assert!(err.to_string().contains("kubectl get nodes"), "{err}");
    }

    #[test]
    fn loads_yaml_streams_skipping_empty_documents() {
        let f = write(
            "# exported\n---\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: a\n---\n\
             apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    \
             name: p\n    namespace: n\n  spec:\n    nodeName: a\n    containers: []\n",
        );
        let s = Snapshot::load(f.path()).unwrap();
        assert_eq!(s.observed.nodes.len(), 1);
        assert_eq!(s.observed.pods.len(), 1);
    }

    #[test]
    fn loads_json() {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": [node("a")]});
        let f = write(&serde_json::to_string_pretty(&list).unwrap());
        assert_eq!(load_snapshot(f.path()).unwrap().nodes.len(), 1);
    }

    #[test]
    fn syntax_errors_carry_file_line_and_column() {
        let f = write("apiVersion: v1\nkind: Node\nmetadata:\n  name: [a\n");
        let err = load_snapshot(f.path()).unwrap_err();
        let SnapshotError::Syntax { line, .. } = &err else {
            panic!("expected a syntax error, got {err}");
        };
        assert!(*line >= 4, "{err}");
        let shown = err.to_string();
        let prefix = format!("{}:{line}:", f.path().display());
        assert!(shown.starts_with(&prefix), "{shown}");
        assert!(!shown.contains('\n'), "one line: {shown}");
        assert!(!shown.contains("at line"), "position said once: {shown}");
    }

    #[test]
    fn content_errors_name_the_file() {
        let f = write("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n");
        let err = load_snapshot(f.path()).unwrap_err().to_string();
        assert!(err.starts_with(&f.path().display().to_string()), "{err}");
        assert!(err.contains("no nodes"), "{err}");
    }

    #[test]
    fn missing_file_says_how_to_create_one() {
        let err = load_snapshot(Path::new("/nonexistent/snapshot.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/snapshot.yaml"), "{err}");
        assert!(
            err.contains("kubectl get nodes,pods,daemonsets -A -o yaml"),
            "{err}"
        );
    }

    #[test]
    fn refuses_files_over_the_limit() {
        let f = tempfile::NamedTempFile::new().unwrap();
        f.as_file().set_len(MAX_SNAPSHOT_BYTES + 1).unwrap();
        let err = load_snapshot(f.path()).unwrap_err();
        assert!(matches!(err, SnapshotError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("4096 MiB"), "{err}");
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name)
    }

    #[test]
    fn seven_node_fixture_loads_with_expected_counts() {
        let s = Snapshot::load(&fixture("snapshots/seven-nodes.yaml")).unwrap();
        let o = &s.observed;
        let names: Vec<&str> = o.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cp-1",
                "worker-amd64-1",
                "worker-arm64-1",
                "gpu-1",
                "win-1",
                "uninit-1",
                "fargate-1"
            ]
        );
        assert!(o.nodes.iter().all(|n| n.ready == Some(true)));
        assert_eq!(o.pods.len(), 7);
        assert_eq!(o.daemonsets.len(), 1);
        assert_eq!(s.ignored_count(), 0);

        let flannel: Vec<&Pod> = o
            .pods
            .iter()
            .filter(|p| &*p.namespace == "kube-flannel")
            .collect();
        assert_eq!(flannel.len(), 6);
        assert!(flannel.iter().all(|p| {
            p.revision_hash() == Some("abc123")
                && p.controller
                    .as_ref()
                    .is_some_and(|c| c.kind == "DaemonSet" && c.name == "kube-flannel-ds")
        }));
        let on = |node: &str| {
            flannel
                .iter()
                .find(|p| p.node_name.as_deref() == Some(node))
        };
        assert!(on("uninit-1").is_none());
        assert!(on("win-1").is_some());
        let gpu = on("gpu-1").unwrap();
        assert!(!gpu.is_ready());
        assert_eq!(gpu.waiting_reason.as_deref(), Some("CrashLoopBackOff"));
        assert_eq!(flannel.iter().filter(|p| p.is_ready()).count(), 5);

        let node = |n: &str| o.nodes.iter().find(|x| x.name == n).unwrap();
        assert_eq!(node("win-1").labels["kubernetes.io/os"], "windows");
        assert_eq!(
            node("gpu-1").taints[0].to_string(),
            "nvidia.com/gpu=present:NoSchedule"
        );
        assert_eq!(
            node("cp-1").taints[0].to_string(),
            "node-role.kubernetes.io/control-plane:NoSchedule"
        );
        assert_eq!(
            node("fargate-1").labels["eks.amazonaws.com/compute-type"],
            "fargate"
        );
    }
}

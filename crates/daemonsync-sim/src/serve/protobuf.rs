//! Kubernetes protobuf request bodies, read into the JSON the client would otherwise have sent.
//!
//! kubectl's typed `create` commands (`create namespace`, `configmap`, `secret`,
//! `serviceaccount`, `quota`, `service`, `poddisruptionbudget`, …) POST
//! `Content-Type: application/vnd.kubernetes.protobuf` whatever the server prefers, with
//! `Accept: application/vnd.kubernetes.protobuf,application/json`, so the server may answer
//! JSON. The body is the magic `k8s\0` and a `runtime.Unknown`: the object's typeMeta
//! (apiVersion, kind) and, in `raw`, the object's own protobuf encoding.
//!
//! [`decode`] is hand-written for the few kinds those commands create: a wire reader
//! (`wire`), one table per message (`schema`) and a converter that follows the tables
//! (`message`). A generated decoder (prost and the k8s-pb types) would pull in a large
//! dependency tree for seven kinds. It never allocates what a length prefix claims, and
//! recursion is bounded by how deep the tables nest. Other kinds are refused with a hint to
//! send JSON.

mod message;
mod schema;
mod wire;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What every Kubernetes protobuf body starts with: `k8s` and encoding 0 (a `runtime.Unknown`).
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf body cannot be read. Each message says what was wrong and what to send
/// instead, for an API `Status` a user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The body does not start with `k8s\0`.
    #[error(
        "the request body is not Kubernetes protobuf: it does not start with the bytes \"k8s\\0\" \
         (send JSON with Content-Type: application/json instead)"
    )]
    NoMagic,
    /// What follows the magic is not a `runtime.Unknown` message.
    #[error("the protobuf body is not a runtime.Unknown: {0}")]
    NotUnknown(String),
    /// The `runtime.Unknown` has no typeMeta, so the object's kind is unknown.
    #[error("the protobuf body has no typeMeta, so its apiVersion and kind are unknown")]
    MissingTypeMeta,
    /// The typeMeta lacks `apiVersion` or `kind`.
    #[error("the protobuf body's typeMeta has no {0}")]
    IncompleteTypeMeta(&'static str),
    /// The object is compressed or otherwise encoded (`contentEncoding`).
    #[error(
        "the protobuf body's object has contentEncoding {0:?}; only unencoded objects are read"
    )]
    ContentEncoding(String),
    /// The object is in another format than protobuf (`contentType`).
    #[error("the protobuf body's object has contentType {0:?}; only {CONTENT_TYPE} is read")]
    ContentType(String),
    /// A kind this decoder has no schema for.
    #[error(
        "kind {kind} ({api_version}) is not served in protobuf; send JSON \
         (kubectl create ... --dry-run=client -o json | kubectl apply -f -)"
    )]
    UnsupportedKind {
        /// The typeMeta's apiVersion.
        api_version: String,
        /// The typeMeta's kind.
        kind: String,
    },
    /// The object does not match its kind's protobuf message.
    #[error("the {kind} in the protobuf body cannot be read{}: {why}", at(.path))]
    Malformed {
        /// The kind being read.
        kind: String,
        /// Where: a JSON path in the object (`spec.ports[0].targetPort`), empty at its root.
        path: String,
        /// What is wrong there.
        why: String,
    },
}

/// Reads a protobuf request body into the object as JSON: `apiVersion` and `kind` from the
/// typeMeta, then the object's fields under their JSON names and in their JSON shapes
/// (Secret `data` in base64, times in RFC 3339), leaving out what kubectl's JSON leaves out.
///
/// Kinds read: core/v1 Namespace, ConfigMap, Secret, ServiceAccount, ResourceQuota and
/// Service, and policy/v1 PodDisruptionBudget. `metadata.managedFields` is skipped.
pub fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    let envelope = Envelope::read(body)?;
    let Some(schema) = schema::kind(&envelope.api_version, &envelope.kind) else {
        return Err(DecodeError::UnsupportedKind {
            api_version: envelope.api_version,
            kind: envelope.kind,
        });
    };
    let fields =
        message::decode(envelope.raw, schema).map_err(|problem| DecodeError::Malformed {
            kind: envelope.kind.clone(),
            path: problem.path,
            why: problem.why,
        })?;
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String(envelope.api_version));
    object.insert("kind".into(), Value::String(envelope.kind));
    object.extend(fields);
    Ok(Value::Object(object))
}

/// ` at <path>` for the error message, nothing at the object's root.
fn at(path: &str) -> String {
    match path {
        "" => String::new(),
        path => format!(" at {path}"),
    }
}

/// The `runtime.Unknown` around the object.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

impl<'a> Envelope<'a> {
    fn read(body: &'a [u8]) -> Result<Self, DecodeError> {
        let unknown = body.strip_prefix(MAGIC).ok_or(DecodeError::NoMagic)?;
        let entries =
            wire::read_message(unknown).map_err(|e| DecodeError::NotUnknown(e.to_string()))?;
        let header = message::object(&entries, schema::UNKNOWN.name, schema::UNKNOWN.fields)
            .map_err(|p| DecodeError::NotUnknown(p.to_string()))?;
        check_encoding(&header)?;
        let type_meta = header.get("typeMeta").ok_or(DecodeError::MissingTypeMeta)?;
        let text = |name: &'static str| match type_meta.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(DecodeError::IncompleteTypeMeta(name)),
        };
        Ok(Envelope {
            api_version: text("apiVersion")?,
            kind: text("kind")?,
            raw: raw(&entries)?,
        })
    }
}

/// kubectl sends both fields empty: the raw object is plain protobuf.
fn check_encoding(header: &Map<String, Value>) -> Result<(), DecodeError> {
    let field = |name| header.get(name).and_then(Value::as_str).unwrap_or("");
    match (field("contentEncoding"), field("contentType")) {
        ("", "" | CONTENT_TYPE) => Ok(()),
        ("", other) => Err(DecodeError::ContentType(other.to_string())),
        (other, _) => Err(DecodeError::ContentEncoding(other.to_string())),
    }
}

/// Field 2 of `runtime.Unknown`, the object; absent reads as an empty object.
fn raw<'a>(entries: &[wire::Entry<'a>]) -> Result<&'a [u8], DecodeError> {
    match entries.iter().rev().find(|e| e.number == 2) {
        None => Ok(&[]),
        Some(wire::Entry {
            payload: wire::Payload::Len(bytes),
            ..
        }) => Ok(bytes),
        Some(other) => Err(DecodeError::NotUnknown(format!(
            "its raw (field 2) holds bytes, but {} arrived",
            other.payload.wire_name()
        ))),
    }
}

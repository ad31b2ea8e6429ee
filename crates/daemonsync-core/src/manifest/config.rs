//! ConfigMaps and Secrets in the source, and the immutable copies of them that a DaemonSet's
//! revision references (docs/sources.md, "Configuration changes roll out").
//!
//! A kubelet refreshes a mounted ConfigMap or Secret on every node within a minute of its
//! change, so changing one in place would reach every node at once, whatever the DaemonSet's
//! budgets. So config is versioned with the revision, as Kustomize's generators do: the
//! revision's pods reference copies named after their content ([`ConfigCopy`]), written
//! `immutable` before the first pod that needs them, and a change of the content is a change
//! of the template, rolled out like any other ([`super::versioning`]).
//!
//! Secret values live only in memory: [`ConfigData`]'s `Debug` names keys only, errors never
//! quote a value, and what the plan shows of a key is a salted digest
//! ([`ConfigData::key_digests`]).

use super::error::quote;
use super::{DocRef, FieldError};
use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

pub use crate::model::CONFIG_ANNOTATION;
/// Label of a copy: the DaemonSet it belongs to (see [`daemonset_label`]).
pub const DAEMONSET_LABEL: &str = "daemonsync.io/daemonset";
/// Annotation of a copy: the name of the ConfigMap or Secret it copies.
pub const COPY_OF_ANNOTATION: &str = "daemonsync.io/copy-of";
/// Annotation of a copy: the digest of its whole content (64 hex), which its name ends with.
pub const DIGEST_ANNOTATION: &str = "daemonsync.io/config-digest";

/// The API server's limit on a ConfigMap's or a Secret's data (`MaxSecretSize`, 1 MiB).
pub const MAX_SIZE: usize = 1024 * 1024;

/// Hex digits of the content digest a copy's name ends with.
const NAME_DIGEST_LEN: usize = 10;
/// Hex digits of a key's digest in [`CONFIG_ANNOTATION`].
pub const KEY_DIGEST_LEN: usize = 12;

/// The Secret type the token controller fills in: never copied (a copy would be a second
/// token for the account).
const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";

/// A ConfigMap or a Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConfigKind {
    /// `v1` ConfigMap.
    ConfigMap,
    /// `v1` Secret.
    Secret,
}

impl ConfigKind {
    /// The kind of `apiVersion`/`kind`, if it is one of these.
    pub fn of(api_version: &str, kind: &str) -> Option<ConfigKind> {
        match (api_version, kind) {
            ("v1", "ConfigMap") => Some(ConfigKind::ConfigMap),
            ("v1", "Secret") => Some(ConfigKind::Secret),
            _ => None,
        }
    }

    /// `configmap` or `secret`: how the plan and [`CONFIG_ANNOTATION`] name it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigKind::ConfigMap => "configmap",
            ConfigKind::Secret => "secret",
        }
    }

    /// `ConfigMap` or `Secret`.
    pub fn kind(self) -> &'static str {
        match self {
            ConfigKind::ConfigMap => "ConfigMap",
            ConfigKind::Secret => "Secret",
        }
    }

    /// `configmaps` or `secrets`: the resource.
    pub fn plural(self) -> &'static str {
        match self {
            ConfigKind::ConfigMap => "configmaps",
            ConfigKind::Secret => "secrets",
        }
    }
}

impl fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a ConfigMap or Secret holds. Its `Debug` names the keys, never a value.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ConfigData {
    /// A ConfigMap's `data` (UTF-8 text); empty for a Secret.
    pub strings: BTreeMap<String, String>,
    /// A ConfigMap's `binaryData`, or a Secret's `data` (with its `stringData` merged in, as
    /// the API server merges it).
    pub bytes: BTreeMap<String, Vec<u8>>,
    /// A Secret's `type` (`None` for a ConfigMap, or a Secret without one: `Opaque`).
    pub type_: Option<String>,
}

impl fmt::Debug for ConfigData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigData")
            .field("keys", &self.keys().collect::<Vec<_>>())
            .field("type", &self.type_)
            .finish_non_exhaustive()
    }
}

impl ConfigData {
    /// Every key, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let mut keys: Vec<&str> = self
            .strings
            .keys()
            .chain(self.bytes.keys())
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
    }

    /// The bytes of a key.
    fn value(&self, key: &str) -> Option<&[u8]> {
        self.strings
            .get(key)
            .map(String::as_bytes)
            .or_else(|| self.bytes.get(key).map(Vec::as_slice))
    }

    /// The total size of the values, as the API server counts it.
    pub fn size(&self) -> usize {
        self.strings.values().map(String::len).sum::<usize>()
            + self.bytes.values().map(Vec::len).sum::<usize>()
    }

    /// The digest of the whole content (64 hex): the kind, the type and every key with its
    /// value, and whether the value is text or bytes. Equal content, equal digest.
    pub fn digest(&self, kind: ConfigKind) -> String {
        let mut h = Sha256::new();
        h.update(b"daemonsync config v1\0");
        h.update(kind.as_str().as_bytes());
        h.update(b"\0");
        h.update(self.type_.as_deref().unwrap_or_default().as_bytes());
        h.update(b"\0");
        for key in self.keys() {
            let (tag, value): (&[u8], &[u8]) = match self.strings.get(key) {
                Some(s) => (b"s", s.as_bytes()),
                None => (b"b", self.bytes.get(key).map_or(&[][..], Vec::as_slice)),
            };
            h.update(key.as_bytes());
            h.update(b"\0");
            h.update(tag);
            h.update((value.len() as u64).to_le_bytes());
            h.update(value);
        }
        hex(&h.finalize())
    }

    /// Each key's digest ([`KEY_DIGEST_LEN`] hex), salted with the object's kind, namespace
    /// and name so that equal values elsewhere do not show as equal digests.
    pub fn key_digests(
        &self,
        kind: ConfigKind,
        namespace: &str,
        name: &str,
    ) -> BTreeMap<String, String> {
        self.keys()
            .map(|key| {
                let mut h = Sha256::new();
                for part in [kind.as_str(), namespace, name, key] {
                    h.update(part.as_bytes());
                    h.update(b"\0");
                }
                h.update(self.value(key).unwrap_or_default());
                let mut digest = hex(&h.finalize());
                digest.truncate(KEY_DIGEST_LEN);
                (key.to_string(), digest)
            })
            .collect()
    }

    /// The content of a ConfigMap or Secret object as the API returns it (Secret data in
    /// base64), or `None` when it does not read as one.
    pub fn of_object(kind: ConfigKind, object: &Value) -> Option<ConfigData> {
        match kind {
            ConfigKind::ConfigMap => {
                let cm: k8s_openapi::api::core::v1::ConfigMap =
                    serde_json::from_value(object.clone()).ok()?;
                Some(ConfigData {
                    strings: cm.data.unwrap_or_default(),
                    bytes: bytes_of(cm.binary_data),
                    type_: None,
                })
            }
            ConfigKind::Secret => {
                let s: k8s_openapi::api::core::v1::Secret =
                    serde_json::from_value(object.clone()).ok()?;
                Some(secret_data(s))
            }
        }
    }
}

fn bytes_of(map: Option<BTreeMap<String, ByteString>>) -> BTreeMap<String, Vec<u8>> {
    map.unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect()
}

/// A Secret's content: `data`, with `stringData` merged over it as the API server merges it.
fn secret_data(s: k8s_openapi::api::core::v1::Secret) -> ConfigData {
    let mut bytes = bytes_of(s.data);
    for (k, v) in s.string_data.unwrap_or_default() {
        bytes.insert(k, v.into_bytes());
    }
    ConfigData {
        strings: BTreeMap::new(),
        bytes,
        type_: s.type_.filter(|t| !t.is_empty()),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// A ConfigMap or Secret of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigObject {
    /// Where it came from.
    pub source: DocRef,
    /// ConfigMap or Secret.
    pub kind: ConfigKind,
    /// Its namespace (the load's default when it names none).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    pub content: Arc<ConfigData>,
    /// Why the API server would refuse it (a DaemonSet that references it is invalid too).
    pub errors: Vec<FieldError>,
}

impl ConfigObject {
    /// `configmap/NAME` or `secret/NAME`, as the plan names it.
    pub fn id(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }

    /// Reads a ConfigMap or Secret (`value` has its namespace already) and checks it as the
    /// API server would.
    pub fn read(source: DocRef, kind: ConfigKind, value: &Value) -> ConfigObject {
        let meta = &value["metadata"];
        let namespace = meta["namespace"].as_str().unwrap_or_default().to_string();
        let name = meta["name"].as_str().unwrap_or_default().to_string();
        let read = match kind {
            ConfigKind::ConfigMap => {
                serde_path_to_error::deserialize::<_, k8s_openapi::api::core::v1::ConfigMap>(value)
                    .map(|cm| ConfigData {
                        strings: cm.data.unwrap_or_default(),
                        bytes: bytes_of(cm.binary_data),
                        type_: None,
                    })
                    .map_err(|e| {
                        let path = e.path().to_string();
                        FieldError::invalid(path, "(unreadable)", e.into_inner().to_string())
                    })
            }
            // The value that does not read is never quoted: it may be secret.
            ConfigKind::Secret => {
                serde_path_to_error::deserialize::<_, k8s_openapi::api::core::v1::Secret>(value)
                    .map(secret_data)
                    .map_err(|e| {
                        FieldError::invalid(
                            e.path().to_string(),
                            "<secret contents redacted>",
                            "does not read as a Secret field (values under data must be \
                             base64, under stringData plain strings)",
                        )
                    })
            }
        };
        let (content, mut errors) = match read {
            Ok(content) => (content, Vec::new()),
            Err(e) => (ConfigData::default(), vec![e]),
        };
        if errors.is_empty() {
            errors = validate(kind, &name, &content);
        }
        ConfigObject {
            source,
            kind,
            namespace,
            name,
            content: Arc::new(content),
            errors,
        }
    }

    /// A Secret the token controller fills in (`kubernetes.io/service-account-token`): left
    /// alone, never copied.
    pub fn is_service_account_token(&self) -> bool {
        self.content.type_.as_deref() == Some(SERVICE_ACCOUNT_TOKEN)
    }
}

/// `IsConfigMapKey`: the messages of a key the API server refuses (empty when valid).
pub fn config_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !ok {
        errs.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    if key == "." {
        errs.push("must not be '.'".to_string());
    } else if key == ".." {
        errs.push("must not be '..'".to_string());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// `ValidateConfigMap` and `ValidateSecret`: the name, the keys, the size and the keys a
/// Secret's type requires.
fn validate(kind: ConfigKind, name: &str, content: &ConfigData) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in super::names::dns1123_subdomain(name) {
            errs.push(FieldError::invalid("metadata.name", quote(name), msg));
        }
    }
    let key_errors = |field: &str, keys: &mut dyn Iterator<Item = &String>, errs: &mut Vec<_>| {
        for key in keys {
            for msg in config_key_errors(key) {
                errs.push(FieldError::invalid(
                    format!("{field}[{key}]"),
                    quote(key),
                    msg,
                ));
            }
        }
    };
    match kind {
        ConfigKind::ConfigMap => {
            key_errors("data", &mut content.strings.keys(), &mut errs);
            for key in content.strings.keys() {
                if content.bytes.contains_key(key) {
                    errs.push(FieldError::invalid(
                        format!("data[{key}]"),
                        quote(key),
                        "duplicate of key present in binaryData",
                    ));
                }
            }
            key_errors("binaryData", &mut content.bytes.keys(), &mut errs);
        }
        ConfigKind::Secret => {
            // stringData's keys are data's once merged; the API server checks them there.
            let mut keys = content.bytes.keys();
            key_errors("data", &mut keys, &mut errs);
        }
    }
    if content.size() > MAX_SIZE {
        errs.push(FieldError::too_long("data", MAX_SIZE).with_detail(format!(
            "the values of a {} may not be more than {MAX_SIZE} bytes together (the API \
             server's limit); split it",
            kind.kind()
        )));
    }
    if kind == ConfigKind::Secret {
        errs.extend(secret_type_errors(content));
    }
    errs
}

/// The keys a Secret's `type` requires (`ValidateSecret`).
fn secret_type_errors(content: &ConfigData) -> Vec<FieldError> {
    let has = |k: &str| content.bytes.contains_key(k);
    let required = |k: &str| FieldError::required(format!("data[{k}]"), "");
    let json = |k: &str| {
        let bytes = content.bytes.get(k).map_or(&[][..], Vec::as_slice);
        match serde_json::from_slice::<serde_json::Map<String, Value>>(bytes) {
            Ok(_) => None,
            Err(_) => Some(FieldError::invalid(
                format!("data[{k}]"),
                "<secret contents redacted>",
                "must be a JSON object",
            )),
        }
    };
    let mut errs = Vec::new();
    match content.type_.as_deref() {
        Some("kubernetes.io/dockercfg") => {
            if has(".dockercfg") {
                errs.extend(json(".dockercfg"));
            } else {
                errs.push(required(".dockercfg"));
            }
        }
        Some("kubernetes.io/dockerconfigjson") => {
            if has(".dockerconfigjson") {
                errs.extend(json(".dockerconfigjson"));
            } else {
                errs.push(required(".dockerconfigjson"));
            }
        }
        Some("kubernetes.io/basic-auth") if !has("username") && !has("password") => {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        Some("kubernetes.io/ssh-auth")
            if content
                .bytes
                .get("ssh-privatekey")
                .is_none_or(Vec::is_empty) =>
        {
            errs.push(required("ssh-privatekey"));
        }
        Some("kubernetes.io/tls") => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    errs.push(required(k));
                }
            }
        }
        _ => {}
    }
    errs
}

/// The `v1` object of `kind` with `metadata` holding `content` (a Secret's data in base64).
fn body_of(
    kind: ConfigKind,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    content: &ConfigData,
    immutable: Option<bool>,
) -> Value {
    let bytes: BTreeMap<String, ByteString> = content
        .bytes
        .iter()
        .map(|(k, v)| (k.clone(), ByteString(v.clone())))
        .collect();
    let bytes = (!bytes.is_empty()).then_some(bytes);
    let object = match kind {
        ConfigKind::ConfigMap => serde_json::to_value(k8s_openapi::api::core::v1::ConfigMap {
            metadata,
            immutable,
            data: (!content.strings.is_empty()).then(|| content.strings.clone()),
            binary_data: bytes,
        }),
        ConfigKind::Secret => serde_json::to_value(k8s_openapi::api::core::v1::Secret {
            metadata,
            immutable,
            data: bytes,
            string_data: None,
            type_: content.type_.clone(),
        }),
    };
    let mut object = object.unwrap_or(Value::Null);
    object["apiVersion"] = Value::from("v1");
    object["kind"] = Value::from(kind.kind());
    object
}

impl ConfigObject {
    /// The object as the source has it (its name, namespace and content): what `kubectl
    /// apply` of the source would store. Holds a Secret's values: never log it.
    pub fn body(&self) -> Value {
        let metadata = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            ..Default::default()
        };
        body_of(self.kind, metadata, &self.content, None)
    }
}

/// The value of a copy's [`DAEMONSET_LABEL`]: the DaemonSet's name, or, for a name longer
/// than a label value may be (63), its start and a digest of the whole.
pub fn daemonset_label(name: &str) -> String {
    if super::names::is_label_value(name) {
        return name.to_string();
    }
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    let digest = hex(&h.finalize());
    let start: String = name.chars().take(52).collect();
    let start = start.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{start}-{}", &digest[..10])
}

/// An immutable copy of a ConfigMap or Secret, named after its content, that one revision
/// of a DaemonSet references. Its `Debug` names the keys, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigCopy {
    /// ConfigMap or Secret.
    pub kind: ConfigKind,
    /// The namespace (the DaemonSet's).
    pub namespace: String,
    /// The copy's name: `ORIGINAL-<10 hex of the digest>`.
    pub name: String,
    /// The name of the object it copies.
    pub original: String,
    /// The digest of the content (64 hex).
    pub digest: String,
    /// The DaemonSet it belongs to.
    pub daemonset: String,
    /// The content.
    pub content: Arc<ConfigData>,
}

/// `ORIGINAL-<10 hex>`, the original cut so that the whole is a valid name (253 characters).
pub fn copy_name(original: &str, digest: &str) -> String {
    let suffix = digest.get(..NAME_DIGEST_LEN).unwrap_or(digest);
    let max = 253 - NAME_DIGEST_LEN - 1;
    let mut end = original.len().min(max);
    while !original.is_char_boundary(end) {
        end -= 1;
    }
    let base = original[..end].trim_end_matches(['-', '.']);
    format!("{base}-{suffix}")
}

impl ConfigCopy {
    /// The copy of `object` for the DaemonSet `daemonset`.
    pub fn of(object: &ConfigObject, daemonset: &str) -> ConfigCopy {
        let digest = object.content.digest(object.kind);
        ConfigCopy {
            kind: object.kind,
            namespace: object.namespace.clone(),
            name: copy_name(&object.name, &digest),
            original: object.name.clone(),
            digest,
            daemonset: daemonset.to_string(),
            content: Arc::clone(&object.content),
        }
    }

    /// `configmap/NAME` of the copy.
    pub fn id(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }

    /// The object to create: `immutable`, labelled as daemonsync's copy for its DaemonSet,
    /// owned by `owner` (whose deletion takes it along). Holds a Secret's values: never log
    /// it.
    pub fn body(&self, owner: OwnerReference) -> Value {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let metadata = ObjectMeta {
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            labels: Some(
                [
                    (
                        crate::model::MANAGED_BY_LABEL.to_string(),
                        crate::model::MANAGED_BY_VALUE.to_string(),
                    ),
                    (
                        DAEMONSET_LABEL.to_string(),
                        daemonset_label(&self.daemonset),
                    ),
                ]
                .into(),
            ),
            annotations: Some(
                [
                    (COPY_OF_ANNOTATION.to_string(), self.original.clone()),
                    (DIGEST_ANNOTATION.to_string(), self.digest.clone()),
                ]
                .into(),
            ),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        };
        body_of(self.kind, metadata, &self.content, Some(true))
    }

    /// Whether `object` (as the API returns it) holds this copy's content.
    pub fn same_content(&self, object: &Value) -> bool {
        ConfigData::of_object(self.kind, object).is_some_and(|c| c.digest(self.kind) == self.digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> DocRef {
        DocRef {
            file: "cm.yaml".into(),
            document: 1,
            line: Some(1),
            item: None,
        }
    }

    fn read(v: Value) -> ConfigObject {
        let kind = ConfigKind::of(
            v["apiVersion"].as_str().unwrap(),
            v["kind"].as_str().unwrap(),
        )
        .unwrap();
        ConfigObject::read(doc(), kind, &v)
    }

    fn errors(v: Value) -> Vec<String> {
        read(v).errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn keys_are_checked_as_the_api_server_checks_them() {
        let bad = errors(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "ns"},
            "data": {"bad key": "x", "..x": "y", "ok.key_1-2": "z", "dup": "a"},
            "binaryData": {"dup": "YQ=="}}));
        assert_eq!(bad.len(), 3, "{bad:#?}");
        assert!(bad[0].starts_with("data[..x]: Invalid value: \"..x\": must not start with '..'"));
        assert!(
            bad[1].starts_with("data[bad key]: Invalid value: \"bad key\": a valid config key")
        );
        assert!(
            bad[2].contains("duplicate of key present in binaryData"),
            "{bad:?}"
        );
        let name = errors(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "Cfg", "namespace": "ns"}}));
        assert!(
            name[0].starts_with("metadata.name: Invalid value: \"Cfg\""),
            "{name:?}"
        );
    }

    #[test]
    fn a_config_over_one_mebibyte_is_refused() {
        let big = "x".repeat(MAX_SIZE);
        let e = errors(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "ns"}, "data": {"a": big, "b": "y"}}));
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("data: Too long:"), "{e:?}");
    }

    #[test]
    fn a_secret_never_shows_its_values() {
        let s = read(
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "tls", "namespace": "ns"},
            "data": {"tls.crt": "aHVudGVyMg=="}, "stringData": {"password": "hunter2"}}),
        );
        let shown = format!("{s:?} {:?}", s.content.key_digests(s.kind, "ns", "tls"));
        assert!(
            !shown.contains("hunter2") && !shown.contains("aHVudGVyMg"),
            "{shown}"
        );
        assert!(
            shown.contains("password") && shown.contains("tls.crt"),
            "{shown}"
        );
        let e: Vec<String> = s.errors.iter().map(ToString::to_string).collect();
        assert_eq!(e, ["data[tls.key]: Required value"]);
        let unreadable = errors(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns"}, "data": {"k": "hunter2!"}}));
        assert_eq!(unreadable.len(), 1);
        assert!(!unreadable[0].contains("hunter2"), "{unreadable:?}");
        assert!(
            unreadable[0].starts_with("data.k: Invalid value"),
            "{unreadable:?}"
        );
    }

    #[test]
    fn equal_content_has_an_equal_digest_and_any_change_changes_it() {
        let cm = |data: Value| {
            read(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": "ns"}, "data": data}))
            .content
            .digest(ConfigKind::ConfigMap)
        };
        let a = cm(json!({"a": "1", "b": "2"}));
        assert_eq!(a, cm(json!({"b": "2", "a": "1"})));
        assert_eq!(a.len(), 64);
        for other in [
            json!({"a": "1", "b": "3"}),
            json!({"a": "1"}),
            json!({"a": "1", "b": "2", "c": ""}),
            json!({"a": "12", "b": ""}),
        ] {
            assert_ne!(cm(other.clone()), a, "{other}");
        }
    }

    #[test]
    fn a_copy_name_is_a_valid_name_however_long_the_original() {
        let digest = "0123456789abcdef";
        assert_eq!(
            copy_name("fluent-bit-config", digest),
            "fluent-bit-config-0123456789"
        );
        let long = format!("{}.{}", "a".repeat(241), "b".repeat(11));
        let name = copy_name(&long, digest);
        assert_eq!(name.len(), 252);
        assert!(super::super::names::is_dns1123_subdomain(&name), "{name}");
        assert!(name.ends_with("a-0123456789"), "{name}");
        assert_eq!(daemonset_label("agent"), "agent");
        let label = daemonset_label(&"d".repeat(100));
        assert!(
            super::super::names::is_label_value(&label) && label.len() == 63,
            "{label}"
        );
    }

    #[test]
    fn a_copy_is_immutable_labelled_and_owned() {
        let s = read(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "ns", "labels": {"team": "a"}},
            "stringData": {"token": "t0ken"}}));
        let copy = ConfigCopy::of(&s, "agent");
        let owner = OwnerReference {
            api_version: "daemonsync.io/v1alpha1".into(),
            kind: "ManagedDaemonSet".into(),
            name: "agent".into(),
            uid: "u-1".into(),
            ..OwnerReference::default()
        };
        let body = copy.body(owner);
        assert_eq!(body["kind"], "Secret");
        assert_eq!(body["immutable"], true);
        assert_eq!(body["metadata"]["name"], copy.name.as_str());
        assert_eq!(body["metadata"]["labels"][DAEMONSET_LABEL], "agent");
        assert_eq!(body["metadata"]["annotations"][COPY_OF_ANNOTATION], "creds");
        assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(body["data"]["token"], "dDBrZW4=");
        assert!(copy.same_content(&body));
        let mut other = body.clone();
        other["data"]["token"] = json!("b3RoZXI=");
        assert!(!copy.same_content(&other));
    }
}

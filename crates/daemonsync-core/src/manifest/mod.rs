//! Manifests: multi-document YAML / JSON, `kind: List`, defaulting and validation.
//!
//! Flow: sources ([`crate::source`]) read the files; [`load_str`] splits a file's text into
//! [`RawDocument`]s ([`read_documents`]: YAML as kubectl reads it, or JSON), classifies each
//! object, sets the default namespace, deserializes `apps/v1` DaemonSets (fields their schema
//! lacks refused, warned about or dropped as [`FieldValidation`] says), and applies the API
//! server's defaulting ([`apply_defaults`]) and validation ([`validate`]), then checks
//! daemonsync's own `daemonsync.io/` annotations ([`policy`]).
//! Valid DaemonSets become [`Manifest`]s, invalid ones [`InvalidDaemonSet`]s (with
//! API-server style [`FieldError`]s), everything else an [`OtherObject`].

pub mod config;
mod defaults;
pub mod duration;
mod error;
mod load;
pub mod policy;
mod served;
pub mod strict;
mod validate;
pub mod versioning;

#[cfg(test)]
mod yaml_compat;

use std::fmt;

use k8s_openapi::api::apps::v1::DaemonSet;

pub use defaults::{apply_defaults, apply_pod_defaults, default_pod};
pub use error::{FieldError, FieldErrorKind, LoadError};
pub use load::{Dialect, Format, load_str, read_documents, read_stream};
pub use validate::names;
pub use validate::{Gates, next_generations, validate, validate_update, validate_with};

/// Where an object came from: file, document number, start line and `List` item index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocRef {
    /// The file label (path as given, or a caller-chosen label for [`load_str`]).
    pub file: String,
    /// 1-based document number within the file (`---`-separated).
    pub document: usize,
    /// 1-based line where the document's content starts, if known.
    pub line: Option<usize>,
    /// Index inside a `kind: List`'s `items`, if the object came from a list.
    pub item: Option<usize>,
}

impl fmt::Display for DocRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, document {}", self.file, self.document)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        Ok(())
    }
}

/// One parsed object (a YAML/JSON document, or one item of a `kind: List`).
#[derive(Debug, Clone, PartialEq)]
pub struct RawDocument {
    /// Where it came from.
    pub source: DocRef,
    /// The object as generic JSON.
    pub value: serde_json::Value,
}

/// A defaulted and valid `apps/v1` DaemonSet.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Where it came from.
    pub source: DocRef,
    /// The DaemonSet after namespace defaulting, [`apply_defaults`] and a clean [`validate`].
    pub daemonset: DaemonSet,
    /// Fields of the document the DaemonSet schema does not have, in the API server's words
    /// (`unknown field "spec.template.spec.foo"`), kept only with [`FieldValidation::Warn`].
    pub warnings: Vec<String>,
    /// The immutable copies of the ConfigMaps and Secrets its template references, once
    /// [`versioning::version`] has rewritten it to reference them.
    pub config: Vec<config::ConfigCopy>,
}

/// A DaemonSet the API server would reject, with the reasons.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidDaemonSet {
    /// Where it came from.
    pub source: DocRef,
    /// `"namespace/name"`, or `"<unnamed>"` when it has no name.
    pub name: String,
    /// The errors, in the order the API server would report them.
    pub errors: Vec<FieldError>,
}

/// `N invalid DaemonSet(s)` and `what`, then each one with where it came from and its errors,
/// an indented line each: how sources and the simulator report invalid manifests.
pub fn invalid_message(invalid: &[InvalidDaemonSet], what: &str) -> String {
    let mut msg = format!("{} invalid DaemonSet(s){what}:", invalid.len());
    for bad in invalid {
        msg.push_str(&format!("\n  {} ({}):", bad.name, bad.source));
        for e in &bad.errors {
            msg.push_str(&format!("\n    - {e}"));
        }
    }
    msg
}

/// An object this module does not manage (RBAC, ConfigMaps, CRDs, ...). Never an error.
///
/// Only identifying fields are kept; e.g. a Secret's data is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherObject {
    /// Where it came from.
    pub source: DocRef,
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its `kind`.
    pub kind: String,
    /// Its `metadata.name`, if any.
    pub name: Option<String>,
}

/// Everything loaded, in input order (files in walk order, documents in file order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifests {
    /// Valid, defaulted DaemonSets.
    pub daemonsets: Vec<Manifest>,
    /// DaemonSets that fail validation (or use a removed API version).
    pub invalid: Vec<InvalidDaemonSet>,
    /// All other objects.
    pub others: Vec<OtherObject>,
    /// The `v1` ConfigMaps and Secrets among them, with what they hold (in memory only).
    pub configs: Vec<config::ConfigObject>,
}

impl Manifests {
    /// Appends `other`'s objects (files are loaded one at a time, in order).
    pub fn extend(&mut self, other: Manifests) {
        self.daemonsets.extend(other.daemonsets);
        self.invalid.extend(other.invalid);
        self.others.extend(other.others);
        self.configs.extend(other.configs);
    }
}

/// Resource limits for loading; defaults are generous for real manifests and keep hostile
/// input (huge files, alias bombs, deep nesting) bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest single file accepted, checked before reading (default 8 MiB).
    pub max_file_bytes: u64,
    /// Most files accepted from one source (default 10 000).
    pub max_files: usize,
    /// Most bytes accepted over all files of one source (default 64 MiB).
    pub max_total_bytes: u64,
    /// Deepest YAML nesting accepted (default 64).
    pub max_depth: usize,
    /// Most YAML parser events per file (default 1 000 000).
    pub max_events: usize,
    /// Most YAML nodes (scalars, sequences, mappings) per file (default 250 000).
    pub max_nodes: usize,
    /// Most YAML alias references (`*ref`) per file (default 1 000).
    pub max_aliases: usize,
    /// Most parser events replayed through alias expansion per file (default 10 000).
    pub max_alias_replayed_events: usize,
    /// Most documents per file (default 1 024).
    pub max_documents: usize,
    /// Deepest directory nesting a source walks, in a local tree or a git tree (default 64).
    pub max_dir_depth: usize,
    /// Longest symlink target read, in bytes (default 4 096, Linux's `PATH_MAX`).
    pub max_link_bytes: u64,
}

/// The size limits of one load, applied file by file as files are read: the single-file
/// limit and the running total. Every reader (files, directories, git trees) admits its files
/// through one budget, so the limits mean the same everywhere.
#[derive(Debug, Clone)]
pub struct ReadBudget {
    max_file_bytes: u64,
    max_total_bytes: u64,
    total: u64,
}

/// Why a file does not fit a [`ReadBudget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overrun {
    /// The file alone is larger than `limit`.
    File {
        /// The file's size.
        size: u64,
        /// The single-file limit.
        limit: u64,
    },
    /// With this file, the load reads more than `limit`.
    Total {
        /// Bytes read including this file.
        total: u64,
        /// The total limit.
        limit: u64,
    },
}

impl ReadBudget {
    /// A fresh budget for one load.
    pub fn new(limits: &Limits) -> Self {
        ReadBudget {
            max_file_bytes: limits.max_file_bytes,
            max_total_bytes: limits.max_total_bytes,
            total: 0,
        }
    }

    /// The most bytes worth reading from one file: one past the limit, so an oversized file is
    /// recognised without reading it whole.
    pub fn read_cap(&self) -> u64 {
        self.max_file_bytes.saturating_add(1)
    }

    /// Reads at most [`ReadBudget::read_cap`] bytes of the file at `path`, and returns them
    /// with the file's size (its full size when it is larger than what was read), ready for
    /// [`ReadBudget::admit`].
    pub fn read_capped(&self, path: &std::path::Path) -> std::io::Result<(Vec<u8>, u64)> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)?
            .take(self.read_cap())
            .read_to_end(&mut bytes)?;
        let read = bytes.len() as u64;
        let size = if read < self.read_cap() {
            read
        } else {
            std::fs::metadata(path).map_or(read, |m| m.len().max(read))
        };
        Ok((bytes, size))
    }

    /// Admits a file of `size` bytes, counting it towards the total.
    pub fn admit(&mut self, size: u64) -> Result<(), Overrun> {
        if size > self.max_file_bytes {
            return Err(Overrun::File {
                size,
                limit: self.max_file_bytes,
            });
        }
        self.total += size;
        if self.total > self.max_total_bytes {
            return Err(Overrun::Total {
                total: self.total,
                limit: self.max_total_bytes,
            });
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 8 * 1024 * 1024,
            max_files: 10_000,
            max_total_bytes: 64 * 1024 * 1024,
            max_depth: 64,
            max_events: 1_000_000,
            max_nodes: 250_000,
            max_aliases: 1_000,
            max_alias_replayed_events: 10_000,
            max_documents: 1_024,
            max_dir_depth: 64,
            max_link_bytes: 4_096,
        }
    }
}

/// What happens to a field of an `apps/v1` DaemonSet document that the DaemonSet schema does
/// not have (a misspelt or mis-indented key), as the API server's `fieldValidation` and
/// kubectl's `--validate` have it. Other kinds are never checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// The DaemonSet is invalid: each unknown field is an error with its path (the API
    /// server's `strict decoding error: unknown field "spec.foo"`). The default, as in kubectl.
    #[default]
    Strict,
    /// Each unknown field is a warning ([`Manifest::warnings`]); the field is dropped, as the
    /// API server drops it, and the DaemonSet is used.
    Warn,
    /// Unknown fields are dropped silently.
    Ignore,
}

/// Options for [`load_str`] and the sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Namespace given to objects without `metadata.namespace` (as kubectl does); `"default"`.
    pub default_namespace: String,
    /// Resource limits.
    pub limits: Limits,
    /// The Kubernetes version the manifests are read for and the cluster's feature gates that
    /// change what validation accepts (v1.35 and its defaults unless a caller says otherwise).
    pub gates: Gates,
    /// Unknown fields in DaemonSets: refused (default), warned about, or ignored.
    pub field_validation: FieldValidation,
}

impl LoadOptions {
    /// The Kubernetes version the manifests are read for.
    pub fn version(&self) -> crate::model::KubeVersion {
        self.gates.version
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_namespace: "default".to_string(),
            limits: Limits::default(),
            gates: Gates::default(),
            field_validation: FieldValidation::default(),
        }
    }
}

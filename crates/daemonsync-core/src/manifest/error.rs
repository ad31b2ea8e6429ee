//! Error types: API-server style field errors and load errors.

use std::fmt;

use super::DocRef;

/// The kind of a [`FieldError`], named after the API server's `field.ErrorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FieldErrorKind {
    /// "Invalid value": the value is malformed or out of range.
    Invalid,
    /// "Required value": a mandatory field is missing or empty.
    Required,
    /// "Unsupported value": the value is not one of an enumerated set.
    NotSupported,
    /// "Forbidden": the field may not be set here.
    Forbidden,
    /// "Duplicate value": the value must be unique but was seen before.
    Duplicate,
    /// "Not found": the value refers to something that does not exist (e.g. a volume).
    NotFound,
    /// "Too long": the value is longer than allowed (the value itself is not printed).
    TooLong,
    /// "Too many": a list has more items than allowed (the value is the item count).
    TooMany,
    /// A field the schema does not have (the API server's strict decoding, not a
    /// `field.ErrorType`): printed `strict decoding error: unknown field "PATH"`.
    UnknownField,
}

impl FieldErrorKind {
    /// The text the API server prints for this kind, e.g. `"Invalid value"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::NotFound => "Not found",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::UnknownField => "Unknown field",
        }
    }

    /// Whether the API server prints the offending value for this kind.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            FieldErrorKind::Required
                | FieldErrorKind::Forbidden
                | FieldErrorKind::TooLong
                | FieldErrorKind::UnknownField
        )
    }
}

impl fmt::Display for FieldErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validation error, shaped like the API server's `field.Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The `field.Path` string, e.g. `spec.template.spec.containers[0].image`.
    pub path: String,
    /// What went wrong.
    pub kind: FieldErrorKind,
    /// The offending value, already rendered the way the API server prints it
    /// (strings quoted, numbers bare). `None` prints as `null` for kinds that show values.
    pub value: Option<String>,
    /// Human-readable detail (may be empty).
    pub detail: String,
}

impl FieldError {
    /// An "Invalid value" error.
    pub fn invalid(
        path: impl Into<String>,
        value: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Invalid,
            value: Some(value.into()),
            detail: detail.into(),
        }
    }

    /// A "Required value" error.
    pub fn required(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Required,
            value: None,
            detail: detail.into(),
        }
    }

    /// A "Forbidden" error.
    pub fn forbidden(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Forbidden,
            value: None,
            detail: detail.into(),
        }
    }

    /// An "Unsupported value" error listing the supported values.
    pub fn not_supported(
        path: impl Into<String>,
        value: impl Into<String>,
        supported: &[&str],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::NotSupported,
            value: Some(value.into()),
            detail,
        }
    }

    /// A "Duplicate value" error.
    pub fn duplicate(path: impl Into<String>, value: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Duplicate,
            value: Some(value.into()),
            detail: String::new(),
        }
    }

    /// A "Not found" error.
    pub fn not_found(path: impl Into<String>, value: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::NotFound,
            value: Some(value.into()),
            detail: String::new(),
        }
    }

    /// A "Too long" error for a value longer than `max` bytes (`field.TooLong`).
    pub fn too_long(path: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::TooLong,
            value: None,
            detail: format!("may not be more than {max} {unit}"),
        }
    }

    /// A "Too many" error for a list of `actual` items where at most `max` are allowed
    /// (`field.TooMany`).
    pub fn too_many(path: impl Into<String>, actual: usize, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::TooMany,
            value: Some(actual.to_string()),
            detail: format!("must have at most {max} {unit}"),
        }
    }

    /// An unknown field at `path` (strict decoding), with what to do about it.
    pub fn unknown_field(path: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::UnknownField,
            value: None,
            detail: "the DaemonSet schema (apps/v1, Kubernetes v1.35) has no such field here, \
                     so the API server would refuse the object; correct its spelling or \
                     indentation, or remove it (--validate=warn plans without it)"
                .to_string(),
        }
    }

    /// The API server's words for an unknown field: `unknown field "spec.foo"`.
    pub fn unknown_field_message(path: &str) -> String {
        format!("unknown field {}", quote(path))
    }

    /// Adds detail to an error (e.g. the supported values of a "Not found").
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }

    /// Appends `note` (which Kubernetes version refuses this, and from which one it is
    /// accepted) to upstream's detail.
    pub fn with_version_note(mut self, note: impl AsRef<str>) -> Self {
        if !self.detail.is_empty() {
            self.detail.push(' ');
        }
        self.detail.push_str(note.as_ref());
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == FieldErrorKind::UnknownField {
            write!(
                f,
                "strict decoding error: {}",
                FieldError::unknown_field_message(&self.path)
            )?;
            if !self.detail.is_empty() {
                write!(f, ": {}", self.detail)?;
            }
            return Ok(());
        }
        write!(f, "{}: {}", self.path, self.kind)?;
        if self.kind.shows_value() {
            write!(f, ": {}", self.value.as_deref().unwrap_or("null"))?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Render a string the way Go's `%q` (`strconv.Quote`) does: printable characters as they are,
/// the usual backslash escapes, other control characters as `\xNN` or `\uNNNN`.
pub(crate) fn quote(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn doc_suffix(document: &Option<usize>) -> String {
    match document {
        Some(d) => format!(", document {d}"),
        None => String::new(),
    }
}

/// Why a set of manifests could not be loaded at all.
///
/// Problems inside a single DaemonSet are not `LoadError`s: they are reported per object as
/// [`super::InvalidDaemonSet`]. A `LoadError` means the input itself could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file is not valid UTF-8 text.
    #[error("{file}: not UTF-8 text (invalid byte at offset {offset}); save the manifest as UTF-8")]
    NotUtf8 {
        /// File label.
        file: String,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// YAML or JSON syntax error.
    #[error(
        "{file}{}, line {line}, column {column}: syntax error: {message}; fix the manifest at that position (indentation, quoting, a missing ':' or bracket) and retry",
        doc_suffix(document)
    )]
    Syntax {
        /// File label.
        file: String,
        /// 1-based document number, when known.
        document: Option<usize>,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Parser message.
        message: String,
    },
    /// A file is bigger than [`super::Limits::max_file_bytes`].
    #[error(
        "{file}: file is {size} bytes, more than the limit of {limit} bytes; split it into smaller files or raise the file size limit"
    )]
    TooLarge {
        /// File label.
        file: String,
        /// Actual size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// A file holds more documents than [`super::Limits::max_documents`].
    #[error(
        "{file}: more than {limit} documents in one file; split it into several files (or raise the document limit if the file is legitimate)"
    )]
    TooManyDocuments {
        /// File label.
        file: String,
        /// The limit.
        limit: usize,
    },
    /// A YAML resource budget was exceeded: too deep, too many nodes, or alias expansion
    /// ("billion laughs").
    #[error(
        "{file}: refused to parse: {message}; the YAML is too deep, too large or expands too many aliases (anchors/`*refs`) - expand or remove the aliases, or raise the YAML budget limits if the file is legitimate"
    )]
    Budget {
        /// File label.
        file: String,
        /// What was exceeded.
        message: String,
    },
    /// A document is not a mapping (e.g. a bare string or a sequence).
    #[error(
        "{doc}: expected a Kubernetes object (a mapping with apiVersion and kind), found {found}; remove the document or fix its indentation"
    )]
    NotAnObject {
        /// Where the document is.
        doc: DocRef,
        /// What was found (e.g. "a string").
        found: String,
    },
    /// A document lacks `apiVersion` or `kind`.
    #[error(
        "{doc}: object has no `{field}`; every Kubernetes object needs string `apiVersion` and `kind` fields - add the missing one"
    )]
    MissingTypeField {
        /// Where the document is.
        doc: DocRef,
        /// `apiVersion` or `kind`.
        field: &'static str,
    },
}

//! Reading files into documents and classifying the objects in them.

use k8s_openapi::api::apps::v1::DaemonSet;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

use super::error::quote;
use super::strict::{Skip, StrictValue};
use super::{
    DocRef, FieldError, FieldValidation, InvalidDaemonSet, Limits, LoadError, LoadOptions,
    Manifest, Manifests, OtherObject, RawDocument, apply_defaults, validate_with,
};

/// Split one file's text into objects.
///
/// YAML (multi-document, comment-only documents skipped) unless `file_label` ends in `.json`,
/// in which case the text is one or more concatenated JSON values. Objects whose kind ends in
/// `List` and that carry an `items` array are flattened into their items.
///
/// Fails cleanly on syntax errors (with line and column), on files over
/// [`Limits::max_file_bytes`], and on inputs exceeding the YAML budget (alias bombs, deep nesting).
pub fn read_documents(
    file_label: &str,
    text: &str,
    limits: &Limits,
) -> Result<Vec<RawDocument>, LoadError> {
    let docs = read_stream::<StrictValue>(file_label, text, limits, Dialect::Manifest)?;
    let mut out = Vec::new();
    for (source, value) in docs {
        flatten(source, value.0, &mut out)?;
    }
    Ok(out)
}

/// The syntax of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A YAML document stream (JSON is read as YAML too, but more slowly).
    Yaml,
    /// One or more concatenated JSON values.
    Json,
}

/// Whom a file is read for: the two differ only where kubectl's readers and writers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Manifests, as kubectl reads them: YAML 1.1 octal numbers (`0755` is 493); JSON only
    /// when the name ends in `.json`.
    Manifest,
    /// Cluster snapshots, as `kubectl get -o yaml|json` writes them: YAML 1.2 booleans only
    /// (a plain `on` or `n`, a namespace or a label value, stays a string); JSON when the
    /// name ends in `.json` or the text starts with `{`.
    Snapshot,
}

impl Dialect {
    /// The format `text`, named `file_label`, is read in.
    pub fn format(self, file_label: &str, text: &str) -> Format {
        let named_json = file_label.to_ascii_lowercase().ends_with(".json");
        let looks_json = self == Dialect::Snapshot && text.trim_start().starts_with('{');
        if named_json || looks_json {
            Format::Json
        } else {
            Format::Yaml
        }
    }
}

/// Reads one file's text as a stream of documents, each deserialized straight into `T`: the
/// one entry point of every reader of Kubernetes objects (manifests and snapshots). The format
/// comes from [`Dialect::format`]; a JSON-looking snapshot that is not JSON is read as YAML.
/// Empty and `null` documents are skipped.
///
/// Bounded by `limits` (file size, documents, and the YAML budget: depth, nodes, aliases).
/// Errors carry the file, the document, the line and the column. Duplicate keys are refused by
/// the YAML parser; in JSON, refusing them is `T`'s part, as serde_json keeps the last.
pub fn read_stream<'de, T: Deserialize<'de>>(
    file_label: &str,
    text: &'de str,
    limits: &Limits,
    dialect: Dialect,
) -> Result<Vec<(DocRef, T)>, LoadError> {
    let size = text.len() as u64;
    if size > limits.max_file_bytes {
        return Err(LoadError::TooLarge {
            file: file_label.to_string(),
            size,
            limit: limits.max_file_bytes,
        });
    }
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    match dialect.format(file_label, text) {
        Format::Json => match parse_json(file_label, text, limits) {
            Err(LoadError::Syntax { .. })
                if dialect == Dialect::Snapshot
                    && !file_label.to_ascii_lowercase().ends_with(".json") =>
            {
                parse_yaml(file_label, text, limits, dialect)
            }
            read => read,
        },
        Format::Yaml => parse_yaml(file_label, text, limits, dialect),
    }
}

/// Lines (1-based) that hold a `---` document marker, and whether the first marker opens
/// document 1 (only comments, blank lines or directives precede it).
struct DocMarkers {
    lines: Vec<usize>,
    first_opens_doc_one: bool,
}

impl DocMarkers {
    fn scan(text: &str) -> Self {
        let mut lines = Vec::new();
        let mut content_before_first = false;
        for (i, line) in text.lines().enumerate() {
            let is_marker = line.strip_prefix("---").is_some_and(|rest| {
                rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')
            });
            if is_marker {
                lines.push(i + 1);
            } else if lines.is_empty() {
                let t = line.trim();
                if !(t.is_empty() || t.starts_with('#') || t.starts_with('%')) {
                    content_before_first = true;
                }
            }
        }
        DocMarkers {
            lines,
            first_opens_doc_one: !content_before_first,
        }
    }

    /// 1-based document number of content at `line`.
    fn document_at(&self, line: usize) -> usize {
        let before = self.lines.partition_point(|&m| m < line);
        let n = if self.first_opens_doc_one && !self.lines.is_empty() {
            before
        } else {
            before + 1
        };
        n.max(1)
    }
}

fn yaml_options(limits: &Limits, dialect: Dialect) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = limits.max_events;
    budget.max_depth = limits.max_depth;
    budget.max_nodes = limits.max_nodes;
    budget.max_aliases = limits.max_aliases;
    budget.max_documents = limits.max_documents;
    budget.max_total_scalar_bytes = usize::try_from(limits.max_file_bytes).unwrap_or(usize::MAX);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = limits.max_alias_replayed_events;
    options.with_snippet = false;
    match dialect {
        // kubectl reads YAML 1.1: `defaultMode: 0755` is octal (493), not 755.
        Dialect::Manifest => options.legacy_octal_numbers = true,
        // kubectl writes YAML 1.2 and quotes what would otherwise read as another type.
        Dialect::Snapshot => options.strict_booleans = true,
    }
    options
}

fn innermost(err: &serde_saphyr::Error) -> &serde_saphyr::Error {
    let mut err = err;
    loop {
        match err {
            serde_saphyr::Error::WithSnippet { error, .. }
            | serde_saphyr::Error::AliasError { error, .. } => err = error,
            _ => return err,
        }
    }
}

/// Drop the parser's own location suffix (we print line and column ourselves) and hints
/// about parser options that a manifest author cannot act on.
fn clean_message(message: &str) -> String {
    let mut m = message.trim();
    if let Some(i) = m.rfind(" at line ")
        && m[i..].contains(", column ")
    {
        m = &m[..i];
    }
    m.replace(", set DuplicateKeyPolicy in Options if acceptable", "")
}

fn yaml_error(
    file_label: &str,
    markers: &DocMarkers,
    err: &serde_saphyr::Error,
    max_documents: usize,
) -> LoadError {
    let inner = innermost(err);
    if let serde_saphyr::Error::Budget {
        breach: serde_saphyr::budget::BudgetBreach::Documents { .. },
        ..
    } = inner
    {
        return LoadError::TooManyDocuments {
            file: file_label.to_string(),
            limit: max_documents,
        };
    }
    if let serde_saphyr::Error::Budget {
        breach: serde_saphyr::budget::BudgetBreach::Depth { depth },
        ..
    } = inner
    {
        return LoadError::Budget {
            file: file_label.to_string(),
            message: format!(
                "nested more than {} levels deep (no Kubernetes object is)",
                depth.saturating_sub(1)
            ),
        };
    }
    let mut message = clean_message(&inner.to_string());
    if message.contains("recursion limit") {
        message =
            "nested too deeply to be a Kubernetes object (the parser's recursion limit)".into();
    }
    let is_budget = matches!(
        inner,
        serde_saphyr::Error::Budget { .. }
            | serde_saphyr::Error::AliasReplayLimitExceeded { .. }
            | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. }
            | serde_saphyr::Error::AliasReplayCounterOverflow { .. }
    ) || message.contains("recursion limit");
    if is_budget {
        return LoadError::Budget {
            file: file_label.to_string(),
            message,
        };
    }
    let (line, column) = match err.location() {
        Some(loc) if loc.line() > 0 => (loc.line() as usize, loc.column() as usize),
        _ => (0, 0),
    };
    LoadError::Syntax {
        file: file_label.to_string(),
        document: (line > 0).then(|| markers.document_at(line)),
        line,
        column,
        message,
    }
}

/// The first tab (1-based line and column) where go-yaml, and so kubectl, refuses one but the
/// YAML 1.2 scanner takes it as white space: in block context, at the start of a line or right
/// after a `:`, `-` or `?` indicator. libyaml eats tabs between tokens only in flow context or
/// where a simple key may not start, and those are the places one may; elsewhere the tab
/// "cannot start any token".
///
/// Runs only on text that has a tab and that parsed: a second scan, of tokens only, after the
/// budgets of the first pass bounded the input.
fn refused_tab(text: &str) -> Option<(usize, usize)> {
    use granit_parser::{Scanner, StrInput, TokenType};
    let mut options = granit_parser::Options::default();
    options.emit_comments = false;
    let scanner = Scanner::with_options(StrInput::new(text), options);
    let mut flow_level = 0usize;
    // Whether a simple key may start here (libyaml's `simple_key_allowed`).
    let mut key_allowed = true;
    let (mut end, mut end_line, mut end_col) = (0usize, 1usize, 0usize);
    for token in scanner {
        let Ok(token) = token else { return None };
        let span = token.span();
        let start = span.start.byte_offset()?;
        if start > end && flow_level == 0 {
            let (mut line, mut col) = (end_line, end_col);
            let mut in_comment = false;
            for c in text.get(end..start)?.chars() {
                match c {
                    '\n' => {
                        line += 1;
                        col = 0;
                        in_comment = false;
                        key_allowed = true;
                        continue;
                    }
                    '#' => in_comment = true,
                    '\t' if key_allowed && !in_comment => return Some((line, col + 1)),
                    _ => {}
                }
                col += 1;
            }
        }
        let stop = span.end.byte_offset()?;
        if stop > end {
            (end, end_line, end_col) = (stop, span.end.line(), span.end.col());
        }
        let width = stop.saturating_sub(start);
        match token.token_type() {
            TokenType::FlowSequenceStart | TokenType::FlowMappingStart => flow_level += 1,
            TokenType::FlowSequenceEnd | TokenType::FlowMappingEnd => {
                flow_level = flow_level.saturating_sub(1)
            }
            _ => {}
        }
        match token.token_type() {
            TokenType::Value | TokenType::BlockEntry => key_allowed = flow_level == 0,
            TokenType::Key if width > 0 => key_allowed = flow_level == 0,
            // Zero-width tokens (block starts and ends, implicit keys) sit before the next
            // real token and change nothing about the white space before it.
            _ if width == 0 => {}
            _ => key_allowed = false,
        }
    }
    None
}

fn parse_yaml<'de, T: Deserialize<'de>>(
    file_label: &str,
    text: &'de str,
    limits: &Limits,
    dialect: Dialect,
) -> Result<Vec<(DocRef, T)>, LoadError> {
    let markers = DocMarkers::scan(text);
    let docs: Vec<serde_saphyr::Spanned<T>> =
        serde_saphyr::from_multiple_with_options(text, yaml_options(limits, dialect))
            .map_err(|e| yaml_error(file_label, &markers, &e, limits.max_documents))?;
    // kubectl writes no tab where its reader refuses one: only manifests are checked.
    if dialect == Dialect::Manifest
        && text.contains('\t')
        && let Some((line, column)) = refused_tab(text)
    {
        return Err(LoadError::Syntax {
            file: file_label.to_string(),
            document: Some(markers.document_at(line)),
            line,
            column,
            message: "found a tab character that cannot start any token (kubectl's YAML \
                      reader refuses a tab at the start of a line or after ':', '-' or '?'); \
                      use spaces there"
                .to_string(),
        });
    }
    let mut out = Vec::new();
    let mut last_doc = 0;
    for doc in docs {
        let line = usize::try_from(doc.referenced.line()).unwrap_or(0);
        let (document, line) = if line > 0 {
            (markers.document_at(line).max(last_doc + 1), Some(line))
        } else {
            (last_doc + 1, None)
        };
        last_doc = document;
        out.push((
            DocRef {
                file: file_label.to_string(),
                document,
                line,
                item: None,
            },
            doc.value,
        ));
    }
    Ok(out)
}

/// Counts lines incrementally while a JSON stream is read, so finding each document's line
/// costs the bytes since the previous document, not a rescan from the start.
struct LineCounter<'t> {
    text: &'t str,
    offset: usize,
    line: usize,
}

impl LineCounter<'_> {
    /// The 1-based line of byte `offset` (offsets only move forward).
    fn line_at(&mut self, offset: usize) -> usize {
        let end = offset.clamp(self.offset, self.text.len());
        self.line += self.text.as_bytes()[self.offset..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.offset = end;
        self.line
    }
}

/// One or more concatenated JSON values. Duplicate keys are refused with their path (the API
/// server's strict decoding does; serde_json alone would keep the last silently), and the
/// document budget applies as it does to YAML.
fn parse_json<'de, T: Deserialize<'de>>(
    file_label: &str,
    text: &'de str,
    limits: &Limits,
) -> Result<Vec<(DocRef, T)>, LoadError> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<T>();
    let mut lines = LineCounter {
        text,
        offset: 0,
        line: 1,
    };
    let mut out = Vec::new();
    loop {
        let start = text
            .get(lines.offset..)
            .and_then(|rest| rest.find(|c: char| !c.is_whitespace()))
            .map(|i| lines.offset + i);
        let Some(start) = start else { break };
        let document = out.len() + 1;
        if document > limits.max_documents {
            return Err(LoadError::TooManyDocuments {
                file: file_label.to_string(),
                limit: limits.max_documents,
            });
        }
        let line = lines.line_at(start);
        match stream.next() {
            None => break,
            Some(Ok(value)) => out.push((
                DocRef {
                    file: file_label.to_string(),
                    document,
                    line: Some(line),
                    item: None,
                },
                value,
            )),
            Some(Err(e)) => {
                return Err(LoadError::Syntax {
                    file: file_label.to_string(),
                    document: Some(document),
                    line: e.line(),
                    column: e.column(),
                    message: json_error_message(&text[start..], e),
                });
            }
        }
        lines.line_at(stream.byte_offset());
    }
    Ok(out)
}

/// How deep serde_json nests before it refuses (its recursion limit).
const JSON_DEPTH_LIMIT: usize = 128;

/// The message of a JSON error, with the field path where the document has one (a second
/// pass over the failing document only: errors are the rare case).
fn json_error_message(document: &str, err: serde_json::Error) -> String {
    if err.to_string().starts_with("recursion limit exceeded") {
        // The path would be the same `[0]` or `.a` a hundred times over.
        return format!(
            "nested more than {JSON_DEPTH_LIMIT} levels deep (no Kubernetes object is)"
        );
    }
    // Skipped, not built: the document may be a snapshot of hundreds of megabytes.
    let mut de = serde_json::Deserializer::from_str(document);
    let path = match serde_path_to_error::deserialize::<_, Skip>(&mut de) {
        Err(e) => e.path().to_string(),
        Ok(_) => String::new(),
    };
    let message = err.to_string();
    let message = match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    };
    if path.is_empty() || path == "." {
        message
    } else {
        format!("{path}: {message}")
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

fn flatten(source: DocRef, value: Value, out: &mut Vec<RawDocument>) -> Result<(), LoadError> {
    let Value::Object(map) = value else {
        return Err(LoadError::NotAnObject {
            found: describe(&value).to_string(),
            doc: source,
        });
    };
    let is_list = map
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"))
        && matches!(map.get("items"), Some(Value::Array(_)) | Some(Value::Null));
    if !is_list {
        out.push(RawDocument {
            source,
            value: Value::Object(map),
        });
        return Ok(());
    }
    let mut map = map;
    if let Some(Value::Array(items)) = map.remove("items") {
        for (i, item) in items.into_iter().enumerate() {
            let src = DocRef {
                item: Some(i),
                ..source.clone()
            };
            match item {
                Value::Object(_) => out.push(RawDocument {
                    source: src,
                    value: item,
                }),
                other => {
                    return Err(LoadError::NotAnObject {
                        found: describe(&other).to_string(),
                        doc: src,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Parse one file's text and classify, default and validate every object in it.
///
/// `file_label` names the input in [`DocRef`]s and errors; a label ending in `.json` selects
/// JSON parsing.
pub fn load_str(file_label: &str, text: &str, opts: &LoadOptions) -> Result<Manifests, LoadError> {
    let docs = read_documents(file_label, text, &opts.limits)?;
    let mut out = Manifests::default();
    for doc in docs {
        classify(doc, opts, &mut out)?;
    }
    Ok(out)
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut v = value;
    for p in path {
        v = v.get(p)?;
    }
    v.as_str()
}

fn classify(doc: RawDocument, opts: &LoadOptions, out: &mut Manifests) -> Result<(), LoadError> {
    let api_version = match doc.value.get("apiVersion").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => {
            return Err(LoadError::MissingTypeField {
                doc: doc.source,
                field: "apiVersion",
            });
        }
    };
    let kind = match doc.value.get("kind").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => {
            return Err(LoadError::MissingTypeField {
                doc: doc.source,
                field: "kind",
            });
        }
    };
    if kind != "DaemonSet" {
        if let Some(config) = super::config::ConfigKind::of(&api_version, &kind) {
            let value = with_default_namespace(doc.value.clone(), &opts.default_namespace);
            out.configs.push(super::config::ConfigObject::read(
                doc.source.clone(),
                config,
                &value,
            ));
        }
        out.others.push(other(doc, api_version, kind));
        return Ok(());
    }
    match api_version.as_str() {
        "apps/v1" => {
            out_daemonset(doc, opts, out);
            Ok(())
        }
        "extensions/v1beta1" | "apps/v1beta2" => {
            let value = with_default_namespace(doc.value, &opts.default_namespace);
            out.invalid.push(InvalidDaemonSet {
                name: display_name(&value),
                errors: vec![legacy_error(&api_version, &value)],
                source: doc.source,
            });
            Ok(())
        }
        _ => {
            out.others.push(other(doc, api_version, kind));
            Ok(())
        }
    }
}

fn other(doc: RawDocument, api_version: String, kind: String) -> OtherObject {
    OtherObject {
        name: str_at(&doc.value, &["metadata", "name"]).map(str::to_string),
        source: doc.source,
        api_version,
        kind,
    }
}

fn with_default_namespace(mut value: Value, default_namespace: &str) -> Value {
    let Some(obj) = value.as_object_mut() else {
        return value;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if meta.is_null() {
        *meta = Value::Object(Default::default());
    }
    if let Some(meta) = meta.as_object_mut() {
        let missing = match meta.get("namespace") {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if missing {
            meta.insert(
                "namespace".to_string(),
                Value::String(default_namespace.to_string()),
            );
        }
    }
    value
}

fn display_name(value: &Value) -> String {
    match str_at(value, &["metadata", "name"]) {
        Some(name) if !name.is_empty() => match str_at(value, &["metadata", "namespace"]) {
            Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
            _ => name.to_string(),
        },
        _ => "<unnamed>".to_string(),
    }
}

fn legacy_error(api_version: &str, value: &Value) -> FieldError {
    let mut detail = format!(
        "DaemonSet {api_version} is no longer served by the API server (removed in Kubernetes 1.16); convert it to apiVersion: apps/v1"
    );
    let selector = value.pointer("/spec/selector");
    let has_selector = selector.is_some_and(|s| !s.is_null());
    if has_selector {
        detail.push_str(
            "; keep the explicit spec.selector (apps/v1 requires it and it must match spec.template.metadata.labels)",
        );
    } else {
        let labels: BTreeMap<String, String> = value
            .pointer("/spec/template/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default();
        if labels.is_empty() {
            detail.push_str(
                "; spec.selector is missing and apps/v1 requires an explicit one (the legacy API defaulted it from the template labels, which are empty here): add spec.template.metadata.labels and a spec.selector.matchLabels with the same labels",
            );
        } else {
            let rendered: Vec<String> = labels.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            detail.push_str(&format!(
                "; spec.selector is missing and apps/v1 requires an explicit one (the legacy API defaulted it from the template labels): add spec.selector.matchLabels: {{{}}}",
                rendered.join(", ")
            ));
        }
    }
    let has_strategy_type = value
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if api_version == "extensions/v1beta1" && !has_strategy_type {
        detail.push_str(
            "; note: extensions/v1beta1 defaulted updateStrategy to OnDelete but apps/v1 defaults to RollingUpdate - set spec.updateStrategy.type: OnDelete to keep the old behaviour",
        );
    }
    FieldError::invalid("apiVersion", quote(api_version), detail)
}

/// Render a JSON value roughly as the API server prints bad values.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        other => other.to_string(),
    }
}

/// Deserializes a DaemonSet, collecting the paths (API server format) of the fields its schema
/// does not have when `check` is set. k8s-openapi skips such fields; `serde_ignored` sees each
/// skip with its path, in the same pass. The path of a type error is found by a second pass
/// only when there is one (the rare case), so the common case pays for one wrapper, not two.
fn typed_daemonset(
    value: &Value,
    check: bool,
) -> (
    Result<DaemonSet, serde_path_to_error::Error<serde_json::Error>>,
    Vec<String>,
) {
    use serde::Deserialize as _;
    let mut unknown: Vec<String> = Vec::new();
    let first = if check {
        serde_ignored::deserialize(value, |path| {
            let path = api_path(&path);
            if !unknown.contains(&path) {
                unknown.push(path);
            }
        })
    } else {
        DaemonSet::deserialize(value)
    };
    match first {
        Ok(ds) => (Ok(ds), unknown),
        Err(_) => (serde_path_to_error::deserialize(value), Vec::new()),
    }
}

/// A `serde_ignored` path as the API server prints field paths:
/// `spec.template.spec.volumes[0].projected.sources[0].itmes`.
fn api_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    let mut segments: Vec<&Path<'_>> = Vec::new();
    let mut p = path;
    loop {
        match p {
            Path::Root => break,
            Path::Seq { parent, .. } | Path::Map { parent, .. } => {
                segments.push(p);
                p = parent;
            }
            Path::Some { parent }
            | Path::NewtypeStruct { parent }
            | Path::NewtypeVariant { parent } => p = parent,
        }
    }
    let mut out = String::new();
    for seg in segments.iter().rev() {
        match seg {
            Path::Seq { index, .. } => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
            Path::Map { key, .. } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            _ => {}
        }
    }
    out
}

fn out_daemonset(doc: RawDocument, opts: &LoadOptions, out: &mut Manifests) {
    let value = with_default_namespace(doc.value, &opts.default_namespace);
    let name = display_name(&value);
    let explicit_empty_selector = matches!(value.pointer("/spec/selector"), Some(Value::Object(_)));
    let (result, unknown) =
        typed_daemonset(&value, opts.field_validation != FieldValidation::Ignore);
    let mut ds: DaemonSet = match result {
        Ok(ds) => ds,
        Err(err) => {
            let path = err.path().to_string();
            let pointer = json_pointer(err.path());
            let bad = value
                .pointer(&pointer)
                .map(render_value)
                .unwrap_or_else(|| "null".to_string());
            let detail = err.into_inner().to_string();
            out.invalid.push(InvalidDaemonSet {
                source: doc.source,
                name,
                errors: vec![FieldError::invalid(path, bad, detail)],
            });
            return;
        }
    };
    // Fields the target version would not keep are read as the strict decoder reads unknown
    // ones (see `served`).
    let unserved = super::served::take_unserved(&mut ds, opts.gates.version);
    // The API server decodes strictly before it validates: unknown fields are the only errors
    // it reports for such an object.
    if opts.field_validation == FieldValidation::Strict
        && (!unknown.is_empty() || !unserved.is_empty())
    {
        let errors = unknown
            .iter()
            .map(FieldError::unknown_field)
            .chain(unserved.iter().map(|u| u.error()))
            .collect();
        out.invalid.push(InvalidDaemonSet {
            source: doc.source,
            name,
            errors,
        });
        return;
    }
    let warnings: Vec<String> = unknown
        .iter()
        .map(|p| FieldError::unknown_field_message(p))
        .chain(unserved.iter().map(|u| u.warning()))
        .collect();
    if explicit_empty_selector
        && let Some(spec) = ds.spec.as_mut()
        && spec.selector.match_labels.is_none()
        && spec.selector.match_expressions.is_none()
    {
        // `selector: {}` is present-but-empty, not absent: keep the distinction (see `validate`).
        spec.selector.match_labels = Some(BTreeMap::new());
    }
    apply_defaults(&mut ds);
    let mut errors = validate_with(&ds, &opts.gates);
    // daemonsync's own annotations: a typo must not silently disable a canary.
    if let Err(policy) = super::policy::RolloutPolicy::of(&ds) {
        errors.extend(policy);
    }
    if errors.is_empty() {
        // A DaemonSet that gates new nodes on its pods tolerates the taint it gates them with.
        super::policy::tolerate_readiness_taint(&mut ds);
        out.daemonsets.push(Manifest {
            source: doc.source,
            daemonset: ds,
            warnings,
            config: Vec::new(),
        });
    } else {
        out.invalid.push(InvalidDaemonSet {
            source: doc.source,
            name,
            errors,
        });
    }
}

fn json_pointer(path: &serde_path_to_error::Path) -> String {
    let mut s = String::new();
    for seg in path.iter() {
        s.push('/');
        match seg {
            serde_path_to_error::Segment::Seq { index } => s.push_str(&index.to_string()),
            serde_path_to_error::Segment::Map { key } => {
                s.push_str(&key.replace('~', "~0").replace('/', "~1"))
            }
            serde_path_to_error::Segment::Enum { variant } => s.push_str(variant),
            serde_path_to_error::Segment::Unknown => s.push('?'),
        }
    }
    s
}

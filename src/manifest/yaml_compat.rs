//! YAML as kubectl reads it: one test per go-yaml behaviour that manifests rely on, each
//! asserting the result `kubectl apply -f` gives.
//!
//! kubectl reads YAML through sigs.k8s.io/yaml, which decodes with its copy of go-yaml v2 (a
//! port of libyaml, YAML 1.1 scalars) into untyped values and converts those to JSON before
//! the API server decodes them into the typed object; kubectl's own document splitter and
//! kustomize's reader (go-yaml v3) run before that. Where a case below could not be run
//! against go-yaml itself, the comment says which documented go-yaml rule it follows.

use serde_json::{Value, json};

use super::*;

/// A valid DaemonSet whose first container's fields are followed by `extra` (indented for
/// the container mapping, 8 spaces) and whose pod spec is followed by `pod` (6 spaces).
fn daemonset(extra: &str, pod: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: kube-system
spec:
  selector:
    matchLabels: {{app: agent}}
  template:
    metadata:
      labels: {{app: agent}}
    spec:
      containers:
      - name: agent
        image: registry.example/agent:1.0
{extra}{pod}"
    )
}

fn load(text: &str) -> Manifests {
    load_str("compat.yaml", text, &LoadOptions::default()).expect("the file loads")
}

/// The one valid DaemonSet of `text`, as generic JSON (after defaulting).
fn only_daemonset(text: &str) -> Value {
    let m = load(text);
    assert!(m.invalid.is_empty(), "invalid: {:?}", m.invalid);
    assert_eq!(m.daemonsets.len(), 1);
    serde_json::to_value(&m.daemonsets[0].daemonset).unwrap()
}

fn syntax_error(text: &str) -> (usize, usize, String) {
    match load_str("compat.yaml", text, &LoadOptions::default()) {
        Err(LoadError::Syntax {
            line,
            column,
            message,
            ..
        }) => (line, column, message),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

/// A CustomResourceDefinition shaped like controller-gen's output in released install files,
/// its description a quoted scalar of `quote` continued at the key's own indentation.
fn crd_with_description(quote: char) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
spec:
  group: example.com
  names: {{kind: Foo, plural: foos}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: {quote}Foo is the Schema for the foos API. It is
        continued here at the key indentation{quote}
        type: object
---
"
    )
}

#[test]
fn quoted_scalar_continued_at_the_keys_indentation_single_quoted() {
    let text = crd_with_description('\'') + &daemonset("", "");
    let m = load(&text);
    assert_eq!(
        m.daemonsets.len(),
        1,
        "the DaemonSet beside the CRD is planned"
    );
    assert_eq!(m.others.len(), 1);
    assert_eq!(m.others[0].kind, "CustomResourceDefinition");
    let docs = read_documents("compat.yaml", &text, &Limits::default()).unwrap();
    assert_eq!(
        docs[0]
            .value
            .pointer("/spec/versions/0/schema/openAPIV3Schema/description"),
        Some(&json!(
            "Foo is the Schema for the foos API. It is continued here at the key indentation"
        ))
    );
}

#[test]
fn quoted_scalar_continued_at_the_keys_indentation_double_quoted() {
    let text = crd_with_description('"') + &daemonset("", "");
    let m = load(&text);
    assert_eq!(m.daemonsets.len(), 1);
    assert_eq!(m.others.len(), 1);
}

#[test]
fn quoted_scalar_continued_at_column_zero_is_folded() {
    // libyaml (and so go-yaml) checks continuation lines of a quoted scalar only for document
    // markers, never for indentation.
    let text = daemonset("        args:\n        - 'a\nb'\n        - \"c\nd\"\n", "");
    let ds = only_daemonset(&text);
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["a b", "c d"])
    );
}

#[test]
fn document_marker_inside_a_quoted_scalar_is_refused() {
    // go-yaml: "found unexpected document indicator" while scanning a quoted scalar.
    let text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  k: 'a\n---\nb'\n";
    let (line, _, message) = syntax_error(text);
    assert_eq!(line, 4);
    assert!(message.contains("document indicator"), "{message}");
}

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

#[test]
fn yaml11_booleans_fill_boolean_fields() {
    // go-yaml v2 resolves y/Y/yes/Yes/YES/on/On/ON as true and n/N/no/No/NO/off/Off/OFF as
    // false; the JSON kubectl sends carries the boolean.
    let text = daemonset(
        "        stdin: yes\n        tty: Y\n        securityContext:\n          privileged: on\n          readOnlyRootFilesystem: off\n          runAsNonRoot: n\n",
        "      hostNetwork: YES\n      hostPID: No\n",
    );
    let ds = only_daemonset(&text);
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["hostNetwork"], json!(true));
    assert_eq!(pod.get("hostPID"), None, "false is not stored");
    let c = &pod["containers"][0];
    assert_eq!(c["stdin"], json!(true));
    assert_eq!(c["tty"], json!(true));
    assert_eq!(c["securityContext"]["privileged"], json!(true));
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], json!(false));
    assert_eq!(c["securityContext"]["runAsNonRoot"], json!(false));
}

#[test]
fn yaml11_booleans_in_string_fields_are_refused_unless_quoted() {
    // sigs.k8s.io/yaml turns `value: yes` into JSON `true` before the API server sees it, and
    // the server refuses a boolean for a string field ("cannot unmarshal bool into Go struct
    // field EnvVar...value of type string"); quoted, the text is kept.
    let text = daemonset(
        "        env:\n        - name: DEBUG\n          value: yes\n",
        "",
    );
    let m = load(&text);
    assert!(m.daemonsets.is_empty());
    let e = &m.invalid[0].errors[0];
    assert_eq!(e.path, "spec.template.spec.containers[0].env[0].value");
    assert!(e.to_string().contains("boolean"), "{e}");

    let text = daemonset(
        "        env:\n        - name: DEBUG\n          value: 'yes'\n        - name: MODE\n          value: \"off\"\n",
        "",
    );
    let ds = only_daemonset(&text);
    let env = &ds["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env[0]["value"], json!("yes"));
    assert_eq!(env[1]["value"], json!("off"));
}

#[test]
fn legacy_octal_default_mode() {
    // YAML 1.1: a leading 0 is octal, `0644` is 420 (go-yaml v2 parses with Go's base-0
    // ParseInt, which also reads `0o644`).
    let text = daemonset(
        "",
        "      volumes:\n      - name: a\n        configMap: {name: a, defaultMode: 0644}\n      - name: b\n        secret: {secretName: b, defaultMode: 0o755}\n",
    );
    let ds = only_daemonset(&text);
    let volumes = &ds["spec"]["template"]["spec"]["volumes"];
    assert_eq!(volumes[0]["configMap"]["defaultMode"], json!(420));
    assert_eq!(volumes[1]["secret"]["defaultMode"], json!(493));
}

#[test]
fn hex_integers() {
    let text = daemonset(
        "",
        "      volumes:\n      - name: a\n        configMap: {name: a, defaultMode: 0x1A4}\n",
    );
    let ds = only_daemonset(&text);
    assert_eq!(
        ds.pointer("/spec/template/spec/volumes/0/configMap/defaultMode"),
        Some(&json!(420))
    );
}

#[test]
fn tilde_and_empty_values_are_null() {
    let text = daemonset(
        "        args: ~\n        command:\n",
        "      nodeSelector: ~\n      tolerations:\n",
    );
    let ds = only_daemonset(&text);
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod.get("nodeSelector"), None);
    assert_eq!(pod.get("tolerations"), None);
    assert_eq!(pod["containers"][0].get("args"), None);
    assert_eq!(pod["containers"][0].get("command"), None);
}

#[test]
fn merge_keys_and_anchors_and_aliases() {
    let text = "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  labels: &labels {app: agent, tier: node}
spec:
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels: *labels
    spec:
      containers:
      - name: agent
        image: registry.example/agent:1.0
        resources:
          requests: &requests {cpu: 100m, memory: 64Mi}
          limits:
            <<: *requests
            memory: 128Mi
";
    let ds = only_daemonset(text);
    assert_eq!(
        ds["spec"]["selector"]["matchLabels"],
        json!({"app": "agent", "tier": "node"})
    );
    assert_eq!(
        ds["spec"]["template"]["metadata"]["labels"],
        ds["metadata"]["labels"]
    );
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"],
        json!({"cpu": "100m", "memory": "128Mi"}),
        "the merged mapping's own keys win"
    );
}

#[test]
fn document_separators_with_comments_leading_separator_end_markers_and_empty_documents() {
    let text = format!(
        "--- # the agent\n{}...\n---\n# nothing but a comment\n---\n---   \napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cfg}}\n...\n",
        daemonset("", "")
    );
    let m = load(&text);
    assert_eq!(m.daemonsets.len(), 1);
    assert_eq!(m.daemonsets[0].source.document, 1);
    assert_eq!(m.daemonsets[0].source.line, Some(2));
    assert_eq!(m.others.len(), 1);
    assert_eq!(m.others[0].name.as_deref(), Some("cfg"));
    assert_eq!(m.others[0].source.document, 4);
}

#[test]
fn crlf_line_endings() {
    let text = daemonset(
        "        args:\n        - |\n          line one\n          line two\n",
        "",
    )
    .replace('\n', "\r\n");
    let ds = only_daemonset(&text);
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["args"][0],
        json!("line one\nline two\n"),
        "line breaks of block scalars are normalised to \\n, as go-yaml does"
    );
}

#[test]
fn utf8_byte_order_mark() {
    let text = format!("\u{FEFF}{}", daemonset("", ""));
    only_daemonset(&text);
}

#[test]
fn tab_indentation_is_refused_with_line_and_column() {
    // go-yaml: "found character that cannot start any token" (v2) / "found a tab character
    // that violates indentation" (v3).
    let text = daemonset("\timagePullPolicy: Always\n", "").replace(
        "image: registry.example/agent:1.0",
        "image: 'registry.example/agent:1.0'",
    );
    let (line, column, message) = syntax_error(&text);
    assert_eq!((line, column), (16, 2));
    assert!(message.contains("tabs disallowed"), "{message}");
    // After a plain scalar the parser names the scalar whose continuation it was scanning
    // (go-yaml names the tab's own line, one further down).
    let text = daemonset("\timagePullPolicy: Always\n", "");
    let (line, column, message) = syntax_error(&text);
    assert_eq!((line, column), (15, 16));
    assert!(message.contains("found a tab"), "{message}");
}

#[test]
fn tabs_inside_scalars_are_content() {
    let text = daemonset("        args: [\"a\\tb\", 'c\td']\n", "");
    let ds = only_daemonset(&text);
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["a\tb", "c\td"])
    );
}

#[test]
fn duplicate_keys_are_refused_in_every_document() {
    // kubectl reads with go-yaml v3, which refuses a mapping key given twice ("mapping key
    // \"image\" already defined at line 16"), whatever the kind and whatever --validate says.
    let text = daemonset("        image: registry.example/agent:2.0\n", "");
    let (line, column, message) = syntax_error(&text);
    assert_eq!((line, column), (16, 9));
    assert!(
        message.contains("duplicate mapping key: image"),
        "{message}"
    );
    let text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: x\n  a: y\n";
    let (line, _, _) = syntax_error(text);
    assert_eq!(line, 5);
}

#[test]
fn very_long_lines() {
    let long = "x".repeat(200_000);
    let text = daemonset("", "").replace(
        "  name: agent\n  namespace",
        &format!("  name: agent\n  annotations: {{note: {long}}}\n  namespace"),
    );
    let ds = only_daemonset(&text);
    assert_eq!(
        ds["metadata"]["annotations"]["note"].as_str().map(str::len),
        Some(200_000)
    );
}

#[test]
fn block_scalars_literal_strip_and_folded_keep() {
    let text = daemonset(
        "        command:\n        - |\n          one\n          two\n        - |-\n          three\n          four\n        - >+\n          five\n          six\n\n        - >\n          seven\n\n          eight\n",
        "",
    );
    let ds = only_daemonset(&text);
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["command"],
        json!([
            "one\ntwo\n",
            "three\nfour",
            "five six\n\n",
            "seven\neight\n"
        ])
    );
}

#[test]
fn tab_after_a_colon_or_a_dash_or_on_a_blank_line_is_refused_as_go_yaml_does() {
    // libyaml eats a tab between tokens only in flow context or where a simple key cannot
    // start; at the start of a line and after `:`, `-` or `?` the tab "cannot start any token".
    let cases = [
        ("        imagePullPolicy:\tAlways\n", (16, 25)),
        ("        imagePullPolicy: \tAlways\n", (16, 26)),
        ("        args:\n        -\t--verbose\n", (17, 10)),
        ("        args: [a]\n\t\n        tty: true\n", (17, 1)),
        ("        args: [a]\n  \t# a comment\n", (17, 3)),
    ];
    for (extra, at) in cases {
        let text = daemonset(extra, "");
        let (line, column, message) = syntax_error(&text);
        assert_eq!((line, column), at, "{extra:?}");
        assert!(message.contains("tab"), "{message}");
    }
    let err = load_str(
        "compat.yaml",
        &daemonset("        imagePullPolicy:\tAlways\n", ""),
        &LoadOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("compat.yaml, document 1, line 16, column 25: syntax error: found a tab"),
        "{err}"
    );
}

#[test]
fn tabs_where_go_yaml_takes_them_as_white_space_are_accepted() {
    let text = daemonset(
        "        imagePullPolicy: Always\t# trailing tab, then a comment\n        workingDir: \"/srv\"\t\n        args: [a,\tb]\n        env:\n        - {name: A,\tvalue: x}\n        - name: B\n          value: &b\tx\n        command:\n        - |\n          one\ttwo\n# a comment\twith a tab\n",
        "",
    );
    let ds = only_daemonset(&text);
    let c = &ds["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["args"], json!(["a", "b"]));
    assert_eq!(c["env"][1]["value"], json!("x"));
    assert_eq!(c["command"], json!(["one\ttwo\n"]));
    assert_eq!(c["workingDir"], json!("/srv"));
}

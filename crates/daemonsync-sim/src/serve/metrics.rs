//! `GET /metrics`: the requests served, counted as kube-apiserver counts them in its
//! `apiserver_request_total` counter (upstream `k8s.io/apiserver/pkg/endpoints/metrics`), in
//! the Prometheus text format. A client's test or benchmark reads how many requests of each
//! kind it made, the way it would read them from a real cluster's API server.
//!
//! The labels are upstream's: `verb` (the HTTP method in upper case, with `GET` of a
//! collection reported as `LIST`, a watch as `WATCH`, a server-side apply as `APPLY`),
//! `dry_run`, `group`, `version`, `resource`, `subresource`, `scope` (`resource` for a named
//! object or a create, `namespace`, `cluster`), `component` (`apiserver`) and `code` (the
//! status answered, injected faults included). Non-resource URLs (`/version`, `/api`,
//! `/healthz`, `/metrics`, ...) are counted with their path as `subresource` and the other
//! labels empty, as upstream counts them.

use super::http::RequestInfo;
use axum::http::Method;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Mutex;

/// The counter's name.
pub const REQUEST_TOTAL: &str = "apiserver_request_total";

/// The content type of a server-side apply (upstream `types.ApplyPatchType`).
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// Verbs upstream reports as they are; any other is reported as `other`.
const VALID_VERBS: &[&str] = &[
    "APPLY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "DELETECOLLECTION",
    "GET",
    "LIST",
    "PATCH",
    "POST",
    "PROXY",
    "PUT",
    "UPDATE",
    "WATCH",
    "WATCHLIST",
];

/// Subresources reported as `CONNECT` (upstream `validConnectRequests`).
const CONNECT_SUBRESOURCES: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];

/// The labels of one series of `apiserver_request_total`, in the order Prometheus prints them
/// (alphabetical).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Labels {
    /// The HTTP status answered.
    pub code: u16,
    /// `apiserver` for resource requests, empty for non-resource URLs.
    pub component: String,
    /// The `dryRun` values, sorted and joined with commas (`All`), or `invalid`.
    pub dry_run: String,
    /// The API group (`""` for core).
    pub group: String,
    /// The resource plural.
    pub resource: String,
    /// `resource`, `namespace`, `cluster` (empty for non-resource URLs).
    pub scope: String,
    /// The subresource (`status`, `eviction`), or the path of a non-resource URL.
    pub subresource: String,
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, ...
    pub verb: String,
    /// The API version (`v1`).
    pub version: String,
}

impl Labels {
    /// The labels of a request (before its answer: `code` is 0).
    pub fn of(method: &Method, path: &str, query: Option<&str>, content_type: &str) -> Labels {
        let query: HashMap<String, Vec<String>> =
            form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .into_owned()
                .fold(HashMap::new(), |mut m, (k, v)| {
                    m.entry(k).or_default().push(v);
                    m
                });
        let info = RequestInfo::of(method, path, None);
        let method = match *method {
            Method::HEAD => "GET".to_string(),
            ref m => m.as_str().to_ascii_uppercase(),
        };
        let watch_param = query
            .get("watch")
            .and_then(|v| v.first())
            .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"));
        let dry_run = dry_run(query.get("dryRun").map(Vec::as_slice).unwrap_or_default());
        match info {
            RequestInfo::Resource {
                verb: rbac_verb,
                group,
                resource,
                subresource,
                namespace,
                name,
            } => {
                let scope = if name.is_some() || rbac_verb == "create" {
                    "resource"
                } else if namespace.is_some() {
                    "namespace"
                } else {
                    "cluster"
                };
                let mut verb = match method.as_str() {
                    "GET" if scope != "resource" => "LIST".to_string(),
                    _ => method.clone(),
                };
                // `GET /api/v1/watch/...`: the installer's verb is WATCH; a LIST with
                // `watch=true` is reported as one (upstream `CleanVerb`); a GET of one named
                // object ignores the parameter.
                if rbac_verb == "watch" || (verb == "LIST" && watch_param) {
                    verb = "WATCH".into();
                }
                if method == "PATCH" && content_type == APPLY_PATCH {
                    verb = "APPLY".into();
                }
                let subresource = subresource.unwrap_or_default();
                if CONNECT_SUBRESOURCES.contains(&subresource.as_str()) {
                    verb = "CONNECT".into();
                }
                if !VALID_VERBS.contains(&verb.as_str()) {
                    verb = "other".into();
                }
                Labels {
                    code: 0,
                    component: "apiserver".into(),
                    dry_run,
                    group,
                    resource,
                    scope: scope.into(),
                    subresource,
                    verb,
                    version: api_version(path),
                }
            }
            RequestInfo::NonResource { path, .. } => {
                let verb = if VALID_VERBS.contains(&method.as_str()) {
                    method
                } else {
                    "other".into()
                };
                Labels {
                    dry_run,
                    subresource: path,
                    verb,
                    ..Labels::default()
                }
            }
        }
    }
}

/// The `dry_run` label: the values sorted and deduplicated, or `invalid` when one is not
/// `All` (the only value the API server accepts).
fn dry_run(values: &[String]) -> String {
    if values.iter().any(|v| v != "All") {
        return "invalid".into();
    }
    let mut v: Vec<&str> = values.iter().map(String::as_str).collect();
    v.sort_unstable();
    v.dedup();
    v.join(",")
}

/// The version of `/api/VERSION/...` or `/apis/GROUP/VERSION/...`.
fn api_version(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match parts.as_slice() {
        ["api", v, ..] | ["apis", _, v, ..] => v.to_string(),
        _ => String::new(),
    }
}

/// The counts of every request served.
#[derive(Debug, Default)]
pub struct RequestCounts {
    counts: Mutex<BTreeMap<Labels, u64>>,
}

impl RequestCounts {
    /// Counts one request answered `code`.
    pub fn count(&self, mut labels: Labels, code: u16) {
        labels.code = code;
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *counts.entry(labels).or_default() += 1;
    }

    /// The counts in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = format!(
            "# HELP {REQUEST_TOTAL} [STABLE] Counter of apiserver requests broken out for each \
             verb, dry run value, group, version, resource, scope, component, and HTTP response \
             code.\n# TYPE {REQUEST_TOTAL} counter\n"
        );
        for (l, n) in counts.iter() {
            let _ = writeln!(
                out,
                "{REQUEST_TOTAL}{{code=\"{}\",component=\"{}\",dry_run=\"{}\",group=\"{}\",\
                 resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"}} {n}",
                l.code,
                escape(&l.component),
                escape(&l.dry_run),
                escape(&l.group),
                escape(&l.resource),
                escape(&l.scope),
                escape(&l.subresource),
                escape(&l.verb),
                escape(&l.version),
            );
        }
        out
    }
}

/// A label value escaped for the text format (backslash, double quote, line feed).
fn escape(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(method: Method, url: &str, content_type: &str) -> (String, String, String, String) {
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (url, None),
        };
        let l = Labels::of(&method, path, query, content_type);
        (l.verb, l.scope, l.subresource, l.version)
    }

    fn row(verb: &str, scope: &str, sub: &str, version: &str) -> (String, String, String, String) {
        (verb.into(), scope.into(), sub.into(), version.into())
    }

    #[test]
    fn verbs_and_scopes_are_the_ones_the_api_server_reports() {
        let json = "application/json";
        let cases = [
            (
                Method::GET,
                "/api/v1/pods",
                json,
                row("LIST", "cluster", "", "v1"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/ns/pods?labelSelector=a%3Db",
                json,
                row("LIST", "namespace", "", "v1"),
            ),
            (
                Method::GET,
                "/api/v1/pods?watch=true&resourceVersion=5",
                json,
                row("WATCH", "cluster", "", "v1"),
            ),
            (
                Method::GET,
                "/api/v1/pods?watch=false",
                json,
                row("LIST", "cluster", "", "v1"),
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/ns/pods",
                json,
                row("WATCH", "namespace", "", "v1"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/ns/pods/p",
                json,
                row("GET", "resource", "", "v1"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/ns/pods",
                json,
                row("POST", "resource", "", "v1"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/ns/pods/p/eviction",
                json,
                row("POST", "resource", "eviction", "v1"),
            ),
            (
                Method::PUT,
                "/api/v1/nodes/n",
                json,
                row("PUT", "resource", "", "v1"),
            ),
            (
                Method::PATCH,
                "/apis/daemonsync.io/v1alpha1/namespaces/ns/manageddaemonsets/a/status",
                "application/merge-patch+json",
                row("PATCH", "resource", "status", "v1alpha1"),
            ),
            (
                Method::PATCH,
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
                "application/apply-patch+yaml",
                row("APPLY", "resource", "", "v1"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/ns/pods/p",
                json,
                row("DELETE", "resource", "", "v1"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/ns/pods",
                json,
                row("DELETE", "namespace", "", "v1"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/ns/pods/p/log",
                json,
                row("CONNECT", "resource", "log", "v1"),
            ),
            (
                Method::GET,
                "/version",
                json,
                row("GET", "", "/version", ""),
            ),
            (Method::GET, "/apis", json, row("GET", "", "/apis", "")),
        ];
        for (method, url, ct, want) in cases {
            assert_eq!(labels(method.clone(), url, ct), want, "{method} {url}");
        }
    }

    #[test]
    fn dry_runs_are_labelled_and_the_text_format_sorts_labels() {
        let l = Labels::of(
            &Method::POST,
            "/api/v1/namespaces/ns/configmaps",
            Some("dryRun=All&fieldManager=x"),
            "application/json",
        );
        assert_eq!(l.dry_run, "All");
        let bad = Labels::of(
            &Method::POST,
            "/api/v1/namespaces/ns/configmaps",
            Some("dryRun=Some"),
            "",
        );
        assert_eq!(bad.dry_run, "invalid");
        let counts = RequestCounts::default();
        counts.count(l.clone(), 201);
        counts.count(l, 201);
        let text = counts.render();
        assert!(
            text.contains("# TYPE apiserver_request_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"All\",\
                 group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",\
                 verb=\"POST\",version=\"v1\"} 2\n"
            ),
            "{text}"
        );
    }
}

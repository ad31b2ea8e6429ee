//! `/version`, legacy discovery (`/api`, `/apis`, `/api/v1`, `/apis/G/V`) and the minimal
//! `/openapi/v3` that lets `kubectl apply -f` skip client-side validation.

use crate::api::kinds::{Behaviour, Kind, Registry};
use crate::config::KubeVersion;
use serde_json::{Value, json};

/// `/version`: the simulated cluster's version, as kube-apiserver reports its own
/// (`k8s.io/apimachinery/pkg/version.Info`). kubectl's dispatcher runs the kubectl of that
/// minor when it has one (1.27 to 1.33 here), else its default, 1.32.
pub fn version(v: KubeVersion) -> Value {
    json!({"major": v.major.to_string(), "minor": v.minor.to_string(),
           "emulationMajor": v.major.to_string(), "emulationMinor": v.minor.to_string(),
           "minCompatibilityMajor": v.major.to_string(),
           "minCompatibilityMinor": v.minor.saturating_sub(1).to_string(),
           "gitVersion": format!("v{v}"), "gitCommit": "daemonsync-sim",
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.6",
           "compiler": "gc", "platform": "linux/amd64"})
}

/// `/api`.
pub fn api(server: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}]})
}

/// `/apis`.
pub fn apis(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .into_iter()
        .map(|(group, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
                .collect();
            json!({"name": group, "versions": vs, "preferredVersion": vs[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

const VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

fn resource(k: &Kind) -> Value {
    let mut r = json!({"name": k.plural, "singularName": k.singular, "namespaced": k.namespaced,
                       "kind": k.kind, "verbs": VERBS});
    if !k.short_names.is_empty() {
        r["shortNames"] = json!(k.short_names);
    }
    if !k.categories.is_empty() {
        r["categories"] = json!(k.categories);
    }
    r
}

/// `/api/v1` or `/apis/G/V`: `None` when the group version is not served.
pub fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let kinds: Vec<_> = registry
        .all()
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for k in kinds {
        list.push(resource(k));
        if k.status {
            list.push(json!({"name": format!("{}/status", k.plural), "singularName": "", "namespaced": k.namespaced,
                             "kind": k.kind, "verbs": ["get", "patch", "update"]}));
        }
        if k.behaviour == Behaviour::Pods {
            // kubectl drain reads the group and version of Evictions from here.
            list.push(
                json!({"name": "pods/eviction", "singularName": "", "namespaced": true,
                             "group": "policy", "version": "v1", "kind": "Eviction",
                             "verbs": ["create"]}),
            );
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: one entry per group version (core always, kubectl checks its Namespace).
pub fn openapi_index(registry: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    let mut gvs = vec![(String::new(), "v1".to_string())];
    for (g, vs) in registry.groups() {
        gvs.extend(vs.into_iter().map(|v| (g.clone(), v)));
    }
    for (g, v) in gvs {
        let p = gv_path(&g, &v);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=0")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/api/v1`, `/openapi/v3/apis/G/V`: a PATCH operation per kind that accepts
/// `fieldValidation`, which is all `kubectl apply` looks for.
pub fn openapi_group_version(registry: &Registry, gv: &str) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    for k in registry.all() {
        if gv_path(&k.group, &k.version) != gv {
            continue;
        }
        let op = json!({"patch": {
            "x-kubernetes-group-version-kind": {"group": k.group, "version": k.version, "kind": k.kind},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}}}});
        let base = k.path(Some("{namespace}"));
        paths.insert(format!("{base}/{{name}}"), op);
    }
    if paths.is_empty() {
        return None;
    }
    Some(
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "unversioned"},
                "components": {"schemas": {}}, "paths": paths}),
    )
}

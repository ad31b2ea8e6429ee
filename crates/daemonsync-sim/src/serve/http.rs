//! The HTTP surface: routes, query parameters, content negotiation (JSON or Table), watches
//! as chunked NDJSON, fault injection and the request log.

use super::discovery;
use super::faults::{Faults, Injected};
use super::paging;
use super::tables;
use crate::api::convert::to_view;
use crate::api::error::ApiError;
use crate::api::kinds::{Behaviour, Kind};
use crate::api::patch::PatchType;
use crate::api::select::{Selectors, parse_fields, parse_labels};
use crate::api::store::{Change, ChangeType, Stored};
use crate::api::world::{DeleteParams, World, WriteParams, namespace_of};
use crate::model::Timestamp;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, broadcast, mpsc, watch};

/// State shared by every request.
pub struct Shared {
    /// The served state.
    pub world: Mutex<World>,
    /// Wakes the clock driver after a write (a new event may be due sooner).
    pub wake: Notify,
    /// Injected failures.
    pub faults: Faults,
    /// Generator of fault decisions.
    pub fault_rng: Mutex<u64>,
    /// Interval of watch bookmarks (when the client allows them).
    pub bookmark_interval: Duration,
    /// Becomes true on shutdown: watches end.
    pub shutdown: watch::Receiver<bool>,
    /// `host:port` the server listens on.
    pub address: String,
    /// Where each request is logged (`--request-log`).
    pub request_log: Option<Arc<RequestLog>>,
    /// Every request served, counted as `apiserver_request_total` (`GET /metrics`).
    pub requests: super::metrics::RequestCounts,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("address", &self.address)
            .field("faults", &self.faults)
            .finish()
    }
}

impl Shared {
    /// The world, locked (a panic elsewhere does not make it unusable).
    pub fn lock(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The world, locked and caught up with the wall clock.
    fn lock_now(&self) -> MutexGuard<'_, World> {
        let mut w = self.lock();
        w.tick(Timestamp::now());
        w
    }
}

/// The router of the whole API.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            inject_faults,
        ))
        .layer(middleware::from_fn_with_state(shared.clone(), log_requests))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            count_requests,
        ))
        .with_state(shared)
}

/// Counts every request with the code answered (injected faults included), when its answer
/// starts: a watch is counted when its stream opens.
async fn count_requests(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let labels = super::metrics::Labels::of(
        req.method(),
        req.uri().path(),
        req.uri().query(),
        content_type,
    );
    let response = next.run(req).await;
    s.requests.count(labels, response.status().as_u16());
    response
}

async fn inject_faults(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    // The metrics are the observer's, not the API's: never failed.
    if s.faults.is_none() || req.uri().path() == "/metrics" {
        return next.run(req).await;
    }
    if !s.faults.latency.is_zero() {
        tokio::time::sleep(s.faults.latency).await;
    }
    if let RequestInfo::Resource {
        verb,
        group,
        resource,
        subresource,
        namespace,
        ..
    } = RequestInfo::of(req.method(), req.uri().path(), req.uri().query())
        && s.faults.forbids(&verb, &resource, subresource.as_deref())
    {
        return ApiError::forbidden(
            &verb,
            &group,
            &resource,
            subresource.as_deref(),
            namespace.as_deref(),
        )
        .into_response();
    }
    let r = crate::nodes::splitmix64(&mut s.fault_rng.lock().unwrap_or_else(|e| e.into_inner()));
    match s.faults.decide(r) {
        Injected::Pass => next.run(req).await,
        Injected::InternalError => {
            ApiError::internal("injected by --faults error-rate").into_response()
        }
        Injected::TooManyRequests => ApiError::too_many_requests(1).into_response(),
    }
}

/// What the API server's authorization sees of a request (upstream's `RequestInfo`): a
/// resource request's verb, group, resource, subresource, namespace and name, or the path of a
/// non-resource URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestInfo {
    /// `/api/v1/...` or `/apis/GROUP/VERSION/...` naming a resource.
    Resource {
        /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or
        /// `deletecollection`.
        verb: String,
        /// The API group (`""` for core).
        group: String,
        /// The resource plural.
        resource: String,
        /// `status`, or none.
        subresource: Option<String>,
        /// The namespace, when the URL names one.
        namespace: Option<String>,
        /// The object's name, when the URL names one.
        name: Option<String>,
    },
    /// `/version`, `/api`, `/apis`, `/api/v1` (discovery), `/openapi/...`, `/healthz`, ...
    NonResource {
        /// The URL path.
        path: String,
        /// The HTTP method in lower case (`get`).
        verb: String,
    },
}

/// The RBAC verb of an HTTP method before the URL is looked at (upstream's mapping).
fn method_verb(method: &Method) -> String {
    match *method {
        Method::GET | Method::HEAD => "get".into(),
        Method::POST => "create".into(),
        Method::PUT => "update".into(),
        Method::PATCH => "patch".into(),
        Method::DELETE => "delete".into(),
        ref other => other.as_str().to_ascii_lowercase(),
    }
}

/// `?watch=` as the API server parses it (Go's `strconv.ParseBool`).
fn parse_bool(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

impl RequestInfo {
    /// Computes what the API server computes for `method` on `path?query`: `GET` on a
    /// collection is `list`, or `watch` with `watch=true`; `DELETE` on a collection is
    /// `deletecollection`; `/api/v1/watch/...` is `watch`; a namespace's `status` and
    /// `finalize` are its subresources; fewer than a resource's segments is non-resource.
    pub fn of(method: &Method, path: &str, query: Option<&str>) -> RequestInfo {
        let non_resource = || RequestInfo::NonResource {
            path: path.to_string(),
            verb: method.as_str().to_ascii_lowercase(),
        };
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (group, mut rest) = match parts.as_slice() {
            ["api", _version, rest @ ..] if !rest.is_empty() => ("", rest),
            ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
            _ => return non_resource(),
        };
        let mut verb = method_verb(method);
        if rest[0] == "watch" || rest[0] == "proxy" {
            if rest.len() < 2 {
                return non_resource();
            }
            verb = rest[0].to_string();
            rest = &rest[1..];
        }
        let mut namespace = None;
        if rest[0] == "namespaces" && rest.len() > 1 {
            namespace = Some(rest[1].to_string());
            if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
            }
        }
        let resource = rest[0].to_string();
        let name = rest.get(1).map(|n| n.to_string());
        let subresource = rest.get(2).map(|s| s.to_string());
        let query: HashMap<String, String> =
            form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .into_owned()
                .collect();
        if name.is_none() {
            match verb.as_str() {
                "get" if query.get("watch").is_some_and(|w| parse_bool(w)) => verb = "watch".into(),
                "get" => verb = "list".into(),
                "delete" => verb = "deletecollection".into(),
                _ => {}
            }
        }
        RequestInfo::Resource {
            verb,
            group: group.to_string(),
            resource,
            subresource,
            namespace,
            name,
        }
    }

    /// The verb of a resource request.
    pub fn verb(&self) -> Option<&str> {
        match self {
            RequestInfo::Resource { verb, .. } => Some(verb),
            RequestInfo::NonResource { .. } => None,
        }
    }
}

/// `--request-log`: one JSON line per request, written whole (readers may follow the file).
pub struct RequestLog {
    file: Mutex<std::fs::File>,
}

impl RequestLog {
    /// Creates (or truncates) `path`.
    pub fn create(path: &std::path::Path) -> std::io::Result<RequestLog> {
        Ok(RequestLog {
            file: Mutex::new(std::fs::File::create(path)?),
        })
    }

    fn write(&self, line: &Value) {
        use std::io::Write as _;
        let mut bytes = serde_json::to_vec(line).unwrap_or_default();
        bytes.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = f.write_all(&bytes) {
            tracing::warn!(error = %e, "cannot write the request log");
        }
    }
}

/// The request log's line for a request and its answer. A server-side apply that created the
/// object (201 to a PATCH) is authorized by the API server as `patch` and `create`: `verbs`
/// lists both (and every other line lists its one verb there too).
pub fn log_line(info: &RequestInfo, user_agent: &str, code: u16) -> Value {
    match info {
        RequestInfo::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
        } => {
            let mut verbs = vec![verb.clone()];
            if verb == "patch" && code == 201 {
                verbs.push("create".into());
            }
            let mut line = json!({"verb": verb, "verbs": verbs, "group": group,
                "resource": resource, "userAgent": user_agent, "code": code});
            if let Some(s) = subresource {
                line["subresource"] = json!(s);
            }
            if let Some(ns) = namespace {
                line["namespace"] = json!(ns);
            }
            if let Some(n) = name {
                line["name"] = json!(n);
            }
            line
        }
        RequestInfo::NonResource { path, verb } => json!({"nonResourceURL": path, "verb": verb,
            "verbs": [verb], "userAgent": user_agent, "code": code}),
    }
}

async fn log_requests(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let Some(log) = s.request_log.clone() else {
        return next.run(req).await;
    };
    let info = RequestInfo::of(req.method(), req.uri().path(), req.uri().query());
    let agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let response = next.run(req).await;
    log.write(&log_line(&info, &agent, response.status().as_u16()));
    response
}

/// What a resource URL names.
struct Target {
    kind: Arc<Kind>,
    namespace: Option<String>,
    name: Option<String>,
    status: bool,
    /// `pods/NAME/eviction`.
    eviction: bool,
}

fn ok(body: &Value) -> Response {
    json_response(StatusCode::OK, body)
}

async fn handle(State(s): State<Arc<Shared>>, method: Method, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, 8 << 20).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::bad_request("the request body is too large or unreadable")
                .into_response();
        }
    };
    let query: HashMap<String, String> =
        form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let segs: Vec<&str> = parts
        .uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match route(&s, &method, &segs, &query, &parts.headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn route(
    s: &Arc<Shared>,
    method: &Method,
    segs: &[&str],
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let get = method == Method::GET;
    match segs {
        ["version"] if get => return Ok(ok(&discovery::version(s.lock().version))),
        ["healthz" | "readyz" | "livez"] if get => return Ok("ok".into_response()),
        ["metrics"] if get => {
            return Ok((
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                )],
                s.requests.render(),
            )
                .into_response());
        }
        ["api"] if get => return Ok(ok(&discovery::api(&s.address))),
        ["apis"] if get => return Ok(ok(&discovery::apis(&s.lock().registry))),
        ["api", v] if get => {
            return discovery::resources(&s.lock().registry, "", v)
                .map(|r| ok(&r))
                .ok_or_else(ApiError::no_route);
        }
        ["apis", g, v] if get => {
            return discovery::resources(&s.lock().registry, g, v)
                .map(|r| ok(&r))
                .ok_or_else(ApiError::no_route);
        }
        ["openapi", "v3"] if get => return Ok(ok(&discovery::openapi_index(&s.lock().registry))),
        ["openapi", "v3", rest @ ..] if get => {
            let gv = rest.join("/");
            return discovery::openapi_group_version(&s.lock().registry, &gv)
                .map(|r| ok(&r))
                .ok_or_else(ApiError::no_route);
        }
        _ => {}
    }
    let (group, version, rest) = match segs {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::no_route()),
    };
    let target = target(s, group, version, rest)?;
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let table = tables::wants_table(accept);
    let params = write_params(query, headers);
    let name = target.name.clone();
    let kind = target.kind.clone();
    let ns = target.namespace.clone().unwrap_or_default();
    if kind.namespaced && target.namespace.is_none() && !matches!(*method, Method::GET) {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let respond = |code: StatusCode, obj: &Value, w: &World| -> Response {
        let view = to_view(&kind, obj);
        if table {
            json_response(
                code,
                &tables::table(&kind, &[&view], w.store.rv(), w.now(), true),
            )
        } else {
            json_response(code, &view)
        }
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // kubectl's typed create commands send protobuf, everything else JSON.
    let protobuf = content_type.starts_with(super::protobuf::CONTENT_TYPE);
    let parse_body = |b: &Bytes| -> Result<Value, ApiError> {
        if b.is_empty() {
            return Ok(json!({}));
        }
        if protobuf {
            return super::protobuf::decode(b).map_err(|e| ApiError::bad_request(e.to_string()));
        }
        serde_json::from_slice(b)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
    };
    if target.eviction {
        if *method != Method::POST {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        let name = name.unwrap_or_default();
        let body = parse_body(&body)?;
        let mut w = s.lock_now();
        let (code, status) = w.evict(&ns, &name, &body)?;
        w.reconcile();
        drop(w);
        s.wake.notify_one();
        return Ok(json_response(
            StatusCode::from_u16(code).unwrap_or(StatusCode::CREATED),
            &status,
        ));
    }
    let response = match (method.clone(), name) {
        (Method::GET, Some(name)) => {
            let w = s.lock_now();
            let obj = w.get(&kind, namespace_of(&kind, &ns), &name)?;
            respond(StatusCode::OK, &obj, &w)
        }
        (Method::GET, None) if is_true(query.get("watch")) => {
            return watch(s, target, query, table);
        }
        (Method::GET, None) => list(s, &target, query, table)?,
        (Method::POST, None) => {
            let body = parse_body(&body)?;
            let mut w = s.lock_now();
            let obj = w.create(&kind, &ns, body, &params, None)?;
            respond(StatusCode::CREATED, &obj, &w)
        }
        (Method::PUT, Some(name)) => {
            let body = parse_body(&body)?;
            let mut w = s.lock_now();
            let obj = w.update(&kind, &ns, &name, target.status, body, &params, None)?;
            respond(StatusCode::OK, &obj, &w)
        }
        (Method::PATCH, Some(name)) => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let type_ = PatchType::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type(ct))?;
            let mut w = s.lock_now();
            let (obj, created) =
                w.patch(&kind, &ns, &name, target.status, type_, &body, &params)?;
            respond(
                if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                },
                &obj,
                &w,
            )
        }
        (Method::DELETE, Some(name)) => {
            let mut opts = DeleteParams::from_body(&parse_body(&body)?)?;
            if let Some(p) = query.get("propagationPolicy") {
                opts.propagation =
                    DeleteParams::from_body(&json!({"propagationPolicy": p}))?.propagation;
            }
            if let Some(g) = query.get("gracePeriodSeconds").and_then(|g| g.parse().ok()) {
                opts.grace_period = Some(g);
            }
            opts.dry_run |= params.dry_run;
            let mut w = s.lock_now();
            let obj = w.delete(&kind, &ns, &name, &opts)?;
            respond(StatusCode::OK, &obj, &w)
        }
        (Method::DELETE, None) => {
            let opts = DeleteParams::from_body(&parse_body(&body)?)?;
            let selectors = selectors(query, &kind)?;
            let mut w = s.lock_now();
            let names: Vec<String> = w
                .store
                .list(&kind.storage, target.namespace.as_deref())
                .filter(|e| stored_matches(&kind, &selectors, &e.stored))
                .map(|e| e.stored.name().to_string())
                .collect();
            let mut items = Vec::new();
            for n in names {
                if let Ok(obj) = w.delete(&kind, &ns, &n, &opts) {
                    items.push(to_view(&kind, &obj));
                }
            }
            ok(
                &json!({"kind": format!("{}List", kind.kind), "apiVersion": kind.api_version(),
                       "metadata": {"resourceVersion": w.store.rv().to_string()}, "items": items}),
            )
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    };
    s.wake.notify_one();
    Ok(response)
}

fn is_true(v: Option<&String>) -> bool {
    matches!(v.map(String::as_str), Some("true" | "1"))
}

fn write_params(query: &HashMap<String, String>, headers: &HeaderMap) -> WriteParams {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown");
    WriteParams {
        manager: query
            .get("fieldManager")
            .cloned()
            .unwrap_or_else(|| agent.to_string()),
        dry_run: query.get("dryRun").is_some_and(|d| !d.is_empty()),
        force: is_true(query.get("force")),
    }
}

fn target(s: &Shared, group: &str, version: &str, rest: &[&str]) -> Result<Target, ApiError> {
    let w = s.lock();
    let find = |plural: &str| {
        w.registry
            .find(group, version, plural)
            .ok_or_else(ApiError::no_route)
    };
    let (kind, namespace, name, sub) = match rest {
        ["namespaces", ns, plural, tail @ ..] if !matches!(*plural, "status" | "finalize") => {
            let kind = find(plural)?;
            if !kind.namespaced {
                return Err(ApiError::no_route());
            }
            (kind, Some(ns.to_string()), tail.first(), tail.get(1))
        }
        [plural, tail @ ..] => (find(plural)?, None, tail.first(), tail.get(1)),
        [] => return Err(ApiError::no_route()),
    };
    if rest.len() > 5 || (kind.namespaced && namespace.is_none() && name.is_some()) {
        return Err(ApiError::no_route());
    }
    let (status, eviction) = match sub {
        None => (false, false),
        Some(&"status") if kind.status => (true, false),
        Some(&"eviction") if kind.behaviour == Behaviour::Pods => (false, true),
        Some(_) => return Err(ApiError::no_route()),
    };
    Ok(Target {
        kind,
        namespace,
        name: name.map(|n| n.to_string()),
        status,
        eviction,
    })
}

fn selectors(query: &HashMap<String, String>, kind: &Kind) -> Result<Selectors, ApiError> {
    Ok(Selectors {
        labels: parse_labels(
            query
                .get("labelSelector")
                .map(String::as_str)
                .unwrap_or_default(),
        )?,
        fields: parse_fields(
            query
                .get("fieldSelector")
                .map(String::as_str)
                .unwrap_or_default(),
            kind,
        )?,
    })
}

fn list(
    s: &Shared,
    t: &Target,
    query: &HashMap<String, String>,
    table: bool,
) -> Result<Response, ApiError> {
    let selectors = selectors(query, &t.kind)?;
    let kind = &t.kind;
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => 0,
        Some(l) => l.parse::<i64>().map_err(|_| {
            ApiError::bad_request(format!("limit: Invalid value: \"{l}\": must be an integer"))
        })?,
    };
    let resume = match query.get("continue").filter(|c| !c.is_empty()) {
        None => None,
        // Upstream lets "0" (any) stand beside a token, no other version.
        Some(_)
            if query
                .get("resourceVersion")
                .is_some_and(|v| !v.is_empty() && v != "0") =>
        {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Some(token) => Some(paging::decode(token, t.namespace.as_deref())?),
    };
    // A page reads the store at the resourceVersion of the list's first page.
    let (rv, now, page) = {
        let w = s.lock_now();
        let rv = resume.as_ref().and_then(|r| r.rv).unwrap_or(w.store.rv());
        let page = w.store.page(
            &kind.storage,
            t.namespace.as_deref(),
            rv,
            resume.as_ref().map(|r| &r.after),
            usize::try_from(limit.max(0)).unwrap_or(0),
            |o| stored_matches(kind, &selectors, o),
        );
        let page = page.map_err(|_| match &resume {
            Some(r) => paging::expired(r, t.namespace.as_deref()),
            None => ApiError::expired("too old resource version"),
        })?;
        (rv, w.now(), page)
    };
    let next = page
        .next
        .as_ref()
        .map(|after| paging::encode(Some(rv), after, t.namespace.as_deref()));
    if table {
        let items: Vec<Value> = page
            .items
            .iter()
            .map(|o| to_view(kind, &o.value()))
            .collect();
        let refs: Vec<&Value> = items.iter().collect();
        let mut table = tables::table(kind, &refs, rv, now, true);
        if let Some(next) = next {
            table["metadata"]["continue"] = Value::String(next);
        }
        return Ok(ok(&table));
    }
    // `{"apiVersion":…,"items":[…],"kind":…,"metadata":{…}}`, the items written as stored
    // when they need no conversion.
    let mut body =
        Vec::with_capacity(page.items.iter().map(|o| o.json().len() + 1).sum::<usize>() + 256);
    body.extend_from_slice(b"{\"apiVersion\":");
    body.extend(serde_json::to_vec(&kind.api_version()).unwrap_or_default());
    body.extend_from_slice(b",\"items\":[");
    for (i, o) in page.items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        match o.view_json(kind) {
            Some(json) => body.extend_from_slice(json),
            None => body.extend(serde_json::to_vec(&to_view(kind, &o.value())).unwrap_or_default()),
        }
    }
    body.extend_from_slice(b"],\"kind\":");
    body.extend(serde_json::to_vec(&format!("{}List", kind.kind)).unwrap_or_default());
    let mut meta = serde_json::Map::new();
    if let Some(next) = next {
        meta.insert("continue".into(), Value::String(next));
    }
    meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    body.extend_from_slice(b",\"metadata\":");
    body.extend(serde_json::to_vec(&meta).unwrap_or_default());
    body.push(b'}');
    Ok((
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response())
}

/// Whether a stored object matches `sel` (parsed only when the selectors read more than its
/// labels, name and namespace).
fn stored_matches(kind: &Kind, sel: &Selectors, o: &Stored) -> bool {
    sel.matches_stored(o)
        .unwrap_or_else(|| sel.matches(&to_view(kind, &o.value())))
}

/// One watch event line, or nothing when the change does not concern this watch.
fn event_line(
    kind: &Kind,
    namespace: Option<&str>,
    sel: &Selectors,
    c: &Change,
    table: &mut Option<bool>,
    now: Timestamp,
) -> Option<Bytes> {
    if c.storage != kind.storage || namespace.is_some_and(|ns| ns != c.namespace) {
        return None;
    }
    let now_matches = stored_matches(kind, sel, &c.object);
    let before_matches = c
        .before
        .as_ref()
        .is_some_and(|b| stored_matches(kind, sel, b));
    let type_ = match (c.type_, before_matches, now_matches) {
        (ChangeType::Deleted, true, _) => "DELETED",
        (ChangeType::Deleted, false, _) => return None,
        (_, false, true) => "ADDED",
        (_, true, true) => "MODIFIED",
        (_, true, false) => "DELETED",
        (_, false, false) => return None,
    };
    Some(object_line(kind, type_, &c.object, table, now))
}

/// A watch event of a stored object, its JSON as stored when it needs no conversion.
fn object_line(
    kind: &Kind,
    type_: &str,
    o: &Stored,
    table: &mut Option<bool>,
    now: Timestamp,
) -> Bytes {
    match (table.is_none(), o.view_json(kind)) {
        (true, Some(json)) => {
            let mut out = Vec::with_capacity(json.len() + 32);
            out.extend_from_slice(b"{\"object\":");
            out.extend_from_slice(json);
            out.extend_from_slice(format!(",\"type\":\"{type_}\"}}\n").as_bytes());
            Bytes::from(out)
        }
        _ => line(type_, render(kind, to_view(kind, &o.value()), table, now)),
    }
}

fn render(kind: &Kind, obj: Value, table: &mut Option<bool>, now: Timestamp) -> Value {
    match table {
        Some(first) => {
            let rv = obj["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            let t = tables::table(kind, &[&obj], rv, now, *first);
            *first = false;
            t
        }
        None => obj,
    }
}

fn line(type_: &str, object: Value) -> Bytes {
    let mut out = serde_json::to_vec(&json!({"type": type_, "object": object})).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

fn watch(
    s: &Arc<Shared>,
    t: Target,
    query: &HashMap<String, String>,
    table: bool,
) -> Result<Response, ApiError> {
    let mut sel = selectors(query, &t.kind)?;
    if let Some(name) = &t.name {
        sel.fields.push(crate::api::select::FieldRequirement {
            field: "metadata.name".into(),
            negated: false,
            value: name.clone(),
        });
    }
    let kind = t.kind.clone();
    let ns = t.namespace.clone();
    let bookmarks = is_true(query.get("allowWatchBookmarks"));
    let initial_events = is_true(query.get("sendInitialEvents"));
    let mut table_state = table.then_some(true);
    let mut timeout: Option<Duration> = query
        .get("timeoutSeconds")
        .and_then(|v| v.parse().ok())
        .map(Duration::from_secs);
    if let Some(drop) = s.faults.watch_drop {
        timeout = Some(timeout.map_or(drop, |t| t.min(drop)));
    }
    let rv_param = query.get("resourceVersion").cloned().unwrap_or_default();
    let (first, mut rx, mut latest) = {
        let w = s.lock_now();
        let now = w.now();
        let mut first: Vec<Bytes> = Vec::new();
        if rv_param.is_empty() || rv_param == "0" || initial_events {
            for e in w.store.list(&kind.storage, ns.as_deref()) {
                if stored_matches(&kind, &sel, &e.stored) {
                    first.push(object_line(
                        &kind,
                        "ADDED",
                        &e.stored,
                        &mut table_state,
                        now,
                    ));
                }
            }
            if initial_events {
                first.push(line("BOOKMARK", json!({"kind": kind.kind, "apiVersion": kind.api_version(),
                    "metadata": {"resourceVersion": w.store.rv().to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}})));
            }
        } else {
            let rv: u64 = rv_param.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid resourceVersion {rv_param:?}"))
            })?;
            match w.store.since(rv) {
                Ok(changes) => first.extend(changes.iter().filter_map(|c| {
                    event_line(&kind, ns.as_deref(), &sel, c, &mut table_state, now)
                })),
                Err(oldest) => {
                    let err =
                        ApiError::expired(format!("too old resource version: {rv} ({oldest})"));
                    first.push(line("ERROR", err.to_status()));
                    return Ok(stream_response(futures::stream::iter(
                        first.into_iter().map(Ok::<_, std::convert::Infallible>),
                    )));
                }
            }
        }
        (first, w.store.subscribe(), w.store.rv())
    };
    let (tx, out) = mpsc::channel::<Bytes>(256);
    let mut shutdown = s.shutdown.clone();
    let interval = s.bookmark_interval;
    tokio::spawn(async move {
        for b in first {
            if tx.send(b).await.is_err() {
                return;
            }
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            let next = tokio::select! {
                _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => break,
                _ = shutdown.changed() => break,
                _ = tx.closed() => break,
                _ = ticker.tick(), if bookmarks => Some(line("BOOKMARK", json!({"kind": kind.kind, "apiVersion": kind.api_version(),
                    "metadata": {"resourceVersion": latest.to_string()}}))),
                r = rx.recv() => match r {
                    Ok(c) => {
                        latest = latest.max(c.rv);
                        event_line(&kind, ns.as_deref(), &sel, &c, &mut table_state, Timestamp::now())
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let err = ApiError::expired("the watch fell behind; list again".to_string());
                        let _ = tx.send(line("ERROR", err.to_status())).await;
                        break;
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
            };
            if let Some(b) = next
                && tx.send(b).await.is_err()
            {
                break;
            }
        }
    });
    let stream = futures::stream::unfold(out, |mut out| async move {
        out.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), out))
    });
    Ok(stream_response(stream))
}

fn stream_response<S>(stream: S) -> Response
where
    S: futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
{
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-cache, private"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = json_response(code, &self.to_status());
        if let Some(s) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}

/// A JSON answer (compact, as kube-rs's line-based watch reader needs).
pub fn json_response(code: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        code,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (verb, group, resource, subresource, namespace, name) of a resource request.
    fn info(method: Method, url: &str) -> (String, String, String, String, String, String) {
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (url, None),
        };
        match RequestInfo::of(&method, path, query) {
            RequestInfo::Resource {
                verb,
                group,
                resource,
                subresource,
                namespace,
                name,
            } => (
                verb,
                group,
                resource,
                subresource.unwrap_or_default(),
                namespace.unwrap_or_default(),
                name.unwrap_or_default(),
            ),
            other => panic!("{url} is not a resource request: {other:?}"),
        }
    }

    fn row(
        v: &str,
        g: &str,
        r: &str,
        s: &str,
        ns: &str,
        n: &str,
    ) -> (String, String, String, String, String, String) {
        (v.into(), g.into(), r.into(), s.into(), ns.into(), n.into())
    }

    #[test]
    fn core_and_group_urls_map_to_the_verbs_rbac_checks() {
        let cases = [
            (
                Method::GET,
                "/api/v1/pods",
                row("list", "", "pods", "", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/pods?watch=true&resourceVersion=5",
                row("watch", "", "pods", "", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/pods?watch=1",
                row("watch", "", "pods", "", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/pods?watch=false",
                row("list", "", "pods", "", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/demo/pods",
                row("list", "", "pods", "", "demo", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/demo/pods/p-1",
                row("get", "", "pods", "", "demo", "p-1"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/demo/pods",
                row("create", "", "pods", "", "demo", ""),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/demo/pods/p-1",
                row("update", "", "pods", "", "demo", "p-1"),
            ),
            (
                Method::PATCH,
                "/api/v1/namespaces/demo/pods/p-1/status",
                row("patch", "", "pods", "status", "demo", "p-1"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/demo/pods/p-1",
                row("delete", "", "pods", "", "demo", "p-1"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/demo/pods",
                row("deletecollection", "", "pods", "", "demo", ""),
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/demo/pods",
                row("watch", "", "pods", "", "demo", ""),
            ),
            // Cluster-scoped, named and collection.
            (
                Method::GET,
                "/api/v1/nodes",
                row("list", "", "nodes", "", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/nodes/n-1",
                row("get", "", "nodes", "", "", "n-1"),
            ),
            (
                Method::PUT,
                "/api/v1/nodes/n-1/status",
                row("update", "", "nodes", "status", "", "n-1"),
            ),
            // A namespace is its own namespace; status and finalize are its subresources.
            (
                Method::GET,
                "/api/v1/namespaces",
                row("list", "", "namespaces", "", "", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/demo",
                row("get", "", "namespaces", "", "demo", "demo"),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/demo/finalize",
                row("update", "", "namespaces", "finalize", "demo", "demo"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/demo/status",
                row("get", "", "namespaces", "status", "demo", "demo"),
            ),
            // Groups.
            (
                Method::GET,
                "/apis/apps/v1/daemonsets?watch=true",
                row("watch", "apps", "daemonsets", "", "", ""),
            ),
            (
                Method::GET,
                "/apis/daemonsync.io/v1alpha1/manageddaemonsets?limit=1",
                row("list", "daemonsync.io", "manageddaemonsets", "", "", ""),
            ),
            (
                Method::PATCH,
                "/apis/daemonsync.io/v1alpha1/namespaces/demo/manageddaemonsets/agent?fieldManager=daemonsync&force=true",
                row(
                    "patch",
                    "daemonsync.io",
                    "manageddaemonsets",
                    "",
                    "demo",
                    "agent",
                ),
            ),
            (
                Method::PATCH,
                "/apis/daemonsync.io/v1alpha1/namespaces/demo/manageddaemonsets/agent/status",
                row(
                    "patch",
                    "daemonsync.io",
                    "manageddaemonsets",
                    "status",
                    "demo",
                    "agent",
                ),
            ),
            (
                Method::POST,
                "/apis/events.k8s.io/v1/namespaces/demo/events",
                row("create", "events.k8s.io", "events", "", "demo", ""),
            ),
            (
                Method::GET,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y",
                row(
                    "get",
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    "",
                    "",
                    "x.y",
                ),
            ),
            (
                Method::DELETE,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                row(
                    "deletecollection",
                    "coordination.k8s.io",
                    "leases",
                    "",
                    "kube-system",
                    "",
                ),
            ),
        ];
        for (method, url, want) in cases {
            assert_eq!(info(method, url), want, "{url}");
        }
    }

    #[test]
    fn discovery_and_other_non_resource_urls_are_logged_by_path() {
        for path in [
            "/version",
            "/api",
            "/apis",
            "/api/v1",
            "/apis/apps/v1",
            "/openapi/v3",
            "/openapi/v3/api/v1",
            "/healthz",
            "/",
        ] {
            assert_eq!(
                RequestInfo::of(&Method::GET, path, None),
                RequestInfo::NonResource {
                    path: path.into(),
                    verb: "get".into()
                },
                "{path}"
            );
            let line = log_line(
                &RequestInfo::of(&Method::GET, path, None),
                "kubectl/v1.32",
                200,
            );
            assert_eq!(line["nonResourceURL"], path);
            assert!(line.get("resource").is_none());
        }
    }

    #[test]
    fn a_server_side_apply_that_creates_is_logged_as_patch_and_create() {
        let info = RequestInfo::of(
            &Method::PATCH,
            "/apis/daemonsync.io/v1alpha1/namespaces/demo/manageddaemonsets/agent",
            Some("fieldManager=daemonsync"),
        );
        let created = log_line(&info, "daemonsync/0.1.0", 201);
        assert_eq!(created["verb"], "patch");
        assert_eq!(created["verbs"], json!(["patch", "create"]));
        assert_eq!(created["group"], "daemonsync.io");
        assert_eq!(created["namespace"], "demo");
        assert_eq!(created["userAgent"], "daemonsync/0.1.0");
        assert_eq!(created["code"], 201);
        assert!(created.get("subresource").is_none());
        let updated = log_line(&info, "daemonsync/0.1.0", 200);
        assert_eq!(updated["verbs"], json!(["patch"]));
    }
}

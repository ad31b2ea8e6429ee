//! A stand-in for GitHub's REST API on 127.0.0.1, for `plan --github`: issue comments (listed
//! in small pages with `Link` headers, created, edited, deleted), `GET /user` answering as it
//! does for a workflow token (403), bodies over 65,536 characters refused as GitHub does, and
//! every request recorded. It serves under `/api/v3`, like GitHub Enterprise Server, so the
//! client is seen to keep the base URL's path.

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The token the fake accepts.
pub const TOKEN: &str = "ghs_fake-token-for-tests";

/// One comment as the fake stores it.
#[derive(Debug, Clone)]
pub struct Comment {
    pub id: u64,
    pub issue: u64,
    pub body: String,
    pub login: String,
    pub kind: String,
}

/// One request: method and path with query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
}

#[derive(Debug)]
struct State {
    base: String,
    comments: Vec<Comment>,
    next_id: u64,
    requests: Vec<Request>,
    /// Comments per page at most, whatever `per_page` asks (to exercise pagination).
    page_size: usize,
    /// Answer every write (POST, PATCH, DELETE) with this status and message.
    fail_writes: Option<(u16, String)>,
}

/// The fake server; it stops when dropped.
pub struct FakeGithub {
    /// The API's base URL, as `GITHUB_API_URL`.
    pub api_url: String,
    state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

impl FakeGithub {
    pub fn start() -> FakeGithub {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let api_url = format!("http://{}/api/v3", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            base: api_url.clone(),
            comments: Vec::new(),
            next_id: 1000,
            requests: Vec::new(),
            page_size: 2,
            fail_writes: None,
        }));
        let shared = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = shared.clone();
                async move { handle(&state, method, uri, headers, body) }
            },
        );
        runtime.spawn(async move { axum::serve(listener, app).await });
        FakeGithub {
            api_url,
            state,
            _runtime: runtime,
        }
    }

    /// Adds a comment by a person (not ours, whatever its text).
    pub fn add_human_comment(&self, issue: u64, body: &str) {
        let mut s = self.state.lock().unwrap();
        let id = s.next_id;
        s.next_id += 1;
        s.comments.push(Comment {
            id,
            issue,
            body: body.into(),
            login: "octocat".into(),
            kind: "User".into(),
        });
    }

    /// Comments of `issue` by the workflow's bot, oldest first.
    pub fn bot_comments(&self, issue: u64) -> Vec<Comment> {
        let s = self.state.lock().unwrap();
        s.comments
            .iter()
            .filter(|c| c.issue == issue && c.kind == "Bot")
            .cloned()
            .collect()
    }

    /// Every comment of `issue`.
    pub fn all_comments(&self, issue: u64) -> Vec<Comment> {
        let s = self.state.lock().unwrap();
        s.comments
            .iter()
            .filter(|c| c.issue == issue)
            .cloned()
            .collect()
    }

    /// The requests since the last call.
    pub fn take_requests(&self) -> Vec<Request> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }

    pub fn fail_writes(&self, status: u16, message: &str) {
        self.state.lock().unwrap().fail_writes = Some((status, message.into()));
    }
}

fn json_response(status: StatusCode, value: Value) -> Response {
    (status, axum::Json(value)).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    json_response(
        status,
        json!({"message": message, "documentation_url": "https://docs.github.com/rest"}),
    )
}

fn comment_json(c: &Comment) -> Value {
    json!({
        "id": c.id,
        "body": c.body,
        "html_url": format!("https://github.com/acme/fleet/pull/{}#issuecomment-{}", c.issue, c.id),
        "user": {"login": c.login, "type": c.kind},
    })
}

fn query_param(uri: &Uri, name: &str) -> Option<usize> {
    uri.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| v.parse().ok())?
    })
}

fn handle(
    state: &Mutex<State>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut s = state.lock().unwrap();
    s.requests.push(Request {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
    });
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    if auth != Some(&format!("Bearer {TOKEN}")) {
        return error(StatusCode::UNAUTHORIZED, "Bad credentials");
    }
    if headers.get("user-agent").is_none() {
        return error(
            StatusCode::FORBIDDEN,
            "Request forbidden by administrative rules",
        );
    }
    let Some(path) = uri.path().strip_prefix("/api/v3/") else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    let segments: Vec<&str> = path.split('/').collect();
    if method != Method::GET
        && let Some((status, message)) = s.fail_writes.clone()
    {
        return error(StatusCode::from_u16(status).unwrap(), &message);
    }
    let body_text = || -> Result<String, Box<Response>> {
        let v: Value = serde_json::from_slice(&body)
            .map_err(|_| Box::new(error(StatusCode::BAD_REQUEST, "Problems parsing JSON")))?;
        let text = v["body"].as_str().unwrap_or_default().to_string();
        if text.chars().count() > 65_536 {
            return Err(Box::new(json_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({"message": "Validation Failed",
                       "errors": [{"message": "body is too long (maximum is 65536 characters)"}]}),
            )));
        }
        Ok(text)
    };
    match (method.clone(), segments.as_slice()) {
        (Method::GET, ["user"]) => error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        ),
        (m, ["repos", "acme", "fleet", "issues", n, "comments"])
        | (m, ["repositories", "1", "issues", n, "comments"]) => {
            let Ok(issue) = n.parse::<u64>() else {
                return error(StatusCode::NOT_FOUND, "Not Found");
            };
            if m == Method::GET {
                let per_page = query_param(&uri, "per_page").unwrap_or(30);
                let size = per_page.min(s.page_size);
                let page = query_param(&uri, "page").unwrap_or(1).max(1);
                let all: Vec<&Comment> = s.comments.iter().filter(|c| c.issue == issue).collect();
                let items: Vec<Value> = all
                    .iter()
                    .skip((page - 1) * size)
                    .take(size)
                    .map(|c| comment_json(c))
                    .collect();
                let mut resp = json_response(StatusCode::OK, Value::Array(items));
                if page * size < all.len() {
                    // GitHub's next links name the repository by id.
                    let next = format!(
                        "<{}/repositories/1/issues/{issue}/comments?per_page={per_page}&page={}>; \
                         rel=\"next\", <{}/repositories/1/issues/{issue}/comments?per_page={per_page}&page={}>; rel=\"last\"",
                        s.base,
                        page + 1,
                        s.base,
                        all.len().div_ceil(size)
                    );
                    resp.headers_mut().insert("link", next.parse().unwrap());
                }
                resp
            } else if m == Method::POST {
                let text = match body_text() {
                    Ok(t) => t,
                    Err(r) => return *r,
                };
                let id = s.next_id;
                s.next_id += 1;
                let c = Comment {
                    id,
                    issue,
                    body: text,
                    login: "github-actions[bot]".into(),
                    kind: "Bot".into(),
                };
                let v = comment_json(&c);
                s.comments.push(c);
                json_response(StatusCode::CREATED, v)
            } else {
                error(StatusCode::NOT_FOUND, "Not Found")
            }
        }
        (m, ["repos", "acme", "fleet", "issues", "comments", id]) => {
            let id: u64 = id.parse().unwrap_or(0);
            let Some(pos) = s.comments.iter().position(|c| c.id == id) else {
                return error(StatusCode::NOT_FOUND, "Not Found");
            };
            match m {
                Method::PATCH => {
                    let text = match body_text() {
                        Ok(t) => t,
                        Err(r) => return *r,
                    };
                    s.comments[pos].body = text;
                    json_response(StatusCode::OK, comment_json(&s.comments[pos]))
                }
                Method::DELETE => {
                    s.comments.remove(pos);
                    StatusCode::NO_CONTENT.into_response()
                }
                _ => error(StatusCode::NOT_FOUND, "Not Found"),
            }
        }
        _ => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

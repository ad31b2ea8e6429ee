//! The one HTTP listener of `daemonsync sync` (`--listen`, default `127.0.0.1:8080`):
//!
//! * `GET /healthz`: the process is alive (200).
//! * `GET /readyz`: 200 once the caches have synced and the source was read once; before,
//!   503 with a one-line reason.
//! * `GET /metrics`: the Prometheus series ([`Metrics::encode`]) as OpenMetrics text.
//! * `POST /webhook`: GitHub `push` events, signed with the webhook secret
//!   (`X-Hub-Signature-256`). A push to the tracked branch wakes the loop to fetch at once
//!   (202); other refs and events are acknowledged (204); `ping` answers 200. Unsigned or
//!   mis-signed requests get 401, bodies over [`WEBHOOK_BODY_LIMIT`] 413. Without a configured
//!   secret the endpoint does not exist (404).
//!
//! Webhook requests are logged with their delivery id, event, ref and outcome, never with
//! their body or signature.

use crate::sync::metrics::{CONTENT_TYPE, Metrics};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::Path;
use std::sync::Arc;

/// The largest webhook body read (GitHub caps payloads at 25 MB, but a push event is a few
/// kilobytes; anything far larger is not one worth buffering).
pub const WEBHOOK_BODY_LIMIT: usize = 1024 * 1024;

/// The environment variable holding the webhook secret when no file is given.
pub const SECRET_ENV: &str = "DAEMONSYNC_WEBHOOK_SECRET";

/// The largest secret file read: a secret is a short string; a larger file is the wrong one.
const SECRET_FILE_LIMIT: u64 = 64 * 1024;

/// The webhook secret. Never printed: its `Debug` is `Secret(..)` and it has no `Display`.
pub struct Secret(Vec<u8>);

impl Secret {
    /// A secret from its bytes (as configured in the GitHub webhook settings).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Secret {
        Secret(bytes.into())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Reads the secret from `file` (trailing newline trimmed), else from the environment
/// variable `DAEMONSYNC_WEBHOOK_SECRET`; `None` when neither is set.
///
/// Errors are one line naming the file (or variable) and the fix, and never contain the
/// secret.
pub fn read_secret(file: Option<&Path>) -> anyhow::Result<Option<Secret>> {
    secret_from(file, std::env::var_os(SECRET_ENV))
}

/// [`read_secret`] with the environment variable's value given (tests cannot set variables
/// without `unsafe`).
fn secret_from(
    file: Option<&Path>,
    env: Option<std::ffi::OsString>,
) -> anyhow::Result<Option<Secret>> {
    if let Some(path) = file {
        return read_secret_file(path).map(Some);
    }
    let Some(value) = env else {
        return Ok(None);
    };
    let bytes = value.into_encoded_bytes();
    let trimmed = trim_newline(&bytes);
    if trimmed.is_empty() {
        anyhow::bail!(
            "{SECRET_ENV} is set but empty: set it to the webhook's secret, or unset it to run without the webhook"
        );
    }
    Ok(Some(Secret(trimmed.to_vec())))
}

fn read_secret_file(path: &Path) -> anyhow::Result<Secret> {
    use std::io::Read as _;
    let shown = path.display();
    let fix = "fix --webhook-secret-file";
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "the webhook secret file {shown} does not exist: create it with the webhook's secret, or {fix}"
        ),
        Err(e) => {
            anyhow::bail!(
                "cannot read the webhook secret file {shown}: {e}; {fix} or its permissions"
            )
        }
    };
    let mut bytes = Vec::new();
    if let Err(e) = file.take(SECRET_FILE_LIMIT + 1).read_to_end(&mut bytes) {
        anyhow::bail!("cannot read the webhook secret file {shown}: {e}; {fix}");
    }
    if bytes.len() as u64 > SECRET_FILE_LIMIT {
        anyhow::bail!(
            "the webhook secret file {shown} is larger than 64 KiB, so it is not a secret: {fix}"
        );
    }
    let secret = trim_newline(&bytes);
    if secret.is_empty() {
        anyhow::bail!(
            "the webhook secret file {shown} is empty: write the webhook's secret into it, or {fix}"
        );
    }
    Ok(Secret(secret.to_vec()))
}

/// The bytes without one trailing `\n` or `\r\n` (as `echo` and editors leave them).
fn trim_newline(bytes: &[u8]) -> &[u8] {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// The webhook's configuration.
#[derive(Debug)]
pub struct Webhook {
    /// The secret GitHub signs deliveries with.
    pub secret: Secret,
    /// The tracked branch (`main` or `refs/heads/main`); `None`: every push triggers.
    pub branch: Option<String>,
}

impl Webhook {
    /// True when a push of `pushed` (`refs/heads/main`) is a push to the tracked branch.
    fn tracks(&self, pushed: &str) -> bool {
        match self.branch.as_deref() {
            None => true,
            Some(branch) => pushed == branch || pushed.strip_prefix("refs/heads/") == Some(branch),
        }
    }
}

/// Whether the daemon is ready to serve its purpose (`/readyz`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Not yet: the one-line reason (`waiting for the node and pod caches to sync`).
    NotReady(String),
    /// The caches have synced and the source was read once.
    Ready,
}

/// What the listener serves from.
#[derive(Debug)]
pub struct HttpState {
    /// The series `/metrics` encodes.
    pub metrics: Arc<Metrics>,
    /// The readiness `/readyz` reports.
    pub ready: tokio::sync::watch::Receiver<Readiness>,
    /// The webhook, when a secret is configured (`None`: `/webhook` answers 404).
    pub webhook: Option<Webhook>,
    /// Notified when a valid push for the tracked branch arrives (the loop then fetches at
    /// once).
    pub fetch: Arc<tokio::sync::Notify>,
}

/// Binds the listener. A bad address or a port in use is a one-line error naming the address
/// and the fix.
pub async fn bind(addr: &str) -> anyhow::Result<tokio::net::TcpListener> {
    let fix = "choose another with --listen";
    let valid_port = addr
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !valid_port {
        anyhow::bail!(
            "--listen {addr:?} is not an address: expected HOST:PORT such as 127.0.0.1:8080 or 0.0.0.0:8080"
        );
    }
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        use std::io::ErrorKind;
        match e.kind() {
            ErrorKind::AddrInUse => anyhow::anyhow!("cannot listen on {addr}: it is in use; {fix}"),
            ErrorKind::AddrNotAvailable => anyhow::anyhow!(
                "cannot listen on {addr}: it is not an address of this machine; {fix}"
            ),
            ErrorKind::PermissionDenied => anyhow::anyhow!(
                "cannot listen on {addr}: permission denied (ports below 1024 need privileges); {fix}"
            ),
            _ => anyhow::anyhow!("cannot listen on {addr}: {e}; {fix}"),
        }
    })
}

/// Serves until `shutdown` resolves; requests in flight then finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: HttpState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

/// The routes, for [`serve`].
fn router(state: HttpState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(
            "/webhook",
            post(webhook).layer(DefaultBodyLimit::max(WEBHOOK_BODY_LIMIT)),
        )
        .with_state(Arc::new(state))
}

type Shared = State<Arc<HttpState>>;

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): Shared) -> Response {
    match &*state.ready.borrow() {
        Readiness::Ready => (StatusCode::OK, "ok\n").into_response(),
        Readiness::NotReady(reason) => {
            let line = reason.lines().next().unwrap_or("not ready").trim();
            (StatusCode::SERVICE_UNAVAILABLE, format!("{line}\n")).into_response()
        }
    }
}

async fn metrics(State(state): Shared) -> Response {
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        state.metrics.encode(),
    )
        .into_response()
}

/// What a delivery said about itself, for the log line (bounded and escaped: headers come
/// from whoever can reach the port).
struct Delivery {
    id: String,
    event: String,
}

impl Delivery {
    fn of(headers: &HeaderMap) -> Delivery {
        let text = |name: &str| {
            let v = headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-");
            v.chars()
                .take(100)
                .flat_map(char::escape_debug)
                .collect::<String>()
        };
        Delivery {
            id: text("x-github-delivery"),
            event: text("x-github-event"),
        }
    }

    fn refused(&self, status: StatusCode, why: &str) -> Response {
        tracing::warn!(delivery = %self.id, event = %self.event, status = status.as_u16(), "webhook delivery refused: {why}");
        (status, format!("{why}\n")).into_response()
    }
}

async fn webhook(State(state): Shared, request: Request) -> Response {
    let Some(hook) = &state.webhook else {
        return (
            StatusCode::NOT_FOUND,
            "no webhook: daemonsync runs without a webhook secret\n",
        )
            .into_response();
    };
    let delivery = Delivery::of(request.headers());
    let Some(signature) = signature(request.headers()) else {
        return delivery.refused(
            StatusCode::UNAUTHORIZED,
            "missing or malformed X-Hub-Signature-256",
        );
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > WEBHOOK_BODY_LIMIT as u64) {
        return delivery.refused(StatusCode::PAYLOAD_TOO_LARGE, "body larger than 1 MiB");
    }
    let body = match Bytes::from_request(request, &()).await {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return delivery.refused(StatusCode::PAYLOAD_TOO_LARGE, "body larger than 1 MiB");
        }
        Err(_) => return delivery.refused(StatusCode::BAD_REQUEST, "the body could not be read"),
    };
    if !verify(&hook.secret, &body, &signature) {
        return delivery.refused(
            StatusCode::UNAUTHORIZED,
            "X-Hub-Signature-256 does not match the body",
        );
    }
    match delivery.event.as_str() {
        "ping" => {
            tracing::info!(delivery = %delivery.id, event = "ping", "webhook ping answered");
            (StatusCode::OK, "pong\n").into_response()
        }
        "push" => {
            let Some(pushed) = pushed_ref(&body) else {
                return delivery.refused(StatusCode::BAD_REQUEST, "a push event without a ref");
            };
            let shown: String = pushed
                .chars()
                .take(256)
                .flat_map(char::escape_debug)
                .collect();
            if hook.tracks(&pushed) {
                state.fetch.notify_one();
                tracing::info!(delivery = %delivery.id, event = "push", r#ref = %shown, "push to the tracked branch: fetching now");
                (StatusCode::ACCEPTED, "fetching\n").into_response()
            } else {
                tracing::info!(delivery = %delivery.id, event = "push", r#ref = %shown, "push to another ref: ignored");
                StatusCode::NO_CONTENT.into_response()
            }
        }
        _ => {
            tracing::info!(delivery = %delivery.id, event = %delivery.event, "webhook event ignored");
            StatusCode::NO_CONTENT.into_response()
        }
    }
}

/// The MAC of `X-Hub-Signature-256: sha256=<hex>`, if the header has that form.
fn signature(headers: &HeaderMap) -> Option<Vec<u8>> {
    let value = headers.get("x-hub-signature-256")?.to_str().ok()?;
    let hex = value.trim().strip_prefix("sha256=")?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// HMAC-SHA256 of `body` under `secret` compared with `mac` in constant time.
fn verify(secret: &Secret, body: &[u8], mac: &[u8]) -> bool {
    let Ok(mut hmac) = Hmac::<Sha256>::new_from_slice(&secret.0) else {
        return false;
    };
    hmac.update(body);
    hmac.verify_slice(mac).is_ok()
}

/// The `ref` of a push event's payload.
fn pushed_ref(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Push {
        #[serde(rename = "ref")]
        pushed: String,
    }
    serde_json::from_slice::<Push>(body).ok().map(|p| p.pushed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;
    use std::time::Duration;
    use tokio::sync::{Notify, oneshot, watch};

    const SECRET: &[u8] = b"It's a Secret to Everybody";

    /// A listener on a free port, stopped by [`Running::stop`].
    struct Running {
        url: String,
        fetch: Arc<Notify>,
        ready: watch::Sender<Readiness>,
        metrics: Arc<Metrics>,
        stop: oneshot::Sender<()>,
        task: tokio::task::JoinHandle<std::io::Result<()>>,
    }

    impl Running {
        async fn stop(self) {
            let _ = self.stop.send(());
            tokio::time::timeout(Duration::from_secs(5), self.task)
                .await
                .expect("the listener stops within 5 s")
                .expect("the listener task ends")
                .expect("the listener ends cleanly");
        }

        fn fetch_requested(&self) -> bool {
            self.fetch.notified().now_or_never().is_some()
        }
    }

    fn hook(branch: Option<&str>) -> Option<Webhook> {
        Some(Webhook {
            secret: Secret::new(SECRET),
            branch: branch.map(str::to_string),
        })
    }

    async fn start(webhook: Option<Webhook>) -> Running {
        let listener = bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (ready, ready_rx) = watch::channel(Readiness::NotReady(
            "waiting for the node and pod caches to sync".into(),
        ));
        let metrics = Arc::new(Metrics::new());
        let fetch = Arc::new(Notify::new());
        let state = HttpState {
            metrics: metrics.clone(),
            ready: ready_rx,
            webhook,
            fetch: fetch.clone(),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, state, async move {
            let _ = stopped.await;
        }));
        Running {
            url,
            fetch,
            ready,
            metrics,
            stop,
            task,
        }
    }

    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    }

    fn sign(secret: &[u8], body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(body);
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("sha256={hex}")
    }

    fn push(pushed: &str) -> Vec<u8> {
        serde_json::json!({"ref": pushed, "after": "0123abc", "repository": {"full_name": "acme/fleet"}})
            .to_string()
            .into_bytes()
    }

    async fn deliver(
        r: &Running,
        event: &str,
        body: Vec<u8>,
        signature: Option<String>,
    ) -> reqwest::Response {
        let mut req = client()
            .post(format!("{}/webhook", r.url))
            .header("x-github-event", event)
            .header("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
            .header("content-type", "application/json");
        if let Some(sig) = signature {
            req = req.header("x-hub-signature-256", sig);
        }
        req.body(body).send().await.unwrap()
    }

    async fn get(r: &Running, path: &str) -> reqwest::Response {
        client()
            .get(format!("{}{path}", r.url))
            .send()
            .await
            .unwrap()
    }

    async fn signed(r: &Running, event: &str, body: Vec<u8>) -> reqwest::Response {
        let sig = sign(SECRET, &body);
        deliver(r, event, body, Some(sig)).await
    }

    #[tokio::test]
    async fn healthz_answers_while_the_process_runs() {
        let r = start(None).await;
        let res = get(&r, "/healthz").await;
        assert_eq!(res.status(), 200);
        r.stop().await;
    }

    #[tokio::test]
    async fn readyz_says_why_not_until_ready() {
        let r = start(None).await;
        let res = get(&r, "/readyz").await;
        assert_eq!(res.status(), 503);
        assert_eq!(
            res.text().await.unwrap(),
            "waiting for the node and pod caches to sync\n"
        );
        r.ready
            .send(Readiness::NotReady(
                "waiting for the first read of the source\nsecond line".into(),
            ))
            .unwrap();
        let res = get(&r, "/readyz").await;
        assert_eq!(res.status(), 503);
        assert_eq!(
            res.text().await.unwrap(),
            "waiting for the first read of the source\n"
        );
        r.ready.send(Readiness::Ready).unwrap();
        let res = get(&r, "/readyz").await;
        assert_eq!(res.status(), 200);
        r.stop().await;
    }

    #[tokio::test]
    async fn metrics_are_served_as_openmetrics_text() {
        let r = start(None).await;
        r.metrics.leader(true);
        let res = get(&r, "/metrics").await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            res.headers()[reqwest::header::CONTENT_TYPE],
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        let text = res.text().await.unwrap();
        assert!(text.contains("\ndaemonsync_leader 1\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        r.stop().await;
    }

    #[tokio::test]
    async fn webhook_is_absent_without_a_secret() {
        let r = start(None).await;
        let res = signed(&r, "push", push("refs/heads/main")).await;
        assert_eq!(res.status(), 404);
        assert!(!r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn a_push_to_the_tracked_branch_fetches_at_once() {
        let r = start(hook(Some("main"))).await;
        let res = signed(&r, "push", push("refs/heads/main")).await;
        assert_eq!(res.status(), 202);
        assert!(r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn a_push_to_another_ref_is_acknowledged_without_a_fetch() {
        let r = start(hook(Some("refs/heads/main"))).await;
        for other in ["refs/heads/feature", "refs/tags/main", "refs/heads/main2"] {
            let res = signed(&r, "push", push(other)).await;
            assert_eq!(res.status(), 204, "{other}");
        }
        assert!(!r.fetch_requested());
        let res = signed(&r, "push", push("refs/heads/main")).await;
        assert_eq!(res.status(), 202);
        assert!(r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn without_a_tracked_branch_every_push_fetches() {
        let r = start(hook(None)).await;
        let res = signed(&r, "push", push("refs/heads/anything")).await;
        assert_eq!(res.status(), 202);
        assert!(r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn ping_is_answered_and_other_events_are_acknowledged() {
        let r = start(hook(Some("main"))).await;
        let ping = br#"{"zen":"Keep it logically awesome.","hook_id":1}"#.to_vec();
        assert_eq!(signed(&r, "ping", ping).await.status(), 200);
        let pr = br#"{"action":"opened","number":1}"#.to_vec();
        assert_eq!(signed(&r, "pull_request", pr).await.status(), 204);
        assert!(!r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn unsigned_and_mis_signed_deliveries_are_refused() {
        let r = start(hook(Some("main"))).await;
        let body = push("refs/heads/main");
        assert_eq!(deliver(&r, "push", body.clone(), None).await.status(), 401);
        let wrong_secret = sign(b"guessed", &body);
        assert_eq!(
            deliver(&r, "push", body.clone(), Some(wrong_secret))
                .await
                .status(),
            401
        );
        let other_body = sign(SECRET, &push("refs/heads/other"));
        assert_eq!(
            deliver(&r, "push", body.clone(), Some(other_body))
                .await
                .status(),
            401
        );
        let sha1 = "sha1=0123456789abcdef0123456789abcdef01234567".to_string();
        assert_eq!(
            deliver(&r, "push", body.clone(), Some(sha1)).await.status(),
            401
        );
        let not_hex = format!("sha256={}", "zz".repeat(32));
        assert_eq!(deliver(&r, "push", body, Some(not_hex)).await.status(), 401);
        assert!(!r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn oversized_deliveries_are_refused_even_with_a_valid_looking_signature() {
        let r = start(hook(Some("main"))).await;
        let mut big = push("refs/heads/main");
        big.truncate(big.len() - 1);
        big.extend(format!(r#","padding":"{}"}}"#, "x".repeat(WEBHOOK_BODY_LIMIT)).bytes());
        let sig = sign(SECRET, &big);
        // With a Content-Length: refused before reading.
        assert_eq!(
            deliver(&r, "push", big.clone(), Some(sig.clone()))
                .await
                .status(),
            413
        );
        // Chunked, without a length: refused once the cap is reached.
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            big.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
        let res = client()
            .post(format!("{}/webhook", r.url))
            .header("x-github-event", "push")
            .header("x-hub-signature-256", sig)
            .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 413);
        assert!(!r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn a_signed_push_without_a_ref_is_a_bad_request() {
        let r = start(hook(Some("main"))).await;
        let res = signed(&r, "push", b"not json".to_vec()).await;
        assert_eq!(res.status(), 400);
        assert!(!r.fetch_requested());
        r.stop().await;
    }

    #[tokio::test]
    async fn a_port_in_use_names_the_address_and_the_fix() {
        let taken = bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let err = bind(&addr).await.unwrap_err().to_string();
        assert_eq!(
            err,
            format!("cannot listen on {addr}: it is in use; choose another with --listen")
        );
        for bad in [
            "8080",
            "localhost",
            ":8080",
            "127.0.0.1:http",
            "127.0.0.1:70000",
        ] {
            let err = bind(bad).await.unwrap_err().to_string();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(err.contains("HOST:PORT"), "{err}");
        }
    }

    #[test]
    fn the_secret_file_is_read_without_its_trailing_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, b"s3cret-value\n").unwrap();
        let secret = secret_from(Some(&path), None).unwrap().unwrap();
        assert_eq!(secret.0, b"s3cret-value");
        std::fs::write(&path, b"s3cret-value\r\n").unwrap();
        let secret = secret_from(Some(&path), None).unwrap().unwrap();
        assert_eq!(secret.0, b"s3cret-value");
        assert_eq!(format!("{secret:?}"), "Secret(..)");
        // The file wins over the variable.
        let secret = secret_from(Some(&path), Some("from-env".into()))
            .unwrap()
            .unwrap();
        assert_eq!(secret.0, b"s3cret-value");
    }

    #[test]
    fn the_variable_is_the_fallback_and_nothing_means_no_webhook() {
        let secret = secret_from(None, Some("from-env\n".into()))
            .unwrap()
            .unwrap();
        assert_eq!(secret.0, b"from-env");
        assert!(secret_from(None, None).unwrap().is_none());
        let err = secret_from(None, Some("".into())).unwrap_err().to_string();
        assert_eq!(
            err,
            "DAEMONSYNC_WEBHOOK_SECRET is set but empty: set it to the webhook's secret, or unset it to run without the webhook"
        );
    }

    #[test]
    fn secret_file_errors_name_the_file_and_the_fix_and_never_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = secret_from(Some(&missing), None).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "the webhook secret file {} does not exist: create it with the webhook's secret, or fix --webhook-secret-file",
                missing.display()
            )
        );
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"\n").unwrap();
        let err = secret_from(Some(&empty), None).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "the webhook secret file {} is empty: write the webhook's secret into it, or fix --webhook-secret-file",
                empty.display()
            )
        );
        let huge = dir.path().join("huge");
        std::fs::write(&huge, "hunter2-".repeat(10_000)).unwrap();
        let err = secret_from(Some(&huge), None).unwrap_err().to_string();
        assert!(err.contains(&huge.display().to_string()), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        let err = secret_from(Some(dir.path()), None).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "cannot read the webhook secret file {}",
                dir.path().display()
            )),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
}

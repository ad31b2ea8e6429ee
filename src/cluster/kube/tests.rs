//! The request shapes of the live backend's writes, against a mock API server (tower-test):
//! what reaches the wire, and how the API's answers become errors.

use super::requests;
use super::*;
use http::{Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock;

type Handle = mock::Handle<Request<Body>, Response<Body>>;

fn client() -> (kube::Client, Handle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(service, "default"), handle)
}

fn target() -> Target {
    Target {
        context: "prod-eu".into(),
        server: "https://10.0.0.1:6443".into(),
        field_manager: "daemonsync".into(),
    }
}

/// The next request: method, path and query, and its JSON body.
async fn next(
    handle: &mut Handle,
) -> (
    http::Method,
    String,
    Value,
    mock::SendResponse<Response<Body>>,
) {
    let (req, send) = handle.next_request().await.expect("a request");
    let (parts, body) = req.into_parts();
    let bytes = body.collect_bytes().await.unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (parts.method, parts.uri.to_string(), body, send)
}

fn answer(send: mock::SendResponse<Response<Body>>, code: u16, body: Value) {
    send.send_response(
        Response::builder()
            .status(StatusCode::from_u16(code).unwrap())
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap(),
    );
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
           "reason": reason, "message": message})
}

fn owned_pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {"generateName": "agent-", "namespace": "demo",
            "ownerReferences": [{"apiVersion": "daemonsync.io/v1alpha1", "kind": "ManagedDaemonSet",
                "name": "agent", "uid": "rec-uid-1", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "agent", "image": "agent:2"}]}
    }))
    .unwrap()
}

#[tokio::test]
async fn create_posts_the_pod_with_its_record_as_controller() {
    let (client, mut handle) = client();
    let api: Api<Pod> = Api::namespaced(client, "demo");
    let call =
        tokio::spawn(async move { requests::create_pod(&api, &owned_pod(), &target()).await });
    let (method, uri, body, send) = next(&mut handle).await;
    assert_eq!(method, http::Method::POST);
    assert!(uri.starts_with("/api/v1/namespaces/demo/pods?"), "{uri}");
    assert!(uri.contains("fieldManager=daemonsync"), "{uri}");
    assert_eq!(body["metadata"]["generateName"], "agent-");
    let owner = &body["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            owner["kind"].as_str(),
            owner["uid"].as_str(),
            owner["controller"].as_bool()
        ),
        (Some("ManagedDaemonSet"), Some("rec-uid-1"), Some(true))
    );
    let mut created = body.clone();
    created["metadata"]["name"] = json!("agent-x7k2p");
    answer(send, 201, created);
    assert_eq!(call.await.unwrap().unwrap(), "agent-x7k2p");
}

#[tokio::test]
async fn delete_carries_uid_and_resource_version_preconditions() {
    let (client, mut handle) = client();
    let api: Api<Pod> = Api::namespaced(client, "demo");
    let call = tokio::spawn(async move {
        requests::delete_pod(
            &api,
            ("demo", "agent-abcde"),
            ("pod-uid-9", "4711"),
            &target(),
        )
        .await
    });
    let (method, uri, body, send) = next(&mut handle).await;
    assert_eq!(method, http::Method::DELETE);
    assert!(
        uri.starts_with("/api/v1/namespaces/demo/pods/agent-abcde"),
        "{uri}"
    );
    assert_eq!(
        body["preconditions"],
        json!({"uid": "pod-uid-9", "resourceVersion": "4711"})
    );
    answer(
        send,
        200,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
    );
    call.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_stale_or_missing_pod_is_not_an_error_to_retry_blindly() {
    let (client, mut handle) = client();
    let api: Api<Pod> = Api::namespaced(client, "demo");
    let a = api.clone();
    let gone = tokio::spawn(async move {
        requests::delete_pod(&a, ("demo", "p"), ("u", "1"), &target()).await
    });
    let (_, _, _, send) = next(&mut handle).await;
    answer(send, 404, status(404, "NotFound", "pods \"p\" not found"));
    assert!(matches!(
        gone.await.unwrap(),
        Err(ClusterError::NotFound { .. })
    ));

    let stale = tokio::spawn(async move {
        requests::delete_pod(&api, ("demo", "p"), ("u", "1"), &target()).await
    });
    let (_, _, _, send) = next(&mut handle).await;
    answer(
        send,
        409,
        status(
            409,
            "Conflict",
            "Precondition failed: UID in precondition: u, UID in object meta: v",
        ),
    );
    let err = stale.await.unwrap().unwrap_err();
    assert!(
        matches!(err, ClusterError::Conflict(_)),
        "a precondition failing is a conflict, which the daemon re-plans without backing off: {err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("changed since it was observed") && err.contains("re-plans"),
        "{err}"
    );
}

fn tainted_node(resource_version: &str, taints: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": "new-1", "resourceVersion": resource_version},
           "spec": {"taints": taints}})
}

#[tokio::test]
async fn a_readiness_taint_is_removed_alone_at_the_version_read_and_read_again_on_a_conflict() {
    let (client, mut handle) = client();
    let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(client);
    let call = tokio::spawn(async move {
        requests::remove_node_taint(
            &api,
            "new-1",
            "example.com/agent-not-ready",
            crate::model::TaintEffect::NoSchedule,
            &target(),
        )
        .await
    });
    let readiness = json!({"key": "example.com/agent-not-ready", "effect": "NoSchedule"});
    let (method, uri, _, send) = next(&mut handle).await;
    assert_eq!(method, http::Method::GET);
    assert!(uri.starts_with("/api/v1/nodes/new-1"), "{uri}");
    answer(
        send,
        200,
        tainted_node(
            "7",
            json!([{"key": "dedicated", "effect": "NoSchedule"}, readiness]),
        ),
    );
    let (method, uri, body, send) = next(&mut handle).await;
    assert_eq!(method, http::Method::PATCH);
    assert!(uri.starts_with("/api/v1/nodes/new-1?"), "{uri}");
    assert_eq!(
        body,
        json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
               {"op": "remove", "path": "/spec/taints/1"}])
    );
    // Another writer added a taint in between: the test fails, nothing is clobbered, and the
    // node is read again.
    answer(
        send,
        422,
        status(
            422,
            "Invalid",
            "the server rejected our request: test failed",
        ),
    );
    let (method, _, _, send) = next(&mut handle).await;
    assert_eq!(method, http::Method::GET);
    answer(
        send,
        200,
        tainted_node(
            "8",
            json!([{"key": "added", "effect": "NoExecute"},
                   {"key": "dedicated", "effect": "NoSchedule"}, readiness]),
        ),
    );
    let (method, _, body, send) = next(&mut handle).await;
    assert_eq!(method, http::Method::PATCH);
    assert_eq!(
        body,
        json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "8"},
               {"op": "remove", "path": "/spec/taints/2"}])
    );
    answer(send, 200, tainted_node("9", json!([])));
    assert!(call.await.unwrap().unwrap());
}

#[tokio::test]
async fn a_taint_already_gone_is_done_and_a_refusal_names_the_rbac_file() {
    let (client, mut handle) = client();
    let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(client);
    let a = api.clone();
    let gone = tokio::spawn(async move {
        requests::remove_node_taint(
            &a,
            "new-1",
            "example.com/agent-not-ready",
            crate::model::TaintEffect::NoSchedule,
            &target(),
        )
        .await
    });
    let (_, _, _, send) = next(&mut handle).await;
    answer(
        send,
        200,
        tainted_node(
            "7",
            json!([{"key": "example.com/agent-not-ready", "effect": "NoExecute"}]),
        ),
    );
    assert!(
        !gone.await.unwrap().unwrap(),
        "only the NoSchedule taint is ours"
    );

    let forbidden = tokio::spawn(async move {
        requests::remove_node_taint(
            &api,
            "new-1",
            "example.com/agent-not-ready",
            crate::model::TaintEffect::NoSchedule,
            &target(),
        )
        .await
    });
    let (_, _, _, send) = next(&mut handle).await;
    answer(
        send,
        403,
        status(
            403,
            "Forbidden",
            r#"nodes "new-1" is forbidden: User "system:serviceaccount:daemonsync:daemonsync" cannot get resource "nodes" in API group "" at the cluster scope"#,
        ),
    );
    let err = forbidden.await.unwrap().unwrap_err();
    assert!(matches!(err, ClusterError::Forbidden(_)), "{err:?}");
    let line = err.to_string();
    assert!(
        line.contains("cannot get resource \"nodes\"")
            && line.contains("kubectl apply -f examples/deploy/rbac-readiness-taint.yaml")
            && line.contains("prod-eu"),
        "{line}"
    );
}

#[tokio::test]
async fn status_is_applied_to_the_status_subresource_as_daemonsync() {
    let (client, mut handle) = client();
    let api: Api<ManagedDaemonSet> = Api::namespaced(client, "demo");
    let written = ManagedDaemonSetStatus {
        desired_number_scheduled: 3,
        updated_number_scheduled: 1,
        current_revision: Some("749ffcdf58".into()),
        ..ManagedDaemonSetStatus::default()
    };
    let call =
        tokio::spawn(
            async move { requests::write_status(&api, "agent", &written, &target()).await },
        );
    let (method, uri, body, send) = next(&mut handle).await;
    assert_eq!(method, http::Method::PATCH);
    assert!(
        uri.starts_with(
            "/apis/daemonsync.io/v1alpha1/namespaces/demo/manageddaemonsets/agent/status?"
        ),
        "{uri}"
    );
    assert!(
        uri.contains("fieldManager=daemonsync") && uri.contains("force=true"),
        "{uri}"
    );
    assert_eq!(body["kind"], "ManagedDaemonSet");
    assert_eq!(body["status"]["currentRevision"], "749ffcdf58");
    assert_eq!(body["status"]["desiredNumberScheduled"], 3);
    answer(
        send,
        200,
        json!({"apiVersion": "daemonsync.io/v1alpha1", "kind": "ManagedDaemonSet",
        "metadata": {"name": "agent", "namespace": "demo"}, "spec": {"daemonSet": {}}}),
    );
    call.await.unwrap().unwrap();
}

#[tokio::test]
async fn server_errors_are_retried_and_refusals_name_the_context_and_the_fix() {
    let (client, mut handle) = client();
    let api: Api<Pod> = Api::namespaced(client, "demo");
    let a = api.clone();
    let call = tokio::spawn(async move { requests::create_pod(&a, &owned_pod(), &target()).await });
    let (_, _, _, send) = next(&mut handle).await;
    answer(
        send,
        500,
        status(500, "InternalError", "etcd leader changed"),
    );
    let (_, _, body, send) = next(&mut handle).await;
    let mut created = body;
    created["metadata"]["name"] = json!("agent-retried");
    answer(send, 201, created);
    assert_eq!(call.await.unwrap().unwrap(), "agent-retried");

    let call =
        tokio::spawn(async move { requests::create_pod(&api, &owned_pod(), &target()).await });
    let (_, _, _, send) = next(&mut handle).await;
    answer(
        send,
        403,
        status(
            403,
            "Forbidden",
            "pods is forbidden: User \"system:serviceaccount:x:y\" cannot create resource \"pods\"",
        ),
    );
    let err = call.await.unwrap().unwrap_err().to_string();
    assert!(
        err.contains("context \"prod-eu\"")
            && err.contains("https://10.0.0.1:6443")
            && err.contains("403")
            && err.contains("examples/deploy/rbac.yaml"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn server_urls_are_shown_without_credentials() {
    let url: http::Uri = "https://admin:hunter2@k8s.example.com:6443/prefix?token=abc"
        .parse()
        .unwrap();
    assert_eq!(display_server(&url), "https://k8s.example.com:6443");
}

/// A pod change as the caches report it.
fn pod_change(name: &str) -> crate::plan::incremental::Changes {
    crate::plan::incremental::Changes {
        pods: vec![crate::plan::incremental::PodTouch {
            namespace: "ns".into(),
            name: format!("{name}-1"),
            controller: Some(name.into()),
            labels: Default::default(),
        }],
        ..Default::default()
    }
}

#[test]
fn changes_are_kept_for_a_client_that_takes_them_and_not_for_one_that_never_does() {
    // Observing everything time after time (apply, a full re-plan) keeps nothing: the
    // changes are "everything" until first taken, however many come meanwhile.
    let mut pending = Pending::default();
    for i in 0..1000 {
        pending.keep(pod_change(&format!("agent-{i}")));
    }
    let first = pending.take();
    assert!(first.everything);
    assert!(
        first.pods.is_empty(),
        "{} pod changes kept",
        first.pods.len()
    );
    // Once taken, what an observation takes in between is kept for the next take.
    pending.keep(pod_change("agent-1"));
    pending.keep(pod_change("agent-2"));
    let next = pending.take();
    assert!(!next.everything);
    assert_eq!(next.pods.len(), 2);
    assert!(pending.take().is_empty());
}

//! Events as client-go's `events.k8s.io/v1` broadcaster records them
//! (`k8s.io/client-go/tools/events`): the first occurrence of an event is created; the second
//! of the same kind (same type, action, reason, reporter and object — the note is not part of
//! it) turns it into a series, patched with `series.count: 2`; later occurrences only count,
//! in memory, and the counts are written every six minutes, and once more when a series has
//! seen nothing for six minutes (then it is forgotten, as an event seen once is).
//!
//! A daemon replacing pods one at a time thus writes one Event per kind of write and object
//! every six minutes, instead of one per pod; kube-rs's `Recorder` patches every occurrence.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How often series are written, and how long one may go unseen before it ends
/// (client-go's `refreshTime` and `finishTime`).
pub const REFRESH: std::time::Duration = std::time::Duration::from_secs(6 * 60);

/// What names an object in a [`Kind`]: its kind, namespace, name and uid.
type Reference = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// What makes two events the same kind (client-go's `eventKey`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Kind {
    type_: &'static str,
    action: String,
    reason: String,
    regarding: Reference,
    related: Option<Reference>,
}

fn reference_key(r: &ObjectReference) -> Reference {
    (
        r.kind.clone(),
        r.namespace.clone(),
        r.name.clone(),
        r.uid.clone(),
    )
}

/// An event as last written, and whether occurrences have been counted since.
#[derive(Debug, Clone)]
struct Kept {
    event: K8sEvent,
    unwritten: bool,
}

/// Records events, counting repeats into series.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    reporter: Reporter,
    kept: Arc<Mutex<HashMap<Kind, Kept>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("reporter", &self.reporter)
            .finish_non_exhaustive()
    }
}

/// What one occurrence asks of the API server.
enum Write {
    Create(K8sEvent),
    Series(K8sEvent),
    Nothing,
}

impl Recorder {
    /// A recorder reporting as `reporter`.
    pub fn new(client: kube::Client, reporter: Reporter) -> Self {
        Recorder {
            client,
            reporter,
            kept: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Kind, Kept>> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records one occurrence of `ev` about `regarding`.
    pub async fn publish(
        &self,
        ev: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = jiff::Timestamp::now();
        let kind = Kind {
            type_: type_name(ev.type_),
            action: ev.action.clone(),
            reason: ev.reason.clone(),
            regarding: reference_key(regarding),
            related: ev.secondary.as_ref().map(reference_key),
        };
        let write = {
            let mut kept = self.lock();
            match kept.get_mut(&kind) {
                Some(k) => match &mut k.event.series {
                    Some(series) => {
                        series.count += 1;
                        series.last_observed_time = MicroTime(now);
                        k.unwritten = true;
                        Write::Nothing
                    }
                    None => {
                        k.event.series = Some(EventSeries {
                            count: 2,
                            last_observed_time: MicroTime(now),
                        });
                        Write::Series(k.event.clone())
                    }
                },
                None => {
                    let event = self.new_event(ev, regarding, now);
                    kept.insert(
                        kind.clone(),
                        Kept {
                            event: event.clone(),
                            unwritten: false,
                        },
                    );
                    Write::Create(event)
                }
            }
        };
        match write {
            Write::Create(event) => self.create(&event).await,
            Write::Series(event) => self.write_series(&event).await,
            Write::Nothing => Ok(()),
        }
    }

    /// Writes the counts of every series counted since its last write, and ends (writes once
    /// more, then forgets) the series and events unseen for [`REFRESH`]. A daemon calls it
    /// every [`REFRESH`], a command before it exits.
    pub async fn flush(&self) {
        let now = jiff::Timestamp::now();
        let ended = |t: Option<&MicroTime>| {
            t.is_some_and(|t| {
                t.0 + jiff::SignedDuration::try_from(REFRESH).unwrap_or_default() < now
            })
        };
        let due: Vec<K8sEvent> = {
            let mut kept = self.lock();
            let due = kept
                .values_mut()
                .filter(|k| k.unwritten)
                .map(|k| {
                    k.unwritten = false;
                    k.event.clone()
                })
                .collect();
            kept.retain(|_, k| match &k.event.series {
                Some(s) => !ended(Some(&s.last_observed_time)),
                None => !ended(k.event.event_time.as_ref()),
            });
            due
        };
        for event in due {
            if let Err(e) = self.write_series(&event).await {
                tracing::debug!(error = %e, reason = ?event.reason, "could not write an event series");
            }
        }
    }

    /// Patches a series' count and last observation (creates the event when it is gone).
    async fn write_series(&self, event: &K8sEvent) -> Result<(), kube::Error> {
        let api = self.api(event);
        let name = event.metadata.name.clone().unwrap_or_default();
        let patch = serde_json::json!({ "series": event.series });
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 404 => self.create(event).await,
            other => other.map(drop),
        }
    }

    async fn create(&self, event: &K8sEvent) -> Result<(), kube::Error> {
        let mut event = event.clone();
        event.metadata.resource_version = None;
        self.api(&event)
            .create(&PostParams::default(), &event)
            .await
            .map(drop)
    }

    fn api(&self, event: &K8sEvent) -> Api<K8sEvent> {
        let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), namespace)
    }

    /// A new event (the fields kube-rs's `Recorder` and client-go fill).
    fn new_event(&self, ev: &Event, regarding: &ObjectReference, now: jiff::Timestamp) -> K8sEvent {
        let name = regarding
            .name
            .as_deref()
            .unwrap_or(&self.reporter.controller);
        K8sEvent {
            action: Some(ev.action.clone()),
            reason: Some(ev.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            note: ev.note.clone(),
            metadata: ObjectMeta {
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_string()),
                ),
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            type_: Some(type_name(ev.type_).to_string()),
            related: ev.secondary.clone(),
            ..K8sEvent::default()
        }
    }
}

fn type_name(t: EventType) -> &'static str {
    match t {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{Request, Response};
    use kube::client::Body;
    use serde_json::{Value, json};
    use tower_test::mock;

    type Handle = mock::Handle<Request<Body>, Response<Body>>;

    fn recorder() -> (Recorder, Handle) {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        let client = kube::Client::new(service, "default");
        let reporter = Reporter {
            controller: "daemonsync".into(),
            instance: None,
        };
        (Recorder::new(client, reporter), handle)
    }

    fn record() -> ObjectReference {
        ObjectReference {
            api_version: Some("daemonsync.io/v1alpha1".into()),
            kind: Some("ManagedDaemonSet".into()),
            namespace: Some("demo".into()),
            name: Some("agent".into()),
            uid: Some("rec-1".into()),
            ..ObjectReference::default()
        }
    }

    fn created(note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: "SuccessfulCreate".into(),
            note: Some(note.into()),
            action: "SuccessfulCreate".into(),
            secondary: None,
        }
    }

    /// Answers the next request (`code`, echoing its body) and says what it was.
    async fn answer(handle: &mut Handle, code: u16) -> (http::Method, String, Value) {
        let (req, send) = handle.next_request().await.expect("a request");
        let (parts, body) = req.into_parts();
        let body: Value = serde_json::from_slice(&body.collect_bytes().await.unwrap()).unwrap();
        let reply = match code {
            404 => json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "code": 404, "reason": "NotFound", "message": "not found"}),
            _ => {
                let mut e = body.clone();
                e["metadata"]["name"] = json!("agent.1");
                e
            }
        };
        send.send_response(
            Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(&reply).unwrap()))
                .unwrap(),
        );
        (parts.method, parts.uri.path().to_string(), body)
    }

    /// Publishes, answering the request it makes when `code` is given; asserts it made
    /// none otherwise (it returns without an answer).
    async fn publish(
        r: &Recorder,
        handle: &mut Handle,
        ev: Event,
        code: Option<u16>,
    ) -> Option<(http::Method, String, Value)> {
        let r = r.clone();
        let call = tokio::spawn(async move { r.publish(&ev, &record()).await });
        let request = match code {
            Some(code) => Some(answer(handle, code).await),
            None => None,
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), call)
            .await
            .expect("publish returns without a request left unanswered")
            .unwrap()
            .unwrap();
        request
    }

    #[tokio::test]
    async fn repeats_of_an_event_count_in_memory_after_the_second_and_are_written_when_flushed() {
        let (r, mut handle) = recorder();
        let (method, path, body) = publish(&r, &mut handle, created("created pod a"), Some(201))
            .await
            .unwrap();
        assert_eq!(method, http::Method::POST);
        assert_eq!(path, "/apis/events.k8s.io/v1/namespaces/demo/events");
        assert_eq!(
            (body["note"].as_str(), body["regarding"]["uid"].as_str()),
            (Some("created pod a"), Some("rec-1"))
        );
        assert!(body.get("series").is_none(), "{body:#}");
        let name = body["metadata"]["name"].as_str().unwrap().to_string();

        // The second occurrence (another note, the same kind) makes the event a series.
        let (method, path, patch) = publish(&r, &mut handle, created("created pod b"), Some(200))
            .await
            .unwrap();
        assert_eq!(method, http::Method::PATCH);
        assert_eq!(
            path,
            format!("/apis/events.k8s.io/v1/namespaces/demo/events/{name}")
        );
        assert_eq!(patch["series"]["count"], 2, "{patch:#}");
        assert_eq!(
            patch.as_object().unwrap().len(),
            1,
            "only the series: {patch:#}"
        );

        // Further occurrences cost no request until the series is written.
        for pod in ["c", "d", "e"] {
            publish(
                &r,
                &mut handle,
                created(&format!("created pod {pod}")),
                None,
            )
            .await;
        }
        let flush = tokio::spawn({
            let r = r.clone();
            async move { r.flush().await }
        });
        let (method, _, patch) = answer(&mut handle, 200).await;
        assert_eq!(
            (method, &patch["series"]["count"]),
            (http::Method::PATCH, &json!(5))
        );
        flush.await.unwrap();
        // Nothing new counted: a flush writes nothing.
        tokio::time::timeout(std::time::Duration::from_secs(5), r.flush())
            .await
            .expect("no request");

        // Another reason is another event.
        let halted = Event {
            type_: EventType::Warning,
            reason: "RolloutHalted".into(),
            note: Some("pod x on node n-1: CrashLoopBackOff".into()),
            action: "RolloutHalted".into(),
            secondary: None,
        };
        let (method, _, body) = publish(&r, &mut handle, halted, Some(201)).await.unwrap();
        assert_eq!(
            (method, body["type"].as_str()),
            (http::Method::POST, Some("Warning"))
        );
    }

    #[tokio::test]
    async fn a_series_whose_event_is_gone_is_created_again() {
        let (r, mut handle) = recorder();
        publish(&r, &mut handle, created("a"), Some(201)).await;
        let r2 = r.clone();
        let call = tokio::spawn(async move { r2.publish(&created("b"), &record()).await });
        let (method, _, _) = answer(&mut handle, 404).await;
        assert_eq!(method, http::Method::PATCH);
        let (method, _, body) = answer(&mut handle, 201).await;
        assert_eq!(method, http::Method::POST);
        assert_eq!(body["series"]["count"], 2, "{body:#}");
        assert!(body["metadata"].get("resourceVersion").is_none());
        call.await.unwrap().unwrap();
    }
}

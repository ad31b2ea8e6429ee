//! What a simulated pod's kubelet (and the scheduler) report in its `status`, as the API shows
//! it: phase, conditions, container statuses. `sim serve` adds the addresses.

use super::kubelet::{is_pull_reason, never_ran};
use super::nodes::{ContainerState, NodeSim, Ran, SimContainer, SimPod};
use crate::model::{PodPhase, Timestamp};
use serde_json::{Value, json};

fn time(t: Timestamp) -> Value {
    json!(super::api::api_time(t))
}

fn condition(type_: &str, status: bool, at: &Value) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" },
           "lastProbeTime": null, "lastTransitionTime": at})
}

fn with_reason(mut c: Value, reason: &str, message: String) -> Value {
    c["reason"] = json!(reason);
    if !message.is_empty() {
        c["message"] = json!(message);
    }
    c
}

/// The `imageID` of an image that ran: stable and fake.
pub(crate) fn image_id(image: &str) -> String {
    format!("sim://{image}")
}

fn terminated(r: &Ran) -> Value {
    json!({"terminated": {"exitCode": r.exit_code, "reason": r.reason,
                          "startedAt": time(r.started), "finishedAt": time(r.finished)}})
}

/// The waiting message the kubelet gives with `reason`.
fn waiting_message(reason: &str, image: &str) -> String {
    match reason {
        "ErrImagePull" => format!(
            "failed to pull image {image:?}: the simulated registry refuses it (failures.images)"
        ),
        "InvalidImageName" => format!("Failed to apply default image tag {image:?}: couldn't parse image name {image:?}: invalid reference format"),
        r if is_pull_reason(r) => format!("Back-off pulling image {image:?}"),
        "CreateContainerConfigError" => {
            "the simulated kubelet cannot build the container's configuration (failures.images): a referenced configmap or secret is missing".to_string()
        }
        "CreateContainerError" => format!(
            "failed to create the container of image {image:?} in the simulated runtime (failures.images)"
        ),
        "RunContainerError" => format!(
            "failed to start the container of image {image:?} in the simulated runtime (failures.images)"
        ),
        _ => "back-off restarting failed container".to_string(),
    }
}

/// One entry of `containerStatuses` or `initContainerStatuses` (of a pod with init containers
/// when `has_init`).
fn container_status(c: &SimContainer, has_init: bool, node_ready: bool) -> Value {
    let waiting = |reason: &str, message: Option<String>| {
        let mut w = json!({"reason": reason});
        if let Some(m) = message {
            w["message"] = json!(m);
        }
        json!({"waiting": w})
    };
    let mut last = c.last.as_ref().map(terminated);
    let (state, ready, started, image, image_id) = match &c.state {
        ContainerState::Creating => {
            // The kubelet's default for a container it has not run yet.
            let reason = if has_init && c.last.is_none() {
                "PodInitializing"
            } else {
                "ContainerCreating"
            };
            (waiting(reason, None), false, false, &c.image, String::new())
        }
        ContainerState::ConfigMissing(message) => (
            waiting(crate::kubelet_config::CONFIG_ERROR, Some(message.clone())),
            false,
            false,
            &c.image,
            String::new(),
        ),
        ContainerState::PullFailed(reason) => (
            waiting(reason, Some(waiting_message(reason, &c.image))),
            false,
            false,
            &c.image,
            String::new(),
        ),
        ContainerState::Running(since) => (
            json!({"running": {"startedAt": time(*since)}}),
            node_ready,
            true,
            &c.image,
            image_id(&c.image),
        ),
        ContainerState::Failing(reason, since) => {
            if last.is_none() && !never_ran(reason) {
                last = Some(terminated(&Ran {
                    started: *since,
                    finished: *since,
                    exit_code: 1,
                    reason: "Error".into(),
                    image: c.image.clone(),
                }));
            }
            (
                waiting(reason, Some(waiting_message(reason, &c.image))),
                false,
                false,
                &c.image,
                image_id(&c.image),
            )
        }
        ContainerState::Terminated(r) => (
            terminated(r),
            c.init && r.exit_code == 0,
            false,
            &r.image,
            image_id(&r.image),
        ),
    };
    json!({"name": c.name, "image": image, "imageID": image_id, "ready": ready,
           "restartCount": c.restarts, "started": started, "state": state,
           "lastState": last.unwrap_or_else(|| json!({}))})
}

/// Why the Ready condition is False, as the kubelet words it.
fn not_ready_reason(p: &SimPod) -> Option<(&'static str, String)> {
    if p.pod.phase.is_terminal() {
        return Some(("PodCompleted", String::new()));
    }
    if !p.containers_running() {
        let unready: Vec<&str> = p
            .containers
            .iter()
            .filter(|c| !c.init && !matches!(c.state, ContainerState::Running(_)))
            .map(|c| c.name.as_str())
            .collect();
        return Some((
            "ContainersNotReady",
            format!("containers with unready status: [{}]", unready.join(" ")),
        ));
    }
    let unmet: Vec<String> = p
        .gates
        .iter()
        .filter_map(|g| match p.conditions.get(g) {
            None => Some(format!(
                "corresponding condition of pod readiness gate {g:?} does not exist."
            )),
            Some((false, _)) => Some(format!(
                "the status of pod readiness gate {g:?} is not \"True\", but False"
            )),
            Some((true, _)) => None,
        })
        .collect();
    (!unmet.is_empty()).then(|| ("ReadinessGatesNotReady", unmet.join(", ")))
}

impl NodeSim {
    /// The `status` of a simulated pod as its kubelet and the scheduler report it, without
    /// addresses.
    pub(crate) fn status_json(&self, p: &SimPod) -> Value {
        let created = p.pod.creation_timestamp.map(time).unwrap_or(Value::Null);
        let Some(node) = p.pod.node_name.as_deref() else {
            let mut scheduled = condition("PodScheduled", false, &created);
            if let Some(why) = &p.unschedulable {
                scheduled = with_reason(scheduled, "Unschedulable", why.clone());
            }
            return json!({"phase": "Pending", "qosClass": "BestEffort", "conditions": [scheduled]});
        };
        let node_ready = self.nodes.get(node).is_some_and(|n| n.ready != Some(false));
        let mut status = json!({"phase": p.pod.phase.as_str(), "qosClass": "BestEffort",
                                "startTime": created});
        let scheduled = condition("PodScheduled", true, &created);
        if p.waiting_for_node {
            // Bound; the kubelet of its NotReady node has reported nothing.
            status["conditions"] = json!([scheduled]);
            return status;
        }
        let at = |t: Option<Timestamp>| t.map(time).unwrap_or(created.clone());
        let init_done = p.init_done();
        let has_init = p.containers.iter().any(|c| c.init);
        let mut initialized = condition(
            "Initialized",
            init_done,
            &at(if has_init { p.initialized } else { None }),
        );
        if !init_done {
            let pending: Vec<&str> = p
                .containers
                .iter()
                .filter(|c| {
                    c.init && !matches!(&c.state, ContainerState::Terminated(r) if r.exit_code == 0)
                })
                .map(|c| c.name.as_str())
                .collect();
            initialized = with_reason(
                initialized,
                "ContainersNotInitialized",
                format!("containers with incomplete status: [{}]", pending.join(" ")),
            );
        }
        let ready = p.pod.is_ready();
        let mut ready_condition = condition(
            "Ready",
            ready,
            &at(p.pod.ready.and_then(|r| r.last_transition)),
        );
        let (containers_ready, containers_since) = p
            .containers_ready
            .map_or((false, None), |(s, t)| (s, Some(t)));
        let mut containers_condition =
            condition("ContainersReady", containers_ready, &at(containers_since));
        if let Some((reason, message)) = not_ready_reason(p) {
            if !ready {
                ready_condition = with_reason(ready_condition, reason, message.clone());
            }
            if !containers_ready && reason != "ReadinessGatesNotReady" {
                containers_condition = with_reason(containers_condition, reason, message);
            }
        }
        let mut conditions = vec![
            condition(
                "PodReadyToStartContainers",
                p.set_up.is_some(),
                &at(p.set_up),
            ),
            initialized,
            ready_condition,
            containers_condition,
            scheduled,
        ];
        conditions.extend(
            p.conditions
                .iter()
                .map(|(t, (s, since))| condition(t, *s, &time(*since))),
        );
        status["conditions"] = Value::Array(conditions);
        let statuses = |init: bool| -> Value {
            p.containers
                .iter()
                .filter(|c| c.init == init)
                .map(|c| container_status(c, has_init, node_ready))
                .collect()
        };
        if has_init {
            status["initContainerStatuses"] = statuses(true);
        }
        status["containerStatuses"] = statuses(false);
        status
    }

    /// The `status` of a pod as its kubelet reports it (phase, conditions, container
    /// statuses; no addresses), or `None` when the pod does not exist.
    pub fn pod_status(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<k8s_openapi::api::core::v1::PodStatus> {
        let p = self.pods.get(&(namespace.to_string(), name.to_string()))?;
        serde_json::from_value(self.status_json(p)).ok()
    }
}

/// True for a phase in which a pod has an IP.
pub(crate) fn has_ip(phase: PodPhase) -> bool {
    phase != PodPhase::Pending
}

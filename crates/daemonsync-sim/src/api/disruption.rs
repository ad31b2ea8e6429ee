//! `policy/v1` PodDisruptionBudgets and the `pods/eviction` subresource: kube-controller-
//! manager's disruption controller (`pkg/controller/disruption/`) keeps each budget's status,
//! and the API server's eviction endpoint (`pkg/registry/core/pod/storage/eviction.go`)
//! deletes a pod only when the budget allows it, answering 429 otherwise — what `kubectl
//! drain` meets.
//!
//! A budget's expected pods and desired healthy pods come from `minAvailable` as a number.
//! `maxUnavailable` and a percentage need the scale of the pods' controller, which
//! DaemonSets (and daemonsync's records) do not have: as upstream, such a budget reports the
//! error and allows no disruption.

use super::error::ApiError;
use super::world::{DeleteParams, World, WriteParams};
use crate::model::LabelSelector;
use serde_json::{Value, json};

/// Storage of PodDisruptionBudgets.
pub const BUDGETS: &str = "policy/poddisruptionbudgets";
/// The field manager of the controller's status writes.
const CONTROLLER: &str = "disruption-controller";

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_str()
        .unwrap_or_default()
}

/// The pods of `namespace` a budget's selector matches (an empty selector matches all).
fn selected<'a>(w: &'a World, namespace: &str, budget: &Value) -> Vec<&'a crate::model::Pod> {
    let selector = serde_json::from_value(budget["spec"]["selector"].clone())
        .ok()
        .and_then(|s| LabelSelector::from_k8s(&s));
    let Some(selector) = selector else {
        return Vec::new();
    };
    w.nodes
        .pods
        .iter()
        .filter(|((ns, _), _)| ns == namespace)
        .map(|(_, p)| &p.pod)
        .filter(|p| selector.matches(&p.labels))
        .collect()
}

/// What the disruption controller computes for one budget: expected pods, desired and
/// current healthy, allowed disruptions, or why it cannot.
fn budget_status(w: &World, namespace: &str, budget: &Value) -> Value {
    let pods = selected(w, namespace, budget);
    let healthy = pods
        .iter()
        .filter(|p| !p.is_terminating() && p.is_ready())
        .count() as i64;
    let generation = budget["metadata"]["generation"].as_i64().unwrap_or(1);
    let now = super::api_time(w.now());
    let min_available = &budget["spec"]["minAvailable"];
    let (expected, desired, error) = match min_available.as_i64() {
        Some(min) if budget["spec"]["maxUnavailable"].is_null() => (pods.len() as i64, min, None),
        _ => {
            let pod = pods.first().map(|p| p.name.as_str()).unwrap_or_default();
            (
                0,
                0,
                Some(format!("found no controllers for pod \"{pod}\"")),
            )
        }
    };
    let allowed = if error.is_some() {
        0
    } else {
        (healthy - desired).max(0)
    };
    let (status, reason, message) = match (&error, allowed > 0) {
        (Some(e), _) => ("False", "SyncFailed", e.clone()),
        (None, true) => ("True", "SufficientPods", String::new()),
        (None, false) => ("False", "InsufficientPods", String::new()),
    };
    json!({
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [{"type": "DisruptionAllowed", "status": status, "reason": reason,
                        "message": message, "observedGeneration": generation,
                        "lastTransitionTime": now}],
    })
}

/// The disruption controller's pass: every budget's status, written when it changed (the
/// transition time of its condition kept while the condition holds).
pub fn sync_budgets(w: &mut World) {
    let budgets: Vec<(String, String, std::sync::Arc<Value>)> = w
        .store
        .list(BUDGETS, None)
        .map(|e| {
            let (ns, name) = super::store::key_of(&e.object());
            (ns, name, e.object())
        })
        .collect();
    let Some(kind) = w.registry.by_storage(BUDGETS) else {
        return;
    };
    for (ns, name, budget) in budgets {
        let mut status = budget_status(w, &ns, &budget);
        let old = &budget["status"];
        if old["conditions"][0]["status"] == status["conditions"][0]["status"] {
            status["conditions"][0]["lastTransitionTime"] =
                old["conditions"][0]["lastTransitionTime"].clone();
        }
        if *old == status {
            continue;
        }
        let mut next = (*budget).clone();
        next["status"] = status;
        let params = WriteParams {
            manager: CONTROLLER.into(),
            ..WriteParams::default()
        };
        let _ = w.update(&kind, &ns, &name, true, next, &params, None);
    }
}

impl World {
    /// `POST pods/NAME/eviction`: deletes the pod unless its disruption budget forbids it.
    /// Returns the HTTP code and the `Status` to answer.
    pub fn evict(
        &mut self,
        namespace: &str,
        name: &str,
        body: &Value,
    ) -> Result<(u16, Value), ApiError> {
        let named = str_at(body, &["metadata", "name"]);
        if !named.is_empty() && named != name {
            return Err(ApiError::bad_request(format!(
                "name in URL does not match name in Eviction object: {name} vs {named}"
            )));
        }
        let pods = self.kind("", "v1", "pods");
        let pod = self.get(&pods, namespace, name)?;
        let options = DeleteParams::from_body(&body["deleteOptions"])?;
        if !ignores_budgets(&pod) {
            self.check_budgets(namespace, &pod)?;
        }
        self.delete(&pods, namespace, name, &options)?;
        Ok((
            201,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                   "code": 201}),
        ))
    }

    /// The budget a pod's eviction must respect: one at most; it must allow a disruption
    /// (an unready pod may go while the budget is met), which the eviction then uses.
    fn check_budgets(&mut self, namespace: &str, pod: &Value) -> Result<(), ApiError> {
        let labels: crate::model::Labels =
            serde_json::from_value(pod["metadata"]["labels"].clone()).unwrap_or_default();
        let matching: Vec<std::sync::Arc<Value>> = self
            .store
            .list(BUDGETS, Some(namespace))
            .filter(|e| {
                serde_json::from_value(e.object()["spec"]["selector"].clone())
                    .ok()
                    .and_then(|s| LabelSelector::from_k8s(&s))
                    .is_some_and(|s| s.matches(&labels))
            })
            .map(|e| e.object())
            .collect();
        let budget = match matching.as_slice() {
            [] => return Ok(()),
            [one] => one.clone(),
            _ => {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction \
                     subresource does not support.",
                ));
            }
        };
        let budget_name = str_at(&budget, &["metadata", "name"]).to_string();
        let status = &budget["status"];
        let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
        let (healthy, desired) = (
            status["currentHealthy"].as_i64().unwrap_or(0),
            status["desiredHealthy"].as_i64().unwrap_or(0),
        );
        let ready = pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        if !ready && healthy >= desired {
            return Ok(());
        }
        if allowed <= 0 {
            return Err(ApiError::disruption_budget(&budget_name, desired, healthy));
        }
        let mut next = (*budget).clone();
        next["status"]["disruptionsAllowed"] = json!(allowed - 1);
        next["status"]["disruptedPods"][str_at(pod, &["metadata", "name"])] =
            json!(super::api_time(self.now()));
        let kind = self.kind("policy", "v1", "poddisruptionbudgets");
        self.update(
            &kind,
            namespace,
            &budget_name,
            true,
            next,
            &WriteParams {
                manager: "kube-apiserver".into(),
                ..WriteParams::default()
            },
            None,
        )?;
        Ok(())
    }
}

/// A pod that has finished, has not started, or is already going needs no budget.
fn ignores_budgets(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_string()
        || matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed" | "Pending")
        )
}

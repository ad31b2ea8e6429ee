//! kube-apiserver's admission chain, as far as daemon pods meet it: the mutating
//! DefaultTolerationSeconds plugin (`plugin/pkg/admission/defaulttolerationseconds`) and
//! TaintNodesAtCreation plugin (`plugin/pkg/admission/nodetaint`), the
//! validating PodSecurity plugin (`staging/src/k8s.io/pod-security-admission`), which reads
//! the namespace's `pod-security.kubernetes.io/enforce` label, and validating webhooks that
//! deny requests (`deny=VERB:RESOURCE:MESSAGE`, answered as the webhook admission plugin
//! answers a denial).

use super::error::ApiError;
use super::kinds::Kind;
use serde_json::{Value, json};

/// The name the simulated validating webhook is registered under.
pub const WEBHOOK: &str = "deny.sim";

/// A request a validating webhook denies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deny {
    /// The verb (`create`, `update`, `patch`, `delete`, or `*`).
    pub verb: String,
    /// The resource plural (`pods`), or `RESOURCE/SUBRESOURCE`.
    pub resource: String,
    /// What the webhook says.
    pub message: String,
}

impl std::str::FromStr for Deny {
    type Err = String;

    /// `VERB:RESOURCE:MESSAGE`; the message may contain colons.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.splitn(3, ':');
        let (Some(verb), Some(resource), Some(message)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!(
                "deny {s:?} is not VERB:RESOURCE:MESSAGE (e.g. create:pods:no privileged pods)"
            ));
        };
        let verb = verb.trim();
        if !["*", "create", "update", "patch", "delete"].contains(&verb) {
            return Err(format!(
                "deny {s:?}: admission sees create, update, patch or delete (or *), not {verb:?}"
            ));
        }
        let resource = resource.trim();
        if resource.is_empty() || message.trim().is_empty() {
            return Err(format!(
                "deny {s:?}: name a resource and a message (e.g. create:pods:no privileged pods)"
            ));
        }
        Ok(Deny {
            verb: verb.to_string(),
            resource: resource.to_string(),
            message: message.trim().to_string(),
        })
    }
}

/// The admission chain's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admission {
    /// Requests denied by the validating webhook.
    pub deny: Vec<Deny>,
}

impl Admission {
    /// From the sim file's `admission:` (already checked when the file was read).
    pub fn new(cfg: &crate::config::AdmissionConfig) -> Self {
        Admission {
            deny: cfg.deny.iter().filter_map(|d| d.parse().ok()).collect(),
        }
    }

    /// The validating webhooks: a matching `deny` refuses the request.
    pub fn webhooks(
        &self,
        verb: &str,
        kind: &Kind,
        subresource: Option<&str>,
    ) -> Result<(), ApiError> {
        let resource = match subresource {
            Some(sub) => format!("{}/{sub}", kind.plural),
            None => kind.plural.clone(),
        };
        match self
            .deny
            .iter()
            .find(|d| (d.verb == "*" || d.verb == verb) && d.resource == resource)
        {
            Some(d) => Err(ApiError::webhook_denied(WEBHOOK, &d.message)),
            None => Ok(()),
        }
    }
}

/// Pod Security admission of a pod create: the namespace's `pod-security.kubernetes.io/enforce`
/// level (and version) judges the pod; a violation is upstream's 403.
pub fn pod_security(namespace_labels: &Value, pod: &Value) -> Result<(), ApiError> {
    let labels: std::collections::BTreeMap<String, String> =
        serde_json::from_value(namespace_labels.clone()).unwrap_or_default();
    let Some(policy) = crate::plan::podsecurity::Policy::enforced_by_namespace_labels(&labels)
    else {
        return Ok(());
    };
    let Ok(typed) = serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(pod.clone()) else {
        return Ok(());
    };
    let spec = typed.spec.unwrap_or_default();
    let violations = crate::plan::podsecurity::check(&policy, &typed.metadata, &spec);
    if violations.is_empty() {
        return Ok(());
    }
    let name = typed.metadata.name.unwrap_or_default();
    Err(ApiError::admission_forbidden(
        "pods",
        "",
        &name,
        crate::plan::podsecurity::forbidden_message(&name, &policy, &violations),
    ))
}

/// The API server's defaulting of a pod (`pkg/apis/core/v1/defaults.go`): the pod spec's
/// defaults, then the pod-only ones (a hostNetwork container port's `hostPort`).
pub fn default_pod(pod: &mut Value) {
    let Ok(mut spec) =
        serde_json::from_value::<k8s_openapi::api::core::v1::PodSpec>(pod["spec"].clone())
    else {
        return;
    };
    crate::manifest::default_pod(&mut spec);
    if let Ok(v) = serde_json::to_value(&spec) {
        pod["spec"] = v;
    }
}

/// The mutating TaintNodesAtCreation plugin (`plugin/pkg/admission/nodetaint`, `Admit`, on
/// with the TaintNodesByCondition feature): a Node created carries
/// `node.kubernetes.io/not-ready:NoSchedule` (unless a taint of that key and effect is there
/// already), with no `timeAdded`, so that nothing is scheduled there before the node lifecycle
/// controller has seen its Ready condition; the controller's `doNoScheduleTaintingPass` takes
/// the taint off once the node is Ready. Creates only.
pub fn taint_new_node_not_ready(node: &mut Value) {
    let not_ready = crate::lifecycle::NOT_READY;
    let mut taints = node["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if taints
        .iter()
        .any(|t| t["key"] == not_ready && t["effect"] == "NoSchedule")
    {
        return;
    }
    taints.push(json!({"key": not_ready, "effect": "NoSchedule"}));
    node["spec"]["taints"] = Value::Array(taints);
}

/// The tolerations DefaultTolerationSeconds adds to a pod that has none for the not-ready
/// and unreachable NoExecute taints: 300 seconds each.
pub fn default_toleration_seconds(pod: &mut Value) {
    let tolerations = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tolerates = |key: &str| {
        tolerations.iter().any(|t| {
            let effect = t["effect"].as_str().unwrap_or_default();
            let k = t["key"].as_str().unwrap_or_default();
            let exists = t["operator"] == "Exists";
            (effect.is_empty() || effect == "NoExecute") && (k == key || (k.is_empty() && exists))
        })
    };
    let mut added = Vec::new();
    for key in [crate::lifecycle::NOT_READY, crate::lifecycle::UNREACHABLE] {
        if !tolerates(key) {
            added.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 300}),
            );
        }
    }
    if added.is_empty() {
        return;
    }
    let mut all = tolerations;
    all.extend(added);
    pod["spec"]["tolerations"] = Value::Array(all);
}

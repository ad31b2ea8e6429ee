//! The API's error answers: `Status` objects with the exact `reason` and `code` clients match
//! on (kube-rs tests `reason`; kube-lease-manager tests `reason` and `code`).

use serde_json::{Value, json};

/// An API error, answered as a `Status` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The machine-readable reason (`NotFound`, `AlreadyExists`, `Conflict`, …).
    pub reason: &'static str,
    /// The human message.
    pub message: String,
    /// `details`, when the error is about one object.
    pub details: Option<Value>,
    /// Seconds a client should wait before retrying (429 answers).
    pub retry_after: Option<u64>,
    /// `metadata.continue`: where a list whose token expired may go on, inconsistently.
    pub continue_token: Option<String>,
}

/// `details` naming an object: the resource plural as `kind`, as the API server does.
fn details(resource: &str, group: &str, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": resource});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

/// `pods` or `manageddaemonsets.daemonsync.io`: how messages name a resource.
pub fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
            continue_token: None,
        }
    }

    /// 404 for an object.
    pub fn not_found(resource: &str, group: &str, name: &str) -> Self {
        ApiError {
            details: Some(details(resource, group, name)),
            ..Self::new(
                404,
                "NotFound",
                format!("{} \"{name}\" not found", qualified(resource, group)),
            )
        }
    }

    /// 404 for a path the server does not serve.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409 for a create of an existing name.
    pub fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        ApiError {
            details: Some(details(resource, group, name)),
            ..Self::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", qualified(resource, group)),
            )
        }
    }

    /// 409 for a stale write or a failed precondition.
    pub fn conflict(resource: &str, group: &str, name: &str, why: &str) -> Self {
        ApiError {
            details: Some(details(resource, group, name)),
            ..Self::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": {why}",
                    qualified(resource, group)
                ),
            )
        }
    }

    /// 409 for a server-side apply that would take fields another manager owns.
    pub fn apply_conflict(
        resource: &str,
        group: &str,
        name: &str,
        conflicts: &[(String, String)],
    ) -> Self {
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|(manager, field)| {
                json!({"type": "FieldManagerConflict",
                       "message": format!("conflict with \"{manager}\""),
                       "field": field})
            })
            .collect();
        let listed: Vec<String> = conflicts
            .iter()
            .map(|(manager, field)| format!("conflict with \"{manager}\": {field}"))
            .collect();
        let n = conflicts.len();
        let mut d = details(resource, group, name);
        d["causes"] = Value::Array(causes);
        ApiError {
            details: Some(d),
            ..Self::new(
                409,
                "Conflict",
                format!(
                    "Apply failed with {n} conflict{}: {}",
                    if n == 1 { "" } else { "s" },
                    listed.join(", ")
                ),
            )
        }
    }

    /// 422 with one cause per invalid field.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: &[(String, String)]) -> Self {
        let mut d = json!({"name": name, "kind": kind});
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        d["causes"] = causes
            .iter()
            .map(
                |(field, msg)| json!({"type": "FieldValueInvalid", "message": msg, "field": field}),
            )
            .collect();
        let listed: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        ApiError {
            details: Some(d),
            ..Self::new(
                422,
                "Invalid",
                format!(
                    "{kind}{} \"{name}\" is invalid: {}",
                    if group.is_empty() {
                        String::new()
                    } else {
                        format!(".{group}")
                    },
                    listed.join(", ")
                ),
            )
        }
    }

    /// 422 for a JSON patch whose operations cannot be applied (a `test` that does not hold,
    /// a missing path): the API server answers with its generic 422, which names neither the
    /// object nor the operation.
    pub fn unprocessable() -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            )
        }
    }

    /// 403, worded as the API server's RBAC refusal (for `--faults forbid=`): the anonymous
    /// user, as the served kubeconfig has no credentials.
    pub fn forbidden(
        verb: &str,
        group: &str,
        resource: &str,
        subresource: Option<&str>,
        namespace: Option<&str>,
    ) -> Self {
        let full = match subresource {
            Some(sub) => format!("{resource}/{sub}"),
            None => resource.to_string(),
        };
        let scope = match namespace {
            Some(ns) => format!(" in the namespace \"{ns}\""),
            None => " at the cluster scope".to_string(),
        };
        ApiError {
            details: Some(json!({"kind": resource, "group": group})),
            ..Self::new(
                403,
                "Forbidden",
                format!(
                    "{} is forbidden: User \"system:anonymous\" cannot {verb} resource \"{full}\" in API group \"{group}\"{scope}",
                    qualified(resource, group)
                ),
            )
        }
    }

    /// 403 from a validating admission webhook that denied the request.
    pub fn webhook_denied(webhook: &str, message: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("admission webhook \"{webhook}\" denied the request: {message}"),
        )
    }

    /// 403 from an admission plugin (Pod Security): `message` is the whole sentence.
    pub fn admission_forbidden(resource: &str, group: &str, name: &str, message: String) -> Self {
        ApiError {
            details: Some(details(resource, group, name)),
            ..Self::new(403, "Forbidden", message)
        }
    }

    /// 429 from the eviction subresource: the pod's disruption budget allows no disruption.
    pub fn disruption_budget(budget: &str, desired: i64, healthy: i64) -> Self {
        ApiError {
            details: Some(json!({"causes": [{"reason": "DisruptionBudget",
                "message": format!("The disruption budget {budget} needs {desired} healthy pods and has {healthy} currently")}]})),
            ..Self::new(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            )
        }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 410 (too old a resourceVersion: inside a watch stream, or a list's continue token).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 405.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 415.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {content_type:?})"
            ),
        )
    }

    /// 500 (also what `--faults` injects).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 429 with `Retry-After` (injected by `--faults`).
    pub fn too_many_requests(retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            details: Some(json!({"retryAfterSeconds": retry_after})),
            ..Self::new(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            )
        }
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message, "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        if let Some(c) = &self.continue_token {
            v["metadata"]["continue"] = json!(c);
        }
        v
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.reason, self.code, self.message)
    }
}

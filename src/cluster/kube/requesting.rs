//! A pod as the watch of every pod's requests reads it ([`RequestingPod`]): what the scheduler
//! counts of it, and the metadata a watch keeps. That watch sees every pod of the cluster,
//! daemon pods or not, on every change; the rest of each pod (its status beyond the phase,
//! its managed fields, its containers' images, probes and environment) is skipped while
//! decoding instead of being built and dropped.

use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A `v1` Pod, as much of it as [`crate::model::resources::pod_requests`] and a watch read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestingPod {
    /// `metadata`: name, namespace, uid and resourceVersion only.
    pub metadata: ObjectMeta,
    /// `spec`: the node, and each container's resources and restart policy, the overhead.
    pub spec: Option<PodSpec>,
    /// `status.phase`.
    pub phase: Option<String>,
}

impl k8s_openapi::Resource for RequestingPod {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for RequestingPod {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    node_name: Option<String>,
    #[serde(default)]
    containers: Vec<Requests>,
    init_containers: Option<Vec<Requests>>,
    overhead: Option<BTreeMap<String, Quantity>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Requests {
    resources: Option<ResourceRequirements>,
    restart_policy: Option<String>,
}

impl Requests {
    fn container(self) -> Container {
        Container {
            resources: self.resources,
            restart_policy: self.restart_policy,
            ..Container::default()
        }
    }
}

#[derive(Deserialize)]
struct Status {
    phase: Option<String>,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: Meta,
    spec: Option<Spec>,
    status: Option<Status>,
}

impl<'de> Deserialize<'de> for RequestingPod {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        let metadata = ObjectMeta {
            name: wire.metadata.name,
            namespace: wire.metadata.namespace,
            uid: wire.metadata.uid,
            resource_version: wire.metadata.resource_version,
            ..ObjectMeta::default()
        };
        let spec = wire.spec.map(|s| PodSpec {
            node_name: s.node_name,
            containers: s.containers.into_iter().map(Requests::container).collect(),
            init_containers: s
                .init_containers
                .map(|c| c.into_iter().map(Requests::container).collect()),
            overhead: s.overhead,
            ..PodSpec::default()
        });
        Ok(RequestingPod {
            metadata,
            spec,
            phase: wire.status.and_then(|s| s.phase),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::RequestingPod;
    use crate::model::resources::pod_requests;

    /// A pod as a watch sends it, with what the scheduler does not count.
    fn wire() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "agent-x1", "namespace": "kube-system", "uid": "u-1",
                "resourceVersion": "42", "labels": {"app": "agent"},
                "managedFields": [{"manager": "kubelet", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}}]
            },
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {"name": "agent", "image": "agent:1", "env": [{"name": "A", "value": "b"}],
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                   "limits": {"cpu": "1", "ephemeral-storage": "1Gi"}}},
                    {"name": "helper", "image": "helper:1"}
                ],
                "initContainers": [
                    {"name": "setup", "image": "setup:1",
                     "resources": {"requests": {"cpu": "500m"}}},
                    {"name": "proxy", "image": "proxy:1", "restartPolicy": "Always",
                     "resources": {"requests": {"cpu": "50m"}}}
                ],
                "overhead": {"cpu": "10m"}
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    #[test]
    fn a_pod_read_for_its_requests_counts_what_the_full_pod_counts() {
        let full: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(wire()).expect("a full pod");
        let thin: RequestingPod = serde_json::from_value(wire()).expect("a requesting pod");
        let (full_spec, thin_spec) = (full.spec.expect("spec"), thin.spec.expect("spec"));
        assert_eq!(pod_requests(&thin_spec), pod_requests(&full_spec));
        assert_eq!(thin_spec.node_name.as_deref(), Some("node-1"));
        assert_eq!(thin.phase.as_deref(), Some("Running"));
        let meta = &thin.metadata;
        assert_eq!(
            (
                meta.name.as_deref(),
                meta.namespace.as_deref(),
                meta.uid.as_deref(),
                meta.resource_version.as_deref()
            ),
            (
                Some("agent-x1"),
                Some("kube-system"),
                Some("u-1"),
                Some("42")
            )
        );
        assert!(meta.managed_fields.is_none() && meta.labels.is_none());
    }

    #[test]
    fn a_pod_without_spec_or_status_reads_as_none() {
        let thin: RequestingPod =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}}))
                .expect("a requesting pod");
        assert_eq!((thin.spec, thin.phase), (None, None));
        assert_eq!(thin.metadata.name.as_deref(), Some("p"));
    }
}

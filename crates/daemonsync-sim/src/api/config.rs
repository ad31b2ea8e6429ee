//! ConfigMaps and Secrets: what the API server checks of their updates (`immutable`), what
//! the kubelets know of them ([`crate::kubelet_config`]), and the immutable copies daemonsync
//! writes for a DaemonSet's revision (`manifest::config`).

use super::error::ApiError;
use super::kinds::Kind;
use super::world::{World, WriteParams};
use crate::cluster::ObservedCopy;
use crate::manifest::config::{ConfigCopy, ConfigKind, ConfigObject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::Value;
use std::sync::Arc;

/// Where ConfigMaps are stored.
pub const CONFIGMAPS: &str = "/configmaps";
/// Where Secrets are stored.
pub const SECRETS: &str = "/secrets";

/// The kind of a storage, if it holds ConfigMaps or Secrets.
pub fn kind_of(storage: &str) -> Option<ConfigKind> {
    match storage {
        CONFIGMAPS => Some(ConfigKind::ConfigMap),
        SECRETS => Some(ConfigKind::Secret),
        _ => None,
    }
}

fn storage_of(kind: ConfigKind) -> &'static str {
    match kind {
        ConfigKind::ConfigMap => CONFIGMAPS,
        ConfigKind::Secret => SECRETS,
    }
}

/// `ValidateConfigMapUpdate` and `ValidateSecretUpdate`: an `immutable` object keeps its
/// content and stays immutable; a Secret keeps its type.
pub fn check_update(kind: ConfigKind, current: &Value, next: &Value) -> Vec<(String, String)> {
    let mut causes = Vec::new();
    let immutable = "Forbidden: field is immutable when `immutable` is set";
    if kind == ConfigKind::Secret && current["type"] != next["type"] {
        let t = |v: &Value| v.as_str().unwrap_or("Opaque").to_string();
        if t(&current["type"]) != t(&next["type"]) {
            causes.push((
                "type".to_string(),
                format!("Invalid value: {:?}: field is immutable", t(&next["type"])),
            ));
        }
    }
    if current["immutable"] == Value::Bool(true) {
        if next["immutable"] != Value::Bool(true) {
            causes.push(("immutable".to_string(), immutable.to_string()));
        }
        let fields: &[&str] = match kind {
            ConfigKind::ConfigMap => &["data", "binaryData"],
            ConfigKind::Secret => &["data"],
        };
        for field in fields {
            if current[*field] != next[*field] {
                causes.push((field.to_string(), immutable.to_string()));
            }
        }
    }
    causes
}

impl World {
    /// Shows the kubelets the ConfigMaps and Secrets as they are now, when they changed:
    /// pods waiting for one go on.
    pub(crate) fn sync_config_view(&mut self) {
        let seen = self
            .store
            .last_change(CONFIGMAPS)
            .max(self.store.last_change(SECRETS));
        if seen == self.config_seen {
            return;
        }
        self.config_seen = seen;
        let mut view = crate::kubelet_config::ConfigView::new();
        for kind in [ConfigKind::ConfigMap, ConfigKind::Secret] {
            for e in self.store.list(storage_of(kind), None) {
                let o = &e.object();
                let keys = ["data", "binaryData"]
                    .iter()
                    .filter_map(|f| o[*f].as_object())
                    .flat_map(|m| m.keys().cloned())
                    .collect();
                let s = |f: &str| o["metadata"][f].as_str().unwrap_or_default().to_string();
                view.insert((kind, s("namespace"), s("name")), keys);
            }
        }
        self.nodes.set_config(view);
    }

    fn config_kind(&self, kind: ConfigKind) -> Arc<Kind> {
        self.kind("", "v1", kind.plural())
    }

    /// Creates daemonsync's immutable copy `copy`, owned by `owner`. One of the same name
    /// and content that exists already is success; one of other content is a conflict.
    pub fn create_config_copy(
        &mut self,
        copy: &ConfigCopy,
        owner: OwnerReference,
        params: &WriteParams,
    ) -> Result<(), ApiError> {
        let kind = self.config_kind(copy.kind);
        match self.create(&kind, &copy.namespace, copy.body(owner), params, None) {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => {
                let existing = self.get(&kind, &copy.namespace, &copy.name)?;
                if copy.same_content(&existing) {
                    Ok(())
                } else {
                    Err(ApiError::conflict(
                        &kind.plural,
                        &kind.group,
                        &copy.name,
                        "it exists with other content: it is not daemonsync's copy of this \
                         revision's config; delete or rename it",
                    ))
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Creates a ConfigMap or Secret as the source has it (a `builtin:` DaemonSet's config,
    /// applied with it); an existing one is left as it is.
    pub fn create_config_object(
        &mut self,
        object: &ConfigObject,
        params: &WriteParams,
    ) -> Result<(), ApiError> {
        let kind = self.config_kind(object.kind);
        match self.create(&kind, &object.namespace, object.body(), params, None) {
            Err(e) if e.code != 409 => Err(e),
            _ => Ok(()),
        }
    }

    /// daemonsync's copies in the store, by kind, namespace and name (metadata only).
    pub fn config_copies(&self) -> Vec<ObservedCopy> {
        [ConfigKind::ConfigMap, ConfigKind::Secret]
            .into_iter()
            .flat_map(|kind| {
                self.store
                    .list(storage_of(kind), None)
                    .filter_map(move |e| {
                        let meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta =
                            serde_json::from_value(e.object()["metadata"].clone()).ok()?;
                        ObservedCopy::from_meta(kind, &meta)
                    })
            })
            .collect()
    }
}

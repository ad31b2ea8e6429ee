//! ConfigMaps and Secrets: the immutable copies daemonsync writes for a DaemonSet's revision
//! (`manifest::config`).

use super::error::ApiError;
use super::kinds::Kind;
use super::world::{World, WriteParams};
use crate::cluster::ObservedCopy;
use crate::manifest::config::{ConfigCopy, ConfigKind, ConfigObject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::sync::Arc;

/// Where ConfigMaps are stored.
pub const CONFIGMAPS: &str = "/configmaps";
/// Where Secrets are stored.
pub const SECRETS: &str = "/secrets";

fn storage_of(kind: ConfigKind) -> &'static str {
    match kind {
        ConfigKind::ConfigMap => CONFIGMAPS,
        ConfigKind::Secret => SECRETS,
    }
}

impl World {
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
                            serde_json::from_value(e.object["metadata"].clone()).ok()?;
                        ObservedCopy::from_meta(kind, &meta)
                    })
            })
            .collect()
    }
}

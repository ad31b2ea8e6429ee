//! Volumes: `ValidateVolumes`, `validateVolumeSource` and the validator of every volume type,
//! projected sources, key-to-path items, the path helpers (`validateLocalDescendingPath`,
//! `validatePathNoBacksteps`, `ValidateLocalNonReservedPath`), the ephemeral volume claim
//! template (`ValidatePersistentVolumeClaimTemplate`, `ValidatePersistentVolumeClaimSpec`),
//! `ValidateVolumeMounts` (mount propagation, recursive read-only) and `ValidateVolumeDevices`.
//!
//! Upstream's path spellings are kept, slips included: a GCE disk is checked under
//! `persistentDisk`, CephFS under `cephfs`, a second downward API source is refused at
//! `downwarAPI`, downward API files are reported without their index.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, DownwardAPIVolumeFile, KeyToPath, PersistentVolumeClaimSpec,
    PersistentVolumeClaimTemplate, ProjectedVolumeSource, Volume, VolumeMount,
};

use super::env::{
    VOLUME_FIELD_PATHS, validate_object_field_selector, validate_resource_field_selector,
};
use super::names::{dns1123_label, dns1123_subdomain, inclusive_range_error};
use super::paths::{
    validate_local_descending_path, validate_local_non_reserved_path, validate_path_no_backsteps,
};
use super::{Errs, FieldPath, invalid_each, json};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const ONE_VOLUME_TYPE: &str = "may not specify more than 1 volume type";

/// The valid volumes of a pod, by name (`map[string]core.VolumeSource`).
pub(super) type VolumeSet<'a> = BTreeMap<&'a str, &'a Volume>;

/// `ValidateVolumes`: each volume's source and name; returns the valid ones (an invalid volume
/// cannot be mounted).
pub(super) fn validate_volumes<'a>(
    volumes: &'a [Volume],
    path: &FieldPath,
    errs: &mut Errs,
) -> VolumeSet<'a> {
    let mut valid = VolumeSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let p = path.index(i);
        let name_path = p.child("name");
        let mut el = Vec::new();
        validate_volume_source(v, &p, &mut el);
        if v.name.is_empty() {
            el.push(FieldError::required(&name_path, ""));
        } else {
            invalid_each(&mut el, &name_path, &v.name, dns1123_label(&v.name));
        }
        if valid.contains_key(v.name.as_str()) {
            el.push(FieldError::duplicate(&name_path, quote(&v.name)));
        }
        if el.is_empty() {
            valid.insert(v.name.as_str(), v);
        } else {
            errs.extend(el);
        }
    }
    valid
}

/// `validateVolumeSource`: exactly one source, checked by its own validator. The order of the
/// sources is upstream's, since it decides which one a second source is reported at.
fn validate_volume_source(v: &Volume, p: &FieldPath, errs: &mut Errs) {
    let mut count = 0;
    if let Some(s) = v.empty_dir.as_ref() {
        // An emptyDir is the first source upstream looks at.
        count += 1;
        let lp = p.child("emptyDir").child("sizeLimit");
        if let Some(limit) = s.size_limit.as_ref()
            && super::resources::parse_quantity(limit, &lp, errs).is_some_and(|q| q.is_negative())
        {
            errs.push(FieldError::forbidden(
                lp,
                "SizeLimit field must be a valid resource quantity",
            ));
        }
    }
    let mut first = |set: bool, name: &str, errs: &mut Errs| -> bool {
        if !set {
            return false;
        }
        if count > 0 {
            errs.push(FieldError::forbidden(p.child(name), ONE_VOLUME_TYPE));
            false
        } else {
            count += 1;
            true
        }
    };
    if first(v.host_path.is_some(), "hostPath", errs)
        && let Some(s) = v.host_path.as_ref()
    {
        let hp = p.child("hostPath");
        if s.path.is_empty() {
            errs.push(FieldError::required(hp.child("path"), ""));
        } else {
            validate_path_no_backsteps(&s.path, &hp.child("path"), errs);
            if let Some(t) = s.type_.as_deref() {
                const TYPES: [&str; 8] = [
                    "",
                    "BlockDevice",
                    "CharDevice",
                    "Directory",
                    "DirectoryOrCreate",
                    "File",
                    "FileOrCreate",
                    "Socket",
                ];
                if !TYPES.contains(&t) {
                    errs.push(FieldError::not_supported(
                        hp.child("type"),
                        quote(t),
                        &TYPES,
                    ));
                }
            }
        }
    }
    if first(v.git_repo.is_some(), "gitRepo", errs)
        && let Some(s) = v.git_repo.as_ref()
    {
        let gp = p.child("gitRepo");
        if s.repository.is_empty() {
            errs.push(FieldError::required(gp.child("repository"), ""));
        }
        validate_local_descending_path(
            s.directory.as_deref().unwrap_or(""),
            &gp.child("directory"),
            errs,
        );
    }
    if first(v.gce_persistent_disk.is_some(), "gcePersistentDisk", errs)
        && let Some(s) = v.gce_persistent_disk.as_ref()
    {
        let gp = p.child("persistentDisk");
        if s.pd_name.is_empty() {
            errs.push(FieldError::required(gp.child("pdName"), ""));
        }
        partition(s.partition.unwrap_or(0), &gp, errs);
    }
    if first(
        v.aws_elastic_block_store.is_some(),
        "awsElasticBlockStore",
        errs,
    ) && let Some(s) = v.aws_elastic_block_store.as_ref()
    {
        let ap = p.child("awsElasticBlockStore");
        if s.volume_id.is_empty() {
            errs.push(FieldError::required(ap.child("volumeID"), ""));
        }
        partition(s.partition.unwrap_or(0), &ap, errs);
    }
    if first(v.secret.is_some(), "secret", errs)
        && let Some(s) = v.secret.as_ref()
    {
        let sp = p.child("secret");
        if s.secret_name.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(sp.child("secretName"), ""));
        }
        file_mode(s.default_mode, &sp.child("defaultMode"), errs);
        key_to_paths(s.items.as_deref(), &sp.child("items"), errs);
    }
    if first(v.nfs.is_some(), "nfs", errs)
        && let Some(s) = v.nfs.as_ref()
    {
        let np = p.child("nfs");
        if s.server.is_empty() {
            errs.push(FieldError::required(np.child("server"), ""));
        }
        if s.path.is_empty() {
            errs.push(FieldError::required(np.child("path"), ""));
        }
        if !s.path.starts_with('/') {
            errs.push(FieldError::invalid(
                np.child("path"),
                quote(&s.path),
                "must be an absolute path",
            ));
        }
    }
    if let Some(s) = v.iscsi.as_ref() {
        if first(true, "iscsi", errs) {
            validate_iscsi(s, &p.child("iscsi"), errs);
        }
        let target = format!("{}:{}", v.name, s.target_portal);
        if s.initiator_name.is_some() && target.len() > 64 {
            errs.push(FieldError::invalid(
                p.child("name"),
                quote(&v.name),
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
            ));
        }
    }
    if first(v.glusterfs.is_some(), "glusterfs", errs)
        && let Some(s) = v.glusterfs.as_ref()
    {
        let gp = p.child("glusterfs");
        if s.endpoints.is_empty() {
            errs.push(FieldError::required(gp.child("endpoints"), ""));
        }
        if s.path.is_empty() {
            errs.push(FieldError::required(gp.child("path"), ""));
        }
    }
    if first(v.flocker.is_some(), "flocker", errs)
        && let Some(s) = v.flocker.as_ref()
    {
        let fp = p.child("flocker");
        let name = s.dataset_name.as_deref().unwrap_or("");
        let uuid = s.dataset_uuid.as_deref().unwrap_or("");
        if name.is_empty() && uuid.is_empty() {
            errs.push(FieldError::required(
                &fp,
                "one of datasetName and datasetUUID is required",
            ));
        }
        if !name.is_empty() && !uuid.is_empty() {
            errs.push(FieldError::invalid(
                &fp,
                quote("resource"),
                "datasetName and datasetUUID can not be specified simultaneously",
            ));
        }
        if name.contains('/') {
            errs.push(FieldError::invalid(
                fp.child("datasetName"),
                quote(name),
                "must not contain '/'",
            ));
        }
    }
    if first(
        v.persistent_volume_claim.is_some(),
        "persistentVolumeClaim",
        errs,
    ) && let Some(s) = v.persistent_volume_claim.as_ref()
        && s.claim_name.is_empty()
    {
        errs.push(FieldError::required(
            p.child("persistentVolumeClaim").child("claimName"),
            "",
        ));
    }
    if first(v.rbd.is_some(), "rbd", errs)
        && let Some(s) = v.rbd.as_ref()
    {
        let rp = p.child("rbd");
        if s.monitors.is_empty() {
            errs.push(FieldError::required(rp.child("monitors"), ""));
        }
        if s.image.is_empty() {
            errs.push(FieldError::required(rp.child("image"), ""));
        }
    }
    if first(v.cinder.is_some(), "cinder", errs)
        && let Some(s) = v.cinder.as_ref()
    {
        let cp = p.child("cinder");
        if s.volume_id.is_empty() {
            errs.push(FieldError::required(cp.child("volumeID"), ""));
        }
        if s.secret_ref.as_ref().is_some_and(|r| r.name.is_empty()) {
            errs.push(FieldError::required(
                cp.child("secretRef").child("name"),
                "",
            ));
        }
    }
    if first(v.cephfs.is_some(), "cephFS", errs)
        && let Some(s) = v.cephfs.as_ref()
        && s.monitors.is_empty()
    {
        errs.push(FieldError::required(
            p.child("cephfs").child("monitors"),
            "",
        ));
    }
    if first(v.quobyte.is_some(), "quobyte", errs)
        && let Some(s) = v.quobyte.as_ref()
    {
        validate_quobyte(s, &p.child("quobyte"), errs);
    }
    if first(v.downward_api.is_some(), "downwarAPI", errs)
        && let Some(s) = v.downward_api.as_ref()
    {
        let dp = p.child("downwardAPI");
        file_mode(s.default_mode, &dp.child("defaultMode"), errs);
        for file in s.items.iter().flatten() {
            validate_downward_api_file(file, &dp, errs);
        }
    }
    if first(v.fc.is_some(), "fc", errs)
        && let Some(s) = v.fc.as_ref()
    {
        let fp = p.child("fc");
        let wwns = s.target_wwns.as_deref().unwrap_or(&[]);
        let wwids = s.wwids.as_deref().unwrap_or(&[]);
        if wwns.is_empty() && wwids.is_empty() {
            errs.push(FieldError::required(
                fp.child("targetWWNs"),
                "must specify either targetWWNs or wwids, but not both",
            ));
        }
        if !wwns.is_empty() && !wwids.is_empty() {
            errs.push(FieldError::invalid(
                fp.child("targetWWNs"),
                json(&wwns),
                "targetWWNs and wwids can not be specified simultaneously",
            ));
        }
        if !wwns.is_empty() {
            match s.lun {
                None => errs.push(FieldError::required(
                    fp.child("lun"),
                    "lun is required if targetWWNs is specified",
                )),
                Some(lun) if !(0..=255).contains(&lun) => errs.push(FieldError::invalid(
                    fp.child("lun"),
                    lun.to_string(),
                    inclusive_range_error(0, 255),
                )),
                Some(_) => {}
            }
        }
    }
    if first(v.flex_volume.is_some(), "flexVolume", errs)
        && let Some(s) = v.flex_volume.as_ref()
    {
        let fp = p.child("flexVolume");
        if s.driver.is_empty() {
            errs.push(FieldError::required(fp.child("driver"), ""));
        }
        for k in s.options.iter().flatten().map(|(k, _)| k) {
            let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
            let normalized = format!(".{}", namespace.to_lowercase());
            if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
                errs.push(FieldError::invalid(
                    fp.child("options").key(k),
                    quote(k),
                    "kubernetes.io and k8s.io namespaces are reserved",
                ));
            }
        }
    }
    if first(v.config_map.is_some(), "configMap", errs)
        && let Some(s) = v.config_map.as_ref()
    {
        let cp = p.child("configMap");
        if s.name.is_empty() {
            errs.push(FieldError::required(cp.child("name"), ""));
        }
        file_mode(s.default_mode, &cp.child("defaultMode"), errs);
        key_to_paths(s.items.as_deref(), &cp.child("items"), errs);
    }
    if first(v.azure_file.is_some(), "azureFile", errs)
        && let Some(s) = v.azure_file.as_ref()
    {
        let ap = p.child("azureFile");
        if s.secret_name.is_empty() {
            errs.push(FieldError::required(ap.child("secretName"), ""));
        }
        if s.share_name.is_empty() {
            errs.push(FieldError::required(ap.child("shareName"), ""));
        }
    }
    if first(v.vsphere_volume.is_some(), "vsphereVolume", errs)
        && let Some(s) = v.vsphere_volume.as_ref()
        && s.volume_path.is_empty()
    {
        errs.push(FieldError::required(
            p.child("vsphereVolume").child("volumePath"),
            "",
        ));
    }
    if first(
        v.photon_persistent_disk.is_some(),
        "photonPersistentDisk",
        errs,
    ) && let Some(s) = v.photon_persistent_disk.as_ref()
        && s.pd_id.is_empty()
    {
        errs.push(FieldError::required(
            p.child("photonPersistentDisk").child("pdID"),
            "",
        ));
    }
    if first(v.portworx_volume.is_some(), "portworxVolume", errs)
        && let Some(s) = v.portworx_volume.as_ref()
        && s.volume_id.is_empty()
    {
        errs.push(FieldError::required(
            p.child("portworxVolume").child("volumeID"),
            "",
        ));
    }
    if first(v.azure_disk.is_some(), "azureDisk", errs)
        && let Some(s) = v.azure_disk.as_ref()
    {
        validate_azure_disk(s, &p.child("azureDisk"), errs);
    }
    if first(v.storageos.is_some(), "storageos", errs)
        && let Some(s) = v.storageos.as_ref()
    {
        let sp = p.child("storageos");
        let name = s.volume_name.as_deref().unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(sp.child("volumeName"), ""));
        } else {
            invalid_each(errs, &sp.child("volumeName"), name, dns1123_label(name));
        }
        if let Some(ns) = s.volume_namespace.as_deref().filter(|n| !n.is_empty()) {
            invalid_each(errs, &sp.child("volumeNamespace"), ns, dns1123_label(ns));
        }
        if s.secret_ref.as_ref().is_some_and(|r| r.name.is_empty()) {
            errs.push(FieldError::required(
                sp.child("secretRef").child("name"),
                "",
            ));
        }
    }
    if first(v.projected.is_some(), "projected", errs)
        && let Some(s) = v.projected.as_ref()
    {
        validate_projected(s, &p.child("projected"), errs);
    }
    if first(v.scale_io.is_some(), "scaleIO", errs)
        && let Some(s) = v.scale_io.as_ref()
    {
        let sp = p.child("scaleIO");
        for (field, value) in [
            ("gateway", s.gateway.as_str()),
            ("system", s.system.as_str()),
            ("volumeName", s.volume_name.as_deref().unwrap_or("")),
        ] {
            if value.is_empty() {
                errs.push(FieldError::required(sp.child(field), ""));
            }
        }
    }
    if first(v.csi.is_some(), "csi", errs)
        && let Some(s) = v.csi.as_ref()
    {
        let cp = p.child("csi");
        validate_csi_driver_name(&s.driver, &cp.child("driver"), errs);
        if let Some(r) = s.node_publish_secret_ref.as_ref() {
            if r.name.is_empty() {
                errs.push(FieldError::required(
                    cp.child("nodePublishSecretRef").child("name"),
                    "",
                ));
            } else {
                invalid_each(errs, &cp.child("name"), &r.name, dns1123_subdomain(&r.name));
            }
        }
    }
    if first(v.ephemeral.is_some(), "ephemeral", errs)
        && let Some(s) = v.ephemeral.as_ref()
    {
        let ep = p.child("ephemeral");
        match s.volume_claim_template.as_ref() {
            None => errs.push(FieldError::required(ep.child("volumeClaimTemplate"), "")),
            Some(t) => validate_claim_template(t, &ep.child("volumeClaimTemplate"), errs),
        }
    }
    if first(v.image.is_some(), "image", errs)
        && let Some(s) = v.image.as_ref()
    {
        // A template's image volume may leave `reference` empty (it is required on Pods).
        super::containers::validate_pull_policy(
            s.pull_policy.as_deref().unwrap_or(""),
            &p.child("image").child("pullPolicy"),
            errs,
        );
    }
    if count == 0 {
        errs.push(FieldError::required(p, "must specify a volume type"));
    }
}

/// GCE and AWS disk partitions: 0 to 255 (upstream's message says 1).
fn partition(n: i32, path: &FieldPath, errs: &mut Errs) {
    if !(0..=255).contains(&n) {
        errs.push(FieldError::invalid(
            path.child("partition"),
            n.to_string(),
            inclusive_range_error(1, 255),
        ));
    }
}

fn file_mode(mode: Option<i32>, path: &FieldPath, errs: &mut Errs) {
    if let Some(m) = mode
        && !(0..=0o777).contains(&m)
    {
        errs.push(FieldError::invalid(path, m.to_string(), FILE_MODE_MSG));
    }
}

fn key_to_paths(items: Option<&[KeyToPath]>, path: &FieldPath, errs: &mut Errs) {
    for (i, kp) in items.into_iter().flatten().enumerate() {
        validate_key_to_path(kp, &path.index(i), errs);
    }
}

/// `validateKeyToPath`.
fn validate_key_to_path(kp: &KeyToPath, path: &FieldPath, errs: &mut Errs) {
    if kp.key.is_empty() {
        errs.push(FieldError::required(path.child("key"), ""));
    }
    if kp.path.is_empty() {
        errs.push(FieldError::required(path.child("path"), ""));
    }
    validate_local_non_reserved_path(&kp.path, &path.child("path"), errs);
    file_mode(kp.mode, &path.child("mode"), errs);
}

/// `validateDownwardAPIVolumeFile` (reported under the source's path, without the item index,
/// as upstream does).
fn validate_downward_api_file(file: &DownwardAPIVolumeFile, path: &FieldPath, errs: &mut Errs) {
    if file.path.is_empty() {
        errs.push(FieldError::required(path.child("path"), ""));
    }
    validate_local_non_reserved_path(&file.path, &path.child("path"), errs);
    if let Some(f) = file.field_ref.as_ref() {
        validate_object_field_selector(f, &VOLUME_FIELD_PATHS, &path.child("fieldRef"), errs);
        if file.resource_field_ref.is_some() {
            errs.push(FieldError::invalid(
                path,
                quote("resource"),
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(r) = file.resource_field_ref.as_ref() {
        validate_resource_field_selector(r, &path.child("resourceFieldRef"), true, errs);
    } else {
        errs.push(FieldError::required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    file_mode(file.mode, &path.child("mode"), errs);
}

/// `validateProjectedVolumeSource` and `validateProjectionSources`. Cluster trust bundle and
/// pod certificate sources need gates that are off in v1.35; the API server drops them.
fn validate_projected(s: &ProjectedVolumeSource, path: &FieldPath, errs: &mut Errs) {
    file_mode(s.default_mode, &path.child("defaultMode"), errs);
    let mut all_paths = BTreeSet::new();
    let mut conflict = |p: &str, value: &str, errs: &mut Errs| {
        if !all_paths.insert(p.to_string()) {
            errs.push(FieldError::invalid(
                path,
                quote(value),
                "conflicting duplicate paths",
            ));
        }
    };
    for (i, source) in s.sources.iter().flatten().enumerate() {
        let sp = path.child("sources").index(i);
        let mut count = 0;
        if let Some(secret) = source.secret.as_ref() {
            count += 1;
            let pp = sp.child("secret");
            let name = secret.name.as_str();
            if name.is_empty() {
                errs.push(FieldError::required(pp.child("name"), ""));
            }
            for (j, kp) in secret.items.iter().flatten().enumerate() {
                validate_key_to_path(kp, &pp.child("items").index(j), errs);
                if !kp.path.is_empty() {
                    conflict(&kp.path, name, errs);
                }
            }
        }
        if let Some(cm) = source.config_map.as_ref() {
            count += 1;
            let pp = sp.child("configMap");
            let name = cm.name.as_str();
            if name.is_empty() {
                errs.push(FieldError::required(pp.child("name"), ""));
            }
            for (j, kp) in cm.items.iter().flatten().enumerate() {
                validate_key_to_path(kp, &pp.child("items").index(j), errs);
                if !kp.path.is_empty() {
                    conflict(&kp.path, name, errs);
                }
            }
        }
        if let Some(d) = source.downward_api.as_ref() {
            count += 1;
            let pp = sp.child("downwardAPI");
            for file in d.items.iter().flatten() {
                validate_downward_api_file(file, &pp, errs);
                if !file.path.is_empty() {
                    conflict(&file.path, &file.path, errs);
                }
            }
        }
        if let Some(t) = source.service_account_token.as_ref() {
            count += 1;
            let pp = sp.child("serviceAccountToken");
            let expiration = t.expiration_seconds.unwrap_or(0);
            if expiration < 10 * 60 {
                errs.push(FieldError::invalid(
                    pp.child("expirationSeconds"),
                    expiration.to_string(),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if expiration > 1 << 32 {
                errs.push(FieldError::invalid(
                    pp.child("expirationSeconds"),
                    expiration.to_string(),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            if t.path.is_empty() {
                errs.push(FieldError::required(path.child("path"), ""));
            } else {
                validate_local_non_reserved_path(&t.path, &path.child("path"), errs);
            }
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                &sp,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
}

fn validate_iscsi(
    s: &k8s_openapi::api::core::v1::ISCSIVolumeSource,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if s.target_portal.is_empty() {
        errs.push(FieldError::required(path.child("targetPortal"), ""));
    }
    if s.iqn.is_empty() {
        errs.push(FieldError::required(path.child("iqn"), ""));
    } else if let Some(msg) = iscsi_name_error(
        &s.iqn,
        "must be valid format starting with iqn, eui, or naa",
    ) {
        errs.push(FieldError::invalid(path.child("iqn"), quote(&s.iqn), msg));
    }
    if !(0..=255).contains(&s.lun) {
        errs.push(FieldError::invalid(
            path.child("lun"),
            s.lun.to_string(),
            inclusive_range_error(0, 255),
        ));
    }
    let chap = s.chap_auth_discovery == Some(true) || s.chap_auth_session == Some(true);
    if chap && s.secret_ref.is_none() {
        errs.push(FieldError::required(path.child("secretRef"), ""));
    }
    if let Some(initiator) = s.initiator_name.as_deref() {
        let p = path.child("initiatorname");
        let known = ["iqn", "eui", "naa"]
            .iter()
            .any(|x| initiator.starts_with(x));
        if !known {
            errs.push(FieldError::invalid(
                &p,
                quote(initiator),
                "must be valid format starting with iqn, eui, or naa",
            ));
        }
        if known && let Some(msg) = iscsi_name_error(initiator, "") {
            errs.push(FieldError::invalid(&p, quote(initiator), msg));
        }
    }
}

/// The error for an iSCSI qualified name: `unknown` when it starts with none of `iqn`, `eui`,
/// `naa`, else "must be valid format" when it does not have that form.
fn iscsi_name_error(name: &str, unknown: &str) -> Option<String> {
    let ok = if name.starts_with("iqn") {
        is_iqn(name)
    } else if name.starts_with("eui") {
        is_hex_name(name, "eui", 16)
    } else if name.starts_with("naa") {
        is_hex_name(name, "naa", 32)
    } else {
        return Some(unknown.to_string());
    };
    (!ok).then(|| "must be valid format".to_string())
}

/// `iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`, anywhere in the name.
fn is_iqn(name: &str) -> bool {
    (0..name.len())
        .filter(|i| name.is_char_boundary(*i))
        .any(|i| iqn_at(&name[i..]))
}

fn iqn_at(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("iqn.") else {
        return false;
    };
    let b = rest.as_bytes();
    if b.len() < 8
        || !b[..4].iter().all(u8::is_ascii_digit)
        || b[4] != b'-'
        || !b[5..7].iter().all(u8::is_ascii_digit)
        || b[7] != b'.'
    {
        return false;
    }
    let Some((authority, tail)) = rest[8..].split_once(':') else {
        return false;
    };
    !authority.is_empty()
        && authority
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
        && !tail.is_empty()
        && !tail
            .chars()
            .any(|c| ",;*&$|".contains(c) || matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{c}'))
}

/// `^eui.[[:alnum:]]{16}$` and `^naa.[[:alnum:]]{32}$`.
fn is_hex_name(name: &str, prefix: &str, n: usize) -> bool {
    let Some(rest) = name.strip_prefix(prefix) else {
        return false;
    };
    let mut chars = rest.chars();
    match chars.next() {
        Some('\n') | None => false,
        Some(_) => {
            let tail = chars.as_str();
            tail.len() == n && tail.bytes().all(|c| c.is_ascii_alphanumeric())
        }
    }
}

/// `validateQuobyteVolumeSource`.
fn validate_quobyte(
    s: &k8s_openapi::api::core::v1::QuobyteVolumeSource,
    path: &FieldPath,
    errs: &mut Errs,
) {
    const HOST_PORT: &str = "must be a host:port pair or multiple pairs separated by commas";
    if s.registry.is_empty() {
        errs.push(FieldError::required(path.child("registry"), HOST_PORT));
    } else if s.tenant.as_deref().unwrap_or("").len() >= 65 {
        errs.push(FieldError::required(
            path.child("tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in s.registry.split(',') {
            if !is_host_port(pair) {
                errs.push(FieldError::invalid(
                    path.child("registry"),
                    quote(&s.registry),
                    HOST_PORT,
                ));
            }
        }
    }
    if s.volume.is_empty() {
        errs.push(FieldError::required(path.child("volume"), ""));
    }
}

/// Whether Go's `net.SplitHostPort` accepts `s`.
fn is_host_port(s: &str) -> bool {
    if let Some(rest) = s.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, after)) => {
                !host.contains('[')
                    && after.starts_with(':')
                    && !after[1..].contains([':', '[', ']'])
            }
            None => false,
        };
    }
    match s.rsplit_once(':') {
        Some((host, port)) => !host.contains([':', '[', ']']) && !port.contains(['[', ']']),
        None => false,
    }
}

/// `validateAzureDisk`.
fn validate_azure_disk(
    s: &k8s_openapi::api::core::v1::AzureDiskVolumeSource,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if s.disk_name.is_empty() {
        errs.push(FieldError::required(path.child("diskName"), ""));
    }
    if s.disk_uri.is_empty() {
        errs.push(FieldError::required(path.child("diskURI"), ""));
    }
    if let Some(mode) = s.caching_mode.as_deref()
        && !matches!(mode, "None" | "ReadOnly" | "ReadWrite")
    {
        errs.push(FieldError::not_supported(
            path.child("cachingMode"),
            quote(mode),
            &["None", "ReadOnly", "ReadWrite"],
        ));
    }
    if let Some(kind) = s.kind.as_deref() {
        if !matches!(kind, "Shared" | "Dedicated" | "Managed") {
            errs.push(FieldError::not_supported(
                path.child("kind"),
                quote(kind),
                &["Dedicated", "Managed", "Shared"],
            ));
        }
        if kind == "Managed" && !s.disk_uri.starts_with("/subscriptions/") {
            errs.push(FieldError::not_supported(
                path.child("diskURI"),
                quote(&s.disk_uri),
                &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
            ));
        }
        if kind != "Managed" && !s.disk_uri.starts_with("https://") {
            errs.push(FieldError::not_supported(
                path.child("diskURI"),
                quote(&s.disk_uri),
                &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
            ));
        }
    }
}

/// `ValidateCSIDriverName`.
fn validate_csi_driver_name(driver: &str, path: &FieldPath, errs: &mut Errs) {
    if driver.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    if driver.len() > 63 {
        errs.push(FieldError::too_long(path, 63));
    }
    invalid_each(
        errs,
        path,
        driver,
        dns1123_subdomain(&driver.to_lowercase()),
    );
}

/// `ValidatePersistentVolumeClaimTemplate`: only labels and annotations in its metadata, and a
/// valid claim spec.
fn validate_claim_template(t: &PersistentVolumeClaimTemplate, path: &FieldPath, errs: &mut Errs) {
    let mp = path.child("metadata");
    if let Some(meta) = t.metadata.as_ref() {
        super::meta::validate_annotations(
            meta.annotations.as_ref(),
            &mp.child("annotations"),
            errs,
        );
        super::meta::validate_labels(meta.labels.as_ref(), &mp.child("labels"), errs);
        const WHY: &str = "cannot be set";
        for (field, set) in [
            ("name", meta.name.is_some()),
            ("generateName", meta.generate_name.is_some()),
            ("namespace", meta.namespace.is_some()),
            ("selfLink", meta.self_link.is_some()),
            ("uID", meta.uid.is_some()),
            ("resourceVersion", meta.resource_version.is_some()),
            ("generation", meta.generation.is_some()),
            ("creationTimestamp", meta.creation_timestamp.is_some()),
            ("deletionTimestamp", meta.deletion_timestamp.is_some()),
            (
                "deletionGracePeriodSeconds",
                meta.deletion_grace_period_seconds.is_some(),
            ),
            ("ownerReferences", meta.owner_references.is_some()),
            ("finalizers", meta.finalizers.is_some()),
            ("managedFields", meta.managed_fields.is_some()),
        ] {
            if set {
                errs.push(FieldError::forbidden(mp.child(field), WHY));
            }
        }
    }
    validate_claim_spec(&t.spec, &path.child("spec"), errs);
}

/// `ValidatePersistentVolumeClaimSpec` (`VolumeAttributesClass` is GA).
fn validate_claim_spec(spec: &PersistentVolumeClaimSpec, path: &FieldPath, errs: &mut Errs) {
    let modes = spec.access_modes.as_deref().unwrap_or(&[]);
    if modes.is_empty() {
        errs.push(FieldError::required(
            path.child("accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if let Some(sel) = spec.selector.as_ref() {
        super::meta::validate_label_selector(sel, &path.child("selector"), errs);
    }
    const MODES: [&str; 4] = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    let (mut rwop, mut other) = (false, false);
    for m in modes {
        if !MODES.contains(&m.as_str()) {
            errs.push(FieldError::not_supported(
                path.child("accessModes"),
                quote(m),
                &MODES,
            ));
        } else if m == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errs.push(FieldError::forbidden(
            path.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    let storage_path = path.child("resources").key("storage");
    match spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
    {
        None => errs.push(FieldError::required(&storage_path, "")),
        Some(raw) => {
            if let Some(q) = super::resources::parse_quantity(raw, &storage_path, errs) {
                if q.is_negative() || q.is_zero() {
                    errs.push(FieldError::invalid(
                        &storage_path,
                        quote(&q.to_string()),
                        super::NOT_POSITIVE_MSG,
                    ));
                } else {
                    super::resources::validate_resource_quantity_value(
                        "storage",
                        &q,
                        &storage_path,
                        errs,
                    );
                }
            }
        }
    }
    for (field, class) in [
        ("storageClassName", spec.storage_class_name.as_deref()),
        (
            "volumeAttributesClassName",
            spec.volume_attributes_class_name.as_deref(),
        ),
    ] {
        if let Some(c) = class.filter(|c| !c.is_empty()) {
            invalid_each(errs, &path.child(field), c, dns1123_subdomain(c));
        }
    }
    if let Some(m) = spec.volume_mode.as_deref()
        && !matches!(m, "Block" | "Filesystem")
    {
        errs.push(FieldError::not_supported(
            path.child("volumeMode"),
            quote(m),
            &["Block", "Filesystem"],
        ));
    }
    if let Some(ds) = spec.data_source.as_ref() {
        validate_data_source(
            &ds.name,
            &ds.kind,
            ds.api_group.as_deref(),
            None,
            &path.child("dataSource"),
            errs,
        );
    }
    if let Some(r) = spec.data_source_ref.as_ref() {
        validate_data_source(
            &r.name,
            &r.kind,
            r.api_group.as_deref(),
            r.namespace.as_deref(),
            &path.child("dataSourceRef"),
            errs,
        );
    }
    match (spec.data_source.as_ref(), spec.data_source_ref.as_ref()) {
        (Some(_), Some(r)) if r.namespace.as_deref().is_some_and(|n| !n.is_empty()) => {
            errs.push(FieldError::invalid(
                path,
                "{}",
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
        (Some(d), Some(r))
            if r.namespace.as_deref().unwrap_or("").is_empty()
                && (d.api_group != r.api_group || d.kind != r.kind || d.name != r.name) =>
        {
            errs.push(FieldError::invalid(path, "{}", "must match dataSourceRef"));
        }
        _ => {}
    }
}

/// `validateDataSource` / `validateDataSourceRef`.
fn validate_data_source(
    name: &str,
    kind: &str,
    api_group: Option<&str>,
    namespace: Option<&str>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    if name.is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    }
    if kind.is_empty() {
        errs.push(FieldError::required(path.child("kind"), ""));
    }
    let group = api_group.unwrap_or("");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        errs.push(FieldError::invalid(
            path,
            quote(kind),
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() {
        invalid_each(
            errs,
            &path.child("apiGroup"),
            group,
            dns1123_subdomain(group),
        );
    }
    if let Some(ns) = namespace.filter(|n| !n.is_empty()) {
        invalid_each(errs, &path.child("namespace"), ns, dns1123_label(ns));
    }
}

// ---------------------------------------------------------------------------------------------
// Mounts and devices

/// `ValidateVolumeMounts`.
pub(super) fn validate_volume_mounts(
    c: &Container,
    volumes: &VolumeSet<'_>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let devices: Vec<(&str, &str)> = c
        .volume_devices
        .iter()
        .flatten()
        .map(|d| (d.name.as_str(), d.device_path.as_str()))
        .collect();
    let mut mount_points = BTreeSet::new();
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let p = path.index(i);
        if m.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        }
        if !volumes.contains_key(m.name.as_str()) {
            errs.push(FieldError::not_found(p.child("name"), quote(&m.name)));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(p.child("mountPath"), ""));
        }
        if !mount_points.insert(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(
                p.child("mountPath"),
                quote(&m.mount_path),
                "must be unique",
            ));
        }
        if devices.iter().any(|(name, _)| *name == m.name) {
            errs.push(FieldError::invalid(
                p.child("name"),
                quote(&m.name),
                "must not already exist in volumeDevices",
            ));
        }
        if devices.iter().any(|(_, dp)| *dp == m.mount_path) {
            errs.push(FieldError::invalid(
                p.child("mountPath"),
                quote(&m.mount_path),
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub_path = m.sub_path.as_deref().unwrap_or("");
        if !sub_path.is_empty() {
            validate_local_descending_path(sub_path, &path.child("subPath"), errs);
        }
        if let Some(expr) = m.sub_path_expr.as_deref().filter(|e| !e.is_empty()) {
            if !sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    p.child("subPathExpr"),
                    quote(expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            validate_local_descending_path(expr, &path.child("subPathExpr"), errs);
        }
        if let Some(prop) = m.mount_propagation.as_deref() {
            validate_mount_propagation(prop, c, &path.child("mountPropagation"), errs);
        }
        validate_mount_recursive_read_only(m, &path.child("recursiveReadOnly"), errs);
    }
}

/// `validateMountPropagation`.
fn validate_mount_propagation(prop: &str, c: &Container, path: &FieldPath, errs: &mut Errs) {
    if !matches!(prop, "Bidirectional" | "HostToContainer" | "None") {
        errs.push(FieldError::not_supported(
            path,
            quote(prop),
            &["Bidirectional", "HostToContainer", "None"],
        ));
    }
    let privileged = c
        .security_context
        .as_ref()
        .and_then(|s| s.privileged)
        .unwrap_or(false);
    if prop == "Bidirectional" && !privileged {
        errs.push(FieldError::forbidden(
            path,
            "Bidirectional mount propagation is available only to privileged containers",
        ));
    }
}

/// `validateMountRecursiveReadOnly`.
fn validate_mount_recursive_read_only(m: &VolumeMount, path: &FieldPath, errs: &mut Errs) {
    match m.recursive_read_only.as_deref() {
        None | Some("Disabled") => {}
        Some("Enabled" | "IfPossible") => {
            if m.read_only != Some(true) {
                errs.push(FieldError::forbidden(
                    path,
                    "may only be specified when readOnly is true",
                ));
            }
            if m.mount_propagation.as_deref().is_some_and(|p| p != "None") {
                errs.push(FieldError::forbidden(
                    path,
                    "may only be specified when mountPropagation is None or not specified",
                ));
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            path,
            quote(other),
            &["Disabled", "Enabled", "IfPossible"],
        )),
    }
}

/// `ValidateVolumeDevices`: block devices come from claims (a PVC or an ephemeral volume).
pub(super) fn validate_volume_devices(
    c: &Container,
    volumes: &VolumeSet<'_>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let mounts: Vec<(&str, &str)> = c
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    let mut device_paths = BTreeSet::new();
    let mut device_names = BTreeSet::new();
    for (i, d) in c.volume_devices.iter().flatten().enumerate() {
        let p = path.index(i);
        let found = volumes.get(d.name.as_str());
        if d.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        }
        if device_names.contains(d.name.as_str()) {
            errs.push(FieldError::invalid(
                p.child("name"),
                quote(&d.name),
                "must be unique",
            ));
        }
        match found {
            Some(v) if v.persistent_volume_claim.is_none() && v.ephemeral.is_none() => {
                errs.push(FieldError::invalid(
                    p.child("name"),
                    quote(&d.name),
                    "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
                ));
            }
            Some(_) => {}
            None => errs.push(FieldError::not_found(p.child("name"), quote(&d.name))),
        }
        if d.device_path.is_empty() {
            errs.push(FieldError::required(p.child("devicePath"), ""));
        }
        if device_paths.contains(d.device_path.as_str()) {
            errs.push(FieldError::invalid(
                p.child("devicePath"),
                quote(&d.device_path),
                "must be unique",
            ));
        }
        if !d.device_path.is_empty() && d.device_path.split('/').any(|part| part == "..") {
            errs.push(FieldError::invalid(
                p.child("devicePath"),
                quote(&d.device_path),
                "can not contain backsteps ('..')",
            ));
        } else {
            device_paths.insert(d.device_path.as_str());
        }
        if mounts.iter().any(|(name, _)| *name == d.name) {
            errs.push(FieldError::invalid(
                p.child("name"),
                quote(&d.name),
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.iter().any(|(_, mp)| *mp == d.device_path) {
            errs.push(FieldError::invalid(
                p.child("devicePath"),
                quote(&d.device_path),
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !d.name.is_empty() {
            device_names.insert(d.name.as_str());
        }
    }
}

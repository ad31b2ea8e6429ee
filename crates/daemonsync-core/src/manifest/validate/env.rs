//! Environment: `ValidateEnv`, `validateEnvVarValueFrom`, `validateObjectFieldSelector`,
//! `validateContainerResourceFieldSelector` (with the divisor rules), `ValidateEnvFrom`, the key
//! selectors, `validateFileKeySelector` and `validateFileKeyRefVolumes`.

use k8s_openapi::api::core::v1::{
    EnvFromSource, EnvVar, ObjectFieldSelector, PodSpec, ResourceFieldSelector,
};

use super::meta::validate_label_name;
use super::names::{
    config_map_key, dns1123_label, dns1123_subdomain, env_var_name, relaxed_env_var_name,
};
use super::paths::validate_path_no_backsteps;
use super::{Errs, FieldPath, Gates, invalid_each};
use crate::manifest::FieldError;
use crate::manifest::error::quote;
use crate::model::Quantity;

/// Field paths an environment variable may take from the pod (sorted, as upstream lists them).
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// Field paths a downward API volume file may take from the pod (sorted).
pub(super) const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// Container resources a `resourceFieldRef` may name (sorted); hugepages are matched by prefix.
const RESOURCE_FIELD_PATHS: [&str; 6] = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `ValidateEnv`.
pub(super) fn validate_env(vars: &[EnvVar], path: &FieldPath, gates: &Gates, errs: &mut Errs) {
    for (i, ev) in vars.iter().enumerate() {
        let p = path.index(i);
        if ev.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else {
            validate_env_var_name(&ev.name, &p.child("name"), gates, errs);
        }
        validate_env_var_value_from(ev, &p.child("valueFrom"), errs);
    }
}

/// `validateEnvVarValueFrom`: exactly one source, and no `value` beside it.
fn validate_env_var_value_from(ev: &EnvVar, path: &FieldPath, errs: &mut Errs) {
    let Some(from) = ev.value_from.as_ref() else {
        return;
    };
    let mut sources = 0;
    if let Some(f) = from.field_ref.as_ref() {
        sources += 1;
        validate_object_field_selector(f, &ENV_FIELD_PATHS, &path.child("fieldRef"), errs);
    }
    if let Some(r) = from.resource_field_ref.as_ref() {
        sources += 1;
        validate_resource_field_selector(r, &path.child("resourceFieldRef"), false, errs);
    }
    if let Some(s) = from.config_map_key_ref.as_ref() {
        sources += 1;
        validate_key_selector(&s.name, &s.key, &path.child("configMapKeyRef"), errs);
    }
    if let Some(s) = from.secret_key_ref.as_ref() {
        sources += 1;
        validate_key_selector(&s.name, &s.key, &path.child("secretKeyRef"), errs);
    }
    if let Some(s) = from.file_key_ref.as_ref()
        && super::ALLOW_ENV_FILES
    {
        sources += 1;
        let p = path.child("fileKeyRef");
        if s.key.is_empty() {
            errs.push(FieldError::required(p.child("key"), ""));
        } else {
            invalid_each(errs, &p.child("key"), &s.key, relaxed_env_var_name(&s.key));
        }
        if s.volume_name.is_empty() {
            errs.push(FieldError::required(p.child("volumeName"), ""));
        } else {
            invalid_each(
                errs,
                &p.child("volumeName"),
                &s.volume_name,
                dns1123_label(&s.volume_name),
            );
        }
        if s.path.is_empty() {
            errs.push(FieldError::required(p.child("path"), ""));
        } else {
            validate_path_no_backsteps(&s.path, &p.child("path"), errs);
        }
    }
    if sources == 0 {
        errs.push(FieldError::invalid(
            path,
            "\"\"",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
        ));
    } else if ev.value.as_deref().is_some_and(|v| !v.is_empty()) {
        errs.push(FieldError::invalid(
            path,
            "\"\"",
            "may not be specified when `value` is not empty",
        ));
    } else if sources > 1 {
        errs.push(FieldError::invalid(
            path,
            "\"\"",
            "may not have more than one field specified at a time",
        ));
    }
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['key']` → (`metadata.labels`, `key`).
fn split_subscripted(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, subscript) = s.split_once("['")?;
    (!path.is_empty()).then_some((path, subscript))
}

/// `podshelper.ConvertDownwardAPIFieldLabel` for `v1`: the internal field path, or the error.
fn convert_field_label(label: &str) -> Result<&str, String> {
    if let Some((path, _)) = split_subscripted(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label),
        // Older v1 clients send `spec.host`.
        "spec.host" => Ok("spec.nodeName"),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `validateObjectFieldSelector`.
pub(super) fn validate_object_field_selector(
    fs: &ObjectFieldSelector,
    expressions: &[&str],
    path: &FieldPath,
    errs: &mut Errs,
) {
    let api_version = fs.api_version.as_deref().unwrap_or("");
    if api_version.is_empty() {
        errs.push(FieldError::required(path.child("apiVersion"), ""));
        return;
    }
    if fs.field_path.is_empty() {
        errs.push(FieldError::required(path.child("fieldPath"), ""));
        return;
    }
    let converted = if api_version == "v1" {
        convert_field_label(&fs.field_path)
    } else {
        Err(format!("unsupported pod version: {api_version}"))
    };
    let internal = match converted {
        Ok(p) => p,
        Err(e) => {
            errs.push(FieldError::invalid(
                path.child("fieldPath"),
                quote(&fs.field_path),
                format!("error converting fieldPath: {e}"),
            ));
            return;
        }
    };
    if let Some((p, subscript)) = split_subscripted(internal) {
        match p {
            "metadata.annotations" => {
                let key = subscript.to_lowercase();
                invalid_each(errs, path, &key, super::names::qualified_name(&key));
            }
            "metadata.labels" => validate_label_name(subscript, path, errs),
            _ => errs.push(FieldError::invalid(
                path,
                quote(p),
                "does not support subscript",
            )),
        }
    } else if !expressions.contains(&internal) {
        errs.push(FieldError::not_supported(
            path.child("fieldPath"),
            quote(internal),
            expressions,
        ));
    }
}

/// `validateContainerResourceFieldSelector` (`volume`: a downward API file, which must name its
/// container).
pub(super) fn validate_resource_field_selector(
    fs: &ResourceFieldSelector,
    path: &FieldPath,
    volume: bool,
    errs: &mut Errs,
) {
    let resource = fs.resource.as_str();
    if volume && fs.container_name.as_deref().unwrap_or("").is_empty() {
        errs.push(FieldError::required(path.child("containerName"), ""));
    } else if resource.is_empty() {
        errs.push(FieldError::required(path.child("resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("limits.hugepages-")
        && !resource.starts_with("requests.hugepages-")
    {
        errs.push(FieldError::not_supported(
            path.child("resource"),
            quote(resource),
            &RESOURCE_FIELD_PATHS,
        ));
    }
    validate_divisor(resource, fs.divisor.as_ref(), path, errs);
}

const MEMORY_DIVISORS: [&str; 13] = [
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];
const MEMORY_DIVISORS_TEXT: &str = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";

/// `validateContainerResourceDivisor`: only unit divisors of the resource's family.
fn validate_divisor(
    resource: &str,
    divisor: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    path: &FieldPath,
    errs: &mut Errs,
) {
    let Some(raw) = divisor else {
        return;
    };
    let p = path.child("divisor");
    let q = match Quantity::parse(&raw.0) {
        Ok(q) => q,
        Err(e) => {
            errs.push(FieldError::invalid(&p, quote(&raw.0), e.to_string()));
            return;
        }
    };
    if q.is_zero() {
        return;
    }
    let shown = q.to_string();
    let unsupported = |what: &str| {
        FieldError::invalid(
            &p,
            quote(resource),
            format!("only divisor's values {MEMORY_DIVISORS_TEXT} are supported with the {what}"),
        )
    };
    let unit = MEMORY_DIVISORS.contains(&shown.as_str());
    match resource {
        "limits.cpu" | "requests.cpu" if !matches!(shown.as_str(), "1m" | "1") => {
            errs.push(FieldError::invalid(
                &p,
                quote(resource),
                "only divisor's values 1m and 1 are supported with the cpu resource",
            ));
        }
        "limits.memory" | "requests.memory" if !unit => errs.push(unsupported("memory resource")),
        "limits.ephemeral-storage" | "requests.ephemeral-storage" if !unit => {
            errs.push(unsupported("local ephemeral storage resource"));
        }
        _ => {}
    }
    if (resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-"))
        && !unit
    {
        errs.push(unsupported("hugepages resource"));
    }
}

/// `validateConfigMapKeySelector` / `validateSecretKeySelector`.
fn validate_key_selector(name: &str, key: &str, path: &FieldPath, errs: &mut Errs) {
    invalid_each(errs, &path.child("name"), name, dns1123_subdomain(name));
    if key.is_empty() {
        errs.push(FieldError::required(path.child("key"), ""));
    } else {
        invalid_each(errs, &path.child("key"), key, config_map_key(key));
    }
}

/// An environment variable name (or an `envFrom` prefix): `IsRelaxedEnvVarName` from
/// v1.32, `IsEnvVarName` before.
fn validate_env_var_name(name: &str, path: &FieldPath, gates: &Gates, errs: &mut Errs) {
    if gates.relaxed_env_var_names() {
        invalid_each(errs, path, name, relaxed_env_var_name(name));
        return;
    }
    let note = gates.refused_before("RelaxedEnvironmentVariableValidation", 32);
    for msg in env_var_name(name) {
        errs.push(FieldError::invalid(path, quote(name), msg).with_version_note(&note));
    }
}

/// `ValidateEnvFrom`.
pub(super) fn validate_env_from(
    vars: &[EnvFromSource],
    path: &FieldPath,
    gates: &Gates,
    errs: &mut Errs,
) {
    for (i, ev) in vars.iter().enumerate() {
        let p = path.index(i);
        if let Some(prefix) = ev.prefix.as_deref().filter(|s| !s.is_empty()) {
            validate_env_var_name(prefix, &p.child("prefix"), gates, errs);
        }
        let mut sources = 0;
        if let Some(s) = ev.config_map_ref.as_ref() {
            sources += 1;
            validate_env_source_name(&s.name, &p.child("configMapRef"), errs);
        }
        if let Some(s) = ev.secret_ref.as_ref() {
            sources += 1;
            validate_env_source_name(&s.name, &p.child("secretRef"), errs);
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                path,
                "\"\"",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                path,
                "\"\"",
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// `validateConfigMapEnvSource` / `validateSecretEnvSource`: a name that may be a prefix.
fn validate_env_source_name(name: &str, path: &FieldPath, errs: &mut Errs) {
    if name.is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    } else {
        let masked = if name.len() > 1 && name.ends_with('-') {
            format!("{}a", name.get(..name.len() - 2).unwrap_or(""))
        } else {
            name.to_string()
        };
        invalid_each(errs, &path.child("name"), name, dns1123_subdomain(&masked));
    }
}

/// `validateFileKeyRefVolumes`: a `fileKeyRef` must name an `emptyDir` volume of the pod.
pub(super) fn validate_file_key_ref_volumes(spec: &PodSpec, path: &FieldPath, errs: &mut Errs) {
    if !super::ALLOW_ENV_FILES {
        return;
    }
    let volumes = spec.volumes.as_deref().unwrap_or(&[]);
    super::containers::visit_containers(spec, path, |c, cpath| {
        for (j, ev) in c.env.iter().flatten().enumerate() {
            let Some(f) = ev.value_from.as_ref().and_then(|v| v.file_key_ref.as_ref()) else {
                continue;
            };
            let p = cpath
                .child("env")
                .index(j)
                .child("valueFrom")
                .child("fileKeyRef")
                .child("volumeName");
            match volumes.iter().find(|v| v.name == f.volume_name) {
                None => errs.push(FieldError::not_found(p, quote(&f.volume_name))),
                Some(v) if v.empty_dir.is_none() => errs.push(FieldError::invalid(
                    p,
                    quote(&f.volume_name),
                    "referenced volume must be of type emptyDir",
                )),
                Some(_) => {}
            }
        }
    });
}

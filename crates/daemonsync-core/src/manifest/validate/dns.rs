//! DNS: `validateDNSPolicy` and `validatePodDNSConfig` (from v1.33, `RelaxedDNSSearchValidation`
//! lets search domains contain `_` and be `.`).

use k8s_openapi::api::core::v1::PodDNSConfig;

use super::names::{dns1123_subdomain, dns1123_subdomain_with_underscore, ip_legacy};
use super::{Errs, FieldPath, invalid_each, json};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

const MAX_NAMESERVERS: usize = 3;
const MAX_SEARCH_PATHS: usize = 32;
const MAX_SEARCH_CHARS: usize = 2048;

/// `validateDNSPolicy`.
pub(super) fn validate_dns_policy(policy: &str, path: &FieldPath, errs: &mut Errs) {
    match policy {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => errs.push(FieldError::required(path, "")),
        other => errs.push(FieldError::not_supported(
            path,
            quote(other),
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
}

/// `validatePodDNSConfig`.
pub(super) fn validate_pod_dns_config(
    config: Option<&PodDNSConfig>,
    policy: &str,
    path: &FieldPath,
    gates: &super::Gates,
    errs: &mut Errs,
) {
    if policy == "None" {
        let Some(c) = config else {
            errs.push(FieldError::required(
                path,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ));
            return;
        };
        if c.nameservers.as_ref().is_none_or(Vec::is_empty) {
            errs.push(FieldError::required(
                path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return;
        }
    }
    let Some(c) = config else {
        return;
    };
    let nameservers = c.nameservers.as_deref().unwrap_or(&[]);
    if nameservers.len() > MAX_NAMESERVERS {
        errs.push(FieldError::invalid(
            path.child("nameservers"),
            json(&nameservers),
            format!("must not have more than {MAX_NAMESERVERS} nameservers"),
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        invalid_each(errs, &path.child("nameservers").index(i), ns, ip_legacy(ns));
    }
    let searches = c.searches.as_deref().unwrap_or(&[]);
    if searches.len() > MAX_SEARCH_PATHS {
        errs.push(FieldError::invalid(
            path.child("searches"),
            json(&searches),
            format!("must not have more than {MAX_SEARCH_PATHS} search paths"),
        ));
    }
    if searches.join(" ").len() > MAX_SEARCH_CHARS {
        errs.push(FieldError::invalid(
            path.child("searches"),
            json(&searches),
            format!(
                "must not have more than {MAX_SEARCH_CHARS} characters (including spaces) in the search list"
            ),
        ));
    }
    for (i, search) in searches.iter().enumerate() {
        if !gates.relaxed_dns_search() {
            // Before `RelaxedDNSSearchValidation` (v1.33): a trailing dot, no `_`, no lone `.`.
            let s = search.strip_suffix('.').unwrap_or(search);
            let note = gates.refused_before("RelaxedDNSSearchValidation", 33);
            for msg in dns1123_subdomain(s) {
                errs.push(
                    FieldError::invalid(path.child("searches").index(i), quote(s), msg)
                        .with_version_note(&note),
                );
            }
        } else if search != "." {
            let s = search.strip_suffix('.').unwrap_or(search);
            invalid_each(
                errs,
                &path.child("searches").index(i),
                s,
                dns1123_subdomain_with_underscore(s),
            );
        }
    }
    for (i, option) in c.options.iter().flatten().enumerate() {
        if option.name.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(
                path.child("options").index(i),
                "must not be empty",
            ));
        }
    }
}

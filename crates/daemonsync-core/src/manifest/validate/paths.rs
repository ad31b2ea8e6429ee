//! Upstream's relative-path checks (`validatePathNoBacksteps` and the two built on it), shared
//! by volumes, environment files, seccomp profiles and annotations.

use super::{Errs, FieldPath};
use crate::manifest::FieldError;
use crate::manifest::error::quote;

/// `validatePathNoBacksteps`: no `..` element (reported once).
pub(super) fn validate_path_no_backsteps(target: &str, path: &FieldPath, errs: &mut Errs) {
    if target.split('/').any(|part| part == "..") {
        errs.push(FieldError::invalid(
            path,
            quote(target),
            "must not contain '..'",
        ));
    }
}

/// `validateLocalDescendingPath`: relative, without `..` elements.
pub(super) fn validate_local_descending_path(target: &str, path: &FieldPath, errs: &mut Errs) {
    if target.starts_with('/') {
        errs.push(FieldError::invalid(
            path,
            quote(target),
            "must be a relative path",
        ));
    }
    validate_path_no_backsteps(target, path, errs);
}

/// `ValidateLocalNonReservedPath`: a descending path that does not start with `..`.
pub(super) fn validate_local_non_reserved_path(target: &str, path: &FieldPath, errs: &mut Errs) {
    validate_local_descending_path(target, path, errs);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(FieldError::invalid(
            path,
            quote(target),
            "must not start with '..'",
        ));
    }
}

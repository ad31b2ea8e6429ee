//! Manifests: multi-document YAML / JSON, `kind: List`, defaulting and validation.
//!
//! OWNER: manifest helper.

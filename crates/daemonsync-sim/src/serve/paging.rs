//! Continue tokens of paged lists, as kube-apiserver's etcd storage writes them
//! (`k8s.io/apiserver/pkg/storage/continue.go`): base64 of
//! `{"v":"meta.k8s.io/v1","rv":<resourceVersion of the first page>,"start":"<next key>"}`,
//! opaque to clients. A token names the resourceVersion the whole list is read at; once the
//! changes since have been compacted it has expired (410), and the error carries a token to
//! go on reading at the current resourceVersion, inconsistently, as upstream's does.

use crate::api::error::ApiError;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

const VERSION: &str = "meta.k8s.io/v1";

/// Where the next page of a list starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The resourceVersion the list is read at.
    pub rv: u64,
    /// The (namespace, name) key the next page starts after.
    pub after: (String, String),
}

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: i64,
    start: String,
}

/// The token of the page after `after`, of a list read at `rv`.
pub fn encode(rv: u64, after: &(String, String)) -> String {
    // Upstream's start key is the last key with a NUL appended: the next key after it.
    let start = match after.0.is_empty() {
        true => format!("{}\u{0}", after.1),
        false => format!("{}/{}\u{0}", after.0, after.1),
    };
    let token = Token {
        v: VERSION.to_string(),
        rv: i64::try_from(rv).unwrap_or(i64::MAX),
        start,
    };
    STANDARD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// The page a token names, or upstream's 400 for a token it did not write.
pub fn decode(token: &str) -> Result<Resume, ApiError> {
    let invalid = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = STANDARD
        .decode(token)
        .map_err(|_| invalid("illegal base64 data"))?;
    let token: Token = serde_json::from_slice(&bytes)
        .map_err(|_| invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    if token.v != VERSION {
        return Err(invalid(&format!(
            "server does not recognize this encoded key version {:?}",
            token.v
        )));
    }
    let rv = u64::try_from(token.rv)
        .ok()
        .filter(|rv| *rv > 0)
        .ok_or_else(|| {
            invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        })?;
    let start = token
        .start
        .strip_suffix('\u{0}')
        .filter(|s| !s.is_empty() && !s.starts_with('/') && !s.contains(".."))
        .ok_or_else(|| invalid("continue key is not valid"))?;
    let after = match start.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), start.to_string()),
    };
    Ok(Resume { rv, after })
}

/// Upstream's 410 for a token whose resourceVersion has been compacted, with a token to read
/// the rest at `current` (when there was a token to go on from).
pub fn expired(current: u64, resume: Option<&Resume>) -> ApiError {
    let mut error = ApiError::expired(
        "The provided continue parameter is too old to display a consistent list result. You \
         can start a new list without the continue parameter, or use the continue token in \
         this response to retrieve the remainder of the results. Continuing with the provided \
         token results in an inconsistent list - objects that were created, modified, or \
         deleted between the time the first chunk was returned and now may show up in the list.",
    );
    if let Some(r) = resume {
        error.continue_token = Some(encode(current, &r.after));
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_the_resource_version_and_the_key_after_which_the_next_page_starts() {
        for after in [
            ("kube-system".to_string(), "pod-a".to_string()),
            (String::new(), "node-1".to_string()),
        ] {
            let token = encode(42, &after);
            assert_eq!(decode(&token).unwrap(), Resume { rv: 42, after });
        }
    }

    #[test]
    fn a_token_the_server_did_not_write_is_a_bad_request() {
        for token in [
            "%%%",
            "e30=",
            &STANDARD.encode(r#"{"v":"x","rv":1,"start":"a\u0000"}"#),
        ] {
            let e = decode(token).unwrap_err();
            assert_eq!(e.code, 400, "{token}");
            assert!(
                e.message.starts_with("continue key is not valid"),
                "{}",
                e.message
            );
        }
    }
}

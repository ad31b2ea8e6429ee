//! Continue tokens of paged lists, as kube-apiserver's storage writes and reads them
//! (`k8s.io/apiserver/pkg/storage/continue.go`, `EncodeContinue` / `DecodeContinue`):
//! unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"KEY\u0000"}`, where
//! `rv` is the resourceVersion the whole list is read at and `KEY` the last key returned,
//! relative to the list's prefix (`NAME` in a namespace, `NAMESPACE/NAME` across them).
//! Opaque to clients. Once the changes since `rv` are compacted the token has expired: 410,
//! with a token of `rv` -1 (read the rest as it is now) in the Status, as etcd3's
//! `compactedContinue` answers.

use crate::api::error::ApiError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

const VERSION: &str = "meta.k8s.io/v1";

/// Where the next page of a list starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The resourceVersion the list is read at; `None`: the current one (a token handed out
    /// with an expiry).
    pub rv: Option<u64>,
    /// The (namespace, name) key the next page starts after.
    pub after: (String, String),
}

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: i64,
    start: String,
}

/// The token of the page after `after` (`rv` as [`Resume::rv`]), for a list in `namespace`
/// or across namespaces (`None`).
pub fn encode(rv: Option<u64>, after: &(String, String), namespace: Option<&str>) -> String {
    let key = match namespace {
        Some(_) => after.1.clone(),
        None if after.0.is_empty() => after.1.clone(),
        None => format!("{}/{}", after.0, after.1),
    };
    let token = Token {
        v: VERSION.to_string(),
        rv: rv.map_or(-1, |rv| i64::try_from(rv).unwrap_or(i64::MAX)),
        // The next key after the last one returned.
        start: format!("{key}\u{0}"),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// The page a token names in a list in `namespace` (or across them), or upstream's 400 for
/// a token it would not accept.
pub fn decode(token: &str, namespace: Option<&str>) -> Result<Resume, ApiError> {
    let invalid = |why: &str| {
        let sep = if why.is_empty() { "" } else { ": " };
        // Upstream's `ValidateListOptions` wraps what `DecodeContinue` says.
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid{sep}{why}"
        ))
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|e| invalid(&e.to_string()))?;
    let token: Token = serde_json::from_slice(&bytes).map_err(|e| invalid(&e.to_string()))?;
    if token.v != VERSION {
        return Err(invalid(&format!(
            "server does not recognize this encoded version {}",
            token.v
        )));
    }
    let rv = match token.rv {
        0 => {
            return Err(invalid(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        rv if rv < 0 => None,
        rv => Some(rv.unsigned_abs()),
    };
    if token.start.is_empty() {
        return Err(invalid("encoded start key empty (version meta.k8s.io/v1)"));
    }
    // Upstream (`storage.DecodeContinue`) roots the key (a `/` before it unless it has one),
    // cleans it as a path and refuses a key the cleaning changes (`.`, `..`, `//`, a trailing
    // `/`), naming the key it was given.
    let rooted = token.start.strip_prefix('/').unwrap_or(&token.start);
    if !rooted.is_empty()
        && rooted
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(invalid(&token.start));
    }
    let key = rooted.strip_suffix('\u{0}').unwrap_or(rooted);
    let after = match (namespace, key.split_once('/')) {
        (Some(ns), None) => (ns.to_string(), key.to_string()),
        (None, Some((ns, name))) => (ns.to_string(), name.to_string()),
        (None, None) => (String::new(), key.to_string()),
        (Some(_), Some(_)) => return Err(invalid("")),
    };
    Ok(Resume { rv, after })
}

/// Upstream's 410 for a token whose resourceVersion has been compacted, with a token to read
/// the rest as it is now.
pub fn expired(resume: &Resume, namespace: Option<&str>) -> ApiError {
    let mut error = ApiError::expired(
        "The provided continue parameter is too old to display a consistent list result. You \
         can start a new list without the continue parameter, or use the continue token in \
         this response to retrieve the remainder of the results. Continuing with the provided \
         token results in an inconsistent list - objects that were created, modified, or \
         deleted between the time the first chunk was returned and now may show up in the list.",
    );
    error.continue_token = Some(encode(None, &resume.after, namespace));
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_the_resource_version_and_the_key_after_which_the_next_page_starts() {
        let key = |ns: &str, n: &str| (ns.to_string(), n.to_string());
        for (namespace, after, start) in [
            (None, key("kube-system", "pod-a"), "kube-system/pod-a\u{0}"),
            (
                Some("kube-system"),
                key("kube-system", "pod-a"),
                "pod-a\u{0}",
            ),
            (None, key("", "node-1"), "node-1\u{0}"),
        ] {
            let token = encode(Some(42), &after, namespace);
            let raw: Token = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&token).unwrap())
                .expect("upstream's token shape");
            assert_eq!(
                (raw.v.as_str(), raw.rv, raw.start.as_str()),
                (VERSION, 42, start)
            );
            assert!(
                !token.contains(['+', '/', '=']),
                "URL-safe, unpadded: {token}"
            );
            let resume = decode(&token, namespace).unwrap();
            assert_eq!(
                resume,
                Resume {
                    rv: Some(42),
                    after
                }
            );
        }
        // An expired token's successor reads the rest as it is now.
        let now = decode(&encode(None, &key("a", "b"), None), None).unwrap();
        assert_eq!(now.rv, None);
    }

    #[test]
    fn a_start_key_given_rooted_is_read_as_upstream_roots_it() {
        let token = |json: &str| URL_SAFE_NO_PAD.encode(json);
        let rooted = token(r#"{"v":"meta.k8s.io/v1","rv":7,"start":"/kube-system/pod-a\u0000"}"#);
        let r = decode(&rooted, None).unwrap();
        assert_eq!(r.after, ("kube-system".to_string(), "pod-a".to_string()));
        assert_eq!(r.rv, Some(7));
    }

    #[test]
    fn a_token_the_server_would_not_accept_is_a_bad_request() {
        let token = |json: &str| URL_SAFE_NO_PAD.encode(json);
        for (t, message) in [
            (
                "%%%".to_string(),
                "invalid continue token: continue key is not valid: ",
            ),
            (
                token("{}"),
                "invalid continue token: continue key is not valid: ",
            ),
            (
                token(r#"{"v":"x","rv":1,"start":"a\u0000"}"#),
                "invalid continue token: continue key is not valid: server does not recognize this encoded version x",
            ),
            (
                token(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a\u0000"}"#),
                "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion",
            ),
            (
                token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#),
                "invalid continue token: continue key is not valid: encoded start key empty",
            ),
            (
                token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../etc\u0000"}"#),
                "invalid continue token: continue key is not valid: ../etc\u{0}",
            ),
            (
                token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"a//b\u0000"}"#),
                "invalid continue token: continue key is not valid: a//b\u{0}",
            ),
            (
                token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"a/"}"#),
                "invalid continue token: continue key is not valid: a/",
            ),
        ] {
            let e = decode(&t, None).unwrap_err();
            assert_eq!(e.code, 400, "{t}");
            assert!(e.message.starts_with(message), "{}", e.message);
        }
    }
}

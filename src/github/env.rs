//! What GitHub Actions tells a step through its environment, read once.

use std::fmt;
use std::path::{Path, PathBuf};

/// The REST API of github.com, when `GITHUB_API_URL` is unset.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// An API token. Its value is never formatted: `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token value.
    pub fn new(value: impl Into<String>) -> Token {
        Token(value.into())
    }

    /// The value, for the `Authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The variables a GitHub Actions step sees (see GitHub's "Variables" reference). Empty
/// values count as unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// `GITHUB_API_URL`: the REST API (GitHub Enterprise Server: `https://HOST/api/v3`).
    pub api_url: String,
    /// `GITHUB_REPOSITORY`: `owner/name`.
    pub repository: Option<String>,
    /// `GITHUB_TOKEN`: the token that posts the comment.
    pub token: Option<Token>,
    /// `GITHUB_EVENT_PATH`: the JSON payload of the event that started the workflow.
    pub event_path: Option<PathBuf>,
    /// `GITHUB_OUTPUT`: the file that step outputs are appended to.
    pub output: Option<PathBuf>,
    /// `GITHUB_STEP_SUMMARY`: the file that the job summary is appended to.
    pub step_summary: Option<PathBuf>,
    /// `RUNNER_TEMP` (else the system's temporary directory): where the JSON plan is written.
    pub temp_dir: PathBuf,
}

impl Env {
    /// Reads the process environment.
    pub fn from_env() -> Env {
        Env::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the variables through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Env {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        Env {
            api_url: get("GITHUB_API_URL")
                .map(|u| u.trim_end_matches('/').to_string())
                .unwrap_or_else(|| DEFAULT_API_URL.into()),
            repository: get("GITHUB_REPOSITORY"),
            token: get("GITHUB_TOKEN").map(Token::new),
            event_path: get("GITHUB_EVENT_PATH").map(PathBuf::from),
            output: get("GITHUB_OUTPUT").map(PathBuf::from),
            step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            temp_dir: get("RUNNER_TEMP")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir),
        }
    }

    /// The number of the pull request the event is about (`pull_request.number`), or why
    /// there is none.
    pub fn pull_request(&self) -> Result<u64, String> {
        let path = self
            .event_path
            .as_deref()
            .ok_or("GITHUB_EVENT_PATH is not set (not running in GitHub Actions?)")?;
        pull_request_number(path)
    }
}

/// `pull_request.number` of the event payload at `path`.
pub fn pull_request_number(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the event payload {}: {e}", path.display()))?;
    let event: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the event payload {} is not JSON: {e}", path.display()))?;
    event
        .pointer("/pull_request/number")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| {
            "the event is not about a pull request (no pull_request.number): run the workflow \
             `on: pull_request`"
                .to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Env {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_and_empty_values() {
        let e = env(&[
            ("GITHUB_TOKEN", ""),
            ("GITHUB_API_URL", "http://127.0.0.1:9/api/v3/"),
        ]);
        assert_eq!(e.token, None, "an empty token is no token");
        assert_eq!(e.api_url, "http://127.0.0.1:9/api/v3");
        assert_eq!(env(&[]).api_url, DEFAULT_API_URL);
    }

    #[test]
    fn the_token_is_never_formatted() {
        let e = env(&[("GITHUB_TOKEN", "ghs_secret123")]);
        let shown = format!("{e:?} {}", e.token.as_ref().unwrap());
        assert!(!shown.contains("ghs_secret123"), "{shown}");
        assert_eq!(e.token.unwrap().expose(), "ghs_secret123");
    }

    #[test]
    fn pull_request_number_from_the_event() {
        let dir = tempfile::tempdir().unwrap();
        let pr = dir.path().join("pr.json");
        std::fs::write(
            &pr,
            r#"{"action":"synchronize","pull_request":{"number":42}}"#,
        )
        .unwrap();
        let push = dir.path().join("push.json");
        std::fs::write(&push, r#"{"ref":"refs/heads/main"}"#).unwrap();
        assert_eq!(pull_request_number(&pr), Ok(42));
        let err = pull_request_number(&push).unwrap_err();
        assert!(err.contains("not about a pull request"), "{err}");
        let e = env(&[]);
        assert!(e.pull_request().unwrap_err().contains("GITHUB_EVENT_PATH"));
    }
}

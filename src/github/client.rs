//! A small client for the issue-comment endpoints of GitHub's REST API (reqwest, rustls).
//!
//! The base URL is `$GITHUB_API_URL`, so GitHub Enterprise Server and a test server work the
//! same. The token goes in the `Authorization` header only: never in a URL, an error or a log.

use super::GithubError;
use super::env::Token;
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use std::time::Duration;

/// The REST API version the requests are written against.
const API_VERSION: &str = "2022-11-28";

/// Pages of comments read at most (100 comments each): a bound, not a limit a real pull
/// request reaches.
const MAX_PAGES: usize = 100;

/// An issue (or pull-request) comment, with the fields the sticky comment needs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    /// The comment's id.
    pub id: u64,
    /// The Markdown body.
    #[serde(default)]
    pub body: Option<String>,
    /// Where people read it.
    #[serde(default)]
    pub html_url: String,
    /// The author (absent for a deleted account).
    #[serde(default)]
    pub user: Option<User>,
}

/// A comment's author.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    /// The login, e.g. `github-actions[bot]`.
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

/// A client for one repository.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    api: Url,
    repository: String,
    token: Token,
}

impl Client {
    /// A client for `repository` (`owner/name`) at the REST API `api_url`.
    pub fn new(api_url: &str, repository: &str, token: Token) -> Result<Client, GithubError> {
        let api = Url::parse(&format!("{}/", api_url.trim_end_matches('/'))).map_err(|e| {
            GithubError::Config(format!(
                "GITHUB_API_URL {api_url:?} is not a URL ({e}); it should look like \
                 https://api.github.com"
            ))
        })?;
        let valid = repository.split('/').count() == 2
            && repository.split('/').all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            });
        if !valid {
            return Err(GithubError::Config(format!(
                "GITHUB_REPOSITORY {repository:?} is not `owner/name`"
            )));
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("daemonsync/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| GithubError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            http,
            api,
            repository: repository.to_string(),
            token,
        })
    }

    fn url(&self, path: &str) -> Url {
        self.api
            .join(path.trim_start_matches('/'))
            .expect("paths built here are valid relative URLs")
    }

    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
    ) -> Result<reqwest::Response, GithubError> {
        let path = url.path().to_string();
        let mut req = self
            .http
            .request(method.clone(), url)
            .bearer_auth(self.token.expose())
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| GithubError::Transport {
            method: method.to_string(),
            path: path.clone(),
            message: transport_message(e),
        })?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        Err(GithubError::Api {
            method: method.to_string(),
            path,
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_string(),
            message: api_message(&text),
        })
    }

    async fn json<T: for<'de> Deserialize<'de>>(
        &self,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
    ) -> Result<(T, Option<String>), GithubError> {
        let path = url.path().to_string();
        let resp = self.send(method.clone(), url, body).await?;
        let link = resp
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let text = resp.text().await.map_err(|e| GithubError::Transport {
            method: method.to_string(),
            path: path.clone(),
            message: transport_message(e),
        })?;
        let value = serde_json::from_str(&text).map_err(|e| GithubError::Response {
            method: method.to_string(),
            path,
            message: e.to_string(),
        })?;
        Ok((value, link))
    }

    /// The login of the token's account (`GET /user`), or `None` when the token may not ask
    /// (the workflow's `GITHUB_TOKEN` is an app installation token: GitHub answers 403).
    pub async fn login(&self) -> Result<Option<String>, GithubError> {
        match self.json::<User>(Method::GET, self.url("user"), None).await {
            Ok((user, _)) => Ok(Some(user.login)),
            Err(GithubError::Api { status, .. }) if (400..500).contains(&status) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every comment of issue or pull request `number`, oldest first, following the `Link`
    /// header's `rel="next"` pages (on the API's own origin only: the token goes nowhere else).
    pub async fn list_comments(&self, number: u64) -> Result<Vec<IssueComment>, GithubError> {
        let mut url = self.url(&format!(
            "repos/{}/issues/{number}/comments?per_page=100",
            self.repository
        ));
        let mut all = Vec::new();
        for _ in 0..MAX_PAGES {
            let (page, link): (Vec<IssueComment>, _) = self.json(Method::GET, url, None).await?;
            all.extend(page);
            match link.as_deref().and_then(next_link) {
                Some(next) => {
                    let next = Url::parse(&next).map_err(|e| GithubError::Response {
                        method: "GET".into(),
                        path: format!("repos/{}/issues/{number}/comments", self.repository),
                        message: format!("invalid next-page link {next:?}: {e}"),
                    })?;
                    if next.origin() != self.api.origin() {
                        return Err(GithubError::Response {
                            method: "GET".into(),
                            path: format!("repos/{}/issues/{number}/comments", self.repository),
                            message: format!(
                                "the next-page link points to another server ({}); not followed",
                                next.origin().ascii_serialization()
                            ),
                        });
                    }
                    url = next;
                }
                None => return Ok(all),
            }
        }
        Ok(all)
    }

    /// Creates a comment on issue or pull request `number`.
    pub async fn create_comment(
        &self,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GithubError> {
        let url = self.url(&format!(
            "repos/{}/issues/{number}/comments",
            self.repository
        ));
        let body = serde_json::json!({ "body": body });
        Ok(self.json(Method::POST, url, Some(&body)).await?.0)
    }

    /// Replaces the body of comment `id`.
    pub async fn update_comment(&self, id: u64, body: &str) -> Result<IssueComment, GithubError> {
        let url = self.url(&format!("repos/{}/issues/comments/{id}", self.repository));
        let body = serde_json::json!({ "body": body });
        Ok(self.json(Method::PATCH, url, Some(&body)).await?.0)
    }

    /// Deletes comment `id`; one already gone counts as deleted.
    pub async fn delete_comment(&self, id: u64) -> Result<(), GithubError> {
        let url = self.url(&format!("repos/{}/issues/comments/{id}", self.repository));
        match self.send(Method::DELETE, url, None).await {
            Ok(_) => Ok(()),
            Err(GithubError::Api { status, .. }) if status == StatusCode::NOT_FOUND.as_u16() => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// What the HTTP client says, with its causes ("connection refused"), without the URL (the
/// caller names the path).
fn transport_message(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// GitHub's `message` (and the first error's detail) from an error body, else the start of
/// the body itself.
fn api_message(text: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text)
        && let Some(m) = v.get("message").and_then(serde_json::Value::as_str)
    {
        let detail = v
            .pointer("/errors/0/message")
            .and_then(serde_json::Value::as_str)
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        return format!("{m}{detail}");
    }
    let t: String = text.trim().chars().take(200).collect();
    if t.is_empty() {
        "(no message)".into()
    } else {
        t
    }
}

/// The `rel="next"` URL of a `Link` header.
pub(crate) fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (url, params) = part.trim().split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"));
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_link_is_found_among_others() {
        let h = r#"<https://api.github.com/repositories/1/issues/7/comments?page=1>; rel="prev", <https://api.github.com/repositories/1/issues/7/comments?page=3>; rel="next", <https://api.github.com/repositories/1/issues/7/comments?page=9>; rel="last""#;
        assert_eq!(
            next_link(h).as_deref(),
            Some("https://api.github.com/repositories/1/issues/7/comments?page=3")
        );
        assert_eq!(next_link(r#"<https://x/?page=1>; rel="first""#), None);
    }

    #[test]
    fn api_messages_are_read_from_json_or_quoted() {
        assert_eq!(
            api_message(
                r#"{"message":"Resource not accessible by integration","documentation_url":"x"}"#
            ),
            "Resource not accessible by integration"
        );
        assert_eq!(
            api_message(
                r#"{"message":"Validation Failed","errors":[{"message":"body is too long (maximum is 65536 characters)"}]}"#
            ),
            "Validation Failed (body is too long (maximum is 65536 characters))"
        );
        assert_eq!(
            api_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(api_message(""), "(no message)");
    }

    #[test]
    fn configuration_is_checked_before_any_request() {
        let t = || Token::new("t");
        assert!(Client::new("https://api.github.com", "acme/fleet", t()).is_ok());
        let e = Client::new("not a url", "acme/fleet", t())
            .unwrap_err()
            .to_string();
        assert!(e.contains("GITHUB_API_URL"), "{e}");
        let e = Client::new("https://api.github.com", "acme", t())
            .unwrap_err()
            .to_string();
        assert!(e.contains("owner/name"), "{e}");
        // GitHub Enterprise Server: paths go under /api/v3.
        let c = Client::new("https://ghe.example/api/v3/", "a/b", t()).unwrap();
        assert_eq!(c.url("user").as_str(), "https://ghe.example/api/v3/user");
    }
}

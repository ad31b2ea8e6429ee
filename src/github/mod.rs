//! GitHub Actions: what `daemonsync plan --github` adds to printing the plan.
//!
//! * [`env`]: the variables a step sees (`GITHUB_API_URL`, `GITHUB_REPOSITORY`,
//!   `GITHUB_TOKEN`, `GITHUB_EVENT_PATH`, `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`,
//!   `RUNNER_TEMP`), read once.
//! * [`files`]: step outputs with collision-free delimiters, and the job summary within its
//!   1 MiB limit.
//! * [`client`]: the REST calls for issue comments (reqwest with rustls).
//! * [`sticky`]: one comment per pull request and key, found by its marker, edited in place,
//!   split into parts and never duplicated.
//!
//! [`publish`] does all of it for one [`Report`]. It knows nothing of plans: the command
//! line renders the report and hands it over.

pub mod client;
pub mod env;
pub mod files;
pub mod sticky;

pub use env::{Env, Token};

use std::path::PathBuf;

/// What can go wrong talking to GitHub or writing the runner's files.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// The API answered with an error status.
    #[error(
        "GitHub API {method} {path} failed: HTTP {status} {reason}: {message}{}",
        hint(*status)
    )]
    Api {
        /// HTTP method.
        method: String,
        /// URL path (no query, no credentials).
        path: String,
        /// HTTP status.
        status: u16,
        /// The status's reason phrase.
        reason: String,
        /// GitHub's `message`.
        message: String,
    },
    /// The request did not get an answer.
    #[error("GitHub API {method} {path} failed: {message}; check GITHUB_API_URL and the network")]
    Transport {
        /// HTTP method.
        method: String,
        /// URL path.
        path: String,
        /// What the HTTP client said.
        message: String,
    },
    /// The answer was not what the API documents.
    #[error("GitHub API {method} {path}: unexpected response: {message}")]
    Response {
        /// HTTP method.
        method: String,
        /// URL path.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// A variable of the environment is unusable.
    #[error("{0}")]
    Config(String),
    /// A runner file could not be written.
    #[error("cannot write {what} {}: {source}", path.display())]
    Io {
        /// Which file (`GITHUB_OUTPUT`, …).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// What to do about an error status, after the message.
fn hint(status: u16) -> &'static str {
    match status {
        401 => ". The token was refused: check the action's `github-token` input",
        403 | 404 => {
            ". The token may not write pull-request comments: give the workflow `permissions: \
             pull-requests: write`. Pull requests from forks get a read-only token; the job \
             summary still has the plan"
        }
        422 => ". GitHub rejected the comment body",
        _ => "",
    }
}

/// The step outputs, as the Action declares them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// `has-changes`: the plan's exit code is 2.
    pub has_changes: bool,
    /// `daemonsets-changed`.
    pub daemonsets_changed: usize,
    /// `nodes-affected`; empty for a manifest-only plan, which knows no nodes.
    pub nodes_affected: Option<usize>,
    /// `risks`: how many.
    pub risks: usize,
    /// `exit-code`: 0 no changes, 2 changes, 1 error.
    pub exit_code: i32,
}

/// A rendered plan, ready to publish.
pub struct Report<'a> {
    /// The comment key (`--comment-key`); the JSON plan's file name carries it too.
    pub comment_key: &'a str,
    /// The comment's parts, each starting with the marker of `comment_key`.
    pub comment: Vec<String>,
    /// The comment is one line saying nothing changes: none is created for it.
    pub quiet: bool,
    /// Renders the job summary in at most the given bytes, ending (when cut) with the given
    /// pointer to the full plan.
    pub summary: &'a dyn Fn(usize, &str) -> String,
    /// The step outputs.
    pub outputs: Outputs,
    /// The plan as JSON, written to a file named by the `plan-json` output; `None` when
    /// there is no plan (it failed).
    pub plan_json: Option<String>,
}

/// What [`publish`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    /// The sticky comment's changes, when one was attempted.
    pub comment: Option<sticky::Synced>,
    /// Where the JSON plan was written.
    pub plan_json: Option<PathBuf>,
}

/// Prints a notice annotation (`::notice::`) on stderr, where the runner reads workflow
/// commands as it does on stdout, and stdout stays the plan.
pub fn notice(message: &str) {
    eprintln!(
        "::notice title=daemonsync::{}",
        files::escape_command_data(message)
    );
}

/// Publishes `report`: writes the JSON plan, creates or updates the sticky comment, writes the
/// job summary and the step outputs. Whatever is missing from the environment (no token, no
/// pull request, no `GITHUB_OUTPUT`) is a notice, and the rest is still done. A failure to
/// post the comment is returned as the error, after the summary and the outputs (with
/// `exit-code` 1) are written.
pub async fn publish(env: &Env, report: &Report<'_>) -> Result<Published, GithubError> {
    let mut published = Published::default();
    let json_path = match &report.plan_json {
        Some(json) => {
            let path = env
                .temp_dir
                .join(format!("daemonsync-plan-{}.json", report.comment_key));
            std::fs::write(&path, json).map_err(|source| GithubError::Io {
                what: "the JSON plan",
                path: path.clone(),
                source,
            })?;
            Some(path)
        }
        None => None,
    };
    published.plan_json = json_path.clone();

    let posted = post(env, report).await;
    let comment_url = match &posted {
        Ok(Some(s)) => s.url.clone(),
        _ => None,
    };

    if let Some(path) = &env.step_summary {
        let pointer = pointer(comment_url.as_deref(), json_path.as_deref());
        let text = (report.summary)(files::summary_budget(path), &pointer);
        files::append_summary(path, &format!("{}\n", text.trim_end())).map_err(|source| {
            GithubError::Io {
                what: "the job summary (GITHUB_STEP_SUMMARY)",
                path: path.clone(),
                source,
            }
        })?;
    } else {
        notice("GITHUB_STEP_SUMMARY is not set: no job summary written");
    }

    if let Some(path) = &env.output {
        let o = &report.outputs;
        let exit_code = if posted.is_err() { 1 } else { o.exit_code };
        let outputs = [
            ("has-changes", o.has_changes.to_string()),
            ("daemonsets-changed", o.daemonsets_changed.to_string()),
            (
                "nodes-affected",
                o.nodes_affected.map(|n| n.to_string()).unwrap_or_default(),
            ),
            ("risks", o.risks.to_string()),
            ("exit-code", exit_code.to_string()),
            (
                "plan-json",
                json_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            ),
        ];
        files::write_outputs(path, &outputs).map_err(|source| GithubError::Io {
            what: "the step outputs (GITHUB_OUTPUT)",
            path: path.clone(),
            source,
        })?;
    } else {
        notice("GITHUB_OUTPUT is not set: no step outputs written");
    }
    published.comment = posted?;
    Ok(published)
}

/// Creates or updates the sticky comment, or says (as a notice) why there is none.
async fn post(env: &Env, report: &Report<'_>) -> Result<Option<sticky::Synced>, GithubError> {
    let Some(token) = &env.token else {
        notice(
            "no GITHUB_TOKEN: the plan is not commented on the pull request (the job summary \
             and outputs are written)",
        );
        return Ok(None);
    };
    let Some(repository) = &env.repository else {
        notice("GITHUB_REPOSITORY is not set: the plan is not commented on the pull request");
        return Ok(None);
    };
    let number = match env.pull_request() {
        Ok(n) => n,
        Err(why) => {
            notice(&format!("no pull request to comment on: {why}"));
            return Ok(None);
        }
    };
    let client = client::Client::new(&env.api_url, repository, token.clone())?;
    let parts = &report.comment;
    let (key, quiet) = (report.comment_key, report.quiet);
    sticky::sync(&client, number, key, parts, quiet)
        .await
        .map(Some)
}

/// Where the full plan is, for a summary that had to be cut.
fn pointer(comment: Option<&str>, json: Option<&std::path::Path>) -> String {
    let json = json.map(|p| {
        format!(
            "the JSON plan `{}` (output `plan-json`; upload it as an artifact to keep it)",
            p.display()
        )
    });
    match (comment, json) {
        (Some(url), Some(j)) => {
            format!("The full plan is in [the pull-request comment]({url}) and in {j}.")
        }
        (Some(url), None) => format!("The full plan is in [the pull-request comment]({url})."),
        (None, Some(j)) => format!("The full plan is in {j}."),
        (None, None) => "Run `daemonsync plan -o table` for the full plan.".into(),
    }
}

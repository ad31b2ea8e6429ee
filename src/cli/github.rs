//! `plan --github`: renders a planning run for GitHub Actions and hands it to
//! [`crate::github::publish`], which writes the job summary and outputs and keeps the sticky
//! comment.

use super::plan::{PlanOptions, PlanRun, print};
use super::{EXIT_CHANGES, EXIT_ERROR};
use crate::github::{self, Env, Outputs, Report};
use crate::report::markdown::{failure, is_quiet};
use crate::report::{self, Counts, MarkdownContext};
use anyhow::Result;

/// Prints and publishes `run`; when planning failed, publishes the failure (the comment and
/// summary say so, `exit-code` is 1) and returns the planning error.
pub async fn step(run: Result<PlanRun>, opts: &PlanOptions) -> Result<i32> {
    let env = Env::from_env();
    let run = match run {
        Ok(run) => run,
        Err(e) => {
            publish_failure(&env, opts, &super::message(&e)).await;
            return Err(e);
        }
    };
    print(&run, &opts.report)?;
    let ctx = run.markdown_context(&opts.report);
    let counts = Counts::of(&run.plan, &run.diffs);
    let summary = |budget: usize, pointer: &str| {
        report::to_summary(&run.plan, &ctx, &run.diffs, budget, pointer)
    };
    let report = Report {
        comment_key: &opts.report.comment_key,
        comment: run.markdown(&opts.report),
        quiet: is_quiet(&run.plan, &run.diffs),
        summary: &summary,
        outputs: Outputs {
            has_changes: run.exit_code == EXIT_CHANGES,
            daemonsets_changed: counts.changed,
            nodes_affected: counts.nodes_affected,
            risks: counts.risks,
            exit_code: run.exit_code,
        },
        plan_json: Some(report::to_json(&run.plan)),
    };
    let published = github::publish(&env, &report).await?;
    if let Some(c) = published.comment {
        let at = c.url.map(|u| format!(": {u}")).unwrap_or_default();
        eprintln!(
            "pull-request comment: {} created, {} updated, {} deleted{at}",
            c.created, c.updated, c.deleted
        );
    }
    Ok(run.exit_code)
}

/// The comment and summary of a plan that could not be computed; errors publishing it are
/// printed, the planning error stays the one returned.
async fn publish_failure(env: &Env, opts: &PlanOptions, message: &str) {
    let (base, head) = opts.pull_request.clone().unzip();
    let ctx = MarkdownContext {
        repository: opts.report.repository.clone(),
        base,
        head,
        cluster: opts.report.cluster.clone(),
        comment_key: opts.report.comment_key.clone(),
        rendered: None,
    };
    let body = failure(&ctx, message);
    let summary_text = body
        .split_once('\n')
        .map_or(body.as_str(), |(_, rest)| rest);
    let summary = |_: usize, _: &str| summary_text.to_string();
    let report = Report {
        comment_key: &opts.report.comment_key,
        comment: vec![body.clone()],
        quiet: false,
        summary: &summary,
        outputs: Outputs {
            has_changes: false,
            daemonsets_changed: 0,
            nodes_affected: None,
            risks: 0,
            exit_code: EXIT_ERROR,
        },
        plan_json: None,
    };
    if let Err(e) = github::publish(env, &report).await {
        eprintln!("error: {e}");
    }
}

//! The examples under `examples/github/`: the workflows use the Action as it is declared,
//! and `comment.md` (also shown in docs/github-action.md) is what daemonsync renders today.
//!
//! After a deliberate change of the comment, regenerate both with
//! `DAEMONSYNC_REGENERATE_EXAMPLES=1 cargo test --test it examples::`.

use crate::support::{Repo, daemonsync, repo_path};
use serde_json::Value;
use std::path::Path;

/// Set to regenerate `examples/github/comment.md` and docs/github-action.md's copy.
const REGENERATE: &str = "DAEMONSYNC_REGENERATE_EXAMPLES";

const BLOCK_START: &str = "<!-- example-comment:start -->\n";
const BLOCK_END: &str = "<!-- example-comment:end -->\n";

fn copy_dir(from: &Path, repo: &Repo, to: &str) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        repo.write(
            &format!("{to}/{name}"),
            &std::fs::read_to_string(entry.path()).unwrap(),
        );
    }
}

/// The pull request the example shows: the DaemonSets running in the demo fleet
/// (`examples/sim/running/`) upgraded to `examples/manifests/`, planned against the demo
/// fleet. Commit dates are fixed, so the commit ids are the same everywhere.
fn render_example_comment() -> String {
    let repo = Repo::new();
    copy_dir(&repo_path("examples/sim/running"), &repo, "deploy");
    let base = repo.commit_at("Run the fleet's DaemonSets", "2026-01-05T09:00:00Z");
    std::fs::remove_dir_all(repo.path().join("deploy")).unwrap();
    copy_dir(&repo_path("examples/manifests"), &repo, "deploy");
    let head = repo.commit_at(
        "Upgrade the node agent, CNI and storage driver",
        "2026-01-05T10:00:00Z",
    );
    let out = daemonsync()
        .current_dir(repo_path(""))
        .env_remove("GITHUB_REPOSITORY")
        .args([
            "plan",
            "--repo",
            &repo.url(),
            "--base",
            &base,
            "--head",
            &head,
        ])
        .args([
            "--path",
            "deploy",
            "--cluster",
            "sim:examples/sim/demo.yaml",
        ])
        .args(["--now", "2026-01-05T12:00:00Z", "-o", "markdown"])
        .args(["--repository", "acme/fleet"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_example_comment_is_what_daemonsync_renders() {
    let rendered = render_example_comment();
    assert!(
        rendered.starts_with("<!-- daemonsync-plan:default -->\n### daemonsync plan\n"),
        "{rendered}"
    );
    assert!(!rendered.contains("daemonsync-plan-part"), "one comment");
    let path = repo_path("examples/github/comment.md");
    let docs_path = repo_path("docs/github-action.md");
    let readme = std::fs::read_to_string(&docs_path).unwrap();
    let (before, rest) = readme
        .split_once(BLOCK_START)
        .expect("docs/github-action.md has the example comment block");
    let (_, after) = rest.split_once(BLOCK_END).expect("the block is closed");
    let in_docs = format!("{before}{BLOCK_START}{rendered}{BLOCK_END}{after}");
    if std::env::var_os(REGENERATE).is_some() {
        std::fs::write(&path, &rendered).unwrap();
        std::fs::write(&docs_path, &in_docs).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "examples/github/comment.md differs from what daemonsync renders; if the change is \
         intended, run `{REGENERATE}=1 cargo test --test it examples::` and review the diff"
    );
    assert!(
        readme == in_docs,
        "docs/github-action.md's example comment differs from examples/github/comment.md; run \
         `{REGENERATE}=1 cargo test --test it examples::`"
    );
}

fn workflow(name: &str) -> Value {
    let text = std::fs::read_to_string(repo_path(&format!("examples/github/{name}"))).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The steps of every job that use the Action.
fn action_steps(w: &Value) -> Vec<&Value> {
    w["jobs"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|j| j["steps"].as_array().unwrap())
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("daemonsync/daemonsync@"))
        })
        .collect()
}

#[test]
fn example_workflows_are_least_privilege_pull_request_workflows() {
    let action: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(repo_path("action.yml")).unwrap()).unwrap();
    let inputs = action["inputs"].as_object().unwrap();
    for name in ["plan.yml", "plan-two-clusters.yml"] {
        let w = workflow(name);
        let on = w["on"].as_object().expect("on: is a map");
        assert!(on.contains_key("pull_request"), "{name}");
        assert!(!on.contains_key("pull_request_target"), "{name}");
        assert_eq!(
            w["permissions"],
            serde_json::json!({"contents": "read", "pull-requests": "write"}),
            "{name}"
        );
        for job in w["jobs"].as_object().unwrap().values() {
            let checkout = job["steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| {
                    s["uses"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("actions/checkout@"))
                })
                .expect("a checkout step");
            assert_eq!(checkout["with"]["fetch-depth"], 0, "{name}: full history");
            for s in job["steps"].as_array().unwrap() {
                if s["run"].is_string() {
                    assert!(s["shell"].is_string(), "{name}: {} has a shell", s["name"]);
                    let run = s["run"].as_str().unwrap();
                    assert!(!run.contains("${{"), "{name}: no expression in a script");
                }
            }
        }
        let uses = action_steps(&w);
        assert!(!uses.is_empty(), "{name} uses the Action");
        for s in uses {
            for key in s["with"].as_object().unwrap().keys() {
                assert!(inputs.contains_key(key), "{name}: unknown input {key}");
            }
            assert!(s["with"]["path"].is_string(), "{name}: path is required");
        }
    }
    let two = workflow("plan-two-clusters.yml");
    let steps = action_steps(&two);
    let keys: Vec<&str> = steps
        .iter()
        .map(|s| s["with"]["comment-key"].as_str().unwrap())
        .collect();
    let snapshots: Vec<&str> = steps
        .iter()
        .map(|s| s["with"]["cluster-snapshot"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1], "two clusters, two comments");
    assert_ne!(snapshots[0], snapshots[1]);
}

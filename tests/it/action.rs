//! `daemonsync plan --github` as the Action runs it: a temporary repository with base and head
//! commits, `GITHUB_*` variables pointing at temporary files, and the fake GitHub API on
//! 127.0.0.1. Every output, the job summary and every comment request are checked.

use crate::fake_github::{FakeGithub, TOKEN};
use crate::support::{Repo, daemonsync, ds, snapshot};
use daemonsync::github::files::parse_outputs;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

const PR: u64 = 7;
const NOW: &str = "2025-06-01T12:00:00Z";

/// A workflow step's surroundings: the repository, the runner's files and the API.
struct Step {
    dir: tempfile::TempDir,
    repo: Repo,
    gh: FakeGithub,
}

/// What one run left behind.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    outputs: BTreeMap<String, String>,
    summary: String,
}

impl Step {
    fn new() -> Step {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("runner-temp")).unwrap();
        let event = serde_json::json!({"action": "synchronize", "pull_request": {"number": PR}});
        std::fs::write(dir.path().join("event.json"), event.to_string()).unwrap();
        Step {
            dir,
            repo: Repo::new(),
            gh: FakeGithub::start(),
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Commits `files` (path, text) as the whole of `deploy/` and returns the commit id.
    fn commit(&self, files: &[(&str, String)]) -> String {
        let deploy = self.repo.path().join("deploy");
        if deploy.exists() {
            std::fs::remove_dir_all(&deploy).unwrap();
        }
        for (name, text) in files {
            self.repo.write(&format!("deploy/{name}"), text);
        }
        self.repo.commit("change")
    }

    /// `plan --github` for base..head with `extra` flags; `env` overrides the step's variables
    /// (`None` unsets one).
    fn run(&self, base: &str, head: &str, extra: &[&str], env: &[(&str, Option<&str>)]) -> Outcome {
        std::fs::write(self.file("output"), "").unwrap();
        std::fs::write(self.file("summary"), "").unwrap();
        let mut vars: BTreeMap<&str, Option<String>> = BTreeMap::from([
            ("GITHUB_API_URL", Some(self.gh.api_url.clone())),
            ("GITHUB_REPOSITORY", Some("acme/fleet".to_string())),
            ("GITHUB_TOKEN", Some(TOKEN.to_string())),
            (
                "GITHUB_EVENT_PATH",
                Some(self.file("event.json").display().to_string()),
            ),
            (
                "GITHUB_OUTPUT",
                Some(self.file("output").display().to_string()),
            ),
            (
                "GITHUB_STEP_SUMMARY",
                Some(self.file("summary").display().to_string()),
            ),
            (
                "RUNNER_TEMP",
                Some(self.file("runner-temp").display().to_string()),
            ),
        ]);
        for (k, v) in env {
            vars.insert(k, v.map(str::to_string));
        }
        let mut cmd = daemonsync();
        for (k, v) in &vars {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let repo = self.repo.url();
        let cluster = snapshot();
        let mut args = vec![
            "plan", "--github", "--repo", &repo, "--base", base, "--head", head, "--path",
            "deploy", "--now", NOW,
        ];
        if !extra.contains(&"--cluster") {
            args.extend(["--cluster", &cluster]);
        }
        args.extend(extra);
        let out = cmd.args(&args).output().unwrap();
        let outputs = parse_outputs(&std::fs::read_to_string(self.file("output")).unwrap())
            .unwrap()
            .into_iter()
            .collect();
        let o = Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into(),
            stderr: String::from_utf8_lossy(&out.stderr).into(),
            outputs,
            summary: std::fs::read_to_string(self.file("summary")).unwrap(),
        };
        assert!(
            !o.stdout.contains(TOKEN) && !o.stderr.contains(TOKEN) && !o.summary.contains(TOKEN),
            "the token never appears in any output"
        );
        o
    }

    fn methods(&self) -> Vec<String> {
        self.gh
            .take_requests()
            .into_iter()
            .map(|r| r.method)
            .collect()
    }
}

/// The outputs a plan with changes must have, given the JSON plan it wrote.
fn assert_outputs_match_the_plan(o: &Outcome, daemonsets_changed: usize) {
    let names: Vec<&str> = o.outputs.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "daemonsets-changed",
            "exit-code",
            "has-changes",
            "nodes-affected",
            "plan-json",
            "risks"
        ],
        "{}",
        o.stderr
    );
    assert_eq!(o.outputs["has-changes"], "true");
    assert_eq!(o.outputs["exit-code"], "2");
    assert_eq!(
        o.outputs["daemonsets-changed"],
        daemonsets_changed.to_string()
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&o.outputs["plan-json"]).unwrap()).unwrap();
    assert_eq!(json["kind"], "Plan");
    let risks: usize = json["daemonsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["risks"].as_array().unwrap().len())
        .sum();
    assert_eq!(o.outputs["risks"], risks.to_string());
    let mut affected = std::collections::BTreeSet::new();
    for d in json["daemonsets"].as_array().unwrap() {
        let rolling = d["strategy"]["type"] == "RollingUpdate";
        for n in d["nodes"].as_array().unwrap() {
            let s = n["state"].as_str().unwrap();
            if matches!(s, "missing" | "misscheduled" | "failed") || (rolling && s == "out-of-date")
            {
                affected.insert(n["node"].as_str().unwrap().to_string());
            }
        }
    }
    assert!(!affected.is_empty());
    assert_eq!(o.outputs["nodes-affected"], affected.len().to_string());
}

#[test]
fn first_run_creates_the_comment_and_the_next_run_edits_it() {
    let s = Step::new();
    // Other people's comments come first, so ours is on a later page.
    for i in 0..5 {
        s.gh.add_human_comment(PR, &format!("review comment {i}"));
    }
    s.gh.add_human_comment(
        PR,
        "> <!-- daemonsync-plan:default -->\n> quoted by a person",
    );
    let base = s.commit(&[("agent.yaml", ds("agent", "agent:1.0"))]);
    let head = s.commit(&[("agent.yaml", ds("agent", "agent:1.1"))]);

    let o = s.run(&base, &head, &[], &[]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    // The plan is still printed for the log.
    assert!(o.stdout.contains("kube-system/agent"), "{}", o.stdout);
    let requests = s.gh.take_requests();
    let methods: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
    // Who am I (refused to a workflow token), then three pages of two comments, then the post.
    assert_eq!(
        methods,
        ["GET", "GET", "GET", "GET", "POST"],
        "{requests:?}"
    );
    assert_eq!(requests[0].path, "/api/v3/user");
    assert!(
        requests[1]
            .path
            .starts_with("/api/v3/repos/acme/fleet/issues/7/comments?per_page=100"),
        "{requests:?}"
    );
    assert!(
        requests[2..4].iter().all(|r| r
            .path
            .starts_with("/api/v3/repositories/1/issues/7/comments")),
        "next pages follow the Link header: {requests:?}"
    );
    let ours = s.gh.bot_comments(PR);
    assert_eq!(ours.len(), 1);
    let body = &ours[0].body;
    assert!(
        body.starts_with("<!-- daemonsync-plan:default -->\n### daemonsync plan\n"),
        "{body}"
    );
    assert!(body.contains(&format!(
        "`acme/fleet` · `{}` → `{}`",
        &base[..12],
        &head[..12]
    )));
    assert!(
        body.contains("+      - image: agent:1.1"),
        "the diff: {body}"
    );
    assert!(
        o.stderr
            .contains("pull-request comment: 1 created, 0 updated, 0 deleted")
    );
    assert_outputs_match_the_plan(&o, 1);
    // The summary: the same report without the hidden marker, and nothing cut.
    assert!(
        o.summary.starts_with("### daemonsync plan\n"),
        "{}",
        o.summary
    );
    assert!(!o.summary.contains("<!-- daemonsync-plan"), "{}", o.summary);
    assert!(o.summary.contains("<b>kube-system/agent</b>"));
    assert!(!o.summary.contains("Truncated"));
    let id = ours[0].id;

    let head2 = s.commit(&[("agent.yaml", ds("agent", "agent:1.2"))]);
    let o = s.run(&base, &head2, &[], &[]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let methods = s.methods();
    assert_eq!(
        methods.iter().filter(|m| *m == "PATCH").count(),
        1,
        "{methods:?}"
    );
    assert!(!methods.contains(&"POST".to_string()), "{methods:?}");
    let ours = s.gh.bot_comments(PR);
    assert_eq!(ours.len(), 1, "never a second comment");
    assert_eq!(ours[0].id, id, "edited in place");
    assert!(ours[0].body.contains("+      - image: agent:1.2"));
    assert!(ours[0].body.contains(&head2[..12]));
    assert_eq!(
        s.gh.all_comments(PR).len(),
        7,
        "people's comments untouched"
    );
    assert!(o.stderr.contains("0 created, 1 updated, 0 deleted"));
    assert_outputs_match_the_plan(&o, 1);
}

#[test]
fn another_comment_key_keeps_a_comment_of_its_own() {
    let s = Step::new();
    let base = s.commit(&[("agent.yaml", ds("agent", "agent:1.0"))]);
    let head = s.commit(&[("agent.yaml", ds("agent", "agent:1.1"))]);
    for key in ["prod", "staging", "prod"] {
        let o = s.run(&base, &head, &["--comment-key", key], &[]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.outputs["plan-json"].ends_with(&format!("daemonsync-plan-{key}.json")));
    }
    let ours = s.gh.bot_comments(PR);
    assert_eq!(ours.len(), 2, "one comment per key");
    assert!(ours[0].body.starts_with("<!-- daemonsync-plan:prod -->\n"));
    assert!(
        ours[1]
            .body
            .starts_with("<!-- daemonsync-plan:staging -->\n")
    );
    let methods = s.methods();
    let count = |m: &str| methods.iter().filter(|x| *x == m).count();
    assert_eq!((count("POST"), count("PATCH"), count("DELETE")), (2, 1, 0));

    let o = s.run(&base, &head, &["--comment-key", "a b"], &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("--comment-key: invalid comment key"),
        "{}",
        o.stderr
    );
}

#[test]
fn an_oversized_plan_is_split_into_parts_and_a_smaller_one_deletes_the_surplus() {
    let s = Step::new();
    let base = s.commit(&[("agent.yaml", ds("agent", "agent:1.0"))]);
    let files: Vec<(String, String)> =
        std::iter::once(("agent".to_string(), "agent:1.1".to_string()))
            .chain((0..120).map(|i| {
                (
                    format!("daemon-{i:03}"),
                    format!("registry.example/daemon:{i}"),
                )
            }))
            .map(|(name, image)| (format!("{name}.yaml"), ds(&name, &image)))
            .collect();
    let big: Vec<(&str, String)> = files.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let head = s.commit(&big);
    let o = s.run(&base, &head, &[], &[]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let parts = s.gh.bot_comments(PR);
    let n = parts.len();
    let sizes: Vec<usize> = parts.iter().map(|p| p.body.chars().count()).collect();
    eprintln!("121 DaemonSets: {n} parts of {sizes:?} characters");
    assert!(n >= 2, "{n} part(s)");
    for (i, p) in parts.iter().enumerate() {
        assert!(p.body.chars().count() <= 65_536);
        assert!(
            p.body.starts_with(&format!(
                "<!-- daemonsync-plan:default -->\n<!-- daemonsync-plan-part:{} -->\n",
                i + 1
            )),
            "part {} in order",
            i + 1
        );
    }
    assert!(parts[0].body.contains(&format!("**Part 1 of {n}**")));
    assert_outputs_match_the_plan(&o, 121);
    let first = parts[0].id;
    s.gh.take_requests();

    // A later, smaller plan: part 1 is edited, the other parts go.
    let head2 = s.commit(&[("agent.yaml", ds("agent", "agent:1.2"))]);
    let o = s.run(&base, &head2, &[], &[]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let methods = s.methods();
    let count = |m: &str| methods.iter().filter(|x| *x == m).count();
    assert_eq!(
        (count("POST"), count("PATCH"), count("DELETE")),
        (0, 1, n - 1)
    );
    let left = s.gh.bot_comments(PR);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, first);
    assert!(
        !left[0].body.contains("daemonsync-plan-part:"),
        "{}",
        left[0].body
    );
    assert_outputs_match_the_plan(&o, 1);
}

#[test]
fn a_refused_comment_is_exit_1_with_githubs_status_and_message() {
    let s = Step::new();
    s.gh.fail_writes(403, "Resource not accessible by integration");
    let base = s.commit(&[("agent.yaml", ds("agent", "agent:1.0"))]);
    let head = s.commit(&[("agent.yaml", ds("agent", "agent:1.1"))]);
    let o = s.run(&base, &head, &[], &[]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains(
            "GitHub API POST /api/v3/repos/acme/fleet/issues/7/comments failed: HTTP 403 \
             Forbidden: Resource not accessible by integration"
        ),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("pull-requests: write"), "{}", o.stderr);
    // The rest is done: the summary has the plan; the outputs say the step failed.
    assert!(
        o.summary.contains("<b>kube-system/agent</b>"),
        "{}",
        o.summary
    );
    assert_eq!(o.outputs["exit-code"], "1");
    assert_eq!(o.outputs["has-changes"], "true");
    assert!(s.gh.bot_comments(PR).is_empty());
}

#[test]
fn without_a_token_or_a_pull_request_the_rest_is_still_done() {
    let s = Step::new();
    let base = s.commit(&[("agent.yaml", ds("agent", "agent:1.0"))]);
    let head = s.commit(&[("agent.yaml", ds("agent", "agent:1.1"))]);
    let o = s.run(&base, &head, &[], &[("GITHUB_TOKEN", None)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("::notice title=daemonsync::no GITHUB_TOKEN"),
        "{}",
        o.stderr
    );
    assert!(
        s.gh.take_requests().is_empty(),
        "no request without a token"
    );
    assert!(o.summary.starts_with("### daemonsync plan\n"));
    assert_outputs_match_the_plan(&o, 1);

    std::fs::write(s.file("push.json"), r#"{"ref": "refs/heads/main"}"#).unwrap();
    let push = s.file("push.json").display().to_string();
    let o = s.run(&base, &head, &[], &[("GITHUB_EVENT_PATH", Some(&push))]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("::notice title=daemonsync::no pull request to comment on: the event is not about a pull request"),
        "{}",
        o.stderr
    );
    assert!(s.gh.take_requests().is_empty());
    assert_outputs_match_the_plan(&o, 1);
}

#[test]
fn nothing_to_change_creates_no_comment_but_clears_an_existing_one() {
    let s = Step::new();
    let c1 = s.commit(&[("agent.yaml", ds("agent", "agent:1.0"))]);
    let none = ["--cluster", "none"];
    let o = s.run(&c1, &c1, &none, &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.outputs["has-changes"], "false");
    assert_eq!(o.outputs["exit-code"], "0");
    assert_eq!(o.outputs["daemonsets-changed"], "0");
    assert_eq!(o.outputs["risks"], "0");
    assert_eq!(
        o.outputs["nodes-affected"], "",
        "no nodes are known without a cluster"
    );
    assert!(s.gh.bot_comments(PR).is_empty(), "no comment for nothing");
    assert!(!s.methods().contains(&"POST".to_string()));
    assert!(
        o.summary.contains("**daemonsync plan: no changes.**"),
        "{}",
        o.summary
    );

    // A change is commented; when it is reverted, the comment says so in one line.
    let c2 = s.commit(&[("agent.yaml", ds("agent", "agent:1.1"))]);
    let o = s.run(&c1, &c2, &none, &[]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(o.outputs["daemonsets-changed"], "1");
    assert_eq!(o.outputs["nodes-affected"], "");
    let body = &s.gh.bot_comments(PR)[0].body;
    assert!(body.contains("**Manifest only:**"), "{body}");
    assert!(!body.contains("no-eligible-nodes"), "{body}");
    let o = s.run(&c1, &c1, &none, &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let ours = s.gh.bot_comments(PR);
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].body.lines().count(), 1, "{}", ours[0].body);
    assert!(
        ours[0]
            .body
            .starts_with("<!-- daemonsync-plan:default --> **daemonsync plan: no changes.**")
    );
}

#[test]
fn a_failed_plan_replaces_the_comment_with_the_error() {
    let s = Step::new();
    let base = s.commit(&[("agent.yaml", ds("agent", "agent:1.0"))]);
    let head = s.commit(&[("agent.yaml", ds("agent", "agent:1.1"))]);
    assert_eq!(s.run(&base, &head, &[], &[]).code, 2);
    let broken = ds("agent", "agent:1.1").replace("        image: agent:1.1\n", "");
    let bad = s.commit(&[("agent.yaml", broken)]);
    let o = s.run(&base, &bad, &[], &[]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("image"), "{}", o.stderr);
    assert_eq!(o.outputs["exit-code"], "1");
    assert_eq!(o.outputs["has-changes"], "false");
    assert_eq!(o.outputs["plan-json"], "");
    let ours = s.gh.bot_comments(PR);
    assert_eq!(ours.len(), 1);
    assert!(
        ours[0].body.contains("**The plan failed.**"),
        "{}",
        ours[0].body
    );
    assert!(ours[0].body.contains("image"), "{}", ours[0].body);
    assert!(o.summary.contains("**The plan failed.**"));
}

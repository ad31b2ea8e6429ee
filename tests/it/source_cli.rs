//! `daemonsync plan` with git sources: single ref, pull-request mode, errors and redaction.

use crate::support::{Repo, ds, ds_with, free_port, snapshot};
use assert_cmd::Command;

const NOW: &str = "2026-01-01T00:00:00Z";

/// `plan` of a pull request: `--base BASE --head HEAD --path deploy` of the repository at
/// `url`, then `extra`.
fn plan_pr(url: &str, base: &str, head: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "--repo", url, "--base", base, "--head", head, "--path", "deploy",
    ];
    args.extend_from_slice(extra);
    plan(&args)
}

fn plan(args: &[&str]) -> (i32, String, String) {
    let cache = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("daemonsync")
        .unwrap()
        .arg("plan")
        .args(["--cluster", &snapshot(), "--now", NOW, "--cache-dir"])
        .arg(cache.path())
        .args(args)
        .env_remove("DAEMONSYNC_GIT_TOKEN")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `a` written with keys reordered, different formatting and every default spelled out.
const A_REORDERED_WITH_DEFAULTS: &str = r#"kind: DaemonSet
apiVersion: apps/v1
metadata: {namespace: kube-system, name: a}
spec:
  revisionHistoryLimit: 10
  updateStrategy:
    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}
    type: RollingUpdate
  template:
    spec:
      terminationGracePeriodSeconds: 30
      schedulerName: default-scheduler
      restartPolicy: Always
      dnsPolicy: ClusterFirst
      securityContext: {}
      containers:
      - image: "agent:1.0"
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
        name: a
    metadata:
      labels:
        app: a
  selector:
    matchLabels:
      app: a
"#;

/// main: base (c1), then a commit that only reorders keys and spells out defaults (c2);
/// branch pr: image, nodeSelector and toleration changes (c3).
fn pr_repo() -> (Repo, [String; 3]) {
    let r = Repo::new();
    r.write("deploy/a.yaml", &ds("a", "agent:1.0"))
        .write(
            "deploy/b.yaml",
            &ds_with("b", "b:1", "kubernetes.io/arch: amd64", ""),
        )
        .write("deploy/c.yaml", &ds("c", "c:1"))
        .write("deploy/d.yaml", &ds("d", "d:1"));
    let c1 = r.commit("base");
    r.write("deploy/a.yaml", A_REORDERED_WITH_DEFAULTS);
    let c2 = r.commit("reorder keys, spell out defaults");
    r.git(&["checkout", "-q", "-b", "pr"]);
    r.write("deploy/a.yaml", &ds("a", "agent:1.1"))
        .write(
            "deploy/b.yaml",
            &ds_with("b", "b:1", "kubernetes.io/arch: arm64", ""),
        )
        .write(
            "deploy/c.yaml",
            &ds_with(
                "c",
                "c:1",
                "",
                "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}",
            ),
        );
    let c3 = r.commit("image, nodeSelector, toleration");
    r.git(&["checkout", "-q", "main"]);
    (r, [c1, c2, c3])
}

#[test]
fn pull_request_shows_three_readable_diffs_and_per_node_impact() {
    let (r, [_, c2, c3]) = pr_repo();
    let (code, out, err) = plan_pr(&r.url(), "main", "pr", &[]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.starts_with(&format!(
            "source: {} base main ({}) -> head pr ({})",
            r.url(),
            &c2[..12],
            &c3[..12]
        )),
        "{out}"
    );
    assert!(
        out.contains("0 added, 0 removed, 3 changed, 1 unchanged"),
        "{out}"
    );
    for name in ["a", "b", "c"] {
        assert!(
            out.contains(&format!(
                "--- a/kube-system/{name}\n+++ b/kube-system/{name}\n"
            )),
            "{out}"
        );
    }
    assert!(!out.contains("a/kube-system/d"), "{out}");
    assert!(
        out.contains("-      - image: agent:1.0") && out.contains("+      - image: agent:1.1"),
        "{out}"
    );
    assert!(
        out.contains("-        kubernetes.io/arch: amd64")
            && out.contains("+        kubernetes.io/arch: arm64"),
        "{out}"
    );
    assert!(
        out.contains("+      - effect: NoSchedule") && out.contains("key: nvidia.com/gpu"),
        "{out}"
    );
    // The consequences of the change, node by node.
    assert!(out.contains("Node changes from base to head:"), "{out}");
    assert!(
        out.contains("  kube-system/a: pod template changed; its pod is replaced on 4 node(s)"),
        "{out}"
    );
    assert!(
        out.contains(
            "  kube-system/b: gains +worker-arm64-1; loses -fargate-1 -win-1 -worker-amd64-1\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("  kube-system/c: gains +gpu-1; pod template changed"),
        "{out}"
    );
    assert!(!out.contains("  kube-system/d:"), "{out}");
    // The per-node impact of head: b now only on the arm64 worker, c now also on the GPU node.
    assert!(out.contains("Per-node impact of head"), "{out}");
    let plan_part = &out[out.find("Per-node impact").unwrap()..];
    assert!(
        plan_part.contains("kube-system/b") && plan_part.contains("worker-arm64-1"),
        "{out}"
    );
    assert!(plan_part.contains("gpu-1"), "{out}");
    assert!(!plan_part.to_lowercase().contains("delete"), "{out}");
}

#[test]
fn pull_request_markdown_names_the_commits_and_carries_the_diffs() {
    let (r, [_, c2, c3]) = pr_repo();
    let (code, out, err) = plan_pr(
        &r.url(),
        "main",
        "pr",
        &["-o", "markdown", "--repository", "acme/fleet"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        out.starts_with("<!-- daemonsync-plan:default -->\n"),
        "{out}"
    );
    let identity = format!("`acme/fleet` · `{}` → `{}`", &c2[..12], &c3[..12]);
    assert!(out.contains(&identity), "{identity} in {out}");
    assert!(out.contains("```diff"), "{out}");
    assert!(
        out.contains("-      - image: agent:1.0") && out.contains("+      - image: agent:1.1"),
        "{out}"
    );
    assert!(
        !out.contains("source: "),
        "the terminal source line stays out of the comment"
    );
}

#[test]
fn reordering_keys_and_explicit_defaults_show_no_change() {
    let (r, [c1, c2, _]) = pr_repo();
    let (code, out, err) = plan_pr(&r.url(), &c1, &c2, &[]);
    assert!(
        out.contains("0 added, 0 removed, 0 changed, 4 unchanged"),
        "{out}\n{err}"
    );
    assert!(!out.contains("--- a/"), "{out}");
    assert!(!out.contains("Node changes"), "{out}");
    // The DaemonSets are not in the cluster snapshot yet: head's plan still creates pods.
    assert_eq!(code, 2);
}

#[test]
fn added_and_removed_daemonsets_are_diffed_and_removed_ones_never_deleted() {
    let (r, _) = pr_repo();
    r.git(&["checkout", "-q", "-b", "swap"]);
    r.remove("deploy/d.yaml")
        .write("deploy/e.yaml", &ds("e", "e:1"));
    r.commit("replace d by e");
    let (code, out, err) = plan_pr(&r.url(), "main", "swap", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        out.contains("1 added, 1 removed, 0 changed, 3 unchanged"),
        "{out}"
    );
    assert!(
        out.contains("--- /dev/null\n+++ b/kube-system/e\n"),
        "{out}"
    );
    assert!(
        out.contains("--- a/kube-system/d\n+++ /dev/null\n"),
        "{out}"
    );
    assert!(
        out.contains("kube-system/d is removed on head; its pods are NOT deleted"),
        "{out}"
    );
}

#[test]
fn single_ref_names_the_commit() {
    let (r, [_, c2, _]) = pr_repo();
    let (code, out, err) = plan(&["--repo", &r.file_url(), "--ref", "main", "--path", "deploy"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        out.starts_with(&format!(
            "source: {} @ main ({})\n",
            r.file_url(),
            &c2[..12]
        )),
        "{out}"
    );

    // JSON keeps its schema: the source line goes to stderr.
    let (code, out, err) = plan(&[
        "--repo",
        &r.url(),
        "--ref",
        &c2,
        "--path",
        "deploy",
        "-o",
        "json",
    ]);
    assert_eq!(code, 2, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "Plan");
    assert!(err.contains(&format!("({})", &c2[..12])), "{err}");
}

#[test]
fn unreachable_repository_errors_and_never_plans_deletions() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/nope.git");
    let (code, out, err) = plan(&["--repo", &url, "--ref", "main"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.is_empty(), "nothing is planned: {out}");
    assert!(!out.to_lowercase().contains("delete"));
    assert!(err.contains(&format!("cannot fetch {url}")), "{err}");
    assert!(err.contains("nothing was planned"), "{err}");
}

#[test]
fn credentials_in_urls_never_reach_the_output() {
    let port = free_port();
    let url = format!("https://user:s3cret@127.0.0.1:{port}/x.git");
    let (code, out, err) = plan(&["--repo", &url, "--base", "main", "--head", "pr"]);
    assert_eq!(code, 1);
    assert!(
        !out.contains("s3cret") && !err.contains("s3cret"),
        "{out}\n{err}"
    );
    assert!(err.contains("https://***@127.0.0.1"), "{err}");
}

#[test]
fn unsafe_paths_and_links_fail_with_exit_code_1() {
    let (r, _) = pr_repo();
    let (code, _, err) = plan(&["--repo", &r.url(), "--path", "../.."]);
    assert_eq!(code, 1);
    assert!(err.contains("not allowed") && err.contains("'..'"), "{err}");

    r.symlink("deploy/leak.yaml", "../../../etc/passwd");
    r.commit("escape");
    let (code, out, err) = plan(&["--repo", &r.url(), "--path", "deploy"]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("symlink \"deploy/leak.yaml\""), "{err}");

    let (code, _, err) = plan(&["--repo", &r.url(), "--ref", "no-such-branch"]);
    assert_eq!(code, 1);
    assert!(err.contains("\"no-such-branch\" not found"), "{err}");
}

#[test]
fn flags_are_validated() {
    // Usage errors exit 1, never 2, which would read as "the plan has changes".
    let (code, _, err) = plan(&["--manifests", "x", "--repo", "y"]);
    assert_eq!(code, 1, "clap usage error: {err}");
    let (code, _, err) = plan(&["--repo", "y", "--base", "main"]);
    assert_eq!(code, 1, "--base needs --head: {err}");
}

#[test]
fn pull_request_fixing_an_unknown_field_is_a_change_and_head_is_validated_strictly() {
    let r = Repo::new();
    let typo = ds("a", "agent:1.0").replace(
        "      - name: a\n",
        "      - name: a\n        imagePullPolicyy: Always\n",
    );
    r.write("deploy/a.yaml", &typo);
    r.commit("a typo the API server dropped");
    r.git(&["checkout", "-q", "-b", "pr"]);
    r.write("deploy/a.yaml", &ds("a", "agent:1.1"));
    r.commit("fix it");
    let (code, out, err) = plan_pr(&r.url(), "main", "pr", &[]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains("0 added, 0 removed, 1 changed, 0 unchanged"),
        "{out}"
    );
    // The other way round, head's unknown field is an error naming it.
    r.git(&["checkout", "-q", "-b", "pr2", "main"]);
    let (code, _, err) = plan_pr(&r.url(), "pr", "pr2", &[]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "strict decoding error: unknown field \"spec.template.spec.containers[0].imagePullPolicyy\""
        ),
        "{err}"
    );
}

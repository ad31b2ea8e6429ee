//! `daemonsync promote|pause|resume|freeze|unfreeze|abort` end to end against `sim serve`: a
//! canary rollout stops at its manual pause (apply exits 5), `status` shows it Paused,
//! `promote` lets the next apply finish it; `pause` and `abort` make apply replace no pod (exit
//! 4) until `resume`, `freeze` makes it write nothing (exit 4) until `unfreeze`; `status` shows
//! both; `abort` lists the nodes on each revision; clusters that keep no record are refused.

use crate::live::{daemonsync, text};
use crate::serve_support::ServeProcess;
use crate::sync_support::{Api, NS};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

const ZONE: &str = "topology.kubernetes.io/zone";

/// `agent` in `demo` at `image`, replacing up to two nodes at a time, with `annotations`
/// (YAML flow-map entries).
fn agent(image: &str, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: {NS}, annotations: {{{annotations}}}}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  updateStrategy: {{rollingUpdate: {{maxUnavailable: 2}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec:\n      containers: [{{name: agent, image: '{image}'}}]\n"
    )
}

/// `logger` in `demo`, without a rollout policy.
fn logger() -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: logger, namespace: {NS}}}\nspec:\n  selector: {{matchLabels: {{app: logger}}}}\n  template:\n    metadata: {{labels: {{app: logger}}}}\n    spec:\n      containers: [{{name: logger, image: 'logger:1'}}]\n"
    )
}

/// Six nodes in zones `a` and `b` running `agent:1` and `logger:1`; the manifests in
/// `DIR/git` move `agent` to `agent:2` behind a one-node canary (manual pause, the default)
/// and then one wave per zone.
fn fleet() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    std::fs::create_dir_all(path.join("running")).unwrap();
    std::fs::write(
        path.join("running/ds.yaml"),
        format!("{}---\n{}", agent("agent:1", ""), logger()),
    )
    .unwrap();
    std::fs::write(
        path.join("sim.yaml"),
        format!(
            "seed: 11\nkubelet: {{startLatency: {{fixed: 200ms}}, terminationGrace: 300ms}}\nnodes:\n  - name: 'a-{{i}}'\n    count: 3\n    labels: {{kubernetes.io/os: linux, {ZONE}: a}}\n  - name: 'b-{{i}}'\n    count: 3\n    labels: {{kubernetes.io/os: linux, {ZONE}: b}}\nrunning:\n  - manifest: running/\n"
        ),
    )
    .unwrap();
    let git = path.join("git");
    std::fs::create_dir_all(&git).unwrap();
    let policy = format!("daemonsync.io/canary: '1', daemonsync.io/waves-by: '{ZONE}'");
    std::fs::write(
        git.join("ds.yaml"),
        format!("{}---\n{}", agent("agent:2", &policy), logger()),
    )
    .unwrap();
    let git = git.display().to_string();
    (dir, git)
}

/// Both outputs, for failure messages.
fn both(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// Runs `daemonsync ARGS` and checks its exit code.
fn run(kc: &Path, args: &[&str], code: i32) -> Output {
    let out = daemonsync(kc, args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", both(&out));
    out
}

fn apply(kc: &Path, git: &str, code: i32) -> Output {
    run(
        kc,
        &[
            "apply",
            "--manifests",
            git,
            "--cluster",
            "kube",
            "--timeout",
            "90s",
        ],
        code,
    )
}

/// The nodes running a live pod of `agent` at `image`.
fn nodes_at(api: &Api, image: &str) -> Vec<String> {
    api.images_by_node("agent")
        .into_iter()
        .filter(|(_, pods)| pods.iter().any(|(i, _)| i == image))
        .map(|(node, _)| node)
        .collect()
}

/// The pods of `agent` (name and uid), sorted: equal before and after means nothing was
/// written.
fn agent_pods(api: &Api) -> Vec<(String, String)> {
    let mut pods: Vec<(String, String)> = api
        .pods("agent")
        .iter()
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap_or_default().into(),
                p["metadata"]["uid"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    pods.sort();
    pods
}

/// The `controller-revision-hash` of the live `agent` pods by node.
fn revisions(api: &Api) -> BTreeMap<String, String> {
    api.pods("agent")
        .iter()
        .filter(|p| !crate::sync_support::terminating(p))
        .map(|p| {
            (
                crate::sync_support::node_of(p).unwrap_or_default(),
                p["metadata"]["labels"]["controller-revision-hash"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

/// The ROLLOUT row of `status` for `demo/agent`. The manifests are named because `sim serve`
/// stores the record's `spec.daemonSet` with its dotted annotation keys split into nested
/// objects (`{daemonsync: {io/canary: "1"}}`), which no longer reads as a DaemonSet, so
/// `status` alone would not list `agent`; where the rollout stands still comes from the record.
/// The status of condition `type_` on a record.
fn condition(record: &serde_json::Value, type_: &str) -> String {
    record["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
        .unwrap_or("absent")
        .to_string()
}

fn status_row(kc: &Path, git: &str) -> String {
    let out = run(kc, &["status", "--cluster", "kube", "--manifests", git], 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ROLLOUT"), "{stdout}");
    stdout
        .lines()
        .find(|l| l.starts_with("demo/agent "))
        .unwrap_or_else(|| panic!("no rollout row for demo/agent:\n{stdout}"))
        .to_string()
}

#[test]
fn a_canary_waits_at_its_manual_pause_until_promote_and_then_rolls_out_everywhere() {
    let (dir, git) = fleet();
    let server = ServeProcess::start(dir.path(), &[]);
    let kc = server.kubeconfig.clone();
    let api = Api {
        url: server.url.clone(),
    };
    assert_eq!(nodes_at(&api, "agent:1").len(), 6);

    let out = apply(&kc, &git, 5);
    let canary = nodes_at(&api, "agent:2");
    assert_eq!(
        canary.len(),
        1,
        "one canary node: {:?}",
        api.images_by_node("agent")
    );
    assert_eq!(nodes_at(&api, "agent:1").len(), 5);
    assert!(
        text(&out.stdout).contains("daemonsync promote agent -n demo --cluster kube"),
        "{}",
        both(&out)
    );

    let row = status_row(&kc, &git);
    assert!(
        row.contains("Paused") && row.contains("canary") && row.contains("manual pause"),
        "{row}"
    );

    let out = run(&kc, &["promote", "agent", "-n", NS, "--cluster", "kube"], 0);
    assert_eq!(
        text(&out.stdout),
        "promoted demo/agent: the rollout continues past the canary\n",
        "{}",
        both(&out)
    );
    let record = api.record("agent");
    let promote = record["metadata"]["annotations"]["daemonsync.io/promote"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let rollout = &record["status"]["rollout"];
    assert_eq!(
        promote,
        format!(
            "{}:{}",
            rollout["revision"].as_str().unwrap(),
            rollout["stage"]
        ),
        "{record}"
    );
    // Promote writes the record only: no pod changed.
    assert_eq!(nodes_at(&api, "agent:2"), canary);

    apply(&kc, &git, 0);
    api.converged("agent", "agent:2").unwrap();
    let row = status_row(&kc, &git);
    assert!(row.contains("Complete"), "{row}");

    // Nothing left to promote.
    let out = run(&kc, &["promote", "agent", "-n", NS], 0);
    assert!(
        text(&out.stdout).contains("complete; nothing to promote"),
        "{}",
        both(&out)
    );
}

#[test]
fn pause_and_abort_replace_no_pod_and_freeze_writes_nothing_until_lifted_and_abort_lists_the_nodes()
{
    let (dir, git) = fleet();
    let server = ServeProcess::start(dir.path(), &[]);
    let kc = server.kubeconfig.clone();
    let api = Api {
        url: server.url.clone(),
    };
    apply(&kc, &git, 5);
    let canary = nodes_at(&api, "agent:2");
    assert_eq!(canary.len(), 1, "{:?}", api.images_by_node("agent"));
    let by_node = revisions(&api);
    let new = by_node[&canary[0]].clone();
    let old = by_node
        .iter()
        .find(|(n, _)| **n != canary[0])
        .map(|(_, r)| r.clone())
        .unwrap();
    assert_ne!(new, old);

    // Abort: every node holds where it is, listed by revision.
    let out = run(&kc, &["abort", "agent", "-n", NS], 0);
    let stdout = text(&out.stdout);
    let others: Vec<&String> = by_node.keys().filter(|n| **n != canary[0]).collect();
    let expected = format!(
        "aborted demo/agent at revision {new}: every node holds where it is\n  {new} (new): 1 node: {}\n  {old}: 5 nodes: {}\na new commit or `daemonsync resume agent -n demo` continues\n",
        canary[0],
        others
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(stdout, expected, "{}", both(&out));
    assert_eq!(
        api.record("agent")["metadata"]["annotations"]["daemonsync.io/abort"],
        new.as_str()
    );
    let before = agent_pods(&api);
    let out = apply(&kc, &git, 4);
    assert_eq!(
        agent_pods(&api),
        before,
        "aborted: no pod written\n{}",
        both(&out)
    );
    assert!(status_row(&kc, &git).contains("aborted"));

    let out = run(&kc, &["resume", "agent", "-n", NS], 0);
    assert_eq!(text(&out.stdout), "resumed demo/agent\n", "{}", both(&out));
    let annotations = &api.record("agent")["metadata"]["annotations"];
    assert!(
        annotations["daemonsync.io/abort"].is_null(),
        "{annotations}"
    );
    // Resumed: the rollout stands at its manual pause again.
    apply(&kc, &git, 5);
    assert_eq!(nodes_at(&api, "agent:2"), canary);

    // Pause: no pod is replaced, even after a promote, until resume.
    let out = run(&kc, &["pause", "agent", "-n", NS], 0);
    assert_eq!(
        text(&out.stdout),
        "paused demo/agent: no pod is replaced until `daemonsync resume agent -n demo`; nodes \
         without one still get the stable revision's\n",
        "{}",
        both(&out)
    );
    let out = run(&kc, &["promote", "agent", "-n", NS], 0);
    assert!(
        text(&out.stdout).contains("but its rollout is paused"),
        "{}",
        both(&out)
    );
    let before = agent_pods(&api);
    let out = apply(&kc, &git, 4);
    assert_eq!(
        agent_pods(&api),
        before,
        "paused: no pod written\n{}",
        both(&out)
    );
    assert!(status_row(&kc, &git).contains("Paused"));
    let status = text(
        &run(
            &kc,
            &["status", "--cluster", "kube", "--manifests", &git],
            0,
        )
        .stdout,
    );
    let held = status
        .lines()
        .skip_while(|l| !l.starts_with("HELD"))
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert!(
        held.starts_with("demo/agent")
            && held.contains("paused")
            && held.contains("new nodes still get revision"),
        "{status}"
    );

    // Freeze on top: nothing at all is written until unfreeze; the pause stays.
    let out = run(&kc, &["freeze", "agent", "-n", NS], 0);
    assert_eq!(
        text(&out.stdout),
        "froze demo/agent: nothing is written for it until `daemonsync unfreeze agent -n demo`\n",
        "{}",
        both(&out)
    );
    let out = apply(&kc, &git, 4);
    assert_eq!(
        agent_pods(&api),
        before,
        "frozen: no pod written\n{}",
        both(&out)
    );
    assert!(
        both(&out).contains("frozen, nothing written"),
        "{}",
        both(&out)
    );
    let status = text(
        &run(
            &kc,
            &["status", "--cluster", "kube", "--manifests", &git],
            0,
        )
        .stdout,
    );
    assert!(
        status.lines().any(|l| l.starts_with("demo/agent")
            && l.contains("frozen")
            && l.contains("nothing is written")),
        "{status}"
    );
    assert_eq!(condition(&api.record("agent"), "Frozen"), "True");
    let out = run(&kc, &["unfreeze", "agent", "-n", NS], 0);
    assert_eq!(text(&out.stdout), "unfroze demo/agent\n", "{}", both(&out));
    let annotations = &api.record("agent")["metadata"]["annotations"];
    assert!(
        annotations["daemonsync.io/frozen"].is_null(),
        "{annotations}"
    );
    assert_eq!(annotations["daemonsync.io/paused"], "true");
    apply(&kc, &git, 4);
    assert_eq!(condition(&api.record("agent"), "Frozen"), "False");

    run(&kc, &["resume", "agent", "-n", NS], 0);
    let annotations = &api.record("agent")["metadata"]["annotations"];
    assert!(
        annotations["daemonsync.io/paused"].is_null(),
        "{annotations}"
    );
    apply(&kc, &git, 0);
    api.converged("agent", "agent:2").unwrap();
}

#[test]
fn wrong_names_namespaces_policies_and_clusters_are_one_line_saying_what_to_do() {
    let (dir, git) = fleet();
    let server = ServeProcess::start(dir.path(), &[]);
    let kc = server.kubeconfig.clone();
    apply(&kc, &git, 5);

    let one_line = |out: &Output| {
        let err = text(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{}", both(out));
        assert!(err.starts_with("error: "), "{}", both(out));
        assert!(out.stdout.is_empty(), "{}", both(out));
        err
    };

    // The namespace defaults to the context's (none here: `default`).
    let out = run(&kc, &["promote", "agent"], 1);
    let err = one_line(&out);
    assert!(
        err.contains("no ManagedDaemonSet default/agent") && err.contains("kubectl get mds -A"),
        "{err}"
    );
    let out = run(&kc, &["abort", "nothing", "-n", NS], 1);
    let err = one_line(&out);
    assert!(err.contains("demo/nothing"), "{err}");

    let out = run(&kc, &["promote", "logger", "-n", NS], 1);
    let err = one_line(&out);
    assert!(
        err.contains("logger has no progressive rollout (no daemonsync.io/ rollout annotations)"),
        "{err}"
    );

    let out = run(&kc, &["pause", "Not/A name", "-n", NS], 1);
    let err = one_line(&out);
    assert!(err.contains("invalid NAME"), "{err}");

    let sim = format!("sim:{}", dir.path().join("sim.yaml").display());
    let out = run(&kc, &["promote", "agent", "-n", NS, "--cluster", &sim], 1);
    let err = one_line(&out);
    assert!(
        err.contains("needs a live cluster") && err.contains("apply --auto-promote"),
        "{err}"
    );
    for cluster in ["snapshot:x.yaml", "none"] {
        let out = run(&kc, &["resume", "agent", "-n", NS, "-c", cluster], 1);
        let err = one_line(&out);
        assert!(err.contains("--cluster kube"), "{err}");
    }
    let out = run(
        &kc,
        &["pause", "agent", "-n", NS, "--cluster", "kube:elsewhere"],
        1,
    );
    let err = one_line(&out);
    assert!(err.contains("no context \"elsewhere\""), "{err}");

    // Nothing was written by any of them.
    let record = Api {
        url: server.url.clone(),
    }
    .record("agent");
    let annotations = &record["metadata"]["annotations"];
    for key in [
        "daemonsync.io/promote",
        "daemonsync.io/paused",
        "daemonsync.io/abort",
    ] {
        assert!(annotations[key].is_null(), "{key}: {record}");
    }

    for verb in ["promote", "pause", "resume", "freeze", "unfreeze", "abort"] {
        let out = run(&kc, &[verb, "--help"], 0);
        let help = text(&out.stdout);
        assert!(
            help.contains("Examples:")
                && help.contains(&format!("daemonsync {verb} agent -n demo"))
                && help.contains("--namespace")
                && help.contains("Exit status:"),
            "{help}"
        );
    }
}

//! `daemonsync sync` end to end (issue 13): a fleet served by `sim serve`, a repository served
//! by `git daemon` on 127.0.0.1, and the daemon as a child process with a long `--interval`,
//! so that only a webhook explains a fetch. Pushed commits roll out; an image the sim fails
//! halts its DaemonSet alone (condition, event, metric) and a fix recovers it; forged webhooks
//! fetch nothing; and bad input (a wrong secret file, a port in use, a repository that
//! disappears, a rewritten branch, a commit deleting every manifest) is reported clearly
//! while the last good state stays in effect.

use crate::serve_support::ServeProcess;
use crate::support::{GitDaemon, Repo, daemonsync, free_port};
use crate::sync_support::{
    Api, NS, Sync, condition, daemonset, daemonset_with, fleet, git_available, name, sign,
    wait_condition, wait_for, wait_until,
};
use std::time::{Duration, Instant};

const SECRET: &str = "It's a Secret to Everybody";
const NODES: usize = 10;
/// How long new pods may stay unavailable before their DaemonSet halts.
const PROGRESS_DEADLINE: &str = "6s";

/// A fleet running `agent:1` and `logger:1` on [`NODES`] nodes, where `agent:bad` never
/// pulls; and the same two DaemonSets committed on `main` of a repository served by
/// `git daemon` (under `ds/`, beside a README that is not a manifest).
struct World {
    sim: tempfile::TempDir,
    server: ServeProcess,
    repo: Repo,
    git: GitDaemon,
    api: Api,
    first: String,
}

impl World {
    fn new() -> World {
        let running = format!(
            "{}---\n{}",
            daemonset("agent", "agent:1"),
            daemonset("logger", "logger:1")
        );
        World::with(
            &running,
            "failures:\n  images:\n    - {image: 'agent:bad', reason: ErrImagePull}\n",
        )
    }

    /// The world of [`World::new`], with daemonsync's pods of `running` and `sim_extra` in
    /// the sim file.
    fn with(running: &str, sim_extra: &str) -> World {
        let sim = fleet(NODES, running, sim_extra);
        let server = ServeProcess::start(sim.path(), &[]);
        let repo = Repo::new();
        repo.write("ds/README.md", "The DaemonSets of the demo fleet.\n");
        let first = commit(&repo, "agent:1", "logger:1", "the fleet as it runs");
        let git = GitDaemon::serve(repo.dir.path());
        let api = Api {
            url: server.url.clone(),
        };
        World {
            sim,
            server,
            repo,
            git,
            api,
            first,
        }
    }

    fn url(&self) -> String {
        self.git.url("repo")
    }

    /// `sync` following `main`, with the webhook, a 10-minute poll and `extra` flags.
    fn start(&self, extra: &[&str]) -> Sync {
        let secret = self.sim.path().join("webhook-secret");
        std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
        let url = self.url();
        let mut args = vec![
            "--repo",
            &url,
            "--path",
            "ds",
            "--ref",
            "main",
            "--interval",
            "10m",
            "--progress-deadline",
            PROGRESS_DEADLINE,
            "--webhook-secret-file",
            secret.to_str().unwrap(),
        ];
        args.extend(extra);
        let sync = Sync::start(&self.server.kubeconfig, self.sim.path(), "sync", &args);
        sync.wait_ready();
        sync
    }
}

/// Commits `agent` and `logger` at the images given; returns the commit id.
fn commit(repo: &Repo, agent: &str, logger: &str, msg: &str) -> String {
    repo.write("ds/agent.yaml", &daemonset("agent", agent));
    repo.write("ds/logger.yaml", &daemonset("logger", logger));
    repo.commit(msg)
}

/// The webhook GitHub would send for a push to `main`, signed with the right secret.
fn push(sync: &Sync) {
    let body = crate::sync_support::push_body("refs/heads/main");
    let code = sync.push_webhook("refs/heads/main", Some(&sign(SECRET.as_bytes(), &body)));
    assert_eq!(
        code,
        202,
        "a signed push to main is accepted\n{}",
        sync.tail()
    );
}

/// `daemonsync_source_info{…}`'s commit label.
fn commit_in_effect(sync: &Sync) -> Option<String> {
    let text = sync.metrics();
    let line = text
        .lines()
        .find(|l| l.starts_with("daemonsync_source_info{"))?;
    let at = line.find("commit=\"")? + "commit=\"".len();
    Some(line[at..].split('"').next()?.to_string())
}

fn halted(sync: &Sync, ds: &str) -> Option<f64> {
    sync.metric(&format!(
        "daemonsync_rollout_halted{{namespace=\"{NS}\",daemonset=\"{ds}\"}}"
    ))
}

fn wait_converged(world: &World, sync: &Sync, app: &str, image: &str) {
    wait_for(&format!("{app} converged on {image}"), 60, &[sync], || {
        world.api.converged(app, image)
    });
}

#[test]
fn a_pushed_image_converges_a_failing_one_halts_only_its_daemonset_and_a_fix_recovers() {
    if !git_available() {
        return;
    }
    let world = World::new();
    let sync = world.start(&[]);

    // A commit changing an image rolls out to every node.
    commit(&world.repo, "agent:2", "logger:1", "agent 2");
    push(&sync);
    wait_converged(&world, &sync, "agent", "agent:2");
    let updated = format!(
        "daemonsync_daemonset_status_updated_number_scheduled{{namespace=\"{NS}\",daemonset=\"agent\"}}"
    );
    wait_until(
        "the metrics show agent updated everywhere",
        10,
        &[&sync],
        || (sync.metric(&updated) == Some(NODES as f64)).then_some(()),
    );
    assert_eq!(halted(&sync, "agent"), Some(0.0), "{}", sync.metrics());

    // A commit with an image the sim cannot pull halts agent; logger, changed in the same
    // commit, still converges.
    commit(&world.repo, "agent:bad", "logger:2", "agent bad, logger 2");
    push(&sync);
    wait_until(
        "agent halted (daemonsync_rollout_halted 1)",
        60,
        &[&sync],
        || (halted(&sync, "agent") == Some(1.0)).then_some(()),
    );
    wait_converged(&world, &sync, "logger", "logger:2");
    assert_eq!(halted(&sync, "logger"), Some(0.0), "{}", sync.metrics());

    let (_, message) = wait_condition(&world.api, &sync, "agent", "Halted");
    assert!(
        message.contains("ErrImagePull"),
        "the condition says why: {message}"
    );
    let logger = world.api.record("logger");
    assert!(
        condition(&logger, "Halted").is_none_or(|(s, _)| s == "False"),
        "{logger:#}"
    );
    // The event follows the status write of the same pass.
    let (events, halt) = wait_until("a RolloutHalted event", 30, &[&sync], || {
        let events = world.api.events();
        let halt = events
            .iter()
            .find(|e| e["reason"] == "RolloutHalted")?
            .clone();
        Some((events, halt))
    });
    assert_eq!(halt["type"], "Warning");
    assert_eq!(halt["involvedObject"]["name"], "agent");
    assert!(
        halt["message"]
            .as_str()
            .unwrap_or_default()
            .contains("ErrImagePull"),
        "{halt:#}"
    );
    assert!(
        events
            .iter()
            .all(|e| e["reason"] != "RolloutHalted" || e["involvedObject"]["name"] == "agent"),
        "only agent halted: {events:#?}"
    );
    assert!(
        sync.log().contains("rollout halted") && sync.log().contains("demo/agent"),
        "the log says which DaemonSet halted\n{}",
        sync.tail()
    );
    // The halt holds the rest of the fleet on the good image: at most maxUnavailable (2)
    // nodes got the failing one, every other node still runs a ready agent:2.
    let by_node = world.api.images_by_node("agent");
    let bad: Vec<&String> = by_node
        .iter()
        .filter(|(_, pods)| pods.iter().any(|(image, _)| image == "agent:bad"))
        .map(|(n, _)| n)
        .collect();
    assert!(!bad.is_empty() && bad.len() <= 2, "{by_node:?}");
    let good = by_node
        .values()
        .filter(|pods| pods.as_slice() == [("agent:2".to_string(), true)])
        .count();
    assert_eq!(good + bad.len(), NODES, "{by_node:?}");

    // A fix recovers: the halt clears and every node runs the fixed image.
    commit(
        &world.repo,
        "agent:3",
        "logger:2",
        "agent 3 fixes agent bad",
    );
    push(&sync);
    wait_converged(&world, &sync, "agent", "agent:3");
    wait_until(
        "the halt cleared (daemonsync_rollout_halted 0)",
        10,
        &[&sync],
        || (halted(&sync, "agent") == Some(0.0)).then_some(()),
    );
    let record = world.api.record("agent");
    assert!(
        condition(&record, "Halted").is_none_or(|(s, _)| s == "False"),
        "{record:#}"
    );
    world.api.converged("logger", "logger:2").unwrap();

    let status = sync.terminate();
    assert_eq!(status.code(), Some(0), "{}", sync.tail());
    assert!(sync.log().contains("stopped"), "{}", sync.tail());
}

#[test]
fn a_forged_webhook_gets_401_and_no_fetch_while_a_signed_one_fetches_within_a_second() {
    if !git_available() {
        return;
    }
    let world = World::new();
    let sync = world.start(&[]);
    let first = world.first[..12].to_string();
    assert_eq!(commit_in_effect(&sync).as_deref(), Some(first.as_str()));
    // The source is named by its URL, in the metric and in the log.
    let info = format!(
        "daemonsync_source_info{{repository=\"{}\",commit=\"{first}\"}}",
        world.url()
    );
    assert_eq!(sync.metric(&info), Some(1.0), "{}", sync.metrics());
    assert!(sync.log().contains(&world.url()), "{}", sync.tail());

    let second = commit(&world.repo, "agent:2", "logger:1", "agent 2");
    let body = crate::sync_support::push_body("refs/heads/main");
    assert_eq!(sync.push_webhook("refs/heads/main", None), 401, "unsigned");
    let forged = sign(b"not the secret", &body);
    assert_eq!(
        sync.push_webhook("refs/heads/main", Some(&forged)),
        401,
        "forged"
    );
    let mut tampered = sign(SECRET.as_bytes(), &body).into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(
        sync.push_webhook("refs/heads/main", Some(&tampered)),
        401,
        "one bit off"
    );
    let other = crate::sync_support::push_body("refs/heads/feature");
    let code = sync.push_webhook("refs/heads/feature", Some(&sign(SECRET.as_bytes(), &other)));
    assert_eq!(
        code, 204,
        "a push to another branch is acknowledged, not fetched"
    );

    // Nothing fetched: the old commit stays in effect and nothing was written.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        commit_in_effect(&sync).as_deref(),
        Some(first.as_str()),
        "{}",
        sync.tail()
    );
    assert!(
        !sync.log().contains(&second[..12]),
        "no fetch saw the new commit\n{}",
        sync.tail()
    );
    let creates = "daemonsync_pod_writes_total{verb=\"create\",result=\"success\"}";
    assert!(
        sync.metric(creates).unwrap_or(0.0) == 0.0,
        "{}",
        sync.metrics()
    );
    world.api.converged("agent", "agent:1").unwrap();
    let refused = sync.log().matches("webhook delivery refused").count();
    assert_eq!(refused, 3, "each refusal is logged\n{}", sync.tail());
    assert!(!sync.log().contains(SECRET), "the secret is never logged");

    // Signed: fetched within a second.
    let sent = Instant::now();
    push(&sync);
    wait_until("the pushed commit in effect", 5, &[&sync], || {
        (commit_in_effect(&sync).as_deref() == Some(&second[..12])).then_some(())
    });
    let took = sent.elapsed();
    eprintln!("fetched {took:?} after the signed webhook");
    assert!(
        took < Duration::from_secs(1),
        "fetched {took:?} after the webhook"
    );
    wait_converged(&world, &sync, "agent", "agent:2");
}

#[test]
fn a_vanished_repository_a_rewritten_branch_and_a_commit_deleting_every_manifest_keep_the_last_good_state()
 {
    if !git_available() {
        return;
    }
    let world = World::new();
    // With --prune, a source that rendered nothing must not be read as "delete everything".
    let sync = world.start(&["--prune"]);
    let first = world.first[..12].to_string();
    let errors = || sync.metric("daemonsync_source_errors_total");
    let still_good = |after: &str| {
        assert_eq!(
            commit_in_effect(&sync).as_deref(),
            Some(first.as_str()),
            "after {after}"
        );
        for app in ["agent", "logger"] {
            let converged = world.api.converged(app, &format!("{app}:1"));
            assert!(
                converged.is_ok(),
                "after {after}: {converged:?}\n{}",
                sync.tail()
            );
            let record = world.api.record(app);
            let (status, message) = condition(&record, "SourceError")
                .unwrap_or_else(|| panic!("after {after}: no SourceError on {app}: {record:#}"));
            assert_eq!(status, "True", "after {after}: {record:#}");
            assert!(!message.is_empty());
        }
        assert_eq!(sync.get("/healthz").map(|r| r.0), Some(200));
        assert_eq!(sync.get("/readyz").map(|r| r.0), Some(200));
        assert!(sync.exited().is_none(), "{}", sync.tail());
        let deletes = "daemonsync_pod_writes_total{verb=\"delete\",result=\"success\"}";
        assert_eq!(
            sync.metric(deletes).unwrap_or(0.0),
            0.0,
            "nothing pruned after {after}"
        );
    };
    let reported = |n: f64, what: &str, says: &[&str]| {
        wait_until(&format!("{what} reported"), 10, &[&sync], || {
            (errors() == Some(n)).then_some(())
        });
        let log = sync.log();
        let line = log
            .lines()
            .rfind(|l| l.contains("cannot use the source"))
            .unwrap_or_else(|| panic!("{what}: no error line\n{}", sync.tail()));
        assert!(
            line.contains("the last good state stays in effect and nothing is pruned"),
            "{line}"
        );
        assert!(
            line.contains(&first),
            "{what}: names the commit in effect: {line}"
        );
        for s in says {
            assert!(line.contains(s), "{what}: the error says {s:?}: {line}");
        }
    };

    // A commit deleting every manifest.
    world.repo.remove("ds/agent.yaml").remove("ds/logger.yaml");
    world.repo.commit("delete every manifest");
    push(&sync);
    reported(
        1.0,
        "a commit deleting every manifest",
        &["no manifest file"],
    );
    std::thread::sleep(Duration::from_millis(500));
    still_good("a commit deleting every manifest");
    let (_, message) = wait_condition(&world.api, &sync, "agent", "SourceError");
    assert!(message.contains("no manifest file"), "{message}");

    // The branch force-pushed to an unrelated history.
    world.repo.git(&["checkout", "-q", "--orphan", "rewritten"]);
    world.repo.git(&["rm", "-q", "-r", "-f", "."]);
    commit(&world.repo, "agent:9", "logger:9", "an unrelated history");
    world.repo.git(&["branch", "-q", "-M", "rewritten", "main"]);
    push(&sync);
    reported(2.0, "a force-push", &["rewritten", "does not descend from"]);
    still_good("a force-push");

    // The repository disappears.
    let path = world.repo.path();
    let moved = world.repo.dir.path().join("moved");
    std::fs::rename(&path, &moved).unwrap();
    push(&sync);
    reported(
        3.0,
        "a vanished repository",
        &["cannot fetch", &world.url()],
    );
    still_good("a vanished repository");

    // Back, and a new commit on the good history: followed again, and the errors clear.
    std::fs::rename(&moved, &path).unwrap();
    world.repo.git(&["reset", "-q", "--hard", &world.first]);
    let fixed = commit(
        &world.repo,
        "agent:2",
        "logger:1",
        "agent 2, on the good history",
    );
    push(&sync);
    wait_converged(&world, &sync, "agent", "agent:2");
    assert_eq!(commit_in_effect(&sync).as_deref(), Some(&fixed[..12]));
    wait_until("SourceError cleared", 10, &[&sync], || {
        let record = world.api.record("agent");
        condition(&record, "SourceError")
            .is_none_or(|(s, _)| s == "False")
            .then_some(())
    });
    world.api.converged("logger", "logger:1").unwrap();
    assert_eq!(sync.terminate().code(), Some(0), "{}", sync.tail());
}

/// `sync` with `args`, expected to refuse to start: (exit code, stderr).
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let manifests = tempfile::tempdir().unwrap();
    std::fs::write(
        manifests.path().join("ds.yaml"),
        daemonset("agent", "agent:1"),
    )
    .unwrap();
    let out = daemonsync()
        .arg("sync")
        .args(["--manifests", manifests.path().to_str().unwrap()])
        .args(args)
        .env("KUBECONFIG", manifests.path().join("no-such-kubeconfig"))
        .env_remove("DAEMONSYNC_WEBHOOK_SECRET")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code(), stderr)
}

#[test]
fn a_wrong_webhook_secret_file_path_is_reported_and_sync_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("webhook-secret");
    let listen = format!("127.0.0.1:{}", free_port());
    let (code, stderr) = refused(&[
        "--webhook-secret-file",
        missing.to_str().unwrap(),
        "--listen",
        &listen,
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    let want = format!(
        "the webhook secret file {} does not exist: create it with the webhook's secret, or fix --webhook-secret-file",
        missing.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[test]
fn a_port_in_use_is_reported_and_sync_does_not_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, stderr) = refused(&["--listen", &addr]);
    assert_eq!(code, Some(1), "{stderr}");
    let want = format!("cannot listen on {addr}: it is in use; choose another with --listen");
    assert!(stderr.contains(&want), "{stderr}");
    assert!(!stderr.contains("started"), "nothing started: {stderr}");
    drop(taken);
}

/// Sets (`Some("true")`) or removes (`None`) `daemonsync.io/paused` on a record, as
/// `kubectl annotate` does.
fn set_paused(world: &World, ds: &str, value: Option<&str>) {
    annotate(world, ds, "daemonsync.io/paused", value);
}

/// Sets (`Some`) or removes (`None`) an annotation of a record, as `kubectl annotate` does.
fn annotate(world: &World, ds: &str, key: &str, value: Option<&str>) {
    let url = format!(
        "{}/apis/daemonsync.io/v1alpha1/namespaces/{NS}/manageddaemonsets/{ds}",
        world.server.url
    );
    let body = serde_json::json!({"metadata": {"annotations": {key: value}}});
    let (code, text) = crate::sync_support::request(
        "PATCH",
        &url,
        &[("content-type", "application/merge-patch+json")],
        &body.to_string(),
    )
    .expect("the API answers");
    assert_eq!(code, 200, "{text}");
}

#[test]
fn an_invalid_daemonset_keeps_its_last_good_version_and_a_paused_one_waits_for_its_annotation() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let world = World::new();
    let sync = world.start(&[]);
    wait_for("the records exist", 30, &[&sync], || {
        let records = world.api.items(&format!(
            "/apis/daemonsync.io/v1alpha1/namespaces/{NS}/manageddaemonsets"
        ));
        if records.len() == 2 {
            Ok(())
        } else {
            Err(format!("{} records", records.len()))
        }
    });
    set_paused(&world, "logger", Some("true"));
    // agent becomes invalid (a container name the API server refuses), logger moves on.
    world.repo.write(
        "ds/agent.yaml",
        &daemonset("agent", "agent:2").replace("name: agent, image", "name: Bad_Name, image"),
    );
    world
        .repo
        .write("ds/logger.yaml", &daemonset("logger", "logger:2"));
    world.repo.commit("agent invalid, logger:2");
    push(&sync);
    wait_for(
        "agent's record says why its commit is not used",
        30,
        &[&sync],
        || match condition(&world.api.record("agent"), "SourceError") {
            Some((s, m)) if s == "True" && m.contains("containers[0].name") => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    wait_for(
        "logger's record shows the pause",
        30,
        &[&sync],
        || match condition(&world.api.record("logger"), "Paused") {
            Some((s, _)) if s == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    // Nothing is written for either while they wait: the fleet runs what it ran.
    std::thread::sleep(Duration::from_secs(2));
    world.api.converged("agent", "agent:1").unwrap();
    world.api.converged("logger", "logger:1").unwrap();
    assert_eq!(
        sync.metric("daemonsync_pod_writes_total{verb=\"create\",result=\"success\"}")
            .unwrap_or(0.0),
        0.0,
        "{}",
        sync.tail()
    );
    // Resumed: logger rolls out; fixed: agent too, and its SourceError clears.
    set_paused(&world, "logger", None);
    wait_converged(&world, &sync, "logger", "logger:2");
    commit(&world.repo, "agent:2", "logger:2", "agent fixed");
    push(&sync);
    wait_converged(&world, &sync, "agent", "agent:2");
    wait_for(
        "agent's SourceError clears",
        30,
        &[&sync],
        || match condition(&world.api.record("agent"), "SourceError") {
            Some((s, _)) if s == "False" => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    assert!(sync.terminate().success());
}

/// Whether a live pod of `app` is bound to `node`, or aimed at it (daemon pods name their
/// node in a `matchFields` term until the scheduler binds them).
fn runs_on(world: &World, app: &str, node: &str) -> bool {
    world.api.pods(app).iter().any(|p| {
        let aimed = &p["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
            ["matchFields"][0]["values"][0];
        p["metadata"]["deletionTimestamp"].is_null()
            && (p["spec"]["nodeName"] == node || aimed == node)
    })
}

#[test]
fn the_daemon_serves_a_node_joining_a_paused_daemonset_and_writes_nothing_for_a_frozen_one() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let world = World::new();
    let sync = world.start(&[]);
    wait_for("the records exist", 30, &[&sync], || {
        let records = world.api.items(&format!(
            "/apis/daemonsync.io/v1alpha1/namespaces/{NS}/manageddaemonsets"
        ));
        if records.len() == 2 {
            Ok(())
        } else {
            Err(format!("{} records", records.len()))
        }
    });
    set_paused(&world, "agent", Some("true"));
    annotate(&world, "logger", "daemonsync.io/frozen", Some("true"));
    let gauge = |name: &str, ds: &str| {
        sync.metric(&format!(
            "daemonsync_rollout_{name}{{namespace=\"{NS}\",daemonset=\"{ds}\"}}"
        ))
    };
    wait_for(
        "the gauges show the pause and the freeze",
        30,
        &[&sync],
        || match (gauge("paused", "agent"), gauge("frozen", "logger")) {
            (Some(p), Some(f)) if p == 1.0 && f == 1.0 => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    assert_eq!(gauge("frozen", "agent"), Some(0.0));
    assert_eq!(gauge("paused", "logger"), Some(0.0));

    // A node joins: the paused agent serves it, the frozen logger writes nothing.
    create(
        &world.server.url,
        "/api/v1/nodes",
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late-1"}}),
    );
    wait_for("the paused agent serves late-1", 30, &[&sync], || {
        if runs_on(&world, "agent", "late-1") {
            Ok(())
        } else {
            Err("no agent pod there".to_string())
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(!runs_on(&world, "logger", "late-1"), "{}", sync.tail());
    match condition(&world.api.record("logger"), "Frozen") {
        Some((s, m)) => assert!(s == "True" && m.contains("nothing is written"), "{m}"),
        None => panic!("no Frozen condition: {}", world.api.record("logger")),
    }

    // Unfrozen, the logger serves it too; resumed, the gauges go back to 0.
    annotate(&world, "logger", "daemonsync.io/frozen", None);
    set_paused(&world, "agent", None);
    wait_for("the unfrozen logger serves late-1", 30, &[&sync], || {
        if runs_on(&world, "logger", "late-1") {
            Ok(())
        } else {
            Err("no logger pod there".to_string())
        }
    });
    wait_for("the gauges clear", 30, &[&sync], || {
        match (gauge("paused", "agent"), gauge("frozen", "logger")) {
            (Some(p), Some(f)) if p == 0.0 && f == 0.0 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    assert!(sync.terminate().success());
}

/// POSTs `body` (JSON) to the API at `path`; returns the created object.
fn create(url: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let (code, text) = crate::sync_support::request(
        "POST",
        &format!("{url}{path}"),
        &[("content-type", "application/json")],
        &body.to_string(),
    )
    .expect("the API answers");
    assert_eq!(code, 201, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The uids of the live pods of `app`, sorted.
fn pod_uids(world: &World, app: &str) -> Vec<String> {
    let mut uids: Vec<String> = world
        .api
        .pods(app)
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            p["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    uids.sort();
    uids
}

#[test]
fn a_builtin_daemonset_joining_the_source_is_blocked_until_adopted_then_taken_over_without_a_restart()
 {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    // agent is daemonsync's; logger is created through the API as an apps/v1 DaemonSet, and
    // the simulated cluster's built-in DaemonSet controller runs its pods.
    let world = World::with(&daemonset("agent", "agent:1"), "");
    let (server, api) = (&world.server, &world.api);
    let live: serde_json::Value = serde_saphyr::from_str(&daemonset("logger", "logger:1")).unwrap();
    create(
        &server.url,
        &format!("/apis/apps/v1/namespaces/{NS}/daemonsets"),
        live,
    );
    wait_for("the built-in controller runs logger", 30, &[], || {
        api.converged("logger", "logger:1")
    });
    let before = pod_uids(&world, "logger");
    world.repo.remove("ds/logger.yaml");
    world.repo.commit("agent only");
    let sync = world.start(&[]);

    // logger joins the source with neither choice: blocked, nothing written for its pods.
    world
        .repo
        .write("ds/logger.yaml", &daemonset("logger", "logger:1"));
    world.repo.commit("manage logger");
    push(&sync);
    let records = format!("/apis/daemonsync.io/v1alpha1/namespaces/{NS}/manageddaemonsets");
    wait_for("logger blocked on its record", 60, &[&sync], || {
        let record = api
            .items(&records)
            .into_iter()
            .find(|r| name(r) == "logger")
            .ok_or("no record yet")?;
        match condition(&record, "Blocked") {
            Some((s, m)) if s == "True" && m.contains("daemonsync.io/adopt") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    // The event follows the status write of the same pass.
    wait_until("a Blocked event on the record", 30, &[&sync], || {
        api.events()
            .iter()
            .any(|e| e["reason"] == "Blocked" && e["involvedObject"]["name"] == "logger")
            .then_some(())
    });
    assert_eq!(pod_uids(&world, "logger"), before, "no logger pod touched");
    let daemonset_path = format!("/apis/apps/v1/namespaces/{NS}/daemonsets/logger");
    assert_eq!(api.status_of(&daemonset_path), Some(200));

    // With daemonsync.io/adopt the DaemonSet is taken over: the apps/v1 DaemonSet deleted
    // with orphan propagation, its pods claimed by the record and kept running.
    world.repo.write(
        "ds/logger.yaml",
        &daemonset("logger", "logger:1").replace(
            &format!("metadata: {{name: logger, namespace: {NS}}}"),
            &format!(
                "metadata: {{name: logger, namespace: {NS}, annotations: {{daemonsync.io/adopt: 'true'}}}}"
            ),
        ),
    );
    world.repo.commit("take logger over");
    push(&sync);
    wait_for("logger taken over", 60, &[&sync], || {
        if api.status_of(&daemonset_path) != Some(404) {
            return Err("the apps/v1 DaemonSet is still there".into());
        }
        api.converged("logger", "logger:1")?;
        let owned = api
            .pods("logger")
            .iter()
            .filter(|p| p["metadata"]["ownerReferences"][0]["kind"] == "ManagedDaemonSet")
            .count();
        if owned == NODES {
            Ok(())
        } else {
            Err(format!("{owned} of {NODES} pods are owned by the record"))
        }
    });
    assert_eq!(
        pod_uids(&world, "logger"),
        before,
        "the same pods, none restarted"
    );
    assert!(sync.terminate().success());
}

/// The image of each live pod of `app`.
fn images(world: &World, app: &str) -> Vec<String> {
    world
        .api
        .pods(app)
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn sync_holds_a_canary_at_its_manual_pause_until_promoted() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let world = World::new();
    let sync = world.start(&[]);
    wait_converged(&world, &sync, "agent", "agent:1");
    let canary = daemonset("agent", "agent:2").replace(
        "metadata: {name: agent, namespace: demo}",
        "metadata: {name: agent, namespace: demo, annotations: {daemonsync.io/canary: '2'}}",
    );
    assert!(canary.contains("daemonsync.io/canary"), "{canary}");
    world.repo.write("ds/agent.yaml", &canary);
    world.repo.commit("agent:2 on two canary nodes first");
    push(&sync);
    wait_for("the canary waits at its pause", 60, &[&sync], || {
        let record = world.api.record("agent");
        let phase = &record["status"]["rollout"]["phase"];
        let new = images(&world, "agent")
            .iter()
            .filter(|i| *i == "agent:2")
            .count();
        if phase == "Paused" && new == 2 {
            Ok(())
        } else {
            Err(format!("phase {phase}, {new} pods on agent:2"))
        }
    });
    let record = world.api.record("agent");
    assert!(
        record["status"]["rollout"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("manual pause after the canary")),
        "{}",
        record["status"]
    );
    // Held: nothing more moves while it waits.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        images(&world, "agent")
            .iter()
            .filter(|i| *i == "agent:2")
            .count(),
        2
    );
    // Promote (what `daemonsync promote` writes): the rest follows.
    let revision = record["status"]["rollout"]["revision"].as_str().unwrap();
    let promote = format!("{revision}:0");
    annotate(&world, "agent", "daemonsync.io/promote", Some(&promote));
    wait_converged(&world, &sync, "agent", "agent:2");
    wait_for("the record says Complete", 30, &[&sync], || {
        match world.api.record("agent")["status"]["rollout"]["phase"].as_str() {
            Some("Complete") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    assert!(sync.terminate().success());
}

#[test]
fn with_sync_running_apply_of_another_template_is_refused_and_force_pauses_the_daemon() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let world = World::new();
    let api = &world.api;
    let sync = world.start(&[]);
    // The daemon names itself on the records it drives.
    wait_for("the daemon's name on agent's record", 30, &[&sync], || {
        let writer = &api.record("agent")["spec"]["source"]["writer"];
        if writer["command"] == "sync" {
            Ok(())
        } else {
            Err(format!("writer {writer}"))
        }
    });
    let local = tempfile::tempdir().unwrap();
    std::fs::write(
        local.path().join("agent.yaml"),
        daemonset("agent", "agent:9"),
    )
    .unwrap();
    let apply = |extra: &[&str]| {
        let mut args = vec![
            "apply",
            "--manifests",
            local.path().to_str().unwrap(),
            "--cluster",
            "kube",
            "--timeout",
            "60s",
        ];
        args.extend(extra);
        crate::live::daemonsync(&world.server.kubeconfig, &args)
    };

    // Refused: nothing written, exit 1, the daemon and the way out named.
    let refused = apply(&[]);
    let out = format!(
        "{}{}",
        crate::live::text(&refused.stdout),
        crate::live::text(&refused.stderr)
    );
    assert_eq!(refused.status.code(), Some(1), "{out}");
    for part in [
        "the daemonsync sync daemon",
        "at commit",
        "--force",
        "daemonsync pause agent -n demo",
    ] {
        assert!(out.contains(part), "{part:?} in:\n{out}");
    }
    assert!(
        images(&world, "agent").iter().all(|i| i == "agent:1"),
        "no pod written: {:?}",
        images(&world, "agent")
    );
    assert_eq!(
        api.record("agent")["spec"]["source"]["writer"]["command"],
        "sync"
    );

    // --force: the record paused for the daemon (an event says so), the rollout completes,
    // and the daemon leaves it alone afterwards.
    let forced = apply(&["--force"]);
    assert_eq!(
        forced.status.code(),
        Some(0),
        "{}{}",
        crate::live::text(&forced.stdout),
        crate::live::text(&forced.stderr)
    );
    api.converged("agent", "agent:9").unwrap();
    let record = api.record("agent");
    assert_eq!(
        record["metadata"]["annotations"]["daemonsync.io/paused"],
        "true"
    );
    assert_eq!(record["spec"]["source"]["writer"]["command"], "apply");
    assert!(
        api.events()
            .iter()
            .any(|e| e["reason"] == "Forced" && e["involvedObject"]["name"] == "agent"),
        "a Forced event on the record"
    );
    push(&sync);
    std::thread::sleep(Duration::from_secs(2));
    api.converged("agent", "agent:9").unwrap();
    api.converged("logger", "logger:1").unwrap();
    assert!(sync.terminate().success());
}

#[test]
fn a_rollout_held_by_not_ready_nodes_is_marked_stalled_on_its_record_and_in_the_metrics() {
    if !git_available() {
        return;
    }
    // Two NotReady nodes beside the Ready ones: once agent tolerates them, its pods there can
    // never become available, and they use its whole unavailability budget (2).
    let running = format!(
        "{}---\n{}",
        daemonset("agent", "agent:1"),
        daemonset("logger", "logger:1")
    );
    let world = World::with(&running, "  - {name: 'sick-{i}', count: 2, ready: false}\n");
    let sync = world.start(&[]);
    let stalled = |ds: &str| {
        sync.metric(&format!(
            "daemonsync_rollout_stalled{{namespace=\"{NS}\",daemonset=\"{ds}\"}}"
        ))
    };
    wait_until("agent's stalled gauge is exposed, 0", 30, &[&sync], || {
        (stalled("agent") == Some(0.0)).then_some(())
    });

    let tolerant = daemonset_with(
        "agent",
        "agent:2",
        "      tolerations: [{operator: Exists}]\n",
    );
    world.repo.write("ds/agent.yaml", &tolerant);
    world
        .repo
        .commit("agent 2 runs on every node, NotReady ones too");
    push(&sync);
    wait_until(
        "agent stalled past the progress deadline (daemonsync_rollout_stalled 1)",
        60,
        &[&sync],
        || (stalled("agent") == Some(1.0)).then_some(()),
    );
    assert_eq!(stalled("logger"), Some(0.0), "{}", sync.metrics());
    assert_eq!(
        halted(&sync, "agent"),
        Some(0.0),
        "no pod failed: {}",
        sync.metrics()
    );
    let (record, message) = wait_condition(&world.api, &sync, "agent", "Stalled");
    assert!(
        message.contains(&format!("no progress for {PROGRESS_DEADLINE}"))
            && message.contains("NotReady nodes")
            && message.contains("sick-1"),
        "the condition says why: {message}"
    );
    assert_eq!(
        condition(&record, "Ready").map(|(s, _)| s).as_deref(),
        Some("False")
    );
    assert!(
        record["status"]["lastProgressTime"].is_string(),
        "{record:#}"
    );

    let status = sync.terminate();
    assert_eq!(status.code(), Some(0), "{}", sync.tail());
}

#[test]
fn a_node_joining_not_ready_gets_its_pods_once_ready_and_resyncs_find_no_mismatch() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    // A node registers NotReady (the node lifecycle controller taints it
    // node.kubernetes.io/not-ready:NoSchedule, which daemon pods do not tolerate), then turns
    // Ready. While it waits, the DaemonSets only have its row redone; a resync every 2 s
    // compares that with full plans.
    let running = format!(
        "{}---\n{}",
        daemonset("agent", "agent:1"),
        daemonset("logger", "logger:1")
    );
    let churn = "churn:
  - {at: 8s, add: {name: 'joining-{i}', count: 1, labels: {kubernetes.io/os: linux}, ready: false}}
  - {at: 16s, ready: {node: joining-1, ready: true}}
";
    let world = World::with(&running, churn);
    let sync = world.start(&["--reconcile", "incremental", "--resync", "2s"]);
    let on_joining = |app: &str| {
        world
            .api
            .pods(app)
            .iter()
            .filter(|p| p["spec"]["nodeName"] == "joining-1" || {
                let terms = &p["spec"]["affinity"]["nodeAffinity"]
                    ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
                terms.to_string().contains("\"joining-1\"")
            })
            .count()
    };
    // Whether joining-1 is Ready (`None`: not there yet).
    let ready = || {
        let nodes = world.api.items("/api/v1/nodes");
        let node = nodes.iter().find(|n| name(n) == "joining-1")?;
        let conditions = node["status"]["conditions"].as_array()?;
        let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
        Some(ready["status"] == "True")
    };
    // While it is not ready, no pod goes there. The pods are read first: a node not ready
    // after them was not ready when they were read.
    let mut seen_not_ready = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pods = on_joining("agent") + on_joining("logger");
        match ready() {
            Some(false) => {
                assert_eq!(pods, 0, "a pod on a node not ready: {}", sync.tail());
                seen_not_ready += 1;
            }
            Some(true) => break,
            None => {}
        }
        assert!(Instant::now() < deadline, "joining-1 never turned Ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(seen_not_ready > 0, "joining-1 was never seen not ready");
    // Ready: both DaemonSets run there.
    wait_converged(&world, &sync, "agent", "agent:1");
    wait_converged(&world, &sync, "logger", "logger:1");
    assert_eq!((on_joining("agent"), on_joining("logger")), (1, 1));
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        sync.log()
            .contains("resync: every DaemonSet planned afresh"),
        "{}",
        sync.tail()
    );
    assert_eq!(
        sync.metric("daemonsync_incremental_mismatch_total"),
        Some(0.0),
        "{}",
        sync.tail()
    );
}

#[test]
fn a_deleted_pod_is_replaced_by_an_incremental_pass_and_a_forced_resync_finds_no_mismatch() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let world = World::new();
    let sync = world.start(&["--reconcile", "incremental", "--resync", "2s"]);
    wait_converged(&world, &sync, "agent", "agent:1");
    wait_converged(&world, &sync, "logger", "logger:1");
    let logger = pod_uids(&world, "logger");
    // One agent pod goes: only the agent is re-planned, and the node gets a new pod.
    let pod = world.api.pods("agent")[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(world.api.delete_pod(&pod));
    wait_for("the deleted agent pod is replaced", 30, &[&sync], || {
        let live = pod_uids(&world, "agent").len();
        let gone = world
            .api
            .pods("agent")
            .iter()
            .all(|p| p["metadata"]["name"] != pod.as_str());
        if live == NODES && gone {
            world.api.converged("agent", "agent:1")
        } else {
            Err(format!("{live} live agent pods, the old one gone: {gone}"))
        }
    });
    assert_eq!(
        pod_uids(&world, "logger"),
        logger,
        "the logger is untouched"
    );
    // A resync (every 2s) re-plans everything and compares: the incremental plans agree.
    wait_for("a resync ran", 30, &[&sync], || {
        if sync
            .log()
            .contains("resync: every DaemonSet planned afresh")
        {
            Ok(())
        } else {
            Err("no resync logged yet".to_string())
        }
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        sync.metric("daemonsync_incremental_mismatch_total"),
        Some(0.0),
        "{}",
        sync.tail()
    );
    assert!(
        !sync.log().contains("differs from the full re-plan"),
        "{}",
        sync.tail()
    );
    assert!(sync.terminate().success());
}

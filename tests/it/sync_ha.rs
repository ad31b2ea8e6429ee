//! Two `daemonsync sync` replicas with `--leader-election` against one `sim serve` (issue 13):
//! only the lease holder writes (the server's request log names the writer by its
//! User-Agent); the leader killed with SIGKILL mid-rollout is replaced within the lease
//! duration, and the rollout's budget holds throughout, as an independent observer lists the
//! pods through the API.

use crate::live_budget::{Observer, assert_within};
use crate::rbac::request_log;
use crate::serve_support::ServeProcess;
use crate::sync_support::{Api, Sync, daemonset, fleet, wait_for, wait_until};
use std::path::Path;
use std::time::{Duration, Instant};

const NODES: usize = 10;
/// `maxUnavailable` of [`daemonset`].
const MAX_UNAVAILABLE: usize = 2;
const LEASE_SECS: u64 = 3;

/// A replica named `identity` following the directory `manifests`.
fn replica(server: &ServeProcess, dir: &Path, manifests: &Path, identity: &str) -> Sync {
    let lease = format!("{LEASE_SECS}s");
    Sync::start(
        &server.kubeconfig,
        dir,
        identity,
        &[
            "--manifests",
            manifests.to_str().unwrap(),
            "--leader-election",
            "--lease-namespace",
            "default",
            "--lease-name",
            "daemonsync",
            "--lease-duration",
            &lease,
            "--identity",
            identity,
            "--progress-deadline",
            "30s",
        ],
    )
}

fn leads(r: &Sync) -> Option<bool> {
    r.metric("daemonsync_leader").map(|v| v == 1.0)
}

/// Successful writes other than the Lease's, in log order: (index, identity, verb, resource).
fn writes(log: &Path) -> Vec<(usize, String, String, String)> {
    request_log(log)
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            !matches!(l["verb"].as_str(), Some("get" | "list" | "watch"))
                && l["code"].as_u64().is_some_and(|c| (200..300).contains(&c))
                && l["resource"].is_string()
                && l["resource"] != "leases"
        })
        .filter_map(|(i, l)| {
            let agent = l["userAgent"].as_str()?;
            let identity = agent.strip_prefix("daemonsync/")?.split_once(" (")?.1;
            Some((
                i,
                identity.trim_end_matches(')').to_string(),
                l["verb"].as_str().unwrap_or_default().to_string(),
                l["resource"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

fn pod_writes_by(log: &Path, identity: &str) -> usize {
    writes(log)
        .iter()
        .filter(|(_, who, _, r)| who == identity && r == "pods")
        .count()
}

#[test]
fn only_the_leader_writes_and_a_kill_9_mid_rollout_is_taken_over_within_the_lease_and_the_budget() {
    let sim = fleet(NODES, &daemonset("agent", "agent:1"), "");
    let log = sim.path().join("requests.jsonl");
    let server = ServeProcess::start(sim.path(), &["--request-log", log.to_str().unwrap()]);
    let api = Api {
        url: server.url.clone(),
    };
    let manifests = sim.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("ds.yaml"), daemonset("agent", "agent:1")).unwrap();

    // `a` starts first and leads; `b` stands by.
    let a = replica(&server, sim.path(), &manifests, "replica-a");
    a.wait_ready();
    wait_until("replica-a leads", 20, &[&a], || {
        (leads(&a) == Some(true)).then_some(())
    });
    let b = replica(&server, sim.path(), &manifests, "replica-b");
    b.wait_ready();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(leads(&b), Some(false), "one leader at a time\n{}", b.tail());
    assert_eq!(leads(&a), Some(true), "{}", a.tail());

    // A new image: a leads the rollout; b writes nothing.
    let observer = Observer::start(&api.url);
    std::fs::write(manifests.join("ds.yaml"), daemonset("agent", "agent:2")).unwrap();
    wait_until("replica-a wrote 3 pods", 30, &[&a, &b], || {
        (pod_writes_by(&log, "replica-a") >= 3).then_some(())
    });
    let killed = Instant::now();
    a.kill9();
    // What a sent before it died has reached the server within this; b cannot lead before
    // a's lease runs out, seconds later.
    std::thread::sleep(Duration::from_millis(300));
    let before_kill = request_log(&log).len();
    let by_a = pod_writes_by(&log, "replica-a");
    assert!(
        by_a < 2 * NODES,
        "killed mid-rollout: replica-a made {by_a} pod writes"
    );
    assert_eq!(
        pod_writes_by(&log, "replica-b"),
        0,
        "the standby wrote pods\n{}",
        b.tail()
    );

    // b takes over within the lease duration (plus a second to read the Lease and campaign).
    wait_until("replica-b leads", 2 * LEASE_SECS + 5, &[&b], || {
        (leads(&b) == Some(true)).then_some(())
    });
    let takeover = killed.elapsed();
    eprintln!("takeover after kill -9: {takeover:?}");
    assert!(
        takeover <= Duration::from_secs(LEASE_SECS + 1),
        "replica-b led {takeover:?} after the kill (lease {LEASE_SECS}s)\n{}",
        b.tail()
    );
    assert!(
        b.log().contains("leadership changed leader=true"),
        "{}",
        b.tail()
    );

    wait_for("replica-b finished the rollout", 60, &[&b], || {
        api.converged("agent", "agent:2")
    });
    let seen = observer.finish();
    assert!(seen.samples >= 20, "the observer listed the pods: {seen:?}");
    // All available at the start, never more than maxUnavailable lacking a pod, and no
    // node with two (maxSurge 0).
    assert_within(&seen, MAX_UNAVAILABLE, 0);

    // The request log: a wrote only before it was killed, b only after; both wrote.
    let w = writes(&log);
    let who: Vec<&str> = w.iter().map(|(_, id, _, _)| id.as_str()).collect();
    assert!(
        who.iter()
            .all(|id| *id == "replica-a" || *id == "replica-b"),
        "{w:?}"
    );
    let last_a = w.iter().rfind(|(_, id, _, _)| id == "replica-a").unwrap().0;
    let first_b = w
        .iter()
        .find(|(_, id, _, _)| id == "replica-b")
        .unwrap_or_else(|| panic!("replica-b never wrote: {w:?}"))
        .0;
    assert!(
        last_a < before_kill && first_b >= before_kill,
        "writes interleaved: a's last at {last_a}, b's first at {first_b}, kill at {before_kill}"
    );
    let b_pods = pod_writes_by(&log, "replica-b");
    assert!(
        by_a + b_pods >= 2 * NODES,
        "every node's pod was replaced: a {by_a}, b {b_pods}"
    );

    assert_eq!(b.terminate().code(), Some(0), "{}", b.tail());
    assert!(b.log().contains("released the lease"), "{}", b.tail());
}

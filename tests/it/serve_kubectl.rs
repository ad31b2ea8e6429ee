//! kubectl against a `daemonsync sim serve` child process: the columns a kubectl user reads,
//! node edits, deletions and the record cascade. Skipped, with a reason, without kubectl.

use crate::serve_support::{Kubectl, ServeProcess, header, kubectl_available, row, sim_dir};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn kubectl_reads_and_changes_the_simulated_cluster() {
    if !kubectl_available() {
        return;
    }
    let dir = sim_dir();
    let server = ServeProcess::start(dir.path(), &[]);
    let cache = dir.path().join("kube-cache");
    let k = Kubectl {
        kubeconfig: &server.kubeconfig,
        cache: &cache,
    };

    let written = std::fs::read_to_string(&server.kubeconfig).unwrap();
    assert!(
        written.contains(&format!("server: {}", server.url))
            && written.contains("current-context: daemonsync-sim")
    );
    let nodes = k.ok(&["get", "nodes"]);
    assert_eq!(
        header(&nodes),
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    );
    assert_eq!(
        row(&nodes, "cp-1"),
        ["cp-1", "Ready", "control-plane", "60m", "v1.35.0"]
    );
    assert_eq!(row(&nodes, "n-1")[1..3], ["Ready", "<none>"]);

    let pods = k.ok(&["get", "pods", "-A", "-o", "wide"]);
    assert_eq!(
        header(&pods)[..9],
        [
            "NAMESPACE",
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE"
        ]
    );
    let agent_on_n1 = pods
        .lines()
        .find(|l| l.contains("agent-") && l.contains(" n-1 "))
        .expect("an agent pod on n-1");
    let words: Vec<&str> = agent_on_n1.split_whitespace().collect();
    assert_eq!(
        (words[0], words[2], words[3], words[4], words[5]),
        ("demo", "1/1", "Running", "0", "60m")
    );
    assert!(words[6].starts_with("10."), "{agent_on_n1}");

    let mds = k.ok(&["get", "mds", "-A"]);
    assert_eq!(
        header(&mds),
        [
            "NAMESPACE",
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "MISSCHEDULED",
            "REVISION",
            "MODE",
            "AGE"
        ]
    );
    assert_eq!(
        row(&mds, "agent")[..8],
        ["demo", "agent", "4", "4", "4", "4", "4", "0"]
    );
    assert_eq!(row(&mds, "agent")[9], "managed", "the MODE column");

    // An event on the record, written through events.k8s.io, read by describe and get events.
    let uid = k.ok(&[
        "get",
        "mds",
        "-n",
        "demo",
        "agent",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    let event = dir.path().join("event.yaml");
    std::fs::write(&event, format!("apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {{name: agent.1, namespace: demo}}\neventTime: '2026-01-01T00:00:00.000000Z'\nreason: RolloutComplete\nnote: every node runs the new revision\ntype: Normal\naction: Rollout\nreportingController: daemonsync\nreportingInstance: test\nregarding: {{apiVersion: daemonsync.io/v1alpha1, kind: ManagedDaemonSet, name: agent, namespace: demo, uid: {uid}}}\n")).unwrap();
    k.ok(&["create", "-f", event.to_str().unwrap()]);
    let described = k.ok(&["describe", "mds", "-n", "demo", "agent"]);
    assert!(
        described.contains("Desired Number Scheduled:  4"),
        "{described}"
    );
    let events_line = described
        .lines()
        .find(|l| l.contains("RolloutComplete"))
        .unwrap_or_else(|| panic!("{described}"));
    assert!(
        events_line.contains("daemonsync")
            && events_line.contains("every node runs the new revision"),
        "{events_line}"
    );
    let events = k.ok(&["get", "events", "-n", "demo"]);
    assert_eq!(
        header(&events),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert!(events.contains("manageddaemonset/agent"), "{events}");

    // Node edits.
    k.ok(&["label", "node", "n-1", "zone=a"]);
    k.ok(&["taint", "node", "n-2", "maintenance=yes:NoSchedule"]);
    k.ok(&["cordon", "n-3"]);
    assert_eq!(
        k.ok(&["get", "nodes", "-l", "zone=a", "-o", "name"]).trim(),
        "node/n-1"
    );
    assert_eq!(
        k.ok(&["get", "node", "n-2", "-o", "jsonpath={.spec.taints[0].key}"]),
        "maintenance"
    );
    assert_eq!(
        row(&k.ok(&["get", "nodes"]), "n-3")[1],
        "Ready,SchedulingDisabled"
    );

    // get -w shows a pod's termination as it happens (bounded).
    let pod = k.ok(&[
        "get",
        "pods",
        "-n",
        "demo",
        "-l",
        "app=logger",
        "--field-selector",
        "spec.nodeName=n-1",
        "-o",
        "name",
    ]);
    let pod = pod.trim().trim_start_matches("pod/").to_string();
    let mut watch = k
        .cmd(&["get", "pods", "-n", "demo", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("get -w prints its header");
    assert!(first.starts_with("NAME"), "{first}");
    k.ok(&["delete", "pod", "-n", "demo", &pod]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut saw_terminating = false;
    while Instant::now() < deadline && !saw_terminating {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
            saw_terminating = line.contains(&pod) && line.contains("Terminating");
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(saw_terminating, "get -w showed {pod} terminating");
    let left = k.ok(&["get", "pods", "-n", "demo", "-o", "name"]);
    assert!(!left.contains(&pod), "{left}");

    // Deleting a node deletes its pods (pod garbage collection).
    k.ok(&["delete", "node", "n-2"]);
    assert!(!k.ok(&["get", "nodes", "-o", "name"]).contains("node/n-2"));
    assert_eq!(
        k.ok(&[
            "get",
            "pods",
            "-A",
            "--field-selector",
            "spec.nodeName=n-2",
            "-o",
            "name"
        ])
        .trim(),
        ""
    );

    // apply -f of a Node: a simulated kubelet registers it.
    let node = dir.path().join("node.yaml");
    std::fs::write(&node, "apiVersion: v1\nkind: Node\nmetadata:\n  name: extra-1\n  labels: {kubernetes.io/os: linux, node-role.kubernetes.io/worker: ''}\n").unwrap();
    assert!(
        k.ok(&["apply", "-f", node.to_str().unwrap()])
            .contains("node/extra-1 created")
    );
    assert_eq!(
        row(&k.ok(&["get", "nodes"]), "extra-1")[1..3],
        ["Ready", "worker"]
    );
    assert!(
        k.ok(&["apply", "-f", node.to_str().unwrap()])
            .contains("node/extra-1 unchanged")
    );

    // delete mds cascades to its pods; --cascade=orphan leaves them.
    k.ok(&["delete", "mds", "-n", "demo", "logger", "--cascade=orphan"]);
    let loggers = k.pods_of("logger").join("\n");
    assert_eq!(
        loggers.lines().count(),
        2,
        "orphaned pods stay (n-2's was collected, one deleted):\n{loggers}"
    );
    k.ok(&["delete", "mds", "-n", "demo", "agent"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let agents = k.pods_of("agent").join("\n");
        if agents.trim().is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "agent pods still there:\n{agents}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(k.pods_of("logger").join("\n").lines().count(), 2);

    let status = server.terminate();
    assert!(status.success(), "sim serve exits 0 on SIGTERM: {status:?}");
}

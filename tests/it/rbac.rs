//! examples/deploy/rbac.yaml against what daemonsync really asks of the API: `apply`, `plan`,
//! `release`, `status` and `snapshot` over `--cluster kube` run against `sim serve
//! --request-log` (one apply replacing pods, taking a DaemonSet over from the built-in
//! controller and keeping one native, a later one updating pods in place, then a release), and every request they make must
//! be granted by the ClusterRole, and every rule the ClusterRole grants must have been used
//! (least privilege: a grant nothing needs is a grant too many). The grants a readiness taint
//! needs are in examples/deploy/rbac-readiness-taint.yaml, applied only where a DaemonSet names
//! one: checked the same way, and without them `apply` names the file.

use crate::live::{daemonsync, text};
use crate::serve_support::{ServeProcess, sim_dir};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const RBAC_YAML: &str = include_str!("../../examples/deploy/rbac.yaml");
const READINESS_RBAC_YAML: &str = include_str!("../../examples/deploy/rbac-readiness-taint.yaml");

/// (verb, group, resource with `/subresource`) triples, as RBAC rules and the log name them.
type Grant = (String, String, String);

/// The request log's complete lines (a server still running may be writing the last one).
pub(crate) fn request_log(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The triples a resource request needs (its `verbs`), or none for a non-resource URL.
fn needs(line: &Value) -> Vec<Grant> {
    let Some(resource) = line["resource"].as_str() else {
        return Vec::new();
    };
    let resource = match line["subresource"].as_str() {
        Some(sub) => format!("{resource}/{sub}"),
        None => resource.to_string(),
    };
    let group = line["group"].as_str().unwrap().to_string();
    line["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v.as_str().unwrap().to_string(),
                group.clone(),
                resource.clone(),
            )
        })
        .collect()
}

/// The ClusterRole `daemonsync` of rbac.yaml, each rule expanded to triples. Wildcards and
/// resourceNames are refused: the role is to say exactly what it grants.
fn granted() -> BTreeSet<Grant> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(RBAC_YAML).expect("rbac.yaml is YAML");
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding"
        ],
        "rbac.yaml's documents"
    );
    // sync --leader-election: its Lease, in its own namespace only (kube-lease-manager reads
    // it, creates it once, and renews and releases it by patches).
    let lease_role = &docs[3];
    assert_eq!(lease_role["metadata"]["namespace"], "daemonsync");
    assert_eq!(
        lease_role["rules"],
        serde_json::json!([{
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "patch"]
        }])
    );
    assert_eq!(docs[4]["roleRef"]["name"], lease_role["metadata"]["name"]);
    let role: ClusterRole = serde_json::from_value(docs[1].clone()).unwrap();
    assert_eq!(role.metadata.name.as_deref(), Some("daemonsync"));
    let binding: ClusterRoleBinding = serde_json::from_value(docs[2].clone()).unwrap();
    assert_eq!(binding.role_ref.kind, "ClusterRole");
    assert_eq!(binding.role_ref.name, "daemonsync");
    let subjects = binding.subjects.unwrap_or_default();
    assert!(
        subjects.iter().any(|s| s.kind == "ServiceAccount"
            && s.name == "daemonsync"
            && s.namespace.as_deref() == Some("daemonsync")),
        "the binding names the daemonsync service account: {subjects:?}"
    );
    let mut out = BTreeSet::new();
    for rule in role.rules.unwrap_or_default() {
        assert!(
            rule.resource_names.is_none() && rule.non_resource_urls.is_none(),
            "{rule:?}"
        );
        let groups = rule.api_groups.unwrap_or_default();
        let resources = rule.resources.unwrap_or_default();
        for word in groups.iter().chain(&resources).chain(&rule.verbs) {
            assert!(
                !word.contains('*'),
                "no wildcards in the ClusterRole: {word}"
            );
        }
        for g in &groups {
            for r in &resources {
                for v in &rule.verbs {
                    assert!(
                        out.insert((v.clone(), g.clone(), r.clone())),
                        "{v} {g}/{r} granted twice"
                    );
                }
            }
        }
    }
    out
}

#[test]
fn the_cluster_role_grants_exactly_what_apply_plan_status_and_snapshot_use() {
    let dir = sim_dir();
    // `legacy` runs under the built-in controller: taken over, and later released.
    std::fs::create_dir_all(dir.path().join("builtin")).unwrap();
    std::fs::write(
        dir.path().join("builtin/legacy.yaml"),
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: legacy, namespace: demo}\nspec:\n  selector: {matchLabels: {app: legacy}}\n  template:\n    metadata: {labels: {app: legacy}}\n    spec:\n      containers: [{name: legacy, image: 'legacy:1'}]\n",
    )
    .unwrap();
    let sim = std::fs::read_to_string(dir.path().join("sim.yaml")).unwrap();
    std::fs::write(
        dir.path().join("sim.yaml"),
        format!("{sim}builtin:\n  - manifest: builtin/\n"),
    )
    .unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = ServeProcess::start(dir.path(), &["--request-log", log.to_str().unwrap()]);
    let kc = server.kubeconfig.clone();
    // A changed DaemonSet (pods replaced), an unchanged one, a new one (its record is
    // created by a server-side apply), one taken over from the built-in controller and one
    // kept native (server-side applied as an apps/v1 DaemonSet under OnDelete).
    let ds = |name: &str, image: &str, annotations: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}, namespace: demo, annotations: {{{annotations}}}}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  updateStrategy: {{rollingUpdate: {{maxUnavailable: 1}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: {name}, image: '{image}'}}]\n"
        )
    };
    // logger versions a ConfigMap and a Secret of the source: their copies are written
    // before its pods, watched, and deleted once two later revisions replaced them.
    let logger = |version: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: logger, namespace: demo}}\nspec:\n  selector: {{matchLabels: {{app: logger}}}}\n  updateStrategy: {{rollingUpdate: {{maxUnavailable: 1}}}}\n  template:\n    metadata: {{labels: {{app: logger}}}}\n    spec:\n      containers:\n      - name: logger\n        image: 'logger:1'\n        envFrom: [{{secretRef: {{name: logger-creds}}}}]\n        volumeMounts: [{{name: config, mountPath: /etc/logger}}]\n      volumes: [{{name: config, configMap: {{name: logger-config}}}}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: logger-config, namespace: demo}}\ndata: {{logger.conf: 'level={version}'}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: logger-creds, namespace: demo}}\nstringData: {{TOKEN: 'token-{version}'}}\n"
        )
    };
    let manifests = |name: &str, docs: &[String]| {
        let git = dir.path().join(name);
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("ds.yaml"), docs.join("---\n")).unwrap();
        git.display().to_string()
    };
    let m = manifests(
        "git",
        &[
            ds("agent", "agent:2", ""),
            logger("1"),
            ds("newcomer", "newcomer:1", ""),
            ds("legacy", "legacy:1", "daemonsync.io/adopt: 'true'"),
            ds("native", "native:1", "daemonsync.io/mode: native"),
        ],
    );
    // Then, with agent stable at agent:2, a revision that differs only in its image under
    // InPlaceIfPossible: its pods are patched in place (pods and pods/status), none replaced.
    let in_place = "daemonsync.io/update-strategy: InPlaceIfPossible";
    let m2 = manifests(
        "git2",
        &[
            ds("agent", "agent:3", in_place),
            logger("1"),
            ds("newcomer", "newcomer:1", ""),
            ds("legacy", "legacy:1", "daemonsync.io/adopt: 'true'"),
            ds("native", "native:1", "daemonsync.io/mode: native"),
        ],
    );
    // Then logger's config changes twice: the third revision's rollout collects the first's
    // copies.
    let later = |name: &str, version: &str| {
        manifests(
            name,
            &[
                ds("agent", "agent:3", in_place),
                logger(version),
                ds("newcomer", "newcomer:1", ""),
                ds("native", "native:1", "daemonsync.io/mode: native"),
            ],
        )
    };
    let (m3, m4) = (later("git3", "2"), later("git4", "3"));
    let snap = dir.path().join("snap.yaml");
    let timeout = ["--cluster", "kube", "--timeout", "90s"];
    let apply_m3: Vec<&str> = ["apply", "-m", &m3]
        .iter()
        .chain(&timeout)
        .copied()
        .collect();
    let apply_m4: Vec<&str> = ["apply", "-m", &m4]
        .iter()
        .chain(&timeout)
        .copied()
        .collect();
    let runs: [(&[&str], i32); 10] = [
        (&["plan", "-m", &m, "--cluster", "kube"], 2),
        (
            &["apply", "-m", &m, "--cluster", "kube", "--timeout", "90s"],
            0,
        ),
        (&["plan", "-m", &m, "--cluster", "kube"], 0),
        (
            &[
                "apply",
                "-m",
                &m2,
                "--cluster",
                "kube",
                "--timeout",
                "90s",
                "-o",
                "json",
            ],
            0,
        ),
        (&["plan", "-m", &m2, "--cluster", "kube"], 0),
        (&apply_m3, 0),
        (&apply_m4, 0),
        // Give legacy back to the built-in controller.
        (
            &[
                "release",
                "demo/legacy",
                "--cluster",
                "kube",
                "--timeout",
                "90s",
            ],
            0,
        ),
        (&["status", "--cluster", "kube"], 0),
        (
            &[
                "snapshot",
                "--cluster",
                "kube",
                "-o",
                snap.to_str().unwrap(),
            ],
            0,
        ),
    ];
    for (args, code) in runs {
        let out = daemonsync(&kc, args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "daemonsync {args:?}\nstdout: {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        );
        if args[0] == "apply" && args.contains(&m2.as_str()) {
            // The in-place rollout really ran: every agent pod patched, none replaced.
            let report: Value = serde_json::from_slice(&out.stdout).expect("an ApplyReport");
            let verbs: BTreeSet<&str> = report["writes"]
                .as_array()
                .expect("writes")
                .iter()
                .map(|w| w["verb"].as_str().unwrap())
                .collect();
            assert_eq!(
                (&report["inPlace"], &report["creates"], &report["deletes"]),
                (&Value::from(4), &Value::from(0), &Value::from(0)),
                "{report:#}"
            );
            assert_eq!(verbs, BTreeSet::from(["in-place"]), "{report:#}");
        }
    }
    drop(server);

    let lines = request_log(&log);
    let ours: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["userAgent"]
                .as_str()
                .is_some_and(|a| a.starts_with("daemonsync/"))
        })
        .collect();
    assert!(
        ours.len() > 20,
        "the commands made requests: {}",
        ours.len()
    );
    let granted = granted();
    let mut used = BTreeSet::new();
    let mut missing = BTreeSet::new();
    for line in &ours {
        for need in needs(line) {
            if !granted.contains(&need) {
                missing.insert(need.clone());
            }
            used.insert(need);
        }
    }
    assert!(
        missing.is_empty(),
        "daemonsync made requests the ClusterRole in examples/deploy/rbac.yaml does not grant: {missing:?}"
    );
    let unused: Vec<&Grant> = granted.difference(&used).collect();
    assert!(
        unused.is_empty(),
        "the ClusterRole grants what no command used (least privilege): {unused:?}"
    );
}

/// The ClusterRole of rbac-readiness-taint.yaml, expanded to triples, and its binding to
/// daemonsync's service account.
fn readiness_granted() -> BTreeSet<Grant> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(READINESS_RBAC_YAML)
        .expect("rbac-readiness-taint.yaml is YAML");
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["ClusterRole", "ClusterRoleBinding"]);
    let role: ClusterRole = serde_json::from_value(docs[0].clone()).unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(docs[1].clone()).unwrap();
    assert_eq!(binding.role_ref.name, role.metadata.name.clone().unwrap());
    assert!(
        binding
            .subjects
            .unwrap_or_default()
            .iter()
            .any(|s| s.kind == "ServiceAccount"
                && s.name == "daemonsync"
                && s.namespace.as_deref() == Some("daemonsync"))
    );
    let mut out = BTreeSet::new();
    for rule in role.rules.unwrap_or_default() {
        assert!(rule.resource_names.is_none(), "{rule:?}");
        for g in rule.api_groups.clone().unwrap_or_default() {
            for r in rule.resources.clone().unwrap_or_default() {
                for v in &rule.verbs {
                    assert!(!v.contains('*') && !r.contains('*'), "{rule:?}");
                    out.insert((v.clone(), g.clone(), r.clone()));
                }
            }
        }
    }
    out
}

/// A cluster with a node that joined with the readiness taint of `gated`, a new DaemonSet
/// naming it; the manifest directory.
fn readiness_cluster(dir: &Path) -> String {
    std::fs::write(
        dir.join("sim.yaml"),
        "seed: 7
kubelet: {startLatency: {fixed: 200ms}, terminationGrace: 300ms}
nodes:
  - {name: 'n-{i}', count: 2}
  - name: new-1
    taints: [{key: example.com/agent-not-ready, effect: NoSchedule}]
namespaces: [{name: demo}]
",
    )
    .unwrap();
    let git = dir.join("gated");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::write(
        git.join("ds.yaml"),
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: gated\n  namespace: demo\n  annotations: {daemonsync.io/readiness-taint: example.com/agent-not-ready}\nspec:\n  selector: {matchLabels: {app: gated}}\n  template:\n    metadata: {labels: {app: gated}}\n    spec:\n      containers: [{name: gated, image: 'gated:1'}]\n",
    )
    .unwrap();
    git.display().to_string()
}

#[test]
fn readiness_taints_need_the_grants_of_their_own_file_and_only_those() {
    // Without rbac-readiness-taint.yaml: the removal is refused and apply says what to apply.
    let dir = tempfile::tempdir().unwrap();
    let m = readiness_cluster(dir.path());
    let server = ServeProcess::start(
        dir.path(),
        &["--faults", "forbid=get:nodes,forbid=patch:nodes"],
    );
    let out = daemonsync(
        &server.kubeconfig,
        &["apply", "-m", &m, "--cluster", "kube", "--timeout", "60s"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("readiness taint example.com/agent-not-ready")
            && err.contains("needs get and patch on nodes")
            && err.contains("kubectl apply -f examples/deploy/rbac-readiness-taint.yaml"),
        "{err}"
    );
    drop(server);

    // With it: the taint goes, and every request is granted by the two files together; the
    // readiness file grants nothing the removal did not use.
    let dir = tempfile::tempdir().unwrap();
    let m = readiness_cluster(dir.path());
    let log = dir.path().join("requests.jsonl");
    let server = ServeProcess::start(dir.path(), &["--request-log", log.to_str().unwrap()]);
    let out = daemonsync(
        &server.kubeconfig,
        &[
            "apply",
            "-m",
            &m,
            "--cluster",
            "kube",
            "--timeout",
            "60s",
            "-o",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("an ApplyReport");
    let untainted: Vec<&Value> = report["writes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["verb"] == "untaint")
        .collect();
    assert_eq!(untainted.len(), 1, "{report:#}");
    assert_eq!(untainted[0]["node"], "new-1");
    drop(server);

    let base = granted();
    let readiness = readiness_granted();
    let mut used = BTreeSet::new();
    for line in request_log(&log).iter().filter(|l| {
        l["userAgent"]
            .as_str()
            .is_some_and(|a| a.starts_with("daemonsync/"))
    }) {
        for need in needs(line) {
            assert!(
                base.contains(&need) || readiness.contains(&need),
                "not granted by rbac.yaml nor rbac-readiness-taint.yaml: {need:?}"
            );
            used.insert(need);
        }
    }
    let unused: Vec<&Grant> = readiness.difference(&used).collect();
    assert!(unused.is_empty(), "granted but unused: {unused:?}");
    assert!(
        readiness.is_disjoint(&base),
        "rbac.yaml grants it already: {readiness:?}"
    );
}

//! Kustomize overlays and Helm charts as sources, through the binary.
//!
//! Kustomize runs for real: kubectl embeds it and is on every machine of this project (a test
//! skips, saying why, where it is not). Helm is not installed on these machines, so the
//! integration is driven by a stand-in `helm` on `PATH`, a shell script written by each test
//! that records its arguments and environment and prints a rendering; one test runs the real
//! `helm` when there is one. Every wait is bounded; nothing listens on any port.

use crate::support::{Repo, daemonsync, repo_path, snapshot};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const NOW: &str = "2026-01-01T00:00:00Z";

/// The directories of `PATH` that hold kubectl, and nothing of the user's: what the tests
/// put behind a stand-in.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `daemonsync ARGS` in `dir` with `PATH` set to `path` and a few secrets in the
/// environment, which no renderer may see.
fn run_in(dir: &Path, path: &str, args: &[&str]) -> Run {
    let cache = tempfile::tempdir().unwrap();
    let out = daemonsync()
        .current_dir(dir)
        .args(args)
        .env("DAEMONSYNC_CACHE_DIR", cache.path())
        .env("PATH", path)
        .env("DAEMONSYNC_GIT_TOKEN", "ghp_never-shown-to-a-renderer")
        .env("AWS_SECRET_ACCESS_KEY", "aws-never-shown")
        .env("GITHUB_TOKEN", "ghs_never-shown")
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Whether kubectl (with its kustomize) is on `PATH`; says why the calling test skips when
/// it is not.
fn has_kubectl() -> bool {
    let ok = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: kubectl is not installed (it renders Kustomize overlays)");
    }
    ok
}

/// A directory holding a stand-in `helm`: `version` prints `v3.16.2+g13654a5`; anything else
/// records its arguments (`args`, one per line), environment (`env`), working directory
/// (`pwd`) and the values files it was given (`values`) in the directory, then runs `body`
/// (by default, prints a DaemonSet named after the release, in the `--namespace`).
struct StandIn {
    dir: tempfile::TempDir,
}

const RENDERING: &str = r#"ns=default; prev=
for a in "$@"; do
  if [ "$prev" = --namespace ]; then ns="$a"; fi
  prev="$a"
done
cat <<EOF
# Source: agent/templates/daemonset.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $2, namespace: $ns}
spec:
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec: {containers: [{name: agent, image: "registry.example/agent:1.4.2"}]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: $2, namespace: $ns}
EOF
"#;

impl StandIn {
    fn helm(body: &str) -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().display();
        let script = format!(
            r#"#!/bin/sh
if [ "$1" = version ]; then echo v3.16.2+g13654a5; exit 0; fi
printf '%s\n' "$@" > "{rec}/args"
env > "{rec}/env"
pwd > "{rec}/pwd"
prev=
for a in "$@"; do
  if [ "$prev" = --values ]; then cat "$a" >> "{rec}/values"; fi
  prev="$a"
done
{body}
"#
        );
        let path = dir.path().join("helm");
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        StandIn { dir }
    }

    /// `PATH` with the stand-in first.
    fn path(&self) -> String {
        format!("{}:{SYSTEM_PATH}", self.dir.path().display())
    }

    /// What it recorded as `name`, if it ran.
    fn recorded(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(name)).ok()
    }
}

/// A repository holding a chart `charts/agent` (with `values.yaml`) and `values/prod.yaml`.
fn chart_repo() -> Repo {
    let r = Repo::new();
    r.write(
        "charts/agent/Chart.yaml",
        "apiVersion: v2\nname: agent\nversion: 0.1.0\n",
    )
    .write("charts/agent/values.yaml", "replicas: 1\n")
    .write(
        "charts/agent/templates/daemonset.yaml",
        "# rendered by helm\n",
    )
    .write("values/prod.yaml", "tier: prod\n");
    r.commit("chart");
    r
}

fn plan_chart(r: &Repo, helm: &StandIn, extra: &[&str]) -> Run {
    let cluster = snapshot();
    let mut args = vec![
        "plan",
        "--repo",
        ".",
        "--path",
        "charts/agent",
        "-n",
        "kube-system",
        "--cluster",
        &cluster,
        "--now",
        NOW,
    ];
    args.extend_from_slice(extra);
    run_in(&r.path(), &helm.path(), &args)
}

#[test]
fn helm_template_gets_the_release_namespace_values_and_the_clusters_version() {
    let r = chart_repo();
    // The work tree differs from the commit: the commit is what is rendered.
    r.write("values/prod.yaml", "tier: uncommitted\n");
    let helm = StandIn::helm(RENDERING);
    let out = plan_chart(&r, &helm, &["--values", "values/prod.yaml"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let args: Vec<String> = helm
        .recorded("args")
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let pwd = helm.recorded("pwd").unwrap().trim().to_string();
    assert_eq!(args[..2], ["template", "agent"], "{args:?}");
    assert_eq!(
        args[2],
        format!("{pwd}/charts/agent"),
        "the chart in the copy"
    );
    assert_eq!(
        args[3..7],
        ["--namespace", "kube-system", "--kube-version", "v1.33.2"],
        "the snapshot's kubelets say v1.33.2: {args:?}"
    );
    assert_eq!(args[7], "--values");
    assert!(args[8].ends_with("/values/0-prod.yaml"), "{args:?}");
    assert_eq!(args.len(), 9);
    assert_eq!(helm.recorded("values").unwrap(), "tier: prod\n");
    assert!(
        out.stdout.contains(
            "rendered: charts/agent with helm v3.16.2, for Kubernetes v1.33 (the cluster's)"
        ),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("kube-system   agent"), "{}", out.stdout);
    // The copy is gone once the plan is made.
    assert!(!Path::new(&pwd).exists(), "{pwd} was left behind");

    let out = plan_chart(&r, &helm, &["--release", "edge", "--kube-version", "1.32"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let args = helm.recorded("args").unwrap();
    assert!(args.starts_with("template\nedge\n"), "{args}");
    assert!(args.contains("--kube-version\nv1.32.0\n"), "{args}");
    assert!(!args.contains("--values"), "{args}");
    assert!(
        out.stdout
            .contains("with helm v3.16.2, for Kubernetes v1.32 (--kube-version)"),
        "{}",
        out.stdout
    );
}

#[test]
fn helm_runs_with_a_scrubbed_environment() {
    let r = chart_repo();
    let helm = StandIn::helm(RENDERING);
    let out = plan_chart(&r, &helm, &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let env = helm.recorded("env").unwrap();
    let pwd = helm.recorded("pwd").unwrap();
    let scratch = Path::new(pwd.trim())
        .parent()
        .unwrap()
        .display()
        .to_string();
    for secret in [
        "ghp_never",
        "aws-never",
        "ghs_never",
        "/nonexistent/kubeconfig",
    ] {
        assert!(
            !env.contains(secret),
            "{secret} reached the renderer:\n{env}"
        );
    }
    let var = |name: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} not set:\n{env}"))
            .to_string()
    };
    assert_eq!(var("PATH"), helm.path());
    for inside in [
        "HOME",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "HELM_CACHE_HOME",
        "HELM_CONFIG_HOME",
        "HELM_DATA_HOME",
        "KUBECONFIG",
        "TMPDIR",
    ] {
        assert!(
            var(inside).starts_with(&scratch),
            "{inside}={}",
            var(inside)
        );
    }
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(
        names.iter().all(|n| [
            "PATH",
            "HOME",
            "TMPDIR",
            "XDG_CONFIG_HOME",
            "XDG_CACHE_HOME",
            "XDG_DATA_HOME",
            "HELM_CONFIG_HOME",
            "HELM_CACHE_HOME",
            "HELM_DATA_HOME",
            "HELM_NO_PLUGINS",
            "KUSTOMIZE_PLUGIN_HOME",
            "KUBECONFIG",
            "LANG",
            "PWD",
            "SHLVL",
            "_",
            "OLDPWD"
        ]
        .contains(n)),
        "{names:?}"
    );
}

#[test]
fn values_files_stay_inside_the_repository() {
    let r = chart_repo();
    std::fs::write(r.dir.path().join("outside.yaml"), "secret: 1\n").unwrap();
    r.symlink("values/leak.yaml", "../../outside.yaml");
    r.commit("a link out");
    let helm = StandIn::helm(RENDERING);
    for (given, says) in [
        ("../outside.yaml", "without '..' above it"),
        ("/etc/passwd", "must be a path relative"),
        ("values/missing.yaml", "no such file"),
        ("values/leak.yaml", "outside the repository"),
    ] {
        let out = plan_chart(&r, &helm, &["--values", given]);
        assert_eq!(out.code, 1, "{given}: {}", out.stdout);
        assert!(out.stderr.contains(says), "{given}: {}", out.stderr);
        assert!(helm.recorded("args").is_none(), "helm ran for {given}");
    }
}

#[test]
fn a_renderer_that_never_exits_is_killed_within_the_timeout() {
    let r = chart_repo();
    let helm = StandIn::helm("sleep 600 & echo $! > \"$(dirname \"$0\")/child\"; wait");
    let started = Instant::now();
    let out = plan_chart(&r, &helm, &["--render-timeout", "1s"]);
    let took = started.elapsed();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("helm template agent charts/agent did not finish within 1s and was killed"),
        "{}",
        out.stderr
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    let child = helm
        .recorded("child")
        .expect("the renderer started a child");
    let proc = PathBuf::from(format!("/proc/{}", child.trim()));
    let deadline = Instant::now() + Duration::from_secs(5);
    while proc.exists()
        && !std::fs::read_to_string(proc.join("stat"))
            .unwrap_or_default()
            .contains(") Z ")
    {
        assert!(
            Instant::now() < deadline,
            "the renderer's child {} still runs",
            child.trim()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_failing_renderer_plans_nothing_and_says_why() {
    let r = chart_repo();
    let helm = StandIn::helm(
        "echo 'Error: template: agent/templates/daemonset.yaml:3:12: function \"oops\" not defined' >&2; exit 1",
    );
    let out = plan_chart(&r, &helm, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.is_empty(), "nothing planned: {}", out.stdout);
    assert!(
        out.stderr.contains("helm template agent charts/agent exited 1: Error: template: agent/templates/daemonset.yaml:3:12: function \"oops\" not defined; nothing was planned"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_empty_rendering_is_an_error_not_an_empty_desired_state() {
    let r = chart_repo();
    let helm = StandIn::helm("exit 0");
    let out = plan_chart(&r, &helm, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("refusing to treat this as an empty desired state"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_oversized_rendering_is_refused_and_the_renderer_killed() {
    let r = chart_repo();
    let helm = StandIn::helm("yes 'a: b' | head -c 2000000000");
    let started = Instant::now();
    let out = plan_chart(&r, &helm, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("printed more than 8388608 bytes, the limit of one manifest file"),
        "{}",
        out.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// A billion laughs: ten levels of ten aliases each, 10^10 scalars once expanded.
fn yaml_bomb() -> String {
    let mut text = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names: Vec<char> = "abcdefghijk".chars().collect();
    for w in names.windows(2) {
        let refs = vec![format!("*{}", w[0]); 10].join(",");
        text.push_str(&format!("{}: &{} [{refs}]\n", w[1], w[1]));
    }
    text
}

#[test]
fn a_yaml_bomb_in_a_rendering_is_bounded_as_every_manifest_is() {
    let r = chart_repo();
    let helm = StandIn::helm(&format!("cat <<'EOF'\n{}EOF", yaml_bomb()));
    let started = Instant::now();
    let out = plan_chart(&r, &helm, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("charts/agent (helm)"), "{}", out.stderr);
    assert!(out.stderr.contains("alias"), "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn unvendored_dependencies_are_refused_with_helm_dependency_build() {
    let r = chart_repo();
    r.write(
        "charts/agent/Chart.yaml",
        "apiVersion: v2\nname: agent\nversion: 0.1.0\ndependencies:\n- name: common\n  version: 2.x\n  repository: https://charts.example.com\n",
    );
    r.commit("a dependency");
    let helm = StandIn::helm(RENDERING);
    let out = plan_chart(&r, &helm, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "dependency \"common\" (from https://charts.example.com) is not vendored in \
             charts/agent/charts/; a plan never downloads charts: run `helm dependency build \
             charts/agent`"
        ),
        "{}",
        out.stderr
    );
    assert!(helm.recorded("args").is_none());
}

#[test]
fn a_missing_helm_says_which_binary_and_how_to_get_it() {
    let r = chart_repo();
    let empty = tempfile::tempdir().unwrap();
    let cluster = snapshot();
    let out = run_in(
        &r.path(),
        &empty.path().display().to_string(),
        &[
            "plan",
            "--repo",
            ".",
            "--path",
            "charts/agent",
            "--cluster",
            &cluster,
        ],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "charts/agent is rendered with helm, but helm is not on PATH; install Helm 3 \
             (https://helm.sh/docs/intro/install/)"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn an_invalid_rendered_daemonset_names_the_rendered_source() {
    let r = chart_repo();
    let helm = StandIn::helm(&RENDERING.replace("name: agent,", "name: Bad_Name,"));
    let out = plan_chart(&r, &helm, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "charts/agent (helm) → DaemonSet kube-system/agent: \
             spec.template.spec.containers[0].name: Invalid value: \"Bad_Name\""
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn a_sim_cluster_renders_for_its_version() {
    let r = chart_repo();
    let sim = r.dir.path().join("sim.yaml");
    std::fs::write(
        &sim,
        "version: 1.32.4\nnodes:\n  - name: n-{i}\n    count: 2\n    labels: {kubernetes.io/os: linux}\n",
    )
    .unwrap();
    let helm = StandIn::helm(RENDERING);
    let cluster = format!("sim:{}", sim.display());
    let out = run_in(
        &r.path(),
        &helm.path(),
        &[
            "plan",
            "--repo",
            ".",
            "--path",
            "charts/agent",
            "--cluster",
            &cluster,
            "--now",
            NOW,
        ],
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let args = helm.recorded("args").unwrap();
    assert!(args.contains("--kube-version\nv1.32.4\n"), "{args}");
}

#[test]
fn the_real_helm_renders_the_example_chart_for_each_environment() {
    let Some(helm) = ["/usr/local/bin/helm", "/usr/bin/helm"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: helm is not installed (the stand-in tests cover the integration)");
        return;
    };
    let path = format!(
        "{}:{SYSTEM_PATH}",
        Path::new(helm).parent().unwrap().display()
    );
    for (values, image) in [
        (
            "examples/helm/values-staging.yaml",
            "registry.example/agent:1.5.0-rc.1",
        ),
        (
            "examples/helm/values-prod.yaml",
            "registry.example/agent:1.4.2",
        ),
    ] {
        let out = run_in(
            &repo_path(""),
            &path,
            &[
                "render",
                "-m",
                "examples/helm/node-agent",
                "--values",
                values,
                "-n",
                "monitoring",
                "--kube-version",
                "1.34",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains(image), "{}", out.stdout);
        assert!(
            out.stdout.contains("resizePolicy"),
            "1.34 keeps it: {}",
            out.stdout
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Kustomize, with the real kubectl.

#[test]
fn a_kustomize_overlay_plans_the_patched_daemonset() {
    if !has_kubectl() {
        return;
    }
    let cluster = snapshot();
    let out = run_in(
        &repo_path(""),
        SYSTEM_PATH,
        &["render", "-m", "examples/kustomize/overlays/prod"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("image: registry.example/log-shipper:2.3.1"),
        "the overlay's image: {}",
        out.stdout
    );
    assert!(out.stdout.contains("maxUnavailable: 10%"), "{}", out.stdout);
    assert!(out.stdout.contains("memory: 512Mi"), "{}", out.stdout);
    let out = run_in(
        &repo_path(""),
        SYSTEM_PATH,
        &[
            "plan",
            "-m",
            "examples/kustomize/overlays/staging",
            "--cluster",
            &cluster,
            "--now",
            NOW,
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("rendered: examples/kustomize/overlays/staging with kustomize v5")
            && out
                .stdout
                .contains("via kubectl, for Kubernetes v1.33 (the cluster's)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("logging     log-shipper"),
        "{}",
        out.stdout
    );
}

/// A repository holding `examples/kustomize` at its root as `deploy/`, committed.
fn kustomize_repo() -> Repo {
    let r = Repo::new();
    copy_dir(&repo_path("examples/kustomize"), &r.path().join("deploy"));
    r.commit("base and overlays");
    r
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn a_pull_request_on_an_overlay_diffs_the_two_renderings() {
    if !has_kubectl() {
        return;
    }
    let r = kustomize_repo();
    let base = r.git(&["rev-parse", "HEAD"]);
    let k = r.path().join("deploy/overlays/prod/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, text.replace("newTag: 2.3.1", "newTag: 2.3.2")).unwrap();
    let head = r.commit("prod: log-shipper 2.3.2");
    let cluster = snapshot();
    let out = run_in(
        &r.path(),
        SYSTEM_PATH,
        &[
            "plan",
            "--repo",
            ".",
            "--base",
            &base,
            "--head",
            &head,
            "--path",
            "deploy/overlays/prod",
            "--cluster",
            &cluster,
            "--now",
            NOW,
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("DaemonSets between base and head: 0 added, 0 removed, 1 changed"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("-        image: registry.example/log-shipper:2.3.1\n+        image: registry.example/log-shipper:2.3.2"),
        "the diff is the patch: {}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("rendered: base and head deploy/overlays/prod with kustomize v"),
        "{}",
        out.stdout
    );
    // The Markdown comment says it too.
    let out = run_in(
        &r.path(),
        SYSTEM_PATH,
        &[
            "plan",
            "--repo",
            ".",
            "--base",
            &base,
            "--head",
            &head,
            "--path",
            "deploy/overlays/prod",
            "--cluster",
            &cluster,
            "--now",
            NOW,
            "-o",
            "markdown",
        ],
    );
    assert!(
        out.stdout
            .contains("Rendered: base and head deploy/overlays/prod with kustomize v"),
        "{}",
        out.stdout
    );
}

/// A stand-in `kubectl` that records that it ran, first on `PATH`.
fn tripwire() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let script = format!("#!/bin/sh\ntouch '{}/ran'\nexit 1\n", dir.path().display());
    let path = dir.path().join("kubectl");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env_path = format!("{}:{SYSTEM_PATH}", dir.path().display());
    (dir, env_path)
}

#[test]
fn a_remote_base_is_refused_before_anything_runs() {
    let r = kustomize_repo();
    r.write(
        "deploy/overlays/prod/kustomization.yaml",
        "resources:\n  - ../../base\n  - https://github.com/acme/agents//deploy/base?ref=v1.2.0\n",
    );
    r.commit("a remote base");
    let (wire, path) = tripwire();
    let cluster = snapshot();
    let out = run_in(
        &r.path(),
        &path,
        &[
            "plan",
            "--repo",
            ".",
            "--path",
            "deploy/overlays/prod",
            "--cluster",
            &cluster,
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "deploy/overlays/prod/kustomization.yaml:3: resources entry \
             \"https://github.com/acme/agents//deploy/base?ref=v1.2.0\" is remote; a plan does \
             not fetch from the network on a pull request's say-so"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("--allow-remote-bases"),
        "{}",
        out.stderr
    );
    assert!(
        !wire.path().join("ran").exists(),
        "no renderer ran: nothing could reach the network"
    );
}

#[test]
fn a_symlink_out_of_the_tree_in_an_overlay_is_refused() {
    let r = kustomize_repo();
    std::fs::write(r.dir.path().join("stolen.yaml"), "kind: Secret\n").unwrap();
    r.symlink("deploy/overlays/prod/extra.yaml", "../../../../stolen.yaml");
    r.commit("a link out");
    let (wire, path) = tripwire();
    let cluster = snapshot();
    let out = run_in(
        &r.path(),
        &path,
        &[
            "plan",
            "--repo",
            ".",
            "--path",
            "deploy/overlays/prod",
            "--cluster",
            &cluster,
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "symlink \"deploy/overlays/prod/extra.yaml\" points to \"../../../../stolen.yaml\", \
             outside the repository"
        ),
        "{}",
        out.stderr
    );
    assert!(!wire.path().join("ran").exists());
}

#[test]
fn an_invalid_daemonset_of_an_overlay_names_the_overlay() {
    if !has_kubectl() {
        return;
    }
    let r = kustomize_repo();
    r.write(
        "deploy/overlays/prod/rollout.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: log-shipper}\nspec:\n  template:\n    spec:\n      containers:\n        - name: shipper\n          restartPolicy: Never\n",
    );
    r.commit("a container restart policy");
    let cluster = snapshot();
    let args = [
        "plan",
        "--repo",
        ".",
        "--path",
        "deploy/overlays/prod",
        "--cluster",
        &cluster,
        "--now",
        NOW,
    ];
    let out = run_in(&r.path(), SYSTEM_PATH, &args);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "deploy/overlays/prod (kustomize) → DaemonSet logging/log-shipper: \
             spec.template.spec.containers[0].restartPolicy: Forbidden: may not be set for \
             non-init containers (Kubernetes v1.33; accepted from v1.35, where \
             ContainerRestartRules is on)"
        ),
        "{}",
        out.stderr
    );
    // For a 1.35 cluster the same rendering is valid.
    let mut args = args.to_vec();
    args.extend(["--kube-version", "1.35"]);
    let out = run_in(&r.path(), SYSTEM_PATH, &args);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn render_none_reads_an_overlays_files_as_they_are() {
    let out = run_in(
        &repo_path(""),
        "/nonexistent",
        &[
            "render",
            "-m",
            "examples/kustomize/base",
            "--render",
            "none",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("registry.example/log-shipper:2.3.0"),
        "{}",
        out.stdout
    );
}

//! `action.yml`, the composite GitHub Action: its inputs and outputs are the documented
//! contract, no expression is ever pasted into a script (script injection), and its scripts
//! do what they say when bash runs them with a stand-in for the daemonsync binary.

use crate::support::repo_path;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn action() -> Value {
    let text = std::fs::read_to_string(repo_path("action.yml")).expect("action.yml exists");
    serde_saphyr::from_str(&text).expect("action.yml is YAML")
}

fn steps(a: &Value) -> &Vec<Value> {
    a["runs"]["steps"].as_array().expect("runs.steps")
}

/// The step with `id` (or, failing that, `name`).
fn step<'a>(a: &'a Value, id: &str) -> &'a Value {
    steps(a)
        .iter()
        .find(|s| s["id"] == id || s["name"] == id)
        .unwrap_or_else(|| panic!("no step {id}"))
}

/// Every `${{ … }}` expression in `text`.
fn expressions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        let end = rest[start..]
            .find("}}")
            .map_or(rest.len(), |e| start + e + 2);
        out.push(rest[start..end].to_string());
        rest = &rest[end..];
    }
    out
}

/// Names after `prefix` (e.g. `inputs.`) in `text`.
fn references(text: &str, prefix: &str) -> BTreeSet<String> {
    text.match_indices(prefix)
        .map(|(i, _)| {
            text[i + prefix.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .collect()
        })
        .collect()
}

#[test]
fn inputs_and_outputs_are_the_documented_ones() {
    let a = action();
    assert_eq!(a["runs"]["using"], "composite");
    let inputs: BTreeSet<&str> = a["inputs"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        inputs,
        BTreeSet::from([
            "version",
            "path",
            "render",
            "values",
            "cluster-snapshot",
            "kubeconfig",
            "comment-key",
            "fail-on",
            "github-token"
        ])
    );
    assert_eq!(a["inputs"]["fail-on"]["default"], "never");
    assert_eq!(a["inputs"]["comment-key"]["default"], "default");
    assert_eq!(
        a["inputs"]["github-token"]["default"],
        "${{ github.token }}"
    );
    assert_eq!(a["inputs"]["path"]["required"], true);
    for (name, input) in a["inputs"].as_object().unwrap() {
        assert!(
            input["description"].is_string(),
            "input {name} is described"
        );
    }
    let outputs = a["outputs"].as_object().unwrap();
    let names: BTreeSet<&str> = outputs.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "has-changes",
            "daemonsets-changed",
            "nodes-affected",
            "risks",
            "exit-code",
            "plan-json"
        ])
    );
    for (name, o) in outputs {
        assert_eq!(o["value"], format!("${{{{ steps.plan.outputs.{name} }}}}"));
        assert!(o["description"].is_string(), "output {name} is described");
    }
}

#[test]
fn every_input_used_exists_and_every_step_reference_resolves() {
    let text = std::fs::read_to_string(repo_path("action.yml")).unwrap();
    let a = action();
    let declared: BTreeSet<String> = a["inputs"].as_object().unwrap().keys().cloned().collect();
    let used: BTreeSet<String> = expressions(&text)
        .iter()
        .flat_map(|e| references(e, "inputs."))
        .collect();
    let unknown: Vec<_> = used.difference(&declared).collect();
    assert!(
        unknown.is_empty(),
        "inputs used but not declared: {unknown:?}"
    );
    let unused: Vec<_> = declared.difference(&used).collect();
    assert!(
        unused.is_empty(),
        "inputs declared but never used: {unused:?}"
    );
    let ids: BTreeSet<String> = steps(&a)
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect();
    let referenced: BTreeSet<String> = expressions(&text)
        .iter()
        .flat_map(|e| references(e, "steps."))
        .collect();
    let dangling: Vec<_> = referenced.difference(&ids).collect();
    assert!(
        dangling.is_empty(),
        "steps referenced but not defined: {dangling:?}"
    );
}

#[test]
fn every_run_step_has_a_shell_and_no_expression_in_its_script() {
    let a = action();
    let mut scripts = 0;
    for s in steps(&a) {
        let Some(run) = s["run"].as_str() else {
            assert!(s["uses"].is_string(), "a step either runs or uses: {s}");
            continue;
        };
        scripts += 1;
        assert_eq!(s["shell"], "bash", "step {} has shell: bash", s["name"]);
        // Inputs and event fields reach scripts through env: only, never pasted in.
        for forbidden in ["inputs.", "github.event."] {
            let pasted: Vec<_> = expressions(run)
                .into_iter()
                .filter(|e| e.contains(forbidden))
                .collect();
            assert!(pasted.is_empty(), "{} pastes {pasted:?}", s["name"]);
        }
        assert!(
            expressions(run).is_empty(),
            "{}: no expression at all in a script",
            s["name"]
        );
    }
    assert!(scripts >= 5, "{scripts} scripts");
}

#[test]
fn every_script_is_valid_bash() {
    let a = action();
    for s in steps(&a) {
        let Some(run) = s["run"].as_str() else {
            continue;
        };
        let out = Command::new("bash").args(["-n", "-c", run]).output();
        let Ok(out) = out else {
            eprintln!("skipped: bash is not installed");
            return;
        };
        assert!(
            out.status.success(),
            "{}: {}",
            s["name"],
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A stand-in for the daemonsync binary: it records its arguments and what it sees of the
/// kubeconfig, then exits with `$STUB_EXIT`.
const STUB: &str = r#"#!/usr/bin/env bash
{
  printf 'arg:%s\n' "$@"
  echo "KUBECONFIG=${KUBECONFIG:-}"
  if [ -n "${KUBECONFIG:-}" ]; then
    echo "mode=$(stat -c %a "$KUBECONFIG")"
    echo "content=$(cat "$KUBECONFIG")"
  fi
  echo "INPUT_KUBECONFIG=${INPUT_KUBECONFIG:-unset}"
  echo "GITHUB_TOKEN=${GITHUB_TOKEN:-}"
} > "$STUB_LOG"
exit "${STUB_EXIT:-2}"
"#;

struct Ran {
    ok: bool,
    /// stdout, then stderr.
    stdout: String,
    log: String,
    outputs: String,
}

/// Runs the script of step `id` as GitHub runs `shell: bash` (`bash --noprofile --norc -eo
/// pipefail`), with `env`, in a temporary runner: RUNNER_TEMP, GITHUB_OUTPUT and the stub as
/// `DAEMONSYNC`.
fn run_step(id: &str, env: &[(&str, &str)], dir: &Path) -> Ran {
    let a = action();
    let step = step(&a, id);
    let script = step["run"].as_str().unwrap().to_string();
    // GitHub sets every variable of the step's env:, empty when the expression is.
    let declared: Vec<String> = step["env"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let stub = dir.join("daemonsync-stub");
    std::fs::write(&stub, STUB).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let temp = dir.join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let output = dir.join("github-output");
    std::fs::write(&output, "").unwrap();
    let log = dir.join("stub.log");
    let _ = std::fs::remove_file(&log);
    let out = Command::new("bash")
        .args([
            "--noprofile",
            "--norc",
            "-e",
            "-o",
            "pipefail",
            "-c",
            &script,
        ])
        .current_dir(dir)
        .env_clear()
        .envs(declared.iter().map(|k| (k.as_str(), "")))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_OUTPUT", &output)
        .env("DAEMONSYNC", &stub)
        .env("STUB_LOG", &log)
        .envs(env.iter().copied())
        .output()
        .expect("bash runs");
    Ran {
        ok: out.status.success(),
        stdout: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        outputs: std::fs::read_to_string(&output).unwrap(),
    }
}

fn has_bash() -> bool {
    let ok = Command::new("bash").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipped: bash is not installed");
    }
    ok
}

const PR_ENV: [(&str, &str); 6] = [
    ("PR_BASE_SHA", "1111111111111111111111111111111111111111"),
    ("PR_HEAD_SHA", "2222222222222222222222222222222222222222"),
    ("INPUT_PATH", "deploy"),
    ("INPUT_COMMENT_KEY", "prod"),
    ("GITHUB_TOKEN", "ghs_token"),
    ("STUB_EXIT", "2"),
];

fn env_with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env: Vec<(&str, &str)> = PR_ENV.to_vec();
    for (k, v) in extra {
        env.retain(|(ek, _)| ek != k);
        env.push((k, v));
    }
    env
}

#[test]
fn plan_step_runs_the_pull_request_against_the_snapshot() {
    if !has_bash() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(&[
        ("INPUT_CLUSTER_SNAPSHOT", "ci/cluster.yaml"),
        ("INPUT_KUBECONFIG", "apiVersion: v1\nkind: Config\n"),
    ]);
    let r = run_step("plan", &env, dir.path());
    assert!(r.ok, "{}", r.stdout);
    let args: Vec<&str> = r
        .log
        .lines()
        .filter_map(|l| l.strip_prefix("arg:"))
        .collect();
    assert_eq!(
        args,
        [
            "plan",
            "--github",
            "--repo",
            ".",
            "--base",
            "1111111111111111111111111111111111111111",
            "--head",
            "2222222222222222222222222222222222222222",
            "--path",
            "deploy",
            "--render",
            "auto",
            "--cluster",
            "snapshot:ci/cluster.yaml",
            "--comment-key",
            "prod"
        ],
        "the snapshot wins over a kubeconfig"
    );
    assert!(r.log.contains("KUBECONFIG=\n"), "{}", r.log);
    assert!(r.log.contains("GITHUB_TOKEN=ghs_token"));
    assert!(
        r.outputs.contains("status=2"),
        "exit 2 is not a failure of this step"
    );
}

#[test]
fn plan_step_without_a_cluster_is_manifest_only() {
    if !has_bash() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let r = run_step("plan", &env_with(&[]), dir.path());
    assert!(r.ok, "{}", r.stdout);
    assert!(r.log.contains("arg:--cluster\narg:none\n"), "{}", r.log);
}

#[test]
fn plan_step_writes_the_kubeconfig_0600_and_removes_it_even_on_failure() {
    if !has_bash() {
        return;
    }
    for exit in ["2", "1"] {
        let dir = tempfile::tempdir().unwrap();
        let env = env_with(&[
            (
                "INPUT_KUBECONFIG",
                "apiVersion: v1\nkind: Config\nusers: []",
            ),
            ("STUB_EXIT", exit),
        ]);
        let r = run_step("plan", &env, dir.path());
        assert!(r.ok, "the plan step itself never fails: {}", r.stdout);
        assert!(r.outputs.contains(&format!("status={exit}")));
        assert!(r.log.contains("arg:--cluster\narg:kube\n"), "{}", r.log);
        let temp = dir.path().join("runner-temp");
        assert!(
            r.log.contains(&format!(
                "KUBECONFIG={}/daemonsync-kubeconfig.",
                temp.display()
            )),
            "{}",
            r.log
        );
        assert!(r.log.contains("mode=600"), "{}", r.log);
        assert!(
            r.log
                .contains("content=apiVersion: v1\nkind: Config\nusers: []")
        );
        assert!(
            r.log.contains("INPUT_KUBECONFIG=unset"),
            "daemonsync does not see the secret in its environment: {}",
            r.log
        );
        let left: Vec<_> = std::fs::read_dir(&temp).unwrap().collect();
        assert!(
            left.is_empty(),
            "kubeconfig removed after exit {exit}: {left:?}"
        );
    }
}

#[test]
fn inputs_with_shell_syntax_stay_data() {
    if !has_bash() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let evil = "deploy\"; touch pwned; echo \"$(touch pwned2)";
    let r = run_step("plan", &env_with(&[("INPUT_PATH", evil)]), dir.path());
    assert!(r.ok, "{}", r.stdout);
    assert!(
        r.log.contains(&format!("arg:--path\narg:{evil}\n")),
        "{}",
        r.log
    );
    assert!(!dir.path().join("pwned").exists() && !dir.path().join("pwned2").exists());
}

#[test]
fn fail_on_decides_the_step_result() {
    if !has_bash() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // (fail-on, exit-code output, status, risks, has-changes, step succeeds)
    let cases = [
        ("never", "0", "0", "0", "false", true),
        ("never", "2", "2", "3", "true", true),
        ("never", "1", "1", "0", "false", false),
        ("never", "", "1", "", "", false),
        ("never", "", "", "", "", false),
        ("risk", "2", "2", "0", "true", true),
        ("risk", "2", "2", "1", "true", false),
        ("risk", "0", "0", "0", "false", true),
        ("changes", "0", "0", "2", "false", true),
        ("changes", "2", "2", "0", "true", false),
    ];
    for (fail_on, code, status, risks, changes, ok) in cases {
        let env = [
            ("FAIL_ON", fail_on),
            ("EXIT_CODE", code),
            ("STATUS", status),
            ("RISKS", risks),
            ("HAS_CHANGES", changes),
        ];
        let r = run_step("Apply fail-on", &env, dir.path());
        assert_eq!(r.ok, ok, "{env:?}: {}", r.stdout);
        if !ok {
            assert!(
                r.stdout.contains("::error title=daemonsync::"),
                "{}",
                r.stdout
            );
        }
    }
}

#[test]
fn bad_inputs_are_refused_before_anything_is_installed() {
    if !has_bash() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = [
        ("INPUT_FAIL_ON", "never"),
        ("INPUT_PATH", "deploy"),
        ("PR_BASE_SHA", "a"),
        ("PR_HEAD_SHA", "b"),
    ];
    assert!(run_step("Check the inputs", &base, dir.path()).ok);
    for (k, v, says) in [
        (
            "INPUT_FAIL_ON",
            "sometimes",
            "fail-on must be never, risk or changes",
        ),
        ("INPUT_PATH", "", "the path input is required"),
        ("PR_BASE_SHA", "", "on: pull_request"),
        (
            "INPUT_RENDER",
            "jsonnet",
            "render must be auto, none, kustomize or helm",
        ),
    ] {
        let mut env = base.to_vec();
        env.retain(|(ek, _)| *ek != k);
        env.push((k, v));
        let r = run_step("Check the inputs", &env, dir.path());
        assert!(!r.ok && r.stdout.contains(says), "{k}={v}: {}", r.stdout);
    }
}

#[test]
fn plan_step_passes_render_and_each_values_file() {
    if !has_bash() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(&[
        ("INPUT_PATH", "charts/agent"),
        ("INPUT_RENDER", "helm"),
        (
            "INPUT_VALUES",
            "charts/agent/values-prod.yaml\n\n  values/eu west.yaml  \n",
        ),
    ]);
    let r = run_step("plan", &env, dir.path());
    assert!(r.ok, "{}", r.stdout);
    assert!(
        r.log.contains(
            "arg:--path\narg:charts/agent\narg:--render\narg:helm\narg:--values\n\
             arg:charts/agent/values-prod.yaml\narg:--values\narg:values/eu west.yaml\n\
             arg:--cluster\n"
        ),
        "one --values per non-empty line, trimmed, spaces kept inside: {}",
        r.log
    );
}

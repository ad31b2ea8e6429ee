//! Planning a pull request on a Kustomize overlay, rendering included.
//!
//! * `plan_pr/kustomize_overlay`: `plan --repo REPO --base BASE --head HEAD --path
//!   deploy/overlays/prod --cluster snapshot:fixtures/snapshots/seven-nodes.yaml` on a
//!   repository holding `examples/kustomize` as `deploy/`, where head bumps the production
//!   image: both sides copied out of their commits and rendered with `kubectl kustomize`, read,
//!   diffed and planned. What `daemonsync plan` computes, without printing it.
//! * `plan_pr/plain_manifests`: the same pull request on the rendered manifests committed as
//!   plain YAML, to show what rendering adds.
//!
//! Needs `git` and `kubectl` (skipped, saying why, without them). Run with
//! `cargo bench --bench render`.

use clap::Parser as _;
use criterion::{Criterion, criterion_group, criterion_main};
use daemonsync::cli::{Cli, Command, compute};
use std::path::Path;
use std::process::Command as Process;
use std::time::Duration;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Process::new("git")
        .args([
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@e",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A repository with the example overlays as `deploy/` and the production overlay rendered
/// as `rendered/prod.yaml`, at two commits: base, and head with the image bumped. Returns
/// (repository, base, head).
fn repository(dir: &Path) -> (std::path::PathBuf, String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    copy_dir(&root.join("examples/kustomize"), &repo.join("deploy"));
    let commit = |message: &str| {
        let out = Process::new("kubectl")
            .args(["kustomize", "deploy/overlays/prod"])
            .current_dir(&repo)
            .output()
            .unwrap();
        std::fs::create_dir_all(repo.join("rendered")).unwrap();
        std::fs::write(repo.join("rendered/prod.yaml"), out.stdout).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", message]);
        git(&repo, &["rev-parse", "HEAD"])
    };
    let base = commit("base");
    let k = repo.join("deploy/overlays/prod/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, text.replace("newTag: 2.3.1", "newTag: 2.3.2")).unwrap();
    let head = commit("head");
    (repo, base, head)
}

fn available(tool: &str, args: &[&str]) -> bool {
    let ok = Process::new(tool)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: {tool} is not installed");
    }
    ok
}

fn pull_request(c: &mut Criterion) {
    if !available("git", &["--version"]) || !available("kubectl", &["version", "--client"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (repo, base, head) = repository(dir.path());
    let snapshot = format!(
        "snapshot:{}/fixtures/snapshots/seven-nodes.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("plan_pr");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(15));
    for (name, path) in [
        ("kustomize_overlay", "deploy/overlays/prod"),
        ("plain_manifests", "rendered"),
    ] {
        let repo = repo.display().to_string();
        let cli = Cli::try_parse_from([
            "daemonsync",
            "plan",
            "--repo",
            &repo,
            "--base",
            &base,
            "--head",
            &head,
            "--path",
            path,
            "--cluster",
            &snapshot,
            "--now",
            "2026-01-01T00:00:00Z",
        ])
        .unwrap();
        let Command::Plan(args) = cli.command else {
            unreachable!("a plan command")
        };
        let opts = args.options().unwrap();
        let run = runtime.block_on(compute(&opts)).unwrap();
        assert_eq!(run.exit_code, 2, "the bump is a change");
        group.bench_function(name, |b| {
            b.iter(|| runtime.block_on(compute(&opts)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, pull_request);
criterion_main!(benches);

//! Helpers shared by the integration tests: paths, the binary, repositories built with the
//! `git` command line, a `git daemon` child process, and small DaemonSet manifests.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `git` in `dir` and returns its trimmed stdout; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_env(dir, args, &[])
}

/// [`git`] with extra environment variables (fixed commit dates, for reproducible ids).
pub fn git_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .envs(env.iter().copied())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A work-tree repository in a temporary directory.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let r = Repo { dir };
        std::fs::create_dir_all(r.path()).unwrap();
        git(&r.path(), &["init", "-q", "-b", "main"]);
        r
    }

    /// The work tree (a subdirectory, so that files "outside the repository" can exist).
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    pub fn url(&self) -> String {
        self.path().display().to_string()
    }

    pub fn file_url(&self) -> String {
        format!("file://{}", self.path().display())
    }

    pub fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    pub fn remove(&self, rel: &str) -> &Self {
        std::fs::remove_file(self.path().join(rel)).unwrap();
        self
    }

    pub fn symlink(&self, rel: &str, target: &str) -> &Self {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
        self
    }

    /// Commits everything and returns the commit id.
    pub fn commit(&self, msg: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Commits everything at a fixed date: the same tree and date give the same commit id on
    /// every machine.
    pub fn commit_at(&self, msg: &str, date: &str) -> String {
        self.git(&["add", "-A"]);
        let env = [("GIT_AUTHOR_DATE", date), ("GIT_COMMITTER_DATE", date)];
        git_env(
            &self.path(),
            &["commit", "-q", "--allow-empty", "-m", msg],
            &env,
        );
        self.git(&["rev-parse", "HEAD"])
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.path(), args)
    }
}

/// A `git daemon` serving a directory on 127.0.0.1; killed on drop.
pub struct GitDaemon {
    child: Child,
    pub port: u16,
}

impl GitDaemon {
    pub fn serve(base: &Path) -> GitDaemon {
        let port = free_port();
        let child = Command::new("git")
            .arg("daemon")
            .arg("--reuseaddr")
            .arg(format!("--base-path={}", base.display()))
            .arg("--export-all")
            .arg(format!("--port={port}"))
            .arg("--listen=127.0.0.1")
            .arg(base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "git daemon did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        GitDaemon { child, port }
    }

    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago (bound to 127.0.0.1:0, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A small DaemonSet in namespace kube-system.
pub fn ds(name: &str, image: &str) -> String {
    ds_with(name, image, "", "")
}

/// A DaemonSet with extra pod-spec YAML (indented by 6) for nodeSelector / tolerations.
pub fn ds_with(name: &str, image: &str, node_selector: &str, tolerations: &str) -> String {
    let mut extra = String::new();
    if !node_selector.is_empty() {
        extra.push_str(&format!("      nodeSelector: {{{node_selector}}}\n"));
    }
    if !tolerations.is_empty() {
        extra.push_str(&format!("      tolerations: [{tolerations}]\n"));
    }
    format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  namespace: kube-system
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
{extra}      containers:
      - name: {name}
        image: {image}
"
    )
}

/// The image of the single container of every DaemonSet, in order.
pub fn images(m: &daemonsync::manifest::Manifests) -> Vec<String> {
    m.daemonsets
        .iter()
        .map(|d| {
            d.daemonset
                .spec
                .as_ref()
                .unwrap()
                .template
                .spec
                .as_ref()
                .unwrap()
                .containers[0]
                .image
                .clone()
                .unwrap()
        })
        .collect()
}

pub fn snapshot() -> String {
    format!(
        "snapshot:{}/fixtures/snapshots/seven-nodes.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A path inside this repository.
pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A file of the shared DaemonSet corpus, which CI checks out beside the repository; `None`
/// (with the reason printed) in a clone without it, so the test calling this skips.
pub fn corpus(file: &str) -> Option<PathBuf> {
    let p = repo_path("../shared/corpus").join(file);
    if p.exists() {
        return Some(p);
    }
    eprintln!(
        "skipped: corpus file {} is absent (CI checks out shared/ beside the repository)",
        p.display()
    );
    None
}

/// The environment variable that runs the long tests (the soak): `.ci/run` sets it in a step
/// of its own, so that a plain `cargo test` stays within its budget.
pub const LONG_TESTS: &str = "DAEMONSYNC_LONG_TESTS";

/// Whether the long tests run; prints why the calling test skips when they do not.
pub fn long_tests(test: &str) -> bool {
    if std::env::var_os(LONG_TESTS).is_some_and(|v| v == "1") {
        return true;
    }
    eprintln!("skipped: {test} is a long test; {LONG_TESTS}=1 runs it");
    false
}

/// The `daemonsync` binary under test.
pub fn daemonsync() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("daemonsync").expect("the daemonsync binary is built")
}

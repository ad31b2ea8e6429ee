//! Helpers for the `sim serve` tests: a sim directory with two running DaemonSets, a server in
//! process or as a child process, and bounded reads of watch streams.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Three nodes, short latencies, and two DaemonSets (`agent`, `logger` in `demo`) running.
pub fn sim_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ds = |name: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}, namespace: demo}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: {name}, image: '{name}:1'}}]\n"
        )
    };
    std::fs::create_dir_all(dir.path().join("running")).unwrap();
    std::fs::write(
        dir.path().join("running/ds.yaml"),
        format!("{}---\n{}", ds("agent"), ds("logger")),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("sim.yaml"),
        "seed: 7\nkubelet: {startLatency: {fixed: 200ms}, terminationGrace: 300ms}\nnodes:\n  - name: 'n-{i}'\n    count: 3\n    labels: {kubernetes.io/os: linux}\n  - name: cp-1\n    labels: {node-role.kubernetes.io/control-plane: ''}\nrunning:\n  - manifest: running/\n",
    )
    .unwrap();
    dir
}

/// The sim file in a [`sim_dir`].
pub fn sim_file(dir: &Path) -> PathBuf {
    dir.join("sim.yaml")
}

/// A `daemonsync sim serve` child process.
pub struct ServeProcess {
    pub child: Child,
    pub url: String,
    pub kubeconfig: PathBuf,
}

impl ServeProcess {
    /// Starts the server and waits (at most 30 s) for its ready line.
    pub fn start(dir: &Path, extra: &[&str]) -> ServeProcess {
        let kubeconfig = dir.join("sim.kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_daemonsync"))
            .args(["sim", "serve", "--config"])
            .arg(sim_file(dir))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("daemonsync runs");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the ready line within 30 s");
        let want = format!("; kubeconfig: {}\n", kubeconfig.display());
        assert!(
            line.starts_with("serving the simulated cluster at http://127.0.0.1:")
                && line.ends_with(&want),
            "{line:?}"
        );
        let url =
            line["serving the simulated cluster at ".len()..line.len() - want.len()].to_string();
        ServeProcess {
            child,
            url,
            kubeconfig,
        }
    }

    /// Sends SIGTERM and returns the exit status (waits at most 10 s).
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("sim serve did not exit within 10 s of SIGTERM");
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` to completion, at most 60 s (`what` names it in the failure), and returns its
/// output.
pub fn output_within_a_minute(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} took over 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// True when kubectl can be run; otherwise prints why the calling test is skipped.
pub fn kubectl_available() -> bool {
    let ok = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: kubectl is not installed");
    }
    ok
}

/// kubectl pointed at a server's kubeconfig, with its discovery cache and home in `cache` (never
/// the user's own).
pub struct Kubectl<'a> {
    pub kubeconfig: &'a Path,
    pub cache: &'a Path,
}

impl Kubectl<'_> {
    /// The kubectl command with `args`, not started.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.args(args)
            .env("KUBECONFIG", self.kubeconfig)
            .env("KUBECACHEDIR", self.cache)
            .env("HOME", self.cache);
        c
    }

    /// The names of the pods of `app` in namespace `demo`.
    pub fn pods_of(&self, app: &str) -> Vec<String> {
        let sel = format!("app={app}");
        self.ok(&["get", "pods", "-n", "demo", "-l", &sel, "-o", "name"])
            .lines()
            .map(String::from)
            .collect()
    }

    /// Runs kubectl (at most 60 s) and returns what it did, success or not.
    pub fn run(&self, args: &[&str]) -> Output {
        output_within_a_minute(self.cmd(args), &format!("kubectl {args:?}"))
    }

    /// Runs kubectl (at most 60 s), asserts success and returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Runs kubectl (at most 60 s), asserts that it fails and returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} succeeded: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).to_string()
    }
}

/// The words of the line of `out` whose first word is `name` (or second, with a namespace).
pub fn row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&name) || w.get(1) == Some(&name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"))
}

/// The column names of a table kubectl printed (its first line).
pub fn header(out: &str) -> Vec<&str> {
    out.lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

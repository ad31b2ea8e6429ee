//! Running a renderer: found on `PATH`, in a scrubbed environment, in its own process group,
//! with a deadline, its output read up to a cap.
//!
//! Nothing of daemonsync's own environment reaches the renderer but `PATH`: no git token, no
//! cloud credentials, no kubeconfig. `HOME`, the XDG directories and Helm's and kustomize's
//! own directories point into the render's temporary directory, so caches, plugins and
//! repositories the user configured are not used and nothing is left behind. A renderer that
//! outlives its deadline, or writes more than the cap, is killed with every process it
//! started (its process group).

use super::RenderError;
use crate::source::redact;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// The most of a renderer's stderr kept for an error message; the rest is read and dropped.
const STDERR_CAP: usize = 16 * 1024;
/// How long the output of a renderer that exited (or was killed) is waited for: a process
/// that escaped the group may hold the pipe open.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How often a running renderer is checked.
const POLL: Duration = Duration::from_millis(5);

/// Where a renderer runs and what it may see.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    /// The directories searched for the renderer, and the only variable passed through.
    pub path: OsString,
    /// The temporary directory of this render: `HOME` and the tools' directories are in it.
    pub scratch: PathBuf,
    /// The working directory (the exported tree).
    pub cwd: PathBuf,
    /// The deadline of each run.
    pub timeout: Duration,
}

impl Sandbox {
    /// The environment of every run: `PATH` and directories inside the scratch directory.
    fn environment(&self) -> Vec<(&'static str, OsString)> {
        let dir = |name: &str| self.scratch.join(name).into_os_string();
        vec![
            ("PATH", self.path.clone()),
            ("HOME", dir("home")),
            ("TMPDIR", dir("tmp")),
            ("XDG_CONFIG_HOME", dir("home/.config")),
            ("XDG_CACHE_HOME", dir("home/.cache")),
            ("XDG_DATA_HOME", dir("home/.local/share")),
            ("HELM_CONFIG_HOME", dir("home/.config/helm")),
            ("HELM_CACHE_HOME", dir("home/.cache/helm")),
            ("HELM_DATA_HOME", dir("home/.local/share/helm")),
            ("HELM_NO_PLUGINS", "1".into()),
            (
                "KUSTOMIZE_PLUGIN_HOME",
                dir("home/.config/kustomize/plugin"),
            ),
            // A kubeconfig that does not exist: no renderer talks to a cluster.
            ("KUBECONFIG", dir("home/.kube/config")),
            ("LANG", "C".into()),
        ]
    }

    /// Creates the directories the environment names.
    pub fn prepare(&self) -> std::io::Result<()> {
        for (name, dir) in self.environment() {
            if name.ends_with("HOME") || name == "TMPDIR" {
                std::fs::create_dir_all(PathBuf::from(dir))?;
            }
        }
        Ok(())
    }

    /// The first executable named `name` in the sandbox's `PATH`.
    pub fn find(&self, name: &str) -> Option<PathBuf> {
        find_on_path(&self.path, name)
    }
}

/// The first executable named `name` in `path` (a `PATH` value).
pub(crate) fn find_on_path(path: &OsString, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What a finished run printed.
#[derive(Debug)]
pub(crate) struct Output {
    pub stdout: Vec<u8>,
}

/// Runs `program args` in `sandbox`; its stdout (at most `cap` bytes) when it exits 0. `what`
/// names the run in errors (`kustomize build overlays/prod`).
pub(crate) fn run(
    sandbox: &Sandbox,
    program: &Path,
    args: &[OsString],
    what: &str,
    cap: u64,
) -> Result<Output, RenderError> {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(sandbox.environment())
        .current_dir(&sandbox.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a timeout kills whatever it started too.
        .process_group(0);
    let mut child = command.spawn().map_err(|e| RenderError::Start {
        what: what.to_string(),
        message: e.to_string(),
    })?;
    let group = rustix::process::Pid::from_child(&child);
    let kill_group = || {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    };
    let overflow = Arc::new(AtomicBool::new(false));
    let (out_tx, out_rx) = mpsc::channel();
    let (err_tx, err_rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    {
        let overflow = Arc::clone(&overflow);
        std::thread::spawn(move || {
            let _ = out_tx.send(stdout.map(|s| read_capped(s, cap, &overflow)));
        });
    }
    std::thread::spawn(move || {
        let _ = err_tx.send(stderr.map(read_stderr));
    });
    let deadline = Instant::now() + sandbox.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if overflow.load(Ordering::SeqCst) {
            kill_group();
            let _ = child.wait();
            return Err(RenderError::OutputTooLarge {
                what: what.to_string(),
                limit: cap,
            });
        }
        if Instant::now() >= deadline {
            kill_group();
            let _ = child.wait();
            return Err(RenderError::TimedOut {
                what: what.to_string(),
                timeout: sandbox.timeout,
            });
        }
        std::thread::sleep(POLL);
    };
    // Whatever it left running in its group goes too.
    kill_group();
    let stdout = out_rx.recv_timeout(DRAIN_GRACE).ok().flatten();
    let stderr = err_rx
        .recv_timeout(DRAIN_GRACE)
        .ok()
        .flatten()
        .unwrap_or_default();
    if overflow.load(Ordering::SeqCst) {
        return Err(RenderError::OutputTooLarge {
            what: what.to_string(),
            limit: cap,
        });
    }
    let status = status.ok_or_else(|| RenderError::Start {
        what: what.to_string(),
        message: "could not wait for it".into(),
    })?;
    if !status.success() {
        return Err(RenderError::Failed {
            what: what.to_string(),
            status: status.code().map_or_else(
                || "was killed by a signal".into(),
                |c| format!("exited {c}"),
            ),
            stderr: stderr_text(&stderr),
        });
    }
    let stdout = stdout.ok_or_else(|| RenderError::Start {
        what: what.to_string(),
        message: "its output was not closed (a process it started still holds it)".into(),
    })?;
    Ok(Output { stdout })
}

/// Reads at most `cap` bytes; one more sets `overflow` and stops reading (the writer then
/// fails or is killed).
fn read_capped(mut from: impl Read, cap: u64, overflow: &AtomicBool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if (out.len() + n) as u64 > cap {
                    overflow.store(true, Ordering::SeqCst);
                    break;
                }
                out.extend_from_slice(&chunk[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    out
}

/// Keeps the first [`STDERR_CAP`] bytes of stderr and drains the rest.
fn read_stderr(mut from: impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 8 * 1024];
    loop {
        match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = STDERR_CAP.saturating_sub(out.len());
                out.extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    out
}

/// A renderer's stderr for a message: lossy text, redacted as every message is, trimmed, its
/// lines joined with `; ` (at most 20 of them).
fn stderr_text(bytes: &[u8]) -> String {
    let text = redact(&String::from_utf8_lossy(bytes));
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = lines
        .iter()
        .take(20)
        .copied()
        .collect::<Vec<_>>()
        .join("; ");
    if lines.len() > 20 {
        out.push_str(&format!("; … ({} more lines)", lines.len() - 20));
    }
    if out.is_empty() {
        out.push_str("(nothing on stderr)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(dir: &Path, timeout: Duration) -> Sandbox {
        let s = Sandbox {
            path: "/usr/bin:/bin".into(),
            scratch: dir.to_path_buf(),
            cwd: dir.to_path_buf(),
            timeout,
        };
        s.prepare().unwrap();
        s
    }

    fn sh(script: &str) -> Vec<OsString> {
        vec!["-c".into(), script.into()]
    }

    #[test]
    fn a_renderer_sees_path_and_its_own_directories_only() {
        let dir = tempfile::tempdir().unwrap();
        let s = sandbox(dir.path(), Duration::from_secs(10));
        let out = run(&s, Path::new("/bin/sh"), &sh("env | sort"), "env", 1 << 20).unwrap();
        let env = String::from_utf8(out.stdout).unwrap();
        let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
        for name in &names {
            assert!(
                [
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
                    "_"
                ]
                .contains(name),
                "unexpected variable {name} in\n{env}"
            );
        }
        let home = format!("HOME={}/home", dir.path().display());
        assert!(env.lines().any(|l| l == home), "{env}");
    }

    #[test]
    fn a_renderer_that_never_exits_is_killed_with_its_children_within_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let s = sandbox(dir.path(), Duration::from_millis(300));
        let pid_file = dir.path().join("child.pid");
        let script = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let err = run(&s, Path::new("/bin/sh"), &sh(&script), "hang", 1 << 20).unwrap_err();
        assert!(matches!(err, RenderError::TimedOut { .. }), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // The background child went with the group.
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone = (0..200).any(|_| {
            let alive = Path::new(&format!("/proc/{pid}")).exists()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ");
            if alive {
                std::thread::sleep(Duration::from_millis(10));
            }
            !alive
        });
        assert!(gone, "the renderer's child {pid} is still running");
    }

    #[test]
    fn output_beyond_the_cap_is_an_error_not_memory() {
        let dir = tempfile::tempdir().unwrap();
        let s = sandbox(dir.path(), Duration::from_secs(20));
        let err = run(
            &s,
            Path::new("/bin/sh"),
            &sh("yes 'a: bomb' | head -c 100000000"),
            "bomb",
            64 * 1024,
        )
        .unwrap_err();
        assert!(
            matches!(err, RenderError::OutputTooLarge { limit: 65536, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_failing_renderer_names_its_status_and_its_stderr_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let s = sandbox(dir.path(), Duration::from_secs(10));
        crate::source::register_url("https://bot:s3cr3t-t0ken@example.com/r.git");
        let script = "echo 'fetching https://bot:s3cr3t-t0ken@example.com/r.git' >&2; \
                      echo 'Error: boom' >&2; exit 3";
        let err = run(
            &s,
            Path::new("/bin/sh"),
            &sh(script),
            "helm template x",
            1 << 20,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("helm template x exited 3"), "{err}");
        assert!(err.contains("Error: boom"), "{err}");
        assert!(!err.contains("s3cr3t-t0ken"), "{err}");
    }

    #[test]
    fn programs_are_found_on_the_given_path_only() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("helm");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let path: OsString = dir.path().as_os_str().to_owned();
        assert_eq!(find_on_path(&path, "helm"), None, "not executable");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_on_path(&path, "helm"), Some(tool));
        assert_eq!(find_on_path(&"relative/dir".into(), "helm"), None);
    }
}

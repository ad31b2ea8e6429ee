//! Regression tests for hostile or unlucky source trees and URLs (HARDENING.md, "Sources"):
//! names that are not UTF-8, symlinks out of any `--manifests` path, trees too deep to walk
//! recursively, huge symlink blobs, FIFOs, silent git servers and credentials in URLs.

use crate::support::{Repo, daemonsync, ds};
use daemonsync::manifest::{Limits, LoadOptions};
use daemonsync::source::{GitSource, LocalSource, Source, SourceError};
use git2::{FileMode, Oid, Repository, Signature};
use std::path::Path;
use std::time::Duration;

/// Commits `tree` as the only commit of a fresh repository at `dir`.
fn commit_tree(repo: &Repository, tree: Oid) {
    let sig = Signature::now("t", "t@example.com").unwrap();
    let tree = repo.find_tree(tree).unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "hostile tree", &tree, &[])
        .unwrap();
}

fn git_load(dir: &Path) -> Result<daemonsync::source::Rendered, SourceError> {
    GitSource::new(dir.display().to_string(), "HEAD", "").load(&LoadOptions::default())
}

#[cfg(unix)]
#[test]
fn local_reader_reads_file_names_that_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"agent-\xe9.yaml");
    std::fs::write(dir.path().join(name), ds("agent", "agent:1")).unwrap();
    std::fs::write(dir.path().join("other.yaml"), ds("other", "other:1")).unwrap();
    let rendered = LocalSource::new([dir.path()])
        .load(&LoadOptions::default())
        .unwrap();
    let names: Vec<_> = rendered
        .manifests
        .daemonsets
        .iter()
        .map(|d| d.daemonset.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["agent", "other"], "the non-UTF-8 file was skipped");
}

#[test]
fn git_reader_reads_file_names_that_are_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let blob = repo.blob(ds("agent", "agent:1").as_bytes()).unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert(b"agent-\xe9.yaml".to_vec(), blob, FileMode::Blob.into())
        .unwrap();
    let tree = tb.write().unwrap();
    commit_tree(&repo, tree);
    let rendered = git_load(dir.path()).unwrap();
    assert_eq!(rendered.manifests.daemonsets.len(), 1);
    assert!(
        rendered.manifests.daemonsets[0]
            .source
            .file
            .starts_with("agent-")
    );
}

#[cfg(unix)]
#[test]
fn symlink_out_of_any_of_several_manifest_paths_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("passwd.yaml");
    std::fs::write(&secret, ds("secret", "secret:1")).unwrap();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    std::fs::write(a.path().join("a.yaml"), ds("a", "a:1")).unwrap();
    std::os::unix::fs::symlink(&secret, b.path().join("link.yaml")).unwrap();
    // A link from the second path into the first is outside the second too.
    std::os::unix::fs::symlink(a.path().join("a.yaml"), b.path().join("to-a.yaml")).unwrap();
    let err = LocalSource::new([a.path(), b.path()])
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::SymlinkEscapes { .. }), "{err}");
    assert!(err.to_string().contains("link.yaml") || err.to_string().contains("to-a.yaml"));
}

#[test]
fn git_tree_twenty_thousand_levels_deep_is_refused_without_recursing() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let blob = repo.blob(ds("agent", "agent:1").as_bytes()).unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert("ds.yaml", blob, FileMode::Blob.into()).unwrap();
    let mut tree = tb.write().unwrap();
    for _ in 0..20_000 {
        let mut tb = repo.treebuilder(None).unwrap();
        tb.insert("d", tree, FileMode::Tree.into()).unwrap();
        tree = tb.write().unwrap();
    }
    commit_tree(&repo, tree);
    let err = git_load(dir.path()).unwrap_err();
    assert!(
        matches!(err, SourceError::TooDeep { limit: 64, .. }),
        "{err}"
    );
    // Within the limit the same shape is read.
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let blob = repo.blob(ds("agent", "agent:1").as_bytes()).unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert("ds.yaml", blob, FileMode::Blob.into()).unwrap();
    let mut tree = tb.write().unwrap();
    for _ in 0..60 {
        let mut tb = repo.treebuilder(None).unwrap();
        tb.insert("d", tree, FileMode::Tree.into()).unwrap();
        tree = tb.write().unwrap();
    }
    commit_tree(&repo, tree);
    assert_eq!(git_load(dir.path()).unwrap().manifests.daemonsets.len(), 1);
}

#[test]
fn huge_symlink_blob_is_refused_by_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let target = vec![b'a'; 8 * 1024 * 1024];
    let link = repo.blob(&target).unwrap();
    let blob = repo.blob(ds("agent", "agent:1").as_bytes()).unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert("agent.yaml", blob, FileMode::Blob.into())
        .unwrap();
    tb.insert("link.yaml", link, FileMode::Link.into()).unwrap();
    let tree = tb.write().unwrap();
    commit_tree(&repo, tree);
    let err = git_load(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            SourceError::LinkTooLong {
                size: 8388608,
                limit: 4096,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn deep_local_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut path = dir.path().to_path_buf();
    for _ in 0..5 {
        path.push("d");
    }
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join("ds.yaml"), ds("agent", "agent:1")).unwrap();
    let opts = |depth| LoadOptions {
        limits: Limits {
            max_dir_depth: depth,
            ..Limits::default()
        },
        ..LoadOptions::default()
    };
    let err = LocalSource::new([dir.path()]).load(&opts(4)).unwrap_err();
    assert!(
        matches!(err, SourceError::TooDeep { limit: 4, .. }),
        "{err}"
    );
    assert!(LocalSource::new([dir.path()]).load(&opts(5)).is_ok());
}

#[cfg(unix)]
#[test]
fn fifo_named_as_a_manifest_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.yaml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    // Named explicitly...
    let err = LocalSource::new([&fifo])
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::NotAFile { .. }), "{err}");
    // ...or found in a directory.
    let err = LocalSource::new([dir.path()])
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::NotAFile { .. }), "{err}");
    // And through the command line, which must exit instead of blocking.
    daemonsync()
        .args(["render", "--manifests"])
        .arg(&fifo)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("not a regular file"));
}

#[test]
fn git_server_that_never_answers_times_out_naming_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept connections and hold them open without a byte.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    let cache = tempfile::tempdir().unwrap();
    let url = format!("http://bot:s3cr%2Ft@127.0.0.1:{port}/repo.git");
    let out = daemonsync()
        .args([
            "plan",
            "--cluster",
            "none",
            "--git-timeout",
            "1s",
            "--repo",
            &url,
        ])
        .arg("--cache-dir")
        .arg(cache.path())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("127.0.0.1:{port}/repo.git")),
        "{stderr}"
    );
    assert!(stderr.contains("--git-timeout"), "{stderr}");
    assert!(!stderr.contains("s3cr"), "credential printed: {stderr}");
    assert!(!stderr.contains("last good commit"), "{stderr}");
}

/// `daemonsync COMMAND --repo URL` in `dir` against a remote that does not answer (2 s git
/// timeout, tracing on, no SSH): the exit code and everything printed.
fn unreachable_remote(
    dir: &Path,
    command: &[&str],
    url: &str,
    cache: &Path,
) -> (Option<i32>, String) {
    let out = daemonsync()
        .current_dir(dir)
        .args(command)
        .args(["--git-timeout", "2s", "--repo", url])
        .arg("--cache-dir")
        .arg(cache)
        .env("RUST_LOG", "trace")
        .env("GIT_SSH_COMMAND", "false")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), all)
}

#[test]
fn credentials_of_every_shape_never_reach_the_output() {
    let cache = tempfile::tempdir().unwrap();
    let port = crate::support::free_port();
    for url in [
        format!("https://user:pa#ss-word@127.0.0.1:{port}/r.git"),
        format!("https://user:pa?ss-word@127.0.0.1:{port}/r.git"),
        format!("https://user:AbC/pass-word@127.0.0.1:{port}/r.git"),
        format!("https://user:pa ss-word@127.0.0.1:{port}/r.git"),
        format!("https://user:pa@ss-word@127.0.0.1:{port}/r.git"),
        "user:pass-word@127.0.0.1:org/r.git".to_string(),
    ] {
        let (code, all) = unreachable_remote(
            Path::new("."),
            &["plan", "--cluster", "none"],
            &url,
            cache.path(),
        );
        assert_eq!(code, Some(1), "{url}: {all}");
        for secret in ["ss-word", "pass-word"] {
            assert!(!all.contains(secret), "{url}: credential printed: {all}");
        }
    }
}

#[test]
fn symlink_into_the_repository_is_still_followed() {
    let repo = Repo::new();
    repo.write("base/agent.yaml", &ds("agent", "agent:1"));
    repo.symlink("deploy/agent.yaml", "../base/agent.yaml");
    repo.commit("link");
    let rendered = GitSource::new(repo.path().display().to_string(), "HEAD", "deploy")
        .load(&LoadOptions::default())
        .unwrap();
    assert_eq!(rendered.manifests.daemonsets.len(), 1);
}

#[test]
fn same_daemonset_in_two_files_is_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), ds("agent", "agent:1")).unwrap();
    std::fs::write(dir.path().join("b.yaml"), ds("agent", "agent:2")).unwrap();
    let err = LocalSource::new([dir.path()])
        .load(&LoadOptions::default())
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SourceError::Duplicate { .. }), "{msg}");
    assert!(msg.contains("a.yaml") && msg.contains("b.yaml"), "{msg}");
    assert!(msg.contains("kube-system/agent"), "{msg}");
    // plan refuses too, with exit 1 and nothing planned.
    daemonsync()
        .args(["plan", "--cluster", "none", "--manifests"])
        .arg(dir.path())
        .assert()
        .code(1)
        .stderr(predicates::str::contains("defined twice"));
}

#[cfg(unix)]
#[test]
fn symlink_to_a_manifest_in_the_same_tree_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.yaml"), ds("agent", "agent:1")).unwrap();
    std::os::unix::fs::symlink("agent.yaml", dir.path().join("copy.yaml")).unwrap();
    let err = LocalSource::new([dir.path()])
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::Duplicate { .. }), "{err}");
    // The same in a git tree.
    let repo = Repo::new();
    repo.write("agent.yaml", &ds("agent", "agent:1"));
    repo.symlink("copy.yaml", "agent.yaml");
    repo.commit("dup");
    let err = GitSource::new(repo.path().display().to_string(), "HEAD", "")
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::Duplicate { .. }), "{err}");
}

#[test]
fn tokens_in_query_strings_fragments_and_ssh_urls_never_reach_any_output() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sim.yaml"),
        "nodes: [{name: 'n-{i}', count: 2}]\n",
    )
    .unwrap();
    let port = crate::support::free_port();
    let urls = [
        format!("https://127.0.0.1:{port}/r.git?access_token=qs-sekrit"),
        format!("https://127.0.0.1:{port}/r.git?x=1&private_token=qs-sekrit&y#frag-sekrit"),
        format!("http://127.0.0.1:{port}/r.git#tok-sekrit"),
        format!("https://x-access-token:ghs_tok-sekrit@127.0.0.1:{port}/r.git"),
        format!("https://us%40er:p%2Fw-sekrit@127.0.0.1:{port}/r.git?t=qs-sekrit"),
        format!("ssh://git:ssh-sekrit@127.0.0.1:{port}/r.git"),
        "git:scp-sekrit@127.0.0.1:org/r.git".to_string(),
    ];
    for url in &urls {
        for command in [
            vec!["plan", "--cluster", "none"],
            vec!["apply", "--cluster", "sim:sim.yaml"],
            vec![
                "plan",
                "--cluster",
                "none",
                "--base",
                "main",
                "--head",
                "pr",
                "-o",
                "json",
            ],
        ] {
            let (code, all) = unreachable_remote(dir.path(), &command, url, cache.path());
            assert_eq!(code, Some(1), "{command:?} {url}: {all}");
            assert!(
                all.contains("127.0.0.1"),
                "{command:?} {url}: the URL is not named: {all}"
            );
            assert!(
                !all.contains("sekrit"),
                "{command:?} {url}: secret printed: {all}"
            );
        }
    }
}

/// Writes a raw tree object: (mode, name bytes, id) per entry, as a hostile server may send
/// it (names with `/` or `..`, modes that lie about the object).
fn raw_tree(repo: &Repository, entries: &[(&str, &[u8], Oid)]) -> Oid {
    let mut bytes = Vec::new();
    for (mode, name, id) in entries {
        bytes.extend_from_slice(mode.as_bytes());
        bytes.push(b' ');
        bytes.extend_from_slice(name);
        bytes.push(0);
        bytes.extend_from_slice(id.as_bytes());
    }
    repo.odb()
        .unwrap()
        .write(git2::ObjectType::Tree, &bytes)
        .unwrap()
}

#[test]
fn hostile_tree_objects_are_read_as_blobs_of_the_tree_or_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("evil.yaml"), ds("evil", "evil:1")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let agent = repo.blob(ds("agent", "agent:1").as_bytes()).unwrap();
    let other = repo.blob(ds("other", "other:1").as_bytes()).unwrap();
    let hidden = repo.blob(ds("hidden", "hidden:1").as_bytes()).unwrap();
    // Names a well-behaved git refuses: absolute, `..`-relative, with slashes. They are names
    // in the tree, nothing more: the blobs they name are read (a name starting with a dot is
    // hidden, as everywhere), never a file outside.
    let tree = raw_tree(
        &repo,
        &[
            ("100644", b"../evil.yaml", hidden),
            ("100644", b"/abs.yaml", agent),
            ("100644", b"a/../b.yaml", other),
        ],
    );
    commit_tree(&repo, tree);
    let rendered = git_load(dir.path()).unwrap();
    let mut names: Vec<_> = rendered
        .manifests
        .daemonsets
        .iter()
        .map(|d| d.daemonset.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["agent", "other"], "read something not in the tree");

    // A tree entry whose object is missing, and a blob that claims to be a tree.
    let missing = Oid::from_bytes(&[0x42; 20]).unwrap();
    for (mode, id) in [("100644", missing), ("40000", missing), ("40000", agent)] {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let agent = repo.blob(ds("agent", "agent:1").as_bytes()).unwrap();
        let tree = raw_tree(
            &repo,
            &[("100644", b"agent.yaml", agent), (mode, b"z.yaml", id)],
        );
        commit_tree(&repo, tree);
        let err = git_load(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, SourceError::Repository { .. }),
            "{mode} {id}: {msg}"
        );
        assert!(!msg.contains("panicked"), "{msg}");
    }
}

/// Found by the `git_tree` fuzz target: git2 panics looking up a name with a NUL byte, which
/// a subpath or a symlink's target (any bytes, in a hostile tree) may hold.
#[test]
fn nul_bytes_in_a_subpath_or_a_symlink_target_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let agent = repo.blob(ds("agent", "agent:1").as_bytes()).unwrap();
    let link = repo.blob(b"agent.yaml\0.yaml").unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert("agent.yaml", agent, FileMode::Blob.into())
        .unwrap();
    tb.insert("link.yaml", link, FileMode::Link.into()).unwrap();
    let tree = tb.write().unwrap();
    commit_tree(&repo, tree);
    let err = git_load(dir.path()).unwrap_err();
    assert!(matches!(err, SourceError::PathNotFound { .. }), "{err}");
    assert!(err.to_string().contains("link.yaml"), "{err}");
    assert!(err.to_string().contains("dangling symlink"), "{err}");

    let err = GitSource::new(dir.path().display().to_string(), "HEAD", "\0")
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::PathNotAllowed { .. }), "{err}");
}

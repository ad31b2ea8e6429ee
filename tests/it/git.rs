//! GitSource against real repositories: refs, mirrors and fetches, safety checks.

use crate::support::{GitDaemon, Repo, ds, git, images};
use daemonsync::manifest::{Limits, LoadOptions};
use daemonsync::source::{GitAuth, GitSource, Source, SourceError};
use std::path::Path;

fn source(url: &str, reference: &str, path: &str, cache: &Path) -> GitSource {
    GitSource {
        url: url.to_string(),
        reference: reference.to_string(),
        path: path.to_string(),
        cache_dir: cache.to_path_buf(),
        auth: GitAuth::default(),
        progress: false,
        timeout: daemonsync::source::git::DEFAULT_NETWORK_TIMEOUT,
        render: daemonsync::source::RenderOptions::default(),
    }
}

fn load(
    url: &str,
    reference: &str,
    path: &str,
    cache: &Path,
) -> Result<daemonsync::source::Rendered, SourceError> {
    source(url, reference, path, cache).load(&LoadOptions::default())
}

/// main: c1 (1.0, tagged v1) -> c2 (1.1); branch feature: c3 (1.2) on top of c2.
fn history() -> (Repo, [String; 3]) {
    let r = Repo::new();
    r.write("deploy/agent.yaml", &ds("agent", "agent:1.0"))
        .write("README.txt", "not a manifest");
    let c1 = r.commit("one");
    r.git(&["tag", "v1"]);
    r.write("deploy/agent.yaml", &ds("agent", "agent:1.1"));
    let c2 = r.commit("two");
    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("deploy/agent.yaml", &ds("agent", "agent:1.2"));
    let c3 = r.commit("three");
    r.git(&["checkout", "-q", "main"]);
    (r, [c1, c2, c3])
}

fn assert_refs(url: &str, cache: &Path, commits: &[String; 3]) {
    for (reference, commit, image) in [
        ("main", &commits[1], "agent:1.1"),
        ("v1", &commits[0], "agent:1.0"),
        (commits[0].as_str(), &commits[0], "agent:1.0"),
        ("feature", &commits[2], "agent:1.2"),
        ("HEAD", &commits[1], "agent:1.1"),
    ] {
        let r =
            load(url, reference, "deploy", cache).unwrap_or_else(|e| panic!("{reference}: {e}"));
        assert_eq!(&r.revision, commit, "{reference}");
        assert_eq!(images(&r.manifests), vec![image], "{reference}");
        assert_eq!(r.files, 1);
    }
}

#[test]
fn local_path_branch_tag_and_commit() {
    let (r, commits) = history();
    let cache = tempfile::tempdir().unwrap();
    assert_refs(&r.url(), cache.path(), &commits);
    // A local repository is opened directly: nothing is mirrored.
    assert!(!cache.path().join("repos").exists());
}

#[test]
fn file_url_is_mirrored_bare_and_fetched_not_recloned() {
    let (r, commits) = history();
    let cache = tempfile::tempdir().unwrap();
    assert_refs(&r.file_url(), cache.path(), &commits);
    let src = source(&r.file_url(), "main", "deploy", cache.path());
    let mirror = src.mirror_dir();
    assert!(
        mirror.join("HEAD").exists() && !mirror.join("deploy").exists(),
        "bare mirror"
    );
    assert!(mirror.starts_with(cache.path().join("repos")));

    // A new commit upstream is fetched into the same mirror.
    r.write("deploy/agent.yaml", &ds("agent", "agent:2.0"));
    let c4 = r.commit("four");
    let rendered = src.load(&LoadOptions::default()).unwrap();
    assert_eq!(rendered.revision, c4);
    assert_eq!(images(&rendered.manifests), vec!["agent:2.0"]);
    assert_eq!(
        std::fs::read_dir(cache.path().join("repos"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn deleted_branch_is_an_error_naming_it() {
    let (r, _) = history();
    let cache = tempfile::tempdir().unwrap();
    load(&r.file_url(), "feature", "deploy", cache.path()).unwrap();
    r.git(&["branch", "-q", "-D", "feature"]);
    let err = load(&r.file_url(), "feature", "deploy", cache.path()).unwrap_err();
    assert!(matches!(err, SourceError::RefNotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("\"feature\""), "{err}");
}

#[test]
fn force_push_is_what_fetch_brings() {
    let (work, commits) = history();
    let bare = tempfile::tempdir().unwrap();
    let origin = bare.path().join("origin.git");
    git(
        bare.path(),
        &[
            "clone",
            "-q",
            "--bare",
            &work.url(),
            origin.to_str().unwrap(),
        ],
    );
    let url = format!("file://{}", origin.display());
    let cache = tempfile::tempdir().unwrap();
    assert_eq!(
        load(&url, "main", "deploy", cache.path()).unwrap().revision,
        commits[1]
    );

    // Rewrite main: drop c2, commit something else, force-push.
    work.git(&["reset", "-q", "--hard", &commits[0]]);
    work.write("deploy/agent.yaml", &ds("agent", "agent:9.9"));
    let rewritten = work.commit("rewritten");
    work.git(&["push", "-q", "--force", origin.to_str().unwrap(), "main"]);

    let r = load(&url, "main", "deploy", cache.path()).unwrap();
    assert_eq!(r.revision, rewritten);
    assert_eq!(images(&r.manifests), vec!["agent:9.9"]);
}

#[test]
fn git_daemon_on_localhost() {
    let (r, commits) = history();
    let daemon = GitDaemon::serve(r.dir.path());
    let url = daemon.url("repo");
    let cache = tempfile::tempdir().unwrap();
    assert_refs(&url, cache.path(), &commits);
    r.write("deploy/agent.yaml", &ds("agent", "agent:3.0"));
    let c4 = r.commit("four");
    let rendered = load(&url, "main", "deploy", cache.path()).unwrap();
    assert_eq!(rendered.revision, c4);
    assert_eq!(images(&rendered.manifests), vec!["agent:3.0"]);
}

#[test]
fn symlinks_inside_are_followed_and_escaping_ones_refused() {
    let r = Repo::new();
    r.write("shared/agent.yaml", &ds("agent", "agent:1.0"))
        .symlink("deploy/agent.yaml", "../shared/agent.yaml")
        .symlink("deploy/dirlink", "../shared");
    r.commit("inside");
    let cache = tempfile::tempdir().unwrap();
    let ok = load(&r.url(), "main", "deploy", cache.path()).unwrap();
    assert_eq!(images(&ok.manifests), vec!["agent:1.0"]);

    // The target exists on disk next to the repository, but it is outside it.
    std::fs::write(r.dir.path().join("outside.yaml"), ds("evil", "evil:1")).unwrap();
    r.symlink("deploy/leak.yaml", "../../outside.yaml");
    r.commit("escape");
    let err = load(&r.url(), "main", "deploy", cache.path()).unwrap_err();
    assert!(matches!(err, SourceError::SymlinkEscapes { .. }), "{err:?}");
    assert!(err.to_string().contains("deploy/leak.yaml"), "{err}");

    r.remove("deploy/leak.yaml");
    r.symlink("deploy/abs.yaml", "/etc/hostname");
    r.commit("absolute");
    let err = load(&r.url(), "main", "deploy", cache.path()).unwrap_err();
    assert!(err.to_string().contains("deploy/abs.yaml"), "{err}");
}

#[test]
fn dotdot_and_absolute_paths_are_refused() {
    let (r, _) = history();
    let cache = tempfile::tempdir().unwrap();
    for path in ["../repo/deploy", "deploy/../..", "/etc", "deploy/../../x"] {
        let err = load(&r.url(), "main", path, cache.path()).unwrap_err();
        assert!(
            matches!(err, SourceError::PathNotAllowed { .. }),
            "{path}: {err:?}"
        );
    }
    let err = load(&r.url(), "main", "nope", cache.path()).unwrap_err();
    assert!(matches!(err, SourceError::PathNotFound { .. }), "{err:?}");
}

#[test]
fn limits_on_file_size_count_and_total() {
    let r = Repo::new();
    r.write("deploy/a.yaml", &ds("a", "a:1")).write(
        "deploy/b.yaml",
        &format!("{}# {}\n", ds("b", "b:1"), "x".repeat(4000)),
    );
    r.commit("big");
    let cache = tempfile::tempdir().unwrap();
    let with = |limits: Limits| {
        source(&r.url(), "main", "deploy", cache.path())
            .load(&LoadOptions {
                limits,
                ..LoadOptions::default()
            })
            .unwrap_err()
    };
    let err = with(Limits {
        max_file_bytes: 1000,
        ..Limits::default()
    });
    assert!(
        matches!(err, SourceError::FileTooLarge { ref file, .. } if file == "deploy/b.yaml"),
        "{err:?}"
    );
    assert!(err.to_string().contains("limit of 1000 bytes"), "{err}");
    let err = with(Limits {
        max_files: 1,
        ..Limits::default()
    });
    assert!(matches!(err, SourceError::TooManyFiles { .. }), "{err:?}");
    let err = with(Limits {
        max_total_bytes: 2000,
        ..Limits::default()
    });
    assert!(matches!(err, SourceError::TotalTooLarge { .. }), "{err:?}");
}

#[test]
fn empty_render_is_an_error_not_an_empty_desired_state() {
    let r = Repo::new();
    r.write(
        "deploy/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )
    .write("other/notes.txt", "hi");
    r.commit("no daemonset");
    let cache = tempfile::tempdir().unwrap();
    let err = load(&r.url(), "main", "deploy", cache.path()).unwrap_err();
    assert!(matches!(err, SourceError::Empty { .. }), "{err:?}");
    let err = load(&r.url(), "main", "other", cache.path()).unwrap_err();
    assert!(matches!(err, SourceError::Empty { .. }), "{err:?}");
}

#[test]
fn submodules_are_reported_not_followed() {
    let (r, commits) = history();
    let gitlink = format!("160000,{},deploy/vendored", commits[0]);
    r.git(&["update-index", "--add", "--cacheinfo", &gitlink]);
    r.git(&["commit", "-q", "-m", "submodule"]);
    let cache = tempfile::tempdir().unwrap();
    let rendered = load(&r.url(), "main", "deploy", cache.path()).unwrap();
    assert_eq!(rendered.files, 1);
    assert!(
        rendered
            .notes
            .iter()
            .any(|n| n.contains("deploy/vendored") && n.contains("submodule")),
        "{:?}",
        rendered.notes
    );
}

#[test]
fn unreachable_repository_names_the_problem_and_redacts() {
    let port = crate::support::free_port();
    let cache = tempfile::tempdir().unwrap();
    let url = format!("https://user:s3cret@127.0.0.1:{port}/x.git");
    let err = load(&url, "main", "", cache.path()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SourceError::Fetch { .. }), "{err:?}");
    assert!(
        !msg.contains("s3cret") && !format!("{err:?}").contains("s3cret"),
        "{msg}"
    );
    assert!(
        msg.contains("127.0.0.1") && msg.contains("nothing was planned"),
        "{msg}"
    );
    // The credential is not written to the mirror either.
    let mut stack = vec![cache.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains("s3cret"),
                    "{}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn tracked_source_keeps_the_last_good_commit_on_failure_and_force_push() {
    use daemonsync::source::{Refresh, Tracked};
    let (work, commits) = history();
    let bare = tempfile::tempdir().unwrap();
    let origin = bare.path().join("origin.git");
    git(
        bare.path(),
        &[
            "clone",
            "-q",
            "--bare",
            &work.url(),
            origin.to_str().unwrap(),
        ],
    );
    let url = format!("file://{}", origin.display());
    let cache = tempfile::tempdir().unwrap();
    let opts = LoadOptions::default();
    let mut t = Tracked::new(source(&url, "main", "deploy", cache.path()));
    assert!(matches!(t.refresh(&opts), Refresh::Updated(r) if r.revision == commits[1]));

    // A fast-forward is followed.
    work.write("deploy/agent.yaml", &ds("agent", "agent:1.5"));
    let c4 = work.commit("four");
    work.git(&["push", "-q", origin.to_str().unwrap(), "main"]);
    assert!(matches!(t.refresh(&opts), Refresh::Updated(r) if r.revision == c4));

    // An empty render keeps c4 in effect.
    work.git(&["rm", "-q", "deploy/agent.yaml"]);
    work.write(
        "deploy/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    let empty = work.commit("oops");
    work.git(&["push", "-q", origin.to_str().unwrap(), "main"]);
    match t.refresh(&opts) {
        Refresh::Failed { error, in_effect } => {
            assert!(matches!(error, SourceError::Empty { .. }), "{error:?}");
            assert_eq!(in_effect.unwrap().revision, c4);
        }
        other => panic!("{other:?}"),
    }

    // A force-push back to c1 + something else is refused until accepted.
    work.git(&["reset", "-q", "--hard", &commits[0]]);
    work.write("deploy/agent.yaml", &ds("agent", "agent:0.9"));
    let rewritten = work.commit("rewritten");
    work.git(&["push", "-q", "--force", origin.to_str().unwrap(), "main"]);
    match t.refresh(&opts) {
        Refresh::Failed { error, in_effect } => {
            assert!(
                matches!(error, SourceError::HistoryRewritten { .. }),
                "{error:?}"
            );
            assert!(error.to_string().contains("force-push"), "{error}");
            assert_eq!(in_effect.unwrap().revision, c4);
        }
        other => panic!("{other:?}"),
    }
    assert_ne!(rewritten, empty);
    t.allow_history_rewrites = true;
    assert!(matches!(t.refresh(&opts), Refresh::Updated(r) if r.revision == rewritten));

    // The repository disappears: unreachable, c1' stays in effect.
    std::fs::remove_dir_all(&origin).unwrap();
    assert!(matches!(
        t.refresh(&opts),
        Refresh::Failed { error: SourceError::Fetch { .. }, in_effect: Some(r) } if r.revision == rewritten
    ));
}

//! LocalSource: a local directory, confined to itself.

use crate::support::ds;
use daemonsync::manifest::LoadOptions;
use daemonsync::source::{LocalSource, Source, SourceError};

#[test]
fn reads_sorted_manifests_and_digests_the_content() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("deploy");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/b.yaml"), ds("b", "b:1")).unwrap();
    std::fs::write(root.join("a.yml"), ds("a", "a:1")).unwrap();
    std::fs::write(root.join(".hidden.yaml"), ds("h", "h:1")).unwrap();
    std::fs::write(root.join("notes.txt"), "x").unwrap();
    let src = LocalSource::new([&root]);
    let r1 = src.load(&LoadOptions::default()).unwrap();
    assert_eq!(r1.files, 2);
    assert!(r1.revision.starts_with("local:"));
    let names: Vec<_> = r1
        .manifests
        .daemonsets
        .iter()
        .map(|d| d.daemonset.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        src.load(&LoadOptions::default()).unwrap().revision,
        r1.revision
    );
    std::fs::write(root.join("a.yml"), ds("a", "a:2")).unwrap();
    assert_ne!(
        src.load(&LoadOptions::default()).unwrap().revision,
        r1.revision
    );
}

#[test]
fn symlink_leaving_the_directory_is_refused_by_name() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("deploy");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.yaml"), ds("a", "a:1")).unwrap();
    std::fs::write(t.path().join("outside.yaml"), ds("o", "o:1")).unwrap();
    std::os::unix::fs::symlink("../outside.yaml", root.join("leak.yaml")).unwrap();
    let err = LocalSource::new([&root])
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::SymlinkEscapes { .. }), "{err:?}");
    assert!(err.to_string().contains("leak.yaml"), "{err}");
}

#[test]
fn a_directory_without_daemonsets_is_an_error() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(
        t.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )
    .unwrap();
    let err = LocalSource::new([t.path()])
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(matches!(err, SourceError::Empty { .. }), "{err:?}");
    let empty = tempfile::tempdir().unwrap();
    let err = LocalSource::new([empty.path()])
        .load(&LoadOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("no manifest file"), "{err}");
}

#[test]
fn watching_a_directory_replans_after_a_burst_of_writes() {
    use daemonsync::source::watch::{DEBOUNCE, watch_paths};
    use std::sync::mpsc::channel;
    use std::time::Duration;
    let t = tempfile::tempdir().unwrap();
    let root = t.path().to_path_buf();
    std::fs::write(root.join("a.yaml"), ds("a", "a:1")).unwrap();
    let (ready_tx, ready_rx) = channel();
    let (replan_tx, replan_rx) = channel();
    let watched = root.clone();
    let handle = std::thread::spawn(move || {
        ready_tx.send(()).unwrap();
        watch_paths(&[watched], DEBOUNCE, || {
            replan_tx.send(()).unwrap();
            false // stop after the first re-plan
        })
    });
    ready_rx.recv().unwrap();
    // Give the watcher a moment to register, then write a burst; retry the burst a few times
    // in case the watch was not registered yet (bounded).
    let mut fired = false;
    for attempt in 0..10 {
        std::thread::sleep(Duration::from_millis(200));
        for i in 0..20 {
            std::fs::write(root.join(format!("f{attempt}-{i}.yaml")), ds("a", "a:1")).unwrap();
        }
        if replan_rx.recv_timeout(Duration::from_secs(3)).is_ok() {
            fired = true;
            break;
        }
    }
    assert!(fired, "no re-plan after writes");
    handle.join().unwrap().unwrap();
}

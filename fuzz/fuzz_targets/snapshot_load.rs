//! Arbitrary bytes as a snapshot file, read through `Snapshot::load` (size limit, UTF-8,
//! YAML/JSON stream, object conversion), then a DaemonSet planned against what was read and
//! the plan rendered.
#![no_main]

use daemonsync::cluster::Snapshot;
use daemonsync::plan::{Policy, plan};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::path::PathBuf;

thread_local! {
    static DIR: RefCell<Option<(tempfile::TempDir, PathBuf)>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    let path = DIR.with(|d| {
        let mut d = d.borrow_mut();
        let (_, path) = d.get_or_insert_with(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("snapshot.yaml");
            (dir, path)
        });
        path.clone()
    });
    std::fs::write(&path, data).unwrap();
    let snapshot = match Snapshot::load(&path) {
        Ok(s) => s,
        Err(e) => {
            // Every error renders, naming the file.
            assert!(e.to_string().contains("snapshot.yaml"), "{e}");
            return;
        }
    };
    let desired = daemonsync_fuzz::agent("1");
    let now = "2026-01-01T00:00:00Z".parse().unwrap();
    let p = plan(&desired, &snapshot.observed, &Policy::default(), now);
    serde_json::to_string(&p).expect("a plan always serializes");
});

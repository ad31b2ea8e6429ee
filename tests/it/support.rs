//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// A path inside this repository.
pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A file of the shared DaemonSet corpus, which CI checks out beside the repository.
pub fn corpus(file: &str) -> PathBuf {
    let p = repo_path("../shared/corpus").join(file);
    assert!(
        p.exists(),
        "corpus file {} is missing: check out shared/ beside the repository",
        p.display()
    );
    p
}

/// The `daemonsync` binary under test.
pub fn daemonsync() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("daemonsync").expect("the daemonsync binary is built")
}

//! The core stays free of I/O: its dependency tree holds no async runtime, HTTP stack,
//! Kubernetes client or git library, so the planner and validation suites build without them.

use std::process::Command;

/// Crates the core must never depend on, directly or through another crate.
const FORBIDDEN: [&str; 6] = ["tokio", "kube", "git2", "hyper", "axum", "reqwest"];

#[test]
fn the_core_depends_on_no_runtime_client_or_git_library() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "daemonsync-core",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && tree.contains("daemonsync-core"),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let found: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| FORBIDDEN.contains(n))
        .collect();
    assert!(found.is_empty(), "daemonsync-core depends on {found:?}");
    assert!(
        names.contains(&"k8s-openapi"),
        "the tree lists the core's real dependencies: {names:?}"
    );
}

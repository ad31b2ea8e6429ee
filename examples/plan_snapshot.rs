//! Plans DaemonSet manifests against a cluster snapshot and prints the table (or JSON).
//!
//! ```sh
//! cargo run --example plan_snapshot -- fixtures/snapshots/seven-nodes.yaml \
//!     fixtures/manifests/kube-flannel.yaml [--json]
//! ```
//!
//! The manifest reading here is deliberately minimal (it takes the `apps/v1` DaemonSets of a
//! multi-document file as they are); the `daemonsync plan` command uses the full manifest
//! loader with defaulting and validation.

use anyhow::{Context, bail};
use daemonsync::cluster::Snapshot;
use daemonsync::plan::{Desired, Policy, plan};
use daemonsync::report::{TableOptions, to_json, to_table};
use std::path::Path;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [snapshot, manifests @ ..] = paths.as_slice() else {
        bail!("usage: plan_snapshot SNAPSHOT MANIFEST... [--json]");
    };
    let snapshot = Snapshot::load(Path::new(snapshot.as_str()))?;
    let mut desired = Vec::new();
    for m in manifests {
        desired.extend(daemonsets_in(Path::new(m.as_str()))?);
    }
    let p = plan(
        &desired,
        &snapshot.observed,
        &Policy::default(),
        jiff::Timestamp::now(),
    );
    if json {
        print!("{}", to_json(&p));
    } else {
        let color = std::env::var_os("NO_COLOR").is_none()
            && std::io::IsTerminal::is_terminal(&std::io::stdout());
        let opts = TableOptions {
            color,
            ..TableOptions::default()
        };
        print!("{}", to_table(&p, &opts));
    }
    Ok(())
}

fn daemonsets_in(path: &Path) -> anyhow::Result<Vec<Desired>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&text).with_context(|| path.display().to_string())?;
    docs.into_iter()
        .enumerate()
        .filter(|(_, d)| d["apiVersion"] == "apps/v1" && d["kind"] == "DaemonSet")
        .map(|(i, d)| {
            Ok(Desired {
                source: format!("{}#{}", path.display(), i + 1),
                daemonset: serde_json::from_value(d)
                    .with_context(|| format!("{} document {}", path.display(), i + 1))?,
            })
        })
        .collect()
}

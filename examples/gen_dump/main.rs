//! Writes a kubectl-shaped cluster dump of N nodes (about 20 pods per node) to stdout, and
//! optionally the manifests of its 20 DaemonSets, for measuring `daemonsync plan` on
//! snapshots of fleet size (BENCHMARKS.md):
//!
//! ```sh
//! cargo run --release --example gen_dump -- --nodes 5000 --format json --manifests /tmp/ds > /tmp/dump.json
//! ```

mod dump;

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let mut nodes = 500;
    let mut format = "json".to_string();
    let mut manifests = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--nodes" => nodes = args.next().and_then(|n| n.parse().ok()).unwrap_or(nodes),
            "--format" => format = args.next().unwrap_or(format),
            "--manifests" => manifests = args.next(),
            other => {
                eprintln!(
                    "unknown argument {other}; usage: gen_dump [--nodes N] [--format json|yaml] [--manifests DIR]"
                );
                std::process::exit(2);
            }
        }
    }
    if let Some(dir) = manifests {
        std::fs::create_dir_all(&dir)?;
        for d in 0..dump::DAEMONSETS {
            let path = std::path::Path::new(&dir).join(format!("agent-{d:02}.json"));
            std::fs::write(path, serde_json::to_string_pretty(&dump::manifest(d))?)?;
        }
    }
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    match format.as_str() {
        "yaml" => dump::write_yaml(nodes, &mut out)?,
        _ => dump::write_json(nodes, &mut out)?,
    }
    out.flush()
}

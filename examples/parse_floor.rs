//! The floors `daemonsync plan` on a snapshot is measured against (BENCHMARKS.md): a bare
//! parse of the file, every value skipped (`serde::de::IgnoredAny`), with serde-saphyr
//! (`yaml`, the YAML parser daemonsync uses) or serde_json (`json`). Prints the time taken.
//!
//! ```sh
//! cargo run --release --example parse_floor -- yaml /tmp/dump.yaml
//! ```

use serde::de::IgnoredAny;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(format), Some(path)) = (args.next(), args.next()) else {
        eprintln!("usage: parse_floor yaml|json FILE");
        std::process::exit(2);
    };
    let start = Instant::now();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let parsed = if format == "json" {
        serde_json::from_str::<IgnoredAny>(&text)
            .map(|_| 1)
            .map_err(|e| e.to_string())
    } else {
        // The budget of a snapshot read: bounded by the file size, not by the defaults meant
        // for configuration files.
        let bound = text.len().max(1024);
        let options = serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                max_events: bound,
                max_nodes: bound,
                max_documents: bound,
                max_total_scalar_bytes: bound,
            },
        };
        serde_saphyr::from_multiple_with_options::<IgnoredAny>(&text, options)
            .map(|d| d.len())
            .map_err(|e| e.to_string())
    };
    match parsed {
        Ok(docs) => println!(
            "{format} {path}: {docs} document(s) in {:.3} s",
            start.elapsed().as_secs_f64()
        ),
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    }
}

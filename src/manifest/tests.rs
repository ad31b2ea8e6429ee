//! Scenario, defaulting, parser and corpus tests for the manifest module.

use super::*;

#[test]
fn dump_corpus() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let r = load_paths(&[p.clone()], &LoadOptions::default());
        match r {
            Err(e) => println!("{}: ERR {e}", p.display()),
            Ok(m) => {
                println!(
                    "== {} valid={} others={}",
                    p.file_name().unwrap().to_string_lossy(),
                    m.daemonsets.len(),
                    m.others.len()
                );
                for i in &m.invalid {
                    println!("   INVALID {} {}", i.source, i.name);
                    for e in &i.errors {
                        println!("      {e}");
                    }
                }
            }
        }
    }
}

//! Arbitrary bytes as one manifest file, read as the source readers read it (UTF-8 or
//! refused), then parsed as YAML and as JSON through the loader, defaulted, validated, and the
//! valid DaemonSets planned without a cluster.
#![no_main]

use daemonsync::manifest::{LoadOptions, load_str};
use daemonsync::plan::{Desired, Policy, plan_manifests};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The readers refuse what is not UTF-8 before the loader sees it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = LoadOptions::default();
    for label in ["fuzz.yaml", "fuzz.json"] {
        let Ok(manifests) = load_str(label, text, &opts) else {
            continue;
        };
        // Every error and every name must render.
        for bad in &manifests.invalid {
            for e in &bad.errors {
                let _ = e.to_string();
            }
        }
        let desired: Vec<Desired> = manifests
            .daemonsets
            .iter()
            .map(|m| Desired {
                source: m.source.to_string(),
                daemonset: m.daemonset.clone(),
                config: m.config.clone(),
            })
            .collect();
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        let plan = plan_manifests(&desired, &Policy::default(), now);
        serde_json::to_string(&plan).expect("a plan always serializes");
    }
});

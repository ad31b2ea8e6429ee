//! Arbitrary bytes as a sim file: `SimConfig::parse`, `Sim::new`, then a bounded rollout of
//! one DaemonSet through the executor on that simulated cluster.
//!
//! Fleets over `FUZZ_MAX_NODES` are skipped after parsing (the parser's own limit,
//! `MAX_SIM_NODES`, is the one under test for refusal; allocating 200,000 nodes per input
//! would only slow the fuzzer), and the rollout stops after `MAX_WRITES` writes.
#![no_main]

use daemonsync::apply::{ApplyOptions, NoProgress, apply};
use daemonsync::cluster::sim::Sim;
use daemonsync::cluster::sim::config::{MAX_SIM_NODES, SimConfig};
use jiff::SignedDuration;
use libfuzzer_sys::fuzz_target;

const FUZZ_MAX_NODES: usize = 300;
const MAX_WRITES: usize = 2_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut cfg = match SimConfig::parse(text) {
        Ok(cfg) => cfg,
        Err(e) => {
            let _ = format!("{e:#}");
            return;
        }
    };
    let count = |n: &daemonsync::cluster::sim::config::NodeSpec| n.count.unwrap_or(1);
    let total = cfg
        .nodes
        .iter()
        .chain(cfg.churn.iter().filter_map(|c| c.add.as_ref()))
        .fold(0usize, |t, n| t.saturating_add(count(n)));
    assert!(total <= MAX_SIM_NODES, "parse admitted {total} nodes");
    if total > FUZZ_MAX_NODES {
        return;
    }
    // `running:` names manifest files; the fuzzer installs its own DaemonSet instead.
    let running = !cfg.running.is_empty();
    cfg.running.clear();
    let mut sim = match Sim::new(cfg) {
        Ok(sim) => sim,
        Err(e) => {
            let _ = format!("{e:#}");
            return;
        }
    };
    let desired = daemonsync_fuzz::agent("30%");
    if running && sim.install(&desired).is_err() {
        return;
    }
    let opts = ApplyOptions {
        timeout: Some(SignedDuration::from_hours(24)),
        stop_after_writes: Some(MAX_WRITES),
        ..ApplyOptions::default()
    };
    // The simulator is synchronous; a current-thread runtime drives the async executor.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if let Ok(report) = runtime.block_on(apply(&mut sim, &desired, &opts, &mut NoProgress)) {
        let _ = report.elapsed();
    }
});

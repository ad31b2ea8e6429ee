//! Planner benchmarks on synthetic fleets (see `daemonsync_core::testkit::synthetic`).
//!
//! * `plan/full`: one full `plan()` of 20 DaemonSets on 5,000 nodes with 100,000 pods in mixed
//!   states. Target: at most 50 ms.
//! * `plan/scaling`: the same mix on 1,000, 2,500, 5,000 and 10,000 nodes, to show cost grows
//!   linearly with nodes × DaemonSets. Target: 10,000 nodes at most 2.2× the 5,000-node time.
//!
//! Run with `cargo bench --bench plan`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use daemonsync::plan::{Policy, plan};
use daemonsync_core::testkit::synthetic::{fleet, fleet_now};
use std::hint::black_box;
use std::time::Duration;

const DAEMONSETS: usize = 20;
const SEED: u64 = 2025;

fn full(c: &mut Criterion) {
    let (desired, observed) = fleet(5_000, DAEMONSETS, SEED);
    assert_eq!(observed.pods.len(), 100_000);
    let policy = Policy::default();
    let mut group = c.benchmark_group("plan");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("full/5000x20", |b| {
        b.iter(|| {
            plan(
                black_box(&desired),
                black_box(&observed),
                &policy,
                fleet_now(),
            )
        })
    });
    group.finish();
}

fn scaling(c: &mut Criterion) {
    let policy = Policy::default();
    let mut group = c.benchmark_group("plan/scaling");
    group
        .sample_size(15)
        .measurement_time(Duration::from_secs(8));
    for nodes in [1_000, 2_500, 5_000, 10_000] {
        let (desired, observed) = fleet(nodes, DAEMONSETS, SEED);
        group.throughput(Throughput::Elements((nodes * DAEMONSETS) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(nodes), &nodes, |b, _| {
            b.iter(|| {
                plan(
                    black_box(&desired),
                    black_box(&observed),
                    &policy,
                    fleet_now(),
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, full, scaling);
criterion_main!(benches);

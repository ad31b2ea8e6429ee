//! Planner benchmarks on synthetic fleets (see `daemonsync_core::testkit::synthetic`).
//!
//! * `plan/full`: one full `plan()` of 20 DaemonSets on 5,000 nodes with 100,000 pods in mixed
//!   states. Target: at most 50 ms.
//! * `plan/scaling`: the same mix on 1,000, 2,500, 5,000 and 10,000 nodes, to show cost grows
//!   linearly with nodes × DaemonSets. Target: 10,000 nodes at most 2.2× the 5,000-node time.
//! * `pass/pod_event/5000x20`: what `sync --reconcile incremental` does in one pass woken by a
//!   pod of one DaemonSet: the incremental re-plan of that DaemonSet from the pods in its
//!   scope, then the assessment of that plan (health, orphans, handovers), as the daemon
//!   does before it writes.
//! * `pass/node_event/5000x20`: the same for a node event: every DaemonSet re-planned (the
//!   other nodes' eligibility re-used), then the assessment of the whole fleet.
//!
//! Run with `cargo bench --bench plan`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use daemonsync::apply::{ApplyOptions, Executor};
use daemonsync::cluster::ClusterState;
use daemonsync::plan::incremental::{Changes, Incremental, PodTouch};
use daemonsync::plan::{Desired, Observed, Policy, plan};
use daemonsync_core::testkit::synthetic::{fleet, fleet_now};
use std::collections::BTreeSet;
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

/// One incremental pass as `sync` makes it: `changes` re-planned from `observed`, then the
/// assessment of the woken plans, benchmarked as `pass/{name}`.
struct Pass<'a> {
    name: &'a str,
    samples: usize,
    seconds: u64,
}

impl Pass<'_> {
    fn bench(
        &self,
        c: &mut Criterion,
        desired: &[Desired],
        mut inc: Incremental,
        changes: &Changes,
        observed: Observed,
    ) {
        let state = ClusterState {
            observed,
            records: Vec::new(),
            config_copies: Vec::new(),
            now: fleet_now(),
        };
        let executor = Executor::default();
        let opts = ApplyOptions::default();
        let mut group = c.benchmark_group("pass");
        group
            .sample_size(self.samples)
            .measurement_time(Duration::from_secs(self.seconds));
        group.bench_function(self.name, |b| {
            b.iter(|| {
                let w = inc.update(desired, &state.observed, changes, state.now);
                let plan = inc.plan_of(&w.daemonsets, state.now);
                black_box(executor.assess_plan(desired, &state, &opts, plan));
            })
        });
        group.finish();
    }
}

/// A pod of one DaemonSet changed: that DaemonSet re-planned from the pods of its scope.
fn pod_event(c: &mut Criterion) {
    let (desired, observed) = fleet(5_000, DAEMONSETS, SEED);
    let mut inc = Incremental::new(Policy::default());
    inc.update(&desired, &observed, &Changes::everything(), fleet_now());
    // A pod of the first DaemonSet changed: the pass reads the pods of its scope.
    let touched = observed
        .pods
        .iter()
        .find(|p| {
            p.controller
                .as_ref()
                .is_some_and(|c| (p.namespace.to_string(), c.name.clone()) == desired[0].key())
        })
        .expect("the first DaemonSet has pods");
    let changes = Changes {
        pods: vec![PodTouch::of(touched)],
        ..Changes::default()
    };
    let woken = inc.woken(&desired, &changes);
    assert_eq!(woken.len(), 1, "a pod of one DaemonSet wakes it alone");
    let scope = inc.scope(&desired, &woken);
    let mut scoped = observed.clone();
    scoped.pods.retain(|p| scope.concerns(p));
    let pass = Pass {
        name: "pod_event/5000x20",
        samples: 50,
        seconds: 8,
    };
    pass.bench(c, &desired, inc, &changes, scoped);
}

/// A node changed: every DaemonSet is woken and re-planned (re-using the other nodes'
/// eligibility), then the whole fleet is assessed, as `sync` does for a node event.
fn node_event(c: &mut Criterion) {
    let (desired, observed) = fleet(5_000, DAEMONSETS, SEED);
    let mut inc = Incremental::new(Policy::default());
    inc.update(&desired, &observed, &Changes::everything(), fleet_now());
    let changes = Changes {
        nodes: BTreeSet::from([observed.nodes[0].name.to_string()]),
        ..Changes::default()
    };
    let woken = inc.woken(&desired, &changes);
    assert_eq!(woken.len(), DAEMONSETS, "a node wakes every DaemonSet");
    let pass = Pass {
        name: "node_event/5000x20",
        samples: 20,
        seconds: 10,
    };
    pass.bench(c, &desired, inc, &changes, observed);
}

criterion_group!(benches, full, scaling, pod_event, node_event);
criterion_main!(benches);

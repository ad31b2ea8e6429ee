//! Memory of the live backend's pod cache: heap bytes per cached pod, measured with a counting
//! allocator, for pods as the API server returns them (the example DaemonSets rendered for a
//! node, with the status a running pod has). The cache keeps the planner's small value, not
//! the `Pod`; the full object's size is printed beside it for comparison.
//!
//! Run with `cargo bench --bench cache`.

use daemonsync::cluster::kube::cache::CachedPod;
use daemonsync::plan::DaemonSetSpec;
use daemonsync::plan::render::{PodOwner, pod_for_node};
use daemonsync::source::{LocalSource, Source};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Pods per DaemonSet: `cargo bench` passes `--bench`; `cargo test --all-targets` runs this
/// once as a quick check, with a few.
fn pod_count() -> usize {
    if std::env::args().any(|a| a == "--bench") {
        10_000
    } else {
        100
    }
}

/// A running pod of `ds` on `node`, as a live API server returns it.
fn live_pod(
    ds: &k8s_openapi::api::apps::v1::DaemonSet,
    i: usize,
) -> k8s_openapi::api::core::v1::Pod {
    let spec = DaemonSetSpec::compile(ds);
    let node = format!("ip-10-0-{}-{}.eu-west-1.compute.internal", i / 250, i % 250);
    let mut owner = PodOwner::record(&spec.name);
    owner.uid = "6f1b1d7e-2f0c-4c7e-9c38-2b0f4a9d1e55".into();
    let mut pod = pod_for_node(ds, &spec, &node, &owner);
    let mut value = serde_json::to_value(&pod).unwrap();
    let containers: Vec<serde_json::Value> = pod
        .spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .map(|c| {
                    serde_json::json!({
            "name": c.name, "image": c.image, "ready": true, "restartCount": 0, "started": true,
            "imageID": format!("docker.io/library/{}@sha256:{:064x}", c.name, i),
            "containerID": format!("containerd://{:064x}", i * 7 + 1),
            "state": {"running": {"startedAt": "2026-11-01T10:00:00Z"}}})
                })
                .collect()
        })
        .unwrap_or_default();
    value["metadata"]["name"] = format!("{}-{:05x}", spec.name, i).into();
    value["metadata"]["uid"] = format!("{:08x}-0000-4000-8000-{:012x}", i, i).into();
    value["metadata"]["resourceVersion"] = (1_000_000 + i).to_string().into();
    value["metadata"]["creationTimestamp"] = "2026-11-01T09:59:58Z".into();
    value["spec"]["nodeName"] = node.into();
    let conditions: Vec<serde_json::Value> = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .iter()
    .map(|t| {
        serde_json::json!({"type": t, "status": "True",
            "lastTransitionTime": "2026-11-01T10:00:01Z"})
    })
    .collect();
    value["status"] = serde_json::json!({
        "phase": "Running", "podIP": "10.1.2.3", "hostIP": "10.0.0.4", "qosClass": "Burstable",
        "startTime": "2026-11-01T09:59:58Z",
        "conditions": conditions,
        "containerStatuses": containers,
    });
    pod = serde_json::from_value(value).unwrap();
    pod
}

fn main() {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/manifests");
    let rendered = LocalSource::new([examples])
        .load(&daemonsync::manifest::LoadOptions::default())
        .expect("examples load");
    let desired = rendered.desired().expect("examples are valid");
    let count = pod_count();
    for d in &desired {
        let pods: Vec<_> = (0..count).map(|i| live_pod(&d.daemonset, i)).collect();
        let json_bytes: usize = pods
            .iter()
            .map(|p| serde_json::to_vec(p).unwrap().len())
            .sum();

        let before = LIVE.load(Ordering::Relaxed);
        let full = pods.to_vec();
        let full_bytes = LIVE.load(Ordering::Relaxed) - before;
        drop(full);

        let before = LIVE.load(Ordering::Relaxed);
        let mut cache: BTreeMap<(String, String), CachedPod> = BTreeMap::new();
        for p in &pods {
            let cached = CachedPod {
                pod: std::sync::Arc::new(daemonsync::model::Pod::from_k8s(p)),
                uid: p.metadata.uid.clone().unwrap_or_default(),
            };
            let key = (
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            );
            cache.insert(key, cached);
        }
        let cached_bytes = LIVE.load(Ordering::Relaxed) - before;
        println!(
            "cache/{name}: {cached} bytes per cached pod (map entry and key included); the full \
             Pod takes {full} bytes in memory and {json} as JSON ({count} pods)",
            name = d.daemonset.metadata.name.as_deref().unwrap_or("?"),
            cached = cached_bytes as usize / count,
            full = full_bytes as usize / count,
            json = json_bytes / count,
        );
        // What `observe` copies on every reconcile pass: a pointer to each cached pod (the
        // pods themselves are shared).
        let started = std::time::Instant::now();
        let copies = 5;
        for _ in 0..copies {
            let copy: daemonsync::model::Pods = cache
                .values()
                .map(|c| std::sync::Arc::clone(&c.pod))
                .collect();
            std::hint::black_box(copy);
        }
        let per_copy = started.elapsed() / copies;
        println!(
            "cache/{name}: sharing the {count} model pods, as each observation does, takes {per_copy:?} ({per_pod:?} per pod)",
            name = d.daemonset.metadata.name.as_deref().unwrap_or("?"),
            per_pod = per_copy / count as u32,
        );
        drop(cache);
    }
}

//! The small internal types the planner works on.
//!
//! Observed Kubernetes objects (nodes, pods) are converted once into these compact types, so
//! the planner touches only what it needs and never the full API objects. Conversions from
//! `k8s-openapi` types live beside each type.

mod node;
mod nodes;
mod pod;
mod pods;
mod quantity;
pub mod resources;
mod selector;
mod toleration;
mod version;

pub use node::{Node, Taint, TaintEffect};
pub use nodes::{Nodes, Seen as NodesSeen};
pub use pod::{
    IN_PLACE_READY_CONDITION, OwnerRef, Pod, PodDetail, PodPhase, PodSignals, ReadyCondition,
    target_node_from_affinity,
};
pub use pods::Pods;
pub use quantity::{Quantity, QuantityError, QuantityFormat, canonical_quantity};
pub use selector::{LabelSelector, SelectorOp, SelectorRequirement};
pub use toleration::{Toleration, TolerationOp};
pub use version::KubeVersion;

use std::collections::BTreeMap;

/// Labels of an object: sorted, so every rendering of them is deterministic.
pub type Labels = BTreeMap<String, String>;

/// A verdict on a label map kept for the last map read: pods labelled alike share one map
/// ([`shared_labels`]), so a pass over a DaemonSet's pods decides once per run of them. The
/// map is known by its address, sound while the pods read are borrowed.
pub struct LastLabels<T> {
    last: Option<(*const Labels, T)>,
}

impl<T> Default for LastLabels<T> {
    fn default() -> Self {
        LastLabels { last: None }
    }
}

impl<T: Copy> LastLabels<T> {
    /// The verdict on `labels`: the last one when they are the map last read, else `decide`'s.
    pub fn of(&mut self, labels: &Labels, decide: impl FnOnce(&Labels) -> T) -> T {
        if let Some((at, verdict)) = self.last
            && std::ptr::eq(at, labels)
        {
            return verdict;
        }
        let verdict = decide(labels);
        self.last = Some((labels, verdict));
        verdict
    }
}

/// `labels` (none: empty), shared with the equal labels shared before on this thread: the
/// pods of one DaemonSet and revision are labelled alike, so a cache of 100,000 pods holds a
/// few dozen label maps instead of one each. A memo keyed by the labels' hash, forgotten
/// when it holds 4,096, not a registry.
pub fn shared_labels(labels: Option<&Labels>) -> std::sync::Arc<Labels> {
    thread_local! {
        static SEEN: Memo<Labels> = Memo::default();
    }
    let empty = Labels::new();
    SEEN.with(|seen| seen.share(labels.unwrap_or(&empty)))
}

/// `owner`, shared with the equal controller references shared before on this thread: the
/// pods of one DaemonSet name the same controller, so reading it from one pod after another
/// reads memory already in cache, and a cache of 100,000 pods holds a few dozen references
/// instead of one each (a memo as [`shared_labels`]'s).
pub fn shared_owner(owner: OwnerRef) -> std::sync::Arc<OwnerRef> {
    thread_local! {
        static SEEN: Memo<OwnerRef> = Memo::default();
    }
    SEEN.with(|seen| seen.share(&owner))
}

/// `name` (a namespace, a node's name), shared with the equal names shared before in this
/// process: the pods of a namespace, and the pods on one node, name it alike, so a pass over
/// them reads one string already in cache instead of a string of each pod's own, and the
/// planner's node order, which shares the nodes' names here too, finds a pod's node by the
/// address of its name without reading it ([`shared_name_address`]). A memo as
/// [`shared_labels`]'s, keeping more (a fleet has thousands of nodes), and one memo for all
/// threads: pods and nodes are decoded on different ones.
pub fn shared_name(name: &str) -> std::sync::Arc<str> {
    static SEEN: std::sync::Mutex<Shared<str>> = std::sync::Mutex::new(Shared::new());
    // A panic while holding the lock leaves the memo whole (it only ever gains or clears).
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    seen.share_with(name, 1 << 16, |n: &str| std::sync::Arc::from(n))
}

/// The address of a shared name's text: two live `Arc`s with the same address are one
/// allocation, so one string.
pub fn shared_name_address(name: &std::sync::Arc<str>) -> usize {
    std::sync::Arc::as_ptr(name).cast::<u8>() as usize
}

/// Whether two (namespace, name) pairs are equal, each string compared by its address first:
/// the pods of one DaemonSet share both ([`shared_name`], [`shared_owner`]), so a walk over
/// them compares pointers, not text.
pub fn same_key(a: (&str, &str), b: (&str, &str)) -> bool {
    let same = |x: &str, y: &str| std::ptr::eq(x, y) || x == y;
    same(a.0, b.0) && same(a.1, b.1)
}

/// Values shared by their hash on one thread ([`Shared`] behind a `RefCell`).
struct Memo<T: ?Sized>(std::cell::RefCell<Shared<T>>);

impl<T: ?Sized> Default for Memo<T> {
    fn default() -> Self {
        Memo(std::cell::RefCell::new(Shared::new()))
    }
}

impl<T: std::hash::Hash + Eq + Clone> Memo<T> {
    /// The value shared for `value`, or `value` shared from now on; 4,096 are kept.
    fn share(&self, value: &T) -> std::sync::Arc<T> {
        self.0
            .borrow_mut()
            .share_with(value, 4096, |v| std::sync::Arc::new(v.clone()))
    }
}

/// Values shared by their hash, forgotten when it holds as many as it keeps.
struct Shared<T: ?Sized>(
    std::collections::HashMap<u64, std::sync::Arc<T>, rustc_hash::FxBuildHasher>,
);

impl<T: ?Sized> Shared<T> {
    const fn new() -> Self {
        Shared(std::collections::HashMap::with_hasher(
            rustc_hash::FxBuildHasher,
        ))
    }
}

impl<T: std::hash::Hash + Eq + ?Sized> Shared<T> {
    /// The value shared for `value`, or `value` shared (made by `make`) from now on; at most
    /// `kept` are kept.
    fn share_with(
        &mut self,
        value: &T,
        kept: usize,
        make: impl FnOnce(&T) -> std::sync::Arc<T>,
    ) -> std::sync::Arc<T> {
        use std::hash::BuildHasher;
        let hash = rustc_hash::FxBuildHasher.hash_one(value);
        if let Some(known) = self.0.get(&hash).filter(|k| ***k == *value) {
            return std::sync::Arc::clone(known);
        }
        if self.0.len() >= kept {
            self.0.clear();
        }
        let shared = make(value);
        self.0.insert(hash, std::sync::Arc::clone(&shared));
        shared
    }
}

/// A point in time. The planner never reads a clock: `now` is always passed in.
pub type Timestamp = jiff::Timestamp;

/// `t + d`, saturating at the ends of time (years -9999 and 9999) instead of panicking: input
/// timestamps near the end of time and durations of ten thousand years are valid input, and
/// "never" is the right reading of a deadline past the end of time.
pub fn later(t: Timestamp, d: jiff::SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(if d.is_negative() {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// Label key of the revision hash on daemon pods (upstream `controller-revision-hash`).
pub const REVISION_HASH_LABEL: &str = "controller-revision-hash";
/// Legacy pod label carrying the DaemonSet template generation.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// DaemonSet annotation exposing the template generation in `apps/v1`.
pub const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";
/// Label marking the pods daemonsync creates.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`] on pods daemonsync creates.
pub const MANAGED_BY_VALUE: &str = "daemonsync";
/// Annotation on a `ManagedDaemonSet` record: `"true"` pauses its rollout until it is
/// removed: no pod is replaced, but a node that has none still gets the stable revision's.
pub const PAUSED_ANNOTATION: &str = "daemonsync.io/paused";
/// Annotation on a `ManagedDaemonSet` record: `"true"` freezes the DaemonSet until it is
/// removed: daemonsync writes nothing for it (no pod, no taint, no `apps/v1` DaemonSet).
pub const FROZEN_ANNOTATION: &str = "daemonsync.io/frozen";
/// Pod template annotation: the digest of every key of every ConfigMap and Secret the
/// revision's pods reference, `{"configmap/NAME": {"KEY": "<12 hex>"}, "secret/NAME": {…}}`
/// (compact JSON, keys sorted). Digests only: never a value (`manifest::config`).
pub const CONFIG_ANNOTATION: &str = "daemonsync.io/config";
/// The node field key used in `matchFields` (`metadata.name`).
pub const NODE_NAME_FIELD: &str = "metadata.name";

#[cfg(test)]
mod last_labels_tests {
    use super::*;

    #[test]
    fn a_verdict_is_decided_once_per_run_of_one_label_map() {
        let a = shared_labels(Some(&Labels::from([("app".into(), "a".into())])));
        let b = shared_labels(Some(&Labels::from([("app".into(), "b".into())])));
        let mut decided = 0;
        let mut memo = LastLabels::default();
        let mut judge = |l: &Labels| {
            memo.of(l, |l| {
                decided += 1;
                l.get("app").map(String::as_str) == Some("a")
            })
        };
        assert!(judge(&a));
        assert!(judge(&a));
        assert!(!judge(&b));
        assert!(judge(&a));
        assert_eq!(
            decided, 3,
            "a run of one map is decided once, a change of map again"
        );
    }

    #[test]
    fn keys_are_the_same_by_address_or_by_text() {
        let ns = super::shared_name("kube-system");
        let own = String::from("kube-system");
        assert!(super::same_key((&ns, "agent"), (&ns, "agent")));
        assert!(super::same_key((&ns, "agent"), (&own, "agent")));
        assert!(!super::same_key((&ns, "agent"), (&own, "agents")));
        assert!(!super::same_key((&ns, "agent"), ("default", "agent")));
        // The same address with another length is another string.
        assert!(!super::same_key((&ns[..4], "agent"), (&ns, "agent")));
    }
}

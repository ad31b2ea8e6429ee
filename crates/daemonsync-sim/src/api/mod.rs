//! The simulated cluster's API server and control plane: the object store, every write with
//! its per-kind side effects, owner-reference garbage collection, and the bridge to the
//! simulated nodes. The in-process simulator and `sim serve` share it, so a test of either
//! meets the same cluster.
//!
//! * [`kinds`]: the table of served kinds (built-ins and CRD-defined), which handlers follow.
//! * [`store`]: objects, the global resourceVersion, change history and watch broadcast.
//! * [`world`]: create, update, patch and delete with per-kind side effects.
//! * [`engine`]: the simulated nodes ↔ store bridge (pods, nodes, kubelet status).
//! * [`gc`]: owner-reference garbage collection (background, foreground, orphan).
//! * [`patch`]: merge, strategic-merge (approximated), JSON patch, server-side apply.
//! * [`select`]: label and field selectors. [`convert`]: events.k8s.io views.
//! * [`error`]: the API's `Status` errors.
//! * [`admission`]: DefaultTolerationSeconds, Pod Security, validating webhooks.
//! * [`daemonset`]: the DaemonSet registry strategy and the built-in DaemonSet controller.
//! * [`disruption`]: PodDisruptionBudgets, their controller and the eviction subresource.
//! * [`events`]: Events of the cluster's own components. [`boot`]: the cluster at its start.
//! * [`config`]: ConfigMaps and Secrets: `immutable`, the kubelets' view, daemonsync's copies.

pub mod admission;
pub mod boot;
pub mod config;
pub mod convert;
pub mod daemonset;
pub mod disruption;
pub mod engine;
pub mod error;
pub mod events;
pub mod gc;
pub mod kinds;
pub mod patch;
pub mod select;
pub mod store;
pub mod world;

use crate::model::Timestamp;

/// `t` as a `metav1.Time` field (`creationTimestamp`, a condition's `lastTransitionTime`, a
/// container's `startedAt`, ...) shows it: RFC 3339 in whole seconds, as the API server
/// serializes it. `MicroTime` fields (an event's `eventTime`, a lease's `renewTime`) keep
/// their microseconds; the cluster writes none of them.
pub fn api_time(t: Timestamp) -> String {
    whole_seconds(t).to_string()
}

/// `t` without its fraction of a second (towards the past): what reading a `metav1.Time`
/// back from the API gives, so what upstream's controllers compare.
pub fn whole_seconds(t: Timestamp) -> Timestamp {
    let second = t.as_second() - i64::from(t.subsec_nanosecond() < 0);
    Timestamp::from_second(second).unwrap_or(t)
}

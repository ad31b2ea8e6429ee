//! Resource amounts: what a pod requests of its node (upstream `PodRequests`), what a node
//! can give (`status.allocatable`), and their wording (`500m`, `1Gi`).

use super::Quantity;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use std::collections::BTreeMap;

/// Resource amounts by name: cpu in millicores, everything else in units (bytes, pods).
pub type Resources = BTreeMap<String, i64>;

/// `r`, shared with the equal amounts shared before on this thread: the pods of one
/// DaemonSet request the same, so a cache of 100,000 pods holds a few dozen maps instead of
/// one each. A memo of the last distinct amounts seen (at most 256; forgotten when full), not
/// a registry: amounts dropped by everyone else are freed once the memo forgets them.
pub fn shared(r: Resources) -> std::sync::Arc<Resources> {
    use std::cell::RefCell;
    use std::sync::Arc;
    const KEPT: usize = 256;
    thread_local! {
        static SEEN: RefCell<Vec<Arc<Resources>>> = const { RefCell::new(Vec::new()) };
    }
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if let Some(known) = seen.iter().find(|k| ***k == r) {
            return Arc::clone(known);
        }
        if seen.len() == KEPT {
            seen.clear();
        }
        let r = Arc::new(r);
        seen.push(Arc::clone(&r));
        r
    })
}

/// The amount of `q` of resource `name` in [`Resources`] units.
pub fn amount(name: &str, q: &Quantity) -> i64 {
    if name == "cpu" {
        q.milli_value()
    } else {
        q.value()
    }
}

/// A resource list as the API gives it (`{cpu: "500m", memory: "1Gi"}`); unparsable
/// quantities are left out (validation reports them).
pub fn from_list(
    list: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> Resources {
    list.iter()
        .filter_map(|(name, q)| {
            Quantity::parse(&q.0)
                .ok()
                .map(|q| (name.clone(), amount(name, &q)))
        })
        .collect()
}

/// `cpu=3200m,memory=12Gi,pods=40`: the form of the `daemonsync.io/requested` annotation a
/// snapshot keeps on each node.
pub fn format_requested(r: &Resources) -> String {
    let parts: Vec<String> = r
        .iter()
        .map(|(k, v)| format!("{k}={}", describe(k, *v)))
        .collect();
    parts.join(",")
}

/// Reads [`format_requested`]'s form; entries that do not parse are left out.
pub fn parse_requested(text: &str) -> Resources {
    text.split(',')
        .filter_map(|part| {
            let (name, q) = part.trim().split_once('=')?;
            let q = Quantity::parse(q.trim()).ok()?;
            Some((name.trim().to_string(), amount(name.trim(), &q)))
        })
        .collect()
}

/// Adds up what the pods bound to each node request, for the nodes whose `requested` is not
/// known, from `pods` (all the pods the cluster runs there: a snapshot's, say).
pub fn count_requested<'p>(
    nodes: &mut [super::Node],
    pods: impl IntoIterator<Item = &'p super::Pod>,
) {
    let mut by_node: BTreeMap<&str, Resources> = BTreeMap::new();
    for p in pods {
        if p.phase.is_terminal() {
            continue;
        }
        if let (Some(node), Some(r)) = (p.node_name.as_deref(), p.requests.as_deref()) {
            add(by_node.entry(node).or_default(), r);
        }
    }
    for n in nodes
        .iter_mut()
        .filter(|n| n.requested.is_none() && n.allocatable.is_some())
    {
        n.requested = Some(Box::new(
            by_node.remove(n.name.as_str()).unwrap_or_default(),
        ));
    }
}

/// `500m` or `2` for cpu, `512Mi` / `1Gi` for bytes when they divide evenly, else the number.
pub fn describe(name: &str, value: i64) -> String {
    if name == "cpu" {
        return if value % 1000 == 0 {
            (value / 1000).to_string()
        } else {
            format!("{value}m")
        };
    }
    if name == "memory" || name.ends_with("storage") {
        for (unit, size) in [
            ("Ti", 1i64 << 40),
            ("Gi", 1 << 30),
            ("Mi", 1 << 20),
            ("Ki", 1 << 10),
        ] {
            if value != 0 && value % size == 0 {
                return format!("{}{unit}", value / size);
            }
        }
    }
    value.to_string()
}

/// The requests of one container: its requests, a limit standing for a missing request.
fn container_requests(c: &Container) -> Resources {
    let r = c.resources.as_ref();
    let mut out = Resources::new();
    let mut put = |list: Option<
        &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >,
                   overwrite: bool| {
        for (name, q) in list.into_iter().flatten() {
            if let Ok(q) = Quantity::parse(&q.0)
                && (overwrite || !out.contains_key(name))
            {
                out.insert(name.clone(), amount(name, &q));
            }
        }
    };
    put(r.and_then(|r| r.requests.as_ref()), true);
    put(r.and_then(|r| r.limits.as_ref()), false);
    out
}

/// Adds `r` into `into`, resource by resource.
pub fn add(into: &mut Resources, r: &Resources) {
    for (k, v) in r {
        *into.entry(k.clone()).or_default() += v;
    }
}

fn max_into(into: &mut Resources, r: &Resources) {
    for (k, v) in r {
        let e = into.entry(k.clone()).or_default();
        *e = (*e).max(*v);
    }
}

/// Upstream `PodRequests`: what the scheduler reserves for a pod (`pods` included).
pub fn pod_requests(spec: &PodSpec) -> Resources {
    let mut total = Resources::new();
    for c in &spec.containers {
        add(&mut total, &container_requests(c));
    }
    let mut sidecars = Resources::new();
    let mut init_peak = Resources::new();
    for c in spec.init_containers.iter().flatten() {
        let r = container_requests(c);
        if c.restart_policy.as_deref() == Some("Always") {
            add(&mut sidecars, &r);
            add(&mut total, &r);
            max_into(&mut init_peak, &sidecars);
        } else {
            let mut during = sidecars.clone();
            add(&mut during, &r);
            max_into(&mut init_peak, &during);
        }
    }
    max_into(&mut total, &init_peak);
    if let Some(overhead) = &spec.overhead {
        for (name, q) in overhead {
            if let Ok(q) = Quantity::parse(&q.0) {
                *total.entry(name.clone()).or_default() += amount(name, &q);
            }
        }
    }
    total.insert("pods".into(), 1);
    total.retain(|_, v| *v > 0);
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_amounts_are_held_once_and_different_ones_apart() {
        let r = |cpu: i64| Resources::from([("cpu".to_string(), cpu), ("pods".to_string(), 1)]);
        let a = shared(r(100));
        let b = shared(r(100));
        let c = shared(r(200));
        assert!(std::sync::Arc::ptr_eq(&a, &b), "one map for equal amounts");
        assert!(!std::sync::Arc::ptr_eq(&a, &c));
        assert_eq!((&*a, &*c), (&r(100), &r(200)));
        // The memo is bounded: after many distinct amounts, values are still right.
        for cpu in 0..1000 {
            assert_eq!(*shared(r(cpu)), r(cpu));
        }
    }
}

//! What the caches show an observation, kept up to date one change at a time: the node list
//! (with what each node's pods request) and the pods merged over the pod feeds, indexed by
//! what a [`Scope`] asks for. An observation then costs what changed plus the pods it is
//! for, not a walk of every cached object.

use crate::model::resources::Resources;
use crate::model::{Node, Nodes, Pod, Pods};
use crate::plan::RECORD_KIND;
use crate::plan::incremental::{Scope, selectable};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// `namespace/name` of an object (nodes: an empty namespace).
type Key = (String, String);

/// What changed since the views last took it in.
#[derive(Debug, Default)]
pub(super) struct Stale {
    /// A feed relisted: rebuild.
    pub everything: bool,
    /// Pods changed, by namespace and name.
    pub pods: BTreeSet<Key>,
    /// Nodes changed, or what their pods request, by name.
    pub nodes: BTreeSet<String>,
}

/// The views of the caches an observation is made of.
#[derive(Debug, Default)]
pub(super) struct Views {
    built: bool,
    nodes: Nodes,
    pods: PodView,
}

impl Views {
    /// Takes in what `stale` says changed in `nodes`, in what their pods request
    /// (`requested`) and in the pods (`pod` gives the cached pod of a key from the feed that
    /// speaks for it, `every_pod` all of them).
    pub fn refresh<'a>(
        &mut self,
        stale: Stale,
        nodes: &BTreeMap<Key, Node>,
        requested: impl Fn(&str) -> Option<Resources>,
        pod: impl Fn(&Key) -> Option<Arc<Pod>>,
        every_pod: impl FnOnce() -> Vec<(&'a Key, Arc<Pod>)>,
    ) {
        if stale.everything || !self.built {
            self.nodes = nodes.values().map(|n| with_usage(n, &requested)).collect();
            self.pods = PodView::default();
            for (key, p) in every_pod() {
                self.pods.set(key.clone(), Some(p));
            }
            self.built = true;
            return;
        }
        for key in stale.pods {
            let p = pod(&key);
            self.pods.set(key, p);
        }
        if stale.nodes.is_empty() {
            return;
        }
        // Copied only if an observation still holds the list. A node changed in place keeps
        // the names as the planner last indexed them; one added or removed does not.
        for name in stale.nodes {
            let at = self.nodes.binary_search_by(|n| n.name.as_str().cmp(&name));
            match (at, nodes.get(&(String::new(), name))) {
                (Ok(i), Some(n)) => self.nodes.set(i, with_usage(n, &requested)),
                (Err(i), Some(n)) => self.nodes.insert(i, with_usage(n, &requested)),
                (Ok(i), None) => {
                    self.nodes.remove(i);
                }
                (Err(_), None) => {}
            }
        }
    }

    /// Every node, shared with the view.
    pub fn nodes(&self) -> Nodes {
        self.nodes.clone()
    }

    /// The pods `scope` concerns, in key order.
    pub fn pods(&self, scope: &Scope) -> Pods {
        self.pods.select(scope)
    }
}

/// A node as observed: with what the pods bound to it request.
fn with_usage(n: &Node, requested: &impl Fn(&str) -> Option<Resources>) -> Node {
    Node {
        requested: requested(&n.name).map(Box::new),
        ..n.clone()
    }
}

/// Where an index files a pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    /// By the namespace and name its controller reference gives.
    Controller(Key),
    /// Without a controller, or of the built-in controller: by namespace and label map (a
    /// selector may adopt or overlap it, and pods labelled alike share one map, so a scope
    /// matches its selectors once per map, not once per pod). The map is named by its
    /// address, which stays its own while a pod of the slot holds it.
    Loose(String, usize),
    /// By the DaemonSet its pre-pull label names.
    PrePull(Key),
    /// Of daemonsync's record kind: by the record's namespace and name.
    Record(Key),
    /// Being deleted.
    Terminating,
}

fn slots(pod: &Pod) -> Vec<Slot> {
    let mut slots = Vec::with_capacity(3);
    if let Some(c) = &pod.controller {
        slots.push(Slot::Controller((
            pod.namespace.to_string(),
            c.name.clone(),
        )));
        if c.kind == RECORD_KIND {
            slots.push(Slot::Record((pod.namespace.to_string(), c.name.clone())));
        }
    }
    if selectable(pod) {
        let labels = Arc::as_ptr(&pod.labels) as usize;
        slots.push(Slot::Loose(pod.namespace.to_string(), labels));
    }
    if let Some(ds) = pod.labels.get(crate::plan::render::PRE_PULL_LABEL) {
        slots.push(Slot::PrePull((pod.namespace.to_string(), ds.clone())));
    }
    if pod.is_terminating() {
        slots.push(Slot::Terminating);
    }
    slots
}

/// A pod ordered by its namespace and name: an entry of the index, which so keeps no key of
/// its own (100,000 pods filed under two slots each would copy 200,000 keys).
#[derive(Debug, Clone)]
struct ByKey(Arc<Pod>);

impl ByKey {
    fn key(&self) -> (&str, &str) {
        (&self.0.namespace, &self.0.name)
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// The cached pods, merged over the feeds, with an index by [`Slot`] (each slot's pods in
/// key order).
#[derive(Debug, Default)]
struct PodView {
    pods: BTreeMap<Key, Arc<Pod>>,
    index: BTreeMap<Slot, BTreeSet<ByKey>>,
}

impl PodView {
    /// Puts `pod` (`None`: gone) under `key`.
    fn set(&mut self, key: Key, pod: Option<Arc<Pod>>) {
        if let Some(old) = self.pods.get(&key) {
            if pod.as_ref().is_some_and(|p| Arc::ptr_eq(p, old)) {
                return;
            }
            let entry = ByKey(Arc::clone(old));
            for slot in slots(old) {
                if let Some(pods) = self.index.get_mut(&slot) {
                    pods.remove(&entry);
                    if pods.is_empty() {
                        self.index.remove(&slot);
                    }
                }
            }
        }
        match pod {
            Some(p) => {
                for slot in slots(&p) {
                    // A pod's entry replaces the one of its key before.
                    self.index
                        .entry(slot)
                        .or_default()
                        .replace(ByKey(Arc::clone(&p)));
                }
                self.pods.insert(key, p);
            }
            None => {
                self.pods.remove(&key);
            }
        }
    }

    /// The pods `scope` concerns, in key order: the runs the index files where the scope
    /// looks (each already in key order), merged.
    fn select(&self, scope: &Scope) -> Pods {
        if scope.everything {
            return self.pods.values().cloned().collect();
        }
        let mut runs: Vec<&BTreeSet<ByKey>> = Vec::new();
        let mut take = |slot: &Slot| runs.extend(self.index.get(slot));
        take(&Slot::Terminating);
        let mut namespaces = BTreeSet::new();
        for (ns, name) in scope.planned() {
            let key = (ns.to_string(), name.to_string());
            take(&Slot::Controller(key.clone()));
            take(&Slot::PrePull(key));
            namespaces.insert(ns);
        }
        // The namespace's loose pods a planned selector matches, one label map at a time.
        for ns in namespaces {
            let (first, last) = (
                Slot::Loose(ns.into(), 0),
                Slot::Loose(ns.into(), usize::MAX),
            );
            runs.extend(self.index.range(first..=last).filter_map(|(_, pods)| {
                let p = &pods.first()?.0;
                scope.selects(&p.namespace, &p.labels).then_some(pods)
            }));
        }
        // Managed pods whose record no desired DaemonSet has: orphans to prune.
        let records = self
            .index
            .range(Slot::Record((String::new(), String::new()))..Slot::Terminating);
        for (slot, pods) in records {
            if let Slot::Record((ns, name)) = slot
                && !scope.is_desired(ns, name)
            {
                runs.push(pods);
            }
        }
        merge(runs).into_iter().map(|p| Arc::clone(&p.0)).collect()
    }
}

/// Sorted runs merged into one in key order, a pod in several runs once. A scope's runs are
/// mostly one DaemonSet's pods and a few others (terminating, loose): the few are sorted and
/// placed into the largest run by binary search, so the largest run's keys are not compared
/// one by one; as many (the built-in controller's pods of the DaemonSet, filed under their
/// controller and as loose) are merged side by side, the same pod known by its address.
fn merge(mut runs: Vec<&BTreeSet<ByKey>>) -> Vec<&ByKey> {
    let Some(largest) = (0..runs.len()).max_by_key(|&i| runs[i].len()) else {
        return Vec::new();
    };
    let big: Vec<&ByKey> = runs.swap_remove(largest).iter().collect();
    let mut few: Vec<&ByKey> = runs.into_iter().flatten().collect();
    if few.is_empty() {
        return big;
    }
    few.sort();
    few.dedup_by(|later, kept| Arc::ptr_eq(&later.0, &kept.0));
    let mut out = Vec::with_capacity(big.len() + few.len());
    let mut rest = &big[..];
    if few.len() * 16 >= big.len() {
        let mut few = &few[..];
        while let (Some(&a), Some(&b)) = (rest.first(), few.first()) {
            let order = if Arc::ptr_eq(&a.0, &b.0) {
                std::cmp::Ordering::Equal
            } else {
                a.cmp(b)
            };
            out.push(if order.is_gt() { b } else { a });
            if order.is_le() {
                rest = &rest[1..];
            }
            if order.is_ge() {
                few = &few[1..];
            }
        }
        out.extend_from_slice(few);
    } else {
        for pod in few {
            let at = rest.partition_point(|b| *b < pod);
            out.extend_from_slice(&rest[..at]);
            rest = &rest[at..];
            if rest.first().is_some_and(|b| Arc::ptr_eq(&b.0, &pod.0)) {
                rest = &rest[1..];
            }
            out.push(pod);
        }
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::synthetic::{fleet, fleet_now};
    use crate::model::OwnerRef;
    use crate::plan::incremental::Incremental;
    use crate::plan::{Desired, Policy};

    /// Every pod of a synthetic fleet, with some made orphans, terminating, of another
    /// controller, of a record no longer desired, or pre-pulling.
    fn pods() -> (Vec<Desired>, Vec<Pod>) {
        let (desired, observed) = fleet(30, 6, 11);
        let mut pods: Vec<Pod> = observed.pods.into_iter().collect();
        for (i, p) in pods.iter_mut().enumerate() {
            match i % 11 {
                1 => p.controller = None,
                2 => p.deletion_timestamp = Some(crate::model::Timestamp::UNIX_EPOCH),
                3 => {
                    p.controller = Some(crate::model::shared_owner(OwnerRef {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: "web".into(),
                        uid: "rs".into(),
                    }))
                }
                4 => {
                    p.controller = Some(crate::model::shared_owner(OwnerRef {
                        api_version: crate::plan::RECORD_API_VERSION.into(),
                        kind: RECORD_KIND.into(),
                        name: "gone-from-git".into(),
                        uid: "r".into(),
                    }))
                }
                // The built-in controller's pods, of the DaemonSet of the same name (loose:
                // a selector may overlap them) and of another controller's DaemonSet kind
                // (never loose).
                6 | 7 => {
                    let name = p.controller.as_ref().map(|c| c.name.clone());
                    p.controller = Some(crate::model::shared_owner(OwnerRef {
                        api_version: if i % 11 == 6 {
                            "apps/v1"
                        } else {
                            "apps.kruise.io/v1alpha1"
                        }
                        .into(),
                        kind: "DaemonSet".into(),
                        name: name.unwrap_or_default(),
                        uid: "native".into(),
                    }))
                }
                5 => {
                    let ds = p.controller.as_ref().map(|c| c.name.clone());
                    p.controller = None;
                    p.labels_mut().clear();
                    if let Some(ds) = ds {
                        p.labels_mut()
                            .insert(crate::plan::render::PRE_PULL_LABEL.into(), ds);
                    }
                }
                _ => {}
            }
        }
        (desired, pods)
    }

    #[test]
    fn a_node_changed_in_place_keeps_the_names_seen_and_one_joining_does_not() {
        let key = |n: &str| (String::new(), n.to_string());
        let mut nodes: BTreeMap<Key, Node> = ["a", "b", "c"]
            .into_iter()
            .map(|n| (key(n), Node::named(n)))
            .collect();
        let mut views = Views::default();
        let refresh = |views: &mut Views, nodes: &BTreeMap<Key, Node>, changed: &[&str]| {
            let stale = Stale {
                nodes: changed.iter().map(|n| n.to_string()).collect(),
                ..Stale::default()
            };
            views.refresh(stale, nodes, |_| None, |_| None, Vec::new);
        };
        refresh(&mut views, &nodes, &[]);
        let observed = views.nodes();
        let seen = observed.names_seen();
        // Cordoned: the list is another one (the observation still holds the old), the
        // names are the same.
        nodes.get_mut(&key("b")).unwrap().unschedulable = true;
        refresh(&mut views, &nodes, &["b"]);
        let now = views.nodes();
        assert!(!now.ptr_eq(&observed) && !observed[1].unschedulable && now[1].unschedulable);
        assert!(seen.is(&now), "a node changed in place keeps the names");
        // A node joins between two others, one leaves: the names are not the ones seen.
        nodes.insert(key("bb"), Node::named("bb"));
        refresh(&mut views, &nodes, &["bb"]);
        assert!(!seen.is(&views.nodes()));
        let names: Vec<&str> = views.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "bb", "c"]);
        let seen = views.nodes().names_seen();
        nodes.remove(&key("a"));
        refresh(&mut views, &nodes, &["a"]);
        assert!(!seen.is(&views.nodes()));
        assert_eq!(views.nodes.len(), 3);
    }

    #[test]
    fn runs_merge_in_key_order_with_a_pod_of_several_runs_once() {
        let pod = |name: &str| {
            ByKey(Arc::new(Pod {
                namespace: "ns".into(),
                name: name.into(),
                ..Pod::default()
            }))
        };
        let (a, b, c, d, e) = (pod("a"), pod("b"), pod("c"), pod("d"), pod("e"));
        let run =
            |pods: &[&ByKey]| -> BTreeSet<ByKey> { pods.iter().map(|&p| p.clone()).collect() };
        let runs = [run(&[&b, &e]), run(&[&a, &b, &c, &d]), run(&[&d])];
        let merged = merge(runs.iter().collect());
        let got: Vec<&str> = merged.iter().map(|p| p.0.name.as_str()).collect();
        assert_eq!(got, ["a", "b", "c", "d", "e"]);
        // A few pods placed into many, and as many merged side by side.
        let many: Vec<ByKey> = (0..100).map(|i| pod(&format!("p{i:03}"))).collect();
        let many = run(&many.iter().collect::<Vec<_>>());
        let odd: Vec<&ByKey> = many.iter().skip(1).step_by(2).collect();
        let extra = pod("p050x");
        for few in [
            run(&[&extra, odd[3]]),
            run(&[&[&extra][..], &odd[..]].concat()),
        ] {
            let merged = merge(vec![&many, &few]);
            let got: Vec<&str> = merged.iter().map(|p| p.0.name.as_str()).collect();
            let mut expected: Vec<&str> = many.iter().map(|p| p.0.name.as_str()).collect();
            expected.insert(51, "p050x");
            assert_eq!(got, expected);
        }
        assert!(merge(Vec::new()).is_empty());
    }

    #[test]
    fn the_pods_a_scope_selects_are_the_pods_it_concerns_in_key_order() {
        let (desired, pods) = pods();
        let mut view = PodView::default();
        for p in &pods {
            view.set(
                (p.namespace.to_string(), p.name.clone()),
                Some(Arc::new(p.clone())),
            );
        }
        let mut inc = Incremental::new(Policy::default());
        inc.update(
            &desired,
            &crate::plan::Observed::default(),
            &Default::default(),
            fleet_now(),
        );
        let keys: Vec<_> = desired
            .iter()
            .map(|d| {
                let m = &d.daemonset.metadata;
                (
                    m.namespace.clone().unwrap_or_default(),
                    m.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        let mut sorted = pods.clone();
        sorted.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for woken in [
            BTreeSet::from([keys[0].clone()]),
            BTreeSet::from([keys[1].clone(), keys[4].clone()]),
            keys[1..].iter().cloned().collect(),
        ] {
            let scope = inc.scope(&desired, &woken);
            assert!(!scope.everything);
            let selected: Vec<String> =
                view.select(&scope).iter().map(|p| p.name.clone()).collect();
            let expected: Vec<String> = sorted
                .iter()
                .filter(|p| scope.concerns(p))
                .map(|p| p.name.clone())
                .collect();
            assert_eq!(selected, expected, "woken {woken:?}");
            assert!(selected.len() < pods.len(), "a scope is not every pod");
        }
        // A pod gone, or changed, leaves the index with it.
        let gone = &sorted[0];
        view.set((gone.namespace.to_string(), gone.name.clone()), None);
        let scope = inc.scope(&desired, &keys.iter().cloned().collect());
        assert!(scope.everything, "every DaemonSet woken reads every pod");
        assert!(view.select(&scope).iter().all(|p| p.name != gone.name));
        let scope = inc.scope(&desired, &keys[1..].iter().cloned().collect());
        assert!(view.select(&scope).iter().all(|p| p.name != gone.name));
        assert!(view.index.values().flatten().all(|p| {
            view.pods
                .contains_key(&(p.0.namespace.to_string(), p.0.name.clone()))
        }));
    }
}

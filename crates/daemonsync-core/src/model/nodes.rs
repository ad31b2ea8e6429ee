//! The nodes of an observation, shared with the cache they came from.

use super::Node;
use std::sync::Arc;

/// The nodes of an observation. The list is shared ([`Arc`]) with the cache that observed
/// it, so an observation of a fleet whose nodes did not change copies one pointer, not
/// thousands of nodes; reading gives a `Vec<Node>`, and writing (tests, the simulated
/// cluster, the cache bringing its list up to date) copies the list first if it is shared.
///
/// It also knows its names apart from the rest: a token stands for the names in their order,
/// kept by a node replaced under its own name ([`Nodes::set`]) and renewed by every other
/// write, so that a planner keeping an index of the names ([`Nodes::names_seen`]) keeps it
/// while nodes only change their labels, taints or resources.
#[derive(Debug, Clone, Default)]
pub struct Nodes {
    list: Arc<Vec<Node>>,
    names: Arc<()>,
}

impl PartialEq for Nodes {
    fn eq(&self, other: &Nodes) -> bool {
        self.list == other.list
    }
}

impl Nodes {
    /// No nodes.
    pub fn new() -> Self {
        Nodes::default()
    }

    /// Whether `self` and `other` are the same shared list (not merely equal).
    pub fn ptr_eq(&self, other: &Nodes) -> bool {
        Arc::ptr_eq(&self.list, &other.list)
    }

    /// Replaces node `i` with `node`: under the same name, the names stay the ones seen.
    pub fn set(&mut self, i: usize, node: Node) {
        if self.list[i].name != node.name {
            self.names = Arc::default();
        }
        Arc::make_mut(&mut self.list)[i] = node;
    }

    /// A handle on these names in this order that keeps nothing alive ([`Seen::is`]).
    pub fn names_seen(&self) -> Seen {
        Seen(Arc::downgrade(&self.names))
    }
}

/// The names of a list of nodes once seen, in their order, known by a token without holding
/// it: tells whether a later observation has those same names at the same places without
/// reading one. Any write but [`Nodes::set`] under a node's own name renews the token.
#[derive(Debug, Clone, Default)]
pub struct Seen(std::sync::Weak<()>);

impl Seen {
    /// Whether `nodes` has the names seen, in the same order.
    pub fn is(&self, nodes: &Nodes) -> bool {
        self.0
            .upgrade()
            .is_some_and(|a| Arc::ptr_eq(&a, &nodes.names))
    }
}

impl std::ops::Deref for Nodes {
    type Target = Vec<Node>;
    fn deref(&self) -> &Vec<Node> {
        &self.list
    }
}

impl std::ops::DerefMut for Nodes {
    /// The list, writable: copied first if another observation shares it. Its names may
    /// change, so they are no longer the ones seen.
    fn deref_mut(&mut self) -> &mut Vec<Node> {
        self.names = Arc::default();
        Arc::make_mut(&mut self.list)
    }
}

impl From<Vec<Node>> for Nodes {
    fn from(nodes: Vec<Node>) -> Self {
        Nodes {
            list: Arc::new(nodes),
            names: Arc::default(),
        }
    }
}

impl FromIterator<Node> for Nodes {
    fn from_iter<I: IntoIterator<Item = Node>>(nodes: I) -> Self {
        nodes.into_iter().collect::<Vec<Node>>().into()
    }
}

impl<'a> IntoIterator for &'a Nodes {
    type Item = &'a Node;
    type IntoIter = std::slice::Iter<'a, Node>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

impl<'a> IntoIterator for &'a mut Nodes {
    type Item = &'a mut Node;
    type IntoIter = std::slice::IterMut<'a, Node>;
    fn into_iter(self) -> Self::IntoIter {
        std::ops::DerefMut::deref_mut(self).iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::DerefMut;

    #[test]
    fn a_shared_list_is_copied_only_when_written() {
        let a: Nodes = vec![Node::named("a")].into();
        let mut b = a.clone();
        assert!(a.ptr_eq(&b), "a copy of an observation shares its nodes");
        b.push(Node::named("b"));
        assert!(!a.ptr_eq(&b));
        assert_eq!(
            a.len(),
            1,
            "writing one observation leaves the other as it was"
        );
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn names_seen_are_known_until_a_write_may_change_them() {
        let mut a: Nodes = vec![Node::named("a"), Node::named("b")].into();
        let seen = a.names_seen();
        assert!(seen.is(&a));
        assert!(
            seen.is(&a.clone()),
            "a copy of the observation has the same names"
        );
        assert!(
            !seen.is(&vec![Node::named("a"), Node::named("b")].into()),
            "equal names in another list are not known without reading them"
        );
        // A node replaced under its own name: the names are still the ones seen, in the
        // copy written and in the one that still holds the list.
        let held = a.clone();
        let mut cordoned = Node::named("b");
        cordoned.unschedulable = true;
        a.set(1, cordoned);
        assert!(seen.is(&a) && seen.is(&held));
        assert!(a[1].unschedulable && !held[1].unschedulable);
        // Renamed, inserted, removed, or written through the list: not the names seen.
        a.set(1, Node::named("c"));
        assert!(!seen.is(&a) && seen.is(&held));
        let mut b = held.clone();
        b.push(Node::named("d"));
        assert!(!seen.is(&b));
        let mut c = held.clone();
        c.deref_mut()[0].unschedulable = true;
        assert!(
            !seen.is(&c),
            "any write through the list may have renamed a node"
        );
        drop(held);
        assert!(!seen.is(&a));
    }
}

//! The nodes of an observation, shared with the cache they came from.

use super::Node;
use std::sync::Arc;

/// The nodes of an observation. The list is shared ([`Arc`]) with the cache that observed
/// it, so an observation of a fleet whose nodes did not change copies one pointer, not
/// thousands of nodes; reading gives a `Vec<Node>`, and writing (tests, the simulated
/// cluster, the cache bringing its list up to date) copies the list first if it is shared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Nodes(Arc<Vec<Node>>);

impl Nodes {
    /// No nodes.
    pub fn new() -> Self {
        Nodes::default()
    }

    /// Whether `self` and `other` are the same shared list (not merely equal).
    pub fn ptr_eq(&self, other: &Nodes) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A handle on this very list that keeps none of it alive ([`Seen::is`]).
    pub fn seen(&self) -> Seen {
        Seen(Arc::downgrade(&self.0))
    }
}

/// A list of nodes once seen, known by its address without holding it: tells whether a later
/// observation holds that same list, unwritten since, without reading a node. A list is only
/// written through [`Arc::make_mut`], which copies it when another holder shares it and
/// otherwise moves it away from every such handle: either way, the list written is another
/// one. Keeping this handle never makes a write copy the list.
#[derive(Debug, Clone, Default)]
pub struct Seen(std::sync::Weak<Vec<Node>>);

impl Seen {
    /// Whether `nodes` is the list seen, as it was then.
    pub fn is(&self, nodes: &Nodes) -> bool {
        self.0.upgrade().is_some_and(|a| Arc::ptr_eq(&a, &nodes.0))
    }
}

impl std::ops::Deref for Nodes {
    type Target = Vec<Node>;
    fn deref(&self) -> &Vec<Node> {
        &self.0
    }
}

impl std::ops::DerefMut for Nodes {
    /// The list, writable: copied first if another observation shares it.
    fn deref_mut(&mut self) -> &mut Vec<Node> {
        Arc::make_mut(&mut self.0)
    }
}

impl From<Vec<Node>> for Nodes {
    fn from(nodes: Vec<Node>) -> Self {
        Nodes(Arc::new(nodes))
    }
}

impl FromIterator<Node> for Nodes {
    fn from_iter<I: IntoIterator<Item = Node>>(nodes: I) -> Self {
        Nodes(Arc::new(nodes.into_iter().collect()))
    }
}

impl<'a> IntoIterator for &'a Nodes {
    type Item = &'a Node;
    type IntoIter = std::slice::Iter<'a, Node>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Nodes {
    type Item = &'a mut Node;
    type IntoIter = std::slice::IterMut<'a, Node>;
    fn into_iter(self) -> Self::IntoIter {
        Arc::make_mut(&mut self.0).iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_list_seen_is_known_until_it_is_written() {
        let mut a: Nodes = vec![Node::named("a")].into();
        let seen = a.seen();
        assert!(seen.is(&a));
        assert!(
            seen.is(&a.clone()),
            "a copy of the observation holds the same list"
        );
        assert!(
            !seen.is(&vec![Node::named("a")].into()),
            "an equal list is another one"
        );
        // Written while no one else holds it: moved away from the handle, not copied.
        a[0].unschedulable = true;
        assert!(!seen.is(&a), "the list written is not the one seen");
        let seen = a.seen();
        let held = a.clone();
        a.push(Node::named("b"));
        assert!(!seen.is(&a), "written while shared: a copy");
        assert!(
            seen.is(&held),
            "the list seen, still held elsewhere, is unchanged"
        );
        assert_eq!(held.len(), 1);
        drop(held);
        assert!(!seen.is(&a), "a list no one holds is no one's");
    }
}

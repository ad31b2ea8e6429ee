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
}

//! The observed pods, shared: [`Pods`].

use super::Pod;
use std::sync::Arc;

/// The pods of an observation. Each pod is shared ([`Arc`]) with the cache it came from, so
/// an observation copies one pointer per pod, never a pod; reading gives `&Pod`, and writing
/// (tests, the simulated cluster) copies the one pod written if it is shared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pods(Vec<Arc<Pod>>);

impl Pods {
    /// No pods.
    pub fn new() -> Self {
        Pods(Vec::new())
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pod at `i`.
    pub fn get(&self, i: usize) -> Option<&Pod> {
        self.0.get(i).map(|p| &**p)
    }

    /// Every pod, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Pod> + ExactSizeIterator + Clone {
        self.0.iter().map(|p| &**p)
    }

    /// Every pod, writable (a shared one is copied first).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Pod> {
        self.0.iter_mut().map(Arc::make_mut)
    }

    /// The pods as shared.
    pub fn shared(&self) -> &[Arc<Pod>] {
        &self.0
    }

    /// Adds a pod.
    pub fn push(&mut self, pod: Pod) {
        self.0.push(Arc::new(pod));
    }

    /// The last pod, writable.
    pub fn last_mut(&mut self) -> Option<&mut Pod> {
        self.0.last_mut().map(Arc::make_mut)
    }

    /// Removes the pod at `i`.
    pub fn remove(&mut self, i: usize) -> Pod {
        Arc::unwrap_or_clone(self.0.remove(i))
    }

    /// Keeps the first `len` pods.
    pub fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    /// Keeps the pods `keep` says.
    pub fn retain(&mut self, mut keep: impl FnMut(&Pod) -> bool) {
        self.0.retain(|p| keep(p));
    }
}

impl std::ops::Index<usize> for Pods {
    type Output = Pod;
    fn index(&self, i: usize) -> &Pod {
        &self.0[i]
    }
}

impl std::ops::IndexMut<usize> for Pods {
    fn index_mut(&mut self, i: usize) -> &mut Pod {
        Arc::make_mut(&mut self.0[i])
    }
}

impl From<Vec<Pod>> for Pods {
    fn from(pods: Vec<Pod>) -> Self {
        pods.into_iter().collect()
    }
}

impl From<Vec<Arc<Pod>>> for Pods {
    fn from(pods: Vec<Arc<Pod>>) -> Self {
        Pods(pods)
    }
}

impl FromIterator<Pod> for Pods {
    fn from_iter<I: IntoIterator<Item = Pod>>(pods: I) -> Self {
        Pods(pods.into_iter().map(Arc::new).collect())
    }
}

impl FromIterator<Arc<Pod>> for Pods {
    fn from_iter<I: IntoIterator<Item = Arc<Pod>>>(pods: I) -> Self {
        Pods(pods.into_iter().collect())
    }
}

impl Extend<Pod> for Pods {
    fn extend<I: IntoIterator<Item = Pod>>(&mut self, pods: I) {
        self.0.extend(pods.into_iter().map(Arc::new));
    }
}

impl IntoIterator for Pods {
    type Item = Pod;
    type IntoIter = std::iter::Map<std::vec::IntoIter<Arc<Pod>>, fn(Arc<Pod>) -> Pod>;
    /// The pods, each copied if it is still shared.
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().map(Arc::unwrap_or_clone)
    }
}

impl<'a> IntoIterator for &'a mut Pods {
    type Item = &'a mut Pod;
    type IntoIter =
        std::iter::Map<std::slice::IterMut<'a, Arc<Pod>>, fn(&mut Arc<Pod>) -> &mut Pod>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut().map(Arc::make_mut)
    }
}

impl<'a> IntoIterator for &'a Pods {
    type Item = &'a Pod;
    type IntoIter = std::iter::Map<std::slice::Iter<'a, Arc<Pod>>, fn(&Arc<Pod>) -> &Pod>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|p| &**p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_shares_its_pods_until_one_is_written() {
        let pods: Pods = vec![Pod::default(), Pod::default()].into();
        let mut copy = pods.clone();
        assert!(Arc::ptr_eq(&pods.shared()[0], &copy.shared()[0]));
        copy[1].name = "written".into();
        assert!(Arc::ptr_eq(&pods.shared()[0], &copy.shared()[0]));
        assert_eq!(pods[1].name, "");
        assert_eq!(
            copy.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["", "written"]
        );
    }
}

//! Registry indices in order of first insertion, each once: a session's
//! activations and its evidence. Membership is a set lookup, because both
//! lists grow with the chat and are asked about for every name a search,
//! load or restart handles: a scan of the list each time made resuming a
//! session quadratic in its evidence.

use std::collections::HashSet;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IndexList {
    order: Vec<u32>,
    members: HashSet<u32>,
}

impl IndexList {
    /// Appends `i` unless it is there already; returns whether it was new.
    pub fn insert(&mut self, i: u32) -> bool {
        let new = self.members.insert(i);
        if new {
            self.order.push(i);
        }
        new
    }

    pub fn contains(&self, i: u32) -> bool {
        self.members.contains(&i)
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.order
    }

    /// Empties the list; returns how many indices it held.
    pub fn clear(&mut self) -> usize {
        self.members.clear();
        std::mem::take(&mut self.order).len()
    }

    /// Replaces each index by `f` of it, dropping those `f` maps to `None`
    /// and any that land on an index already kept: the order stays.
    pub fn remap(&mut self, mut f: impl FnMut(u32) -> Option<u32>) {
        let old = std::mem::take(&mut self.order);
        self.members.clear();
        for i in old {
            if let Some(j) = f(i) {
                self.insert(j);
            }
        }
    }
}

impl Extend<u32> for IndexList {
    fn extend<T: IntoIterator<Item = u32>>(&mut self, iter: T) {
        for i in iter {
            self.insert(i);
        }
    }
}

impl FromIterator<u32> for IndexList {
    fn from_iter<T: IntoIterator<Item = u32>>(iter: T) -> Self {
        let mut list = IndexList::default();
        list.extend(iter);
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_insertion_order_once() {
        let mut l: IndexList = [3, 1, 3, 2, 1].into_iter().collect();
        assert_eq!(l.as_slice(), [3, 1, 2]);
        assert!(l.contains(2) && !l.contains(4));
        assert!(!l.insert(1));
        l.remap(|i| (i != 1).then_some(i * 10));
        assert_eq!(l.as_slice(), [30, 20]);
        assert!(l.contains(30) && !l.contains(3));
        assert_eq!(l.clear(), 2);
        assert!(l.as_slice().is_empty() && !l.contains(30));
    }
}

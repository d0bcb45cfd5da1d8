//! Registry indices in order of first insertion, each once: a session's
//! activations and its evidence. Both grow with the chat and are asked
//! about for every name a search, load or restart handles, so past a few
//! hundred entries membership is a set lookup: a scan of the list each time
//! made resuming a session quadratic in its evidence. Below that the list
//! alone is scanned (a few hundred integers, well under a microsecond),
//! which keeps a session at 8 bytes per activated tool (README, "Memory");
//! past it each entry costs about 20 bytes more.

use std::collections::HashSet;

/// Up to this many indices, membership scans the list.
const SCAN: usize = 256;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IndexList {
    order: Vec<u32>,
    /// The same indices, once there are more than `SCAN`. Boxed: a pointer
    /// inline instead of the set's 48 bytes, in every session.
    #[allow(clippy::box_collection)]
    members: Option<Box<HashSet<u32>>>,
}

impl IndexList {
    /// Appends `i` unless it is there already; returns whether it was new.
    pub fn insert(&mut self, i: u32) -> bool {
        if self.contains(i) {
            return false;
        }
        self.order.push(i);
        match &mut self.members {
            Some(set) => {
                set.insert(i);
            }
            None if self.order.len() > SCAN => {
                self.members = Some(Box::new(self.order.iter().copied().collect()));
            }
            None => {}
        }
        true
    }

    pub fn contains(&self, i: u32) -> bool {
        match &self.members {
            Some(set) => set.contains(&i),
            None => self.order.contains(&i),
        }
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.order
    }

    /// Empties the list; returns how many indices it held.
    pub fn clear(&mut self) -> usize {
        self.members = None;
        let n = self.order.len();
        self.order.clear();
        n
    }

    /// Replaces each index by `f` of it, dropping those `f` maps to `None`
    /// and any that land on an index already kept: the order stays.
    pub fn remap(&mut self, mut f: impl FnMut(u32) -> Option<u32>) {
        let old = std::mem::take(&mut self.order);
        self.members = None;
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

    #[test]
    fn long_lists_answer_the_same() {
        let mut l = IndexList::default();
        for i in (0..1000).rev().chain(0..1000) {
            l.insert(i % 600);
        }
        assert_eq!(l.as_slice().len(), 600);
        assert_eq!(l.as_slice()[0], 999 % 600);
        assert!((0..600).all(|i| l.contains(i)) && !l.contains(600));
        l.remap(|i| (i % 2 == 0).then_some(i / 2));
        assert_eq!(l.as_slice().len(), 300);
        assert!((0..300).all(|i| l.contains(i)) && !l.contains(300));
    }
}

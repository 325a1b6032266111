//! A short sequence kept inline, so that a state is copied without
//! allocating: the checker copies one for every transition it explores.

use std::fmt;
use std::hash::{Hash, Hasher};

/// At most `N` items, inline. Only the first `len` slots count (equality
/// and hashing see just those); a push past `N` panics, a bound of the
/// model to raise.
#[derive(Clone, Copy)]
pub struct Seq<T: Copy + Default, const N: usize> {
    items: [T; N],
    len: u8,
}

impl<T: Copy + Default, const N: usize> Seq<T, N> {
    pub fn new() -> Self {
        Seq {
            items: [T::default(); N],
            len: 0,
        }
    }

    pub fn as_slice(&self) -> &[T] {
        &self.items[..usize::from(self.len)]
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    pub fn push(&mut self, item: T) {
        self.insert(self.len(), item);
    }

    pub fn insert(&mut self, at: usize, item: T) {
        assert!(self.len() < N, "a sequence of the model outgrew its bound of {N}");
        let len = self.len();
        self.items.copy_within(at..len, at + 1);
        self.items[at] = item;
        self.len += 1;
    }

    pub fn remove(&mut self, at: usize) -> T {
        let item = self.items[at];
        let len = self.len();
        self.items.copy_within(at + 1..len, at);
        self.len -= 1;
        self.items[self.len()] = T::default();
        item
    }

    pub fn clear(&mut self) {
        *self = Self::new();
    }

    pub fn retain(&mut self, keep: impl Fn(&T) -> bool) {
        let mut kept = Self::new();
        for item in self.iter().filter(|i| keep(i)) {
            kept.push(*item);
        }
        *self = kept;
    }
}

impl<T: Copy + Default, const N: usize> std::ops::Index<usize> for Seq<T, N> {
    type Output = T;

    fn index(&self, at: usize) -> &T {
        &self.as_slice()[at]
    }
}

impl<T: Copy + Default, const N: usize> std::ops::IndexMut<usize> for Seq<T, N> {
    fn index_mut(&mut self, at: usize) -> &mut T {
        let len = self.len();
        &mut self.items[..len][at]
    }
}

impl<'a, T: Copy + Default, const N: usize> IntoIterator for &'a Seq<T, N> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Copy + Default, const N: usize> Default for Seq<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for Seq<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for Seq<T, N> {}

impl<T: Copy + Default + Hash, const N: usize> Hash for Seq<T, N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl<T: Copy + Default + PartialOrd, const N: usize> PartialOrd for Seq<T, N> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.as_slice().partial_cmp(other.as_slice())
    }
}

impl<T: Copy + Default + Ord, const N: usize> Ord for Seq<T, N> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl<T: Copy + Default + fmt::Debug, const N: usize> fmt::Debug for Seq<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

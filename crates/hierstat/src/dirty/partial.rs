//! A *partial* flush's walks of a dirty tree: the subtree of the flushed
//! group minus some child subtrees the flush leaves for later (see
//! `within.rs`, which plans them, and `Core::flush_subtree`).
//!
//! Every group of the flushed subtree is one of three [`Part`]s:
//!
//! * **left**: the root of a subtree the flush does not touch (its rows
//!   stay queued and on the trees);
//! * **opened**: the flushed root, and every ancestor of a left group below
//!   it: the flush aggregates its own row and absorbs its `pending`, but
//!   leaves it on a tree where a left descendant still is (the tree's
//!   invariant: a group on the tree has its parent on it);
//! * **carried**: everything else, flushed as a whole subtree flush would
//!   (the descendants of a carried group are carried).

use super::{DirtyTree, NONE};

/// What a partial flush does with a group of its subtree (see the module
/// docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// A subtree left alone.
    Left,
    /// Aggregated, kept on the tree while a left descendant is.
    Opened,
    /// Flushed with its whole subtree.
    Carried,
}

impl DirtyTree {
    /// Appends the *carried* groups of `root`'s subtree that are on the tree
    /// to `out` (not the opened ones, nothing under a left one), leaving the
    /// tree unchanged: the groups whose threshold accounting the flush
    /// resets. `part` classifies a group that is not below a carried one.
    pub(crate) fn collect_carried(
        &self,
        root: u32,
        part: impl Fn(u32) -> Part,
        out: &mut Vec<u32>,
    ) {
        if self.nodes.is_empty() || !self.nodes.contains_key(&root) {
            return;
        }
        // (group, whether an ancestor is carried)
        let mut stack = vec![(root, false)];
        while let Some((r, under_carried)) = stack.pop() {
            let carried = under_carried
                || match part(r) {
                    Part::Left => continue,
                    Part::Opened => false,
                    Part::Carried => true,
                };
            if carried {
                out.push(r);
            }
            if let Some(l) = self.nodes.get(&r) {
                stack.extend(l.children.iter().map(|&c| (c, carried)));
            }
        }
    }

    /// Removes the carried groups of `root`'s subtree from the tree and
    /// appends them, with the opened ones, to `out`, every child before its
    /// parent; an opened group stays on the tree while one of its children
    /// does (a left subtree below it). `parent` is `root`'s parent id
    /// (`NONE` for the tree's root). `root` itself must be opened.
    pub(crate) fn extract_partial(
        &mut self,
        root: u32,
        parent: u32,
        part: impl Fn(u32) -> Part,
        out: &mut Vec<u32>,
    ) {
        if self.nodes.is_empty() || !self.nodes.contains_key(&root) {
            return;
        }
        debug_assert_eq!(part(root), Part::Opened, "a partial flush opens its root");
        // Post-order over the opened groups: (group, its parent, expanded).
        let mut stack = vec![(root, parent, false)];
        let mut children = Vec::new();
        while let Some((n, p, expanded)) = stack.pop() {
            if expanded {
                out.push(n);
                let empty = self.nodes.get(&n).is_none_or(|l| l.children.is_empty());
                if empty {
                    self.remove_leaf(n, p);
                }
                continue;
            }
            stack.push((n, p, true));
            children.clear();
            if let Some(l) = self.nodes.get(&n) {
                children.extend_from_slice(&l.children);
            }
            for &c in &children {
                match part(c) {
                    Part::Left => {}
                    // Pushed after `n`'s expanded entry: popped, and listed,
                    // before it.
                    Part::Opened => stack.push((c, n, false)),
                    // Listed now, child before parent, before `n`.
                    Part::Carried => self.extract(c, n, out),
                }
            }
        }
    }

    /// Removes group `n`, which has no child on the tree, and unlinks it from
    /// its parent `p` (`NONE`: none).
    fn remove_leaf(&mut self, n: u32, p: u32) {
        if let Some(l) = self.nodes.remove(&n) {
            if l.children.capacity() != 0 && self.spare.len() < super::MAX_SPARE {
                self.spare.push(l.children);
            }
        }
        if p != NONE {
            if let Some(pl) = self.nodes.get_mut(&p) {
                if let Some(i) = pl.children.iter().position(|&c| c == n) {
                    pl.children.swap_remove(i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parent;
    use super::*;

    fn tree() -> DirtyTree {
        let mut t = DirtyTree::default();
        for r in [3, 5, 6] {
            t.insert(r, parent);
        }
        t.check_shape(parent).unwrap();
        t
    }

    /// Opened {0, 1}, left {2}: 3 and 4's subtree are carried.
    fn part(r: u32) -> Part {
        match r {
            0 | 1 => Part::Opened,
            2 => Part::Left,
            _ => Part::Carried,
        }
    }

    #[test]
    fn collect_carried_skips_opened_and_left_subtrees() {
        let t = tree();
        let mut out = Vec::new();
        t.collect_carried(0, part, &mut out);
        out.sort_unstable();
        assert_eq!(out, [3, 4, 5]);
    }

    #[test]
    fn extract_partial_keeps_the_left_subtree_and_its_ancestors() {
        let mut t = tree();
        let mut out = Vec::new();
        t.extract_partial(0, NONE, part, &mut out);
        let pos = |r| out.iter().position(|&x| x == r).unwrap();
        let mut got = out.clone();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 3, 4, 5]);
        for &r in &out {
            if r != 0 {
                assert!(pos(r) < pos(parent(r)), "{r} after its parent in {out:?}");
            }
        }
        // 2 and 6 stay, with their ancestors 1 and 0.
        for r in [0, 1, 2, 6] {
            assert!(t.contains(r), "{r} left the tree");
        }
        for r in [3, 4, 5] {
            assert!(!t.contains(r), "{r} is still on the tree");
        }
        t.check_shape(parent).unwrap();
        // Everything left is taken by a whole flush afterwards.
        out.clear();
        t.extract(0, NONE, &mut out);
        out.sort_unstable();
        assert_eq!(out, [0, 1, 2, 6]);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn an_opened_group_without_a_left_child_on_the_tree_leaves_it() {
        // The left group 2 is not on this shard's tree: 1 and 0 go.
        let mut t = DirtyTree::default();
        t.insert(3, parent);
        t.insert(5, parent);
        let mut out = Vec::new();
        t.extract_partial(1, 0, part, &mut out);
        assert_eq!(out, [3, 1]);
        assert!(!t.contains(1) && t.contains(0) && t.contains(5));
        t.check_shape(parent).unwrap();
    }
}

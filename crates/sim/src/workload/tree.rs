//! The shape of a group tree, independent of any engine.
//!
//! Groups are numbered in preorder (root = 0), so the subtree of a group is
//! the contiguous interval `[idx, last_descendant]`: subtree tests and
//! flush-lock scopes are two comparisons.

use super::spec::{Targets, TreeSpec};
use crate::lock::Scope;

/// Index of a group in a [`TreeShape`] (preorder; the root is 0).
pub type GroupIdx = u32;

/// One group of the shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupShape {
    /// Parent index (`None` for the root).
    pub parent: Option<GroupIdx>,
    /// Name (unique among siblings).
    pub name: String,
    /// Depth (root = 0).
    pub depth: u32,
    /// Largest preorder index in this group's subtree.
    pub last: GroupIdx,
}

/// A tree of groups in preorder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeShape {
    groups: Vec<GroupShape>,
}

impl TreeShape {
    /// A tree with only the root.
    pub fn root_only() -> Self {
        TreeShape {
            groups: vec![GroupShape {
                parent: None,
                name: String::new(),
                depth: 0,
                last: 0,
            }],
        }
    }

    /// Builds the tree of a scenario's `[tree]` table.
    pub fn from_spec(spec: &TreeSpec) -> Self {
        let mut t = TreeShape::root_only();
        t.grow(0, &spec.fanout, &spec.names);
        t.fix_last();
        t
    }

    /// A chain `root/a/b/...` of `depth` groups below the root (the group at
    /// the end is at `depth`).
    pub fn chain(depth: u32) -> Self {
        let mut t = TreeShape::root_only();
        for d in 1..=depth {
            let name = ((b'a' + ((d - 1) % 26) as u8) as char).to_string();
            t.groups.push(GroupShape {
                parent: Some(d - 1),
                name,
                depth: d,
                last: 0,
            });
        }
        t.fix_last();
        t
    }

    fn grow(&mut self, parent: GroupIdx, fanout: &[u32], names: &[String]) {
        let Some((&n, rest)) = fanout.split_first() else {
            return;
        };
        let depth = self.groups[parent as usize].depth + 1;
        for i in 0..n {
            let name = match names.get(i as usize) {
                Some(s) => s.clone(),
                None if depth == 1 => format!("g{i}"),
                None => format!("c{i}"),
            };
            let idx = self.groups.len() as GroupIdx;
            self.groups.push(GroupShape {
                parent: Some(parent),
                name,
                depth,
                last: 0,
            });
            self.grow(idx, rest, &[]);
        }
    }

    fn fix_last(&mut self) {
        for i in 0..self.groups.len() {
            self.groups[i].last = i as GroupIdx;
        }
        for i in (1..self.groups.len()).rev() {
            let last = self.groups[i].last;
            let p = self.groups[i].parent.expect("non-root has a parent") as usize;
            if self.groups[p].last < last {
                self.groups[p].last = last;
            }
        }
    }

    /// Number of groups including the root.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Always `false`: a tree has a root.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The group at `idx`.
    pub fn group(&self, idx: GroupIdx) -> &GroupShape {
        &self.groups[idx as usize]
    }

    /// All groups in preorder.
    pub fn groups(&self) -> &[GroupShape] {
        &self.groups
    }

    /// Parent of `idx`.
    pub fn parent(&self, idx: GroupIdx) -> Option<GroupIdx> {
        self.groups[idx as usize].parent
    }

    /// `/`-separated path of `idx` (`/` for the root).
    pub fn path(&self, idx: GroupIdx) -> String {
        let mut parts = Vec::new();
        let mut cur = Some(idx);
        while let Some(c) = cur {
            if c != 0 {
                parts.push(self.groups[c as usize].name.as_str());
            }
            cur = self.groups[c as usize].parent;
        }
        parts.reverse();
        format!("/{}", parts.join("/"))
    }

    /// The subtree of `idx` as a lock scope.
    pub fn scope(&self, idx: GroupIdx) -> Scope {
        Scope {
            lo: idx,
            hi: self.groups[idx as usize].last,
        }
    }

    /// `true` when `idx` is `anc` or below it.
    pub fn in_subtree(&self, anc: GroupIdx, idx: GroupIdx) -> bool {
        anc <= idx && idx <= self.groups[anc as usize].last
    }

    /// `idx` followed by its ancestors up to the root.
    pub fn ancestors_inclusive(&self, idx: GroupIdx) -> Vec<GroupIdx> {
        let mut v = Vec::new();
        let mut cur = Some(idx);
        while let Some(c) = cur {
            v.push(c);
            cur = self.groups[c as usize].parent;
        }
        v
    }

    /// The groups a writer or reader of `targets` picks from.
    pub fn targets(&self, targets: Targets) -> Vec<GroupIdx> {
        let n = self.groups.len() as GroupIdx;
        match targets {
            Targets::Root => vec![0],
            Targets::All => (1..n)
                .collect::<Vec<_>>()
                .into_iter()
                .chain(if n == 1 { Some(0) } else { None })
                .collect(),
            Targets::Slices => (1..n)
                .filter(|&i| self.groups[i as usize].depth == 1)
                .collect(),
            Targets::Leaves => (0..n)
                .filter(|&i| self.groups[i as usize].last == i && (i != 0 || n == 1))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preorder_and_subtree_intervals() {
        let t = TreeShape::from_spec(&TreeSpec {
            fanout: vec![2, 3],
            names: vec!["system.slice".into()],
        });
        assert_eq!(t.len(), 1 + 2 + 6);
        assert_eq!(t.group(1).name, "system.slice");
        assert_eq!(t.scope(1), Scope { lo: 1, hi: 4 });
        assert_eq!(t.scope(5), Scope { lo: 5, hi: 8 });
        assert_eq!(t.scope(0), Scope { lo: 0, hi: 8 });
        assert_eq!(t.path(3), "/system.slice/c1");
        assert_eq!(t.targets(Targets::Leaves), vec![2, 3, 4, 6, 7, 8]);
        assert_eq!(t.targets(Targets::Slices), vec![1, 5]);
        assert!(t.in_subtree(1, 4) && !t.in_subtree(1, 5));
        assert_eq!(t.ancestors_inclusive(7), vec![7, 5, 0]);
    }

    #[test]
    fn chain_has_the_depth() {
        let t = TreeShape::chain(4);
        assert_eq!(t.len(), 5);
        assert_eq!(t.group(4).depth, 4);
        assert_eq!(t.path(4), "/a/b/c/d");
        assert_eq!(t.targets(Targets::Leaves), vec![4]);
    }
}

//! A dynamic AABB tree (bounding volume hierarchy) for the broad phase.
//!
//! Leaves hold fat AABBs. Insertion descends by the surface-area heuristic
//! (perimeter in 2D) and rebalances with AVL-style rotations, as in Box2D.
//! The tree's shape depends on insertion history, but query *results* are
//! sorted by the caller, so the tree is derived data: it is rebuilt on
//! restore and never hashed.
//!
//! Every node also keeps the union of its leaves' collision categories, so a
//! query with a mask skips whole subtrees of shapes it cannot collide with
//! (after Box2D v3's tree).
//!
//! Moving bodies do not re-insert their leaves one by one: as in Box2D v3,
//! [`DynamicTree::enlarge_proxy`] only grows the leaf and its ancestors and
//! marks them enlarged, and [`DynamicTree::rebuild`] then rebuilds the
//! enlarged internal nodes top-down (median split on the longer axis of the
//! centres), keeping every subtree nothing moved out of as it is. That is
//! cheaper than many re-insertions, gives a better tree for the next
//! queries, and costs nothing where the world is at rest. After many leaves
//! were created (at least an eighth of the nodes: a scene being built) the
//! whole tree is rebuilt once; a few new leaves stay where insertion put
//! them. Leaf indices (proxy ids) never change.

use crate::math::{Aabb, Scalar, Vec2};

const NULL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    aabb: Aabb,
    parent: u32,
    child1: u32,
    child2: u32,
    /// Leaf: user value (shape id); internal: unused.
    user: u32,
    /// Leaf = 0; free = -1.
    height: i32,
    /// Leaf: its category bits; internal: the union of its leaves'.
    category: u32,
    /// Grown by [`DynamicTree::enlarge_proxy`] since the last rebuild
    /// (a leaf, or an ancestor of one).
    enlarged: bool,
}

impl Node {
    #[inline]
    fn is_leaf(&self) -> bool {
        self.child1 == NULL
    }
}

/// The traversal stack of a query on a shared tree: its first [`INLINE`]
/// entries live in the query's own frame, so a query allocates nothing
/// (a depth-first walk holds at most about the tree's height, which
/// rebalancing keeps near log₂ of the leaves); deeper walks spill to the
/// heap. Last in, first out, as a `Vec` would be, so the visiting order is
/// the same. (The sandbox game asks the trees for every avatar's contacts
/// every tick: two queries each, which allocated and grew a `Vec` five
/// times or so.)
struct QueryStack {
    inline: [u32; INLINE],
    len: usize,
    /// Entries pushed while `inline` was full (only ever non-empty then).
    spill: Vec<u32>,
}

/// Entries a [`QueryStack`] holds without allocating.
const INLINE: usize = 64;

impl QueryStack {
    fn new(root: u32) -> QueryStack {
        let mut s = QueryStack {
            inline: [NULL; INLINE],
            len: 0,
            spill: Vec::new(),
        };
        s.push(root);
        s
    }

    #[inline]
    fn push(&mut self, node: u32) {
        if let Some(slot) = self.inline.get_mut(self.len) {
            *slot = node;
            self.len += 1;
        } else {
            self.spill.push(node);
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<u32> {
        if let Some(node) = self.spill.pop() {
            return Some(node);
        }
        self.len = self.len.checked_sub(1)?;
        Some(self.inline[self.len])
    }
}

/// A dynamic bounding volume tree.
#[derive(Debug, Default)]
pub struct DynamicTree {
    nodes: Vec<Node>,
    root: u32,
    free: Vec<u32>,
    stack: Vec<u32>,
    /// Leaves created or enlarged since the last rebuild.
    dirty: u32,
    /// Leaves created since the last rebuild.
    new_leaves: u32,
    /// Scratch for rebuilds.
    leaves: Vec<LeafKey>,
    tasks: Vec<(u32, u32, u32, bool)>,
    created: Vec<u32>,
}

/// A piece of a rebuild (a leaf, or the root of a subtree kept as it is)
/// and its centre (doubled), for rebuilding without touching nodes.
#[derive(Clone, Copy, Debug)]
struct LeafKey {
    cx: Scalar,
    cy: Scalar,
    leaf: u32,
}

impl Clone for DynamicTree {
    fn clone(&self) -> DynamicTree {
        DynamicTree {
            nodes: self.nodes.clone(),
            root: self.root,
            free: self.free.clone(),
            stack: Vec::new(),
            dirty: self.dirty,
            new_leaves: self.new_leaves,
            leaves: Vec::new(),
            tasks: Vec::new(),
            created: Vec::new(),
        }
    }

    fn clone_from(&mut self, o: &DynamicTree) {
        self.nodes.clone_from(&o.nodes);
        self.root = o.root;
        self.free.clone_from(&o.free);
        self.dirty = o.dirty;
        self.new_leaves = o.new_leaves;
    }
}

impl DynamicTree {
    /// Asks the CPU to start loading every node (a node is a line: see
    /// [`World::prefetch_state`](crate::dynamics::world::World::prefetch_state)).
    pub(crate) fn prefetch(&self) {
        for n in &self.nodes {
            crate::math::prefetch(n);
        }
    }

    /// An empty tree.
    pub fn new() -> DynamicTree {
        DynamicTree {
            nodes: Vec::new(),
            root: NULL,
            free: Vec::new(),
            stack: Vec::new(),
            dirty: 0,
            new_leaves: 0,
            leaves: Vec::new(),
            tasks: Vec::new(),
            created: Vec::new(),
        }
    }

    fn alloc(&mut self) -> u32 {
        let node = Node {
            aabb: Aabb::default(),
            parent: NULL,
            child1: NULL,
            child2: NULL,
            user: NULL,
            height: 0,
            category: 0,
            enlarged: false,
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    /// Inserts a leaf (matching every query mask) and returns its proxy id.
    pub fn create_proxy(&mut self, aabb: Aabb, user: u32) -> u32 {
        self.create_filtered_proxy(aabb, user, u32::MAX)
    }

    /// Inserts a leaf with collision `category` bits and returns its proxy id.
    pub fn create_filtered_proxy(&mut self, aabb: Aabb, user: u32, category: u32) -> u32 {
        let leaf = self.alloc();
        self.nodes[leaf as usize].aabb = aabb;
        self.nodes[leaf as usize].user = user;
        self.nodes[leaf as usize].category = category;
        self.dirty += 1;
        self.new_leaves += 1;
        self.insert_leaf(leaf);
        leaf
    }

    /// Removes a leaf.
    pub fn destroy_proxy(&mut self, proxy: u32) {
        self.remove_leaf(proxy);
        self.nodes[proxy as usize].height = -1;
        self.free.push(proxy);
    }

    /// Replaces a leaf's box.
    pub fn move_proxy(&mut self, proxy: u32, aabb: Aabb) {
        self.remove_leaf(proxy);
        self.nodes[proxy as usize].aabb = aabb;
        self.insert_leaf(proxy);
    }

    /// Gives a leaf a new box that contains its old one's contents, growing
    /// its ancestors as needed without restructuring; call
    /// [`DynamicTree::rebuild`] once after a batch of these.
    pub fn enlarge_proxy(&mut self, proxy: u32, aabb: Aabb) {
        let leaf = &mut self.nodes[proxy as usize];
        leaf.aabb = aabb;
        leaf.enlarged = true;
        self.dirty += 1;
        let mut i = leaf.parent;
        // Grow the ancestors that do not contain the new box yet...
        while i != NULL {
            let n = &mut self.nodes[i as usize];
            n.enlarged = true;
            i = n.parent;
            if n.aabb.contains(&aabb) {
                break;
            }
            n.aabb = n.aabb.union(&aabb);
        }
        // ...and mark the rest of the path up to the root for the rebuild,
        // stopping at the first marked node: every ancestor of a marked
        // node is marked (inserts and rotations keep that true).
        while i != NULL {
            let n = &mut self.nodes[i as usize];
            if n.enlarged {
                break;
            }
            n.enlarged = true;
            i = n.parent;
        }
    }

    /// Whether leaves were created or enlarged since the last rebuild.
    pub fn needs_rebuild(&self) -> bool {
        self.dirty > 0
    }

    /// Rebuilds the enlarged internal nodes (every internal node after
    /// many leaves were created) top-down: each new node splits its pieces —
    /// leaves and kept subtrees — at the median of their centres along the
    /// longer axis (ties broken by node index, so the result depends only
    /// on the pieces). Leaf indices are kept.
    pub fn rebuild(&mut self) {
        self.dirty = 0;
        // Many new leaves (a scene being built): rebuild everything. A few
        // were inserted well enough by the perimeter heuristic.
        let new_leaves = core::mem::take(&mut self.new_leaves) as usize;
        let live_nodes = self.nodes.len() - self.free.len();
        let full = new_leaves * 8 >= live_nodes;
        if self.root == NULL {
            return;
        }
        let mut leaves = core::mem::take(&mut self.leaves);
        leaves.clear();
        let mut stack = core::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.root);
        // Internal slots are freed in the old tree's depth-first order and
        // pushed so that they are reused in that order (no sort needed).
        let first_freed = self.free.len();
        while let Some(i) = stack.pop() {
            let n = self.nodes[i as usize];
            self.nodes[i as usize].enlarged = false;
            if n.is_leaf() || !(full || n.enlarged) {
                leaves.push(LeafKey {
                    cx: n.aabb.lower.x + n.aabb.upper.x,
                    cy: n.aabb.lower.y + n.aabb.upper.y,
                    leaf: i,
                });
            } else {
                self.nodes[i as usize].height = -1;
                self.free.push(i);
                stack.push(n.child1);
                stack.push(n.child2);
            }
        }
        self.free[first_freed..].reverse();
        self.stack = stack;
        self.root = self.build(&mut leaves, NULL);
        self.leaves = leaves;
    }

    /// Builds the tree over `leaves` without recursion: internal nodes are
    /// created top-down (pre-order), then their boxes, heights and
    /// categories are filled bottom-up (reverse creation order).
    fn build(&mut self, leaves: &mut [LeafKey], parent: u32) -> u32 {
        // (start, end, parent, is second child)
        let mut tasks = core::mem::take(&mut self.tasks);
        let mut created = core::mem::take(&mut self.created);
        tasks.clear();
        created.clear();
        tasks.push((0, leaves.len() as u32, parent, false));
        let mut root = NULL;
        while let Some((start, end, up, second)) = tasks.pop() {
            let (start, end) = (start as usize, end as usize);
            let node = if end - start == 1 {
                leaves[start].leaf
            } else {
                let part = &mut leaves[start..end];
                let (mut x0, mut x1, mut y0, mut y1) =
                    (part[0].cx, part[0].cx, part[0].cy, part[0].cy);
                for k in part.iter() {
                    x0 = x0.min(k.cx);
                    x1 = x1.max(k.cx);
                    y0 = y0.min(k.cy);
                    y1 = y1.max(k.cy);
                }
                let mid = part.len() / 2;
                if x1 - x0 >= y1 - y0 {
                    part.select_nth_unstable_by(mid, |a, b| (a.cx, a.leaf).cmp(&(b.cx, b.leaf)));
                } else {
                    part.select_nth_unstable_by(mid, |a, b| (a.cy, a.leaf).cmp(&(b.cy, b.leaf)));
                }
                let node = self.alloc();
                created.push(node);
                tasks.push(((start + mid) as u32, end as u32, node, true));
                tasks.push((start as u32, (start + mid) as u32, node, false));
                node
            };
            self.nodes[node as usize].parent = up;
            if up == parent {
                root = node;
            } else if second {
                self.nodes[up as usize].child2 = node;
            } else {
                self.nodes[up as usize].child1 = node;
            }
        }
        for &node in created.iter().rev() {
            let n = self.nodes[node as usize];
            let (n1, n2) = (self.nodes[n.child1 as usize], self.nodes[n.child2 as usize]);
            let m = &mut self.nodes[node as usize];
            m.aabb = n1.aabb.union(&n2.aabb);
            m.height = 1 + n1.height.max(n2.height);
            m.category = n1.category | n2.category;
        }
        self.tasks = tasks;
        self.created = created;
        root
    }

    /// Calls `f(user)` for every leaf whose box overlaps `aabb`.
    #[inline]
    pub fn query(&mut self, aabb: &Aabb, f: impl FnMut(u32)) {
        self.query_masked(aabb, u32::MAX, f);
    }

    /// Calls `f(user)` for every leaf whose box overlaps `aabb` and whose
    /// category shares a bit with `mask`.
    #[inline]
    pub fn query_masked(&mut self, aabb: &Aabb, mask: u32, mut f: impl FnMut(u32)) {
        if self.root == NULL {
            return;
        }
        let mut stack = core::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.root);
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if n.category & mask == 0 || !n.aabb.overlaps(aabb) {
                continue;
            }
            if n.is_leaf() {
                f(n.user);
            } else {
                stack.push(n.child1);
                stack.push(n.child2);
            }
        }
        self.stack = stack;
    }

    /// Like [`DynamicTree::query`], for a shared tree (with its own stack,
    /// on the call stack: see [`QueryStack`]).
    pub fn query_shared(&self, aabb: &Aabb, mut f: impl FnMut(u32)) {
        if self.root == NULL {
            return;
        }
        let mut stack = QueryStack::new(self.root);
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if !n.aabb.overlaps(aabb) {
                continue;
            }
            if n.is_leaf() {
                f(n.user);
            } else {
                stack.push(n.child1);
                stack.push(n.child2);
            }
        }
    }

    /// Calls `f(user)` for every leaf whose box the segment `p1`–`p2` may
    /// touch: boxes overlapping the segment's bounding box and not separated
    /// from it along the segment's normal (exact 128-bit test).
    pub fn query_ray(&self, p1: Vec2, p2: Vec2, mut f: impl FnMut(u32)) {
        if self.root == NULL {
            return;
        }
        let seg_box = Aabb::new(p1.min(p2), p1.max(p2));
        let d = p2 - p1;
        // Normal of the segment (not normalised: only the sign matters).
        let (vx, vy) = (-(d.y.to_bits() as i128), d.x.to_bits() as i128);
        let mut stack = QueryStack::new(self.root);
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if !n.aabb.overlaps(&seg_box) {
                continue;
            }
            // Separating axis |v · (c − p1)| > |v|·h, with the box centre c
            // and half-extents h, doubled to stay in integers.
            let cx =
                (n.aabb.lower.x + n.aabb.upper.x).to_bits() as i128 - 2 * p1.x.to_bits() as i128;
            let cy =
                (n.aabb.lower.y + n.aabb.upper.y).to_bits() as i128 - 2 * p1.y.to_bits() as i128;
            let hx = (n.aabb.upper.x - n.aabb.lower.x).to_bits() as i128;
            let hy = (n.aabb.upper.y - n.aabb.lower.y).to_bits() as i128;
            let sep = (vx * cx + vy * cy).abs();
            if sep > vx.abs() * hx + vy.abs() * hy {
                continue;
            }
            if n.is_leaf() {
                f(n.user);
            } else {
                stack.push(n.child1);
                stack.push(n.child2);
            }
        }
    }

    fn insert_leaf(&mut self, leaf: u32) {
        // A re-inserted leaf's box is exact in its new place: not enlarged
        // (and no marked node under an unmarked parent).
        self.nodes[leaf as usize].enlarged = false;
        if self.root == NULL {
            self.root = leaf;
            self.nodes[leaf as usize].parent = NULL;
            return;
        }
        // Find the best sibling by the perimeter heuristic.
        let leaf_aabb = self.nodes[leaf as usize].aabb;
        let mut index = self.root;
        while !self.nodes[index as usize].is_leaf() {
            let n = self.nodes[index as usize];
            let area = n.aabb.perimeter();
            let combined = n.aabb.union(&leaf_aabb).perimeter();
            let cost = combined.shl(1);
            let inheritance = (combined - area).shl(1);
            let child_cost = |c: u32| -> Scalar {
                let cn = &self.nodes[c as usize];
                let u = leaf_aabb.union(&cn.aabb).perimeter();
                if cn.is_leaf() {
                    u + inheritance
                } else {
                    u - cn.aabb.perimeter() + inheritance
                }
            };
            let cost1 = child_cost(n.child1);
            let cost2 = child_cost(n.child2);
            if cost < cost1 && cost < cost2 {
                break;
            }
            index = if cost1 <= cost2 { n.child1 } else { n.child2 };
        }
        let sibling = index;
        let old_parent = self.nodes[sibling as usize].parent;
        let new_parent = self.alloc();
        {
            let sib_aabb = self.nodes[sibling as usize].aabb;
            let sib_height = self.nodes[sibling as usize].height;
            let category =
                self.nodes[sibling as usize].category | self.nodes[leaf as usize].category;
            let np = &mut self.nodes[new_parent as usize];
            np.parent = old_parent;
            np.category = category;
            np.aabb = leaf_aabb.union(&sib_aabb);
            np.height = sib_height + 1;
            np.child1 = sibling;
            np.child2 = leaf;
        }
        // Keep "every ancestor of a marked node is marked": the old parent
        // is marked if the sibling is.
        self.nodes[new_parent as usize].enlarged = self.nodes[sibling as usize].enlarged;
        if old_parent != NULL {
            let op = &mut self.nodes[old_parent as usize];
            if op.child1 == sibling {
                op.child1 = new_parent;
            } else {
                op.child2 = new_parent;
            }
        } else {
            self.root = new_parent;
        }
        self.nodes[sibling as usize].parent = new_parent;
        self.nodes[leaf as usize].parent = new_parent;
        self.refit(self.nodes[leaf as usize].parent);
    }

    fn remove_leaf(&mut self, leaf: u32) {
        if leaf == self.root {
            self.root = NULL;
            return;
        }
        let parent = self.nodes[leaf as usize].parent;
        let grand = self.nodes[parent as usize].parent;
        let p = self.nodes[parent as usize];
        let sibling = if p.child1 == leaf { p.child2 } else { p.child1 };
        if grand != NULL {
            let g = &mut self.nodes[grand as usize];
            if g.child1 == parent {
                g.child1 = sibling;
            } else {
                g.child2 = sibling;
            }
            self.nodes[sibling as usize].parent = grand;
            self.nodes[parent as usize].height = -1;
            self.free.push(parent);
            self.refit(grand);
        } else {
            self.root = sibling;
            self.nodes[sibling as usize].parent = NULL;
            self.nodes[parent as usize].height = -1;
            self.free.push(parent);
        }
    }

    /// Walks up from `index`, rebalancing and refitting boxes and heights.
    fn refit(&mut self, mut index: u32) {
        while index != NULL {
            index = self.balance(index);
            let n = self.nodes[index as usize];
            let (c1, c2) = (self.nodes[n.child1 as usize], self.nodes[n.child2 as usize]);
            let node = &mut self.nodes[index as usize];
            node.height = 1 + c1.height.max(c2.height);
            node.aabb = c1.aabb.union(&c2.aabb);
            node.category = c1.category | c2.category;
            index = node.parent;
        }
    }

    /// One AVL rotation if `a` is unbalanced; returns the subtree's new root.
    fn balance(&mut self, a: u32) -> u32 {
        let na = self.nodes[a as usize];
        if na.is_leaf() || na.height < 2 {
            return a;
        }
        let (b, c) = (na.child1, na.child2);
        let balance = self.nodes[c as usize].height - self.nodes[b as usize].height;
        if balance > 1 {
            self.rotate(a, c, b, true)
        } else if balance < -1 {
            self.rotate(a, b, c, false)
        } else {
            a
        }
    }

    /// Lifts `up` (a child of `a`) above `a`; `other` is `a`'s other child.
    fn rotate(&mut self, a: u32, up: u32, other: u32, up_is_child2: bool) -> u32 {
        let nu = self.nodes[up as usize];
        let (f, g) = (nu.child1, nu.child2);
        // Swap a and up.
        let a_parent = self.nodes[a as usize].parent;
        self.nodes[up as usize].child1 = a;
        self.nodes[up as usize].parent = a_parent;
        self.nodes[a as usize].parent = up;
        if a_parent != NULL {
            let p = &mut self.nodes[a_parent as usize];
            if p.child1 == a {
                p.child1 = up;
            } else {
                p.child2 = up;
            }
        } else {
            self.root = up;
        }
        // The taller grandchild stays under `up`; the other goes to `a`.
        let (keep, give) = if self.nodes[f as usize].height > self.nodes[g as usize].height {
            (f, g)
        } else {
            (g, f)
        };
        self.nodes[up as usize].child2 = keep;
        if up_is_child2 {
            self.nodes[a as usize].child2 = give;
        } else {
            self.nodes[a as usize].child1 = give;
        }
        self.nodes[give as usize].parent = a;
        // `a` moved under `up`: keep every ancestor of a marked node marked
        // (`up`'s new parent was `a`'s, marked if `a` is).
        self.nodes[up as usize].enlarged |= self.nodes[a as usize].enlarged;
        let other_n = self.nodes[other as usize];
        let give_n = self.nodes[give as usize];
        let keep_n = self.nodes[keep as usize];
        let na = &mut self.nodes[a as usize];
        na.aabb = other_n.aabb.union(&give_n.aabb);
        na.height = 1 + other_n.height.max(give_n.height);
        na.category = other_n.category | give_n.category;
        let na = *na;
        let nu = &mut self.nodes[up as usize];
        nu.aabb = na.aabb.union(&keep_n.aabb);
        nu.height = 1 + na.height.max(keep_n.height);
        nu.category = na.category | keep_n.category;
        up
    }

    /// Height of the tree (0 for a single leaf).
    pub fn height(&self) -> i32 {
        if self.root == NULL {
            0
        } else {
            self.nodes[self.root as usize].height
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fx;

    /// `prefetch` asks for each node's start only: a node must fit a line.
    #[test]
    fn prefetch_covers_every_line() {
        let (size, align) = (core::mem::size_of::<Node>(), core::mem::align_of::<Node>());
        assert!(
            crate::math::covers_lines(size, align, &[0]),
            "a node of {size} bytes"
        );
    }

    #[test]
    fn query_finds_exactly_the_overlaps_and_stays_balanced() {
        let mut t = DynamicTree::new();
        let mut boxes = Vec::new();
        for i in 0..500 {
            let x = fx((i * 37) % 101);
            let y = fx((i * 53) % 97);
            let b = Aabb::new(Vec2::new(x, y), Vec2::new(x + fx(2), y + fx(2)));
            let p = t.create_proxy(b, i as u32);
            boxes.push((p, b));
        }
        assert!(t.height() < 20, "height {}", t.height());
        // Move some, remove some.
        for (i, (p, b)) in boxes.iter_mut().enumerate() {
            if i % 3 == 0 {
                *b = Aabb::new(
                    b.lower + Vec2::from_ints(5, 1),
                    b.upper + Vec2::from_ints(5, 1),
                );
                t.move_proxy(*p, *b);
            }
        }
        for (p, _) in boxes.iter().step_by(7) {
            t.destroy_proxy(*p);
        }
        let q = Aabb::new(Vec2::from_ints(20, 20), Vec2::from_ints(40, 30));
        let mut got = Vec::new();
        t.query(&q, |u| got.push(u));
        got.sort();
        let want: Vec<u32> = boxes
            .iter()
            .enumerate()
            .filter(|(i, (_, b))| i % 7 != 0 && b.overlaps(&q))
            .map(|(i, _)| i as u32)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn ray_query_finds_the_boxes_the_segment_crosses() {
        let mut t = DynamicTree::new();
        let mut boxes = Vec::new();
        for i in 0..20 {
            for j in 0..20 {
                let lo = Vec2::from_ints(i * 3, j * 3);
                let b = Aabb::new(lo, lo + Vec2::from_ints(1, 1));
                t.create_proxy(b, (i * 20 + j) as u32);
                boxes.push(b);
            }
        }
        // The diagonal y = x passes through the boxes with i == j only.
        let mut got = Vec::new();
        t.query_ray(Vec2::from_ints(-1, -1), Vec2::from_ints(70, 70), |u| {
            got.push(u)
        });
        got.sort();
        let want: Vec<u32> = (0..20).map(|i| (i * 20 + i) as u32).collect();
        assert_eq!(got, want);
        // query_shared agrees with query.
        let q = Aabb::new(Vec2::from_ints(5, 5), Vec2::from_ints(12, 9));
        let mut a = Vec::new();
        let mut b = Vec::new();
        t.query_shared(&q, |u| a.push(u));
        t.query(&q, |u| b.push(u));
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert!(!a.is_empty());
    }

    /// The query stack is last in, first out across its inline part and
    /// its spill, as a `Vec` is, whatever the push and pop pattern.
    #[test]
    fn query_stack_is_a_stack_past_its_inline_part() {
        let mut s = QueryStack::new(0);
        let mut v = vec![0u32];
        let mut x = 0x9e37_79b9u32;
        let mut deepest = 0;
        for step in 0..5000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // Mostly pushes early on, mostly pops later: the depth
            // crosses the inline size many times.
            let push = (x % 100) < if (step / 500) % 2 == 0 { 70 } else { 30 };
            if push {
                s.push(step);
                v.push(step);
            } else {
                assert_eq!(s.pop(), v.pop());
            }
            deepest = deepest.max(v.len());
        }
        assert!(deepest > 2 * INLINE, "the walk never spilled: {deepest}");
        while let Some(want) = v.pop() {
            assert_eq!(s.pop(), Some(want));
        }
        assert_eq!(s.pop(), None);
    }

    /// Every ancestor of a marked node is marked (what lets
    /// `enlarge_proxy` stop at the first marked ancestor).
    fn assert_marks_closed(t: &DynamicTree) {
        for (i, n) in t.nodes.iter().enumerate() {
            if n.height < 0 || !n.enlarged || n.parent == NULL {
                continue;
            }
            assert!(
                t.nodes[n.parent as usize].enlarged,
                "node {i} marked under an unmarked parent"
            );
        }
    }

    #[test]
    fn marks_stay_closed_under_inserts_removals_and_moves_between_rebuilds() {
        let mut t = DynamicTree::new();
        let mut live: Vec<(u32, Aabb)> = Vec::new();
        let mut rng = 12345u64;
        let mut next = || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) as i32
        };
        let mut user = 0u32;
        for round in 0..40 {
            for _ in 0..60 {
                let x = fx(next() % 200);
                let y = fx(next() % 200);
                let b = Aabb::new(
                    Vec2::new(x, y),
                    Vec2::new(x + fx(1 + next() % 4), y + fx(2)),
                );
                match next() % 6 {
                    // Enlarge (the common case), as moving bodies do.
                    0..=2 if !live.is_empty() => {
                        let k = (next() as usize) % live.len();
                        let grown = live[k].1.union(&b);
                        t.enlarge_proxy(live[k].0, grown);
                        live[k].1 = grown;
                    }
                    // Re-insert elsewhere (a teleport): rotations on the way.
                    3 if !live.is_empty() => {
                        let k = (next() as usize) % live.len();
                        t.move_proxy(live[k].0, b);
                        live[k].1 = b;
                    }
                    4 if live.len() > 20 => {
                        let k = (next() as usize) % live.len();
                        t.destroy_proxy(live.swap_remove(k).0);
                    }
                    _ => {
                        user += 1;
                        live.push((t.create_proxy(b, user), b));
                    }
                }
                assert_marks_closed(&t);
            }
            let q = Aabb::new(Vec2::from_ints(40, 40), Vec2::from_ints(120, 90));
            let mut want: Vec<u32> = live
                .iter()
                .filter(|(_, b)| b.overlaps(&q))
                .map(|(p, _)| t.nodes[*p as usize].user)
                .collect();
            want.sort();
            let mut got = Vec::new();
            t.query(&q, |u| got.push(u));
            got.sort();
            assert_eq!(got, want, "round {round} before the rebuild");
            t.rebuild();
            // A rebuild reaches every marked node and clears it.
            assert!(
                t.nodes.iter().all(|n| n.height < 0 || !n.enlarged),
                "round {round}"
            );
            let mut got = Vec::new();
            t.query_masked(&q, u32::MAX, |u| got.push(u));
            got.sort();
            assert_eq!(got, want, "round {round} after the rebuild");
        }
    }

    #[test]
    fn enlarge_and_rebuild_keep_queries_exact() {
        let mut t = DynamicTree::new();
        let mut boxes = Vec::new();
        for i in 0..300u32 {
            let x = fx(((i * 37) % 101) as i32);
            let y = fx(((i * 53) % 97) as i32);
            let b = Aabb::new(Vec2::new(x, y), Vec2::new(x + fx(2), y + fx(2)));
            boxes.push((t.create_filtered_proxy(b, i, 1 << (i % 2)), b));
        }
        let check = |t: &mut DynamicTree, boxes: &[(u32, Aabb)]| {
            for q in [
                Aabb::new(Vec2::from_ints(20, 20), Vec2::from_ints(40, 30)),
                Aabb::new(Vec2::from_ints(-5, -5), Vec2::from_ints(200, 200)),
                Aabb::new(Vec2::from_ints(50, 0), Vec2::from_ints(51, 90)),
            ] {
                let mut got = Vec::new();
                t.query_masked(&q, 0b10, |u| got.push(u));
                got.sort();
                let want: Vec<u32> = boxes
                    .iter()
                    .enumerate()
                    .filter(|(i, (_, b))| i % 2 == 1 && b.overlaps(&q))
                    .map(|(i, _)| i as u32)
                    .collect();
                assert_eq!(got, want);
            }
        };
        check(&mut t, &boxes);
        for round in 0..3 {
            for (i, (p, b)) in boxes.iter_mut().enumerate() {
                if (i + round) % 2 == 0 {
                    // Move far: the enlarged box covers old and new places.
                    let moved = Aabb::new(
                        b.lower + Vec2::from_ints(7, -3),
                        b.upper + Vec2::from_ints(7, -3),
                    );
                    t.enlarge_proxy(*p, moved);
                    *b = moved;
                }
            }
            assert!(t.needs_rebuild());
            check(&mut t, &boxes);
            t.rebuild();
            assert!(!t.needs_rebuild());
            assert!(t.height() <= 10, "height {}", t.height());
            check(&mut t, &boxes);
        }
        // Incremental changes still work on a rebuilt tree.
        for (p, _) in boxes.iter().step_by(5) {
            t.destroy_proxy(*p);
        }
        let kept: Vec<(u32, Aabb)> = boxes
            .iter()
            .enumerate()
            .map(|(i, e)| {
                if i % 5 == 0 {
                    (
                        e.0,
                        Aabb::new(Vec2::from_ints(-900, -900), Vec2::from_ints(-899, -899)),
                    )
                } else {
                    *e
                }
            })
            .collect();
        check(&mut t, &kept);
    }

    #[test]
    fn rebuild_after_one_leaf_moved_only_touches_its_path() {
        let mut t = DynamicTree::new();
        let mut proxies = Vec::new();
        for i in 0..256i32 {
            let (x, y) = (fx(3 * (i % 16)), fx(3 * (i / 16)));
            let b = Aabb::new(Vec2::new(x, y), Vec2::new(x + fx(1), y + fx(1)));
            proxies.push(t.create_proxy(b, i as u32));
        }
        t.rebuild();
        assert_eq!(
            t.created.len(),
            255,
            "after creating leaves everything is rebuilt"
        );
        // Move one leaf a little (its new box still overlaps the old one).
        let p = proxies[77];
        let moved = Aabb::new(Vec2::from_ints(40, 12), Vec2::from_ints(42, 14));
        t.enlarge_proxy(p, moved);
        t.rebuild();
        // Only the moved leaf's ancestors are rebuilt, not all 255 nodes.
        let rebuilt = t.created.len();
        assert!(
            rebuilt >= 1 && rebuilt <= t.height() as usize,
            "{rebuilt} nodes rebuilt"
        );
        assert!(t.nodes.iter().all(|n| !n.enlarged || n.height < 0));
        let mut got = Vec::new();
        t.query(
            &Aabb::new(Vec2::from_ints(41, 13), Vec2::from_ints(41, 13)),
            |u| got.push(u),
        );
        assert_eq!(got, vec![77]);
    }

    #[test]
    fn masked_query_skips_other_categories() {
        let mut t = DynamicTree::new();
        for i in 0..200u32 {
            let x = fx((i % 20) as i32);
            let y = fx((i / 20) as i32);
            let b = Aabb::new(Vec2::new(x, y), Vec2::new(x + fx(2), y + fx(2)));
            t.create_filtered_proxy(b, i, 1 << (i % 3));
        }
        let q = Aabb::new(Vec2::from_ints(3, 3), Vec2::from_ints(9, 6));
        let mut all = Vec::new();
        t.query(&q, |u| all.push(u));
        let mut some = Vec::new();
        t.query_masked(&q, 0b101, |u| some.push(u));
        all.retain(|u| u % 3 != 1);
        all.sort();
        some.sort();
        assert!(!some.is_empty());
        assert_eq!(some, all);
        let mut none = Vec::new();
        t.query_masked(&q, 0b1000, |u| none.push(u));
        assert!(none.is_empty());
    }
}

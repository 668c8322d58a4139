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

/// Low bits of a Q32.32 coordinate a tree box drops: its unit is 2⁻¹⁶ m
/// (about 15 µm), and an `i32` of them spans ±32 768 m, well past
/// [`WORLD_BOUND`](crate::math::WORLD_BOUND).
const DROP: u32 = 16;

/// A box as the tree keeps it: the caller's box rounded outward (lower
/// corner down, upper corner up) to 2⁻¹⁶ m, saturating at ±(2³¹ − 1)
/// units, and stored as `[lx, ly, −ux, −uy]`. Half the bytes of an
/// [`Aabb`], so that a node is 32 bytes and two share a cache line (the
/// tree's walks are chains of dependent loads, and a smaller node is fewer
/// of them missed); with the upper corner negated, every test is four
/// `<=` between lanes and a union is four `min`s, which the compiler does
/// in one vector instruction each.
///
/// Rounding is monotone, so boxes that overlap (or nest) still do after it:
/// a query misses no leaf, and may also return leaves whose exact boxes lie
/// up to 2⁻¹⁶ m from the box asked about. Callers whose answer must be exact
/// test their own exact boxes (the shapes' fat boxes) after the query.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TreeBox([i32; 4]);

/// The largest tree coordinate (so that negating one never overflows).
const LIMIT: i64 = i32::MAX as i64;

/// A coordinate rounded down to the tree's unit.
#[inline(always)]
fn down(v: Scalar) -> i32 {
    (v.to_bits() >> DROP).clamp(-LIMIT, LIMIT) as i32
}

/// A coordinate rounded up to the tree's unit.
#[inline(always)]
fn up(v: Scalar) -> i32 {
    let r = v.to_bits();
    let q = (r >> DROP) + i64::from(r & ((1 << DROP) - 1) != 0);
    q.clamp(-LIMIT, LIMIT) as i32
}

/// A tree coordinate in Q32.32 bits, widened for the ray test's products.
#[inline(always)]
fn raw(q: i32) -> i128 {
    i128::from(q) << DROP
}

/// What a query compares the nodes' boxes with: its box's upper corner and
/// negated lower corner, so that a node overlaps it exactly when every lane
/// of the node's box is at most the probe's.
#[derive(Clone, Copy, Debug)]
struct Probe([i32; 4]);

impl TreeBox {
    /// The smallest tree box holding `b`.
    #[inline(always)]
    fn around(b: &Aabb) -> TreeBox {
        TreeBox([
            down(b.lower.x),
            down(b.lower.y),
            -up(b.upper.x),
            -up(b.upper.y),
        ])
    }

    #[inline(always)]
    fn lower(&self) -> (i32, i32) {
        (self.0[0], self.0[1])
    }

    #[inline(always)]
    fn upper(&self) -> (i32, i32) {
        (-self.0[2], -self.0[3])
    }

    /// The probe that finds the boxes overlapping this one.
    #[inline(always)]
    fn probe(&self) -> Probe {
        let [lx, ly, nux, nuy] = self.0;
        Probe([-nux, -nuy, -lx, -ly])
    }

    /// Whether this box overlaps the probe's (touching counts):
    /// `lx ≤ p.ux`, `ly ≤ p.uy`, `p.lx ≤ ux`, `p.ly ≤ uy`.
    #[inline(always)]
    fn overlaps(&self, p: &Probe) -> bool {
        let (a, b) = (&self.0, &p.0);
        // Without short cuts: four compares and no branch but the caller's.
        (a[0] <= b[0]) & (a[1] <= b[1]) & (a[2] <= b[2]) & (a[3] <= b[3])
    }

    /// Whether `o` lies inside `self`.
    #[inline(always)]
    fn contains(&self, o: &TreeBox) -> bool {
        let (a, b) = (&self.0, &o.0);
        (a[0] <= b[0]) & (a[1] <= b[1]) & (a[2] <= b[2]) & (a[3] <= b[3])
    }

    /// Smallest box containing both.
    #[inline(always)]
    fn union(&self, o: &TreeBox) -> TreeBox {
        let (a, b) = (&self.0, &o.0);
        TreeBox([
            a[0].min(b[0]),
            a[1].min(b[1]),
            a[2].min(b[2]),
            a[3].min(b[3]),
        ])
    }

    /// Perimeter (the surface-area heuristic in 2D), in tree units.
    #[inline(always)]
    fn perimeter(&self) -> i64 {
        let [lx, ly, nux, nuy] = self.0.map(i64::from);
        2 * ((-nux - lx) + (-nuy - ly))
    }

    /// Centre, doubled (so exact), in tree units.
    #[inline(always)]
    fn centre2(&self) -> (i64, i64) {
        let [lx, ly, nux, nuy] = self.0.map(i64::from);
        (lx - nux, ly - nuy)
    }
}

/// What a query reads of a node: its box, children, leaf value and
/// categories, 32 bytes on a 32-byte boundary (two nodes to a line; Box2D
/// v3's node, with `f32` boxes, is 40). The rest of a node, which only
/// changing the tree's shape reads, is its [`Link`].
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Node {
    bx: TreeBox,
    child1: u32,
    child2: u32,
    /// Leaf: user value (shape id); internal: unused.
    user: u32,
    /// Leaf: its category bits; internal: the union of its leaves'.
    category: u32,
}

impl Node {
    #[inline]
    fn is_leaf(&self) -> bool {
        self.child1 == NULL
    }
}

/// A node's place in the tree's shape (same index as its [`Node`]).
#[derive(Clone, Copy, Debug)]
#[repr(align(16))]
struct Link {
    parent: u32,
    /// Leaf = 0; free = -1.
    height: i32,
    /// Grown by [`DynamicTree::enlarge_proxy`] since the last rebuild
    /// (a leaf, or an ancestor of one).
    enlarged: bool,
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
    /// One per node, same index.
    links: Vec<Link>,
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
/// and its centre (doubled, in tree units), for rebuilding without touching
/// nodes.
#[derive(Clone, Copy, Debug)]
struct LeafKey {
    cx: i64,
    cy: i64,
    leaf: u32,
}

/// Moves the pieces whose centre's `key` is below `pivot` to the front
/// (one Hoare pass, as Box2D v3's rebuild does) and returns how many there
/// are; half the pieces, as they lie, when one side would be empty (all
/// centres equal). Which pieces land on which side depends on the pieces'
/// order, which is the old tree's: derived data, like the tree itself.
fn split_at_middle(part: &mut [LeafKey], key: impl Fn(&LeafKey) -> i64, pivot: i64) -> usize {
    let (mut i, mut j) = (0, part.len());
    loop {
        while i < j && key(&part[i]) < pivot {
            i += 1;
        }
        while i < j && key(&part[j - 1]) >= pivot {
            j -= 1;
        }
        if i >= j {
            break;
        }
        part.swap(i, j - 1);
        i += 1;
        j -= 1;
    }
    if i == 0 || i == part.len() {
        part.len() / 2
    } else {
        i
    }
}

impl Clone for DynamicTree {
    fn clone(&self) -> DynamicTree {
        DynamicTree {
            nodes: self.nodes.clone(),
            links: self.links.clone(),
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
        self.links.clone_from(&o.links);
        self.root = o.root;
        self.free.clone_from(&o.free);
        self.dirty = o.dirty;
        self.new_leaves = o.new_leaves;
    }
}

impl DynamicTree {
    /// Asks the CPU to start loading every node and link (each fits a line:
    /// see [`World::prefetch_state`](crate::dynamics::world::World::prefetch_state)).
    pub(crate) fn prefetch(&self) {
        for n in &self.nodes {
            crate::math::prefetch(n);
        }
        for l in &self.links {
            crate::math::prefetch(l);
        }
    }

    /// An empty tree.
    pub fn new() -> DynamicTree {
        DynamicTree {
            nodes: Vec::new(),
            links: Vec::new(),
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
            bx: TreeBox::default(),
            child1: NULL,
            child2: NULL,
            user: NULL,
            category: 0,
        };
        let link = Link {
            parent: NULL,
            height: 0,
            enlarged: false,
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            self.links[i as usize] = link;
            i
        } else {
            self.nodes.push(node);
            self.links.push(link);
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
        let n = &mut self.nodes[leaf as usize];
        n.bx = TreeBox::around(&aabb);
        n.user = user;
        n.category = category;
        self.dirty += 1;
        self.new_leaves += 1;
        self.insert_leaf(leaf);
        leaf
    }

    /// Removes a leaf.
    pub fn destroy_proxy(&mut self, proxy: u32) {
        self.remove_leaf(proxy);
        self.links[proxy as usize].height = -1;
        self.free.push(proxy);
    }

    /// Replaces a leaf's box.
    pub fn move_proxy(&mut self, proxy: u32, aabb: Aabb) {
        self.remove_leaf(proxy);
        self.nodes[proxy as usize].bx = TreeBox::around(&aabb);
        self.insert_leaf(proxy);
    }

    /// Gives a leaf a new box that contains its old one's contents, growing
    /// its ancestors as needed without restructuring; call
    /// [`DynamicTree::rebuild`] once after a batch of these.
    pub fn enlarge_proxy(&mut self, proxy: u32, aabb: Aabb) {
        let bx = TreeBox::around(&aabb);
        self.nodes[proxy as usize].bx = bx;
        let leaf = &mut self.links[proxy as usize];
        leaf.enlarged = true;
        self.dirty += 1;
        let mut i = leaf.parent;
        // Grow the ancestors that do not contain the new box yet...
        while i != NULL {
            let at = i as usize;
            let l = &mut self.links[at];
            l.enlarged = true;
            i = l.parent;
            let n = &mut self.nodes[at];
            if n.bx.contains(&bx) {
                break;
            }
            n.bx = n.bx.union(&bx);
        }
        // ...and mark the rest of the path up to the root for the rebuild,
        // stopping at the first marked node: every ancestor of a marked
        // node is marked (inserts and rotations keep that true).
        while i != NULL {
            let l = &mut self.links[i as usize];
            if l.enlarged {
                break;
            }
            l.enlarged = true;
            i = l.parent;
        }
    }

    /// Whether leaves were created or enlarged since the last rebuild.
    pub fn needs_rebuild(&self) -> bool {
        self.dirty > 0
    }

    /// Rebuilds the enlarged internal nodes (every internal node after
    /// many leaves were created) top-down: each new node splits its pieces —
    /// leaves and kept subtrees — at the middle of their centres' bounds
    /// along the longer axis (Box2D v3's split: one pass per level, where a
    /// median needs a selection). Leaf indices are kept.
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
            let l = &mut self.links[i as usize];
            let enlarged = core::mem::replace(&mut l.enlarged, false);
            if n.is_leaf() || !(full || enlarged) {
                let (cx, cy) = n.bx.centre2();
                leaves.push(LeafKey { cx, cy, leaf: i });
            } else {
                l.height = -1;
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
                let mid = if x1 - x0 >= y1 - y0 {
                    split_at_middle(part, |k| k.cx, x0 + (x1 - x0) / 2)
                } else {
                    split_at_middle(part, |k| k.cy, y0 + (y1 - y0) / 2)
                };
                let node = self.alloc();
                created.push(node);
                tasks.push(((start + mid) as u32, end as u32, node, true));
                tasks.push((start as u32, (start + mid) as u32, node, false));
                node
            };
            self.links[node as usize].parent = up;
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
            let (c1, c2) = (n.child1 as usize, n.child2 as usize);
            let (n1, n2) = (self.nodes[c1], self.nodes[c2]);
            let m = &mut self.nodes[node as usize];
            m.bx = n1.bx.union(&n2.bx);
            m.category = n1.category | n2.category;
            self.links[node as usize].height = 1 + self.links[c1].height.max(self.links[c2].height);
        }
        self.tasks = tasks;
        self.created = created;
        root
    }

    /// Calls `f(user)` for every leaf whose box overlaps `aabb` (and maybe
    /// for leaves up to 2⁻¹⁶ m from it: see [`TreeBox`]).
    #[inline]
    pub fn query(&mut self, aabb: &Aabb, f: impl FnMut(u32)) {
        self.query_masked(aabb, u32::MAX, f);
    }

    /// Calls `f(user)` for every leaf whose box overlaps `aabb` (and maybe
    /// for leaves up to 2⁻¹⁶ m from it: see [`TreeBox`]) and whose category
    /// shares a bit with `mask`.
    #[inline]
    pub fn query_masked(&mut self, aabb: &Aabb, mask: u32, f: impl FnMut(u32)) {
        let mut stack = core::mem::take(&mut self.stack);
        self.query_masked_in(&mut stack, aabb, mask, f);
        self.stack = stack;
    }

    /// [`DynamicTree::query_masked`] on a shared tree, with `stack` as its
    /// scratch (one per thread querying).
    #[inline]
    pub fn query_masked_in(
        &self,
        stack: &mut Vec<u32>,
        aabb: &Aabb,
        mask: u32,
        mut f: impl FnMut(u32),
    ) {
        if self.root == NULL {
            return;
        }
        let probe = TreeBox::around(aabb).probe();
        stack.clear();
        stack.push(self.root);
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if n.category & mask == 0 || !n.bx.overlaps(&probe) {
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

    /// Like [`DynamicTree::query`], for a shared tree (with its own stack,
    /// on the call stack: see [`QueryStack`]).
    pub fn query_shared(&self, aabb: &Aabb, mut f: impl FnMut(u32)) {
        if self.root == NULL {
            return;
        }
        let probe = TreeBox::around(aabb).probe();
        let mut stack = QueryStack::new(self.root);
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if !n.bx.overlaps(&probe) {
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
    /// from it along the segment's normal (exact 128-bit test on the
    /// tree's boxes, which hold the leaves' boxes).
    pub fn query_ray(&self, p1: Vec2, p2: Vec2, mut f: impl FnMut(u32)) {
        if self.root == NULL {
            return;
        }
        let seg_box = TreeBox::around(&Aabb::new(p1.min(p2), p1.max(p2))).probe();
        let d = p2 - p1;
        // Normal of the segment (not normalised: only the sign matters).
        let (vx, vy) = (-i128::from(d.y.to_bits()), i128::from(d.x.to_bits()));
        let (px, py) = (i128::from(p1.x.to_bits()), i128::from(p1.y.to_bits()));
        let mut stack = QueryStack::new(self.root);
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if !n.bx.overlaps(&seg_box) {
                continue;
            }
            // Separating axis |v · (c − p1)| > |v|·h, with the box centre c
            // and half-extents h, doubled to stay in integers (Q32.32 bits).
            let ((lx, ly), (ux, uy)) = (n.bx.lower(), n.bx.upper());
            let cx = raw(lx) + raw(ux) - 2 * px;
            let cy = raw(ly) + raw(uy) - 2 * py;
            let hx = raw(ux) - raw(lx);
            let hy = raw(uy) - raw(ly);
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
        self.links[leaf as usize].enlarged = false;
        if self.root == NULL {
            self.root = leaf;
            self.links[leaf as usize].parent = NULL;
            return;
        }
        // Find the best sibling by the perimeter heuristic.
        let leaf_box = self.nodes[leaf as usize].bx;
        let mut index = self.root;
        while !self.nodes[index as usize].is_leaf() {
            let n = self.nodes[index as usize];
            let area = n.bx.perimeter();
            let combined = n.bx.union(&leaf_box).perimeter();
            let cost = 2 * combined;
            let inheritance = 2 * (combined - area);
            let child_cost = |c: u32| -> i64 {
                let cn = &self.nodes[c as usize];
                let u = leaf_box.union(&cn.bx).perimeter();
                if cn.is_leaf() {
                    u + inheritance
                } else {
                    u - cn.bx.perimeter() + inheritance
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
        let old_parent = self.links[sibling as usize].parent;
        let new_parent = self.alloc();
        let sib = self.nodes[sibling as usize];
        let category = sib.category | self.nodes[leaf as usize].category;
        self.nodes[new_parent as usize] = Node {
            bx: leaf_box.union(&sib.bx),
            child1: sibling,
            child2: leaf,
            user: NULL,
            category,
        };
        // Keep "every ancestor of a marked node is marked": the old parent
        // is marked if the sibling is.
        let sib_link = self.links[sibling as usize];
        self.links[new_parent as usize] = Link {
            parent: old_parent,
            height: sib_link.height + 1,
            enlarged: sib_link.enlarged,
        };
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
        self.links[sibling as usize].parent = new_parent;
        self.links[leaf as usize].parent = new_parent;
        self.refit(new_parent);
    }

    fn remove_leaf(&mut self, leaf: u32) {
        if leaf == self.root {
            self.root = NULL;
            return;
        }
        let parent = self.links[leaf as usize].parent;
        let grand = self.links[parent as usize].parent;
        let p = self.nodes[parent as usize];
        let sibling = if p.child1 == leaf { p.child2 } else { p.child1 };
        self.links[parent as usize].height = -1;
        self.free.push(parent);
        self.links[sibling as usize].parent = grand;
        if grand != NULL {
            let g = &mut self.nodes[grand as usize];
            if g.child1 == parent {
                g.child1 = sibling;
            } else {
                g.child2 = sibling;
            }
            self.refit(grand);
        } else {
            self.root = sibling;
        }
    }

    /// Walks up from `index`, rebalancing and refitting boxes and heights.
    fn refit(&mut self, mut index: u32) {
        while index != NULL {
            index = self.balance(index);
            let at = index as usize;
            let n = self.nodes[at];
            let (c1, c2) = (n.child1 as usize, n.child2 as usize);
            let (n1, n2) = (self.nodes[c1], self.nodes[c2]);
            let node = &mut self.nodes[at];
            node.bx = n1.bx.union(&n2.bx);
            node.category = n1.category | n2.category;
            let height = 1 + self.links[c1].height.max(self.links[c2].height);
            let link = &mut self.links[at];
            link.height = height;
            index = link.parent;
        }
    }

    /// One AVL rotation if `a` is unbalanced; returns the subtree's new root.
    fn balance(&mut self, a: u32) -> u32 {
        let na = self.nodes[a as usize];
        if na.is_leaf() || self.links[a as usize].height < 2 {
            return a;
        }
        let (b, c) = (na.child1, na.child2);
        let balance = self.links[c as usize].height - self.links[b as usize].height;
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
        let (a, up, other) = (a as usize, up as usize, other as usize);
        let nu = self.nodes[up];
        let (f, g) = (nu.child1 as usize, nu.child2 as usize);
        // Swap a and up.
        let a_parent = self.links[a].parent;
        self.nodes[up].child1 = a as u32;
        self.links[up].parent = a_parent;
        self.links[a].parent = up as u32;
        if a_parent != NULL {
            let p = &mut self.nodes[a_parent as usize];
            if p.child1 == a as u32 {
                p.child1 = up as u32;
            } else {
                p.child2 = up as u32;
            }
        } else {
            self.root = up as u32;
        }
        // The taller grandchild stays under `up`; the other goes to `a`.
        let (keep, give) = if self.links[f].height > self.links[g].height {
            (f, g)
        } else {
            (g, f)
        };
        self.nodes[up].child2 = keep as u32;
        if up_is_child2 {
            self.nodes[a].child2 = give as u32;
        } else {
            self.nodes[a].child1 = give as u32;
        }
        self.links[give].parent = a as u32;
        // `a` moved under `up`: keep every ancestor of a marked node marked
        // (`up`'s new parent was `a`'s, marked if `a` is).
        self.links[up].enlarged |= self.links[a].enlarged;
        let (other_n, give_n, keep_n) = (self.nodes[other], self.nodes[give], self.nodes[keep]);
        let na = &mut self.nodes[a];
        na.bx = other_n.bx.union(&give_n.bx);
        na.category = other_n.category | give_n.category;
        let na = *na;
        let nu = &mut self.nodes[up];
        nu.bx = na.bx.union(&keep_n.bx);
        nu.category = na.category | keep_n.category;
        let a_height = 1 + self.links[other].height.max(self.links[give].height);
        self.links[a].height = a_height;
        self.links[up].height = 1 + a_height.max(self.links[keep].height);
        up as u32
    }

    /// Height of the tree (0 for a single leaf).
    pub fn height(&self) -> i32 {
        if self.root == NULL {
            0
        } else {
            self.links[self.root as usize].height
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fx;

    /// `prefetch` asks for each node's and link's start only: each must
    /// fit a line, and a node is the 32 bytes the layout is for.
    #[test]
    fn prefetch_covers_every_line() {
        let (size, align) = (core::mem::size_of::<Node>(), core::mem::align_of::<Node>());
        assert_eq!((size, align), (32, 32));
        assert!(
            crate::math::covers_lines(size, align, &[0]),
            "a node of {size} bytes"
        );
        let (size, align) = (core::mem::size_of::<Link>(), core::mem::align_of::<Link>());
        assert!(
            crate::math::covers_lines(size, align, &[0]),
            "a link of {size} bytes"
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

    /// Boxes at arbitrary Q32.32 coordinates (not on the tree's 2⁻¹⁶ m
    /// grid, either sign, some past the `i32` range of the tree's units):
    /// every leaf whose exact box overlaps the query is found, through
    /// inserts, enlargements, rebuilds and rotations, and a leaf found
    /// without overlapping lies within one tree unit of the query; a ray
    /// along a box's edge finds it.
    #[test]
    fn rounded_boxes_miss_nothing_and_add_only_neighbours() {
        fn next(rng: &mut u64) -> u64 {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            *rng
        }
        // Coordinates within ±2⁴ m, in raw bits (most not on the grid); a
        // far one is moved out to ±40 000 m, past what an i32 of tree units
        // holds (it saturates).
        fn coord(rng: &mut u64, far: bool) -> Scalar {
            let bits = (next(rng) as i64) >> 27;
            let far_off = if far { 40_000i64 << 32 } else { 0 };
            Scalar::from_bits(if bits < 0 {
                bits - far_off
            } else {
                bits + far_off
            })
        }
        let rng = &mut 0x2545_f491_4f6c_dd1du64;
        let unit = Scalar::from_bits(1 << DROP);
        let mut t = DynamicTree::new();
        let mut live: Vec<(u32, Aabb)> = Vec::new();
        for round in 0..30u32 {
            for k in 0..40u32 {
                let far = k % 8 == 0;
                let (x, y) = (coord(rng, far), coord(rng, far));
                let (w, h) = (coord(rng, false).abs(), coord(rng, false).abs());
                let b = Aabb::new(Vec2::new(x, y), Vec2::new(x + w, y + h));
                if k % 3 == 0 && !live.is_empty() {
                    let i = (k as usize * 7 + round as usize) % live.len();
                    let grown = live[i].1.union(&b);
                    t.enlarge_proxy(live[i].0, grown);
                    live[i].1 = grown;
                } else if k % 5 == 1 && !live.is_empty() {
                    let i = (k as usize * 11 + round as usize) % live.len();
                    t.move_proxy(live[i].0, b);
                    live[i].1 = b;
                } else {
                    let p = t.create_proxy(b, 0);
                    t.nodes[p as usize].user = p;
                    live.push((p, b));
                }
            }
            if round % 2 == 0 {
                t.rebuild();
            }
            for _ in 0..20 {
                let far = next(rng).is_multiple_of(4);
                let (x, y) = (coord(rng, far), coord(rng, far));
                let (w, h) = (coord(rng, false).abs(), coord(rng, false).abs());
                let q = Aabb::new(Vec2::new(x, y), Vec2::new(x + w, y + h));
                let mut got = Vec::new();
                t.query(&q, |u| got.push(u));
                got.sort_unstable();
                let mut got_shared = Vec::new();
                t.query_shared(&q, |u| got_shared.push(u));
                got_shared.sort_unstable();
                assert_eq!(got, got_shared);
                for (p, b) in &live {
                    let found = got.binary_search(p).is_ok();
                    if b.overlaps(&q) {
                        assert!(found, "round {round}: leaf {p} {b:?} missed by {q:?}");
                    } else if found {
                        let near = q.expand(unit);
                        let saturated = !b.within_world() || !q.within_world();
                        assert!(
                            saturated || b.overlaps(&near),
                            "round {round}: leaf {p} {b:?} is far from {q:?}"
                        );
                    }
                }
            }
        }
        // Rays along a box's own edges (as exact as a ray can be) still
        // find it: the tree's boxes hold the exact ones.
        for (p, b) in live.iter().filter(|(_, b)| b.within_world()).take(200) {
            let above = b.upper.y + Scalar::ONE;
            let below = b.lower.y - Scalar::ONE;
            for x in [b.lower.x, b.upper.x] {
                let mut got = Vec::new();
                t.query_ray(Vec2::new(x, above), Vec2::new(x, below), |u| got.push(u));
                assert!(got.contains(p), "a ray down x = {x:?} misses {b:?}");
            }
            let right = b.upper.x + Scalar::ONE;
            for y in [b.lower.y, b.upper.y] {
                let mut got = Vec::new();
                t.query_ray(Vec2::new(right, y), Vec2::new(b.lower.x, y), |u| {
                    got.push(u)
                });
                assert!(got.contains(p), "a ray along y = {y:?} misses {b:?}");
            }
        }
        assert!(live.len() > 500);
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
        for (i, n) in t.links.iter().enumerate() {
            if n.height < 0 || !n.enlarged || n.parent == NULL {
                continue;
            }
            assert!(
                t.links[n.parent as usize].enlarged,
                "node {i} marked under an unmarked parent"
            );
        }
    }

    #[test]
    fn marks_stay_closed_under_inserts_removals_and_moves_between_rebuilds() {
        let mut t = DynamicTree::new();
        let mut live: Vec<(u32, Aabb)> = Vec::new();
        let mut rng = crate::math::lcg(12345);
        let mut next = || (rng() >> 33) as i32;
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
                t.links.iter().all(|n| n.height < 0 || !n.enlarged),
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
            // A balanced tree of 300 leaves is 9 high; the middle split
            // (Box2D's) trades some balance for a cheaper rebuild.
            assert!(t.height() <= 2 * 9, "height {}", t.height());
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

    /// The middle split's worst case: centres spaced geometrically, so that
    /// each split peels off one piece. Every split at least halves the
    /// spread of centres along the longer axis (2³³ units at most) or, when
    /// all centres are equal, halves the pieces: the height stays bounded
    /// whatever a scene file holds, and queries stay exact.
    #[test]
    fn geometric_layouts_keep_the_rebuilt_tree_bounded_and_exact() {
        let mut t = DynamicTree::new();
        let mut boxes = Vec::new();
        // Centres at ±2^k units (2^-16 m) for k up to 30 on both axes, plus
        // a pile of identical boxes at the origin.
        let unit = |k: u32| Scalar::from_bits(1i64 << (16 + k));
        let mut user = 0u32;
        for k in 0..31u32 {
            for (sx, sy) in [(1, 1), (-1, 1), (1, -1), (-1, -1)] {
                let c = Vec2::new(unit(k) * fx(sx), unit((k * 7) % 31) * fx(sy));
                let b = Aabb::new(
                    c,
                    c + Vec2::new(Scalar::from_bits(1 << 16), Scalar::from_bits(1 << 16)),
                );
                boxes.push((t.create_proxy(b, user), b));
                user += 1;
            }
        }
        for _ in 0..64 {
            let b = Aabb::new(Vec2::from_ints(0, 0), Vec2::from_ints(1, 1));
            boxes.push((t.create_proxy(b, user), b));
            user += 1;
        }
        t.rebuild();
        let n = boxes.len() as u32; // 188
        let bound = 2 * 34 + (32 - (n - 1).leading_zeros()) as i32;
        assert!(t.height() <= bound, "height {} > {bound}", t.height());
        for q in [
            Aabb::new(Vec2::from_ints(-1, -1), Vec2::from_ints(1, 1)),
            Aabb::new(Vec2::from_ints(0, 0), Vec2::from_ints(20_000, 20_000)),
            Aabb::new(Vec2::from_ints(-20_000, -3), Vec2::from_ints(-2, 3)),
        ] {
            let mut got = Vec::new();
            t.query(&q, |u| got.push(u));
            got.sort();
            let want: Vec<u32> = (0..n)
                .filter(|&i| boxes[i as usize].1.overlaps(&q))
                .collect();
            assert_eq!(got, want);
        }
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
        assert!(t.links.iter().all(|n| !n.enlarged || n.height < 0));
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

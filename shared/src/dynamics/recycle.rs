//! Contact recycling without history: manifolds computed at a reference
//! relative pose that is a function of the current poses, and carried to
//! the current poses by the bodies' motion.
//!
//! Box2D v3 skips the narrow phase for a contact whose relative pose has
//! moved less than a tolerance since its manifold was computed, and carries
//! the old anchors with the bodies instead ("contact recycling"). That
//! manifold depends on when it was computed: history, which every snapshot
//! would have to carry (a pose and a manifold per contact).
//!
//! Here the pose a manifold is computed at is the pair's *reference
//! relative pose*: B's pose in A's frame, its position rounded to a grid of
//! [`GRID`] and its rotation's smaller component rounded to steps of
//! [`TURN`] (the other from it, by square root). That is a function of the
//! current poses, so the manifold is too:
//!
//! - the *basis*: the narrow phase run in A's frame, B at the reference
//!   relative pose;
//! - if the basis has points, each is carried to the current poses
//!   rigidly with each body: on A by A's pose, on B by B's pose from where
//!   the reference put it. Each body keeps its own anchor (the manifold
//!   point's `shift`), the separation is the basis's plus the gap the two
//!   motions open along the normal (A's basis normal turned with A): Box2D's
//!   recycling formula;
//! - if it has none, the narrow phase at the current poses decides (a pair
//!   that approaches within one grid cell is not missed).
//!
//! Nothing of it is state: a decoded world recomputes it from the
//! positions. The basis is cached per contact with its reference key, and
//! recomputed only when the key changes. The key follows the *relative*
//! pose, as Box2D's tolerance does: bodies moving together (a pile sliding,
//! a tall column settling, a stack on a moving platform) keep their bases,
//! and between renewals the manifold follows the motion exactly as the
//! solver's substeps model it, so each step continues where the last one
//! left off. (An earlier version rounded each body's own pose: every body
//! crossing a cell renewed its contacts, so a 50-box column settling
//! through 87 cm of soft-contact compression re-collided its contacts
//! every few steps, swayed and fell, as in Box2D with its recycling
//! switched off, where Box2D's stands.) The error admitted is that of a
//! relative pose up to half a cell and about 0.2° away (Box2D's tolerance
//! is 0.05 m of relative motion).
//!
//! A pair moving so fast relative to each other that its reference pose
//! changes nearly every step ([`Moving`]: a cell or a rotation step a step)
//! gains nothing from a basis: its contact takes the narrow phase at the
//! current poses instead (`Contact::direct`, decided when it is collided
//! and kept as state, since the velocities it was judged from may change
//! before the next step), and its basis is dropped. In `spinner` that took
//! collide from 4.5 to 3.2 ms a step; piles and stacks keep recycling.
//!
//! Where a basis holds, the carry is the same arithmetic for every contact,
//! about forty products: a pass defers the carries of contacts that
//! touched (and so report no event while they still touch) and makes them
//! [`LANES`] at a time at its end (at each range's end, where the pass is
//! shared out in ranges: see [`Recycler`]), with `Wide`'s products, whose bits are
//! `Scalar`'s for everything a world within its bounds holds
//! (`deferred_carries_are_the_immediate_ones`). In `large_pyramid` (5050 boxes)
//! that took collide from 0.80 to 0.64 ms a step.

use super::body::Body;
use super::contact::Contact;
use crate::collision::{collide_into, Manifold};
use crate::geometry::ShapeGeometry;
use crate::math::{prefetch, Rot, Scalar, Transform, Vec2, Wide, LANES};
use std::sync::LazyLock;

/// Raw bits of the position grid, 2⁻⁵ m.
const GRID_SHIFT: u32 = 27;
/// Raw bits of the rotation step, 2⁻⁷.
const TURN_SHIFT: u32 = 25;
/// The position grid, 1/32 m.
const GRID: Scalar = Scalar::from_bits(1 << GRID_SHIFT);
/// The rotation step of the smaller component, 1/128 (about 0.45°).
#[cfg(test)]
const TURN: Scalar = Scalar::from_bits(1 << TURN_SHIFT);
/// Bits of each grid coordinate in a key (wraps 2·10⁶ m out, 200 times
/// the world bound).
const KEY_BITS: u32 = 27;
const KEY_MASK: u64 = (1 << KEY_BITS) - 1;

/// `v / 2ˢ` rounded to the nearest integer (halves up).
#[inline(always)]
fn round_shift(v: Scalar, s: u32) -> i64 {
    v.to_bits().wrapping_add(1 << (s - 1)) >> s
}

/// Shapes at least this thick (inscribed radius, rounding included) have
/// their contacts recycled: eight cells, 0.25 m. Between the reference and
/// the current relative pose B moves by up to about 3 cm (half a cell on
/// each axis, and the rotation step at the corners); that must never move
/// one shape's centre past the middle of the other (which would pick the
/// opposite face), and should stay a small part of either shape. Thinner
/// ones (segments, planks, small boxes and balls) always take the narrow
/// phase at their current pose.
const MIN_THICKNESS: Scalar = GRID.shl(3);

/// Whether a shape is at least [`MIN_THICKNESS`] thick.
fn thick(g: &ShapeGeometry) -> bool {
    let inner = match g {
        ShapeGeometry::Circle(c) => c.radius,
        ShapeGeometry::Capsule(c) => c.radius,
        ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_) => Scalar::ZERO,
        ShapeGeometry::Polygon(p) if p.count < 3 => p.radius,
        ShapeGeometry::Polygon(p) => {
            let n = usize::from(p.count);
            let faces = p.normals[..n].iter().zip(&p.vertices[..n]);
            faces.fold(Scalar::MAX, |m, (nv, v)| m.min(nv.dot(*v - p.centroid))) + p.radius
        }
    };
    inner >= MIN_THICKNESS
}

/// Whether contacts between shapes `a` and `b` are recycled: both thick.
pub(crate) fn recyclable(a: &ShapeGeometry, b: &ShapeGeometry) -> bool {
    thick(a) && thick(b)
}

/// Whether a pair's bodies move fast relative to each other: so fast that
/// their reference relative pose would change nearly every step, and a
/// recycled manifold would cost a renewal (the narrow phase at the
/// reference pose, then the carry) every step where the narrow phase at
/// the current poses costs less. Such a pair's manifold is taken directly
/// (`Contact::direct`); Box2D v3 recycles a manifold only while the
/// relative motion since it was computed stays under a tolerance, too.
///
/// Fast is a relative pose that moves a whole cell or a whole rotation
/// step in one step, estimated from the velocities (state, so the
/// decision is a function of the state): how fast B's origin moves in A's
/// frame (its velocity less A's at that point, A's turn included: bodies
/// turning together, a box carried round in a drum, do not move there), in
/// the L1 norm (at most √2 times the length), against [`GRID`] per step,
/// or the relative turn against the rotation step (2⁻⁷ rad) per step.
/// Where bodies tumble (`spinner`) nine in ten recycled manifolds renewed
/// their basis every step; piles and stacks, whose bodies move together
/// or rest, renew about one in 200 and stay recycled.
#[derive(Clone, Copy)]
pub(crate) struct Moving {
    /// A cell a step, in m/s.
    linear: Scalar,
    /// A rotation step a step, in rad/s.
    angular: Scalar,
}

impl Moving {
    /// The limits at `tick_rate` steps a second.
    pub(crate) fn new(tick_rate: u32) -> Moving {
        let rate = i64::from(tick_rate);
        Moving {
            linear: Scalar::from_bits((1 << GRID_SHIFT) * rate),
            angular: Scalar::from_bits((1 << TURN_SHIFT) * rate),
        }
    }

    /// Whether bodies `a` and `b` move fast relative to each other.
    #[inline]
    pub(crate) fn fast(&self, a: &Body, b: &Body) -> bool {
        // B's origin moves at v_b + ω_b × (p_b − c_b); A's body, at that
        // point, at v_a + ω_a × (p_b − c_a). The difference is the rate of
        // B's position in A's frame (turned by A's rotation).
        let p = b.transform.p;
        let u = (b.linear_velocity - a.linear_velocity)
            + Vec2::scalar_cross(b.angular_velocity, p - b.center)
            - Vec2::scalar_cross(a.angular_velocity, p - a.center);
        u.x.abs() + u.y.abs() >= self.linear
            || (b.angular_velocity - a.angular_velocity).abs() >= self.angular
    }
}

/// A pose rounded: its grid cell, and which rotation component is rounded
/// (the smaller), to which step, with the other's sign.
#[derive(Clone, Copy)]
struct Cell {
    x: i64,
    y: i64,
    small_s: bool,
    other_negative: bool,
    k: i64,
}

impl Cell {
    #[inline]
    fn of(xf: Transform) -> Cell {
        let (c, s) = (xf.q.c, xf.q.s);
        let small_s = s.abs() <= c.abs();
        let (rounded, other) = if small_s { (s, c) } else { (c, s) };
        Cell {
            x: round_shift(xf.p.x, GRID_SHIFT),
            y: round_shift(xf.p.y, GRID_SHIFT),
            small_s,
            other_negative: other < Scalar::ZERO,
            k: round_shift(rounded, TURN_SHIFT),
        }
    }

    /// The key: both coordinates and the rotation step (|k| ≤ 91 for a
    /// unit rotation, so eight bits hold it).
    #[inline]
    fn key(self) -> u64 {
        let r = (u64::from(self.small_s) << 9)
            | (u64::from(self.other_negative) << 8)
            | (self.k as u64 & 0xff);
        (self.x as u64 & KEY_MASK)
            | ((self.y as u64 & KEY_MASK) << KEY_BITS)
            | (r << (2 * KEY_BITS))
    }

    /// The reference pose. The rounded component is a multiple of 2⁻⁷
    /// below 0.72: its square is exact, and the other component is the
    /// root of the rest.
    fn pose(self) -> Transform {
        let p = Vec2::new(
            Scalar::from_bits(self.x << GRID_SHIFT),
            Scalar::from_bits(self.y << GRID_SHIFT),
        );
        let r = Scalar::from_bits(self.k << TURN_SHIFT);
        let o = other_component(self.k);
        let o = if self.other_negative { -o } else { o };
        let q = if self.small_s {
            Rot { c: o, s: r }
        } else {
            Rot { c: r, s: o }
        };
        Transform::new(p, q)
    }
}

/// `√(1 − r²)` for the rounded component `r = k · 2⁻⁷`: the other
/// component of a reference rotation.
#[inline]
fn root_of_step(k: i64) -> Scalar {
    let r = Scalar::from_bits(k << TURN_SHIFT);
    (Scalar::ONE - r * r).sqrt()
}

/// [`root_of_step`], looked up for the steps of unit rotations (|k| up to
/// 128; `r·r` is the same for `±k`). A square root is three dependent
/// divisions, and where bodies tumble nearly every contact renews its
/// basis every step (nine in ten in `spinner`), each at a new reference
/// rotation, besides each turning body's own reference.
#[inline]
fn other_component(k: i64) -> Scalar {
    static ROOTS: LazyLock<[Scalar; 129]> =
        LazyLock::new(|| core::array::from_fn(|k| root_of_step(k as i64)));
    match ROOTS.get(k.unsigned_abs() as usize) {
        Some(&o) => o,
        None => root_of_step(k),
    }
}

/// The reference key of a relative pose: its grid cell and rotation step.
#[cfg(test)]
fn reference_key(xf: Transform) -> u64 {
    Cell::of(xf).key()
}

/// The reference pose of a relative pose (a function of [`reference_key`]).
#[cfg(test)]
fn reference_pose(xf: Transform) -> Transform {
    Cell::of(xf).pose()
}

/// The narrow phase's result at a contact's reference relative pose, in
/// A's frame (its points also in B's), with the key of the pose it was
/// computed for. A cache, not
/// state: the world keeps these apart from the contacts, in key order, and
/// never encodes, hashes or compares them (see [`Bases`]).
#[derive(Clone, Copy, Debug, Default)]
struct Basis {
    pair: u64,
    key: u64,
    valid: bool,
    count: u8,
    /// In A's frame.
    normal: Vec2,
    /// The points' feature ids.
    ids: [u16; 2],
    points: [Vec2; 2],
    /// The same points in B's frame, where B's reference pose in A's frame
    /// puts them.
    points_b: [Vec2; 2],
    separations: [Scalar; 2],
}

/// The contacts' bases, in pair-key order like the contacts, brought up
/// to date by each pass over the contacts: [`Bases::entry`] finds a
/// contact's basis among the last pass's, where the pass keeps it for the
/// next. A pass works in place, in one list: it reads the last pass's
/// bases at `read` and writes its own at `write`, never after `read`. While
/// the contacts are the last pass's, in order, every basis stays where it
/// is (a contact the pass leaves alone costs a comparison of keys, not a
/// copy); a dropped contact's basis is skipped, and the bases after it move
/// down into the gap; a new contact takes a place in the gap. A new contact
/// with no gap before it opens one, moving the bases not yet read up the
/// list: [`Bases::GAP`] places the first time in a pass, twice as many as
/// the last time after that, so a pass that adds `n` contacts in one
/// stretch moves the rest of the list about log₂(n / GAP) times. (An
/// earlier version rebuilt the rest of the pass into a second list, which
/// in a busy room was nearly every pass, and doubled the memory the bases
/// touch in a tick.)
/// Kept out of the contacts so that snapshots (copies of the state) do not
/// carry it; emptied when a state is decoded, and on a restore kept only
/// for pairs of unchanged shapes.
#[derive(Debug, Default)]
struct Bases {
    /// This pass's bases before `write`, the last pass's from `read` on;
    /// between them, places free for new contacts.
    list: Vec<Basis>,
    /// The next of the last pass's bases to look at.
    read: usize,
    /// Where this pass's next basis goes (at most `read`).
    write: usize,
    /// The places the next gap this pass opens will have (0: [`Bases::GAP`]).
    gap: usize,
    /// Gaps opened so far (for the tests).
    #[cfg(test)]
    opened: usize,
}

impl Bases {
    /// The places of the first gap a pass opens.
    const GAP: usize = 16;

    /// Starts a pass over the contacts in key order.
    fn begin(&mut self) {
        self.settle();
        self.read = 0;
        self.write = 0;
        self.gap = Self::GAP;
    }

    /// Makes `list` the bases the last pass kept (and only those).
    /// Idempotent.
    fn settle(&mut self) {
        // The bases from `write` on are of contacts no longer there (or
        // places of gaps).
        self.list.truncate(self.write);
        self.read = self.list.len();
        self.write = self.list.len();
    }

    /// This pass's basis of the contact with `pair` (keys ascending from
    /// one call to the next), where the pass keeps it for the next one: the
    /// last pass's, or an empty one; `fresh` (a contact created since,
    /// perhaps in a slot pair a destroyed one had) forces the empty one.
    #[inline]
    fn entry(&mut self, pair: u64, fresh: bool) -> &mut Basis {
        let i = self.entry_index(pair, fresh);
        &mut self.list[i]
    }

    /// [`Bases::entry`]'s place in `list` (where it stays for the rest of
    /// the pass: later entries move only bases after it).
    #[inline]
    fn entry_index(&mut self, pair: u64, fresh: bool) -> usize {
        // Bases of contacts dropped since the last pass are passed over.
        while self.read < self.list.len() && self.list[self.read].pair < pair {
            self.read += 1;
        }
        let found = self.read < self.list.len() && self.list[self.read].pair == pair;
        if found {
            if self.write != self.read {
                self.list[self.write] = self.list[self.read];
            }
            self.read += 1;
        } else if self.write == self.read {
            // A new contact with no gap before the next basis: open one.
            let (len, gap) = (self.list.len(), self.gap.max(Self::GAP));
            self.list.resize(len + gap, Basis::default());
            self.list.copy_within(self.read..len, self.read + gap);
            self.read += gap;
            self.gap = gap * 2;
            #[cfg(test)]
            {
                self.opened += 1;
            }
        }
        self.write += 1;
        let i = self.write - 1;
        if fresh || !found {
            self.list[i] = Basis {
                pair,
                ..Basis::default()
            };
        }
        i
    }

    /// Makes `list` (bases in key order, of no pass under way) the last
    /// pass's.
    fn set_list(&mut self, list: Vec<Basis>) {
        self.list = list;
        self.read = self.list.len();
        self.write = self.list.len();
    }

    /// Keeps only the bases for which `keep` holds (of those the last pass
    /// kept, in key order).
    fn retain(&mut self, keep: impl FnMut(&Basis) -> bool) {
        self.settle();
        self.list.retain(keep);
        self.read = self.list.len();
        self.write = self.list.len();
    }

    /// Forgets every basis (the state was replaced).
    fn clear(&mut self) {
        self.list.clear();
        self.read = 0;
        self.write = 0;
        self.gap = Self::GAP;
    }
}

/// What [`Recycler`] needs of a contact (see `Contact::pair`).
#[derive(Clone, Copy)]
pub(crate) struct Pair {
    pub(crate) key: u64,
    pub(crate) body_a: u32,
    pub(crate) body_b: u32,
    pub(crate) recycled: bool,
}

/// A body's reference rotation (its rotation rounded as [`Cell`] rounds
/// one) and what takes its current orientation there, with its centre:
/// what fixes a recycled point's lever arm on the body.
#[derive(Clone, Copy, Debug)]
struct BodyRef {
    /// Identifies `rot` (the rotation part of the body's cell key).
    key: u64,
    /// The reference rotation.
    rot: Rot,
    /// `rot · q⁻¹` for the body's rotation `q`.
    back: Rot,
    /// The body's centre of mass.
    center: Vec2,
    /// Whether `key` and `rot` hold a body's (not yet on a new list).
    set: bool,
    /// The pass (`Recycler::pass`) whose poses `back` and `center` are of.
    pass: u64,
}

impl BodyRef {
    const UNSET: BodyRef = BodyRef {
        key: u64::MAX,
        rot: Rot::IDENTITY,
        back: Rot::IDENTITY,
        center: Vec2::ZERO,
        set: false,
        pass: 0,
    };

    /// The lever arm of world point `p` on the body, turned to the
    /// reference rotation.
    #[inline(always)]
    fn arm(&self, p: Vec2) -> Vec2 {
        self.back.rotate(p - self.center)
    }

    /// Brings the reference up to body `b`'s pose (its reference rotation
    /// is recomputed only when the rotation's key changed).
    #[inline]
    fn update(&mut self, b: &Body) {
        let q = b.transform.q;
        let cell = Cell::of(Transform::new(Vec2::ZERO, q));
        let key = cell.key();
        if key != self.key || !self.set {
            self.key = key;
            self.rot = cell.pose().q;
            self.set = true;
        }
        // `rot · q⁻¹`: q is a unit rotation, so its inverse is (c, −s).
        self.back = self.rot.mul_rot(Rot { c: q.c, s: -q.s });
        self.center = b.center;
    }
}

/// What a pass over the contacts keeps: the bodies' reference rotations
/// and the contacts' bases. Scratch of the world.
///
/// Both are kept in [`Part`]s, each with the bases of a stretch of pair
/// keys: one part for a pass on one thread, one per thread for a pass
/// shared out in ranges of the contact list ([`Recycler::begin_split`]),
/// each range walking its own part. A basis is a function of its pair's
/// geometry and relative pose, and each part holds exactly the bases of its
/// keys; a reference is a function of its body's pose, and each part keeps
/// its own (a body with contacts in two ranges has one in each part): how
/// the list is cut changes no bit. A part's references are written and read
/// by the thread that walks it (on two threads, the same one every pass:
/// the first part on the calling thread, the second on the one worker).
/// References made by one thread and read by another, as a first version
/// did, were lines moved between the cores: in `large_pyramid` that cost
/// more than the second thread saved. At most eight parts (`MAX_RANGES`
/// in `collide.rs`), each with about 72 bytes a body.
#[derive(Debug, Default)]
pub(crate) struct Recycler {
    /// The parts, in ascending keys (at least one after
    /// [`Recycler::begin`]).
    parts: Vec<Part>,
    /// Counts the passes (2⁶⁴ of them: it never wraps).
    pass: u64,
}

/// The bases of the contacts whose pair keys are from `from` up to the
/// next part's, the references of their bodies, and the carries a pass
/// over them deferred. Aligned to two lines, so that two ranges' walks
/// never write one line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Part {
    /// The first pair key of the part (0 for the first part).
    from: u64,
    /// Per body, its reference as of the pass that last needed it: a pass
    /// brings up to date only the bodies of the contacts it collides, so a
    /// world whose bodies mostly sleep does not pay for them every step.
    refs: Vec<BodyRef>,
    /// This pass (`Recycler::pass`).
    pass: u64,
    bases: Bases,
    /// This pass's deferred carries (see [`Part::carry_deferred`]).
    carries: Vec<Carry>,
    /// Carries deferred so far (for the tests).
    #[cfg(test)]
    pub(crate) deferred: u64,
}

/// A recycled manifold whose basis held, to be carried to the current
/// poses after the pass: the contact's place in the range of the list the
/// pass walked, its basis's place in the part's bases, its bodies.
#[derive(Clone, Copy, Debug)]
struct Carry {
    contact: u32,
    basis: u32,
    body_a: u32,
    body_b: u32,
}

impl Recycler {
    /// Starts a pass over the contacts, in key order, at the poses of
    /// `bodies` (each body's reference is brought up to its pose when a
    /// contact of it is first collided in the pass), on one thread: the
    /// bases in one part (the first part's references kept).
    pub(crate) fn begin(&mut self, bodies: &[Body]) {
        self.pass += 1;
        if self.parts.len() != 1 {
            let list = self.take_list();
            self.parts.truncate(1);
            if self.parts.is_empty() {
                self.parts.push(Part::default());
            }
            self.parts[0].from = 0;
            self.parts[0].bases.set_list(list);
        }
        self.parts[0].begin(bodies.len(), self.pass);
    }

    /// Starts a pass over `contacts` (the list, in key order; at least
    /// `n`) shared out in `n` ranges of it, one part each; returns where
    /// each range begins in the list. The parts keep their cuts from pass
    /// to pass while their ranges stay within half and twice an even share
    /// (moving bases between parts copies them); otherwise the list is cut
    /// again into even ranges.
    pub(crate) fn begin_split(
        &mut self,
        bodies: &[Body],
        contacts: &[Contact],
        n: usize,
    ) -> Vec<usize> {
        self.pass += 1;
        let total = contacts.len();
        debug_assert!(n >= 1 && total >= n, "{total} contacts in {n} ranges");
        let n = n.clamp(1, total.max(1));
        let starts = |parts: &[Part]| -> Vec<usize> {
            parts
                .iter()
                .map(|p| contacts.partition_point(|c| c.key() < p.from))
                .collect()
        };
        let even = total / n;
        let fits = |s: &[usize]| {
            s.len() == n
                && (0..n).all(|i| {
                    let len = s.get(i + 1).copied().unwrap_or(total) - s[i];
                    len >= even / 2 && len <= 2 * even + 1
                })
        };
        let mut s = starts(&self.parts);
        if !fits(&s) {
            let mut list = self.take_list();
            self.parts.resize_with(n, Part::default);
            for i in (1..n).rev() {
                let from = contacts[total * i / n].key();
                self.parts[i].from = from;
                let at = list.partition_point(|b| b.pair < from);
                self.parts[i].bases.set_list(list.split_off(at));
            }
            self.parts[0].from = 0;
            self.parts[0].bases.set_list(list);
            s = starts(&self.parts);
        }
        for p in &mut self.parts {
            p.begin(bodies.len(), self.pass);
        }
        s
    }

    /// Every part's bases in one list (each part's pass settled), leaving
    /// the parts without bases.
    fn take_list(&mut self) -> Vec<Basis> {
        let mut list = Vec::new();
        for p in &mut self.parts {
            p.bases.settle();
            let mut more = core::mem::take(&mut p.bases.list);
            if list.is_empty() {
                list = more;
            } else {
                list.append(&mut more);
            }
            p.bases.settle();
        }
        list
    }

    /// Whether the last pass was shared out in ranges (the parts are cut).
    pub(crate) fn is_split(&self) -> bool {
        self.parts.len() > 1
    }

    /// The one part of a pass on one thread.
    pub(crate) fn single(&mut self) -> &mut Part {
        debug_assert_eq!(self.parts.len(), 1, "a pass on one thread has one part");
        &mut self.parts[0]
    }

    /// The parts of a pass shared out in ranges, one a range.
    pub(crate) fn split(&mut self) -> &mut [Part] {
        &mut self.parts
    }

    /// Asks the CPU to start loading the caches (see
    /// [`World::prefetch_state`](crate::dynamics::world::World::prefetch_state);
    /// the places asked for cover every line, `prefetch_covers_every_line`).
    pub(crate) fn prefetch(&self) {
        for p in &self.parts {
            for r in &p.refs {
                prefetch(&r.key);
                prefetch(&r.pass);
                prefetch(&r.set);
            }
            for b in &p.bases.list {
                prefetch(&b.points);
                prefetch(&b.normal);
                prefetch(&b.ids);
            }
        }
    }

    /// Forgets every basis (the state was replaced: a shape slot may hold
    /// another shape now).
    pub(crate) fn forget(&mut self) {
        for p in &mut self.parts {
            p.bases.clear();
        }
    }

    /// After a restore (`contacts`: the restored state's, in key order),
    /// keeps the bases that still hold: those of a restored contact whose
    /// two shapes `same` says are unchanged (a basis is a function of its
    /// pair's geometry and reference pose) and whose manifold was made from
    /// it (recycled, not taken directly, with the same point count and
    /// feature ids: a restored manifold may be of another reference pose's
    /// basis, or the narrow phase's at its poses, and a pass reuses a basis
    /// without looking at the manifold's ids).
    pub(crate) fn retain_restored(&mut self, contacts: &[Contact], same: impl Fn(usize) -> bool) {
        let mut next = contacts.iter().peekable();
        for p in &mut self.parts {
            p.bases.retain(|b| {
                while next.next_if(|c| c.key() < b.pair).is_some() {}
                let Some(c) = next.peek() else {
                    return false;
                };
                let m = &c.manifold;
                c.key() == b.pair
                    && !c.direct
                    && same((b.pair >> 32) as usize)
                    && same(b.pair as u32 as usize)
                    && m.count == b.count
                    && m.points().iter().zip(b.ids).all(|(p, id)| p.id == id)
            });
        }
    }

    /// Carries deferred so far, over every part (for the tests).
    #[cfg(test)]
    pub(crate) fn deferred(&self) -> u64 {
        self.parts.iter().map(|p| p.deferred).sum()
    }
}

impl Part {
    /// Starts pass `pass` over the part's contacts, among `bodies` bodies.
    fn begin(&mut self, bodies: usize, pass: u64) {
        self.refs.resize(bodies, BodyRef::UNSET);
        self.pass = pass;
        self.bases.begin();
        debug_assert!(self.carries.is_empty(), "a pass's carries were not made");
        self.carries.clear();
    }

    /// Brings body `i`'s reference up to this pass's poses (`b`: the body,
    /// whose pose does not change during a pass).
    #[inline]
    fn update_ref(&mut self, i: u32, b: &Body) {
        let r = &mut self.refs[i as usize];
        if r.pass != self.pass {
            r.update(b);
            r.pass = self.pass;
        }
    }

    /// Keeps the basis of a contact this pass leaves alone.
    #[inline]
    pub(crate) fn keep_idle(&mut self, c: Pair) {
        if c.recycled {
            self.bases.entry(c.key, false);
        }
    }

    /// The manifold of contact `c` (`fresh`: made since the last pass)
    /// between geometries `ga`, `gb` of bodies `ba`, `bb` at their poses,
    /// into `m` (the contact's own: written in place): recycled, or the
    /// narrow phase's. Returns whether the feature ids may have changed
    /// (the caller then carries the old impulses over by id).
    ///
    /// With `defer` (the contact's place in the range of the list the pass
    /// walks, given for a contact that touched and so reports no event if
    /// it still does), a manifold whose basis holds is carried later, with
    /// others, by [`Part::carry_deferred`]: until then only its point
    /// count and ids are this pass's.
    #[inline]
    pub(crate) fn manifold(
        &mut self,
        c: Pair,
        fresh: bool,
        (ga, ba): (&ShapeGeometry, &Body),
        (gb, bb): (&ShapeGeometry, &Body),
        m: &mut Manifold,
        defer: Option<u32>,
    ) -> bool {
        let (xa, xb) = (ba.transform, bb.transform);
        if !c.recycled {
            collide_into(ga, xa, gb, xb, m);
            return true;
        }
        self.update_ref(c.body_a, ba);
        self.update_ref(c.body_b, bb);
        let bi = self.bases.entry_index(c.key, fresh);
        let basis = &mut self.bases.list[bi];
        let cell = Cell::of(xa.inv_mul(xb));
        if let Some(contact) = defer {
            if basis.valid && basis.key == cell.key() && basis.count > 0 {
                self.carries.push(Carry {
                    contact,
                    basis: bi as u32,
                    body_a: c.body_a,
                    body_b: c.body_b,
                });
                #[cfg(test)]
                {
                    self.deferred += 1;
                }
                return false;
            }
        }
        let (ra, rb) = (&self.refs[c.body_a as usize], &self.refs[c.body_b as usize]);
        update_manifold_at(cell, basis, (ga, xa, ra), (gb, xb, rb), m)
    }

    /// Carries the manifolds this pass deferred (see [`Part::manifold`])
    /// to the current poses of `bodies`, into `contacts` (the range of the
    /// list the pass walked, not yet compacted): the formulas of
    /// `update_manifold` for a basis that holds, product for product,
    /// [`LANES`] contacts at once.
    pub(crate) fn carry_deferred(&mut self, contacts: &mut [Contact], bodies: &[Body]) {
        for chunk in self.carries.chunks(LANES) {
            carry_lanes(chunk, &self.bases.list, &self.refs, contacts, bodies);
        }
        self.carries.clear();
    }
}

/// The manifold of a pair of thick shapes ([`recyclable`]) at the
/// current poses, as the module describes: written into `m`, whose points
/// keep their ids and impulses when the basis is unchanged. Returns
/// whether the feature ids may have changed (the caller then carries the
/// old impulses over by id).
#[inline]
#[cfg(test)]
fn update_manifold(
    basis: &mut Basis,
    (ga, xa, ra): (&ShapeGeometry, Transform, &BodyRef),
    (gb, xb, rb): (&ShapeGeometry, Transform, &BodyRef),
    m: &mut Manifold,
) -> bool {
    let cell = Cell::of(xa.inv_mul(xb));
    update_manifold_at(cell, basis, (ga, xa, ra), (gb, xb, rb), m)
}

/// [`update_manifold`] with the pair's relative pose already rounded
/// (`cell`: B's pose in A's frame, `Cell::of(xa.inv_mul(xb))`).
#[inline]
fn update_manifold_at(
    cell: Cell,
    basis: &mut Basis,
    (ga, xa, ra): (&ShapeGeometry, Transform, &BodyRef),
    (gb, xb, rb): (&ShapeGeometry, Transform, &BodyRef),
    m: &mut Manifold,
) -> bool {
    let mut renewed = false;
    let key = cell.key();
    if !(basis.valid && basis.key == key) {
        let pose = cell.pose();
        collide_into(ga, Transform::IDENTITY, gb, pose, m);
        *basis = Basis {
            pair: basis.pair,
            key,
            valid: true,
            count: m.count,
            normal: m.normal,
            ids: [m.points[0].id, m.points[1].id],
            points: [m.points[0].point, m.points[1].point],
            points_b: core::array::from_fn(|i| {
                if i < usize::from(m.count) {
                    pose.inv_apply(m.points[i].point)
                } else {
                    Vec2::ZERO
                }
            }),
            separations: [m.points[0].separation, m.points[1].separation],
        };
        renewed = true;
    }
    if basis.count == 0 {
        collide_into(ga, xa, gb, xb, m);
        return true;
    }
    // `m` holds the basis's ids and point count: they were set from it,
    // here or by an earlier pass (`renewed` false), and only this function
    // writes them (a restore drops the bases its manifolds were not made
    // from: `Recycler::retain_restored`).
    // The normal is A's basis normal at A's reference rotation, fixed like
    // the lever arms (Box2D's recycled normal stays as it was found).
    let normal = ra.rot.rotate(basis.normal);
    m.normal = normal;
    for i in 0..usize::from(basis.count) {
        // The point on A, and the same point on B: where the reference
        // pose put it in B's frame, at B's pose.
        let pa = xa.apply(basis.points[i]);
        let pb = xb.apply(basis.points_b[i]);
        let p = &mut m.points[i];
        p.separation = basis.separations[i] + normal.dot(pb - pa);
        // The lever arms: each body's own point, turned back to the body's
        // reference rotation. The solver keeps a contact's lever arms fixed
        // through a step and turns only the separation's anchors; Box2D's
        // recycled contacts keep them fixed from step to step as well, in
        // the orientation they were found at. Arms that turned with the
        // bodies every step (as a fresh narrow phase's do, in Box2D with
        // its recycling switched off too) fed each box's turn back into
        // its neighbours' torques: a 50-box column swayed and fell. Here
        // they are fixed at the reference rotation (steps of about 0.45°),
        // a function of the pose, so no history is needed.
        let (aa, ab) = (ra.center + ra.arm(pa), rb.center + rb.arm(pb));
        p.point = aa.lerp(ab, Scalar::HALF);
        // Each body keeps its own anchor: A's at `aa` (exactly), B's at
        // `ab` (to a rounding). A common point midway would move each
        // body's lever arm by half the pair's sliding.
        p.shift = p.point - aa;
    }
    renewed
}

/// [`update_manifold`]'s carry for a basis that holds, lane by lane, for
/// up to [`LANES`] deferred contacts (a lane past the end repeats the
/// first and is not written back; a point a lane's basis lacks is computed
/// from its zeros and not written back). Every product is `Wide`'s, whose bits
/// are `Scalar`'s for operands below 2³¹ in magnitude (everything here:
/// positions within the world's bounds, rotations, points on shapes).
#[inline(never)]
fn carry_lanes(
    chunk: &[Carry],
    bases: &[Basis],
    refs: &[BodyRef],
    contacts: &mut [Contact],
    bodies: &[Body],
) {
    let Some(&first) = chunk.first() else {
        return;
    };
    let jobs: [Carry; LANES] = core::array::from_fn(|i| chunk.get(i).copied().unwrap_or(first));
    let bs: [&Basis; LANES] = core::array::from_fn(|i| &bases[jobs[i].basis as usize]);
    let xas: [Transform; LANES] =
        core::array::from_fn(|i| bodies[jobs[i].body_a as usize].transform);
    let xbs: [Transform; LANES] =
        core::array::from_fn(|i| bodies[jobs[i].body_b as usize].transform);
    let ras: [&BodyRef; LANES] = core::array::from_fn(|i| &refs[jobs[i].body_a as usize]);
    let rbs: [&BodyRef; LANES] = core::array::from_fn(|i| &refs[jobs[i].body_b as usize]);
    fn w(f: impl Fn(usize) -> Scalar) -> Wide {
        Wide::from_fn(f)
    }
    // A rotation and a point of each lane: c, s, x, y.
    fn w4(f: impl Fn(usize) -> (Rot, Vec2)) -> [Wide; 4] {
        [
            w(|i| f(i).0.c),
            w(|i| f(i).0.s),
            w(|i| f(i).1.x),
            w(|i| f(i).1.y),
        ]
    }
    // The normal: A's basis normal at A's reference rotation.
    let [rc, rs, bnx, bny] = w4(|i| (ras[i].rot, bs[i].normal));
    let nx = rc * bnx - rs * bny;
    let ny = rs * bnx + rc * bny;
    let [qac, qas, pax0, pay0] = w4(|i| (xas[i].q, xas[i].p));
    let [qbc, qbs, pbx0, pby0] = w4(|i| (xbs[i].q, xbs[i].p));
    let [bac, bas, cax, cay] = w4(|i| (ras[i].back, ras[i].center));
    let [bbc, bbs, cbx, cby] = w4(|i| (rbs[i].back, rbs[i].center));
    let half = Wide::splat(Scalar::HALF);
    let nxs = nx.to_array();
    let nys = ny.to_array();
    let mut out = [[[Scalar::ZERO; LANES]; 5]; 2];
    // The second point only if a lane has one (balls touch at one).
    let points = if bs.iter().any(|b| b.count > 1) { 2 } else { 1 };
    for (k, out) in out.iter_mut().enumerate().take(points) {
        let (px, py) = (w(|i| bs[i].points[k].x), w(|i| bs[i].points[k].y));
        let (qx, qy) = (w(|i| bs[i].points_b[k].x), w(|i| bs[i].points_b[k].y));
        // The point on A, and the same point on B, at the current poses.
        let pax = (qac * px - qas * py) + pax0;
        let pay = (qas * px + qac * py) + pay0;
        let pbx = (qbc * qx - qbs * qy) + pbx0;
        let pby = (qbs * qx + qbc * qy) + pby0;
        let sep = w(|i| bs[i].separations[k]) + (nx * (pbx - pax) + ny * (pby - pay));
        // The lever arms at the reference rotations.
        let (dax, day) = (pax - cax, pay - cay);
        let aax = cax + (bac * dax - bas * day);
        let aay = cay + (bas * dax + bac * day);
        let (dbx, dby) = (pbx - cbx, pby - cby);
        let abx = cbx + (bbc * dbx - bbs * dby);
        let aby = cby + (bbs * dbx + bbc * dby);
        let ptx = aax + (abx - aax) * half;
        let pty = aay + (aby - aay) * half;
        *out = [
            sep.to_array(),
            ptx.to_array(),
            pty.to_array(),
            (ptx - aax).to_array(),
            (pty - aay).to_array(),
        ];
    }
    for (i, job) in chunk.iter().enumerate() {
        let count = usize::from(bases[job.basis as usize].count);
        let Some(c) = contacts.get_mut(job.contact as usize) else {
            debug_assert!(false, "a deferred carry names no contact");
            continue;
        };
        let m = &mut c.manifold;
        m.normal = Vec2::new(nxs[i], nys[i]);
        for (k, p) in m.points.iter_mut().enumerate().take(count) {
            let o = &out[k];
            p.separation = o[0][i];
            p.point = Vec2::new(o[1][i], o[2][i]);
            p.shift = Vec2::new(o[3][i], o[4][i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{fx, WORLD_BOUND};

    fn xf(x: Scalar, y: Scalar, angle: Scalar) -> Transform {
        Transform::new(Vec2::new(x, y), Rot::from_angle(angle))
    }

    /// A fixed LCG from `seed`: uniform raw values in [−r, r].
    fn uniform(seed: u64) -> impl FnMut(Scalar) -> Scalar {
        let mut lcg = crate::math::lcg(seed);
        move |r: Scalar| {
            let u = (lcg() >> 33) as i64 - (1 << 30);
            Scalar::from_bits(((i128::from(r.to_bits()) * i128::from(u)) >> 30) as i64)
        }
    }

    /// A body's reference at its current pose.
    fn reference(b: &Body) -> BodyRef {
        let mut r = BodyRef::UNSET;
        r.update(b);
        r
    }

    #[test]
    fn reference_pose_is_near_and_unit() {
        let mut a = Scalar::from_bits(-0x3_2437_0000); // about −3.14
        while a < fx(3) {
            for (x, y) in [(fx(0), fx(0)), (Scalar::ratio(7, 3), Scalar::ratio(-11, 5))] {
                let t = xf(x, y, a);
                let r = reference_pose(t);
                assert!((r.p.x - t.p.x).abs() <= GRID.shr(1));
                assert!((r.p.y - t.p.y).abs() <= GRID.shr(1));
                let dq = r.q.inv_mul(t.q);
                // Within half a step of the smaller component (and its effect on the other).
                assert!(dq.s.abs() <= TURN, "angle {a:?}: {dq:?}");
                let unit = r.q.c * r.q.c + r.q.s * r.q.s - Scalar::ONE;
                assert!(unit.abs() <= Scalar::from_bits(64), "{unit:?}");
                // A function of the key: nearby poses with the same key
                // have the same reference.
                let nudge = Scalar::from_bits(1 << 12);
                for u in [
                    Transform::new(t.p + Vec2::new(nudge, -nudge), t.q),
                    Transform::new(
                        t.p,
                        Rot {
                            c: t.q.c - nudge,
                            s: t.q.s + nudge,
                        },
                    ),
                ] {
                    if reference_key(u) == reference_key(t) {
                        assert_eq!(reference_pose(u), r, "angle {a:?}");
                    }
                }
            }
            a += Scalar::ratio(1, 97);
        }
    }

    /// The table of the other component holds the square roots it stands
    /// for, bit for bit, for either sign of the step.
    #[test]
    fn looked_up_roots_are_the_roots() {
        for k in -200..=200 {
            assert_eq!(other_component(k), root_of_step(k), "step {k}");
        }
        assert_eq!(other_component(0), Scalar::ONE);
    }

    /// What [`Moving`] calls fast at 60 steps a second: a relative motion
    /// of a cell a step (1.875 m/s), or of a rotation step a step (0.469
    /// rad/s), in A's frame: bodies moving or turning together are not,
    /// however fast.
    #[test]
    fn pairs_moving_a_cell_a_step_are_fast() {
        let m = Moving::new(60);
        let body = |x: i32, v: Vec2, w: Scalar| {
            let p = Vec2::new(fx(x), fx(2));
            Body {
                transform: Transform::new(p, Rot::IDENTITY),
                center: p,
                linear_velocity: v + Vec2::new(Scalar::ZERO, Scalar::ratio(-1, 3)),
                angular_velocity: w,
                ..Body::vacant()
            }
        };
        let (z, zv) = (Scalar::ZERO, Vec2::ZERO);
        let vx = |r: i64| Vec2::new(Scalar::ratio(r, 100), Scalar::ZERO);
        let rest = body(0, zv, z);
        assert!(!m.fast(&rest, &body(1, zv, z)));
        assert!(!m.fast(&rest, &body(1, vx(187), z)));
        assert!(m.fast(&rest, &body(1, vx(188), z)));
        assert!(m.fast(&body(1, vx(188), z), &rest));
        assert!(!m.fast(&rest, &body(1, zv, Scalar::ratio(46, 100))));
        assert!(m.fast(&rest, &body(1, zv, Scalar::ratio(-47, 100))));
        // Moving together.
        let v = Vec2::new(fx(30), fx(-20));
        assert!(!m.fast(&body(0, v, z), &body(1, v, z)));
        // A turning at 0.25 rad/s under B at rest: B moves 1 m/s in A's
        // frame four metres away, 2 m/s eight metres away; turning with A
        // (B's velocity A's turn at B's centre), it does not move there.
        let w = Scalar::ratio(1, 4);
        assert!(!m.fast(&body(0, zv, w), &body(4, zv, z)));
        assert!(m.fast(&body(0, zv, w), &body(8, zv, z)));
        let carried = Vec2::new(Scalar::ZERO, fx(2));
        assert!(!m.fast(&body(0, zv, w), &body(8, carried, w)));
        // B spinning on its own about a centre off its origin moves its
        // origin.
        let mut spun = body(1, zv, Scalar::ratio(2, 10));
        spun.center = spun.transform.p + Vec2::new(fx(10), Scalar::ZERO);
        assert!(m.fast(&rest, &spun));
        assert_eq!(Moving::new(120).linear, GRID * fx(120));
    }

    #[test]
    fn unturned_bodies_have_exact_references() {
        let t = xf(Scalar::ratio(1, 3), fx(5), Scalar::ZERO);
        let r = reference_pose(t);
        assert_eq!(r.q, Rot::IDENTITY);
        assert_eq!(r.p.y, fx(5));
        assert_eq!(r.p.x, Scalar::ratio(11, 32));
    }

    /// A box resting on a box, at many poses (offsets, small turns, and
    /// places on the grid): the recycled manifold is the narrow phase's at
    /// the current poses within what the reference poses admit.
    #[test]
    fn recycled_manifolds_stay_close_to_the_narrow_phase() {
        use crate::collision::collide;
        use crate::geometry::Polygon;
        let half = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        let wide = ShapeGeometry::Polygon(Polygon::make_box(fx(2), Scalar::HALF));
        let mut next = uniform(0x2545_f491_4f6c_dd1d);
        let (mut same, mut total) = (0, 0);
        for _ in 0..2000 {
            let base = Vec2::new(next(fx(50)), next(fx(50)));
            let a = xf(base.x, base.y, next(Scalar::ratio(1, 20)));
            // B on top: its bottom within a centimetre of A's top.
            let b = xf(
                base.x + next(Scalar::ratio(6, 10)),
                base.y + fx(1) + next(Scalar::ratio(1, 100)),
                next(Scalar::ratio(1, 20)),
            );
            for (ga, gb) in [(&half, &half), (&wide, &half)] {
                let direct = collide(ga, a, gb, b);
                let mut m = Manifold::EMPTY;
                let mut basis = Basis::default();
                let bodies = [a, b].map(|xf| Body {
                    transform: xf,
                    center: xf.p,
                    ..Body::vacant()
                });
                let refs = bodies.map(|b| reference(&b));
                update_manifold(&mut basis, (ga, a, &refs[0]), (gb, b, &refs[1]), &mut m);
                total += 1;
                let ids = |m: &Manifold| m.points().iter().map(|p| p.id).collect::<Vec<_>>();
                // The same features on the same reference face (ids alone
                // do not tell A's face from B's: both are near the slop's
                // tie, at the current poses and at the reference poses).
                let turn = (m.normal.cross(direct.normal)).abs();
                if ids(&m) != ids(&direct) || turn > Scalar::ratio(1, 100) {
                    continue;
                }
                same += 1;
                for (p, q) in m.points().iter().zip(direct.points()) {
                    let ds = (p.separation - q.separation).abs();
                    assert!(ds <= Scalar::milli(3), "separation off by {ds:?}");
                    let dp = p.point.distance(q.point);
                    assert!(dp <= Scalar::milli(50), "point off by {dp:?}");
                }
            }
        }
        // Only poses near a tie pick other features or the other face.
        assert!(
            same * 10 >= total * 8,
            "{same} of {total} with the same features"
        );
    }

    /// Carries deferred to the pass's end (`carry_lanes`, in chunks of
    /// every size up to two vectors and more) give the bits of carrying
    /// each at once (`update_manifold`): two-point manifolds of boxes on
    /// boxes and one-point ones of balls on boxes, anywhere within the
    /// world's bounds, bodies with centres off their origins, each pair
    /// moved a little since its basis was made.
    #[test]
    fn deferred_carries_are_the_immediate_ones() {
        use crate::dynamics::shape::Shape;
        use crate::geometry::{Circle, Polygon};
        let boxed = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        let ball = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap());
        let mut next = uniform(0x9e37_79b9_7f4a_7c15);
        let (mut points, mut carried) = ([0; 3], 0);
        for n in 1..=2 * LANES + 3 {
            let (mut bodies, mut contacts, mut bases, mut want) = (vec![], vec![], vec![], vec![]);
            while contacts.len() < n {
                let gb = if contacts.len() % 3 == 2 {
                    &ball
                } else {
                    &boxed
                };
                // Anywhere in the world, to its bounds.
                let reach = WORLD_BOUND - fx(10);
                let base = Vec2::new(next(reach), next(reach));
                let a = xf(base.x, base.y, next(Scalar::ratio(1, 20)));
                let b = xf(
                    base.x + next(Scalar::ratio(4, 10)),
                    base.y + fx(1) + next(Scalar::ratio(1, 100)),
                    next(Scalar::ratio(1, 20)),
                );
                // The same pair a moment later: each body a little moved.
                let nudge = |t: Transform, d: Scalar, turn: Scalar| {
                    Transform::new(t.p + Vec2::new(d, -d), t.q.mul_rot(Rot::from_angle(turn)))
                };
                let d = Scalar::ratio(1, 2000);
                let (a2, b2) = (
                    nudge(a, next(d), next(Scalar::ratio(1, 5000))),
                    nudge(b, next(d), next(Scalar::ratio(1, 5000))),
                );
                let body = |t: Transform, off: Vec2| Body {
                    transform: t,
                    center: t.apply(off),
                    ..Body::vacant()
                };
                let off = Vec2::new(next(Scalar::ratio(1, 10)), next(Scalar::ratio(1, 10)));
                let (ba, bb) = (body(a, off), body(b, -off));
                let mut m = Manifold::EMPTY;
                let mut basis = Basis::default();
                update_manifold(
                    &mut basis,
                    (&boxed, a, &reference(&ba)),
                    (gb, b, &reference(&bb)),
                    &mut m,
                );
                let (ba2, bb2) = (body(a2, off), body(b2, -off));
                let mut immediate = m;
                let renewed = update_manifold(
                    &mut basis.clone(),
                    (&boxed, a2, &reference(&ba2)),
                    (gb, b2, &reference(&bb2)),
                    &mut immediate,
                );
                if renewed || m.count == 0 {
                    continue;
                }
                points[usize::from(m.count)] += 1;
                let shape = |i: u32| Shape {
                    body: i,
                    ..Shape::vacant()
                };
                let i = bodies.len() as u32;
                let mut c = Contact::new((i, &shape(i), &boxed), (i + 1, &shape(i + 1), gb));
                c.manifold = m;
                contacts.push(c);
                bodies.extend([ba2, bb2]);
                bases.push(basis);
                want.push(immediate);
            }
            let refs: Vec<BodyRef> = bodies.iter().map(reference).collect();
            let carries: Vec<Carry> = (0..n as u32)
                .map(|j| Carry {
                    contact: j,
                    basis: j,
                    body_a: 2 * j,
                    body_b: 2 * j + 1,
                })
                .collect();
            for chunk in carries.chunks(LANES) {
                carry_lanes(chunk, &bases, &refs, &mut contacts, &bodies);
            }
            for (j, (c, w)) in contacts.iter().zip(&want).enumerate() {
                assert_eq!(c.manifold, *w, "{n} carries: carry {j}");
                carried += 1;
            }
        }
        assert!(points[1] > 20 && points[2] > 40, "points {points:?}");
        assert_eq!(carried, (1..=2 * LANES + 3).sum::<usize>());
    }

    /// A pile defers its carries (the lanes are used in a world, not only
    /// in the test above), and a world decoded from its snapshot, whose
    /// bases start empty (so its first pass carries each contact at once,
    /// after renewing its basis), steps to the same bits.
    #[test]
    fn a_pile_defers_its_carries_and_its_snapshot_steps_the_same() {
        use crate::dynamics::World;
        let mut w = crate::scene::builders::pyramid(10);
        for _ in 0..10 {
            w.step();
        }
        let before = w.scratch.recycler.deferred();
        w.step();
        let deferred = w.scratch.recycler.deferred() - before;
        assert!(deferred > 100, "{deferred} carries deferred in a step");
        let mut d = World::from_snapshot(&w.snapshot());
        for i in 0..30 {
            w.step();
            d.step();
            assert_eq!(w.state_hash(), d.state_hash(), "step {i} after decoding");
        }
    }

    #[test]
    fn only_thick_shapes_are_recycled() {
        use crate::geometry::{Capsule, Circle, Polygon, Segment};
        let circle = |r| {
            ShapeGeometry::Circle(Circle {
                center: Vec2::ZERO,
                radius: r,
            })
        };
        assert!(thick(&circle(MIN_THICKNESS)));
        assert!(!thick(&circle(MIN_THICKNESS - Scalar::EPSILON)));
        let seg = Segment {
            p1: Vec2::ZERO,
            p2: Vec2::from_ints(5, 0),
        };
        assert!(!thick(&ShapeGeometry::Segment(seg)));
        let cap = Capsule {
            c1: Vec2::ZERO,
            c2: Vec2::from_ints(1, 0),
            radius: fx(1),
        };
        assert!(thick(&ShapeGeometry::Capsule(cap)));
        // A box is as thick as its half width; a plank's thin side decides.
        let b = |hx, hy| ShapeGeometry::Polygon(Polygon::make_box(hx, hy));
        assert!(thick(&b(Scalar::HALF, Scalar::HALF)));
        assert!(thick(&b(fx(3), MIN_THICKNESS)));
        assert!(!thick(&b(fx(3), Scalar::ratio(1, 10))));
    }

    /// Passes over contact lists that keep, drop and add contacts at
    /// random, each contact collided or left alone: every basis a pass
    /// finds is the one the last pass kept for that pair (or an empty one
    /// for a new or fresh contact), whichever way the list was kept (in
    /// place, with gaps, or with gaps opened).
    #[test]
    fn bases_follow_the_contacts_through_drops_and_additions() {
        use std::collections::BTreeMap;
        let mut lcg = crate::math::lcg(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| (lcg() >> 33) % n;
        let mut bases = Bases::default();
        // Pair -> the payload (in `key`) its basis was last given.
        let mut model: BTreeMap<u64, u64> = BTreeMap::new();
        let mut pairs: Vec<u64> = (0..60).map(|i| i * 4).collect();
        for pass in 0..400u64 {
            // Some passes change nothing; others drop and add a few.
            if pass % 3 != 0 {
                // Now and then a burst of new contacts, which opens
                // several gaps in one pass.
                let burst = if pass % 17 == 5 { 40 } else { 0 };
                let (drops, adds) = (next(5), next(5) + burst);
                for _ in 0..drops {
                    if !pairs.is_empty() {
                        pairs.remove(next(pairs.len() as u64) as usize);
                    }
                }
                for _ in 0..adds {
                    let p = next(400);
                    if let Err(i) = pairs.binary_search(&p) {
                        pairs.insert(i, p);
                    }
                }
            }
            bases.begin();
            let mut kept = BTreeMap::new();
            for &p in &pairs {
                let last = model.get(&p).copied();
                if last.is_some() && next(3) == 0 {
                    bases.entry(p, false);
                    kept.insert(p, last.unwrap_or(0));
                    continue;
                }
                let fresh = next(10) == 0;
                let b = bases.entry(p, fresh);
                assert_eq!(b.pair, p, "pass {pass}");
                match last {
                    Some(payload) if !fresh => {
                        assert!(b.valid, "pass {pass}: pair {p} lost its basis");
                        assert_eq!(b.key, payload, "pass {pass}: pair {p}");
                    }
                    _ => assert!(!b.valid, "pass {pass}: pair {p} is new or fresh"),
                }
                let payload = pass * 1000 + p;
                b.valid = true;
                b.key = payload;
                kept.insert(p, payload);
            }
            model = kept;
            // What the pass kept is exactly its contacts' bases, in order.
            bases.settle();
            let list: Vec<(u64, u64)> = bases.list.iter().map(|b| (b.pair, b.key)).collect();
            let want: Vec<(u64, u64)> = model.iter().map(|(&p, &k)| (p, k)).collect();
            assert_eq!(list, want, "pass {pass}");
            // Now and then a restore that keeps every other pair.
            if pass % 50 == 49 {
                bases.retain(|b| b.pair % 8 == 0);
                model.retain(|p, _| p % 8 == 0);
            }
        }
    }

    /// A pass that adds many contacts in one stretch before the others
    /// (a crowd spawned into reused low slots) moves the rest of the list
    /// a few times, not once per 16 contacts, and keeps every basis.
    #[test]
    fn a_burst_of_new_contacts_opens_few_gaps() {
        let mut bases = Bases::default();
        let old: Vec<u64> = (0..1000).map(|i| 100_000 + i).collect();
        bases.begin();
        for &p in &old {
            let b = bases.entry(p, false);
            b.valid = true;
            b.key = p;
        }
        bases.begin();
        bases.opened = 0;
        for p in 0..10_000u64 {
            assert!(!bases.entry(p, false).valid);
        }
        for &p in &old {
            let b = bases.entry(p, false);
            assert!(b.valid && b.key == p, "pair {p} lost its basis");
        }
        // 16 + 32 + … ≥ 10,000 after 10 gaps.
        assert!(bases.opened <= 10, "{} gaps opened", bases.opened);
        assert!(bases.list.len() <= 2 * 11_000 + Bases::GAP);
        bases.settle();
        assert_eq!(bases.list.len(), 11_000);
    }

    #[test]
    fn prefetch_covers_every_line() {
        use crate::math::covers_lines;
        use core::mem::{align_of, offset_of, size_of};
        let basis = [
            offset_of!(Basis, points),
            offset_of!(Basis, normal),
            offset_of!(Basis, ids),
        ];
        assert!(
            covers_lines(size_of::<Basis>(), align_of::<Basis>(), &basis),
            "Basis: {} bytes, asked at {basis:?}",
            size_of::<Basis>()
        );
        let body = [
            offset_of!(BodyRef, key),
            offset_of!(BodyRef, pass),
            offset_of!(BodyRef, set),
        ];
        assert!(
            covers_lines(size_of::<BodyRef>(), align_of::<BodyRef>(), &body),
            "BodyRef: {} bytes, asked at {body:?}",
            size_of::<BodyRef>()
        );
    }

    /// A pass shared out in ranges: each part keeps exactly the bases of
    /// its stretch of keys; the cuts stay while the ranges fit, and when
    /// they no longer do (most contacts gone from one range) the list is
    /// cut again into even ranges, each basis moving to the part of its key;
    /// a pass on one thread takes them all back, in order.
    #[test]
    fn split_passes_keep_each_basis_in_the_part_of_its_key() {
        let mut w = crate::scene::builders::pyramid(40);
        w.step();
        let contacts = w.state.contacts.clone();
        let bodies = w.state.bodies.clone();
        let total = contacts.len();
        assert!(total > 2000, "{total} contacts");
        let mut r = Recycler::default();
        // One pass over `list`: every contact's basis kept (as a recycled
        // contact left alone keeps it).
        let pass = |r: &mut Recycler, list: &[Contact], n: usize| -> Vec<usize> {
            let starts = r.begin_split(&bodies, list, n);
            for (i, part) in r.split().iter_mut().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(list.len());
                for c in &list[starts[i]..end] {
                    part.keep_idle(Pair {
                        recycled: true,
                        ..c.pair()
                    });
                }
            }
            starts
        };
        let held = |r: &mut Recycler| -> Vec<Vec<u64>> {
            r.parts
                .iter_mut()
                .map(|p| {
                    p.bases.settle();
                    p.bases.list.iter().map(|b| b.pair).collect()
                })
                .collect()
        };
        let keys = |list: &[Contact]| -> Vec<u64> { list.iter().map(Contact::key).collect() };
        let first = pass(&mut r, &contacts, 3);
        assert_eq!(first, vec![0, total / 3, 2 * total / 3]);
        assert_eq!(held(&mut r).concat(), keys(&contacts));
        // Each basis marked, so that a basis found again tells itself
        // from one made anew (key 0).
        for p in &mut r.parts {
            for b in &mut p.bases.list {
                b.key = !b.pair;
            }
        }
        let marked = |r: &Recycler| {
            r.parts
                .iter()
                .flat_map(|p| &p.bases.list[..p.bases.write])
                .all(|b| b.key == !b.pair)
        };
        // The same list again: the same cuts, the same bases.
        assert_eq!(pass(&mut r, &contacts, 3), first);
        assert!(marked(&r));
        let parts = held(&mut r);
        for (i, bases) in parts.iter().enumerate() {
            let end = first.get(i + 1).copied().unwrap_or(total);
            assert_eq!(*bases, keys(&contacts[first[i]..end]), "part {i}");
        }
        // Only the last third's contacts (and a few of the first's): the
        // first range is nearly empty, so the list is cut again.
        let few: Vec<Contact> = contacts[..10]
            .iter()
            .chain(&contacts[2 * total / 3..])
            .cloned()
            .collect();
        let again = pass(&mut r, &few, 3);
        let m = few.len();
        assert_eq!(again, vec![0, m / 3, 2 * m / 3]);
        assert!(marked(&r), "a basis was lost in the cut");
        // Each part holds the bases of its keys, and only those (the
        // bases of contacts gone are dropped by the pass after).
        pass(&mut r, &few, 3);
        let parts = held(&mut r);
        for (i, bases) in parts.iter().enumerate() {
            let end = again.get(i + 1).copied().unwrap_or(m);
            assert_eq!(*bases, keys(&few[again[i]..end]), "part {i} after the cut");
        }
        // One thread: one part, every basis found where it is, in key order
        // (a pass that found none would open gaps for all of them).
        r.begin(&bodies);
        assert_eq!(r.parts.len(), 1);
        r.single().bases.opened = 0;
        for c in &few {
            let i = r.single().bases.entry_index(c.key(), false);
            assert!(r.single().bases.list[i].pair == c.key());
        }
        assert_eq!(r.single().bases.opened, 0, "every basis was found");
        assert_eq!(held(&mut r).concat(), keys(&few));
    }

    #[test]
    fn keys_tell_cells_and_steps_apart() {
        let base = xf(fx(1), fx(2), Scalar::ZERO);
        let k = reference_key(base);
        assert_eq!(
            k,
            reference_key(xf(fx(1) + GRID.shr(2), fx(2), Scalar::ZERO))
        );
        assert_ne!(k, reference_key(xf(fx(1) + GRID, fx(2), Scalar::ZERO)));
        assert_ne!(k, reference_key(xf(fx(1), fx(2) - GRID, Scalar::ZERO)));
        assert_ne!(k, reference_key(xf(fx(1), fx(2), TURN)));
        // A half turn has the same small component, another sign.
        let half = Transform::new(
            base.p,
            Rot {
                c: -Scalar::ONE,
                s: Scalar::ZERO,
            },
        );
        assert_ne!(k, reference_key(half));
        // Far out, the cells still differ (no wrap inside the world).
        assert_ne!(
            reference_key(xf(fx(-10_000), fx(0), Scalar::ZERO)),
            reference_key(xf(fx(10_000), fx(0), Scalar::ZERO))
        );
    }
}

//! Snapshots: a saved world state, restored bit for bit, and its canonical
//! and packed bytes, decoded from untrusted input with every index checked.

use super::canonical::CONFIG;
use crate::dynamics::{World, WorldState};
use crate::math::{Rot, Scalar, Vec2, WORLD_BOUND};

/// Largest snapshot accepted by [`Snapshot::from_bytes`]: 64 MiB.
pub const MAX_SNAPSHOT_BYTES: usize = 64 << 20;

/// A saved world state: `restore` + N steps equals N steps, bit for bit.
///
/// In memory it is a copy of the state that changes as the world steps
/// (bodies, shapes, contacts, joints, broad-phase trees), with shape geometry
/// and body settings shared copy-on-write with the world: about 40 µs to
/// save and restore a 1000-body world, fast enough for rollback every frame.
/// [`Snapshot::to_bytes`] gives the canonical binary form.
#[derive(Clone, Debug)]
pub struct Snapshot {
    state: WorldState,
}

/// Why snapshot bytes were refused.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The bytes do not decode (truncated, oversized, or malformed).
    #[error("snapshot does not decode: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// The packed form does not decode (see [`Snapshot::from_packed`]).
    #[error("packed snapshot does not decode: {0}")]
    Packed(#[from] super::packed::PackError),
    /// Bytes left over after the state.
    #[error("snapshot has {0} trailing bytes")]
    Trailing(usize),
    /// The decoded state is inconsistent.
    #[error("snapshot is inconsistent: {0}")]
    Invalid(&'static str),
}

impl World {
    /// Saves into an existing snapshot, reusing its allocations.
    pub fn snapshot_into(&self, into: &mut Snapshot) {
        into.state.clone_from(&self.state);
    }

    /// Saves the complete state.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            state: self.state.clone(),
        }
    }

    /// Replaces the state with a saved one, reusing this world's allocations.
    /// The last step's outputs (event buffers, [`World::broken_joints`])
    /// are cleared: they are not state.
    pub fn restore(&mut self, snapshot: &Snapshot) {
        // The recycler's bases of unchanged shapes stay (a rollback's first
        // step then recycles instead of running the narrow phase for every
        // contact). Each shape slot is compared once, unless the geometry
        // is shared (as between a world and its own snapshots).
        let (now, then) = (&self.state.geometry, &snapshot.state.geometry);
        let same: Option<Vec<bool>> = (!std::sync::Arc::ptr_eq(now, then)).then(|| {
            (0..now.len().max(then.len()))
                .map(|s| matches!((now.get(s), then.get(s)), (Some(a), Some(b)) if a == b))
                .collect()
        });
        self.state.clone_from(&snapshot.state);
        self.scratch
            .recycler
            .retain_restored(&self.state.contacts, |s| {
                same.as_ref()
                    .is_none_or(|v| v.get(s).copied().unwrap_or(false))
            });
        self.events.clear_all();
        self.broken_joints.clear();
    }

    /// A world continuing from a snapshot.
    pub fn from_snapshot(snapshot: &Snapshot) -> World {
        World::from_state(snapshot.state.clone())
    }
}

impl Snapshot {
    /// Tick at which the snapshot was taken.
    pub fn tick(&self) -> u64 {
        self.state.tick
    }

    /// The saved state (for field-by-field comparisons).
    pub(crate) fn world_state(&self) -> &WorldState {
        &self.state
    }

    /// The canonical bytes (the same bytes the state hash covers).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        self.encode_into(&mut bytes);
        bytes
    }

    /// Appends the canonical bytes to `out`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        // Plain data in a vector: encoding cannot fail.
        super::canonical::encode_into(&self.state, out).expect("state encodes");
    }

    /// Decodes and validates untrusted bytes (at most [`MAX_SNAPSHOT_BYTES`]).
    ///
    /// # Errors
    /// Oversized, truncated or malformed input, or a state whose indices do
    /// not hang together.
    pub fn from_bytes(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        let config = CONFIG.with_limit::<MAX_SNAPSHOT_BYTES>();
        let (state, used): (WorldState, usize) = bincode::serde::decode_from_slice(bytes, config)?;
        if used != bytes.len() {
            return Err(SnapshotError::Trailing(bytes.len() - used));
        }
        Snapshot::checked(state)
    }

    /// The packed bytes: the same state, columnar, delta-coded and deflated
    /// (see `encoding::packed`), for sending. About a tenth of the canonical size
    /// for a settled 1000-body scene. Decode with [`Snapshot::from_packed`].
    pub fn to_packed(&self) -> Vec<u8> {
        // Plain data with known lengths: packing cannot fail.
        super::packed::pack(&self.state).expect("state packs")
    }

    /// Decodes and validates untrusted packed bytes (whose state is at most
    /// [`MAX_SNAPSHOT_BYTES`] unpacked), with the same checks as
    /// [`Snapshot::from_bytes`].
    ///
    /// # Errors
    /// Malformed or oversized packed data, or an inconsistent state.
    pub fn from_packed(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        let state: WorldState = super::packed::unpack(bytes, MAX_SNAPSHOT_BYTES)?;
        Snapshot::checked(state)
    }

    /// Validates a decoded state and rebuilds what is derived from it.
    fn checked(state: WorldState) -> Result<Snapshot, SnapshotError> {
        validate(&state)?;
        let mut world = World::from_state(state);
        world.rebuild_trees();
        world.refresh_manifolds().map_err(SnapshotError::Invalid)?;
        Ok(Snapshot { state: world.state })
    }
}

/// Checks every index in a decoded state so stepping it cannot panic.
fn validate(st: &WorldState) -> Result<(), SnapshotError> {
    use crate::dynamics::BodyKind;
    use crate::geometry::ShapeGeometry;
    let bad = |m: &'static str| Err(SnapshotError::Invalid(m));
    let s = &st.settings;
    if s.tick_rate == 0 || s.tick_rate > 10_000 || s.substeps == 0 || s.substeps > 64 {
        return bad("settings");
    }
    if s.hit_event_threshold < crate::math::Scalar::ZERO {
        return bad("settings");
    }
    // Every quantity the simulation multiplies stays inside the ranges
    // scenes and the API allow (the overflow policy of `math::scalar`
    // rests on them); a crafted snapshot must not step into wrapping or
    // overflowing arithmetic.
    let settings_ok = within(s.gravity, WORLD_BOUND)
        && s.max_linear_speed <= WORLD_BOUND
        && [
            s.contact_hertz,
            s.contact_damping_ratio,
            s.contact_push_max_velocity,
            s.restitution_threshold,
            s.max_linear_speed,
            s.time_to_sleep,
            s.hit_event_threshold,
            s.joint_hertz,
            s.joint_damping_ratio,
        ]
        .iter()
        .all(|&v| v >= Scalar::ZERO);
    if !settings_ok {
        return bad("settings out of range");
    }
    let nb = st.bodies.len();
    let ns = st.shapes.len();
    if nb > u32::MAX as usize / 2 || ns > u32::MAX as usize / 2 {
        return bad("too many slots");
    }
    let mut seen = vec![false; ns];
    for (i, b) in st.bodies.iter().enumerate() {
        if !b.alive {
            continue;
        }
        if b.transform.p.x.abs() > WORLD_BOUND || b.transform.p.y.abs() > WORLD_BOUND {
            return bad("body outside world bounds");
        }
        if !body_in_range(b, &st.body_config[i]) {
            return bad("body value out of range");
        }
        let mut link = b.first_shape;
        let mut steps = 0;
        while link != u32::MAX {
            let Some(sh) = st.shapes.get(link as usize) else {
                return bad("body shape index");
            };
            if !sh.alive || sh.body as usize != i || seen[link as usize] {
                return bad("body shape list");
            }
            seen[link as usize] = true;
            steps += 1;
            if steps > ns {
                return bad("shape list cycle");
            }
            link = sh.next;
        }
    }
    if st.geometry.len() != ns {
        return bad("shape geometry list");
    }
    for (i, (sh, geometry)) in st.shapes.iter().zip(st.geometry.iter()).enumerate() {
        if sh.alive != seen[i] {
            return bad("shape not on its body's list");
        }
        if let ShapeGeometry::Polygon(p) = geometry {
            if p.count < 2 || p.count as usize > crate::geometry::MAX_POLYGON_VERTICES {
                return bad("polygon vertex count");
            }
        }
        if sh.alive && !shape_in_range(sh, geometry) {
            return bad("shape value out of range");
        }
    }
    let check_pool = |free: &[u32], alive: &dyn Fn(usize) -> bool, len: usize| -> bool {
        let mut used = vec![false; len];
        free.iter().all(|&f| {
            let f = f as usize;
            let ok = f < len && !alive(f) && !used[f];
            if ok {
                used[f] = true;
            }
            ok
        })
    };
    if !check_pool(&st.free_bodies, &|i| st.bodies[i].alive, nb) {
        return bad("free body list");
    }
    if !check_pool(&st.free_shapes, &|i| st.shapes[i].alive, ns) {
        return bad("free shape list");
    }
    let mut prev = None;
    for c in &st.contacts {
        let (a, b) = (c.shape_a as usize, c.shape_b as usize);
        if a >= b || b >= ns || !st.shapes[a].alive || !st.shapes[b].alive {
            return bad("contact shapes");
        }
        if st.shapes[a].body != c.body_a || st.shapes[b].body != c.body_b {
            return bad("contact bodies");
        }
        if c.manifold.count > 2 {
            return bad("manifold point count");
        }
        if !contact_in_range(c) {
            return bad("contact value out of range");
        }
        let (da, db) = (&st.shapes[a].def, &st.shapes[b].def);
        if c.sensor != (da.is_sensor || db.is_sensor) || (da.is_sensor && db.is_sensor) {
            return bad("contact sensor flag");
        }
        if st.bodies[c.body_a as usize].kind == BodyKind::Static
            && st.bodies[c.body_b as usize].kind == BodyKind::Static
        {
            return bad("contact between static bodies");
        }
        let key = c.key();
        if prev.is_some_and(|p| p >= key) {
            return bad("contacts not sorted");
        }
        prev = Some(key);
    }
    let nj = st.joints.len();
    if nj > u32::MAX as usize / 2 {
        return bad("too many joint slots");
    }
    for j in &st.joints {
        if !j.alive {
            continue;
        }
        let (a, b) = (j.body_a as usize, j.body_b as usize);
        if a >= nb || b >= nb || !st.bodies[a].alive || !st.bodies[b].alive {
            return bad("joint bodies");
        }
        if a == b {
            return bad("joint joins a body to itself");
        }
        if j.kind.validate().is_err() {
            return bad("joint parameters");
        }
    }
    if !check_pool(&st.free_joints, &|i| st.joints[i].alive, nj) {
        return bad("free joint list");
    }
    for &m in &st.moved {
        if m as usize >= ns || !st.shapes[m as usize].alive || !st.shapes[m as usize].moved {
            return bad("moved shape list");
        }
    }
    // The pair search relies on the list and the flags agreeing exactly:
    // every flagged shape listed once (with the check above, equal counts
    // rule out both duplicates and unlisted flags).
    if st.shapes.iter().filter(|s| s.moved).count() != st.moved.len() {
        return bad("moved shape list");
    }
    Ok(())
}

/// `lo ≤ v ≤ hi`.
fn in_range(v: Scalar, lo: Scalar, hi: Scalar) -> bool {
    lo <= v && v <= hi
}

/// Both components within `±bound`.
fn within(v: Vec2, bound: Scalar) -> bool {
    v.x.abs() <= bound && v.y.abs() <= bound
}

/// A rotation's (cos, sin) or a direction: within ±2 per component. Real
/// ones are near unit length, but not to the last place: a contact normal
/// of length 1.000037 came out of `smash` at tick 120. Only overflow
/// matters here, and ±2 keeps every product with them small.
fn unit_ish(v: Vec2) -> bool {
    within(v, Scalar::TWO)
}

/// A body's rotation: its components within ±2 and its squared length
/// within 2⁻¹⁰ of one. Every rotation the API and stepping make is
/// normalised (off by under 10⁻⁶). Collision and the recycled carry
/// multiply rotations by coordinates, and the carry's lanes give the
/// scalar products' bits only for operands below 2³¹ (`math/wide/bits.rs`):
/// a rotation far from unit scaled them toward that.
fn unit_rotation(q: Rot) -> bool {
    let off = q.c * q.c + q.s * q.s - Scalar::ONE;
    unit_ish(Vec2::new(q.c, q.s)) && off.abs() <= Scalar::from_bits(1 << 22)
}

/// How far from the origin derived positions may lie: a body at the world's
/// edge carries shapes (and their boxes and contact points) up to its extent
/// beyond it, and a shape's local coordinates reach across the world. Four
/// world bounds keep the exact 128-bit products of collision far from
/// overflowing (they need ~2¹²⁷; these give < 2⁹⁸).
const FAR: Scalar = WORLD_BOUND.shl(2);

/// The body's values lie in the ranges the API and stepping keep them in.
///
/// Only what reaches exact (non-wrapping) wide arithmetic is bounded:
/// rotations and positions, which collision and the broad phase multiply
/// out in 128 bits. Speeds are not: the solver may push a body past the
/// speed limit for a step (so a legitimate state can hold one), and they
/// only ever meet wrapping arithmetic, `Scalar`'s or the lanes' (defined
/// for every operand and the same on every target; where the lanes'
/// product parts from `Scalar`'s, at 2³¹ − ½ and up, `integrate_positions`
/// takes the scalar code); a body they carry out of the world stops at its
/// edge. Masses, damping and thresholds only need their sign.
fn body_in_range(b: &crate::dynamics::Body, c: &crate::dynamics::BodyConfig) -> bool {
    let non_negative = |v: &Scalar| *v >= Scalar::ZERO;
    unit_rotation(b.transform.q)
        && within(b.center, FAR)
        && non_negative(&b.sleep_time)
        && within(c.local_center, FAR)
        && in_range(c.max_extent, Scalar::ZERO, FAR)
        && in_range(c.min_extent, Scalar::ZERO, FAR)
        && [
            c.mass,
            c.inv_mass,
            c.inertia,
            c.inv_inertia,
            c.linear_damping,
            c.angular_damping,
            c.sleep_threshold,
        ]
        .iter()
        .all(non_negative)
}

/// The shape's geometry, material and fat box lie within reach of the world.
fn shape_in_range(sh: &crate::dynamics::Shape, g: &crate::geometry::ShapeGeometry) -> bool {
    use crate::geometry::ShapeGeometry;
    let radius_ok = |r: Scalar| in_range(r, Scalar::ZERO, FAR);
    let geometry_ok = match g {
        ShapeGeometry::Circle(c) => within(c.center, FAR) && radius_ok(c.radius),
        ShapeGeometry::Capsule(c) => within(c.c1, FAR) && within(c.c2, FAR) && radius_ok(c.radius),
        ShapeGeometry::Segment(s) => within(s.p1, FAR) && within(s.p2, FAR),
        // The checks of `ChainSegment::new`: a crafted chain segment with
        // a zero-length edge would have no normal.
        ShapeGeometry::ChainSegment(c) => {
            [c.ghost1, c.segment.p1, c.segment.p2, c.ghost2]
                .iter()
                .all(|&p| within(p, FAR))
                && crate::geometry::ChainSegment::new(
                    c.ghost1,
                    c.segment.p1,
                    c.segment.p2,
                    c.ghost2,
                )
                .is_ok()
        }
        ShapeGeometry::Polygon(p) => {
            let n = usize::from(p.count);
            p.vertices[..n].iter().all(|&v| within(v, FAR))
                && p.normals[..n].iter().all(|&v| unit_ish(v))
                && within(p.centroid, FAR)
                && radius_ok(p.radius)
        }
    };
    let d = &sh.def;
    geometry_ok
        && [d.density, d.friction, d.restitution]
            .iter()
            .all(|&v| v >= Scalar::ZERO)
        && within(sh.fat_aabb.lower, FAR)
        && within(sh.fat_aabb.upper, FAR)
}

/// The mixed material is not negative. (The manifold's geometry is not
/// decoded but recomputed from the shapes: `World::refresh_manifolds`.)
fn contact_in_range(c: &crate::dynamics::Contact) -> bool {
    c.friction >= Scalar::ZERO && c.restitution >= Scalar::ZERO
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A settled pyramid's state, and its canonical bytes after `edit`.
    fn edited(edit: impl FnOnce(&mut WorldState)) -> Result<Snapshot, SnapshotError> {
        edited_scene("stack", 30, edit)
    }

    /// Scene `name`'s state after `steps`, and its canonical bytes after
    /// `edit`.
    fn edited_scene(
        name: &str,
        steps: usize,
        edit: impl FnOnce(&mut WorldState),
    ) -> Result<Snapshot, SnapshotError> {
        let mut w = crate::scene::build_named(name).expect("a named scene");
        for _ in 0..steps {
            w.step();
        }
        let mut st = w.snapshot().state;
        edit(&mut st);
        let bytes = bincode::serde::encode_to_vec(&st, CONFIG).expect("encodes");
        Snapshot::from_bytes(&bytes)
    }

    #[test]
    fn recomputed_contacts_must_match_the_stored_ids_and_flags() {
        assert!(edited(|_| {}).is_ok());
        let touching = |st: &mut WorldState| {
            st.contacts
                .iter()
                .position(|c| c.manifold.count > 0)
                .expect("a touching contact")
        };
        let invalid = |r: Result<Snapshot, SnapshotError>, why: &str| match r {
            Err(SnapshotError::Invalid(m)) => assert_eq!(m, why),
            other => panic!("expected {why:?}, got {other:?}"),
        };
        invalid(
            edited(|st| {
                let k = touching(st);
                st.contacts[k].manifold.points[0].id ^= 1;
            }),
            "contact points do not match their shapes",
        );
        invalid(
            edited(|st| {
                let k = touching(st);
                st.contacts[k].manifold.count = 1;
                st.contacts[k].manifold.points[0] = st.contacts[k].manifold.points[1];
            }),
            "contact points do not match their shapes",
        );
        invalid(
            edited(|st| {
                let k = touching(st);
                st.contacts[k].touching = false;
            }),
            "contact touching flag",
        );
    }

    /// A crafted state that queues a body's shape as moved has that body's
    /// contacts decoded unchecked (they wait for the next step's collide):
    /// feature ids no shape has, a touching flag that lies, a second point
    /// nobody made and extreme impulses all decode, and the step that
    /// follows collides them afresh without panicking (debug builds check
    /// overflow), leaving every manifold consistent with its shapes.
    #[test]
    fn queued_contacts_with_crafted_points_are_collided_afresh() {
        let snap = edited(|st| {
            let k = st
                .contacts
                .iter()
                .position(|c| c.manifold.count > 0 && !c.sensor)
                .expect("a touching contact");
            let body = st.contacts[k].body_b;
            let shape = st.bodies[body as usize].first_shape;
            st.shapes[shape as usize].moved = true;
            st.moved.push(shape);
            let c = &mut st.contacts[k];
            c.touching = false;
            c.manifold.count = 2;
            for (i, p) in c.manifold.points.iter_mut().enumerate() {
                p.id = 0xfff0 + i as u16;
                p.normal_impulse = Scalar::MAX;
                p.tangent_impulse = Scalar::MIN;
                p.persisted = true;
            }
        })
        .expect("the queued contact is left to the next step");
        let mut w = World::from_snapshot(&snap);
        for _ in 0..30 {
            w.step();
        }
        let again = Snapshot::from_bytes(&w.snapshot().to_bytes());
        assert!(
            again.is_ok(),
            "after a step every contact checks: {again:?}"
        );
        for c in &w.state.contacts {
            assert_eq!(c.touching, c.manifold.count > 0);
            assert!(c.manifold.points().iter().all(|p| p.id < 0xfff0));
        }
    }

    /// A contact's direct flag (its manifold taken at the current poses,
    /// not recycled) decodes only on a pair that could be recycled, and the
    /// flag is state: a recyclable pair decodes with either value, each
    /// giving its own state hash.
    #[test]
    fn a_direct_flag_only_on_recyclable_pairs() {
        let invalid = |r: Result<Snapshot, SnapshotError>| match r {
            Err(SnapshotError::Invalid(m)) => assert_eq!(m, "contact direct flag"),
            other => panic!("expected the direct flag refused, got {other:?}"),
        };
        // The car's wheels (balls of 0.4 m) on segments: never recycled.
        invalid(edited_scene("car", 60, |st| {
            let k = st
                .contacts
                .iter()
                .position(|c| !c.recycled && !c.sensor && c.manifold.count > 0)
                .expect("a touching contact that is not recycled");
            st.contacts[k].direct = true;
        }));
        let flipped = edited(|st| {
            let k = st
                .contacts
                .iter()
                .position(|c| c.recycled && c.manifold.count > 0)
                .expect("a recycled contact");
            assert!(
                !st.contacts[k].direct,
                "a resting stack's contact is recycled"
            );
            st.contacts[k].direct = true;
        })
        .expect("a recyclable pair's manifold may be taken directly");
        let plain = edited(|_| {}).expect("decodes");
        assert_ne!(
            World::from_snapshot(&flipped).state_hash(),
            World::from_snapshot(&plain).state_hash()
        );
    }

    /// The place of the first live dynamic body of `st`.
    fn first_dynamic(st: &WorldState) -> usize {
        st.bodies
            .iter()
            .position(|b| b.alive && b.kind == crate::dynamics::BodyKind::Dynamic)
            .expect("a dynamic body")
    }

    /// A body's rotation must be a unit one, to normalising's error: one
    /// of length 1.5 (which no API call or step makes) is refused, one off
    /// by 2⁻¹² in each component decodes and steps.
    #[test]
    fn a_rotation_off_the_unit_circle_is_refused() {
        let with_rotation = |q: Rot| {
            edited(|st| {
                let i = first_dynamic(st);
                st.bodies[i].transform.q = q;
            })
        };
        let off = Scalar::from_bits(1 << 20);
        for bad in [
            Rot {
                c: Scalar::ratio(3, 2),
                s: Scalar::ZERO,
            },
            Rot {
                c: Scalar::ZERO,
                s: -Scalar::ratio(3, 2),
            },
            Rot {
                c: Scalar::HALF,
                s: Scalar::HALF,
            },
            Rot {
                c: Scalar::ZERO,
                s: Scalar::ZERO,
            },
        ] {
            match with_rotation(bad) {
                Err(SnapshotError::Invalid(m)) => assert_eq!(m, "body value out of range"),
                other => panic!("rotation {bad:?} decoded: {:?}", other.map(|s| s.tick())),
            }
        }
        let fine = Rot {
            c: Scalar::ONE + off,
            s: off,
        };
        let snap = with_rotation(fine).expect("within normalising's error");
        let mut w = World::from_snapshot(&snap);
        for _ in 0..10 {
            w.step();
        }
    }

    /// A body's smallest extent (what decides whether a step of the body
    /// is swept for tunnelling, and the core radius of that sweep) is held
    /// to the range of its largest, as every decoded quantity is held to
    /// what the API can give. Before, a negative or huge one decoded, and a
    /// body with it was swept with a negative core, or never.
    #[test]
    fn a_crafted_smallest_extent_is_refused() {
        // The stack's first dynamic body, with its smallest extent set to `v`.
        let with_min_extent = |v: Scalar| {
            edited(|st| {
                let i = first_dynamic(st);
                std::sync::Arc::make_mut(&mut st.body_config)[i].min_extent = v;
            })
        };
        for bad in [
            Scalar::from_int(-1),
            Scalar::MIN,
            FAR + Scalar::ONE,
            Scalar::MAX,
        ] {
            match with_min_extent(bad) {
                Err(SnapshotError::Invalid(m)) => assert_eq!(m, "body value out of range"),
                other => panic!("min_extent {bad:?} decoded: {:?}", other.map(|s| s.tick())),
            }
        }
        // The edges of the range still decode and step.
        for fine in [Scalar::ZERO, FAR] {
            let snap = with_min_extent(fine).expect("in range");
            let mut w = World::from_snapshot(&snap);
            for _ in 0..10 {
                w.step();
            }
        }
    }
}

//! Continuous collision: fast bodies do not tunnel (after Box2D v3).
//!
//! After the solve and before the fat boxes are refreshed, every awake
//! dynamic body whose motion this step, `|v|·dt + |ω|·dt·max_extent`, is at
//! least half its smallest shape extent is *fast*. Each fast body's sweep
//! (start and end centre of mass and rotation) is tested against the shapes
//! in the swept box of each of its shapes: static shapes for every fast body,
//! and kinematic and non-bullet dynamic shapes as well for bullets. The
//! earliest time of impact ([`time_of_impact`], conservative advancement)
//! moves the body back along its sweep to that pose; its velocity is kept,
//! and next step's speculative contact stops it at the surface.
//!
//! Determinism: fast bodies are handled in body-slot order, non-bullets
//! first (they only see static shapes, so their results are independent),
//! then bullets (they see the non-bullets' final sweeps and never each
//! other). Candidates are sorted by shape slot, and every search has a fixed
//! iteration cap.
//!
//! A hit of a rounded shape counts only if the shapes would also come
//! within Box2D's target, a slop of overlap (`toi_target`): a body resting
//! on the ground touches its plane, and its surface passing over the end
//! of the next piece of ground is a graze, not an impact. A real impact
//! still stops a slop short, where the next step's speculative contact
//! stops it whole. A chain segment the shape started behind, or slides
//! along, is skipped (Box2D's early out).
//!
//! A shape that starts the step already within the slop of a candidate
//! (resting or sliding on it) would stop at once; it is tested again by its
//! *core*, the shape shrunk by ¾ of its smallest extent (a plank stays a
//! thinner plank, a capsule its segment with a quarter of the radius), which
//! stops the body only where the core would touch the candidate: when the
//! body is really about to pass through. If the core starts in contact too,
//! a second core shrunk by 15/16 is tried. If even that one starts in
//! contact the body is already deep inside; when its centroid's path then
//! touches the candidate it is going through, and it is stopped dead at its
//! start pose (velocity zeroed) so the contacts can push it back out. This is
//! what keeps a long body that lands end-first while spinning — the impact
//! spins it up by hundreds of rad/s and swings its far end through the floor
//! — on the right side (Box2D v3 tests only a disc around the centroid,
//! which such a body pivots around).

use super::body::{Body, BodyConfig, BodyKind, NONE};
use super::solver::SolverBody;
use super::world::WorldState;
use crate::collision::{
    time_of_impact, toi_target, DistanceProxy, Sweep, ToiState, LINEAR_SLOP, TOI_TARGET,
};
use crate::geometry::{ChainSegment, ShapeGeometry};
use crate::math::{Aabb, Rot, Scalar, Transform, Vec2};

/// Fraction of a body's smallest extent it may move in a step without
/// continuous collision.
const SAFETY_FACTOR: Scalar = Scalar::HALF;

/// Scratch memory for continuous collision; never state.
#[derive(Debug, Default)]
pub(crate) struct CcdScratch {
    /// Start-of-step centre of mass and rotation of the body in solver slot `k + 1`.
    start: Vec<(Vec2, Rot)>,
    fast: Vec<u32>,
    bullets: Vec<u32>,
    candidates: Vec<u32>,
    /// The box of each shape of each fast body at its end pose, computed
    /// for its swept box ...
    ends: Vec<Aabb>,
    /// ... and, for the awake body `k`, where its boxes begin in `ends`
    /// when it is fast and continuous collision left it at its end pose
    /// ([`NONE`] otherwise; empty when no body is fast), so that the fat
    /// boxes' refresh takes them instead of computing them again.
    ends_of: Vec<u32>,
}

/// Smallest extent of a shape: how far its centroid is from its nearest
/// face (a segment has none).
pub(crate) fn shape_min_extent(g: &ShapeGeometry) -> Scalar {
    match g {
        ShapeGeometry::Circle(c) => c.radius,
        ShapeGeometry::Capsule(c) => c.radius,
        ShapeGeometry::Polygon(p) => {
            let mut m = Scalar::MAX;
            for (v, n) in p.points().iter().zip(&p.normals) {
                m = m.min(n.dot(*v - p.centroid));
            }
            m.max(Scalar::ZERO) + p.radius
        }
        ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_) => Scalar::ZERO,
    }
}

/// Centroid of a shape in its body frame.
fn shape_centroid(g: &ShapeGeometry) -> Vec2 {
    match g {
        ShapeGeometry::Circle(c) => c.center,
        ShapeGeometry::Capsule(c) => c.c1.lerp(c.c2, Scalar::HALF),
        ShapeGeometry::Polygon(p) => p.centroid,
        ShapeGeometry::Segment(s)
        | ShapeGeometry::ChainSegment(crate::geometry::ChainSegment { segment: s, .. }) => {
            s.p1.lerp(s.p2, Scalar::HALF)
        }
    }
}

/// The shape's core for a sweep that starts in contact: the shape shrunk by
/// `1 − 4^−depth` of its smallest extent (¾, then 15/16 if the first core
/// also starts in contact), so it only touches what the shape would really
/// pass through. A circle's core is a smaller disc at its centre, a
/// capsule's its segment with a smaller radius, a polygon's the polygon
/// inset along its corner bisectors with a smaller rounding radius. An
/// elongated body keeps its length: a disc at the centroid let a plank or a
/// capsule pivot on one end and whirl through the floor with the other.
/// A polygon whose inset would lose an edge (a sharp spike) falls back to a
/// disc at the centroid.
fn core_proxy(g: &ShapeGeometry, depth: u32) -> DistanceProxy {
    let keep = |x: Scalar| x.shr(2 * depth);
    let disc = || DistanceProxy::new(&[shape_centroid(g)], keep(shape_min_extent(g)));
    match g {
        ShapeGeometry::Capsule(c) => DistanceProxy::new(&[c.c1, c.c2], keep(c.radius)),
        ShapeGeometry::Polygon(p) => {
            let n = p.count as usize;
            let (verts, normals) = (&p.vertices[..n], &p.normals[..n]);
            let mut m = Scalar::MAX;
            for (v, nv) in verts.iter().zip(normals) {
                m = m.min(nv.dot(*v - p.centroid));
            }
            if n < 3 || m <= Scalar::ZERO {
                return disc();
            }
            // Inset by d = m − m/4^depth: vertex i moves along its corner's
            // bisector, v − d·(n₁ + n₂) / (1 + n₁·n₂), onto both offset edges.
            let d = m - keep(m);
            let mut inset = [Vec2::ZERO; crate::geometry::MAX_POLYGON_VERTICES];
            for i in 0..n {
                let (n1, n2) = (normals[(i + n - 1) % n], normals[i]);
                let denom = Scalar::ONE + n1.dot(n2);
                if denom <= Scalar::milli(10) {
                    return disc();
                }
                inset[i] = verts[i] - (n1 + n2) * (d / denom);
            }
            // Every inset vertex must lie inside every offset edge (with a
            // little tolerance); otherwise an edge collapsed.
            let tol = Scalar::milli(1);
            for q in &inset[..n] {
                for (v, nv) in verts.iter().zip(normals) {
                    if nv.dot(*q - *v) > tol - d {
                        return disc();
                    }
                }
            }
            DistanceProxy::new(&inset[..n], keep(p.radius))
        }
        ShapeGeometry::Circle(_) | ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_) => {
            disc()
        }
    }
}

impl CcdScratch {
    /// Starts the lists of where the awake bodies start the step and of
    /// which of them are fast, and forgets the last step's end boxes:
    /// called by each finish stage, with continuous collision on or off
    /// (a step with nothing awake has none, and reads no box).
    pub(crate) fn begin(&mut self, awake: usize) {
        self.start.clear();
        self.start.reserve(awake);
        self.fast.clear();
        self.bullets.clear();
        self.ends.clear();
        self.ends_of.clear();
    }

    /// Shape `j` (in its body's shape list) of awake body `k`'s box at
    /// its pose after continuous collision, if [`solve_continuous`] has
    /// it: the same box as `aabb` of that pose.
    #[inline(always)]
    pub(crate) fn end_box(&self, k: usize, j: usize) -> Option<Aabb> {
        match self.ends_of.get(k) {
            Some(&i) if i != NONE => Some(self.ends[i as usize + j]),
            _ => None,
        }
    }

    /// Remembers where the next awake body (in solver slot order) starts
    /// the step, and whether it is fast: called by the finalize loop for
    /// each body, with its solver state `s`, before it moves it, so that
    /// the bodies are read once (a pass of its own over the awake bodies
    /// cost 0.12 ms a step in many_pyramids, where none is fast).
    #[inline(always)]
    pub(crate) fn record(&mut self, b: &Body, c: &BodyConfig, s: &SolverBody, dt: Scalar) {
        let k = self.start.len() as u32;
        self.start.push((b.center, b.transform.q));
        let lists = (&mut self.fast, &mut self.bullets);
        record_fast(k, b, c, s, dt, lists);
    }

    /// [`CcdScratch::record`] of every awake body at once, in ranges: the
    /// start poses to fill (one per awake body, after [`CcdScratch::begin`]),
    /// each range recording its fast bodies into lists of its own with
    /// [`record_fast`], which [`CcdScratch::append_fast`] then takes in
    /// order.
    pub(crate) fn starts(&mut self, awake: usize) -> &mut [(Vec2, Rot)] {
        self.start.resize(awake, (Vec2::ZERO, Rot::IDENTITY));
        &mut self.start
    }

    /// Takes a range's fast bodies and bullets (see [`CcdScratch::starts`]),
    /// after those of the ranges before it.
    pub(crate) fn append_fast(&mut self, fast: &mut Vec<u32>, bullets: &mut Vec<u32>) {
        self.fast.append(fast);
        self.bullets.append(bullets);
    }
}

/// Notes awake body `k` (`b`, with config `c` and solver state `s`) in
/// `fast` or `bullets` when it moves far enough this step to need
/// continuous collision.
#[inline(always)]
pub(crate) fn record_fast(
    k: u32,
    b: &Body,
    c: &BodyConfig,
    s: &SolverBody,
    dt: Scalar,
    (fast, bullets): (&mut Vec<u32>, &mut Vec<u32>),
) {
    if b.kind == BodyKind::Dynamic && b.first_shape != NONE && is_fast(c, s, dt) {
        if c.bullet {
            bullets.push(k);
        } else {
            fast.push(k);
        }
    }
}

/// Whether a body moves far enough this step to need continuous collision.
#[inline(always)]
fn is_fast(c: &BodyConfig, s: &SolverBody, dt: Scalar) -> bool {
    let limit = c.min_extent * SAFETY_FACTOR;
    let spin = s.w.abs() * dt * c.max_extent;
    let (ax, ay) = (s.v.x.abs(), s.v.y.abs());
    // |v| ≤ |vx| + |vy|: most bodies are decided without a square root.
    if (ax + ay) * dt + spin < limit {
        return false;
    }
    // And |v| ≥ max(|vx|, |vy|): most of the others too (falling bodies).
    if speed_at_least(ax.max(ay)).is_some_and(|low| low * dt + spin >= limit) {
        debug_assert!(s.v.length() * dt + spin >= limit);
        return true;
    }
    s.v.length() * dt + spin >= limit
}

/// A speed that [`Vec2::length`] of a vector whose larger component has
/// magnitude `big` is never below, for `big` below 2¹⁵ m/s (`None`
/// above: then `|vx| + |vy|` could wrap, and nothing is decided): `big`
/// less what the length's rounding can lose. Below half a metre a second
/// the length is the exact floor, at least `big`. Above, the Q32.32 square
/// is floored (at least `⌊big²/2³²⌋`, so its exact root is at least
/// `big − 1` units) and the root keeps 32 significant bits (less by under
/// `big·2⁻³¹` and one unit): `big/2³⁰ + 8` units cover both. The products
/// by `dt` floor, which keeps the order, so a body this decides fast is
/// fast by the length too.
#[inline(always)]
fn speed_at_least(big: Scalar) -> Option<Scalar> {
    let b = big.to_bits();
    (b < 1 << 47).then(|| Scalar::from_bits(b - (b >> 30) - 8))
}

/// Continuous collision, in the finish stage (after the bodies are
/// finalized, before the fat boxes are refreshed), for the fast bodies
/// [`CcdScratch::record`] found.
pub(crate) fn solve_continuous(
    st: &mut WorldState,
    awake: &[u32],
    slot_of: &[u32],
    sc: &mut CcdScratch,
) {
    if sc.fast.is_empty() && sc.bullets.is_empty() {
        return;
    }
    sc.ends_of.resize(awake.len(), NONE);
    let fast = core::mem::take(&mut sc.fast);
    for &k in &fast {
        solve_body(st, awake, slot_of, k as usize, false, sc);
    }
    sc.fast = fast;
    let bullets = core::mem::take(&mut sc.bullets);
    for &k in &bullets {
        solve_body(st, awake, slot_of, k as usize, true, sc);
    }
    sc.bullets = bullets;
}

/// The sweep of body `bi` this step (`slot` 0: it did not move).
fn body_sweep(b: &Body, c: &BodyConfig, slot: u32, start: &[(Vec2, Rot)]) -> Sweep {
    let (c1, q1) = if slot == 0 {
        (b.center, b.transform.q)
    } else {
        start[slot as usize - 1]
    };
    Sweep {
        local_center: c.local_center,
        c1,
        c2: b.center,
        q1,
        q2: b.transform.q,
    }
}

/// Whether a fast shape whose centroid moves `c1` → `c2` leaves chain
/// segment `chain` (on a body at `xf`) alone, as Box2D's continuous step
/// does: it started behind the
/// one-sided segment, or it moves along it and ends clear of it by more
/// than a quarter of its smallest extent (sliding fast along a chain must
/// not stop the body at each segment).
fn passes_chain(
    chain: &ChainSegment,
    xf: Transform,
    (c1, c2): (Vec2, Vec2),
    min_extent: Scalar,
) -> bool {
    let p1 = xf.apply(chain.segment.p1);
    let (length, e) = (xf.apply(chain.segment.p2) - p1).length_and_normalize();
    if length <= LINEAR_SLOP {
        return false;
    }
    let separation1 = (c1 - p1).cross(e);
    let separation2 = (c2 - p1).cross(e);
    let core = min_extent.shr(2);
    separation1 < Scalar::ZERO || (separation1 - separation2 < core && separation2 > core)
}

/// Moves fast body `awake[k]` back to its earliest time of impact.
fn solve_body(
    st: &mut WorldState,
    awake: &[u32],
    slot_of: &[u32],
    k: usize,
    bullet: bool,
    sc: &mut CcdScratch,
) {
    let bi = awake[k];
    // Only the fields needed (copying the whole body and each shape cost
    // more than the usual search, which finds nothing).
    let body = &st.bodies[bi as usize];
    let config = &st.body_config[bi as usize];
    let sweep = body_sweep(body, config, k as u32 + 1, &sc.start);
    let (xf_end, max_extent) = (body.transform, config.max_extent);
    let xf_start = sweep.transform(Scalar::ZERO);
    let mut t_min = Scalar::ONE;
    let mut stop_dead = false;
    let first_end = sc.ends.len() as u32;
    let mut s = body.first_shape;
    while s != NONE {
        let shape = &st.shapes[s as usize];
        let geometry = &st.geometry[s as usize];
        s = shape.next;
        let end = geometry.aabb(xf_end);
        sc.ends.push(end);
        if shape.def.is_sensor {
            continue;
        }
        let swept = geometry.aabb(xf_start).union(&end);
        sc.candidates.clear();
        let cands = &mut sc.candidates;
        st.static_tree.query(&swept, |o| cands.push(o));
        if bullet {
            st.dynamic_tree.query(&swept, |o| cands.push(o));
        }
        if sc.candidates.is_empty() {
            // Most fast bodies are in the open (in rain, 6,500 fast bodies
            // a step, 660 of whose shapes have a candidate).
            continue;
        }
        sc.candidates.sort_unstable();
        let proxy = DistanceProxy::from_geometry(geometry);
        for &o in &sc.candidates {
            let other = &st.shapes[o as usize];
            // The trees round boxes outward: the exact fat boxes decide.
            if other.body == bi || other.def.is_sensor || !other.fat_aabb.overlaps(&swept) {
                continue;
            }
            if !shape.def.filter.should_collide(&other.def.filter) {
                continue;
            }
            let ob = &st.bodies[other.body as usize];
            if let ShapeGeometry::ChainSegment(chain) = &st.geometry[o as usize] {
                // The shape's own centroid at both ends (a body's centre
                // may be elsewhere when it has several shapes).
                let centroid = shape_centroid(geometry);
                let path = (xf_start.apply(centroid), xf_end.apply(centroid));
                if passes_chain(chain, ob.transform, path, config.min_extent) {
                    continue;
                }
            }
            let (other_sweep, other_extent) = if ob.kind == BodyKind::Static {
                (Sweep::fixed(ob.transform), Scalar::ZERO)
            } else if st.body_config[other.body as usize].bullet {
                continue; // bullets never test each other
            } else {
                let slot = slot_of[other.body as usize];
                let oc = &st.body_config[other.body as usize];
                (body_sweep(ob, oc, slot, &sc.start), oc.max_extent)
            };
            let other_proxy = DistanceProxy::from_geometry(&st.geometry[o as usize]);
            let toi = |p: &DistanceProxy, target: Scalar| {
                time_of_impact(
                    &other_proxy,
                    &other_sweep,
                    other_extent,
                    p,
                    &sweep,
                    max_extent,
                    t_min,
                    target,
                )
            };
            let mut out = toi(&proxy, TOI_TARGET);
            let graze = toi_target(proxy.radius + other_proxy.radius);
            if out.state == ToiState::Hit
                && graze < TOI_TARGET
                && toi(&proxy, graze).state == ToiState::Separated
            {
                // Rounded shapes that come within the slop but never
                // overlap by more than one (Box2D's target, which a resting
                // contact reaches): a graze, as a ball or a capsule on the
                // ground passing over the end of the next piece of it, not
                // an impact. A real impact still stops a slop short, where
                // the next step's speculative contact catches it whole.
                continue;
            }
            if out.state == ToiState::Overlapped {
                // Resting or sliding on it: only a real pass-through counts,
                // when the shape's core would touch it.
                for depth in 1..=2 {
                    out = toi(&core_proxy(geometry, depth), Scalar::ZERO);
                    if out.state != ToiState::Overlapped {
                        break;
                    }
                }
            }
            if out.state == ToiState::Overlapped {
                // Deep inside it already (past 15/16 of the smallest
                // extent): if the centroid's path now touches it, the body
                // is going through. Stop it dead at its start pose; the
                // contacts push it out from there in the next steps (moving
                // out, its centroid path does not touch). A centroid that is
                // itself inside is left alone: stopping it would freeze it.
                let centroid = DistanceProxy::new(&[shape_centroid(geometry)], Scalar::ZERO);
                let c = toi(&centroid, Scalar::ZERO);
                if matches!(c.state, ToiState::Hit | ToiState::Failed) {
                    t_min = Scalar::ZERO;
                    stop_dead = true;
                }
                continue;
            }
            let hit = matches!(out.state, ToiState::Hit | ToiState::Failed);
            if hit && out.fraction > Scalar::ZERO && out.fraction < t_min {
                t_min = out.fraction;
            }
        }
    }
    if t_min == Scalar::ONE {
        sc.ends_of[k] = first_end;
    } else {
        let (c, q) = sweep.pose(t_min);
        let local_center = st.body_config[bi as usize].local_center;
        let b = &mut st.bodies[bi as usize];
        b.center = c;
        b.transform.q = q;
        b.transform.p = c - q.rotate(local_center);
        if stop_dead {
            b.linear_velocity = Vec2::ZERO;
            b.angular_velocity = Scalar::ZERO;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Capsule, Polygon};

    /// The speed `is_fast` decides from without a root is never above the
    /// length, on both of `Vec2::length`'s paths (exact below half a metre
    /// a second, the root of the Q32.32 square above) and at the edges.
    #[test]
    fn speed_at_least_is_below_the_length() {
        let mut r: u64 = 0x9E37_79B9_7F4A_7C15;
        let check = |x: i64, y: i64| {
            let v = Vec2::new(Scalar::from_bits(x), Scalar::from_bits(y));
            let big = v.x.abs().max(v.y.abs());
            match speed_at_least(big) {
                Some(low) => assert!(low <= v.length(), "{x} {y}: {low:?} > {:?}", v.length()),
                None => assert!(big.to_bits() >= 1 << 47, "{x} {y}"),
            }
        };
        for i in 0..200_000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            // Magnitudes from a few units to 2⁴⁸ raw (65 536 m/s), either
            // sign, the other component anything from zero up.
            let x = ((r >> 16) >> (i % 48)) as i64;
            let y = ((r & 0xFFFF_FFFF_FFFF) >> (r % 64).min(48)) as i64;
            let (x, y) = if r & 1 == 0 { (x, -y) } else { (-x, y) };
            check(x, y);
            check(y, x);
        }
        for b in [
            0i64,
            1,
            8,
            9,
            (1 << 31) - 1,
            1 << 31,
            (1 << 47) - 1,
            1 << 47,
        ] {
            for o in [0i64, 1, b / 2, b] {
                check(b, o);
                check(-b, o);
            }
        }
        // Close to the larger component where it decides.
        let ten = Scalar::from_int(10);
        assert!(speed_at_least(ten).is_some_and(|low| ten - low < Scalar::from_bits(64)));
    }

    #[test]
    fn a_plank_core_is_a_thinner_plank() {
        let plank = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::milli(20)));
        // depth 1: inset by 15 mm; depth 2: by 18.75 mm.
        for (depth, inset) in [(1, Scalar::milli(15)), (2, Scalar::ratio(1875, 100_000))] {
            let core = core_proxy(&plank, depth);
            assert_eq!(core.points().len(), 4);
            assert_eq!(core.radius, Scalar::ZERO);
            for p in core.points() {
                let err_x = p.x.abs() - (Scalar::HALF - inset);
                let err_y = p.y.abs() - (Scalar::milli(20) - inset);
                // Corner bisector arithmetic: within a few ulps.
                assert!(err_x.abs() < Scalar::from_bits(64), "{p:?}");
                assert!(err_y.abs() < Scalar::from_bits(64), "{p:?}");
            }
        }
    }

    #[test]
    fn capsule_core_keeps_its_segment_and_a_spike_falls_back_to_a_disc() {
        let c = Capsule::new(
            Vec2::new(-Scalar::HALF, Scalar::ZERO),
            Vec2::new(Scalar::HALF, Scalar::ZERO),
            Scalar::milli(80),
        )
        .unwrap();
        let core = core_proxy(&ShapeGeometry::Capsule(c), 1);
        assert_eq!(core.points(), &[c.c1, c.c2]);
        assert_eq!(core.radius, Scalar::milli(20));
        // A needle triangle: its sharp corner's inset would leave the
        // polygon, so the core is a disc at the centroid.
        let needle = Polygon::new(
            &[
                Vec2::new(Scalar::ZERO, Scalar::ZERO),
                Vec2::new(Scalar::from_int(4), Scalar::milli(5)),
                Vec2::new(Scalar::ZERO, Scalar::milli(400)),
            ],
            Scalar::ZERO,
        )
        .unwrap();
        let g = ShapeGeometry::Polygon(needle);
        let core = core_proxy(&g, 1);
        assert_eq!(core.points(), &[shape_centroid(&g)]);
        assert_eq!(core.radius, shape_min_extent(&g).shr(2));
    }
}

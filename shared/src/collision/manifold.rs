//! Narrow phase: contact manifolds between pairs of shapes.
//!
//! Every function works in the frame of shape A (shifted so that A's first
//! vertex is the origin, which keeps the numbers small), then maps the result
//! to world space: the normal points from A to B, anchors are world-space
//! offsets from each body's origin. Polygons use the reference/incident edge
//! clipping of the seed notes (`seeds/000`): the face of least penetration is
//! the reference, the most anti-parallel face of the other polygon is the
//! incident edge, and the incident edge is clipped to the side planes of the
//! reference face. When polygons are apart by more than a tenth of the slop,
//! the closest features of those two edges decide between a vertex-vertex
//! contact (rounded corners) and the clipped face contact.

use super::distance::{shape_distance_features, DistanceProxy};
use crate::geometry::{Capsule, ChainSegment, Circle, Polygon, ShapeGeometry};
use crate::math::{Rot, Scalar, Transform, Vec2};
use serde::{Deserialize, Serialize};

/// Linear slop: the penetration the solver tolerates (0.005 m).
pub const LINEAR_SLOP: Scalar = Scalar::milli(5);
/// Speculative distance: contact points are kept this far apart (4 × slop).
pub const SPECULATIVE_DISTANCE: Scalar = Scalar::milli(20);

/// Tolerance for degenerate divisions in clipping.
const CLIP_EPS: Scalar = Scalar::from_bits(1 << 16);
/// A tenth of the linear slop: polygons farther apart than this take the
/// closest-feature test, and a vertex pair must be this much farther apart
/// than the clipped points to replace them (Box2D's `0.1 * linearSlop`).
const VERTEX_MARGIN: Scalar = Scalar::from_bits(LINEAR_SLOP.to_bits() / 10);

/// One contact point of a manifold.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct ManifoldPoint {
    /// World point, midway between the two surfaces.
    pub point: Vec2,
    /// Signed distance between the surfaces (negative when overlapping).
    pub separation: Scalar,
    /// Accumulated normal impulse (warm-start state).
    pub normal_impulse: Scalar,
    /// Accumulated friction impulse (warm-start state).
    pub tangent_impulse: Scalar,
    /// Feature id: which vertices/edges produced the point.
    pub id: u16,
    /// Whether the point matched a point of the previous step.
    pub persisted: bool,
    /// Half the vector from the point's anchor on A to its anchor on B:
    /// zero from the narrow phase; for a recycled manifold, whose point is
    /// carried with each body, the solver's lever arms are `point − shift`
    /// on A and `point + shift` on B (each body's own anchor, as Box2D's
    /// recycled contacts keep them; see `dynamics::recycle`).
    pub shift: Vec2,
}

impl ManifoldPoint {
    /// `ManifoldPoint::default()`, as a constant.
    pub const EMPTY: ManifoldPoint = ManifoldPoint {
        point: Vec2::ZERO,
        separation: Scalar::ZERO,
        normal_impulse: Scalar::ZERO,
        tangent_impulse: Scalar::ZERO,
        id: 0,
        persisted: false,
        shift: Vec2::ZERO,
    };
}

/// Up to two contact points sharing a normal.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Manifold {
    /// Unit normal from A to B in world space.
    pub normal: Vec2,
    /// The points; only the first `count` are valid.
    pub points: [ManifoldPoint; 2],
    /// Number of points (0, 1 or 2).
    pub count: u8,
}

impl Manifold {
    /// No points: `Manifold::default()`, as a constant the compiler stores
    /// straight into its destination (a default built elsewhere and
    /// copied in made the wide loads of the copy wait on the narrow
    /// stores of the zeroing, on every pair).
    pub const EMPTY: Manifold = Manifold {
        normal: Vec2::ZERO,
        points: [ManifoldPoint::EMPTY; 2],
        count: 0,
    };

    /// The valid points.
    pub fn points(&self) -> &[ManifoldPoint] {
        &self.points[..self.count as usize]
    }

    /// Adds a point given in A's shifted local frame (see [`Manifold::finish`]).
    fn push(&mut self, local: Vec2, separation: Scalar, id: u16) {
        let p = &mut self.points[self.count as usize];
        p.point = local;
        p.separation = separation;
        p.id = id;
        self.count += 1;
    }

    /// Maps a manifold computed in A's shifted local frame to world space.
    fn finish(&mut self, xf_a: Transform, origin: Vec2) {
        self.normal = xf_a.q.rotate(self.normal);
        self.finish_points(xf_a, origin);
    }

    /// [`Manifold::finish`] for an axis normal (the same bits).
    fn finish_axis(&mut self, xf_a: Transform, origin: Vec2) {
        self.normal = rotate_axis(xf_a.q, self.normal);
        self.finish_points(xf_a, origin);
    }

    fn finish_points(&mut self, xf_a: Transform, origin: Vec2) {
        for p in &mut self.points[..self.count as usize] {
            p.point = xf_a.p + xf_a.q.rotate(p.point + origin);
        }
    }
}

#[inline]
fn make_id(a: usize, b: usize) -> u16 {
    ((a as u16 & 0xff) << 8) | (b as u16 & 0xff)
}

/// [`collide`] written into `out` (a polygon pair is built in place, with
/// no manifold on the stack to copy over: the same result).
pub fn collide_into(
    a: &ShapeGeometry,
    xf_a: Transform,
    b: &ShapeGeometry,
    xf_b: Transform,
    out: &mut Manifold,
) {
    if let (ShapeGeometry::Polygon(a), ShapeGeometry::Polygon(b)) = (a, b) {
        collide_polygons_into(a, xf_a, b, xf_b, out);
    } else {
        *out = collide(a, xf_a, b, xf_b);
    }
}

/// Computes the manifold for any pair of geometries. Returns the manifold
/// with the normal pointing from `a` to `b`.
pub fn collide(a: &ShapeGeometry, xf_a: Transform, b: &ShapeGeometry, xf_b: Transform) -> Manifold {
    use ShapeGeometry as G;
    match (a, b) {
        (G::Circle(a), G::Circle(b)) => collide_circles(a, xf_a, b, xf_b),
        (G::Capsule(a), G::Circle(b)) => collide_capsule_circle(a, xf_a, b, xf_b),
        (G::Polygon(a), G::Circle(b)) => collide_polygon_circle(a, xf_a, b, xf_b),
        (G::Segment(s), G::Circle(b)) => {
            let cap = s.to_capsule();
            collide_capsule_circle(&cap, xf_a, b, xf_b)
        }
        (G::Capsule(a), G::Capsule(b)) => collide_capsules(a, xf_a, b, xf_b),
        (G::Segment(s), G::Capsule(b)) => {
            let cap = s.to_capsule();
            collide_capsules(&cap, xf_a, b, xf_b)
        }
        (G::Capsule(a), G::Segment(s)) => {
            let cap = s.to_capsule();
            collide_capsules(a, xf_a, &cap, xf_b)
        }
        (G::ChainSegment(a), G::Circle(b)) => collide_chain_segment_circle(a, xf_a, b, xf_b),
        (G::ChainSegment(a), G::Capsule(b)) => {
            collide_chain_segment_polygon(a, xf_a, &b.to_polygon(), xf_b)
        }
        (G::ChainSegment(a), G::Polygon(b)) => collide_chain_segment_polygon(a, xf_a, b, xf_b),
        (G::Circle(_), _)
        | (G::Capsule(_), G::Polygon(_) | G::ChainSegment(_))
        | (G::Segment(_), G::Polygon(_))
        | (G::Polygon(_), G::ChainSegment(_)) => {
            // Canonical order puts the more complex shape first (a chain
            // segment before anything it collides with); flip.
            flip(collide(b, xf_b, a, xf_a))
        }
        (G::Polygon(a), G::Capsule(b)) => collide_polygons(a, xf_a, &b.to_polygon(), xf_b),
        (G::Polygon(a), G::Segment(b)) => collide_polygons(a, xf_a, &b.to_polygon(), xf_b),
        (G::Polygon(a), G::Polygon(b)) => collide_polygons(a, xf_a, b, xf_b),
        // Two massless segments never carry a dynamic body between them
        // (Box2D has no segment-chain or chain-chain collision either).
        (G::Segment(_) | G::ChainSegment(_), G::Segment(_) | G::ChainSegment(_)) => {
            Manifold::default()
        }
    }
}

/// Swaps the roles of A and B in a manifold.
fn flip(mut m: Manifold) -> Manifold {
    m.normal = -m.normal;
    m
}

/// Normalises, falling back to `fallback` for a vector shorter than
/// [`Vec2::SHORTEST`] (its length is then zero). The direction is unit
/// length at every length: a circle whose centre lay 15 µm from a chain
/// segment once got a normal 1.37 long, when short vectors were normalised
/// from their Q32.32 square (found by the proptest
/// `chain_segment_collision_is_total`).
#[inline]
fn normalize_or(v: Vec2, fallback: Vec2) -> (Scalar, Vec2) {
    let (len, n) = v.length_and_normalize();
    if n == Vec2::ZERO {
        (len, fallback)
    } else {
        (len, n)
    }
}

/// Circle against circle.
pub fn collide_circles(a: &Circle, xf_a: Transform, b: &Circle, xf_b: Transform) -> Manifold {
    let xf = xf_a.inv_mul(xf_b);
    let pa = a.center;
    let pb = xf.apply(b.center);
    let up = Vec2::new(Scalar::ZERO, Scalar::ONE);
    point_between_discs(pa, a.radius, pb, b.radius, up, xf_a)
}

/// One contact point between two discs at `pa` and `pb` (A's local frame);
/// `fallback` is the normal when the centres coincide.
fn point_between_discs(
    pa: Vec2,
    ra: Scalar,
    pb: Vec2,
    rb: Scalar,
    fallback: Vec2,
    xf_a: Transform,
) -> Manifold {
    let (dist, n) = normalize_or(pb - pa, fallback);
    let sep = dist - ra - rb;
    let mut m = Manifold::default();
    if sep > SPECULATIVE_DISTANCE {
        return m;
    }
    let ca = pa.mul_add(ra, n);
    let cb = pb.mul_sub(rb, n);
    m.normal = n;
    m.push(ca.lerp(cb, Scalar::HALF), sep, 0);
    m.finish(xf_a, Vec2::ZERO);
    m
}

/// Capsule (or segment with radius 0) against circle.
pub fn collide_capsule_circle(
    a: &Capsule,
    xf_a: Transform,
    b: &Circle,
    xf_b: Transform,
) -> Manifold {
    let xf = xf_a.inv_mul(xf_b);
    let pb = xf.apply(b.center);
    let (p1, p2) = (a.c1, a.c2);
    let e = p2 - p1;
    let s1 = (pb - p1).dot(e);
    let s2 = (p2 - pb).dot(e);
    let pa = if s1 < Scalar::ZERO {
        p1
    } else if s2 < Scalar::ZERO {
        p2
    } else {
        p1.mul_add(s1 / e.dot(e), e)
    };
    let side = e.left_perp().normalize();
    point_between_discs(pa, a.radius, pb, b.radius, side, xf_a)
}

/// Polygon (possibly rounded) against circle.
pub fn collide_polygon_circle(
    a: &Polygon,
    xf_a: Transform,
    b: &Circle,
    xf_b: Transform,
) -> Manifold {
    let mut m = Manifold::default();
    let xf = xf_a.inv_mul(xf_b);
    let c = xf.apply(b.center);
    let radius = a.radius + b.radius;
    let n = a.count as usize;
    let mut index = 0;
    let mut separation = Scalar::MIN;
    for i in 0..n {
        let s = a.normals[i].dot(c - a.vertices[i]);
        if s > separation {
            separation = s;
            index = i;
        }
    }
    if separation - radius > SPECULATIVE_DISTANCE {
        return m;
    }
    let v1 = a.vertices[index];
    let v2 = a.vertices[if index + 1 < n { index + 1 } else { 0 }];
    let u1 = (c - v1).dot(v2 - v1);
    let u2 = (c - v2).dot(v1 - v2);
    let vertex = if u1 < Scalar::ZERO && separation > Scalar::ZERO {
        Some(v1)
    } else if u2 < Scalar::ZERO && separation > Scalar::ZERO {
        Some(v2)
    } else {
        None
    };
    let (normal, ca) = match vertex {
        Some(v) => {
            let (dist, normal) = normalize_or(c - v, a.normals[index]);
            if dist - radius > SPECULATIVE_DISTANCE {
                return m;
            }
            (normal, v.mul_add(a.radius, normal))
        }
        None => {
            let normal = a.normals[index];
            (normal, c.mul_sub((c - v1).dot(normal) - a.radius, normal))
        }
    };
    let cb = c.mul_sub(b.radius, normal);
    m.normal = normal;
    m.push(ca.lerp(cb, Scalar::HALF), (cb - ca).dot(normal), 0);
    m.finish(xf_a, Vec2::ZERO);
    m
}

/// `clamp(num / den, 0, 1)` for wide (Q64.64) products, `den > 0`.
///
/// Segment-distance formulas multiply squared lengths; for a 220 m segment
/// those products exceed Q32.32, so they are formed in 128 bits.
fn wide_fraction(num: i128, den: i128) -> Scalar {
    if den <= 0 || num <= 0 {
        return Scalar::ZERO;
    }
    if num >= den {
        return Scalar::ONE;
    }
    let bits = 128 - den.leading_zeros();
    let shift = bits.saturating_sub(94);
    let (num, den) = (num >> shift, (den >> shift).max(1));
    Scalar::from_bits(((num << 32) / den) as i64)
}

#[inline]
fn wide(a: Scalar, b: Scalar) -> i128 {
    a.to_bits() as i128 * b.to_bits() as i128
}

/// Closest points between segments `p1q1` and `p2q2`.
struct SegmentDistance {
    closest1: Vec2,
    closest2: Vec2,
    fraction1: Scalar,
    fraction2: Scalar,
    distance_squared: Scalar,
}

fn segment_distance(p1: Vec2, q1: Vec2, p2: Vec2, q2: Vec2) -> SegmentDistance {
    let d1 = q1 - p1;
    let d2 = q2 - p2;
    let r = p1 - p2;
    let dd1 = d1.dot(d1);
    let dd2 = d2.dot(d2);
    let rd1 = r.dot(d1);
    let rd2 = r.dot(d2);
    let eps = Scalar::from_bits(1 << 8);
    let (f1, f2);
    if dd1 < eps || dd2 < eps {
        if dd1 >= eps {
            f1 = wide_fraction(-(rd1.to_bits() as i128), dd1.to_bits() as i128);
            f2 = Scalar::ZERO;
        } else if dd2 >= eps {
            f1 = Scalar::ZERO;
            f2 = wide_fraction(rd2.to_bits() as i128, dd2.to_bits() as i128);
        } else {
            f1 = Scalar::ZERO;
            f2 = Scalar::ZERO;
        }
    } else {
        let d12 = d1.dot(d2);
        let denom = wide(dd1, dd2) - wide(d12, d12);
        let mut g1 = if denom > 0 {
            wide_fraction(wide(d12, rd2) - wide(rd1, dd2), denom)
        } else {
            Scalar::ZERO
        };
        // f2 = (d12 f1 + rd2) / dd2
        let num2 = wide(d12, g1) + wide(rd2, Scalar::ONE);
        let g2;
        if num2 < 0 {
            g2 = Scalar::ZERO;
            g1 = wide_fraction(-(rd1.to_bits() as i128), dd1.to_bits() as i128);
        } else if num2 > wide(dd2, Scalar::ONE) {
            g2 = Scalar::ONE;
            g1 = wide_fraction((d12 - rd1).to_bits() as i128, dd1.to_bits() as i128);
        } else {
            g2 = wide_fraction(num2, wide(dd2, Scalar::ONE));
        }
        f1 = g1;
        f2 = g2;
    }
    let closest1 = p1.mul_add(f1, d1);
    let closest2 = p2.mul_add(f2, d2);
    SegmentDistance {
        closest1,
        closest2,
        fraction1: f1,
        fraction2: f2,
        distance_squared: (closest2 - closest1).length_squared(),
    }
}

/// Whether segments `(p1, q1)` and `(p2, q2)` are so far apart along x or
/// y that [`segment_distance`] is sure to put them more than
/// `max_distance` apart: its early out, without its products and
/// divisions. In rain, about half of the 15,000 capsule pairs a step are
/// decided here (collide 1.82 → 1.70 ms a step).
///
/// The same answer, shown: each closest point is `p + ⌊f·d⌋` with `f` in
/// [0, 1], which lies in its segment's box (the floor of a product between
/// 0 and `d` stays between them). Boxes more than `max_distance + 2⁻²⁰`
/// apart on an axis put the points more than that apart on it, whose
/// floored square, with the other axis's (never below zero), exceeds the
/// floored `max_distance²` by more than a hundred ulps (`max_distance` is
/// at least the 2 cm speculative distance), provided no square wraps. The
/// squares wrap past 2³¹ m², and a snapshot may hold shapes out to 40 km
/// (two such segments 56 km apart whose fat boxes touch gave a wrapped,
/// negative square, and a contact point, a review found): so the test
/// decides only where both segments' points lie within [`SPAN`] of each
/// other on each axis, where each square is below 2³⁰ m². A world built
/// through the API never reaches that (its boxes lie within ±10 km).
#[inline(always)]
fn apart_along_an_axis(a: (Vec2, Vec2), b: (Vec2, Vec2), max_distance: Scalar) -> bool {
    let reach = max_distance + Scalar::from_bits(1 << 12);
    // Per axis: whether the span is below SPAN, and whether the gap
    // exceeds the reach.
    let axis = |a0: Scalar, a1: Scalar, b0: Scalar, b1: Scalar| {
        let (alo, ahi, blo, bhi) = (a0.min(a1), a0.max(a1), b0.min(b1), b0.max(b1));
        let small = ahi.max(bhi) - alo.min(blo) < SPAN;
        (small, (blo - ahi).max(alo - bhi) > reach)
    };
    let (small_x, apart_x) = axis(a.0.x, a.1.x, b.0.x, b.1.x);
    let (small_y, apart_y) = axis(a.0.y, a.1.y, b.0.y, b.1.y);
    small_x && small_y && (apart_x || apart_y)
}

/// The largest extent on an axis over which [`apart_along_an_axis`]
/// decides: 2¹⁵ m, so that no coordinate difference squared reaches 2³⁰ m².
const SPAN: Scalar = Scalar::from_bits(1 << 47);

/// Capsule against capsule (segments are capsules of radius 0).
pub fn collide_capsules(a: &Capsule, xf_a: Transform, b: &Capsule, xf_b: Transform) -> Manifold {
    let origin = a.c1;
    let xf = xf_a.inv_mul(xf_b);
    let p1 = Vec2::ZERO;
    let q1 = a.c2 - origin;
    let p2 = xf.apply(b.c1) - origin;
    let q2 = xf.apply(b.c2) - origin;
    let (ra, rb) = (a.radius, b.radius);
    let radius = ra + rb;
    let mut m = Manifold::default();
    let max_distance = radius + SPECULATIVE_DISTANCE;
    if apart_along_an_axis((p1, q1), (p2, q2), max_distance) {
        return m;
    }
    let sd = segment_distance(p1, q1, p2, q2);
    if sd.distance_squared > max_distance * max_distance {
        return m;
    }
    // The exact length, not the root of `distance_squared`: that square,
    // in Q32.32, has one ulp at 2⁻¹⁶ m, so its root is rough in deep
    // overlaps (at 15 µm the square is under one ulp and the root 0).
    let distance = (sd.closest2 - sd.closest1).length();
    let d1 = q1 - p1;
    let d2 = q2 - p2;
    let (length1, u1) = d1.length_and_normalize();
    let (length2, u2) = d2.length_and_normalize();

    // Endpoint regions: is either segment entirely beyond the other's ends?
    let fp2 = (p2 - p1).dot(u1);
    let fq2 = (q2 - p1).dot(u1);
    let outside_a =
        (fp2 <= Scalar::ZERO && fq2 <= Scalar::ZERO) || (fp2 >= length1 && fq2 >= length1);
    let fp1 = (p1 - p2).dot(u2);
    let fq1 = (q1 - p2).dot(u2);
    let outside_b =
        (fp1 <= Scalar::ZERO && fq1 <= Scalar::ZERO) || (fp1 >= length2 && fq1 >= length2);

    if !outside_a && !outside_b {
        // Reference edge by separating axis, biased toward A.
        let face = |pa: Vec2, u: Vec2, p: Vec2, q: Vec2| {
            let n = u.left_perp();
            let s1 = (p - pa).dot(n);
            let s2 = (q - pa).dot(n);
            // Separation along +n is the smaller projection; along −n it is
            // the smaller of the negated projections. Keep the larger axis.
            let sp = s1.min(s2);
            let sn = (-s1).min(-s2);
            if sp > sn {
                (sp, n)
            } else {
                (sn, -n)
            }
        };
        let (sep_a, normal_a) = face(p1, u1, p2, q2);
        let (sep_b, normal_b) = face(p2, u2, p1, q1);
        // Clip segment (p, q), with projections fp, fq on the reference axis, to [0, len].
        let clip = |p: Vec2, q: Vec2, fp: Scalar, fq: Scalar, len: Scalar| {
            let (mut cp, mut cq) = (p, q);
            if fp < Scalar::ZERO && fq - fp > CLIP_EPS {
                cp = p.lerp(q, (Scalar::ZERO - fp) / (fq - fp));
            } else if fq < Scalar::ZERO && fp - fq > CLIP_EPS {
                cq = q.lerp(p, (Scalar::ZERO - fq) / (fp - fq));
            }
            if fp > len && fp - fq > CLIP_EPS {
                cp = p.lerp(q, (fp - len) / (fp - fq));
            } else if fq > len && fq - fp > CLIP_EPS {
                cq = q.lerp(p, (fq - len) / (fq - fp));
            }
            (cp, cq)
        };
        if sep_a + LINEAR_SLOP.shr(3) >= sep_b {
            let (cp, cq) = clip(p2, q2, fp2, fq2, length1);
            let sp = (cp - p1).dot(normal_a);
            let sq = (cq - p1).dot(normal_a);
            if sp <= distance + LINEAR_SLOP || sq <= distance + LINEAR_SLOP {
                m.normal = normal_a;
                if sp - radius <= SPECULATIVE_DISTANCE {
                    m.push(cp.mul_add((ra - rb - sp).shr(1), normal_a), sp - radius, 0);
                }
                if sq - radius <= SPECULATIVE_DISTANCE {
                    m.push(cq.mul_add((ra - rb - sq).shr(1), normal_a), sq - radius, 1);
                }
            }
        } else {
            let (cp, cq) = clip(p1, q1, fp1, fq1, length2);
            let sp = (cp - p2).dot(normal_b);
            let sq = (cq - p2).dot(normal_b);
            if sp <= distance + LINEAR_SLOP || sq <= distance + LINEAR_SLOP {
                m.normal = -normal_b;
                if sp - radius <= SPECULATIVE_DISTANCE {
                    m.push(cp.mul_add((rb - ra - sp).shr(1), normal_b), sp - radius, 0);
                }
                if sq - radius <= SPECULATIVE_DISTANCE {
                    m.push(cq.mul_add((rb - ra - sq).shr(1), normal_b), sq - radius, 1);
                }
            }
        }
    }

    if m.count == 0 {
        // Single point between the closest points. The early out above
        // compared floored Q32.32 squares; the exact distance can lie a few
        // ulps past the speculative reach, which the clipped points check
        // too.
        m = Manifold::default();
        if distance - radius > SPECULATIVE_DISTANCE {
            return m;
        }
        let (_, n) = normalize_or(sd.closest2 - sd.closest1, u1.left_perp());
        let ca = sd.closest1.mul_add(ra, n);
        let cb = sd.closest2.mul_sub(rb, n);
        let i1 = usize::from(sd.fraction1 == Scalar::ONE);
        let i2 = usize::from(sd.fraction2 == Scalar::ONE);
        m.normal = n;
        m.push(
            ca.lerp(cb, Scalar::HALF),
            distance - radius,
            make_id(i1, i2),
        );
    }
    m.finish(xf_a, origin);
    m
}

/// Polygon in A's shifted local frame: vertices, normals, radius, count.
#[derive(Clone, Copy)]
struct LocalPolygon {
    v: [Vec2; 8],
    n: [Vec2; 8],
    radius: Scalar,
    count: usize,
}

impl LocalPolygon {
    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 < self.count {
            i + 1
        } else {
            0
        }
    }
}

/// `t·s` for `t` ∈ {−1, 0, 1}: the bits the Q32.32 product gives for
/// those factors (exact, so no rounding to reproduce), without multiplying.
/// Only for `t` known to be one of the three.
#[inline(always)]
fn unit_mul(t: Scalar, s: Scalar) -> Scalar {
    // `t` is −2³², 0 or 2³² raw: one 64-bit product by −1, 0 or 1, no
    // branch (these vary from edge to edge and would mispredict).
    Scalar::from_bits(s.to_bits().wrapping_mul(t.to_bits() >> 32))
}

/// `n·d` for an axis normal `n` (see [`axis_normals`]): the bits of
/// [`Vec2::dot`], whose two products are exact here.
#[inline(always)]
fn axis_dot(n: Vec2, d: Vec2) -> Scalar {
    unit_mul(n.x, d.x) + unit_mul(n.y, d.y)
}

/// `n·d`, with the products skipped when `AXIS` says `n` is an axis normal.
#[inline(always)]
fn dot_n<const AXIS: bool>(n: Vec2, d: Vec2) -> Scalar {
    if AXIS {
        axis_dot(n, d)
    } else {
        n.dot(d)
    }
}

/// Whether every normal is a unit axis vector, (±1, 0) or (0, ±1), bit for
/// bit: a box not turned in its body's frame. Its dot products with the
/// normals, and the normals turned by a rotation, then need no products.
fn axis_normals(normals: &[Vec2]) -> bool {
    let unit = |v: Scalar| v == Scalar::ONE || v == -Scalar::ONE;
    normals
        .iter()
        .all(|n| (unit(n.x) && n.y.is_zero()) || (n.x.is_zero() && unit(n.y)))
}

/// `q` applied to an axis normal `n`: the bits of [`Rot::rotate`].
#[inline(always)]
fn rotate_axis(q: Rot, n: Vec2) -> Vec2 {
    Vec2::new(
        unit_mul(n.x, q.c) - unit_mul(n.y, q.s),
        unit_mul(n.x, q.s) + unit_mul(n.y, q.c),
    )
}

/// The edge of `p1` with the largest separation from `p2`; `AXIS` says
/// `p1`'s normals are axis normals.
fn find_max_separation<const AXIS: bool>(p1: &LocalPolygon, p2: &LocalPolygon) -> (usize, Scalar) {
    let mut best = 0;
    let mut max_sep = Scalar::MIN;
    let verts = &p2.v[..p2.count];
    for (i, (&n, &v1)) in p1.n[..p1.count].iter().zip(&p1.v[..p1.count]).enumerate() {
        // The edge's separation is the minimum over `p2`'s vertices; once
        // that falls to the best so far the edge cannot win, so stop early
        // (the result is the same).
        let mut si = Scalar::MAX;
        for &v in verts {
            si = si.min(dot_n::<AXIS>(n, v - v1));
            if si <= max_sep {
                break;
            }
        }
        if si > max_sep {
            max_sep = si;
            best = i;
        }
    }
    (best, max_sep)
}

/// An axis-aligned rectangle's corners `(x0, y0, x1, y1)`, when `p` is one:
/// four vertices, counter-clockwise from the lower left, with the normals
/// (0, −1), (1, 0), (0, 1), (−1, 0) (a box not turned in its body).
fn axis_rect(p: &LocalPolygon) -> Option<(Scalar, Scalar, Scalar, Scalar)> {
    let (o, z) = (Scalar::ONE, Scalar::ZERO);
    let normals = [
        Vec2::new(z, -o),
        Vec2::new(o, z),
        Vec2::new(z, o),
        Vec2::new(-o, z),
    ];
    let v = &p.v;
    (p.count == 4
        && p.n[..4] == normals
        && v[0].y == v[1].y
        && v[1].x == v[2].x
        && v[2].y == v[3].y
        && v[3].x == v[0].x)
        .then_some((v[0].x, v[0].y, v[2].x, v[2].y))
}

/// [`find_max_separation`] of `p1`'s edges against an axis-aligned
/// rectangle, with the same result from one dot product per edge instead
/// of four. A rounded dot product over the rectangle's corners is
/// `⌊nx·(x − x1)⌋ + ⌊ny·(y − y1)⌋`, a sum of a function of the corner's x
/// and one of its y, each monotone (a floor of a monotone product), so its
/// minimum is at the corner whose x and y each minimise their term: the
/// low side along a positive normal component, the high side along a
/// negative one (either along a zero one, whose product is zero).
fn max_separation_against_rect(
    p1: &LocalPolygon,
    (x0, y0, x1, y1): (Scalar, Scalar, Scalar, Scalar),
) -> (usize, Scalar) {
    let mut best = 0;
    let mut max_sep = Scalar::MIN;
    for (i, (&n, &v1)) in p1.n[..p1.count].iter().zip(&p1.v[..p1.count]).enumerate() {
        let corner = Vec2::new(
            if n.x > Scalar::ZERO { x0 } else { x1 },
            if n.y > Scalar::ZERO { y0 } else { y1 },
        );
        let si = n.dot(corner - v1);
        if si > max_sep {
            max_sep = si;
            best = i;
        }
    }
    (best, max_sep)
}

/// Clips incident edge `edge2` of `poly2` against reference edge `edge1`
/// of `poly1`; `AXIS` says `poly1`'s normals are axis normals.
fn clip_polygons<const AXIS: bool>(
    poly1: &LocalPolygon,
    poly2: &LocalPolygon,
    edge1: usize,
    edge2: usize,
    flip: bool,
    m: &mut Manifold,
) {
    let (i11, i12) = (edge1, poly1.next(edge1));
    let (i21, i22) = (edge2, poly2.next(edge2));
    let v11 = poly1.v[i11];
    let v12 = poly1.v[i12];
    let v21 = poly2.v[i21];
    let v22 = poly2.v[i22];
    let normal = poly1.n[i11];
    let tangent = normal.left_perp();
    let lower1 = Scalar::ZERO;
    let upper1 = dot_n::<AXIS>(tangent, v12 - v11);
    // The incident edge runs against the tangent (both polygons are CCW).
    let upper2 = dot_n::<AXIS>(tangent, v21 - v11);
    let lower2 = dot_n::<AXIS>(tangent, v22 - v11);
    if upper2 < lower1 || upper1 < lower2 {
        // The edges do not overlap along the reference face: no points
        // (Box2D's clipping; a vertex pair may still touch, see the caller).
        return;
    }
    let span = upper2 - lower2;
    let v_lower = if lower2 < lower1 && span > CLIP_EPS {
        v22.lerp(v21, (lower1 - lower2) / span)
    } else {
        v22
    };
    let v_upper = if upper2 > upper1 && span > CLIP_EPS {
        v22.lerp(v21, (upper1 - lower2) / span)
    } else {
        v21
    };
    let sep_lower = dot_n::<AXIS>(normal, v_lower - v11);
    let sep_upper = dot_n::<AXIS>(normal, v_upper - v11);
    let (r1, r2) = (poly1.radius, poly2.radius);
    // Contact points midway between the surfaces: `v + k·n`.
    let shift = |v: Vec2, k: Scalar| {
        if AXIS {
            Vec2::new(v.x + unit_mul(normal.x, k), v.y + unit_mul(normal.y, k))
        } else {
            v.mul_add(k, normal)
        }
    };
    let v_lower = shift(v_lower, (r1 - r2 - sep_lower).shr(1));
    let v_upper = shift(v_upper, (r1 - r2 - sep_upper).shr(1));
    let radius = r1 + r2;
    let (s_lower, s_upper) = (sep_lower - radius, sep_upper - radius);
    if !flip {
        m.normal = normal;
        if s_lower <= SPECULATIVE_DISTANCE {
            m.push(v_lower, s_lower, make_id(i11, i22));
        }
        if s_upper <= SPECULATIVE_DISTANCE {
            m.push(v_upper, s_upper, make_id(i12, i21));
        }
    } else {
        m.normal = -normal;
        if s_upper <= SPECULATIVE_DISTANCE {
            m.push(v_upper, s_upper, make_id(i21, i12));
        }
        if s_lower <= SPECULATIVE_DISTANCE {
            m.push(v_lower, s_lower, make_id(i22, i11));
        }
    }
}

/// Polygon against polygon (capsules and segments enter as two-vertex polygons).
pub fn collide_polygons(a: &Polygon, xf_a: Transform, b: &Polygon, xf_b: Transform) -> Manifold {
    let mut m = Manifold::EMPTY;
    collide_polygons_into(a, xf_a, b, xf_b, &mut m);
    m
}

/// [`collide_polygons`] written into `m`.
fn collide_polygons_into(
    a: &Polygon,
    xf_a: Transform,
    b: &Polygon,
    xf_b: Transform,
    m: &mut Manifold,
) {
    *m = Manifold::EMPTY;
    let origin = a.vertices[0];
    let xf = xf_a.inv_mul(xf_b);
    let mut pa = LocalPolygon {
        v: [Vec2::ZERO; 8],
        n: a.normals,
        radius: a.radius,
        count: a.count as usize,
    };
    for i in 0..pa.count {
        pa.v[i] = a.vertices[i] - origin;
    }
    let mut pb = LocalPolygon {
        v: [Vec2::ZERO; 8],
        n: [Vec2::ZERO; 8],
        radius: b.radius,
        count: b.count as usize,
    };
    // `apply(v) − origin` is `rotate(v) + (p − origin)`: sums are exact.
    b.transform_into(Transform::new(xf.p - origin, xf.q), &mut pb.v);
    // Boxes not turned in their body have axis normals, whose dot products
    // need no multiplications (the same bits; see `axis_dot`).
    let a_axis = axis_normals(&a.normals[..pa.count]);
    let radius = pa.radius + pb.radius;
    let (edge_a, sep_a) = if a_axis {
        find_max_separation::<true>(&pa, &pb)
    } else {
        find_max_separation::<false>(&pa, &pb)
    };
    if sep_a - radius > SPECULATIVE_DISTANCE {
        return;
    }
    // B's normals are only needed once A's faces failed to separate.
    let b_axis = axis_normals(&b.normals[..pb.count]);
    // Two loops, not one with a branch inside: LLVM turned that one into
    // AVX-512 gathers and scatters, which cost 13 % of this function on
    // Zen 4 (the same bits either way). The axis loop turns all eight
    // slots, whose fixed count it unrolls: over the first `count` it still
    // gathered and scattered, 14 % of this function in tumbler. The slots
    // past `count` are never read.
    if b_axis {
        pb.n = b.normals.map(|bn| rotate_axis(xf.q, bn));
    } else {
        for (n, &bn) in pb.n.iter_mut().zip(&b.normals).take(pb.count) {
            *n = xf.q.rotate(bn);
        }
    }
    // Turned by a quarter turn or none, B's normals are axis normals too.
    let pb_axis = b_axis && axis_normals(&pb.n[..pb.count]);
    let (edge_b, sep_b) = if pb_axis {
        find_max_separation::<true>(&pb, &pa)
    } else if let (true, Some(rect)) = (a_axis, axis_rect(&pa)) {
        max_separation_against_rect(&pb, rect)
    } else {
        find_max_separation::<false>(&pb, &pa)
    };
    if sep_b - radius > SPECULATIVE_DISTANCE {
        return;
    }
    // Prefer A's face unless B's is clearly better, so the reference face
    // does not flip-flop between steps.
    let flip = sep_b > sep_a;
    let (poly1, poly2, edge1, separation, axis1, axis2) = if flip {
        (&pb, &pa, edge_b, sep_b, pb_axis, a_axis)
    } else {
        (&pa, &pb, edge_a, sep_a, a_axis, pb_axis)
    };
    // Incident edge: the face of poly2 most anti-parallel to the reference normal.
    let n1 = poly1.n[edge1];
    let mut edge2 = 0;
    let mut min_dot = Scalar::MAX;
    for i in 0..poly2.count {
        let n2 = poly2.n[i];
        let d = if axis1 {
            axis_dot(n1, n2)
        } else if axis2 {
            axis_dot(n2, n1)
        } else {
            n1.dot(n2)
        };
        if d < min_dot {
            min_dot = d;
            edge2 = i;
        }
    }
    // Apart (beyond a tenth of the slop, as Box2D): the closest features
    // of the two edges. When they are two vertices, that single point is
    // a candidate, taken only if it is clearly farther apart than the
    // clipped edges' points (Box2D v3's order since its "tunable ccd"
    // revisions). Taking it whenever the closest features are vertices
    // made two parallel, overlapping edges a millimetre apart (a stack
    // with small gaps) touch at one corner only: the segment distance of
    // parallel edges ends at vertices, and the one-corner contact turned
    // each box as it landed, which tall columns turned into sideways
    // sway and collapse.
    let vertex = if separation > VERTEX_MARGIN {
        let (i11, i12) = (edge1, poly1.next(edge1));
        let (i21, i22) = (edge2, poly2.next(edge2));
        let (v11, v12, v21, v22) = (poly1.v[i11], poly1.v[i12], poly2.v[i21], poly2.v[i22]);
        let sd = segment_distance(v11, v12, v21, v22);
        let end1 = sd.fraction1 == Scalar::ZERO || sd.fraction1 == Scalar::ONE;
        let end2 = sd.fraction2 == Scalar::ZERO || sd.fraction2 == Scalar::ONE;
        if end1 && end2 {
            let (distance, mut normal) = normalize_or(sd.closest2 - sd.closest1, n1);
            if distance - radius > SPECULATIVE_DISTANCE {
                return;
            }
            let c1 = sd.closest1.mul_add(poly1.radius, normal);
            let c2 = sd.closest2.mul_sub(poly2.radius, normal);
            let j1 = if sd.fraction1 == Scalar::ZERO {
                i11
            } else {
                i12
            };
            let j2 = if sd.fraction2 == Scalar::ZERO {
                i21
            } else {
                i22
            };
            let id = if flip {
                normal = -normal;
                make_id(j2, j1)
            } else {
                make_id(j1, j2)
            };
            Some((normal, c1.lerp(c2, Scalar::HALF), distance - radius, id))
        } else {
            None
        }
    } else {
        None
    };
    if axis1 {
        clip_polygons::<true>(poly1, poly2, edge1, edge2, flip, m);
    } else {
        clip_polygons::<false>(poly1, poly2, edge1, edge2, flip, m);
    }
    if let Some((normal, point, separation, id)) = vertex {
        let clipped = m.points[..usize::from(m.count)]
            .iter()
            .fold(Scalar::MAX, |s, p| s.min(p.separation));
        if separation + VERTEX_MARGIN < clipped {
            *m = Manifold::EMPTY;
            m.normal = normal;
            m.push(point, separation, id);
            m.finish(xf_a, origin);
            return;
        }
    }
    if axis1 {
        m.finish_axis(xf_a, origin);
    } else {
        m.finish(xf_a, origin);
    }
}

/// Tolerance of the chain tests on sines (Box2D's 0.01).
const CHAIN_SIN_TOL: Scalar = Scalar::milli(10);

/// How a candidate normal sits in a chain segment's Gauss map (Box2D's
/// `b2NormalType`, after "ghost collisions", box2d.org 2020-06).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NormalClass {
    /// Not smooth against a convex neighbour: the neighbour owns it.
    Skip,
    /// Smooth: use it.
    Admit,
    /// In the region of a concave corner: snap to the segment's normal.
    Snap,
}

/// A chain segment's edge directions and the normals of its neighbours,
/// in A's shifted frame.
#[derive(Clone, Copy, Debug)]
struct ChainParams {
    edge1: Vec2,
    normal0: Vec2,
    normal2: Vec2,
    convex1: bool,
    convex2: bool,
}

impl ChainParams {
    fn new(ghost1: Vec2, p1: Vec2, p2: Vec2, ghost2: Vec2) -> ChainParams {
        let edge1 = (p2 - p1).normalize();
        let edge0 = (p1 - ghost1).normalize();
        let edge2 = (ghost2 - p2).normalize();
        ChainParams {
            edge1,
            normal0: edge0.right_perp(),
            normal2: edge2.right_perp(),
            convex1: edge0.cross(edge1) >= CHAIN_SIN_TOL,
            convex2: edge1.cross(edge2) >= CHAIN_SIN_TOL,
        }
    }

    fn classify(&self, normal: Vec2) -> NormalClass {
        if normal.dot(self.edge1) <= Scalar::ZERO {
            // Towards the segment's tail.
            if !self.convex1 {
                NormalClass::Snap
            } else if normal.cross(self.normal0) > CHAIN_SIN_TOL {
                NormalClass::Skip
            } else {
                NormalClass::Admit
            }
        } else if !self.convex2 {
            NormalClass::Snap
        } else if self.normal2.cross(normal) > CHAIN_SIN_TOL {
            NormalClass::Skip
        } else {
            NormalClass::Admit
        }
    }
}

/// Chain segment against circle: one-sided, and only in the segment's own
/// Voronoi region (a circle past an end belongs to the neighbour).
pub fn collide_chain_segment_circle(
    a: &ChainSegment,
    xf_a: Transform,
    b: &Circle,
    xf_b: Transform,
) -> Manifold {
    let mut m = Manifold::default();
    let origin = a.segment.p1;
    let xf = xf_a.inv_mul(xf_b);
    let pb = xf.apply(b.center) - origin;
    let p2 = a.segment.p2 - origin;
    let e = p2;
    // The normal points to the right; behind it, nothing.
    if e.right_perp().dot(pb) < Scalar::ZERO {
        return m;
    }
    let u = e.dot(p2 - pb);
    let v = e.dot(pb);
    let pa = if v <= Scalar::ZERO {
        // Before p1: in the previous segment's region?
        if (origin - a.ghost1).dot(pb) <= Scalar::ZERO {
            return m;
        }
        Vec2::ZERO
    } else if u <= Scalar::ZERO {
        // Past p2: in the next segment's region?
        if (a.ghost2 - a.segment.p2).dot(pb - p2) > Scalar::ZERO {
            return m;
        }
        p2
    } else {
        Vec2::ZERO.mul_add(v / e.dot(e), e)
    };
    let (distance, normal) = normalize_or(pb - pa, e.right_perp().normalize());
    let separation = distance - b.radius;
    if separation > SPECULATIVE_DISTANCE {
        return m;
    }
    let cb = pb.mul_sub(b.radius, normal);
    m.normal = normal;
    m.push(pa.lerp(cb, Scalar::HALF), separation, 0);
    m.finish(xf_a, origin);
    m
}

/// Box2D's segment clipping for chains: incident edge `b1`–`b2` clipped to
/// reference edge `a1`–`a2` (normal `normal`, radii `ra`, `rb`); both
/// points are kept, as Box2D's `b2ClipSegments` keeps them.
#[allow(clippy::too_many_arguments)]
fn clip_segments(
    (a1, a2): (Vec2, Vec2),
    (b1, b2): (Vec2, Vec2),
    normal: Vec2,
    ra: Scalar,
    rb: Scalar,
    id1: u16,
    id2: u16,
    m: &mut Manifold,
) {
    let tangent = normal.left_perp();
    let lower1 = Scalar::ZERO;
    let upper1 = (a2 - a1).dot(tangent);
    // The incident edge runs against the tangent.
    let upper2 = (b1 - a1).dot(tangent);
    let lower2 = (b2 - a1).dot(tangent);
    if upper2 < lower1 || upper1 < lower2 {
        return;
    }
    let span = upper2 - lower2;
    let v_lower = if lower2 < lower1 && span > CLIP_EPS {
        b2.lerp(b1, (lower1 - lower2) / span)
    } else {
        b2
    };
    let v_upper = if upper2 > upper1 && span > CLIP_EPS {
        b2.lerp(b1, (upper1 - lower2) / span)
    } else {
        b1
    };
    let sep_lower = (v_lower - a1).dot(normal);
    let sep_upper = (v_upper - a1).dot(normal);
    let radius = ra + rb;
    m.normal = normal;
    m.push(
        v_lower.mul_add((ra - rb - sep_lower).shr(1), normal),
        sep_lower - radius,
        id1,
    );
    m.push(
        v_upper.mul_add((ra - rb - sep_upper).shr(1), normal),
        sep_upper - radius,
        id2,
    );
}

/// Chain segment against polygon (and capsule, as a two-vertex polygon):
/// Box2D v3's smooth one-sided collision. The polygon's closest features
/// decide when it is clear of the segment; otherwise separating axes, where
/// only normals the neighbouring segments do not own are candidates, so a
/// body sliding along the chain never meets a joint between segments.
pub fn collide_chain_segment_polygon(
    a: &ChainSegment,
    xf_a: Transform,
    b: &Polygon,
    xf_b: Transform,
) -> Manifold {
    let mut m = Manifold::EMPTY;
    // A's frame, shifted so that p1 is the origin.
    let origin = a.segment.p1;
    let xf = xf_a.inv_mul(xf_b);
    let shifted = Transform::new(xf.p - origin, xf.q);
    let centroid = shifted.apply(b.centroid);
    let radius_b = b.radius;
    let (p1, p2) = (Vec2::ZERO, a.segment.p2 - origin);
    let params = ChainParams::new(a.ghost1 - origin, p1, p2, a.ghost2 - origin);
    let normal1 = params.edge1.right_perp();
    let behind1 = normal1.dot(centroid - p1) < Scalar::ZERO;
    let behind0 = !params.convex1 || params.normal0.dot(centroid - p1) < Scalar::ZERO;
    let behind2 = !params.convex2 || params.normal2.dot(centroid - p2) < Scalar::ZERO;
    if behind1 && behind0 && behind2 {
        // One-sided: behind every face it could meet.
        return m;
    }
    let count = usize::from(b.count).min(crate::geometry::MAX_POLYGON_VERTICES);
    let mut vertices = [Vec2::ZERO; crate::geometry::MAX_POLYGON_VERTICES];
    b.transform_into(shifted, &mut vertices);
    let mut normals = [Vec2::ZERO; crate::geometry::MAX_POLYGON_VERTICES];
    for (n, &bn) in normals.iter_mut().zip(&b.normals).take(count) {
        *n = xf.q.rotate(bn);
    }
    let next = |i: usize| if i + 1 < count { i + 1 } else { 0 };
    // The closest features, without radii (distance does not work with
    // the partial polygon the neighbours make of the segment).
    let (out, cache) = shape_distance_features(
        &DistanceProxy::new(&[p1, p2], Scalar::ZERO),
        Transform::IDENTITY,
        &DistanceProxy::new(&vertices[..count], Scalar::ZERO),
        Transform::IDENTITY,
    );
    if out.distance > radius_b + SPECULATIVE_DISTANCE {
        return m;
    }
    // Concave neighbours' normals snap to the segment's.
    let n0 = if params.convex1 {
        params.normal0
    } else {
        normal1
    };
    let n2 = if params.convex2 {
        params.normal2
    } else {
        normal1
    };
    // The incident vertex, or the incident edge, on the polygon.
    let mut incident_index: Option<usize> = None;
    let mut incident_normal: Option<usize> = None;
    // Whether a reference edge of the polygon is hidden by a neighbour:
    // the segment vertex it would meet belongs to the neighbour.
    let neighbour_incident = |n: Vec2, b1: Vec2| {
        let (d1, d2) = (n.dot(p1 - b1), n.dot(p2 - b1));
        if d1 < d2 {
            n0.dot(n) < normal1.dot(n)
        } else {
            n2.dot(n) < normal1.dot(n)
        }
    };
    if !behind1 && out.distance > VERTEX_MARGIN {
        // Clear of the segment: the closest features may be two vertices
        // or a vertex and an edge even where a face contact is due.
        if cache.count == 1 {
            let (pa, pb) = (out.point_a, out.point_b);
            let normal = (pb - pa).normalize();
            match params.classify(normal) {
                NormalClass::Skip => return m,
                NormalClass::Admit => {
                    m.normal = normal;
                    m.push(
                        pa,
                        out.distance - radius_b,
                        make_id(cache.index_a[0].into(), cache.index_b[0].into()),
                    );
                    m.finish(xf_a, origin);
                    return m;
                }
                NormalClass::Snap => incident_index = Some(cache.index_b[0].into()),
            }
        } else {
            let (ia1, ia2) = (cache.index_a[0], cache.index_a[1]);
            let (ib1, ib2) = (usize::from(cache.index_b[0]), usize::from(cache.index_b[1]));
            if ia1 == ia2 {
                // A segment vertex against a polygon edge: the polygon
                // normal most along the gap names the edge.
                let gap = out.point_a - out.point_b;
                let ib = if gap.dot(normals[ib1]) > gap.dot(normals[ib2]) {
                    ib1
                } else {
                    ib2
                };
                let normal_b = normals[ib];
                match params.classify(-normal_b) {
                    NormalClass::Skip => return m,
                    NormalClass::Admit => {
                        let (j1, j2) = (ib, next(ib));
                        let (b1, b2) = (vertices[j1], vertices[j2]);
                        if neighbour_incident(normal_b, b1) {
                            return m;
                        }
                        clip_segments(
                            (b1, b2),
                            (p1, p2),
                            normal_b,
                            radius_b,
                            Scalar::ZERO,
                            make_id(j1, 1),
                            make_id(j2, 0),
                            &mut m,
                        );
                        if m.count == 2 {
                            m.normal = -normal_b;
                            m.finish(xf_a, origin);
                        }
                        return m;
                    }
                    NormalClass::Snap => incident_normal = Some(ib),
                }
            } else {
                // A segment edge against a polygon vertex: the deeper one.
                let d1 = normal1.dot(vertices[ib1] - p1);
                let d2 = normal1.dot(vertices[ib2] - p2);
                incident_index = Some(if d1 < d2 { ib1 } else { ib2 });
            }
        }
    } else {
        // Separating axes. The segment's normal, then its convex
        // neighbours' (which own the separation when they win).
        let min_along = |n: Vec2, from: Vec2| {
            vertices[..count]
                .iter()
                .enumerate()
                .fold((Scalar::MAX, 0), |(best, bi), (i, &v)| {
                    let s = n.dot(v - from);
                    if s < best {
                        (s, i)
                    } else {
                        (best, bi)
                    }
                })
        };
        let (mut edge_separation, deepest) = min_along(normal1, p1);
        let mut owned = true;
        if params.convex1 {
            let (s0, _) = min_along(params.normal0, p1);
            if s0 > edge_separation {
                edge_separation = s0;
                owned = false;
            }
        }
        if params.convex2 {
            let (s2, _) = min_along(params.normal2, p2);
            if s2 > edge_separation {
                edge_separation = s2;
                owned = false;
            }
        }
        // The polygon's normals the segment admits.
        let mut polygon_separation = Scalar::MIN;
        let mut reference = None;
        for i in 0..count {
            let n = normals[i];
            if params.classify(-n) != NormalClass::Admit {
                continue;
            }
            let v = vertices[i];
            let s = n.dot(p2 - v).min(n.dot(p1 - v));
            if s > polygon_separation {
                polygon_separation = s;
                reference = Some(i);
            }
        }
        if let (Some(i1), true) = (reference, polygon_separation > edge_separation) {
            let i2 = next(i1);
            let (a1, a2) = (vertices[i1], vertices[i2]);
            let n = normals[i1];
            if neighbour_incident(n, a1) {
                return m;
            }
            clip_segments(
                (a1, a2),
                (p1, p2),
                n,
                radius_b,
                Scalar::ZERO,
                make_id(i1, 1),
                make_id(i2, 0),
                &mut m,
            );
            if m.count == 2 {
                m.normal = -n;
                m.finish(xf_a, origin);
            }
            return m;
        }
        if !owned {
            // A neighbouring segment is the separating axis.
            return m;
        }
        incident_index = Some(deepest);
    }
    // The segment's normal is the reference: the incident polygon edge is
    // the one beside the incident vertex most against it (or the edge
    // already found).
    let (ib1, ib2) = match (incident_normal, incident_index) {
        (Some(i), _) => (i, next(i)),
        (None, Some(i2)) => {
            let i1 = if i2 > 0 { i2 - 1 } else { count - 1 };
            if normal1.dot(normals[i1]) < normal1.dot(normals[i2]) {
                (i1, i2)
            } else {
                (i2, next(i2))
            }
        }
        (None, None) => return m,
    };
    clip_segments(
        (p1, p2),
        (vertices[ib1], vertices[ib2]),
        normal1,
        Scalar::ZERO,
        radius_b,
        make_id(0, ib2),
        make_id(1, ib1),
        &mut m,
    );
    if m.count == 2 {
        m.finish(xf_a, origin);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{fx, Rot};
    use proptest::prelude::*;

    fn any_scalar() -> impl Strategy<Value = Scalar> {
        prop_oneof![
            Just(Scalar::MIN),
            Just(Scalar::MAX),
            Just(Scalar::ZERO),
            Just(Scalar::EPSILON),
            Just(-Scalar::EPSILON),
            any::<i64>().prop_map(Scalar::from_bits),
            (-(1i64 << 40)..(1i64 << 40)).prop_map(Scalar::from_bits),
        ]
    }

    const AXES: [Vec2; 4] = [
        Vec2::new(Scalar::ONE, Scalar::ZERO),
        Vec2::new(Scalar::ZERO, Scalar::ONE),
        Vec2::new(Scalar::from_int(-1), Scalar::ZERO),
        Vec2::new(Scalar::ZERO, Scalar::from_int(-1)),
    ];

    proptest! {
        /// The product-free forms give the bits of the general ones, for
        /// every value including the wrapping extremes.
        #[test]
        fn axis_forms_match_products(x in any_scalar(), y in any_scalar(), c in any_scalar(), s in any_scalar(), k in 0usize..4) {
            let n = AXES[k];
            let d = Vec2::new(x, y);
            prop_assert_eq!(axis_dot(n, d), n.dot(d));
            prop_assert_eq!(axis_dot(n, d), d.dot(n));
            let q = Rot { c, s };
            prop_assert_eq!(rotate_axis(q, n), q.rotate(n));
        }

        /// Where the axis test calls two segments apart, the segment
        /// distance does too: segments up to 256 m long anywhere in
        /// ±256 m, the second placed within 2¹⁴ ulps of `max_distance`
        /// beyond the first on either side along either axis (the closest
        /// calls; the test must say apart from 2¹² ulps on), and a second
        /// pair with its points anywhere within ±64 km (where squares of
        /// distances wrap).
        #[test]
        fn apart_along_an_axis_only_where_segment_distance_agrees(
            (p1x, p1y, q1x, q1y) in (-(1i64 << 40)..1 << 40, -(1i64 << 40)..1 << 40, -(1i64 << 40)..1 << 40, -(1i64 << 40)..1 << 40),
            (along, across0, across1) in (0i64..1 << 40, -(1i64 << 40)..1 << 40, -(1i64 << 40)..1 << 40),
            (radius, slack, axis, above, level) in (0i64..1 << 34, -(1i64 << 14)..1 << 14, 0usize..2, any::<bool>(), any::<bool>()),
            (p2x, p2y, q2x, q2y) in (-(1i64 << 48)..1 << 48, -(1i64 << 48)..1 << 48, -(1i64 << 48)..1 << 48, -(1i64 << 48)..1 << 48),
            (p3x, p3y, q3x, q3y) in (-(1i64 << 48)..1 << 48, -(1i64 << 48)..1 << 48, -(1i64 << 48)..1 << 48, -(1i64 << 48)..1 << 48),
        ) {
            let sc = Scalar::from_bits;
            let max_distance = sc(radius) + SPECULATIVE_DISTANCE;
            let (p1, q1) = (Vec2::new(sc(p1x), sc(p1y)), Vec2::new(sc(q1x), sc(q1y)));
            let far = |p1: Vec2, q1: Vec2, p2: Vec2, q2: Vec2| {
                segment_distance(p1, q1, p2, q2).distance_squared > max_distance * max_distance
            };
            // Along `axis`, B's box begins `max_distance + slack` beyond A's.
            let (a_lo, a_hi) = if axis == 0 {
                (p1x.min(q1x), p1x.max(q1x))
            } else {
                (p1y.min(q1y), p1y.max(q1y))
            };
            // Level with A's end on that side across the axis (the
            // closest call), or anywhere.
            let end = match (axis, above == (if axis == 0 { q1x > p1x } else { q1y > p1y })) {
                (0, true) => q1y,
                (0, false) => p1y,
                (_, true) => q1x,
                (_, false) => p1x,
            };
            let across0 = if level { end } else { across0 };
            let reach = max_distance.to_bits();
            let (near, far_end) = if above {
                (a_hi + reach + slack, a_hi + reach + slack + along)
            } else {
                (a_lo - reach - slack, a_lo - reach - slack - along)
            };
            let (p2, q2) = if axis == 0 {
                (Vec2::new(sc(near), sc(across0)), Vec2::new(sc(far_end), sc(across1)))
            } else {
                (Vec2::new(sc(across0), sc(near)), Vec2::new(sc(across1), sc(far_end)))
            };
            let apart = apart_along_an_axis((p1, q1), (p2, q2), max_distance);
            prop_assert_eq!(apart, apart_along_an_axis((p1, q1), (q2, p2), max_distance));
            if slack > 1 << 12 {
                prop_assert!(apart);
            }
            if apart {
                prop_assert!(far(p1, q1, p2, q2));
                prop_assert!(far(p1, q1, q2, p2));
            }
            let (p2, q2) = (Vec2::new(sc(p2x), sc(p2y)), Vec2::new(sc(q2x), sc(q2y)));
            let (p3, q3) = (Vec2::new(sc(p3x), sc(p3y)), Vec2::new(sc(q3x), sc(q3y)));
            if apart_along_an_axis((p3, q3), (p2, q2), max_distance) {
                prop_assert!(far(p3, q3, p2, q2));
            }
        }

        /// The rectangle shortcut gives the general search's edge and
        /// separation, for boxes of any size, turn and offset in the world.
        #[test]
        fn rect_separation_matches_the_general_search(
            (hx, hy, bx, by) in (1i64 << 28..1 << 36, 1i64 << 28..1 << 36, 1i64 << 28..1 << 36, 1i64 << 28..1 << 36),
            (px, py) in (-(1i64 << 45)..1 << 45, -(1i64 << 45)..1 << 45),
            angle in -(1i64 << 34)..1 << 34,
            (ox, oy) in (-(1i64 << 40)..1 << 40, -(1i64 << 40)..1 << 40),
        ) {
            let sc = Scalar::from_bits;
            // A rectangle in A's shifted frame (corners from the lower left).
            let (x0, y0) = (sc(ox), sc(oy));
            let (x1, y1) = (x0 + sc(2 * hx), y0 + sc(2 * hy));
            let (o, z) = (Scalar::ONE, Scalar::ZERO);
            let mut pa = LocalPolygon { v: [Vec2::ZERO; 8], n: [Vec2::ZERO; 8], radius: z, count: 4 };
            pa.v[..4].copy_from_slice(&[Vec2::new(x0, y0), Vec2::new(x1, y0), Vec2::new(x1, y1), Vec2::new(x0, y1)]);
            pa.n[..4].copy_from_slice(&[Vec2::new(z, -o), Vec2::new(o, z), Vec2::new(z, o), Vec2::new(-o, z)]);
            let origin = Vec2::ZERO;
            let b = Polygon::make_box(sc(bx), sc(by));
            let q = Rot::from_angle(sc(angle));
            let mut pb = LocalPolygon { v: [Vec2::ZERO; 8], n: [Vec2::ZERO; 8], radius: b.radius, count: 4 };
            b.transform_into(Transform::new(Vec2::new(sc(px), sc(py)) - origin, q), &mut pb.v);
            for i in 0..4 {
                pb.n[i] = q.rotate(b.normals[i]);
            }
            let rect = axis_rect(&pa);
            prop_assert_eq!(rect, Some((x0, y0, x1, y1)));
            prop_assert_eq!(
                max_separation_against_rect(&pb, rect.unwrap()),
                find_max_separation::<false>(&pb, &pa)
            );
        }
    }

    /// Two segments 56 km apart out where a snapshot may put them (40 km
    /// from the origin), whose fat boxes touch: the square of their
    /// distance wraps, and the segment distance does not call them apart.
    /// Nor may the axis test (it did before it bounded the span, found by
    /// a review).
    #[test]
    fn the_axis_test_leaves_wrapping_squares_to_the_segment_distance() {
        let (z, cm3) = (Scalar::ZERO, Scalar::milli(30));
        let (p1, q1) = (Vec2::new(fx(-39_900), z), Vec2::new(z, fx(-39_900)));
        let (p2, q2) = (Vec2::new(cm3, fx(40_000)), Vec2::new(fx(40_000), cm3));
        let max_distance = SPECULATIVE_DISTANCE;
        let sd = segment_distance(p1, q1, p2, q2);
        assert!(
            sd.distance_squared <= max_distance * max_distance,
            "the square wraps"
        );
        assert!(!apart_along_an_axis((p1, q1), (p2, q2), max_distance));
    }

    #[test]
    fn axis_rect_only_for_boxes_not_turned_in_their_body() {
        let local = |p: &Polygon| {
            let mut l = LocalPolygon {
                v: [Vec2::ZERO; 8],
                n: p.normals,
                radius: p.radius,
                count: p.count as usize,
            };
            l.v[..l.count].copy_from_slice(&p.vertices[..l.count]);
            l
        };
        let b = Polygon::make_box(Scalar::HALF, Scalar::TWO);
        assert_eq!(
            axis_rect(&local(&b)),
            Some((-Scalar::HALF, -Scalar::TWO, Scalar::HALF, Scalar::TWO))
        );
        let turned = Polygon::make_offset_box(
            Scalar::HALF,
            Scalar::HALF,
            Vec2::ZERO,
            Rot::from_angle(Scalar::milli(100)),
        );
        assert_eq!(axis_rect(&local(&turned)), None);
        let tri = Polygon::new(
            &[Vec2::ZERO, Vec2::from_ints(1, 0), Vec2::from_ints(0, 1)],
            Scalar::ZERO,
        )
        .unwrap();
        assert_eq!(axis_rect(&local(&tri)), None);
    }

    #[test]
    fn axis_normals_only_for_exact_unit_axes() {
        assert!(axis_normals(&AXES));
        assert!(axis_normals(
            &Polygon::make_box(Scalar::HALF, Scalar::TWO).normals[..4]
        ));
        let turned = Polygon::make_offset_box(
            Scalar::HALF,
            Scalar::HALF,
            Vec2::ZERO,
            Rot::from_angle(Scalar::milli(100)),
        );
        assert!(!axis_normals(&turned.normals[..4]));
        let almost = [Vec2::new(Scalar::ONE - Scalar::EPSILON, Scalar::ZERO)];
        assert!(!axis_normals(&almost));
        assert!(!axis_normals(&[Vec2::new(Scalar::ONE, Scalar::EPSILON)]));
    }

    fn xf(x: Scalar, y: Scalar) -> Transform {
        Transform::new(Vec2::new(x, y), Rot::IDENTITY)
    }

    #[test]
    fn box_resting_on_ground_gives_two_points() {
        let ground = Polygon::make_box(fx(10), fx(1));
        let bx = Polygon::make_box(Scalar::HALF, Scalar::HALF);
        // Box bottom at y = -0.01: 1 cm of overlap.
        let m = collide_polygons(
            &ground,
            xf(Scalar::ZERO, fx(-1)),
            &bx,
            xf(fx(2), Scalar::HALF - Scalar::milli(10)),
        );
        assert_eq!(m.count, 2);
        assert_eq!(m.normal, Vec2::new(Scalar::ZERO, Scalar::ONE));
        for p in m.points() {
            assert_eq!(p.separation, -Scalar::milli(10));
        }
        let xs = [m.points[0].point.x, m.points[1].point.x];
        assert!(xs.contains(&Scalar::ratio(3, 2)) && xs.contains(&Scalar::ratio(5, 2)));
    }

    #[test]
    fn separated_beyond_margin_gives_nothing() {
        let a = Polygon::make_box(fx(1), fx(1));
        let m = collide_polygons(&a, xf(fx(0), fx(0)), &a, xf(fx(3), fx(0)));
        assert_eq!(m.count, 0);
        let c = Circle {
            center: Vec2::ZERO,
            radius: fx(1),
        };
        let m = collide_circles(
            &c,
            xf(fx(0), fx(0)),
            &c,
            xf(fx(2) + Scalar::milli(10), fx(0)),
        );
        assert_eq!(m.count, 1, "speculative contact within 2 cm");
        assert!((m.points[0].separation - Scalar::milli(10)).abs() < Scalar::from_bits(64));
    }

    #[test]
    fn circle_on_polygon_face_and_corner() {
        let a = Polygon::make_box(fx(1), fx(1));
        let c = Circle {
            center: Vec2::ZERO,
            radius: Scalar::HALF,
        };
        let m = collide_polygon_circle(
            &a,
            xf(fx(0), fx(0)),
            &c,
            xf(Scalar::ZERO, Scalar::ratio(3, 2)),
        );
        assert_eq!(m.count, 1);
        assert_eq!(m.normal, Vec2::new(Scalar::ZERO, Scalar::ONE));
        assert_eq!(m.points[0].separation, Scalar::ZERO);
        // Near the corner (1, 1), diagonal.
        let m = collide_polygon_circle(
            &a,
            xf(fx(0), fx(0)),
            &c,
            xf(Scalar::ratio(13, 10), Scalar::ratio(13, 10)),
        );
        assert_eq!(m.count, 1);
        assert!(m.normal.x > Scalar::ratio(7, 10) && m.normal.y > Scalar::ratio(7, 10));
    }

    #[test]
    fn capsules_parallel_give_two_points() {
        let c = Capsule {
            c1: Vec2::from_ints(-1, 0),
            c2: Vec2::from_ints(1, 0),
            radius: Scalar::HALF,
        };
        let m = collide_capsules(
            &c,
            xf(fx(0), fx(0)),
            &c,
            xf(Scalar::HALF, Scalar::ONE - Scalar::milli(5)),
        );
        assert_eq!(m.count, 2);
        assert_eq!(m.normal, Vec2::new(Scalar::ZERO, Scalar::ONE));
        // Far apart along the axis: no contact.
        let m = collide_capsules(&c, xf(fx(0), fx(0)), &c, xf(fx(4), fx(0)));
        assert_eq!(m.count, 0);
    }

    #[test]
    fn capsules_whose_segments_nearly_touch_get_the_exact_separation() {
        // B's end 15 µm above A's axis: the Q32.32 square of that distance
        // is under one ulp, so its root was 0 and the separation 15 µm too
        // deep.
        let d = Scalar::from_bits(64_424);
        let a = Capsule {
            c1: Vec2::ZERO,
            c2: Vec2::from_ints(1, 0),
            radius: Scalar::ratio(1, 10),
        };
        let b = Capsule {
            c1: Vec2::new(Scalar::HALF, d),
            c2: Vec2::new(Scalar::HALF, Scalar::ONE),
            radius: Scalar::ratio(1, 10),
        };
        let m = collide_capsules(&a, xf(fx(0), fx(0)), &b, xf(fx(0), fx(0)));
        assert_eq!(m.count, 1);
        assert_eq!(m.normal, Vec2::new(Scalar::ZERO, Scalar::ONE));
        assert_eq!(m.points[0].separation, d - (a.radius + b.radius));
    }

    #[test]
    fn a_single_capsule_point_stays_within_the_speculative_reach() {
        // Found by review: the early out compares floored squares, so a
        // pair 2 ulps past the reach got through it, and the exact
        // distance then gave a point beyond the reach.
        let a = Capsule {
            c1: Vec2::ZERO,
            c2: Vec2::from_ints(1, 0),
            radius: Scalar::ZERO,
        };
        let at = |y: Scalar| Capsule {
            c1: Vec2::new(Scalar::HALF, y),
            c2: Vec2::new(Scalar::HALF, Scalar::ONE),
            radius: Scalar::ZERO,
        };
        let past = SPECULATIVE_DISTANCE + Scalar::from_bits(2);
        let m = collide_capsules(&a, xf(fx(0), fx(0)), &at(past), xf(fx(0), fx(0)));
        assert_eq!(m.count, 0);
        let m = collide_capsules(
            &a,
            xf(fx(0), fx(0)),
            &at(SPECULATIVE_DISTANCE),
            xf(fx(0), fx(0)),
        );
        assert_eq!(m.count, 1);
        assert_eq!(m.points[0].separation, SPECULATIVE_DISTANCE);
    }

    #[test]
    fn capsule_standing_on_a_long_segment_is_supported() {
        // Regression: a capsule standing almost upright on a long segment
        // picked the capsule's side as the reference face and fell through.
        let seg = Capsule {
            c1: Vec2::from_ints(-110, 0),
            c2: Vec2::from_ints(110, 0),
            radius: Scalar::ZERO,
        };
        let cap = Capsule {
            c1: Vec2::from_ints(0, -1),
            c2: Vec2::from_ints(0, 1),
            radius: Scalar::ratio(1, 4),
        };
        let tilt = Rot::from_angle(Scalar::ratio(1, 50));
        let xf_b = Transform::new(
            Vec2::new(Scalar::ZERO, Scalar::ratio(5, 4) - Scalar::milli(3)),
            tilt,
        );
        let m = collide_capsules(&seg, xf(fx(0), fx(0)), &cap, xf_b);
        assert_eq!(m.count, 1);
        assert!(m.normal.y > Scalar::ratio(99, 100), "{:?}", m.normal);
        assert!(
            m.points[0].separation < Scalar::ZERO && m.points[0].separation > -Scalar::milli(10)
        );
    }

    #[test]
    fn long_segment_against_box_does_not_overflow() {
        let seg = crate::geometry::Segment {
            p1: Vec2::from_ints(-110, 0),
            p2: Vec2::from_ints(110, 0),
        };
        let bx = Polygon::make_box(Scalar::HALF, Scalar::HALF);
        let g = ShapeGeometry::Segment(seg);
        let b = ShapeGeometry::Polygon(bx);
        let m = collide(
            &b,
            xf(fx(50), Scalar::HALF + Scalar::milli(15)),
            &g,
            xf(fx(0), fx(0)),
        );
        assert_eq!(m.count, 2);
        assert_eq!(m.normal, Vec2::new(Scalar::ZERO, -Scalar::ONE));
    }

    /// A flat open chain along y = 0, solid side up (points right to left),
    /// with 1 m segments; the middle one is returned.
    fn flat_chain_segment(x: i32) -> ChainSegment {
        ChainSegment::new(
            Vec2::from_ints(x + 2, 0),
            Vec2::from_ints(x + 1, 0),
            Vec2::from_ints(x, 0),
            Vec2::from_ints(x - 1, 0),
        )
        .unwrap()
    }

    #[test]
    fn a_box_across_a_chain_joint_meets_both_segments_face_on() {
        // A box resting across the joint at x = 0: each segment gives face
        // points with the up normal, never a corner normal.
        let bx = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        let at = xf(Scalar::milli(200), Scalar::HALF - Scalar::milli(2));
        for x in [0, -1] {
            let g = ShapeGeometry::ChainSegment(flat_chain_segment(x));
            let m = collide(&g, xf(fx(0), fx(0)), &bx, at);
            assert_eq!(m.count, 2, "segment at {x}");
            assert_eq!(m.normal, Vec2::new(Scalar::ZERO, Scalar::ONE));
            for p in m.points() {
                assert!(p.separation.abs() < Scalar::milli(3), "{p:?}");
            }
        }
    }

    #[test]
    fn a_chain_segment_ignores_what_is_behind_it() {
        let g = ShapeGeometry::ChainSegment(flat_chain_segment(0));
        let bx = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        let ball = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap());
        for shape in [&bx, &ball] {
            // Overlapping from below (centre under the line): nothing.
            let below = xf(Scalar::HALF, -Scalar::milli(100));
            assert_eq!(collide(&g, xf(fx(0), fx(0)), shape, below).count, 0);
            assert_eq!(collide(shape, below, &g, xf(fx(0), fx(0))).count, 0);
            // From above: a contact, the normal from the chain to the body.
            let above = xf(Scalar::HALF, Scalar::milli(450));
            let up = |n: Vec2| n.x.is_zero() && (n.y - Scalar::ONE).abs() < Scalar::milli(1);
            let m = collide(&g, xf(fx(0), fx(0)), shape, above);
            assert!(m.count > 0);
            assert!(up(m.normal), "{m:?}");
            let m = collide(shape, above, &g, xf(fx(0), fx(0)));
            assert!(m.count > 0 && up(-m.normal), "{m:?}");
        }
    }

    proptest! {
        /// Any chain segment (up to 64 m from the origin) against a body
        /// beside it at any turn: no panic, at most two points, and a unit
        /// normal when there are points.
        #[test]
        fn chain_segment_collision_is_total(
            pts in proptest::collection::vec((-(1i64 << 38)..1 << 38, -(1i64 << 38)..1 << 38), 4),
            along in 0i64..1 << 32,
            (ox, oy) in (-(3i64 << 31)..3 << 31, -(3i64 << 31)..3 << 31),
            angle in -(1i64 << 34)..1 << 34,
            kind in 0usize..3,
        ) {
            let v = |(x, y): (i64, i64)| Vec2::new(Scalar::from_bits(x), Scalar::from_bits(y));
            let Ok(chain) = ChainSegment::new(v(pts[0]), v(pts[1]), v(pts[2]), v(pts[3])) else {
                return Ok(());
            };
            let g = ShapeGeometry::ChainSegment(chain);
            let body = match kind {
                0 => ShapeGeometry::Polygon(Polygon::make_rounded_box(Scalar::HALF, Scalar::ONE, Scalar::milli(50))),
                1 => ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap()),
                _ => ShapeGeometry::Capsule(Capsule::new(Vec2::from_ints(-1, 0), Vec2::from_ints(1, 0), Scalar::HALF).unwrap()),
            };
            // Placed beside the segment (within 1.5 m of a point on it),
            // where contacts happen.
            let on = chain.segment.p1.lerp(chain.segment.p2, Scalar::from_bits(along));
            let at = Transform::new(on + v((ox, oy)), Rot::from_angle(Scalar::from_bits(angle)));
            for m in [collide(&g, Transform::IDENTITY, &body, at), collide(&body, at, &g, Transform::IDENTITY)] {
                prop_assert!(m.count <= 2);
                if m.count > 0 {
                    let len = m.normal.length();
                    prop_assert!((len - Scalar::ONE).abs() < Scalar::milli(1), "{:?}", m);
                }
            }
        }
    }
}

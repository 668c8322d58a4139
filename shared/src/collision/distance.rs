//! Distance between convex shapes: GJK in fixed point.
//!
//! Every shape is a convex hull of at most eight points plus a rounding
//! radius (a [`DistanceProxy`]): a circle is one point, a capsule or segment
//! two, a polygon its vertices. GJK (Gilbert–Johnson–Keerthi) walks a simplex
//! of Minkowski-difference points toward the origin: it solves for the point
//! of the simplex closest to the origin (barycentric regions of a segment or
//! triangle), searches perpendicular to it for a new support point, and stops
//! when the support point repeats (no progress), when the triangle contains
//! the origin (the cores overlap), or after [`GJK_MAX_ITERATIONS`].
//!
//! Fixed-point care:
//! - the computation runs in A's frame shifted so that A's first point is the
//!   origin, so coordinates are as small as the shapes' relative placement;
//! - the triangle's region tests need products of two areas, which can leave
//!   Q32.32, so they use the *signs* of 128-bit cross products instead;
//! - the iteration count is capped, so the work is bounded and identical on
//!   every machine.

use crate::geometry::{ShapeGeometry, MAX_POLYGON_VERTICES};
use crate::math::{Scalar, Transform, Vec2};

/// Most GJK iterations (each adds one support point).
pub const GJK_MAX_ITERATIONS: u32 = 20;

/// A convex shape as GJK sees it: the hull of `points` grown by `radius`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistanceProxy {
    /// Hull points; only the first `count` are used.
    pub points: [Vec2; MAX_POLYGON_VERTICES],
    /// Number of points (1 to 8).
    pub count: u8,
    /// Rounding radius.
    pub radius: Scalar,
}

impl DistanceProxy {
    /// A proxy from up to eight points (extra points are ignored; an empty
    /// slice gives the single point at the origin).
    pub fn new(points: &[Vec2], radius: Scalar) -> DistanceProxy {
        let n = points.len().clamp(1, MAX_POLYGON_VERTICES);
        let mut p = DistanceProxy {
            points: [Vec2::ZERO; MAX_POLYGON_VERTICES],
            count: n as u8,
            radius,
        };
        for (dst, src) in p.points.iter_mut().zip(points.iter().take(n)) {
            *dst = *src;
        }
        p
    }

    /// The proxy of a shape, in the shape's body frame.
    pub fn from_geometry(g: &ShapeGeometry) -> DistanceProxy {
        match g {
            ShapeGeometry::Circle(c) => DistanceProxy::new(&[c.center], c.radius),
            ShapeGeometry::Capsule(c) => DistanceProxy::new(&[c.c1, c.c2], c.radius),
            ShapeGeometry::Polygon(p) => DistanceProxy::new(p.points(), p.radius),
            ShapeGeometry::Segment(s)
            | ShapeGeometry::ChainSegment(crate::geometry::ChainSegment { segment: s, .. }) => {
                DistanceProxy::new(&[s.p1, s.p2], Scalar::ZERO)
            }
        }
    }

    /// The used points.
    #[inline]
    pub fn points(&self) -> &[Vec2] {
        &self.points[..(self.count as usize).clamp(1, MAX_POLYGON_VERTICES)]
    }
}

/// Result of [`shape_distance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistanceOutput {
    /// Closest point on A's surface (world space).
    pub point_a: Vec2,
    /// Closest point on B's surface (world space).
    pub point_b: Vec2,
    /// Unit vector from A toward B (zero when the cores touch or overlap).
    pub normal: Vec2,
    /// Distance between the surfaces; zero when they touch or overlap.
    pub distance: Scalar,
    /// Distance between the cores (the hulls without radii); zero when they overlap.
    pub core_distance: Scalar,
    /// GJK iterations used.
    pub iterations: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct SimplexVertex {
    /// Support point of A.
    wa: Vec2,
    /// Support point of B.
    wb: Vec2,
    /// `wb − wa`.
    w: Vec2,
    /// Barycentric weight.
    a: Scalar,
    ia: u8,
    ib: u8,
}

#[derive(Clone, Copy, Debug)]
struct Simplex {
    v: [SimplexVertex; 3],
    count: usize,
}

/// 2D cross product in Q64.64 (exact).
#[inline]
fn wide_cross(a: Vec2, b: Vec2) -> i128 {
    a.x.to_bits() as i128 * b.y.to_bits() as i128 - a.y.to_bits() as i128 * b.x.to_bits() as i128
}

/// `num / den` for Q64.64 numerator and denominator (any signs), as Q32.32.
fn wide_ratio(num: i128, den: i128) -> Scalar {
    if den == 0 {
        return Scalar::ZERO;
    }
    // Drop low bits until `num << 32` cannot overflow.
    let mag = num.unsigned_abs().max(den.unsigned_abs());
    let bits = 128 - mag.leading_zeros();
    let shift = bits.saturating_sub(94);
    let (n, d) = (num >> shift, den >> shift);
    if d == 0 {
        return Scalar::ZERO;
    }
    Scalar::from_bits(((n << 32) / d) as i64)
}

impl Simplex {
    /// Closest point of a segment simplex to the origin; drops a vertex
    /// when the origin lies in a vertex region.
    fn solve2(&mut self) {
        let w1 = self.v[0].w;
        let w2 = self.v[1].w;
        let e12 = w2 - w1;
        // w1 region
        let d12_2 = -w1.dot(e12);
        if d12_2 <= Scalar::ZERO {
            self.v[0].a = Scalar::ONE;
            self.count = 1;
            return;
        }
        // w2 region
        let d12_1 = w2.dot(e12);
        if d12_1 <= Scalar::ZERO {
            self.v[1].a = Scalar::ONE;
            self.v[0] = self.v[1];
            self.count = 1;
            return;
        }
        let den = d12_1 + d12_2;
        self.v[0].a = d12_1 / den;
        self.v[1].a = Scalar::ONE - self.v[0].a;
        self.count = 2;
    }

    /// Closest feature of a triangle simplex to the origin.
    fn solve3(&mut self) {
        let w1 = self.v[0].w;
        let w2 = self.v[1].w;
        let w3 = self.v[2].w;
        let e12 = w2 - w1;
        let d12_1 = w2.dot(e12);
        let d12_2 = -w1.dot(e12);
        let e13 = w3 - w1;
        let d13_1 = w3.dot(e13);
        let d13_2 = -w1.dot(e13);
        let e23 = w3 - w2;
        let d23_1 = w3.dot(e23);
        let d23_2 = -w2.dot(e23);
        // Triangle barycentrics: d123_i = n123 · cross_i; only signs and
        // ratios are needed, so keep the exact 128-bit crosses.
        let n123 = wide_cross(e12, e13);
        let c1 = wide_cross(w2, w3);
        let c2 = wide_cross(w3, w1);
        let c3 = wide_cross(w1, w2);
        let pos = |c: i128| -> bool { (c > 0 && n123 > 0) || (c < 0 && n123 < 0) };
        let zero = Scalar::ZERO;
        // w1 region
        if d12_2 <= zero && d13_2 <= zero {
            self.v[0].a = Scalar::ONE;
            self.count = 1;
            return;
        }
        // e12
        if d12_1 > zero && d12_2 > zero && !pos(c3) {
            let den = d12_1 + d12_2;
            self.v[0].a = d12_1 / den;
            self.v[1].a = Scalar::ONE - self.v[0].a;
            self.count = 2;
            return;
        }
        // e13
        if d13_1 > zero && d13_2 > zero && !pos(c2) {
            let den = d13_1 + d13_2;
            self.v[0].a = d13_1 / den;
            self.v[2].a = Scalar::ONE - self.v[0].a;
            self.v[1] = self.v[2];
            self.count = 2;
            return;
        }
        // w2 region
        if d12_1 <= zero && d23_2 <= zero {
            self.v[1].a = Scalar::ONE;
            self.v[0] = self.v[1];
            self.count = 1;
            return;
        }
        // w3 region
        if d13_1 <= zero && d23_1 <= zero {
            self.v[2].a = Scalar::ONE;
            self.v[0] = self.v[2];
            self.count = 1;
            return;
        }
        // e23
        if d23_1 > zero && d23_2 > zero && !pos(c1) {
            let den = d23_1 + d23_2;
            self.v[1].a = d23_1 / den;
            self.v[2].a = Scalar::ONE - self.v[1].a;
            self.v[0] = self.v[2];
            self.count = 2;
            return;
        }
        // Inside the triangle (or on a degenerate one): the cores overlap.
        let sum = c1 + c2 + c3;
        self.v[0].a = wide_ratio(c1, sum);
        self.v[1].a = wide_ratio(c2, sum);
        self.v[2].a = Scalar::ONE - self.v[0].a - self.v[1].a;
        self.count = 3;
    }

    /// Direction toward the origin from the simplex, or `None` when the
    /// origin lies on the simplex (the cores touch).
    fn search_direction(&self) -> Option<Vec2> {
        match self.count {
            1 => {
                let d = -self.v[0].w;
                (d != Vec2::ZERO).then_some(d)
            }
            _ => {
                let e12 = self.v[1].w - self.v[0].w;
                let sgn = wide_cross(e12, -self.v[0].w);
                if sgn > 0 {
                    Some(e12.left_perp())
                } else if sgn < 0 {
                    Some(e12.right_perp())
                } else {
                    None
                }
            }
        }
    }

    /// Closest points on A and B (in the shifted local frame).
    fn witness(&self) -> (Vec2, Vec2) {
        match self.count {
            1 => (self.v[0].wa, self.v[0].wb),
            2 => {
                let (a, b) = (self.v[0], self.v[1]);
                (
                    Vec2::ZERO.mul_add(a.a, a.wa).mul_add(b.a, b.wa),
                    Vec2::ZERO.mul_add(a.a, a.wb).mul_add(b.a, b.wb),
                )
            }
            _ => {
                let p = self.v.iter().fold(Vec2::ZERO, |p, v| p.mul_add(v.a, v.wa));
                (p, p)
            }
        }
    }
}

/// Index of the point furthest along `d` (first one on ties).
#[inline]
fn support(points: &[Vec2], d: Vec2) -> usize {
    let mut best = 0;
    let mut best_dot = points[0].dot(d);
    for (i, p) in points.iter().enumerate().skip(1) {
        let v = p.dot(d);
        if v > best_dot {
            best = i;
            best_dot = v;
        }
    }
    best
}

/// Distance between two convex proxies placed by `xf_a` and `xf_b`.
///
/// The surfaces include the radii: `distance` is zero when the shapes touch
/// or overlap, and then both points are the midpoint of the core witnesses.
pub fn shape_distance(
    a: &DistanceProxy,
    xf_a: Transform,
    b: &DistanceProxy,
    xf_b: Transform,
) -> DistanceOutput {
    shape_distance_features(a, xf_a, b, xf_b).0
}

/// The closest features [`shape_distance`] ended on: the vertex pairs
/// `(index on A, index on B)` of its final simplex (Box2D's simplex
/// cache): one pair for vertex against vertex, two for a vertex against an
/// edge (the pair that shares its index on one side names the vertex).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClosestFeatures {
    /// Number of pairs (1 to 3; 3 means the cores overlap).
    pub count: u8,
    /// Indices on A.
    pub index_a: [u8; 3],
    /// Indices on B.
    pub index_b: [u8; 3],
}

/// [`shape_distance`] and the features it ended on.
pub fn shape_distance_features(
    a: &DistanceProxy,
    xf_a: Transform,
    b: &DistanceProxy,
    xf_b: Transform,
) -> (DistanceOutput, ClosestFeatures) {
    let pa_src = a.points();
    let pb_src = b.points();
    let origin = pa_src[0];
    let xf = xf_a.inv_mul(xf_b);
    // All eight of A's slots (those past `count` are never read): a loop
    // over the first `count` became AVX-512 gathers and scatters.
    let pa = a.points.map(|p| p - origin);
    let mut pb = [Vec2::ZERO; MAX_POLYGON_VERTICES];
    for (d, s) in pb.iter_mut().zip(pb_src) {
        *d = xf.apply(*s) - origin;
    }
    let (pa, pb) = (&pa[..pa_src.len()], &pb[..pb_src.len()]);

    let first = SimplexVertex {
        wa: pa[0],
        wb: pb[0],
        w: pb[0] - pa[0],
        a: Scalar::ONE,
        ia: 0,
        ib: 0,
    };
    let mut s = Simplex {
        v: [first; 3],
        count: 1,
    };
    let mut saved = [(0u8, 0u8); 3];
    let mut iterations = 0;
    while iterations < GJK_MAX_ITERATIONS {
        let saved_count = s.count;
        for (k, v) in s.v[..saved_count].iter().enumerate() {
            saved[k] = (v.ia, v.ib);
        }
        match s.count {
            2 => s.solve2(),
            3 => s.solve3(),
            _ => {}
        }
        if s.count == 3 {
            break;
        }
        let Some(d) = s.search_direction() else {
            break;
        };
        let ia = support(pa, -d);
        let ib = support(pb, d);
        iterations += 1;
        let key = (ia as u8, ib as u8);
        if saved[..saved_count].contains(&key) {
            // No progress: the simplex is as close as it gets.
            break;
        }
        s.v[s.count] = SimplexVertex {
            wa: pa[ia],
            wb: pb[ib],
            w: pb[ib] - pa[ia],
            a: Scalar::ZERO,
            ia: ia as u8,
            ib: ib as u8,
        };
        s.count += 1;
    }

    let mut features = ClosestFeatures {
        count: s.count as u8,
        index_a: [0; 3],
        index_b: [0; 3],
    };
    for (k, v) in s.v[..s.count].iter().enumerate() {
        features.index_a[k] = v.ia;
        features.index_b[k] = v.ib;
    }
    let (mut wa, mut wb) = s.witness();
    let (core, n) = if s.count == 3 {
        wb = wa;
        (Scalar::ZERO, Vec2::ZERO)
    } else {
        (wb - wa).length_and_normalize()
    };
    let radii = a.radius + b.radius;
    let distance = if core > radii && n != Vec2::ZERO {
        wa = wa.mul_add(a.radius, n);
        wb = wb.mul_sub(b.radius, n);
        core - radii
    } else {
        let mid = wa.lerp(wb, Scalar::HALF);
        wa = mid;
        wb = mid;
        Scalar::ZERO
    };
    (
        DistanceOutput {
            point_a: xf_a.apply(wa + origin),
            point_b: xf_a.apply(wb + origin),
            normal: xf_a.q.rotate(n),
            distance,
            core_distance: core,
            iterations,
        },
        features,
    )
}

/// Whether two shapes touch or overlap.
pub fn shapes_overlap(
    a: &ShapeGeometry,
    xf_a: Transform,
    b: &ShapeGeometry,
    xf_b: Transform,
) -> bool {
    let pa = DistanceProxy::from_geometry(a);
    let pb = DistanceProxy::from_geometry(b);
    shape_distance(&pa, xf_a, &pb, xf_b).distance.is_zero()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Polygon;
    use crate::math::{fx, Rot};

    fn xf(x: Scalar, y: Scalar) -> Transform {
        Transform::new(Vec2::new(x, y), Rot::IDENTITY)
    }

    fn boxp(h: Scalar) -> DistanceProxy {
        let p = Polygon::make_box(h, h);
        DistanceProxy::new(p.points(), Scalar::ZERO)
    }

    #[test]
    fn box_to_box_distance_is_exact() {
        let b = boxp(fx(1));
        let out = shape_distance(&b, xf(fx(0), fx(0)), &b, xf(fx(5), Scalar::HALF));
        assert_eq!(out.distance, fx(3));
        assert_eq!(out.normal, Vec2::new(fx(1), fx(0)));
        assert_eq!(out.point_a.x, fx(1));
        assert_eq!(out.point_b.x, fx(4));
    }

    #[test]
    fn circles_and_capsules_use_their_radii() {
        let c = DistanceProxy::new(&[Vec2::ZERO], Scalar::HALF);
        let out = shape_distance(&c, xf(fx(0), fx(0)), &c, xf(fx(0), fx(3)));
        assert_eq!(out.distance, fx(2));
        assert_eq!(out.normal, Vec2::new(fx(0), fx(1)));
        assert_eq!(out.point_a, Vec2::new(fx(0), Scalar::HALF));
        let cap = DistanceProxy::new(&[Vec2::from_ints(-2, 0), Vec2::from_ints(2, 0)], fx(1));
        let out = shape_distance(&cap, xf(fx(0), fx(0)), &c, xf(fx(1), fx(4)));
        assert_eq!(out.distance, Scalar::ratio(5, 2));
        assert_eq!(out.point_a, Vec2::new(fx(1), fx(1)));
    }

    #[test]
    fn overlapping_and_touching_give_zero() {
        let b = boxp(fx(1));
        let out = shape_distance(&b, xf(fx(0), fx(0)), &b, xf(Scalar::HALF, fx(1)));
        assert_eq!(out.distance, Scalar::ZERO);
        assert_eq!(out.core_distance, Scalar::ZERO);
        // Faces exactly touching.
        let out = shape_distance(&b, xf(fx(0), fx(0)), &b, xf(fx(2), Scalar::ratio(1, 3)));
        assert_eq!(out.distance, Scalar::ZERO);
        // Rotated box, corner into face.
        let rot = Transform::new(
            Vec2::new(Scalar::ratio(23, 10), fx(0)),
            Rot::from_angle(Scalar::ratio(785, 1000)),
        );
        let out = shape_distance(&b, xf(fx(0), fx(0)), &b, rot);
        assert_eq!(out.distance, Scalar::ZERO, "{out:?}");
    }

    #[test]
    fn rotated_box_corner_distance() {
        // A box rotated by 45° has its corner √2 from its centre.
        let b = boxp(fx(1));
        let q = Rot::from_angle(Scalar::PI.shr(2));
        let out = shape_distance(
            &b,
            xf(fx(0), fx(0)),
            &b,
            Transform::new(Vec2::from_ints(4, 0), q),
        );
        let want = fx(3) - fx(2).sqrt();
        assert!(
            (out.distance - want).abs() < Scalar::from_bits(1 << 12),
            "{out:?}"
        );
        assert!((out.normal.x - fx(1)).abs() < Scalar::from_bits(1 << 12));
    }

    #[test]
    fn far_apart_large_shapes_do_not_overflow() {
        let seg = DistanceProxy::new(
            &[Vec2::from_ints(-110, 0), Vec2::from_ints(110, 0)],
            Scalar::ZERO,
        );
        let b = boxp(Scalar::HALF);
        // The witness on a long segment is a weighted sum: a few units of rounding.
        let out = shape_distance(&seg, xf(fx(0), fx(0)), &b, xf(fx(100), fx(3)));
        assert!(
            (out.distance - Scalar::ratio(5, 2)).abs() < Scalar::from_bits(64),
            "{out:?}"
        );
        let out = shape_distance(&seg, xf(fx(0), fx(0)), &b, xf(fx(9000), fx(-7000)));
        let want =
            (Vec2::from_ints(9000 - 110, -7000) + Vec2::new(-Scalar::HALF, Scalar::HALF)).length();
        assert!(
            (out.distance - want).abs() < Scalar::from_bits(1 << 20),
            "{out:?} {want}"
        );
    }
}

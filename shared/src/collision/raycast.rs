//! Ray casts and point tests against single shapes, in fixed point.
//!
//! A ray is an origin and a translation; it hits a shape at the smallest
//! fraction `t ∈ [0, 1]` where `origin + t · translation` enters the shape.
//! A ray that starts inside a shape, or on its boundary, does not hit it.
//!
//! The work happens in the shape's body frame (the ray is moved there, which
//! is exact for unrotated bodies) and the hit is moved back to world space.
//!
//! - **Sharp polygons** clip the ray against every edge's half-plane (the
//!   slab method). Entry and exit fractions are kept as exact ratios
//!   `num / den` and compared with 128-bit cross products, so the entering
//!   edge is chosen without rounding.
//! - **Rounded polygons, capsules and segments** are the union of their
//!   edges pushed out by the radius and a disc at every vertex; the first
//!   entry into a union is the earliest entry into any part, and the only
//!   parts a ray from outside can enter first are the outer faces and the
//!   discs. A segment is a two-vertex polygon with radius zero and two
//!   opposite faces, so it is hit from either side.
//! - **Circles** solve the quadratic along the unit direction (magnitudes
//!   stay within Q32.32 for rays inside the world bounds).
//!
//! The hit point of a face hit is `origin + translation · num / den` with a
//! single rounding per component: when the true point is representable (an
//! axis-aligned box hit at a round coordinate) it is exact.

use crate::geometry::ShapeGeometry;
use crate::math::{Scalar, Transform, Vec2};

/// Where a ray enters a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CastOutput {
    /// World point of entry.
    pub point: Vec2,
    /// Outward unit surface normal at the point.
    pub normal: Vec2,
    /// Fraction of the translation at the point, in `[0, 1]`.
    pub fraction: Scalar,
}

/// Casts a ray from `origin` along `translation` at a shape placed by `xf`.
///
/// Returns `None` when the ray misses, stops short, or starts inside or on
/// the boundary of the shape.
pub fn ray_cast(
    g: &ShapeGeometry,
    xf: Transform,
    origin: Vec2,
    translation: Vec2,
) -> Option<CastOutput> {
    let p = xf.inv_apply(origin);
    let d = xf.q.inv_rotate(translation);
    let hit = match g {
        ShapeGeometry::Circle(c) => ray_circle(c.center, c.radius, p, d),
        ShapeGeometry::Capsule(c) => {
            let n = two_sided_normals(c.c1, c.c2);
            ray_rounded(&[c.c1, c.c2], &n, c.radius, p, d)
        }
        ShapeGeometry::Segment(s) => {
            let n = two_sided_normals(s.p1, s.p2);
            ray_rounded(&[s.p1, s.p2], &n, Scalar::ZERO, p, d)
        }
        ShapeGeometry::ChainSegment(c) => {
            // One-sided: a ray from behind (left of p1 → p2) passes through.
            let s = &c.segment;
            if (p - s.p1).cross(s.p2 - s.p1) < Scalar::ZERO {
                return None;
            }
            let n = two_sided_normals(s.p1, s.p2);
            ray_rounded(&[s.p1, s.p2], &n, Scalar::ZERO, p, d)
        }
        ShapeGeometry::Polygon(poly) => {
            let n = poly.count as usize;
            if poly.radius.is_zero() && n >= 3 {
                ray_polygon(&poly.vertices[..n], &poly.normals[..n], p, d)
            } else {
                ray_rounded(&poly.vertices[..n], &poly.normals[..n], poly.radius, p, d)
            }
        }
    }?;
    Some(CastOutput {
        point: xf.apply(hit.point),
        normal: xf.q.rotate(hit.normal),
        fraction: hit.fraction,
    })
}

/// Whether a world point lies inside (or on the boundary of) a shape.
/// Segments have no area and contain no points.
pub fn test_point(g: &ShapeGeometry, xf: Transform, point: Vec2) -> bool {
    let p = xf.inv_apply(point);
    match g {
        ShapeGeometry::Circle(c) => (p - c.center).length_squared() <= c.radius * c.radius,
        ShapeGeometry::Capsule(c) => {
            distance_squared_to_segment(p, c.c1, c.c2) <= c.radius * c.radius
        }
        ShapeGeometry::Polygon(poly) => {
            let n = poly.count as usize;
            contains_rounded(&poly.vertices[..n], &poly.normals[..n], poly.radius, p)
        }
        ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_) => false,
    }
}

/// A hit in the shape's frame.
#[derive(Clone, Copy, Debug)]
struct LocalHit {
    point: Vec2,
    normal: Vec2,
    fraction: Scalar,
}

/// Normals of the two faces of a segment `a → b` (right side, then left).
fn two_sided_normals(a: Vec2, b: Vec2) -> [Vec2; 2] {
    let n = (b - a).right_perp().normalize();
    [n, -n]
}

/// `p + d · (num / den)`, one rounding per component (`den ≠ 0`, `|num / den| ≤ 1`).
#[inline]
fn along(p: Vec2, d: Vec2, num: Scalar, den: Scalar) -> Vec2 {
    let (n, m) = (num.to_bits() as i128, den.to_bits() as i128);
    let f = |pc: Scalar, dc: Scalar| pc + Scalar::from_bits((dc.to_bits() as i128 * n / m) as i64);
    Vec2::new(f(p.x, d.x), f(p.y, d.y))
}

/// An exact ratio `num / den` with `den > 0`.
#[derive(Clone, Copy, Debug)]
struct Ratio {
    num: Scalar,
    den: Scalar,
}

impl Ratio {
    /// `self < o`, exactly.
    #[inline]
    fn lt(self, o: Ratio) -> bool {
        let a = self.num.to_bits() as i128 * o.den.to_bits() as i128;
        let b = o.num.to_bits() as i128 * self.den.to_bits() as i128;
        a < b
    }
}

/// Slab clipping against a sharp convex polygon (CCW, outward normals).
fn ray_polygon(v: &[Vec2], normals: &[Vec2], p: Vec2, d: Vec2) -> Option<LocalHit> {
    let mut lower = Ratio {
        num: Scalar::ZERO,
        den: Scalar::ONE,
    };
    let mut upper = Ratio {
        num: Scalar::ONE,
        den: Scalar::ONE,
    };
    let mut index = None;
    for (i, (&vi, &n)) in v.iter().zip(normals).enumerate() {
        // Inside the half-plane of edge i: n · (x − vi) ≤ 0, x = p + t d.
        let num = n.dot(vi - p);
        let den = n.dot(d);
        if den.is_zero() {
            if num < Scalar::ZERO {
                return None; // parallel and outside
            }
            continue;
        }
        if den < Scalar::ZERO {
            // Entering: t ≥ num / den.
            let t = Ratio {
                num: -num,
                den: -den,
            };
            if lower.lt(t) {
                lower = t;
                index = Some(i);
            }
        } else {
            // Leaving: t ≤ num / den.
            let t = Ratio { num, den };
            if t.lt(upper) {
                upper = t;
            }
        }
        if upper.lt(lower) {
            return None;
        }
    }
    let i = index?;
    Some(LocalHit {
        point: along(p, d, lower.num, lower.den),
        normal: normals[i],
        fraction: lower.num / lower.den,
    })
}

/// First entry into a disc, or `None` from inside or on it.
fn ray_circle(center: Vec2, radius: Scalar, p: Vec2, d: Vec2) -> Option<LocalHit> {
    let s = p - center;
    let cc = s.length_squared() - radius * radius;
    if cc <= Scalar::ZERO {
        return None;
    }
    let (len, u) = d.length_and_normalize();
    if len.is_zero() {
        return None;
    }
    let b = s.dot(u);
    if b >= Scalar::ZERO {
        return None; // moving away
    }
    let disc = b * b - cc;
    if disc < Scalar::ZERO {
        return None;
    }
    let dist = -b - disc.sqrt();
    if dist < Scalar::ZERO || dist > len {
        return None;
    }
    let point = p.mul_add(dist, u);
    let normal = (point - center).normalize();
    Some(LocalHit {
        point,
        normal,
        fraction: dist / len,
    })
}

/// Squared distance from `p` to the segment `a`–`b`.
fn distance_squared_to_segment(p: Vec2, a: Vec2, b: Vec2) -> Scalar {
    let e = b - a;
    let ee = e.dot(e);
    let t = (p - a).dot(e);
    let c = if t <= Scalar::ZERO || ee.is_zero() {
        a
    } else if t >= ee {
        b
    } else {
        a.mul_add(t / ee, e)
    };
    (p - c).length_squared()
}

/// Whether `p` is within `radius` of the convex hull of `v` (boundary included).
fn contains_rounded(v: &[Vec2], normals: &[Vec2], radius: Scalar, p: Vec2) -> bool {
    let n = v.len();
    if n >= 3 {
        let inside = v
            .iter()
            .zip(normals)
            .all(|(&vi, &ni)| ni.dot(p - vi) <= Scalar::ZERO);
        // A sharp polygon is its core; a squared distance could underflow to 0.
        if inside || radius.is_zero() {
            return inside;
        }
    }
    let rr = radius * radius;
    (0..n).any(|i| distance_squared_to_segment(p, v[i], v[(i + 1) % n]) <= rr)
}

/// First entry into a rounded convex shape: outer faces and vertex discs.
fn ray_rounded(v: &[Vec2], normals: &[Vec2], radius: Scalar, p: Vec2, d: Vec2) -> Option<LocalHit> {
    if contains_rounded(v, normals, radius, p) {
        return None;
    }
    let n = v.len();
    let mut best: Option<LocalHit> = None;
    let mut consider = |h: LocalHit| {
        if best.is_none_or(|b| h.fraction < b.fraction) {
            best = Some(h);
        }
    };
    for i in 0..n {
        let (v1, v2, nrm) = (v[i], v[(i + 1) % n], normals[i]);
        let den = nrm.dot(d);
        if den >= Scalar::ZERO {
            continue; // not moving into the face
        }
        let q = v1.mul_add(radius, nrm);
        let num = nrm.dot(q - p);
        // num < 0: the origin is outside the face plane; t = num / den ≤ 1.
        if num >= Scalar::ZERO || num < den {
            continue;
        }
        let x = along(p, d, num, den);
        let e = v2 - v1;
        let s = (x - q).dot(e);
        if s < Scalar::ZERO || s > e.dot(e) {
            continue; // beyond the face's ends: a disc decides
        }
        consider(LocalHit {
            point: x,
            normal: nrm,
            fraction: num / den,
        });
    }
    if radius > Scalar::ZERO {
        for &c in v {
            if let Some(h) = ray_circle(c, radius, p, d) {
                consider(h);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Capsule, Circle, Polygon, Segment};
    use crate::math::{fx, Rot};

    fn at(x: i32, y: i32) -> Transform {
        Transform::new(Vec2::from_ints(x, y), Rot::IDENTITY)
    }

    #[test]
    fn ray_hits_box_face_exactly() {
        let g = ShapeGeometry::Polygon(Polygon::make_box(fx(1), fx(1)));
        let o = Vec2::new(fx(-5), Scalar::HALF);
        let h = ray_cast(&g, at(0, 0), o, Vec2::from_ints(10, 0)).unwrap();
        assert_eq!(h.point, Vec2::new(fx(-1), Scalar::HALF));
        assert_eq!(h.normal, Vec2::from_ints(-1, 0));
        assert_eq!(h.fraction, Scalar::ratio(4, 10));
        // Too short, pointing away, from inside.
        assert!(ray_cast(&g, at(0, 0), o, Vec2::from_ints(3, 0)).is_none());
        assert!(ray_cast(&g, at(0, 0), o, Vec2::from_ints(-3, 0)).is_none());
        assert!(ray_cast(&g, at(0, 0), Vec2::ZERO, Vec2::from_ints(3, 0)).is_none());
        // Starting on the face: no hit.
        let on = Vec2::new(fx(-1), Scalar::HALF);
        assert!(ray_cast(&g, at(0, 0), on, Vec2::from_ints(3, 0)).is_none());
        // Just reaching the face: fraction 1.
        let h = ray_cast(&g, at(0, 0), o, Vec2::from_ints(4, 0)).unwrap();
        assert_eq!(h.fraction, Scalar::ONE);
    }

    #[test]
    fn ray_hits_translated_box_from_above_and_diagonally() {
        let g = ShapeGeometry::Polygon(Polygon::make_box(fx(2), fx(1)));
        let h = ray_cast(
            &g,
            at(3, 4),
            Vec2::from_ints(4, 10),
            Vec2::from_ints(0, -10),
        )
        .unwrap();
        assert_eq!(h.point, Vec2::from_ints(4, 5));
        assert_eq!(h.normal, Vec2::from_ints(0, 1));
        // Diagonal: enters through the left face at y = 3.5.
        let o = Vec2::new(fx(0), Scalar::ratio(5, 2));
        let h = ray_cast(&g, at(3, 4), o, Vec2::from_ints(4, 4)).unwrap();
        assert_eq!(h.point, Vec2::new(fx(1), Scalar::ratio(7, 2)));
        assert_eq!(h.normal, Vec2::from_ints(-1, 0));
    }

    #[test]
    fn ray_hits_circle_exactly() {
        let g = ShapeGeometry::Circle(Circle::new(Vec2::from_ints(1, 0), fx(2)).unwrap());
        let h = ray_cast(&g, at(0, 3), Vec2::from_ints(1, 0), Vec2::from_ints(0, 8)).unwrap();
        assert_eq!(h.point, Vec2::from_ints(1, 1));
        assert_eq!(h.normal, Vec2::from_ints(0, -1));
        assert_eq!(h.fraction, Scalar::ratio(1, 8));
        // 3-4-5: from (−4, −3) toward the centre, radius 2 ⇒ hit at distance 3.
        let g = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(2)).unwrap());
        let h = ray_cast(&g, at(0, 0), Vec2::from_ints(-4, -3), Vec2::from_ints(8, 6)).unwrap();
        let want = Vec2::new(Scalar::ratio(-8, 5), Scalar::ratio(-6, 5));
        assert!((h.point - want).length() < Scalar::from_bits(64), "{h:?}");
        // The unit direction (0.8, 0.6) is not exact in binary: a few units off.
        assert!((h.fraction - Scalar::ratio(3, 10)).abs() < Scalar::from_bits(16));
        // Miss by a hair above the top.
        let o = Vec2::new(fx(-5), fx(2) + Scalar::milli(1));
        assert!(ray_cast(&g, at(0, 0), o, Vec2::from_ints(10, 0)).is_none());
        // From inside.
        assert!(ray_cast(&g, at(0, 0), Vec2::ZERO, Vec2::from_ints(10, 0)).is_none());
    }

    #[test]
    fn ray_hits_capsule_side_and_cap() {
        let cap = Capsule::new(Vec2::from_ints(-2, 0), Vec2::from_ints(2, 0), fx(1)).unwrap();
        let g = ShapeGeometry::Capsule(cap);
        // Side from above.
        let h = ray_cast(&g, at(0, 0), Vec2::from_ints(1, 5), Vec2::from_ints(0, -10)).unwrap();
        assert_eq!(h.point, Vec2::from_ints(1, 1));
        assert_eq!(h.normal, Vec2::from_ints(0, 1));
        assert_eq!(h.fraction, Scalar::ratio(4, 10));
        // End cap along the axis.
        let h = ray_cast(
            &g,
            at(0, 0),
            Vec2::from_ints(10, 0),
            Vec2::from_ints(-10, 0),
        )
        .unwrap();
        assert_eq!(h.point, Vec2::from_ints(3, 0));
        assert_eq!(h.normal, Vec2::from_ints(1, 0));
        // Rotated a quarter turn: the axis is vertical.
        let xf = Transform::new(Vec2::ZERO, Rot::from_angle(Scalar::FRAC_PI_2));
        let h = ray_cast(&g, xf, Vec2::from_ints(5, 1), Vec2::from_ints(-10, 0)).unwrap();
        assert!((h.point - Vec2::from_ints(1, 1)).length() < Scalar::from_bits(1 << 8));
        assert!((h.normal - Vec2::from_ints(1, 0)).length() < Scalar::from_bits(1 << 8));
    }

    #[test]
    fn ray_hits_segment_from_both_sides() {
        let seg = Segment::new(Vec2::from_ints(-1, 0), Vec2::from_ints(1, 0)).unwrap();
        let g = ShapeGeometry::Segment(seg);
        let h = ray_cast(&g, at(0, 0), Vec2::from_ints(0, 2), Vec2::from_ints(0, -4)).unwrap();
        assert_eq!(h.point, Vec2::ZERO);
        assert_eq!(h.normal, Vec2::from_ints(0, 1));
        assert_eq!(h.fraction, Scalar::HALF);
        let h = ray_cast(&g, at(0, 0), Vec2::from_ints(0, -2), Vec2::from_ints(0, 4)).unwrap();
        assert_eq!(h.normal, Vec2::from_ints(0, -1));
        // Past the end.
        let o = Vec2::new(fx(1) + Scalar::milli(1), fx(2));
        assert!(ray_cast(&g, at(0, 0), o, Vec2::from_ints(0, -4)).is_none());
        // Exactly at the end point.
        let h = ray_cast(&g, at(0, 0), Vec2::from_ints(1, 2), Vec2::from_ints(0, -4)).unwrap();
        assert_eq!(h.point, Vec2::from_ints(1, 0));
        // Parallel, along the segment: no crossing.
        assert!(ray_cast(&g, at(0, 0), Vec2::from_ints(-5, 0), Vec2::from_ints(10, 0)).is_none());
    }

    #[test]
    fn ray_hits_rounded_box_face_and_corner() {
        let g = ShapeGeometry::Polygon(Polygon::make_rounded_box(fx(1), fx(1), Scalar::HALF));
        // Face: the surface is at x = −1.5.
        let o = Vec2::new(fx(-5), Scalar::HALF);
        let h = ray_cast(&g, at(0, 0), o, Vec2::from_ints(10, 0)).unwrap();
        assert_eq!(h.point, Vec2::new(-Scalar::ratio(3, 2), Scalar::HALF));
        assert_eq!(h.normal, Vec2::from_ints(-1, 0));
        assert_eq!(h.fraction, Scalar::ratio(35, 100));
        // Corner disc around (1, 1): along y = 1.25 from the right hits x = 1 + √(0.25 − 0.0625).
        let o = Vec2::new(fx(5), Scalar::ratio(5, 4));
        let h = ray_cast(&g, at(0, 0), o, Vec2::from_ints(-10, 0)).unwrap();
        let x = fx(1) + Scalar::ratio(3, 16).sqrt();
        assert!((h.point.x - x).abs() < Scalar::from_bits(16), "{h:?}");
        assert_eq!(h.point.y, Scalar::ratio(5, 4));
        assert!(h.normal.x > Scalar::ratio(8, 10) && h.normal.y > Scalar::ratio(4, 10));
        // Just outside the rounded corner: miss.
        let o = Vec2::new(fx(5), Scalar::ratio(3, 2) + Scalar::milli(1));
        assert!(ray_cast(&g, at(0, 0), o, Vec2::from_ints(-10, 0)).is_none());
        // From inside the rounding skin.
        let o = Vec2::new(Scalar::ratio(6, 5), Scalar::ZERO);
        assert!(ray_cast(&g, at(0, 0), o, Vec2::from_ints(10, 0)).is_none());
    }

    #[test]
    fn ray_hits_rotated_box_exactly_where_expected() {
        // A box rotated 90° is the same box: exact hit with an exact rotation.
        let g = ShapeGeometry::Polygon(Polygon::make_box(fx(2), fx(1)));
        let xf = Transform::new(
            Vec2::ZERO,
            Rot {
                c: Scalar::ZERO,
                s: Scalar::ONE,
            },
        );
        let h = ray_cast(&g, xf, Vec2::from_ints(-5, 0), Vec2::from_ints(10, 0)).unwrap();
        assert_eq!(h.point, Vec2::from_ints(-1, 0));
        assert_eq!(h.normal, Vec2::from_ints(-1, 0));
    }

    #[test]
    fn point_tests() {
        let b = ShapeGeometry::Polygon(Polygon::make_box(fx(1), fx(1)));
        assert!(test_point(&b, at(0, 0), Vec2::ZERO));
        assert!(test_point(&b, at(0, 0), Vec2::from_ints(1, 1)));
        assert!(!test_point(
            &b,
            at(0, 0),
            Vec2::new(fx(1) + Scalar::EPSILON, fx(0))
        ));
        let rb = ShapeGeometry::Polygon(Polygon::make_rounded_box(fx(1), fx(1), Scalar::HALF));
        assert!(test_point(
            &rb,
            at(0, 0),
            Vec2::new(Scalar::ratio(3, 2), fx(0))
        ));
        assert!(!test_point(
            &rb,
            at(0, 0),
            Vec2::new(Scalar::ratio(3, 2), fx(1) + Scalar::milli(1))
        ));
        let c = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(1)).unwrap());
        assert!(test_point(&c, at(5, 0), Vec2::from_ints(6, 0)));
        assert!(!test_point(&c, at(5, 0), Vec2::from_ints(4, 1)));
        let cap = Capsule::new(Vec2::from_ints(-2, 0), Vec2::from_ints(2, 0), fx(1)).unwrap();
        let cap = ShapeGeometry::Capsule(cap);
        assert!(test_point(&cap, at(0, 0), Vec2::from_ints(2, 1)));
        assert!(!test_point(&cap, at(0, 0), Vec2::from_ints(3, 1)));
        assert!(test_point(&cap, at(0, 0), Vec2::from_ints(3, 0)));
        let s = ShapeGeometry::Segment(
            Segment::new(Vec2::from_ints(-1, 0), Vec2::from_ints(1, 0)).unwrap(),
        );
        assert!(!test_point(&s, at(0, 0), Vec2::ZERO));
    }
}

//! Convex polygons of up to eight vertices, with an optional rounding radius.

use super::{GeometryError, MassData};
use crate::math::{prefetch, Aabb, Rot, Scalar, Transform, Vec2, WORLD_BOUND};

/// Most vertices a polygon may have.
pub const MAX_POLYGON_VERTICES: usize = 8;

/// A solid convex polygon, counter-clockwise, with outward edge normals.
///
/// `radius` rounds the polygon (a Minkowski sum with a disc); collision and
/// mass account for it. Normals and centroid are derived data kept beside the
/// vertices for speed. Its canonical encoding holds only the used vertices
/// and normals (see `encoding::compact`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Polygon {
    /// Vertices, counter-clockwise; only the first `count` are used.
    pub vertices: [Vec2; MAX_POLYGON_VERTICES],
    /// Outward unit normal of edge `i` (from vertex `i` to `i + 1`).
    pub normals: [Vec2; MAX_POLYGON_VERTICES],
    /// Centroid of the polygon.
    pub centroid: Vec2,
    /// Rounding radius (zero for sharp corners).
    pub radius: Scalar,
    /// Number of vertices (2 for a segment or capsule used as a polygon).
    pub count: u8,
}

/// Shortest edge a polygon may have: the linear slop.
const MIN_EDGE: Scalar = Scalar::milli(5);

impl Polygon {
    /// Asks for every cache line of the polygon (no effect on the result):
    /// its vertices, normals, centroid, radius and count, wherever in a
    /// line it starts (`prefetch_covers_every_line` in
    /// `world/prefetch.rs` checks the places against the layout).
    #[inline(always)]
    pub(crate) fn prefetch(&self) {
        prefetch(&self.vertices[0]);
        prefetch(&self.vertices[4]);
        prefetch(&self.normals[0]);
        prefetch(&self.normals[4]);
        prefetch(&self.centroid);
        prefetch(&self.count);
    }

    /// Builds a polygon from vertices given in order (either winding).
    ///
    /// # Errors
    /// Fewer than 3 or more than 8 vertices, an edge shorter than 0.005, a
    /// vertex outside the world bounds, or vertices that are not strictly
    /// convex (a reflex or collinear corner).
    pub fn new(points: &[Vec2], radius: Scalar) -> Result<Polygon, GeometryError> {
        let n = points.len();
        if !(3..=MAX_POLYGON_VERTICES).contains(&n) {
            return Err(GeometryError::VertexCount(n));
        }
        if radius < Scalar::ZERO {
            return Err(GeometryError::TooSmall("radius"));
        }
        for p in points {
            if p.x.abs() > WORLD_BOUND || p.y.abs() > WORLD_BOUND {
                return Err(GeometryError::OutOfBounds("vertex"));
            }
        }
        let mut v = [Vec2::ZERO; MAX_POLYGON_VERTICES];
        v[..n].copy_from_slice(points);
        // Orientation from the signed area; flip clockwise input.
        let mut area2 = Scalar::ZERO;
        for i in 0..n {
            area2 += v[i].cross(v[(i + 1) % n]);
        }
        if area2 < Scalar::ZERO {
            v[..n].reverse();
        }
        for i in 0..n {
            let e1 = v[(i + 1) % n] - v[i];
            if e1.length() < MIN_EDGE {
                return Err(GeometryError::TooSmall("edge"));
            }
            let e2 = v[(i + 2) % n] - v[(i + 1) % n];
            // Strict convexity: every corner turns left by a non-trivial amount.
            if e1.cross(e2) <= Scalar::from_bits(1 << 12) {
                return Err(GeometryError::NotConvex((i + 1) % n));
            }
        }
        Ok(Polygon::from_ccw(&v[..n], radius))
    }

    /// Builds from vertices already known to be convex and counter-clockwise.
    pub(crate) fn from_ccw(points: &[Vec2], radius: Scalar) -> Polygon {
        let n = points.len();
        let mut p = Polygon {
            vertices: [Vec2::ZERO; MAX_POLYGON_VERTICES],
            normals: [Vec2::ZERO; MAX_POLYGON_VERTICES],
            centroid: Vec2::ZERO,
            radius,
            count: n as u8,
        };
        p.vertices[..n].copy_from_slice(points);
        if n == 2 {
            // A segment's two edges are e and -e. Division rounds toward
            // zero, so normalising -e gives exactly -normalize(e): one
            // square root and two divisions instead of two and four (this
            // runs for every capsule-polygon pair every step).
            let e = p.vertices[1] - p.vertices[0];
            p.normals[0] = e.right_perp().normalize();
            p.normals[1] = -p.normals[0];
        } else {
            for i in 0..n {
                let e = p.vertices[(i + 1) % n] - p.vertices[i];
                p.normals[i] = e.right_perp().normalize();
            }
        }
        p.centroid = if n == 2 {
            p.vertices[0].lerp(p.vertices[1], Scalar::HALF)
        } else {
            polygon_centroid(&p.vertices[..n])
        };
        p
    }

    /// An axis-aligned box with half-extents `hx`, `hy`, centred on the origin.
    pub fn make_box(hx: Scalar, hy: Scalar) -> Polygon {
        Polygon::make_offset_box(hx, hy, Vec2::ZERO, Rot::IDENTITY)
    }

    /// A box with rounded corners: core half-extents plus `radius`.
    pub fn make_rounded_box(hx: Scalar, hy: Scalar, radius: Scalar) -> Polygon {
        let mut p = Polygon::make_box(hx, hy);
        p.radius = radius;
        p
    }

    /// A box with half-extents `hx`, `hy` centred at `center`, rotated by `rot`.
    pub fn make_offset_box(hx: Scalar, hy: Scalar, center: Vec2, rot: Rot) -> Polygon {
        let xf = Transform::new(center, rot);
        let corners = [
            Vec2::new(-hx, -hy),
            Vec2::new(hx, -hy),
            Vec2::new(hx, hy),
            Vec2::new(-hx, hy),
        ];
        let mut p = Polygon::from_ccw(&corners, Scalar::ZERO);
        for i in 0..4 {
            p.vertices[i] = xf.apply(p.vertices[i]);
            p.normals[i] = rot.rotate(p.normals[i]);
        }
        p.centroid = center;
        p
    }

    /// The used vertices.
    #[inline]
    pub fn points(&self) -> &[Vec2] {
        &self.vertices[..self.count as usize]
    }

    /// Writes the used vertices under `xf` to `out`, with the bits of
    /// [`Transform::apply`] on each.
    ///
    /// A box laid out as [`Polygon::make_box`] makes it shares its
    /// coordinates in pairs (corners 0 and 3 share x, 1 and 2 share x, 0
    /// and 1 share y, 2 and 3 share y), so the rotation's eight distinct
    /// products are formed once instead of sixteen times.
    #[inline(always)]
    pub fn transform_into(&self, xf: Transform, out: &mut [Vec2; MAX_POLYGON_VERTICES]) {
        let v = &self.vertices;
        let (c, s) = (xf.q.c, xf.q.s);
        if self.count == 4
            && v[0].x == v[3].x
            && v[1].x == v[2].x
            && v[0].y == v[1].y
            && v[2].y == v[3].y
        {
            // `q.rotate(v) = (c·x − s·y, s·x + c·y)`.
            let (cx0, sx0, cx1, sx1) = (c * v[0].x, s * v[0].x, c * v[1].x, s * v[1].x);
            let (cy0, sy0, cy2, sy2) = (c * v[0].y, s * v[0].y, c * v[2].y, s * v[2].y);
            let p = xf.p;
            out[0] = Vec2::new(cx0 - sy0, sx0 + cy0) + p;
            out[1] = Vec2::new(cx1 - sy0, sx1 + cy0) + p;
            out[2] = Vec2::new(cx1 - sy2, sx1 + cy2) + p;
            out[3] = Vec2::new(cx0 - sy2, sx0 + cy2) + p;
        } else {
            for (o, &p) in out.iter_mut().zip(self.points()) {
                *o = xf.apply(p);
            }
        }
    }

    /// Bounding box under a transform, including the rounding radius.
    pub fn aabb(&self, xf: Transform) -> Aabb {
        let mut w = [Vec2::ZERO; MAX_POLYGON_VERTICES];
        self.transform_into(xf, &mut w);
        let mut lo = w[0];
        let mut hi = lo;
        for &w in &w[1..self.count as usize] {
            lo = lo.min(w);
            hi = hi.max(w);
        }
        let r = Vec2::new(self.radius, self.radius);
        Aabb::new(lo - r, hi + r)
    }

    /// Mass properties for a density; rounded polygons are approximated by
    /// pushing each vertex out by `√2·radius` along its corner bisector.
    pub fn mass(&self, density: Scalar) -> MassData {
        let n = self.count as usize;
        let mut v = [Vec2::ZERO; MAX_POLYGON_VERTICES];
        if self.radius.is_zero() {
            v[..n].copy_from_slice(self.points());
        } else {
            let sqrt2 = Scalar::from_bits(6_074_001_000); // √2 · 2³²
            for (i, out) in v[..n].iter_mut().enumerate() {
                let prev = if i == 0 { n - 1 } else { i - 1 };
                let mid = (self.normals[prev] + self.normals[i]).normalize();
                *out = self.vertices[i].mul_add(sqrt2 * self.radius, mid);
            }
        }
        polygon_mass(&v[..n], density)
    }
}

/// Centroid of a convex polygon (triangle fan about the first vertex).
fn polygon_centroid(v: &[Vec2]) -> Vec2 {
    let origin = v[0];
    let mut c = Vec2::ZERO;
    let mut area = Scalar::ZERO;
    let inv3 = Scalar::ratio(1, 3);
    for i in 1..v.len() - 1 {
        let e1 = v[i] - origin;
        let e2 = v[i + 1] - origin;
        let a = e1.cross(e2).shr(1);
        c = c.mul_add(a * inv3, e1 + e2);
        area += a;
    }
    origin + Vec2::new(c.x / area, c.y / area)
}

/// Mass, centroid and inertia about the centroid of a solid convex polygon.
fn polygon_mass(v: &[Vec2], density: Scalar) -> MassData {
    let origin = v[0];
    let inv3 = Scalar::ratio(1, 3);
    let mut center = Vec2::ZERO;
    let mut area = Scalar::ZERO;
    let mut inertia = Scalar::ZERO;
    for i in 1..v.len() - 1 {
        let e1 = v[i] - origin;
        let e2 = v[i + 1] - origin;
        let d = e1.cross(e2);
        let tri = d.shr(1);
        area += tri;
        center = center.mul_add(tri * inv3, e1 + e2);
        let ix = e1.x * e1.x + e2.x * e1.x + e2.x * e2.x;
        let iy = e1.y * e1.y + e2.y * e1.y + e2.y * e2.y;
        inertia += (d * inv3).shr(2) * (ix + iy);
    }
    let mass = density * area;
    let c = Vec2::new(center.x / area, center.y / area);
    // Inertia about the fan origin, shifted to the centroid.
    let i_center = density * inertia - mass * c.dot(c);
    MassData {
        mass,
        center: origin + c,
        rotational_inertia: i_center,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared-product path for boxes gives the bits of `apply` on each
    /// corner (and the general path is `apply` itself).
    #[test]
    fn transform_into_matches_apply() {
        use crate::math::Rot;
        let shapes = [
            Polygon::make_box(Scalar::HALF, Scalar::HALF),
            Polygon::make_box(Scalar::milli(1234), Scalar::milli(77)),
            Polygon::make_offset_box(
                Scalar::ONE,
                Scalar::TWO,
                Vec2::new(Scalar::ONE, Scalar::HALF),
                Rot::from_angle(Scalar::milli(300)),
            ),
            Polygon::new(
                &[
                    Vec2::ZERO,
                    Vec2::new(Scalar::ONE, Scalar::ZERO),
                    Vec2::new(Scalar::ZERO, Scalar::ONE),
                ],
                Scalar::ZERO,
            )
            .unwrap(),
        ];
        for (k, p) in shapes.iter().enumerate() {
            for a in [-3000i64, -1571, -7, 0, 1, 450, 1571, 2999] {
                let xf = Transform::new(
                    Vec2::new(Scalar::milli(a * 3), Scalar::milli(-a)),
                    Rot::from_angle(Scalar::milli(a)),
                );
                let mut out = [Vec2::ZERO; MAX_POLYGON_VERTICES];
                p.transform_into(xf, &mut out);
                for (i, &v) in p.points().iter().enumerate() {
                    assert_eq!(out[i], xf.apply(v), "shape {k} angle {a} corner {i}");
                }
            }
        }
    }
    use crate::math::fx;

    #[test]
    fn a_segments_second_normal_is_exactly_the_first_negated() {
        // What `from_ccw` relies on for two vertices: normalising -e
        // gives -normalize(e) bit for bit (division rounds toward zero).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Components up to ±2^14 m with all fraction bits in play.
            let c = |bits: u64| Scalar::from_bits((bits as i64) >> 17);
            let e = Vec2::new(c(x), c(x.rotate_left(29)));
            let back = (-e).right_perp().normalize();
            assert_eq!(back, -e.right_perp().normalize(), "{e:?}");
        }
    }

    #[test]
    fn box_mass_matches_closed_form() {
        let b = Polygon::make_box(fx(1), Scalar::HALF);
        let m = b.mass(fx(2));
        assert_eq!(m.mass, fx(4));
        assert!(m.center.length() < Scalar::from_bits(8), "{:?}", m.center);
        // I = m (w² + h²) / 12 = 4 (4 + 1) / 12 = 5/3
        let err = (m.rotational_inertia - Scalar::ratio(5, 3)).abs();
        assert!(
            err < Scalar::from_bits(1 << 8),
            "{:?}",
            m.rotational_inertia
        );
    }

    #[test]
    fn rejects_bad_polygons() {
        let sq = |x: i32, y: i32| Vec2::from_ints(x, y);
        assert_eq!(
            Polygon::new(&[sq(0, 0), sq(1, 0)], Scalar::ZERO),
            Err(GeometryError::VertexCount(2))
        );
        // A dart: reflex corner.
        let dart = [sq(0, 0), sq(4, 0), sq(1, 1), sq(0, 4)];
        assert!(matches!(
            Polygon::new(&dart, Scalar::ZERO),
            Err(GeometryError::NotConvex(_))
        ));
        // Collinear points are not strictly convex.
        let col = [sq(0, 0), sq(1, 0), sq(2, 0), sq(1, 1)];
        assert!(matches!(
            Polygon::new(&col, Scalar::ZERO),
            Err(GeometryError::NotConvex(_))
        ));
        // Clockwise input is accepted and re-wound.
        let cw = [sq(0, 0), sq(0, 1), sq(1, 1), sq(1, 0)];
        let p = Polygon::new(&cw, Scalar::ZERO).unwrap();
        assert_eq!(p.mass(Scalar::ONE).mass, Scalar::ONE);
    }
}

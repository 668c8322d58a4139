//! Circles, capsules, segments, and the shape geometry enum.

use super::{GeometryError, Polygon};
use crate::math::{Aabb, Scalar, Transform, Vec2, WORLD_BOUND};
use serde::{Deserialize, Serialize};

/// Mass properties of a shape or body.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct MassData {
    /// Mass in kilograms.
    pub mass: Scalar,
    /// Centre of mass in the body frame.
    pub center: Vec2,
    /// Rotational inertia about the centre of mass.
    pub rotational_inertia: Scalar,
}

/// A solid disc.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Circle {
    /// Centre in the body frame.
    pub center: Vec2,
    /// Radius.
    pub radius: Scalar,
}

/// A solid capsule: the points within `radius` of the segment `c1`–`c2`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Capsule {
    /// First centre.
    pub c1: Vec2,
    /// Second centre.
    pub c2: Vec2,
    /// Radius.
    pub radius: Scalar,
}

/// A two-sided line segment with no mass (for static geometry).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Segment {
    /// First point.
    pub p1: Vec2,
    /// Second point.
    pub p2: Vec2,
}

/// One segment of a chain: one-sided, with the neighbouring points of its
/// chain ("ghost vertices") so that bodies slide across the joints between
/// segments without catching on them (Box2D v3's `b2ChainSegment`). It
/// collides on its right-hand side only, the side its normal
/// `right_perp(p2 − p1)` points to: the inside of a clockwise loop. Built
/// by `World::create_chain`; massless, for static geometry.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ChainSegment {
    /// The point before `segment.p1` in the chain.
    pub ghost1: Vec2,
    /// The solid part.
    pub segment: Segment,
    /// The point after `segment.p2` in the chain.
    pub ghost2: Vec2,
}

/// The geometry of a shape, in its body's frame.
///
/// Stored inline (a polygon is ~280 bytes) so shapes are plain `Copy` data
/// that snapshot with a memcpy; boxing would cost an allocation per shape.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum ShapeGeometry {
    /// A disc.
    Circle(Circle),
    /// A capsule.
    Capsule(Capsule),
    /// A convex polygon, possibly rounded.
    Polygon(Polygon),
    /// A line segment.
    Segment(Segment),
    /// A one-sided segment of a chain.
    ChainSegment(ChainSegment),
}

/// Collision filtering: two shapes collide when
/// `(a.category & b.mask) != 0 && (b.category & a.mask) != 0`, unless they
/// share a non-zero `group`: a positive shared group always collides and a
/// negative one never does.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Filter {
    /// Category bits of this shape.
    pub category: u32,
    /// Categories this shape collides with.
    pub mask: u32,
    /// Group index (see the type docs).
    pub group: i32,
}

impl Default for Filter {
    fn default() -> Filter {
        Filter {
            category: 1,
            mask: u32::MAX,
            group: 0,
        }
    }
}

impl Filter {
    /// Whether shapes with these filters may collide.
    #[inline]
    pub fn should_collide(&self, o: &Filter) -> bool {
        if self.group == o.group && self.group != 0 {
            return self.group > 0;
        }
        (self.category & o.mask) != 0 && (o.category & self.mask) != 0
    }
}

/// Smallest radius or half-extent: the linear slop.
const MIN_SIZE: Scalar = Scalar::milli(5);

fn check_point(p: Vec2, what: &'static str) -> Result<(), GeometryError> {
    if p.x.abs() > WORLD_BOUND || p.y.abs() > WORLD_BOUND {
        return Err(GeometryError::OutOfBounds(what));
    }
    Ok(())
}

impl Circle {
    /// A circle, checked.
    ///
    /// # Errors
    /// A radius below 0.005 or a centre outside the world bounds.
    pub fn new(center: Vec2, radius: Scalar) -> Result<Circle, GeometryError> {
        check_point(center, "center")?;
        if radius < MIN_SIZE || radius > WORLD_BOUND {
            return Err(GeometryError::TooSmall("radius"));
        }
        Ok(Circle { center, radius })
    }
}

impl Capsule {
    /// A capsule, checked.
    ///
    /// # Errors
    /// A radius below 0.005, centres closer than 0.005, or outside the world.
    pub fn new(c1: Vec2, c2: Vec2, radius: Scalar) -> Result<Capsule, GeometryError> {
        check_point(c1, "center1")?;
        check_point(c2, "center2")?;
        if radius < MIN_SIZE || radius > WORLD_BOUND {
            return Err(GeometryError::TooSmall("radius"));
        }
        if (c2 - c1).length() < MIN_SIZE {
            return Err(GeometryError::TooSmall("length"));
        }
        Ok(Capsule { c1, c2, radius })
    }

    /// The capsule as a two-vertex rounded polygon (for polygon collision).
    pub fn to_polygon(&self) -> Polygon {
        Polygon::from_ccw(&[self.c1, self.c2], self.radius)
    }
}

impl Segment {
    /// A segment, checked.
    ///
    /// # Errors
    /// Points closer than 0.005 or outside the world bounds.
    pub fn new(p1: Vec2, p2: Vec2) -> Result<Segment, GeometryError> {
        check_point(p1, "point1")?;
        check_point(p2, "point2")?;
        if (p2 - p1).length() < MIN_SIZE {
            return Err(GeometryError::TooSmall("length"));
        }
        Ok(Segment { p1, p2 })
    }

    /// The segment as a capsule of radius zero (for capsule collision).
    pub fn to_capsule(&self) -> Capsule {
        Capsule {
            c1: self.p1,
            c2: self.p2,
            radius: Scalar::ZERO,
        }
    }

    /// The segment as a two-vertex polygon (for polygon collision).
    pub fn to_polygon(&self) -> Polygon {
        Polygon::from_ccw(&[self.p1, self.p2], Scalar::ZERO)
    }
}

impl ChainSegment {
    /// A chain segment, checked: the segment as [`Segment::new`], and each
    /// ghost vertex in bounds and at least 0.005 from its segment point
    /// (the direction to it must exist).
    ///
    /// # Errors
    /// As described.
    pub fn new(
        ghost1: Vec2,
        p1: Vec2,
        p2: Vec2,
        ghost2: Vec2,
    ) -> Result<ChainSegment, GeometryError> {
        let segment = Segment::new(p1, p2)?;
        check_point(ghost1, "ghost1")?;
        check_point(ghost2, "ghost2")?;
        if (p1 - ghost1).length() < MIN_SIZE || (ghost2 - p2).length() < MIN_SIZE {
            return Err(GeometryError::TooSmall("chain edge"));
        }
        Ok(ChainSegment {
            ghost1,
            segment,
            ghost2,
        })
    }
}

/// Most points of one chain.
pub const MAX_CHAIN_POINTS: usize = 1 << 16;

/// The segments of a chain through `points` (Box2D's `b2CreateChain`): a
/// loop joins the last point to the first and has one segment per point;
/// an open chain's first and last points are only ghost vertices, so it
/// has `points − 3` segments. Each segment collides on its right-hand
/// side (the inside of a clockwise loop).
///
/// # Errors
/// Fewer than 4 points, more than [`MAX_CHAIN_POINTS`], or a segment
/// [`ChainSegment::new`] rejects.
pub fn chain_segments(points: &[Vec2], is_loop: bool) -> Result<Vec<ChainSegment>, GeometryError> {
    let n = points.len();
    if !(4..=MAX_CHAIN_POINTS).contains(&n) {
        return Err(GeometryError::ChainPoints(n));
    }
    let at = |i: usize| points[i % n];
    if is_loop {
        (0..n)
            .map(|i| ChainSegment::new(at(i + n - 1), at(i), at(i + 1), at(i + 2)))
            .collect()
    } else {
        (0..n - 3)
            .map(|i| ChainSegment::new(at(i), at(i + 1), at(i + 2), at(i + 3)))
            .collect()
    }
}

impl ShapeGeometry {
    /// Bounding box under a transform.
    pub fn aabb(&self, xf: Transform) -> Aabb {
        match self {
            ShapeGeometry::Circle(c) => {
                let p = xf.apply(c.center);
                let r = Vec2::new(c.radius, c.radius);
                Aabb::new(p - r, p + r)
            }
            ShapeGeometry::Capsule(c) => {
                let a = xf.apply(c.c1);
                let b = xf.apply(c.c2);
                let r = Vec2::new(c.radius, c.radius);
                Aabb::new(a.min(b) - r, a.max(b) + r)
            }
            ShapeGeometry::Polygon(p) => p.aabb(xf),
            ShapeGeometry::Segment(s)
            | ShapeGeometry::ChainSegment(ChainSegment { segment: s, .. }) => {
                let a = xf.apply(s.p1);
                let b = xf.apply(s.p2);
                Aabb::new(a.min(b), a.max(b))
            }
        }
    }

    /// Mass properties at a density (segments have none).
    pub fn mass(&self, density: Scalar) -> MassData {
        match self {
            ShapeGeometry::Circle(c) => {
                let rr = c.radius * c.radius;
                let mass = density * Scalar::PI * rr;
                MassData {
                    mass,
                    center: c.center,
                    rotational_inertia: (mass * rr).shr(1),
                }
            }
            ShapeGeometry::Capsule(c) => {
                let r = c.radius;
                let rr = r * r;
                let length = (c.c2 - c.c1).length();
                let circle_mass = density * Scalar::PI * rr;
                let box_mass = density * (r.shl(1) * length);
                // Two half discs, each shifted by half the length: parallel
                // axis theorem twice (semicircle centroid at 4r / 3π).
                let lc = r.shl(2) / (Scalar::from_int(3) * Scalar::PI);
                let h = length.shr(1);
                let circle_i = circle_mass * (rr.shr(1) + h * h + (h * lc).shl(1));
                let box_i = box_mass * (rr.shl(2) + length * length) * Scalar::ratio(1, 12);
                MassData {
                    mass: circle_mass + box_mass,
                    center: c.c1.lerp(c.c2, Scalar::HALF),
                    rotational_inertia: circle_i + box_i,
                }
            }
            ShapeGeometry::Polygon(p) => p.mass(density),
            ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_) => MassData::default(),
        }
    }

    /// The rounding radius of the shape's core (zero for segments and sharp polygons).
    pub fn radius(&self) -> Scalar {
        match self {
            ShapeGeometry::Circle(c) => c.radius,
            ShapeGeometry::Capsule(c) => c.radius,
            ShapeGeometry::Polygon(p) => p.radius,
            ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_) => Scalar::ZERO,
        }
    }

    /// Distance from `center` to the farthest point of the shape (for sleep).
    pub fn extent_from(&self, center: Vec2) -> Scalar {
        match self {
            ShapeGeometry::Circle(c) => (c.center - center).length() + c.radius,
            ShapeGeometry::Capsule(c) => {
                (c.c1 - center).length().max((c.c2 - center).length()) + c.radius
            }
            ShapeGeometry::Polygon(p) => {
                let mut m = Scalar::ZERO;
                for &v in p.points() {
                    m = m.max((v - center).length());
                }
                m + p.radius
            }
            ShapeGeometry::Segment(s)
            | ShapeGeometry::ChainSegment(ChainSegment { segment: s, .. }) => {
                (s.p1 - center).length().max((s.p2 - center).length())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fx;

    #[test]
    fn filter_rules() {
        let a = Filter::default();
        let mut b = Filter {
            category: 2,
            mask: !2,
            group: 0,
        };
        assert!(a.should_collide(&b));
        assert!(!b.should_collide(&b));
        b.group = -1;
        let mut c = b;
        assert!(!b.should_collide(&c));
        c.group = 1;
        b.group = 1;
        assert!(b.should_collide(&c));
    }

    #[test]
    fn circle_and_capsule_mass() {
        let c = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(1)).unwrap());
        let m = c.mass(fx(1));
        assert_eq!(m.mass, Scalar::PI);
        let cap = ShapeGeometry::Capsule(
            Capsule::new(Vec2::from_ints(-1, 0), Vec2::from_ints(1, 0), fx(1)).unwrap(),
        );
        let m = cap.mass(fx(1));
        // π r² + 2 r L = π + 4
        assert!((m.mass - (Scalar::PI + fx(4))).abs() < Scalar::from_bits(1 << 6));
        assert!(Circle::new(Vec2::ZERO, Scalar::ZERO).is_err());
    }
}

//! Shapes attached to bodies: geometry plus material and filter.

use super::body::BodyKind;
use crate::collision::SPECULATIVE_DISTANCE;
use crate::geometry::{Filter, ShapeGeometry};
use crate::math::{Aabb, Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Material and filtering of a shape.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ShapeDef {
    /// Density in kg/m².
    pub density: Scalar,
    /// Coulomb friction coefficient (mixed as √(a·b)).
    pub friction: Scalar,
    /// Restitution (mixed as max(a, b)).
    pub restitution: Scalar,
    /// Collision filter.
    pub filter: Filter,
    /// Opaque id for the user.
    pub user_data: u64,
    /// A sensor detects overlapping shapes (sensor events) but has no
    /// collision response and is skipped by continuous collision.
    pub is_sensor: bool,
    /// Report contact begin/end touching events for this shape's contacts
    /// (a contact reports when either of its shapes asks).
    pub enable_contact_events: bool,
    /// Report hit events (approach faster than the world's
    /// `hit_event_threshold`) for this shape's contacts (either shape asks).
    pub enable_hit_events: bool,
    /// Whether sensors detect this shape (ignored on sensors).
    pub enable_sensor_events: bool,
}

impl Default for ShapeDef {
    fn default() -> ShapeDef {
        ShapeDef {
            density: Scalar::ONE,
            // 0.6 rounded to nearest, the same bits a scene file's 0.6 gives.
            friction: Scalar::from_bits(2_576_980_378),
            restitution: Scalar::ZERO,
            filter: Filter::default(),
            user_data: 0,
            is_sensor: false,
            enable_contact_events: true,
            enable_hit_events: false,
            enable_sensor_events: true,
        }
    }
}

/// A shape slot. Part of the world state.
///
/// The geometry lives apart, in `WorldState::geometry` (same slot index):
/// it never changes after creation, so snapshots share it copy-on-write and
/// the per-step passes over shapes read smaller records. The canonical
/// encoding still writes it in its place, after `body`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub(crate) generation: u32,
    pub(crate) alive: bool,
    /// Body slot index.
    pub(crate) body: u32,
    pub(crate) def: ShapeDef,
    /// Fat bounding box kept in the broad phase.
    pub(crate) fat_aabb: Aabb,
    /// Next shape of the same body (`u32::MAX` ends the list).
    pub(crate) next: u32,
    /// Whether the shape is queued for new-pair search.
    pub(crate) moved: bool,
    /// Broad-phase proxy (derived; rebuilt on restore).
    pub(crate) proxy: u32,
    /// Fat-box margin of a moving shape (derived from the geometry by
    /// [`aabb_margin`]; rebuilt on restore, not encoded).
    pub(crate) margin: Scalar,
}

impl Shape {
    pub(crate) fn vacant() -> Shape {
        Shape {
            generation: 0,
            alive: false,
            body: 0,
            def: ShapeDef::default(),
            fat_aabb: Aabb::default(),
            next: u32::MAX,
            moved: false,
            proxy: u32::MAX,
            margin: Scalar::ZERO,
        }
    }
}

/// Largest fat-box margin around moving shapes, beyond the speculative
/// distance (Box2D's `B2_MAX_AABB_MARGIN`, 5 cm).
pub(crate) const AABB_MARGIN: Scalar = Scalar::milli(50);

/// A moving shape's margin is its extent shifted right by this: an eighth
/// (Box2D's `B2_AABB_MARGIN_FRACTION`, 0.125).
const MARGIN_FRACTION_SHIFT: u32 = 3;

/// The extent from which the margin is [`AABB_MARGIN`]: eight times it
/// (40 cm).
const CAPPED_EXTENT: Scalar = AABB_MARGIN.shl(MARGIN_FRACTION_SHIFT);

/// The length of `d`, or `limit` when it is at least that long by one
/// component alone. Below the limit (at most 80 cm here) the squares
/// cannot overflow Q32.32, whatever the shape's size (a capsule 50 km long
/// would, and its margin is the cap either way).
fn length_up_to(d: Vec2, limit: Scalar) -> Scalar {
    if d.x.abs() >= limit || d.y.abs() >= limit {
        limit
    } else {
        d.length().min(limit)
    }
}

/// The fat-box margin of a moving shape, as Box2D v3 sets it
/// (`b2ComputeShapeMargin`, when a shape is made or its geometry changes):
/// an eighth of the shape's extent, at most [`AABB_MARGIN`]. The extent is
/// a circle's radius (its offset left out), a capsule's half length plus
/// its radius, a segment's half length, and a polygon's farthest vertex
/// from its centroid (its rounding radius left out). Every term is as
/// Box2D's; lengths past 40 cm (80 cm for the capsule's and segment's full
/// length) are clamped before squaring, which cannot change the capped
/// result.
///
/// The margin depends on the geometry only, so it is derived state: never
/// encoded, rebuilt on decoding (`World::rebuild_trees`). Static shapes do
/// not use it (see [`fat_box`]).
///
/// A larger box lets a shape move further before its box is re-made and
/// its pairs searched again, but finds pairs that never touch, each a
/// contact for the narrow phase to test every step: for small shapes
/// (tumbler's 0.25 m boxes, the ragdolls' limbs) 5 cm is a fifth of their
/// size.
pub(crate) fn aabb_margin(g: &ShapeGeometry) -> Scalar {
    let whole = CAPPED_EXTENT.shl(1);
    let extent = match g {
        ShapeGeometry::Circle(c) => c.radius,
        ShapeGeometry::Capsule(c) => length_up_to(c.c2 - c.c1, whole).shr(1) + c.radius,
        ShapeGeometry::Segment(s)
        | ShapeGeometry::ChainSegment(crate::geometry::ChainSegment { segment: s, .. }) => {
            length_up_to(s.p2 - s.p1, whole).shr(1)
        }
        ShapeGeometry::Polygon(p) => p
            .points()
            .iter()
            .map(|&v| length_up_to(v - p.centroid, CAPPED_EXTENT))
            .max()
            .unwrap_or(Scalar::ZERO),
    };
    extent.shr(MARGIN_FRACTION_SHIFT).min(AABB_MARGIN)
}

/// The fat box of a shape whose tight box is `aabb`, as Box2D v3 makes it:
/// the box grown by the speculative distance (within which the narrow
/// phase makes speculative points), then by the shape's `margin` (see
/// [`aabb_margin`]) for moving shapes and by the speculative distance again
/// for static ones. Moving shapes keep their fat box while it holds the
/// tight box grown by the speculative distance.
///
/// The fat box used to be the tight box plus 5 cm for moving shapes and the
/// tight box for static ones, re-made only when the tight box left it: a
/// shape could come within the speculative distance of another, or touch
/// it, with no pair yet, and a ball falling at 2.5 m/s reached the ground
/// with no contact and sank 3 cm into it (the pair, found at the end of
/// that step, had its first manifold only then).
#[inline]
pub(crate) fn fat_box(aabb: Aabb, kind: BodyKind, margin: Scalar) -> Aabb {
    let speculative = aabb.expand(SPECULATIVE_DISTANCE);
    if kind == BodyKind::Static {
        speculative.expand(SPECULATIVE_DISTANCE)
    } else {
        speculative.expand(margin)
    }
}

/// The geometry of a free shape slot (what the canonical encoding writes
/// for it).
pub(crate) const VACANT_GEOMETRY: ShapeGeometry =
    ShapeGeometry::Segment(crate::geometry::Segment {
        p1: crate::math::Vec2::ZERO,
        p2: crate::math::Vec2::ZERO,
    });

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Capsule, Circle, Polygon, Segment};
    use crate::math::{fx, Rot};

    fn near(got: Scalar, want: Scalar) {
        let d = (got - want).abs();
        assert!(d <= Scalar::from_bits(1 << 8), "{got:?} against {want:?}");
    }

    #[test]
    fn margin_is_an_eighth_of_the_extent_as_box2d_s() {
        // A 0.5 m box: its corners 0.3536 m from the centroid.
        let small =
            ShapeGeometry::Polygon(Polygon::make_box(Scalar::milli(250), Scalar::milli(250)));
        near(aabb_margin(&small), Scalar::milli(125).sqrt().shr(3));
        // A 1 m box: 0.7071 / 8 is past the cap.
        let big = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        assert_eq!(aabb_margin(&big), AABB_MARGIN);
        // From the centroid, not the body origin: a 0.2 m box 7 m away.
        let offset = Polygon::make_offset_box(
            Scalar::milli(100),
            Scalar::milli(100),
            Vec2::from_ints(5, 5),
            Rot::IDENTITY,
        );
        near(
            aabb_margin(&ShapeGeometry::Polygon(offset)),
            Scalar::milli(20).sqrt().shr(3),
        );
        // The rounding radius is left out, as in Box2D.
        let rounded = Polygon::make_rounded_box(Scalar::milli(100), Scalar::milli(100), fx(1));
        near(
            aabb_margin(&ShapeGeometry::Polygon(rounded)),
            Scalar::milli(20).sqrt().shr(3),
        );
        // A circle's radius, its offset left out.
        let circle = Circle {
            center: Vec2::from_ints(3, 0),
            radius: Scalar::milli(100),
        };
        assert_eq!(
            aabb_margin(&ShapeGeometry::Circle(circle)),
            Scalar::milli(100).shr(3)
        );
        // A capsule's half length plus its radius; a segment's half length.
        let capsule = Capsule {
            c1: Vec2::new(Scalar::milli(-100), Scalar::ZERO),
            c2: Vec2::new(Scalar::milli(100), Scalar::ZERO),
            radius: Scalar::milli(50),
        };
        near(
            aabb_margin(&ShapeGeometry::Capsule(capsule)),
            Scalar::milli(150).shr(3),
        );
        let segment = Segment {
            p1: Vec2::ZERO,
            p2: Vec2::new(Scalar::ZERO, Scalar::milli(300)),
        };
        near(
            aabb_margin(&ShapeGeometry::Segment(segment)),
            Scalar::milli(150).shr(3),
        );
    }

    #[test]
    fn margin_of_a_shape_too_long_to_square_is_the_cap() {
        // 80 km: its squared length does not fit Q32.32 (a decoded snapshot
        // may hold geometry this far out); squared naively it wraps.
        let far = fx(40_000);
        let segment = Segment {
            p1: Vec2::new(-far, -far),
            p2: Vec2::new(far, far),
        };
        assert_eq!(aabb_margin(&ShapeGeometry::Segment(segment)), AABB_MARGIN);
        let capsule = Capsule {
            c1: Vec2::new(-far, Scalar::ZERO),
            c2: Vec2::new(far, Scalar::ZERO),
            radius: Scalar::ZERO,
        };
        assert_eq!(aabb_margin(&ShapeGeometry::Capsule(capsule)), AABB_MARGIN);
    }
}

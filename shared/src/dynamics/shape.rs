//! Shapes attached to bodies: geometry plus material and filter.

use crate::geometry::{Filter, ShapeGeometry};
use crate::math::{Aabb, Scalar};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub(crate) generation: u32,
    pub(crate) alive: bool,
    /// Body slot index.
    pub(crate) body: u32,
    pub(crate) geometry: ShapeGeometry,
    pub(crate) def: ShapeDef,
    /// Fat bounding box kept in the broad phase.
    pub(crate) fat_aabb: Aabb,
    /// Next shape of the same body (`u32::MAX` ends the list).
    pub(crate) next: u32,
    /// Whether the shape is queued for new-pair search.
    pub(crate) moved: bool,
    /// Broad-phase proxy (derived; rebuilt on restore).
    #[serde(skip, default = "no_proxy")]
    pub(crate) proxy: u32,
}

fn no_proxy() -> u32 {
    u32::MAX
}

impl Shape {
    pub(crate) fn vacant() -> Shape {
        Shape {
            generation: 0,
            alive: false,
            body: 0,
            geometry: ShapeGeometry::Segment(crate::geometry::Segment {
                p1: crate::math::Vec2::ZERO,
                p2: crate::math::Vec2::ZERO,
            }),
            def: ShapeDef::default(),
            fat_aabb: Aabb::default(),
            next: u32::MAX,
            moved: false,
            proxy: u32::MAX,
        }
    }
}

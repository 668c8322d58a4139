//! bitroom-sim: deterministic fixed-point 2D rigid-body simulation.
pub mod collision;
pub mod dynamics;
mod encoding;
pub mod game;
pub mod geometry;
pub mod math;
pub mod scene;

/// Snapshots and their limit, at the path other crates use (they live in
/// the crate's `encoding` module, with the other encodings of the state).
pub mod state {
    pub use crate::encoding::{Snapshot, SnapshotError, MAX_SNAPSHOT_BYTES};
}

pub use dynamics::{
    BodyDef, BodyId, BodyKind, ContactBeginTouchEvent, ContactEndTouchEvent, ContactEvents,
    ContactHitEvent, JointDef, JointId, JointKind, QueryFilter, RayHit, SensorBeginTouchEvent,
    SensorEndTouchEvent, SensorEvents, ShapeDef, ShapeId, Stage, World, WorldDef, WorldError,
};
pub use encoding::{PackError, Snapshot, SnapshotError};
pub use geometry::{Capsule, Circle, Filter, Polygon, Segment, ShapeGeometry};
pub use math::{fx, Aabb, Rot, Scalar, Transform, Vec2};

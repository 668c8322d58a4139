//! bitroom-sim: deterministic fixed-point 2D rigid-body simulation.
mod canon;
pub mod collision;
mod compact;
pub mod dynamics;
pub mod game;
pub mod geometry;
pub mod math;
mod packed;
pub mod scene;
pub mod state;

pub use dynamics::{
    BodyDef, BodyId, BodyKind, ContactBeginTouchEvent, ContactEndTouchEvent, ContactEvents,
    ContactHitEvent, JointDef, JointId, JointKind, QueryFilter, RayHit, SensorBeginTouchEvent,
    SensorEndTouchEvent, SensorEvents, ShapeDef, ShapeId, Stage, World, WorldDef, WorldError,
};
pub use geometry::{Capsule, Circle, Filter, Polygon, Segment, ShapeGeometry};
pub use math::{fx, Aabb, Rot, Scalar, Transform, Vec2};
pub use packed::PackError;
pub use state::{Snapshot, SnapshotError};

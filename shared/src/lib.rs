//! bitroom-sim: a deterministic fixed-point 2D rigid-body simulation, and
//! the game layer that plays it with rollback.
//!
//! Every quantity that steps is a Q32.32 [`Scalar`] with wrapping
//! arithmetic, so a world computes the same bits in debug and release, on
//! every target, with every SIMD lane width; [`World::state_hash`] is
//! XXH3-64 of the state's canonical encoding, and a [`Snapshot`] restores
//! everything that affects the future.
//!
//! ```
//! use bitroom_sim::{fx, BodyDef, Polygon, Scalar, ShapeDef, ShapeGeometry, Vec2, World, WorldDef};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut world = World::new(WorldDef::default())?;
//! let ground = world.create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))?;
//! world.create_shape(ground, &ShapeDef::default(), ShapeGeometry::Polygon(Polygon::make_box(fx(20), fx(1))))?;
//! let crate_ = world.create_body(&BodyDef::dynamic(Vec2::from_ints(0, 4)))?;
//! world.create_shape(crate_, &ShapeDef::default(), ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF)))?;
//!
//! let snapshot = world.snapshot();
//! for _ in 0..60 {
//!     world.step();
//! }
//! let after = world.state_hash();
//! assert!(world.transform(crate_)?.p.y < fx(4)); // it fell
//!
//! // Restore and step again: the same bits.
//! world.restore(&snapshot);
//! for _ in 0..60 {
//!     world.step();
//! }
//! assert_eq!(world.state_hash(), after);
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`math`]: [`Scalar`] and vectors, integer square root and
//!   trigonometry, the SIMD lanes of the contact solver (`math/wide/`);
//! - [`geometry`]: shapes, mass, polygon construction;
//! - [`collision`]: the broad phase tree, manifolds, distance, ray casts,
//!   time of impact;
//! - [`dynamics`]: bodies, shapes, contacts, joints (`dynamics/joint/`, one
//!   file per kind), the solver, islands and sleep, events, and the world:
//!   `dynamics/world/` holds its state (`state.rs`), its public API by job
//!   (bodies, shapes, joints, queries, events) and the step, one file per
//!   stage in `dynamics/world/step/` (prepare → substeps → finish → pairs →
//!   collide → sleep);
//! - `encoding`: the canonical encoding the state hash is defined on,
//!   snapshots, and the packed (columnar, delta-coded, deflated) form sent
//!   to joining clients;
//! - [`scene`]: the named scenes and the JSON scene format;
//! - [`game`]: [`game::Rules`] (a game's world, input type and logic), the
//!   game state, the rollback [`game::Timeline`], bots, state
//!   diffs, and the built-in sandbox game.
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
pub use geometry::{Capsule, ChainSegment, Circle, Filter, Polygon, Segment, ShapeGeometry};
pub use math::{fx, Aabb, Rot, Scalar, Transform, Vec2};

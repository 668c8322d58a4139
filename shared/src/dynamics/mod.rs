//! Bodies, shapes, contacts, the solver and the world that steps them.

mod body;
mod ccd;
mod contact;
mod events;
mod island;
mod query;
mod shape;
mod solver;
mod world;

pub use body::{BodyDef, BodyId, BodyKind, ShapeId};
pub use events::{
    ContactBeginTouchEvent, ContactEndTouchEvent, ContactEvents, ContactHitEvent,
    SensorBeginTouchEvent, SensorEndTouchEvent, SensorEvents,
};
pub use query::{QueryFilter, RayHit};
pub use shape::ShapeDef;
pub use world::{ContactView, World, WorldDef, WorldError};

pub(crate) use world::WorldState;

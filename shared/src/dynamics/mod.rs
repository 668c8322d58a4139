//! Bodies, shapes, contacts, the solver and the world that steps them.

mod body;
mod contact;
mod island;
mod shape;
mod solver;
mod world;

pub use body::{BodyDef, BodyId, BodyKind, ShapeId};
pub use shape::ShapeDef;
pub use world::{ContactView, World, WorldDef, WorldError};

pub(crate) use world::WorldState;

//! Bodies, shapes, contacts, the solver and the world that steps them.

pub(crate) mod body;
mod ccd;
mod contact;
mod events;
mod graph;
mod island;
pub mod joint;
mod recycle;
mod shape;
mod solver;
mod world;

pub use body::{BodyDef, BodyId, BodyKind, ShapeId};
pub use events::{
    ContactBeginTouchEvent, ContactEndTouchEvent, ContactEvents, ContactHitEvent,
    SensorBeginTouchEvent, SensorEndTouchEvent, SensorEvents,
};
pub use joint::{
    AngleJoint, BrokenJoint, DistanceJoint, FrictionJoint, JointDef, JointId, JointKind,
    MotorJoint, PrismaticJoint, PulleyJoint, RevoluteJoint, TargetJoint, WeldJoint, WheelJoint,
};
pub use shape::ShapeDef;
pub use world::{ContactView, QueryFilter, RayHit, Stage, World, WorldDef, WorldError};

pub(crate) use body::{Body, BodyConfig};
pub(crate) use contact::Contact;
pub(crate) use shape::{Shape, VACANT_GEOMETRY};
pub(crate) use world::WorldState;

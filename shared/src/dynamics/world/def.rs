//! The world's settings ([`WorldDef`]) and why a world operation failed
//! ([`WorldError`]).

use crate::dynamics::body::{BodyId, ShapeId};
use crate::dynamics::joint::JointId;
use crate::geometry::GeometryError;
use crate::math::{Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// World-wide settings. Part of the state (and so of the hash).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct WorldDef {
    /// Gravity (m/s²).
    pub gravity: Vec2,
    /// Steps per second (the step length is `1 / tick_rate`).
    pub tick_rate: u32,
    /// Solver substeps per step.
    pub substeps: u32,
    /// Contact stiffness (Hz); contacts with static bodies use twice this.
    pub contact_hertz: Scalar,
    /// Contact damping ratio.
    pub contact_damping_ratio: Scalar,
    /// Largest speed at which overlap is pushed apart (m/s).
    pub contact_push_max_velocity: Scalar,
    /// Approach speed below which restitution is ignored (m/s).
    pub restitution_threshold: Scalar,
    /// Speed limit (m/s).
    pub max_linear_speed: Scalar,
    /// Whether bodies may sleep.
    pub enable_sleep: bool,
    /// Rest time before an island sleeps (s).
    pub time_to_sleep: Scalar,
    /// Continuous collision for fast bodies (see `ccd`).
    pub enable_continuous: bool,
    /// Approach speed above which contacts with hit events report a hit (m/s).
    pub hit_event_threshold: Scalar,
    /// Stiffness of rigid joint constraints (Hz); capped at a quarter of the
    /// substep rate.
    pub joint_hertz: Scalar,
    /// Damping ratio of rigid joint constraints.
    pub joint_damping_ratio: Scalar,
}

impl Default for WorldDef {
    fn default() -> WorldDef {
        WorldDef {
            gravity: Vec2::new(Scalar::ZERO, Scalar::from_int(-10)),
            tick_rate: 60,
            substeps: 4,
            contact_hertz: Scalar::from_int(30),
            contact_damping_ratio: Scalar::from_int(10),
            contact_push_max_velocity: Scalar::from_int(3),
            restitution_threshold: Scalar::ONE,
            max_linear_speed: Scalar::from_int(400),
            enable_sleep: true,
            time_to_sleep: Scalar::HALF,
            enable_continuous: true,
            hit_event_threshold: Scalar::ONE,
            joint_hertz: Scalar::from_int(60),
            joint_damping_ratio: Scalar::from_int(2),
        }
    }
}

/// Why a world operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    /// The body handle is stale or was never valid.
    #[error("invalid or destroyed body {0:?}")]
    InvalidBody(BodyId),
    /// The shape handle is stale or was never valid.
    #[error("invalid or destroyed shape {0:?}")]
    InvalidShape(ShapeId),
    /// The shape geometry is invalid.
    #[error("bad shape: {0}")]
    Geometry(#[from] GeometryError),
    /// A position or size lies outside the world bounds.
    #[error("{0} is outside the world bounds of ±10000 m")]
    OutOfBounds(&'static str),
    /// Density must be positive (zero only for static bodies).
    #[error("density must be positive")]
    BadDensity,
    /// A material value is negative.
    #[error("{0} must not be negative")]
    Negative(&'static str),
    /// Settings that cannot step (zero tick rate or substeps).
    #[error("invalid world settings: {0}")]
    BadSettings(&'static str),
    /// A query that cannot be answered (an inverted box).
    #[error("bad query: {0}")]
    BadQuery(&'static str),
    /// The joint handle is stale or was never valid.
    #[error("invalid or destroyed joint {0:?}")]
    InvalidJoint(JointId),
    /// Joint parameters that make no sense, or an operation the joint's type
    /// does not support.
    #[error("bad joint: {0}")]
    BadJoint(&'static str),
}

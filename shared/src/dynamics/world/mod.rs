//! The world: the public [`World`] and its API, one file per job.
//!
//! - `def.rs` — the settings ([`WorldDef`]) and errors ([`WorldError`]);
//! - `state.rs` — the world state ([`WorldState`]): what snapshots save and
//!   the state hash covers; the helpers (`ccd`, `island`, …) take it, and
//!   depend on nothing here;
//! - `body_api.rs`, `shape_api.rs` (with mass), `joint_api.rs`,
//!   `contact_api.rs`, `event_api.rs`, `query.rs` — the public API by
//!   subject;
//! - `step/` — the step pipeline, one file per [`Stage`], and its scratch
//!   memory;
//! - `derived.rs` — what a decoded state rebuilds (trees, manifolds).

mod body_api;
mod contact_api;
mod def;
mod derived;
mod event_api;
mod joint_api;
mod prefetch;
mod query;
mod shape_api;
mod state;
mod step;

pub use contact_api::ContactView;
pub use def::{WorldDef, WorldError};
pub use query::{QueryFilter, RayHit};
pub(crate) use state::WorldState;
pub use step::Stage;

use crate::dynamics::events::Events;
use crate::dynamics::joint::BrokenJoint;
use crate::math::Scalar;
use step::Scratch;

/// A deterministic 2D physics world.
#[derive(Debug)]
pub struct World {
    pub(crate) state: WorldState,
    pub(crate) scratch: Scratch,
    /// Events of the last step: not state.
    pub(crate) events: Events,
    /// Joints broken in the last step (output, not state).
    pub(crate) broken_joints: Vec<BrokenJoint>,
}

impl Default for World {
    fn default() -> World {
        World::new(WorldDef::default()).expect("default settings are valid")
    }
}

impl World {
    /// Creates an empty world.
    ///
    /// # Errors
    /// A zero tick rate or substep count.
    pub fn new(def: WorldDef) -> Result<World, WorldError> {
        if def.tick_rate == 0 || def.tick_rate > 10_000 {
            return Err(WorldError::BadSettings("tick_rate must be 1..=10000"));
        }
        if def.substeps == 0 || def.substeps > 64 {
            return Err(WorldError::BadSettings("substeps must be 1..=64"));
        }
        if def.hit_event_threshold < Scalar::ZERO {
            return Err(WorldError::BadSettings(
                "hit_event_threshold must not be negative",
            ));
        }
        Ok(World::from_state(WorldState::empty(def)))
    }

    pub(crate) fn from_state(state: WorldState) -> World {
        World {
            state,
            scratch: Scratch::default(),
            events: Events::default(),
            broken_joints: Vec::new(),
        }
    }

    /// The settings the world was made with.
    pub fn settings(&self) -> &WorldDef {
        &self.state.settings
    }

    /// Number of steps taken.
    pub fn tick(&self) -> u64 {
        self.state.tick
    }

    /// Step length in seconds.
    pub fn dt(&self) -> Scalar {
        Scalar::ONE / Scalar::from_int(self.state.settings.tick_rate as i32)
    }
}

#[cfg(test)]
impl World {
    /// The contact solver's bundles and body states as the last step left
    /// them (for measuring the kernels).
    pub(crate) fn solver_parts(
        &mut self,
    ) -> (
        &mut crate::dynamics::graph::Graph,
        &mut Vec<crate::dynamics::solver::BodyState>,
    ) {
        self.take_shared_scratch();
        (&mut self.scratch.graph, &mut self.scratch.states)
    }
}

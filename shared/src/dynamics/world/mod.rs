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
pub(crate) mod workers;

pub use contact_api::ContactView;
pub use def::{WorldDef, WorldError};
pub use query::{QueryFilter, RayHit};
pub(crate) use state::WorldState;
pub use step::Stage;

use crate::dynamics::events::Events;
use crate::dynamics::joint::BrokenJoint;
use crate::math::Scalar;
use std::sync::Arc;
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
    /// The workers that take the step's parallel parts, with the stepping
    /// thread (see [`World::set_threads`]); not state.
    pub(crate) pool: Option<Arc<workers::Workers>>,
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
            pool: None,
        }
    }

    /// Steps on `threads` threads: the calling one and `threads − 1`
    /// workers of a pool this world keeps, which take the parts of a step
    /// that are independent (the contacts' preparation in ranges of
    /// bundles, the joints' beside them; in a world of many separate piles
    /// (of boxes, of ragdolls) with enough contacts, the solve itself, in
    /// groups of bodies that no contact or joint joins, each group's
    /// contacts and joints prepared and solved on a thread; in one big
    /// island (a pile) with enough contacts in each colour, the substeps on
    /// every thread, each run of one colour split between them; the pair
    /// search in ranges of the shapes that moved; the narrow phase in
    /// ranges of the contact list; from 2 048 awake bodies a thread, the
    /// bodies' finishing in ranges of them). Each part is a function of
    /// what it reads, written to places of its own; what must happen in
    /// order (events, the tree's growth) is taken from the parts in order
    /// on the calling thread. So the world's bits are the same for any
    /// count (`shared/tests/threads.rs`). A world too small to share out
    /// steps on the calling thread alone. One (the default) never touches
    /// a pool.
    ///
    /// Rooms on a server step on one thread each: their parallelism is
    /// across rooms. This is for one big world with cores to spare: while
    /// the threads fit the machine's cores, each worker spins for up to
    /// about a millisecond after its part of a step (here; up to five
    /// times that on processors with a slower spin-loop hint), waiting for
    /// the next (a sleeping worker took 60 µs and more to wake), so a world
    /// stepped 60 times a second keeps each worker's core some 6 % busy
    /// between steps here.
    ///
    /// # Errors
    /// `threads` outside `1..=64`, or the platform cannot start threads
    /// (then the world keeps stepping as before).
    pub fn set_threads(&mut self, threads: usize) -> Result<(), WorldError> {
        if !(1..=64).contains(&threads) {
            return Err(WorldError::BadSettings("threads must be 1..=64"));
        }
        if threads == 1 {
            self.pool = None;
            return Ok(());
        }
        let pool = workers::Workers::new(threads)?;
        self.pool = Some(Arc::new(pool));
        Ok(())
    }

    /// The threads a step runs on (see [`World::set_threads`]).
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, |p| p.threads())
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
        &mut crate::dynamics::solver::States,
    ) {
        self.take_shared_scratch();
        (&mut self.scratch.graph, &mut self.scratch.states)
    }
}

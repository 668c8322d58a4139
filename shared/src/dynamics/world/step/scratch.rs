//! The step's scratch memory: buffers reused from step to step, never
//! state (not saved, not hashed).
//!
//! One set per thread, not per world: a step takes the thread's set for
//! its duration (`step/mod.rs`), with the world's own recycler (the one
//! part that caches something of the positions across steps) put in. A
//! server ticks many rooms on a thread, each room's tick after other
//! rooms' ticks and the network's work; each with its own buffers found
//! them cold every tick (the solver's bundles alone are about 220 bytes a
//! contact, every one rewritten each step), and one shared set stays warm
//! (see docs/fleet.md). Every step rewrites what it reads of them, so
//! which world used them last changes nothing (a test interleaves the
//! steps of different scenes on one thread).

use super::collide::CollideOut;
use super::colours::ColourScratch;
use super::finish::FinishRange;
use super::groups::Groups;
use crate::dynamics::ccd::CcdScratch;
use crate::dynamics::contact::Contact;
use crate::dynamics::graph::{Graph, PrepareInputs};
use crate::dynamics::joint::JointSolver;
use crate::dynamics::recycle::Recycler;
use crate::dynamics::solver::{ContactCold, ContactConstraint, Impulses, States};
use crate::dynamics::world::WorldState;
use crate::math::Scalar;

/// Scratch memory reused between steps (and between worlds); never state.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) states: States,
    pub(crate) slot_of: Vec<u32>,
    /// Per solver slot, whether the contact solver moves that body (a
    /// non-zero inverse mass or inertia): what colouring asks of both
    /// bodies of every contact, a byte each instead of a state's line.
    pub(crate) moving: Vec<bool>,
    pub(crate) awake: Vec<u32>,
    /// Contacts solved one at a time: those the colouring could not place.
    pub(crate) constraints: Vec<ContactConstraint>,
    /// What the substep loop never reads of the contacts solved one at a
    /// time and of those that report hits, in key order (see
    /// [`ContactCold`]).
    pub(crate) constraints_cold: Vec<ContactCold>,
    /// The pair keys of the contacts solved this step, in key order (the
    /// step's end finds each one's impulses by walking the contact list
    /// and this one together: the pair search may insert contacts in
    /// between, shifting indices).
    pub(crate) solved_keys: Vec<u64>,
    /// The impulses each of those accumulated (filled at the solve's end).
    pub(crate) impulses: Vec<Impulses>,
    /// The contacts to solve this step, in key order (indices into the
    /// contact list).
    pub(crate) solve_order: Vec<u32>,
    /// The coloured contacts, in bundles (see `graph`).
    pub(crate) graph: Graph,
    /// The step's groups, when it solves in groups (see `groups`).
    pub(crate) groups: Groups,
    /// The solver states the threads share when they solve one island's
    /// runs together (see `colours`).
    pub(crate) colour: ColourScratch,
    /// The stages the threads met at in the last step's substeps, when
    /// they solved its runs together (zero: they did not).
    pub(crate) colour_stages: usize,
    pub(crate) candidates: Vec<u32>,
    pub(crate) pairs: Vec<u64>,
    /// The pair search's candidates and pairs on each worker (see
    /// `World::set_threads`).
    pub(crate) par_pairs: Vec<(Vec<u32>, Vec<u32>, Vec<u64>)>,
    /// The pair search's stack for walking the trees.
    pub(crate) query_stack: Vec<u32>,
    pub(crate) new_contacts: Vec<Contact>,
    pub(crate) remove: Vec<bool>,
    /// Per place in the contact list, whether the last pass that collided
    /// the contact there renewed its manifold (ran the narrow phase, most
    /// often): a guess at whether this pass will, for asking for its shapes'
    /// lines ahead (see `collide`). Kept between passes and never
    /// compacted: after contacts are added or dropped the places shift and
    /// some guesses are another contact's, which costs only a wasted or a
    /// missing prefetch; nothing reads it otherwise.
    pub(crate) narrow_hint: Vec<bool>,
    pub(crate) wake: Vec<u32>,
    /// Per body slot, whether one of its shapes was queued as moved before
    /// this step (teleported, or its centre moved): the step's first
    /// collide collides its contacts even where both bodies sleep.
    pub(crate) moved_bodies: Vec<bool>,
    /// Solver slots of the bodies of every touching contact, then every
    /// joint, being solved this step (for the islands).
    pub(crate) links: Vec<(u32, u32)>,
    pub(crate) parent: Vec<u32>,
    pub(crate) min_time: Vec<Scalar>,
    pub(crate) min_index: Vec<u32>,
    pub(crate) ccd: CcdScratch,
    pub(crate) joints: JointSolver,
    pub(crate) broken: Vec<u32>,
    /// The bodies' reference poses and the contacts' manifolds at them
    /// (see `recycle`): caches of the positions.
    pub(crate) recycler: Recycler,
    /// What each range of the collide stage leaves for its end.
    pub(crate) collide_outs: Vec<CollideOut>,
    /// What each range of the finish stage's bodies leaves for its end.
    pub(crate) finish_ranges: Vec<FinishRange>,
}

impl Scratch {
    /// Lays out and prepares the contacts coloured since the last call
    /// ([`Graph::finish_window`]) from this step's solver slots and order.
    pub(super) fn finish_window(&mut self, st: &WorldState) {
        let inp = PrepareInputs {
            contacts: &st.contacts,
            bodies: &st.bodies,
            states: &self.states,
            slot_of: &self.slot_of,
            order: &self.solve_order,
        };
        self.graph.finish_window(inp, &mut self.constraints_cold);
    }
}

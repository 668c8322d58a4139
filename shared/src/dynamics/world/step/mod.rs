//! The step pipeline: one file per stage, run in the order of
//! [`Stage::ALL`].
//!
//! 1. **prepare** (`prepare.rs`) — solver slots for the awake bodies; the
//!    touching contacts coloured into bundles (see `graph`) and prepared;
//!    the joints prepared (see `joint`);
//! 2. **substeps** (`substeps.rs`) — the soft-step solver (see `solver`):
//!    each substep integrates velocities, warm starts, solves the contacts
//!    then the joints, integrates positions and relaxes (contacts, then
//!    joints);
//! 3. **finish** (`finish.rs`) — restitution; impulses stored for the next
//!    warm start; hit events; bodies finalized (transforms, sleep timers);
//!    continuous collision for fast bodies (see `ccd`); fat boxes follow the
//!    final transforms; joints whose reaction exceeded their threshold are
//!    destroyed and reported;
//! 4. **pairs** (`pairs.rs`) — the broad phase: shapes whose fat box moved
//!    query the trees; new pairs are merged into the contact list (kept
//!    sorted by shape pair);
//! 5. **collide** (`collide.rs`) — the narrow phase: manifolds for contacts
//!    with an awake body (recycled where they can be, see `recycle`);
//!    contacts whose fat boxes separated are dropped; contacts that begin
//!    touching a sleeping body wake its island;
//! 6. **sleep** (`sleep.rs`) — islands at rest fall asleep (see `island`).
//!
//! Prepare, substeps and finish are *the solve*; a step with nothing awake
//! skips them. Collision runs last, so the manifolds a step leaves are a
//! function of the positions it leaves (and of each contact's direct flag,
//! decided there from the velocities: recycled or the narrow phase's at
//! the current poses). Shapes created since the last step
//! get their pairs and collide first, before the solve.
//!
//! Sensor pairs are contacts too, flagged `sensor`: collide tests them for
//! overlap instead of building a manifold, and the solver and islands skip
//! them. Collide and finish report events (see `events`). The step's
//! buffers live in [`Scratch`] (`scratch.rs`), apart from the state.

mod collide;
mod colours;
mod finish;
mod groups;
mod pairs;
mod prepare;
mod scratch;
mod sleep;
mod substeps;

pub(crate) use scratch::Scratch;

use crate::dynamics::joint::JointContext;
use crate::dynamics::solver::Softness;
use crate::dynamics::world::World;
use crate::math::Scalar;

/// Tests' ground: a fixed body at (`x`, −1) with a box `half_width`
/// metres either side and a metre deep (its top at y = 0).
#[cfg(test)]
fn test_ground(w: &mut World, x: i32, half_width: i32) -> crate::BodyId {
    use crate::{BodyDef, Polygon, ShapeDef, ShapeGeometry, Vec2};
    let g = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(x, -1)))
        .unwrap();
    let wide = ShapeGeometry::Polygon(Polygon::make_box(Scalar::from_int(half_width), Scalar::ONE));
    w.create_shape(g, &ShapeDef::default(), wide).unwrap();
    g
}

std::thread_local! {
    /// The step buffers of the worlds stepped on this thread (see
    /// [`Scratch`]): one set, warm in the cache from one world's step to
    /// the next. Never state.
    static SHARED: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

/// A stage of a step, as [`World::step_observed`] reports it when it ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stage {
    /// Solver slots, colouring and preparing the contacts and joints.
    Prepare,
    /// The substeps: integration, warm start, solve, relax.
    Substeps,
    /// Restitution, impulses stored, hit events, bodies finalized,
    /// continuous collision, fat boxes, broken joints.
    Finish,
    /// The pair search (broad phase).
    Pairs,
    /// The narrow phase: every awake contact's manifold.
    Collide,
    /// Islands and sleep, the step's events closed.
    Sleep,
}

impl Stage {
    /// Every stage, in step order.
    pub const ALL: [Stage; 6] = [
        Stage::Prepare,
        Stage::Substeps,
        Stage::Finish,
        Stage::Pairs,
        Stage::Collide,
        Stage::Sleep,
    ];

    /// A short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Prepare => "prepare",
            Stage::Substeps => "substeps",
            Stage::Finish => "finish",
            Stage::Pairs => "pairs",
            Stage::Collide => "collide",
            Stage::Sleep => "sleep",
        }
    }
}

/// What the prepare stage hands to the substeps and finish stages: the
/// step's rates and softness, fixed by the settings.
#[derive(Clone, Copy)]
struct Solve {
    /// Step length.
    dt: Scalar,
    /// Substep length.
    h: Scalar,
    /// Substep rate (`inv_h_int` as a scalar).
    inv_h: Scalar,
    /// Substep rate, whole substeps per second.
    inv_h_int: u32,
    /// Contact softness: between moving bodies, and against static ones.
    soft: [Softness; 2],
    /// Joint constants.
    joints: JointContext,
    /// Whether a solved contact reports hit events.
    any_hit_events: bool,
}

impl World {
    /// Advances the world by one step of `1 / tick_rate` seconds.
    ///
    /// Collision runs at the *end* of the step, after the bodies moved: the
    /// manifolds a step leaves behind are those of the positions it leaves
    /// behind, so the contact geometry is a function of the rest of the
    /// state (see `encoding`: it is not stored in snapshots or hashed).
    /// Shapes created since the last step (the only API change that needs
    /// new pairs) get their pairs and manifolds first. Over a run of steps
    /// the order of the stages is the same as colliding first.
    pub fn step(&mut self) {
        self.step_observed(&mut |_| {});
    }

    /// [`World::step`], calling `observe` as each [`Stage`] ends (in the
    /// order of [`Stage::ALL`]; a step with nothing awake skips the solver's
    /// stages). The observer cannot change the step: it is for profiles,
    /// which measure time outside this crate (no clocks in here).
    pub fn step_observed(&mut self, observe: &mut dyn FnMut(Stage)) {
        // The step's buffers are the thread's (see `Scratch`), with this
        // world's caches of its positions put in for the step.
        let mut shared = SHARED.with(|s| s.take());
        std::mem::swap(&mut shared.recycler, &mut self.scratch.recycler);
        std::mem::swap(&mut shared, &mut self.scratch);
        self.step_stages(observe);
        std::mem::swap(&mut shared, &mut self.scratch);
        std::mem::swap(&mut shared.recycler, &mut self.scratch.recycler);
        SHARED.with(|s| s.set(shared));
    }

    /// Moves the thread's step buffers, as the last step on this thread
    /// left them, into this world (for measuring the solver's kernels).
    #[cfg(test)]
    pub(crate) fn take_shared_scratch(&mut self) {
        let mut shared = SHARED.with(|s| s.take());
        std::mem::swap(&mut shared.recycler, &mut self.scratch.recycler);
        self.scratch = shared;
    }

    fn step_stages(&mut self, observe: &mut dyn FnMut(Stage)) {
        self.events.begin_step();
        self.broken_joints.clear();
        if !self.state.moved.is_empty() {
            self.state
                .mark_queued_bodies(&mut self.scratch.moved_bodies);
            self.pairs();
            self.collide(false);
        }
        if let Some(solve) = self.prepare() {
            observe(Stage::Prepare);
            self.substeps(&solve);
            observe(Stage::Substeps);
            self.finish(&solve);
            observe(Stage::Finish);
        }
        self.pairs();
        observe(Stage::Pairs);
        self.collide(true);
        observe(Stage::Collide);
        self.sleep();
        self.events.finish_step();
        self.state.tick += 1;
        observe(Stage::Sleep);
    }
}

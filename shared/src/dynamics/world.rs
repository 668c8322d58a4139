//! The world: public API and the step pipeline.
//!
//! Stages of a step, in order:
//! 1. **pairs** — shapes whose fat box moved query the trees; new pairs are
//!    sorted and merged into the contact list (kept sorted by shape pair);
//! 2. **contacts** — manifolds are recomputed for contacts with an awake
//!    body; contacts whose fat boxes separated are dropped; contacts that
//!    begin touching a sleeping body wake its island;
//! 3. **solve** — the soft-step solver (see `solver`) with the joints (see
//!    `joint`) solved before the contacts in every pass;
//! 4. **finalize** — transforms and sleep timers;
//! 5. **continuous** — fast bodies move back to their time of impact (see
//!    `ccd`); then the fat boxes follow the final transforms;
//! 6. **sleep** — islands at rest fall asleep (see `island`);
//! 7. **break** — joints whose reaction exceeded their threshold are
//!    destroyed and reported.
//!
//! Sensor pairs are contacts too, flagged `sensor`: stage 2 tests them for
//! overlap instead of building a manifold, and the solver and islands skip
//! them. Stages 2 and 3 report events (see `events`).

use super::body::{
    Body, BodyConfig, BodyDef, BodyId, BodyIn, BodyKind, BodyOut, ShapeId, NONE, NO_ISLAND,
};
use super::ccd::{self, CcdScratch};
use super::contact::{match_impulses, pair_key, sensor_pair_allowed, Contact, PreviousPoints};
use super::events::Events;
use super::graph::{self, Graph, OVERFLOW};
use super::island;
use super::joint::{self, BrokenJoint, Joint, JointContext, JointFilter, JointId, JointSolver};
use super::recycle::{self, Pair, Recycler};
use super::shape::{Shape, ShapeDef, ShapeIn, ShapeOut, VACANT_GEOMETRY};
use super::solver::{self, BodyState, ConstraintPoint, ContactCold, ContactConstraint};
use crate::collision::{shapes_overlap, DynamicTree, Manifold, SPECULATIVE_DISTANCE};
use crate::geometry::{GeometryError, MassData, ShapeGeometry};
use crate::math::{Aabb, Rot, Scalar, Transform, Vec2, WORLD_BOUND};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A stage of a step, as [`World::step_observed`] reports it when it ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stage {
    /// Solver slots, colouring and preparing the contacts and joints.
    Prepare,
    /// The substeps: integration, warm start, solve, relax.
    Substeps,
    /// Restitution, impulses stored, events, bodies finalized, continuous
    /// collision, fat boxes.
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

/// Everything that affects the future of a world. Serialized for snapshots
/// and hashed for [`World::state_hash`]; see `state.rs` for the encoding.
#[derive(Debug)]
pub(crate) struct WorldState {
    pub settings: WorldDef,
    pub tick: u64,
    pub bodies: Vec<Body>,
    /// Settings of every body slot (parallel to `bodies`), shared
    /// copy-on-write like `geometry`. Encoded inside each body (see
    /// [`BodyOut`]).
    pub body_config: Arc<Vec<BodyConfig>>,
    pub free_bodies: Vec<u32>,
    pub shapes: Vec<Shape>,
    /// Geometry of every shape slot (parallel to `shapes`), shared
    /// copy-on-write: saving a snapshot copies the pointer, and only
    /// creating or destroying a shape while a snapshot holds it copies the
    /// list. Encoded inside each shape (see [`ShapeOut`]).
    pub geometry: Arc<Vec<ShapeGeometry>>,
    pub free_shapes: Vec<u32>,
    /// Sorted by `(shape_a, shape_b)`.
    pub contacts: Vec<Contact>,
    /// Shape slots queued for the next pair search.
    pub moved: Vec<u32>,
    /// Joint slots, live or free.
    pub joints: Vec<Joint>,
    /// The joint id pool (the last is reused first).
    pub free_joints: Vec<u32>,
    /// Body pairs kept apart by joints: derived from the joints, not state.
    pub joint_filter: JointFilter,
    /// Broad-phase trees: derived from the fat boxes, rebuilt after decoding.
    pub static_tree: DynamicTree,
    pub dynamic_tree: DynamicTree,
}

impl WorldState {
    /// A body slot's settings, for writing: copies the shared list first if
    /// a snapshot holds it.
    #[inline]
    pub(crate) fn config_mut(&mut self, i: u32) -> &mut BodyConfig {
        &mut Arc::make_mut(&mut self.body_config)[i as usize]
    }
}

/// The body slots with their settings, as one sequence of [`BodyOut`].
struct BodiesOut<'a>(&'a [Body], &'a [BodyConfig]);

impl Serialize for BodiesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().zip(self.1).map(|(b, c)| BodyOut::new(b, c)))
    }
}

/// The shape slots with their geometry, as one sequence of [`ShapeOut`].
struct ShapesOut<'a>(&'a [Shape], &'a [ShapeGeometry]);

impl Serialize for ShapesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .iter()
                .zip(self.1)
                .map(|(sh, g)| ShapeOut::new(sh, g)),
        )
    }
}

impl Serialize for WorldState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("WorldState", 10)?;
        st.serialize_field("settings", &self.settings)?;
        st.serialize_field("tick", &self.tick)?;
        st.serialize_field("bodies", &BodiesOut(&self.bodies, &self.body_config))?;
        st.serialize_field("free_bodies", &self.free_bodies)?;
        st.serialize_field("shapes", &ShapesOut(&self.shapes, &self.geometry))?;
        st.serialize_field("free_shapes", &self.free_shapes)?;
        st.serialize_field("contacts", &self.contacts)?;
        st.serialize_field("moved", &self.moved)?;
        st.serialize_field("joints", &self.joints)?;
        st.serialize_field("free_joints", &self.free_joints)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for WorldState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WorldState, D::Error> {
        /// The encoded fields, in order.
        #[derive(Deserialize)]
        #[serde(rename = "WorldState")]
        struct Repr {
            settings: WorldDef,
            tick: u64,
            bodies: Vec<BodyIn>,
            free_bodies: Vec<u32>,
            shapes: Vec<ShapeIn>,
            free_shapes: Vec<u32>,
            contacts: Vec<Contact>,
            moved: Vec<u32>,
            joints: Vec<Joint>,
            free_joints: Vec<u32>,
        }
        let r = Repr::deserialize(d)?;
        let (bodies, body_config): (Vec<Body>, Vec<BodyConfig>) =
            r.bodies.into_iter().map(BodyIn::split).unzip();
        let (shapes, geometry): (Vec<Shape>, Vec<ShapeGeometry>) =
            r.shapes.into_iter().map(ShapeIn::split).unzip();
        Ok(WorldState {
            settings: r.settings,
            tick: r.tick,
            bodies,
            body_config: Arc::new(body_config),
            free_bodies: r.free_bodies,
            shapes,
            geometry: Arc::new(geometry),
            free_shapes: r.free_shapes,
            contacts: r.contacts,
            moved: r.moved,
            joints: r.joints,
            free_joints: r.free_joints,
            joint_filter: JointFilter::default(),
            static_tree: DynamicTree::default(),
            dynamic_tree: DynamicTree::default(),
        })
    }
}

impl Clone for WorldState {
    fn clone(&self) -> WorldState {
        WorldState {
            settings: self.settings,
            tick: self.tick,
            bodies: self.bodies.clone(),
            body_config: Arc::clone(&self.body_config),
            free_bodies: self.free_bodies.clone(),
            shapes: self.shapes.clone(),
            geometry: Arc::clone(&self.geometry),
            free_shapes: self.free_shapes.clone(),
            contacts: self.contacts.clone(),
            moved: self.moved.clone(),
            joints: self.joints.clone(),
            free_joints: self.free_joints.clone(),
            joint_filter: self.joint_filter.clone(),
            static_tree: self.static_tree.clone(),
            dynamic_tree: self.dynamic_tree.clone(),
        }
    }

    /// Field-wise `clone_from`: every vector keeps its allocation and the
    /// plain-data elements are copied in bulk, so a rollback restore costs a
    /// few memcpys and no allocation.
    fn clone_from(&mut self, o: &WorldState) {
        self.settings = o.settings;
        self.tick = o.tick;
        self.bodies.clone_from(&o.bodies);
        self.body_config = Arc::clone(&o.body_config);
        self.free_bodies.clone_from(&o.free_bodies);
        self.shapes.clone_from(&o.shapes);
        self.geometry = Arc::clone(&o.geometry);
        self.free_shapes.clone_from(&o.free_shapes);
        self.contacts.clone_from(&o.contacts);
        self.moved.clone_from(&o.moved);
        self.joints.clone_from(&o.joints);
        self.free_joints.clone_from(&o.free_joints);
        self.joint_filter.clone_from(&o.joint_filter);
        self.static_tree.clone_from(&o.static_tree);
        self.dynamic_tree.clone_from(&o.dynamic_tree);
    }
}

/// Scratch memory reused between steps; never state.
#[derive(Debug, Default)]
struct Scratch {
    states: Vec<BodyState>,
    slot_of: Vec<u32>,
    awake: Vec<u32>,
    /// Contacts solved one at a time: those the colouring could not place.
    constraints: Vec<ContactConstraint>,
    /// Every contact solved this step, in key order: what the substep
    /// loop never reads, and the impulses it accumulated.
    constraints_cold: Vec<ContactCold>,
    /// The contacts to solve this step, in key order (indices into the
    /// contact list).
    solve_order: Vec<u32>,
    /// The coloured contacts, in bundles (see `graph`).
    graph: Graph,
    candidates: Vec<u32>,
    pairs: Vec<u64>,
    new_contacts: Vec<Contact>,
    remove: Vec<bool>,
    wake: Vec<u32>,
    /// Solver slots of the bodies of every touching contact, then every
    /// joint, being solved this step (for the islands).
    links: Vec<(u32, u32)>,
    parent: Vec<u32>,
    min_time: Vec<Scalar>,
    min_index: Vec<u32>,
    ccd: CcdScratch,
    joints: JointSolver,
    broken: Vec<u32>,
    /// The bodies' reference poses and the contacts' manifolds at them
    /// (see `recycle`): caches of the positions.
    recycler: Recycler,
}

impl Scratch {
    /// Lays out and prepares the contacts coloured since the last call
    /// ([`Graph::finish_window`]) from this step's solver slots and order.
    fn finish_window(&mut self, st: &WorldState) {
        self.graph.finish_window(
            &st.contacts,
            &st.bodies,
            &self.states,
            &self.slot_of,
            &self.solve_order,
            &mut self.constraints_cold,
        );
    }
}

/// A contact point as seen from outside (for drawing and inspection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactView {
    /// First shape.
    pub shape_a: ShapeId,
    /// Second shape.
    pub shape_b: ShapeId,
    /// World point.
    pub point: Vec2,
    /// Normal from A to B.
    pub normal: Vec2,
    /// Separation (negative = overlap).
    pub separation: Scalar,
    /// Accumulated normal impulse.
    pub normal_impulse: Scalar,
}

/// A deterministic 2D physics world.
#[derive(Debug)]
pub struct World {
    pub(crate) state: WorldState,
    scratch: Scratch,
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
        Ok(World::from_state(WorldState {
            settings: def,
            tick: 0,
            bodies: Vec::new(),
            body_config: Arc::new(Vec::new()),
            free_bodies: Vec::new(),
            shapes: Vec::new(),
            geometry: Arc::new(Vec::new()),
            free_shapes: Vec::new(),
            contacts: Vec::new(),
            moved: Vec::new(),
            joints: Vec::new(),
            free_joints: Vec::new(),
            joint_filter: JointFilter::default(),
            static_tree: DynamicTree::new(),
            dynamic_tree: DynamicTree::new(),
        }))
    }

    /// Forgets what the scratch caches of the positions (the state was
    /// replaced: a shape slot may hold another shape now).
    pub(crate) fn forget_caches(&mut self) {
        self.scratch.recycler.forget();
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

    // ----- bodies -----

    /// Creates a body.
    ///
    /// # Errors
    /// A position outside the world bounds or a negative damping.
    pub fn create_body(&mut self, def: &BodyDef) -> Result<BodyId, WorldError> {
        if def.position.x.abs() > WORLD_BOUND || def.position.y.abs() > WORLD_BOUND {
            return Err(WorldError::OutOfBounds("position"));
        }
        let max_v = self.state.settings.max_linear_speed;
        if def.linear_velocity.x.abs() > max_v || def.linear_velocity.y.abs() > max_v {
            return Err(WorldError::OutOfBounds("linear_velocity"));
        }
        if def.linear_damping < Scalar::ZERO || def.angular_damping < Scalar::ZERO {
            return Err(WorldError::Negative("damping"));
        }
        let index = match self.state.free_bodies.pop() {
            Some(i) => i,
            None => {
                self.state.bodies.push(Body::vacant());
                Arc::make_mut(&mut self.state.body_config).push(BodyConfig::VACANT);
                (self.state.bodies.len() - 1) as u32
            }
        };
        *self.state.config_mut(index) = BodyConfig {
            linear_damping: def.linear_damping,
            angular_damping: def.angular_damping,
            gravity_scale: def.gravity_scale,
            sleep_threshold: def.sleep_threshold,
            enable_sleep: def.enable_sleep,
            fixed_rotation: def.fixed_rotation,
            user_data: def.user_data,
            bullet: def.bullet && def.kind == BodyKind::Dynamic,
            ..BodyConfig::VACANT
        };
        let b = &mut self.state.bodies[index as usize];
        let generation = b.generation;
        *b = Body::vacant();
        b.generation = generation;
        b.alive = true;
        b.kind = def.kind;
        b.transform = Transform::new(def.position, def.rotation.normalize());
        b.center = def.position;
        b.linear_velocity = def.linear_velocity;
        b.angular_velocity = def.angular_velocity;
        b.awake = def.kind != BodyKind::Static && def.awake;
        if def.kind != BodyKind::Static && !def.awake {
            b.sleep_island = index;
        }
        let id = BodyId { index, generation };
        self.update_mass(index);
        Ok(id)
    }

    pub(crate) fn body_index(&self, id: BodyId) -> Result<u32, WorldError> {
        match self.state.bodies.get(id.index as usize) {
            Some(b) if b.alive && b.generation == id.generation => Ok(id.index),
            _ => Err(WorldError::InvalidBody(id)),
        }
    }

    fn body_ref(&self, id: BodyId) -> Result<&Body, WorldError> {
        let i = self.body_index(id)?;
        Ok(&self.state.bodies[i as usize])
    }

    /// Whether the handle names a live body.
    pub fn contains_body(&self, id: BodyId) -> bool {
        self.body_index(id).is_ok()
    }

    /// Destroys a body, its joints, shapes and contacts; wakes what touched
    /// it or was joined to it.
    ///
    /// # Errors
    /// A stale handle.
    pub fn destroy_body(&mut self, id: BodyId) -> Result<(), WorldError> {
        let index = self.body_index(id)?;
        self.destroy_joints_of(index);
        self.wake_touching(index);
        let st = &self.state;
        let gone = st
            .contacts
            .iter()
            .filter(|c| c.body_a == index || c.body_b == index);
        self.events.contacts_destroyed(&st.shapes, gone);
        let mut s = self.state.bodies[index as usize].first_shape;
        while s != NONE {
            let next = self.state.shapes[s as usize].next;
            self.free_shape(s);
            s = next;
        }
        self.state
            .contacts
            .retain(|c| c.body_a != index && c.body_b != index);
        let b = &mut self.state.bodies[index as usize];
        let generation = b.generation.wrapping_add(1);
        *b = Body::vacant();
        b.generation = generation;
        *self.state.config_mut(index) = BodyConfig::VACANT;
        self.state.free_bodies.push(index);
        Ok(())
    }

    /// Destroys several bodies with their joints, shapes and contacts, in
    /// one pass over the joints and contacts rather than one per body; wakes
    /// what touched them or was joined to them. Slots are freed in the order
    /// given (joints in slot order).
    ///
    /// # Errors
    /// A stale or repeated handle; then nothing is destroyed.
    pub fn destroy_bodies(&mut self, ids: &[BodyId]) -> Result<(), WorldError> {
        let mut doomed = vec![false; self.state.bodies.len()];
        for &id in ids {
            let i = self.body_index(id)? as usize;
            if doomed[i] {
                return Err(WorldError::InvalidBody(id));
            }
            doomed[i] = true;
        }
        for j in 0..self.state.joints.len() {
            let jj = &self.state.joints[j];
            if jj.alive && (doomed[jj.body_a as usize] || doomed[jj.body_b as usize]) {
                self.remove_joint(j as u32);
            }
        }
        let mut islands = Vec::new();
        for &id in ids {
            let b = &self.state.bodies[id.index as usize];
            if b.sleep_island != NO_ISLAND {
                islands.push(b.sleep_island);
            }
        }
        for c in &self.state.contacts {
            if doomed[c.body_a as usize] || doomed[c.body_b as usize] {
                for o in [c.body_a, c.body_b] {
                    let ob = &self.state.bodies[o as usize];
                    if ob.sleep_island != NO_ISLAND {
                        islands.push(ob.sleep_island);
                    }
                }
            }
        }
        islands.sort_unstable();
        islands.dedup();
        island::wake_islands(&mut self.state, &islands);
        for &id in ids {
            let mut s = self.state.bodies[id.index as usize].first_shape;
            while s != NONE {
                let next = self.state.shapes[s as usize].next;
                self.free_shape(s);
                s = next;
            }
        }
        self.state
            .contacts
            .retain(|c| !doomed[c.body_a as usize] && !doomed[c.body_b as usize]);
        for &id in ids {
            let b = &mut self.state.bodies[id.index as usize];
            let generation = b.generation.wrapping_add(1);
            *b = Body::vacant();
            b.generation = generation;
            *self.state.config_mut(id.index) = BodyConfig::VACANT;
            self.state.free_bodies.push(id.index);
        }
        Ok(())
    }

    /// Wakes the body's island and the islands of bodies touching it.
    fn wake_touching(&mut self, index: u32) {
        let mut ids = Vec::new();
        let b = &self.state.bodies[index as usize];
        if b.sleep_island != NO_ISLAND {
            ids.push(b.sleep_island);
        }
        for c in &self.state.contacts {
            if c.body_a == index || c.body_b == index {
                for o in [c.body_a, c.body_b] {
                    let ob = &self.state.bodies[o as usize];
                    if ob.sleep_island != NO_ISLAND {
                        ids.push(ob.sleep_island);
                    }
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        island::wake_islands(&mut self.state, &ids);
    }

    pub(crate) fn wake_body(&mut self, index: u32) {
        let b = &self.state.bodies[index as usize];
        if b.kind == BodyKind::Static {
            return;
        }
        if b.sleep_island != NO_ISLAND {
            let id = [b.sleep_island];
            island::wake_islands(&mut self.state, &id);
        }
        self.state.bodies[index as usize].sleep_time = Scalar::ZERO;
    }

    /// Live bodies in slot order.
    pub fn bodies(&self) -> impl Iterator<Item = BodyId> + '_ {
        self.state
            .bodies
            .iter()
            .enumerate()
            .filter(|(_, b)| b.alive)
            .map(|(i, b)| BodyId {
                index: i as u32,
                generation: b.generation,
            })
    }

    /// Number of live bodies.
    pub fn body_count(&self) -> usize {
        self.state.bodies.iter().filter(|b| b.alive).count()
    }

    /// Number of contacts (pairs with overlapping fat boxes).
    pub fn contact_count(&self) -> usize {
        self.state.contacts.len()
    }

    /// Number of contacts with at least one manifold point (sensor overlaps excluded).
    pub fn touching_contact_count(&self) -> usize {
        self.state
            .contacts
            .iter()
            .filter(|c| c.touching && !c.sensor)
            .count()
    }

    /// Body kind.
    ///
    /// # Errors
    /// A stale handle.
    pub fn body_kind(&self, id: BodyId) -> Result<BodyKind, WorldError> {
        Ok(self.body_ref(id)?.kind)
    }

    /// Transform of the body origin.
    ///
    /// # Errors
    /// A stale handle.
    pub fn transform(&self, id: BodyId) -> Result<Transform, WorldError> {
        Ok(self.body_ref(id)?.transform)
    }

    /// Position of the body origin.
    ///
    /// # Errors
    /// A stale handle.
    pub fn position(&self, id: BodyId) -> Result<Vec2, WorldError> {
        Ok(self.body_ref(id)?.transform.p)
    }

    /// World centre of mass.
    ///
    /// # Errors
    /// A stale handle.
    pub fn world_center(&self, id: BodyId) -> Result<Vec2, WorldError> {
        Ok(self.body_ref(id)?.center)
    }

    /// Velocity of the centre of mass.
    ///
    /// # Errors
    /// A stale handle.
    pub fn linear_velocity(&self, id: BodyId) -> Result<Vec2, WorldError> {
        Ok(self.body_ref(id)?.linear_velocity)
    }

    /// Angular velocity (rad/s).
    ///
    /// # Errors
    /// A stale handle.
    pub fn angular_velocity(&self, id: BodyId) -> Result<Scalar, WorldError> {
        Ok(self.body_ref(id)?.angular_velocity)
    }

    /// Whether the body is awake (static bodies are never awake).
    ///
    /// # Errors
    /// A stale handle.
    pub fn is_awake(&self, id: BodyId) -> Result<bool, WorldError> {
        Ok(self.body_ref(id)?.awake)
    }

    /// Mass properties.
    ///
    /// # Errors
    /// A stale handle.
    pub fn mass_data(&self, id: BodyId) -> Result<MassData, WorldError> {
        let c = &self.state.body_config[self.body_index(id)? as usize];
        Ok(MassData {
            mass: c.mass,
            center: c.local_center,
            rotational_inertia: c.inertia,
        })
    }

    /// The user's id for the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn user_data(&self, id: BodyId) -> Result<u64, WorldError> {
        Ok(self.state.body_config[self.body_index(id)? as usize].user_data)
    }

    /// Sets the user's id for the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_user_data(&mut self, id: BodyId, data: u64) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        self.state.config_mut(i).user_data = data;
        Ok(())
    }

    /// Sets the velocity of the centre of mass; wakes the body.
    ///
    /// # Errors
    /// A stale handle or a speed beyond the limit.
    pub fn set_linear_velocity(&mut self, id: BodyId, v: Vec2) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        let max_v = self.state.settings.max_linear_speed;
        if v.x.abs() > max_v || v.y.abs() > max_v {
            return Err(WorldError::OutOfBounds("linear_velocity"));
        }
        if self.state.bodies[i as usize].kind == BodyKind::Static {
            return Ok(());
        }
        self.wake_body(i);
        self.state.bodies[i as usize].linear_velocity = v;
        Ok(())
    }

    /// Sets the angular velocity; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_angular_velocity(&mut self, id: BodyId, w: Scalar) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        let b = &self.state.bodies[i as usize];
        if b.kind == BodyKind::Static || self.state.body_config[i as usize].fixed_rotation {
            return Ok(());
        }
        self.wake_body(i);
        self.state.bodies[i as usize].angular_velocity =
            w.clamp(-MAX_ANGULAR_SPEED, MAX_ANGULAR_SPEED);
        Ok(())
    }

    /// Applies a force at a world point for the next step; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_force(&mut self, id: BodyId, force: Vec2, point: Vec2) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        let b = &mut self.state.bodies[i as usize];
        b.force += force;
        b.torque += (point - b.center).cross(force);
        Ok(())
    }

    /// Applies a force at the centre of mass for the next step; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_force_to_center(&mut self, id: BodyId, force: Vec2) -> Result<(), WorldError> {
        let c = self.body_ref(id)?.center;
        self.apply_force(id, force, c)
    }

    /// Applies a torque for the next step; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_torque(&mut self, id: BodyId, torque: Scalar) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        self.state.bodies[i as usize].torque += torque;
        Ok(())
    }

    /// Applies an impulse at a world point, changing velocity at once; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_linear_impulse(
        &mut self,
        id: BodyId,
        impulse: Vec2,
        point: Vec2,
    ) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        let c = &self.state.body_config[i as usize];
        let b = &mut self.state.bodies[i as usize];
        b.linear_velocity = clamp_speed(
            b.linear_velocity.mul_add(c.inv_mass, impulse),
            self.state.settings.max_linear_speed,
        );
        let dw = c.inv_inertia * (point - b.center).cross(impulse);
        b.angular_velocity = (b.angular_velocity + dw).clamp(-MAX_ANGULAR_SPEED, MAX_ANGULAR_SPEED);
        Ok(())
    }

    /// Applies an angular impulse; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_angular_impulse(&mut self, id: BodyId, impulse: Scalar) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        let inv_inertia = self.state.body_config[i as usize].inv_inertia;
        let b = &mut self.state.bodies[i as usize];
        b.angular_velocity = (b.angular_velocity + inv_inertia * impulse)
            .clamp(-MAX_ANGULAR_SPEED, MAX_ANGULAR_SPEED);
        Ok(())
    }

    /// Teleports a body; wakes it and what touched it.
    ///
    /// # Errors
    /// A stale handle or a position outside the world bounds.
    pub fn set_transform(
        &mut self,
        id: BodyId,
        position: Vec2,
        rotation: Rot,
    ) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if position.x.abs() > WORLD_BOUND || position.y.abs() > WORLD_BOUND {
            return Err(WorldError::OutOfBounds("position"));
        }
        self.wake_touching(i);
        self.wake_body(i);
        let local_center = self.state.body_config[i as usize].local_center;
        let b = &mut self.state.bodies[i as usize];
        b.transform = Transform::new(position, rotation.normalize());
        b.center = b.transform.apply(local_center);
        self.refresh_shapes(i, true);
        Ok(())
    }

    /// Wakes or puts to sleep a body (and its island when waking).
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_awake(&mut self, id: BodyId, awake: bool) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if awake {
            self.wake_body(i);
        } else {
            let b = &mut self.state.bodies[i as usize];
            if b.kind != BodyKind::Static && b.awake {
                b.awake = false;
                b.linear_velocity = Vec2::ZERO;
                b.angular_velocity = Scalar::ZERO;
                b.sleep_island = i;
            }
        }
        Ok(())
    }

    // ----- shapes -----

    /// Attaches a shape to a body and updates its mass.
    ///
    /// # Errors
    /// A stale body handle, a non-positive density on a dynamic body, or a
    /// negative friction or restitution.
    pub fn create_shape(
        &mut self,
        body: BodyId,
        def: &ShapeDef,
        geometry: ShapeGeometry,
    ) -> Result<ShapeId, WorldError> {
        let bi = self.body_index(body)?;
        let b = self.state.bodies[bi as usize];
        if b.kind == BodyKind::Dynamic
            && def.density <= Scalar::ZERO
            && !matches!(geometry, ShapeGeometry::Segment(_))
        {
            return Err(WorldError::BadDensity);
        }
        if def.density < Scalar::ZERO {
            return Err(WorldError::BadDensity);
        }
        if def.friction < Scalar::ZERO {
            return Err(WorldError::Negative("friction"));
        }
        if def.restitution < Scalar::ZERO {
            return Err(WorldError::Negative("restitution"));
        }
        let aabb = geometry.aabb(b.transform);
        for v in [aabb.lower, aabb.upper] {
            if v.x.abs() > WORLD_BOUND || v.y.abs() > WORLD_BOUND {
                return Err(WorldError::OutOfBounds("shape"));
            }
        }
        let index = match self.state.free_shapes.pop() {
            Some(i) => i,
            None => {
                self.state.shapes.push(Shape::vacant());
                Arc::make_mut(&mut self.state.geometry).push(VACANT_GEOMETRY);
                (self.state.shapes.len() - 1) as u32
            }
        };
        let generation = self.state.shapes[index as usize].generation;
        let fat = fat_box(aabb, b.kind);
        let tree = if b.kind == BodyKind::Static {
            &mut self.state.static_tree
        } else {
            &mut self.state.dynamic_tree
        };
        let proxy = tree.create_filtered_proxy(fat, index, def.filter.category);
        self.state.shapes[index as usize] = Shape {
            generation,
            alive: true,
            body: bi,
            def: *def,
            fat_aabb: fat,
            next: b.first_shape,
            moved: true,
            proxy,
        };
        Arc::make_mut(&mut self.state.geometry)[index as usize] = geometry;
        self.state.moved.push(index);
        self.state.bodies[bi as usize].first_shape = index;
        // Adding a shape does not wake a body created asleep (the smash wall
        // is built asleep); contacts wake it when something touches it.
        self.update_mass(bi);
        Ok(ShapeId { index, generation })
    }

    fn shape_index(&self, id: ShapeId) -> Result<u32, WorldError> {
        match self.state.shapes.get(id.index as usize) {
            Some(s) if s.alive && s.generation == id.generation => Ok(id.index),
            _ => Err(WorldError::InvalidShape(id)),
        }
    }

    /// Detaches and destroys a shape; updates the body's mass.
    ///
    /// # Errors
    /// A stale handle.
    pub fn destroy_shape(&mut self, id: ShapeId) -> Result<(), WorldError> {
        let si = self.shape_index(id)?;
        let bi = self.state.shapes[si as usize].body;
        self.wake_touching(bi);
        // Unlink from the body's list.
        let mut link = self.state.bodies[bi as usize].first_shape;
        if link == si {
            self.state.bodies[bi as usize].first_shape = self.state.shapes[si as usize].next;
        } else {
            while link != NONE {
                let next = self.state.shapes[link as usize].next;
                if next == si {
                    self.state.shapes[link as usize].next = self.state.shapes[si as usize].next;
                    break;
                }
                link = next;
            }
        }
        let st = &self.state;
        let gone = st
            .contacts
            .iter()
            .filter(|c| c.shape_a == si || c.shape_b == si);
        self.events.contacts_destroyed(&st.shapes, gone);
        self.state
            .contacts
            .retain(|c| c.shape_a != si && c.shape_b != si);
        self.free_shape(si);
        self.update_mass(bi);
        Ok(())
    }

    fn free_shape(&mut self, si: u32) {
        let s = self.state.shapes[si as usize];
        let is_static = self.state.bodies[s.body as usize].kind == BodyKind::Static;
        let tree = if is_static {
            &mut self.state.static_tree
        } else {
            &mut self.state.dynamic_tree
        };
        tree.destroy_proxy(s.proxy);
        if s.moved {
            self.state.moved.retain(|&m| m != si);
        }
        let generation = s.generation.wrapping_add(1);
        self.state.shapes[si as usize] = Shape::vacant();
        self.state.shapes[si as usize].generation = generation;
        Arc::make_mut(&mut self.state.geometry)[si as usize] = VACANT_GEOMETRY;
        self.state.free_shapes.push(si);
    }

    /// Shapes of a body, most recently attached first.
    ///
    /// # Errors
    /// A stale handle.
    pub fn body_shapes(&self, id: BodyId) -> Result<Vec<ShapeId>, WorldError> {
        let b = self.body_ref(id)?;
        let mut out = Vec::new();
        let mut s = b.first_shape;
        while s != NONE {
            let sh = &self.state.shapes[s as usize];
            out.push(ShapeId {
                index: s,
                generation: sh.generation,
            });
            s = sh.next;
        }
        Ok(out)
    }

    /// Geometry of a shape in its body's frame.
    ///
    /// # Errors
    /// A stale handle.
    pub fn shape_geometry(&self, id: ShapeId) -> Result<ShapeGeometry, WorldError> {
        Ok(self.state.geometry[self.shape_index(id)? as usize])
    }

    /// Material and filter of a shape.
    ///
    /// # Errors
    /// A stale handle.
    pub fn shape_def(&self, id: ShapeId) -> Result<ShapeDef, WorldError> {
        Ok(self.state.shapes[self.shape_index(id)? as usize].def)
    }

    /// The body a shape is attached to.
    ///
    /// # Errors
    /// A stale handle.
    pub fn shape_body(&self, id: ShapeId) -> Result<BodyId, WorldError> {
        let b = self.state.shapes[self.shape_index(id)? as usize].body;
        Ok(BodyId {
            index: b,
            generation: self.state.bodies[b as usize].generation,
        })
    }

    /// Touching contact points, in canonical order. They are those of the
    /// bodies' current positions: a step collides after moving the bodies.
    /// (Shapes created since the last step have none until the next one.)
    pub fn contacts(&self) -> impl Iterator<Item = ContactView> + '_ {
        self.contact_views(|c| c.touching)
    }

    /// The touching contact points of one shape (as A or B), in canonical
    /// order: [`World::contacts`] filtered to the shape, without building a
    /// view of every other contact. A stale handle has none.
    pub fn shape_contacts(&self, shape: ShapeId) -> impl Iterator<Item = ContactView> + '_ {
        let i = self.shape_index(shape).ok();
        self.contact_views(move |c| {
            c.touching && i.is_some_and(|i| c.shape_a == i || c.shape_b == i)
        })
    }

    fn contact_views(
        &self,
        keep: impl Fn(&Contact) -> bool + 'static,
    ) -> impl Iterator<Item = ContactView> + '_ {
        self.state
            .contacts
            .iter()
            .filter(move |c| keep(c))
            .flat_map(move |c| {
                let sid = |i: u32| ShapeId {
                    index: i,
                    generation: self.state.shapes[i as usize].generation,
                };
                let (a, b) = (sid(c.shape_a), sid(c.shape_b));
                let n = c.manifold.normal;
                c.manifold.points().iter().map(move |p| ContactView {
                    shape_a: a,
                    shape_b: b,
                    point: p.point,
                    normal: n,
                    separation: p.separation,
                    normal_impulse: p.normal_impulse,
                })
            })
    }

    /// Recomputes mass, centre and inertia from the body's shapes.
    fn update_mass(&mut self, bi: u32) {
        let mut total = Scalar::ZERO;
        let mut weighted = Vec2::ZERO;
        let mut inertia = Scalar::ZERO;
        let mut extent_shapes = Vec::new();
        let b = self.state.bodies[bi as usize];
        let mut s = b.first_shape;
        while s != NONE {
            let sh = &self.state.shapes[s as usize];
            let geometry = &self.state.geometry[s as usize];
            extent_shapes.push(*geometry);
            if b.kind == BodyKind::Dynamic && sh.def.density > Scalar::ZERO {
                let md = geometry.mass(sh.def.density);
                total += md.mass;
                weighted = weighted.mul_add(md.mass, md.center);
                inertia += md.rotational_inertia + md.mass * md.center.dot(md.center);
            }
            s = sh.next;
        }
        let dynamic = b.kind == BodyKind::Dynamic;
        let bc = self.state.config_mut(bi);
        bc.mass = Scalar::ZERO;
        bc.inv_mass = Scalar::ZERO;
        bc.inertia = Scalar::ZERO;
        bc.inv_inertia = Scalar::ZERO;
        bc.local_center = Vec2::ZERO;
        if dynamic {
            if total > Scalar::ZERO {
                let c = Vec2::new(weighted.x / total, weighted.y / total);
                bc.mass = total;
                bc.inv_mass = Scalar::ONE / total;
                bc.local_center = c;
                let i = inertia - total * c.dot(c);
                if i > Scalar::ZERO && !bc.fixed_rotation {
                    bc.inertia = i;
                    bc.inv_inertia = Scalar::ONE / i;
                }
            } else {
                // A dynamic body without mass still falls: unit mass, no rotation.
                bc.mass = Scalar::ONE;
                bc.inv_mass = Scalar::ONE;
            }
        }
        let local_center = bc.local_center;
        let mut ext = Scalar::ZERO;
        for g in &extent_shapes {
            ext = ext.max(g.extent_from(local_center));
        }
        bc.max_extent = ext;
        bc.min_extent = extent_shapes
            .iter()
            .map(ccd::shape_min_extent)
            .min()
            .unwrap_or(Scalar::ZERO);
        let b = &mut self.state.bodies[bi as usize];
        b.center = b.transform.apply(local_center);
    }

    /// Recomputes fat boxes of a body's shapes after it moved.
    fn refresh_shapes(&mut self, bi: u32, force: bool) {
        let b = self.state.bodies[bi as usize];
        let mut s = b.first_shape;
        while s != NONE {
            let sh = &mut self.state.shapes[s as usize];
            let aabb = self.state.geometry[s as usize].aabb(b.transform);
            if force || !sh.fat_aabb.contains(&aabb.expand(SPECULATIVE_DISTANCE)) {
                sh.fat_aabb = fat_box(aabb, b.kind);
                let tree = if b.kind == BodyKind::Static {
                    &mut self.state.static_tree
                } else {
                    &mut self.state.dynamic_tree
                };
                tree.move_proxy(sh.proxy, sh.fat_aabb);
                if !sh.moved {
                    sh.moved = true;
                    self.state.moved.push(s);
                }
            }
            s = sh.next;
        }
    }

    // ----- stepping -----

    /// Advances the world by one step of `1 / tick_rate` seconds.
    ///
    /// Collision runs at the *end* of the step, after the bodies moved: the
    /// manifolds a step leaves behind are those of the positions it leaves
    /// behind, so the contact geometry is a function of the rest of the
    /// state (see `state.rs`: it is not stored in snapshots or hashed).
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
        self.events.begin_step();
        self.broken_joints.clear();
        if !self.state.moved.is_empty() {
            self.update_pairs();
            self.update_contacts(false);
        }
        self.solve(observe);
        if !self.scratch.broken.is_empty() {
            let broken = core::mem::take(&mut self.scratch.broken);
            self.break_joints(&broken);
            self.scratch.broken = broken;
        }
        self.update_pairs();
        observe(Stage::Pairs);
        self.update_contacts(true);
        observe(Stage::Collide);
        self.update_sleep();
        self.events.finish_step();
        self.state.tick += 1;
        observe(Stage::Sleep);
    }

    /// Stage 1: new pairs for shapes whose fat box moved.
    fn update_pairs(&mut self) {
        // Trees grown or filled since the last step are rebuilt first (their
        // shape never changes which pairs are found).
        for tree in [&mut self.state.static_tree, &mut self.state.dynamic_tree] {
            if tree.needs_rebuild() {
                tree.rebuild();
            }
        }
        if self.state.moved.is_empty() {
            return;
        }
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let mut moved = core::mem::take(&mut st.moved);
        moved.sort_unstable();
        sc.pairs.clear();
        // Flags stay set until every moved shape has queried: a pair of two
        // moved shapes is then found once, from its lower shape (the higher
        // one skips it), so there are half as many duplicates to sort.
        for &si in &moved {
            let shape = &st.shapes[si as usize];
            let body = &st.bodies[shape.body as usize];
            sc.candidates.clear();
            let cands = &mut sc.candidates;
            // Skip subtrees of categories this shape never collides with; a
            // positive group may override the masks, so it sees everything.
            let f = &shape.def.filter;
            let mask = if f.group > 0 { u32::MAX } else { f.mask };
            if body.kind != BodyKind::Static {
                st.static_tree
                    .query_masked(&shape.fat_aabb, mask, |o| cands.push(o));
            }
            st.dynamic_tree
                .query_masked(&shape.fat_aabb, mask, |o| cands.push(o));
            for &o in sc.candidates.iter() {
                if o == si {
                    continue;
                }
                let other = &st.shapes[o as usize];
                if o < si && other.moved {
                    continue;
                }
                if other.body == shape.body {
                    continue;
                }
                let ob = &st.bodies[other.body as usize];
                if body.kind != BodyKind::Dynamic && ob.kind != BodyKind::Dynamic {
                    continue;
                }
                if !shape.def.filter.should_collide(&other.def.filter)
                    || !sensor_pair_allowed(shape, other)
                {
                    continue;
                }
                let (a, b) = if si < o { (si, o) } else { (o, si) };
                sc.pairs.push(pair_key(a, b));
            }
        }
        for &si in &moved {
            st.shapes[si as usize].moved = false;
        }
        moved.clear();
        st.moved = moved;
        if sc.pairs.is_empty() {
            return;
        }
        sc.pairs.sort_unstable();
        sc.pairs.dedup();
        sc.new_contacts.clear();
        // Skip pairs that already have a contact. Few pairs: binary search;
        // many pairs: one sequential walk, which is kinder to the cache.
        let walk = sc.pairs.len() * 16 > st.contacts.len();
        st.joint_filter.refresh(&st.joints, st.bodies.len());
        let mut ci = 0;
        for &key in &sc.pairs {
            let exists = if walk {
                while ci < st.contacts.len() && st.contacts[ci].key() < key {
                    ci += 1;
                }
                ci < st.contacts.len() && st.contacts[ci].key() == key
            } else {
                st.contacts.binary_search_by_key(&key, |c| c.key()).is_ok()
            };
            if exists {
                continue;
            }
            let (a, b) = ((key >> 32) as u32, key as u32);
            let (sa, sb) = (&st.shapes[a as usize], &st.shapes[b as usize]);
            if st.joint_filter.blocks(sa.body, sb.body) {
                continue;
            }
            sc.new_contacts.push(Contact::new(
                (a, sa, &st.geometry[a as usize]),
                (b, sb, &st.geometry[b as usize]),
            ));
        }
        if sc.new_contacts.is_empty() {
            return;
        }
        // Merge the sorted new contacts into the sorted list in place, from
        // the back: each run of old contacts moves once, as one block, and
        // the contacts before the first new key do not move at all.
        let old_len = st.contacts.len();
        let new = &sc.new_contacts;
        st.contacts.extend_from_slice(new);
        let list = &mut st.contacts[..];
        let (mut i, mut j) = (old_len, new.len());
        while j > 0 {
            let key = new[j - 1].key();
            // Old contacts [lo, i) with larger keys shift up by j.
            let lo = list[..i].partition_point(|c| c.key() < key);
            list.copy_within(lo..i, lo + j);
            list[lo + j - 1] = new[j - 1];
            i = lo;
            j -= 1;
        }
    }

    /// Stage 2: manifolds for contacts with an awake body. At the end of a
    /// step (`after_solve`), pairs of bodies solved this step that begin
    /// touching join one island for this step's sleep decision, as they
    /// would have had they been solved together.
    fn update_contacts(&mut self, after_solve: bool) {
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let ev = &mut self.events;
        sc.remove.clear();
        sc.remove.resize(st.contacts.len(), false);
        sc.wake.clear();
        sc.recycler.begin(&st.bodies);
        let mut any_removed = false;
        // After the solve: the impulses it accumulated, for the next warm
        // start, in the contacts' key order.
        let solved_cold = if after_solve {
            &sc.constraints_cold[..]
        } else {
            &[][..]
        };
        let mut next = 0;
        for (k, c) in st.contacts.iter_mut().enumerate() {
            if next < solved_cold.len() && solved_cold[next].key == c.key() {
                let cold = &solved_cold[next];
                let count = usize::from(c.manifold.count);
                for (j, mp) in c.manifold.points[..count].iter_mut().enumerate() {
                    mp.normal_impulse = cold.normal_impulse[j];
                    mp.tangent_impulse = cold.tangent_impulse[j];
                }
                next += 1;
            }
            let ba = &st.bodies[c.body_a as usize];
            let bb = &st.bodies[c.body_b as usize];
            let active_a = ba.awake && ba.kind != BodyKind::Static;
            let active_b = bb.awake && bb.kind != BodyKind::Static;
            let active = active_a || active_b;
            if !active && !c.fresh {
                sc.recycler.keep_idle(Pair::of(c));
                continue;
            }
            let fresh = c.fresh;
            c.fresh = false;
            let sa = &st.shapes[c.shape_a as usize];
            let sb = &st.shapes[c.shape_b as usize];
            if !sa.fat_aabb.overlaps(&sb.fat_aabb) {
                sc.remove[k] = true;
                any_removed = true;
                if c.touching {
                    ev.touching_changed(&st.shapes, c, false, &c.manifold);
                }
                continue;
            }
            if c.sensor {
                let (ga, gb) = (
                    &st.geometry[c.shape_a as usize],
                    &st.geometry[c.shape_b as usize],
                );
                let touching = shapes_overlap(ga, ba.transform, gb, bb.transform);
                if touching != c.touching {
                    ev.touching_changed(&st.shapes, c, touching, &c.manifold);
                    c.touching = touching;
                }
                continue;
            }
            let (ga, gb) = (
                &st.geometry[c.shape_a as usize],
                &st.geometry[c.shape_b as usize],
            );
            // What matching needs of the old points, read field by field:
            // the impulses were stored just above, and a copy of the whole
            // manifold would load them back before those stores complete.
            let old = PreviousPoints::of(&c.manifold);
            let renewed = sc.recycler.manifold(
                Pair::of(c),
                fresh,
                (ga, ba.transform),
                (gb, bb.transform),
                &mut c.manifold,
            );
            if renewed {
                match_impulses(&mut c.manifold, &old);
            } else {
                // The same points as last step: their impulses stay.
                for p in &mut c.manifold.points[..usize::from(c.manifold.count)] {
                    p.persisted = true;
                }
            }
            let touching = c.manifold.count > 0;
            if touching {
                // A sleeping body wakes when something active begins to
                // touch it, or when an awake dynamic body touches it (the
                // wake front through a pile created asleep, whose contacts
                // were collided touching while everything slept).
                let began = !c.touching && active;
                for (b, other) in [(ba, bb), (bb, ba)] {
                    if b.kind != BodyKind::Static
                        && !b.awake
                        && b.sleep_island != NO_ISLAND
                        && (began || (other.awake && other.kind == BodyKind::Dynamic))
                    {
                        sc.wake.push(b.sleep_island);
                    }
                }
            }
            if touching && !c.touching && after_solve {
                let slot = |b: u32| sc.slot_of.get(b as usize).copied().unwrap_or(0);
                let (a, b) = (slot(c.body_a), slot(c.body_b));
                if a != 0 && b != 0 {
                    sc.links.push((a, b));
                }
            }
            if touching != c.touching {
                ev.touching_changed(&st.shapes, c, touching, &c.manifold);
            }
            c.touching = touching;
        }
        // Nothing removes a contact between the solve and here.
        debug_assert_eq!(next, solved_cold.len(), "a solved contact was not stored");
        if any_removed {
            // Compact by runs: each run of kept contacts moves as one block.
            let remove = &sc.remove;
            let list = &mut st.contacts[..];
            let (mut write, mut read) = (0, 0);
            while read < list.len() {
                if remove[read] {
                    read += 1;
                    continue;
                }
                let start = read;
                while read < list.len() && !remove[read] {
                    read += 1;
                }
                if start != write {
                    list.copy_within(start..read, write);
                }
                write += read - start;
            }
            st.contacts.truncate(write);
        }
        if !sc.wake.is_empty() {
            sc.wake.sort_unstable();
            sc.wake.dedup();
            let wake = core::mem::take(&mut sc.wake);
            island::wake_islands(st, &wake);
            sc.wake = wake;
        }
    }

    /// Stages 3–5: solve, finalize, continuous collision, fat boxes.
    fn solve(&mut self, observe: &mut dyn FnMut(Stage)) {
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let ev = &mut self.events;
        let set = st.settings;
        let dt = Scalar::ONE / Scalar::from_int(set.tick_rate as i32);
        let n = set.substeps;
        let h = dt / Scalar::from_int(n as i32);
        let inv_h_int = set.tick_rate * n;
        let inv_h = Scalar::from_int(inv_h_int as i32);
        sc.broken.clear();
        // Emptied before any early return: `update_contacts` stores the
        // impulses of whatever this step solved.
        sc.constraints.clear();
        sc.constraints_cold.clear();

        // A joint is never solved against a sleeping body: wake it.
        if !st.joints.is_empty() {
            joint::api::wake_jointed(st, &mut sc.wake);
        }

        // Solver slots for awake non-static bodies; slot 0 is the static dummy.
        sc.slot_of.clear();
        sc.slot_of.resize(st.bodies.len(), 0);
        sc.states.clear();
        sc.states.push(BodyState::STATIC);
        sc.awake.clear();
        for (i, b) in st.bodies.iter().enumerate() {
            if b.is_simulated() {
                sc.slot_of[i] = sc.states.len() as u32;
                sc.awake.push(i as u32);
                sc.states.push(BodyState {
                    v: b.linear_velocity,
                    w: b.angular_velocity,
                    dp: Vec2::ZERO,
                    dq: Rot::IDENTITY,
                    inv_mass: st.body_config[i].inv_mass,
                    inv_inertia: st.body_config[i].inv_inertia,
                });
            }
        }
        if sc.awake.is_empty() {
            return;
        }

        // Prepare contact constraints. First the order: the contacts to
        // solve, in key order, coloured (see `graph`).
        let substep_rate = inv_h;
        let hertz = set.contact_hertz.min(substep_rate.shr(3));
        let soft = [
            solver::make_soft(hertz, set.contact_damping_ratio, h),
            solver::make_soft(hertz.shl(1), set.contact_damping_ratio, h),
        ];
        sc.links.clear();
        sc.solve_order.clear();
        sc.graph.begin(sc.states.len(), st.tick & 1 == 1);
        let moves = |states: &[BodyState], s: u32| {
            let b = &states[s as usize];
            !(b.inv_mass.is_zero() && b.inv_inertia.is_zero())
        };
        // The key-ordered list, with the overflow's constraints prepared
        // one at a time, and the bundles a window at a time.
        let mut any_hit_events = false;
        for (ci, c) in st.contacts.iter().enumerate() {
            if !c.touching || c.sensor {
                continue;
            }
            let (a, b) = (sc.slot_of[c.body_a as usize], sc.slot_of[c.body_b as usize]);
            if a == 0 && b == 0 {
                continue;
            }
            sc.links.push((a, b));
            let k = sc.solve_order.len() as u32;
            let color = sc
                .graph
                .add(a, b, moves(&sc.states, a), moves(&sc.states, b));
            sc.solve_order.push(ci as u32);
            any_hit_events |= c.hit_events;
            if color == OVERFLOW {
                let (ba, bb) = (&st.bodies[c.body_a as usize], &st.bodies[c.body_b as usize]);
                let (sa, sb) = (&sc.states[a as usize], &sc.states[b as usize]);
                let (cc, cold) =
                    prepare_contact(c, ci as u32, k, (a, b), (ba, bb), (sa, sb), &soft);
                sc.constraints.push(cc);
                sc.constraints_cold.push(cold);
            } else {
                sc.constraints_cold.push(ContactCold::new(ci as u32, c));
            }
            if sc.graph.window_full() {
                sc.finish_window(st);
            }
        }
        if !sc.graph.window_full() {
            sc.finish_window(st);
        }
        #[cfg(debug_assertions)]
        sc.graph.check(|s| moves(&sc.states, s));

        // Prepare joints: rigid parts use the joint softness, capped at a
        // quarter of the substep rate.
        let jctx = JointContext {
            h,
            inv_h,
            soft: solver::make_soft(
                set.joint_hertz.min(substep_rate.shr(2)),
                set.joint_damping_ratio,
                h,
            ),
        };
        joint::prepare(
            st,
            &sc.slot_of,
            &sc.states,
            &jctx,
            &mut sc.joints,
            &mut sc.links,
        );

        observe(Stage::Prepare);

        // Per-body velocity increments for the step.
        let max_v = set.max_linear_speed;
        let mut deltas: Vec<(Vec2, Scalar, Scalar, Scalar)> = Vec::with_capacity(sc.awake.len());
        for &bi in &sc.awake {
            let b = &st.bodies[bi as usize];
            if b.kind == BodyKind::Dynamic {
                let c = &st.body_config[bi as usize];
                let dv = (set.gravity * c.gravity_scale).mul_add(c.inv_mass, b.force) * h;
                let dw = h * c.inv_inertia * b.torque;
                let ld = if c.linear_damping.is_zero() {
                    Scalar::ONE
                } else {
                    (Scalar::ONE + h * c.linear_damping).recip()
                };
                let ad = if c.angular_damping.is_zero() {
                    Scalar::ONE
                } else {
                    (Scalar::ONE + h * c.angular_damping).recip()
                };
                deltas.push((dv, dw, ld, ad));
            } else {
                deltas.push((Vec2::ZERO, Scalar::ZERO, Scalar::ONE, Scalar::ONE));
            }
        }

        for _ in 0..n {
            // Integrate velocities.
            for (k, d) in deltas.iter().enumerate() {
                let s = &mut sc.states[k + 1];
                if s.inv_mass.is_zero() && s.inv_inertia.is_zero() && d.0 == Vec2::ZERO {
                    continue;
                }
                // Undamped bodies (damping factor exactly one) skip the
                // products by one, which would not change a bit.
                let v = if d.2 == Scalar::ONE { s.v } else { s.v * d.2 };
                let w = if d.3 == Scalar::ONE { s.w } else { s.w * d.3 };
                s.v = clamp_speed(d.0 + v, max_v);
                s.w = (d.1 + w).clamp(-MAX_ANGULAR_SPEED, MAX_ANGULAR_SPEED);
            }
            joint::warm_start(&mut sc.joints, &mut sc.states);
            solver::warm_start(&sc.constraints, &mut sc.states);
            graph::warm_start(sc.graph.bundles(), &mut sc.states);
            joint::solve(&mut sc.joints, &mut sc.states, &jctx, true);
            solver::solve_contacts(
                &mut sc.constraints,
                &mut sc.states,
                &soft,
                inv_h,
                set.contact_push_max_velocity,
                true,
            );
            graph::solve::<true>(
                sc.graph.bundles_mut(),
                &mut sc.states,
                &soft,
                inv_h_int,
                set.contact_push_max_velocity,
            );
            // Integrate positions.
            for s in sc.states[1..].iter_mut() {
                s.dq = s.dq.integrate(h * s.w);
                s.dp = s.dp.mul_add(h, s.v);
            }
            joint::solve(&mut sc.joints, &mut sc.states, &jctx, false);
            solver::solve_contacts(
                &mut sc.constraints,
                &mut sc.states,
                &soft,
                inv_h,
                set.contact_push_max_velocity,
                false,
            );
            graph::solve::<false>(
                sc.graph.bundles_mut(),
                &mut sc.states,
                &soft,
                inv_h_int,
                set.contact_push_max_velocity,
            );
        }
        observe(Stage::Substeps);
        solver::apply_restitution(
            &mut sc.constraints,
            &sc.constraints_cold,
            &mut sc.states,
            set.restitution_threshold,
        );
        graph::apply_restitution(
            sc.graph.bundles_mut(),
            &mut sc.states,
            set.restitution_threshold,
        );
        // The impulses go into the key-ordered list; `update_contacts`,
        // which visits every contact anyway, stores them for the next warm
        // start (a pass of its own cost a cache miss per contact on large
        // piles).
        solver::store_impulses(&sc.constraints, &mut sc.constraints_cold);
        sc.graph.store(&mut sc.constraints_cold);
        if any_hit_events {
            for cold in &sc.constraints_cold {
                if cold.hit_events {
                    let c = &st.contacts[cold.contact as usize];
                    ev.check_hit(&st.shapes, c, cold, set.hit_event_threshold);
                }
            }
        }

        if set.enable_continuous {
            ccd::record_starts(st, &sc.awake, &mut sc.ccd);
        }

        joint::store_impulses(&sc.joints, &mut st.joints);
        joint::find_broken(
            &sc.joints,
            &st.joints,
            &st.bodies,
            &st.body_config,
            inv_h,
            &mut sc.broken,
        );

        // Finalize bodies.
        let sleep_on = set.enable_sleep;
        for (k, &bi) in sc.awake.iter().enumerate() {
            let s = sc.states[k + 1];
            let c = &st.body_config[bi as usize];
            let b = &mut st.bodies[bi as usize];
            b.linear_velocity = s.v;
            b.angular_velocity = s.w;
            b.force = Vec2::ZERO;
            b.torque = Scalar::ZERO;
            b.center += s.dp;
            b.transform.q = s.dq.mul_rot(b.transform.q).normalize();
            b.transform.p = b.center - b.transform.q.rotate(c.local_center);
            let p = b.transform.p;
            if p.x.abs() > WORLD_BOUND || p.y.abs() > WORLD_BOUND {
                // Leaving the world: the body stops at its edge. Nothing in
                // a sane scene goes there (10 km out), but a body thrown by
                // an extreme mass ratio, or falling for minutes, would
                // otherwise take the arithmetic past the range the overflow
                // policy relies on (found by fuzzing replays), and its
                // snapshots would no longer decode.
                b.transform.p = Vec2::new(
                    p.x.clamp(-WORLD_BOUND, WORLD_BOUND),
                    p.y.clamp(-WORLD_BOUND, WORLD_BOUND),
                );
                b.center = b.transform.p + b.transform.q.rotate(c.local_center);
                b.linear_velocity = Vec2::ZERO;
                b.angular_velocity = Scalar::ZERO;
            }
            if !sleep_on || !c.enable_sleep {
                b.sleep_time = Scalar::ZERO;
            } else {
                // Compare squared speeds: no square root needed.
                let wr = c.max_extent * s.w;
                let speed2 = s.v.dot(s.v).max(wr * wr);
                if speed2 > c.sleep_threshold * c.sleep_threshold {
                    b.sleep_time = Scalar::ZERO;
                } else {
                    b.sleep_time += dt;
                }
            }
        }
        if set.enable_continuous {
            ccd::solve_continuous(st, &sc.awake, &sc.slot_of, &sc.states, dt, &mut sc.ccd);
        }
        for k in 0..sc.awake.len() {
            let bi = sc.awake[k];
            let b = &st.bodies[bi as usize];
            let (mut s, xf) = (b.first_shape, b.transform);
            while s != NONE {
                let sh = &mut st.shapes[s as usize];
                let aabb = st.geometry[s as usize].aabb(xf);
                if !sh.fat_aabb.contains(&aabb.expand(SPECULATIVE_DISTANCE)) {
                    sh.fat_aabb = fat_box(aabb, BodyKind::Dynamic);
                    // Grown in place; the tree is rebuilt before the next
                    // pair search.
                    st.dynamic_tree.enlarge_proxy(sh.proxy, sh.fat_aabb);
                    if !sh.moved {
                        sh.moved = true;
                        st.moved.push(s);
                    }
                }
                s = sh.next;
            }
        }
        observe(Stage::Finish);
    }

    /// Stage 6, after the end-of-step collision: islands of bodies solved
    /// this step that stayed slow long enough fall asleep.
    fn update_sleep(&mut self) {
        let st = &mut self.state;
        let sc = &mut self.scratch;
        if !st.settings.enable_sleep || sc.awake.is_empty() {
            return;
        }
        island::update_sleep(
            st,
            &sc.awake,
            &sc.links,
            &mut sc.parent,
            &mut sc.min_time,
            &mut sc.min_index,
        );
    }

    /// Recomputes every contact's geometry from its shapes at their current
    /// transforms (after decoding, which does not carry it; see
    /// `compact::manifold_state`). The decoded feature ids, impulses and
    /// persisted flags are kept; a manifold whose recomputed points do not
    /// carry the stored ids, or whose touching flag disagrees, makes the
    /// state inconsistent.
    ///
    /// Every step ends by colliding the contacts of the bodies that moved,
    /// and nothing else moves a body, so on a state a step left behind
    /// this reproduces the manifolds exactly.
    pub(crate) fn refresh_manifolds(&mut self) -> Result<(), &'static str> {
        let st = &mut self.state;
        let sc = &mut self.scratch;
        sc.recycler.forget();
        sc.recycler.begin(&st.bodies);
        for c in st.contacts.iter_mut() {
            if c.sensor {
                if c.manifold.count != 0 {
                    return Err("sensor contact with manifold points");
                }
                continue;
            }
            let (ba, bb) = (&st.bodies[c.body_a as usize], &st.bodies[c.body_b as usize]);
            let (ga, gb) = (
                &st.geometry[c.shape_a as usize],
                &st.geometry[c.shape_b as usize],
            );
            c.recycled = recycle::recyclable(ga, gb);
            let mut m = Manifold::EMPTY;
            let pair = Pair::of(c);
            sc.recycler
                .manifold(pair, true, (ga, ba.transform), (gb, bb.transform), &mut m);
            if m.count != c.manifold.count
                || m.points()
                    .iter()
                    .zip(c.manifold.points())
                    .any(|(p, q)| p.id != q.id)
            {
                return Err("contact points do not match their shapes");
            }
            if c.touching != (m.count > 0) {
                return Err("contact touching flag");
            }
            for (p, q) in m.points.iter_mut().zip(c.manifold.points()) {
                p.normal_impulse = q.normal_impulse;
                p.tangent_impulse = q.tangent_impulse;
                p.persisted = q.persisted;
            }
            c.manifold = m;
        }
        Ok(())
    }

    /// Rebuilds the broad-phase trees from the fat boxes (after decoding).
    pub(crate) fn rebuild_trees(&mut self) {
        let st = &mut self.state;
        st.static_tree = DynamicTree::new();
        st.dynamic_tree = DynamicTree::new();
        for (i, s) in st.shapes.iter_mut().enumerate() {
            if !s.alive {
                continue;
            }
            let tree = if st.bodies[s.body as usize].kind == BodyKind::Static {
                &mut st.static_tree
            } else {
                &mut st.dynamic_tree
            };
            s.proxy = tree.create_filtered_proxy(s.fat_aabb, i as u32, s.def.filter.category);
        }
    }
}

/// Fat-box margin around moving shapes, beyond the speculative distance.
pub(crate) const AABB_MARGIN: Scalar = Scalar::milli(50);

/// The fat box of a shape whose tight box is `aabb`, as Box2D v3 makes it:
/// the box grown by the speculative distance (within which the narrow
/// phase makes speculative points), then by the margin for moving shapes
/// and by the speculative distance again for static ones. Moving shapes
/// keep their fat box while it holds the tight box grown by the speculative
/// distance.
///
/// The fat box used to be the tight box plus 5 cm for moving shapes and the
/// tight box for static ones, re-made only when the tight box left it: a
/// shape could come within the speculative distance of another, or touch
/// it, with no pair yet, and a ball falling at 2.5 m/s reached the ground
/// with no contact and sank 3 cm into it (the pair, found at the end of
/// that step, had its first manifold only then).
#[inline]
fn fat_box(aabb: Aabb, kind: BodyKind) -> Aabb {
    let speculative = aabb.expand(SPECULATIVE_DISTANCE);
    if kind == BodyKind::Static {
        speculative.expand(SPECULATIVE_DISTANCE)
    } else {
        speculative.expand(AABB_MARGIN)
    }
}

/// Largest angular speed: a quarter turn per step at 60 Hz (0.25π·60 rad/s).
pub(crate) const MAX_ANGULAR_SPEED: Scalar = Scalar::from_bits(202395565568); // 15π = 47.1238898 rad/s, rounded

/// A touching contact prepared for the solver: the constraint (fixed for
/// the step: lever arms, effective masses, softness) and what the substep
/// loop never reads. `k` is its place in the step's key-ordered list.
#[inline(always)]
fn prepare_contact(
    c: &Contact,
    ci: u32,
    k: u32,
    (a, b): (u32, u32),
    (ba, bb): (&Body, &Body),
    (sa, sb): (&BodyState, &BodyState),
    soft: &[solver::Softness; 2],
) -> (ContactConstraint, ContactCold) {
    let (ma, ia, mb, ib) = (sa.inv_mass, sa.inv_inertia, sb.inv_mass, sb.inv_inertia);
    let normal = c.manifold.normal;
    let tangent = normal.right_perp();
    let mut cc = ContactConstraint {
        a,
        b,
        cold_index: k,
        against_static: ma.is_zero() || mb.is_zero(),
        count: c.manifold.count,
        normal,
        m_n_a: normal * ma,
        m_n_b: normal * mb,
        friction: c.friction,
        points: [ConstraintPoint::default(); 2],
    };
    let mut cold = ContactCold::new(ci, c);
    // `rb − ra` is `cA − cB` exactly (wrapping sums are exact), the same
    // for every point, plus twice a carried point's shift.
    let centers_n = (ba.center - bb.center).dot(normal);
    let mass_scale = soft[usize::from(cc.against_static)].mass_scale;
    for (k, mp) in c.manifold.points().iter().enumerate() {
        // Each body's anchor (the same point unless the manifold was
        // carried: `ManifoldPoint::shift`).
        let ra = (mp.point - mp.shift) - ba.center;
        let rb = (mp.point + mp.shift) - bb.center;
        let rna = ra.cross(normal);
        let rnb = rb.cross(normal);
        let kn = ma + mb + ia * rna * rna + ib * rnb * rnb;
        let rta = ra.cross(tangent);
        let rtb = rb.cross(tangent);
        let kt = ma + mb + ia * rta * rta + ib * rtb * rtb;
        // Read only by restitution and hit events.
        if !c.restitution.is_zero() || c.hit_events {
            let dv = sb.velocity_at(rb) - sa.velocity_at(ra);
            cold.relative_velocity[k] = normal.dot(dv);
        }
        let mut cp = ConstraintPoint {
            an_a: ra.dot(normal),
            an_b: rb.dot(normal),
            rn_a: rna,
            rn_b: rnb,
            wn_a: ia * rna,
            wn_b: ib * rnb,
            wt_a: ia * rta,
            wt_b: ib * rtb,
            // `(rb − ra)·n` is `centers_n + 2 shift·n`.
            base_separation: mp.separation - centers_n - mp.shift.dot(normal).shl(1),
            separation: Scalar::ZERO,
            normal_impulse: mp.normal_impulse,
            tangent_impulse: mp.tangent_impulse,
            max_normal_impulse: Scalar::ZERO,
            neg_normal_mass: -kn.recip(),
            soft_normal_mass: Scalar::ZERO,
            neg_tangent_mass: -kt.recip(),
        };
        cp.soft_normal_mass = cp.neg_normal_mass * mass_scale;
        // Nothing has moved yet: the relax pass's formula at zero
        // displacement and no turn (`solver::separation`), whose products
        // by one and zero are exact.
        cp.separation = cp.an_b - cp.an_a + cp.base_separation;
        cc.points[k] = cp;
    }
    (cc, cold)
}

/// Limits a velocity to `max` without overflowing on huge inputs.
#[inline]
fn clamp_speed(v: Vec2, max: Scalar) -> Vec2 {
    let (ax, ay) = (v.x.abs(), v.y.abs());
    if ax <= max.shr(1) && ay <= max.shr(1) {
        return v; // |v| ≤ max/√2: fast path, no squares.
    }
    // Scale down before squaring so the square cannot overflow.
    let small = Vec2::new(v.x.shr(10), v.y.shr(10));
    let len = small.length().shl(10);
    if len <= max {
        return v;
    }
    Vec2::new(v.x * max / len, v.y * max / len)
}

impl Aabb {
    /// Whether every coordinate is inside the world bounds.
    pub fn within_world(&self) -> bool {
        self.lower.x.abs() <= WORLD_BOUND
            && self.lower.y.abs() <= WORLD_BOUND
            && self.upper.x.abs() <= WORLD_BOUND
            && self.upper.y.abs() <= WORLD_BOUND
    }
}

#[cfg(test)]
impl World {
    /// The contact solver's bundles and body states as the last step left
    /// them (for measuring the kernels).
    pub(crate) fn solver_parts(&mut self) -> (&mut Graph, &mut Vec<BodyState>) {
        (&mut self.scratch.graph, &mut self.scratch.states)
    }
}

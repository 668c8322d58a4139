//! The world state: everything that affects the future of a world, and
//! nothing else (no scratch memory, no outputs of the last step).
//!
//! Its encoding (field order, the slot records) is in `encoding::records`.
//! The stages of the step and the helpers (continuous collision, islands)
//! take it by reference; it depends only on the data it holds (bodies,
//! shapes, contacts, joints), never back on them.

use super::def::WorldDef;
use crate::collision::DynamicTree;
use crate::dynamics::body::{Body, BodyConfig, NONE};
use crate::dynamics::contact::Contact;
use crate::dynamics::joint::{Joint, JointFilter};
use crate::dynamics::shape::Shape;
use crate::geometry::ShapeGeometry;
use std::sync::Arc;

/// Everything that affects the future of a world. Serialized for snapshots
/// and hashed for [`World::state_hash`](crate::World::state_hash).
#[derive(Debug)]
pub(crate) struct WorldState {
    pub settings: WorldDef,
    pub tick: u64,
    pub bodies: Vec<Body>,
    /// Settings of every body slot (parallel to `bodies`), shared
    /// copy-on-write like `geometry`. Encoded inside each body (see
    /// `encoding::records`).
    pub body_config: Arc<Vec<BodyConfig>>,
    pub free_bodies: Vec<u32>,
    pub shapes: Vec<Shape>,
    /// Geometry of every shape slot (parallel to `shapes`), shared
    /// copy-on-write: saving a snapshot copies the pointer, and only
    /// creating or destroying a shape while a snapshot holds it copies the
    /// list. Encoded inside each shape (see `encoding::records`).
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
    /// An empty world with these settings.
    pub(crate) fn empty(settings: WorldDef) -> WorldState {
        WorldState {
            settings,
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
        }
    }

    /// A body slot's settings, for writing: copies the shared list first if
    /// a snapshot holds it.
    #[inline]
    pub(crate) fn config_mut(&mut self, i: u32) -> &mut BodyConfig {
        &mut Arc::make_mut(&mut self.body_config)[i as usize]
    }

    /// Queues every shape of body slot `bi` as moved (those not queued
    /// yet): the next step searches their pairs and collides the body's
    /// contacts before its solve.
    pub(crate) fn queue_shapes(&mut self, bi: u32) {
        let mut s = self.bodies[bi as usize].first_shape;
        while s != NONE {
            let sh = &mut self.shapes[s as usize];
            if !sh.moved {
                sh.moved = true;
                self.moved.push(s);
            }
            s = sh.next;
        }
    }

    /// `marks[b]`: whether body slot `b` has a shape queued as moved (one
    /// entry per body slot).
    pub(crate) fn mark_queued_bodies(&self, marks: &mut Vec<bool>) {
        marks.clear();
        marks.resize(self.bodies.len(), false);
        for &s in &self.moved {
            if let Some(m) = self
                .shapes
                .get(s as usize)
                .and_then(|sh| marks.get_mut(sh.body as usize))
            {
                *m = true;
            }
        }
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

//! The world state: everything that affects the future of a world, and
//! nothing else (no scratch memory, no outputs of the last step).
//!
//! The stages of the step and the helpers (continuous collision, islands)
//! take it by reference; it depends only on the data it holds (bodies,
//! shapes, contacts, joints), never back on them.

use super::def::WorldDef;
use crate::collision::DynamicTree;
use crate::dynamics::body::{Body, BodyConfig, BodyIn, BodyOut};
use crate::dynamics::contact::Contact;
use crate::dynamics::joint::{Joint, JointFilter};
use crate::dynamics::shape::{Shape, ShapeIn, ShapeOut};
use crate::geometry::ShapeGeometry;
use serde::{Deserialize, Serialize};
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

//! The encoded layout of the world state: its fields in order, and each
//! body and shape slot as one record.
//!
//! A body slot is split in memory into [`Body`] (what steps change) and
//! [`BodyConfig`] (what only the API changes), and a shape slot into
//! [`Shape`] and its geometry; the encoding writes each slot as one record
//! with the fields interleaved in a fixed order (the order of the
//! canonical layout, see `canonical`). [`slot_record!`] defines both
//! directions from one list of those fields: a record that borrows them
//! for encoding, and one that owns them for decoding and is split back.

use crate::collision::DynamicTree;
use crate::dynamics::joint::{Joint, JointFilter};
use crate::dynamics::{
    Body, BodyConfig, BodyKind, Contact, Shape, ShapeDef, WorldDef, WorldState, VACANT_GEOMETRY,
};
use crate::geometry::ShapeGeometry;
use crate::math::{Aabb, Scalar, Transform, Vec2};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Defines a slot's encoded record from one list of its fields, in encoding
/// order, each with the place it lives in the slot's parts: `$out` borrows
/// every field for encoding; `$in` owns them for decoding, and
/// `$in::split` moves them into vacant parts (a part's field the list
/// leaves out is derived, and rebuilt after decoding).
macro_rules! slot_record {
    (
        $(#[$out_doc:meta])* $out:ident,
        $(#[$in_doc:meta])* $in:ident,
        $name:literal,
        parts($($part:ident: $part_ty:ty = $vacant:expr),+ $(,)?),
        fields { $($field:ident: $ty:ty = $place:expr),+ $(,)? }
    ) => {
        $(#[$out_doc])*
        #[derive(Serialize)]
        #[serde(rename = $name)]
        pub(crate) struct $out<'a> {
            $($field: &'a $ty,)+
        }

        impl<'a> $out<'a> {
            #[inline(always)]
            pub(crate) fn new($($part: &'a $part_ty),+) -> $out<'a> {
                $out { $($field: &$place,)+ }
            }
        }

        $(#[$in_doc])*
        #[derive(Deserialize)]
        #[serde(rename = $name)]
        pub(crate) struct $in {
            $($field: $ty,)+
        }

        impl $in {
            /// The slot's parts.
            // A part that is a single field (the geometry) starts vacant and
            // is overwritten whole.
            #[allow(unused_assignments)]
            pub(crate) fn split(self) -> ($($part_ty),+) {
                $(let mut $part: $part_ty = $vacant;)+
                $($place = self.$field;)+
                ($($part),+)
            }
        }
    };
}

slot_record! {
    /// A body slot as the encoding writes it: the fields of [`Body`] and
    /// [`BodyConfig`] interleaved in one fixed order. It borrows rather
    /// than copies: an owned record for encoding made the state hash 4–6 %
    /// slower.
    BodyOut,
    /// A decoded body slot (see [`BodyOut`]).
    BodyIn,
    "Body",
    parts(b: Body = Body::vacant(), c: BodyConfig = BodyConfig::VACANT),
    fields {
        generation: u32 = b.generation,
        alive: bool = b.alive,
        kind: BodyKind = b.kind,
        transform: Transform = b.transform,
        center: Vec2 = b.center,
        local_center: Vec2 = c.local_center,
        linear_velocity: Vec2 = b.linear_velocity,
        angular_velocity: Scalar = b.angular_velocity,
        force: Vec2 = b.force,
        torque: Scalar = b.torque,
        mass: Scalar = c.mass,
        inv_mass: Scalar = c.inv_mass,
        inertia: Scalar = c.inertia,
        inv_inertia: Scalar = c.inv_inertia,
        linear_damping: Scalar = c.linear_damping,
        angular_damping: Scalar = c.angular_damping,
        gravity_scale: Scalar = c.gravity_scale,
        sleep_threshold: Scalar = c.sleep_threshold,
        sleep_time: Scalar = b.sleep_time,
        max_extent: Scalar = c.max_extent,
        awake: bool = b.awake,
        enable_sleep: bool = c.enable_sleep,
        fixed_rotation: bool = c.fixed_rotation,
        sleep_island: u32 = b.sleep_island,
        user_data: u64 = c.user_data,
        first_shape: u32 = b.first_shape,
        bullet: bool = c.bullet,
        min_extent: Scalar = c.min_extent,
        allow_fast_rotation: bool = c.allow_fast_rotation,
    }
}

slot_record! {
    /// A shape slot as the encoding writes it: the fields of [`Shape`] with
    /// the geometry after `body` (the broad-phase proxy is derived, not
    /// written).
    ShapeOut,
    /// A decoded shape slot (see [`ShapeOut`]).
    ShapeIn,
    "Shape",
    parts(s: Shape = Shape::vacant(), g: ShapeGeometry = VACANT_GEOMETRY),
    fields {
        generation: u32 = s.generation,
        alive: bool = s.alive,
        body: u32 = s.body,
        geometry: ShapeGeometry = g,
        def: ShapeDef = s.def,
        fat_aabb: Aabb = s.fat_aabb,
        next: u32 = s.next,
        moved: bool = s.moved,
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

#[cfg(test)]
mod tests {
    use crate::geometry::{Circle, Filter, Polygon, ShapeGeometry};
    use crate::math::{fx, Rot, Scalar, Vec2};
    use crate::{BodyDef, BodyKind, ShapeDef, Snapshot, World};

    /// Every field of a body and a shape slot survives the canonical bytes:
    /// a field the records leave out would decode as the vacant slot's
    /// value, and the bytes would still re-encode the same.
    #[test]
    fn every_slot_field_survives_the_bytes() {
        let mut w = World::default();
        let ground = w.create_body(&BodyDef::fixed(Vec2::ZERO)).expect("ground");
        let floor = ShapeGeometry::Polygon(Polygon::make_box(fx(20), Scalar::milli(500)));
        w.create_shape(ground, &ShapeDef::default(), floor)
            .expect("floor");
        let shape_def = ShapeDef {
            density: fx(2),
            friction: Scalar::milli(300),
            restitution: Scalar::milli(250),
            filter: Filter {
                category: 2,
                mask: 0xffff_fff7,
                group: -3,
            },
            user_data: 77,
            is_sensor: false,
            enable_contact_events: true,
            enable_hit_events: true,
            enable_sensor_events: false,
        };
        let mut bodies = Vec::new();
        for (k, kind) in [BodyKind::Dynamic, BodyKind::Kinematic, BodyKind::Dynamic]
            .into_iter()
            .enumerate()
        {
            let def = BodyDef {
                kind,
                position: Vec2::new(fx(k as i32 * 3), fx(2)),
                rotation: Rot::from_angle(Scalar::milli(300)),
                linear_velocity: Vec2::new(Scalar::milli(500), Scalar::ZERO),
                angular_velocity: Scalar::milli(200),
                linear_damping: Scalar::milli(100),
                angular_damping: Scalar::milli(200),
                gravity_scale: Scalar::milli(500),
                // Above the kinematic body's speed: its sleep timer runs.
                sleep_threshold: Scalar::ONE,
                enable_sleep: k != 2,
                awake: true,
                fixed_rotation: k == 2,
                user_data: 1000 + k as u64,
                bullet: k == 0,
                allow_fast_rotation: k == 1,
            };
            let b = w.create_body(&def).expect("body");
            let circle = Circle::new(
                Vec2::new(Scalar::milli(100), Scalar::ZERO),
                Scalar::milli(500),
            )
            .expect("circle");
            w.create_shape(b, &shape_def, ShapeGeometry::Circle(circle))
                .expect("shape");
            bodies.push(b);
        }
        // A body created asleep: it keeps its island id.
        let sleeper = w
            .create_body(&BodyDef {
                awake: false,
                ..BodyDef::dynamic(Vec2::new(fx(-10), fx(5)))
            })
            .expect("sleeper");
        let square = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        w.create_shape(sleeper, &ShapeDef::default(), square)
            .expect("shape");
        for _ in 0..20 {
            w.step();
        }
        // A second shape, created after the steps: a shape list with a next
        // link, and a shape waiting for the pair search.
        let nose = Circle::new(
            Vec2::new(Scalar::milli(-300), Scalar::ZERO),
            Scalar::milli(200),
        )
        .expect("circle");
        w.create_shape(bodies[0], &shape_def, ShapeGeometry::Circle(nose))
            .expect("shape");
        w.apply_force_to_center(bodies[0], Vec2::new(fx(3), fx(1)))
            .expect("force");
        w.apply_torque(bodies[2], fx(2)).expect("torque");
        let snap = w.snapshot();
        let back = Snapshot::from_bytes(&snap.to_bytes()).expect("decodes");
        let (a, b) = (snap.world_state(), back.world_state());
        assert_eq!(a.bodies, b.bodies);
        assert_eq!(a.body_config, b.body_config);
        assert_eq!(a.geometry, b.geometry);
        // The proxies are derived: the decoded trees number them anew.
        let unproxied = |s: &[crate::dynamics::Shape]| {
            s.iter()
                .map(|s| crate::dynamics::Shape { proxy: 0, ..*s })
                .collect::<Vec<_>>()
        };
        assert_eq!(unproxied(&a.shapes), unproxied(&b.shapes));
    }
}

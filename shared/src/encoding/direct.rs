//! The canonical bytes of the world state (see `canonical`), written field
//! by field without serde, for the state hash.
//!
//! The state hash encodes the whole state every tick, on the server and on
//! every client. Through serde each field is one call appending a few
//! bytes to a vector; here the output grows by a whole body, shape or
//! contact record at once, which is then written in place. The state
//! hash went from 22–24 µs to 12–14 µs for the default arena room (214
//! bodies, 121 KB; `protocol/examples/room_load.rs`) and took 72 µs
//! instead of 158–165 µs for the 1000-body pyramid (727 KB).
//!
//! The bytes are exactly `canonical::encode_into`'s: the tests below hold
//! the two together on every built-in scene, on a played sandbox game and
//! on a world with every kind of slot, and the golden hashes hold both to the committed values. The settings
//! and the joints (few, and of many kinds) still go through serde. A field
//! added to a record must be added here too, or those tests fail.

use super::canonical::{encode_into, CanonError};
use crate::dynamics::{Body, BodyConfig, BodyKind, Contact, Shape, ShapeDef, WorldState};
use crate::geometry::{ShapeGeometry, MAX_POLYGON_VERTICES};
use crate::math::{Aabb, Scalar, Transform, Vec2};

/// Bytes of a body record.
const BODY: usize = 230;
/// Bytes of a shape record before its geometry: generation, alive, body.
const SHAPE_SLOT: usize = 9;
/// Bytes of a shape record after its geometry: definition (48), fat box,
/// next link, pair flag.
const SHAPE_REST: usize = 48 + 32 + 4 + 1;
/// Bytes of a contact record without its manifold points (19 bytes each):
/// four slots, the point count, friction, restitution, five flags.
const CONTACT_FIXED: usize = 16 + 8 + 16 + 5;

/// A record written in place at the end of the output: `at` runs over
/// `buf`, which was sized for the record. For fixed-size records every
/// offset is a constant, so the bounds checks fold away.
struct Rec<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Rec<'_> {
    /// Grows `out` by `len` bytes and returns them to be written.
    #[inline(always)]
    fn open(out: &mut Vec<u8>, len: usize) -> Rec<'_> {
        let start = out.len();
        out.resize(start + len, 0);
        Rec {
            buf: &mut out[start..],
            at: 0,
        }
    }

    #[inline(always)]
    fn put<const K: usize>(&mut self, bytes: [u8; K]) {
        self.buf[self.at..self.at + K].copy_from_slice(&bytes);
        self.at += K;
    }

    #[inline(always)]
    fn bool(&mut self, v: bool) {
        self.put([u8::from(v)]);
    }

    #[inline(always)]
    fn u16(&mut self, v: u16) {
        self.put(v.to_le_bytes());
    }

    #[inline(always)]
    fn u32(&mut self, v: u32) {
        self.put(v.to_le_bytes());
    }

    #[inline(always)]
    fn i32(&mut self, v: i32) {
        self.put(v.to_le_bytes());
    }

    #[inline(always)]
    fn u64(&mut self, v: u64) {
        self.put(v.to_le_bytes());
    }

    /// A sequence's length (`usize` as `u64`).
    #[inline(always)]
    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }

    #[inline(always)]
    fn scalar(&mut self, v: Scalar) {
        self.put(v.to_bits().to_le_bytes());
    }

    #[inline(always)]
    fn vec2(&mut self, v: Vec2) {
        self.scalar(v.x);
        self.scalar(v.y);
    }

    #[inline(always)]
    fn transform(&mut self, t: Transform) {
        self.vec2(t.p);
        self.scalar(t.q.c);
        self.scalar(t.q.s);
    }

    #[inline(always)]
    fn aabb(&mut self, b: Aabb) {
        self.vec2(b.lower);
        self.vec2(b.upper);
    }

    /// Checks (in debug builds) that the record was filled exactly.
    #[inline(always)]
    fn close(self) {
        debug_assert_eq!(self.at, self.buf.len(), "record size");
    }
}

/// Appends the canonical encoding of `state` to `out`: the same bytes as
/// `canonical::encode_into(state, out)`.
///
/// # Errors
/// Only if the settings' or joints' `Serialize` impls fail (they do not).
pub(crate) fn encode_state(state: &WorldState, out: &mut Vec<u8>) -> Result<(), CanonError> {
    // The fields in the order of `WorldState`'s `Serialize` (`records`).
    encode_into(&state.settings, out)?;
    out.extend_from_slice(&state.tick.to_le_bytes());
    let n = state.bodies.len().min(state.body_config.len());
    out.reserve(8 + n * BODY);
    out.extend_from_slice(&(n as u64).to_le_bytes());
    for (b, c) in state.bodies.iter().zip(state.body_config.iter()) {
        body(b, c, out);
    }
    ids(&state.free_bodies, out);
    let n = state.shapes.len().min(state.geometry.len());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    for (s, g) in state.shapes.iter().zip(state.geometry.iter()) {
        shape(s, g, out);
    }
    ids(&state.free_shapes, out);
    out.extend_from_slice(&(state.contacts.len() as u64).to_le_bytes());
    for c in &state.contacts {
        contact(c, out);
    }
    ids(&state.moved, out);
    encode_into(&state.joints, out)?;
    ids(&state.free_joints, out);
    Ok(())
}

/// A `Vec<u32>`: its length, then each id.
fn ids(ids: &[u32], out: &mut Vec<u8>) {
    out.reserve(8 + 4 * ids.len());
    out.extend_from_slice(&(ids.len() as u64).to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

/// A body slot: the fields of `records::BodyOut`, in its order.
#[inline(always)]
fn body(b: &Body, c: &BodyConfig, out: &mut Vec<u8>) {
    let mut r = Rec::open(out, BODY);
    r.u32(b.generation);
    r.bool(b.alive);
    // A unit variant: its index as `u32`.
    r.u32(match b.kind {
        BodyKind::Static => 0,
        BodyKind::Kinematic => 1,
        BodyKind::Dynamic => 2,
    });
    r.transform(b.transform);
    r.vec2(b.center);
    r.vec2(c.local_center);
    r.vec2(b.linear_velocity);
    r.scalar(b.angular_velocity);
    r.vec2(b.force);
    r.scalar(b.torque);
    r.scalar(c.mass);
    r.scalar(c.inv_mass);
    r.scalar(c.inertia);
    r.scalar(c.inv_inertia);
    r.scalar(c.linear_damping);
    r.scalar(c.angular_damping);
    r.scalar(c.gravity_scale);
    r.scalar(c.sleep_threshold);
    r.scalar(b.sleep_time);
    r.scalar(c.max_extent);
    r.bool(b.awake);
    r.bool(c.enable_sleep);
    r.bool(c.fixed_rotation);
    r.u32(b.sleep_island);
    r.u64(c.user_data);
    r.u32(b.first_shape);
    r.bool(c.bullet);
    r.scalar(c.min_extent);
    r.bool(c.allow_fast_rotation);
    r.close();
}

/// A shape slot: the fields of `records::ShapeOut`, in its order.
#[inline(always)]
fn shape(s: &Shape, g: &ShapeGeometry, out: &mut Vec<u8>) {
    let geometry = 4 + match g {
        ShapeGeometry::Circle(_) => 24,
        ShapeGeometry::Capsule(_) => 40,
        ShapeGeometry::Polygon(p) => {
            2 * (8 + 16 * usize::from(p.count).min(MAX_POLYGON_VERTICES)) + 24
        }
        ShapeGeometry::Segment(_) => 32,
        ShapeGeometry::ChainSegment(_) => 64,
    };
    let mut r = Rec::open(out, SHAPE_SLOT + geometry + SHAPE_REST);
    r.u32(s.generation);
    r.bool(s.alive);
    r.u32(s.body);
    // A newtype variant: its index as `u32`, then the value.
    match g {
        ShapeGeometry::Circle(c) => {
            r.u32(0);
            r.vec2(c.center);
            r.scalar(c.radius);
        }
        ShapeGeometry::Capsule(c) => {
            r.u32(1);
            r.vec2(c.c1);
            r.vec2(c.c2);
            r.scalar(c.radius);
        }
        ShapeGeometry::Polygon(p) => {
            // The used prefixes (`compact`), each as a sequence.
            r.u32(2);
            let n = usize::from(p.count).min(MAX_POLYGON_VERTICES);
            r.len(n);
            for &v in &p.vertices[..n] {
                r.vec2(v);
            }
            r.len(n);
            for &v in &p.normals[..n] {
                r.vec2(v);
            }
            r.vec2(p.centroid);
            r.scalar(p.radius);
        }
        ShapeGeometry::Segment(sg) => {
            r.u32(3);
            r.vec2(sg.p1);
            r.vec2(sg.p2);
        }
        ShapeGeometry::ChainSegment(c) => {
            r.u32(4);
            r.vec2(c.ghost1);
            r.vec2(c.segment.p1);
            r.vec2(c.segment.p2);
            r.vec2(c.ghost2);
        }
    }
    shape_def(&mut r, &s.def);
    r.aabb(s.fat_aabb);
    r.u32(s.next);
    r.bool(s.moved);
    r.close();
}

/// A `ShapeDef`, fields in declaration order.
#[inline(always)]
fn shape_def(r: &mut Rec<'_>, d: &ShapeDef) {
    r.scalar(d.density);
    r.scalar(d.friction);
    r.scalar(d.restitution);
    r.u32(d.filter.category);
    r.u32(d.filter.mask);
    r.i32(d.filter.group);
    r.u64(d.user_data);
    r.bool(d.is_sensor);
    r.bool(d.enable_contact_events);
    r.bool(d.enable_hit_events);
    r.bool(d.enable_sensor_events);
}

/// A contact: its serialized fields in declaration order, the manifold in
/// its state form (`compact::manifold_state`).
#[inline(always)]
fn contact(c: &Contact, out: &mut Vec<u8>) {
    let points = c.manifold.points();
    let mut r = Rec::open(out, CONTACT_FIXED + 19 * points.len());
    r.u32(c.shape_a);
    r.u32(c.shape_b);
    r.u32(c.body_a);
    r.u32(c.body_b);
    r.len(points.len());
    for p in points {
        r.u16(p.id);
        r.scalar(p.normal_impulse);
        r.scalar(p.tangent_impulse);
        r.bool(p.persisted);
    }
    r.scalar(c.friction);
    r.scalar(c.restitution);
    r.bool(c.touching);
    r.bool(c.sensor);
    r.bool(c.contact_events);
    r.bool(c.hit_events);
    r.bool(c.direct);
    r.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::sandbox::{Sandbox, Strategy};
    use crate::game::{bots::LocalBots, Game};

    fn same_as_serde(state: &WorldState, what: &str) {
        let mut theirs = Vec::new();
        encode_into(state, &mut theirs).unwrap();
        let mut ours = Vec::new();
        encode_state(state, &mut ours).unwrap();
        assert_eq!(ours.len(), theirs.len(), "{what}: lengths differ");
        if let Some(at) = ours.iter().zip(&theirs).position(|(a, b)| a != b) {
            panic!("{what}: first difference at byte {at}");
        }
    }

    /// Every built-in scene, at its start and along a run (sleeping bodies,
    /// every shape kind, every joint kind, one- and two-point manifolds,
    /// bodies created as it runs in `rain`).
    #[test]
    fn writes_the_canonical_bytes_of_every_scene() {
        for &name in crate::scene::SCENE_NAMES {
            let mut scene = crate::scene::build_scene(name).unwrap();
            same_as_serde(&scene.world.state, name);
            for step in 1..=90 {
                scene.step();
                if step % 30 == 0 {
                    same_as_serde(&scene.world.state, name);
                }
            }
        }
    }

    /// A played sandbox game: eight players joining, moving and firing
    /// (bodies created and destroyed, id pools in use).
    #[test]
    fn writes_the_canonical_bytes_of_a_played_game() {
        let rules = Sandbox::default();
        let strategies = [Strategy::Random, Strategy::Chaser, Strategy::Circle];
        let mut bots = LocalBots::cycling(&rules, 8, &strategies, 7);
        let mut game = Game::new(rules, 8);
        for t in 1..=600 {
            let inputs = bots.inputs(&game);
            game.step(&inputs);
            if t % 50 == 0 {
                same_as_serde(&game.world().state, "sandbox");
            }
        }
    }

    /// What the scenes lack: kinematic bodies, sensors, filters, user data,
    /// bullets, fixed rotation, forces pending, every shape kind on a
    /// moving body, and free body and shape slots.
    #[test]
    fn writes_the_canonical_bytes_of_every_kind_of_slot() {
        use crate::geometry::{Capsule, Circle, Filter, Polygon, Segment};
        use crate::math::{fx, Rot};
        use crate::{BodyDef, World};
        let mut w = World::default();
        let ground = w.create_body(&BodyDef::fixed(Vec2::ZERO)).unwrap();
        let floor = ShapeGeometry::Segment(
            Segment::new(Vec2::new(fx(-20), fx(0)), Vec2::new(fx(20), fx(0))).unwrap(),
        );
        w.create_shape(ground, &ShapeDef::default(), floor).unwrap();
        let sensor = ShapeDef {
            is_sensor: true,
            enable_sensor_events: true,
            ..ShapeDef::default()
        };
        let zone = ShapeGeometry::Polygon(Polygon::make_box(fx(3), fx(1)));
        w.create_shape(ground, &sensor, zone).unwrap();
        let def = ShapeDef {
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
        let kinds = [BodyKind::Dynamic, BodyKind::Kinematic, BodyKind::Dynamic];
        let mut bodies = Vec::new();
        for (k, kind) in kinds.into_iter().enumerate() {
            let b = w
                .create_body(&BodyDef {
                    kind,
                    position: Vec2::new(fx(k as i32 * 3 - 3), fx(2)),
                    rotation: Rot::from_angle(Scalar::milli(300)),
                    linear_velocity: Vec2::new(Scalar::milli(500), Scalar::ZERO),
                    angular_velocity: Scalar::milli(200),
                    linear_damping: Scalar::milli(100),
                    gravity_scale: Scalar::milli(500),
                    fixed_rotation: k == 2,
                    user_data: 1000 + k as u64,
                    bullet: k == 0,
                    allow_fast_rotation: k == 1,
                    ..BodyDef::default()
                })
                .unwrap();
            let geometry = match k {
                0 => ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap()),
                1 => ShapeGeometry::Capsule(
                    Capsule::new(
                        Vec2::new(-Scalar::HALF, Scalar::ZERO),
                        Vec2::new(Scalar::HALF, Scalar::ZERO),
                        Scalar::milli(250),
                    )
                    .unwrap(),
                ),
                _ => ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF)),
            };
            w.create_shape(b, &def, geometry).unwrap();
            bodies.push(b);
        }
        let doomed = w
            .create_body(&BodyDef::dynamic(Vec2::new(fx(8), fx(4))))
            .unwrap();
        let square = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        w.create_shape(doomed, &ShapeDef::default(), square)
            .unwrap();
        same_as_serde(&w.state, "fresh");
        for step in 1..=60 {
            if step == 20 {
                w.destroy_body(doomed).unwrap();
            }
            w.apply_force_to_center(bodies[0], Vec2::new(fx(3), fx(1)))
                .unwrap();
            w.step();
            if step % 10 == 0 {
                same_as_serde(&w.state, "every kind");
            }
        }
        assert!(!w.state.free_bodies.is_empty() && !w.state.free_shapes.is_empty());
    }
}

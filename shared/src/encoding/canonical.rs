//! The canonical encoding: the bytes a snapshot is written in
//! ([`crate::Snapshot::to_bytes`]) and the state hash covers (see `hash`).
//!
//! # Layout
//!
//! The world state is encoded with bincode 2 in its *fixed-int,
//! little-endian* configuration ([`CONFIG`]): every integer
//! is written at its full width in little-endian byte order (`u32` → 4 bytes,
//! `u64` → 8, `bool` → 1, a `Scalar` → its 8-byte Q32.32 bits, a `Vec` → its
//! length as `u64` then its elements, an enum → its variant index as `u32`
//! then its fields), fields in declaration order. Two fixed-capacity arrays
//! are written as their used prefix only, as a `Vec` (length, elements): a
//! polygon's vertices and normals (then centroid and radius; the vertex
//! count is the length), and a manifold's points (the point count is the
//! length) — see `compact`. The state is, in order:
//!
//! 1. `settings` — gravity, tick rate, substeps, contact hertz, damping
//!    ratio, push-out speed, restitution threshold, speed limit, sleep switch,
//!    time to sleep, continuous-collision switch, hit-event threshold,
//!    joint stiffness (hertz) and joint damping ratio;
//! 2. `tick` — steps taken (`u64`);
//! 3. `bodies` — every body slot, live or free: generation, alive, kind,
//!    transform, centre of mass (world and local), velocities, pending force
//!    and torque, mass and inertia (and inverses), damping, gravity scale,
//!    sleep threshold, sleep timer, extent, awake, sleep switch, fixed
//!    rotation, sleeping-island id, user data, first shape, bullet flag,
//!    smallest shape extent, fast-rotation flag;
//! 4. `free_bodies` — the body id pool (order matters: the last is reused first);
//! 5. `shapes` — every shape slot: generation, alive, body, geometry,
//!    material (density, friction, restitution, filter, user data, sensor
//!    flag, contact/hit/sensor event switches), fat box, next shape,
//!    pending-pair flag;
//! 6. `free_shapes` — the shape id pool;
//! 7. `contacts` — sorted by shape pair: shapes, bodies, manifold points
//!    (feature id, warm-start normal and tangent impulses, persisted flag),
//!    mixed friction and restitution, touching flag, sensor flag,
//!    contact-event and hit-event switches, and whether the manifold was
//!    taken at the current poses instead of recycled (`direct`: decided
//!    from the velocities when it was collided). The manifold's geometry (normal,
//!    world points, separations) is not written: a step ends by colliding
//!    every contact of a body that moved, so it is a function of the two
//!    shapes at their current transforms and the direct flag (recycled or
//!    the narrow phase's). Decoding recomputes it and refuses
//!    a state whose recomputed points do not carry the stored feature ids,
//!    or whose touching flag disagrees (`World::refresh_manifolds`, in `dynamics/world/derived.rs`);
//!    the contacts of a body with a shape in `moved` (moved through the API
//!    since the last step) are left as stored, for the next step's collide;
//! 8. `moved` — shapes waiting for the next pair search;
//! 9. `joints` — every joint slot, live or free: generation, alive, body A
//!    and B slots, local anchors A and B, reference rotation (cos, sin),
//!    collide-connected flag, break force and torque, user data, the type
//!    (variant index as `u32`: revolute 0, prismatic 1, weld 2, wheel 3,
//!    distance 4, pulley 5, angle 6, motor 7, target 8, friction 9) with its
//!    parameters in declaration order (an `Option` is one byte, 0 or 1, then
//!    the value if present), and the accumulated impulses (linear, angular,
//!    axial, spring, motor, lower, upper) used for warm starting;
//! 10. `free_joints` — the joint id pool.
//!
//! The broad-phase trees and the joint pair filter are not state (they are
//! derived and rebuilt) and are skipped. Neither are the event buffers
//! (`World::contact_events`, `World::sensor_events`): they report the last
//! step and are derived from the contacts' touching flags, which are state.
//! The state hash is XXH3-64 (seed 0) of exactly these bytes.
//!
//! # The encoder
//!
//! [`encode_into`] writes exactly the bytes bincode 2 writes with [`CONFIG`]
//! (fixed-width little-endian integers, `u64` lengths, `u32` variant
//! indices), faster.
//!
//! The state hash encodes the whole state every tick, so the encoder is on
//! the server's and every client's hot path. bincode's serde bridge goes
//! through its generic encoder for every field; this one appends each
//! primitive straight to a `Vec<u8>`, with every trait method inlined into
//! the derived `Serialize` impls. Decoding stays with bincode, and the tests
//! below (and the golden hashes) hold the two to the same bytes.

use bincode::config::{Configuration, Fixint, LittleEndian, NoLimit};
use serde::ser::{self, Serialize};

/// The canonical encoding (no size limit; decoding adds one).
pub(crate) const CONFIG: Configuration<LittleEndian, Fixint, NoLimit> = bincode::config::standard()
    .with_fixed_int_encoding()
    .with_little_endian();

/// Why a value cannot be encoded canonically.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CanonError {
    /// A sequence or map that does not know its length up front.
    #[error("sequence without a length")]
    NoLength,
    /// A `Serialize` impl reported its own error.
    #[error("{0}")]
    Custom(String),
}

impl ser::Error for CanonError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CanonError::Custom(msg.to_string())
    }
}

/// Appends the canonical encoding of `value` to `out`.
///
/// # Errors
/// Only for types the state never holds (unsized sequences, failing
/// `Serialize` impls).
pub(crate) fn encode_into<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), CanonError> {
    value.serialize(&mut Canon { out })
}

struct Canon<'a> {
    out: &'a mut Vec<u8>,
}

impl Canon<'_> {
    #[inline(always)]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        self.out.extend_from_slice(&bytes);
    }

    #[inline(always)]
    fn len(&mut self, len: usize) {
        // usize is encoded as u64 (fixed-int config); lengths never exceed it.
        self.put((len as u64).to_le_bytes());
    }
}

/// Fixed-width little-endian primitives (`to_le_bytes` of the value, which
/// for floats is their IEEE bits).
macro_rules! primitives {
    ($($method:ident : $ty:ty),* $(,)?) => {$(
        #[inline(always)]
        fn $method(self, v: $ty) -> Result<(), CanonError> {
            self.put(v.to_le_bytes());
            Ok(())
        }
    )*};
}

impl<'a, 'b> ser::Serializer for &'b mut Canon<'a> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    #[inline(always)]
    fn serialize_bool(self, v: bool) -> Result<(), CanonError> {
        self.put([u8::from(v)]);
        Ok(())
    }
    primitives!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
    );
    // Floats never occur in state; encoded as bincode does (IEEE bits, LE)
    // so the encoder is complete.
    primitives!(serialize_f32: f32, serialize_f64: f64);
    fn serialize_char(self, v: char) -> Result<(), CanonError> {
        // bincode writes a char as its UTF-8 bytes, without a length.
        let mut buf = [0u8; 4];
        self.out
            .extend_from_slice(v.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), CanonError> {
        self.serialize_bytes(v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), CanonError> {
        self.len(v.len());
        self.out.extend_from_slice(v);
        Ok(())
    }
    #[inline(always)]
    fn serialize_none(self) -> Result<(), CanonError> {
        self.put([0]);
        Ok(())
    }
    #[inline(always)]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CanonError> {
        self.put([1]);
        value.serialize(self)
    }
    #[inline(always)]
    fn serialize_unit(self) -> Result<(), CanonError> {
        Ok(())
    }
    #[inline(always)]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), CanonError> {
        Ok(())
    }
    #[inline(always)]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
    ) -> Result<(), CanonError> {
        self.put(variant_index.to_le_bytes());
        Ok(())
    }
    #[inline(always)]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), CanonError> {
        value.serialize(self)
    }
    #[inline(always)]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), CanonError> {
        self.put(variant_index.to_le_bytes());
        value.serialize(self)
    }
    #[inline(always)]
    fn serialize_seq(self, len: Option<usize>) -> Result<Self, CanonError> {
        self.len(len.ok_or(CanonError::NoLength)?);
        Ok(self)
    }
    #[inline(always)]
    fn serialize_tuple(self, _len: usize) -> Result<Self, CanonError> {
        Ok(self)
    }
    #[inline(always)]
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, CanonError> {
        Ok(self)
    }
    #[inline(always)]
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, CanonError> {
        self.put(variant_index.to_le_bytes());
        Ok(self)
    }
    #[inline(always)]
    fn serialize_map(self, len: Option<usize>) -> Result<Self, CanonError> {
        self.len(len.ok_or(CanonError::NoLength)?);
        Ok(self)
    }
    #[inline(always)]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, CanonError> {
        Ok(self)
    }
    #[inline(always)]
    fn serialize_struct_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self, CanonError> {
        // The same bytes as a tuple variant: the index, then the fields.
        self.serialize_tuple_variant(name, variant_index, variant, len)
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The compound serializers: every element or field is written in turn,
/// with nothing around it (lengths and variant indices were written when
/// the compound began).
macro_rules! compound {
    ($($trait:ident :: $method:ident ($($key:ident)?)),* $(,)?) => {$(
        impl ser::$trait for &mut Canon<'_> {
            type Ok = ();
            type Error = CanonError;
            #[inline(always)]
            fn $method<T: Serialize + ?Sized>(
                &mut self,
                $($key: &'static str,)?
                value: &T,
            ) -> Result<(), CanonError> {
                value.serialize(&mut **self)
            }
            #[inline(always)]
            fn end(self) -> Result<(), CanonError> {
                Ok(())
            }
        }
    )*};
}

compound!(
    SerializeSeq::serialize_element(),
    SerializeTuple::serialize_element(),
    SerializeTupleStruct::serialize_field(),
    SerializeTupleVariant::serialize_field(),
    SerializeStruct::serialize_field(_key),
    SerializeStructVariant::serialize_field(_key),
);

impl ser::SerializeMap for &mut Canon<'_> {
    type Ok = ();
    type Error = CanonError;
    #[inline(always)]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CanonError> {
        key.serialize(&mut **self)
    }
    #[inline(always)]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonError> {
        value.serialize(&mut **self)
    }
    #[inline(always)]
    fn end(self) -> Result<(), CanonError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::canonical::CONFIG;
    use serde::Serialize;
    use std::collections::BTreeMap;

    fn same_as_bincode<T: Serialize + ?Sized>(value: &T) {
        let mut ours = Vec::new();
        encode_into(value, &mut ours).unwrap();
        let theirs = bincode::serde::encode_to_vec(value, CONFIG).unwrap();
        assert_eq!(ours, theirs);
    }

    #[derive(Serialize)]
    enum E {
        Unit,
        New(u16),
        Tuple(i8, bool),
        Struct { a: u128, b: Option<i32> },
    }

    #[derive(Serialize)]
    struct Everything {
        b: bool,
        ints: (i8, i16, i32, i64, i128, u8, u16, u32, u64, u128),
        c: [char; 3],
        s: String,
        bytes: Vec<u8>,
        none: Option<u64>,
        some: Option<u64>,
        unit: (),
        enums: Vec<E>,
        map: BTreeMap<u32, String>,
        nested: Vec<Vec<(u8, i64)>>,
    }

    #[test]
    fn writes_exactly_what_bincode_writes() {
        let value = Everything {
            b: true,
            ints: (
                -1,
                -300,
                -70_000,
                i64::MIN,
                i128::MIN + 7,
                255,
                65_000,
                1 << 31,
                u64::MAX,
                1 << 100,
            ),
            c: ['a', 'é', '🦀'],
            s: "bitroom".into(),
            bytes: vec![0, 1, 2, 255],
            none: None,
            some: Some(42),
            unit: (),
            enums: vec![
                E::Unit,
                E::New(7),
                E::Tuple(-2, false),
                E::Struct { a: 3, b: Some(-9) },
            ],
            map: [(2, "two".to_string()), (1, "one".to_string())].into(),
            nested: vec![vec![], vec![(1, -1), (2, 1 << 40)]],
        };
        same_as_bincode(&value);
    }

    #[test]
    fn every_scene_state_encodes_as_bincode_does() {
        // The small scenes: every shape kind, joint kind, contacts with one
        // and two points, sleeping bodies (the big ones only repeat these).
        let names = [
            "pyramid", "ramp", "dominoes", "arena", "bridge", "pendulum", "car", "ragdoll", "rope",
            "pulley",
        ];
        for name in names {
            let mut world = crate::scene::build_named(name).unwrap();
            for _ in 0..30 {
                world.step();
            }
            same_as_bincode(&world.state);
        }
    }

    #[test]
    fn a_sequence_without_a_length_is_refused() {
        struct Unsized;
        impl Serialize for Unsized {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(std::iter::from_fn(|| Some(1u8)).take(3).filter(|_| true))
            }
        }
        let mut out = Vec::new();
        assert!(matches!(
            encode_into(&Unsized, &mut out),
            Err(CanonError::NoLength)
        ));
    }
}

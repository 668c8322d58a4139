//! The packed encoding: a columnar, delta-coded, deflated form of any serde
//! value, used for snapshots on the wire (see [`crate::Snapshot::to_packed`]).
//!
//! The canonical encoding (`canonical`) writes a state field after field, so
//! a body's 28 fields sit next to each other and the same field of the next
//! body is 229 bytes further on. Most of those fields are the same for every
//! body (masses, damping, switches) or change little from one body to the
//! next (positions in a stack, ids, rotations near 1), but a general
//! compressor cannot see that across a 229-byte stride. This encoding turns
//! the value inside out first:
//!
//! 1. **Columns.** Every primitive goes to a *column* chosen by its place in
//!    the type, not by its value: `bodies[*].transform.p.x` is one column,
//!    `contacts[*].manifold.points[*].normal_impulse` another. A place is the
//!    path of struct-field and tuple positions, enum variants, `Option`
//!    payloads and sequence elements from the root. Columns are numbered in
//!    the order they are first written, and a decoder walking the same type
//!    meets them in the same order, so no names travel.
//! 2. **Deltas.** Each primitive is widened to 64 bits (signed values sign-
//!    extended), subtracted (wrapping) from the previous value of its column,
//!    zigzag-mapped and written as a LEB128 varint: a constant column costs
//!    one zero byte per value, a slowly varying one a byte or two.
//! 3. **Deflate.** The columns, behind a header of their lengths, go through
//!    deflate (`miniz_oxide`, pure Rust), which folds the runs of zeros.
//!
//! Layout: one format byte (`1`), the body's length as `u32` LE, then the
//! deflate stream of the body. The body is the column count and each
//! column's byte length (varints), then the columns back to back.
//!
//! Sequence and map lengths are written (to a column of their own); fixed
//! tuples and arrays are not. `Option` and enum tags go to a tag column.
//!
//! Decoding is for untrusted input: the stated body length is capped (at
//! twice the limit plus a column table: a varint can be twice its value's
//! canonical width) and the output grows only as the stream produces it;
//! the stream must end exactly at the end of the input; the column table
//! must add up to the body exactly; a sequence may not claim more elements
//! than the body has bytes; every column must be read to its end; every
//! narrowing is checked; and every value read is charged its canonical
//! (bincode fixed-int) width against the limit, so the packed form admits
//! exactly the values the canonical decoder's limit admits, however well
//! they compress. It returns a typed [`PackError`] and never panics.
//!
//! The packed bytes are not hashed: the state hash stays defined on the
//! canonical encoding.

use serde::de::{self, DeserializeOwned, IntoDeserializer};
use serde::ser::{self, Serialize};

/// The first byte of every packed value.
const FORMAT: u8 = 1;
/// Deflate level: 1, the fastest. Level 6 (zlib's default) packs 3–6 %
/// smaller and takes 1.6–3 times as long (measured on the named scenes).
const LEVEL: u8 = 1;
/// Path nodes allowed before decoding gives up (the state's types use a few
/// hundred; only a runaway type could reach this).
const MAX_NODES: usize = 1 << 16;

/// Why packed bytes do not decode.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// Shorter than its header, or a column ends early.
    #[error("packed data is truncated")]
    Truncated,
    /// Not format 1.
    #[error("unknown packed format {0}")]
    Format(u8),
    /// The inflated body would exceed the caller's limit.
    #[error("packed body of {0} bytes is over the limit")]
    TooLarge(u64),
    /// The value would take more than the caller's limit in its canonical
    /// (bincode fixed-int) encoding.
    #[error("unpacked value is over the limit of {0} bytes")]
    OverLimit(usize),
    /// The deflate stream is corrupt or does not match the stated length.
    #[error("packed body does not inflate")]
    Inflate,
    /// The column table does not add up.
    #[error("packed column table is malformed")]
    Columns,
    /// A varint longer than 10 bytes.
    #[error("malformed varint")]
    Varint,
    /// A value out of range for its type, or a bad tag.
    #[error("value out of range: {0}")]
    Range(&'static str),
    /// Columns or bytes left over after the value.
    #[error("packed data has unread columns or bytes")]
    Trailing,
    /// Too many nested places.
    #[error("type too deep for the packed format")]
    Nodes,
    /// The value's `Serialize`/`Deserialize` impl reported an error, or asked
    /// for something this format cannot do (self-description).
    #[error("{0}")]
    Custom(String),
}

impl ser::Error for PackError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        PackError::Custom(msg.to_string())
    }
}

impl de::Error for PackError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        PackError::Custom(msg.to_string())
    }
}

// Child keys of a place. Struct fields, tuple elements and enum variants
// use `FIRST + index`; a place is only ever one of those kinds (its type is
// fixed), so the key spaces never clash.
const LEN: u32 = 0;
const ELEM: u32 = 1;
const TAG: u32 = 2;
const SOME: u32 = 3;
const KEY: u32 = 4;
const VALUE: u32 = 5;
const FIRST: u32 = 6;
const NONE: u32 = u32::MAX;

/// The places met so far: children by key, and each place's column.
#[derive(Debug)]
struct Places {
    kids: Vec<Vec<u32>>,
    column: Vec<u32>,
}

impl Places {
    fn new() -> Places {
        Places {
            kids: vec![Vec::new()],
            column: vec![NONE],
        }
    }

    #[inline]
    fn child(&mut self, node: u32, key: u32) -> Result<u32, PackError> {
        let kids = &self.kids[node as usize];
        if let Some(&c) = kids.get(key as usize) {
            if c != NONE {
                return Ok(c);
            }
        }
        if self.kids.len() >= MAX_NODES {
            return Err(PackError::Nodes);
        }
        let id = self.kids.len() as u32;
        self.kids.push(Vec::new());
        self.column.push(NONE);
        let kids = &mut self.kids[node as usize];
        if kids.len() <= key as usize {
            kids.resize(key as usize + 1, NONE);
        }
        kids[key as usize] = id;
        Ok(id)
    }
}

#[inline]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn get_varint(data: &[u8], pos: &mut usize) -> Result<u64, PackError> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *data.get(*pos).ok_or(PackError::Truncated)?;
        *pos += 1;
        // The tenth byte may only carry the top bit of a u64.
        if i == 9 && b > 1 {
            return Err(PackError::Varint);
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(PackError::Varint)
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

#[derive(Debug, Default)]
struct OutColumn {
    bytes: Vec<u8>,
    prev: u64,
}

#[derive(Debug)]
struct Packer {
    places: Places,
    columns: Vec<OutColumn>,
}

impl Packer {
    #[inline]
    fn put(&mut self, node: u32, v: u64) {
        let mut c = self.places.column[node as usize];
        if c == NONE {
            c = self.columns.len() as u32;
            self.places.column[node as usize] = c;
            self.columns.push(OutColumn::default());
        }
        let col = &mut self.columns[c as usize];
        let d = v.wrapping_sub(col.prev) as i64;
        col.prev = v;
        put_varint(&mut col.bytes, zigzag(d));
    }

    #[inline]
    fn put_at(&mut self, node: u32, key: u32, v: u64) -> Result<(), PackError> {
        let n = self.places.child(node, key)?;
        self.put(n, v);
        Ok(())
    }
}

/// The packed bytes of `value`.
///
/// # Errors
/// Only for types a state never holds: sequences of unknown length, or a
/// failing `Serialize` impl.
pub(crate) fn pack<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, PackError> {
    let mut p = Packer {
        places: Places::new(),
        columns: Vec::new(),
    };
    value.serialize(Ser { p: &mut p, node: 0 })?;
    let mut body = Vec::new();
    put_varint(&mut body, p.columns.len() as u64);
    for c in &p.columns {
        put_varint(&mut body, c.bytes.len() as u64);
    }
    for c in &p.columns {
        body.extend_from_slice(&c.bytes);
    }
    let len = u32::try_from(body.len()).map_err(|_| PackError::TooLarge(body.len() as u64))?;
    let mut out = vec![FORMAT];
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(&body, LEVEL));
    Ok(out)
}

struct Ser<'a> {
    p: &'a mut Packer,
    node: u32,
}

/// A struct, tuple, sequence or map being written.
struct Compound<'a> {
    p: &'a mut Packer,
    /// The place of the elements (sequences) or of the parent (others).
    node: u32,
    /// The next field or element position (structs, tuples).
    index: u32,
}

impl<'a> Compound<'a> {
    fn next_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), PackError> {
        let n = self.p.places.child(self.node, FIRST + self.index)?;
        self.index += 1;
        v.serialize(Ser {
            p: &mut *self.p,
            node: n,
        })
    }
}

macro_rules! put_unsigned {
    ($($m:ident : $t:ty),*) => {$(
        #[inline]
        fn $m(self, v: $t) -> Result<(), PackError> {
            self.p.put(self.node, u64::from(v));
            Ok(())
        }
    )*};
}

macro_rules! put_signed {
    ($($m:ident : $t:ty),*) => {$(
        #[inline]
        fn $m(self, v: $t) -> Result<(), PackError> {
            self.p.put(self.node, i64::from(v) as u64);
            Ok(())
        }
    )*};
}

impl<'a> ser::Serializer for Ser<'a> {
    type Ok = ();
    type Error = PackError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    put_unsigned!(serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);
    put_signed!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64);

    fn serialize_bool(self, v: bool) -> Result<(), PackError> {
        self.p.put(self.node, u64::from(v));
        Ok(())
    }
    // Floats (required by serde's trait; the state holds none) travel as
    // their IEEE bits: no float arithmetic, so nothing platform-dependent.
    fn serialize_f32(self, v: f32) -> Result<(), PackError> {
        self.serialize_u32(v.to_bits())
    }
    fn serialize_f64(self, v: f64) -> Result<(), PackError> {
        self.serialize_u64(v.to_bits())
    }
    fn serialize_char(self, v: char) -> Result<(), PackError> {
        self.serialize_u32(u32::from(v))
    }
    fn serialize_str(self, v: &str) -> Result<(), PackError> {
        self.serialize_bytes(v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), PackError> {
        self.p.put_at(self.node, LEN, v.len() as u64)?;
        let e = self.p.places.child(self.node, ELEM)?;
        for &b in v {
            self.p.put(e, u64::from(b));
        }
        Ok(())
    }
    fn serialize_none(self) -> Result<(), PackError> {
        self.p.put_at(self.node, TAG, 0)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), PackError> {
        self.p.put_at(self.node, TAG, 1)?;
        let n = self.p.places.child(self.node, SOME)?;
        v.serialize(Ser { p: self.p, node: n })
    }
    fn serialize_unit(self) -> Result<(), PackError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), PackError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
    ) -> Result<(), PackError> {
        self.p.put_at(self.node, TAG, u64::from(i))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), PackError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
        v: &T,
    ) -> Result<(), PackError> {
        self.p.put_at(self.node, TAG, u64::from(i))?;
        let n = self.p.places.child(self.node, FIRST + i)?;
        v.serialize(Ser { p: self.p, node: n })
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a>, PackError> {
        let len = len.ok_or_else(|| PackError::Custom("sequence without a length".into()))?;
        self.p.put_at(self.node, LEN, len as u64)?;
        let node = self.p.places.child(self.node, ELEM)?;
        Ok(Compound {
            p: self.p,
            node,
            index: 0,
        })
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, PackError> {
        Ok(Compound {
            p: self.p,
            node: self.node,
            index: 0,
        })
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, PackError> {
        self.serialize_tuple(len)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, PackError> {
        self.p.put_at(self.node, TAG, u64::from(i))?;
        let node = self.p.places.child(self.node, FIRST + i)?;
        Ok(Compound {
            p: self.p,
            node,
            index: 0,
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'a>, PackError> {
        let len = len.ok_or_else(|| PackError::Custom("map without a length".into()))?;
        self.p.put_at(self.node, LEN, len as u64)?;
        Ok(Compound {
            p: self.p,
            node: self.node,
            index: 0,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Compound<'a>, PackError> {
        self.serialize_tuple(len)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, PackError> {
        self.serialize_tuple_variant(name, i, variant, len)
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = PackError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), PackError> {
        v.serialize(Ser {
            p: &mut *self.p,
            node: self.node,
        })
    }
    fn end(self) -> Result<(), PackError> {
        Ok(())
    }
}

macro_rules! positional {
    ($tr:ident, $m:ident) => {
        impl ser::$tr for Compound<'_> {
            type Ok = ();
            type Error = PackError;
            fn $m<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), PackError> {
                self.next_field(v)
            }
            fn end(self) -> Result<(), PackError> {
                Ok(())
            }
        }
    };
}
positional!(SerializeTuple, serialize_element);
positional!(SerializeTupleStruct, serialize_field);
positional!(SerializeTupleVariant, serialize_field);

/// Struct fields (named) take their place by position too.
macro_rules! named {
    ($tr:ident) => {
        impl ser::$tr for Compound<'_> {
            type Ok = ();
            type Error = PackError;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                _: &'static str,
                v: &T,
            ) -> Result<(), PackError> {
                self.next_field(v)
            }
            fn end(self) -> Result<(), PackError> {
                Ok(())
            }
        }
    };
}
named!(SerializeStruct);
named!(SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = PackError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), PackError> {
        let n = self.p.places.child(self.node, KEY)?;
        k.serialize(Ser {
            p: &mut *self.p,
            node: n,
        })
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), PackError> {
        let n = self.p.places.child(self.node, VALUE)?;
        v.serialize(Ser {
            p: &mut *self.p,
            node: n,
        })
    }
    fn end(self) -> Result<(), PackError> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

#[derive(Debug)]
struct InColumn {
    start: usize,
    end: usize,
    pos: usize,
    prev: u64,
}

#[derive(Debug)]
struct Unpacker<'b> {
    body: &'b [u8],
    places: Places,
    columns: Vec<InColumn>,
    /// Columns handed to places so far.
    assigned: usize,
    /// What is left of the limit, counted in canonical bytes: every value
    /// read is charged the width bincode's fixed-int encoding gives it, so
    /// the packed form admits exactly the values the canonical decoder's
    /// limit admits, and a body of one-byte zero deltas cannot build a
    /// value many times larger than the limit.
    budget: usize,
    limit: usize,
}

impl Unpacker<'_> {
    /// The next value of `node`'s column, charged `width` canonical bytes.
    #[inline]
    fn get(&mut self, node: u32, width: usize) -> Result<u64, PackError> {
        self.budget = self
            .budget
            .checked_sub(width)
            .ok_or(PackError::OverLimit(self.limit))?;
        let mut c = self.places.column[node as usize];
        if c == NONE {
            if self.assigned == self.columns.len() {
                return Err(PackError::Truncated);
            }
            c = self.assigned as u32;
            self.assigned += 1;
            self.places.column[node as usize] = c;
        }
        let col = &mut self.columns[c as usize];
        let data = &self.body[..col.end];
        let z = get_varint(data, &mut col.pos)?;
        col.prev = col.prev.wrapping_add(unzigzag(z) as u64);
        Ok(col.prev)
    }

    #[inline]
    fn get_at(&mut self, node: u32, key: u32, width: usize) -> Result<u64, PackError> {
        let n = self.places.child(node, key)?;
        self.get(n, width)
    }

    /// A sequence length (a `u64` in the canonical form): no more elements
    /// than the body has bytes.
    fn len_at(&mut self, node: u32) -> Result<usize, PackError> {
        let n = self.get_at(node, LEN, 8)?;
        if n > self.body.len() as u64 {
            return Err(PackError::Range("sequence length"));
        }
        Ok(n as usize)
    }
}

/// The largest inflated body accepted for a value of at most `limit`
/// canonical bytes: twice that (the widest varint against its value's width)
/// plus a full column table.
fn body_limit(limit: usize) -> usize {
    limit.saturating_mul(2).saturating_add(10 * MAX_NODES + 10)
}

/// Inflates a raw deflate stream that must produce exactly `len` bytes and
/// end exactly at the end of `stream` (no bytes after it). The output grows
/// as it is produced, so a stated length the stream does not back costs no
/// allocation.
fn inflate(stream: &[u8], len: usize) -> Result<Vec<u8>, PackError> {
    use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
    use miniz_oxide::inflate::TINFLStatus;
    let mut out = vec![0; len.min(1 << 16)];
    let mut state = Box::<DecompressorOxide>::default();
    let (mut read, mut written) = (0, 0);
    loop {
        let (status, r, w) = decompress(
            &mut state,
            &stream[read..],
            &mut out,
            written,
            inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        );
        read += r;
        written += w;
        match status {
            TINFLStatus::Done => break,
            TINFLStatus::HasMoreOutput if out.len() < len => {
                let grown = out.len().saturating_mul(2).min(len);
                out.resize(grown, 0);
            }
            _ => return Err(PackError::Inflate),
        }
    }
    if written != len || read != stream.len() {
        return Err(PackError::Inflate);
    }
    Ok(out)
}

/// Decodes packed bytes whose value takes at most `limit` bytes in the
/// canonical encoding (each value read is charged its width there).
///
/// # Errors
/// See [`PackError`].
pub(crate) fn unpack<T: DeserializeOwned>(bytes: &[u8], limit: usize) -> Result<T, PackError> {
    let (&format, rest) = bytes.split_first().ok_or(PackError::Truncated)?;
    if format != FORMAT {
        return Err(PackError::Format(format));
    }
    let (len, stream) = rest.split_first_chunk::<4>().ok_or(PackError::Truncated)?;
    let len = u32::from_le_bytes(*len) as usize;
    // A varint can be twice its value's canonical width (a `u8` delta of
    // 255 takes 2 bytes), plus the column table: the body may exceed the
    // limit, and the canonical budget below bounds the value itself.
    if len > body_limit(limit) {
        return Err(PackError::TooLarge(len as u64));
    }
    let body = inflate(stream, len)?;
    let mut pos = 0;
    let count = get_varint(&body, &mut pos)?;
    // A column per place at most, and each column's length takes at least a
    // byte of the table.
    if count > MAX_NODES as u64 || count > body.len() as u64 {
        return Err(PackError::Columns);
    }
    let mut lengths = Vec::with_capacity(count as usize);
    for _ in 0..count {
        lengths.push(get_varint(&body, &mut pos)?);
    }
    let mut columns = Vec::with_capacity(lengths.len());
    let mut start = pos as u64;
    for l in lengths {
        let end = start.checked_add(l).ok_or(PackError::Columns)?;
        if end > body.len() as u64 {
            return Err(PackError::Columns);
        }
        columns.push(InColumn {
            start: start as usize,
            end: end as usize,
            pos: start as usize,
            prev: 0,
        });
        start = end;
    }
    if start != body.len() as u64 {
        return Err(PackError::Columns);
    }
    let mut u = Unpacker {
        body: &body,
        places: Places::new(),
        columns,
        assigned: 0,
        budget: limit,
        limit,
    };
    let value = T::deserialize(De { u: &mut u, node: 0 })?;
    if u.assigned != u.columns.len() || u.columns.iter().any(|c| c.pos != c.end) {
        return Err(PackError::Trailing);
    }
    debug_assert!(u.columns.iter().all(|c| c.start <= c.pos));
    Ok(value)
}

struct De<'a, 'b> {
    u: &'a mut Unpacker<'b>,
    node: u32,
}

macro_rules! get_int {
    ($($m:ident : $t:ty => $visit:ident, $what:literal, $signed:literal),*) => {$(
        fn $m<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
            let raw = self.u.get(self.node, core::mem::size_of::<$t>())?;
            let x = if $signed {
                <$t>::try_from(raw as i64).ok()
            } else {
                <$t>::try_from(raw).ok()
            };
            v.$visit(x.ok_or(PackError::Range($what))?)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for De<'_, '_> {
    type Error = PackError;

    fn deserialize_any<V: de::Visitor<'de>>(self, _: V) -> Result<V::Value, PackError> {
        Err(PackError::Custom(
            "the packed format is not self-describing".into(),
        ))
    }

    get_int!(
        deserialize_u8: u8 => visit_u8, "u8", false,
        deserialize_u16: u16 => visit_u16, "u16", false,
        deserialize_u32: u32 => visit_u32, "u32", false,
        deserialize_u64: u64 => visit_u64, "u64", false,
        deserialize_i8: i8 => visit_i8, "i8", true,
        deserialize_i16: i16 => visit_i16, "i16", true,
        deserialize_i32: i32 => visit_i32, "i32", true,
        deserialize_i64: i64 => visit_i64, "i64", true
    );

    fn deserialize_bool<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        match self.u.get(self.node, 1)? {
            0 => v.visit_bool(false),
            1 => v.visit_bool(true),
            _ => Err(PackError::Range("bool")),
        }
    }
    // Floats from their IEEE bits (serde's trait requires them; the state
    // holds none): no float arithmetic.
    fn deserialize_f32<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        let raw = u32::try_from(self.u.get(self.node, 4)?).map_err(|_| PackError::Range("f32"))?;
        v.visit_f32(f32::from_bits(raw))
    }
    fn deserialize_f64<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        v.visit_f64(f64::from_bits(self.u.get(self.node, 8)?))
    }
    fn deserialize_char<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        let raw = u32::try_from(self.u.get(self.node, 4)?).ok();
        v.visit_char(
            raw.and_then(char::from_u32)
                .ok_or(PackError::Range("char"))?,
        )
    }
    fn deserialize_str<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        self.deserialize_string(v)
    }
    fn deserialize_string<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        let bytes = read_bytes(self.u, self.node)?;
        v.visit_string(String::from_utf8(bytes).map_err(|_| PackError::Range("utf-8"))?)
    }
    fn deserialize_bytes<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        self.deserialize_byte_buf(v)
    }
    fn deserialize_byte_buf<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        v.visit_byte_buf(read_bytes(self.u, self.node)?)
    }
    fn deserialize_option<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        match self.u.get_at(self.node, TAG, 1)? {
            0 => v.visit_none(),
            1 => {
                let node = self.u.places.child(self.node, SOME)?;
                v.visit_some(De { u: self.u, node })
            }
            _ => Err(PackError::Range("option tag")),
        }
    }
    fn deserialize_unit<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, PackError> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, PackError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        let left = self.u.len_at(self.node)?;
        let node = self.u.places.child(self.node, ELEM)?;
        v.visit_seq(Elements {
            u: self.u,
            node,
            left,
        })
    }
    fn deserialize_tuple<V: de::Visitor<'de>>(
        self,
        len: usize,
        v: V,
    ) -> Result<V::Value, PackError> {
        v.visit_seq(Fields {
            u: self.u,
            node: self.node,
            index: 0,
            len,
        })
    }
    fn deserialize_tuple_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, PackError> {
        self.deserialize_tuple(len, v)
    }
    fn deserialize_map<V: de::Visitor<'de>>(self, v: V) -> Result<V::Value, PackError> {
        let left = self.u.len_at(self.node)?;
        v.visit_map(Entries {
            u: self.u,
            node: self.node,
            left,
        })
    }
    fn deserialize_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, PackError> {
        self.deserialize_tuple(fields.len(), v)
    }
    fn deserialize_enum<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, PackError> {
        v.visit_enum(Variant {
            u: self.u,
            node: self.node,
        })
    }
    fn deserialize_identifier<V: de::Visitor<'de>>(self, _: V) -> Result<V::Value, PackError> {
        Err(PackError::Custom(
            "the packed format has no identifiers".into(),
        ))
    }
    fn deserialize_ignored_any<V: de::Visitor<'de>>(self, _: V) -> Result<V::Value, PackError> {
        Err(PackError::Custom(
            "the packed format cannot skip values".into(),
        ))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

fn read_bytes(u: &mut Unpacker<'_>, node: u32) -> Result<Vec<u8>, PackError> {
    let n = u.len_at(node)?;
    let e = u.places.child(node, ELEM)?;
    // `n` is at most the body's length, which is itself capped.
    // Each byte is charged as it is read; reserve no more than can be.
    let mut out = Vec::with_capacity(n.min(u.budget));
    for _ in 0..n {
        let b = u8::try_from(u.get(e, 1)?).map_err(|_| PackError::Range("byte"))?;
        out.push(b);
    }
    Ok(out)
}

/// Elements of a sequence, all at one place.
struct Elements<'a, 'b> {
    u: &'a mut Unpacker<'b>,
    node: u32,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Elements<'_, '_> {
    type Error = PackError;
    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, PackError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(De {
            u: &mut *self.u,
            node: self.node,
        })
        .map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// Fields of a struct or tuple, each at its own place.
struct Fields<'a, 'b> {
    u: &'a mut Unpacker<'b>,
    node: u32,
    index: u32,
    len: usize,
}

impl<'de> de::SeqAccess<'de> for Fields<'_, '_> {
    type Error = PackError;
    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, PackError> {
        if self.index as usize >= self.len {
            return Ok(None);
        }
        let node = self.u.places.child(self.node, FIRST + self.index)?;
        self.index += 1;
        seed.deserialize(De {
            u: &mut *self.u,
            node,
        })
        .map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.len - self.index as usize)
    }
}

/// Entries of a map: keys at one place, values at another.
struct Entries<'a, 'b> {
    u: &'a mut Unpacker<'b>,
    node: u32,
    left: usize,
}

impl<'de> de::MapAccess<'de> for Entries<'_, '_> {
    type Error = PackError;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, PackError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let node = self.u.places.child(self.node, KEY)?;
        seed.deserialize(De {
            u: &mut *self.u,
            node,
        })
        .map(Some)
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, PackError> {
        let node = self.u.places.child(self.node, VALUE)?;
        seed.deserialize(De {
            u: &mut *self.u,
            node,
        })
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// An enum: its tag, then the chosen variant's contents at that variant's
/// place.
struct Variant<'a, 'b> {
    u: &'a mut Unpacker<'b>,
    node: u32,
}

impl<'de, 'a, 'b> de::EnumAccess<'de> for Variant<'a, 'b> {
    type Error = PackError;
    type Variant = De<'a, 'b>;
    fn variant_seed<T: de::DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, De<'a, 'b>), PackError> {
        let tag = u32::try_from(self.u.get_at(self.node, TAG, 4)?)
            .map_err(|_| PackError::Range("enum tag"))?;
        // An unknown tag is refused here, before a place is made for it.
        let value = seed.deserialize(tag.into_deserializer())?;
        // Derived visitors refuse unknown tags above; a hand-written one
        // that took any u32 still cannot make a place past the limit.
        let key = tag.checked_add(FIRST).filter(|&k| k as usize <= MAX_NODES);
        let node = self
            .u
            .places
            .child(self.node, key.ok_or(PackError::Nodes)?)?;
        Ok((value, De { u: self.u, node }))
    }
}

impl<'de> de::VariantAccess<'de> for De<'_, '_> {
    type Error = PackError;
    fn unit_variant(self) -> Result<(), PackError> {
        Ok(())
    }
    fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, PackError> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: de::Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, PackError> {
        de::Deserializer::deserialize_tuple(self, len, v)
    }
    fn struct_variant<V: de::Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, PackError> {
        de::Deserializer::deserialize_tuple(self, fields.len(), v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    enum Kind {
        Unit,
        New(i16),
        Tuple(u8, bool),
        Named { a: i64, b: Option<u32> },
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Item {
        id: u32,
        pos: (i64, i64),
        kind: Kind,
        arr: [u8; 3],
        name: String,
        // Test-only: floats round-trip as bits.
        f: f64,
        c: char,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Doc {
        items: Vec<Item>,
        map: BTreeMap<u16, Vec<i8>>,
        none: Option<Kind>,
        unit: (),
    }

    fn doc() -> Doc {
        let kinds = [
            Kind::Unit,
            Kind::New(-300),
            Kind::Tuple(255, true),
            Kind::Named {
                a: i64::MIN,
                b: Some(u32::MAX),
            },
            Kind::Named { a: 7, b: None },
        ];
        Doc {
            items: (0..50)
                .map(|i| Item {
                    id: i,
                    pos: (i64::from(i) * 1000 - 7, -i64::from(i)),
                    kind: kinds[i as usize % kinds.len()].clone(),
                    arr: [i as u8, 0, 255],
                    name: format!("item {i} ∑"),
                    f: f64::from(i) * 0.25,
                    c: 'é',
                })
                .collect(),
            map: (0..5).map(|k| (k * 3, vec![-128, 0, 127])).collect(),
            none: None,
            unit: (),
        }
    }

    #[test]
    fn every_kind_of_value_round_trips() {
        let d = doc();
        let bytes = pack(&d).unwrap();
        assert_eq!(unpack::<Doc>(&bytes, 1 << 20).unwrap(), d);
        assert_eq!(
            unpack::<u64>(&pack(&u64::MAX).unwrap(), 64).unwrap(),
            u64::MAX
        );
        assert_eq!(
            unpack::<i64>(&pack(&i64::MIN).unwrap(), 64).unwrap(),
            i64::MIN
        );
    }

    #[test]
    fn repeated_fields_pack_small() {
        // 50 records of mostly constant or slowly changing fields.
        let d = doc();
        let packed = pack(&d).unwrap().len();
        let canonical = bincode::serde::encode_to_vec(&d, crate::encoding::canonical::CONFIG)
            .unwrap()
            .len();
        assert!(
            packed * 4 < canonical,
            "packed {packed} vs canonical {canonical}"
        );
    }

    #[test]
    fn varints_round_trip_and_refuse_overlong() {
        for v in [0, 1, 127, 128, 300, u64::MAX / 2, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut pos = 0;
            assert_eq!(get_varint(&out, &mut pos).unwrap(), v);
            assert_eq!(pos, out.len());
        }
        for d in [0, 1, -1, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
        let mut pos = 0;
        assert!(matches!(
            get_varint(&[0xff; 10], &mut pos),
            Err(PackError::Varint)
        ));
        let mut pos = 0;
        assert!(matches!(
            get_varint(&[0x80; 3], &mut pos),
            Err(PackError::Truncated)
        ));
    }

    /// Re-deflates a hand-made body behind a valid header.
    fn wrap(body: &[u8]) -> Vec<u8> {
        let mut out = vec![FORMAT];
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(body, 1));
        out
    }

    #[test]
    fn malformed_input_is_refused_with_its_reason() {
        let good = pack(&doc()).unwrap();
        let err = |b: &[u8]| unpack::<Doc>(b, 1 << 20).unwrap_err();
        assert!(matches!(err(&[]), PackError::Truncated));
        assert!(matches!(err(&[FORMAT, 1, 0]), PackError::Truncated));
        let mut wrong = good.clone();
        wrong[0] = 2;
        assert!(matches!(err(&wrong), PackError::Format(2)));
        // A stated body over the limit is refused before inflating.
        let mut big = good.clone();
        big[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(err(&big), PackError::TooLarge(_)));
        // A stated body longer than the stream inflates to.
        let mut long = good.clone();
        let stated = u32::from_le_bytes(long[1..5].try_into().unwrap()) + 1;
        long[1..5].copy_from_slice(&stated.to_le_bytes());
        assert!(matches!(err(&long), PackError::Inflate));
        assert!(matches!(err(&good[..good.len() - 3]), PackError::Inflate));
        // Bytes after the end of the deflate stream.
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(err(&trailing), PackError::Inflate));
        // Column tables that do not add up.
        assert!(matches!(err(&wrap(&[5, 1])), PackError::Columns));
        assert!(matches!(err(&wrap(&[1, 9, 0])), PackError::Columns));
        assert!(matches!(err(&wrap(&[1, 1, 0, 0])), PackError::Columns));
        // More columns than a type can have places, each of zero bytes.
        let mut many = Vec::new();
        put_varint(&mut many, MAX_NODES as u64 + 1);
        many.resize(many.len() + MAX_NODES + 1, 0);
        assert!(matches!(err(&wrap(&many)), PackError::Columns));
        // A value of the wrong type for its column: a bool of 2.
        assert!(matches!(
            unpack::<bool>(&wrap(&[1, 1, 4]), 64).unwrap_err(),
            PackError::Range("bool")
        ));
        // A u8 column holding 256 (zigzag 512).
        assert!(matches!(
            unpack::<u8>(&wrap(&[1, 2, 0x80, 0x04]), 64).unwrap_err(),
            PackError::Range("u8")
        ));
        // A sequence claiming more elements than the body has bytes.
        assert!(matches!(
            unpack::<Vec<u64>>(&wrap(&[1, 3, 0xfe, 0xff, 0x7f]), 64).unwrap_err(),
            PackError::Range("sequence length")
        ));
        // An unread column, and a column with bytes left over.
        assert!(matches!(
            unpack::<u8>(&wrap(&[2, 1, 1, 2, 0]), 64).unwrap_err(),
            PackError::Trailing
        ));
        assert!(matches!(
            unpack::<u8>(&wrap(&[1, 2, 2, 0]), 64).unwrap_err(),
            PackError::Trailing
        ));
        // Two values read from a column holding one.
        assert!(matches!(
            unpack::<(u8, u8)>(&wrap(&[1, 1, 2]), 64).unwrap_err(),
            PackError::Truncated
        ));
        // An unknown enum tag.
        assert!(matches!(
            unpack::<Kind>(&wrap(&[1, 1, 18]), 64).unwrap_err(),
            PackError::Custom(_)
        ));
    }

    /// The decoder charges each value its canonical width, so its limit
    /// means what the canonical decoder's limit means: the exact canonical
    /// size passes, a byte less does not.
    #[test]
    fn the_limit_counts_canonical_bytes() {
        type Rows = Vec<(u32, Option<i64>, Kind, [u8; 3], String, bool)>;
        let rows: Rows = (0..40)
            .map(|i| {
                let kind = match i % 3 {
                    0 => Kind::Unit,
                    1 => Kind::New(i as i16),
                    _ => Kind::Named { a: -i, b: Some(7) },
                };
                let some = (i % 2 == 0).then_some(i * 1_000_000_007);
                (
                    i as u32,
                    some,
                    kind,
                    [1, 2, 3],
                    format!("row {i}"),
                    i % 5 == 0,
                )
            })
            .collect();
        let canonical = bincode::serde::encode_to_vec(&rows, crate::encoding::canonical::CONFIG)
            .unwrap()
            .len();
        let packed = pack(&rows).unwrap();
        assert_eq!(unpack::<Rows>(&packed, canonical).unwrap(), rows);
        assert!(matches!(
            unpack::<Rows>(&packed, canonical - 1),
            Err(PackError::OverLimit(_))
        ));
        // The body can be wider than the canonical form (a u8 delta of 255
        // is a 2-byte varint): a value exactly at the limit still decodes.
        let zigzags: Vec<u8> = (0..4000)
            .map(|i| if i % 2 == 0 { 0 } else { 255 })
            .collect();
        let canonical = 8 + zigzags.len();
        let packed = pack(&zigzags).unwrap();
        let body = u32::from_le_bytes(packed[1..5].try_into().unwrap()) as usize;
        assert!(body > canonical, "{body} vs {canonical}");
        assert_eq!(unpack::<Vec<u8>>(&packed, canonical).unwrap(), zigzags);
        // A body of one-byte zero deltas claiming 1000 u64 values: 1002
        // bytes packed, 8008 canonical; a limit of 4096 refuses it.
        // Two columns: the length (2 bytes: the varint of zigzag(1000)),
        // then the elements (1000 zero deltas).
        let mut bomb = vec![2u8];
        put_varint(&mut bomb, 2);
        put_varint(&mut bomb, 1000);
        put_varint(&mut bomb, zigzag(1000));
        bomb.extend(std::iter::repeat_n(0u8, 1000));
        assert_eq!(
            unpack::<Vec<u64>>(&wrap(&bomb), 1 << 20).unwrap(),
            vec![0u64; 1000]
        );
        assert!(matches!(
            unpack::<Vec<u64>>(&wrap(&bomb), 4096),
            Err(PackError::OverLimit(4096))
        ));
    }

    #[test]
    fn mutated_and_truncated_input_never_panics() {
        let good = pack(&doc()).unwrap();
        let body = {
            let len = u32::from_le_bytes(good[1..5].try_into().unwrap()) as usize;
            miniz_oxide::inflate::decompress_to_vec_with_limit(&good[5..], len).unwrap()
        };
        // Flip each byte of the inflated body in turn: most flips decode to
        // another value or an error; none may panic.
        let mut decoded_other = 0;
        for i in 0..body.len() {
            let mut b = body.clone();
            b[i] ^= 0x41;
            if let Ok(d) = unpack::<Doc>(&wrap(&b), 1 << 20) {
                assert_ne!(d, doc());
                decoded_other += 1;
            }
        }
        assert!(decoded_other > 0, "some flips should still decode");
        for cut in 0..good.len() {
            assert!(unpack::<Doc>(&good[..cut], 1 << 20).is_err());
        }
    }
}

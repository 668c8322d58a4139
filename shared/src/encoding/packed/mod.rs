//! The packed encoding: a columnar, delta-coded, deflated form of any serde
//! value, used for snapshots on the wire (see [`crate::Snapshot::to_packed`]).
//!
//! The canonical encoding (`canonical`) writes a state field after field, so
//! a body's 29 fields sit next to each other and the same field of the next
//! body is 230 bytes further on. Most of those fields are the same for every
//! body (masses, damping, switches) or change little from one body to the
//! next (positions in a stack, ids, rotations near 1), but a general
//! compressor cannot see that across a 230-byte stride. This encoding turns
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

mod pack;
mod unpack;

pub(crate) use pack::pack;
pub(crate) use unpack::unpack;

use serde::{de, ser};

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

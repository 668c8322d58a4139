//! Unpacking: inflates the columns and walks the type as a serde
//! deserializer, each primitive read from its place's column, with every
//! length and the canonical-size limit checked (the input is untrusted).

use super::{
    get_varint, unzigzag, PackError, Places, ELEM, FIRST, FORMAT, KEY, LEN, MAX_NODES, NONE, SOME,
    TAG, VALUE,
};
use serde::de::{self, DeserializeOwned, IntoDeserializer};

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

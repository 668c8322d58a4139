//! Packing: a serde serializer that sends every primitive to its place's
//! column as a delta varint, then deflates the columns.

use super::{
    put_varint, zigzag, PackError, Places, ELEM, FIRST, FORMAT, KEY, LEN, LEVEL, NONE, SOME, TAG,
    VALUE,
};
use serde::ser::{self, Serialize};

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

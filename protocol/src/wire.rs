//! Serde helpers for the datagram encoding ([`crate::messages`]).
//!
//! Datagrams use bincode's variable-int configuration, where small
//! integers, lengths and enum tags take one byte. Two things must not
//! change width with it:
//!
//! - [`canonical`]: a list of a game's inputs (or runs of them) travels as
//!   one byte string holding each element in its canonical fixed-int
//!   encoding, so an input takes exactly what its
//!   [`Input::MAX_ENCODED`](bitroom_sim::game::Input::MAX_ENCODED) states
//!   (a varint `u16` can take 3 bytes) and the datagram bounds hold;
//! - [`fixed_u32`]: a 32-bit value in 4 bytes (a varint of a random one
//!   takes 5); [`fixed_u16`]: ticks travel as their low 16 bits in 2
//!   bytes; a tick's state hash as 3 ([`TickWire`]).
//!
//! [`TickWire`] is a tick's wire form: one tag byte says whether changed
//! inputs, events, both or neither follow (two `Option` tags would take
//! two), and whether the tick follows the entry before it (then its
//! position is not written).

use crate::messages::{InputChanges, TickData};
use bincode::config::{Configuration, Fixint, LittleEndian, NoLimit};
use bitroom_sim::game::SlotEvent;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The canonical encoding (the reliable messages' and the replay's).
const CANONICAL: Configuration<LittleEndian, Fixint, NoLimit> = bincode::config::standard()
    .with_fixed_int_encoding()
    .with_little_endian();

/// `Vec<T>` as one byte string of canonical encodings (see the module
/// docs). Decoding takes elements until the bytes are used up; an element
/// that takes no bytes is refused (there would be no end to them).
pub mod canonical {
    use super::CANONICAL;
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Serializes `items` as one byte string.
    ///
    /// # Errors
    /// An element that does not encode (plain data always does).
    pub fn serialize<S: Serializer, T: Serialize>(items: &[T], s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::new();
        for item in items {
            bincode::serde::encode_into_std_write(item, &mut bytes, CANONICAL)
                .map_err(S::Error::custom)?;
        }
        s.serialize_bytes(&bytes)
    }

    /// Reads the byte string back into its elements.
    ///
    /// # Errors
    /// Bytes that do not split into whole elements.
    pub fn deserialize<'de, D: Deserializer<'de>, T: DeserializeOwned>(
        d: D,
    ) -> Result<Vec<T>, D::Error> {
        let bytes = serde_bytes::ByteBuf::deserialize(d)?;
        let mut rest: &[u8] = &bytes;
        let mut items = Vec::new();
        while !rest.is_empty() {
            let (item, used) = bincode::serde::decode_from_slice(rest, CANONICAL)
                .map_err(|e| D::Error::custom(format!("an input: {e}")))?;
            if used == 0 {
                return Err(D::Error::custom("an input of no bytes"));
            }
            rest = &rest[used..];
            items.push(item);
        }
        Ok(items)
    }
}

/// A `u16` as 2 little-endian bytes, whatever the integer encoding (a
/// varint of a tick past 250 takes 3).
pub mod fixed_u16 {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Serializes `v` as 2 bytes.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(v: &u16, s: S) -> Result<S::Ok, S::Error> {
        v.to_le_bytes().serialize(s)
    }

    /// Reads 2 bytes.
    ///
    /// # Errors
    /// Fewer than 2 bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
        <[u8; 2]>::deserialize(d).map(u16::from_le_bytes)
    }
}

/// A `u32` as 4 little-endian bytes, whatever the integer encoding.
pub mod fixed_u32 {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Serializes `v` as 4 bytes.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
        v.to_le_bytes().serialize(s)
    }

    /// Reads 4 bytes.
    ///
    /// # Errors
    /// Fewer than 4 bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        <[u8; 4]>::deserialize(d).map(u32::from_le_bytes)
    }
}

/// A state hash cut to 24 bits, in 3 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hash24([u8; 3]);

impl Hash24 {
    fn new(hash: u32) -> Hash24 {
        let b = hash.to_le_bytes();
        Hash24([b[0], b[1], b[2]])
    }

    fn get(self) -> u32 {
        u32::from_le_bytes([self.0[0], self.0[1], self.0[2], 0])
    }
}

/// The wire form of a [`TickData`] (see the module docs). The tick right
/// after the entry before (`back` 0, nearly every tick) has variants of
/// its own that leave `back` out: a byte less per tick.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "I: Serialize", deserialize = "I: DeserializeOwned"))]
pub enum TickWire<I> {
    /// No input changed, no event.
    Idle(u32, Hash24),
    /// Inputs changed.
    Inputs(u32, Hash24, InputChanges<I>),
    /// Seats joined or left.
    Events(u32, Hash24, Vec<SlotEvent>),
    /// Both.
    Both(u32, Hash24, InputChanges<I>, Vec<SlotEvent>),
    /// [`TickWire::Idle`] with `back` 0.
    NextIdle(Hash24),
    /// [`TickWire::Inputs`] with `back` 0.
    NextInputs(Hash24, InputChanges<I>),
    /// [`TickWire::Events`] with `back` 0.
    NextEvents(Hash24, Vec<SlotEvent>),
    /// [`TickWire::Both`] with `back` 0.
    NextBoth(Hash24, InputChanges<I>, Vec<SlotEvent>),
}

impl<I> From<TickData<I>> for TickWire<I> {
    fn from(t: TickData<I>) -> TickWire<I> {
        let h = Hash24::new(t.hash);
        match (t.back, t.changes, t.events) {
            (0, None, None) => TickWire::NextIdle(h),
            (0, Some(c), None) => TickWire::NextInputs(h, c),
            (0, None, Some(e)) => TickWire::NextEvents(h, e),
            (0, Some(c), Some(e)) => TickWire::NextBoth(h, c, e),
            (b, None, None) => TickWire::Idle(b, h),
            (b, Some(c), None) => TickWire::Inputs(b, h, c),
            (b, None, Some(e)) => TickWire::Events(b, h, e),
            (b, Some(c), Some(e)) => TickWire::Both(b, h, c, e),
        }
    }
}

impl<I> From<TickWire<I>> for TickData<I> {
    fn from(w: TickWire<I>) -> TickData<I> {
        let (back, hash, changes, events) = match w {
            TickWire::Idle(b, h) => (b, h, None, None),
            TickWire::Inputs(b, h, c) => (b, h, Some(c), None),
            TickWire::Events(b, h, e) => (b, h, None, Some(e)),
            TickWire::Both(b, h, c, e) => (b, h, Some(c), Some(e)),
            TickWire::NextIdle(h) => (0, h, None, None),
            TickWire::NextInputs(h, c) => (0, h, Some(c), None),
            TickWire::NextEvents(h, e) => (0, h, None, Some(e)),
            TickWire::NextBoth(h, c, e) => (0, h, Some(c), Some(e)),
        };
        TickData {
            back,
            hash: hash.get(),
            changes,
            events,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Msg {
        #[serde(with = "super::canonical")]
        items: Vec<(u8, u16)>,
        #[serde(with = "super::fixed_u32")]
        hash: u32,
    }

    #[test]
    fn canonical_lists_and_fixed_hashes_keep_their_width() {
        let config = bincode::config::standard();
        let m = Msg {
            items: vec![(1, 300), (2, 65535)],
            hash: 0xdead_beef,
        };
        let bytes = bincode::serde::encode_to_vec(&m, config).unwrap();
        // Length byte + 2 × 3 canonical bytes + 4 hash bytes (a varint u16
        // of 300 would take 3, a varint u32 of the hash 5).
        assert_eq!(bytes.len(), 1 + 6 + 4);
        let (back, used): (Msg, usize) = bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!((back, used), (m, bytes.len()));
        // A byte string that does not split into whole elements.
        let bad = [4u8, 1, 44, 1, 2, 0, 0, 0, 0];
        assert!(bincode::serde::decode_from_slice::<Msg, _>(&bad, config).is_err());
    }
}

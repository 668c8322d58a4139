//! A saved game ([`GameSnapshot`]): the world's snapshot plus the seats
//! and the rules' state, its two byte forms (canonical and packed), and
//! the state hash they share with [`Game`](super::Game).

use super::{Rules, SlotOf, MAX_SLOTS};
use crate::encoding::{canonical::CONFIG, Snapshot, SnapshotError};
use serde::Serialize;
use xxhash_rust::xxh3::Xxh3;

/// A saved game: `restore` + N ticks equals N ticks, bit for bit.
#[derive(Debug)]
pub struct GameSnapshot<R: Rules> {
    pub(super) world: Snapshot,
    pub(super) slots: Vec<SlotOf<R>>,
    pub(super) state: R::State,
}

impl<R: Rules> Clone for GameSnapshot<R> {
    fn clone(&self) -> Self {
        GameSnapshot {
            world: self.world.clone(),
            slots: self.slots.clone(),
            state: self.state.clone(),
        }
    }

    fn clone_from(&mut self, o: &Self) {
        self.world.clone_from(&o.world);
        self.slots.clone_from(&o.slots);
        self.state.clone_from(&o.state);
    }
}

/// Largest game-state part (slots + rules state) accepted when decoding.
pub const MAX_GAME_EXTRA_BYTES: usize = 1 << 20;

/// The first bytes of a packed game snapshot ([`GameSnapshot::to_packed`]).
/// Read as the canonical form's world length (`u32` LE) they would be
/// 1.26 GB, over [`crate::state::MAX_SNAPSHOT_BYTES`], so the two forms
/// cannot be confused.
pub const PACKED_MAGIC: &[u8; 4] = b"BRPK";

/// Why game snapshot bytes were refused.
#[derive(Debug, thiserror::Error)]
pub enum GameSnapshotError {
    /// The world part was refused.
    #[error("world part: {0}")]
    World(#[from] SnapshotError),
    /// The bytes end before the declared world part.
    #[error("game snapshot is truncated")]
    Truncated,
    /// The slots or rules state do not decode.
    #[error("game part does not decode: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// Bytes left over.
    #[error("game snapshot has {0} trailing bytes")]
    Trailing(usize),
    /// Packed bytes were expected and [`PACKED_MAGIC`] is missing.
    #[error("not a packed game snapshot")]
    NotPacked,
    /// More slots than [`MAX_SLOTS`], or a different count than expected.
    #[error("game snapshot has {0} slots")]
    Slots(usize),
}

/// XXH3-64 (seed 0) of the world's hash (8 bytes LE), then the slots and
/// the rules state in the canonical encoding.
pub(super) fn hash_parts<T: Serialize, S: Serialize>(
    world_hash: u64,
    slots: &[T],
    state: &S,
) -> u64 {
    let mut h = Xxh3::new();
    h.update(&world_hash.to_le_bytes());
    let mut extra = Vec::new();
    crate::encoding::canonical::encode_into(&(slots, state), &mut extra)
        .expect("game state encodes");
    h.update(&extra);
    h.digest()
}

impl<R: Rules> GameSnapshot<R> {
    /// Tick at which the snapshot was taken.
    pub fn tick(&self) -> u64 {
        self.world.tick()
    }

    /// The same hash [`Game::state_hash`](super::Game::state_hash) gives for this state.
    pub fn state_hash(&self) -> u64 {
        hash_parts(self.world.state_hash(), &self.slots, &self.state)
    }

    /// The world part.
    pub fn world(&self) -> &Snapshot {
        &self.world
    }

    /// The seats.
    pub fn slots(&self) -> &[SlotOf<R>] {
        &self.slots
    }

    /// The rules' game-wide state.
    pub fn state(&self) -> &R::State {
        &self.state
    }

    /// Canonical bytes: the world snapshot's length as `u32` LE, its bytes,
    /// then the slots and rules state (bincode 2, fixed-int, LE).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_with(&mut out, |world, out| world.encode_into(out));
        out
    }

    /// The packed form, for sending and storing: [`PACKED_MAGIC`], then the
    /// layout of [`GameSnapshot::to_bytes`] with the world part in
    /// [`Snapshot::to_packed`]'s form (the slots and rules state are small
    /// and stay canonical).
    pub fn to_packed(&self) -> Vec<u8> {
        let mut out = PACKED_MAGIC.to_vec();
        self.encode_with(&mut out, |world, out| {
            out.extend_from_slice(&world.to_packed())
        });
        out
    }

    fn encode_with(&self, out: &mut Vec<u8>, world: impl FnOnce(&Snapshot, &mut Vec<u8>)) {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        world(&self.world, out);
        // The world part is at most MAX_SNAPSHOT_BYTES (64 MiB) < 4 GiB
        // (packed, it is smaller still).
        let world_len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&world_len.to_le_bytes());
        crate::encoding::canonical::encode_into(&(&self.slots, &self.state), out)
            .expect("game state encodes");
    }

    /// Decodes and validates untrusted bytes.
    ///
    /// # Errors
    /// Truncated, oversized or malformed input; more than [`MAX_SLOTS`] slots.
    pub fn from_bytes(bytes: &[u8]) -> Result<GameSnapshot<R>, GameSnapshotError> {
        GameSnapshot::decode_with(bytes, Snapshot::from_bytes)
    }

    /// Decodes and validates untrusted bytes of [`GameSnapshot::to_packed`].
    ///
    /// # Errors
    /// As [`GameSnapshot::from_bytes`].
    pub fn from_packed(bytes: &[u8]) -> Result<GameSnapshot<R>, GameSnapshotError> {
        let rest = bytes
            .strip_prefix(PACKED_MAGIC)
            .ok_or(GameSnapshotError::NotPacked)?;
        GameSnapshot::decode_with(rest, Snapshot::from_packed)
    }

    /// Decodes either form, told apart by the first four bytes: the packed
    /// form starts with [`PACKED_MAGIC`], which as the canonical form's
    /// world length (`u32` LE) would be over 1 GiB, past what it allows.
    /// For stores that hold both (replay files before and after format 4).
    ///
    /// # Errors
    /// As [`GameSnapshot::from_bytes`].
    pub fn decode(bytes: &[u8]) -> Result<GameSnapshot<R>, GameSnapshotError> {
        if bytes.starts_with(PACKED_MAGIC) {
            GameSnapshot::from_packed(bytes)
        } else {
            GameSnapshot::from_bytes(bytes)
        }
    }

    fn decode_with(
        bytes: &[u8],
        world: impl FnOnce(&[u8]) -> Result<Snapshot, SnapshotError>,
    ) -> Result<GameSnapshot<R>, GameSnapshotError> {
        let (len, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or(GameSnapshotError::Truncated)?;
        let len = u32::from_le_bytes(*len) as usize;
        if rest.len() < len {
            return Err(GameSnapshotError::Truncated);
        }
        let (world_bytes, extra) = rest.split_at(len);
        let world = world(world_bytes)?;
        let config = CONFIG.with_limit::<MAX_GAME_EXTRA_BYTES>();
        #[allow(clippy::type_complexity)]
        let ((slots, state), used): ((Vec<SlotOf<R>>, R::State), usize) =
            bincode::serde::decode_from_slice(extra, config)?;
        if used != extra.len() {
            return Err(GameSnapshotError::Trailing(extra.len() - used));
        }
        if slots.len() > usize::from(MAX_SLOTS) {
            return Err(GameSnapshotError::Slots(slots.len()));
        }
        Ok(GameSnapshot {
            world,
            slots,
            state,
        })
    }

    /// Number of seats in the snapshot.
    pub fn slot_count(&self) -> u8 {
        self.slots.len() as u8
    }
}

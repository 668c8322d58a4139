//! The state hash: XXH3-64 (seed 0) of the canonical encoding of the world
//! state (see `canonical`), so it is defined byte for byte and the same on
//! every platform.
//!
//! The bytes are written by `direct` (record by record, without serde)
//! into a buffer kept per thread (it grows to the largest state hashed on
//! that thread and is reused) and hashed in one pass: streaming them into
//! the hasher a few bytes at a time was 40 % slower.

use super::snapshot::Snapshot;
use crate::dynamics::{World, WorldState};

impl World {
    /// XXH3-64 of the canonical encoding of the state (see
    /// `encoding::canonical`).
    pub fn state_hash(&self) -> u64 {
        hash_state(&self.state)
    }
}

impl Snapshot {
    /// The state hash of the saved state (equal to the world's at the time).
    pub fn state_hash(&self) -> u64 {
        hash_state(self.world_state())
    }
}

pub(crate) fn hash_state(state: &WorldState) -> u64 {
    HASH_BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        // Encoding plain data into a vector cannot fail.
        super::direct::encode_state(state, &mut buf).expect("state encodes");
        xxhash_rust::xxh3::xxh3_64(&buf)
    })
}

std::thread_local! {
    /// Scratch for [`hash_state`]; never state.
    static HASH_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

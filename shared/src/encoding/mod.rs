//! The encodings of the world state, in one place.
//!
//! - `canonical` — the canonical encoding: its layout, `CONFIG` and the fast
//!   encoder; it defines the state hash and a snapshot's bytes;
//! - `compact` — the fixed-capacity arrays (polygon vertices, manifold
//!   points) written as their used prefix;
//! - `records` — the state's fields in order, and each body and shape slot
//!   as one record (one field list for both directions);
//! - `direct` — the same canonical bytes written record by record without
//!   serde, for the state hash;
//! - `hash` — the state hash over the canonical bytes;
//! - `snapshot` — [`Snapshot`]: save, restore, and the bytes decoded and
//!   validated;
//! - `packed` — the columnar, delta-coded, deflated form for the wire.
//!
//! None of them changes a byte without a deliberate golden change.

pub(crate) mod canonical;
pub(crate) mod compact;
mod direct;
mod hash;
pub(crate) mod packed;
mod records;
mod snapshot;

pub use packed::PackError;
pub use snapshot::{Snapshot, SnapshotError, MAX_SNAPSHOT_BYTES};

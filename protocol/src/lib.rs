//! bitroom wire protocol and sans-IO netcode state machines.
//!
//! This crate is deliberately thin for now: the messages, codec and the
//! `ServerRoom` / `ClientSession` state machines arrive with the netcode
//! issue. It already pins the protocol version so the other crates can
//! depend on it.

/// Version of the wire protocol; bumped on any incompatible message change.
pub const PROTOCOL_VERSION: u32 = 0;

/// The simulation crate this protocol carries, re-exported for convenience.
pub use bitroom_sim as sim;

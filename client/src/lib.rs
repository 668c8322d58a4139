//! bitroom client library.
//!
//! The QUIC client, bots and link conditioner arrive with the networking
//! issue; today the crate only re-exports the simulation and protocol so that
//! a client can already step a world locally.

pub use bitroom_protocol as protocol;
pub use bitroom_sim as sim;

//! bitroom-tests: end-to-end tests across the crates, and the harnesses
//! they share.
//!
//! # Layout
//! - [`netsim`]: a simulated network (virtual clock, latency, jitter,
//!   loss, duplication, reordering, bandwidth) around one sans-IO
//!   `ServerRoom` and any number of `ClientSession`s;
//! - [`loopback`]: a real server on `127.0.0.1:0` and a raw QUIC client
//!   that can misbehave;
//! - [`agones_sdk`] (feature `agones`): a fake Agones SDK sidecar (gRPC)
//!   that records what a server tells it;
//! - `tests/netcode.rs`: netcode under loss and delay on the simulated
//!   network; `tests/quic.rs`: the server and client libraries over real
//!   QUIC (refusals, reconnects, shutdown, recording).

#[cfg(feature = "agones")]
pub mod agones_sdk;
pub mod loopback;
pub mod netsim;

//! bitroom-tests: end-to-end tests across the crates, and the harnesses
//! they share.
//!
//! # Layout
//! - [`netsim`]: a simulated network (virtual clock, latency, jitter,
//!   loss, duplication, reordering, bandwidth) around one sans-IO
//!   `ServerRoom` and any number of `ClientSession`s;
//! - [`loopback`]: a real server on `127.0.0.1:0` and a raw QUIC client
//!   that can misbehave;
//! - [`raw`]: a hostile low-level client (raw frames, partial messages,
//!   early datagrams, many streams and connections) and the server's
//!   resident memory, for the attack tests;
//! - [`witness`]: what the attack and admission tests share: the honest
//!   player in the attacked room, the memory bound, test tokens;
//! - [`agones_sdk`] (feature `agones`): a fake Agones SDK sidecar (gRPC)
//!   that records what a server tells it;
//! - `tests/netcode.rs`: netcode under loss and delay on the simulated
//!   network; `tests/quic.rs`: the server and client libraries over real
//!   QUIC (refusals, reconnects, shutdown, recording); `tests/attacks.rs`:
//!   a hostile client against every bound of `docs/limits.md`;
//!   `tests/admission.rs`: connect tokens and seats over real QUIC.

#[cfg(feature = "agones")]
pub mod agones_sdk;
pub mod loopback;
pub mod netsim;
pub mod raw;
pub mod witness;

//! bitroom-examples: the code the runnable examples share.
//!
//! The examples themselves are next to this folder, one file each, each
//! run with one command (see `examples/README.md`):
//!
//! - `sim.rs`: the simulation alone (`cargo run -p bitroom-examples --example sim`);
//! - `football.rs`: a custom game served to bots over QUIC
//!   (`cargo run -p bitroom-examples --example football`);
//! - `verify_replay.rs`: recording a game and verifying the recording
//!   (`cargo run -p bitroom-examples --example verify_replay`).
//!
//! # Layout
//! - [`football`]: a complete small game on bitroom: its rules, its input,
//!   its bots, and a match played through the real server and client.

pub mod football;

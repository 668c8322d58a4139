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
//! A whole match through the real server and client libraries, as
//! `tests/football.rs` plays it:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::time::Duration;
//! let report = bitroom_examples::football::play_match(4, Duration::from_secs(10), 1).await?;
//! println!("{report:?}");
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`football`]: a complete small game on bitroom: its rules, its input,
//!   its bots, and a match played through the real server and client.

pub mod football;

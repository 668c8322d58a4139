//! bitroom client library: join a room over QUIC, send inputs, read the
//! predicted and confirmed world.
//!
//! [`connect`] opens a QUIC connection (quinn), runs the sans-IO
//! [`ClientSession`](bitroom_protocol::ClientSession) on a tokio task —
//! timers, datagrams, the reliable stream — and returns a [`ClientHandle`]
//! once the server has welcomed us. The handle sets inputs, lends the
//! present (predicted) game or the confirmed state, hands out [`Event`]s
//! (synced, rollback, desync, disconnected) and reports [`HandleStats`].
//!
//! ```no_run
//! use bitroom_client::{connect, ConnectOptions, Event};
//! use bitroom_client::quic::CertPin;
//! use bitroom_client::sim::game::{sandbox::Sandbox, PlayerInput};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // The fingerprint the server printed when it started.
//! let pin = bitroom_client::quic::parse_fingerprint(
//!     "3f1c0d4e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f",
//! )?;
//! let options = ConnectOptions::new(Sandbox::default(), CertPin::Sha256(pin));
//! let mut client = connect("127.0.0.1:4433".parse()?, "lobby", options).await?;
//! println!("playing slot {:?}", client.slot());
//! client.set_input(PlayerInput { move_x: 127, ..PlayerInput::default() });
//! while let Some(event) = client.next_event().await {
//!     match event {
//!         Event::Synced { tick } => println!("in sync at tick {tick}"),
//!         Event::Rollback { depth } => println!("rolled back {depth} ticks"),
//!         Event::Disconnected(why) => { println!("gone: {why}"); break }
//!         _ => {}
//!     }
//!     let bodies = client.with_game(|g| g.map(|g| g.world().body_count()));
//!     println!("{bodies:?} bodies, rtt {:?}", client.stats().rtt());
//! }
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`quic`]: ALPN, transport settings, certificate pinning.
//! - [`keys`]: connect-token key files, nonces and minting from a key
//!   file (the IO shell of [`bitroom_protocol::token`]).
//! - [`conditioner`]: a userspace link conditioner under quinn's socket.
//! - [`bots`]: headless bot players (the `bitroom-client bots` command).
//! - [`load`]: load clients: a player's traffic without its simulation.
//! - [`scene`]: the rules for a scene name or file (matches the server).

pub mod bots;
pub mod conditioner;
mod connection;
pub mod keys;
pub mod load;
pub mod quic;
pub mod scene;

pub use bitroom_protocol as protocol;
pub use bitroom_sim as sim;
pub use connection::{
    connect, disconnect_reason, ClientHandle, ConnectError, ConnectOptions, Disconnect, Event,
    HandleStats, InputFn,
};

/// Rules whose games can move between tokio tasks: what the client and
/// server shells need (every `Rules` of plain data qualifies). The same
/// bound as the sans-IO room's [`RoomRules`](bitroom_protocol::RoomRules).
pub use bitroom_protocol::RoomRules as NetRules;

//! bitroom-client: join a room of any game over QUIC, send inputs, read
//! the predicted and confirmed world.
//!
//! [`connect`] opens a QUIC connection (quinn, the server's certificate
//! pinned: [`bitroom_transport::CertPin`]), runs the sans-IO
//! [`ClientSession`](bitroom_protocol::ClientSession) on a tokio task —
//! timers, datagrams, the reliable stream — and returns a [`ClientHandle`]
//! once the server has welcomed us. The handle sets inputs, lends the
//! present (predicted) game or the confirmed state, hands out [`Event`]s
//! (synced, rollback, desync, disconnected) and reports [`HandleStats`].
//!
//! The game is the rules you connect with: any
//! [`Rules`](bitroom_sim::game::Rules) (with [`NetRules`]' thread-safety),
//! the same rules the server hosts — their fingerprint is checked in the
//! hello, and a mismatch is refused with
//! [`KickReason::RulesMismatch`](bitroom_protocol::KickReason::RulesMismatch).
//! `examples/football.rs` in the repository plays a complete custom game.
//!
//! ```no_run
//! use bitroom_client::{connect, ConnectOptions, Event};
//! use bitroom_protocol::NetRules;
//! use bitroom_transport::{parse_fingerprint, CertPin};
//!
//! /// Joins `room` playing `rules`, holds `input`, and reports until the
//! /// session ends.
//! async fn play<R: NetRules>(rules: R, input: R::Input) -> Result<(), Box<dyn std::error::Error>> {
//!     // The fingerprint the server printed when it started.
//!     let pin = CertPin::Sha256(parse_fingerprint(
//!         "3f1c0d4e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f",
//!     )?);
//!     let options = ConnectOptions::new(rules, pin);
//!     let mut client = connect("127.0.0.1:4433".parse()?, "lobby", options).await?;
//!     println!("playing slot {:?}", client.slot());
//!     client.set_input(input);
//!     while let Some(event) = client.next_event().await {
//!         match event {
//!             Event::Synced { tick } => println!("in sync at tick {tick}"),
//!             Event::Rollback { depth } => println!("rolled back {depth} ticks"),
//!             Event::Disconnected(why) => { println!("gone: {why}"); break }
//!             _ => {}
//!         }
//!         let bodies = client.with_game(|g| g.map(|g| g.world().body_count()));
//!         println!("{bodies:?} bodies, rtt {:?}", client.stats().rtt());
//!     }
//!     Ok(())
//! }
//!
//! // The sandbox game, say: its rules and one of its inputs.
//! use bitroom_client::sim::game::sandbox::{PlayerInput, Sandbox};
//! # async fn sandbox() -> Result<(), Box<dyn std::error::Error>> {
//! play(Sandbox::default(), PlayerInput { move_x: 127, ..PlayerInput::default() }).await?;
//! # Ok(()) }
//! ```
//!
//! Bots play through the same path: [`ConnectOptions::input`] chooses the
//! input every tick, and [`bots::BotFleet`] runs many of a game's bots
//! ([`BotRules`](bitroom_sim::game::bots::BotRules)).
//!
//! # Layout
//! - `connect.rs`: [`connect`], [`ConnectOptions`];
//! - `handle.rs`: [`ClientHandle`];
//! - `driver.rs`: the session's task (the stream, datagrams, timers);
//! - `events.rs`: [`Event`], [`Disconnect`], [`ConnectError`],
//!   [`HandleStats`];
//! - [`bots`]: a fleet of a game's headless bots, with their report;
//! - [`load`]: load clients: a player's traffic without its simulation;
//! - [`conditioner`]: a userspace link conditioner under quinn's socket.
//! - [`link_model`]: the link model behind the conditioner (and the
//!   simulated network in the tests).

pub mod bots;
pub mod conditioner;
mod connect;
mod driver;
mod events;
mod handle;
pub mod link_model;
pub mod load;

pub use bitroom_protocol as protocol;
pub use bitroom_protocol::NetRules;
pub use bitroom_sim as sim;
pub use connect::{connect, ConnectOptions};
pub use driver::{disconnect_reason, InputFn};
pub use events::{ConnectError, Disconnect, Event, HandleStats};
pub use handle::ClientHandle;

//! bitroom-server: host rooms of any game over QUIC.
//!
//! A server runs one [`ServerRoom`](bitroom_protocol::ServerRoom) per room
//! on its own task, ticking on a drift-free schedule, and moves the rooms'
//! bytes between them and their QUIC connections. The game is the type
//! parameter: every room plays the [`ServerConfig::rules`] it was given
//! (any [`Rules`](bitroom_sim::game::Rules) whose parts can cross threads:
//! [`NetRules`](bitroom_protocol::NetRules)), and clients must join with
//! the same rules (their fingerprint is checked in the hello).
//!
//! Hosting a game is [`Server::bind`] and [`Server::run`]; a
//! [`ShutdownHandle`] stops it.
//!
//! ```no_run
//! use bitroom_server::tls::Identity;
//! use bitroom_server::{Server, ServerConfig};
//! use bitroom_sim::game::sandbox::Sandbox;
//!
//! # async fn host() -> Result<(), Box<dyn std::error::Error>> {
//! // Any `Rules` type works here: your own game's rules.
//! let rules = Sandbox::default();
//! let identity = Identity::self_signed()?; // or Identity::load(cert, key)
//! let config = ServerConfig::new("0.0.0.0:4433".parse()?, rules, identity);
//! let server = Server::bind(config)?;
//! println!(
//!     "listening on {}, clients pin {}",
//!     server.local_addr(),
//!     bitroom_transport::fingerprint_hex(&server.fingerprint())
//! );
//! let stop = server.shutdown_handle();
//! let serving = tokio::spawn(server.run());
//! // ... later: kick everyone and close.
//! stop.shutdown();
//! serving.await?;
//! # Ok(()) }
//! ```
//!
//! # Layout
//! Tasks and files, each depending only on those below it:
//! - [`Server`] (`server.rs`): the endpoint, the accept loop, shutdown;
//! - `connection.rs`: one connection: QUIC handshake, hello, routing to its
//!   room (created on first join), forwarding its messages;
//! - `room_task.rs`: one room on its task: drift-free ticks,
//!   commands in, outputs out, panics contained (`ticker.rs`: the precise
//!   timer that wakes the rooms);
//! - `recording.rs`: a room's replay file and desync reports, on a thread
//!   of their own (`desync_report.rs`: the report files);
//! - `writer.rs`: one connection's writer task (reliable messages,
//!   snapshot packing, closing with a reason);
//! - `context.rs` and `registry.rs`: what every task shares (settings,
//!   measurements, shutdown, load shedding) and the rooms by name;
//! - [`config`]: [`ServerConfig`], [`RecordConfig`], [`ServeError`];
//! - [`monitor`]: tick time and lateness histograms, counters, metric
//!   names; [`metrics_http`]: Prometheus text over HTTP;
//! - [`tls`]: the server's certificate (files or a development
//!   certificate); [`udp`]: the socket and its kernel drop count;
//!   [`realtime`]: real-time scheduling.

mod admission;
#[cfg(feature = "agones")]
mod agones;
mod capacity;
pub mod config;
mod connection;
mod context;
mod desync_report;
mod limits;
mod link;
mod liveness;
pub mod metrics_http;
pub mod monitor;
mod quota;
pub mod realtime;
mod recording;
mod registry;
mod room_task;
mod server;
mod ticker;
pub mod tls;
pub mod udp;
pub mod web;
mod writer;

pub use capacity::process_cpu;
pub use config::{
    AgonesConfig, Limits, RecordConfig, ServeError, ServerConfig, TokenConfig,
    DEFAULT_RECORD_QUOTA, SHED_FOR,
};
pub use connection::MAX_HELLO;
pub use desync_report::{desync_report_json, write_desync_report, DesyncContext};
pub use recording::{safe_file_stem, REPLAY_EXTENSION};
pub use server::{Server, ShutdownHandle};
pub use web::{TokenMint, WebConfig};

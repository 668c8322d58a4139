//! bitroom-server: the authoritative server and its tools.
//!
//! # Layout
//! - [`serve`]: the QUIC endpoint, routing connections to rooms, shutdown.
//! - `room_task.rs`: each room on its own task, drift-free ticks, panics
//!   contained; `ticker.rs`: the precise timer that wakes them.
//! - [`monitor`]: tick time and lateness histograms, counters, metrics names.
//! - [`metrics_http`]: Prometheus text over HTTP (`--metrics`).
//! - [`tls`]: certificates (files or a generated development certificate).
//! - [`serve_cmd`], [`demo`], [`sim_cmd`], [`replay_cmd`], [`keygen_cmd`],
//!   [`token_cmd`]: the commands.

pub mod demo;
pub mod keygen_cmd;
pub mod metrics_http;
pub mod monitor;
pub mod realtime;
mod render;
pub mod replay_cmd;
mod room_task;
pub mod serve;
pub mod serve_cmd;
pub mod sim_cmd;
mod ticker;
pub mod tls;
pub mod token_cmd;
pub mod udp;

pub use serve::{Server, ServerConfig};

//! bitroom-protocol: wire messages, their codec, and the sans-IO netcode
//! state machines — [`ServerRoom`] (authoritative) and [`ClientSession`]
//! (prediction, rollback, clock sync) — and the replay format with its
//! recorder and re-simulation tools ([`replay`]), and signed connect
//! tokens ([`token`]: who may join which room).
//!
//! Everything is generic over the game: any [`Rules`], whose own input
//! type the per-tick
//! messages, the input timeline and the replay records carry
//! ([`NetRules`] adds what the IO shells need: the game can cross
//! threads).
//!
//! Nothing here reads a clock, opens a socket or draws OS randomness: time
//! comes in as [`Micros`] arguments, randomness from seeds. The server and
//! client crates wrap these machines with tokio + quinn; the tests wrap them
//! with a simulated network. Replays are read from any `Read` and written to
//! any `Write`; nothing here touches the file system.
//!
//! A room and a client, with the bytes moved by hand (a shell moves them
//! over QUIC):
//!
//! ```
//! use bitroom_protocol::{
//!     ClientConfig, ClientSession, ClientTransmit, Output, RoomConfig, ServerRoom,
//! };
//! use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig};
//!
//! let rules = Sandbox::new(SandboxConfig { loose_bodies: 10 });
//! let mut room = ServerRoom::new(rules.clone(), RoomConfig::default(), 0);
//! let mut client = ClientSession::new(rules, ClientConfig::default(), 0);
//! room.handle_connect(0, 1); // connection 1
//! let mut now = 0;
//! for _ in 0..30 {
//!     while let Some(t) = client.poll_transmit() {
//!         match t {
//!             ClientTransmit::Reliable(b) => room.handle_reliable(now, 1, &b),
//!             ClientTransmit::Datagram(b) => room.handle_datagram(now, 1, &b),
//!         }
//!     }
//!     while let Some(out) = room.poll_output() {
//!         match out {
//!             Output::Reliable { bytes, .. } => client.handle_reliable(now, &bytes),
//!             Output::Datagram { bytes, .. } => client.handle_datagram(now, &bytes),
//!             Output::Snapshot { job, .. } => {
//!                 for m in job.messages() {
//!                     client.handle_reliable(now, m);
//!                 }
//!             }
//!             Output::Close { reason, .. } => panic!("closed: {reason}"),
//!         }
//!     }
//!     now += 16_667;
//!     room.tick(now);
//!     client.handle_timeout(now);
//! }
//! assert!(client.is_playing());
//! assert!(client.stats().verified > 0, "confirmed ticks checked against the room's hashes");
//! ```
//!
//! # Layout
//! - [`messages`]: the wire messages, their codec, their size limits and
//!   [`PROTOCOL_VERSION`];
//! - [`room`]: [`ServerRoom`] (split by concern: seats, inputs, frames,
//!   snapshots);
//! - [`session`]: the client, [`ClientSession`];
//! - [`token`]: signed connect tokens (layout, minting, pure
//!   verification, replay protection with [`token::NonceCache`]);
//! - [`wire`]: serde helpers for the datagram encoding;
//! - [`replay`]: the replay format, [`replay::Recorder`], re-simulation and
//!   state diffs;
//! - this file: [`NetRules`], [`Micros`], [`widen_tick`].

pub mod messages;
pub mod replay;
pub mod room;
pub mod session;
pub mod token;
pub mod wire;

pub use messages::*;
pub use room::{
    ConnId, Grant, Output, Rejection, RoomConfig, RoomEvent, RoomStats, ServerRoom, SnapshotJob,
    BASE_CLIENT_MESSAGE, MAX_REPORTS, REPORT_MARGIN, REPORT_PERIOD, REPORT_WINDOW,
};
pub use session::{ClientConfig, ClientEvent, ClientSession, ClientStats, ClientTransmit};

use bitroom_sim::game::Rules;

/// Time in microseconds since an origin the IO shell picks.
pub type Micros = u64;

/// Rules a [`ServerRoom`] and the IO shells can host: snapshots are
/// packed by the shell, possibly on another thread ([`SnapshotJob`]), and
/// games move between tokio tasks, so the rules and their state must be
/// `Send + Sync`. Every `Rules` of plain data is.
pub trait NetRules: Rules<Player: Send + Sync, State: Send + Sync> + Send + Sync + 'static {}

impl<R> NetRules for R where
    R: Rules<Player: Send + Sync, State: Send + Sync> + Send + Sync + 'static
{
}

/// The tick whose low 32 bits are `wire` nearest to `near` (ticks travel as
/// `u32`; a room would need 2.2 years at 60 Hz to wrap).
pub fn widen_tick(wire: u32, near: u64) -> u64 {
    let base = near & !0xFFFF_FFFF;
    let candidates = [
        base.wrapping_sub(1 << 32) | u64::from(wire),
        base | u64::from(wire),
        base.wrapping_add(1 << 32) | u64::from(wire),
    ];
    candidates
        .into_iter()
        .min_by_key(|&c| c.abs_diff(near))
        .unwrap_or(u64::from(wire))
}

/// The tick whose low 16 bits are `wire` nearest to `near`: datagrams
/// carry ticks as 2 bytes, and every tick they name is within a few
/// seconds of the receiver's (9 minutes at 60 Hz would wrap).
pub fn widen_tick16(wire: u16, near: u64) -> u64 {
    let base = near & !0xFFFF;
    let candidates = [
        base.wrapping_sub(1 << 16) | u64::from(wire),
        base | u64::from(wire),
        base.wrapping_add(1 << 16) | u64::from(wire),
    ];
    candidates
        .into_iter()
        .min_by_key(|&c| c.abs_diff(near))
        .unwrap_or(u64::from(wire))
}

#[cfg(test)]
mod tests {
    use super::{widen_tick, widen_tick16};

    #[test]
    fn sixteen_bit_ticks_widen_to_the_nearest() {
        assert_eq!(widen_tick16(5, 3), 5);
        assert_eq!(widen_tick16(10, 65_536 + 5), 65_536 + 10);
        assert_eq!(widen_tick16(65_535, 65_536 + 5), 65_535);
        assert_eq!(widen_tick16(3, 65_534), 65_536 + 3);
        assert_eq!(widen_tick16(0, 0), 0);
    }

    #[test]
    fn ticks_widen_to_the_nearest() {
        assert_eq!(widen_tick(5, 3), 5);
        assert_eq!(widen_tick(0, 0), 0);
        assert_eq!(widen_tick(10, (1 << 32) + 5), (1 << 32) + 10);
        assert_eq!(widen_tick(u32::MAX, (1 << 32) + 5), (1 << 32) - 1);
        assert_eq!(widen_tick(3, (1 << 32) - 2), (1 << 32) + 3);
    }
}

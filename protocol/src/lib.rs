//! bitroom-protocol: wire messages, their codec, and the sans-IO netcode
//! state machines — [`ServerRoom`] (authoritative) and [`ClientSession`]
//! (prediction, rollback, clock sync) — and the replay format with its
//! recorder and re-simulation tools ([`replay`]), and signed connect
//! tokens ([`token`]: who may join which room).
//!
//! Nothing here reads a clock, opens a socket or draws OS randomness: time
//! comes in as [`Micros`] arguments, randomness from seeds. The server and
//! client crates wrap these machines with tokio + quinn; the tests wrap them
//! with a simulated network. Replays are read from any `Read` and written to
//! any `Write`; the one function that touches the file system is
//! [`replay::write_desync_report`].

pub mod messages;
pub mod replay;
pub mod room;
pub mod session;
pub mod token;

pub use messages::*;
pub use room::{
    ConnId, Output, Rejection, RoomConfig, RoomEvent, RoomRules, RoomStats, ServerRoom, SnapshotJob,
};
pub use session::{ClientConfig, ClientEvent, ClientSession, ClientStats, ClientTransmit};

/// Time in microseconds since an origin the IO shell picks.
pub type Micros = u64;

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

#[cfg(test)]
mod tests {
    use super::widen_tick;

    #[test]
    fn ticks_widen_to_the_nearest() {
        assert_eq!(widen_tick(5, 3), 5);
        assert_eq!(widen_tick(0, 0), 0);
        assert_eq!(widen_tick(10, (1 << 32) + 5), (1 << 32) + 10);
        assert_eq!(widen_tick(u32::MAX, (1 << 32) + 5), (1 << 32) - 1);
        assert_eq!(widen_tick(3, (1 << 32) - 2), (1 << 32) + 3);
    }
}

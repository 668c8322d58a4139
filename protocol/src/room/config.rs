//! The settings of a room.

use crate::Micros;

/// Room settings.
#[derive(Clone, Debug)]
pub struct RoomConfig {
    /// Player seats (at most 32).
    pub max_players: u8,
    /// Most spectators.
    pub max_spectators: u32,
    /// Ticks per second.
    pub tick_rate: u32,
    /// Frame bundles per second to each client (at most `tick_rate`; each
    /// carries `tick_rate / send_rate` new ticks). Lower trades a little
    /// latency (up to a bundle interval) for bytes: every datagram costs
    /// about 50 bytes of IP, UDP and QUIC headers.
    pub send_rate: u32,
    /// Time to say hello after connecting.
    pub handshake_timeout: Micros,
    /// How long a dropped player's slot is kept for a reconnect.
    pub reconnect_grace: Micros,
    /// Inputs further ahead than this many ticks are refused.
    pub max_input_ahead: u32,
    /// Ticks of frames kept for resending; a client further behind resyncs.
    pub history: u32,
    /// Key of the generator of reconnect secrets
    /// ([`ReconnectSecret`](crate::ReconnectSecret)). A server fills it
    /// from the operating system's randomness for every room; a fixed
    /// seed (the default, for simulations and tests) makes the secrets
    /// predictable.
    pub secret_seed: [u8; 32],
    /// Every hello must come with a verified connect token
    /// ([`ServerRoom::handle_hello`](crate::ServerRoom::handle_hello) with
    /// a [`Grant`](crate::room::Grant)); a hello without one is refused
    /// with [`TokenError::Missing`](crate::token::TokenError::Missing).
    pub tokens_required: bool,
}

impl RoomConfig {
    /// Ticks between two bundles to a client.
    pub fn ticks_per_send(&self) -> u64 {
        u64::from((self.tick_rate / self.send_rate.max(1)).max(1))
    }
}

impl Default for RoomConfig {
    fn default() -> RoomConfig {
        RoomConfig {
            max_players: 8,
            max_spectators: 16,
            tick_rate: 60,
            send_rate: 60,
            handshake_timeout: 5_000_000,
            reconnect_grace: 10_000_000,
            max_input_ahead: 120,
            history: 240,
            secret_seed: [0x5e; 32],
            tokens_required: false,
        }
    }
}

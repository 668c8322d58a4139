//! What a room hands its shell: bytes to move ([`Output`]), things to log
//! or record ([`RoomEvent`]), and counters ([`RoomStats`]).

use super::{ConnId, SnapshotJob};
use crate::messages::{DesyncReport, KickReason};

/// Bytes for the shell to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A message for the connection's reliable stream (unframed; frame it
    /// with [`StreamFramer::frame`](crate::StreamFramer::frame)).
    Reliable {
        /// Destination.
        conn: ConnId,
        /// The encoded message.
        bytes: Vec<u8>,
    },
    /// An unreliable datagram.
    Datagram {
        /// Destination.
        conn: ConnId,
        /// The encoded message.
        bytes: Vec<u8>,
    },
    /// A join or resync snapshot for the connection's reliable stream: send
    /// [`SnapshotJob::messages`] in order, at this point of the stream.
    ///
    /// Packing a state takes about 0.5 ms for the 200-body arena and 2.5 ms
    /// per 1000 bodies of a pile, so the room does not do it on its tick:
    /// the shell calls `messages` where it likes (the server, off the
    /// room's thread). Joins and resyncs at one tick share one job, which
    /// packs once.
    Snapshot {
        /// Destination.
        conn: ConnId,
        /// The state and, once packed, its messages.
        job: SnapshotJob,
    },
    /// Close the connection after sending what is queued for it.
    Close {
        /// The connection.
        conn: ConnId,
        /// Why (already sent as a kick message).
        reason: KickReason,
    },
}

/// Something the shell may want to log, record or count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoomEvent {
    /// A client was accepted.
    Joined {
        /// Its connection.
        conn: ConnId,
        /// Its slot (`None`: spectator).
        slot: Option<u8>,
        /// Its name.
        name: String,
        /// Whether it reclaimed a slot.
        reconnect: bool,
    },
    /// A client is gone.
    Left {
        /// Its connection.
        conn: ConnId,
        /// Its slot.
        slot: Option<u8>,
        /// Why.
        reason: KickReason,
    },
    /// A client reported a desync (it is being resynced). At most one per
    /// client per [`REPORT_WINDOW`](super::REPORT_WINDOW); further reports
    /// are resynced and counted only.
    Desync {
        /// Its connection.
        conn: ConnId,
        /// Its slot.
        slot: Option<u8>,
        /// The report, with the client's state.
        report: DesyncReport,
    },
    /// A hello was refused (the connection is closed with the reason).
    Refused {
        /// Its connection.
        conn: ConnId,
        /// Why.
        reason: KickReason,
    },
    /// A message was refused.
    Rejected {
        /// From.
        conn: ConnId,
        /// What was wrong.
        what: Rejection,
    },
}

/// Kinds of refused input, counted in [`RoomStats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Bytes that do not decode.
    Malformed,
    /// Inputs for a slot the connection does not own (or from a spectator).
    WrongSlot,
    /// Inputs too far in the future.
    TooFarAhead,
    /// Over the datagram rate limit.
    RateLimited,
    /// A message not allowed in the connection's state.
    Unexpected,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoomStats {
    /// Ticks stepped.
    pub ticks: u64,
    /// Connected players.
    pub players: u32,
    /// Connected spectators.
    pub spectators: u32,
    /// Inputs that arrived after their tick was simulated.
    pub late_inputs: u64,
    /// Ticks at which a connected player's input was missing (repeated).
    pub missing_inputs: u64,
    /// Datagrams that did not decode.
    pub malformed: u64,
    /// Input batches for another slot.
    pub wrong_slot: u64,
    /// Input batches too far ahead.
    pub too_far_ahead: u64,
    /// Datagrams over the rate limit.
    pub rate_limited: u64,
    /// Messages not allowed in the connection's state.
    pub unexpected: u64,
    /// Desync reports received (and answered with a resync).
    pub desyncs: u64,
    /// Datagrams that came before their connection's hello (dropped).
    pub early_datagrams: u64,
    /// Frames resent.
    pub resent_frames: u64,
    /// Snapshots sent (joins and resyncs).
    pub snapshots: u64,
    /// Distinct snapshot states taken ([`SnapshotJob`]s): joins and
    /// resyncs at the same tick share one, which is packed once.
    pub snapshots_packed: u64,
    /// Bytes received (datagrams and reliable messages).
    pub bytes_in: u64,
    /// Bytes queued for sending, not counting snapshot bodies, which the
    /// shell packs ([`Output::Snapshot`]).
    pub bytes_out: u64,
    /// Rollbacks the clients reported (sum over clients).
    pub rollbacks_reported: u64,
    /// Deepest rollback a client reported (ticks).
    pub max_rollback_reported: u32,
}

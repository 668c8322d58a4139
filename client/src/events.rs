//! What a session reports: its [`Event`]s, why it ended
//! ([`Disconnect`]), why it could not start ([`ConnectError`]), and its
//! counters ([`HandleStats`]).

use bitroom_protocol::{ClientStats, KickReason};
use bitroom_transport::TlsError;
use std::fmt;
use std::time::Duration;

/// Why [`connect`](crate::connect) failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// No local socket.
    #[error("cannot open a local socket: {0}")]
    Socket(#[from] std::io::Error),
    /// TLS settings.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// quinn refused to start the connection.
    #[error("cannot connect: {0}")]
    Start(#[from] quinn::ConnectError),
    /// The QUIC handshake or connection failed (unreachable, certificate
    /// not the pinned one, closed).
    #[error("connection failed: {0}")]
    Connection(#[from] quinn::ConnectionError),
    /// No welcome in time.
    #[error("no answer from the server within {0:?}")]
    Timeout(Duration),
    /// The server refused us.
    #[error("refused by the server: {0}")]
    Refused(KickReason),
    /// The connection ended before a welcome.
    #[error("disconnected before the welcome: {0}")]
    Disconnected(Disconnect),
}

/// Why a session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disconnect {
    /// The server closed it, saying why (including our own leave).
    Kicked(KickReason),
    /// The connection failed or was closed without a reason.
    Lost(String),
    /// We closed it ([`ClientHandle::close`](crate::ClientHandle::close)).
    Closed,
}

impl fmt::Display for Disconnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disconnect::Kicked(r) => write!(f, "{r}"),
            Disconnect::Lost(e) => write!(f, "connection lost: {e}"),
            Disconnect::Closed => f.write_str("closed by us"),
        }
    }
}

/// What happened in the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A snapshot was applied (join or resync): the game is there.
    Synced {
        /// Its tick.
        tick: u64,
    },
    /// A misprediction was corrected by re-simulating `depth` ticks.
    Rollback {
        /// Ticks re-simulated.
        depth: u64,
    },
    /// Our state hash differed from the server's (a resync follows).
    Desync {
        /// The tick.
        tick: u64,
        /// Our hash.
        ours: u64,
        /// The server's.
        server: u64,
    },
    /// The session is over.
    Disconnected(Disconnect),
}

/// Session counters plus the transport's view.
#[derive(Clone, Copy, Debug)]
pub struct HandleStats {
    /// The session's counters (payload bytes, rollbacks, desyncs, ticks).
    pub session: ClientStats,
    /// QUIC's smoothed RTT estimate.
    pub path_rtt: Duration,
    /// UDP bytes sent (everything on the wire).
    pub udp_tx: u64,
    /// UDP bytes received.
    pub udp_rx: u64,
    /// Events dropped because nobody read them.
    pub dropped_events: u64,
    /// QUIC's own counters: congestion window, packets lost, congestion
    /// events, frames, UDP datagrams.
    pub quic: quinn::ConnectionStats,
}

impl HandleStats {
    /// The session's RTT (ping / welcome based), or QUIC's before the
    /// first sample.
    pub fn rtt(&self) -> Duration {
        if self.session.rtt > 0 {
            Duration::from_micros(self.session.rtt)
        } else {
            self.path_rtt
        }
    }
}

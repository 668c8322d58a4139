//! What a server is told: [`ServerConfig`] (address, rules, room settings,
//! limits, certificate, recording), and why it may fail to start.

use crate::tls::Identity;
use bitroom_protocol::RoomConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig<R> {
    /// UDP address to listen on.
    pub bind: SocketAddr,
    /// The rules (and scene) every room plays.
    pub rules: R,
    /// Settings of each room (tick rate, players, timeouts).
    pub room: RoomConfig,
    /// Most rooms at once.
    pub max_rooms: usize,
    /// Most QUIC connections at once.
    pub max_connections: usize,
    /// Time from the first packet to a hello.
    pub hello_timeout: Duration,
    /// An empty room closes after this long.
    pub room_idle: Duration,
    /// Certificate and key.
    pub identity: Identity,
    /// Record every room (and write desync reports) here.
    pub record: Option<RecordConfig>,
    /// Load shedding: when a room starts a tick this late, new joins are
    /// refused with [`KickReason::Overloaded`](bitroom_protocol::KickReason::Overloaded) for [`SHED_FOR`], so the
    /// rooms already running catch up instead of falling further behind.
    /// `None`: never refuse.
    pub shed_lateness: Option<Duration>,
    /// UDP receive and send buffer asked of the kernel (bytes; 0 keeps the
    /// kernel's default). See [`crate::udp::SOCKET_BUFFER_BYTES`].
    pub udp_buffer: usize,
}

/// How long joins stay refused after a room ran [`ServerConfig::shed_lateness`] late.
pub const SHED_FOR: Duration = Duration::from_secs(2);

/// Where and how rooms are recorded (`serve --record DIR`).
#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// Directory for replay files (`<room>-<unix time>.brr`) and desync reports.
    pub dir: PathBuf,
    /// Name of the game written into the replay header
    /// ([`Header::rules`](bitroom_protocol::replay::Header::rules)); tools
    /// choose the rules to re-simulate with by it.
    pub rules: String,
    /// Scene name written into the replay header.
    pub scene: String,
    /// Ticks between keyframes.
    pub keyframe_interval: u32,
}

impl<R> ServerConfig<R> {
    /// Defaults: 8 players per room, 60 Hz, 64 rooms, 5 s hello timeout,
    /// no recording.
    pub fn new(bind: SocketAddr, rules: R, identity: Identity) -> ServerConfig<R> {
        ServerConfig {
            bind,
            rules,
            room: RoomConfig::default(),
            max_rooms: 64,
            max_connections: 4096,
            hello_timeout: Duration::from_secs(5),
            room_idle: Duration::from_secs(30),
            identity,
            record: None,
            shed_lateness: Some(Duration::from_millis(100)),
            udp_buffer: crate::udp::SOCKET_BUFFER_BYTES,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The UDP socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Bad certificate or key.
    #[error(transparent)]
    Tls(#[from] bitroom_transport::TlsError),
    /// The tick timer thread could not be started.
    #[error("cannot start the tick timer thread: {0}")]
    Ticker(std::io::Error),
}

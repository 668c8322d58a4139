//! What a server is told: [`ServerConfig`] (address, rules, room settings,
//! admission, limits, certificate, recording), and why it may fail to
//! start.

use crate::tls::Identity;
use crate::web::WebConfig;
use bitroom_protocol::token::{NonceCache, VerifyingKey};
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
    /// Measured capacity (`serve --cpu-budget PERCENT`): the rooms may use
    /// this share (percent) of the runtime's worker threads, and joins
    /// that would create a room past what fits at the measured cost of a
    /// room are refused (see [`crate::capacity`]). `None`: `max_rooms`
    /// only.
    pub cpu_budget: Option<u32>,
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
    /// Serve browsers too: the page, its API, WebTransport and WebSocket
    /// (see [`crate::web`]).
    pub web: Option<WebConfig>,
    /// Connect tokens every hello must carry; `None`: an open server
    /// (development), which says so in a warning at start.
    pub tokens: Option<TokenConfig>,
    /// What one peer may cost (`docs/limits.md`).
    pub limits: Limits,
    /// Report to the Agones SDK sidecar (`serve --agones`); `None`: not
    /// on Agones. Needs the `agones` feature ([`ServeError::NoAgones`]).
    pub agones: Option<AgonesConfig>,
}

/// Who may join: the public keys that sign connect tokens, and this
/// server's id (`serve --token-key PUBFILE --server-id ID`).
#[derive(Debug, Clone)]
pub struct TokenConfig {
    /// Trusted keys (several during a key rotation); a token must be
    /// signed by one of them.
    pub keys: Vec<VerifyingKey>,
    /// The server id tokens must name (empty: a server without an id).
    pub server_id: String,
    /// Most token nonces remembered at once (replay protection; see
    /// [`NonceCache`]).
    pub nonce_capacity: usize,
}

impl TokenConfig {
    /// Tokens signed by `keys` for the server `server_id`, with the
    /// default nonce capacity.
    pub fn new(keys: Vec<VerifyingKey>, server_id: &str) -> TokenConfig {
        TokenConfig {
            keys,
            server_id: server_id.to_string(),
            nonce_capacity: NonceCache::DEFAULT_CAPACITY,
        }
    }
}

/// What one peer may cost the server (each documented with where it is
/// enforced in `docs/limits.md`). A zero count means no limit.
#[derive(Debug, Clone)]
pub struct Limits {
    /// A reliable message must be whole this long after its first byte
    /// (or after the server found room for it in
    /// [`Limits::max_pending_bytes`]), or the connection is closed.
    pub message_deadline: Duration,
    /// Bytes held in unfinished reliable messages over all connections; a
    /// message is read only once its declared length fits.
    pub max_pending_bytes: usize,
    /// Connections whose QUIC handshake or hello is not finished.
    pub max_half_open: usize,
    /// Connections from one IP address (players behind one NAT share
    /// one).
    pub max_per_address: usize,
    /// Rooms one source address may create per minute, and (with tokens)
    /// one user id.
    pub room_creations_per_minute: usize,
}

impl Default for Limits {
    /// 10 s per message, 256 MiB in unfinished messages, 1024 half-open
    /// connections, 64 connections per address, 16 room creations per
    /// address (and user) per minute.
    fn default() -> Limits {
        Limits {
            message_deadline: Duration::from_secs(10),
            max_pending_bytes: 256 << 20,
            max_half_open: 1024,
            max_per_address: 64,
            room_creations_per_minute: 16,
        }
    }
}

/// `serve --agones`: how the server reports to the Agones SDK sidecar
/// (docs/fleet.md; the code is in `agones.rs`, feature `agones`).
///
/// The server connects to the sidecar's gRPC port on localhost, labels
/// and annotates its GameServer with its server id, sets the capacities
/// of the Counters `rooms` and `players`, says `Ready`, then reports
/// `Health` from the rooms' tick timer while every room keeps ticking,
/// keeps the Counters current, and says `Shutdown` once it has been
/// allocated and stayed empty for [`AgonesConfig::idle_shutdown`].
#[derive(Debug, Clone)]
pub struct AgonesConfig {
    /// The sidecar's gRPC port on localhost; `None`: the environment's
    /// `AGONES_SDK_GRPC_PORT`, else 9357.
    pub port: Option<u16>,
    /// How long to wait for the sidecar at start (it may start after the
    /// server); then the server stops with a failure.
    pub connect_timeout: Duration,
    /// The server id published on the GameServer (annotation
    /// [`AgonesConfig::SERVER_ID_KEY`], and a label of that name when the
    /// id is a valid label value); `None`: the GameServer's name.
    pub server_id: Option<String>,
    /// Time between health reports.
    pub health_every: Duration,
    /// Health stops while a room has not ticked for this long (its tick
    /// loop is stuck), and resumes when it ticks again.
    pub stall: Duration,
    /// Allocated and empty (no rooms, no players, no room reserved by an
    /// allocation) this long: `Shutdown`, and the server stops. `None`:
    /// never.
    pub idle_shutdown: Option<Duration>,
    /// A room reserved by an allocation (the `rooms` Counter raised by a
    /// GameServerAllocation) that no player opened within this long is
    /// given back (the Counter lowered). At least the connect tokens'
    /// lifetime.
    pub reservation_ttl: Duration,
}

impl AgonesConfig {
    /// Key of the annotation and label that carry the server id (Agones
    /// prefixes SDK-set keys with `agones.dev/sdk-`).
    pub const SERVER_ID_KEY: &'static str = "bitroom-server-id";
    /// Key of the annotation that carries the SHA-256 of the server's
    /// certificate (hex), for clients to pin.
    pub const CERT_KEY: &'static str = "bitroom-cert-sha256";
    /// The Counter of rooms.
    pub const ROOMS: &'static str = "rooms";
    /// The Counter of players.
    pub const PLAYERS: &'static str = "players";
}

impl Default for AgonesConfig {
    /// The port from the environment, 30 s to reach the sidecar, health
    /// every second, a 2 s stall
    /// limit, shutdown after 60 s allocated and empty, reservations kept
    /// 5 minutes (the longest connect token lifetime).
    fn default() -> AgonesConfig {
        AgonesConfig {
            port: None,
            connect_timeout: Duration::from_secs(30),
            server_id: None,
            health_every: Duration::from_secs(1),
            stall: Duration::from_secs(2),
            idle_shutdown: Some(Duration::from_secs(60)),
            reservation_ttl: Duration::from_secs(300),
        }
    }
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
    /// Bytes the directory's replays and desync reports may take, counting
    /// the files there at start. Past it the oldest desync reports are
    /// deleted first, then recording stops (a log line each time).
    pub quota: u64,
}

/// Default [`RecordConfig::quota`]: 10 GiB.
pub const DEFAULT_RECORD_QUOTA: u64 = 10 << 30;

impl<R> ServerConfig<R> {
    /// Defaults: 8 players per room, 60 Hz, 64 rooms, 5 s hello timeout,
    /// no recording.
    pub fn new(bind: SocketAddr, rules: R, identity: Identity) -> ServerConfig<R> {
        ServerConfig {
            bind,
            rules,
            room: RoomConfig::default(),
            max_rooms: 64,
            cpu_budget: None,
            max_connections: 4096,
            hello_timeout: Duration::from_secs(5),
            room_idle: Duration::from_secs(30),
            identity,
            record: None,
            shed_lateness: Some(Duration::from_millis(100)),
            udp_buffer: crate::udp::SOCKET_BUFFER_BYTES,
            web: None,
            tokens: None,
            limits: Limits::default(),
            agones: None,
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
    /// The web page's files are missing or unreadable.
    #[error("web page: {0}")]
    Web(String),
    /// Agones reporting was asked of a build without the `agones` feature.
    #[error("this build has no Agones support (build bitroom with --features agones)")]
    NoAgones,
}

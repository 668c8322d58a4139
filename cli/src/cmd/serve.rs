//! `bitroom-server serve`: host sandbox rooms with the server library
//! ([`bitroom_server::Server`]) until SIGINT or SIGTERM.

use super::{bad_input, runtime_with};
use crate::sandbox::{rules_for_scene, SANDBOX_RULES};
use bitroom_protocol::token::{KeyId, MAX_SERVER_ID_LEN};
use bitroom_protocol::RoomConfig;
use bitroom_server::monitor::Monitor;
use bitroom_server::tls::Identity;
use bitroom_server::{
    AgonesConfig, Limits, RecordConfig, Server, ServerConfig, TokenConfig, DEFAULT_RECORD_QUOTA,
};
use bitroom_transport::{fingerprint_hex, keys};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tracing::info;

/// Arguments of `serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// UDP address to listen on.
    #[arg(long, default_value = "127.0.0.1:4433", value_name = "ADDR")]
    bind: String,
    /// Ticks per second of every room.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=1000))]
    tick_rate: u32,
    /// Frame bundles per second to each client [default: the tick rate];
    /// each carries tick-rate / send-rate ticks (rounded down). Lower
    /// trades a little latency for bytes (every datagram costs about 50
    /// bytes of headers).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    send_rate: Option<u32>,
    /// The scene every room plays: `arena` (the sandbox arena, 200 loose
    /// bodies), `arena:N` (N loose bodies), a built-in scene or a JSON
    /// scene file.
    #[arg(long, default_value = "arena")]
    scene: String,
    /// Player seats per room.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=32))]
    max_players: u8,
    /// Spectators per room.
    #[arg(long, default_value_t = 16)]
    max_spectators: u32,
    /// Most rooms at once (rooms are created by the first join).
    #[arg(long, default_value_t = 64)]
    max_rooms: usize,
    /// Measured capacity: the rooms may use PERCENT % of the worker
    /// threads' cores; joins that would create a room past what fits at
    /// the measured cost of a room are refused, and on Agones the `rooms`
    /// Counter's capacity follows (docs/fleet.md). Without it: --max-rooms.
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u32).range(1..=100))]
    cpu_budget: Option<u32>,
    /// Most QUIC connections at once.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Certificate chain (PEM or DER); without it a development certificate
    /// is generated (or reused) in --cert-dir.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// Private key for --cert (PEM or DER PKCS#8).
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// Where the development certificate and key are kept.
    #[arg(long, value_name = "DIR", default_value = ".")]
    cert_dir: PathBuf,
    /// Serve Prometheus metrics over HTTP on this address, e.g. 127.0.0.1:9100.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Time a client has from its first packet to its hello.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    hello_timeout: Duration,
    /// An empty room closes after this long.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    room_idle: Duration,
    /// Load shedding: once a room starts a tick this late, refuse new joins
    /// ("server is overloaded") for 2 s so running rooms catch up; 0 for
    /// never.
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration)]
    shed_lateness: Duration,
    /// Receive and send buffer (bytes) asked of the kernel for the UDP
    /// socket, capped by net.core.rmem_max / wmem_max; 0 keeps the
    /// kernel's default. Too small drops datagrams in bursts (see the
    /// `udp drops` in the status line).
    #[arg(long, default_value_t = bitroom_server::udp::SOCKET_BUFFER_BYTES, value_name = "BYTES")]
    udp_buffer: usize,
    /// Log a status line (rooms, clients, tick time, lateness, UDP drops,
    /// CPU) this often; 0 for never.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    stats_every: Duration,
    /// Record every room into this directory (one replay file per room,
    /// flushed every 100 ms) and write client desync reports there.
    #[arg(long, value_name = "DIR")]
    record: Option<std::path::PathBuf>,
    /// Bytes the record directory's replays and desync reports may take
    /// (the files there at start count): past it the oldest reports are
    /// deleted, then recording stops.
    #[arg(long, default_value_t = DEFAULT_RECORD_QUOTA, value_name = "BYTES")]
    record_quota: u64,
    /// Require a connect token signed with this public key
    /// (`token-key.pub.pem` from `keygen`) in every hello; repeat it for
    /// key rotation (tokens of any of the keys are accepted). Without it
    /// anyone who can reach the server joins any room (a warning says so).
    #[arg(long = "token-key", value_name = "PUBFILE")]
    token_keys: Vec<PathBuf>,
    /// A reliable message must be whole this long after it starts, or the
    /// connection is closed.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    message_deadline: Duration,
    /// Bytes held in unfinished reliable messages over all connections.
    #[arg(long, default_value_t = Limits::default().max_pending_bytes, value_name = "BYTES")]
    max_pending_bytes: usize,
    /// Connections whose QUIC handshake or hello is not finished; past
    /// half of it, unproven addresses get a stateless retry first (0: no
    /// limit).
    #[arg(long, default_value_t = Limits::default().max_half_open)]
    max_half_open: usize,
    /// Connections from one IP address (0: no limit; raise it for load
    /// tests from one machine).
    #[arg(long, default_value_t = Limits::default().max_per_address)]
    max_connections_per_address: usize,
    /// Rooms one IP address (and, with tokens, one user) may create per
    /// minute (0: no limit).
    #[arg(long, default_value_t = Limits::default().room_creations_per_minute)]
    room_creations_per_minute: usize,
    /// Run every server thread under real-time scheduling (SCHED_FIFO,
    /// priority 10) so ticks start on time on a busy machine; for machines
    /// dedicated to serving (Linux). Needs CAP_SYS_NICE (root) or a
    /// real-time priority limit of at least 11 (`ulimit -r 11`); without it
    /// a warning is printed and the server runs at normal priority.
    #[arg(long)]
    realtime: bool,
    /// Worker threads that run the rooms and the connections [default:
    /// one per CPU]. One thread per process costs less per room than two
    /// (no wake-ups across threads; about 9 % less on a 2-core machine,
    /// docs/fleet.md); for more cores, run a server per core.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// Serve browsers on this address too: the page, its API and the
    /// WebSocket transport over HTTP on TCP, WebTransport on UDP at the
    /// same port (e.g. 127.0.0.1:8080; see docs/web.md).
    #[arg(long, value_name = "ADDR")]
    web: Option<String>,
    /// The page's folder for --web (default: web/dist of this repository).
    #[arg(long, value_name = "DIR", requires = "web")]
    web_assets: Option<PathBuf>,
    /// Ticks between keyframe snapshots in recordings.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..))]
    keyframe_interval: u32,
    /// This server's id (at most 64 bytes): connect tokens must name it
    /// (`token --server-id`; default: a server without an id); published
    /// on the Agones GameServer with --agones (default there: the
    /// GameServer's name).
    #[arg(long, value_name = "ID", value_parser = parse_server_id)]
    server_id: Option<String>,
    /// Run as an Agones GameServer: Ready, Health from the tick loop, the
    /// Counters `rooms` and `players`, Shutdown when allocated and idle
    /// (docs/fleet.md). The SDK sidecar's port comes from
    /// AGONES_SDK_GRPC_PORT (default 9357). Needs a build with the
    /// `agones` feature.
    #[arg(long)]
    agones: bool,
    /// With --agones: Shutdown once allocated and empty this long; 0 for
    /// never.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration, requires = "agones")]
    agones_idle_shutdown: Duration,
    /// With --agones: a room reserved by an allocation that no player
    /// opened within this long is given back (at least the connect
    /// tokens' lifetime).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration, requires = "agones")]
    agones_reservation_ttl: Duration,
    /// With --agones: health reports stop while a room has not ticked for
    /// this long.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration, requires = "agones")]
    agones_stall: Duration,
}

/// A server id: 1 to 64 bytes, no control characters.
fn parse_server_id(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > 64 || s.chars().any(char::is_control) {
        return Err("a server id is 1 to 64 bytes without control characters".into());
    }
    Ok(s.to_string())
}

/// Parses a socket address with a one-line error.
///
/// # Errors
/// Not an `IP:PORT`.
pub fn parse_addr(flag: &str, s: &str) -> Result<SocketAddr, String> {
    s.parse()
        .map_err(|_| format!("{flag} {s:?}: not an address like 127.0.0.1:4433"))
}

/// Runs `serve`.
pub fn run(args: ServeArgs) -> ExitCode {
    let bind = match parse_addr("--bind", &args.bind) {
        Ok(a) => a,
        Err(e) => return bad_input(e),
    };
    let metrics_addr = match args.metrics.as_deref().map(|m| parse_addr("--metrics", m)) {
        Some(Err(e)) => return bad_input(e),
        Some(Ok(a)) => Some(a),
        None => None,
    };
    let rules = match rules_for_scene(&args.scene) {
        Ok(r) => r,
        Err(e) => return bad_input(e),
    };
    let (identity, dev_cert) = match (&args.cert, &args.key) {
        (Some(c), Some(k)) => match Identity::load(c, k) {
            Ok(id) => (id, None),
            Err(e) => return bad_input(e),
        },
        _ => match Identity::development(&args.cert_dir) {
            Ok((id, path, created)) => (id, Some((path, created))),
            Err(e) => return bad_input(e),
        },
    };
    if args.realtime {
        // Before any thread starts: threads inherit the policy.
        match bitroom_server::realtime::enter() {
            Ok(()) => println!(
                "real-time scheduling: SCHED_FIFO priority {}",
                bitroom_server::realtime::PRIORITY
            ),
            Err(e) => eprintln!("warning: --realtime refused ({e}); running at normal priority"),
        }
    }
    let runtime = match runtime_with(args.threads.map(usize::from)) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut config = ServerConfig::new(bind, rules, identity);
    config.room = RoomConfig {
        max_players: args.max_players,
        max_spectators: args.max_spectators,
        tick_rate: args.tick_rate,
        send_rate: args.send_rate.unwrap_or(args.tick_rate),
        ..RoomConfig::default()
    };
    config.max_rooms = args.max_rooms;
    config.cpu_budget = args.cpu_budget;
    config.max_connections = args.max_connections;
    config.hello_timeout = args.hello_timeout;
    config.room_idle = args.room_idle;
    config.shed_lateness = (!args.shed_lateness.is_zero()).then_some(args.shed_lateness);
    config.udp_buffer = args.udp_buffer;
    if let Some(web) = &args.web {
        match super::web::web_config(web, &args.scene, args.web_assets.clone()) {
            Ok(w) => config.web = Some(w),
            Err(e) => return bad_input(e),
        }
    }
    config.limits = Limits {
        message_deadline: args.message_deadline,
        max_pending_bytes: args.max_pending_bytes,
        max_half_open: args.max_half_open,
        max_per_address: args.max_connections_per_address,
        room_creations_per_minute: args.room_creations_per_minute,
    };
    if !args.token_keys.is_empty() {
        let mut trusted = Vec::new();
        for path in &args.token_keys {
            match keys::load_verifying_key(path) {
                Ok(k) => trusted.push(k),
                Err(e) => return bad_input(format_args!("--token-key: {e}")),
            }
        }
        let server_id = args.server_id.clone().unwrap_or_default();
        if server_id.len() > MAX_SERVER_ID_LEN || server_id.chars().any(char::is_control) {
            return bad_input(format_args!(
                "--server-id {server_id:?}: at most {MAX_SERVER_ID_LEN} bytes, no control characters"
            ));
        }
        config.tokens = Some(TokenConfig::new(trusted, &server_id));
    }
    if args.agones {
        config.agones = Some(AgonesConfig {
            server_id: args.server_id.clone(),
            idle_shutdown: (!args.agones_idle_shutdown.is_zero())
                .then_some(args.agones_idle_shutdown),
            reservation_ttl: args.agones_reservation_ttl,
            stall: args.agones_stall,
            ..AgonesConfig::default()
        });
    }
    if let Some(dir) = &args.record {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return bad_input(format_args!("--record {}: {e}", dir.display()));
        }
        config.record = Some(RecordConfig {
            dir: dir.clone(),
            rules: SANDBOX_RULES.to_string(),
            scene: args.scene.clone(),
            keyframe_interval: args.keyframe_interval,
            quota: args.record_quota,
        });
    }
    let config_tokens = config.tokens.as_ref().map(|t| {
        let ids: Vec<String> = t.keys.iter().map(|k| KeyId::of(k).to_string()).collect();
        (ids, t.server_id.clone())
    });
    let code = runtime.block_on(async move {
        let metrics = match metrics_addr {
            Some(addr) => {
                let handle = match bitroom_server::metrics_http::install() {
                    Ok(h) => h,
                    Err(e) => return bad_input(e),
                };
                let listener = match bitroom_server::metrics_http::bind(addr).await {
                    Ok(l) => l,
                    Err(e) => return bad_input(e),
                };
                let local = listener.local_addr().unwrap_or(addr);
                Some((listener, handle, local))
            }
            None => None,
        };
        let server = match Server::bind(config) {
            Ok(s) => s,
            Err(e) => return bad_input(e),
        };
        let fp = fingerprint_hex(&server.fingerprint());
        println!("listening on {}", server.local_addr());
        match &dev_cert {
            Some((path, created)) => println!(
                "development certificate {} ({}), sha256 {fp}",
                path.display(),
                if *created { "new" } else { "reused" }
            ),
            None => println!("certificate sha256 {fp}"),
        }
        println!(
            "clients: bitroom-client bots --server {} --cert-sha256 {fp}",
            server.local_addr()
        );
        if let Some(web) = server.web_addr() {
            println!(
                "browsers: http://{web}/ (a room: {}{})",
                super::web::room_url(web, "NAME"),
                if config_tokens.is_some() { "&token=TOKEN" } else { "" }
            );
        }
        match &config_tokens {
            Some((ids, server_id)) => println!(
                "connect tokens required: {} ({})",
                ids.join(", "),
                if server_id.is_empty() {
                    "server without an id".to_string()
                } else {
                    format!("server id {server_id:?}")
                }
            ),
            None => println!(
                "warning: no --token-key: anyone who can reach this server joins any room (development only)"
            ),
        }
        if let Some((listener, handle, local)) = metrics {
            println!("metrics on http://{local}/metrics");
            tokio::spawn(bitroom_server::metrics_http::serve(listener, handle));
        }
        if !args.stats_every.is_zero() {
            tokio::spawn(status_lines(server.monitor(), args.stats_every));
        }
        let stop = server.shutdown_handle();
        server.run_until(shutdown_signal()).await;
        match stop.failure() {
            Some(why) => {
                eprintln!("error: {why}");
                ExitCode::FAILURE
            }
            None => ExitCode::SUCCESS,
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Logs a status line every `every`.
async fn status_lines(monitor: Arc<Monitor>, every: Duration) {
    let mut cpu = CpuClock::new();
    let mut interval = tokio::time::interval(every);
    // After a stall, one line, not a burst of them.
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await;
    let mut drops_before = monitor.snapshot().udp_drops;
    loop {
        interval.tick().await;
        let s = monitor.snapshot();
        let (tick, late) = monitor.take_interval();
        let udp_drops = s.udp_drops.saturating_sub(drops_before);
        drops_before = s.udp_drops;
        info!(
            "rooms {} clients {} connections {} | tick p50 {} µs p99 {} µs max {} µs | lateness p50 {} µs p99 {} µs max {} µs | ticks {} | udp drops {} | cpu {}",
            s.rooms,
            s.clients,
            s.connections,
            tick.p50,
            tick.p99,
            tick.max,
            late.p50,
            late.p99,
            late.max,
            tick.count,
            udp_drops,
            cpu.sample()
                .map_or("n/a".into(), |c| format!("{:.0}%", c * 100.0))
        );
    }
}

/// Process CPU use between samples ([`bitroom_server::process_cpu`]:
/// every thread, user and kernel).
#[derive(Debug)]
pub struct CpuClock {
    last: Option<(Duration, std::time::Instant)>,
}

impl CpuClock {
    /// Starts measuring.
    pub fn new() -> CpuClock {
        CpuClock {
            last: bitroom_server::process_cpu().map(|t| (t, std::time::Instant::now())),
        }
    }

    /// CPU seconds per wall second since the previous sample (1.0 = one
    /// core busy); `None` where the platform has no process CPU clock.
    pub fn sample(&mut self) -> Option<f64> {
        let now = (bitroom_server::process_cpu()?, std::time::Instant::now());
        let (t0, w0) = self.last.replace(now)?;
        let wall = now.1.duration_since(w0).as_secs_f64();
        // A share for a status line: a float, at the edge.
        Some(now.0.saturating_sub(t0).as_secs_f64() / wall.max(1e-6))
    }
}

impl Default for CpuClock {
    fn default() -> CpuClock {
        CpuClock::new()
    }
}

//! `--web ADDR`: the browser's way in. On TCP `ADDR`, HTTP/1.1 (axum): the
//! page and its wasm ([`assets`]), a small JSON API and the WebSocket
//! transport; on UDP at the same port, WebTransport over HTTP/3 (a quinn
//! endpoint of its own, `webtransport.rs`). Both hand their connections
//! to the same code as native clients ([`crate::connection::serve`]), so
//! rooms cannot tell them apart, and both count against
//! [`ServerConfig::max_connections`](crate::ServerConfig::max_connections).
//!
//! Why a second UDP endpoint rather than one serving both ALPNs: quinn
//! fixes a connection's transport parameters (stream limits) before the
//! ALPN is known, and HTTP/3 needs more streams than the native protocol's
//! one, which the native path keeps as a bound. The endpoint also carries
//! its own certificate: browsers trust a self-signed one only by hash, and
//! only when it is ECDSA P-256 and valid for at most 14 days
//! ([`Identity::short_lived`](crate::tls::Identity::short_lived), renewed
//! every [`WEB_CERT_RENEW`]).
//!
//! | path | what |
//! |---|---|
//! | `/` and `/FILE` | the page's files (`assets.rs`) |
//! | `/api/info` | the game (scene, tick rate), the WebTransport port and certificate hash, the protocol version |
//! | `/api/rooms` | rooms: name, players (slot, name), spectators, tick |
//! | `/api/scene` | the scene file's JSON, when the scene is a file |
//! | `/api/token?room=NAME[&spectate=1]` | a connect token, when the server is its own backend (`demo`) |
//! | `/ws` | the WebSocket transport (`link/websocket.rs`) |
//! | UDP `https://HOST:PORT/bitroom` | the WebTransport session |

pub(crate) mod assets;
mod http;
mod listener;
mod webtransport;

use crate::context::Context;
use crate::tls::Identity;
use crate::ServeError;
use assets::Assets;
use bitroom_protocol::NetRules;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

/// How often the WebTransport certificate is replaced (well inside its
/// [`WEB_CERT_DAYS`](crate::tls::WEB_CERT_DAYS)): pages loaded after that
/// get the new hash; sessions already open keep theirs.
pub const WEB_CERT_RENEW: Duration = Duration::from_secs(7 * 24 * 3600);

/// Most HTTP connections (page loads, API calls, WebSockets) at once.
pub const MAX_HTTP_CONNECTIONS: usize = 1024;

/// Mints a connect token (its text form) for a room, as a player
/// (`false`) or a spectator (`true`), for the page's `/api/token`.
///
/// Only a server that is also its own game backend has one: `demo`, which
/// holds its key pair in memory. A production server holds only public
/// keys and cannot mint; its page takes the token the game's backend put
/// in the link (`&token=`).
#[derive(Clone)]
pub struct TokenMint(pub Arc<MintFn>);

/// What a [`TokenMint`] calls: room, spectator → the token's text, or why
/// not.
pub type MintFn = dyn Fn(&str, bool) -> Result<String, String> + Send + Sync;

impl std::fmt::Debug for TokenMint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenMint")
    }
}

/// What the web side serves.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// TCP address of the HTTP listener; WebTransport listens on UDP at
    /// the same address and port. Port 0 picks a port free for both.
    pub bind: SocketAddr,
    /// The page's folder (`web/dist`, built by `web/build.sh`).
    pub assets: PathBuf,
    /// What the page must know about the game, merged into `/api/info`
    /// (the sandbox page reads `scene`).
    pub game: serde_json::Value,
    /// The scene file's JSON for `/api/scene` (when the scene is a file:
    /// the page builds the rules from it).
    pub scene_json: Option<String>,
    /// Tokens for the page on request (`/api/token`; `demo` only).
    pub mint: Option<TokenMint>,
}

/// The web side, bound (not yet serving).
#[derive(Debug)]
pub(crate) struct BoundWeb {
    tcp: std::net::TcpListener,
    endpoint: quinn::Endpoint,
    state: Arc<WebState>,
}

/// What the HTTP handlers and the WebTransport loop share.
#[derive(Debug)]
pub(crate) struct WebState {
    assets: Assets,
    game: serde_json::Value,
    scene_json: Option<String>,
    mint: Option<TokenMint>,
    /// The WebTransport endpoint's UDP port.
    wt_port: u16,
    /// SHA-256 of the WebTransport certificate in use (hex).
    cert_sha256: RwLock<String>,
    /// Settings the API reports.
    tick_rate: u32,
    max_players: u8,
}

impl BoundWeb {
    /// Binds TCP and UDP at `config.bind` (one port for both).
    pub(crate) fn bind(
        config: WebConfig,
        tick_rate: u32,
        max_players: u8,
        udp_buffer: usize,
    ) -> Result<BoundWeb, ServeError> {
        let assets = Assets::scan(&config.assets).map_err(ServeError::Web)?;
        let bind_err = |addr, source| ServeError::Bind { addr, source };
        // With port 0, the kernel picks a TCP port; the same UDP port may be
        // taken, so try a few.
        let mut tries = if config.bind.port() == 0 { 8 } else { 1 };
        let (tcp, udp) = loop {
            let tcp =
                std::net::TcpListener::bind(config.bind).map_err(|e| bind_err(config.bind, e))?;
            let addr = tcp.local_addr().map_err(|e| bind_err(config.bind, e))?;
            match crate::udp::bind_udp(addr, udp_buffer) {
                Ok(udp) => break (tcp, udp),
                Err(e) => {
                    tries -= 1;
                    if tries == 0 {
                        return Err(bind_err(addr, e));
                    }
                }
            }
        };
        tcp.set_nonblocking(true)
            .map_err(|e| bind_err(config.bind, e))?;
        let wt_port = udp
            .local_addr()
            .map_err(|e| bind_err(config.bind, e))?
            .port();
        let identity = Identity::short_lived(time::OffsetDateTime::now_utc())?;
        let cert_sha256 = identity.fingerprint_hex();
        let Identity { chain, key } = identity;
        let quic = bitroom_transport::webtransport_server_config(chain, key)?;
        let runtime = quinn::default_runtime()
            .ok_or_else(|| bind_err(config.bind, std::io::Error::other("no tokio runtime")))?;
        let endpoint =
            quinn::Endpoint::new(quinn::EndpointConfig::default(), Some(quic), udp, runtime)
                .map_err(|e| bind_err(config.bind, e))?;
        Ok(BoundWeb {
            tcp,
            endpoint,
            state: Arc::new(WebState {
                assets,
                game: config.game,
                scene_json: config.scene_json,
                mint: config.mint,
                wt_port,
                cert_sha256: RwLock::new(cert_sha256),
                tick_rate,
                max_players,
            }),
        })
    }

    /// The HTTP address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.tcp
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// SHA-256 of the WebTransport certificate now (hex).
    pub(crate) fn cert_sha256(&self) -> String {
        self.state.cert_sha256_now()
    }

    /// Starts serving: the HTTP task and the WebTransport task, both
    /// stopping when `stop` turns true. Returns the WebTransport endpoint
    /// (closed by the caller once the connections are done).
    pub(crate) fn start<R: NetRules>(
        self,
        cx: Arc<Context<R>>,
        stop: watch::Receiver<bool>,
    ) -> quinn::Endpoint {
        let BoundWeb {
            tcp,
            endpoint,
            state,
        } = self;
        tokio::spawn(http::run(tcp, state.clone(), cx.clone(), stop.clone()));
        tokio::spawn(webtransport::run(endpoint.clone(), state, cx, stop));
        endpoint
    }
}

impl WebState {
    fn cert_sha256_now(&self) -> String {
        self.cert_sha256
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

//! [`Server`]: binds the QUIC endpoint, accepts connections (at most
//! [`ServerConfig::max_connections`]) and hands each to its own task
//! ([`crate::connection`]); on shutdown it stops accepting, kicks every
//! client with [`KickReason::ServerShutdown`] and waits for the tasks.

use crate::admission::Admission;
use crate::config::{ServeError, ServerConfig};
use crate::connection::handle_incoming;
use crate::context::Context;
use crate::limits::{Peers, PendingBudget};
use crate::monitor::Monitor;
use crate::quota::Quota;
use crate::registry::Registry;
use crate::ticker::Ticker;
use crate::tls::Identity;
use crate::web::BoundWeb;
use crate::writer::close_reason;
use bitroom_protocol::{KickReason, NetRules};
use bitroom_transport::server_config;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{info, warn};

/// A bound server; [`Server::run`] serves (see the crate docs).
#[derive(Debug)]
pub struct Server<R: NetRules> {
    endpoint: quinn::Endpoint,
    cx: Arc<Context<R>>,
    done_rx: mpsc::Receiver<()>,
    fingerprint: [u8; 32],
    /// The browsers' side (`--web`), bound.
    web: Option<BoundWeb>,
    /// The UDP socket's inode, for the kernel's drop count (Linux).
    udp_inode: Option<u64>,
    stop: ShutdownHandle,
    #[cfg_attr(not(feature = "agones"), allow(dead_code))]
    agones: Option<crate::config::AgonesConfig>,
}

/// Asks a running [`Server`] to shut down (cheap to clone; any clone will
/// do). The server stops accepting, kicks every client with
/// [`KickReason::ServerShutdown`], closes the connections and
/// [`Server::run`] returns, within about 1.5 s.
#[derive(Clone, Debug)]
pub struct ShutdownHandle {
    stop: Arc<watch::Sender<bool>>,
    failure: Arc<Mutex<Option<String>>>,
}

impl ShutdownHandle {
    fn new() -> ShutdownHandle {
        ShutdownHandle {
            stop: Arc::new(watch::channel(false).0),
            failure: Arc::default(),
        }
    }

    /// Starts the shutdown (again: nothing more happens).
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// Whether a shutdown was asked for.
    pub fn is_requested(&self) -> bool {
        *self.stop.borrow()
    }

    /// Shuts down because something the server cannot run without failed
    /// (the Agones sidecar could not be reached); [`ShutdownHandle::failure`]
    /// says what. The first failure is kept.
    pub fn fail(&self, why: String) {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(why);
        self.shutdown();
    }

    /// Why the server shut itself down, if it failed ([`ShutdownHandle::fail`]).
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }
}

impl<R: NetRules> Server<R> {
    /// Binds the endpoint (tasks start with [`Server::run`]). Needs a
    /// tokio runtime.
    ///
    /// # Errors
    /// The address cannot be bound, the certificate and key don't fit, or
    /// Agones reporting was asked of a build without it.
    pub fn bind(config: ServerConfig<R>) -> Result<Server<R>, ServeError> {
        if config.agones.is_some() && !cfg!(feature = "agones") {
            return Err(ServeError::NoAgones);
        }
        let fingerprint = config.identity.fingerprint();
        let Identity { chain, key } = config.identity;
        let mut quic = server_config(chain, key)?;
        // Connection attempts quinn holds before we decide on them, and
        // the packets it buffers for them: 0-RTT is off, so an attempt
        // carries only its Initial packets (docs/limits.md).
        quic.max_incoming(1024)
            .incoming_buffer_size(64 << 10)
            .incoming_buffer_size_total(4 << 20);
        let bind_error = |source| ServeError::Bind {
            addr: config.bind,
            source,
        };
        let socket = crate::udp::bind_udp(config.bind, config.udp_buffer).map_err(bind_error)?;
        let udp_inode = crate::udp::socket_inode(&socket);
        let runtime = quinn::default_runtime()
            .ok_or_else(|| bind_error(std::io::Error::other("no tokio runtime")))?;
        let endpoint = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            Some(quic),
            socket,
            runtime,
        )
        .map_err(bind_error)?;
        let web = config
            .web
            .map(|w| {
                BoundWeb::bind(
                    w,
                    config.room.tick_rate,
                    config.room.max_players,
                    config.udp_buffer,
                )
            })
            .transpose()?;
        let ticker = Ticker::start().map_err(ServeError::Ticker)?;
        let (done, done_rx) = mpsc::channel(1);
        let monitor = Arc::new(Monitor::default());
        if config.tokens.is_none() {
            warn!(
                "no token keys: anyone who can reach this server may join any room \
                 (development only; require connect tokens with --token-key)"
            );
        }
        let quota = config
            .record
            .as_ref()
            .map(|rc| Arc::new(Quota::open(&rc.dir, rc.quota, monitor.clone())));
        let limits = config.limits;
        let cx = Arc::new(Context {
            rules: config.rules,
            room: config.room,
            max_rooms: config.max_rooms,
            cpu_budget: config.cpu_budget,
            capacity: AtomicUsize::new(config.max_rooms),
            reserved: AtomicUsize::new(0),
            room_idle: config.room_idle,
            hello_timeout: config.hello_timeout,
            base: Instant::now(),
            budget: PendingBudget::new(limits.max_pending_bytes, monitor.pending_bytes.clone()),
            peers: Peers::new(limits.max_per_address, limits.max_half_open),
            admission: Admission::new(config.tokens, limits.room_creations_per_minute),
            limits,
            quota,
            monitor,
            shutdown: watch::channel(false).0,
            record: config.record,
            ticker,
            shed_lateness: config.shed_lateness,
            shed_until: AtomicU64::new(0),
            rooms: Registry::default(),
            liveness: Arc::default(),
            next_conn: AtomicU64::new(1),
            connections: Arc::new(AtomicUsize::new(0)),
            max_connections: config.max_connections,
            done,
        });
        Ok(Server {
            endpoint,
            cx,
            done_rx,
            fingerprint,
            web,
            udp_inode,
            stop: ShutdownHandle::new(),
            agones: config.agones,
        })
    }

    /// The address the server listens on (the real port when bound to 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.endpoint
            .local_addr()
            .expect("a bound endpoint has an address")
    }

    /// SHA-256 of the server's certificate (for clients to pin).
    pub fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }

    /// The web address (HTTP on TCP, WebTransport on UDP, one port), with
    /// `--web`.
    pub fn web_addr(&self) -> Option<SocketAddr> {
        self.web.as_ref().map(BoundWeb::local_addr)
    }

    /// SHA-256 of the WebTransport certificate now (hex), with `--web`.
    pub fn web_cert_sha256(&self) -> Option<String> {
        self.web.as_ref().map(BoundWeb::cert_sha256)
    }

    /// Live measurements.
    pub fn monitor(&self) -> Arc<Monitor> {
        self.cx.monitor.clone()
    }

    /// A handle that stops [`Server::run`] from anywhere.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.stop.clone()
    }

    /// Serves until a [`ShutdownHandle`] asks it to stop, then shuts down
    /// (see [`ShutdownHandle`]) and returns.
    pub async fn run(self) {
        self.run_until(std::future::pending()).await;
    }

    /// [`Server::run`], also stopping when `signal` completes (SIGINT, a
    /// test's oneshot).
    pub async fn run_until(mut self, signal: impl Future<Output = ()>) {
        tokio::pin!(signal);
        let mut stop = self.stop.subscribe();
        // The browsers' side stops accepting at shutdown like the endpoint.
        let (web_stop, web_stop_rx) = watch::channel(false);
        let web_endpoint = self
            .web
            .take()
            .map(|w| w.start(self.cx.clone(), web_stop_rx));
        #[cfg(feature = "agones")]
        let agones = self.agones.clone().map(|config| {
            tokio::spawn(crate::agones::run(
                config,
                self.cx.clone(),
                self.stop.clone(),
                self.fingerprint,
            ))
        });
        #[cfg(not(feature = "agones"))]
        let agones: Option<tokio::task::JoinHandle<()>> = None;
        // The kernel's count of datagrams dropped on our socket, once a
        // second (a rising count means the endpoint falls behind).
        let drops = self.udp_inode.map(|inode| {
            let monitor = self.cx.monitor.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_secs(1));
                loop {
                    every.tick().await;
                    // /proc/net/udp lists every UDP socket of the host:
                    // read it off the workers that tick the rooms.
                    let read =
                        tokio::task::spawn_blocking(move || crate::udp::receive_drops(inode));
                    if let Ok(Some(n)) = read.await {
                        monitor.udp_drops(n);
                    }
                }
            })
        });
        // The capacity the server measures for itself.
        let capacity = tokio::spawn(crate::capacity::run(self.cx.clone()));
        loop {
            tokio::select! {
                _ = &mut signal => break,
                _ = stop.wait_for(|&s| s) => break,
                incoming = self.endpoint.accept() => {
                    let Some(incoming) = incoming else { break };
                    let Some(slot) = self.cx.admit() else {
                        incoming.refuse();
                        continue;
                    };
                    // Many half-open connections: an unproven source
                    // address must first answer a stateless retry, so a
                    // flood from spoofed addresses holds no state.
                    if self.cx.peers.under_pressure()
                        && !incoming.remote_address_validated()
                        && incoming.may_retry()
                    {
                        let _ = incoming.retry();
                        continue;
                    }
                    let places = match self.cx.peers.admit(incoming.remote_address().ip()) {
                        Ok(p) => p,
                        Err(why) => {
                            self.cx.monitor.refused(why.label());
                            incoming.refuse();
                            continue;
                        }
                    };
                    let cx = self.cx.clone();
                    tokio::spawn(async move {
                        handle_incoming(incoming, &cx, places).await;
                        drop(slot);
                    });
                }
            }
        }
        if let Some(task) = drops {
            task.abort();
        }
        capacity.abort();
        // Every task watching the handle learns of it (the signal may have
        // been what stopped us). Agones is told `Shutdown` (and health
        // stops) before the kicks.
        self.stop.shutdown();
        if let Some(task) = agones {
            if tokio::time::timeout(Duration::from_secs(2), task)
                .await
                .is_err()
            {
                warn!("agones: the sidecar did not answer the shutdown in time");
            }
        }
        info!("shutting down: kicking every client");
        self.endpoint.set_server_config(None);
        web_stop.send_replace(true);
        let _ = self.cx.shutdown.send(true);
        // Our own handle on `done` must go for `recv` to end.
        let Server {
            endpoint,
            cx,
            mut done_rx,
            ..
        } = self;
        drop(cx);
        let finished = tokio::time::timeout(Duration::from_millis(1500), done_rx.recv())
            .await
            .is_ok();
        if !finished {
            warn!("some connections did not finish closing in time");
        }
        endpoint.close(0u8.into(), &close_reason(&KickReason::ServerShutdown));
        if let Some(web) = &web_endpoint {
            web.close(
                0u8.into(),
                KickReason::ServerShutdown.to_string().as_bytes(),
            );
        }
        let _ = tokio::time::timeout(Duration::from_millis(300), endpoint.wait_idle()).await;
        info!("shut down");
    }
}

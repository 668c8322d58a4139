//! The QUIC server: accepts connections, routes each to its room by the
//! room name in its hello, and shuts down cleanly.
//!
//! Per connection: the client opens one bidirectional stream and says
//! hello on it (within the hello timeout, in at most [`MAX_HELLO`] bytes);
//! the server finds or creates the room, hands the connection over, and
//! from then on forwards stream messages and datagrams to the room's task
//! (`room_task.rs`). A writer task per connection sends the room's
//! reliable messages and, when the room closes the connection, sends the
//! kick, waits (briefly) for the client to acknowledge it, then closes
//! with the kick as the close reason, so the client learns why even if
//! the stream data is lost with the connection.
//!
//! Shutdown (mini-redis style): a watch channel tells every task; a
//! channel whose senders the tasks hold tells when they are all gone.

use crate::monitor::Monitor;
use crate::room_task::{self, Peer, RoomCmd};
use crate::ticker::Ticker;
use crate::tls::Identity;
use bitroom_client::quic::server_config;
use bitroom_client::NetRules;
use bitroom_protocol::{
    decode_client_reliable, encode_server_reliable, ClientReliable, ConnId, KickReason, Micros,
    RoomConfig, ServerReliable, SnapshotJob, StreamFramer,
};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, error, info, info_span, warn, Instrument};

/// Largest hello accepted (bytes): names are short.
pub const MAX_HELLO: usize = 4096;

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
    /// refused with [`KickReason::Overloaded`] for [`SHED_FOR`], so the
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
    pub dir: std::path::PathBuf,
    /// Scene name written into the replay header.
    pub scene: String,
    /// Ticks between keyframes.
    pub keyframe_interval: u32,
}

impl<R> ServerConfig<R> {
    /// Defaults: 8 players per room, 60 Hz, 64 rooms, 5 s hello timeout.
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
    Tls(#[from] bitroom_client::quic::TlsError),
    /// The tick timer thread could not be started.
    #[error("cannot start the tick timer thread: {0}")]
    Ticker(std::io::Error),
}

/// What the writer task of a connection is asked to do.
#[derive(Debug)]
pub(crate) enum WriterMsg {
    /// A message for the stream (unframed).
    Data(Vec<u8>),
    /// A snapshot's messages, packed here (on a blocking thread) unless a
    /// writer sharing the job packed it already: packing is milliseconds
    /// for large rooms, and the room's tick must not wait for it.
    Snapshot(SnapshotJob),
    /// Finish the stream and close the connection with this reason,
    /// writing the kick message first when `kick`.
    Close { reason: KickReason, kick: bool },
}

/// Messages a connection's writer holds before the client counts as too
/// slow (a big snapshot is ~a few dozen chunks).
const WRITER_QUEUE: usize = 1024;
/// Commands queued per room.
const ROOM_QUEUE: usize = 4096;
/// How long a closing connection waits for its last messages to arrive.
const CLOSE_LINGER: Duration = Duration::from_millis(800);

#[derive(Debug)]
pub(crate) struct RoomEntry {
    tx: mpsc::Sender<RoomCmd>,
}

/// State shared by the server's tasks.
#[derive(Debug)]
pub(crate) struct Shared<R> {
    pub rules: R,
    pub room: RoomConfig,
    pub max_rooms: usize,
    pub room_idle: Duration,
    pub hello_timeout: Duration,
    pub base: Instant,
    pub monitor: Arc<Monitor>,
    pub shutdown: watch::Sender<bool>,
    pub record: Option<RecordConfig>,
    /// Wakes the rooms for their ticks.
    pub ticker: Ticker,
    /// [`ServerConfig::shed_lateness`].
    pub shed_lateness: Option<Duration>,
    /// Joins are refused until this time (µs since `base`).
    shed_until: AtomicU64,
    rooms: Mutex<BTreeMap<String, RoomEntry>>,
    next_conn: AtomicU64,
    rooms_created: AtomicU64,
    /// Held by every task; `recv` on the other end returns `None` once
    /// all have finished.
    pub(crate) done: mpsc::Sender<()>,
}

impl<R> Shared<R> {
    pub(crate) fn rooms(&self) -> MutexGuard<'_, BTreeMap<String, RoomEntry>> {
        self.rooms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A room started a tick `lateness` late: past the shedding threshold,
    /// refuse joins for [`SHED_FOR`] from now.
    pub(crate) fn tick_lateness(&self, lateness: Duration) {
        if self.shed_lateness.is_some_and(|limit| lateness >= limit) {
            let until = micros(self.base) + SHED_FOR.as_micros() as Micros;
            let before = self.shed_until.fetch_max(until, Ordering::Relaxed);
            if before < micros(self.base) {
                warn!(
                    "a room ticked {} ms late: refusing joins for {SHED_FOR:?}",
                    lateness.as_millis()
                );
            }
        }
    }

    /// Whether joins are being refused (see [`ServerConfig::shed_lateness`]).
    fn shedding(&self) -> bool {
        micros(self.base) < self.shed_until.load(Ordering::Relaxed)
    }
}

/// Resolves when the shutdown flag is set (without holding its lock).
pub(crate) async fn shutting_down(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|&s| s).await;
}

/// Microseconds since `base`: the rooms' clock.
pub(crate) fn micros(base: Instant) -> Micros {
    base.elapsed().as_micros() as Micros
}

/// A close reason carrying the kick (clients decode it).
fn close_reason(reason: &KickReason) -> Vec<u8> {
    let bytes = encode_server_reliable(&ServerReliable::Kick(reason.clone()));
    if bytes.len() <= 512 {
        bytes
    } else {
        encode_server_reliable(&ServerReliable::Kick(KickReason::BadMessage(
            "(reason too long)".into(),
        )))
    }
}

/// Closes a connection at once, with the kick as its reason.
pub(crate) fn close_now(connection: &quinn::Connection, reason: &KickReason) {
    let code = match reason {
        KickReason::Left | KickReason::ServerShutdown | KickReason::Replaced => 0u8,
        _ => 1,
    };
    connection.close(code.into(), &close_reason(reason));
}

/// Finishes the stream, gives the client a moment to acknowledge it, and
/// closes the connection.
async fn close_after(
    connection: &quinn::Connection,
    send: &mut quinn::SendStream,
    reason: &KickReason,
) {
    let _ = send.finish();
    let _ = tokio::time::timeout(CLOSE_LINGER, send.stopped()).await;
    close_now(connection, reason);
}

/// Writes the room's messages to one connection's stream.
async fn writer(
    connection: quinn::Connection,
    mut send: quinn::SendStream,
    mut rx: mpsc::Receiver<WriterMsg>,
    monitor: Arc<Monitor>,
    _done: mpsc::Sender<()>,
) {
    while let Some(m) = rx.recv().await {
        match m {
            WriterMsg::Data(bytes) => {
                if send.write_all(&StreamFramer::frame(&bytes)).await.is_err() {
                    return;
                }
            }
            WriterMsg::Snapshot(job) => {
                let job = if job.is_packed() {
                    job
                } else {
                    let packing = tokio::task::spawn_blocking(move || {
                        job.messages();
                        job
                    });
                    match packing.await {
                        Ok(job) => job,
                        Err(e) => {
                            error!("packing a snapshot failed: {e}");
                            close_now(
                                &connection,
                                &KickReason::RoomClosed("snapshot failed".into()),
                            );
                            return;
                        }
                    }
                };
                for msg in job.messages() {
                    if send.write_all(&StreamFramer::frame(msg)).await.is_err() {
                        return;
                    }
                    monitor.bytes_out(msg.len() as u64 + 4);
                }
            }
            WriterMsg::Close { reason, kick } => {
                if kick {
                    let msg = encode_server_reliable(&ServerReliable::Kick(reason.clone()));
                    let _ = send.write_all(&StreamFramer::frame(&msg)).await;
                }
                close_after(&connection, &mut send, &reason).await;
                return;
            }
        }
    }
    // The room is gone without closing us (it was dropped): say so.
    close_now(&connection, &KickReason::RoomClosed("room stopped".into()));
}

/// A running server.
#[derive(Debug)]
pub struct Server<R: NetRules> {
    endpoint: quinn::Endpoint,
    shared: Arc<Shared<R>>,
    done_rx: mpsc::Receiver<()>,
    fingerprint: [u8; 32],
    max_connections: usize,
    connections: Arc<AtomicUsize>,
    /// The UDP socket's inode, for the kernel's drop count (Linux).
    udp_inode: Option<u64>,
}

impl<R: NetRules> Server<R> {
    /// Binds the endpoint (tasks start with [`Server::run`]). Needs a
    /// tokio runtime.
    ///
    /// # Errors
    /// The address cannot be bound, or the certificate and key don't fit.
    pub fn bind(config: ServerConfig<R>) -> Result<Server<R>, ServeError> {
        let fingerprint = config.identity.fingerprint();
        let Identity { chain, key } = config.identity;
        let quic = server_config(chain, key)?;
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
        let ticker = Ticker::start().map_err(ServeError::Ticker)?;
        let (done, done_rx) = mpsc::channel(1);
        let shared = Arc::new(Shared {
            rules: config.rules,
            room: config.room,
            max_rooms: config.max_rooms,
            room_idle: config.room_idle,
            hello_timeout: config.hello_timeout,
            base: Instant::now(),
            monitor: Arc::new(Monitor::default()),
            shutdown: watch::channel(false).0,
            record: config.record,
            ticker,
            shed_lateness: config.shed_lateness,
            shed_until: AtomicU64::new(0),
            rooms: Mutex::new(BTreeMap::new()),
            next_conn: AtomicU64::new(1),
            rooms_created: AtomicU64::new(0),
            done,
        });
        Ok(Server {
            endpoint,
            shared,
            done_rx,
            fingerprint,
            max_connections: config.max_connections,
            connections: Arc::new(AtomicUsize::new(0)),
            udp_inode,
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

    /// Live measurements.
    pub fn monitor(&self) -> Arc<Monitor> {
        self.shared.monitor.clone()
    }

    /// Serves until `shutdown` completes, then stops accepting, kicks
    /// everyone with [`KickReason::ServerShutdown`], closes the
    /// connections and returns (within about 1.5 s).
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        // The kernel's count of datagrams dropped on our socket, once a
        // second (a rising count means the endpoint falls behind).
        let drops = self.udp_inode.map(|inode| {
            let monitor = self.shared.monitor.clone();
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
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                incoming = self.endpoint.accept() => {
                    let Some(incoming) = incoming else { break };
                    if self.connections.load(Ordering::Relaxed) >= self.max_connections {
                        self.shared.monitor.refused("too_many_connections");
                        incoming.refuse();
                        continue;
                    }
                    let shared = self.shared.clone();
                    let count = self.connections.clone();
                    count.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(async move {
                        shared.monitor.connection(true);
                        handle_incoming(incoming, &shared).await;
                        shared.monitor.connection(false);
                        count.fetch_sub(1, Ordering::Relaxed);
                    });
                }
            }
        }
        if let Some(task) = drops {
            task.abort();
        }
        info!("shutting down: kicking every client");
        self.endpoint.set_server_config(None);
        let _ = self.shared.shutdown.send(true);
        // Our own handle on `done` must go for `recv` to end.
        let Server {
            endpoint,
            shared,
            mut done_rx,
            ..
        } = self;
        drop(shared);
        let finished = tokio::time::timeout(Duration::from_millis(1500), done_rx.recv())
            .await
            .is_ok();
        if !finished {
            warn!("some connections did not finish closing in time");
        }
        endpoint.close(0u8.into(), &close_reason(&KickReason::ServerShutdown));
        let _ = tokio::time::timeout(Duration::from_millis(300), endpoint.wait_idle()).await;
        info!("shut down");
    }
}

/// Reads the first framed message (the hello), refusing lengths above
/// [`MAX_HELLO`] before reading them. Returns it and the framer holding
/// whatever followed it.
async fn read_hello(recv: &mut quinn::RecvStream) -> Result<(Vec<u8>, StreamFramer), String> {
    let mut framer = StreamFramer::default();
    let mut head: Vec<u8> = Vec::with_capacity(4);
    let mut buf = [0u8; 2048];
    loop {
        let n = match recv.read(&mut buf).await {
            Ok(Some(n)) => n,
            Ok(None) => return Err("stream ended before the hello".into()),
            Err(e) => return Err(format!("stream failed before the hello: {e}")),
        };
        if head.len() < 4 {
            let take = (4 - head.len()).min(n);
            head.extend_from_slice(&buf[..take]);
            if head.len() == 4 {
                let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
                if len > MAX_HELLO {
                    return Err(format!(
                        "hello of {len} bytes exceeds the limit of {MAX_HELLO}"
                    ));
                }
            }
        }
        framer.push(&buf[..n]);
        match framer.next_message() {
            Ok(Some(m)) => return Ok((m, framer)),
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Refuses a connection that has not joined a room: kick on the stream
/// (if there is one), then close with the reason.
async fn refuse(
    connection: &quinn::Connection,
    send: Option<&mut quinn::SendStream>,
    reason: KickReason,
) {
    info!("refused: {reason}");
    match send {
        Some(send) => {
            let msg = encode_server_reliable(&ServerReliable::Kick(reason.clone()));
            let _ = send.write_all(&StreamFramer::frame(&msg)).await;
            close_after(connection, send, &reason).await;
        }
        None => close_now(connection, &reason),
    }
}

async fn handle_incoming<R: NetRules>(incoming: quinn::Incoming, shared: &Arc<Shared<R>>) {
    let conn: ConnId = shared.next_conn.fetch_add(1, Ordering::Relaxed);
    let span = info_span!("conn", id = conn, remote = %incoming.remote_address());
    handle_connection(conn, incoming, shared)
        .instrument(span)
        .await;
}

async fn handle_connection<R: NetRules>(
    conn: ConnId,
    incoming: quinn::Incoming,
    shared: &Arc<Shared<R>>,
) {
    let _done = shared.done.clone();
    let mut shutdown = shared.shutdown.subscribe();
    let deadline = Instant::now() + shared.hello_timeout;
    let connection = match tokio::time::timeout_at(deadline, incoming).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            debug!("handshake failed: {e}");
            shared.monitor.refused("handshake_failed");
            return;
        }
        Err(_) => {
            info!("QUIC handshake not finished in time");
            shared.monitor.refused("handshake_timeout");
            return;
        }
    };
    debug!("connected");
    // The hello: one stream, one framed message, in time.
    let opened = tokio::select! {
        r = tokio::time::timeout_at(deadline, async {
            let (send, mut recv) = connection.accept_bi().await.map_err(|e| (None, e.to_string()))?;
            match read_hello(&mut recv).await {
                Ok((hello, framer)) => Ok((send, recv, hello, framer)),
                Err(e) => Err((Some(send), e)),
            }
        }) => r,
        _ = shutting_down(&mut shutdown) => {
            refuse(&connection, None, KickReason::ServerShutdown).await;
            return;
        }
    };
    let (mut send, recv, hello, framer) = match opened {
        Ok(Ok(x)) => x,
        Ok(Err((send, e))) => {
            shared.monitor.refused("bad_hello");
            let mut send = send;
            refuse(&connection, send.as_mut(), KickReason::BadMessage(e)).await;
            return;
        }
        Err(_) => {
            shared.monitor.refused("hello_timeout");
            refuse(&connection, None, KickReason::HandshakeTimeout).await;
            return;
        }
    };
    let room_name = match decode_client_reliable(&hello) {
        Ok(ClientReliable::Hello(h)) => h.room,
        Ok(_) => {
            shared.monitor.refused("bad_hello");
            let reason = KickReason::BadMessage("the first message must be a hello".into());
            refuse(&connection, Some(&mut send), reason).await;
            return;
        }
        Err(e) => {
            shared.monitor.refused("bad_hello");
            refuse(
                &connection,
                Some(&mut send),
                KickReason::BadMessage(e.to_string()),
            )
            .await;
            return;
        }
    };
    let (writer_tx, writer_rx) = mpsc::channel(WRITER_QUEUE);
    let peer = Peer {
        connection: connection.clone(),
        writer: writer_tx,
    };
    let room = match join_room(shared, &room_name, conn, peer, hello) {
        Ok(tx) => tx,
        Err(reason) => {
            let what = match reason {
                KickReason::Overloaded => "overloaded",
                _ => "room_refused",
            };
            shared.monitor.refused(what);
            refuse(&connection, Some(&mut send), reason).await;
            return;
        }
    };
    tokio::spawn(
        writer(
            connection.clone(),
            send,
            writer_rx,
            shared.monitor.clone(),
            shared.done.clone(),
        )
        .instrument(tracing::Span::current()),
    );
    forward(conn, &connection, recv, framer, &room, shared.base).await;
    let _ = room.send(RoomCmd::Gone { conn }).await;
    debug!("connection over");
}

/// Hands a connection to its room, creating the room if needed.
fn join_room<R: NetRules>(
    shared: &Arc<Shared<R>>,
    name: &str,
    conn: ConnId,
    peer: Peer,
    hello: Vec<u8>,
) -> Result<mpsc::Sender<RoomCmd>, KickReason> {
    if *shared.shutdown.borrow() {
        return Err(KickReason::ServerShutdown);
    }
    if shared.shedding() {
        return Err(KickReason::Overloaded);
    }
    let mut rooms = shared.rooms();
    let tx = match rooms.get(name) {
        Some(r) => r.tx.clone(),
        None => {
            if rooms.len() >= shared.max_rooms {
                return Err(KickReason::TooManyRooms);
            }
            let (tx, rx) = mpsc::channel(ROOM_QUEUE);
            let mut config = shared.room.clone();
            let n = shared.rooms_created.fetch_add(1, Ordering::Relaxed);
            config.seed = config
                .seed
                .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let span = info_span!("room", name = %name);
            let task_shared = shared.clone();
            let done = shared.done.clone();
            let room_name = name.to_string();
            tokio::spawn(
                async move {
                    room_task::run(room_name, task_shared, rx, config).await;
                    drop(done);
                }
                .instrument(span),
            );
            rooms.insert(name.to_string(), RoomEntry { tx: tx.clone() });
            tx
        }
    };
    // Queued under the registry lock: a room closing for idleness checks
    // its queue under the same lock.
    tx.try_send(RoomCmd::Join { conn, peer, hello })
        .map_err(|_| KickReason::RoomClosed("room is too busy to take a join".into()))?;
    Ok(tx)
}

/// Forwards a joined connection's stream messages and datagrams to its
/// room until the connection ends.
async fn forward(
    conn: ConnId,
    connection: &quinn::Connection,
    mut recv: quinn::RecvStream,
    mut framer: StreamFramer,
    room: &mpsc::Sender<RoomCmd>,
    base: Instant,
) {
    let mut buf = vec![0u8; 64 << 10];
    let mut stream_open = true;
    loop {
        // Messages already framed go first (the hello may have company).
        loop {
            match framer.next_message() {
                Ok(Some(bytes)) => {
                    if room.send(RoomCmd::Reliable { conn, bytes }).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let reason = KickReason::BadMessage(e.to_string());
                    let _ = room.send(RoomCmd::Kick { conn, reason }).await;
                    // Wait for the room's close.
                    connection.closed().await;
                    return;
                }
            }
        }
        tokio::select! {
            r = recv.read(&mut buf), if stream_open => match r {
                Ok(Some(n)) => framer.push(&buf[..n]),
                // The client finished its side (a leave was sent before).
                Ok(None) => stream_open = false,
                Err(_) => return,
            },
            d = connection.read_datagram() => match d {
                Ok(bytes) => {
                    let at = micros(base);
                    if let Err(e) = room.try_send(RoomCmd::Datagram { conn, bytes, at }) {
                        match e {
                            mpsc::error::TrySendError::Full(_) => {
                                metrics::counter!(crate::monitor::names::QUEUE_DROPS).increment(1);
                            }
                            mpsc::error::TrySendError::Closed(_) => return,
                        }
                    }
                }
                Err(_) => return,
            },
        }
    }
}

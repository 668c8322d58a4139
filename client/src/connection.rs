//! The client's IO shell: one QUIC connection, one reliable stream, the
//! session driven on a tokio task.

use crate::conditioner::{conditioned_endpoint, ConditionedSocket, ConditionerConfig};
use crate::quic::{client_config, CertPin, TlsError, SERVER_NAME};
use crate::NetRules;
use bitroom_protocol::{
    decode_server_reliable, ClientConfig, ClientEvent, ClientSession, ClientStats, ClientTransmit,
    CodecError, KickReason, Micros, ServerReliable, StreamFramer, Welcome,
};
use bitroom_sim::game::{Game, GameSnapshot, PlayerInput};
use bytes::Bytes;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, info_span, warn, Instrument};

/// Chooses the player's input once per tick from the game as the client
/// sees it (predicted, or confirmed with `predict: false`) and its slot.
pub type InputFn<R> = Box<dyn FnMut(&Game<R>, u8) -> PlayerInput + Send>;

/// How to connect.
pub struct ConnectOptions<R: NetRules> {
    /// The rules (and scene) — must match the server's.
    pub rules: R,
    /// How to trust the server's certificate.
    pub pin: CertPin,
    /// Display name.
    pub name: String,
    /// Watch only.
    pub spectator: bool,
    /// Predict ahead of the server (otherwise show the confirmed game).
    pub predict: bool,
    /// A token from an earlier welcome: reclaim that slot.
    pub reconnect: Option<u64>,
    /// An endpoint to share (many bots on one socket); default: a new one.
    pub endpoint: Option<quinn::Endpoint>,
    /// Run a new endpoint's socket through a link conditioner.
    pub conditioner: Option<ConditionerConfig>,
    /// Per-tick input generator (bots); without it, inputs come from
    /// [`ClientHandle::set_input`].
    pub input: Option<InputFn<R>>,
    /// How long to wait for the QUIC handshake and the server's welcome.
    pub timeout: Duration,
}

impl<R: NetRules> ConnectOptions<R> {
    /// Defaults: a predicting player named "player", 5 s timeout.
    pub fn new(rules: R, pin: CertPin) -> ConnectOptions<R> {
        ConnectOptions {
            rules,
            pin,
            name: "player".into(),
            spectator: false,
            predict: true,
            reconnect: None,
            endpoint: None,
            conditioner: None,
            input: None,
            timeout: Duration::from_secs(5),
        }
    }
}

impl<R: NetRules> fmt::Debug for ConnectOptions<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("pin", &self.pin)
            .field("name", &self.name)
            .field("spectator", &self.spectator)
            .field("predict", &self.predict)
            .field("reconnect", &self.reconnect.is_some())
            .field("conditioner", &self.conditioner)
            .field("input", &self.input.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Why [`connect`] failed.
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
    /// We closed it ([`ClientHandle::close`]).
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
    /// events, frames.
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

#[derive(Debug)]
enum Command {
    Leave,
    Close,
}

#[derive(Debug)]
struct Shared<R: NetRules> {
    session: Mutex<ClientSession<R>>,
    disconnect: Mutex<Option<Disconnect>>,
    dropped_events: AtomicU64,
}

impl<R: NetRules> Shared<R> {
    fn session(&self) -> MutexGuard<'_, ClientSession<R>> {
        // A panic while holding the lock is a bug in the session; the
        // state is plain data, keep serving it.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A joined session (see the crate docs). Dropping it closes the
/// connection without leaving (the slot is kept for a reconnect for the
/// server's grace period).
pub struct ClientHandle<R: NetRules> {
    shared: Arc<Shared<R>>,
    events: mpsc::Receiver<Event>,
    commands: mpsc::UnboundedSender<Command>,
    connection: quinn::Connection,
    welcome: Welcome,
    task: Option<JoinHandle<()>>,
    socket: Option<Arc<ConditionedSocket>>,
}

impl<R: NetRules> fmt::Debug for ClientHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandle")
            .field("remote", &self.connection.remote_address())
            .field("welcome", &self.welcome)
            .finish()
    }
}

/// Connects to `addr`, joins `room`, and returns once the server has
/// welcomed us (the game snapshot follows: [`Event::Synced`]).
///
/// # Errors
/// Socket, TLS (including a certificate that is not the pinned one),
/// timeout, or the server's refusal with its reason.
pub async fn connect<R: NetRules>(
    addr: SocketAddr,
    room: &str,
    options: ConnectOptions<R>,
) -> Result<ClientHandle<R>, ConnectError> {
    let ConnectOptions {
        rules,
        pin,
        name,
        spectator,
        predict,
        reconnect,
        endpoint,
        conditioner,
        input,
        timeout,
    } = options;
    let bind: SocketAddr = if addr.is_ipv6() {
        "[::]:0".parse().expect("address literal")
    } else {
        "0.0.0.0:0".parse().expect("address literal")
    };
    let (endpoint, socket) = match (endpoint, conditioner) {
        (Some(e), _) => (e, None),
        (None, Some(c)) => {
            let (e, s) = conditioned_endpoint(bind, c)?;
            (e, Some(s))
        }
        (None, None) => (crate::quic::single_connection_endpoint(bind)?, None),
    };
    let config = client_config(pin)?;
    let deadline = Instant::now() + timeout;
    let connecting = endpoint.connect_with(config, addr, SERVER_NAME)?;
    let connection = tokio::time::timeout_at(deadline, connecting)
        .await
        .map_err(|_| ConnectError::Timeout(timeout))??;
    let (send, recv) = tokio::time::timeout_at(deadline, connection.open_bi())
        .await
        .map_err(|_| ConnectError::Timeout(timeout))??;
    let base = Instant::now();
    let session = ClientSession::new(
        rules,
        ClientConfig {
            room: room.into(),
            name,
            spectator,
            reconnect,
            predict,
            ..ClientConfig::default()
        },
        0,
    );
    let shared = Arc::new(Shared {
        session: Mutex::new(session),
        disconnect: Mutex::new(None),
        dropped_events: AtomicU64::new(0),
    });
    let (events_tx, events) = mpsc::channel(4096);
    let (commands, commands_rx) = mpsc::unbounded_channel();
    let (welcomed_tx, welcomed) = oneshot::channel();
    let span = info_span!("client", room = %room, local = ?endpoint.local_addr().ok());
    let driver = Driver {
        shared: shared.clone(),
        connection: connection.clone(),
        base,
        events: events_tx,
        input,
        welcomed: Some(welcomed_tx),
        writer: spawn_writer(send),
        _endpoint: endpoint,
    };
    let task = tokio::spawn(driver.run(recv, commands_rx).instrument(span));
    let welcome = match tokio::time::timeout_at(deadline, welcomed).await {
        Ok(Ok(Ok(w))) => w,
        Ok(Ok(Err(e))) => return Err(e),
        Ok(Err(_)) => {
            return Err(ConnectError::Disconnected(Disconnect::Lost(
                "client task ended".into(),
            )))
        }
        Err(_) => {
            connection.close(0u8.into(), b"timeout");
            return Err(ConnectError::Timeout(timeout));
        }
    };
    Ok(ClientHandle {
        shared,
        events,
        commands,
        connection,
        welcome,
        task: Some(task),
        socket,
    })
}

impl<R: NetRules> ClientHandle<R> {
    /// The welcome: slot, slots, tick rate, reconnect token.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// Our slot (`None`: spectator).
    pub fn slot(&self) -> Option<u8> {
        self.welcome.slot
    }

    /// Present it in [`ConnectOptions::reconnect`] to reclaim this slot.
    pub fn token(&self) -> u64 {
        self.welcome.token
    }

    /// The input from the next tick on (held until changed).
    pub fn set_input(&self, input: PlayerInput) {
        self.shared.session().set_input(input);
    }

    /// Lends the present game (predicted; `None` before the snapshot).
    pub fn with_game<T>(&self, f: impl FnOnce(Option<&Game<R>>) -> T) -> T {
        f(self.shared.session().game())
    }

    /// Lends the confirmed state (the newest tick with the server's inputs).
    pub fn with_confirmed<T>(&self, f: impl FnOnce(Option<&GameSnapshot<R>>) -> T) -> T {
        f(self.shared.session().confirmed())
    }

    /// Whether the session is in a room and in sync.
    pub fn is_playing(&self) -> bool {
        self.shared.session().is_playing()
    }

    /// Counters: RTT, rollbacks, desyncs, bytes.
    pub fn stats(&self) -> HandleStats {
        let session = self.shared.session().stats();
        let q = self.connection.stats();
        HandleStats {
            session,
            path_rtt: self.connection.rtt(),
            udp_tx: q.udp_tx.bytes,
            udp_rx: q.udp_rx.bytes,
            dropped_events: self.shared.dropped_events.load(Ordering::Relaxed),
            quic: q,
        }
    }

    /// The link conditioner's socket, when one is in use.
    pub fn conditioner(&self) -> Option<&Arc<ConditionedSocket>> {
        self.socket.as_ref()
    }

    /// The next event; `None` once the session is over and all events were
    /// read.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// An event if one is waiting.
    pub fn try_event(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }

    /// Why the session ended, once it has.
    pub fn disconnected(&self) -> Option<Disconnect> {
        self.shared
            .disconnect
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Leaves the room for good (the slot is freed) and waits up to `wait`
    /// for the server to confirm.
    pub async fn leave(mut self, wait: Duration) -> Option<Disconnect> {
        let _ = self.commands.send(Command::Leave);
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(wait, &mut task).await.is_err() {
                let _ = self.commands.send(Command::Close);
                let _ = task.await;
            }
        }
        let d = self
            .shared
            .disconnect
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        d
    }

    /// Closes the connection without leaving: the server keeps the slot
    /// for its grace period, so a reconnect with [`ClientHandle::token`]
    /// gets it back.
    pub async fn close(mut self) {
        let _ = self.commands.send(Command::Close);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl<R: NetRules> Drop for ClientHandle<R> {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Close);
    }
}

/// Writes framed messages on the stream; finishes it when the channel
/// closes.
fn spawn_writer(mut send: quinn::SendStream) -> mpsc::UnboundedSender<Vec<u8>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            if send.write_all(&StreamFramer::frame(&msg)).await.is_err() {
                return;
            }
        }
        let _ = send.finish();
    });
    tx
}

/// Reads framed messages from the stream into a channel: `Err` for a
/// framing error (the stream is then useless), end of channel at the end
/// of the stream.
fn spawn_reader(mut recv: quinn::RecvStream) -> mpsc::Receiver<Result<Vec<u8>, CodecError>> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut framer = StreamFramer::default();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match recv.read(&mut buf).await {
                Ok(Some(n)) => framer.push(&buf[..n]),
                Ok(None) | Err(_) => return,
            }
            loop {
                match framer.next_message() {
                    Ok(Some(m)) => {
                        if tx.send(Ok(m)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// Why a connection ended: the kick a bitroom server puts in its close
/// reason, or the transport error.
pub fn disconnect_reason(e: &quinn::ConnectionError) -> Disconnect {
    if let quinn::ConnectionError::ApplicationClosed(c) = e {
        if let Ok(ServerReliable::Kick(r)) = decode_server_reliable(&c.reason) {
            return Disconnect::Kicked(r);
        }
    }
    Disconnect::Lost(e.to_string())
}

struct Driver<R: NetRules> {
    shared: Arc<Shared<R>>,
    connection: quinn::Connection,
    base: Instant,
    events: mpsc::Sender<Event>,
    input: Option<InputFn<R>>,
    welcomed: Option<oneshot::Sender<Result<Welcome, ConnectError>>>,
    writer: mpsc::UnboundedSender<Vec<u8>>,
    /// Keeps a private endpoint (and its socket) alive with the session.
    _endpoint: quinn::Endpoint,
}

impl<R: NetRules> Driver<R> {
    fn now(&self) -> Micros {
        self.base.elapsed().as_micros() as Micros
    }

    async fn run(
        mut self,
        recv: quinn::RecvStream,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        let mut reliable = spawn_reader(recv);
        let mut reliable_open = true;
        let end = loop {
            if let Some(end) = self.flush() {
                break end;
            }
            let timeout = self.shared.session().poll_timeout();
            let deadline = timeout.map(|t| self.base + Duration::from_micros(t));
            tokio::select! {
                cmd = commands.recv() => match cmd {
                    Some(Command::Leave) => self.shared.session().leave(),
                    Some(Command::Close) | None => {
                        self.connection.close(0u8.into(), b"client closed");
                        break Disconnect::Closed;
                    }
                },
                msg = reliable.recv(), if reliable_open => match msg {
                    Some(Ok(bytes)) => {
                        let now = self.now();
                        self.shared.session().handle_reliable(now, &bytes);
                    }
                    Some(Err(e)) => {
                        warn!("bad stream from the server: {e}");
                        self.connection.close(1u8.into(), b"bad stream");
                        break Disconnect::Lost(format!("bad stream from the server: {e}"));
                    }
                    // The server finished its side; the close follows.
                    None => reliable_open = false,
                },
                dg = self.connection.read_datagram() => match dg {
                    Ok(bytes) => {
                        let now = self.now();
                        self.shared.session().handle_datagram(now, &bytes);
                    }
                    Err(e) => {
                        // A kick may still sit in the stream.
                        while let Ok(Ok(bytes)) = reliable.try_recv() {
                            let now = self.now();
                            self.shared.session().handle_reliable(now, &bytes);
                        }
                        if let Some(end) = self.flush() {
                            break end;
                        }
                        break disconnect_reason(&e);
                    }
                },
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    let now = self.now();
                    let mut s = self.shared.session();
                    if let Some(f) = self.input.as_mut() {
                        if let (true, Some(slot)) = (s.is_playing(), s.slot()) {
                            let input = s.game().map(|g| f(g, slot));
                            if let Some(i) = input {
                                s.set_input(i);
                            }
                        }
                    }
                    s.handle_timeout(now);
                }
            }
        };
        debug!("session over: {end}");
        if let Disconnect::Kicked(_) = end {
            // The server closes after its kick; don't linger.
            self.connection.close(0u8.into(), b"kicked");
        }
        if let Some(w) = self.welcomed.take() {
            let e = match &end {
                Disconnect::Kicked(r) => ConnectError::Refused(r.clone()),
                d => ConnectError::Disconnected(d.clone()),
            };
            let _ = w.send(Err(e));
        }
        *self
            .shared
            .disconnect
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(end.clone());
        self.emit(Event::Disconnected(end));
    }

    fn emit(&self, e: Event) {
        if self.events.try_send(e).is_err() {
            self.shared.dropped_events.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sends what the session queued and passes its events on; returns the
    /// end of the session if it closed.
    fn flush(&mut self) -> Option<Disconnect> {
        let mut transmits = Vec::new();
        let mut events = Vec::new();
        {
            let mut s = self.shared.session();
            while let Some(t) = s.poll_transmit() {
                transmits.push(t);
            }
            while let Some(e) = s.poll_event() {
                if let ClientEvent::Welcomed { .. } = e {
                    if let (Some(tx), Some(w)) = (self.welcomed.take(), s.welcome()) {
                        let _ = tx.send(Ok(w.clone()));
                    }
                }
                events.push(e);
            }
        }
        for t in transmits {
            match t {
                ClientTransmit::Reliable(bytes) => {
                    let _ = self.writer.send(bytes);
                }
                ClientTransmit::Datagram(bytes) => {
                    if let Err(e) = self.connection.send_datagram(Bytes::from(bytes)) {
                        debug!("datagram not sent: {e}");
                    }
                }
            }
        }
        let mut end = None;
        for e in events {
            match e {
                ClientEvent::Welcomed { .. } => {}
                ClientEvent::Synced { tick } => self.emit(Event::Synced { tick }),
                ClientEvent::Rollback { depth } => self.emit(Event::Rollback { depth }),
                ClientEvent::Desync { tick, ours, server } => {
                    warn!(tick, "desync: ours {ours:016x}, server {server:016x}");
                    self.emit(Event::Desync { tick, ours, server });
                }
                ClientEvent::Kicked(r) => end = Some(Disconnect::Kicked(r)),
            }
        }
        end
    }
}

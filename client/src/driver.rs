//! The task that drives a session: the sans-IO
//! [`ClientSession`](bitroom_protocol::ClientSession) fed with the
//! connection's datagrams and stream messages and woken for its timers;
//! what it queues goes out, its events go to the handle.

use crate::events::{ConnectError, Disconnect, Event};
use bitroom_protocol::{
    decode_server_reliable, ClientEvent, ClientSession, ClientTransmit, CodecError, Micros,
    NetRules, ServerReliable, StreamFramer, Welcome,
};
use bitroom_sim::game::{Game, Rules};
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{debug, warn};

/// Chooses the player's input once per tick from the game as the client
/// sees it (predicted, or confirmed with `predict: false`) and its slot.
pub type InputFn<R> = Box<dyn FnMut(&Game<R>, u8) -> <R as Rules>::Input + Send>;

/// What the handle asks of the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Leave,
    Close,
}

/// The session and its outcome, shared by the driver and the handle.
#[derive(Debug)]
pub(crate) struct Shared<R: NetRules> {
    pub(crate) session: Mutex<ClientSession<R>>,
    pub(crate) disconnect: Mutex<Option<Disconnect>>,
    pub(crate) dropped_events: AtomicU64,
}

impl<R: NetRules> Shared<R> {
    pub(crate) fn session(&self) -> MutexGuard<'_, ClientSession<R>> {
        // A panic while holding the lock is a bug in the session; the
        // state is plain data, keep serving it.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<R: NetRules> Shared<R> {
    /// A session not yet started.
    pub(crate) fn new(session: ClientSession<R>) -> Shared<R> {
        Shared {
            session: Mutex::new(session),
            disconnect: Mutex::new(None),
            dropped_events: AtomicU64::new(0),
        }
    }

    /// Why the session ended, once it has.
    pub(crate) fn disconnected(&self) -> Option<Disconnect> {
        self.disconnect
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Writes framed messages on the stream; finishes it when the channel
/// closes.
pub(crate) fn spawn_writer(mut send: quinn::SendStream) -> mpsc::UnboundedSender<Vec<u8>> {
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

/// The session's task (see the module docs).
pub(crate) struct Driver<R: NetRules> {
    pub(crate) shared: Arc<Shared<R>>,
    pub(crate) connection: quinn::Connection,
    pub(crate) base: Instant,
    pub(crate) events: mpsc::Sender<Event>,
    pub(crate) input: Option<InputFn<R>>,
    pub(crate) welcomed: Option<oneshot::Sender<Result<Welcome, ConnectError>>>,
    pub(crate) writer: mpsc::UnboundedSender<Vec<u8>>,
    /// Keeps a private endpoint (and its socket) alive with the session.
    pub(crate) _endpoint: quinn::Endpoint,
}

impl<R: NetRules> Driver<R> {
    fn now(&self) -> Micros {
        self.base.elapsed().as_micros() as Micros
    }

    pub(crate) async fn run(
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

//! Browsers without WebTransport: one WebSocket (axum, over the `--web`
//! HTTP listener) carries both channels as binary messages, each tagged
//! with its first byte: [`WS_RELIABLE`] and a reliable message, or
//! [`WS_DATAGRAM`] and a datagram. TCP delivers the datagrams too, in
//! order and late rather than never; the room's resends and the client's
//! redundancy work the same, there is just nothing for them to repair.
//!
//! One task owns the socket's sending half: the room's datagrams reach it
//! through a small queue that drops when full (like a QUIC datagram
//! buffer), the writer's reliable messages through a queue that waits.

use super::{Inbound, Link, LinkError, LinkReader, LinkWriter, WS_DATAGRAM, WS_RELIABLE};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use bitroom_protocol::{KickReason, MAX_DATAGRAM};
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Datagrams queued for the socket before new ones are dropped (about
/// 0.1 s of frames, like the QUIC datagram send buffer).
const DATAGRAM_QUEUE: usize = 16;
/// The largest WebSocket message (and frame) taken from a browser, its
/// tag byte included. The socket buffers a message whole before the
/// server sees it, so this, not the server's budget of unfinished
/// messages, bounds what one socket holds; it is far below the protocol's
/// [`MAX_RELIABLE`](bitroom_protocol::MAX_RELIABLE) and well above what a
/// browser sends (inputs, and a desync report of a packed state, tens of
/// KiB for a thousand bodies). The room's own limit is checked after it.
pub(crate) const WS_MAX_MESSAGE: usize = (1 << 20) + 1;
/// Close code for a kick that is not a clean leave (4000–4999 are the
/// application's; the page shows the reason).
pub(crate) const CLOSE_KICKED: u16 = 4000;
/// Close code for an abort (the server gave up on the client).
pub(crate) const CLOSE_ABORTED: u16 = 4001;

enum Out {
    Reliable(Vec<u8>),
    Flush(oneshot::Sender<()>),
}

/// A browser's WebSocket, as the room sees it.
#[derive(Debug)]
pub(crate) struct WsLink {
    datagrams: mpsc::Sender<Bytes>,
    control: mpsc::UnboundedSender<(u16, String)>,
}

/// Splits an upgraded socket into the link, its reader and its writer,
/// and starts the task that sends on it.
pub(crate) fn split(socket: WebSocket) -> (WsLink, WsReader, WsWriter) {
    let (sink, stream) = socket.split();
    let (datagrams, dg_rx) = mpsc::channel(DATAGRAM_QUEUE);
    let (control, control_rx) = mpsc::unbounded_channel();
    let (reliable, rel_rx) = mpsc::channel(64);
    tokio::spawn(send_task(sink, dg_rx, rel_rx, control_rx));
    (
        WsLink { datagrams, control },
        WsReader {
            stream,
            broken: false,
        },
        WsWriter(reliable),
    )
}

/// Text for a close frame: at most 123 bytes, cut at a character boundary.
fn close_text(s: &str) -> String {
    let mut end = s.len().min(123);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

async fn send_task(
    mut sink: SplitSink<WebSocket, Message>,
    mut datagrams: mpsc::Receiver<Bytes>,
    mut reliable: mpsc::Receiver<Out>,
    mut control: mpsc::UnboundedReceiver<(u16, String)>,
) {
    let tagged = |tag: u8, body: &[u8]| {
        let mut v = Vec::with_capacity(body.len() + 1);
        v.push(tag);
        v.extend_from_slice(body);
        Message::Binary(Bytes::from(v))
    };
    let mut reliable_open = true;
    loop {
        let (code, text) = tokio::select! {
            biased;
            c = control.recv() => match c {
                Some(c) => c,
                None => return,
            },
            m = reliable.recv(), if reliable_open => match m {
                Some(Out::Reliable(msg)) => {
                    if sink.send(tagged(WS_RELIABLE, &msg)).await.is_err() {
                        return;
                    }
                    continue;
                }
                Some(Out::Flush(done)) => {
                    let _ = sink.flush().await;
                    let _ = done.send(());
                    continue;
                }
                None => {
                    reliable_open = false;
                    continue;
                }
            },
            d = datagrams.recv() => match d {
                Some(d) => {
                    if sink.send(tagged(WS_DATAGRAM, &d)).await.is_err() {
                        return;
                    }
                    continue;
                }
                None => return,
            },
        };
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from(close_text(&text)),
        };
        let _ = sink.send(Message::Close(Some(frame))).await;
        let _ = sink.close().await;
        return;
    }
}

impl Link for WsLink {
    fn send_datagram(&self, bytes: Bytes) {
        // Full: dropped, as a QUIC datagram buffer would.
        let _ = self.datagrams.try_send(bytes);
    }

    fn close(&self, reason: &KickReason) {
        let code = match reason {
            KickReason::Left | KickReason::ServerShutdown | KickReason::Replaced => 1000,
            _ => CLOSE_KICKED,
        };
        let _ = self.control.send((code, reason.to_string()));
    }

    fn abort(&self, why: &str) {
        let _ = self.control.send((CLOSE_ABORTED, why.to_string()));
    }
}

/// Reads a browser's WebSocket.
#[derive(Debug)]
pub(crate) struct WsReader {
    stream: SplitStream<WebSocket>,
    /// The client broke the protocol: its reliable messages are ignored.
    broken: bool,
}

impl LinkReader for WsReader {
    // Whole messages: the socket's own limit bounds what it buffers for
    // one (`WS_MAX_MESSAGE`), so `read_body` has nothing to hold back.
    async fn next(&mut self, limit: usize, _read_body: bool) -> Result<Inbound, LinkError> {
        loop {
            let msg = match self.stream.next().await {
                Some(Ok(m)) => m,
                Some(Err(e)) => return Err(LinkError::Lost(e.to_string())),
                None => return Err(LinkError::Lost("socket closed".into())),
            };
            let bytes = match msg {
                Message::Binary(b) => b,
                Message::Close(_) => return Err(LinkError::Lost("closed by the client".into())),
                // Answered by the socket itself.
                Message::Ping(_) | Message::Pong(_) => continue,
                Message::Text(_) => {
                    if self.broken {
                        continue;
                    }
                    self.broken = true;
                    return Err(LinkError::Bad(
                        "text messages are not part of the protocol".into(),
                    ));
                }
            };
            match bytes.first() {
                Some(&WS_DATAGRAM) => {
                    // Oversized datagrams never reach a room (the socket's
                    // own limit is the reliable one, megabytes).
                    if bytes.len() - 1 <= MAX_DATAGRAM {
                        return Ok(Inbound::Datagram(bytes.slice(1..)));
                    }
                }
                Some(&WS_RELIABLE) if !self.broken => {
                    let len = bytes.len() - 1;
                    if len > limit {
                        self.broken = true;
                        return Err(LinkError::Bad(format!(
                            "message of {len} bytes exceeds the limit of {limit}"
                        )));
                    }
                    return Ok(Inbound::Reliable(bytes[1..].to_vec()));
                }
                Some(&WS_RELIABLE) => {}
                _ => {
                    if !self.broken {
                        self.broken = true;
                        return Err(LinkError::Bad("unknown websocket message tag".into()));
                    }
                }
            }
        }
    }

    fn stop_reliable(&mut self) {
        self.broken = true;
    }
}

/// Writes reliable messages to a browser's WebSocket.
#[derive(Debug)]
pub(crate) struct WsWriter(mpsc::Sender<Out>);

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Out::Reliable(m) => write!(f, "Reliable({} bytes)", m.len()),
            Out::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl LinkWriter for WsWriter {
    async fn send(&mut self, msg: &[u8]) -> Result<(), LinkError> {
        self.0
            .send(Out::Reliable(msg.to_vec()))
            .await
            .map_err(|_| LinkError::Lost("socket closed".into()))
    }

    async fn finish(&mut self, linger: Duration) {
        // A WebSocket cannot say what the client read; flushing what was
        // queued into the kernel is the closest.
        let (tx, rx) = oneshot::channel();
        if self.0.send(Out::Flush(tx)).await.is_ok() {
            let _ = tokio::time::timeout(linger, rx).await;
        }
    }
}

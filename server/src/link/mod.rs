//! A client's connection, whatever carries it: the seam between the
//! transports and the rest of the server.
//!
//! Every transport gives the server the same three things, and nothing
//! past this module knows which one it is talking to, so a room cannot
//! tell a browser from a native client:
//!
//! - a [`Link`]: send a datagram now (or drop it), close with a reason;
//! - a [`LinkReader`]: the client's reliable messages (framed) and its
//!   datagrams, one at a time, with the message size limits checked before
//!   anything is buffered for them;
//! - a [`LinkWriter`]: reliable messages to the client, in order, and a
//!   finish that waits (briefly) until the client has them.
//!
//! The transports:
//!
//! | file | carries | reliable | datagrams |
//! |---|---|---|---|
//! | `quic.rs` | native clients (quinn, ALPN `bitroom/1`) | one bidirectional stream, `u32`-length framed | QUIC datagrams |
//! | `webtransport.rs` | browsers (WebTransport over HTTP/3) | one bidirectional stream, framed the same way | WebTransport datagrams |
//! | `websocket.rs` | browsers without WebTransport | binary messages tagged [`WS_RELIABLE`] | binary messages tagged [`WS_DATAGRAM`] (delivered reliably: TCP) |

pub(crate) mod quic;
pub(crate) mod websocket;
pub(crate) mod webtransport;

use bitroom_protocol::{KickReason, StreamFramer, MAX_DATAGRAM};
use bytes::Bytes;
use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// WebSocket message tag: a reliable message follows.
pub const WS_RELIABLE: u8 = 0;
/// WebSocket message tag: a datagram follows.
pub const WS_DATAGRAM: u8 = 1;

/// Sends to one client and closes it (cheap to share: the room holds one
/// per connection).
pub(crate) trait Link: Send + Sync + fmt::Debug + 'static {
    /// Sends a datagram now, or drops it (full buffers, a closed link):
    /// datagrams are unreliable, and the room resends what matters.
    fn send_datagram(&self, bytes: Bytes);

    /// Closes now; the client learns `reason` as far as the transport can
    /// carry it (native clients decode the kick from the close reason).
    fn close(&self, reason: &KickReason);

    /// Closes now with an error and a plain reason (not a kick).
    fn abort(&self, why: &str);
}

/// What a client sent.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A complete reliable message.
    Reliable(Vec<u8>),
    /// Part of a reliable message arrived (the caller looks at
    /// [`LinkReader::unfinished`] and [`LinkReader::buffered`] to hold it
    /// to its budget and deadline).
    Progress,
    /// A datagram.
    Datagram(Bytes),
    /// The client finished its reliable channel (after a leave); datagrams
    /// may still follow until the link closes.
    ReliableEnd,
}

/// Why reading from a link stopped.
#[derive(Debug)]
pub(crate) enum LinkError {
    /// The client broke the framing or a size limit: kick it with this.
    Bad(String),
    /// The link is gone (closed, reset, timed out).
    Lost(String),
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Bad(m) => write!(f, "bad message: {m}"),
            LinkError::Lost(m) => write!(f, "connection lost: {m}"),
        }
    }
}

/// Receives from one client.
///
/// Byte-stream transports (QUIC, WebTransport) read no further than the
/// message being received: its length prefix, then its body, and the body
/// only when the caller allows it (`read_body`), so the caller can hold a
/// message to the server's budget of unfinished messages and to a
/// deadline (`crate::connection`). The WebSocket transport receives whole
/// messages, bounded by the socket's own message size limit.
pub(crate) trait LinkReader: Send + 'static {
    /// The next thing the client sent. A reliable message longer than
    /// `limit` bytes is [`LinkError::Bad`] before its body is read. With
    /// `read_body` false, the body of a message whose length is known is
    /// not read (datagrams still are). After [`LinkError::Bad`] the
    /// reliable channel is dead; datagrams may still come until
    /// [`LinkError::Lost`].
    fn next(
        &mut self,
        limit: usize,
        read_body: bool,
    ) -> impl Future<Output = Result<Inbound, LinkError>> + Send;

    /// The declared length of the reliable message being received, once
    /// its length prefix is complete and until its last byte arrives
    /// (`None` for transports that deliver whole messages).
    fn unfinished(&self) -> Option<usize> {
        None
    }

    /// Bytes received of reliable messages not yet returned.
    fn buffered(&self) -> usize {
        0
    }

    /// Stops reading reliable messages and releases what was buffered of
    /// one (the connection is being closed).
    fn stop_reliable(&mut self);

    /// Drops the datagrams already received (without waiting for more);
    /// returns how many.
    fn drop_received_datagrams(&mut self) -> impl Future<Output = u64> + Send {
        std::future::ready(0)
    }
}

/// Sends reliable messages to one client.
pub(crate) trait LinkWriter: Send + 'static {
    /// Sends one message (unframed: the transport frames it), in order.
    ///
    /// # Errors
    /// The link is gone.
    fn send(&mut self, msg: &[u8]) -> impl Future<Output = Result<(), LinkError>> + Send;

    /// Ends the reliable channel and waits, at most `linger`, until the
    /// client has read everything sent.
    fn finish(&mut self, linger: Duration) -> impl Future<Output = ()> + Send;
}

/// Reliable messages from a byte stream (a QUIC or WebTransport stream),
/// each a `u32` LE length and that many bytes. It reads no further than
/// the message being received (its prefix, then its body), so it holds at
/// most one message; the length is checked against the caller's limit as
/// soon as it has arrived, before a byte of the body is read.
#[derive(Debug)]
pub(crate) struct FramedReader<S> {
    stream: S,
    framer: StreamFramer,
    open: bool,
    buf: Box<[u8]>,
}

impl<S: AsyncRead + Unpin + Send> FramedReader<S> {
    pub(crate) fn new(stream: S) -> FramedReader<S> {
        FramedReader {
            stream,
            framer: StreamFramer::default(),
            open: true,
            buf: vec![0u8; 64 << 10].into_boxed_slice(),
        }
    }

    /// See [`LinkReader::stop_reliable`].
    pub(crate) fn stop(&mut self) {
        self.open = false;
        self.framer = StreamFramer::default();
    }

    /// See [`LinkReader::unfinished`].
    pub(crate) fn unfinished(&self) -> Option<usize> {
        self.framer.unfinished()
    }

    /// See [`LinkReader::buffered`].
    pub(crate) fn buffered(&self) -> usize {
        self.framer.buffered()
    }

    /// Whether a read is wanted now: the stream is open, and the body of a
    /// message whose length is known is read only with `read_body`.
    pub(crate) fn wants_read(&self, read_body: bool) -> bool {
        self.open && (read_body || self.framer.unfinished().is_none())
    }

    /// A complete message, [`Inbound::Progress`] after a read that did not
    /// finish one, or `Ok(None)` once the stream has ended (or broke the
    /// framing before). Cancel-safe: the framer is fed only after a read
    /// completed, and the stream's reads lose nothing when dropped.
    pub(crate) async fn next(&mut self, limit: usize) -> Result<Option<Inbound>, LinkError> {
        if !self.open {
            return Ok(None);
        }
        self.framer.set_limit(limit);
        match self.framer.next_message() {
            Ok(Some(m)) => return Ok(Some(Inbound::Reliable(m))),
            Ok(None) => {}
            Err(e) => {
                self.stop();
                return Err(LinkError::Bad(e.to_string()));
            }
        }
        // No further than the message being received.
        let want = match self.framer.unfinished() {
            Some(len) => (4 + len - self.framer.buffered()).min(self.buf.len()),
            None => 4usize.saturating_sub(self.framer.buffered()).max(1),
        };
        match self.stream.read(&mut self.buf[..want]).await {
            Ok(0) => {
                self.open = false;
                Ok(None)
            }
            Ok(n) => {
                self.framer.push(&self.buf[..n]);
                match self.framer.next_message() {
                    Ok(Some(m)) => Ok(Some(Inbound::Reliable(m))),
                    Ok(None) => Ok(Some(Inbound::Progress)),
                    Err(e) => {
                        self.stop();
                        Err(LinkError::Bad(e.to_string()))
                    }
                }
            }
            Err(e) => {
                self.open = false;
                Err(LinkError::Lost(e.to_string()))
            }
        }
    }
}

/// Whether a datagram from a client is within the protocol's bound (larger
/// ones are dropped before they reach a room).
pub(crate) fn datagram_fits(bytes: &[u8]) -> bool {
    bytes.len() <= MAX_DATAGRAM
}

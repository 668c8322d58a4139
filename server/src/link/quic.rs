//! Native clients: a quinn connection (ALPN `bitroom/1`), its one
//! bidirectional stream for reliable messages and QUIC datagrams.

use super::{FramedReader, Inbound, Link, LinkError, LinkReader, LinkWriter};
use crate::writer::close_reason;
use bitroom_protocol::{KickReason, StreamFramer};
use bytes::Bytes;
use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tracing::warn;

/// A native client's connection.
#[derive(Debug)]
pub(crate) struct QuicLink(pub(crate) quinn::Connection);

/// Close code of a clean close (left, shutdown, replaced); 1 otherwise.
pub(crate) fn close_code(reason: &KickReason) -> u8 {
    match reason {
        KickReason::Left | KickReason::ServerShutdown | KickReason::Replaced => 0,
        _ => 1,
    }
}

impl Link for QuicLink {
    fn send_datagram(&self, bytes: Bytes) {
        match self.0.send_datagram(bytes) {
            Ok(()) | Err(quinn::SendDatagramError::ConnectionLost(_)) => {}
            Err(e) => warn!("datagram not sent: {e}"),
        }
    }

    fn close(&self, reason: &KickReason) {
        self.0
            .close(close_code(reason).into(), &close_reason(reason));
    }

    fn abort(&self, why: &str) {
        self.0.close(1u8.into(), why.as_bytes());
    }
}

/// A QUIC connection that carries datagrams: a native client's quinn
/// connection or a browser's WebTransport session. The two transports
/// differ only here and in how a connection is opened and closed; the
/// reader and writer below serve both.
pub(crate) trait DatagramConnection: fmt::Debug + Send + Sync + 'static {
    /// The next datagram, or why the connection is gone. Cancel-safe.
    fn read_datagram(&self) -> impl Future<Output = Result<Bytes, String>> + Send;
}

impl DatagramConnection for quinn::Connection {
    async fn read_datagram(&self) -> Result<Bytes, String> {
        quinn::Connection::read_datagram(self)
            .await
            .map_err(|e| e.to_string())
    }
}

/// A QUIC send stream: quinn's or WebTransport's.
pub(crate) trait QuicSendStream: AsyncWrite + Unpin + Send + fmt::Debug + 'static {
    /// Ends the stream (nothing more is written).
    fn end(&mut self);
    /// Resolves once the peer has read everything or stopped the stream.
    fn peer_done(&self) -> impl Future<Output = ()> + Send;
}

impl QuicSendStream for quinn::SendStream {
    fn end(&mut self) {
        let _ = self.finish();
    }

    async fn peer_done(&self) {
        let _ = self.stopped().await;
    }
}

/// Reads a client's framed stream and its datagrams (both QUIC transports).
#[derive(Debug)]
pub(crate) struct QuicReader<C, R> {
    pub(crate) connection: C,
    pub(crate) stream: FramedReader<R>,
}

impl<C, R> LinkReader for QuicReader<C, R>
where
    C: DatagramConnection,
    R: AsyncRead + Unpin + Send + 'static,
{
    async fn next(&mut self, limit: usize, read_body: bool) -> Result<Inbound, LinkError> {
        // Both branches are cancel-safe (see [`FramedReader::next`]).
        tokio::select! {
            r = self.stream.next(limit), if self.stream.wants_read(read_body) => match r {
                Ok(Some(inbound)) => Ok(inbound),
                Ok(None) => Ok(Inbound::ReliableEnd),
                Err(e) => Err(e),
            },
            d = self.connection.read_datagram() => d.map(Inbound::Datagram).map_err(LinkError::Lost),
        }
    }

    fn stop_reliable(&mut self) {
        self.stream.stop();
    }

    fn unfinished(&self) -> Option<usize> {
        self.stream.unfinished()
    }

    fn buffered(&self) -> usize {
        self.stream.buffered()
    }

    async fn drop_received_datagrams(&mut self) -> u64 {
        let mut n = 0;
        while let Ok(Ok(_)) =
            tokio::time::timeout(Duration::ZERO, self.connection.read_datagram()).await
        {
            n += 1;
        }
        n
    }
}

/// Writes a client's framed stream (both QUIC transports).
#[derive(Debug)]
pub(crate) struct QuicWriter<S>(pub(crate) S);

impl<S: QuicSendStream> LinkWriter for QuicWriter<S> {
    async fn send(&mut self, msg: &[u8]) -> Result<(), LinkError> {
        self.0
            .write_all(&StreamFramer::frame(msg))
            .await
            .map_err(|e| LinkError::Lost(e.to_string()))
    }

    async fn finish(&mut self, linger: Duration) {
        self.0.end();
        let _ = tokio::time::timeout(linger, self.0.peer_done()).await;
    }
}

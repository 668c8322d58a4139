//! Native clients: a quinn connection (ALPN `bitroom/1`), its one
//! bidirectional stream for reliable messages and QUIC datagrams.

use super::{FramedReader, Inbound, Link, LinkError, LinkReader, LinkWriter};
use crate::writer::close_reason;
use bitroom_protocol::{KickReason, StreamFramer};
use bytes::Bytes;
use std::time::Duration;
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

/// Reads a native client's stream and datagrams.
#[derive(Debug)]
pub(crate) struct QuicReader {
    pub(crate) connection: quinn::Connection,
    pub(crate) stream: FramedReader<quinn::RecvStream>,
}

impl LinkReader for QuicReader {
    async fn next(&mut self, limit: usize, read_body: bool) -> Result<Inbound, LinkError> {
        // Both branches are cancel-safe (see [`FramedReader::next`]).
        tokio::select! {
            r = self.stream.next(limit), if self.stream.wants_read(read_body) => match r {
                Ok(Some(inbound)) => Ok(inbound),
                Ok(None) => Ok(Inbound::ReliableEnd),
                Err(e) => Err(e),
            },
            d = self.connection.read_datagram() => match d {
                Ok(bytes) => Ok(Inbound::Datagram(bytes)),
                Err(e) => Err(LinkError::Lost(e.to_string())),
            },
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

/// Writes a native client's stream.
#[derive(Debug)]
pub(crate) struct QuicWriter(pub(crate) quinn::SendStream);

impl LinkWriter for QuicWriter {
    async fn send(&mut self, msg: &[u8]) -> Result<(), LinkError> {
        self.0
            .write_all(&StreamFramer::frame(msg))
            .await
            .map_err(|e| LinkError::Lost(e.to_string()))
    }

    async fn finish(&mut self, linger: Duration) {
        let _ = self.0.finish();
        let _ = tokio::time::timeout(linger, self.0.stopped()).await;
    }
}

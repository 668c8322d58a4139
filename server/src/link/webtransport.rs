//! Browsers with WebTransport (HTTP/3 over QUIC, `web-transport-quinn` on
//! the server's quinn): one bidirectional stream opened by the page,
//! framed like the native stream, and WebTransport datagrams.

use super::{FramedReader, Inbound, Link, LinkError, LinkReader, LinkWriter};
use bitroom_protocol::{KickReason, StreamFramer};
use bytes::Bytes;
use std::time::Duration;
use web_transport_quinn::{RecvStream, SendStream, Session};

/// A browser's WebTransport session.
#[derive(Debug)]
pub(crate) struct WtLink(pub(crate) Session);

impl Link for WtLink {
    fn send_datagram(&self, bytes: Bytes) {
        // Errors: the session is gone, or the datagram is too large for
        // the path; either way it is dropped, as on the native path.
        let _ = self.0.send_datagram(bytes);
    }

    fn close(&self, reason: &KickReason) {
        // The page reads the reason as text (`WebTransport.closed`); the
        // kick itself went on the stream first when there was one.
        let code = u32::from(super::quic::close_code(reason));
        self.0.close(code, reason.to_string().as_bytes());
    }

    fn abort(&self, why: &str) {
        self.0.close(1, why.as_bytes());
    }
}

/// Reads a browser's stream and datagrams.
#[derive(Debug)]
pub(crate) struct WtReader {
    pub(crate) session: Session,
    pub(crate) stream: FramedReader<RecvStream>,
}

impl LinkReader for WtReader {
    async fn next(&mut self, limit: usize, read_body: bool) -> Result<Inbound, LinkError> {
        // Both branches are cancel-safe (see [`FramedReader::next`]).
        tokio::select! {
            r = self.stream.next(limit), if self.stream.wants_read(read_body) => match r {
                Ok(Some(inbound)) => Ok(inbound),
                Ok(None) => Ok(Inbound::ReliableEnd),
                Err(e) => Err(e),
            },
            d = self.session.read_datagram() => match d {
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
            tokio::time::timeout(Duration::ZERO, self.session.read_datagram()).await
        {
            n += 1;
        }
        n
    }
}

/// Writes a browser's stream.
#[derive(Debug)]
pub(crate) struct WtWriter(pub(crate) SendStream);

impl LinkWriter for WtWriter {
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

//! Browsers with WebTransport (HTTP/3 over QUIC, `web-transport-quinn` on
//! the server's quinn): one bidirectional stream opened by the page,
//! framed like the native stream, and WebTransport datagrams.

use super::quic::{DatagramConnection, QuicReader, QuicSendStream};
use super::Link;
use bitroom_protocol::KickReason;
use bytes::Bytes;
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

impl DatagramConnection for Session {
    async fn read_datagram(&self) -> Result<Bytes, String> {
        Session::read_datagram(self)
            .await
            .map_err(|e| e.to_string())
    }
}

impl QuicSendStream for SendStream {
    fn end(&mut self) {
        let _ = self.finish();
    }

    async fn peer_done(&self) {
        let _ = self.stopped().await;
    }
}

/// Reads a browser's stream and datagrams.
pub(crate) type WtReader = QuicReader<Session, RecvStream>;

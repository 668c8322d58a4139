//! A hostile client for attack tests: bitroom's wire protocol at the
//! lowest level, over real quinn on loopback.
//!
//! [`RawPeer`] is one QUIC connection (certificate pinned as real clients
//! do, from any loopback source address) that sends whatever a test says:
//! raw datagrams, as many as it likes, before or after the hello; any
//! number of streams ([`RawPeer::open_stream`], which waits for the
//! server's stream credit like any QUIC peer); and on a stream
//! ([`RawStream`]) framed messages, lone length prefixes that lie, partial
//! messages and filler. It reads what the server answers: framed
//! [`ServerReliable`] messages, datagrams, and the close reason.
//!
//! Nothing here checks the server's answers; the tests do. Every wait has
//! a limit, so a test against a server that misbehaves fails instead of
//! hanging.

use bitroom_client::{disconnect_reason, Disconnect};
use bitroom_protocol::{
    decode_server_datagram, decode_server_reliable, encode_client_datagram, encode_client_reliable,
    ClientDatagram, ClientReliable, FrameAck, Hello, ServerDatagram, ServerReliable, StreamFramer,
    Welcome, PROTOCOL_VERSION,
};
use bitroom_sim::game::sandbox::PlayerInput;
use bitroom_transport::{client_config, CertPin, SERVER_NAME};
use std::net::SocketAddr;
use std::time::Duration;

/// A hello with every field chosen by the caller; [`hello`] fills in a
/// correct one to start from.
pub fn hello_bytes(h: &Hello) -> Vec<u8> {
    encode_client_reliable(&ClientReliable::Hello(h.clone()))
}

/// A correct player hello for `room` under rules fingerprint `rules`.
pub fn hello(room: &str, rules: u64) -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        rules,
        room: room.into(),
        name: "raw".into(),
        spectator: false,
        reconnect: None,
        token: None,
    }
}

/// An ack-only datagram (what a client sends every tick when it has no
/// inputs): the smallest well-formed datagram.
pub fn ack_datagram() -> Vec<u8> {
    encode_client_datagram(&ClientDatagram::<PlayerInput>::Ack(FrameAck::default()))
}

/// Client endpoints shared by one test's peers, one per source address.
///
/// The attack tests bound the resident memory of the process they share
/// with the server they attack, so their own peers count too, and a quinn
/// client endpoint holds a receive buffer of about 3 MiB (1472-byte
/// payloads × 64 GRO segments × a batch of 32). Whether a dropped peer's
/// buffer goes back to the system depends on glibc's mmap threshold,
/// which earlier tests in the process raise: run one at a time
/// (`--test-threads 1`), eight refused hellos, each from a fresh
/// endpoint, grew the process by 23 MiB, all of it the peers' buffers
/// (2.3 MiB when the test ran alone). Peers from a pool share one
/// endpoint per source address (the server's limits are per address), so
/// their buffers cost a few MiB whatever ran before.
#[derive(Debug, Default)]
pub struct PeerPool {
    endpoints: std::sync::Mutex<Vec<(SocketAddr, quinn::Endpoint)>>,
}

impl PeerPool {
    /// Connects from `bind` (e.g. `127.0.0.2:0`), on the pool's endpoint
    /// for that address.
    ///
    /// # Errors
    /// As [`RawPeer::connect_from`].
    pub async fn connect_from(
        &self,
        bind: SocketAddr,
        server: SocketAddr,
        pin: CertPin,
    ) -> Result<RawPeer, String> {
        let endpoint = {
            let mut endpoints = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
            match endpoints.iter().find(|(b, _)| *b == bind) {
                Some((_, e)) => e.clone(),
                None => {
                    let e = quinn::Endpoint::client(bind).map_err(|e| e.to_string())?;
                    endpoints.push((bind, e.clone()));
                    e
                }
            }
        };
        RawPeer::connect_on(endpoint, server, pin).await
    }
}

/// One hostile QUIC connection.
#[derive(Debug)]
pub struct RawPeer {
    /// The connection (for anything the helpers do not cover).
    pub connection: quinn::Connection,
    _endpoint: quinn::Endpoint,
}

impl RawPeer {
    /// Connects from `127.0.0.1` (a port of its own), pinning the
    /// server's certificate.
    ///
    /// # Errors
    /// The handshake failed or was refused (the message says why).
    pub async fn connect(server: SocketAddr, pin: CertPin) -> Result<RawPeer, String> {
        RawPeer::connect_from("127.0.0.1:0".parse().expect("address"), server, pin).await
    }

    /// Connects from `bind`: another loopback address (`127.0.0.2:0`, …)
    /// is another source address to the server.
    ///
    /// # Errors
    /// The socket could not be bound, or the handshake failed or was
    /// refused.
    pub async fn connect_from(
        bind: SocketAddr,
        server: SocketAddr,
        pin: CertPin,
    ) -> Result<RawPeer, String> {
        let endpoint = quinn::Endpoint::client(bind).map_err(|e| e.to_string())?;
        RawPeer::connect_on(endpoint, server, pin).await
    }

    /// Connects from an existing client endpoint (see [`PeerPool`]).
    ///
    /// # Errors
    /// The handshake failed or was refused.
    pub async fn connect_on(
        endpoint: quinn::Endpoint,
        server: SocketAddr,
        pin: CertPin,
    ) -> Result<RawPeer, String> {
        let config = client_config(pin).map_err(|e| e.to_string())?;
        let connecting = endpoint
            .connect_with(config, server, SERVER_NAME)
            .map_err(|e| e.to_string())?;
        let connection = tokio::time::timeout(Duration::from_secs(10), connecting)
            .await
            .map_err(|_| "handshake timed out".to_string())?
            .map_err(|e| e.to_string())?;
        Ok(RawPeer {
            connection,
            _endpoint: endpoint,
        })
    }

    /// `n` connections at once, each from its own port; each result says
    /// whether that one got in.
    pub async fn connect_many(
        n: usize,
        server: SocketAddr,
        pin: CertPin,
    ) -> Vec<Result<RawPeer, String>> {
        let tasks: Vec<_> = (0..n)
            .map(|_| tokio::spawn(RawPeer::connect(server, pin)))
            .collect();
        let mut out = Vec::with_capacity(n);
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| Err(e.to_string())));
        }
        out
    }

    /// Opens a bidirectional stream. The server sees it once something is
    /// written; it grants one, so a second waits for credit: `None` when
    /// none came within `limit`.
    pub async fn open_stream(&self, limit: Duration) -> Option<RawStream> {
        let (send, recv) = tokio::time::timeout(limit, self.connection.open_bi())
            .await
            .ok()?
            .ok()?;
        Some(RawStream {
            send,
            recv,
            framer: StreamFramer::default(),
        })
    }

    /// Opens a unidirectional stream: `false` when the server granted none
    /// within `limit`.
    pub async fn open_uni(&self, limit: Duration) -> bool {
        matches!(
            tokio::time::timeout(limit, self.connection.open_uni()).await,
            Ok(Ok(_))
        )
    }

    /// Sends `count` copies of a datagram, yielding now and then so
    /// quinn's small send buffer drains instead of dropping them; returns
    /// how many were handed to quinn before it refused (a closed
    /// connection).
    pub async fn datagrams(&self, bytes: &[u8], count: usize) -> usize {
        let bytes = bytes::Bytes::copy_from_slice(bytes);
        for i in 0..count {
            if self.connection.send_datagram(bytes.clone()).is_err() {
                return i;
            }
            if i % 32 == 31 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        count
    }

    /// The next datagram from the server, if one comes within `limit`
    /// (undecodable ones are skipped): the sandbox's input type.
    pub async fn next_datagram(&self, limit: Duration) -> Option<ServerDatagram<PlayerInput>> {
        let end = tokio::time::Instant::now() + limit;
        loop {
            let d = tokio::time::timeout_at(end, self.connection.read_datagram())
                .await
                .ok()?
                .ok()?;
            if let Ok(m) = decode_server_datagram(&d) {
                return Some(m);
            }
        }
    }

    /// How the server closed the connection, or `None` if it is still
    /// open after `limit`.
    pub async fn closed(&self, limit: Duration) -> Option<Disconnect> {
        tokio::time::timeout(limit, self.connection.closed())
            .await
            .ok()
            .map(|e| disconnect_reason(&e))
    }

    /// Sends an ack datagram every `every` until the returned task is
    /// aborted or the connection closes: keeps a joined peer looking alive.
    pub fn keep_acking(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let c = self.connection.clone();
        let ack = bytes::Bytes::from(ack_datagram());
        tokio::spawn(async move {
            while c.send_datagram(ack.clone()).is_ok() {
                tokio::time::sleep(every).await;
            }
        })
    }
}

/// One stream of a [`RawPeer`].
#[derive(Debug)]
pub struct RawStream {
    /// Sending half.
    pub send: quinn::SendStream,
    /// Receiving half.
    pub recv: quinn::RecvStream,
    framer: StreamFramer,
}

impl RawStream {
    /// Sends raw bytes; `false` once the server has stopped the stream or
    /// closed the connection.
    pub async fn raw(&mut self, bytes: &[u8]) -> bool {
        self.send.write_all(bytes).await.is_ok()
    }

    /// Sends one message with its true length prefix.
    pub async fn frame(&mut self, msg: &[u8]) -> bool {
        self.raw(&StreamFramer::frame(msg)).await
    }

    /// Sends a length prefix alone: what follows is the test's business
    /// (a lie, a partial body, nothing).
    pub async fn prefix(&mut self, declared: u32) -> bool {
        self.raw(&declared.to_le_bytes()).await
    }

    /// Sends the first `keep` bytes of `msg`'s frame (prefix included) and
    /// no more.
    pub async fn partial(&mut self, msg: &[u8], keep: usize) -> bool {
        let framed = StreamFramer::frame(msg);
        self.raw(&framed[..keep.min(framed.len())]).await
    }

    /// Sends `n` filler bytes (a message body, in 64 KiB writes).
    pub async fn filler(&mut self, n: usize) -> bool {
        let chunk = vec![0u8; 64 << 10];
        let mut left = n;
        while left > 0 {
            let k = left.min(chunk.len());
            if !self.raw(&chunk[..k]).await {
                return false;
            }
            left -= k;
        }
        true
    }

    /// The next message from the server within `limit`; `None` at the end
    /// of the stream, on an undecodable message or after the limit.
    pub async fn next(&mut self, limit: Duration) -> Option<ServerReliable> {
        let end = tokio::time::Instant::now() + limit;
        let mut buf = [0u8; 16 << 10];
        loop {
            if let Ok(Some(m)) = self.framer.next_message() {
                return decode_server_reliable(&m).ok();
            }
            match tokio::time::timeout_at(end, self.recv.read(&mut buf)).await {
                Ok(Ok(Some(n))) => self.framer.push(&buf[..n]),
                _ => return None,
            }
        }
    }

    /// The welcome, or what came instead of it.
    ///
    /// # Errors
    /// The server's other answer (a kick), or `None` for no answer.
    pub async fn welcome(&mut self, limit: Duration) -> Result<Welcome, Option<ServerReliable>> {
        match self.next(limit).await {
            Some(ServerReliable::Welcome(w)) => Ok(w),
            other => Err(other),
        }
    }
}

/// Resident memory of this process (bytes), from `/proc/self/statm`
/// (Linux; `None` elsewhere). The loopback tests run the server in the
/// test process, so this includes what the server holds.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

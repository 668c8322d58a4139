//! Real QUIC on loopback: a server in-process on `127.0.0.1:0`, clients
//! from the client library, and a raw client that can misbehave.

use bitroom_client::{disconnect_reason, Disconnect};
use bitroom_protocol::{
    decode_server_reliable, encode_client_reliable, ClientReliable, Hello, KickReason, NetRules,
    ServerReliable, StreamFramer, PROTOCOL_VERSION,
};
use bitroom_server::monitor::Monitor;
use bitroom_server::tls::Identity;
use bitroom_server::{Server, ServerConfig, ShutdownHandle};
use bitroom_transport::{client_config, CertPin, SERVER_NAME};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// A server running on loopback.
#[derive(Debug)]
pub struct TestServer {
    /// Its address.
    pub addr: SocketAddr,
    /// The pin for its certificate.
    pub pin: CertPin,
    /// Its measurements.
    pub monitor: Arc<Monitor>,
    /// The web side's address, when the configuration has one.
    pub web: Option<SocketAddr>,
    /// Client endpoints for raw peers of this server (see
    /// [`crate::raw::PeerPool`]).
    pub peers: crate::raw::PeerPool,
    stop: ShutdownHandle,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server with `rules`; `tweak` adjusts the configuration.
    pub fn start<R: NetRules>(rules: R, tweak: impl FnOnce(&mut ServerConfig<R>)) -> TestServer {
        let identity = Identity::self_signed().expect("certificate");
        let mut config = ServerConfig::new(
            "127.0.0.1:0".parse().expect("address literal"),
            rules,
            identity,
        );
        // Load shedding off unless a test asks for it: a busy test machine
        // may run a room late, and a refused join would be a flaky failure.
        config.shed_lateness = None;
        tweak(&mut config);
        let server = Server::bind(config).expect("bind loopback");
        let addr = server.local_addr();
        let pin = CertPin::Sha256(server.fingerprint());
        let monitor = server.monitor();
        let web = server.web_addr();
        let stop = server.shutdown_handle();
        let task = tokio::spawn(server.run());
        TestServer {
            addr,
            pin,
            monitor,
            web,
            peers: crate::raw::PeerPool::default(),
            stop,
            task: Some(task),
        }
    }

    /// Shuts the server down and waits for it.
    pub async fn shutdown(&mut self) {
        self.stop.shutdown();
        if let Some(t) = self.task.take() {
            t.await.expect("server task");
        }
    }

    /// A raw peer from `bind` (`127.0.0.2:0`, …: another source
    /// address), on this server's pool of client endpoints.
    ///
    /// # Errors
    /// As [`crate::raw::RawPeer::connect_from`].
    pub async fn peer_from(&self, bind: &str) -> Result<crate::raw::RawPeer, String> {
        let bind = bind.parse().map_err(|e| format!("{bind}: {e}"))?;
        self.peers.connect_from(bind, self.addr, self.pin).await
    }

    /// A raw peer from `127.0.0.1`, on this server's pool.
    ///
    /// # Errors
    /// As [`crate::raw::RawPeer::connect_from`].
    pub async fn peer(&self) -> Result<crate::raw::RawPeer, String> {
        self.peer_from("127.0.0.1:0").await
    }

    /// Ticks stepped over all rooms.
    pub fn ticks(&self) -> u64 {
        self.monitor.snapshot().tick.count
    }
}

/// Polls `cond` every 20 ms until it holds; panics with `what` after
/// `limit` (a guard against hangs, not a timing assertion).
pub async fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let end = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < end,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A hand-driven QUIC client: says whatever the test wants.
#[derive(Debug)]
pub struct RawClient {
    /// The connection.
    pub connection: quinn::Connection,
    /// The reliable stream, sending half.
    pub send: quinn::SendStream,
    /// The reliable stream, receiving half.
    pub recv: quinn::RecvStream,
    _endpoint: quinn::Endpoint,
}

impl RawClient {
    /// Connects and opens the stream (nothing is sent yet).
    pub async fn connect(addr: SocketAddr, pin: CertPin) -> RawClient {
        let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().expect("address literal"))
            .expect("socket");
        let connection = endpoint
            .connect_with(client_config(pin).expect("tls"), addr, SERVER_NAME)
            .expect("connect")
            .await
            .expect("handshake");
        let (send, recv) = connection.open_bi().await.expect("stream");
        RawClient {
            connection,
            send,
            recv,
            _endpoint: endpoint,
        }
    }

    /// A hello with these fields.
    pub fn hello(room: &str, rules: u64, version: u32) -> Vec<u8> {
        encode_client_reliable(&ClientReliable::Hello(Hello {
            version,
            rules,
            room: room.into(),
            name: "raw".into(),
            spectator: false,
            reconnect: None,
            token: None,
        }))
    }

    /// Says a correct hello for `room`.
    pub async fn join(&mut self, room: &str, rules: u64) {
        let hello = RawClient::hello(room, rules, PROTOCOL_VERSION);
        self.send_message(&hello).await;
    }

    /// Sends a framed message.
    pub async fn send_message(&mut self, msg: &[u8]) {
        self.send_raw(&StreamFramer::frame(msg)).await;
    }

    /// Sends raw bytes on the stream (framing is the test's business).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        // The server may already have closed us; that is for the test to see.
        let _ = self.send.write_all(bytes).await;
    }

    /// Reads the next server message from the stream (`None` at its end).
    pub async fn next_message(&mut self, framer: &mut StreamFramer) -> Option<ServerReliable> {
        let mut buf = [0u8; 16 << 10];
        loop {
            if let Ok(Some(m)) = framer.next_message() {
                return decode_server_reliable(&m).ok();
            }
            match self.recv.read(&mut buf).await {
                Ok(Some(n)) => framer.push(&buf[..n]),
                _ => return None,
            }
        }
    }

    /// Waits for the server to close the connection; the kick it gave.
    pub async fn closed(&self, limit: Duration) -> Disconnect {
        match tokio::time::timeout(limit, self.connection.closed()).await {
            Ok(e) => disconnect_reason(&e),
            Err(_) => panic!("the server did not close the connection"),
        }
    }

    /// The kick in the close, or a panic naming what came instead.
    pub async fn kicked(&self, limit: Duration) -> KickReason {
        match self.closed(limit).await {
            Disconnect::Kicked(r) => r,
            other => panic!("expected a kick, got {other:?}"),
        }
    }
}

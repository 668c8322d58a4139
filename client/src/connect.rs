//! [`connect`]: open a QUIC connection (quinn, pinned certificate), say
//! hello, start the session's task, and return a [`ClientHandle`] once the
//! server has welcomed us.

use crate::conditioner::{conditioned_endpoint, ConditionerConfig};
use crate::driver::{spawn_writer, Driver, InputFn, Shared};
use crate::events::{ConnectError, Disconnect};
use crate::handle::ClientHandle;
use bitroom_protocol::{ClientConfig, ClientSession, NetRules, ReconnectSecret};
use bitroom_transport::{client_config, CertPin, SERVER_NAME};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{info_span, Instrument};

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
    /// The secret from an earlier welcome
    /// ([`ClientHandle::reconnect_secret`]): reclaim that slot. On a server
    /// that requires tokens, a reconnect needs a fresh token for the same
    /// user too.
    pub reconnect: Option<ReconnectSecret>,
    /// A connect token's bytes, from the game's backend (servers started
    /// with `--token-key` require one; others ignore it). The text form
    /// decodes with [`bitroom_protocol::token::decode_text`].
    pub token: Option<Vec<u8>>,
    /// An endpoint to share (many bots on one socket); default: a new one.
    pub endpoint: Option<quinn::Endpoint>,
    /// Run a new endpoint's socket through a link conditioner.
    pub conditioner: Option<ConditionerConfig>,
    /// Per-tick input generator (bots); without it, inputs come from
    /// [`ClientHandle::set_input`].
    pub input: Option<InputFn<R>>,
    /// How long to wait for the QUIC handshake and the server's welcome.
    pub timeout: Duration,
    /// Input batches per second (0: one per tick); see
    /// [`ClientConfig::send_rate`].
    pub send_rate: u32,
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
            token: None,
            endpoint: None,
            conditioner: None,
            input: None,
            timeout: Duration::from_secs(5),
            send_rate: 0,
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
            .field("token", &self.token.is_some())
            .field("conditioner", &self.conditioner)
            .field("input", &self.input.is_some())
            .field("timeout", &self.timeout)
            .field("send_rate", &self.send_rate)
            .finish()
    }
}

/// Connects to `addr`, joins `room`, and returns once the server has
/// welcomed us (the game snapshot follows: [`Event::Synced`](crate::Event::Synced)).
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
        token,
        endpoint,
        conditioner,
        input,
        timeout,
        send_rate,
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
        (None, None) => (bitroom_transport::single_connection_endpoint(bind)?, None),
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
            token,
            predict,
            send_rate,
            ..ClientConfig::default()
        },
        0,
    );
    let shared = Arc::new(Shared::new(session));
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
    Ok(ClientHandle::new(
        shared, events, commands, connection, welcome, task, socket,
    ))
}

//! The QUIC settings of both sides: ALPN, transport parameters, and the
//! quinn client and server configurations built from them.

use crate::congestion::FlooredCubicConfig;
use crate::pin::PinVerifier;
use crate::{CertPin, TlsError};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;
use std::time::Duration;

/// Bytes of datagrams quinn may hold while the congestion window is full
/// (see [`transport_config`]).
pub const DATAGRAM_SEND_BUFFER: usize = 2400;

/// ALPN protocol id: both sides must agree on it.
pub const ALPN: &[u8] = b"bitroom/1";

/// ALPN of HTTP/3, which WebTransport runs over (browsers).
pub const ALPN_H3: &[u8] = b"h3";

/// The server name clients put in the TLS handshake (the development
/// certificate is issued for it; pinning ignores names).
pub const SERVER_NAME: &str = "localhost";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Transport settings for both sides: datagrams on (our per-tick
/// traffic) with a small send buffer, a congestion window floor for the
/// tick stream, a 10 s idle timeout, keep-alives every 2 s.
pub fn transport_config() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(Duration::from_secs(10)).expect("10 s fits a VarInt"),
    ))
    .keep_alive_interval(Some(Duration::from_secs(2)))
    .datagram_receive_buffer_size(Some(1 << 20))
    // Datagrams wait in this buffer while the congestion window is full,
    // and a datagram that waits is stale: a tick frame a newer one
    // follows, an input batch the next one repeats. quinn drops the oldest
    // when a new one does not fit, so keep it small: room for one datagram
    // of the largest size (plus quinn's per-datagram accounting), about
    // 100 ms of a 60 Hz stream of small ones. The room resends frames that
    // matter; the next input batch carries the inputs.
    .datagram_send_buffer_size(DATAGRAM_SEND_BUFFER)
    // A window floor for the tick stream (see `congestion`): random loss
    // must not make quinn hold the stream back.
    .congestion_controller_factory(Arc::new(FlooredCubicConfig::default()))
    // Both sides send a datagram every tick, and ACKs ride on those; by
    // default a receiver still sends an ACK-only packet after every second
    // packet it gets when its own datagram is not yet due.
    .ack_frequency_config(Some(ack_frequency()))
    // One bidirectional stream per connection (the reliable channel).
    .max_concurrent_bidi_streams(1u8.into())
    .max_concurrent_uni_streams(0u8.into());
    t
}

/// What we ask the peer (QUIC ACK frequency extension): acknowledge after
/// more than 3 ack-eliciting packets or 50 ms, whichever comes first
/// (quinn asks for at most the RTT, and at least 25 ms). Each side sends
/// a datagram every send interval, which carries any pending ACK, so
/// ACK-only packets are sent only when that interval is longer than the
/// delay: at 30 datagrams a second, on a path shorter than 33 ms.
/// Measured at 50 × 8: non-datagram packets from 12 % to 6 % of the
/// traffic. Loss recovery is unchanged: out-of-order arrivals are still
/// acknowledged at once (reordering threshold 2) and loss probes ask for an
/// immediate ACK.
fn ack_frequency() -> quinn::AckFrequencyConfig {
    let mut a = quinn::AckFrequencyConfig::default();
    a.ack_eliciting_threshold(3u8.into())
        .max_ack_delay(Some(Duration::from_millis(50)));
    a
}

/// Endpoint settings for a client socket that carries one connection: its
/// connection IDs are empty. A server addresses every packet to the
/// client's connection ID; with one connection per socket the client
/// tells its packets apart by address instead, so the 8 bytes quinn uses
/// by default are saved on every packet the server sends (about 4 kbit/s
/// at 60 Hz). Sockets shared by several connections (load clients) keep
/// the default.
pub fn single_connection_endpoint_config() -> quinn::EndpointConfig {
    let mut c = quinn::EndpointConfig::default();
    c.cid_generator(|| Box::new(quinn_proto::RandomConnectionIdGenerator::new(0)));
    c
}

/// A client endpoint on `bind` for one connection
/// ([`single_connection_endpoint_config`]).
///
/// # Errors
/// The socket could not be bound.
pub fn single_connection_endpoint(bind: std::net::SocketAddr) -> std::io::Result<quinn::Endpoint> {
    let runtime = quinn::default_runtime()
        .ok_or_else(|| std::io::Error::other("no tokio runtime for the endpoint"))?;
    let socket = std::net::UdpSocket::bind(bind)?;
    quinn::Endpoint::new(single_connection_endpoint_config(), None, socket, runtime)
}

/// A quinn client configuration that trusts the server per `pin`.
///
/// # Errors
/// rustls refused the settings (should not happen).
pub fn client_config(pin: CertPin) -> Result<quinn::ClientConfig, TlsError> {
    let provider = provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinVerifier { pin, provider }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let quic = QuicClientConfig::try_from(tls).map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    config.transport_config(Arc::new(transport_config()));
    Ok(config)
}

/// A quinn server configuration presenting `chain` with `key`.
///
/// # Errors
/// The key does not match the certificate, or is of an unsupported kind.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<quinn::ServerConfig, TlsError> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = 0;
    let quic = QuicServerConfig::try_from(tls).map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    let mut transport = transport_config();
    // Clients open the one stream; the server opens none.
    transport.max_concurrent_bidi_streams(1u8.into());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// A quinn server configuration for browsers: WebTransport over HTTP/3
/// (ALPN `h3`) with the same datagram, idle and ACK settings as the native
/// path. HTTP/3 needs more streams than our one: the session's CONNECT
/// request and the page's stream (bidirectional), and each side's control
/// and two QPACK streams (unidirectional).
///
/// # Errors
/// The key does not match the certificate, or is of an unsupported kind.
pub fn webtransport_server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<quinn::ServerConfig, TlsError> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    tls.alpn_protocols = vec![ALPN_H3.to_vec()];
    tls.max_early_data_size = 0;
    let quic = QuicServerConfig::try_from(tls).map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    let mut transport = transport_config();
    transport
        .max_concurrent_bidi_streams(2u8.into())
        .max_concurrent_uni_streams(4u8.into());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

//! The QUIC settings of both sides: ALPN, transport parameters, and the
//! quinn client and server configurations built from them.

use crate::pin::PinVerifier;
use crate::{CertPin, TlsError};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;
use std::time::Duration;

/// ALPN protocol id: both sides must agree on it.
pub const ALPN: &[u8] = b"bitroom/1";

/// The server name clients put in the TLS handshake (the development
/// certificate is issued for it; pinning ignores names).
pub const SERVER_NAME: &str = "localhost";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Transport settings for both sides: datagrams on (our per-tick
/// traffic), a 10 s idle timeout, keep-alives every 2 s.
pub fn transport_config() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(Duration::from_secs(10)).expect("10 s fits a VarInt"),
    ))
    .keep_alive_interval(Some(Duration::from_secs(2)))
    .datagram_receive_buffer_size(Some(1 << 20))
    // Datagrams go out before stream data in every packet: a deep send
    // queue on a congested path would starve the reliable stream (a
    // snapshot) and deliver stale frames late. Keep ~0.1 s of frames;
    // quinn drops the oldest when full, and the room resends what matters.
    .datagram_send_buffer_size(16 << 10)
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
/// more than 3 ack-eliciting packets or 25 ms (quinn's default delay, and
/// the most it grants on a short path), whichever comes first. Each side
/// sends a datagram every tick, which carries any pending ACK, so at tick
/// rates above 40 Hz ACK-only packets are sent only when a tick is late.
/// Measured at 50 × 8: non-datagram packets from 12 % to 6 % of the
/// traffic. Loss recovery is unchanged: out-of-order arrivals are still
/// acknowledged at once (reordering threshold 2) and loss probes ask for an
/// immediate ACK.
fn ack_frequency() -> quinn::AckFrequencyConfig {
    let mut a = quinn::AckFrequencyConfig::default();
    a.ack_eliciting_threshold(3u8.into())
        .max_ack_delay(Some(Duration::from_millis(25)));
    a
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

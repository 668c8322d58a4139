//! QUIC and TLS settings shared by the client and the server: the ALPN
//! protocol id, the transport configuration (datagrams on, idle timeout,
//! keep-alive) and certificate pinning.
//!
//! A bitroom server usually runs with a self-signed certificate. Clients
//! trust it by *pinning*: they compare the SHA-256 of the certificate the
//! server presents with a fingerprint they were given (`--cert-sha256 HEX`,
//! or `--cert FILE`, whose fingerprint is computed on load). Skipping the
//! check takes an explicit [`CertPin::Insecure`].

use crate::congestion::FlooredCubicConfig;
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Bytes of datagrams quinn may hold while the congestion window is full
/// (see [`transport_config`]).
pub const DATAGRAM_SEND_BUFFER: usize = 2400;

/// ALPN protocol id: both sides must agree on it.
pub const ALPN: &[u8] = b"bitroom/1";

/// The server name clients put in the TLS handshake (the development
/// certificate is issued for it; pinning ignores names).
pub const SERVER_NAME: &str = "localhost";

/// Largest certificate or key file read from disk.
const MAX_PEM_FILE: u64 = 1 << 20;

/// A TLS or certificate problem.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a usable certificate or key.
    #[error("{path}: {what}")]
    Parse {
        /// The file.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// A fingerprint is not 64 hex digits.
    #[error("certificate fingerprint must be 64 hex digits (SHA-256), got {0:?}")]
    BadFingerprint(String),
    /// rustls or quinn refused the configuration.
    #[error("tls configuration: {0}")]
    Config(String),
}

/// SHA-256 of a DER certificate.
pub fn fingerprint(cert: &[u8]) -> [u8; 32] {
    Sha256::digest(cert).into()
}

/// A fingerprint as lowercase hex.
pub fn fingerprint_hex(fp: &[u8; 32]) -> String {
    hex::encode(fp)
}

/// Parses a SHA-256 fingerprint: 64 hex digits, optionally separated by
/// colons (as `openssl x509 -fingerprint` prints them).
///
/// # Errors
/// Anything but 32 bytes of hex.
pub fn parse_fingerprint(s: &str) -> Result<[u8; 32], TlsError> {
    let clean: String = s.trim().chars().filter(|&c| c != ':').collect();
    let mut out = [0u8; 32];
    hex::decode_to_slice(&clean, &mut out).map_err(|_| TlsError::BadFingerprint(s.into()))?;
    Ok(out)
}

fn read_limited(path: &Path) -> Result<Vec<u8>, TlsError> {
    let read_err = |source| TlsError::Read {
        path: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    if meta.len() > MAX_PEM_FILE {
        return Err(TlsError::Parse {
            path: path.display().to_string(),
            what: format!("file is {} bytes, the limit is {MAX_PEM_FILE}", meta.len()),
        });
    }
    std::fs::read(path).map_err(read_err)
}

/// Reads a certificate chain from a PEM or DER file (DER: one
/// certificate).
///
/// # Errors
/// Unreadable file, or no certificate in it.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    let bytes = read_limited(path)?;
    let parse_err = |what: &str| TlsError::Parse {
        path: path.display().to_string(),
        what: what.into(),
    };
    if bytes.starts_with(b"-----BEGIN") {
        let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&bytes).collect();
        let certs = certs.map_err(|e| parse_err(&format!("bad PEM: {e}")))?;
        if certs.is_empty() {
            return Err(parse_err("no certificate in the PEM file"));
        }
        Ok(certs)
    } else if bytes.first() == Some(&0x30) {
        Ok(vec![CertificateDer::from(bytes)])
    } else {
        Err(parse_err("not a PEM or DER certificate"))
    }
}

/// Reads a private key from a PEM or DER (PKCS#8) file.
///
/// # Errors
/// Unreadable file, or no key in it.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    let bytes = read_limited(path)?;
    if bytes.starts_with(b"-----BEGIN") {
        PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::Parse {
            path: path.display().to_string(),
            what: format!("no usable private key: {e}"),
        })
    } else if bytes.first() == Some(&0x30) {
        Ok(PrivateKeyDer::Pkcs8(bytes.into()))
    } else {
        Err(TlsError::Parse {
            path: path.display().to_string(),
            what: "not a PEM or DER private key".into(),
        })
    }
}

/// How a client decides to trust the server's certificate.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CertPin {
    /// The end-entity certificate's SHA-256 must equal this.
    Sha256([u8; 32]),
    /// No verification at all (development only, never the default).
    Insecure,
}

impl fmt::Debug for CertPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CertPin::Sha256(fp) => write!(f, "Sha256({})", fingerprint_hex(fp)),
            CertPin::Insecure => f.write_str("Insecure"),
        }
    }
}

impl CertPin {
    /// Pins the first certificate of a PEM or DER file.
    ///
    /// # Errors
    /// Unreadable file or no certificate.
    pub fn from_cert_file(path: &Path) -> Result<CertPin, TlsError> {
        let certs = load_certs(path)?;
        Ok(CertPin::Sha256(fingerprint(&certs[0])))
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Compares the server certificate's SHA-256 with a pinned value; checks
/// handshake signatures with the certificate's key as usual.
#[derive(Debug)]
struct PinVerifier {
    pin: CertPin,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.pin {
            CertPin::Insecure => Ok(ServerCertVerified::assertion()),
            CertPin::Sha256(want) => {
                if fingerprint(end_entity) == want {
                    Ok(ServerCertVerified::assertion())
                } else {
                    Err(rustls::Error::General(format!(
                        "server certificate fingerprint {} is not the pinned {}",
                        fingerprint_hex(&fingerprint(end_entity)),
                        fingerprint_hex(&want)
                    )))
                }
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_with_or_without_colons() {
        let fp = fingerprint(b"hello");
        let hex = fingerprint_hex(&fp);
        assert_eq!(parse_fingerprint(&hex).unwrap(), fp);
        let colons: Vec<String> = fp.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(parse_fingerprint(&colons.join(":")).unwrap(), fp);
        assert!(parse_fingerprint("abc").is_err());
        assert!(parse_fingerprint(&"zz".repeat(32)).is_err());
    }

    #[test]
    fn bad_cert_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("bitroom-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, b"not a certificate").unwrap();
        assert!(matches!(load_certs(&junk), Err(TlsError::Parse { .. })));
        assert!(matches!(load_key(&junk), Err(TlsError::Parse { .. })));
        let empty_pem = dir.join("empty.pem");
        std::fs::write(
            &empty_pem,
            b"-----BEGIN NOTHING-----\n-----END NOTHING-----\n",
        )
        .unwrap();
        assert!(load_certs(&empty_pem).is_err());
        assert!(matches!(
            load_certs(&dir.join("missing.pem")),
            Err(TlsError::Read { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

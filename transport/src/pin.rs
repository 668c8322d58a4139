//! Certificate pinning: clients trust the server whose end-entity
//! certificate has the SHA-256 they were given (`--cert-sha256 HEX`, or
//! `--cert FILE`, whose fingerprint is computed on load).

use crate::certs::load_certs;
use crate::TlsError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

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

/// Compares the server certificate's SHA-256 with a pinned value; checks
/// handshake signatures with the certificate's key as usual.
#[derive(Debug)]
pub(crate) struct PinVerifier {
    pub(crate) pin: CertPin,
    pub(crate) provider: Arc<CryptoProvider>,
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
}

//! bitroom-transport: the QUIC and TLS settings a bitroom server and its
//! clients share, so both sides agree by construction.
//!
//! - the ALPN protocol id ([`ALPN`]) and the server name clients present
//!   ([`SERVER_NAME`]);
//! - the transport configuration (datagrams on with a small send buffer,
//!   idle timeout, keep-alive, ACK frequency, one bidirectional stream):
//!   [`transport_config`], [`client_config`], [`server_config`], and
//!   empty connection IDs for a client socket of one connection
//!   ([`single_connection_endpoint`]);
//! - congestion control with a window floor for the tick stream
//!   ([`congestion`]);
//! - the browsers' WebTransport (HTTP/3) server configuration
//!   ([`webtransport_server_config`], ALPN [`ALPN_H3`]);
//! - certificate pinning: a bitroom server usually runs with a self-signed
//!   certificate, and clients trust it by comparing the SHA-256 of the
//!   certificate it presents with a fingerprint they were given
//!   ([`CertPin`]). Skipping the check takes an explicit
//!   [`CertPin::Insecure`];
//! - reading certificates and keys from PEM or DER files ([`load_certs`],
//!   [`load_key`]), with a size limit;
//! - connect-token key pairs, key files, nonces and minting from a key
//!   file ([`keys`]: the IO shell of `bitroom_protocol::token`).
//!
//! ```
//! use bitroom_transport::{client_config, fingerprint, fingerprint_hex, parse_fingerprint, CertPin};
//!
//! // What the server prints at start-up, and what a client pins.
//! let fp = fingerprint(b"a DER certificate");
//! let printed = fingerprint_hex(&fp);
//! let pin = CertPin::Sha256(parse_fingerprint(&printed).unwrap());
//! let _quinn_config = client_config(pin).unwrap();
//! ```
//!
//! # Layout
//! - `config.rs`: ALPN, the transport settings, the client and server
//!   configurations;
//! - `congestion.rs`: Cubic with a window floor;
//! - `pin.rs`: fingerprints and the pinning certificate verifier;
//! - `certs.rs`: certificate and key files;
//! - [`keys`]: connect-token key files and OS randomness.

mod certs;
mod config;
pub mod congestion;
pub mod keys;
mod pin;

pub use certs::{load_certs, load_key};
pub use config::{
    client_config, server_config, single_connection_endpoint, single_connection_endpoint_config,
    transport_config, webtransport_server_config, ALPN, ALPN_H3, DATAGRAM_SEND_BUFFER, SERVER_NAME,
};
pub use pin::{fingerprint, fingerprint_hex, parse_fingerprint, CertPin};

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

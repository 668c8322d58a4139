//! The server's TLS identity: a certificate chain and its key, loaded
//! from files or generated as a self-signed development certificate.

use bitroom_transport::{fingerprint, fingerprint_hex, load_certs, load_key, TlsError};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::fmt;
use std::path::{Path, PathBuf};

/// File name of the development certificate (DER).
pub const DEV_CERT: &str = "bitroom-dev-cert.der";
/// File name of the development key (PKCS#8 DER).
pub const DEV_KEY: &str = "bitroom-dev-key.der";
/// Validity of [`Identity::short_lived`] certificates (days; Chromium's
/// limit for certificates trusted by hash is 14).
pub const WEB_CERT_DAYS: i64 = 13;

/// A certificate chain and its private key.
pub struct Identity {
    /// End-entity certificate first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The end-entity certificate's key.
    pub key: PrivateKeyDer<'static>,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("sha256", &self.fingerprint_hex())
            .field("chain", &self.chain.len())
            .finish_non_exhaustive()
    }
}

impl Clone for Identity {
    fn clone(&self) -> Identity {
        Identity {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl Identity {
    /// SHA-256 of the end-entity certificate: what clients pin.
    pub fn fingerprint(&self) -> [u8; 32] {
        fingerprint(&self.chain[0])
    }

    /// The fingerprint as hex.
    pub fn fingerprint_hex(&self) -> String {
        fingerprint_hex(&self.fingerprint())
    }

    /// A fresh self-signed certificate for `localhost` (in memory).
    ///
    /// # Errors
    /// Key generation failed.
    pub fn self_signed() -> Result<Identity, TlsError> {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .map_err(|e| TlsError::Config(format!("cannot generate a certificate: {e}")))?;
        Ok(Identity {
            chain: vec![ck.cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der())),
        })
    }

    /// A certificate for browsers that trust it by its hash
    /// (WebTransport's `serverCertificateHashes`): Chromium takes such a
    /// certificate only with an ECDSA P-256 key and a validity of at most
    /// 14 days that covers `now`. This one is valid from a day before `now`
    /// for [`WEB_CERT_DAYS`] days in all, for `localhost` and the loopback
    /// addresses (browsers do not check names against hashes; the names
    /// are for tools).
    ///
    /// # Errors
    /// Key generation failed.
    pub fn short_lived(now: time::OffsetDateTime) -> Result<Identity, TlsError> {
        let fail =
            |e: rcgen::Error| TlsError::Config(format!("cannot generate a certificate: {e}"));
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(fail)?;
        let mut params = rcgen::CertificateParams::new(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ])
        .map_err(fail)?;
        params.not_before = now - time::Duration::days(1);
        params.not_after = params.not_before + time::Duration::days(WEB_CERT_DAYS);
        let cert = params.self_signed(&key).map_err(fail)?;
        Ok(Identity {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        })
    }

    /// Loads a certificate chain and key (PEM or DER).
    ///
    /// # Errors
    /// Unreadable or unparsable files.
    pub fn load(cert: &Path, key: &Path) -> Result<Identity, TlsError> {
        Ok(Identity {
            chain: load_certs(cert)?,
            key: load_key(key)?,
        })
    }

    /// The development certificate in `dir`: loaded if both files exist,
    /// otherwise generated and written there. Returns the certificate's
    /// path and whether it was created now.
    ///
    /// # Errors
    /// Unreadable, unparsable or unwritable files.
    pub fn development(dir: &Path) -> Result<(Identity, PathBuf, bool), TlsError> {
        let cert = dir.join(DEV_CERT);
        let key = dir.join(DEV_KEY);
        if cert.exists() && key.exists() {
            return Ok((Identity::load(&cert, &key)?, cert, false));
        }
        let id = Identity::self_signed()?;
        let failed = |path: &Path| {
            let path = path.display().to_string();
            move |source| TlsError::Read { path, source }
        };
        // A directory that does not exist yet is made.
        std::fs::create_dir_all(dir).map_err(failed(dir))?;
        std::fs::write(&cert, &id.chain[0]).map_err(failed(&cert))?;
        // The key is private from its first byte (mode 0600 at creation,
        // not changed after writing).
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        std::io::Write::write_all(
            &mut options.open(&key).map_err(failed(&key))?,
            id.key.secret_der(),
        )
        .map_err(failed(&key))?;
        Ok((id, cert, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lived_certificates_suit_browsers_that_pin_them() {
        let now = time::OffsetDateTime::now_utc();
        let id = Identity::short_lived(now).unwrap();
        let key = rcgen::KeyPair::try_from(id.key.secret_der()).unwrap();
        assert!(std::ptr::eq(
            key.algorithm(),
            &rcgen::PKCS_ECDSA_P256_SHA256
        ));
        let params = rcgen::CertificateParams::from_ca_cert_der(&id.chain[0]).unwrap();
        let validity = params.not_after - params.not_before;
        assert!(validity <= time::Duration::days(14), "{validity}");
        assert!(params.not_before <= now && now < params.not_after);
        // A fresh key every time.
        assert_ne!(
            id.fingerprint(),
            Identity::short_lived(now).unwrap().fingerprint()
        );
    }

    #[test]
    fn development_certificate_is_written_once_and_reloaded() {
        let root = std::env::temp_dir().join(format!("bitroom-devcert-{}", std::process::id()));
        // A directory that does not exist yet is made.
        let dir = root.join("certs");
        let (a, path, created) = Identity::development(&dir).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(DEV_KEY))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "the key is private");
        }
        assert!(created);
        let (b, _, created_again) = Identity::development(&dir).unwrap();
        assert!(!created_again);
        assert_eq!(a.fingerprint(), b.fingerprint());
        // The file's fingerprint is what a client pins with --cert FILE.
        let pin = bitroom_transport::CertPin::from_cert_file(&path).unwrap();
        assert_eq!(pin, bitroom_transport::CertPin::Sha256(a.fingerprint()));
        std::fs::remove_dir_all(&root).unwrap();
    }
}

//! Certificate and key files (PEM or DER), read with a size limit.

use crate::TlsError;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;

/// Largest certificate or key file read from disk.
const MAX_PEM_FILE: u64 = 1 << 20;

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

#[cfg(test)]
mod tests {
    use super::*;

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

//! Connect-token keys on disk, and the OS randomness that tokens need.
//!
//! The pure token code (layout, [`mint`], [`verify`]) lives in
//! [`bitroom_protocol::token`]; this is its IO shell: key pairs drawn from
//! the OS's randomness and written to a directory, key files read back,
//! nonces drawn, the clock read. It sits in the transport crate because
//! both shells need it: `bitroom-server keygen`, `token` and `serve
//! --token-key`, and bots that mint a token each from a key file.
//!
//! # Key files
//!
//! PEM, as OpenSSL and every crypto library read and write them:
//!
//! - `token-key.pem`: the private key, PKCS#8 v1 (`-----BEGIN PRIVATE
//!   KEY-----`, RFC 8410), file mode 0600. Keep it on the game backend;
//!   servers never need it. `openssl genpkey -algorithm ed25519` makes the
//!   same kind of file.
//! - `token-key.pub.pem`: the public key, SubjectPublicKeyInfo (`-----BEGIN
//!   PUBLIC KEY-----`), readable by all. Servers verify with it.
//!
//! [`mint`]: bitroom_protocol::token::mint
//! [`verify`]: bitroom_protocol::token::verify

use bitroom_protocol::token::{
    mint, Claims, KeyId, Malformed, Nonce, Token, UnixSeconds, NONCE_LEN,
};
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::spki::{DecodePublicKey, EncodePublicKey};
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, KeypairBytes};
use ed25519_dalek::{SigningKey, VerifyingKey};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Name of the private key file [`keygen`] writes.
pub const PRIVATE_KEY_FILE: &str = "token-key.pem";
/// Name of the public key file [`keygen`] writes.
pub const PUBLIC_KEY_FILE: &str = "token-key.pub.pem";
/// Largest key file read (a PEM key is a few hundred bytes).
const MAX_KEY_FILE: u64 = 64 << 10;

/// A key file or randomness problem.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// [`keygen`] will not replace a key.
    #[error("{0}: already exists (not overwriting a key)")]
    Exists(String),
    /// The file is not a key of the expected kind.
    #[error("{path}: {what}")]
    Parse {
        /// The file.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// The OS gave no random bytes.
    #[error("no randomness from the operating system: {0}")]
    Random(String),
    /// The claims cannot be minted.
    #[error("cannot mint a token: {0}")]
    Claims(#[from] Malformed),
}

/// What [`keygen`] wrote.
#[derive(Debug, Clone)]
pub struct KeyPairFiles {
    /// The private key (mode 0600).
    pub private: PathBuf,
    /// The public key.
    pub public: PathBuf,
    /// The key id tokens signed with it carry.
    pub key_id: KeyId,
}

/// Fills `buf` from the OS's randomness.
///
/// # Errors
/// The OS has no randomness to give (should not happen on a running
/// system).
pub fn os_random(buf: &mut [u8]) -> Result<(), KeyError> {
    getrandom::fill(buf).map_err(|e| KeyError::Random(e.to_string()))
}

/// A fresh nonce: 128 bits from the OS.
///
/// # Errors
/// As [`os_random`].
pub fn draw_nonce() -> Result<Nonce, KeyError> {
    let mut n = [0; NONCE_LEN];
    os_random(&mut n)?;
    Ok(Nonce(n))
}

/// A fresh signing key: 256 bits from the OS.
///
/// # Errors
/// As [`os_random`].
pub fn generate_signing_key() -> Result<SigningKey, KeyError> {
    let mut seed = [0; 32];
    os_random(&mut seed)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The wall clock in Unix seconds (0 if it is before 1970).
pub fn unix_now() -> UnixSeconds {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Mints a token with a fresh nonce from the OS.
///
/// # Errors
/// Claims that break a layout rule, or no randomness.
pub fn mint_token(key: &SigningKey, claims: &Claims) -> Result<Token, KeyError> {
    Ok(mint(key, claims, draw_nonce()?)?)
}

/// Mints a token with the private key in `path`.
///
/// # Errors
/// As [`load_signing_key`] and [`mint_token`].
pub fn mint_from_file(path: &Path, claims: &Claims) -> Result<Token, KeyError> {
    mint_token(&load_signing_key(path)?, claims)
}

/// Generates a key pair and writes it into `dir` (created if missing) as
/// [`PRIVATE_KEY_FILE`] (mode 0600) and [`PUBLIC_KEY_FILE`]. Existing
/// files are never replaced.
///
/// # Errors
/// A file exists already, the directory or a file cannot be written, or
/// no randomness.
pub fn keygen(dir: &Path) -> Result<KeyPairFiles, KeyError> {
    write_key_pair(dir, &generate_signing_key()?)
}

/// Writes `key` into `dir` as [`keygen`] does.
///
/// # Errors
/// As [`keygen`].
pub fn write_key_pair(dir: &Path, key: &SigningKey) -> Result<KeyPairFiles, KeyError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| KeyError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let private = dir.join(PRIVATE_KEY_FILE);
    let public = dir.join(PUBLIC_KEY_FILE);
    for p in [&private, &public] {
        if p.exists() {
            return Err(KeyError::Exists(p.display().to_string()));
        }
    }
    // PKCS#8 v1 (no public key inside): what OpenSSL writes for Ed25519.
    let pem = KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    }
    .to_pkcs8_pem(LineEnding::LF)
    .map_err(|e| KeyError::Parse {
        path: private.display().to_string(),
        what: e.to_string(),
    })?;
    write_new(&private, pem.as_bytes(), 0o600).map_err(io(&private))?;
    let public_pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| KeyError::Parse {
            path: public.display().to_string(),
            what: e.to_string(),
        })?;
    write_new(&public, public_pem.as_bytes(), 0o644).map_err(io(&public))?;
    Ok(KeyPairFiles {
        private,
        public,
        key_id: KeyId::of(&key.verifying_key()),
    })
}

/// Creates `path` (failing if it exists) with `mode` on Unix, and writes.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn read_key_file(path: &Path) -> Result<String, KeyError> {
    let io = |source| KeyError::Io {
        path: path.display().to_string(),
        source,
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_KEY_FILE {
        return Err(KeyError::Parse {
            path: path.display().to_string(),
            what: format!("{len} bytes: too large for a key file"),
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    String::from_utf8(bytes).map_err(|_| KeyError::Parse {
        path: path.display().to_string(),
        what: "not a PEM file".into(),
    })
}

/// Reads a private key (PKCS#8 PEM, v1 or v2).
///
/// # Errors
/// Unreadable, not PEM, or not an Ed25519 private key.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let pem = read_key_file(path)?;
    SigningKey::from_pkcs8_pem(&pem).map_err(|e| KeyError::Parse {
        path: path.display().to_string(),
        what: if pem.contains("PUBLIC KEY") {
            "this is a public key: minting needs the private key file".into()
        } else {
            format!("not an Ed25519 private key (PKCS#8 PEM): {e}")
        },
    })
}

/// Reads a public key (SubjectPublicKeyInfo PEM). A private key file is
/// refused: a server should hold no key that can mint.
///
/// # Errors
/// Unreadable, not PEM, a private key, or not an Ed25519 public key.
pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    let pem = read_key_file(path)?;
    if pem.contains("PRIVATE KEY") {
        return Err(KeyError::Parse {
            path: path.display().to_string(),
            what: format!(
                "this is a private key: give the server the public key file ({PUBLIC_KEY_FILE})"
            ),
        });
    }
    VerifyingKey::from_public_key_pem(&pem).map_err(|e| KeyError::Parse {
        path: path.display().to_string(),
        what: format!("not an Ed25519 public key (PEM): {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_protocol::token::{verify, Role};

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bitroom-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn keygen_writes_a_pair_that_mints_and_verifies() {
        let dir = temp_dir("pair");
        let files = keygen(&dir).expect("keygen");
        let key = load_signing_key(&files.private).expect("private");
        let public = load_verifying_key(&files.public).expect("public");
        assert_eq!(key.verifying_key(), public);
        assert_eq!(files.key_id, KeyId::of(&public));
        let private_pem = std::fs::read_to_string(&files.private).unwrap();
        assert!(private_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        let public_pem = std::fs::read_to_string(&files.public).unwrap();
        assert!(public_pem.starts_with("-----BEGIN PUBLIC KEY-----\n"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&files.private), 0o600);
            assert_eq!(mode(&files.public) & 0o044, 0o044, "public is readable");
        }
        let now = unix_now();
        let claims = Claims {
            role: Role::Spectator,
            ..Claims::player("lobby", now, 60)
        };
        let token = mint_from_file(&files.private, &claims).expect("mint");
        let v = verify(&[public], &token.to_bytes(), now, "").expect("verifies");
        assert_eq!(v.claims(), &claims);
        // Never overwritten.
        assert!(matches!(keygen(&dir), Err(KeyError::Exists(_))));
        assert_eq!(
            load_signing_key(&files.private).unwrap().to_bytes(),
            key.to_bytes()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn two_keys_and_two_nonces_differ() {
        let a = generate_signing_key().unwrap();
        let b = generate_signing_key().unwrap();
        assert_ne!(a.to_bytes(), b.to_bytes());
        assert_ne!(draw_nonce().unwrap(), draw_nonce().unwrap());
        // Two tokens of the same claims differ by their nonces.
        let c = Claims::player("r", unix_now(), 30);
        assert_ne!(mint_token(&a, &c).unwrap(), mint_token(&a, &c).unwrap());
    }

    #[test]
    fn the_wrong_kind_of_key_file_is_refused_with_the_reason() {
        let dir = temp_dir("wrong");
        let files = keygen(&dir).unwrap();
        let e = load_verifying_key(&files.private).unwrap_err().to_string();
        assert!(e.contains("this is a private key"), "{e}");
        let e = load_signing_key(&files.public).unwrap_err().to_string();
        assert!(e.contains("this is a public key"), "{e}");
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "hello").unwrap();
        assert!(matches!(
            load_verifying_key(&junk),
            Err(KeyError::Parse { .. })
        ));
        assert!(matches!(
            load_signing_key(&junk),
            Err(KeyError::Parse { .. })
        ));
        let big = dir.join("big.pem");
        std::fs::write(&big, vec![b'a'; 70_000]).unwrap();
        assert!(load_signing_key(&big)
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert!(matches!(
            load_signing_key(&dir.join("missing.pem")),
            Err(KeyError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A key written by OpenSSL (`openssl genpkey -algorithm ed25519`) loads,
    /// and ours has the same shape (PKCS#8 v1, 48 bytes of DER).
    #[test]
    fn pkcs8_v1_matches_openssl_layout() {
        let dir = temp_dir("openssl");
        // RFC 8410 §10.3's example private key.
        let openssl = "-----BEGIN PRIVATE KEY-----\n\
                       MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n\
                       -----END PRIVATE KEY-----\n";
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("openssl.pem");
        std::fs::write(&p, openssl).unwrap();
        let key = load_signing_key(&p).expect("openssl key loads");
        let out = dir.join("ours");
        let files = write_key_pair(&out, &key).unwrap();
        assert_eq!(std::fs::read_to_string(&files.private).unwrap(), openssl);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! What the attack and admission tests share: the honest player in the
//! attacked room (the *witness*), who must stay seated and in sync; the
//! check that the server's memory stayed bounded; connect tokens from a
//! test key; and a lock that runs these tests one at a time, so resident
//! memory measures one attack.

use crate::loopback::TestServer;
use crate::raw::resident_bytes;
use bitroom_client::{connect, ClientHandle, ConnectOptions, Event};
use bitroom_protocol::token::{mint, Claims, Nonce, Role, SigningKey, UnixSeconds};
use bitroom_server::TokenConfig;
use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

/// The game of these tests: the sandbox arena with 60 loose bodies.
pub fn rules() -> Sandbox {
    Sandbox::new(SandboxConfig { loose_bodies: 60 })
}

/// A joined client of [`rules`].
pub type Handle = ClientHandle<Sandbox>;

/// Held for the length of a test: one test of the binary at a time.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

/// An honest player in `room` (with `token`, on a server that wants
/// one), synced.
///
/// # Panics
/// It is refused or never syncs.
pub async fn witness(server: &TestServer, room: &str, token: Option<Vec<u8>>) -> Handle {
    let mut options = ConnectOptions::new(rules(), server.pin);
    options.name = "witness".into();
    options.token = token;
    let mut w = connect(server.addr, room, options)
        .await
        .expect("the witness joins");
    let synced = tokio::time::timeout(10 * SEC, async {
        while let Some(e) = w.next_event().await {
            if matches!(e, Event::Synced { .. }) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(synced, Ok(true), "the witness never synced");
    w
}

/// The witness still has its seat, keeps verifying frames (30 more
/// confirmed ticks checked against the server's hashes) and saw no
/// desync.
///
/// # Panics
/// Any of those fails.
pub async fn assert_unharmed(w: &Handle) {
    let verified = w.stats().session.verified;
    let end = tokio::time::Instant::now() + 10 * SEC;
    while w.stats().session.verified <= verified + 30 && w.disconnected().is_none() {
        assert!(
            tokio::time::Instant::now() < end,
            "the witness stopped verifying frames"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(w.disconnected(), None, "the witness was disconnected");
    let s = w.stats().session;
    assert_eq!(s.desyncs, 0, "the witness desynced: {s:?}");
}

/// Resident memory of the test process (which runs the server) from the
/// moment the watch starts: [`MemoryWatch::assert_grew_less_than`] bounds
/// what the attack made the server hold. Start it once the server and its
/// witness are up, so that their start-up (runtime threads, the first
/// room, TLS) is not counted as the attack's. Sampled every 20 ms by
/// [`MemoryWatch::sample`] so a peak between checks is seen too.
#[derive(Debug)]
pub struct MemoryWatch {
    start: Option<u64>,
    peak: AtomicU64,
}

impl MemoryWatch {
    /// Starts watching (call [`serial`] first: other tests would count;
    /// and start the server and its witness first, see above).
    pub fn start() -> MemoryWatch {
        let start = resident_bytes();
        MemoryWatch {
            start,
            peak: AtomicU64::new(start.unwrap_or(0)),
        }
    }

    /// Takes a sample now.
    pub fn sample(&self) {
        if let Some(n) = resident_bytes() {
            self.peak.fetch_max(n, Ordering::Relaxed);
        }
    }

    /// Samples every 20 ms until the returned task is aborted.
    pub fn sample_every_20ms(self: &std::sync::Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                me.sample();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    }

    /// Growth of the peak over the start (bytes; 0 where `/proc` is
    /// missing).
    pub fn growth(&self) -> u64 {
        self.sample();
        match self.start {
            Some(s) => self.peak.load(Ordering::Relaxed).saturating_sub(s),
            None => 0,
        }
    }

    /// Prints the growth and checks it.
    ///
    /// # Panics
    /// The peak grew by `limit` bytes or more.
    pub fn assert_grew_less_than(&self, limit: u64, what: &str) {
        let g = self.growth();
        eprintln!(
            "{what}: resident memory grew {:.1} MiB at its peak (bound {} MiB)",
            g as f64 / f64::from(1 << 20),
            limit >> 20
        );
        assert!(
            g < limit,
            "{what}: resident memory grew {g} bytes, over {limit}"
        );
    }
}

/// The key the tests' backend mints with.
pub fn test_key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

/// Another key, which the servers do not trust.
pub fn stranger_key() -> SigningKey {
    SigningKey::from_bytes(&[8; 32])
}

/// The id of the test servers that require tokens.
pub const SERVER_ID: &str = "test-1";

/// Token settings for a [`TestServer`]: [`test_key`]'s public key,
/// server id [`SERVER_ID`].
pub fn token_config() -> TokenConfig {
    TokenConfig::new(vec![test_key().verifying_key()], SERVER_ID)
}

/// The wall clock (Unix seconds).
pub fn now() -> UnixSeconds {
    bitroom_transport::keys::unix_now()
}

/// Claims for a player of `room`, user `user`, for [`SERVER_ID`], valid
/// from now for 2 minutes.
pub fn claims(room: &str, user: &str) -> Claims {
    let mut c = Claims::player(room, now(), 120);
    c.user = user.as_bytes().to_vec();
    c.server_id = SERVER_ID.into();
    c
}

/// A spectator's claims.
pub fn spectator_claims(room: &str, user: &str) -> Claims {
    Claims {
        role: Role::Spectator,
        ..claims(room, user)
    }
}

/// A token's bytes: `claims` signed with `key` and a fresh nonce (a
/// counter: tests need no secrecy, only distinct nonces).
pub fn token(key: &SigningKey, claims: &Claims) -> Vec<u8> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let mut n = [0; 16];
    n[..8].copy_from_slice(&NEXT.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    n[8..].copy_from_slice(&std::process::id().to_le_bytes().repeat(2));
    mint(key, claims, Nonce(n))
        .expect("valid claims")
        .to_bytes()
}

//! What a hello must pass before it may join, or create, a room: the
//! protocol version, the rules fingerprint and, on a server with token
//! keys, the connect token (signature, expiry with the stated clock skew,
//! server id, room, role, seat, and its nonce spent once); then, for a new
//! room, the room-creation limits ([`Creations`]). A hello refused here
//! leaves nothing behind: no room, no seat.
//!
//! The checks are the protocol crate's pure functions
//! ([`bitroom_protocol::token`]); this file holds the server's keys, its
//! id and the one [`NonceCache`] of the whole server (a token is for one
//! room, but a room may close and open again: the nonce must stay spent).

use crate::config::TokenConfig;
use crate::limits::{CreationKey, Creations};
use bitroom_protocol::token::{verify, NonceCache, TokenError, UnixSeconds, VerifyingKey};
use bitroom_protocol::{Grant, Hello, KickReason, PROTOCOL_VERSION};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// The server's admission rules (see the module docs).
#[derive(Debug)]
pub(crate) struct Admission {
    tokens: Option<Tokens>,
    creations: Creations,
}

#[derive(Debug)]
struct Tokens {
    keys: Vec<VerifyingKey>,
    server_id: String,
    nonces: Mutex<NonceCache>,
}

impl Admission {
    pub(crate) fn new(tokens: Option<TokenConfig>, creations_per_minute: usize) -> Admission {
        Admission {
            tokens: tokens.map(|t| Tokens {
                keys: t.keys,
                server_id: t.server_id,
                nonces: Mutex::new(NonceCache::new(t.nonce_capacity)),
            }),
            creations: Creations::new(creations_per_minute),
        }
    }

    /// Whether every hello must carry a token.
    pub(crate) fn requires_tokens(&self) -> bool {
        self.tokens.is_some()
    }

    /// Checks a hello against the server's version, the rules fingerprint
    /// `rules` and, with token keys, its token at `now` (Unix seconds) for
    /// a room of `seats` seats, spending the token's nonce. Returns what
    /// the token grants (`None` on an open server, whose hellos' tokens
    /// are ignored).
    ///
    /// # Errors
    /// The refusal to send the client.
    pub(crate) fn check(
        &self,
        hello: &Hello,
        rules: u64,
        seats: u8,
        now: UnixSeconds,
    ) -> Result<Option<Grant>, KickReason> {
        if hello.version != PROTOCOL_VERSION {
            return Err(KickReason::VersionMismatch {
                server: PROTOCOL_VERSION,
                client: hello.version,
            });
        }
        if hello.rules != rules {
            return Err(KickReason::RulesMismatch {
                server: rules,
                client: hello.rules,
            });
        }
        let Some(t) = &self.tokens else {
            return Ok(None);
        };
        let check = || -> Result<Grant, TokenError> {
            let bytes = hello.token.as_deref().ok_or(TokenError::Missing)?;
            let token = verify(&t.keys, bytes, now, &t.server_id)?;
            token.check_hello(&hello.room, hello.spectator)?;
            token.seat_in(seats)?;
            t.nonces
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .spend(&token, now)?;
            Ok(Grant::of(&token))
        };
        check().map(Some).map_err(KickReason::Token)
    }

    /// Counts a room created from `ip` (and by the grant's user), or
    /// refuses it when either has created its share in the last minute.
    pub(crate) fn may_create(&self, ip: IpAddr, grant: Option<&Grant>, now: Instant) -> bool {
        let mut keys = vec![CreationKey::Address(ip)];
        if let Some(g) = grant {
            keys.push(CreationKey::User(g.user.clone()));
        }
        self.creations.try_create(&keys, now)
    }
}

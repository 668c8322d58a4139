//! Connect tokens: who may join which room, signed by the game's backend.
//!
//! The model is netcode.io's connect token, with a public-key signature in
//! place of its shared secret: a game backend holds an Ed25519 private key
//! and [`mint`]s a token for a player; bitroom servers hold only the public
//! key and [`verify`] it, so a server (or anyone who reads its disk) cannot
//! make tokens. A token names the room, the [`Role`], optionally the seat,
//! an opaque user id, the server it is for, when it was issued and when it
//! expires (at most [`MAX_TOKEN_LIFETIME`] later), and a random
//! 128-bit [`Nonce`] that a server accepts once ([`NonceCache`]).
//!
//! Everything here is pure: the time comes in as an argument (Unix seconds)
//! and the nonce from the caller, so the same inputs give the same bytes
//! (Ed25519 signing is deterministic) and the same verdicts. The server
//! crate loads keys, reads the clock and draws nonces from the OS.
//!
//! # Byte layout (version [`TOKEN_VERSION`])
//!
//! Fixed little-endian fields, then three length-prefixed strings, then the
//! signature; documented field by field in `docs/connect-tokens.md`:
//!
//! ```text
//!  0  4  magic "BRTK"            16  8  issued_at (u64 LE, Unix s)
//!  4  1  version = 1             24  8  expires_at (u64 LE, Unix s)
//!  5  1  role: 0 player, 1 spec  32 16  nonce
//!  6  1  seat, 0xFF = any        48  1  room length R (1..=64)
//!  7  1  reserved = 0            49  1  user id length U (0..=64)
//!  8  8  key id                  50  1  server id length S (0..=64)
//!                                51  1  reserved = 0
//! 52  R  room (UTF-8)  52+R  U  user id  52+R+U  S  server id (UTF-8)
//! 52+R+U+S  64  Ed25519 signature of every byte before it
//! ```
//!
//! The text form (command lines, JSON, URLs) is the bytes in base64url
//! without padding (RFC 4648 §5; padded input is accepted too).

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use bitroom_sim::game::MAX_SLOTS;
use ed25519_dalek::{Signature, Signer};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The key types of tokens: backends mint with a [`SigningKey`], servers
/// verify with the [`VerifyingKey`] (re-exported from `ed25519-dalek`).
pub use ed25519_dalek::{SigningKey, VerifyingKey};

/// The first four bytes of every token.
pub const TOKEN_MAGIC: [u8; 4] = *b"BRTK";
/// The layout this build writes and reads.
pub const TOKEN_VERSION: u8 = 1;
/// Longest time from `issued_at` to `expires_at` (seconds): a token is
/// handed to a player to connect now, not kept.
pub const MAX_TOKEN_LIFETIME: u64 = 300;
/// How far the minting backend's clock and the server's may disagree
/// (seconds): a token is accepted from `issued_at − CLOCK_SKEW` until
/// `expires_at + CLOCK_SKEW`.
pub const CLOCK_SKEW: u64 = 30;
/// Longest room name (bytes; the hello's limit).
pub const MAX_ROOM_LEN: usize = crate::messages::MAX_NAME;
/// Longest user id (bytes).
pub const MAX_USER_LEN: usize = 64;
/// Longest server id (bytes).
pub const MAX_SERVER_ID_LEN: usize = 64;
/// Nonce size (bytes): 128 random bits.
pub const NONCE_LEN: usize = 16;
/// Key id size (bytes): the first bytes of the signer's public key.
pub const KEY_ID_LEN: usize = 8;
/// Ed25519 signature size (bytes).
pub const SIGNATURE_LEN: usize = 64;
/// Bytes before the room name: the fixed fields.
pub const FIXED_LEN: usize = 52;
/// Smallest token: a one-byte room, no user id, no server id.
pub const MIN_TOKEN_LEN: usize = FIXED_LEN + 1 + SIGNATURE_LEN;
/// Largest token (308 bytes).
pub const MAX_TOKEN_LEN: usize =
    FIXED_LEN + MAX_ROOM_LEN + MAX_USER_LEN + MAX_SERVER_ID_LEN + SIGNATURE_LEN;
/// Longest text form (base64 of [`MAX_TOKEN_LEN`] bytes, with padding).
pub const MAX_TOKEN_TEXT: usize = MAX_TOKEN_LEN.div_ceil(3) * 4;
/// The seat byte of a token that names no seat.
pub const ANY_SEAT: u8 = 0xFF;

/// Seconds since 1970-01-01 UTC (the shells read the clock).
pub type UnixSeconds = u64;

/// base64url; writes no padding, reads with or without it.
const TEXT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What the token holder may do in the room.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Takes a seat and sends inputs (role byte 0).
    Player,
    /// Watches only (role byte 1).
    Spectator,
}

impl Role {
    fn code(self) -> u8 {
        match self {
            Role::Player => 0,
            Role::Spectator => 1,
        }
    }

    fn from_code(b: u8) -> Option<Role> {
        match b {
            0 => Some(Role::Player),
            1 => Some(Role::Spectator),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Player => "player",
            Role::Spectator => "spectator",
        })
    }
}

/// 128 random bits that make a token single-use. The caller draws them
/// (the server crate from the OS); they are not secret.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Nonce(pub [u8; NONCE_LEN]);

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nonce({})", hex(&self.0))
    }
}

/// Which key signed a token: the first [`KEY_ID_LEN`] bytes of its public
/// key. A hint for picking among several trusted keys (rotation), not a
/// security measure: the signature decides.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct KeyId(pub [u8; KEY_ID_LEN]);

impl KeyId {
    /// The id of a public key.
    pub fn of(key: &VerifyingKey) -> KeyId {
        let mut id = [0; KEY_ID_LEN];
        id.copy_from_slice(&key.as_bytes()[..KEY_ID_LEN]);
        KeyId(id)
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({})", hex(&self.0))
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key id {}", hex(&self.0))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a token grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    /// The room (1..=64 bytes of UTF-8 without control characters, like
    /// the hello's room name).
    pub room: String,
    /// Player or spectator.
    pub role: Role,
    /// The seat the player must take; `None`: any free seat. Spectator
    /// tokens name none.
    pub seat: Option<u8>,
    /// The backend's id of the user (opaque, at most [`MAX_USER_LEN`]
    /// bytes; may be empty). Reconnects are bound to it.
    pub user: Vec<u8>,
    /// The server the token is for (at most [`MAX_SERVER_ID_LEN`] bytes of
    /// UTF-8): it must equal the verifying server's id, and the empty id
    /// is that of a server started without one.
    pub server_id: String,
    /// When the backend minted it.
    pub issued_at: UnixSeconds,
    /// When it stops being valid (after `issued_at`, at most
    /// [`MAX_TOKEN_LIFETIME`] later).
    pub expires_at: UnixSeconds,
}

impl Claims {
    /// A player token for `room`, any seat, no user id, for a server
    /// without an id, valid for `ttl` seconds from `now`.
    pub fn player(room: &str, now: UnixSeconds, ttl: u64) -> Claims {
        Claims {
            room: room.into(),
            role: Role::Player,
            seat: None,
            user: Vec::new(),
            server_id: String::new(),
            issued_at: now,
            expires_at: now.saturating_add(ttl),
        }
    }

    /// Checks every rule of the layout (lengths, text, seat, lifetime).
    ///
    /// # Errors
    /// The first rule broken.
    pub fn check(&self) -> Result<(), Malformed> {
        check_text(&self.room, MAX_ROOM_LEN, Malformed::Room)?;
        if self.room.is_empty() {
            return Err(Malformed::Room);
        }
        if self.user.len() > MAX_USER_LEN {
            return Err(Malformed::User);
        }
        check_text(&self.server_id, MAX_SERVER_ID_LEN, Malformed::ServerId)?;
        match (self.role, self.seat) {
            (Role::Spectator, Some(_)) => return Err(Malformed::SpectatorSeat),
            (Role::Player, Some(s)) if s >= MAX_SLOTS => return Err(Malformed::Seat(s)),
            _ => {}
        }
        if self.expires_at <= self.issued_at {
            return Err(Malformed::ExpiresBeforeIssue);
        }
        let lifetime = self.expires_at - self.issued_at;
        if lifetime > MAX_TOKEN_LIFETIME {
            return Err(Malformed::Lifetime(lifetime));
        }
        Ok(())
    }
}

fn check_text(s: &str, max: usize, err: Malformed) -> Result<(), Malformed> {
    if s.len() > max || s.chars().any(char::is_control) {
        return Err(err);
    }
    Ok(())
}

/// A token that decoded (every layout rule holds) but whose signature and
/// times are not checked yet: [`verify`] does that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it grants.
    pub claims: Claims,
    /// Which key signed it.
    pub key_id: KeyId,
    /// The single-use nonce.
    pub nonce: Nonce,
    /// Ed25519 signature of the bytes before it.
    pub signature: [u8; SIGNATURE_LEN],
}

impl Token {
    /// The token's bytes (the layout in the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.signed_bytes();
        out.extend_from_slice(&self.signature);
        out
    }

    /// The text form: base64url without padding.
    pub fn to_text(&self) -> String {
        TEXT.encode(self.to_bytes())
    }

    /// Everything the signature covers.
    fn signed_bytes(&self) -> Vec<u8> {
        signed_bytes(&self.claims, self.key_id, self.nonce)
    }

    /// Decodes a token's bytes, checking the layout (not the signature).
    ///
    /// # Errors
    /// [`TokenError::Malformed`] for a broken layout, [`TokenError::Version`]
    /// for another layout version.
    pub fn decode(bytes: &[u8]) -> Result<Token, TokenError> {
        let malformed = |m| Err(TokenError::Malformed(m));
        if bytes.len() > MAX_TOKEN_LEN {
            return malformed(Malformed::TooLong);
        }
        // Magic and version first: a later version may lay out the rest
        // differently, and is named rather than called malformed.
        if bytes.len() < 5 {
            return malformed(Malformed::TooShort);
        }
        if bytes[..4] != TOKEN_MAGIC {
            return malformed(Malformed::BadMagic);
        }
        if bytes[4] != TOKEN_VERSION {
            return Err(TokenError::Version(bytes[4]));
        }
        if bytes.len() < MIN_TOKEN_LEN {
            return malformed(Malformed::TooShort);
        }
        let fixed: &[u8; FIXED_LEN] = bytes
            .first_chunk()
            .expect("length checked against MIN_TOKEN_LEN");
        let u64_at = |at: usize| {
            let mut b = [0; 8];
            b.copy_from_slice(&fixed[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let role =
            Role::from_code(fixed[5]).ok_or(TokenError::Malformed(Malformed::Role(fixed[5])))?;
        let seat = match fixed[6] {
            ANY_SEAT => None,
            s => Some(s),
        };
        if fixed[7] != 0 || fixed[51] != 0 {
            return malformed(Malformed::Reserved);
        }
        let mut key_id = [0; KEY_ID_LEN];
        key_id.copy_from_slice(&fixed[8..16]);
        let issued_at = u64_at(16);
        let expires_at = u64_at(24);
        let mut nonce = [0; NONCE_LEN];
        nonce.copy_from_slice(&fixed[32..48]);
        let (r, u, s) = (
            usize::from(fixed[48]),
            usize::from(fixed[49]),
            usize::from(fixed[50]),
        );
        if r > MAX_ROOM_LEN || u > MAX_USER_LEN || s > MAX_SERVER_ID_LEN {
            return malformed(Malformed::Length);
        }
        // All three lengths are at most 64: no overflow, and nothing is
        // allocated before the total is known to match.
        if bytes.len() != FIXED_LEN + r + u + s + SIGNATURE_LEN {
            return malformed(Malformed::Length);
        }
        let text = |at: usize, len: usize, err: Malformed| {
            std::str::from_utf8(&bytes[at..at + len])
                .map(str::to_owned)
                .map_err(|_| TokenError::Malformed(err))
        };
        let room = text(FIXED_LEN, r, Malformed::Room)?;
        let user = bytes[FIXED_LEN + r..FIXED_LEN + r + u].to_vec();
        let server_id = text(FIXED_LEN + r + u, s, Malformed::ServerId)?;
        let mut signature = [0; SIGNATURE_LEN];
        signature.copy_from_slice(&bytes[bytes.len() - SIGNATURE_LEN..]);
        let claims = Claims {
            room,
            role,
            seat,
            user,
            server_id,
            issued_at,
            expires_at,
        };
        claims.check().map_err(TokenError::Malformed)?;
        Ok(Token {
            claims,
            key_id: KeyId(key_id),
            nonce: Nonce(nonce),
            signature,
        })
    }

    /// Decodes the text form (surrounding whitespace is ignored).
    ///
    /// # Errors
    /// As [`Token::decode`], and [`Malformed::NotBase64`] or
    /// [`Malformed::TooLong`] for the text itself.
    pub fn from_text(text: &str) -> Result<Token, TokenError> {
        Token::decode(&decode_text(text)?)
    }
}

/// The bytes of a token's text form, with its length limited before
/// anything is decoded.
///
/// # Errors
/// Text longer than [`MAX_TOKEN_TEXT`] or not base64url.
pub fn decode_text(text: &str) -> Result<Vec<u8>, TokenError> {
    let text = text.trim();
    if text.len() > MAX_TOKEN_TEXT {
        return Err(TokenError::Malformed(Malformed::TooLong));
    }
    TEXT.decode(text)
        .map_err(|_| TokenError::Malformed(Malformed::NotBase64))
}

fn signed_bytes(c: &Claims, key_id: KeyId, nonce: Nonce) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAX_TOKEN_LEN);
    out.extend_from_slice(&TOKEN_MAGIC);
    out.push(TOKEN_VERSION);
    out.push(c.role.code());
    out.push(c.seat.unwrap_or(ANY_SEAT));
    out.push(0);
    out.extend_from_slice(&key_id.0);
    out.extend_from_slice(&c.issued_at.to_le_bytes());
    out.extend_from_slice(&c.expires_at.to_le_bytes());
    out.extend_from_slice(&nonce.0);
    // Lengths are checked (≤ 64) before this is called.
    out.push(c.room.len() as u8);
    out.push(c.user.len() as u8);
    out.push(c.server_id.len() as u8);
    out.push(0);
    out.extend_from_slice(c.room.as_bytes());
    out.extend_from_slice(&c.user);
    out.extend_from_slice(c.server_id.as_bytes());
    out
}

/// Mints a token: what a game backend does for each player it sends to a
/// server. `nonce` must be fresh random bits (the server crate's
/// `keys::draw_nonce` draws them from the OS).
///
/// # Errors
/// Claims that break a layout rule (a name too long, a seat on a spectator
/// token, a lifetime over [`MAX_TOKEN_LIFETIME`], …).
pub fn mint(key: &SigningKey, claims: &Claims, nonce: Nonce) -> Result<Token, Malformed> {
    claims.check()?;
    let key_id = KeyId::of(&key.verifying_key());
    let signature = key.sign(&signed_bytes(claims, key_id, nonce)).to_bytes();
    Ok(Token {
        claims: claims.clone(),
        key_id,
        nonce,
        signature,
    })
}

/// A token whose signature, times and server id checked out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedToken {
    claims: Claims,
    nonce: Nonce,
    key: usize,
}

impl VerifiedToken {
    /// What it grants.
    pub fn claims(&self) -> &Claims {
        &self.claims
    }

    /// Its nonce (spend it with [`NonceCache::spend`]).
    pub fn nonce(&self) -> Nonce {
        self.nonce
    }

    /// The user id.
    pub fn user(&self) -> &[u8] {
        &self.claims.user
    }

    /// Which of the keys given to [`verify`] signed it.
    pub fn key_index(&self) -> usize {
        self.key
    }

    /// When no server can accept the token any more: its expiry plus the
    /// clock skew. Its nonce need not be remembered past this.
    pub fn dead_at(&self) -> UnixSeconds {
        self.claims.expires_at.saturating_add(CLOCK_SKEW)
    }

    /// Checks the hello's room and role against the token's.
    ///
    /// # Errors
    /// [`TokenError::WrongRoom`], [`TokenError::SpectatorAsPlayer`] or
    /// [`TokenError::PlayerAsSpectator`].
    pub fn check_hello(&self, room: &str, spectator: bool) -> Result<(), TokenError> {
        if self.claims.room != room {
            return Err(TokenError::WrongRoom(self.claims.room.clone()));
        }
        match (self.claims.role, spectator) {
            (Role::Spectator, false) => Err(TokenError::SpectatorAsPlayer),
            (Role::Player, true) => Err(TokenError::PlayerAsSpectator),
            _ => Ok(()),
        }
    }

    /// The seat the token names, if any, checked against a room of
    /// `seats` seats.
    ///
    /// # Errors
    /// [`TokenError::SeatOutOfRange`] when the room has no such seat.
    pub fn seat_in(&self, seats: u8) -> Result<Option<u8>, TokenError> {
        match self.claims.seat {
            Some(seat) if seat >= seats => Err(TokenError::SeatOutOfRange { seat, seats }),
            s => Ok(s),
        }
    }
}

/// Verifies a token's bytes: layout, signature (by one of `keys`, picked by
/// the key id), lifetime, time window (with [`CLOCK_SKEW`] on both ends)
/// and server id. Pure: `now` is the caller's clock (Unix seconds). The
/// room, role, seat and nonce are checked after this, against the hello
/// ([`VerifiedToken::check_hello`], [`VerifiedToken::seat_in`]) and the
/// server's [`NonceCache`].
///
/// # Errors
/// The first check that fails, cheapest first: layout, key, signature,
/// time, server id.
pub fn verify(
    keys: &[VerifyingKey],
    bytes: &[u8],
    now: UnixSeconds,
    server_id: &str,
) -> Result<VerifiedToken, TokenError> {
    let token = Token::decode(bytes)?;
    let signed = &bytes[..bytes.len() - SIGNATURE_LEN];
    let signature = Signature::from_bytes(&token.signature);
    let mut candidates = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| KeyId::of(k) == token.key_id)
        .peekable();
    if candidates.peek().is_none() {
        return Err(TokenError::UnknownKey(token.key_id));
    }
    // `verify_strict`: no malleable signatures, no weak public keys.
    let key = candidates
        .find(|(_, k)| k.verify_strict(signed, &signature).is_ok())
        .map(|(i, _)| i)
        .ok_or(TokenError::BadSignature)?;
    let c = &token.claims;
    if c.issued_at > now.saturating_add(CLOCK_SKEW) {
        return Err(TokenError::NotYetValid {
            seconds: c.issued_at - now,
        });
    }
    if now >= c.expires_at.saturating_add(CLOCK_SKEW) {
        return Err(TokenError::Expired);
    }
    if c.server_id != server_id {
        return Err(TokenError::WrongServer(c.server_id.clone()));
    }
    Ok(VerifiedToken {
        claims: token.claims,
        nonce: token.nonce,
        key,
    })
}

/// [`verify`] on the text form.
///
/// # Errors
/// As [`decode_text`] and [`verify`].
pub fn verify_text(
    keys: &[VerifyingKey],
    text: &str,
    now: UnixSeconds,
    server_id: &str,
) -> Result<VerifiedToken, TokenError> {
    verify(keys, &decode_text(text)?, now, server_id)
}

/// What is wrong with a token's layout (or with claims given to [`mint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum Malformed {
    /// The text form is not base64url.
    #[error("not base64url")]
    NotBase64,
    /// Shorter than the smallest token.
    #[error("too short")]
    TooShort,
    /// Longer than the largest token.
    #[error("too long")]
    TooLong,
    /// Does not start with "BRTK".
    #[error("not a bitroom token")]
    BadMagic,
    /// A role byte other than 0 or 1.
    #[error("unknown role {0}")]
    Role(u8),
    /// A seat past the largest room.
    #[error("seat {0} out of range")]
    Seat(u8),
    /// A spectator token naming a seat.
    #[error("a spectator token names a seat")]
    SpectatorSeat,
    /// A reserved byte is not zero.
    #[error("reserved byte not zero")]
    Reserved,
    /// The length fields do not add up to the token's size.
    #[error("length fields do not match the token's size")]
    Length,
    /// The room name is empty, too long, not UTF-8 or has control
    /// characters.
    #[error("bad room name")]
    Room,
    /// The user id is longer than [`MAX_USER_LEN`].
    #[error("user id over {MAX_USER_LEN} bytes")]
    User,
    /// The server id is too long, not UTF-8 or has control characters.
    #[error("bad server id")]
    ServerId,
    /// `expires_at` is not after `issued_at`.
    #[error("expires before it is issued")]
    ExpiresBeforeIssue,
    /// The lifetime is over [`MAX_TOKEN_LIFETIME`] (seconds).
    #[error("lifetime of {0} s over the limit of {MAX_TOKEN_LIFETIME} s")]
    Lifetime(u64),
}

/// Why a token was refused. Each message is what the client prints; each
/// [`TokenError::label`] is a stable metric label.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum TokenError {
    /// The server requires a token and the hello has none.
    #[error("no token: this server requires one")]
    Missing,
    /// The bytes are not a token.
    #[error("malformed token: {0}")]
    Malformed(Malformed),
    /// Another layout version.
    #[error("token version {0} is not supported (this server reads version {TOKEN_VERSION})")]
    Version(u8),
    /// No trusted key has this key id.
    #[error("token signed by an unknown key ({0})")]
    UnknownKey(KeyId),
    /// The signature does not match the bytes and the key.
    #[error("bad token signature")]
    BadSignature,
    /// Issued further in the future than the clock skew allows.
    #[error("token not valid yet: issued {seconds} s in the future (check the clocks)")]
    NotYetValid {
        /// How far ahead of the server's clock.
        seconds: u64,
    },
    /// Past its expiry (plus the clock skew).
    #[error("token expired")]
    Expired,
    /// Minted for another server (the field: the token's server id).
    #[error("{}", wrong_server(.0))]
    WrongServer(String),
    /// Minted for another room (the field: the token's room).
    #[error("token is for room {0:?}")]
    WrongRoom(String),
    /// A spectator token in a player's hello.
    #[error("spectator token used as a player")]
    SpectatorAsPlayer,
    /// A player token in a spectator's hello.
    #[error("player token used as a spectator")]
    PlayerAsSpectator,
    /// The token's seat is not in the room.
    #[error("token is for seat {seat}, but the room has {seats} seats")]
    SeatOutOfRange {
        /// The token's seat.
        seat: u8,
        /// Seats in the room.
        seats: u8,
    },
    /// The nonce was spent by an earlier hello.
    #[error("token already used")]
    AlreadyUsed,
    /// The [`NonceCache`] is full of live nonces.
    #[error("too many tokens in flight: try again shortly")]
    Busy,
}

fn wrong_server(id: &str) -> String {
    if id.is_empty() {
        "token is for a server without an id".into()
    } else {
        format!("token is for server {id:?}")
    }
}

impl TokenError {
    /// A stable label for metrics (`refused{reason="token_expired"}`).
    pub fn label(&self) -> &'static str {
        match self {
            TokenError::Missing => "token_missing",
            TokenError::Malformed(_) => "token_malformed",
            TokenError::Version(_) => "token_version",
            TokenError::UnknownKey(_) => "token_unknown_key",
            TokenError::BadSignature => "token_bad_signature",
            TokenError::NotYetValid { .. } => "token_not_yet_valid",
            TokenError::Expired => "token_expired",
            TokenError::WrongServer(_) => "token_wrong_server",
            TokenError::WrongRoom(_) => "token_wrong_room",
            TokenError::SpectatorAsPlayer => "token_spectator_as_player",
            TokenError::PlayerAsSpectator => "token_player_as_spectator",
            TokenError::SeatOutOfRange { .. } => "token_seat_out_of_range",
            TokenError::AlreadyUsed => "token_replayed",
            TokenError::Busy => "token_busy",
        }
    }
}

/// Replay protection: every nonce is accepted once while its token can
/// still be accepted, in bounded memory.
///
/// A nonce is remembered until its token's [`VerifiedToken::dead_at`]
/// (expiry + [`CLOCK_SKEW`]), after which [`verify`] refuses the token
/// anyway, so forgetting it is safe. A token is accepted from
/// `issued_at − CLOCK_SKEW`, so an entry lives at most
/// [`MAX_TOKEN_LIFETIME`] + 2 × [`CLOCK_SKEW`] = 360 s. Holding
/// `capacity` entries therefore sustains `capacity / 360` admissions per
/// second indefinitely (the default, 65 536, about 180 per second, in
/// about 5 MiB by estimate: two ordered maps of 24-byte entries); past it, [`NonceCache::spend`] refuses with
/// [`TokenError::Busy`] until entries expire, rather than forgetting a
/// live nonce. Only verified tokens reach the cache, so only the backend's
/// minting rate can fill it.
///
/// Ordered maps only: the same calls give the same state and answers.
#[derive(Clone, Debug)]
pub struct NonceCache {
    /// Nonce → when it may be forgotten.
    seen: BTreeMap<Nonce, UnixSeconds>,
    /// The same entries ordered by when they may be forgotten.
    by_time: BTreeSet<(UnixSeconds, Nonce)>,
    capacity: usize,
}

impl Default for NonceCache {
    fn default() -> NonceCache {
        NonceCache::new(NonceCache::DEFAULT_CAPACITY)
    }
}

impl NonceCache {
    /// Entries held by default.
    pub const DEFAULT_CAPACITY: usize = 65_536;

    /// An empty cache that holds at most `capacity` live nonces.
    pub fn new(capacity: usize) -> NonceCache {
        NonceCache {
            seen: BTreeMap::new(),
            by_time: BTreeSet::new(),
            capacity,
        }
    }

    /// Live nonces held.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no nonce is held.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// The most nonces held at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forgets the nonces of tokens that can no longer be accepted at
    /// `now`.
    pub fn expire(&mut self, now: UnixSeconds) {
        while let Some(&(at, nonce)) = self.by_time.first() {
            if at > now {
                break;
            }
            self.by_time.pop_first();
            self.seen.remove(&nonce);
        }
    }

    /// Spends the token's nonce: `Ok` the first time, then
    /// [`TokenError::AlreadyUsed`] for as long as the token could be
    /// accepted.
    ///
    /// # Errors
    /// [`TokenError::AlreadyUsed`]; [`TokenError::Busy`] when full of live
    /// nonces; [`TokenError::Expired`] for a token already dead at `now`.
    pub fn spend(&mut self, token: &VerifiedToken, now: UnixSeconds) -> Result<(), TokenError> {
        self.expire(now);
        let dead_at = token.dead_at();
        if dead_at <= now {
            return Err(TokenError::Expired);
        }
        if self.seen.contains_key(&token.nonce) {
            return Err(TokenError::AlreadyUsed);
        }
        if self.seen.len() >= self.capacity {
            return Err(TokenError::Busy);
        }
        self.seen.insert(token.nonce, dead_at);
        self.by_time.insert((dead_at, token.nonce));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: UnixSeconds = 1_700_000_000;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn claims() -> Claims {
        Claims {
            room: "arena".into(),
            role: Role::Player,
            seat: Some(3),
            user: b"user-42".to_vec(),
            server_id: "eu-1".into(),
            issued_at: NOW,
            expires_at: NOW + 120,
        }
    }

    fn nonce(n: u8) -> Nonce {
        Nonce([n; NONCE_LEN])
    }

    fn minted(c: &Claims) -> Vec<u8> {
        mint(&key(1), c, nonce(9)).expect("valid claims").to_bytes()
    }

    fn check(bytes: &[u8], now: UnixSeconds) -> Result<VerifiedToken, TokenError> {
        verify(&[key(1).verifying_key()], bytes, now, "eu-1")
    }

    #[test]
    fn a_minted_token_verifies_and_round_trips() {
        let t = mint(&key(1), &claims(), nonce(9)).unwrap();
        let bytes = t.to_bytes();
        assert_eq!(bytes.len(), FIXED_LEN + 5 + 7 + 4 + SIGNATURE_LEN);
        assert_eq!(Token::decode(&bytes).unwrap(), t);
        assert_eq!(Token::from_text(&t.to_text()).unwrap(), t);
        let v = check(&bytes, NOW).unwrap();
        assert_eq!(v.claims(), &claims());
        assert_eq!(v.nonce(), nonce(9));
        assert_eq!(v.user(), b"user-42");
        assert_eq!(v.key_index(), 0);
        assert_eq!(v.check_hello("arena", false), Ok(()));
        assert_eq!(v.seat_in(8), Ok(Some(3)));
        // The text form: no padding, and padded or spaced input reads too.
        let text = t.to_text();
        assert!(!text.contains('='));
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let mut padded = text.clone();
        while !padded.len().is_multiple_of(4) {
            padded.push('=');
        }
        assert_eq!(
            verify_text(
                &[key(1).verifying_key()],
                &format!(" {padded}\n"),
                NOW,
                "eu-1"
            )
            .unwrap(),
            v
        );
    }

    #[test]
    fn signing_is_deterministic() {
        assert_eq!(minted(&claims()), minted(&claims()));
        let other = mint(&key(1), &claims(), nonce(10)).unwrap().to_bytes();
        assert_ne!(minted(&claims()), other);
    }

    #[test]
    fn the_key_is_picked_by_its_id_among_several() {
        let bytes = minted(&claims());
        let keys = [key(5).verifying_key(), key(1).verifying_key()];
        assert_eq!(verify(&keys, &bytes, NOW, "eu-1").unwrap().key_index(), 1);
        let e = verify(&[key(5).verifying_key()], &bytes, NOW, "eu-1").unwrap_err();
        assert_eq!(
            e,
            TokenError::UnknownKey(KeyId::of(&key(1).verifying_key()))
        );
        assert_eq!(e.label(), "token_unknown_key");
    }

    #[test]
    fn a_key_with_the_same_id_but_another_secret_is_a_bad_signature() {
        // Forge: a token signed by key 2 but carrying key 1's id.
        let c = claims();
        let forged_sig = key(2)
            .sign(&signed_bytes(
                &c,
                KeyId::of(&key(1).verifying_key()),
                nonce(9),
            ))
            .to_bytes();
        let mut bytes = signed_bytes(&c, KeyId::of(&key(1).verifying_key()), nonce(9));
        bytes.extend_from_slice(&forged_sig);
        assert_eq!(check(&bytes, NOW), Err(TokenError::BadSignature));
    }

    #[test]
    fn every_changed_bit_is_refused() {
        let bytes = minted(&claims());
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                let e = check(&b, NOW).expect_err("a changed token is refused");
                // Within the signed claims, a change either breaks the layout
                // or the signature; never is it accepted.
                assert!(
                    matches!(
                        e,
                        TokenError::Malformed(_)
                            | TokenError::Version(_)
                            | TokenError::UnknownKey(_)
                            | TokenError::BadSignature
                    ),
                    "byte {i} bit {bit}: {e}"
                );
            }
        }
    }

    #[test]
    fn time_window_has_the_stated_skew() {
        let bytes = minted(&claims());
        // Issued up to CLOCK_SKEW in the future: accepted.
        assert!(check(&bytes, NOW - CLOCK_SKEW).is_ok());
        let e = check(&bytes, NOW - CLOCK_SKEW - 1).unwrap_err();
        assert_eq!(
            e,
            TokenError::NotYetValid {
                seconds: CLOCK_SKEW + 1
            }
        );
        assert_eq!(e.label(), "token_not_yet_valid");
        // Expired: from expires_at + CLOCK_SKEW on.
        assert!(check(&bytes, NOW + 120 + CLOCK_SKEW - 1).is_ok());
        let e = check(&bytes, NOW + 120 + CLOCK_SKEW).unwrap_err();
        assert_eq!(e, TokenError::Expired);
        assert_eq!(e.to_string(), "token expired");
        assert_eq!(e.label(), "token_expired");
        assert_eq!(check(&bytes, u64::MAX), Err(TokenError::Expired));
        assert!(matches!(
            check(&bytes, 0),
            Err(TokenError::NotYetValid { .. })
        ));
    }

    #[test]
    fn lifetimes_over_the_limit_are_refused_at_mint_and_at_verify() {
        let mut c = claims();
        c.expires_at = c.issued_at + MAX_TOKEN_LIFETIME;
        assert!(mint(&key(1), &c, nonce(1)).is_ok());
        c.expires_at += 1;
        assert_eq!(
            mint(&key(1), &c, nonce(1)),
            Err(Malformed::Lifetime(MAX_TOKEN_LIFETIME + 1))
        );
        // Signed anyway (a backend bug): the server refuses it too.
        let mut bytes = signed_bytes(&c, KeyId::of(&key(1).verifying_key()), nonce(1));
        let sig = key(1).sign(&bytes).to_bytes();
        bytes.extend_from_slice(&sig);
        assert_eq!(
            check(&bytes, NOW),
            Err(TokenError::Malformed(Malformed::Lifetime(
                MAX_TOKEN_LIFETIME + 1
            )))
        );
        c.expires_at = c.issued_at;
        assert_eq!(
            mint(&key(1), &c, nonce(1)),
            Err(Malformed::ExpiresBeforeIssue)
        );
    }

    #[test]
    fn wrong_server_room_and_role_are_refused_with_their_names() {
        let bytes = minted(&claims());
        let keys = [key(1).verifying_key()];
        let e = verify(&keys, &bytes, NOW, "us-2").unwrap_err();
        assert_eq!(e.to_string(), "token is for server \"eu-1\"");
        assert_eq!(e.label(), "token_wrong_server");
        let e = verify(&keys, &bytes, NOW, "").unwrap_err();
        assert_eq!(e.to_string(), "token is for server \"eu-1\"");
        let mut any = claims();
        any.server_id.clear();
        let e = verify(&keys, &minted(&any), NOW, "eu-1").unwrap_err();
        assert_eq!(e.to_string(), "token is for a server without an id");
        assert!(verify(&keys, &minted(&any), NOW, "").is_ok());

        let v = check(&bytes, NOW).unwrap();
        let e = v.check_hello("a", false).unwrap_err();
        assert_eq!(e.to_string(), "token is for room \"arena\"");
        assert_eq!(e.label(), "token_wrong_room");
        let e = v.check_hello("arena", true).unwrap_err();
        assert_eq!(e.to_string(), "player token used as a spectator");
        assert_eq!(e.label(), "token_player_as_spectator");

        let mut spec = claims();
        spec.role = Role::Spectator;
        spec.seat = None;
        let v = check(&minted(&spec), NOW).unwrap();
        let e = v.check_hello("arena", false).unwrap_err();
        assert_eq!(e.to_string(), "spectator token used as a player");
        assert_eq!(e.label(), "token_spectator_as_player");
        assert_eq!(v.check_hello("arena", true), Ok(()));
        assert_eq!(v.seat_in(8), Ok(None));
    }

    #[test]
    fn seats_are_checked_against_the_room() {
        let v = check(&minted(&claims()), NOW).unwrap();
        assert_eq!(v.seat_in(4), Ok(Some(3)));
        let e = v.seat_in(3).unwrap_err();
        assert_eq!(e, TokenError::SeatOutOfRange { seat: 3, seats: 3 });
        assert_eq!(e.label(), "token_seat_out_of_range");
        let mut any = claims();
        any.seat = None;
        assert_eq!(check(&minted(&any), NOW).unwrap().seat_in(1), Ok(None));
    }

    #[test]
    fn bad_claims_are_refused_at_mint() {
        let bad = |f: &dyn Fn(&mut Claims), want: Malformed| {
            let mut c = claims();
            f(&mut c);
            assert_eq!(mint(&key(1), &c, nonce(1)), Err(want), "{c:?}");
        };
        bad(&|c| c.room.clear(), Malformed::Room);
        bad(&|c| c.room = "r".repeat(65), Malformed::Room);
        bad(&|c| c.room = "a\nb".into(), Malformed::Room);
        bad(&|c| c.user = vec![0; 65], Malformed::User);
        bad(&|c| c.server_id = "s".repeat(65), Malformed::ServerId);
        bad(&|c| c.server_id = "\u{7}".into(), Malformed::ServerId);
        bad(&|c| c.seat = Some(MAX_SLOTS), Malformed::Seat(MAX_SLOTS));
        bad(&|c| c.role = Role::Spectator, Malformed::SpectatorSeat);
        // The longest of everything fits MAX_TOKEN_LEN exactly.
        let mut c = claims();
        c.room = "r".repeat(MAX_ROOM_LEN);
        c.user = vec![0xFF; MAX_USER_LEN];
        c.server_id = "s".repeat(MAX_SERVER_ID_LEN);
        let t = mint(&key(1), &c, nonce(1)).unwrap();
        assert_eq!(t.to_bytes().len(), MAX_TOKEN_LEN);
        assert!(t.to_text().len() <= MAX_TOKEN_TEXT);
        assert_eq!(Token::decode(&t.to_bytes()).unwrap(), t);
    }

    /// Rewrites the signed part with `edit` and signs again, so that only
    /// the layout check can refuse it.
    fn resigned(edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let t = mint(&key(1), &claims(), nonce(9)).unwrap();
        let mut b = t.signed_bytes();
        edit(&mut b);
        let sig = key(1).sign(&b).to_bytes();
        b.extend_from_slice(&sig);
        b
    }

    #[test]
    fn broken_layouts_are_named_even_when_signed() {
        let m = |b: &[u8]| match check(b, NOW) {
            Err(TokenError::Malformed(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(m(&[]), Malformed::TooShort);
        assert_eq!(m(b"BRTK"), Malformed::TooShort);
        assert_eq!(m(&[0; MAX_TOKEN_LEN + 1]), Malformed::TooLong);
        assert_eq!(m(&resigned(|b| b[0] = b'X')), Malformed::BadMagic);
        assert_eq!(m(&resigned(|b| b[5] = 2)), Malformed::Role(2));
        assert_eq!(m(&resigned(|b| b[6] = 40)), Malformed::Seat(40));
        assert_eq!(m(&resigned(|b| b[5] = 1)), Malformed::SpectatorSeat);
        assert_eq!(m(&resigned(|b| b[7] = 1)), Malformed::Reserved);
        assert_eq!(m(&resigned(|b| b[51] = 1)), Malformed::Reserved);
        assert_eq!(m(&resigned(|b| b[48] = 0)), Malformed::Length);
        assert_eq!(m(&resigned(|b| b[48] = 65)), Malformed::Length);
        assert_eq!(m(&resigned(|b| b[49] += 1)), Malformed::Length);
        assert_eq!(m(&resigned(|b| b.push(0))), Malformed::Length);
        assert_eq!(m(&resigned(|b| b[52] = 0xFF)), Malformed::Room);
        assert_eq!(m(&resigned(|b| b[52] = b'\t')), Malformed::Room);
        let last = FIXED_LEN + 5 + 7 + 3;
        assert_eq!(m(&resigned(|b| b[last] = 0xC0)), Malformed::ServerId);
        // Room length 0 with the length moved to the user id.
        assert_eq!(
            m(&resigned(|b| {
                b[48] = 0;
                b[49] += 5;
            })),
            Malformed::Room
        );
        let e = check(&resigned(|b| b[4] = 2), NOW).unwrap_err();
        assert_eq!(e, TokenError::Version(2));
        assert_eq!(e.label(), "token_version");
        let e = Token::from_text("not base64!").unwrap_err();
        assert_eq!(e, TokenError::Malformed(Malformed::NotBase64));
        assert_eq!(e.label(), "token_malformed");
        let long = "A".repeat(MAX_TOKEN_TEXT + 1);
        assert_eq!(
            Token::from_text(&long),
            Err(TokenError::Malformed(Malformed::TooLong))
        );
    }

    #[test]
    fn a_nonce_is_spent_once_while_its_token_lives() {
        let mut cache = NonceCache::new(4);
        let v = check(&minted(&claims()), NOW).unwrap();
        assert_eq!(cache.spend(&v, NOW), Ok(()));
        let e = cache.spend(&v, NOW + 1).unwrap_err();
        assert_eq!(e, TokenError::AlreadyUsed);
        assert_eq!(e.to_string(), "token already used");
        assert_eq!(e.label(), "token_replayed");
        // Still refused at the last second the token could be accepted.
        let last = v.dead_at() - 1;
        assert!(check(&minted(&claims()), last).is_ok());
        assert_eq!(cache.spend(&v, last), Err(TokenError::AlreadyUsed));
        // Once no server can accept the token, its nonce is forgotten.
        cache.expire(v.dead_at());
        assert!(cache.is_empty());
        assert_eq!(cache.spend(&v, v.dead_at()), Err(TokenError::Expired));
    }

    #[test]
    fn a_full_cache_refuses_rather_than_forgets() {
        let mut cache = NonceCache::new(3);
        let keys = [key(1).verifying_key()];
        let token = |n: u8, issued: u64| {
            let mut c = claims();
            c.issued_at = issued;
            c.expires_at = issued + 60;
            verify(
                &keys,
                &mint(&key(1), &c, nonce(n)).unwrap().to_bytes(),
                issued,
                "eu-1",
            )
            .unwrap()
        };
        for n in 0..3 {
            cache.spend(&token(n, NOW + u64::from(n)), NOW + 2).unwrap();
        }
        let e = cache.spend(&token(3, NOW + 3), NOW + 3).unwrap_err();
        assert_eq!(e, TokenError::Busy);
        assert_eq!(e.label(), "token_busy");
        assert_eq!(cache.len(), 3);
        // The oldest entry dies first and makes room.
        let first_dead = token(0, NOW).dead_at();
        cache.spend(&token(3, NOW + 3), first_dead).unwrap();
        assert_eq!(cache.len(), 3);
        assert_eq!(
            cache.spend(&token(1, NOW + 1), first_dead),
            Err(TokenError::AlreadyUsed)
        );
    }

    #[test]
    fn labels_are_distinct_and_messages_lowercase() {
        let all = [
            TokenError::Missing,
            TokenError::Malformed(Malformed::TooShort),
            TokenError::Version(9),
            TokenError::UnknownKey(KeyId([1; KEY_ID_LEN])),
            TokenError::BadSignature,
            TokenError::NotYetValid { seconds: 40 },
            TokenError::Expired,
            TokenError::WrongServer("x".into()),
            TokenError::WrongRoom("a".into()),
            TokenError::SpectatorAsPlayer,
            TokenError::PlayerAsSpectator,
            TokenError::SeatOutOfRange { seat: 9, seats: 8 },
            TokenError::AlreadyUsed,
            TokenError::Busy,
        ];
        let labels: BTreeSet<&str> = all.iter().map(TokenError::label).collect();
        assert_eq!(labels.len(), all.len());
        for e in &all {
            let m = e.to_string();
            assert!(m.starts_with(|c: char| c.is_ascii_lowercase()), "{m}");
            assert!(e.label().starts_with("token_"));
            assert!(e
                .label()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
        assert_eq!(
            TokenError::Missing.to_string(),
            "no token: this server requires one"
        );
        assert_eq!(TokenError::BadSignature.to_string(), "bad token signature");
    }

    fn arb_claims() -> impl Strategy<Value = Claims> {
        (
            "[a-z0-9 _.-]{1,64}",
            any::<bool>(),
            proptest::option::of(0..MAX_SLOTS),
            proptest::collection::vec(any::<u8>(), 0..=MAX_USER_LEN),
            "[a-z0-9-]{0,64}",
            any::<u64>(),
            1..=MAX_TOKEN_LIFETIME,
        )
            .prop_map(|(room, spectator, seat, user, server_id, issued, life)| {
                let issued_at = issued % (u64::MAX - MAX_TOKEN_LIFETIME);
                Claims {
                    room,
                    role: if spectator {
                        Role::Spectator
                    } else {
                        Role::Player
                    },
                    seat: if spectator { None } else { seat },
                    user,
                    server_id,
                    issued_at,
                    expires_at: issued_at + life,
                }
            })
    }

    proptest! {
        #[test]
        fn valid_claims_round_trip_and_verify(c in arb_claims(), n in any::<[u8; NONCE_LEN]>()) {
            let t = mint(&key(3), &c, Nonce(n)).unwrap();
            let bytes = t.to_bytes();
            prop_assert_eq!(bytes.len(), FIXED_LEN + c.room.len() + c.user.len() + c.server_id.len() + SIGNATURE_LEN);
            prop_assert_eq!(&Token::decode(&bytes).unwrap(), &t);
            prop_assert_eq!(&Token::from_text(&t.to_text()).unwrap(), &t);
            let v = verify(&[key(3).verifying_key()], &bytes, c.issued_at, &c.server_id).unwrap();
            prop_assert_eq!(v.claims(), &c);
            prop_assert_eq!(v.nonce(), Nonce(n));
        }

        #[test]
        fn any_bytes_decode_to_an_error_or_themselves(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(t) = Token::decode(&bytes) {
                prop_assert_eq!(t.to_bytes(), bytes.clone());
            }
            let _ = check(&bytes, NOW);
        }

        #[test]
        fn mutated_tokens_never_verify(c in arb_claims(), at in any::<usize>(), xor in 1..=255u8) {
            let mut bytes = mint(&key(3), &c, Nonce([7; NONCE_LEN])).unwrap().to_bytes();
            let i = at % bytes.len();
            bytes[i] ^= xor;
            prop_assert!(verify(&[key(3).verifying_key()], &bytes, c.issued_at, &c.server_id).is_err());
        }
    }
}

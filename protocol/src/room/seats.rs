//! Connections and seats: the hello (version, rules, the token's grant, a
//! free seat or a reconnect secret), kicks, disconnects, the grace period
//! a dropped player's seat is kept for, and handshake timeouts.
//!
//! Who may take which seat:
//! - a new player takes the seat its token names ([`Grant::seat`]) if it
//!   is free (else [`KickReason::SeatTaken`]), or the first free seat;
//! - a reconnect presents the [`ReconnectSecret`] of a seat (compared in
//!   constant time with every seat's); with tokens the seat must have been
//!   taken by the same user id and be the seat the token names, if any
//!   ([`KickReason::SeatNotGranted`]). The old connection, if still there,
//!   is closed with [`KickReason::Replaced`].

use super::{Client, ConnId, NetRules, Output, Phase, Rejection, RoomEvent, ServerRoom};
use crate::messages::*;
use crate::token::{TokenError, VerifiedToken};
use crate::Micros;
use bitroom_sim::game::SlotEvent;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, VecDeque};

/// What a verified connect token lets a hello do. The shell verifies the
/// token (signature, expiry, server id, room, role, nonce) and hands the
/// grant to [`ServerRoom::handle_hello`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The token's user id: a reconnect reclaims only a seat this user
    /// took.
    pub user: Vec<u8>,
    /// The seat the token names (`None`: any free seat).
    pub seat: Option<u8>,
}

impl Grant {
    /// The grant of a verified token.
    pub fn of(token: &VerifiedToken) -> Grant {
        Grant {
            user: token.user().to_vec(),
            seat: token.claims().seat,
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Seat<I> {
    pub(super) taken: bool,
    pub(super) owner: Option<ConnId>,
    pub(super) secret: ReconnectSecret,
    /// The user id of the token the seat was taken with.
    pub(super) user: Option<Vec<u8>>,
    pub(super) reserved_until: Option<Micros>,
    pub(super) inputs: BTreeMap<u64, I>,
    pub(super) input_ack: u64,
    pub(super) last: I,
}

impl<R: NetRules> ServerRoom<R> {
    /// The next reconnect secret: SHA-256 over the room's secret seed and
    /// a counter (a keyed generator: without the seed, one secret tells
    /// nothing about another), its first 128 bits.
    pub(super) fn next_secret(&mut self) -> ReconnectSecret {
        self.secrets += 1;
        let digest = Sha256::new()
            .chain_update(b"bitroom reconnect secret v1")
            .chain_update(self.config.secret_seed)
            .chain_update(self.secrets.to_le_bytes())
            .finalize();
        let mut secret = [0; 16];
        secret.copy_from_slice(&digest[..16]);
        ReconnectSecret(secret)
    }

    /// A new transport connection; it must say hello in time.
    pub fn handle_connect(&mut self, now: Micros, conn: ConnId) {
        let rate = self.config.tick_rate;
        self.clients.insert(
            conn,
            Client {
                phase: Phase::Hello { since: now },
                slot: None,
                acked: 0,
                sent: VecDeque::new(),
                newest_acked: 0,
                ack_horizon: 0,
                srtt: 100_000,
                rttvar: 50_000,
                lossy_until: 0,
                input_lead: None,
                tokens: rate * 2,
                refilled: now,
                dropped_window: 0,
                window_start: now,
                reports: VecDeque::new(),
                reported: None,
                rollbacks: 0,
                awaiting_ack: false,
                snapshot_at: now,
            },
        );
    }

    /// Closes a connection with a reason sent to the client first.
    pub fn kick(&mut self, conn: ConnId, reason: KickReason) {
        if !self.clients.contains_key(&conn) {
            return;
        }
        self.send_reliable(conn, &ServerReliable::Kick(reason.clone()));
        self.out.push_back(Output::Close {
            conn,
            reason: reason.clone(),
        });
        self.drop_client(conn, reason, false);
    }

    /// Kicks everyone (shutdown, or the room closing).
    pub fn kick_all(&mut self, reason: KickReason) {
        let conns: Vec<ConnId> = self.clients.keys().copied().collect();
        for c in conns {
            self.kick(c, reason.clone());
        }
    }

    /// The transport connection is gone (timeout, close, reset).
    pub fn handle_disconnect(&mut self, now: Micros, conn: ConnId) {
        let grace = now + self.config.reconnect_grace;
        if let Some(c) = self.clients.get(&conn) {
            if let Some(s) = c.slot {
                let seat = &mut self.seats[usize::from(s)];
                if seat.owner == Some(conn) {
                    seat.owner = None;
                    seat.reserved_until = Some(grace);
                }
            }
        }
        self.drop_client(conn, KickReason::Left, true);
    }

    pub(super) fn drop_client(&mut self, conn: ConnId, reason: KickReason, keep_seat: bool) {
        let Some(c) = self.clients.remove(&conn) else {
            return;
        };
        if let Some(s) = c.slot {
            let seat = &mut self.seats[usize::from(s)];
            if seat.owner == Some(conn) && !keep_seat {
                self.queued_events.push(SlotEvent::Leave(s));
                *seat = Seat::default();
            }
        }
        if matches!(c.phase, Phase::Active) || c.slot.is_some() {
            self.events.push_back(RoomEvent::Left {
                conn,
                slot: c.slot,
                reason,
            });
        }
    }

    /// A complete message from a connection's reliable stream. A hello
    /// that arrives this way has no token: rooms that require one
    /// ([`RoomConfig::tokens_required`](crate::RoomConfig::tokens_required))
    /// take hellos through [`ServerRoom::handle_hello`].
    pub fn handle_reliable(&mut self, now: Micros, conn: ConnId, bytes: &[u8]) {
        self.reliable(now, conn, bytes, None);
    }

    /// The first message of a connection (`bytes`, a hello) whose connect
    /// token the shell verified: `grant` says what the token allows
    /// (signature, expiry, server id, room, role and nonce are the
    /// shell's checks). Otherwise like [`ServerRoom::handle_reliable`]:
    /// the connection joins (a welcome and a snapshot are queued) or is
    /// refused with the reason.
    pub fn handle_hello(&mut self, now: Micros, conn: ConnId, bytes: &[u8], grant: Grant) {
        self.reliable(now, conn, bytes, Some(grant));
    }

    fn reliable(&mut self, now: Micros, conn: ConnId, bytes: &[u8], grant: Option<Grant>) {
        self.stats.bytes_in += bytes.len() as u64 + 4;
        let msg = match decode_client_reliable(bytes) {
            Ok(m) => m,
            Err(e) => {
                // A broken reliable stream cannot be resynchronised.
                self.reject(conn, Rejection::Malformed);
                self.kick(conn, KickReason::BadMessage(e.to_string()));
                return;
            }
        };
        let Some(c) = self.clients.get(&conn) else {
            return;
        };
        let active = matches!(c.phase, Phase::Active);
        match msg {
            ClientReliable::Hello(h) if !active => self.hello(now, conn, h, grant),
            ClientReliable::Desync(r) if active => self.desync(now, conn, r),
            // Leaving frees the slot at once, like a kick with reason `Left`.
            ClientReliable::Leave => self.kick(conn, KickReason::Left),
            _ => {
                self.reject(conn, Rejection::Unexpected);
                self.kick(
                    conn,
                    KickReason::BadMessage("message not allowed in this state".into()),
                );
            }
        }
    }

    fn hello(&mut self, now: Micros, conn: ConnId, h: Hello, grant: Option<Grant>) {
        if h.version != PROTOCOL_VERSION {
            return self.refuse(
                conn,
                KickReason::VersionMismatch {
                    server: PROTOCOL_VERSION,
                    client: h.version,
                },
            );
        }
        let fp = self.game.rules().fingerprint();
        if h.rules != fp {
            return self.refuse(
                conn,
                KickReason::RulesMismatch {
                    server: fp,
                    client: h.rules,
                },
            );
        }
        if self.config.tokens_required && grant.is_none() {
            return self.refuse(conn, KickReason::Token(TokenError::Missing));
        }
        let mut reconnect = false;
        let slot = if h.spectator {
            let spectators = self
                .clients
                .values()
                .filter(|c| matches!(c.phase, Phase::Active) && c.slot.is_none())
                .count();
            if spectators as u32 >= self.config.max_spectators {
                return self.refuse(conn, KickReason::RoomFull);
            }
            None
        } else if let Some(s) = h.reconnect.and_then(|secret| self.seat_of(secret)) {
            let seat = &self.seats[usize::from(s)];
            let granted = match &grant {
                Some(g) => {
                    g.seat.is_none_or(|gs| gs == s) && seat.user.as_deref() == Some(&g.user[..])
                }
                None => seat.user.is_none(),
            };
            if !granted {
                return self.refuse(conn, KickReason::SeatNotGranted(s));
            }
            reconnect = true;
            if let Some(old) = seat.owner {
                if old != conn {
                    let (secret, user) = (seat.secret, seat.user.clone());
                    self.kick(old, KickReason::Replaced);
                    // The kick freed the seat; take it back without a leave.
                    self.queued_events.retain(|e| *e != SlotEvent::Leave(s));
                    let seat = &mut self.seats[usize::from(s)];
                    seat.taken = true;
                    seat.secret = secret;
                    seat.user = user;
                }
            }
            Some(s)
        } else if let Some(s) = grant.as_ref().and_then(|g| g.seat) {
            match self.seats.get(usize::from(s)) {
                Some(seat) if !seat.taken => {}
                // The shell checked the seat against the room's size.
                _ => return self.refuse(conn, KickReason::SeatTaken(s)),
            }
            self.queued_events.push(SlotEvent::Join(s));
            Some(s)
        } else {
            let Some(s) = self.seats.iter().position(|seat| !seat.taken) else {
                return self.refuse(conn, KickReason::RoomFull);
            };
            self.queued_events.push(SlotEvent::Join(s as u8));
            Some(s as u8)
        };
        let secret = match slot {
            Some(s) if reconnect => self.seats[usize::from(s)].secret,
            Some(_) => self.next_secret(),
            None => ReconnectSecret::default(),
        };
        if let Some(s) = slot {
            let tick = self.game.tick();
            let seat = &mut self.seats[usize::from(s)];
            if !reconnect {
                seat.user = grant.map(|g| g.user);
            }
            seat.taken = true;
            seat.owner = Some(conn);
            seat.secret = secret;
            seat.reserved_until = None;
            seat.input_ack = seat.input_ack.max(tick);
        }
        let tick = self.game.tick();
        let c = self
            .clients
            .get_mut(&conn)
            .expect("hello from a known client");
        c.phase = Phase::Active;
        c.slot = slot;
        let welcome = Welcome {
            version: PROTOCOL_VERSION,
            slot,
            slots: self.game.slot_count(),
            tick,
            tick_rate: self.config.tick_rate,
            secret,
        };
        self.send_reliable(conn, &ServerReliable::Welcome(welcome));
        self.send_snapshot(now, conn);
        self.events.push_back(RoomEvent::Joined {
            conn,
            slot,
            name: h.name,
            reconnect,
        });
    }

    /// Refuses a hello: the kick, and a [`RoomEvent::Refused`].
    fn refuse(&mut self, conn: ConnId, reason: KickReason) {
        self.events.push_back(RoomEvent::Refused {
            conn,
            reason: reason.clone(),
        });
        self.kick(conn, reason);
    }

    /// The taken seat whose secret this is. Every seat's secret is
    /// compared, in constant time, so the time taken tells nothing about
    /// which seat (or how much of a secret) matched.
    fn seat_of(&self, secret: ReconnectSecret) -> Option<u8> {
        let mut found = None;
        for (i, seat) in self.seats.iter().enumerate() {
            if (seat.secret == secret) & seat.taken {
                found = Some(i as u8);
            }
        }
        found
    }

    pub(super) fn expire(&mut self, now: Micros) {
        let late: Vec<ConnId> = self
            .clients
            .iter()
            .filter(|(_, c)| {
                matches!(c.phase, Phase::Hello { since } if now >= since + self.config.handshake_timeout)
            })
            .map(|(&k, _)| k)
            .collect();
        for conn in late {
            self.kick(conn, KickReason::HandshakeTimeout);
        }
        for (s, seat) in self.seats.iter_mut().enumerate() {
            if seat.taken && seat.owner.is_none() && seat.reserved_until.is_some_and(|t| now >= t) {
                self.queued_events.push(SlotEvent::Leave(s as u8));
                *seat = Seat::default();
            }
        }
    }
}

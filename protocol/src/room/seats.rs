//! Connections and seats: the hello (version, rules, a free seat or a
//! reconnect token), kicks, disconnects, the grace period a dropped
//! player's seat is kept for, and handshake timeouts.

use super::{Client, ConnId, NetRules, Output, Phase, Rejection, RoomEvent, ServerRoom};
use crate::messages::*;
use crate::Micros;
use bitroom_sim::game::SlotEvent;
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug, Default)]
pub(super) struct Seat<I> {
    pub(super) taken: bool,
    pub(super) owner: Option<ConnId>,
    pub(super) token: u64,
    pub(super) reserved_until: Option<Micros>,
    pub(super) inputs: BTreeMap<u64, I>,
    pub(super) input_ack: u64,
    pub(super) last: I,
}

impl<R: NetRules> ServerRoom<R> {
    pub(super) fn next_token(&mut self) -> u64 {
        // splitmix64 over the seeded counter.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
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
                last_desync: None,
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

    /// A complete message from a connection's reliable stream.
    pub fn handle_reliable(&mut self, now: Micros, conn: ConnId, bytes: &[u8]) {
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
            ClientReliable::Hello(h) if !active => self.hello(now, conn, h),
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

    pub(super) fn hello(&mut self, now: Micros, conn: ConnId, h: Hello) {
        if h.version != PROTOCOL_VERSION {
            return self.kick(
                conn,
                KickReason::VersionMismatch {
                    server: PROTOCOL_VERSION,
                    client: h.version,
                },
            );
        }
        let fp = self.game.rules().fingerprint();
        if h.rules != fp {
            return self.kick(
                conn,
                KickReason::RulesMismatch {
                    server: fp,
                    client: h.rules,
                },
            );
        }
        let mut reconnect = false;
        let slot = if h.spectator {
            let spectators = self
                .clients
                .values()
                .filter(|c| matches!(c.phase, Phase::Active) && c.slot.is_none())
                .count();
            if spectators as u32 >= self.config.max_spectators {
                return self.kick(conn, KickReason::RoomFull);
            }
            None
        } else if let Some(s) = h.reconnect.and_then(|tok| {
            self.seats
                .iter()
                .position(|seat| seat.taken && seat.token == tok)
        }) {
            reconnect = true;
            if let Some(old) = self.seats[s].owner {
                if old != conn {
                    self.kick(old, KickReason::Replaced);
                    // The kick freed the seat; take it back without a leave.
                    self.queued_events
                        .retain(|e| *e != SlotEvent::Leave(s as u8));
                    self.seats[s].taken = true;
                    self.seats[s].token = h.reconnect.unwrap_or_default();
                }
            }
            Some(s as u8)
        } else {
            let Some(s) = self.seats.iter().position(|seat| !seat.taken) else {
                return self.kick(conn, KickReason::RoomFull);
            };
            self.queued_events.push(SlotEvent::Join(s as u8));
            Some(s as u8)
        };
        let token = match slot {
            Some(s) if reconnect => self.seats[usize::from(s)].token,
            Some(_) => self.next_token(),
            None => 0,
        };
        if let Some(s) = slot {
            let seat = &mut self.seats[usize::from(s)];
            seat.taken = true;
            seat.owner = Some(conn);
            seat.token = token;
            seat.reserved_until = None;
            seat.input_ack = seat.input_ack.max(self.game.tick());
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
            token,
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

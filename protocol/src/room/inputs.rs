//! Input collection: datagrams in (rate limited), input batches stored
//! per seat until their tick, and each tick's inputs taken from them
//! (never waiting: a missing input repeats the seat's last one).

use super::{ConnId, NetRules, Phase, Rejection, ServerRoom};
use crate::messages::*;
use crate::{widen_tick16, Micros};
use bitroom_sim::game::SlotEvent;

impl<R: NetRules> ServerRoom<R> {
    /// Takes a datagram's cost from the rate limit: `None` for an unknown
    /// (or just kicked) connection, `Some(false)` when over the limit.
    pub(super) fn admit(&mut self, now: Micros, conn: ConnId) -> Option<bool> {
        let rate = self.config.tick_rate;
        let c = self.clients.get_mut(&conn)?;
        // Refill at 3× the tick rate, up to 2 s of ticks.
        let add = (now.saturating_sub(c.refilled) * u64::from(rate) * 3 / 1_000_000) as u32;
        if add > 0 {
            c.tokens = (c.tokens + add).min(rate * 2);
            c.refilled = now;
        }
        let mut flooding = false;
        if now >= c.window_start + 1_000_000 {
            flooding = c.dropped_window > rate * 2;
            c.window_start = now;
            c.dropped_window = 0;
        }
        if flooding {
            self.kick(conn, KickReason::Flood);
            return None;
        }
        if c.tokens == 0 {
            c.dropped_window += 1;
            return Some(false);
        }
        c.tokens -= 1;
        Some(true)
    }

    /// A datagram from a connection. Datagrams before the connection's
    /// hello are dropped (counted in [`RoomStats::early_datagrams`]),
    /// without touching its rate limit: they are not charged to it later.
    pub fn handle_datagram(&mut self, now: Micros, conn: ConnId, bytes: &[u8]) {
        self.stats.bytes_in += bytes.len() as u64;
        match self.clients.get(&conn).map(|c| &c.phase) {
            Some(Phase::Active) => {}
            Some(Phase::Hello { .. }) => {
                self.stats.early_datagrams += 1;
                return;
            }
            None => return,
        }
        match self.admit(now, conn) {
            None => return,
            Some(false) => return self.reject(conn, Rejection::RateLimited),
            Some(true) => {}
        }
        let msg = match decode_client_datagram::<R::Input>(bytes) {
            Ok(m) => m,
            Err(_) => return self.reject(conn, Rejection::Malformed),
        };
        match msg {
            ClientDatagram::Ping {
                time,
                rollbacks,
                max_rollback,
            } => {
                self.send_datagram(conn, &ServerDatagram::Pong { time });
                if let Some(c) = self.clients.get_mut(&conn) {
                    // Cumulative: count what is new (reports may reorder).
                    if rollbacks > c.rollbacks {
                        self.stats.rollbacks_reported += rollbacks - c.rollbacks;
                        c.rollbacks = rollbacks;
                    }
                    self.stats.max_rollback_reported =
                        self.stats.max_rollback_reported.max(max_rollback);
                }
            }
            ClientDatagram::Ack(a) => self.ack(now, conn, a),
            ClientDatagram::Inputs(b) => {
                self.ack(now, conn, b.ack);
                self.inputs(now, conn, b);
            }
        }
    }

    pub(super) fn inputs(&mut self, now: Micros, conn: ConnId, b: InputBatch<R::Input>) {
        let current = self.game.tick();
        let Some(c) = self.clients.get(&conn) else {
            return;
        };
        if c.slot != Some(b.slot) {
            return self.reject(conn, Rejection::WrongSlot);
        }
        let ticks = b.ticks();
        if ticks == 0 {
            return;
        }
        let first = widen_tick16(b.first_tick, current);
        let newest = first + ticks - 1;
        let limit = current + u64::from(self.config.max_input_ahead);
        let held = self.seats[usize::from(b.slot)].input_ack;
        // Clock feedback: how early the earliest input this batch brings
        // arrived before its tick was due. Measured on the first input the
        // room did not hold yet (not the newest in the batch), so a lost
        // batch shows as the tick later its inputs arrived, and the
        // client's margin grows with the loss. A batch that brings nothing
        // (a duplicate, a reordered older one) says nothing new.
        let fresh = first.max(held + 1);
        if fresh <= newest {
            let lead = self.deadline(fresh) as i64 - now as i64;
            if let Some(c) = self.clients.get_mut(&conn) {
                c.input_lead = Some(lead);
            }
        }
        if newest > limit {
            // Counted, but the feedback above was still given and the
            // inputs in range are kept: refusing the whole batch without
            // telling the client left it steering by a stale (late) lead,
            // jumping further ahead, and every later batch was refused.
            self.reject(conn, Rejection::TooFarAhead);
        }
        let seat = &mut self.seats[usize::from(b.slot)];
        for (t, input) in b.inputs(first) {
            if t <= seat.input_ack {
                continue;
            }
            if t > limit {
                break;
            }
            seat.input_ack = t;
            if t <= current {
                self.stats.late_inputs += 1;
                continue;
            }
            seat.inputs.insert(t, input);
        }
    }

    /// Every seat's input for tick `t`: the input its player sent, the
    /// last one again when it is missing (counted), the default input for
    /// free seats, seats waiting for a reconnect, and seats that leave at
    /// `t` (`events`).
    pub(super) fn collect_inputs(&mut self, t: u64, events: &[SlotEvent]) -> Vec<R::Input> {
        let mut inputs = Vec::with_capacity(self.seats.len());
        for seat in &mut self.seats {
            let input = if !seat.taken {
                R::Input::default()
            } else if seat.owner.is_none() {
                // Dropped and waiting for a reconnect: stand still.
                R::Input::default()
            } else {
                match seat.inputs.remove(&t) {
                    Some(i) => i,
                    None => {
                        self.stats.missing_inputs += 1;
                        seat.last
                    }
                }
            };
            while let Some((&k, _)) = seat.inputs.first_key_value() {
                if k > t {
                    break;
                }
                seat.inputs.pop_first();
            }
            seat.last = input;
            inputs.push(input);
        }
        // A slot that left this tick starts from the default input.
        for e in events {
            if let SlotEvent::Leave(s) = *e {
                if let Some(i) = inputs.get_mut(usize::from(s)) {
                    if !self.seats[usize::from(s)].taken {
                        *i = R::Input::default();
                    }
                }
            }
        }
        inputs
    }
}

//! Tick frames: the step, each tick's frame (changed inputs, events, state
//! hash, input ack, timing feedback), sending and resending them per
//! client, and frame acknowledgements with the RTT they measure.

use super::snapshot::SNAPSHOT_RETRY;
use super::{Client, ConnId, NetRules, Phase, ServerRoom};
use crate::messages::*;
use crate::{widen_tick, Micros};
use bitroom_sim::game::{InputSet, SlotEvent};

/// Ticks of later frames that must have arrived before a missing frame
/// counts as lost and is resent (reordering tolerance).
const LOSS_GAP: u64 = 3;

/// Send record of one frame.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sent {
    pub(super) first: Micros,
    pub(super) last: Micros,
    /// Reported held by the client (beyond its first gap).
    pub(super) received: bool,
}

#[derive(Debug)]
pub(super) struct HistFrame<I> {
    pub(super) tick: u64,
    pub(super) hash: u64,
    pub(super) changes: Option<InputChanges<I>>,
    pub(super) events: Option<Vec<SlotEvent>>,
}

impl<R: NetRules> ServerRoom<R> {
    /// Steps the game one tick and sends every client its frame. Call it
    /// when [`ServerRoom::deadline`] of the next tick has come.
    pub fn tick(&mut self, now: Micros) {
        self.expire(now);
        // The last snapshot job is of the previous tick: never reused, so
        // the room does not keep its state copy (writers still holding
        // the job keep theirs).
        self.snapshot = None;
        let t = self.game.tick() + 1;
        let n = self.queued_events.len().min(MAX_FRAME_EVENTS);
        let events: Vec<SlotEvent> = self.queued_events.drain(..n).collect();
        let inputs = self.collect_inputs(t, &events);
        let set = InputSet {
            inputs: inputs.clone(),
            events: events.clone(),
        };
        self.game.step(&set);
        // Free slots always get the default input, so the inputs sent equal
        // what a snapshot restores as the delta base (`current_inputs`).
        let applied = inputs;
        debug_assert_eq!(applied, self.game.current_inputs());
        let hash = self.game.state_hash();
        let mut mask = 0u32;
        let mut changed = Vec::new();
        for (i, (a, b)) in applied.iter().zip(&self.prev_inputs).enumerate() {
            if a != b {
                mask |= 1 << i;
                changed.push(*a);
            }
        }
        self.prev_inputs = applied;
        self.last_inputs = set;
        self.history.push_back(HistFrame {
            tick: t,
            hash,
            changes: (mask != 0).then_some(InputChanges {
                mask,
                inputs: changed,
            }),
            events: (!events.is_empty()).then_some(events),
        });
        while self.history.len() > self.config.history as usize {
            self.history.pop_front();
        }
        self.stats.ticks += 1;
        let conns: Vec<ConnId> = self.clients.keys().copied().collect();
        for conn in conns {
            self.send_frames(now, conn);
        }
    }

    pub(super) fn frame_msg(
        &self,
        now: Micros,
        h: &HistFrame<R::Input>,
        c: &Client,
    ) -> ServerDatagram<R::Input> {
        let held = c.slot.map_or(0, |s| self.seats[usize::from(s)].input_ack);
        // The lead of the next input, not yet here, can only be lower than
        // the time left until its tick: report that when it is lower, so a
        // client whose inputs stopped coming (paused, jumped back too far,
        // cut off) learns it at once instead of steering by the last lead
        // measured, which stays as it was for as long as nothing arrives.
        let mut input_lead = c.input_lead;
        if input_lead != NO_INPUT_YET {
            let bound = (self.deadline(held + 1) as i64 - now as i64) / 100;
            if bound < i64::from(input_lead) {
                input_lead = bound.max(i64::from(NO_INPUT_YET) + 1) as i16;
            }
        }
        ServerDatagram::Frame(TickFrame {
            tick: h.tick as u32,
            hash: h.hash,
            input_ack: held as u32,
            input_lead,
            changes: h.changes.clone(),
            events: h.events.clone(),
        })
    }

    pub(super) fn send_frames(&mut self, now: Micros, conn: ConnId) {
        let t = self.game.tick();
        let period = 1_000_000 / u64::from(self.config.tick_rate);
        let Some(c) = self.clients.get(&conn) else {
            return;
        };
        if !matches!(c.phase, Phase::Active) {
            return;
        }
        let oldest = self.history.front().map_or(t, |h| h.tick);
        if c.acked + 1 < oldest {
            // Too far behind for resends: start it over from a snapshot,
            // but not again while the last one is unanswered (a stalled
            // client or a room catching up on late ticks would otherwise
            // get one every tick, and each costs an encode).
            let retry = (4 * c.srtt).max(SNAPSHOT_RETRY);
            if c.awaiting_ack && now < c.snapshot_at + retry {
                return;
            }
            return self.send_snapshot(now, conn);
        }
        // A frame is resent when frames first sent at least `LOSS_GAP`
        // ticks after its last send have arrived and it has not (lost, like
        // QUIC's packet threshold: about a round trip after it was sent),
        // or, when no later frame's receipt has been reported (the last
        // frames before a pause), after a retransmission timeout. The
        // timeout alone, as before (1.5 × a smoothed RTT that loss
        // inflated, up to 1 s), left a client at 20 % loss waiting for a
        // lost frame long enough that its acknowledgements fell out of the
        // frame history now and then, and each time it was started over
        // from a snapshot.
        let rto = (c.srtt + 4 * c.rttvar + 2 * period).min(1_000_000);
        let loss_gap = LOSS_GAP * period;
        let mut msgs = Vec::new();
        let mut resent = 0;
        for (i, tick) in (c.acked + 1..=t).enumerate() {
            let Some(h) = self.history.get((tick - oldest) as usize) else {
                break;
            };
            let fresh = i >= c.sent.len();
            let held = !fresh && c.sent[i].received;
            let due = !fresh
                && !held
                && !c.awaiting_ack
                && (c.ack_horizon >= c.sent[i].last + loss_gap || now >= c.sent[i].last + rto);
            if fresh || (due && resent < 8) {
                if !fresh {
                    resent += 1;
                }
                msgs.push((i, self.frame_msg(now, h, c)));
            }
        }
        let c = self.clients.get_mut(&conn).expect("client exists");
        for (i, _) in &msgs {
            if *i >= c.sent.len() {
                c.sent.push_back(Sent {
                    first: now,
                    last: now,
                    received: false,
                });
            } else {
                c.sent[*i].last = now;
            }
        }
        self.stats.resent_frames += resent;
        for (_, m) in msgs {
            self.send_datagram(conn, &m);
        }
    }

    pub(super) fn ack(&mut self, now: Micros, conn: ConnId, a: FrameAck) {
        let current = self.game.tick();
        let Some(c) = self.clients.get_mut(&conn) else {
            return;
        };
        let through = widen_tick(a.through, current).min(current);
        if through >= c.acked {
            // Acks from before the snapshot name older ticks.
            c.awaiting_ack = false;
        }
        if through < c.acked {
            // An ack overtaken by a newer one: nothing new, and its bits
            // are relative to an older base.
            return;
        }
        // What the ack newly shows as received: frames up to `through`,
        // `newest` and those its `recent` bits name. Remember the newest of
        // them and the latest time any of them was first sent.
        let newest_tick = widen_tick(a.newest, current).clamp(through, current);
        let mut newest: Option<(u64, Sent)> = None;
        let mut horizon = c.ack_horizon;
        while c.acked < through {
            c.acked += 1;
            if let Some(f) = c.sent.pop_front() {
                horizon = horizon.max(f.first);
                newest = Some((c.acked, f));
            }
        }
        // Frames stay received once reported: reordered acks merge.
        let from = newest_tick.saturating_sub(32).max(through + 1);
        for tick in from..=newest_tick {
            if !a.holds(tick, through, newest_tick) {
                continue;
            }
            if let Some(f) = c.sent.get_mut((tick - through - 1) as usize) {
                if !f.received {
                    f.received = true;
                    horizon = horizon.max(f.first);
                    newest = Some((tick, *f));
                }
            }
        }
        c.ack_horizon = horizon;
        // One RTT sample per ack, from the newest frame it shows, and only
        // when that frame is newly acknowledged and was sent once (QUIC's
        // rule, RFC 9002 section 5.1). Sampling every frame an ack covers,
        // as before, also measured frames that had waited behind a lost
        // one (received long ago, acknowledged in order only once the gap
        // closed): under 20 % loss the estimate grew to seconds, which
        // slowed retransmissions, which widened the gaps.
        if let Some((tick, f)) = newest {
            if tick > c.newest_acked {
                c.newest_acked = tick;
                if f.first == f.last {
                    let sample = now.saturating_sub(f.first).min(2_000_000);
                    // RFC 6298 smoothing.
                    c.rttvar = (c.rttvar * 3 + c.srtt.abs_diff(sample)) / 4;
                    c.srtt = (c.srtt * 7 + sample) / 8;
                }
            }
        }
    }
}

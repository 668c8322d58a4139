//! Tick frames: the step, each tick's frame (changed inputs, events, state
//! hash, input ack, timing feedback), sending and resending them per
//! client, and frame acknowledgements with the RTT they measure.

use super::snapshot::SNAPSHOT_RETRY;
use super::{Client, ConnId, NetRules, Phase, ServerRoom};
use crate::messages::*;
use crate::{widen_tick, Micros};
use bitroom_sim::game::{InputSet, SlotEvent};

/// Send record of one frame.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sent {
    pub(super) first: Micros,
    pub(super) last: Micros,
    pub(super) sampled: bool,
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
        self.measure_state();
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
        h: &HistFrame<R::Input>,
        c: &Client,
    ) -> ServerDatagram<R::Input> {
        let input_ack = c
            .slot
            .map_or(0, |s| self.seats[usize::from(s)].input_ack as u32);
        ServerDatagram::Frame(TickFrame {
            tick: h.tick as u32,
            hash: h.hash,
            input_ack,
            input_lead: c.input_lead,
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
        let rto = (c.srtt + c.srtt / 2 + 2 * period).min(1_000_000);
        let mut msgs = Vec::new();
        let mut resent = 0;
        for (i, tick) in (c.acked + 1..=t).enumerate() {
            let Some(h) = self.history.get((tick - oldest) as usize) else {
                break;
            };
            let fresh = i >= c.sent.len();
            let held = tick >= c.acked + 2
                && tick - c.acked - 2 < 32
                && c.later & (1 << (tick - c.acked - 2)) != 0;
            let due = !fresh && !held && !c.awaiting_ack && now >= c.sent[i].last + rto;
            if fresh || (due && resent < 8) {
                if !fresh {
                    resent += 1;
                }
                msgs.push((i, self.frame_msg(h, c)));
            }
        }
        let c = self.clients.get_mut(&conn).expect("client exists");
        for (i, _) in &msgs {
            if *i >= c.sent.len() {
                c.sent.push_back(Sent {
                    first: now,
                    last: now,
                    sampled: false,
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
        // RTT samples come from the first ack covering a frame sent once
        // (Karn); a frame held in the `later` bits is sampled when its bit
        // first shows, not when the gap before it closes.
        let mut samples = Vec::new();
        let advanced = through > c.acked;
        while c.acked < through {
            c.acked += 1;
            if let Some(f) = c.sent.pop_front() {
                if !f.sampled && f.first == f.last {
                    samples.push(now.saturating_sub(f.first));
                }
            }
        }
        // Received frames stay received: merge reordered acks.
        c.later = if advanced { a.later } else { c.later | a.later };
        for j in 0..32 {
            if c.later & (1 << j) == 0 {
                continue;
            }
            if let Some(f) = c.sent.get_mut(j + 1) {
                if !f.sampled {
                    f.sampled = true;
                    if f.first == f.last {
                        samples.push(now.saturating_sub(f.first));
                    }
                }
            }
        }
        for s in samples {
            c.srtt = (c.srtt * 7 + s.min(2_000_000)) / 8;
        }
    }
}

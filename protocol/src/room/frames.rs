//! Tick frames: the step, each tick's frame (changed inputs, events, state
//! hash), sending them to each client in bundles (with the input ack and
//! timing feedback) — new ticks, repeats on lossy links, resends of lost
//! ones — and frame acknowledgements with the RTT they measure.

use super::snapshot::SNAPSHOT_RETRY;
use super::{Client, ConnId, NetRules, Phase, ServerRoom};
use crate::messages::*;
use crate::{widen_tick16, Micros};
use bitroom_sim::game::{InputSet, SlotEvent};

/// Ticks of later frames that must have arrived before a missing frame
/// counts as lost and is resent (reordering tolerance; at least two
/// bundles).
const LOSS_GAP: u64 = 3;

/// How long a client's link counts as lossy after a frame to it was lost:
/// meanwhile every tick goes out twice (in two bundles in a row) until
/// acknowledged, so a single lost datagram costs a bundle interval instead
/// of a round trip.
const LOSSY_FOR: Micros = 10_000_000;

/// Bytes a bundle's header takes at most (tag, tick, input ack, lead,
/// length).
const BUNDLE_HEADER: usize = 1 + 5 + 5 + 3 + 2;

/// Most bundles sent to a client per tick (resends after an outage).
const MAX_BUNDLES_PER_SEND: usize = 2;

/// Send record of one frame.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sent {
    /// When it was first sent.
    pub(super) first: Micros,
    /// When it was last sent (first send, repeat or resend).
    pub(super) last: Micros,
    /// Reported held by the client (beyond its first gap).
    pub(super) received: bool,
    /// Repeats still to send (in the next bundles) unless acknowledged.
    pub(super) copies: u8,
    /// Resent after it was found lost (its acknowledgement says nothing
    /// about the round trip).
    pub(super) resent: bool,
}

/// Least retransmission timeout: a client acknowledges with its input
/// batches, one per batch interval, and a busy client's may come a few
/// ticks late; a frame resent on a timeout that short is not lost.
const MIN_RTO: Micros = 100_000;

/// Why a tick goes into a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pick {
    Fresh,
    Copy,
    /// Found lost: later frames arrived.
    Resend,
    /// Not acknowledged in time, nothing later either.
    Timeout,
}

#[derive(Debug)]
pub(super) struct HistFrame<I> {
    pub(super) tick: u64,
    pub(super) hash: u64,
    pub(super) changes: Option<InputChanges<I>>,
    pub(super) events: Option<Vec<SlotEvent>>,
    /// Bytes its [`TickData`] takes in a bundle with `back` 0, measured
    /// once here instead of per client and per send.
    pub(super) wire_len: usize,
}

impl<R: NetRules> ServerRoom<R> {
    /// Steps the game one tick and sends every client its frame. Call it
    /// when [`ServerRoom::deadline`] of the next tick has come.
    pub fn tick(&mut self, now: Micros) {
        // A server ticks each room after the others: its memory is cold.
        self.game.world().prefetch_state();
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
        let mut frame = HistFrame {
            tick: t,
            hash,
            changes: (mask != 0).then_some(InputChanges {
                mask,
                inputs: changed,
            }),
            events: (!events.is_empty()).then_some(events),
            wire_len: 0,
        };
        frame.wire_len = datagram_len(&Self::tick_data(&frame));
        self.history.push_back(frame);
        while self.history.len() > self.config.history as usize {
            self.history.pop_front();
        }
        self.stats.ticks += 1;
        let conns: Vec<ConnId> = self.clients.keys().copied().collect();
        for conn in conns {
            self.send_frames(now, conn);
        }
    }

    /// The input ack and lead a bundle to `c` carries.
    fn feedback(&self, now: Micros, c: &Client) -> (u64, i16) {
        let held = c.slot.map_or(0, |s| self.seats[usize::from(s)].input_ack);
        // The lead of the next input, not yet here, can only be lower than
        // the time left until its tick: report that when it is lower, so a
        // client whose inputs stopped coming (paused, jumped back too far,
        // cut off) learns it at once instead of steering by the last lead
        // measured, which stays as it was for as long as nothing arrives.
        let input_lead = c.input_lead.map_or(NO_INPUT_YET, |lead| {
            let bound = self.deadline(held + 1) as i64 - now as i64;
            // Milliseconds, rounded toward late.
            let ms = lead.min(bound).div_euclid(1000);
            ms.clamp(i64::from(NO_INPUT_YET) + 1, i64::from(i16::MAX)) as i16
        });
        (held, input_lead)
    }

    fn tick_data(h: &HistFrame<R::Input>) -> TickData<R::Input> {
        TickData {
            back: 0,
            hash: wire_hash(h.hash),
            changes: h.changes.clone(),
            events: h.events.clone(),
        }
    }

    /// Sends `conn` its bundle, on the ticks bundles are due
    /// ([`RoomConfig::ticks_per_send`](super::RoomConfig::ticks_per_send)):
    /// the ticks stepped since the last one; on a lossy link the ticks of
    /// the last bundle again when not yet acknowledged; and the ticks found
    /// lost. A client too far behind for resends is started over from a
    /// snapshot.
    pub(super) fn send_frames(&mut self, now: Micros, conn: ConnId) {
        let t = self.game.tick();
        let period = 1_000_000 / u64::from(self.config.tick_rate);
        let per_send = self.config.ticks_per_send();
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
        if !t.is_multiple_of(per_send) {
            return;
        }
        // A frame is resent when frames first sent at least `LOSS_GAP`
        // ticks (two bundles) after its last send have arrived and it has
        // not (lost, like QUIC's packet threshold: about a round trip after
        // it was sent), or, when no later frame's receipt has been reported
        // (the last frames before a pause), after a retransmission timeout.
        // The timeout alone, as before (1.5 × a smoothed RTT that loss
        // inflated, up to 1 s), left a client at 20 % loss waiting for a
        // lost frame long enough that its acknowledgements fell out of the
        // frame history now and then, and each time it was started over
        // from a snapshot.
        let rto = (c.srtt + 4 * c.rttvar + 2 * per_send * period).clamp(MIN_RTO, 1_000_000);
        let loss_gap = LOSS_GAP.max(2 * per_send) * period;
        let copies = u8::from(now < c.lossy_until);
        let mut picks: Vec<(Pick, usize)> = Vec::new();
        for (i, tick) in (c.acked + 1..=t).enumerate() {
            if tick < oldest {
                continue;
            }
            let Some(s) = c.sent.get(i) else {
                picks.push((Pick::Fresh, i));
                continue;
            };
            if s.received {
                continue;
            }
            if s.copies > 0 {
                picks.push((Pick::Copy, i));
            } else if !c.awaiting_ack && c.ack_horizon >= s.last + loss_gap {
                picks.push((Pick::Resend, i));
            } else if !c.awaiting_ack && now >= s.last + rto {
                picks.push((Pick::Timeout, i));
            }
        }
        // New ticks first (newest first), then repeats, then resends
        // (oldest first); what does not fit waits for the next bundle.
        picks.sort_by_key(|&(p, i)| (p, if p >= Pick::Resend { i } else { usize::MAX - i }));
        let mut bundles: Vec<Vec<(Pick, usize)>> = Vec::new();
        let mut size = 0;
        for (p, i) in picks {
            let h = &self.history[(c.acked + 1 + i as u64 - oldest) as usize];
            // Up to 4 more bytes for the entry's `back` once ordered.
            let len = h.wire_len + 4;
            let full = bundles
                .last()
                .is_none_or(|b| b.len() == MAX_BUNDLE_TICKS || size + len > MAX_DATAGRAM);
            if full {
                if bundles.len() == MAX_BUNDLES_PER_SEND {
                    break;
                }
                bundles.push(Vec::new());
                size = BUNDLE_HEADER;
            }
            size += len;
            if let Some(b) = bundles.last_mut() {
                b.push((p, i));
            }
        }
        let (held, input_lead) = self.feedback(now, c);
        let mut msgs = Vec::with_capacity(bundles.len());
        for b in &mut bundles {
            b.sort_by_key(|&(_, i)| std::cmp::Reverse(i));
            let mut prev = t + 1;
            let frames = b
                .iter()
                .map(|&(_, i)| {
                    let tick = c.acked + 1 + i as u64;
                    let mut d = Self::tick_data(&self.history[(tick - oldest) as usize]);
                    d.back = (prev - 1 - tick) as u32;
                    prev = tick;
                    d
                })
                .collect();
            msgs.push(ServerDatagram::Frames(FrameBundle {
                tick: t as u16,
                input_ack: (held as i64 - t as i64).clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                    as i32,
                input_lead,
                frames,
            }));
        }
        let c = self.clients.get_mut(&conn).expect("client exists");
        let mut resent = 0;
        let mut done: Vec<(Pick, usize)> = bundles.into_iter().flatten().collect();
        done.sort_by_key(|&(_, i)| i);
        for (p, i) in done {
            match p {
                Pick::Fresh => {
                    // New ticks that did not fit are recorded as never sent
                    // (`last` 0): the loss rule resends them next time.
                    while c.sent.len() < i {
                        c.sent.push_back(Sent {
                            first: now,
                            last: 0,
                            received: false,
                            copies: 0,
                            resent: true,
                        });
                    }
                    c.sent.push_back(Sent {
                        first: now,
                        last: now,
                        received: false,
                        copies,
                        resent: false,
                    });
                }
                Pick::Copy => {
                    let s = &mut c.sent[i];
                    s.copies -= 1;
                    s.last = now;
                }
                Pick::Resend | Pick::Timeout => {
                    let s = &mut c.sent[i];
                    s.last = now;
                    s.resent = true;
                    s.copies = 1;
                    resent += 1;
                    if p == Pick::Resend {
                        // Evidence of loss (not just a quiet client).
                        c.lossy_until = now + LOSSY_FOR;
                    }
                }
            }
        }
        self.stats.resent_frames += resent;
        for m in msgs {
            self.send_datagram(conn, &m);
        }
    }

    pub(super) fn ack(&mut self, now: Micros, conn: ConnId, a: FrameAck) {
        let current = self.game.tick();
        let Some(c) = self.clients.get_mut(&conn) else {
            return;
        };
        let through = widen_tick16(a.through, current).min(current);
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
        let newest_tick = through.saturating_add(u64::from(a.ahead)).min(current);
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
                // A repeat (redundancy) may have been the copy that arrived:
                // the sample is then up to a bundle interval long.
                if !f.resent {
                    let sample = now.saturating_sub(f.first).min(2_000_000);
                    // RFC 6298 smoothing.
                    c.rttvar = (c.rttvar * 3 + c.srtt.abs_diff(sample)) / 4;
                    c.srtt = (c.srtt * 7 + sample) / 8;
                }
            }
        }
    }
}

//! Snapshots: the state sent to a joining or resyncing client, packed off
//! the room's tick ([`SnapshotJob`]), and desync reports, answered with one.
//!
//! What a client's desync reports may cost:
//! - size: a report's state may be at most twice the room's latest packed
//!   snapshot plus [`REPORT_MARGIN`] ([`ServerRoom::max_report_state`]);
//!   the shell refuses longer messages before reading them
//!   ([`ServerRoom::max_client_message`]), and the room kicks with
//!   [`KickReason::ReportTooLarge`];
//! - rate: every report is answered with a resync snapshot, but one more
//!   than [`MAX_REPORTS`] within [`REPORT_PERIOD`] is a kick
//!   ([`KickReason::TooManyReports`]); an honest client sends one per
//!   resync;
//! - what the shell writes: at most one [`RoomEvent::Desync`] (the report
//!   file) per client per [`REPORT_WINDOW`].

use super::{ConnId, NetRules, Output, RoomEvent, ServerRoom};
use crate::messages::*;
use crate::Micros;
use bitroom_sim::game::GameSnapshot;
use std::fmt;
use std::sync::{Arc, OnceLock};
use xxhash_rust::xxh3::xxh3_64;

/// Least time between snapshots to a client that has not acknowledged
/// the previous one (µs).
pub(super) const SNAPSHOT_RETRY: Micros = 2_000_000;

/// At most one desync report per client per window becomes a
/// [`RoomEvent::Desync`] (µs).
pub const REPORT_WINDOW: Micros = 10_000_000;
/// Desync reports a client may send within [`REPORT_PERIOD`]; one more is
/// a kick.
pub const MAX_REPORTS: usize = 3;
/// The period [`MAX_REPORTS`] counts over (µs).
pub const REPORT_PERIOD: Micros = 60_000_000;
/// Bytes a report's state may have beyond twice the room's packed
/// snapshot (also the bound before the room has packed one).
pub const REPORT_MARGIN: usize = 64 << 10;
/// A desync report's bytes besides its state (tag, tick, hashes, length).
const REPORT_OVERHEAD: usize = 64;
/// The largest message a joined client may send before the room has
/// packed a snapshot ([`ServerRoom::max_client_message`] is never less).
pub const BASE_CLIENT_MESSAGE: usize = REPORT_MARGIN + REPORT_OVERHEAD;

/// What a [`SnapshotJob`] packs: a game snapshot with its rules type erased.
trait PackSource: Send + Sync {
    fn packed(&self) -> Vec<u8>;
}

impl<R: NetRules> PackSource for GameSnapshot<R> {
    fn packed(&self) -> Vec<u8> {
        self.to_packed()
    }
}

struct JobInner {
    tick: u64,
    state_hash: u64,
    source: Box<dyn PackSource>,
    messages: OnceLock<Vec<Vec<u8>>>,
}

/// The room's state at one tick, to be packed into [`SnapshotChunk`]
/// messages once, by whoever sends it first (see [`Output::Snapshot`]).
///
/// Cheap to clone: clones share the state and the packing.
#[derive(Clone)]
pub struct SnapshotJob(Arc<JobInner>);

impl SnapshotJob {
    /// The tick of the state.
    pub fn tick(&self) -> u64 {
        self.0.tick
    }

    /// The state hash at that tick.
    pub fn state_hash(&self) -> u64 {
        self.0.state_hash
    }

    /// Whether some clone has packed it already.
    pub fn is_packed(&self) -> bool {
        self.0.messages.get().is_some()
    }

    /// Bytes of the packed messages, once some clone has packed them.
    pub fn packed_len(&self) -> Option<usize> {
        self.0.messages.get().map(|m| m.iter().map(Vec::len).sum())
    }

    /// Whether `self` and `other` are the same job (share one packing).
    pub fn same_job(&self, other: &SnapshotJob) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The encoded [`ServerReliable::Snapshot`] messages, in order
    /// (unframed, like [`Output::Reliable`]'s bytes). The first call packs
    /// the state (blocking: milliseconds for large rooms); later calls, on
    /// any clone, return the same messages.
    pub fn messages(&self) -> &[Vec<u8>] {
        self.0.messages.get_or_init(|| {
            let bytes = self.0.source.packed();
            let total_len = bytes.len() as u32;
            let bytes_hash = xxh3_64(&bytes);
            bytes
                .chunks(SNAPSHOT_CHUNK)
                .enumerate()
                .map(|(i, chunk)| {
                    encode_server_reliable(&ServerReliable::Snapshot(SnapshotChunk {
                        tick: self.0.tick,
                        state_hash: self.0.state_hash,
                        total_len,
                        bytes_hash,
                        offset: (i * SNAPSHOT_CHUNK) as u32,
                        data: chunk.to_vec(),
                    }))
                })
                .collect()
        })
    }
}

/// Jobs for the same tick and state hash pack to the same messages.
impl PartialEq for SnapshotJob {
    fn eq(&self, other: &SnapshotJob) -> bool {
        (self.0.tick, self.0.state_hash) == (other.0.tick, other.0.state_hash)
    }
}

impl Eq for SnapshotJob {}

impl fmt::Debug for SnapshotJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotJob")
            .field("tick", &self.0.tick)
            .field("state_hash", &self.0.state_hash)
            .field("packed", &self.is_packed())
            .finish()
    }
}

impl<R: NetRules> ServerRoom<R> {
    /// Sends the current state; the client continues from its tick.
    pub(super) fn send_snapshot(&mut self, now: Micros, conn: ConnId) {
        // Clients joining at the same tick (a room filling up) share one
        // job, so the state is copied and packed once. Only `tick` steps
        // the game (joins take effect at the next step), so the hash it
        // computed for this tick is the state's: no second hashing.
        let tick = self.game.tick();
        let state_hash = match self.history.back() {
            Some(h) if h.tick == tick => h.hash,
            _ => self.game.state_hash(),
        };
        let job = match &self.snapshot {
            Some(j) if j.tick() == tick && j.state_hash() == state_hash => j.clone(),
            _ => {
                self.stats.snapshots_packed += 1;
                let job = SnapshotJob(Arc::new(JobInner {
                    tick,
                    state_hash,
                    source: Box::new(self.game.snapshot()),
                    messages: OnceLock::new(),
                }));
                self.snapshot = Some(job.clone());
                self.size_probe = Some(job.clone());
                job
            }
        };
        self.out.push_back(Output::Snapshot { conn, job });
        self.stats.snapshots += 1;
        if let Some(c) = self.clients.get_mut(&conn) {
            c.acked = tick;
            c.newest_acked = tick;
            c.sent.clear();
            c.awaiting_ack = true;
            c.snapshot_at = now;
            c.refilled = now.max(c.refilled);
        }
    }

    /// Takes the size of the latest snapshot once the shell has packed it
    /// (called every tick).
    pub(super) fn measure_state(&mut self) {
        if let Some(n) = self.size_probe.as_ref().and_then(SnapshotJob::packed_len) {
            self.packed_state = n;
            self.size_probe = None;
        }
    }

    /// The largest state a desync report may carry: twice the room's latest
    /// packed snapshot plus [`REPORT_MARGIN`] (a client's state at a tick
    /// is the room's state at that tick, give or take the desync), within
    /// [`MAX_RELIABLE`].
    pub fn max_report_state(&self) -> usize {
        (2 * self.packed_state + REPORT_MARGIN).min(MAX_RELIABLE - REPORT_OVERHEAD)
    }

    /// The largest message a joined client may send: a desync report of
    /// [`ServerRoom::max_report_state`]. The shell refuses a longer length
    /// prefix before reading the message.
    pub fn max_client_message(&self) -> usize {
        self.max_report_state() + REPORT_OVERHEAD
    }

    pub(super) fn desync(&mut self, now: Micros, conn: ConnId, report: DesyncReport) {
        let limit = self.max_report_state();
        if report.state.len() > limit {
            return self.kick(
                conn,
                KickReason::ReportTooLarge {
                    len: report.state.len() as u32,
                    limit: limit as u32,
                },
            );
        }
        let Some(c) = self.clients.get_mut(&conn) else {
            return;
        };
        while c.reports.front().is_some_and(|&t| now >= t + REPORT_PERIOD) {
            c.reports.pop_front();
        }
        c.reports.push_back(now);
        if c.reports.len() > MAX_REPORTS {
            return self.kick(conn, KickReason::TooManyReports);
        }
        self.stats.desyncs += 1;
        // Every report gets its resync (the client waits for it), but the
        // shell hears of one per window: the report file, the log line.
        if c.reported.is_none_or(|t| now >= t + REPORT_WINDOW) {
            c.reported = Some(now);
            let slot = c.slot;
            self.events
                .push_back(RoomEvent::Desync { conn, slot, report });
        }
        self.send_snapshot(now, conn);
    }
}

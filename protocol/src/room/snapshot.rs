//! Snapshots: the state sent to a joining or resyncing client, packed off
//! the room's tick ([`SnapshotJob`]), and desync reports, answered with one.

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

    pub(super) fn desync(&mut self, now: Micros, conn: ConnId, report: DesyncReport) {
        let Some(c) = self.clients.get_mut(&conn) else {
            return;
        };
        // At most one report (and resync) per second per client.
        if c.last_desync.is_some_and(|t| now < t + 1_000_000) {
            return;
        }
        c.last_desync = Some(now);
        let slot = c.slot;
        self.stats.desyncs += 1;
        self.events
            .push_back(RoomEvent::Desync { conn, slot, report });
        self.send_snapshot(now, conn);
    }
}

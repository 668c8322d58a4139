//! Whether every room's tick loop is alive: each open room holds a
//! [`Beat`] and stamps it at every tick; [`Liveness::stalled`] names a
//! room whose last tick is too long ago (a tick stuck in the simulation,
//! a worker thread blocked). Health reports to Agones stop while one is
//! stalled (see `agones.rs`).
//!
//! A stamp is one relaxed atomic store per tick; only the check takes the
//! lock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The open rooms' last ticks.
#[derive(Debug, Default)]
pub(crate) struct Liveness {
    rooms: Mutex<BTreeMap<u64, (String, Arc<AtomicU64>)>>,
    next_id: AtomicU64,
}

/// A room's stamp; dropping it takes the room off [`Liveness`].
#[derive(Debug)]
pub(crate) struct Beat {
    id: u64,
    last: Arc<AtomicU64>,
    of: Arc<Liveness>,
}

impl Liveness {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, (String, Arc<AtomicU64>)>> {
        self.rooms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a room that is alive at `now` (µs on the rooms' clock).
    pub(crate) fn register(self: &Arc<Liveness>, name: &str, now: u64) -> Beat {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let last = Arc::new(AtomicU64::new(now));
        self.lock().insert(id, (name.to_string(), last.clone()));
        Beat {
            id,
            last,
            of: self.clone(),
        }
    }

    /// The room whose last stamp is oldest, if it is more than `limit` µs
    /// before `now`: its name and the age of its last stamp (µs).
    #[cfg_attr(not(feature = "agones"), allow(dead_code))]
    pub(crate) fn stalled(&self, now: u64, limit: u64) -> Option<(String, u64)> {
        let rooms = self.lock();
        let (name, last) = rooms
            .values()
            .map(|(name, last)| (name, last.load(Ordering::Relaxed)))
            .min_by_key(|&(_, last)| last)?;
        let age = now.saturating_sub(last);
        (age > limit).then(|| (name.clone(), age))
    }
}

impl Beat {
    /// The room ticked at `now` (µs on the rooms' clock).
    pub(crate) fn stamp(&self, now: u64) {
        self.last.store(now, Ordering::Relaxed);
    }
}

impl Drop for Beat {
    fn drop(&mut self) {
        self.of.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_oldest_room_past_the_limit_and_forgets_closed_ones() {
        let live = Arc::new(Liveness::default());
        assert_eq!(live.stalled(1_000_000, 10), None, "no rooms: alive");
        let a = live.register("a", 100);
        let b = live.register("b", 100);
        a.stamp(900);
        b.stamp(500);
        assert_eq!(live.stalled(1000, 600), None);
        assert_eq!(live.stalled(1000, 400), Some(("b".into(), 500)));
        drop(b);
        assert_eq!(live.stalled(1000, 400), None);
        drop(a);
        assert!(live.lock().is_empty());
    }
}

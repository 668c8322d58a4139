//! What every task of a server shares: the settings, the measurements,
//! the room registry, the tick timer, load shedding, admission and the
//! limits' accounting, the recording quota, and shutdown.
//!
//! Shutdown (mini-redis style): a watch channel tells every task; a
//! channel whose senders the tasks hold tells when they are all gone.

use crate::admission::Admission;
use crate::config::{Limits, RecordConfig, SHED_FOR};
use crate::limits::{Peers, PendingBudget};
use crate::liveness::Liveness;
use crate::monitor::Monitor;
use crate::quota::Quota;
use crate::registry::Registry;
use crate::ticker::Ticker;
use bitroom_protocol::{Micros, RoomConfig};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::warn;

/// State shared by the server's tasks.
#[derive(Debug)]
pub(crate) struct Context<R> {
    pub rules: R,
    pub room: RoomConfig,
    pub max_rooms: usize,
    /// [`crate::ServerConfig::cpu_budget`].
    pub cpu_budget: Option<u32>,
    /// Rooms the server takes now (see [`crate::capacity`]): `max_rooms`
    /// until measured.
    pub capacity: AtomicUsize,
    /// Rooms an Agones allocation reserved and no player opened yet (the
    /// `rooms` Counter's bookkeeping): opened even past `capacity`, which
    /// may have fallen since the allocation counted on them.
    pub reserved: AtomicUsize,
    pub room_idle: Duration,
    pub hello_timeout: Duration,
    /// The rooms' clock starts here ([`micros`]).
    pub base: Instant,
    pub monitor: Arc<Monitor>,
    /// Set once: every task winds down.
    pub shutdown: watch::Sender<bool>,
    pub record: Option<RecordConfig>,
    /// The disk quota of the record directory (with `record`).
    pub quota: Option<Arc<Quota>>,
    /// Version, rules and token checks; room creation limits.
    pub admission: Admission,
    /// [`crate::ServerConfig::limits`].
    pub limits: Limits,
    /// Bytes reserved for unfinished reliable messages.
    pub budget: PendingBudget,
    /// Connections per address, half-open connections.
    pub peers: Peers,
    /// Wakes the rooms for their ticks.
    pub ticker: Ticker,
    /// [`crate::ServerConfig::shed_lateness`].
    pub shed_lateness: Option<Duration>,
    /// Joins are refused until this time (µs since `base`).
    pub shed_until: AtomicU64,
    pub rooms: Registry,
    /// Every open room's last tick (health reports).
    pub liveness: Arc<Liveness>,
    pub next_conn: AtomicU64,
    /// Connections of every transport (at most `max_connections`).
    pub connections: Arc<AtomicUsize>,
    pub max_connections: usize,
    /// Held by every task; `recv` on the other end returns `None` once
    /// all have finished.
    pub done: mpsc::Sender<()>,
}

/// A connection's place in [`crate::ServerConfig::max_connections`],
/// given back when dropped.
#[derive(Debug)]
pub(crate) struct ConnSlot {
    count: Arc<AtomicUsize>,
    monitor: Arc<Monitor>,
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
        self.monitor.connection(false);
    }
}

impl<R> Context<R> {
    /// A place for a new connection of any transport, or `None` (counted
    /// as refused) when the server has `max_connections` already.
    pub(crate) fn admit(&self) -> Option<ConnSlot> {
        if self.connections.fetch_add(1, Ordering::Relaxed) >= self.max_connections {
            self.connections.fetch_sub(1, Ordering::Relaxed);
            self.monitor.refused("too_many_connections");
            return None;
        }
        self.monitor.connection(true);
        Some(ConnSlot {
            count: self.connections.clone(),
            monitor: self.monitor.clone(),
        })
    }

    /// A room started a tick `lateness` late: past the shedding threshold,
    /// refuse joins for [`SHED_FOR`] from now.
    pub(crate) fn tick_lateness(&self, lateness: Duration) {
        if self.shed_lateness.is_some_and(|limit| lateness >= limit) {
            let until = micros(self.base) + SHED_FOR.as_micros() as Micros;
            let before = self.shed_until.fetch_max(until, Ordering::Relaxed);
            if before < micros(self.base) {
                warn!(
                    "a room ticked {} ms late: refusing joins for {SHED_FOR:?}",
                    lateness.as_millis()
                );
            }
        }
    }

    /// Whether joins are being refused (see [`crate::ServerConfig::shed_lateness`]).
    pub(crate) fn shedding(&self) -> bool {
        micros(self.base) < self.shed_until.load(Ordering::Relaxed)
    }
}

/// Resolves when the shutdown flag is set (without holding its lock).
pub(crate) async fn shutting_down(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|&s| s).await;
}

/// Microseconds since `base`: the rooms' clock.
pub(crate) fn micros(base: Instant) -> Micros {
    base.elapsed().as_micros() as Micros
}

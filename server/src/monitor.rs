//! What the server measures: tick time and lateness histograms, room
//! counters, connection counts. Kept in-process for status lines and the
//! demo report, and mirrored to the `metrics` facade for Prometheus
//! (`--metrics ADDR`, see [`crate::metrics_http`]).

use bitroom_protocol::RoomStats;
use hdrhistogram::Histogram;
use metrics::{counter, gauge, histogram};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Metric names (Prometheus).
pub mod names {
    /// Histogram: time to step a room one tick and queue its frames (s).
    pub const TICK_DURATION: &str = "bitroom_tick_duration_seconds";
    /// Histogram: how late a tick started after its deadline (s).
    pub const TICK_LATENESS: &str = "bitroom_tick_lateness_seconds";
    /// Gauge: rooms.
    pub const ROOMS: &str = "bitroom_rooms";
    /// Gauge: clients in rooms (players and spectators).
    pub const CLIENTS: &str = "bitroom_clients";
    /// Gauge: QUIC connections.
    pub const CONNECTIONS: &str = "bitroom_connections";
    /// Counter: payload bytes received.
    pub const BYTES_IN: &str = "bitroom_bytes_in_total";
    /// Counter: payload bytes sent.
    pub const BYTES_OUT: &str = "bitroom_bytes_out_total";
    /// Counter: inputs that arrived after their tick.
    pub const LATE_INPUTS: &str = "bitroom_late_inputs_total";
    /// Counter: ticks at which a player's input was missing.
    pub const MISSING_INPUTS: &str = "bitroom_missing_inputs_total";
    /// Counter: desync reports from clients.
    pub const DESYNCS: &str = "bitroom_desyncs_total";
    /// Counter: rollbacks clients reported.
    pub const ROLLBACKS: &str = "bitroom_rollbacks_reported_total";
    /// Counter: refused messages, by `kind`.
    pub const REJECTED: &str = "bitroom_rejected_messages_total";
    /// Counter: frames resent.
    pub const RESENT: &str = "bitroom_resent_frames_total";
    /// Counter: snapshots sent.
    pub const SNAPSHOTS: &str = "bitroom_snapshots_total";
    /// Counter: ticks stepped.
    pub const TICKS: &str = "bitroom_ticks_total";
    /// Counter: rooms closed by a panic.
    pub const ROOM_PANICS: &str = "bitroom_room_panics_total";
    /// Counter: connections refused or dropped before joining, by `reason`.
    pub const REFUSED: &str = "bitroom_refused_connections_total";
    /// Counter: datagrams dropped because a room's queue was full.
    pub const QUEUE_DROPS: &str = "bitroom_room_queue_drops_total";
    /// Counter: datagrams the kernel dropped on the server's UDP socket
    /// because its receive buffer was full (Linux).
    pub const UDP_DROPS: &str = "bitroom_udp_receive_drops_total";
    /// Counter: clients closed after they joined, by `reason` (flood,
    /// message timeout, too many reports, …; not leaving or shutdown).
    pub const KICKS: &str = "bitroom_kicks_total";
    /// Counter: datagrams that came before their connection's hello
    /// (dropped).
    pub const EARLY_DATAGRAMS: &str = "bitroom_early_datagrams_total";
    /// Gauge: bytes reserved for unfinished reliable messages.
    pub const PENDING_BYTES: &str = "bitroom_pending_message_bytes";
    /// Counter: times the record quota bit (a report deleted or not
    /// written, a recording stopped or not started).
    pub const QUOTA_BITES: &str = "bitroom_record_quota_bites_total";
    /// Gauge: the rooms the server takes now (`capacity`: measured with
    /// `--cpu-budget`, else `--max-rooms`).
    pub const ROOM_CAPACITY: &str = "bitroom_room_capacity";
    /// Gauge: cores the process used over the last 10 s.
    pub const CPU_CORES: &str = "bitroom_cpu_cores";
    /// Gauge: a room's cost in cores, as last measured.
    pub const ROOM_CPU_CORES: &str = "bitroom_room_cpu_cores";
}

/// Tick-time and lateness distributions (µs).
#[derive(Debug, Clone)]
pub struct TickHistograms {
    /// Tick durations.
    pub duration: Histogram<u64>,
    /// Tick lateness.
    pub lateness: Histogram<u64>,
}

impl TickHistograms {
    fn new() -> TickHistograms {
        let h = || Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds");
        TickHistograms {
            duration: h(),
            lateness: h(),
        }
    }

    fn record(&mut self, duration: Duration, lateness: Duration) {
        let us = |d: Duration| (d.as_micros() as u64).clamp(1, 60_000_000);
        self.duration.saturating_record(us(duration));
        self.lateness.saturating_record(us(lateness));
    }
}

/// A summary of a histogram in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quantiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Quantiles {
    fn of(h: &Histogram<u64>) -> Quantiles {
        Quantiles {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// A picture of the server at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Rooms open.
    pub rooms: usize,
    /// QUIC connections.
    pub connections: u64,
    /// Clients in rooms.
    pub clients: u32,
    /// Per room: its counters.
    pub room_stats: BTreeMap<String, RoomStats>,
    /// Per room: its players' seats and names.
    pub room_seats: BTreeMap<String, BTreeMap<u8, String>>,
    /// Tick duration since start (µs).
    pub tick: Quantiles,
    /// Tick lateness since start (µs).
    pub lateness: Quantiles,
    /// Rooms closed by a panic.
    pub room_panics: u64,
    /// Connections refused or dropped before joining a room, by reason.
    pub refused: BTreeMap<&'static str, u64>,
    /// Datagrams the kernel dropped on the server's socket since it opened
    /// (Linux; zero where unknown).
    pub udp_drops: u64,
    /// Clients closed after joining, by reason (not leaving, shutdown).
    pub kicks: BTreeMap<&'static str, u64>,
    /// Datagrams that came before their connection's hello (dropped).
    pub early_datagrams: u64,
    /// Bytes reserved for unfinished reliable messages now.
    pub pending_bytes: u64,
    /// Times the record quota bit.
    pub quota_bites: u64,
}

/// Shared measurements of a running server.
#[derive(Debug)]
pub struct Monitor {
    total: Mutex<TickHistograms>,
    interval: Mutex<TickHistograms>,
    rooms: Mutex<BTreeMap<String, RoomStats>>,
    seats: Mutex<BTreeMap<String, BTreeMap<u8, String>>>,
    connections: AtomicU64,
    room_panics: AtomicU64,
    refused: Mutex<BTreeMap<&'static str, u64>>,
    udp_drops: AtomicU64,
    kicks: Mutex<BTreeMap<&'static str, u64>>,
    early_datagrams: AtomicU64,
    /// Shared with the server's budget of unfinished messages.
    pub(crate) pending_bytes: Arc<AtomicUsize>,
    quota_bites: AtomicU64,
    /// Ticks of every room, and those that started late
    /// ([`crate::capacity::LATE`]).
    ticks: AtomicU64,
    late_ticks: AtomicU64,
}

impl Default for Monitor {
    fn default() -> Monitor {
        Monitor {
            total: Mutex::new(TickHistograms::new()),
            interval: Mutex::new(TickHistograms::new()),
            rooms: Mutex::new(BTreeMap::new()),
            seats: Mutex::new(BTreeMap::new()),
            connections: AtomicU64::new(0),
            room_panics: AtomicU64::new(0),
            refused: Mutex::new(BTreeMap::new()),
            udp_drops: AtomicU64::new(0),
            kicks: Mutex::new(BTreeMap::new()),
            early_datagrams: AtomicU64::new(0),
            pending_bytes: Arc::default(),
            quota_bites: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            late_ticks: AtomicU64::new(0),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Monitor {
    /// One room tick.
    pub fn tick(&self, duration: Duration, lateness: Duration) {
        lock(&self.total).record(duration, lateness);
        lock(&self.interval).record(duration, lateness);
        histogram!(names::TICK_DURATION).record(duration.as_secs_f64());
        histogram!(names::TICK_LATENESS).record(lateness.as_secs_f64());
        counter!(names::TICKS).increment(1);
        self.ticks.fetch_add(1, Ordering::Relaxed);
        if lateness >= crate::capacity::LATE {
            self.late_ticks.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Ticks so far, and those that started late.
    pub(crate) fn tick_counts(&self) -> (u64, u64) {
        (
            self.ticks.load(Ordering::Relaxed),
            self.late_ticks.load(Ordering::Relaxed),
        )
    }

    /// A room's counters now; exports what changed since `prev`.
    pub fn room(&self, name: &str, prev: &RoomStats, now: &RoomStats) {
        let d = |a: u64, b: u64| b.saturating_sub(a);
        counter!(names::BYTES_IN).increment(d(prev.bytes_in, now.bytes_in));
        counter!(names::BYTES_OUT).increment(d(prev.bytes_out, now.bytes_out));
        counter!(names::LATE_INPUTS).increment(d(prev.late_inputs, now.late_inputs));
        counter!(names::MISSING_INPUTS).increment(d(prev.missing_inputs, now.missing_inputs));
        counter!(names::DESYNCS).increment(d(prev.desyncs, now.desyncs));
        counter!(names::ROLLBACKS).increment(d(prev.rollbacks_reported, now.rollbacks_reported));
        counter!(names::RESENT).increment(d(prev.resent_frames, now.resent_frames));
        counter!(names::SNAPSHOTS).increment(d(prev.snapshots, now.snapshots));
        for (kind, a, b) in [
            ("malformed", prev.malformed, now.malformed),
            ("wrong_slot", prev.wrong_slot, now.wrong_slot),
            ("too_far_ahead", prev.too_far_ahead, now.too_far_ahead),
            ("rate_limited", prev.rate_limited, now.rate_limited),
            ("unexpected", prev.unexpected, now.unexpected),
        ] {
            if b > a {
                counter!(names::REJECTED, "kind" => kind).increment(b - a);
            }
        }
        let mut rooms = lock(&self.rooms);
        rooms.insert(name.to_string(), *now);
        let clients: u32 = rooms.values().map(|s| s.players + s.spectators).sum();
        gauge!(names::CLIENTS).set(f64::from(clients));
    }

    /// Players in rooms now (spectators not counted), as of each room's
    /// last published counters (every 15 ticks).
    pub fn players(&self) -> u32 {
        lock(&self.rooms).values().map(|s| s.players).sum()
    }

    /// Snapshot bytes a connection's writer sent (the room's own counters
    /// leave out the snapshots it hands to the writers to pack).
    pub fn bytes_out(&self, n: u64) {
        counter!(names::BYTES_OUT).increment(n);
    }

    /// A room opened.
    pub fn room_opened(&self, name: &str) {
        let mut rooms = lock(&self.rooms);
        rooms.insert(name.to_string(), RoomStats::default());
        gauge!(names::ROOMS).set(rooms.len() as f64);
    }

    /// A room's players now: seat and name.
    pub fn room_seats(&self, name: &str, seats: BTreeMap<u8, String>) {
        lock(&self.seats).insert(name.to_string(), seats);
    }

    /// A room closed (`panicked`: by a panic).
    pub fn room_closed(&self, name: &str, panicked: bool) {
        lock(&self.seats).remove(name);
        let mut rooms = lock(&self.rooms);
        rooms.remove(name);
        gauge!(names::ROOMS).set(rooms.len() as f64);
        let clients: u32 = rooms.values().map(|s| s.players + s.spectators).sum();
        gauge!(names::CLIENTS).set(f64::from(clients));
        if panicked {
            self.room_panics.fetch_add(1, Ordering::Relaxed);
            counter!(names::ROOM_PANICS).increment(1);
        }
    }

    /// A QUIC connection opened (+1) or closed (-1).
    pub fn connection(&self, opened: bool) {
        let n = if opened {
            self.connections.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.connections.fetch_sub(1, Ordering::Relaxed) - 1
        };
        gauge!(names::CONNECTIONS).set(n as f64);
    }

    /// A joined client was closed for `reason` (a [`KickReason::label`](bitroom_protocol::KickReason::label)).
    pub fn kicked(&self, reason: &'static str) {
        *lock(&self.kicks).entry(reason).or_default() += 1;
        counter!(names::KICKS, "reason" => reason).increment(1);
    }

    /// A datagram came before its connection's hello and was dropped.
    pub fn early_datagram(&self) {
        self.early_datagrams.fetch_add(1, Ordering::Relaxed);
        counter!(names::EARLY_DATAGRAMS).increment(1);
    }

    /// The record quota bit.
    pub fn quota_bite(&self) {
        self.quota_bites.fetch_add(1, Ordering::Relaxed);
        counter!(names::QUOTA_BITES).increment(1);
    }

    /// Publishes the bytes reserved for unfinished messages.
    pub fn publish_pending(&self) {
        gauge!(names::PENDING_BYTES).set(self.pending_bytes.load(Ordering::Relaxed) as f64);
    }

    /// A connection refused or dropped before it joined a room.
    pub fn refused(&self, reason: &'static str) {
        *lock(&self.refused).entry(reason).or_default() += 1;
        counter!(names::REFUSED, "reason" => reason).increment(1);
    }

    /// The kernel's count of datagrams dropped on the server's socket.
    pub fn udp_drops(&self, total: u64) {
        self.udp_drops.store(total, Ordering::Relaxed);
        counter!(names::UDP_DROPS).absolute(total);
    }

    /// The picture now.
    pub fn snapshot(&self) -> Snapshot {
        let rooms = lock(&self.rooms).clone();
        let total = lock(&self.total);
        Snapshot {
            rooms: rooms.len(),
            connections: self.connections.load(Ordering::Relaxed),
            clients: rooms.values().map(|s| s.players + s.spectators).sum(),
            room_stats: rooms,
            room_seats: lock(&self.seats).clone(),
            tick: Quantiles::of(&total.duration),
            lateness: Quantiles::of(&total.lateness),
            room_panics: self.room_panics.load(Ordering::Relaxed),
            refused: lock(&self.refused).clone(),
            kicks: lock(&self.kicks).clone(),
            early_datagrams: self.early_datagrams.load(Ordering::Relaxed),
            pending_bytes: self.pending_bytes.load(Ordering::Relaxed) as u64,
            quota_bites: self.quota_bites.load(Ordering::Relaxed),
            udp_drops: self.udp_drops.load(Ordering::Relaxed),
        }
    }

    /// Tick duration and lateness since the previous call (and resets).
    pub fn take_interval(&self) -> (Quantiles, Quantiles) {
        let mut i = lock(&self.interval);
        let q = (Quantiles::of(&i.duration), Quantiles::of(&i.lateness));
        i.duration.reset();
        i.lateness.reset();
        q
    }
}

//! Congestion control for a 60 Hz stream: Cubic with a floor under its
//! window.
//!
//! Why: every packet quinn sends is congestion controlled, datagrams
//! included, and a packet may only leave while `bytes in flight + one full
//! MTU` stays below the window. Standard controllers halve the window on
//! every loss episode and, since a game's stream is application-limited,
//! never grow it back (Cubic and NewReno skip growth on app-limited acks).
//! Under 10–20 % random loss the window sits at its minimum of two MTUs
//! (2.4–2.9 kB) while a client at a 300 ms round trip has 3–5 kB of tick
//! datagrams in flight, lost ones included until they are declared lost.
//! So quinn holds datagrams back: they queue in the datagram send buffer
//! and leave seconds late, coalesced into a few packets a second. Measured
//! with 8 bots behind the link conditioner at 20 % loss and 150 ± 50 ms:
//! 10 packets a second per client instead of 60, and round trips of
//! 0.8–2.1 s for a 0.35 s link.
//!
//! Random loss on a wireless link is not congestion, and a tick stream of
//! a few kB/s cannot congest anything a player can play on, so the window
//! never drops below a floor sized for it ([`STREAM_FLOOR`]). Above the
//! floor Cubic keeps working as usual: a join or resync snapshot (tens of
//! kB) still backs off on a congested path.

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics, CubicConfig};
use quinn_proto::RttEstimator;
use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

/// The least congestion window (bytes). Two things size it: a client at
/// a 1 s round trip has about 5 kB of tick datagrams in flight (both
/// directions carry 3-6 kB/s with headers), plus the full MTU quinn keeps
/// free for the next packet; and through an outage (no acks at all) every
/// datagram sent counts as in flight until the link is back, so the
/// window must hold a few seconds of the stream or quinn blocks the
/// sender, and only its loss probes, backing off, get out. With 16 KiB,
/// 8 bots behind a 2 s outage (bursty loss, 256 kbit/s) stalled 2-10 s
/// after the link healed and one timed out; with 32 KiB they recovered
/// within 0.8 s.
pub const STREAM_FLOOR: u64 = 32 * 1024;

/// Builds [`FlooredCubic`] controllers.
#[derive(Clone, Debug)]
pub struct FlooredCubicConfig {
    cubic: Arc<CubicConfig>,
    floor: u64,
}

impl FlooredCubicConfig {
    /// Cubic with its defaults, whose window never drops below `floor`.
    pub fn new(floor: u64) -> FlooredCubicConfig {
        FlooredCubicConfig {
            cubic: Arc::new(CubicConfig::default()),
            floor,
        }
    }
}

impl Default for FlooredCubicConfig {
    fn default() -> FlooredCubicConfig {
        FlooredCubicConfig::new(STREAM_FLOOR)
    }
}

impl ControllerFactory for FlooredCubicConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(FlooredCubic {
            inner: self.cubic.clone().build(now, current_mtu),
            floor: self.floor,
        })
    }
}

/// Cubic whose window is at least a floor (see the module docs).
pub struct FlooredCubic {
    inner: Box<dyn Controller>,
    floor: u64,
}

impl std::fmt::Debug for FlooredCubic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlooredCubic")
            .field("window", &self.inner.window())
            .field("floor", &self.floor)
            .finish()
    }
}

impl Controller for FlooredCubic {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.inner.window().max(self.floor)
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(FlooredCubic {
            inner: self.inner.clone_box(),
            floor: self.floor,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window().max(self.floor)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

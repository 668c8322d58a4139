//! Headless bot players: load tests, soak tests, the demo.
//!
//! A [`BotFleet`] runs any number of bots of one game on the current tokio
//! runtime, each a [`connect`]ed session whose input comes from the game's
//! bot brain ([`BotRules::bot`]) once per tick, or a load client
//! ([`crate::load`]) sending the game's [`BotRules::random_input`]s. The
//! fleet
//! sums their counters into a [`FleetStatus`] (for a per-second status
//! line) and a final [`FleetReport`].

use crate::conditioner::ConditionerConfig;
use crate::{connect, ConnectOptions, Event, HandleStats};
use bitroom_protocol::NetRules;
use bitroom_sim::game::bots::{Bot, BotRules};
use bitroom_transport::CertPin;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// One bot.
#[derive(Clone, Debug)]
pub struct BotSpec<S> {
    /// Display name.
    pub name: String,
    /// Room to join.
    pub room: String,
    /// How it plays.
    pub strategy: S,
    /// Seed of its inputs.
    pub seed: u64,
    /// Predict (otherwise follow the confirmed game only: cheaper).
    pub predict: bool,
    /// Its own conditioned socket.
    pub conditioner: Option<ConditionerConfig>,
    /// Traffic only ([`crate::load`]): no simulation, no hash checks.
    pub load: bool,
    /// Its connect token's bytes (servers that require tokens).
    pub token: Option<Vec<u8>>,
}

/// When a bot counts as failed (besides desyncs and lost connections).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailRule {
    /// Longest time without a newly confirmed tick while the link is up
    /// (a conditioner's scheduled outage does not count).
    pub stall: Duration,
    /// Most snapshots after the join (resyncs).
    pub max_resyncs: u64,
    /// Least share of the ticks it was in the room for whose hash it
    /// checked (ppm).
    pub min_verified_ppm: u32,
}

impl Default for FailRule {
    /// 2 s, 3 resyncs, 90 %.
    fn default() -> FailRule {
        FailRule {
            stall: Duration::from_secs(2),
            max_resyncs: 3,
            min_verified_ppm: 900_000,
        }
    }
}

/// A bot's counters, live and at the end.
#[derive(Clone, Debug, Default)]
pub struct BotReport {
    /// Its name.
    pub name: String,
    /// Its room.
    pub room: String,
    /// Its slot, once welcomed.
    pub slot: Option<u8>,
    /// Whether it is connected now.
    pub connected: bool,
    /// Desync events seen.
    pub desyncs: u64,
    /// Latest stats.
    pub stats: Option<HandleStats>,
    /// Time connected.
    pub connected_for: Duration,
    /// Connect → first snapshot applied.
    pub time_to_sync: Option<Duration>,
    /// Tick of the first snapshot applied: every confirmed tick after it
    /// can be checked against the server's hash (`stats.session.verified`
    /// counts those that were).
    pub synced_at: Option<u64>,
    /// Why it stopped early, or why it never connected.
    pub error: Option<String>,
    /// Whether it used a link conditioner.
    pub conditioned: bool,
    /// Whether it was a load client (no simulation: nothing verified).
    pub load: bool,
    /// The room's tick rate (from the welcome).
    pub tick_rate: u32,
    /// Longest time without a newly confirmed tick while the link was up.
    pub stall: Duration,
    /// Time connected and stats when the steady state began
    /// ([`STEADY_AFTER`] after the join): bandwidth is measured from then.
    pub steady_from: Option<(Duration, HandleStats)>,
    /// Median and 99th percentile of the session's RTT
    /// ([`HandleStats::rtt`]) sampled every 250 ms from the first
    /// synced frame on.
    pub rtt_p50_p99: Option<(Duration, Duration)>,
}

/// Bandwidth is measured from this long after a bot's join on, so the
/// join snapshot does not count.
pub const STEADY_AFTER: Duration = Duration::from_secs(3);

/// IPv4 and UDP headers per datagram (what a data plan pays on top of
/// the UDP payload quinn counts).
const IP_UDP_HEADER: u64 = 28;

/// Bytes received and sent on the wire (UDP payloads plus IP and UDP
/// headers).
fn wire_bytes(s: &HandleStats) -> (u64, u64) {
    let q = &s.quic;
    (
        q.udp_rx.bytes + IP_UDP_HEADER * q.udp_rx.datagrams,
        q.udp_tx.bytes + IP_UDP_HEADER * q.udp_tx.datagrams,
    )
}

impl BotReport {
    /// Snapshots after the join.
    pub fn resyncs(&self) -> u64 {
        self.stats
            .map_or(0, |s| s.session.snapshots.saturating_sub(1))
    }

    /// Ticks the room stepped while the bot was in it.
    pub fn ticks_in_room(&self) -> u64 {
        (self.connected_for.as_micros() * u128::from(self.tick_rate) / 1_000_000) as u64
    }

    /// Share of [`BotReport::ticks_in_room`] hash-checked (ppm; 0 before
    /// the first tick).
    pub fn verified_ppm(&self) -> u32 {
        let verified = self.stats.map_or(0, |s| s.session.verified);
        let ticks = self.ticks_in_room();
        if ticks == 0 {
            return 0;
        }
        (u128::from(verified) * 1_000_000 / u128::from(ticks)).min(1_000_000) as u32
    }

    /// Bandwidth down and up on the wire (kbit/s, IP and UDP headers
    /// included) in the steady state (from [`STEADY_AFTER`] after the
    /// join), or over the whole connection for short runs.
    pub fn wire_kbps(&self) -> (f64, f64) {
        let Some(end) = &self.stats else {
            return (0.0, 0.0);
        };
        let (rx, tx) = wire_bytes(end);
        let (t0, rx0, tx0) = match &self.steady_from {
            Some((t, s)) if self.connected_for > *t + Duration::from_secs(1) => {
                let (rx0, tx0) = wire_bytes(s);
                (*t, rx0, tx0)
            }
            _ => (Duration::ZERO, 0, 0),
        };
        let secs = self
            .connected_for
            .saturating_sub(t0)
            .as_secs_f64()
            .max(1e-3);
        // Floats at the report's edge only.
        (
            (rx - rx0) as f64 * 8.0 / 1000.0 / secs,
            (tx - tx0) as f64 * 8.0 / 1000.0 / secs,
        )
    }

    /// Why the bot failed (empty: it did not).
    pub fn failures(&self, rule: &FailRule) -> Vec<String> {
        let mut why = Vec::new();
        if let Some(e) = &self.error {
            why.push(e.clone());
        }
        if self.desyncs > 0 {
            why.push(format!("{} desyncs", self.desyncs));
        }
        if self.load || self.slot.is_none() {
            return why;
        }
        if self.stall >= rule.stall {
            why.push(format!("stalled {:.1} s", self.stall.as_secs_f64()));
        }
        if self.resyncs() > rule.max_resyncs {
            why.push(format!("{} resyncs", self.resyncs()));
        }
        if self.verified_ppm() < rule.min_verified_ppm {
            why.push(format!(
                "verified {:.1} % of {} ticks",
                f64::from(self.verified_ppm()) / 1e4,
                self.ticks_in_room()
            ));
        }
        why
    }
}

/// What the fleet sees right now (sums over bots).
#[derive(Clone, Copy, Debug, Default)]
pub struct FleetStatus {
    /// Time since the fleet started.
    pub elapsed: Duration,
    /// Bots connected now.
    pub connected: usize,
    /// Bots in the fleet.
    pub total: usize,
    /// Mean RTT over connected bots.
    pub mean_rtt: Duration,
    /// Rollbacks.
    pub rollbacks: u64,
    /// Deepest rollback.
    pub max_rollback: u64,
    /// Desyncs.
    pub desyncs: u64,
    /// UDP bytes received.
    pub udp_rx: u64,
    /// UDP bytes sent.
    pub udp_tx: u64,
    /// Bots that failed or dropped.
    pub failed: usize,
}

impl FleetStatus {
    /// A one-line summary, with rates against `prev` (one period ago).
    pub fn line(&self, prev: &FleetStatus) -> String {
        let dt = (self.elapsed.saturating_sub(prev.elapsed))
            .as_secs_f64()
            .max(1e-3);
        let kb = |b: u64| b as f64 / 1000.0 / dt;
        format!(
            "t {:>5.1}s  bots {}/{}  rtt {:>5.1} ms  rollbacks {:>6} (max {:>2})  desyncs {}  in {:>7.1} kB/s  out {:>7.1} kB/s{}",
            self.elapsed.as_secs_f64(),
            self.connected,
            self.total,
            self.mean_rtt.as_secs_f64() * 1e3,
            self.rollbacks,
            self.max_rollback,
            self.desyncs,
            kb(self.udp_rx.saturating_sub(prev.udp_rx)),
            kb(self.udp_tx.saturating_sub(prev.udp_tx)),
            if self.failed > 0 {
                format!("  failed {}", self.failed)
            } else {
                String::new()
            }
        )
    }
}

/// The end of a run.
#[derive(Clone, Debug, Default)]
pub struct FleetReport {
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Every bot.
    pub bots: Vec<BotReport>,
    /// What counts as failed.
    pub rule: FailRule,
}

impl FleetReport {
    /// Desyncs over all bots.
    pub fn desyncs(&self) -> u64 {
        self.bots.iter().map(|b| b.desyncs).sum()
    }

    /// Bots that failed by [`FleetReport::rule`]: never connected,
    /// dropped, desynced, stalled, resynced too often or verified too few
    /// ticks.
    pub fn failures(&self) -> usize {
        self.bots
            .iter()
            .filter(|b| !b.failures(&self.rule).is_empty())
            .count()
    }

    /// A table: one line per bot, with why it failed.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<8} {:<8} {:>4} {:>7} {:>7} {:>9} {:>5} {:>11} {:>9} {:>8} {:>8} {:>6} {:>7} {:>7}",
            "bot",
            "room",
            "slot",
            "desyncs",
            "resyncs",
            "rollbacks",
            "depth",
            "rtt p50/p99",
            "down kb/s",
            "up kb/s",
            "verified",
            "%",
            "stall s",
            "sync ms"
        );
        for b in &self.bots {
            let s = b.stats.map(|s| s.session).unwrap_or_default();
            let (down, up) = b.wire_kbps();
            let why = b.failures(&self.rule);
            let _ = writeln!(
                out,
                "{:<8} {:<8} {:>4} {:>7} {:>7} {:>9} {:>5} {:>11} {:>9.1} {:>8.1} {:>8} {:>6.1} {:>7.1} {:>7}{}{}",
                b.name,
                b.room,
                b.slot.map_or("-".into(), |s| s.to_string()),
                b.desyncs,
                b.resyncs(),
                s.rollbacks,
                s.max_rollback,
                b.rtt_p50_p99.map_or("-".into(), |(p50, p99)| format!(
                    "{}/{}",
                    p50.as_millis(),
                    p99.as_millis()
                )),
                down,
                up,
                s.verified,
                f64::from(b.verified_ppm()) / 1e4,
                b.stall.as_secs_f64(),
                b.time_to_sync
                    .map_or("-".into(), |t| format!("{:.0}", t.as_secs_f64() * 1e3)),
                if b.conditioned { "  (conditioned)" } else { "" },
                if why.is_empty() {
                    String::new()
                } else {
                    format!("  FAILED: {}", why.join("; "))
                }
            );
        }
        out
    }
}

#[derive(Debug)]
struct Live {
    report: Mutex<BotReport>,
}

/// Bots running on the current runtime.
#[derive(Debug)]
pub struct BotFleet<R: BotRules> {
    server: SocketAddr,
    rules: R,
    pin: CertPin,
    started: Instant,
    stop: watch::Sender<bool>,
    bots: Vec<Arc<Live>>,
    tasks: JoinSet<()>,
    /// Client endpoints shared by load bots, [`LOAD_BOTS_PER_ENDPOINT`]
    /// each (created as needed).
    load_endpoints: Vec<quinn::Endpoint>,
    load_bots: usize,
    rule: FailRule,
    send_rate: u32,
}

/// Load bots sharing one client endpoint (one UDP socket and one endpoint
/// task). Connections are told apart by their connection ids, so the
/// server sees the same traffic; the load process makes far fewer system
/// calls and task wake-ups than with one endpoint per bot, which leaves
/// more of a shared machine to the server under test.
pub const LOAD_BOTS_PER_ENDPOINT: usize = 32;

impl<R: BotRules + NetRules> BotFleet<R> {
    /// An empty fleet for `server`, with the rules every bot plays and how
    /// to trust the server.
    pub fn new(server: SocketAddr, rules: R, pin: CertPin) -> BotFleet<R> {
        BotFleet {
            server,
            rules,
            pin,
            started: Instant::now(),
            stop: watch::channel(false).0,
            bots: Vec::new(),
            tasks: JoinSet::new(),
            load_endpoints: Vec::new(),
            load_bots: 0,
            rule: FailRule::default(),
            send_rate: 0,
        }
    }

    /// Input batches per second of every bot started from now on (0: one
    /// per tick; see [`ConnectOptions::send_rate`]).
    pub fn set_send_rate(&mut self, rate: u32) {
        self.send_rate = rate;
    }

    /// Sets what counts as a failed bot in the report.
    pub fn set_rule(&mut self, rule: FailRule) {
        self.rule = rule;
    }

    /// Starts a bot (it connects in the background).
    pub fn spawn(&mut self, spec: BotSpec<R::Strategy>) {
        let live = Arc::new(Live {
            report: Mutex::new(BotReport {
                name: spec.name.clone(),
                room: spec.room.clone(),
                conditioned: spec.conditioner.is_some(),
                load: spec.load,
                ..BotReport::default()
            }),
        });
        self.bots.push(live.clone());
        let stop = self.stop.subscribe();
        let server = self.server;
        let rules = self.rules.clone();
        let pin = self.pin;
        if spec.load {
            let endpoint = self.load_endpoint();
            let fingerprint = rules.fingerprint();
            self.tasks.spawn(async move {
                let endpoint = match endpoint {
                    Ok(e) => e,
                    Err(e) => {
                        let error = Some(crate::ConnectError::Socket(e).to_string());
                        live.report.lock().unwrap_or_else(|e| e.into_inner()).error = error;
                        return;
                    }
                };
                run_load_bot(endpoint, server, rules, fingerprint, pin, spec, &live, stop).await;
            });
            return;
        }
        let send_rate = self.send_rate;
        self.tasks.spawn(async move {
            run_bot(server, rules, pin, spec, send_rate, &live, stop).await;
        });
    }

    /// The endpoint for the next load bot.
    fn load_endpoint(&mut self) -> std::io::Result<quinn::Endpoint> {
        let k = self.load_bots / LOAD_BOTS_PER_ENDPOINT;
        self.load_bots += 1;
        if k == self.load_endpoints.len() {
            self.load_endpoints
                .push(crate::load::client_endpoint(self.server)?);
        }
        Ok(self.load_endpoints[k].clone())
    }

    /// The fleet's sums now.
    pub fn status(&self) -> FleetStatus {
        let mut s = FleetStatus {
            elapsed: self.started.elapsed(),
            total: self.bots.len(),
            ..FleetStatus::default()
        };
        let mut rtt_sum = Duration::ZERO;
        for b in &self.bots {
            let r = b.report.lock().unwrap_or_else(|e| e.into_inner());
            if r.connected {
                s.connected += 1;
                if let Some(st) = &r.stats {
                    rtt_sum += st.rtt();
                }
            }
            if r.error.is_some() {
                s.failed += 1;
            }
            s.desyncs += r.desyncs;
            if let Some(st) = &r.stats {
                s.rollbacks += st.session.rollbacks;
                s.max_rollback = s.max_rollback.max(st.session.max_rollback);
                s.udp_rx += st.udp_rx;
                s.udp_tx += st.udp_tx;
            }
        }
        if s.connected > 0 {
            s.mean_rtt = rtt_sum / s.connected as u32;
        }
        s
    }

    /// Stops every bot (each leaves its room) and reports.
    pub async fn finish(mut self) -> FleetReport {
        let elapsed = self.started.elapsed();
        let _ = self.stop.send(true);
        // Bots that see the stop leave their room within a second.
        let _ = tokio::time::timeout(Duration::from_secs(3), async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        self.tasks.abort_all();
        FleetReport {
            elapsed,
            rule: self.rule,
            bots: self
                .bots
                .iter()
                .map(|b| {
                    let mut r = b.report.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    if r.slot.is_none() && r.error.is_none() {
                        r.error = Some("never connected".into());
                    }
                    r
                })
                .collect(),
        }
    }
}

async fn run_bot<R: BotRules + NetRules>(
    server: SocketAddr,
    rules: R,
    pin: CertPin,
    spec: BotSpec<R::Strategy>,
    send_rate: u32,
    live: &Live,
    mut stop: watch::Receiver<bool>,
) {
    let set = |f: &mut dyn FnMut(&mut BotReport)| {
        f(&mut live.report.lock().unwrap_or_else(|e| e.into_inner()));
    };
    let mut bot = rules.bot(&spec.strategy, spec.seed);
    let mut options = ConnectOptions::new(rules, pin);
    options.name = spec.name.clone();
    options.predict = spec.predict;
    options.conditioner = spec.conditioner;
    options.token = spec.token.clone();
    options.send_rate = send_rate;
    options.input = Some(Box::new(move |g, slot| bot.next_input(g, slot)));
    let t0 = Instant::now();
    let connected = tokio::select! {
        c = connect(server, &spec.room, options) => c,
        _ = stop.wait_for(|&s| s) => return,
    };
    let mut handle = match connected {
        Ok(h) => h,
        Err(e) => {
            set(&mut |r| r.error = Some(e.to_string()));
            return;
        }
    };
    let slot = handle.slot();
    let tick_rate = handle.welcome().tick_rate;
    set(&mut |r| {
        r.connected = true;
        r.slot = slot;
        r.tick_rate = tick_rate;
    });
    let connected_at = Instant::now();
    let outage = handle.conditioner().and_then(|c| c.outage());
    let mut stall = StallWatch::new(connected_at, outage);
    let mut publish = tokio::time::interval(Duration::from_millis(250));
    // RTT samples in µs, 1 µs to 60 s at 2 significant digits.
    let mut rtts = hdrhistogram::Histogram::<u32>::new_with_bounds(1, 60_000_000, 2).ok();
    let stopped = loop {
        tokio::select! {
            ev = handle.next_event() => match ev {
                Some(Event::Desync { .. }) => set(&mut |r| r.desyncs += 1),
                Some(Event::Synced { tick }) => {
                    let dt = t0.elapsed();
                    set(&mut |r| {
                        r.time_to_sync.get_or_insert(dt);
                        r.synced_at.get_or_insert(tick);
                    });
                }
                Some(Event::Disconnected(d)) => {
                    set(&mut |r| r.error = Some(format!("disconnected: {d}")));
                    break false;
                }
                Some(Event::Rollback { .. }) => {}
                None => break false,
            },
            _ = publish.tick() => {
                let stats = handle.stats();
                let longest = stall.observe(Instant::now(), stats.session.confirmed);
                let synced = stats.session.confirmed > 0;
                let rtt = if let (true, Some(h)) = (synced, rtts.as_mut()) {
                    h.saturating_record(stats.rtt().as_micros().clamp(1, 60_000_000) as u64);
                    Some((
                        Duration::from_micros(h.value_at_quantile(0.5)),
                        Duration::from_micros(h.value_at_quantile(0.99)),
                    ))
                } else {
                    None
                };
                set(&mut |r| {
                    if rtt.is_some() {
                        r.rtt_p50_p99 = rtt;
                    }
                    r.stats = Some(stats);
                    r.connected_for = connected_at.elapsed();
                    r.stall = longest;
                    if r.steady_from.is_none() && r.time_to_sync.is_some_and(|t| t0.elapsed() >= t + STEADY_AFTER) {
                        r.steady_from = Some((r.connected_for, stats));
                    }
                });
            }
            _ = stop.wait_for(|&s| s) => break true,
        }
    };
    let stats = handle.stats();
    let longest = stall.observe(Instant::now(), stats.session.confirmed);
    tracing::debug!(
        bot = %spec.name,
        cwnd = stats.quic.path.cwnd,
        lost = stats.quic.path.lost_packets,
        sent = stats.quic.path.sent_packets,
        congestion = stats.quic.path.congestion_events,
        path_rtt_ms = stats.path_rtt.as_millis() as u64,
        snapshots = stats.session.snapshots,
        udp_rx = stats.quic.udp_rx.datagrams,
        udp_rx_bytes = stats.quic.udp_rx.bytes,
        udp_tx = stats.quic.udp_tx.datagrams,
        udp_tx_bytes = stats.quic.udp_tx.bytes,
        acks_rx = stats.quic.frame_rx.acks,
        acks_tx = stats.quic.frame_tx.acks,
        datagrams_rx = stats.quic.frame_rx.datagram,
        datagrams_tx = stats.quic.frame_tx.datagram,
        payload_in = stats.session.bytes_in,
        payload_out = stats.session.bytes_out,
        frames = stats.session.frames,
        "transport"
    );
    set(&mut |r| {
        r.connected = false;
        r.stats = Some(stats);
        r.connected_for = connected_at.elapsed();
        r.stall = longest;
    });
    if stopped {
        handle.leave(Duration::from_secs(1)).await;
    }
}

/// Watches a bot's confirmed tick for stalls: the longest time it did not
/// move while the link was up, from its join on. A scheduled outage is
/// the link's doing: the clock restarts when it ends, so what counts is how
/// long the bot takes to recover.
#[derive(Debug)]
struct StallWatch {
    confirmed: u64,
    since: Instant,
    outage: Option<(Instant, Instant)>,
    longest: Duration,
}

impl StallWatch {
    fn new(start: Instant, outage: Option<(Instant, Instant)>) -> StallWatch {
        StallWatch {
            confirmed: 0,
            since: start,
            outage,
            longest: Duration::ZERO,
        }
    }

    /// Records the confirmed tick at `now`; returns the longest stall so
    /// far.
    fn observe(&mut self, now: Instant, confirmed: u64) -> Duration {
        if self.confirmed == 0 && confirmed == 0 {
            // Still joining: the join's time is shown apart (`sync ms`).
            return self.longest;
        }
        if confirmed > self.confirmed {
            self.confirmed = confirmed;
            self.since = now;
            return self.longest;
        }
        let mut since = self.since;
        if let Some((start, end)) = self.outage {
            if now >= start && now < end {
                return self.longest;
            }
            if now >= end && since < end {
                since = end;
            }
        }
        self.longest = self.longest.max(now.saturating_duration_since(since));
        self.longest
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_load_bot<R: BotRules + NetRules>(
    endpoint: quinn::Endpoint,
    server: SocketAddr,
    rules: R,
    fingerprint: u64,
    pin: CertPin,
    spec: BotSpec<R::Strategy>,
    live: &Live,
    stop: watch::Receiver<bool>,
) {
    let started = Instant::now();
    let publish = |s: crate::load::LoadStats| {
        let mut r = live.report.lock().unwrap_or_else(|e| e.into_inner());
        if s.slot.is_some() && r.slot.is_none() {
            r.time_to_sync = Some(started.elapsed());
        }
        r.slot = s.slot;
        r.connected = s.end.is_none() && s.slot.is_some();
        r.stats = Some(s.stats);
        r.connected_for = started.elapsed();
        if let Some(end) = s.end {
            if end != crate::Disconnect::Closed {
                r.error = Some(format!("disconnected: {end}"));
            }
        }
    };
    let result = crate::load::run(
        &endpoint,
        server,
        &spec.room,
        fingerprint,
        pin,
        spec.token.clone(),
        spec.seed,
        |bits| rules.random_input(bits),
        publish,
        stop,
    )
    .await;
    if let Err(e) = result {
        live.report.lock().unwrap_or_else(|e| e.into_inner()).error = Some(e.to_string());
    }
}

/// Builds the bots for `bitroom-client bots`: `count` bots, spread over
/// `rooms` rooms (`ROOM` or `ROOM-0`, `ROOM-1`, …).
#[allow(clippy::too_many_arguments)]
pub fn plan<S: Clone>(
    room: &str,
    rooms: u32,
    count: u32,
    strategy: S,
    seed: u64,
    predict: bool,
    conditioner: Option<ConditionerConfig>,
    load: bool,
) -> Vec<BotSpec<S>> {
    (0..count)
        .map(|i| BotSpec {
            name: format!("bot{i}"),
            room: if rooms <= 1 {
                room.to_string()
            } else {
                format!("{room}-{}", i % rooms)
            },
            strategy: strategy.clone(),
            seed: seed.wrapping_add(u64::from(i)),
            predict,
            conditioner: conditioner.map(|c| ConditionerConfig {
                seed: c.seed.wrapping_add(u64::from(i)),
                ..c
            }),
            load,
            token: None,
        })
        .collect()
}

//! `ClientSession`: a client as a sans-IO state machine.
//!
//! It holds a rollback [`Timeline`]: the present (predicted) game runs a
//! little ahead of the server, the confirmed tick follows the server's
//! frames. Each frame's authoritative inputs are confirmed in order; when
//! they differ from the prediction the timeline rolls back and
//! re-simulates. Every confirmed tick's hash is checked against the
//! server's; on a mismatch the session reports the desync (with its state)
//! and resynchronises from a fresh snapshot.
//!
//! Clock sync: the server tells the client how early its inputs arrive
//! (`input_lead`, measured on the first input each batch brings, so a lost
//! batch shows as the tick later its inputs arrived). The session keeps
//! the lowest 1 % of those leads over the last 4 s just above zero, by
//! stretching or shrinking its tick period by at most ±10 %, and jumps
//! only when far off (a stall, a pause). So the lead rides out the link's
//! jitter and loss: about the jitter's spread plus a tick per loss in a
//! row that happens more than 1 % of the time.

use crate::messages::*;
use crate::{widen_tick16, Micros};
use bitroom_sim::game::{Game, GameSnapshot, Input, InputSet, Rules, Timeline};
use std::collections::{BTreeMap, VecDeque};
use xxhash_rust::xxh3::xxh3_64;

/// Client settings.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Room to join.
    pub room: String,
    /// Display name.
    pub name: String,
    /// Watch only.
    pub spectator: bool,
    /// The secret of an earlier session's welcome, to reclaim its slot.
    pub reconnect: Option<ReconnectSecret>,
    /// A connect token's bytes, for servers that require one.
    pub token: Option<Vec<u8>>,
    /// Predict ahead (otherwise the game shown is the confirmed one).
    pub predict: bool,
    /// Saved states for rollback (the prediction window).
    pub ring: u32,
    /// Time between pings (the first few go every 250 ms).
    pub ping_interval: Micros,
    /// Input batches per second (0: one per tick). Each carries every
    /// input not yet acknowledged; fewer batches trade a little input
    /// latency (the room sees an input up to a batch interval later, which
    /// the clock sync adds to the lead) for bytes.
    pub send_rate: u32,
}

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig {
            room: "lobby".into(),
            name: "player".into(),
            spectator: false,
            reconnect: None,
            token: None,
            predict: true,
            ring: 48,
            ping_interval: 1_000_000,
            send_rate: 0,
        }
    }
}

/// Bytes for the shell to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientTransmit {
    /// A message for the reliable stream (unframed).
    Reliable(Vec<u8>),
    /// A datagram.
    Datagram(Vec<u8>),
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// The server accepted us.
    Welcomed {
        /// Our slot (`None`: spectator).
        slot: Option<u8>,
        /// Reclaims the slot after a disconnect.
        secret: ReconnectSecret,
    },
    /// A snapshot was applied (join or resync).
    Synced {
        /// Its tick.
        tick: u64,
    },
    /// The prediction was wrong and the present was re-simulated.
    Rollback {
        /// Ticks re-simulated.
        depth: u64,
    },
    /// Our state hash differed from the server's.
    Desync {
        /// The tick.
        tick: u64,
        /// Our hash.
        ours: u64,
        /// The server's, as frames carry it (its low 24 bits).
        server: u64,
    },
    /// The server closed the session.
    Kicked(KickReason),
}

/// Counters and gauges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Smoothed round-trip time (µs).
    pub rtt: Micros,
    /// Round-trip variation (µs).
    pub rtt_var: Micros,
    /// Rollbacks.
    pub rollbacks: u64,
    /// Deepest rollback (ticks).
    pub max_rollback: u64,
    /// Ticks re-simulated.
    pub resimulated: u64,
    /// Desyncs detected.
    pub desyncs: u64,
    /// Snapshots applied.
    pub snapshots: u64,
    /// Confirmed ticks whose hash matched the server's.
    pub verified: u64,
    /// Frames received (including duplicates).
    pub frames: u64,
    /// Duplicate or stale frames.
    pub stale_frames: u64,
    /// Datagrams that did not decode.
    pub malformed: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Latest smoothed input lead reported by the server (µs).
    pub input_lead: i64,
    /// Current tick-period adjustment in parts per thousand (+: slower).
    pub rate_adjust: i32,
    /// Clock jumps (large corrections).
    pub clock_jumps: u64,
    /// Present tick.
    pub tick: u64,
    /// Confirmed tick.
    pub confirmed: u64,
    /// Inputs [`ClientSession::set_input`] refused for being larger than
    /// the game's [`Input::MAX_ENCODED`] (a bug in the game's input type).
    pub refused_inputs: u64,
}

/// Why the session stopped.
#[derive(Debug)]
enum Phase {
    Connecting { sent: Micros },
    Syncing,
    Playing,
    Closed,
}

/// A client session (see the module docs).
#[derive(Debug)]
pub struct ClientSession<R: Rules> {
    config: ClientConfig,
    rules: R,
    phase: Phase,
    welcome: Option<Welcome>,
    timeline: Option<Timeline<R>>,
    snapshot_buf: Vec<u8>,
    pending: BTreeMap<u64, TickData<R::Input>>,
    base_inputs: Vec<R::Input>,
    server_hashes: BTreeMap<u64, u32>,
    newest_frame: u64,
    /// Room tick of the newest bundle received.
    newest_bundle: u64,
    /// When the next input batch goes out, when sending less often than
    /// every tick (see `place_send`).
    send_at: Option<Micros>,
    /// Pings sent so far.
    pings: u32,
    resyncing: bool,
    input: R::Input,
    sent_inputs: VecDeque<(u64, R::Input)>,
    input_ack: u64,
    clock_tick: u64,
    next_tick_at: Micros,
    /// When inputs and acks were last sent.
    inputs_sent_at: Micros,
    period: Micros,
    lead: Option<i64>,
    lead_dev: i64,
    /// Recent lead samples, each plus the schedule shift when its input
    /// was sent (so they stay comparable while the period is adjusted).
    leads: VecDeque<i64>,
    /// How far (µs) the tick schedule has been stretched so far in total:
    /// every µs makes inputs arrive a µs later.
    shift: i64,
    /// `(time, shift)` at recent ticks, to look up the shift an input
    /// was sent with.
    shift_log: VecDeque<(Micros, i64)>,
    settle_until: Micros,
    /// Frames were confirmed and the present is not yet brought up to
    /// date with them (rollback, hash checks): due at this time.
    resolve_at: Option<Micros>,
    /// When the present was last brought up to date with new frames.
    resolved_at: Micros,
    next_ping: Micros,
    srtt: Option<Micros>,
    rttvar: Micros,
    /// `srtt` is the handshake's sample only.
    rtt_from_handshake: bool,
    out: VecDeque<ClientTransmit>,
    events: VecDeque<ClientEvent>,
    stats: ClientStats,
    closed: Option<KickReason>,
}

/// Most frames buffered ahead of the confirmed tick.
const MAX_PENDING: u64 = 1024;
/// The first pings' interval (the round trip places the clock).
const FIRST_PINGS: Micros = 250_000;
/// Bytes an input batch's header and ack take at most.
const BATCH_HEADER: usize = 1 + 1 + 5 + 3 + 15;
/// Most ticks processed in one `handle_timeout` before the clock jumps.
const MAX_CATCH_UP: u64 = 240;
/// Lead samples kept (4 s of frames at 60 Hz).
const LEAD_WINDOW: usize = 240;
/// Samples before the low quantile steers (until then, the mean does).
const LEAD_MIN_SAMPLES: usize = 30;
/// Samples before the clock may jump.
const LEAD_MIN_JUMP: usize = 4;
/// Where the lowest 1 % of input leads is kept (µs).
const LEAD_SAFETY: i64 = 2_000;
/// Ticks of schedule shifts remembered (longer than any round trip that
/// still plays).
const SHIFT_LOG: usize = 240;
/// A predicting client rolls back at most once per this fraction of a
/// tick period (`period / MIN_RESOLVE_GAP_DIV`), however many frames
/// arrived meanwhile.
///
/// Rolling back on every frame as it arrived made a client short of CPU
/// spiral: a client that had fallen behind (a long frame, a collection,
/// a busy machine) found several frames waiting and re-simulated its whole
/// prediction once for each, which made it later still; its inputs then
/// reached the room late, the clock sync predicted further ahead to make
/// up for it, every rollback got deeper, until the prediction window was
/// full and the room started it over from snapshots, again and again. In
/// the simulated network (`tests/tests/cpu.rs`), a client whose every
/// simulated tick costs 1.5 ms (a tenth of a tick at 60 Hz), after one
/// 300 ms hiccup, verified half its ticks and resynced twice; a browser
/// page did the same with the default arena. Confirming at once and
/// rolling back once for the lot makes the work per call about the
/// prediction's depth plus the ticks it is behind, so a late client
/// catches up instead of falling further behind.
const MIN_RESOLVE_GAP_DIV: u64 = 2;

impl<R: Rules> ClientSession<R> {
    /// Starts a session: the hello is queued at once.
    ///
    /// A game whose [`Input::MAX_ENCODED`] is over [`MAX_INPUT_BYTES`] does
    /// not compile here: its input batches would not fit a datagram.
    pub fn new(rules: R, config: ClientConfig, now: Micros) -> ClientSession<R> {
        const {
            assert!(
                <R::Input as Input>::MAX_ENCODED <= MAX_INPUT_BYTES,
                "the game's Input::MAX_ENCODED is over bitroom_protocol::MAX_INPUT_BYTES"
            )
        };
        let hello = ClientReliable::Hello(Hello {
            version: PROTOCOL_VERSION,
            rules: rules.fingerprint(),
            room: config.room.clone(),
            name: config.name.clone(),
            spectator: config.spectator,
            reconnect: config.reconnect,
            token: config.token.clone(),
        });
        let mut s = ClientSession {
            config,
            rules,
            phase: Phase::Connecting { sent: now },
            welcome: None,
            timeline: None,
            snapshot_buf: Vec::new(),
            pending: BTreeMap::new(),
            base_inputs: Vec::new(),
            server_hashes: BTreeMap::new(),
            newest_frame: 0,
            newest_bundle: 0,
            send_at: None,
            pings: 0,
            resyncing: false,
            input: R::Input::default(),
            sent_inputs: VecDeque::new(),
            input_ack: 0,
            clock_tick: 0,
            next_tick_at: now,
            inputs_sent_at: now,
            period: 16_667,
            lead: None,
            lead_dev: 0,
            leads: VecDeque::new(),
            shift: 0,
            shift_log: VecDeque::new(),
            settle_until: 0,
            resolve_at: None,
            resolved_at: 0,
            next_ping: now,
            srtt: None,
            rttvar: 0,
            rtt_from_handshake: false,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: ClientStats::default(),
            closed: None,
        };
        s.send_reliable(&hello);
        s
    }

    fn send_reliable(&mut self, msg: &ClientReliable) {
        let bytes = encode_client_reliable(msg);
        self.stats.bytes_out += bytes.len() as u64 + 4;
        self.out.push_back(ClientTransmit::Reliable(bytes));
    }

    fn send_datagram(&mut self, msg: &ClientDatagram<R::Input>) {
        let bytes = encode_client_datagram(msg);
        self.stats.bytes_out += bytes.len() as u64;
        self.out.push_back(ClientTransmit::Datagram(bytes));
    }

    /// Next bytes to send.
    pub fn poll_transmit(&mut self) -> Option<ClientTransmit> {
        self.out.pop_front()
    }

    /// Next event.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// When to call [`ClientSession::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<Micros> {
        match self.phase {
            Phase::Closed => None,
            Phase::Playing => Some(
                self.next_tick_at
                    .min(self.next_ping)
                    .min(self.inputs_sent_at + self.send_fallback())
                    .min(self.resolve_at.unwrap_or(Micros::MAX))
                    .min(self.send_at.unwrap_or(Micros::MAX)),
            ),
            _ => Some(self.next_ping),
        }
    }

    /// Why the session closed, once it has.
    pub fn closed(&self) -> Option<&KickReason> {
        self.closed.as_ref()
    }

    /// Whether the session is in a room and in sync (or predicting).
    pub fn is_playing(&self) -> bool {
        matches!(self.phase, Phase::Playing) && !self.resyncing
    }

    /// The welcome, once received.
    pub fn welcome(&self) -> Option<&Welcome> {
        self.welcome.as_ref()
    }

    /// Our slot.
    pub fn slot(&self) -> Option<u8> {
        self.welcome.as_ref().and_then(|w| w.slot)
    }

    /// The present game (predicted, or confirmed without prediction).
    pub fn game(&self) -> Option<&Game<R>> {
        self.timeline.as_ref().map(Timeline::game)
    }

    /// The game at the confirmed tick, if still saved.
    pub fn confirmed(&self) -> Option<&GameSnapshot<R>> {
        let t = self.timeline.as_ref()?;
        t.state_at(t.confirmed_tick().min(t.tick()))
    }

    /// The timeline (for tests and tools).
    pub fn timeline_mut(&mut self) -> Option<&mut Timeline<R>> {
        self.timeline.as_mut()
    }

    /// Counters.
    pub fn stats(&self) -> ClientStats {
        let mut s = self.stats;
        if let Some(t) = &self.timeline {
            s.tick = t.tick();
            s.confirmed = t.confirmed_tick();
        }
        s.rtt = self.srtt.unwrap_or(0);
        s.rtt_var = self.rttvar;
        s.input_lead = self.lead.unwrap_or(0);
        s
    }

    /// The input to use from the next tick on (held until changed). An
    /// input that encodes to more than the game's [`Input::MAX_ENCODED`]
    /// is refused (counted in [`ClientStats::refused_inputs`]; the held
    /// input stays): the server would refuse it anyway.
    pub fn set_input(&mut self, input: R::Input) {
        if input.fits() {
            self.input = input;
        } else {
            self.stats.refused_inputs += 1;
        }
    }

    /// Leaves the room for good.
    pub fn leave(&mut self) {
        if !matches!(self.phase, Phase::Closed) {
            self.send_reliable(&ClientReliable::Leave);
        }
    }

    fn close(&mut self, reason: KickReason) {
        self.phase = Phase::Closed;
        self.closed = Some(reason.clone());
        self.events.push_back(ClientEvent::Kicked(reason));
    }

    fn rtt_sample(&mut self, sample: Micros) {
        // RFC 6298 smoothing. The handshake's sample (hello → welcome) only
        // stands in until the first pong: on a lossy link it includes the
        // hello's retransmissions, and as a first sample it would set the
        // variation (and the jitter margin) to half of that for seconds.
        let handshake = std::mem::take(&mut self.rtt_from_handshake);
        match self.srtt {
            Some(s) if !handshake => {
                self.rttvar = (self.rttvar * 3 + s.abs_diff(sample)) / 4;
                self.srtt = Some((s * 7 + sample) / 8);
            }
            _ => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
        }
    }

    /// A complete message from the reliable stream. A message that does not
    /// decode closes the session (the stream cannot recover).
    pub fn handle_reliable(&mut self, now: Micros, bytes: &[u8]) {
        self.stats.bytes_in += bytes.len() as u64 + 4;
        let msg = match decode_server_reliable(bytes) {
            Ok(m) => m,
            Err(e) => return self.close(KickReason::BadMessage(e.to_string())),
        };
        match msg {
            ServerReliable::Welcome(w) => {
                if let Phase::Connecting { sent } = self.phase {
                    self.rtt_sample(now.saturating_sub(sent));
                    self.rtt_from_handshake = true;
                    self.period = 1_000_000 / u64::from(w.tick_rate);
                    self.events.push_back(ClientEvent::Welcomed {
                        slot: w.slot,
                        secret: w.secret,
                    });
                    self.welcome = Some(w);
                    self.phase = Phase::Syncing;
                } else {
                    self.close(KickReason::BadMessage("unexpected welcome".into()));
                }
            }
            ServerReliable::Snapshot(c) => self.snapshot_chunk(now, c),
            ServerReliable::Kick(reason) => self.close(reason),
        }
    }

    fn snapshot_chunk(&mut self, now: Micros, c: SnapshotChunk) {
        if self.welcome.is_none() {
            return self.close(KickReason::BadMessage("snapshot before welcome".into()));
        }
        if c.offset == 0 {
            self.snapshot_buf.clear();
        }
        if c.offset as usize != self.snapshot_buf.len() {
            return self.close(KickReason::BadMessage("snapshot chunk out of order".into()));
        }
        // Lengths were checked against MAX_SNAPSHOT_TOTAL when decoding.
        self.snapshot_buf.extend_from_slice(&c.data);
        if self.snapshot_buf.len() < c.total_len as usize {
            return;
        }
        let bytes = std::mem::take(&mut self.snapshot_buf);
        if xxh3_64(&bytes) != c.bytes_hash {
            return self.close(KickReason::BadMessage(
                "snapshot bytes hash mismatch".into(),
            ));
        }
        let snap = match GameSnapshot::<R>::from_packed(&bytes) {
            Ok(s) => s,
            Err(e) => return self.close(KickReason::BadMessage(format!("snapshot: {e}"))),
        };
        if snap.state_hash() != c.state_hash || snap.tick() != c.tick {
            return self.close(KickReason::BadMessage(
                "snapshot state hash mismatch".into(),
            ));
        }
        if Some(snap.slot_count()) != self.welcome.as_ref().map(|w| w.slots) {
            return self.close(KickReason::BadMessage("snapshot slot count".into()));
        }
        self.apply_snapshot(now, &snap);
    }

    fn apply_snapshot(&mut self, now: Micros, snap: &GameSnapshot<R>) {
        let s = snap.tick();
        match &mut self.timeline {
            Some(t) => t.reset(snap),
            None => {
                let game = Game::from_snapshot(self.rules.clone(), snap);
                self.timeline = Some(Timeline::new(game, self.config.ring));
            }
        }
        let tl = self.timeline.as_ref().expect("timeline set");
        self.base_inputs = tl.game().current_inputs();
        self.pending = self.pending.split_off(&(s + 1));
        self.server_hashes.clear();
        self.newest_frame = self.newest_frame.max(s);
        self.resyncing = false;
        self.stats.snapshots += 1;
        self.events.push_back(ClientEvent::Synced { tick: s });
        // Place the clock: the server is about half an RTT past `s`, and
        // our inputs need another half RTT plus a margin to reach it.
        let rtt = self.srtt.unwrap_or(100_000);
        let ahead = (rtt + self.margin()) / self.period + 1;
        self.clock_tick = self.clock_tick.max(s + ahead);
        self.sent_inputs.retain(|&(t, _)| t > s);
        self.input_ack = self.input_ack.max(s);
        self.lead = None;
        self.leads.clear();
        self.settle_until = now + rtt + 4 * self.period;
        if !matches!(self.phase, Phase::Playing) {
            self.next_tick_at = now + self.period;
        }
        self.phase = Phase::Playing;
        self.apply_frames();
        self.catch_up();
    }

    /// Safety margin for input arrival (µs): a few ms plus the jitter seen
    /// in the server's lead reports and in the RTT.
    fn margin(&self) -> Micros {
        let jitter = (self.lead_dev.max(0) as u64).max(self.rttvar / 2);
        4_000 + jitter * 2
    }

    /// A datagram. Malformed ones are counted and dropped.
    pub fn handle_datagram(&mut self, now: Micros, bytes: &[u8]) {
        self.stats.bytes_in += bytes.len() as u64;
        let msg = match decode_server_datagram::<R::Input>(bytes) {
            Ok(m) => m,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        match msg {
            ServerDatagram::Pong { time } => {
                if time <= now {
                    self.rtt_sample(now - time);
                }
            }
            ServerDatagram::Frames(b) => self.bundle(now, b),
        }
    }

    fn confirmed_tick(&self) -> u64 {
        self.timeline
            .as_ref()
            .map_or(self.welcome.as_ref().map_or(0, |w| w.tick), |t| {
                t.confirmed_tick()
            })
    }

    fn bundle(&mut self, now: Micros, b: FrameBundle<R::Input>) {
        if matches!(self.phase, Phase::Closed | Phase::Connecting { .. }) {
            return;
        }
        let near = self.newest_frame.max(self.confirmed_tick());
        let room_tick = widen_tick16(b.tick, near);
        // Feedback from the newest bundle only (duplicates and reordered
        // ones are older news).
        if room_tick > self.newest_bundle {
            self.newest_bundle = room_tick;
            self.place_send(now);
            let acked = (room_tick as i64 + i64::from(b.input_ack)).max(0) as u64;
            self.input_ack = self.input_ack.max(acked);
            if b.input_lead != NO_INPUT_YET {
                self.lead_sample(now, i64::from(b.input_lead) * 1000);
            }
        }
        let confirmed = self.confirmed_tick();
        let mut next = room_tick + 1;
        for f in b.frames {
            self.stats.frames += 1;
            // An entry counting back past tick 0 ends the bundle.
            let Some(tick) = next.checked_sub(1 + u64::from(f.back)) else {
                break;
            };
            next = tick;
            if tick <= confirmed
                || tick > confirmed + MAX_PENDING
                || self.pending.contains_key(&tick)
            {
                self.stats.stale_frames += 1;
                continue;
            }
            self.newest_frame = self.newest_frame.max(tick);
            self.pending.insert(tick, f);
        }
        if matches!(self.phase, Phase::Playing) && !self.resyncing {
            if self.config.predict {
                // Confirm now (cheap); roll back later, once for every
                // frame that arrived meanwhile (see `MIN_RESOLVE_GAP`).
                if self.confirm_frames() && self.resolve_at.is_none() {
                    let gap = self.period / MIN_RESOLVE_GAP_DIV;
                    self.resolve_at = Some(now.max(self.resolved_at + gap));
                }
            } else {
                self.apply_frames();
                self.catch_up();
            }
        }
    }

    fn lead_sample(&mut self, now: Micros, lead: i64) {
        if self.slot().is_none() || now < self.settle_until {
            return;
        }
        let avg = match self.lead {
            None => lead,
            Some(l) => {
                self.lead_dev = (self.lead_dev * 7 + (lead - l).abs()) / 8;
                (l * 7 + lead) / 8
            }
        };
        self.lead = Some(avg);
        // The report is about an input sent about a round trip ago, under
        // the schedule shift of then.
        let sent = now.saturating_sub(self.srtt.unwrap_or(0));
        let then = self
            .shift_log
            .iter()
            .rev()
            .find(|&&(t, _)| t <= sent)
            .or(self.shift_log.front())
            .map_or(self.shift, |&(_, s)| s);
        if self.leads.len() == LEAD_WINDOW {
            self.leads.pop_front();
        }
        self.leads.push_back(lead + then);
        let low = (self.leads.len() >= LEAD_MIN_SAMPLES).then(|| {
            // The lowest 1 %, as it would be under today's shift.
            let mut sorted: Vec<i64> = self.leads.iter().copied().collect();
            let k = sorted.len() / 100;
            let (_, low, _) = sorted.select_nth_unstable(k);
            *low - self.shift
        });
        let err = match low {
            Some(low) => low - LEAD_SAFETY,
            None => avg - self.margin() as i64,
        };
        // Far off (a stall, a pause, a changed route): jump, then let new
        // reports settle before steering again. Late: when the mean says
        // so (one delayed batch does not); early: when even the lowest
        // leads say so.
        let far = 12 * (self.period as i64).max(1) + 100_000;
        let jump = if avg - LEAD_SAFETY < -far {
            avg - LEAD_SAFETY
        } else if err > far {
            err
        } else {
            0
        };
        if jump != 0 && self.leads.len() >= LEAD_MIN_JUMP {
            let ticks = jump / (self.period as i64).max(1);
            if ticks < 0 {
                for _ in 0..ticks.unsigned_abs() {
                    self.push_tick_input();
                }
            } else {
                // Pause; acks keep going out meanwhile (`handle_timeout`).
                self.next_tick_at = now + (ticks as u64) * self.period;
            }
            self.stats.clock_jumps += 1;
            self.lead = None;
            self.lead_dev = 0;
            self.leads.clear();
            self.settle_until = now + self.srtt.unwrap_or(100_000) + 4 * self.period;
            self.stats.rate_adjust = 0;
            return;
        }
        // ±10 % at most: 20 ms of error asks for the full 10 %.
        self.stats.rate_adjust = (err / 200).clamp(-100, 100) as i32;
    }

    /// Confirms buffered frames in order, rolls back when a prediction was
    /// wrong and checks hashes.
    fn apply_frames(&mut self) {
        self.confirm_frames();
        self.resolve();
    }

    /// Confirms the buffered frames that follow the confirmed tick, in
    /// order; returns whether any was.
    fn confirm_frames(&mut self) -> bool {
        let Some(tl) = self.timeline.as_mut() else {
            return false;
        };
        let before = tl.confirmed_tick();
        while let Some(f) = self.pending.remove(&(tl.confirmed_tick() + 1)) {
            let tick = tl.confirmed_tick() + 1;
            let mut inputs = self.base_inputs.clone();
            if let Some(c) = &f.changes {
                let mut it = c.inputs.iter();
                for (i, slot) in inputs.iter_mut().enumerate() {
                    if c.mask & (1 << i) != 0 {
                        if let Some(&v) = it.next() {
                            *slot = v;
                        }
                    }
                }
            }
            self.base_inputs.clone_from(&inputs);
            let set = InputSet {
                inputs,
                events: f.events.unwrap_or_default(),
            };
            // In order by construction.
            let _ = tl.confirm(tick, set);
            self.server_hashes.insert(tick, f.hash);
        }
        tl.confirmed_tick() > before
    }

    /// Brings the present up to date with the confirmed frames: the
    /// rollback they call for (predicting) or the steps up to them (not
    /// predicting), and the hash checks.
    fn resolve(&mut self) {
        self.resolve_at = None;
        let Some(tl) = self.timeline.as_mut() else {
            return;
        };
        if self.config.predict {
            let depth = tl.update();
            if depth > 0 {
                self.stats.rollbacks += 1;
                self.stats.resimulated += depth;
                self.stats.max_rollback = self.stats.max_rollback.max(depth);
                self.events.push_back(ClientEvent::Rollback { depth });
            }
        } else {
            tl.update();
            let target = tl.confirmed_tick();
            self.advance_to(target);
        }
        self.verify();
    }

    /// Compares our hash with the server's at every confirmed tick reached.
    fn verify(&mut self) {
        let Some(tl) = self.timeline.as_ref() else {
            return;
        };
        let upto = tl.tick().min(tl.confirmed_tick());
        while let Some((&t, &server)) = self.server_hashes.first_key_value() {
            if t > upto {
                break;
            }
            self.server_hashes.pop_first();
            let Some(ours) = tl.hash_at(t) else {
                continue;
            };
            // Frames carry the low bits of the server's hash (`wire_hash`).
            let server = u64::from(server);
            if u64::from(wire_hash(ours)) == server {
                self.stats.verified += 1;
                continue;
            }
            self.stats.desyncs += 1;
            self.events.push_back(ClientEvent::Desync {
                tick: t,
                ours,
                server,
            });
            // Packed: a fifth of the canonical size or less, so states of
            // rooms up to several thousand bodies fit under the limit.
            let mut state = tl
                .state_at(t)
                .map(GameSnapshot::to_packed)
                .unwrap_or_default();
            if state.len() > MAX_RELIABLE - 1024 {
                state.clear();
            }
            self.send_reliable(&ClientReliable::Desync(DesyncReport {
                tick: t,
                client_hash: ours,
                server_hash: server,
                state,
            }));
            // Wait for the server's snapshot; frames keep being buffered.
            self.resyncing = true;
            self.server_hashes.clear();
            return;
        }
    }

    /// Advances the present toward the clock tick (as far as the window
    /// allows) or, without prediction, toward the confirmed tick.
    fn catch_up(&mut self) {
        if self.resyncing {
            return;
        }
        let Some(tl) = self.timeline.as_ref() else {
            return;
        };
        let target = if self.config.predict {
            self.clock_tick
        } else {
            tl.confirmed_tick()
        };
        if self.advance_to(target) {
            if let Some(tl) = self.timeline.as_mut() {
                tl.update();
            }
            self.verify();
        }
    }

    /// Steps the present toward `target` one tick at a time; returns
    /// whether it moved.
    ///
    /// Hashes are checked as the present passes confirmed ticks, not once
    /// at the end: after a lost frame is finally resent, the confirmed tick
    /// jumps ahead by up to a round trip's worth of ticks at once, and a
    /// long catch-up would push those ticks' states out of the ring (the
    /// prediction window) before they were compared with the server's.
    /// Under 20 % loss that left a third of the ticks unverified. No
    /// rollback is pending here (`update` ran after the last confirm), so
    /// every state the present passes up to the confirmed tick is final.
    fn advance_to(&mut self, target: u64) -> bool {
        let mut advanced = false;
        while let Some(tl) = self.timeline.as_mut() {
            if tl.tick() >= target || tl.advance().is_err() {
                break;
            }
            advanced = true;
            let checkable = tl.tick() <= tl.confirmed_tick();
            if checkable {
                self.verify();
                if self.resyncing {
                    break;
                }
            }
        }
        advanced
    }

    /// Runs due ticks (inputs, prediction) and pings.
    pub fn handle_timeout(&mut self, now: Micros) {
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        if now >= self.next_ping {
            self.send_datagram(&ClientDatagram::Ping {
                time: now,
                rollbacks: self.stats.rollbacks,
                max_rollback: self.stats.max_rollback.min(u64::from(u32::MAX)) as u32,
            });
            // A few quick ones to measure the round trip early (it places
            // the clock), then one per `ping_interval`.
            self.pings += 1;
            let interval = if self.pings < 5 {
                FIRST_PINGS.min(self.config.ping_interval)
            } else {
                self.config.ping_interval
            };
            self.next_ping = now + interval;
        }
        if !matches!(self.phase, Phase::Playing) {
            return;
        }
        let mut ticked = 0;
        while now >= self.next_tick_at && ticked < MAX_CATCH_UP {
            ticked += 1;
            let adj = 1000 + i64::from(self.stats.rate_adjust);
            let step = self.period as i64 * adj / 1000;
            self.next_tick_at += step as u64;
            self.shift += step - self.period as i64;
            if self.shift_log.len() == SHIFT_LOG {
                self.shift_log.pop_front();
            }
            self.shift_log.push_back((self.next_tick_at, self.shift));
            self.push_tick_input();
        }
        if ticked == MAX_CATCH_UP {
            // Hopelessly behind the schedule: skip ahead rather than spiral.
            self.next_tick_at = now + self.period;
        }
        // Frames confirmed since the last rollback are resolved now when
        // due, or at a tick (before stepping on with predictions they may
        // have proven wrong).
        let resolve = self.resolve_at.is_some_and(|at| now >= at || ticked > 0);
        if resolve {
            self.resolve();
            self.resolved_at = now;
        }
        if ticked > 0 || resolve {
            self.catch_up();
        }
        // Every tick, or when sending less often, at the time
        // `place_send` chose after the latest bundle; and in any case
        // once a send interval has passed without a batch (no bundle came,
        // or the clock is paused after a jump back): acks and
        // unacknowledged inputs keep flowing, or the room would think the
        // client gone and start it over.
        let per_send = self.ticks_per_send();
        let due = if per_send == 1 {
            ticked > 0
        } else {
            self.send_at.is_some_and(|t| now >= t)
        };
        if due || now >= self.inputs_sent_at + self.send_fallback() {
            self.inputs_sent_at = now;
            self.send_at = None;
            self.send_inputs();
        }
    }

    /// Longest time between two input batches.
    fn send_fallback(&self) -> Micros {
        let per_send = self.ticks_per_send();
        if per_send == 1 {
            self.period
        } else {
            // Half a tick of slack: the batch placed after a bundle
            // comes first when bundles arrive.
            per_send * self.period + self.period / 2
        }
    }

    /// Places the next input batch after a bundle's arrival (called on
    /// each newest bundle), when sending less often than every tick.
    ///
    /// QUIC acknowledges a packet on the next one going the other way or,
    /// when none leaves within the ack delay `A` (quinn asks its peer for
    /// the round trip, at least 25 ms and here at most 50), in a packet of
    /// its own (~55 bytes on the wire). With one datagram each way per
    /// send interval `S` and a one-way delay `d`, a batch sent `g` after a
    /// bundle arrived carries that bundle's ACK when `g <= A`, and the
    /// room's bundle leaving `k S` after the last one carries the batch's
    /// ACK when the batch arrives (at `2d + g`) within `A` before it. The
    /// batch goes out mid-way through the widest such range of `g` (at
    /// once when there is none). Batches on fixed ticks put `g` anywhere
    /// in the interval, by the input lead and scheduling jitter: at 30 Hz
    /// on paths under ~33 ms 1–20 ACK-only packets a second per client,
    /// one way or the other, a few kbit/s of a 20 kbit/s budget; picking
    /// the best tick of the interval was not enough (a tick is wider than
    /// the range on some paths). A batch carries every input recorded so
    /// far, so sending between ticks changes nothing else; the clock sync
    /// measures the lead its inputs arrive with.
    fn place_send(&mut self, now: Micros) {
        let per_send = self.ticks_per_send();
        if per_send <= 1 || !matches!(self.phase, Phase::Playing) || self.send_at.is_some() {
            return;
        }
        let interval = per_send * self.period;
        let rtt = self.srtt.unwrap_or(0);
        let ack_delay = rtt.clamp(25_000, 50_000);
        let mut best: Option<(Micros, Micros)> = None;
        for k in 1..=3 {
            let lo = (k * interval).saturating_sub(ack_delay + rtt);
            let hi = (k * interval).saturating_sub(rtt).min(ack_delay);
            if hi > lo && best.is_none_or(|(l, h)| hi - lo > h - l) {
                best = Some((lo, hi));
            }
        }
        let gap = best.map_or(0, |(lo, hi)| (lo + hi) / 2);
        self.send_at = Some(now + gap);
    }

    /// Moves the clock one tick and records the held input for it.
    fn push_tick_input(&mut self) {
        self.clock_tick += 1;
        if let Some(slot) = self.slot() {
            self.sent_inputs.push_back((self.clock_tick, self.input));
            if let Some(tl) = self.timeline.as_mut() {
                tl.set_local_input(self.clock_tick, slot, self.input);
            }
        }
    }

    fn frame_ack(&self) -> FrameAck {
        let mut through = self.confirmed_tick();
        while self.pending.contains_key(&(through + 1)) {
            through += 1;
        }
        FrameAck::new(through, self.pending.keys().copied())
    }

    /// Ticks between two input batches (the tick rate over
    /// [`ClientConfig::send_rate`]).
    fn ticks_per_send(&self) -> u64 {
        let rate = self.welcome.as_ref().map_or(60, |w| w.tick_rate);
        match self.config.send_rate {
            0 => 1,
            s => u64::from((rate / s).max(1)),
        }
    }

    fn send_inputs(&mut self) {
        let ack = self.frame_ack();
        let Some(slot) = self.slot() else {
            return self.send_datagram(&ClientDatagram::Ack(ack));
        };
        while self
            .sent_inputs
            .front()
            .is_some_and(|&(t, _)| t <= self.input_ack)
        {
            self.sent_inputs.pop_front();
        }
        // The newest consecutive ticks (a clock jump or resync leaves
        // gaps), as runs, newest first, as many as fit a datagram.
        let mut runs: Vec<InputRun<R::Input>> = Vec::new();
        let mut first = 0;
        let mut size = BATCH_HEADER;
        for (ticks, &(t, i)) in self.sent_inputs.iter().rev().enumerate() {
            if ticks as u64 == MAX_BATCH_TICKS || (ticks > 0 && t + 1 != first) {
                break;
            }
            match runs.last_mut() {
                Some(r) if r.input == i && r.count < u8::MAX => r.count += 1,
                _ => {
                    let len = 1 + i.encoded_len();
                    if size + len > MAX_DATAGRAM {
                        break;
                    }
                    size += len;
                    runs.push(InputRun { count: 1, input: i });
                }
            }
            first = t;
        }
        if runs.is_empty() {
            return self.send_datagram(&ClientDatagram::Ack(ack));
        }
        runs.reverse();
        self.send_datagram(&ClientDatagram::Inputs(InputBatch {
            slot,
            first_tick: first as u16,
            runs,
            ack,
        }));
    }
}

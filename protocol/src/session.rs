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
//! (`input_lead`). The session keeps that lead near a small margin derived
//! from the measured jitter by stretching or shrinking its tick period by
//! at most ±10 %, and jumps only when far off (a stall, a pause).

use crate::messages::*;
use crate::{widen_tick, Micros};
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
    /// Time between pings.
    pub ping_interval: Micros,
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
            ping_interval: 250_000,
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
        /// The server's.
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
    pending: BTreeMap<u64, TickFrame<R::Input>>,
    base_inputs: Vec<R::Input>,
    server_hashes: BTreeMap<u64, u64>,
    newest_frame: u64,
    resyncing: bool,
    input: R::Input,
    sent_inputs: VecDeque<(u64, R::Input)>,
    input_ack: u64,
    clock_tick: u64,
    next_tick_at: Micros,
    period: Micros,
    lead: Option<i64>,
    lead_dev: i64,
    settle_until: Micros,
    next_ping: Micros,
    srtt: Option<Micros>,
    rttvar: Micros,
    out: VecDeque<ClientTransmit>,
    events: VecDeque<ClientEvent>,
    stats: ClientStats,
    closed: Option<KickReason>,
    /// Rollbacks in the last report sent to the server.
    reported_rollbacks: u64,
}

/// Most frames buffered ahead of the confirmed tick.
const MAX_PENDING: u64 = 1024;
/// Most ticks processed in one `handle_timeout` before the clock jumps.
const MAX_CATCH_UP: u64 = 240;

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
            resyncing: false,
            input: R::Input::default(),
            sent_inputs: VecDeque::new(),
            input_ack: 0,
            clock_tick: 0,
            next_tick_at: now,
            period: 16_667,
            lead: None,
            lead_dev: 0,
            settle_until: 0,
            next_ping: now,
            srtt: None,
            rttvar: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: ClientStats::default(),
            closed: None,
            reported_rollbacks: 0,
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
            Phase::Playing => Some(self.next_tick_at.min(self.next_ping)),
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
        // RFC 6298 smoothing.
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(s) => {
                self.rttvar = (self.rttvar * 3 + s.abs_diff(sample)) / 4;
                self.srtt = Some((s * 7 + sample) / 8);
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
            ServerDatagram::Frame(f) => self.frame(now, f),
        }
    }

    fn confirmed_tick(&self) -> u64 {
        self.timeline
            .as_ref()
            .map_or(self.welcome.as_ref().map_or(0, |w| w.tick), |t| {
                t.confirmed_tick()
            })
    }

    fn frame(&mut self, now: Micros, f: TickFrame<R::Input>) {
        self.stats.frames += 1;
        if matches!(self.phase, Phase::Closed | Phase::Connecting { .. }) {
            return;
        }
        let near = self.newest_frame.max(self.confirmed_tick());
        let tick = widen_tick(f.tick, near);
        let confirmed = self.confirmed_tick();
        if tick <= confirmed || tick > confirmed + MAX_PENDING || self.pending.contains_key(&tick) {
            self.stats.stale_frames += 1;
            return;
        }
        self.input_ack = self.input_ack.max(widen_tick(f.input_ack, self.clock_tick));
        if tick > self.newest_frame {
            self.newest_frame = tick;
            self.lead_sample(now, i64::from(f.input_lead) * 100);
        }
        self.pending.insert(tick, f);
        if matches!(self.phase, Phase::Playing) && !self.resyncing {
            self.apply_frames();
            self.catch_up();
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
        let err = avg - self.margin() as i64;
        let period = self.period as i64;
        if err.abs() > 12 * period.max(1) + 100_000 {
            // Far off (a stall, a pause, a changed route): jump, then let
            // new reports settle before steering again.
            let ticks = err / period.max(1);
            if ticks < 0 {
                for _ in 0..ticks.unsigned_abs() {
                    self.push_tick_input();
                }
            } else {
                self.next_tick_at = now + (ticks as u64) * self.period;
            }
            self.stats.clock_jumps += 1;
            self.lead = None;
            self.settle_until = now + self.srtt.unwrap_or(100_000) + 4 * self.period;
            self.stats.rate_adjust = 0;
            return;
        }
        // ±10 % at most: 20 ms of error asks for the full 10 %.
        self.stats.rate_adjust = (err / 200).clamp(-100, 100) as i32;
    }

    /// Confirms buffered frames in order and checks hashes.
    fn apply_frames(&mut self) {
        let Some(tl) = self.timeline.as_mut() else {
            return;
        };
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
        if self.config.predict {
            let depth = tl.update();
            if depth > 0 {
                self.stats.rollbacks += 1;
                self.stats.resimulated += depth;
                self.stats.max_rollback = self.stats.max_rollback.max(depth);
                self.events.push_back(ClientEvent::Rollback { depth });
            }
        } else {
            while tl.tick() < tl.confirmed_tick() && tl.advance().is_ok() {}
            tl.update();
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
            if ours == server {
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
        let Some(tl) = self.timeline.as_mut() else {
            return;
        };
        let target = if self.config.predict {
            self.clock_tick
        } else {
            tl.confirmed_tick()
        };
        let mut advanced = false;
        while tl.tick() < target && tl.advance().is_ok() {
            advanced = true;
        }
        if advanced {
            tl.update();
            self.verify();
        }
    }

    /// Runs due ticks (inputs, prediction) and pings.
    pub fn handle_timeout(&mut self, now: Micros) {
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        if now >= self.next_ping {
            self.send_datagram(&ClientDatagram::Ping { time: now });
            self.next_ping = now + self.config.ping_interval;
            if self.stats.rollbacks != self.reported_rollbacks
                && matches!(self.phase, Phase::Playing)
            {
                self.reported_rollbacks = self.stats.rollbacks;
                self.send_datagram(&ClientDatagram::Report {
                    rollbacks: self.stats.rollbacks,
                    max_rollback: self.stats.max_rollback.min(u64::from(u32::MAX)) as u32,
                });
            }
        }
        if !matches!(self.phase, Phase::Playing) {
            return;
        }
        let mut ticked = 0;
        while now >= self.next_tick_at && ticked < MAX_CATCH_UP {
            ticked += 1;
            let adj = 1000 + i64::from(self.stats.rate_adjust);
            self.next_tick_at += (self.period as i64 * adj / 1000) as u64;
            self.push_tick_input();
        }
        if ticked == MAX_CATCH_UP {
            // Hopelessly behind the schedule: skip ahead rather than spiral.
            self.next_tick_at = now + self.period;
        }
        if ticked > 0 {
            self.catch_up();
            self.send_inputs();
        }
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
        let mut later = 0u32;
        for (&t, _) in self.pending.range(through + 2..through + 34) {
            later |= 1 << (t - through - 2);
        }
        FrameAck {
            through: through as u32,
            later,
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
        // The newest consecutive run (a clock jump or resync leaves gaps).
        let mut inputs: Vec<R::Input> = Vec::new();
        let mut first = 0;
        for &(t, i) in self.sent_inputs.iter().rev() {
            if inputs.len() == MAX_BATCH_INPUTS || (!inputs.is_empty() && t + 1 != first) {
                break;
            }
            inputs.push(i);
            first = t;
        }
        if inputs.is_empty() {
            return self.send_datagram(&ClientDatagram::Ack(ack));
        }
        inputs.reverse();
        self.send_datagram(&ClientDatagram::Inputs(InputBatch {
            slot,
            first_tick: first as u32,
            inputs,
            ack,
        }));
    }
}

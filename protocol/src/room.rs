//! `ServerRoom`: the authoritative room as a sans-IO state machine.
//!
//! The IO shell tells the room about connections, bytes and time; the room
//! steps the game when told (`tick`), never waits for anyone (a missing
//! input repeats the slot's last input; a late one is dropped and counted),
//! and queues outgoing bytes per connection ([`Output`]).

use crate::messages::*;
use crate::{widen_tick, Micros};
use bitroom_sim::game::{Game, GameSnapshot, InputSet, PlayerInput, Rules, SlotEvent};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, OnceLock};
use xxhash_rust::xxh3::xxh3_64;

/// A transport connection, numbered by the shell.
pub type ConnId = u64;

/// Room settings.
#[derive(Clone, Debug)]
pub struct RoomConfig {
    /// Player seats (at most 32).
    pub max_players: u8,
    /// Most spectators.
    pub max_spectators: u32,
    /// Ticks per second.
    pub tick_rate: u32,
    /// Time to say hello after connecting.
    pub handshake_timeout: Micros,
    /// How long a dropped player's slot is kept for a reconnect.
    pub reconnect_grace: Micros,
    /// Inputs further ahead than this many ticks are refused.
    pub max_input_ahead: u32,
    /// Ticks of frames kept for resending; a client further behind resyncs.
    pub history: u32,
    /// Seed for reconnect tokens.
    pub seed: u64,
}

impl Default for RoomConfig {
    fn default() -> RoomConfig {
        RoomConfig {
            max_players: 8,
            max_spectators: 16,
            tick_rate: 60,
            handshake_timeout: 5_000_000,
            reconnect_grace: 10_000_000,
            max_input_ahead: 120,
            history: 240,
            seed: 0x5eed,
        }
    }
}

/// Bytes for the shell to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A message for the connection's reliable stream (unframed; frame it
    /// with [`StreamFramer::frame`]).
    Reliable {
        /// Destination.
        conn: ConnId,
        /// The encoded message.
        bytes: Vec<u8>,
    },
    /// An unreliable datagram.
    Datagram {
        /// Destination.
        conn: ConnId,
        /// The encoded message.
        bytes: Vec<u8>,
    },
    /// A join or resync snapshot for the connection's reliable stream: send
    /// [`SnapshotJob::messages`] in order, at this point of the stream.
    ///
    /// Packing a state takes about 0.5 ms for the 200-body arena and 2.5 ms
    /// per 1000 bodies of a pile, so the room does not do it on its tick:
    /// the shell calls `messages` where it likes (the server, off the
    /// room's thread). Joins and resyncs at one tick share one job, which
    /// packs once.
    Snapshot {
        /// Destination.
        conn: ConnId,
        /// The state and, once packed, its messages.
        job: SnapshotJob,
    },
    /// Close the connection after sending what is queued for it.
    Close {
        /// The connection.
        conn: ConnId,
        /// Why (already sent as a kick message).
        reason: KickReason,
    },
}

/// What a [`SnapshotJob`] packs: a game snapshot with its rules type erased.
trait PackSource: Send + Sync {
    fn packed(&self) -> Vec<u8>;
}

impl<R: RoomRules> PackSource for GameSnapshot<R> {
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

/// Something the shell may want to log, record or count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoomEvent {
    /// A client was accepted.
    Joined {
        /// Its connection.
        conn: ConnId,
        /// Its slot (`None`: spectator).
        slot: Option<u8>,
        /// Its name.
        name: String,
        /// Whether it reclaimed a slot.
        reconnect: bool,
    },
    /// A client is gone.
    Left {
        /// Its connection.
        conn: ConnId,
        /// Its slot.
        slot: Option<u8>,
        /// Why.
        reason: KickReason,
    },
    /// A client reported a desync (it is being resynced).
    Desync {
        /// Its connection.
        conn: ConnId,
        /// Its slot.
        slot: Option<u8>,
        /// The report, with the client's state.
        report: DesyncReport,
    },
    /// A message was refused.
    Rejected {
        /// From.
        conn: ConnId,
        /// What was wrong.
        what: Rejection,
    },
}

/// Kinds of refused input, counted in [`RoomStats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Bytes that do not decode.
    Malformed,
    /// Inputs for a slot the connection does not own (or from a spectator).
    WrongSlot,
    /// Inputs too far in the future.
    TooFarAhead,
    /// Over the datagram rate limit.
    RateLimited,
    /// A message not allowed in the connection's state.
    Unexpected,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoomStats {
    /// Ticks stepped.
    pub ticks: u64,
    /// Connected players.
    pub players: u32,
    /// Connected spectators.
    pub spectators: u32,
    /// Inputs that arrived after their tick was simulated.
    pub late_inputs: u64,
    /// Ticks at which a connected player's input was missing (repeated).
    pub missing_inputs: u64,
    /// Datagrams that did not decode.
    pub malformed: u64,
    /// Input batches for another slot.
    pub wrong_slot: u64,
    /// Input batches too far ahead.
    pub too_far_ahead: u64,
    /// Datagrams over the rate limit.
    pub rate_limited: u64,
    /// Messages not allowed in the connection's state.
    pub unexpected: u64,
    /// Desync reports received.
    pub desyncs: u64,
    /// Frames resent.
    pub resent_frames: u64,
    /// Snapshots sent (joins and resyncs).
    pub snapshots: u64,
    /// Distinct snapshot states taken ([`SnapshotJob`]s): joins and
    /// resyncs at the same tick share one, which is packed once.
    pub snapshots_packed: u64,
    /// Bytes received (datagrams and reliable messages).
    pub bytes_in: u64,
    /// Bytes queued for sending, not counting snapshot bodies, which the
    /// shell packs ([`Output::Snapshot`]).
    pub bytes_out: u64,
    /// Rollbacks the clients reported (sum over clients).
    pub rollbacks_reported: u64,
    /// Deepest rollback a client reported (ticks).
    pub max_rollback_reported: u32,
}

#[derive(Debug)]
enum Phase {
    Hello { since: Micros },
    Active,
}

#[derive(Debug)]
struct Client {
    phase: Phase,
    slot: Option<u8>,
    /// Every frame up to this tick is held by the client.
    acked: u64,
    /// Frames `acked + 1 ..` sent so far.
    sent: VecDeque<Sent>,
    /// Newest tick the client has reported holding.
    newest_acked: u64,
    /// Latest first-send time of a frame the client has reported holding:
    /// a frame last sent well before it and still missing was lost.
    ack_horizon: Micros,
    srtt: Micros,
    rttvar: Micros,
    input_lead: i16,
    tokens: u32,
    refilled: Micros,
    dropped_window: u32,
    window_start: Micros,
    last_desync: Option<Micros>,
    /// Rollbacks the client reported so far.
    rollbacks: u64,
    /// A snapshot was sent and no ack has come since: the client is still
    /// receiving it (fresh frames are sent, but not resent, so a slow
    /// link is not flooded while the snapshot is on its way).
    awaiting_ack: bool,
    /// When the latest snapshot was sent.
    snapshot_at: Micros,
}

/// Least time between snapshots to a client that has not acknowledged
/// the previous one (µs).
const SNAPSHOT_RETRY: Micros = 2_000_000;

/// Ticks of later frames that must have arrived before a missing frame
/// counts as lost and is resent (reordering tolerance).
const LOSS_GAP: u64 = 3;

/// Send record of one frame.
#[derive(Clone, Copy, Debug)]
struct Sent {
    first: Micros,
    last: Micros,
    /// Reported held by the client (beyond its first gap).
    received: bool,
}

#[derive(Debug, Default)]
struct Seat {
    taken: bool,
    owner: Option<ConnId>,
    token: u64,
    reserved_until: Option<Micros>,
    inputs: BTreeMap<u64, PlayerInput>,
    input_ack: u64,
    last: PlayerInput,
}

#[derive(Debug)]
struct HistFrame {
    tick: u64,
    hash: u64,
    changes: Option<InputChanges>,
    events: Option<Vec<SlotEvent>>,
}

/// The authoritative room (see the module docs).
#[derive(Debug)]
pub struct ServerRoom<R: Rules> {
    config: RoomConfig,
    game: Game<R>,
    start: Micros,
    clients: BTreeMap<ConnId, Client>,
    seats: Vec<Seat>,
    queued_events: Vec<SlotEvent>,
    prev_inputs: Vec<PlayerInput>,
    history: VecDeque<HistFrame>,
    last_inputs: InputSet,
    out: VecDeque<Output>,
    events: VecDeque<RoomEvent>,
    stats: RoomStats,
    rng: u64,
    /// This tick's snapshot job, reused by further joins at the tick;
    /// dropped when the room ticks.
    snapshot: Option<SnapshotJob>,
}

/// Rules a [`ServerRoom`] can host: its snapshots are packed by the shell,
/// possibly on another thread ([`SnapshotJob`]), so the rules and their
/// state must be `Send + Sync`. Every `Rules` of plain data is.
pub trait RoomRules:
    Rules<Player: Send + Sync, State: Send + Sync> + Send + Sync + 'static
{
}

impl<R> RoomRules for R where
    R: Rules<Player: Send + Sync, State: Send + Sync> + Send + Sync + 'static
{
}

impl<R: RoomRules> ServerRoom<R> {
    /// A room whose tick 0 is at `now`.
    pub fn new(rules: R, config: RoomConfig, now: Micros) -> ServerRoom<R> {
        let slots = config.max_players.clamp(1, bitroom_sim::game::MAX_SLOTS);
        let game = Game::new(rules, slots);
        ServerRoom {
            prev_inputs: game.current_inputs(),
            seats: (0..slots).map(|_| Seat::default()).collect(),
            rng: config.seed ^ 0x9E37_79B9_7F4A_7C15,
            config,
            game,
            start: now,
            clients: BTreeMap::new(),
            queued_events: Vec::new(),
            history: VecDeque::new(),
            last_inputs: InputSet::default(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: RoomStats::default(),
            snapshot: None,
        }
    }

    /// The authoritative game.
    pub fn game(&self) -> &Game<R> {
        &self.game
    }

    /// The current tick.
    pub fn tick_number(&self) -> u64 {
        self.game.tick()
    }

    /// Counters.
    pub fn stats(&self) -> RoomStats {
        let mut s = self.stats;
        s.players = 0;
        s.spectators = 0;
        for c in self.clients.values() {
            if matches!(c.phase, Phase::Active) {
                match c.slot {
                    Some(_) => s.players += 1,
                    None => s.spectators += 1,
                }
            }
        }
        s
    }

    /// Settings.
    pub fn config(&self) -> &RoomConfig {
        &self.config
    }

    /// Connections (any phase).
    pub fn connection_count(&self) -> usize {
        self.clients.len()
    }

    /// The inputs of the latest tick (for recording).
    pub fn last_inputs(&self) -> &InputSet {
        &self.last_inputs
    }

    /// The state hash of the latest tick, as computed for its frames (for
    /// recording without hashing the state twice).
    pub fn last_hash(&self) -> u64 {
        self.history
            .back()
            .map_or_else(|| self.game.state_hash(), |h| h.hash)
    }

    /// When tick `t` is due: `start + t / tick_rate` seconds.
    pub fn deadline(&self, t: u64) -> Micros {
        self.start + t * 1_000_000 / u64::from(self.config.tick_rate)
    }

    /// Next queued output.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Next event.
    pub fn poll_event(&mut self) -> Option<RoomEvent> {
        self.events.pop_front()
    }

    fn next_token(&mut self) -> u64 {
        // splitmix64 over the seeded counter.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn send_reliable(&mut self, conn: ConnId, msg: &ServerReliable) {
        let bytes = encode_server_reliable(msg);
        self.stats.bytes_out += bytes.len() as u64 + 4;
        self.out.push_back(Output::Reliable { conn, bytes });
    }

    fn send_datagram(&mut self, conn: ConnId, msg: &ServerDatagram) {
        let bytes = encode_server_datagram(msg);
        self.stats.bytes_out += bytes.len() as u64;
        self.out.push_back(Output::Datagram { conn, bytes });
    }

    fn reject(&mut self, conn: ConnId, what: Rejection) {
        match what {
            Rejection::Malformed => self.stats.malformed += 1,
            Rejection::WrongSlot => self.stats.wrong_slot += 1,
            Rejection::TooFarAhead => self.stats.too_far_ahead += 1,
            Rejection::RateLimited => self.stats.rate_limited += 1,
            Rejection::Unexpected => self.stats.unexpected += 1,
        }
        self.events.push_back(RoomEvent::Rejected { conn, what });
    }

    /// A new transport connection; it must say hello in time.
    pub fn handle_connect(&mut self, now: Micros, conn: ConnId) {
        let rate = self.config.tick_rate;
        self.clients.insert(
            conn,
            Client {
                phase: Phase::Hello { since: now },
                slot: None,
                acked: 0,
                sent: VecDeque::new(),
                newest_acked: 0,
                ack_horizon: 0,
                srtt: 100_000,
                rttvar: 50_000,
                input_lead: NO_INPUT_YET,
                tokens: rate * 2,
                refilled: now,
                dropped_window: 0,
                window_start: now,
                last_desync: None,
                rollbacks: 0,
                awaiting_ack: false,
                snapshot_at: now,
            },
        );
    }

    /// Closes a connection with a reason sent to the client first.
    pub fn kick(&mut self, conn: ConnId, reason: KickReason) {
        if !self.clients.contains_key(&conn) {
            return;
        }
        self.send_reliable(conn, &ServerReliable::Kick(reason.clone()));
        self.out.push_back(Output::Close {
            conn,
            reason: reason.clone(),
        });
        self.drop_client(conn, reason, false);
    }

    /// Kicks everyone (shutdown, or the room closing).
    pub fn kick_all(&mut self, reason: KickReason) {
        let conns: Vec<ConnId> = self.clients.keys().copied().collect();
        for c in conns {
            self.kick(c, reason.clone());
        }
    }

    /// The transport connection is gone (timeout, close, reset).
    pub fn handle_disconnect(&mut self, now: Micros, conn: ConnId) {
        let grace = now + self.config.reconnect_grace;
        if let Some(c) = self.clients.get(&conn) {
            if let Some(s) = c.slot {
                let seat = &mut self.seats[usize::from(s)];
                if seat.owner == Some(conn) {
                    seat.owner = None;
                    seat.reserved_until = Some(grace);
                }
            }
        }
        self.drop_client(conn, KickReason::Left, true);
    }

    fn drop_client(&mut self, conn: ConnId, reason: KickReason, keep_seat: bool) {
        let Some(c) = self.clients.remove(&conn) else {
            return;
        };
        if let Some(s) = c.slot {
            let seat = &mut self.seats[usize::from(s)];
            if seat.owner == Some(conn) && !keep_seat {
                self.queued_events.push(SlotEvent::Leave(s));
                *seat = Seat::default();
            }
        }
        if matches!(c.phase, Phase::Active) || c.slot.is_some() {
            self.events.push_back(RoomEvent::Left {
                conn,
                slot: c.slot,
                reason,
            });
        }
    }

    /// A complete message from a connection's reliable stream.
    pub fn handle_reliable(&mut self, now: Micros, conn: ConnId, bytes: &[u8]) {
        self.stats.bytes_in += bytes.len() as u64 + 4;
        let msg = match decode_client_reliable(bytes) {
            Ok(m) => m,
            Err(e) => {
                // A broken reliable stream cannot be resynchronised.
                self.reject(conn, Rejection::Malformed);
                self.kick(conn, KickReason::BadMessage(e.to_string()));
                return;
            }
        };
        let Some(c) = self.clients.get(&conn) else {
            return;
        };
        let active = matches!(c.phase, Phase::Active);
        match msg {
            ClientReliable::Hello(h) if !active => self.hello(now, conn, h),
            ClientReliable::Desync(r) if active => self.desync(now, conn, r),
            // Leaving frees the slot at once, like a kick with reason `Left`.
            ClientReliable::Leave => self.kick(conn, KickReason::Left),
            _ => {
                self.reject(conn, Rejection::Unexpected);
                self.kick(
                    conn,
                    KickReason::BadMessage("message not allowed in this state".into()),
                );
            }
        }
    }

    fn hello(&mut self, now: Micros, conn: ConnId, h: Hello) {
        if h.version != PROTOCOL_VERSION {
            return self.kick(
                conn,
                KickReason::VersionMismatch {
                    server: PROTOCOL_VERSION,
                    client: h.version,
                },
            );
        }
        let fp = self.game.rules().fingerprint();
        if h.rules != fp {
            return self.kick(
                conn,
                KickReason::RulesMismatch {
                    server: fp,
                    client: h.rules,
                },
            );
        }
        let mut reconnect = false;
        let slot = if h.spectator {
            let spectators = self
                .clients
                .values()
                .filter(|c| matches!(c.phase, Phase::Active) && c.slot.is_none())
                .count();
            if spectators as u32 >= self.config.max_spectators {
                return self.kick(conn, KickReason::RoomFull);
            }
            None
        } else if let Some(s) = h.reconnect.and_then(|tok| {
            self.seats
                .iter()
                .position(|seat| seat.taken && seat.token == tok)
        }) {
            reconnect = true;
            if let Some(old) = self.seats[s].owner {
                if old != conn {
                    self.kick(old, KickReason::Replaced);
                    // The kick freed the seat; take it back without a leave.
                    self.queued_events
                        .retain(|e| *e != SlotEvent::Leave(s as u8));
                    self.seats[s].taken = true;
                    self.seats[s].token = h.reconnect.unwrap_or_default();
                }
            }
            Some(s as u8)
        } else {
            let Some(s) = self.seats.iter().position(|seat| !seat.taken) else {
                return self.kick(conn, KickReason::RoomFull);
            };
            self.queued_events.push(SlotEvent::Join(s as u8));
            Some(s as u8)
        };
        let token = match slot {
            Some(s) if reconnect => self.seats[usize::from(s)].token,
            Some(_) => self.next_token(),
            None => 0,
        };
        if let Some(s) = slot {
            let seat = &mut self.seats[usize::from(s)];
            seat.taken = true;
            seat.owner = Some(conn);
            seat.token = token;
            seat.reserved_until = None;
            seat.input_ack = seat.input_ack.max(self.game.tick());
        }
        let tick = self.game.tick();
        let c = self
            .clients
            .get_mut(&conn)
            .expect("hello from a known client");
        c.phase = Phase::Active;
        c.slot = slot;
        let welcome = Welcome {
            version: PROTOCOL_VERSION,
            slot,
            slots: self.game.slot_count(),
            tick,
            tick_rate: self.config.tick_rate,
            token,
        };
        self.send_reliable(conn, &ServerReliable::Welcome(welcome));
        self.send_snapshot(now, conn);
        self.events.push_back(RoomEvent::Joined {
            conn,
            slot,
            name: h.name,
            reconnect,
        });
    }

    /// Sends the current state; the client continues from its tick.
    fn send_snapshot(&mut self, now: Micros, conn: ConnId) {
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
            c.sent.clear();
            c.newest_acked = tick;
            c.awaiting_ack = true;
            c.snapshot_at = now;
            c.refilled = now.max(c.refilled);
        }
    }

    fn desync(&mut self, now: Micros, conn: ConnId, report: DesyncReport) {
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

    /// Takes a datagram's cost from the rate limit: `None` for an unknown
    /// (or just kicked) connection, `Some(false)` when over the limit.
    fn admit(&mut self, now: Micros, conn: ConnId) -> Option<bool> {
        let rate = self.config.tick_rate;
        let c = self.clients.get_mut(&conn)?;
        // Refill at 3× the tick rate, up to 2 s of ticks.
        let add = (now.saturating_sub(c.refilled) * u64::from(rate) * 3 / 1_000_000) as u32;
        if add > 0 {
            c.tokens = (c.tokens + add).min(rate * 2);
            c.refilled = now;
        }
        let mut flooding = false;
        if now >= c.window_start + 1_000_000 {
            flooding = c.dropped_window > rate * 2;
            c.window_start = now;
            c.dropped_window = 0;
        }
        if flooding {
            self.kick(conn, KickReason::Flood);
            return None;
        }
        if c.tokens == 0 {
            c.dropped_window += 1;
            return Some(false);
        }
        c.tokens -= 1;
        Some(true)
    }

    /// A datagram from a connection.
    pub fn handle_datagram(&mut self, now: Micros, conn: ConnId, bytes: &[u8]) {
        self.stats.bytes_in += bytes.len() as u64;
        match self.admit(now, conn) {
            None => return,
            Some(false) => return self.reject(conn, Rejection::RateLimited),
            Some(true) => {}
        }
        let msg = match decode_client_datagram(bytes) {
            Ok(m) => m,
            Err(_) => return self.reject(conn, Rejection::Malformed),
        };
        let Some(c) = self.clients.get(&conn) else {
            return;
        };
        if !matches!(c.phase, Phase::Active) {
            if !matches!(msg, ClientDatagram::Ping { .. }) {
                self.reject(conn, Rejection::Unexpected);
            }
            return;
        }
        match msg {
            ClientDatagram::Ping { time } => {
                self.send_datagram(conn, &ServerDatagram::Pong { time });
            }
            ClientDatagram::Ack(a) => self.ack(now, conn, a),
            ClientDatagram::Report {
                rollbacks,
                max_rollback,
            } => {
                if let Some(c) = self.clients.get_mut(&conn) {
                    // Cumulative: count what is new (reports may reorder).
                    if rollbacks > c.rollbacks {
                        self.stats.rollbacks_reported += rollbacks - c.rollbacks;
                        c.rollbacks = rollbacks;
                    }
                    self.stats.max_rollback_reported =
                        self.stats.max_rollback_reported.max(max_rollback);
                }
            }
            ClientDatagram::Inputs(b) => {
                self.ack(now, conn, b.ack);
                self.inputs(now, conn, b);
            }
        }
    }

    fn ack(&mut self, now: Micros, conn: ConnId, a: FrameAck) {
        let current = self.game.tick();
        let Some(c) = self.clients.get_mut(&conn) else {
            return;
        };
        let through = widen_tick(a.through, current).min(current);
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
        let newest_tick = widen_tick(a.newest, current).clamp(through, current);
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
                if f.first == f.last {
                    let sample = now.saturating_sub(f.first).min(2_000_000);
                    // RFC 6298 smoothing.
                    c.rttvar = (c.rttvar * 3 + c.srtt.abs_diff(sample)) / 4;
                    c.srtt = (c.srtt * 7 + sample) / 8;
                }
            }
        }
    }

    fn inputs(&mut self, now: Micros, conn: ConnId, b: InputBatch) {
        let current = self.game.tick();
        let Some(c) = self.clients.get(&conn) else {
            return;
        };
        if c.slot != Some(b.slot) {
            return self.reject(conn, Rejection::WrongSlot);
        }
        if b.inputs.is_empty() {
            return;
        }
        let first = widen_tick(b.first_tick, current);
        let newest = first + b.inputs.len() as u64 - 1;
        let limit = current + u64::from(self.config.max_input_ahead);
        let held = self.seats[usize::from(b.slot)].input_ack;
        // Clock feedback: how early the earliest input this batch brings
        // arrived before its tick was due. Measured on the first input the
        // room did not hold yet (not the newest in the batch), so a lost
        // batch shows as the tick later its inputs arrived, and the
        // client's margin grows with the loss. A batch that brings nothing
        // (a duplicate, a reordered older one) says nothing new.
        let fresh = first.max(held + 1);
        if fresh <= newest {
            let lead = (self.deadline(fresh) as i64 - now as i64) / 100;
            if let Some(c) = self.clients.get_mut(&conn) {
                c.input_lead = lead.clamp(i64::from(NO_INPUT_YET) + 1, i64::from(i16::MAX)) as i16;
            }
        }
        if newest > limit {
            // Counted, but the feedback above was still given and the
            // inputs in range are kept: refusing the whole batch without
            // telling the client left it steering by a stale (late) lead,
            // jumping further ahead, and every later batch was refused.
            self.reject(conn, Rejection::TooFarAhead);
        }
        let seat = &mut self.seats[usize::from(b.slot)];
        for (i, input) in b.inputs.into_iter().enumerate() {
            let t = first + i as u64;
            if t <= seat.input_ack {
                continue;
            }
            if t > limit {
                break;
            }
            seat.input_ack = t;
            if t <= current {
                self.stats.late_inputs += 1;
                continue;
            }
            seat.inputs.insert(t, input);
        }
    }

    /// Steps the game one tick and sends every client its frame. Call it
    /// when [`ServerRoom::deadline`] of the next tick has come.
    pub fn tick(&mut self, now: Micros) {
        self.expire(now);
        // The last snapshot job is of the previous tick: never reused, so
        // the room does not keep its state copy (writers still holding
        // the job keep theirs).
        self.snapshot = None;
        let t = self.game.tick() + 1;
        let n = self.queued_events.len().min(MAX_FRAME_EVENTS);
        let events: Vec<SlotEvent> = self.queued_events.drain(..n).collect();
        let mut inputs = Vec::with_capacity(self.seats.len());
        for seat in &mut self.seats {
            let input = if !seat.taken {
                PlayerInput::default()
            } else if seat.owner.is_none() {
                // Dropped and waiting for a reconnect: stand still.
                PlayerInput::default()
            } else {
                match seat.inputs.remove(&t) {
                    Some(i) => i,
                    None => {
                        self.stats.missing_inputs += 1;
                        seat.last
                    }
                }
            };
            while let Some((&k, _)) = seat.inputs.first_key_value() {
                if k > t {
                    break;
                }
                seat.inputs.pop_first();
            }
            seat.last = input;
            inputs.push(input);
        }
        // A slot that left this tick starts from the default input.
        for e in &events {
            if let SlotEvent::Leave(s) = *e {
                if let Some(i) = inputs.get_mut(usize::from(s)) {
                    if !self.seats[usize::from(s)].taken {
                        *i = PlayerInput::default();
                    }
                }
            }
        }
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
        self.history.push_back(HistFrame {
            tick: t,
            hash,
            changes: (mask != 0).then_some(InputChanges {
                mask,
                inputs: changed,
            }),
            events: (!events.is_empty()).then_some(events),
        });
        while self.history.len() > self.config.history as usize {
            self.history.pop_front();
        }
        self.stats.ticks += 1;
        let conns: Vec<ConnId> = self.clients.keys().copied().collect();
        for conn in conns {
            self.send_frames(now, conn);
        }
    }

    fn frame_msg(&self, now: Micros, h: &HistFrame, c: &Client) -> ServerDatagram {
        let held = c.slot.map_or(0, |s| self.seats[usize::from(s)].input_ack);
        // The lead of the next input, not yet here, can only be lower than
        // the time left until its tick: report that when it is lower, so a
        // client whose inputs stopped coming (paused, jumped back too far,
        // cut off) learns it at once instead of steering by the last lead
        // measured, which stays as it was for as long as nothing arrives.
        let mut input_lead = c.input_lead;
        if input_lead != NO_INPUT_YET {
            let bound = (self.deadline(held + 1) as i64 - now as i64) / 100;
            if bound < i64::from(input_lead) {
                input_lead = bound.max(i64::from(NO_INPUT_YET) + 1) as i16;
            }
        }
        ServerDatagram::Frame(TickFrame {
            tick: h.tick as u32,
            hash: h.hash,
            input_ack: held as u32,
            input_lead,
            changes: h.changes.clone(),
            events: h.events.clone(),
        })
    }

    fn send_frames(&mut self, now: Micros, conn: ConnId) {
        let t = self.game.tick();
        let period = 1_000_000 / u64::from(self.config.tick_rate);
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
        // A frame is resent when frames first sent at least `LOSS_GAP`
        // ticks after its last send have arrived and it has not (lost, like
        // QUIC's packet threshold: about a round trip after it was sent),
        // or, when no later frame's receipt has been reported (the last
        // frames before a pause), after a retransmission timeout. The timeout alone, as
        // before (1.5 × a smoothed RTT that loss inflated, up to 1 s),
        // left a client at 20 % loss waiting for a lost frame long enough
        // that its acknowledgements fell out of the frame history now and
        // then, and each time it was started over from a snapshot.
        let rto = (c.srtt + 4 * c.rttvar + 2 * period).min(1_000_000);
        let loss_gap = LOSS_GAP * period;
        let mut msgs = Vec::new();
        let mut resent = 0;
        for (i, tick) in (c.acked + 1..=t).enumerate() {
            let Some(h) = self.history.get((tick - oldest) as usize) else {
                break;
            };
            let fresh = i >= c.sent.len();
            let held = !fresh && c.sent[i].received;
            let due = !fresh
                && !held
                && !c.awaiting_ack
                && (c.ack_horizon >= c.sent[i].last + loss_gap || now >= c.sent[i].last + rto);
            if fresh || (due && resent < 8) {
                if !fresh {
                    resent += 1;
                }
                msgs.push((i, self.frame_msg(now, h, c)));
            }
        }
        let c = self.clients.get_mut(&conn).expect("client exists");
        for (i, _) in &msgs {
            if *i >= c.sent.len() {
                c.sent.push_back(Sent {
                    first: now,
                    last: now,
                    received: false,
                });
            } else {
                c.sent[*i].last = now;
            }
        }
        self.stats.resent_frames += resent;
        for (_, m) in msgs {
            self.send_datagram(conn, &m);
        }
    }

    fn expire(&mut self, now: Micros) {
        let late: Vec<ConnId> = self
            .clients
            .iter()
            .filter(|(_, c)| {
                matches!(c.phase, Phase::Hello { since } if now >= since + self.config.handshake_timeout)
            })
            .map(|(&k, _)| k)
            .collect();
        for conn in late {
            self.kick(conn, KickReason::HandshakeTimeout);
        }
        for (s, seat) in self.seats.iter_mut().enumerate() {
            if seat.taken && seat.owner.is_none() && seat.reserved_until.is_some_and(|t| now >= t) {
                self.queued_events.push(SlotEvent::Leave(s as u8));
                *seat = Seat::default();
            }
        }
    }
}

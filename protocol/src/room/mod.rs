//! `ServerRoom`: the authoritative room as a sans-IO state machine.
//!
//! The IO shell tells the room about connections, bytes and time; the room
//! steps the game when told (`tick`), never waits for anyone (a missing
//! input repeats the slot's last input; a late one is dropped and counted),
//! and queues outgoing bytes per connection ([`Output`]).
//!
//! # Layout
//! - this file: [`ServerRoom`], its parts, and what it tells the shell;
//! - `config.rs`: [`RoomConfig`];
//! - `events.rs`: [`Output`], [`RoomEvent`], [`Rejection`], [`RoomStats`];
//! - `seats.rs`: hellos (with a verified token's [`Grant`]), seats,
//!   reconnect secrets, kicks, disconnects;
//! - `inputs.rs`: datagrams in, rate limits, input collection per tick;
//! - `frames.rs`: the step, tick frames, resends, acknowledgements;
//! - `snapshot.rs`: join and resync snapshots ([`SnapshotJob`]), desync
//!   reports (rate and size bounds).

mod config;
mod events;
mod frames;
mod inputs;
mod seats;
mod snapshot;

pub use config::RoomConfig;
pub use events::{Output, Rejection, RoomEvent, RoomStats};
pub use seats::Grant;
pub use snapshot::{
    SnapshotJob, BASE_CLIENT_MESSAGE, MAX_REPORTS, REPORT_MARGIN, REPORT_PERIOD, REPORT_WINDOW,
};

use crate::messages::*;
use crate::{Micros, NetRules};
use bitroom_sim::game::{Game, Input, InputSet, Rules, SlotEvent};
use frames::{HistFrame, Sent};
use seats::Seat;
use std::collections::{BTreeMap, VecDeque};

/// A transport connection, numbered by the shell.
pub type ConnId = u64;

/// Where a connection is: waiting for its hello, or in the room.
#[derive(Debug)]
enum Phase {
    Hello { since: Micros },
    Active,
}

/// One connection's state in the room.
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
    /// Frames to the client are repeated until then (a loss was seen).
    lossy_until: Micros,
    /// How early the client's inputs arrived (µs), once one has.
    input_lead: Option<i64>,
    tokens: u32,
    refilled: Micros,
    dropped_window: u32,
    window_start: Micros,
    /// When the client's desync reports of the last [`REPORT_PERIOD`]
    /// came (at most [`MAX_REPORTS`] + 1 entries).
    reports: VecDeque<Micros>,
    /// When a report of this client was last passed on as an event.
    reported: Option<Micros>,
    /// Rollbacks the client reported so far.
    rollbacks: u64,
    /// A snapshot was sent and no ack has come since: the client is still
    /// receiving it (fresh frames are sent, but not resent, so a slow
    /// link is not flooded while the snapshot is on its way).
    awaiting_ack: bool,
    /// When the latest snapshot was sent.
    snapshot_at: Micros,
}

/// The authoritative room (see the module docs).
#[derive(Debug)]
pub struct ServerRoom<R: Rules> {
    config: RoomConfig,
    game: Game<R>,
    start: Micros,
    clients: BTreeMap<ConnId, Client>,
    seats: Vec<Seat<R::Input>>,
    queued_events: Vec<SlotEvent>,
    prev_inputs: Vec<R::Input>,
    history: VecDeque<HistFrame<R::Input>>,
    last_inputs: InputSet<R::Input>,
    out: VecDeque<Output>,
    events: VecDeque<RoomEvent>,
    stats: RoomStats,
    /// Reconnect secrets drawn so far (the generator's counter).
    secrets: u64,
    /// This tick's snapshot job, reused by further joins at the tick;
    /// dropped when the room ticks.
    snapshot: Option<SnapshotJob>,
    /// The latest snapshot job, until it is packed: its size bounds desync
    /// reports.
    size_probe: Option<SnapshotJob>,
    /// Bytes of the latest packed snapshot (0 before the first).
    packed_state: usize,
}

impl<R: NetRules> ServerRoom<R> {
    /// A room whose tick 0 is at `now`.
    ///
    /// A game whose [`Input::MAX_ENCODED`] is over [`MAX_INPUT_BYTES`] does
    /// not compile here: its frames would not fit a datagram.
    pub fn new(rules: R, config: RoomConfig, now: Micros) -> ServerRoom<R> {
        const {
            assert!(
                <R::Input as Input>::MAX_ENCODED <= MAX_INPUT_BYTES,
                "the game's Input::MAX_ENCODED is over bitroom_protocol::MAX_INPUT_BYTES"
            )
        };
        let slots = config.max_players.clamp(1, bitroom_sim::game::MAX_SLOTS);
        let game = Game::new(rules, slots);
        ServerRoom {
            prev_inputs: game.current_inputs(),
            seats: (0..slots).map(|_| Seat::default()).collect(),
            secrets: 0,
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
            size_probe: None,
            packed_state: 0,
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
    pub fn last_inputs(&self) -> &InputSet<R::Input> {
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

    fn send_reliable(&mut self, conn: ConnId, msg: &ServerReliable) {
        let bytes = encode_server_reliable(msg);
        self.stats.bytes_out += bytes.len() as u64 + 4;
        self.out.push_back(Output::Reliable { conn, bytes });
    }

    fn send_datagram(&mut self, conn: ConnId, msg: &ServerDatagram<R::Input>) {
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
}

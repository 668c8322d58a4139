//! Wire messages and their codec.
//!
//! Every message is serde + bincode 2, little-endian, decoded with a size
//! limit and refused when bytes are left over: reliable messages in the
//! fixed-int configuration, datagrams in the variable-int one (lengths,
//! enum tags and small integers take a byte: they are most of a tick's
//! bytes), with the game's inputs inside them still in their canonical
//! fixed-int encoding (so [`Input::MAX_ENCODED`] bounds them there too),
//! and state hashes as 4 fixed bytes. Two channels:
//!
//! | channel | client → server | server → client |
//! |---|---|---|
//! | unreliable datagrams (≤ [`MAX_DATAGRAM`] bytes) | [`ClientDatagram`]: input batches (the unacknowledged inputs, run-length coded), frame acks, pings with rollback reports | [`ServerDatagram`]: frame bundles (new ticks, repeats, resends), pongs |
//! | one reliable ordered stream, each message framed by a `u32` LE length (≤ [`MAX_RELIABLE`]) | [`ClientReliable`]: hello, desync report, leave | [`ServerReliable`]: welcome, snapshot chunks, kick |
//!
//! Per-tick traffic is input-driven: a tick's entry in a frame bundle
//! carries the inputs that *changed* since the previous tick (a slot mask
//! plus those inputs), the join / leave events and the state hash; the
//! bundle adds an input ack and timing feedback. So downstream bandwidth
//! depends on players, not on bodies. A bundle goes out every
//! `tick_rate / send_rate` ticks ([`crate::RoomConfig::send_rate`]), an
//! input batch likewise ([`crate::ClientConfig::send_rate`]).
//!
//! The per-tick messages are generic over the game's input type
//! ([`Input`], the rules' [`Rules::Input`]); the reliable ones are not.
//! An input encodes to at most [`Input::MAX_ENCODED`] bytes, which a
//! hosted game may state up to [`MAX_INPUT_BYTES`]: that keeps every
//! tick of a bundle within [`MAX_DATAGRAM`] (the `largest_datagrams_fit`
//! test encodes the largest); senders fill bundles and batches up to
//! [`MAX_DATAGRAM`]. Decoding refuses inputs over the game's bound.
//!
//! [`Rules::Input`]: bitroom_sim::game::Rules::Input

use crate::token::{TokenError, MAX_TOKEN_LEN};
use bincode::config::{Config, Configuration, Fixint, Limit, LittleEndian, NoLimit, Varint};
use bitroom_sim::game::{Input, SlotEvent, MAX_SLOTS};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Protocol version; a mismatch refuses the client. 2: snapshots and state
/// hashes encode only the used polygon vertices and manifold points. 3: the
/// `Overloaded` kick reason. 4: manifold points no longer carry their two
/// anchors (derived from the point) nor the last step's largest normal
/// impulse (never read), so snapshots and state hashes change. 5: snapshot
/// chunks and desync reports carry the packed form
/// ([`GameSnapshot::to_packed`]). 6: a step collides at its end, and
/// snapshots and state hashes leave out the contact geometry (recomputed
/// from the positions on decoding). 7: the contact solver works on
/// coloured bundles of contacts (a new simulation: the same encodings, but
/// every state after a step with contacts differs from 6's). 8: contacts
/// between thick shapes are recycled (manifolds at reference poses carried
/// by the bodies' motion; a new simulation, the same encodings). 9: input
/// batches and tick frames carry the game's own input type
/// ([`Rules::Input`], at most [`MAX_INPUT_BYTES`] each; the sandbox's
/// `PlayerInput` encodes as in 8), and inputs over the game's stated size
/// are refused. 10: the physics checked against Box2D v3
/// (`tools/box2d-compare`): recycled contacts keep their lever arms and
/// normal fixed at the bodies' reference rotations and follow the pair's
/// relative pose, polygons clip before trying a vertex pair, friction is
/// solved in the relax pass only, the contact colouring alternates direction
/// on odd ticks, fat boxes include the speculative distance, and the
/// revolute joint's relax pass turns its anchors (a new simulation, the same
/// encodings). 11: datagrams in bincode's variable-int configuration;
/// tick frames travel in [`FrameBundle`]s (several ticks, 24-bit hashes,
/// repeats and resends), input batches as [`InputRun`]s; frame acks name
/// the newest frame held and the 32 before it ([`FrameAck::ahead`],
/// [`FrameAck::recent`]) instead of the 32 after the first gap; a bundle's
/// input lead is [`NO_INPUT_YET`] until the client's first input arrives;
/// pings carry the rollback counters (no separate report). 12: admission
/// (issue 22): the hello carries a connect token ([`Hello::token`], at
/// most [`MAX_TOKEN_LEN`] bytes) and a 128-bit reconnect secret
/// ([`ReconnectSecret`], was a guessable `u64`), the welcome hands out that
/// secret, and refusals have their own kick reasons ([`KickReason::Token`],
/// seats, room creation, message deadlines, desync reports). 13: a tick
/// right after the entry before it in a bundle leaves its position out
/// (`TickWire`'s `Next…` variants, a byte less per tick). 14: fat boxes
/// of moving shapes grow by an eighth of the shape's extent, at most 5 cm
/// (Box2D v3's per-shape margin; was 5 cm for every shape), and a
/// teleport re-makes them only when they no longer hold the shape (a new
/// simulation for shapes under 40 cm, the same encodings). 15: chain
/// shapes (a new shape geometry in snapshots, variant 4), contacts with a
/// sleeping dynamic body left out of the solve until the step's collide
/// wakes it, and continuous collision that lets rounded shapes graze
/// what they pass (an impact must come within Box2D's target, a slop of
/// overlap): a new simulation for the arena's capsules. 16: a pair of
/// bodies moving fast relative to each other (a cell or a rotation step of
/// the recycling grid a step) has its manifold taken by the narrow phase
/// at the current poses instead of recycled, and each contact in a
/// snapshot carries that flag: a new simulation wherever things tumble or
/// slide fast, and one more byte per contact. 17: a vector's length is
/// exact below half a metre and its direction unit at every length from
/// 2⁻²³ m (Box2D's threshold; the direction was rough below a millimetre,
/// a contact normal 1.37 long), and a capsule pair's separation is taken
/// from the exact distance between its segments: a new simulation wherever shapes meet at a vertex or a
/// rounded end and wherever joints move (boxes resting face to face keep
/// theirs), the same encodings. 18: each pass of a substep solves the
/// joints after the contacts, not before (a contact's capped push no
/// longer has the last word over a joint: heaps of ragdolls whose limbs
/// caught in each other's joints wound themselves up and never slept): a
/// new simulation wherever joints and contacts meet, the same encodings.
/// 19: a body counts toward sleep by the speed of its farthest point
/// (`|v| + |ω|·r`) and half the rate of its motion over the step, as
/// Box2D's do, not by the larger of `|v|` and `|ω|·r` (a ball rolling at
/// 3 cm/s fell asleep): a new simulation wherever bodies slow to rest,
/// the same encodings.
/// 20: a body's angular speed is capped at a quarter turn per step at any
/// tick rate (0.25π·`tick_rate`, as Box2D's; it was 15π, a quarter turn
/// at 60 Hz, at every rate), and bodies with `allow_fast_rotation` (a new
/// flag each body carries in snapshots) at a quarter turn per substep: a
/// new simulation at rates other than 60 Hz, and new snapshot bytes.
/// 21: the contact solver colours and solves the contacts in windows of
/// 8 192 consecutive contacts, not 1 024: a new simulation in every world
/// with more than 1 024 touching contacts, the same encodings.
///
/// [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed
/// [`Rules::Input`]: bitroom_sim::game::Rules::Input
pub const PROTOCOL_VERSION: u32 = 21;
/// A state hash as frames carry it: its low 24 bits.
pub fn wire_hash(hash: u64) -> u32 {
    (hash & 0x00FF_FFFF) as u32
}

/// [`FrameBundle::input_lead`] of a client whose inputs have not arrived yet.
pub const NO_INPUT_YET: i16 = i16::MIN;
/// Largest datagram we send or accept (quinn's initial max is 1162).
pub const MAX_DATAGRAM: usize = 1150;
/// Largest reliable message (a snapshot chunk, a desync report).
pub const MAX_RELIABLE: usize = 8 << 20;
/// Snapshot bytes per chunk.
pub const SNAPSHOT_CHUNK: usize = 256 << 10;
/// Largest snapshot a client reassembles.
pub const MAX_SNAPSHOT_TOTAL: usize = 64 << 20;
/// Most ticks one input batch covers (about a second at 60 Hz).
pub const MAX_BATCH_TICKS: u64 = 64;
/// Most ticks in one frame bundle.
pub const MAX_BUNDLE_TICKS: usize = 128;
/// Most ticks a frame bundle's entries may count back (ticks travel as 16
/// bits and must stay within half their range of the receiver's).
pub const MAX_BUNDLE_SPAN: u64 = 4096;
/// Most join / leave events in one tick frame.
pub const MAX_FRAME_EVENTS: usize = 64;
/// Largest [`Input::MAX_ENCODED`] a hosted game may state. With it, a
/// bundle of the largest tick ([`MAX_SLOTS`] changed inputs and
/// [`MAX_FRAME_EVENTS`] events: 153 + 32 × 24 = 921 bytes) fits in
/// [`MAX_DATAGRAM`], as does a batch of 44 runs of distinct inputs;
/// senders put in what fits. A room or session of a game with larger
/// inputs does not compile.
pub const MAX_INPUT_BYTES: usize = 24;
/// Longest room name and player name (bytes).
pub const MAX_NAME: usize = 64;

/// Reliable messages (and the canonical encoding of inputs).
const CONFIG: Configuration<LittleEndian, Fixint, NoLimit> = bincode::config::standard()
    .with_fixed_int_encoding()
    .with_little_endian();
/// Datagrams.
const DATAGRAM: Configuration<LittleEndian, Varint, NoLimit> =
    bincode::config::standard().with_little_endian();

/// A message that did not decode.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// Longer than the channel allows.
    #[error("message of {len} bytes exceeds the limit of {limit}")]
    TooLarge {
        /// Bytes received.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// Malformed or truncated.
    #[error("malformed message: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// Bytes left over.
    #[error("message has {0} trailing bytes")]
    Trailing(usize),
    /// Decoded but breaks a rule (named).
    #[error("invalid message: {0}")]
    Invalid(&'static str),
}

/// Client hello: the first reliable message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the client.
    pub version: u32,
    /// Fingerprint of the client's rules and scene.
    pub rules: u64,
    /// Room to join (created on first join).
    pub room: String,
    /// Display name.
    pub name: String,
    /// Watch only: no slot, no inputs.
    pub spectator: bool,
    /// The secret from an earlier welcome: reclaims that slot.
    pub reconnect: Option<ReconnectSecret>,
    /// A connect token's bytes (`bitroom_protocol::token`), at most
    /// [`MAX_TOKEN_LEN`]: required by servers started with token keys,
    /// ignored by open ones.
    #[serde(with = "serde_bytes")]
    pub token: Option<Vec<u8>>,
}

/// Reclaims a seat after a dropped connection: 128 bits the room hands out
/// in the [`Welcome`] and a later [`Hello::reconnect`] presents.
///
/// The room draws them from a generator keyed with
/// [`RoomConfig::secret_seed`](crate::RoomConfig::secret_seed), which the
/// server fills from the operating system's randomness, so no client can
/// compute another's. Equality is constant-time (no early exit on the
/// first differing byte), and `Debug` does not print the bits.
#[derive(Clone, Copy, Default, Serialize, Deserialize)]
pub struct ReconnectSecret(pub [u8; 16]);

impl PartialEq for ReconnectSecret {
    fn eq(&self, other: &ReconnectSecret) -> bool {
        use subtle::ConstantTimeEq;
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for ReconnectSecret {}

impl fmt::Debug for ReconnectSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReconnectSecret(..)")
    }
}

/// A desync seen by a client: its hash differs from the server's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesyncReport {
    /// The first tick whose hash differed.
    pub tick: u64,
    /// The client's hash.
    pub client_hash: u64,
    /// The server's hash as the client saw it in a frame (its low 24
    /// bits: [`wire_hash`]).
    pub server_hash: u64,
    /// The client's game snapshot at that tick, packed
    /// ([`GameSnapshot::to_packed`]; empty if unavailable or too large to
    /// send). Readers should use [`GameSnapshot::decode`], which also takes
    /// the canonical bytes earlier builds sent.
    ///
    /// [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed
    /// [`GameSnapshot::decode`]: bitroom_sim::game::GameSnapshot::decode
    pub state: Vec<u8>,
}

/// Client → server, reliable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientReliable {
    /// Join request.
    Hello(Hello),
    /// Desync report; the server answers with a fresh snapshot.
    Desync(DesyncReport),
    /// The player leaves for good (the slot is freed at once).
    Leave,
}

/// Which frames a client holds: every tick up to `through`, tick
/// `through + ahead` (the newest it has), and tick `newest - 1 - i` for
/// every set bit `i` of `recent`. Anchored at the newest frame, not at the
/// first gap, so the server always learns what arrived last: that is what
/// its round-trip samples and its loss detection are measured from,
/// however long a gap before it lasts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameAck {
    /// Newest tick received with all before it (low 16 bits).
    #[serde(with = "crate::wire::fixed_u16")]
    pub through: u16,
    /// The newest tick received, counted from `through` (0: nothing later).
    pub ahead: u32,
    /// Receipt of the 32 ticks before the newest.
    pub recent: u32,
}

impl FrameAck {
    /// The ack of a receiver that holds every tick up to `through` and the
    /// ticks in `held` (each above `through`).
    pub fn new(through: u64, held: impl DoubleEndedIterator<Item = u64>) -> FrameAck {
        let mut held = held.rev().take_while(|&t| t > through).peekable();
        let newest = held.peek().copied().unwrap_or(through);
        let mut recent = 0u32;
        for t in held.skip(1) {
            let back = newest - 1 - t;
            if back >= 32 {
                break;
            }
            recent |= 1 << back;
        }
        FrameAck {
            through: through as u16,
            ahead: (newest - through).min(u64::from(u32::MAX)) as u32,
            recent,
        }
    }

    /// Whether the ack reports `tick` held, given `through` widened to a
    /// full tick ([`crate::widen_tick16`]) and `newest = through + ahead`.
    pub fn holds(&self, tick: u64, through: u64, newest: u64) -> bool {
        tick <= through
            || tick == newest
            || (tick < newest
                && newest - 1 - tick < 32
                && self.recent & (1 << (newest - 1 - tick)) != 0)
    }
}

/// `count` ticks in a row with the same input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRun<I> {
    /// Ticks (at least 1).
    pub count: u8,
    /// The input of each.
    pub input: I,
}

/// A player's inputs not yet acknowledged, sent with every batch until
/// they are: a lost batch costs a tick, the next one repeats it. Run-length
/// coded, so held buttons cost one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "I: Serialize", deserialize = "I: DeserializeOwned"))]
pub struct InputBatch<I> {
    /// The slot the client plays (checked against its connection).
    pub slot: u8,
    /// Tick of the first run's first input (low 16 bits).
    #[serde(with = "crate::wire::fixed_u16")]
    pub first_tick: u16,
    /// Consecutive inputs from `first_tick`, as runs (at most
    /// [`MAX_BATCH_TICKS`] ticks in all), each input in its canonical
    /// encoding.
    #[serde(with = "crate::wire::canonical")]
    pub runs: Vec<InputRun<I>>,
    /// Frames received.
    pub ack: FrameAck,
}

impl<I: Input> InputBatch<I> {
    /// Ticks the batch covers.
    pub fn ticks(&self) -> u64 {
        self.runs.iter().map(|r| u64::from(r.count)).sum()
    }

    /// `(tick, input)` for every tick covered, in order.
    pub fn inputs(&self, first: u64) -> impl Iterator<Item = (u64, I)> + '_ {
        self.runs
            .iter()
            .flat_map(|r| std::iter::repeat_n(r.input, usize::from(r.count)))
            .enumerate()
            .map(move |(i, input)| (first + i as u64, input))
    }
}

/// Client → server, unreliable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "I: Serialize", deserialize = "I: DeserializeOwned"))]
pub enum ClientDatagram<I> {
    /// Inputs plus frame acks.
    Inputs(InputBatch<I>),
    /// Frame acks only (spectators, or a player before it has a slot).
    Ack(FrameAck),
    /// RTT probe, answered with a pong echoing `time`; it carries the
    /// client's rollback counters so far (cumulative, so a lost one costs
    /// nothing), for the server's metrics.
    Ping {
        /// Client's clock (µs), echoed back.
        time: u64,
        /// Rollbacks since the session started.
        rollbacks: u64,
        /// Deepest rollback (ticks).
        max_rollback: u32,
    },
}

/// The changed inputs of a tick: `mask` bit `i` set means slot `i` changed,
/// and `inputs` lists the new inputs in slot order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "I: Serialize", deserialize = "I: DeserializeOwned"))]
pub struct InputChanges<I> {
    /// Changed slots.
    pub mask: u32,
    /// Their inputs, lowest slot first, each in its canonical encoding.
    #[serde(with = "crate::wire::canonical")]
    pub inputs: Vec<I>,
}

/// One tick of a [`FrameBundle`]: its authoritative inputs and hash.
///
/// On the wire one tag byte says which of `changes` and `events` follow
/// (an idle tick right after the entry before is that byte and 3 hash
/// bytes; one further back also has its position).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    bound(
        serialize = "I: Serialize + Clone",
        deserialize = "I: DeserializeOwned"
    ),
    into = "crate::wire::TickWire<I>",
    from = "crate::wire::TickWire<I>"
)]
pub struct TickData<I> {
    /// Ticks skipped since the entry before: this entry's tick is that
    /// one's minus `1 + back` (the first entry's, the bundle's
    /// [`FrameBundle::tick`] minus `back`). 0 for consecutive ticks.
    pub back: u32,
    /// The game state hash at the tick, cut to [`wire_hash`] (enough to
    /// notice a desync: a diverged state shows in every tick after).
    pub hash: u32,
    /// Inputs that differ from the previous tick's.
    pub changes: Option<InputChanges<I>>,
    /// Join / leave events of the tick.
    pub events: Option<Vec<SlotEvent>>,
}

/// The ticks a client is sent at once: the new ones since the last bundle,
/// and, on a lossy link, those not yet acknowledged again (once), and
/// those found lost. Newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "I: Serialize + Clone",
    deserialize = "I: DeserializeOwned"
))]
pub struct FrameBundle<I> {
    /// The room's tick when sent (low 16 bits); entries count back from it.
    #[serde(with = "crate::wire::fixed_u16")]
    pub tick: u16,
    /// Newest input tick the server holds from this client, relative to
    /// the room's tick.
    pub input_ack: i32,
    /// How early this client's latest inputs arrived before they were
    /// needed, in milliseconds (negative: late); [`NO_INPUT_YET`] before
    /// the first.
    pub input_lead: i16,
    /// The ticks, newest first (at most [`MAX_BUNDLE_TICKS`]).
    pub frames: Vec<TickData<I>>,
}

impl<I> FrameBundle<I> {
    /// Every entry with its tick, newest first, given the room's tick
    /// widened to a full tick ([`crate::widen_tick16`]); stops at an entry
    /// that would count back past tick 0.
    pub fn ticks(&self, room_tick: u64) -> impl Iterator<Item = (u64, &TickData<I>)> + '_ {
        let mut next = Some(room_tick + 1);
        self.frames.iter().map_while(move |f| {
            let t = next?.checked_sub(1 + u64::from(f.back))?;
            next = Some(t);
            Some((t, f))
        })
    }

    /// Ticks from the newest entry back to the oldest.
    pub fn span(&self) -> u64 {
        self.frames.iter().map(|f| 1 + u64::from(f.back)).sum()
    }
}

/// Server → client, unreliable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "I: Serialize + Clone",
    deserialize = "I: DeserializeOwned"
))]
pub enum ServerDatagram<I> {
    /// Tick frames.
    Frames(FrameBundle<I>),
    /// Answer to a ping.
    Pong {
        /// The ping's `time`.
        time: u64,
    },
}

/// Accepted into a room.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// The server's protocol version.
    pub version: u32,
    /// The slot assigned, `None` for spectators.
    pub slot: Option<u8>,
    /// Seats in the room.
    pub slots: u8,
    /// Server tick when the welcome was sent.
    pub tick: u64,
    /// Ticks per second.
    pub tick_rate: u32,
    /// Present it in a later hello to reclaim this slot (all zeros for
    /// spectators).
    pub secret: ReconnectSecret,
}

/// One piece of a game snapshot in its packed form
/// ([`GameSnapshot::to_packed`]: columnar, delta-coded and deflated, a
/// fifth to a hundredth of the canonical size).
///
/// [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotChunk {
    /// Tick of the snapshot.
    pub tick: u64,
    /// Game state hash at that tick (checked after decoding).
    pub state_hash: u64,
    /// Size of the whole snapshot.
    pub total_len: u32,
    /// XXH3-64 of the whole snapshot's bytes.
    pub bytes_hash: u64,
    /// Where this chunk starts.
    pub offset: u32,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Why a connection is closed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KickReason {
    /// Protocol versions differ.
    VersionMismatch {
        /// Server's version.
        server: u32,
        /// Client's version.
        client: u32,
    },
    /// Rules or scene differ (a different build or scene file).
    RulesMismatch {
        /// Server's fingerprint.
        server: u64,
        /// Client's fingerprint.
        client: u64,
    },
    /// No free slot.
    RoomFull,
    /// The server has too many rooms.
    TooManyRooms,
    /// No hello in time.
    HandshakeTimeout,
    /// A message broke the protocol.
    BadMessage(String),
    /// Too many messages.
    Flood,
    /// The same slot was reclaimed by a new connection.
    Replaced,
    /// The room stopped.
    RoomClosed(String),
    /// The server is shutting down.
    ServerShutdown,
    /// The client left.
    Left,
    /// The server's rooms are running late: no new joins for now.
    Overloaded,
    /// The connect token was refused (or missing); the reason says why.
    Token(TokenError),
    /// The seat the token names is held by another player.
    SeatTaken(u8),
    /// A reconnect to a seat that the token does not grant (another
    /// seat, or a seat of another user).
    SeatNotGranted(u8),
    /// This source address (or token user) created its share of rooms
    /// for now.
    TooManyRoomsCreated,
    /// A reliable message was not finished within the deadline (seconds).
    MessageTimeout(u32),
    /// A desync report larger than the room's state could be.
    ReportTooLarge {
        /// The report's state (bytes).
        len: u32,
        /// The room's bound (bytes).
        limit: u32,
    },
    /// Desync reports beyond the allowance.
    TooManyReports,
}

impl fmt::Display for KickReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KickReason::VersionMismatch { server, client } => write!(
                f,
                "protocol version mismatch: server speaks {server}, client speaks {client}"
            ),
            KickReason::RulesMismatch { server, client } => write!(
                f,
                "rules/scene mismatch: server {server:016x}, client {client:016x} (different build or scene)"
            ),
            KickReason::RoomFull => f.write_str("room is full"),
            KickReason::TooManyRooms => f.write_str("server has too many rooms"),
            KickReason::HandshakeTimeout => f.write_str("no hello before the handshake timeout"),
            KickReason::BadMessage(m) => write!(f, "bad message: {m}"),
            KickReason::Flood => f.write_str("too many messages"),
            KickReason::Replaced => f.write_str("slot reclaimed by a newer connection"),
            KickReason::RoomClosed(m) => write!(f, "room closed: {m}"),
            KickReason::ServerShutdown => f.write_str("server shutting down"),
            KickReason::Left => f.write_str("left"),
            KickReason::Overloaded => f.write_str("server is overloaded, try again later"),
            KickReason::Token(e) => write!(f, "{e}"),
            KickReason::SeatTaken(s) => write!(f, "seat {s} is taken"),
            KickReason::SeatNotGranted(s) => write!(f, "the token does not grant seat {s}"),
            KickReason::TooManyRoomsCreated => {
                f.write_str("too many rooms created from here, try again later")
            }
            KickReason::MessageTimeout(s) => {
                write!(f, "a message was not finished within {s} s")
            }
            KickReason::ReportTooLarge { len, limit } => write!(
                f,
                "desync report of {len} bytes is larger than the room's bound of {limit}"
            ),
            KickReason::TooManyReports => f.write_str("too many desync reports"),
        }
    }
}

impl KickReason {
    /// A stable label for metrics (`refused{reason="token_expired"}`,
    /// kicks by reason).
    pub fn label(&self) -> &'static str {
        match self {
            KickReason::VersionMismatch { .. } => "version_mismatch",
            KickReason::RulesMismatch { .. } => "rules_mismatch",
            KickReason::RoomFull => "room_full",
            KickReason::TooManyRooms => "too_many_rooms",
            KickReason::HandshakeTimeout => "hello_timeout",
            KickReason::BadMessage(_) => "bad_message",
            KickReason::Flood => "flood",
            KickReason::Replaced => "replaced",
            KickReason::RoomClosed(_) => "room_closed",
            KickReason::ServerShutdown => "shutdown",
            KickReason::Left => "left",
            KickReason::Overloaded => "overloaded",
            KickReason::Token(e) => e.label(),
            KickReason::SeatTaken(_) => "seat_taken",
            KickReason::SeatNotGranted(_) => "seat_not_granted",
            KickReason::TooManyRoomsCreated => "room_creation_limit",
            KickReason::MessageTimeout(_) => "message_timeout",
            KickReason::ReportTooLarge { .. } => "report_too_large",
            KickReason::TooManyReports => "too_many_reports",
        }
    }
}

/// Server → client, reliable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerReliable {
    /// Accepted; a snapshot follows.
    Welcome(Welcome),
    /// A piece of a game snapshot (join or resync).
    Snapshot(SnapshotChunk),
    /// Closed, with the reason.
    Kick(KickReason),
}

/// The encoding of `msg`, in a vector of exactly its size.
///
/// It is written into a buffer kept per thread and copied out: one
/// allocation per message. (`encode_to_vec` grows its vector from empty,
/// five to nine allocations for a frame bundle; a room sends one to every
/// client every tick.) A nested call (none today) would find the buffer
/// taken and use a vector of its own.
fn encode<T: Serialize>(msg: &T, config: impl Config) -> Vec<u8> {
    ENCODE_BUF.with(|buf| match buf.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            bincode::serde::encode_into_std_write(msg, &mut *buf, config).expect("messages encode");
            let out = buf.to_vec();
            if buf.capacity() > ENCODE_BUF_KEEP {
                // A snapshot chunk's worth is not kept between messages.
                *buf = Vec::new();
            }
            out
        }
        Err(_) => bincode::serde::encode_to_vec(msg, config).expect("messages encode"),
    })
}

/// The most [`ENCODE_BUF`] keeps between messages (bytes).
const ENCODE_BUF_KEEP: usize = 16 << 10;

std::thread_local! {
    /// Scratch for [`encode`]; holds nothing between calls.
    static ENCODE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn decode<T: DeserializeOwned, const LIMIT: usize, IE>(
    bytes: &[u8],
    config: Configuration<LittleEndian, IE, NoLimit>,
) -> Result<T, CodecError>
where
    Configuration<LittleEndian, IE, Limit<LIMIT>>: Config,
{
    if bytes.len() > LIMIT {
        return Err(CodecError::TooLarge {
            len: bytes.len(),
            limit: LIMIT,
        });
    }
    let (msg, used) = bincode::serde::decode_from_slice(bytes, config.with_limit::<LIMIT>())?;
    if used != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - used));
    }
    Ok(msg)
}

/// Bytes a datagram message (or a part of one) takes encoded.
pub fn datagram_len<T: Serialize>(msg: &T) -> usize {
    let mut size = bincode::enc::write::SizeWriter::default();
    match bincode::serde::encode_into_writer(msg, &mut size, DATAGRAM) {
        Ok(()) => size.bytes_written,
        Err(_) => usize::MAX,
    }
}

fn check_name(s: &str, what: &'static str) -> Result<(), CodecError> {
    if s.len() > MAX_NAME || s.chars().any(char::is_control) {
        return Err(CodecError::Invalid(what));
    }
    Ok(())
}

/// Inputs over the game's stated size are refused: they would break the
/// datagram bound ([`MAX_INPUT_BYTES`]).
fn check_inputs<I: Input>(inputs: &[I]) -> Result<(), CodecError> {
    if inputs.iter().any(|i| !i.fits()) {
        return Err(CodecError::Invalid(
            "an input is larger than the game's Input::MAX_ENCODED",
        ));
    }
    Ok(())
}

/// Rules every decoded message must satisfy beyond its shape.
trait Validate {
    fn validate(&self) -> Result<(), CodecError>;
}

impl Validate for ClientReliable {
    fn validate(&self) -> Result<(), CodecError> {
        if let ClientReliable::Hello(h) = self {
            check_name(&h.room, "room name too long or has control characters")?;
            check_name(&h.name, "player name too long or has control characters")?;
            if h.room.is_empty() {
                return Err(CodecError::Invalid("empty room name"));
            }
            if h.token.as_ref().is_some_and(|t| t.len() > MAX_TOKEN_LEN) {
                return Err(CodecError::Invalid("connect token too long"));
            }
        }
        Ok(())
    }
}

impl<I: Input> Validate for ClientDatagram<I> {
    fn validate(&self) -> Result<(), CodecError> {
        if let ClientDatagram::Inputs(b) = self {
            if b.runs.iter().any(|r| r.count == 0) {
                return Err(CodecError::Invalid("an empty run of inputs"));
            }
            if b.ticks() > MAX_BATCH_TICKS {
                return Err(CodecError::Invalid("too many inputs in a batch"));
            }
            if b.slot >= MAX_SLOTS {
                return Err(CodecError::Invalid("slot out of range"));
            }
            if b.runs.iter().any(|r| !r.input.fits()) {
                return Err(CodecError::Invalid(
                    "an input is larger than the game's Input::MAX_ENCODED",
                ));
            }
        }
        Ok(())
    }
}

impl<I: Input> Validate for ServerDatagram<I> {
    fn validate(&self) -> Result<(), CodecError> {
        let ServerDatagram::Frames(b) = self else {
            return Ok(());
        };
        if b.frames.len() > MAX_BUNDLE_TICKS {
            return Err(CodecError::Invalid("too many ticks in a bundle"));
        }
        if b.span() > MAX_BUNDLE_SPAN {
            return Err(CodecError::Invalid("bundle ticks span too far back"));
        }
        for f in &b.frames {
            if let Some(c) = &f.changes {
                if c.inputs.len() != c.mask.count_ones() as usize {
                    return Err(CodecError::Invalid("input mask and input count differ"));
                }
                check_inputs(&c.inputs)?;
            }
            if let Some(e) = &f.events {
                if e.len() > MAX_FRAME_EVENTS {
                    return Err(CodecError::Invalid("too many events in a frame"));
                }
                if e.iter().any(|e| e.slot() >= MAX_SLOTS) {
                    return Err(CodecError::Invalid("event slot out of range"));
                }
            }
        }
        Ok(())
    }
}

impl Validate for ServerReliable {
    fn validate(&self) -> Result<(), CodecError> {
        match self {
            ServerReliable::Welcome(w) => {
                if w.slots > MAX_SLOTS || w.slot.is_some_and(|s| s >= w.slots) {
                    return Err(CodecError::Invalid("welcome slot out of range"));
                }
                if w.tick_rate == 0 || w.tick_rate > 1000 {
                    return Err(CodecError::Invalid("tick rate out of range"));
                }
            }
            ServerReliable::Snapshot(c) => {
                let end = c.offset as usize + c.data.len();
                if c.total_len as usize > MAX_SNAPSHOT_TOTAL || end > c.total_len as usize {
                    return Err(CodecError::Invalid("snapshot chunk out of range"));
                }
            }
            ServerReliable::Kick(_) => {}
        }
        Ok(())
    }
}

macro_rules! codec {
    ($ty:ident $(<$input:ident>)?, $limit:expr, $config:expr, $enc:ident, $dec:ident) => {
        /// Encodes the message.
        pub fn $enc$(<$input: Input>)?(msg: &$ty$(<$input>)?) -> Vec<u8> {
            encode(msg, $config)
        }

        /// Decodes untrusted bytes, with the channel's size limit.
        ///
        /// # Errors
        /// Oversized, malformed, truncated or invalid input.
        pub fn $dec$(<$input: Input>)?(bytes: &[u8]) -> Result<$ty$(<$input>)?, CodecError> {
            let msg: $ty$(<$input>)? = decode::<$ty$(<$input>)?, { $limit }, _>(bytes, $config)?;
            msg.validate()?;
            Ok(msg)
        }
    };
}

codec!(
    ClientReliable,
    MAX_RELIABLE,
    CONFIG,
    encode_client_reliable,
    decode_client_reliable
);
codec!(
    ClientDatagram<I>,
    MAX_DATAGRAM,
    DATAGRAM,
    encode_client_datagram,
    decode_client_datagram
);
codec!(
    ServerReliable,
    MAX_RELIABLE,
    CONFIG,
    encode_server_reliable,
    decode_server_reliable
);
codec!(
    ServerDatagram<I>,
    MAX_DATAGRAM,
    DATAGRAM,
    encode_server_datagram,
    decode_server_datagram
);

/// Whether a client datagram is a [`ClientDatagram::Ping`], from its first
/// byte alone (the enum's variant index, a varint: one byte below 251),
/// without decoding it: a shell may route pings apart (they want an answer
/// at once) and leave the rest for the room's next tick. Says nothing
/// about validity.
pub fn is_ping(bytes: &[u8]) -> bool {
    /// `ClientDatagram::Ping`'s variant index.
    const PING: u8 = 2;
    bytes.first() == Some(&PING)
}

/// Splits a reliable byte stream into messages: each is a `u32` LE length
/// followed by that many bytes.
///
/// Untrusted lengths: a length above the framer's limit ([`MAX_RELIABLE`]
/// unless [`StreamFramer::set_limit`] says less) is an error before
/// anything is buffered for it, and a message's bytes are held in one
/// allocation of its declared length, made when its length prefix is in
/// (no doubling growth: an 8 MiB message holds 8 MiB, handed over without
/// a copy when it fills the buffer alone).
#[derive(Debug)]
pub struct StreamFramer {
    /// Received bytes; those before `start` were returned already.
    buf: Vec<u8>,
    start: usize,
    limit: usize,
}

impl Default for StreamFramer {
    fn default() -> StreamFramer {
        StreamFramer::with_limit(MAX_RELIABLE)
    }
}

/// Capacity a framer keeps between messages; a larger buffer is released
/// once the message that needed it is out.
const FRAMER_KEEP: usize = 64 << 10;

impl StreamFramer {
    /// A framer that refuses messages over `limit` bytes (at most
    /// [`MAX_RELIABLE`]).
    pub fn with_limit(limit: usize) -> StreamFramer {
        StreamFramer {
            buf: Vec::new(),
            start: 0,
            limit: limit.min(MAX_RELIABLE),
        }
    }

    /// Frames a message for the stream.
    pub fn frame(msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(msg.len() + 4);
        // Our own messages are below MAX_RELIABLE < 4 GiB.
        out.extend_from_slice(&(msg.len() as u32).to_le_bytes());
        out.extend_from_slice(msg);
        out
    }

    /// The largest message accepted.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Changes the largest message accepted (at most [`MAX_RELIABLE`]),
    /// from the message whose length is checked next.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(MAX_RELIABLE);
    }

    /// The bytes received and not yet returned as messages.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The declared length of the message being received: `Some` once its
    /// length prefix is complete and until its last byte arrives.
    pub fn unfinished(&self) -> Option<usize> {
        let len = self.declared()?;
        (self.buffered() < 4 + len).then_some(len)
    }

    fn declared(&self) -> Option<usize> {
        let head = self.buf[self.start..].first_chunk::<4>()?;
        Some(u32::from_le_bytes(*head) as usize)
    }

    /// Adds received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let need = self.buf.len() + bytes.len();
        if need > self.buf.capacity() {
            match self.declared() {
                // The message's whole length at once (it was checked
                // against the limit by the caller's `next_message`, or
                // will be: a length over it reserves nothing).
                Some(len) if len <= self.limit => {
                    self.buf.reserve_exact(need.max(4 + len) - self.buf.len());
                }
                _ => self.buf.reserve(bytes.len()),
            }
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message, if any.
    ///
    /// # Errors
    /// A declared length above the limit.
    pub fn next_message(&mut self) -> Result<Option<Vec<u8>>, CodecError> {
        let Some(len) = self.declared() else {
            return Ok(None);
        };
        if len > self.limit {
            return Err(CodecError::TooLarge {
                len,
                limit: self.limit,
            });
        }
        if self.buffered() < 4 + len {
            return Ok(None);
        }
        let msg = if self.start == 0 && self.buf.len() == 4 + len {
            // The buffer holds this message alone: hand it over.
            let mut msg = std::mem::take(&mut self.buf);
            msg.drain(..4);
            msg
        } else {
            let at = self.start + 4;
            self.start += 4 + len;
            self.buf[at..at + len].to_vec()
        };
        if self.start == self.buf.len() {
            self.start = 0;
            self.buf.clear();
            if self.buf.capacity() > FRAMER_KEEP {
                self.buf = Vec::new();
            }
        }
        Ok(Some(msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_message_is_held_in_one_allocation_of_its_length() {
        let len = 8 << 20;
        let mut f = StreamFramer::default();
        f.push(&(len as u32).to_le_bytes());
        let chunk = vec![7u8; 64 << 10];
        for _ in 0..len / chunk.len() - 1 {
            f.push(&chunk);
            assert_eq!(f.buf.capacity(), 4 + len, "grown past the declared length");
        }
        assert_eq!(f.unfinished(), Some(len));
        f.push(&chunk);
        assert_eq!(f.unfinished(), None);
        let m = f.next_message().unwrap().unwrap();
        assert_eq!(m.len(), len);
        assert!(m.capacity() <= 4 + len);
        assert_eq!((f.buffered(), f.buf.capacity()), (0, 0), "nothing kept");
    }

    #[test]
    fn messages_split_and_joined_anyhow_come_out_whole() {
        let msgs: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; usize::from(i) * 97]).collect();
        let stream: Vec<u8> = msgs.iter().flat_map(|m| StreamFramer::frame(m)).collect();
        for step in [1, 3, 4, 5, 100, 4096, stream.len()] {
            let mut f = StreamFramer::default();
            let mut out = Vec::new();
            for piece in stream.chunks(step) {
                f.push(piece);
                while let Some(m) = f.next_message().unwrap() {
                    out.push(m);
                }
            }
            assert_eq!(out, msgs, "pieces of {step}");
            assert_eq!(f.buffered(), 0);
        }
    }

    #[test]
    fn a_length_over_the_limit_is_refused_before_its_bytes() {
        let mut f = StreamFramer::with_limit(100);
        f.push(&101u32.to_le_bytes());
        assert!(matches!(
            f.next_message(),
            Err(CodecError::TooLarge {
                len: 101,
                limit: 100
            })
        ));
        f.push(&[0; 50]);
        assert!(
            f.buf.capacity() < 101,
            "bytes reserved for a refused length"
        );
        let mut f = StreamFramer::with_limit(100);
        f.push(&StreamFramer::frame(&[1; 100]));
        assert_eq!(f.next_message().unwrap().map(|m| m.len()), Some(100));
        f.set_limit(10);
        f.push(&StreamFramer::frame(&[1; 11]));
        assert!(f.next_message().is_err());
    }

    use bitroom_sim::game::sandbox::PlayerInput;

    #[test]
    fn is_ping_tells_pings_from_every_other_datagram() {
        let ack = FrameAck {
            through: 7,
            ahead: 1,
            recent: 3,
        };
        let ping = encode_client_datagram::<PlayerInput>(&ClientDatagram::Ping {
            time: 5,
            rollbacks: 2,
            max_rollback: 2,
        });
        assert!(is_ping(&ping));
        for other in [
            ClientDatagram::<PlayerInput>::Ack(ack),
            ClientDatagram::Inputs(InputBatch {
                slot: 2,
                first_tick: 2,
                runs: vec![InputRun {
                    count: 2,
                    input: PlayerInput::default(),
                }],
                ack,
            }),
        ] {
            assert!(!is_ping(&encode_client_datagram(&other)), "{other:?}");
        }
        assert!(!is_ping(&[]));
    }
}

//! Wire messages and their codec.
//!
//! Every message is serde + bincode 2 in the fixed-int little-endian
//! configuration, decoded with a size limit and refused when bytes are left
//! over. Two channels:
//!
//! | channel | client → server | server → client |
//! |---|---|---|
//! | unreliable datagrams (≤ [`MAX_DATAGRAM`] bytes) | [`ClientDatagram`]: input batches (the last unacked inputs, redundantly), frame acks, pings, rollback reports | [`ServerDatagram`]: tick frames, pongs |
//! | one reliable ordered stream, each message framed by a `u32` LE length (≤ [`MAX_RELIABLE`]) | [`ClientReliable`]: hello, desync report, leave | [`ServerReliable`]: welcome, snapshot chunks, kick |
//!
//! Per-tick traffic is input-driven: a tick frame carries the inputs that
//! *changed* since the previous tick (a slot mask plus those inputs), the
//! join / leave events, the state hash, an input ack and timing feedback,
//! so downstream bandwidth depends on players, not on bodies.
//!
//! The per-tick messages are generic over the game's input type
//! ([`Input`], the rules' [`Rules::Input`]); the reliable ones are not.
//! An input encodes to at most [`Input::MAX_ENCODED`] bytes, which a
//! hosted game may state up to [`MAX_INPUT_BYTES`]: that keeps every
//! datagram within [`MAX_DATAGRAM`] (the `largest_datagrams_fit` test
//! encodes the largest of each). Decoding refuses inputs over the game's
//! bound.
//!
//! [`Rules::Input`]: bitroom_sim::game::Rules::Input

use bincode::config::{Configuration, Fixint, LittleEndian, NoLimit};
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
/// encodings).
///
/// [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed
/// [`Rules::Input`]: bitroom_sim::game::Rules::Input
pub const PROTOCOL_VERSION: u32 = 10;
/// Largest datagram we send or accept (quinn's initial max is 1162).
pub const MAX_DATAGRAM: usize = 1150;
/// Largest reliable message (a snapshot chunk, a desync report).
pub const MAX_RELIABLE: usize = 8 << 20;
/// Snapshot bytes per chunk.
pub const SNAPSHOT_CHUNK: usize = 256 << 10;
/// Largest snapshot a client reassembles.
pub const MAX_SNAPSHOT_TOTAL: usize = 64 << 20;
/// Most inputs in one batch.
pub const MAX_BATCH_INPUTS: usize = 32;
/// Most join / leave events in one tick frame.
pub const MAX_FRAME_EVENTS: usize = 64;
/// Largest [`Input::MAX_ENCODED`] a hosted game may state. With it, the
/// largest tick frame ([`MAX_SLOTS`] changed inputs and
/// [`MAX_FRAME_EVENTS`] events: 364 + 32 × 24 = 1132 bytes) and the largest
/// input batch ([`MAX_BATCH_INPUTS`] inputs: 793 bytes) fit in
/// [`MAX_DATAGRAM`]. A room or session of a game with larger inputs does
/// not compile.
pub const MAX_INPUT_BYTES: usize = 24;
/// Longest room name and player name (bytes).
pub const MAX_NAME: usize = 64;

const CONFIG: Configuration<LittleEndian, Fixint, NoLimit> = bincode::config::standard()
    .with_fixed_int_encoding()
    .with_little_endian();

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
    /// Token from an earlier welcome: reclaims that slot.
    pub reconnect: Option<u64>,
}

/// A desync seen by a client: its hash differs from the server's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesyncReport {
    /// The first tick whose hash differed.
    pub tick: u64,
    /// The client's hash.
    pub client_hash: u64,
    /// The server's hash.
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

/// Which frames a client holds: every tick up to `through`, plus tick
/// `through + 2 + i` for every set bit `i` of `later`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameAck {
    /// Newest tick received with all before it.
    pub through: u32,
    /// Receipt of the 32 ticks after `through + 1`.
    pub later: u32,
}

/// A player's recent inputs, sent every tick, redundantly until acked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputBatch<I> {
    /// The slot the client plays (checked against its connection).
    pub slot: u8,
    /// Tick of `inputs[0]`.
    pub first_tick: u32,
    /// Consecutive inputs from `first_tick` (at most [`MAX_BATCH_INPUTS`]).
    pub inputs: Vec<I>,
    /// Frames received.
    pub ack: FrameAck,
}

/// Client → server, unreliable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientDatagram<I> {
    /// Inputs plus frame acks.
    Inputs(InputBatch<I>),
    /// Frame acks only (spectators, or a player before it has a slot).
    Ack(FrameAck),
    /// RTT probe; answered with a pong echoing `time`.
    Ping {
        /// Client's clock (µs), echoed back.
        time: u64,
    },
    /// The client's rollback counters so far (cumulative, so a lost report
    /// costs nothing), for the server's metrics.
    Report {
        /// Rollbacks since the session started.
        rollbacks: u64,
        /// Deepest rollback (ticks).
        max_rollback: u32,
    },
}

/// The changed inputs of a tick: `mask` bit `i` set means slot `i` changed,
/// and `inputs` lists the new inputs in slot order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputChanges<I> {
    /// Changed slots.
    pub mask: u32,
    /// Their inputs, lowest slot first.
    pub inputs: Vec<I>,
}

/// The authoritative inputs and hash of one tick, per client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickFrame<I> {
    /// The tick (the state after stepping with these inputs).
    pub tick: u32,
    /// Game state hash at `tick`.
    pub hash: u64,
    /// Newest input tick the server holds from this client.
    pub input_ack: u32,
    /// How early this client's latest inputs arrived before they were
    /// needed, in units of 100 µs (negative: late).
    pub input_lead: i16,
    /// Inputs that differ from the previous tick's.
    pub changes: Option<InputChanges<I>>,
    /// Join / leave events of the tick.
    pub events: Option<Vec<SlotEvent>>,
}

/// Server → client, unreliable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerDatagram<I> {
    /// A tick frame (sent once, resent when not acked in time).
    Frame(TickFrame<I>),
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
    /// Present it in a later hello to reclaim this slot.
    pub token: u64,
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

fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(msg, CONFIG).expect("messages encode")
}

fn decode<T: DeserializeOwned, const LIMIT: usize>(bytes: &[u8]) -> Result<T, CodecError> {
    if bytes.len() > LIMIT {
        return Err(CodecError::TooLarge {
            len: bytes.len(),
            limit: LIMIT,
        });
    }
    let (msg, used) = bincode::serde::decode_from_slice(bytes, CONFIG.with_limit::<LIMIT>())?;
    if used != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - used));
    }
    Ok(msg)
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
        }
        Ok(())
    }
}

impl<I: Input> Validate for ClientDatagram<I> {
    fn validate(&self) -> Result<(), CodecError> {
        if let ClientDatagram::Inputs(b) = self {
            if b.inputs.len() > MAX_BATCH_INPUTS {
                return Err(CodecError::Invalid("too many inputs in a batch"));
            }
            if b.slot >= MAX_SLOTS {
                return Err(CodecError::Invalid("slot out of range"));
            }
            check_inputs(&b.inputs)?;
        }
        Ok(())
    }
}

impl<I: Input> Validate for ServerDatagram<I> {
    fn validate(&self) -> Result<(), CodecError> {
        if let ServerDatagram::Frame(f) = self {
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
    ($ty:ident $(<$input:ident>)?, $limit:expr, $enc:ident, $dec:ident) => {
        /// Encodes the message.
        pub fn $enc$(<$input: Input>)?(msg: &$ty$(<$input>)?) -> Vec<u8> {
            encode(msg)
        }

        /// Decodes untrusted bytes, with the channel's size limit.
        ///
        /// # Errors
        /// Oversized, malformed, truncated or invalid input.
        pub fn $dec$(<$input: Input>)?(bytes: &[u8]) -> Result<$ty$(<$input>)?, CodecError> {
            let msg: $ty$(<$input>)? = decode::<$ty$(<$input>)?, { $limit }>(bytes)?;
            msg.validate()?;
            Ok(msg)
        }
    };
}

codec!(
    ClientReliable,
    MAX_RELIABLE,
    encode_client_reliable,
    decode_client_reliable
);
codec!(
    ClientDatagram<I>,
    MAX_DATAGRAM,
    encode_client_datagram,
    decode_client_datagram
);
codec!(
    ServerReliable,
    MAX_RELIABLE,
    encode_server_reliable,
    decode_server_reliable
);
codec!(
    ServerDatagram<I>,
    MAX_DATAGRAM,
    encode_server_datagram,
    decode_server_datagram
);

/// Whether a client datagram is a [`ClientDatagram::Ping`], from its first
/// bytes alone (the enum's variant index, a `u32` LE), without decoding it:
/// a shell may route pings apart (they want an answer at once) and leave
/// the rest for the room's next tick. Says nothing about validity.
pub fn is_ping(bytes: &[u8]) -> bool {
    /// `ClientDatagram::Ping`'s variant index.
    const PING: u32 = 2;
    bytes.get(..4) == Some(&PING.to_le_bytes()[..])
}

/// Splits a reliable byte stream into messages: each is a `u32` LE length
/// followed by that many bytes. Lengths above [`MAX_RELIABLE`] are an error
/// before anything is buffered for them.
#[derive(Debug, Default)]
pub struct StreamFramer {
    buf: Vec<u8>,
}

impl StreamFramer {
    /// Frames a message for the stream.
    pub fn frame(msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(msg.len() + 4);
        // Our own messages are below MAX_RELIABLE < 4 GiB.
        out.extend_from_slice(&(msg.len() as u32).to_le_bytes());
        out.extend_from_slice(msg);
        out
    }

    /// Adds received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message, if any.
    ///
    /// # Errors
    /// A declared length above [`MAX_RELIABLE`].
    pub fn next_message(&mut self) -> Result<Option<Vec<u8>>, CodecError> {
        let Some(head) = self.buf.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_le_bytes(*head) as usize;
        if len > MAX_RELIABLE {
            return Err(CodecError::TooLarge {
                len,
                limit: MAX_RELIABLE,
            });
        }
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let msg = self.buf[4..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Ok(Some(msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_sim::game::sandbox::PlayerInput;

    #[test]
    fn is_ping_tells_pings_from_every_other_datagram() {
        let ack = FrameAck {
            through: 7,
            later: 0,
        };
        let ping = encode_client_datagram::<PlayerInput>(&ClientDatagram::Ping { time: 5 });
        assert!(is_ping(&ping));
        for other in [
            ClientDatagram::<PlayerInput>::Ack(ack),
            ClientDatagram::Report {
                rollbacks: 2,
                max_rollback: 2,
            },
            ClientDatagram::Inputs(InputBatch {
                slot: 0,
                first_tick: 2,
                ack,
                inputs: vec![PlayerInput::default()],
            }),
        ] {
            assert!(!is_ping(&encode_client_datagram(&other)), "{other:?}");
        }
        assert!(!is_ping(&ping[..3]));
        assert!(!is_ping(&[]));
    }
}

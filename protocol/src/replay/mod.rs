//! Replay files: what went into a room, tick by tick, so anyone can re-run
//! it and check every state hash.
//!
//! # Format (version [`FORMAT_VERSION`])
//!
//! A file is the 8-byte magic [`MAGIC`] (`BRREPLAY`), then records. Every
//! record is framed as
//!
//! ```text
//! [u32 LE payload length][u32 LE CRC-32 (IEEE) of the payload][payload]
//! ```
//!
//! and the payload is a [`Record`] in bincode 2's fixed-int little-endian
//! configuration (the same as the wire messages and the state encoding).
//! The first record is always [`Record::Header`]: format version, build,
//! rules, tick rate, fingerprint, room, scene, seats, keyframe interval and
//! the initial game snapshot ([`GameSnapshot::to_packed`] bytes) at
//! `start_tick`. Then, for every tick `start_tick + 1, start_tick + 2, …`, a
//! [`Record::Tick`] with the tick's [`InputSet`] (every seat's input, in the
//! game's own input type ([`Rules::Input`]), plus the
//! join / leave events) and the state hash after it; after the tick record of
//! every tick that is a multiple of the keyframe interval, a
//! [`Record::Keyframe`] with the game snapshot at that tick; and, when the
//! recording was closed cleanly, a final [`Record::End`].
//!
//! The header's payload starts with the variant index 0 and the format
//! version (both `u32` LE), and every future version keeps that prefix, so an
//! old reader names the version it cannot read instead of failing to decode.
//!
//! # Damage
//!
//! Records are appended and flushed often (the server: every 100 ms), so a
//! crash leaves a readable prefix. [`ReplayReader`] yields every intact
//! record and stops at the first one that is truncated, fails its CRC, is
//! over [`MAX_RECORD`] bytes, does not decode or breaks the ordering rules;
//! the reason and its byte offset are kept ([`ReplayReader::stop_reason`]).
//! Any byte string gives an error or a valid prefix: lengths are checked
//! before anything is allocated for them.
//!
//! A crash cuts the file short: nothing readable follows the last good
//! record (a *cut tail*, which tools report as a warning). Damage followed
//! by more data is not a crash: when a record does not read, the reader
//! scans the rest of the input for a later intact record, resynchronising
//! on the record framing (`scan.rs`), and if it finds one — or cannot rule
//! one out — the stop reason becomes [`ReplayError::Damaged`]; anything
//! after the end record is [`ReplayError::AfterEnd`]. Both answer
//! [`ReplayError::is_corrupt`], which tools treat as an error.
//!
//! # Layout
//!
//! - this file: the format, [`encode_record`] and [`ReplayReader`];
//! - `recorder.rs`: [`Recorder`], what a room calls at creation and per tick;
//! - `resim.rs`: re-simulation: [`verify`], [`verify_parallel`], [`ReplayIndex`],
//!   [`reconstruct`], [`diff_replays`], [`diff_against_resim`];
//! - `report.rs`: state diffs as tables and JSON;
//! - `scan.rs`: after a damaged record, looks for an intact one further on.
//!
//! [`GameSnapshot::to_bytes`]: bitroom_sim::game::GameSnapshot::to_bytes
//! [`Rules::Input`]: bitroom_sim::game::Rules::Input
//! [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed

mod recorder;
mod report;
mod resim;
mod scan;

pub use recorder::{RecordError, Recorder, RecorderStats, RecordingMeta, StateJob};
pub use report::{body_json, diff_json, diff_table};
pub use resim::{
    decode_initial, diff_against_resim, diff_replays, read_keyframe, reconstruct, verify,
    verify_parallel, Comparison, DiffReport, Divergence, KeyframeEntry, Progress, Reconstructed,
    ReplayIndex, ResimError, Side, StartAt, TickEntry, VerifyOptions, VerifyReport,
};

use crate::messages::MAX_FRAME_EVENTS;
use bincode::config::{Configuration, Fixint, LittleEndian, NoLimit};
use bitroom_sim::game::{Input, InputSet, MAX_SLOTS};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::marker::PhantomData;

/// The first 8 bytes of every replay file.
pub const MAGIC: &[u8; 8] = b"BRREPLAY";
/// The format this build writes. 2: keyframes and state hashes encode only
/// the used polygon vertices and manifold points. 3: manifold points without
/// their two (derived) anchors and the last step's largest normal impulse.
/// 4: the initial state and the keyframes are packed
/// ([`GameSnapshot::to_packed`]); everything else as in 3. 5: snapshots
/// and state hashes leave out the contact geometry, which a step now
/// computes at its end from the positions it leaves (a new simulation:
/// files of 4 and older replay to other hashes). 6: the same bytes as 5,
/// of a new simulation (the contact solver works on coloured bundles of
/// contacts), so files of 5 replay to other hashes. 7: the same bytes, of
/// a simulation that recycles the contacts of thick shapes. 8: tick records
/// hold the recorded game's own input type ([`Rules::Input`]) and the
/// header's `rules` names any game (7 knew only the sandbox); a sandbox
/// recording's bytes are those of 7. 9: the same bytes as 8, of a
/// simulation whose continuous collision lets rounded shapes graze what
/// they pass and whose contacts with a sleeping body wait for the step's
/// collide (protocol 15): the arena's capsules can move otherwise, so
/// files of 8 and 7 may replay to other hashes. 10: each contact of a
/// state carries one more flag (whether its manifold was taken at the
/// current poses instead of recycled, decided from the pair's relative
/// speed: protocol 16), so states of 9 do not decode. 11: the bytes of
/// 10, from the simulation of protocol 17, where short vectors have exact
/// lengths and unit directions: files of 10 replay to other hashes
/// wherever shapes meet at a vertex or a rounded end or joints move. 12:
/// the bytes of 11, from the simulation of protocol 18, whose substeps
/// solve the joints after the contacts: files of 11 replay to other
/// hashes wherever joints and contacts meet. 13: the bytes of 12, from the
/// simulation of protocol 19, whose bodies count toward sleep by the speed
/// of their farthest point and their motion over the step: files of 12
/// replay to other hashes wherever bodies slow to rest. 14: each body of
/// a state carries one more flag (`allow_fast_rotation`), and the
/// simulation of protocol 20 caps angular speed at a quarter turn per step
/// at any tick rate: states of 13 do not decode. 15: the bytes of 14, from
/// the simulation of protocol 21, which colours its contacts in windows of
/// 8 192: files of 14 replay to other hashes in worlds of more than 1 024
/// touching contacts.
///
/// [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed
/// [`Rules::Input`]: bitroom_sim::game::Rules::Input
pub const FORMAT_VERSION: u32 = 15;
/// The oldest format this build reads: 15, its own. Older files hold
/// states and hashes of an earlier simulation, which this build cannot
/// reproduce.
pub const OLDEST_FORMAT_VERSION: u32 = 15;
/// Largest record payload accepted (a keyframe of the largest snapshot,
/// 64 MiB of world plus 1 MiB of game state, fits).
pub const MAX_RECORD: usize = 72 << 20;
/// Bytes before each payload: length and CRC-32.
pub const FRAME_HEADER: usize = 8;
/// Default ticks between keyframes (10 s at 60 Hz).
pub const DEFAULT_KEYFRAME_INTERVAL: u32 = 600;
/// Longest text field in the header (bytes).
pub const MAX_HEADER_TEXT: usize = 1024;

/// "version N" or "versions N to M", from the oldest readable format.
fn readable_versions(supported: u32) -> String {
    if supported <= OLDEST_FORMAT_VERSION {
        format!("version {supported}")
    } else {
        format!("versions {OLDEST_FORMAT_VERSION} to {supported}")
    }
}

const CONFIG: Configuration<LittleEndian, Fixint, NoLimit> = bincode::config::standard()
    .with_fixed_int_encoding()
    .with_little_endian();

/// What a replay starts with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT_VERSION`] of the writer. Must stay the first field.
    pub format_version: u32,
    /// Version of the bitroom build that recorded.
    pub bitroom_version: String,
    /// Name of the game (tools pick the rules to re-simulate with by it;
    /// the built-in game is `sandbox`).
    pub rules: String,
    /// Ticks per second.
    pub tick_rate: u32,
    /// [`Rules::fingerprint`](bitroom_sim::game::Rules::fingerprint) of the
    /// recorded rules and scene.
    pub rules_fingerprint: u64,
    /// Room name.
    pub room: String,
    /// Scene name or file the room was built from.
    pub scene: String,
    /// Player seats.
    pub slots: u8,
    /// Ticks between keyframes.
    pub keyframe_interval: u32,
    /// Tick of the initial snapshot; the first tick record is the next one.
    pub start_tick: u64,
    /// Game snapshot at `start_tick` ([`GameSnapshot::to_packed`] bytes;
    /// [`GameSnapshot::decode`] also reads the canonical form).
    ///
    /// [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed
    /// [`GameSnapshot::decode`]: bitroom_sim::game::GameSnapshot::decode
    // `serde_bytes`: the same bytes as a sequence of `u8`, decoded at once.
    #[serde(with = "serde_bytes")]
    pub initial: Vec<u8>,
}

/// One record of a replay file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record<I> {
    /// The header (first record, only there).
    Header(Header),
    /// One tick: what went in and the state hash after it.
    Tick {
        /// The tick (the state after stepping with `inputs`).
        tick: u64,
        /// Every seat's input and the join / leave events.
        inputs: InputSet<I>,
        /// Game state hash at `tick`.
        hash: u64,
    },
    /// The full game state at a tick (after that tick's record).
    Keyframe {
        /// The tick.
        tick: u64,
        /// [`GameSnapshot::to_packed`] bytes.
        ///
        /// [`GameSnapshot::to_packed`]: bitroom_sim::game::GameSnapshot::to_packed
        #[serde(with = "serde_bytes")]
        snapshot: Vec<u8>,
    },
    /// The recording was closed cleanly after `tick`.
    End {
        /// The last tick recorded.
        tick: u64,
    },
}

/// [`Record`] by reference: encodes to the same bytes without copying.
#[derive(Serialize)]
pub(crate) enum RecordRef<'a, I> {
    Header(&'a Header),
    Tick {
        tick: u64,
        inputs: &'a InputSet<I>,
        hash: u64,
    },
    Keyframe {
        tick: u64,
        #[serde(with = "serde_bytes")]
        snapshot: &'a [u8],
    },
    End {
        tick: u64,
    },
}

/// The header record encodes alike for every input type: this one
/// stands for "none" where a type is needed.
pub(crate) type NoInput = ();

/// Why a replay (or the rest of it) cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file does not start with [`MAGIC`].
    #[error("not a bitroom replay (the file does not start with \"BRREPLAY\")")]
    BadMagic,
    /// The header declares another format version.
    #[error(
        "unsupported replay format version {found} (this build reads {})",
        readable_versions(*supported)
    )]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// [`FORMAT_VERSION`].
        supported: u32,
    },
    /// The file ends inside a record.
    #[error("record at byte {offset} is truncated: {have} of {need} bytes present")]
    Truncated {
        /// Where the record starts.
        offset: u64,
        /// Bytes present from there.
        have: u64,
        /// Bytes the record needs (frame header included).
        need: u64,
    },
    /// A record declares a length over [`MAX_RECORD`].
    #[error("record at byte {offset} declares {len} bytes, over the limit of {limit}")]
    TooLarge {
        /// Where the record starts.
        offset: u64,
        /// Declared payload length.
        len: u64,
        /// [`MAX_RECORD`].
        limit: u64,
    },
    /// The payload's CRC-32 differs from the stored one.
    #[error("record at byte {offset} fails its crc32 check (stored {stored:08x}, computed {computed:08x})")]
    Crc {
        /// Where the record starts.
        offset: u64,
        /// The stored CRC.
        stored: u32,
        /// The payload's CRC.
        computed: u32,
    },
    /// The payload is not a record.
    #[error("record at byte {offset} does not decode: {source}")]
    Decode {
        /// Where the record starts.
        offset: u64,
        /// Why.
        source: bincode::error::DecodeError,
    },
    /// A well-formed record that breaks a rule (named).
    #[error("record at byte {offset} is invalid: {what}")]
    Invalid {
        /// Where the record starts.
        offset: u64,
        /// The rule.
        what: &'static str,
    },
    /// Reading failed.
    #[error("read error at byte {offset}: {source}")]
    Io {
        /// Where the read started.
        offset: u64,
        /// Why.
        source: io::Error,
    },
    /// A record that does not read, with more data after it: damage in the
    /// middle of the file (a bad disk or copy, or an edit), not the cut
    /// tail a crash leaves.
    #[error("{cause}, and {}: the file is damaged in the middle, not cut short", following(*next))]
    Damaged {
        /// What is wrong with the damaged record.
        cause: Box<ReplayError>,
        /// Where an intact record follows; `None` when the rest could not be
        /// checked within the scan's limits (a crafted file).
        next: Option<u64>,
    },
    /// Bytes after the end record (a recorder writes nothing after it).
    #[error("data after the end record, at byte {offset}")]
    AfterEnd {
        /// Where they start.
        offset: u64,
    },
}

fn following(next: Option<u64>) -> String {
    match next {
        Some(n) => format!("an intact record follows at byte {n}"),
        None => "more data follows that could not be checked".into(),
    }
}

impl ReplayError {
    /// The byte offset the error is about, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            ReplayError::BadMagic => Some(0),
            ReplayError::UnsupportedVersion { .. } => Some(MAGIC.len() as u64),
            ReplayError::Truncated { offset, .. }
            | ReplayError::TooLarge { offset, .. }
            | ReplayError::Crc { offset, .. }
            | ReplayError::Decode { offset, .. }
            | ReplayError::Invalid { offset, .. }
            | ReplayError::Io { offset, .. }
            | ReplayError::AfterEnd { offset } => Some(*offset),
            ReplayError::Damaged { cause, .. } => cause.offset(),
        }
    }

    /// Whether this is damage a crash cannot explain (damage followed by
    /// more data, or data after the end record): tools treat it as an
    /// error, while a cut tail is a warning.
    pub fn is_corrupt(&self) -> bool {
        matches!(
            self,
            ReplayError::Damaged { .. } | ReplayError::AfterEnd { .. }
        )
    }

    /// The error about the record itself (through [`ReplayError::Damaged`]).
    pub fn cause(&self) -> &ReplayError {
        match self {
            ReplayError::Damaged { cause, .. } => cause.cause(),
            e => e,
        }
    }
}

/// Appends one framed record to `out`.
pub fn encode_record<I: Input>(record: &Record<I>, out: &mut Vec<u8>) {
    let r = match record {
        Record::Header(h) => RecordRef::Header(h),
        Record::Tick { tick, inputs, hash } => RecordRef::Tick {
            tick: *tick,
            inputs,
            hash: *hash,
        },
        Record::Keyframe { tick, snapshot } => RecordRef::Keyframe {
            tick: *tick,
            snapshot,
        },
        Record::End { tick } => RecordRef::End { tick: *tick },
    };
    encode_ref(&r, out);
}

/// Appends one framed record: reserves the frame header, encodes in place,
/// then fills in the length and CRC.
pub(crate) fn encode_ref<I: Serialize>(record: &RecordRef<'_, I>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    bincode::serde::encode_into_std_write(record, out, CONFIG).expect("records encode");
    let payload = &out[start + FRAME_HEADER..];
    // Our records stay below MAX_RECORD < 4 GiB (snapshots are limited).
    let len = payload.len() as u32;
    let crc = crc32fast::hash(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// The magic and the header record: the first bytes of a replay file.
pub fn encode_header(header: &Header) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.initial.len() + 256);
    out.extend_from_slice(MAGIC);
    encode_ref(&RecordRef::<'_, NoInput>::Header(header), &mut out);
    out
}

/// Reads a replay: the header at [`ReplayReader::open`], then the records
/// as an iterator that ends at the end of the file or at the first damaged
/// record (see the module docs). `I` is the recorded game's input type:
/// the header reads without it, the tick records with it (check
/// [`Header::rules`] first when the game is not known in advance).
#[derive(Debug)]
pub struct ReplayReader<Rd, I> {
    inner: Rd,
    header: Header,
    /// Bytes consumed: the end of the last intact record.
    offset: u64,
    /// Start of the record returned last.
    record_offset: u64,
    /// Tick of the latest tick record.
    last_tick: u64,
    keyframe_at_last_tick: bool,
    ended: bool,
    done: bool,
    stop: Option<ReplayError>,
    /// The frame header read last (kept for the scan after damage).
    head: [u8; FRAME_HEADER],
    payload: Vec<u8>,
    input: PhantomData<fn() -> I>,
}

impl<Rd: Read, I: Input> ReplayReader<Rd, I> {
    /// Reads the magic and the header.
    ///
    /// # Errors
    /// Not a replay, an unsupported format version, or a header record that
    /// is damaged, does not decode or breaks a rule.
    pub fn open(mut inner: Rd) -> Result<ReplayReader<Rd, I>, ReplayError> {
        let mut magic = [0u8; 8];
        let n = read_full(&mut inner, &mut magic)
            .map_err(|source| ReplayError::Io { offset: 0, source })?;
        if n < magic.len() || &magic != MAGIC {
            return Err(ReplayError::BadMagic);
        }
        let at = MAGIC.len() as u64;
        let mut payload = Vec::new();
        let mut head = [0; FRAME_HEADER];
        if !read_frame(&mut inner, at, &mut head, &mut payload)? {
            return Err(ReplayError::Truncated {
                offset: at,
                have: 0,
                need: FRAME_HEADER as u64,
            });
        }
        let p = &payload;
        let variant = p.first_chunk::<4>().map(|b| u32::from_le_bytes(*b));
        if variant != Some(0) {
            return Err(ReplayError::Invalid {
                offset: at,
                what: "the first record is not a header",
            });
        }
        let version = p
            .get(4..8)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        match version {
            Some(OLDEST_FORMAT_VERSION..=FORMAT_VERSION) => {}
            Some(found) => {
                return Err(ReplayError::UnsupportedVersion {
                    found,
                    supported: FORMAT_VERSION,
                })
            }
            None => {
                return Err(ReplayError::Invalid {
                    offset: at,
                    what: "header too short",
                })
            }
        }
        let Record::Header(h) = decode_payload::<I>(&payload, at)? else {
            unreachable!("variant 0 is the header");
        };
        let bad = |what| Err(ReplayError::Invalid { offset: at, what });
        if h.slots == 0 || h.slots > MAX_SLOTS {
            return bad("seat count out of range");
        }
        if h.tick_rate == 0 || h.tick_rate > 10_000 {
            return bad("tick rate out of range");
        }
        if h.keyframe_interval == 0 {
            return bad("keyframe interval is zero");
        }
        if [&h.bitroom_version, &h.rules, &h.room, &h.scene]
            .iter()
            .any(|s| s.len() > MAX_HEADER_TEXT)
        {
            return bad("text field too long");
        }
        if h.initial.is_empty() {
            return bad("no initial state");
        }
        Ok(ReplayReader {
            inner,
            offset: at + FRAME_HEADER as u64 + payload.len() as u64,
            record_offset: at,
            last_tick: h.start_tick,
            // The header holds the start tick's state.
            keyframe_at_last_tick: true,
            ended: false,
            done: false,
            stop: None,
            head,
            payload,
            header: h,
            input: PhantomData,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Bytes read up to the end of the last intact record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Where the record returned last starts.
    pub fn record_offset(&self) -> u64 {
        self.record_offset
    }

    /// Tick of the latest tick record read (the start tick before any).
    pub fn last_tick(&self) -> u64 {
        self.last_tick
    }

    /// Why reading stopped before the end of the file (`None` while reading
    /// and after a clean end).
    pub fn stop_reason(&self) -> Option<&ReplayError> {
        self.stop.as_ref()
    }

    /// Takes the stop reason out.
    pub fn take_stop_reason(&mut self) -> Option<ReplayError> {
        self.stop.take()
    }

    /// Whether the recording's end record was read.
    pub fn ended_cleanly(&self) -> bool {
        self.ended
    }

    /// The next intact record, checked against the ordering rules.
    fn next_checked(&mut self) -> Result<Option<Record<I>>, ReplayError> {
        let at = self.offset;
        if !read_frame(&mut self.inner, at, &mut self.head, &mut self.payload)? {
            return Ok(None);
        }
        self.offset = at + (FRAME_HEADER + self.payload.len()) as u64;
        let rec = decode_payload(&self.payload, at)?;
        let bad = |what| Err(ReplayError::Invalid { offset: at, what });
        if self.ended {
            return bad("record after the end record");
        }
        match &rec {
            Record::Header(_) => return bad("a second header"),
            Record::Tick { tick, inputs, .. } => {
                if *tick != self.last_tick.wrapping_add(1) || *tick == 0 {
                    return bad("tick out of sequence");
                }
                if inputs.inputs.len() > usize::from(MAX_SLOTS) {
                    return bad("more inputs than seats");
                }
                if inputs.events.len() > MAX_FRAME_EVENTS {
                    return bad("too many join / leave events");
                }
                if inputs.inputs.iter().any(|i: &I| !i.fits()) {
                    return bad("an input is larger than the game's Input::MAX_ENCODED");
                }
                self.last_tick = *tick;
                self.keyframe_at_last_tick = false;
            }
            Record::Keyframe { tick, snapshot } => {
                if *tick != self.last_tick || self.keyframe_at_last_tick {
                    return bad("keyframe does not follow its tick");
                }
                if snapshot.is_empty() {
                    return bad("empty keyframe");
                }
                self.keyframe_at_last_tick = true;
            }
            Record::End { tick } => {
                if *tick != self.last_tick {
                    return bad("end record names another tick");
                }
                self.ended = true;
            }
        }
        self.record_offset = at;
        Ok(Some(rec))
    }

    /// Tells a cut tail from damage followed by more data (module docs):
    /// scans what was read of the failed record and the rest of the input.
    fn classify(&mut self, e: ReplayError) -> ReplayError {
        let Some(at) = e.offset() else { return e };
        if self.ended {
            return ReplayError::AfterEnd { offset: at };
        }
        // The failed record's bytes as read: part of its header, or the
        // header and (part of) its payload.
        let (head, payload): (&[u8], &[u8]) = match &e {
            ReplayError::Io { .. } => return e,
            ReplayError::Truncated { have, .. } if *have < FRAME_HEADER as u64 => {
                (&self.head[..*have as usize], &[])
            }
            ReplayError::TooLarge { .. } => (&self.head[..], &[]),
            _ => (&self.head[..], &self.payload[..]),
        };
        let rest = head.chain(payload).chain(&mut self.inner);
        match scan::find_record(rest, at, at + 1) {
            Ok(scan::Scan::Found(next)) => ReplayError::Damaged {
                cause: Box::new(e),
                next: Some(next),
            },
            Ok(scan::Scan::Unsure(_)) => ReplayError::Damaged {
                cause: Box::new(e),
                next: None,
            },
            // Nothing readable after it, or the rest cannot be read: the
            // damage stands as a cut tail.
            Ok(scan::Scan::Nothing) | Err(_) => e,
        }
    }
}

impl<Rd: Read, I: Input> Iterator for ReplayReader<Rd, I> {
    type Item = Record<I>;

    fn next(&mut self) -> Option<Record<I>> {
        if self.done {
            return None;
        }
        match self.next_checked() {
            Ok(Some(r)) => Some(r),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                self.stop = Some(self.classify(e));
                None
            }
        }
    }
}

fn decode_payload<I: DeserializeOwned>(
    payload: &[u8],
    offset: u64,
) -> Result<Record<I>, ReplayError> {
    let (rec, used): (Record<I>, usize) =
        bincode::serde::decode_from_slice(payload, CONFIG.with_limit::<MAX_RECORD>())
            .map_err(|source| ReplayError::Decode { offset, source })?;
    if used != payload.len() {
        return Err(ReplayError::Invalid {
            offset,
            what: "trailing bytes in the record",
        });
    }
    Ok(rec)
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full<Rd: Read>(r: &mut Rd, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads one frame starting at byte `at` into `payload`, checking its
/// length and CRC. `Ok(false)`: the input ended before the frame started.
fn read_frame<Rd: Read>(
    inner: &mut Rd,
    at: u64,
    head: &mut [u8; FRAME_HEADER],
    payload: &mut Vec<u8>,
) -> Result<bool, ReplayError> {
    let n = read_full(inner, head).map_err(|source| ReplayError::Io { offset: at, source })?;
    if n == 0 {
        return Ok(false);
    }
    if n < FRAME_HEADER {
        return Err(ReplayError::Truncated {
            offset: at,
            have: n as u64,
            need: FRAME_HEADER as u64,
        });
    }
    let len = u64::from(u32::from_le_bytes([head[0], head[1], head[2], head[3]]));
    let stored = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len > MAX_RECORD as u64 {
        return Err(ReplayError::TooLarge {
            offset: at,
            len,
            limit: MAX_RECORD as u64,
        });
    }
    payload.clear();
    // `take` bounds the read; the buffer grows with the bytes actually
    // present, never with the declared length alone.
    inner
        .take(len)
        .read_to_end(payload)
        .map_err(|source| ReplayError::Io { offset: at, source })?;
    if (payload.len() as u64) < len {
        return Err(ReplayError::Truncated {
            offset: at,
            have: (FRAME_HEADER + payload.len()) as u64,
            need: FRAME_HEADER as u64 + len,
        });
    }
    let computed = crc32fast::hash(payload);
    if computed != stored {
        return Err(ReplayError::Crc {
            offset: at,
            stored,
            computed,
        });
    }
    Ok(true)
}

/// Reads the one record that starts at the reader's position, which is
/// byte `offset` of the file (for seeking to a keyframe found earlier).
pub(crate) fn read_record_at<Rd: Read, I: DeserializeOwned>(
    mut inner: Rd,
    offset: u64,
) -> Result<Record<I>, ReplayError> {
    let mut payload = Vec::new();
    if !read_frame(&mut inner, offset, &mut [0; FRAME_HEADER], &mut payload)? {
        return Err(ReplayError::Truncated {
            offset,
            have: 0,
            need: FRAME_HEADER as u64,
        });
    }
    decode_payload(&payload, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_sim::game::sandbox::PlayerInput;
    use bitroom_sim::game::SlotEvent;

    #[test]
    fn borrowed_and_owned_records_encode_alike() {
        let inputs = InputSet {
            inputs: vec![PlayerInput {
                buttons: 3,
                move_x: -4,
                move_y: 5,
                aim: 600,
            }],
            events: vec![SlotEvent::Join(0), SlotEvent::Leave(3)],
        };
        let owned = Record::Tick {
            tick: 9,
            inputs: inputs.clone(),
            hash: 77,
        };
        let bytes = bincode::serde::encode_to_vec(&owned, CONFIG).unwrap();
        let by_ref = bincode::serde::encode_to_vec(
            RecordRef::Tick {
                tick: 9,
                inputs: &inputs,
                hash: 77,
            },
            CONFIG,
        )
        .unwrap();
        assert_eq!(bytes, by_ref);
        let kf = Record::<PlayerInput>::Keyframe {
            tick: 5,
            snapshot: vec![1, 2, 3],
        };
        let a = bincode::serde::encode_to_vec(&kf, CONFIG).unwrap();
        let kf_ref: RecordRef<'_, PlayerInput> = RecordRef::Keyframe {
            tick: 5,
            snapshot: &[1, 2, 3],
        };
        let b = bincode::serde::encode_to_vec(kf_ref, CONFIG).unwrap();
        assert_eq!(a, b);
        // Byte strings encode as a plain sequence of u8 would.
        let plain = bincode::serde::encode_to_vec((2u32, 5u64, vec![1u8, 2, 3]), CONFIG).unwrap();
        assert_eq!(a, plain);
    }
}

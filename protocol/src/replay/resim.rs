//! Re-simulation: check a replay's hashes ([`verify`]), rebuild the state
//! of any tick ([`reconstruct`]), and find where two runs part and what
//! differs there ([`diff_replays`], [`diff_against_resim`]).
//!
//! Every recorded tick carries the state hash, so the first divergent tick
//! comes from a straight comparison, never a search. Keyframes make the
//! rest cheap: the state at a tick is rebuilt from the latest keyframe at or
//! before it (at most one keyframe interval of re-simulation), and checked
//! against the recorded hashes on the way. When that check fails (the file
//! and this build disagree about the interval), the comparison falls back
//! to the first recorded keyframe after the divergence.

use super::{read_record_at, Header, NoInput, Record, ReplayError, ReplayReader};
use bitroom_sim::game::diff::{diff_states, StateDiff};
use bitroom_sim::game::{
    Game, GameSnapshot, GameSnapshotError, Input, InputSet, Rules, SyncTest, SyncTestReport,
};
use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;

/// Why a replay cannot be re-simulated (beyond a damaged tail, which only
/// shortens what is verified).
#[derive(Debug, thiserror::Error)]
pub enum ResimError {
    /// The header (or a record read by offset) is unreadable.
    #[error(transparent)]
    Format(#[from] ReplayError),
    /// The initial snapshot in the header does not decode.
    #[error("the initial state in the header does not decode: {0}")]
    Initial(GameSnapshotError),
    /// The initial snapshot disagrees with the header.
    #[error("the initial state is at tick {found} with {found_slots} seats; the header says tick {tick} with {slots}")]
    InitialMismatch {
        /// Header's start tick.
        tick: u64,
        /// Snapshot's tick.
        found: u64,
        /// Header's seats.
        slots: u8,
        /// Snapshot's seats.
        found_slots: u8,
    },
    /// A keyframe does not decode.
    #[error("the keyframe at tick {tick} does not decode: {source}")]
    Keyframe {
        /// Its tick.
        tick: u64,
        /// Why.
        source: GameSnapshotError,
    },
    /// The record at a keyframe's offset is something else.
    #[error("the record at byte {offset} is not the keyframe of tick {tick}")]
    KeyframeMoved {
        /// The keyframe's tick.
        tick: u64,
        /// Where it was found before.
        offset: u64,
    },
    /// A recording of a game the caller cannot re-simulate.
    #[error("rules {found:?} cannot be re-simulated by this build (it knows {known:?})")]
    Rules {
        /// [`Header::rules`] of the recording.
        found: String,
        /// The games the caller knows.
        known: &'static str,
    },
    /// The rules given to re-simulate with are not the recorded ones.
    #[error("the recording was made with rules {recorded:016x}, these rules are {given:016x} (another game, scene or build)")]
    Fingerprint {
        /// [`Header::rules_fingerprint`].
        recorded: u64,
        /// [`Rules::fingerprint`] of the rules given.
        given: u64,
    },
    /// A tick outside the replay.
    #[error("tick {tick} is not in the replay (it holds ticks {first} to {last})")]
    NoSuchTick {
        /// The tick asked for.
        tick: u64,
        /// The start tick.
        first: u64,
        /// The last intact tick.
        last: u64,
    },
    /// Two replays that do not start at the same tick.
    #[error("the replays start at different ticks ({a} and {b})")]
    DifferentStart {
        /// First replay's start tick.
        a: u64,
        /// Second replay's start tick.
        b: u64,
    },
    /// Seeking failed.
    #[error("read error: {0}")]
    Io(#[from] io::Error),
}

/// Decodes the header's initial snapshot and checks it against the header.
///
/// # Errors
/// [`ResimError::Initial`] or [`ResimError::InitialMismatch`].
pub fn decode_initial<R: Rules>(header: &Header) -> Result<GameSnapshot<R>, ResimError> {
    let snap = GameSnapshot::<R>::decode(&header.initial).map_err(ResimError::Initial)?;
    if snap.tick() != header.start_tick || snap.slot_count() != header.slots {
        return Err(ResimError::InitialMismatch {
            tick: header.start_tick,
            found: snap.tick(),
            slots: header.slots,
            found_slots: snap.slot_count(),
        });
    }
    Ok(snap)
}

/// The rules `make` gives for a recording, checked against its recorded
/// fingerprint.
fn checked_rules<R: Rules>(
    header: &Header,
    initial: &GameSnapshot<R>,
    make: impl FnOnce(&Header, &GameSnapshot<R>) -> Result<R, ResimError>,
) -> Result<R, ResimError> {
    let rules = make(header, initial)?;
    if rules.fingerprint() != header.rules_fingerprint {
        return Err(ResimError::Fingerprint {
            recorded: header.rules_fingerprint,
            given: rules.fingerprint(),
        });
    }
    Ok(rules)
}

/// Where [`verify`] starts re-simulating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartAt {
    /// The last keyframe in the file (checks the tail quickly).
    Latest,
    /// The latest keyframe at or before this tick (the initial state when
    /// there is none).
    AtOrBefore(u64),
}

/// Options of [`verify`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Start from a keyframe instead of the initial state.
    pub start: Option<StartAt>,
    /// Sync test: roll back this many ticks after every tick and compare
    /// the re-simulated hashes too.
    pub synctest: Option<u32>,
}

/// Where [`verify`] is (for progress bars).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Latest tick read.
    pub tick: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Ticks verified so far.
    pub verified: u64,
}

/// The first point where a re-simulation and a replay disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Divergence {
    /// The re-simulated state hash differs from the recorded one.
    Hash {
        /// The tick.
        tick: u64,
        /// Recorded hash.
        recorded: u64,
        /// Re-simulated hash.
        computed: u64,
    },
    /// A keyframe's state does not have its tick's recorded hash (or does
    /// not decode: `keyframe` is `None`).
    Keyframe {
        /// The tick.
        tick: u64,
        /// Recorded hash of the tick.
        recorded: u64,
        /// Hash of the keyframe's state.
        keyframe: Option<u64>,
    },
    /// Sync test: re-simulating after a rollback changed a state.
    SyncTest {
        /// The tick.
        tick: u64,
        /// Hash of the first run.
        first: u64,
        /// Hash after the rollback.
        resimulated: u64,
    },
}

impl Divergence {
    /// The tick.
    pub fn tick(&self) -> u64 {
        match *self {
            Divergence::Hash { tick, .. }
            | Divergence::Keyframe { tick, .. }
            | Divergence::SyncTest { tick, .. } => tick,
        }
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Divergence::Hash {
                tick,
                recorded,
                computed,
            } => write!(
                f,
                "tick {tick}: recorded hash {recorded:016x}, re-simulated {computed:016x}"
            ),
            Divergence::Keyframe {
                tick,
                recorded,
                keyframe: Some(k),
            } => write!(
                f,
                "tick {tick}: keyframe state hashes to {k:016x}, the recorded hash is {recorded:016x}"
            ),
            Divergence::Keyframe { tick, .. } => {
                write!(f, "tick {tick}: the keyframe does not decode")
            }
            Divergence::SyncTest {
                tick,
                first,
                resimulated,
            } => write!(
                f,
                "tick {tick}: sync test rollback changed the state (first {first:016x}, re-simulated {resimulated:016x})"
            ),
        }
    }
}

/// What [`verify`] found.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Tick re-simulation started from (the start tick or a keyframe).
    pub start_tick: u64,
    /// Ticks whose hash was re-computed and matched.
    pub ticks_verified: u64,
    /// Latest tick verified (`start_tick` when none).
    pub last_verified: u64,
    /// Intact tick records read.
    pub ticks_read: u64,
    /// Keyframes checked against the recorded hashes.
    pub keyframes_checked: u64,
    /// Game state hash at `last_verified`.
    pub final_hash: u64,
    /// The first disagreement (verification stops there).
    pub divergence: Option<Divergence>,
    /// Why the readable prefix ended early (damaged or truncated tail).
    pub damage: Option<ReplayError>,
    /// Whether the end record was read.
    pub ended_cleanly: bool,
    /// Bytes read (up to the end of the last intact record).
    pub bytes_read: u64,
    /// Sync test counters (with [`VerifyOptions::synctest`]).
    pub synctest: Option<SyncTestReport>,
}

/// A plain game, or one under a sync test (one per verification, so the
/// size difference of the variants does not matter).
#[allow(clippy::large_enum_variant)]
enum Runner<R: Rules> {
    Plain(Game<R>),
    Sync(SyncTest<R>),
}

impl<R: Rules> Runner<R> {
    fn new(game: Game<R>, synctest: Option<u32>) -> Runner<R> {
        match synctest {
            Some(k) => Runner::Sync(SyncTest::new(game, k)),
            None => Runner::Plain(game),
        }
    }

    fn game(&self) -> &Game<R> {
        match self {
            Runner::Plain(g) => g,
            Runner::Sync(s) => s.game(),
        }
    }

    /// Steps; a sync test mismatch found by this step, if any.
    fn step(&mut self, inputs: InputSet<R::Input>) -> Option<Divergence> {
        match self {
            Runner::Plain(g) => {
                g.step(&inputs);
                None
            }
            Runner::Sync(s) => {
                let before = s.report().mismatches.len();
                s.step(inputs);
                s.report()
                    .mismatches
                    .get(before)
                    .map(|m| Divergence::SyncTest {
                        tick: m.tick,
                        first: m.first,
                        resimulated: m.resimulated,
                    })
            }
        }
    }

    fn synctest_report(&self) -> Option<SyncTestReport> {
        match self {
            Runner::Plain(_) => None,
            Runner::Sync(s) => Some(s.report().clone()),
        }
    }
}

/// Reading before the start point (a keyframe not reached yet).
struct Waiting<I> {
    /// Latest keyframe seen: tick, bytes, recorded hash of its tick.
    keyframe: Option<(u64, Vec<u8>, u64)>,
    /// Tick records after it.
    ticks: Vec<(u64, InputSet<I>, u64)>,
}

/// Re-simulates a replay and checks every recorded hash (and every keyframe
/// against its tick's hash). Stops at the first divergence. A damaged tail
/// is not an error: what came before it is verified and the damage is in
/// [`VerifyReport::damage`]. `rules` makes the rules from the header and the
/// initial state; their fingerprint must be the recorded one. `progress` is called
/// every 64 ticks.
///
/// # Errors
/// An initial state that does not decode, rules `rules` refuses, or
/// rules of another fingerprint ([`ResimError::Fingerprint`]).
pub fn verify<R, Rd, F>(
    mut reader: ReplayReader<Rd, R::Input>,
    rules: F,
    opts: &VerifyOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<VerifyReport, ResimError>
where
    R: Rules,
    Rd: Read,
    F: FnOnce(&Header, &GameSnapshot<R>) -> Result<R, ResimError>,
{
    let header = reader.header().clone();
    let initial = decode_initial::<R>(&header)?;
    let rules = checked_rules(&header, &initial, rules)?;
    let mut report = VerifyReport {
        start_tick: header.start_tick,
        last_verified: header.start_tick,
        final_hash: initial.state_hash(),
        ..VerifyReport::default()
    };
    let start_now = match opts.start {
        None => true,
        Some(StartAt::AtOrBefore(n)) => n <= header.start_tick,
        Some(StartAt::Latest) => false,
    };
    let mut runner: Option<Runner<R>> = None;
    let mut waiting = Waiting {
        keyframe: None,
        ticks: Vec::new(),
    };
    if start_now {
        runner = Some(Runner::new(
            Game::from_snapshot(rules.clone(), &initial),
            opts.synctest,
        ));
    }
    let mut last_hash = 0u64;
    // Processes one tick record on a running game; false stops verifying.
    let check = |runner: &mut Runner<R>,
                 report: &mut VerifyReport,
                 tick: u64,
                 inputs: InputSet<R::Input>,
                 hash: u64|
     -> bool {
        if let Some(d) = runner.step(inputs) {
            report.divergence = Some(d);
            return false;
        }
        let computed = runner.game().state_hash();
        if computed != hash {
            report.divergence = Some(Divergence::Hash {
                tick,
                recorded: hash,
                computed,
            });
            return false;
        }
        report.ticks_verified += 1;
        report.last_verified = tick;
        report.final_hash = computed;
        true
    };
    // Starts from the waiting keyframe (or the initial state) and catches
    // up with the buffered ticks.
    let start =
        |waiting: &mut Waiting<R::Input>, report: &mut VerifyReport| -> (Option<Runner<R>>, bool) {
            let game = match waiting.keyframe.take() {
                Some((tick, bytes, recorded)) => {
                    report.keyframes_checked += 1;
                    let snap = GameSnapshot::<R>::decode(&bytes)
                        .ok()
                        .filter(|s| s.tick() == tick);
                    let h = snap.as_ref().map(GameSnapshot::state_hash);
                    let Some(snap) = snap.filter(|_| h == Some(recorded)) else {
                        report.divergence = Some(Divergence::Keyframe {
                            tick,
                            recorded,
                            keyframe: h,
                        });
                        return (None, false);
                    };
                    report.start_tick = tick;
                    report.last_verified = tick;
                    report.final_hash = recorded;
                    Game::from_snapshot(rules.clone(), &snap)
                }
                None => Game::from_snapshot(rules.clone(), &initial),
            };
            let mut r = Runner::new(game, opts.synctest);
            for (tick, inputs, hash) in waiting.ticks.drain(..) {
                if !check(&mut r, report, tick, inputs, hash) {
                    return (Some(r), false);
                }
            }
            (Some(r), true)
        };
    let mut going = true;
    while going {
        let Some(rec) = reader.next() else { break };
        match rec {
            Record::Tick { tick, inputs, hash } => {
                report.ticks_read += 1;
                last_hash = hash;
                if runner.is_none() {
                    let due = matches!(opts.start, Some(StartAt::AtOrBefore(n)) if tick > n);
                    if !due {
                        waiting.ticks.push((tick, inputs, hash));
                        continue;
                    }
                    let (r, ok) = start(&mut waiting, &mut report);
                    runner = r;
                    if !ok {
                        break;
                    }
                }
                let r = runner.as_mut().expect("started");
                going = check(r, &mut report, tick, inputs, hash);
                if tick % 64 == 0 {
                    progress(Progress {
                        tick,
                        bytes: reader.offset(),
                        verified: report.ticks_verified,
                    });
                }
            }
            Record::Keyframe { tick, snapshot } => {
                if runner.is_none() {
                    waiting.keyframe = Some((tick, snapshot, last_hash));
                    waiting.ticks.clear();
                    continue;
                }
                report.keyframes_checked += 1;
                let h = GameSnapshot::<R>::decode(&snapshot)
                    .ok()
                    .filter(|s| s.tick() == tick)
                    .map(|s| s.state_hash());
                if h != Some(last_hash) {
                    report.divergence = Some(Divergence::Keyframe {
                        tick,
                        recorded: last_hash,
                        keyframe: h,
                    });
                    going = false;
                }
            }
            Record::Header(_) | Record::End { .. } => {}
        }
    }
    if runner.is_none() && report.divergence.is_none() {
        runner = start(&mut waiting, &mut report).0;
    }
    report.damage = reader.take_stop_reason();
    report.ended_cleanly = reader.ended_cleanly();
    report.bytes_read = reader.offset();
    report.synctest = runner.as_ref().and_then(Runner::synctest_report);
    progress(Progress {
        tick: reader.last_tick(),
        bytes: reader.offset(),
        verified: report.ticks_verified,
    });
    Ok(report)
}

/// Where a segment of [`verify_parallel`] starts.
enum SegmentStart {
    Initial,
    Keyframe {
        tick: u64,
        bytes: Vec<u8>,
        recorded: u64,
    },
}

/// One keyframe interval: a start state and the ticks after it.
struct Segment<I> {
    seq: usize,
    start: SegmentStart,
    ticks: Vec<(u64, InputSet<I>, u64)>,
}

/// What one segment's re-simulation found.
#[derive(Default)]
struct SegmentResult {
    seq: usize,
    start_tick: u64,
    verified: u64,
    last_verified: u64,
    final_hash: u64,
    keyframes_checked: u64,
    divergence: Option<Divergence>,
    synctest: Option<SyncTestReport>,
}

fn run_segment<R: Rules>(
    rules: &R,
    initial: &[u8],
    synctest: Option<u32>,
    seg: Segment<R::Input>,
) -> SegmentResult {
    let mut res = SegmentResult {
        seq: seg.seq,
        ..SegmentResult::default()
    };
    let snap = match seg.start {
        SegmentStart::Initial => match GameSnapshot::<R>::decode(initial) {
            Ok(s) => s,
            // Decoded once already by the caller.
            Err(_) => return res,
        },
        SegmentStart::Keyframe {
            tick,
            bytes,
            recorded,
        } => {
            res.start_tick = tick;
            res.last_verified = tick;
            res.keyframes_checked = 1;
            let snap = GameSnapshot::<R>::decode(&bytes)
                .ok()
                .filter(|s| s.tick() == tick);
            let h = snap.as_ref().map(GameSnapshot::state_hash);
            match snap {
                Some(s) if h == Some(recorded) => s,
                _ => {
                    res.divergence = Some(Divergence::Keyframe {
                        tick,
                        recorded,
                        keyframe: h,
                    });
                    return res;
                }
            }
        }
    };
    res.start_tick = snap.tick();
    res.last_verified = snap.tick();
    res.final_hash = snap.state_hash();
    let mut runner = Runner::new(Game::from_snapshot(rules.clone(), &snap), synctest);
    for (tick, inputs, hash) in seg.ticks {
        if let Some(d) = runner.step(inputs) {
            res.divergence = Some(d);
            break;
        }
        let computed = runner.game().state_hash();
        if computed != hash {
            res.divergence = Some(Divergence::Hash {
                tick,
                recorded: hash,
                computed,
            });
            break;
        }
        res.verified += 1;
        res.last_verified = tick;
        res.final_hash = computed;
    }
    res.synctest = runner.synctest_report();
    res
}

/// [`verify`] on `jobs` threads: the reading thread cuts the file at its
/// keyframes and each interval is re-simulated from its keyframe (whose
/// state is first checked against its tick's recorded hash) on a worker.
/// Every interval starts from a state with the recorded hash and must
/// reproduce every recorded hash after it, so this finds the same first
/// divergence as a single run from the initial state. At most `jobs`
/// intervals wait in memory. `jobs <= 1` is [`verify`].
///
/// # Errors
/// As [`verify`].
pub fn verify_parallel<R, Rd, F>(
    mut reader: ReplayReader<Rd, R::Input>,
    rules: F,
    opts: &VerifyOptions,
    jobs: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<VerifyReport, ResimError>
where
    R: Rules + Send,
    Rd: Read,
    F: FnOnce(&Header, &GameSnapshot<R>) -> Result<R, ResimError>,
{
    if jobs <= 1 {
        return verify(reader, rules, opts, progress);
    }
    let header = reader.header().clone();
    let initial = decode_initial::<R>(&header)?;
    let rules = checked_rules(&header, &initial, rules)?;
    let mut report = VerifyReport {
        start_tick: header.start_tick,
        last_verified: header.start_tick,
        final_hash: initial.state_hash(),
        ..VerifyReport::default()
    };
    // Ticks after the earliest divergence found so far are not worth reading.
    let stop_after = AtomicU64::new(u64::MAX);
    let (seg_tx, seg_rx) = mpsc::sync_channel::<Segment<R::Input>>(jobs);
    let seg_rx = Mutex::new(seg_rx);
    let (res_tx, res_rx) = mpsc::channel::<SegmentResult>();
    let mut results = Vec::new();
    thread::scope(|scope| {
        for _ in 0..jobs {
            let (rules, seg_rx, res_tx) = (rules.clone(), &seg_rx, res_tx.clone());
            let (initial, stop_after) = (&header.initial[..], &stop_after);
            scope.spawn(move || loop {
                let next = seg_rx.lock().map(|rx| rx.recv());
                let Ok(Ok(seg)) = next else { break };
                let from = match &seg.start {
                    SegmentStart::Initial => 0,
                    SegmentStart::Keyframe { tick, .. } => *tick,
                };
                if from > stop_after.load(Ordering::Relaxed) {
                    // After a divergence: not needed.
                    continue;
                }
                let res = run_segment(&rules, initial, opts.synctest, seg);
                if let Some(d) = res.divergence {
                    stop_after.fetch_min(d.tick(), Ordering::Relaxed);
                }
                if res_tx.send(res).is_err() {
                    break;
                }
            });
        }
        drop(res_tx);
        let mut seq = 0;
        let mut current = Segment {
            seq: 0,
            start: SegmentStart::Initial,
            ticks: Vec::new(),
        };
        let mut last_hash = 0;
        let mut verified_so_far = 0;
        let mut stopped = false;
        while let Some(rec) = reader.next() {
            match rec {
                Record::Tick { tick, inputs, hash } => {
                    report.ticks_read += 1;
                    last_hash = hash;
                    current.ticks.push((tick, inputs, hash));
                }
                Record::Keyframe { tick, snapshot } => {
                    let skip = match opts.start {
                        None => false,
                        Some(StartAt::Latest) => true,
                        Some(StartAt::AtOrBefore(n)) => tick <= n,
                    };
                    seq += 1;
                    let next = Segment {
                        seq,
                        start: SegmentStart::Keyframe {
                            tick,
                            bytes: snapshot,
                            recorded: last_hash,
                        },
                        ticks: Vec::new(),
                    };
                    let done = std::mem::replace(&mut current, next);
                    if !skip && seg_tx.send(done).is_err() {
                        break;
                    }
                    while let Ok(r) = res_rx.try_recv() {
                        verified_so_far += r.verified;
                        results.push(r);
                    }
                    progress(Progress {
                        tick,
                        bytes: reader.offset(),
                        verified: verified_so_far,
                    });
                    if tick > stop_after.load(Ordering::Relaxed) {
                        stopped = true;
                        break;
                    }
                }
                Record::Header(_) | Record::End { .. } => {}
            }
        }
        if !stopped {
            let _ = seg_tx.send(current);
        }
        drop(seg_tx);
        results.extend(res_rx.iter());
    });
    results.sort_by_key(|r| r.seq);
    let mut first = true;
    for r in results {
        if first {
            report.start_tick = r.start_tick;
            first = false;
        }
        report.ticks_verified += r.verified;
        report.keyframes_checked += r.keyframes_checked;
        if r.verified > 0 || r.divergence.is_none() {
            report.last_verified = r.last_verified;
            report.final_hash = r.final_hash;
        }
        if let Some(st) = r.synctest {
            let total = report.synctest.get_or_insert_with(SyncTestReport::default);
            total.ticks += st.ticks;
            total.rollbacks += st.rollbacks;
            total.checked += st.checked;
            total.mismatches.extend(st.mismatches);
        }
        if r.divergence.is_some() {
            report.divergence = r.divergence;
            break;
        }
    }
    report.damage = reader.take_stop_reason();
    report.ended_cleanly = reader.ended_cleanly();
    report.bytes_read = reader.offset();
    progress(Progress {
        tick: reader.last_tick(),
        bytes: reader.offset(),
        verified: report.ticks_verified,
    });
    Ok(report)
}

/// One tick of a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TickEntry<I> {
    /// The tick.
    pub tick: u64,
    /// Recorded state hash.
    pub hash: u64,
    /// What went in.
    pub inputs: InputSet<I>,
}

/// Where a keyframe is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyframeEntry {
    /// Its tick.
    pub tick: u64,
    /// Byte offset of its record.
    pub offset: u64,
    /// Length of its snapshot.
    pub len: u64,
}

/// A replay read into memory, except its keyframes (read back by offset).
#[derive(Debug)]
pub struct ReplayIndex<I> {
    /// The header.
    pub header: Header,
    /// Every intact tick, in order from `header.start_tick + 1`.
    pub ticks: Vec<TickEntry<I>>,
    /// Every intact keyframe, in order.
    pub keyframes: Vec<KeyframeEntry>,
    /// Why the readable prefix ended early, if it did.
    pub damage: Option<ReplayError>,
    /// Whether the end record was read.
    pub ended_cleanly: bool,
    /// Bytes up to the end of the last intact record.
    pub bytes: u64,
}

impl<I: Input> ReplayIndex<I> {
    /// Reads every intact record.
    pub fn build<Rd: Read>(mut reader: ReplayReader<Rd, I>) -> ReplayIndex<I> {
        let mut ticks = Vec::new();
        let mut keyframes = Vec::new();
        while let Some(rec) = reader.next() {
            match rec {
                Record::Tick { tick, inputs, hash } => ticks.push(TickEntry { tick, hash, inputs }),
                Record::Keyframe { tick, snapshot } => keyframes.push(KeyframeEntry {
                    tick,
                    offset: reader.record_offset(),
                    len: snapshot.len() as u64,
                }),
                Record::Header(_) | Record::End { .. } => {}
            }
        }
        ReplayIndex {
            damage: reader.take_stop_reason(),
            ended_cleanly: reader.ended_cleanly(),
            bytes: reader.offset(),
            header: reader.header().clone(),
            ticks,
            keyframes,
        }
    }

    /// The start tick.
    pub fn start_tick(&self) -> u64 {
        self.header.start_tick
    }

    /// The last intact tick (the start tick when there is none).
    pub fn last_tick(&self) -> u64 {
        self.ticks.last().map_or(self.header.start_tick, |t| t.tick)
    }

    /// The record of a tick.
    pub fn tick(&self, tick: u64) -> Option<&TickEntry<I>> {
        let i = tick.checked_sub(self.header.start_tick + 1)?;
        self.ticks.get(usize::try_from(i).ok()?)
    }

    /// The latest keyframe at or before `tick`.
    pub fn keyframe_at_or_before(&self, tick: u64) -> Option<&KeyframeEntry> {
        let i = self.keyframes.partition_point(|k| k.tick <= tick);
        i.checked_sub(1).map(|i| &self.keyframes[i])
    }

    /// The earliest keyframe at or after `tick`.
    pub fn keyframe_at_or_after(&self, tick: u64) -> Option<&KeyframeEntry> {
        let i = self.keyframes.partition_point(|k| k.tick < tick);
        self.keyframes.get(i)
    }

    /// The keyframe at exactly `tick`.
    pub fn keyframe_at(&self, tick: u64) -> Option<&KeyframeEntry> {
        self.keyframe_at_or_after(tick).filter(|k| k.tick == tick)
    }
}

/// Reads a keyframe's snapshot bytes back from the file.
///
/// # Errors
/// A read error, or a record at that offset that is not the keyframe.
pub fn read_keyframe<S: Read + Seek>(
    src: &mut S,
    k: &KeyframeEntry,
) -> Result<Vec<u8>, ResimError> {
    src.seek(SeekFrom::Start(k.offset))?;
    match read_record_at::<_, NoInput>(&mut *src, k.offset)? {
        Record::Keyframe { tick, snapshot } if tick == k.tick => Ok(snapshot),
        _ => Err(ResimError::KeyframeMoved {
            tick: k.tick,
            offset: k.offset,
        }),
    }
}

fn decode_keyframe<R: Rules, S: Read + Seek>(
    src: &mut S,
    k: &KeyframeEntry,
) -> Result<GameSnapshot<R>, ResimError> {
    let bytes = read_keyframe(src, k)?;
    let snap = GameSnapshot::<R>::decode(&bytes).map_err(|source| ResimError::Keyframe {
        tick: k.tick,
        source,
    })?;
    if snap.tick() != k.tick {
        return Err(ResimError::KeyframeMoved {
            tick: k.tick,
            offset: k.offset,
        });
    }
    Ok(snap)
}

/// The state of one tick, rebuilt from a keyframe.
#[derive(Debug)]
pub struct Reconstructed<R: Rules> {
    /// The state.
    pub state: GameSnapshot<R>,
    /// The keyframe (or start) tick it was re-simulated from.
    pub from_tick: u64,
    /// The first tick on the way (the keyframe's included) whose hash
    /// differs from the recorded one; `None`: the state is the recorded one.
    pub first_mismatch: Option<u64>,
}

/// Rebuilds the state at `tick` from the latest keyframe at or before it
/// (or the initial state), checking every hash on the way.
///
/// # Errors
/// A tick outside the replay; a keyframe that cannot be read back.
pub fn reconstruct<R: Rules, S: Read + Seek>(
    index: &ReplayIndex<R::Input>,
    src: &mut S,
    initial: &GameSnapshot<R>,
    rules: &R,
    tick: u64,
) -> Result<Reconstructed<R>, ResimError> {
    if tick < index.start_tick() || tick > index.last_tick() {
        return Err(ResimError::NoSuchTick {
            tick,
            first: index.start_tick(),
            last: index.last_tick(),
        });
    }
    let mut first_mismatch = None;
    let mut game = match index.keyframe_at_or_before(tick) {
        Some(k) => {
            let snap = decode_keyframe::<R, S>(src, k)?;
            if index.tick(k.tick).map(|t| t.hash) != Some(snap.state_hash()) {
                first_mismatch = Some(k.tick);
            }
            Game::from_snapshot(rules.clone(), &snap)
        }
        None => Game::from_snapshot(rules.clone(), initial),
    };
    let from_tick = game.tick();
    while game.tick() < tick {
        let Some(e) = index.tick(game.tick() + 1) else {
            break;
        };
        game.step(&e.inputs);
        if first_mismatch.is_none() && game.state_hash() != e.hash {
            first_mismatch = Some(e.tick);
        }
    }
    Ok(Reconstructed {
        state: game.snapshot(),
        from_tick,
        first_mismatch,
    })
}

/// How the two states of a [`DiffReport`] were obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// The initial states (the replays differ from the start).
    Initial,
    /// Rebuilt from keyframes at or before the divergent tick, and checked
    /// against the recorded hashes up to it.
    Reconstructed,
    /// Recorded keyframes at the first keyframe tick after the divergence
    /// (the state at the divergent tick could not be rebuilt exactly).
    Keyframe,
}

/// What [`diff_replays`] or [`diff_against_resim`] found.
#[derive(Debug, Default)]
pub struct DiffReport {
    /// The first tick whose states differ (`None`: no divergence).
    pub divergence: Option<u64>,
    /// The two hashes at that tick (recorded, or recorded vs re-simulated).
    pub hashes: Option<(u64, u64)>,
    /// The first tick whose inputs differ (two replays only).
    pub inputs_differ_at: Option<u64>,
    /// Ticks compared.
    pub ticks_compared: u64,
    /// Tick of the field diff.
    pub compared_at: Option<u64>,
    /// How the compared states were obtained.
    pub comparison: Option<Comparison>,
    /// The field diff (first state: replay A; second: replay B or the
    /// re-simulation).
    pub diff: Option<StateDiff>,
    /// Remarks for the reader (plain sentences).
    pub notes: Vec<String>,
}

/// One replay opened for diffing.
#[derive(Debug)]
pub struct Side<'a, R: Rules, S> {
    /// Its index.
    pub index: &'a ReplayIndex<R::Input>,
    /// The file, for keyframes.
    pub src: &'a mut S,
    /// Its decoded initial state.
    pub initial: &'a GameSnapshot<R>,
    /// Its rules.
    pub rules: &'a R,
}

/// Compares two replays: the first tick whose recorded hashes differ, then
/// a field diff of the two states there (see the module docs).
///
/// # Errors
/// Replays that start at different ticks; keyframes that cannot be read.
pub fn diff_replays<R: Rules, S: Read + Seek>(
    a: Side<'_, R, S>,
    b: Side<'_, R, S>,
) -> Result<DiffReport, ResimError> {
    let mut rep = DiffReport::default();
    let (ia, ib) = (a.index, b.index);
    if ia.start_tick() != ib.start_tick() {
        return Err(ResimError::DifferentStart {
            a: ia.start_tick(),
            b: ib.start_tick(),
        });
    }
    if ia.header.rules_fingerprint != ib.header.rules_fingerprint {
        rep.notes.push(format!(
            "the replays were recorded with different rules or scenes (fingerprints {:016x} and {:016x})",
            ia.header.rules_fingerprint, ib.header.rules_fingerprint
        ));
    }
    let start = ia.start_tick();
    // Compared by state, not bytes: a format 3 and a format 4 file hold the
    // same state in different encodings.
    if a.initial.to_bytes() != b.initial.to_bytes() {
        rep.divergence = Some(start);
        rep.hashes = Some((a.initial.state_hash(), b.initial.state_hash()));
        rep.compared_at = Some(start);
        rep.comparison = Some(Comparison::Initial);
        rep.diff = Some(diff_states(a.initial, b.initial));
        return Ok(rep);
    }
    let common = ia.ticks.len().min(ib.ticks.len());
    rep.ticks_compared = common as u64;
    let pairs = ia.ticks[..common].iter().zip(&ib.ticks[..common]);
    rep.inputs_differ_at = pairs
        .clone()
        .find(|(x, y)| x.inputs != y.inputs)
        .map(|(x, _)| x.tick);
    let Some((ta, tb)) = pairs.clone().find(|(x, y)| x.hash != y.hash) else {
        if let Some(t) = rep.inputs_differ_at {
            rep.notes.push(format!(
                "the inputs differ from tick {t} but the recorded hashes agree: a file whose inputs do not give its own hashes? (check with `replay verify`)"
            ));
        }
        if ia.ticks.len() != ib.ticks.len() {
            rep.notes.push(format!(
                "the replays agree on their {common} common ticks; one goes on to tick {}",
                ia.last_tick().max(ib.last_tick())
            ));
        }
        return Ok(rep);
    };
    let t = ta.tick;
    rep.divergence = Some(t);
    rep.hashes = Some((ta.hash, tb.hash));
    let ra = reconstruct(ia, a.src, a.initial, a.rules, t)?;
    let rb = reconstruct(ib, b.src, b.initial, b.rules, t)?;
    if ra.first_mismatch.is_none() && rb.first_mismatch.is_none() {
        rep.compared_at = Some(t);
        rep.comparison = Some(Comparison::Reconstructed);
        rep.diff = Some(diff_states(&ra.state, &rb.state));
        return Ok(rep);
    }
    for (name, r) in [("A", &ra), ("B", &rb)] {
        if let Some(m) = r.first_mismatch {
            rep.notes.push(format!(
                "replay {name}'s state at tick {t} cannot be rebuilt on this build: re-simulating from tick {} misses the recorded hash at tick {m}",
                r.from_tick
            ));
        }
    }
    let both = ia
        .keyframes
        .iter()
        .filter(|k| k.tick >= t)
        .find_map(|k| ib.keyframe_at(k.tick).map(|kb| (*k, *kb)));
    match both {
        Some((ka, kb)) => {
            let sa = decode_keyframe::<R, S>(a.src, &ka)?;
            let sb = decode_keyframe::<R, S>(b.src, &kb)?;
            rep.compared_at = Some(ka.tick);
            rep.comparison = Some(Comparison::Keyframe);
            rep.diff = Some(diff_states(&sa, &sb));
        }
        None => rep.notes.push(format!(
            "the replays have no common keyframe at or after tick {t}: no states to compare"
        )),
    }
    Ok(rep)
}

/// Compares a replay with a fresh re-simulation of its inputs from its
/// initial state: the first tick whose re-simulated hash differs, then a
/// field diff of the recorded state (rebuilt from the keyframe before, or
/// the first keyframe after) and the re-simulated one. In the diff, the
/// first state is the recording's, the second the re-simulation's.
///
/// # Errors
/// Keyframes that cannot be read.
pub fn diff_against_resim<R: Rules, S: Read + Seek>(
    a: Side<'_, R, S>,
) -> Result<DiffReport, ResimError> {
    let mut rep = DiffReport::default();
    let index = a.index;
    let mut game = Game::from_snapshot(a.rules.clone(), a.initial);
    let mut found = None;
    for e in &index.ticks {
        game.step(&e.inputs);
        rep.ticks_compared += 1;
        let h = game.state_hash();
        if h != e.hash {
            found = Some((e.tick, e.hash, h));
            break;
        }
    }
    let Some((t, recorded, computed)) = found else {
        return Ok(rep);
    };
    rep.divergence = Some(t);
    rep.hashes = Some((recorded, computed));
    let r = reconstruct(index, a.src, a.initial, a.rules, t)?;
    if r.first_mismatch.is_none() {
        rep.compared_at = Some(t);
        rep.comparison = Some(Comparison::Reconstructed);
        rep.diff = Some(diff_states(&r.state, &game.snapshot()));
        return Ok(rep);
    }
    rep.notes.push(format!(
        "the recorded state at tick {t} cannot be rebuilt on this build: re-simulating from tick {} misses the recorded hash at tick {}",
        r.from_tick,
        r.first_mismatch.unwrap_or(t)
    ));
    let Some(k) = index.keyframe_at_or_after(t).copied() else {
        rep.notes.push(format!(
            "the replay has no keyframe at or after tick {t}: no recorded state to compare with"
        ));
        return Ok(rep);
    };
    while game.tick() < k.tick {
        let Some(e) = index.tick(game.tick() + 1) else {
            break;
        };
        game.step(&e.inputs);
    }
    let recorded = decode_keyframe::<R, S>(a.src, &k)?;
    rep.compared_at = Some(k.tick);
    rep.comparison = Some(Comparison::Keyframe);
    rep.diff = Some(diff_states(&recorded, &game.snapshot()));
    Ok(rep)
}

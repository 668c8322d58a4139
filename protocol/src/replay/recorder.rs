//! [`Recorder`]: writes a room's replay as it runs.
//!
//! The room task creates one with the game at room creation (the header and
//! the initial snapshot), calls [`Recorder::record_tick`] after every tick
//! and [`Recorder::flush`] at least once per second; nothing reaches the
//! writer between flushes, so the per-tick cost is an encode into memory.

use super::{
    encode_header, encode_ref, Header, NoInput, RecordRef, DEFAULT_KEYFRAME_INTERVAL,
    FORMAT_VERSION, MAX_HEADER_TEXT,
};
use bitroom_sim::game::{Game, GameSnapshot, InputSet, Rules};
use std::collections::VecDeque;
use std::io::{self, Write};

/// What the header says besides the game itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordingMeta {
    /// Room name.
    pub room: String,
    /// Scene name or file.
    pub scene: String,
    /// Ticks per second.
    pub tick_rate: u32,
    /// Ticks between keyframes (default [`DEFAULT_KEYFRAME_INTERVAL`]).
    pub keyframe_interval: u32,
    /// Name of the game ([`Header::rules`]).
    pub rules: String,
    /// Build that records (default: this crate's version).
    pub bitroom_version: String,
}

impl RecordingMeta {
    /// The game `rules` (its name in the header), the default keyframe
    /// interval and this build's version.
    pub fn new(rules: &str, room: &str, scene: &str, tick_rate: u32) -> RecordingMeta {
        RecordingMeta {
            room: room.to_string(),
            scene: scene.to_string(),
            tick_rate,
            keyframe_interval: DEFAULT_KEYFRAME_INTERVAL,
            rules: rules.to_string(),
            bitroom_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// Why recording failed. After an IO error the recorder stops (a record cut
/// in half would end the readable prefix anyway).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Writing or flushing failed.
    #[error("replay write failed: {0}")]
    Io(#[from] io::Error),
    /// [`Recorder::record_tick`] was called with a game at another tick
    /// than the next one.
    #[error("tick {got} recorded after tick {last}: ticks must follow one another")]
    OutOfOrder {
        /// The latest tick recorded.
        last: u64,
        /// The game's tick.
        got: u64,
    },
    /// An earlier write failed; nothing more is written.
    #[error("the recording stopped after an earlier write error")]
    Stopped,
    /// A setting the format cannot hold.
    #[error("invalid recording settings: {0}")]
    Invalid(&'static str),
    /// [`Recorder::record_parts`] got a keyframe where none is due, none
    /// where one is, or one of another tick.
    #[error("tick {tick}: keyframe missing, unexpected or of another tick")]
    Keyframe {
        /// The tick recorded.
        tick: u64,
    },
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecorderStats {
    /// Tick records written (or buffered).
    pub ticks: u64,
    /// Keyframes written (or buffered).
    pub keyframes: u64,
    /// Bytes handed to the writer.
    pub bytes_written: u64,
    /// Bytes waiting for the next flush.
    pub bytes_pending: u64,
}

/// Writes a room's replay (see the module docs and the format in
/// [`super`]). Also keeps the latest two keyframes and the inputs since the
/// older one, so [`Recorder::state_job`] can rebuild the state of any recent
/// tick for a desync report.
#[derive(Debug)]
pub struct Recorder<W: Write, R: Rules> {
    out: W,
    buf: Vec<u8>,
    rules: R,
    keyframe_interval: u32,
    last_tick: u64,
    failed: bool,
    /// The latest keyframes (the initial state counts), oldest first.
    kept: VecDeque<GameSnapshot<R>>,
    /// Inputs of every tick after the oldest kept keyframe.
    inputs: VecDeque<InputSet<R::Input>>,
    stats: RecorderStats,
}

/// Rebuilds the state of one tick from a kept keyframe: move it to a worker
/// thread if the re-simulation (up to two keyframe intervals) is too long
/// for the room's task.
#[derive(Debug)]
pub struct StateJob<R: Rules> {
    rules: R,
    start: GameSnapshot<R>,
    inputs: Vec<InputSet<R::Input>>,
}

impl<R: Rules> StateJob<R> {
    /// The tick whose state [`StateJob::run`] gives.
    pub fn tick(&self) -> u64 {
        self.start.tick() + self.inputs.len() as u64
    }

    /// Re-simulates to the tick.
    pub fn run(self) -> GameSnapshot<R> {
        let mut game = Game::from_snapshot(self.rules, &self.start);
        for set in &self.inputs {
            game.step(set);
        }
        game.snapshot()
    }
}

impl<W: Write, R: Rules> Recorder<W, R> {
    /// Starts a replay of `game` (at its current tick, usually 0 at room
    /// creation): writes the magic and the header with the initial
    /// snapshot, and flushes.
    ///
    /// # Errors
    /// A write error, or settings the format cannot hold (a zero tick rate
    /// or keyframe interval, text over 1 KiB).
    pub fn new(out: W, game: &Game<R>, meta: RecordingMeta) -> Result<Recorder<W, R>, RecordError> {
        if meta.tick_rate == 0 || meta.tick_rate > 10_000 {
            return Err(RecordError::Invalid("tick rate out of range"));
        }
        if meta.keyframe_interval == 0 {
            return Err(RecordError::Invalid("keyframe interval is zero"));
        }
        if [&meta.room, &meta.scene, &meta.rules, &meta.bitroom_version]
            .iter()
            .any(|s| s.len() > MAX_HEADER_TEXT)
        {
            return Err(RecordError::Invalid("text field over 1 KiB"));
        }
        let initial = game.snapshot();
        let header = Header {
            format_version: FORMAT_VERSION,
            bitroom_version: meta.bitroom_version,
            rules: meta.rules,
            tick_rate: meta.tick_rate,
            rules_fingerprint: game.rules().fingerprint(),
            room: meta.room,
            scene: meta.scene,
            slots: game.slot_count(),
            keyframe_interval: meta.keyframe_interval,
            start_tick: game.tick(),
            initial: initial.to_packed(),
        };
        let mut r = Recorder {
            out,
            buf: encode_header(&header),
            rules: game.rules().clone(),
            keyframe_interval: meta.keyframe_interval,
            last_tick: game.tick(),
            failed: false,
            kept: VecDeque::from([initial]),
            inputs: VecDeque::new(),
            stats: RecorderStats::default(),
        };
        r.flush()?;
        Ok(r)
    }

    /// Records the tick `game` just took with `inputs` (the room's
    /// `last_inputs()`), and `hash` (its state hash, which the room has
    /// already computed for the tick frames); after every tick that is a
    /// multiple of the keyframe interval, a keyframe too. Buffers only:
    /// nothing is written until [`Recorder::flush`].
    ///
    /// # Errors
    /// [`RecordError::OutOfOrder`] when `game` is not one tick past the
    /// last recorded one; [`RecordError::Stopped`] after a write error.
    pub fn record_tick(
        &mut self,
        game: &Game<R>,
        inputs: &InputSet<R::Input>,
        hash: u64,
    ) -> Result<(), RecordError> {
        let tick = game.tick();
        let keyframe = self.keyframe_due(tick).then(|| game.snapshot());
        self.record_parts(tick, inputs, hash, keyframe)
    }

    /// Whether tick `tick` takes a keyframe (a multiple of the interval).
    pub fn keyframe_due(&self, tick: u64) -> bool {
        tick.is_multiple_of(u64::from(self.keyframe_interval))
    }

    /// [`Recorder::record_tick`] from the tick's parts, for a recorder on
    /// another thread than the game: the tick, its inputs and hash, and the
    /// game's snapshot when [`Recorder::keyframe_due`] says so (packing it
    /// is the expensive part, and happens here).
    ///
    /// # Errors
    /// As [`Recorder::record_tick`], and [`RecordError::Keyframe`] when a
    /// keyframe is due and missing, or given when not due, or of another
    /// tick.
    pub fn record_parts(
        &mut self,
        tick: u64,
        inputs: &InputSet<R::Input>,
        hash: u64,
        keyframe: Option<GameSnapshot<R>>,
    ) -> Result<(), RecordError> {
        if self.failed {
            return Err(RecordError::Stopped);
        }
        if tick != self.last_tick + 1 {
            return Err(RecordError::OutOfOrder {
                last: self.last_tick,
                got: tick,
            });
        }
        if keyframe.is_some() != self.keyframe_due(tick)
            || keyframe.as_ref().is_some_and(|k| k.tick() != tick)
        {
            return Err(RecordError::Keyframe { tick });
        }
        let before = self.buf.len();
        encode_ref(&RecordRef::Tick { tick, inputs, hash }, &mut self.buf);
        self.last_tick = tick;
        self.stats.ticks += 1;
        self.inputs.push_back(inputs.clone());
        if let Some(snap) = keyframe {
            let bytes = snap.to_packed();
            encode_ref::<NoInput>(
                &RecordRef::Keyframe {
                    tick,
                    snapshot: &bytes,
                },
                &mut self.buf,
            );
            self.stats.keyframes += 1;
            self.kept.push_back(snap);
            if self.kept.len() > 2 {
                let old = self.kept.pop_front().expect("three kept");
                let newer = self.kept.front().expect("two kept").tick();
                let drop = (newer - old.tick()) as usize;
                self.inputs.drain(..drop.min(self.inputs.len()));
            }
        }
        self.stats.bytes_pending += (self.buf.len() - before) as u64;
        Ok(())
    }

    /// Writes what is buffered and flushes the writer. Call it at least
    /// once per second: a crash loses at most what came after the last
    /// flush.
    ///
    /// # Errors
    /// A write error (the recorder stops) or [`RecordError::Stopped`].
    pub fn flush(&mut self) -> Result<(), RecordError> {
        if self.failed {
            return Err(RecordError::Stopped);
        }
        let res = self
            .out
            .write_all(&self.buf)
            .and_then(|()| self.out.flush());
        if let Err(e) = res {
            self.failed = true;
            return Err(e.into());
        }
        self.stats.bytes_written += self.buf.len() as u64;
        self.stats.bytes_pending = 0;
        self.buf.clear();
        if self.buf.capacity() > 4 << 20 {
            // Don't keep a keyframe-sized buffer between keyframes.
            self.buf.shrink_to(64 << 10);
        }
        Ok(())
    }

    /// Writes the end record, flushes, and returns the writer.
    ///
    /// # Errors
    /// As [`Recorder::flush`].
    pub fn finish(mut self) -> Result<W, RecordError> {
        if self.failed {
            return Err(RecordError::Stopped);
        }
        encode_ref::<NoInput>(
            &RecordRef::End {
                tick: self.last_tick,
            },
            &mut self.buf,
        );
        self.flush()?;
        Ok(self.out)
    }

    /// The latest tick recorded.
    pub fn last_tick(&self) -> u64 {
        self.last_tick
    }

    /// Counters.
    pub fn stats(&self) -> RecorderStats {
        self.stats
    }

    /// The writer.
    pub fn writer(&self) -> &W {
        &self.out
    }

    /// A job that rebuilds the state at `tick` (for a desync report): from
    /// the latest kept keyframe at or before it. `None` when `tick` is in
    /// the future or older than the older of the two kept keyframes.
    pub fn state_job(&self, tick: u64) -> Option<StateJob<R>> {
        if tick > self.last_tick {
            return None;
        }
        let start = self.kept.iter().rev().find(|k| k.tick() <= tick)?;
        let oldest = self.kept.front()?.tick();
        let from = (start.tick() - oldest) as usize;
        let to = (tick - oldest) as usize;
        Some(StateJob {
            rules: self.rules.clone(),
            start: start.clone(),
            inputs: self.inputs.range(from..to).cloned().collect(),
        })
    }
}

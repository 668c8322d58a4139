//! A room's replay file (`serve --record DIR`) and its desync reports,
//! written by a thread of the room's own so that packing keyframes,
//! writing and flushing never land on the room's tick. Everything written
//! is weighed against the directory's quota ([`crate::quota`]).

use crate::config::RecordConfig;
use crate::desync_report::{desync_report_json, write_report_file, DesyncContext};
use crate::quota::Quota;
use bitroom_protocol::replay::{Recorder, RecordingMeta};
use bitroom_protocol::{ConnId, DesyncReport, NetRules, ServerRoom};
use bitroom_sim::game::{GameSnapshot, InputSet};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::{error, info, warn};

/// File extension of replay files (without the dot).
pub const REPLAY_EXTENSION: &str = "brr";

/// A name made safe for a file name: ASCII letters, digits, `-` and `_`
/// kept, everything else replaced by `_`, at most 64 bytes, never empty.
/// Room and client names come from clients.
pub fn safe_file_stem(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() {
        s.push('_');
    }
    s
}

/// A room's replay file (`serve --record DIR`): the header at the start,
/// one record per tick, flushed every [`FLUSH_EVERY`], so a crash (`kill
/// -9`) loses at most the ticks since the last flush (measured by
/// `tools/crash-loss.sh`).
///
/// The file is written by a thread of its own. Each tick the room hands it
/// the tick's inputs and hash, and once per keyframe interval a copy of the
/// state (about 20 µs for 1000 bodies); the thread packs the keyframes
/// (0.5–2 ms each), writes, flushes and builds desync reports, so none of
/// that lands on the room's tick. The thread holds the server's `done`
/// handle, so shutdown waits for the file to be finished.
pub(crate) struct Recording<R: NetRules> {
    to: std::sync::mpsc::SyncSender<RecordMsg<R>>,
    keyframe_interval: u64,
    path: PathBuf,
}

/// Ticks the recording thread may fall behind before recording stops.
const RECORD_QUEUE: usize = 1024;

/// How often the recording thread flushes its file (at its next tick after
/// this long): the most a crash can lose, plus the ticks queued for it.
/// Ten small writes a second per room.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

enum RecordMsg<R: NetRules> {
    Tick {
        tick: u64,
        inputs: InputSet<R::Input>,
        hash: u64,
        /// Boxed: a state is large, and the channel's slots are sized by
        /// the largest message.
        keyframe: Option<Box<GameSnapshot<R>>>,
    },
    Desync {
        ctx: DesyncContext,
        state: Vec<u8>,
    },
}

impl<R: NetRules> Recording<R> {
    pub(crate) fn start(
        rc: &RecordConfig,
        room_name: &str,
        room: &ServerRoom<R>,
        quota: Arc<Quota>,
        done: mpsc::Sender<()>,
    ) -> Option<Recording<R>> {
        if let Err(e) = std::fs::create_dir_all(&rc.dir) {
            error!("cannot record into {}: {e}", rc.dir.display());
            return None;
        }
        if !quota.may_record(room_name) {
            return None;
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let path = rc.dir.join(format!(
            "{}-{stamp}.{REPLAY_EXTENSION}",
            safe_file_stem(room_name)
        ));
        let file = match File::create(&path) {
            Ok(f) => f,
            Err(e) => {
                error!("cannot record to {}: {e}", path.display());
                return None;
            }
        };
        let mut meta = RecordingMeta::new(&rc.rules, room_name, &rc.scene, room.config().tick_rate);
        meta.keyframe_interval = rc.keyframe_interval;
        let recorder = match Recorder::new(BufWriter::new(file), room.game(), meta) {
            Ok(r) => r,
            Err(e) => {
                error!("cannot record to {}: {e}", path.display());
                return None;
            }
        };
        let (to, from) = std::sync::mpsc::sync_channel(RECORD_QUEUE);
        let dir = rc.dir.clone();
        let thread_path = path.clone();
        let span = tracing::Span::current();
        let spawned = std::thread::Builder::new()
            .name("bitroom-record".into())
            .spawn(move || {
                let _span = span.enter();
                write_recording(recorder, &from, &dir, &thread_path, &quota);
                drop(done);
            });
        if let Err(e) = spawned {
            error!("cannot start the recording thread: {e}");
            return None;
        }
        info!("recording to {}", path.display());
        Some(Recording {
            to,
            keyframe_interval: u64::from(rc.keyframe_interval),
            path,
        })
    }

    /// Hands the tick the room just took to the recording thread. `false`
    /// when recording has stopped (the thread failed, or fell
    /// [`RECORD_QUEUE`] ticks behind).
    pub(crate) fn tick(&self, room: &ServerRoom<R>) -> bool {
        let game = room.game();
        let tick = game.tick();
        let msg = RecordMsg::Tick {
            tick,
            inputs: room.last_inputs().clone(),
            hash: room.last_hash(),
            keyframe: tick
                .is_multiple_of(self.keyframe_interval)
                .then(|| Box::new(game.snapshot())),
        };
        match self.to.try_send(msg) {
            Ok(()) => true,
            Err(std::sync::mpsc::TrySendError::Full(_)) => {
                error!(
                    "recording to {} stopped: the writer fell {RECORD_QUEUE} ticks behind",
                    self.path.display()
                );
                false
            }
            // The thread stopped after an error, which it logged.
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => false,
        }
    }

    /// Asks the recording thread for a desync report (server and client
    /// state at the tick, their field diff) next to the replay.
    pub(crate) fn desync_report(
        &self,
        room: &str,
        conn: ConnId,
        slot: Option<u8>,
        report: &DesyncReport,
    ) {
        let ctx = DesyncContext {
            room: room.to_string(),
            client: match slot {
                Some(s) => format!("slot{s}-conn{conn}"),
                None => format!("conn{conn}"),
            },
            build: env!("CARGO_PKG_VERSION").to_string(),
            tick: report.tick,
            server_hash: report.server_hash,
            client_hash: report.client_hash,
        };
        let msg = RecordMsg::<R>::Desync {
            ctx,
            state: report.state.clone(),
        };
        if self.to.try_send(msg).is_err() {
            warn!("desync report not written: the recording is busy or stopped");
        }
    }
}

/// The recording thread: records until the room drops its [`Recording`]
/// (then finishes the file) or a write fails.
fn write_recording<R: NetRules>(
    mut rec: Recorder<BufWriter<File>, R>,
    from: &std::sync::mpsc::Receiver<RecordMsg<R>>,
    dir: &Path,
    path: &Path,
    quota: &Quota,
) {
    let mut flushed = std::time::Instant::now();
    let mut charged = 0;
    while let Ok(msg) = from.recv() {
        match msg {
            RecordMsg::Tick {
                tick,
                inputs,
                hash,
                keyframe,
            } => {
                let mut r = rec.record_parts(tick, &inputs, hash, keyframe.map(|k| *k));
                if r.is_ok() && flushed.elapsed() >= FLUSH_EVERY {
                    flushed = std::time::Instant::now();
                    r = rec.flush();
                    let written = rec.stats().bytes_written;
                    let fits = quota.charge(written - charged, path);
                    charged = written;
                    if !fits {
                        // Closed cleanly: a recording cut by the quota
                        // verifies like any other.
                        break;
                    }
                }
                if let Err(e) = r {
                    error!("recording to {} stopped: {e}", path.display());
                    return;
                }
            }
            RecordMsg::Desync { ctx, state } => {
                let server = rec.state_job(ctx.tick).map(|j| j.run());
                let written = desync_report_json(&ctx, server.as_ref(), &state).and_then(|text| {
                    if !quota.admit_report(text.len() as u64) {
                        return Ok(None);
                    }
                    let p = write_report_file(dir, &ctx, &text)?;
                    quota.add_report(p.clone(), text.len() as u64);
                    Ok(Some(p))
                });
                match written {
                    Ok(Some(p)) => warn!("desync report written to {}", p.display()),
                    Ok(None) => {}
                    Err(e) => error!("cannot write the desync report: {e}"),
                }
            }
        }
    }
    match rec.finish() {
        Ok(_) => {
            // What the last flushes wrote: the file's size counts.
            let len = std::fs::metadata(path).map_or(charged, |m| m.len());
            quota.count(len.saturating_sub(charged));
            info!("recording closed: {}", path.display());
        }
        Err(e) => error!("recording {} not closed cleanly: {e}", path.display()),
    }
}

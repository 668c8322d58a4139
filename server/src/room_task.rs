//! One room on its own task: a [`ServerRoom`] stepped on a drift-free
//! schedule, fed by its connections, its outputs sent on their way.
//!
//! Tick `n` is due at `start + n / rate` (the room's own
//! [`ServerRoom::deadline`]), so a late tick does not push the next one
//! back: lateness never accumulates, and after a stall the room steps the
//! missed ticks back to back. The wake-up comes from the server's precise
//! [`Ticker`](crate::ticker::Ticker), not tokio's millisecond timer. Every
//! call into the room runs under `catch_unwind`: a panic closes this room
//! (its clients are told `RoomClosed`) and leaves every other room running.

use crate::monitor::Monitor;
use crate::serve::{micros, RecordConfig, Shared, WriterMsg};
use bitroom_client::NetRules;
use bitroom_protocol::replay::{
    safe_file_stem, write_desync_report, DesyncContext, Recorder, RecordingMeta, REPLAY_EXTENSION,
};
use bitroom_protocol::DesyncReport;
use bitroom_protocol::{
    ConnId, KickReason, Micros, Output, RoomConfig, RoomEvent, RoomStats, ServerRoom,
};
use bitroom_sim::game::{GameSnapshot, InputSet};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, error, info, warn};

/// A connection as its room sees it.
#[derive(Debug)]
pub(crate) struct Peer {
    pub connection: quinn::Connection,
    pub writer: mpsc::Sender<WriterMsg>,
}

/// Work for a room.
#[derive(Debug)]
pub(crate) enum RoomCmd {
    /// A connection that said hello to this room.
    Join {
        conn: ConnId,
        peer: Peer,
        hello: Vec<u8>,
    },
    /// A complete reliable message.
    Reliable { conn: ConnId, bytes: Vec<u8> },
    /// A datagram, with its arrival time (µs since the server's base): the
    /// rate limit and the input-lead feedback count from arrival, not from
    /// when a busy room gets to it.
    Datagram {
        conn: ConnId,
        bytes: Bytes,
        at: Micros,
    },
    /// The connection broke the stream framing: close it with this reason.
    Kick { conn: ConnId, reason: KickReason },
    /// The connection is gone.
    Gone { conn: ConnId },
}

/// Ticks between publishing the room's counters.
const PUBLISH_EVERY: u64 = 15;

pub(crate) async fn run<R: NetRules>(
    name: String,
    shared: Arc<Shared<R>>,
    mut rx: mpsc::Receiver<RoomCmd>,
    config: RoomConfig,
) {
    let monitor: &Monitor = &shared.monitor;
    let base = shared.base;
    let mut room = ServerRoom::new(shared.rules.clone(), config, micros(base));
    let mut peers: BTreeMap<ConnId, Peer> = BTreeMap::new();
    let mut shutdown = shared.shutdown.subscribe();
    let mut published = RoomStats::default();
    let mut empty_since = Some(Instant::now());
    let idle = shared.room_idle;
    monitor.room_opened(&name);
    info!("room opened");
    let mut recording = shared
        .record
        .as_ref()
        .and_then(|rc| Recording::start(rc, &name, &room, shared.done.clone()));
    let mut timer = shared.ticker.timer();
    let outcome: Result<(), String> = loop {
        let due = base + Duration::from_micros(room.deadline(room.tick_number() + 1));
        let ticked_before = room.tick_number();
        let step = tokio::select! {
            biased;
            _ = crate::serve::shutting_down(&mut shutdown) => {
                let r = catch_unwind(AssertUnwindSafe(|| room.kick_all(KickReason::ServerShutdown)));
                if r.is_ok() {
                    dispatch(&mut room, &mut peers);
                }
                break r.map_err(panic_message);
            }
            () = timer.sleep_until(due.into_std()) => {
                let start = Instant::now();
                let lateness = start.saturating_duration_since(due);
                let r = catch_unwind(AssertUnwindSafe(|| room.tick(micros(base))));
                if r.is_ok() {
                    if recording.as_ref().is_some_and(|rec| !rec.tick(&room)) {
                        recording = None;
                    }
                    monitor.tick(start.elapsed(), lateness);
                    shared.tick_lateness(lateness);
                    if room.tick_number().is_multiple_of(PUBLISH_EVERY) {
                        let now = room.stats();
                        monitor.room(&name, &published, &now);
                        published = now;
                    }
                }
                r
            }
            cmd = rx.recv() => {
                let Some(cmd) = cmd else {
                    // Every sender is gone: the registry dropped us.
                    break Ok(());
                };
                catch_unwind(AssertUnwindSafe(|| handle(&mut room, &mut peers, base, cmd)))
            }
        };
        if let Err(p) = step {
            break Err(panic_message(p));
        }
        let ticked = room.tick_number() != ticked_before;
        let slow = dispatch(&mut room, &mut peers);
        if !slow.is_empty() {
            let r = catch_unwind(AssertUnwindSafe(|| {
                for conn in slow {
                    room.handle_disconnect(micros(base), conn);
                }
            }));
            if let Err(p) = r {
                break Err(panic_message(p));
            }
            dispatch(&mut room, &mut peers);
        }
        while let Some(e) = room.poll_event() {
            log_event(&e);
            if let (Some(rec), RoomEvent::Desync { conn, slot, report }) = (&recording, &e) {
                rec.desync_report(&name, *conn, *slot, report);
            }
        }
        // Close a room nobody has used for a while, unless a join is on
        // its way (joins are queued under the registry lock).
        if peers.is_empty() && room.connection_count() == 0 {
            let since = *empty_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= idle {
                let mut rooms = shared.rooms();
                if rx.is_empty() {
                    rooms.remove(&name);
                    info!("room closed: empty for {idle:?}");
                    break Ok(());
                }
            }
        } else {
            empty_since = None;
        }
        if ticked {
            // A room catching up steps back to back; let the connections'
            // and quinn's tasks on this worker run between ticks, or they
            // starve and the QUIC connections time out.
            tokio::task::yield_now().await;
        }
    };
    if let Err(msg) = &outcome {
        error!("room closed by a panic: {msg}");
        shared.rooms().remove(&name);
        let reason = KickReason::RoomClosed(format!("internal error: {msg}"));
        for (_, p) in std::mem::take(&mut peers) {
            close_peer(&p, reason.clone(), true);
        }
    }
    // The recording thread finishes the file once its channel closes.
    drop(recording);
    let now = catch_unwind(AssertUnwindSafe(|| room.stats())).unwrap_or(published);
    monitor.room(&name, &published, &now);
    monitor.room_closed(&name, outcome.is_err());
    // Peers left here got their kick from `dispatch`; the writers close
    // them after sending it.
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

fn handle<R: NetRules>(
    room: &mut ServerRoom<R>,
    peers: &mut BTreeMap<ConnId, Peer>,
    base: Instant,
    cmd: RoomCmd,
) {
    let now = micros(base);
    match cmd {
        RoomCmd::Join { conn, peer, hello } => {
            peers.insert(conn, peer);
            room.handle_connect(now, conn);
            room.handle_reliable(now, conn, &hello);
        }
        RoomCmd::Reliable { conn, bytes } => {
            if peers.contains_key(&conn) {
                room.handle_reliable(now, conn, &bytes);
            }
        }
        RoomCmd::Datagram { conn, bytes, at } => {
            if peers.contains_key(&conn) {
                room.handle_datagram(at.min(now), conn, &bytes);
            }
        }
        RoomCmd::Kick { conn, reason } => {
            if peers.contains_key(&conn) {
                info!(conn, "dropping a client: {reason}");
                room.kick(conn, reason);
            }
        }
        RoomCmd::Gone { conn } => {
            if peers.remove(&conn).is_some() {
                room.handle_disconnect(now, conn);
            }
        }
    }
}

/// Sends the room's outputs; returns connections too slow to take their
/// reliable messages (to be dropped).
fn dispatch<R: NetRules>(
    room: &mut ServerRoom<R>,
    peers: &mut BTreeMap<ConnId, Peer>,
) -> Vec<ConnId> {
    let mut slow = Vec::new();
    while let Some(o) = room.poll_output() {
        match o {
            Output::Datagram { conn, bytes } => {
                if let Some(p) = peers.get(&conn) {
                    match p.connection.send_datagram(Bytes::from(bytes)) {
                        Ok(()) | Err(quinn::SendDatagramError::ConnectionLost(_)) => {}
                        Err(e) => warn!(conn, "datagram not sent: {e}"),
                    }
                }
            }
            Output::Reliable { conn, bytes } => {
                to_writer(peers, &mut slow, conn, WriterMsg::Data(bytes));
            }
            Output::Snapshot { conn, job } => {
                to_writer(peers, &mut slow, conn, WriterMsg::Snapshot(job));
            }
            Output::Close { conn, reason } => {
                if let Some(p) = peers.remove(&conn) {
                    close_peer(&p, reason, false);
                }
            }
        }
    }
    slow
}

/// Queues a message on a peer's writer; a peer whose writer is full does
/// not read its stream and is dropped (and listed in `slow`).
fn to_writer(
    peers: &mut BTreeMap<ConnId, Peer>,
    slow: &mut Vec<ConnId>,
    conn: ConnId,
    msg: WriterMsg,
) {
    let Some(p) = peers.get(&conn) else {
        return;
    };
    if p.writer.try_send(msg).is_err() {
        warn!(conn, "client does not read its stream: dropping it");
        if let Some(p) = peers.remove(&conn) {
            p.connection
                .close(1u8.into(), b"too slow to read the stream");
        }
        slow.push(conn);
    }
}

/// Asks a peer's writer to close after what it holds (sending the kick
/// first when `kick`); closes at once when the writer cannot take it.
fn close_peer(p: &Peer, reason: KickReason, kick: bool) {
    if let Err(e) = p.writer.try_send(WriterMsg::Close { reason, kick }) {
        let reason = match e.into_inner() {
            WriterMsg::Close { reason, .. } => reason,
            WriterMsg::Data(_) | WriterMsg::Snapshot(_) => KickReason::Left,
        };
        crate::serve::close_now(&p.connection, &reason);
    }
}

fn log_event(e: &RoomEvent) {
    match e {
        RoomEvent::Joined {
            conn,
            slot,
            name,
            reconnect,
        } => info!(conn, ?slot, name = %name, reconnect, "joined"),
        RoomEvent::Left { conn, slot, reason } => info!(conn, ?slot, "left: {reason}"),
        RoomEvent::Desync { conn, slot, report } => warn!(
            conn,
            ?slot,
            tick = report.tick,
            "client desync: client {:016x}, server {:016x} (resyncing it)",
            report.client_hash,
            report.server_hash
        ),
        RoomEvent::Rejected { conn, what } => debug!(conn, "rejected: {what:?}"),
    }
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
struct Recording<R: NetRules> {
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
        inputs: InputSet,
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
    fn start(
        rc: &RecordConfig,
        room_name: &str,
        room: &ServerRoom<R>,
        done: mpsc::Sender<()>,
    ) -> Option<Recording<R>> {
        if let Err(e) = std::fs::create_dir_all(&rc.dir) {
            error!("cannot record into {}: {e}", rc.dir.display());
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
        let mut meta = RecordingMeta::new(room_name, &rc.scene, room.config().tick_rate);
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
                write_recording(recorder, &from, &dir, &thread_path);
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
    fn tick(&self, room: &ServerRoom<R>) -> bool {
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
    fn desync_report(&self, room: &str, conn: ConnId, slot: Option<u8>, report: &DesyncReport) {
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
    dir: &std::path::Path,
    path: &std::path::Path,
) {
    let mut flushed = std::time::Instant::now();
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
                }
                if let Err(e) = r {
                    error!("recording to {} stopped: {e}", path.display());
                    return;
                }
            }
            RecordMsg::Desync { ctx, state } => {
                let server = rec.state_job(ctx.tick).map(|j| j.run());
                match write_desync_report(dir, &ctx, server.as_ref(), &state) {
                    Ok(p) => warn!("desync report written to {}", p.display()),
                    Err(e) => error!("cannot write the desync report: {e}"),
                }
            }
        }
    }
    match rec.finish() {
        Ok(_) => info!("recording closed: {}", path.display()),
        Err(e) => error!("recording {} not closed cleanly: {e}", path.display()),
    }
}

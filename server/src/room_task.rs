//! One room on its own task: a [`ServerRoom`] stepped on a drift-free
//! schedule, fed by its connections, its outputs sent on their way.
//!
//! Tick `n` is due at `start + n / rate` (the room's own
//! [`ServerRoom::deadline`]), so a late tick does not push the next one
//! back: lateness never accumulates, and after a stall the room steps the
//! missed ticks back to back. The wake-up comes from the server's precise
//! [`Ticker`](crate::ticker::Ticker), not tokio's millisecond timer.
//! Commands wake the room at once; input and ack datagrams wait in their
//! own queue for the next tick ([`RoomInbox`](crate::registry::RoomInbox)).
//! Every
//! call into the room runs under `catch_unwind`: a panic closes this room
//! (its clients are told `RoomClosed`) and leaves every other room running.

use crate::context::{micros, shutting_down, Context};
use crate::monitor::Monitor;
use crate::recording::Recording;
use crate::registry::{Peer, RoomCmd};
use crate::writer::WriterMsg;
use bitroom_protocol::{
    ConnId, KickReason, NetRules, Output, RoomConfig, RoomEvent, RoomStats, ServerRoom,
};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, error, info, warn};

/// Ticks between publishing the room's counters.
const PUBLISH_EVERY: u64 = 15;

/// Runs the room `name` until it closes (idle, shutdown, or a panic).
pub(crate) async fn run<R: NetRules>(
    name: String,
    cx: Arc<Context<R>>,
    mut rx: mpsc::Receiver<RoomCmd>,
    mut datagrams: mpsc::Receiver<RoomCmd>,
    config: RoomConfig,
    max_message: Arc<AtomicUsize>,
) {
    let monitor: &Monitor = &cx.monitor;
    let base = cx.base;
    let mut room = ServerRoom::new(cx.rules.clone(), config, micros(base));
    max_message.store(room.max_client_message(), Ordering::Relaxed);
    let mut peers: BTreeMap<ConnId, Peer> = BTreeMap::new();
    let mut shutdown = cx.shutdown.subscribe();
    let mut published = RoomStats::default();
    let mut empty_since = Some(Instant::now());
    let idle = cx.room_idle;
    monitor.room_opened(&name);
    let beat = cx.liveness.register(&name, micros(base));
    info!("room opened");
    let mut recording = match (&cx.record, &cx.quota) {
        (Some(rc), Some(quota)) => {
            Recording::start(rc, &name, &room, quota.clone(), cx.done.clone())
        }
        _ => None,
    };
    let mut timer = cx.ticker.timer();
    // Who sits where (for the web API): slot → (connection, name).
    let mut seats: BTreeMap<u8, (ConnId, String)> = BTreeMap::new();
    let outcome: Result<(), String> = loop {
        let due = base + Duration::from_micros(room.deadline(room.tick_number() + 1));
        let ticked_before = room.tick_number();
        let step = tokio::select! {
            biased;
            _ = shutting_down(&mut shutdown) => {
                let r = catch_unwind(AssertUnwindSafe(|| room.kick_all(KickReason::ServerShutdown)));
                if r.is_ok() {
                    dispatch(&mut room, &mut peers);
                }
                break r.map_err(panic_message);
            }
            () = timer.sleep_until(due.into_std()) => {
                let start = Instant::now();
                let lateness = start.saturating_duration_since(due);
                // The datagrams that came since the last tick (see
                // `RoomInbox`), then the tick.
                let r = catch_unwind(AssertUnwindSafe(|| {
                    while let Ok(cmd) = datagrams.try_recv() {
                        handle(&mut room, &mut peers, base, cmd);
                    }
                    room.tick(micros(base));
                }));
                if r.is_ok() {
                    beat.stamp(micros(base));
                    if recording.as_ref().is_some_and(|rec| !rec.tick(&room)) {
                        recording = None;
                    }
                    monitor.tick(start.elapsed(), lateness);
                    max_message.store(room.max_client_message(), Ordering::Relaxed);
                    cx.tick_lateness(lateness);
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
        let mut seated = false;
        while let Some(e) = room.poll_event() {
            log_event(&e, monitor);
            match &e {
                RoomEvent::Joined {
                    conn,
                    slot: Some(slot),
                    name,
                    ..
                } => {
                    seats.insert(*slot, (*conn, name.clone()));
                    seated = true;
                }
                RoomEvent::Left {
                    conn,
                    slot: Some(slot),
                    ..
                } if seats.get(slot).is_some_and(|(c, _)| c == conn) => {
                    seats.remove(slot);
                    seated = true;
                }
                _ => {}
            }
            if let (Some(rec), RoomEvent::Desync { conn, slot, report }) = (&recording, &e) {
                rec.desync_report(&name, *conn, *slot, report);
            }
        }
        if seated {
            let names = seats.iter().map(|(&s, (_, n))| (s, n.clone())).collect();
            monitor.room_seats(&name, names);
        }
        // Close a room nobody has used for a while, unless a join is on
        // its way (joins are queued under the registry lock).
        if peers.is_empty() && room.connection_count() == 0 {
            let since = *empty_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= idle {
                let mut rooms = cx.rooms.lock();
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
        cx.rooms.lock().remove(&name);
        let reason = KickReason::RoomClosed(format!("internal error: {msg}"));
        for (_, p) in std::mem::take(&mut peers) {
            close_peer(&p, reason.clone(), true);
        }
    }
    // The recording thread finishes the file once its channel closes.
    drop(recording);
    drop(beat);
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
        RoomCmd::Join {
            conn,
            peer,
            hello,
            grant,
        } => {
            peers.insert(conn, peer);
            room.handle_connect(now, conn);
            match grant {
                Some(g) => room.handle_hello(now, conn, &hello, g),
                None => room.handle_reliable(now, conn, &hello),
            }
        }
        RoomCmd::Reliable { conn, bytes, held } => {
            if peers.contains_key(&conn) {
                room.handle_reliable(now, conn, &bytes);
            }
            // The message's budget is free once the room has taken it.
            drop(held);
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
                    p.link.send_datagram(Bytes::from(bytes));
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
            p.link.abort("too slow to read the stream");
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
        p.link.close(&reason);
    }
}

fn log_event(e: &RoomEvent, monitor: &Monitor) {
    match e {
        RoomEvent::Joined {
            conn,
            slot,
            name,
            reconnect,
        } => info!(conn, ?slot, name = %name, reconnect, "joined"),
        RoomEvent::Left { conn, slot, reason } => {
            info!(conn, ?slot, "left: {reason}");
            if !matches!(reason, KickReason::Left | KickReason::ServerShutdown) {
                monitor.kicked(reason.label());
            }
        }
        RoomEvent::Desync { conn, slot, report } => warn!(
            conn,
            ?slot,
            tick = report.tick,
            "client desync: client {:016x}, server {:016x} (resyncing it)",
            report.client_hash,
            report.server_hash
        ),
        RoomEvent::Refused { conn, reason } => {
            info!(conn, "refused: {reason}");
            monitor.refused(reason.label());
        }
        RoomEvent::Rejected { conn, what } => debug!(conn, "rejected: {what:?}"),
    }
}

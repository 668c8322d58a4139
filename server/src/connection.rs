//! One connection from its first packet to its end: the QUIC handshake,
//! the hello (one stream, one framed message, in time, in at most
//! [`MAX_HELLO`] bytes; datagrams sent before it are dropped), the
//! admission checks ([`crate::admission`]: version, rules, token, room
//! creation limits), routing to the room it names (created only now, by a
//! hello that passed every check), then forwarding its stream messages
//! and datagrams to that room while a writer task ([`crate::writer`])
//! sends the room's messages back.
//!
//! Forwarding bounds what the connection holds (`docs/limits.md`): the
//! stream is read a message at a time (its length prefix, then no more
//! than its body); a message longer than the room allows is refused by its
//! length prefix; its body is read only once its declared length is
//! reserved in the server's budget of unfinished messages, and must be
//! whole
//! [`Limits::message_deadline`](crate::config::Limits::message_deadline)
//! after that, or the connection is closed.

use crate::context::{micros, shutting_down, Context};
use crate::limits::{AddressPlace, HalfOpenPlace, Reservation};
use crate::registry::{Peer, RoomCmd, RoomInbox};
use crate::room_task;
use crate::writer::{self, close_now, kick_and_close, WRITER_QUEUE};
use bitroom_protocol::{
    decode_client_reliable, is_ping, ClientReliable, ConnId, Grant, Hello, KickReason, NetRules,
    StreamFramer,
};
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, info, info_span, warn, Instrument};

/// Largest hello accepted (bytes): names and a token are short.
pub const MAX_HELLO: usize = 4096;

/// How often a connection waiting for room in the budget of unfinished
/// messages tries again.
const BUDGET_RETRY: Duration = Duration::from_millis(50);

/// Serves one incoming connection until it ends. `places` hold its place
/// in its address's count (for the whole connection) and among the
/// half-open connections (until its hello is taken or refused).
pub(crate) async fn handle_incoming<R: NetRules>(
    incoming: quinn::Incoming,
    cx: &Arc<Context<R>>,
    places: (AddressPlace, HalfOpenPlace),
) {
    let conn: ConnId = cx.next_conn.fetch_add(1, Ordering::Relaxed);
    let span = info_span!("conn", id = conn, remote = %incoming.remote_address());
    handle_connection(conn, incoming, cx, places)
        .instrument(span)
        .await;
}

/// Reads the first framed message (the hello), refusing lengths above
/// [`MAX_HELLO`] before reading them. Returns it and the framer holding
/// whatever followed it.
async fn read_hello(recv: &mut quinn::RecvStream) -> Result<(Vec<u8>, StreamFramer), String> {
    let mut framer = StreamFramer::with_limit(MAX_HELLO);
    let mut buf = [0u8; 2048];
    loop {
        let n = match recv.read(&mut buf).await {
            Ok(Some(n)) => n,
            Ok(None) => return Err("stream ended before the hello".into()),
            Err(e) => return Err(format!("stream failed before the hello: {e}")),
        };
        framer.push(&buf[..n]);
        match framer.next_message() {
            Ok(Some(m)) => return Ok((m, framer)),
            Ok(None) => {}
            Err(e) => return Err(format!("hello: {e}")),
        }
    }
}

/// Drops the datagrams a connection sends before its hello is taken
/// (counted): they are never charged to its rate limit later. Runs until
/// the connection ends.
async fn drop_early_datagrams(connection: &quinn::Connection, cx: &Context<impl NetRules>) {
    while connection.read_datagram().await.is_ok() {
        cx.monitor.early_datagram();
    }
    std::future::pending::<()>().await;
}

/// Drops the datagrams already received (without waiting for more).
async fn drop_received_datagrams(connection: &quinn::Connection, cx: &Context<impl NetRules>) {
    while let Ok(Ok(_)) = tokio::time::timeout(Duration::ZERO, connection.read_datagram()).await {
        cx.monitor.early_datagram();
    }
}

/// Refuses a connection that has not joined a room: kick on the stream
/// (if there is one), then close with the reason.
async fn refuse(
    connection: &quinn::Connection,
    send: Option<&mut quinn::SendStream>,
    reason: KickReason,
) {
    info!("refused: {reason}");
    match send {
        Some(send) => kick_and_close(connection, send, &reason).await,
        None => close_now(connection, &reason),
    }
}

async fn handle_connection<R: NetRules>(
    conn: ConnId,
    incoming: quinn::Incoming,
    cx: &Arc<Context<R>>,
    places: (AddressPlace, HalfOpenPlace),
) {
    let _done = cx.done.clone();
    let (_address_place, half_open) = places;
    let ip = incoming.remote_address().ip();
    let mut shutdown = cx.shutdown.subscribe();
    let deadline = Instant::now() + cx.hello_timeout;
    let connection = match tokio::time::timeout_at(deadline, incoming).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            debug!("handshake failed: {e}");
            cx.monitor.refused("handshake_failed");
            return;
        }
        Err(_) => {
            info!("QUIC handshake not finished in time");
            cx.monitor.refused("handshake_timeout");
            return;
        }
    };
    debug!("connected");
    // The hello: one stream, one framed message, in time. Datagrams sent
    // before it are dropped.
    let opened = tokio::select! {
        r = tokio::time::timeout_at(deadline, async {
            let (send, mut recv) = connection.accept_bi().await.map_err(|e| (None, e.to_string()))?;
            match read_hello(&mut recv).await {
                Ok((hello, framer)) => Ok((send, recv, hello, framer)),
                Err(e) => Err((Some(send), e)),
            }
        }) => r,
        () = drop_early_datagrams(&connection, cx) => unreachable!("never finishes"),
        _ = shutting_down(&mut shutdown) => {
            refuse(&connection, None, KickReason::ServerShutdown).await;
            return;
        }
    };
    drop_received_datagrams(&connection, cx).await;
    let (mut send, recv, hello_bytes, framer) = match opened {
        Ok(Ok(x)) => x,
        Ok(Err((send, e))) => {
            cx.monitor.refused("bad_hello");
            let mut send = send;
            refuse(&connection, send.as_mut(), KickReason::BadMessage(e)).await;
            return;
        }
        Err(_) => {
            cx.monitor.refused("hello_timeout");
            refuse(&connection, None, KickReason::HandshakeTimeout).await;
            return;
        }
    };
    let hello = match decode_client_reliable(&hello_bytes) {
        Ok(ClientReliable::Hello(h)) => h,
        Ok(_) => {
            cx.monitor.refused("bad_hello");
            let reason = KickReason::BadMessage("the first message must be a hello".into());
            refuse(&connection, Some(&mut send), reason).await;
            return;
        }
        Err(e) => {
            cx.monitor.refused("bad_hello");
            let reason = KickReason::BadMessage(e.to_string());
            refuse(&connection, Some(&mut send), reason).await;
            return;
        }
    };
    let seats = cx.room.max_players.clamp(1, bitroom_sim::game::MAX_SLOTS);
    let now = bitroom_transport::keys::unix_now();
    let checked = cx
        .admission
        .check(&hello, cx.rules.fingerprint(), seats, now);
    let grant = match checked {
        Ok(g) => g,
        Err(reason) => {
            cx.monitor.refused(reason.label());
            refuse(&connection, Some(&mut send), reason).await;
            return;
        }
    };
    let (writer_tx, writer_rx) = mpsc::channel(WRITER_QUEUE);
    let peer = Peer {
        connection: connection.clone(),
        writer: writer_tx,
    };
    let joined = join_room(cx, &hello, ip, conn, peer, hello_bytes, grant);
    // Taken or refused: no longer half-open.
    drop(half_open);
    let room = match joined {
        Ok(room) => room,
        Err(reason) => {
            cx.monitor.refused(reason.label());
            refuse(&connection, Some(&mut send), reason).await;
            return;
        }
    };
    tokio::spawn(
        writer::run(
            connection.clone(),
            send,
            writer_rx,
            cx.monitor.clone(),
            cx.done.clone(),
        )
        .instrument(tracing::Span::current()),
    );
    forward(conn, &connection, recv, framer, &room, cx).await;
    let _ = room.cmds.send(RoomCmd::Gone { conn }).await;
    debug!("connection over");
}

/// Hands a connection whose hello passed the checks to its room, creating
/// the room if needed (within the server's room limit and the creation
/// limits of the source address and the token's user).
fn join_room<R: NetRules>(
    cx: &Arc<Context<R>>,
    hello: &Hello,
    ip: IpAddr,
    conn: ConnId,
    peer: Peer,
    hello_bytes: Vec<u8>,
    grant: Option<Grant>,
) -> Result<RoomInbox, KickReason> {
    if *cx.shutdown.borrow() {
        return Err(KickReason::ServerShutdown);
    }
    if cx.shedding() {
        return Err(KickReason::Overloaded);
    }
    let name = hello.room.as_str();
    let mut rooms = cx.rooms.lock();
    let room = match rooms.get(name) {
        Some(room) => room.clone(),
        None => {
            if rooms.len() >= cx.max_rooms {
                return Err(KickReason::TooManyRooms);
            }
            // A spectator cannot be let into a new room that takes none.
            if hello.spectator && cx.room.max_spectators == 0 {
                return Err(KickReason::RoomFull);
            }
            if !cx
                .admission
                .may_create(ip, grant.as_ref(), std::time::Instant::now())
            {
                return Err(KickReason::TooManyRoomsCreated);
            }
            let mut config = cx.room.clone();
            // The reconnect secrets' key: 256 bits from the OS (the room
            // itself draws no randomness).
            if let Err(e) = bitroom_transport::keys::os_random(&mut config.secret_seed) {
                warn!("cannot open room {name:?}: {e}");
                return Err(KickReason::RoomClosed(e.to_string()));
            }
            config.tokens_required = cx.admission.requires_tokens();
            cx.rooms.count_created();
            let (room, rx, datagrams) = RoomInbox::new();
            let span = info_span!("room", name = %name);
            let task_cx = cx.clone();
            let done = cx.done.clone();
            let room_name = name.to_string();
            let max_message = room.max_message.clone();
            tokio::spawn(
                async move {
                    room_task::run(room_name, task_cx, rx, datagrams, config, max_message).await;
                    drop(done);
                }
                .instrument(span),
            );
            rooms.insert(name.to_string(), room.clone());
            room
        }
    };
    // Queued under the registry lock: a room closing for idleness checks
    // its queue under the same lock.
    room.cmds
        .try_send(RoomCmd::Join {
            conn,
            peer,
            hello: hello_bytes,
            grant,
        })
        .map_err(|_| KickReason::RoomClosed("room is too busy to take a join".into()))?;
    Ok(room)
}

/// The message being received on a connection's stream.
#[derive(Debug)]
struct Unfinished {
    /// Its declared length in the budget, once there was room for it.
    held: Option<Reservation>,
    /// When it must be whole: from its first byte, and again from when
    /// its reservation was granted (`None` while it waits for one: the
    /// wait is the server's, not the client's).
    deadline: Option<Instant>,
}

/// Forwards a joined connection's stream messages and datagrams to its
/// room until the connection ends (see the module docs for the bounds).
async fn forward<R: NetRules>(
    conn: ConnId,
    connection: &quinn::Connection,
    mut recv: quinn::RecvStream,
    mut framer: StreamFramer,
    room: &RoomInbox,
    cx: &Context<R>,
) {
    let base = cx.base;
    let allowed = cx.limits.message_deadline;
    let mut buf = vec![0u8; 64 << 10];
    let mut stream_open = true;
    let mut unfinished: Option<Unfinished> = None;
    loop {
        framer.set_limit(room.max_message.load(Ordering::Relaxed));
        // Messages already framed go first (the hello may have company).
        loop {
            match framer.next_message() {
                Ok(Some(bytes)) => {
                    let held = unfinished.take().and_then(|u| u.held);
                    let cmd = RoomCmd::Reliable { conn, bytes, held };
                    if room.cmds.send(cmd).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    drop((framer, unfinished));
                    let reason = KickReason::BadMessage(e.to_string());
                    return kick(conn, connection, room, reason).await;
                }
            }
        }
        let now = Instant::now();
        if framer.buffered() == 0 {
            unfinished = None;
        } else {
            let u = unfinished.get_or_insert(Unfinished {
                held: None,
                deadline: Some(now + allowed),
            });
            if let (None, Some(len)) = (&u.held, framer.unfinished()) {
                match cx.budget.reserve(len) {
                    Some(r) => {
                        u.held = Some(r);
                        u.deadline = Some(now + allowed);
                    }
                    None => u.deadline = None,
                }
            }
        }
        // A message whose length is known is read only once it is held in
        // the budget: until then flow control holds the sender.
        let waiting = unfinished
            .as_ref()
            .is_some_and(|u| u.held.is_none() && framer.unfinished().is_some());
        let deadline = unfinished.as_ref().and_then(|u| u.deadline);
        // Read no further than the message being received (its length
        // prefix first), so the framer holds one message, reserved.
        let want = match framer.unfinished() {
            Some(len) => (4 + len - framer.buffered()).min(buf.len()),
            None => 4usize.saturating_sub(framer.buffered()).max(1),
        };
        cx.monitor.publish_pending();
        tokio::select! {
            r = recv.read(&mut buf[..want]), if stream_open && !waiting => match r {
                Ok(Some(n)) => framer.push(&buf[..n]),
                // The client finished its side (a leave was sent before).
                Ok(None) => stream_open = false,
                Err(_) => return,
            },
            d = connection.read_datagram() => match d {
                Ok(bytes) => {
                    let at = micros(base);
                    // Pings are answered at once (their pongs time the
                    // round trip); the rest waits for the room's tick.
                    let queue = if is_ping(&bytes) { &room.cmds } else { &room.datagrams };
                    if let Err(e) = queue.try_send(RoomCmd::Datagram { conn, bytes, at }) {
                        match e {
                            mpsc::error::TrySendError::Full(_) => {
                                metrics::counter!(crate::monitor::names::QUEUE_DROPS).increment(1);
                            }
                            mpsc::error::TrySendError::Closed(_) => return,
                        }
                    }
                }
                Err(_) => return,
            },
            () = sleep_until_some(deadline) => {
                drop((framer, unfinished));
                let secs = allowed.as_secs().try_into().unwrap_or(u32::MAX);
                return kick(conn, connection, room, KickReason::MessageTimeout(secs)).await;
            }
            () = tokio::time::sleep(BUDGET_RETRY), if waiting => {}
        }
    }
}

/// Sleeps until `at`; never wakes for `None`.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Asks the room to close a connection with `reason`, and waits for it.
async fn kick(conn: ConnId, connection: &quinn::Connection, room: &RoomInbox, reason: KickReason) {
    let _ = room.cmds.send(RoomCmd::Kick { conn, reason }).await;
    connection.closed().await;
}

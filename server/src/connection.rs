//! One connection from its first packet to its end, the same for every
//! transport ([`crate::link`]): the hello (the first reliable message, in
//! time, in at most [`MAX_HELLO`] bytes; datagrams sent before it are
//! dropped), the
//! admission checks ([`crate::admission`]: version, rules, token, room
//! creation limits), routing to the room it names (created only now, by a
//! hello that passed every check), then forwarding its stream messages
//! and datagrams to that room while a writer task ([`crate::writer`])
//! sends the room's messages back. [`handle_incoming`] is the native QUIC
//! entry; the browser transports enter at [`serve`] (`crate::web`).
//!
//! Forwarding bounds what the connection holds (`docs/limits.md`): a
//! byte stream (QUIC, WebTransport) is read a message at a time (its length prefix, then no more
//! than its body); a message longer than the room allows is refused by its
//! length prefix; its body is read only once its declared length is
//! reserved in the server's budget of unfinished messages, and must be
//! whole
//! [`Limits::message_deadline`](crate::config::Limits::message_deadline)
//! after that, or the connection is closed.

use crate::context::{micros, shutting_down, Context};
use crate::limits::{AddressPlace, HalfOpenPlace, Reservation};
use crate::link::quic::{QuicLink, QuicReader, QuicWriter};
use crate::link::{FramedReader, Inbound, Link, LinkError, LinkReader, LinkWriter};
use crate::registry::{Peer, RoomCmd, RoomInbox};
use crate::room_task;
use crate::writer::{self, kick_and_close, WRITER_QUEUE};
use bitroom_protocol::{
    decode_client_reliable, is_ping, ClientReliable, ConnId, Grant, Hello, KickReason, NetRules,
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

/// A connection's places in the server's limits: its address's count (for
/// the whole connection) and the half-open connections (until its hello
/// is taken or refused).
pub(crate) type Places = (AddressPlace, HalfOpenPlace);

/// Serves one incoming QUIC connection until it ends: the QUIC handshake
/// and the client's stream, in time, then [`serve`].
pub(crate) async fn handle_incoming<R: NetRules>(
    incoming: quinn::Incoming,
    cx: &Arc<Context<R>>,
    places: Places,
) {
    let conn: ConnId = cx.next_conn.fetch_add(1, Ordering::Relaxed);
    let ip = incoming.remote_address().ip();
    let span = info_span!("conn", id = conn, remote = %incoming.remote_address());
    async move {
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
        let link = QuicLink(connection.clone());
        // The client opens the one stream with its hello; datagrams sent
        // before that are dropped.
        let mut shutdown = cx.shutdown.subscribe();
        let opened = tokio::select! {
            r = tokio::time::timeout_at(deadline, connection.accept_bi()) => r,
            () = drop_early_datagrams(&connection, cx) => unreachable!("never finishes"),
            _ = shutting_down(&mut shutdown) => {
                link.close(&KickReason::ServerShutdown);
                return;
            }
        };
        let (send, recv) = match opened {
            Ok(Ok(streams)) => streams,
            Ok(Err(e)) => {
                debug!("no stream: {e}");
                cx.monitor.refused("bad_hello");
                return;
            }
            Err(_) => {
                info!("refused: {}", KickReason::HandshakeTimeout);
                cx.monitor.refused("hello_timeout");
                link.close(&KickReason::HandshakeTimeout);
                return;
            }
        };
        let reader = QuicReader {
            connection,
            stream: FramedReader::new(recv),
        };
        let link = Arc::new(link);
        serve(
            conn,
            ip,
            places,
            link,
            reader,
            QuicWriter(send),
            deadline,
            cx,
        )
        .await;
    }
    .instrument(span)
    .await;
}

/// Drops the datagrams a QUIC connection sends before it opens its stream
/// (counted). Runs until the connection ends.
async fn drop_early_datagrams(connection: &quinn::Connection, cx: &Context<impl NetRules>) {
    while connection.read_datagram().await.is_ok() {
        cx.monitor.early_datagram();
    }
    std::future::pending::<()>().await;
}

/// Reads the hello: the first reliable message. Datagrams before it have
/// no room to go to: they are dropped (counted), never charged to the
/// rate limit after the join.
async fn read_hello<R: NetRules>(
    reader: &mut impl LinkReader,
    cx: &Context<R>,
) -> Result<Vec<u8>, LinkError> {
    loop {
        match reader.next(MAX_HELLO, true).await? {
            Inbound::Reliable(m) => return Ok(m),
            Inbound::Progress => {}
            Inbound::Datagram(_) => cx.monitor.early_datagram(),
            Inbound::ReliableEnd => {
                return Err(LinkError::Bad("stream ended before the hello".into()))
            }
        }
    }
}

/// Refuses a connection that has not joined a room: the kick on its
/// stream, then the close with the reason.
async fn refuse(link: &dyn Link, writer: &mut impl LinkWriter, reason: KickReason) {
    info!("refused: {reason}");
    kick_and_close(link, writer, &reason).await;
}

/// Serves one connection of any transport from its hello (due by
/// `deadline`) to its end. `ip` is the client's address (for the room
/// creation limits), `places` its places in the connection limits.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve<R: NetRules>(
    conn: ConnId,
    ip: IpAddr,
    places: Places,
    link: Arc<dyn Link>,
    mut reader: impl LinkReader,
    mut writer: impl LinkWriter,
    deadline: Instant,
    cx: &Arc<Context<R>>,
) {
    let _done = cx.done.clone();
    let (_address_place, half_open) = places;
    let mut shutdown = cx.shutdown.subscribe();
    let hello = tokio::select! {
        r = tokio::time::timeout_at(deadline, read_hello(&mut reader, cx)) => r,
        _ = shutting_down(&mut shutdown) => {
            refuse(&*link, &mut writer, KickReason::ServerShutdown).await;
            return;
        }
    };
    let hello_bytes = match hello {
        Ok(Ok(hello)) => hello,
        Ok(Err(LinkError::Bad(e))) => {
            cx.monitor.refused("bad_hello");
            refuse(
                &*link,
                &mut writer,
                KickReason::BadMessage(format!("hello: {e}")),
            )
            .await;
            return;
        }
        Ok(Err(LinkError::Lost(e))) => {
            debug!("gone before the hello: {e}");
            cx.monitor.refused("bad_hello");
            return;
        }
        Err(_) => {
            cx.monitor.refused("hello_timeout");
            refuse(&*link, &mut writer, KickReason::HandshakeTimeout).await;
            return;
        }
    };
    for _ in 0..reader.drop_received_datagrams().await {
        cx.monitor.early_datagram();
    }
    let hello = match decode_client_reliable(&hello_bytes) {
        Ok(ClientReliable::Hello(h)) => h,
        Ok(_) => {
            cx.monitor.refused("bad_hello");
            let reason = KickReason::BadMessage("the first message must be a hello".into());
            refuse(&*link, &mut writer, reason).await;
            return;
        }
        Err(e) => {
            cx.monitor.refused("bad_hello");
            refuse(&*link, &mut writer, KickReason::BadMessage(e.to_string())).await;
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
            refuse(&*link, &mut writer, reason).await;
            return;
        }
    };
    let (writer_tx, writer_rx) = mpsc::channel(WRITER_QUEUE);
    let peer = Peer {
        link: link.clone(),
        writer: writer_tx,
    };
    let joined = join_room(cx, &hello, ip, conn, peer, hello_bytes, grant);
    // Taken or refused: no longer half-open.
    drop(half_open);
    let room = match joined {
        Ok(room) => room,
        Err(reason) => {
            cx.monitor.refused(reason.label());
            refuse(&*link, &mut writer, reason).await;
            return;
        }
    };
    tokio::spawn(
        writer::run(link, writer, writer_rx, cx.monitor.clone(), cx.done.clone())
            .instrument(tracing::Span::current()),
    );
    forward(conn, &mut reader, &room, cx).await;
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
            // Past the measured capacity (`--cpu-budget`), only a room an
            // allocation reserved (on Agones) is opened: the allocator
            // counted on it before the capacity fell.
            if rooms.len() >= cx.capacity.load(Ordering::Relaxed)
                && cx
                    .reserved
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| r.checked_sub(1))
                    .is_err()
            {
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

/// Forwards a joined connection's reliable messages and datagrams to its
/// room until the connection ends (see the module docs for the bounds).
async fn forward<R: NetRules>(
    conn: ConnId,
    reader: &mut impl LinkReader,
    room: &RoomInbox,
    cx: &Context<R>,
) {
    let base = cx.base;
    let allowed = cx.limits.message_deadline;
    let mut unfinished: Option<Unfinished> = None;
    loop {
        let now = Instant::now();
        if reader.buffered() == 0 {
            unfinished = None;
        } else {
            let u = unfinished.get_or_insert(Unfinished {
                held: None,
                deadline: Some(now + allowed),
            });
            if let (None, Some(len)) = (&u.held, reader.unfinished()) {
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
            .is_some_and(|u| u.held.is_none() && reader.unfinished().is_some());
        let deadline = unfinished.as_ref().and_then(|u| u.deadline);
        let limit = room.max_message.load(Ordering::Relaxed);
        cx.monitor.publish_pending();
        tokio::select! {
            r = reader.next(limit, !waiting) => match r {
                Ok(Inbound::Reliable(bytes)) => {
                    let held = unfinished.take().and_then(|u| u.held);
                    let cmd = RoomCmd::Reliable { conn, bytes, held };
                    if room.cmds.send(cmd).await.is_err() {
                        return;
                    }
                }
                Ok(Inbound::Progress | Inbound::ReliableEnd) => {}
                // Oversized datagrams never reach the room, whichever
                // transport they came by.
                Ok(Inbound::Datagram(bytes)) if !crate::link::datagram_fits(&bytes) => {}
                Ok(Inbound::Datagram(bytes)) => {
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
                Err(LinkError::Bad(e)) => {
                    drop(unfinished);
                    return kick(conn, reader, room, KickReason::BadMessage(e)).await;
                }
                Err(LinkError::Lost(e)) => {
                    debug!("connection lost: {e}");
                    return;
                }
            },
            () = sleep_until_some(deadline) => {
                drop(unfinished);
                let secs = allowed.as_secs().try_into().unwrap_or(u32::MAX);
                return kick(conn, reader, room, KickReason::MessageTimeout(secs)).await;
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

/// Asks the room to close a connection with `reason`, and waits for it
/// (its reliable channel dropped, what it buffered released; datagrams
/// until then are dropped).
async fn kick(conn: ConnId, reader: &mut impl LinkReader, room: &RoomInbox, reason: KickReason) {
    reader.stop_reliable();
    let _ = room.cmds.send(RoomCmd::Kick { conn, reason }).await;
    while !matches!(reader.next(0, false).await, Err(LinkError::Lost(_))) {}
}

//! One connection from its first packet to its end, the same for every
//! transport ([`crate::link`]): the hello (the first reliable message, in
//! time, in at most [`MAX_HELLO`] bytes), routing to the room it names
//! (created on first join), then forwarding its reliable messages and
//! datagrams to that room while a writer task ([`crate::writer`]) sends the
//! room's messages back. [`handle_incoming`] is the native QUIC entry; the
//! browser transports enter at [`serve`] (`crate::web`).

use crate::context::{micros, shutting_down, Context};
use crate::link::quic::{QuicLink, QuicReader, QuicWriter};
use crate::link::{FramedReader, Inbound, Link, LinkError, LinkReader, LinkWriter};
use crate::registry::{Peer, RoomCmd, ROOM_QUEUE};
use crate::room_task;
use crate::writer::{self, kick_and_close, WRITER_QUEUE};
use bitroom_protocol::{
    decode_client_reliable, ClientReliable, ConnId, KickReason, NetRules, MAX_RELIABLE,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, info, info_span, Instrument};

/// Largest hello accepted (bytes): names are short.
pub const MAX_HELLO: usize = 4096;

/// Serves one incoming QUIC connection until it ends: the QUIC handshake
/// and the client's stream, in time, then [`serve`].
pub(crate) async fn handle_incoming<R: NetRules>(incoming: quinn::Incoming, cx: &Arc<Context<R>>) {
    let conn: ConnId = cx.next_conn.fetch_add(1, Ordering::Relaxed);
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
        // The client opens the one stream with its hello.
        let mut shutdown = cx.shutdown.subscribe();
        let opened = tokio::select! {
            r = tokio::time::timeout_at(deadline, connection.accept_bi()) => r,
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
        serve(conn, Arc::new(link), reader, QuicWriter(send), deadline, cx).await;
    }
    .instrument(span)
    .await;
}

/// Reads the hello: the first reliable message (datagrams before it have
/// no room to go to and are dropped).
async fn read_hello(reader: &mut impl LinkReader) -> Result<Vec<u8>, LinkError> {
    loop {
        match reader.next(MAX_HELLO).await? {
            Inbound::Reliable(m) => return Ok(m),
            Inbound::Datagram(_) => {}
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
/// `deadline`) to its end.
pub(crate) async fn serve<R: NetRules>(
    conn: ConnId,
    link: Arc<dyn Link>,
    mut reader: impl LinkReader,
    mut writer: impl LinkWriter,
    deadline: Instant,
    cx: &Arc<Context<R>>,
) {
    let _done = cx.done.clone();
    let mut shutdown = cx.shutdown.subscribe();
    let hello = tokio::select! {
        r = tokio::time::timeout_at(deadline, read_hello(&mut reader)) => r,
        _ = shutting_down(&mut shutdown) => {
            refuse(&*link, &mut writer, KickReason::ServerShutdown).await;
            return;
        }
    };
    let hello = match hello {
        Ok(Ok(hello)) => hello,
        Ok(Err(LinkError::Bad(e))) => {
            cx.monitor.refused("bad_hello");
            refuse(&*link, &mut writer, KickReason::BadMessage(e)).await;
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
    let room_name = match decode_client_reliable(&hello) {
        Ok(ClientReliable::Hello(h)) => h.room,
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
    let (writer_tx, writer_rx) = mpsc::channel(WRITER_QUEUE);
    let peer = Peer {
        link: link.clone(),
        writer: writer_tx,
    };
    let room = match join_room(cx, &room_name, conn, peer, hello) {
        Ok(tx) => tx,
        Err(reason) => {
            let what = match reason {
                KickReason::Overloaded => "overloaded",
                _ => "room_refused",
            };
            cx.monitor.refused(what);
            refuse(&*link, &mut writer, reason).await;
            return;
        }
    };
    tokio::spawn(
        writer::run(link, writer, writer_rx, cx.monitor.clone(), cx.done.clone())
            .instrument(tracing::Span::current()),
    );
    forward(conn, &mut reader, &room, cx.base).await;
    let _ = room.send(RoomCmd::Gone { conn }).await;
    debug!("connection over");
}

/// Hands a connection to its room, creating the room if needed.
fn join_room<R: NetRules>(
    cx: &Arc<Context<R>>,
    name: &str,
    conn: ConnId,
    peer: Peer,
    hello: Vec<u8>,
) -> Result<mpsc::Sender<RoomCmd>, KickReason> {
    if *cx.shutdown.borrow() {
        return Err(KickReason::ServerShutdown);
    }
    if cx.shedding() {
        return Err(KickReason::Overloaded);
    }
    let mut rooms = cx.rooms.lock();
    let tx = match rooms.get(name) {
        Some(tx) => tx.clone(),
        None => {
            if rooms.len() >= cx.max_rooms {
                return Err(KickReason::TooManyRooms);
            }
            let (tx, rx) = mpsc::channel(ROOM_QUEUE);
            let mut config = cx.room.clone();
            let n = cx.rooms.count_created();
            config.seed = config
                .seed
                .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let span = info_span!("room", name = %name);
            let task_cx = cx.clone();
            let done = cx.done.clone();
            let room_name = name.to_string();
            tokio::spawn(
                async move {
                    room_task::run(room_name, task_cx, rx, config).await;
                    drop(done);
                }
                .instrument(span),
            );
            rooms.insert(name.to_string(), tx.clone());
            tx
        }
    };
    // Queued under the registry lock: a room closing for idleness checks
    // its queue under the same lock.
    tx.try_send(RoomCmd::Join { conn, peer, hello })
        .map_err(|_| KickReason::RoomClosed("room is too busy to take a join".into()))?;
    Ok(tx)
}

/// Forwards a joined connection's reliable messages and datagrams to its
/// room until the connection ends.
async fn forward(
    conn: ConnId,
    reader: &mut impl LinkReader,
    room: &mpsc::Sender<RoomCmd>,
    base: Instant,
) {
    loop {
        match reader.next(MAX_RELIABLE).await {
            Ok(Inbound::Reliable(bytes)) => {
                if room.send(RoomCmd::Reliable { conn, bytes }).await.is_err() {
                    return;
                }
            }
            // Oversized datagrams never reach the room, whichever transport
            // they came by.
            Ok(Inbound::Datagram(bytes)) if !crate::link::datagram_fits(&bytes) => {}
            Ok(Inbound::Datagram(bytes)) => {
                let at = micros(base);
                if let Err(e) = room.try_send(RoomCmd::Datagram { conn, bytes, at }) {
                    match e {
                        mpsc::error::TrySendError::Full(_) => {
                            metrics::counter!(crate::monitor::names::QUEUE_DROPS).increment(1);
                        }
                        mpsc::error::TrySendError::Closed(_) => return,
                    }
                }
            }
            // The client finished its side (a leave was sent before).
            Ok(Inbound::ReliableEnd) => {}
            Err(LinkError::Bad(e)) => {
                let reason = KickReason::BadMessage(e);
                let _ = room.send(RoomCmd::Kick { conn, reason }).await;
                // Wait for the room's close (datagrams until then are
                // dropped).
                while !matches!(reader.next(MAX_RELIABLE).await, Err(LinkError::Lost(_))) {}
                return;
            }
            Err(LinkError::Lost(_)) => return,
        }
    }
}

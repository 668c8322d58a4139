//! One connection from its first packet to its end: the QUIC handshake,
//! the hello (one stream, one framed message, in time, in at most
//! [`MAX_HELLO`] bytes), routing to the room it names (created on first
//! join), then forwarding its stream messages and datagrams to that room
//! while a writer task ([`crate::writer`]) sends the room's messages back.

use crate::context::{micros, shutting_down, Context};
use crate::registry::{Peer, RoomCmd, RoomInbox};
use crate::room_task;
use crate::writer::{self, close_now, kick_and_close, WRITER_QUEUE};
use bitroom_protocol::{
    decode_client_reliable, is_ping, ClientReliable, ConnId, KickReason, NetRules, StreamFramer,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, info, info_span, Instrument};

/// Largest hello accepted (bytes): names are short.
pub const MAX_HELLO: usize = 4096;

/// Serves one incoming connection until it ends.
pub(crate) async fn handle_incoming<R: NetRules>(incoming: quinn::Incoming, cx: &Arc<Context<R>>) {
    let conn: ConnId = cx.next_conn.fetch_add(1, Ordering::Relaxed);
    let span = info_span!("conn", id = conn, remote = %incoming.remote_address());
    handle_connection(conn, incoming, cx).instrument(span).await;
}

/// Reads the first framed message (the hello), refusing lengths above
/// [`MAX_HELLO`] before reading them. Returns it and the framer holding
/// whatever followed it.
async fn read_hello(recv: &mut quinn::RecvStream) -> Result<(Vec<u8>, StreamFramer), String> {
    let mut framer = StreamFramer::default();
    let mut head: Vec<u8> = Vec::with_capacity(4);
    let mut buf = [0u8; 2048];
    loop {
        let n = match recv.read(&mut buf).await {
            Ok(Some(n)) => n,
            Ok(None) => return Err("stream ended before the hello".into()),
            Err(e) => return Err(format!("stream failed before the hello: {e}")),
        };
        if head.len() < 4 {
            let take = (4 - head.len()).min(n);
            head.extend_from_slice(&buf[..take]);
            if head.len() == 4 {
                let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
                if len > MAX_HELLO {
                    return Err(format!(
                        "hello of {len} bytes exceeds the limit of {MAX_HELLO}"
                    ));
                }
            }
        }
        framer.push(&buf[..n]);
        match framer.next_message() {
            Ok(Some(m)) => return Ok((m, framer)),
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
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
) {
    let _done = cx.done.clone();
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
    // The hello: one stream, one framed message, in time.
    let opened = tokio::select! {
        r = tokio::time::timeout_at(deadline, async {
            let (send, mut recv) = connection.accept_bi().await.map_err(|e| (None, e.to_string()))?;
            match read_hello(&mut recv).await {
                Ok((hello, framer)) => Ok((send, recv, hello, framer)),
                Err(e) => Err((Some(send), e)),
            }
        }) => r,
        _ = shutting_down(&mut shutdown) => {
            refuse(&connection, None, KickReason::ServerShutdown).await;
            return;
        }
    };
    let (mut send, recv, hello, framer) = match opened {
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
    let room_name = match decode_client_reliable(&hello) {
        Ok(ClientReliable::Hello(h)) => h.room,
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
    let (writer_tx, writer_rx) = mpsc::channel(WRITER_QUEUE);
    let peer = Peer {
        connection: connection.clone(),
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
    forward(conn, &connection, recv, framer, &room, cx.base).await;
    let _ = room.cmds.send(RoomCmd::Gone { conn }).await;
    debug!("connection over");
}

/// Hands a connection to its room, creating the room if needed.
fn join_room<R: NetRules>(
    cx: &Arc<Context<R>>,
    name: &str,
    conn: ConnId,
    peer: Peer,
    hello: Vec<u8>,
) -> Result<RoomInbox, KickReason> {
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
            let (tx, rx, datagrams) = RoomInbox::new();
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
                    room_task::run(room_name, task_cx, rx, datagrams, config).await;
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
    tx.cmds
        .try_send(RoomCmd::Join { conn, peer, hello })
        .map_err(|_| KickReason::RoomClosed("room is too busy to take a join".into()))?;
    Ok(tx)
}

/// Forwards a joined connection's stream messages and datagrams to its
/// room until the connection ends.
async fn forward(
    conn: ConnId,
    connection: &quinn::Connection,
    mut recv: quinn::RecvStream,
    mut framer: StreamFramer,
    room: &RoomInbox,
    base: Instant,
) {
    let mut buf = vec![0u8; 64 << 10];
    let mut stream_open = true;
    loop {
        // Messages already framed go first (the hello may have company).
        loop {
            match framer.next_message() {
                Ok(Some(bytes)) => {
                    if room
                        .cmds
                        .send(RoomCmd::Reliable { conn, bytes })
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let reason = KickReason::BadMessage(e.to_string());
                    let _ = room.cmds.send(RoomCmd::Kick { conn, reason }).await;
                    // Wait for the room's close.
                    connection.closed().await;
                    return;
                }
            }
        }
        tokio::select! {
            r = recv.read(&mut buf), if stream_open => match r {
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
        }
    }
}

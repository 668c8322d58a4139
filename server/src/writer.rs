//! One task per connection writes the room's reliable messages to its
//! stream, packs snapshots off the room's thread, and closes the
//! connection: it sends the kick, waits (briefly) for the client to
//! acknowledge it, then closes with the kick as the close reason, so the
//! client learns why even if the stream data is lost with the connection.

use crate::monitor::Monitor;
use bitroom_protocol::{
    encode_server_reliable, KickReason, ServerReliable, SnapshotJob, StreamFramer,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::error;

/// What the writer task of a connection is asked to do.
#[derive(Debug)]
pub(crate) enum WriterMsg {
    /// A message for the stream (unframed).
    Data(Vec<u8>),
    /// A snapshot's messages, packed here (on a blocking thread) unless a
    /// writer sharing the job packed it already: packing is milliseconds
    /// for large rooms, and the room's tick must not wait for it.
    Snapshot(SnapshotJob),
    /// Finish the stream and close the connection with this reason,
    /// writing the kick message first when `kick`.
    Close { reason: KickReason, kick: bool },
}

/// Messages a connection's writer holds before the client counts as too
/// slow (a big snapshot is ~a few dozen chunks).
pub(crate) const WRITER_QUEUE: usize = 1024;
/// How long a closing connection waits for its last messages to arrive.
const CLOSE_LINGER: Duration = Duration::from_millis(800);

/// A close reason carrying the kick (clients decode it).
pub(crate) fn close_reason(reason: &KickReason) -> Vec<u8> {
    let bytes = encode_server_reliable(&ServerReliable::Kick(reason.clone()));
    if bytes.len() <= 512 {
        bytes
    } else {
        encode_server_reliable(&ServerReliable::Kick(KickReason::BadMessage(
            "(reason too long)".into(),
        )))
    }
}

/// Closes a connection at once, with the kick as its reason.
pub(crate) fn close_now(connection: &quinn::Connection, reason: &KickReason) {
    let code = match reason {
        KickReason::Left | KickReason::ServerShutdown | KickReason::Replaced => 0u8,
        _ => 1,
    };
    connection.close(code.into(), &close_reason(reason));
}

/// Finishes the stream, gives the client a moment to acknowledge it, and
/// closes the connection.
pub(crate) async fn close_after(
    connection: &quinn::Connection,
    send: &mut quinn::SendStream,
    reason: &KickReason,
) {
    let _ = send.finish();
    let _ = tokio::time::timeout(CLOSE_LINGER, send.stopped()).await;
    close_now(connection, reason);
}

/// Sends the kick on the stream, then closes (see [`close_after`]).
pub(crate) async fn kick_and_close(
    connection: &quinn::Connection,
    send: &mut quinn::SendStream,
    reason: &KickReason,
) {
    let msg = encode_server_reliable(&ServerReliable::Kick(reason.clone()));
    let _ = send.write_all(&StreamFramer::frame(&msg)).await;
    close_after(connection, send, reason).await;
}

/// Writes the room's messages to one connection's stream until told to
/// close (or until the room drops its end).
pub(crate) async fn run(
    connection: quinn::Connection,
    mut send: quinn::SendStream,
    mut rx: mpsc::Receiver<WriterMsg>,
    monitor: Arc<Monitor>,
    _done: mpsc::Sender<()>,
) {
    while let Some(m) = rx.recv().await {
        match m {
            WriterMsg::Data(bytes) => {
                if send.write_all(&StreamFramer::frame(&bytes)).await.is_err() {
                    return;
                }
            }
            WriterMsg::Snapshot(job) => {
                let job = if job.is_packed() {
                    job
                } else {
                    let packing = tokio::task::spawn_blocking(move || {
                        job.messages();
                        job
                    });
                    match packing.await {
                        Ok(job) => job,
                        Err(e) => {
                            error!("packing a snapshot failed: {e}");
                            close_now(
                                &connection,
                                &KickReason::RoomClosed("snapshot failed".into()),
                            );
                            return;
                        }
                    }
                };
                for msg in job.messages() {
                    if send.write_all(&StreamFramer::frame(msg)).await.is_err() {
                        return;
                    }
                    monitor.bytes_out(msg.len() as u64 + 4);
                }
            }
            WriterMsg::Close { reason, kick } => {
                if kick {
                    kick_and_close(&connection, &mut send, &reason).await;
                } else {
                    close_after(&connection, &mut send, &reason).await;
                }
                return;
            }
        }
    }
    // The room is gone without closing us (it was dropped): say so.
    close_now(&connection, &KickReason::RoomClosed("room stopped".into()));
}

//! One task per connection writes the room's reliable messages to its
//! link, packs snapshots off the room's thread, and closes the link: it
//! sends the kick, waits (briefly) for the client to have it, then closes
//! with the kick as the reason, so the client learns why even if the
//! stream data is lost with the connection. The same task serves every
//! transport ([`crate::link`]).

use crate::link::{Link, LinkWriter};
use crate::monitor::Monitor;
use bitroom_protocol::{encode_server_reliable, KickReason, ServerReliable, SnapshotJob};
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

/// A close reason carrying the kick (native clients decode it).
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

/// Finishes the stream, gives the client a moment to read it, and closes
/// the link.
pub(crate) async fn close_after(
    link: &dyn Link,
    writer: &mut impl LinkWriter,
    reason: &KickReason,
) {
    writer.finish(CLOSE_LINGER).await;
    link.close(reason);
}

/// Sends the kick on the stream, then closes (see [`close_after`]).
pub(crate) async fn kick_and_close(
    link: &dyn Link,
    writer: &mut impl LinkWriter,
    reason: &KickReason,
) {
    let msg = encode_server_reliable(&ServerReliable::Kick(reason.clone()));
    let _ = writer.send(&msg).await;
    close_after(link, writer, reason).await;
}

/// Writes the room's messages to one connection until told to close (or
/// until the room drops its end).
pub(crate) async fn run(
    link: Arc<dyn Link>,
    mut writer: impl LinkWriter,
    mut rx: mpsc::Receiver<WriterMsg>,
    monitor: Arc<Monitor>,
    _done: mpsc::Sender<()>,
) {
    while let Some(m) = rx.recv().await {
        match m {
            WriterMsg::Data(bytes) => {
                if writer.send(&bytes).await.is_err() {
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
                            link.close(&KickReason::RoomClosed("snapshot failed".into()));
                            return;
                        }
                    }
                };
                for msg in job.messages() {
                    if writer.send(msg).await.is_err() {
                        return;
                    }
                    monitor.bytes_out(msg.len() as u64 + 4);
                }
            }
            WriterMsg::Close { reason, kick } => {
                if kick {
                    kick_and_close(&*link, &mut writer, &reason).await;
                } else {
                    close_after(&*link, &mut writer, &reason).await;
                }
                return;
            }
        }
    }
    // The room is gone without closing us (it was dropped): say so.
    link.close(&KickReason::RoomClosed("room stopped".into()));
}

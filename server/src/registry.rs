//! The rooms by name, each reached through its inbox ([`RoomInbox`]):
//! what connections send their room.

use crate::limits::Reservation;
use crate::link::Link;
use crate::writer::WriterMsg;
use bitroom_protocol::{ConnId, Grant, KickReason, Micros, BASE_CLIENT_MESSAGE};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;

/// A connection as its room sees it (whatever the transport).
#[derive(Debug)]
pub(crate) struct Peer {
    pub link: Arc<dyn Link>,
    pub writer: mpsc::Sender<WriterMsg>,
}

/// A room's two queues. Commands wake the room at once. Datagrams of
/// inputs and acks do not: the room takes them just before its next tick
/// (each carries its arrival time, so the room sees what it would have seen
/// taking them one by one), which saves a task wake-up per datagram, i.e.
/// one per client per tick. Pings, whose pongs measure the round trip, go
/// with the commands.
#[derive(Clone, Debug)]
pub(crate) struct RoomInbox {
    pub cmds: mpsc::Sender<RoomCmd>,
    pub datagrams: mpsc::Sender<RoomCmd>,
    /// The largest message a joined client may send
    /// ([`ServerRoom::max_client_message`](bitroom_protocol::ServerRoom::max_client_message)),
    /// kept current by the room's task: connections refuse longer length
    /// prefixes before reading the message.
    pub max_message: Arc<AtomicUsize>,
}

impl RoomInbox {
    /// A new inbox and the room's ends of it (commands, datagrams).
    pub(crate) fn new() -> (RoomInbox, mpsc::Receiver<RoomCmd>, mpsc::Receiver<RoomCmd>) {
        let (cmds, cmd_rx) = mpsc::channel(ROOM_QUEUE);
        let (datagrams, datagram_rx) = mpsc::channel(ROOM_QUEUE);
        let max_message = Arc::new(AtomicUsize::new(BASE_CLIENT_MESSAGE));
        let inbox = RoomInbox {
            cmds,
            datagrams,
            max_message,
        };
        (inbox, cmd_rx, datagram_rx)
    }
}

/// Work for a room.
#[derive(Debug)]
pub(crate) enum RoomCmd {
    /// A connection that said hello to this room; the hello passed the
    /// server's checks ([`crate::admission`]) and its token granted this.
    Join {
        conn: ConnId,
        peer: Peer,
        hello: Vec<u8>,
        grant: Option<Grant>,
    },
    /// A complete reliable message, with the budget it holds until the
    /// room has taken it.
    Reliable {
        conn: ConnId,
        bytes: Vec<u8>,
        held: Option<Reservation>,
    },
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

/// Commands (and, apart, datagrams) queued per room.
pub(crate) const ROOM_QUEUE: usize = 4096;

/// The open rooms. A room is created by the first hello naming it that
/// passed every check, and removes itself when it closes; both happen
/// under the lock, so a join never lands in a room that is closing for
/// idleness.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    rooms: Mutex<BTreeMap<String, RoomInbox>>,
    created: AtomicU64,
}

impl Registry {
    /// The map, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, BTreeMap<String, RoomInbox>> {
        self.rooms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a room created; returns how many were created before it.
    pub(crate) fn count_created(&self) -> u64 {
        self.created.fetch_add(1, Ordering::Relaxed)
    }

    /// Rooms created since the server started.
    #[cfg_attr(not(feature = "agones"), allow(dead_code))]
    pub(crate) fn created(&self) -> u64 {
        self.created.load(Ordering::Relaxed)
    }
}

//! [`ClientHandle`]: what [`connect`](crate::connect) returns: inputs in,
//! the predicted and confirmed game out, events, counters, leaving.

use crate::conditioner::ConditionedSocket;
use crate::driver::{Command, Shared};
use crate::events::{Disconnect, Event, HandleStats};
use bitroom_protocol::{NetRules, ReconnectSecret, Welcome};
use bitroom_sim::game::{Game, GameSnapshot};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A joined session (see the crate docs). Dropping it closes the
/// connection without leaving (the slot is kept for a reconnect for the
/// server's grace period).
pub struct ClientHandle<R: NetRules> {
    shared: Arc<Shared<R>>,
    events: mpsc::Receiver<Event>,
    commands: mpsc::UnboundedSender<Command>,
    connection: quinn::Connection,
    welcome: Welcome,
    task: Option<JoinHandle<()>>,
    socket: Option<Arc<ConditionedSocket>>,
}

impl<R: NetRules> fmt::Debug for ClientHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandle")
            .field("remote", &self.connection.remote_address())
            .field("welcome", &self.welcome)
            .finish()
    }
}

impl<R: NetRules> ClientHandle<R> {
    /// A handle on a welcomed session driven by `task`.
    pub(crate) fn new(
        shared: Arc<Shared<R>>,
        events: mpsc::Receiver<Event>,
        commands: mpsc::UnboundedSender<Command>,
        connection: quinn::Connection,
        welcome: Welcome,
        task: JoinHandle<()>,
        socket: Option<Arc<ConditionedSocket>>,
    ) -> ClientHandle<R> {
        ClientHandle {
            shared,
            events,
            commands,
            connection,
            welcome,
            task: Some(task),
            socket,
        }
    }
}

impl<R: NetRules> ClientHandle<R> {
    /// The welcome: slot, slots, tick rate, reconnect secret.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// Our slot (`None`: spectator).
    pub fn slot(&self) -> Option<u8> {
        self.welcome.slot
    }

    /// Present it in [`ConnectOptions::reconnect`](crate::ConnectOptions::reconnect) to reclaim this slot.
    pub fn reconnect_secret(&self) -> ReconnectSecret {
        self.welcome.secret
    }

    /// The input from the next tick on (held until changed). An input
    /// that encodes to more than the game's
    /// [`Input::MAX_ENCODED`](bitroom_sim::game::Input::MAX_ENCODED) is
    /// refused and counted (`stats().session.refused_inputs`).
    pub fn set_input(&self, input: R::Input) {
        self.shared.session().set_input(input);
    }

    /// Lends the present game (predicted; `None` before the snapshot).
    pub fn with_game<T>(&self, f: impl FnOnce(Option<&Game<R>>) -> T) -> T {
        f(self.shared.session().game())
    }

    /// Lends the confirmed state (the newest tick with the server's inputs).
    pub fn with_confirmed<T>(&self, f: impl FnOnce(Option<&GameSnapshot<R>>) -> T) -> T {
        f(self.shared.session().confirmed())
    }

    /// Whether the session is in a room and in sync.
    pub fn is_playing(&self) -> bool {
        self.shared.session().is_playing()
    }

    /// Counters: RTT, rollbacks, desyncs, bytes.
    pub fn stats(&self) -> HandleStats {
        let session = self.shared.session().stats();
        let q = self.connection.stats();
        HandleStats {
            session,
            path_rtt: self.connection.rtt(),
            udp_tx: q.udp_tx.bytes,
            udp_rx: q.udp_rx.bytes,
            dropped_events: self.shared.dropped_events.load(Ordering::Relaxed),
            quic: q,
        }
    }

    /// The link conditioner's socket, when one is in use.
    pub fn conditioner(&self) -> Option<&Arc<ConditionedSocket>> {
        self.socket.as_ref()
    }

    /// The next event; `None` once the session is over and all events were
    /// read.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// An event if one is waiting.
    pub fn try_event(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }

    /// Why the session ended, once it has.
    pub fn disconnected(&self) -> Option<Disconnect> {
        self.shared.disconnected()
    }

    /// Leaves the room for good (the slot is freed) and waits up to `wait`
    /// for the server to confirm.
    pub async fn leave(mut self, wait: Duration) -> Option<Disconnect> {
        let _ = self.commands.send(Command::Leave);
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(wait, &mut task).await.is_err() {
                let _ = self.commands.send(Command::Close);
                let _ = task.await;
            }
        }
        self.shared.disconnected()
    }

    /// Closes the connection without leaving: the server keeps the slot
    /// for its grace period, so a reconnect with [`ClientHandle::token`]
    /// gets it back.
    pub async fn close(mut self) {
        let _ = self.commands.send(Command::Close);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl<R: NetRules> Drop for ClientHandle<R> {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Close);
    }
}

//! A simulated network for the sans-IO state machines: a virtual clock
//! and, per direction of every client's link, the link model the client's
//! conditioner uses on real sockets ([`LinkModel`]: latency, jitter,
//! uniform and bursty loss, duplication, reordering, a bandwidth cap, a
//! scheduled outage), all from a seed. Reliable messages are delayed but
//! never lost and kept in order (a loss costs a retransmission). One
//! [`ServerRoom`] and any number of [`ClientSession`]s run in-process, so a
//! 3000-tick, 4-client, lossy run takes seconds and fails the same way
//! every time.

use bitroom_client::link_model::{LinkModel, LinkProfile, LinkStats};
use bitroom_protocol::{
    ClientConfig, ClientEvent, ClientSession, ClientTransmit, ConnId, Micros, NetRules, Output,
    RoomConfig, RoomEvent, ServerRoom,
};
use bitroom_sim::game::Rules;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// One direction of a link: a [`LinkProfile`] (time zero of its outage is
/// the simulation's start).
#[derive(Clone, Copy, Debug)]
pub struct LinkConfig {
    /// The profile.
    pub profile: LinkProfile,
}

impl LinkConfig {
    /// A perfect link with a fixed delay.
    pub fn delay(latency: Micros) -> LinkConfig {
        LinkConfig {
            profile: LinkProfile {
                latency: Duration::from_micros(latency),
                ..LinkProfile::default()
            },
        }
    }

    /// Delay, jitter and loss (percent).
    pub fn lossy(latency: Micros, jitter: Micros, loss_percent: u32) -> LinkConfig {
        LinkConfig {
            profile: LinkProfile {
                latency: Duration::from_micros(latency),
                jitter: Duration::from_micros(jitter),
                loss_ppm: loss_percent * 10_000,
                ..LinkProfile::default()
            },
        }
    }
}

impl From<LinkProfile> for LinkConfig {
    fn from(profile: LinkProfile) -> LinkConfig {
        LinkConfig { profile }
    }
}

#[derive(Debug)]
struct LinkState {
    model: LinkModel,
    sent_bytes: u64,
    sent_datagrams: u64,
}

impl LinkState {
    fn new(config: LinkConfig, seed: u64, salt: u64) -> LinkState {
        let profile = LinkProfile {
            seed: config.profile.seed ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ..config.profile
        };
        LinkState {
            model: LinkModel::new(profile, salt),
            sent_bytes: 0,
            sent_datagrams: 0,
        }
    }

    /// Delivery times for a datagram (empty: lost).
    fn datagram(&mut self, now: Micros, len: usize) -> Vec<Micros> {
        self.sent_bytes += len as u64;
        self.sent_datagrams += 1;
        self.model.datagram(now, len)
    }

    /// Delivery time of a reliable message.
    fn reliable(&mut self, now: Micros, len: usize) -> Micros {
        self.sent_bytes += len as u64;
        self.model.reliable(now, len)
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Delivery {
    ToServer {
        client: usize,
        conn: ConnId,
        reliable: bool,
        bytes: Vec<u8>,
    },
    ToClient {
        client: usize,
        conn: ConnId,
        reliable: bool,
        bytes: Vec<u8>,
    },
    Disconnect {
        client: usize,
        conn: ConnId,
    },
}

/// Chooses a client's input each tick.
pub type InputFn<R> = Box<dyn FnMut(&ClientSession<R>) -> <R as Rules>::Input>;

/// A simulated client.
#[allow(missing_debug_implementations)] // holds an input closure
pub struct SimClient<R: Rules> {
    /// The session (None while disconnected).
    pub session: Option<ClientSession<R>>,
    /// Current connection id.
    pub conn: ConnId,
    /// Every event, with the virtual time it was seen.
    pub events: Vec<(Micros, ClientEvent)>,
    /// Client → server link.
    up: LinkState,
    /// Server → client link.
    down: LinkState,
    input: Option<InputFn<R>>,
    /// The client's clock is frozen until then (simulates a stall).
    frozen_until: Micros,
    /// Virtual CPU time per tick the client simulates (0: free).
    step_cost: Micros,
    /// The client is busy computing until then: deliveries and timers
    /// wait (a single-threaded client short of CPU, such as a page).
    busy_until: Micros,
    /// Ticks simulated so far (stepped and re-simulated), as charged.
    steps_charged: u64,
    /// When this client's datagrams were sent and arrived, once
    /// [`NetSim::trace_datagrams`] turned it on.
    pub datagram_trace: Option<Vec<(Micros, DatagramEvent)>>,
}

/// A point in a datagram's journey ([`SimClient::datagram_trace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramEvent {
    /// The client sent one.
    UpSent,
    /// One from the client reached the server.
    UpArrived,
    /// The server sent one to the client.
    DownSent,
    /// One from the server reached the client.
    DownArrived,
}

impl<R: Rules> SimClient<R> {
    fn trace(&mut self, at: Micros, e: DatagramEvent) {
        if let Some(t) = self.datagram_trace.as_mut() {
            t.push((at, e));
        }
    }
}

impl<R: Rules> SimClient<R> {
    /// Bytes the server sent to this client (payloads, all connections).
    pub fn bytes_down(&self) -> u64 {
        self.down.sent_bytes
    }

    /// Bytes the client sent (payloads, all connections).
    pub fn bytes_up(&self) -> u64 {
        self.up.sent_bytes
    }

    /// Datagrams the client sent.
    pub fn datagrams_up(&self) -> u64 {
        self.up.sent_datagrams
    }

    /// Datagrams the server sent to the client.
    pub fn datagrams_down(&self) -> u64 {
        self.down.sent_datagrams
    }

    /// Datagrams lost on the way down.
    pub fn lost_down(&self) -> u64 {
        self.down.model.stats().dropped
    }

    /// What the link models did: up (client → server) and down.
    pub fn link_stats(&self) -> (LinkStats, LinkStats) {
        (self.up.model.stats(), self.down.model.stats())
    }

    /// Desync events seen.
    pub fn desyncs(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, ClientEvent::Desync { .. }))
            .count()
    }

    /// Charges the ticks the session simulated since the last charge.
    fn charge(&mut self, now: Micros) {
        let Some(tl) = self.session.as_mut().and_then(|s| s.timeline_mut()) else {
            return;
        };
        let st = tl.stats();
        let steps = st.advanced + st.resimulated;
        let new = steps.saturating_sub(self.steps_charged);
        self.steps_charged = steps;
        if self.step_cost > 0 && new > 0 {
            self.busy_until = self.busy_until.max(now) + new * self.step_cost;
        }
    }

    /// The session; panics when disconnected (tests only).
    pub fn session(&self) -> &ClientSession<R> {
        self.session.as_ref().expect("client connected")
    }

    /// The session, mutable; panics when disconnected (tests only).
    pub fn session_mut(&mut self) -> &mut ClientSession<R> {
        self.session.as_mut().expect("client connected")
    }
}

/// The simulated network with one room.
#[allow(missing_debug_implementations)] // holds input closures
pub struct NetSim<R: NetRules> {
    /// Virtual time.
    pub now: Micros,
    /// The room.
    pub server: ServerRoom<R>,
    /// The clients.
    pub clients: Vec<SimClient<R>>,
    /// Every room event, with its time.
    pub room_events: Vec<(Micros, RoomEvent)>,
    /// Server state hash at every tick (index = tick - 1).
    pub server_hashes: Vec<u64>,
    rules: R,
    queue: BinaryHeap<Reverse<(Micros, u64, Delivery)>>,
    seq: u64,
    next_conn: ConnId,
    seed: u64,
}

impl<R: NetRules> NetSim<R> {
    /// A room at time 0.
    pub fn new(rules: R, config: RoomConfig, seed: u64) -> NetSim<R> {
        NetSim {
            now: 0,
            server: ServerRoom::new(rules.clone(), config, 0),
            clients: Vec::new(),
            room_events: Vec::new(),
            server_hashes: Vec::new(),
            rules,
            queue: BinaryHeap::new(),
            seq: 0,
            next_conn: 1,
            seed,
        }
    }

    /// Adds a client that connects now; returns its index.
    pub fn add_client(
        &mut self,
        config: ClientConfig,
        up: LinkConfig,
        down: LinkConfig,
        input: Option<InputFn<R>>,
    ) -> usize {
        let i = self.clients.len();
        let salt = (i as u64) << 1;
        self.clients.push(SimClient {
            session: None,
            conn: 0,
            events: Vec::new(),
            up: LinkState::new(up, self.seed, salt),
            down: LinkState::new(down, self.seed, salt | 1),
            input,
            frozen_until: 0,
            step_cost: 0,
            busy_until: 0,
            steps_charged: 0,
            datagram_trace: None,
        });
        self.connect(i, config);
        i
    }

    /// (Re)connects client `i` with a new connection.
    pub fn connect(&mut self, i: usize, config: ClientConfig) {
        let conn = self.next_conn;
        self.next_conn += 1;
        self.server.handle_connect(self.now, conn);
        let c = &mut self.clients[i];
        c.conn = conn;
        c.steps_charged = 0;
        c.session = Some(ClientSession::new(self.rules.clone(), config, self.now));
        self.flush_client(i);
    }

    /// Drops client `i`'s connection without a goodbye (the server notices
    /// after the one-way latency).
    pub fn drop_connection(&mut self, i: usize) {
        let c = &mut self.clients[i];
        c.session = None;
        let at = self.now + c.up.model.profile().latency.as_micros() as Micros;
        let conn = c.conn;
        self.push(at, Delivery::Disconnect { client: i, conn });
    }

    /// Freezes client `i`'s clock for `d` (it handles nothing meanwhile).
    pub fn freeze(&mut self, i: usize, d: Micros) {
        self.clients[i].frozen_until = self.now + d;
    }

    /// Makes every tick client `i` simulates (stepped or re-simulated)
    /// take `cost` of its virtual time: while it computes, datagrams and
    /// messages wait for it in order and its timers fire late, as on a
    /// single-threaded client short of CPU (a browser page on a loaded
    /// machine).
    pub fn set_step_cost(&mut self, i: usize, cost: Micros) {
        self.clients[i].step_cost = cost;
    }

    /// Records when client `i`'s datagrams are sent and arrive, both ways
    /// ([`SimClient::datagram_trace`]).
    pub fn trace_datagrams(&mut self, i: usize) {
        self.clients[i].datagram_trace = Some(Vec::new());
    }

    /// Keeps client `i` busy for `d` from now (a long frame, a garbage
    /// collection): unlike [`NetSim::freeze`], datagrams wait for it.
    pub fn hiccup(&mut self, i: usize, d: Micros) {
        let c = &mut self.clients[i];
        c.busy_until = c.busy_until.max(self.now) + d;
    }

    fn push(&mut self, at: Micros, d: Delivery) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, d)));
    }

    fn flush_client(&mut self, i: usize) {
        // A busy client's messages leave once its computation is done.
        let now = self.now.max(self.clients[i].busy_until);
        loop {
            let c = &mut self.clients[i];
            let Some(s) = c.session.as_mut() else {
                return;
            };
            while let Some(e) = s.poll_event() {
                c.events.push((now, e));
            }
            let Some(t) = s.poll_transmit() else {
                return;
            };
            let conn = c.conn;
            match t {
                ClientTransmit::Reliable(bytes) => {
                    let at = c.up.reliable(now, bytes.len());
                    self.push(
                        at,
                        Delivery::ToServer {
                            client: i,
                            conn,
                            reliable: true,
                            bytes,
                        },
                    );
                }
                ClientTransmit::Datagram(bytes) => {
                    c.trace(now, DatagramEvent::UpSent);
                    for at in c.up.datagram(now, bytes.len()) {
                        self.push(
                            at,
                            Delivery::ToServer {
                                client: i,
                                conn,
                                reliable: false,
                                bytes: bytes.clone(),
                            },
                        );
                    }
                }
            }
        }
    }

    fn client_of(&self, conn: ConnId) -> Option<usize> {
        self.clients.iter().position(|c| c.conn == conn)
    }

    fn flush_server(&mut self) {
        let now = self.now;
        while let Some(e) = self.server.poll_event() {
            self.room_events.push((now, e));
        }
        while let Some(o) = self.server.poll_output() {
            let (conn, reliable, messages) = match o {
                Output::Reliable { conn, bytes } => (conn, true, vec![bytes]),
                // Packed here, in virtual no-time, like the server's writer.
                Output::Snapshot { conn, job } => (conn, true, job.messages().to_vec()),
                Output::Datagram { conn, bytes } => (conn, false, vec![bytes]),
                Output::Close { .. } => continue,
            };
            let Some(i) = self.client_of(conn) else {
                continue;
            };
            for bytes in messages {
                if !reliable {
                    self.clients[i].trace(now, DatagramEvent::DownSent);
                }
                let link = &mut self.clients[i].down;
                let arrivals = if reliable {
                    vec![link.reliable(now, bytes.len())]
                } else {
                    link.datagram(now, bytes.len())
                };
                for at in arrivals {
                    self.push(
                        at,
                        Delivery::ToClient {
                            client: i,
                            conn,
                            reliable,
                            bytes: bytes.clone(),
                        },
                    );
                }
            }
        }
    }

    /// Runs until virtual time `until`.
    pub fn run_until(&mut self, until: Micros) {
        loop {
            let next_tick = self.server.deadline(self.server.tick_number() + 1);
            let next_packet = self.queue.peek().map(|Reverse((t, _, _))| *t);
            let next_client = self
                .clients
                .iter()
                .filter_map(|c| {
                    let t = c.session.as_ref()?.poll_timeout()?;
                    Some(t.max(c.frozen_until).max(c.busy_until))
                })
                .min();
            let next = [Some(next_tick), next_packet, next_client]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(until);
            if next > until {
                self.now = until;
                return;
            }
            self.now = self.now.max(next);
            let now = self.now;
            if next_packet == Some(next) {
                let Reverse((_, _, d)) = self.queue.pop().expect("peeked");
                self.deliver(d);
            } else if next_tick == next {
                self.server.tick(now);
                self.server_hashes.push(self.server.game().state_hash());
                self.flush_server();
            } else {
                for i in 0..self.clients.len() {
                    let c = &mut self.clients[i];
                    if c.frozen_until > now || c.busy_until > now {
                        continue;
                    }
                    let Some(s) = c.session.as_mut() else {
                        continue;
                    };
                    if s.poll_timeout().is_some_and(|t| t <= now) {
                        if let Some(f) = c.input.as_mut() {
                            let input = f(s);
                            s.set_input(input);
                        }
                        s.handle_timeout(now);
                        c.charge(now);
                        self.flush_client(i);
                    }
                }
            }
        }
    }

    fn deliver(&mut self, d: Delivery) {
        let now = self.now;
        match d {
            Delivery::ToServer {
                client,
                conn,
                reliable,
                bytes,
            } => {
                if !reliable && self.clients[client].conn == conn {
                    self.clients[client].trace(now, DatagramEvent::UpArrived);
                }
                if reliable {
                    self.server.handle_reliable(now, conn, &bytes);
                } else {
                    self.server.handle_datagram(now, conn, &bytes);
                }
                self.flush_server();
            }
            Delivery::ToClient {
                client,
                conn,
                reliable,
                bytes,
            } => {
                let c = &mut self.clients[client];
                // An old connection's leftovers are dropped, and so are
                // datagrams to a stalled client (its socket buffer would
                // drop them); reliable data waits for a stalled client,
                // everything for a busy one.
                if c.conn != conn || (c.frozen_until > now && !reliable) {
                    return;
                }
                let resume = if c.frozen_until > now {
                    c.frozen_until
                } else {
                    c.busy_until
                };
                if resume > now {
                    self.push(
                        resume,
                        Delivery::ToClient {
                            client,
                            conn,
                            reliable,
                            bytes,
                        },
                    );
                    return;
                }
                let Some(s) = c.session.as_mut() else {
                    return;
                };
                if reliable {
                    s.handle_reliable(now, &bytes);
                } else {
                    s.handle_datagram(now, &bytes);
                }
                c.charge(now);
                if !reliable {
                    c.trace(now, DatagramEvent::DownArrived);
                }
                self.flush_client(client);
            }
            Delivery::Disconnect { conn, .. } => {
                self.server.handle_disconnect(now, conn);
                self.flush_server();
            }
        }
    }

    /// Checks every client's verified hashes against the server's record:
    /// returns the number of confirmed ticks compared for client `i`.
    pub fn compare_confirmed(&self, i: usize) -> Result<u64, String> {
        let s = self.clients[i].session();
        let Some(tl_tick) = s.confirmed().map(|c| c.tick()) else {
            return Err("no confirmed state".into());
        };
        let ours = s.confirmed().map(|c| c.state_hash());
        let theirs = tl_tick
            .checked_sub(1)
            .and_then(|t| self.server_hashes.get(t as usize))
            .copied();
        if tl_tick > 0 && ours != theirs {
            return Err(format!(
                "client {i} confirmed tick {tl_tick}: {ours:x?} vs server {theirs:x?}"
            ));
        }
        Ok(s.stats().verified)
    }
}

//! A simulated network for the sans-IO state machines: a virtual clock,
//! per-link latency, jitter, loss, duplication, reordering and a bandwidth
//! cap, reliable messages delayed but kept in order, all from a seed. One
//! [`ServerRoom`] and any number of [`ClientSession`]s run in-process, so a
//! 3000-tick, 4-client, lossy run takes seconds and fails the same way
//! every time.

use bitroom_protocol::{
    ClientConfig, ClientEvent, ClientSession, ClientTransmit, ConnId, Micros, NetRules, Output,
    RoomConfig, RoomEvent, ServerRoom,
};
use bitroom_sim::game::Rules;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One direction of a link.
#[derive(Clone, Copy, Debug)]
pub struct LinkConfig {
    /// One-way base delay.
    pub latency: Micros,
    /// Extra delay, uniform in `0..=jitter`.
    pub jitter: Micros,
    /// Datagram loss probability, in parts per million.
    pub loss_ppm: u32,
    /// Datagram duplication probability (ppm).
    pub dup_ppm: u32,
    /// Probability (ppm) that a datagram is held back by an extra
    /// `latency / 2 .. latency` so later ones overtake it.
    pub reorder_ppm: u32,
    /// Bytes per second (0: unlimited); excess queues, and a queue longer
    /// than 500 ms drops the datagram.
    pub bandwidth: u64,
}

impl LinkConfig {
    /// A perfect link with a fixed delay.
    pub fn delay(latency: Micros) -> LinkConfig {
        LinkConfig {
            latency,
            jitter: 0,
            loss_ppm: 0,
            dup_ppm: 0,
            reorder_ppm: 0,
            bandwidth: 0,
        }
    }

    /// Delay, jitter and loss (percent).
    pub fn lossy(latency: Micros, jitter: Micros, loss_percent: u32) -> LinkConfig {
        LinkConfig {
            latency,
            jitter,
            loss_ppm: loss_percent * 10_000,
            ..LinkConfig::delay(latency)
        }
    }
}

/// A seeded generator (xorshift64*), the harness's only randomness.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..=max`.
    pub fn below(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else {
            self.next_u64() % (max + 1)
        }
    }

    /// True with probability `ppm` / 1e6.
    pub fn chance(&mut self, ppm: u32) -> bool {
        (self.next_u64() % 1_000_000) < u64::from(ppm)
    }
}

#[derive(Debug)]
struct LinkState {
    config: LinkConfig,
    free_at: Micros,
    last_reliable: Micros,
    sent_bytes: u64,
    sent_datagrams: u64,
    lost: u64,
}

impl LinkState {
    fn new(config: LinkConfig) -> LinkState {
        LinkState {
            config,
            free_at: 0,
            last_reliable: 0,
            sent_bytes: 0,
            sent_datagrams: 0,
            lost: 0,
        }
    }

    /// Delivery times for a datagram (empty: lost).
    fn datagram(&mut self, now: Micros, len: usize, rng: &mut Rng) -> Vec<Micros> {
        self.sent_bytes += len as u64;
        self.sent_datagrams += 1;
        let c = self.config;
        let mut start = now;
        if let Some(per_byte) = (len as u64 * 1_000_000).checked_div(c.bandwidth) {
            start = self.free_at.max(now);
            if start > now + 500_000 {
                self.lost += 1;
                return Vec::new();
            }
            self.free_at = start + per_byte;
        }
        if rng.chance(c.loss_ppm) {
            self.lost += 1;
            return Vec::new();
        }
        let copies = if rng.chance(c.dup_ppm) { 2 } else { 1 };
        (0..copies)
            .map(|_| {
                let mut d = start + c.latency + rng.below(c.jitter);
                if rng.chance(c.reorder_ppm) {
                    d += c.latency / 2 + rng.below(c.latency / 2);
                }
                d
            })
            .collect()
    }

    /// Delivery time of a reliable message: never lost (a lost packet costs
    /// a retransmission delay) and never ahead of an earlier one.
    fn reliable(&mut self, now: Micros, len: usize, rng: &mut Rng) -> Micros {
        self.sent_bytes += len as u64;
        let c = self.config;
        let mut d = now + c.latency + rng.below(c.jitter);
        if rng.chance(c.loss_ppm) {
            d += 2 * c.latency + 20_000;
        }
        if let Some(cost) = (len as u64 * 1_000_000).checked_div(c.bandwidth) {
            let start = self.free_at.max(now);
            self.free_at = start + cost;
            d = d.max(self.free_at + c.latency);
        }
        d = d.max(self.last_reliable);
        self.last_reliable = d;
        d
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
}

impl<R: Rules> SimClient<R> {
    /// Bytes the server sent to this client (payloads, all connections).
    pub fn bytes_down(&self) -> u64 {
        self.down.sent_bytes
    }

    /// Datagrams lost on the way down.
    pub fn lost_down(&self) -> u64 {
        self.down.lost
    }

    /// Desync events seen.
    pub fn desyncs(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, ClientEvent::Desync { .. }))
            .count()
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
    rng: Rng,
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
            rng: Rng::new(seed),
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
        self.clients.push(SimClient {
            session: None,
            conn: 0,
            events: Vec::new(),
            up: LinkState::new(up),
            down: LinkState::new(down),
            input,
            frozen_until: 0,
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
        c.session = Some(ClientSession::new(self.rules.clone(), config, self.now));
        self.flush_client(i);
    }

    /// Drops client `i`'s connection without a goodbye (the server notices
    /// after the one-way latency).
    pub fn drop_connection(&mut self, i: usize) {
        let c = &mut self.clients[i];
        c.session = None;
        let at = self.now + c.up.config.latency;
        let conn = c.conn;
        self.push(at, Delivery::Disconnect { client: i, conn });
    }

    /// Freezes client `i`'s clock for `d` (it handles nothing meanwhile).
    pub fn freeze(&mut self, i: usize, d: Micros) {
        self.clients[i].frozen_until = self.now + d;
    }

    fn push(&mut self, at: Micros, d: Delivery) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, d)));
    }

    fn flush_client(&mut self, i: usize) {
        let now = self.now;
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
                    let at = c.up.reliable(now, bytes.len(), &mut self.rng);
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
                    for at in c.up.datagram(now, bytes.len(), &mut self.rng) {
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
                let link = &mut self.clients[i].down;
                let arrivals = if reliable {
                    vec![link.reliable(now, bytes.len(), &mut self.rng)]
                } else {
                    link.datagram(now, bytes.len(), &mut self.rng)
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
                    Some(t.max(c.frozen_until))
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
                    if c.frozen_until > now {
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
                conn,
                reliable,
                bytes,
                ..
            } => {
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
                if c.conn != conn || c.frozen_until > now {
                    // An old connection's leftovers, or a stalled client
                    // (its socket buffer would drop datagrams; reliable
                    // data waits).
                    if reliable && c.conn == conn {
                        let at = c.frozen_until;
                        self.push(
                            at,
                            Delivery::ToClient {
                                client,
                                conn,
                                reliable,
                                bytes,
                            },
                        );
                    }
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

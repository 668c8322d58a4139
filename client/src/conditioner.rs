//! A userspace link conditioner: the [`link_model`](crate::link_model)
//! (latency, jitter, uniform and bursty loss, duplication, reordering, a
//! bandwidth cap, a scheduled outage) applied to the UDP socket under a
//! quinn endpoint (this kernel has no netem).
//!
//! [`ConditionedSocket`] wraps the runtime's socket and implements quinn's
//! `AsyncUdpSocket`. Every datagram, in either direction, independently,
//! goes through that direction's [`LinkModel`]; so the round trip is about
//! `2 × latency`. All choices come from a seeded generator: one seed, one
//! sequence of decisions (delivery times still depend on the OS
//! scheduler). Time zero of the model (the outage's reference) is when the
//! socket was made.

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

pub use crate::link_model::{
    GilbertElliott, LinkProfile as ConditionerConfig, LinkStats as ConditionerStats, Outage,
    Percent, RateLimit,
};
use crate::link_model::{LinkModel, Micros};

/// A datagram waiting for its delivery time.
#[derive(Debug)]
struct Held {
    at: Instant,
    seq: u64,
    data: Vec<u8>,
    /// Source (inbound) or destination (outbound).
    addr: SocketAddr,
    ecn: Option<quinn::udp::EcnCodepoint>,
    /// Local address: the receiver's (inbound) or the sender's (outbound).
    local_ip: Option<IpAddr>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Held) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    /// Earliest first in a max-heap.
    fn cmp(&self, other: &Held) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// One direction: its model and the time origin.
#[derive(Debug)]
struct Direction {
    model: LinkModel,
    origin: Instant,
    seq: u64,
}

impl Direction {
    /// Delivery instants (and sequence numbers) of a datagram of `len`
    /// bytes arriving now (empty: dropped).
    fn decide(&mut self, now: Instant, len: usize) -> Vec<(Instant, u64)> {
        let t = now.saturating_duration_since(self.origin).as_micros() as Micros;
        self.model
            .datagram(t, len)
            .into_iter()
            .map(|at| {
                self.seq += 1;
                (self.origin + Duration::from_micros(at), self.seq)
            })
            .collect()
    }
}

#[derive(Debug)]
struct Inbound {
    direction: Direction,
    queue: BinaryHeap<Held>,
    timer: Option<Pin<Box<Sleep>>>,
}

/// A UDP socket for quinn with a link conditioner in both directions.
#[derive(Debug)]
pub struct ConditionedSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    inbound: Mutex<Inbound>,
    outbound: Mutex<Direction>,
    to_sender: mpsc::UnboundedSender<Held>,
    origin: Instant,
    config: ConditionerConfig,
}

impl ConditionedSocket {
    /// Wraps `inner`; spawns the task that sends delayed datagrams (needs a
    /// tokio runtime).
    pub fn new(
        inner: Arc<dyn AsyncUdpSocket>,
        config: ConditionerConfig,
    ) -> Arc<ConditionedSocket> {
        let (to_sender, rx) = mpsc::unbounded_channel();
        tokio::spawn(send_delayed(inner.clone(), rx));
        let origin = Instant::now();
        let direction = |salt: u64| Direction {
            model: LinkModel::new(config, salt),
            origin,
            seq: 0,
        };
        Arc::new(ConditionedSocket {
            inner,
            inbound: Mutex::new(Inbound {
                direction: direction(0x1b0d),
                queue: BinaryHeap::new(),
                timer: None,
            }),
            outbound: Mutex::new(direction(0x0b0d)),
            to_sender,
            origin,
            config,
        })
    }

    /// What the conditioner did so far (both directions).
    pub fn stats(&self) -> ConditionerStats {
        let mut s = self
            .inbound
            .lock()
            .expect("conditioner lock")
            .direction
            .model
            .stats();
        s += self
            .outbound
            .lock()
            .expect("conditioner lock")
            .model
            .stats();
        s
    }

    /// The profile.
    pub fn config(&self) -> &ConditionerConfig {
        &self.config
    }

    /// The scheduled outage's start and end, if there is one.
    pub fn outage(&self) -> Option<(Instant, Instant)> {
        self.config.outage_window().map(|(s, e)| {
            (
                self.origin + Duration::from_micros(s),
                self.origin + Duration::from_micros(e),
            )
        })
    }
}

/// Sends outbound datagrams when their time comes.
async fn send_delayed(socket: Arc<dyn AsyncUdpSocket>, mut rx: mpsc::UnboundedReceiver<Held>) {
    let mut queue: BinaryHeap<Held> = BinaryHeap::new();
    let mut poller = socket.clone().create_io_poller();
    loop {
        let next = queue.peek().map(|h| h.at);
        tokio::select! {
            held = rx.recv() => match held {
                Some(h) => queue.push(h),
                None => return,
            },
            _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                let now = Instant::now();
                while queue.peek().is_some_and(|h| h.at <= now) {
                    let h = queue.pop().expect("peeked");
                    let transmit = Transmit {
                        destination: h.addr,
                        ecn: h.ecn,
                        contents: &h.data,
                        segment_size: None,
                        src_ip: h.local_ip,
                    };
                    loop {
                        match socket.try_send(&transmit) {
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                                let _ = std::future::poll_fn(|cx| poller.as_mut().poll_writable(cx)).await;
                            }
                            // Like a real network: a failed send is a lost datagram.
                            _ => break,
                        }
                    }
                }
            }
        }
    }
}

impl AsyncUdpSocket for ConditionedSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        let now = Instant::now();
        let seg = transmit
            .segment_size
            .unwrap_or(transmit.contents.len())
            .max(1);
        let mut direction = self.outbound.lock().expect("conditioner lock");
        for chunk in transmit.contents.chunks(seg) {
            for (at, seq) in direction.decide(now, chunk.len()) {
                let held = Held {
                    at,
                    seq,
                    data: chunk.to_vec(),
                    addr: transmit.destination,
                    ecn: transmit.ecn,
                    local_ip: transmit.src_ip,
                };
                // The sender task lives as long as this socket.
                let _ = self.to_sender.send(held);
            }
        }
        Ok(())
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let mut st = self.inbound.lock().expect("conditioner lock");
        let st = &mut *st;
        // Take in everything the socket has (this also registers the
        // waker for more).
        loop {
            match self.inner.poll_recv(cx, bufs, meta) {
                Poll::Ready(Ok(n)) => {
                    let now = Instant::now();
                    for (m, buf) in meta.iter().zip(bufs.iter()).take(n) {
                        let stride = m.stride.max(1);
                        for d in buf[..m.len].chunks(stride) {
                            for (at, seq) in st.direction.decide(now, d.len()) {
                                st.queue.push(Held {
                                    at,
                                    seq,
                                    data: d.to_vec(),
                                    addr: m.addr,
                                    ecn: m.ecn,
                                    local_ip: m.dst_ip,
                                });
                            }
                        }
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => break,
            }
        }
        loop {
            let now = Instant::now();
            let mut n = 0;
            while n < bufs.len().min(meta.len()) {
                match st.queue.peek() {
                    Some(h) if h.at <= now && h.data.len() <= bufs[n].len() => {}
                    Some(h) if h.at <= now => {
                        // Larger than the caller's buffer: cannot happen
                        // with quinn's buffers; drop it like the kernel would.
                        st.queue.pop();
                        continue;
                    }
                    _ => break,
                }
                let h = st.queue.pop().expect("peeked");
                bufs[n][..h.data.len()].copy_from_slice(&h.data);
                meta[n] = RecvMeta {
                    addr: h.addr,
                    len: h.data.len(),
                    stride: h.data.len(),
                    ecn: h.ecn,
                    dst_ip: h.local_ip,
                };
                n += 1;
            }
            if n > 0 {
                return Poll::Ready(Ok(n));
            }
            let Some(next) = st.queue.peek().map(|h| h.at) else {
                return Poll::Pending;
            };
            let timer = st
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(next)));
            timer.as_mut().reset(next);
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_receive_segments(&self) -> usize {
        // Buffers are sized for the inner socket's GRO batches; we hand
        // out single datagrams.
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// A client endpoint bound to `bind` whose socket runs through a
/// conditioner. Returns the socket too, for its stats.
///
/// # Errors
/// The socket could not be bound.
pub fn conditioned_endpoint(
    bind: SocketAddr,
    config: ConditionerConfig,
) -> io::Result<(quinn::Endpoint, Arc<ConditionedSocket>)> {
    let runtime = quinn::default_runtime()
        .ok_or_else(|| io::Error::other("no tokio runtime for the conditioned endpoint"))?;
    let std_socket = std::net::UdpSocket::bind(bind)?;
    let inner = runtime.wrap_udp_socket(std_socket)?;
    let socket = ConditionedSocket::new(inner, config);
    let endpoint = quinn::Endpoint::new_with_abstract_socket(
        bitroom_transport::single_connection_endpoint_config(),
        None,
        socket.clone(),
        runtime,
    )?;
    Ok((endpoint, socket))
}

//! A userspace link conditioner: latency, jitter, loss, duplication and
//! reordering applied to the UDP socket under a quinn endpoint (this
//! kernel has no netem).
//!
//! [`ConditionedSocket`] wraps the runtime's socket and implements quinn's
//! `AsyncUdpSocket`. Every datagram, in either direction, independently:
//! is dropped with probability `loss`; otherwise is delivered after
//! `latency + uniform(0..=jitter)`, but not before the datagram sent ahead
//! of it (jitter varies the delay without reordering, like a queue; QUIC
//! would read heavy reordering as loss); with probability `reorder` is
//! held back a further `latency/2..latency` (at least 5 ms) so later ones
//! overtake it; with probability `dup` is delivered twice. So the round
//! trip is about `2 × latency`. All choices
//! come from a seeded generator: one seed, one sequence of decisions
//! (delivery times still depend on the OS scheduler).

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

/// Settings, applied to each direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConditionerConfig {
    /// One-way base delay.
    pub latency: Duration,
    /// Extra delay, uniform in `0..=jitter`.
    pub jitter: Duration,
    /// Loss probability, parts per million.
    pub loss_ppm: u32,
    /// Duplication probability (ppm).
    pub dup_ppm: u32,
    /// Probability (ppm) that a datagram is held back so others overtake it.
    pub reorder_ppm: u32,
    /// Seed of the decisions.
    pub seed: u64,
}

impl Default for ConditionerConfig {
    fn default() -> ConditionerConfig {
        ConditionerConfig {
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            loss_ppm: 0,
            dup_ppm: 0,
            reorder_ppm: 0,
            seed: 1,
        }
    }
}

impl ConditionerConfig {
    /// Whether the conditioner changes anything.
    pub fn is_noop(&self) -> bool {
        self.latency.is_zero()
            && self.jitter.is_zero()
            && self.loss_ppm == 0
            && self.dup_ppm == 0
            && self.reorder_ppm == 0
    }
}

/// A probability written as a percentage, e.g. `5%`, `0.5%` or `2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Percent {
    /// Parts per million.
    pub ppm: u32,
}

impl FromStr for Percent {
    type Err = String;
    fn from_str(s: &str) -> Result<Percent, String> {
        let t = s.trim().trim_end_matches('%');
        // A float at the command-line edge only; the conditioner uses ppm.
        let v: f64 = t
            .parse()
            .map_err(|_| format!("{s:?} is not a percentage (e.g. 5% or 0.5%)"))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(format!("{s:?} is not between 0% and 100%"));
        }
        Ok(Percent {
            ppm: (v * 10_000.0).round() as u32,
        })
    }
}

/// Counters of what the conditioner did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConditionerStats {
    /// Datagrams that went through (either direction, before loss).
    pub datagrams: u64,
    /// Datagrams dropped.
    pub dropped: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Datagrams held back to be overtaken.
    pub reordered: u64,
}

#[derive(Debug, Default)]
struct Counters {
    datagrams: AtomicU64,
    dropped: AtomicU64,
    duplicated: AtomicU64,
    reordered: AtomicU64,
}

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

#[derive(Debug)]
struct Decider {
    config: ConditionerConfig,
    rng: SmallRng,
    seq: u64,
    /// Delivery time of the latest in-order datagram.
    last: Option<Instant>,
}

impl Decider {
    fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.rng.random_range(0..1_000_000) < ppm
    }

    /// Delivery times of one datagram (empty: lost).
    fn decide(&mut self, now: Instant, counters: &Counters) -> Vec<(Instant, u64)> {
        counters.datagrams.fetch_add(1, AtomicOrdering::Relaxed);
        let c = self.config;
        if self.chance(c.loss_ppm) {
            counters.dropped.fetch_add(1, AtomicOrdering::Relaxed);
            return Vec::new();
        }
        let copies = if self.chance(c.dup_ppm) {
            counters.duplicated.fetch_add(1, AtomicOrdering::Relaxed);
            2
        } else {
            1
        };
        let jitter = c.jitter.as_micros() as u64;
        let latency = c.latency.as_micros() as u64;
        (0..copies)
            .map(|_| {
                let d = latency + self.rng.random_range(0..=jitter);
                let mut at = now + Duration::from_micros(d);
                if let Some(last) = self.last {
                    at = at.max(last);
                }
                if self.chance(c.reorder_ppm) {
                    counters.reordered.fetch_add(1, AtomicOrdering::Relaxed);
                    let base = latency.max(10_000);
                    at += Duration::from_micros(self.rng.random_range(base / 2..=base));
                } else {
                    self.last = Some(at);
                }
                self.seq += 1;
                (at, self.seq)
            })
            .collect()
    }
}

#[derive(Debug)]
struct Inbound {
    decider: Decider,
    queue: BinaryHeap<Held>,
    timer: Option<Pin<Box<Sleep>>>,
}

/// A UDP socket for quinn with a link conditioner in both directions.
#[derive(Debug)]
pub struct ConditionedSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    inbound: Mutex<Inbound>,
    outbound: Mutex<Decider>,
    to_sender: mpsc::UnboundedSender<Held>,
    counters: Arc<Counters>,
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
        let decider = |salt: u64| Decider {
            config,
            rng: SmallRng::seed_from_u64(config.seed ^ salt),
            seq: 0,
            last: None,
        };
        Arc::new(ConditionedSocket {
            inner,
            inbound: Mutex::new(Inbound {
                decider: decider(0x1b0d),
                queue: BinaryHeap::new(),
                timer: None,
            }),
            outbound: Mutex::new(decider(0x0b0d)),
            to_sender,
            counters: Arc::new(Counters::default()),
        })
    }

    /// What the conditioner did so far.
    pub fn stats(&self) -> ConditionerStats {
        let c = &self.counters;
        ConditionerStats {
            datagrams: c.datagrams.load(AtomicOrdering::Relaxed),
            dropped: c.dropped.load(AtomicOrdering::Relaxed),
            duplicated: c.duplicated.load(AtomicOrdering::Relaxed),
            reordered: c.reordered.load(AtomicOrdering::Relaxed),
        }
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
        let mut decider = self.outbound.lock().expect("conditioner lock");
        for chunk in transmit.contents.chunks(seg) {
            for (at, seq) in decider.decide(now, &self.counters) {
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
                            for (at, seq) in st.decider.decide(now, &self.counters) {
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

impl fmt::Display for ConditionerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "latency {} ms, jitter {} ms, loss {}%, dup {}%, reorder {}% (each direction)",
            self.latency.as_millis(),
            self.jitter.as_millis(),
            self.loss_ppm as f64 / 10_000.0,
            self.dup_ppm as f64 / 10_000.0,
            self.reorder_ppm as f64 / 10_000.0
        )
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
        quinn::EndpointConfig::default(),
        None,
        socket.clone(),
        runtime,
    )?;
    Ok((endpoint, socket))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_parse() {
        assert_eq!("5%".parse::<Percent>().unwrap().ppm, 50_000);
        assert_eq!("0.5%".parse::<Percent>().unwrap().ppm, 5_000);
        assert_eq!("100".parse::<Percent>().unwrap().ppm, 1_000_000);
        assert!("101%".parse::<Percent>().is_err());
        assert!("-1%".parse::<Percent>().is_err());
        assert!("lots".parse::<Percent>().is_err());
    }

    #[test]
    fn decisions_follow_the_seed_and_rates() {
        let config = ConditionerConfig {
            latency: Duration::from_millis(100),
            jitter: Duration::from_millis(20),
            loss_ppm: 100_000,
            dup_ppm: 10_000,
            reorder_ppm: 0,
            seed: 7,
        };
        let run = || {
            let counters = Counters::default();
            let mut d = Decider {
                config,
                rng: SmallRng::seed_from_u64(7),
                seq: 0,
                last: None,
            };
            // One datagram per millisecond.
            let start = Instant::now();
            let delays: Vec<Vec<Duration>> = (0..10_000u64)
                .map(|i| {
                    let now = start + Duration::from_millis(i);
                    d.decide(now, &counters)
                        .into_iter()
                        .map(|(t, _)| t - now)
                        .collect()
                })
                .collect();
            (delays, counters.dropped.load(AtomicOrdering::Relaxed))
        };
        let (a, lost) = run();
        let (b, _) = run();
        assert_eq!(a, b, "same seed, same decisions");
        // 10 % loss of 10 000: well within 8..12 %.
        assert!((800..1200).contains(&lost), "lost {lost}");
        for d in a.iter().flatten() {
            assert!(*d >= Duration::from_millis(100) && *d <= Duration::from_millis(120));
        }
        assert!(a.iter().any(|d| d.len() == 2), "some duplicates");
        // Jitter does not reorder: delivery times never go backwards.
        let times: Vec<Duration> = a
            .iter()
            .enumerate()
            .flat_map(|(i, d)| d.iter().map(move |d| *d + Duration::from_millis(i as u64)))
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        let spread = a.iter().flatten().max().unwrap().as_micros()
            - a.iter().flatten().min().unwrap().as_micros();
        assert!(spread >= 15_000, "jitter varies the delay: {spread} µs");
    }
}

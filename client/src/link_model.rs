//! The link model behind the conditioner: what happens to each datagram
//! on one direction of a bad link, decided from a seed and the time.
//!
//! Sans-IO like the netcode: time comes in as [`Micros`] since the link
//! started, so the same model runs under the real socket wrapper
//! ([`ConditionedSocket`](crate::conditioner::ConditionedSocket)) and in
//! the simulated network (`bitroom-tests`' `netsim`), and a profile tried
//! with bots behaves as it does in the tests.
//!
//! Per datagram, in order:
//! 1. **outage**: during the scheduled outage everything is dropped;
//! 2. **rate** (a token bucket with a queue): the datagram leaves when the
//!    bucket has its bytes (IP and UDP headers counted); one that would
//!    wait longer than the queue holds is dropped (tail drop);
//! 3. **loss**: uniform (`loss_ppm`) and, when set, bursty
//!    ([`GilbertElliott`]);
//! 4. **delay**: `latency + uniform(0..=jitter)` from departure, never
//!    before the datagram ahead of it (jitter varies the delay like a
//!    queue and does not reorder: QUIC would read heavy reordering as
//!    loss); with probability `reorder_ppm` held back a further
//!    `latency/2 ..= latency` (at least 5 ms) so later ones overtake it;
//!    with probability `dup_ppm` delivered twice.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Time in microseconds since the link started.
pub type Micros = u64;

/// IPv4 + UDP header bytes a datagram costs on a rate-limited link.
pub const IP_UDP_HEADER: u64 = 28;

/// Bursty loss: a two-state Markov chain (Gilbert–Elliott). Each datagram
/// first moves the chain (good → bad with `enter_ppm`, bad → good with
/// `leave_ppm`), then is lost with the state's probability. Bursts last
/// `1e6 / leave_ppm` datagrams on average; the long-run loss is
/// `loss_bad · enter / (enter + leave)` (plus the good state's share).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GilbertElliott {
    /// Good → bad per datagram (ppm).
    pub enter_ppm: u32,
    /// Bad → good per datagram (ppm).
    pub leave_ppm: u32,
    /// Loss in the bad state (ppm).
    pub loss_bad_ppm: u32,
    /// Loss in the good state (ppm).
    pub loss_good_ppm: u32,
}

impl GilbertElliott {
    /// Long-run loss (ppm).
    pub fn mean_loss_ppm(&self) -> u32 {
        let (e, l) = (u64::from(self.enter_ppm), u64::from(self.leave_ppm));
        if e + l == 0 {
            return self.loss_good_ppm;
        }
        let bad = u64::from(self.loss_bad_ppm) * e / (e + l);
        let good = u64::from(self.loss_good_ppm) * l / (e + l);
        (bad + good) as u32
    }
}

/// `ENTER,LEAVE,LOSS_BAD[,LOSS_GOOD]` as percentages, e.g. `2%,25%,75%`.
impl FromStr for GilbertElliott {
    type Err = String;
    fn from_str(s: &str) -> Result<GilbertElliott, String> {
        let parts: Vec<&str> = s.split(',').collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(format!(
                "{s:?}: expected ENTER,LEAVE,LOSS_BAD[,LOSS_GOOD], e.g. 2%,25%,75%"
            ));
        }
        let p = |i: usize| -> Result<u32, String> {
            parts
                .get(i)
                .map_or(Ok(0), |v| v.parse::<Percent>().map(|p| p.ppm))
        };
        Ok(GilbertElliott {
            enter_ppm: p(0)?,
            leave_ppm: p(1)?,
            loss_bad_ppm: p(2)?,
            loss_good_ppm: p(3)?,
        })
    }
}

/// A scheduled outage: everything is dropped from `start` (since the link
/// started) for `length`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    /// When it starts, from the link's start.
    pub start: Duration,
    /// How long it lasts.
    pub length: Duration,
}

impl Outage {
    /// Start and end in link time.
    pub fn window(&self) -> (Micros, Micros) {
        let s = self.start.as_micros() as Micros;
        (s, s + self.length.as_micros() as Micros)
    }
}

/// `AT+LENGTH`, e.g. `45s+2s`.
impl FromStr for Outage {
    type Err = String;
    fn from_str(s: &str) -> Result<Outage, String> {
        let (at, len) = s
            .split_once('+')
            .ok_or_else(|| format!("{s:?}: expected AT+LENGTH, e.g. 45s+2s"))?;
        let d = |v: &str| humantime::parse_duration(v.trim()).map_err(|e| format!("{v:?}: {e}"));
        Ok(Outage {
            start: d(at)?,
            length: d(len)?,
        })
    }
}

/// A bandwidth cap: a token bucket of `burst` bytes filled at
/// `bytes_per_sec`, in front of a queue of `queue` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Rate (bytes per second, headers included).
    pub bytes_per_sec: u64,
    /// Bucket depth (bytes): what may leave at once after a quiet spell.
    pub burst: u64,
    /// Queue (bytes): a datagram that would wait behind more than this is
    /// dropped.
    pub queue: u64,
}

impl RateLimit {
    /// A cap at `bytes_per_sec` with a two-packet bucket and a queue of
    /// half a second.
    pub fn new(bytes_per_sec: u64) -> RateLimit {
        RateLimit {
            bytes_per_sec,
            burst: 3000,
            queue: bytes_per_sec / 2,
        }
    }
}

/// A rate such as `256kbit`, `1mbit`, `32kB` or `32000` (bytes), per
/// second (`/s` optional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Bytes per second.
    pub bytes_per_sec: u64,
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        let t = s.trim().trim_end_matches("/s").trim_end_matches("ps");
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        // A float at the command-line edge only.
        let v: f64 = num
            .parse()
            .map_err(|_| format!("{s:?} is not a rate (e.g. 256kbit or 32kB)"))?;
        let bits_per_unit = match unit.trim() {
            "" | "B" => 8.0,
            "kB" | "KB" => 8e3,
            "MB" => 8e6,
            "bit" => 1.0,
            "kbit" | "Kbit" => 1e3,
            "mbit" | "Mbit" => 1e6,
            u => {
                return Err(format!(
                    "{s:?}: unknown unit {u:?} (bit, kbit, mbit, B, kB, MB)"
                ))
            }
        };
        let bytes = (v * bits_per_unit / 8.0).round();
        if !(1.0..=1e12).contains(&bytes) {
            return Err(format!("{s:?} is out of range"));
        }
        Ok(Rate {
            bytes_per_sec: bytes as u64,
        })
    }
}

/// A byte count such as `16KB`, `64kB`, `1MB` or `2000`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl FromStr for Bytes {
    type Err = String;
    fn from_str(s: &str) -> Result<Bytes, String> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let v: u64 = num
            .parse()
            .map_err(|_| format!("{s:?} is not a size (e.g. 16KB)"))?;
        let mult = match unit.trim() {
            "" | "B" => 1,
            "kB" | "KB" | "KiB" => 1024,
            "MB" | "MiB" => 1 << 20,
            u => return Err(format!("{s:?}: unknown unit {u:?} (B, KB, MB)")),
        };
        Ok(Bytes(v.saturating_mul(mult)))
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
        // A float at the command-line edge only; the model uses ppm.
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

/// A link profile, applied to each direction independently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkProfile {
    /// One-way base delay.
    pub latency: Duration,
    /// Extra delay, uniform in `0..=jitter`.
    pub jitter: Duration,
    /// Uniform loss probability, parts per million.
    pub loss_ppm: u32,
    /// Duplication probability (ppm).
    pub dup_ppm: u32,
    /// Probability (ppm) that a datagram is held back so others overtake it.
    pub reorder_ppm: u32,
    /// Bursty loss on top of the uniform loss.
    pub burst: Option<GilbertElliott>,
    /// A scheduled outage.
    pub outage: Option<Outage>,
    /// A bandwidth cap.
    pub rate: Option<RateLimit>,
    /// Seed of the decisions.
    pub seed: u64,
}

impl Default for LinkProfile {
    fn default() -> LinkProfile {
        LinkProfile {
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            loss_ppm: 0,
            dup_ppm: 0,
            reorder_ppm: 0,
            burst: None,
            outage: None,
            rate: None,
            seed: 1,
        }
    }
}

impl LinkProfile {
    /// Whether the profile changes anything.
    pub fn is_noop(&self) -> bool {
        self.latency.is_zero()
            && self.jitter.is_zero()
            && self.loss_ppm == 0
            && self.dup_ppm == 0
            && self.reorder_ppm == 0
            && self.burst.is_none()
            && self.outage.is_none()
            && self.rate.is_none()
    }

    /// The outage's start and end in link time, if one is scheduled.
    pub fn outage_window(&self) -> Option<(Micros, Micros)> {
        self.outage.map(|o| o.window())
    }
}

impl fmt::Display for LinkProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |ppm: u32| f64::from(ppm) / 10_000.0;
        write!(
            f,
            "latency {} ms, jitter {} ms, loss {}%, dup {}%, reorder {}%",
            self.latency.as_millis(),
            self.jitter.as_millis(),
            pct(self.loss_ppm),
            pct(self.dup_ppm),
            pct(self.reorder_ppm)
        )?;
        if let Some(b) = self.burst {
            write!(
                f,
                ", bursty loss (enter {}%, leave {}%, {}% lost in bursts: {}% on average)",
                pct(b.enter_ppm),
                pct(b.leave_ppm),
                pct(b.loss_bad_ppm),
                pct(b.mean_loss_ppm())
            )?;
        }
        if let Some(r) = self.rate {
            write!(
                f,
                ", rate {} kbit/s (queue {} B)",
                r.bytes_per_sec * 8 / 1000,
                r.queue
            )?;
        }
        if let Some(o) = self.outage {
            write!(
                f,
                ", outage {:.1} s at {:.1} s",
                o.length.as_secs_f64(),
                o.start.as_secs_f64()
            )?;
        }
        f.write_str(" (each direction)")
    }
}

/// What the model did, per direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Datagrams offered.
    pub datagrams: u64,
    /// Datagrams dropped (any cause).
    pub dropped: u64,
    /// … of which during the outage.
    pub outage_dropped: u64,
    /// … of which because the rate limit's queue was full.
    pub queue_dropped: u64,
    /// … of which in a loss burst's bad state.
    pub burst_dropped: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Datagrams held back to be overtaken.
    pub reordered: u64,
}

impl std::ops::AddAssign for LinkStats {
    fn add_assign(&mut self, o: LinkStats) {
        self.datagrams += o.datagrams;
        self.dropped += o.dropped;
        self.outage_dropped += o.outage_dropped;
        self.queue_dropped += o.queue_dropped;
        self.burst_dropped += o.burst_dropped;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
    }
}

/// One direction of a link (see the module docs).
#[derive(Debug)]
pub struct LinkModel {
    profile: LinkProfile,
    rng: SmallRng,
    /// Delivery time of the latest in-order datagram.
    last: Option<Micros>,
    /// Delivery time of the latest reliable message.
    last_reliable: Micros,
    /// The loss chain is in its bad state.
    bad: bool,
    /// Token bucket: tokens (micro-bytes) at `bucket_at`, and when the
    /// queue's last datagram leaves.
    tokens: u64,
    bucket_at: Micros,
    queue_free_at: Micros,
    stats: LinkStats,
}

impl LinkModel {
    /// A direction of `profile`; `salt` tells directions (and links of one
    /// seed) apart.
    pub fn new(profile: LinkProfile, salt: u64) -> LinkModel {
        LinkModel {
            rng: SmallRng::seed_from_u64(profile.seed ^ salt),
            tokens: profile.rate.map_or(0, |r| r.burst * 1_000_000),
            profile,
            last: None,
            last_reliable: 0,
            bad: false,
            bucket_at: 0,
            queue_free_at: 0,
            stats: LinkStats::default(),
        }
    }

    /// The profile.
    pub fn profile(&self) -> &LinkProfile {
        &self.profile
    }

    /// What happened so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Whether the scheduled outage is on at `now`.
    pub fn is_down(&self, now: Micros) -> bool {
        self.profile
            .outage_window()
            .is_some_and(|(s, e)| (s..e).contains(&now))
    }

    fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.rng.random_range(0..1_000_000) < ppm
    }

    /// When a datagram of `len` bytes offered at `now` leaves the rate
    /// limiter (`now` without a cap), or `None` when its queue is full
    /// (`limit_queue`) — reliable data waits instead.
    fn depart(&mut self, now: Micros, len: usize, limit_queue: bool) -> Option<Micros> {
        let Some(r) = self.profile.rate else {
            return Some(now);
        };
        let rate = r.bytes_per_sec.max(1);
        let need = (len as u64 + IP_UDP_HEADER) * 1_000_000;
        let start = now.max(self.queue_free_at);
        let tokens =
            (self.tokens + (start - self.bucket_at.min(start)) * rate).min(r.burst * 1_000_000);
        let leave = if tokens >= need {
            start
        } else {
            start + (need - tokens).div_ceil(rate)
        };
        // Bytes waiting ahead of this one when it arrives.
        let waiting = (leave - now) * rate / 1_000_000;
        if limit_queue && waiting > r.queue {
            return None;
        }
        self.tokens = (tokens + (leave - start) * rate).saturating_sub(need);
        self.bucket_at = leave;
        self.queue_free_at = leave;
        Some(leave)
    }

    /// Moves the loss chain and draws this datagram's fate: lost?
    fn lost(&mut self) -> bool {
        if let Some(b) = self.profile.burst {
            self.bad = if self.bad {
                !self.chance(b.leave_ppm)
            } else {
                self.chance(b.enter_ppm)
            };
            let p = if self.bad {
                b.loss_bad_ppm
            } else {
                b.loss_good_ppm
            };
            if self.chance(p) {
                if self.bad {
                    self.stats.burst_dropped += 1;
                }
                return true;
            }
        }
        let p = self.profile.loss_ppm;
        self.chance(p)
    }

    /// Delivery times of a datagram of `len` bytes sent at `now` (empty:
    /// dropped; two: duplicated).
    pub fn datagram(&mut self, now: Micros, len: usize) -> Vec<Micros> {
        self.stats.datagrams += 1;
        if self.is_down(now) {
            self.stats.dropped += 1;
            self.stats.outage_dropped += 1;
            return Vec::new();
        }
        let Some(start) = self.depart(now, len, true) else {
            self.stats.dropped += 1;
            self.stats.queue_dropped += 1;
            return Vec::new();
        };
        if self.lost() {
            self.stats.dropped += 1;
            return Vec::new();
        }
        let copies = if self.chance(self.profile.dup_ppm) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        let latency = self.profile.latency.as_micros() as u64;
        let jitter = self.profile.jitter.as_micros() as u64;
        (0..copies)
            .map(|_| {
                let mut at = start + latency + self.rng.random_range(0..=jitter);
                if let Some(last) = self.last {
                    at = at.max(last);
                }
                if self.chance(self.profile.reorder_ppm) {
                    self.stats.reordered += 1;
                    let base = latency.max(10_000);
                    at += self.rng.random_range(base / 2..=base);
                } else {
                    self.last = Some(at);
                }
                at
            })
            .collect()
    }

    /// Delivery time of a reliable message of `len` bytes sent at `now`,
    /// for simulations without a transport: never lost (a loss costs a
    /// retransmission a round trip and 20 ms later, an outage waits for
    /// its end), never ahead of an earlier one, and paced by the rate
    /// limit without its queue limit.
    pub fn reliable(&mut self, now: Micros, len: usize) -> Micros {
        let latency = self.profile.latency.as_micros() as u64;
        let jitter = self.profile.jitter.as_micros() as u64;
        let mut t = now;
        // Bounded: a link that loses everything delivers after 64 tries.
        for _ in 0..64 {
            if let Some((_, end)) = self.profile.outage_window().filter(|_| self.is_down(t)) {
                t = end;
            }
            let start = self.depart(t, len, false).unwrap_or(t);
            if !self.lost() {
                t = start;
                break;
            }
            t = start + 2 * latency + jitter + 20_000;
        }
        let at = (t + latency + self.rng.random_range(0..=jitter)).max(self.last_reliable);
        self.last_reliable = at;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> LinkProfile {
        LinkProfile {
            latency: Duration::from_millis(100),
            jitter: Duration::from_millis(20),
            loss_ppm: 100_000,
            dup_ppm: 10_000,
            seed: 7,
            ..LinkProfile::default()
        }
    }

    /// One datagram per millisecond for `n` ms: the delays of each.
    fn run(p: LinkProfile, n: u64, len: usize) -> (Vec<Vec<Micros>>, LinkStats) {
        let mut m = LinkModel::new(p, 0);
        let d = (0..n)
            .map(|i| {
                let now = i * 1000;
                m.datagram(now, len).into_iter().map(|t| t - now).collect()
            })
            .collect();
        (d, m.stats())
    }

    #[test]
    fn decisions_follow_the_seed_and_rates() {
        let (a, st) = run(profile(), 10_000, 100);
        let (b, _) = run(profile(), 10_000, 100);
        assert_eq!(a, b, "same seed, same decisions");
        // 10 % loss of 10 000: well within 8..12 %.
        assert!((800..1200).contains(&st.dropped), "{st:?}");
        for d in a.iter().flatten() {
            assert!((100_000..=120_000).contains(d), "{d}");
        }
        assert!(a.iter().any(|d| d.len() == 2), "some duplicates");
        // Jitter does not reorder: delivery times never go backwards.
        let times: Vec<Micros> = a
            .iter()
            .enumerate()
            .flat_map(|(i, d)| d.iter().map(move |d| d + i as u64 * 1000))
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        let spread = a.iter().flatten().max().unwrap() - a.iter().flatten().min().unwrap();
        assert!(spread >= 15_000, "jitter varies the delay: {spread} µs");
    }

    #[test]
    fn bursty_loss_comes_in_bursts_at_its_mean_rate() {
        let ge = GilbertElliott {
            enter_ppm: 20_000,
            leave_ppm: 250_000,
            loss_bad_ppm: 750_000,
            loss_good_ppm: 0,
        };
        assert_eq!(ge.mean_loss_ppm(), 55_555);
        let p = LinkProfile {
            burst: Some(ge),
            ..LinkProfile::default()
        };
        let (d, st) = run(p, 100_000, 100);
        let lost: Vec<bool> = d.iter().map(Vec::is_empty).collect();
        let rate = st.dropped as f64 / 100_000.0;
        assert!((0.045..0.065).contains(&rate), "loss {rate}");
        assert_eq!(st.burst_dropped, st.dropped);
        // Given a loss, the next datagram is lost far more often than on
        // average (uniform loss would give the mean).
        let after_loss = lost.windows(2).filter(|w| w[0]).count();
        let both = lost.windows(2).filter(|w| w[0] && w[1]).count();
        let cond = both as f64 / after_loss as f64;
        assert!(cond > 0.4, "P(loss | loss) = {cond}");
    }

    #[test]
    fn an_outage_drops_everything_in_its_window() {
        let p = LinkProfile {
            latency: Duration::from_millis(10),
            outage: Some("2s+1s".parse().unwrap()),
            ..LinkProfile::default()
        };
        let (d, st) = run(p, 4000, 100);
        for (ms, dl) in d.iter().enumerate() {
            assert_eq!(dl.is_empty(), (2000..3000).contains(&ms), "at {ms} ms");
        }
        assert_eq!(st.outage_dropped, 1000);
        // Reliable data sent during the outage arrives after it.
        let mut m = LinkModel::new(p, 0);
        assert_eq!(m.reliable(2_500_000, 100), 3_010_000);
    }

    #[test]
    fn the_rate_limit_queues_then_drops() {
        // 100 kB/s with a 10 kB queue, offered 1000 B every ms (1 MB/s).
        let p = LinkProfile {
            rate: Some(RateLimit {
                bytes_per_sec: 100_000,
                burst: 3000,
                queue: 10_000,
            }),
            ..LinkProfile::default()
        };
        let (d, st) = run(p, 2000, 1000 - IP_UDP_HEADER as usize);
        let delivered = d.iter().filter(|d| !d.is_empty()).count() as u64;
        // 2 s at 100 kB/s is 200 datagrams, plus the bucket and the queue.
        assert!((200..=215).contains(&delivered), "{delivered} delivered");
        assert_eq!(st.queue_dropped, 2000 - delivered);
        // Nothing waits longer than the queue holds (0.1 s) plus a packet.
        assert!(d.iter().flatten().all(|&w| w <= 111_000), "{d:?}");
        // Below the rate nothing waits.
        let (d, st) = run(p, 1000, 50);
        assert_eq!(st.dropped, 0);
        assert!(d.iter().flatten().all(|&w| w == 0));
    }

    #[test]
    fn profiles_parse() {
        assert_eq!("5%".parse::<Percent>().unwrap().ppm, 50_000);
        assert_eq!("0.5%".parse::<Percent>().unwrap().ppm, 5_000);
        assert_eq!("100".parse::<Percent>().unwrap().ppm, 1_000_000);
        assert!("101%".parse::<Percent>().is_err());
        assert!("-1%".parse::<Percent>().is_err());
        assert!("lots".parse::<Percent>().is_err());
        assert_eq!("256kbit".parse::<Rate>().unwrap().bytes_per_sec, 32_000);
        assert_eq!("1mbit/s".parse::<Rate>().unwrap().bytes_per_sec, 125_000);
        assert_eq!("32kB".parse::<Rate>().unwrap().bytes_per_sec, 32_000);
        assert!("fast".parse::<Rate>().is_err());
        assert_eq!("16KB".parse::<Bytes>().unwrap(), Bytes(16_384));
        let ge: GilbertElliott = "2%,25%,75%".parse().unwrap();
        assert_eq!(
            (
                ge.enter_ppm,
                ge.leave_ppm,
                ge.loss_bad_ppm,
                ge.loss_good_ppm
            ),
            (20_000, 250_000, 750_000, 0)
        );
        assert!("2%,25%".parse::<GilbertElliott>().is_err());
        let o: Outage = "45s+2s".parse().unwrap();
        assert_eq!(o.window(), (45_000_000, 47_000_000));
        assert!("45s".parse::<Outage>().is_err());
    }
}

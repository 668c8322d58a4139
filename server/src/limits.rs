//! The server's own accounting of what peers cost, beside quinn's knobs
//! (`docs/limits.md` lists every bound and where it is enforced):
//!
//! - [`Peers`]: connections per source address and half-open connections
//!   (QUIC handshake or hello not finished), each held by a guard that
//!   gives its place back when dropped;
//! - [`PendingBudget`]: bytes reserved for unfinished reliable messages
//!   over all connections; a message is read only once its declared length
//!   is reserved ([`Reservation`]);
//! - [`Creations`]: rooms created per source address and per token user in
//!   the last minute.

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a connection attempt is turned away before the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TurnedAway {
    /// Too many half-open connections.
    HalfOpen,
    /// Too many connections from this address.
    PerAddress,
}

impl TurnedAway {
    /// Metric label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            TurnedAway::HalfOpen => "half_open",
            TurnedAway::PerAddress => "per_address",
        }
    }
}

/// Connections per source address and half-open connections.
#[derive(Debug)]
pub(crate) struct Peers {
    max_per_address: usize,
    max_half_open: usize,
    by_address: Arc<Mutex<BTreeMap<IpAddr, usize>>>,
    half_open: Arc<AtomicUsize>,
}

/// A connection's place in its address's count; given back when dropped.
#[derive(Debug)]
pub(crate) struct AddressPlace {
    ip: IpAddr,
    by_address: Arc<Mutex<BTreeMap<IpAddr, usize>>>,
}

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let mut map = lock(&self.by_address);
        if let Some(n) = map.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

/// A half-open connection's place; given back when dropped (once the
/// hello is taken or refused, or the connection ends).
#[derive(Debug)]
pub(crate) struct HalfOpenPlace(Arc<AtomicUsize>);

impl Drop for HalfOpenPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Peers {
    /// Limits of 0 mean none.
    pub(crate) fn new(max_per_address: usize, max_half_open: usize) -> Peers {
        Peers {
            max_per_address: if max_per_address == 0 {
                usize::MAX
            } else {
                max_per_address
            },
            max_half_open: if max_half_open == 0 {
                usize::MAX
            } else {
                max_half_open
            },
            by_address: Arc::default(),
            half_open: Arc::default(),
        }
    }

    /// Half-open connections now.
    pub(crate) fn half_open(&self) -> usize {
        self.half_open.load(Ordering::Relaxed)
    }

    /// Whether half-open connections are past half their limit: new
    /// attempts from unproven addresses get a stateless retry first.
    pub(crate) fn under_pressure(&self) -> bool {
        self.half_open() >= self.max_half_open / 2
    }

    /// Places for a new connection from `ip`, or why it is turned away.
    pub(crate) fn admit(&self, ip: IpAddr) -> Result<(AddressPlace, HalfOpenPlace), TurnedAway> {
        if self.half_open.fetch_add(1, Ordering::Relaxed) >= self.max_half_open {
            self.half_open.fetch_sub(1, Ordering::Relaxed);
            return Err(TurnedAway::HalfOpen);
        }
        let half_open = HalfOpenPlace(self.half_open.clone());
        let mut map = lock(&self.by_address);
        let n = map.entry(ip).or_default();
        if *n >= self.max_per_address {
            return Err(TurnedAway::PerAddress);
        }
        *n += 1;
        drop(map);
        Ok((
            AddressPlace {
                ip,
                by_address: self.by_address.clone(),
            },
            half_open,
        ))
    }
}

/// Bytes reserved for unfinished reliable messages, over all connections.
#[derive(Debug)]
pub(crate) struct PendingBudget {
    limit: usize,
    used: Arc<AtomicUsize>,
}

/// Bytes of the budget held for one message; given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    bytes: usize,
    used: Arc<AtomicUsize>,
}

impl Reservation {
    /// The bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.used.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl PendingBudget {
    /// A budget of `limit` bytes whose use is counted in `used` (shared
    /// with the monitor).
    pub(crate) fn new(limit: usize, used: Arc<AtomicUsize>) -> PendingBudget {
        PendingBudget { limit, used }
    }

    /// Bytes reserved now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` if they fit under the limit.
    pub(crate) fn reserve(&self, bytes: usize) -> Option<Reservation> {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&u| u <= self.limit)
            })
            .ok()?;
        Some(Reservation {
            bytes,
            used: self.used.clone(),
        })
    }
}

/// Rooms created per key (source address or token user) in the last
/// [`CREATION_WINDOW`].
#[derive(Debug)]
pub(crate) struct Creations {
    per_window: usize,
    log: Mutex<BTreeMap<CreationKey, VecDeque<Instant>>>,
}

/// Who created a room.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CreationKey {
    Address(IpAddr),
    User(Vec<u8>),
}

/// The window room creations are counted over.
pub(crate) const CREATION_WINDOW: Duration = Duration::from_secs(60);

impl Creations {
    /// At most `per_window` creations per key per [`CREATION_WINDOW`] (0:
    /// no limit).
    pub(crate) fn new(per_window: usize) -> Creations {
        Creations {
            per_window,
            log: Mutex::default(),
        }
    }

    /// Counts a creation by every key, or refuses it (counting nothing)
    /// when one of them has used its share.
    pub(crate) fn try_create(&self, keys: &[CreationKey], now: Instant) -> bool {
        if self.per_window == 0 {
            return true;
        }
        let mut log = lock(&self.log);
        // Forget what is out of the window (the log holds at most the
        // rooms created in the last minute).
        log.retain(|_, times| {
            while times
                .front()
                .is_some_and(|&t| now.duration_since(t) >= CREATION_WINDOW)
            {
                times.pop_front();
            }
            !times.is_empty()
        });
        if keys
            .iter()
            .any(|k| log.get(k).is_some_and(|t| t.len() >= self.per_window))
        {
            return false;
        }
        for k in keys {
            log.entry(k.clone()).or_default().push_back(now);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_given_back() {
        let peers = Peers::new(2, 3);
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let b: IpAddr = "127.0.0.3".parse().unwrap();
        let (pa1, h1) = peers.admit(a).unwrap();
        let (_pa2, h2) = peers.admit(a).unwrap();
        assert_eq!(peers.admit(a).unwrap_err(), TurnedAway::PerAddress);
        assert_eq!(peers.half_open(), 2, "a refused attempt holds nothing");
        let (_pb, h3) = peers.admit(b).unwrap();
        assert_eq!(peers.admit(b).unwrap_err(), TurnedAway::HalfOpen);
        drop((h1, h2, h3));
        assert_eq!(peers.half_open(), 0);
        assert_eq!(peers.admit(a).unwrap_err(), TurnedAway::PerAddress);
        drop(pa1);
        assert!(peers.admit(a).is_ok());
    }

    #[test]
    fn the_budget_holds_what_fits() {
        let budget = PendingBudget::new(100, Arc::default());
        let a = budget.reserve(60).unwrap();
        assert!(budget.reserve(41).is_none());
        let b = budget.reserve(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!((budget.used(), b.bytes()), (40, 40));
        assert!(budget.reserve(usize::MAX).is_none(), "no overflow");
    }

    #[test]
    fn creations_are_counted_per_key_over_a_minute() {
        let c = Creations::new(2);
        let t0 = Instant::now();
        let addr = CreationKey::Address("10.0.0.1".parse().unwrap());
        let ann = CreationKey::User(b"ann".to_vec());
        let bob = CreationKey::User(b"bob".to_vec());
        assert!(c.try_create(&[addr.clone(), ann.clone()], t0));
        assert!(c.try_create(&[addr.clone(), bob.clone()], t0));
        // The address has used its share, whoever the user.
        assert!(!c.try_create(&[addr.clone(), bob.clone()], t0));
        let other = CreationKey::Address("10.0.0.2".parse().unwrap());
        assert!(c.try_create(&[other.clone(), ann.clone()], t0));
        // Ann has used hers, whatever the address.
        let third = CreationKey::Address("10.0.0.3".parse().unwrap());
        assert!(!c.try_create(&[third, ann.clone()], t0));
        let later = t0 + CREATION_WINDOW;
        assert!(c.try_create(&[addr, ann], later));
        assert!(Creations::new(0).try_create(&[other], t0), "0: no limit");
    }
}

//! `serve --agones`: the server as an Agones GameServer (feature
//! `agones`; docs/fleet.md has the whole flow).
//!
//! One task talks to the SDK sidecar over gRPC on localhost (the official
//! `agones` crate):
//! 1. connect (the crate waits up to 30 s for the sidecar), annotate and
//!    label the GameServer with the server id, annotate it with the
//!    certificate's SHA-256 (what clients pin), set the capacities of the
//!    Counters `rooms` (`max_rooms`) and `players` (`max_rooms` × seats);
//!    with `--cpu-budget` the capacities then follow the capacity the
//!    server measures ([`crate::capacity`]), never below the Counter's
//!    count (Agones would cut the count down to it);
//! 2. `Ready` (the endpoint is bound before [`crate::Server::run`] starts
//!    this task, so the server already listens);
//! 3. every [`PERIOD`], woken by the same [`Ticker`](crate::ticker) that
//!    wakes the rooms: a `Health` ping when due, unless a room has not
//!    ticked for [`AgonesConfig::stall`](crate::AgonesConfig::stall) (then
//!    the pings stop until it ticks again, and Agones marks the server
//!    Unhealthy after the Fleet's `failureThreshold` periods); the Counters
//!    brought up to date; the GameServer's state followed
//!    (`WatchGameServer`);
//! 4. `Shutdown` once the GameServer is Allocated and has been empty
//!    (no rooms, no players, no reserved room) for
//!    [`AgonesConfig::idle_shutdown`](crate::AgonesConfig::idle_shutdown),
//!    and the server stops; also when the server stops for any other
//!    reason (SIGTERM).
//!
//! The `rooms` Counter is shared with the allocator: a
//! GameServerAllocation raises it by one to reserve a room (Agones'
//! high-density pattern), and the first player's join opens the room.
//! The server never sets it outright (that would race with allocations):
//! it sends differences, worked out by [`RoomsBook`]: a room that opens
//! takes the oldest reservation or raises the Counter, a room that closes
//! lowers it, and a reservation nobody used within
//! [`AgonesConfig::reservation_ttl`](crate::AgonesConfig::reservation_ttl)
//! is given back. The `players` Counter is the server's alone and is set.

use crate::config::AgonesConfig;
use crate::context::{micros, Context};
use crate::server::ShutdownHandle;
use agones::Sdk;
use bitroom_protocol::NetRules;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// How often the task wakes (health when due, Counters, idleness).
pub(crate) const PERIOD: Duration = Duration::from_millis(200);
/// How long to wait before watching the GameServer again after the
/// stream ended.
const REWATCH: Duration = Duration::from_secs(2);
/// The GameServer state of a server handed to players.
const ALLOCATED: &str = "Allocated";

/// Why the Agones task gave up.
#[derive(Debug, thiserror::Error)]
enum AgonesError {
    #[error("cannot reach the sdk sidecar: {0}")]
    Connect(agones::errors::Error),
    #[error("{what} failed: {source}")]
    Call {
        what: &'static str,
        source: agones::errors::Error,
    },
}

fn call(what: &'static str) -> impl FnOnce(agones::errors::Error) -> AgonesError {
    move |source| AgonesError::Call { what, source }
}

/// Runs the Agones task until the server stops; a failure to reach the
/// sidecar or to say `Ready` stops the server ([`ShutdownHandle::fail`]).
pub(crate) async fn run<R: NetRules>(
    config: AgonesConfig,
    cx: Arc<Context<R>>,
    stop: ShutdownHandle,
    fingerprint: [u8; 32],
) {
    if let Err(e) = serve(&config, &cx, &stop, fingerprint).await {
        stop.fail(format!("agones: {e}"));
    }
}

async fn serve<R: NetRules>(
    config: &AgonesConfig,
    cx: &Arc<Context<R>>,
    stop: &ShutdownHandle,
    fingerprint: [u8; 32],
) -> Result<(), AgonesError> {
    let mut stopping = stop.subscribe();
    // The crate retries until the sidecar answers (for 30 s at most).
    let connect = tokio::time::timeout(config.connect_timeout, Sdk::new(config.port, None));
    let mut sdk = tokio::select! {
        sdk = connect => sdk
            .map_err(|e| AgonesError::Connect(e.into()))?
            .map_err(AgonesError::Connect)?,
        _ = stopping.wait_for(|&s| s) => return Ok(()),
    };
    let gs = sdk.get_gameserver().await.map_err(call("GetGameServer"))?;
    let name = gs.object_meta.map(|m| m.name).unwrap_or_default();
    let server_id = config.server_id.clone().unwrap_or_else(|| name.clone());
    sdk.set_annotation(AgonesConfig::SERVER_ID_KEY, server_id.as_str())
        .await
        .map_err(call("SetAnnotation"))?;
    sdk.set_annotation(
        AgonesConfig::CERT_KEY,
        bitroom_transport::fingerprint_hex(&fingerprint),
    )
    .await
    .map_err(call("SetAnnotation"))?;
    if is_label_value(&server_id) {
        sdk.set_label(AgonesConfig::SERVER_ID_KEY, server_id.as_str())
            .await
            .map_err(call("SetLabel"))?;
    } else {
        warn!("agones: server id {server_id:?} is not a valid label value; annotation only");
    }
    let max_rooms = i64::try_from(cx.max_rooms).unwrap_or(i64::MAX);
    let seats = i64::from(cx.room.max_players);
    let mut beta = sdk.beta().clone();
    // Counters must be declared in the GameServer spec; without them the
    // server still runs, reporting health only.
    let counters = async {
        beta.set_counter_capacity(AgonesConfig::ROOMS, max_rooms)
            .await?;
        beta.set_counter_count(AgonesConfig::ROOMS, 0).await?;
        beta.set_counter_capacity(AgonesConfig::PLAYERS, max_rooms.saturating_mul(seats))
            .await?;
        beta.set_counter_count(AgonesConfig::PLAYERS, 0).await
    }
    .await;
    let counters = match counters {
        Ok(()) => true,
        Err(e) => {
            warn!(
                "agones: Counters `rooms` and `players` not kept ({e}): declare them in the Fleet"
            );
            false
        }
    };
    sdk.ready().await.map_err(call("Ready"))?;
    info!("agones: Ready (GameServer {name:?}, server id {server_id:?})");

    let health = sdk.health_check();
    let mut watch = sdk.watch_gameserver().await.ok();
    let mut rewatch_at = Instant::now() + REWATCH;
    let mut state = String::new();
    let mut book = RoomsBook::new(config.reservation_ttl);
    let mut players_sent = 0i64;
    let mut capacity_sent = max_rooms;
    let mut counters_failing = false;
    let mut timer = cx.ticker.timer();
    let mut next = Instant::now();
    let mut next_health = Instant::now();
    let mut stalled_logged = false;
    let mut idle_since: Option<Instant> = None;
    let stall = u64::try_from(config.stall.as_micros()).unwrap_or(u64::MAX);
    loop {
        tokio::select! {
            biased;
            _ = stopping.wait_for(|&s| s) => break,
            gs = next_gameserver(&mut watch) => {
                match gs {
                    Some(gs) => {
                        let now_state = gs.status.map(|s| s.state).unwrap_or_default();
                        if now_state != state {
                            info!("agones: GameServer is {now_state}");
                            state = now_state;
                        }
                    }
                    None => {
                        debug!("agones: the GameServer watch ended");
                        watch = None;
                        rewatch_at = Instant::now() + REWATCH;
                    }
                }
                continue;
            }
            () = timer.sleep_until(next) => {}
        }
        let now = Instant::now();
        next = now + PERIOD;
        if now >= next_health {
            next_health = now + config.health_every;
            match cx.liveness.stalled(micros(cx.base), stall) {
                None => {
                    if stalled_logged {
                        info!("agones: every room ticks again: health reports resume");
                        stalled_logged = false;
                    }
                    let _ = health.try_send(());
                }
                Some((room, age)) => {
                    if !stalled_logged {
                        warn!(
                            "agones: room {room:?} has not ticked for {} ms: no health reports until it does",
                            age / 1000
                        );
                        stalled_logged = true;
                    }
                }
            }
        }
        if watch.is_none() && now >= rewatch_at {
            watch = sdk.watch_gameserver().await.ok();
            rewatch_at = now + REWATCH;
        }
        let (open, created) = {
            let rooms = cx.rooms.lock();
            (rooms.len() as u64, cx.rooms.created())
        };
        let players = i64::from(cx.monitor.players());
        if counters {
            let updated = async {
                let count = beta.get_counter_count(AgonesConfig::ROOMS).await?;
                let diff = book.update(count, created, open, now);
                cx.reserved.store(book.reserved(), Ordering::Relaxed);
                if diff > 0 {
                    beta.increment_counter(AgonesConfig::ROOMS, diff).await?;
                } else if diff < 0 {
                    beta.decrement_counter(AgonesConfig::ROOMS, -diff).await?;
                }
                // The measured capacity, never below what the Counter
                // counts now (rooms open and reserved; the difference is
                // applied above), nor `players` below its counts: Agones
                // would cut a count down to its capacity. Then the
                // players' count, within the capacity just set.
                let measured =
                    i64::try_from(cx.capacity.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
                let capacity = measured.min(max_rooms).max(count + diff);
                if cx.cpu_budget.is_some() && capacity != capacity_sent {
                    beta.set_counter_capacity(AgonesConfig::ROOMS, capacity)
                        .await?;
                    let seats_cap = capacity
                        .saturating_mul(seats)
                        .max(players)
                        .max(players_sent);
                    beta.set_counter_capacity(AgonesConfig::PLAYERS, seats_cap)
                        .await?;
                    debug!("agones: rooms capacity {capacity}");
                    capacity_sent = capacity;
                }
                if players != players_sent {
                    beta.set_counter_count(AgonesConfig::PLAYERS, players)
                        .await?;
                    players_sent = players;
                }
                Ok::<(), agones::errors::Error>(())
            }
            .await;
            // Tried again every period; said once.
            match updated {
                Err(e) if !counters_failing => {
                    warn!("agones: updating the Counters failed: {e}");
                    counters_failing = true;
                }
                Ok(()) if counters_failing => {
                    info!("agones: the Counters are updated again");
                    counters_failing = false;
                }
                _ => {}
            }
        }
        let empty = open == 0 && players == 0 && book.reserved() == 0;
        if state == ALLOCATED && empty {
            let since = *idle_since.get_or_insert(now);
            if config
                .idle_shutdown
                .is_some_and(|idle| now.duration_since(since) >= idle)
            {
                info!(
                    "agones: allocated and empty for {:?}: Shutdown",
                    now.duration_since(since)
                );
                break;
            }
        } else {
            idle_since = None;
        }
    }
    drop(health);
    if let Err(e) = sdk.shutdown().await {
        warn!("agones: Shutdown failed: {e}");
    }
    stop.shutdown();
    Ok(())
}

/// The next GameServer from the watch; `None` when it ended; pending
/// forever without one.
async fn next_gameserver(
    watch: &mut Option<tonic::Streaming<agones::GameServer>>,
) -> Option<agones::GameServer> {
    match watch {
        Some(w) => w.message().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Whether `s` is a valid Kubernetes label value: at most 63 characters,
/// ASCII letters, digits, `-`, `_` and `.`, starting and ending with a
/// letter or digit (or empty).
fn is_label_value(s: &str) -> bool {
    let ok_end = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && ok_end(s.chars().next())
        && ok_end(s.chars().last())
}

/// Bookkeeping of the `rooms` Counter, which the server shares with the
/// allocator (see the module docs). After the difference
/// [`RoomsBook::update`] returns is applied, the Counter is the rooms
/// open plus the reservations not yet used.
#[derive(Debug)]
pub(crate) struct RoomsBook {
    /// When each unused reservation was first seen, oldest first.
    reservations: VecDeque<Instant>,
    /// Rooms open at the last update (what the Counter counted then,
    /// besides the reservations).
    open: u64,
    /// Rooms created since the server started, at the last update.
    created: u64,
    ttl: Duration,
}

impl RoomsBook {
    pub(crate) fn new(ttl: Duration) -> RoomsBook {
        RoomsBook {
            reservations: VecDeque::new(),
            open: 0,
            created: 0,
            ttl,
        }
    }

    /// Reservations not yet used.
    pub(crate) fn reserved(&self) -> usize {
        self.reservations.len()
    }

    /// The Counter reads `count` (the sidecar's view: allocations and the
    /// differences sent so far); `created` rooms were created since the
    /// server started and `open` are open now. Returns the difference to
    /// send.
    pub(crate) fn update(&mut self, count: i64, created: u64, open: u64, now: Instant) -> i64 {
        let mut diff = 0i64;
        // What changed the Counter since the last update besides us:
        // allocations (reservations) up, someone else's decrements down.
        let expected = self.open as i64 + self.reservations.len() as i64;
        let outside = count - expected;
        if outside > 0 {
            for _ in 0..outside {
                self.reservations.push_back(now);
            }
        } else if outside < 0 {
            let mut take = -outside;
            while take > 0 && self.reservations.pop_back().is_some() {
                take -= 1;
            }
            // Lowered below the rooms that are open: raise it back.
            diff += take;
        }
        // Rooms opened since: each takes the oldest reservation, or counts
        // itself. Rooms closed since: each gives its room back.
        let opened = created.saturating_sub(self.created);
        let closed = (self.open + opened).saturating_sub(open);
        for _ in 0..opened {
            if self.reservations.pop_front().is_none() {
                diff += 1;
            }
        }
        diff -= closed as i64;
        // Reservations that never became a room.
        while self
            .reservations
            .front()
            .is_some_and(|&at| now.duration_since(at) >= self.ttl)
        {
            self.reservations.pop_front();
            diff -= 1;
        }
        self.open = open;
        self.created = created;
        diff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Counter as Agones keeps it, fed by allocations and the book's
    /// differences.
    struct Counter(i64);

    #[test]
    fn rooms_counter_follows_allocations_rooms_and_expiry() {
        let ttl = Duration::from_secs(60);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut book = RoomsBook::new(ttl);
        let mut c = Counter(0);
        let mut step = |c: &mut Counter, created: u64, open: u64, s: u64| {
            let d = book.update(c.0, created, open, at(s));
            c.0 += d;
            (c.0, book.reserved())
        };
        // A room opened without an allocation counts itself.
        assert_eq!(step(&mut c, 1, 1, 1), (1, 0));
        // Two allocations reserve two rooms.
        c.0 += 2;
        assert_eq!(step(&mut c, 1, 1, 2), (3, 2));
        // One of them opens: no change, one reservation left.
        assert_eq!(step(&mut c, 2, 2, 3), (3, 1));
        // The first room closes.
        assert_eq!(step(&mut c, 2, 1, 4), (2, 1));
        // A room opens and closes between two updates, using the last
        // reservation: the Counter is back to the one open room.
        assert_eq!(step(&mut c, 3, 1, 5), (1, 0));
        // An allocation nobody uses is given back after the ttl.
        c.0 += 1;
        assert_eq!(step(&mut c, 3, 1, 6), (2, 1));
        assert_eq!(step(&mut c, 3, 1, 65), (2, 1));
        assert_eq!(step(&mut c, 3, 1, 66), (1, 0));
        // Someone lowers the Counter below the open rooms: raised back.
        c.0 -= 1;
        assert_eq!(step(&mut c, 3, 1, 70), (1, 0));
        // The last room closes.
        assert_eq!(step(&mut c, 3, 0, 71), (0, 0));
    }

    #[test]
    fn label_values() {
        assert!(is_label_value("bitroom-7f9c2-x1"));
        assert!(is_label_value(""));
        assert!(!is_label_value("-lead"));
        assert!(!is_label_value("eu west"));
        assert!(!is_label_value(&"a".repeat(64)));
    }
}

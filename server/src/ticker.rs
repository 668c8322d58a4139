//! A precise timer for room ticks.
//!
//! tokio's timer wheel has millisecond resolution: `sleep_until` fires on
//! the first millisecond tick at or after the deadline, so every room tick
//! would start up to 1 ms late even on an idle machine (about 1 ms at the
//! median, measured). Rooms instead wait on a [`TickTimer`] from the
//! server's [`Ticker`]:
//!
//! - On Linux, each timer is a `timerfd` (a nanosecond kernel timer behind
//!   a file descriptor) in tokio's own event loop: when a tick is due, the
//!   worker that waits in `epoll` wakes, and nothing else does.
//! - Elsewhere, or when the kernel refuses a timerfd, the timer waits on
//!   the ticker's OS thread, which keeps the pending deadlines in order and
//!   sleeps on a condition variable until the earliest one, then wakes the
//!   rooms whose tick is due.
//!
//! The timerfd saves the thread's wake-up and the second wake-up it makes
//! into a tokio worker on every tick of every room (1200 a second for 20
//! rooms at 60 Hz); `docs/fleet.md` has what that is worth. The rooms run on
//! the tokio workers either way.
//!
//! The thread ends when the [`Ticker`] is dropped.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

#[derive(Debug, Default)]
struct Queue {
    /// Pending waits by `(deadline, timer id)`.
    waits: BTreeMap<(Instant, u64), Waker>,
    next_id: u64,
    stop: bool,
}

#[derive(Debug, Default)]
struct Inner {
    queue: Mutex<Queue>,
    /// Signalled when a wait earlier than every other arrives, or on stop.
    changed: Condvar,
    /// Set (with `Queue::stop`) when the thread is told to end; read
    /// without the lock.
    stopped: AtomicBool,
    /// Set once a timerfd was refused (so that is logged once).
    #[cfg(target_os = "linux")]
    fd_refused: AtomicBool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The lock guards plain data that is never left half-updated.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The timer thread (see the module docs).
#[derive(Debug)]
pub(crate) struct Ticker {
    inner: Arc<Inner>,
}

impl Ticker {
    /// Starts the timer thread.
    ///
    /// # Errors
    /// The OS refused a new thread.
    pub(crate) fn start() -> std::io::Result<Ticker> {
        let inner = Arc::new(Inner::default());
        let thread = Arc::clone(&inner);
        std::thread::Builder::new()
            .name("bitroom-ticker".into())
            .spawn(move || {
                crate::realtime::raise_timer();
                run(&thread);
            })?;
        Ok(Ticker { inner })
    }

    /// A timer for one room: a timerfd on Linux (inside a tokio runtime),
    /// otherwise one on the ticker's thread.
    pub(crate) fn timer(&self) -> TickTimer {
        #[cfg(target_os = "linux")]
        match fd::FdTimer::new() {
            Ok(t) => return TickTimer::Fd(t),
            Err(e) => {
                if !self.inner.fd_refused.swap(true, Ordering::Relaxed) {
                    tracing::warn!("no timerfd for room ticks ({e}): using the ticker thread");
                }
            }
        }
        TickTimer::Thread(self.thread_timer())
    }

    /// A timer on the ticker's thread (whatever the platform).
    pub(crate) fn thread_timer(&self) -> ThreadTimer {
        let id = {
            let mut q = self.inner.lock();
            q.next_id += 1;
            q.next_id
        };
        ThreadTimer {
            inner: Arc::clone(&self.inner),
            id,
            queued: None,
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.inner.lock().stop = true;
        self.inner.stopped.store(true, Ordering::Release);
        self.inner.changed.notify_one();
    }
}

fn run(inner: &Inner) {
    let mut due: Vec<Waker> = Vec::new();
    let mut q = inner.lock();
    loop {
        if q.stop {
            // Wake whoever still waits so no task hangs on a dead timer
            // (its next poll sees a passed deadline or waits again).
            due.extend(std::mem::take(&mut q.waits).into_values());
            drop(q);
            due.drain(..).for_each(Waker::wake);
            return;
        }
        let now = Instant::now();
        while let Some(entry) = q.waits.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        if !due.is_empty() {
            // Wake outside the lock: waking schedules tasks that may poll
            // (and lock) right away on another thread.
            drop(q);
            due.drain(..).for_each(Waker::wake);
            q = inner.lock();
            continue;
        }
        q = match q.waits.first_key_value() {
            Some((&(at, _), _)) => {
                let wait = at.saturating_duration_since(now);
                inner
                    .changed
                    .wait_timeout(q, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => inner.changed.wait(q).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

/// One room's timer (see the module docs). Cancel-safe: a wait dropped
/// unfinished (a room's `select!` drops it whenever a message arrives
/// first) stays armed, so waiting again for the same deadline costs no
/// system call.
#[derive(Debug)]
pub(crate) enum TickTimer {
    /// A timerfd in tokio's event loop.
    #[cfg(target_os = "linux")]
    Fd(fd::FdTimer),
    /// A wait on the ticker's thread.
    Thread(ThreadTimer),
}

impl TickTimer {
    /// Resolves at `deadline` (at once if it has passed).
    pub(crate) async fn sleep_until(&mut self, deadline: Instant) {
        match self {
            #[cfg(target_os = "linux")]
            TickTimer::Fd(t) => t.sleep_until(deadline).await,
            TickTimer::Thread(t) => t.sleep_until(deadline).await,
        }
    }
}

/// One room's handle on the [`Ticker`]'s thread: at most one pending wait.
///
/// The wait stays queued when a [`Sleep`] is dropped unfinished (a room's
/// `select!` drops it whenever a message arrives first), so the next
/// `sleep_until` for the same tick costs no lock and no thread wake-up; a
/// stale wait only wakes the room once, which it tolerates.
#[derive(Debug)]
pub(crate) struct ThreadTimer {
    inner: Arc<Inner>,
    id: u64,
    /// The queued wait's deadline and the waker it holds.
    queued: Option<(Instant, Waker)>,
}

impl ThreadTimer {
    /// Resolves at `deadline` (at once if it has passed).
    pub(crate) fn sleep_until(&mut self, deadline: Instant) -> Sleep<'_> {
        Sleep {
            timer: self,
            deadline,
        }
    }

    /// Takes the queued wait off the queue.
    fn dequeue(&mut self) {
        if let Some((at, _)) = self.queued.take() {
            self.inner.lock().waits.remove(&(at, self.id));
        }
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        self.dequeue();
    }
}

/// The future of [`ThreadTimer::sleep_until`].
#[derive(Debug)]
pub(crate) struct Sleep<'a> {
    timer: &'a mut ThreadTimer,
    deadline: Instant,
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let timer = &mut *this.timer;
        if Instant::now() >= this.deadline {
            timer.dequeue();
            return Poll::Ready(());
        }
        if timer.inner.stopped.load(Ordering::Acquire) {
            // The thread is gone (the server is closing): resolve now
            // rather than hang.
            return Poll::Ready(());
        }
        // Already queued for this deadline with this task's waker: nothing
        // to do (the common case: a message woke the room before its tick).
        if let Some((at, waker)) = &timer.queued {
            if *at == this.deadline && waker.will_wake(cx.waker()) {
                return Poll::Pending;
            }
        }
        let key = (this.deadline, timer.id);
        let mut q = timer.inner.lock();
        if q.stop {
            return Poll::Ready(());
        }
        if let Some((at, _)) = timer.queued.take() {
            q.waits.remove(&(at, timer.id));
        }
        let earliest = q.waits.first_key_value().is_none_or(|(k, _)| key < *k);
        q.waits.insert(key, cx.waker().clone());
        drop(q);
        timer.queued = Some((this.deadline, cx.waker().clone()));
        if earliest {
            timer.inner.changed.notify_one();
        }
        Poll::Pending
    }
}

/// Timers as timerfds (Linux).
#[cfg(target_os = "linux")]
mod fd {
    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use std::io;
    use std::os::fd::OwnedFd;
    use std::time::{Duration, Instant};
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    /// A one-shot `CLOCK_MONOTONIC` timerfd registered with tokio.
    #[derive(Debug)]
    pub(crate) struct FdTimer {
        fd: AsyncFd<OwnedFd>,
        /// The deadline the timer is set to, until its expiry is read.
        armed: Option<Instant>,
    }

    impl FdTimer {
        /// A new timer.
        ///
        /// # Errors
        /// No file descriptor, or not inside a tokio runtime with I/O.
        pub(crate) fn new() -> io::Result<FdTimer> {
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )?;
            // tokio 1.54 deprecated its safe `AsyncFd` constructors as
            // unsound for an `AsRawFd` that may close or swap its
            // descriptor; an `OwnedFd` owns its descriptor for its whole
            // life, so that cannot happen here, and `unsafe` stays out.
            #[allow(deprecated)]
            let fd = AsyncFd::with_interest(fd, Interest::READABLE)?;
            Ok(FdTimer { fd, armed: None })
        }

        /// Sets the timer `after` from now (replacing a pending expiry).
        fn arm(&self, after: Duration) -> io::Result<()> {
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let spec = Itimerspec {
                it_interval: zero,
                it_value: Timespec {
                    tv_sec: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: after.subsec_nanos().into(),
                },
            };
            timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
            Ok(())
        }

        /// Resolves at `deadline` (at once if it has passed). `Instant` is
        /// `CLOCK_MONOTONIC` on Linux, the timer's clock, so the timer
        /// never fires before the deadline as `Instant::now` sees it.
        pub(crate) async fn sleep_until(&mut self, deadline: Instant) {
            loop {
                let now = Instant::now();
                if now >= deadline {
                    return;
                }
                if self.armed != Some(deadline) {
                    // Relative: `Instant` has no public clock value; the
                    // few nanoseconds since `now` make it fire later, not
                    // earlier.
                    if let Err(e) = self.arm(deadline - now) {
                        return Self::fallback(deadline, &e).await;
                    }
                    self.armed = Some(deadline);
                }
                let mut ready = match self.fd.readable().await {
                    Ok(r) => r,
                    Err(e) => return Self::fallback(deadline, &e).await,
                };
                let mut expiries = [0u8; 8];
                match rustix::io::read(self.fd.get_ref(), &mut expiries) {
                    // Fired: the loop checks the clock.
                    Ok(_) => self.armed = None,
                    Err(rustix::io::Errno::AGAIN) => ready.clear_ready(),
                    Err(e) => return Self::fallback(deadline, &e.into()).await,
                }
            }
        }

        /// When the kernel fails the timer (it should not): tokio's timer.
        async fn fallback(deadline: Instant, e: &io::Error) {
            tracing::warn!("tick timer failed ({e}); this wait uses tokio's timer");
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn wakes_in_deadline_order_and_not_before() {
        let ticker = Ticker::start().unwrap();
        wakes_in_order(|| TickTimer::Thread(ticker.thread_timer())).await;
        assert!(ticker.inner.lock().waits.is_empty());
        #[cfg(target_os = "linux")]
        wakes_in_order(|| {
            let t = ticker.timer();
            assert!(matches!(t, TickTimer::Fd(_)), "no timerfd in a runtime");
            t
        })
        .await;
    }

    async fn wakes_in_order(mut timer: impl FnMut() -> TickTimer) {
        let start = Instant::now();
        let mut handles = Vec::new();
        // Deadlines given out of order: 30, 10, 20 ms.
        for ms in [30u64, 10, 20] {
            let mut timer = timer();
            handles.push(tokio::spawn(async move {
                let at = start + Duration::from_millis(ms);
                timer.sleep_until(at).await;
                let woke = Instant::now();
                assert!(woke >= at, "woke before its deadline");
                (ms, woke)
            }));
        }
        let mut woke = Vec::new();
        for h in handles {
            let r = tokio::time::timeout(Duration::from_secs(5), h).await;
            woke.push(r.expect("a wait was never woken").unwrap());
        }
        woke.sort_by_key(|&(_, t)| t);
        let order: Vec<u64> = woke.iter().map(|&(ms, _)| ms).collect();
        assert_eq!(order, [10, 20, 30]);
    }

    /// A timerfd wait dropped unfinished stays armed; a new deadline
    /// replaces it (earlier or later), a passed one resolves at once, and
    /// an expiry that came while nobody waited is not lost.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_timerfd_wait_can_be_dropped_and_rearmed() {
        let mut timer = fd::FdTimer::new().unwrap();
        let far = Instant::now() + Duration::from_secs(3600);
        for _ in 0..3 {
            let r = tokio::time::timeout(Duration::from_millis(5), timer.sleep_until(far)).await;
            assert!(r.is_err(), "an hour-long wait resolved");
        }
        // Earlier than the armed hour: must fire, and not before.
        let at = Instant::now() + Duration::from_millis(5);
        tokio::time::timeout(Duration::from_secs(5), timer.sleep_until(at))
            .await
            .expect("a re-armed timerfd did not fire");
        assert!(Instant::now() >= at);
        // Armed, left to expire with nobody waiting, then awaited.
        let at = Instant::now() + Duration::from_millis(3);
        let r = tokio::time::timeout(Duration::from_millis(1), timer.sleep_until(at)).await;
        assert!(r.is_err());
        std::thread::sleep(Duration::from_millis(10));
        tokio::time::timeout(Duration::from_millis(100), timer.sleep_until(at))
            .await
            .expect("an expiry with nobody waiting was lost");
        // Passed deadlines resolve at once, and a later one waits again.
        timer.sleep_until(Instant::now()).await;
        let at = Instant::now() + Duration::from_millis(20);
        let r = tokio::time::timeout(Duration::from_millis(5), timer.sleep_until(at)).await;
        assert!(r.is_err(), "a 20 ms wait resolved within 5 ms");
        timer.sleep_until(at).await;
        assert!(Instant::now() >= at);
    }

    #[tokio::test]
    async fn a_wait_stays_queued_once_until_its_deadline_or_the_timer_goes() {
        let ticker = Ticker::start().unwrap();
        let mut timer = ticker.thread_timer();
        let far = Instant::now() + Duration::from_secs(3600);
        for _ in 0..3 {
            // As in a room's select!: the sleep is dropped unfinished.
            let r = tokio::time::timeout(Duration::from_millis(5), timer.sleep_until(far)).await;
            assert!(r.is_err(), "an hour-long wait resolved");
        }
        assert_eq!(ticker.inner.lock().waits.len(), 1, "one wait per timer");
        // A new deadline replaces the queued one.
        let farther = far + Duration::from_secs(1);
        let r = tokio::time::timeout(Duration::from_millis(5), timer.sleep_until(farther)).await;
        assert!(r.is_err());
        let keys: Vec<Instant> = ticker.inner.lock().waits.keys().map(|k| k.0).collect();
        assert_eq!(keys, [farther]);
        // A deadline in the past resolves at once and dequeues.
        timer.sleep_until(Instant::now()).await;
        assert!(ticker.inner.lock().waits.is_empty());
        // Dropping the timer takes its wait away.
        let r = tokio::time::timeout(Duration::from_millis(5), timer.sleep_until(far)).await;
        assert!(r.is_err());
        drop(timer);
        assert!(
            ticker.inner.lock().waits.is_empty(),
            "a dropped timer left its wait"
        );
    }

    #[tokio::test]
    async fn an_earlier_wait_interrupts_a_long_one() {
        let ticker = Ticker::start().unwrap();
        let mut long = ticker.thread_timer();
        let mut short = ticker.thread_timer();
        let far = Instant::now() + Duration::from_secs(3600);
        let long_wait = tokio::spawn(async move { long.sleep_until(far).await });
        tokio::task::yield_now().await;
        // The thread now sleeps until `far`; a 5 ms wait must still fire.
        let at = Instant::now() + Duration::from_millis(5);
        tokio::time::timeout(Duration::from_secs(5), short.sleep_until(at))
            .await
            .expect("the short wait was not woken");
        long_wait.abort();
    }

    #[tokio::test]
    async fn stopping_releases_waiters() {
        let ticker = Ticker::start().unwrap();
        let mut timer = ticker.thread_timer();
        let far = Instant::now() + Duration::from_secs(3600);
        let waiting = tokio::spawn(async move { timer.sleep_until(far).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(ticker);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("a waiter hung after the ticker stopped")
            .unwrap();
    }
}

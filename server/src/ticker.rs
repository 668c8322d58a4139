//! A precise timer for room ticks.
//!
//! tokio's timer wheel has millisecond resolution: `sleep_until` fires on
//! the first millisecond tick at or after the deadline, so every room tick
//! would start up to 1 ms late even on an idle machine (about 1 ms at the
//! median, measured). Rooms instead wait on one [`Ticker`]: an OS thread that
//! keeps the pending deadlines in order and sleeps on a condition variable
//! until the earliest one (a futex wait with a nanosecond timeout on Linux),
//! then wakes the rooms whose tick is due. The rooms still run on the tokio
//! workers; only the waking moves.
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

    /// A timer for one room.
    pub(crate) fn timer(&self) -> TickTimer {
        let id = {
            let mut q = self.inner.lock();
            q.next_id += 1;
            q.next_id
        };
        TickTimer {
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

/// One room's handle on the [`Ticker`]: at most one pending wait.
///
/// The wait stays queued when a [`Sleep`] is dropped unfinished (a room's
/// `select!` drops it whenever a message arrives first), so the next
/// `sleep_until` for the same tick costs no lock and no thread wake-up; a
/// stale wait only wakes the room once, which it tolerates.
#[derive(Debug)]
pub(crate) struct TickTimer {
    inner: Arc<Inner>,
    id: u64,
    /// The queued wait's deadline and the waker it holds.
    queued: Option<(Instant, Waker)>,
}

impl TickTimer {
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

impl Drop for TickTimer {
    fn drop(&mut self) {
        self.dequeue();
    }
}

/// The future of [`TickTimer::sleep_until`].
#[derive(Debug)]
pub(crate) struct Sleep<'a> {
    timer: &'a mut TickTimer,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn wakes_in_deadline_order_and_not_before() {
        let ticker = Ticker::start().unwrap();
        let start = Instant::now();
        let mut handles = Vec::new();
        // Deadlines given out of order: 30, 10, 20 ms.
        for ms in [30u64, 10, 20] {
            let mut timer = ticker.timer();
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
        assert!(ticker.inner.lock().waits.is_empty());
    }

    #[tokio::test]
    async fn a_wait_stays_queued_once_until_its_deadline_or_the_timer_goes() {
        let ticker = Ticker::start().unwrap();
        let mut timer = ticker.timer();
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
        let mut long = ticker.timer();
        let mut short = ticker.timer();
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
        let mut timer = ticker.timer();
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

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
            .spawn(move || run(&thread))?;
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
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.inner.lock().stop = true;
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
#[derive(Debug)]
pub(crate) struct TickTimer {
    inner: Arc<Inner>,
    id: u64,
}

impl TickTimer {
    /// Resolves at `deadline` (at once if it has passed). Dropping the
    /// future cancels the wait.
    pub(crate) fn sleep_until(&mut self, deadline: Instant) -> Sleep<'_> {
        Sleep {
            timer: self,
            deadline,
            queued: false,
        }
    }
}

/// The future of [`TickTimer::sleep_until`].
#[derive(Debug)]
pub(crate) struct Sleep<'a> {
    timer: &'a mut TickTimer,
    deadline: Instant,
    queued: bool,
}

impl Sleep<'_> {
    fn key(&self) -> (Instant, u64) {
        (self.deadline, self.timer.id)
    }
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if Instant::now() >= this.deadline {
            if this.queued {
                this.timer.inner.lock().waits.remove(&this.key());
                this.queued = false;
            }
            return Poll::Ready(());
        }
        let key = this.key();
        let mut q = this.timer.inner.lock();
        if q.stop {
            // The thread is gone (the server is closing): resolve now
            // rather than hang.
            return Poll::Ready(());
        }
        let earliest = q.waits.first_key_value().is_none_or(|(k, _)| key < *k);
        match q.waits.get_mut(&key) {
            Some(w) => w.clone_from(cx.waker()),
            None => {
                q.waits.insert(key, cx.waker().clone());
            }
        }
        drop(q);
        this.queued = true;
        if earliest {
            this.timer.inner.changed.notify_one();
        }
        Poll::Pending
    }
}

impl Drop for Sleep<'_> {
    fn drop(&mut self) {
        if self.queued {
            let key = self.key();
            self.timer.inner.lock().waits.remove(&key);
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
    async fn a_dropped_wait_leaves_the_queue_and_a_past_deadline_is_ready() {
        let ticker = Ticker::start().unwrap();
        let mut timer = ticker.timer();
        let far = Instant::now() + Duration::from_secs(3600);
        let r = tokio::time::timeout(Duration::from_millis(20), timer.sleep_until(far)).await;
        assert!(r.is_err(), "an hour-long wait resolved");
        assert!(
            ticker.inner.lock().waits.is_empty(),
            "cancelled wait left behind"
        );
        // A deadline in the past resolves at once, without queueing.
        timer.sleep_until(Instant::now()).await;
        assert!(ticker.inner.lock().waits.is_empty());
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

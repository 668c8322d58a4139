//! The world's worker threads (see [`World::set_threads`](super::World::set_threads)):
//! a rayon pool the world keeps, and how a stage shares its parts out on
//! it ([`Workers::share_out`]).
//!
//! # Keeping the workers awake through a step
//!
//! A rayon worker with nothing to do soon sleeps, and waking one is slow
//! on these machines: a share-out of two empty parts took 60 to 80 µs
//! when the worker had been idle for 5 µs or more, against 4 µs back to
//! back. A step shares out four to six times, between stretches of work on
//! the calling thread (colouring, events), so on the 990-box pile (a step
//! of 0.75 ms) two threads were slower than one.
//!
//! So a worker that has ended its part, once every part of its share-out
//! has been taken, spins ([`Epoch::keep_warm`]) until the next share-out
//! or for [`WARM_SPINS`] turns, whichever comes first, and then returns to
//! the pool. (A worker that ends its part while another part still waits
//! takes that part instead.) And the calling
//! thread, its own part done, spins for the workers' parts to end
//! ([`DONE_SPINS`]) before it waits on the pool's latch, where it would
//! sleep too. Box2D's task system spins its workers alike.
//!
//! Spinning takes the cores, so it is done only while the threads fit the
//! machine's cores: with more threads than cores a spinning worker would
//! take the core that the calling thread needs. (Other busy threads, or
//! other worlds stepping on several threads, are not counted: a program
//! that runs several such worlds at once gives each fewer threads.)
//!
//! None of this changes what a part computes, nor when it may start
//! relative to another (the parts of `colours` still meet at their own
//! stages): only how soon a worker takes its part.

use super::WorldError;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Turns a worker spins for the next share-out before it returns to the
/// pool (and soon sleeps). A turn is the processor's spin-loop hint
/// (`pause` on x86), whose length varies between processors: some 8 ns
/// on this machine's Xeon, so about 1.1 ms; up to five times that on
/// others. (Counted in turns, not timed: nothing in this crate reads a
/// clock.)
const WARM_SPINS: u32 = 1 << 17;
/// Turns the calling thread spins for the workers' parts to end before it
/// waits on the pool's latch (and sleeps until a worker wakes it).
const DONE_SPINS: u32 = 1 << 16;
/// Turns the calling thread spins more once the parts have ended, while
/// their workers tell the pool (between a part's end and the pool's latch
/// there are a few instructions; a caller that found the latch still open
/// slept, and was woken some 15 µs later).
const SETTLE_SPINS: u32 = 64;

/// A world's worker threads: a rayon pool of one worker fewer than the
/// threads a step runs on (the calling thread takes a part too).
#[derive(Debug)]
pub(crate) struct Workers {
    pool: rayon::ThreadPool,
    /// Share-outs so far: a worker spinning after its part stops when it
    /// moves ([`Epoch::keep_warm`]).
    epoch: Arc<Epoch>,
    /// Whether workers spin after their parts (the threads fit the cores).
    warm: bool,
    /// The most turns a spin takes ([`WARM_SPINS`]; tests lengthen it).
    warm_spins: u32,
}

impl Workers {
    /// Workers for steps on `threads` threads (2 or more).
    pub(crate) fn new(threads: usize) -> Result<Workers, WorldError> {
        // (A pool of no threads would be rayon's default, one a core.)
        debug_assert!(threads >= 2, "the calling thread and a worker at least");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads - 1)
            .thread_name(|i| format!("bitroom-step-{i}"))
            .build()
            .map_err(|_| WorldError::BadSettings("threads could not be started"))?;
        // How many threads can run at once: how the workers wait, never
        // what they compute.
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Ok(Workers {
            pool,
            epoch: Arc::new(Epoch::default()),
            warm: threads <= cores,
            warm_spins: WARM_SPINS,
        })
    }

    /// The threads a step runs on: the workers and the calling thread.
    pub(crate) fn threads(&self) -> usize {
        self.pool.current_num_threads() + 1
    }

    /// Runs `work` on each of `jobs`, the first on this thread and the
    /// others on the workers, and returns when all are done: how a stage
    /// shares out its ranges (each job writes only places of its own). Jobs
    /// that wait for one another (`colours`) need them all running at
    /// once: at most one job more than there are workers, and the workers
    /// free, as they are while their world steps (never call this from a
    /// job).
    pub(crate) fn share_out<J: Send>(
        &self,
        jobs: impl IntoIterator<Item = J>,
        work: impl Fn(J) + Sync,
    ) {
        let mut jobs = jobs.into_iter();
        let first = jobs.next();
        let others: Vec<J> = jobs.collect();
        let total = others.len();
        let work = &work;
        // Moving the count ends the spins of the last share-out's workers:
        // they take these jobs. Moved even when there are none: with the
        // spins left running through share-outs of one job (the calling
        // thread's alone), the rollback of the 990-box pile on two threads
        // took 7.48 and 7.50 ms against 7.09 and 7.17 (a busy core costs
        // the calling thread's core its clock, or a share of the physical
        // core the two may be on: this VM does not say).
        let epoch = self.epoch.count.fetch_add(1, Ordering::Relaxed) + 1;
        let turns = self.warm_spins;
        let (started, done) = (&AtomicUsize::new(0), &AtomicUsize::new(0));
        self.pool.in_place_scope(|s| {
            for job in others {
                let warm = self.warm.then(|| Arc::clone(&self.epoch));
                s.spawn(move |_| {
                    started.fetch_add(1, Ordering::Relaxed);
                    work(job);
                    // Once every job has been taken (before, this worker
                    // would spin beside one still queued): usually run by
                    // this worker next (its own queue's newest job), after
                    // this one has ended. Queued before this job counts as
                    // done, so that the calling thread, which leaves when
                    // all are, does not wait behind the queueing (which
                    // may wake a sleeping worker to steal it); measured no
                    // different on the pile's rollback.
                    if let Some(count) = warm.filter(|_| started.load(Ordering::Relaxed) == total) {
                        rayon::spawn(move || count.keep_warm(epoch, turns));
                    }
                    done.fetch_add(1, Ordering::Release);
                });
            }
            if let Some(job) = first {
                work(job);
            }
            if self.warm && total > 0 {
                let mut spins = 0;
                while done.load(Ordering::Acquire) < total && spins < DONE_SPINS {
                    spin_loop();
                    spins += 1;
                }
                if spins < DONE_SPINS {
                    (0..SETTLE_SPINS).for_each(|_| spin_loop());
                }
            }
        });
    }
}

impl Drop for Workers {
    /// Ends the workers' spins: the pool's threads then end.
    fn drop(&mut self) {
        self.epoch.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// The share-outs' count that the workers' spins watch.
#[derive(Debug, Default)]
struct Epoch {
    count: AtomicU64,
    /// Spins begun, ended, and ended by the count (tests).
    #[cfg(test)]
    spins: AtomicUsize,
    #[cfg(test)]
    ended: AtomicUsize,
    #[cfg(test)]
    moved: AtomicUsize,
}

impl Epoch {
    /// A worker's wait for the next share-out after its part (see the
    /// module docs): spins while the count is still `seen`, for at most
    /// `turns` turns.
    fn keep_warm(&self, seen: u64, turns: u32) {
        #[cfg(test)]
        self.spins.fetch_add(1, Ordering::Relaxed);
        for _ in 0..turns {
            if self.count.load(Ordering::Relaxed) != seen {
                #[cfg(test)]
                self.moved.fetch_add(1, Ordering::Relaxed);
                break;
            }
            spin_loop();
        }
        #[cfg(test)]
        self.ended.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// Workers that spin after their parts, whatever the machine's cores.
    fn warm(threads: usize) -> Workers {
        let mut w = Workers::new(threads).unwrap();
        w.warm = true;
        w
    }

    /// Every job runs once, the first on the calling thread and the others
    /// on the workers, for any count of jobs up to one more than the
    /// workers.
    #[test]
    fn each_job_runs_once_the_first_here() {
        for threads in [2, 3, 4] {
            let w = warm(threads);
            let here = thread::current().id();
            for jobs in 0..=threads {
                let runs: Vec<AtomicUsize> = (0..jobs).map(|_| AtomicUsize::new(0)).collect();
                let ids = std::sync::Mutex::new(vec![None; jobs]);
                w.share_out(0..jobs, |j| {
                    runs[j].fetch_add(1, Ordering::Relaxed);
                    ids.lock().unwrap()[j] = Some(thread::current().id());
                });
                assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
                let ids = ids.into_inner().unwrap();
                for (j, id) in ids.iter().enumerate() {
                    assert_eq!(*id == Some(here), j == 0, "job {j} of {jobs}");
                }
            }
        }
    }

    /// A worker spins only once every job of its share-out has been taken:
    /// one spinning while a job waited in the pool would hold that job
    /// back for the whole spin (the step's preparation on two threads hands
    /// its one worker two jobs: it took 1.6 ms a step, not 0.13).
    #[test]
    fn no_worker_spins_while_a_job_waits() {
        let w = warm(2);
        for _ in 0..50 {
            let before = w.epoch.spins.load(Ordering::Relaxed);
            let spun_before_last = AtomicUsize::new(0);
            // One worker: it takes job 1 and then job 2, in that order.
            w.share_out(0..3, |j| {
                if j == 2 && w.epoch.spins.load(Ordering::Relaxed) != before {
                    spun_before_last.fetch_add(1, Ordering::Relaxed);
                }
            });
            assert_eq!(spun_before_last.into_inner(), 0);
            // Its spin after job 2 begins (the next share-out ends it).
            while w.epoch.spins.load(Ordering::Relaxed) == before {
                thread::yield_now();
            }
        }
    }

    /// After its share-out a worker spins, and a move of the count (as the
    /// next share-out makes) ends the spin at once.
    #[test]
    fn a_worker_spins_until_the_count_moves() {
        let mut w = warm(2);
        // A spin that would outlast any pause of this thread.
        w.warm_spins = u32::MAX;
        w.share_out(0..2, |_| {});
        // The spin begins just after the worker's job has ended.
        while w.epoch.spins.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        w.epoch.count.fetch_add(1, Ordering::Relaxed);
        while w.epoch.ended.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        // Ended by the move, not after its turns.
        assert_eq!(w.epoch.moved.load(Ordering::Relaxed), 1);
        // And the next share-out's jobs run.
        let ran = AtomicUsize::new(0);
        w.share_out(0..2, |_| {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.into_inner(), 2);
    }
}

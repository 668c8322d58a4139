//! The room capacity a server measures for itself (`serve --cpu-budget
//! PERCENT`): how many more rooms its cores can take, from what its rooms
//! cost now, instead of a fixed `--max-rooms` chosen before the game's
//! real cost was known.
//!
//! Once a second the server samples its own CPU time (all threads, user
//! and kernel: what a room costs outside its tick too, QUIC, crypto,
//! system calls), the rooms open, and how many ticks started later than
//! [`LATE`]. Over the last [`WINDOW`] samples:
//!
//! - the cores in use, and a room's cost: the CPU time of the intervals
//!   with rooms open over their room time (rooms × seconds; at least 5
//!   room-seconds, so that one join's burst is not taken for a room's
//!   cost; the server's own idle cost in those intervals is charged to
//!   its rooms, which errs on the safe side), taken as the highest such
//!   figure of the last
//!   [`PEAK_SPAN`]: a room costs more as players fill it, and rooms that
//!   just emptied (or have not filled yet) would otherwise make room for
//!   rooms that will cost what full ones do;
//! - the capacity: the rooms open plus as many more as fit in the budget
//!   (the runtime's worker threads × PERCENT %) at that cost, at most
//!   `--max-rooms`; no more than the rooms open once more than 1 % of the
//!   window's ticks started [`LATE`] (the cores are behind whatever the
//!   figures say), and `--max-rooms` while no room has been measured.
//!
//! The capacity refuses joins that would create a room past it
//! ([`KickReason::TooManyRooms`](bitroom_protocol::KickReason::TooManyRooms)),
//! is exported (`bitroom_room_capacity`, with `bitroom_cpu_cores` and
//! `bitroom_room_cpu_cores`), and on Agones becomes the capacity of the
//! `rooms` Counter (and `players`: × seats), so that the allocator's
//! room-capacity selector and the autoscaler's buffer count the rooms the
//! server can really take. Without `--cpu-budget` the capacity stays
//! `--max-rooms` and only the figures are exported.
//!
//! All arithmetic is in integers (millionths of a core); the gauges are
//! floats, at the edge.

use crate::context::{micros, Context};
use crate::monitor::names;
use metrics::gauge;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, warn};

/// A tick that starts this late counts as late.
pub(crate) const LATE: Duration = Duration::from_millis(2);
/// Samples in the window (one a second).
pub(crate) const WINDOW: usize = 10;
/// Room time (rooms × seconds open) a window needs to measure a room's
/// cost.
const MIN_ROOM_TIME: Duration = Duration::from_secs(5);
/// How long a room's highest measured cost is kept.
pub(crate) const PEAK_SPAN: Duration = Duration::from_secs(300);
/// Late ticks (millionths of the window's ticks) past which the capacity
/// is the rooms open: 1 %, i.e. a lateness p99 over [`LATE`].
const LATE_LIMIT_PPM: u64 = 10_000;

/// One measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    /// Wall clock and the process's CPU time, microseconds.
    pub wall_us: u64,
    pub cpu_us: u64,
    /// Rooms open.
    pub open: u64,
    /// Ticks of every room so far, and those that started [`LATE`].
    pub ticks: u64,
    pub late_ticks: u64,
}

/// What the window says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// Cores in use (millionths).
    pub cores_ppm: u64,
    /// A room's cost (millionths of a core): the highest measured over
    /// the last [`PEAK_SPAN`] (the last one measured, if older).
    pub room_ppm: Option<u64>,
    /// Late ticks (millionths of the window's ticks).
    pub late_ppm: u64,
    /// Rooms the server takes now.
    pub capacity: u64,
}

/// The estimate over a sliding window of samples.
#[derive(Debug)]
pub(crate) struct Estimator {
    samples: VecDeque<Sample>,
    /// A room's cost measured at each sample of the last [`PEAK_SPAN`]
    /// (wall µs, millionths of a core), oldest first; the newest is kept
    /// however old.
    costs: VecDeque<(u64, u64)>,
    /// `None`: no budget (`--cpu-budget` not given): the capacity is
    /// `max_rooms`.
    budget_ppm: Option<u64>,
    max_rooms: u64,
}

impl Estimator {
    /// `workers` threads run the rooms; they may use `percent` % of them
    /// (`None`: no budget).
    pub(crate) fn new(workers: u64, percent: Option<u32>, max_rooms: u64) -> Estimator {
        Estimator {
            samples: VecDeque::with_capacity(WINDOW + 1),
            costs: VecDeque::new(),
            budget_ppm: percent
                .map(|p| workers.saturating_mul(u64::from(p)).saturating_mul(10_000)),
            max_rooms,
        }
    }

    /// Adds a sample (later than the last) and estimates.
    pub(crate) fn push(&mut self, s: Sample) -> Estimate {
        if self.samples.len() > WINDOW {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
        let first = self.samples[0];
        let wall = s.wall_us.saturating_sub(first.wall_us);
        let (cores_ppm, late_ppm) = if wall == 0 {
            (0, 0)
        } else {
            let cpu = s.cpu_us.saturating_sub(first.cpu_us);
            let ticks = s.ticks.saturating_sub(first.ticks);
            let late = s.late_ticks.saturating_sub(first.late_ticks);
            (
                ratio_ppm(cpu, wall),
                if ticks == 0 {
                    0
                } else {
                    ratio_ppm(late, ticks)
                },
            )
        };
        // A room's cost: the CPU time of the window's intervals in which
        // rooms were open over the room time they add up to (each
        // sample's count stands for the interval it ends), once that is
        // at least MIN_ROOM_TIME (a join's burst is not a room's cost).
        let (mut cpu, mut room_time) = (0u128, 0u128);
        for (a, b) in self.samples.iter().zip(self.samples.iter().skip(1)) {
            if b.open > 0 {
                cpu += u128::from(b.cpu_us.saturating_sub(a.cpu_us));
                room_time += u128::from(b.open) * u128::from(b.wall_us.saturating_sub(a.wall_us));
            }
        }
        if room_time >= MIN_ROOM_TIME.as_micros() {
            let cost = cpu * 1_000_000 / room_time;
            self.costs
                .push_back((s.wall_us, u64::try_from(cost).unwrap_or(u64::MAX).max(1)));
        }
        let span = PEAK_SPAN.as_micros() as u64;
        while self.costs.len() > 1
            && self
                .costs
                .front()
                .is_some_and(|&(at, _)| s.wall_us.saturating_sub(at) > span)
        {
            self.costs.pop_front();
        }
        let room_ppm = self.costs.iter().map(|&(_, c)| c).max();
        let capacity = match (self.budget_ppm, room_ppm) {
            (None, _) | (Some(_), None) => self.max_rooms,
            (Some(_), Some(_)) if late_ppm > LATE_LIMIT_PPM => s.open,
            (Some(budget), Some(room)) => {
                let more = budget.saturating_sub(cores_ppm) / room;
                s.open.saturating_add(more).min(self.max_rooms)
            }
        }
        .max(s.open.min(self.max_rooms));
        Estimate {
            cores_ppm,
            room_ppm,
            late_ppm,
            capacity,
        }
    }
}

/// Samples once a second until aborted, keeping [`Context::capacity`]
/// and the gauges current.
pub(crate) async fn run<R>(cx: Arc<Context<R>>) {
    let workers = tokio::runtime::Handle::current().metrics().num_workers() as u64;
    let mut estimator = Estimator::new(workers, cx.cpu_budget, cx.max_rooms as u64);
    if let Some(percent) = cx.cpu_budget {
        if process_cpu().is_some() {
            info!(
                "capacity: measured against {percent} % of {workers} worker thread(s), at most {} rooms",
                cx.max_rooms
            );
        } else {
            warn!("capacity: no process CPU clock here: --cpu-budget ignored, --max-rooms decides");
        }
    }
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut said = None;
    loop {
        every.tick().await;
        let Some(cpu) = process_cpu() else {
            // No clock: the fixed limit, and no figures.
            return;
        };
        let (ticks, late_ticks) = cx.monitor.tick_counts();
        let est = estimator.push(Sample {
            wall_us: micros(cx.base),
            cpu_us: u64::try_from(cpu.as_micros()).unwrap_or(u64::MAX),
            open: cx.rooms.lock().len() as u64,
            ticks,
            late_ticks,
        });
        let capacity = usize::try_from(est.capacity).unwrap_or(usize::MAX);
        cx.capacity.store(capacity, Ordering::Relaxed);
        // Gauges are floats: the edge.
        let cores = |ppm: u64| ppm as f64 / 1e6;
        gauge!(names::ROOM_CAPACITY).set(capacity as f64);
        gauge!(names::CPU_CORES).set(cores(est.cores_ppm));
        if let Some(room) = est.room_ppm {
            gauge!(names::ROOM_CPU_CORES).set(cores(room));
        }
        if cx.cpu_budget.is_some() && said != Some(capacity) {
            debug!(
                "capacity: {capacity} rooms ({:.1} % of a core in use, a room {:.2} %, {:.1} % of ticks late)",
                cores(est.cores_ppm) * 100.0,
                est.room_ppm.map_or(0.0, cores) * 100.0,
                est.late_ppm as f64 / 1e4,
            );
            said = Some(capacity);
        }
    }
}

/// `part / whole` in millionths.
fn ratio_ppm(part: u64, whole: u64) -> u64 {
    u64::try_from(u128::from(part) * 1_000_000 / u128::from(whole.max(1))).unwrap_or(u64::MAX)
}

/// The CPU time of the whole process (every thread, user and kernel);
/// `None` where the platform has no such clock.
pub fn process_cpu() -> Option<Duration> {
    #[cfg(unix)]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        let secs = u64::try_from(t.tv_sec).ok()?;
        let nanos = u32::try_from(t.tv_nsec).ok()?;
        Some(Duration::new(secs, nanos))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` samples a second apart: `cores_ppm` of CPU, `open` rooms, `late`
    /// of every 60 × rooms ticks late.
    fn run(e: &mut Estimator, n: u64, cores_ppm: u64, open: u64, late_per_mille: u64) -> Estimate {
        let mut last = None;
        let start = e.samples.back().copied().unwrap_or(Sample {
            wall_us: 0,
            cpu_us: 0,
            open,
            ticks: 0,
            late_ticks: 0,
        });
        for i in 1..=n {
            let ticks = 60 * open * i;
            last = Some(e.push(Sample {
                wall_us: start.wall_us + i * 1_000_000,
                cpu_us: start.cpu_us + i * cores_ppm,
                open,
                ticks: start.ticks + ticks,
                late_ticks: start.late_ticks + ticks * late_per_mille / 1000,
            }));
        }
        last.expect("n > 0")
    }

    #[test]
    fn capacity_is_what_fits_in_the_budget_at_the_measured_cost() {
        // Two workers at 75 %: 1.5 cores. 10 rooms at 3 % each take 0.3
        // cores; 1.2 cores left are 40 more rooms.
        let mut e = Estimator::new(2, Some(75), 200);
        let est = run(&mut e, WINDOW as u64 + 3, 300_000, 10, 0);
        assert_eq!(est.cores_ppm, 300_000);
        assert_eq!(est.room_ppm, Some(30_000));
        assert_eq!(est.capacity, 50);
        // At most --max-rooms.
        let mut e = Estimator::new(2, Some(75), 30);
        assert_eq!(run(&mut e, 5, 300_000, 10, 0).capacity, 30);
    }

    #[test]
    fn over_budget_takes_no_new_room_and_never_counts_below_the_open_ones() {
        let mut e = Estimator::new(1, Some(50), 64);
        // 20 rooms at 3 %: 0.6 cores, over the 0.5 budget.
        let est = run(&mut e, 5, 600_000, 20, 0);
        assert_eq!(est.capacity, 20);
    }

    #[test]
    fn late_ticks_close_the_server_to_new_rooms() {
        let mut e = Estimator::new(4, Some(80), 200);
        // Little CPU, but 2 % of the ticks start late: the cores are
        // behind (another process, a noisy neighbour).
        let est = run(&mut e, 5, 100_000, 5, 20);
        assert_eq!(est.late_ppm, 20_000);
        assert_eq!(est.capacity, 5);
        // Under 1 % late: the budget decides again, once the late ticks
        // have left the window.
        let est = run(&mut e, WINDOW as u64 + 1, 100_000, 5, 5);
        assert_eq!(est.late_ppm, 5_000);
        assert_eq!(est.capacity, 5 + (3_200_000 - 100_000) / 20_000);
    }

    #[test]
    fn without_a_measured_room_or_a_budget_the_limit_is_max_rooms() {
        // No room open yet: nothing to measure a room by.
        let mut e = Estimator::new(2, Some(75), 64);
        let est = run(&mut e, 5, 20_000, 0, 0);
        assert_eq!((est.room_ppm, est.capacity), (None, 64));
        // No budget: the figures, but the fixed limit.
        let mut e = Estimator::new(2, None, 64);
        let est = run(&mut e, 5, 1_900_000, 20, 0);
        assert_eq!((est.room_ppm, est.capacity), (Some(95_000), 64));
        // The first sample has no interval.
        let mut e = Estimator::new(2, Some(75), 64);
        let est = e.push(Sample {
            wall_us: 5,
            cpu_us: 5,
            open: 3,
            ticks: 0,
            late_ticks: 0,
        });
        assert_eq!((est.cores_ppm, est.capacity), (0, 64));
    }

    #[test]
    fn a_room_s_cost_is_its_highest_of_the_last_five_minutes() {
        let mut e = Estimator::new(1, Some(80), 200);
        // 10 full rooms at 5 % each, then the players leave and the empty
        // rooms cost 1 % each: the capacity still counts 5 % a room.
        run(&mut e, 20, 500_000, 10, 0);
        let est = run(&mut e, 60, 100_000, 10, 0);
        assert_eq!(est.room_ppm, Some(50_000));
        assert_eq!(est.capacity, 10 + (800_000 - 100_000) / 50_000);
        // Five minutes later the cheaper figure is the highest left.
        let est = run(&mut e, PEAK_SPAN.as_secs(), 100_000, 10, 0);
        assert_eq!(est.room_ppm, Some(10_000));
        assert_eq!(est.capacity, 10 + (800_000 - 100_000) / 10_000);
    }

    #[test]
    fn idle_intervals_are_not_charged_and_a_short_burst_is_not_a_room() {
        let mut e = Estimator::new(1, Some(80), 64);
        // Five idle seconds at 2 %, then one room for two seconds at 30 %
        // (its players joining): not enough room time to say.
        run(&mut e, 5, 20_000, 0, 0);
        let est = run(&mut e, 2, 300_000, 1, 0);
        assert_eq!((est.room_ppm, est.capacity), (None, 64));
        // Three more seconds at 3 %: five room-seconds, the idle ones
        // left out: (2 × 30 % + 3 × 3 %) / 5 s.
        let est = run(&mut e, 3, 30_000, 1, 0);
        assert_eq!(est.room_ppm, Some((600_000 + 90_000) / 5));
    }

    #[test]
    fn a_room_s_cost_is_kept_while_no_room_is_open() {
        let mut e = Estimator::new(1, Some(80), 64);
        run(&mut e, 5, 200_000, 4, 0);
        // Every room closed: the last cost measured still sizes the
        // capacity (0.8 cores at 5 % a room).
        let est = run(&mut e, WINDOW as u64 + 1, 0, 0, 0);
        assert_eq!(est.room_ppm, Some(50_000));
        assert_eq!(est.capacity, 16);
    }

    #[test]
    fn the_process_cpu_clock_runs() {
        let Some(a) = process_cpu() else {
            return;
        };
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = process_cpu().expect("the clock was there");
        assert!(b > a, "{a:?} then {b:?}");
    }
}

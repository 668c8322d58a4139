//! Real-time scheduling for the server (`serve --realtime`, Linux).
//!
//! A room's tick is due at a fixed instant. At normal priority the kernel
//! shares a busy machine's cores fairly, so a thread woken for a tick waits
//! its turn behind whatever else is runnable, the network work of the same
//! server and every other process alike. On the 2-core machine these
//! figures come from, with 50 rooms × 8 load bots running (server and bots
//! together most of the 200 %), a probe thread that does nothing but wake
//! every 16.7 ms woke up to 1.6–1.9 ms late (p99) at normal priority,
//! 1.4 ms at nice −10 and 70 µs under `SCHED_FIFO`. A tick takes two such
//! wakes (the timer thread, then a runtime worker), so at normal priority
//! that load cannot tick under 2 ms at p99 however the server's own threads
//! are arranged (rooms on their own threads, or the network threads at a
//! lower priority, were measured too: no better). `docs/load-tests.md`
//! has the figures with and without.
//!
//! [`enter`] puts the calling thread under `SCHED_FIFO` at [`PRIORITY`].
//! Linux threads inherit their creator's policy, so called before the
//! runtime and the server are built it covers every thread of the server:
//! workers, the blocking pool, the tick timer. The tick timer then moves one
//! notch up (`raise_timer`): threads at one real-time priority do not
//! preempt each other, and the timer, which only wakes rooms, must not wait
//! behind a worker or a blocking job (snapshot packing) that holds a core.
//! The kernel's real-time throttling (by default 5 % of every second is
//! kept for normal threads) stops a runaway room from locking the machine
//! up entirely, but everything at normal priority, the machine's other
//! processes and the kernel's own deferred network work included, gets only
//! what the server leaves: this is for a machine dedicated to serving.
//!
//! It needs `CAP_SYS_NICE` (root) or an `RLIMIT_RTPRIO` of at least
//! [`PRIORITY`] + 1 (`ulimit -r 11`); in a container also a real-time
//! budget where the kernel has real-time group scheduling
//! (`docker run --cpu-rt-runtime`). Without them [`enter`] fails and `serve`
//! says so and carries on at normal priority.

/// The `SCHED_FIFO` priority asked for (1–99): low, since any real-time
/// priority runs ahead of every normal thread. The tick timer runs one
/// above.
pub const PRIORITY: u8 = 10;

/// Puts the calling thread (and so every thread it starts afterwards)
/// under `SCHED_FIFO` at [`PRIORITY`].
///
/// # Errors
/// The OS refused (no `CAP_SYS_NICE` or `RLIMIT_RTPRIO`), or the platform
/// is not Linux.
pub fn enter() -> Result<(), String> {
    set_fifo(PRIORITY)
}

/// Called by the tick timer thread when it starts: if it inherited
/// `SCHED_FIFO` (see [`enter`]), moves it to [`PRIORITY`] + 1. Nothing
/// otherwise; a refusal leaves it at [`PRIORITY`].
pub(crate) fn raise_timer() {
    #[cfg(target_os = "linux")]
    if is_fifo() {
        if let Err(e) = set_fifo(PRIORITY + 1) {
            tracing::warn!("tick timer stays at real-time priority {PRIORITY}: {e}");
        }
    }
}

#[cfg(target_os = "linux")]
fn is_fifo() -> bool {
    use thread_priority::unix::{
        thread_schedule_policy, RealtimeThreadSchedulePolicy, ThreadSchedulePolicy,
    };
    matches!(
        thread_schedule_policy(),
        Ok(ThreadSchedulePolicy::Realtime(
            RealtimeThreadSchedulePolicy::Fifo
        ))
    )
}

#[cfg(target_os = "linux")]
fn set_fifo(priority: u8) -> Result<(), String> {
    use thread_priority::unix::{
        set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy,
        ThreadSchedulePolicy,
    };
    use thread_priority::{ThreadPriority, ThreadPriorityValue};
    let value = ThreadPriorityValue::try_from(priority).map_err(|e| e.to_string())?;
    set_thread_priority_and_policy(
        thread_native_id(),
        ThreadPriority::Crossplatform(value),
        ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
    )
    .map_err(|e| match e {
        thread_priority::Error::OS(code) => format!(
            "{}; real time needs CAP_SYS_NICE or `ulimit -r {}`",
            std::io::Error::from_raw_os_error(code),
            PRIORITY + 1
        ),
        e => e.to_string(),
    })
}

#[cfg(not(target_os = "linux"))]
fn set_fifo(_priority: u8) -> Result<(), String> {
    Err("real-time scheduling is only supported on Linux".into())
}

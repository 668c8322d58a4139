//! Real-time scheduling for the server (`serve --realtime`).
//!
//! A room's tick is due at a fixed instant. At normal priority the kernel
//! shares a busy machine's cores fairly, so a thread woken for a tick waits
//! its turn behind whatever else is runnable, the network work of the same
//! server and every other process alike. On the 2-core machine these
//! figures come from, with 50 rooms × 8 load bots running (server and bots
//! together about 175 % of 200 %), a probe thread that does nothing but
//! wake every 16.7 ms woke up to 1.6–1.9 ms late (p99) at normal priority,
//! 1.4 ms at nice −10 and 70 µs under `SCHED_FIFO`. A tick takes two such
//! wakes (the timer thread, then a worker), which is why at normal priority
//! that load ticks 2.4–2.9 ms late at p99 however the server's own threads
//! are arranged. (Rooms on their own threads at normal priority, or with
//! the network threads at a lower priority, were measured too: no better.)
//!
//! [`enter`] puts the calling thread under `SCHED_FIFO` at
//! [`PRIORITY`]. Threads inherit their creator's policy, so called before
//! the runtime and the server are built it covers every thread of the
//! server: workers, the blocking pool, the tick timer. The whole process
//! then runs ahead of every normal process; it is meant for a machine
//! dedicated to serving. The kernel's real-time throttling (by default 5 %
//! of every second is kept for normal threads) stops a runaway room from
//! locking the machine up entirely.
//!
//! It needs `CAP_SYS_NICE` (root) or an `RLIMIT_RTPRIO` of at least
//! [`PRIORITY`] (`ulimit -r 10`; in Docker `--ulimit rtprio=10`); without
//! them [`enter`] fails and `serve` says so and carries on at normal
//! priority.
//!
//! What it costs: every wake of a server thread now preempts whatever runs,
//! so the server switches context far more often (about 11 % of its samples
//! in the kernel's task switch under the 50-room load, and 150 % of the
//! machine's CPU against 121 % at normal priority), and processes at normal
//! priority get only what the server leaves. Load clients on the same
//! machine saw their round trips grow from 1–5 ms to about 190 ms: fine for
//! a dedicated host, not for one shared with its clients.

/// The `SCHED_FIFO` priority asked for (1–99): low, since any real-time
/// priority runs ahead of every normal thread.
pub const PRIORITY: u8 = 10;

/// Puts the calling thread (and so every thread it starts afterwards)
/// under `SCHED_FIFO` at [`PRIORITY`].
///
/// # Errors
/// The OS refused (no `CAP_SYS_NICE`), or the platform has no real-time
/// policy.
pub fn enter() -> Result<(), String> {
    set_fifo()
}

#[cfg(unix)]
fn set_fifo() -> Result<(), String> {
    use thread_priority::unix::{
        set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy,
        ThreadSchedulePolicy,
    };
    use thread_priority::{ThreadPriority, ThreadPriorityValue};
    let value = ThreadPriorityValue::try_from(PRIORITY).map_err(|e| e.to_string())?;
    set_thread_priority_and_policy(
        thread_native_id(),
        ThreadPriority::Crossplatform(value),
        ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
    )
    .map_err(|e| match e {
        thread_priority::Error::OS(code) => std::io::Error::from_raw_os_error(code).to_string(),
        e => e.to_string(),
    })
}

#[cfg(not(unix))]
fn set_fifo() -> Result<(), String> {
    Err("real-time scheduling is only supported on Unix".into())
}

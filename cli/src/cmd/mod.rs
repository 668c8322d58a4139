//! The commands, one file each: its arguments (a clap `Args` struct) and
//! its `run`, which returns the process exit code.
//!
//! Exit codes shared by every command: 0 success, 1 a failure of what was
//! run (a desync, a divergence, a bot that failed), 2 bad input (arguments,
//! files).

pub mod bots;
pub mod demo;
pub mod keygen;
pub mod replay;
pub mod serve;
pub mod sim;
pub mod token;
pub mod web;

use std::process::ExitCode;

/// Exit code for bad command-line input or an unusable input file.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Prints `error: MSG` (one line) and returns [`EXIT_BAD_INPUT`].
pub fn bad_input(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// A multi-threaded tokio runtime for the networked commands.
///
/// # Errors
/// The runtime could not start: the message is printed and exit code 1
/// returned.
pub fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    runtime_with(None)
}

/// [`runtime`] with this many worker threads (`None`: tokio's default, one
/// per CPU or `TOKIO_WORKER_THREADS`).
///
/// # Errors
/// As [`runtime`].
pub fn runtime_with(threads: Option<usize>) -> Result<tokio::runtime::Runtime, ExitCode> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    builder.enable_all().build().map_err(|e| {
        eprintln!("error: cannot start the runtime: {e}");
        ExitCode::from(1)
    })
}

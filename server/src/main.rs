//! `bitroom-server`: the authoritative server and its tools.
//!
//! Thin by design: parse the arguments, call into the library modules.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod render;
mod replay_cmd;
mod sim_cmd;

#[derive(Parser, Debug)]
#[command(
    name = "bitroom-server",
    version,
    about = "bitroom: deterministic multiplayer physics rooms"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scene headless: final state hash, ms/step, JSON states, rendering, benchmarks.
    Sim(sim_cmd::SimArgs),
    /// Replay files: verify, diff, info, export (and record a bot game).
    Replay(replay_cmd::ReplayArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim_cmd::run(args),
        Command::Replay(args) => replay_cmd::run(args),
    }
}

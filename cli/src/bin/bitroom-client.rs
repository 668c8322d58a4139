//! `bitroom-client`: headless clients for bitroom servers.
//!
//! Thin by design: parse the arguments, call the command.

use bitroom_cli::cmd::bots;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "bitroom-client",
    version,
    about = "bitroom headless clients: bots for load tests and soak tests"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Connect N bot players to a room and report how they fared.
    Bots(bots::BotsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    bitroom_cli::init_tracing("warn");
    match cli.command {
        Command::Bots(args) => bots::run(args),
    }
}

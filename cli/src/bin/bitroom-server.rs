//! `bitroom-server`: the authoritative server and its tools.
//!
//! Thin by design: parse the arguments, call the command.

use bitroom_cli::cmd::{demo, keygen, replay, serve, sim, token};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
    /// Host rooms over QUIC.
    // Boxed: its many options dwarf the other commands'.
    Serve(Box<serve::ServeArgs>),
    /// A server on loopback with four bots (one behind a link conditioner), then a report.
    Demo(demo::DemoArgs),
    /// Run a scene headless: final state hash, ms/step, JSON states, rendering, benchmarks.
    Sim(sim::SimArgs),
    /// Replay files: verify, diff, info, export (and record a bot game).
    Replay(replay::ReplayArgs),
    /// Write a connect-token key pair (private key for the game backend, public key for servers).
    Keygen(keygen::KeygenArgs),
    /// Mint a connect token with a private key file and print it.
    Token(token::TokenArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    bitroom_cli::init_tracing(match cli.command {
        Command::Serve(_) => "info",
        _ => "warn",
    });
    match cli.command {
        Command::Serve(args) => serve::run(*args),
        Command::Demo(args) => demo::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Keygen(args) => keygen::run(&args),
        Command::Token(args) => token::run(&args),
    }
}

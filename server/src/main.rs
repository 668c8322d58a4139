//! `bitroom-server`: the authoritative server and its tools.
//!
//! Thin by design: parse the arguments, call into the library modules.

use bitroom_server::{demo, keygen_cmd, replay_cmd, serve_cmd, sim_cmd, token_cmd};
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
    Serve(serve_cmd::ServeArgs),
    /// A server on loopback with four bots (one behind a link conditioner), then a report.
    Demo(demo::DemoArgs),
    /// Run a scene headless: final state hash, ms/step, JSON states, rendering, benchmarks.
    Sim(sim_cmd::SimArgs),
    /// Replay files: verify, diff, info, export (and record a bot game).
    Replay(replay_cmd::ReplayArgs),
    /// Write a connect-token key pair (private key for the game backend, public key for servers).
    Keygen(keygen_cmd::KeygenArgs),
    /// Mint a connect token with a private key file and print it.
    Token(token_cmd::TokenArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = match cli.command {
        Command::Serve(_) => "info",
        _ => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    match cli.command {
        Command::Serve(args) => serve_cmd::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Sim(args) => sim_cmd::run(args),
        Command::Replay(args) => replay_cmd::run(args),
        Command::Keygen(args) => keygen_cmd::run(&args),
        Command::Token(args) => token_cmd::run(&args),
    }
}

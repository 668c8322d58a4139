//! A custom game on bitroom, served to bots over QUIC.
//!
//! Run it with:
//!
//! ```sh
//! cargo run --release -p bitroom-examples --example football
//! ```
//!
//! The game is two-team physics football (`src/football/`): its own rules
//! (a pitch, a ball, goals, a score in the rules' state), its own input
//! type (`Kick`: a run direction and a kick button, 3 bytes) and its own
//! bots (`Striker`: forwards run behind the ball and kick it goalwards,
//! keepers guard their goal). This program hosts it with the server
//! library on loopback, connects four bots and a spectator with the client
//! library, lets them play for ten seconds (`--seconds N` for another
//! length), and prints how every client fared: desyncs (there must be
//! none) and how many confirmed ticks each checked against the server's
//! state hash. It exits with 1 on a desync or a failed bot.

use bitroom_examples::football::play_match;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let seconds = match std::env::args().skip_while(|a| a != "--seconds").nth(1) {
        Some(s) => match s.parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("error: --seconds takes a whole number of seconds, got {s:?}");
                return ExitCode::from(2);
            }
        },
        None => 10,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    println!("football: 4 bots (a forward and a keeper a side) for {seconds} s on loopback QUIC");
    let report = match runtime.block_on(play_match(4, Duration::from_secs(seconds), 1)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    print!("{}", report.table());
    let failed = report.players.iter().filter(|p| p.error.is_some()).count();
    if report.desyncs() == 0 && failed == 0 {
        println!("result: OK — 0 desyncs, every client checked the confirmed ticks' hashes");
        ExitCode::SUCCESS
    } else {
        println!(
            "result: FAILED — desyncs {}, bots failed {failed}",
            report.desyncs()
        );
        ExitCode::from(1)
    }
}

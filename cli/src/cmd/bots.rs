//! `bitroom-client bots`: N sandbox bot players in one or more rooms, a
//! live status line, and a table of how each fared.

use super::{bad_input, runtime};
use crate::args::{CertArgs, ConditionerArgs};
use crate::sandbox::rules_for_scene;
use crate::status::StatusLine;
use bitroom_client::bots::{plan, BotFleet, FailRule, FleetStatus};
use bitroom_client::link_model::Percent;
use bitroom_protocol::token::{decode_text, Claims, SigningKey, MAX_TOKEN_LIFETIME};
use bitroom_sim::game::sandbox::Strategy;
use bitroom_transport::keys;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `bots`.
#[derive(Args, Debug)]
pub struct BotsArgs {
    /// Server address, e.g. 127.0.0.1:4433 or server:4433.
    #[arg(long, value_name = "ADDR")]
    server: String,
    /// Room to join (created by the server on first join).
    #[arg(long, default_value = "lobby")]
    room: String,
    /// Spread the bots over this many rooms: ROOM-0, ROOM-1, …
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    rooms: u32,
    /// Number of bots.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    count: u32,
    /// How the bots play: idle, random, circle or chaser.
    #[arg(long, default_value = "random")]
    strategy: Strategy,
    /// How long to play, e.g. 60s or 5m.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Follow the confirmed game only (no prediction, no rollbacks; cheaper).
    #[arg(long)]
    no_predict: bool,
    /// Load clients: a player's traffic (hello, inputs every tick, acks,
    /// pings) without simulating or checking anything. Hundreds per core.
    #[arg(long, conflicts_with = "no_predict")]
    load: bool,
    /// The server's scene (must match): `arena`, `arena:N`, a built-in
    /// scene or a JSON scene file.
    #[arg(long, default_value = "arena")]
    scene: String,
    /// Seed of the bots' inputs (bot i uses SEED + i).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bots started per second.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    spawn_rate: u32,
    /// A connect token (its text form, from the game's backend or
    /// `bitroom-server token`) for a server that requires one. A token
    /// admits once: one bot.
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_key")]
    token: Option<String>,
    /// Mint a token for each bot with this private key file (tests and
    /// load): room, player, user id = the bot's name, valid 5 minutes.
    #[arg(long, value_name = "FILE")]
    token_key: Option<PathBuf>,
    /// The server id the minted tokens name (`serve --server-id`).
    #[arg(long, value_name = "ID", requires = "token_key")]
    server_id: Option<String>,
    /// Input batches per second per bot [default: one per tick]; each
    /// carries every input not yet acknowledged.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    send_rate: Option<u32>,
    /// A bot that hash-checked fewer of the ticks it was in the room for
    /// fails.
    #[arg(long, value_name = "PERCENT", default_value = "90%")]
    min_verified: Percent,
    /// A bot whose confirmed tick did not move for this long while its
    /// link was up fails.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = humantime::parse_duration)]
    max_stall: Duration,
    /// A bot resynced (sent a snapshot after its join) more often fails.
    #[arg(long, value_name = "N", default_value_t = 3)]
    max_resyncs: u64,
    #[command(flatten)]
    cert: CertArgs,
    #[command(flatten)]
    sim: ConditionerArgs,
}

/// Runs `bots`.
pub fn run(args: BotsArgs) -> ExitCode {
    let server = match resolve(&args.server) {
        Some(a) => a,
        None => {
            return bad_input(format!(
                "--server {:?}: not an address like 127.0.0.1:4433 or a resolvable host:port",
                args.server
            ))
        }
    };
    let pin = match args.cert.pin() {
        Ok(p) => p,
        Err(e) => return bad_input(e.to_string()),
    };
    let rules = match rules_for_scene(&args.scene) {
        Ok(r) => r,
        Err(e) => return bad_input(e),
    };
    let token =
        match &args.token {
            Some(_) if args.count > 1 => return bad_input(
                "--token admits one bot (a token is used once): mint one per bot with --token-key",
            ),
            Some(t) => match decode_text(t) {
                Ok(bytes) => Some(bytes),
                Err(e) => return bad_input(format_args!("--token: {e}")),
            },
            None => None,
        };
    let minter = match &args.token_key {
        Some(path) => match keys::load_signing_key(path) {
            Ok(k) => Some(Minter {
                key: k,
                server_id: args.server_id.clone().unwrap_or_default(),
            }),
            Err(e) => return bad_input(format_args!("--token-key: {e}")),
        },
        None => None,
    };
    let runtime = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let specs = plan(
        &args.room,
        args.rooms,
        args.count,
        args.strategy,
        args.seed,
        !args.no_predict,
        args.sim.config(),
        args.load,
    );
    if let Some(c) = args.sim.config() {
        eprintln!("link conditioner: {c}");
    }
    let rule = FailRule {
        stall: args.max_stall,
        max_resyncs: args.max_resyncs,
        min_verified_ppm: args.min_verified.ppm,
    };
    let report = runtime.block_on(async move {
        let mut fleet = BotFleet::new(server, rules, pin);
        fleet.set_rule(rule);
        fleet.set_send_rate(args.send_rate.unwrap_or(0));
        let spawn_gap = Duration::from_secs(1) / args.spawn_rate;
        let end = tokio::time::Instant::now() + args.duration;
        let mut specs = specs.into_iter();
        let mut status = StatusLine::new();
        let mut prev = FleetStatus::default();
        let mut next_status = tokio::time::Instant::now() + Duration::from_secs(1);
        let mut next_spawn = tokio::time::Instant::now();
        loop {
            let now = tokio::time::Instant::now();
            if now >= end {
                break;
            }
            while now >= next_spawn {
                match specs.next() {
                    Some(mut s) => {
                        s.token = match &minter {
                            Some(m) => match m.mint(&s.room, &s.name) {
                                Ok(t) => Some(t),
                                Err(e) => {
                                    eprintln!("error: cannot mint a token for {}: {e}", s.name);
                                    None
                                }
                            },
                            None => token.clone(),
                        };
                        fleet.spawn(s);
                        next_spawn += spawn_gap;
                    }
                    None => {
                        // All started: no more spawn wake-ups.
                        next_spawn = end;
                        break;
                    }
                }
            }
            if now >= next_status {
                let s = fleet.status();
                status.show(&s.line(&prev));
                prev = s;
                next_status += Duration::from_secs(1);
            }
            let wake = next_status.min(end).min(next_spawn);
            tokio::time::sleep_until(wake).await;
        }
        status.finish(false);
        fleet.finish().await
    });
    println!("{}", report.table().trim_end());
    let desyncs = report.desyncs();
    let failures = report.failures();
    println!(
        "summary: {} bots, {:.1} s, desyncs {desyncs}, failed {failures}",
        report.bots.len(),
        report.elapsed.as_secs_f64()
    );
    if desyncs > 0 || failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// An `IP:PORT`, or a `HOST:PORT` looked up once (first address).
fn resolve(s: &str) -> Option<SocketAddr> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Some(a);
    }
    s.to_socket_addrs().ok()?.next()
}

/// Mints each bot's token (`--token-key`).
struct Minter {
    key: SigningKey,
    server_id: String,
}

impl Minter {
    /// A player token for `room`, user id `user`, valid for the longest
    /// lifetime from now.
    fn mint(&self, room: &str, user: &str) -> Result<Vec<u8>, keys::KeyError> {
        let mut claims = Claims::player(room, keys::unix_now(), MAX_TOKEN_LIFETIME);
        claims.user = user.as_bytes().to_vec();
        claims.server_id = self.server_id.clone();
        Ok(keys::mint_token(&self.key, &claims)?.to_bytes())
    }
}

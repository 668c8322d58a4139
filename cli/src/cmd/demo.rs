//! `bitroom-server demo`: a server on loopback, four in-process bots (one
//! behind a link conditioner), a live status line, and a report.

use super::{bad_input, runtime};
use crate::sandbox::rules_for_scene;
use crate::status::StatusLine;
use bitroom_client::bots::{BotFleet, BotSpec, FleetStatus};
use bitroom_client::conditioner::ConditionerConfig;
use bitroom_protocol::token::{Claims, KeyId, Role, SigningKey};
use bitroom_protocol::RoomConfig;
use bitroom_server::tls::Identity;
use bitroom_server::TokenMint;
use bitroom_server::{Server, ServerConfig, TokenConfig};
use bitroom_sim::game::sandbox::{Sandbox, Strategy};
use bitroom_sim::game::Rules;
use bitroom_transport::{keys, CertPin};
use clap::Args;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// How long the bots play.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Ticks per second.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=1000))]
    tick_rate: u32,
    /// Datagrams per second each way (frame bundles, input batches)
    /// [default: the tick rate].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    send_rate: Option<u32>,
    /// The scene: `arena` (200 loose bodies), `arena:N` (N loose bodies), a
    /// built-in scene or a JSON scene file.
    #[arg(long, default_value = "arena")]
    scene: String,
    /// Seed of the bots' inputs and of the conditioner.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Serve the page too, on this address (default 127.0.0.1:8080), and
    /// print the URL of the demo room; with a longer --duration to watch.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
    web: Option<String>,
}

/// The room the demo plays in.
const ROOM: &str = "demo";
/// The demo server's id (its tokens name it).
const SERVER_ID: &str = "demo";

/// Runs the demo.
pub fn run(args: DemoArgs) -> ExitCode {
    let rules = match rules_for_scene(&args.scene) {
        Ok(r) => r,
        Err(e) => return bad_input(e),
    };
    let runtime = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let code = runtime.block_on(demo(args, rules));
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

async fn demo(args: DemoArgs, rules: Sandbox) -> ExitCode {
    let identity = match Identity::self_signed() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let bodies = rules.build_world().body_count();
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().expect("address literal"),
        rules.clone(),
        identity,
    );
    config.room = RoomConfig {
        tick_rate: args.tick_rate,
        send_rate: args.send_rate.unwrap_or(args.tick_rate),
        ..RoomConfig::default()
    };
    // The demo's four bots must all get in, even on a busy machine.
    config.shed_lateness = None;
    // The demo plays the game backend too: a key pair in memory, the
    // server trusting its public key, a token minted for each bot.
    let key = match keys::generate_signing_key() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    config.tokens = Some(TokenConfig::new(vec![key.verifying_key()], SERVER_ID));
    if let Some(web) = &args.web {
        match super::web::web_config(web, &args.scene, None) {
            Ok(mut w) => {
                w.mint = Some(page_tokens(key.clone()));
                config.web = Some(w);
            }
            Err(e) => return bad_input(e),
        }
    }
    let server = match Server::bind(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let addr = server.local_addr();
    let web_addr = server.web_addr();
    let pin = CertPin::Sha256(server.fingerprint());
    let monitor = server.monitor();
    let stop = server.shutdown_handle();
    let server_task = tokio::spawn(server.run());
    let conditioner = ConditionerConfig {
        latency: Duration::from_millis(120),
        jitter: Duration::from_millis(20),
        loss_ppm: 50_000,
        seed: args.seed,
        ..ConditionerConfig::default()
    };
    println!(
        "bitroom demo: server on {addr} (scene {}, {bodies} bodies, {} Hz), 4 bots in room {ROOM:?} for {:.0} s",
        args.scene,
        args.tick_rate,
        args.duration.as_secs_f64()
    );
    println!("bot3 plays through a link conditioner: {conditioner}");
    if let Some(web) = web_addr {
        println!(
            "in a browser: {}  (watch: &spectate=1; the room closes after {:.0} s, --duration to change)",
            super::web::room_url(web, ROOM),
            args.duration.as_secs_f64()
        );
    }
    println!(
        "connect tokens: the server requires them ({}, server id {SERVER_ID:?}); each bot got one minted for it",
        KeyId::of(&key.verifying_key())
    );
    let mut fleet = BotFleet::new(addr, rules, pin);
    fleet.set_send_rate(args.send_rate.unwrap_or(0));
    let strategies = [
        Strategy::Random,
        Strategy::Chaser,
        Strategy::Circle,
        Strategy::Random,
    ];
    for (i, strategy) in strategies.into_iter().enumerate() {
        let name = format!("bot{i}");
        let mut claims = Claims::player(ROOM, keys::unix_now(), 60);
        claims.user = name.clone().into_bytes();
        claims.server_id = SERVER_ID.into();
        let token = match keys::mint_token(&key, &claims) {
            Ok(t) => t.to_bytes(),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        };
        fleet.spawn(BotSpec {
            name,
            room: ROOM.into(),
            token: Some(token),
            strategy,
            seed: args.seed.wrapping_add(i as u64),
            predict: true,
            conditioner: (i == 3).then_some(conditioner),
            load: false,
        });
    }
    let mut status = StatusLine::new();
    let start = tokio::time::Instant::now();
    let mut prev = FleetStatus::default();
    let mut next = start + Duration::from_secs(1);
    while next <= start + args.duration {
        tokio::time::sleep_until(next).await;
        next += Duration::from_secs(1);
        let s = fleet.status();
        let m = monitor.snapshot();
        let line = format!(
            "{}  ticks {}  tick p99 {} µs",
            s.line(&prev),
            m.tick.count,
            m.tick.p99
        );
        prev = s;
        status.show(&line);
    }
    status.finish(true);
    let server_view = monitor.snapshot();
    let report = fleet.finish().await;
    stop.shutdown();
    let _ = server_task.await;

    let room = server_view
        .room_stats
        .get(ROOM)
        .copied()
        .unwrap_or_default();
    println!();
    println!(
        "server: ticks {}  tick time p50 {} µs  p99 {} µs  max {} µs  lateness p99 {} µs",
        server_view.tick.count,
        server_view.tick.p50,
        server_view.tick.p99,
        server_view.tick.max,
        server_view.lateness.p99
    );
    println!(
        "        late inputs {}  missing inputs {}  resent frames {}  desync reports {}  snapshots {}",
        room.late_inputs, room.missing_inputs, room.resent_frames, room.desyncs, room.snapshots
    );
    println!();
    print!("{}", report.table());
    let desyncs = report.desyncs();
    let failures = report.failures();
    println!();
    if desyncs == 0 && failures == 0 {
        println!(
            "result: OK — {} bots, 0 desyncs, every confirmed tick hash-checked against the server",
            report.bots.len()
        );
        ExitCode::SUCCESS
    } else {
        println!("result: FAILED — desyncs {desyncs}, bots failed {failures}");
        ExitCode::from(1)
    }
}

/// The demo is its own game backend for the page too: `/api/token` mints a
/// token for the room the page opens (a user id per page, so a page's
/// reconnect is bound to it), valid for a minute.
fn page_tokens(key: SigningKey) -> TokenMint {
    let pages = AtomicU64::new(0);
    TokenMint(Arc::new(move |room: &str, spectator: bool| {
        let mut claims = Claims::player(room, keys::unix_now(), 60);
        if spectator {
            claims.role = Role::Spectator;
        }
        let n = pages.fetch_add(1, Ordering::Relaxed);
        claims.user = format!("page{n}").into_bytes();
        claims.server_id = SERVER_ID.into();
        keys::mint_token(&key, &claims)
            .map(|t| t.to_text())
            .map_err(|e| e.to_string())
    }))
}

//! The server's work per tick for one default-arena room with eight load
//! clients, in-process: what `tools/room-cost.sh` loads a server with,
//! minus the network. Each player sends the sandbox game's random inputs,
//! each held for 5 to 44 ticks (as `bitroom-client bots --load` does).
//!
//! Prints the mean and median of `ServerRoom::tick` (with its datagrams)
//! over the timed ticks, the final state hash (which a pure speed-up must
//! leave as it was), how many bodies are awake, and the time of the state
//! hash alone (the final state hashed HASH_REPS times).
//!
//! Run: `cargo run --release -p bitroom-protocol --example room_load --
//! [WARM_TICKS] [TIMED_TICKS] [HASH_REPS] [arena:N] [ROOMS] [PAUSE_US]`
//! (defaults 600, 3000, 1000, the default arena, one room, no pause;
//! several rooms tick in turn, as a server's share its caches; a pause
//! between rounds, e.g. 16000, leaves the caches as cold as a server's
//! idle time between ticks does); under `perf record` for a profile of the
//! room's tick alone. It also builds for `wasm32-wasip1` and runs under
//! node (V8, the engine of Chromium's pages): what a tick costs a browser.

use bitroom_sim::game::sandbox::Sandbox;
use std::time::{Duration, Instant};

#[path = "../tests/load/mod.rs"]
mod load;
use load::Load;

/// One tick of `load` with every player's input datagram; its time (the
/// datagrams are made outside it).
fn timed_tick(load: &mut Load, rules: &Sandbox) -> Duration {
    let datagrams = load.datagrams(rules);
    let start = Instant::now();
    load.tick(&datagrams, drop);
    start.elapsed()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let warm: u64 = args.next().map_or(600, |a| a.parse().expect("warm ticks"));
    let timed: u64 = args
        .next()
        .map_or(3000, |a| a.parse().expect("timed ticks"));
    let hash_reps: u32 = args
        .next()
        .map_or(1000, |a| a.parse().expect("hash repetitions"))
        .max(1);

    let scene = args.next().unwrap_or_else(|| "arena".into());
    let rules =
        Sandbox::for_scene(&scene, |s| Err(format!("{s}: only arena or arena:N"))).expect("scene");
    let rooms: usize = args.next().map_or(1, |a| a.parse().expect("rooms")).max(1);
    let pause = Duration::from_micros(args.next().map_or(0, |a| a.parse().expect("pause µs")));
    let players = 8u8;
    let mut loads: Vec<Load> = (0..rooms)
        .map(|i| Load::new(&rules, players, 1 + i as u64))
        .collect();
    let mut times = Vec::with_capacity(timed as usize * rooms);
    for n in 0..warm + timed {
        // Round robin, as a server's rooms share its cores and caches.
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        for load in &mut loads {
            let elapsed = timed_tick(load, &rules);
            if n >= warm {
                times.push(elapsed);
            }
        }
    }
    let room = &loads[0].room;
    let start = Instant::now();
    let mut h = 0;
    for _ in 0..hash_reps {
        h ^= std::hint::black_box(room.game()).state_hash();
    }
    let hash_time = start.elapsed() / hash_reps;
    std::hint::black_box(h);
    let total: Duration = times.iter().sum();
    times.sort();
    let mean = total / times.len().max(1) as u32;
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let world = room.game().world();
    let bodies = world.body_count();
    let awake = world
        .bodies()
        .filter(|&b| world.is_awake(b).unwrap_or(false))
        .count();
    let contacts = world.contact_count();
    let state_bytes = room.game().world().snapshot().to_bytes().len();
    println!(
        "room_load: {rooms} room(s), {bodies} bodies ({awake} awake, {contacts} contacts, {state_bytes} state bytes), {players} players, ticks {warm}+{timed}: mean {:.1} µs, median {:.1} µs per tick; tick {} hash {:016x}; state_hash alone {:.1} µs",
        mean.as_secs_f64() * 1e6,
        median.as_secs_f64() * 1e6,
        room.tick_number(),
        room.last_hash(),
        hash_time.as_secs_f64() * 1e6
    );
}

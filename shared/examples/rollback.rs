//! The rollback benchmark's case (`benches/scenes.rs`, `rollback_8_ticks`)
//! as a plain program, so that it can be timed beside Box2D and counted
//! under valgrind:
//!
//! ```sh
//! cargo run --release -p bitroom-sim --example rollback -- [CASE] [ROLLBACKS] [THREADS]
//! ```
//!
//! CASE is `pyramid_990_awake` (the default), `arena_1000_falling` or
//! `arena_1000_resting`. It warms the timeline up as the benchmark does, then
//! rolls back 8 ticks and re-simulates to the present ROLLBACKS times
//! (default 50), and prints the median and fastest time of one rollback.
//! THREADS (default 1) steps the world on that many threads
//! (`World::set_threads`: the same bits, so the same printed hash).
//! Counting: run it under `valgrind --tool=callgrind
//! --toggle-collect='*rollback_to*'` with two ROLLBACKS counts; the
//! difference divided by theirs is one rollback's cost.

use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig};
use bitroom_sim::game::{Game, InputSet, SlotEvent, Timeline};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let case = args.first().map_or("pyramid_990_awake", String::as_str);
    let rollbacks: usize = args.get(1).map_or(50, |n| n.parse().expect("a count"));
    let threads: usize = args
        .get(2)
        .map_or(1, |n| n.parse().expect("a thread count"));
    let (rules, warm) = match case {
        "pyramid_990_awake" => (
            Sandbox::with_world("pyramid44", &(), bitroom_sim::scene::builders::pyramid(44)),
            20,
        ),
        "arena_1000_falling" => (Sandbox::new(SandboxConfig { loose_bodies: 1000 }), 60),
        "arena_1000_resting" => (Sandbox::new(SandboxConfig { loose_bodies: 1000 }), 900),
        other => {
            eprintln!("unknown case {other}");
            std::process::exit(2);
        }
    };
    let mut tl = Timeline::new(Game::new(rules, 4), 16);
    tl.game_mut()
        .world_mut()
        .set_threads(threads)
        .expect("threads start");
    for t in 1..=warm {
        let mut set = InputSet::with_inputs(vec![Default::default(); 4]);
        if t <= 4 {
            set.events.push(SlotEvent::Join((t - 1) as u8));
        }
        tl.confirm(t, set).expect("in order");
        tl.advance().expect("room");
        tl.update();
    }
    let back = tl.tick() - 8;
    // Wall time at the edge of the program: not simulation state.
    let mut ms: Vec<f64> = (0..rollbacks)
        .map(|_| {
            let t = Instant::now();
            tl.rollback_to(back).expect("saved");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    if let (Some(fastest), Some(median)) = (ms.first(), ms.get(ms.len() / 2)) {
        println!(
            "{case}: {rollbacks} rollbacks of 8 ticks on {threads} thread(s), median {median:.3} ms, fastest {fastest:.3} ms, hash {:016x}",
            tl.game().state_hash()
        );
    }
}

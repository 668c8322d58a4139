//! Writes starting corpora under `corpus/<target>/` (run from `fuzz/`):
//! real snapshots, a game snapshot, a short replay and the example scenes,
//! so the fuzzer starts from valid inputs and mutates its way into the
//! stepping code instead of stopping at the first length check.

use bitroom_sim::game::sandbox::Sandbox;
use bitroom_sim::game::{Game, InputSet, PlayerInput};
use bitroom_sim::scene::build_named;
use std::fs;
use std::path::Path;

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    fs::create_dir_all(&dir).expect("corpus directory");
    fs::write(dir.join(name), bytes).expect("seed file");
}

fn main() {
    for (scene, steps) in [
        ("stack", 30),
        ("pyramid", 60),
        ("bridge", 30),
        ("ragdoll", 30),
    ] {
        let Some(mut world) = build_named(scene) else {
            continue;
        };
        for _ in 0..steps {
            world.step();
        }
        write("snapshot", scene, &world.snapshot().to_bytes());
    }

    let mut game = Game::new(Sandbox::default(), 4);
    for slot in 0..4 {
        game.step(&InputSet::join(4, slot));
    }
    for t in 0..60u16 {
        let input = PlayerInput {
            buttons: (t % 7) as u8,
            move_x: 90,
            move_y: 0,
            aim: t * 1000,
        };
        game.step(&InputSet::with_inputs(vec![input; 4]));
    }
    let bytes = game.snapshot().to_bytes();
    write("game_snapshot", "arena-4", &bytes);
    // The world part alone is a world snapshot too.
    write("snapshot", "arena-4-world", &bytes[4..]);

    for entry in fs::read_dir("../scenes").expect("scenes folder").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        write("scene_json", &name, &fs::read(entry.path()).expect("scene"));
    }
    println!("seeds written under corpus/ (add a replay: see fuzz/README.md)");
}

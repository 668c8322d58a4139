//! Writes starting corpora under `corpus/<target>/` (run from `fuzz/`):
//! real snapshots, a game snapshot, a short replay and the example scenes,
//! so the fuzzer starts from valid inputs and mutates its way into the
//! stepping code instead of stopping at the first length check.

use bitroom_protocol::token::{mint, Claims, Nonce, Role};
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox};
use bitroom_sim::game::{Game, InputSet};
use bitroom_sim::scene::build_named;
use std::fs;
use std::path::Path;

/// Claims for the token seeds, valid at the harness's time.
fn token_claims() -> Vec<(&'static str, Claims)> {
    let now = 1_700_000_000;
    let player = Claims {
        room: "arena".into(),
        role: Role::Player,
        seat: Some(2),
        user: b"user-42".to_vec(),
        server_id: "eu-1".into(),
        issued_at: now,
        expires_at: now + 120,
    };
    let spectator = Claims {
        role: Role::Spectator,
        seat: None,
        server_id: String::new(),
        ..player.clone()
    };
    let longest = Claims {
        room: "r".repeat(64),
        user: vec![0xFF; 64],
        server_id: "s".repeat(64),
        ..player.clone()
    };
    vec![
        ("player", player),
        ("spectator", spectator),
        ("longest", longest),
    ]
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    fs::create_dir_all(&dir).expect("corpus directory");
    fs::write(dir.join(name), bytes).expect("seed file");
}

/// A `packed_snapshot` input: the pick byte, then (for a game, pick 1) the
/// inflated body's length as `u32` LE, the body, and the seats.
fn packed_input(pick: u8, packed: &[u8], extra: &[u8]) -> Vec<u8> {
    let len = u32::from_le_bytes(packed[1..5].try_into().expect("header")) as usize;
    let body =
        miniz_oxide::inflate::decompress_to_vec_with_limit(&packed[5..], len).expect("inflates");
    let mut out = vec![pick];
    if pick == 1 {
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&body);
    out.extend_from_slice(extra);
    out
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
        write(
            "packed_snapshot",
            scene,
            &packed_input(0, &world.snapshot().to_packed(), &[]),
        );
    }

    // Tokens: mode 0 (bytes as they arrive), 1 (the signed part, which the
    // harness signs) and 2 (the text form), from a few claims.
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    for (name, claims) in token_claims() {
        let t = mint(&key, &claims, Nonce([3; 16])).expect("valid claims");
        let bytes = t.to_bytes();
        write(
            "token",
            &format!("{name}-bytes"),
            &[&[0][..], &bytes].concat(),
        );
        let signed = &bytes[..bytes.len() - 64];
        write(
            "token",
            &format!("{name}-signed"),
            &[&[1][..], signed].concat(),
        );
        write(
            "token",
            &format!("{name}-text"),
            &[&[2][..], t.to_text().as_bytes()].concat(),
        );
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
    let packed = game.snapshot().to_packed();
    // The magic, the world part's length, the world part, the seats.
    let world_len = u32::from_le_bytes(packed[4..8].try_into().expect("4 bytes")) as usize;
    let (world, extra) = packed[8..].split_at(world_len);
    write("packed_snapshot", "arena-4", &packed_input(1, world, extra));

    for entry in fs::read_dir("../scenes").expect("scenes folder").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        write("scene_json", &name, &fs::read(entry.path()).expect("scene"));
    }
    println!("seeds written under corpus/ (add a replay: see fuzz/README.md)");
}

//! Packed snapshots (what a joining client receives): the input is the
//! *inflated* body, which the harness deflates behind a valid header so the
//! mutations reach the column decoder instead of dying in the deflate
//! stream. The first input byte picks a world (even) or a game snapshot
//! (odd, the world part packed and the seats after it as the join sends
//! them). Decoding refuses the bytes or gives a state that steps, hashes
//! and packs again without panicking.
#![no_main]

use bitroom_sim::game::sandbox::{PlayerInput, Sandbox};
use bitroom_sim::game::{Game, GameSnapshot, InputSet};
use bitroom_sim::{Snapshot, World};
use libfuzzer_sys::fuzz_target;

/// The packed header (format 1, the body's length) and the deflated body.
fn wrap(body: &[u8]) -> Vec<u8> {
    let mut out = vec![1];
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(body, 1));
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick % 2 == 0 {
        if let Ok(snap) = Snapshot::from_packed(&wrap(rest)) {
            let mut world = World::from_snapshot(&snap);
            for _ in 0..3 {
                world.step();
            }
            let _ = world.state_hash();
            let _ = world.snapshot().to_packed();
        }
        return;
    }
    // [u32 LE body length][body][seats and rules state, canonical].
    let Some((len, rest)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (body, extra) = rest.split_at(len);
    let world = wrap(body);
    let mut bytes = b"BRPK".to_vec();
    bytes.extend_from_slice(&(world.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&world);
    bytes.extend_from_slice(extra);
    if let Ok(snap) = GameSnapshot::<Sandbox>::from_packed(&bytes) {
        let slots = snap.slot_count();
        let mut game = Game::from_snapshot(Sandbox::default(), &snap);
        for t in 0..3u16 {
            let input = PlayerInput {
                buttons: 0xff,
                move_x: -127,
                move_y: 127,
                aim: t * 20000,
            };
            game.step(&InputSet::with_inputs(vec![input; usize::from(slots)]));
        }
        let _ = game.state_hash();
        let _ = game.snapshot().to_packed();
    }
});

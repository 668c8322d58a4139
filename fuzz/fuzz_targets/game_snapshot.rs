//! Game snapshot bytes (world, seats, rules state): decode, then play a
//! few ticks with every seat pressing buttons, joining and leaving.
#![no_main]

use bitroom_sim::game::sandbox::{PlayerInput, Sandbox};
use bitroom_sim::game::{Game, GameSnapshot, InputSet, SlotEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(snap) = GameSnapshot::<Sandbox>::from_bytes(data) {
        let slots = snap.slot_count();
        let mut game = Game::from_snapshot(Sandbox::default(), &snap);
        for t in 0..4u8 {
            let input = PlayerInput {
                buttons: 0xff,
                move_x: 127,
                move_y: -127,
                aim: u16::from(t) * 9000,
            };
            let mut set = InputSet::with_inputs(vec![input; usize::from(slots)]);
            if slots > 0 {
                set.events.push(match t {
                    1 => SlotEvent::Leave(t % slots),
                    _ => SlotEvent::Join(t % slots),
                });
            }
            game.step(&set);
        }
        let _ = game.state_hash();
    }
});

//! World snapshot bytes (a join, a resync, a replay keyframe): decoding
//! either refuses them with an error or gives a world that steps, hashes
//! and re-encodes without panicking.
#![no_main]

use bitroom_sim::{Snapshot, World};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(snap) = Snapshot::from_bytes(data) {
        let mut world = World::from_snapshot(&snap);
        for _ in 0..3 {
            world.step();
        }
        let _ = world.state_hash();
        let _ = world.snapshot().to_bytes();
    }
});

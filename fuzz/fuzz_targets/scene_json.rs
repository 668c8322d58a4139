//! Scene files (`sim --scene FILE`, `serve --scene FILE`): parse, build,
//! step.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(mut world) = bitroom_sim::scene::json::parse_scene(text) {
        for _ in 0..3 {
            world.step();
        }
        let _ = world.state_hash();
    }
});

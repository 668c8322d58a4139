//! Recording a game and verifying the recording from Rust.
//!
//! Run it with:
//!
//! ```sh
//! cargo run --release -p bitroom-examples --example verify_replay
//! ```
//!
//! Four football bots play 20 seconds in-process while a
//! [`Recorder`] writes the replay (into memory here; a server writes
//! files, `serve --record DIR`). The replay holds the initial state, every
//! tick's inputs (the game's own `Kick` type) with the state hash after
//! it, and a keyframe every 5 seconds. [`verify`] then re-simulates it and
//! checks every hash; a copy with one input changed diverges at that tick.

use bitroom_examples::football::{Football, Kick, Role};
use bitroom_protocol::replay::{
    encode_header, encode_record, verify, Record, Recorder, RecordingMeta, ReplayReader,
    VerifyOptions,
};
use bitroom_sim::game::bots::LocalBots;
use bitroom_sim::game::Game;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Record: four bots, 1200 ticks (20 s at 60 Hz).
    let rules = Football::new();
    let mut bots = LocalBots::cycling(&rules, 4, &[Role::BySeat], 7);
    let mut game = Game::new(rules, 4);
    let meta = RecordingMeta {
        keyframe_interval: 300,
        ..RecordingMeta::new("football", "example", "pitch", 60)
    };
    let mut recorder = Recorder::new(Vec::new(), &game, meta)?;
    for _ in 0..1200 {
        let inputs = bots.inputs(&game);
        game.step(&inputs);
        recorder.record_tick(&game, &inputs, game.state_hash())?;
    }
    let bytes = recorder.finish()?;
    println!(
        "recorded {} ticks, score {:?}, final hash {:016x}: {} bytes",
        game.tick(),
        game.state().goals,
        game.state_hash(),
        bytes.len()
    );

    // Verify: re-simulate with the same rules, check every recorded hash.
    let opts = VerifyOptions::default();
    let reader = ReplayReader::open(&bytes[..])?;
    println!(
        "header: game {:?}, format {}",
        reader.header().rules,
        reader.header().format_version
    );
    let report = verify(reader, |_, _| Ok(Football::new()), &opts, &mut |_| {})?;
    println!(
        "verified {} ticks and {} keyframes; divergence: {:?}; final hash {:016x}",
        report.ticks_verified, report.keyframes_checked, report.divergence, report.final_hash
    );
    assert!(report.divergence.is_none() && report.ticks_verified == 1200);
    assert_eq!(report.final_hash, game.state_hash());

    // Tamper: one player's input at tick 500 changed, everything else
    // (including the recorded hashes) kept.
    let mut reader = ReplayReader::<_, Kick>::open(&bytes[..])?;
    let mut tampered = encode_header(reader.header());
    for mut record in &mut reader {
        if let Record::Tick {
            tick: 500, inputs, ..
        } = &mut record
        {
            inputs.inputs[0].move_x = inputs.inputs[0].move_x.wrapping_add(64);
        }
        encode_record(&record, &mut tampered);
    }
    let report = verify(
        ReplayReader::open(&tampered[..])?,
        |_, _| Ok(Football::new()),
        &opts,
        &mut |_| {},
    )?;
    let divergence = report.divergence.ok_or("the tampered replay verified")?;
    println!("tampered copy: {divergence}");
    assert_eq!(divergence.tick(), 500);
    println!("OK: the recording verifies, and a changed input is caught at its tick");
    Ok(())
}

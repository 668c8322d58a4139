//! The simulation alone: build a world, step it, read its bodies, take a
//! snapshot, restore it, and check that restoring and stepping gives the
//! same bits as stepping on.
//!
//! Run it with:
//!
//! ```sh
//! cargo run --release -p bitroom-examples --example sim
//! ```
//!
//! Everything here is fixed point (Q32.32): the same program gives the same
//! state hash on every machine. Floats appear only to print.

use bitroom_sim::{
    fx, BodyDef, Circle, Polygon, Scalar, ShapeDef, ShapeGeometry, Vec2, World, WorldDef,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A world with the default settings: gravity −10 m/s², 60 steps a second.
    let mut world = World::new(WorldDef::default())?;
    // The ground: a fixed box 40 m wide.
    let ground = world.create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))?;
    world.create_shape(
        ground,
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(fx(20), fx(1))),
    )?;
    // A stack of five boxes and a ball rolling into it.
    let half = Scalar::HALF;
    let mut boxes = Vec::new();
    for i in 0..5 {
        let b = world.create_body(&BodyDef::dynamic(Vec2::new(fx(0), half + fx(i))))?;
        world.create_shape(
            b,
            &ShapeDef::default(),
            ShapeGeometry::Polygon(Polygon::make_box(half, half)),
        )?;
        boxes.push(b);
    }
    let ball = world.create_body(&BodyDef {
        linear_velocity: Vec2::from_ints(6, 0),
        ..BodyDef::dynamic(Vec2::from_ints(-8, 1))
    })?;
    world.create_shape(
        ball,
        &ShapeDef::default(),
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(1) / fx(2))?),
    )?;

    // One second of simulation.
    for _ in 0..60 {
        world.step();
    }
    println!(
        "after {} steps: {} bodies, state hash {:016x}",
        world.tick(),
        world.body_count(),
        world.state_hash()
    );
    for (i, b) in boxes.iter().chain([&ball]).enumerate() {
        let p = world.transform(*b)?.p;
        let v = world.linear_velocity(*b)?;
        println!(
            "  body {i}: at ({:6.3}, {:6.3}) m, moving ({:6.3}, {:6.3}) m/s",
            p.x.to_f64(),
            p.y.to_f64(),
            v.x.to_f64(),
            v.y.to_f64()
        );
    }

    // A snapshot holds everything that affects the future.
    let snapshot = world.snapshot();
    println!(
        "snapshot at tick {}: {} bytes canonical, {} bytes packed",
        snapshot.tick(),
        snapshot.to_bytes().len(),
        snapshot.to_packed().len()
    );

    // Step on for two more seconds...
    for _ in 0..120 {
        world.step();
    }
    let on = world.state_hash();

    // ...and again from the snapshot, in a world rebuilt from its bytes.
    let bytes = snapshot.to_bytes();
    let mut again = World::from_snapshot(&bitroom_sim::Snapshot::from_bytes(&bytes)?);
    for _ in 0..120 {
        again.step();
    }
    let restored = again.state_hash();
    println!("stepped on: {on:016x}, restored and stepped: {restored:016x}");
    assert_eq!(on, restored, "restore + step must equal step");
    // Restoring in place works the same.
    world.restore(&snapshot);
    for _ in 0..120 {
        world.step();
    }
    assert_eq!(world.state_hash(), on);
    println!("OK: restore + step == step, bit for bit");
    Ok(())
}

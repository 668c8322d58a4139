//! Criterion benchmarks over the named scenes.
//!
//! Each benchmark builds the scene through the same builders the tests and
//! the CLI use, takes the first (untimed) step as Box2D's driver does, and
//! then times single steps. Run: `cargo bench -p bitroom-sim --bench scenes`.
//! For the Box2D-comparable protocol (N−1 timed steps, min over repeats) use
//! `bitroom-server sim --scene NAME --steps N --bench`.

use bitroom_sim::scene::build_scene;
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::{Duration, Instant};

fn step_scene(c: &mut Criterion, name: &str, warm: u64) {
    let mut group = c.benchmark_group("step");
    group.sample_size(20);
    // Start from a state `warm` steps in, so the step measured is typical.
    // Scenes with a per-step function (rain) run it inside the timed step,
    // as Box2D's driver does.
    let mut scene = build_scene(name).expect("scene");
    for _ in 0..warm.max(1) {
        scene.step();
    }
    let snap = scene.world.snapshot();
    // Each timed step starts from the snapshot restored into the same world,
    // whose scratch buffers are already sized: a fresh world would also time
    // their first allocation (megabytes in the large scenes).
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                scene.world.restore(&snap);
                let start = Instant::now();
                scene.step();
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

fn snapshot_1000(c: &mut Criterion) {
    // A 1000-body world: pyramid rows until ~1000 boxes, settled a little.
    let mut w = bitroom_sim::scene::builders::pyramid(44);
    for _ in 0..60 {
        w.step();
    }
    let snap = w.snapshot();
    let bytes = snap.to_bytes();
    let mut group = c.benchmark_group("snapshot_1000_bodies");
    group.bench_function("save", |b| b.iter(|| w.snapshot()));
    group.bench_function("restore", |b| b.iter(|| w.restore(&snap)));
    group.bench_function("encode", |b| b.iter(|| snap.to_bytes()));
    group.bench_function("decode", |b| {
        b.iter(|| bitroom_sim::Snapshot::from_bytes(&bytes).expect("valid"))
    });
    group.bench_function("state_hash", |b| b.iter(|| w.state_hash()));
    let packed = snap.to_packed();
    println!(
        "snapshot_1000_bodies: {} bodies, canonical {} bytes, packed {} bytes",
        w.body_count(),
        bytes.len(),
        packed.len()
    );
    group.bench_function("encode_packed", |b| b.iter(|| snap.to_packed()));
    group.bench_function("decode_packed", |b| {
        b.iter(|| bitroom_sim::Snapshot::from_packed(&packed).expect("valid"))
    });
    group.finish();
}

fn scenes(c: &mut Criterion) {
    for (name, warm) in [
        ("stack", 60),
        ("pyramid", 60),
        ("dominoes", 60),
        ("large_pyramid", 1),
        ("many_pyramids", 1),
        ("smash", 90),
        // Joint scenes (Box2D benchmark set): the net mid-swing, the drum
        // turning its load, rain after all 40 columns spawned (a step with
        // no spawn or recycle event; those come every 8th step), the
        // spinner stirring.
        ("joint_grid", 100),
        ("tumbler", 300),
        ("rain", 401),
        ("spinner", 250),
    ] {
        step_scene(c, name, warm);
    }
}

fn math(c: &mut Criterion) {
    use bitroom_sim::math::{atan2, sin_cos, sqrt};
    use bitroom_sim::Scalar;
    use std::hint::black_box;
    // 1024 angles/arguments spread over the Q32.32 range used by the step.
    let mut r = 0x9E37_79B9_7F4A_7C15u64;
    let inputs: Vec<Scalar> = (0..1024)
        .map(|_| {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            Scalar::from_bits(r as i64 >> 29)
        })
        .collect();
    let mut group = c.benchmark_group("math");
    let mut i = 0usize;
    let mut next = move || {
        i = (i + 1) & 1023;
        inputs[i]
    };
    group.bench_function("sqrt", |b| b.iter(|| sqrt(black_box(next().abs()))));
    group.bench_function("sin_cos", |b| b.iter(|| sin_cos(black_box(next()))));
    group.bench_function("atan2", |b| {
        b.iter(|| atan2(black_box(next()), black_box(next())))
    });
    group.finish();
}

/// Rollback of 8 ticks in a ~1000-body game: restore the state 8 ticks back
/// and re-simulate to the present (the target: ≤ 4 ms).
fn rollback_8(c: &mut Criterion) {
    use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig};
    use bitroom_sim::game::{Game, InputSet, Timeline};
    let mut group = c.benchmark_group("rollback_8_ticks");
    group.sample_size(20);
    let cases = [
        // 990 boxes, still settling (all awake).
        (
            "pyramid_990_awake",
            Sandbox::with_world("pyramid44", &(), bitroom_sim::scene::builders::pyramid(44)),
            20,
        ),
        // The arena with 1000 loose bodies falling into a pile.
        (
            "arena_1000_falling",
            Sandbox::new(SandboxConfig { loose_bodies: 1000 }),
            60,
        ),
        // The same after 15 s: the pile is at rest and asleep.
        (
            "arena_1000_resting",
            Sandbox::new(SandboxConfig { loose_bodies: 1000 }),
            900,
        ),
    ];
    for (name, rules, warm) in cases {
        let mut tl = Timeline::new(Game::new(rules, 4), 16);
        for t in 1..=warm {
            let mut set = InputSet::with_inputs(vec![Default::default(); 4]);
            if t <= 4 {
                set.events
                    .push(bitroom_sim::game::SlotEvent::Join((t - 1) as u8));
            }
            tl.confirm(t, set).expect("in order");
            tl.advance().expect("room");
            tl.update();
        }
        let back = tl.tick() - 8;
        group.bench_function(name, |b| b.iter(|| tl.rollback_to(back).expect("saved")));
    }
    group.finish();
}

criterion_group!(benches, scenes, snapshot_1000, rollback_8, math);
criterion_main!(benches);

//! Golden state hashes: each named scene's hash after a fixed number of steps.
//!
//! These constants are the determinism contract. The cross-platform check
//! (`.ci/cross-check.sh`) runs this file on x86_64 (debug and release),
//! i686, aarch64 (qemu), wasm32-wasip1 (node) and s390x big-endian (Miri,
//! the `miri_` tests only), and also diffs the printed `GOLDEN` lines.
//!
//! Changing a value here is a deliberate decision: say why in the commit
//! message. To print fresh values: `BITROOM_BLESS=1 cargo test -p bitroom-sim
//! --release --test golden -- --nocapture`.

use bitroom_sim::scene::{build_named, build_scene, parse_scene};
use bitroom_sim::{Scalar, World};

/// (scene, steps, expected hash)
const GOLDEN: &[(&str, u64, u64)] = &[
    ("stack", 300, 0x538c7cb2978fea66),
    ("pyramid", 300, 0x08eb064561314e9f),
    ("ramp", 300, 0x1e22cea7de2e5dd1),
    ("dominoes", 300, 0x6c13c91bf488914c),
    ("smash", 120, 0x7f9c7856bc24a3bb),
    ("large_pyramid", 40, 0x7d0b3412e0bc8815),
    ("many_pyramids", 10, 0xe09063cd321ade75),
    ("joint_grid", 40, 0xb0cca8259eeef8ae),
    ("tumbler", 60, 0x02743cb24a8128cd),
    ("rain", 120, 0x7e16180754cfd813),
    ("spinner", 20, 0x958c87803a554978),
    ("bridge", 300, 0x6a37e5c7a5c3976a),
    ("pendulum", 300, 0xae314826fe46c733),
    ("newtons_cradle", 300, 0x8c8f6e5e7173823f),
    ("car", 300, 0x65c33a1b9ac61fbf),
    ("ragdoll", 300, 0x5b4775321bf01f11),
    ("rope", 300, 0x01bfa79872fbb138),
    ("pulley", 300, 0x5177304f5b3d4e61),
];

fn run(scene: &str, steps: u64) -> u64 {
    let mut sc = build_scene(scene).expect("named scene");
    // Fold in intermediate hashes too, so a transient divergence that
    // later heals still fails.
    let mut acc = 0u64;
    for i in 1..=steps {
        sc.step();
        if i % 50 == 0 {
            acc = acc.rotate_left(7) ^ sc.world.state_hash();
        }
    }
    acc.rotate_left(7) ^ sc.world.state_hash()
}

/// Prints `GOLDEN name steps hash` (what the bless script and the
/// cross-platform check read) and, unless blessing, asserts the hash.
fn expect_golden(name: &str, steps: u64, got: u64, want: u64) {
    println!("GOLDEN {name} {steps} {got:016x}");
    if std::env::var_os("BITROOM_BLESS").is_some() {
        return;
    }
    assert_eq!(
        got, want,
        "golden hash of {name} after {steps} steps changed: got {got:#018x}"
    );
}

fn check(scene: &str) {
    let &(_, steps, expected) = GOLDEN.iter().find(|g| g.0 == scene).expect("listed");
    expect_golden(scene, steps, run(scene, steps), expected);
}

#[test]
fn golden_stack() {
    check("stack");
}

#[test]
fn golden_pyramid() {
    check("pyramid");
}

#[test]
fn golden_ramp() {
    check("ramp");
}

#[test]
fn golden_dominoes() {
    check("dominoes");
}

#[test]
fn golden_smash() {
    check("smash");
}

#[test]
fn golden_large_pyramid() {
    check("large_pyramid");
}

#[test]
fn golden_many_pyramids() {
    check("many_pyramids");
}

#[test]
fn golden_joint_grid() {
    check("joint_grid");
}

#[test]
fn golden_tumbler() {
    check("tumbler");
}

#[test]
fn golden_rain() {
    check("rain");
}

#[test]
fn golden_spinner() {
    check("spinner");
}

#[test]
fn golden_bridge() {
    check("bridge");
}

#[test]
fn golden_pendulum() {
    check("pendulum");
}

#[test]
fn golden_newtons_cradle() {
    check("newtons_cradle");
}

#[test]
fn golden_car() {
    check("car");
}

#[test]
fn golden_ragdoll() {
    check("ragdoll");
}

#[test]
fn golden_rope() {
    check("rope");
}

#[test]
fn golden_pulley() {
    check("pulley");
}

/// Bodies, shapes and joints destroyed and created mid-run (the bridge
/// loses three planks with their joints, then gets two new bodies with
/// unusual settings in two of the freed slots; the third stays free): pins
/// the encoding of freed and reused slots and of the id pools.
#[test]
fn golden_churn() {
    use bitroom_sim::{fx, BodyDef, Capsule, Circle, Scalar, ShapeDef, ShapeGeometry, Vec2};
    let mut w = build_named("bridge").expect("named scene");
    for _ in 0..30 {
        w.step();
    }
    let ids: Vec<_> = w.bodies().collect();
    w.destroy_body(ids[5]).unwrap();
    w.destroy_bodies(&[ids[9], ids[12]]).unwrap();
    for _ in 0..30 {
        w.step();
    }
    for i in 0..2 {
        let mut def = BodyDef::dynamic(Vec2::from_ints(-4 + 4 * i, 8));
        def.linear_damping = Scalar::HALF;
        def.gravity_scale = fx(2);
        def.user_data = 77 + i as u64;
        def.bullet = i == 1;
        let b = w.create_body(&def).unwrap();
        let g = if i == 0 {
            ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap())
        } else {
            ShapeGeometry::Capsule(
                Capsule::new(Vec2::ZERO, Vec2::from_ints(1, 0), Scalar::HALF).unwrap(),
            )
        };
        w.create_shape(b, &ShapeDef::default(), g).unwrap();
    }
    for _ in 0..CHURN_STEPS - 60 {
        w.step();
    }
    let got = w.state_hash();
    expect_golden("churn", CHURN_STEPS, got, CHURN_120);
}

const CHURN_STEPS: u64 = 120;
const CHURN_120: u64 = 0x23cd293088f0de76;

/// Small enough for Miri: the first steps of the pendulum (a joint).
#[test]
fn miri_pendulum_short() {
    let mut w = build_named("pendulum").expect("named scene");
    for _ in 0..20 {
        w.step();
    }
    let got = w.state_hash();
    expect_golden("pendulum-miri", 20, got, MIRI_PENDULUM_20);
}

const MIRI_PENDULUM_20: u64 = 0x634fe532cde734c7;

/// The sandbox game with four bot players (random, chaser, circle, random)
/// on the default arena: covers the game layer, input application, aim
/// trigonometry and grabbing, on top of the world.
#[test]
fn golden_sandbox_game() {
    use bitroom_sim::game::bots::LocalBots;
    use bitroom_sim::game::sandbox::{Sandbox, Strategy};
    use bitroom_sim::game::Game;
    let rules = Sandbox::default();
    let strategies = [
        Strategy::Random,
        Strategy::Chaser,
        Strategy::Circle,
        Strategy::Random,
    ];
    // Seat i joins at tick i + 1; bot i is seeded 7 + i.
    let mut bots = LocalBots::cycling(&rules, 4, &strategies, 7);
    let mut game = Game::new(rules, 4);
    let mut acc = 0u64;
    for t in 1..=SANDBOX_TICKS {
        let set = bots.inputs(&game);
        game.step(&set);
        if t % 50 == 0 {
            acc = acc.rotate_left(7) ^ game.state_hash();
        }
    }
    let got = acc.rotate_left(7) ^ game.state_hash();
    expect_golden("sandbox-game", SANDBOX_TICKS, got, SANDBOX_GAME);
}

const SANDBOX_TICKS: u64 = 240;
const SANDBOX_GAME: u64 = 0x10e1190d62829454;

/// Small enough for Miri (big-endian s390x emulation): a short stack run.
#[test]
fn miri_stack_short() {
    let mut w = build_named("stack").expect("named scene");
    for _ in 0..20 {
        w.step();
    }
    let got = w.state_hash();
    expect_golden("stack-miri", 20, got, MIRI_STACK_20);
}

const MIRI_STACK_20: u64 = 0xef409cb76c4dd0c7;

/// The event scene: bouncing balls with hit events, a stack, sensors (one
/// static, one on a moving kinematic body), a bullet through a plank and a
/// fast box against a thin wall.
const EVENTS_SCENE: &str = include_str!("../../scenes/events.json");

/// Steps the event scene, folding every step's `event_hash` into one digest;
/// returns (event digest, final state hash, event counts).
fn run_events(steps: u64) -> (u64, u64, [usize; 5]) {
    let mut w: World = parse_scene(EVENTS_SCENE).expect("events scene");
    let mut acc = 0u64;
    let mut n = [0usize; 5];
    for _ in 0..steps {
        w.step();
        acc = acc.rotate_left(7) ^ w.event_hash();
        let (c, s) = (w.contact_events(), w.sensor_events());
        for (k, len) in [
            c.begin.len(),
            c.end.len(),
            c.hit.len(),
            s.begin.len(),
            s.end.len(),
        ]
        .into_iter()
        .enumerate()
        {
            n[k] += len;
        }
    }
    (acc, w.state_hash(), n)
}

/// Event order and content are part of the determinism contract: the
/// digest of 300 steps of contact, hit and sensor events.
#[test]
fn golden_events() {
    let steps = 300;
    let (events, state, n) = run_events(steps);
    println!("GOLDEN events-digest {steps} {events:016x}");
    println!("GOLDEN events-state {steps} {state:016x}");
    // Every kind of event occurs, so the digest covers them all.
    assert!(n.iter().all(|&k| k > 10), "event counts {n:?}");
    if std::env::var_os("BITROOM_BLESS").is_some() {
        return;
    }
    assert_eq!(
        (events, state),
        (EVENTS_DIGEST_300, EVENTS_STATE_300),
        "golden event digest or state hash of the event scene changed: got {events:#018x}, {state:#018x}"
    );
}

/// Small enough for Miri: the first steps of the event scene (contacts
/// begin, the bullet hits the plank), checking the event encoding big-endian.
#[test]
fn miri_events_short() {
    let steps = 8;
    let (events, state, n) = run_events(steps);
    println!("GOLDEN events-miri {steps} {events:016x}");
    println!("GOLDEN events-state-miri {steps} {state:016x}");
    assert!(n[0] > 0 && n[2] > 0, "event counts {n:?}");
    if std::env::var_os("BITROOM_BLESS").is_some() {
        return;
    }
    assert_eq!((events, state), (MIRI_EVENTS_8, MIRI_EVENTS_STATE_8));
}

const EVENTS_DIGEST_300: u64 = 0xf13f1df11aec75af;
const EVENTS_STATE_300: u64 = 0x573b41a23ce0494a;
const MIRI_EVENTS_8: u64 = 0x22f01c26b9ffb9dd;
const MIRI_EVENTS_STATE_8: u64 = 0xfe40ca431c014fe8;

/// A step's buffers are the thread's, shared by every world stepped on it
/// (`Scratch`): the steps of different scenes interleaved on one thread,
/// each step after another scene's, must give, step for step, the hashes
/// each scene gives stepped alone.
#[test]
fn worlds_interleaved_on_one_thread_step_as_alone() {
    // Two piles alike but for their boxes' size (1 m and 0.99 m: the same
    // shape pairs, relative poses within one cell of the recycler's grid),
    // one right after the other in the order below, check that a world's
    // recycled manifolds never come from another's (with the recycler
    // shared too, "pile 500" fails at its third step).
    let names = [
        "ragdoll", "pile 500", "tumbler", "bridge", "pile 495", "dominoes", "arena",
    ];
    let build = |name: &str| match name.strip_prefix("pile ") {
        Some(half) => pile(Scalar::milli(half.parse().unwrap())),
        None => bitroom_sim::scene::build_named(name).unwrap(),
    };
    let steps = 90;
    // Each scene alone: all its steps one after another (on this thread,
    // as every target runs it; wasm32-wasip1 has no threads), so each
    // step but the first follows its own previous step.
    let alone: Vec<Vec<u64>> = names
        .iter()
        .map(|&name| {
            let mut w = build(name);
            (0..steps)
                .map(|_| {
                    w.step();
                    w.state_hash()
                })
                .collect()
        })
        .collect();
    let mut worlds: Vec<_> = names.iter().map(|n| build(n)).collect();
    for t in 0..steps {
        // A different order each step, so each scene follows others
        // (index 1 right before index 4, and 4 before 1 across steps).
        for k in 0..worlds.len() {
            let i = (k * 3 + t) % worlds.len();
            worlds[i].step();
            assert_eq!(
                Some(worlds[i].state_hash()),
                alone[i].get(t).copied(),
                "{} at step {}",
                names[i],
                t + 1
            );
        }
    }
}

/// A 12-row pyramid of boxes of half-extent `half`, 1 m apart, on a ground.
fn pile(half: Scalar) -> World {
    use bitroom_sim::{BodyDef, Polygon, ShapeDef, ShapeGeometry, Vec2};
    let mut w = World::default();
    let ground = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
        .unwrap();
    let g = ShapeGeometry::Polygon(Polygon::make_box(Scalar::from_int(20), Scalar::ONE));
    w.create_shape(ground, &ShapeDef::default(), g).unwrap();
    let rows = 12;
    for i in 0..rows {
        for k in i..rows {
            let x =
                Scalar::from_int(k) - Scalar::from_int(i).shr(1) - Scalar::from_int(rows).shr(1);
            let y = Scalar::from_int(i) + half;
            let b = w.create_body(&BodyDef::dynamic(Vec2::new(x, y))).unwrap();
            let g = ShapeGeometry::Polygon(Polygon::make_box(half, half));
            w.create_shape(b, &ShapeDef::default(), g).unwrap();
        }
    }
    w
}

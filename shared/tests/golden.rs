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
use bitroom_sim::World;

/// (scene, steps, expected hash)
const GOLDEN: &[(&str, u64, u64)] = &[
    ("stack", 300, 0x22e20dbd0163d017),
    ("pyramid", 300, 0x2e8419ca0f1ee668),
    ("ramp", 300, 0x0ca2d4e563790dd0),
    ("dominoes", 300, 0x53df11c7dd963a55),
    ("smash", 120, 0xcedf3c36eb1baa1c),
    ("large_pyramid", 40, 0x34aea0e4eab39eb6),
    ("many_pyramids", 10, 0x0f53d954a89638d9),
    ("joint_grid", 40, 0x51f052f67076e7e6),
    ("tumbler", 60, 0x2412d8e5832eddab),
    ("rain", 120, 0x9800713160444c33),
    ("spinner", 20, 0x2278178dbef7b371),
    ("bridge", 300, 0x3bdead76e0deae23),
    ("pendulum", 300, 0x4617f05b6caff1b0),
    ("newtons_cradle", 300, 0xfd32eb5fd5413f21),
    ("car", 300, 0xb83c4debaf61079c),
    ("ragdoll", 300, 0x478069afd7c852c0),
    ("rope", 300, 0xe5c3a060302995ff),
    ("pulley", 300, 0x58457e183d364dab),
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

fn check(scene: &str) {
    let &(_, steps, expected) = GOLDEN.iter().find(|g| g.0 == scene).expect("listed");
    let got = run(scene, steps);
    println!("GOLDEN {scene} {steps} {got:016x}");
    if std::env::var_os("BITROOM_BLESS").is_some() {
        return;
    }
    assert_eq!(
        got, expected,
        "golden hash of {scene} after {steps} steps changed: got {got:#018x}"
    );
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

/// Small enough for Miri: the first steps of the pendulum (a joint).
#[test]
fn miri_pendulum_short() {
    let mut w = build_named("pendulum").expect("named scene");
    for _ in 0..20 {
        w.step();
    }
    let got = w.state_hash();
    println!("GOLDEN pendulum-miri 20 {got:016x}");
    if std::env::var_os("BITROOM_BLESS").is_some() {
        return;
    }
    assert_eq!(
        got, MIRI_PENDULUM_20,
        "golden hash of the short pendulum run changed: got {got:#018x}"
    );
}

const MIRI_PENDULUM_20: u64 = 0xe8cd8396246cf0dc;

/// The sandbox game with four bot players (random, chaser, circle, random)
/// on the default arena: covers the game layer, input application, aim
/// trigonometry and grabbing, on top of the world.
#[test]
fn golden_sandbox_game() {
    use bitroom_sim::game::bots::{Bot, Strategy};
    use bitroom_sim::game::sandbox::Sandbox;
    use bitroom_sim::game::{Game, InputSet, SlotEvent};
    let mut game = Game::new(Sandbox::default(), 4);
    let strategies = [
        Strategy::Random,
        Strategy::Chaser,
        Strategy::Circle,
        Strategy::Random,
    ];
    let mut bots: Vec<Bot> = (0..4)
        .map(|i| Bot::new(strategies[i], 7 + i as u64))
        .collect();
    let mut acc = 0u64;
    for t in 1..=SANDBOX_TICKS {
        let inputs = (0..4u8)
            .map(|i| bots[usize::from(i)].next_input(&game, i))
            .collect();
        let mut set = InputSet::with_inputs(inputs);
        if t <= 4 {
            set.events.push(SlotEvent::Join((t - 1) as u8));
        }
        game.step(&set);
        if t % 50 == 0 {
            acc = acc.rotate_left(7) ^ game.state_hash();
        }
    }
    let got = acc.rotate_left(7) ^ game.state_hash();
    println!("GOLDEN sandbox-game {SANDBOX_TICKS} {got:016x}");
    if std::env::var_os("BITROOM_BLESS").is_some() {
        return;
    }
    assert_eq!(
        got, SANDBOX_GAME,
        "golden hash of the sandbox game changed: got {got:#018x}"
    );
}

const SANDBOX_TICKS: u64 = 240;
const SANDBOX_GAME: u64 = 0x35e7e9f1d3669e89;

/// Small enough for Miri (big-endian s390x emulation): a short stack run.
#[test]
fn miri_stack_short() {
    let mut w = build_named("stack").expect("named scene");
    for _ in 0..20 {
        w.step();
    }
    let got = w.state_hash();
    println!("GOLDEN stack-miri 20 {got:016x}");
    if std::env::var_os("BITROOM_BLESS").is_some() {
        return;
    }
    assert_eq!(
        got, MIRI_STACK_20,
        "golden hash of the short stack run changed: got {got:#018x}"
    );
}

const MIRI_STACK_20: u64 = 0x26f076d140b925e5;

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

const EVENTS_DIGEST_300: u64 = 0xf689c608d48c6a0b;
const EVENTS_STATE_300: u64 = 0x73120507adc1f029;
const MIRI_EVENTS_8: u64 = 0xd2afc7b73ed8ea5e;
const MIRI_EVENTS_STATE_8: u64 = 0x396dbefe9a09ca9c;

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

use bitroom_sim::scene::build_named;

/// (scene, steps, expected hash)
const GOLDEN: &[(&str, u64, u64)] = &[
    ("stack", 300, 0xdd71a8da84e031da),
    ("pyramid", 300, 0xe0d50f71e67d335f),
    ("ramp", 300, 0x2fb1a2b965b51099),
    ("dominoes", 300, 0x9e13fa71cc9126e0),
    ("smash", 120, 0x9f65677d541f5dbe),
    ("large_pyramid", 40, 0x7c652562cd0ae9bc),
    ("many_pyramids", 10, 0x843b9560b4ee0a00),
];

fn run(scene: &str, steps: u64) -> u64 {
    let mut w = build_named(scene).expect("named scene");
    // Fold in intermediate hashes too, so a transient divergence that
    // later heals still fails.
    let mut acc = 0u64;
    for i in 1..=steps {
        w.step();
        if i % 50 == 0 {
            acc = acc.rotate_left(7) ^ w.state_hash();
        }
    }
    acc.rotate_left(7) ^ w.state_hash()
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
const SANDBOX_GAME: u64 = 0x6809127fd120f96e;

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

const MIRI_STACK_20: u64 = 0x73ffad892c77f3b5;

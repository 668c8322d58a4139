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

use bitroom_sim::scene::{build_named, build_scene};

/// (scene, steps, expected hash)
const GOLDEN: &[(&str, u64, u64)] = &[
    ("stack", 300, 0xfa4c89896b67e8a4),
    ("pyramid", 300, 0x4e176dbc30f112d3),
    ("ramp", 300, 0x5d83ddb081278fab),
    ("dominoes", 300, 0x137a89f47fa8546a),
    ("smash", 120, 0xfd9ca12d161c0dc5),
    ("large_pyramid", 40, 0x8cc277efcfbabd79),
    ("many_pyramids", 10, 0x320a20b66c59b80d),
    ("joint_grid", 40, 0x86459f9cb3a82614),
    ("tumbler", 60, 0xc7a0a9b5be5194df),
    ("rain", 120, 0xb507811de54a0a4d),
    ("spinner", 20, 0xd806e41b5018fb94),
    ("bridge", 300, 0xec981c13248bf688),
    ("pendulum", 300, 0xb583a8b5621a3b9c),
    ("newtons_cradle", 300, 0x767d53d68ca398d5),
    ("car", 300, 0x46028c994278a859),
    ("ragdoll", 300, 0xb8859ffcc820173a),
    ("rope", 300, 0xc1d4ba1a0dbf5241),
    ("pulley", 300, 0x014ae101c1412e64),
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

/// Joints under Miri (big-endian): a short run of the pendulum scene.
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

const MIRI_PENDULUM_20: u64 = 0xd68895f3b15899ab;

const MIRI_STACK_20: u64 = 0x851f0aad44e789b7;

//! Snapshots: `restore` + N steps equals N steps, bit for bit; the byte form
//! round-trips exactly; untrusted bytes are refused without panicking.

use bitroom_sim::dynamics::{DistanceJoint, FrictionJoint, RevoluteJoint};
use bitroom_sim::scene::build_named;
use bitroom_sim::state::MAX_SNAPSHOT_BYTES;
use bitroom_sim::{
    fx, BodyDef, BodyId, BodyKind, Capsule, Circle, JointDef, JointKind, Polygon, Rot, Scalar,
    ShapeDef, ShapeGeometry, Snapshot, SnapshotError, Vec2, World, WorldDef,
};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Steps `n` times, returning the state hash after each step.
fn run(w: &mut World, n: usize) -> Vec<u64> {
    run_sampled(w, n, 1)
}

/// Steps `n` times, returning the state hash after every `stride`-th step
/// and after the last (hashing a 10⁴-body world is costly in debug builds).
fn run_sampled(w: &mut World, n: usize, stride: usize) -> Vec<u64> {
    let mut out = Vec::new();
    for i in 1..=n {
        w.step();
        if i % stride == 0 || i == n {
            out.push(w.state_hash());
        }
    }
    out
}

fn steps(w: &mut World, n: usize) {
    for _ in 0..n {
        w.step();
    }
}

// ---------------------------------------------------------------------------
// 8. Named scenes: every way of restoring continues identically
// ---------------------------------------------------------------------------

/// Snapshot at `k`, then checks that all restore paths reproduce the `n`
/// hashes that followed, and that the byte form round-trips exactly.
/// `check(at_k, at_k_plus_n)` adds scene-specific assertions.
fn check_scene_round_trips(name: &str, k: usize, n: usize, check: impl Fn(&World, &World)) {
    // Hash every step of small scenes; every 10th of the 9601-body smash.
    let stride = if name == "smash" { 10 } else { 1 };
    let mut w = build_named(name).unwrap();
    steps(&mut w, k);
    let snap = w.snapshot();
    assert_eq!(snap.tick(), k as u64, "{name}");
    let hash_k = w.state_hash();
    let at_k = World::from_snapshot(&snap);
    let expected = run_sampled(&mut w, n, stride);
    check(&at_k, &w);
    assert_ne!(
        *expected.last().unwrap(),
        hash_k,
        "{name}: the scene did not change in {n} steps"
    );

    // The hash is XXH3-64 of exactly the snapshot bytes (documented contract).
    let bytes = snap.to_bytes();
    assert_eq!(
        xxhash_rust::xxh3::xxh3_64(&bytes),
        hash_k,
        "{name}: state_hash is not the hash of the bytes"
    );

    // Restore into the same world after it moved on elsewhere.
    steps(&mut w, 5);
    w.restore(&snap);
    assert_eq!(w.tick(), k as u64);
    assert_eq!(w.state_hash(), hash_k, "{name}: restore changed the state");
    assert_eq!(
        run_sampled(&mut w, n, stride),
        expected,
        "{name}: restore in place diverged"
    );

    // A new world from the snapshot.
    let mut fresh = World::from_snapshot(&snap);
    assert_eq!(fresh.state_hash(), hash_k);
    assert_eq!(
        run_sampled(&mut fresh, n, stride),
        expected,
        "{name}: from_snapshot diverged"
    );

    // Through the bytes.
    let decoded = Snapshot::from_bytes(&bytes).unwrap();
    assert_eq!(decoded.tick(), k as u64);
    assert_eq!(
        decoded.to_bytes(),
        bytes,
        "{name}: re-encoding the decoded snapshot changed the bytes"
    );
    let mut from_bytes = World::from_snapshot(&decoded);
    assert_eq!(
        run_sampled(&mut from_bytes, n, stride),
        expected,
        "{name}: from_bytes diverged"
    );

    // Restore the decoded snapshot into an unrelated world with other
    // scratch sizes (an empty one), then re-encode what was restored.
    let mut other = World::default();
    other.restore(&decoded);
    assert_eq!(
        other.snapshot().to_bytes(),
        bytes,
        "{name}: restored state re-encodes differently"
    );
    assert_eq!(
        run_sampled(&mut other, n, stride),
        expected,
        "{name}: restore into another world diverged"
    );
}

/// A teleport between steps, snapshotted before the next step: the
/// snapshot's contact geometry is recomputed from the new positions on
/// decoding, so the world it came from must recompute it too before its
/// solve. A move of a millimetre keeps every fat box (Box2D re-makes a fat
/// box only when the shape leaves it), which must not skip that.
#[test]
fn a_small_teleport_then_a_snapshot_steps_as_the_original() {
    for name in ["stack", "tumbler", "ragdoll"] {
        let mut w = build_named(name).unwrap();
        steps(&mut w, 40);
        let mut moved = 0;
        for id in w.bodies().collect::<Vec<_>>() {
            if w.is_awake(id).unwrap() && moved < 8 {
                let xf = w.transform(id).unwrap();
                w.set_transform(id, xf.p + Vec2::new(Scalar::milli(1), Scalar::ZERO), xf.q)
                    .unwrap();
                moved += 1;
            }
        }
        assert!(moved > 0, "{name}: nothing awake to move");
        let bytes = w.snapshot().to_bytes();
        let mut decoded = World::from_snapshot(&Snapshot::from_bytes(&bytes).unwrap());
        assert_eq!(
            run(&mut decoded, 20),
            run(&mut w, 20),
            "{name}: the decoded world diverged after a teleport"
        );
    }
}

/// Velocities set between steps, then a snapshot before the next step:
/// whether a pair's manifold is recycled or taken at the current poses is
/// decided from the velocities when the pair was collided (the contact's
/// direct flag, which is state), so a decoded world must not decide it
/// again from the new velocities. Resting boxes set moving and tumbling
/// bodies stopped dead both change what the velocities say.
#[test]
fn velocities_set_then_a_snapshot_steps_as_the_original() {
    for (name, stop) in [("stack", false), ("pyramid", false), ("tumbler", true)] {
        let mut w = build_named(name).unwrap();
        steps(&mut w, 40);
        let mut set = 0;
        for (i, id) in w.bodies().collect::<Vec<_>>().into_iter().enumerate() {
            if !w.is_awake(id).unwrap() || (!stop && i % 2 == 0) {
                continue;
            }
            let (v, spin) = if stop {
                (Vec2::ZERO, Scalar::ZERO)
            } else {
                (Vec2::new(fx(4), fx(-3)), fx(3))
            };
            w.set_linear_velocity(id, v).unwrap();
            w.set_angular_velocity(id, spin).unwrap();
            set += 1;
        }
        assert!(set > 0, "{name}: nothing awake to set");
        let bytes = w.snapshot().to_bytes();
        let mut decoded = World::from_snapshot(&Snapshot::from_bytes(&bytes).unwrap());
        assert_eq!(
            run(&mut decoded, 20),
            run(&mut w, 20),
            "{name}: the decoded world diverged after velocities were set"
        );
    }
}

/// A wheel allowed fast rotation keeps the flag through a snapshot's bytes
/// and spins on as the original (at 80 rad/s, past the 47.1 rad/s cap of a
/// body without it); the flag is one byte of its body record, and a byte
/// other than 0 or 1 there is refused, not read as either.
#[test]
fn fast_rotation_survives_a_snapshot_and_a_bad_flag_byte_is_refused() {
    let world = |fast: bool| {
        let mut w = World::new(WorldDef::default()).unwrap();
        let b = w
            .create_body(&BodyDef {
                angular_velocity: fx(80),
                allow_fast_rotation: fast,
                ..BodyDef::dynamic(Vec2::new(fx(0), fx(5)))
            })
            .unwrap();
        let disc = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap());
        w.create_shape(b, &ShapeDef::default(), disc).unwrap();
        w.step();
        (w, b)
    };
    let (mut w, b) = world(true);
    let bytes = w.snapshot().to_bytes();
    let mut decoded = World::from_snapshot(&Snapshot::from_bytes(&bytes).unwrap());
    assert!(decoded.allows_fast_rotation(b).unwrap());
    assert_eq!(run(&mut decoded, 20), run(&mut w, 20));
    assert_eq!(w.angular_velocity(b).unwrap(), fx(80));
    // The same world without the flag: capped, and one byte apart.
    let (slow, _) = world(false);
    assert!(slow.angular_velocity(b).unwrap() < fx(48));
    let (fast, _) = world(true);
    let (fast, slow) = (fast.snapshot().to_bytes(), slow.snapshot().to_bytes());
    assert_eq!(fast.len(), slow.len());
    let differ: Vec<usize> = (0..fast.len()).filter(|&i| fast[i] != slow[i]).collect();
    assert!(!differ.is_empty());
    // Velocity and pose bytes differ too (one spun faster for a step); the
    // flag is the byte that is 1 in one and 0 in the other, the body
    // record's last.
    let flag = *differ
        .iter()
        .rev()
        .find(|&&i| fast[i] == 1 && slow[i] == 0)
        .expect("the flag byte");
    // It is the flag: cleared, the decoded body may not spin fast.
    let mut cleared = fast.clone();
    cleared[flag] = 0;
    let cleared = World::from_snapshot(&Snapshot::from_bytes(&cleared).unwrap());
    assert!(!cleared.allows_fast_rotation(b).unwrap());
    for bad in [2u8, 0xff] {
        let mut crafted = fast.clone();
        crafted[flag] = bad;
        assert!(
            Snapshot::from_bytes(&crafted).is_err(),
            "flag byte {bad} was accepted"
        );
    }
}

/// A shape added to a box of a standing stack, off its centre, then a
/// snapshot before the next step; later the shape destroyed, and again.
/// The box's centre of mass moves, and a recycled manifold's lever arms
/// are fixed about the centre, so the box's contacts must be collided
/// again in the world it came from, as the decoder recomputes them, awake
/// or asleep (a sleeping box woken afterwards solves them).
#[test]
fn shapes_changed_then_a_snapshot_steps_as_the_original() {
    for settle in [30, 400] {
        let mut w = build_named("stack").unwrap();
        steps(&mut w, settle);
        let dynamic: Vec<BodyId> = w
            .bodies()
            .filter(|&id| w.body_kind(id).unwrap() == BodyKind::Dynamic)
            .collect();
        let boxed = dynamic[dynamic.len() / 2];
        let asleep = !w.is_awake(boxed).unwrap();
        assert_eq!(asleep, settle > 100, "settled {settle} steps");
        let ball = ShapeGeometry::Circle(Circle {
            center: Vec2::new(Scalar::ratio(3, 10), Scalar::ratio(3, 10)),
            radius: Scalar::ratio(1, 10),
        });
        let added = w.create_shape(boxed, &ShapeDef::default(), ball).unwrap();
        assert_eq!(!w.is_awake(boxed).unwrap(), asleep, "a shape wakes nothing");
        let decoded = |w: &World| {
            let bytes = w.snapshot().to_bytes();
            World::from_snapshot(&Snapshot::from_bytes(&bytes).unwrap())
        };
        let mut d = decoded(&w);
        // A step (asleep, the box is left alone), then woken in both, the
        // box solves its contacts.
        for x in [&mut w, &mut d] {
            x.step();
            x.set_awake(boxed, true).unwrap();
        }
        assert_eq!(
            run(&mut d, 20),
            run(&mut w, 20),
            "settled {settle}: a shape added"
        );
        steps(&mut w, if asleep { 400 } else { 10 });
        w.destroy_shape(added).unwrap();
        let mut d = decoded(&w);
        assert_eq!(
            run(&mut d, 20),
            run(&mut w, 20),
            "settled {settle}: a shape destroyed"
        );
    }
}

/// A teleport, then the body put to sleep, then a snapshot: the step that
/// follows leaves the sleeping body's contacts alone, so they must match
/// the new position in the world it came from as they do in the decoded
/// one, for when it wakes.
#[test]
fn a_teleport_then_sleep_then_a_snapshot_steps_as_the_original() {
    let mut w = build_named("stack").unwrap();
    steps(&mut w, 30);
    let bottom = w
        .bodies()
        .filter(|&id| w.body_kind(id).unwrap() == BodyKind::Dynamic)
        .min_by_key(|&id| w.transform(id).unwrap().p.y)
        .unwrap();
    let xf = w.transform(bottom).unwrap();
    w.set_transform(
        bottom,
        xf.p + Vec2::new(Scalar::milli(20), Scalar::ZERO),
        xf.q,
    )
    .unwrap();
    w.set_awake(bottom, false).unwrap();
    let bytes = w.snapshot().to_bytes();
    let mut d = World::from_snapshot(&Snapshot::from_bytes(&bytes).unwrap());
    for x in [&mut w, &mut d] {
        x.step();
        x.set_awake(bottom, true).unwrap();
    }
    assert_eq!(run(&mut d, 20), run(&mut w, 20));
}

/// Teleports that change what a touching contact touches (lifted clear,
/// turned onto a corner, pushed into a neighbour), then a snapshot before
/// the next step: the contacts still hold the old position's points, which
/// the new position's narrow phase does not give, and the decoded world
/// must accept them and step as the original (a game that teleports in
/// its post-step hook, as football does with the ball after a goal, is
/// snapshotted exactly there).
#[test]
fn a_far_teleport_then_a_snapshot_decodes_and_steps_as_the_original() {
    let moves = [
        (Vec2::new(Scalar::ZERO, fx(1)), Scalar::ZERO),
        (Vec2::ZERO, Scalar::ratio(1, 2)),
        (
            Vec2::new(Scalar::ratio(1, 2), Scalar::ZERO),
            Scalar::ratio(1, 10),
        ),
    ];
    for (name, settle) in [("stack", 30), ("pyramid", 30), ("tumbler", 60)] {
        for (k, &(dp, turn)) in moves.iter().enumerate() {
            let mut w = build_named(name).unwrap();
            steps(&mut w, settle);
            let ids: Vec<BodyId> = w
                .bodies()
                .filter(|&id| w.body_kind(id).unwrap() == BodyKind::Dynamic)
                .collect();
            for &id in ids.iter().skip(ids.len() / 3).step_by(5).take(3) {
                let xf = w.transform(id).unwrap();
                let q = Rot::from_angle(xf.q.angle() + turn);
                w.set_transform(id, xf.p + dp, q).unwrap();
            }
            let bytes = w.snapshot().to_bytes();
            let snap = Snapshot::from_bytes(&bytes)
                .unwrap_or_else(|e| panic!("{name}, move {k}: refused: {e:?}"));
            let mut d = World::from_snapshot(&snap);
            assert_eq!(
                run(&mut d, 20),
                run(&mut w, 20),
                "{name}, move {k}: the decoded world diverged"
            );
        }
    }
}

fn awake_count(w: &World) -> usize {
    w.bodies().filter(|&id| w.is_awake(id).unwrap()).count()
}

#[test]
fn pyramid_snapshot_round_trips() {
    // Snapshot while settling; replay until the pyramid sleeps.
    check_scene_round_trips("pyramid", 20, 60, |a, _| assert!(awake_count(a) > 200));
}

#[test]
fn stack_snapshot_round_trips() {
    check_scene_round_trips("stack", 20, 60, |a, _| assert!(awake_count(a) == 10));
}

#[test]
fn dominoes_snapshot_round_trips() {
    // Snapshot mid-fall (the chain topples between steps 0 and ~200).
    check_scene_round_trips("dominoes", 60, 120, |_, _| {});
}

#[test]
fn smash_snapshot_round_trips() {
    // The ram's face reaches the wall after 45.8 m / 40 m/s ≈ 68.7 steps:
    // snapshot at 64, with only the ram awake, and replay 30 steps through
    // the impact. Each wall box sleeps in its own island and the wake front
    // spreads one contact layer per step (measured ~2800 awake by step 94).
    check_scene_round_trips("smash", 64, 30, |a, b| {
        assert_eq!(
            awake_count(a),
            1,
            "only the ram should be awake before the impact"
        );
        assert!(awake_count(b) > 500, "the impact did not wake the wall");
    });
}

/// A scene that settles to sleep, snapshotted asleep, then woken by an
/// impulse: sleep state and sleeping-island ids must survive the snapshot.
#[test]
fn ragdoll_snapshot_round_trips_with_joints_and_sleepers() {
    // At step 150 some ragdolls rest asleep on the steps while others still
    // tumble; the next 120 steps put the rest to sleep.
    check_scene_round_trips("ragdoll", 150, 120, |a, b| {
        let awake = awake_count(a);
        assert!(
            awake > 0 && awake < 66,
            "{awake} bones awake at the snapshot"
        );
        assert_eq!(a.joint_count(), 60);
        assert!(awake_count(b) < awake);
    });
}

#[test]
fn bridge_snapshot_round_trips() {
    check_scene_round_trips("bridge", 30, 90, |a, _| assert_eq!(a.joint_count(), 31));
}

#[test]
fn snapshot_across_sleep_and_wake() {
    let mut w = build_named("stack").unwrap();
    let ids: Vec<BodyId> = w.bodies().collect();
    steps(&mut w, 300);
    assert!(
        ids[1..].iter().all(|&id| !w.is_awake(id).unwrap()),
        "stack did not fall asleep in 5 s"
    );
    let snap = w.snapshot();
    let poke = |w: &mut World| {
        let top = *ids.last().unwrap();
        let c = w.world_center(top).unwrap();
        w.apply_linear_impulse(top, Vec2::from_ints(3, 0), c)
            .unwrap();
    };
    poke(&mut w);
    assert!(
        ids[1..].iter().all(|&id| w.is_awake(id).unwrap()),
        "the impulse did not wake the island"
    );
    let expected = run(&mut w, 200);
    let awake_after = ids[1..]
        .iter()
        .filter(|&&id| w.is_awake(id).unwrap())
        .count();

    for restored in [
        World::from_snapshot(&snap),
        World::from_snapshot(&Snapshot::from_bytes(&snap.to_bytes()).unwrap()),
    ] {
        let mut r = restored;
        assert!(ids[1..].iter().all(|&id| !r.is_awake(id).unwrap()));
        poke(&mut r);
        assert_eq!(run(&mut r, 200), expected, "woken restored world diverged");
        assert_eq!(
            ids[1..]
                .iter()
                .filter(|&&id| r.is_awake(id).unwrap())
                .count(),
            awake_after
        );
    }
}

/// Destroyed slots and the free lists are part of the state: handles issued
/// after a restore match the ones issued after the snapshot.
#[test]
fn snapshot_preserves_free_lists_and_handles() {
    let mut w = build_named("pyramid").unwrap();
    let ids: Vec<BodyId> = w.bodies().collect();
    steps(&mut w, 10);
    for &id in &[ids[5], ids[40], ids[7]] {
        w.destroy_body(id).unwrap();
    }
    let snap = w.snapshot();
    let continue_run = |w: &mut World| -> (Vec<BodyId>, Vec<u64>) {
        let mut made = Vec::new();
        for i in 0..4 {
            let b = w
                .create_body(&BodyDef::dynamic(Vec2::from_ints(30 + 2 * i, 5)))
                .unwrap();
            w.create_shape(
                b,
                &ShapeDef::default(),
                ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap()),
            )
            .unwrap();
            made.push(b);
        }
        (made, run(w, 60))
    };
    let expected = continue_run(&mut w);
    // The last freed slot is reused first, with a bumped generation.
    assert_eq!(expected.0[0].index, ids[7].index);
    assert_ne!(expected.0[0], ids[7]);
    let mut a = World::from_snapshot(&snap);
    assert_eq!(continue_run(&mut a), expected);
    let mut b = World::from_snapshot(&Snapshot::from_bytes(&snap.to_bytes()).unwrap());
    assert!(!b.contains_body(ids[5]));
    assert_eq!(continue_run(&mut b), expected);
}

/// Shape geometry is shared between a world and its snapshots until one of
/// them creates or destroys a shape: neither may see the other's change.
#[test]
fn shape_geometry_is_copy_on_write_between_world_and_snapshots() {
    let mut w = build_named("pyramid").unwrap();
    steps(&mut w, 5);
    let ids: Vec<BodyId> = w.bodies().collect();
    let victim = ids[3];
    let victim_shape = w.body_shapes(victim).unwrap()[0];
    let victim_geometry = w.shape_geometry(victim_shape).unwrap();
    let snap = w.snapshot();
    let (bytes, hash) = (snap.to_bytes(), snap.state_hash());
    // The world destroys the body (its shape slot is freed) and puts a
    // different shape into the same slot.
    w.destroy_body(victim).unwrap();
    let b = w
        .create_body(&BodyDef::dynamic(Vec2::from_ints(40, 3)))
        .unwrap();
    let circle = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap());
    let s = w.create_shape(b, &ShapeDef::default(), circle).unwrap();
    assert_eq!(s.index, victim_shape.index, "the freed slot is reused");
    assert_eq!(w.shape_geometry(s).unwrap(), circle);
    // The snapshot still holds the old geometry, bytes and hash.
    assert_eq!(snap.to_bytes(), bytes);
    assert_eq!(snap.state_hash(), hash);
    // Restoring brings the old shape back, and stepping matches a world
    // that never saw the change.
    let mut fresh = World::from_snapshot(&snap);
    w.restore(&snap);
    assert_eq!(w.state_hash(), hash);
    assert_eq!(w.shape_geometry(victim_shape).unwrap(), victim_geometry);
    assert_eq!(run(&mut w, 30), run(&mut fresh, 30));
    // A world restored from the snapshot that then changes its shapes
    // leaves the snapshot alone too.
    w.restore(&snap);
    w.destroy_body(ids[4]).unwrap();
    assert_eq!(snap.to_bytes(), bytes);
}

/// Body settings (mass, damping, flags, user data) are shared between a
/// world and its snapshots the same way: a change on either side stays there.
#[test]
fn body_settings_are_copy_on_write_between_world_and_snapshots() {
    let mut w = build_named("pyramid").unwrap();
    steps(&mut w, 5);
    let ids: Vec<BodyId> = w.bodies().collect();
    let id = ids[10];
    let (user, mass) = (w.user_data(id).unwrap(), w.mass_data(id).unwrap());
    let snap = w.snapshot();
    let (bytes, hash) = (snap.to_bytes(), snap.state_hash());
    w.set_user_data(id, user + 77).unwrap();
    w.set_bullet(id, true).unwrap();
    // A new shape changes the body's mass.
    let circle = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap());
    w.create_shape(id, &ShapeDef::default(), circle).unwrap();
    assert_ne!(w.mass_data(id).unwrap(), mass);
    assert_eq!(snap.to_bytes(), bytes);
    assert_eq!(snap.state_hash(), hash);
    let mut fresh = World::from_snapshot(&snap);
    w.restore(&snap);
    assert_eq!(w.state_hash(), hash);
    assert_eq!(w.user_data(id).unwrap(), user);
    assert!(!w.is_bullet(id).unwrap());
    assert_eq!(w.mass_data(id).unwrap(), mass);
    assert_eq!(run(&mut w, 30), run(&mut fresh, 30));
    // And the other way round: the restored world changes, the snapshot not.
    w.restore(&snap);
    w.set_user_data(id, 5).unwrap();
    assert_eq!(snap.to_bytes(), bytes);
}

/// A freed body or shape slot keeps nothing of what it held: a world whose
/// bodies had unusual settings, shapes and velocities encodes, once they are
/// destroyed, exactly like one whose bodies were plain (the slots, their
/// generations and the id pools are the same).
#[test]
fn destroyed_slots_encode_as_vacant() {
    let build = |fancy: bool| {
        let mut w = World::default();
        let mut ids = Vec::new();
        for i in 0..6 {
            let mut def = BodyDef::dynamic(Vec2::from_ints(3 * i, 4));
            if fancy {
                def.linear_damping = fx(2);
                def.angular_damping = fx(1);
                def.gravity_scale = Scalar::HALF;
                def.sleep_threshold = fx(1);
                def.enable_sleep = false;
                def.fixed_rotation = true;
                def.user_data = 1000 + i as u64;
                def.bullet = true;
                def.linear_velocity = Vec2::from_ints(1, 2);
            }
            let b = w.create_body(&def).unwrap();
            let g = if fancy {
                ShapeGeometry::Capsule(
                    Capsule::new(Vec2::ZERO, Vec2::from_ints(0, 1), Scalar::HALF).unwrap(),
                )
            } else {
                ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap())
            };
            w.create_shape(b, &ShapeDef::default(), g).unwrap();
            ids.push(b);
        }
        for _ in 0..3 {
            w.step();
        }
        w
    };
    let (mut plain, mut fancy) = (build(false), build(true));
    assert_ne!(plain.state_hash(), fancy.state_hash());
    for w in [&mut plain, &mut fancy] {
        let ids: Vec<BodyId> = w.bodies().collect();
        w.destroy_body(ids[1]).unwrap();
        w.destroy_bodies(&ids[3..]).unwrap();
    }
    // Bodies 0 and 2 remain and differ; free them as well, by the two paths.
    for w in [&mut plain, &mut fancy] {
        let ids: Vec<BodyId> = w.bodies().collect();
        w.destroy_body(ids[0]).unwrap();
        w.destroy_bodies(&ids[1..]).unwrap();
        // Stepping an empty world changes only the tick.
        w.step();
    }
    assert_eq!(plain.snapshot().to_bytes(), fancy.snapshot().to_bytes());
}

// ---------------------------------------------------------------------------
// 9. Property: restore at k + N steps == N steps straight, on random scenes
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Geo {
    /// Half-extents in cm.
    Box(i64, i64),
    /// Radius in cm.
    Circle(i64),
    /// Half-length and radius in cm.
    Capsule(i64, i64),
    /// Vertex count, circumradius in cm, rounding in cm, angle jitters in
    /// thousandths of half the vertex spacing.
    Poly(usize, i64, i64, Vec<i64>),
}

#[derive(Clone, Debug)]
struct BodySpec {
    geo: Geo,
    kinematic: bool,
    /// Position and velocity in cm and cm/s; angle and spin in mrad, mrad/s.
    pos: (i64, i64),
    angle: i64,
    vel: (i64, i64),
    spin: i64,
    enable_sleep: bool,
    awake: bool,
    fixed_rotation: bool,
    /// Friction and restitution in percent, density in tenths.
    friction: i64,
    restitution: i64,
    density: i64,
}

#[derive(Clone, Copy, Debug)]
enum Poke {
    Impulse { body: usize, jx: i64, jy: i64 },
    Destroy { body: usize },
    Create { x: i64 },
}

#[derive(Clone, Debug)]
struct SceneSpec {
    bodies: Vec<BodySpec>,
    world_sleep: bool,
    /// Steps before the random restore point (lets calm scenes fall asleep).
    warmup: usize,
    /// An input applied at a step after the restore point, in both runs.
    poke: Option<(usize, Poke)>,
}

fn geo_strategy() -> impl Strategy<Value = Geo> {
    prop_oneof![
        (10i64..100, 10i64..100).prop_map(|(a, b)| Geo::Box(a, b)),
        (10i64..80).prop_map(Geo::Circle),
        (5i64..100, 5i64..50).prop_map(|(l, r)| Geo::Capsule(l, r)),
        (
            3usize..=8,
            20i64..100,
            0i64..10,
            prop::collection::vec(-900i64..900, 8)
        )
            .prop_map(|(n, r, round, j)| Geo::Poly(n, r, round, j)),
    ]
}

fn body_strategy(calm: bool) -> impl Strategy<Value = BodySpec> {
    let speed: i64 = if calm { 0 } else { 500 };
    // Calm scenes start low so they come to rest within the warm-up.
    let top: i64 = if calm { 400 } else { 1200 };
    (
        geo_strategy(),
        prop::bool::weighted(0.08),
        (-800i64..800, 50i64..top),
        -3142i64..3142,
        (-speed..=speed, -speed..=speed),
        -3000i64..3000,
        // One body that may not sleep keeps its whole island awake, so calm
        // scenes make that rare.
        prop::bool::weighted(if calm { 0.97 } else { 0.8 }),
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.1),
        (0i64..100, 0i64..100, 5i64..40),
    )
        .prop_map(
            move |(
                geo,
                kinematic,
                pos,
                angle,
                vel,
                spin,
                enable_sleep,
                awake,
                fixed_rotation,
                (friction, restitution, density),
            )| BodySpec {
                geo,
                kinematic,
                pos,
                angle,
                vel,
                spin: if calm { 0 } else { spin },
                enable_sleep,
                awake,
                fixed_rotation,
                friction,
                restitution: if calm { 0 } else { restitution },
                density,
            },
        )
}

fn poke_strategy() -> impl Strategy<Value = Poke> {
    prop_oneof![
        (0usize..64, -50i64..50, 0i64..80).prop_map(|(body, jx, jy)| Poke::Impulse {
            body,
            jx,
            jy
        }),
        (0usize..64).prop_map(|body| Poke::Destroy { body }),
        (-800i64..800).prop_map(|x| Poke::Create { x }),
    ]
}

fn scene_strategy() -> impl Strategy<Value = SceneSpec> {
    // Calm scenes start at rest with no bounce and get up to 5 s of warm-up,
    // so many are (partly) asleep at the restore point.
    prop::bool::ANY.prop_flat_map(|calm| {
        (
            prop::collection::vec(body_strategy(calm), 1..40),
            prop::bool::weighted(0.85),
            if calm { 0usize..300 } else { 0usize..30 },
            prop::option::weighted(0.6, (0usize..120, poke_strategy())),
        )
            .prop_map(|(bodies, world_sleep, warmup, poke)| SceneSpec {
                bodies,
                world_sleep,
                warmup,
                poke,
            })
    })
}

fn cm(v: i64) -> Scalar {
    Scalar::ratio(v, 100)
}

fn geometry(g: &Geo) -> ShapeGeometry {
    match g {
        Geo::Box(a, b) => ShapeGeometry::Polygon(Polygon::make_box(cm(*a), cm(*b))),
        Geo::Circle(r) => ShapeGeometry::Circle(Circle::new(Vec2::ZERO, cm(*r)).unwrap()),
        Geo::Capsule(l, r) => ShapeGeometry::Capsule(
            Capsule::new(
                Vec2::new(-cm(*l), Scalar::ZERO),
                Vec2::new(cm(*l), Scalar::ZERO),
                cm(*r),
            )
            .unwrap(),
        ),
        Geo::Poly(n, r, round, jitter) => {
            // Points on a circle at increasing, distinct angles form a
            // strictly convex polygon; jitter stays under half the spacing.
            let step = std::f64::consts::TAU / *n as f64;
            let pts: Vec<Vec2> = (0..*n)
                .map(|i| {
                    let a = step * i as f64 + step * 0.5 * jitter[i] as f64 / 1000.0;
                    let r = *r as f64 / 100.0;
                    Vec2::new(
                        Scalar::from_f64(r * a.cos()).unwrap(),
                        Scalar::from_f64(r * a.sin()).unwrap(),
                    )
                })
                .collect();
            ShapeGeometry::Polygon(Polygon::new(&pts, cm(*round)).unwrap())
        }
    }
}

fn build(spec: &SceneSpec) -> (World, Vec<BodyId>) {
    let mut w = World::new(WorldDef {
        enable_sleep: spec.world_sleep,
        ..WorldDef::default()
    })
    .unwrap();
    let ground = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
        .unwrap();
    w.create_shape(
        ground,
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(fx(20), fx(1))),
    )
    .unwrap();
    let mut ids = Vec::new();
    for b in &spec.bodies {
        let id = w
            .create_body(&BodyDef {
                kind: if b.kinematic {
                    BodyKind::Kinematic
                } else {
                    BodyKind::Dynamic
                },
                position: Vec2::new(cm(b.pos.0), cm(b.pos.1)),
                rotation: Rot::from_angle(Scalar::milli(b.angle)),
                linear_velocity: Vec2::new(cm(b.vel.0), cm(b.vel.1)),
                angular_velocity: Scalar::milli(b.spin),
                enable_sleep: b.enable_sleep,
                awake: b.awake,
                fixed_rotation: b.fixed_rotation,
                ..BodyDef::default()
            })
            .unwrap();
        let def = ShapeDef {
            density: Scalar::ratio(b.density, 10),
            friction: cm(b.friction),
            restitution: cm(b.restitution),
            ..ShapeDef::default()
        };
        w.create_shape(id, &def, geometry(&b.geo)).unwrap();
        ids.push(id);
    }
    (w, ids)
}

/// `n` steps from the restore point, applying the poke at its step.
fn continue_scene(w: &mut World, ids: &[BodyId], spec: &SceneSpec, n: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(n);
    for j in 0..n {
        if let Some((at, poke)) = spec.poke {
            if at == j {
                match poke {
                    Poke::Impulse { body, jx, jy } => {
                        let id = ids[body % ids.len()];
                        let c = w.world_center(id).unwrap();
                        w.apply_linear_impulse(id, Vec2::new(cm(jx), cm(jy)), c)
                            .unwrap();
                    }
                    Poke::Destroy { body } => w.destroy_body(ids[body % ids.len()]).unwrap(),
                    Poke::Create { x } => {
                        let b = w
                            .create_body(&BodyDef::dynamic(Vec2::new(cm(x), fx(4))))
                            .unwrap();
                        w.create_shape(
                            b,
                            &ShapeDef::default(),
                            ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF)),
                        )
                        .unwrap();
                    }
                }
            }
        }
        w.step();
        out.push(w.state_hash());
    }
    out
}

/// What a game may do to a world between two steps (besides inputs): the
/// API calls that change poses, centres, velocities or sleep.
#[derive(Clone, Copy, Debug)]
enum Edit {
    /// Moves and turns a body by (cm, cm, milliradians).
    Teleport {
        body: usize,
        dx: i64,
        dy: i64,
        turn: i64,
    },
    Sleep {
        body: usize,
    },
    Wake {
        body: usize,
    },
    /// Sets a body's velocity (cm/s) and spin (milliradians/s).
    Velocity {
        body: usize,
        vx: i64,
        vy: i64,
        spin: i64,
    },
    /// Adds a small ball off a body's centre (its centre moves).
    AddShape {
        body: usize,
        ox: i64,
        oy: i64,
    },
    /// Removes the last added shape of the first body from here on that
    /// has more than one.
    RemoveShape {
        body: usize,
    },
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0usize..64, -150i64..150, -150i64..150, -1600i64..1600)
            .prop_map(|(body, dx, dy, turn)| Edit::Teleport { body, dx, dy, turn }),
        (0usize..64).prop_map(|body| Edit::Sleep { body }),
        (0usize..64).prop_map(|body| Edit::Wake { body }),
        (0usize..64, -800i64..800, -800i64..800, -9000i64..9000)
            .prop_map(|(body, vx, vy, spin)| Edit::Velocity { body, vx, vy, spin }),
        (0usize..64, -40i64..40, -40i64..40).prop_map(|(body, ox, oy)| Edit::AddShape {
            body,
            ox,
            oy
        }),
        (0usize..64).prop_map(|body| Edit::RemoveShape { body }),
    ]
}

fn apply_edit(w: &mut World, ids: &[BodyId], e: Edit) {
    let pick = |b: usize| ids[b % ids.len()];
    match e {
        Edit::Teleport { body, dx, dy, turn } => {
            let id = pick(body);
            let xf = w.transform(id).unwrap();
            let q = Rot::from_angle(xf.q.angle() + Scalar::milli(turn));
            let _ = w.set_transform(id, xf.p + Vec2::new(cm(dx), cm(dy)), q);
        }
        Edit::Sleep { body } => w.set_awake(pick(body), false).unwrap(),
        Edit::Wake { body } => w.set_awake(pick(body), true).unwrap(),
        Edit::Velocity { body, vx, vy, spin } => {
            let id = pick(body);
            let _ = w.set_linear_velocity(id, Vec2::new(cm(vx), cm(vy)));
            w.set_angular_velocity(id, Scalar::milli(spin)).unwrap();
        }
        Edit::AddShape { body, ox, oy } => {
            let ball = ShapeGeometry::Circle(Circle {
                center: Vec2::new(cm(ox), cm(oy)),
                radius: cm(8),
            });
            let _ = w.create_shape(pick(body), &ShapeDef::default(), ball);
        }
        Edit::RemoveShape { body } => {
            // The first body from `body` on with a shape added.
            for i in 0..ids.len() {
                let shapes = w.body_shapes(pick(body + i)).unwrap();
                if shapes.len() > 1 {
                    w.destroy_shape(shapes[0]).unwrap();
                    break;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(256)
    })]

    /// API edits between steps (and some a few steps before), then a
    /// snapshot's bytes decoded: the
    /// decoded world steps as the one it came from, also when the edited
    /// bodies are woken a step later (a sleeping body's contacts must be
    /// those of its new pose in both).
    #[test]
    fn edits_then_a_snapshot_step_as_the_original(
        spec in scene_strategy(),
        k in 0usize..90,
        before in proptest::collection::vec(edit_strategy(), 0..4),
        gap in 1usize..4,
        edits in proptest::collection::vec(edit_strategy(), 1..5),
        n in 1usize..40,
    ) {
        let (mut w, ids) = build(&spec);
        steps(&mut w, spec.warmup + k);
        // Edits some steps earlier (a shape added then may be removed now).
        for &e in &before {
            apply_edit(&mut w, &ids, e);
        }
        steps(&mut w, gap);
        for &e in &edits {
            apply_edit(&mut w, &ids, e);
        }
        let bytes = w.snapshot().to_bytes();
        let decoded = Snapshot::from_bytes(&bytes);
        prop_assert!(decoded.is_ok(), "refused: {:?}", decoded.err());
        let mut d = World::from_snapshot(&decoded.unwrap());
        prop_assert_eq!(d.state_hash(), w.state_hash());
        for x in [&mut w, &mut d] {
            x.step();
            for &id in &ids {
                x.set_awake(id, true).unwrap();
            }
        }
        prop_assert_eq!(run(&mut d, n), run(&mut w, n));
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Keep proptest from writing regression files into the source tree.
        failure_persistence: None,
        ..ProptestConfig::with_cases(24)
    })]

    #[test]
    fn restore_then_n_steps_equals_n_steps_straight(spec in scene_strategy(), k in 0usize..120, n in 1usize..120) {
        // Straight: one world, never snapshotted or restored.
        let (mut straight, ids) = build(&spec);
        steps(&mut straight, spec.warmup + k);
        let expected = continue_scene(&mut straight, &ids, &spec, n);

        // Snapshot at the same point in a second world.
        let (mut w, ids2) = build(&spec);
        prop_assert_eq!(&ids, &ids2);
        steps(&mut w, spec.warmup + k);
        let snap = w.snapshot();
        let bytes = snap.to_bytes();

        // Restored in place after stepping (and poking) elsewhere.
        continue_scene(&mut w, &ids, &spec, n.min(37));
        w.restore(&snap);
        prop_assert_eq!(continue_scene(&mut w, &ids, &spec, n), expected.clone());

        // A fresh world from the snapshot, and one from its bytes.
        let mut fresh = World::from_snapshot(&snap);
        prop_assert_eq!(continue_scene(&mut fresh, &ids, &spec, n), expected.clone());
        let decoded = Snapshot::from_bytes(&bytes).unwrap();
        prop_assert_eq!(decoded.to_bytes(), bytes);
        let mut decoded_world = World::from_snapshot(&decoded);
        prop_assert_eq!(continue_scene(&mut decoded_world, &ids, &spec, n), expected);
    }
}

// ---------------------------------------------------------------------------
// 10. Untrusted bytes
// ---------------------------------------------------------------------------

/// A small world with every kind of state in use: static, dynamic and
/// kinematic bodies, all four shape kinds, touching contacts, a sleeping
/// body, joints (with warm-start impulses, a break threshold and a freed
/// joint slot), a freed body slot and a freed shape slot.
fn small_world() -> World {
    let mut w = World::default();
    let g = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
        .unwrap();
    w.create_shape(
        g,
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(fx(10), fx(1))),
    )
    .unwrap();
    let seg = bitroom_sim::Segment::new(Vec2::from_ints(-10, 0), Vec2::from_ints(-5, 3)).unwrap();
    w.create_shape(g, &ShapeDef::default(), ShapeGeometry::Segment(seg))
        .unwrap();
    let doomed = w
        .create_body(&BodyDef::dynamic(Vec2::from_ints(5, 5)))
        .unwrap();
    w.create_shape(
        doomed,
        &ShapeDef::default(),
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap()),
    )
    .unwrap();
    let b = w
        .create_body(&BodyDef::dynamic(Vec2::new(Scalar::ZERO, Scalar::HALF)))
        .unwrap();
    w.create_shape(
        b,
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF)),
    )
    .unwrap();
    let c = w
        .create_body(&BodyDef::dynamic(Vec2::from_ints(2, 1)))
        .unwrap();
    w.create_shape(
        c,
        &ShapeDef::default(),
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap()),
    )
    .unwrap();
    let k = w
        .create_body(&BodyDef {
            kind: BodyKind::Kinematic,
            position: Vec2::from_ints(-3, 2),
            linear_velocity: Vec2::new(Scalar::ZERO, -Scalar::HALF),
            ..BodyDef::default()
        })
        .unwrap();
    let cap = Capsule::new(
        Vec2::from_ints(-1, 0),
        Vec2::from_ints(1, 0),
        Scalar::ratio(1, 4),
    )
    .unwrap();
    w.create_shape(k, &ShapeDef::default(), ShapeGeometry::Capsule(cap))
        .unwrap();
    let sleeper = w
        .create_body(&BodyDef {
            awake: false,
            ..BodyDef::dynamic(Vec2::from_ints(6, 3))
        })
        .unwrap();
    let tri = Polygon::new(
        &[
            Vec2::from_ints(0, 0),
            Vec2::from_ints(1, 0),
            Vec2::from_ints(0, 1),
        ],
        Scalar::ZERO,
    )
    .unwrap();
    w.create_shape(sleeper, &ShapeDef::default(), ShapeGeometry::Polygon(tri))
        .unwrap();
    // A sensor on the ground overlapping the box, hit events on the box, a bullet.
    let sensor = ShapeDef {
        is_sensor: true,
        ..ShapeDef::default()
    };
    w.create_shape(
        g,
        &sensor,
        ShapeGeometry::Circle(Circle::new(Vec2::from_ints(0, 1), Scalar::ONE).unwrap()),
    )
    .unwrap();
    let hits = ShapeDef {
        enable_hit_events: true,
        enable_contact_events: false,
        ..ShapeDef::default()
    };
    w.create_shape(
        b,
        &hits,
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::ratio(1, 4)).unwrap()),
    )
    .unwrap();
    w.set_bullet(c, true).unwrap();
    let hinge = w
        .create_joint(&JointDef {
            local_anchor_a: Vec2::from_ints(1, 0),
            local_anchor_b: Vec2::from_ints(-1, 0),
            break_force: fx(1000),
            user_data: 9,
            ..JointDef::new(
                b,
                c,
                JointKind::Revolute(RevoluteJoint {
                    enable_limit: true,
                    lower_angle: -Scalar::HALF,
                    upper_angle: Scalar::HALF,
                    enable_motor: true,
                    max_motor_torque: Scalar::ONE,
                    ..RevoluteJoint::default()
                }),
            )
        })
        .unwrap();
    let spare = w
        .create_joint(&JointDef::new(
            g,
            c,
            JointKind::Friction(FrictionJoint::default()),
        ))
        .unwrap();
    w.create_joint(&JointDef::new(
        g,
        b,
        JointKind::Distance(DistanceJoint::rope(fx(3))),
    ))
    .unwrap();
    w.destroy_joint(spare).unwrap();
    assert!(w.contains_joint(hinge));
    steps(&mut w, 20);
    w.destroy_body(doomed).unwrap();
    steps(&mut w, 2);
    assert!(w.touching_contact_count() > 0);
    w
}

/// Decodes untrusted bytes; if they are accepted, the world must step.
/// Returns whether they were accepted; panics name the input.
fn decode_and_step(bytes: &[u8], what: &str) -> bool {
    let result = catch_unwind(AssertUnwindSafe(|| match Snapshot::from_bytes(bytes) {
        Ok(snap) => {
            let mut w = World::from_snapshot(&snap);
            steps(&mut w, 10);
            let _ = w.state_hash();
            let _ = w.snapshot().to_bytes();
            true
        }
        Err(_) => false,
    }));
    match result {
        Ok(accepted) => accepted,
        Err(_) => panic!("{what}: decoding or stepping panicked"),
    }
}

#[test]
fn empty_and_truncated_bytes_are_refused() {
    assert!(Snapshot::from_bytes(&[]).is_err());
    let bytes = small_world().snapshot().to_bytes();
    assert!(Snapshot::from_bytes(&bytes).is_ok());
    for len in 0..bytes.len() {
        let r = catch_unwind(|| Snapshot::from_bytes(&bytes[..len]));
        match r {
            Ok(Err(_)) => {}
            Ok(Ok(_)) => panic!("truncation to {len} of {} bytes was accepted", bytes.len()),
            Err(_) => panic!("truncation to {len} bytes panicked"),
        }
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let bytes = small_world().snapshot().to_bytes();
    for extra in [1usize, 7, 100] {
        let mut b = bytes.clone();
        b.resize(bytes.len() + extra, 0);
        match Snapshot::from_bytes(&b) {
            Err(SnapshotError::Trailing(n)) => assert_eq!(n, extra),
            other => panic!("{extra} trailing bytes: {other:?}"),
        }
    }
}

#[test]
fn every_single_bit_flip_is_refused_or_steps_without_panicking() {
    let bytes = small_world().snapshot().to_bytes();
    let mut accepted = 0;
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            accepted += usize::from(decode_and_step(&b, &format!("bit {bit} of byte {i}")));
        }
    }
    // Most bits are physics values (any value decodes), so most flips must
    // be accepted; this guards against a decoder that refuses everything.
    assert!(
        accepted > bytes.len() * 4,
        "only {accepted} of {} flips accepted",
        bytes.len() * 8
    );
}

/// xorshift64*: a fixed pseudo-random sequence, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_byte_corruption_is_refused_or_steps_without_panicking() {
    let bytes = small_world().snapshot().to_bytes();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for trial in 0..3000 {
        let mut b = bytes.clone();
        let count = 1 + rng.below(8);
        let mut log = Vec::new();
        for _ in 0..count {
            let i = rng.below(b.len());
            let v = rng.next() as u8;
            b[i] = v;
            log.push((i, v));
        }
        decode_and_step(&b, &format!("trial {trial}: bytes set {log:?}"));
    }
}

#[test]
fn negative_hit_event_threshold_is_refused() {
    // Find the threshold's 8 bytes by a distinctive value, then negate it.
    let marker = Scalar::from_bits(0x0123_4567_89ab);
    let w = World::new(WorldDef {
        hit_event_threshold: marker,
        ..WorldDef::default()
    })
    .unwrap();
    let mut bytes = w.snapshot().to_bytes();
    let pat = marker.to_bits().to_le_bytes();
    let at = bytes
        .windows(8)
        .position(|x| x == pat)
        .expect("threshold in the encoding");
    bytes[at..at + 8].copy_from_slice(&(-marker).to_bits().to_le_bytes());
    assert!(matches!(
        Snapshot::from_bytes(&bytes),
        Err(bitroom_sim::SnapshotError::Invalid("settings"))
    ));
}

#[test]
fn moved_list_disagreeing_with_the_shape_flags_is_refused() {
    // A shape created since the last step is flagged and listed once:
    // the encoding ends with `moved` = [0], then two empty joint vectors.
    let mut w = World::default();
    let b = w.create_body(&BodyDef::dynamic(Vec2::ZERO)).unwrap();
    w.create_shape(
        b,
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(fx(1), fx(1))),
    )
    .unwrap();
    let bytes = w.snapshot().to_bytes();
    assert!(Snapshot::from_bytes(&bytes).is_ok());
    let n = bytes.len();
    let tail = |moved: &[u32]| {
        let mut b = bytes[..n - 28].to_vec();
        b.extend_from_slice(&(moved.len() as u64).to_le_bytes());
        for m in moved {
            b.extend_from_slice(&m.to_le_bytes());
        }
        b.extend_from_slice(&[0; 16]);
        b
    };
    assert_eq!(
        tail(&[0]),
        bytes,
        "layout changed: moved list not at the end"
    );
    // Flagged but not listed (its pairs would never be searched), and
    // listed twice.
    for moved in [&[][..], &[0, 0][..]] {
        assert!(matches!(
            Snapshot::from_bytes(&tail(moved)),
            Err(bitroom_sim::SnapshotError::Invalid("moved shape list"))
        ));
    }
}

/// Offset of the body-slot count: after the settings and the tick. An empty
/// world's encoding is those plus eight zero `u64` vector lengths.
fn body_count_offset() -> usize {
    let empty = World::default().snapshot().to_bytes();
    assert!(
        empty[empty.len() - 64..].iter().all(|&b| b == 0),
        "layout changed: empty world does not end in eight empty vectors"
    );
    empty.len() - 64
}

/// A `Vm*` field of /proc/self/status in KiB (Linux only).
fn vm_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn vm_peak_kib() -> Option<u64> {
    vm_kib("VmPeak:")
}

const CHILD_ENV: &str = "BITROOM_SNAPSHOT_ALLOC_CHILD";

/// Absurd vector lengths must be refused without reserving memory for them.
///
/// The memory check runs in a child process executing only this test, so
/// other tests' threads cannot disturb the peak-virtual-memory reading.
#[test]
fn absurd_length_prefix_is_refused_without_huge_allocation() {
    let off = body_count_offset();
    let world = small_world();
    let bytes = world.snapshot().to_bytes();
    let slots = u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap());
    assert_eq!(
        slots, 6,
        "layout changed: body-slot count not at offset {off}"
    );
    let empty = World::default().snapshot().to_bytes();
    let absurd = [
        u64::MAX,
        1 << 62,
        1 << 40,
        1 << 32,
        MAX_SNAPSHOT_BYTES as u64,
        10_000_000,
        1_000_000,
    ];
    let before = vm_peak_kib();
    for &len in &absurd {
        let mut b = bytes.clone();
        b[off..off + 8].copy_from_slice(&len.to_le_bytes());
        assert!(
            Snapshot::from_bytes(&b).is_err(),
            "body count {len} accepted"
        );
        // Every vector length of an empty world (bodies, free bodies, shapes,
        // free shapes, contacts, moved, joints, free joints).
        for v in 0..8 {
            let mut e = empty.clone();
            let at = off + 8 * v;
            e[at..at + 8].copy_from_slice(&len.to_le_bytes());
            assert!(
                Snapshot::from_bytes(&e).is_err(),
                "vector {v} length {len} accepted"
            );
        }
    }
    if std::env::var_os(CHILD_ENV).is_some() {
        // Alone in this process: the peak may only grow by a few MiB (serde
        // preallocates at most 1 MiB per vector from an untrusted length).
        // Reserving for even 10⁶ bodies would add ~200 MiB.
        if let (Some(a), Some(b)) = (before, vm_peak_kib()) {
            let grew = b.saturating_sub(a);
            eprintln!("VmPeak grew by {grew} KiB");
            assert!(
                grew < 64 * 1024,
                "decoding absurd lengths raised the peak virtual memory by {grew} KiB"
            );
            // Calibration: the probe does see a 256 MiB reservation (the
            // peak may have had slack above the current size, so compare
            // with the current size).
            let size = vm_kib("VmSize:").unwrap();
            let big = std::hint::black_box(Vec::<u8>::with_capacity(256 << 20));
            let grew_big = vm_peak_kib().unwrap().saturating_sub(size);
            assert!(
                grew_big >= 200 * 1024,
                "VmPeak probe is blind: a 256 MiB reservation raised it by {grew_big} KiB"
            );
            drop(big);
        }
        return;
    }
    if vm_peak_kib().is_none() {
        return; // No /proc: the refusal checks above are all we can do.
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "absurd_length_prefix_is_refused_without_huge_allocation",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child check failed:\n{text}"
    );
}

/// More than 64 MiB of genuine state is refused by the decoder's limit.
#[test]
fn snapshot_over_the_size_limit_is_refused() {
    let mut w = World::default();
    let per_body = {
        let one = {
            let mut v = World::default();
            v.create_body(&BodyDef::dynamic(Vec2::ZERO)).unwrap();
            v.snapshot().to_bytes().len()
        };
        one - World::default().snapshot().to_bytes().len()
    };
    // Shapeless bodies are the cheapest state to build.
    let n = MAX_SNAPSHOT_BYTES / per_body + 1000;
    for i in 0..n {
        w.create_body(&BodyDef::dynamic(Vec2::new(
            Scalar::ratio(i as i64 % 1000, 10),
            Scalar::ratio(i as i64 / 1000, 10),
        )))
        .unwrap();
    }
    let bytes = w.snapshot().to_bytes();
    assert!(bytes.len() > MAX_SNAPSHOT_BYTES);
    assert!(
        Snapshot::from_bytes(&bytes).is_err(),
        "{} bytes accepted",
        bytes.len()
    );
}

// ---------------------------------------------------------------------------
// 11. Figures (run with --ignored --nocapture)
// ---------------------------------------------------------------------------

/// Prints size and timing figures for the world's snapshot.
fn report(w: &World, label: &str) {
    use std::time::Instant;
    let empty = World::default().snapshot().to_bytes().len();
    let (body_bytes, shape_bytes) = {
        let mut v = World::default();
        let b = v.create_body(&BodyDef::dynamic(Vec2::ZERO)).unwrap();
        let bare = v.snapshot().to_bytes().len() - empty;
        let half = Scalar::HALF;
        let geo = ShapeGeometry::Polygon(Polygon::make_box(half, half));
        v.create_shape(b, &ShapeDef::default(), geo).unwrap();
        (bare, v.snapshot().to_bytes().len() - empty - bare)
    };
    let snap = w.snapshot();
    let bytes = snap.to_bytes();
    let bodies = w.body_count();
    let awake = awake_count(w);
    let contact_bytes = bytes.len() - empty - bodies * (body_bytes + shape_bytes);
    println!(
        "{label}: {} bytes, {:.0} bytes/body; body slot {body_bytes} B, box shape slot {shape_bytes} B, \
         {} contacts ({} touching) ≈ {:.0} B each; {awake} of {bodies} awake",
        bytes.len(),
        (bytes.len() - empty) as f64 / bodies as f64,
        w.contact_count(),
        w.touching_contact_count(),
        contact_bytes as f64 / w.contact_count().max(1) as f64,
    );
    let iters = 200;
    let time = |what: &str, f: &mut dyn FnMut()| {
        f(); // warm up
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        println!(
            "  {what}: {:.1} µs",
            t.elapsed().as_secs_f64() * 1e6 / f64::from(iters)
        );
    };
    let mut target = World::default();
    time("snapshot() + restore()", &mut || {
        let s = std::hint::black_box(w.snapshot());
        target.restore(&s);
    });
    time("snapshot()", &mut || {
        std::hint::black_box(w.snapshot());
    });
    time("restore()", &mut || {
        target.restore(std::hint::black_box(&snap))
    });
    time("to_bytes() + from_bytes()", &mut || {
        let b = snap.to_bytes();
        std::hint::black_box(Snapshot::from_bytes(&b).unwrap());
    });
    time("to_bytes()", &mut || {
        std::hint::black_box(snap.to_bytes());
    });
    time("from_bytes()", &mut || {
        std::hint::black_box(Snapshot::from_bytes(&bytes).unwrap());
    });
    time("state_hash()", &mut || {
        std::hint::black_box(w.state_hash());
    });
    let packed = snap.to_packed();
    println!(
        "  packed: {} bytes, {:.1} bytes/body",
        packed.len(),
        (packed.len() - World::default().snapshot().to_packed().len()) as f64 / bodies as f64
    );
    time("to_packed()", &mut || {
        std::hint::black_box(snap.to_packed());
    });
    time("from_packed()", &mut || {
        std::hint::black_box(Snapshot::from_packed(&packed).unwrap());
    });
    assert_eq!(
        Snapshot::from_packed(&packed).unwrap().state_hash(),
        w.state_hash()
    );
    assert_eq!(target.state_hash(), w.state_hash());
}

#[test]
#[ignore = "measurement: prints sizes and timings"]
fn measure_snapshot_size_and_speed() {
    use std::time::Instant;
    let mut w = World::default();
    let g = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
        .unwrap();
    let ground = ShapeGeometry::Polygon(Polygon::make_box(fx(40), fx(1)));
    w.create_shape(g, &ShapeDef::default(), ground).unwrap();
    // 1000 boxes in a 50 × 20 grid, 10 cm apart, the lowest 10 cm up.
    for i in 0..1000 {
        let (col, row) = (i % 50, i / 50);
        let x = Scalar::ratio(11 * col - 270, 10);
        let y = Scalar::ratio(11 * row + 6, 10);
        let b = w.create_body(&BodyDef::dynamic(Vec2::new(x, y))).unwrap();
        let geo = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        w.create_shape(b, &ShapeDef::default(), geo).unwrap();
    }
    let t = Instant::now();
    steps(&mut w, 300);
    println!(
        "stepping: {:.3} ms/step over the first 300 steps",
        t.elapsed().as_secs_f64() * 1e3 / 300.0
    );
    report(&w, "1000 boxes after 300 steps");
    steps(&mut w, 600);
    report(&w, "1000 boxes after 900 steps");
}

/// A world holding `marker` in one field, its snapshot bytes, and where
/// the marker's 8 bytes sit (a radius also appears as the body's extents).
fn with_marker(marker: Scalar, build: impl FnOnce(&mut World, Scalar)) -> (Vec<u8>, Vec<usize>) {
    let mut w = World::default();
    build(&mut w, marker);
    let bytes = w.snapshot().to_bytes();
    assert!(
        Snapshot::from_bytes(&bytes).is_ok(),
        "the untouched state decodes"
    );
    let pat = marker.to_bits().to_le_bytes();
    let hits: Vec<usize> = bytes
        .windows(8)
        .enumerate()
        .filter(|(_, x)| *x == pat)
        .map(|(i, _)| i)
        .collect();
    assert!(!hits.is_empty(), "marker not in the encoding");
    (bytes, hits)
}

/// Expected reason, marker, how to build the world holding it, a value to
/// refuse and a value to accept.
type RangeCase = (
    &'static str,
    Scalar,
    Box<dyn FnOnce(&mut World, Scalar)>,
    Scalar,
    Scalar,
);

/// Values outside what the API and stepping allow (found by fuzzing: a
/// crafted game snapshot overflowed the exact 128-bit arithmetic of the
/// distance routine in a debug build) are refused, each with its reason;
/// values at the edge of the allowed range still decode and step.
#[test]
fn out_of_range_values_are_refused() {
    let huge = Scalar::from_int(1 << 28);
    let cases: Vec<RangeCase> = vec![
        (
            // The radius is also the body's extent, checked first.
            "body value out of range",
            Scalar::from_bits(0x1_2345_6789),
            Box::new(|w: &mut World, m| {
                let b = w.create_body(&BodyDef::dynamic(Vec2::ZERO)).unwrap();
                let circle = Circle {
                    center: Vec2::ZERO,
                    radius: m,
                };
                w.create_shape(b, &ShapeDef::default(), ShapeGeometry::Circle(circle))
                    .unwrap();
            }),
            huge,
            fx(20_000),
        ),
        (
            "shape value out of range",
            Scalar::from_bits(0x2_3456_789a),
            Box::new(|w: &mut World, m| {
                let b = w.create_body(&BodyDef::dynamic(Vec2::ZERO)).unwrap();
                let capsule = Capsule {
                    c1: Vec2::new(m, fx(0)),
                    c2: Vec2::ZERO,
                    radius: fx(1),
                };
                w.create_shape(b, &ShapeDef::default(), ShapeGeometry::Capsule(capsule))
                    .unwrap();
            }),
            -huge,
            fx(-20_000),
        ),
        (
            // Found by fuzzing replays: a static wall turned by (c, s) =
            // (0, MIN) passed a wrapping `abs` bound check, and then
            // multiplied its shape far outside the world.
            "body value out of range",
            Rot::from_angle(Scalar::from_bits(0x6_789a_bcde)).s,
            Box::new(|w: &mut World, m| {
                let angle = Scalar::from_bits(0x6_789a_bcde);
                let rotation = Rot::from_angle(angle);
                assert_eq!(rotation.s, m);
                let b = w
                    .create_body(&BodyDef {
                        rotation,
                        ..BodyDef::fixed(Vec2::ZERO)
                    })
                    .unwrap();
                let poly = Polygon::make_box(fx(1), fx(1));
                w.create_shape(b, &ShapeDef::default(), ShapeGeometry::Polygon(poly))
                    .unwrap();
            }),
            Scalar::MIN,
            Rot::from_angle(Scalar::from_bits(0x6_789a_bcde)).s,
        ),
        (
            "settings out of range",
            Scalar::from_bits(0x5_6789_abcd),
            Box::new(|w: &mut World, m| {
                *w = World::new(WorldDef {
                    gravity: Vec2::new(m, fx(-10)),
                    ..WorldDef::default()
                })
                .unwrap();
            }),
            fx(20000),
            fx(-9999),
        ),
    ];
    for (reason, marker, build, bad, fine) in cases {
        let (bytes, at) = with_marker(marker, build);
        let set = |v: Scalar| {
            let mut b = bytes.clone();
            for &i in &at {
                b[i..i + 8].copy_from_slice(&v.to_bits().to_le_bytes());
            }
            b
        };
        match Snapshot::from_bytes(&set(bad)) {
            Err(SnapshotError::Invalid(r)) => assert_eq!(r, reason, "{bad:?}"),
            other => panic!("{reason}: {bad:?} decoded: {:?}", other.map(|s| s.tick())),
        }
        assert!(
            decode_and_step(&set(fine), reason),
            "{reason}: {fine:?} refused"
        );
    }
}

/// A body leaving the world stops at its edge with no speed (instead of
/// taking the arithmetic out of range), and the state still decodes.
#[test]
fn a_body_leaving_the_world_stops_at_its_edge() {
    let mut w = World::new(WorldDef {
        gravity: Vec2::ZERO,
        ..WorldDef::default()
    })
    .unwrap();
    let b = w
        .create_body(&BodyDef::dynamic(Vec2::new(fx(-9995), fx(-9995))))
        .unwrap();
    w.create_shape(
        b,
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(fx(1), fx(1))),
    )
    .unwrap();
    // 400 m/s is the speed limit: 6.7 m a step, past the edge at 10 km.
    w.set_linear_velocity(b, Vec2::new(fx(-400), fx(0)))
        .unwrap();
    w.set_angular_velocity(b, fx(3)).unwrap();
    w.step();
    let p = w.position(b).unwrap();
    assert_eq!(p.x, fx(-10_000));
    assert!((p.y - fx(-9995)).abs() < Scalar::ratio(1, 1000), "{p:?}");
    assert_eq!(w.linear_velocity(b).unwrap(), Vec2::ZERO);
    let snap = Snapshot::from_bytes(&w.snapshot().to_bytes()).expect("decodes");
    let mut again = World::from_snapshot(&snap);
    for _ in 0..10 {
        w.step();
        again.step();
    }
    assert_eq!(w.position(b).unwrap(), p);
    assert_eq!(again.state_hash(), w.state_hash());
}

/// `Scalar::MIN` used to pass `abs() > WORLD_BOUND` checks (its wrapping
/// `abs` was negative): the API's bound checks refuse it now.
#[test]
fn the_most_negative_position_is_outside_the_world() {
    let mut w = World::default();
    for p in [Vec2::new(Scalar::MIN, fx(0)), Vec2::new(fx(0), Scalar::MIN)] {
        assert!(w.create_body(&BodyDef::dynamic(p)).is_err(), "{p:?}");
    }
    let b = w.create_body(&BodyDef::dynamic(Vec2::ZERO)).unwrap();
    assert!(w
        .set_transform(b, Vec2::new(Scalar::MIN, fx(0)), Rot::IDENTITY)
        .is_err());
}

/// Every named scene's real states decode, in both encodings, to the same
/// state: validation must never refuse what stepping produced (it once
/// refused `smash` at tick 120 over a contact normal of length 1.000037).
#[test]
fn every_named_scene_state_decodes_in_both_encodings() {
    for &name in bitroom_sim::scene::SCENE_NAMES {
        let mut w = build_named(name).unwrap();
        // The benchmark scenes are large; they get fewer, longer strides.
        let (stride, checks) = match name {
            "many_pyramids" => (60, 2),
            "large_pyramid" | "pyramid44" | "smash" => (40, 3),
            _ => (30, 6),
        };
        for _ in 0..checks {
            steps(&mut w, stride);
            let s = w.snapshot();
            let tick = w.tick();
            let canonical = Snapshot::from_bytes(&s.to_bytes())
                .unwrap_or_else(|e| panic!("{name} at tick {tick}: canonical: {e}"));
            let packed = Snapshot::from_packed(&s.to_packed())
                .unwrap_or_else(|e| panic!("{name} at tick {tick}: packed: {e}"));
            assert_eq!(canonical.to_bytes(), s.to_bytes(), "{name} at tick {tick}");
            assert_eq!(packed.to_bytes(), s.to_bytes(), "{name} at tick {tick}");
            // The contact geometry is not encoded but recomputed from the
            // positions: it must come back bit for bit, since the next
            // step solves with it.
            let expected: Vec<_> = w.contacts().collect();
            let mut reference = World::from_snapshot(&s);
            steps(&mut reference, 5);
            for decoded in [&canonical, &packed] {
                let mut d = World::from_snapshot(decoded);
                assert_eq!(
                    d.contacts().collect::<Vec<_>>(),
                    expected,
                    "{name} at tick {tick}: recomputed contact geometry"
                );
                steps(&mut d, 5);
                assert_eq!(
                    d.state_hash(),
                    reference.state_hash(),
                    "{name} at tick {tick}: 5 steps after decoding"
                );
            }
        }
    }
}

/// Canonical and packed sizes of every named scene after 200 steps (120 for
/// the big benchmark scenes), and the packed form's round trip.
#[test]
#[ignore = "measurement: prints sizes"]
fn measure_packed_sizes_of_named_scenes() {
    let empty = World::default().snapshot();
    let (empty_canon, empty_packed) = (empty.to_bytes().len(), empty.to_packed().len());
    for &name in bitroom_sim::scene::SCENE_NAMES {
        let mut w = build_named(name).unwrap();
        let n = if name.contains("pyramid") || name == "smash" {
            120
        } else {
            200
        };
        steps(&mut w, n);
        let s = w.snapshot();
        let t = std::time::Instant::now();
        let packed = s.to_packed();
        let encode = t.elapsed();
        let canon = s.to_bytes();
        let bodies = w.body_count().max(1) as f64;
        let t = std::time::Instant::now();
        let back = Snapshot::from_packed(&packed).unwrap();
        let decode = t.elapsed();
        assert_eq!(back.state_hash(), w.state_hash());
        println!(
            "{name:>15}: {:>5} bodies, {:>5} contacts, {:>4} awake: canonical {:>6.0} B/body, packed {:>6.1} B/body ({:>8} bytes, encoded in {:.2} ms, decoded in {:.2} ms)",
            w.body_count(),
            w.contact_count(),
            awake_count(&w),
            (canon.len() - empty_canon) as f64 / bodies,
            (packed.len() - empty_packed) as f64 / bodies,
            packed.len(),
            encode.as_secs_f64() * 1e3,
            decode.as_secs_f64() * 1e3,
        );
    }
}

/// Contact manifolds are cached apart from the state (`recycle`), keyed by
/// shape slots and reference poses. Restoring a state whose shape slot
/// held another shape than the live world's must not reuse the live
/// world's cache: the restored world continues exactly as a world decoded
/// from the same snapshot (which starts with no cache).
#[test]
fn restore_forgets_cached_manifolds_of_reused_shape_slots() {
    let mut w = World::default();
    let g = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
        .unwrap();
    let ground = ShapeGeometry::Polygon(Polygon::make_box(fx(20), fx(1)));
    w.create_shape(g, &ShapeDef::default(), ground).unwrap();
    let b = w
        .create_body(&BodyDef::dynamic(Vec2::new(fx(0), Scalar::HALF)))
        .unwrap();
    let small = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
    let s = w.create_shape(b, &ShapeDef::default(), small).unwrap();
    steps(&mut w, 10);
    assert!(w.is_awake(b).unwrap(), "its contact is updated every step");
    let snap = w.snapshot();
    // The same body, at the same pose, with a wider box off to one side
    // (the same bottom, so the body stays in its cell) in the freed shape
    // slot: same slot pair, same reference keys, other contact points.
    w.destroy_shape(s).unwrap();
    let wide = ShapeGeometry::Polygon(Polygon::make_offset_box(
        fx(1),
        Scalar::HALF,
        Vec2::new(Scalar::ratio(3, 10), fx(0)),
        Rot::IDENTITY,
    ));
    let s2 = w.create_shape(b, &ShapeDef::default(), wide).unwrap();
    assert_eq!(s2.index, s.index, "the slot is reused");
    steps(&mut w, 1);
    w.restore(&snap);
    let mut decoded = World::from_snapshot(&Snapshot::from_bytes(&snap.to_bytes()).unwrap());
    assert_eq!(run(&mut w, 20), run(&mut decoded, 20));
}

#[test]
fn a_chain_segment_without_a_direction_is_refused() {
    // Distinctive coordinates: find the first segment's ghost vertex in
    // the encoding and move it onto the segment's first point.
    let mut w = World::default();
    let ground = w.create_body(&BodyDef::default()).unwrap();
    let c = |v: i64| Scalar::from_bits(0x0123_4000_0000 + (v << 32));
    let points = [
        Vec2::new(c(1), c(2)),
        Vec2::new(c(3), c(4)),
        Vec2::new(c(5), c(6)),
        Vec2::new(c(7), c(8)),
    ];
    w.create_chain(ground, &ShapeDef::default(), &points, false)
        .unwrap();
    let bytes = w.snapshot().to_bytes();
    assert!(Snapshot::from_bytes(&bytes).is_ok());
    let find = |v: Scalar| {
        bytes
            .windows(8)
            .position(|x| x == v.to_bits().to_le_bytes())
            .expect("coordinate in the encoding")
    };
    let (gx, gy) = (find(c(1)), find(c(2)));
    let mut bad = bytes.clone();
    bad[gx..gx + 8].copy_from_slice(&c(3).to_bits().to_le_bytes());
    bad[gy..gy + 8].copy_from_slice(&c(4).to_bits().to_le_bytes());
    assert!(matches!(
        Snapshot::from_bytes(&bad),
        Err(bitroom_sim::SnapshotError::Invalid(_))
    ));
}

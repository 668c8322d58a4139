//! A step on several threads (`World::set_threads`) gives the same bits as
//! a step on one: every step's state hash and event digest, for scenes
//! with enough contacts for the preparation to be shared out (in ranges of
//! bundles), where hundreds of shapes move at once (the pair search is
//! shared out: the pyramid's first steps, the falling bed), with joints
//! (prepared beside the contacts), with hit events and restitution
//! (approach speeds copied out after the threads' work), and with events,
//! sensors and sleeping bodies where the narrow phase walks the contact
//! list in ranges. Dropping part of any range's work fails these (tried
//! for the preparation and the pair search, and for the events of the
//! narrow phase's second range). The beds, many separate heaps, are also
//! solved in groups (`world/step/groups.rs`): skipping a group's
//! restitution or its approach speeds fails them (tried). The big
//! pyramid, one island, runs its substeps on two threads run by run
//! (`world/step/colours.rs`, whose test asserts that its rule takes it).

use bitroom_sim::scene::{build_scene, Scene};
use bitroom_sim::{fx, BodyDef, Polygon, Scalar, ShapeDef, ShapeGeometry, Vec2, World, WorldDef};

/// Each step's (state hash, event hash) over `steps` steps of a world made
/// by `make`, stepped on `threads` threads (`step_fn` before each step).
fn trace(make: &dyn Fn() -> Scene, threads: usize, steps: u32) -> Vec<(u64, u64)> {
    let mut sc = make();
    sc.world.set_threads(threads).expect("threads start");
    assert_eq!(sc.world.threads(), threads);
    (0..steps)
        .map(|_| {
            sc.step();
            (sc.world.state_hash(), sc.world.event_hash())
        })
        .collect()
}

/// Asserts that 2 and 3 threads trace as 1 does, step by step.
fn same_for_any_count(name: &str, make: &dyn Fn() -> Scene, steps: u32) {
    let one = trace(make, 1, steps);
    for threads in [2, 3] {
        let many = trace(make, threads, steps);
        for (step, (a, b)) in one.iter().zip(&many).enumerate() {
            assert_eq!(
                a, b,
                "{name}: step {step} on {threads} threads differs from one thread"
            );
        }
    }
}

fn named(scene: &'static str) -> impl Fn() -> Scene {
    move || build_scene(scene).expect("named scene")
}

/// Contacts at the end of `steps` steps of `make` on one thread.
fn contacts_after(make: &dyn Fn() -> Scene, steps: u32) -> usize {
    let mut sc = make();
    for _ in 0..steps {
        sc.step();
    }
    sc.world.touching_contact_count()
}

#[test]
fn a_big_pyramid_steps_the_same_on_any_thread_count() {
    let make = named("large_pyramid");
    // Enough touching contacts for three threads' ranges of bundles, and
    // for two of the contact solver's windows (8 192 contacts each), whose
    // runs two threads share out.
    assert!(contacts_after(&make, 1) > 8192);
    same_for_any_count("large_pyramid", &make, 12);
}

#[test]
fn joints_step_the_same_on_any_thread_count() {
    same_for_any_count("joint_grid", &named("joint_grid"), 10);
    same_for_any_count("ragdoll", &named("ragdoll"), 120);
}

#[test]
fn tumbling_and_smashing_step_the_same_on_any_thread_count() {
    same_for_any_count("tumbler", &named("tumbler"), 30);
    same_for_any_count("smash", &named("smash"), 30);
}

/// A world with ground `half_width` metres either side of the origin, its
/// top at y = 0.
fn grounded(half_width: i32) -> World {
    let mut w = World::new(WorldDef::default()).unwrap();
    let g = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
        .unwrap();
    let ground = ShapeGeometry::Polygon(Polygon::make_box(fx(half_width), fx(1)));
    w.create_shape(g, &ShapeDef::default(), ground).unwrap();
    w
}

/// A bed of bouncy boxes that report hits, dropped on the ground: thousands
/// of contacts with hit events and restitution.
fn bouncy_bed() -> Scene {
    let mut w = grounded(110);
    let def = ShapeDef {
        restitution: Scalar::ratio(1, 2),
        enable_hit_events: true,
        ..ShapeDef::default()
    };
    let half = Scalar::ratio(1, 4);
    for row in 0..20 {
        for col in 0..200 {
            // Staggered rows, a little apart: they land one on another.
            let x = Scalar::ratio(col * 2 - 200, 2) + Scalar::ratio(row % 2, 4);
            let y = Scalar::ratio(row * 11 + 2, 20);
            let b = w.create_body(&BodyDef::dynamic(Vec2::new(x, y))).unwrap();
            w.create_shape(
                b,
                &def,
                ShapeGeometry::Polygon(Polygon::make_box(half, half)),
            )
            .unwrap();
        }
    }
    Scene {
        world: w,
        step_fn: None,
    }
}

#[test]
fn hits_and_bounces_are_the_same_on_any_thread_count() {
    let touching = contacts_after(&bouncy_bed, 30);
    assert!(touching > 3 * 1024, "{touching} contacts");
    same_for_any_count("bouncy bed", &bouncy_bed, 45);
    // The hits themselves, not only their digest, on one thread and two.
    let hits = |threads| {
        let mut w = bouncy_bed().world;
        w.set_threads(threads).unwrap();
        let mut hits = 0;
        for _ in 0..45 {
            w.step();
            hits += w.contact_events().hit.len();
        }
        hits
    };
    let one = hits(1);
    assert!(one > 100, "the bed reports hits ({one})");
    assert_eq!(hits(2), one);
}

#[test]
fn thread_counts_outside_the_range_are_refused() {
    let mut w = World::default();
    assert!(w.set_threads(0).is_err());
    assert!(w.set_threads(65).is_err());
    assert_eq!(w.threads(), 1);
    w.set_threads(2).unwrap();
    assert_eq!(w.threads(), 2);
    w.set_threads(1).unwrap();
    assert_eq!(w.threads(), 1);
}

/// A wide bed for the collide stage walked in ranges: a wall of boxes that
/// sleeps from the start on the left (its touching contacts collided in
/// the first pass, with the references of bodies that sleep; woken by what
/// falls on it), boxes that fall and bounce on the right, sensors among
/// them, every contact reporting begin and end events; enough contacts
/// for three ranges.
fn wide_bed() -> World {
    let mut w = grounded(200);
    let small = ShapeGeometry::Polygon(Polygon::make_box(Scalar::ratio(1, 4), Scalar::ratio(1, 4)));
    let events = ShapeDef {
        enable_contact_events: true,
        restitution: Scalar::ratio(1, 3),
        ..ShapeDef::default()
    };
    let sensor = ShapeDef {
        is_sensor: true,
        enable_sensor_events: true,
        ..ShapeDef::default()
    };
    for row in 0..12 {
        for col in 0..300 {
            // The sleeping wall: four rows resting on one another and on
            // the ground, its contacts touching from the first pass.
            let asleep = col < 120 && row < 4;
            let x = Scalar::ratio(col * 11 - 1650, 10) + Scalar::ratio(row % 2, 5);
            let y = if asleep {
                Scalar::ratio(row * 2 + 1, 4)
            } else {
                Scalar::ratio(row * 6 + 3, 10)
            };
            let def = BodyDef {
                awake: !asleep,
                ..BodyDef::dynamic(Vec2::new(x, y))
            };
            let b = w.create_body(&def).unwrap();
            w.create_shape(b, &events, small).unwrap();
            if col % 25 == 0 {
                // A sensor riding on the box, a little wider than it.
                let ring = ShapeGeometry::Polygon(Polygon::make_box(
                    Scalar::ratio(2, 5),
                    Scalar::ratio(2, 5),
                ));
                w.create_shape(b, &sensor, ring).unwrap();
            }
        }
    }
    w
}

/// Every step's (state hash, event hash) of the wide bed on the thread
/// counts `plan` gives each step, with a rush of new boxes in one corner
/// (new contacts in the last range only) and a rollback (a restore keeps
/// each range's cached bases that still hold) along the way.
fn wide_trace(plan: &dyn Fn(u32) -> usize) -> Vec<(u64, u64, usize)> {
    let mut w = wide_bed();
    let mut saved = None;
    let mut out = Vec::new();
    for step in 0..70u32 {
        let threads = plan(step);
        if w.threads() != threads {
            w.set_threads(threads).unwrap();
        }
        if step == 25 {
            let small =
                ShapeGeometry::Polygon(Polygon::make_box(Scalar::ratio(1, 4), Scalar::ratio(1, 4)));
            for k in 0..600 {
                let x = Scalar::ratio(1500 + (k % 30) * 6, 10);
                let y = Scalar::ratio(80 + (k / 30) * 6, 10);
                let b = w.create_body(&BodyDef::dynamic(Vec2::new(x, y))).unwrap();
                w.create_shape(b, &ShapeDef::default(), small).unwrap();
            }
        }
        if step == 40 {
            saved = Some(w.snapshot());
        }
        if step == 50 {
            w.restore(saved.as_ref().unwrap());
        }
        w.step();
        let e = w.contact_events();
        let s = w.sensor_events();
        let events = e.begin.len() + e.end.len() + s.begin.len() + s.end.len();
        out.push((w.state_hash(), w.event_hash(), events));
    }
    out
}

/// The collide stage walked in ranges (one per thread, each with its own
/// part of the recycler's bases) gives one thread's bits: begin and end
/// events, sensor events, sleeping boxes woken across ranges, new contacts
/// crowding one range, thread counts changed from step to step (the parts
/// merged and cut again), and a restore. (That each basis keeps to the part
/// of its key through new cuts, which no hash can show, is
/// `split_passes_keep_each_basis_in_the_part_of_its_key` in `recycle.rs`;
/// middle ranges on three and four threads at small sizes,
/// `middle_ranges_keep_their_bits` in `finish.rs`.)
#[test]
fn collide_in_ranges_steps_the_same_on_any_thread_count() {
    let mut w = wide_bed();
    for _ in 0..5 {
        w.step();
    }
    // Enough contacts for three ranges (`PARALLEL_CONTACTS` each).
    assert!(
        w.contact_count() > 3 * 1024,
        "{} contacts",
        w.contact_count()
    );
    let one = wide_trace(&|_| 1);
    let events: usize = one.iter().map(|&(_, _, n)| n).sum();
    assert!(events > 1000, "the bed reports events ({events})");
    let plans: [(&str, &dyn Fn(u32) -> usize); 3] = [
        ("two threads", &|_| 2),
        ("three threads", &|_| 3),
        ("changing counts", &|s| [1, 2, 3, 2][(s / 7 % 4) as usize]),
    ];
    for (name, plan) in plans {
        let many = wide_trace(plan);
        for (step, (a, b)) in one.iter().zip(&many).enumerate() {
            assert_eq!(a, b, "{name}: step {step} differs from one thread");
        }
    }
}

/// A field of 17 000 resting boxes in short columns (more awake bodies
/// than two threads' ranges need: the finish stage finalizes them and
/// finds their grown fat boxes in ranges), with balls and bullets shot
/// through it from both ends of the body list (fast bodies recorded for
/// continuous collision by the first range and by the last).
fn crowded_range() -> World {
    let mut w = grounded(400);
    let ball = ShapeGeometry::Circle(bitroom_sim::Circle {
        center: Vec2::ZERO,
        radius: Scalar::ratio(1, 10),
    });
    let shoot = |w: &mut World, k: i64| {
        let def = BodyDef {
            linear_velocity: Vec2::new(
                Scalar::from_int(if k % 2 == 0 { 150 } else { -150 }),
                fx(0),
            ),
            bullet: k % 3 == 0,
            ..BodyDef::dynamic(Vec2::new(
                Scalar::from_int(if k % 2 == 0 { -390 } else { 390 }),
                Scalar::ratio(k % 10 + 1, 2),
            ))
        };
        let b = w.create_body(&def).unwrap();
        w.create_shape(b, &ShapeDef::default(), ball).unwrap();
    };
    for k in 0..40 {
        shoot(&mut w, k);
    }
    let small = ShapeGeometry::Polygon(Polygon::make_box(Scalar::ratio(1, 5), Scalar::ratio(1, 5)));
    for col in 0..1700 {
        for row in 0..10 {
            let x = Scalar::ratio(col * 45 - 38_250, 100);
            let y = Scalar::ratio(row * 40 + 20, 100);
            let b = w.create_body(&BodyDef::dynamic(Vec2::new(x, y))).unwrap();
            w.create_shape(b, &ShapeDef::default(), small).unwrap();
        }
    }
    for k in 40..80 {
        shoot(&mut w, k);
    }
    w
}

/// The finish stage in ranges of the awake bodies gives one thread's
/// bits, fast bodies and bullets included.
#[test]
fn finishing_in_ranges_steps_the_same_on_any_thread_count() {
    let make = || Scene {
        world: crowded_range(),
        step_fn: None,
    };
    let w = crowded_range();
    // Enough for ranges on up to four threads (finish.rs's
    // `PARALLEL_BODIES`, 2 048 a thread).
    assert!(w.body_count() > 4 * 2048, "{} bodies", w.body_count());
    same_for_any_count("crowded range", &make, 20);
}

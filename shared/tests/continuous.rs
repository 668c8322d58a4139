//! Continuous collision: fast bodies do not tunnel through static geometry,
//! bullets do not tunnel through dynamic bodies, and switching it off makes
//! the same scenes tunnel (so these tests can fail).
//!
//! Positions are compared as `f64` (the float edge: assertions only).

use bitroom_sim::{
    fx, BodyDef, BodyId, BodyKind, Circle, Polygon, Rot, Scalar, ShapeDef, ShapeGeometry, Vec2,
    World, WorldDef,
};

fn s(v: f64) -> Scalar {
    Scalar::from_f64(v).expect("test constant in range")
}

fn pos(w: &World, id: BodyId) -> (f64, f64) {
    let p = w.position(id).expect("live body");
    (p.x.to_f64(), p.y.to_f64())
}

fn zero_g(continuous: bool) -> World {
    World::new(WorldDef {
        gravity: Vec2::ZERO,
        enable_continuous: continuous,
        ..WorldDef::default()
    })
    .unwrap()
}

const R: f64 = 0.1;
/// The wall: x from −0.05 to 0.05, y from −WALL_H to WALL_H.
const WALL_H: f64 = 10.0;

fn add_wall(w: &mut World, material: &ShapeDef) {
    let wall = w.create_body(&BodyDef::fixed(Vec2::ZERO)).unwrap();
    w.create_shape(
        wall,
        material,
        ShapeGeometry::Polygon(Polygon::make_box(s(0.05), s(WALL_H))),
    )
    .unwrap();
}

fn add_ball(
    w: &mut World,
    p: (f64, f64),
    v: (f64, f64),
    bullet: bool,
    material: &ShapeDef,
) -> BodyId {
    let b = w
        .create_body(&BodyDef {
            linear_velocity: Vec2::new(s(v.0), s(v.1)),
            bullet,
            ..BodyDef::dynamic(Vec2::new(s(p.0), s(p.1)))
        })
        .unwrap();
    w.create_shape(
        b,
        material,
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, s(R)).unwrap()),
    )
    .unwrap();
    b
}

/// Fires a 0.1 m ball at 300 m/s from `start` at `angle_deg` (0 = +x) toward
/// the wall and returns the largest x its centre reached while beside the
/// wall (|y| below the wall's half-height less the radius).
fn fire(continuous: bool, start: (f64, f64), angle_deg: f64, material: &ShapeDef) -> f64 {
    let mut w = zero_g(continuous);
    add_wall(&mut w, material);
    let a = angle_deg.to_radians();
    let v = (300.0 * a.cos(), 300.0 * a.sin());
    let ball = add_ball(&mut w, start, v, false, material);
    let mut max_x = f64::MIN;
    for _ in 0..30 {
        w.step();
        let (x, y) = pos(&w, ball);
        if y.abs() < WALL_H - R {
            max_x = max_x.max(x);
        }
    }
    max_x
}

#[test]
fn fast_ball_never_passes_through_a_thin_static_wall() {
    // The wall face is at x = −0.05; a ball touching it has its centre at −0.15.
    let face = -0.05;
    let touching = face - R;
    let mut cases = 0;
    for &x0 in &[-3.0, -2.71, -1.234_567, -4.999] {
        for &y0 in &[0.0, 1.37, -2.5] {
            // Every shot reaches the wall inside its ±10 m height.
            for &angle in &[0.0, 15.0, -30.0, 45.0, -50.0] {
                for (mu, e) in [(0.0, 0.0), (0.0, 1.0), (0.6, 0.0), (0.6, 1.0)] {
                    let material = ShapeDef {
                        friction: s(mu),
                        restitution: s(e),
                        ..ShapeDef::default()
                    };
                    let max_x = fire(true, (x0, y0), angle, &material);
                    let what =
                        format!("start ({x0}, {y0}) angle {angle}° friction {mu} restitution {e}");
                    // It did reach the wall (within 1 cm of touching).
                    assert!(
                        max_x > touching - 0.01,
                        "{what}: never reached the wall ({max_x})"
                    );
                    if mu == 0.0 {
                        // Moved back to the time of impact, then stopped by
                        // the speculative contact: no penetration at all.
                        assert!(
                            max_x <= touching + 1e-6,
                            "{what}: centre reached x = {max_x}"
                        );
                    } else {
                        // With friction the impact step's huge normal impulse
                        // lets friction spin the ball up to ~500 rad/s within
                        // a substep; the solver's separation estimate follows
                        // the rotating contact anchor (a material-point
                        // linearisation, as in Box2D v3), so the ball sinks
                        // up to 0.74·R into the face for one step (measured
                        // centre x = −0.081 at every glancing angle) before
                        // the soft contact pushes it out. Its centre never
                        // enters the wall.
                        assert!(max_x < face, "{what}: centre reached x = {max_x}");
                    }
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 240);
}

#[test]
fn without_continuous_collision_the_ball_tunnels() {
    // The same shot head-on with continuous collision off: 5 m per step
    // jumps straight over the 0.1 m wall.
    let d = ShapeDef::default();
    let mut w = zero_g(false);
    add_wall(&mut w, &d);
    let ball = add_ball(&mut w, (-3.0, 0.0), (300.0, 0.0), false, &d);
    for _ in 0..5 {
        w.step();
    }
    assert!(pos(&w, ball).0 > 10.0, "ball at {:?}", pos(&w, ball));
    assert!(fire(false, (-3.0, 0.0), 0.0, &d) > 0.05);
    assert!(fire(false, (-2.71, 1.37), 15.0, &d) > 0.05);
}

#[test]
fn fast_spinning_box_does_not_pass_the_wall() {
    for &spin in &[0.0, 20.0, -40.0] {
        let mut w = zero_g(true);
        add_wall(&mut w, &ShapeDef::default());
        let b = w
            .create_body(&BodyDef {
                linear_velocity: Vec2::new(s(250.0), s(30.0)),
                angular_velocity: s(spin),
                rotation: Rot::from_angle(s(0.3)),
                ..BodyDef::dynamic(Vec2::new(s(-4.0), s(-1.0)))
            })
            .unwrap();
        w.create_shape(
            b,
            &ShapeDef::default(),
            ShapeGeometry::Polygon(Polygon::make_box(s(0.1), s(0.1))),
        )
        .unwrap();
        for _ in 0..30 {
            w.step();
            let (x, y) = pos(&w, b);
            if y.abs() < WALL_H - 0.2 {
                // Centre stays left of the face; the corner reach is ≤ 0.1·√2.
                assert!(x < -0.05, "spin {spin}: box centre at {x}");
            }
        }
    }
}

#[test]
fn fast_box_sliding_on_the_ground_is_not_held_back() {
    // A box resting on frictionless ground moving at 30 m/s is "fast" (0.5 m
    // per step > half its 0.25 m half-extent) and touches the ground at every
    // step start; continuous collision must not stop it against the ground.
    let run = |continuous: bool| {
        let mut w = World::new(WorldDef {
            enable_continuous: continuous,
            ..WorldDef::default()
        })
        .unwrap();
        let g = w
            .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
            .unwrap();
        let ice = ShapeDef {
            friction: Scalar::ZERO,
            ..ShapeDef::default()
        };
        w.create_shape(
            g,
            &ice,
            ShapeGeometry::Polygon(Polygon::make_box(fx(100), fx(1))),
        )
        .unwrap();
        let b = w
            .create_body(&BodyDef {
                linear_velocity: Vec2::new(fx(30), Scalar::ZERO),
                ..BodyDef::dynamic(Vec2::new(fx(-50), s(0.25)))
            })
            .unwrap();
        w.create_shape(
            b,
            &ice,
            ShapeGeometry::Polygon(Polygon::make_box(s(0.25), s(0.25))),
        )
        .unwrap();
        for _ in 0..60 {
            w.step();
        }
        pos(&w, b)
    };
    let (x_on, y_on) = run(true);
    let (x_off, _) = run(false);
    // 1 s at 30 m/s: 30 m; continuous collision changes nothing here.
    assert!((x_on - (-20.0)).abs() < 0.1, "x = {x_on}");
    assert!((y_on - 0.25).abs() < 0.02, "y = {y_on}");
    assert!((x_on - x_off).abs() < 1e-6, "{x_on} vs {x_off}");
}

/// A thin plank (0.1 m × 4 m, dynamic, asleep or awake) and a ball fired at it.
fn plank_shot(bullet: bool, awake: bool) -> (World, BodyId, BodyId) {
    let mut w = zero_g(true);
    let plank = w
        .create_body(&BodyDef {
            awake,
            ..BodyDef::dynamic(Vec2::ZERO)
        })
        .unwrap();
    w.create_shape(
        plank,
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(s(0.05), fx(2))),
    )
    .unwrap();
    let ball = add_ball(
        &mut w,
        (-3.0, 0.3),
        (300.0, 0.0),
        bullet,
        &ShapeDef::default(),
    );
    (w, plank, ball)
}

#[test]
fn bullet_does_not_pass_through_a_thin_dynamic_plank() {
    for awake in [true, false] {
        let (mut w, plank, ball) = plank_shot(true, awake);
        assert!(w.is_bullet(ball).unwrap());
        for step in 0..20 {
            w.step();
            // Relative to the plank's frame: the ball stays on its left side.
            let xf = w.transform(plank).unwrap();
            let local = xf.inv_apply(w.position(ball).unwrap());
            if local.y.abs() < fx(2) - s(R) {
                assert!(
                    local.x.to_f64() < -0.05 - R + 0.01,
                    "awake {awake}, step {step}: ball at plank-local x {}",
                    local.x
                );
            }
        }
        // The plank took the hit.
        assert!(w.linear_velocity(plank).unwrap().x > fx(5));
    }
}

#[test]
fn non_bullet_passes_through_a_thin_dynamic_plank() {
    // Without the bullet flag continuous collision only guards against
    // static geometry: the ball jumps over the plank.
    let (mut w, plank, ball) = plank_shot(false, true);
    for _ in 0..5 {
        w.step();
    }
    assert!(pos(&w, ball).0 > pos(&w, plank).0 + 1.0);
    assert_eq!(w.linear_velocity(plank).unwrap(), Vec2::ZERO);
}

#[test]
fn bullet_flag_is_only_for_dynamic_bodies_and_survives_snapshots() {
    let mut w = zero_g(true);
    let s_body = w
        .create_body(&BodyDef {
            bullet: true,
            ..BodyDef::fixed(Vec2::ZERO)
        })
        .unwrap();
    assert!(!w.is_bullet(s_body).unwrap());
    let d = w.create_body(&BodyDef::dynamic(Vec2::ZERO)).unwrap();
    let h0 = w.state_hash();
    w.set_bullet(d, true).unwrap();
    assert!(w.is_bullet(d).unwrap());
    assert_ne!(w.state_hash(), h0, "the bullet flag is state");
    let snap = bitroom_sim::Snapshot::from_bytes(&w.snapshot().to_bytes()).unwrap();
    assert!(World::from_snapshot(&snap).is_bullet(d).unwrap());
    w.destroy_body(d).unwrap();
    assert!(w.set_bullet(d, true).is_err());
    let kind = w.body_kind(s_body).unwrap();
    assert_eq!(kind, BodyKind::Static);
}

#[test]
fn fast_shapes_do_not_fall_through_a_segment_floor() {
    // A segment has no thickness at all: without continuous collision
    // anything faster than ~1 m per step skips it. Long bodies landing
    // end-first while spinning are the hard case: the impact spins them up
    // by hundreds of rad/s and swings the far end through the floor (before
    // the shrunk cores and the dead stop, 91 of these 420 drops fell
    // through). Every drop must also come to rest on the floor within 20 s
    // (the hardest impacts bounce a few metres, or send a spinning box
    // tumbling along the floor for ~13 s), not hang where the continuous
    // stage stopped it.
    let cap = bitroom_sim::Capsule::new(
        Vec2::new(s(-0.3), s(0.0)),
        Vec2::new(s(0.3), s(0.0)),
        s(0.05),
    );
    let shapes = [
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, s(R)).unwrap()),
        ShapeGeometry::Capsule(cap.unwrap()),
        ShapeGeometry::Polygon(Polygon::make_box(s(0.2), s(0.05))),
        ShapeGeometry::Polygon(Polygon::make_box(s(0.1), s(0.1))),
        ShapeGeometry::Polygon(Polygon::make_box(s(0.5), s(0.02))),
    ];
    let segment = ShapeGeometry::Segment(
        bitroom_sim::Segment::new(Vec2::from_ints(-2000, 0), Vec2::from_ints(2000, 0)).unwrap(),
    );
    for continuous in [true, false] {
        let mut tunneled = 0;
        for (k, g) in shapes.iter().enumerate() {
            for spin in [0.0, 3.0, 7.0, 12.0, 20.0, -11.0, 40.0] {
                for vy in [-50.0, -100.0, -200.0, -290.0] {
                    for vx in [0.0, 37.0, -61.0] {
                        let mut w = World::new(WorldDef {
                            enable_continuous: continuous,
                            ..WorldDef::default()
                        })
                        .unwrap();
                        let floor = w.create_body(&BodyDef::fixed(Vec2::ZERO)).unwrap();
                        w.create_shape(floor, &ShapeDef::default(), segment)
                            .unwrap();
                        let b = w
                            .create_body(&BodyDef {
                                linear_velocity: Vec2::new(s(vx), s(vy)),
                                angular_velocity: s(spin),
                                ..BodyDef::dynamic(Vec2::new(s(-3.0), s(7.3)))
                            })
                            .unwrap();
                        w.create_shape(b, &ShapeDef::default(), *g).unwrap();
                        let mut min_y = f64::MAX;
                        for _ in 0..1200 {
                            w.step();
                            min_y = min_y.min(pos(&w, b).1);
                        }
                        if min_y < 0.0 {
                            tunneled += 1;
                        }
                        if continuous {
                            let what = format!("shape {k} spin {spin} vy {vy} vx {vx}");
                            assert!(min_y > 0.0, "{what}: centre went below the floor ({min_y})");
                            let (y, v) = (pos(&w, b).1, w.linear_velocity(b).unwrap());
                            assert!(y > 0.0 && y < 0.55, "{what}: not on the floor ({y})");
                            assert!(v.y.abs() < s(0.5), "{what}: still moving ({v:?})");
                        }
                    }
                }
            }
        }
        if !continuous {
            // Without it, everything but the slowest drops goes through.
            assert!(
                tunneled > 400,
                "only {tunneled} of 420 tunneled without CCD"
            );
        }
    }
}

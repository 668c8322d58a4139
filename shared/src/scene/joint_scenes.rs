//! Named scenes built with joints.
//!
//! `joint_grid`, `tumbler`, `rain` and `spinner` follow the Box2D v3
//! benchmark set (`docs/benchmark-scenes.md`) to the letter; the
//! spinner's ring is one closed chain of 360 one-sided segments, as
//! Box2D's.
//! The other scenes (`bridge`, `pendulum`, `newtons_cradle`, `car`,
//! `ragdoll`, `rope`, `pulley`) show off one joint type each.

use super::human::add_human;
use crate::dynamics::{
    BodyDef, BodyId, BodyKind, DistanceJoint, JointDef, JointKind, PulleyJoint, RevoluteJoint,
    ShapeDef, WheelJoint, World, WorldDef,
};
use crate::geometry::{Capsule, Circle, Filter, Polygon, Segment, ShapeGeometry};
use crate::math::{fx, sin_cos, Rot, Scalar, Vec2};

fn s(v: f64) -> Scalar {
    // Float edge: scene constants written as decimals, converted once at
    // build time (IEEE → fixed rounding is identical on every target).
    // Nothing reached from `rain_step` (which runs while stepping) uses it:
    // the human's bone table is built from integers.
    Scalar::from_f64(v).expect("scene constant in range")
}

fn v(x: f64, y: f64) -> Vec2 {
    Vec2::new(s(x), s(y)) // Float edge, as `s`: build-time scene constants.
}

fn body(w: &mut World, kind: BodyKind, position: Vec2) -> BodyId {
    w.create_body(&BodyDef {
        kind,
        position,
        ..BodyDef::default()
    })
    .expect("scene body in bounds")
}

fn shape(w: &mut World, b: BodyId, def: &ShapeDef, g: ShapeGeometry) {
    w.create_shape(b, def, g).expect("scene shape valid");
}

fn circle(r: Scalar) -> ShapeGeometry {
    ShapeGeometry::Circle(Circle::new(Vec2::ZERO, r).expect("circle"))
}

fn boxed(hx: Scalar, hy: Scalar) -> ShapeGeometry {
    ShapeGeometry::Polygon(Polygon::make_box(hx, hy))
}

fn joint(w: &mut World, a: BodyId, b: BodyId, la: Vec2, lb: Vec2, kind: JointKind) {
    w.create_joint(&JointDef {
        local_anchor_a: la,
        local_anchor_b: lb,
        ..JointDef::new(a, b, kind)
    })
    .expect("scene joint");
}

/// A revolute joint at a world point between two unrotated bodies.
fn pin(w: &mut World, a: BodyId, b: BodyId, at: Vec2, kind: RevoluteJoint) {
    let la = w.local_point(a, at).expect("live body");
    let lb = w.local_point(b, at).expect("live body");
    joint(w, a, b, la, lb, JointKind::Revolute(kind));
}

/// A static floor whose top surface is y = 0, `half_width` each side.
fn floor(w: &mut World, half_width: i32) -> BodyId {
    let g = body(w, BodyKind::Static, Vec2::from_ints(0, -1));
    shape(w, g, &ShapeDef::default(), boxed(fx(half_width), fx(1)));
    g
}

// ---------------------------------------------------------------------------
// Benchmark scenes.
// ---------------------------------------------------------------------------

/// Box2D benchmark `joint_grid`: a 100 × 100 net of circles joined by
/// revolute joints, hanging from seven static anchors; sleep off.
pub fn joint_grid() -> World {
    let mut w = World::new(WorldDef {
        enable_sleep: false,
        ..WorldDef::default()
    })
    .expect("settings");
    let n = 100;
    // Category 0x2, mask everything but 0x2: circles never collide.
    let sd = ShapeDef {
        filter: Filter {
            category: 0x2,
            mask: !0x2,
            group: 0,
        },
        ..ShapeDef::default()
    };
    let geometry = circle(s(0.4));
    let rev = JointKind::Revolute(RevoluteJoint::default());
    let half = Scalar::HALF;
    let mut bodies: Vec<BodyId> = Vec::with_capacity(n * n);
    for k in 0..n {
        for i in 0..n {
            let fixed = i == 0 && (n / 2 - 3..=n / 2 + 3).contains(&k);
            let kind = if fixed {
                BodyKind::Static
            } else {
                BodyKind::Dynamic
            };
            let b = body(&mut w, kind, Vec2::from_ints(k as i32, -(i as i32)));
            shape(&mut w, b, &sd, geometry);
            if i > 0 {
                let up = bodies[bodies.len() - 1];
                let la = Vec2::new(Scalar::ZERO, -half);
                let lb = Vec2::new(Scalar::ZERO, half);
                joint(&mut w, up, b, la, lb, rev);
            }
            if k > 0 {
                let left = bodies[bodies.len() - n];
                let la = Vec2::new(half, Scalar::ZERO);
                let lb = Vec2::new(-half, Scalar::ZERO);
                joint(&mut w, left, b, la, lb, rev);
            }
            bodies.push(b);
        }
    }
    w
}

/// Box2D benchmark `tumbler`: a hollow drum (density 50) turned by a
/// revolute motor at 25°/s, filled with 2025 small boxes.
pub fn tumbler() -> World {
    let mut w = World::default();
    let ground = body(&mut w, BodyKind::Static, Vec2::ZERO);
    let drum = body(&mut w, BodyKind::Dynamic, Vec2::from_ints(0, 10));
    let heavy = ShapeDef {
        density: fx(50),
        ..ShapeDef::default()
    };
    let walls = [
        (0.5, 10.0, 10.0, 0.0),
        (0.5, 10.0, -10.0, 0.0),
        (10.0, 0.5, 0.0, 10.0),
        (10.0, 0.5, 0.0, -10.0),
    ];
    for (hx, hy, x, y) in walls {
        let p = Polygon::make_offset_box(s(hx), s(hy), v(x, y), Rot::IDENTITY);
        shape(&mut w, drum, &heavy, ShapeGeometry::Polygon(p));
    }
    joint(
        &mut w,
        ground,
        drum,
        Vec2::from_ints(0, 10),
        Vec2::ZERO,
        JointKind::Revolute(RevoluteJoint {
            enable_motor: true,
            motor_speed: s(25.0_f64.to_radians()),
            max_motor_torque: fx(100_000_000),
            ..RevoluteJoint::default()
        }),
    );
    let count = 45;
    let sd = ShapeDef::default();
    let small = boxed(s(0.125), s(0.125));
    let step = s(0.4);
    for i in 0..count {
        let y = fx(1) + step * fx(i);
        for j in 0..count {
            let x = fx(-9) + step * fx(j);
            let b = body(&mut w, BodyKind::Dynamic, Vec2::new(x, y));
            shape(&mut w, b, &sd, small);
        }
    }
    w
}

/// Box2D benchmark `spinner`: a motor-driven rounded bar stirring 6076
/// pieces of debris inside a ring of radius 40, a closed chain.
pub fn spinner() -> World {
    let mut w = World::default();
    let ground = body(&mut w, BodyKind::Static, Vec2::ZERO);
    let ring = ShapeDef {
        friction: s(0.1),
        ..ShapeDef::default()
    };
    // Ring points from the deterministic fixed-point sine and cosine: a
    // platform's f64 `sin`/`cos` may differ in the last bit.
    let points: Vec<Vec2> = (0..360)
        .map(|n| {
            let (sin, cos) = sin_cos(-(Scalar::TAU * Scalar::ratio(n, 360)));
            Vec2::new(fx(40) * cos, fx(40) * sin + fx(32))
        })
        .collect();
    // One closed chain, clockwise: its segments collide on the inside.
    w.create_chain(ground, &ring, &points, true)
        .expect("ring chain");
    let spinner = w
        .create_body(&BodyDef {
            kind: BodyKind::Dynamic,
            position: Vec2::from_ints(0, 12),
            enable_sleep: false,
            ..BodyDef::default()
        })
        .expect("spinner");
    shape(
        &mut w,
        spinner,
        &ShapeDef {
            friction: Scalar::ZERO,
            ..ShapeDef::default()
        },
        ShapeGeometry::Polygon(Polygon::make_rounded_box(s(0.4), fx(20), s(0.2))),
    );
    joint(
        &mut w,
        ground,
        spinner,
        Vec2::from_ints(0, 12),
        Vec2::ZERO,
        JointKind::Revolute(RevoluteJoint {
            enable_motor: true,
            motor_speed: fx(5),
            // Box2D: FLT_MAX (unbounded).
            max_motor_torque: Scalar::MAX,
            ..RevoluteJoint::default()
        }),
    );
    let debris = ShapeDef {
        friction: s(0.1),
        restitution: s(0.1),
        density: s(0.25),
        ..ShapeDef::default()
    };
    let capsule = ShapeGeometry::Capsule(
        Capsule::new(v(-0.25, 0.0), v(0.25, 0.0), s(0.25)).expect("capsule"),
    );
    let ball = circle(s(0.35));
    let square = boxed(s(0.35), s(0.35));
    let (mut col, mut row) = (0, 0);
    for n in 0..6076 {
        let x = fx(-23) + Scalar::HALF * fx(col);
        let y = fx(2) + Scalar::HALF * fx(row);
        let b = body(&mut w, BodyKind::Dynamic, Vec2::new(x, y));
        let g = match n % 3 {
            0 => capsule,
            1 => ball,
            _ => square,
        };
        shape(&mut w, b, &debris, g);
        col += 1;
        if fx(-23) + Scalar::HALF * fx(col) >= fx(23) {
            col = 0;
            row += 1;
        }
    }
    w
}

/// Rows of groups in `rain`.
const RAIN_ROWS: u64 = 5;
/// Columns of groups in `rain`.
const RAIN_COLUMNS: u64 = 40;
/// Humans per group in `rain`.
const RAIN_GROUP: u64 = 5;

/// Box2D benchmark `rain`: ragdolls rain onto five ground strips; run it
/// with [`rain_step`] before every step (see [`super::Scene`]).
pub fn rain() -> World {
    let mut w = World::default();
    let ground = body(&mut w, BodyKind::Static, Vec2::ZERO);
    let sd = ShapeDef::default();
    let q = s(0.25);
    for r in 0..5 {
        for j in 0..501 {
            let center = Vec2::new(fx(-125) + Scalar::HALF * fx(j), fx(45 * r));
            let p = Polygon::make_offset_box(q, q, center, Rot::IDENTITY);
            shape(&mut w, ground, &sd, ShapeGeometry::Polygon(p));
        }
    }
    w
}

/// User data of every bone of rain group (row, column); the ground has 0.
fn rain_tag(row: u64, column: u64) -> u64 {
    1 + row * RAIN_COLUMNS + column
}

fn rain_create_group(w: &mut World, row: u64, column: u64) {
    // Column pitch 250/40 = 6.25 and all offsets are exact binary fractions.
    let x0 = fx(-125) + Scalar::ratio(25, 4) * (fx(column as i32) + Scalar::HALF);
    let y0 = fx(40 + 45 * row as i32);
    for m in 0..RAIN_GROUP {
        let spawn = Vec2::new(x0 + Scalar::HALF * fx(m as i32), y0);
        add_human(w, spawn, -(m as i32 + 1), rain_tag(row, column));
    }
}

fn rain_destroy_group(w: &mut World, row: u64, column: u64) {
    let tag = rain_tag(row, column);
    let doomed: Vec<BodyId> = w.bodies().filter(|&b| w.user_data(b) == Ok(tag)).collect();
    w.destroy_bodies(&doomed).expect("live group bodies");
}

/// The `rain` per-step function: on every 8th step, spawn the next column
/// of groups in all five rows until 40 columns exist, then recycle one
/// column (destroy and re-create its five groups) per call. Everything is
/// derived from `world.tick()` and the bodies' user data, so it works
/// unchanged after a snapshot restore.
pub fn rain_step(w: &mut World) {
    let s = w.tick();
    if !s.is_multiple_of(8) {
        return;
    }
    let event = s / 8;
    if event < RAIN_COLUMNS {
        for row in 0..RAIN_ROWS {
            rain_create_group(w, row, event);
        }
    } else {
        let column = (event - RAIN_COLUMNS) % RAIN_COLUMNS;
        for row in 0..RAIN_ROWS {
            rain_destroy_group(w, row, column);
            rain_create_group(w, row, column);
        }
    }
}

// ---------------------------------------------------------------------------
// Showcase scenes.
// ---------------------------------------------------------------------------

/// A suspension bridge of 30 planks on revolute joints between two anchors,
/// with boxes and balls dropped on it.
pub fn bridge() -> World {
    let mut w = World::default();
    floor(&mut w, 40);
    let anchors = body(&mut w, BodyKind::Static, Vec2::ZERO);
    let plank = ShapeDef {
        density: fx(20),
        ..ShapeDef::default()
    };
    let n = 30;
    let y = fx(10);
    let mut prev = anchors;
    for i in 0..n {
        let b = body(
            &mut w,
            BodyKind::Dynamic,
            Vec2::new(fx(-15 + i) + Scalar::HALF, y),
        );
        shape(&mut w, b, &plank, boxed(Scalar::HALF, s(0.125)));
        pin(
            &mut w,
            prev,
            b,
            Vec2::new(fx(-15 + i), y),
            RevoluteJoint::default(),
        );
        prev = b;
    }
    pin(
        &mut w,
        prev,
        anchors,
        Vec2::new(fx(15), y),
        RevoluteJoint::default(),
    );
    let sd = ShapeDef::default();
    for i in 0..5 {
        let b = body(&mut w, BodyKind::Dynamic, Vec2::new(fx(-8 + 4 * i), fx(13)));
        shape(&mut w, b, &sd, boxed(Scalar::HALF, Scalar::HALF));
    }
    for i in 0..3 {
        let b = body(&mut w, BodyKind::Dynamic, Vec2::new(fx(-6 + 6 * i), fx(16)));
        shape(&mut w, b, &sd, circle(s(0.6)));
    }
    w
}

/// A simple pendulum (4 m, released at 45°) and a double pendulum released
/// horizontally, side by side.
pub fn pendulum() -> World {
    let mut w = World::default();
    floor(&mut w, 20);
    let pivots = body(&mut w, BodyKind::Static, Vec2::ZERO);
    let sd = ShapeDef::default();
    // Simple: bob at 45° from the pivot (−5, 12).
    let pivot = v(-5.0, 12.0);
    let r = core::f64::consts::FRAC_1_SQRT_2 * 4.0;
    let bob = body(&mut w, BodyKind::Dynamic, v(-5.0 - r, 12.0 - r));
    shape(&mut w, bob, &sd, circle(s(0.25)));
    pin(&mut w, pivots, bob, pivot, RevoluteJoint::default());
    // Double: two 2 m bars, horizontal, from the pivot (4, 12).
    let bar = ShapeGeometry::Capsule(Capsule::new(v(-1.0, 0.0), v(1.0, 0.0), s(0.1)).expect("bar"));
    let filter = ShapeDef {
        filter: Filter {
            group: -1,
            ..Filter::default()
        },
        ..ShapeDef::default()
    };
    let first = body(&mut w, BodyKind::Dynamic, v(5.0, 12.0));
    shape(&mut w, first, &filter, bar);
    pin(
        &mut w,
        pivots,
        first,
        v(4.0, 12.0),
        RevoluteJoint::default(),
    );
    let second = body(&mut w, BodyKind::Dynamic, v(7.0, 12.0));
    shape(&mut w, second, &filter, bar);
    pin(
        &mut w,
        first,
        second,
        v(6.0, 12.0),
        RevoluteJoint::default(),
    );
    w
}

/// Newton's cradle: five frictionless, perfectly elastic balls on 5 m rods
/// (distance joints); the first is released from 45°.
pub fn newtons_cradle() -> World {
    let mut w = World::default();
    floor(&mut w, 20);
    let frame = body(&mut w, BodyKind::Static, Vec2::ZERO);
    let sd = ShapeDef {
        friction: Scalar::ZERO,
        restitution: Scalar::ONE,
        ..ShapeDef::default()
    };
    let length = 5.0;
    let r = core::f64::consts::FRAC_1_SQRT_2 * length;
    for i in 0..5 {
        // A 2 cm gap: impacts pass along the row one pair at a time.
        let x = -2.04 + 1.02 * i as f64;
        let pivot = v(x, 10.0);
        let p = if i == 0 {
            v(x - r, 10.0 - r)
        } else {
            v(x, 10.0 - length)
        };
        let ball = body(&mut w, BodyKind::Dynamic, p);
        shape(&mut w, ball, &sd, circle(Scalar::HALF));
        joint(
            &mut w,
            frame,
            ball,
            pivot,
            Vec2::ZERO,
            JointKind::Distance(DistanceJoint {
                length: Some(s(length)),
                ..DistanceJoint::default()
            }),
        );
    }
    w
}

/// A car on two sprung, motor-driven wheel joints, driving over hills.
pub fn car() -> World {
    let mut w = World::default();
    let ground = body(&mut w, BodyKind::Static, Vec2::ZERO);
    let terrain = ShapeDef {
        friction: s(0.8),
        ..ShapeDef::default()
    };
    let add_segment = |w: &mut World, a: Vec2, b: Vec2| {
        let seg = Segment::new(a, b).expect("terrain segment");
        shape(w, ground, &terrain, ShapeGeometry::Segment(seg));
    };
    add_segment(&mut w, v(-20.0, 0.0), v(20.0, 0.0));
    let heights = [0.25, 1.0, 4.0, 0.0, 0.0, -1.0, -2.0, -2.0, -1.25, 0.0];
    let (mut x, mut y) = (20.0, 0.0);
    for _ in 0..2 {
        for &h in &heights {
            add_segment(&mut w, v(x, y), v(x + 5.0, h));
            (x, y) = (x + 5.0, h);
        }
    }
    add_segment(&mut w, v(x, y), v(x + 40.0, 0.0));
    // Small bumps on the flat start.
    for i in 0..4 {
        let bump = body(&mut w, BodyKind::Static, v(6.0 + 3.0 * i as f64, 0.0));
        let cap = Capsule::new(v(-0.5, 0.0), v(0.5, 0.0), s(0.12)).expect("bump");
        shape(&mut w, bump, &terrain, ShapeGeometry::Capsule(cap));
    }

    let chassis = body(&mut w, BodyKind::Dynamic, v(0.0, 1.0));
    let hull = Polygon::new(
        &[
            v(-1.5, -0.5),
            v(1.5, -0.5),
            v(1.5, 0.0),
            v(0.0, 0.9),
            v(-1.15, 0.9),
            v(-1.5, 0.2),
        ],
        Scalar::ZERO,
    )
    .expect("chassis");
    shape(
        &mut w,
        chassis,
        &ShapeDef {
            friction: s(0.2),
            ..ShapeDef::default()
        },
        ShapeGeometry::Polygon(hull),
    );
    let tyre = ShapeDef {
        density: fx(2),
        friction: s(1.5),
        ..ShapeDef::default()
    };
    for (x, y) in [(-1.0, 0.4), (1.0, 0.45)] {
        let wheel = body(&mut w, BodyKind::Dynamic, v(x, y));
        shape(&mut w, wheel, &tyre, circle(s(0.4)));
        joint(
            &mut w,
            chassis,
            wheel,
            v(x, y - 1.0),
            Vec2::ZERO,
            JointKind::Wheel(WheelJoint {
                local_axis_a: Vec2::new(Scalar::ZERO, Scalar::ONE),
                enable_spring: true,
                hertz: fx(5),
                damping_ratio: s(0.7),
                enable_limit: true,
                lower_translation: s(-0.25),
                upper_translation: s(0.25),
                enable_motor: true,
                // Clockwise: forward (+x) at ~6 m/s.
                motor_speed: fx(-15),
                max_motor_torque: fx(10),
            }),
        );
    }
    w
}

/// Six ragdolls (the benchmark human) tumbling down a flight of steps.
pub fn ragdoll() -> World {
    let mut w = World::default();
    floor(&mut w, 30);
    let sd = ShapeDef::default();
    for i in 0..6 {
        let step = body(
            &mut w,
            BodyKind::Static,
            Vec2::new(fx(-2 - 2 * i), Scalar::HALF * fx(i)),
        );
        shape(&mut w, step, &sd, boxed(fx(1), Scalar::HALF * fx(i + 1)));
    }
    for i in 0..6 {
        let spawn = Vec2::new(fx(-12 + 2 * i), fx(5 + i));
        add_human(&mut w, spawn, -(i + 1), i as u64 + 1);
    }
    w
}

/// A 40-link rope (distance-joint ropes between small beads) with a heavy
/// ball at its end, released horizontally over a post.
pub fn rope() -> World {
    let mut w = World::default();
    floor(&mut w, 30);
    let anchor = body(&mut w, BodyKind::Static, v(0.0, 15.0));
    let post = body(&mut w, BodyKind::Static, v(4.0, 6.0));
    shape(&mut w, post, &ShapeDef::default(), boxed(s(0.5), fx(6)));
    let bead = ShapeDef {
        density: fx(5),
        filter: Filter {
            group: -1,
            ..Filter::default()
        },
        ..ShapeDef::default()
    };
    let spacing = s(0.25);
    let links = 40;
    let mut prev = anchor;
    for i in 1..=links {
        let last = i == links;
        let p = Vec2::new(spacing * fx(i), fx(15));
        let b = body(&mut w, BodyKind::Dynamic, p);
        let r = if last { Scalar::HALF } else { s(0.1) };
        shape(&mut w, b, &bead, circle(r));
        joint(
            &mut w,
            prev,
            b,
            Vec2::ZERO,
            Vec2::ZERO,
            JointKind::Distance(DistanceJoint::rope(spacing)),
        );
        prev = b;
    }
    w
}

/// Two platforms on a 1.5 : 1 pulley; boxes rain onto the light side and
/// tip the balance.
pub fn pulley() -> World {
    let mut w = World::default();
    floor(&mut w, 20);
    let sd = ShapeDef::default();
    let (ga, gb) = (v(-4.0, 14.0), v(4.0, 14.0));
    for g in [ga, gb] {
        let wheel = body(&mut w, BodyKind::Static, g);
        shape(&mut w, wheel, &sd, circle(s(0.4)));
    }
    // Platforms keep level (fixed rotation) so the load stays on.
    let platform = |w: &mut World, p: Vec2| {
        let b = w
            .create_body(&BodyDef {
                fixed_rotation: true,
                ..BodyDef::dynamic(p)
            })
            .expect("platform");
        shape(w, b, &sd, boxed(fx(1), s(0.25)));
        b
    };
    let left = platform(&mut w, v(-4.0, 6.0));
    let right = platform(&mut w, v(4.0, 8.0));
    w.create_joint(&JointDef {
        local_anchor_a: v(0.0, 0.25),
        local_anchor_b: v(0.0, 0.25),
        ..JointDef::new(
            left,
            right,
            JointKind::Pulley(PulleyJoint {
                ground_anchor_a: ga,
                ground_anchor_b: gb,
                ratio: s(1.5),
                total_length: None,
            }),
        )
    })
    .expect("pulley");
    for i in 0..4 {
        let b = body(&mut w, BodyKind::Dynamic, v(4.0, 10.0 + 1.2 * i as f64));
        shape(&mut w, b, &sd, boxed(s(0.4), s(0.4)));
    }
    w
}

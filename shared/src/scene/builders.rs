//! Built-in named scenes, shared by tests, benchmarks and the CLI.
//!
//! The benchmark scenes follow `docs/benchmark-scenes.md` (the Box2D v3
//! benchmark set) to the letter, so timings are comparable.

use super::joint_scenes;
use crate::dynamics::{BodyDef, BodyKind, ShapeDef, World, WorldDef};
use crate::geometry::{Polygon, Segment, ShapeGeometry};
use crate::math::{fx, Rot, Scalar, Vec2};

/// Names of the built-in scenes.
pub const SCENE_NAMES: &[&str] = &[
    "pyramid",
    "stack",
    "ramp",
    "dominoes",
    "large_pyramid",
    "pyramid44",
    "many_pyramids",
    "smash",
    "arena",
    "joint_grid",
    "tumbler",
    "rain",
    "spinner",
    "bridge",
    "pendulum",
    "newtons_cradle",
    "car",
    "ragdoll",
    "rope",
    "pulley",
];

/// A built-in scene: its world and, for scenes that change while they run
/// (`rain` spawns and recycles ragdolls), a function to call before every
/// step — Box2D's per-step function, with the step index `world.tick()`.
///
/// The per-step function is a plain `fn` that derives everything from the
/// world (its tick and its bodies' user data), so a restored snapshot
/// continues exactly as the original run did.
#[derive(Debug)]
pub struct Scene {
    /// The world.
    pub world: World,
    /// Called with the world before each step, if the scene has one.
    pub step_fn: Option<fn(&mut World)>,
}

impl Scene {
    /// Calls the per-step function (if any), then steps the world.
    pub fn step(&mut self) {
        if let Some(f) = self.step_fn {
            f(&mut self.world);
        }
        self.world.step();
    }

    /// [`Scene::step`] with [`World::step_observed`]'s observer (the
    /// per-step function runs before the first stage).
    pub fn step_observed(&mut self, observe: &mut dyn FnMut(crate::Stage)) {
        if let Some(f) = self.step_fn {
            f(&mut self.world);
        }
        self.world.step_observed(observe);
    }
}

/// Builds a named scene with its per-step function, or `None` for an
/// unknown name.
pub fn build_scene(name: &str) -> Option<Scene> {
    let step_fn: Option<fn(&mut World)> = match name {
        "rain" => Some(joint_scenes::rain_step),
        _ => None,
    };
    build_named(name).map(|world| Scene { world, step_fn })
}

/// Builds a named scene's initial world, or `None` for an unknown name.
/// Scenes with a per-step function (`rain`) only come alive when run through
/// [`build_scene`].
pub fn build_named(name: &str) -> Option<World> {
    let w = match name {
        "pyramid" => pyramid(20),
        "stack" => stack(10),
        "ramp" => ramp(),
        "dominoes" => dominoes(),
        "large_pyramid" => large_pyramid(),
        "pyramid44" => pyramid(44),
        "many_pyramids" => many_pyramids(),
        "smash" => smash(),
        "arena" => crate::game::sandbox::arena(&crate::game::sandbox::SandboxConfig::default()),
        "joint_grid" => joint_scenes::joint_grid(),
        "tumbler" => joint_scenes::tumbler(),
        "rain" => joint_scenes::rain(),
        "spinner" => joint_scenes::spinner(),
        "bridge" => joint_scenes::bridge(),
        "pendulum" => joint_scenes::pendulum(),
        "newtons_cradle" => joint_scenes::newtons_cradle(),
        "car" => joint_scenes::car(),
        "ragdoll" => joint_scenes::ragdoll(),
        "rope" => joint_scenes::rope(),
        "pulley" => joint_scenes::pulley(),
        _ => return None,
    };
    Some(w)
}

fn s(v: f64) -> Scalar {
    // Float edge: scene constants written as decimals, converted exactly once
    // at build time (IEEE → fixed rounding is identical on every target).
    Scalar::from_f64(v).expect("scene constant in range")
}

fn boxed(
    w: &mut World,
    kind: BodyKind,
    pos: Vec2,
    hx: Scalar,
    hy: Scalar,
    shape: &ShapeDef,
) -> crate::dynamics::BodyId {
    let id = w
        .create_body(&BodyDef {
            kind,
            position: pos,
            ..BodyDef::default()
        })
        .expect("scene body in bounds");
    w.create_shape(id, shape, ShapeGeometry::Polygon(Polygon::make_box(hx, hy)))
        .expect("scene shape valid");
    id
}

/// A static ground box: top surface at y = 0, `half_width` each side.
fn ground(w: &mut World, half_width: i32) {
    boxed(
        w,
        BodyKind::Static,
        Vec2::from_ints(0, -1),
        fx(half_width),
        fx(1),
        &ShapeDef::default(),
    );
}

/// A pyramid of 1 m boxes with `rows` in the bottom row, on a ground box.
pub fn pyramid(rows: i32) -> World {
    let mut w = World::default();
    ground(&mut w, 40);
    // Centred on x = 0: the bottom row's first box sits at 0.5 − rows/2.
    box_pyramid(&mut w, rows, Scalar::HALF * fx(1 - rows), Scalar::ZERO);
    w
}

/// Adds a pyramid of 1 m boxes, `base` in the bottom row, the first bottom
/// box centred at `x0`, the bottom row standing on height `y0`. Level `i`
/// holds boxes `k = i..base` at `(x0 + k − i/2, y0 + i + 1/2)`, created level
/// by level, left to right (the order the benchmark scenes specify).
fn box_pyramid(w: &mut World, base: i32, x0: Scalar, y0: Scalar) {
    let sd = ShapeDef::default();
    let half = Scalar::HALF;
    for i in 0..base {
        let y = y0 + fx(i) + half;
        for k in i..base {
            let x = x0 + fx(k) - half * fx(i);
            boxed(w, BodyKind::Dynamic, Vec2::new(x, y), half, half, &sd);
        }
    }
}

/// A column of `count` 1 m boxes on a ground box.
pub fn stack(count: i32) -> World {
    let mut w = World::default();
    ground(&mut w, 20);
    let sd = ShapeDef::default();
    for i in 0..count {
        boxed(
            &mut w,
            BodyKind::Dynamic,
            Vec2::new(Scalar::ZERO, fx(i) + Scalar::HALF),
            Scalar::HALF,
            Scalar::HALF,
            &sd,
        );
    }
    w
}

/// Five 20° ramps with friction 0.0 … 0.8; a box on each.
///
/// tan 20° ≈ 0.364, so boxes with friction below that slide and those above hold.
pub fn ramp() -> World {
    let mut w = World::default();
    ground(&mut w, 60);
    let angle = s(20.0_f64.to_radians());
    let rot = Rot::from_angle(angle);
    let frictions = [0.0, 0.2, 0.4, 0.6, 0.8];
    for (k, &mu) in frictions.iter().enumerate() {
        let x0 = fx(-40 + 20 * k as i32);
        let material = ShapeDef {
            friction: s(mu),
            ..ShapeDef::default()
        };
        let ramp = w
            .create_body(&BodyDef::fixed(Vec2::new(x0, fx(5))))
            .expect("ramp body");
        w.create_shape(
            ramp,
            &material,
            ShapeGeometry::Polygon(Polygon::make_offset_box(fx(7), s(0.25), Vec2::ZERO, rot)),
        )
        .expect("ramp shape");
        // Box resting on the upper part of the ramp surface.
        let along = fx(4);
        let normal = Vec2::new(-rot.s, rot.c);
        let p =
            Vec2::new(x0, fx(5)) + rot.rotate(Vec2::new(along, Scalar::ZERO)) + normal * s(0.75);
        let b = w
            .create_body(&BodyDef {
                kind: BodyKind::Dynamic,
                position: p,
                rotation: rot,
                ..BodyDef::default()
            })
            .expect("ramp box");
        w.create_shape(
            b,
            &material,
            ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF)),
        )
        .expect("ramp box shape");
    }
    w
}

/// A row of 40 dominoes; the first is tipped over by an initial spin.
pub fn dominoes() -> World {
    let mut w = World::default();
    ground(&mut w, 60);
    let sd = ShapeDef {
        friction: s(0.6),
        ..ShapeDef::default()
    };
    for i in 0..40 {
        let b = w
            .create_body(&BodyDef {
                kind: BodyKind::Dynamic,
                position: Vec2::new(fx(-20) + s(1.0) * fx(i), s(1.0)),
                angular_velocity: if i == 0 { s(-3.0) } else { Scalar::ZERO },
                ..BodyDef::default()
            })
            .expect("domino");
        w.create_shape(
            b,
            &sd,
            ShapeGeometry::Polygon(Polygon::make_box(s(0.1), s(1.0))),
        )
        .expect("domino shape");
    }
    w
}

/// Box2D benchmark `large_pyramid`: 5050 boxes in a 100-row pyramid, sleep off.
pub fn large_pyramid() -> World {
    let mut w = World::new(WorldDef {
        enable_sleep: false,
        ..WorldDef::default()
    })
    .expect("settings");
    boxed(
        &mut w,
        BodyKind::Static,
        Vec2::from_ints(0, -1),
        fx(100),
        fx(1),
        &ShapeDef::default(),
    );
    // Row i spans x = −49.5 + i/2 … 49.5 − i/2.
    box_pyramid(&mut w, 100, fx(-99) * Scalar::HALF, Scalar::ZERO);
    w
}

/// Box2D benchmark `many_pyramids`: 20 × 20 pyramids of 55 boxes on 20 segments, sleep off.
pub fn many_pyramids() -> World {
    let mut w = World::new(WorldDef {
        enable_sleep: false,
        ..WorldDef::default()
    })
    .expect("settings");
    let (rows, cols, base) = (20, 20, 10);
    let ground = w.create_body(&BodyDef::fixed(Vec2::ZERO)).expect("ground");
    for r in 0..rows {
        let y = fx(11 * r);
        let seg = Segment::new(Vec2::new(fx(-110), y), Vec2::new(fx(110), y)).expect("segment");
        w.create_shape(ground, &ShapeDef::default(), ShapeGeometry::Segment(seg))
            .expect("segment shape");
    }
    for r in 0..rows {
        for c in 0..cols {
            box_pyramid(&mut w, base, fx(-110 + 11 * c + 1), fx(11 * r));
        }
    }
    w
}

/// Box2D benchmark `smash`: a heavy ram hits a sleeping 120 × 80 wall, zero gravity.
pub fn smash() -> World {
    ram_into_wall(4, (-20, 40), (120, 80), 30)
}

/// Zero gravity: a ram, a box of half-extent `ram_half` m and density 8
/// at (`ram_x`, 0) moving at `speed` m/s along x, then a wall of `cols` ×
/// `rows` boxes of 0.4 m (density 1) at (`wall_x` + 0.4 i, 0.4 (j − rows/2)),
/// each created asleep in its own island. The ram is the first body.
/// `smash` and the behaviour suite's smaller "struck wall" are two sizes.
pub fn ram_into_wall(
    ram_half: i32,
    (ram_x, speed): (i32, i32),
    (cols, rows): (i32, i32),
    wall_x: i32,
) -> World {
    let mut w = World::new(WorldDef {
        gravity: Vec2::ZERO,
        ..WorldDef::default()
    })
    .expect("settings");
    let ram = w
        .create_body(&BodyDef {
            kind: BodyKind::Dynamic,
            position: Vec2::from_ints(ram_x, 0),
            linear_velocity: Vec2::from_ints(speed, 0),
            ..BodyDef::default()
        })
        .expect("ram");
    w.create_shape(
        ram,
        &ShapeDef {
            density: fx(8),
            ..ShapeDef::default()
        },
        ShapeGeometry::Polygon(Polygon::make_box(fx(ram_half), fx(ram_half))),
    )
    .expect("ram shape");
    let d = s(0.4);
    let sd = ShapeDef::default();
    for i in 0..cols {
        for j in 0..rows {
            let b = w
                .create_body(&BodyDef {
                    kind: BodyKind::Dynamic,
                    position: Vec2::new(fx(wall_x) + d * fx(i), d * fx(j - rows / 2)),
                    awake: false,
                    ..BodyDef::default()
                })
                .expect("wall box");
            w.create_shape(
                b,
                &sd,
                ShapeGeometry::Polygon(Polygon::make_box(s(0.2), s(0.2))),
            )
            .expect("wall shape");
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_scene_builds_with_the_specified_counts() {
        let counts = [
            ("pyramid", 211),
            ("stack", 11),
            ("ramp", 11),
            ("dominoes", 41),
            ("large_pyramid", 5051),
            ("pyramid44", 991),
            ("many_pyramids", 22001),
            ("smash", 9601),
            ("joint_grid", 10000),
            ("tumbler", 2027),
            ("rain", 1),
            ("spinner", 6078),
            ("bridge", 40),
            ("pendulum", 5),
            ("newtons_cradle", 7),
            ("car", 8),
            ("ragdoll", 73),
            ("rope", 43),
            ("pulley", 9),
        ];
        for (name, n) in counts {
            let w = build_named(name).unwrap();
            assert_eq!(w.body_count(), n, "{name}");
        }
        assert!(build_named("nope").is_none());
    }
}

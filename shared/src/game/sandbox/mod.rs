//! The default game: every player drives a capsule in an arena of loose
//! bodies. Move with the horizontal axis, jump when standing on something,
//! grab the nearest body in the aim direction, carry it, throw it.
//!
//! # Layout
//! - this file: the rules ([`Sandbox`]) and the arena;
//! - `input.rs`: [`PlayerInput`];
//! - `bot.rs`: its bots ([`SandboxBot`], [`Strategy`]).

mod bot;
mod input;

pub use bot::{SandboxBot, Strategy};
pub use input::PlayerInput;

use crate::dynamics::{
    BodyDef, BodyId, BodyKind, JointDef, JointId, JointKind, ShapeDef, ShapeId, TargetJoint, World,
};
use crate::game::{avatar_user_data, GameSnapshot, Rules, Slot};
use crate::geometry::{Capsule, Circle, Polygon, ShapeGeometry};
use crate::math::{fx, sin_cos, Scalar, Vec2};
use crate::state::Snapshot;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3;

pub use crate::game::AVATAR_TAG;

/// Top speed from the move axis (m/s).
const RUN_SPEED: Scalar = Scalar::from_int(8);
/// How hard the avatar chases its target speed (1/s).
const RUN_GAIN: Scalar = Scalar::from_int(20);
/// Largest run acceleration (m/s²) on the ground; a third of it in the air.
const RUN_ACCEL_MAX: Scalar = Scalar::from_int(60);
/// Below this horizontal speed (m/s) an idle player is not pushed.
const RUN_DEADBAND: Scalar = Scalar::from_bits(1 << 27); // 1/32
/// Take-off speed of a jump (m/s).
const JUMP_SPEED: Scalar = Scalar::from_int(7);
/// Ticks between jumps.
const JUMP_COOLDOWN: u8 = 10;
/// Distance of the hold point from the avatar's centre (m).
const HOLD_DISTANCE: Scalar = Scalar::from_bits(3 << 31); // 1.5
/// A body is grabbable when its centre is this close to the hold point (m).
const GRAB_REACH: Scalar = Scalar::from_int(2);
/// Stiffness of the carry spring (Hz) and its force limit as an
/// acceleration of the held body (m/s²): heavy things lag, light ones snap.
const CARRY_HERTZ: Scalar = Scalar::from_int(6);
const CARRY_ACCEL: Scalar = Scalar::from_int(80);
/// Throw speed change (m/s).
const THROW_SPEED: Scalar = Scalar::from_int(14);

/// Arena parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxConfig {
    /// Loose bodies dropped into the arena.
    pub loose_bodies: u32,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig { loose_bodies: 200 }
    }
}

/// The sandbox rules (see the module docs).
#[derive(Clone, Debug)]
pub struct Sandbox {
    base: Arc<Snapshot>,
    fingerprint: u64,
}

/// A sandbox player's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPlayer {
    /// The avatar body.
    pub avatar: Option<BodyId>,
    /// The avatar's shape (for ground checks).
    pub shape: Option<ShapeId>,
    /// Ticks until the next jump is allowed.
    pub jump_cooldown: u8,
    /// The body being carried.
    pub held: Option<BodyId>,
    /// The target joint pulling it toward the hold point.
    pub grab: Option<JointId>,
}

impl Sandbox {
    /// The default arena.
    pub fn new(config: SandboxConfig) -> Sandbox {
        Sandbox::with_world("arena", &config, arena(&config))
    }

    /// Sandbox rules on any starting world (a named scene or a scene file).
    /// `name` and `params` go into the fingerprint with the world's hash.
    pub fn with_world<P: Serialize>(name: &str, params: &P, base: World) -> Sandbox {
        let mut h = Xxh3::new();
        h.update(b"bitroom-sandbox/1\0");
        h.update(name.as_bytes());
        h.update(&[0]);
        let p = bincode::serde::encode_to_vec(params, crate::encoding::canonical::CONFIG)
            .expect("parameters encode");
        h.update(&p);
        h.update(&base.state_hash().to_le_bytes());
        Sandbox {
            fingerprint: h.digest(),
            base: Arc::new(base.snapshot()),
        }
    }

    /// Sandbox rules for re-simulating a recording: the rules' behaviour
    /// does not depend on the scene (only [`Rules::build_world`] does, and a
    /// replay starts from its recorded snapshot instead), so a replay needs
    /// neither the scene file nor its parameters, only the recorded
    /// `fingerprint`, which is kept so the rules identify as the recorded
    /// ones. `base` is what [`Rules::build_world`] returns (the recording's
    /// initial world is the natural choice).
    pub fn for_replay(base: World, fingerprint: u64) -> Sandbox {
        Sandbox {
            fingerprint,
            base: Arc::new(base.snapshot()),
        }
    }

    /// [`Sandbox::for_replay`] of a recording that starts at `initial`.
    pub fn replaying(initial: &GameSnapshot<Sandbox>, fingerprint: u64) -> Sandbox {
        Sandbox::for_replay(World::from_snapshot(initial.world()), fingerprint)
    }
}

/// The default scene's name: the sandbox arena ([`SandboxConfig::default`]).
pub const ARENA: &str = "arena";

/// Most loose bodies in an `arena:N` scene.
pub const MAX_ARENA_BODIES: u32 = 4000;

impl Sandbox {
    /// The rules for a scene spec, as every bitroom tool builds them (so
    /// fingerprints match wherever they are built: the server, the bots,
    /// the browser): `arena` (the default arena), `arena:N` (N loose
    /// bodies, at most [`MAX_ARENA_BODIES`]), or any other spec, whose
    /// world `load` returns (a built-in scene, a scene file).
    ///
    /// # Errors
    /// A bad `arena:N`, or what `load` says.
    pub fn for_scene(
        spec: &str,
        load: impl FnOnce(&str) -> Result<World, String>,
    ) -> Result<Sandbox, String> {
        if spec == ARENA {
            return Ok(Sandbox::default());
        }
        if let Some(n) = spec.strip_prefix("arena:") {
            let loose_bodies = n
                .parse::<u32>()
                .ok()
                .filter(|&n| n <= MAX_ARENA_BODIES)
                .ok_or_else(|| {
                    format!("scene {spec:?}: arena:N takes 0 to {MAX_ARENA_BODIES} loose bodies")
                })?;
            return Ok(Sandbox::new(SandboxConfig { loose_bodies }));
        }
        Ok(Sandbox::for_world(spec, load(spec)?))
    }

    /// The rules on a scene's loaded world (the default arena keeps its
    /// own fingerprint).
    pub fn for_world(spec: &str, world: World) -> Sandbox {
        if spec == ARENA {
            Sandbox::default()
        } else {
            Sandbox::with_world(spec, &(), world)
        }
    }
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox::new(SandboxConfig::default())
    }
}

/// The default arena: a walled floor, three platforms, and loose boxes,
/// discs and capsules on a jittered grid (integer arithmetic only).
pub fn arena(config: &SandboxConfig) -> World {
    let mut w = World::default();
    let wall = |w: &mut World, x: i32, y: i32, hx: Scalar, hy: Scalar| {
        let b = w
            .create_body(&BodyDef::fixed(Vec2::from_ints(x, y)))
            .expect("arena in bounds");
        w.create_shape(
            b,
            &ShapeDef::default(),
            ShapeGeometry::Polygon(Polygon::make_box(hx, hy)),
        )
        .expect("arena shape");
    };
    wall(&mut w, 0, -1, fx(42), fx(1));
    wall(&mut w, -41, 15, fx(1), fx(15));
    wall(&mut w, 41, 15, fx(1), fx(15));
    let quarter = Scalar::ratio(1, 4);
    wall(&mut w, -18, 6, fx(6), quarter);
    wall(&mut w, 18, 6, fx(6), quarter);
    wall(&mut w, 0, 11, fx(5), quarter);

    let size = Scalar::ratio(2, 5);
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..config.loose_bodies {
        // xorshift64: a fixed integer sequence, the same everywhere.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let col = (i % 25) as i32;
        let row = (i / 25) as i32;
        let jitter = Scalar::ratio((rng % 1000) as i64, 2000); // 0 … 0.5
        let pos = Vec2::new(fx(col * 3 - 36) + jitter, fx(14 + row * 2));
        let b = w
            .create_body(&BodyDef::dynamic(pos))
            .expect("arena in bounds");
        let geom = match rng >> 61 {
            0..=3 => ShapeGeometry::Polygon(Polygon::make_box(size, size)),
            4 | 5 => ShapeGeometry::Circle(Circle::new(Vec2::ZERO, size).expect("disc")),
            _ => ShapeGeometry::Capsule(
                Capsule::new(
                    Vec2::new(-size, fx(0)),
                    Vec2::new(size, fx(0)),
                    size / fx(2),
                )
                .expect("capsule"),
            ),
        };
        w.create_shape(b, &ShapeDef::default(), geom)
            .expect("arena shape");
    }
    w
}

fn spawn_point(slot: u8) -> Vec2 {
    let s = i32::from(slot);
    Vec2::from_ints(-28 + (s % 8) * 8, 2 + (s / 8) * 3)
}

fn aim_dir(aim: u16) -> Vec2 {
    let (s, c) = sin_cos(Scalar::ratio(i64::from(aim), 65536) * Scalar::TAU);
    Vec2::new(c, s)
}

/// Whether the avatar stands on something: a touching contact whose normal
/// points up out of the support.
fn grounded(world: &World, shape: ShapeId) -> bool {
    let up = Scalar::HALF;
    world.shape_contacts(shape).any(|c| {
        (c.shape_a == shape && c.normal.y <= -up) || (c.shape_b == shape && c.normal.y >= up)
    })
}

impl Rules for Sandbox {
    type Input = PlayerInput;
    type Player = SandboxPlayer;
    type State = ();

    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn build_world(&self) -> World {
        World::from_snapshot(&self.base)
    }

    fn join(&self, world: &mut World, _: &mut (), slot: u8) -> SandboxPlayer {
        let def = BodyDef {
            fixed_rotation: true,
            user_data: avatar_user_data(slot),
            ..BodyDef::dynamic(spawn_point(slot))
        };
        let Ok(avatar) = world.create_body(&def) else {
            return SandboxPlayer::default();
        };
        let half = Scalar::HALF;
        let geom = Capsule::new(
            Vec2::new(fx(0), -half),
            Vec2::new(fx(0), half),
            fx(2) / fx(5),
        )
        .expect("avatar capsule");
        let material = ShapeDef {
            friction: Scalar::ratio(2, 5),
            ..ShapeDef::default()
        };
        let shape = world
            .create_shape(avatar, &material, ShapeGeometry::Capsule(geom))
            .ok();
        SandboxPlayer {
            avatar: Some(avatar),
            shape,
            jump_cooldown: 0,
            held: None,
            grab: None,
        }
    }

    fn leave(&self, world: &mut World, _: &mut (), _: u8, p: &mut SandboxPlayer) {
        if let Some(b) = p.avatar.take() {
            let _ = world.destroy_body(b);
        }
        *p = SandboxPlayer::default();
    }

    fn apply_input(
        &self,
        world: &mut World,
        _: &mut (),
        slot: &mut Slot<SandboxPlayer, PlayerInput>,
        input: PlayerInput,
    ) {
        let jump_pressed = slot.pressed(input, PlayerInput::JUMP);
        let grab_pressed = slot.pressed(input, PlayerInput::GRAB);
        let throw_pressed = slot.pressed(input, PlayerInput::THROW);
        let p = &mut slot.player;
        let (Some(avatar), Some(shape)) = (p.avatar, p.shape) else {
            return;
        };
        let (Ok(v), Ok(mass), Ok(center)) = (
            world.linear_velocity(avatar),
            world.mass_data(avatar),
            world.world_center(avatar),
        ) else {
            return;
        };
        let mass = mass.mass;
        let on_ground = grounded(world, shape);
        p.jump_cooldown = p.jump_cooldown.saturating_sub(1);

        // Run: chase the target speed with a bounded force.
        let target = RUN_SPEED * Scalar::ratio(i64::from(input.move_x), 127);
        let mut max = RUN_ACCEL_MAX;
        if !on_ground {
            max = max / fx(3);
        }
        let accel = ((target - v.x) * RUN_GAIN).clamp(-max, max);
        // A standing player leaves its body alone, so it (and the pile it
        // leans on) can fall asleep.
        let idle = target.is_zero() && v.x.abs() < RUN_DEADBAND;
        if !accel.is_zero() && !idle {
            let _ = world.apply_force_to_center(avatar, Vec2::new(accel * mass, fx(0)));
        }
        if jump_pressed && on_ground && p.jump_cooldown == 0 {
            let dv = JUMP_SPEED - v.y.max(fx(0));
            let _ = world.apply_linear_impulse(avatar, Vec2::new(fx(0), dv * mass), center);
            p.jump_cooldown = JUMP_COOLDOWN;
        }

        // Grab, carry, throw: a target joint (avatar → held body, no
        // collision between them) pulls the body toward the hold point.
        let dir = aim_dir(input.aim);
        let hold = center + dir * HOLD_DISTANCE;
        let release = !input.held(PlayerInput::GRAB) && !throw_pressed;
        if p.held.is_some() && (release || !p.grab.is_some_and(|j| world.contains_joint(j))) {
            drop_held(world, p);
        }
        if grab_pressed && p.held.is_none() {
            if let Some(h) = nearest_loose(world, hold) {
                let mass = world.mass_data(h).map(|m| m.mass).unwrap_or(Scalar::ONE);
                let def = JointDef {
                    collide_connected: false,
                    ..JointDef::new(
                        avatar,
                        h,
                        JointKind::Target(TargetJoint {
                            target: hold,
                            hertz: CARRY_HERTZ,
                            damping_ratio: Scalar::ONE,
                            max_force: mass * CARRY_ACCEL,
                        }),
                    )
                };
                if let Ok(j) = world.create_joint(&def) {
                    p.held = Some(h);
                    p.grab = Some(j);
                }
            }
        }
        if let (Some(h), Some(j)) = (p.held, p.grab) {
            if throw_pressed {
                drop_held(world, p);
                if let (Ok(hc), Ok(hm)) = (world.world_center(h), world.mass_data(h)) {
                    let _ = world.apply_linear_impulse(h, dir * (THROW_SPEED * hm.mass), hc);
                }
            } else {
                let _ = world.set_joint_target(j, hold);
            }
        }
    }
}

/// Lets go of the held body.
fn drop_held(world: &mut World, p: &mut SandboxPlayer) {
    if let Some(j) = p.grab.take() {
        let _ = world.destroy_joint(j);
    }
    p.held = None;
}

/// The dynamic non-avatar body whose centre is nearest `point` within reach
/// (ties go to the lower body index: `bodies()` runs in index order).
fn nearest_loose(world: &World, point: Vec2) -> Option<BodyId> {
    let reach2 = GRAB_REACH * GRAB_REACH;
    let mut best: Option<(Scalar, BodyId)> = None;
    for b in world.bodies() {
        if world.body_kind(b) != Ok(BodyKind::Dynamic)
            || world
                .user_data(b)
                .is_ok_and(|u| u & AVATAR_TAG == AVATAR_TAG)
        {
            continue;
        }
        let Ok(c) = world.world_center(b) else {
            continue;
        };
        let d2 = (c - point).length_squared();
        if d2 <= reach2 && best.is_none_or(|(bd, _)| d2 < bd) {
            best = Some((d2, b));
        }
    }
    best.map(|(_, b)| b)
}

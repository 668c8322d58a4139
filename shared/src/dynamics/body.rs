//! Rigid bodies: definitions, handles and per-body state.

use crate::math::{Rot, Scalar, Transform, Vec2};
use serde::{Deserialize, Serialize};

/// How a body moves.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub enum BodyKind {
    /// Never moves; infinite mass.
    #[default]
    Static,
    /// Moves with the velocity it is given; infinite mass; pushes dynamic bodies.
    Kinematic,
    /// Moves under forces and contacts.
    Dynamic,
}

/// Generational handle to a body. Stale handles are detected, never aliased.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash, Serialize, Deserialize)]
pub struct BodyId {
    /// Slot index.
    pub index: u32,
    /// Generation of the slot when the handle was made.
    pub generation: u32,
}

/// Generational handle to a shape.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash, Serialize, Deserialize)]
pub struct ShapeId {
    /// Slot index.
    pub index: u32,
    /// Generation of the slot when the handle was made.
    pub generation: u32,
}

/// Everything needed to create a body.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BodyDef {
    /// Static, kinematic or dynamic.
    pub kind: BodyKind,
    /// Origin in world space.
    pub position: Vec2,
    /// Orientation.
    pub rotation: Rot,
    /// Initial velocity of the origin.
    pub linear_velocity: Vec2,
    /// Initial angular velocity (rad/s).
    pub angular_velocity: Scalar,
    /// Linear damping (1/s).
    pub linear_damping: Scalar,
    /// Angular damping (1/s).
    pub angular_damping: Scalar,
    /// Multiplier on world gravity.
    pub gravity_scale: Scalar,
    /// Speed at or below which the body may fall asleep (m/s): the speed of its
    /// farthest point, `|v| + |ω|·r` (`r` its largest extent), and half the
    /// rate of its motion over a step (position correction included), as
    /// Box2D v3 measures it.
    pub sleep_threshold: Scalar,
    /// Whether the body may sleep.
    pub enable_sleep: bool,
    /// Whether the body starts awake.
    pub awake: bool,
    /// Prevents rotation.
    pub fixed_rotation: bool,
    /// Opaque id for the user.
    pub user_data: u64,
    /// Continuous collision against dynamic bodies too (dynamic bodies only;
    /// every fast dynamic body already gets it against static ones).
    pub bullet: bool,
    /// Lifts the cap on the angular speed of a quarter turn per step,
    /// 0.25π · `tick_rate` rad/s (Box2D v3's `allowFastRotation`), for round
    /// bodies such as wheels; the cap is then a quarter turn per substep
    /// (and never past 2¹⁴ rad/s, whatever the rates).
    pub allow_fast_rotation: bool,
}

impl Default for BodyDef {
    fn default() -> BodyDef {
        BodyDef {
            kind: BodyKind::Static,
            position: Vec2::ZERO,
            rotation: Rot::IDENTITY,
            linear_velocity: Vec2::ZERO,
            angular_velocity: Scalar::ZERO,
            linear_damping: Scalar::ZERO,
            angular_damping: Scalar::ZERO,
            gravity_scale: Scalar::ONE,
            sleep_threshold: Scalar::milli(50),
            enable_sleep: true,
            awake: true,
            fixed_rotation: false,
            user_data: 0,
            bullet: false,
            allow_fast_rotation: false,
        }
    }
}

impl BodyDef {
    /// A dynamic body at a position.
    pub fn dynamic(position: Vec2) -> BodyDef {
        BodyDef {
            kind: BodyKind::Dynamic,
            position,
            ..BodyDef::default()
        }
    }

    /// A static body at a position.
    pub fn fixed(position: Vec2) -> BodyDef {
        BodyDef {
            kind: BodyKind::Static,
            position,
            ..BodyDef::default()
        }
    }
}

/// Sentinel for "no sleeping island".
pub(crate) const NO_ISLAND: u32 = u32::MAX;
/// Sentinel for "no slot".
pub(crate) const NONE: u32 = u32::MAX;

/// A body slot: what the step changes. Part of the world state: serialized
/// and hashed together with its [`BodyConfig`] (see [`BodyOut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Body {
    pub(crate) generation: u32,
    pub(crate) alive: bool,
    pub(crate) kind: BodyKind,
    /// Transform of the body origin.
    pub(crate) transform: Transform,
    /// World centre of mass.
    pub(crate) center: Vec2,
    pub(crate) linear_velocity: Vec2,
    pub(crate) angular_velocity: Scalar,
    pub(crate) force: Vec2,
    pub(crate) torque: Scalar,
    pub(crate) sleep_time: Scalar,
    pub(crate) awake: bool,
    /// Id of the sleeping island this body belongs to, or `NO_ISLAND`.
    pub(crate) sleep_island: u32,
    /// Most recently attached shape slot (`NONE` when the body has none);
    /// the rest follow through `Shape::next`.
    pub(crate) first_shape: u32,
}

/// The settings of a body slot that only the API changes (mass, damping,
/// flags, ...). They live apart from [`Body`], in `WorldState::body_config`
/// (same slot index), shared copy-on-write between the world and its
/// snapshots: saving a snapshot does not copy them, and the per-step passes
/// over bodies read smaller records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyConfig {
    /// Centre of mass in the body frame.
    pub(crate) local_center: Vec2,
    pub(crate) mass: Scalar,
    pub(crate) inv_mass: Scalar,
    pub(crate) inertia: Scalar,
    pub(crate) inv_inertia: Scalar,
    pub(crate) linear_damping: Scalar,
    pub(crate) angular_damping: Scalar,
    pub(crate) gravity_scale: Scalar,
    pub(crate) sleep_threshold: Scalar,
    /// Farthest shape point from the centre of mass (for sleep and margins).
    pub(crate) max_extent: Scalar,
    /// Smallest shape extent (for the fast-body test of continuous collision).
    pub(crate) min_extent: Scalar,
    pub(crate) user_data: u64,
    pub(crate) enable_sleep: bool,
    pub(crate) fixed_rotation: bool,
    /// Continuous collision against dynamic bodies too.
    pub(crate) bullet: bool,
    /// The angular speed capped at a quarter turn per substep, not per step.
    pub(crate) allow_fast_rotation: bool,
}

impl BodyConfig {
    /// The settings of a free slot.
    pub(crate) const VACANT: BodyConfig = BodyConfig {
        local_center: Vec2::ZERO,
        mass: Scalar::ZERO,
        inv_mass: Scalar::ZERO,
        inertia: Scalar::ZERO,
        inv_inertia: Scalar::ZERO,
        linear_damping: Scalar::ZERO,
        angular_damping: Scalar::ZERO,
        gravity_scale: Scalar::ONE,
        sleep_threshold: Scalar::ZERO,
        max_extent: Scalar::ZERO,
        min_extent: Scalar::ZERO,
        user_data: 0,
        enable_sleep: true,
        fixed_rotation: false,
        bullet: false,
        allow_fast_rotation: false,
    };
}

impl Body {
    pub(crate) fn vacant() -> Body {
        Body {
            generation: 0,
            alive: false,
            kind: BodyKind::Static,
            transform: Transform::IDENTITY,
            center: Vec2::ZERO,
            linear_velocity: Vec2::ZERO,
            angular_velocity: Scalar::ZERO,
            force: Vec2::ZERO,
            torque: Scalar::ZERO,
            sleep_time: Scalar::ZERO,
            awake: false,
            sleep_island: NO_ISLAND,
            first_shape: NONE,
        }
    }

    /// Whether the body takes part in solving this step.
    #[inline]
    pub(crate) fn is_simulated(&self) -> bool {
        self.alive && self.awake && self.kind != BodyKind::Static
    }
}

/// π/4 in Q0.96, rounded: 0.785398163397448309615… · 2⁹⁶.
const QUARTER_PI_Q96: u128 = 62_225_653_328_057_771_307_630_486_156;

/// The bound on every body's angular speed whatever the rates: 2¹⁴ rad/s
/// (about 2 600 turns a second). Times the largest extent a body can have
/// (4·10⁴ m, the snapshot bound) it stays under 2³¹, so that the point
/// speeds `|ω|·r` the solver and the sleep test form cannot wrap; only a
/// fast-rotating body at thousands of substeps a second reaches it.
const SPIN_BOUND: Scalar = Scalar::from_int(1 << 14);

/// The largest angular speed of a body (rad/s), as Box2D v3 caps it
/// (`B2_MAX_ROTATION · inv_dt`, 0.25π): a quarter turn per step, so
/// 0.25π · `tick_rate` (15π ≈ 47.1 rad/s at 60 Hz); with
/// `allow_fast_rotation`, a quarter turn per substep (Box2D has no cap
/// then; the rotation's first-order integration means nothing past it).
/// At most [`SPIN_BOUND`]. Correctly rounded for every rate and substep
/// count a world allows (all 258 721 products `tick_rate · substeps`
/// checked against π/4 to 140 digits; π/4 in Q0.64 missed four of them by
/// a unit).
pub(crate) fn angular_speed_cap(tick_rate: u32, substeps: u32, fast: bool) -> Scalar {
    let turns = u128::from(tick_rate) * if fast { u128::from(substeps) } else { 1 };
    // At most 10 000 · 64 quarter turns a second: below 2⁹⁶ · 2²⁰.
    let q = (QUARTER_PI_Q96 * turns + (1 << 63)) >> 64;
    Scalar::from_bits(i64::try_from(q).unwrap_or(i64::MAX)).min(SPIN_BOUND)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cap is 0.25π per step (or substep), correctly rounded: at 60 Hz
    /// the bits of the constant 15π that every rate had before protocol 20;
    /// the others as π/4 to 140 digits gives them; and never past
    /// `SPIN_BOUND` (the four products of rate and substeps where π/4 in
    /// Q0.64 was a unit high are all past it).
    #[test]
    fn the_cap_is_a_quarter_turn_per_step_correctly_rounded() {
        assert_eq!(
            angular_speed_cap(60, 4, true),
            angular_speed_cap(240, 1, false)
        );
        for (rate, substeps, fast, bits) in [
            (60, 4, false, 202_395_565_568),
            (30, 4, false, 101_197_782_784),
            (120, 8, false, 404_791_131_136),
            (60, 4, true, 809_582_262_271),
            (9999, 1, false, 33_729_221_001_879),
            (10_000, 1, false, 33_732_594_261_305),
            (2000, 10, true, 67_465_188_522_610),
            (3167, 47, true, 1 << 46),
            (10_000, 64, true, 1 << 46),
        ] {
            assert_eq!(
                angular_speed_cap(rate, substeps, fast).to_bits(),
                bits,
                "rate {rate}, {substeps} substeps, fast {fast}"
            );
        }
    }
}

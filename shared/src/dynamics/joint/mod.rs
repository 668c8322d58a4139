//! Joints: constraints between two bodies, solved inside the soft-step solver.
//!
//! # Layout
//!
//! This file holds what every joint shares: the handle ([`JointId`]), the
//! definition ([`JointDef`], [`JointKind`]), the stored joint (part of the
//! world state, so of snapshots and the state hash), the constraint prepared
//! once per step, and the dispatch to the joint types. Each joint type lives
//! in its own file with its parameters and its prepare / warm start / solve
//! functions (after Box2D v3). The pair filter is in `filter.rs`; the world's
//! joint API is in `world/joint_api.rs`.
//!
//! # How joints are solved
//!
//! Exactly like contacts (see `solver`): once per step every joint with an
//! awake body is *prepared* (anchors relative to the centres of mass, the
//! effective masses, softness); each substep *warm starts* with the impulses
//! accumulated so far, *solves* with a soft position bias, and after the
//! positions are integrated *relaxes* without the bias; at the end of the step
//! the impulses are *stored* in the joint for the next step's warm start.
//! Position errors are read from the motion accumulated during the step (`dp`,
//! `dq`) without touching the transforms. Rigid joints are soft at the world's
//! joint stiffness (`WorldDef::joint_hertz`, `joint_damping_ratio`); limits
//! allow speculative approach like contacts do.
//!
//! Accumulated impulses are per substep, so a joint's reaction force is its
//! impulse times the substep rate.
//!
//! Each pass solves the joints in one order, a function of the joint list
//! and of which bodies are awake: the revolutes window by window and colour
//! by colour, in bundles solved lane by lane at once (see
//! `revolute::Revolutes`); then the revolutes that found no colour, then
//! every other type, one at a time in joint order; all after the contacts
//! (see `world::step::substeps`: the joints have the final word).
//!
//! Point constraints rebuild their 2×2 effective mass from the current
//! anchors in every iteration (as Box2D v3 does; a mass from the start of
//! the step over-corrects fast-spinning bodies and lets strained joint nets
//! diverge) and solve it with a determinant kept at double width (see
//! [`Sym22::solve`]), so heavy bodies, whose inverse masses have few
//! significant bits in Q32.32, are still solved accurately.

mod angle;
mod distance;
mod filter;
mod friction;
mod motor;
mod prismatic;
mod pulley;
mod revolute;
mod spring;
mod target;
mod weld;
mod wheel;

pub use angle::AngleJoint;
pub use distance::DistanceJoint;
pub(crate) use filter::JointFilter;
pub use friction::FrictionJoint;
pub use motor::MotorJoint;
pub use prismatic::PrismaticJoint;
pub use pulley::PulleyJoint;
pub use revolute::RevoluteJoint;
pub use target::TargetJoint;
pub use weld::WeldJoint;
pub use wheel::WheelJoint;

use super::body::{Body, BodyConfig, BodyId};
use super::solver::{self, BodyState, Softness, States};
use crate::math::{atan2, Rot, Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Generational handle to a joint. Stale handles are detected, never aliased.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash, Serialize, Deserialize)]
pub struct JointId {
    /// Slot index.
    pub index: u32,
    /// Generation of the slot when the handle was made.
    pub generation: u32,
}

/// A joint destroyed at the end of a step because its reaction exceeded its
/// break threshold (see [`JointDef::break_force`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BrokenJoint {
    /// The handle the joint had (now stale).
    pub id: JointId,
    /// The joint's user data.
    pub user_data: u64,
    /// Reaction force on body B in the step it broke (N).
    pub force: Vec2,
    /// Reaction torque in the step it broke (N·m).
    pub torque: Scalar,
}

/// The type of a joint and its type-specific parameters.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum JointKind {
    /// A hinge: the anchors coincide; optional angle limits, motor and spring.
    Revolute(RevoluteJoint),
    /// A slider along an axis fixed in body A, no relative rotation.
    Prismatic(PrismaticJoint),
    /// Glues the bodies together (rigid, or soft).
    Weld(WeldJoint),
    /// A wheel on a suspension: slides along an axis, rotates freely.
    Wheel(WheelJoint),
    /// Keeps the anchors at a distance (rod, spring, or rope).
    Distance(DistanceJoint),
    /// Two ropes over two fixed pulleys: `length_a + ratio · length_b` is constant.
    Pulley(PulleyJoint),
    /// Constrains the relative angle only.
    Angle(AngleJoint),
    /// Drives body B to a pose relative to body A with limited force and torque.
    Motor(MotorJoint),
    /// Pulls a point of body B softly toward a world target (mouse grab).
    Target(TargetJoint),
    /// Top-down friction: resists relative motion up to a force and torque.
    Friction(FrictionJoint),
}

impl JointKind {
    /// Short lowercase name of the type ("revolute", "wheel", …).
    pub fn name(&self) -> &'static str {
        match self {
            JointKind::Revolute(_) => "revolute",
            JointKind::Prismatic(_) => "prismatic",
            JointKind::Weld(_) => "weld",
            JointKind::Wheel(_) => "wheel",
            JointKind::Distance(_) => "distance",
            JointKind::Pulley(_) => "pulley",
            JointKind::Angle(_) => "angle",
            JointKind::Motor(_) => "motor",
            JointKind::Target(_) => "target",
            JointKind::Friction(_) => "friction",
        }
    }

    pub(crate) fn validate(&self) -> Result<(), &'static str> {
        match self {
            JointKind::Revolute(j) => j.validate(),
            JointKind::Prismatic(j) => j.validate(),
            JointKind::Weld(j) => j.validate(),
            JointKind::Wheel(j) => j.validate(),
            JointKind::Distance(j) => j.validate(),
            JointKind::Pulley(j) => j.validate(),
            JointKind::Angle(j) => j.validate(),
            JointKind::Motor(j) => j.validate(),
            JointKind::Target(j) => j.validate(),
            JointKind::Friction(j) => j.validate(),
        }
    }
}

/// Everything needed to create a joint.
///
/// Anchors are in each body's own frame, relative to the body origin. The
/// *joint angle* is the rotation of body B relative to body A minus
/// `reference_angle` (so it is zero when the bodies are in their reference
/// pose); it is measured in `[−π, π]`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct JointDef {
    /// First body.
    pub body_a: BodyId,
    /// Second body (must differ from `body_a`).
    pub body_b: BodyId,
    /// Anchor on body A, in its frame.
    pub local_anchor_a: Vec2,
    /// Anchor on body B, in its frame.
    pub local_anchor_b: Vec2,
    /// Rotation of B relative to A at which the joint angle is zero (rad).
    /// Used by the revolute, prismatic, weld, angle and motor joints.
    pub reference_angle: Scalar,
    /// Whether shapes of the two bodies collide with each other.
    pub collide_connected: bool,
    /// Reaction force (N) above which the joint breaks: it is destroyed at
    /// the end of the step and reported by [`crate::World::broken_joints`].
    /// `Scalar::MAX` (the default) never breaks.
    pub break_force: Scalar,
    /// Reaction torque (N·m) above which the joint breaks; `Scalar::MAX` never.
    pub break_torque: Scalar,
    /// Opaque value for the application.
    pub user_data: u64,
    /// Type and type-specific parameters.
    pub kind: JointKind,
}

impl JointDef {
    /// A joint of `kind` between two bodies, anchors at the body origins,
    /// everything else at its default.
    pub fn new(body_a: BodyId, body_b: BodyId, kind: JointKind) -> JointDef {
        JointDef {
            body_a,
            body_b,
            local_anchor_a: Vec2::ZERO,
            local_anchor_b: Vec2::ZERO,
            reference_angle: Scalar::ZERO,
            collide_connected: false,
            break_force: Scalar::MAX,
            break_torque: Scalar::MAX,
            user_data: 0,
            kind,
        }
    }
}

/// Impulses accumulated by a joint (per substep), kept for warm starting.
/// Each joint type uses the slots it needs (see its file).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub(crate) struct JointImpulses {
    pub linear: Vec2,
    pub angular: Scalar,
    pub axial: Scalar,
    pub spring: Scalar,
    pub motor: Scalar,
    pub lower: Scalar,
    pub upper: Scalar,
}

/// A joint slot. Part of the world state: serialized and hashed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub(crate) struct Joint {
    pub generation: u32,
    pub alive: bool,
    pub body_a: u32,
    pub body_b: u32,
    pub local_anchor_a: Vec2,
    pub local_anchor_b: Vec2,
    /// `reference_angle` as a rotation.
    pub reference: Rot,
    pub collide_connected: bool,
    pub break_force: Scalar,
    pub break_torque: Scalar,
    pub user_data: u64,
    pub kind: JointKind,
    pub impulses: JointImpulses,
}

impl Joint {
    pub(crate) fn vacant() -> Joint {
        Joint {
            generation: 0,
            alive: false,
            body_a: 0,
            body_b: 0,
            local_anchor_a: Vec2::ZERO,
            local_anchor_b: Vec2::ZERO,
            reference: Rot::IDENTITY,
            collide_connected: true,
            break_force: Scalar::MAX,
            break_torque: Scalar::MAX,
            user_data: 0,
            kind: JointKind::Friction(FrictionJoint::default()),
            impulses: JointImpulses::default(),
        }
    }
}

// ---------------------------------------------------------------------------
// Shared solver pieces.
// ---------------------------------------------------------------------------

/// Per-step solver constants shared by every joint.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JointContext {
    /// Substep length.
    pub h: Scalar,
    /// Substep rate.
    pub inv_h: Scalar,
    /// Softness of rigid joint constraints.
    pub soft: Softness,
}

/// Softness that applies the constraint in full (no spring).
pub(crate) const RIGID: Softness = Softness {
    bias_rate: Scalar::ZERO,
    mass_scale: Scalar::ONE,
    impulse_scale: Scalar::ZERO,
};

/// Geometry of a joint at the start of the step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    /// Anchor A relative to A's centre of mass, world axes.
    pub ra: Vec2,
    /// Anchor B relative to B's centre of mass, world axes.
    pub rb: Vec2,
    /// `centre B − centre A`.
    pub dc: Vec2,
    /// Joint angle at the start of the step, in `[−π, π]`.
    pub angle0: Scalar,
}

impl Frame {
    /// Current anchors (rotated by the motion so far this step).
    #[inline(always)]
    pub fn anchors(&self, sa: &BodyState, sb: &BodyState) -> (Vec2, Vec2) {
        (sa.dq.rotate(self.ra), sb.dq.rotate(self.rb))
    }

    /// Current `anchor B − anchor A` for the current anchors `ra`, `rb`.
    #[inline(always)]
    pub fn separation(&self, sa: &BodyState, sb: &BodyState, ra: Vec2, rb: Vec2) -> Vec2 {
        (sb.dp - sa.dp) + self.dc + (rb - ra)
    }

    /// Current joint angle: the angle at the start of the step plus the
    /// relative rotation since (so it is continuous within a step and may
    /// leave `[−π, π]` by that rotation).
    #[inline]
    pub fn angle(&self, sa: &BodyState, sb: &BodyState) -> Scalar {
        self.angle0 + rotation_angle(sa.dq.inv_mul(sb.dq))
    }
}

/// Angle of `b` relative to `a`, in `[−π, π]`.
#[inline]
pub(crate) fn relative_angle(a: Rot, b: Rot) -> Scalar {
    let r = a.inv_mul(b);
    atan2(r.s, r.c)
}

/// Angle of rotation `r`, in `[−π, π]`: a short series for the small
/// rotations bodies make within a step, `atan2` otherwise.
///
/// For `|sin| < 1/4` (angles below 0.2527 rad) the series
/// `asin s = s + s³/6 + 3s⁵/40 + 5s⁷/112` is within 1.3·10⁻⁷ rad.
#[inline]
pub(crate) fn rotation_angle(r: Rot) -> Scalar {
    let s = r.s;
    if r.c > Scalar::ZERO && s.abs() < Scalar::ratio(1, 4) {
        let s2 = s * s;
        // Horner: s·(1 + s²(1/6 + s²(3/40 + s²·5/112))).
        let p = Scalar::ratio(5, 112) * s2 + Scalar::ratio(3, 40);
        let p = p * s2 + Scalar::ratio(1, 6);
        s + s * (p * s2)
    } else {
        atan2(s, r.c)
    }
}

/// A symmetric 2×2 matrix `[[a11, a12], [a12, a22]]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sym22 {
    pub a11: Scalar,
    pub a12: Scalar,
    pub a22: Scalar,
}

impl Sym22 {
    /// The point-to-point effective mass matrix `K` for inverse masses and
    /// anchors (its inverse turns a velocity error into an impulse).
    pub fn point_mass(ma: Scalar, ia: Scalar, mb: Scalar, ib: Scalar, ra: Vec2, rb: Vec2) -> Sym22 {
        let m = ma + mb;
        Sym22 {
            a11: m + ia * ra.y * ra.y + ib * rb.y * rb.y,
            a12: -(ia * ra.y * ra.x) - ib * rb.y * rb.x,
            a22: m + ia * ra.x * ra.x + ib * rb.x * rb.x,
        }
    }

    /// The inverse (zero if singular), with one division; see [`Sym22::solve`]
    /// for the precision.
    #[inline]
    pub fn inverse(&self) -> Sym22 {
        match DetRecip::of(self) {
            Some(r) => Sym22 {
                a11: r.scale(self.a22),
                a12: r.scale(-self.a12),
                a22: r.scale(self.a11),
            },
            None => Sym22::default(),
        }
    }

    /// `M · v`.
    #[inline(always)]
    pub fn mul(&self, v: Vec2) -> Vec2 {
        Vec2::new(
            self.a11 * v.x + self.a12 * v.y,
            self.a12 * v.x + self.a22 * v.y,
        )
    }

    /// Solves `K x = b` for this matrix `K` (zero if singular), cheaply
    /// enough to run in every iteration.
    ///
    /// The determinant is formed exactly at double width (Q64.64) and its
    /// reciprocal taken once with 62 significant bits, so tiny entries (the
    /// inverse masses of heavy bodies) keep their precision; the adjugate
    /// products are ordinary Q32.32.
    #[inline]
    pub fn solve(&self, b: Vec2) -> Vec2 {
        match DetRecip::of(self) {
            Some(r) => {
                let n1 = self.a22 * b.x - self.a12 * b.y;
                let n2 = self.a11 * b.y - self.a12 * b.x;
                Vec2::new(r.scale(n1), r.scale(n2))
            }
            None => Vec2::ZERO,
        }
    }
}

/// The reciprocal of a [`Sym22`]'s determinant, `1/det = ±r · 2^(−shift)`,
/// formed from the exact double-width (Q64.64) determinant with 62
/// significant bits.
#[derive(Clone, Copy, Debug)]
struct DetRecip {
    /// `⌊2¹²⁴ / |den|⌋`, in `[2⁶², 2⁶³]`.
    r: u64,
    /// Whether the determinant is negative.
    negative: bool,
    shift: i32,
}

impl DetRecip {
    /// `None` when the matrix is singular.
    #[inline(always)]
    fn of(k: &Sym22) -> Option<DetRecip> {
        let (a, c, d) = (
            k.a11.to_bits() as i128,
            k.a12.to_bits() as i128,
            k.a22.to_bits() as i128,
        );
        // Exact: |a·d| and c² are at most 2¹²⁶.
        let det = a * d - c * c;
        if det == 0 {
            return None;
        }
        // det = den · 2^(s − 64) with |den| in [2⁶¹, 2⁶²] (2⁶² only when a
        // negative determinant rounds down onto it): den = det >> s, a
        // floor, so a negative one's magnitude is rounded up.
        let negative = det < 0;
        let mag = det.unsigned_abs();
        let s = 66 - mag.leading_zeros() as i32;
        let den = if s <= 0 {
            mag << -s
        } else if negative {
            ((mag - 1) >> s) + 1
        } else {
            mag >> s
        };
        // r = 2¹²⁴ / |den|, in [2⁶², 2⁶³]: 1/det = ±r · 2^(−60 − s). The
        // quotient fits 64 bits, so a 128-by-64-bit division suffices.
        let r = ((1u128 << 124) / den) as u64;
        Some(DetRecip {
            r,
            negative,
            shift: 60 + s,
        })
    }

    /// `n / det`, saturated to the Q32.32 range: `±|n|·r` shifted right by
    /// `shift` (a floor), or left.
    #[inline(always)]
    fn scale(&self, n: Scalar) -> Scalar {
        let n = n.to_bits();
        // |n · r| ≤ 2¹²⁶.
        let m = u128::from(n.unsigned_abs()) * u128::from(self.r);
        let negative = (n < 0) != self.negative;
        // The usual case, a determinant of 2 or more (shift 64 to 127):
        // the quotient's magnitude is below 2⁶², so nothing saturates, and
        // the floor of a negative quotient is its magnitude rounded up.
        if let Ok(t @ 0..=63) = u32::try_from(self.shift - 64) {
            let (hi, lo) = ((m >> 64) as u64, m as u64);
            let q = hi >> t;
            let q = if negative {
                let below = lo != 0 || hi & ((1u64 << t) - 1) != 0;
                -((q + u64::from(below)) as i64)
            } else {
                q as i64
            };
            return Scalar::from_bits(q);
        }
        let p = if negative { -(m as i128) } else { m as i128 };
        let q = if self.shift >= 0 {
            p >> self.shift
        } else {
            p << -self.shift
        };
        Scalar::from_bits(q.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
    }
}

/// `1 / k`, or zero when `k` is not positive.
#[inline]
pub(crate) fn inv_or_zero(k: Scalar) -> Scalar {
    if k > Scalar::ZERO {
        k.recip()
    } else {
        Scalar::ZERO
    }
}

/// Vector length that cannot overflow for large components (impulses of
/// heavy bodies): large vectors are scaled down before squaring.
#[inline]
pub(crate) fn length_safe(v: Vec2) -> Scalar {
    let m = v.x.abs().max(v.y.abs());
    if m < Scalar::from_int(1 << 14) {
        v.length()
    } else {
        Vec2::new(v.x.shr(16), v.y.shr(16)).length().shl(16)
    }
}

/// Scales `v` down to length `max` if it is longer.
#[inline]
pub(crate) fn clamp_length(v: Vec2, max: Scalar) -> Vec2 {
    let len = length_safe(v);
    if len > max && len > Scalar::ZERO {
        let k = max / len;
        Vec2::new(v.x * k, v.y * k)
    } else {
        v
    }
}

/// Applies a soft or rigid scalar constraint impulse; returns the impulse.
#[inline(always)]
pub(crate) fn soft_impulse(
    mass: Scalar,
    soft: &Softness,
    cdot: Scalar,
    bias: Scalar,
    accumulated: Scalar,
) -> Scalar {
    -(mass * soft.mass_scale * (cdot + bias)) - soft.impulse_scale * accumulated
}

/// A one-sided limit on a scalar coordinate `c` (positive = allowed side):
/// speculative when apart, soft when violated. Returns the new impulse to
/// apply (after clamping the accumulated impulse to push only).
#[inline(always)]
fn limit_impulse(
    c: Scalar,
    cdot: Scalar,
    mass: Scalar,
    accumulated: &mut Scalar,
    ctx: &JointContext,
    use_bias: bool,
) -> Scalar {
    // Rigid is `soft_impulse` with RIGID written out (the same bits: a
    // product with one is exact, and with zero is zero).
    let impulse = if c > Scalar::ZERO {
        -(mass * (cdot + c * ctx.inv_h))
    } else if use_bias {
        soft_impulse(mass, &ctx.soft, cdot, ctx.soft.bias_rate * c, *accumulated)
    } else {
        -(mass * cdot)
    };
    let new = (*accumulated + impulse).max(Scalar::ZERO);
    let applied = new - *accumulated;
    *accumulated = new;
    applied
}

/// Lower and upper limit on one coordinate `x` (an angle, a translation, a
/// length): two one-sided [`limit_impulse`]s, the upper one with the signs
/// flipped so that C > 0 while the limit holds. `cdot` is the coordinate's
/// rate from the current velocities; `apply` pushes an impulse along it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn limit_pair(
    sa: &mut BodyState,
    sb: &mut BodyState,
    (x, lower, upper): (Scalar, Scalar, Scalar),
    mass: Scalar,
    (lower_impulse, upper_impulse): (&mut Scalar, &mut Scalar),
    ctx: &JointContext,
    use_bias: bool,
    cdot: impl Fn(&BodyState, &BodyState) -> Scalar,
    apply: impl Fn(&mut BodyState, &mut BodyState, Scalar),
) {
    // A zero impulse (the usual case away from a limit) changes nothing.
    let i = limit_impulse(x - lower, cdot(sa, sb), mass, lower_impulse, ctx, use_bias);
    if !i.is_zero() {
        apply(sa, sb, i);
    }
    let i = limit_impulse(upper - x, -cdot(sa, sb), mass, upper_impulse, ctx, use_bias);
    if !i.is_zero() {
        apply(sa, sb, -i);
    }
}

/// Adds `impulse` to `accumulated`, clamped to `±max`; returns the change.
#[inline(always)]
pub(crate) fn clamp_accumulate(accumulated: &mut Scalar, impulse: Scalar, max: Scalar) -> Scalar {
    let new = (*accumulated + impulse).clamp(-max, max);
    let applied = new - *accumulated;
    *accumulated = new;
    applied
}

/// Applies an impulse along a line: `−p`, `−la` to A and `+p`, `+lb` to B
/// (`la`, `lb` are the angular parts).
#[inline(always)]
pub(crate) fn apply_general(
    sa: &mut BodyState,
    sb: &mut BodyState,
    p: Vec2,
    la: Scalar,
    lb: Scalar,
) {
    sa.v = sa.v.mul_sub(sa.inv_mass, p);
    sa.w -= sa.inv_inertia * la;
    sb.v = sb.v.mul_add(sb.inv_mass, p);
    sb.w += sb.inv_inertia * lb;
}

/// Applies an angular impulse: `−l` to A, `+l` to B.
#[inline(always)]
pub(crate) fn apply_angular(sa: &mut BodyState, sb: &mut BodyState, l: Scalar) {
    sa.w -= sa.inv_inertia * l;
    sb.w += sb.inv_inertia * l;
}

/// Applies a point impulse `p` at current anchors `ra`, `rb`.
#[inline(always)]
pub(crate) fn apply_point(sa: &mut BodyState, sb: &mut BodyState, ra: Vec2, rb: Vec2, p: Vec2) {
    apply_general(sa, sb, p, ra.cross(p), rb.cross(p));
}

// ---------------------------------------------------------------------------
// Prepared constraints and dispatch.
// ---------------------------------------------------------------------------

/// Type-specific data prepared once per step.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Prepared {
    Prismatic(prismatic::Prepared),
    Weld(weld::Prepared),
    Wheel(wheel::Prepared),
    Distance(distance::Prepared),
    Pulley(pulley::Prepared),
    Angle(angle::Prepared),
    Motor(motor::Prepared),
    Target(target::Prepared),
    Friction(friction::Prepared),
}

/// A joint prepared for solving this step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JointConstraint {
    /// Index of the joint in the world's joint list.
    pub joint: u32,
    /// Solver-state slots (0 = static dummy).
    pub a: u32,
    pub b: u32,
    pub frame: Frame,
    pub imp: JointImpulses,
    pub data: Prepared,
}

/// Inverse masses of the two bodies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Masses {
    pub ma: Scalar,
    pub ia: Scalar,
    pub mb: Scalar,
    pub ib: Scalar,
}

/// Builds the frame of joint `j` from its bodies' poses.
pub(crate) fn frame_of(j: &Joint, ba: &Body, bb: &Body, config: &[BodyConfig]) -> Frame {
    Frame {
        angle0: relative_angle(ba.transform.q.mul_rot(j.reference), bb.transform.q),
        ..anchor_frame(j, ba, bb, config)
    }
}

/// The frame of joint `j` without its angle (left zero), for joints that
/// never read it.
fn anchor_frame(j: &Joint, ba: &Body, bb: &Body, config: &[BodyConfig]) -> Frame {
    Frame {
        ra: ba
            .transform
            .q
            .rotate(j.local_anchor_a - config[j.body_a as usize].local_center),
        rb: bb
            .transform
            .q
            .rotate(j.local_anchor_b - config[j.body_b as usize].local_center),
        dc: bb.center - ba.center,
        angle0: Scalar::ZERO,
    }
}

/// The joints prepared for a step: revolutes in their own compact list
/// (solved first), every other type in a general one. Scratch, not state.
#[derive(Clone, Debug, Default)]
pub(crate) struct JointSolver {
    revolutes: revolute::Revolutes,
    others: Vec<JointConstraint>,
    /// Whether any prepared joint has a break threshold.
    breakable: bool,
}

impl JointSolver {
    /// Whether no joint was prepared this step (nothing for the passes).
    pub(crate) fn is_empty(&self) -> bool {
        self.revolutes.is_empty() && self.others.is_empty()
    }

    /// Appends the solver slots of the bodies of every joint prepared
    /// (the static dummy's too), each once or more.
    pub(crate) fn slots(&self, out: &mut Vec<u32>) {
        self.revolutes.slots(out);
        for c in &self.others {
            out.extend([c.a, c.b]);
        }
    }
}

/// Prepares every joint that has a body being solved this step, and
/// appends the solver slots of its bodies to `links` (in joint order).
pub(crate) fn prepare(
    (joints, bodies, config): (&[Joint], &[Body], &[BodyConfig]),
    slot_of: &[u32],
    states: &States,
    ctx: &JointContext,
    out: &mut JointSolver,
    links: &mut Vec<(u32, u32)>,
) {
    out.revolutes.begin(states.len());
    out.others.clear();
    out.breakable = false;
    for (ji, j) in joints.iter().enumerate() {
        if !j.alive {
            continue;
        }
        let (a, b) = (slot_of[j.body_a as usize], slot_of[j.body_b as usize]);
        if a == 0 && b == 0 {
            continue;
        }
        links.push((a, b));
        prepare_one((ji as u32, j), (a, b), (bodies, config), states, ctx, out);
    }
    out.revolutes.finish();
}

/// Every joint [`prepare`] prepares, in joint order: its index, the
/// joint, and the step's solver slots of its bodies.
pub(crate) fn solved<'a>(
    joints: &'a [Joint],
    slot_of: &'a [u32],
) -> impl Iterator<Item = (u32, &'a Joint, (u32, u32))> + 'a {
    joints.iter().enumerate().filter_map(move |(ji, j)| {
        let (a, b) = (slot_of[j.body_a as usize], slot_of[j.body_b as usize]);
        (j.alive && (a != 0 || b != 0)).then_some((ji as u32, j, (a, b)))
    })
}

/// The window the whole list's colouring gives each revolute [`prepare`]
/// prepares, in order (for [`prepare_group`]); `masks` is scratch.
pub(crate) fn revolute_windows(
    joints: &[Joint],
    slot_of: &[u32],
    states: &States,
    masks: &mut Vec<(u32, u64)>,
    out: &mut Vec<u32>,
) {
    let moves = |s: u32| {
        let m = states.get(s);
        !(m.inv_mass.is_zero() && m.inv_inertia.is_zero())
    };
    let revolutes = solved(joints, slot_of)
        .filter(|(_, j, _)| matches!(j.kind, JointKind::Revolute(_)))
        .map(|(_, _, (a, b))| ((a, b), (moves(a), moves(b))));
    revolute::windows(revolutes, masks, states.len(), out);
}

/// Prepares a group's joints (see `world/step/groups.rs`): those [`prepare`]
/// prepares whose solved body is in the group (`mine`, by its step slot;
/// `slot_of` the step's slots, `local_of` the group's, `states` the
/// group's), each revolute in the window the whole list's colouring gives
/// it (`windows`, from [`revolute_windows`]). The group's joints are solved
/// in the order the whole list solves them, so with the same bits.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare_group(
    (joints, bodies, config): (&[Joint], &[Body], &[BodyConfig]),
    (slot_of, local_of): (&[u32], &[u32]),
    mine: impl Fn(u32) -> bool,
    windows: &[u32],
    states: &States,
    ctx: &JointContext,
    out: &mut JointSolver,
) {
    out.revolutes.begin(states.len());
    out.revolutes.begin_group();
    out.others.clear();
    out.breakable = false;
    let mut revolutes = windows.iter();
    for (ji, j, (a, b)) in solved(joints, slot_of) {
        let window = match j.kind {
            JointKind::Revolute(_) => {
                let w = revolutes.next().copied();
                debug_assert!(w.is_some(), "a window for each revolute");
                w
            }
            _ => None,
        };
        if !mine(if a != 0 { a } else { b }) {
            continue;
        }
        if let Some(w) = window {
            out.revolutes.next_window(w);
        }
        let local = (local_of[j.body_a as usize], local_of[j.body_b as usize]);
        prepare_one((ji, j), local, (bodies, config), states, ctx, out);
    }
    debug_assert!(revolutes.next().is_none(), "a revolute for each window");
    out.revolutes.finish();
}

/// Prepares joint `ji` between solver slots `a` and `b` into `out`.
#[inline(always)]
fn prepare_one(
    (ji, j): (u32, &Joint),
    (a, b): (u32, u32),
    (bodies, config): (&[Body], &[BodyConfig]),
    states: &States,
    ctx: &JointContext,
    out: &mut JointSolver,
) {
    let (ba, bb) = (&bodies[j.body_a as usize], &bodies[j.body_b as usize]);
    let (sa, sb) = (&states.get(a), &states.get(b));
    let m = Masses {
        ma: sa.inv_mass,
        ia: sa.inv_inertia,
        mb: sb.inv_mass,
        ib: sb.inv_inertia,
    };
    out.breakable |= j.break_force != Scalar::MAX || j.break_torque != Scalar::MAX;
    // A plain hinge never reads the joint angle: skip its atan2.
    let f = match &j.kind {
        JointKind::Revolute(p) if !p.uses_angle() => anchor_frame(j, ba, bb, config),
        _ => frame_of(j, ba, bb, config),
    };
    let data = match &j.kind {
        JointKind::Revolute(p) => {
            out.revolutes.push(ji, j, p, &f, a, b, &m, ctx);
            return;
        }
        JointKind::Prismatic(p) => {
            Prepared::Prismatic(prismatic::prepare(p, &f, &m, ctx, ba.transform.q))
        }
        JointKind::Weld(p) => Prepared::Weld(weld::prepare(p, &m, ctx)),
        JointKind::Wheel(p) => Prepared::Wheel(wheel::prepare(p, &f, &m, ctx, ba.transform.q)),
        JointKind::Distance(p) => Prepared::Distance(distance::prepare(p, &f, &m, ctx)),
        JointKind::Pulley(p) => Prepared::Pulley(pulley::prepare(p, &f, &m, ba.center, bb.center)),
        JointKind::Angle(p) => Prepared::Angle(angle::prepare(p, &m, ctx)),
        JointKind::Motor(p) => Prepared::Motor(motor::prepare(p, &m, ctx)),
        JointKind::Target(p) => Prepared::Target(target::prepare(p, &f, &m, ctx, bb.center)),
        JointKind::Friction(p) => Prepared::Friction(friction::prepare(p, &m, ctx)),
    };
    out.others.push(JointConstraint {
        joint: ji,
        a,
        b,
        frame: f,
        imp: j.impulses,
        data,
    });
}

/// Warm start of the joints whose impulse is a point impulse plus an
/// angular one (weld, motor, friction).
fn warm_start_point_angular(
    f: &Frame,
    imp: &JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
) {
    let (ra, rb) = f.anchors(sa, sb);
    apply_point(sa, sb, ra, rb, imp.linear);
    apply_angular(sa, sb, imp.angular);
}

/// Applies the accumulated impulses at the start of a substep.
pub(crate) fn warm_start(js: &mut JointSolver, states: &mut States) {
    js.revolutes.warm_start(states);
    for c in js.others.iter_mut() {
        let (mut sa, mut sb) = solver::two(states, c.a, c.b);
        let (f, imp) = (&c.frame, &c.imp);
        match &mut c.data {
            Prepared::Prismatic(p) => prismatic::warm_start(f, p, imp, &mut sa, &mut sb),
            Prepared::Weld(_) => warm_start_point_angular(f, imp, &mut sa, &mut sb),
            Prepared::Wheel(p) => wheel::warm_start(f, p, imp, &mut sa, &mut sb),
            Prepared::Distance(_) => distance::warm_start(f, imp, &mut sa, &mut sb),
            Prepared::Pulley(p) => pulley::warm_start(f, p, imp, &mut sa, &mut sb),
            Prepared::Angle(_) => angle::warm_start(imp, &mut sa, &mut sb),
            Prepared::Motor(_) => warm_start_point_angular(f, imp, &mut sa, &mut sb),
            Prepared::Target(p) => target::warm_start(p, imp, &mut sb),
            Prepared::Friction(_) => warm_start_point_angular(f, imp, &mut sa, &mut sb),
        }
        solver::store(states, c.a, c.b, &sa, &sb);
    }
}

/// One iteration over all joints; `use_bias` corrects position errors.
pub(crate) fn solve(js: &mut JointSolver, states: &mut States, ctx: &JointContext, use_bias: bool) {
    js.revolutes.solve(states, ctx, use_bias);
    for c in js.others.iter_mut() {
        let (mut sa, mut sb) = solver::two(states, c.a, c.b);
        let (f, imp) = (&c.frame, &mut c.imp);
        let (a, b) = (&mut sa, &mut sb);
        match &c.data {
            Prepared::Prismatic(p) => prismatic::solve(f, p, imp, a, b, ctx, use_bias),
            Prepared::Weld(p) => weld::solve(f, p, imp, a, b, ctx, use_bias),
            Prepared::Wheel(p) => wheel::solve(f, p, imp, a, b, ctx, use_bias),
            Prepared::Distance(p) => distance::solve(f, p, imp, a, b, ctx, use_bias),
            Prepared::Pulley(p) => pulley::solve(f, p, imp, a, b, ctx, use_bias),
            Prepared::Angle(p) => angle::solve(f, p, imp, a, b, ctx, use_bias),
            Prepared::Motor(p) => motor::solve(f, p, imp, a, b, ctx, use_bias),
            Prepared::Target(p) => target::solve(p, imp, b),
            Prepared::Friction(p) => friction::solve(f, p, imp, a, b),
        }
        solver::store(states, c.a, c.b, &sa, &sb);
    }
}

/// Writes the accumulated impulses back into the joints.
pub(crate) fn store_impulses(js: &JointSolver, joints: &mut [Joint]) {
    js.revolutes.store(joints);
    for c in &js.others {
        joints[c.joint as usize].impulses = c.imp;
    }
}

/// Reaction force on body B (N) and torque (N·m) of a joint, from its
/// stored impulses, for bodies `ba`, `bb` at their current poses.
pub(crate) fn reaction(
    j: &Joint,
    ba: &Body,
    bb: &Body,
    config: &[BodyConfig],
    inv_h: Scalar,
) -> (Vec2, Scalar) {
    let i = &j.impulses;
    let (p, l) = match &j.kind {
        JointKind::Revolute(_) => (i.linear, i.spring + i.motor + i.lower - i.upper),
        JointKind::Prismatic(p) => {
            let axis = ba.transform.q.rotate(p.local_axis_a.normalize());
            let axial = i.spring + i.motor + i.lower - i.upper;
            (axis * axial + axis.left_perp() * i.axial, i.angular)
        }
        JointKind::Weld(_) | JointKind::Motor(_) | JointKind::Target(_) => (i.linear, i.angular),
        JointKind::Friction(_) => (i.linear, i.angular),
        JointKind::Wheel(p) => {
            let axis = ba.transform.q.rotate(p.local_axis_a.normalize());
            let axial = i.spring + i.lower - i.upper;
            (axis * axial + axis.left_perp() * i.axial, i.motor)
        }
        JointKind::Distance(_) => {
            let f = frame_of(j, ba, bb, config);
            let axis = (f.dc + f.rb - f.ra).normalize();
            (axis * (i.axial + i.lower - i.upper + i.motor), Scalar::ZERO)
        }
        JointKind::Pulley(p) => {
            let pb = bb.transform.apply(j.local_anchor_b);
            let ub = (pb - p.ground_anchor_b).normalize();
            (ub * (-(p.ratio * i.axial)), Scalar::ZERO)
        }
        JointKind::Angle(_) => (Vec2::ZERO, i.angular + i.lower - i.upper),
    };
    (Vec2::new(p.x * inv_h, p.y * inv_h), l * inv_h)
}

/// Joints solved this step whose reaction exceeds their break force or
/// torque, in slot order.
pub(crate) fn find_broken(
    js: &JointSolver,
    joints: &[Joint],
    bodies: &[Body],
    config: &[BodyConfig],
    inv_h: Scalar,
    out: &mut Vec<u32>,
) {
    if !js.breakable {
        return;
    }
    let start = out.len();
    let solved = js
        .revolutes
        .joints()
        .chain(js.others.iter().map(|c| c.joint));
    for ji in solved {
        let j = &joints[ji as usize];
        if j.break_force == Scalar::MAX && j.break_torque == Scalar::MAX {
            continue;
        }
        let (ba, bb) = (&bodies[j.body_a as usize], &bodies[j.body_b as usize]);
        let (force, torque) = reaction(j, ba, bb, config, inv_h);
        if length_safe(force) > j.break_force || torque.abs() > j.break_torque {
            out.push(ji);
        }
    }
    out[start..].sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fx;

    /// The determinant's reciprocal and the scaling as first written, at
    /// double width throughout: the definition [`DetRecip`] keeps, bit for
    /// bit.
    fn reference(k: &Sym22, n: Scalar) -> Option<(u64, bool, i32, Scalar)> {
        let (a, c, d) = (
            k.a11.to_bits() as i128,
            k.a12.to_bits() as i128,
            k.a22.to_bits() as i128,
        );
        let det = a * d - c * c;
        if det == 0 {
            return None;
        }
        let s = (128 - det.unsigned_abs().leading_zeros()) as i32 - 62;
        let den = if s >= 0 { det >> s } else { det << -s };
        let r = ((1u128 << 124) / den.unsigned_abs()) as u64;
        let (negative, shift) = (den < 0, 60 + s);
        let n = n.to_bits();
        let m = (n.unsigned_abs() as u128 * r as u128) as i128;
        let p = if (n < 0) != negative { -m } else { m };
        let q = if shift >= 0 { p >> shift } else { p << -shift };
        let q = q.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        Some((r, negative, shift, Scalar::from_bits(q)))
    }

    /// Every determinant size (tiny to the largest), both signs, exact
    /// powers of two, and numerators from zero to the extremes: the same
    /// reciprocal and the same quotient as the reference.
    #[test]
    fn det_recip_matches_its_definition() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut entries: Vec<i64> = vec![1, -1, 2, 3, 1 << 32, -(1 << 32), i64::MAX, i64::MIN + 1];
        for e in 0..63 {
            entries.push(1 << e);
            entries.push(-(1 << e));
            entries.push((1 << e) + 1);
            entries.push((1i64 << e).wrapping_sub(1));
        }
        let extremes = [
            0,
            1,
            -1,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            1 << 32,
            -(1 << 32),
        ];
        let (mut fast, mut total) = (0, 0);
        for case in 0..200_000 {
            let pick = |r: u64| {
                let e = entries[(r % entries.len() as u64) as usize];
                // Half the time an edge value, else a random value of a
                // random size.
                if r & 0x100 == 0 {
                    e
                } else {
                    ((r >> 9) as i64) >> (r % 61)
                }
            };
            let k = Sym22 {
                a11: Scalar::from_bits(pick(next())),
                a12: Scalar::from_bits(pick(next())),
                a22: Scalar::from_bits(pick(next())),
            };
            let n = if case % 7 == 0 {
                extremes[case % extremes.len()]
            } else {
                (next() as i64) >> (next() % 64)
            };
            let n = Scalar::from_bits(n);
            let got = DetRecip::of(&k).map(|d| (d.r, d.negative, d.shift, d.scale(n)));
            assert_eq!(got, reference(&k, n), "{k:?} scaling {n:?}");
            if let Some((_, _, shift, _)) = got {
                total += 1;
                fast += usize::from((64..128).contains(&shift));
            }
        }
        // Both paths of `scale` were taken often.
        assert!(
            fast > total / 10 && fast < total * 9 / 10,
            "{fast} of {total}"
        );
    }

    #[test]
    fn solve_keeps_precision_for_tiny_matrices() {
        // Inverse masses of a 4000 kg body: 2.5e-4 has only ~20 significant
        // bits in Q32.32 and its square would have none.
        let k = Sym22 {
            a11: Scalar::ratio(1, 4000),
            a12: Scalar::ZERO,
            a22: Scalar::ratio(1, 4000),
        };
        let x = k.solve(Vec2::new(fx(1), fx(-2)));
        let want = 1.0 / Scalar::ratio(1, 4000).to_f64();
        assert!((x.x.to_f64() - want).abs() < 1e-3, "{x:?}");
        assert!((x.y.to_f64() + 2.0 * want).abs() < 2e-3, "{x:?}");
    }

    #[test]
    fn solve_inverts_the_matrix() {
        let cases = [
            Sym22 {
                a11: fx(3),
                a12: Scalar::HALF,
                a22: fx(2),
            },
            Sym22 {
                a11: Scalar::ratio(1, 4000),
                a12: Scalar::ratio(-1, 100_000),
                a22: Scalar::ratio(3, 4000),
            },
            Sym22 {
                a11: fx(5000),
                a12: fx(-1000),
                a22: fx(700),
            },
        ];
        for k in cases {
            for b in [
                Vec2::new(fx(1), fx(-2)),
                Vec2::new(Scalar::ratio(1, 1000), fx(30)),
            ] {
                let x = k.solve(b);
                let back = k.mul(x);
                let err = (back - b).length().to_f64();
                assert!(
                    err < 1e-6 * (1.0 + b.length().to_f64()),
                    "{k:?} {b:?} -> {x:?} ({err})"
                );
            }
        }
        assert_eq!(Sym22::default().solve(Vec2::from_ints(1, 1)), Vec2::ZERO);
    }

    #[test]
    fn rotation_angle_matches_atan2() {
        for k in -400..=400 {
            let a = Scalar::ratio(k, 100);
            let r = Rot::from_angle(a);
            let fast = rotation_angle(r).to_f64();
            let exact = atan2(r.s, r.c).to_f64();
            assert!((fast - exact).abs() < 2e-7, "{k}: {fast} vs {exact}");
        }
    }

    #[test]
    fn safe_length_handles_huge_vectors() {
        let v = Vec2::new(fx(3_000_000), fx(4_000_000));
        let len = length_safe(v).to_f64();
        assert!((len - 5_000_000.0).abs() < 1.0, "{len}");
        assert_eq!(length_safe(Vec2::from_ints(3, 4)), fx(5));
    }
}

//! Wheel joint (the line constraint of seed 004): anchor B stays on a line
//! through anchor A along an axis fixed in body A, and B rotates freely.
//! Along the axis: a suspension spring and optional limits; about the
//! anchor: an optional motor that drives the wheel's spin.
//!
//! Impulse slots: `axial` (perpendicular), `spring`, `lower`, `upper` (along
//! the axis), `motor` (angular).

use super::spring::{validate_translation, Spring};
use super::{
    apply_angular, apply_general, clamp_accumulate, inv_or_zero, limit_pair, soft_impulse, Frame,
    JointContext, JointImpulses, Masses,
};
use crate::dynamics::solver::BodyState;
use crate::math::{Rot, Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Parameters of a wheel joint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct WheelJoint {
    /// Suspension axis in body A's frame (normalised when solved).
    pub local_axis_a: Vec2,
    /// Suspension spring along the axis.
    pub enable_spring: bool,
    /// Suspension stiffness (Hz); zero disables the spring.
    pub hertz: Scalar,
    /// Suspension damping ratio.
    pub damping_ratio: Scalar,
    /// Keep the translation along the axis within the limits.
    pub enable_limit: bool,
    /// Lower translation limit (m).
    pub lower_translation: Scalar,
    /// Upper translation limit (m).
    pub upper_translation: Scalar,
    /// Drive the wheel's spin relative to body A toward `motor_speed`.
    pub enable_motor: bool,
    /// Target spin (rad/s, counter-clockwise).
    pub motor_speed: Scalar,
    /// Largest motor torque (N·m).
    pub max_motor_torque: Scalar,
}

impl Default for WheelJoint {
    fn default() -> WheelJoint {
        WheelJoint {
            local_axis_a: Vec2::new(Scalar::ZERO, Scalar::ONE),
            enable_spring: true,
            hertz: Scalar::ONE,
            damping_ratio: Scalar::from_bits(3_006_477_107), // 0.7
            enable_limit: false,
            lower_translation: Scalar::ZERO,
            upper_translation: Scalar::ZERO,
            enable_motor: false,
            motor_speed: Scalar::ZERO,
            max_motor_torque: Scalar::ZERO,
        }
    }
}

impl WheelJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        validate_translation(
            self.local_axis_a,
            (self.lower_translation, self.upper_translation),
            self.max_motor_torque,
            "max motor torque must not be negative",
            (self.hertz, self.damping_ratio),
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    axis: Vec2,
    axial_mass: Scalar,
    perp_mass: Scalar,
    motor_mass: Scalar,
    spring: Spring,
    max_motor_impulse: Scalar,
    lower: Scalar,
    upper: Scalar,
    motor_speed: Scalar,
    enable_limit: bool,
    enable_motor: bool,
}

pub(super) fn prepare(
    p: &WheelJoint,
    f: &Frame,
    m: &Masses,
    ctx: &JointContext,
    qa: Rot,
) -> Prepared {
    let axis = qa.rotate(p.local_axis_a.normalize());
    let d = f.dc + f.rb - f.ra;
    let a1 = (d + f.ra).cross(axis);
    let a2 = f.rb.cross(axis);
    let perp = axis.left_perp();
    let s1 = (d + f.ra).cross(perp);
    let s2 = f.rb.cross(perp);
    let base = m.ma + m.mb;
    let axial_mass = inv_or_zero(base + m.ia * a1 * a1 + m.ib * a2 * a2);
    let (hertz, zeta) = (p.hertz, p.damping_ratio);
    Prepared {
        axis,
        axial_mass,
        perp_mass: inv_or_zero(base + m.ia * s1 * s1 + m.ib * s2 * s2),
        motor_mass: inv_or_zero(m.ia + m.ib),
        spring: Spring::new(p.enable_spring, hertz, zeta, axial_mass, ctx.h),
        max_motor_impulse: ctx.h * p.max_motor_torque,
        lower: p.lower_translation,
        upper: p.upper_translation,
        motor_speed: p.motor_speed,
        enable_limit: p.enable_limit,
        enable_motor: p.enable_motor,
    }
}

struct Geometry {
    axis: Vec2,
    perp: Vec2,
    d: Vec2,
    a1: Scalar,
    a2: Scalar,
    s1: Scalar,
    s2: Scalar,
}

#[inline(always)]
fn geometry(f: &Frame, p: &Prepared, sa: &BodyState, sb: &BodyState) -> Geometry {
    let (ra, rb) = f.anchors(sa, sb);
    let d = f.separation(sa, sb, ra, rb);
    let axis = sa.dq.rotate(p.axis);
    let perp = axis.left_perp();
    Geometry {
        axis,
        perp,
        d,
        a1: (d + ra).cross(axis),
        a2: rb.cross(axis),
        s1: (d + ra).cross(perp),
        s2: rb.cross(perp),
    }
}

pub(super) fn warm_start(
    f: &Frame,
    p: &Prepared,
    imp: &JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
) {
    let g = geometry(f, p, sa, sb);
    let axial = imp.spring + imp.lower - imp.upper;
    let pv = g.axis * axial + g.perp * imp.axial;
    let la = axial * g.a1 + imp.axial * g.s1 + imp.motor;
    let lb = axial * g.a2 + imp.axial * g.s2 + imp.motor;
    apply_general(sa, sb, pv, la, lb);
}

pub(super) fn solve(
    f: &Frame,
    p: &Prepared,
    imp: &mut JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
    ctx: &JointContext,
    use_bias: bool,
) {
    let g = geometry(f, p, sa, sb);
    let translation = g.axis.dot(g.d);
    let axial_cdot =
        |sa: &BodyState, sb: &BodyState| g.axis.dot(sb.v - sa.v) + g.a2 * sb.w - g.a1 * sa.w;
    let push = |sa: &mut BodyState, sb: &mut BodyState, i: Scalar| {
        apply_general(sa, sb, g.axis * i, i * g.a1, i * g.a2);
    };

    if p.enable_motor && !(sa.inv_inertia + sb.inv_inertia).is_zero() {
        let cdot = sb.w - sa.w - p.motor_speed;
        let i = clamp_accumulate(&mut imp.motor, -(p.motor_mass * cdot), p.max_motor_impulse);
        apply_angular(sa, sb, i);
    }
    if p.spring.enabled {
        // The spring rests at zero translation (anchors on top of each other).
        let i = p
            .spring
            .impulse(translation, axial_cdot(sa, sb), &mut imp.spring);
        push(sa, sb, i);
    }
    if p.enable_limit {
        limit_pair(
            sa,
            sb,
            (translation, p.lower, p.upper),
            p.axial_mass,
            (&mut imp.lower, &mut imp.upper),
            ctx,
            use_bias,
            axial_cdot,
            push,
        );
    }

    // Point on line.
    let cdot = g.perp.dot(sb.v - sa.v) + g.s2 * sb.w - g.s1 * sa.w;
    let i = if use_bias {
        let bias = ctx.soft.bias_rate * g.perp.dot(g.d);
        soft_impulse(p.perp_mass, &ctx.soft, cdot, bias, imp.axial)
    } else {
        -(p.perp_mass * cdot)
    };
    imp.axial += i;
    apply_general(sa, sb, g.perp * i, i * g.s1, i * g.s2);
}

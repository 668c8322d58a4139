//! Prismatic joint: body B slides along an axis fixed in body A and does not
//! rotate relative to it; optional translation limits, motor and spring.
//!
//! The perpendicular and angular constraints are solved together as a 2×2
//! block (the line constraint of seed 004 plus the angle constraint).
//!
//! Impulse slots: `axial` (perpendicular), `angular`, and along the axis
//! `spring`, `motor`, `lower`, `upper`.

use super::spring::{validate_translation, Spring};
use super::{
    apply_general, clamp_accumulate, inv_or_zero, limit_pair, Frame, JointContext, JointImpulses,
    Masses, Sym22,
};
use crate::dynamics::solver::BodyState;
use crate::math::{Rot, Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Parameters of a prismatic joint (a slider).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PrismaticJoint {
    /// Slide axis in body A's frame (normalised when the joint is solved).
    pub local_axis_a: Vec2,
    /// Keep the translation within `[lower_translation, upper_translation]`.
    pub enable_limit: bool,
    /// Lower translation limit (m), along the axis from anchor A to anchor B.
    pub lower_translation: Scalar,
    /// Upper translation limit (m).
    pub upper_translation: Scalar,
    /// Drive the sliding speed toward `motor_speed`.
    pub enable_motor: bool,
    /// Target sliding speed (m/s).
    pub motor_speed: Scalar,
    /// Largest force the motor applies (N).
    pub max_motor_force: Scalar,
    /// Pull the translation toward `target_translation` with a spring.
    pub enable_spring: bool,
    /// Spring stiffness (Hz); zero disables the spring.
    pub hertz: Scalar,
    /// Spring damping ratio.
    pub damping_ratio: Scalar,
    /// Translation the spring pulls toward (m).
    pub target_translation: Scalar,
}

impl Default for PrismaticJoint {
    fn default() -> PrismaticJoint {
        PrismaticJoint {
            local_axis_a: Vec2::new(Scalar::ONE, Scalar::ZERO),
            enable_limit: false,
            lower_translation: Scalar::ZERO,
            upper_translation: Scalar::ZERO,
            enable_motor: false,
            motor_speed: Scalar::ZERO,
            max_motor_force: Scalar::ZERO,
            enable_spring: false,
            hertz: Scalar::ZERO,
            damping_ratio: Scalar::ZERO,
            target_translation: Scalar::ZERO,
        }
    }
}

impl PrismaticJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        validate_translation(
            self.local_axis_a,
            (self.lower_translation, self.upper_translation),
            self.max_motor_force,
            "max motor force must not be negative",
            (self.hertz, self.damping_ratio),
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    /// World axis at the start of the step.
    axis: Vec2,
    axial_mass: Scalar,
    spring: Spring,
    max_motor_impulse: Scalar,
    lower: Scalar,
    upper: Scalar,
    motor_speed: Scalar,
    target: Scalar,
    enable_limit: bool,
    enable_motor: bool,
}

pub(super) fn prepare(
    p: &PrismaticJoint,
    f: &Frame,
    m: &Masses,
    ctx: &JointContext,
    qa: Rot,
) -> Prepared {
    let axis = qa.rotate(p.local_axis_a.normalize());
    let d = f.dc + f.rb - f.ra;
    let a1 = (d + f.ra).cross(axis);
    let a2 = f.rb.cross(axis);
    let ka = m.ma + m.mb + m.ia * a1 * a1 + m.ib * a2 * a2;
    let axial_mass = inv_or_zero(ka);
    let (hertz, zeta) = (p.hertz, p.damping_ratio);
    Prepared {
        axis,
        axial_mass,
        spring: Spring::new(p.enable_spring, hertz, zeta, axial_mass, ctx.h),
        max_motor_impulse: ctx.h * p.max_motor_force,
        lower: p.lower_translation,
        upper: p.upper_translation,
        motor_speed: p.motor_speed,
        target: p.target_translation,
        enable_limit: p.enable_limit,
        enable_motor: p.enable_motor,
    }
}

/// Current axis, separation and lever arms.
struct Geometry {
    axis: Vec2,
    d: Vec2,
    a1: Scalar,
    a2: Scalar,
}

#[inline(always)]
fn geometry(f: &Frame, p: &Prepared, sa: &BodyState, sb: &BodyState) -> (Geometry, Vec2, Vec2) {
    let (ra, rb) = f.anchors(sa, sb);
    let d = f.separation(sa, sb, ra, rb);
    let axis = sa.dq.rotate(p.axis);
    let g = Geometry {
        axis,
        d,
        a1: (d + ra).cross(axis),
        a2: rb.cross(axis),
    };
    (g, ra, rb)
}

pub(super) fn warm_start(
    f: &Frame,
    p: &Prepared,
    imp: &JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
) {
    let (g, ra, rb) = geometry(f, p, sa, sb);
    let perp = g.axis.left_perp();
    let s1 = (g.d + ra).cross(perp);
    let s2 = rb.cross(perp);
    let axial = imp.spring + imp.motor + imp.lower - imp.upper;
    let pv = g.axis * axial + perp * imp.axial;
    let la = axial * g.a1 + imp.axial * s1 + imp.angular;
    let lb = axial * g.a2 + imp.axial * s2 + imp.angular;
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
    let (g, ra, rb) = geometry(f, p, sa, sb);
    let translation = g.axis.dot(g.d);
    let axial_cdot =
        |sa: &BodyState, sb: &BodyState| g.axis.dot(sb.v - sa.v) + g.a2 * sb.w - g.a1 * sa.w;
    let push = |sa: &mut BodyState, sb: &mut BodyState, i: Scalar| {
        apply_general(sa, sb, g.axis * i, i * g.a1, i * g.a2);
    };

    if p.enable_motor {
        let cdot = axial_cdot(sa, sb);
        let i = clamp_accumulate(
            &mut imp.motor,
            p.axial_mass * (p.motor_speed - cdot),
            p.max_motor_impulse,
        );
        push(sa, sb, i);
    }
    if p.spring.enabled {
        let c = translation - p.target;
        let i = p.spring.impulse(c, axial_cdot(sa, sb), &mut imp.spring);
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

    // Perpendicular and angular block.
    let perp = g.axis.left_perp();
    let s1 = (g.d + ra).cross(perp);
    let s2 = rb.cross(perp);
    let cdot = Vec2::new(perp.dot(sb.v - sa.v) + s2 * sb.w - s1 * sa.w, sb.w - sa.w);
    let (ma, ia, mb, ib) = (sa.inv_mass, sa.inv_inertia, sb.inv_mass, sb.inv_inertia);
    let mut k22 = ia + ib;
    if k22.is_zero() {
        // Neither body rotates: any value keeps the block invertible.
        k22 = Scalar::ONE;
    }
    let k = Sym22 {
        a11: ma + mb + ia * s1 * s1 + ib * s2 * s2,
        a12: ia * s1 + ib * s2,
        a22: k22,
    };
    let impulse = if use_bias {
        let s = &ctx.soft;
        let c = Vec2::new(perp.dot(g.d), f.angle(sa, sb));
        let b = k.solve(cdot + c * s.bias_rate);
        Vec2::new(
            -(s.mass_scale * b.x) - s.impulse_scale * imp.axial,
            -(s.mass_scale * b.y) - s.impulse_scale * imp.angular,
        )
    } else {
        -k.solve(cdot)
    };
    imp.axial += impulse.x;
    imp.angular += impulse.y;
    let la = impulse.x * s1 + impulse.y;
    let lb = impulse.x * s2 + impulse.y;
    apply_general(sa, sb, perp * impulse.x, la, lb);
}

//! Revolute joint: the two anchors coincide and the bodies rotate freely
//! about them, with optional angle limits, a motor and an angular spring.
//!
//! Impulse slots: `linear` (point constraint), `spring`, `motor`, `lower`,
//! `upper` (all angular).

use super::{
    apply_angular, apply_point, clamp_accumulate, inv_or_zero, limit_impulse, soft_impulse, Frame,
    JointContext, JointImpulses, Masses, Sym22,
};
use crate::dynamics::solver::{make_soft, BodyState, Softness};
use crate::math::{normalize_angle, Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Parameters of a revolute joint (a hinge at the anchors).
///
/// Angles are joint angles (see [`super::JointDef`]); limits are clamped to
/// `[−π, π]`, the range of the joint angle.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct RevoluteJoint {
    /// Keep the joint angle within `[lower_angle, upper_angle]`.
    pub enable_limit: bool,
    /// Lower angle limit (rad).
    pub lower_angle: Scalar,
    /// Upper angle limit (rad).
    pub upper_angle: Scalar,
    /// Drive the relative angular speed toward `motor_speed`.
    pub enable_motor: bool,
    /// Target relative angular speed (rad/s, counter-clockwise).
    pub motor_speed: Scalar,
    /// Largest torque the motor applies (N·m).
    pub max_motor_torque: Scalar,
    /// Pull the joint angle toward `target_angle` with a spring.
    pub enable_spring: bool,
    /// Spring stiffness (Hz); zero disables the spring.
    pub hertz: Scalar,
    /// Spring damping ratio.
    pub damping_ratio: Scalar,
    /// Angle the spring pulls toward (rad).
    pub target_angle: Scalar,
}

impl RevoluteJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.lower_angle > self.upper_angle {
            return Err("lower angle is above the upper angle");
        }
        if self.max_motor_torque < Scalar::ZERO {
            return Err("max motor torque must not be negative");
        }
        if self.hertz < Scalar::ZERO || self.damping_ratio < Scalar::ZERO {
            return Err("spring hertz and damping ratio must not be negative");
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    /// Inverse of the point constraint's effective mass.
    k: Sym22,
    /// `1 / (iA + iB)`.
    axial_mass: Scalar,
    spring: Softness,
    max_motor_impulse: Scalar,
    lower: Scalar,
    upper: Scalar,
    motor_speed: Scalar,
    target_angle: Scalar,
    enable_limit: bool,
    enable_motor: bool,
    enable_spring: bool,
}

pub(super) fn prepare(p: &RevoluteJoint, f: &Frame, m: &Masses, ctx: &JointContext) -> Prepared {
    let k = Sym22::point_mass(m.ma, m.ia, m.mb, m.ib, f.ra, f.rb).inverse();
    let lower = p.lower_angle.clamp(-Scalar::PI, Scalar::PI);
    let upper = p.upper_angle.clamp(lower, Scalar::PI);
    Prepared {
        k,
        axial_mass: inv_or_zero(m.ia + m.ib),
        spring: make_soft(p.hertz, p.damping_ratio, ctx.h),
        max_motor_impulse: ctx.h * p.max_motor_torque,
        lower,
        upper,
        motor_speed: p.motor_speed,
        target_angle: p.target_angle,
        enable_limit: p.enable_limit,
        enable_motor: p.enable_motor,
        enable_spring: p.enable_spring && p.hertz > Scalar::ZERO,
    }
}

pub(super) fn warm_start(f: &Frame, imp: &JointImpulses, sa: &mut BodyState, sb: &mut BodyState) {
    let (ra, rb) = f.anchors(sa, sb);
    let axial = imp.spring + imp.motor + imp.lower - imp.upper;
    apply_point(sa, sb, ra, rb, imp.linear);
    apply_angular(sa, sb, axial);
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
    let rotates = !(sa.inv_inertia + sb.inv_inertia).is_zero();
    if rotates && (p.enable_spring || p.enable_limit) {
        let angle = f.angle(sa, sb);
        if p.enable_spring {
            let c = normalize_angle(angle - p.target_angle);
            let bias = p.spring.bias_rate * c;
            let i = soft_impulse(p.axial_mass, &p.spring, sb.w - sa.w, bias, imp.spring);
            imp.spring += i;
            apply_angular(sa, sb, i);
        }
        if p.enable_motor {
            motor(p, imp, sa, sb);
        }
        if p.enable_limit {
            let i = limit_impulse(
                angle - p.lower,
                sb.w - sa.w,
                p.axial_mass,
                &mut imp.lower,
                ctx,
                use_bias,
            );
            apply_angular(sa, sb, i);
            // Upper: signs flipped so that C > 0 when the limit holds.
            let i = limit_impulse(
                p.upper - angle,
                sa.w - sb.w,
                p.axial_mass,
                &mut imp.upper,
                ctx,
                use_bias,
            );
            apply_angular(sa, sb, -i);
        }
    } else if rotates && p.enable_motor {
        motor(p, imp, sa, sb);
    }

    // Point to point.
    let (ra, rb) = f.anchors(sa, sb);
    let cdot = sb.velocity_at(rb) - sa.velocity_at(ra);
    let impulse = if use_bias {
        let s = &ctx.soft;
        let bias = f.separation(sa, sb, ra, rb) * s.bias_rate;
        let b = p.k.mul(cdot + bias);
        Vec2::new(
            -(s.mass_scale * b.x) - s.impulse_scale * imp.linear.x,
            -(s.mass_scale * b.y) - s.impulse_scale * imp.linear.y,
        )
    } else {
        -p.k.mul(cdot)
    };
    imp.linear += impulse;
    apply_point(sa, sb, ra, rb, impulse);
}

#[inline(always)]
fn motor(p: &Prepared, imp: &mut JointImpulses, sa: &mut BodyState, sb: &mut BodyState) {
    let cdot = sb.w - sa.w - p.motor_speed;
    let i = clamp_accumulate(&mut imp.motor, -(p.axial_mass * cdot), p.max_motor_impulse);
    apply_angular(sa, sb, i);
}

//! Angle joint: constrains only the relative angle of the bodies (their
//! positions are free). It drives the joint angle to `target_angle` (rigidly,
//! or through a spring, with at most `max_torque`) and/or keeps it within
//! limits.
//!
//! Impulse slots: `angular` (drive), `lower`, `upper`.

use super::{
    apply_angular, clamp_accumulate, inv_or_zero, limit_pair, soft_impulse, Frame, JointContext,
    JointImpulses, Masses,
};
use crate::dynamics::solver::{make_soft, BodyState, Softness};
use crate::math::{normalize_angle, Scalar};
use serde::{Deserialize, Serialize};

/// Parameters of an angle joint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AngleJoint {
    /// Joint angle the drive holds (rad).
    pub target_angle: Scalar,
    /// Drive stiffness (Hz); zero = rigid (at the world's joint stiffness).
    pub hertz: Scalar,
    /// Drive damping ratio (with a positive `hertz`).
    pub damping_ratio: Scalar,
    /// Largest drive torque (N·m); zero turns the drive off (limits only).
    pub max_torque: Scalar,
    /// Keep the joint angle within `[lower_angle, upper_angle]`.
    pub enable_limit: bool,
    /// Lower limit (rad).
    pub lower_angle: Scalar,
    /// Upper limit (rad).
    pub upper_angle: Scalar,
}

impl Default for AngleJoint {
    fn default() -> AngleJoint {
        AngleJoint {
            target_angle: Scalar::ZERO,
            hertz: Scalar::ZERO,
            damping_ratio: Scalar::ZERO,
            max_torque: Scalar::MAX,
            enable_limit: false,
            lower_angle: Scalar::ZERO,
            upper_angle: Scalar::ZERO,
        }
    }
}

impl AngleJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.lower_angle > self.upper_angle {
            return Err("lower angle is above the upper angle");
        }
        if self.max_torque < Scalar::ZERO {
            return Err("max torque must not be negative");
        }
        if self.hertz < Scalar::ZERO || self.damping_ratio < Scalar::ZERO {
            return Err("hertz and damping ratio must not be negative");
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    axial_mass: Scalar,
    soft: Softness,
    spring: bool,
    target: Scalar,
    max_impulse: Scalar,
    lower: Scalar,
    upper: Scalar,
    drive: bool,
    enable_limit: bool,
}

pub(super) fn prepare(p: &AngleJoint, m: &Masses, ctx: &JointContext) -> Prepared {
    let spring = p.hertz > Scalar::ZERO;
    let lower = p.lower_angle.clamp(-Scalar::PI, Scalar::PI);
    Prepared {
        axial_mass: inv_or_zero(m.ia + m.ib),
        soft: if spring {
            make_soft(p.hertz, p.damping_ratio, ctx.h)
        } else {
            ctx.soft
        },
        spring,
        target: p.target_angle,
        max_impulse: ctx.h * p.max_torque,
        lower,
        upper: p.upper_angle.clamp(lower, Scalar::PI),
        drive: p.max_torque > Scalar::ZERO,
        enable_limit: p.enable_limit,
    }
}

pub(super) fn warm_start(imp: &JointImpulses, sa: &mut BodyState, sb: &mut BodyState) {
    apply_angular(sa, sb, imp.angular + imp.lower - imp.upper);
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
    if (sa.inv_inertia + sb.inv_inertia).is_zero() {
        return;
    }
    let need_angle = p.enable_limit || (p.drive && (use_bias || p.spring));
    let angle = if need_angle {
        f.angle(sa, sb)
    } else {
        Scalar::ZERO
    };
    if p.drive {
        let cdot = sb.w - sa.w;
        let i = if use_bias || p.spring {
            let c = normalize_angle(angle - p.target);
            soft_impulse(
                p.axial_mass,
                &p.soft,
                cdot,
                p.soft.bias_rate * c,
                imp.angular,
            )
        } else {
            -(p.axial_mass * cdot)
        };
        let i = clamp_accumulate(&mut imp.angular, i, p.max_impulse);
        apply_angular(sa, sb, i);
    }
    if p.enable_limit {
        limit_pair(
            sa,
            sb,
            (angle, p.lower, p.upper),
            p.axial_mass,
            (&mut imp.lower, &mut imp.upper),
            ctx,
            use_bias,
            |sa, sb| sb.w - sa.w,
            apply_angular,
        );
    }
}

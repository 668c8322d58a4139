//! Distance joint: keeps the anchors `length` apart, rigidly (a rod) or
//! through a spring; limits on the distance make it a rope (`enable_spring`
//! with zero hertz and `max_length` = the rope's length: slack below,
//! taut at the limit). An optional motor drives the rate of change of the
//! distance.
//!
//! Impulse slots: `axial` (rod or spring), `lower`, `upper`, `motor`.

use super::spring::{validate_axis, Spring};
use super::{
    apply_general, clamp_accumulate, inv_or_zero, limit_pair, soft_impulse, Frame, JointContext,
    JointImpulses, Masses,
};
use crate::dynamics::solver::BodyState;
use crate::math::{Scalar, WORLD_BOUND};
use serde::{Deserialize, Serialize};

/// Shortest length a distance constraint holds (the linear slop).
const MIN_LENGTH: Scalar = Scalar::milli(5);

/// Parameters of a distance joint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct DistanceJoint {
    /// Rest length (m). `None` when creating: the current distance between
    /// the anchors (the stored joint then holds the measured value).
    pub length: Option<Scalar>,
    /// Soft mode: the spring (if `hertz > 0`) replaces the rigid rod, and
    /// the limits apply. Without it the joint is a rigid rod.
    pub enable_spring: bool,
    /// Spring stiffness (Hz); zero = no spring force (a rope with limits).
    pub hertz: Scalar,
    /// Spring damping ratio.
    pub damping_ratio: Scalar,
    /// Keep the distance within `[min_length, max_length]` (soft mode only).
    pub enable_limit: bool,
    /// Shortest allowed distance (m).
    pub min_length: Scalar,
    /// Longest allowed distance (m).
    pub max_length: Scalar,
    /// Drive the rate of change of the distance toward `motor_speed`.
    pub enable_motor: bool,
    /// Target rate (m/s, positive = lengthening).
    pub motor_speed: Scalar,
    /// Largest motor force (N).
    pub max_motor_force: Scalar,
}

impl Default for DistanceJoint {
    fn default() -> DistanceJoint {
        DistanceJoint {
            length: None,
            enable_spring: false,
            hertz: Scalar::ZERO,
            damping_ratio: Scalar::ZERO,
            enable_limit: false,
            min_length: Scalar::ZERO,
            max_length: WORLD_BOUND,
            enable_motor: false,
            motor_speed: Scalar::ZERO,
            max_motor_force: Scalar::ZERO,
        }
    }
}

impl DistanceJoint {
    /// A rope of `length`: slack when shorter, taut at `length`.
    pub fn rope(length: Scalar) -> DistanceJoint {
        DistanceJoint {
            length: Some(length),
            enable_spring: true,
            enable_limit: true,
            max_length: length,
            ..DistanceJoint::default()
        }
    }

    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.length.is_some_and(|l| l < Scalar::ZERO) {
            return Err("length must not be negative");
        }
        if self.min_length < Scalar::ZERO || self.max_length < Scalar::ZERO {
            return Err("min and max length must not be negative");
        }
        validate_axis(
            (self.min_length, self.max_length),
            "min length is above the max length",
            self.max_motor_force,
            "max motor force must not be negative",
            (self.hertz, self.damping_ratio),
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    axial_mass: Scalar,
    spring: Spring,
    length: Scalar,
    min: Scalar,
    max: Scalar,
    max_motor_impulse: Scalar,
    motor_speed: Scalar,
    soft_mode: bool,
    enable_limit: bool,
    enable_motor: bool,
}

pub(super) fn prepare(p: &DistanceJoint, f: &Frame, m: &Masses, ctx: &JointContext) -> Prepared {
    let d = f.dc + f.rb - f.ra;
    let axis = d.normalize();
    let cra = f.ra.cross(axis);
    let crb = f.rb.cross(axis);
    let k = m.ma + m.mb + m.ia * cra * cra + m.ib * crb * crb;
    let length = p
        .length
        .unwrap_or(Scalar::ZERO)
        .clamp(MIN_LENGTH, WORLD_BOUND);
    let min = p.min_length.clamp(MIN_LENGTH, WORLD_BOUND);
    let max = p.max_length.clamp(min, WORLD_BOUND);
    let axial_mass = inv_or_zero(k);
    Prepared {
        axial_mass,
        // In soft mode the spring (if any) replaces the rod.
        spring: Spring::new(true, p.hertz, p.damping_ratio, axial_mass, ctx.h),
        length,
        min,
        max,
        max_motor_impulse: ctx.h * p.max_motor_force,
        motor_speed: p.motor_speed,
        soft_mode: p.enable_spring && min < max,
        enable_limit: p.enable_limit,
        enable_motor: p.enable_motor,
    }
}

pub(super) fn warm_start(f: &Frame, imp: &JointImpulses, sa: &mut BodyState, sb: &mut BodyState) {
    let (ra, rb) = f.anchors(sa, sb);
    let axis = f.separation(sa, sb, ra, rb).normalize();
    let axial = imp.axial + imp.lower - imp.upper + imp.motor;
    let p = axis * axial;
    apply_general(sa, sb, p, ra.cross(p), rb.cross(p));
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
    let (ra, rb) = f.anchors(sa, sb);
    let (length, axis) = f.separation(sa, sb, ra, rb).length_and_normalize();
    let cra = ra.cross(axis);
    let crb = rb.cross(axis);
    let cdot = |sa: &BodyState, sb: &BodyState| axis.dot(sb.velocity_at(rb) - sa.velocity_at(ra));
    let push = |sa: &mut BodyState, sb: &mut BodyState, i: Scalar| {
        apply_general(sa, sb, axis * i, i * cra, i * crb);
    };

    if p.soft_mode {
        if p.spring.enabled {
            let i = p
                .spring
                .impulse(length - p.length, cdot(sa, sb), &mut imp.axial);
            push(sa, sb, i);
        }
        if p.enable_limit {
            limit_pair(
                sa,
                sb,
                (length, p.min, p.max),
                p.axial_mass,
                (&mut imp.lower, &mut imp.upper),
                ctx,
                use_bias,
                cdot,
                push,
            );
        }
        if p.enable_motor {
            let i = clamp_accumulate(
                &mut imp.motor,
                p.axial_mass * (p.motor_speed - cdot(sa, sb)),
                p.max_motor_impulse,
            );
            push(sa, sb, i);
        }
    } else {
        // Rigid rod.
        let i = if use_bias {
            let bias = ctx.soft.bias_rate * (length - p.length);
            soft_impulse(p.axial_mass, &ctx.soft, cdot(sa, sb), bias, imp.axial)
        } else {
            -(p.axial_mass * cdot(sa, sb))
        };
        imp.axial += i;
        push(sa, sb, i);
    }
}

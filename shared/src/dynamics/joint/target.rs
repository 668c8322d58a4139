//! Target (mouse) joint: pulls anchor B toward a world point through a soft
//! spring with at most `max_force` — how players grab and drag things. Body A
//! takes no part in the solve (use the ground); the target can be moved
//! every step with `World::set_joint_target`. Rotation is lightly damped so
//! a grabbed body does not spin forever.
//!
//! Impulse slots: `linear`, `angular` (the damping).

use super::{clamp_length, inv_or_zero, Frame, JointContext, JointImpulses, Masses, Sym22};
use crate::dynamics::solver::{make_soft, BodyState, Softness};
use crate::math::{Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Parameters of a target joint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TargetJoint {
    /// World point anchor B is pulled toward.
    pub target: Vec2,
    /// Spring stiffness (Hz), positive.
    pub hertz: Scalar,
    /// Spring damping ratio.
    pub damping_ratio: Scalar,
    /// Largest pulling force (N); usually a multiple of the body's weight.
    pub max_force: Scalar,
}

impl Default for TargetJoint {
    fn default() -> TargetJoint {
        TargetJoint {
            target: Vec2::ZERO,
            hertz: Scalar::from_int(5),
            damping_ratio: Scalar::from_bits(3_006_477_107), // 0.7
            max_force: Scalar::from_int(1000),
        }
    }
}

impl TargetJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.hertz <= Scalar::ZERO {
            return Err("hertz must be positive");
        }
        if self.damping_ratio < Scalar::ZERO || self.max_force < Scalar::ZERO {
            return Err("damping ratio and max force must not be negative");
        }
        Ok(())
    }
}

/// Rotation damping of a grabbed body: 0.5 Hz, damping ratio 0.1 (Box2D's).
const ANGULAR_HERTZ: Scalar = Scalar::HALF;
const ANGULAR_DAMPING: Scalar = Scalar::from_bits(429_496_730);

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    rb: Vec2,
    /// `centre B − target` at the start of the step.
    dc: Vec2,
    angular_mass: Scalar,
    linear: Softness,
    angular: Softness,
    max_impulse: Scalar,
}

pub(super) fn prepare(
    p: &TargetJoint,
    f: &Frame,
    m: &Masses,
    ctx: &JointContext,
    cb: Vec2,
) -> Prepared {
    Prepared {
        rb: f.rb,
        dc: cb - p.target,
        angular_mass: inv_or_zero(m.ib),
        linear: make_soft(p.hertz, p.damping_ratio, ctx.h),
        angular: make_soft(ANGULAR_HERTZ, ANGULAR_DAMPING, ctx.h),
        max_impulse: ctx.h * p.max_force,
    }
}

pub(super) fn warm_start(p: &Prepared, imp: &JointImpulses, sb: &mut BodyState) {
    let rb = sb.dq.rotate(p.rb);
    sb.v = sb.v.mul_add(sb.inv_mass, imp.linear);
    sb.w += sb.inv_inertia * (rb.cross(imp.linear) + imp.angular);
}

pub(super) fn solve(p: &Prepared, imp: &mut JointImpulses, sb: &mut BodyState) {
    // Damp rotation (no bias).
    {
        let s = &p.angular;
        let i = p.angular_mass * (-(s.mass_scale * sb.w) - s.impulse_scale * imp.angular);
        imp.angular += i;
        sb.w += sb.inv_inertia * i;
    }
    // Pull: a spring, so it acts in the relax pass too.
    let rb = sb.dq.rotate(p.rb);
    let cdot = sb.velocity_at(rb);
    let separation = sb.dp + rb + p.dc;
    let s = &p.linear;
    let k = Sym22::point_mass(
        Scalar::ZERO,
        Scalar::ZERO,
        sb.inv_mass,
        sb.inv_inertia,
        Vec2::ZERO,
        rb,
    );
    let b = k.solve(cdot + separation * s.bias_rate);
    let impulse = Vec2::new(
        -(s.mass_scale * b.x) - s.impulse_scale * imp.linear.x,
        -(s.mass_scale * b.y) - s.impulse_scale * imp.linear.y,
    );
    let old = imp.linear;
    imp.linear = clamp_length(old + impulse, p.max_impulse);
    let applied = imp.linear - old;
    sb.v = sb.v.mul_add(sb.inv_mass, applied);
    sb.w += sb.inv_inertia * rb.cross(applied);
}

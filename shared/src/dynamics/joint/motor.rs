//! Motor joint: drives body B toward a pose relative to body A — anchor B
//! onto anchor A (so `local_anchor_a` is the linear offset in A's frame) and
//! the joint angle to zero (so `reference_angle` is the angular offset) —
//! with at most `max_force` and `max_torque`. The position error is closed
//! at `correction_factor` per substep. Useful for moving platforms and
//! characters driven by the simulation.
//!
//! Impulse slots: `linear`, `angular`.

use super::{
    apply_angular, apply_point, clamp_accumulate, clamp_length, inv_or_zero, Frame, JointContext,
    JointImpulses, Masses, Sym22,
};
use crate::dynamics::solver::BodyState;
use crate::math::{Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Parameters of a motor joint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct MotorJoint {
    /// Largest force (N).
    pub max_force: Scalar,
    /// Largest torque (N·m).
    pub max_torque: Scalar,
    /// Fraction of the position error corrected per substep, 0 to 1.
    pub correction_factor: Scalar,
}

impl Default for MotorJoint {
    fn default() -> MotorJoint {
        MotorJoint {
            max_force: Scalar::ONE,
            max_torque: Scalar::ONE,
            correction_factor: Scalar::from_bits(1_288_490_189), // 0.3
        }
    }
}

impl MotorJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.max_force < Scalar::ZERO || self.max_torque < Scalar::ZERO {
            return Err("max force and max torque must not be negative");
        }
        if self.correction_factor < Scalar::ZERO || self.correction_factor > Scalar::ONE {
            return Err("correction factor must be within 0 to 1");
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    angular_mass: Scalar,
    max_force_impulse: Scalar,
    max_torque_impulse: Scalar,
    /// Correction factor times the substep rate.
    correction_rate: Scalar,
}

pub(super) fn prepare(p: &MotorJoint, m: &Masses, ctx: &JointContext) -> Prepared {
    Prepared {
        angular_mass: inv_or_zero(m.ia + m.ib),
        max_force_impulse: ctx.h * p.max_force,
        max_torque_impulse: ctx.h * p.max_torque,
        correction_rate: p.correction_factor * ctx.inv_h,
    }
}

pub(super) fn solve(
    f: &Frame,
    p: &Prepared,
    imp: &mut JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
    _ctx: &JointContext,
    _use_bias: bool,
) {
    // The correction is a velocity target, not a position bias: it applies in
    // the relax pass too (as in Box2D), or the relax pass would undo it.
    // Angular.
    {
        let bias = p.correction_rate * f.angle(sa, sb);
        let cdot = sb.w - sa.w;
        let i = clamp_accumulate(
            &mut imp.angular,
            -(p.angular_mass * (cdot + bias)),
            p.max_torque_impulse,
        );
        apply_angular(sa, sb, i);
    }
    // Linear.
    let (ra, rb) = f.anchors(sa, sb);
    let cdot =
        sb.velocity_at(rb) - sa.velocity_at(ra) + f.separation(sa, sb, ra, rb) * p.correction_rate;
    let k = Sym22::point_mass(
        sa.inv_mass,
        sa.inv_inertia,
        sb.inv_mass,
        sb.inv_inertia,
        ra,
        rb,
    );
    let old = imp.linear;
    imp.linear = clamp_length(old - k.solve(cdot), p.max_force_impulse);
    let impulse: Vec2 = imp.linear - old;
    apply_point(sa, sb, ra, rb, impulse);
}

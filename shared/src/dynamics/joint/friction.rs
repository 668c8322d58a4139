//! Friction joint: top-down friction. It resists the relative velocity at
//! the anchors with at most `max_force`, and the relative spin with at most
//! `max_torque` (a puck on a table: attach it to the ground body). Velocity
//! only: it never corrects positions.
//!
//! Impulse slots: `linear`, `angular`.

use super::{
    apply_angular, apply_point, clamp_accumulate, clamp_length, inv_or_zero, Frame, JointContext,
    JointImpulses, Masses, Sym22,
};
use crate::dynamics::solver::BodyState;
use crate::math::Scalar;
use serde::{Deserialize, Serialize};

/// Parameters of a friction joint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct FrictionJoint {
    /// Largest friction force (N).
    pub max_force: Scalar,
    /// Largest friction torque (N·m).
    pub max_torque: Scalar,
}

impl FrictionJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.max_force < Scalar::ZERO || self.max_torque < Scalar::ZERO {
            return Err("max force and max torque must not be negative");
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    angular_mass: Scalar,
    max_force_impulse: Scalar,
    max_torque_impulse: Scalar,
}

pub(super) fn prepare(p: &FrictionJoint, m: &Masses, ctx: &JointContext) -> Prepared {
    Prepared {
        angular_mass: inv_or_zero(m.ia + m.ib),
        max_force_impulse: ctx.h * p.max_force,
        max_torque_impulse: ctx.h * p.max_torque,
    }
}

pub(super) fn solve(
    f: &Frame,
    p: &Prepared,
    imp: &mut JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
) {
    let i = clamp_accumulate(
        &mut imp.angular,
        -(p.angular_mass * (sb.w - sa.w)),
        p.max_torque_impulse,
    );
    apply_angular(sa, sb, i);
    let (ra, rb) = f.anchors(sa, sb);
    let cdot = sb.velocity_at(rb) - sa.velocity_at(ra);
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
    let applied = imp.linear - old;
    apply_point(sa, sb, ra, rb, applied);
}

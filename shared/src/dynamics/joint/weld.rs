//! Weld joint: the anchors coincide and the relative angle is fixed (a
//! point constraint plus an angle constraint). Rigid by default; a positive
//! linear or angular hertz makes that part a spring.
//!
//! Impulse slots: `linear`, `angular`.

use super::{
    apply_angular, apply_point, inv_or_zero, soft_impulse, Frame, JointContext, JointImpulses,
    Masses, Sym22,
};
use crate::dynamics::solver::{make_soft, BodyState, Softness};
use crate::math::{Scalar, Vec2};
use serde::{Deserialize, Serialize};

/// Parameters of a weld joint. Zero hertz means rigid (at the world's joint
/// stiffness).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct WeldJoint {
    /// Stiffness of the point constraint (Hz); zero = rigid.
    pub linear_hertz: Scalar,
    /// Damping ratio of the point constraint's spring.
    pub linear_damping_ratio: Scalar,
    /// Stiffness of the angle constraint (Hz); zero = rigid.
    pub angular_hertz: Scalar,
    /// Damping ratio of the angle constraint's spring.
    pub angular_damping_ratio: Scalar,
}

impl WeldJoint {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.linear_hertz < Scalar::ZERO
            || self.angular_hertz < Scalar::ZERO
            || self.linear_damping_ratio < Scalar::ZERO
            || self.angular_damping_ratio < Scalar::ZERO
        {
            return Err("hertz and damping ratios must not be negative");
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    axial_mass: Scalar,
    linear: Softness,
    angular: Softness,
    /// Springs act in the relax pass too; rigid parts only correct drift
    /// while biased.
    linear_spring: bool,
    angular_spring: bool,
}

pub(super) fn prepare(p: &WeldJoint, m: &Masses, ctx: &JointContext) -> Prepared {
    let linear_spring = p.linear_hertz > Scalar::ZERO;
    let angular_spring = p.angular_hertz > Scalar::ZERO;
    Prepared {
        axial_mass: inv_or_zero(m.ia + m.ib),
        linear: if linear_spring {
            make_soft(p.linear_hertz, p.linear_damping_ratio, ctx.h)
        } else {
            ctx.soft
        },
        angular: if angular_spring {
            make_soft(p.angular_hertz, p.angular_damping_ratio, ctx.h)
        } else {
            ctx.soft
        },
        linear_spring,
        angular_spring,
    }
}

pub(super) fn solve(
    f: &Frame,
    p: &Prepared,
    imp: &mut JointImpulses,
    sa: &mut BodyState,
    sb: &mut BodyState,
    _ctx: &JointContext,
    use_bias: bool,
) {
    // Angle.
    {
        let cdot = sb.w - sa.w;
        let i = if use_bias || p.angular_spring {
            let bias = p.angular.bias_rate * f.angle(sa, sb);
            soft_impulse(p.axial_mass, &p.angular, cdot, bias, imp.angular)
        } else {
            -(p.axial_mass * cdot)
        };
        imp.angular += i;
        apply_angular(sa, sb, i);
    }
    // Point.
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
    let impulse = if use_bias || p.linear_spring {
        let s = &p.linear;
        let bias = f.separation(sa, sb, ra, rb) * s.bias_rate;
        let b = k.solve(cdot + bias);
        Vec2::new(
            -(s.mass_scale * b.x) - s.impulse_scale * imp.linear.x,
            -(s.mass_scale * b.y) - s.impulse_scale * imp.linear.y,
        )
    } else {
        -k.solve(cdot)
    };
    imp.linear += impulse;
    apply_point(sa, sb, ra, rb, impulse);
}

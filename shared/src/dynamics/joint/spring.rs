//! What the joints with a spring, a motor and limits along one coordinate
//! share (revolute: the angle; prismatic and wheel: the translation along
//! the axis; distance: the length): checking the parameters, and the soft
//! spring solved on that coordinate.

use crate::dynamics::solver::make_soft;
use crate::math::Scalar;

/// Checks the limits, the motor's largest force or torque and the spring
/// of one coordinate, in that order. `limits_error` and `motor_error` name
/// the coordinate ("lower angle is above the upper angle").
pub(super) fn validate_axis(
    (lower, upper): (Scalar, Scalar),
    limits_error: &'static str,
    max_motor: Scalar,
    motor_error: &'static str,
    (hertz, damping_ratio): (Scalar, Scalar),
) -> Result<(), &'static str> {
    if lower > upper {
        return Err(limits_error);
    }
    if max_motor < Scalar::ZERO {
        return Err(motor_error);
    }
    if hertz < Scalar::ZERO || damping_ratio < Scalar::ZERO {
        return Err("spring hertz and damping ratio must not be negative");
    }
    Ok(())
}

/// A soft spring on one coordinate, prepared for a step: it pulls the
/// coordinate's error toward zero. Solved in both the biased and the relax
/// pass (a spring is a force, not a position correction).
#[derive(Clone, Copy, Debug)]
pub(super) struct Spring {
    /// Whether the spring acts (enabled, with a positive stiffness).
    pub enabled: bool,
    /// The coordinate's effective mass times the softness's mass scale
    /// (the first product of [`super::soft_impulse`], folded once).
    scaled_mass: Scalar,
    bias_rate: Scalar,
    impulse_scale: Scalar,
}

impl Spring {
    /// A spring of `hertz` and `damping_ratio` at substep `h` on a
    /// coordinate of effective mass `mass`; it acts if `enable` and
    /// `hertz > 0`.
    pub fn new(
        enable: bool,
        hertz: Scalar,
        damping_ratio: Scalar,
        mass: Scalar,
        h: Scalar,
    ) -> Self {
        let soft = make_soft(hertz, damping_ratio, h);
        Spring {
            enabled: enable && hertz > Scalar::ZERO,
            scaled_mass: mass * soft.mass_scale,
            bias_rate: soft.bias_rate,
            impulse_scale: soft.impulse_scale,
        }
    }

    /// The impulse for coordinate error `c` and rate `cdot` (the same bits
    /// as [`super::soft_impulse`]); adds it to `accumulated` and returns it.
    #[inline(always)]
    pub fn impulse(&self, c: Scalar, cdot: Scalar, accumulated: &mut Scalar) -> Scalar {
        let bias = self.bias_rate * c;
        let i = -(self.scaled_mass * (cdot + bias)) - self.impulse_scale * *accumulated;
        *accumulated += i;
        i
    }
}

//! What the joints with a spring, a motor and limits along one coordinate
//! share (revolute: the angle; prismatic and wheel: the translation along
//! the axis; distance: the length): checking the parameters, and the soft
//! spring solved on that coordinate.

use crate::dynamics::solver::{make_soft, Softness};
use crate::math::{Scalar, Vec2};

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

/// [`validate_axis`] for a translation along `local_axis` (prismatic and
/// wheel joints), which must not be zero.
pub(super) fn validate_translation(
    local_axis: Vec2,
    limits: (Scalar, Scalar),
    max_motor: Scalar,
    motor_error: &'static str,
    spring: (Scalar, Scalar),
) -> Result<(), &'static str> {
    if local_axis.normalize() == Vec2::ZERO {
        return Err("axis must not be zero");
    }
    let limits_error = "lower translation is above the upper translation";
    validate_axis(limits, limits_error, max_motor, motor_error, spring)
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
    pub(super) scaled_mass: Scalar,
    pub(super) bias_rate: Scalar,
    pub(super) impulse_scale: Scalar,
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
        Spring::with_softness(enable, hertz, mass, make_soft(hertz, damping_ratio, h))
    }

    /// [`Spring::new`] with its softness, `make_soft(hertz, damping_ratio,
    /// h)`, already made (joints built alike share it).
    pub fn with_softness(enable: bool, hertz: Scalar, mass: Scalar, soft: Softness) -> Self {
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

#[cfg(test)]
mod tests {
    use super::super::soft_impulse;
    use super::*;
    use crate::math::fx;

    #[test]
    fn spring_impulse_has_the_bits_of_soft_impulse() {
        let h = Scalar::ratio(1, 240);
        for (hertz, zeta, mass) in [
            (fx(5), Scalar::HALF, Scalar::ratio(7, 3)),
            (fx(60), fx(2), Scalar::ratio(1, 4000)),
        ] {
            let spring = Spring::new(true, hertz, zeta, mass, h);
            let soft = make_soft(hertz, zeta, h);
            for (c, cdot) in [
                (Scalar::ratio(-3, 10), fx(2)),
                (fx(1), Scalar::ratio(-1, 7)),
            ] {
                let mut acc = Scalar::ratio(1, 9);
                let want = soft_impulse(mass, &soft, cdot, soft.bias_rate * c, acc);
                assert_eq!(spring.impulse(c, cdot, &mut acc), want);
                assert_eq!(acc, Scalar::ratio(1, 9) + want);
            }
        }
        assert!(!Spring::new(true, Scalar::ZERO, Scalar::ONE, Scalar::ONE, h).enabled);
        assert!(!Spring::new(false, fx(5), Scalar::ONE, Scalar::ONE, h).enabled);
    }

    #[test]
    fn checks_report_the_first_problem() {
        let ok = (Scalar::ZERO, Scalar::ZERO);
        let (lim, mot) = ("limits", "motor");
        assert_eq!(validate_axis(ok, lim, Scalar::ZERO, mot, ok), Ok(()));
        let bad_limits = (fx(1), fx(-1));
        let bad_spring = (fx(-1), Scalar::ZERO);
        assert_eq!(
            validate_axis(bad_limits, lim, fx(-1), mot, bad_spring),
            Err(lim)
        );
        assert_eq!(validate_axis(ok, lim, fx(-1), mot, bad_spring), Err(mot));
        assert_eq!(
            validate_axis(ok, lim, Scalar::ZERO, mot, bad_spring),
            Err("spring hertz and damping ratio must not be negative")
        );
        assert_eq!(
            validate_translation(Vec2::ZERO, bad_limits, Scalar::ZERO, mot, ok),
            Err("axis must not be zero")
        );
        assert_eq!(
            validate_translation(Vec2::from_ints(0, 1), bad_limits, Scalar::ZERO, mot, ok),
            Err("lower translation is above the upper translation")
        );
    }
}

//! Time of impact by conservative advancement.
//!
//! Two shapes move over a step along [`Sweep`]s (centre of mass linear in
//! `t ∈ [0, 1]`, rotation a normalised linear blend of the start and end
//! rotations). Conservative advancement repeats: measure the distance `d`
//! between the shapes at `t` (GJK, [`shape_distance`]), bound how fast that
//! distance can shrink, and advance `t` by the time that bound needs to
//! close `d` down to the target separation. It never steps past the first
//! contact, so it cannot tunnel, and it stops after a fixed number of
//! iterations.
//!
//! # The bound
//!
//! With `n` the unit vector between the closest points at `t`, the gap
//! between the shapes' projections on `n` is at most their distance and
//! equals it at `t`. It shrinks no faster than
//! `μ = −(ΔcB − ΔcA)·n + ωA·rA + ωB·rB`, where `Δc` is a sweep's centre
//! displacement, `ω` bounds its angular speed and `r` is the farthest any
//! point of the shape lies from the sweep centre. The blended rotation turns
//! by the angle `Δ` between its ends at a rate of at most `2·tan(Δ/2)`
//! (= `2 |sin Δ| / (1 + cos Δ)`) per unit `t`; the denominator is floored at
//! 1/4, which only matters for sweeps that turn more than ~138° in one step.

use super::distance::{shape_distance, DistanceProxy};
use super::manifold::LINEAR_SLOP;
use crate::math::{Rot, Scalar, Transform, Vec2};

/// Most distance evaluations in one time-of-impact search.
pub const TOI_MAX_ITERATIONS: u32 = 32;

/// Target separation at the time of impact for sharp shapes: the linear
/// slop, so the next step's speculative contact catches the pair.
pub const TOI_TARGET: Scalar = LINEAR_SLOP;

/// Box2D's target at the time of impact, as a separation of the surfaces,
/// for shapes whose rounding radii sum to `radii`: the cores
/// `max(slop, radii − slop)` apart. Sharp shapes stop a slop short of
/// touching ([`TOI_TARGET`]); rounded ones (radii of two slops or more)
/// may overlap by a slop, as a resting contact does. Continuous collision
/// stops at [`TOI_TARGET`] and uses this one to tell an impact from a
/// graze (a rounded body sliding along the ground, whose surface passes
/// over the end of the next piece of ground).
pub fn toi_target(radii: Scalar) -> Scalar {
    LINEAR_SLOP.max(radii - LINEAR_SLOP) - radii
}
/// Accepted distance above the target.
const TOLERANCE: Scalar = Scalar::from_bits(LINEAR_SLOP.to_bits() >> 2);

/// The motion of a body over one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// Centre of mass in the body frame.
    pub local_center: Vec2,
    /// World centre of mass at the start.
    pub c1: Vec2,
    /// World centre of mass at the end.
    pub c2: Vec2,
    /// Rotation at the start.
    pub q1: Rot,
    /// Rotation at the end.
    pub q2: Rot,
}

impl Sweep {
    /// A sweep that does not move.
    pub fn fixed(xf: Transform) -> Sweep {
        Sweep {
            local_center: Vec2::ZERO,
            c1: xf.p,
            c2: xf.p,
            q1: xf.q,
            q2: xf.q,
        }
    }

    /// Centre of mass and rotation at `t`.
    pub fn pose(&self, t: Scalar) -> (Vec2, Rot) {
        let c = self.c1.mul_add(t, self.c2 - self.c1);
        let q = if self.q1 == self.q2 {
            self.q1
        } else {
            Rot {
                c: self.q1.c + t * (self.q2.c - self.q1.c),
                s: self.q1.s + t * (self.q2.s - self.q1.s),
            }
            .normalize()
        };
        (c, q)
    }

    /// Body-origin transform at `t`.
    pub fn transform(&self, t: Scalar) -> Transform {
        let (c, q) = self.pose(t);
        Transform::new(c - q.rotate(self.local_center), q)
    }

    /// Upper bound of the angular speed of [`Sweep::pose`] in rad per unit `t`.
    fn angular_bound(&self) -> Scalar {
        if self.q1 == self.q2 {
            return Scalar::ZERO;
        }
        let r = self.q1.inv_mul(self.q2);
        let den = (Scalar::ONE + r.c).max(Scalar::ratio(1, 4));
        r.s.abs().shl(1) / den
    }
}

/// How a time-of-impact search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToiState {
    /// The shapes come within the target separation at `fraction`.
    Hit,
    /// Already within the target separation at the start (`fraction` 0).
    Overlapped,
    /// No contact before the search limit (`fraction` is the limit).
    Separated,
    /// The iteration cap was reached; `fraction` is still safe (no contact before it).
    Failed,
}

/// Result of [`time_of_impact`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToiOutput {
    /// How the search ended.
    pub state: ToiState,
    /// Time in `[0, t_max]`.
    pub fraction: Scalar,
}

/// How fast `p`'s core can move through turning over `sweep`: the
/// sweep's angular bound times the farthest point's distance from its
/// centre, at most `extent`.
///
/// A sweep that does not turn (a static shape's) spins nothing: its reach
/// is not computed (the product by a zero bound is zero). The farthest
/// point's distance is the root of the largest square (the root is
/// monotone): one square root a proxy instead of one a point
/// (`spin_is_the_per_point_form` holds it to the per-point form).
fn spin(p: &DistanceProxy, sweep: &Sweep, extent: Scalar) -> Scalar {
    let bound = sweep.angular_bound();
    if bound.is_zero() {
        return Scalar::ZERO;
    }
    let far = p
        .points()
        .iter()
        .map(|&v| (v - sweep.local_center).length_squared())
        .max()
        .unwrap_or(Scalar::ZERO);
    bound * crate::math::sqrt(far).min(extent)
}

/// First time in `[0, t_max]` at which shape A (moving along `sweep_a`,
/// no point farther than `extent_a` from its sweep centre) and shape B come
/// within `target` of each other, to within a quarter of the linear slop.
/// The target is a separation of the surfaces ([`toi_target`]); it may be
/// negative (an overlap), down to minus the sum of the radii.
#[allow(clippy::too_many_arguments)]
pub fn time_of_impact(
    a: &DistanceProxy,
    sweep_a: &Sweep,
    extent_a: Scalar,
    b: &DistanceProxy,
    sweep_b: &Sweep,
    extent_b: Scalar,
    t_max: Scalar,
    target: Scalar,
) -> ToiOutput {
    // Turning moves a shape's surface no faster than its core (the
    // rounding is the same all round), so the core's reach from the sweep
    // centre bounds the spin: a ball's is zero however fast it rolls.
    let spin = spin(a, sweep_a, extent_a) + spin(b, sweep_b, extent_b);
    let dv = (sweep_b.c2 - sweep_b.c1) - (sweep_a.c2 - sweep_a.c1);
    // The separation is measured between the cores, less the radii, so
    // that it goes below zero when the surfaces overlap.
    let radii = a.radius + b.radius;
    let target = target.max(-radii);
    let mut t = Scalar::ZERO;
    for _ in 0..TOI_MAX_ITERATIONS {
        let out = shape_distance(a, sweep_a.transform(t), b, sweep_b.transform(t));
        let separation = out.core_distance - radii;
        // Touching at the start (resting, sliding, rolling on it) is an
        // overlap whatever the target; past the start, the target decides.
        if t.is_zero() && separation <= target.max(Scalar::ZERO) + TOLERANCE {
            return ToiOutput {
                state: ToiState::Overlapped,
                fraction: t,
            };
        }
        if separation <= target + TOLERANCE {
            return ToiOutput {
                state: ToiState::Hit,
                fraction: t,
            };
        }
        let mu = spin - dv.dot(out.normal);
        let gap = separation - target;
        let left = t_max - t;
        if mu <= Scalar::ZERO || mu * left <= gap {
            return ToiOutput {
                state: ToiState::Separated,
                fraction: t_max,
            };
        }
        // gap < μ·left, so the step is below `left` and cannot overflow.
        t += (gap / mu).max(Scalar::EPSILON);
    }
    ToiOutput {
        state: ToiState::Failed,
        fraction: t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Polygon;
    use crate::math::fx;
    use proptest::prelude::*;

    proptest! {
        /// [`spin`] gives the bits of the per-point form it replaced,
        /// `bound · min(max over the points of |v − centre|, extent)`, for
        /// proxies of one to eight points anywhere within ±2¹⁰ m of the
        /// centre, turning or not.
        #[test]
        fn spin_is_the_per_point_form(
            points in proptest::collection::vec((-(1i64 << 42)..1 << 42, -(1i64 << 42)..1 << 42), 1..=8),
            (cx, cy, extent) in (-(1i64 << 40)..1 << 40, -(1i64 << 40)..1 << 40, 0i64..1 << 44),
            (a1, a2, turns) in (-(1i64 << 34)..1 << 34, -(1i64 << 34)..1 << 34, any::<bool>()),
        ) {
            let sc = Scalar::from_bits;
            let pts: Vec<Vec2> = points.iter().map(|&(x, y)| Vec2::new(sc(x), sc(y))).collect();
            let p = DistanceProxy::new(&pts, Scalar::ZERO);
            let q1 = Rot::from_angle(sc(a1));
            let q2 = if turns { Rot::from_angle(sc(a2)) } else { q1 };
            let sweep = Sweep { local_center: Vec2::new(sc(cx), sc(cy)), c1: Vec2::ZERO, c2: Vec2::ZERO, q1, q2 };
            let reach = p
                .points()
                .iter()
                .map(|&v| (v - sweep.local_center).length())
                .max()
                .unwrap_or(Scalar::ZERO)
                .min(sc(extent));
            prop_assert_eq!(spin(&p, &sweep, sc(extent)), sweep.angular_bound() * reach);
        }
    }

    fn moving(from: Vec2, to: Vec2) -> Sweep {
        Sweep {
            local_center: Vec2::ZERO,
            c1: from,
            c2: to,
            q1: Rot::IDENTITY,
            q2: Rot::IDENTITY,
        }
    }

    #[test]
    fn head_on_circle_stops_a_slop_before_the_wall() {
        let wall = Polygon::make_box(Scalar::milli(50), fx(2));
        let wall = DistanceProxy::new(wall.points(), Scalar::ZERO);
        let ball = DistanceProxy::new(&[Vec2::ZERO], Scalar::ratio(1, 10));
        let still = Sweep::fixed(Transform::IDENTITY);
        let sweep = moving(Vec2::from_ints(-3, 0), Vec2::from_ints(2, 0));
        let out = time_of_impact(
            &wall,
            &still,
            Scalar::ZERO,
            &ball,
            &sweep,
            Scalar::ratio(1, 10),
            Scalar::ONE,
            TOI_TARGET,
        );
        assert_eq!(out.state, ToiState::Hit);
        // Surface gap at t: 3 − 5t − 0.15 = 0.005 ⇒ t ≈ 0.569.
        let x = sweep.pose(out.fraction).0.x;
        let gap = -Scalar::milli(50) - (x + Scalar::ratio(1, 10));
        assert!(
            gap >= TOI_TARGET - Scalar::from_bits(1 << 8) && gap <= TOI_TARGET + TOLERANCE,
            "{gap}"
        );
    }

    #[test]
    fn passing_by_is_separated_and_spinning_box_is_caught() {
        let wall = Polygon::make_box(Scalar::milli(50), fx(2));
        let wall = DistanceProxy::new(wall.points(), Scalar::ZERO);
        let ball = DistanceProxy::new(&[Vec2::ZERO], Scalar::ratio(1, 10));
        let still = Sweep::fixed(Transform::IDENTITY);
        let sweep = moving(Vec2::from_ints(-3, 3), Vec2::from_ints(3, 3));
        let out = time_of_impact(
            &wall,
            &still,
            Scalar::ZERO,
            &ball,
            &sweep,
            Scalar::ratio(1, 10),
            Scalar::ONE,
            TOI_TARGET,
        );
        assert_eq!(out.state, ToiState::Separated);
        // A long thin plank spinning a quarter turn while crossing the wall.
        let plank = Polygon::make_box(fx(1), Scalar::milli(50));
        let plank = DistanceProxy::new(plank.points(), Scalar::ZERO);
        let mut sweep = moving(Vec2::from_ints(-3, 0), Vec2::from_ints(3, 0));
        sweep.q2 = Rot::from_angle(Scalar::FRAC_PI_2.shr(1) + Scalar::FRAC_PI_2.shr(1));
        let ext = (Vec2::new(fx(1), Scalar::milli(50))).length();
        let out = time_of_impact(
            &wall,
            &still,
            Scalar::ZERO,
            &plank,
            &sweep,
            ext,
            Scalar::ONE,
            TOI_TARGET,
        );
        assert!(
            matches!(out.state, ToiState::Hit | ToiState::Failed),
            "{out:?}"
        );
        let d = shape_distance(
            &wall,
            Transform::IDENTITY,
            &plank,
            sweep.transform(out.fraction),
        );
        assert!(
            d.distance > Scalar::ZERO && d.distance <= TOI_TARGET + TOLERANCE,
            "{d:?}"
        );
    }
}

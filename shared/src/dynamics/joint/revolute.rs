//! Revolute joint: the two anchors coincide and the bodies rotate freely
//! about them, with optional angle limits, a motor and an angular spring.
//!
//! Impulse slots: `linear` (point constraint), `spring`, `motor`, `lower`,
//! `upper` (all angular).
//!
//! Revolute joints are the bulk of most joint scenes (the benchmark's
//! 19 800-joint grid, ragdolls, chains), so they are solved from their own
//! compact list: the hot part every revolute needs (104 bytes) apart from
//! the cold part only joints with a limit, motor or spring use.

use super::spring::{validate_axis, Spring};
use super::{
    apply_angular, apply_point, clamp_accumulate, inv_or_zero, limit_pair, rotation_angle, Frame,
    Joint, JointContext, Masses, Sym22,
};
use crate::dynamics::solver::{self, BodyState};
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
        validate_axis(
            (self.lower_angle, self.upper_angle),
            "lower angle is above the upper angle",
            self.max_motor_torque,
            "max motor torque must not be negative",
            (self.hertz, self.damping_ratio),
        )
    }

    /// Whether the joint has a limit, motor or spring (the cold part,
    /// which reads the joint angle).
    pub(super) fn uses_angle(&self) -> bool {
        self.enable_limit || self.enable_motor || self.enable_spring
    }
}

/// What every revolute needs each iteration (104 bytes; what only the
/// warm start and the store read is kept apart in [`Revolutes`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hot {
    /// Solver-state slots (0 = static dummy).
    a: u32,
    b: u32,
    /// Index in the cold list, or `NO_COLD` without limit, motor or spring.
    cold: u32,
    /// `centre B − centre A` at the start of the step.
    dc: Vec2,
    /// Anchors for the current rotations (prepared, then turned by each
    /// relax pass) and the inverse of the point constraint's effective
    /// mass for them.
    ra: Vec2,
    rb: Vec2,
    k: Sym22,
    /// Accumulated point impulse.
    linear: Vec2,
}

const NO_COLD: u32 = u32::MAX;

/// Limit, motor and spring data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cold {
    /// Joint angle at the start of the step.
    angle0: Scalar,
    /// Joint angle for the current rotations (`angle0` until the first
    /// relax pass): the rotations only change when the positions are
    /// integrated, between the biased pass and the relax pass of a
    /// substep, so the angle the relax pass computes is exactly the one
    /// the next substep's biased pass would (it reads this instead).
    angle: Scalar,
    /// `1 / (iA + iB)`.
    axial_mass: Scalar,
    spring: Spring,
    max_motor_impulse: Scalar,
    lower: Scalar,
    upper: Scalar,
    motor_speed: Scalar,
    target_angle: Scalar,
    enable_limit: bool,
    enable_motor: bool,
    spring_impulse: Scalar,
    motor_impulse: Scalar,
    lower_impulse: Scalar,
    upper_impulse: Scalar,
}

/// The prepared revolute joints of a step.
#[derive(Clone, Debug, Default)]
pub(crate) struct Revolutes {
    hot: Vec<Hot>,
    /// Anchors relative to the centres at the start of the step (A, B),
    /// parallel to `hot`.
    anchors0: Vec<(Vec2, Vec2)>,
    /// Index of each joint in the world's joint list, parallel to `hot`.
    index: Vec<u32>,
    cold: Vec<Cold>,
}

impl Revolutes {
    pub(super) fn clear(&mut self) {
        self.hot.clear();
        self.anchors0.clear();
        self.index.clear();
        self.cold.clear();
    }

    /// Prepares joint `ji` (a revolute with parameters `p`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &mut self,
        ji: u32,
        j: &Joint,
        p: &RevoluteJoint,
        f: &Frame,
        a: u32,
        b: u32,
        m: &Masses,
        ctx: &JointContext,
    ) {
        let cold = if p.uses_angle() {
            let lower = p.lower_angle.clamp(-Scalar::PI, Scalar::PI);
            let upper = p.upper_angle.clamp(lower, Scalar::PI);
            let i = &j.impulses;
            let axial_mass = inv_or_zero(m.ia + m.ib);
            let (hertz, zeta) = (p.hertz, p.damping_ratio);
            self.cold.push(Cold {
                angle0: f.angle0,
                angle: f.angle0,
                axial_mass,
                spring: Spring::new(p.enable_spring, hertz, zeta, axial_mass, ctx.h),
                max_motor_impulse: ctx.h * p.max_motor_torque,
                lower,
                upper,
                motor_speed: p.motor_speed,
                target_angle: p.target_angle,
                enable_limit: p.enable_limit,
                enable_motor: p.enable_motor,
                spring_impulse: i.spring,
                motor_impulse: i.motor,
                lower_impulse: i.lower,
                upper_impulse: i.upper,
            });
            (self.cold.len() - 1) as u32
        } else {
            NO_COLD
        };
        self.index.push(ji);
        self.anchors0.push((f.ra, f.rb));
        self.hot.push(Hot {
            a,
            b,
            cold,
            dc: f.dc,
            ra: f.ra,
            rb: f.rb,
            k: Sym22::point_mass(m.ma, m.ia, m.mb, m.ib, f.ra, f.rb).inverse(),
            linear: j.impulses.linear,
        });
    }

    /// Starts a substep: the accumulated impulses, at this substep's
    /// anchors (those the last relax pass left, or the prepared ones).
    pub(super) fn warm_start(&mut self, states: &mut [BodyState]) {
        for h in self.hot.iter_mut() {
            let (mut sa, mut sb) = solver::two(states, h.a, h.b);
            apply_point(&mut sa, &mut sb, h.ra, h.rb, h.linear);
            if h.cold != NO_COLD {
                let c = &self.cold[h.cold as usize];
                let axial = c.spring_impulse + c.motor_impulse + c.lower_impulse - c.upper_impulse;
                apply_angular(&mut sa, &mut sb, axial);
            }
            solver::store(states, h.a, h.b, &sa, &sb);
        }
    }

    /// One iteration; `use_bias` corrects position errors.
    pub(super) fn solve(&mut self, states: &mut [BodyState], ctx: &JointContext, use_bias: bool) {
        for (h, &(ra0, rb0)) in self.hot.iter_mut().zip(&self.anchors0) {
            let (mut sa, mut sb) = solver::two(states, h.a, h.b);
            if h.cold != NO_COLD {
                solve_angular(
                    &mut self.cold[h.cold as usize],
                    &mut sa,
                    &mut sb,
                    ctx,
                    use_bias,
                );
            }
            // Point to point, with the current anchors and their effective
            // mass, as Box2D rebuilds them in every pass. The positions move
            // between the biased pass and the relax pass, so the relax pass
            // turns the anchors again (and the next substep's warm start and
            // biased pass, which come before the positions next move, reuse
            // them). The relax pass used to reuse the anchors from the start
            // of the substep: its impulse then acted a substep's turn away
            // from the joint, and a pendulum lost 0.034 % of its amplitude a
            // period (half that at 8 substeps); Box2D's and bitroom's
            // distance joint lose none.
            if !use_bias {
                h.ra = sa.dq.rotate(ra0);
                h.rb = sb.dq.rotate(rb0);
                h.k = point_mass(&sa, &sb, h.ra, h.rb);
            }
            let (ra, rb) = (h.ra, h.rb);
            let cdot = sb.velocity_at(rb) - sa.velocity_at(ra);
            let impulse = if use_bias {
                let s = &ctx.soft;
                let separation = (sb.dp - sa.dp) + h.dc + (rb - ra);
                let b = h.k.mul(cdot + separation * s.bias_rate);
                Vec2::new(
                    -(s.mass_scale * b.x) - s.impulse_scale * h.linear.x,
                    -(s.mass_scale * b.y) - s.impulse_scale * h.linear.y,
                )
            } else {
                -h.k.mul(cdot)
            };
            h.linear += impulse;
            apply_point(&mut sa, &mut sb, ra, rb, impulse);
            solver::store(states, h.a, h.b, &sa, &sb);
        }
    }

    /// Writes the accumulated impulses back into the joints.
    pub(super) fn store(&self, joints: &mut [Joint]) {
        for (h, &ji) in self.hot.iter().zip(&self.index) {
            let i = &mut joints[ji as usize].impulses;
            i.linear = h.linear;
            if h.cold != NO_COLD {
                let c = &self.cold[h.cold as usize];
                i.spring = c.spring_impulse;
                i.motor = c.motor_impulse;
                i.lower = c.lower_impulse;
                i.upper = c.upper_impulse;
            }
        }
    }

    /// Joint indices, in the order solved.
    pub(super) fn joints(&self) -> impl Iterator<Item = u32> + '_ {
        self.index.iter().copied()
    }
}

/// The inverse of the point constraint's effective mass at anchors `ra`, `rb`.
#[inline]
fn point_mass(sa: &BodyState, sb: &BodyState, ra: Vec2, rb: Vec2) -> Sym22 {
    Sym22::point_mass(
        sa.inv_mass,
        sa.inv_inertia,
        sb.inv_mass,
        sb.inv_inertia,
        ra,
        rb,
    )
    .inverse()
}

/// Spring, motor and limits (in Box2D's order).
#[inline]
fn solve_angular(
    c: &mut Cold,
    sa: &mut BodyState,
    sb: &mut BodyState,
    ctx: &JointContext,
    use_bias: bool,
) {
    if (sa.inv_inertia + sb.inv_inertia).is_zero() {
        return;
    }
    let angle = if !(c.spring.enabled || c.enable_limit) {
        Scalar::ZERO
    } else if use_bias {
        c.angle
    } else {
        c.angle = c.angle0 + rotation_angle(sa.dq.inv_mul(sb.dq));
        c.angle
    };
    if c.spring.enabled {
        let err = normalize_angle(angle - c.target_angle);
        let i = c.spring.impulse(err, sb.w - sa.w, &mut c.spring_impulse);
        apply_angular(sa, sb, i);
    }
    if c.enable_motor {
        let cdot = sb.w - sa.w - c.motor_speed;
        let i = clamp_accumulate(
            &mut c.motor_impulse,
            -(c.axial_mass * cdot),
            c.max_motor_impulse,
        );
        apply_angular(sa, sb, i);
    }
    if c.enable_limit {
        limit_pair(
            sa,
            sb,
            (angle, c.lower, c.upper),
            c.axial_mass,
            (&mut c.lower_impulse, &mut c.upper_impulse),
            ctx,
            use_bias,
            |sa, sb| sb.w - sa.w,
            apply_angular,
        );
    }
}

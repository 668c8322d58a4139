//! The soft-step contact solver (after Box2D v3).
//!
//! Per step: prepare constraints once; then for each substep integrate
//! velocities, warm start, solve with soft bias, integrate positions, relax
//! without bias; finally apply restitution and store impulses for the next
//! step's warm start. Contacts are soft springs (stiffness in hertz, damping
//! ratio) relative to the substep, which keeps stacks stable with few
//! iterations. Body motion during the step accumulates in `dp`/`dq`, and the
//! contact separation is updated from those without re-running collision.

use crate::math::{Rot, Scalar, Vec2};

/// Soft constraint coefficients for one substep length.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Softness {
    pub bias_rate: Scalar,
    pub mass_scale: Scalar,
    pub impulse_scale: Scalar,
}

/// Soft constraint coefficients for a spring of `hertz` and damping `zeta` at substep `h`.
pub(crate) fn make_soft(hertz: Scalar, zeta: Scalar, h: Scalar) -> Softness {
    if hertz.is_zero() {
        return Softness {
            bias_rate: Scalar::ZERO,
            mass_scale: Scalar::ONE,
            impulse_scale: Scalar::ZERO,
        };
    }
    let omega = Scalar::TAU * hertz;
    let a1 = zeta.shl(1) + h * omega;
    let a2 = h * omega * a1;
    let a3 = Scalar::ONE / (Scalar::ONE + a2);
    Softness {
        bias_rate: omega / a1,
        mass_scale: a2 * a3,
        impulse_scale: a3,
    }
}

/// Velocity and accumulated motion of a body during a step.
///
/// Slot 0 is a dummy for static bodies: zero velocity, zero inverse mass, so
/// constraints against the ground need no branches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyState {
    pub v: Vec2,
    pub w: Scalar,
    pub dp: Vec2,
    pub dq: Rot,
    pub inv_mass: Scalar,
    pub inv_inertia: Scalar,
}

impl BodyState {
    pub const STATIC: BodyState = BodyState {
        v: Vec2::ZERO,
        w: Scalar::ZERO,
        dp: Vec2::ZERO,
        dq: Rot::IDENTITY,
        inv_mass: Scalar::ZERO,
        inv_inertia: Scalar::ZERO,
    };
}

impl BodyState {
    /// Velocity of the point at offset `r` from the centre of mass.
    #[inline(always)]
    pub fn velocity_at(&self, r: Vec2) -> Vec2 {
        self.v + Vec2::scalar_cross(self.w, r)
    }
}

/// Applies impulse `p` at offsets `ra`, `rb`: `−p` to A, `+p` to B.
#[inline(always)]
fn apply_impulse(sa: &mut BodyState, sb: &mut BodyState, ra: Vec2, rb: Vec2, p: Vec2) {
    sa.v = sa.v.mul_sub(sa.inv_mass, p);
    sa.w -= sa.inv_inertia * ra.cross(p);
    sb.v = sb.v.mul_add(sb.inv_mass, p);
    sb.w += sb.inv_inertia * rb.cross(p);
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConstraintPoint {
    pub anchor_a: Vec2,
    pub anchor_b: Vec2,
    pub base_separation: Scalar,
    pub relative_velocity: Scalar,
    pub normal_impulse: Scalar,
    pub tangent_impulse: Scalar,
    pub max_normal_impulse: Scalar,
    pub normal_mass: Scalar,
    pub tangent_mass: Scalar,
}

/// A contact prepared for solving.
impl ConstraintPoint {
    /// Adds `impulse` to the accumulated normal impulse, clamped so the
    /// contact only pushes; returns the impulse actually applied.
    #[inline(always)]
    fn accumulate_normal(&mut self, impulse: Scalar) -> Scalar {
        let new_impulse = (self.normal_impulse + impulse).max(Scalar::ZERO);
        let applied = new_impulse - self.normal_impulse;
        self.normal_impulse = new_impulse;
        self.max_normal_impulse = self.max_normal_impulse.max(applied);
        applied
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ContactConstraint {
    /// Index of the contact in the world's contact list.
    pub contact: u32,
    /// Solver-state slots (0 = static dummy).
    pub a: u32,
    pub b: u32,
    pub normal: Vec2,
    pub friction: Scalar,
    pub restitution: Scalar,
    pub softness: Softness,
    pub points: [ConstraintPoint; 2],
    pub count: u8,
}

#[inline(always)]
pub(crate) fn two(states: &mut [BodyState], a: u32, b: u32) -> (BodyState, BodyState) {
    (states[a as usize], states[b as usize])
}

#[inline(always)]
pub(crate) fn store(states: &mut [BodyState], a: u32, b: u32, sa: &BodyState, sb: &BodyState) {
    // Writes to the static dummy are harmless (its inverse mass is zero, so
    // its velocity never changes), but skip them to keep slot 0 pristine.
    if a != 0 {
        states[a as usize].v = sa.v;
        states[a as usize].w = sa.w;
    }
    if b != 0 {
        states[b as usize].v = sb.v;
        states[b as usize].w = sb.w;
    }
}

/// Applies last step's impulses at the start of each substep.
pub(crate) fn warm_start(constraints: &[ContactConstraint], states: &mut [BodyState]) {
    for c in constraints {
        let (mut sa, mut sb) = two(states, c.a, c.b);
        let tangent = c.normal.right_perp();
        for cp in &c.points[..c.count as usize] {
            let p = c.normal * cp.normal_impulse + tangent * cp.tangent_impulse;
            apply_impulse(&mut sa, &mut sb, cp.anchor_a, cp.anchor_b, p);
        }
        store(states, c.a, c.b, &sa, &sb);
    }
}

/// One iteration over all contacts; `use_bias` pushes overlapping shapes apart.
pub(crate) fn solve_contacts(
    constraints: &mut [ContactConstraint],
    states: &mut [BodyState],
    inv_h: Scalar,
    max_push: Scalar,
    use_bias: bool,
) {
    for c in constraints.iter_mut() {
        let (mut sa, mut sb) = two(states, c.a, c.b);
        let normal = c.normal;
        let tangent = normal.right_perp();
        let dp = sb.dp - sa.dp;
        for cp in &mut c.points[..c.count as usize] {
            // Current separation from the motion accumulated so far.
            let prx = sb.dq.rotate(cp.anchor_b) - sa.dq.rotate(cp.anchor_a);
            let s = (dp + prx).dot(normal) + cp.base_separation;
            let (mut bias, mut mass_scale, mut impulse_scale) =
                (Scalar::ZERO, Scalar::ONE, Scalar::ZERO);
            if s > Scalar::ZERO {
                // Speculative: allow approach up to contact.
                bias = s * inv_h;
            } else if use_bias {
                bias = (c.softness.bias_rate * s).max(-max_push);
                mass_scale = c.softness.mass_scale;
                impulse_scale = c.softness.impulse_scale;
            }
            let (ra, rb) = (cp.anchor_a, cp.anchor_b);
            let dv = sb.velocity_at(rb) - sa.velocity_at(ra);
            let vn = dv.dot(normal);
            let impulse =
                -cp.normal_mass * mass_scale * (vn + bias) - impulse_scale * cp.normal_impulse;
            let p = normal * cp.accumulate_normal(impulse);
            apply_impulse(&mut sa, &mut sb, ra, rb, p);
        }
        for cp in &mut c.points[..c.count as usize] {
            let (ra, rb) = (cp.anchor_a, cp.anchor_b);
            let dv = sb.velocity_at(rb) - sa.velocity_at(ra);
            let vt = dv.dot(tangent);
            let impulse = -cp.tangent_mass * vt;
            let max_friction = c.friction * cp.normal_impulse;
            let new_impulse = (cp.tangent_impulse + impulse).clamp(-max_friction, max_friction);
            let applied = new_impulse - cp.tangent_impulse;
            cp.tangent_impulse = new_impulse;
            let p = tangent * applied;
            apply_impulse(&mut sa, &mut sb, ra, rb, p);
        }
        store(states, c.a, c.b, &sa, &sb);
    }
}

/// Bounce: drive the approach speed to `−e · v_before` where it exceeded the threshold.
pub(crate) fn apply_restitution(
    constraints: &mut [ContactConstraint],
    states: &mut [BodyState],
    threshold: Scalar,
) {
    for c in constraints.iter_mut() {
        if c.restitution.is_zero() {
            continue;
        }
        let (mut sa, mut sb) = two(states, c.a, c.b);
        let normal = c.normal;
        for cp in &mut c.points[..c.count as usize] {
            if cp.relative_velocity > -threshold || cp.max_normal_impulse.is_zero() {
                continue;
            }
            let (ra, rb) = (cp.anchor_a, cp.anchor_b);
            let dv = sb.velocity_at(rb) - sa.velocity_at(ra);
            let vn = dv.dot(normal);
            let impulse = -cp.normal_mass * (vn + c.restitution * cp.relative_velocity);
            let p = normal * cp.accumulate_normal(impulse);
            apply_impulse(&mut sa, &mut sb, ra, rb, p);
        }
        store(states, c.a, c.b, &sa, &sb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softness_is_between_rigid_and_free() {
        let s = make_soft(
            Scalar::from_int(30),
            Scalar::from_int(10),
            Scalar::ratio(1, 240),
        );
        assert!(s.mass_scale > Scalar::ZERO && s.mass_scale < Scalar::ONE);
        assert!(s.impulse_scale > Scalar::ZERO && s.impulse_scale < Scalar::ONE);
        // a2/(1+a2) + 1/(1+a2) = 1 up to rounding.
        assert!((s.mass_scale + s.impulse_scale - Scalar::ONE).abs() < Scalar::from_bits(8));
    }
}

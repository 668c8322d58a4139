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
use core::sync::atomic::{AtomicI64, Ordering};

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

/// Velocity and accumulated motion of a body during a step, with its
/// inverse mass and inertia: a copy of a slot of [`States`] that one
/// constraint at a time works on (joints, contacts the colouring could not
/// place).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyState {
    pub v: Vec2,
    pub w: Scalar,
    pub dp: Vec2,
    pub dq: Rot,
    pub inv_mass: Scalar,
    pub inv_inertia: Scalar,
}

/// What the passes read and write of a body in its solver slot: its
/// velocity and its motion so far this step, 56 bytes in one cache line.
/// Every pass of the contact solver reads the two bodies of each contact
/// in colour order, all over the list: one line a body, where a state of
/// 72 bytes (with the inverse masses) spans two lines for most bodies.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(crate) struct SolverBody {
    pub v: Vec2,
    pub w: Scalar,
    pub dp: Vec2,
    pub dq: Rot,
}

/// A [`SolverBody`] that several threads read and write at once (see
/// `graph::SharedSlots`): its seven numbers (`v.x`, `v.y`, `w`, `dp.x`,
/// `dp.y`, `dq.c`, `dq.s`) in atomics, read and written relaxed, which
/// compiles to plain loads and stores; the threads order them by waiting
/// on one another between runs (`step::colours`).
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct SharedBody([AtomicI64; 7]);

impl SharedBody {
    /// Field `f` (in the order above).
    #[inline(always)]
    pub(crate) fn get(&self, f: usize) -> Scalar {
        Scalar::from_bits(self.0[f].load(Ordering::Relaxed))
    }

    /// Sets field `f`.
    #[inline(always)]
    pub(crate) fn set(&self, f: usize, x: Scalar) {
        self.0[f].store(x.to_bits(), Ordering::Relaxed);
    }

    /// The whole state.
    #[inline(always)]
    pub(crate) fn load(&self) -> SolverBody {
        SolverBody {
            v: Vec2::new(self.get(0), self.get(1)),
            w: self.get(2),
            dp: Vec2::new(self.get(3), self.get(4)),
            dq: Rot {
                c: self.get(5),
                s: self.get(6),
            },
        }
    }

    /// Sets the whole state.
    #[inline(always)]
    pub(crate) fn store(&self, b: &SolverBody) {
        self.store_velocity(b);
        self.store_motion(b);
    }

    /// Sets the velocity (`v`, `w`) to `b`'s.
    #[inline(always)]
    pub(crate) fn store_velocity(&self, b: &SolverBody) {
        for (i, x) in [b.v.x, b.v.y, b.w].into_iter().enumerate() {
            self.set(i, x);
        }
    }

    /// Sets the motion so far (`dp`, `dq`) to `b`'s.
    #[inline(always)]
    pub(crate) fn store_motion(&self, b: &SolverBody) {
        for (i, x) in [b.dp.x, b.dp.y, b.dq.c, b.dq.s].into_iter().enumerate() {
            self.set(3 + i, x);
        }
    }
}

/// The inverse mass and inertia of the body in a solver slot (zero for
/// the static dummy, slot 0), and its world centre of mass at the start
/// of the step (the dummy's is zero: a static body's is its own
/// `Body::center`). Preparing the contacts reads these, two slots a
/// contact, instead of the bodies' scattered records: 32 bytes a body in
/// slot order, where `Body` spans two lines of a list that does not fit
/// the cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InvMass {
    pub inv_mass: Scalar,
    pub inv_inertia: Scalar,
    pub center: Vec2,
}

/// The step's solver slots: slot 0 is a dummy for static bodies (zero
/// velocity, zero inverse mass, so constraints against the ground need no
/// branches), then one per awake body. Two parallel lists: the lines the
/// passes stream ([`SolverBody`]) and the inverse masses and centres
/// ([`InvMass`]), read only where a constraint is prepared or solved one at
/// a time.
#[derive(Clone, Debug, Default)]
pub(crate) struct States {
    pub(crate) bodies: Vec<SolverBody>,
    pub(crate) inv: Vec<InvMass>,
}

impl States {
    /// Only the static dummy (slot 0).
    pub(crate) fn reset(&mut self) {
        self.bodies.clear();
        self.inv.clear();
        self.push(BodyState::STATIC, Vec2::ZERO);
    }

    /// A slot for a body in state `s` whose centre of mass is `center`.
    pub(crate) fn push(&mut self, s: BodyState, center: Vec2) {
        self.bodies.push(SolverBody {
            v: s.v,
            w: s.w,
            dp: s.dp,
            dq: s.dq,
        });
        self.inv.push(InvMass {
            inv_mass: s.inv_mass,
            inv_inertia: s.inv_inertia,
            center,
        });
    }

    /// The centre of mass of the body in slot `s` (see [`InvMass`]).
    #[inline(always)]
    pub(crate) fn center(&self, s: u32) -> Vec2 {
        self.inv[s as usize].center
    }

    /// The number of slots (the dummy's included).
    pub(crate) fn len(&self) -> usize {
        self.bodies.len()
    }

    /// A copy of slot `s`.
    #[inline(always)]
    pub(crate) fn get(&self, s: u32) -> BodyState {
        let (b, m) = (&self.bodies[s as usize], &self.inv[s as usize]);
        BodyState {
            v: b.v,
            w: b.w,
            dp: b.dp,
            dq: b.dq,
            inv_mass: m.inv_mass,
            inv_inertia: m.inv_inertia,
        }
    }

    /// Whether the body in slot `s` moves in the solver (a non-zero
    /// inverse mass or inertia). For the debug builds' checks and tests.
    #[cfg(any(debug_assertions, test))]
    pub(crate) fn moves(&self, s: u32) -> bool {
        let m = &self.inv[s as usize];
        !(m.inv_mass.is_zero() && m.inv_inertia.is_zero())
    }
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

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConstraintPoint {
    /// Anchor offsets from the centres of mass, projected on the normal:
    /// `rA·n`, `rB·n`. The tangent lever arms are their negatives
    /// (`r × t = −r·n` for `t = right_perp(n)`).
    pub an_a: Scalar,
    pub an_b: Scalar,
    /// Normal lever arms `rA × n`, `rB × n`.
    pub rn_a: Scalar,
    pub rn_b: Scalar,
    /// Angular velocity change per unit normal impulse, `I⁻¹ (r × n)`.
    pub wn_a: Scalar,
    pub wn_b: Scalar,
    /// Angular velocity change per unit tangent impulse, `I⁻¹ (r × t)`.
    pub wt_a: Scalar,
    pub wt_b: Scalar,
    pub base_separation: Scalar,
    /// Separation at the bodies' current positions, as the last relax
    /// pass computed it (at preparation: at the step's start). Positions
    /// move only between a substep's solve and its relax, so the next
    /// substep's solve reads it instead of computing it again.
    pub separation: Scalar,
    pub normal_impulse: Scalar,
    pub tangent_impulse: Scalar,
    pub max_normal_impulse: Scalar,
    /// The effective masses, negated: every use is `−m · (…)`, so the
    /// negation is done once here rather than at every use (same bits).
    pub neg_normal_mass: Scalar,
    /// `−normal_mass · mass_scale` of the contact's softness: the same for
    /// every biased pass of the step, so formed once.
    pub soft_normal_mass: Scalar,
    pub neg_tangent_mass: Scalar,
}

/// A contact point prepared for solving.
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

/// A contact prepared for solving.
///
/// Everything that stays fixed during the step is folded in here once, so
/// the per-iteration work is a handful of products: the lever arms, the
/// angular response per unit impulse, and the linear response `m⁻¹ n` of
/// each body. An impulse `λ` along the normal then changes A by
/// `−λ·m_n_a`, `−λ·wn_a` and B by `+λ·m_n_b`, `+λ·wn_b`; along the tangent
/// by the same with `right_perp(m_n)` and `wt`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ContactConstraint {
    /// Solver-state slots (0 = static dummy).
    pub a: u32,
    pub b: u32,
    /// Its entry in the step's cold list ([`ContactCold`], which holds its
    /// place in the key-ordered [`Impulses`]).
    pub cold_index: u32,
    /// Whether one side is static or kinematic (the stiffer softness).
    pub against_static: bool,
    pub count: u8,
    pub normal: Vec2,
    /// `m⁻¹ n` for A and B.
    pub m_n_a: Vec2,
    pub m_n_b: Vec2,
    pub friction: Scalar,
    pub points: [ConstraintPoint; 2],
}

/// The parts of a prepared contact the substep loop never reads, kept
/// apart so the solver streams less memory. Only the contacts solved one
/// at a time (the overflow) and those that report hit events have one, in
/// key order: a bundled contact's restitution and approach speeds are its
/// bundle's ([`cold_entry`] finds a contact's entry by its place).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ContactCold {
    /// Index of the contact in the world's contact list.
    pub contact: u32,
    /// Its place in the step's key-ordered list ([`Impulses`]).
    pub place: u32,
    /// The contact reports hit events.
    pub hit_events: bool,
    pub restitution: Scalar,
    /// Normal approach speed at each point before solving (computed for
    /// contacts with restitution or hit events).
    pub relative_velocity: [Scalar; 2],
    /// The largest normal impulse of each point during the solve, copied
    /// here at its end (only when the step reports hit events, the one
    /// reader).
    pub max_normal_impulse: [Scalar; 2],
}

impl ContactCold {
    /// The entry of contact `ci`, at place `k` in the key-ordered list,
    /// before solving.
    pub(crate) fn new(ci: u32, k: u32, c: &super::Contact) -> ContactCold {
        ContactCold {
            contact: ci,
            place: k,
            hit_events: c.hit_events,
            restitution: c.restitution,
            relative_velocity: [Scalar::ZERO; 2],
            max_normal_impulse: [Scalar::ZERO; 2],
        }
    }
}

/// The cold entry of the contact at place `k` in the key-ordered list, if
/// it has one (`cold` is in key order).
pub(crate) fn cold_entry(cold: &mut [ContactCold], k: u32) -> Option<&mut ContactCold> {
    let i = cold.binary_search_by_key(&k, |e| e.place).ok()?;
    cold.get_mut(i)
}

/// What the solve accumulated at a contact's points, for the next warm
/// start and for hit events: one entry per solved contact, in the step's
/// key order, copied at the solve's end from
/// whichever solver held the contact. Half a line, so that copying a
/// window's impulses back writes about 256 KB, in any order, where copying
/// them into the cold entries wrote three times as much.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(32))]
pub(crate) struct Impulses {
    pub normal: [Scalar; 2],
    pub tangent: [Scalar; 2],
}

/// Applies impulse `lambda` whose linear responses per unit are `ma`, `mb`
/// and angular responses `w_a`, `w_b`: `−` to A, `+` to B.
///
/// `SAME` says `ma == mb` bit for bit (two bodies of one inverse mass, as
/// in every box-on-box contact of a pile): then `λ·ma` is `λ·mb`, so it is
/// formed once, with the same bits as forming it twice.
#[inline(always)]
fn apply<const SAME: bool>(
    sa: &mut BodyState,
    sb: &mut BodyState,
    (ma, mb): (Vec2, Vec2),
    (w_a, w_b): (Scalar, Scalar),
    lambda: Scalar,
) {
    if SAME {
        let d = Vec2::new(lambda * ma.x, lambda * ma.y);
        sa.v -= d;
        sb.v += d;
    } else {
        sa.v = sa.v.mul_sub(lambda, ma);
        sb.v = sb.v.mul_add(lambda, mb);
    }
    sa.w -= lambda * w_a;
    sb.w += lambda * w_b;
}

/// Normal relative velocity at a point: `(vB − vA)·n + ωB (rB × n) − ωA (rA × n)`.
#[inline(always)]
fn normal_speed(sa: &BodyState, sb: &BodyState, normal: Vec2, cp: &ConstraintPoint) -> Scalar {
    (sb.v - sa.v).dot(normal) + sb.w * cp.rn_b - sa.w * cp.rn_a
}

/// Separation at a point after the bodies moved by `dpn` along the normal
/// and turned by `qa`, `qb`: `(q r)·n = cos·(r·n) + sin·(r × n)`.
#[inline(always)]
fn separation(dpn: Scalar, qa: Rot, qb: Rot, cp: &ConstraintPoint) -> Scalar {
    dpn + (qb.c * cp.an_b + qb.s * cp.rn_b) - (qa.c * cp.an_a + qa.s * cp.rn_a) + cp.base_separation
}

#[inline(always)]
pub(crate) fn two(states: &mut States, a: u32, b: u32) -> (BodyState, BodyState) {
    (states.get(a), states.get(b))
}

#[inline(always)]
pub(crate) fn store(states: &mut States, a: u32, b: u32, sa: &BodyState, sb: &BodyState) {
    // Writes to the static dummy are harmless (its inverse mass is zero, so
    // its velocity never changes), but skip them to keep slot 0 pristine.
    if a != 0 {
        states.bodies[a as usize].v = sa.v;
        states.bodies[a as usize].w = sa.w;
    }
    if b != 0 {
        states.bodies[b as usize].v = sb.v;
        states.bodies[b as usize].w = sb.w;
    }
}

/// Applies last step's impulses at the start of each substep.
pub(crate) fn warm_start(constraints: &[ContactConstraint], states: &mut States) {
    for c in constraints {
        if c.m_n_a == c.m_n_b {
            warm_start_contact::<true>(c, states);
        } else {
            warm_start_contact::<false>(c, states);
        }
    }
}

/// [`warm_start`] for one contact; `SAME` as in [`apply`]. Fixed-point
/// sums are exact, so applying the normal and the tangent impulse one
/// after the other gives the bits of applying their sum.
#[inline(always)]
fn warm_start_contact<const SAME: bool>(c: &ContactConstraint, states: &mut States) {
    let (mut sa, mut sb) = two(states, c.a, c.b);
    let m_n = (c.m_n_a, c.m_n_b);
    let m_t = (c.m_n_a.right_perp(), c.m_n_b.right_perp());
    for cp in &c.points[..c.count as usize] {
        apply::<SAME>(&mut sa, &mut sb, m_n, (cp.wn_a, cp.wn_b), cp.normal_impulse);
        apply::<SAME>(
            &mut sa,
            &mut sb,
            m_t,
            (cp.wt_a, cp.wt_b),
            cp.tangent_impulse,
        );
    }
    store(states, c.a, c.b, &sa, &sb);
}

/// One iteration over all contacts; `use_bias` pushes overlapping shapes apart.
pub(crate) fn solve_contacts(
    constraints: &mut [ContactConstraint],
    states: &mut States,
    soft: &[Softness; 2],
    inv_h: Scalar,
    max_push: Scalar,
    use_bias: bool,
) {
    if use_bias {
        solve_contacts_impl::<true>(constraints, states, soft, inv_h, max_push);
    } else {
        solve_contacts_impl::<false>(constraints, states, soft, inv_h, max_push);
    }
}

/// [`solve_contacts`] with the bias choice known at compile time, so the
/// relax pass carries no soft-constraint arithmetic at all.
#[inline(always)]
fn solve_contacts_impl<const USE_BIAS: bool>(
    constraints: &mut [ContactConstraint],
    states: &mut States,
    soft: &[Softness; 2],
    inv_h: Scalar,
    max_push: Scalar,
) {
    for c in constraints.iter_mut() {
        if c.m_n_a == c.m_n_b {
            solve_contact::<USE_BIAS, true>(c, states, soft, inv_h, max_push);
        } else {
            solve_contact::<USE_BIAS, false>(c, states, soft, inv_h, max_push);
        }
    }
}

/// One contact of [`solve_contacts_impl`]; `SAME` as in [`apply`].
#[inline(always)]
fn solve_contact<const USE_BIAS: bool, const SAME: bool>(
    c: &mut ContactConstraint,
    states: &mut States,
    soft: &[Softness; 2],
    inv_h: Scalar,
    max_push: Scalar,
) {
    let (mut sa, mut sb) = two(states, c.a, c.b);
    let normal = c.normal;
    let tangent = normal.right_perp();
    let (qa, qb) = (sa.dq, sb.dq);
    let dpn = if USE_BIAS {
        Scalar::ZERO
    } else {
        (sb.dp - sa.dp).dot(normal)
    };
    let m_n = (c.m_n_a, c.m_n_b);
    let m_t = (c.m_n_a.right_perp(), c.m_n_b.right_perp());
    let softness = soft[c.against_static as usize];
    for cp in &mut c.points[..c.count as usize] {
        let s = if USE_BIAS {
            // The bodies have not moved since the last relax pass (or
            // since preparation, in the first substep).
            cp.separation
        } else {
            let s = separation(dpn, qa, qb, cp);
            cp.separation = s;
            s
        };
        let vn = normal_speed(&sa, &sb, normal, cp);
        // Rigid rows (speculative points, the relax pass) have mass
        // scale one and impulse scale zero; multiplying by exactly one
        // and subtracting exactly zero change no bits, so they skip it.
        let impulse = if s > Scalar::ZERO {
            // Speculative: allow approach up to contact.
            cp.neg_normal_mass * (vn + s * inv_h)
        } else if USE_BIAS {
            let bias = (softness.bias_rate * s).max(-max_push);
            // `−m·scale·(vn + bias)`, with `−m·scale` formed at preparation.
            cp.soft_normal_mass * (vn + bias) - softness.impulse_scale * cp.normal_impulse
        } else {
            cp.neg_normal_mass * vn
        };
        let applied = cp.accumulate_normal(impulse);
        apply::<SAME>(&mut sa, &mut sb, m_n, (cp.wn_a, cp.wn_b), applied);
    }
    // Friction only in the relax pass (see `graph::solve`).
    if USE_BIAS {
        store(states, c.a, c.b, &sa, &sb);
        return;
    }
    for cp in &mut c.points[..c.count as usize] {
        // r × t = −r·n.
        let vt = (sb.v - sa.v).dot(tangent) + sa.w * cp.an_a - sb.w * cp.an_b;
        let impulse = cp.neg_tangent_mass * vt;
        let max_friction = c.friction * cp.normal_impulse;
        let new_impulse = (cp.tangent_impulse + impulse).clamp(-max_friction, max_friction);
        let applied = new_impulse - cp.tangent_impulse;
        cp.tangent_impulse = new_impulse;
        apply::<SAME>(&mut sa, &mut sb, m_t, (cp.wt_a, cp.wt_b), applied);
    }
    store(states, c.a, c.b, &sa, &sb);
}

/// Bounce: drive the approach speed to `−e · v_before` where it exceeded the threshold.
pub(crate) fn apply_restitution(
    constraints: &mut [ContactConstraint],
    cold: &[ContactCold],
    states: &mut States,
    threshold: Scalar,
) {
    for c in constraints.iter_mut() {
        let Some(cold) = cold.get(c.cold_index as usize) else {
            continue;
        };
        if cold.restitution.is_zero() {
            continue;
        }
        let (mut sa, mut sb) = two(states, c.a, c.b);
        let normal = c.normal;
        let m_n = (c.m_n_a, c.m_n_b);
        for (cp, &rv) in c.points[..c.count as usize]
            .iter_mut()
            .zip(&cold.relative_velocity)
        {
            if rv > -threshold || cp.max_normal_impulse.is_zero() {
                continue;
            }
            let vn = normal_speed(&sa, &sb, normal, cp);
            let impulse = cp.neg_normal_mass * (vn + cold.restitution * rv);
            let applied = cp.accumulate_normal(impulse);
            apply::<false>(&mut sa, &mut sb, m_n, (cp.wn_a, cp.wn_b), applied);
        }
        store(states, c.a, c.b, &sa, &sb);
    }
}

/// Copies the accumulated impulses into the key-ordered list (and, when
/// `max` — the step reports hit events —, the largest normal impulses into
/// the cold entries).
pub(crate) fn store_impulses(
    constraints: &[ContactConstraint],
    (impulses, cold): (&mut [Impulses], &mut [ContactCold]),
    max: bool,
) {
    for c in constraints {
        // Every constraint solved one at a time has an entry.
        let Some(cold) = cold.get_mut(c.cold_index as usize) else {
            continue;
        };
        if let Some(out) = impulses.get_mut(cold.place as usize) {
            for (j, cp) in c.points.iter().enumerate() {
                out.normal[j] = cp.normal_impulse;
                out.tangent[j] = cp.tangent_impulse;
            }
        }
        if max {
            for (j, cp) in c.points.iter().enumerate() {
                cold.max_normal_impulse[j] = cp.max_normal_impulse;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A solver slot is one whole cache line on every target (the passes
    /// read each contact's two bodies all over the list).
    #[test]
    fn a_solver_body_is_one_line() {
        use core::mem::{align_of, size_of};
        assert_eq!(
            (size_of::<SolverBody>(), align_of::<SolverBody>()),
            (64, 64)
        );
    }

    /// A contact's impulses are half a line (what the step writes and
    /// reads per solved contact).
    #[test]
    fn impulses_are_half_a_line() {
        use core::mem::{align_of, size_of};
        assert_eq!((size_of::<Impulses>(), align_of::<Impulses>()), (32, 32));
    }

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

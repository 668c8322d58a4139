//! Revolute joint: the two anchors coincide and the bodies rotate freely
//! about them, with optional angle limits, a motor and an angular spring.
//!
//! Impulse slots: `linear` (point constraint), `spring`, `motor`, `lower`,
//! `upper` (all angular).
//!
//! Revolute joints are the bulk of most joint scenes (the benchmark's
//! 19 800-joint grid, ragdolls, chains), so they are solved apart from the
//! other types: plain ones (no limit, motor or spring) coloured into
//! bundles of [`LANES`] solved lane by lane at once (see [`Revolutes`] for
//! the order), the others from a compact list, the hot part every revolute
//! needs (104 bytes) apart from the cold part only joints with a limit,
//! motor or spring use.

use super::spring::{validate_axis, Spring};
use super::{
    apply_angular, apply_point, clamp_accumulate, inv_or_zero, limit_pair, rotation_angle, Frame,
    Joint, JointContext, Masses, Sym22,
};
use crate::dynamics::graph::{gather_motion, gather_v, scatter_v};
use crate::dynamics::solver::{self, BodyState, States};
use crate::math::{normalize_angle, Scalar, Vec2, Wide, LANES};
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

/// [`LANES`] plain revolutes that move no body in common, solved lane by
/// lane at once: each lane computes exactly what [`Revolutes::solve`]
/// computes for its joint, product for product (`Wide * Wide` is the
/// scalar product in every lane). Empty lanes have zero masses, anchors
/// and impulses, so every impulse they produce is zero.
#[derive(Clone, Copy, Debug)]
struct Bundle {
    /// Solver slots of the bodies (0 for empty lanes).
    a: [u32; LANES],
    b: [u32; LANES],
    /// The joint of each lane, or [`EMPTY`].
    joint: [u32; LANES],
    /// Inverse masses and inertias of A and B.
    ma: Wide,
    ia: Wide,
    mb: Wide,
    ib: Wide,
    /// As in [`Hot`]: `dc`, the current anchors, the inverse effective
    /// mass, the accumulated impulse; and the anchors at the start of the
    /// step.
    dc: [Wide; 2],
    ra: [Wide; 2],
    rb: [Wide; 2],
    k: [Wide; 3],
    linear: [Wide; 2],
    ra0: [Wide; 2],
    rb0: [Wide; 2],
}

/// An empty lane.
const EMPTY: u32 = u32::MAX;

/// The colours a plain revolute may take (bits of a slot's mask); one that
/// finds none is solved one at a time with the others.
const COLORS: usize = 64;

/// Plain revolutes coloured together: a body's colours start empty in each
/// window of this many, so each colour's pass stays among the bodies of
/// its window (neighbours in the joint list), as the contacts' windows do.
const WINDOW: u32 = 1024;

/// The values a lane of a [`Bundle`] holds, in the order of
/// [`Bundle::from_lanes`].
const LANE_VALUES: usize = 19;

/// What a [`Bundle`] holds while its lanes are filled: the slots and
/// joint, and each lane's values side by side, written as each joint
/// comes.
#[derive(Clone, Copy, Debug)]
struct Lanes {
    used: usize,
    slots: [[u32; LANES]; 3],
    values: [[Scalar; LANE_VALUES]; LANES],
}

impl Lanes {
    const EMPTY: Lanes = Lanes {
        used: 0,
        slots: [[0; LANES], [0; LANES], [EMPTY; LANES]],
        values: [[Scalar::ZERO; LANE_VALUES]; LANES],
    };
}

/// The prepared revolute joints of a step.
///
/// # Order
///
/// Plain revolutes (no limit, motor or spring) are taken in joint order, in
/// windows of [`WINDOW`], and coloured greedily within their window: the
/// lowest colour that neither of its moving bodies has yet in the window
/// (bodies that do not move in the solver, static or kinematic, never
/// conflict). They are solved window by window, colour by colour, in
/// bundles of [`LANES`], as Box2D v3 solves its joints colour by colour
/// (the windows keep each colour's pass among neighbouring bodies: a
/// quarter fewer cache misses on the 19 800-joint grid than colouring the
/// whole list). No two joints of a window's colour move the same body, so
/// the result is that of solving them one at a time in (window, colour,
/// joint) order, whatever the lane count. The revolutes with a
/// limit, motor or spring, and plain ones that found no free colour,
/// follow one at a time in joint order. The colouring is a function of the
/// joint list and of which bodies are awake, so it needs no state of its
/// own.
#[derive(Clone, Debug, Default)]
pub(crate) struct Revolutes {
    hot: Vec<Hot>,
    /// Anchors relative to the centres at the start of the step (A, B),
    /// parallel to `hot`.
    anchors0: Vec<(Vec2, Vec2)>,
    /// Index of each joint in the world's joint list, parallel to `hot`.
    index: Vec<u32>,
    cold: Vec<Cold>,
    /// Per solver slot, the colours its plain revolutes hold in the window
    /// numbered first.
    masks: Vec<(u32, u64)>,
    /// Plain revolutes coloured so far (the window is `plain / WINDOW`).
    plain: u32,
    /// The bundles of the windows closed, in solving order (window,
    /// colour, joint).
    bundles: Vec<Bundle>,
    /// Per colour, the current window's full bundles.
    window: Vec<Vec<Bundle>>,
    /// Per colour, the bundle being filled.
    filling: Vec<Lanes>,
}

impl Revolutes {
    /// Starts a step with `slots` solver slots.
    pub(super) fn begin(&mut self, slots: usize) {
        self.hot.clear();
        self.anchors0.clear();
        self.index.clear();
        self.cold.clear();
        self.masks.clear();
        self.masks.resize(slots, (u32::MAX, 0));
        self.plain = 0;
        self.bundles.clear();
        self.window.resize_with(COLORS, Vec::new);
        self.window.iter_mut().for_each(Vec::clear);
        // Every colour's lanes are empty after `finish`; what a full bundle
        // left in them is overwritten before it is read.
        self.filling.resize(COLORS, Lanes::EMPTY);
        self.filling.iter_mut().for_each(|l| l.used = 0);
    }

    /// Colours plain revolute `ji` and puts it in its colour's bundle;
    /// `false` when it finds no free colour.
    fn add_plain(&mut self, ji: u32, h: &Hot, anchors0: (Vec2, Vec2), m: &Masses) -> bool {
        let (a, b) = (h.a as usize, h.b as usize);
        let window = self.plain / WINDOW;
        let mask = |m: (u32, u64)| if m.0 == window { m.1 } else { 0 };
        let (mask_a, mask_b) = (mask(self.masks[a]), mask(self.masks[b]));
        let move_a = !(m.ma.is_zero() && m.ia.is_zero());
        let move_b = !(m.mb.is_zero() && m.ib.is_zero());
        let used = if move_a { mask_a } else { 0 } | if move_b { mask_b } else { 0 };
        if used == u64::MAX {
            return false;
        }
        let c = (!used).trailing_zeros();
        if move_a {
            self.masks[a] = (window, mask_a | 1 << c);
        }
        if move_b {
            self.masks[b] = (window, mask_b | 1 << c);
        }
        let l = &mut self.filling[c as usize];
        let i = l.used;
        l.slots[0][i] = h.a;
        l.slots[1][i] = h.b;
        l.slots[2][i] = ji;
        let (ra0, rb0) = anchors0;
        l.values[i] = [
            m.ma, m.ia, m.mb, m.ib, h.dc.x, h.dc.y, h.ra.x, h.ra.y, h.rb.x, h.rb.y, h.k.a11,
            h.k.a12, h.k.a22, h.linear.x, h.linear.y, ra0.x, ra0.y, rb0.x, rb0.y,
        ];
        l.used += 1;
        if l.used == LANES {
            self.window[c as usize].push(Bundle::from_lanes(l));
            l.used = 0;
        }
        self.plain += 1;
        if self.plain.is_multiple_of(WINDOW) {
            self.close_window();
        }
        true
    }

    /// Closes the window: each colour's last bundle, and every bundle of
    /// the window after those of the windows before, colour by colour.
    fn close_window(&mut self) {
        for (l, list) in self.filling.iter_mut().zip(&mut self.window) {
            if l.used > 0 {
                // The lanes left empty: zeros (what a full bundle wrote
                // there before is stale).
                for i in l.used..LANES {
                    l.slots[0][i] = 0;
                    l.slots[1][i] = 0;
                    l.slots[2][i] = EMPTY;
                    l.values[i] = [Scalar::ZERO; LANE_VALUES];
                }
                list.push(Bundle::from_lanes(l));
                l.used = 0;
            }
            self.bundles.append(list);
        }
    }

    /// Closes the last window (after the last [`Revolutes::push`]).
    pub(super) fn finish(&mut self) {
        if !self.plain.is_multiple_of(WINDOW) {
            self.close_window();
        }
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
        let hot = Hot {
            a,
            b,
            cold,
            dc: f.dc,
            ra: f.ra,
            rb: f.rb,
            k: Sym22::point_mass(m.ma, m.ia, m.mb, m.ib, f.ra, f.rb).inverse(),
            linear: j.impulses.linear,
        };
        if cold == NO_COLD && self.add_plain(ji, &hot, (f.ra, f.rb), m) {
            return;
        }
        self.index.push(ji);
        self.anchors0.push((f.ra, f.rb));
        self.hot.push(hot);
    }

    /// Starts a substep: the accumulated impulses, at this substep's
    /// anchors (those the last relax pass left, or the prepared ones).
    pub(super) fn warm_start(&mut self, states: &mut States) {
        for c in &self.bundles {
            let (mut va, mut vb) = (gather_v(states, &c.a), gather_v(states, &c.b));
            c.apply(&mut va, &mut vb, c.ra, c.rb, c.linear);
            scatter_v(states, &c.a, &va);
            scatter_v(states, &c.b, &vb);
        }
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
    pub(super) fn solve(&mut self, states: &mut States, ctx: &JointContext, use_bias: bool) {
        if use_bias {
            for c in &mut self.bundles {
                c.solve::<true>(states, ctx);
            }
        } else {
            for c in &mut self.bundles {
                c.solve::<false>(states, ctx);
            }
        }
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
        for c in &self.bundles {
            let (x, y) = (c.linear[0].to_array(), c.linear[1].to_array());
            for (i, &ji) in c.joint.iter().enumerate() {
                if let Some(j) = joints.get_mut(ji as usize) {
                    j.impulses.linear = Vec2::new(x[i], y[i]);
                }
            }
        }
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
        let bundled = self.bundles.iter().flat_map(|c| c.joint);
        bundled
            .filter(|&j| j != EMPTY)
            .chain(self.index.iter().copied())
    }
}

impl Bundle {
    /// The bundle of filled lanes `l` (the others empty).
    fn from_lanes(l: &Lanes) -> Bundle {
        let w: [Wide; LANE_VALUES] = core::array::from_fn(|f| Wide::from_fn(|i| l.values[i][f]));
        let [a, b, joint] = l.slots;
        Bundle {
            a,
            b,
            joint,
            ma: w[0],
            ia: w[1],
            mb: w[2],
            ib: w[3],
            dc: [w[4], w[5]],
            ra: [w[6], w[7]],
            rb: [w[8], w[9]],
            k: [w[10], w[11], w[12]],
            linear: [w[13], w[14]],
            ra0: [w[15], w[16]],
            rb0: [w[17], w[18]],
        }
    }

    /// [`apply_point`] lane by lane: impulse `p` at anchors `ra`, `rb`.
    #[inline(always)]
    fn apply(
        &self,
        va: &mut [Wide; 3],
        vb: &mut [Wide; 3],
        ra: [Wide; 2],
        rb: [Wide; 2],
        p: [Wide; 2],
    ) {
        let la = ra[0] * p[1] - ra[1] * p[0];
        let lb = rb[0] * p[1] - rb[1] * p[0];
        va[0] -= self.ma * p[0];
        va[1] -= self.ma * p[1];
        va[2] -= self.ia * la;
        vb[0] += self.mb * p[0];
        vb[1] += self.mb * p[1];
        vb[2] += self.ib * lb;
    }

    /// One iteration of [`Revolutes::solve`] for every lane; `USE_BIAS`
    /// corrects position errors.
    #[inline(always)]
    fn solve<const USE_BIAS: bool>(&mut self, states: &mut States, ctx: &JointContext) {
        let (mut va, mut vb) = (gather_v(states, &self.a), gather_v(states, &self.b));
        let [dax, day, qac, qas] = gather_motion(states, &self.a);
        let [dbx, dby, qbc, qbs] = gather_motion(states, &self.b);
        if !USE_BIAS {
            // The anchors turned to the current rotations (`Rot::rotate`)
            // and their effective mass (`point_mass`).
            let [x, y] = self.ra0;
            self.ra = [qac * x - qas * y, qas * x + qac * y];
            let [x, y] = self.rb0;
            self.rb = [qbc * x - qbs * y, qbs * x + qbc * y];
            let ([rax, ray], [rbx, rby]) = (self.ra, self.rb);
            let m = self.ma + self.mb;
            let (iay, iby) = (self.ia * ray, self.ib * rby);
            let (iax, ibx) = (self.ia * rax, self.ib * rbx);
            let a11 = (m + iay * ray + iby * rby).to_array();
            let a12 = (-(iay * rax) - iby * rbx).to_array();
            let a22 = (m + iax * rax + ibx * rbx).to_array();
            // The inverse lane by lane (a division at double width).
            let mut k = [[Scalar::ZERO; LANES]; 3];
            for i in 0..LANES {
                let inv = Sym22 {
                    a11: a11[i],
                    a12: a12[i],
                    a22: a22[i],
                }
                .inverse();
                k[0][i] = inv.a11;
                k[1][i] = inv.a12;
                k[2][i] = inv.a22;
            }
            self.k = k.map(Wide::from_array);
        }
        let ([rax, ray], [rbx, rby]) = (self.ra, self.rb);
        // `sb.velocity_at(rb) − sa.velocity_at(ra)`: `v + (−w·r.y, w·r.x)`.
        let cx = (vb[0] + (-vb[2]) * rby) - (va[0] + (-va[2]) * ray);
        let cy = (vb[1] + vb[2] * rbx) - (va[1] + va[2] * rax);
        let [k11, k12, k22] = self.k;
        let impulse = if USE_BIAS {
            let s = &ctx.soft;
            let rate = Wide::splat(s.bias_rate);
            let sx = ((dbx - dax) + self.dc[0]) + (rbx - rax);
            let sy = ((dby - day) + self.dc[1]) + (rby - ray);
            let (bx, by) = (cx + sx * rate, cy + sy * rate);
            let (bx, by) = (k11 * bx + k12 * by, k12 * bx + k22 * by);
            let (ms, is) = (Wide::splat(s.mass_scale), Wide::splat(s.impulse_scale));
            [
                -(ms * bx) - is * self.linear[0],
                -(ms * by) - is * self.linear[1],
            ]
        } else {
            [-(k11 * cx + k12 * cy), -(k12 * cx + k22 * cy)]
        };
        self.linear[0] += impulse[0];
        self.linear[1] += impulse[1];
        self.apply(&mut va, &mut vb, self.ra, self.rb, impulse);
        scatter_v(states, &self.a, &va);
        scatter_v(states, &self.b, &vb);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamics::joint::{self, JointSolver};
    use crate::math::Rot;

    impl Revolutes {
        /// The same joints, every one in the one-at-a-time list, in the
        /// order this one solves them.
        fn unbundled(&self) -> Revolutes {
            let mut r = Revolutes {
                cold: self.cold.clone(),
                ..Revolutes::default()
            };
            for c in &self.bundles {
                let w = |x: &Wide| x.to_array();
                let (dc, ra, rb) = (
                    c.dc.each_ref().map(w),
                    c.ra.each_ref().map(w),
                    c.rb.each_ref().map(w),
                );
                let (k, linear) = (c.k.each_ref().map(w), c.linear.each_ref().map(w));
                let (ra0, rb0) = (c.ra0.each_ref().map(w), c.rb0.each_ref().map(w));
                for (i, &ji) in c.joint.iter().enumerate() {
                    if ji == EMPTY {
                        continue;
                    }
                    let v = |x: &[[Scalar; LANES]; 2]| Vec2::new(x[0][i], x[1][i]);
                    r.hot.push(Hot {
                        a: c.a[i],
                        b: c.b[i],
                        cold: NO_COLD,
                        dc: v(&dc),
                        ra: v(&ra),
                        rb: v(&rb),
                        k: Sym22 {
                            a11: k[0][i],
                            a12: k[1][i],
                            a22: k[2][i],
                        },
                        linear: v(&linear),
                    });
                    r.anchors0.push((v(&ra0), v(&rb0)));
                    r.index.push(ji);
                }
            }
            r.hot.extend_from_slice(&self.hot);
            r.anchors0.extend_from_slice(&self.anchors0);
            r.index.extend_from_slice(&self.index);
            r
        }
    }

    /// The bundles of plain revolutes compute exactly what the
    /// one-at-a-time path computes for the same joints in their order
    /// (window, colour, joint): warm start, biased pass and relax pass, on
    /// `joint_grid`'s state after a few steps (bodies moving and turned,
    /// every joint with impulses). Also: no two lanes of a bundle move the
    /// same body, and every revolute is solved once.
    #[test]
    fn bundles_solve_as_one_at_a_time_in_colour_order() {
        let mut w = crate::scene::build_named("joint_grid").expect("a named scene");
        for _ in 0..3 {
            w.step();
        }
        let st = &w.state;
        // Solver states as a step's preparation makes them, with some
        // motion so far (the relax pass turns the anchors by it).
        let mut slot_of = vec![0u32; st.bodies.len()];
        let mut states = States::default();
        states.reset();
        for (i, b) in st.bodies.iter().enumerate() {
            if b.is_simulated() {
                slot_of[i] = states.len() as u32;
                let c = &st.body_config[i];
                let k = (i % 7) as i64 - 3;
                states.push(BodyState {
                    v: b.linear_velocity,
                    w: b.angular_velocity,
                    dp: Vec2::new(Scalar::from_bits(k << 20), Scalar::from_bits(-k << 19)),
                    dq: Rot::IDENTITY.integrate(Scalar::from_bits(k << 22)),
                    inv_mass: c.inv_mass,
                    inv_inertia: c.inv_inertia,
                });
            }
        }
        let moves = |s: u32| states.moves(s);
        let h = Scalar::ONE / Scalar::from_int(240);
        let ctx = JointContext {
            h,
            inv_h: Scalar::from_int(240),
            soft: solver::make_soft(Scalar::from_int(60), Scalar::from_int(5), h),
        };
        let mut js = JointSolver::default();
        let mut links = Vec::new();
        joint::prepare(
            (&st.joints, &st.bodies, &st.body_config),
            &slot_of,
            &states,
            &ctx,
            &mut js,
            &mut links,
        );
        let bundled = &mut js.revolutes;
        assert!(
            bundled.hot.is_empty(),
            "joint_grid's joints are all plain and bundled"
        );
        // Every joint with a simulated body (the grid hangs from a row of
        // seven static bodies, joined to each other too), once.
        let solved: Vec<u32> = (0..st.joints.len() as u32)
            .filter(|&j| {
                let j = &st.joints[j as usize];
                slot_of[j.body_a as usize] != 0 || slot_of[j.body_b as usize] != 0
            })
            .collect();
        let mut seen: Vec<u32> = bundled.joints().collect();
        seen.sort_unstable();
        assert!(
            seen == solved,
            "{} joints solved of {}",
            seen.len(),
            solved.len()
        );
        for c in bundled.bundles.iter() {
            let mut slots: Vec<u32> =
                c.a.iter()
                    .chain(&c.b)
                    .copied()
                    .filter(|&s| moves(s))
                    .collect();
            let n = slots.len();
            slots.sort_unstable();
            slots.dedup();
            assert_eq!(slots.len(), n, "two lanes of a bundle move one body");
        }
        let mut one = bundled.unbundled();
        let (mut s1, mut s2) = (states.clone(), states.clone());
        for _ in 0..2 {
            bundled.warm_start(&mut s1);
            one.warm_start(&mut s2);
            bundled.solve(&mut s1, &ctx, true);
            one.solve(&mut s2, &ctx, true);
            bundled.solve(&mut s1, &ctx, false);
            one.solve(&mut s2, &ctx, false);
        }
        let same = (s1.bodies.iter().zip(&s2.bodies)).all(|(x, y)| x.v == y.v && x.w == y.w);
        assert!(same, "the bundles' velocities differ from one at a time");
        assert!(
            s1.bodies
                .iter()
                .zip(&states.bodies)
                .any(|(x, y)| x.v != y.v),
            "the passes moved nothing"
        );
        let (mut j1, mut j2) = (st.joints.clone(), st.joints.clone());
        bundled.store(&mut j1);
        one.store(&mut j2);
        assert!(j1
            .iter()
            .zip(&j2)
            .all(|(x, y)| x.impulses.linear == y.impulses.linear));
    }
}

//! Revolute joint: the two anchors coincide and the bodies rotate freely
//! about them, with optional angle limits, a motor and an angular spring.
//!
//! Impulse slots: `linear` (point constraint), `spring`, `motor`, `lower`,
//! `upper` (all angular).
//!
//! Revolute joints are the bulk of most joint scenes (the benchmark's
//! 19 800-joint grid, ragdolls, chains), so they are solved apart from the
//! other types: coloured into bundles of [`LANES`] solved lane by lane at
//! once (see [`Revolutes`] for the order), those with a limit, motor or
//! spring in bundles of their own (the others skip that work); the few that
//! find no colour from a compact list, the hot part every revolute needs
//! (104 bytes) apart from the cold part only joints with a limit, motor or
//! spring use.

use super::spring::{validate_axis, Spring};
use super::{
    apply_angular, apply_point, clamp_accumulate, inv_or_zero, limit_pair, rotation_angle, Frame,
    Joint, JointContext, Masses, Sym22,
};
use crate::dynamics::graph::{gather_motion, gather_v, scatter_v};
use crate::dynamics::solver::{self, BodyState, Softness, States};
use crate::math::{normalize_angle, Mask, Rot, Scalar, Vec2, Wide, LANES};
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

/// [`LANES`] revolutes that move no body in common, solved lane by
/// lane at once: each lane computes exactly what [`Revolutes::solve`]
/// computes for its joint, product for product (`Wide * Wide` is the
/// scalar product in every lane). Empty lanes have zero masses, anchors
/// and impulses, so every impulse they produce is zero.
#[derive(Clone, Copy, Debug, Default)]
struct Bundle {
    /// Solver slots of the bodies (0 for empty lanes).
    a: [u32; LANES],
    b: [u32; LANES],
    /// The joint of each lane, or [`EMPTY`].
    joint: [u32; LANES],
    /// Its lanes' limits, motors and springs (an index in
    /// `Revolutes::cold_lanes`), or `NO_COLD` when no lane has one.
    cold: u32,
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

/// The colours a revolute may take (bits of a slot's mask); one that
/// finds none is solved one at a time, after the bundles.
const COLORS: usize = 64;

/// Revolutes coloured together: a body's colours start empty in each
/// window of this many, so each colour's pass stays among the bodies of
/// its window (neighbours in the joint list), as the contacts' windows do.
const WINDOW: u32 = 1024;

/// The values a lane of a [`Bundle`] holds, in the order of
/// [`Bundle::fill`].
const LANE_VALUES: usize = 19;

/// What a [`Bundle`] holds while its lanes are filled: the slots and
/// joint, and each lane's values side by side, written as each joint
/// comes.
#[derive(Clone, Copy, Debug)]
struct Lanes {
    used: usize,
    slots: [[u32; LANES]; 4],
    values: [[Scalar; LANE_VALUES]; LANES],
}

impl Lanes {
    const EMPTY: Lanes = Lanes {
        used: 0,
        slots: [[0; LANES], [0; LANES], [EMPTY; LANES], [NO_COLD; LANES]],
        values: [[Scalar::ZERO; LANE_VALUES]; LANES],
    };
}

/// The limits, motors and springs of a bundle's lanes ([`Cold`], lane by
/// lane; zeros and cleared flags in lanes without).
#[derive(Clone, Copy, Debug)]
struct ColdLanes {
    /// Each lane's index in the cold list, or `NO_COLD`.
    index: [u32; LANES],
    spring_on: Mask,
    motor_on: Mask,
    limit_on: Mask,
    angle0: Wide,
    angle: Wide,
    axial_mass: Wide,
    spring_mass: Wide,
    spring_rate: Wide,
    spring_scale: Wide,
    max_motor_impulse: Wide,
    lower: Wide,
    upper: Wide,
    motor_speed: Wide,
    target_angle: Wide,
    spring_impulse: Wide,
    motor_impulse: Wide,
    lower_impulse: Wide,
    upper_impulse: Wide,
}

impl ColdLanes {
    /// The lanes of cold entries `index` (`NO_COLD`: none).
    fn new(index: [u32; LANES], cold: &[Cold]) -> ColdLanes {
        // Each lane's entry read once, its fields side by side.
        let mut v = [[Scalar::ZERO; LANES]; 15];
        let mut on = [[false; LANES]; 3];
        for (i, &ci) in index.iter().enumerate() {
            let Some(c) = cold.get(ci as usize) else {
                continue;
            };
            on[0][i] = c.spring.enabled;
            on[1][i] = c.enable_motor;
            on[2][i] = c.enable_limit;
            for (f, x) in [
                c.angle0,
                c.angle,
                c.axial_mass,
                c.spring.scaled_mass,
                c.spring.bias_rate,
                c.spring.impulse_scale,
                c.max_motor_impulse,
                c.lower,
                c.upper,
                c.motor_speed,
                c.target_angle,
                c.spring_impulse,
                c.motor_impulse,
                c.lower_impulse,
                c.upper_impulse,
            ]
            .into_iter()
            .enumerate()
            {
                v[f][i] = x;
            }
        }
        let w = |f: usize| Wide::from_array(v[f]);
        ColdLanes {
            index,
            spring_on: Mask::from_array(on[0]),
            motor_on: Mask::from_array(on[1]),
            limit_on: Mask::from_array(on[2]),
            angle0: w(0),
            angle: w(1),
            axial_mass: w(2),
            spring_mass: w(3),
            spring_rate: w(4),
            spring_scale: w(5),
            max_motor_impulse: w(6),
            lower: w(7),
            upper: w(8),
            motor_speed: w(9),
            target_angle: w(10),
            spring_impulse: w(11),
            motor_impulse: w(12),
            lower_impulse: w(13),
            upper_impulse: w(14),
        }
    }

    /// [`solve_angular`] lane by lane, on the angular velocities of
    /// `(va, vb)`, for inverse inertias `(ia, ib)` and the relative rotation
    /// `rel` (`qA⁻¹ qB`, as cosine and sine). A lane's impulse is computed
    /// in every lane and kept only where that part acts (elsewhere zero,
    /// which changes no velocity).
    #[inline(always)]
    fn solve<const USE_BIAS: bool>(
        &mut self,
        (va, vb): (&mut [Wide; 3], &mut [Wide; 3]),
        (ia, ib): (Wide, Wide),
        rel: (Wide, Wide),
        ctx: &JointContext,
    ) {
        let zero = Wide::zero();
        // `solve_angular` returns at once for two bodies that do not turn.
        let active = (ia + ib).eq_lanes(zero).not();
        let reads_angle = self.spring_on.or(self.limit_on).and(active);
        if !USE_BIAS {
            let now = self.angle0 + rotation_angle_lanes(rel, reads_angle);
            self.angle = reads_angle.select(now, self.angle);
        }
        let angle = reads_angle.select(self.angle, zero);
        let apply = |va: &mut [Wide; 3], vb: &mut [Wide; 3], l: Wide| {
            va[2] -= ia * l;
            vb[2] += ib * l;
        };
        let on = self.spring_on.and(active);
        if on.any() {
            let err = normalize_angle_lanes(angle - self.target_angle);
            let bias = self.spring_rate * err;
            let cdot = vb[2] - va[2];
            let i = -(self.spring_mass * (cdot + bias)) - self.spring_scale * self.spring_impulse;
            let i = on.select(i, zero);
            self.spring_impulse += i;
            apply(va, vb, i);
        }
        let on = self.motor_on.and(active);
        if on.any() {
            let cdot = (vb[2] - va[2]) - self.motor_speed;
            let impulse = -(self.axial_mass * cdot);
            let max = self.max_motor_impulse;
            // `clamp(−max, max)`, with max ≥ 0.
            let new = (self.motor_impulse + impulse).max(zero - max).min(max);
            let i = on.select(new - self.motor_impulse, zero);
            self.motor_impulse = on.select(new, self.motor_impulse);
            apply(va, vb, i);
        }
        let on = self.limit_on.and(active);
        if on.any() {
            let mass = self.axial_mass;
            let cdot = vb[2] - va[2];
            let i = limit_lanes::<USE_BIAS>(
                angle - self.lower,
                cdot,
                mass,
                &mut self.lower_impulse,
                on,
                ctx,
            );
            apply(va, vb, i);
            let cdot = -(vb[2] - va[2]);
            let i = limit_lanes::<USE_BIAS>(
                self.upper - angle,
                cdot,
                mass,
                &mut self.upper_impulse,
                on,
                ctx,
            );
            apply(va, vb, -i);
        }
    }
}

/// `limit_impulse` lane by lane, kept where `on` (elsewhere zero).
#[inline(always)]
fn limit_lanes<const USE_BIAS: bool>(
    c: Wide,
    cdot: Wide,
    mass: Wide,
    accumulated: &mut Wide,
    on: Mask,
    ctx: &JointContext,
) -> Wide {
    let zero = Wide::zero();
    let speculative = -(mass * (cdot + c * Wide::splat(ctx.inv_h)));
    let other = if USE_BIAS {
        let s = &ctx.soft;
        let bias = Wide::splat(s.bias_rate) * c;
        -((mass * Wide::splat(s.mass_scale)) * (cdot + bias))
            - Wide::splat(s.impulse_scale) * *accumulated
    } else {
        -(mass * cdot)
    };
    let impulse = c.gt(zero).select(speculative, other);
    let new = (*accumulated + impulse).max(zero);
    let applied = on.select(new - *accumulated, zero);
    *accumulated = on.select(new, *accumulated);
    applied
}

/// [`rotation_angle`] lane by lane for the lanes of `need` (the series where
/// it applies, `atan2` one lane at a time elsewhere).
#[inline(always)]
fn rotation_angle_lanes((c, s): (Wide, Wide), need: Mask) -> Wide {
    let zero = Wide::zero();
    let s2 = s * s;
    let p = Wide::splat(Scalar::ratio(5, 112)) * s2 + Wide::splat(Scalar::ratio(3, 40));
    let p = p * s2 + Wide::splat(Scalar::ratio(1, 6));
    let series = s + s * (p * s2);
    let quarter = Wide::splat(Scalar::ratio(1, 4));
    // `|s| < ¼` as `Scalar::abs` decides it (saturating: `i64::MIN` is
    // not small), so every lane takes the scalar path's branch.
    let small = c.gt(zero).and(s.gt(zero - quarter)).and(quarter.gt(s));
    if !need.and(small.not()).any() {
        return series;
    }
    let one = Wide::splat(Scalar::ONE);
    let fallback = need.and(small.not()).select(one, zero).to_array();
    let (cs, ss) = (c.to_array(), s.to_array());
    let mut r = series.to_array();
    for i in 0..LANES {
        if !fallback[i].is_zero() {
            r[i] = rotation_angle(Rot { c: cs[i], s: ss[i] });
        }
    }
    Wide::from_array(r)
}

/// [`normalize_angle`] lane by lane (already in `(−π, π]` in all lanes but
/// after a turn past π).
#[inline(always)]
fn normalize_angle_lanes(a: Wide) -> Wide {
    let pi = Wide::splat(Scalar::PI);
    if !a
        .gt(pi)
        .or((zero_minus(pi)).gt(a).or(a.eq_lanes(zero_minus(pi))))
        .any()
    {
        return a;
    }
    Wide::from_array(a.to_array().map(normalize_angle))
}

/// `−x`.
#[inline(always)]
fn zero_minus(x: Wide) -> Wide {
    Wide::zero() - x
}

/// The lowest colour free for a revolute between slots `a` and `b` in
/// `window` (`moves`: whether each moves in the solver), marked in their
/// masks; `None` when none is free.
#[inline(always)]
fn colour(
    masks: &mut [(u32, u64)],
    window: u32,
    (a, b): (u32, u32),
    (move_a, move_b): (bool, bool),
) -> Option<u32> {
    let (a, b) = (a as usize, b as usize);
    let mask = |m: (u32, u64)| if m.0 == window { m.1 } else { 0 };
    let (mask_a, mask_b) = (mask(masks[a]), mask(masks[b]));
    let used = if move_a { mask_a } else { 0 } | if move_b { mask_b } else { 0 };
    if used == u64::MAX {
        return None;
    }
    let c = (!used).trailing_zeros();
    if move_a {
        masks[a] = (window, mask_a | 1 << c);
    }
    if move_b {
        masks[b] = (window, mask_b | 1 << c);
    }
    Some(c)
}

/// The window of each revolute of the step's list (`slots`: each one's
/// bodies' solver slots, `moves`: whether each moves), in order, as
/// [`Revolutes`] colours the whole list: what a group of the solve gives
/// each of its revolutes ([`Revolutes::next_window`]). `masks` is scratch
/// (one per slot).
pub(super) fn windows(
    revolutes: impl Iterator<Item = ((u32, u32), (bool, bool))>,
    masks: &mut Vec<(u32, u64)>,
    slots: usize,
    out: &mut Vec<u32>,
) {
    masks.clear();
    masks.resize(slots, (u32::MAX, 0));
    out.clear();
    let mut coloured = 0u32;
    for (ab, moves) in revolutes {
        let window = coloured / WINDOW;
        out.push(window);
        if colour(masks, window, ab, moves).is_some() {
            coloured += 1;
        }
    }
}

/// The prepared revolute joints of a step.
///
/// # Order
///
/// Revolutes are taken in joint order, in
/// windows of [`WINDOW`], and coloured greedily within their window: the
/// lowest colour that neither of its moving bodies has yet in the window
/// (bodies that do not move in the solver, static or kinematic, never
/// conflict). They are solved window by window, colour by colour, in
/// bundles of [`LANES`], as Box2D v3 solves its joints colour by colour
/// (the windows keep each colour's pass among neighbouring bodies: a
/// quarter fewer cache misses on the 19 800-joint grid than colouring the
/// whole list). No two joints of a window's colour move the same body, so
/// the result is that of solving them one at a time in (window, colour,
/// joint) order, whatever the lane count. Within a colour, the joints with
/// a limit, motor or spring fill bundles of their own, which solve those
/// first in each lane (as the one-at-a-time path does), so that the others'
/// bundles skip that work; a colour's order is free. The revolutes that
/// found no free colour follow one at a time in joint order. The colouring
/// is a function of the joint list and of which bodies are awake, so it
/// needs no state of its own.
#[derive(Clone, Debug, Default)]
pub(crate) struct Revolutes {
    /// Revolutes prepared this step (in bundles or one at a time).
    prepared: u32,
    hot: Vec<Hot>,
    /// Anchors relative to the centres at the start of the step (A, B),
    /// parallel to `hot`.
    anchors0: Vec<(Vec2, Vec2)>,
    /// Index of each joint in the world's joint list, parallel to `hot`.
    index: Vec<u32>,
    cold: Vec<Cold>,
    /// Per solver slot, the colours its revolutes hold in the window
    /// numbered first.
    masks: Vec<(u32, u64)>,
    /// Revolutes coloured so far (the window is `coloured / WINDOW`, but
    /// in a group, where it is given: [`Revolutes::next_window`]).
    coloured: u32,
    /// The bundles of the windows closed, in solving order (window,
    /// colour, joint): each pass walks them in memory order.
    bundles: Vec<Bundle>,
    /// Per colour, the current window's full bundles: the first `.1` of
    /// the list. The lists keep their length from window to window and
    /// step to step, so that a bundle (1.3 KB with eight lanes) is written in
    /// place: built and pushed, it was copied twice, 11 % of joint_grid's
    /// preparation.
    window: Vec<(Vec<Bundle>, usize)>,
    /// Per colour, the bundle being filled with joints without and with a
    /// limit, motor or spring (at `2 × colour` and `2 × colour + 1`: a
    /// colour's order is free, and bundles without them skip that work).
    filling: Vec<Lanes>,
    /// The limits, motors and springs of the bundles that have them.
    cold_lanes: Vec<ColdLanes>,
    /// When a group of the step's solve prepares its revolutes (see
    /// `world/step/groups.rs`): the window of the next revolute pushed, as
    /// the whole list's colouring placed it ([`windows`]), and the window
    /// open; a window is closed when the next revolute is in another.
    group_window: Option<(u32, Option<u32>)>,
    /// The last spring softness made, with its hertz, damping ratio and
    /// substep: joints built alike (a ragdoll's) share it, and each made
    /// it with two divisions (rain: 10,000 springs a step).
    soft: Option<((Scalar, Scalar, Scalar), Softness)>,
}

impl Revolutes {
    /// Whether no revolute was prepared this step.
    pub(super) fn is_empty(&self) -> bool {
        self.prepared == 0
    }

    /// Appends the solver slots of every revolute's bodies
    /// ([`JointSolver::slots`](super::JointSolver::slots)).
    pub(super) fn slots(&self, out: &mut Vec<u32>) {
        for c in &self.bundles {
            out.extend(c.a.iter().chain(&c.b));
        }
        for h in &self.hot {
            out.extend([h.a, h.b]);
        }
    }

    /// Starts a step with `slots` solver slots.
    pub(super) fn begin(&mut self, slots: usize) {
        self.prepared = 0;
        self.hot.clear();
        self.anchors0.clear();
        self.index.clear();
        self.cold.clear();
        self.masks.clear();
        self.masks.resize(slots, (u32::MAX, 0));
        self.coloured = 0;
        self.bundles.clear();
        self.window.resize_with(COLORS, Default::default);
        self.window.iter_mut().for_each(|(_, used)| *used = 0);
        // Every colour's lanes are empty after `finish`; what a full bundle
        // left in them is overwritten before it is read.
        self.filling.resize(2 * COLORS, Lanes::EMPTY);
        self.filling.iter_mut().for_each(|l| l.used = 0);
        self.cold_lanes.clear();
        self.group_window = None;
    }

    /// Starts a group's revolutes (after [`Revolutes::begin`]): each one's
    /// window is given ([`Revolutes::next_window`]), not counted.
    pub(super) fn begin_group(&mut self) {
        self.group_window = Some((0, None));
    }

    /// In a group, the window of the next revolute pushed.
    pub(super) fn next_window(&mut self, window: u32) {
        if let Some((next, _)) = &mut self.group_window {
            *next = window;
        }
    }

    /// Colours revolute `ji` and puts it in its colour's bundle;
    /// `false` when it finds no free colour.
    fn add_coloured(&mut self, ji: u32, h: &Hot, anchors0: (Vec2, Vec2), m: &Masses) -> bool {
        let window = match &mut self.group_window {
            Some((next, open)) => {
                let next = *next;
                if open.is_some_and(|w| w != next) {
                    *open = Some(next);
                    self.close_window();
                } else {
                    *open = Some(next);
                }
                next
            }
            None => self.coloured / WINDOW,
        };
        let moves = (
            !(m.ma.is_zero() && m.ia.is_zero()),
            !(m.mb.is_zero() && m.ib.is_zero()),
        );
        let Some(c) = colour(&mut self.masks, window, (h.a, h.b), moves) else {
            return false;
        };
        let l = &mut self.filling[2 * c as usize + usize::from(h.cold != NO_COLD)];
        let i = l.used;
        l.slots[0][i] = h.a;
        l.slots[1][i] = h.b;
        l.slots[2][i] = ji;
        l.slots[3][i] = h.cold;
        let (ra0, rb0) = anchors0;
        l.values[i] = [
            m.ma, m.ia, m.mb, m.ib, h.dc.x, h.dc.y, h.ra.x, h.ra.y, h.rb.x, h.rb.y, h.k.a11,
            h.k.a12, h.k.a22, h.linear.x, h.linear.y, ra0.x, ra0.y, rb0.x, rb0.y,
        ];
        l.used += 1;
        if l.used == LANES {
            let (list, used) = &mut self.window[c as usize];
            Bundle::next(list, used).fill(l, &self.cold, &mut self.cold_lanes);
            l.used = 0;
        }
        self.coloured += 1;
        if self.group_window.is_none() && self.coloured.is_multiple_of(WINDOW) {
            self.close_window();
        }
        true
    }

    /// Closes the window: each colour's last bundle, and every bundle of
    /// the window after those of the windows before, colour by colour.
    fn close_window(&mut self) {
        for (ls, (list, used)) in self.filling.chunks_exact_mut(2).zip(&mut self.window) {
            for l in ls.iter_mut().filter(|l| l.used > 0) {
                // The lanes left empty: zeros (what a full bundle wrote
                // there before is stale).
                for i in l.used..LANES {
                    l.slots[0][i] = 0;
                    l.slots[1][i] = 0;
                    l.slots[2][i] = EMPTY;
                    l.slots[3][i] = NO_COLD;
                    l.values[i] = [Scalar::ZERO; LANE_VALUES];
                }
                Bundle::next(list, used).fill(l, &self.cold, &mut self.cold_lanes);
                l.used = 0;
            }
            self.bundles.extend_from_slice(&list[..*used]);
            *used = 0;
        }
    }

    /// Closes the last window (after the last [`Revolutes::push`]).
    pub(super) fn finish(&mut self) {
        if self.group_window.is_some() || !self.coloured.is_multiple_of(WINDOW) {
            self.close_window();
        }
    }

    /// One iteration over the bundles ([`Revolutes::solve`]).
    #[inline(never)]
    fn solve_bundles<const USE_BIAS: bool>(&mut self, states: &mut States, ctx: &JointContext) {
        let cold = &mut self.cold_lanes;
        for c in &mut self.bundles {
            if c.cold == NO_COLD {
                c.solve::<USE_BIAS, false>(states, cold, ctx);
            } else {
                c.solve::<USE_BIAS, true>(states, cold, ctx);
            }
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
        self.prepared += 1;
        let cold = if p.uses_angle() {
            let lower = p.lower_angle.clamp(-Scalar::PI, Scalar::PI);
            let upper = p.upper_angle.clamp(lower, Scalar::PI);
            let i = &j.impulses;
            let axial_mass = inv_or_zero(m.ia + m.ib);
            let (hertz, zeta) = (p.hertz, p.damping_ratio);
            let soft = match self.soft {
                Some((key, soft)) if key == (hertz, zeta, ctx.h) => soft,
                _ => {
                    let soft = solver::make_soft(hertz, zeta, ctx.h);
                    self.soft = Some(((hertz, zeta, ctx.h), soft));
                    soft
                }
            };
            self.cold.push(Cold {
                angle0: f.angle0,
                angle: f.angle0,
                axial_mass,
                spring: Spring::with_softness(p.enable_spring, hertz, axial_mass, soft),
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
        if self.add_coloured(ji, &hot, (f.ra, f.rb), m) {
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
            if let Some(cl) = self.cold_lanes.get(c.cold as usize) {
                // Then the angular impulse, as the list below applies it.
                let axial =
                    cl.spring_impulse + cl.motor_impulse + cl.lower_impulse - cl.upper_impulse;
                va[2] -= c.ia * axial;
                vb[2] += c.ib * axial;
            }
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
            self.solve_bundles::<true>(states, ctx);
        } else {
            self.solve_bundles::<false>(states, ctx);
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
            let cold = self.cold_lanes.get(c.cold as usize).map(|cl| {
                let imp = [
                    cl.spring_impulse,
                    cl.motor_impulse,
                    cl.lower_impulse,
                    cl.upper_impulse,
                ];
                (cl.index, imp.map(Wide::to_array))
            });
            for (i, &ji) in c.joint.iter().enumerate() {
                if let Some(j) = joints.get_mut(ji as usize) {
                    j.impulses.linear = Vec2::new(x[i], y[i]);
                    if let Some((index, [spring, motor, lower, upper])) = &cold {
                        if index[i] != NO_COLD {
                            j.impulses.spring = spring[i];
                            j.impulses.motor = motor[i];
                            j.impulses.lower = lower[i];
                            j.impulses.upper = upper[i];
                        }
                    }
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
    /// The bundle after the first `used` of `list` (counted in `used`),
    /// to be [filled](Bundle::fill), which writes every field: one left
    /// there by an earlier window, or a new one (zeros).
    fn next<'a>(list: &'a mut Vec<Bundle>, used: &mut usize) -> &'a mut Bundle {
        if *used == list.len() {
            list.push(Bundle::default());
        }
        *used += 1;
        &mut list[*used - 1]
    }

    /// Makes this the bundle of filled lanes `l` (the others empty),
    /// every field written. (Lanes with a limit, motor or spring get
    /// theirs from `cold`, into a new entry of `cold_lanes`.)
    fn fill(&mut self, l: &Lanes, cold: &[Cold], cold_lanes: &mut Vec<ColdLanes>) {
        let w = |f: usize| Wide::from_fn(|i| l.values[i][f]);
        let [a, b, joint, index] = l.slots;
        self.cold = if index.iter().any(|&c| c != NO_COLD) {
            cold_lanes.push(ColdLanes::new(index, cold));
            (cold_lanes.len() - 1) as u32
        } else {
            NO_COLD
        };
        (self.a, self.b, self.joint) = (a, b, joint);
        (self.ma, self.ia, self.mb, self.ib) = (w(0), w(1), w(2), w(3));
        self.dc = [w(4), w(5)];
        self.ra = [w(6), w(7)];
        self.rb = [w(8), w(9)];
        self.k = [w(10), w(11), w(12)];
        self.linear = [w(13), w(14)];
        self.ra0 = [w(15), w(16)];
        self.rb0 = [w(17), w(18)];
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
    /// corrects position errors. `COLD`: the bundle has limits, motors or
    /// springs (in `cold_lanes`), solved first, as `solve_angular`;
    /// without, it skips that work.
    #[inline(always)]
    fn solve<const USE_BIAS: bool, const COLD: bool>(
        &mut self,
        states: &mut States,
        cold_lanes: &mut [ColdLanes],
        ctx: &JointContext,
    ) {
        let (mut va, mut vb) = (gather_v(states, &self.a), gather_v(states, &self.b));
        let [dax, day, qac, qas] = gather_motion(states, &self.a);
        let [dbx, dby, qbc, qbs] = gather_motion(states, &self.b);
        if let (true, Some(cl)) = (COLD, cold_lanes.get_mut(self.cold as usize)) {
            let rel = ((qac * qbc + qas * qbs), (qac * qbs - qas * qbc));
            cl.solve::<USE_BIAS>((&mut va, &mut vb), (self.ia, self.ib), rel, ctx);
        }
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
    use crate::dynamics::joint::{self, JointImpulses, JointSolver};
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
                let cold = self.cold_lanes.get(c.cold as usize);
                for (i, &ji) in c.joint.iter().enumerate() {
                    if ji == EMPTY {
                        continue;
                    }
                    // The lane's limit, motor and spring as they stand now.
                    let index = cold.map_or(NO_COLD, |cl| cl.index[i]);
                    if let (Some(cl), Some(e)) = (cold, r.cold.get_mut(index as usize)) {
                        e.angle = cl.angle.to_array()[i];
                        e.spring_impulse = cl.spring_impulse.to_array()[i];
                        e.motor_impulse = cl.motor_impulse.to_array()[i];
                        e.lower_impulse = cl.lower_impulse.to_array()[i];
                        e.upper_impulse = cl.upper_impulse.to_array()[i];
                    }
                    let v = |x: &[[Scalar; LANES]; 2]| Vec2::new(x[0][i], x[1][i]);
                    r.hot.push(Hot {
                        a: c.a[i],
                        b: c.b[i],
                        cold: index,
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

    /// The bundles of revolutes compute exactly what the one-at-a-time
    /// path computes for the same joints in their order (window, colour,
    /// joint): warm start, biased pass and relax pass, on a scene's state
    /// after some steps (bodies moving and turned, joints with impulses).
    /// Also: no two lanes of a bundle move the same body, and every
    /// revolute is solved once.
    /// `limits_motors_springs`: the scene's revolutes have them (and some
    /// push by the time the passes run).
    fn bundles_solve_as_one_at_a_time(scene: &str, steps: usize, limits_motors_springs: bool) {
        // With its driver (rain drops ragdolls as it runs).
        let mut sc = crate::scene::build_scene(scene).expect("a named scene");
        for _ in 0..steps {
            sc.step();
        }
        let st = &sc.world.state;
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
                states.push(
                    BodyState {
                        v: b.linear_velocity,
                        w: b.angular_velocity,
                        dp: Vec2::new(Scalar::from_bits(k << 20), Scalar::from_bits(-k << 19)),
                        // Up to 0.375 rad: past the series of `rotation_angle`.
                        dq: Rot::IDENTITY.integrate(Scalar::from_bits(k << 29)),
                        inv_mass: c.inv_mass,
                        inv_inertia: c.inv_inertia,
                    },
                    b.center,
                );
            }
        }
        let moves = |s: u32| states.moves(s);
        let h = Scalar::ONE / Scalar::from_int(240);
        let ctx = JointContext {
            h,
            inv_h: Scalar::from_int(240),
            soft: solver::make_soft(Scalar::from_int(60), Scalar::from_int(5), h),
        };
        // Springs that pull toward π - 0.01 from a third of the joints, so
        // that their error leaves (−π, π] (`normalize_angle`'s slow path).
        let mut joints = st.joints.clone();
        for (n, j) in joints.iter_mut().enumerate() {
            if let super::super::JointKind::Revolute(p) = &mut j.kind {
                if n % 3 == 0 && p.enable_spring {
                    p.target_angle = Scalar::PI - Scalar::ratio(1, 100);
                }
            }
        }
        let mut js = JointSolver::default();
        let mut links = Vec::new();
        joint::prepare(
            (&joints, &st.bodies, &st.body_config),
            &slot_of,
            &states,
            &ctx,
            &mut js,
            &mut links,
        );
        let bundled = &mut js.revolutes;
        assert!(bundled.hot.is_empty(), "{scene}: every revolute is bundled");
        // Every joint with a simulated body (joint_grid hangs from a row of
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
        let (mut j1, mut j2) = (joints.clone(), joints.clone());
        bundled.store(&mut j1);
        one.store(&mut j2);
        // Every impulse: the point's, and the spring's, motor's and
        // limits' of the joints that have them.
        assert!(j1.iter().zip(&j2).all(|(x, y)| x.impulses == y.impulses));
        let z = Scalar::ZERO;
        let has = |f: fn(&JointImpulses) -> Scalar| j1.iter().any(|j| f(&j.impulses) != z);
        let angular = [
            has(|i| i.spring),
            has(|i| i.motor),
            has(|i| i.lower) || has(|i| i.upper),
        ];
        assert_eq!(
            angular, [limits_motors_springs; 3],
            "{scene}: angular impulses"
        );
    }

    /// joint_grid: 19 800 plain revolutes.
    #[test]
    fn plain_bundles_solve_as_one_at_a_time_in_colour_order() {
        bundles_solve_as_one_at_a_time("joint_grid", 3, false);
    }

    /// rain: ragdolls whose revolutes have limits, motors and springs, some
    /// of them at their limits or turned past π by now.
    #[test]
    fn bundles_with_limits_motors_and_springs_solve_as_one_at_a_time() {
        bundles_solve_as_one_at_a_time("rain", 400, true);
    }
}

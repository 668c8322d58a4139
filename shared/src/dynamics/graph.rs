//! The coloured contact solver: contacts in bundles of [`LANES`] that share
//! no moving body, each bundle solved lane by lane at once (after Box2D
//! v3's constraint graph and its SIMD contact solver).
//!
//! # Order
//!
//! Every step, the touching contacts are taken in key order, in windows of
//! [`WINDOW`] consecutive contacts, and coloured greedily within their
//! window: a contact between two moving bodies takes the lowest colour
//! that neither body has yet in the window (among the first
//! [`DYNAMIC_COLORS`]); a contact with one moving body takes the highest
//! colour that body has not, so ground contacts come last in their window,
//! with the final word (Box2D's priority). A contact that finds no colour
//! goes to the overflow list and is solved one at a time by
//! [`super::solver`], before the bundles.
//!
//! Greedy colouring in key order solves a body's contacts in the order
//! of their keys: in a pile built left to right, every box's left support
//! before its right one, every step. That bias added up: the top of a
//! 40-row pyramid drifted 5 cm sideways in the first second (35 mm where
//! it settled; Box2D, whose colouring follows its broad phase's tree, 3 mm;
//! the mirrored pyramid drifted the other way). So on odd ticks the
//! contacts between two moving bodies take the highest free colour of
//! their range instead of the lowest: the order of a body's contacts
//! reverses from one step to the next, and the bias cancels over two
//! steps, as in a symmetric Gauss-Seidel sweep. The tick is state, so the
//! order stays a function of the state.
//!
//! Within a window, each colour's contacts fill bundles in key order, those
//! whose manifold has two points first, then those with one, and every
//! pass walks the bundles in order: window by window, colour by colour. No
//! two contacts of a colour move the same body, so how they are ordered
//! and grouped into bundles within it changes nothing: the result is that
//! of solving the contacts one by one in (window, colour, key) order,
//! whatever the lane count. Keeping the one-point contacts together lets
//! the passes skip the second point of their bundles (circles and capsules
//! touch at one point; in the spinner scene four contacts in five do). The
//! order is a function of the state, recomputed every step, so it needs no
//! state of its own. (Box2D colours the whole world at once and keeps its
//! colouring as state; windows keep each pass over the bundles local in
//! memory, neighbours in the pile with neighbours.)
//!
//! A body "moves" in the contact solver when its inverse mass or inverse
//! inertia is non-zero. Static bodies (the dummy slot 0) and kinematic
//! ones never change velocity here, so any number of lanes may read them
//! and write their unchanged velocity back.
//!
//! # Bits
//!
//! Each lane computes the scalar solver's formulas for its contact, with
//! one difference: the per-step constants (normal, lever arms, angular and
//! linear responses, effective masses, friction, softness) are packed at
//! preparation ([`crate::math::Coef`]: 30 significant bits, every bit below
//! ¼), and every substep product is a variable times such a constant, two
//! 32-bit multiplies instead of four. Branches become selections of one of
//! two computed values. Empty lanes and the second point of one-point
//! manifolds carry zero masses and impulses, so every impulse they produce
//! is exactly zero and applying it changes no bit. The one-lane build runs
//! the same definitions in scalar code: the lane count changes the speed,
//! never a bit.

use super::body::Body;
use super::contact::Contact;
use super::solver::{
    cold_entry, ContactCold, Impulses, InvMass, SharedBody, Softness, SolverBody, States,
};
use crate::dynamics::world::workers::Workers;
use crate::math::{prefetch, prefetch_write, Coef, CoefV, Mask, Rot, Scalar, Vec2, Wide};

pub(crate) use crate::math::LANES;

/// Colours available (one bit each in a body's `u64` mask).
const COLORS: u32 = 64;
/// Contacts between two moving bodies use colours `0..DYNAMIC_COLORS`;
/// contacts with one moving body use any colour from `COLORS − 1` down to 1.
const DYNAMIC_COLORS: u32 = 48;
/// The colour of a contact solved one at a time.
pub(crate) const OVERFLOW: u8 = u8::MAX;
/// Contacts coloured together: a window of consecutive contacts in key
/// order (neighbours in the pile, whose data sits together in memory) is
/// coloured and bundled on its own, so every pass walks the contacts and
/// bodies window by window instead of all over the list once per colour.
pub(crate) const WINDOW: usize = 8192;

/// How a prefetch asks for a line.
#[derive(Clone, Copy)]
enum Ask {
    /// To read it.
    Read,
    /// To write it (the line is fetched for writing, so that the stores
    /// to it do not wait): a line the preparation writes and does not
    /// read.
    Write,
}

impl Ask {
    #[inline(always)]
    fn line<T>(self, r: &T) {
        match self {
            Ask::Read => prefetch(r),
            Ask::Write => prefetch_write(r),
        }
    }
}

/// Lane index of an empty lane.
const EMPTY: u32 = u32::MAX;

/// One contact point of every lane of a bundle: the constants of
/// [`super::solver::ConstraintPoint`] that the substeps read, lane by lane
/// (its separation and impulses are in [`PointState`]; its
/// `soft_normal_mass` is formed in the biased pass, with the same product;
/// `max_normal_impulse` lives in [`BundleCold`]). Only [`Coef`]s, aligned
/// to four bytes: a bundle holds its points' constants and states in two
/// arrays, so that the 64-byte alignment of [`Wide`] pads the bundle once
/// rather than each point (see [`Bundle`]).
#[derive(Clone, Copy, Debug)]
struct WidePoint {
    an_a: Coef,
    an_b: Coef,
    rn_a: Coef,
    rn_b: Coef,
    wn_a: Coef,
    wn_b: Coef,
    wt_a: Coef,
    wt_b: Coef,
    neg_normal_mass: Coef,
    neg_tangent_mass: Coef,
}

impl WidePoint {
    /// Every constant `c`.
    fn filled(c: Coef) -> WidePoint {
        WidePoint {
            an_a: c,
            an_b: c,
            rn_a: c,
            rn_b: c,
            wn_a: c,
            wn_b: c,
            wt_a: c,
            wt_b: c,
            neg_normal_mass: c,
            neg_tangent_mass: c,
        }
    }
}

/// One contact point of every lane of a bundle: what the passes update
/// (the separation, the accumulated impulses) and the separation's base.
#[derive(Clone, Copy, Debug)]
struct PointState {
    base_separation: Wide,
    separation: Wide,
    normal_impulse: Wide,
    tangent_impulse: Wide,
}

impl PointState {
    /// Every value `z`.
    fn filled(z: Wide) -> PointState {
        PointState {
            base_separation: z,
            separation: z,
            normal_impulse: z,
            tangent_impulse: z,
        }
    }
}

/// [`LANES`] contacts of one colour, structure of arrays: what the
/// substeps read. Every pass streams these through the cache, so what
/// only restitution and hit events need is kept apart in [`BundleCold`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bundle {
    /// Solver slots of the bodies (0: the static dummy; also empty lanes):
    /// the step's, or, when the step solves in groups, the group's.
    a: [u32; LANES],
    b: [u32; LANES],
    /// Lanes against a body that does not move (the stiffer softness).
    against_static: Mask,
    /// Whether both bodies of every lane have the same inverse mass.
    same: bool,
    /// Whether some lane's manifold has a second point. Where none has,
    /// the second point is all zeros in every lane, every impulse it
    /// would produce is zero, and the passes skip it.
    two: bool,
    /// Whether some lane reports hit events or has restitution: only then
    /// do the passes track the largest normal impulse.
    track_max: bool,
    normal_x: Coef,
    normal_y: Coef,
    m_n_a_x: Coef,
    m_n_a_y: Coef,
    m_n_b_x: Coef,
    m_n_b_y: Coef,
    friction: Coef,
    points: [WidePoint; 2],
    state: [PointState; 2],
}

impl Bundle {
    /// Asks for every cache line of the bundle's first `points` points
    /// (one or two) and the rest of it, `ask`'s way: each field's first
    /// (at eight lanes a `Coef` is 40 bytes, so some lines are asked for
    /// twice). `prefetch_covers_every_line` holds the list to the layout.
    #[inline(always)]
    fn prefetch(&self, ask: Ask, points: usize) {
        // The slots first: every gather of the bundle waits on them.
        ask.line(&self.a);
        ask.line(&self.b);
        ask.line(&self.against_static);
        for c in [
            &self.normal_x,
            &self.normal_y,
            &self.m_n_a_x,
            &self.m_n_a_y,
            &self.m_n_b_x,
            &self.m_n_b_y,
            &self.friction,
        ] {
            ask.line(c);
        }
        for p in self.points.iter().take(points) {
            for c in [
                &p.an_a,
                &p.an_b,
                &p.rn_a,
                &p.rn_b,
                &p.wn_a,
                &p.wn_b,
                &p.wt_a,
                &p.wt_b,
                &p.neg_normal_mass,
                &p.neg_tangent_mass,
            ] {
                ask.line(c);
            }
        }
        for s in self.state.iter().take(points) {
            for w in [
                &s.base_separation,
                &s.separation,
                &s.normal_impulse,
                &s.tangent_impulse,
            ] {
                ask.line(w);
            }
        }
    }

    /// Both bodies' linear responses along the normal, `m⁻¹ n`, in
    /// registers: what every pass applies impulses with.
    #[inline(always)]
    fn responses(&self) -> ((CoefV, CoefV), (CoefV, CoefV)) {
        (
            (self.m_n_a_x.get(), self.m_n_a_y.get()),
            (self.m_n_b_x.get(), self.m_n_b_y.get()),
        )
    }

    fn empty() -> Bundle {
        let c = Coef::zero();
        Bundle {
            a: [0; LANES],
            b: [0; LANES],
            against_static: Mask::from_array([false; LANES]),
            same: false,
            two: false,
            track_max: false,
            normal_x: c,
            normal_y: c,
            m_n_a_x: c,
            m_n_a_y: c,
            m_n_b_x: c,
            m_n_b_y: c,
            friction: c,
            points: [WidePoint::filled(Coef::zero()); 2],
            state: [PointState::filled(Wide::zero()); 2],
        }
    }
}

/// The parts of a bundle the substeps do not read, or read only for
/// restitution and hit events.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BundleCold {
    /// Each lane's place in the step's key-ordered list of solved contacts
    /// (`Impulses`; a `ContactCold` entry holds it too), or `EMPTY`.
    index: [u32; LANES],
    /// Whether some lane has restitution (the pass skips the bundle if not).
    restitution_any: bool,
    restitution: Coef,
    /// Per point: the approach speed before solving, and the largest
    /// normal impulse applied during the step (tracked if `track_max`).
    relative_velocity: [Wide; 2],
    max_normal_impulse: [Wide; 2],
}

impl BundleCold {
    /// Asks to write the lines every preparation writes: the indices and
    /// restitution (the approach speeds and largest impulses are written
    /// only where a lane has restitution or hit events).
    /// `prefetch_covers_every_line` holds the list to the layout.
    #[inline(always)]
    fn prefetch_write(&self) {
        prefetch_write(&self.index);
        prefetch_write(&self.restitution);
        prefetch_write(&self.restitution_any);
    }

    fn empty() -> BundleCold {
        let z = Wide::zero();
        BundleCold {
            index: [EMPTY; LANES],
            restitution_any: false,
            restitution: Coef::zero(),
            relative_velocity: [z; 2],
            max_normal_impulse: [z; 2],
        }
    }
}

/// The inputs of one bundle's preparation, lane by lane (zero in empty
/// lanes, the velocities apart: see `vax`), copied out of the contacts
/// and bodies first so that each becomes a vector with plain loads.
#[derive(Clone, Copy, Default)]
struct Inputs {
    ma: [Scalar; LANES],
    ia: [Scalar; LANES],
    mb: [Scalar; LANES],
    ib: [Scalar; LANES],
    nx: [Scalar; LANES],
    ny: [Scalar; LANES],
    friction: [Scalar; LANES],
    restitution: [Scalar; LANES],
    cax: [Scalar; LANES],
    cay: [Scalar; LANES],
    cbx: [Scalar; LANES],
    cby: [Scalar; LANES],
    /// Per point: whether the lane's manifold has it, then its point and
    /// shift, separation and accumulated impulses.
    valid: [[bool; LANES]; 2],
    px: [[Scalar; LANES]; 2],
    py: [[Scalar; LANES]; 2],
    sx: [[Scalar; LANES]; 2],
    sy: [[Scalar; LANES]; 2],
    separation: [[Scalar; LANES]; 2],
    normal_impulse: [[Scalar; LANES]; 2],
    tangent_impulse: [[Scalar; LANES]; 2],
    /// Velocities, read only where some lane's contact has restitution or
    /// hit events (`any_velocity`): then zero in the lanes whose contact
    /// has neither (nothing reads their approach speeds). Otherwise left
    /// as an earlier bundle wrote them.
    vax: [Scalar; LANES],
    vay: [Scalar; LANES],
    wa: [Scalar; LANES],
    vbx: [Scalar; LANES],
    vby: [Scalar; LANES],
    wb: [Scalar; LANES],
}

impl Inputs {
    /// Lane `i` empty: zeros (the velocities apart: see `vax`).
    #[inline(always)]
    fn clear(&mut self, i: usize) {
        let z = Scalar::ZERO;
        self.valid[0][i] = false;
        self.valid[1][i] = false;
        for f in [
            &mut self.ma,
            &mut self.ia,
            &mut self.mb,
            &mut self.ib,
            &mut self.nx,
            &mut self.ny,
            &mut self.friction,
            &mut self.restitution,
            &mut self.cax,
            &mut self.cay,
            &mut self.cbx,
            &mut self.cby,
        ] {
            f[i] = z;
        }
        for k in 0..2 {
            self.px[k][i] = z;
            self.py[k][i] = z;
            self.sx[k][i] = z;
            self.sy[k][i] = z;
            self.separation[k][i] = z;
            self.normal_impulse[k][i] = z;
            self.tangent_impulse[k][i] = z;
        }
    }

    /// Lane `i` from contact `c` between bodies whose centres of mass are
    /// `ca`, `cb` and whose solver slots' inverse masses are `sa`, `sb`
    /// (all but the velocities: [`Inputs::set_velocities`]).
    #[inline(always)]
    fn set(
        &mut self,
        i: usize,
        c: &Contact,
        (ca, cb): (Vec2, Vec2),
        (sa, sb): (&InvMass, &InvMass),
    ) {
        self.ma[i] = sa.inv_mass;
        self.ia[i] = sa.inv_inertia;
        self.mb[i] = sb.inv_mass;
        self.ib[i] = sb.inv_inertia;
        self.nx[i] = c.manifold.normal.x;
        self.ny[i] = c.manifold.normal.y;
        self.friction[i] = c.friction;
        self.restitution[i] = c.restitution;
        self.cax[i] = ca.x;
        self.cay[i] = ca.y;
        self.cbx[i] = cb.x;
        self.cby[i] = cb.y;
        for (k, p) in c.manifold.points.iter().enumerate() {
            self.valid[k][i] = usize::from(c.manifold.count) > k;
            self.px[k][i] = p.point.x;
            self.py[k][i] = p.point.y;
            self.sx[k][i] = p.shift.x;
            self.sy[k][i] = p.shift.y;
            self.separation[k][i] = p.separation;
            self.normal_impulse[k][i] = p.normal_impulse;
            self.tangent_impulse[k][i] = p.tangent_impulse;
        }
    }

    /// Lane `i` without velocities (zeros).
    #[inline(always)]
    fn clear_velocities(&mut self, i: usize) {
        let z = Scalar::ZERO;
        (self.vax[i], self.vay[i], self.wa[i]) = (z, z, z);
        (self.vbx[i], self.vby[i], self.wb[i]) = (z, z, z);
    }

    /// Lane `i`'s velocities, from its bodies' solver slots.
    #[inline(always)]
    fn set_velocities(&mut self, i: usize, (sa, sb): (&SolverBody, &SolverBody)) {
        self.vax[i] = sa.v.x;
        self.vay[i] = sa.v.y;
        self.wa[i] = sa.w;
        self.vbx[i] = sb.v.x;
        self.vby[i] = sb.v.y;
        self.wb[i] = sb.w;
    }
}

/// `1 / x` lane by lane ([`Scalar::recip`]: vectors have no division).
#[inline(always)]
fn recip(x: Wide) -> Wide {
    let mut x = x.to_array();
    for v in &mut x {
        *v = v.recip();
    }
    Wide::from_array(x)
}

/// Prepares one bundle: the constraint of `prepare_contact` (world/step/prepare.rs),
/// product for product, lane by lane. Lanes without a contact, and the
/// second point of one-point manifolds, are all zeros. The approach speeds
/// are computed only if `any_velocity` (then the largest normal impulse is
/// tracked too).
#[inline(always)]
fn prepare_bundle(bundle: &mut Bundle, cold: &mut BundleCold, inp: &Inputs, any_velocity: bool) {
    let zero = Wide::zero();
    let w = Wide::from_array;
    let (ma, ia, mb, ib) = (w(inp.ma), w(inp.ia), w(inp.mb), w(inp.ib));
    let (nx, ny) = (w(inp.nx), w(inp.ny));
    bundle.against_static = ma.eq_lanes(zero).or(mb.eq_lanes(zero));
    bundle.normal_x.pack_into(nx);
    bundle.normal_y.pack_into(ny);
    bundle.m_n_a_x.pack_into(nx * ma);
    bundle.m_n_a_y.pack_into(ny * ma);
    bundle.m_n_b_x.pack_into(nx * mb);
    bundle.m_n_b_y.pack_into(ny * mb);
    bundle.friction.pack_into(w(inp.friction));
    bundle.same = !ma.eq_lanes(mb).not().any();
    bundle.two = inp.valid[1].iter().any(|&v| v);
    bundle.track_max = any_velocity;
    let restitution = w(inp.restitution);
    cold.restitution.pack_into(restitution);
    cold.restitution_any = restitution.eq_lanes(zero).not().any();
    let (cax, cay, cbx, cby) = (w(inp.cax), w(inp.cay), w(inp.cbx), w(inp.cby));
    // `rb − ra` is `cA − cB` exactly, the same for every point.
    let centers_n = (cax - cbx) * nx + (cay - cby) * ny;
    // The tangent t = right_perp(n) = (y, −x).
    let (tx, ty) = (ny, -nx);
    for (k, (wp, ws)) in bundle.points.iter_mut().zip(&mut bundle.state).enumerate() {
        if k == 1 && !bundle.two {
            // No lane has a second point, and nothing reads it (every pass
            // takes `Bundle::two`'s points; the impulses copied out of it
            // belong to no manifold point): left as it was, 656 bytes a
            // bundle not written. Debug builds write values that would
            // wreck any solve that read them, so that the golden hashes,
            // checked in debug builds too, catch a reader.
            #[cfg(debug_assertions)]
            {
                let junk = Wide::splat(Scalar::from_int(1000));
                let mut c = Coef::zero();
                c.pack_into(junk);
                *wp = WidePoint::filled(c);
                *ws = PointState::filled(junk);
                // A fast approach that pushed: restitution would act.
                cold.max_normal_impulse[k] = junk;
                cold.relative_velocity[k] = -junk;
            }
            continue;
        }
        let valid = Mask::from_array(inp.valid[k]);
        let (px, py) = (w(inp.px[k]), w(inp.py[k]));
        let (sx, sy) = (w(inp.sx[k]), w(inp.sy[k]));
        // Each body's anchor (`ManifoldPoint::shift`).
        let (pax, pay, pbx, pby) = (px - sx, py - sy, px + sx, py + sy);
        let (rax, ray, rbx, rby) = (pax - cax, pay - cay, pbx - cbx, pby - cby);
        let rna = rax * ny - ray * nx;
        let rnb = rbx * ny - rby * nx;
        let rta = rax * ty - ray * tx;
        let rtb = rbx * ty - rby * tx;
        let (wn_a, wn_b, wt_a, wt_b) = (ia * rna, ib * rnb, ia * rta, ib * rtb);
        let kn = ma + mb + wn_a * rna + wn_b * rnb;
        let kt = ma + mb + wt_a * rta + wt_b * rtb;
        let an_a = rax * nx + ray * ny;
        let an_b = rbx * nx + rby * ny;
        let shift_n = sx * nx + sy * ny;
        let base = w(inp.separation[k]) - centers_n - (shift_n + shift_n);
        let keep = |x: Wide| valid.select(x, zero);
        wp.an_a.pack_into(keep(an_a));
        wp.an_b.pack_into(keep(an_b));
        wp.rn_a.pack_into(keep(rna));
        wp.rn_b.pack_into(keep(rnb));
        wp.wn_a.pack_into(keep(wn_a));
        wp.wn_b.pack_into(keep(wn_b));
        wp.wt_a.pack_into(keep(wt_a));
        wp.wt_b.pack_into(keep(wt_b));
        ws.base_separation = keep(base);
        // Nothing has moved yet: the relax pass's formula at zero
        // displacement and no turn, but with the arms' exact products (the
        // relax pass takes them packed, `Coef`, which keeps 30 significant
        // bits of values from ¼ up; its first separation can differ by those
        // low bits).
        ws.separation = keep(an_b - an_a + base);
        ws.normal_impulse = keep(w(inp.normal_impulse[k]));
        ws.tangent_impulse = keep(w(inp.tangent_impulse[k]));
        wp.neg_normal_mass.pack_into(keep(-recip(kn)));
        wp.neg_tangent_mass.pack_into(keep(-recip(kt)));
        // The approach speed and the largest impulse, read only by
        // restitution and hit events (whose bundles have `any_velocity`):
        // `n · (vB + ωB × rB − vA − ωA × rA)`. Other bundles leave them as
        // they were (debug builds: values no reader would survive).
        if any_velocity {
            let (wa, wb) = (w(inp.wa), w(inp.wb));
            let dvx = (w(inp.vbx) + (-wb) * rby) - (w(inp.vax) + (-wa) * ray);
            let dvy = (w(inp.vby) + wb * rbx) - (w(inp.vay) + wa * rax);
            cold.relative_velocity[k] = keep(nx * dvx + ny * dvy);
            cold.max_normal_impulse[k] = zero;
        } else {
            #[cfg(debug_assertions)]
            {
                let junk = Wide::splat(Scalar::from_int(1000));
                cold.relative_velocity[k] = -junk;
                cold.max_normal_impulse[k] = junk;
            }
        }
    }
}

/// The softness of each lane: `f` of the stiffer one where the contact is
/// against a body that does not move.
#[inline(always)]
fn lane_softness(against_static: Mask, soft: &[Softness; 2], f: fn(&Softness) -> Scalar) -> CoefV {
    against_static.select_coef(CoefV::splat(f(&soft[1])), CoefV::splat(f(&soft[0])))
}

/// The step's colouring and bundles (scratch; rebuilt every step).
#[derive(Debug, Default)]
pub(crate) struct Graph {
    /// Per solver slot, the colours its contacts hold in the window
    /// numbered first.
    masks: Vec<(u32, u64)>,
    /// The colour of each contact, in key order.
    colors: Vec<u8>,
    /// Whether each contact's manifold has two points, in key order.
    two: Vec<bool>,
    /// For each lane of each bundle, its contact's place in key order, or
    /// `EMPTY`.
    lane_of: Vec<u32>,
    bundles: Vec<Bundle>,
    /// Parallel to `bundles`.
    cold: Vec<BundleCold>,
    /// How many of `bundles` this step uses.
    used: usize,
    /// The first bundle of each colour of each window laid out this step
    /// (of each group's stretch, when it solves in groups), in solving
    /// order: contacts of one run share no moving body, so a run's
    /// bundles may be solved at once on several threads (`step::colours`).
    runs: Vec<u32>,
    /// This step gives contacts between two moving bodies the highest free
    /// colour instead of the lowest (odd ticks; see the module docs).
    reverse: bool,
}

impl Graph {
    /// Starts a step with `slots` solver slots (slot 0 the static dummy);
    /// `reverse` (odd ticks) colours the contacts between moving bodies
    /// from the top of their range.
    pub(crate) fn begin(&mut self, slots: usize, reverse: bool) {
        self.reverse = reverse;
        self.masks.clear();
        self.masks.resize(slots, (u32::MAX, 0));
        self.colors.clear();
        self.two.clear();
        self.lane_of.clear();
        self.runs.clear();
        self.used = 0;
    }

    /// This step's bundles, in solving order (when the step solves in
    /// groups, group after group: each group's in its solving order).
    pub(crate) fn bundles(&self) -> &[Bundle] {
        &self.bundles[..self.used]
    }

    /// This step's bundles and their cold parts, in solving order.
    pub(crate) fn bundles_mut(&mut self) -> (&mut [Bundle], &mut [BundleCold]) {
        (&mut self.bundles[..self.used], &mut self.cold[..self.used])
    }

    /// This step's runs of one colour, as their first bundles.
    pub(crate) fn runs(&self) -> &[u32] {
        &self.runs
    }

    /// This step's runs of one colour (see [`Graph::runs`]), as their
    /// first bundles, in solving order, with [`Graph::bundles_mut`].
    pub(crate) fn runs_mut(&mut self) -> (&[u32], (&mut [Bundle], &mut [BundleCold])) {
        let used = self.used;
        (
            &self.runs,
            (&mut self.bundles[..used], &mut self.cold[..used]),
        )
    }

    /// Colours the next contact in key order, between slots `a` and `b`
    /// (`moves_*`: whether that body moves in the contact solver; `two`:
    /// whether its manifold has two points), and returns its colour or
    /// [`OVERFLOW`]. Colours are per window of [`WINDOW`] contacts: a
    /// body's colours start empty in each window.
    pub(crate) fn add(
        &mut self,
        a: u32,
        b: u32,
        (moves_a, moves_b): (bool, bool),
        two: bool,
    ) -> u8 {
        let window = (self.colors.len() / WINDOW) as u32;
        let mask = |m: (u32, u64)| if m.0 == window { m.1 } else { 0 };
        let (ma, mb) = (mask(self.masks[a as usize]), mask(self.masks[b as usize]));
        let color = match (moves_a, moves_b) {
            (true, true) => {
                let free = !(ma | mb) & ((1u64 << DYNAMIC_COLORS) - 1);
                if free == 0 {
                    OVERFLOW
                } else if self.reverse {
                    (63 - free.leading_zeros()) as u8
                } else {
                    free.trailing_zeros() as u8
                }
            }
            (true, false) | (false, true) => {
                let m = if moves_a { ma } else { mb };
                // Colours COLORS − 1 down to 1.
                let free = !m & !1u64;
                if free == 0 {
                    OVERFLOW
                } else {
                    (63 - free.leading_zeros()) as u8
                }
            }
            // Nothing this contact does changes a velocity: any colour.
            (false, false) => 0,
        };
        if color != OVERFLOW {
            let bit = 1u64 << color;
            if moves_a {
                self.masks[a as usize] = (window, ma | bit);
            }
            if moves_b {
                self.masks[b as usize] = (window, mb | bit);
            }
        }
        self.colors.push(color);
        self.two.push(two);
        color
    }

    /// Whether the contacts added so far fill whole windows (time to
    /// [`Graph::finish_window`]).
    pub(crate) fn window_full(&self) -> bool {
        !self.colors.is_empty() && self.colors.len().is_multiple_of(WINDOW)
    }

    /// Lays out the last window of contacts added (up to [`WINDOW`] of
    /// them, since the previous call): each colour's contacts fill whole
    /// bundles in key order, two-point ones before one-point ones, colours
    /// in order, after the bundles of the windows before. Returns the
    /// window's first bundle, or `None` when nothing was added since.
    /// (For [`Graph::finish_window`], which prepares it as it is laid out;
    /// a step shared out lays out every window at once, [`Graph::layout_all`]
    /// or [`Graph::layout_groups`].)
    pub(crate) fn layout_window(&mut self) -> Option<usize> {
        let first = self.colors.len().saturating_sub(1) / WINDOW * WINDOW;
        let end = self.colors.len();
        (first < end).then(|| self.lay_out(first..end))
    }

    /// Lays out every window of the contacts added, window after window
    /// (as [`Graph::layout_window`] after each).
    pub(crate) fn layout_all(&mut self) {
        let n = self.colors.len();
        for first in (0..n).step_by(WINDOW) {
            self.lay_out(first..(first + WINDOW).min(n));
        }
    }

    /// Lays out the contacts added group by group (`groups[g]`: the
    /// places in key order of group `g`'s contacts, none in the overflow),
    /// each group's window by window as [`Graph::layout_all`] lays out the
    /// whole list, and returns each group's bundles (first, end). Groups
    /// share no moving body, so each group's contacts are solved in the
    /// order of the whole list's: window by window, colour by colour (a
    /// contact's colour depends only on the colours its bodies hold in
    /// its window); no bundle holds contacts of two groups.
    pub(crate) fn layout_groups<'p>(
        &mut self,
        groups: impl Iterator<Item = &'p [u32]>,
        out: &mut Vec<(usize, usize)>,
    ) {
        out.clear();
        for places in groups {
            let from = self.lane_of.len() / LANES;
            for run in places.chunk_by(|&x, &y| x as usize / WINDOW == y as usize / WINDOW) {
                self.lay_out(run.iter().map(|&k| k as usize));
            }
            out.push((from, self.lane_of.len() / LANES));
        }
    }

    /// Lays out the contacts at `places` (in key order, all in one window)
    /// after the bundles laid out before: each colour's contacts fill whole
    /// bundles, two-point ones before one-point ones, colours in order.
    /// Returns the first bundle.
    fn lay_out(&mut self, places: impl Iterator<Item = usize> + Clone) -> usize {
        // Per colour, the contacts with two points, then those with one:
        // a colour's bundles after its first one-point contact have no
        // second point (`Bundle::two`), and the passes skip it there.
        let mut next = [[0usize; 2]; COLORS as usize];
        for j in places.clone() {
            let c = self.colors[j];
            if c != OVERFLOW {
                next[usize::from(c)][usize::from(!self.two[j])] += 1;
            }
        }
        // Each colour's first lane, and the first of its one-point contacts.
        let start = self.lane_of.len();
        let mut lanes = 0;
        for next in &mut next {
            let [twos, ones] = *next;
            *next = [start + lanes, start + lanes + twos];
            if twos + ones > 0 {
                self.runs.push(((start + lanes) / LANES) as u32);
            }
            lanes += (twos + ones).div_ceil(LANES) * LANES;
        }
        self.lane_of.resize(start + lanes, EMPTY);
        for j in places {
            let c = self.colors[j];
            if c == OVERFLOW {
                continue;
            }
            let place = &mut next[usize::from(c)][usize::from(!self.two[j])];
            self.lane_of[*place] = j as u32;
            *place += 1;
        }
        let (from, to) = (start / LANES, self.lane_of.len() / LANES);
        // Kept from step to step: every field of every lane is written
        // when the window is prepared, so nothing is cleared.
        if self.bundles.len() < to {
            self.bundles.resize_with(to, Bundle::empty);
            self.cold.resize_with(to, BundleCold::empty);
        }
        self.used = to;
        from
    }

    /// Lays out and prepares the last window of contacts added (see
    /// [`Graph::layout_window`]), while its contacts are likelier in cache
    /// from colouring (a window's contacts take some 1.5 MB). `cold` holds
    /// the cold entries of the contacts added (those with hit events get
    /// their approach speeds there).
    pub(crate) fn finish_window(&mut self, inp: PrepareInputs<'_>, cold: &mut [ContactCold]) {
        let Some(from) = self.layout_window() else {
            return;
        };
        let to = self.used;
        prepare_bundles(
            &mut self.bundles[from..to],
            &mut self.cold[from..to],
            &self.lane_of[from * LANES..to * LANES],
            inp,
            cold,
        );
    }

    /// Each group's bundles, their cold parts and lanes (`ranges`, in
    /// order and one after another, from [`Graph::layout_groups`]), to
    /// prepare and solve apart.
    pub(crate) fn group_parts(&mut self, ranges: &[(usize, usize)]) -> Vec<GroupBundles<'_>> {
        let used = self.used;
        let (mut bundles, mut colds) = (&mut self.bundles[..used], &mut self.cold[..used]);
        let mut out = Vec::with_capacity(ranges.len());
        for &(from, to) in ranges {
            let (b, rest) = core::mem::take(&mut bundles).split_at_mut(to - from);
            bundles = rest;
            let (c, rest) = core::mem::take(&mut colds).split_at_mut(to - from);
            colds = rest;
            out.push(GroupBundles {
                bundles: b,
                cold: c,
                lanes: &self.lane_of[from * LANES..to * LANES],
            });
        }
        out
    }

    /// Copies each hit-reporting lane's approach speeds into its contact's
    /// cold entry, as preparing a window does as it goes (groups,
    /// prepared apart, leave it for here).
    pub(crate) fn approach_speeds_to(
        &self,
        contacts: &[Contact],
        order: &[u32],
        cold: &mut [ContactCold],
    ) {
        for (bundle, bcold) in self.bundles[..self.used].iter().zip(&self.cold) {
            // A lane that reports hits reads its velocities (`prepare_bundles`):
            // a bundle that tracks none has no such lane.
            if bundle.track_max {
                approach_speeds(bcold, contacts, order, cold);
            }
        }
    }

    /// Prepares every window laid out this step on this thread, with the
    /// function [`Graph::finish_window`] takes (the same bits).
    pub(crate) fn prepare_laid_out(&mut self, inp: PrepareInputs<'_>, cold: &mut [ContactCold]) {
        let used = self.used;
        prepare_bundles(
            &mut self.bundles[..used],
            &mut self.cold[..used],
            &self.lane_of[..used * LANES],
            inp,
            cold,
        );
    }

    /// Prepares every bundle laid out this step, in ranges of about as many
    /// bundles each, one per thread (`pool`'s workers and this one): the
    /// first on this thread, the others on the workers, with `beside` (more
    /// work of the step) on a worker too. Each bundle is prepared by the
    /// same function as [`Graph::finish_window`]'s, from the same inputs,
    /// into its own place, and the approach speeds of the lanes that report
    /// hits are copied into their cold entries after (a range's contacts
    /// are not a stretch of the key order: a window's colours each take
    /// contacts from all of it): the same bits as preparing window after
    /// window. `cold`: `None` when no solved contact reports hits.
    pub(crate) fn prepare_windows(
        &mut self,
        pool: &Workers,
        inp: PrepareInputs<'_>,
        cold: Option<&mut [ContactCold]>,
        beside: impl FnOnce() + Send,
    ) {
        let used = self.used;
        let per = used.div_ceil(pool.threads()).max(1);
        let lane_of = &self.lane_of[..used * LANES];
        let mut parts = self.bundles[..used]
            .chunks_mut(per)
            .zip(self.cold[..used].chunks_mut(per))
            .zip(lane_of.chunks(per * LANES));
        /// A part: a range of bundles, or `beside`.
        enum Part<R, B> {
            Range(R),
            Beside(B),
        }
        // The first range on this thread, `beside` on a worker (here when
        // there is no range).
        let first = parts.next().map(Part::Range);
        let jobs = first.into_iter().chain([Part::Beside(beside)]);
        pool.share_out(jobs.chain(parts.map(Part::Range)), |part| match part {
            Part::Range(((b, c), lanes)) => prepare_bundles(b, c, lanes, inp, &mut []),
            Part::Beside(beside) => beside(),
        });
        if let Some(cold) = cold {
            self.approach_speeds_to(inp.contacts, inp.order, cold);
        }
    }

    /// Copies the accumulated impulses of every lane into the key-ordered
    /// list, for the next step's warm start and for hit events (and, when
    /// `max` — the step reports hit events —, the largest normal impulses
    /// into the cold entries). A window's lanes are its contacts, so each
    /// window's copies land in its own stretch of the list.
    pub(crate) fn store(&self, (impulses, cold): (&mut [Impulses], &mut [ContactCold]), max: bool) {
        for (bundle, bcold) in self.bundles().iter().zip(&self.cold) {
            let ni = bundle.state.map(|p| p.normal_impulse.to_array());
            let ti = bundle.state.map(|p| p.tangent_impulse.to_array());
            for (i, &index) in bcold.index.iter().enumerate() {
                let Some(out) = impulses.get_mut(index as usize) else {
                    continue;
                };
                *out = Impulses {
                    normal: [ni[0][i], ni[1][i]],
                    tangent: [ti[0][i], ti[1][i]],
                };
            }
            // Bundles without hit events do not track it (their entries
            // keep the zeros they were made with).
            if !(max && bundle.track_max) {
                continue;
            }
            let top = bcold.max_normal_impulse.map(Wide::to_array);
            for (i, &index) in bcold.index.iter().enumerate() {
                // Only the contacts that report hits have an entry.
                if index == EMPTY {
                    continue;
                }
                if let Some(cold) = cold_entry(cold, index) {
                    cold.max_normal_impulse = [top[0][i], top[1][i]];
                }
            }
        }
    }

    /// Checks the colouring (debug builds): no two lanes of a bundle move
    /// the same body.
    #[cfg(debug_assertions)]
    pub(crate) fn check(&self, moves: impl Fn(u32) -> bool) {
        self.check_range((0, self.used), moves);
    }

    /// [`Graph::check`] for the bundles `from..to` (a group's, whose slots
    /// are its own).
    #[cfg(debug_assertions)]
    pub(crate) fn check_range(&self, (from, to): (usize, usize), moves: impl Fn(u32) -> bool) {
        for (bundle, bcold) in self.bundles[from..to].iter().zip(&self.cold[from..to]) {
            let mut seen = [u32::MAX; 2 * LANES];
            for i in 0..LANES {
                if bcold.index[i] == EMPTY {
                    continue;
                }
                for (k, s) in [bundle.a[i], bundle.b[i]].into_iter().enumerate() {
                    if moves(s) {
                        assert!(!seen.contains(&s), "two lanes of a bundle move slot {s}");
                        seen[2 * i + k] = s;
                    }
                }
            }
        }
    }
}

/// One group's bundles (see [`Graph::layout_groups`]): its slots are
/// its own, numbered from its static dummy.
pub(crate) struct GroupBundles<'a> {
    pub(crate) bundles: &'a mut [Bundle],
    pub(crate) cold: &'a mut [BundleCold],
    lanes: &'a [u32],
}

impl GroupBundles<'_> {
    /// Prepares the group's bundles, as [`Graph::finish_window`] prepares a
    /// window, from `inp` (whose states and slots are the group's), but
    /// without the cold entries ([`Graph::approach_speeds_to`]).
    pub(crate) fn prepare(&mut self, inp: PrepareInputs<'_>) {
        prepare_bundles(self.bundles, self.cold, self.lanes, inp, &mut []);
    }
}

/// What preparing the bundles reads: the contacts, the bodies, this
/// step's solver states and slots, and the contacts to solve in key order
/// (indices into `contacts`).
#[derive(Clone, Copy)]
pub(crate) struct PrepareInputs<'a> {
    pub(crate) contacts: &'a [Contact],
    pub(crate) bodies: &'a [Body],
    pub(crate) states: &'a States,
    pub(crate) slot_of: &'a [u32],
    pub(crate) order: &'a [u32],
}

/// Prepares `bundles` (with their `colds`) from the contacts of `lane_of`,
/// [`LANES`] a bundle: places in key order. `cold` holds the cold entries
/// of (at least) these contacts, in key order: the approach speeds of
/// contacts with hit events go there.
#[inline(never)]
fn prepare_bundles(
    bundles: &mut [Bundle],
    colds: &mut [BundleCold],
    lane_of: &[u32],
    inp: PrepareInputs<'_>,
    cold: &mut [ContactCold],
) {
    let PrepareInputs {
        contacts,
        bodies,
        states,
        slot_of,
        order,
    } = inp;
    // Every lane of an `Inputs` is rewritten for each bundle it holds (the
    // velocities only where read: see `Inputs::vax`). Two of them, taking
    // bundles in turn, so that a bundle's inputs are copied out one bundle
    // before they are read: read as vectors right after their lanes were
    // stored one by one, each load waited for the stores to drain (a
    // vector load cannot take its bytes from several pending stores).
    let mut lanes = [Inputs::default(), Inputs::default()];
    let mut any_velocity = [false; 2];
    let count = bundles.len().min(colds.len()).min(lane_of.len() / LANES);
    let fill = |j: usize, lanes: &mut Inputs, bundle: &mut Bundle, bcold: &mut BundleCold| {
        // Which lanes need their velocities: the others' are zeroed only
        // if some lane does (otherwise nothing reads them).
        let mut needs = [false; LANES];
        for (i, &k) in lane_of[j * LANES..(j + 1) * LANES].iter().enumerate() {
            bcold.index[i] = k;
            let Some(&ci) = order.get(k as usize) else {
                bundle.a[i] = 0;
                bundle.b[i] = 0;
                lanes.clear(i);
                continue;
            };
            let c = &contacts[ci as usize];
            let (a, b) = (slot_of[c.body_a as usize], slot_of[c.body_b as usize]);
            bundle.a[i] = a;
            bundle.b[i] = b;
            // The centre of a body with a slot (awake dynamic or
            // kinematic) from the slot; the dummy's bodies' (static) from
            // their own records (one ground body, most often).
            let center = |s: u32, body: u32| match s {
                0 => bodies[body as usize].center,
                _ => states.inv[s as usize].center,
            };
            lanes.set(
                i,
                c,
                (center(a, c.body_a), center(b, c.body_b)),
                (&states.inv[a as usize], &states.inv[b as usize]),
            );
            // Only restitution and hit events read the approach speeds: a
            // lane without either reads no velocity (its approach speed,
            // computed if another lane needs them, is read by nothing).
            if c.hit_events || !c.restitution.is_zero() {
                needs[i] = true;
                let sb = &states.bodies;
                lanes.set_velocities(i, (&sb[a as usize], &sb[b as usize]));
            }
        }
        let any = needs.contains(&true);
        if any {
            for (i, _) in needs.iter().enumerate().filter(|(_, &n)| !n) {
                lanes.clear_velocities(i);
            }
        }
        any
    };
    // The bundles are written, not read: without a word ahead, each line's
    // stores waited for the line to arrive (1.7 of many_pyramids' 4.3 ms of
    // preparation). A bundle has a second point exactly when its first
    // lane's contact has (a colour's two-point contacts come first); a
    // bundle without one is not written there.
    let ask = |bundles: &[Bundle], colds: &[BundleCold], j: usize| {
        if let (Some(next), Some(next_cold)) = (bundles.get(j), colds.get(j)) {
            let two = lane_of
                .get(j * LANES)
                .and_then(|&k| order.get(k as usize))
                .and_then(|&ci| contacts.get(ci as usize))
                .is_some_and(|c| c.manifold.count > 1);
            next.prefetch(Ask::Write, if two { 2 } else { 1 });
            next_cold.prefetch_write();
        }
    };
    ask(bundles, colds, 1);
    if count > 0 {
        any_velocity[0] = fill(0, &mut lanes[0], &mut bundles[0], &mut colds[0]);
    }
    // Contacts are read in colour order, all over the list: their cache
    // lines are asked for a few bundles ahead.
    const AHEAD: usize = 3 * LANES;
    for j in 0..count {
        // Two ahead: the next one's inputs are being copied out now.
        ask(bundles, colds, j + 2);
        for &k in lane_of.iter().skip((j * LANES) + AHEAD).take(LANES) {
            if let Some(c) = order
                .get(k as usize)
                .and_then(|&ci| contacts.get(ci as usize))
            {
                // The three lines of a contact (`Contact` is aligned to
                // them).
                prefetch(c);
                prefetch(&c.manifold.points[1]);
                prefetch(&c.body_a);
            }
        }
        if j + 1 < count {
            let n = (j + 1) % 2;
            any_velocity[n] = fill(j + 1, &mut lanes[n], &mut bundles[j + 1], &mut colds[j + 1]);
        }
        let (bundle, bcold) = (&mut bundles[j], &mut colds[j]);
        let any = any_velocity[j % 2];
        prepare_bundle(bundle, bcold, &lanes[j % 2], any);
        if any {
            approach_speeds(bcold, contacts, order, cold);
        }
    }
}

/// Copies the approach speeds of a prepared bundle's lanes that report
/// hits into their contacts' cold entries (only those have one).
#[inline]
fn approach_speeds(
    bcold: &BundleCold,
    contacts: &[Contact],
    order: &[u32],
    cold: &mut [ContactCold],
) {
    let rv = bcold.relative_velocity.map(Wide::to_array);
    for (i, &k) in bcold.index.iter().enumerate() {
        let Some(&ci) = order.get(k as usize) else {
            continue;
        };
        if !contacts[ci as usize].hit_events {
            continue;
        }
        if let Some(cold) = cold_entry(cold, k) {
            cold.relative_velocity = [rv[0][i], rv[1][i]];
        }
    }
}

impl Bundle {
    /// About what a pass over this bundle costs, against others: a second
    /// point adds about half (for dealing runs out between threads).
    pub(crate) fn weight(&self) -> usize {
        if self.two {
            3
        } else {
            2
        }
    }

    /// The solver slots of each lane's bodies, A and B.
    pub(crate) fn slots(&self) -> (&[u32; LANES], &[u32; LANES]) {
        (&self.a, &self.b)
    }
}

/// Where the contact passes read and write the bodies' solver states: the
/// step's [`States`], or the copy that several threads share while they
/// solve a world's runs of one colour at once ([`SharedSlots`]).
pub(crate) trait Slots {
    /// [`gather_v`].
    fn gather_v(&self, slots: &[u32; LANES]) -> [Wide; 3];
    /// [`gather_motion`].
    fn gather_motion(&self, slots: &[u32; LANES]) -> [Wide; 4];
    /// [`scatter_v`].
    fn scatter_v(&mut self, slots: &[u32; LANES], v: &[Wide; 3]);
}

impl Slots for States {
    #[inline(always)]
    fn gather_v(&self, slots: &[u32; LANES]) -> [Wide; 3] {
        gather_v(self, slots)
    }

    #[inline(always)]
    fn gather_motion(&self, slots: &[u32; LANES]) -> [Wide; 4] {
        gather_motion(self, slots)
    }

    #[inline(always)]
    fn scatter_v(&mut self, slots: &[u32; LANES], v: &[Wide; 3]) {
        scatter_v(self, slots, v);
    }
}

/// The solver states several threads share (see `step::colours`): a
/// thread writes only the bodies of the bundles it holds, and a run's
/// bundles share no moving body, so no two threads write one body in a
/// run (a body that does not move is written back unchanged).
#[derive(Clone, Copy)]
pub(crate) struct SharedSlots<'a>(pub(crate) &'a [SharedBody]);

impl SharedSlots<'_> {
    /// Fields `first..first + N` of the bodies at `slots`, lane by lane
    /// (0..3 the velocity, 3..7 the motion: see [`SharedBody::get`]).
    #[inline(always)]
    fn gather<const N: usize>(&self, slots: &[u32; LANES], first: usize) -> [Wide; N] {
        let mut r = [[Scalar::ZERO; LANES]; N];
        for i in 0..LANES {
            let st = &self.0[slots[i] as usize];
            for (f, r) in r.iter_mut().enumerate() {
                r[i] = st.get(first + f);
            }
        }
        r.map(Wide::from_array)
    }
}

impl Slots for SharedSlots<'_> {
    #[inline(always)]
    fn gather_v(&self, slots: &[u32; LANES]) -> [Wide; 3] {
        self.gather(slots, 0)
    }

    #[inline(always)]
    fn gather_motion(&self, slots: &[u32; LANES]) -> [Wide; 4] {
        self.gather(slots, 3)
    }

    #[inline(always)]
    fn scatter_v(&mut self, slots: &[u32; LANES], v: &[Wide; 3]) {
        let v = v.map(Wide::to_array);
        for (i, &s) in slots.iter().enumerate() {
            let st = &self.0[s as usize];
            for (f, v) in v.iter().enumerate() {
                st.set(f, v[i]);
            }
        }
    }
}

/// The velocities of the bodies at `slots`, lane by lane.
#[inline(always)]
pub(crate) fn gather_v(states: &States, slots: &[u32; LANES]) -> [Wide; 3] {
    let (mut x, mut y, mut w) = (
        [Scalar::ZERO; LANES],
        [Scalar::ZERO; LANES],
        [Scalar::ZERO; LANES],
    );
    for i in 0..LANES {
        let st = &states.bodies[slots[i] as usize];
        x[i] = st.v.x;
        y[i] = st.v.y;
        w[i] = st.w;
    }
    [
        Wide::from_array(x),
        Wide::from_array(y),
        Wide::from_array(w),
    ]
}

/// The motion so far this step (`dp`, `dq`) of the bodies at `slots`.
#[inline(always)]
pub(crate) fn gather_motion(states: &States, slots: &[u32; LANES]) -> [Wide; 4] {
    let mut r = [[Scalar::ZERO; LANES]; 4];
    for i in 0..LANES {
        let st = &states.bodies[slots[i] as usize];
        r[0][i] = st.dp.x;
        r[1][i] = st.dp.y;
        r[2][i] = st.dq.c;
        r[3][i] = st.dq.s;
    }
    [
        Wide::from_array(r[0]),
        Wide::from_array(r[1]),
        Wide::from_array(r[2]),
        Wide::from_array(r[3]),
    ]
}

/// Advances every body's motion so far by one substep of `h`, [`LANES`]
/// bodies at a time: `dq.integrate(h·w)` and `dp + h·v`, the bits of
/// `Rot::integrate` and `Vec2::mul_add` for every input. The lanes take the
/// same products (the lanes' product is `Scalar`'s for operands below
/// 2³¹ − ½) and `Rot::normalize`'s two Newton steps. A group takes the
/// scalar code instead where an operand is at or past 2³¹ − ½ (speeds are
/// not bounded: a crafted state or a wild solve) or a rotation is outside
/// the Newton range (squared length off one by ⅛ or more: a turn of about
/// 0.35 rad in one substep). In scalar code this loop took about 5 % of a
/// pile's step.
pub(crate) fn integrate_positions(bodies: &mut [SolverBody], h: Scalar) {
    let hw = Wide::splat(h);
    let one = Wide::splat(Scalar::ONE);
    let three = Wide::splat(Scalar::from_int(3));
    // `x · ½` is `x.shr(1)`: ⌊x·2³¹ / 2³²⌋.
    let half = Wide::splat(Scalar::HALF);
    let eighth = Wide::splat(Scalar::ratio(1, 8));
    // The largest operand below the lanes' corner (`wide::bits::CORNER`).
    let edge = Wide::splat(Scalar::from_bits(i64::MAX - (1 << 31)));
    for group in bodies.chunks_mut(LANES) {
        // Lanes past the group's end hold a body at rest, unturned.
        let field = |f: fn(&SolverBody) -> Scalar, pad: Scalar| {
            Wide::from_fn(|i| group.get(i).map_or(pad, f))
        };
        let zero = Scalar::ZERO;
        let (w, c, s) = (
            field(|b| b.w, zero),
            field(|b| b.dq.c, Scalar::ONE),
            field(|b| b.dq.s, zero),
        );
        let (vx, vy) = (field(|b| b.v.x, zero), field(|b| b.v.y, zero));
        let (px, py) = (field(|b| b.dp.x, zero), field(|b| b.dp.y, zero));
        // `h ≤ 1`, so `|da| ≤ |w|`; the Newton steps' own operands are
        // within ⅛ of one where they are taken.
        let da = hw * w;
        let (c1, s1) = (c - da * s, s + da * c);
        let m = c1 * c1 + s1 * s1;
        let d = m - one;
        let near = d.gt(-eighth).and(eighth.gt(d));
        let top = w.max(vx).max(vy).max(c).max(s).max(c1).max(s1);
        if near.not().or(top.gt(edge)).any() {
            for b in group.iter_mut() {
                b.dq = b.dq.integrate(h * b.w);
                b.dp = b.dp.mul_add(h, b.v);
            }
            continue;
        }
        let y1 = (three - m) * half;
        let inv = (y1 * (three - m * y1 * y1)) * half;
        let (c2, s2) = ((c1 * inv).to_array(), (s1 * inv).to_array());
        let (px, py) = ((px + hw * vx).to_array(), (py + hw * vy).to_array());
        for (i, b) in group.iter_mut().enumerate() {
            b.dq = Rot { c: c2[i], s: s2[i] };
            b.dp = Vec2::new(px[i], py[i]);
        }
    }
}

/// Writes velocities back. Lanes against a body that does not move write
/// its velocity back unchanged.
#[inline(always)]
pub(crate) fn scatter_v(states: &mut States, slots: &[u32; LANES], v: &[Wide; 3]) {
    let (x, y, w) = (v[0].to_array(), v[1].to_array(), v[2].to_array());
    for (i, &s) in slots.iter().enumerate() {
        let st = &mut states.bodies[s as usize];
        st.v.x = x[i];
        st.v.y = y[i];
        st.w = w[i];
    }
}

/// Two bodies' velocities during one bundle's work.
struct Pair {
    a: [Wide; 3],
    b: [Wide; 3],
}

impl Pair {
    /// Impulse `l` along linear responses `ma`, `mb` (per unit) and
    /// angular ones `wa`, `wb`: `−` to A, `+` to B, as `solver::apply`.
    /// `SAME` says `ma == mb` in every lane (two bodies of one inverse
    /// mass): `l·ma` is then `l·mb`, formed once, the same bits.
    #[inline(always)]
    fn apply<const SAME: bool>(
        &mut self,
        l: Wide,
        (ma_x, ma_y): (CoefV, CoefV),
        (mb_x, mb_y): (CoefV, CoefV),
        (wa, wb): (Coef, Coef),
    ) {
        if SAME {
            let (dx, dy) = (l * ma_x, l * ma_y);
            self.a[0] -= dx;
            self.a[1] -= dy;
            self.b[0] += dx;
            self.b[1] += dy;
        } else {
            self.a[0] -= l * ma_x;
            self.a[1] -= l * ma_y;
            self.b[0] += l * mb_x;
            self.b[1] += l * mb_y;
        }
        self.a[2] -= l * wa;
        self.b[2] += l * wb;
    }

    /// `(vB − vA)·(x, y)`, as `Vec2::dot` of the difference.
    #[inline(always)]
    fn dv_dot(&self, x: CoefV, y: CoefV) -> Wide {
        (self.b[0] - self.a[0]) * x + (self.b[1] - self.a[1]) * y
    }
}

/// The points a pass works on: both, or only the first (see [`Bundle::two`]).
#[inline(always)]
const fn points<const TWO: bool>() -> usize {
    if TWO {
        2
    } else {
        1
    }
}

/// Applies last step's impulses at the start of a substep.
#[inline(never)]
pub(crate) fn warm_start<S: Slots>(bundles: &[Bundle], states: &mut S) {
    for c in bundles {
        match (c.same, c.two) {
            (true, true) => warm_start_bundle::<true, true, S>(c, states),
            (true, false) => warm_start_bundle::<true, false, S>(c, states),
            (false, true) => warm_start_bundle::<false, true, S>(c, states),
            (false, false) => warm_start_bundle::<false, false, S>(c, states),
        }
    }
}

/// [`warm_start`] for one bundle; `SAME` as in [`Pair::apply`], `TWO` as
/// [`Bundle::two`] (the points applied).
#[inline(always)]
fn warm_start_bundle<const SAME: bool, const TWO: bool, S: Slots>(c: &Bundle, states: &mut S) {
    let mut p = Pair {
        a: states.gather_v(&c.a),
        b: states.gather_v(&c.b),
    };
    let (ma, mb) = c.responses();
    // Tangent responses: right_perp(m⁻¹ n) = (y, −x).
    let (ta, tb) = ((ma.1, ma.0.neg()), (mb.1, mb.0.neg()));
    for (cp, cs) in c.points[..points::<TWO>()].iter().zip(&c.state) {
        p.apply::<SAME>(cs.normal_impulse, ma, mb, (cp.wn_a, cp.wn_b));
        p.apply::<SAME>(cs.tangent_impulse, ta, tb, (cp.wt_a, cp.wt_b));
    }
    states.scatter_v(&c.a, &p.a);
    states.scatter_v(&c.b, &p.b);
}

/// One iteration over every bundle; `USE_BIAS` pushes overlapping shapes
/// apart (the biased solve), otherwise the relax pass, which first updates
/// each point's separation from the bodies' motion so far, and solves
/// friction.
///
/// `inv_h` is the substep rate, a whole number (so `s · inv_h` is exact).
#[inline(never)]
pub(crate) fn solve<const USE_BIAS: bool, S: Slots>(
    (bundles, cold): (&mut [Bundle], &mut [BundleCold]),
    states: &mut S,
    soft: &[Softness; 2],
    inv_h: u32,
    max_push: Scalar,
) {
    let neg_max_push = Wide::splat(-max_push);
    for (i, cold) in cold.iter_mut().enumerate().take(bundles.len()) {
        // The bundles are read in order, but between them each lane's two
        // bodies are read and written all over the solver's slots, and the
        // hardware's prefetch of the bundles does not keep up: in a world
        // whose bundles outgrow the caches (many_pyramids: 12 MB a pass),
        // the first loads of each bundle waited on memory, and whether
        // they did depended on the build's code layout (with the same
        // contact code, a7ca7d3's build took 1.8 times 9d5213b's samples
        // in the biased pass; a codegen-units = 1 build of 9d5213b's
        // source was 1.23 times slower in the substeps). Asked for four
        // bundles ahead, both builds measured ran faster than either had
        // (docs/benchmarks.md, the section on 37f69f1).
        if let Some(n) = bundles.get(i + 4) {
            n.prefetch(Ask::Read, 2);
        }
        let c = &mut bundles[i];
        let args = (&mut *states, soft, inv_h, neg_max_push);
        match (c.same, c.two) {
            (true, true) => solve_bundle::<USE_BIAS, true, true, S>(c, cold, args),
            (true, false) => solve_bundle::<USE_BIAS, true, false, S>(c, cold, args),
            (false, true) => solve_bundle::<USE_BIAS, false, true, S>(c, cold, args),
            (false, false) => solve_bundle::<USE_BIAS, false, false, S>(c, cold, args),
        }
    }
}

/// [`solve`] for one bundle; `SAME` as in [`Pair::apply`], `TWO` as
/// [`Bundle::two`] (the points solved).
///
/// Not inlined: each of the four variants is compiled on its own. Inlined
/// into one loop, the registers of all four were allocated together, and
/// how many spilled changed with edits elsewhere in the crate (the relax
/// pass's loop: 113 or 158 stack accesses for the same source), moving
/// many_pyramids' substeps by 4 %. A call per bundle (of eight contacts
/// in the AVX-512 build, four in the AVX2 one) costs nothing measurable;
/// the one-lane build (a bundle per contact) inlines them as before.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "avx2"), inline(never))]
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "avx2")),
    inline(always)
)]
fn solve_bundle<const USE_BIAS: bool, const SAME: bool, const TWO: bool, S: Slots>(
    c: &mut Bundle,
    cold: &mut BundleCold,
    (states, soft, inv_h, neg_max_push): (&mut S, &[Softness; 2], u32, Wide),
) {
    let mut p = Pair {
        a: states.gather_v(&c.a),
        b: states.gather_v(&c.b),
    };
    let (nx, ny) = (c.normal_x.get(), c.normal_y.get());
    let (ma, mb) = c.responses();
    // The relax pass: separation from the motion so far.
    let motion = if USE_BIAS {
        None
    } else {
        let [dax, day, qac, qas] = states.gather_motion(&c.a);
        let [dbx, dby, qbc, qbs] = states.gather_motion(&c.b);
        let dpn = (dbx - dax) * nx + (dby - day) * ny;
        Some((dpn, qac, qas, qbc, qbs))
    };
    let (bias_rate, mass_scale, impulse_scale) = if USE_BIAS {
        (
            lane_softness(c.against_static, soft, |s| s.bias_rate),
            lane_softness(c.against_static, soft, |s| s.mass_scale),
            lane_softness(c.against_static, soft, |s| s.impulse_scale),
        )
    } else {
        (CoefV::zero(), CoefV::zero(), CoefV::zero())
    };
    let one = CoefV::splat(Scalar::ONE);
    for (k, (cp, cs)) in c.points[..points::<TWO>()]
        .iter()
        .zip(c.state.iter_mut())
        .enumerate()
    {
        let s = match motion {
            None => cs.separation,
            Some((dpn, qac, qas, qbc, qbs)) => {
                let s = dpn + (qbc * cp.an_b + qbs * cp.rn_b) - (qac * cp.an_a + qas * cp.rn_a)
                    + cs.base_separation;
                cs.separation = s;
                s
            }
        };
        let vn = p.dv_dot(nx, ny) + p.b[2] * cp.rn_b - p.a[2] * cp.rn_a;
        // Speculative points (ahead of contact) may approach up to
        // contact, rigidly: `−m·(vn + s/h)`.
        let speculative = s.gt(Wide::zero());
        let ahead = s.mul_int(inv_h);
        let impulse = if USE_BIAS {
            let bias = (s * bias_rate).max(neg_max_push);
            let bias = speculative.select(ahead, bias);
            // `−m·scale·(vn + bias)`; rigid (scale one, exact) and without
            // the impulse term (a product by zero is zero) when speculative.
            let scale = speculative.select_coef(one, mass_scale);
            let relax = speculative.select_coef(CoefV::zero(), impulse_scale);
            ((vn + bias) * scale) * cp.neg_normal_mass - cs.normal_impulse * relax
        } else {
            (vn + speculative.select(ahead, Wide::zero())) * cp.neg_normal_mass
        };
        let new = (cs.normal_impulse + impulse).max(Wide::zero());
        let applied = new - cs.normal_impulse;
        cs.normal_impulse = new;
        if c.track_max {
            cold.max_normal_impulse[k] = cold.max_normal_impulse[k].max(applied);
        }
        p.apply::<SAME>(applied, ma, mb, (cp.wn_a, cp.wn_b));
    }
    // Friction only in the relax pass, after the normal impulses, as Box2D
    // v3 solves it: the biased pass's normal impulses include the soft
    // push-out, and friction bounded by them in that pass added sideways
    // impulses that the relax pass did not take back (columns swayed
    // more than Box2D's as their gaps closed).
    if USE_BIAS {
        states.scatter_v(&c.a, &p.a);
        states.scatter_v(&c.b, &p.b);
        return;
    }
    // Tangent t = right_perp(n) = (y, −x); r × t = −r·n.
    let (tx, ty) = (ny, nx.neg());
    let (ta, tb) = ((ma.1, ma.0.neg()), (mb.1, mb.0.neg()));
    for (cp, cs) in c.points[..points::<TWO>()].iter().zip(c.state.iter_mut()) {
        let vt = p.dv_dot(tx, ty) + p.a[2] * cp.an_a - p.b[2] * cp.an_b;
        let impulse = vt * cp.neg_tangent_mass;
        let max_friction = cs.normal_impulse * c.friction;
        let new = (cs.tangent_impulse + impulse)
            .max(-max_friction)
            .min(max_friction);
        let applied = new - cs.tangent_impulse;
        cs.tangent_impulse = new;
        p.apply::<SAME>(applied, ta, tb, (cp.wt_a, cp.wt_b));
    }
    states.scatter_v(&c.a, &p.a);
    states.scatter_v(&c.b, &p.b);
}

/// Bounce: drives the approach speed to `−e · v_before` at points whose
/// approach exceeded `threshold` and that pushed during the step.
pub(crate) fn apply_restitution(
    (bundles, cold): (&mut [Bundle], &mut [BundleCold]),
    states: &mut States,
    threshold: Scalar,
) {
    let neg_threshold = Wide::splat(-threshold);
    for (c, cold) in bundles.iter_mut().zip(cold.iter_mut()) {
        if !cold.restitution_any {
            continue;
        }
        let mut p = Pair {
            a: gather_v(states, &c.a),
            b: gather_v(states, &c.b),
        };
        let (nx, ny) = (c.normal_x.get(), c.normal_y.get());
        let (ma, mb) = c.responses();
        let bouncy = cold.restitution.is_zero().not();
        let points = if c.two { 2 } else { 1 };
        for (k, (cp, cs)) in c.points[..points]
            .iter()
            .zip(c.state.iter_mut())
            .enumerate()
        {
            let (rv, max) = (cold.relative_velocity[k], cold.max_normal_impulse[k]);
            let active = bouncy
                .and(rv.gt(neg_threshold).not())
                .and(max.eq_lanes(Wide::zero()).not());
            if !active.any() {
                continue;
            }
            let vn = p.dv_dot(nx, ny) + p.b[2] * cp.rn_b - p.a[2] * cp.rn_a;
            let impulse = (vn + rv * cold.restitution) * cp.neg_normal_mass;
            let new = (cs.normal_impulse + impulse).max(Wide::zero());
            let applied = new - cs.normal_impulse;
            cold.max_normal_impulse[k] = active.select(max.max(applied), max);
            cs.normal_impulse = active.select(new, cs.normal_impulse);
            p.apply::<false>(
                active.select(applied, Wide::zero()),
                ma,
                mb,
                (cp.wn_a, cp.wn_b),
            );
        }
        scatter_v(states, &c.a, &p.a);
        scatter_v(states, &c.b, &p.b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// `Bundle::prefetch` asks for a place in every line of a bundle (the
    /// places listed here are the fields it names, in any order).
    #[test]
    fn prefetch_covers_every_line() {
        use crate::math::{covers_lines, covers_lines_of};
        use core::mem::{align_of, offset_of, size_of};
        let mut at = vec![
            offset_of!(Bundle, a),
            offset_of!(Bundle, b),
            offset_of!(Bundle, against_static),
        ];
        for f in [
            offset_of!(Bundle, normal_x),
            offset_of!(Bundle, normal_y),
            offset_of!(Bundle, m_n_a_x),
            offset_of!(Bundle, m_n_a_y),
            offset_of!(Bundle, m_n_b_x),
            offset_of!(Bundle, m_n_b_y),
            offset_of!(Bundle, friction),
        ] {
            at.push(f);
        }
        for k in 0..2 {
            let base = offset_of!(Bundle, points) + k * size_of::<WidePoint>();
            for f in [
                offset_of!(WidePoint, an_a),
                offset_of!(WidePoint, an_b),
                offset_of!(WidePoint, rn_a),
                offset_of!(WidePoint, rn_b),
                offset_of!(WidePoint, wn_a),
                offset_of!(WidePoint, wn_b),
                offset_of!(WidePoint, wt_a),
                offset_of!(WidePoint, wt_b),
                offset_of!(WidePoint, neg_normal_mass),
                offset_of!(WidePoint, neg_tangent_mass),
            ] {
                at.push(base + f);
            }
            let base = offset_of!(Bundle, state) + k * size_of::<PointState>();
            for f in [
                offset_of!(PointState, base_separation),
                offset_of!(PointState, separation),
                offset_of!(PointState, normal_impulse),
                offset_of!(PointState, tangent_impulse),
            ] {
                at.push(base + f);
            }
        }
        at.sort_unstable();
        assert!(
            covers_lines(size_of::<Bundle>(), align_of::<Bundle>(), &at),
            "Bundle: {} bytes aligned to {}, asked at {at:?}",
            size_of::<Bundle>(),
            align_of::<Bundle>()
        );
        // `BundleCold::prefetch_write` asks for every line of what each
        // preparation writes (the places listed here are the fields it
        // names): the bytes from the first of those fields to the end of
        // the last.
        let written = [
            (offset_of!(BundleCold, index), size_of::<[u32; LANES]>()),
            (offset_of!(BundleCold, restitution), size_of::<Coef>()),
            (offset_of!(BundleCold, restitution_any), 1),
        ];
        let asked: Vec<usize> = written.iter().map(|w| w.0).collect();
        let lo = asked.iter().copied().min().unwrap_or(0);
        let hi = written.iter().map(|&(o, n)| o + n).max().unwrap_or(lo);
        assert!(
            covers_lines_of(lo..hi, align_of::<BundleCold>(), &asked),
            "BundleCold: bytes {lo}..{hi} written, asked at {asked:?}"
        );
    }

    /// Asserts that [`integrate_positions`] gives `bodies` the scalar
    /// code's bits over a substep of `h`.
    fn integrates_as_scalar(bodies: &[SolverBody], h: Scalar) {
        let mut got = bodies.to_vec();
        integrate_positions(&mut got, h);
        for (k, (b, g)) in bodies.iter().zip(&got).enumerate() {
            let q = b.dq.integrate(h * b.w);
            let p = b.dp.mul_add(h, b.v);
            assert_eq!(
                (g.dq.c, g.dq.s, g.dp.x, g.dp.y),
                (q.c, q.s, p.x, p.y),
                "h {h:?}, {} bodies, body {k}: {b:?}",
                bodies.len()
            );
            // Nothing else changes.
            assert_eq!((g.v, g.w), (b.v, b.w));
        }
    }

    /// [`integrate_positions`] is `Rot::integrate` and `Vec2::mul_add`, bit
    /// for bit: groups of every size up to a few lanes past whole ones,
    /// rotations off unit by up to 2⁻¹⁰, speeds and motions of any sign up
    /// to 10⁴, turns fast enough (up to 500 rad/s) that some groups take
    /// `Rot::normalize`'s square root, speeds in the last half unit below
    /// 2³¹ (where the lanes' product parts from `Scalar`'s), at three
    /// substep lengths; and a turn whose squared length is exactly 1 + ⅛
    /// (the square root's side of the bound) beside one a unit less.
    #[test]
    fn integrated_positions_are_the_scalar_ones() {
        let mut lcg = crate::math::lcg(0x9e37_79b9_7f4a_7c15);
        // Raw units in ±range.
        let mut next = |range: i64| ((lcg() >> 1) as i64 % (2 * range + 1)) - range;
        let (mut near, mut far, mut wild) = (0, 0, 0);
        for h in [
            Scalar::ratio(1, 240),
            Scalar::ratio(1, 120),
            Scalar::ratio(1, 30),
        ] {
            for n in 1..=3 * LANES + 3 {
                for round in 0..40 {
                    let fast = if round % 4 == 0 { 500 } else { 40 };
                    let mut bodies: Vec<SolverBody> = (0..n)
                        .map(|_| {
                            let angle = Scalar::from_bits(next(4 << 32));
                            let mut off = || Scalar::from_bits(next(1 << 22));
                            let q = Rot::from_angle(angle);
                            let (c, s) = (q.c + off(), q.s + off());
                            let mut big = |k: i64| Scalar::from_bits(next(k << 32));
                            SolverBody {
                                v: Vec2::new(big(10_000), big(10_000)),
                                w: big(fast),
                                dp: Vec2::new(big(10_000), big(10_000)),
                                dq: Rot { c, s },
                            }
                        })
                        .collect();
                    // One speed in the corner: i64::MAX less up to 2³⁰ units.
                    let corner = Scalar::from_bits(i64::MAX - next(1 << 30).abs());
                    let last = bodies.len() - 1;
                    match round % 8 {
                        1 => bodies[last].v.x = corner,
                        2 => bodies[last].v.y = corner,
                        3 => bodies[0].w = corner,
                        _ => {}
                    }
                    integrates_as_scalar(&bodies, h);
                    for b in &bodies {
                        let d = (h * b.w).abs();
                        if b.v.x.max(b.v.y).max(b.w) >= Scalar::from_int(1 << 30) {
                            wild += 1;
                        } else if d > Scalar::ratio(1, 2) {
                            far += 1;
                        } else if d < Scalar::ratio(1, 4) {
                            near += 1;
                        }
                    }
                }
            }
        }
        assert!(
            near > 1000 && far > 100 && wild > 100,
            "{near} near, {far} far, {wild} wild"
        );
        // Unturned, a turn of `da` in a substep of one second gives the
        // squared length 1 + da²: exactly 1 + ⅛ for these bits.
        let da = Scalar::from_bits(1_518_500_250);
        assert_eq!(da * da, Scalar::ratio(1, 8));
        let below = Scalar::from_bits(da.to_bits() - 1);
        assert!(below * below < Scalar::ratio(1, 8));
        for turn in [da, below] {
            let mut bodies = vec![
                SolverBody {
                    v: Vec2::ZERO,
                    w: Scalar::ZERO,
                    dp: Vec2::ZERO,
                    dq: Rot::IDENTITY,
                };
                LANES
            ];
            bodies[0].w = turn;
            integrates_as_scalar(&bodies, Scalar::ONE);
        }
    }

    /// Every pass streams the bundles, so their bytes are time (128
    /// bytes of an unused field in each bundle took `many_pyramids`'
    /// substeps from 6.5 to 9.2 ms, four copies of each binary, two rounds):
    /// the 64-byte alignment of the lanes pads a bundle once, by less than
    /// its alignment, not each point.
    #[test]
    fn bundles_are_padded_once() {
        use core::mem::{align_of, size_of};
        let fields = 2 * size_of::<[u32; LANES]>()
            + size_of::<Mask>()
            + 3 * size_of::<bool>()
            // The bundle's own, then each point's (`WidePoint`, `PointState`).
            + (7 + 2 * 10) * size_of::<Coef>()
            + 2 * 4 * size_of::<Wide>();
        let size = size_of::<Bundle>();
        assert!(
            size < fields + align_of::<Bundle>(),
            "a bundle of {size} bytes holds {fields}"
        );
    }

    /// Within each window's colour, the contacts with two points fill
    /// bundles before those with one, so that only one bundle per colour
    /// mixes them and the passes skip the second point of all the others
    /// with one point; every bundle says whether a lane has a second point,
    /// and where none has, that point is not written (debug builds fill it
    /// with values no solve would survive).
    #[test]
    fn one_point_contacts_fill_bundles_of_their_own() {
        let mut w = crate::scene::build_named("spinner").expect("a named scene");
        for _ in 0..60 {
            w.step();
        }
        let (g, _) = w.solver_parts();
        // Bundles with one point in every lane, at the least, if each
        // window's colour keeps its one-point contacts together.
        let mut at_least = 0;
        for window in g.colors.chunks(WINDOW).zip(g.two.chunks(WINDOW)) {
            let mut ones = [0usize; COLORS as usize];
            for (&c, &t) in window.0.iter().zip(window.1) {
                if c != OVERFLOW && !t {
                    ones[usize::from(c)] += 1;
                }
            }
            at_least += ones.iter().map(|n| n / LANES).sum::<usize>();
        }
        let mut one_point = 0;
        for (bundle, bcold) in g.bundles().iter().zip(&g.cold) {
            let lanes: Vec<usize> = (0..LANES).filter(|&i| bcold.index[i] != EMPTY).collect();
            let two = lanes.iter().any(|&i| g.two[bcold.index[i] as usize]);
            assert_eq!(bundle.two, two);
            if !two {
                one_point += 1;
                // Not written: in debug builds, values that would wreck a
                // solve that read them (so the golden hashes, which debug
                // builds check too, would catch a reader).
                #[cfg(debug_assertions)]
                {
                    let junk = Scalar::from_int(1000);
                    let (p, ps) = (&bundle.points[1], &bundle.state[1]);
                    assert!(p.neg_normal_mass.values().iter().all(|&v| v == junk));
                    assert!(ps.normal_impulse.to_array().iter().all(|&v| v == junk));
                }
            }
        }
        assert!(
            at_least > 100,
            "spinner has few one-point contacts: {at_least}"
        );
        assert!(
            one_point >= at_least,
            "{one_point} one-point bundles of {}, {at_least} expected",
            g.bundles().len()
        );
    }

    /// Not a test: ns per bundle of each kernel on large_pyramid's
    /// bundles (or `BITROOM_SCENE`'s), all of them and the first 32 (in
    /// cache). `cargo test -p bitroom-sim --release --lib measure_kernels
    /// -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn measure_kernels() {
        let scene = std::env::var("BITROOM_SCENE").unwrap_or_else(|_| "large_pyramid".into());
        let mut w = crate::scene::build_named(&scene).expect("a named scene");
        for _ in 0..30 {
            w.step();
        }
        let (g, states) = w.solver_parts();
        let all = g.bundles().len();
        for n in [all, 32] {
            let (b, bc) = g.bundles_mut();
            let (b, bc) = (&mut b[..n], &mut bc[..n]);
            let soft = [crate::dynamics::solver::make_soft(
                Scalar::from_int(30),
                Scalar::from_int(10),
                Scalar::ratio(1, 240),
            ); 2];
            let reps = (200_000 / n).max(4);
            let t = Instant::now();
            for _ in 0..reps {
                warm_start(b, states);
            }
            let warm = t.elapsed().as_nanos() as f64 / (reps * n) as f64;
            let t = Instant::now();
            for _ in 0..reps {
                solve::<true, _>((&mut *b, &mut *bc), states, &soft, 240, Scalar::from_int(3));
            }
            let biased = t.elapsed().as_nanos() as f64 / (reps * n) as f64;
            let t = Instant::now();
            for _ in 0..reps {
                solve::<false, _>((&mut *b, &mut *bc), states, &soft, 240, Scalar::from_int(3));
            }
            let relax = t.elapsed().as_nanos() as f64 / (reps * n) as f64;
            println!(
                "{n} bundles of {LANES}: warm start {warm:.1} ns, solve {biased:.1} ns, relax {relax:.1} ns per bundle"
            );
        }
    }
}

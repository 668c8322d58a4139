//! The substeps of one big island on several threads, run by run.
//!
//! Groups (`groups`) share out a world of many islands. A world that is
//! one island (a pile, a pyramid) makes one group, and its substeps
//! stayed on the calling thread. Box2D v3 shares such an island out by
//! colour: a colour's contacts share no moving body, so its workers split
//! each colour between them and wait for one another before the next.
//!
//! Here the runs are the graph's own (`Graph::runs`): each window's
//! colours, in solving order. Every pass walks the runs in that order;
//! each thread solves its share of a run's bundles, and none starts the
//! next run until every thread has ended this one (a stage). Each body's
//! passes are then the one-thread step's, in the same order (within a run
//! no two bundles move one body, so which thread takes a bundle changes
//! nothing), and the bits are one thread's. What the colouring does not
//! place, and the joints, one thread solves alone in stages of their own,
//! where one thread's step solves them (see [`Alone`]).
//!
//! All in safe code:
//! - the bodies' solver states are copied into atomics that every thread
//!   reads and writes ([`SharedBody`], relaxed: plain loads and stores);
//! - each thread's shares of the runs are its own slices of the bundles;
//! - a thread waits at the end of each stage for an atomic count of the
//!   threads arrived ([`Stages`]), which orders every write of the stage
//!   before every read of the next.
//!
//! Every thread must take part: the pool is the world's own, with a
//! worker for each part but the calling thread's, and nothing else runs
//! on it while the world steps but the workers' spins between share-outs
//! (`world/workers.rs`), which each share-out ends. A thread waits by
//! spinning, then by yielding its core (more threads than cores). If one
//! thread panics, the others stop waiting and return, and the pool's
//! scope hands that panic on.

use super::substeps::{integrate_velocity, Increment};
use crate::dynamics::graph::{self, Bundle, BundleCold, SharedSlots};
use crate::dynamics::joint::{self, JointContext, JointSolver};
use crate::dynamics::solver::{self, ContactConstraint, SharedBody, Softness, SolverBody, States};
use crate::dynamics::world::workers::Workers;
use crate::math::{Scalar, LANES};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A run with fewer bundles than this for each thread is not cut between
/// the threads: one thread takes it whole (see [`stages`]).
const BLOCK_BUNDLES: usize = 4;
/// When the runs are shared out (see [`worth`]).
struct Limits {
    /// The bundles a thread's share of a stage must hold on average.
    /// Below it the waits cost what the threads save: on two threads the
    /// 990-box pile (19 bundles a stage) solved no faster, the tumbler
    /// (its runs short) slower, 0.75 to 1.15 ms a step; large_pyramid
    /// (21) gained 16 %. (Measured with windows of 1 024 contacts; with
    /// 8 192, large_pyramid has 144 a stage.)
    share_bundles: usize,
    /// The most bodies, in quarters of all, that two threads' shares may
    /// both solve ([`crossing`]).
    crossing_quarters: usize,
}
const LIMITS: Limits = Limits {
    share_bundles: 10,
    crossing_quarters: 1,
};
/// Tests share out small worlds, whatever crosses.
const TEST_LIMITS: Limits = Limits {
    share_bundles: 2,
    crossing_quarters: 4,
};
/// Bodies integrated at a time (a buffer's length).
const BODY_BLOCK: usize = 256;
/// Turns a waiting thread spins before it yields its core (a machine with
/// more threads to run than cores).
const SPINS: u32 = 1 << 12;

/// Whether sharing out the runs is worth its waits ([`Limits`]): each
/// stage of a pass has enough bundles for each thread, and the threads'
/// shares keep mostly to bodies of their own (see [`crossing`]).
pub(super) fn worth(
    runs: &[u32],
    bundles: &[Bundle],
    slots: usize,
    threads: usize,
    seen: &mut Vec<u64>,
) -> bool {
    let limits = if cfg!(test) { &TEST_LIMITS } else { &LIMITS };
    worth_within(limits, (runs, bundles), slots, threads, seen)
}

/// [`worth`] within `limits`.
fn worth_within(
    limits: &Limits,
    (runs, bundles): (&[u32], &[Bundle]),
    slots: usize,
    threads: usize,
    seen: &mut Vec<u64>,
) -> bool {
    let stages = stages(runs, bundles.len(), threads).count();
    stages > 0
        && bundles.len() >= stages * threads * limits.share_bundles
        && crossing(runs, bundles, slots, threads, seen) * 4 <= slots * limits.crossing_quarters
}

/// How many bodies the shares of more than one thread solve (counted
/// as if every run were shared out by count). Each such body's state moves
/// between the threads' caches within a pass. Sharing out is taken only
/// while at most a quarter of the bodies cross. Measured on two threads
/// (windows of 8 192 contacts): in large_pyramid 6 % of the bodies cross,
/// and its substeps took 2.05 ms a step against 2.87 on one thread; in the
/// tumbler 45 % cross, and shared out its substeps took 16 % more than
/// solved alone (0.99 against 0.85 ms); in the spinner's stirred debris,
/// whose key order no longer follows space, 43 to 58 % cross, and sharing
/// out gained nothing. (Three scenes are thin ground for the line: it is
/// where they fall, not a law.)
fn crossing(
    runs: &[u32],
    bundles: &[Bundle],
    slots: usize,
    threads: usize,
    seen: &mut Vec<u64>,
) -> usize {
    seen.clear();
    seen.resize(slots, 0);
    let mut crossed = 0;
    let ends = runs
        .iter()
        .skip(1)
        .map(|&e| e as usize)
        .chain([bundles.len()]);
    for (&first, end) in runs.iter().zip(ends) {
        let run = &bundles[first as usize..end];
        for t in 0..threads {
            let share = &run[run.len() * t / threads..run.len() * (t + 1) / threads];
            // Threads are at most 64 (`World::set_threads`).
            let bit = 1u64 << (t % 64);
            for c in share {
                let (a, b) = c.slots();
                for &s in a.iter().chain(b) {
                    let m = &mut seen[s as usize];
                    if *m != 0 && *m & bit == 0 && (*m & (*m - 1)) == 0 {
                        crossed += 1;
                    }
                    *m |= bit;
                }
            }
        }
    }
    crossed
}

/// The stages of a pass over the runs (the first bundles of `runs`, of
/// `used` bundles): their bundles, and the thread that takes them all, or
/// `None` when every thread takes a share.
///
/// A run too short to share ([`BLOCK_BUNDLES`] for each thread) is taken
/// by one thread, with the short runs that follow it: one thread solves
/// them in order, and the others wait once instead of once a run. (The
/// spinner's windows begin with a score of one-bundle runs, its debris
/// against the ring in the high colours.) Whole stretches of short runs
/// are dealt to the threads in turn.
fn stages(
    runs: &[u32],
    used: usize,
    threads: usize,
) -> impl Iterator<Item = (Range<usize>, Option<usize>)> + '_ {
    let short = threads * BLOCK_BUNDLES;
    let end = move |r: usize| runs.get(r + 1).map_or(used, |&e| e as usize);
    let mut r = 0;
    let mut alone = 0;
    core::iter::from_fn(move || {
        let first = *runs.get(r)? as usize;
        let mut last = end(r);
        r += 1;
        if last - first >= short {
            return Some((first..last, None));
        }
        while r < runs.len() && end(r) - (runs[r] as usize) < short {
            last = end(r);
            r += 1;
        }
        alone += 1;
        Some((first..last, Some(alone % threads)))
    })
}

/// The step's constants for the passes.
pub(super) struct Passes<'a> {
    pub(super) substeps: usize,
    pub(super) h: Scalar,
    pub(super) soft: &'a [Softness; 2],
    pub(super) inv_h: u32,
    pub(super) max_push: Scalar,
    pub(super) max_v: Scalar,
    pub(super) joint: &'a JointContext,
    /// Per solver slot past the dummy, what integrating adds.
    pub(super) deltas: &'a [Increment],
}

/// What one thread alone solves, in each pass, before or after the runs:
/// the joints (solved one after another, in joint order) and the contacts
/// the colouring could not place (one at a time, in key order).
///
/// They are solved on the step's own states, with their code for one
/// thread: their bodies' states are copied from the shared ones before,
/// and back after. (Made generic over the states like the bundles'
/// passes, the joints' code ran 5 % slower on one thread: joint_grid,
/// user time, three runs each.)
pub(super) struct Alone<'a> {
    pub(super) joints: &'a mut JointSolver,
    pub(super) constraints: &'a mut [ContactConstraint],
    /// The step's substep rate as a scalar (`solver::solve_contacts`).
    pub(super) inv_h: Scalar,
}

/// [`Alone`], with the step's states and the slots of its bodies.
struct AloneHere<'a> {
    work: Alone<'a>,
    states: &'a mut States,
    slots: &'a [u32],
}

/// Scratch reused between steps: the shared states, and the slots of the
/// bodies of what is solved alone.
#[derive(Debug, Default)]
pub(crate) struct ColourScratch {
    states: Vec<SharedBody>,
    alone: Vec<u32>,
    /// Per slot, the threads whose shares solve it ([`crossing`]).
    pub(super) seen: Vec<u64>,
}

/// A thread's share of a run: bundles and their cold parts.
type Block<'a> = (&'a mut [Bundle], &'a mut [BundleCold]);

/// What every thread reads.
struct Shared<'a> {
    slots: SharedSlots<'a>,
    stages: Stages,
    passes: &'a Passes<'a>,
    /// Whether anything is solved alone (then each pass has a stage more).
    alone: bool,
}

/// The threads' meeting points: the end of each stage.
struct Stages {
    /// Threads arrived at the end of a stage, over all stages so far: the
    /// stage `s` (from zero) is over for everyone at `threads · (s + 1)`.
    arrived: AtomicUsize,
    /// Set when a thread unwinds ([`Failed`]).
    failed: AtomicBool,
    threads: usize,
}

/// One thread's part: its share of every run, and of the bodies; the
/// first thread's also what is solved alone.
struct Part<'a> {
    runs: Vec<Block<'a>>,
    bodies: Range<usize>,
    alone: Option<AloneHere<'a>>,
}

/// Sets `failed` if its thread unwinds, so that no other thread waits for
/// a stage it will never finish.
struct Failed<'a>(&'a AtomicBool);

impl Drop for Failed<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs the substeps of `states`' bodies over the bundles (`runs`: each
/// run's first bundle, from `Graph::runs_mut`) and what is solved `alone`,
/// on the calling thread and `pool`'s workers; `store` is scratch for the
/// shared states. Returns the stages the threads met at.
///
/// Each thread takes the same stretch of every run (a share): a run's
/// bundles are in key order within their colour, so the same stretch of
/// each run holds much the same bodies, and a thread finds them in its own
/// cache. (Blocks claimed by whichever thread came first were solved
/// 45 % slower, their bodies fetched from the other core's cache.)
pub(super) fn substeps(
    pool: &Workers,
    states: &mut States,
    scratch: &mut ColourScratch,
    (runs, (bundles, cold)): (&[u32], Block<'_>),
    alone: Alone<'_>,
    passes: &Passes<'_>,
) -> usize {
    let slots = states.bodies.len();
    let ColourScratch {
        states: store,
        alone: alone_slots,
        ..
    } = scratch;
    if store.len() < slots {
        store.resize_with(slots, SharedBody::default);
    }
    let store = &store[..slots];
    for (s, b) in store.iter().zip(&states.bodies) {
        s.store(b);
    }
    alone_slots.clear();
    alone.joints.slots(alone_slots);
    alone_slots.extend(alone.constraints.iter().flat_map(|c| [c.a, c.b]));
    alone_slots.sort_unstable();
    alone_slots.dedup();
    let threads = pool.threads();
    let bodies = slots - 1;
    let any_alone = !(alone.joints.is_empty() && alone.constraints.is_empty());
    let mut alone = Some(AloneHere {
        work: alone,
        states: &mut *states,
        slots: alone_slots,
    });
    let mut parts: Vec<Part<'_>> = (0..threads)
        .map(|t| {
            // Whole lanes of bodies (see `graph::integrate_positions`).
            let at = |t: usize| 1 + (bodies * t / threads).next_multiple_of(LANES).min(bodies);
            Part {
                runs: Vec::with_capacity(runs.len()),
                bodies: at(t)..if t + 1 == threads { slots } else { at(t + 1) },
                alone: alone.take(),
            }
        })
        .collect();
    let (mut rest, mut rest_cold) = (bundles, cold);
    let used = rest.len();
    let mut ends = Vec::with_capacity(threads);
    for (range, taker) in stages(runs, used, threads) {
        let len = range.len();
        debug_assert_eq!(used - rest.len(), range.start, "runs one after another");
        // A share's end: where the run's weight so far reaches its part.
        let total: usize = rest[..len].iter().map(Bundle::weight).sum();
        let (mut at, mut so_far) = (0, 0);
        ends.clear();
        for t in 0..threads {
            while at < len && so_far < total * (t + 1) / threads {
                so_far += rest[at].weight();
                at += 1;
            }
            ends.push(at);
        }
        for (t, part) in parts.iter_mut().enumerate() {
            let n = match taker {
                None => ends[t] - if t == 0 { 0 } else { ends[t - 1] },
                Some(taker) if taker == t => len,
                Some(_) => 0,
            };
            let (b, tail) = core::mem::take(&mut rest).split_at_mut(n);
            let (c, tail_cold) = core::mem::take(&mut rest_cold).split_at_mut(n);
            (rest, rest_cold) = (tail, tail_cold);
            part.runs.push((b, c));
        }
    }
    let shared = Shared {
        slots: SharedSlots(store),
        stages: Stages::new(threads),
        passes,
        alone: any_alone,
    };
    pool.share_out(parts, |part| {
        // A thread stopped by another's panic: the step ends in that panic.
        let _ = shared.run(part);
    });
    for (b, s) in states.bodies.iter_mut().zip(store) {
        *b = s.load();
    }
    shared.stages.arrived.into_inner() / threads
}

impl Shared<'_> {
    /// A thread's part: every stage in order, as `substeps` orders the
    /// passes on one thread.
    ///
    /// Stops (`None`) when another thread has panicked: that thread's
    /// panic is the one the pool's scope hands on.
    fn run(&self, mut part: Part<'_>) -> Option<()> {
        let _failed = Failed(&self.stages.failed);
        let p = self.passes;
        let mut buf: Vec<SolverBody> = Vec::with_capacity(BODY_BLOCK);
        let mut stage = 0;
        let mut slots = self.slots;
        let bodies = part.bodies.clone();
        for _ in 0..p.substeps {
            for k in bodies.clone() {
                let s = &self.slots.0[k];
                let mut body = s.load();
                integrate_velocity(&mut body, &p.deltas[k - 1], p.max_v);
                s.store_velocity(&body);
            }
            self.stages.wait(&mut stage)?;
            self.alone(&mut stage, &mut part.alone, |w, st| {
                joint::warm_start(w.joints, st);
                solver::warm_start(w.constraints, st);
            })?;
            for (b, _) in &part.runs {
                graph::warm_start(b, &mut slots);
                self.stages.wait(&mut stage)?;
            }
            self.solve::<true>(&mut stage, &mut part)?;
            for from in bodies.clone().step_by(BODY_BLOCK) {
                let range = from..(from + BODY_BLOCK).min(bodies.end);
                buf.clear();
                buf.extend(self.slots.0[range.clone()].iter().map(SharedBody::load));
                graph::integrate_positions(&mut buf, p.h);
                for (s, body) in self.slots.0[range].iter().zip(&buf) {
                    s.store_motion(body);
                }
            }
            self.stages.wait(&mut stage)?;
            self.solve::<false>(&mut stage, &mut part)?;
        }
        Some(())
    }

    /// The biased pass (`USE_BIAS`) or the relax pass, as one thread's
    /// step orders it: the overflow contacts, the runs, the joints.
    fn solve<const USE_BIAS: bool>(&self, stage: &mut usize, part: &mut Part<'_>) -> Option<()> {
        let p = self.passes;
        self.alone(stage, &mut part.alone, |w, st| {
            solver::solve_contacts(w.constraints, st, p.soft, w.inv_h, p.max_push, USE_BIAS);
        })?;
        let mut slots = self.slots;
        for (b, c) in &mut part.runs {
            graph::solve::<USE_BIAS, _>((b, c), &mut slots, p.soft, p.inv_h, p.max_push);
            self.stages.wait(stage)?;
        }
        self.alone(stage, &mut part.alone, |w, st| {
            joint::solve(w.joints, st, p.joint, USE_BIAS);
        })
    }

    /// A stage of what one thread solves alone (none when there is
    /// nothing): the thread that holds it works, the others wait.
    ///
    /// The work is done on the step's own states: the shared states of
    /// its bodies are copied in first (they are the latest), and out after.
    fn alone(
        &self,
        stage: &mut usize,
        alone: &mut Option<AloneHere<'_>>,
        work: impl FnOnce(&mut Alone<'_>, &mut States),
    ) -> Option<()> {
        if !self.alone {
            return Some(());
        }
        if let Some(a) = alone {
            let shared = self.slots.0;
            for &s in a.slots {
                a.states.bodies[s as usize] = shared[s as usize].load();
            }
            work(&mut a.work, a.states);
            for &s in a.slots {
                shared[s as usize].store(&a.states.bodies[s as usize]);
            }
        }
        self.stages.wait(stage)
    }
}

impl Stages {
    fn new(threads: usize) -> Stages {
        Stages {
            arrived: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            threads,
        }
    }

    /// Ends stage `stage` on this thread (then counts the next), and waits
    /// until every thread has ended it; `None` when a thread has panicked
    /// (it never will).
    fn wait(&self, stage: &mut usize) -> Option<()> {
        *stage += 1;
        let all = self.threads * *stage;
        let mut now = self.arrived.fetch_add(1, Ordering::AcqRel) + 1;
        let mut spins = 0;
        while now < all {
            if self.failed.load(Ordering::Relaxed) {
                return None;
            }
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            now = self.arrived.load(Ordering::Acquire);
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Failed, Stages};
    use crate::dynamics::joint::{DistanceJoint, RevoluteJoint};
    use crate::{
        BodyDef, BodyId, BodyKind, Circle, JointDef, JointKind, Polygon, Scalar, ShapeDef,
        ShapeGeometry, Vec2, World, WorldDef,
    };

    fn boxed(w: &mut World, at: Vec2, half: (Scalar, Scalar), def: &ShapeDef) -> BodyId {
        let b = w.create_body(&BodyDef::dynamic(at)).unwrap();
        let shape = ShapeGeometry::Polygon(Polygon::make_box(half.0, half.1));
        w.create_shape(b, def, shape).unwrap();
        b
    }

    /// A pyramid of 36 rows of unit boxes, a centimetre apart (666 boxes,
    /// some 1 900 contacts in one window: one island, which groups
    /// cannot share out). In it: two boxes of the base hinged together
    /// and the two top boxes tied by a rod (joints, solved alone, on
    /// bodies the runs also solve); a kinematic plank pushing into its
    /// left flank; bouncy balls reporting hits dropped on its right
    /// flank. Beside it, sixty small boxes on one long board: more
    /// contacts for one moving body than a window has colours, so some
    /// are solved one at a time (alone too).
    fn island() -> (World, BodyId) {
        let mut w = World::new(WorldDef::default()).unwrap();
        super::super::test_ground(&mut w, 0, 200);
        let half = (Scalar::HALF, Scalar::HALF);
        let mut rows: Vec<Vec<BodyId>> = Vec::new();
        for row in 0..36 {
            let y = Scalar::HALF + Scalar::ratio(row * 101, 100);
            let row_boxes = (0..36 - row)
                .map(|i| {
                    let x = Scalar::ratio(2 * i + row - 35, 2) * Scalar::ratio(101, 100);
                    boxed(&mut w, Vec2::new(x, y), half, &ShapeDef::default())
                })
                .collect();
            rows.push(row_boxes);
        }
        let hinge = JointKind::Revolute(RevoluteJoint::default());
        let mut def = JointDef::new(rows[0][10], rows[0][11], hinge);
        def.local_anchor_a = Vec2::new(Scalar::HALF, Scalar::ZERO);
        def.local_anchor_b = Vec2::new(-Scalar::HALF, Scalar::ZERO);
        w.create_joint(&def).unwrap();
        let rod = JointKind::Distance(DistanceJoint::default());
        w.create_joint(&JointDef::new(rows[34][0], rows[35][0], rod))
            .unwrap();
        // From the ground up four metres, its right side 2 cm short of the
        // base's left box (at x = −18.175), moving in at 1 m/s.
        let plank = w
            .create_body(&BodyDef {
                kind: BodyKind::Kinematic,
                linear_velocity: Vec2::new(Scalar::ONE, Scalar::ZERO),
                ..BodyDef::dynamic(Vec2::new(Scalar::ratio(-19195, 1000), Scalar::from_int(2)))
            })
            .unwrap();
        let board = ShapeGeometry::Polygon(Polygon::make_box(Scalar::ONE, Scalar::from_int(2)));
        w.create_shape(plank, &ShapeDef::default(), board).unwrap();
        let ball = ShapeGeometry::Circle(Circle {
            center: Vec2::ZERO,
            radius: Scalar::ratio(1, 4),
        });
        for k in 0..12 {
            let def = ShapeDef {
                restitution: Scalar::HALF,
                enable_hit_events: true,
                ..ShapeDef::default()
            };
            // Two or three metres above the flank.
            let at = Vec2::new(Scalar::from_int(k + 2), Scalar::from_int(35 - 2 * k));
            let b = w.create_body(&BodyDef::dynamic(at)).unwrap();
            w.create_shape(b, &def, ball).unwrap();
        }
        let long = (Scalar::from_int(40), Scalar::ratio(1, 4));
        boxed(&mut w, Vec2::from_ints(100, 0), long, &ShapeDef::default());
        let small = (Scalar::ratio(1, 4), Scalar::ratio(1, 4));
        for k in 0..60 {
            let at = Vec2::new(Scalar::from_int(70 + k), Scalar::ratio(1, 2));
            boxed(&mut w, at, small, &ShapeDef::default());
        }
        (w, rows[0][0])
    }

    /// The island on 2, 3 and 4 threads: every step's state and event
    /// hashes as on one thread; most steps' runs solved together, some
    /// with joints and contacts solved alone among them.
    #[test]
    fn runs_shared_out_keep_their_bits() {
        let run = |threads: usize| {
            let (mut w, corner) = island();
            let x0 = w.position(corner).unwrap().x;
            w.set_threads(threads).unwrap();
            let (mut digest, mut shared, mut alone, mut hits) = (0u64, 0, 0, 0);
            for _ in 0..60 {
                w.step();
                hits += w.contact_events().hit.len();
                for v in [w.state_hash(), w.event_hash()] {
                    digest = (digest ^ v).wrapping_mul(0x0000_0100_0000_01b3);
                }
                // The step's buffers are the thread's: look at them here.
                w.take_shared_scratch();
                let sc = &w.scratch;
                if sc.colour_stages > 0 {
                    shared += 1;
                    if !sc.joints.is_empty() && !sc.constraints.is_empty() {
                        alone += 1;
                    }
                }
            }
            // The plank pushed the base's corner box along.
            let pushed = w.position(corner).unwrap().x - x0;
            assert!(pushed > Scalar::ratio(1, 10), "pushed {pushed:?}");
            (digest, shared, alone, hits)
        };
        let (one, shared, _, hits) = run(1);
        assert_eq!(shared, 0, "one thread solves alone");
        assert!(hits > 5, "{hits} hits");
        for threads in [2, 3, 4] {
            let (digest, shared, alone, _) = run(threads);
            assert!(shared > 40, "{threads} threads: {shared} steps shared out");
            assert!(
                alone > 20,
                "{threads} threads: {alone} with joints and overflow"
            );
            assert_eq!(digest, one, "{threads} threads");
        }
    }

    /// The rule outside tests: large_pyramid on two threads is shared out
    /// (144 bundles a stage, 6 % of its bodies crossing, with eight
    /// lanes); the spinner's stirred debris (43 to 58 % crossing) and the
    /// tumbler (45 %) are not.
    #[test]
    fn the_rule_takes_the_pyramid_not_the_stirred_debris() {
        let taken = |scene: &str, steps: u32, threads: usize| {
            let mut sc = crate::scene::build_scene(scene).unwrap();
            sc.world.set_threads(threads).unwrap();
            for _ in 0..steps {
                sc.step();
            }
            sc.world.take_shared_scratch();
            let s = &mut sc.world.scratch;
            let (runs, bundles) = (s.graph.runs(), s.graph.bundles());
            let slots = s.states.len();
            super::worth_within(
                &super::LIMITS,
                (runs, bundles),
                slots,
                threads,
                &mut s.colour.seen,
            )
        };
        assert!(taken("large_pyramid", 2, 2));
        assert!(!taken("spinner", 240, 2));
        assert!(!taken("tumbler", 100, 2));
    }

    /// A thread that unwinds does not leave the others waiting for it:
    /// they stop, and the pool's scope (as the step shares out its parts)
    /// hands on that thread's panic, not another.
    #[test]
    fn a_thread_that_panics_stops_the_others_waiting() {
        let pool = super::Workers::new(3).unwrap();
        let stages = Stages::new(3);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.share_out(0..3, |t| {
                let _failed = Failed(&stages.failed);
                let mut stage = 0;
                let mut go = || -> Option<()> {
                    stages.wait(&mut stage)?;
                    assert!(t != 1, "thread 1 fails in its second stage");
                    stages.wait(&mut stage)?;
                    stages.wait(&mut stage)
                };
                let _ = go();
            });
        }));
        let payload = outcome.expect_err("the panic is handed on");
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        assert_eq!(
            message.as_deref(),
            Some("thread 1 fails in its second stage")
        );
        assert!(stages.failed.into_inner());
    }
}

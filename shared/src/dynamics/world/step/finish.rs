//! Stage **finish**, the last of the solve: restitution (a step solved in
//! groups applied it at each group's end, `substeps`), the impulses stored
//! for the next warm start, hit events, the bodies finalized (transforms,
//! sleep timers), continuous collision (see `ccd`), the fat boxes, and the
//! joints that broke destroyed and reported.

use super::Solve;
use crate::collision::SPECULATIVE_DISTANCE;
use crate::dynamics::body::{Body, BodyConfig, BodyKind, NONE};
use crate::dynamics::ccd::{self, CcdScratch};
use crate::dynamics::graph;
use crate::dynamics::joint;
use crate::dynamics::shape::fat_box;
use crate::dynamics::solver::{self, SolverBody};
use crate::dynamics::world::{World, WorldState};
use crate::math::{Aabb, Rot, Scalar, Transform, Vec2, WORLD_BOUND};

impl World {
    /// Finishes the solve.
    pub(super) fn finish(&mut self, solve: &Solve) {
        let Solve {
            dt,
            inv_h,
            any_hit_events,
            ..
        } = *solve;
        let pool = self.pool.as_deref();
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let ev = &mut self.events;
        let set = st.settings;
        solver::apply_restitution(
            &mut sc.constraints,
            &sc.constraints_cold,
            &mut sc.states,
            set.restitution_threshold,
        );
        // (Groups, solved apart, applied theirs at their substeps' end.)
        if sc.groups.used == 0 {
            graph::apply_restitution(
                sc.graph.bundles_mut(),
                &mut sc.states,
                set.restitution_threshold,
            );
        }
        // The impulses go into the key-ordered list; `collide`,
        // which visits every contact anyway, stores them for the next warm
        // start (a pass of its own cost a cache miss per contact on large
        // piles).
        // Every solved contact is in a bundle or the overflow list, so the
        // two copies write every entry.
        sc.impulses.clear();
        sc.impulses
            .resize(sc.solved_keys.len(), solver::Impulses::default());
        let out = (&mut sc.impulses[..], &mut sc.constraints_cold[..]);
        solver::store_impulses(&sc.constraints, out, any_hit_events);
        let out = (&mut sc.impulses[..], &mut sc.constraints_cold[..]);
        sc.graph.store(out, any_hit_events);
        if any_hit_events {
            for cold in &sc.constraints_cold {
                if cold.hit_events {
                    let c = &st.contacts[cold.contact as usize];
                    ev.check_hit(&st.shapes, c, cold, set.hit_event_threshold);
                }
            }
        }

        // A step solved in groups has each group's joints (`groups`).
        let broken = &mut sc.broken;
        let mut take = |js: &joint::JointSolver| {
            joint::store_impulses(js, &mut st.joints);
            let (joints, bodies, config) = (&st.joints, &st.bodies, &st.body_config);
            joint::find_broken(js, joints, bodies, config, inv_h, broken);
        };
        let groups = &sc.groups.list[..sc.groups.used];
        if groups.is_empty() {
            take(&sc.joints);
        } else {
            groups.iter().for_each(|g| take(&g.joints));
            // In joint order, as one solver's are.
            sc.broken.sort_unstable();
        }

        // Finalize bodies, first remembering where each starts for
        // continuous collision and whether it is fast.
        let sleep_on = set.enable_sleep;
        let continuous = set.enable_continuous;
        sc.ccd.begin(sc.awake.len());
        let pool = pool.filter(|p| sc.awake.len() >= p.threads() * PARALLEL_BODIES);
        match pool {
            None => {
                for (k, &bi) in sc.awake.iter().enumerate() {
                    let s = sc.states.bodies[k + 1];
                    let c = &st.body_config[bi as usize];
                    let b = &mut st.bodies[bi as usize];
                    if continuous {
                        sc.ccd.record(b, c, &s, dt);
                    }
                    finalize(b, c, &s, dt, sleep_on);
                }
            }
            Some(pool) => {
                // Ranges of the awake bodies (in body order), each with its
                // stretch of the bodies and of the start poses, and lists of
                // its own for the fast bodies, taken in order after.
                let threads = pool.threads();
                let awake = &sc.awake[..];
                let per = awake.len().div_ceil(threads);
                if sc.finish_ranges.len() < threads {
                    sc.finish_ranges.resize_with(threads, FinishRange::default);
                }
                let mut starts = if continuous {
                    sc.ccd.starts(awake.len())
                } else {
                    &mut []
                };
                let (states, configs) = (&sc.states.bodies[..], &st.body_config[..]);
                let total = st.bodies.len();
                let (mut bodies, mut base) = (&mut st.bodies[..], 0usize);
                let mut jobs = Vec::with_capacity(threads);
                for (r, (ks, out)) in awake
                    .chunks(per)
                    .zip(sc.finish_ranges.iter_mut())
                    .enumerate()
                {
                    let k0 = r * per;
                    let end = awake.get(k0 + ks.len()).map_or(total, |&b| b as usize);
                    let (mine, rest) = core::mem::take(&mut bodies).split_at_mut(end - base);
                    bodies = rest;
                    let cut = if continuous { ks.len() } else { 0 };
                    let (st_r, rest) = core::mem::take(&mut starts).split_at_mut(cut);
                    starts = rest;
                    jobs.push(Finalize {
                        k0,
                        awake: ks,
                        bodies: mine,
                        base,
                        starts: st_r,
                        out,
                    });
                    base = end;
                }
                let run = |job: Finalize<'_>| {
                    for (i, &bi) in job.awake.iter().enumerate() {
                        let k = job.k0 + i;
                        let s = states[k + 1];
                        let c = &configs[bi as usize];
                        let b = &mut job.bodies[bi as usize - job.base];
                        if continuous {
                            job.starts[i] = (b.center, b.transform.q);
                            let lists = (&mut job.out.fast, &mut job.out.bullets);
                            ccd::record_fast(k as u32, b, c, &s, dt, lists);
                        }
                        finalize(b, c, &s, dt, sleep_on);
                    }
                };
                pool.share_out(jobs, run);
                for out in &mut sc.finish_ranges[..threads] {
                    sc.ccd.append_fast(&mut out.fast, &mut out.bullets);
                }
            }
        }
        if continuous {
            ccd::solve_continuous(st, &sc.awake, &sc.slot_of, &mut sc.ccd);
        }
        // The fat boxes, from each shape's box at its body's pose: for a
        // fast body that continuous collision left where it was, the box it
        // computed for the sweep (in rain, 7,700 shapes a step). With
        // workers, ranges of the awake bodies find the boxes that grow, and
        // this thread grows them in the tree in body order.
        match pool {
            None => {
                for (k, &bi) in sc.awake.iter().enumerate() {
                    let (first, xf) = {
                        let b = &st.bodies[bi as usize];
                        (b.first_shape, b.transform)
                    };
                    let (mut s, mut j) = (first, 0);
                    while s != NONE {
                        let grow = outgrown(st, &sc.ccd, (k, j), s, xf);
                        if let Some(fat) = grow {
                            grow_fat_box(st, s, fat);
                        }
                        s = st.shapes[s as usize].next;
                        j += 1;
                    }
                }
            }
            Some(pool) => {
                let threads = pool.threads();
                let awake = &sc.awake[..];
                let per = awake.len().div_ceil(threads);
                let (state, ccd) = (&*st, &sc.ccd);
                let run = |k0: usize, ks: &[u32], out: &mut FinishRange| {
                    for (i, &bi) in ks.iter().enumerate() {
                        let b = &state.bodies[bi as usize];
                        let (mut s, mut j) = (b.first_shape, 0);
                        while s != NONE {
                            if let Some(fat) = outgrown(state, ccd, (k0 + i, j), s, b.transform) {
                                out.grow.push((s, fat));
                            }
                            s = state.shapes[s as usize].next;
                            j += 1;
                        }
                    }
                };
                let jobs = awake.chunks(per).zip(sc.finish_ranges.iter_mut());
                pool.share_out(jobs.enumerate(), |(r, (ks, out))| run(r * per, ks, out));
                for out in &mut sc.finish_ranges[..threads] {
                    for (s, fat) in out.grow.drain(..) {
                        grow_fat_box(st, s, fat);
                    }
                }
            }
        }
        if !sc.broken.is_empty() {
            let broken = core::mem::take(&mut sc.broken);
            self.break_joints(&broken);
            self.scratch.broken = broken;
        }
    }
}

/// Awake bodies per thread from which the bodies are finalized in ranges.
/// Each body takes little work here, and a body finalized on a worker is
/// read by this thread soon after (the pair search, the narrow phase) from
/// the worker's cache: on two threads of this VM, 22 000 bodies
/// (`many_pyramids`) finished in 2.6–3.0 ms instead of 3.5–4.4, but 5 000
/// to 11 000 (`large_pyramid`, `spinner`, `rain`) took up to 10 % longer
/// than on one, while a worker took 60 µs to wake. With the workers kept
/// awake (`world/workers.rs`), 2 048 a thread: on two threads the finish
/// stage's median fell from 0.36 to 0.28 ms in large_pyramid, 1.35 to 1.25
/// in the spinner and 0.82 to 0.77 in rain, and their steps moved by
/// +1 to −3 % (`sim --profile --threads 2`, two runs each).
/// (Unit tests take smaller ranges, so that small worlds cover middle
/// ranges on three and four threads.)
const PARALLEL_BODIES: usize = if cfg!(test) { 256 } else { 2048 };

/// A range of the awake bodies' lists (scratch): its fast bodies and
/// bullets, and the fat boxes its shapes outgrew. Aligned to two lines, so
/// that two ranges' pushes never write one line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct FinishRange {
    fast: Vec<u32>,
    bullets: Vec<u32>,
    grow: Vec<(u32, Aabb)>,
}

/// A range of the awake bodies to finalize: its first place in the awake
/// list and their body indices, its stretch of the bodies (from body
/// `base`) and of the start poses, and its lists.
struct Finalize<'a> {
    k0: usize,
    awake: &'a [u32],
    bodies: &'a mut [Body],
    base: usize,
    starts: &'a mut [(Vec2, Rot)],
    out: &'a mut FinishRange,
}

/// Moves body `b` (config `c`) to where its solver state `s` took it this
/// step (`dt`), with its velocities, and counts its time at rest
/// (`sleep_on`: the world lets bodies sleep).
#[inline(always)]
fn finalize(b: &mut Body, c: &BodyConfig, s: &SolverBody, dt: Scalar, sleep_on: bool) {
    b.linear_velocity = s.v;
    b.angular_velocity = s.w;
    b.force = Vec2::ZERO;
    b.torque = Scalar::ZERO;
    b.center += s.dp;
    b.transform.q = s.dq.mul_rot(b.transform.q).normalize();
    b.transform.p = b.center - b.transform.q.rotate(c.local_center);
    let p = b.transform.p;
    if p.x.abs() > WORLD_BOUND || p.y.abs() > WORLD_BOUND {
        // Leaving the world: the body stops at its edge. Nothing in a sane
        // scene goes there (10 km out), but a body thrown by an extreme
        // mass ratio, or falling for minutes, would otherwise take the
        // arithmetic past the range the overflow policy relies on (found by
        // fuzzing replays), and its snapshots would no longer decode.
        b.transform.p = Vec2::new(
            p.x.clamp(-WORLD_BOUND, WORLD_BOUND),
            p.y.clamp(-WORLD_BOUND, WORLD_BOUND),
        );
        b.center = b.transform.p + b.transform.q.rotate(c.local_center);
        b.linear_velocity = Vec2::ZERO;
        b.angular_velocity = Scalar::ZERO;
    }
    if !sleep_on || !c.enable_sleep {
        b.sleep_time = Scalar::ZERO;
    } else if sleepy(s, c.max_extent, c.sleep_threshold, dt) {
        b.sleep_time += dt;
    } else {
        b.sleep_time = Scalar::ZERO;
    }
}

/// The fat box shape `s` (shape `j` of awake body `k`, at pose `xf`) needs,
/// if its box left its fat box: from the box continuous collision computed
/// for it, if any.
#[inline(always)]
fn outgrown(
    st: &WorldState,
    ccd: &CcdScratch,
    (k, j): (usize, usize),
    s: u32,
    xf: Transform,
) -> Option<Aabb> {
    let sh = &st.shapes[s as usize];
    let aabb = match ccd.end_box(k, j) {
        Some(aabb) => {
            debug_assert_eq!(aabb, st.geometry[s as usize].aabb(xf));
            aabb
        }
        None => st.geometry[s as usize].aabb(xf),
    };
    (!sh.fat_aabb.contains(&aabb.expand(SPECULATIVE_DISTANCE)))
        .then(|| fat_box(aabb, BodyKind::Dynamic, sh.margin))
}

/// Gives shape `s` the fat box `fat`, grown in the tree in place (the tree
/// is rebuilt before the next pair search), and queues it as moved.
#[inline]
fn grow_fat_box(st: &mut WorldState, s: u32, fat: Aabb) {
    let sh = &mut st.shapes[s as usize];
    sh.fat_aabb = fat;
    st.dynamic_tree.enlarge_proxy(sh.proxy, fat);
    if !sh.moved {
        sh.moved = true;
        st.moved.push(s);
    }
}

/// Whether a body moved slowly enough this step to count toward sleep, as
/// Box2D v3 decides it: the speed of its farthest point, `|v| + |ω|·r`
/// (`r` its largest extent), and half the rate of its motion over the
/// step, `(|Δp| + |Δq.s|·r) / 2dt` (position correction moves a body that
/// the relax pass has left without velocity), both at most `threshold`.
/// `|a| + e ≤ t` is decided without a square root: true when `e ≤ t` and
/// `a·a ≤ (t − e)²`. A ball rolling at 3 cm/s has `|v| + |ω|·r` of 6 cm/s
/// and keeps rolling, as in Box2D; the larger of the two terms, which this
/// compared before, put it to sleep after half a second.
///
/// A threshold above [`SLEEP_THRESHOLD_CAP`] counts as the cap (no body
/// moves that fast: speeds stop at `max_linear_speed`, at most the world's
/// bound a second), so that `(t − e)²` stays within range for any
/// threshold a body was given.
#[inline]
fn sleepy(s: &SolverBody, extent: Scalar, threshold: Scalar, dt: Scalar) -> bool {
    let threshold = threshold.min(SLEEP_THRESHOLD_CAP);
    let within = |a: Vec2, e: Scalar, t: Scalar| e <= t && a.dot(a) <= (t - e) * (t - e);
    within(s.v, s.w.abs() * extent, threshold)
        && within(s.dp, s.dq.s.abs() * extent, (threshold * dt).shl(1))
}

/// The largest sleep threshold [`sleepy`] takes as given (m/s): twice the
/// world's bound, above any speed (`|v| ≤ √2 · WORLD_BOUND` a second) and
/// with its square (4·10⁸) within Q32.32's range (2³¹).
const SLEEP_THRESHOLD_CAP: Scalar = WORLD_BOUND.shl(1);

#[cfg(test)]
mod tests {
    use crate::{BodyDef, Polygon, Scalar, ShapeDef, ShapeGeometry, Vec2, World, WorldDef};

    /// A bed of small boxes, every third without hit events and every
    /// other one bouncy, dropped in staggered rows onto three free planks
    /// (sixty boxes each, more than a window's colours for one moving body,
    /// so some of their contacts are solved one at a time) and onto the
    /// ground: enough touching contacts for two threads' ranges.
    fn bed() -> World {
        let mut w = World::new(WorldDef::default()).unwrap();
        super::super::test_ground(&mut w, 0, 60);
        let plank =
            ShapeGeometry::Polygon(Polygon::make_box(Scalar::from_int(9), Scalar::ratio(1, 8)));
        for p in 0..3 {
            let b = w
                .create_body(&BodyDef::dynamic(Vec2::new(
                    Scalar::from_int(p * 20 - 20),
                    Scalar::ratio(1, 8),
                )))
                .unwrap();
            w.create_shape(b, &ShapeDef::default(), plank).unwrap();
        }
        let small =
            ShapeGeometry::Polygon(Polygon::make_box(Scalar::ratio(1, 8), Scalar::ratio(1, 8)));
        for row in 0..8 {
            for col in 0..330 {
                let def = ShapeDef {
                    enable_hit_events: col % 3 != 0,
                    restitution: if col % 2 == 0 {
                        Scalar::ratio(1, 2)
                    } else {
                        Scalar::ZERO
                    },
                    ..ShapeDef::default()
                };
                let x = Scalar::ratio(col * 3 - 495, 10) + Scalar::ratio(row % 2, 20);
                let y = Scalar::ratio(row * 4 + 6, 10) + Scalar::ratio(col % 7, 40);
                let b = w.create_body(&BodyDef::dynamic(Vec2::new(x, y))).unwrap();
                w.create_shape(b, &def, small).unwrap();
            }
        }
        w
    }

    /// The narrow phase and the bodies' finishing in ranges, on three and
    /// four threads (middle ranges: the unit tests' ranges are small), with
    /// balls and bullets shot across the bed (fast bodies recorded by the
    /// ranges for continuous collision): every step's state and event
    /// hashes as on one thread, and both stages did walk in ranges.
    #[test]
    fn middle_ranges_keep_their_bits() {
        use crate::{BodyKind, Circle};
        let run = |threads: usize| {
            let mut w = bed();
            let ball = ShapeGeometry::Circle(Circle {
                center: Vec2::ZERO,
                radius: Scalar::ratio(1, 20),
            });
            for k in 0..30 {
                let def = BodyDef {
                    linear_velocity: Vec2::new(
                        Scalar::from_int(if k % 2 == 0 { 120 } else { -120 }),
                        Scalar::ZERO,
                    ),
                    bullet: k % 3 == 0,
                    ..BodyDef::dynamic(Vec2::new(
                        Scalar::from_int(if k % 2 == 0 { -58 } else { 58 }),
                        Scalar::ratio(k % 6 + 1, 5),
                    ))
                };
                let b = w.create_body(&def).unwrap();
                w.create_shape(b, &ShapeDef::default(), ball).unwrap();
            }
            w.set_threads(threads).unwrap();
            let mut digest = 0u64;
            for _ in 0..40 {
                w.step();
                for v in [w.state_hash(), w.event_hash()] {
                    digest = (digest ^ v).wrapping_mul(0x0000_0100_0000_01b3);
                }
            }
            let parts = w.scratch.recycler.split().len();
            w.take_shared_scratch();
            let ranges = w.scratch.finish_ranges.len();
            let awake = w
                .state
                .bodies
                .iter()
                .filter(|b| b.awake && b.kind == BodyKind::Dynamic)
                .count();
            (digest, parts, ranges, awake)
        };
        let (one, parts, _, _) = run(1);
        assert_eq!(parts, 1);
        for threads in [3, 4] {
            let (digest, parts, ranges, awake) = run(threads);
            assert_eq!(parts, threads, "the narrow phase walked {threads} ranges");
            assert!(ranges >= threads, "the bodies finished in {threads} ranges");
            assert!(
                awake >= threads * super::PARALLEL_BODIES,
                "{awake} awake bodies"
            );
            assert_eq!(digest, one, "{threads} threads");
        }
    }

    /// Hit events and bounces from bundled contacts and from the overflow,
    /// for contacts that report hits beside ones that do not, on one thread
    /// and on two: every step's state hash and event digest fold into the
    /// value recorded when every solved contact had a cold entry (9f3c4a4;
    /// now only the overflow's and those reporting hits have one), as
    /// re-recorded when short vectors got exact lengths and unit directions,
    /// when the sleep test took the speed of a body's farthest point and
    /// when bodies got the `allow_fast_rotation` flag, which the state hash
    /// covers, and when the contacts were coloured in windows of 8 192 (the
    /// golden changes of 2026-11-30).
    #[test]
    fn hits_from_bundles_and_the_overflow_keep_their_bits() {
        let run = |threads: usize| {
            let mut w = bed();
            w.set_threads(threads).unwrap();
            let (mut digest, mut hits, mut overflow_hits) = (0u64, 0usize, 0usize);
            for _ in 0..50 {
                w.step();
                hits += w.contact_events().hit.len();
                // The step's buffers are the thread's: look at them here.
                w.take_shared_scratch();
                let sc = &w.scratch;
                overflow_hits += sc
                    .constraints
                    .iter()
                    .filter(|c| sc.constraints_cold[c.cold_index as usize].hit_events)
                    .count();
                for v in [w.state_hash(), w.event_hash()] {
                    digest = (digest ^ v).wrapping_mul(0x0000_0100_0000_01b3);
                }
            }
            (digest, hits, overflow_hits, w.touching_contact_count())
        };
        let (digest, hits, overflow_hits, touching) = run(1);
        assert!(touching > 2 * 1024, "{touching} touching contacts");
        assert!(hits > 200, "{hits} hits");
        assert!(
            overflow_hits > 10,
            "{overflow_hits} overflow contacts with hit events"
        );
        assert_eq!(run(2).0, digest, "two threads");
        assert_eq!(digest, 0x1e74_2cd4_3de2_2953);
    }
}

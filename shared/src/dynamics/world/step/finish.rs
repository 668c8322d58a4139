//! Stage **finish**, the last of the solve: restitution, the impulses stored
//! for the next warm start, hit events, the bodies finalized (transforms,
//! sleep timers), continuous collision (see `ccd`), the fat boxes, and the
//! joints that broke destroyed and reported.

use super::Solve;
use crate::collision::SPECULATIVE_DISTANCE;
use crate::dynamics::body::{BodyKind, NONE};
use crate::dynamics::ccd;
use crate::dynamics::graph;
use crate::dynamics::joint;
use crate::dynamics::shape::fat_box;
use crate::dynamics::solver;
use crate::dynamics::world::World;
use crate::math::{Scalar, Vec2, WORLD_BOUND};

impl World {
    /// Finishes the solve.
    pub(super) fn finish(&mut self, solve: &Solve) {
        let Solve {
            dt,
            inv_h,
            any_hit_events,
            ..
        } = *solve;
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
        graph::apply_restitution(
            sc.graph.bundles_mut(),
            &mut sc.states,
            set.restitution_threshold,
        );
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

        joint::store_impulses(&sc.joints, &mut st.joints);
        joint::find_broken(
            &sc.joints,
            &st.joints,
            &st.bodies,
            &st.body_config,
            inv_h,
            &mut sc.broken,
        );

        // Finalize bodies, first remembering where each starts for
        // continuous collision and whether it is fast.
        let sleep_on = set.enable_sleep;
        let continuous = set.enable_continuous;
        sc.ccd.begin(sc.awake.len());
        for (k, &bi) in sc.awake.iter().enumerate() {
            let s = sc.states.bodies[k + 1];
            let c = &st.body_config[bi as usize];
            let b = &mut st.bodies[bi as usize];
            if continuous {
                sc.ccd.record(b, c, &s, dt);
            }
            b.linear_velocity = s.v;
            b.angular_velocity = s.w;
            b.force = Vec2::ZERO;
            b.torque = Scalar::ZERO;
            b.center += s.dp;
            b.transform.q = s.dq.mul_rot(b.transform.q).normalize();
            b.transform.p = b.center - b.transform.q.rotate(c.local_center);
            let p = b.transform.p;
            if p.x.abs() > WORLD_BOUND || p.y.abs() > WORLD_BOUND {
                // Leaving the world: the body stops at its edge. Nothing in
                // a sane scene goes there (10 km out), but a body thrown by
                // an extreme mass ratio, or falling for minutes, would
                // otherwise take the arithmetic past the range the overflow
                // policy relies on (found by fuzzing replays), and its
                // snapshots would no longer decode.
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
            } else if sleepy(&s, c.max_extent, c.sleep_threshold, dt) {
                b.sleep_time += dt;
            } else {
                b.sleep_time = Scalar::ZERO;
            }
        }
        if continuous {
            ccd::solve_continuous(st, &sc.awake, &sc.slot_of, &mut sc.ccd);
        }
        // The fat boxes, from each shape's box at its body's pose: for a
        // fast body that continuous collision left where it was, the box it
        // computed for the sweep (in rain, 7,700 shapes a step).
        for k in 0..sc.awake.len() {
            let bi = sc.awake[k];
            let b = &st.bodies[bi as usize];
            let (mut s, xf) = (b.first_shape, b.transform);
            let mut j = 0;
            while s != NONE {
                let sh = &mut st.shapes[s as usize];
                let aabb = match sc.ccd.end_box(k, j) {
                    Some(aabb) => {
                        debug_assert_eq!(aabb, st.geometry[s as usize].aabb(xf));
                        aabb
                    }
                    None => st.geometry[s as usize].aabb(xf),
                };
                j += 1;
                if !sh.fat_aabb.contains(&aabb.expand(SPECULATIVE_DISTANCE)) {
                    sh.fat_aabb = fat_box(aabb, BodyKind::Dynamic, sh.margin);
                    // Grown in place; the tree is rebuilt before the next
                    // pair search.
                    st.dynamic_tree.enlarge_proxy(sh.proxy, sh.fat_aabb);
                    if !sh.moved {
                        sh.moved = true;
                        st.moved.push(s);
                    }
                }
                s = sh.next;
            }
        }
        if !sc.broken.is_empty() {
            let broken = core::mem::take(&mut sc.broken);
            self.break_joints(&broken);
            self.scratch.broken = broken;
        }
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
fn sleepy(s: &solver::SolverBody, extent: Scalar, threshold: Scalar, dt: Scalar) -> bool {
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
        let g = w
            .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
            .unwrap();
        let wide = ShapeGeometry::Polygon(Polygon::make_box(Scalar::from_int(60), Scalar::ONE));
        w.create_shape(g, &ShapeDef::default(), wide).unwrap();
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

    /// Hit events and bounces from bundled contacts and from the overflow,
    /// for contacts that report hits beside ones that do not, on one thread
    /// and on two: every step's state hash and event digest fold into the
    /// value recorded when every solved contact had a cold entry (9f3c4a4;
    /// now only the overflow's and those reporting hits have one), as
    /// re-recorded when short vectors got exact lengths and unit directions,
    /// when the sleep test took the speed of a body's farthest point and
    /// when bodies got the `allow_fast_rotation` flag, which the state hash
    /// covers (the golden changes of 2026-11-30).
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
        assert_eq!(digest, 0x1ec6_0d49_b972_94e4);
    }
}

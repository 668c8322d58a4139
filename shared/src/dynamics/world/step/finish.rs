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

        if set.enable_continuous {
            ccd::record_starts(st, &sc.awake, &mut sc.ccd);
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

        // Finalize bodies.
        let sleep_on = set.enable_sleep;
        for (k, &bi) in sc.awake.iter().enumerate() {
            let s = sc.states.bodies[k + 1];
            let c = &st.body_config[bi as usize];
            let b = &mut st.bodies[bi as usize];
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
            } else {
                // Compare squared speeds: no square root needed.
                let wr = c.max_extent * s.w;
                let speed2 = s.v.dot(s.v).max(wr * wr);
                if speed2 > c.sleep_threshold * c.sleep_threshold {
                    b.sleep_time = Scalar::ZERO;
                } else {
                    b.sleep_time += dt;
                }
            }
        }
        if set.enable_continuous {
            ccd::solve_continuous(st, &sc.awake, &sc.slot_of, &sc.states, dt, &mut sc.ccd);
        }
        for k in 0..sc.awake.len() {
            let bi = sc.awake[k];
            let b = &st.bodies[bi as usize];
            let (mut s, xf) = (b.first_shape, b.transform);
            while s != NONE {
                let sh = &mut st.shapes[s as usize];
                let aabb = st.geometry[s as usize].aabb(xf);
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

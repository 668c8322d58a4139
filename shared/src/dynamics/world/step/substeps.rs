//! Stage **substeps**, the second of the solve: each substep integrates
//! the velocities, warm starts, solves the contacts then the joints,
//! integrates the positions and relaxes, contacts then joints again (the
//! soft step, see `solver`).
//!
//! # Joints last
//!
//! In each pass the joints have the final word. A contact's push out of an
//! overlap is capped (`contact_push_max_velocity`) and soft; a joint's
//! correction is neither. Solved before the contacts, the joints lost
//! every pass to a contact that could not win either: a limb caught across
//! another ragdoll's knee (both bones of the knee overlapping it by 6 to
//! 8 cm, the knee's limit holding them shut) was pushed open by its two
//! contacts at the end of every biased pass and pulled shut by the limit
//! and the spring at the start of the next, and the exchange wound the
//! whole ragdoll up: it spun at 4 to 8 rad/s and struck its neighbours.
//! Of the behaviour suite's seven heaps of twelve ragdolls
//! (`ragdoll_heaps`), one was still awake after 10 s and one slept at
//! 7.5 s, where Box2D's all slept by 4.2 s (Box2D solves each colour's
//! joints, then its contacts, and a ragdoll's joints hold the low colours,
//! so its contacts mostly come after). Solved last, the joint holds and
//! the contact's push is spent against it: the seven heaps sleep by 4.9 s.

use super::Solve;
use crate::dynamics::body::{angular_speed_cap, BodyKind};
use crate::dynamics::graph;
use crate::dynamics::joint;
use crate::dynamics::solver;
use crate::dynamics::world::World;
use crate::math::{Scalar, Vec2};

impl World {
    /// Runs the substeps of the solve.
    pub(super) fn substeps(&mut self, solve: &Solve) {
        let Solve {
            h,
            inv_h,
            inv_h_int,
            soft,
            joints: jctx,
            ..
        } = *solve;
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let set = st.settings;
        let n = set.substeps;
        // Per-body velocity increments for the step.
        let max_v = set.max_linear_speed;
        let mut deltas: Vec<(Vec2, Scalar, Scalar, Scalar)> = Vec::with_capacity(sc.awake.len());
        // Each body's cap on its angular speed (Box2D's), in slot order.
        let slow_cap = angular_speed_cap(set.tick_rate, n, false);
        let fast_cap = angular_speed_cap(set.tick_rate, n, true);
        let mut caps: Vec<Scalar> = Vec::with_capacity(sc.awake.len());
        for &bi in &sc.awake {
            let fast = st.body_config[bi as usize].allow_fast_rotation;
            caps.push(if fast { fast_cap } else { slow_cap });
            let b = &st.bodies[bi as usize];
            if b.kind == BodyKind::Dynamic {
                let c = &st.body_config[bi as usize];
                let dv = (set.gravity * c.gravity_scale).mul_add(c.inv_mass, b.force) * h;
                let dw = h * c.inv_inertia * b.torque;
                let ld = if c.linear_damping.is_zero() {
                    Scalar::ONE
                } else {
                    (Scalar::ONE + h * c.linear_damping).recip()
                };
                let ad = if c.angular_damping.is_zero() {
                    Scalar::ONE
                } else {
                    (Scalar::ONE + h * c.angular_damping).recip()
                };
                deltas.push((dv, dw, ld, ad));
            } else {
                deltas.push((Vec2::ZERO, Scalar::ZERO, Scalar::ONE, Scalar::ONE));
            }
        }

        for _ in 0..n {
            // Integrate velocities, capping the speeds: Box2D's caps (see
            // `angular_speed_cap`), taken here and not where Box2D takes
            // them, after the solve as the positions are integrated. Taken
            // there, the cap undid what the joints, solved last here (see
            // the module docs), had just given a spinning bone: of the
            // behaviour suite's 960 ragdoll heaps, 23 never slept (9 with
            // the cap here, 3 in Box2D) and a heap's joint opened 12 cm.
            for (k, (d, &cap)) in deltas.iter().zip(&caps).enumerate() {
                let still = !sc.states.moves(k as u32 + 1) && d.0 == Vec2::ZERO;
                let s = &mut sc.states.bodies[k + 1];
                if still {
                    // A kinematic body: nothing to add, but Box2D caps its
                    // speeds too (a scene's start, a decoded state).
                    s.v = s.v.clamp_length(max_v);
                    s.w = s.w.clamp(-cap, cap);
                    continue;
                }
                // Undamped bodies (damping factor exactly one) skip the
                // products by one, which would not change a bit.
                let v = if d.2 == Scalar::ONE { s.v } else { s.v * d.2 };
                let w = if d.3 == Scalar::ONE { s.w } else { s.w * d.3 };
                s.v = (d.0 + v).clamp_length(max_v);
                s.w = (d.1 + w).clamp(-cap, cap);
            }
            joint::warm_start(&mut sc.joints, &mut sc.states);
            solver::warm_start(&sc.constraints, &mut sc.states);
            graph::warm_start(sc.graph.bundles(), &mut sc.states);
            solver::solve_contacts(
                &mut sc.constraints,
                &mut sc.states,
                &soft,
                inv_h,
                set.contact_push_max_velocity,
                true,
            );
            graph::solve::<true>(
                sc.graph.bundles_mut(),
                &mut sc.states,
                &soft,
                inv_h_int,
                set.contact_push_max_velocity,
            );
            // The joints last (see the module docs).
            joint::solve(&mut sc.joints, &mut sc.states, &jctx, true);
            // Integrate positions.
            graph::integrate_positions(&mut sc.states.bodies[1..], h);
            solver::solve_contacts(
                &mut sc.constraints,
                &mut sc.states,
                &soft,
                inv_h,
                set.contact_push_max_velocity,
                false,
            );
            graph::solve::<false>(
                sc.graph.bundles_mut(),
                &mut sc.states,
                &soft,
                inv_h_int,
                set.contact_push_max_velocity,
            );
            joint::solve(&mut sc.joints, &mut sc.states, &jctx, false);
        }
    }
}

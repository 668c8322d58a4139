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

use super::{colours, Solve};
use crate::dynamics::body::{angular_speed_cap, BodyKind};
use crate::dynamics::graph;
use crate::dynamics::joint;
use crate::dynamics::solver::{self, SolverBody};
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
        let pool = self.pool.as_deref();
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let set = st.settings;
        let n = set.substeps;
        // Per-body velocity increments for the step, in slot order.
        let max_v = set.max_linear_speed;
        let slow_cap = angular_speed_cap(set.tick_rate, n, false);
        let fast_cap = angular_speed_cap(set.tick_rate, n, true);
        sc.colour_stages = 0;
        let mut deltas: Vec<Increment> = Vec::with_capacity(sc.awake.len());
        for &bi in &sc.awake {
            let b = &st.bodies[bi as usize];
            let c = &st.body_config[bi as usize];
            let spin_cap = if c.allow_fast_rotation {
                fast_cap
            } else {
                slow_cap
            };
            if b.kind == BodyKind::Dynamic {
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
                deltas.push(Increment {
                    dv,
                    dw,
                    linear_damping: ld,
                    angular_damping: ad,
                    spin_cap,
                });
            } else {
                // A kinematic body: nothing added, but its speeds are
                // capped too, as Box2D's (a scene's start, a decoded state).
                deltas.push(Increment {
                    dv: Vec2::ZERO,
                    dw: Scalar::ZERO,
                    linear_damping: Scalar::ONE,
                    angular_damping: Scalar::ONE,
                    spin_cap,
                });
            }
        }

        if sc.groups.used > 0 {
            // Each group's substeps and restitution on a thread, in the
            // order below (see `groups`: no contact solved one at a time).
            let Some(pool) = pool else {
                unreachable!("groups are planned only with workers")
            };
            let groups = &mut sc.groups;
            let parts = sc.graph.group_parts(&groups.bundles);
            let jobs = parts.into_iter().zip(&mut groups.list[..groups.used]);
            let deltas = &deltas[..];
            let threshold = set.restitution_threshold;
            let push = set.contact_push_max_velocity;
            pool.share_out(jobs, |(part, g)| {
                let states = &mut g.states;
                let (bundles, cold) = (part.bundles, part.cold);
                for _ in 0..n {
                    for (k, &s) in g.members.iter().enumerate() {
                        let d = &deltas[s as usize - 1];
                        integrate_velocity(&mut states.bodies[k + 1], d, max_v);
                    }
                    joint::warm_start(&mut g.joints, states);
                    graph::warm_start(bundles, states);
                    graph::solve::<true, _>((bundles, cold), states, &soft, inv_h_int, push);
                    joint::solve(&mut g.joints, states, &jctx, true);
                    graph::integrate_positions(&mut states.bodies[1..], h);
                    graph::solve::<false, _>((bundles, cold), states, &soft, inv_h_int, push);
                    joint::solve(&mut g.joints, states, &jctx, false);
                }
                graph::apply_restitution((bundles, cold), states, threshold);
            });
            groups.copy_out(&mut sc.states);
            return;
        }
        // One island (or too few to group) with enough work in each run of
        // one colour: its passes on every thread, run by run (`colours`).
        let threads = pool.map_or(1, |p| p.threads());
        if let Some(pool) = pool.filter(|_| {
            sc.solve_order.len() >= threads * super::prepare::PARALLEL_CONTACTS
                && colours::worth(
                    sc.graph.runs(),
                    sc.graph.bundles(),
                    sc.states.len(),
                    threads,
                    &mut sc.colour.seen,
                )
        }) {
            let passes = colours::Passes {
                substeps: n as usize,
                h,
                soft: &soft,
                inv_h: inv_h_int,
                max_push: set.contact_push_max_velocity,
                max_v,
                joint: &jctx,
                deltas: &deltas,
            };
            let alone = colours::Alone {
                joints: &mut sc.joints,
                constraints: &mut sc.constraints,
                inv_h,
            };
            let runs = sc.graph.runs_mut();
            sc.colour_stages =
                colours::substeps(pool, &mut sc.states, &mut sc.colour, runs, alone, &passes);
            return;
        }
        for _ in 0..n {
            // Integrate velocities, capping the speeds: Box2D's caps (see
            // `angular_speed_cap`), taken here and not where Box2D takes
            // them, after the solve as the positions are integrated. Taken
            // there, the cap undid what the joints, solved last here (see
            // the module docs), had just given a spinning bone: of the
            // behaviour suite's 960 ragdoll heaps, 23 never slept (9 with
            // the cap here, 3 in Box2D) and a heap's joint opened 12 cm.
            for (k, d) in deltas.iter().enumerate() {
                integrate_velocity(&mut sc.states.bodies[k + 1], d, max_v);
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
            graph::solve::<true, _>(
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
            graph::solve::<false, _>(
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

/// Integrates a body's velocity over a substep by `d`, capping its speeds.
#[inline(always)]
pub(super) fn integrate_velocity(s: &mut SolverBody, d: &Increment, max_v: Scalar) {
    // Undamped bodies (damping factor exactly one) skip the products by
    // one, which would not change a bit.
    let ld = d.linear_damping;
    let ad = d.angular_damping;
    let v = if ld == Scalar::ONE { s.v } else { s.v * ld };
    let w = if ad == Scalar::ONE { s.w } else { s.w * ad };
    s.v = (d.dv + v).clamp_length(max_v);
    s.w = (d.dw + w).clamp(-d.spin_cap, d.spin_cap);
}

/// What integrating the velocities adds to one body each substep: its
/// velocity increments and damping factors (one: none), and the cap on its
/// angular speed.
pub(super) struct Increment {
    dv: Vec2,
    dw: Scalar,
    linear_damping: Scalar,
    angular_damping: Scalar,
    spin_cap: Scalar,
}

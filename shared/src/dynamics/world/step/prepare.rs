//! Stage **prepare**, the first of the solve: solver slots for the awake
//! bodies, the contacts to solve coloured into bundles (see `graph`) and
//! prepared, the joints prepared (see `joint`).

use super::Solve;
use crate::dynamics::body::{Body, BodyKind, NO_ISLAND};
use crate::dynamics::contact::Contact;
use crate::dynamics::graph::{PrepareInputs, OVERFLOW};
use crate::dynamics::island;
use crate::dynamics::joint::{self, JointContext};
use crate::dynamics::solver::{self, BodyState, ConstraintPoint, ContactCold, ContactConstraint};
use crate::dynamics::world::{World, WorldState};
use crate::math::{prefetch, Rot, Scalar, Vec2};

/// How many contacts ahead the contact loop asks for the next contact's
/// line.
const PREFETCH_AHEAD: usize = 16;

/// Contacts per thread below which a step prepares them on its own thread
/// (handing out less work costs more than it saves).
pub(super) const PARALLEL_CONTACTS: usize = if cfg!(test) { 64 } else { 1024 };

impl World {
    /// Prepares the solve; `None` when no body is awake (nothing to solve).
    pub(super) fn prepare(&mut self) -> Option<Solve> {
        let pool = self.pool.as_deref();
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let set = st.settings;
        let dt = Scalar::ONE / Scalar::from_int(set.tick_rate as i32);
        let n = set.substeps;
        let h = dt / Scalar::from_int(n as i32);
        let inv_h_int = set.tick_rate * n;
        let inv_h = Scalar::from_int(inv_h_int as i32);
        sc.broken.clear();
        // Emptied before any early return: `collide` stores the
        // impulses of whatever this step solved.
        sc.constraints.clear();
        sc.constraints_cold.clear();
        sc.solved_keys.clear();
        sc.impulses.clear();
        sc.groups.used = 0;

        // A joint is never solved against a sleeping body: wake it.
        if !st.joints.is_empty() {
            wake_jointed(st, &mut sc.wake);
        }

        // Solver slots for awake non-static bodies; slot 0 is the static dummy.
        sc.slot_of.clear();
        sc.slot_of.resize(st.bodies.len(), 0);
        sc.states.reset();
        sc.moving.clear();
        sc.moving.push(false);
        sc.awake.clear();
        for (i, b) in st.bodies.iter().enumerate() {
            if b.is_simulated() {
                let (inv_mass, inv_inertia) =
                    (st.body_config[i].inv_mass, st.body_config[i].inv_inertia);
                sc.slot_of[i] = sc.states.len() as u32;
                sc.awake.push(i as u32);
                sc.states.push(
                    BodyState {
                        v: b.linear_velocity,
                        w: b.angular_velocity,
                        dp: Vec2::ZERO,
                        dq: Rot::IDENTITY,
                        inv_mass,
                        inv_inertia,
                    },
                    b.center,
                );
                sc.moving
                    .push(!(inv_mass.is_zero() && inv_inertia.is_zero()));
            }
        }
        if sc.awake.is_empty() {
            return None;
        }

        // Prepare contact constraints. First the order: the contacts to
        // solve, in key order, coloured (see `graph`).
        let substep_rate = inv_h;
        let hertz = set.contact_hertz.min(substep_rate.shr(3));
        let soft = [
            solver::make_soft(hertz, set.contact_damping_ratio, h),
            solver::make_soft(hertz.shl(1), set.contact_damping_ratio, h),
        ];
        sc.links.clear();
        sc.solve_order.clear();
        sc.graph.begin(sc.states.len(), st.tick & 1 == 1);
        // With workers and `PARALLEL_CONTACTS` contacts per thread: colour
        // every contact first, then lay out and prepare (after the loop: on
        // the workers, in groups or in ranges of bundles, or here when few
        // were solved; the same bits). Alone: prepare each window as soon as
        // it is coloured, while its contacts are likelier in cache.
        let pool = pool.filter(|p| {
            let threads = p.threads();
            st.contacts.len() >= threads * PARALLEL_CONTACTS
        });
        // The key-ordered list, with the overflow's constraints prepared
        // one at a time, and the bundles a window at a time.
        let mut any_hit_events = false;
        for (ci, c) in st.contacts.iter().enumerate() {
            // Most of a contact's bytes are not read here, so the
            // hardware's prefetch of the list falls behind: ask for the
            // two lines read here (friction and restitution; the flags,
            // shapes and bodies) a few contacts ahead.
            if let Some(next) = st.contacts.get(ci + PREFETCH_AHEAD) {
                prefetch(next);
                prefetch(&next.body_a);
            }
            if !c.touching || c.sensor {
                continue;
            }
            let (a, b) = (sc.slot_of[c.body_a as usize], sc.slot_of[c.body_b as usize]);
            if a == 0 && b == 0 {
                continue;
            }
            // Nor is a contact solved against a sleeping dynamic body (in
            // slot 0 it would be an immovable wall): the step's `collide`
            // wakes it for the next step. This happens where a wake front
            // crosses bodies that each sleep apart (a wall created
            // asleep, struck): the newly woken pushes into the next one,
            // which stopped it dead as static ground would. Box2D solves
            // only contacts between awake bodies too: a contact of a body
            // it woke begins touching at its next collide.
            if (a == 0 && asleep(&st.bodies[c.body_a as usize]))
                || (b == 0 && asleep(&st.bodies[c.body_b as usize]))
            {
                continue;
            }
            sc.links.push((a, b));
            let k = sc.solve_order.len() as u32;
            let color = sc.graph.add(
                a,
                b,
                (sc.moving[a as usize], sc.moving[b as usize]),
                c.manifold.count > 1,
            );
            sc.solve_order.push(ci as u32);
            sc.solved_keys.push(c.key());
            any_hit_events |= c.hit_events;
            // The cold list has an entry for each contact solved one at a
            // time and each that reports hits, not for every contact: most
            // bundled contacts need none (their restitution and approach
            // speeds are the bundle's), and writing an entry for each took
            // about 4 % of large_pyramid's preparation.
            if color == OVERFLOW {
                let (ba, bb) = (&st.bodies[c.body_a as usize], &st.bodies[c.body_b as usize]);
                let (sa, sb) = (&sc.states.get(a), &sc.states.get(b));
                let entry = sc.constraints_cold.len() as u32;
                let (cc, cold) =
                    prepare_contact(c, (ci as u32, k, entry), (a, b), (ba, bb), (sa, sb), &soft);
                sc.constraints.push(cc);
                sc.constraints_cold.push(cold);
            } else if c.hit_events {
                sc.constraints_cold.push(ContactCold::new(ci as u32, k, c));
            }
            if pool.is_none() && sc.graph.window_full() {
                sc.finish_window(st);
            }
        }
        if pool.is_none() && !sc.graph.window_full() {
            sc.finish_window(st);
        }

        // Prepare joints: rigid parts use the joint softness, capped at a
        // quarter of the substep rate.
        let jctx = JointContext {
            h,
            inv_h,
            soft: solver::make_soft(
                set.joint_hertz.min(substep_rate.shr(2)),
                set.joint_damping_ratio,
                h,
            ),
        };
        let joints = |out: &mut joint::JointSolver, links: &mut Vec<(u32, u32)>| {
            joint::prepare(
                (&st.joints, &st.bodies, &st.body_config),
                &sc.slot_of,
                &sc.states,
                &jctx,
                out,
                links,
            );
        };
        // Shared out only if enough of the contacts were solved: in a world
        // mostly asleep, the windows are laid out and prepared here, as
        // alone. With enough, in groups of bodies that no contact or joint joins
        // (see `groups`) where the world has them, each group's contacts
        // laid out apart and prepared on a thread; otherwise in ranges of
        // bundles.
        let deferred = pool.is_some();
        let threads = pool.map_or(1, |p| p.threads());
        let pool = pool.filter(|_| sc.solve_order.len() >= threads * PARALLEL_CONTACTS);
        let grouped = pool.filter(|_| {
            sc.constraints.is_empty() && {
                let links = &mut sc.groups.joint_links;
                links.clear();
                links.extend(joint::solved(&st.joints, &sc.slot_of).map(|(_, _, ab)| ab));
                sc.groups
                    .plan(threads, &sc.links, &sc.states, &sc.awake, st.bodies.len())
            }
        });
        if let Some(pool) = grouped {
            let groups = &mut sc.groups;
            let used = groups.used;
            let places = groups.list[..used].iter().map(|g| &g.places[..]);
            sc.graph.layout_groups(places, &mut groups.bundles);
            let parts = sc.graph.group_parts(&groups.bundles);
            let (contacts, bodies, order) = (&st.contacts[..], &st.bodies[..], &sc.solve_order[..]);
            let slot_of = &sc.slot_of[..];
            groups.windows.clear();
            if !groups.joint_links.is_empty() {
                let (masks, windows) = (&mut groups.masks, &mut groups.windows);
                joint::revolute_windows(&st.joints, slot_of, &sc.states, masks, windows);
            }
            let (local_of, group_of) = (&groups.local_of[..], &groups.group_of[..]);
            let windows = &groups.windows[..];
            let world = (&st.joints[..], bodies, &st.body_config[..]);
            let jobs = parts
                .into_iter()
                .zip(groups.list[..used].iter_mut().enumerate());
            pool.share_out(jobs, |(mut part, (i, g))| {
                part.prepare(PrepareInputs {
                    contacts,
                    bodies,
                    states: &g.states,
                    slot_of: local_of,
                    order,
                });
                let mine = |s: u32| group_of[s as usize] == i as u64;
                let slots = (slot_of, local_of);
                joint::prepare_group(world, slots, mine, windows, &g.states, &jctx, &mut g.joints);
            });
            if any_hit_events {
                sc.graph
                    .approach_speeds_to(contacts, order, &mut sc.constraints_cold);
            }
            #[cfg(debug_assertions)]
            for (g, &range) in groups.list.iter().zip(&groups.bundles) {
                sc.graph.check_range(range, |s| g.states.moves(s));
            }
            // The joints' links, for the islands, as `joint::prepare` adds them.
            sc.links.extend_from_slice(&groups.joint_links);
        } else {
            if deferred {
                sc.graph.layout_all();
            }
            let inp = PrepareInputs {
                contacts: &st.contacts,
                bodies: &st.bodies,
                states: &sc.states,
                slot_of: &sc.slot_of,
                order: &sc.solve_order,
            };
            match pool {
                Some(pool) => {
                    let (out, links) = (&mut sc.joints, &mut sc.links);
                    let cold = any_hit_events.then_some(&mut sc.constraints_cold[..]);
                    sc.graph
                        .prepare_windows(pool, inp, cold, || joints(out, links));
                }
                None => {
                    if deferred {
                        sc.graph.prepare_laid_out(inp, &mut sc.constraints_cold);
                    }
                    joints(&mut sc.joints, &mut sc.links);
                }
            }
            #[cfg(debug_assertions)]
            sc.graph.check(|s| {
                // From the states themselves, not from `moving`.
                sc.states.moves(s)
            });
        }
        Some(Solve {
            dt,
            h,
            inv_h,
            inv_h_int,
            soft,
            joints: jctx,
            any_hit_events,
        })
    }
}

/// A dynamic body that sleeps this step (its slot is the static dummy) and
/// that `collide` can wake: it has a sleep island (every sleeping body
/// does, unless a state was crafted without one; such a body stays a
/// static wall, as before, rather than one nothing solves against).
#[inline]
fn asleep(b: &Body) -> bool {
    b.kind == BodyKind::Dynamic && !b.awake && b.sleep_island != NO_ISLAND
}

/// A touching contact prepared for the solver: the constraint (fixed for
/// the step: lever arms, effective masses, softness) and what the substep
/// loop never reads. `ci` is its index in the contact list, `k` its place
/// in the step's key-ordered list, `entry` its cold entry's.
#[inline(always)]
fn prepare_contact(
    c: &Contact,
    (ci, k, entry): (u32, u32, u32),
    (a, b): (u32, u32),
    (ba, bb): (&Body, &Body),
    (sa, sb): (&BodyState, &BodyState),
    soft: &[solver::Softness; 2],
) -> (ContactConstraint, ContactCold) {
    let (ma, ia, mb, ib) = (sa.inv_mass, sa.inv_inertia, sb.inv_mass, sb.inv_inertia);
    let normal = c.manifold.normal;
    let tangent = normal.right_perp();
    let mut cc = ContactConstraint {
        a,
        b,
        cold_index: entry,
        against_static: ma.is_zero() || mb.is_zero(),
        count: c.manifold.count,
        normal,
        m_n_a: normal * ma,
        m_n_b: normal * mb,
        friction: c.friction,
        points: [ConstraintPoint::default(); 2],
    };
    let mut cold = ContactCold::new(ci, k, c);
    // `rb − ra` is `cA − cB` exactly (wrapping sums are exact), the same
    // for every point, plus twice a carried point's shift.
    let centers_n = (ba.center - bb.center).dot(normal);
    let mass_scale = soft[usize::from(cc.against_static)].mass_scale;
    for (k, mp) in c.manifold.points().iter().enumerate() {
        // Each body's anchor (the same point unless the manifold was
        // carried: `ManifoldPoint::shift`).
        let ra = (mp.point - mp.shift) - ba.center;
        let rb = (mp.point + mp.shift) - bb.center;
        let rna = ra.cross(normal);
        let rnb = rb.cross(normal);
        let kn = ma + mb + ia * rna * rna + ib * rnb * rnb;
        let rta = ra.cross(tangent);
        let rtb = rb.cross(tangent);
        let kt = ma + mb + ia * rta * rta + ib * rtb * rtb;
        // Read only by restitution and hit events.
        if !c.restitution.is_zero() || c.hit_events {
            let dv = sb.velocity_at(rb) - sa.velocity_at(ra);
            cold.relative_velocity[k] = normal.dot(dv);
        }
        let mut cp = ConstraintPoint {
            an_a: ra.dot(normal),
            an_b: rb.dot(normal),
            rn_a: rna,
            rn_b: rnb,
            wn_a: ia * rna,
            wn_b: ib * rnb,
            wt_a: ia * rta,
            wt_b: ib * rtb,
            // `(rb − ra)·n` is `centers_n + 2 shift·n`.
            base_separation: mp.separation - centers_n - mp.shift.dot(normal).shl(1),
            separation: Scalar::ZERO,
            normal_impulse: mp.normal_impulse,
            tangent_impulse: mp.tangent_impulse,
            max_normal_impulse: Scalar::ZERO,
            neg_normal_mass: -kn.recip(),
            soft_normal_mass: Scalar::ZERO,
            neg_tangent_mass: -kt.recip(),
        };
        cp.soft_normal_mass = cp.neg_normal_mass * mass_scale;
        // Nothing has moved yet: the relax pass's formula at zero
        // displacement and no turn (`solver::separation`), whose products
        // by one and zero are exact.
        cp.separation = cp.an_b - cp.an_a + cp.base_separation;
        cc.points[k] = cp;
    }
    (cc, cold)
}

/// Wakes sleeping bodies joined to bodies that are awake, so that a joint is
/// never solved against a sleeping (frozen) body. `islands` is scratch.
pub(crate) fn wake_jointed(st: &mut WorldState, islands: &mut Vec<u32>) {
    islands.clear();
    // Only a sleeping body can be woken: without one (no sleeping, or all
    // awake) skip the pass over the joints, which is the costlier one.
    let sleeping = |b: &Body| b.kind != BodyKind::Static && !b.awake && b.sleep_island != NO_ISLAND;
    if !st.bodies.iter().any(sleeping) {
        return;
    }
    for j in &st.joints {
        if !j.alive {
            continue;
        }
        let (ba, bb) = (&st.bodies[j.body_a as usize], &st.bodies[j.body_b as usize]);
        for (me, other) in [(ba, bb), (bb, ba)] {
            if me.is_simulated()
                && other.kind != BodyKind::Static
                && !other.awake
                && other.sleep_island != NO_ISLAND
            {
                islands.push(other.sleep_island);
            }
        }
    }
    if !islands.is_empty() {
        islands.sort_unstable();
        islands.dedup();
        island::wake_islands(st, islands);
    }
}

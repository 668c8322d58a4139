//! Stage **collide** (the narrow phase): every contact with an awake body
//! gets its manifold at the current poses (recycled where it can be, see
//! `recycle`); contacts whose fat boxes separated are dropped; sensor pairs
//! are tested for overlap; a contact that begins touching a sleeping body
//! wakes its island. Reports begin and end touching events.

use crate::collision::shapes_overlap;
use crate::dynamics::body::{BodyKind, NO_ISLAND};
use crate::dynamics::contact::{match_impulses, PreviousPoints};
use crate::dynamics::island;
use crate::dynamics::recycle::Moving;
use crate::dynamics::world::World;

impl World {
    /// Manifolds for contacts with an awake body. At the end of a step
    /// (`after_solve`), pairs of bodies solved this step that begin
    /// touching join one island for this step's sleep decision, as they
    /// would have had they been solved together.
    pub(super) fn collide(&mut self, after_solve: bool) {
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let ev = &mut self.events;
        sc.remove.clear();
        sc.remove.resize(st.contacts.len(), false);
        sc.wake.clear();
        sc.recycler.begin(&st.bodies);
        let moving = Moving::new(st.settings.tick_rate);
        let mut any_removed = false;
        // After the solve: the impulses it accumulated, for the next warm
        // start, in the contacts' key order.
        let (solved, impulses) = if after_solve {
            (&sc.solved_keys[..], &sc.impulses[..])
        } else {
            (&[][..], &[][..])
        };
        let mut next = 0;
        for (k, c) in st.contacts.iter_mut().enumerate() {
            if next < solved.len() && solved[next] == c.key() {
                if let Some(imp) = impulses.get(next) {
                    let count = usize::from(c.manifold.count);
                    for (j, mp) in c.manifold.points[..count].iter_mut().enumerate() {
                        mp.normal_impulse = imp.normal[j];
                        mp.tangent_impulse = imp.tangent[j];
                    }
                }
                next += 1;
            }
            let ba = &st.bodies[c.body_a as usize];
            let bb = &st.bodies[c.body_b as usize];
            let active_a = ba.awake && ba.kind != BodyKind::Static;
            let active_b = bb.awake && bb.kind != BodyKind::Static;
            let active = active_a || active_b;
            // Before the solve, the contacts of a body queued as moved are
            // collided even asleep (a body teleported, then put to sleep):
            // a snapshot taken before the step recomputed them on decoding.
            let queued = || {
                let marked = |b: u32| sc.moved_bodies.get(b as usize) == Some(&true);
                !after_solve && (marked(c.body_a) || marked(c.body_b))
            };
            if !active && !c.fresh && !queued() {
                sc.recycler.keep_idle(c.pair());
                continue;
            }
            let fresh = c.fresh;
            c.fresh = false;
            let sa = &st.shapes[c.shape_a as usize];
            let sb = &st.shapes[c.shape_b as usize];
            if !sa.fat_aabb.overlaps(&sb.fat_aabb) {
                sc.remove[k] = true;
                any_removed = true;
                if c.touching {
                    ev.touching_changed(&st.shapes, c, false, &c.manifold);
                }
                continue;
            }
            if c.sensor {
                let (ga, gb) = (
                    &st.geometry[c.shape_a as usize],
                    &st.geometry[c.shape_b as usize],
                );
                let touching = shapes_overlap(ga, ba.transform, gb, bb.transform);
                if touching != c.touching {
                    ev.touching_changed(&st.shapes, c, touching, &c.manifold);
                    c.touching = touching;
                }
                continue;
            }
            let (ga, gb) = (
                &st.geometry[c.shape_a as usize],
                &st.geometry[c.shape_b as usize],
            );
            // What matching needs of the old points, read field by field:
            // the impulses were stored just above, and a copy of the whole
            // manifold would load them back before those stores complete.
            let old = PreviousPoints::of(&c.manifold);
            // Judged from the velocities now, and kept (state) until the
            // pair is collided again.
            c.direct = c.recycled && moving.fast(ba, bb);
            // A contact that touched reports no event while it touches:
            // its carry may wait for the pass's end (`carry_deferred`).
            let defer = c.touching.then_some(k as u32);
            let renewed =
                sc.recycler
                    .manifold(c.pair(), fresh, (ga, ba), (gb, bb), &mut c.manifold, defer);
            if renewed {
                match_impulses(&mut c.manifold, &old);
            } else {
                // The same points as last step: their impulses stay.
                for p in &mut c.manifold.points[..usize::from(c.manifold.count)] {
                    p.persisted = true;
                }
            }
            let touching = c.manifold.count > 0;
            if touching {
                // A sleeping body wakes when something active begins to
                // touch it, or when an awake dynamic body touches it (the
                // wake front through a pile created asleep, whose contacts
                // were collided touching while everything slept).
                let began = !c.touching && active;
                for (b, other) in [(ba, bb), (bb, ba)] {
                    if b.kind != BodyKind::Static
                        && !b.awake
                        && b.sleep_island != NO_ISLAND
                        && (began || (other.awake && other.kind == BodyKind::Dynamic))
                    {
                        sc.wake.push(b.sleep_island);
                    }
                }
            }
            if touching && !c.touching && after_solve {
                let slot = |b: u32| sc.slot_of.get(b as usize).copied().unwrap_or(0);
                let (a, b) = (slot(c.body_a), slot(c.body_b));
                if a != 0 && b != 0 {
                    sc.links.push((a, b));
                }
            }
            if touching != c.touching {
                ev.touching_changed(&st.shapes, c, touching, &c.manifold);
            }
            c.touching = touching;
        }
        // Nothing removes a contact between the solve and here.
        debug_assert_eq!(next, solved.len(), "a solved contact was not stored");
        // The deferred carries, before the list is compacted (they name
        // places in it).
        sc.recycler.carry_deferred(&mut st.contacts, &st.bodies);
        if any_removed {
            // Compact by runs: each run of kept contacts moves as one block.
            let remove = &sc.remove;
            let list = &mut st.contacts[..];
            let (mut write, mut read) = (0, 0);
            while read < list.len() {
                if remove[read] {
                    read += 1;
                    continue;
                }
                let start = read;
                while read < list.len() && !remove[read] {
                    read += 1;
                }
                if start != write {
                    list.copy_within(start..read, write);
                }
                write += read - start;
            }
            st.contacts.truncate(write);
        }
        if !sc.wake.is_empty() {
            sc.wake.sort_unstable();
            sc.wake.dedup();
            let wake = core::mem::take(&mut sc.wake);
            island::wake_islands(st, &wake);
            sc.wake = wake;
        }
    }
}

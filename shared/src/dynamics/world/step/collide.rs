//! Stage **collide** (the narrow phase): every contact with an awake body
//! gets its manifold at the current poses (recycled where it can be, see
//! `recycle`); contacts whose fat boxes separated are dropped; sensor pairs
//! are tested for overlap; a contact that begins touching a sleeping body
//! wakes its island. Reports begin and end touching events.
//!
//! With workers (`World::set_threads`) and enough contacts, the list is
//! walked in ranges, one per thread, each with its own part of the
//! recycler's bases: a contact's manifold is a function of its own pair,
//! and what the ranges leave for the end (events, islands to wake, new
//! links) is taken range after range, in key order. The same bits for any
//! thread count.

use crate::collision::shapes_overlap;
use crate::dynamics::body::{Body, BodyKind, NO_ISLAND};
use crate::dynamics::contact::{match_impulses, Contact, PreviousPoints};
use crate::dynamics::island;
use crate::dynamics::recycle::{Moving, Part};
use crate::dynamics::shape::Shape;
use crate::dynamics::solver::Impulses;
use crate::dynamics::world::workers::Workers;
use crate::dynamics::world::World;
use crate::geometry::ShapeGeometry;
use crate::math::prefetch;

/// Contacts per thread from which a pass walks the list in ranges; one
/// already cut into ranges stays so down to half as many (so that a list
/// near the line is not merged and cut again pass after pass, each time
/// copying every cached basis).
/// (Unit tests take smaller ranges, so that small worlds cover middle
/// ranges on three and four threads.)
const PARALLEL_CONTACTS: usize = if cfg!(test) { 64 } else { 1024 };

/// At most this many ranges (and so parts of the recycler, each with a
/// reference per body) however many threads: a thread past the eighth
/// gains little here, and each part costs about 72 bytes a body.
const MAX_RANGES: usize = 8;

/// What a range of the contact list leaves for the end of the pass (see
/// [`collide_range`]), in key order. Scratch. Aligned to two lines, so
/// that two ranges' pushes never write one line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CollideOut {
    /// Contacts whose touching flag changed, for their events: the place
    /// in the list and the new flag.
    changed: Vec<(u32, bool)>,
    /// Sleep islands to wake.
    wake: Vec<u32>,
    /// The solver slots of pairs solved this step that began touching.
    links: Vec<(u32, u32)>,
    /// Whether a contact is to be removed.
    any_removed: bool,
}

/// What every range of a pass reads.
#[derive(Clone, Copy)]
struct Inputs<'a> {
    bodies: &'a [Body],
    shapes: &'a [Shape],
    geometry: &'a [ShapeGeometry],
    moved_bodies: &'a [bool],
    slot_of: &'a [u32],
    moving: Moving,
    after_solve: bool,
}

impl World {
    /// Manifolds for contacts with an awake body. At the end of a step
    /// (`after_solve`), pairs of bodies solved this step that begin
    /// touching join one island for this step's sleep decision, as they
    /// would have had they been solved together.
    pub(super) fn collide(&mut self, after_solve: bool) {
        let pool = self.pool.as_deref();
        let st = &mut self.state;
        let sc = &mut self.scratch;
        let ev = &mut self.events;
        let n = st.contacts.len();
        sc.remove.clear();
        sc.remove.resize(n, false);
        // New places guess the narrow phase: new contacts need it.
        sc.narrow_hint.resize(n, true);
        sc.wake.clear();
        let split = sc.recycler.is_split();
        let ranges = |p: &Workers| p.threads().min(MAX_RANGES);
        // The work: after the solve, the contacts it solved (touching, with
        // an awake body) and the pairs new this step; the contacts of
        // sleeping bodies are passed over at almost no cost. (A sleeping
        // pile of 2 900 contacts took 0.015 ms a pass on one thread and
        // 0.09 ms shared out, the cost of waking the workers.)
        let work = if after_solve {
            sc.solved_keys.len() + sc.new_contacts.len()
        } else {
            n
        };
        let pool = pool.filter(|p| {
            let per = if split {
                PARALLEL_CONTACTS / 2
            } else {
                PARALLEL_CONTACTS
            };
            work >= ranges(p) * per
        });
        let threads = pool.map_or(1, ranges);
        // After the solve: the impulses it accumulated, for the next warm
        // start, in the contacts' key order.
        let (solved, impulses) = if after_solve {
            (&sc.solved_keys[..], &sc.impulses[..])
        } else {
            (&[][..], &[][..])
        };
        debug_assert_eq!(
            solved.len(),
            impulses.len(),
            "an impulse per solved contact"
        );
        let inp = Inputs {
            bodies: &st.bodies,
            shapes: &st.shapes,
            geometry: &st.geometry,
            moved_bodies: &sc.moved_bodies,
            slot_of: &sc.slot_of,
            moving: Moving::new(st.settings.tick_rate),
            after_solve,
        };
        if sc.collide_outs.len() < threads {
            sc.collide_outs.resize_with(threads, CollideOut::default);
        }
        let outs = &mut sc.collide_outs[..threads];
        match pool {
            None => {
                sc.recycler.begin(&st.bodies);
                let part = sc.recycler.single();
                let contacts = &mut st.contacts[..];
                let done = (solved, impulses);
                let marks = (&mut sc.remove[..], &mut sc.narrow_hint[..]);
                collide_range(inp, contacts, 0, done, marks, part, &mut outs[0]);
            }
            Some(pool) => {
                let starts = sc.recycler.begin_split(&st.bodies, &st.contacts, threads);
                // Where each range's solved contacts begin.
                let cuts: Vec<usize> = starts
                    .iter()
                    .map(|&s| match st.contacts.get(s) {
                        _ if s == 0 => 0,
                        Some(c) => solved.partition_point(|&k| k < c.key()),
                        None => solved.len(),
                    })
                    .collect();
                let parts = sc.recycler.split();
                let (mut contacts, mut remove) = (&mut st.contacts[..], &mut sc.remove[..]);
                let mut hints = &mut sc.narrow_hint[..];
                let mut jobs = Vec::with_capacity(threads);
                for (i, (part, out)) in parts.iter_mut().zip(outs.iter_mut()).enumerate() {
                    let end = starts.get(i + 1).copied().unwrap_or(n);
                    let len = end - starts[i];
                    let (c, rest) = core::mem::take(&mut contacts).split_at_mut(len);
                    contacts = rest;
                    let (r, rest) = core::mem::take(&mut remove).split_at_mut(len);
                    remove = rest;
                    let (h, rest) = core::mem::take(&mut hints).split_at_mut(len);
                    hints = rest;
                    let (from, to) = (cuts[i], cuts.get(i + 1).copied().unwrap_or(solved.len()));
                    // (A short impulse list, which `finish` never leaves, is
                    // read as far as it goes, as one thread reads it.)
                    let imp = impulses.get(from.min(impulses.len())..to.min(impulses.len()));
                    let done = (&solved[from..to], imp.unwrap_or(&[]));
                    jobs.push((starts[i], c, (r, h), done, part, out));
                }
                pool.share_out(jobs, |(at, c, r, done, part, out)| {
                    collide_range(inp, c, at, done, r, part, out);
                });
            }
        }
        // What the ranges left, range after range: the key order.
        let mut any_removed = false;
        for out in outs.iter_mut() {
            any_removed |= core::mem::take(&mut out.any_removed);
            for &(k, touching) in &out.changed {
                let c = &st.contacts[k as usize];
                ev.touching_changed(&st.shapes, c, touching, &c.manifold);
            }
            out.changed.clear();
            sc.wake.append(&mut out.wake);
            sc.links.append(&mut out.links);
        }
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

/// How many contacts ahead [`collide_range`] asks for the first line of
/// the shape geometry of a contact it guesses will need the narrow phase
/// (half as far ahead, once the geometry's kind is known, a polygon's
/// other lines).
const AHEAD: usize = 16;

/// Asks for the geometry lines contacts `k + AHEAD` (the first line of
/// each shape's) and `k + AHEAD / 2` (a polygon's every line) of
/// `contacts` will read, for those whose place in `hints` says the last
/// pass renewed their manifold. The list is walked in order, but the
/// shapes lie all over theirs: waiting for their lines took most of the
/// narrow phase's time in tumbler, smash and spinner. Asked for every
/// contact (with its bodies' and shapes' lines), they cost pyramids, whose
/// manifolds are mostly carried without reading them, up to 20 % of the
/// pass; hence the guess. (No effect on the result.)
#[inline(always)]
fn ask_ahead(geometry: &[ShapeGeometry], contacts: &[Contact], hints: &[bool], k: usize) {
    let guess = |k: usize| contacts.get(k).filter(|_| hints.get(k) == Some(&true));
    if let Some(c) = guess(k + AHEAD) {
        for shape in [c.shape_a, c.shape_b] {
            if let Some(g) = geometry.get(shape as usize) {
                prefetch(g);
            }
        }
    }
    if let Some(c) = guess(k + AHEAD / 2) {
        for shape in [c.shape_a, c.shape_b] {
            if let Some(ShapeGeometry::Polygon(p)) = geometry.get(shape as usize) {
                p.prefetch();
            }
        }
    }
}

/// Collides a range of the contact list (`contacts`, from place `at` in
/// it; `done`: the solved contacts' keys and impulses among them, in key
/// order), with the part of the bases that holds their keys, marking in
/// `remove` (the range's) the contacts to drop and leaving in `out` what
/// the end of the pass takes in key order. `hints` (the range's places of
/// `narrow_hint`) guesses which contacts' shapes to ask for ahead, and
/// takes whether each contact collided had its manifold renewed (false
/// for those left idle).
#[allow(clippy::too_many_arguments)]
#[inline]
fn collide_range(
    inp: Inputs<'_>,
    contacts: &mut [Contact],
    at: usize,
    (solved, impulses): (&[u64], &[Impulses]),
    (remove, hints): (&mut [bool], &mut [bool]),
    part: &mut Part,
    out: &mut CollideOut,
) {
    let mut next = 0;
    for k in 0..contacts.len() {
        ask_ahead(inp.geometry, contacts, hints, k);
        let c = &mut contacts[k];
        // The impulses this step's solve left, stored in the manifold.
        let mut stored = None;
        if next < solved.len() && solved[next] == c.key() {
            if let Some(imp) = impulses.get(next) {
                stored = Some(imp);
                let count = usize::from(c.manifold.count);
                for (j, mp) in c.manifold.points[..count].iter_mut().enumerate() {
                    mp.normal_impulse = imp.normal[j];
                    mp.tangent_impulse = imp.tangent[j];
                }
            }
            next += 1;
        }
        let ba = &inp.bodies[c.body_a as usize];
        let bb = &inp.bodies[c.body_b as usize];
        let active_a = ba.awake && ba.kind != BodyKind::Static;
        let active_b = bb.awake && bb.kind != BodyKind::Static;
        let active = active_a || active_b;
        // Before the solve, the contacts of a body queued as moved are
        // collided even asleep (a body teleported, then put to sleep):
        // a snapshot taken before the step recomputed them on decoding.
        let queued = || {
            let marked = |b: u32| inp.moved_bodies.get(b as usize) == Some(&true);
            !inp.after_solve && (marked(c.body_a) || marked(c.body_b))
        };
        if !active && !c.fresh && !queued() {
            // Not collided: no lines to ask for while it stays idle.
            hints[k] = false;
            part.keep_idle(c.pair());
            continue;
        }
        let fresh = c.fresh;
        c.fresh = false;
        let sa = &inp.shapes[c.shape_a as usize];
        let sb = &inp.shapes[c.shape_b as usize];
        if !sa.fat_aabb.overlaps(&sb.fat_aabb) {
            remove[k] = true;
            out.any_removed = true;
            if c.touching {
                out.changed.push(((at + k) as u32, false));
            }
            continue;
        }
        if c.sensor {
            let (ga, gb) = (
                &inp.geometry[c.shape_a as usize],
                &inp.geometry[c.shape_b as usize],
            );
            let touching = shapes_overlap(ga, ba.transform, gb, bb.transform);
            if touching != c.touching {
                out.changed.push(((at + k) as u32, touching));
                c.touching = touching;
            }
            continue;
        }
        let (ga, gb) = (
            &inp.geometry[c.shape_a as usize],
            &inp.geometry[c.shape_b as usize],
        );
        // What matching needs of the old points, read field by field,
        // with the impulses stored just above taken from the solve's list:
        // loaded back, they would wait for those stores to complete.
        let old = PreviousPoints::of(&c.manifold, stored);
        // Judged from the velocities now, and kept (state) until the
        // pair is collided again.
        c.direct = c.recycled && inp.moving.fast(ba, bb);
        // A contact that touched reports no event while it touches:
        // its carry may wait for the range's end (`carry_deferred`).
        let defer = c.touching.then_some(k as u32);
        let renewed = part.manifold(c.pair(), fresh, (ga, ba), (gb, bb), &mut c.manifold, defer);
        hints[k] = renewed;
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
                    out.wake.push(b.sleep_island);
                }
            }
        }
        if touching && !c.touching && inp.after_solve {
            let slot = |b: u32| inp.slot_of.get(b as usize).copied().unwrap_or(0);
            let (a, b) = (slot(c.body_a), slot(c.body_b));
            if a != 0 && b != 0 {
                out.links.push((a, b));
            }
        }
        if touching != c.touching {
            out.changed.push(((at + k) as u32, touching));
        }
        c.touching = touching;
    }
    // Nothing removes a contact between the solve and here.
    debug_assert_eq!(next, solved.len(), "a solved contact was not stored");
    // The deferred carries, before the list is compacted (they name
    // places in it).
    part.carry_deferred(contacts, inp.bodies);
}

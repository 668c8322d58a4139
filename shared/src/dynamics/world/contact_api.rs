//! The world's contact inspection: counts and the touching points.

use super::World;
use crate::collision::ManifoldPoint;
use crate::dynamics::body::ShapeId;
use crate::dynamics::contact::{pair_key, Contact};
use crate::math::{Scalar, Vec2};

/// A contact point as seen from outside (for drawing and inspection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactView {
    /// First shape.
    pub shape_a: ShapeId,
    /// Second shape.
    pub shape_b: ShapeId,
    /// World point.
    pub point: Vec2,
    /// Normal from A to B.
    pub normal: Vec2,
    /// Separation (negative = overlap).
    pub separation: Scalar,
    /// Accumulated normal impulse.
    pub normal_impulse: Scalar,
}

/// Contacts up to which [`World::contacts_of_shape`] passes over every key
/// (8 KB of keys) instead of querying the broad phase. Counted under
/// callgrind, a pass costs about 3.6 instructions a key: at 2,900 contacts
/// (the 990-box pile of the rollback benchmark, four avatars) the passes
/// added 0.9 % to a rollback's instructions, where the broad phase and a
/// search of the keys cost less; at the default arena's 450 the pass reads
/// 3.6 KB in order, against a tree walk and searches that miss the cache.
const SCAN_KEYS: usize = 1024;

/// The indices of the keys naming shape slot `i` (as A or B), ascending.
fn contacts_by_scan(keys: &[u64], i: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for (k, &key) in keys.iter().enumerate() {
        if (key >> 32) as u32 == i || key as u32 == i {
            found.push(k as u32);
        }
    }
    found
}

impl World {
    /// Number of contacts (pairs with overlapping fat boxes).
    pub fn contact_count(&self) -> usize {
        self.state.contacts.len()
    }

    /// Number of contacts with at least one manifold point (sensor overlaps excluded).
    pub fn touching_contact_count(&self) -> usize {
        self.state
            .contacts
            .iter()
            .filter(|c| c.touching && !c.sensor)
            .count()
    }

    /// Touching contact points, in canonical order. They are those of the
    /// bodies' current positions: a step collides after moving the bodies.
    /// (Shapes created since the last step have none until the next one.)
    pub fn contacts(&self) -> impl Iterator<Item = ContactView> + '_ {
        self.contact_views(|c| c.touching)
    }

    /// The touching contact points of one shape (as A or B), in canonical
    /// order: [`World::contacts`] filtered to the shape, without building a
    /// view of every other contact. A stale handle has none.
    pub fn shape_contacts(&self, shape: ShapeId) -> impl Iterator<Item = ContactView> + '_ {
        let found = self
            .shape_index(shape)
            .map_or_else(|_| Vec::new(), |i| self.contacts_of_shape(i));
        found.into_iter().flat_map(move |k| {
            let c = &self.state.contacts[k as usize];
            let points = if c.touching { c.manifold.points() } else { &[] };
            points.iter().map(move |p| self.view(c, p))
        })
    }

    /// Indices of the contacts of shape slot `i` (as A or B), ascending.
    ///
    /// Up to [`SCAN_KEYS`] contacts: one pass over the contacts' keys
    /// (8 bytes each, a few kilobytes in all, read in order). The sandbox
    /// game asks this of every avatar on every tick, and on a server the
    /// room's lists are cold by then: the broad-phase query and the binary
    /// searches of the contacts this replaced missed the cache on nearly
    /// every tree node and every probe.
    ///
    /// More contacts: through the broad phase, when no shape is queued for
    /// the pair search. Every contact's two fat boxes overlap then: a
    /// contact is made only for overlapping fat boxes (the pair search),
    /// and the step's collide, after the last change of any fat box in the
    /// step, drops the contacts whose fat boxes separated; the only other
    /// change of a fat box (a teleport, `refresh_shapes`) queues the shape,
    /// and so does a new shape. So the contacts of `i` are among the pairs
    /// of `i` with the shapes whose fat boxes overlap its own: a query of
    /// both trees and a search of the keys for each. With a shape queued,
    /// the pass over the keys answers. All give the same indices.
    pub(crate) fn contacts_of_shape(&self, i: u32) -> Vec<u32> {
        let st = &self.state;
        if !st.moved.is_empty() || st.contacts.len() <= SCAN_KEYS {
            return contacts_by_scan(st.contacts.keys(), i);
        }
        self.contacts_by_tree(i)
    }

    /// [`World::contacts_of_shape`] through the broad phase (no shape may
    /// be queued for the pair search).
    fn contacts_by_tree(&self, i: u32) -> Vec<u32> {
        let st = &self.state;
        let Some(shape) = st.shapes.get(i as usize) else {
            return Vec::new();
        };
        // A shape has a few contacts: room for them without regrowing.
        let mut found = Vec::with_capacity(8);
        let mut pair_with = |j: u32| {
            if j == i {
                return;
            }
            if let Some(k) = st.contacts.find(pair_key(i.min(j), i.max(j))) {
                found.push(k as u32);
            }
        };
        st.static_tree.query_shared(&shape.fat_aabb, &mut pair_with);
        st.dynamic_tree
            .query_shared(&shape.fat_aabb, &mut pair_with);
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The view of one point of contact `c`.
    fn view(&self, c: &Contact, p: &ManifoldPoint) -> ContactView {
        let sid = |i: u32| ShapeId {
            index: i,
            generation: self.state.shapes[i as usize].generation,
        };
        ContactView {
            shape_a: sid(c.shape_a),
            shape_b: sid(c.shape_b),
            point: p.point,
            normal: c.manifold.normal,
            separation: p.separation,
            normal_impulse: p.normal_impulse,
        }
    }

    fn contact_views(
        &self,
        keep: impl Fn(&Contact) -> bool + 'static,
    ) -> impl Iterator<Item = ContactView> + '_ {
        self.state
            .contacts
            .iter()
            .filter(move |c| keep(c))
            .flat_map(move |c| c.manifold.points().iter().map(move |p| self.view(c, p)))
    }
}

#[cfg(test)]
mod tests {
    use super::{contacts_by_scan, World};
    use crate::dynamics::contact::Contact;
    use crate::dynamics::joint::{DistanceJoint, JointDef, JointKind};
    use crate::math::{Rot, Scalar, Vec2};
    use crate::scene::build_named;

    /// The key array is the contacts' keys, and the pass over it finds
    /// what the broad phase and the search find, for every shape slot.
    fn check(w: &World, when: &str) -> usize {
        let st = &w.state;
        let keys: Vec<u64> = st.contacts.iter().map(Contact::key).collect();
        assert!(
            st.contacts.keys() == &keys[..],
            "{when}: {} keys for {} contacts, or not theirs",
            st.contacts.keys().len(),
            keys.len()
        );
        if !st.moved.is_empty() {
            return 0;
        }
        let mut found = 0;
        for i in 0..st.shapes.len() as u32 {
            let scan = contacts_by_scan(st.contacts.keys(), i);
            assert_eq!(scan, w.contacts_by_tree(i), "{when}: shape slot {i}");
            found += scan.len();
        }
        assert_eq!(found, 2 * st.contacts.len(), "{when}: two shapes a contact");
        found
    }

    /// Through every path that changes the contacts: steps that make and
    /// drop them, teleports, a joint between touching bodies (which drops
    /// their contacts), destroying bodies and shapes, restoring a snapshot.
    #[test]
    fn the_keys_follow_every_change_and_both_lookups_agree() {
        let mut seen = 0;
        for name in ["pyramid", "ragdoll", "bridge", "arena"] {
            let mut w = build_named(name).unwrap();
            let mut saved = None;
            for t in 1..=150 {
                w.step();
                if t % 25 == 0 {
                    seen += check(&w, &format!("{name} tick {t}"));
                }
                if t == 40 {
                    saved = Some(w.snapshot());
                    let bodies: Vec<_> = w.bodies().collect();
                    for &b in bodies.iter().skip(1).step_by(9) {
                        let p = w.position(b).unwrap();
                        w.set_transform(
                            b,
                            p + Vec2::new(Scalar::milli(40), Scalar::ZERO),
                            Rot::IDENTITY,
                        )
                        .unwrap();
                    }
                    check(&w, &format!("{name} after teleports"));
                }
                if t == 60 {
                    // Join the two bodies of a touching contact.
                    let c = w.contacts().next().expect("a touching contact");
                    let (a, b) = (
                        w.shape_body(c.shape_a).unwrap(),
                        w.shape_body(c.shape_b).unwrap(),
                    );
                    if w.is_awake(a).is_ok() && a != b {
                        let _ = w.create_joint(&JointDef::new(
                            a,
                            b,
                            JointKind::Distance(DistanceJoint::default()),
                        ));
                    }
                    check(&w, &format!("{name} after a joint"));
                }
                if t == 90 {
                    let bodies: Vec<_> = w.bodies().collect();
                    w.destroy_bodies(&bodies[2..5]).unwrap();
                    w.destroy_body(bodies[7]).unwrap();
                    let s = w.body_shapes(bodies[9]).unwrap()[0];
                    w.destroy_shape(s).unwrap();
                    check(&w, &format!("{name} after destroying"));
                }
                if t == 120 {
                    w.restore(saved.as_ref().unwrap());
                    seen += check(&w, &format!("{name} restored"));
                }
            }
        }
        assert!(seen > 2000, "the scenes have contacts: {seen}");
    }
}

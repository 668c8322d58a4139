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
    /// Every contact's two fat boxes overlap whenever no shape is queued
    /// for the pair search: a contact is made only for overlapping fat
    /// boxes (the pair search), and the step's collide, after the last
    /// change of any fat box in the step, drops the contacts whose fat
    /// boxes separated; the only other change of a fat box (a teleport,
    /// `refresh_shapes`) queues the shape, and so does a new
    /// shape. So then the contacts of `i` are among the pairs of `i` with
    /// the shapes whose fat boxes overlap its own: a query of both trees
    /// and a binary search of the key-ordered contacts for each, instead of
    /// a pass over every contact (the sandbox game asks this of every
    /// avatar on every tick). With a shape queued, the pass over every
    /// contact answers. Both give the same indices.
    pub(crate) fn contacts_of_shape(&self, i: u32) -> Vec<u32> {
        let st = &self.state;
        if !st.moved.is_empty() {
            return (0..st.contacts.len() as u32)
                .filter(|&k| {
                    let c = &st.contacts[k as usize];
                    c.shape_a == i || c.shape_b == i
                })
                .collect();
        }
        let Some(shape) = st.shapes.get(i as usize) else {
            return Vec::new();
        };
        // A shape has a few contacts: room for them without regrowing.
        let mut found = Vec::with_capacity(8);
        let mut pair_with = |j: u32| {
            // The trees round boxes outward: only exact overlaps count.
            if j == i || !st.shapes[j as usize].fat_aabb.overlaps(&shape.fat_aabb) {
                return;
            }
            let key = pair_key(i.min(j), i.max(j));
            if let Ok(k) = st.contacts.binary_search_by_key(&key, Contact::key) {
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

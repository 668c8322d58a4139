//! The world's contact inspection: counts and the touching points.

use super::World;
use crate::dynamics::body::ShapeId;
use crate::dynamics::contact::Contact;
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
        let i = self.shape_index(shape).ok();
        self.contact_views(move |c| {
            c.touching && i.is_some_and(|i| c.shape_a == i || c.shape_b == i)
        })
    }

    fn contact_views(
        &self,
        keep: impl Fn(&Contact) -> bool + 'static,
    ) -> impl Iterator<Item = ContactView> + '_ {
        self.state
            .contacts
            .iter()
            .filter(move |c| keep(c))
            .flat_map(move |c| {
                let sid = |i: u32| ShapeId {
                    index: i,
                    generation: self.state.shapes[i as usize].generation,
                };
                let (a, b) = (sid(c.shape_a), sid(c.shape_b));
                let n = c.manifold.normal;
                c.manifold.points().iter().map(move |p| ContactView {
                    shape_a: a,
                    shape_b: b,
                    point: p.point,
                    normal: n,
                    separation: p.separation,
                    normal_impulse: p.normal_impulse,
                })
            })
    }
}

//! Persistent contacts between pairs of shapes.

use super::recycle::{self, Pair};
use super::shape::Shape;
use super::solver::Impulses;
use crate::collision::Manifold;
use crate::geometry::ShapeGeometry;
use crate::math::Scalar;
use serde::{Deserialize, Serialize};

/// A potential contact between two shapes whose fat boxes overlap.
///
/// Contacts live in the world sorted by `(shape_a, shape_b)` with
/// `shape_a < shape_b`: that order is canonical, so the solver visits them
/// the same way on every machine and after every restore.
///
/// Aligned to a cache line: its 192 bytes then take three lines, not
/// four. The solver's preparation reads contacts in colour order, all
/// over the list, so every line a contact straddles is a miss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[repr(align(64))]
pub struct Contact {
    pub(crate) shape_a: u32,
    pub(crate) shape_b: u32,
    pub(crate) body_a: u32,
    pub(crate) body_b: u32,
    /// Encoded without its geometry, which the positions and `direct`
    /// determine (see `encoding::compact::manifold_state`).
    #[serde(with = "crate::encoding::compact::manifold_state")]
    pub(crate) manifold: Manifold,
    /// Mixed friction √(μa·μb).
    pub(crate) friction: Scalar,
    /// Mixed restitution max(ea, eb).
    pub(crate) restitution: Scalar,
    /// Whether the manifold has points (for a sensor pair: whether the
    /// shapes overlap).
    pub(crate) touching: bool,
    /// One of the shapes is a sensor: overlap only, no manifold, no response.
    pub(crate) sensor: bool,
    /// Report begin/end touching events.
    pub(crate) contact_events: bool,
    /// Report hit events.
    pub(crate) hit_events: bool,
    /// The manifold is the narrow phase's at the current poses, not
    /// recycled: the pair's bodies moved fast relative to each other when it
    /// was collided (`recycle::Moving`), so recycling it would have renewed
    /// its basis nearly every step. State: the velocities it was decided
    /// from may change through the API before the next step, and a decoded
    /// world must rebuild the same manifold. Only a recyclable pair's can
    /// be set.
    pub(crate) direct: bool,
    /// Created by this step's pair search and not collided yet: collided
    /// once even between sleeping bodies (whose contacts are otherwise
    /// left alone), so that every manifold matches the positions. Always
    /// false between steps, so not state.
    #[serde(skip)]
    pub(crate) fresh: bool,
    /// Both shapes are thick enough for recycled manifolds (see
    /// `recycle`): derived from the shapes when the contact is made and
    /// when a snapshot is decoded, so not state.
    #[serde(skip)]
    pub(crate) recycled: bool,
}

impl Contact {
    /// A new, not yet touching contact between shape slots `a < b`.
    pub(crate) fn new(
        (a, sa, ga): (u32, &Shape, &ShapeGeometry),
        (b, sb, gb): (u32, &Shape, &ShapeGeometry),
    ) -> Contact {
        Contact {
            shape_a: a,
            shape_b: b,
            body_a: sa.body,
            body_b: sb.body,
            manifold: Manifold::default(),
            friction: (sa.def.friction * sb.def.friction).sqrt(),
            restitution: sa.def.restitution.max(sb.def.restitution),
            touching: false,
            sensor: sa.def.is_sensor || sb.def.is_sensor,
            contact_events: sa.def.enable_contact_events || sb.def.enable_contact_events,
            hit_events: sa.def.enable_hit_events || sb.def.enable_hit_events,
            fresh: true,
            recycled: !(sa.def.is_sensor || sb.def.is_sensor) && recycle::recyclable(ga, gb),
            direct: false,
        }
    }

    /// Sort key: the shape pair.
    #[inline]
    pub fn key(&self) -> u64 {
        pair_key(self.shape_a, self.shape_b)
    }

    /// What the recycler needs of the contact.
    #[inline]
    pub(crate) fn pair(&self) -> Pair {
        Pair {
            key: self.key(),
            body_a: self.body_a,
            body_b: self.body_b,
            recycled: self.recycled && !self.direct,
        }
    }
}

/// Canonical key of an ordered shape pair.
#[inline]
pub(crate) fn pair_key(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

/// What [`match_impulses`] needs of a manifold's points: ids and impulses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PreviousPoints {
    count: usize,
    points: [(u16, Scalar, Scalar); 2],
}

impl PreviousPoints {
    /// The points of `m`, read field by field; the impulses of its first
    /// `count` points taken from `stored` where the caller has just stored
    /// them there (the same values: loaded back from the manifold, they
    /// waited for those stores, which a load wider than one of them cannot
    /// take its bytes from; smash's collide pass is 7 % faster without).
    #[inline]
    pub(crate) fn of(m: &Manifold, stored: Option<&Impulses>) -> PreviousPoints {
        let p = &m.points;
        let count = usize::from(m.count).min(2);
        let point = |j: usize| match stored {
            Some(s) if j < count => (p[j].id, s.normal[j], s.tangent[j]),
            _ => (p[j].id, p[j].normal_impulse, p[j].tangent_impulse),
        };
        PreviousPoints {
            count,
            points: [point(0), point(1)],
        }
    }
}

/// Carries warm-start impulses from the old manifold to points of the new one
/// with the same feature id.
pub(crate) fn match_impulses(new: &mut Manifold, old: &PreviousPoints) {
    for p in &mut new.points[..new.count as usize] {
        p.normal_impulse = Scalar::ZERO;
        p.tangent_impulse = Scalar::ZERO;
        p.persisted = false;
        for &(id, normal_impulse, tangent_impulse) in &old.points[..old.count] {
            if id == p.id {
                p.normal_impulse = normal_impulse;
                p.tangent_impulse = tangent_impulse;
                p.persisted = true;
                break;
            }
        }
    }
}

/// Whether two shapes that pass the collision filter get a contact: two
/// sensors never do, and a sensor only sees shapes with sensor events on.
#[inline]
pub(crate) fn sensor_pair_allowed(a: &Shape, b: &Shape) -> bool {
    match (a.def.is_sensor, b.def.is_sensor) {
        (false, false) => true,
        (true, true) => false,
        (true, false) => b.def.enable_sensor_events,
        (false, true) => a.def.enable_sensor_events,
    }
}

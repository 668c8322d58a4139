//! What a decoded state derives from the rest: the broad-phase trees, the
//! shapes' fat-box margins and the contacts' manifold geometry, rebuilt
//! after a snapshot decodes.

use super::World;
use crate::collision::{DynamicTree, Manifold};
use crate::dynamics::body::BodyKind;
use crate::dynamics::recycle;
use crate::dynamics::shape::aabb_margin;

impl World {
    /// Recomputes every contact's geometry from its shapes at their current
    /// transforms (after decoding, which does not carry it; see
    /// `encoding::compact::manifold_state`), recycled or taken directly as
    /// each contact's direct flag says. The decoded feature ids, impulses and
    /// persisted flags are kept; a manifold whose recomputed points do not
    /// carry the stored ids, or whose touching flag disagrees, makes the
    /// state inconsistent.
    ///
    /// Every step ends by colliding the contacts of the bodies that moved,
    /// and nothing else moves a body, so on a state a step left behind
    /// this reproduces the manifolds exactly.
    ///
    /// Between steps the API may have moved a body (a teleport, a centre
    /// moved by a shape): its shapes are then queued, its contacts still
    /// hold the manifolds of before, and the next step collides them before
    /// its solve (even asleep), reading only their feature ids, impulses
    /// and persisted flags. Those contacts keep what was decoded, unchecked
    /// and without geometry, and no basis: the next step renews them from
    /// the stored points as the world they came from does (a basis kept
    /// there is of the same key, or renewed there too).
    pub(crate) fn refresh_manifolds(&mut self) -> Result<(), &'static str> {
        let st = &mut self.state;
        let sc = &mut self.scratch;
        sc.recycler.forget();
        sc.recycler.begin(&st.bodies);
        let queued = &mut sc.moved_bodies;
        st.mark_queued_bodies(queued);
        for c in st.contacts.iter_mut() {
            if c.sensor {
                if c.manifold.count != 0 {
                    return Err("sensor contact with manifold points");
                }
                if c.direct {
                    return Err("contact direct flag");
                }
                continue;
            }
            let (ba, bb) = (&st.bodies[c.body_a as usize], &st.bodies[c.body_b as usize]);
            let (ga, gb) = (
                &st.geometry[c.shape_a as usize],
                &st.geometry[c.shape_b as usize],
            );
            c.recycled = recycle::recyclable(ga, gb);
            // Only a recyclable pair's manifold can be taken directly
            // instead (one state, one encoding).
            if c.direct && !c.recycled {
                return Err("contact direct flag");
            }
            if queued.get(c.body_a as usize) == Some(&true)
                || queued.get(c.body_b as usize) == Some(&true)
            {
                continue;
            }
            let mut m = Manifold::EMPTY;
            let pair = c.pair();
            sc.recycler
                .single()
                .manifold(pair, true, (ga, ba), (gb, bb), &mut m, None);
            if m.count != c.manifold.count
                || m.points()
                    .iter()
                    .zip(c.manifold.points())
                    .any(|(p, q)| p.id != q.id)
            {
                return Err("contact points do not match their shapes");
            }
            if c.touching != (m.count > 0) {
                return Err("contact touching flag");
            }
            for (p, q) in m.points.iter_mut().zip(c.manifold.points()) {
                p.normal_impulse = q.normal_impulse;
                p.tangent_impulse = q.tangent_impulse;
                p.persisted = q.persisted;
            }
            c.manifold = m;
        }
        Ok(())
    }

    /// Rebuilds the broad-phase trees from the fat boxes, and the shapes'
    /// fat-box margins from their geometry (after decoding).
    pub(crate) fn rebuild_trees(&mut self) {
        let st = &mut self.state;
        st.static_tree = DynamicTree::new();
        st.dynamic_tree = DynamicTree::new();
        for (i, s) in st.shapes.iter_mut().enumerate() {
            if !s.alive {
                continue;
            }
            let tree = if st.bodies[s.body as usize].kind == BodyKind::Static {
                &mut st.static_tree
            } else {
                &mut st.dynamic_tree
            };
            s.proxy = tree.create_filtered_proxy(s.fat_aabb, i as u32, s.def.filter.category);
            s.margin = aabb_margin(&st.geometry[i]);
        }
    }
}

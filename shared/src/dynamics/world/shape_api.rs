//! The world's shape API: attach, detach and read shapes; the body's mass
//! and fat boxes follow its shapes.

use super::{World, WorldError};
use crate::collision::SPECULATIVE_DISTANCE;
use crate::dynamics::body::{Body, BodyId, BodyKind, ShapeId, NONE};
use crate::dynamics::ccd;
use crate::dynamics::shape::{aabb_margin, fat_box, Shape, ShapeDef, VACANT_GEOMETRY};
use crate::geometry::{chain_segments, ShapeGeometry};
use crate::math::{Aabb, Scalar, Vec2, WORLD_BOUND};
use std::sync::Arc;

/// A shape definition's material: no negative density, friction or
/// restitution.
fn check_material(def: &ShapeDef) -> Result<(), WorldError> {
    if def.density < Scalar::ZERO {
        return Err(WorldError::BadDensity);
    }
    if def.friction < Scalar::ZERO {
        return Err(WorldError::Negative("friction"));
    }
    if def.restitution < Scalar::ZERO {
        return Err(WorldError::Negative("restitution"));
    }
    Ok(())
}

/// A shape's box on body `b`, which must lie within the world bounds.
fn check_in_world(geometry: &ShapeGeometry, b: &Body) -> Result<Aabb, WorldError> {
    let aabb = geometry.aabb(b.transform);
    for v in [aabb.lower, aabb.upper] {
        if v.x.abs() > WORLD_BOUND || v.y.abs() > WORLD_BOUND {
            return Err(WorldError::OutOfBounds("shape"));
        }
    }
    Ok(aabb)
}

impl World {
    /// Number of live shapes (each chain segment is one).
    pub fn shape_count(&self) -> usize {
        self.state.shapes.len() - self.state.free_shapes.len()
    }

    /// Attaches a chain through `points` to a body: one
    /// [`ShapeGeometry::ChainSegment`] shape per segment of
    /// [`chain_segments`](crate::geometry::chain_segments), all with `def`, in chain order. Nothing is
    /// created when any segment is invalid.
    ///
    /// # Errors
    /// Those of [`chain_segments`](crate::geometry::chain_segments) and of [`World::create_shape`].
    pub fn create_chain(
        &mut self,
        body: BodyId,
        def: &ShapeDef,
        points: &[Vec2],
        is_loop: bool,
    ) -> Result<Vec<ShapeId>, WorldError> {
        let segments = chain_segments(points, is_loop)?;
        let b = self.state.bodies[self.body_index(body)? as usize];
        // Every check `attach_shape` makes that a segment could fail, first,
        // so that nothing is attached when one would fail.
        check_material(def)?;
        for seg in &segments {
            check_in_world(&ShapeGeometry::ChainSegment(*seg), &b)?;
        }
        let ids = segments
            .into_iter()
            .map(|seg| self.attach_shape(body, def, ShapeGeometry::ChainSegment(seg)))
            .collect::<Result<Vec<_>, _>>()?;
        self.update_mass(self.body_index(body)?);
        Ok(ids)
    }

    /// Attaches a shape to a body and updates its mass.
    ///
    /// # Errors
    /// A stale body handle, a non-positive density on a dynamic body, or a
    /// negative friction or restitution.
    pub fn create_shape(
        &mut self,
        body: BodyId,
        def: &ShapeDef,
        geometry: ShapeGeometry,
    ) -> Result<ShapeId, WorldError> {
        let id = self.attach_shape(body, def, geometry)?;
        let bi = self.body_index(body)?;
        let c = &self.state.body_config[bi as usize];
        // A state restored from crafted bytes may hold a static body with
        // a centre off its origin: the full recompute makes it whole.
        if self.state.bodies[bi as usize].kind == BodyKind::Dynamic
            || !c.mass.is_zero()
            || c.local_center != Vec2::ZERO
        {
            self.update_mass(bi);
        } else {
            self.extend_extents(bi, id.index);
        }
        Ok(id)
    }

    /// What [`World::update_mass`] gives after shape `si` was attached to a
    /// static or kinematic body, in constant time where that walks all the
    /// body's shapes (a static ground of n tiles, made one `create_shape`
    /// at a time, cost n² extents and copies: 3/4 of building `rain`). Such a
    /// body has no mass and its centre is its origin, so its extents are
    /// the largest and smallest of its shapes' own, and a new shape can
    /// only extend them. (Box2D leaves a static body's extents at zero; a
    /// kinematic one's are computed from every shape, as here.)
    fn extend_extents(&mut self, bi: u32, si: u32) {
        let g = &self.state.geometry[si as usize];
        let (far, near) = (g.extent_from(Vec2::ZERO), ccd::shape_min_extent(g));
        // The new shape heads the body's list; alone, it sets the smallest.
        let alone = self.state.shapes[si as usize].next == NONE;
        let bc = self.state.config_mut(bi);
        bc.max_extent = bc.max_extent.max(far);
        bc.min_extent = if alone { near } else { bc.min_extent.min(near) };
        let b = &mut self.state.bodies[bi as usize];
        b.center = b.transform.apply(Vec2::ZERO);
    }

    /// [`World::create_shape`] without the mass update (which walks every
    /// shape of the body: a chain's segments update it once).
    fn attach_shape(
        &mut self,
        body: BodyId,
        def: &ShapeDef,
        geometry: ShapeGeometry,
    ) -> Result<ShapeId, WorldError> {
        let bi = self.body_index(body)?;
        let b = self.state.bodies[bi as usize];
        if b.kind == BodyKind::Dynamic
            && def.density <= Scalar::ZERO
            && !matches!(
                geometry,
                ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_)
            )
        {
            return Err(WorldError::BadDensity);
        }
        check_material(def)?;
        let aabb = check_in_world(&geometry, &b)?;
        let index = match self.state.free_shapes.pop() {
            Some(i) => i,
            None => {
                self.state.shapes.push(Shape::vacant());
                Arc::make_mut(&mut self.state.geometry).push(VACANT_GEOMETRY);
                (self.state.shapes.len() - 1) as u32
            }
        };
        let generation = self.state.shapes[index as usize].generation;
        let margin = aabb_margin(&geometry);
        let fat = fat_box(aabb, b.kind, margin);
        let tree = if b.kind == BodyKind::Static {
            &mut self.state.static_tree
        } else {
            &mut self.state.dynamic_tree
        };
        let proxy = tree.create_filtered_proxy(fat, index, def.filter.category);
        self.state.shapes[index as usize] = Shape {
            generation,
            alive: true,
            body: bi,
            def: *def,
            fat_aabb: fat,
            next: b.first_shape,
            moved: true,
            proxy,
            margin,
        };
        Arc::make_mut(&mut self.state.geometry)[index as usize] = geometry;
        self.state.moved.push(index);
        self.state.bodies[bi as usize].first_shape = index;
        // Adding a shape does not wake a body created asleep (the smash wall
        // is built asleep); contacts wake it when something touches it.
        Ok(ShapeId { index, generation })
    }

    pub(super) fn shape_index(&self, id: ShapeId) -> Result<u32, WorldError> {
        match self.state.shapes.get(id.index as usize) {
            Some(s) if s.alive && s.generation == id.generation => Ok(id.index),
            _ => Err(WorldError::InvalidShape(id)),
        }
    }

    /// Detaches and destroys a shape; updates the body's mass.
    ///
    /// # Errors
    /// A stale handle.
    pub fn destroy_shape(&mut self, id: ShapeId) -> Result<(), WorldError> {
        let si = self.shape_index(id)?;
        let bi = self.state.shapes[si as usize].body;
        self.wake_touching(bi);
        // Unlink from the body's list.
        let mut link = self.state.bodies[bi as usize].first_shape;
        if link == si {
            self.state.bodies[bi as usize].first_shape = self.state.shapes[si as usize].next;
        } else {
            while link != NONE {
                let next = self.state.shapes[link as usize].next;
                if next == si {
                    self.state.shapes[link as usize].next = self.state.shapes[si as usize].next;
                    break;
                }
                link = next;
            }
        }
        let st = &self.state;
        let gone = st
            .contacts
            .iter()
            .filter(|c| c.shape_a == si || c.shape_b == si);
        self.events.contacts_destroyed(&st.shapes, gone);
        self.state
            .contacts
            .retain(|c| c.shape_a != si && c.shape_b != si);
        self.free_shape(si);
        self.update_mass(bi);
        Ok(())
    }

    pub(super) fn free_shape(&mut self, si: u32) {
        let s = self.state.shapes[si as usize];
        let is_static = self.state.bodies[s.body as usize].kind == BodyKind::Static;
        let tree = if is_static {
            &mut self.state.static_tree
        } else {
            &mut self.state.dynamic_tree
        };
        tree.destroy_proxy(s.proxy);
        if s.moved {
            self.state.moved.retain(|&m| m != si);
        }
        let generation = s.generation.wrapping_add(1);
        self.state.shapes[si as usize] = Shape::vacant();
        self.state.shapes[si as usize].generation = generation;
        Arc::make_mut(&mut self.state.geometry)[si as usize] = VACANT_GEOMETRY;
        self.state.free_shapes.push(si);
    }

    /// Shapes of a body, most recently attached first.
    ///
    /// # Errors
    /// A stale handle.
    pub fn body_shapes(&self, id: BodyId) -> Result<Vec<ShapeId>, WorldError> {
        let b = self.body_ref(id)?;
        let mut out = Vec::new();
        let mut s = b.first_shape;
        while s != NONE {
            let sh = &self.state.shapes[s as usize];
            out.push(ShapeId {
                index: s,
                generation: sh.generation,
            });
            s = sh.next;
        }
        Ok(out)
    }

    /// Geometry of a shape in its body's frame.
    ///
    /// # Errors
    /// A stale handle.
    pub fn shape_geometry(&self, id: ShapeId) -> Result<ShapeGeometry, WorldError> {
        Ok(self.state.geometry[self.shape_index(id)? as usize])
    }

    /// Material and filter of a shape.
    ///
    /// # Errors
    /// A stale handle.
    pub fn shape_def(&self, id: ShapeId) -> Result<ShapeDef, WorldError> {
        Ok(self.state.shapes[self.shape_index(id)? as usize].def)
    }

    /// The body a shape is attached to.
    ///
    /// # Errors
    /// A stale handle.
    pub fn shape_body(&self, id: ShapeId) -> Result<BodyId, WorldError> {
        let b = self.state.shapes[self.shape_index(id)? as usize].body;
        Ok(BodyId {
            index: b,
            generation: self.state.bodies[b as usize].generation,
        })
    }

    /// Recomputes mass, centre and inertia from the body's shapes.
    pub(super) fn update_mass(&mut self, bi: u32) {
        let mut total = Scalar::ZERO;
        let mut weighted = Vec2::ZERO;
        let mut inertia = Scalar::ZERO;
        let b = self.state.bodies[bi as usize];
        let mut s = b.first_shape;
        while s != NONE {
            let sh = &self.state.shapes[s as usize];
            let geometry = &self.state.geometry[s as usize];
            if b.kind == BodyKind::Dynamic && sh.def.density > Scalar::ZERO {
                let md = geometry.mass(sh.def.density);
                total += md.mass;
                weighted = weighted.mul_add(md.mass, md.center);
                inertia += md.rotational_inertia + md.mass * md.center.dot(md.center);
            }
            s = sh.next;
        }
        let dynamic = b.kind == BodyKind::Dynamic;
        let bc = self.state.config_mut(bi);
        bc.mass = Scalar::ZERO;
        bc.inv_mass = Scalar::ZERO;
        bc.inertia = Scalar::ZERO;
        bc.inv_inertia = Scalar::ZERO;
        bc.local_center = Vec2::ZERO;
        if dynamic {
            if total > Scalar::ZERO {
                let c = Vec2::new(weighted.x / total, weighted.y / total);
                bc.mass = total;
                bc.inv_mass = Scalar::ONE / total;
                bc.local_center = c;
                let i = inertia - total * c.dot(c);
                if i > Scalar::ZERO && !bc.fixed_rotation {
                    bc.inertia = i;
                    bc.inv_inertia = Scalar::ONE / i;
                }
            } else {
                // A dynamic body without mass still falls: unit mass, no rotation.
                bc.mass = Scalar::ONE;
                bc.inv_mass = Scalar::ONE;
            }
        }
        let local_center = bc.local_center;
        // The extents from the centre, over the list again (no copies).
        let (mut far, mut near) = (Scalar::ZERO, None::<Scalar>);
        let mut s = b.first_shape;
        while s != NONE {
            let g = &self.state.geometry[s as usize];
            far = far.max(g.extent_from(local_center));
            let m = ccd::shape_min_extent(g);
            near = Some(near.map_or(m, |n| n.min(m)));
            s = self.state.shapes[s as usize].next;
        }
        let bc = self.state.config_mut(bi);
        bc.max_extent = far;
        bc.min_extent = near.unwrap_or(Scalar::ZERO);
        let b = &mut self.state.bodies[bi as usize];
        let center = b.transform.apply(local_center);
        let moved = center != b.center;
        b.center = center;
        // A recycled manifold fixes its lever arms about the centre: the
        // body's contacts are collided again before the next solve. Its
        // shapes queued, the step collides first (see `refresh_shapes`),
        // the body's contacts even asleep, and a snapshot taken now
        // leaves them to that collide on decoding. A body whose shapes are
        // all waiting for their first pair search has no contacts.
        if !moved {
            return;
        }
        let mut s = self.state.bodies[bi as usize].first_shape;
        let mut searched = false;
        while s != NONE {
            let sh = &self.state.shapes[s as usize];
            searched |= !sh.moved;
            s = sh.next;
        }
        if searched {
            self.state.queue_shapes(bi);
        }
    }

    /// Re-makes the fat boxes of a teleported body's shapes, as Box2D's
    /// `b2Body_SetTransform` does: only a box that no longer holds the
    /// shape's tight box grown by the speculative distance is re-made, and
    /// it is grown by the shape's margin whatever the body's kind (a static
    /// body's too; its boxes made anywhere else have the speculative
    /// distance instead, see [`fat_box`]).
    ///
    /// Every shape is queued as moved all the same, even one whose box is
    /// kept (its pair search finds only the pairs it has): the queue is
    /// what makes the next step collide before its solve, so that it
    /// solves the contacts of the new positions, as Box2D does (it collides
    /// at the start of every step), and as a snapshot taken now does (its
    /// contact geometry is recomputed from the positions on decoding).
    pub(super) fn refresh_shapes(&mut self, bi: u32) {
        let b = self.state.bodies[bi as usize];
        let mut s = b.first_shape;
        while s != NONE {
            let sh = &mut self.state.shapes[s as usize];
            let aabb = self.state.geometry[s as usize].aabb(b.transform);
            if !sh.fat_aabb.contains(&aabb.expand(SPECULATIVE_DISTANCE)) {
                sh.fat_aabb = aabb.expand(SPECULATIVE_DISTANCE).expand(sh.margin);
                let tree = if b.kind == BodyKind::Static {
                    &mut self.state.static_tree
                } else {
                    &mut self.state.dynamic_tree
                };
                tree.move_proxy(sh.proxy, sh.fat_aabb);
            }
            s = sh.next;
        }
        self.state.queue_shapes(bi);
    }
}

#[cfg(test)]
mod tests {
    use crate::dynamics::body::{BodyDef, BodyKind};
    use crate::dynamics::shape::ShapeDef;
    use crate::dynamics::world::World;
    use crate::geometry::{Capsule, Circle, Polygon, Segment, ShapeGeometry};
    use crate::math::{fx, Rot, Scalar, Vec2};

    /// A static or kinematic body's extents, kept up shape by shape in
    /// constant time, are exactly what walking all its shapes gives,
    /// through creations, a chain, removals (which walk them) and more
    /// creations after.
    #[test]
    fn extents_kept_per_shape_equal_a_full_recompute() {
        let mut w = World::default();
        let sd = ShapeDef::default();
        for (kind, at) in [
            (BodyKind::Static, Vec2::new(fx(3), fx(-2))),
            (BodyKind::Kinematic, Vec2::new(fx(-7), fx(5))),
        ] {
            let body = w
                .create_body(&BodyDef {
                    kind,
                    position: at,
                    rotation: Rot::from_angle(Scalar::ratio(1, 3)),
                    ..BodyDef::default()
                })
                .unwrap();
            let bi = w.body_index(body).unwrap();
            let mut ids = Vec::new();
            let shape = |w: &mut World, i: i32| {
                let c = Vec2::new(fx(i % 17 - 8), fx(i % 5 - 2))
                    + Vec2::new(Scalar::ratio(i as i64, 7), Scalar::ZERO);
                let g = match i % 4 {
                    0 => ShapeGeometry::Polygon(Polygon::make_offset_box(
                        Scalar::ratio(1 + i as i64 % 3, 4),
                        Scalar::ratio(1, 4),
                        c,
                        Rot::from_angle(Scalar::ratio(i as i64, 5)),
                    )),
                    1 => ShapeGeometry::Circle(
                        Circle::new(c, Scalar::ratio(1 + i as i64 % 4, 8)).unwrap(),
                    ),
                    2 => ShapeGeometry::Capsule(
                        Capsule::new(c, c + Vec2::new(fx(1), fx(1)), Scalar::ratio(1, 5)).unwrap(),
                    ),
                    _ => ShapeGeometry::Segment(
                        Segment::new(c, c + Vec2::new(fx(2), fx(-1))).unwrap(),
                    ),
                };
                w.create_shape(body, &sd, g).unwrap()
            };
            let check = |w: &mut World, when: &str| {
                let (kept, kept_center) = (
                    w.state.body_config[bi as usize],
                    w.state.bodies[bi as usize].center,
                );
                w.update_mass(bi);
                assert_eq!(w.state.body_config[bi as usize], kept, "{kind:?}, {when}");
                assert_eq!(
                    w.state.bodies[bi as usize].center, kept_center,
                    "{kind:?}, {when}"
                );
            };
            // The first shape sets the smallest extent alone (a body with
            // none has zero).
            ids.push(shape(&mut w, 1));
            check(&mut w, "one shape");
            assert!(w.state.body_config[bi as usize].min_extent > Scalar::ZERO);
            for i in 2..40 {
                ids.push(shape(&mut w, i));
            }
            check(&mut w, "40 shapes");
            let pts: Vec<Vec2> = (0..6)
                .map(|k| Vec2::new(fx(20 + 2 * k), fx(k * k % 5)))
                .collect();
            w.create_chain(body, &sd, &pts, false).unwrap();
            for id in ids.iter().step_by(3) {
                w.destroy_shape(*id).unwrap();
            }
            check(&mut w, "a chain, and a third removed");
            for i in 40..60 {
                shape(&mut w, i);
            }
            check(&mut w, "more after");
            // A crafted state (a static body's centre off its origin, as
            // restored bytes may hold): the next shape recomputes it all.
            w.state.config_mut(bi).local_center = Vec2::new(fx(1), fx(2));
            shape(&mut w, 60);
            check(&mut w, "after a crafted centre");
            assert_eq!(w.state.body_config[bi as usize].local_center, Vec2::ZERO);
        }
    }
}

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
        self.update_mass(self.body_index(body)?);
        Ok(id)
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
        let mut extent_shapes = Vec::new();
        let b = self.state.bodies[bi as usize];
        let mut s = b.first_shape;
        while s != NONE {
            let sh = &self.state.shapes[s as usize];
            let geometry = &self.state.geometry[s as usize];
            extent_shapes.push(*geometry);
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
        let mut ext = Scalar::ZERO;
        for g in &extent_shapes {
            ext = ext.max(g.extent_from(local_center));
        }
        bc.max_extent = ext;
        bc.min_extent = extent_shapes
            .iter()
            .map(ccd::shape_min_extent)
            .min()
            .unwrap_or(Scalar::ZERO);
        let b = &mut self.state.bodies[bi as usize];
        b.center = b.transform.apply(local_center);
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
            if !sh.moved {
                sh.moved = true;
                self.state.moved.push(s);
            }
            s = sh.next;
        }
    }
}

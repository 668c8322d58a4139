//! World queries: ray casts, box, shape and point overlap.
//!
//! Queries read the world without changing it. Candidates come from the
//! broad-phase trees (whose shape depends on history), so every query
//! re-checks each candidate exactly and sorts its results: by shape slot for
//! overlap queries, by fraction and then shape slot for ray casts. The
//! results are therefore the same on every machine and after a restore.
//!
//! Inputs must lie within the world bounds (±10 000 m per coordinate).

use super::{World, WorldError};
use crate::collision::{ray_cast, shapes_overlap, test_point};
use crate::dynamics::body::{ShapeId, NONE};
use crate::dynamics::shape::Shape;
use crate::geometry::ShapeGeometry;
use crate::math::{Aabb, Scalar, Transform, Vec2};

/// Which shapes a query sees: shapes whose category is in `mask` and whose
/// own mask includes `category`. Sensors only when `include_sensors`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct QueryFilter {
    /// Category bits of the query.
    pub category: u32,
    /// Shape categories the query sees.
    pub mask: u32,
    /// Whether sensor shapes are reported.
    pub include_sensors: bool,
}

impl Default for QueryFilter {
    /// Category 1, every mask bit, no sensors (Box2D's default query filter).
    fn default() -> QueryFilter {
        QueryFilter {
            category: 1,
            mask: u32::MAX,
            include_sensors: false,
        }
    }
}

impl QueryFilter {
    /// Whether the query sees a shape.
    fn accepts(&self, s: &Shape) -> bool {
        (s.def.filter.category & self.mask) != 0
            && (s.def.filter.mask & self.category) != 0
            && (self.include_sensors || !s.def.is_sensor)
    }
}

/// A shape hit by a ray.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RayHit {
    /// The shape.
    pub shape: ShapeId,
    /// World point where the ray enters the shape.
    pub point: Vec2,
    /// Outward surface normal there.
    pub normal: Vec2,
    /// Fraction of the translation, in `[0, 1]`.
    pub fraction: Scalar,
}

fn in_bounds(p: Vec2) -> bool {
    Aabb::new(p, p).within_world()
}

impl World {
    fn shape_handle(&self, i: u32) -> ShapeId {
        ShapeId {
            index: i,
            generation: self.state.shapes[i as usize].generation,
        }
    }

    /// Shape slots whose fat boxes overlap `aabb` and that `filter` accepts, sorted.
    fn candidates(&self, aabb: &Aabb, filter: &QueryFilter) -> Vec<u32> {
        let mut out = Vec::new();
        self.state.static_tree.query_shared(aabb, |s| out.push(s));
        self.state.dynamic_tree.query_shared(aabb, |s| out.push(s));
        // The trees round boxes outward: keep the exact overlaps only.
        out.retain(|&s| self.state.shapes[s as usize].fat_aabb.overlaps(aabb));
        self.finish_candidates(out, filter)
    }

    fn finish_candidates(&self, mut out: Vec<u32>, filter: &QueryFilter) -> Vec<u32> {
        out.retain(|&s| filter.accepts(&self.state.shapes[s as usize]));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Geometry and world transform of a live shape slot.
    fn placed(&self, s: u32) -> (&ShapeGeometry, Transform) {
        let sh = &self.state.shapes[s as usize];
        debug_assert!(sh.alive && sh.body != NONE);
        (
            &self.state.geometry[s as usize],
            self.state.bodies[sh.body as usize].transform,
        )
    }

    /// Every shape the ray from `origin` along `translation` enters, sorted by
    /// fraction and then shape slot. Rays starting inside a shape do not hit it.
    ///
    /// # Errors
    /// The origin or end point lies outside the world bounds.
    pub fn cast_ray_all(
        &self,
        origin: Vec2,
        translation: Vec2,
        filter: &QueryFilter,
    ) -> Result<Vec<RayHit>, WorldError> {
        // Checking the translation first keeps `origin + translation` from wrapping.
        let reach = Aabb::new(translation.min(Vec2::ZERO), translation.max(Vec2::ZERO));
        if !in_bounds(origin)
            || !Aabb::new(
                reach.lower.mul_add(Scalar::HALF, Vec2::ZERO),
                reach.upper.mul_add(Scalar::HALF, Vec2::ZERO),
            )
            .within_world()
        {
            return Err(WorldError::OutOfBounds("ray"));
        }
        let end = origin + translation;
        if !in_bounds(end) {
            return Err(WorldError::OutOfBounds("ray"));
        }
        let mut cands = Vec::new();
        self.state
            .static_tree
            .query_ray(origin, end, |s| cands.push(s));
        self.state
            .dynamic_tree
            .query_ray(origin, end, |s| cands.push(s));
        let cands = self.finish_candidates(cands, filter);
        let mut hits: Vec<RayHit> = cands
            .into_iter()
            .filter_map(|s| {
                let (g, xf) = self.placed(s);
                ray_cast(g, xf, origin, translation).map(|h| RayHit {
                    shape: self.shape_handle(s),
                    point: h.point,
                    normal: h.normal,
                    fraction: h.fraction,
                })
            })
            .collect();
        hits.sort_by_key(|h| (h.fraction, h.shape.index));
        Ok(hits)
    }

    /// The first shape the ray enters (smallest fraction, then smallest slot).
    ///
    /// # Errors
    /// The origin or end point lies outside the world bounds.
    pub fn cast_ray_closest(
        &self,
        origin: Vec2,
        translation: Vec2,
        filter: &QueryFilter,
    ) -> Result<Option<RayHit>, WorldError> {
        Ok(self
            .cast_ray_all(origin, translation, filter)?
            .into_iter()
            .next())
    }

    /// Shapes whose bounding box (tight, at the body's current pose) overlaps
    /// `aabb`, sorted by slot. Touching counts.
    ///
    /// # Errors
    /// A box outside the world bounds or with `lower > upper`.
    pub fn overlap_aabb(
        &self,
        aabb: Aabb,
        filter: &QueryFilter,
    ) -> Result<Vec<ShapeId>, WorldError> {
        if !aabb.within_world() {
            return Err(WorldError::OutOfBounds("aabb"));
        }
        if aabb.lower.x > aabb.upper.x || aabb.lower.y > aabb.upper.y {
            return Err(WorldError::BadQuery(
                "aabb lower corner is above its upper corner",
            ));
        }
        Ok(self
            .candidates(&aabb, filter)
            .into_iter()
            .filter(|&s| {
                let (g, xf) = self.placed(s);
                g.aabb(xf).overlaps(&aabb)
            })
            .map(|s| self.shape_handle(s))
            .collect())
    }

    /// Shapes that overlap or touch `geometry` placed by `xf`, sorted by slot
    /// (exact test: GJK distance of zero).
    ///
    /// # Errors
    /// The placed geometry reaches outside the world bounds.
    pub fn overlap_shape(
        &self,
        geometry: &ShapeGeometry,
        xf: Transform,
        filter: &QueryFilter,
    ) -> Result<Vec<ShapeId>, WorldError> {
        let aabb = geometry.aabb(xf);
        if !aabb.within_world() {
            return Err(WorldError::OutOfBounds("shape"));
        }
        Ok(self
            .candidates(&aabb, filter)
            .into_iter()
            .filter(|&s| {
                let (g, sxf) = self.placed(s);
                shapes_overlap(geometry, xf, g, sxf)
            })
            .map(|s| self.shape_handle(s))
            .collect())
    }

    /// Shapes containing `point` (boundary included), sorted by slot.
    /// Segments contain no points.
    ///
    /// # Errors
    /// The point lies outside the world bounds.
    pub fn overlap_point(
        &self,
        point: Vec2,
        filter: &QueryFilter,
    ) -> Result<Vec<ShapeId>, WorldError> {
        if !in_bounds(point) {
            return Err(WorldError::OutOfBounds("point"));
        }
        Ok(self
            .candidates(&Aabb::new(point, point), filter)
            .into_iter()
            .filter(|&s| {
                let (g, xf) = self.placed(s);
                test_point(g, xf, point)
            })
            .map(|s| self.shape_handle(s))
            .collect())
    }
}

//! Collision detection: the broad phase tree and the narrow phase manifolds.

mod dynamic_tree;
mod manifold;

pub use dynamic_tree::DynamicTree;
pub use manifold::{
    collide, collide_capsule_circle, collide_capsules, collide_circles, collide_polygon_circle,
    collide_polygons, Manifold, ManifoldPoint, LINEAR_SLOP, SPECULATIVE_DISTANCE,
};

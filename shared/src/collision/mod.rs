//! Collision detection: the broad phase tree and the narrow phase manifolds.

mod distance;
mod dynamic_tree;
mod manifold;
mod raycast;
mod toi;

pub use distance::{
    shape_distance, shapes_overlap, DistanceOutput, DistanceProxy, GJK_MAX_ITERATIONS,
};
pub use dynamic_tree::DynamicTree;
pub use manifold::{
    collide, collide_capsule_circle, collide_capsules, collide_circles, collide_into,
    collide_polygon_circle, collide_polygons, Manifold, ManifoldPoint, LINEAR_SLOP,
    SPECULATIVE_DISTANCE,
};
pub use raycast::{ray_cast, test_point, CastOutput};
pub use toi::{
    time_of_impact, toi_target, Sweep, ToiOutput, ToiState, TOI_MAX_ITERATIONS, TOI_TARGET,
};

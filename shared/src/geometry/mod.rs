//! Shapes and their mass properties.

mod polygon;
mod shapes;

pub use polygon::{Polygon, MAX_POLYGON_VERTICES};
pub use shapes::{
    chain_segments, Capsule, ChainSegment, Circle, Filter, MassData, Segment, ShapeGeometry,
    MAX_CHAIN_POINTS,
};

/// Why a shape could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    /// A polygon needs between 3 and 8 vertices.
    #[error("polygon has {0} vertices, expected 3 to 8")]
    VertexCount(usize),
    /// The vertices do not form a strictly convex polygon.
    #[error("polygon is not strictly convex (vertex {0})")]
    NotConvex(usize),
    /// A size (radius, half-extent, edge) is zero, negative or too small.
    #[error("{0} must be positive and at least 0.005")]
    TooSmall(&'static str),
    /// A chain needs at least 4 points (and at most 65536).
    #[error("chain has {0} points, expected 4 to 65536")]
    ChainPoints(usize),
    /// A coordinate lies outside the world bounds.
    #[error("{0} lies outside the world bounds of ±10000")]
    OutOfBounds(&'static str),
}

//! bitroom-sim: deterministic fixed-point 2D rigid-body simulation.
pub mod collision;
pub mod geometry;
pub mod math;

//! bitroom-sim: deterministic fixed-point 2D rigid-body simulation.
pub mod math;

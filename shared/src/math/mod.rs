//! Fixed-point math: the [`Scalar`], vectors, rotations, transforms, boxes,
//! and deterministic square root and trigonometry.

mod scalar;
mod sqrt;
pub(crate) mod trig;
mod vec2;
mod wide;

pub use scalar::{fx, Scalar, WORLD_BOUND};
pub use sqrt::sqrt;
pub use trig::{atan2, normalize_angle, sin_cos};
pub use vec2::{Aabb, Rot, Transform, Vec2};
#[cfg(test)]
pub(crate) use wide::covers_lines;
pub(crate) use wide::{prefetch, Coef, CoefV, Mask, Wide, LANES};

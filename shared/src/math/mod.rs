//! Fixed-point math: the [`Scalar`], vectors, rotations, transforms, boxes,
//! and deterministic square root and trigonometry.

mod scalar;
mod sqrt;
pub(crate) mod trig;
mod vec2;
mod wide;

pub use scalar::{fx, Scalar, WORLD_BOUND};
pub(crate) use sqrt::isqrt_u64;
pub use sqrt::sqrt;
pub use trig::{atan2, normalize_angle, sin_cos};
pub use vec2::{Aabb, Rot, Transform, Vec2};
#[cfg(test)]
pub(crate) use wide::{covers_lines, covers_lines_of};
pub(crate) use wide::{prefetch, prefetch_write, Coef, CoefV, Mask, Wide, LANES};

/// The tests' fixed pseudo-random stream: Knuth's MMIX LCG from `seed`,
/// each call its next state (callers take the bits they need).
#[cfg(test)]
pub(crate) fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x
    }
}

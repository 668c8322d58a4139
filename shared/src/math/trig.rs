//! Deterministic sine, cosine and atan2 on Q32.32 (being written).

use super::Scalar;

/// `(sin, cos)` of an angle in radians.
pub fn sin_cos(angle: Scalar) -> (Scalar, Scalar) {
    let c = fixed::types::I32F32::from_bits(angle.to_bits());
    let _ = c;
    unimplemented!("trig is being written")
}

/// Angle of `(x, y)` in `[−π, π]`.
pub fn atan2(y: Scalar, x: Scalar) -> Scalar {
    let _ = (y, x);
    unimplemented!("trig is being written")
}

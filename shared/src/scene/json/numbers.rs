//! Numbers: JSON floats turned into `Scalar`s with their ranges checked,
//! and shown back in messages.

use super::*;

// Numbers.
// ---------------------------------------------------------------------------

/// A number as written, for messages (scientific notation when long).
/// Float edge: error messages of the scene parser only.
pub(super) fn show(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || (1e-6..1e9).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A scalar for messages, to 4 decimals.
pub(super) fn show_scalar(s: Scalar) -> String {
    format!("{:.4}", s.to_f64())
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_owned()
}

/// Inclusive range check with a message naming the field.
pub(super) fn ranged(
    at: &Location,
    field: &str,
    v: Num,
    lo: Scalar,
    hi: Scalar,
) -> Result<Scalar, SceneError> {
    match Scalar::from_f64(v.0) {
        Some(s) if s >= lo && s <= hi => Ok(s),
        _ => Err(invalid(
            at,
            format!(
                "{field} {} is out of range (allowed {} to {})",
                show(v.0),
                show_scalar(lo),
                show_scalar(hi)
            ),
        )),
    }
}

/// A strictly positive value up to `hi`.
pub(super) fn positive(
    at: &Location,
    field: &str,
    v: Num,
    hi: Scalar,
) -> Result<Scalar, SceneError> {
    match Scalar::from_f64(v.0) {
        Some(s) if s > Scalar::ZERO && s <= hi => Ok(s),
        _ => Err(invalid(
            at,
            format!(
                "{field} {} is out of range (must be above 0 and at most {})",
                show(v.0),
                show_scalar(hi)
            ),
        )),
    }
}

/// A world coordinate.
pub(super) fn coord(at: &Location, field: &str, v: Num) -> Result<Scalar, SceneError> {
    match Scalar::from_f64(v.0) {
        Some(s) if s.abs() <= WORLD_BOUND => Ok(s),
        _ => Err(invalid(
            at,
            format!(
                "{field} {} is outside the world bounds of ±10000",
                show(v.0)
            ),
        )),
    }
}

/// A world point.
pub(super) fn point(at: &Location, field: &str, v: V2) -> Result<Vec2, SceneError> {
    Ok(Vec2::new(
        coord(at, &format!("{field}.x"), v.0)?,
        coord(at, &format!("{field}.y"), v.1)?,
    ))
}

/// A size: radius or half-extent, at least [`MIN_SIZE`].
pub(super) fn size(at: &Location, field: &str, v: Num) -> Result<Scalar, SceneError> {
    let s = Scalar::from_f64(v.0);
    let problem = match s {
        Some(s) if s > WORLD_BOUND => "is larger than 10000",
        None if v.0 > 0.0 => "is larger than 10000",
        Some(s) if s <= Scalar::ZERO => "must be positive",
        None => "must be positive",
        Some(s) if s < MIN_SIZE => "is below the minimum size of 0.005",
        Some(s) => return Ok(s),
    };
    Err(invalid(at, format!("{field} {} {problem}", show(v.0))))
}

/// A vector whose components are each in `[-bound, bound]`.
pub(super) fn ranged_vec(
    at: &Location,
    field: &str,
    v: V2,
    bound: Scalar,
) -> Result<Vec2, SceneError> {
    Ok(Vec2::new(
        ranged(at, &format!("{field}.x"), v.0, -bound, bound)?,
        ranged(at, &format!("{field}.y"), v.1, -bound, bound)?,
    ))
}

pub(super) fn opt<T: Copy, R>(
    v: Option<T>,
    default: R,
    f: impl FnOnce(T) -> Result<R, SceneError>,
) -> Result<R, SceneError> {
    match v {
        Some(v) => f(v),
        None => Ok(default),
    }
}

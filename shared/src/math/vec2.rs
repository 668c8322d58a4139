//! 2D vectors, rotations and rigid transforms on [`Scalar`].

use super::{isqrt_u64, sqrt, Scalar, WORLD_BOUND};
use core::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};
use serde::{Deserialize, Serialize};

/// Components below this many ulps (half a metre) square exactly into a
/// `u64` with 64 fraction bits: each square is below 2⁶², their sum below
/// 2⁶³.
const SMALL: u64 = 1 << 31;

/// `x² + y²` of raw Q32.32 bits, both below [`SMALL`] in magnitude: the
/// square of the length with 64 fraction bits.
#[inline(always)]
fn sum_of_squares(x: i64, y: i64) -> u64 {
    debug_assert!(x.unsigned_abs() < SMALL && y.unsigned_abs() < SMALL);
    (x * x) as u64 + (y * y) as u64
}

/// A 2D vector.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug, Hash, Serialize, Deserialize)]
pub struct Vec2 {
    /// x component.
    pub x: Scalar,
    /// y component.
    pub y: Scalar,
}

impl Vec2 {
    /// The zero vector.
    pub const ZERO: Vec2 = Vec2::new(Scalar::ZERO, Scalar::ZERO);

    /// From components.
    #[inline(always)]
    pub const fn new(x: Scalar, y: Scalar) -> Vec2 {
        Vec2 { x, y }
    }

    /// From integer components.
    #[inline]
    pub const fn from_ints(x: i32, y: i32) -> Vec2 {
        Vec2::new(Scalar::from_int(x), Scalar::from_int(y))
    }

    /// Dot product.
    #[inline(always)]
    pub fn dot(self, o: Vec2) -> Scalar {
        self.x * o.x + self.y * o.y
    }

    /// 2D cross product (z of the 3D cross).
    #[inline(always)]
    pub fn cross(self, o: Vec2) -> Scalar {
        self.x * o.y - self.y * o.x
    }

    /// `self × s` for a scalar `s` (z-axis): `(s·y, −s·x)`.
    #[inline(always)]
    pub fn cross_sv(self, s: Scalar) -> Vec2 {
        Vec2::new(s * self.y, -s * self.x)
    }

    /// `s × v` for a scalar `s` (z-axis): `(−s·y, s·x)`.
    #[inline(always)]
    pub fn scalar_cross(s: Scalar, v: Vec2) -> Vec2 {
        Vec2::new(-s * v.y, s * v.x)
    }

    /// Left perpendicular `(−y, x)`.
    #[inline(always)]
    pub fn left_perp(self) -> Vec2 {
        Vec2::new(-self.y, self.x)
    }

    /// Right perpendicular `(y, −x)`.
    #[inline(always)]
    pub fn right_perp(self) -> Vec2 {
        Vec2::new(self.y, -self.x)
    }

    /// Squared length.
    #[inline(always)]
    pub fn length_squared(self) -> Scalar {
        self.dot(self)
    }

    /// Length (deterministic integer square root).
    ///
    /// Below half a metre on each axis it is exact (the floor of the true
    /// length in Q32.32): the components' squares are summed as integers
    /// with all 64 fraction bits. The square of a Q32.32 product keeps only
    /// 32, one ulp at 2⁻¹⁶ m, so the root of it is rough below a
    /// millimetre.
    #[inline]
    pub fn length(self) -> Scalar {
        let (x, y) = (self.x.to_bits(), self.y.to_bits());
        if x.unsigned_abs() < SMALL && y.unsigned_abs() < SMALL {
            return Scalar::from_bits(isqrt_u64(sum_of_squares(x, y)) as i64);
        }
        sqrt(self.length_squared())
    }

    /// Distance to another point.
    #[inline]
    pub fn distance(self, o: Vec2) -> Scalar {
        (self - o).length()
    }

    /// Unit vector in the same direction, or zero for a vector shorter than
    /// [`Vec2::SHORTEST`].
    #[inline]
    pub fn normalize(self) -> Vec2 {
        self.length_and_normalize().1
    }

    /// Vectors shorter than this have no direction: 2⁻²³ m, Box2D v3's
    /// `b2GetLengthAndNormalize` threshold (`FLT_EPSILON`, also 2⁻²³).
    pub const SHORTEST: Scalar = Scalar::from_bits(1 << 9);

    /// Length ([`Vec2::length`]) and unit vector; `(0, ZERO)` for a vector
    /// shorter than [`Vec2::SHORTEST`].
    ///
    /// The direction has about 30 significant bits at every length: a
    /// vector shorter than a quarter metre on both axes is scaled up by a
    /// power of two (exact) until its larger component lies in
    /// [2⁻², 2⁻¹) m, and its exact length there divides it. Without that,
    /// a vector of 15 µm came out 1.37 long.
    #[inline]
    pub fn length_and_normalize(self) -> (Scalar, Vec2) {
        let (x, y) = (self.x.to_bits(), self.y.to_bits());
        let big = x.unsigned_abs().max(y.unsigned_abs());
        if big >= SMALL >> 1 {
            let len = self.length();
            // Divide each component (rather than multiply by 1/len) so that
            // axis-aligned vectors normalise to exact unit vectors where the
            // length is exact (below half a metre; above, the root of the
            // Q32.32 square can be a few ulps short).
            return (len, Vec2::new(self.x / len, self.y / len));
        }
        if big == 0 {
            return (Scalar::ZERO, Vec2::ZERO);
        }
        // 0 < big < 2³⁰, so 1 ≤ k ≤ 30 and big·2ᵏ ∈ [2³⁰, 2³¹).
        let k = big.leading_zeros() - 33;
        let (sx, sy) = (x << k, y << k);
        let scaled = isqrt_u64(sum_of_squares(sx, sy));
        // ⌊⌊√(n·4ᵏ)⌋ / 2ᵏ⌋ = ⌊√n⌋: the same length as `length`.
        let len = Scalar::from_bits((scaled >> k) as i64);
        if len < Vec2::SHORTEST {
            return (Scalar::ZERO, Vec2::ZERO);
        }
        let d = Scalar::from_bits(scaled as i64);
        (
            len,
            Vec2::new(Scalar::from_bits(sx) / d, Scalar::from_bits(sy) / d),
        )
    }

    /// This velocity limited to length `max`, without overflowing on huge
    /// inputs.
    #[inline]
    pub(crate) fn clamp_length(self, max: Scalar) -> Vec2 {
        let (ax, ay) = (self.x.abs(), self.y.abs());
        if ax <= max.shr(1) && ay <= max.shr(1) {
            return self; // |v| ≤ max/√2: fast path, no squares.
        }
        // Scale down before squaring so the square cannot overflow.
        let small = Vec2::new(self.x.shr(10), self.y.shr(10));
        let len = small.length().shl(10);
        if len <= max {
            return self;
        }
        Vec2::new(self.x * max / len, self.y * max / len)
    }

    /// Component-wise absolute value.
    #[inline]
    pub fn abs(self) -> Vec2 {
        Vec2::new(self.x.abs(), self.y.abs())
    }

    /// Component-wise minimum.
    #[inline]
    pub fn min(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x.min(o.x), self.y.min(o.y))
    }

    /// Component-wise maximum.
    #[inline]
    pub fn max(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x.max(o.x), self.y.max(o.y))
    }

    /// Linear interpolation `self + t (o − self)`.
    #[inline]
    pub fn lerp(self, o: Vec2, t: Scalar) -> Vec2 {
        self + (o - self) * t
    }

    /// `self + s·v`.
    #[inline(always)]
    pub fn mul_add(self, s: Scalar, v: Vec2) -> Vec2 {
        Vec2::new(self.x + s * v.x, self.y + s * v.y)
    }

    /// `self − s·v`.
    #[inline(always)]
    pub fn mul_sub(self, s: Scalar, v: Vec2) -> Vec2 {
        Vec2::new(self.x - s * v.x, self.y - s * v.y)
    }
}

impl Add for Vec2 {
    type Output = Vec2;
    #[inline(always)]
    fn add(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x + o.x, self.y + o.y)
    }
}
impl Sub for Vec2 {
    type Output = Vec2;
    #[inline(always)]
    fn sub(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x - o.x, self.y - o.y)
    }
}
impl Neg for Vec2 {
    type Output = Vec2;
    #[inline(always)]
    fn neg(self) -> Vec2 {
        Vec2::new(-self.x, -self.y)
    }
}
impl Mul<Scalar> for Vec2 {
    type Output = Vec2;
    #[inline(always)]
    fn mul(self, s: Scalar) -> Vec2 {
        Vec2::new(self.x * s, self.y * s)
    }
}
impl AddAssign for Vec2 {
    #[inline(always)]
    fn add_assign(&mut self, o: Vec2) {
        *self = *self + o;
    }
}
impl SubAssign for Vec2 {
    #[inline(always)]
    fn sub_assign(&mut self, o: Vec2) {
        *self = *self - o;
    }
}

/// A rotation stored as a unit `(cos, sin)` pair, as in Box2D v3.
///
/// Integration advances the pair by the angular displacement and
/// renormalises, so stepping needs no trigonometry.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, Serialize, Deserialize)]
pub struct Rot {
    /// Cosine of the angle.
    pub c: Scalar,
    /// Sine of the angle.
    pub s: Scalar,
}

impl Default for Rot {
    fn default() -> Rot {
        Rot::IDENTITY
    }
}

impl Rot {
    /// No rotation.
    pub const IDENTITY: Rot = Rot {
        c: Scalar::ONE,
        s: Scalar::ZERO,
    };

    /// From an angle in radians (polynomial sine/cosine, see [`super::sin_cos`]).
    pub fn from_angle(angle: Scalar) -> Rot {
        let (s, c) = super::sin_cos(angle);
        Rot { c, s }.normalize()
    }

    /// The angle in `[−π, π]` (see [`super::atan2`]).
    pub fn angle(self) -> Scalar {
        super::atan2(self.s, self.c)
    }

    /// Rescales to unit length. Near unit length (the case after an
    /// integration step) two Newton steps for 1/√m replace the square root
    /// and division; otherwise it divides by the exact length.
    #[inline]
    pub fn normalize(self) -> Rot {
        let m = self.c * self.c + self.s * self.s;
        let d = m - Scalar::ONE;
        let inv = if d.abs() < Scalar::ratio(1, 8) {
            // y₁ = (3 − m)/2, y₂ = y₁ (3 − m y₁²)/2 ; error ≈ (3/8)³ d⁴.
            let three = Scalar::from_int(3);
            let y1 = (three - m).shr(1);
            (y1 * (three - m * y1 * y1)).shr(1)
        } else {
            let len = sqrt(m);
            if len.is_zero() {
                return Rot::IDENTITY;
            }
            Scalar::ONE / len
        };
        Rot {
            c: self.c * inv,
            s: self.s * inv,
        }
    }

    /// Advances the rotation by a small angle `da` (radians) and renormalises.
    #[inline]
    pub fn integrate(self, da: Scalar) -> Rot {
        Rot {
            c: self.c - da * self.s,
            s: self.s + da * self.c,
        }
        .normalize()
    }

    /// Rotates a vector.
    #[inline(always)]
    pub fn rotate(self, v: Vec2) -> Vec2 {
        Vec2::new(self.c * v.x - self.s * v.y, self.s * v.x + self.c * v.y)
    }

    /// Rotates a vector by the inverse rotation.
    #[inline(always)]
    pub fn inv_rotate(self, v: Vec2) -> Vec2 {
        Vec2::new(self.c * v.x + self.s * v.y, -self.s * v.x + self.c * v.y)
    }

    /// `self · o`.
    #[inline]
    pub fn mul_rot(self, o: Rot) -> Rot {
        Rot {
            c: self.c * o.c - self.s * o.s,
            s: self.s * o.c + self.c * o.s,
        }
    }

    /// `self⁻¹ · o`.
    #[inline]
    pub fn inv_mul(self, o: Rot) -> Rot {
        Rot {
            c: self.c * o.c + self.s * o.s,
            s: self.c * o.s - self.s * o.c,
        }
    }

    /// The rotated x axis.
    #[inline]
    pub fn x_axis(self) -> Vec2 {
        Vec2::new(self.c, self.s)
    }
}

/// A rigid transform: rotation then translation.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash, Serialize, Deserialize)]
pub struct Transform {
    /// Translation.
    pub p: Vec2,
    /// Rotation.
    pub q: Rot,
}

impl Transform {
    /// The identity transform.
    pub const IDENTITY: Transform = Transform {
        p: Vec2::ZERO,
        q: Rot::IDENTITY,
    };

    /// From a translation and rotation.
    pub const fn new(p: Vec2, q: Rot) -> Transform {
        Transform { p, q }
    }

    /// Maps a local point to world space.
    #[inline(always)]
    pub fn apply(self, v: Vec2) -> Vec2 {
        self.q.rotate(v) + self.p
    }

    /// Maps a world point to local space.
    #[inline(always)]
    pub fn inv_apply(self, v: Vec2) -> Vec2 {
        self.q.inv_rotate(v - self.p)
    }

    /// `self⁻¹ · o`: `o` expressed in the frame of `self`.
    #[inline]
    pub fn inv_mul(self, o: Transform) -> Transform {
        Transform {
            q: self.q.inv_mul(o.q),
            p: self.q.inv_rotate(o.p - self.p),
        }
    }
}

/// An axis-aligned bounding box.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash, Serialize, Deserialize)]
pub struct Aabb {
    /// Lower corner.
    pub lower: Vec2,
    /// Upper corner.
    pub upper: Vec2,
}

impl Aabb {
    /// From corners.
    pub const fn new(lower: Vec2, upper: Vec2) -> Aabb {
        Aabb { lower, upper }
    }

    /// Whether two boxes overlap (touching counts).
    #[inline(always)]
    pub fn overlaps(&self, o: &Aabb) -> bool {
        !(o.lower.x > self.upper.x
            || o.lower.y > self.upper.y
            || self.lower.x > o.upper.x
            || self.lower.y > o.upper.y)
    }

    /// Whether `o` lies inside `self`.
    #[inline(always)]
    pub fn contains(&self, o: &Aabb) -> bool {
        self.lower.x <= o.lower.x
            && self.lower.y <= o.lower.y
            && o.upper.x <= self.upper.x
            && o.upper.y <= self.upper.y
    }

    /// Whether a point lies inside.
    #[inline]
    pub fn contains_point(&self, p: Vec2) -> bool {
        self.lower.x <= p.x && p.x <= self.upper.x && self.lower.y <= p.y && p.y <= self.upper.y
    }

    /// Smallest box containing both.
    #[inline(always)]
    pub fn union(&self, o: &Aabb) -> Aabb {
        Aabb::new(self.lower.min(o.lower), self.upper.max(o.upper))
    }

    /// Perimeter (the surface-area heuristic in 2D).
    #[inline(always)]
    pub fn perimeter(&self) -> Scalar {
        let w = self.upper.x - self.lower.x;
        let h = self.upper.y - self.lower.y;
        (w + h).shl(1)
    }

    /// Whether every coordinate is inside the world bounds.
    pub fn within_world(&self) -> bool {
        self.lower.x.abs() <= WORLD_BOUND
            && self.lower.y.abs() <= WORLD_BOUND
            && self.upper.x.abs() <= WORLD_BOUND
            && self.upper.y.abs() <= WORLD_BOUND
    }

    /// Grows the box by `m` on every side.
    #[inline]
    pub fn expand(&self, m: Scalar) -> Aabb {
        let d = Vec2::new(m, m);
        Aabb::new(self.lower - d, self.upper + d)
    }

    /// Centre point.
    #[inline]
    pub fn center(&self) -> Vec2 {
        Vec2::new(
            (self.lower.x + self.upper.x).shr(1),
            (self.lower.y + self.upper.y).shr(1),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fx;

    #[test]
    fn rotation_integration_stays_unit() {
        let mut q = Rot::IDENTITY;
        for _ in 0..10_000 {
            q = q.integrate(Scalar::ratio(1, 100));
        }
        let m = q.c * q.c + q.s * q.s;
        assert!((m - Scalar::ONE).abs() < Scalar::from_bits(64), "{m:?}");
    }

    #[test]
    fn transform_round_trip() {
        let t = Transform::new(
            Vec2::from_ints(3, -2),
            Rot::from_angle(Scalar::ratio(7, 10)),
        );
        let p = Vec2::new(fx(5), Scalar::ratio(-3, 4));
        let back = t.inv_apply(t.apply(p));
        assert!((back - p).length() < Scalar::from_bits(1 << 8));
    }

    #[test]
    fn normalize_gives_unit_length() {
        let v = Vec2::from_ints(3, 4);
        let (len, n) = v.length_and_normalize();
        assert_eq!(len, fx(5));
        assert_eq!(n, Vec2::new(Scalar::ratio(3, 5), Scalar::ratio(4, 5)));
        assert_eq!(Vec2::ZERO.normalize(), Vec2::ZERO);
    }

    /// `|n|² − 1` in units of 2⁻⁶⁴, exactly.
    fn unit_error(n: Vec2) -> i128 {
        let (x, y) = (n.x.to_bits() as i128, n.y.to_bits() as i128);
        x * x + y * y - (1i128 << 64)
    }

    #[test]
    fn short_vectors_normalise_to_unit_length() {
        // 15 µm: before, the direction came from a square of one ulp and
        // was 1.37 long (a chain segment's normal against a circle).
        for (x, y) in [
            (65_000i64, 61_000i64),
            (1 << 9, 0),
            (-700, 900),
            (3, -(1 << 20)),
        ] {
            let v = Vec2::new(Scalar::from_bits(x), Scalar::from_bits(y));
            let (len, n) = v.length_and_normalize();
            assert!(unit_error(n).abs() < 1 << 36, "{v:?} {n:?}");
            let exact = ((x as i128 * x as i128 + y as i128 * y as i128) as u128).isqrt();
            assert_eq!(len.to_bits() as u128, exact, "{v:?}");
        }
        // Below Box2D's threshold there is no direction.
        let tiny = Vec2::new(Scalar::from_bits(300), Scalar::from_bits(-300));
        assert_eq!(tiny.length_and_normalize(), (Scalar::ZERO, Vec2::ZERO));
        assert_eq!(
            Vec2::new(Scalar::ZERO, -Scalar::from_bits(1 << 9)).normalize(),
            Vec2::new(Scalar::ZERO, -Scalar::ONE)
        );
    }

    proptest::proptest! {
        /// At every length from 2⁻²³ m to just under 2¹⁵ m the direction is unit to
        /// 2⁻²⁸ and parallel to the vector, and below half a metre the
        /// length is the exact floor.
        #[test]
        fn normalise_is_unit_and_parallel(
            // Open at both ends: at (−2⁴⁷, −2⁴⁷) the Q32.32 square wraps.
            x in (1i64 - (1 << 47))..(1i64 << 47),
            y in (1i64 - (1 << 47))..(1i64 << 47),
            shift in 0u32..40,
        ) {
            let (x, y) = (x >> shift, y >> shift);
            let v = Vec2::new(Scalar::from_bits(x), Scalar::from_bits(y));
            let (len, n) = v.length_and_normalize();
            let exact = ((x as i128 * x as i128 + y as i128 * y as i128) as u128).isqrt();
            if exact < 1 << 9 {
                proptest::prop_assert_eq!(n, Vec2::ZERO);
                return Ok(());
            }
            proptest::prop_assert!(unit_error(n).abs() < 1 << 36, "{:?} {:?}", v, n);
            // n × v, relative to |v|: the sine of the angle between them.
            let cross = n.x.to_bits() as i128 * y as i128 - n.y.to_bits() as i128 * x as i128;
            proptest::prop_assert!(cross.abs() < (exact as i128) << 4, "{:?} {:?}", v, n);
            if x.unsigned_abs() < SMALL && y.unsigned_abs() < SMALL {
                proptest::prop_assert_eq!(len.to_bits() as u128, exact);
                proptest::prop_assert_eq!(v.length(), len);
            } else {
                let off = (len.to_bits() as i128 - exact as i128).abs();
                proptest::prop_assert!(off <= (exact >> 30).max(1) as i128);
            }
        }
    }
}

//! The simulation scalar: Q32.32 fixed point.
//!
//! `Scalar` wraps [`fixed::types::I32F32`] and defines every operation the
//! simulation uses on raw `i64` bits, so the result is the same on every
//! target and in debug and release builds alike.
//!
//! # Overflow policy
//!
//! `fixed`'s operators panic on overflow when debug assertions are on and wrap
//! otherwise, so a build flag could change the answer. `Scalar` never uses
//! them: `+`, `-`, `*` and `neg` are *wrapping* two's-complement operations in
//! every build, `/` by zero yields zero (the same convention Box2D uses for an
//! inverse mass), and `/` that would overflow wraps. Wrapping is never the
//! intended physics: the world is kept inside [`WORLD_BOUND`] (scene loading
//! and body creation reject anything outside it) and speeds are clamped, so
//! squared lengths of world-space vectors (< 2·(10⁴)² = 2·10⁸) stay far below
//! the Q32.32 range of ±2.1·10⁹. Debug and release builds therefore produce
//! identical bits, and an impossible overflow can never turn into a panic in
//! an authoritative server.
//!
//! Multiplication rounds toward negative infinity (an arithmetic shift of the
//! 128-bit product), identically on every platform.

use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};
use fixed::types::I32F32;
use serde::{Deserialize, Serialize};

/// Largest coordinate magnitude a body or shape may have, in metres.
///
/// Squares of differences of world positions must stay below the Q32.32
/// maximum (≈ 2.1·10⁹); with |x| ≤ 10⁴ the worst case is (2·10⁴)² · 2 = 8·10⁸.
pub const WORLD_BOUND: Scalar = Scalar::from_int(10_000);

/// A Q32.32 fixed-point number. See the module docs for the overflow policy.
///
/// Serialized as its raw bits, an `i64` (in the canonical encoding: 8 bytes,
/// little-endian). `fixed`'s own serde form is a one-field struct around the
/// same `i64`: identical bytes in bincode, but the struct framing made the
/// state hash spend a third of its time in serde plumbing.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Scalar(I32F32);

impl Serialize for Scalar {
    #[inline]
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.to_bits())
    }
}

impl<'de> Deserialize<'de> for Scalar {
    #[inline]
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Scalar, D::Error> {
        i64::deserialize(deserializer).map(Scalar::from_bits)
    }
}

const FRAC_BITS: u32 = 32;

impl Scalar {
    /// Zero.
    pub const ZERO: Scalar = Scalar::from_bits(0);
    /// One.
    pub const ONE: Scalar = Scalar::from_int(1);
    /// One half.
    pub const HALF: Scalar = Scalar::from_bits(1 << 31);
    /// Two.
    pub const TWO: Scalar = Scalar::from_int(2);
    /// The smallest positive value, 2⁻³².
    pub const EPSILON: Scalar = Scalar::from_bits(1);
    /// Largest representable value.
    pub const MAX: Scalar = Scalar::from_bits(i64::MAX);
    /// Smallest representable value.
    pub const MIN: Scalar = Scalar::from_bits(i64::MIN);
    /// π, truncated to Q32.32 (half a unit below π).
    pub const PI: Scalar = Scalar(I32F32::PI);
    /// 2π.
    pub const TAU: Scalar = Scalar(I32F32::TAU);
    /// π/2.
    pub const FRAC_PI_2: Scalar = Scalar(I32F32::FRAC_PI_2);

    /// From the raw Q32.32 bits (value · 2³²).
    #[inline(always)]
    pub const fn from_bits(bits: i64) -> Scalar {
        Scalar(I32F32::from_bits(bits))
    }

    /// The raw Q32.32 bits (value · 2³²).
    #[inline(always)]
    pub const fn to_bits(self) -> i64 {
        self.0.to_bits()
    }

    /// From an integer. Values beyond ±2³¹ wrap.
    #[inline(always)]
    pub const fn from_int(v: i32) -> Scalar {
        Scalar::from_bits((v as i64) << FRAC_BITS)
    }

    /// `num / den` as an exact-as-possible constant (rounded toward zero).
    #[inline]
    pub const fn ratio(num: i64, den: i64) -> Scalar {
        Scalar::from_bits((((num as i128) << FRAC_BITS) / den as i128) as i64)
    }

    /// Thousandths: `milli(5)` is 0.005. Handy for tuning constants.
    #[inline]
    pub const fn milli(v: i64) -> Scalar {
        Scalar::ratio(v, 1000)
    }

    /// The underlying `fixed` value.
    #[inline(always)]
    pub const fn to_fixed(self) -> I32F32 {
        self.0
    }

    /// From a `fixed` value.
    #[inline(always)]
    pub const fn from_fixed(v: I32F32) -> Scalar {
        Scalar(v)
    }

    /// Parses a decimal string exactly (no floating point involved), e.g. "0.6".
    ///
    /// # Errors
    /// When the string is not a decimal number within the Q32.32 range.
    pub fn parse_decimal(s: &str) -> Result<Scalar, fixed::ParseFixedError> {
        s.parse::<I32F32>().map(Scalar)
    }

    /// Converts from `f64`, rounding to nearest; `None` for NaN or out of range.
    ///
    /// Float edge: used only when reading scene files and CLI arguments.
    /// The conversion is exact IEEE-754 → integer rounding, identical on every
    /// target, so it cannot break determinism.
    pub fn from_f64(v: f64) -> Option<Scalar> {
        I32F32::checked_from_num(v).map(Scalar)
    }

    /// Converts to `f64` (exact for |x| < 2²¹). Float edge: printing and drawing only.
    pub fn to_f64(self) -> f64 {
        self.0.to_num::<f64>()
    }

    /// Integer part, rounded toward negative infinity.
    #[inline]
    pub const fn floor_int(self) -> i32 {
        (self.to_bits() >> FRAC_BITS) as i32
    }

    /// Absolute value, saturating: `MIN.abs()` is `MAX`.
    ///
    /// Wrapping would give `MIN.abs() == MIN`, a negative number that passes
    /// every `x.abs() <= bound` check: a crafted snapshot with a rotation of
    /// (0, `MIN`) went through validation that way (found by fuzzing). No
    /// other value changes.
    #[inline(always)]
    pub const fn abs(self) -> Scalar {
        Scalar::from_bits(self.to_bits().saturating_abs())
    }

    /// The smaller of two values.
    #[inline(always)]
    pub fn min(self, o: Scalar) -> Scalar {
        if self < o {
            self
        } else {
            o
        }
    }

    /// The larger of two values.
    #[inline(always)]
    pub fn max(self, o: Scalar) -> Scalar {
        if self > o {
            self
        } else {
            o
        }
    }

    /// Clamps into `[lo, hi]`.
    #[inline(always)]
    pub fn clamp(self, lo: Scalar, hi: Scalar) -> Scalar {
        self.max(lo).min(hi)
    }

    /// -1, 0 or 1.
    #[inline]
    pub const fn signum(self) -> Scalar {
        Scalar::from_int(self.to_bits().signum() as i32)
    }

    /// Whether the value is zero.
    #[inline(always)]
    pub const fn is_zero(self) -> bool {
        self.to_bits() == 0
    }

    /// `1 / self`, zero when `self` is zero. Same bits as `Scalar::ONE / self`.
    #[inline]
    pub fn recip(self) -> Scalar {
        let d = self.to_bits();
        let ud = d.unsigned_abs();
        if ud < 3 {
            // 2⁶⁴ / d does not fit: the general division wraps it.
            return Scalar::ONE / self;
        }
        // ⌊2⁶⁴ / ud⌋ with one 64-bit division instead of a 128-bit one:
        // 2⁶⁴ = (2⁶⁴ − 1) + 1, so the quotient of 2⁶⁴ − 1 is one short
        // exactly when its remainder is ud − 1. The quotient is below 2⁶³
        // (ud ≥ 3), and negating it rounds toward zero like `/` does.
        let mut q = u64::MAX / ud;
        if u64::MAX % ud == ud - 1 {
            q += 1;
        }
        let q = q as i64;
        Scalar::from_bits(if d < 0 { -q } else { q })
    }

    /// Square root; zero for non-positive input. See [`crate::math::sqrt`].
    #[inline]
    pub fn sqrt(self) -> Scalar {
        crate::math::sqrt(self)
    }

    /// `self * self`.
    #[inline(always)]
    pub fn squared(self) -> Scalar {
        self * self
    }

    /// Multiplies by 2ⁿ exactly (wrapping).
    #[inline(always)]
    pub const fn shl(self, n: u32) -> Scalar {
        Scalar::from_bits(self.to_bits().wrapping_shl(n))
    }

    /// Divides by 2ⁿ, rounding toward negative infinity.
    #[inline(always)]
    pub const fn shr(self, n: u32) -> Scalar {
        Scalar::from_bits(self.to_bits() >> n)
    }
}

impl Add for Scalar {
    type Output = Scalar;
    #[inline(always)]
    fn add(self, o: Scalar) -> Scalar {
        Scalar::from_bits(self.to_bits().wrapping_add(o.to_bits()))
    }
}

impl Sub for Scalar {
    type Output = Scalar;
    #[inline(always)]
    fn sub(self, o: Scalar) -> Scalar {
        Scalar::from_bits(self.to_bits().wrapping_sub(o.to_bits()))
    }
}

impl Neg for Scalar {
    type Output = Scalar;
    #[inline(always)]
    fn neg(self) -> Scalar {
        Scalar::from_bits(self.to_bits().wrapping_neg())
    }
}

impl Mul for Scalar {
    type Output = Scalar;
    #[inline(always)]
    fn mul(self, o: Scalar) -> Scalar {
        let p = (self.to_bits() as i128) * (o.to_bits() as i128);
        Scalar::from_bits((p >> FRAC_BITS) as i64)
    }
}

impl Div for Scalar {
    type Output = Scalar;
    /// Division rounding toward zero; zero when dividing by zero; wraps on overflow.
    #[inline]
    fn div(self, o: Scalar) -> Scalar {
        let d = o.to_bits();
        if d == 0 {
            return Scalar::ZERO;
        }
        let n = self.to_bits();
        let (un, ud) = (n.unsigned_abs(), d.unsigned_abs());
        // The quotient's magnitude ⌊un·2³² / ud⌋ with 64-bit divisions
        // when they suffice (the 128-bit one is a library call, ~4× the
        // cost): directly for |self| < 1, in two 32-bit digits for
        // |o| < 1 raw·2³² (the remainder of the first is below ud < 2³²,
        // so the second's dividend fits). The 128-bit form below keeps
        // the low 64 bits of the signed quotient; so do these (the
        // shifted first digit drops what lies above 2⁶⁴).
        let q = if un < 1 << FRAC_BITS {
            (un << FRAC_BITS) / ud
        } else if ud < 1 << FRAC_BITS {
            let (q1, r1) = (un / ud, un % ud);
            (q1 << FRAC_BITS) | ((r1 << FRAC_BITS) / ud)
        } else {
            let n = i128::from(n) << FRAC_BITS;
            return Scalar::from_bits((n / i128::from(d)) as i64);
        };
        let q = q as i64;
        Scalar::from_bits(if (n < 0) != (d < 0) {
            q.wrapping_neg()
        } else {
            q
        })
    }
}

impl AddAssign for Scalar {
    #[inline(always)]
    fn add_assign(&mut self, o: Scalar) {
        *self = *self + o;
    }
}

impl SubAssign for Scalar {
    #[inline(always)]
    fn sub_assign(&mut self, o: Scalar) {
        *self = *self - o;
    }
}

impl MulAssign for Scalar {
    #[inline(always)]
    fn mul_assign(&mut self, o: Scalar) {
        *self = *self * o;
    }
}

impl fmt::Debug for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<i32> for Scalar {
    fn from(v: i32) -> Scalar {
        Scalar::from_int(v)
    }
}

/// Shorthand for building scalars in builders and tests: `fx(3)`.
#[inline(always)]
pub const fn fx(v: i32) -> Scalar {
    Scalar::from_int(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abs_saturates_so_bound_checks_hold() {
        assert_eq!(fx(-3).abs(), fx(3));
        assert_eq!(Scalar::MAX.abs(), Scalar::MAX);
        assert_eq!((Scalar::MIN + Scalar::EPSILON).abs(), Scalar::MAX);
        // Wrapping would give MIN, which is "within" any bound.
        assert_eq!(Scalar::MIN.abs(), Scalar::MAX);
        assert!(Scalar::MIN.abs() > WORLD_BOUND);
    }

    #[test]
    fn arithmetic_is_exact_and_wraps_instead_of_panicking() {
        assert_eq!(fx(3) * fx(4), fx(12));
        assert_eq!(fx(1) / fx(4), Scalar::ratio(1, 4));
        assert_eq!(fx(7) / Scalar::ZERO, Scalar::ZERO);
        // Wrapping, not a panic, even with debug assertions on.
        assert_eq!(Scalar::MAX + Scalar::EPSILON, Scalar::MIN);
        assert_eq!(-Scalar::MIN, Scalar::MIN);
        // Multiplication floors.
        assert_eq!(Scalar::EPSILON * Scalar::HALF, Scalar::ZERO);
        assert_eq!((-Scalar::EPSILON) * Scalar::HALF, -Scalar::EPSILON);
    }

    /// Awkward raw values: small ones, powers of two and their neighbours,
    /// the ends of the range, thirds, and a spread from a fixed LCG (no
    /// randomness needed).
    fn awkward_bits(spread: usize) -> Vec<i64> {
        let mut cases = vec![
            0i64,
            1,
            -1,
            2,
            -2,
            3,
            -3,
            4,
            5,
            7,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ];
        for k in 0..64 {
            let p = 1i64 << k;
            cases.extend([
                p,
                p.wrapping_sub(1),
                p.wrapping_add(1),
                p.wrapping_neg(),
                p.wrapping_neg().wrapping_add(1),
                p.wrapping_neg().wrapping_sub(1),
                p / 3,
                (p / 3).wrapping_mul(2).wrapping_add(1),
            ]);
        }
        let mut lcg = crate::math::lcg(0x9e37_79b9_7f4a_7c15);
        for _ in 0..spread {
            let x = lcg();
            cases.push(x as i64);
            cases.push((x >> (x % 61)) as i64);
        }
        cases
    }

    #[test]
    fn recip_matches_division() {
        for b in awkward_bits(2000) {
            let v = Scalar::from_bits(b);
            assert_eq!(v.recip(), Scalar::ONE / v, "1/{b:#x}");
        }
    }

    /// The 64-bit division paths give the bits of the 128-bit quotient,
    /// wrapped, for every sign and size of either operand.
    #[test]
    fn division_matches_the_wide_quotient() {
        let cases = awkward_bits(300);
        for &a in &cases {
            for &b in &cases {
                let want = if b == 0 {
                    0
                } else {
                    ((i128::from(a) << 32) / i128::from(b)) as i64
                };
                let got = (Scalar::from_bits(a) / Scalar::from_bits(b)).to_bits();
                assert_eq!(got, want, "{a:#x} / {b:#x}");
            }
        }
    }

    #[test]
    fn parse_decimal_is_exact() {
        assert_eq!(Scalar::parse_decimal("0.5").unwrap(), Scalar::HALF);
        assert_eq!(Scalar::parse_decimal("-2").unwrap(), fx(-2));
        assert!(Scalar::parse_decimal("abc").is_err());
    }
}

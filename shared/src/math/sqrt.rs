//! Deterministic square root on Q32.32.
//!
//! `fixed`'s own `sqrt` costs ~65 ns here; this one normalises the argument
//! to `[2⁶², 2⁶⁴)`, takes an 8-bit estimate from a table built at compile
//! time, refines it with two integer Newton steps and corrects the last unit,
//! giving `⌊√m⌋` exactly. Everything is integer arithmetic, so every target
//! gets the same bits.
//!
//! # Error bound
//!
//! For `x ≥ 2⁻³²` the result `r` satisfies `|r − √x| ≤ max(2⁻³², √x · 2⁻³¹)`:
//! the 32-bit integer root carries 31 significant bits, shifted into place.
//! Below 1.0 the result is the correctly floored Q32.32 root (error < 2⁻³²).

use super::Scalar;

/// `⌊√(i·2⁵⁶)⌋` for the top byte `i` of a normalised argument.
const SEED: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = isqrt_slow((i as u64) << 56) as u32;
        i += 1;
    }
    t
};

/// Bit-by-bit integer square root; used only to build the seed table.
const fn isqrt_slow(n: u64) -> u64 {
    let mut op = n;
    let mut res = 0u64;
    let mut one = 1u64 << 62;
    while one > op {
        one >>= 2;
    }
    while one != 0 {
        if op >= res + one {
            op -= res + one;
            res = (res >> 1) + one;
        } else {
            res >>= 1;
        }
        one >>= 2;
    }
    res
}

/// `⌊√m⌋` for `m ∈ [2⁶², 2⁶⁴)`; the result lies in `[2³¹, 2³²)`.
#[inline]
fn isqrt_normalised(m: u64) -> u64 {
    debug_assert!(m >> 62 != 0);
    // Seed from the top byte, rounded up so Newton approaches from above.
    let mut y = SEED[(m >> 56) as usize] as u64 + (1 << 24);
    y = (y + m / y) >> 1;
    y = (y + m / y) >> 1;
    y = (y + m / y) >> 1;
    // Newton from above lands on ⌊√m⌋ or one above it; fix the last unit.
    y = y.min(u32::MAX as u64);
    while y * y > m {
        y -= 1;
    }
    while y < u32::MAX as u64 && (y + 1) * (y + 1) <= m {
        y += 1;
    }
    y
}

/// `⌊√n⌋` of an integer (zero for zero).
#[inline]
pub(crate) fn isqrt_u64(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    // ⌊⌊√(n·4ᵏ)⌋ / 2ᵏ⌋ = ⌊√n⌋.
    let shift = n.leading_zeros() & !1;
    isqrt_normalised(n << shift) >> (shift / 2)
}

/// Square root of a Q32.32 value; zero for zero or negative input.
#[inline]
pub fn sqrt(x: Scalar) -> Scalar {
    let r = x.to_bits();
    if r <= 0 {
        return Scalar::ZERO;
    }
    let r = r as u64;
    // Even shift so that the root shifts by a whole number of bits.
    let shift = r.leading_zeros() & !1;
    let m = r << shift;
    let s = isqrt_normalised(m);
    // √(r·2³²) = √m · 2^(16 − shift/2)
    let half = shift / 2;
    let bits = if half <= 16 {
        s << (16 - half)
    } else {
        s >> (half - 16)
    };
    Scalar::from_bits(bits as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The next value of a xorshift64 sequence (the tests' inputs).
    fn xorshift(x: &mut u64) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
    }

    #[test]
    fn integer_root_is_exact_floor() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            xorshift(&mut x);
            let m = x | (1 << 62);
            let s = isqrt_normalised(m);
            assert!(s * s <= m, "{m}");
            assert!((s as u128 + 1) * (s as u128 + 1) > m as u128, "{m}");
        }
        for m in [
            1u64 << 62,
            u64::MAX,
            (1 << 62) + 1,
            (u32::MAX as u64).pow(2),
        ] {
            let s = isqrt_normalised(m);
            assert_eq!(s, m.isqrt());
        }
    }

    #[test]
    fn integer_root_of_any_u64_is_exact_floor() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for i in 0..100_000 {
            xorshift(&mut x);
            let n = x >> (i % 64);
            assert_eq!(isqrt_u64(n), n.isqrt(), "{n}");
        }
        for n in [
            0u64,
            1,
            2,
            3,
            4,
            15,
            16,
            17,
            u64::MAX,
            1 << 63,
            (1 << 62) - 1,
        ] {
            assert_eq!(isqrt_u64(n), n.isqrt(), "{n}");
        }
    }

    #[test]
    fn sqrt_matches_reference_within_bound() {
        // Reference: exact integer root of the 96-bit value r·2³², computed in u128.
        let mut x: u64 = 12345;
        for i in 0..50_000 {
            xorshift(&mut x);
            let bits = (x >> (i % 40)) as i64 & i64::MAX;
            if bits == 0 {
                continue;
            }
            let got = sqrt(Scalar::from_bits(bits)).to_bits() as u128;
            let exact = ((bits as u128) << 32).isqrt();
            let tol = (exact >> 31).max(1);
            assert!(
                got <= exact && exact - got <= tol,
                "bits={bits} got={got} exact={exact}"
            );
        }
        assert_eq!(sqrt(Scalar::from_int(4)), Scalar::from_int(2));
        assert_eq!(sqrt(Scalar::from_int(-4)), Scalar::ZERO);
        assert_eq!(sqrt(Scalar::ratio(1, 4)), Scalar::HALF);
        assert_eq!(sqrt(Scalar::from_int(1_000_000)), Scalar::from_int(1000));
    }
}

//! Deterministic square root on Q32.32.
//!
//! `fixed`'s own `sqrt` costs ~65 ns here; this one normalises the argument
//! to `[2⁶², 2⁶⁴)`, takes an estimate from above out of a table built at
//! compile time (indexed by the argument's top ten bits), refines it with
//! two integer Newton steps and corrects the last unit, giving `⌊√m⌋`
//! exactly. Everything is integer arithmetic, so every target gets the same
//! bits.
//!
//! # Error bound
//!
//! For `x ≥ 2⁻³²` the result `r` satisfies `|r − √x| ≤ max(2⁻³², √x · 2⁻³¹)`:
//! the 32-bit integer root carries 31 significant bits, shifted into place.
//! Below 1.0 the result is the correctly floored Q32.32 root (error < 2⁻³²).

use super::Scalar;

/// Bits of a normalised argument that index [`SEED`]: its top ten.
const SEED_BITS: u32 = 10;

/// For each top-ten-bits value `j` of a normalised argument (`j ≥ 256`, at
/// index `j − 256`), `⌊√((j+1)·2⁵⁴)⌋`: one below a bound from above on the
/// root of every argument with those bits (`u32::MAX` for the last, whose
/// bound `2³²` does not fit). Within one entry the root varies by at most
/// 2²² of its at least 2³¹ (2⁻⁹), so two Newton steps from above leave at
/// most one unit over `⌊√m⌋` (2⁻⁹ → 2⁻¹⁹ → 2⁻³⁹ of 2³²; the test
/// `every_seed_needs_two_steps` checks each entry's worst argument). The
/// eight-bit table before (2⁻⁷ above) came within a unit after two steps
/// too, but only just (0.98 at worst), and three were taken: ten bits keep
/// a wide margin (0.004) with two, one 64-bit division fewer.
const SEED: [u32; 768] = {
    let mut t = [0u32; 768];
    let mut i = 0;
    while i < 768 {
        let j = (i + 256) as u64;
        t[i] = if j == 1023 {
            u32::MAX
        } else {
            isqrt_slow((j + 1) << (64 - SEED_BITS)) as u32
        };
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
    // From above: one over the table's floor (see `SEED`).
    let mut y = SEED[(m >> (64 - SEED_BITS)) as usize - 256] as u64 + 1;
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

    /// The worst arguments of each seed entry (the lowest, whose root is
    /// furthest below the seed, and the highest): the seed is above the
    /// root, two Newton steps leave at most one unit to correct, and the
    /// result is exact.
    #[test]
    fn every_seed_needs_two_steps() {
        for j in 256u64..1024 {
            let lo = j << (64 - SEED_BITS);
            let hi = lo | ((1 << (64 - SEED_BITS)) - 1);
            for m in [lo, lo + 1, hi] {
                let mut y = u64::from(SEED[j as usize - 256]) + 1;
                assert!(u128::from(y) * u128::from(y) > u128::from(m), "{m}");
                y = (y + m / y) >> 1;
                y = (y + m / y) >> 1;
                let exact = m.isqrt();
                assert!(y >= exact && y - exact <= 1, "{m}: {y} against {exact}");
                assert_eq!(isqrt_normalised(m), exact, "{m}");
            }
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

//! The lane arithmetic defined in scalar code: the Q32.32 product and the
//! packed-constant product, bit for bit. Every backend computes exactly
//! these (the tests compare them lane by lane).

/// The lanes' product: ⌊a·b / 2³²⌋ mod 2⁶⁴, the bits of `Scalar * Scalar`
/// for every operand below 2³¹ − ½ in magnitude (far beyond anything the
/// world's bounds let the solver see), from four signed 32 × 32 → 64-bit
/// partial products (`vpmuldq`, one instruction each).
///
/// Each operand is split into signed halves, `a = aₕ·2³² + aₗ` with `aₗ`
/// the low 32 bits read as signed (what `vpmuldq` reads) and `aₕ =
/// (a + 2³¹) >> 32`. Then `a·b = aₕbₕ·2⁶⁴ + (aₕbₗ + aₗbₕ)·2³² + aₗbₗ`, and
/// shifted down by 32 (a floor) and taken mod 2⁶⁴ that is
/// `(aₕbₕ << 32) + aₕbₗ + aₗbₕ + (aₗbₗ >> 32)`, with no sign corrections.
///
/// For an operand of 2³¹ − ½ or more, `aₕ` would be 2³¹, which the wrapping
/// `+ 2³¹` makes −2³¹: the result is then the exact product minus `b << 32`
/// (minus `a << 32` for `b`). That is this function's definition there,
/// and every implementation computes it, so the bits are the same on every
/// target all the same.
#[cfg_attr(not(test), allow(dead_code))] // the reference; the backends inline it
#[inline(always)]
pub(crate) fn mul_bits(a: i64, b: i64) -> i64 {
    let (ah, bh) = (split_high(a), split_high(b));
    let (al, bl) = (i64::from(a as i32), i64::from(b as i32));
    // |each partial product| ≤ 2⁶², so none overflows.
    ((ah * bh) << 32)
        .wrapping_add(ah * bl)
        .wrapping_add(al * bh)
        .wrapping_add((al * bl) >> 32)
}

/// The first operand value whose high half [`mul_bits`] cannot hold
/// (2⁶³ − 2³¹, that is 2³¹ − ½ in Q32.32).
#[cfg_attr(
    all(not(test), target_arch = "x86_64", target_feature = "avx2"),
    allow(dead_code)
)]
pub(crate) const CORNER: i64 = i64::MAX - (1 << 31) + 1;

/// A per-step constant packed for the lanes' cheaper product: the value
/// `m · 2ᵏ` (raw Q32.32 units) as `k << 58 | m` with `m` a signed 32-bit
/// mantissa, `|m| ≤ 2³⁰`, and `0 ≤ k ≤ 34` the fewest low bits dropped for
/// that, by an arithmetic shift (a floor). Values below ¼ in magnitude keep
/// every bit (`k = 0`); larger ones keep 30 significant bits, far finer
/// than an `f32`'s 24. Since `|m| < 2³¹`, negating the mantissa negates
/// the value exactly. This one-word form is the definition the tests
/// check against; the solver stores the two parts apart ([`pack_parts`]).
#[cfg(test)]
pub(crate) fn pack_bits(c: i64) -> i64 {
    let (m, k) = pack_parts(c);
    (i64::from(k) << 58) | i64::from(m as u32)
}

/// [`pack_bits`]' two parts, the mantissa `m` and the shift `k`, as a
/// [`super::Coef`] stores them (apart: five bytes a lane).
#[inline(always)]
pub(crate) fn pack_parts(c: i64) -> (i32, u8) {
    let k = (64 - c.unsigned_abs().leading_zeros()).saturating_sub(30);
    ((c >> k) as i32, k as u8)
}

/// The shift of a packed constant.
#[cfg(test)]
pub(super) fn coef_shift(p: i64) -> u32 {
    ((p as u64) >> 58) as u32
}

/// The value a packed constant stands for, `m · 2ᵏ`.
#[cfg(test)]
pub(crate) fn unpack_bits(p: i64) -> i64 {
    i64::from(p as i32) << coef_shift(p)
}

/// The lanes' product of a variable `x` and a packed constant `p`
/// ([`pack_bits`]), from two signed 32 × 32 → 64 products: with `x` split
/// as in [`mul_bits`], `x·m = xₕm·2³² + xₗm`, and the product is
/// `(xₕm + (xₗm >> 32)) << k` (an arithmetic shift: a floor). For `k = 0`
/// (constants below ¼) that is `Scalar`'s product by the constant, for `x`
/// below [`CORNER`]; otherwise it is `⌊x·m / 2³²⌋·2ᵏ`, below the exact
/// product of `x` and `m·2ᵏ` by less than 2ᵏ raw units (a constant of 1
/// costs at most 8 units, 2·10⁻⁹; the flooring happens before the shift,
/// which is what saves two products and two shifts).
#[cfg(test)]
pub(crate) fn mul_coef_bits(x: i64, p: i64) -> i64 {
    mul_coef_parts(x, i64::from(p as i32), coef_shift(p))
}

/// [`mul_coef_bits`] of the constant's parts ([`pack_parts`]).
#[cfg_attr(
    all(not(test), target_arch = "x86_64", target_feature = "avx2"),
    allow(dead_code)
)]
#[inline(always)]
pub(crate) fn mul_coef_parts(x: i64, m: i64, k: u32) -> i64 {
    let (xh, xl) = (split_high(x), i64::from(x as i32));
    // |xₕm|, |xₗm| ≤ 2⁶²: neither product overflows, nor their sum.
    ((xh * m) + ((xl * m) >> 32)) << k
}

/// The high half of the signed split of [`mul_bits`]: `(a + 2³¹) >> 32`,
/// wrapping, as a signed 32-bit value.
#[inline(always)]
fn split_high(a: i64) -> i64 {
    i64::from((a.wrapping_add(1 << 31) >> 32) as i32)
}

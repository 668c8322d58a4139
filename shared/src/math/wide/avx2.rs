//! The AVX2 backend: four lanes in a 256-bit register.

use safe_arch::*;

pub(crate) const LANES: usize = 4;
pub(crate) type V = m256i;
pub(crate) type M = m256i;

#[inline(always)]
pub(crate) fn zero() -> V {
    zeroed_m256i()
}
#[inline(always)]
pub(crate) fn splat(x: i64) -> V {
    set_splat_i64_m256i(x)
}
#[inline(always)]
pub(crate) fn from_fn(f: impl Fn(usize) -> i64) -> V {
    set_i64_m256i(f(3), f(2), f(1), f(0))
}
#[inline(always)]
pub(crate) fn add(a: V, b: V) -> V {
    add_i64_m256i(a, b)
}
#[inline(always)]
pub(crate) fn sub(a: V, b: V) -> V {
    sub_i64_m256i(a, b)
}
/// [`super::bits::mul_bits`] in four lanes.
#[inline(always)]
pub(crate) fn mul(a: V, b: V) -> V {
    // `vpmuldq` reads the low 32 bits of each lane as signed: the low
    // halves as they are, the high halves shifted down.
    let half = set_splat_i64_m256i(1 << 31);
    let ah = shr_imm_u64_m256i::<32>(add_i64_m256i(a, half));
    let bh = shr_imm_u64_m256i::<32>(add_i64_m256i(b, half));
    let hh = shl_imm_u64_m256i::<32>(mul_i64_low_bits_m256i(ah, bh));
    let mid = add_i64_m256i(mul_i64_low_bits_m256i(ah, b), mul_i64_low_bits_m256i(a, bh));
    // The arithmetic shift of `aₗbₗ` (AVX2 has none for 64 bits):
    // flipping the sign bit adds 2⁶³, a logical shift then floors,
    // and 2³¹ comes off again.
    let ll = mul_i64_low_bits_m256i(a, b);
    let ll = shr_imm_u64_m256i::<32>(bitxor_m256i(ll, set_splat_i64_m256i(i64::MIN)));
    add_i64_m256i(add_i64_m256i(hh, mid), sub_i64_m256i(ll, half))
}
/// [`super::bits::mul_coef_parts`] in four lanes (`m` in each lane's low 32
/// bits, what `vpmuldq` reads). AVX2 has no 64-bit arithmetic shift:
/// `y >> 32 = ((y ^ 2⁶³) >>ₗ 32) − 2³¹`.
#[inline(always)]
pub(crate) fn mul_coef(x: V, m: V, k: V) -> V {
    let xh = shr_imm_u64_m256i::<32>(add_i64_m256i(x, set_splat_i64_m256i(1 << 31)));
    let low = mul_i64_low_bits_m256i(x, m);
    let low = shr_imm_u64_m256i::<32>(bitxor_m256i(low, set_splat_i64_m256i(i64::MIN)));
    let t = add_i64_m256i(mul_i64_low_bits_m256i(xh, m), low);
    let t = sub_i64_m256i(t, set_splat_i64_m256i(1 << 31));
    shl_each_u64_m256i(t, k)
}
/// A stored constant's parts into lanes, each widened by one instruction
/// (the mantissas sign-extended, the shift bytes zero-extended).
#[inline(always)]
pub(crate) fn coef_load(m: &[i32; LANES], k: &[u8; LANES]) -> (V, V) {
    let k = m128i::from([i32::from_le_bytes(*k), 0, 0, 0]);
    (
        convert_to_i64_m256i_from_i32_m128i(m128i::from(*m)),
        // `vpmovzxbq` (safe_arch names it after `i16`).
        convert_to_i16_m256i_from_lower4_u8_m128i(k),
    )
}
#[inline(always)]
pub(crate) fn mul_u32(a: V, k: u32) -> V {
    // (aₕ·2³² + aₗ)·k mod 2⁶⁴ = (aₕk << 32) + aₗk.
    let k = set_splat_i64_m256i(i64::from(k));
    let hi = mul_u64_low_bits_m256i(shr_imm_u64_m256i::<32>(a), k);
    add_i64_m256i(shl_imm_u64_m256i::<32>(hi), mul_u64_low_bits_m256i(a, k))
}
#[inline(always)]
pub(crate) fn max(a: V, b: V) -> V {
    select(gt(a, b), a, b)
}
#[inline(always)]
pub(crate) fn min(a: V, b: V) -> V {
    select(gt(b, a), a, b)
}
#[inline(always)]
pub(crate) fn gt(a: V, b: V) -> M {
    cmp_gt_mask_i64_m256i(a, b)
}
#[inline(always)]
pub(crate) fn eq(a: V, b: V) -> M {
    cmp_eq_mask_i64_m256i(a, b)
}
#[inline(always)]
pub(crate) fn select(m: M, a: V, b: V) -> V {
    blend_varying_i8_m256i(b, a, m)
}
#[inline(always)]
pub(crate) fn and(a: M, b: M) -> M {
    bitand_m256i(a, b)
}
#[inline(always)]
pub(crate) fn or(a: M, b: M) -> M {
    bitor_m256i(a, b)
}
#[inline(always)]
pub(crate) fn mask_from_fn(f: impl Fn(usize) -> bool) -> M {
    from_fn(|i| -i64::from(f(i)))
}
#[inline(always)]
pub(crate) fn not(a: M) -> M {
    bitxor_m256i(a, set_splat_i64_m256i(-1))
}
#[inline(always)]
pub(crate) fn any(a: M) -> bool {
    move_mask_i8_m256i(a) != 0
}
#[inline(always)]
pub(crate) fn to_array(v: V) -> [i64; LANES] {
    v.into()
}

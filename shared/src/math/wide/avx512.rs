//! The AVX-512F backend: eight lanes in a 512-bit register.

use core::arch::x86_64::{_MM_CMPINT_EQ, _MM_CMPINT_NLE};
use safe_arch::*;

/// Registers per value: one, so eight lanes. The backend is written for
/// any count (each operation loops over the registers), and a bundle holds
/// [`LANES`] contacts, so more registers would make wider bundles.
const REGS: usize = 1;
pub(crate) const LANES: usize = 8 * REGS;
pub(crate) type V = [m512i; REGS];
pub(crate) type M = [mmask8; REGS];

#[inline(always)]
fn each(f: impl Fn(usize) -> m512i) -> V {
    core::array::from_fn(f)
}
#[inline(always)]
fn each_mask(f: impl Fn(usize) -> mmask8) -> M {
    core::array::from_fn(f)
}

#[inline(always)]
pub(crate) fn zero() -> V {
    each(|_| zeroed_m512i())
}
#[inline(always)]
pub(crate) fn splat(x: i64) -> V {
    each(|_| set_splat_i64_m512i(x))
}
#[inline(always)]
pub(crate) fn from_fn(f: impl Fn(usize) -> i64) -> V {
    each(|r| {
        let o = 8 * r;
        let lo = set_i64_m256i(f(o + 3), f(o + 2), f(o + 1), f(o));
        let hi = set_i64_m256i(f(o + 7), f(o + 6), f(o + 5), f(o + 4));
        insert_m256i_to_m512i::<1>(cast_m256i_to_m512i(lo), hi)
    })
}
#[inline(always)]
pub(crate) fn add(a: V, b: V) -> V {
    each(|r| add_i64_m512i(a[r], b[r]))
}
#[inline(always)]
pub(crate) fn sub(a: V, b: V) -> V {
    each(|r| sub_i64_m512i(a[r], b[r]))
}
/// [`super::bits::mul_bits`] in eight lanes.
#[inline(always)]
fn mul1(a: m512i, b: m512i) -> m512i {
    // `vpmuldq` reads the low 32 bits of each lane as signed: the low
    // halves as they are, the high halves shifted down.
    let half = set_splat_i64_m512i(1 << 31);
    let ah = shr_all_u64_m512i(add_i64_m512i(a, half), 32);
    let bh = shr_all_u64_m512i(add_i64_m512i(b, half), 32);
    let hh = shl_all_u64_m512i(mul_i32_wide_m512i(ah, bh), 32);
    let mid = add_i64_m512i(mul_i32_wide_m512i(ah, b), mul_i32_wide_m512i(a, bh));
    let ll = shr_all_i64_m512i(mul_i32_wide_m512i(a, b), 32);
    add_i64_m512i(add_i64_m512i(hh, mid), ll)
}
#[inline(always)]
pub(crate) fn mul(a: V, b: V) -> V {
    each(|r| mul1(a[r], b[r]))
}
/// [`super::bits::mul_coef_parts`] in eight lanes: `m` in each lane's low
/// 32 bits (what `vpmuldq` reads), `k` the whole lane.
#[inline(always)]
fn mul_coef1(x: m512i, m: m512i, k: m512i) -> m512i {
    let xh = shr_all_u64_m512i(add_i64_m512i(x, set_splat_i64_m512i(1 << 31)), 32);
    let t = add_i64_m512i(
        mul_i32_wide_m512i(xh, m),
        shr_all_i64_m512i(mul_i32_wide_m512i(x, m), 32),
    );
    shl_each_u64_m512i(t, k)
}
#[inline(always)]
pub(crate) fn mul_coef(x: V, m: V, k: V) -> V {
    each(|r| mul_coef1(x[r], m[r], k[r]))
}
/// A stored constant's parts into lanes: each mantissa into both halves of
/// its lane (one permute; the product reads the low half, and the lane is
/// zero exactly when the mantissa is), each shift byte into its lane (one
/// broadcast, a shift per lane, a mask).
#[inline(always)]
pub(crate) fn coef_load(m: &[i32; LANES], k: &[u8; LANES]) -> (V, V) {
    let (ms, ks) = (m.as_chunks::<8>().0, k.as_chunks::<8>().0);
    let spread = m512i::from([0_i32, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]);
    let bytes = m512i::from([0_i64, 8, 16, 24, 32, 40, 48, 56]);
    let low = set_splat_i64_m512i(0xFF);
    (
        each(|r| permute_i32_m512i(spread, cast_m256i_to_m512i(m256i::from(ms[r])))),
        each(|r| {
            let all = set_splat_i64_m512i(i64::from_le_bytes(ks[r]));
            bitand_m512i(shr_each_u64_m512i(all, bytes), low)
        }),
    )
}
#[inline(always)]
pub(crate) fn mul_u32(a: V, k: u32) -> V {
    // (aₕ·2³² + aₗ)·k mod 2⁶⁴ = (aₕk << 32) + aₗk.
    let k = set_splat_i64_m512i(i64::from(k));
    each(|r| {
        let hi = mul_u32_wide_m512i(shr_all_u64_m512i(a[r], 32), k);
        add_i64_m512i(shl_all_u64_m512i(hi, 32), mul_u32_wide_m512i(a[r], k))
    })
}
#[inline(always)]
pub(crate) fn max(a: V, b: V) -> V {
    each(|r| max_i64_m512i(a[r], b[r]))
}
#[inline(always)]
pub(crate) fn min(a: V, b: V) -> V {
    each(|r| min_i64_m512i(a[r], b[r]))
}
#[inline(always)]
pub(crate) fn gt(a: V, b: V) -> M {
    each_mask(|r| cmp_op_mask_i64::<_MM_CMPINT_NLE>(a[r], b[r]))
}
#[inline(always)]
pub(crate) fn eq(a: V, b: V) -> M {
    each_mask(|r| cmp_op_mask_i64::<_MM_CMPINT_EQ>(a[r], b[r]))
}
#[inline(always)]
pub(crate) fn select(m: M, a: V, b: V) -> V {
    // A bitwise blend: the float view changes no bit.
    each(|r| {
        cast_to_m512i_from_m512d(blend_varying_m512d(
            cast_to_m512d_from_m512i(b[r]),
            cast_to_m512d_from_m512i(a[r]),
            m[r],
        ))
    })
}
#[inline(always)]
pub(crate) fn and(a: M, b: M) -> M {
    each_mask(|r| a[r] & b[r])
}
#[inline(always)]
pub(crate) fn or(a: M, b: M) -> M {
    each_mask(|r| a[r] | b[r])
}
#[inline(always)]
pub(crate) fn not(a: M) -> M {
    each_mask(|r| !a[r])
}
#[inline(always)]
pub(crate) fn any(a: M) -> bool {
    a.iter().any(|&m| m != 0)
}
#[inline(always)]
pub(crate) fn mask_from_fn(f: impl Fn(usize) -> bool) -> M {
    each_mask(|r| (0..8).fold(0, |m, i| m | (u8::from(f(8 * r + i)) << i)))
}
#[inline(always)]
pub(crate) fn to_array(v: V) -> [i64; LANES] {
    let mut out = [0; LANES];
    for (r, v) in v.iter().enumerate() {
        let a: [i64; 8] = (*v).into();
        out[8 * r..8 * r + 8].copy_from_slice(&a);
    }
    out
}

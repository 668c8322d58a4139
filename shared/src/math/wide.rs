//! Lanes of Q32.32: [`LANES`] independent [`Scalar`]s operated on together.
//!
//! The contact solver works on bundles of contacts that share no moving
//! body, several at a time, as Box2D v3's graph-coloured solver does with
//! four or eight `f32` lanes. Every operation here works lane by lane and
//! gives each lane exactly the bits of the `Scalar` operation: sums and
//! differences wrap, products round toward negative infinity, comparisons
//! are signed. Integer arithmetic has one answer whatever instructions
//! compute it, so the lane count and the instruction set change the speed,
//! never a bit (the cross-platform check compares the vector build on
//! x86_64 with the one-lane builds of the other targets).
//!
//! Three implementations, chosen when the crate is compiled (by the target
//! CPU the build is for; see `.cargo/config.toml`):
//! - **x86_64 with AVX-512F**: eight lanes in a 512-bit register;
//! - **x86_64 with AVX2**: four lanes in a 256-bit register;
//! - **anything else**: one lane, plain scalar code.
//!
//! The vector forms go through `safe_arch`'s safe wrappers of the
//! intrinsics (this crate has no `unsafe`).
//!
//! (Plain loops over `[i64; 4]` left to LLVM's vectorizer were slower than
//! scalar code: it vectorized across the sums of impulses rather than
//! across lanes.) A Q32.32 product has no vector instruction (it needs the
//! high half of a 64 × 64 → 128-bit product): it is built from four
//! 32 × 32 → 64 partial products, see [`mul_bits`].

use super::Scalar;
use core::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

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
/// the value exactly; `k` sits in the top six bits so that one shift
/// extracts it.
#[inline(always)]
pub(crate) fn pack_bits(c: i64) -> i64 {
    let k = (64 - c.unsigned_abs().leading_zeros()).saturating_sub(30);
    (i64::from(k) << 58) | ((c >> k) & 0xFFFF_FFFF)
}

/// The shift of a packed constant.
#[inline(always)]
fn coef_shift(p: i64) -> u32 {
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
#[cfg_attr(
    all(not(test), target_arch = "x86_64", target_feature = "avx2"),
    allow(dead_code)
)]
#[inline(always)]
pub(crate) fn mul_coef_bits(x: i64, p: i64) -> i64 {
    let m = i64::from(p as i32);
    let (xh, xl) = (split_high(x), i64::from(x as i32));
    // |xₕm|, |xₗm| ≤ 2⁶²: neither product overflows, nor their sum.
    ((xh * m) + ((xl * m) >> 32)) << coef_shift(p)
}

/// The high half of the signed split of [`mul_bits`]: `(a + 2³¹) >> 32`,
/// wrapping, as a signed 32-bit value.
#[inline(always)]
fn split_high(a: i64) -> i64 {
    i64::from((a.wrapping_add(1 << 31) >> 32) as i32)
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
mod imp {
    use core::arch::x86_64::{_MM_CMPINT_EQ, _MM_CMPINT_NLE};
    use safe_arch::*;

    /// Registers per value: two, so that every solver step works on two
    /// independent groups of eight lanes and their latencies overlap.
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
    /// [`super::mul_bits`] in eight lanes.
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
    /// [`super::mul_coef_bits`] in eight lanes.
    #[inline(always)]
    fn mul_coef1(x: m512i, p: m512i) -> m512i {
        let xh = shr_all_u64_m512i(add_i64_m512i(x, set_splat_i64_m512i(1 << 31)), 32);
        let t = add_i64_m512i(
            mul_i32_wide_m512i(xh, p),
            shr_all_i64_m512i(mul_i32_wide_m512i(x, p), 32),
        );
        // The shift, below 64 as six bits are.
        shl_each_u64_m512i(t, shr_all_u64_m512i(p, 58))
    }
    #[inline(always)]
    pub(crate) fn mul_coef(x: V, p: V) -> V {
        each(|r| mul_coef1(x[r], p[r]))
    }
    #[inline(always)]
    pub(crate) fn neg_mantissa(p: V) -> V {
        let low = set_splat_i64_m512i(0xFFFF_FFFF);
        each(|r| {
            let neg = sub_i64_m512i(zeroed_m512i(), p[r]);
            bitor_m512i(bitandnot_m512i(low, p[r]), bitand_m512i(neg, low))
        })
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
    pub(crate) fn lanes_mut(v: &mut V) -> &mut [i64; LANES] {
        bytemuck::cast_mut(v)
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
}

#[cfg(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    not(target_feature = "avx512f")
))]
mod imp {
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
    /// [`super::mul_bits`] in four lanes.
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
    /// [`super::mul_coef_bits`] in four lanes. AVX2 has no 64-bit
    /// arithmetic shift: `y >> 32 = ((y ^ 2⁶³) >>ₗ 32) − 2³¹`.
    #[inline(always)]
    pub(crate) fn mul_coef(x: V, p: V) -> V {
        let xh = shr_imm_u64_m256i::<32>(add_i64_m256i(x, set_splat_i64_m256i(1 << 31)));
        let low = mul_i64_low_bits_m256i(x, p);
        let low = shr_imm_u64_m256i::<32>(bitxor_m256i(low, set_splat_i64_m256i(i64::MIN)));
        let t = add_i64_m256i(mul_i64_low_bits_m256i(xh, p), low);
        let t = sub_i64_m256i(t, set_splat_i64_m256i(1 << 31));
        // The shift, below 64 as six bits are.
        shl_each_u64_m256i(t, shr_imm_u64_m256i::<58>(p))
    }
    #[inline(always)]
    pub(crate) fn neg_mantissa(p: V) -> V {
        let low = set_splat_i64_m256i(0xFFFF_FFFF);
        let neg = sub_i64_m256i(zeroed_m256i(), p);
        bitor_m256i(bitandnot_m256i(low, p), bitand_m256i(neg, low))
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
    #[inline(always)]
    pub(crate) fn lanes_mut(v: &mut V) -> &mut [i64; LANES] {
        bytemuck::cast_mut(v)
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
mod imp {

    pub(crate) const LANES: usize = 1;
    pub(crate) type V = i64;
    pub(crate) type M = bool;

    #[inline(always)]
    pub(crate) fn zero() -> V {
        0
    }
    #[inline(always)]
    pub(crate) fn splat(x: i64) -> V {
        x
    }
    #[inline(always)]
    pub(crate) fn from_fn(f: impl Fn(usize) -> i64) -> V {
        f(0)
    }
    #[inline(always)]
    pub(crate) fn add(a: V, b: V) -> V {
        a.wrapping_add(b)
    }
    #[inline(always)]
    pub(crate) fn sub(a: V, b: V) -> V {
        a.wrapping_sub(b)
    }
    /// [`super::mul_bits`] from one 64 × 64 → 128-bit product (cheaper
    /// than four partial products where there is no vector unit to use).
    #[inline(always)]
    pub(crate) fn mul(a: V, b: V) -> V {
        let r = ((i128::from(a) * i128::from(b)) >> 32) as i64;
        // At or past the corner, adding 2³¹ overflows.
        if a.checked_add(1 << 31).is_none() || b.checked_add(1 << 31).is_none() {
            return corner(a, b, r);
        }
        r
    }

    /// [`mul`] at the corner: never reached by a world inside its bounds.
    #[cold]
    #[inline(never)]
    fn corner(a: V, b: V, mut r: V) -> V {
        if a >= super::CORNER {
            r = r.wrapping_sub(b << 32);
        }
        if b >= super::CORNER {
            r = r.wrapping_sub(a << 32);
        }
        r
    }
    #[inline(always)]
    pub(crate) fn mul_coef(x: V, p: V) -> V {
        super::mul_coef_bits(x, p)
    }
    #[inline(always)]
    pub(crate) fn neg_mantissa(p: V) -> V {
        (p & !0xFFFF_FFFF) | (p.wrapping_neg() & 0xFFFF_FFFF)
    }
    #[inline(always)]
    pub(crate) fn mul_u32(a: V, k: u32) -> V {
        a.wrapping_mul(i64::from(k))
    }
    #[inline(always)]
    pub(crate) fn max(a: V, b: V) -> V {
        if a > b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    pub(crate) fn min(a: V, b: V) -> V {
        if a < b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    pub(crate) fn gt(a: V, b: V) -> M {
        a > b
    }
    #[inline(always)]
    pub(crate) fn eq(a: V, b: V) -> M {
        a == b
    }
    #[inline(always)]
    pub(crate) fn select(m: M, a: V, b: V) -> V {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    pub(crate) fn and(a: M, b: M) -> M {
        a & b
    }
    #[inline(always)]
    pub(crate) fn or(a: M, b: M) -> M {
        a | b
    }
    #[inline(always)]
    pub(crate) fn not(a: M) -> M {
        !a
    }
    #[inline(always)]
    pub(crate) fn any(a: M) -> bool {
        a
    }
    #[inline(always)]
    pub(crate) fn mask_from_fn(f: impl Fn(usize) -> bool) -> M {
        f(0)
    }
    #[inline(always)]
    pub(crate) fn to_array(v: V) -> [i64; LANES] {
        [v]
    }
    #[inline(always)]
    pub(crate) fn lanes_mut(v: &mut V) -> &mut [i64; LANES] {
        core::array::from_mut(v)
    }
}

/// Asks the CPU to start loading `r`'s cache line (no effect on the
/// result; nothing where the target has no prefetch instruction).
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    safe_arch::prefetch_t0(r);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = r;
}

/// Lanes per [`Wide`] in this build (8, 4 or 1; see the module docs).
pub(crate) const LANES: usize = imp::LANES;

/// [`LANES`] Q32.32 scalars, one per lane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wide(imp::V);

/// A per-lane condition.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mask(imp::M);

/// [`LANES`] per-step constants packed for the product `Wide * Coef`
/// (see [`pack_bits`]): half the work of `Wide * Wide`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coef(imp::V);

impl Coef {
    /// Zero in every lane.
    #[inline(always)]
    pub(crate) fn zero() -> Coef {
        Coef(imp::zero())
    }

    /// `s` packed, in every lane.
    #[inline(always)]
    pub(crate) fn splat(s: Scalar) -> Coef {
        Coef(imp::splat(pack_bits(s.to_bits())))
    }

    /// Every lane of `w` packed into `self`, lane by lane with scalar code
    /// straight into `self`'s memory: cheaper than a vector form (a
    /// bit-length search without a vector count of leading zeros took some
    /// forty instructions per value), and no vector is rebuilt from lanes
    /// only just stored.
    #[inline(always)]
    pub(crate) fn pack_into(&mut self, w: Wide) {
        let lanes = imp::to_array(w.0);
        let dst = imp::lanes_mut(&mut self.0);
        for (d, c) in dst.iter_mut().zip(lanes) {
            *d = pack_bits(c);
        }
    }

    /// Lane-wise: whether the constant is zero.
    #[inline(always)]
    pub(crate) fn is_zero(self) -> Mask {
        Mask(imp::eq(self.0, imp::zero()))
    }

    /// The negated constants, exactly (the mantissa negated, the shift
    /// kept: `|m| < 2³¹`).
    #[inline(always)]
    pub(crate) fn neg(self) -> Coef {
        Coef(imp::neg_mantissa(self.0))
    }

    /// The values the lanes stand for.
    #[cfg(test)]
    pub(crate) fn values(self) -> [Scalar; LANES] {
        imp::to_array(self.0).map(|p| Scalar::from_bits(unpack_bits(p)))
    }
}

impl Mul<Coef> for Wide {
    type Output = Wide;
    #[inline(always)]
    fn mul(self, c: Coef) -> Wide {
        Wide(imp::mul_coef(self.0, c.0))
    }
}

impl Wide {
    /// Zero in every lane.
    #[inline(always)]
    pub(crate) fn zero() -> Wide {
        Wide(imp::zero())
    }

    /// The same value in every lane.
    #[inline(always)]
    pub(crate) fn splat(s: Scalar) -> Wide {
        Wide(imp::splat(s.to_bits()))
    }

    /// Lane `i` is `f(i)`.
    #[inline(always)]
    pub(crate) fn from_fn(f: impl Fn(usize) -> Scalar) -> Wide {
        Wide(imp::from_fn(|i| f(i).to_bits()))
    }

    /// From every lane's value, in order.
    #[inline(always)]
    pub(crate) fn from_array(a: [Scalar; LANES]) -> Wide {
        Wide::from_fn(|i| a[i])
    }

    /// Every lane, in order.
    #[inline(always)]
    pub(crate) fn to_array(self) -> [Scalar; LANES] {
        let bits = imp::to_array(self.0);
        let mut r = [Scalar::ZERO; LANES];
        for (r, b) in r.iter_mut().zip(bits) {
            *r = Scalar::from_bits(b);
        }
        r
    }

    /// Lane `i`.
    #[cfg(test)]
    pub(crate) fn lane(self, i: usize) -> Scalar {
        self.to_array()[i]
    }

    /// Lane-wise [`Scalar::max`].
    #[inline(always)]
    pub(crate) fn max(self, o: Wide) -> Wide {
        Wide(imp::max(self.0, o.0))
    }

    /// Lane-wise [`Scalar::min`].
    #[inline(always)]
    pub(crate) fn min(self, o: Wide) -> Wide {
        Wide(imp::min(self.0, o.0))
    }

    /// Lane-wise `self > o`.
    #[inline(always)]
    pub(crate) fn gt(self, o: Wide) -> Mask {
        Mask(imp::gt(self.0, o.0))
    }

    /// Lane-wise `self == o`.
    #[inline(always)]
    pub(crate) fn eq_lanes(self, o: Wide) -> Mask {
        Mask(imp::eq(self.0, o.0))
    }

    /// Lane-wise product by a whole number: the bits of
    /// `self * Scalar::from_int(k)` (a product by an integer has no
    /// fraction to round), with fewer partial products.
    #[inline(always)]
    pub(crate) fn mul_int(self, k: u32) -> Wide {
        Wide(imp::mul_u32(self.0, k))
    }
}

impl Mask {
    /// Lane `i`'s condition is `f(i)`.
    #[inline(always)]
    pub(crate) fn from_fn(f: impl Fn(usize) -> bool) -> Mask {
        Mask(imp::mask_from_fn(f))
    }

    /// From every lane's condition, in order.
    #[inline(always)]
    pub(crate) fn from_array(a: [bool; LANES]) -> Mask {
        Mask::from_fn(|i| a[i])
    }

    /// Either condition.
    #[inline(always)]
    pub(crate) fn or(self, o: Mask) -> Mask {
        Mask(imp::or(self.0, o.0))
    }

    /// `a` where the lane's condition holds, `b` elsewhere.
    #[inline(always)]
    pub(crate) fn select(self, a: Wide, b: Wide) -> Wide {
        Wide(imp::select(self.0, a.0, b.0))
    }

    /// `a` where the lane's condition holds, `b` elsewhere.
    #[inline(always)]
    pub(crate) fn select_coef(self, a: Coef, b: Coef) -> Coef {
        Coef(imp::select(self.0, a.0, b.0))
    }

    /// Both conditions.
    #[inline(always)]
    pub(crate) fn and(self, o: Mask) -> Mask {
        Mask(imp::and(self.0, o.0))
    }

    /// The opposite condition.
    #[inline(always)]
    pub(crate) fn not(self) -> Mask {
        Mask(imp::not(self.0))
    }

    /// Whether any lane's condition holds.
    #[inline(always)]
    pub(crate) fn any(self) -> bool {
        imp::any(self.0)
    }
}

impl Add for Wide {
    type Output = Wide;
    #[inline(always)]
    fn add(self, o: Wide) -> Wide {
        Wide(imp::add(self.0, o.0))
    }
}

impl Sub for Wide {
    type Output = Wide;
    #[inline(always)]
    fn sub(self, o: Wide) -> Wide {
        Wide(imp::sub(self.0, o.0))
    }
}

impl Mul for Wide {
    type Output = Wide;
    #[inline(always)]
    fn mul(self, o: Wide) -> Wide {
        Wide(imp::mul(self.0, o.0))
    }
}

impl Neg for Wide {
    type Output = Wide;
    #[inline(always)]
    fn neg(self) -> Wide {
        Wide::zero() - self
    }
}

impl AddAssign for Wide {
    #[inline(always)]
    fn add_assign(&mut self, o: Wide) {
        *self = *self + o;
    }
}

impl SubAssign for Wide {
    #[inline(always)]
    fn sub_assign(&mut self, o: Wide) {
        *self = *self - o;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EDGES: [i64; 16] = [
        i64::MIN,
        i64::MIN + 1,
        i64::MAX,
        i64::MAX - 1,
        -1,
        0,
        1,
        1 << 31,
        -(1 << 31),
        1 << 32,
        -(1 << 32),
        (1 << 32) - 1,
        -(1 << 32) + 1,
        (1 << 32) + 1,
        0x7FFF_FFFF_0000_0000,
        -0x7FFF_FFFF_0000_0001,
    ];

    fn s(bits: i64) -> Scalar {
        Scalar::from_bits(bits)
    }

    /// [`mul_bits`] by its definition: the exact product, less `b << 32`
    /// if `a` is at or past [`CORNER`] and `a << 32` if `b` is.
    fn defined_product(a: i64, b: i64) -> i64 {
        let mut r = (s(a) * s(b)).to_bits();
        if a >= CORNER {
            r = r.wrapping_sub(b << 32);
        }
        if b >= CORNER {
            r = r.wrapping_sub(a << 32);
        }
        r
    }

    /// Lane `i` of the test vectors: the `i`-th value of `v`.
    fn wide(v: &[i64], at: usize) -> Wide {
        Wide::from_fn(|i| s(v[(at + i) % v.len()]))
    }

    /// Every operation, on every lane, against the scalar operation.
    fn check_lanes(x: &[i64], y: &[i64]) {
        let n = x.len().max(y.len());
        for at in 0..n {
            let (a, b) = (wide(x, at), wide(y, at));
            let (sa, sb) = (a.to_array(), b.to_array());
            let results = [
                (a * b, "*"),
                (a + b, "+"),
                (a - b, "-"),
                (-a, "neg"),
                (a.max(b), "max"),
                (a.min(b), "min"),
                (a.gt(b).select(a, b), "gt/select"),
                (a.eq_lanes(b).not().select(a, b), "eq/not/select"),
                (a.gt(b).and(b.gt(Wide::zero())).select(a, b), "and"),
                (a.mul_int(240), "mul_int"),
            ];
            for i in 0..LANES {
                let (p, q) = (sa[i], sb[i]);
                let expect = [
                    s(defined_product(p.to_bits(), q.to_bits())),
                    p + q,
                    p - q,
                    -p,
                    p.max(q),
                    p.min(q),
                    if p > q { p } else { q },
                    if p == q { q } else { p },
                    if p > q && q > Scalar::ZERO { p } else { q },
                    p * Scalar::from_int(240),
                ];
                for ((got, op), want) in results.iter().zip(expect) {
                    assert_eq!(got.lane(i), want, "{op} lane {i}: {p:?}, {q:?}");
                }
            }
            assert_eq!(a.gt(b).any(), (0..LANES).any(|i| sa[i] > sb[i]));
        }
    }

    #[test]
    fn split_product_is_the_scalar_product_below_the_corner() {
        for &a in &EDGES {
            for &b in &EDGES {
                assert_eq!(mul_bits(a, b), defined_product(a, b), "{a:#x} * {b:#x}");
                if a < CORNER && b < CORNER {
                    assert_eq!(mul_bits(a, b), (s(a) * s(b)).to_bits(), "{a:#x} * {b:#x}");
                }
            }
        }
        // The corner starts exactly where the high half overflows.
        assert_eq!(
            mul_bits(CORNER - 1, 3 << 31),
            (s(CORNER - 1) * s(3 << 31)).to_bits()
        );
        assert_ne!(
            mul_bits(CORNER, 3 << 31),
            (s(CORNER) * s(3 << 31)).to_bits()
        );
    }

    #[test]
    fn every_lane_matches_the_scalar_operations_on_edge_values() {
        // Rotating the second list against the first pairs every edge
        // value with every other one, in every lane.
        for shift in 0..EDGES.len() {
            let rotated: Vec<i64> = (0..EDGES.len())
                .map(|k| EDGES[(k + shift) % EDGES.len()])
                .collect();
            check_lanes(&EDGES, &rotated);
        }
    }

    #[test]
    fn lanes_are_set_and_read_independently() {
        let w = Wide::from_fn(|i| Scalar::from_int(i as i32 + 1));
        for i in 0..LANES {
            assert_eq!(w.lane(i), Scalar::from_int(i as i32 + 1));
        }
        assert_eq!(Wide::splat(Scalar::HALF).to_array(), [Scalar::HALF; LANES]);
    }

    /// `x` times a packed constant's value, exactly (`Scalar`'s product).
    fn coef_product(x: i64, p: i64) -> i64 {
        (s(x) * s(unpack_bits(p))).to_bits()
    }

    #[test]
    fn packing_keeps_small_constants_and_thirty_bits_of_large_ones() {
        let values = [
            0i64,
            1,
            -1,
            1 << 29,
            -(1 << 30),
            (1 << 30) - 1,
            1 << 32,
            3 << 40,
            -(5 << 40) - 3,
            i64::MAX,
            i64::MIN,
            -(1 << 31),
            0x1234_5678_9abc_def0,
        ];
        for c in values {
            let p = pack_bits(c);
            let (m, k) = (i64::from(p as i32), i64::from(coef_shift(p)));
            assert!((0..=34).contains(&k), "{c:#x}");
            assert!(m.unsigned_abs() < 1 << 31, "{c:#x}");
            if c.unsigned_abs() <= 1 << 30 {
                assert_eq!(unpack_bits(p), c, "{c:#x} is kept whole");
            } else {
                // Floored to 30 significant bits.
                let v = unpack_bits(p);
                assert!(v <= c && c - v < 1 << k, "{c:#x} -> {v:#x}");
                assert!(
                    m.unsigned_abs() >= 1 << 29,
                    "{c:#x}: the fewest bits dropped"
                );
            }
        }
        // Packing in place gives `pack_bits`, every lane.
        for j in 0..values.len() {
            let w = Wide::from_fn(|i| s(values[(j + i) % values.len()]));
            let mut packed = Coef::zero();
            packed.pack_into(w);
            let got = imp::to_array(packed.0);
            for (i, g) in got.iter().enumerate() {
                assert_eq!(*g, pack_bits(values[(j + i) % values.len()]), "lane {i}");
            }
        }
        // Exact negation of every packed value.
        for c in [5i64, -(1 << 30), (1 << 40) + 12345, -(7 << 50)] {
            let n = Coef(imp::splat(pack_bits(c))).neg().values();
            assert_eq!(n[0], -s(unpack_bits(pack_bits(c))));
        }
    }

    #[test]
    fn coef_products_on_every_lane_match_the_definition() {
        let consts = [
            0i64,
            1,
            -1,
            1 << 29,
            -(1 << 31),
            3 << 32,
            -(5 << 40),
            (1 << 33) + 7,
            i64::MAX,
        ];
        for j in 0..EDGES.len() {
            let xs = Wide::from_fn(|i| s(EDGES[(j + i) % EDGES.len()]));
            let cs = Wide::from_fn(|i| s(consts[(j + i) % consts.len()]));
            let mut p = Coef::zero();
            p.pack_into(cs);
            let (got, xs, cv) = ((xs * p).to_array(), xs.to_array(), p.values());
            for i in 0..LANES {
                let pk = pack_bits(consts[(j + i) % consts.len()]);
                assert_eq!(
                    got[i].to_bits(),
                    mul_coef_bits(xs[i].to_bits(), pk),
                    "lane {i}"
                );
                assert_eq!(cv[i].to_bits(), unpack_bits(pk));
            }
        }
    }

    /// How far the lanes' product of `x` and `p` is below the exact one.
    fn coef_shortfall(x: i64, p: i64) -> i128 {
        let exact = (i128::from(x) * i128::from(unpack_bits(p))) >> 32;
        exact - i128::from(mul_coef_bits(x, p))
    }

    proptest! {
        /// Exactly `Scalar`'s product for constants below ¼; below the
        /// exact product by less than 2ᵏ otherwise (for `x` inside the
        /// corner); every lane computes the definition.
        #[test]
        fn coef_product_is_the_product_by_the_packed_value_floored_before_the_shift(
            x in any::<i64>(), c in any::<i64>(), sh in 0u32..63,
        ) {
            let (x, c) = (x >> sh, c >> (62 - sh));
            let p = pack_bits(c);
            let k = coef_shift(p);
            if x < CORNER && x > -CORNER && c.unsigned_abs() < 1 << 40 {
                if k == 0 {
                    prop_assert_eq!(mul_coef_bits(x, p), coef_product(x, p));
                } else {
                    let d = coef_shortfall(x, p);
                    prop_assert!((0..1i128 << k).contains(&d), "shortfall {} with k = {}", d, k);
                }
            }
            let lanes = (Wide::splat(s(x)) * Coef(imp::splat(p))).to_array();
            prop_assert!(lanes.iter().all(|l| l.to_bits() == mul_coef_bits(x, p)));
        }

        #[test]
        fn split_product_matches_its_definition(a in any::<i64>(), b in any::<i64>(), sh in 0u32..63) {
            prop_assert_eq!(mul_bits(a, b), defined_product(a, b));
            // Magnitudes like the solver's: small values too, where the
            // product is exactly `Scalar`'s.
            let (x, y) = (a >> sh, b >> (62 - sh));
            prop_assert_eq!(mul_bits(x, y), defined_product(x, y));
            if x < CORNER && y < CORNER {
                prop_assert_eq!(mul_bits(x, y), (s(x) * s(y)).to_bits());
            }
        }

        #[test]
        fn vector_lanes_match_the_scalar_operations(
            x in proptest::collection::vec(any::<i64>(), 8),
            y in proptest::collection::vec(any::<i64>(), 8),
            sh in 0u32..40,
        ) {
            let y: Vec<i64> = y.iter().map(|v| v >> sh).collect();
            check_lanes(&x, &y);
        }

        #[test]
        fn integer_products_match(a in any::<i64>(), k in 0u32..100_000) {
            prop_assert_eq!(
                Wide::splat(s(a)).mul_int(k).lane(0),
                s(a) * Scalar::from_int(k as i32)
            );
        }
    }
}

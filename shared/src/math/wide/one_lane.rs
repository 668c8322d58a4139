//! The portable backend: one lane, plain scalar code (every target
//! without AVX2).

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
/// [`super::bits::mul_bits`] from one 64 × 64 → 128-bit product (cheaper
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
    if a >= super::bits::CORNER {
        r = r.wrapping_sub(b << 32);
    }
    if b >= super::bits::CORNER {
        r = r.wrapping_sub(a << 32);
    }
    r
}
#[inline(always)]
pub(crate) fn mul_coef(x: V, m: V, k: V) -> V {
    super::bits::mul_coef_parts(x, m, k as u32)
}
#[inline(always)]
pub(crate) fn coef_load(m: &[i32; LANES], k: &[u8; LANES]) -> (V, V) {
    (i64::from(m[0]), i64::from(k[0]))
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

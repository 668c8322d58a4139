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
//! Three implementations, one file each, chosen when the crate is compiled
//! (by the target CPU the build is for; see `.cargo/config.toml`):
//! - **x86_64 with AVX-512F** (`avx512.rs`): eight lanes in a 512-bit register;
//! - **x86_64 with AVX2** (`avx2.rs`): four lanes in a 256-bit register;
//! - **anything else** (`one_lane.rs`): one lane, plain scalar code.
//!
//! This file is the API they share ([`Wide`], [`Mask`], [`Coef`]); `bits.rs`
//! defines their arithmetic in scalar code.
//!
//! The vector forms go through `safe_arch`'s safe wrappers of the
//! intrinsics (this crate has no `unsafe`).
//!
//! (Plain loops over `[i64; 4]` left to LLVM's vectorizer were slower than
//! scalar code: it vectorized across the sums of impulses rather than
//! across lanes.) A Q32.32 product has no vector instruction (it needs the
//! high half of a 64 × 64 → 128-bit product): it is built from four
//! 32 × 32 → 64 partial products, see [`bits::mul_bits`].

mod bits;

#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
#[path = "avx512.rs"]
mod imp;

#[cfg(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    not(target_feature = "avx512f")
))]
#[path = "avx2.rs"]
mod imp;

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
#[path = "one_lane.rs"]
mod imp;

use super::Scalar;
use core::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

/// Asks the CPU to start loading `r`'s cache line (no effect on the
/// result; nothing where the target has no prefetch instruction).
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    safe_arch::prefetch_t0(r);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = r;
}

/// Asks the CPU to start loading `r`'s cache line to write it: for a line
/// about to be written but not read, whose load otherwise stalls the
/// writes (no effect on the result; where the target lacks the write hint,
/// a plain prefetch; nothing where it has no prefetch instruction).
#[inline(always)]
pub(crate) fn prefetch_write<T>(r: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    safe_arch::prefetch_et0(r);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = r;
}

/// Whether asking for the places at `offsets` (in bytes) of every element
/// of a list of `size`-byte elements aligned to `align` asks for every
/// line the list spans: [`covers_lines_of`] the whole element.
#[cfg(test)]
pub(crate) fn covers_lines(size: usize, align: usize, offsets: &[usize]) -> bool {
    covers_lines_of(0..size, align, offsets)
}

/// Whether asking for the places at `offsets` of an element aligned to
/// `align` asks for every line that its bytes `range` touch: for every
/// place the element can start within a line (a multiple of `align` below
/// 64), each of those lines holds one of the places. An element aligned
/// to whole lines has one such start; a smaller alignment has several,
/// and the last line, which may hold only the last few bytes, needs a
/// place there (one no more than `align` bytes before the end).
#[cfg(test)]
pub(crate) fn covers_lines_of(
    range: core::ops::Range<usize>,
    align: usize,
    offsets: &[usize],
) -> bool {
    const LINE: usize = 64;
    if range.is_empty() {
        return true;
    }
    (0..LINE).step_by(align.clamp(1, LINE)).all(|start| {
        // Byte `o` lies in line `(start + o) / LINE`.
        let lines = (start + range.start) / LINE..=(start + range.end - 1) / LINE;
        lines
            .into_iter()
            .all(|l| offsets.iter().any(|&o| (start + o) / LINE == l))
    })
}

/// Lanes per [`Wide`] in this build (8, 4 or 1; see the module docs).
pub(crate) const LANES: usize = imp::LANES;

/// [`LANES`] Q32.32 scalars, one per lane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wide(imp::V);

/// A per-lane condition.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mask(imp::M);

/// [`LANES`] per-step constants packed for the product `Wide * Coef` (see
/// [`bits::pack_bits`]: a 32-bit mantissa and a shift, half the work of
/// `Wide * Wide`), as the solver's bundles keep them: the mantissas and
/// the shifts apart, five bytes a lane where a 64-bit word takes eight.
/// The substeps stream the bundles through the cache over and over, and
/// in a big world they do not fit in it: the bytes are the cost there.
/// Loading into registers ([`Coef::get`]) widens them again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coef {
    m: [i32; LANES],
    k: [u8; LANES],
}

/// A [`Coef`] in registers: the mantissas (in each lane's low 32 bits) and
/// the shifts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoefV {
    m: imp::V,
    k: imp::V,
}

impl Coef {
    /// Zero in every lane.
    #[inline(always)]
    pub(crate) fn zero() -> Coef {
        Coef {
            m: [0; LANES],
            k: [0; LANES],
        }
    }

    /// Every lane of `w` packed into `self`, lane by lane with scalar code
    /// straight into `self`'s memory: cheaper than a vector form (a
    /// bit-length search without a vector count of leading zeros took some
    /// forty instructions per value), and no vector is rebuilt from lanes
    /// only just stored.
    #[inline(always)]
    pub(crate) fn pack_into(&mut self, w: Wide) {
        let lanes = imp::to_array(w.0);
        for ((m, k), c) in self.m.iter_mut().zip(self.k.iter_mut()).zip(lanes) {
            (*m, *k) = bits::pack_parts(c);
        }
    }

    /// Into registers.
    #[inline(always)]
    pub(crate) fn get(&self) -> CoefV {
        let (m, k) = imp::coef_load(&self.m, &self.k);
        CoefV { m, k }
    }

    /// Lane-wise: whether the constant is zero.
    #[inline(always)]
    pub(crate) fn is_zero(&self) -> Mask {
        Mask(imp::eq(self.get().m, imp::zero()))
    }

    /// The values the lanes stand for.
    #[cfg(test)]
    pub(crate) fn values(&self) -> [Scalar; LANES] {
        core::array::from_fn(|i| Scalar::from_bits(i64::from(self.m[i]) << self.k[i]))
    }
}

impl CoefV {
    /// Zero in every lane.
    #[inline(always)]
    pub(crate) fn zero() -> CoefV {
        CoefV {
            m: imp::zero(),
            k: imp::zero(),
        }
    }

    /// `s` packed, in every lane.
    #[inline(always)]
    pub(crate) fn splat(s: Scalar) -> CoefV {
        let (m, k) = bits::pack_parts(s.to_bits());
        CoefV {
            m: imp::splat(i64::from(m)),
            k: imp::splat(i64::from(k)),
        }
    }

    /// The negated constants, exactly: the mantissa negated (`|m| < 2³¹`;
    /// the product reads only the low 32 bits of its lane), the shift kept.
    #[inline(always)]
    pub(crate) fn neg(self) -> CoefV {
        CoefV {
            m: imp::sub(imp::zero(), self.m),
            k: self.k,
        }
    }
}

impl Mul<CoefV> for Wide {
    type Output = Wide;
    #[inline(always)]
    fn mul(self, c: CoefV) -> Wide {
        Wide(imp::mul_coef(self.0, c.m, c.k))
    }
}

impl Mul<Coef> for Wide {
    type Output = Wide;
    #[inline(always)]
    fn mul(self, c: Coef) -> Wide {
        self * c.get()
    }
}

impl Default for Wide {
    /// Zero in every lane.
    #[inline(always)]
    fn default() -> Wide {
        Wide::zero()
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
    pub(crate) fn select_coef(self, a: CoefV, b: CoefV) -> CoefV {
        CoefV {
            m: imp::select(self.0, a.m, b.m),
            k: imp::select(self.0, a.k, b.k),
        }
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
    use super::bits::*;
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
            for i in 0..LANES {
                let p = pack_bits(values[(j + i) % values.len()]);
                assert_eq!(packed.m[i], p as i32, "lane {i}");
                assert_eq!(u32::from(packed.k[i]), coef_shift(p), "lane {i}");
            }
            // Zero exactly where the value is.
            let zero = packed
                .is_zero()
                .select(Wide::splat(Scalar::ONE), Wide::zero())
                .to_array();
            for (i, z) in zero.iter().enumerate() {
                assert_eq!(
                    *z == Scalar::ONE,
                    values[(j + i) % values.len()] == 0,
                    "lane {i}"
                );
            }
        }
        // Exact negation of every packed value, in every lane: a product
        // by the negated constant is the product by the negated value.
        for c in [5i64, -(1 << 30), (1 << 40) + 12345, -(7 << 50)] {
            let mut packed = Coef::zero();
            packed.pack_into(Wide::splat(s(c)));
            let x = Wide::splat(Scalar::from_int(3));
            let neg = (x * packed.get().neg()).to_array();
            let want = mul_coef_bits(x.lane(0).to_bits(), pack_bits(-unpack_bits(pack_bits(c))));
            assert!(neg.iter().all(|l| l.to_bits() == want), "{c:#x}");
        }
    }

    /// The point of the stored form: five bytes a lane (the vector builds;
    /// one lane pads to eight).
    #[test]
    fn a_stored_constant_takes_five_bytes_a_lane() {
        if LANES > 1 {
            assert_eq!(core::mem::size_of::<Coef>(), 5 * LANES);
        }
        assert_eq!(core::mem::align_of::<Coef>(), 4);
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
            let mut packed = Coef::zero();
            packed.pack_into(Wide::splat(s(c)));
            let lanes = (Wide::splat(s(x)) * packed).to_array();
            prop_assert!(lanes.iter().all(|l| l.to_bits() == mul_coef_bits(x, p)));
            let lanes = (Wide::splat(s(x)) * CoefV::splat(s(c))).to_array();
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

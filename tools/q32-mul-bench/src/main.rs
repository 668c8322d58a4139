//! How fast can a Q32.32 product be on this CPU?
//!
//! Measures the throughput of `bitroom-sim`'s product (`(a·b) >> 32` through
//! a 128-bit multiply) on independent operands, scalar, against the same
//! product eight lanes at a time with AVX-512 (32-bit partial products and
//! sign corrections; bit for bit the scalar result, checked on edge values
//! and random ones). It indicates what SIMD would gain per product when
//! both operands are split for every product; a solver that splits its
//! constants once per step would do somewhat better.
//!
//! On this machine's core the scalar product is a one-operand `imul` and a
//! `shld`, both on port 1: about two cycles per product. LLVM emits the
//! `shld` for any safe way of writing the shift.
//!
//! Also the same split product written in safe Rust on `u64`s
//! (`mul_split`), which LLVM vectorizes with the target's features: with
//! the default x86-64 target (SSE2) it is slower than the scalar product,
//! with `-C target-cpu=native` (AVX-512) about 1.4× faster.
//!
//! For scale, the same loop over `f32`, the kind of product Box2D's solver
//! does. The arrays stay in L1, so the loops time products, not memory.
//!
//! `cargo run --release` (x86_64 with AVX-512F/DQ; prints ns per product);
//! `RUSTFLAGS="-C target-cpu=native" cargo run --release` for the
//! vectorized safe split with AVX-512.

use std::arch::x86_64::*;
use std::time::Instant;

#[inline(always)]
fn mul_scalar(a: i64, b: i64) -> i64 {
    (((a as i128) * (b as i128)) >> 32) as i64
}

/// ⌊a·b / 2³²⌋ mod 2⁶⁴ per lane: with a = aₕ·2³² + aₗ read as unsigned,
/// the product is aₕbₕ·2⁶⁴ + (aₕbₗ + aₗbₕ)·2³² + aₗbₗ; a negative operand
/// adds −2⁶⁴ times the other, which shifted down by 32 is −(other << 32).
#[target_feature(enable = "avx512f,avx512dq")]
fn mul8(a: __m512i, b: __m512i) -> __m512i {
    let ah = _mm512_srli_epi64(a, 32);
    let bh = _mm512_srli_epi64(b, 32);
    let ll = _mm512_mul_epu32(a, b);
    let lh = _mm512_mul_epu32(a, bh);
    let hl = _mm512_mul_epu32(ah, b);
    let hh = _mm512_mul_epu32(ah, bh);
    let mut r = _mm512_add_epi64(_mm512_slli_epi64(hh, 32), _mm512_add_epi64(lh, hl));
    r = _mm512_add_epi64(r, _mm512_srli_epi64(ll, 32));
    let ma = _mm512_movepi64_mask(a);
    let mb = _mm512_movepi64_mask(b);
    r = _mm512_mask_sub_epi64(r, ma, r, _mm512_slli_epi64(b, 32));
    _mm512_mask_sub_epi64(r, mb, r, _mm512_slli_epi64(a, 32))
}

#[target_feature(enable = "avx512f,avx512dq")]
fn run_simd(a: &[i64], b: &[i64], c: &mut [i64]) {
    for ((a, b), c) in a
        .chunks_exact(8)
        .zip(b.chunks_exact(8))
        .zip(c.chunks_exact_mut(8))
    {
        // SAFETY: each chunk holds exactly eight i64, the 64 bytes the
        // unaligned load and store read and write.
        unsafe {
            let va = _mm512_loadu_si512(a.as_ptr().cast());
            let vb = _mm512_loadu_si512(b.as_ptr().cast());
            _mm512_storeu_si512(c.as_mut_ptr().cast(), mul8(va, vb));
        }
    }
}

/// The same split product in safe Rust on plain `u64`s, for LLVM to
/// vectorize with whatever the target offers (`vpmuludq` for the four
/// 32 × 32 → 64 partial products; SSE2 by default, AVX2 or AVX-512 with
/// `-C target-cpu=native`). The same bits as `mul_scalar`.
#[inline(always)]
fn mul_split(a: i64, b: i64) -> i64 {
    const LO: u64 = 0xFFFF_FFFF;
    let (ua, ub) = (a as u64, b as u64);
    let (ah, bh) = (ua >> 32, ub >> 32);
    let ll = (ua & LO) * (ub & LO);
    let lh = (ua & LO) * bh;
    let hl = ah * (ub & LO);
    let hh = ah * bh;
    let mut r = (hh << 32)
        .wrapping_add(lh)
        .wrapping_add(hl)
        .wrapping_add(ll >> 32);
    // A negative operand read as unsigned adds 2⁶⁴ times the other.
    r = r.wrapping_sub(((a >> 63) as u64) & (ub << 32));
    r = r.wrapping_sub(((b >> 63) as u64) & (ua << 32));
    r as i64
}

#[inline(never)]
fn run_split(a: &[i64], b: &[i64], c: &mut [i64]) {
    for ((a, b), c) in a.iter().zip(b).zip(c.iter_mut()) {
        *c = mul_split(*a, *b);
    }
}

/// Box2D's solver multiplies `f32`s; this loop compiles to SSE2, four lanes.
fn run_f32(a: &[f32], b: &[f32], c: &mut [f32]) {
    for ((a, b), c) in a.iter().zip(b).zip(c.iter_mut()) {
        *c = *a * *b;
    }
}

fn run_scalar(a: &[i64], b: &[i64], c: &mut [i64]) {
    for ((a, b), c) in a.iter().zip(b).zip(c.iter_mut()) {
        *c = mul_scalar(*a, *b);
    }
}

fn main() {
    if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq")) {
        eprintln!("this CPU has no AVX-512F/DQ");
        std::process::exit(2);
    }
    // Three arrays of 1024 i64 (24 KiB) stay in the 48 KiB L1D, so the
    // loops measure the products, not memory.
    let n = 1024;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    // xorshift, with varied magnitudes (shifted right by 0..29 bits).
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x as i64) >> (x % 30)
    };
    let mut a: Vec<i64> = (0..n).map(|_| rnd()).collect();
    let mut b: Vec<i64> = (0..n).map(|_| rnd()).collect();
    // Every pair of edge values, in the first lanes.
    let edges = [
        i64::MIN,
        i64::MIN + 1,
        i64::MAX,
        -1,
        0,
        1,
        1 << 31,
        -(1 << 31),
        1 << 32,
        -(1 << 32),
        (1 << 32) - 1,
        -(1 << 32) + 1,
    ];
    let mut k = 0;
    for &x in &edges {
        for &y in &edges {
            a[k] = x;
            b[k] = y;
            k += 1;
        }
    }
    let (mut c1, mut c2, mut c3) = (vec![0i64; n], vec![0i64; n], vec![0i64; n]);
    run_scalar(&a, &b, &mut c1);
    run_split(&a, &b, &mut c3);
    assert_eq!(c1, c3, "split products differ from the scalar ones");
    // SAFETY: AVX-512F/DQ detected above.
    unsafe { run_simd(&a, &b, &mut c2) };
    assert_eq!(c1, c2, "AVX-512 products differ from the scalar ones");
    // Floats here only to time Box2D's kind of product; nothing steps.
    let fa: Vec<f32> = a.iter().map(|&v| v as f32 * 1e-12).collect();
    let fb: Vec<f32> = b.iter().map(|&v| v as f32 * 1e-12).collect();
    let mut fc = vec![0f32; n];
    let reps = 80_000;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..reps {
            run_scalar(std::hint::black_box(&a), &b, std::hint::black_box(&mut c1));
        }
        let scalar = t.elapsed().as_secs_f64() * 1e9 / (reps * n) as f64;
        let t = Instant::now();
        for _ in 0..reps {
            // SAFETY: as above.
            unsafe { run_simd(std::hint::black_box(&a), &b, std::hint::black_box(&mut c2)) };
        }
        let simd = t.elapsed().as_secs_f64() * 1e9 / (reps * n) as f64;
        let t = Instant::now();
        for _ in 0..reps {
            run_f32(
                std::hint::black_box(&fa),
                &fb,
                std::hint::black_box(&mut fc),
            );
        }
        let float = t.elapsed().as_secs_f64() * 1e9 / (reps * n) as f64;
        let t = Instant::now();
        for _ in 0..reps {
            run_split(std::hint::black_box(&a), &b, std::hint::black_box(&mut c3));
        }
        let split = t.elapsed().as_secs_f64() * 1e9 / (reps * n) as f64;
        println!(
            "Q32.32 scalar {scalar:.3} ns/product   avx512 intrinsics {simd:.3} ({:.2}x)   safe split, vectorized by LLVM {split:.3} ({:.2}x)   f32 {float:.3}",
            scalar / simd,
            scalar / split
        );
    }
}

//! Deterministic scalar math with no libm: `exp_det` (versioned approximation) and `sqrt_det`
//! (exactly IEEE-754 correctly rounded, so it equals every hardware sqrt bit for bit).
//! Coefficients, clamps and evaluation order are part of `RUNTIME_SEMANTICS` (CONTRACT.md).

// The coefficients are written as published (Cephes expf, Cody-Waite ln 2) and each parses to
// the f32 the contract pins: shortening them (excessive_precision) or naming std's LOG2_E
// (approx_constant) would be an edit of RUNTIME_SEMANTICS's constants, not a lint fix.
#![allow(clippy::excessive_precision, clippy::approx_constant)]

/// Version of the `exp_det` approximation; bumping it bumps `RUNTIME_SEMANTICS`.
pub const EXP_DET_VERSION: u32 = 1;

/// Above this `exp_det` returns +inf (ln(f32::MAX) = 88.7228...).
pub const EXP_OVERFLOW: f32 = 88.72283;
/// Below this `exp_det` returns +0 (about ln(f32::MIN_POSITIVE)); subnormals are not produced
/// for inputs below it.
pub const EXP_UNDERFLOW: f32 = -87.33654;

pub(crate) const LOG2E: f32 = 1.442_695_04;
// Cody-Waite split of ln 2: C1 has few mantissa bits so k * C1 is exact.
pub(crate) const LN2_C1: f32 = 0.693_359_375;
pub(crate) const LN2_C2: f32 = -2.121_944_4e-4;
// Minimax polynomial for exp(r) - 1 - r on [-ln2/2, ln2/2] (Cephes expf), Horner from P0.
pub(crate) const P0: f32 = 1.987_569_15e-4;
pub(crate) const P1: f32 = 1.398_199_950_7e-3;
pub(crate) const P2: f32 = 8.333_451_907_3e-3;
pub(crate) const P3: f32 = 4.166_579_589_4e-2;
pub(crate) const P4: f32 = 1.666_666_545_9e-1;
pub(crate) const P5: f32 = 5.000_000_120_1e-1;

/// exp(x) in f32: NaN -> NaN, x > EXP_OVERFLOW -> +inf, x < EXP_UNDERFLOW -> +0 (also for -inf).
/// Every step is a plain f32 add/mul/sub (never fused) in the order written.
pub fn exp_det(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > EXP_OVERFLOW {
        return f32::INFINITY;
    }
    if x < EXP_UNDERFLOW {
        return 0.0;
    }
    // k = floor(x * log2(e) + 0.5), without libm floor: truncate, then step down if needed.
    let t = x * LOG2E + 0.5;
    let mut k = t as i32; // |t| < 130: in range, so `as` is an exact truncation
    if (k as f32) > t {
        k -= 1;
    }
    let kf = k as f32;
    let mut r = x - kf * LN2_C1;
    r = r - kf * LN2_C2;
    let rr = r * r;
    let mut p = P0;
    p = p * r + P1;
    p = p * r + P2;
    p = p * r + P3;
    p = p * r + P4;
    p = p * r + P5;
    let y = p * rr + r + 1.0;
    scale_by_pow2(y, k)
}

/// y * 2^k for k in [-126, 128] using exact power-of-two factors.
fn scale_by_pow2(y: f32, k: i32) -> f32 {
    if k > 127 {
        return y * pow2(127) * 2.0;
    }
    y * pow2(k)
}

/// 2^k as a normal f32, k in [-126, 127].
fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// SiLU(x) = x / (1 + exp_det(-x)), in that order.
pub fn silu_det(x: f32) -> f32 {
    x / (1.0 + exp_det(-x))
}

/// Correctly rounded (round-to-nearest-even) square root, computed with integers.
/// sqrt(-0) = -0, sqrt(+inf) = +inf, sqrt(x < 0) = NaN, sqrt(NaN) = NaN.
pub fn sqrt_det(x: f32) -> f32 {
    if x.is_nan() || x == 0.0 || x == f32::INFINITY {
        return x;
    }
    if x < 0.0 {
        return f32::NAN;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 23) & 0xff) as i32;
    let frac = (bits & 0x7f_ffff) as u64;
    // x = m * 2^e with integer m.
    let (mut m, mut e) = if biased == 0 { (frac, -149) } else { (frac | 0x80_0000, biased - 150) };
    if e & 1 != 0 {
        m <<= 1;
        e -= 1;
    }
    // Scale m by 4^s so isqrt has 25 bits: 24 result bits + 1 rounding bit.
    let mut s = 0;
    while (m << (2 * s)) < (1u64 << 48) {
        s += 1;
    }
    let big = m << (2 * s);
    let root = isqrt(big);
    let exact = root * root == big;
    // root in [2^24, 2^25): drop the rounding bit, round to nearest even.
    let guard = root & 1;
    let mut q = root >> 1;
    if guard == 1 && (!exact || q & 1 == 1) {
        q += 1;
    }
    let mut p = e / 2 - s + 1;
    if q == 1 << 24 {
        q >>= 1;
        p += 1;
    }
    // q in [2^23, 2^24): value = q * 2^p, always a normal number.
    let exponent = (p + 23 + 127) as u32;
    f32::from_bits((exponent << 23) | ((q as u32) & 0x7f_ffff))
}

/// floor(sqrt(n)) for n < 2^50, bit by bit.
fn isqrt(n: u64) -> u64 {
    let mut rem = n;
    let mut root = 0u64;
    let mut bit = 1u64 << 50;
    while bit > n {
        bit >>= 2;
    }
    while bit != 0 {
        if rem >= root + bit {
            rem -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;

    fn ulp_diff(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn sqrt_det_matches_hardware_bit_for_bit() {
        // Walk the whole exponent range with a stride through the bits, plus subnormals.
        let mut bits: u32 = 1;
        while bits < 0x7f80_0000 {
            let x = f32::from_bits(bits);
            assert_eq!(sqrt_det(x).to_bits(), x.sqrt().to_bits(), "x = {x:e} ({bits:#x})");
            bits += 9_973;
        }
        for x in [0.25f32, 1.0, 2.0, 3.0, 4.0, 1e-45, f32::MAX, f32::MIN_POSITIVE] {
            assert_eq!(sqrt_det(x).to_bits(), x.sqrt().to_bits(), "x = {x:e}");
        }
        assert_eq!(sqrt_det(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(sqrt_det(-1.0).is_nan());
        assert_eq!(sqrt_det(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn exp_det_is_within_two_ulp_of_libm() {
        let mut x = -87.0f32;
        while x < 88.5 {
            let got = exp_det(x);
            let want = (x as f64).exp() as f32;
            assert!(ulp_diff(got, want) <= 2, "x = {x}: {got:e} vs {want:e}");
            x += 0.0137;
        }
        assert_eq!(exp_det(0.0), 1.0);
        assert_eq!(exp_det(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_det(100.0), f32::INFINITY);
        assert!(exp_det(f32::NAN).is_nan());
    }

    #[test]
    fn exp_det_known_bits_are_frozen() {
        // Frozen outputs: a change here is a RUNTIME_SEMANTICS change.
        let cases: [(f32, u32); 4] =
            [(1.0, 0x402d_f854), (-1.0, 0x3ebc_5ab2), (0.5, 0x3fd3_094c), (-10.0, 0x383e_6bce)];
        for (x, bits) in cases {
            assert_eq!(exp_det(x).to_bits(), bits, "exp_det({x}) = {:#x}", exp_det(x).to_bits());
        }
    }
}

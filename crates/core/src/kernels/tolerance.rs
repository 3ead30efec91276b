//! Conformance tiers: how far a lane other than the scalar oracle (simd128, simd128-threads)
//! may differ from the oracle per operator. `tinyrustlm golden` writes these into every golden
//! vector's `alternate_tolerance`; tests/lanes checks the SIMD kernels against them.
//!
//! A lane value `v` conforms to the oracle's `e` when their bits are equal, or both are finite
//! and `|v - e| <= abs + rel * |e|`, or they are at most `max_ulp` representable f32 apart.
//! `None`: bit-exact in every lane (elementwise kernels with the oracle's exact operation
//! order, everything scalar in all lanes, and end-to-end token sequences).
//!
//! Why the reductions differ: SIMD128 sums four lanes (lane l takes the terms == l mod 4) and
//! reduces them as (l0 + l1) + (l2 + l3); the oracle sums left to right. Both are ordinary f32
//! adds of the same products, so the difference is bounded by about 2 (n - 1) 2^-24 sum|terms|
//! (n = terms per output). The numbers below cover n <= 4096 terms of magnitude <= 1 (the
//! golden vectors' ranges: activations in [-1, 1), weights |scale * code| <= 128 with
//! power-of-two scales <= 1) relative to the result, with the absolute floor for results
//! that cancel to near zero. Measured worst cases: tests/lanes (SIMD vs oracle sweep).

/// One operator's declared tier (mirrors `verify/formats/golden.py` `Tolerance`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub abs: f32,
    pub rel: f32,
    pub max_ulp: u32,
}

const REDUCTION: Tolerance = Tolerance { abs: 1.0 / 16384.0, rel: 1.0 / 65536.0, max_ulp: 64 };

/// THE table: operator (as in golden vectors) -> tier for alternate lanes.
pub const ALTERNATE_TOLERANCE: [(&str, Option<Tolerance>); 17] = [
    ("q8_matvec", Some(REDUCTION)),
    ("q4_matvec", Some(REDUCTION)),
    ("f32_matvec", Some(REDUCTION)),
    // sum of squares in lanes; 1/sqrt of it scales every output
    ("rmsnorm", Some(REDUCTION)),
    // scores are lane dots; softmax and the value accumulation then carry the difference
    ("attention", Some(REDUCTION)),
    ("rope", None),
    ("softmax", None),
    ("silu_mul", None),
    ("add_assign", None),
    ("exp_det", None),
    ("pcg32", None),
    ("sampler", None),
    ("e2e_decode", None),
    // the integer tier (CONTRACT.md §10): exact integer sums, bit-identical in every lane
    ("int8_quantize", None),
    ("int8_q8_matvec", None),
    ("int8_q4_matvec", None),
    ("int8_e2e_decode", None),
];

/// The declared tier of `operator`; unknown operators are bit-exact (fail closed).
pub fn alternate_tolerance(operator: &str) -> Option<Tolerance> {
    ALTERNATE_TOLERANCE.iter().find(|(name, _)| *name == operator).and_then(|(_, t)| *t)
}

/// f32 distance in units in the last place (ordered bit patterns), u32::MAX across NaN.
pub fn ulp_distance(a: f32, b: f32) -> u32 {
    if a.is_nan() || b.is_nan() {
        return u32::MAX;
    }
    let key = |x: f32| {
        let bits = x.to_bits() as i32;
        if bits < 0 {
            i32::MIN.wrapping_sub(bits) as i64
        } else {
            bits as i64
        }
    };
    (key(a) - key(b)).unsigned_abs().min(u32::MAX as u64) as u32
}

/// The conformance rule above.
pub fn conforms(got: f32, oracle: f32, tier: Option<Tolerance>) -> bool {
    if got.to_bits() == oracle.to_bits() {
        return true;
    }
    let t = match tier {
        Some(t) => t,
        None => return false,
    };
    if !got.is_finite() || !oracle.is_finite() {
        return false;
    }
    // no_std: f32::abs is a std method; clearing the sign bit is the same operation
    let abs = |x: f32| f32::from_bits(x.to_bits() & 0x7fff_ffff);
    abs(got - oracle) <= t.abs + t.rel * abs(oracle) || ulp_distance(got, oracle) <= t.max_ulp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_cases() {
        let t = alternate_tolerance("q8_matvec");
        assert!(conforms(1.0, 1.0, None));
        assert!(!conforms(1.0, f32::from_bits(1.0f32.to_bits() + 1), None));
        assert!(conforms(f32::from_bits(1.0f32.to_bits() + 64), 1.0, t));
        assert!(!conforms(1.001, 1.0, t));
        assert!(conforms(1e-5, -1e-5, t)); // absolute floor near zero
        assert!(!conforms(f32::NAN, 1.0, t));
        assert!(!conforms(f32::INFINITY, f32::MAX, t));
        assert_eq!(ulp_distance(0.0, -0.0), 0);
        assert_eq!(ulp_distance(f32::from_bits(1), -f32::from_bits(1)), 2);
        assert_eq!(alternate_tolerance("no-such-operator"), None);
        assert_eq!(alternate_tolerance("rope"), None);
    }
}

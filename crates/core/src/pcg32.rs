//! PCG32 exactly as the reference's "Deterministic sampling contract": transition, seeding and
//! the u -> f32 conversion are frozen. All arithmetic is explicitly modulo 2^64.

pub const PCG32_MULTIPLIER: u64 = 6_364_136_223_846_793_005;

/// Serialized sampler PRNG state: 16 bytes on the ABI (state LE, then increment LE).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pcg32 {
    pub state: u64,
    /// Always odd.
    pub increment: u64,
}

impl Pcg32 {
    /// state = 0; increment = (stream << 1) | 1; advance; state += seed; advance.
    pub fn new(seed: u64, stream: u64) -> Pcg32 {
        let mut rng = Pcg32 { state: 0, increment: (stream << 1) | 1 };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(seed);
        rng.next_u32();
        rng
    }

    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(PCG32_MULTIPLIER).wrapping_add(self.increment);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// u = (r >> 8) * 2^-24: exactly representable, 0 <= u < 1.
    pub fn next_f32(&mut self) -> f32 {
        ((self.next_u32() >> 8) as f32) * (1.0 / 16_777_216.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_pcg_reference_demo() {
        // pcg32-demo (O'Neill's reference C): pcg32_srandom_r(&rng, 42u, 54u).
        let mut rng = Pcg32::new(42, 54);
        let want = [0xa15c_02b7u32, 0x7b47_f409, 0xba1d_3330, 0x83d2_f293, 0xbfa4_784b, 0xcbed_606e];
        for w in want {
            assert_eq!(rng.next_u32(), w);
        }
    }

    #[test]
    fn uniform_is_in_unit_interval_and_exact() {
        let mut rng = Pcg32::new(7, 0);
        for _ in 0..10_000 {
            let u = rng.next_f32();
            assert!((0.0..1.0).contains(&u));
            assert_eq!((u * 16_777_216.0) as u32 as f32, u * 16_777_216.0);
        }
    }
}

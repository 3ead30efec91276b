//! Deterministic test data, one generator for every Rust producer of test inputs: the
//! startup self-tests, the golden-vector generator (crates/cli) and the cargo tests.

use alloc::vec::Vec;

/// Numerical Recipes' LCG; `next` returns the high 24 bits of the state.
pub struct Lcg(pub u32);

impl Lcg {
    /// A generator whose streams differ even for small consecutive seeds.
    pub fn seeded(seed: u32) -> Lcg {
        Lcg(seed.wrapping_mul(2_654_435_761).wrapping_add(12_345))
    }

    #[allow(clippy::should_implement_trait)] // one LCG step, not an iterator: the stream never ends
    pub fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        self.0 >> 8
    }

    /// `k / steps - 1` with k in [0, 2 * steps): a value in [-1, 1), exact in f32 when
    /// `steps` is a power of two (so every reduction order of a few terms gives one sum).
    pub fn unit(&mut self, steps: u32) -> f32 {
        (self.next() % (2 * steps)) as f32 / steps as f32 - 1.0
    }

    pub fn vec(&mut self, n: usize, steps: u32) -> Vec<f32> {
        (0..n).map(|_| self.unit(steps)).collect()
    }
}

// Feature probes: the smallest modules that validate only where a proposal is supported.
// A probe says what an engine *claims*; the cases then show what it *does*.
export const PROBES = {
  // (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt)
  simd128: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0,
    10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]),
  // (memory 1 1 shared) (func (result i32) i32.const 0 i32.atomic.load)
  threads: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0,
    5, 4, 1, 3, 1, 1, 10, 10, 1, 8, 0, 65, 0, 254, 16, 2, 0, 11]),
};

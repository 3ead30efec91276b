;; probe relaxed-simd version 1: relaxed SIMD (one relaxed fused multiply-add)
(module
  (func (result v128)
    (f32x4.relaxed_madd
      (v128.const f32x4 1 2 3 4) (v128.const f32x4 1 2 3 4) (v128.const f32x4 1 2 3 4))))

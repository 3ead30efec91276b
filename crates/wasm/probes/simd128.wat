;; probe simd128 version 1: fixed-width SIMD (one v128 add)
(module
  (func (result v128)
    (i32x4.add (v128.const i32x4 1 2 3 4) (v128.const i32x4 5 6 7 8))))

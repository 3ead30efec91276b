;; probe memory64 version 1: a 64-bit indexed memory and one i64-addressed load
(module
  (memory i64 1)
  (func (result i32)
    (i32.load (i64.const 0))))

;; probe bulk-memory version 1: memory.fill and memory.copy
(module
  (memory 1)
  (func
    (memory.fill (i32.const 0) (i32.const 0) (i32.const 8))
    (memory.copy (i32.const 8) (i32.const 0) (i32.const 8))))

;; probe threads version 1: a shared memory (initial == maximum) and one atomic read-modify-write
(module
  (memory 1 1 shared)
  (func (result i32)
    (i32.atomic.rmw.add (i32.const 0) (i32.const 1))))

;; probe exceptions version 1: a tag and a throw (valid under legacy and exnref handling)
(module
  (tag)
  (func
    (throw 0)))

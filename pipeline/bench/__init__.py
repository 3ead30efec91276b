"""`nox -s bench`: measurements of this machine, never asserted.

Rooms: `cli` (the command), `lanes` (the lane benchmark: builds, node runner `lanes.mjs`, the
native run), `summary` (medians, roofline, targets, table), `stats` (spreads, ratios,
`--compare`), `document` (`tinyrustlm.bench.v4`), `memory` (the plan beside the measured
peaks per lane and context; KV-reuse time to first token), `harness_build` (the kernel harness
crate in `harness/`, also used by tests/crates/lanes), `wasm_parser` (our Wasm parser against
wasm-tools).
"""

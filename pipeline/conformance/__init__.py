"""The conformance matrix: every lane of a release on every engine, against the native oracle.

cases (seeded sampler cases) -> runners (browsers through `harness`, node, wasmtime, native)
-> compare (rows against the oracle) -> report (`verify.formats.conformance`) + html.
"""

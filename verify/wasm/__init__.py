"""A streaming reader of the WebAssembly binary format: bytes -> frozen facts.

reader (LEB128, offsets) -> sections (every standard section) -> code (function bodies,
driven by opcodes.OPCODES) -> custom (target_features, producers, name) -> inventory.

Our own parser on purpose, not a binding to wasmparser (the reader of wasm-tools and wasmtime):
the verifier judges the bytes with code that shares no reader with the tools that made or
run them, and `wasm-tools validate` runs beside it as the second, independent opinion.
"""

"""A streaming reader of the WebAssembly binary format: bytes -> frozen facts.

reader (LEB128, offsets) -> sections (every standard section) -> code (function bodies,
driven by opcodes.OPCODES) -> custom (target_features, producers, name) -> inventory.
"""

"""Deterministic builds of every lane with the pinned toolchain."""

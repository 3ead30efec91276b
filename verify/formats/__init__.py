"""Versioned machine formats as pydantic models; each is exported as a JSON Schema.

The models live in `verify` so that verifiers and the pipeline share one definition
(pipeline may import verify, never the reverse). `registry.VERIFY_FORMATS` lists them.
"""

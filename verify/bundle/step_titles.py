"""The titles of `verify bundle`'s steps, in order (verifier.py's docstring says what each does).

A table of its own: the verifier prints them, and the report page lists them."""

from __future__ import annotations

STEP_TITLES = (
    "read the bundle",
    "signatures by a trusted key",
    "key hints match signing keys",
    "payload types",
    "signed manifest",
    "manifest digests vs files",
    "no missing or extra files",
    "provenance subjects == files",
    "SBOM hashes == files",
    "no builder paths in signed documents",
    "SHA256SUMS and tarball",
    "report re-derived with the verifier's policy",
    "conformance matrix and memory plan",
    "independent rebuilds (K of N)",
    "report.html re-derived from the verified documents",
)
# Steps that run only when asked (their verdict says "not required" otherwise).
ON_REQUEST_STEPS = (14,)

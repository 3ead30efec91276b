"""Verification of a signed release bundle (directory or tarball); see `verifier.py`."""

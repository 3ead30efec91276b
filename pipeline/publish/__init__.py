"""Publish releases to a TUF repository (python-tuf): `repo.py` (the repository on disk),
`keys.py` (its Ed25519 keys), `publish.py` (add a verified bundle); `cli_*.py` are the
commands. The client is `pipeline.fetch`; what both sides share is `pipeline.tuf`.
"""

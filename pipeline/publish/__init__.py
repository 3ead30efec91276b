"""Publish releases to a TUF repository and fetch them back (python-tuf on both sides).

`repo.py` (the repository on disk), `keys.py` (its Ed25519 keys), `publish.py` (add a verified
bundle), `fetch.py` (the client: ngclient.Updater, then `verify bundle`), `releases.py` (how a
release maps to targets), `policy.py` (pipeline/publish/repository.toml), `errors.py` (one class
per failure, each with a stable id); `cli_*.py` are the commands.
"""

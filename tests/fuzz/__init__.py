"""Fuzz campaigns (`nox -s fuzz`, or `python -m tests.fuzz --seed N`), outside the default run.

Each campaign module exposes `run(seed, count) -> FuzzCampaign` (verify/formats/fuzz.py):
case i of a campaign is rebuilt from (seed, i) alone, so a failing case named in the JSON
under build/fuzz/ can be replayed. CI runs a small seeded sample of each campaign as
ordinary tests (`tests/fuzz/test_*_sample.py`).
"""

"""Fuzz campaigns (`nox -s fuzz`, or `python -m tests.fuzz --seed N`), outside the default run.

Each campaign module exposes `run(seed, count)`: parser_mutation and model_mutation return a
FuzzCampaign (verify/formats/fuzz.py), whose case i is rebuilt from (seed, i) alone so a
failing case named in the JSON under build/fuzz/ can be replayed; bundle_mutation returns
its own counts. CI runs a small seeded sample of each campaign as ordinary tests
(`tests/fuzz/test_*_sample.py`).
"""

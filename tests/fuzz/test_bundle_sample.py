"""A small seeded sample of the bundle mutation campaign in the normal test run (the full
campaign, >= 1000 cases, runs in `nox -s fuzz`)."""

from __future__ import annotations

from tests.fuzz.bundle_mutation import TARBALL_INPUT, run


def test_bundle_mutation_sample_is_all_refused() -> None:
    result = run(seed=15, count=60)
    assert (result["cases"], result["accepted"], result["crashed"]) == (60, 0, 0), result
    assert result["refused"] == 60
    # every bundle file and the tarball as input got mutated and refused at least once
    assert all(sum(ids.values()) >= 1 for ids in result["by_target"].values())
    assert TARBALL_INPUT in result["by_target"]

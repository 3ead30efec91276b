"""The pipeline writes and the verifier recomputes the build id with one function
(`verify.formats.manifest.build_id`), whose file order has one home (`listed_sizes`)."""

from __future__ import annotations

import pytest

from tests.harness.release import Harness
from verify.bundle.errors import BuildIdMismatch
from verify.formats.manifest import ModuleManifest


def test_changing_the_one_order_changes_both_sides(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = harness.release(dist=harness.tmp / "first")
    assert harness.verify(first.bundle).build_id == first.manifest.build_id
    in_order = ModuleManifest.listed_sizes

    def reversed_order(self: ModuleManifest) -> list[tuple[str, str, int]]:
        return in_order(self)[::-1]

    monkeypatch.setattr(ModuleManifest, "listed_sizes", reversed_order)
    second = harness.release(dist=harness.tmp / "second")
    # the producer followed the order: a new id for the same files ...
    assert second.manifest.build_id != first.manifest.build_id
    # ... and the verifier follows it too: the new bundle passes, the old one no longer does
    assert harness.verify(second.bundle).build_id == second.manifest.build_id
    with pytest.raises(BuildIdMismatch):
        harness.verify(first.bundle)

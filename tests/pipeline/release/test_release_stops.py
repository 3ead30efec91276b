"""The release stops at the first failing step and writes nothing into dist/."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from typing import Any

import pytest

from pipeline.errors import CheckFailed
from pipeline.lanebuild.built import Built
from pipeline.release.steps import Checked
from tests.harness.release import Harness, fake_report, write_build
from verify.formats.report import VerificationReport


def _dist_is_empty(h: Harness) -> bool:
    dist = h.tmp / "dist"
    return not dist.exists() or not [p for p in dist.iterdir() if not p.name.startswith(".")]


def test_failed_smoke_stops_release(harness: Harness) -> None:
    write_build(harness.repo, harness.commit_time, smoke="fail")
    with pytest.raises(CheckFailed, match="self-test did not pass") as caught:
        harness.release()
    assert caught.value.error_id == "release.smoke"
    assert _dist_is_empty(harness)


WINDOWS = "simd128-threads-wasm32"  # any lane: the one whose engine is "missing" here


def test_a_lane_whose_self_test_did_not_run_is_not_shipped(harness: Harness) -> None:
    write_build(harness.repo, harness.commit_time, smoke="not-run", only=WINDOWS)
    with pytest.raises(CheckFailed, match=f"{WINDOWS}: not-run") as caught:
        harness.release()
    assert "--ship-unsmoked" in caught.value.diagnostics()
    assert _dist_is_empty(harness)


def test_a_named_unsmoked_lane_ships_and_the_manifest_says_so(harness: Harness) -> None:
    write_build(harness.repo, harness.commit_time, smoke="not-run", only=WINDOWS)
    done = harness.release(unsmoked_lanes=(WINDOWS,))
    assert done.manifest.unsmoked_lanes == [WINDOWS]
    assert harness.verify(done.bundle).version == done.manifest.version
    # a failed self-test is never shipped, named or not
    write_build(harness.repo, harness.commit_time, smoke="fail", only=WINDOWS)
    with pytest.raises(CheckFailed, match=f"{WINDOWS}: fail"):
        harness.release(unsmoked_lanes=(WINDOWS,), dist=harness.tmp / "other")


def test_all_lanes_passing_records_no_unsmoked_lane(harness: Harness) -> None:
    done = harness.release(unsmoked_lanes=(WINDOWS,))  # named, but its self-test passed
    assert done.manifest.unsmoked_lanes is None


def test_failed_verification_stops_release(harness: Harness) -> None:
    def failing(artifacts: Any) -> VerificationReport:
        doc = fake_report(artifacts).model_dump(by_alias=True)
        doc["artifacts"][1]["findings"][0]["ok"] = False
        return VerificationReport.model_validate(doc)

    with pytest.raises(CheckFailed, match=r"simd128-wasm32: fake\.magic"):
        harness.release(derive=failing)
    assert _dist_is_empty(harness)


def test_dirty_tree_is_refused(harness: Harness) -> None:
    (harness.repo / "crates/core/src/lib.rs").write_text("#![no_std]\n// edited\n")
    with pytest.raises(CheckFailed, match="differ from HEAD") as dirty:
        harness.release()
    assert dirty.value.error_id == "tree.dirty"
    assert harness.release(allow_dirty=True).bundle is not None


def _commit(h: Harness, text: str) -> None:
    (h.repo / "crates/core/src/lib.rs").write_text(f"#![no_std]\n// {text}\n")
    subprocess.run(
        ["git", "-C", str(h.repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
         "commit", "-qam", text],
        check=True,
    )  # fmt: skip


def test_unchanged_tree_again_is_up_to_date_and_rewrites_nothing(harness: Harness) -> None:
    first = harness.release()
    assert not first.up_to_date
    stamps = {p: p.stat().st_mtime_ns for p in first.bundle.rglob("*")}
    again = harness.release()
    assert again.up_to_date and again.bundle == first.bundle
    assert again.manifest.build_id == first.manifest.build_id
    assert {p: p.stat().st_mtime_ns for p in first.bundle.rglob("*")} == stamps
    assert "up to date" in harness.log[-1]


def test_another_revision_of_an_existing_version_refused_before_building(
    harness: Harness,
) -> None:
    harness.release()
    _commit(harness, "v2")
    built: list[str] = []

    def build(checked: Checked) -> Built:
        built.append("built")
        raise AssertionError("the build must not start")

    harness.steps = replace(harness.steps, build=build)
    with pytest.raises(CheckFailed, match="from another revision") as caught:
        harness.release()
    assert "./nox -s release -- --force" in caught.value.diagnostics()
    assert built == []


def test_stale_build_index_is_refused(harness: Harness) -> None:
    (harness.repo / "crates/core/src/lib.rs").write_text("#![no_std]\n// v2\n")
    subprocess.run(
        [
            "git",
            "-C",
            str(harness.repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qam",
            "v2",
        ],
        check=True,
    )
    with pytest.raises(CheckFailed, match="build index is of revision") as caught:
        harness.release()
    assert caught.value.error_id == "build-index.revision"
    assert _dist_is_empty(harness)


def test_artifact_changed_after_build_is_refused(harness: Harness) -> None:
    artifact = next((harness.repo / "build/artifacts").glob("runtime.scalar-*.wasm"))
    artifact.write_bytes(artifact.read_bytes() + b"\0")
    with pytest.raises(CheckFailed, match="changed since the build") as caught:
        harness.release()
    assert caught.value.error_id == "documents.artifact-changed"
    assert _dist_is_empty(harness)


def test_commit_older_than_validity_is_refused(harness: Harness) -> None:
    with pytest.raises(CheckFailed, match="born expired") as caught:
        harness.release(now=harness.commit_time + 400 * 86400)
    assert caught.value.error_id == "release.born-expired"


def test_concurrent_release_is_refused(harness: Harness) -> None:
    """While one release runs (its lock held), another is refused before any step."""
    from pipeline.release.bundle import ReleaseLocked, release_lock

    with release_lock(harness.repo / "build"), pytest.raises(ReleaseLocked):
        harness.release()
    assert harness.log == []
    assert _dist_is_empty(harness)

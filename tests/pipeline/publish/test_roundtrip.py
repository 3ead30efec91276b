"""Publish then fetch over real HTTP: the bundle arrives byte for byte, and the repository's
versions, expiry, layout and state folder behave as the issue says."""

from __future__ import annotations

from pathlib import Path

from tests.harness.tuf import NEW, OLD, World, entries


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_fetched_bundle_is_byte_identical_to_the_published_one(world: World) -> None:
    world.publish(OLD)
    world.publish(NEW)
    done = world.fetch(version=NEW)
    published = world.bundles.paths[NEW]
    assert done.bundle == world.tmp / "out" / f"tinyrustlm-{NEW}"
    assert _files(done.bundle) == _files(published)
    modes = {p.name: p.stat().st_mode & 0o777 for p in published.rglob("*") if p.is_file()}
    assert {
        p.name: p.stat().st_mode & 0o777 for p in done.bundle.rglob("*") if p.is_file()
    } == modes
    assert entries(world.tmp / "out") == sorted(
        [f"tinyrustlm-{NEW}", *(f"tinyrustlm-{NEW}/{rel}" for rel in entries(done.bundle))]
    )

"""std rebuilt from the pinned sources (pipeline/lanebuild/stdbuild.py): the content key, the
cache (a hit builds nothing; a damaged or planted entry is never used), the remapped paths.

The build itself runs once per cache (the session's lanes share it); everything else here is
fast. That the rebuilt std is byte-identical from another HOME (so another cache, built from
scratch) is tests/pipeline/reproduce/'s two-builder comparison.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.lanebuild.stdbuild import (
    STAMP,
    _intact,
    _libdir,
    ensure_sysroot,
    key_of,
    source_remap,
    std_command,
)
from pipeline.toolchain.lockfile import load_lock
from pipeline.tree.lanes import load_lanes

REPO = Path(__file__).resolve().parents[3]
LOCK = load_lock(REPO / "toolchain.lock")
LANES = {lane.id: lane for lane in load_lanes(REPO / "manifests" / "lanes.toml").lane}
SCALAR = LANES["scalar-wasm32"]


def test_every_fact_that_decides_the_bytes_is_in_the_key() -> None:
    base = key_of(SCALAR, LOCK)
    changed = {
        "rustflags": SCALAR.model_copy(update={"rustflags": [*SCALAR.rustflags, "-C", "x=y"]}),
        "target": SCALAR.model_copy(update={"target": "wasm32v1-none"}),
        "crates": SCALAR.model_copy(update={"build_std": ["core", "alloc"]}),
    }
    for what, lane in changed.items():
        assert key_of(lane, LOCK) != base, what
    sources = LOCK.model_copy(
        update={"std_source": LOCK.std_source.model_copy(update={"sha256": "0" * 64})}
    )
    compiler = LOCK.model_copy(
        update={"rustc": LOCK.rustc.model_copy(update={"commit_hash": "1" * 40})}
    )
    assert key_of(SCALAR, sources) != base and key_of(SCALAR, compiler) != base
    # how the lane links (not how std is compiled) is not part of it: lanes share a std
    relinked = SCALAR.model_copy(update={"link_args": ["--no-entry"], "id": "other"})
    assert key_of(relinked, LOCK) == base


def test_std_sources_are_remapped_to_rustups_place() -> None:
    argv, env = std_command(SCALAR, LOCK, Path("/tmp/work"))
    flags = env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")
    remaps = [flags[i + 1] for i, f in enumerate(flags) if f == "--remap-path-prefix"]
    target = f"/rustc/{LOCK.rustc.commit_hash}"
    assert source_remap(LOCK) == target
    assert f"/usr/src/rustc-1.96.0={target}" in remaps
    assert f"/usr/lib/rustlib/src/rust={target}" in remaps
    assert "/tmp/work=/rustc-std" in remaps
    assert flags[: len(SCALAR.rustflags)] == list(SCALAR.rustflags)  # the lane's own codegen
    assert "-Zbuild-std=std,panic_abort" in argv and env["PATH"] == "/usr/bin:/bin"


@pytest.mark.integration
def test_a_hit_builds_nothing_and_a_damaged_entry_is_refused(tmp_path: Path) -> None:
    if not Path(LOCK.rustc.binary).exists():
        pytest.skip("pinned toolchain not installed: run `tinyrustlm-release toolchain install`")
    first = ensure_sysroot(SCALAR, LOCK)  # built now, or by the session's lane builds
    again = ensure_sysroot(SCALAR, LOCK)
    assert not again.built and again.root == first.root
    libdir = _libdir(again.root, SCALAR.target)
    names = sorted(p.name for p in libdir.iterdir())
    assert any(n.startswith("libstd-") for n in names)
    assert any(n.startswith("libcore-") for n in names)
    cache = str(again.root.parent).encode()  # where it was built (a folder inside the cache)
    for rlib in libdir.iterdir():  # no builder or source path in what every wasm lane links
        data = rlib.read_bytes()
        assert cache not in data and b"/usr/src/rustc-" not in data, rlib.name
        assert b"/usr/lib/rustlib/src" not in data, rlib.name

    copy = tmp_path / "cache" / again.root.name
    shutil.copytree(again.root, copy)
    assert _intact(copy, again.key, SCALAR.target)
    victim = next(p for p in _libdir(copy, SCALAR.target).iterdir() if p.name.startswith("libcore"))
    planted = bytearray(victim.read_bytes())
    planted[len(planted) // 2] ^= 1  # same size, other bytes: a planted std
    victim.write_bytes(bytes(planted))
    assert not _intact(copy, again.key, SCALAR.target)
    assert not _intact(again.root, "0" * 64, SCALAR.target)  # another key's entry
    (copy / STAMP).unlink()
    assert not _intact(copy, again.key, SCALAR.target)  # no stamp: never finished

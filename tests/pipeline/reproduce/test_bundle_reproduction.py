"""Whole-bundle byte identity across clones, and assembling a release from handed-over lanes.

One real release per variation, reused by every assertion (building is slow):

  A  the session's built clone, released with its development key (`released_bundle`);
  B  a second clone at a deeper path, another HOME, umask 077, TZ, locale, and the wall
     clock shifted by Debian's `faketime` — built from scratch and released with A's key;
  C  a third clone that builds nothing: `release --from-records` of A's Wasm lanes and B's
     native lanes (`build --lane X --records-out DIR` in each).

A, B and C must be byte-identical: every file, the tarball and both signatures.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.lanebuild.stdbuild import CACHE_ENV as STD_CACHE_ENV
from pipeline.lanebuild.stdbuild import cache_root as std_cache_root
from pipeline.tree.lanes import load_lanes
from tests.clones import clone_head
from verify.bundle.trusted_keys import load_trusted_keys, trust_root_from_keys
from verify.bundle.verifier import BundleVerifier, Requirements

pytestmark = [pytest.mark.integration, pytest.mark.slow]
# faketime: 17 days and 5 hours later (another day and time of day). `-m`: the multi-threaded
# libfaketime (cargo and rustc run threads); FAKETIME_DONT_FAKE_MONOTONIC would break Python's
# timed waits (EINVAL from time.sleep), so the monotonic clock shifts too.
SHIFT = "+1486800"


def _tree(folder: Path) -> dict[str, tuple[str, int]]:
    """relative path -> (sha256, mode) of every file."""
    return {
        p.relative_to(folder).as_posix(): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mode & 0o777,
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _cli(
    clone: Path,
    *args: str,
    env: dict[str, str] | None = None,
    umask: int = 0o022,
    prefix: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(clone), **(env or {})}
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "pipeline.cli", *args],
        cwd=clone,
        env=full_env,
        capture_output=True,
        text=True,
        umask=umask,
    )
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _faketime() -> str:
    found = shutil.which("faketime")
    if found is None:
        pytest.fail(
            "Debian's `faketime` is not installed (.ci/run installs it): the "
            "time-of-day variation cannot run"
        )
    return found


@dataclass(frozen=True)
class Clones:
    a: Path
    b: Path
    c: Path
    bundle_a: Path
    bundle_b: Path
    bundle_c: Path
    home_b: Path
    seconds_b: float


@pytest.fixture(scope="module")
def clones(
    built_clone: Path, released_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> Clones:
    faketime = _faketime()
    key = built_clone / ".dev-keys" / "development.key.pem"
    lanes = load_lanes(built_clone / "manifests" / "lanes.toml").lane
    wasm = [arg for lane in lanes if lane.kind == "wasm" for arg in ("--lane", lane.id)]
    native = [arg for lane in lanes if lane.kind == "native" for arg in ("--lane", lane.id)]
    root = tmp_path_factory.mktemp("other-maintainer")
    b = clone_head(root / "home" / "bob" / "src" / "deeper" / "tinyrustlm", built_clone)
    home_b = root / "home" / "bob"
    shifted = {
        # Bob's own HOME, but the session's std cache: a std rebuilt from scratch in another
        # HOME (so another cache) is test_reproducible's rebuild; this one compares bundles.
        STD_CACHE_ENV: str(std_cache_root()),
        "HOME": str(home_b),
        "TZ": "Pacific/Kiritimati",
        "LANG": "de_DE.UTF-8",
        "LC_ALL": "de_DE.UTF-8",
    }
    started = time.monotonic()
    _cli(
        b,
        "release",
        "--key",
        str(key),
        "--key-class",
        "development",
        "--dist",
        str(root / "dist"),
        env=shifted,
        umask=0o077,
        prefix=(faketime, "-m", "-f", SHIFT),
    )
    seconds_b = time.monotonic() - started
    records = tmp_path_factory.mktemp("records")
    _cli(built_clone, "build", *wasm, "--records-out", str(records / "wasm-machine"))
    _cli(
        b,
        "build",
        *native,
        "--records-out",
        str(records / "native-machine"),
        env=shifted,
        umask=0o077,
    )
    c = clone_head(tmp_path_factory.mktemp("assembler") / "tinyrustlm", built_clone)
    _cli(
        c,
        "release",
        "--key",
        str(key),
        "--key-class",
        "development",
        "--dist",
        str(c.parent / "dist"),
        "--from-records",
        str(records / "wasm-machine"),
        str(records / "native-machine"),
    )
    name = released_bundle.name
    return Clones(
        built_clone,
        b,
        c,
        released_bundle,
        root / "dist" / name,
        c.parent / "dist" / name,
        home_b,
        seconds_b,
    )


def test_faketime_shifts_the_clock_it_wraps() -> None:
    """The control for the time-of-day variation: faketime really moves the wall clock."""
    done = subprocess.run(
        [_faketime(), "-m", "-f", SHIFT, "date", "+%s"], capture_output=True, text=True, check=True
    )
    assert int(done.stdout) - time.time() > 17 * 86400 + 5 * 3600 - 60


def test_two_maintainers_release_byte_identical_bundles(clones: Clones) -> None:
    one, two = _tree(clones.bundle_a), _tree(clones.bundle_b)
    assert len(one) >= 14
    assert one == two, sorted(k for k in one.keys() | two.keys() if one.get(k) != two.get(k))


def test_assembled_from_records_of_two_clones_is_the_same_bundle(clones: Clones) -> None:
    assert not (clones.c / "build" / "index.json").exists(), "the assembler built lanes itself"
    assert _tree(clones.bundle_c) == _tree(clones.bundle_a)


def test_no_builder_path_in_any_bundle_file(clones: Clones) -> None:
    for bundle in (clones.bundle_a, clones.bundle_b):
        for path in bundle.rglob("*"):
            if path.is_file() and not path.name.endswith((".gz", ".wasm")):
                data = path.read_bytes()
                for where in (clones.a, clones.b, clones.home_b, clones.b.parent):
                    assert str(where).encode() not in data, f"{path.name} names {where}"
    trusted = load_trusted_keys(clones.a / ".dev-keys/development.trusted-keys.json")
    requires = Requirements(now=int(time.time()), allow_dev_key=True)
    verdict = BundleVerifier(trust_root_from_keys(trusted)).verify(clones.bundle_b, requires)
    assert verdict.steps[9].title == "no builder paths in signed documents"

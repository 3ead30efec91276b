"""One release-version grammar, one table, two sides (issue 36): every row of
tests/release_versions.json is judged by the Python side (verify/formats/release_version.py, as
verify, publish, fetch and release use it) and by the loader (crates/wasm/js/trust.js, in node),
and both must give the row's verdict: the same order for every pair of `ordered`, the same
refusal for every `refused` version (as a manifest's version and as a floor)."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from pipeline.toolchain import nodejs
from pipeline.tree.sources import SourceError, project_version
from pipeline.tuf import errors as tuf_errors
from pipeline.tuf.releases import newest
from pipeline.tuf.releases import version_key as fetch_key
from verify.bundle.versions import version_key as verify_key
from verify.formats.release_version import RELEASE_VERSION_PATTERN, ReleaseVersion

REPO_ROOT = Path(__file__).resolve().parents[1]
TABLE = json.loads((REPO_ROOT / "tests/release_versions.json").read_text(encoding="utf-8"))
ORDERED: list[str] = TABLE["ordered"]
REFUSED: list[str] = [row["version"] for row in TABLE["refused"]]
TRUST_JS = REPO_ROOT / "crates/wasm/js/trust.js"
NODE_TIMEOUT_SECONDS = 120
_FIELD = TypeAdapter(ReleaseVersion)

# Runs the table through the loader: compareVersions on every pair, and checkVersionFloor (the
# loader's rollback floor) with each refused version as the manifest's version and as minVersion.
_NODE = """
import { readFileSync } from 'node:fs';
const [trustUrl, tablePath] = process.argv.slice(1);
const { compareVersions, checkVersionFloor } = await import(trustUrl);
const table = JSON.parse(readFileSync(tablePath, 'utf-8'));
const trustedKeys = { keys: [{ keyid: 'k' }] };
const code = async (f) => {
  try { await f(); return null; } catch (e) { return e.code || String(e); }
};
const floor = (minVersion, version) => checkVersionFloor({ trustedKeys, minVersion }, { version });
const out = { compare: [], floor: [], asVersion: {}, asFloor: {}, compareRefused: {} };
for (const a of table.ordered) for (const b of table.ordered) {
  out.compare.push(compareVersions(a, b));
  out.floor.push(await code(() => floor(a, b)));
}
for (const row of table.refused) {
  const v = row.version;
  out.asVersion[v] = await code(() => floor(null, v));
  out.asFloor[v] = await code(() => floor(v, '0.2.0'));
  out.compareRefused[v] = await code(() => compareVersions(v, '0.2.0'));
}
process.stdout.write(JSON.stringify(out));
"""


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@pytest.fixture(scope="module")
def loader() -> dict[str, Any]:
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", _NODE, "--",
         TRUST_JS.as_uri(), str(REPO_ROOT / "tests/release_versions.json")],
        capture_output=True, text=True, timeout=NODE_TIMEOUT_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_table_is_well_formed() -> None:
    assert len(set(ORDERED)) == len(ORDERED) and len(set(REFUSED)) == len(REFUSED)
    assert not set(ORDERED) & set(REFUSED)


def test_python_orders_every_pair_as_the_table() -> None:
    for i, a in enumerate(ORDERED):
        for j, b in enumerate(ORDERED):
            ka, kb = verify_key(a), verify_key(b)
            assert ka is not None and kb is not None, (a, b)
            assert _sign((ka > kb) - (ka < kb)) == _sign(i - j), (a, b)
            assert (fetch_key(a) < fetch_key(b)) == (i < j), (a, b)
        assert _FIELD.validate_python(a) == a
    shuffled = ORDERED[:]
    random.Random(36).shuffle(shuffled)
    assert sorted(shuffled, key=fetch_key) == ORDERED
    assert newest(shuffled) == ORDERED[-1]


@pytest.mark.parametrize("version", REFUSED, ids=[row["why"] for row in TABLE["refused"]])
def test_python_refuses_every_refused_row(version: str) -> None:
    assert verify_key(version) is None
    with pytest.raises(tuf_errors.VersionUnorderable):
        fetch_key(version)
    with pytest.raises(ValidationError):
        _FIELD.validate_python(version)


def test_the_loader_orders_every_pair_as_the_table(loader: dict[str, Any]) -> None:
    pairs = [(i, j) for i in range(len(ORDERED)) for j in range(len(ORDERED))]
    for (i, j), got, floor in zip(pairs, loader["compare"], loader["floor"], strict=True):
        a, b = ORDERED[i], ORDERED[j]
        assert got == _sign(i - j), (a, b, got)
        # minVersion a, the manifest's version b: a rollback exactly when b is older
        assert floor == ("Rollback" if j < i else None), (a, b, floor)


@pytest.mark.parametrize("version", REFUSED, ids=[row["why"] for row in TABLE["refused"]])
def test_the_loader_refuses_every_refused_row(loader: dict[str, Any], version: str) -> None:
    assert loader["asVersion"][version] == "BadManifest"
    assert loader["asFloor"][version] == "BadOptions"
    assert loader["compareRefused"][version] == "BadOptions"


def test_both_sides_keep_the_same_pattern() -> None:
    """The loader cannot read verify/'s module: its pattern is the same text."""
    js = TRUST_JS.read_text(encoding="utf-8")
    assert f"const VERSION = /{RELEASE_VERSION_PATTERN}/;" in js


@pytest.mark.parametrize(
    ("version", "refused"),
    [("0.2.0rc1", False), ("0.2.0", False), ("0.2.0-rc1", True), ("v0.2.0", True)],
    ids=["pre-release", "final", "semver pre-release", "leading v"],
)
def test_release_refuses_a_project_version_outside_the_grammar(
    tmp_path: Path, version: str, refused: bool
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\nversion = '{version}'\n")
    if not refused:
        assert project_version(tmp_path) == version
        return
    with pytest.raises(SourceError) as caught:
        project_version(tmp_path)
    assert caught.value.error_id == "tree.version"
    assert "not a release version" in str(caught.value)

"""issue 36, "Every read bounded": a malformed or hostile `pending/releases.json`, a repository's
`N.releases.json`, and fetch's cached metadata end in a typed refusal, never a traceback, a
hang or a read without end."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from tuf.api.metadata import Metadata

from pipeline.cli import main as release_main
from pipeline.documents.keys import KeyFiles, generate_key_files
from pipeline.publish.delegation import PENDING_DIR, delegate_releases
from pipeline.publish.publish import publish_bundle
from tests.harness.release import fake_report
from tests.harness.tuf import OLD, World


def _replace(path: Path, make: Callable[[Path], object]) -> None:
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    elif os.path.lexists(path):
        path.unlink()
    make(path)


def _timestamp_bytes(world: World) -> bytes:
    return (world.repo / "metadata" / "timestamp.json").read_bytes()


def _sparse(path: Path) -> None:
    with path.open("wb") as f:
        f.truncate(10 * 1000**3)


# name -> (how the file is made, the error id)
HOSTILE: dict[str, tuple[Callable[[Path, World], object], str]] = {
    "not json": (lambda p, w: p.write_bytes(b"{not json"), "pending.shape"),
    "empty object": (lambda p, w: p.write_bytes(b"{}"), "pending.shape"),
    "json array": (lambda p, w: p.write_bytes(b"[1, 2]"), "pending.shape"),
    "timestamp metadata": (lambda p, w: p.write_bytes(_timestamp_bytes(w)), "pending.shape"),
    "fifo": (lambda p, w: os.mkfifo(p), "input.not-regular-file"),
    "folder": (lambda p, w: p.mkdir(), "input.not-regular-file"),
    "link to /dev/zero": (lambda p, w: p.symlink_to("/dev/zero"), "input.not-regular-file"),
    "sparse 10 GB": (lambda p, w: _sparse(p), "input.too-large"),
}


def _pending(world: World, tmp: Path, threshold: int = 2) -> list[KeyFiles]:
    keys = [generate_key_files(tmp / "m", n, "release") for n in ("ann", "ben")]
    public = [k.public_pem for k in keys]
    delegate_releases(world.repo, world.keys, world.policy, public, threshold)
    trusted = world.bundles.trusted()
    bundle, key = world.bundles.paths[OLD], keys[0].private_pem
    publish_bundle(
        bundle,
        world.repo,
        world.keys,
        trusted,
        world.policy,
        derive=fake_report,
        maintainer_key=key,
    )
    return keys


@pytest.mark.parametrize(("make", "error_id"), HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_pending_release_is_refused_with_an_id(
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path, World], object],
    error_id: str,
) -> None:
    keys = _pending(world, tmp_path)
    pending = world.repo / PENDING_DIR / "releases.json"
    assert pending.is_file()
    _replace(pending, lambda p: make(p, world))
    repo = ["--repo", str(world.repo), "--keys", str(world.keys.keys)]
    trust = ["--trusted-keys", str(world.bundles.trusted_keys)]
    signer = ["--maintainer-key", str(keys[1].private_pem)]
    argv = ["repo", "sign-pending", *repo, *signer, *trust, "--json"]
    assert release_main(argv) != 0
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["id"] == error_id, err
    assert "Traceback" not in err


@pytest.mark.parametrize(("make", "error_id"), HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_releases_metadata_in_the_repository_is_refused(
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path, World], object],
    error_id: str,
) -> None:
    _pending(world, tmp_path, threshold=1)  # published at once: N.releases.json is served
    stored = max((world.repo / "metadata").glob("*.releases.json"))
    assert Metadata.from_bytes(stored.read_bytes()).signed.type == "targets"
    _replace(stored, lambda p: make(p, world))
    repo = ["--repo", str(world.repo), "--keys", str(world.keys.keys)]
    argv = ["repo", "refresh-timestamp", *repo, "--json"]
    assert release_main(argv) != 0
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["id"] == "repo.corrupt", err
    assert "Traceback" not in err


CACHED = {k: v for k, v in HOSTILE.items() if v[1].startswith("input.")}


@pytest.mark.parametrize("name", ["root.json", "timestamp.json", "releases.json"])
@pytest.mark.parametrize("make", [v[0] for v in CACHED.values()], ids=list(CACHED))
def test_fetch_refuses_hostile_cached_metadata(
    world: World, name: str, make: Callable[[Path, World], object]
) -> None:
    """python-tuf reads its cached metadata whole with open(): a FIFO hung `fetch`."""
    from pipeline.tuf import errors as e

    cached = world.tmp / "state" / "metadata"
    cached.mkdir(parents=True)
    make(cached / name, world)
    with pytest.raises(e.StateInvalid) as info:
        world.fetch()
    assert info.value.error_id == "fetch.state-invalid"
    assert name in (info.value.where or "")

"""The repository side: what publish refuses, what a killed publish leaves, the key layout."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.publish.keys import KEY_CLASS_FIELD, KeyFolders
from pipeline.publish.publish import publish_bundle
from pipeline.publish.repo import init_repository, refresh_timestamp, rotate_root
from pipeline.tuf import errors as e
from pipeline.tuf.policy import load_policy
from tests.harness.release import fake_report
from tests.harness.tuf import NEW, OLD, World

REPO_ROOT = Path(__file__).resolve().parents[3]


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_init_layout_keys_apart_and_labelled(world: World) -> None:
    metadata = sorted(p.name for p in (world.repo / "metadata").iterdir())
    assert metadata == ["1.root.json", "1.snapshot.json", "1.targets.json", "timestamp.json"]
    root = json.loads(world.mirror.file("metadata/1.root.json"))["signed"]
    assert root["consistent_snapshot"] is True
    for role in ("root", "targets", "snapshot", "timestamp"):
        (keyid,) = root["roles"][role]["keyids"]
        assert root["keys"][keyid]["keytype"] == "ed25519"
        assert root["keys"][keyid][KEY_CLASS_FIELD] == "development"
        (pem,) = world.keys.folder(role).glob("*.key.pem")
        assert pem.name == f"development.{keyid}.key.pem"
        assert pem.stat().st_mode & 0o777 == 0o600
    assert not (world.repo / "metadata").joinpath("..", "keys").exists()
    with pytest.raises(e.RepositoryExists):
        init_repository(world.repo, world.keys, world.policy, "development")


def test_expiry_follows_the_policy(world: World) -> None:
    now = datetime.now(UTC)
    policy = world.policy.with_overrides(["timestamp=0.5"])
    repo = init_repository(world.tmp / "r2", KeyFolders(world.tmp / "k2"), policy, "release", now)
    expected = {"root": 365, "targets": 365, "snapshot": 7, "timestamp": 0.5}
    for role, days in expected.items():
        delta = repo.expires[role] - now.replace(microsecond=0)
        assert delta == timedelta(days=days), role


@pytest.mark.parametrize(
    "override",
    ["timestamp", "bogus=1", "timestamp=soon", "timestamp=0", "snapshot=-1"],
    ids=["no-days", "unknown-role", "not-a-number", "zero", "negative"],
)
def test_bad_expiry_override_is_a_typed_error(override: str) -> None:
    with pytest.raises(e.PolicyInvalid):
        load_policy(overrides=[override])


def test_publish_refuses_a_bundle_that_does_not_verify(world: World, tmp_path: Path) -> None:
    bundle = tmp_path / f"tinyrustlm-{NEW}"
    shutil.copytree(world.bundles.paths[NEW], bundle)
    (bundle / "SHA256SUMS").write_bytes(b"0" * 64 + b"  manifest.json\n")
    before = _tree(world.repo)
    with pytest.raises(e.BundleNotVerified, match=r"checksums\.mismatch"):
        world.publish(bundle)
    assert _tree(world.repo) == before


@pytest.mark.parametrize(
    ("first", "second"), [(NEW, NEW), (NEW, OLD)], ids=["same-version", "older-version"]
)
def test_publish_refuses_a_version_not_newer(world: World, first: str, second: str) -> None:
    world.publish(first)
    before = _tree(world.repo)
    with pytest.raises(e.VersionNotNewer):
        world.publish(second)
    assert _tree(world.repo) == before


def test_publish_refuses_a_repository_whose_metadata_was_tampered(world: World) -> None:
    path = world.repo / "metadata" / "timestamp.json"
    doc = json.loads(path.read_bytes())
    doc["signed"]["expires"] = "2099-01-01T00:00:00Z"
    path.write_text(json.dumps(doc))
    with pytest.raises(e.RepositoryCorrupt, match="timestamp"):
        world.publish(NEW)


def test_publish_without_the_online_keys_is_a_typed_error(world: World) -> None:
    with pytest.raises(e.KeyMissing, match="targets"):
        world.publish(NEW, keys=KeyFolders(world.tmp / "empty-keys"))


# A publish killed with SIGKILL the moment it is about to replace timestamp.json: every new
# target, targets and snapshot file is already on disk, but no client can see them yet.
_KILLED_PUBLISH = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import pipeline.publish.repo as repo
    from pipeline.publish.keys import KeyFolders
    from pipeline.tuf.policy import load_policy
    from pipeline.publish.publish import publish_bundle
    from tests.harness.release import fake_report
    from verify.bundle.trusted_keys import load_trusted_keys

    real = repo.write_atomic
    def write_then_die(path, data, mode=0o644):
        if path.name == "timestamp.json":
            os.kill(os.getpid(), signal.SIGKILL)
        real(path, data, mode)
    repo.write_atomic = write_then_die
    bundle, repo_dir, keys, trusted = map(Path, sys.argv[1:])
    publish_bundle(bundle, repo_dir, KeyFolders(keys), load_trusted_keys(trusted),
                   load_policy(), derive=fake_report)
    """
)


def test_killed_publish_leaves_the_previous_repository_servable(world: World) -> None:
    world.publish(OLD)
    timestamp = world.mirror.file("metadata/timestamp.json")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _KILLED_PUBLISH,
            str(world.bundles.paths[NEW]),
            str(world.repo),
            str(world.keys.keys),
            str(world.bundles.trusted_keys),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (world.repo / "metadata" / "3.snapshot.json").is_file()  # it got that far
    assert world.mirror.file("metadata/timestamp.json") == timestamp
    assert world.fetch().verdict.version == OLD  # clients still see the previous state
    world.publish(NEW)  # and the next publish completes over the leftovers
    assert world.fetch(out="after").verdict.version == NEW


def test_publish_never_needs_the_root_key(world: World) -> None:
    """With the root key kept elsewhere (--root-keys), publish and refresh still work."""
    online = world.tmp / "online-keys"
    offline = world.tmp / "offline-root"
    repo = world.tmp / "r3"
    init_repository(repo, KeyFolders(online, offline), world.policy, "release")
    assert not (online / "root").exists() and len(list(offline.glob("*.key.pem"))) == 1
    publish_keys = KeyFolders(online)
    refresh_timestamp(repo, publish_keys, world.policy)
    done = publish_bundle(
        world.bundles.paths[NEW],
        repo,
        publish_keys,
        world.bundles.trusted(),
        world.policy,
        derive=fake_report,
    )
    assert done.repo.key_class == "release"
    with pytest.raises(e.KeyMissing, match="root"):
        rotate_root(repo, publish_keys, world.policy)
    assert rotate_root(repo, KeyFolders(online, offline), world.policy).versions["root"] == 2

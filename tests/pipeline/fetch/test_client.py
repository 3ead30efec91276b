"""What a client must accept: a valid root rotation, --latest, an allowed downgrade, a
repository that only refreshed its timestamp; and what it remembers between runs."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from pipeline.fetch.client import fetch_release
from pipeline.fetch.statedir import default_state_folder, legacy_state_folder
from pipeline.publish.repo import DiskRepository, now_utc, refresh_timestamp, rotate_root
from pipeline.tuf import errors as e
from pipeline.tuf.releases import release_target
from tests.harness.release import fake_report
from tests.harness.tuf import NEW, OLD, World, entries


def _root(world: World, version: int) -> dict[str, object]:
    doc: dict[str, object] = json.loads(
        (world.repo / "metadata" / f"{version}.root.json").read_bytes()
    )["signed"]
    return doc


def test_valid_root_rotation_is_followed(world: World) -> None:
    world.publish(OLD)
    world.fetch(out="first")  # this client trusts root v1
    old_keyids = _root(world, 1)["roles"]["root"]["keyids"]  # type: ignore[index]
    summary = rotate_root(world.repo, world.keys, world.policy)
    assert summary.versions["root"] == 2
    new_keyids = _root(world, 2)["roles"]["root"]["keyids"]  # type: ignore[index]
    assert new_keyids != old_keyids and len(new_keyids) == 1
    # root v2 carries signatures of the old and the new root key
    signed_by = {
        s["keyid"] for s in json.loads(world.mirror.file("metadata/2.root.json"))["signatures"]
    }
    assert signed_by == {*old_keyids, *new_keyids}
    # the retired private key left the active root folder
    assert [p.name.split(".")[1] for p in world.keys.folder("root").glob("*.key.pem")] == new_keyids
    world.publish(NEW)
    done = world.fetch(version=NEW)  # the same client, still bootstrapped with root v1
    assert done.verdict.version == NEW
    history = world.tmp / "state" / "metadata" / "root_history" / "2.root.json"
    assert history.read_bytes() == world.mirror.file("metadata/2.root.json")
    # a new client holding only root v1 follows the chain too
    assert world.fetch(out="fresh", state="fresh-state").verdict.version == NEW


def test_latest_picks_the_newest_release(world: World) -> None:
    world.publish(OLD)
    world.publish(NEW)
    assert world.fetch().verdict.version == NEW


def test_downgrade_is_refused_across_runs_unless_allowed(world: World) -> None:
    world.publish(OLD)
    world.publish(NEW)
    world.fetch(out="a", version=NEW)
    with pytest.raises(e.DowngradeRefused):
        world.fetch(out="b", version=OLD)
    assert entries(world.tmp / "b") == []
    done = world.fetch(out="b", version=OLD, allow_downgrade=True)
    assert done.verdict.version == OLD
    state = json.loads((world.tmp / "state" / "fetch-state.json").read_bytes())
    assert state["newest_version"] == NEW  # a downgrade never lowers what was seen


def test_unknown_version_names_the_published_ones(world: World) -> None:
    world.publish(OLD)
    with pytest.raises(e.ReleaseNotFound, match=r"published: 9\.9\.8"):
        world.fetch(version="1.0.0")


def test_refreshed_timestamp_is_accepted_by_a_client_that_saw_the_old_one(world: World) -> None:
    world.publish(NEW)
    world.fetch(out="a")
    before = world.init.versions
    summary = refresh_timestamp(world.repo, world.keys, world.policy)
    assert summary.versions["timestamp"] == before["timestamp"] + 2  # publish, then refresh
    assert summary.versions["targets"] == before["targets"] + 1  # content unchanged
    assert world.fetch(out="b").verdict.version == NEW


def test_state_folder_defaults_to_a_per_user_state_folder_keyed_by_url(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    a = default_state_folder("https://mirror.example/repo")
    assert a == default_state_folder("https://mirror.example/repo/")
    assert a != default_state_folder("https://other.example/repo")
    assert a.parent == tmp_path / "state" / "tinyrustlm-release" / "fetch"
    assert legacy_state_folder("https://mirror.example/repo").parent == (
        tmp_path / "cache" / "tinyrustlm-release" / "fetch"
    )


def _default_state(world: World, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(world.tmp / "xdg-cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(world.tmp / "xdg-state"))
    return legacy_state_folder(world.mirror.url), default_state_folder(world.mirror.url)


def test_clearing_the_cache_keeps_the_rollback_floor(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, state = _default_state(world, monkeypatch)
    world.publish(OLD)
    world.publish(NEW)
    world.fetch(out="a", state=None)  # the default state folder: NEW is the floor
    assert (state / "fetch-state.json").is_file() and not cache.exists()
    shutil.rmtree(world.tmp / "xdg-cache", ignore_errors=True)  # a cache cleaner runs
    with pytest.raises(e.DowngradeRefused):
        world.fetch(out="b", state=None, version=OLD)


def test_an_old_state_folder_in_the_cache_is_moved_and_keeps_its_floor(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, state = _default_state(world, monkeypatch)
    world.publish(OLD)
    world.publish(NEW)
    world.fetch(out="a", state=cache)  # what a 0.1 client left in the cache folder
    said: list[str] = []
    with pytest.raises(e.DowngradeRefused):
        fetch_release(
            world.request(out="b", state=None, version=OLD),
            world.policy,
            now=int(time.time()),
            derive=fake_report,
            say=said.append,
        )
    assert not cache.exists()
    assert json.loads((state / "fetch-state.json").read_bytes())["newest_version"] == NEW
    assert (state / "metadata" / "root.json").is_file()
    assert any(line.startswith("moved      fetch state") for line in said), said


def test_a_new_state_folder_wins_over_an_old_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, state = _default_state(world, monkeypatch)
    world.publish(OLD)
    world.fetch(out="a", state=cache)
    world.publish(NEW)
    world.fetch(out="b", state=None)  # moves the old folder, then records NEW
    (cache / "stale").mkdir(parents=True)  # an old folder reappears: it is left alone
    assert world.fetch(out="c", state=None).verdict.version == NEW
    assert (cache / "stale").is_dir()
    assert json.loads((state / "fetch-state.json").read_bytes())["newest_version"] == NEW


def test_a_bad_trusted_root_is_a_typed_error(world: World) -> None:
    bad = world.tmp / "root.json"
    bad.write_text('{"signed": {}}')
    with pytest.raises(e.RootUnreadable):
        world.fetch(root=bad)
    with pytest.raises(e.RootUnreadable):
        world.fetch(root=world.tmp / "missing.json")


def test_an_unsafe_target_path_is_refused_even_when_signed(world: World) -> None:
    """Defence in depth: a repository owner (not just a mirror) cannot write outside --out."""
    world.publish(NEW)
    repo = DiskRepository.load(world.repo, world.keys, world.policy, now_utc())
    build_id = repo.releases()[NEW].build_id
    with repo.edit_targets() as targets:
        bad = release_target("tinyrustlm", NEW, build_id, "../../escaped", b"x")
        targets.targets[bad.path] = bad
    repo.do_snapshot()
    repo.do_timestamp()
    sha = bad.hashes["sha256"]
    for served in (world.repo / f"{sha}.escaped", world.repo / "targets" / f"{sha}.escaped"):
        served.write_bytes(b"x")  # wherever `..` lands, the mirror has the bytes
    with pytest.raises(e.TargetPathInvalid):
        world.fetch()
    assert entries(world.tmp / "out") == []
    assert not (world.tmp / "escaped").exists()

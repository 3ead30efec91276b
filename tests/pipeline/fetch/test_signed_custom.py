"""The signed TUF `custom` fields of each target, compared on their own (issue 26).

The repository owner publishes the genuine 9.9.9 bundle bytes (TUF hashes and lengths right,
every metadata role validly signed, the bundle's own signatures valid) but with `custom`
fields (pipeline/tuf/releases.py) that disagree with the bundle: the client must refuse the
release although everything else verifies. A control publishes the same way with the true
fields and is fetched.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pipeline.publish.repo import DiskRepository, now_utc, write_targets
from pipeline.tuf import errors as e
from pipeline.tuf.releases import release_target, target_path
from tests.harness.tuf import NEW, World, entries
from verify.bundle.layout import MANIFEST
from verify.formats.manifest import ModuleManifest

OTHER_BUILD_ID = "0" * 64


def _bundle_files(bundle: Path) -> dict[str, bytes]:
    return {
        p.relative_to(bundle).as_posix(): p.read_bytes()
        for p in sorted(bundle.rglob("*"))
        if p.is_file()
    }


def _build_id(bundle: Path) -> str:
    return ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes()).build_id


def _publish_claiming(
    w: World, version: str, build_id: str, odd: tuple[str, str] | None = None
) -> None:
    """Publish 9.9.9's bytes as targets `<prefix>/<version>/...` whose signed custom says
    (`version`, `build_id`); `odd` = (file, build id) gives one file another build id."""
    files = _bundle_files(w.bundles.paths[NEW])
    prefix = w.policy.target_prefix
    repo = DiskRepository.load(w.repo, w.keys, w.policy, now_utc())
    write_targets(
        repo,
        {
            target_path(prefix, version, rel): (hashlib.sha256(data).hexdigest(), data)
            for rel, data in files.items()
        },
    )
    with repo.edit_targets() as targets:
        for rel, data in files.items():  # sorted: `odd` is never the first one read
            claimed = odd[1] if odd is not None and rel == odd[0] else build_id
            target = release_target(prefix, version, claimed, rel, data)
            targets.targets[target.path] = target
    repo.do_snapshot()
    repo.do_timestamp()


def test_control_true_custom_fields_are_fetched(world: World) -> None:
    bundle = world.bundles.paths[NEW]
    _publish_claiming(world, NEW, _build_id(bundle))
    fetched = world.fetch()
    assert (fetched.verdict.version, fetched.verdict.build_id) == (NEW, _build_id(bundle))


def test_a_signed_build_id_other_than_the_bundles_is_refused(world: World) -> None:
    _publish_claiming(world, NEW, OTHER_BUILD_ID)
    with pytest.raises(e.FetchedBundleRejected) as caught:
        world.fetch()
    assert "build" in caught.value.message and OTHER_BUILD_ID[:16] in caught.value.message
    assert entries(world.tmp / "out") == []


def test_a_signed_version_other_than_the_bundles_is_refused(world: World) -> None:
    """The 9.9.9 bundle published as 9.9.10 (paths and custom version agree with each other,
    the build id is the bundle's): only the bundle's own version says otherwise."""
    _publish_claiming(world, "9.9.10", _build_id(world.bundles.paths[NEW]))
    with pytest.raises(e.FetchedBundleRejected) as caught:
        world.fetch()
    assert "9.9.10" in caught.value.message
    assert entries(world.tmp / "out") == []


def test_one_target_of_another_build_is_refused(world: World) -> None:
    """Every file but the last names the bundle's build id; the last names another. The bytes
    are the genuine ones, so only the per-target custom comparison can see it."""
    bundle = world.bundles.paths[NEW]
    last = sorted(_bundle_files(bundle))[-1]
    _publish_claiming(world, NEW, _build_id(bundle), odd=(last, OTHER_BUILD_ID))
    with pytest.raises(e.MetadataInvalid) as caught:
        world.fetch()
    assert caught.value.where.endswith(last)
    assert entries(world.tmp / "out") == []

"""Where `fetch` puts a bundle (issue 26): a repeat fetch of the installed release downloads
nothing; --force replaces atomically (a kill never leaves --out without the bundle, and the
hidden folder it leaves is cleared by the next fetch); a link or a file at the bundle's place,
a bad --out or --state, an unreadable --root or a server that is down are typed errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.io.swap import FAULT_ENV
from pipeline.tuf import errors as e
from tests.harness.tuf import NEW, OLD, World, entries

REPO_ROOT = Path(__file__).resolve().parents[3]


def _target_requests(world: World) -> list[str]:
    return [p for p in world.mirror.requests if p.startswith("/targets/")]


def test_a_repeat_fetch_of_the_installed_release_downloads_nothing(world: World) -> None:
    world.publish(NEW)
    first = world.fetch()
    assert not first.up_to_date and len(_target_requests(world)) == first.verdict.files
    world.mirror.requests.clear()
    again = world.fetch()  # --latest, same --out
    assert again.up_to_date and again.bundle == first.bundle
    assert (again.verdict.version, again.verdict.build_id) == (NEW, first.verdict.build_id)
    assert _target_requests(world) == []
    assert entries(world.tmp / "out")[0] == f"tinyrustlm-{NEW}"


def test_a_damaged_installed_release_is_replaced_only_with_force(world: World) -> None:
    world.publish(NEW)
    bundle = world.fetch().bundle
    (bundle / "manifest.json").write_bytes(b"{}")
    with pytest.raises(e.OutputExists, match="fails `verify bundle`"):
        world.fetch()
    done = world.fetch(force=True)
    assert not done.up_to_date
    assert world.fetch().up_to_date  # the replacement is whole and verifies
    assert [p for p in entries(world.tmp / "out") if "/" not in p] == [f"tinyrustlm-{NEW}"]


def test_force_into_an_empty_output_installs_the_release(world: World) -> None:
    """--force with nothing to replace is a plain install (no exchange with a missing folder)."""
    world.publish(NEW)
    done = world.fetch(force=True)
    assert not done.up_to_date
    assert done.bundle == world.tmp / "out" / f"tinyrustlm-{NEW}"
    assert (done.verdict.version, done.verdict.files) == (NEW, len(_target_requests(world)))
    assert [p for p in entries(world.tmp / "out") if "/" not in p] == [f"tinyrustlm-{NEW}"]
    assert world.fetch().up_to_date  # what --force installed is whole and verifies


def _link_to_a_folder(place: Path, world: World) -> None:
    elsewhere = world.tmp / "elsewhere"
    elsewhere.mkdir()
    place.symlink_to(elsewhere)


def _dangling_link(place: Path, world: World) -> None:
    place.symlink_to(world.tmp / "nowhere")


def _a_file(place: Path, world: World) -> None:
    place.write_bytes(b"not a bundle")


def _what_is_at(place: Path) -> str | bytes:
    return str(place.readlink()) if place.is_symlink() else place.read_bytes()


PLACES: list[Callable[[Path, World], None]] = [_link_to_a_folder, _dangling_link, _a_file]


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("occupy", PLACES, ids=[f.__name__.strip("_") for f in PLACES])
def test_a_link_or_file_at_the_bundle_place_is_refused_before_any_download(
    world: World, occupy: Callable[[Path, World], None], force: bool
) -> None:
    world.publish(NEW)
    place = world.tmp / "out" / f"tinyrustlm-{NEW}"
    place.parent.mkdir()
    occupy(place, world)
    before = _what_is_at(place)
    with pytest.raises(e.OutputInvalid) as info:
        world.fetch(force=force)
    assert "error[fetch.output-invalid]" in info.value.diagnostics() and info.value.hint
    assert _target_requests(world) == []
    assert _what_is_at(place) == before  # untouched
    elsewhere = world.tmp / "elsewhere"
    assert not elsewhere.exists() or list(elsewhere.iterdir()) == []  # nothing written through
    assert [p.name for p in place.parent.iterdir()] == [place.name]  # no hidden folder left


_KILLED_FETCH = """
import sys, time
from pathlib import Path
from pipeline.fetch.client import FetchRequest, fetch_release
from pipeline.tuf.policy import load_policy
from tests.harness.release import fake_report
url, root, out, keys, state = sys.argv[1:]
request = FetchRequest(url=url, root=Path(root), out=Path(out), trusted_keys=Path(keys),
                       version=None, state=Path(state), force=True)
fetch_release(request, load_policy(), now=int(time.time()), derive=fake_report)
"""


def test_a_kill_during_force_leaves_a_complete_bundle_and_the_next_fetch_clears_up(
    world: World,
) -> None:
    world.publish(NEW)
    world.fetch()
    out = world.tmp / "out"
    argv = [sys.executable, "-c", _KILLED_FETCH, world.mirror.url, str(world.root_v1), str(out),
            str(world.bundles.trusted_keys), str(world.tmp / "state")]  # fmt: skip
    env = {**os.environ, FAULT_ENV: "fetch.exchanged"}
    killed = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, timeout=300)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    names = sorted(p.name for p in out.iterdir())
    assert names[-1] == f"tinyrustlm-{NEW}"  # never missing: exchanged in one step
    assert len(names) == 2 and names[0].startswith(".fetch-")  # the old bundle, for cleanup
    again = world.fetch()  # the bundle in place is whole: up to date
    assert again.up_to_date
    assert sorted(p.name for p in out.iterdir()) == [f"tinyrustlm-{NEW}"]


def _occupied_by_a_file(world: World, name: str) -> Path:
    path = world.tmp / name
    path.write_bytes(b"a file")
    return path


def test_a_bad_out_or_state_is_a_typed_error(world: World) -> None:
    world.publish(OLD)
    with pytest.raises(e.OutputInvalid, match="--out"):
        world.fetch(out=str(_occupied_by_a_file(world, "outfile").name))
    with pytest.raises(e.StateInvalid, match="--state"):
        world.fetch(state=str(_occupied_by_a_file(world, "statefile").name))
    inside = _occupied_by_a_file(world, "parentfile") / "sub"
    with pytest.raises(e.OutputInvalid, match="--out"):
        world.fetch(out=str(inside.relative_to(world.tmp)))


def test_a_fifo_or_device_as_root_is_refused_without_reading(world: World) -> None:
    fifo = world.tmp / "root.fifo"
    os.mkfifo(fifo)
    for root in (fifo, Path("/dev/zero")):
        result: list[BaseException] = []

        def attempt(root: Path = root, result: list[BaseException] = result) -> None:
            try:
                world.fetch(root=root)
            except BaseException as exc:  # handed to the main thread
                result.append(exc)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), f"fetch --root {root} hangs"
        assert isinstance(result[0], e.RootUnreadable), result
        assert "input.not-regular-file" in result[0].message


def test_a_server_that_is_down_is_named(world: World) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(e.DownloadFailed) as info:
        world.fetch(url=f"http://127.0.0.1:{port}")
    assert "Connection refused" in info.value.message, info.value.diagnostics()

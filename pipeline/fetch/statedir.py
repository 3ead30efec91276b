"""Where `fetch` keeps what must survive between runs: TUF's trusted metadata and the newest
version fetched (the rollback floor).

That is state, not cache: clearing a cache folder must not erase the floor. So the default is
the per-user state folder (platformdirs `user_state_dir`: `$XDG_STATE_HOME` or
`~/.local/state` on Linux), keyed by the repository URL. Releases up to 0.1 kept it under the
per-user cache folder; the first fetch that finds such an old folder (and no new one) moves it,
and says so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import platformdirs

from pipeline.tuf import errors as e
from verify.inputs import LIMITS, kind_of

APP = "tinyrustlm-release"


def _key(url: str) -> str:
    return hashlib.sha256(url.rstrip("/").encode("utf-8")).hexdigest()[:16]


def default_state_folder(url: str) -> Path:
    """The per-user state folder keyed by the repository URL."""
    return Path(platformdirs.user_state_dir(APP)) / "fetch" / _key(url)


def legacy_state_folder(url: str) -> Path:
    """Where releases up to 0.1 kept it: the per-user cache folder (cleared by cache cleaners)."""
    return Path(platformdirs.user_cache_dir(APP)) / "fetch" / _key(url)


def migrate_legacy_state(url: str, say: Callable[[str], None]) -> Path:
    """The default state folder, after moving an old one from the cache folder into it.

    An old folder is moved only when no new one exists (a new one always wins: it is what the
    last run trusted); across file systems it is copied, then the old one removed. A link in
    either place is refused, never followed.
    """
    new, old = default_state_folder(url), legacy_state_folder(url)
    for place in (new, old):
        if place.is_symlink():
            raise e.StateInvalid(
                "the fetch state folder is a symbolic link: refusing to follow it",
                where=str(place),
            )
    if new.exists() or not old.is_dir():
        return new
    new.parent.mkdir(parents=True, exist_ok=True)
    try:
        old.rename(new)
    except OSError:
        staging = new.with_name(f".{new.name}.moving")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            shutil.copytree(old, staging, symlinks=True)
            staging.rename(new)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise e.StateInvalid(
                f"cannot move the old fetch state folder {old} here: {exc}", where=str(new)
            ) from exc
        shutil.rmtree(old, ignore_errors=True)
    say(f"moved      fetch state from the cache folder {old} to the state folder {new}")
    return new


ROOT_HISTORY = "root_history"  # python-tuf's folder of every root it trusted


def check_cached_metadata(folder: Path) -> None:
    """Refuse TUF's cached metadata in `folder` unless every file is a regular file within
    `verify.inputs.LIMITS["tuf-metadata"]`: python-tuf reads them whole with `open()`, so a FIFO
    would hang `fetch` and `/dev/zero` (a link to it) or a huge file would fill memory. python-tuf
    itself keeps `root_history/N.root.json` and links `root.json` to one of them: a link is
    followed only to a regular file inside `folder`."""
    if not folder.is_dir():
        return
    inside = folder.resolve()
    for entry in sorted(folder.rglob("*")):
        target = entry.resolve() if entry.is_symlink() else entry
        mode = target.lstat().st_mode if os.path.lexists(target) else 0
        if stat.S_ISDIR(mode) and not entry.is_symlink() and entry == folder / ROOT_HISTORY:
            continue  # python-tuf's own folder: its files are walked too
        if entry.is_symlink() and not target.is_relative_to(inside):
            raise e.StateInvalid(
                "cached TUF metadata links out of the state folder", where=str(entry)
            )
        if not stat.S_ISREG(mode):
            raise e.StateInvalid(
                f"cached TUF metadata is {kind_of(mode) if mode else 'a dangling link'}, "
                "not a regular file",
                where=str(entry),
            )
        if target.lstat().st_size > LIMITS["tuf-metadata"]:
            raise e.StateInvalid(
                f"cached TUF metadata is larger than the limit of {LIMITS['tuf-metadata']} bytes",
                where=str(entry),
            )

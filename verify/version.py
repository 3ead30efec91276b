"""`--version` of both command lines: the distribution's version and the source revision.

The revision is the first of: the `REVISION` file the slim verifier's wheel carries beside
this module (slim_verifier/wheel_backend.py writes it); the commit pip recorded when it
installed from a git URL (`direct_url.json`, PEP 610); `git rev-parse HEAD` of the checkout
the package is imported from (an editable install); else "unknown".
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

REVISION_FILE = Path(__file__).with_name("REVISION")
# The distributions that may hold this code: the slim verifier first, then the whole project.
DISTRIBUTIONS = ("tinyrustlm-verify", "tinyrustlm-release")


def _installed(names: Sequence[str]) -> metadata.Distribution | None:
    for name in names:
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def git_head(checkout: Path) -> str | None:
    """`git rev-parse HEAD` of a checkout, or None (standard library only: the slim wheel's
    build backend loads this module by path to stamp the wheel's revision)."""
    if not (checkout / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    head = done.stdout.strip()
    return head if done.returncode == 0 and head else None


def revision(package_dir: Path, dist: metadata.Distribution | None) -> str:
    if REVISION_FILE.is_file() and package_dir == REVISION_FILE.parent:
        return REVISION_FILE.read_text(encoding="ascii").strip() or "unknown"
    if dist is not None:
        direct = dist.read_text("direct_url.json")
        if direct:
            commit = json.loads(direct).get("vcs_info", {}).get("commit_id")
            if isinstance(commit, str) and commit:
                return commit
    return git_head(package_dir.parent) or "unknown"


def version_text(prog: str, package_dir: Path, distributions: Sequence[str]) -> str:
    """`PROG VERSION (revision REV)`."""
    dist = _installed(distributions)
    version = dist.version if dist is not None else "(source tree)"
    return f"{prog} {version} (revision {revision(package_dir, dist)})"


class VersionAction(argparse.Action):
    """`--version`, computed only when asked (it may run git)."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        *,
        package_dir: Path,
        distributions: Sequence[str],
        help: str = "print the version and source revision, then exit",
    ) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, help=help)
        self.package_dir = package_dir
        self.distributions = tuple(distributions)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(version_text(parser.prog, self.package_dir, self.distributions))
        parser.exit()


def add_version_argument(
    parser: argparse.ArgumentParser, package_dir: Path, distributions: Sequence[str]
) -> None:
    parser.add_argument(
        "--version", action=VersionAction, package_dir=package_dir, distributions=distributions
    )

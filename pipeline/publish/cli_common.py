"""Arguments shared by `repo`, `publish` and `fetch`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pipeline.publish.keys import KeyFolders
from pipeline.publish.repo import RepoSummary
from pipeline.tuf.errors import RepositoryNotFolder


def add_repo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, required=True, metavar="DIR", help="TUF repository")
    parser.add_argument(
        "--keys",
        type=Path,
        required=True,
        metavar="DIR",
        help="the repository's key folder (one sub-folder per role)",
    )
    parser.add_argument(
        "--root-keys",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the offline root key lives (default: KEYS/root)",
    )
    parser.add_argument(
        "--expiry",
        action="append",
        default=[],
        metavar="ROLE=DAYS",
        help="override pipeline/publish/repository.toml's expiry for a role (repeatable)",
    )


def key_folders(args: argparse.Namespace) -> KeyFolders:
    """The key folders; --root-keys, when it exists, must be a folder even where it is not
    read (an offline key is never looked for in a FIFO, a device or a file)."""
    root = args.root_keys
    if root is not None and os.path.lexists(root) and (root.is_symlink() or not root.is_dir()):
        raise RepositoryNotFolder("--root-keys is not a folder", where=str(root))
    return KeyFolders(args.keys, root)


def summary_result(summary: RepoSummary) -> dict[str, object]:
    """A repository's state for --json: each role's version and expiry, its keys' class."""
    return {
        "repo": str(summary.path),
        "versions": dict(summary.versions),
        "expires": {
            role: at.strftime("%Y-%m-%dT%H:%M:%SZ") for role, at in summary.expires.items()
        },
        "key_class": summary.key_class,
    }


def print_summary(summary: RepoSummary) -> None:
    for role, version in summary.versions.items():
        expires = summary.expires[role].strftime("%Y-%m-%dT%H:%M:%SZ")
        print(f"{role:<10} v{version:<4} expires {expires}")
    print(f"keys       {summary.key_class}")

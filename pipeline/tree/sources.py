"""Facts about the source tree a release is made from: git revision, commit time, crates,
the pinned Python dependencies. Read-only; every function names the file it could not use.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from packaging.requirements import InvalidRequirement, Requirement

from pipeline import paths
from pipeline.errors import CheckFailed, TabledError
from pipeline.io.digest import sha256_file
from pipeline.io.process import git
from verify.errors import VerifyError
from verify.formats.release_version import RELEASE_VERSION_TEXT, release_version_key
from verify.inputs import read_regular_file


class SourceError(TabledError):
    """The source tree cannot be read: Cargo.toml or pyproject.toml (git: `io.process.git`)."""

    table: ClassVar[Mapping[str, str]] = {
        "tree.cargo-package": "give every crate's Cargo.toml a [package] name",
        "tree.version": (
            "set [project].version in pyproject.toml to MAJOR.MINOR.PATCH, optionally followed "
            "by aN, bN or rcN (verify/formats/release_version.py)"
        ),
        "tree.toml-invalid": "fix the TOML file named in `where` (it must be readable UTF-8 TOML)",
    }


class TreeDirty(CheckFailed):
    """Tracked files differ from HEAD."""

    error_id = "tree.dirty"
    default_hint = "commit or drop the changes (or pass --allow-dirty for a local trial)"


@dataclass(frozen=True)
class GitFacts:
    revision: str
    commit_time: int  # committer time of HEAD: the release's SOURCE_DATE_EPOCH
    dirty: bool  # tracked files differ from HEAD


@dataclass(frozen=True)
class CrateSource:
    name: str
    version: str
    path: str  # relative to the repo root
    sha256: str  # tree digest, see `tree_digest`
    license: str = ""  # its Cargo.toml SPDX expression ("" when it declares none)


@dataclass(frozen=True)
class PythonRequirement:
    name: str
    version: str


def git_facts(repo_root: Path) -> GitFacts:
    revision = git(repo_root, "rev-parse", "HEAD").strip()
    commit_time = int(git(repo_root, "log", "-1", "--format=%ct", "HEAD").strip())
    dirty = bool(git(repo_root, "status", "--porcelain", "--untracked-files=no").strip())
    return GitFacts(revision, commit_time, dirty)


def tracked_files(repo_root: Path, folder: str) -> list[str]:
    out = git(repo_root, "ls-files", "-z", "--", folder)
    return sorted(p for p in out.split("\0") if p)


def tree_digest(repo_root: Path, paths: list[str]) -> str:
    """SHA-256 over `path NUL sha256(bytes) LF` for each path, sorted by path."""
    outer = hashlib.sha256()
    for rel in sorted(paths):
        inner = sha256_file(repo_root / rel)
        outer.update(f"{rel}\0{inner}\n".encode())
    return outer.hexdigest()


def crate_sources(repo_root: Path) -> list[CrateSource]:
    """Every crate under crates/ (its Cargo.toml [package]) with a digest of its tracked files."""
    crates_dir = repo_root / paths.CRATES_DIR
    workspace_version = workspace_license = ""
    root_toml = crates_dir / "Cargo.toml"
    if root_toml.is_file():
        workspace = _toml(root_toml).get("workspace", {})
        workspace_version = str(workspace.get("package", {}).get("version", ""))
        workspace_license = str(workspace.get("package", {}).get("license", ""))
    found: list[CrateSource] = []
    for toml_path in sorted(crates_dir.glob("*/Cargo.toml")):
        package = _toml(toml_path).get("package")
        if not isinstance(package, dict) or "name" not in package:
            raise SourceError(
                "no [package] name", where=str(toml_path), error_id="tree.cargo-package"
            )
        version = package.get("version", "")
        if isinstance(version, dict):  # version.workspace = true
            version = workspace_version
        license = package.get("license", "")
        if isinstance(license, dict):  # license.workspace = true
            license = workspace_license
        rel = toml_path.parent.relative_to(repo_root).as_posix()
        found.append(
            CrateSource(
                str(package["name"]),
                str(version),
                rel,
                tree_digest(repo_root, tracked_files(repo_root, rel)),
                str(license),
            )
        )
    return found


def locked_requirements(path: Path) -> list[PythonRequirement]:
    """The `name==version` rows of a hash-locked requirements file (uv/pip-compile output),
    each parsed by `packaging`; a row is one logical line (backslash continuations joined)
    without its `--hash` options and comment. Option lines and rows that pin no exact
    version are not part of the closure and are skipped."""
    rows = []
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        spec = line.split(" #", 1)[0].split(" --", 1)[0].strip()
        if not spec or spec.startswith(("#", "-")):
            continue
        try:
            requirement = Requirement(spec)
        except InvalidRequirement:
            continue
        pins = [s.version for s in requirement.specifier if s.operator == "=="]
        if len(pins) == 1:
            rows.append(PythonRequirement(requirement.name.lower(), pins[0]))
    return sorted(set(rows), key=lambda r: (r.name, r.version))


def python_requirements(repo_root: Path) -> list[PythonRequirement]:
    """The hash-locked Python closure (requirements.lock): name==version rows."""
    path = repo_root / paths.REQUIREMENTS_LOCK
    return locked_requirements(path) if path.is_file() else []


def project_version(repo_root: Path) -> str:
    path = repo_root / paths.PYPROJECT
    version = _toml(path).get("project", {}).get("version")
    if not isinstance(version, str) or not version:
        raise SourceError("no [project].version", where=str(path), error_id="tree.version")
    if release_version_key(version) is None:
        raise SourceError(
            f"[project].version {version!r} is not a release version ({RELEASE_VERSION_TEXT}): "
            "verify, fetch and the loader would refuse it",
            where=str(path),
            error_id="tree.version",
        )
    return version


def require_clean(facts: GitFacts, allow_dirty: bool) -> None:
    if facts.dirty and not allow_dirty:
        raise TreeDirty(
            "tracked files differ from HEAD: the release would not match its source revision",
            where=f"git revision {facts.revision}",
            hint="commit or drop the changes (or pass --allow-dirty for a local trial)",
        )


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_regular_file(path, "toml").decode("utf-8"))
    except VerifyError as exc:  # missing, not a regular file, too large
        raise SourceError(
            f"cannot read: {exc.message} [{exc.error_id}]",
            where=str(path),
            error_id="tree.toml-invalid",
        ) from exc
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"not UTF-8 at byte {exc.start}", where=str(path), error_id="tree.toml-invalid"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise SourceError(
            f"not valid TOML: {exc}", where=str(path), error_id="tree.toml-invalid"
        ) from exc

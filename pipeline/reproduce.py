"""`tinyrustlm-release reproduce BUNDLE`: rebuild a release from source, compare byte for byte."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.errors import EXIT_CHECK_FAILED, EXIT_OK, PipelineError
from pipeline.inputs import load_model
from pipeline.lanebuild.driver import build_lanes
from pipeline.lanebuild.inputs import sha256_file
from pipeline.lanebuild.records import BuildIndex
from pipeline.toolchain.check import check_installed
from verify.formats.manifest import ModuleManifest
from verify.section_diff import first_difference


def compare_files(a: Path, b: Path) -> str | None:
    return first_difference(a.read_bytes(), b.read_bytes())


# --- `tinyrustlm-release reproduce BUNDLE`: rebuild a release from source and compare ---------


class ReproduceError(PipelineError):
    """The rebuild could not be set up (no manifest, unknown revision, different lock)."""


@dataclass(frozen=True)
class LaneVerdict:
    lane: str
    expected_sha256: str
    rebuilt_sha256: str
    difference: str | None  # None: bit-identical

    @property
    def identical(self) -> bool:
        return self.expected_sha256 == self.rebuilt_sha256


def _git(args: list[str], cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ReproduceError(f"git {' '.join(args)} failed: {done.stderr.strip()[-300:]}",
                             where=str(cwd))
    return done.stdout.strip()


def prepare_checkout(source: str, revision: str, workdir: Path) -> Path:
    """A fresh clone of `source` at `revision` (reused if `workdir` already holds it)."""
    checkout = workdir / "tinyrustlm"
    if not (checkout / ".git").is_dir():
        workdir.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--quiet", "--no-checkout", source, str(checkout)], workdir)
    _git(["checkout", "--quiet", "--detach", revision], checkout)
    return checkout


def compare_bundle(bundle: Path, manifest: ModuleManifest, index: BuildIndex,
                   rebuilt_root: Path) -> list[LaneVerdict]:
    rebuilt = {entry.lane: entry for entry in index.lanes}
    verdicts = []
    for url, lane in manifest.lanes():
        expected = next(sha for u, sha in manifest.listed_files() if u == url)
        entry = rebuilt.get(lane)
        if entry is None:
            verdicts.append(LaneVerdict(lane, expected, "<not rebuilt>", "lane missing"))
            continue
        difference = None
        if entry.sha256 != expected:
            difference = compare_files(bundle / url, rebuilt_root / entry.artifact)
        verdicts.append(LaneVerdict(lane, expected, entry.sha256, difference))
    return verdicts


def reproduce(bundle: Path, source: str, workdir: Path, say: Callable[[str], None]
              ) -> list[LaneVerdict]:
    try:
        manifest = load_model(ModuleManifest, bundle / "manifest.json", "json")
    except PipelineError as exc:
        raise ReproduceError(f"cannot read the bundle's manifest: {exc.message}",
                             where=exc.where) from exc
    say(f"[1/4] checking out {manifest.source_revision[:12]} from {source}")
    checkout = prepare_checkout(source, manifest.source_revision, workdir)
    lock_sha = sha256_file(checkout / "toolchain.lock")
    if lock_sha != manifest.toolchain_lock_sha256:
        raise ReproduceError("the checkout's toolchain.lock is not the one the release cites",
                             where=str(checkout / "toolchain.lock"))
    say("[2/4] checking the installed toolchain against that lock")
    check_installed(checkout)
    say("[3/4] building every lane")
    index = build_lanes(checkout, None, False, say)
    if index.source_date_epoch != manifest.source_date_epoch:
        raise ReproduceError(
            f"SOURCE_DATE_EPOCH {index.source_date_epoch} differs from the release's "
            f"{manifest.source_date_epoch}", where="git log -1 --format=%ct")
    say("[4/4] comparing byte for byte")
    return compare_bundle(bundle, manifest, index, checkout)


def render_verdicts(verdicts: list[LaneVerdict]) -> str:
    lines = []
    for v in verdicts:
        state = "identical" if v.identical else f"DIFFERS: {v.difference}"
        lines.append(f"  {v.lane:<28} {v.expected_sha256[:16]}  {state}")
    same = sum(v.identical for v in verdicts)
    lines.append(f"{same}/{len(verdicts)} artifact(s) reproduced bit for bit")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="an unpacked release bundle (dist/tinyrustlm-*)")
    parser.add_argument("--source", default=".",
                        help="git repository to clone the release's revision from (default: .)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where to clone and build (default: a new temporary folder)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")


def run(args: argparse.Namespace) -> int:
    source = str(Path(args.source).resolve()) if Path(args.source).exists() else args.source
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-reproduce-") as tmp:
        workdir = args.workdir or Path(tmp)
        verdicts = reproduce(args.bundle.resolve(), source, workdir.resolve(),
                             lambda s: print(s, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps([{**asdict(v), "identical": v.identical} for v in verdicts], indent=2))
    else:
        print(render_verdicts(verdicts))
    return EXIT_OK if all(v.identical for v in verdicts) else EXIT_CHECK_FAILED

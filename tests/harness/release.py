"""A fake source tree with a finished fake build, and a release harness around it.

The repo is a real git repository (revision, commit time, tracked crate files) with the real
toolchain.lock and lane policy copied in; build/ holds tiny valid wasm modules and a fake
native binary with real BuildRecords and a BuildIndex. The release runs the real step table
with three steps swapped: the toolchain check keeps the source-tree preflight but skips the
machine probe, the build loads the hand-made index, and verification uses `fake_report`.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents.keys import KeyFiles, generate_key_files
from pipeline.lanebuild.built import Built, built_from_index
from pipeline.lanebuild.records import BuildIndex
from pipeline.release.steps import (
    STEPS,
    Bundled,
    Checked,
    ReleaseRequest,
    Steps,
    no_memory_plan,
    preflight,
    run_release,
    skip_conformance,
)
from verify.bundle.layout import (
    CHECKSUMS,
    REPORT_PAGE,
    bundle_name,
    checksums_text,
    tarball_name,
)
from verify.bundle.opened import read_bundle_folder
from verify.bundle.page.inputs import page_inputs
from verify.bundle.page.page import shipped_page
from verify.bundle.report_check import Deriver
from verify.bundle.tarball import HARD_LIMITS, ReadLimits, deterministic_tarball
from verify.bundle.trusted_keys import load_trust_root
from verify.bundle.verifier import BundleVerifier, Progress, Requirements, Verdict
from verify.cli import main as verify_main
from verify.formats.manifest import ModuleManifest
from verify.formats.report import ArtifactReport, FindingModel, VerificationReport

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSION = "9.9.9"
# lane, kind, target
LANES: tuple[tuple[str, str, str], ...] = (
    ("scalar-wasm32", "wasm", "wasm32-unknown-unknown"),
    ("simd128-wasm32", "wasm", "wasm32-unknown-unknown"),
    ("simd128-threads-wasm32", "wasm", "wasm32-unknown-unknown"),
    ("x86_64-unknown-linux-gnu", "native", "x86_64-unknown-linux-gnu"),
)


def tiny_wasm(tag: str) -> bytes:
    """A valid empty module with one custom section naming `tag` (so lanes differ)."""
    name = b"lane"
    body = bytes([len(name)]) + name + tag.encode()
    return b"\0asm\x01\0\0\0" + b"\x00" + bytes([len(body)]) + body


def fake_report(artifacts: Sequence[tuple[Path, str]]) -> VerificationReport:
    """Stands in for verify.inspect: findings derived from the bytes themselves."""
    rows = []
    for path, lane in artifacts:
        data = path.read_bytes()
        wasm = lane.endswith("wasm32")
        findings = [
            FindingModel(
                id="fake.magic", ok=data.startswith(b"\0asm") == wasm, evidence=data[:4].hex()
            ),
            FindingModel(id="fake.size", ok=len(data) > 0, evidence=f"{len(data)} bytes"),
        ]
        rows.append(
            ArtifactReport(
                file=path.name,
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                lane=lane,
                kind="wasm" if wasm else "native",
                ok=all(f.ok for f in findings),
                findings=findings,
            )
        )
    return VerificationReport(
        verifier="fake-report (tests)",
        policy_sha256={},
        ok=bool(rows) and all(r.ok for r in rows),
        artifacts=rows,
    )


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return done.stdout.strip()


def make_repo(root: Path, commit_time: int) -> Path:
    repo = root / "repo"
    (repo / "crates/core/src").mkdir(parents=True)
    (repo / "crates/wasm/js").mkdir(parents=True)
    (repo / ".gitignore").write_text("/build/\n/dist/\n/.dev-keys/\n")
    (repo / "pyproject.toml").write_text(f'[project]\nname = "fake"\nversion = "{VERSION}"\n')
    (repo / "requirements.lock").write_text(
        "pydantic==2.14.4 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via x\n"
        "rfc8785==0.1.4 \\\n    --hash=sha256:" + "b" * 64 + "\n"
    )
    shutil.copy(REPO_ROOT / "toolchain.lock", repo / "toolchain.lock")
    (repo / "manifests").mkdir()
    shutil.copy(REPO_ROOT / "manifests/lanes.toml", repo / "manifests/lanes.toml")
    (repo / "crates/Cargo.toml").write_text(
        '[workspace]\nmembers = ["core"]\n[workspace.package]\nversion = "0.1.0"\n'
    )
    (repo / "crates/core/Cargo.toml").write_text(
        '[package]\nname = "tinyrustlm-core"\nversion.workspace = true\nlicense = "Apache-2.0"\n'
    )
    (repo / "crates/core/src/lib.rs").write_text("#![no_std]\n")
    (repo / "crates/wasm/js/host.js").write_text("export const host = 1;\n")
    (repo / "crates/wasm/js/loader.js").write_text("export const loader = 1;\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    stamp = f"@{commit_time} +0000"
    _git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-q",
        "-m",
        "fake",
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    write_build(repo, commit_time)
    return repo


def write_build(repo: Path, commit_time: int, smoke: str = "pass", only: str | None = None) -> None:
    """The fake build; `smoke` is every lane's self-test status (only lane `only`'s if given)."""
    revision = _git(repo, "rev-parse", "HEAD")
    lock_sha = hashlib.sha256((repo / "toolchain.lock").read_bytes()).hexdigest()
    (repo / "build/artifacts").mkdir(parents=True, exist_ok=True)
    (repo / "build/records").mkdir(parents=True, exist_ok=True)
    entries = []
    for lane, kind, target in LANES:
        # the native one is 48 KiB of noise, so the tarball stays the bundle's biggest file
        # (bigger than report.html) as in a real release
        noise = hashlib.shake_256(lane.encode()).digest(48 << 10)
        data = tiny_wasm(lane) if kind == "wasm" else b"\x7fELF fake native " + noise
        sha = hashlib.sha256(data).hexdigest()
        stem = "runtime" if kind == "wasm" else "tinyrustlm"
        name = f"{stem}.{lane}.{sha[:16]}" + (".wasm" if kind == "wasm" else "")
        artifact = f"build/artifacts/{name}"
        (repo / artifact).write_bytes(data)
        status = smoke if only in (None, lane) else "pass"
        smoke_result = {"status": status, "engine": "fake-engine 1.0", "detail": ""}
        record = {
            "schema": "tinyrustlm.build-record.v1",
            "lane": lane,
            "target": target,
            "kind": kind,
            "argv": ["/usr/bin/cargo", "build", "--release", "--target", target],
            "env": {"RUSTC": "/usr/bin/rustc", "SOURCE_DATE_EPOCH": str(commit_time)},
            "source_date_epoch": commit_time,
            "inputs": {
                "sources_sha256": "1" * 64,
                "cargo_lock_sha256": "2" * 64,
                "lane_entry_sha256": "3" * 64,
                "toolchain_lock_sha256": lock_sha,
                "input_digest": "4" * 64,
            },
            "output": {"path": artifact, "sha256": sha, "size": len(data)},
            "smoke": smoke_result,
        }
        record_path = f"build/records/{lane}.json"
        (repo / record_path).write_text(json.dumps(record))
        entries.append(
            {
                "lane": lane,
                "target": target,
                "kind": kind,
                "artifact": artifact,
                "sha256": sha,
                "size": len(data),
                "record": record_path,
                "smoke": smoke_result,
            }
        )
    index = {
        "schema": "tinyrustlm.build-index.v1",
        "source_revision": revision,
        "source_date_epoch": commit_time,
        "toolchain_lock_sha256": lock_sha,
        "lanes": entries,
    }
    (repo / "build/index.json").write_text(json.dumps(index))


def fake_build(checked: Checked) -> Built:
    index_path = checked.tree.root / "build/index.json"
    index = BuildIndex.model_validate_json(index_path.read_bytes())
    return built_from_index(checked.tree, index, checked.request.lanes)


# the fake lanes are not runnable modules: no memory plan, no conformance matrix (tests that
# want one swap in a step that ships a report)
FAKE_STEPS = replace(
    STEPS,
    toolchain_check=preflight,
    build=fake_build,
    memory_plan=no_memory_plan,
    conformance=skip_conformance,
)


@dataclass
class Harness:
    tmp: Path
    repo: Path
    key: KeyFiles
    commit_time: int
    steps: Steps = FAKE_STEPS
    log: list[str] = field(default_factory=list)

    def repo_head(self) -> str:
        return _git(self.repo, "rev-parse", "HEAD")

    @property
    def trusted(self) -> Path:
        return self.key.trusted_keys

    def release(self, dist: Path | None = None, **overrides: Any) -> Bundled:
        options: dict[str, Any] = {"key_path": self.key.private_pem, "derive": fake_report}
        options.update(overrides)
        request = ReleaseRequest(repo_root=self.repo, dist=dist or self.tmp / "dist", **options)
        return run_release(request, self.steps, say=self.log.append)

    def verify(
        self,
        bundle: Path,
        trusted: Path | None = None,
        *,
        derive: Deriver | None = fake_report,
        limits: ReadLimits = HARD_LIMITS,
        progress: Progress | None = None,
        **requirements: Any,
    ) -> Verdict:
        """`BundleVerifier(...).verify(bundle, Requirements(now=now, **requirements))`."""
        requirements.setdefault("now", int(time.time()))
        verifier = BundleVerifier(load_trust_root(trusted or self.trusted), derive, limits)
        return verifier.verify(bundle, Requirements(**requirements), progress)


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    commit_time = int(time.time()) // 86400 * 86400 - 86400  # yesterday, midnight UTC
    repo = make_repo(tmp_path, commit_time)
    key = generate_key_files(tmp_path / "keys", "release", "release")
    return Harness(tmp_path, repo, key, commit_time)


# The pristine release of this process, made once and shared read-only by every module (and
# by processes forked from this one: mutmut runs each mutant in a fork, so the release is made
# by the unmutated code once instead of by every mutant). Removed when its maker exits.
_PRISTINE: tuple[Harness, Path] | None = None


def _remove_pristine(folder: Path, maker: int) -> None:
    if os.getpid() == maker:  # a fork exiting must not take it from its siblings
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def pristine() -> tuple[Harness, Path]:
    """The released bundle every module shares; tests copy it before tampering, never write it."""
    global _PRISTINE
    if _PRISTINE is None or not _PRISTINE[1].is_dir():
        tmp = Path(tempfile.mkdtemp(prefix="tinyrustlm-pristine-"))
        atexit.register(_remove_pristine, tmp, os.getpid())
        _PRISTINE = released(tmp)
    return _PRISTINE


def released(tmp: Path) -> tuple[Harness, Path]:
    """A fake source tree committed yesterday at midnight UTC under `tmp`, a release key, and
    the bundle released from it: (harness, bundle)."""
    commit_time = int(time.time()) // 86400 * 86400 - 86400
    repo = make_repo(tmp, commit_time)
    key = generate_key_files(tmp / "keys", "release", "release")
    h = Harness(tmp, repo, key, commit_time)
    bundle = h.release().bundle
    assert bundle is not None
    return h, bundle


def copy_pristine(pristine: tuple[Harness, Path], tmp_path: Path) -> Path:
    """A copy of the module's pristine bundle to tamper with."""
    target = tmp_path / "bundle"
    shutil.copytree(pristine[1], target)
    return target


def repack(bundle: Path) -> None:
    """SHA256SUMS and the tarball made again from the (changed) files, as the writer would."""
    manifest = ModuleManifest.model_validate_json((bundle / "manifest.json").read_bytes())
    tarball = tarball_name(manifest.version)
    files = {
        p.relative_to(bundle).as_posix(): p.read_bytes()
        for p in bundle.rglob("*")
        if p.is_file() and p.name not in (tarball, CHECKSUMS)
    }
    files[CHECKSUMS] = checksums_text(files)
    (bundle / CHECKSUMS).write_bytes(files[CHECKSUMS])
    executable = frozenset(a.url for a in manifest.native_artifacts)
    (bundle / tarball).write_bytes(
        deterministic_tarball(
            bundle_name(manifest.version), files, manifest.source_date_epoch, executable
        )
    )


def rederive_page(bundle: Path, statement: dict[str, Any]) -> None:
    """report.html made again from the bundle's documents by the release writer's function
    (after a test changed one of them), and its subject in `statement` (to be re-signed)."""
    files = read_bundle_folder(bundle)
    page = shipped_page(page_inputs(files), files)
    (bundle / REPORT_PAGE).write_bytes(page)
    (subject,) = (s for s in statement["subject"] if s["name"] == REPORT_PAGE)
    subject["digest"] = {"sha256": hashlib.sha256(page).hexdigest()}


def verify_json(bundle: Path, trusted: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    """`tinyrustlm-verify bundle BUNDLE --trusted-keys T --json ...` in this process: the exit
    code, the JSON verdict and stderr (which never holds a traceback)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = verify_main(
            ["bundle", str(bundle), "--trusted-keys", str(trusted), "--json", *extra]
        )
    assert "Traceback" not in err.getvalue()
    return code, json.loads(out.getvalue()), err.getvalue()

"""Execute a native smoke plan on the hardware the artifact is for (standard library only).

    python -m pipeline.lanebuild.native_smoke PLAN_DIR --records DIR

release.yml runs this on `ubuntu-24.04-arm` and `windows-2025` (no qemu, no wine), from a
checkout of the release commit with nothing installed but Python. The plan
(`tinyrustlm-release smoke-plan`, pipeline/lanebuild/smoke_plan.py) names the artifact in the
records folder and its SHA-256, the model beside the plan, and the checks: `self-test`, then
every end-to-end golden vector with the oracle's tokens. The artifact is hashed, copied into a
scratch folder with the executable bit (artifact uploads drop file modes) and run directly.
One `pass`/`FAIL` line per check; exit 0 if all pass, 1 if one failed, 3 on bad input.

$TINYRUSTLM_SMOKE_EMULATOR (a command prefix, e.g. `qemu-aarch64-static -L /usr/aarch64-linux-gnu`)
runs the artifact under an emulator instead: only the local replay of release.yml sets it
(tests/workflows/replay.py), and every line it prints then says so. release.yml never sets it.

Only the standard library and `pipeline.errors` (itself dependency-free) may be imported here.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pipeline.errors import EXIT_CHECK_FAILED, EXIT_ERROR, EXIT_OK, PipelineError, TabledError
from pipeline.io import process
from pipeline.io.digest import sha256_file
from pipeline.io.process import CommandTimedOut, CommandUnstartable


class SmokePlanError(TabledError):
    """A smoke plan, or a file or golden vector it names, that cannot be used."""

    table: ClassVar[Mapping[str, str]] = {
        "smoke-plan.unreadable": (
            "give the smoke plan the build job wrote (tinyrustlm-release smoke-plan makes one)"
        ),
        "smoke-plan.schema": (
            "give a tinyrustlm.native-smoke-plan document made by tinyrustlm-release smoke-plan"
        ),
        "smoke-plan.file-missing": (
            "download the records of the build job next to the plan: the plan names each file"
        ),
        "smoke-plan.hash-mismatch": (
            "the file is not the one the plan pins: download this run's records again"
        ),
        "smoke-plan.golden": (
            "tests/golden/e2e_decode.json must hold end-to-end decode vectors: regenerate with "
            "nox -s golden"
        ),
        "smoke-plan.not-native": (
            "name a native lane of lanes.toml: only native binaries run the native smoke plan"
        ),
        "smoke-plan.lane-missing": (
            "build it first: tinyrustlm-release build --lane ID --records-out DIR"
        ),
        "smoke-plan.model-drift": "the packer changed: regenerate tests/golden/ (nox -s golden)",
    }


SCHEMA = "tinyrustlm.native-smoke-plan.v1"
PLAN = "plan.json"
TIMEOUT_SECONDS = 300
MAX_PLAN_BYTES = 1 << 20
EMULATOR_ENV = "TINYRUSTLM_SMOKE_EMULATOR"


def _read_plan(plan_dir: Path) -> dict[str, Any]:
    path = plan_dir / PLAN
    if not path.is_file() or path.stat().st_size > MAX_PLAN_BYTES:
        raise SmokePlanError(
            "no readable smoke plan", where=str(path), error_id="smoke-plan.unreadable"
        )
    plan = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(plan, dict) or plan.get("schema") != SCHEMA:
        raise SmokePlanError(
            f"not a {SCHEMA} document", where=f"{path}: schema", error_id="smoke-plan.schema"
        )
    return plan


def _checked_copy(source: Path, sha256: str, scratch: Path, what: str) -> Path:
    if not source.is_file():
        raise SmokePlanError(
            f"{what} is missing", where=str(source), error_id="smoke-plan.file-missing"
        )
    actual = sha256_file(source)
    if actual != sha256:
        raise SmokePlanError(
            f"{what} hashes to {actual[:16]}…, the plan says {sha256[:16]}…",
            where=str(source),
            error_id="smoke-plan.hash-mismatch",
        )
    copy = scratch / source.name
    shutil.copyfile(source, copy)
    copy.chmod(0o755)
    return copy


def _check(artifact: Path, model: Path, check: dict[str, Any], prefix: list[str]) -> str:
    """'' if the check passed, else why not."""
    args = (str(a).replace("{model}", str(model)) for a in check["args"])
    argv = [*prefix, str(artifact), *args]
    try:
        done = process.run(argv, timeout=TIMEOUT_SECONDS)
    except CommandTimedOut:
        return f"no answer within {TIMEOUT_SECONDS}s"
    except CommandUnstartable as exc:
        return f"cannot run: {exc.caught}"
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip())[-300:]
        return f"exit {done.returncode}: {tail}"
    expect = check.get("expect")
    if not expect:
        return ""
    try:
        out = json.loads(done.stdout)
    except ValueError:
        return f"output is not JSON: {done.stdout[:200]!r}"
    for key, want in expect.items():
        if out.get(key) != want:
            return f"{key}: got {out.get(key)!r}, the oracle's is {want!r}"
    return ""


def execute(plan_dir: Path, records: Path) -> int:
    plan = _read_plan(plan_dir)
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-smoke-") as tmp:
        scratch = Path(tmp)
        artifact = _checked_copy(
            records / plan["artifact"], plan["artifact_sha256"], scratch, "the artifact"
        )
        model = _checked_copy(plan_dir / plan["model"], plan["model_sha256"], scratch, "the model")
        prefix = shlex.split(os.environ.get(EMULATOR_ENV, ""))
        how = f" (EMULATED by {shlex.join(prefix)}, not native)" if prefix else " (native)"
        failed = 0
        for check in plan["checks"]:
            why = _check(artifact, model, check, prefix)
            failed += bool(why)
            print(f"{'FAIL' if why else 'pass'} {check['id']}{': ' + why if why else ''}")
    total = len(plan["checks"])
    print(f"smoke of {plan['lane']}{how}: {total - failed}/{total} passed", flush=True)
    return EXIT_CHECK_FAILED if failed else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.lanebuild.native_smoke",
        description="run a native smoke plan (smoke-plan) against the artifact in --records",
    )
    parser.add_argument("plan", type=Path, metavar="PLAN_DIR")
    parser.add_argument("--records", required=True, type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    try:
        return execute(args.plan, args.records)
    except PipelineError as exc:
        print(exc.diagnostics(), file=sys.stderr)
        return EXIT_ERROR
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: malformed smoke plan or records: {exc!r}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())

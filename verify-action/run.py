"""The verify Action's step (standard library only): install the slim verifier, run it.

Reads the Action's inputs from `INPUT_*` variables (action.yml passes them through `env:`,
never into the script), builds `tinyrustlm-verify` from this repository's slim_verifier/
into a virtualenv under $RUNNER_TEMP (dependencies hash-locked by
slim_verifier/requirements.lock), runs `tinyrustlm-verify bundle --json`, writes the JSON
result to a file and `verdict`, `build-id` and `result` to $GITHUB_OUTPUT. Exits with the
verifier's code (0 accepted, 1 refused, 2 usage, 3 unreadable input).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SLIM = REPO / "slim_verifier"
EXIT_USAGE = 2


class UsageError(Exception):
    """An input the Action cannot turn into a verifier argument."""


def verifier_args(env: Mapping[str, str]) -> list[str]:
    """`tinyrustlm-verify bundle` arguments from the Action's inputs."""

    def get(name: str) -> str:
        return env.get(f"INPUT_{name}", "").strip()

    if not get("BUNDLE") or not get("TRUSTED_KEYS"):
        raise UsageError("inputs `bundle` and `trusted-keys` are required")
    args = ["bundle", get("BUNDLE"), "--trusted-keys", get("TRUSTED_KEYS"), "--json"]
    rebuilds = get("REQUIRE_REBUILDS") or "0"
    if not rebuilds.isdigit():
        raise UsageError(f"require-rebuilds must be a whole number, not {rebuilds!r}")
    if int(rebuilds) > 0:
        attestations = [a.strip() for a in get("REBUILD_ATTESTATIONS").splitlines() if a.strip()]
        if not get("REBUILDERS"):
            raise UsageError("require-rebuilds > 0 needs the `rebuilders` trusted-keys file")
        args += ["--rebuilders", get("REBUILDERS"), "--require-rebuilds", rebuilds]
        for attestation in attestations:
            args += ["--rebuild-attestation", attestation]
    if get("REQUIRE_ENGINES"):
        args += ["--require-engines", get("REQUIRE_ENGINES")]
    if get("NOT_BEFORE_VERSION"):
        args += ["--not-before-version", get("NOT_BEFORE_VERSION")]
    allow = get("ALLOW_DEV_KEY").lower()
    if allow not in ("", "false", "true"):
        raise UsageError(f"allow-dev-key must be true or false, not {allow!r}")
    if allow == "true":
        args.append("--allow-dev-key")
    return args


def _bin(venv: Path, name: str) -> Path:
    if os.name == "nt":
        return venv / "Scripts" / f"{name}.exe"
    return venv / "bin" / name


def install(venv: Path) -> Path:
    """A fresh virtualenv with the slim verifier; returns its `tinyrustlm-verify`."""
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(_bin(venv, "python")), "-m", "pip", "--disable-pip-version-check", "install"]
    lock = SLIM / "requirements.lock"
    subprocess.run([*pip, "--quiet", "--require-hashes", "-r", str(lock)], check=True)
    subprocess.run([*pip, "--quiet", "--no-deps", str(SLIM)], check=True)
    return _bin(venv, "tinyrustlm-verify")


def outputs(stdout: str, result: Path) -> dict[str, str]:
    try:
        doc = json.loads(stdout)
    except ValueError:
        doc = {}
    ok = isinstance(doc, dict) and doc.get("ok") is True
    build_id = doc.get("build_id") if isinstance(doc, dict) else None
    return {
        "verdict": "accepted" if ok else "refused",
        "build-id": build_id if isinstance(build_id, str) else "",
        "result": str(result),
    }


def main(env: Mapping[str, str] = os.environ) -> int:
    try:
        args = verifier_args(env)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    temp = Path(env.get("RUNNER_TEMP") or tempfile.gettempdir())
    verifier = install(temp / "tinyrustlm-verify-venv")
    subprocess.run([str(verifier), "--version"], check=True)
    done = subprocess.run([str(verifier), *args], capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    result = temp / "tinyrustlm-verify-result.json"
    result.write_text(done.stdout, encoding="utf-8")
    found = outputs(done.stdout, result)
    target = env.get("GITHUB_OUTPUT")
    if target:
        with Path(target).open("a", encoding="utf-8") as out:
            out.writelines(f"{k}={v}\n" for k, v in found.items())
    print(f"tinyrustlm-verify: {found['verdict']} (exit {done.returncode}); result: {result}")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())

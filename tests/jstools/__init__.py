"""The pinned JS test tools (TypeScript, node's types): `package.json` + `package-lock.json` here,
installed with the npm of the pinned node (`npm ci`, exact versions and integrity hashes from
the lock; the npm registry is the only source) into `node_modules/` (git-ignored).

`python -m tests.jstools check` is the lint step (`nox -s lint`): `tsc --checkJs --noEmit` over
every shipped and test .js/.mjs (tsconfig.json here lists them), then again in strict mode over
the loader's own files, crates/wasm/js (tsconfig.strict.json): every parameter typed, null and
undefined checked, `any` only where no type can be declared (each says why).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.toolchain import nodejs

TOOLS = Path(__file__).resolve().parent
TSCONFIG = TOOLS / "tsconfig.json"
STRICT_TSCONFIG = TOOLS / "tsconfig.strict.json"


def npm_cli() -> Path:
    """npm of the pinned node (the wheel's bin/npm is a copy whose relative require fails)."""
    return nodejs.executable().parent.parent / "lib/node_modules/npm/bin/npm-cli.js"


def npm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(nodejs.executable()), str(npm_cli()), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def install() -> Path:
    """`npm ci` from the lock unless node_modules already holds exactly it; returns tsc's path."""
    stamp = TOOLS / "node_modules/.package-lock.json"
    lock = TOOLS / "package-lock.json"
    if not stamp.is_file() or stamp.stat().st_mtime < lock.stat().st_mtime:
        done = npm("ci", "--ignore-scripts", "--no-audit", "--no-fund", cwd=TOOLS)
        if done.returncode != 0:
            raise RuntimeError(f"npm ci in {TOOLS} failed:\n{done.stdout}\n{done.stderr}")
    return TOOLS / "node_modules/typescript/bin/tsc"


def tsc(*args: str, cwd: Path = TOOLS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(nodejs.executable()), str(install()), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def check() -> int:
    """The lint step: tsc over tsconfig.json's files, then strict over the loader's (both run;
    every finding is printed); non-zero when either fails."""
    failed = 0
    for config in (TSCONFIG, STRICT_TSCONFIG):
        done = tsc("-p", str(config))
        print(done.stdout + done.stderr, end="")
        failed = failed or done.returncode
    return failed

"""nox sessions for tinyrustlm-release. Thin on purpose: every session calls a CLI command.

Each session installs the hash-locked requirements.lock into its own (reused) virtualenv.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests"]

PYTHON = "3.11"


def install(session: nox.Session) -> None:
    session.install("--require-hashes", "-r", "requirements.lock")
    session.install("--no-deps", "-e", ".")


@nox.session(python=PYTHON)
def toolchain(session: nox.Session) -> None:
    """Install the pinned Rust toolchain (root, Debian) and check it against toolchain.lock."""
    install(session)
    session.run("tinyrustlm-release", "toolchain", "install")
    session.run("tinyrustlm-release", "toolchain", "check")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The test suite (unit, integration with real builds, fuzz); args go to pytest.

    The whole-workflow replay (marker `replay`, about 50 minutes) is `nox -s replay`."""
    install(session)
    session.run("tinyrustlm-release", "toolchain", "install")
    session.run("pytest", "-m", "not replay", *session.posargs)


@nox.session(python=PYTHON)
def replay(session: nox.Session) -> None:
    """release.yml replayed job by job in clean clones; its bundle must equal `release`'s."""
    install(session)
    session.run("tinyrustlm-release", "toolchain", "install")
    session.run("pytest", "-m", "replay", "tests/workflows/test_replay.py", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, ruff format --check, mypy --strict over every tracked Python file; the import
    contracts of pyproject.toml (import-linter: layers, no cycles, verify stands alone);
    tsc --checkJs --noEmit over every shipped and test .js/.mjs, strict over crates/wasm/js
    (tests/jstools); actionlint
    over .github/workflows/; and Rust's gates with the pinned toolchain (tests/rustlint.py:
    cargo fmt --check, cargo clippy -D warnings for the host and every Wasm lane's flags)."""
    install(session)
    session.run("tinyrustlm-release", "toolchain", "install")  # cargo fmt/clippy are pinned
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("lint-imports")
    session.run("python", "-m", "tests.jstools", "check")
    session.run("actionlint", "-color=false")
    session.run("python", "-m", "tests.rustlint")


@nox.session(python=PYTHON)
def build(session: nox.Session) -> None:
    """Build every lane (or `-- --lane ID ...`) into build/ with the pinned toolchain."""
    install(session)
    session.run("tinyrustlm-release", "build", *session.posargs)


@nox.session(python=PYTHON)
def verify(session: nox.Session) -> None:
    """Inspect every artifact of the last build against its lane policy."""
    install(session)
    session.run(
        "tinyrustlm-verify", "artifact", "--build-index", "build/index.json", *session.posargs
    )


@nox.session(python=PYTHON)
def release(session: nox.Session) -> None:
    """The main job: toolchain check, build, verify, smoke, sign, bundle into dist/."""
    install(session)
    session.run("tinyrustlm-release", "toolchain", "install")
    session.run("tinyrustlm-release", "release", *session.posargs)


@nox.session(python=PYTHON)
def reproduce(session: nox.Session) -> None:
    """Verify a bundle, rebuild its revision from a fresh clone, compare the whole bundle."""
    install(session)
    if not session.posargs:
        session.error(
            "usage: nox -s reproduce -- dist/tinyrustlm-<version> --trusted-keys FILE "
            "[--source REPO] [--attest --key PEM]"
        )
    session.run("tinyrustlm-release", "reproduce", *session.posargs)


@nox.session(python=PYTHON)
def golden(session: nox.Session) -> None:
    """Regenerate tests/golden/ from the native scalar oracle (crates/core/CONTRACT.md)."""
    install(session)
    session.run("tinyrustlm-release", "golden", *session.posargs)


@nox.session(python=PYTHON)
def fuzz(session: nox.Session) -> None:
    """Every fuzz campaign (bundle, parser, model mutation); counts as JSON under build/fuzz/.

    Not in the default sessions: minutes, not seconds. Args go to `python -m tests.fuzz`
    (`--seed N`, `--scale 0.1`, `--only parser_mutation`). The model campaign needs the
    scalar Wasm lane built first (`nox -s build`).
    """
    install(session)
    session.run("python", "-m", "tests.fuzz", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Lane benchmarks (node, native, Chromium through js/loader.js), the parser benchmark and
    the loader's model hash (MB/s per engine and size, node and Chromium); JSON under
    build/bench/ (never asserted)."""
    install(session)
    session.run("tinyrustlm-release", "bench", *session.posargs)
    session.run("python", "-m", "pipeline.bench.wasm_parser")
    no_browser = ["--no-browser"] if "--no-browser" in session.posargs else []
    session.run("python", "-m", "pipeline.bench.hashing", *no_browser)


@nox.session(python=PYTHON)
def mutants(session: nox.Session) -> None:
    """Mutation testing of verify/ (mutmut; score and survivors) and the planted-bug list.

    Not in the default run. `-- --full` mutates every listed module (slow);
    `-- --planted-only` / `-- --mutmut-only` run one half (tests/mutants/run.py);
    `-- --js` also mutates the loader's trust.js and fetch.js with Stryker, `-- --js-only` alone.
    """
    install(session)
    session.run("python", "-m", "tests.mutants.run", *session.posargs)

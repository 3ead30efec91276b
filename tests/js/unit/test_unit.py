"""The loader's node unit tests (tests/js/unit/*.test.mjs, `node --test`) in the pytest suite,
and their Python-made fixtures checked against verify/ (fixtures.py regenerates them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.toolchain import nodejs
from tests.js.unit import fixtures

UNIT = Path(__file__).resolve().parent
NODE_TIMEOUT_SECONDS = 300


def test_the_node_unit_tests_pass() -> None:
    files = sorted(str(p) for p in UNIT.glob("*.test.mjs"))
    assert len(files) >= 3, files
    done = subprocess.run(
        [str(nodejs.executable()), "--test", "--test-reporter=dot", *files],
        cwd=UNIT,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]


def test_the_fixtures_are_the_python_verifiers_verdicts() -> None:
    """fixtures/trust.json is what `python -m tests.js.unit.fixtures` writes from verify/ now:
    a change of the verifier's verdicts (or of the table) shows up here, not as stale goldens."""
    assert fixtures.OUT.read_text(encoding="utf-8") == fixtures.render()

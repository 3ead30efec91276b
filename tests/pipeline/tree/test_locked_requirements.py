"""requirements.lock rows, read with `packaging` (pipeline.tree.sources.locked_requirements)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.tree.sources import PythonRequirement, locked_requirements

REPO_ROOT = Path(__file__).resolve().parents[3]

CASES = [
    ("hashes-on-continuation-lines",
     "pydantic==2.13.0 \\\n    --hash=sha256:00 \\\n    --hash=sha256:11\n    # via -r x\n",
     [("pydantic", "2.13.0")]),
    ("name-lowercased", "PyYAML==6.0.3 \\\n    --hash=sha256:00\n", [("pyyaml", "6.0.3")]),
    ("extras-and-marker", 'uvicorn[standard]==0.30.0 ; python_version < "3.12"\n',
     [("uvicorn", "0.30.0")]),
    ("comments-and-options-skipped", "# uv pip compile ...\n--index-url https://x\n-e .\n", []),
    ("no-exact-pin-skipped", "rich>=13\nrich~=13.0\n", []),
    ("one-row-per-pin", "a==1\na==1\nb==2 # trailing comment\n", [("a", "1"), ("b", "2")]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "rows"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rows(tmp_path: Path, text: str, rows: list[tuple[str, str]]) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text(text, encoding="utf-8")
    assert locked_requirements(lock) == [PythonRequirement(n, v) for n, v in rows]


def test_the_project_lock_pins_its_own_tools() -> None:
    pins = {r.name: r.version for r in locked_requirements(REPO_ROOT / "requirements.lock")}
    assert {"packaging", "pydantic", "rfc8785"} <= set(pins)

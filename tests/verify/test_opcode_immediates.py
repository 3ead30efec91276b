"""Every operator's immediates in verify/wasm/opcodes.py against the real `wasm-tools print`:
one generated function uses each operator of the table (tests/verify/opcode_module.py), its
immediates encoded from the table's kinds. A wrong immediate list shifts the byte stream, so
the printed operator sequence (or a memarg offset / integer constant) stops matching."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.verify.opcode_module import memarg_offset, module, ordered_ops
from verify.wasm import tools
from verify.wasm.opcodes import Imm

OPS = ordered_ops()
INTEGERS = {Imm.I32: 1, Imm.I64: 2**40}


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The function body's lines as printed; a refused module prints nothing (the tests then
    fail, naming the printer's error)."""
    path: Path = tmp_path_factory.mktemp("ops") / "every-operator.wasm"
    path.write_bytes(module())
    done = subprocess.run(
        [str(tools.executable()), "print", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        return [f"<wasm-tools print refused the module: {done.stderr.strip()}>"]
    lines = [line.strip() for line in done.stdout.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("(func"))
    return [line.split(";;")[0].strip() for line in lines[start + 1 :] if line not in (")", "))")]


def test_the_operator_sequence_is_printed_back(printed: list[str]) -> None:
    assert not printed[0].startswith("<"), printed[0]
    names = [line.split()[0].rstrip(")") for line in printed]
    expected = [op.name for op in OPS]
    first = next((i for i, (a, b) in enumerate(zip(names, expected, strict=False)) if a != b), None)
    assert first is None and len(names) == len(expected), (
        f"first difference at operator {first}: printed {printed[first or 0]!r}, "
        f"table {expected[first or 0]!r} {OPS[first or 0].imms}"
    )


MEMARG_OPS = [(i, op) for i, op in enumerate(OPS) if Imm.MEMARG in op.imms]
INTEGER_OPS = [(i, op) for i, op in enumerate(OPS) if set(op.imms) & set(INTEGERS)]


@pytest.mark.parametrize(("index", "op"), MEMARG_OPS, ids=[op.name for _, op in MEMARG_OPS])
def test_memarg_offsets(printed: list[str], index: int, op: object) -> None:
    assert index < len(printed), printed[0]
    assert f"offset={memarg_offset(index)}" in printed[index].split()


@pytest.mark.parametrize(("index", "op"), INTEGER_OPS, ids=[op.name for _, op in INTEGER_OPS])
def test_integer_constants(printed: list[str], index: int, op: object) -> None:
    kind = next(k for k in INTEGERS if k in getattr(op, "imms", ()))
    assert index < len(printed), printed[0]
    assert printed[index].split()[1] == str(-(index + 2) * INTEGERS[kind])

"""Benchmark (not a test): our Wasm parser against `wasm-tools validate` on a >= 10 MB module.

    python -m pipeline.bench.wasm_parser [--input M.wasm] [--size-mb 12] [--json]

The large module is packed from a real one: its function and code sections are repeated
until the size is reached (every body keeps its type, calls stay in range, so the result
still validates). Reports parser MB/s, the wasm-tools time, and whether our instruction
count equals the instruction lines `wasm-tools print` shows. Goal: >= 10 MB/s and within
8x of single-threaded wasm-tools (issue 13). Wall-clock numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import Field

from pipeline import paths
from pipeline.io import process
from pipeline.io.atomic import write_atomic
from pipeline.tree.lanes import load_lanes
from verify.formats.base import Frozen
from verify.wasm.reader import Reader
from verify.wasm.sections import parse_module
from verify.wasm.tools import executable


class ParserBench(Frozen):
    """`tinyrustlm.bench-parser.v1`: one run of this benchmark (wall-clock, best of --runs)."""

    schema_: Literal["tinyrustlm.bench-parser.v1"] = Field(
        "tinyrustlm.bench-parser.v1", alias="schema"
    )
    input: str = Field(description="file name of the module the big one was packed from")
    module_bytes: int
    functions: int
    instructions: int
    parse_seconds: float
    parse_mb_per_s: float
    wasm_tools_validate_seconds: float
    ratio_vs_wasm_tools: float
    wasm_tools_validate_1_thread_seconds: float
    ratio_vs_wasm_tools_1_thread: float
    print_instructions: int = Field(description="instruction lines of `wasm-tools print`")
    count_matches_print: bool


REPO = Path(__file__).resolve().parents[2]


def _uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _section(sid: int, payload: bytes) -> bytes:
    return bytes([sid]) + _uleb(len(payload)) + payload


def pack(data: bytes, target: int) -> bytes:
    """Repeat the function+code sections of `data` until the module is >= `target` bytes."""
    module = parse_module(data)
    by_id = {s.id: s for s in module.sections}
    code = by_id[10]
    r = Reader(data, code.offset, code.offset + code.size)
    n = r.count("bodies")
    bodies_raw = data[r.pos : code.offset + code.size]
    funcs = b"".join(_uleb(t) for t in module.function_types)
    copies = max(1, -(-target // max(1, len(bodies_raw))))
    out = bytearray(data[:8])
    pos = 8
    while pos < len(data):  # copy every section, replacing 3 (function) and 10 (code)
        sid = data[pos]
        start = pos
        r = Reader(data, pos + 1)
        size = r.u32("size")
        end = r.pos + size
        if sid == 3:
            out += _section(3, _uleb(n * copies) + funcs * copies)
        elif sid == 10:
            out += _section(10, _uleb(n * copies) + bodies_raw * copies)
        else:
            out += data[start:end]
        pos = end
    return bytes(out)


def _best(fn: object, runs: int) -> float:
    assert callable(fn)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def print_instruction_count(path: Path) -> int:
    """Instruction lines inside functions in `wasm-tools print` (the final `end` is not shown)."""
    proc = subprocess.Popen([str(executable()), "print", str(path)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    count = 0
    in_func = False
    for raw in proc.stdout:
        line = raw.strip()
        if line.startswith(b"(func"):
            in_func = True
        elif in_func and line == b")":
            in_func = False
        elif in_func and not line.startswith(b"("):
            count += 1
    proc.wait()
    return count


def _default_input() -> Path:
    """The last build of the lane lanes.toml marks as the parser benchmark's seed module."""
    lanes = load_lanes(REPO / paths.LANES_FILE).lane
    for lane in lanes:
        if lane.bench is not None and lane.bench.parser_input:
            found = sorted((REPO / "build" / lane.id).glob("*.wasm"))
            if found:
                return found[0]
    sys.exit("no input module: pass --input or build the wasm lanes first")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--size-mb", type=float, default=12.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("build/bench/parser-latest.json"),
        help="where the JSON result is written (default: build/bench/)",
    )
    args = parser.parse_args(argv)
    source = args.input or _default_input()
    big = pack(source.read_bytes(), int(args.size_mb * 1_000_000))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.wasm"
        path.write_bytes(big)
        module = parse_module(big)
        ours = _best(lambda: parse_module(big), args.runs)
        tool = executable()
        cmd = [str(tool), "validate", "--features=all", str(path)]
        process.run(cmd, check=True, capture=False)
        theirs = _best(lambda: process.run(cmd, check=True, capture=False), args.runs)
        one_thread = {**os.environ, "RAYON_NUM_THREADS": "1"}  # wasm-tools validates in parallel
        theirs_1t = _best(
            lambda: process.run(cmd, check=True, capture=False, env=one_thread), args.runs
        )
        printed = print_instruction_count(path)
    result = ParserBench(
        input=source.name,
        module_bytes=len(big),
        functions=module.code.function_count,
        instructions=module.code.instruction_count,
        parse_seconds=round(ours, 3),
        parse_mb_per_s=round(len(big) / ours / 1e6, 2),
        wasm_tools_validate_seconds=round(theirs, 3),
        ratio_vs_wasm_tools=round(ours / theirs, 2),
        wasm_tools_validate_1_thread_seconds=round(theirs_1t, 3),
        ratio_vs_wasm_tools_1_thread=round(ours / theirs_1t, 2),
        print_instructions=printed,
        count_matches_print=module.code.instruction_count - module.code.function_count == printed,
    )
    text = json.dumps(result.model_dump(by_alias=True), indent=2) + "\n"
    write_atomic(args.out, text.encode())
    if args.json:
        print(text, end="")
    else:
        for key, value in result.model_dump(by_alias=True).items():
            print(f"{key:>28}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
